"""pytorchlite.linalg: vector_norm, matrix_norm, norm, vecdot, svd, svdvals, cross and the
matmul alias.  Mirrors torch/linalg (whose functions live in ATen/native/LinearAlgebra.cpp and
BatchLinearAlgebra.cpp).  vector_norm is the composite aten::linalg_vector_norm
(src/aten/native/linalg_norm.c), svd and svdvals the ops aten::linalg_svd and
aten::linalg_svdvals (src/aten/native/svd.c); the others compose operators here, so autograd
flows through them.  The spectral matrix norms (ord 2, -2: the largest and smallest singular
value; 'nuc': their sum) come from svdvals."""
import math

from . import _C

_LEGACY_NAMES = {
    _C.float32: "Float", _C.float64: "Double", _C.float16: "Half", _C.bfloat16: "BFloat16",
    _C.int64: "Long", _C.int32: "Int", _C.int16: "Short", _C.int8: "Char", _C.uint8: "Byte",
    _C.bool: "Bool",
}
_vector_norm = _C._op("aten::linalg_vector_norm")
matmul = _C._op("aten::matmul")
cross = _C._op("aten::linalg_cross")
_svd = _C._op("aten::linalg_svd")
_svdvals = _C._op("aten::linalg_svdvals")


def _legacy(dtype):
    return _LEGACY_NAMES[dtype]


def _dims(dim):
    if dim is None:
        return None
    return [dim] if isinstance(dim, int) else [int(d) for d in dim]


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """The ord-norm of x over dim (every dim when None), as if x were flattened."""
    return _vector_norm(x, ord, _dims(dim), keepdim, dtype=dtype)


def svd(A, full_matrices=True, *, driver=None):
    """A = U diag(S) Vh for the matrices of A (batched over leading dims): a named tuple
    (U, S, Vh) with S descending; U and Vh are square with full_matrices, else k = min(m, n)
    columns of U and rows of Vh."""
    return _svd(A, full_matrices, driver=driver)


def svdvals(A, *, driver=None):
    """The singular values of the matrices of A, descending."""
    return _svdvals(A, driver=driver)


def _ord_text(ord):
    if isinstance(ord, float) and ord.is_integer():
        return str(int(ord)) if math.isfinite(ord) else str(ord)
    return str(ord)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """The ord-norm of the matrices of A over the two dims of dim: 'fro', 1, -1, inf, -inf."""
    if A.dim() < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                           "dimensions.")
    if not A.is_floating_point():
        raise RuntimeError("linalg.matrix_norm: Expected a floating point or complex tensor "
                           f"as input. Got {_legacy(A.dtype)}")
    dim = _dims(dim)
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(map(str, dim))}")
    d0, d1 = (d % A.dim() if -A.dim() <= d < A.dim() else d for d in dim)
    if not (-A.dim() <= dim[0] < A.dim() and -A.dim() <= dim[1] < A.dim()):
        bad = dim[0] if not -A.dim() <= dim[0] < A.dim() else dim[1]
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-A.dim()}, {A.dim() - 1}], but got {bad})")
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, {dim[1]})")
    if ord == "fro":
        return vector_norm(A, 2, (d0, d1), keepdim, dtype=dtype)
    if ord in ("nuc", 2, -2):
        return _spectral_norm(A, ord, d0, d1, keepdim, dtype)
    if ord not in (1, -1, math.inf, -math.inf):
        raise RuntimeError(f"linalg.matrix_norm: Order {_ord_text(ord)} not supported.")
    if dtype is not None:
        A = A.to(dtype)
    # ord 1: the largest column sum of |A|; inf: the largest row sum (-1, -inf: smallest)
    if abs(ord) == math.inf:
        d0, d1 = d1, d0
    sums = A.abs().sum(d0, keepdim=True)
    res = sums.amax(d1, keepdim=True) if ord > 0 else sums.amin(d1, keepdim=True)
    if not keepdim:
        res = res.squeeze(max(d0, d1)).squeeze(min(d0, d1))
    return res


def _spectral_norm(A, ord, d0, d1, keepdim, dtype):
    """ord 2 / -2: the largest / smallest singular value of the matrices over (d0, d1);
    'nuc': their sum."""
    if dtype is not None:
        A = A.to(dtype)
    S = svdvals(A.movedim((d0, d1), (-2, -1)))
    if ord == "nuc":
        res = S.sum(-1)
    elif ord == 2:
        # the norm of an empty matrix is 0
        res = S.amax(-1) if S.shape[-1] else S.sum(-1)
    elif S.shape[-1] == 0:
        raise IndexError("amin(): Expected reduction dim -1 to have non-zero size.")
    else:
        res = S.amin(-1)
    if keepdim:
        res = res.unsqueeze(min(d0, d1)).unsqueeze(max(d0, d1))
    return res


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """A vector norm (dim an int, or A 1-D) or a matrix norm (dim a pair, or A 2-D); with
    ord and dim None, the 2-norm of A flattened."""
    if dim is not None:
        dim = _dims(dim)
        if len(dim) == 1:
            if isinstance(ord, str):
                raise RuntimeError(f"linalg.vector_norm: ord must be a number. Got {ord}")
            return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)
        if len(dim) != 2:
            raise RuntimeError("linalg.norm: If dim is specified, it must be of length 1 or 2. "
                               f"Got {dim}")
    elif ord is not None:
        if A.dim() not in (1, 2):
            raise RuntimeError("linalg.norm: If dim is not specified but ord is, the input must "
                               f"be 1D or 2D. Got {A.dim()}D.")
        dim = [0] if A.dim() == 1 else [0, 1]
        if A.dim() == 1:
            return norm(A, ord, dim, keepdim, dtype=dtype)
    if ord is None:
        return vector_norm(A, 2, dim, keepdim, dtype=dtype)
    return matrix_norm(A, ord, dim, keepdim, dtype=dtype)


def vecdot(x, y, *, dim=-1):
    """The dot product of x and y along dim (broadcasting the other dims)."""
    if x.dtype != y.dtype:
        raise RuntimeError("linalg.vecdot: Expected x and y to have the same dtype, but found x "
                           f"of type {_legacy(x.dtype)} and y of type "
                           f"{_legacy(y.dtype)} instead")
    if not x.is_floating_point():
        raise RuntimeError("linalg.vecdot: Expected a floating point or complex tensor as "
                           f"input. Got {_legacy(x.dtype)}")
    return (x * y).sum(dim)
