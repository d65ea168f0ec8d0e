"""torch.sym_int, sym_float, sym_max, sym_min, sym_not, sym_ite, sym_sum, sym_sqrt,
sym_fresh_size, sym_constrain_range and sym_constrain_range_for_size (torch/__init__.py).

PyTorch gives them symbolic ints, floats and bools (SymInt...) under tracing; in eager mode
they see plain numbers and act as the Python builtins do, which is all they do here: there
are no symbolic shapes in pytorchlite.  Model code calls them so that it also traces, so
they must exist and agree with PyTorch's eager answers (sym_max promotes to float when
either operand is one; sym_ite asserts a bool and operands of one type).  Tensor arguments
go to __torch_function__ first, as PyTorch's."""
import builtins
import math

from . import overrides as _overrides

__all__ = ["sym_constrain_range", "sym_constrain_range_for_size", "sym_float",
           "sym_fresh_size", "sym_int", "sym_ite", "sym_max", "sym_min", "sym_not", "sym_sqrt",
           "sym_sum"]

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def _number_types():
    """The types sym_max and sym_min take, and the floating ones among them."""
    try:
        import numpy as np
    except ModuleNotFoundError:
        return (builtins.int, builtins.float), (builtins.float,)
    return (np.integer, np.floating, builtins.int, builtins.float), (np.floating, builtins.float)


def _extremum(pick, a, b):
    all_types, float_types = _number_types()
    for x in (a, b):
        if not isinstance(x, all_types):
            raise AssertionError(f"expected {all_types}, got {type(x)}")
    r = pick(a, b)
    return builtins.float(r) if isinstance(a, float_types) or isinstance(b, float_types) else r


def sym_not(a):
    """not a (a SymBool's negation under tracing)."""
    return not a


def sym_float(a):
    """float(a)."""
    return builtins.float(a)


def sym_int(a):
    """int(a): floats truncate toward zero."""
    return builtins.int(a)


def sym_max(a, b):
    """max(a, b) of two ints or floats, a float when either is one."""
    return _extremum(builtins.max, a, b)


def sym_min(a, b):
    """min(a, b) of two ints or floats, a float when either is one."""
    return _extremum(builtins.min, a, b)


def sym_sum(*args):
    """The sum of the arguments, given one by one or as one list or tuple."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = args[0]
    return builtins.sum(args)


def sym_sqrt(a):
    """math.sqrt(a)."""
    return math.sqrt(a)


def sym_ite(b, t, f):
    """t if b else f, for a bool b and t, f of one type."""
    if not isinstance(b, builtins.bool):
        raise AssertionError(f"expected SymBool or bool, got {type(b)}")
    if type(t) is not type(f):
        raise AssertionError(f"type mismatch: {type(t)} vs {type(f)}")
    return t if b else f


def sym_fresh_size(expr):
    """expr as a new Python number (a fresh unbacked size under tracing)."""
    from . import tensor
    return tensor(expr).item()


def _check_range(size, lo, hi):
    if lo is not None and hi is not None and hi < lo:
        raise RuntimeError(f"Max must be greater than or equal to min. Got min={lo} max={hi}")
    lo = _INT64_MIN if lo is None else lo
    hi = _INT64_MAX if hi is None else hi
    if not lo <= size <= hi:
        raise RuntimeError(f"Invalid value range for {size} between [{lo}, {hi}].")


def sym_constrain_range(size, *, min=None, max=None):   # noqa: A002 (PyTorch's names)
    """Checks min <= size <= max (a bound on an unbacked size under tracing)."""
    _check_range(size, min, max)


def sym_constrain_range_for_size(size, *, min=None, max=None):   # noqa: A002
    """sym_constrain_range for a size: min defaults to 0, and max must exceed 2."""
    if max is not None and max <= 2:
        raise RuntimeError(f"Max value to constrain_range_for_size must be greater than 2. "
                           f"got: {max}")
    _check_range(size, 0 if min is None else min, max)


_overrides._route_functions(globals())
