"""Pointwise functions that PyTorch has as kernels but that are exact or as accurate as a
composite of the dispatcher ops (so autograd differentiates them through those ops):
deg2rad, rad2deg, sgn, mvlgamma, signbit, isposinf, isneginf, isreal, logaddexp, logaddexp2,
float_power, ldexp, copysign, heaviside, positive; and frexp's binding of its out= pair.
Mirrors their rows of aten/src/ATen/native/native_functions.yaml; the formulas are those of
ATen/native/cpu/BinaryOpsKernel.cpp and UnaryOps.cpp."""
import math

from ._out_arguments import write_cast as _write_cast
from ._out_arguments import write_same_dtype as _write_same_dtype
from . import _C
from . import overrides as _overrides
from ._native_signature import native
from ._functions import _in_place

_f = _C._functions

# signbit reads the sign bit through a view as the signed integer of the same width, which
# sees -0.0 and negative NaNs as the float compare cannot.
_SAME_WIDTH_INT = {_C.float16: _C.int16, _C.bfloat16: _C.int16, _C.float32: _C.int32,
                   _C.float64: _C.int64}


def _real_only(name, input):
    if input.is_complex():
        raise RuntimeError(f"{name} is not supported for complex tensors.")


@native
def deg2rad(input, *, out=None):
    """input * pi / 180, in the default float dtype for integer and bool inputs."""
    _real_only("deg2rad", input)
    result = input * (math.pi / 180.0)
    return _write_cast(result, out)


@native
def rad2deg(input, *, out=None):
    """input * 180 / pi, in the default float dtype for integer and bool inputs."""
    _real_only("rad2deg", input)
    result = input * (180.0 / math.pi)
    return _write_cast(result, out)


@native
def sgn(input, *, out=None):
    """sign(input) for real dtypes, input / |input| (0 at 0) for complex ones."""
    if input.is_complex():
        magnitude = input.abs()   # at 0 the quotient is 0 / 1
        result = input / magnitude.masked_fill(magnitude == 0, 1.0)
    else:
        result = input.sign()
    return _write_same_dtype(result, out, "Found dtype {out} but expected {result}")


_sgn_in_place = _in_place(sgn)


def _sgn_(self):
    """In-place sgn: sign_ for real dtypes, self / |self| (0 at 0) for complex ones."""
    return _sgn_in_place(self) if self.is_complex() else self.sign_()


@native
def mvlgamma(input, p, *, out=None):
    """The multivariate log-gamma function of dimension p: sum_j lgamma(input - j/2) over
    j < p, plus p (p - 1) / 4 log(pi); integer inputs compute in the default float dtype.
    A composite of lgamma, as ATen's mvlgamma is, so autograd differentiates it."""
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    if not (input.is_floating_point() or input.is_complex()):
        input = input.to(_C.get_default_dtype())
    shifts = _f["arange"](p, dtype=input.dtype, device=input.device) * -0.5
    result = (input.unsqueeze(-1) + shifts).lgamma().sum(-1) + p * (p - 1) / 4 * math.log(math.pi)
    return _write_cast(result, out)


@native
def frexp(input, *, out=None):
    """(mantissa, exponent) with input = mantissa * 2^exponent, 0.5 <= |mantissa| < 1; out=
    is the pair of tensors to write them into (the operator's mantissa= and exponent=)."""
    if out is None:
        return _f["frexp"](input)
    if len(out) != 2:
        raise TypeError(f"expected tuple of 2 elements but got {len(out)}")
    return _f["frexp"](input, mantissa=out[0], exponent=out[1])


def _mvlgamma_(self, p):
    return self.copy_(mvlgamma(self.clone() if self.requires_grad else self, p))


@native
def signbit(input, *, out=None):
    """True where the sign bit of input is set (-0.0 and NaNs with the bit included); False
    everywhere for unsigned and bool dtypes."""
    if input.is_complex():
        raise NotImplementedError("signbit is not implemented for complex tensors.")
    if input.dtype in _SAME_WIDTH_INT:
        result = input.view(_SAME_WIDTH_INT[input.dtype]) < 0
    elif input.dtype in (_C.uint8, _C.bool):
        result = _f["zeros_like"](input, dtype=_C.bool)
    else:
        result = input < 0
    return _write_same_dtype(result, out, "signbit does not support non-boolean outputs.")


def _inf_test(name, input, inf):
    if input.is_complex():
        raise RuntimeError(f"{name} does not support complex inputs.")
    if input.is_floating_point():
        return input == inf
    return _f["zeros_like"](input, dtype=_C.bool)


@native
def isposinf(input, *, out=None):
    """True where input is +inf (never for integer and bool dtypes)."""
    result = _inf_test("isposinf", input, math.inf)
    return _write_same_dtype(result, out, "isposinf does not support non-boolean outputs.")


@native
def isneginf(input, *, out=None):
    """True where input is -inf (never for integer and bool dtypes)."""
    result = _inf_test("isneginf", input, -math.inf)
    return _write_same_dtype(result, out, "isneginf does not support non-boolean outputs.")


@native
def isreal(input):
    """True where the imaginary part is 0: everywhere for real dtypes."""
    if input.is_complex():
        return input.imag == 0
    return _f["ones_like"](input, dtype=_C.bool)


def _not_implemented(kernel, dtype):
    """PyTorch's NotImplementedError of a kernel without a loop for dtype (its ScalarType
    name: 'ComplexFloat')."""
    from .linalg import _legacy
    return NotImplementedError(f'"{kernel}" not implemented for \'{_legacy(dtype)}\'')


def _logaddexp_complex(input, other, dtype):
    """logaddexp of complex values, PyTorch's choices: hi + log1p(exp(lo - hi)) with hi the
    operand of the larger real part (other on a tie); where both real parts are the same
    infinity, lo at -inf and log(exp(lo) + exp(hi)) at +inf; NaN + NaN j where either has a
    NaN part.  The branches not taken see finite stand-ins, so that no NaN reaches the
    gradient through them (as Note [logaddexp of equal infinities] does for real ones)."""
    a, b = (t.to(dtype) if isinstance(t, _C.TensorBase) else _C.tensor(t, dtype=dtype)
            for t in (input, other))
    swap = a.real < b.real
    hi, lo = _f["where"](swap, b, a), _f["where"](swap, a, b)
    both_inf = lo.real.isinf().logical_and(lo.real == hi.real)
    result = hi + (lo - hi).masked_fill(both_inf, 0).exp().log1p()
    finite = both_inf.logical_not()
    lo_inf, hi_inf = lo.masked_fill(finite, 0), hi.masked_fill(finite, 0)
    # the parts add as real numbers: complex add's alpha product would turn inf + 0j into
    # inf + nan j (Note [Complex Scalars] in ivalue.h)
    parts = _f["view_as_real"](lo_inf.exp()) + _f["view_as_real"](hi_inf.exp())
    at_inf = _f["where"](lo_inf.real < 0, lo_inf, _f["view_as_complex"](parts).log())
    result = _f["where"](both_inf, at_inf, result)
    return result.masked_fill(a.isnan().logical_or(b.isnan()), complex(math.nan, math.nan))


def _logaddexp(name, input, other, log1p_exp_neg):
    dtype = _C.result_type(input, other)
    if dtype.is_complex and name == "logaddexp":
        return _logaddexp_complex(input, other, dtype)
    if not dtype.is_floating_point:
        raise _not_implemented(f"{name}_cpu", dtype)
    # Note [logaddexp of equal infinities]: max + log1p(exp(-|a - b|)) is stable for every
    # finite pair, but two infinities of the same sign give inf - inf = NaN in |a - b|; PyTorch
    # returns that infinity.  The masked-off branch sees a 0 difference so that its NaN does
    # not leak into the gradient either.
    same_inf = input.isinf().logical_and(input == other)
    diff = (input - other).masked_fill(same_inf, 0).abs()
    return _f["maximum"](input, other) + log1p_exp_neg(diff)


@native
def logaddexp(input, other, *, out=None):
    """log(exp(input) + exp(other)) computed as max + log1p(exp(-|input - other|)) (complex
    operands: _logaddexp_complex); logaddexp2 refuses complex ones, as PyTorch's does."""
    result = _logaddexp("logaddexp", input, other, lambda d: d.neg().exp().log1p())
    return _write_cast(result, out)


@native
def logaddexp2(input, other, *, out=None):
    """log2(2**input + 2**other) computed as max + log1p(2**-|input - other|) / log(2)."""
    result = _logaddexp("logaddexp2", input, other,
                        lambda d: d.neg().exp2().log1p() * (1.0 / math.log(2.0)))
    return _write_cast(result, out)


@native
def ldexp(input, other, *, out=None):
    """input * 2 ** other (in the default float dtype for integer inputs)."""
    result = input * _f["pow"](2.0, other)
    return _write_cast(result, out)


@native
def copysign(input, other, *, out=None):
    """|input| with the sign bit of other (of -0.0 and NaNs too), in the promoted float
    dtype (the default float one for integer operands)."""
    dtype = _C.result_type(input, other)
    if dtype.is_complex:   # PyTorch's kernel has no complex loop
        raise _not_implemented("copysign_cpu", dtype)
    if not dtype.is_floating_point:
        dtype = _C.get_default_dtype()
    magnitude = input.to(dtype).abs()
    if isinstance(other, _C.TensorBase):
        result = _f["where"](signbit(other), magnitude.neg(), magnitude)
    else:
        result = magnitude.neg() if math.copysign(1.0, other) < 0 else magnitude
    return _write_cast(result, out)


@native
def heaviside(input, values, *, out=None):
    """The step function: 0 where input < 0 (or NaN), 1 where input > 0, values where
    input == 0; input and values must have one dtype."""
    if input.is_complex() or values.is_complex():
        raise RuntimeError("heaviside is not yet implemented for complex tensors.")
    if input.dtype != values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different "
                           "dtypes.")
    result = _f["where"](input == 0, values, (input > 0).to(input.dtype))
    return _write_same_dtype(result, out, "heaviside is not yet implemented for tensors with "
                                          "different dtypes.")


@native
def positive(input):
    """input itself (unary +), which bool tensors do not have."""
    if input.dtype == _C.bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def _float_power_dtype(input, exponent):
    complex_ = any(isinstance(v, complex) or (isinstance(v, _C.TensorBase) and v.is_complex())
                   for v in (input, exponent))
    return _C.complex128 if complex_ else _C.float64


@native
def float_power(input, exponent, *, out=None):
    """input ** exponent computed in float64 (complex128 when either is complex), as
    PyTorch's float_power is; either argument may be a Python number (not both)."""
    dtype = _float_power_dtype(input, exponent)
    if isinstance(input, _C.TensorBase):
        input = input.to(dtype)
    if isinstance(exponent, _C.TensorBase):
        exponent = exponent.to(dtype)
    result = _f["pow"](input, exponent)
    return _write_same_dtype(result, out, "the output given to float_power has dtype {out} but "
                                          "the operation's result requires dtype {result}")


def _float_power_(self, exponent):
    dtype = _float_power_dtype(self, exponent)
    if self.dtype != dtype:
        from .linalg import _legacy
        raise RuntimeError(f"the base given to float_power_ has dtype {_legacy(self.dtype)} "
                           f"but the operation's result requires dtype {_legacy(dtype)}")
    if isinstance(exponent, _C.TensorBase):
        exponent = exponent.to(dtype)
    return self.pow_(exponent)


@native
def fill(input, value):
    """A new tensor shaped like input with every element value (a number or a 0-dim tensor,
    which then receives the gradient), in input's dtype."""
    if isinstance(value, _C.TensorBase):
        if value.dim() != 0:
            raise RuntimeError("fill_ only supports 0-dimension value tensor but got tensor "
                               f"with {value.dim()} dimensions.")
        return value.to(device=input.device, dtype=input.dtype).expand(input.shape).clone()
    return _f["full_like"](input, value)


def _install(tensor_class):
    for fn in (deg2rad, rad2deg, sgn, mvlgamma, signbit, isposinf, isneginf, isreal, logaddexp,
               logaddexp2, float_power, ldexp, positive, copysign, heaviside):
        setattr(tensor_class, fn.__name__, fn)
    for fn in (deg2rad, rad2deg, ldexp, copysign, heaviside):
        setattr(tensor_class, fn.__name__ + "_", _in_place(fn))
    tensor_class.sgn_ = _sgn_
    tensor_class.conj_physical_ = _in_place(_f["conj_physical"])
    tensor_class.float_power_ = _float_power_
    tensor_class.mvlgamma_ = _mvlgamma_

# each public function goes to __torch_function__ first (Note [Torch function])
_overrides._route_functions(globals())
