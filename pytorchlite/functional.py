"""The functions whose Python signature differs from their schema: einsum (operands as
varargs or one list), tensordot (dims as an int or two lists) and cdist (compute_mode as a
string).  Mirrors torch/functional.py; the kernels are aten::einsum, aten::tensordot and
aten::cdist (src/aten/native/einsum.c, linalg_norm.c).  Below them, the linear-algebra
composites inner, addr, addbmm, dist, logdet, pinverse and vander, written with mm, outer,
tensordot, vector_norm, slogdet, pinv and cumprod as PyTorch's CompositeImplicitAutograd kernels
are."""
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


# ---- linear-algebra composites (CompositeImplicitAutograd in PyTorch) ----

def inner(input, other, *, out=None):
    """The sum of products over the last dim of both (input * other for a 0-D one): the
    result has shape input.shape[:-1] + other.shape[:-1]."""
    if input.dim() == 0 or other.dim() == 0:
        result = input * other
    else:
        if input.shape[-1] != other.shape[-1]:
            raise RuntimeError("inner() the last dimension must match on both input tensors "
                               f"but got shapes {list(input.shape)} and {list(other.shape)}")
        result = _tensordot(input, other, [-1], [-1])
    return result if out is None else out.copy_(result)


def _outer_checks(vec1, vec2):
    for name, v in (("vec1", vec1), ("vec2", vec2)):
        if v.dim() != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {v.dim()}-D")


def _scaled_sum(input, product, beta, alpha):
    """beta * input + alpha * product, where beta == 0 ignores input (NaNs included), as
    PyTorch's addmm family does."""
    if not (product.is_floating_point() or product.is_complex()):
        for name, v in (("beta", beta), ("alpha", alpha)):
            if isinstance(v, float):
                raise RuntimeError(f"For integral input tensors, argument {name} must not be a "
                                   "floating point number.")
    product = product if alpha == 1 else product * alpha
    if beta == 0:
        return product
    return product + (input if beta == 1 else input * beta)


def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * outer(vec1, vec2)."""
    _outer_checks(vec1, vec2)
    result = _scaled_sum(input, vec1.outer(vec2), beta, alpha)
    return result if out is None else out.copy_(result)


def _bmm_checks(batch1, batch2):
    for name, b in (("batch1", batch1), ("batch2", batch2)):
        if b.dim() != 3:
            raise RuntimeError(f"{name} must be a 3D tensor")
    if batch1.shape[0] != batch2.shape[0]:
        raise RuntimeError("batch1 and batch2 must have same number of batches, got "
                           f"{batch1.shape[0]} and {batch2.shape[0]}")
    if batch1.shape[2] != batch2.shape[1]:
        raise RuntimeError(f"Incompatible matrix sizes for bmm ({batch1.shape[1]}x"
                           f"{batch1.shape[2]} and {batch2.shape[1]}x{batch2.shape[2]})")


def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * the sum over b of batch1[b] @ batch2[b], as one matrix
    product: (n, b*k) @ (b*k, m)."""
    _bmm_checks(batch1, batch2)
    b, n, k = batch1.shape
    m = batch2.shape[2]
    product = batch1.permute(1, 0, 2).reshape(n, b * k).mm(batch2.reshape(b * k, m))
    result = _scaled_sum(input, product, beta, alpha)
    return result if out is None else out.copy_(result)


def dist(input, other, p=2):
    """The p-norm of input - other (broadcast), over all elements."""
    from .linalg import vector_norm
    diff = input - other
    if not (diff.is_floating_point() or diff.is_complex()):
        from ._tensor_types import _NAME
        raise RuntimeError("norm(): input dtype should be either floating point or complex. "
                           f"Got {_NAME[diff.dtype]} instead.")
    return vector_norm(diff, p)


def logdet(input):
    """log(det(input)): NaN for a negative determinant, -inf for a zero one (slogdet's
    logabsdet where its sign is not negative)."""
    from .linalg import slogdet
    sign, logabsdet = slogdet(input)
    return _C._functions["where"](sign < 0, float("nan"), logabsdet)


def pinverse(input, rcond=1e-15):
    """linalg.pinv with rcond as its relative tolerance (and no absolute one)."""
    from .linalg import pinv
    return pinv(input, atol=0.0, rtol=rcond)


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of a 1-D x: column j is x ** (N - 1 - j) (x ** j when
    increasing), built by a cumulative product, in x's dtype promoted with int64."""
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    dtype = _C.promote_types(x.dtype, _C.int64)
    columns = [_C._functions["ones"](x.shape[0], 1, dtype=dtype, device=x.device)]
    if n > 1:
        powers = x.to(dtype).unsqueeze(1).expand(x.shape[0], n - 1).cumprod(1)
        columns.append(powers)
    result = _C._functions["cat"](columns, 1)[:, :n]
    return result if increasing else result.flip(1)


def _install(tensor_class):
    from ._functions import _in_place
    from .linalg import matrix_exp, matrix_power
    for fn in (inner, addr, addbmm, dist, logdet, pinverse, matrix_exp, matrix_power):
        setattr(tensor_class, fn.__name__, fn)
    tensor_class.addr_ = _in_place(addr)
    tensor_class.addbmm_ = _in_place(addbmm)
