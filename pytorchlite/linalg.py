"""pytorchlite.linalg: norms (vector_norm, matrix_norm, norm), products (vecdot, cross,
matmul, matrix_power), the LU family (lu_factor, solve, inv, det, slogdet, solve_triangular),
the factorisations (cholesky, qr, eigh, eigvalsh, svd, svdvals) and what composes them
(lstsq, pinv, matrix_rank, matrix_exp).  Mirrors torch/linalg (whose functions live in
ATen/native/LinearAlgebra.cpp and BatchLinearAlgebra.cpp).  vector_norm is the composite
aten::linalg_vector_norm (src/aten/native/linalg_norm.c); the LU family and the
factorisations are operators of src/aten/native/linalg_solve.c, linalg_decomp.c and svd.c
(their working dtypes: Note [Float64 linear algebra]); the others compose operators here, so
autograd flows through them.  The spectral matrix norms (ord 2, -2: the largest and smallest
singular value; 'nuc': their sum) come from svdvals.  eig and eigvals are complex
tensors assembled from the real and imaginary parts that the operator aten::_linalg_eig_split
(src/aten/native/linalg_eig.c, LAPACK geev's algorithm) computes."""
import math

from ._out_arguments import write_cast as _write_cast
from . import _C
from . import overrides as _overrides
from ._functions import _write_out, empty, eye, ones_like, where, zeros_like
from ._shape_functions import broadcast_shapes as _broadcast_shapes
from ._type_info import finfo

_LEGACY_NAMES = {
    _C.float32: "Float", _C.float64: "Double", _C.float16: "Half", _C.bfloat16: "BFloat16",
    _C.int64: "Long", _C.int32: "Int", _C.int16: "Short", _C.int8: "Char", _C.uint8: "Byte",
    _C.bool: "Bool", _C.complex64: "ComplexFloat", _C.complex128: "ComplexDouble",
}
_vector_norm = _C._op("aten::linalg_vector_norm")
matmul = _C._op("aten::matmul")
cross = _C._op("aten::linalg_cross")
_svd = _C._op("aten::linalg_svd")
_svdvals = _C._op("aten::linalg_svdvals")
_linalg_svd = _C._op("aten::_linalg_svd")

LinAlgError = _C._LinAlgError
lu_factor = _C._op("aten::linalg_lu_factor")
lu_factor_ex = _C._op("aten::linalg_lu_factor_ex")
solve = _C._op("aten::linalg_solve")
solve_ex = _C._op("aten::linalg_solve_ex")
inv = _C._op("aten::linalg_inv")
inv_ex = _C._op("aten::linalg_inv_ex")
det = _C._op("aten::linalg_det")
slogdet = _C._op("aten::linalg_slogdet")
solve_triangular = _C._op("aten::linalg_solve_triangular")
cholesky = _C._op("aten::linalg_cholesky")
cholesky_ex = _C._op("aten::linalg_cholesky_ex")
qr = _C._op("aten::linalg_qr")
eigh = _C._op("aten::linalg_eigh")
eigvalsh = _C._op("aten::linalg_eigvalsh")
_eig_split = _C._op("aten::_linalg_eig_split")
ldl_factor = _C._op("aten::linalg_ldl_factor")
ldl_factor_ex = _C._op("aten::linalg_ldl_factor_ex")
ldl_solve = _C._op("aten::linalg_ldl_solve")
_lstsq_qr = _C._op("aten::_linalg_lstsq_qr")


def _legacy(dtype):
    return _LEGACY_NAMES[dtype]


def _dims(dim):
    if dim is None:
        return None
    return [dim] if isinstance(dim, int) else [int(d) for d in dim]


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """The ord-norm of x over dim (every dim when None), as if x were flattened."""
    return _write_cast(_vector_norm(x, ord, _dims(dim), keepdim, dtype=dtype), out)


def svd(A, full_matrices=True, *, driver=None):
    """A = U diag(S) Vh for the matrices of A (batched over leading dims): a named tuple
    (U, S, Vh) with S descending; U and Vh are square with full_matrices, else k = min(m, n)
    columns of U and rows of Vh."""
    return _svd(A, full_matrices, driver=driver)


def svdvals(A, *, driver=None):
    """The singular values of the matrices of A, descending.  Without a gradient to record
    this is _linalg_svd without the vectors (Note [Bidiagonal singular values] in svd.c)
    directly: linalg_svdvals in C asks for them whenever A carries autograd metadata, which
    every view of a tensor does."""
    grad = isinstance(A, _C.TensorBase) and A.requires_grad and _C.is_grad_enabled()
    if driver is None and isinstance(A, _C.TensorBase) and not grad:
        return _linalg_svd(A, False, False)[1]
    return _svdvals(A, driver=driver)


def _ord_text(ord):
    if isinstance(ord, float) and ord.is_integer():
        return str(int(ord)) if math.isfinite(ord) else str(ord)
    return str(ord)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """The ord-norm of the matrices of A over the two dims of dim: 'fro', 1, -1, inf, -inf."""
    return _write_cast(_matrix_norm(A, ord, dim, keepdim, dtype), out)


def _matrix_norm(A, ord, dim, keepdim, dtype):
    if A.dim() < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                           "dimensions.")
    if not (A.is_floating_point() or A.is_complex()):
        raise RuntimeError("linalg.matrix_norm: Expected a floating point or complex tensor "
                           f"as input. Got {_legacy(A.dtype)}")
    if A.is_complex() and dtype is not None and not dtype.is_complex:
        raise RuntimeError("linalg.matrix_norm: dtype should be complex for complex inputs, "
                           f"but got {_legacy(dtype)}")
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
    S = svdvals(A.permute([d for d in range(A.dim()) if d not in (d0, d1)] + [d0, d1]))
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
    """The dot product of x and y along dim (broadcasting the other dims); complex x is
    conjugated, sum(conj(x) * y)."""
    if x.dtype != y.dtype:
        raise RuntimeError("linalg.vecdot: Expected x and y to have the same dtype, but found x "
                           f"of type {_legacy(x.dtype)} and y of type "
                           f"{_legacy(y.dtype)} instead")
    if not (x.is_floating_point() or x.is_complex()):
        raise RuntimeError("linalg.vecdot: Expected a floating point or complex tensor as "
                           f"input. Got {_legacy(x.dtype)}")
    return ((x.conj_physical() if x.is_complex() else x) * y).sum(dim)


def _check_square(fn, A):
    if A.dim() < 2:
        raise RuntimeError(f"{fn}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{fn}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")


def matrix_power(A, n, *, out=None):
    """A^n for the square matrices of A by repeated squaring (n < 0: inv(A)^-n; n = 0: I)."""
    return _write_cast(_matrix_power(A, n), out)


def _matrix_power(A, n):
    _check_square("linalg.matrix_power", A)
    if n == 0:
        return eye(A.shape[-1], dtype=A.dtype).expand(A.shape).clone()
    if n < 0:
        A, n = inv(A), -n
    result, base = None, A
    while True:
        if n & 1:
            result = base if result is None else result @ base
        n >>= 1
        if not n:
            break
        base = base @ base
    return result.clone() if result is A else result


# Pade [13/13] approximant of exp (Higham, "The scaling and squaring method for the matrix
# exponential revisited", 2005): its numerator coefficients and the largest 1-norm for which
# it is accurate to double precision
_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
           129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
           40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152


def matrix_exp(A):
    """exp(A) for the square matrices of A: A / 2^s (s from the largest 1-norm in the batch)
    through the [13/13] Pade approximant, then squared s times.  Composite, so autograd
    differentiates the approximant."""
    _check_square("linalg.matrix_exp", A)
    if not (A.is_floating_point() or A.is_complex()):
        raise RuntimeError("linalg.matrix_exp: Expected a floating point or complex tensor as "
                           f"input. Got {_legacy(A.dtype)}")
    if A.numel() == 0:
        return A.clone()
    norm1 = float(A.detach().abs().sum(-2).amax())
    s = max(0, math.ceil(math.log2(norm1 / _THETA13))) if norm1 > 0 else 0
    A = A / 2.0 ** s
    b = _PADE13
    I = eye(A.shape[-1], dtype=A.dtype)
    A2 = A @ A
    A4 = A2 @ A2
    A6 = A4 @ A2
    U = A @ (A6 @ (b[13] * A6 + b[11] * A4 + b[9] * A2)
             + b[7] * A6 + b[5] * A4 + b[3] * A2 + b[1] * I)
    V = A6 @ (b[12] * A6 + b[10] * A4 + b[8] * A2) + b[6] * A6 + b[4] * A4 + b[2] * A2 \
        + b[0] * I
    E = solve(V - U, V + U)
    for _ in range(s):
        E = E @ E
    return E


def _tolerance(S, shape, dtype, atol, rtol):
    """PyTorch's cutoff for small singular values: max(atol, rtol * largest), with rtol
    eps * max(m, n) when neither is given (0 when only atol is)."""
    if rtol is None:
        rtol = finfo(dtype).eps * max(shape[-2], shape[-1]) if not atol else 0.0
    tol = rtol * (S.amax(-1, keepdim=True) if S.shape[-1] else S.sum(-1, keepdim=True))
    return tol.clamp(min=atol) if atol else tol


def _spectrum(A, hermitian):
    """(U, S, Vh) with A = U diag(S) Vh, from eigh when A is symmetric (S = |eigenvalues|)."""
    if not hermitian:
        return svd(A, full_matrices=False)
    w, V = eigh(A)
    return V * w.sign().to(V.dtype).unsqueeze(-2), w.abs(), V.mH


def pinv(A, *, atol=None, rtol=None, hermitian=False):
    """The pseudo-inverse of the matrices of A from their SVD (eigh when hermitian): the
    singular values at or below the tolerance (see matrix_rank) count as zero."""
    if A.dim() < 2 or A.dtype not in (_C.float32, _C.float64, _C.complex64, _C.complex128):
        dims = ", ".join(map(str, A.shape))
        raise RuntimeError(f"linalg.pinv({_legacy(A.dtype)}{{[{dims}]}}): expected a tensor "
                           "with 2 or more dimensions of float, double, cfloat or cdouble types")
    U, S, Vh = _spectrum(A, hermitian)
    keep = S > _tolerance(S, A.shape, A.dtype, atol, rtol)
    S_inv = where(keep, 1 / where(keep, S, ones_like(S)), zeros_like(S))
    return Vh.mH @ (S_inv.to(U.dtype).unsqueeze(-1) * U.mH)


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False):
    """The number of singular values (|eigenvalues| when hermitian) of each matrix above
    max(atol, rtol * the largest); rtol defaults to eps * max(m, n) unless atol is given."""
    if A.dim() < 2:
        raise RuntimeError("torch.linalg.matrix_rank: The input tensor input must have at least "
                           "2 dimensions.")
    S = eigvalsh(A).abs() if hermitian else svdvals(A)
    return (S > _tolerance(S, A.shape, A.dtype, atol, rtol)).sum(-1)


_LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")
_EPS32, _EPS64 = 2.0 ** -23, 2.0 ** -52   # finfo(float32 / float64).eps


def _infer_size(a, b):
    """The shape that shapes a and b broadcast to, with the message of PyTorch's infer_size."""
    size = max(len(a), len(b))
    out = []
    for i in range(size):
        da = a[i - size + len(a)] if i >= size - len(a) else 1
        db = b[i - size + len(b)] if i >= size - len(b) else 1
        if da != db and da != 1 and db != 1:
            raise RuntimeError(f"The size of tensor a ({da}) must match the size of tensor b "
                               f"({db}) at non-singleton dimension {i}")
        out.append(db if da == 1 else da)
    return out


def lstsq(A, B, rcond=None, *, driver=None):
    """The least-squares solutions X of A X = B (minimum norm when A is wide or rank
    deficient), as PyTorch's named tuple (solution, residuals, rank, singular_values).

    driver names LAPACK's routine; here:
      'gels'           Householder QR of [A B] (tall) or of A^T (wide); A must have full
                       rank (an exactly zero diagonal of R raises, as LAPACK's info does).
                       rank and singular_values are empty.
      'gelsy' (default) the QR path when every matrix has full rank, else the SVD path;
                       singular_values empty.  The QR kernel proves full rank from R (a
                       bound on its condition number below 1 / rcond); where it cannot, the
                       rank is counted from the singular values.
      'gelsd', 'gelss' the SVD path: X = pinv(A) B with the singular values at or below
                       rcond * the largest dropped.
    Without a gradient to record, 'gels' and 'gelsy' are one call of _linalg_lstsq_qr
    (src/aten/native/linalg_lstsq.c, Note [Least squares by one QR]) for real A; with one,
    and for complex A, the same QR as a composite of differentiable operators (_qr_lstsq,
    conjugate transposes where the real path transposes).  rcond defaults to
    eps * max(m, n).  residuals (the squared residual norms of each column of B, [*, 1] for
    a vector B) are computed for tall A of full rank with every driver but 'gelsy', as in
    PyTorch; otherwise empty."""
    if A.dim() < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    if A.dtype != B.dtype:
        raise RuntimeError("torch.linalg.lstsq: Expected input and other to have the same "
                           f"dtype, but got input's dtype {_legacy(A.dtype)} and other's "
                           f"dtype {_legacy(B.dtype)}")
    if B.dim() > A.dim() or A.dim() - B.dim() > 1:
        raise RuntimeError("torch.linalg.lstsq: input.dim() must be greater or equal to "
                           "other.dim() and (input.dim() - other.dim()) <= 1")
    # PyTorch's linalg_solve_is_vector_rhs
    vector = B.dim() == 1 or (B.dim() == A.dim() - 1 and B.shape == A.shape[:-1])
    m, n = A.shape[-2], A.shape[-1]
    if B.shape[-1 if vector else -2] != m:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size("
                           f"{-1 if vector else -2})")
    if B.dim() == A.dim() - 1 and not vector:
        # PyTorch broadcasts A's batch with all but the last dimension of such a B: one matrix
        # B[..., -2:, :] for each element of that batch (A (1, 4, 3) and B (4, 4) give X
        # (4, 3, 4); A (2, 4, 3) and B (4, 2) do not broadcast)
        batch = _infer_size(A.shape[:-2], B.shape[:-1])
        A, B = A.expand(batch + [m, n]), B.expand(batch + list(B.shape[-2:]))
    driver = "gelsy" if driver is None else driver
    if driver not in _LSTSQ_DRIVERS:
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of "
                           "(gels, gelsy, gelsd, gelss)")
    if A.dtype not in (_C.float32, _C.float64, _C.complex64, _C.complex128):
        # PyTorch's text, complex dtypes being handled too
        raise RuntimeError("This function doesn't handle types other than float and double")
    if rcond is None:
        rcond = (_EPS64 if A.dtype in (_C.float64, _C.complex128) else _EPS32) * max(m, n)
    from .return_types import linalg_lstsq
    # residuals and singular values are real (empty ones too)
    none = empty(0, dtype=A.real.dtype if A.is_complex() else A.dtype)
    if driver in ("gels", "gelsy") and not A.is_complex() and not (
            _C.is_grad_enabled() and (A.requires_grad or B.requires_grad)):
        X, residuals, rank = _lstsq_qr(A, B, float(rcond) if driver == "gelsy" else None)
        if driver == "gels" or not rank.numel() or int(rank.amin()) >= 0:
            return linalg_lstsq((X, residuals, rank, none))
        # some matrix's full rank was not proved: count it from the singular values
        S = svdvals(A)
        rank = (S > _tolerance(S, A.shape, A.dtype, None, rcond)).sum(-1)
        if not bool((rank == min(m, n)).all()):
            Bm = B.unsqueeze(-1) if vector else B
            X = pinv(A, rtol=rcond) @ Bm
            X = X.squeeze(-1) if vector else X
        return linalg_lstsq((X, residuals, rank, none))
    if vector:
        B = B.unsqueeze(-1)
    rank = empty(0, dtype=_C.int64)
    S, X = None, None
    if driver == "gelsy":
        rank, X = _qr_lstsq(A, B, rcond)
    elif driver == "gels":
        X = _qr_lstsq(A, B, None)[1]
    else:
        # one SVD for the values, the rank and X = pinv(A) B (applied, not formed)
        U, S, Vh = svd(A, full_matrices=False)
        keep = S > _tolerance(S, A.shape, A.dtype, None, rcond)
        rank = keep.sum(-1)
        S_inv = where(keep, 1 / where(keep, S, ones_like(S)), zeros_like(S))
        X = Vh.mH @ (S_inv.to(U.dtype).unsqueeze(-1) * (U.mH @ B))
    full = ((X is not None and driver in ("gels", "gelsy")) or
            bool((rank == min(m, n)).all()))
    if X is None:
        X = pinv(A, rtol=rcond) @ B
    residuals = none
    if m > n and full and driver != "gelsy":
        # PyTorch's 'gels' leaves zeros when A has no columns, its SVD drivers ||B||^2
        E = A @ X - B
        residuals = ((E.abs() if E.is_complex() else E) ** 2).sum(-2)
        if driver == "gels" and n == 0:
            residuals = zeros_like(residuals)
    return linalg_lstsq((X.squeeze(-1) if vector else X, residuals, rank,
                         S if driver in ("gelsd", "gelss") else none))


def _eig_parts(fn, A, compute_v):
    from . import _C as C
    if not isinstance(A, C.TensorBase):
        raise TypeError(f"linalg.{fn}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(A).__name__}")
    # eigvals' gradient needs the eigenvectors too (PyTorch's linalg_eigvals computes them
    # when A requires grad)
    return _eig_split(A, compute_v or (A.requires_grad and C.is_grad_enabled()))


def eig(A, *, out=None):
    """The eigenvalues and right eigenvectors of square matrices (..., n, n), as complex
    tensors: A @ V = V @ diag(L); each eigenvector has norm 1 (geev's normalisation)."""
    from . import complex as make_complex
    from .return_types import linalg_eig
    if out is not None:
        raise NotImplementedError("linalg.eig(out=...) is not supported")
    wr, wi, vr, vi = _eig_parts("eig", A, True)
    return linalg_eig((make_complex(wr, wi), make_complex(vr, vi)))


def eigvals(A, *, out=None):
    """The eigenvalues of square matrices (..., n, n), as a complex tensor (eig's order)."""
    from . import complex as make_complex
    if out is not None:
        raise NotImplementedError("linalg.eigvals(out=...) is not supported")
    wr, wi, _, _ = _eig_parts("eigvals", A, False)
    return make_complex(wr, wi)


def _qr_lstsq(A, B, rcond):
    """lstsq's 'gelsy' (and 'gels', rcond None: full rank assumed, rank not counted):
    (rank, X) from one QR, X None when some matrix is rank deficient.  Tall A: the R of
    [A B] (no Q formed) holds R and Q^H B in its first n rows; wide A: the QR of A^H, X = Q
    R^-H B.  Full rank is proved by ||R||_F ||R^-1||_F < 1 / rcond (an upper bound on
    sigma_max / sigma_min); failing that, A's singular values count it."""
    m, n = A.shape[-2], A.shape[-1]
    k = min(m, n)
    batch = list(A.shape[:-2])
    if k == 0:
        return _C._functions["full"](batch, 0, dtype=_C.int64), _qr_solve(A, B)
    if m >= n:
        Ae, Be = A, B
        if A.shape[:-2] != B.shape[:-2]:
            both = list(_broadcast_shapes(A.shape[:-2], B.shape[:-2]))
            Ae, Be = A.expand(both + [m, n]), B.expand(both + list(B.shape[-2:]))
        AB = _C._functions["cat"]([Ae, Be], -1)
        # R's derivative needs Q: mode 'r' only when no gradient is recorded
        grad = _C.is_grad_enabled() and AB.requires_grad
        Rb = qr(AB, mode="reduced" if grad else "r")[1]
        R, C = Rb[..., :n, :n], Rb[..., :n, n:]
    else:
        Q, R = qr(A.mH)
    if rcond is None:
        rank = None
    elif bool((_vector_norm(R, 2, (-2, -1)) * _vector_norm(solve_triangular(
            R, eye(k, dtype=R.dtype, device=R.device), upper=True), 2, (-2, -1))).amax() *
            rcond < 1):
        rank = _C._functions["full"](batch, k, dtype=_C.int64)
    else:
        S = svdvals(A)
        rank = (S > _tolerance(S, A.shape, A.dtype, None, rcond)).sum(-1)
        if not bool((rank == k).all()):
            return rank, None
    if m >= n:
        return rank, solve_triangular(R, C, upper=True)
    return rank, Q @ solve_triangular(R.mH, B, upper=False)


def _qr_solve(A, B):
    """Least squares for full-rank A by Householder QR: tall, X = R^-1 Q^H B; wide (minimum
    norm), A^H = Q R gives X = Q R^-H B."""
    if A.shape[-2] >= A.shape[-1]:
        Q, R = qr(A)
        return solve_triangular(R, Q.mH @ B, upper=True)
    Q, R = qr(A.mH)
    return Q @ solve_triangular(R.mH, B, upper=False)


# ---- LU from lu_factor's packed form; multi_dot, vander and diagonal ----

def _lu_unpack(LU, pivots, unpack_data=True, unpack_pivots=True):
    """(P, L, U) with A = P @ L @ U from lu_factor's LU (L below the diagonal with a unit
    diagonal, U on and above it) and its 1-based LAPACK row swaps; the parts not asked for
    are empty tensors."""
    m, n = LU.shape[-2], LU.shape[-1]
    k = min(m, n)
    L = U = P = empty(0, dtype=LU.dtype, device=LU.device)
    if unpack_data:
        L = LU[..., :, :k].tril(-1) + eye(m, k, dtype=LU.dtype, device=LU.device)
        U = LU[..., :k, :].triu()
    if unpack_pivots:
        batch = list(LU.shape[:-2])
        perm = _C._functions["arange"](m, device=LU.device).expand(batch + [m]).clone()
        swaps = pivots.to(_C.int64) - 1
        for i in range(pivots.shape[-1]):
            j = swaps[..., i:i + 1]
            at_i, at_j = perm[..., i:i + 1].clone(), perm.gather(-1, j)
            perm[..., i:i + 1] = at_j
            perm.scatter_(-1, j, at_i)
        # row i of L @ U is row perm[i] of A: P[perm[i], i] = 1
        P = eye(m, dtype=LU.dtype, device=LU.device)[perm].mT
    return P, L, U


def lu(A, *, pivot=True, out=None):
    """(P, L, U) with A = P @ L @ U, L unit lower triangular (m x k), U upper (k x n)."""
    from .return_types import linalg_lu
    LU, pivots = lu_factor(A, pivot=pivot)
    return _write_out(linalg_lu(_lu_unpack(LU, pivots)), out)


def _permute(P, B):
    """P @ B for a permutation matrix P; a complex B is permuted part by part with P's real
    part (no complex matrix product is needed to move rows)."""
    if P.is_complex() or B.is_complex():
        from . import complex as make_complex
        Pr = P.real if P.is_complex() else P
        Br = B.real if B.is_complex() else B
        Bi = B.imag if B.is_complex() else zeros_like(B)
        return make_complex(Pr @ Br, Pr @ Bi)
    return P @ B


def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    """X with A X = B (left=False: X A = B; adjoint: with A^H) from lu_factor(A)."""
    return _write_out(_lu_solve(LU, pivots, B, left, adjoint), out)


def _lu_solve(LU, pivots, B, left, adjoint):
    P, L, U = _lu_unpack(LU, pivots)
    if adjoint:
        P, L, U = P.mT, U.mH, L.mH
        upper_first = False
    else:
        upper_first = True
    if left:
        # A = P L U: X = U^-1 L^-1 P^T B (adjoint: A^H = U^H L^H P^T, X = P L^-H U^-H B)
        if upper_first:
            Y = solve_triangular(L, _permute(P.mT, B), upper=False, unitriangular=True)
            return solve_triangular(U, Y, upper=True)
        Y = solve_triangular(L, B, upper=False)
        return _permute(P.mT, solve_triangular(U, Y, upper=True, unitriangular=True))
    return _lu_solve(LU, pivots, B.mH, True, not adjoint).mH


def multi_dot(tensors, *, out=None):
    """tensors[0] @ tensors[1] @ ...: the first may be 1-D (a row), the last 1-D (a column),
    the others 2-D; multiplied left to right."""
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    for i, t in enumerate(tensors):
        ends = i in (0, len(tensors) - 1)
        if t.dim() != 2 and not (ends and t.dim() == 1):
            where = "first" if i == 0 else "last" if i == len(tensors) - 1 else None
            if where:
                raise RuntimeError(f"multi_dot(): the {where} tensor must be 1D or 2D but got "
                                   f"{t.dim()}D")
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.dim()}D")
    result = tensors[0]
    for t in tensors[1:]:
        result = matmul(result, t)
    if out is not None:
        return out.resize_(result.shape).copy_(result)
    return result


def vander(x, *, N=None):
    """The Vandermonde matrix with increasing powers x^0 .. x^(N-1) along the last dim, for x
    of shape (*, n)."""
    n = (x.shape[-1] if x.dim() else 1) if N is None else N
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    dtype = _C.promote_types(x.dtype, _C.int64)
    x = x.to(dtype)
    powers = x.unsqueeze(-1).expand(list(x.shape) + [n - 1]).cumprod(-1)
    return _C._functions["cat"]([ones_like(x).unsqueeze(-1), powers], -1)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """A.diagonal(offset, dim1, dim2), defaulting to the last two dims (the matrices)."""
    return A.diagonal(offset, dim1, dim2)


# ---- tensor inverse and solve, condition number ----

def _prod(sizes):
    result = 1
    for size in sizes:
        result *= size
    return result


def tensorinv(A, ind=2, *, out=None):
    """The inverse of A seen as a matrix of shape (prod(shape[:ind]), prod(shape[ind:])),
    returned with shape shape[ind:] + shape[:ind] (tensordot(inv, A, ind) is the identity)."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = list(A.shape[:ind]), list(A.shape[ind:])
    if _prod(cols) != _prod(rows):
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {_prod(cols)} != {_prod(rows)}")
    result = inv(A.reshape(_prod(rows), _prod(cols))).reshape(cols + rows)
    return result if out is None else out.resize_(result.shape).copy_(result)


def tensorsolve(A, B, dims=None, *, out=None):
    """X with tensordot(A, X, X.ndim) == B: A's dims in `dims` are moved last first, then A
    is solved as a matrix of shape (prod(B.shape), prod(A.shape[B.ndim:]))."""
    if dims is not None:
        dims = [d + A.dim() if d < 0 else d for d in dims]
        A = A.permute([d for d in range(A.dim()) if d not in dims] + dims)
    x_shape = list(A.shape[B.dim():])
    if _prod(x_shape) != B.numel():
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[other.ndim:"
                           "]) == prod(self.shape[:other.ndim]), but got "
                           f"{_prod(x_shape)} != {B.numel()}")
    result = solve(A.reshape(_prod(A.shape[:B.dim()]), _prod(x_shape)),
                   B.reshape(-1)).reshape(x_shape)
    return result if out is None else out.resize_(result.shape).copy_(result)


_COND_ORDS = (None, 2, -2, "fro", "nuc", math.inf, -math.inf, 1, -1)


def cond(A, p=None, *, out=None):
    """The condition number of A: the ratio of its extreme singular values (p None, 2, -2:
    any shape), else matrix_norm(A, p) * matrix_norm(inv(A), p) for square A, inf where A is
    singular (nan for 'nuc', as PyTorch)."""
    if p not in _COND_ORDS:
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    if p in (None, 2, -2):
        s = svdvals(A)
        result = s[..., 0] / s[..., -1] if p != -2 else s[..., -1] / s[..., 0]
    else:
        if A.dim() < 2 or A.shape[-1] != A.shape[-2]:
            shape = f"{A.shape[-2]} by {A.shape[-1]}" if A.dim() >= 2 else f"{A.dim()}-D"
            raise RuntimeError(f"linalg.cond(ord={p}): A must be batches of square matrices, "
                               f"but they are {shape} matrices")
        inverse, info = inv_ex(A)
        singular = info > 0
        if p == "nuc":
            # a singular matrix's non-finite inverse has no SVD: PyTorch's result is nan
            inverse = where(singular.unsqueeze(-1).unsqueeze(-1), zeros_like(inverse), inverse)
        result = matrix_norm(A, p) * matrix_norm(inverse, p)
        result = where(singular, _C._functions["full_like"](
            result, math.nan if p == "nuc" else math.inf), result)
    return result if out is None else out.resize_(result.shape).copy_(result)


# ---- products of Householder reflectors (LAPACK's orgqr / ormqr) ----

def _reflectors(name, A, tau):
    """The vectors v_i (unit at i, A[i+1:, i] below, zeros above) of H_i = I - tau_i v_i v_i^H,
    as the columns of an (*, m, k) tensor, after PyTorch's checks."""
    if A.dim() < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if tau.dim() != A.dim() - 1:
        raise RuntimeError(f"{name}: Expected tau to have one dimension less than input, but "
                           f"got tau.ndim equal to {tau.dim()} and input.ndim is equal to "
                           f"{A.dim()}")
    if tau.dtype != A.dtype:
        raise RuntimeError(f"{name}: tau dtype {_LEGACY_NAMES.get(tau.dtype, tau.dtype)} does "
                           f"not match input dtype {_LEGACY_NAMES.get(A.dtype, A.dtype)}")
    m, k = A.shape[-2], tau.shape[-1]
    lower = A[..., :, :k].tril(-1)
    return lower + eye(m, k, dtype=A.dtype, device=A.device)


def _geqrf(A):
    """(a, tau) of LAPACK's geqrf: R on and above the diagonal of a, and below it the vectors
    v_i (unit first entry implied) of Q = H_1 ... H_k, H_i = I - tau_i v_i v_i^H, k = min(m, n).
    Each reflection is LAPACK's larfg: beta = -sign(Re alpha) |(alpha, x)|, tau = (beta - alpha)
    / beta, v = x / (alpha - beta); a column with nothing to reflect (x = 0, alpha real) gets
    tau = 0.  Column by column with batched dispatcher ops, without autograd (PyTorch has no
    derivative for geqrf either)."""
    from .autograd.grad_mode import no_grad
    if A.dim() < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    if A.dtype not in (_C.float32, _C.float64, _C.complex64, _C.complex128):
        raise NotImplementedError(f"\"geqrf_cpu\" not implemented for "
                                  f"'{_LEGACY_NAMES.get(A.dtype, A.dtype)}'")
    m, n = A.shape[-2], A.shape[-1]
    k = min(m, n)
    with no_grad():
        a = A.clone(memory_format=_C.contiguous_format)
        tau = _C._functions["zeros"](list(A.shape[:-2]) + [k], dtype=A.dtype, device=A.device)
        for j in range(k):
            alpha, x = a[..., j, j], a[..., j + 1:, j]
            xnorm = vector_norm(x.abs() if x.is_complex() else x, dim=-1)
            real = alpha.real if alpha.is_complex() else alpha
            still = (xnorm == 0) & (alpha.imag == 0 if alpha.is_complex() else True)
            size = alpha.abs().hypot(xnorm)
            beta = where(still, real, where(real >= 0, -size, size))
            t = where(still, 0.0, (beta - alpha) / where(still, 1.0, beta))
            v = x / where(still, 1.0, alpha - beta).unsqueeze(-1)
            a[..., j, j] = beta
            a[..., j + 1:, j] = v
            tau[..., j] = t
            if j + 1 < n:
                head = ones_like(alpha).unsqueeze(-1)
                vj = _C._functions["cat"]([head, v], -1).unsqueeze(-1)      # (*, m - j, 1)
                tj = (t.conj() if t.is_complex() else t).unsqueeze(-1).unsqueeze(-1)
                block = a[..., j:, j + 1:]
                block.sub_((tj * vj) @ (vj.mH @ block))
    return a, tau


def _apply_reflectors(V, tau, C, transpose):
    """Q C for Q = H_1 H_2 ... H_k (Q^H C with transpose), one rank-1 update per reflector."""
    k = tau.shape[-1]
    order = range(k) if transpose else range(k - 1, -1, -1)
    for i in order:
        v = V[..., :, i:i + 1]
        t = tau[..., i:i + 1].unsqueeze(-1)
        t = t.conj() if transpose and t.is_complex() else t
        C = C - (t * v) @ (v.mH @ C)
    return C


def householder_product(A, tau, *, out=None):
    """The first n columns of H_1 H_2 ... H_k, H_i = I - tau_i v_i v_i^H with v_i stored
    below the diagonal of A's column i (geqrf's output): LAPACK's orgqr."""
    name = "torch.linalg.householder_product"
    if A.dim() >= 2 and A.shape[-2] < A.shape[-1]:
        raise RuntimeError(f"{name}: input.shape[-2] must be greater than or equal to "
                           "input.shape[-1]")
    if A.dim() >= 2 and A.shape[-1] < tau.shape[-1]:
        raise RuntimeError(f"{name}: input.shape[-1] must be greater than or equal to "
                           "tau.shape[-1]")
    V = _reflectors(name, A, tau)
    m, n = A.shape[-2], A.shape[-1]
    identity = eye(m, n, dtype=A.dtype, device=A.device).expand(list(A.shape[:-2]) + [m, n])
    result = _apply_reflectors(V, tau, identity, False)
    return result if out is None else out.resize_(result.shape).copy_(result)


def _ormqr(A, tau, other, left=True, transpose=False):
    """op(Q) @ other (left) or other @ op(Q), Q = H_1 ... H_k of geqrf's output (A, tau),
    op = conjugate transpose when transpose: LAPACK's ormqr."""
    name = "torch.ormqr"
    V = _reflectors(name, A, tau)
    m = A.shape[-2]
    if left and other.shape[-2] != m:
        raise RuntimeError(f"{name}: other.shape[-2] must be equal to input.shape[-2]")
    if not left and other.shape[-1] != m:
        raise RuntimeError(f"{name}: other.shape[-1] must be equal to input.shape[-2]")
    if left:
        return _apply_reflectors(V, tau, other, transpose)
    # C Q = (Q^H C^H)^H
    return _apply_reflectors(V, tau, other.mH, not transpose).mH.resolve_conj()

# each public function goes to __torch_function__ first (Note [Torch function])
_overrides._route_functions(globals())
