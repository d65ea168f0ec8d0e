"""Argument types of the Python composites whose PyTorch twin is a native function (dist,
pairwise_distance, cosine_similarity, pdist, cdist, triplet_margin_loss): a bad argument
raises the TypeError PyTorch's argument parser gives, naming the function called
("dist(): argument 'p' (position 3) must be Number, not str"), not the internal op the
composite calls (linalg_vector_norm's `ord`) or a Python operator's complaint."""
import functools
import numbers

from . import _C
from ._native_signature import _checker


def _is_tensor(v):
    return isinstance(v, _C.TensorBase)


def _is_scalar_tensor(v):
    return _is_tensor(v) and v.dim() == 0


# kind -> what PyTorch's parser accepts for it: Number (a Scalar) and float (a 0-dim tensor
# too), int (not a bool; PyTorch also takes a 0-dim tensor, which the composites here cannot
# use as a dim), bool (a Python bool alone), Tensor, tuple of ints (a sequence: PyTorch's
# parser takes a single int only where the list has a size, int[2], not for an int[])
_ACCEPTS = {
    "Tensor": _is_tensor,
    "Number": lambda v: isinstance(v, numbers.Number) or _is_scalar_tensor(v),
    "float": lambda v: isinstance(v, numbers.Real) or _is_scalar_tensor(v),
    "int": lambda v: isinstance(v, numbers.Integral) and not isinstance(v, bool),
    "bool": lambda v: isinstance(v, bool),
    "tuple of ints": lambda v: isinstance(v, (list, tuple)),
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


# Note [Native signatures of composites]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Many functions written here in Python are native functions in PyTorch (conv2d, avg_pool1d,
# cross_entropy_loss, ...): PyTorch's argument parser refuses a call whose arguments fit none
# of their signatures before anything runs, with a TypeError that names the function and the
# fault ("conv1d() received an invalid combination of arguments - ...").  native_fault gives
# that TypeError with the checker of Note [Native signatures] (src/python/arg_parse.c,
# pytorchlite/_native_signature.py): torch's signatures declared once as operators without
# kernels, and the bindings' parser run over them (src/python/arg_errors.c, Note [Bad call
# messages]).  The nn.functional composites call it where they fail (an exception of their
# own) or where a cheap check finds a type their body would take, so that a good call pays
# nothing for it; the torch namespace's composites check every call (@native).
_native_checks = {}


def _is_default(value, default):
    return value is default or (type(value) is type(default) and value == default)


def native_fault(schemas, *args, defaults=(), **kwargs):
    """Raises PyTorch's parser TypeError when args and kwargs fit none of schemas (a native
    function's signatures, torch's native_functions.yaml `func:` lines without the
    namespace, overloads in its order); returns when they fit one.  defaults: those of the
    last parameters of the Python function, whose trailing arguments equal to them are left
    out, as a call that did not give them (PyTorch's message lists the arguments given)."""
    args = list(args)
    for default in reversed(defaults):
        if not args or not _is_default(args[-1], default):
            break
        args.pop()
    check = _native_checks.get(schemas)
    if check is None:
        check = _native_checks[schemas] = _checker(schemas)
    check(*args, **kwargs)
