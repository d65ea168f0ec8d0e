"""torch.special: the special functions under their SciPy-style names.  Mirrors
torch/special/__init__.py; each is an operator of src/aten/ops.def (or, for logit, a
composite of them)."""
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
