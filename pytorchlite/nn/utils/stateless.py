"""torch.nn.utils.stateless.functional_call: a module called with some of its parameters and
buffers replaced by given tensors for the one call, written afresh for pytorchlite."""
import contextlib
import warnings

from ... import _C

__all__ = ["functional_call"]

_MISSING = object()


def _owner(module, name):
    """(submodule, attribute name) of a dotted name."""
    path, _, attr = name.rpartition(".")
    if attr == "":
        raise KeyError('tensor name can\'t be empty string ""')
    return module.get_submodule(path) if path else module, attr


def _swap(module, name, tensor, allow_missing=True):
    """Puts tensor in module's slot `name` (removes what is there for _MISSING); returns what
    was there (_MISSING for nothing)."""
    if tensor is not _MISSING and not isinstance(tensor, _C.TensorBase):
        raise TypeError(f"{tensor} is not an instance of torch.Tensor")
    owner, attr = _owner(module, name)
    for table in (owner._parameters, owner._buffers):
        if attr in table:
            old = table[attr]
            if tensor is _MISSING:
                del table[attr]
            else:
                table[attr] = tensor
            return old
    if hasattr(owner, attr):
        old = getattr(owner, attr)
        if not isinstance(old, _C.TensorBase):
            raise TypeError(f"attribute `{attr}`: {old} is not an instance of torch.Tensor")
    elif not allow_missing:
        raise AttributeError(f"{owner._get_name()} has no attribute `{attr}`")
    else:
        old = _MISSING
    if tensor is not _MISSING:
        setattr(owner, attr, tensor)
    elif hasattr(owner, attr):
        delattr(owner, attr)
    return old


def _tie(module, values):
    """values with each given tensor also given for every name tied to it (the same tensor
    under several names); ValueError if tied names are given different tensors."""
    names_of = {}
    for name, t in list(module.named_parameters(remove_duplicate=False)) + \
            list(module.named_buffers(remove_duplicate=False)):
        names_of.setdefault(id(t), set()).add(name)
    tied = {n: names for names in names_of.values() if len(names) > 1 for n in names}
    out = dict(values)
    for name in [n for n in values if n in tied]:
        given = [values[n] for n in tied[name] if n in values]
        if len({id(v) for v in given}) > 1:
            raise ValueError(f"functional_call got multiple values for keys "
                             f"{sorted(tied[name])}, which are tied. Consider using "
                             "tie_weights=False")
        for other in tied[name]:
            out[other] = values[name]
    return out


@contextlib.contextmanager
def _reparametrize_module(module, parameters_and_buffers, tie_weights=False, strict=False):
    values = _tie(module, parameters_and_buffers) if tie_weights else parameters_and_buffers
    if strict:
        valid = {n for n, _ in module.named_parameters(remove_duplicate=False)} | \
            {n for n, _ in module.named_buffers(remove_duplicate=False)}
        missing, unexpected = sorted(valid - set(values)), sorted(set(values) - valid)
        errors = []
        if unexpected:
            errors.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
        if missing:
            errors.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
        if errors:
            raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(
                module._get_name(), "\n\t".join(errors)))
    originals = {}
    try:
        for name, t in values.items():
            originals[name] = _swap(module, name, t)
        yield
    finally:
        for name, old in reversed(list(originals.items())):
            now = _swap(module, name, old)
            if name in parameters_and_buffers and now is not _MISSING:
                parameters_and_buffers[name] = now


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """module(*args, **kwargs) with the named parameters and buffers (dotted names, as
    named_parameters gives them) replaced by the given tensors during the call."""
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 "
                  "and will be removed in a future version of PyTorch. Please use "
                  "`torch.func.functional_call` instead which is a drop-in replacement.",
                  FutureWarning, stacklevel=2)
    from ..parallel import DataParallel
    if isinstance(module, DataParallel):
        raise RuntimeError("The stateless API can't be used with nn.DataParallel module")
    kwargs = {} if kwargs is None else kwargs
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    with _reparametrize_module(module, parameters_and_buffers, tie_weights=tie_weights,
                               strict=strict):
        return module(*args, **kwargs)
