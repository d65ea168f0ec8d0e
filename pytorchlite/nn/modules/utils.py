"""torch.nn.modules.utils: the argument helpers layers and user code import from PyTorch's
path (`from torch.nn.modules.utils import _pair`), and
consume_prefix_in_state_dict_if_present (a DataParallel / DDP checkpoint's "module." prefix
stripped before loading into a bare model)."""
import collections.abc
import itertools

from .._functional_conv import _list_with_default  # noqa: F401  (PyTorch's path)

__all__ = ["consume_prefix_in_state_dict_if_present"]


def _repeat(v, n):
    """v as an n-tuple: a tuple or list as given, anything else repeated (the layers' rule)."""
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


def _ntuple(n, name="parse"):
    """A parser of an int-or-n-sequence argument: an iterable as a tuple, else repeated n
    times."""
    def parse(x):
        if isinstance(x, collections.abc.Iterable):
            return tuple(x)
        return tuple(itertools.repeat(x, n))

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t, n):
    """t reversed, each element repeated n times: (1, 2) -> (2, 2, 1, 1) for n 2 (a conv's
    padding as F.pad takes it)."""
    return tuple(x for x in reversed(t) for _ in range(n))


def consume_prefix_in_state_dict_if_present(state_dict, prefix):
    """Strips prefix from the keys of state_dict (and of its _metadata) that start with it,
    in place, keeping the order."""
    for key in list(state_dict.keys()):
        if key.startswith(prefix):
            state_dict[key[len(prefix):]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is not None:
        for key in list(metadata.keys()):
            if len(key) == 0:
                continue
            if key == prefix.replace(".", "") or key.startswith(prefix):
                metadata[key[len(prefix):]] = metadata.pop(key)

