"""The functions whose Python signature differs from their schema: einsum (operands as
varargs or one list), tensordot (dims as an int or two lists) and cdist (compute_mode as a
string).  Mirrors torch/functional.py; the kernels are aten::einsum, aten::tensordot and
aten::cdist (src/aten/native/einsum.c, linalg_norm.c)."""
from . import _C

_einsum = _C._op("aten::einsum")
_tensordot = _C._op("aten::tensordot")
_cdist = _C._op("aten::cdist")

_COMPUTE_MODES = {
    "use_mm_for_euclid_dist_if_necessary": 0,
    "use_mm_for_euclid_dist": 1,
    "donot_use_mm_for_euclid_dist": 2,
}


def einsum(equation, *operands):
    """Sums the product of the operands over the subscripts the equation contracts:
    einsum('ij,jk->ik', a, b) or einsum('ij,jk->ik', [a, b])."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = operands[0]
    return _einsum(equation, list(operands))


def tensordot(a, b, dims=2, out=None):
    """Contracts the last `dims` dims of a with the first `dims` of b, or the dims listed in
    dims = (dims_a, dims_b)."""
    if isinstance(dims, int) or (hasattr(dims, "dim") and dims.dim() == 0):
        dims = int(dims)
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        dims_a, dims_b = list(range(a.dim() - dims, a.dim())), list(range(dims))
    else:
        dims_a, dims_b = dims
        dims_a = [dims_a] if isinstance(dims_a, int) else [int(d) for d in dims_a]
        dims_b = [dims_b] if isinstance(dims_b, int) else [int(d) for d in dims_b]
    res = _tensordot(a, b, dims_a, dims_b)
    if out is not None:
        return out.copy_(res)
    return res


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """The p-norm distance between each pair of rows of x1 [*, P, M] and x2 [*, R, M]."""
    if compute_mode not in _COMPUTE_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    return _cdist(x1, x2, p, _COMPUTE_MODES[compute_mode])
