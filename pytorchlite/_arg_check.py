"""check_arg: one argument's type as PyTorch's argument parser checks it, for the composites
that check one argument by hand where their twin's schemas would not name it (cdist's p,
triplet_margin_loss's, layer_norm's normalized_shape, torch.norm's p as linalg_vector_norm's
ord): a bad argument raises the TypeError PyTorch gives, naming the function called
("cdist(): argument 'p' (position 3) must be float, not str"), not an internal op's argument
or a Python operator's complaint.  Whole calls are checked against PyTorch's schemas by
pytorchlite/_native_signature.py."""
import numbers

from . import _C


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

