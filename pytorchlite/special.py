"""torch.special: the special functions under their SciPy-style names.  Mirrors
torch/special/__init__.py; each is an operator of src/aten/ops.def (or, for logit, xlogy
and sinc, a composite of them)."""
import math

from . import _C

_f = _C._functions

gammaln = _f["lgamma"]
digamma = psi = _f["digamma"]
polygamma = _f["polygamma"]
erf = _f["erf"]
erfinv = _f["erfinv"]
expit = _f["sigmoid"]
exp2 = _f["exp2"]
expm1 = _f["expm1"]
log1p = _f["log1p"]
round = _f["round"]
logsumexp = _f["logsumexp"]
softmax = _f["softmax"]
log_softmax = _f["log_softmax"]


def logit(input, eps=None, *, out=None):
    """log(p / (1 - p)), with p clamped to [eps, 1 - eps] when eps is given."""
    p = input if eps is None else input.clamp(eps, 1.0 - eps)
    result = p.log() - (-p).log1p()
    return result if out is None else out.copy_(result)


def xlogy(input, other, *, out=None):
    """input * log(other), with 0 where input == 0 unless other is NaN; either argument may
    be a Python number (not both)."""
    if not isinstance(input, _C.TensorBase) and not isinstance(other, _C.TensorBase):
        raise TypeError("xlogy(): expected a Tensor as input or other, got two numbers")
    if isinstance(other, _C.TensorBase):
        result = input * other.log()
        keep = other.isnan()
        zero = input == 0
        zero = zero.logical_and(keep.logical_not()) if isinstance(zero, _C.TensorBase) else \
            keep.logical_not() if zero else None
    else:
        other = float(other)
        log_other = math.log(other) if other > 0 else -math.inf if other == 0 else math.nan
        result = input * log_other
        zero = None if math.isnan(other) else input == 0
    if zero is not None:
        result = result.masked_fill(zero, 0)
    return result if out is None else out.copy_(result)


def sinc(input, *, out=None):
    """sin(pi x) / (pi x), and 1 at x == 0 (whose gradient is 0, not the 0/0 of the
    quotient: the quotient sees 1 there)."""
    zero = input == 0
    px = (input * math.pi).masked_fill(zero, 1.0)
    result = (px.sin() / px).masked_fill(zero, 1.0)
    return result if out is None else out.copy_(result)


def _install(tensor_class):
    from ._functions import _in_place
    for fn in (logit, xlogy, sinc):
        setattr(tensor_class, fn.__name__, fn)
        setattr(tensor_class, fn.__name__ + "_", _in_place(fn))
