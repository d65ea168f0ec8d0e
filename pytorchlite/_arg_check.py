"""Argument types of the Python composites whose PyTorch twin is a native function (dist,
pairwise_distance, cosine_similarity, pdist, cdist, triplet_margin_loss): a bad argument
raises the TypeError PyTorch's argument parser gives, naming the function called
("dist(): argument 'p' (position 3) must be Number, not str"), not the internal op the
composite calls (linalg_vector_norm's `ord`) or a Python operator's complaint."""
import functools
import numbers

from . import _C


def _is_tensor(v):
    return isinstance(v, _C.TensorBase)


def _is_scalar_tensor(v):
    return _is_tensor(v) and v.dim() == 0


# kind -> what PyTorch's parser accepts for it: Number (a Scalar) and float (a 0-dim tensor
# too), int (not a bool; PyTorch also takes a 0-dim tensor, which the composites here cannot
# use as a dim), bool (a Python bool alone), Tensor
_ACCEPTS = {
    "Tensor": _is_tensor,
    "Number": lambda v: isinstance(v, numbers.Number) or _is_scalar_tensor(v),
    "float": lambda v: isinstance(v, numbers.Real) or _is_scalar_tensor(v),
    "int": lambda v: isinstance(v, numbers.Integral) and not isinstance(v, bool),
    "bool": lambda v: isinstance(v, bool),
}


def check_arg(fname, name, kind, value, position=None):
    """Raises PyTorch's TypeError when value is no `kind` (a key of _ACCEPTS); position is
    the 1-based position the message names (None: passed by keyword)."""
    if not _ACCEPTS[kind](value):
        where = "" if position is None else f" (position {position})"
        raise TypeError(f"{fname}(): argument '{name}'{where} must be {kind}, not "
                        f"{type(value).__name__}")


def _check_call(fname, params, args, kwargs, skip):
    for i, ((name, kind), v) in enumerate(zip(params[skip:], args[skip:])):
        check_arg(fname, name, kind, v, i + 1)
    for name, kind in params[len(args):]:
        if name in kwargs:
            check_arg(fname, name, kind, kwargs[name])


def typed(fname, *params, method=False):
    """Decorator: the call's arguments checked against params ((name, kind) in the native
    signature's order) before the function runs; method: the first parameter is self, not
    counted in positions, as in PyTorch's Tensor methods."""
    def decorate(fn):
        @functools.wraps(fn)
        def checked(*args, **kwargs):
            _check_call(fname, params, args, kwargs, 1 if method else 0)
            return fn(*args, **kwargs)
        return checked
    return decorate
