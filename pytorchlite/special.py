"""torch.special: the special functions under their SciPy-style names.  Mirrors
torch/special/__init__.py; each is an operator of src/aten/ops.def (or, for logit, xlogy,
xlog1py, sinc and multigammaln, a composite of them)."""
import math

from ._out_arguments import write_cast as _write_cast
from . import _C
from . import overrides as _overrides
from ._native_signature import native, native_prefixed
from ._pointwise import _not_implemented

_native = native_prefixed("special_")   # PyTorch's argument checks (Note [Native signatures])
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
erfc = _f["erfc"]
i0 = _f["i0"]
i0e = _C._op("aten::special_i0e")
i1 = _C._op("aten::special_i1")
i1e = _C._op("aten::special_i1e")
gammainc = _f["igamma"]
gammaincc = _f["igammac"]
# native/special.c's operators (Note [erfcx and the normal distribution], Note [Bessel
# functions of real argument]); only zeta, entr, ndtr, log_ndtr, ndtri and erfcx are
# differentiable, as in PyTorch (the orthogonal polynomials, below, are not either)
_zeta = _C._op("aten::special_zeta")
entr = _C._op("aten::special_entr")
ndtr = _C._op("aten::special_ndtr")
log_ndtr = _C._op("aten::special_log_ndtr")
ndtri = _C._op("aten::special_ndtri")
erfcx = _C._op("aten::special_erfcx")
bessel_j0 = _C._op("aten::special_bessel_j0")
bessel_j1 = _C._op("aten::special_bessel_j1")
bessel_y0 = _C._op("aten::special_bessel_y0")
bessel_y1 = _C._op("aten::special_bessel_y1")
modified_bessel_i0 = _C._op("aten::special_modified_bessel_i0")
modified_bessel_i1 = _C._op("aten::special_modified_bessel_i1")
modified_bessel_k0 = _C._op("aten::special_modified_bessel_k0")
modified_bessel_k1 = _C._op("aten::special_modified_bessel_k1")
scaled_modified_bessel_k0 = _C._op("aten::special_scaled_modified_bessel_k0")
scaled_modified_bessel_k1 = _C._op("aten::special_scaled_modified_bessel_k1")
spherical_bessel_j0 = _C._op("aten::special_spherical_bessel_j0")
airy_ai = _C._op("aten::special_airy_ai")


def _tensor_or_number(op, a, b, out):
    """op(a, b), either of which may be a Python number (it takes the other's dtype)."""
    return op(a, b) if out is None else op(a, b, out=out)


@_native
def zeta(input, other, *, out=None):
    """The Hurwitz zeta function sum_{k >= 0} (other + k)^-input."""
    return _tensor_or_number(_zeta, input, other, out)


def _polynomial(name, doc):
    op = _C._op(f"aten::special_{name}")

    def polynomial(x, n, *, out=None):
        return _tensor_or_number(op, x, n, out)
    polynomial.__name__ = polynomial.__qualname__ = name
    polynomial.__doc__ = (f"{doc} of degree n (truncated toward zero; 0 for n < 0) at x "
                          "(Note [Orthogonal polynomials] in src/aten/polynomial_math.h).")
    return _native(polynomial)


chebyshev_polynomial_t = _polynomial("chebyshev_polynomial_t", "The Chebyshev polynomial T")
chebyshev_polynomial_u = _polynomial("chebyshev_polynomial_u", "The Chebyshev polynomial U")
chebyshev_polynomial_v = _polynomial("chebyshev_polynomial_v", "The Chebyshev polynomial V")
chebyshev_polynomial_w = _polynomial("chebyshev_polynomial_w", "The Chebyshev polynomial W")
shifted_chebyshev_polynomial_t = _polynomial("shifted_chebyshev_polynomial_t",
                                             "T(2x - 1), the shifted Chebyshev polynomial")
shifted_chebyshev_polynomial_u = _polynomial("shifted_chebyshev_polynomial_u",
                                             "U(2x - 1), the shifted Chebyshev polynomial")
shifted_chebyshev_polynomial_v = _polynomial("shifted_chebyshev_polynomial_v",
                                             "V(2x - 1), the shifted Chebyshev polynomial")
shifted_chebyshev_polynomial_w = _polynomial("shifted_chebyshev_polynomial_w",
                                             "W(2x - 1), the shifted Chebyshev polynomial")
hermite_polynomial_h = _polynomial("hermite_polynomial_h", "The (physicists') Hermite polynomial H")
hermite_polynomial_he = _polynomial("hermite_polynomial_he",
                                    "The (probabilists') Hermite polynomial He")
laguerre_polynomial_l = _polynomial("laguerre_polynomial_l", "The Laguerre polynomial L")
legendre_polynomial_p = _polynomial("legendre_polynomial_p", "The Legendre polynomial P")


@_native
def multigammaln(input, p, *, out=None):
    """The multivariate log-gamma function (torch.mvlgamma)."""
    from ._pointwise import mvlgamma
    return mvlgamma(input, p, out=out)


def logit(input, eps=None, *, out=None):
    """log(p / (1 - p)), PyTorch's formula (three passes: a quarter faster than log(p) -
    log1p(-p)'s four; with eps, in place on the clamped copy unless autograd records), p
    being input, or with eps >= 0 given eps where input < eps, else 1 - eps where
    input > 1 - eps (NaN kept): the order of PyTorch's test, which a clamp matches for
    eps <= 1/2.  A negative eps clamps nothing.  Complex inputs are refused, as PyTorch's
    kernel refuses them."""
    if input.is_complex():
        raise _not_implemented("logit_cpu", input.dtype)
    if not input.is_floating_point():   # bool has no negation
        input = input.to(_C.get_default_dtype())
    p = input
    if eps is not None and eps >= 0:
        lo, hi = eps, 1.0 - eps
        p = input.clamp(lo, hi) if lo <= hi else \
            _C._functions["where"](input < lo, lo, input.clamp(max=hi))
        if not p.requires_grad:   # p is new and ours: the last two passes run in place on it
            result = p.div_(1 - p).log_()
            return _write_cast(result, out)
    result = (p / (1 - p)).log()
    return _write_cast(result, out)


def _x_log(name, log, input, other, out):
    """input * log(other) (log: log or log1p), with 0 where input == 0 unless other is NaN;
    either argument may be a Python number (not both: the schemas refuse that call)."""
    dtype = _C.result_type(input, other)
    if dtype.is_complex:   # PyTorch's kernels have no complex loop
        raise _not_implemented(f"{name}_cpu", dtype)
    if not isinstance(other, _C.TensorBase):
        # a number other is a Python scalar in the promotion: input's float dtype wins
        dtype = input.dtype if input.is_floating_point() else _C.get_default_dtype()
        other = _C.tensor(float(other), dtype=dtype, device=input.device)
    is_zero = input == 0
    if not isinstance(is_zero, _C.TensorBase):   # input is a number
        is_zero = _C.tensor(is_zero, device=other.device)
    # log(other) is replaced by 0 where input == 0 (and other is not NaN) before the product,
    # so that the gradient there is 0 rather than 0 * log(0) = NaN
    zero = other.isnan().logical_not().logical_and(is_zero)
    result = input * _C._functions["where"](zero, 0.0, log(other))
    return _write_cast(result, out)


def xlogy(input, other, *, out=None):
    """input * log(other), 0 where input == 0 unless other is NaN."""
    return _x_log("xlogy", lambda t: t.log(), input, other, out)


@_native
def xlog1py(input, other, *, out=None):
    """input * log1p(other), 0 where input == 0 unless other is NaN."""
    return _x_log("xlog1py", lambda t: t.log1p(), input, other, out)


def sinc(input, *, out=None):
    """sin(pi x) / (pi x), and 1 at x == 0 (whose gradient is 0, not the 0/0 of the
    quotient: the quotient sees 1 there).  float32 on the CPU computes in float64 and rounds
    once where float64 sin runs in vector lanes (AVX2, AVX-512), for accuracy: PyTorch's
    loop computes in float, where the rounding of pi x costs 8 ulp at the median on |x| < 25
    and up to 1e7 ulp next to the integers (the detour: 0.5 ulp), and the detour is 2.8x the
    float formula's time (float32 sin in float lanes) yet 1.8x faster than PyTorch's loop on
    1e6 values.  Without vector lanes it would be 2.1x slower than the float formula (libm's
    sin per element), which runs there, as in PyTorch."""
    if (input.dtype == _C.float32 and input.device.type == "cpu"
            and _C._config()["cpu_capability"] != "DEFAULT"):
        result = sinc(input.double()).float()
        return _write_cast(result, out)
    zero = input == 0
    px = (input * math.pi).masked_fill(zero, 1.0)
    result = (px.sin() / px).masked_fill(zero, 1.0)
    return _write_cast(result, out)


# torch.logit, torch.xlogy, torch.sinc and their methods are these functions checked against
# the schemas of aten::logit, aten::xlogy and aten::sinc (package __init__, _install),
# torch.special's against those of aten::special_logit, ...
_TWINS = (logit, xlogy, sinc)
logit, xlogy, sinc = (_native(f) for f in _TWINS)


def _install(tensor_class):
    from ._functions import _in_place
    for fn in _TWINS:
        method = native(fn, method=True)
        setattr(tensor_class, fn.__name__, method)
        setattr(tensor_class, fn.__name__ + "_", _in_place(method))

# each public function goes to __torch_function__ first (Note [Torch function])
_overrides._route_functions(globals())
