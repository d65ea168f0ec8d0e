"""The functions whose Python signature differs from their schema: einsum (operands as
varargs or one list), tensordot (dims as an int or two lists) and cdist (compute_mode as a
string).  Mirrors torch/functional.py; the kernels are aten::einsum, aten::tensordot and
aten::cdist (src/aten/native/einsum.c, linalg_norm.c).  Below them, the linear-algebra
composites inner, addr, dist, logdet, pinverse and vander, written with mm, outer,
tensordot, vector_norm, slogdet, pinv and cumprod as PyTorch's CompositeImplicitAutograd kernels
are."""
import numbers
import warnings

from ._out_arguments import write_cast as _write_cast
from . import _C
from . import overrides as _overrides
from ._functions import _write_out
from ._native_signature import _OUT_DTYPE_MESSAGES, native
from ._arg_check import check_arg

_einsum = _C._op("aten::einsum")
_tensordot = _C._op("aten::tensordot")
_cdist = _C._op("aten::cdist")

_COMPUTE_MODES = {
    "use_mm_for_euclid_dist_if_necessary": 0,
    "use_mm_for_euclid_dist": 1,
    "donot_use_mm_for_euclid_dist": 2,
}


def _sublist_letters(sublist):
    """The equation letters of one subscript list: 0-25 are A-Z, 26-51 are a-z and Ellipsis
    is '...'; the comparisons raise PyTorch's TypeError for a subscript that is no number."""
    letters = []
    for n in sublist:
        if n is Ellipsis:
            letters.append("...")
        elif n >= 0 and n < 52:
            letters.append(chr(ord("A") + n) if n < 26 else chr(ord("a") + n - 26))
        else:
            raise ValueError(
                "einsum(): subscript in subscript list is not within the valid range [0, 52)")
    return "".join(letters)


def einsum(*args):
    """Sums the product of the operands over the subscripts the equation contracts:
    einsum('ij,jk->ik', a, b), einsum('ij,jk->ik', [a, b]), or the sublist form
    einsum(a, [0, 1], b, [1, 2], [0, 2]) (each operand followed by its subscripts as ints in
    [0, 52) or Ellipsis, then optionally the output's)."""
    if len(args) < 2:
        raise ValueError("einsum(): must specify the equation string and at least one operand, "
                         "or at least one operand and its subscripts list")
    if isinstance(args[0], _C.TensorBase):
        equation = ",".join(_sublist_letters(sub) for sub in args[1::2])
        if len(args) % 2 == 1:
            equation += "->" + _sublist_letters(args[-1])
        operands = args[0:len(args) - 1:2] if len(args) % 2 == 1 else args[0::2]
    else:
        equation, operands = args[0], args[1:]
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
    return _write_out(_tensordot(a, b, dims_a, dims_b), out,
                      "tensordot: Expected the output tensor to have dtype {result}, but got an "
                      "output tensor with dtype {out}")


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """The p-norm distance between each pair of rows of x1 [*, P, M] and x2 [*, R, M]."""
    # PyTorch's Python cdist passes x1, x2 and p by position to the native one, whose parser
    # names them
    for k, (name, kind, v) in enumerate((("x1", "Tensor", x1), ("x2", "Tensor", x2),
                                         ("p", "float", p))):
        check_arg("cdist", name, kind, v, k + 1)
    if compute_mode not in _COMPUTE_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    return _cdist(x1, x2, p, _COMPUTE_MODES[compute_mode])


# ---- linear-algebra composites (CompositeImplicitAutograd in PyTorch) ----

@native
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
    return _write_out(result, out)


def _outer_checks(vec1, vec2):
    for name, v in (("vec1", vec1), ("vec2", vec2)):
        if v.dim() != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {v.dim()}-D")


# the C type PyTorch converts a Scalar to for a dtype, as its conversion error names it
_SCALAR_C_TYPE = {_C.float64: "double", _C.int64: "int64_t", _C.int32: "int",
                  _C.int16: "int16_t", _C.int8: "int8_t", _C.uint8: "uint8_t"}


def _check_scalars(product, beta, alpha):
    """PyTorch's error for a complex beta or alpha with a nonzero imaginary part when the
    product is real."""
    if product.is_complex():
        return
    for v in (beta, alpha):
        if isinstance(v, complex) and v.imag != 0:
            raise RuntimeError("value cannot be converted to type "
                               f"{_SCALAR_C_TYPE.get(product.dtype, 'float')} without overflow")


def _real_scalar(v, product):
    """A complex v with no imaginary part as the real number a real product takes."""
    if not isinstance(v, complex) or product.is_complex():
        return v
    return v.real if product.is_floating_point() else int(v.real)


def _integral_scalar_check(product, beta, alpha, kinds):
    """PyTorch's error for a beta or alpha of one of `kinds` when the product is integral."""
    if not (product.is_floating_point() or product.is_complex()):
        for name, v in (("beta", beta), ("alpha", alpha)):
            if isinstance(v, kinds):
                raise RuntimeError(f"For integral input tensors, argument {name} must not be a "
                                   "floating point number.")


def _scaled_sum(input, product, beta, alpha):
    """beta * input + alpha * product, where beta == 0 ignores input (NaNs included), as
    PyTorch's addmm family does."""
    _integral_scalar_check(product, beta, alpha, (float,))
    _check_scalars(product, beta, alpha)
    beta, alpha = _real_scalar(beta, product), _real_scalar(alpha, product)
    product = product if alpha == 1 else product * alpha
    if beta == 0:
        return product
    return product + (input if beta == 1 else input * beta)


@native
def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * outer(vec1, vec2)."""
    _outer_checks(vec1, vec2)
    product = vec1.outer(vec2)
    _integral_scalar_check(product, beta, alpha, (float, complex))   # addr's, a complex too
    result = _scaled_sum(input, product, beta, alpha)
    return _write_cast(result, out)


@native
def dist(input, other, p=2):
    """The p-norm of input - other (broadcast), over all elements."""
    return _dist(input, other, p)


def _dist(input, other, p=2):
    from .linalg import vector_norm
    diff = input - other
    if not (diff.is_floating_point() or diff.is_complex()):
        from ._tensor_types import _NAME
        raise RuntimeError("norm(): input dtype should be either floating point or complex. "
                           f"Got {_NAME[diff.dtype]} instead.")
    return vector_norm(diff, p)


@native
def logdet(input):
    """log(det(input)): NaN for a negative determinant, -inf for a zero one (slogdet's
    logabsdet where its sign is not negative); complex: log(sign) + logabsdet."""
    from .linalg import slogdet
    sign, logabsdet = slogdet(input)
    if sign.is_complex():
        return sign.log() + logabsdet
    return _C._functions["where"](sign < 0, float("nan"), logabsdet)


@native
def pinverse(input, rcond=1e-15):
    """linalg.pinv with rcond as its relative tolerance (and no absolute one)."""
    from .linalg import pinv
    return pinv(input, atol=0.0, rtol=rcond)


@native
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


# ---- the deprecated linear-algebra functions, over torch.linalg (with PyTorch's warnings) ----

def _deprecated(message):
    warnings.warn(message, UserWarning, stacklevel=3)


@native
def cholesky(input, upper=False, *, out=None):
    """L with input = L L^H (upper=True: U with input = U^H U)."""
    from . import linalg
    _deprecated("torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be "
                "removed in a future PyTorch release.\nL = torch.cholesky(A)\nshould be "
                "replaced with\nL = torch.linalg.cholesky(A)\nand\nU = torch.cholesky(A, "
                "upper=True)\nshould be replaced with\nU = torch.linalg.cholesky(A).mH\nThis "
                "transform will produce equivalent results for all valid (symmetric positive "
                "definite) inputs.")
    result = linalg.cholesky(input, upper=upper)
    return result if out is None else out.resize_(result.shape).copy_(result)


@native
def cholesky_solve(B, L, upper=False, *, out=None):
    """X with A X = B for A = L L^H (upper=True: A = U^H U with U = L)."""
    from .linalg import solve_triangular
    if upper:
        Y = solve_triangular(L.mH, B, upper=False)
        result = solve_triangular(L, Y, upper=True)
    else:
        Y = solve_triangular(L, B, upper=False)
        result = solve_triangular(L.mH, Y, upper=True)
    return result if out is None else out.resize_(result.shape).copy_(result)


@native
def cholesky_inverse(L, upper=False, *, out=None):
    """The inverse of A = L L^H (upper=True: A = U^H U) from its Cholesky factor."""
    from ._functions import eye
    if L.dim() < 2:
        raise RuntimeError("cholesky_inverse: The input tensor A must have at least 2 "
                           "dimensions.")
    n = L.shape[-1]
    identity = eye(n, dtype=L.dtype, device=L.device).expand(L.shape)
    return cholesky_solve(identity, L, upper, out=out)


@native
def qr(input, some=True, *, out=None):
    """(Q, R): linalg.qr with mode 'reduced' (some=True) or 'complete'."""
    from . import linalg
    from .return_types import qr as qr_result
    _deprecated("torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a "
                "future PyTorch release.\nThe boolean parameter 'some' has been replaced with "
                "a string parameter 'mode'.\nQ, R = torch.qr(A, some)\nshould be replaced "
                "with\nQ, R = torch.linalg.qr(A, 'reduced' if some else 'complete')")
    return _write_out(qr_result(linalg.qr(input, "reduced" if some else "complete")), out)


@native
def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """(X, A.clone()) with A X = b (transpose: A^T X = b), A triangular."""
    from .linalg import solve_triangular
    from .return_types import triangular_solve as result_type
    _deprecated("torch.triangular_solve is deprecated in favor of "
                "torch.linalg.solve_triangularand will be removed in a future PyTorch release."
                "\ntorch.linalg.solve_triangular has its arguments reversed and does not return "
                "a copy of one of the inputs.\nX = torch.triangular_solve(B, A).solution\n"
                "should be replaced with\nX = torch.linalg.solve_triangular(A, B).")
    coefficient = A.mT if transpose else A
    solution = solve_triangular(coefficient, b, upper=upper != transpose,
                                unitriangular=unitriangular)
    return _write_out(result_type((solution, A.clone())), out)


def lu(A, pivot=True, get_infos=False, out=None):
    """(LU, pivots) of lu_factor (with get_infos, also the LAPACK info per matrix)."""
    from . import linalg
    _deprecated("torch.lu is deprecated in favor of torch.linalg.lu_factor / "
                "torch.linalg.lu_factor_ex and will be removed in a future PyTorch release.\n"
                "LU, pivots = torch.lu(A, compute_pivots)\nshould be replaced with\nLU, pivots "
                "= torch.linalg.lu_factor(A, compute_pivots)\nand\nLU, pivots, info = "
                "torch.lu(A, compute_pivots, get_infos=True)\nshould be replaced with\nLU, "
                "pivots, info = torch.linalg.lu_factor_ex(A, compute_pivots)")
    LU, pivots, info = linalg.lu_factor_ex(A, pivot=pivot)
    return _write_out((LU, pivots, info) if get_infos else (LU, pivots), out)


@native
def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    """(P, L, U) with A = P @ L @ U from lu_factor's packed LU and pivots."""
    from .linalg import _lu_unpack
    from .return_types import lu_unpack as result_type
    return _write_out(result_type(_lu_unpack(LU_data, LU_pivots, unpack_data, unpack_pivots)),
                      out)


@native
def lu_solve(b, LU_data, LU_pivots, *, out=None):
    """X with A X = b from lu_factor(A) (linalg.lu_solve with the arguments reversed)."""
    from . import linalg
    _deprecated("torch.lu_solve is deprecated in favor of torch.linalg.lu_solveand will be "
                "removed in a future PyTorch release.\nNote that torch.linalg.lu_solve has its "
                "arguments reversed.\nX = torch.lu_solve(B, LU, pivots)\nshould be replaced "
                "with\nX = torch.linalg.lu_solve(LU, pivots, B)")
    return linalg.lu_solve(LU_data, LU_pivots, b, out=out)


@native
def orgqr(input, tau, *, out=None):
    """linalg.householder_product: Q from geqrf's (input, tau)."""
    from . import linalg
    return linalg.householder_product(input, tau, out=out)


@native
def ormqr(input, tau, other, left=True, transpose=False, *, out=None):
    """op(Q) @ other (left) or other @ op(Q) for Q of geqrf's (input, tau), op the conjugate
    transpose when transpose."""
    from .linalg import _ormqr
    result = _ormqr(input, tau, other, left, transpose)
    return result if out is None else out.resize_(result.shape).copy_(result)


@native
def geqrf(input, *, out=None):
    """(a, tau) of LAPACK's geqrf, the compact QR that orgqr / ormqr take (linalg._geqrf)."""
    from .linalg import _geqrf
    from .return_types import geqrf as result_type
    a, tau = _geqrf(input)
    if out is not None:
        out[0].resize_(a.shape).copy_(a)
        out[1].resize_(tau.shape).copy_(tau)
        a, tau = out
    return result_type((a, tau))


def chain_matmul(*matrices, out=None):
    """matrices[0] @ matrices[1] @ ... for 2-D matrices (linalg.multi_dot of varargs)."""
    from . import linalg
    _deprecated("torch.chain_matmul is deprecated and will be removed in a future PyTorch "
                "release. Use torch.linalg.multi_dot instead, which accepts a list of two or "
                "more tensors rather than multiple parameters.")
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for m in matrices:
        if m.dim() != 2:
            raise RuntimeError(f"Tensor dimension is {m.dim()}, expected 2 instead.")
    if len(matrices) == 1:
        result = matrices[0].clone()
        return result if out is None else out.resize_(result.shape).copy_(result)
    return linalg.multi_dot(matrices, out=out)


_norm_op = _C._functions["norm"]


def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """torch.norm: the 2-norm ('fro', None) or p-norm (a number) of input's elements over dim
    (every dim when None), as linalg.vector_norm; 'nuc', and 'fro' over more than two dims
    (PyTorch's error), as linalg.matrix_norm over dim.  Without a dtype or out, a vector norm
    is the operator aten::norm (NormBackward0/1)."""
    from . import linalg
    # PyTorch's torch.norm calls linalg.vector_norm, whose parser names a bad dim or p
    if not (dim is None or isinstance(dim, numbers.Integral) or
            (isinstance(dim, (list, tuple)) and all(isinstance(d, numbers.Integral)
                                                    for d in dim))):
        raise TypeError("linalg_vector_norm(): argument 'dim' (position 3) must be tuple of "
                        f"ints, not {type(dim).__name__}")
    dims = [dim] if isinstance(dim, int) else None if dim is None else list(dim)
    vector = not isinstance(p, str) or (p == "fro" and (dims is None or len(dims) <= 2))
    order = 2 if p is None or isinstance(p, str) else p
    if vector:
        check_arg("linalg_vector_norm", "ord", "Number", order, 2)
    if vector and dtype is None and out is None:
        return _norm_op(input, order) if dims is None else _norm_op(input, order, dims, keepdim)
    if vector:
        result = linalg.vector_norm(input, order, dims, keepdim, dtype=dtype)
    else:
        result = linalg.matrix_norm(input, p, list(range(input.dim())) if dims is None else dims,
                                    keepdim, dtype=dtype)
        return _write_out(result, out, _OUT_DTYPE_MESSAGES["linalg_matrix_norm"])
    return _write_out(result, out)


@native
def nuclear_norm(input, dim=(-2, -1), keepdim=False, *, out=None):
    """The sum of the singular values of the matrices over dim (linalg.matrix_norm 'nuc');
    nuclear_norm(input, True) keeps the dims."""
    from . import linalg
    _deprecated("at::nuclear_norm is deprecated and it is just left for JIT compatibility. It "
                "will be removed in a future PyTorch release. Please use "
                "`linalg.matrix_norm(A, 'nuc', dim, keepdim)` instead")
    if isinstance(dim, bool):
        dim, keepdim = (-2, -1), dim
    result = linalg.matrix_norm(input, "nuc", dim, keepdim)
    return _write_out(result, out, _OUT_DTYPE_MESSAGES["linalg_matrix_norm"])


@native
def frobenius_norm(input, dim, keepdim=False, *, out=None):
    """The 2-norm of input's elements over dim (linalg.vector_norm(input, 2, dim))."""
    from . import linalg
    _deprecated("at::frobenius_norm is deprecated and it is just left for JIT compatibility. "
                "It will be removed in a future PyTorch release. Please use "
                "`linalg.vector_norm(A, 2., dim, keepdim)` instead")
    result = linalg.vector_norm(input, 2, dim, keepdim)
    return _write_out(result, out)


def _install(tensor_class):
    from ._functions import _in_place
    from .linalg import _TWINS
    for fn in (inner, addr, logdet, norm, pinverse, cholesky, cholesky_solve,
               cholesky_inverse, qr, triangular_solve, lu_solve, orgqr, ormqr, geqrf):
        setattr(tensor_class, fn.__name__, fn)
    for fn in _TWINS:
        setattr(tensor_class, fn.__name__, native(fn, method=True))
    tensor_class.dist = native(_dist, "dist", method=True)

    def _lu(self, pivot=True, get_infos=False):
        return lu(self, pivot, get_infos)
    tensor_class.lu = _lu
    tensor_class.addr_ = _in_place(addr)

# each public function goes to __torch_function__ first (Note [Torch function])
_overrides._route_functions(globals())
