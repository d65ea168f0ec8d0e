"""The CUDA kernels (src/cuda/elementwise.cu, registered by src/cuda/register_cuda.c, and
src/cuda/reduce.cu, registered on the CUDA key by reduce.c and nn.c) against the CPU kernels:
every pointwise op (special_math.h's functions and the activations with their backward ops
among them) on random, strided, broadcast, 0-dim and size-0 inputs in each float dtype,
in-place and out= forms, copies both ways with casts, `.to`/`.cuda()`/`.cpu()` round trips and
the factories on the device; every reduction over random dims and keepdim in every dtype it
takes, softmax, log_softmax and their backward over every dim, (src/cuda/nn.cu) layer norm,
nll_loss / cross_entropy, embedding and batch norm with their backward, and the matrix products
(src/cuda/gemm.cu: mm, addmm, bmm, baddbmm, matmul, linear, mv, dot) in every float dtype
with each operand transposed or not, across the tiles' edges; the random fills
(src/cuda/random.cu) against the CPU generator for the same seed (the bytes, where no libm is
involved), native_dropout and F.dropout, the fused SGD and Adam steps (src/cuda/optim.cu)
bit for bit, and nn.RNN, LSTM and GRU (the recurrent layer's device loop, src/cuda/rnn.cu)
with their gradients. Each test skips, with the
reason the device is missing, on a machine without a GPU; tools/gpu_check.sh runs them on one,
with PTL_REQUIRE_GPU=1 turning a skip into a failure."""

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite import _C
from device_required import pytestmark, require_device  # noqa: F401



FLOATS = [ptl.float32, ptl.float64, ptl.float16, ptl.bfloat16]
ALL = [ptl.bool, ptl.uint8, ptl.int8, ptl.int16, ptl.int32, ptl.int64] + FLOATS
# the device's libm (exp, tanh, log) is not glibc's: a few ulps apart
TOL = {ptl.float32: 1e-5, ptl.float64: 1e-12, ptl.float16: 2e-3, ptl.bfloat16: 1.6e-2}


def as_np(t):
    return t.cpu().to(ptl.float64).numpy() if t.dtype in FLOATS else t.cpu().numpy()


def check(cuda_result, cpu_result):
    assert cuda_result.device.type == "cuda"
    assert cuda_result.shape == cpu_result.shape and cuda_result.dtype == cpu_result.dtype
    tol = TOL.get(cpu_result.dtype, 0)
    np.testing.assert_allclose(as_np(cuda_result), as_np(cpu_result), rtol=tol, atol=tol,
                               equal_nan=True)


def layouts(rng, dtype):
    """(name, CPU operands): contiguous, transposed, sliced, broadcast, 0-dim, size-0 and a
    CPU 0-dim scalar next to a device tensor (second operand stays on the CPU)."""
    def r(*shape):
        return ptl.tensor(rng.standard_normal(shape) * 2, dtype=ptl.float64).to(dtype)
    return [
        ("contiguous", r(37, 129), r(37, 129)),
        ("odd-length", r(1001), r(1001)),
        ("transposed", r(64, 33).t(), r(33, 64)),
        ("sliced", r(20, 40)[:, ::3], r(20, 14)),
        ("broadcast", r(17, 1), r(23)),
        ("0-dim", r(), r()),
        ("size-0", r(0, 5), r(5)),
        ("cpu-scalar", r(9, 8), r()),
    ]


def to_device(name, a, b):
    return a.cuda(), (b if name == "cpu-scalar" else b.cuda())


BINARY = {
    "add": lambda a, b: ptl.add(a, b, alpha=2),
    "sub": lambda a, b: ptl.sub(a, b, alpha=0.5),
    "mul": ptl.mul,
    "div": ptl.div,
    "gelu_backward": lambda g, x: _C._op("aten::gelu_backward")(g, x),
    "gelu_backward_tanh": lambda g, x: _C._op("aten::gelu_backward")(g, x, approximate="tanh"),
    "threshold_backward": lambda g, x: _C._op("aten::threshold_backward")(g, x, 0.25),
    "hypot": ptl.hypot,
    "igamma": lambda a, x: ptl.igamma(a.abs(), x.abs()),
    "igammac": lambda a, x: ptl.igammac(a.abs(), x.abs()),
    "igamma_density": lambda a, x: _C._op("aten::_ptl_igamma_density")(a.abs() * 8, x.abs() * 8),
    "silu_backward": lambda g, x: _C._op("aten::silu_backward")(g, x),
    "mish_backward": lambda g, x: _C._op("aten::mish_backward")(g, x),
    "elu_backward": lambda g, x: _C._op("aten::elu_backward")(g, 0.7, 1.2, 0.9, False, x),
    "elu_backward_result": lambda g, y: _C._op("aten::elu_backward")(g, 0.7, 1.2, 0.9, True,
                                                                       y),
    "softplus_backward": lambda g, x: _C._op("aten::softplus_backward")(g, x, 1.5, 3.0),
    # the buffer e^-|x| that the CPU kernel reads (the CUDA one ignores it)
    "log_sigmoid_backward": lambda g, x: _C._op("aten::log_sigmoid_backward")(
        g, x, ptl.exp(-x.abs())),
    "hardswish_backward": lambda g, x: _C._op("aten::hardswish_backward")(g, x),
    "hardsigmoid_backward": lambda g, x: _C._op("aten::hardsigmoid_backward")(g, x),
    "leaky_relu_backward": lambda g, x: _C._op("aten::leaky_relu_backward")(g, x, 0.3, False),
    "hardtanh_backward": lambda g, x: _C._op("aten::hardtanh_backward")(g, x, -0.7, 1.3),
    "softshrink_backward": lambda g, x: _C._op("aten::softshrink_backward")(g, x, 0.4),
    "hardshrink_backward": lambda g, x: _C._op("aten::hardshrink_backward")(g, x, 0.4),
    "rsub": lambda a, b: ptl.rsub(a, b, alpha=1.5),
    # register_cuda_math.c's binary ops (elementwise.cu's math family)
    "atan2": ptl.atan2, "maximum": ptl.maximum, "minimum": ptl.minimum, "fmax": ptl.fmax,
    "fmin": ptl.fmin, "max_other": ptl.max, "min_other": ptl.min,
    "pow_tensor": lambda a, b: ptl.pow(a.abs(), b),
    "div_trunc": lambda a, b: ptl.div(a, b, rounding_mode="trunc"),
    "div_floor": lambda a, b: ptl.div(a, b, rounding_mode="floor"),
    "div_none": lambda a, b: ptl.div(a, b, rounding_mode=None),
    "floor_divide": ptl.floor_divide, "remainder": ptl.remainder, "fmod": ptl.fmod,
    "lerp_scalar": lambda a, b: ptl.lerp(a, b, 0.3),
}
UNARY = {
    "neg": ptl.neg, "relu": ptl.relu, "sigmoid": ptl.sigmoid, "tanh": ptl.tanh,
    "exp": ptl.exp, "log": lambda x: ptl.log(x.abs() if x.device.type == "cpu" else x),
    "gelu": ptl.nn.functional.gelu,
    "gelu_tanh": lambda x: ptl.nn.functional.gelu(x, approximate="tanh"),
    "acosh": lambda x: ptl.acosh(x.abs() + 1), "asinh": ptl.asinh,
    "atanh": lambda x: ptl.atanh(x / (x.abs() + 1)), "erfc": ptl.erfc, "i0": ptl.i0,
    "i0e": ptl.special.i0e, "i1": ptl.special.i1, "i1e": ptl.special.i1e,
    "i0_large": lambda x: ptl.i0(x * 20), "i1e_large": lambda x: ptl.special.i1e(x * 40),
    "silu": ptl.nn.functional.silu, "mish": ptl.nn.functional.mish,
    "elu": lambda x: ptl.nn.functional.elu(x, alpha=0.7),
    "selu": ptl.nn.functional.selu,
    "softplus": lambda x: ptl.nn.functional.softplus(x, beta=1.5, threshold=3.0),
    "log_sigmoid": ptl.nn.functional.logsigmoid,
    "hardswish": ptl.nn.functional.hardswish, "hardsigmoid": ptl.nn.functional.hardsigmoid,
    "leaky_relu": lambda x: ptl.nn.functional.leaky_relu(x, 0.3),
    "hardtanh": lambda x: ptl.nn.functional.hardtanh(x, -0.7, 1.3),
    "relu6": ptl.nn.functional.relu6, "celu": lambda x: ptl.nn.functional.celu(x, 0.6),
    "softshrink": lambda x: ptl.nn.functional.softshrink(x, 0.4),
    "hardshrink": lambda x: ptl.nn.functional.hardshrink(x, 0.4),
    "abs": ptl.abs, "sign": ptl.sign, "sqrt": lambda x: ptl.sqrt(x.abs()),
    "sqrt_negative": ptl.sqrt, "reciprocal": ptl.reciprocal,
    "clamp": lambda x: ptl.clamp(x, -0.7, 1.3), "clamp_min": lambda x: ptl.clamp_min(x, 0.2),
    "clamp_max": lambda x: ptl.clamp_max(x, -0.1), "clamp_crossed": lambda x: x.clamp(1, -1),
    "clamp_nan_bound": lambda x: x.clamp(min=float("nan")), "clip": lambda x: x.clip(max=0.5),
    "pow_2": lambda x: x ** 2, "pow_3": lambda x: x ** 3, "pow_half": lambda x: x.abs() ** 0.5,
    "pow_minus_half": lambda x: ptl.pow(x, -0.5), "pow_minus_1": lambda x: x ** -1,
    "pow_minus_2": lambda x: x ** -2, "pow_other": lambda x: x.abs() ** 1.37,
    "pow_int": lambda x: ptl.pow(x, 4),
    # register_cuda_math.c's unary ops; lgamma away from its negative zeros, where glibc's
    # and the device's lgammaf differ by more than their ulps
    "exp2": ptl.exp2, "expm1": ptl.expm1, "log2": lambda x: ptl.log2(x.abs()),
    "log10": lambda x: ptl.log10(x.abs()), "log1p": lambda x: ptl.log1p(x.abs()),
    "rsqrt": lambda x: ptl.rsqrt(x.abs()), "sin": ptl.sin, "cos": ptl.cos, "tan": ptl.tan,
    "asin": lambda x: ptl.asin(x / (x.abs() + 1)), "acos": lambda x: ptl.acos(x / (x.abs() + 1)),
    "atan": ptl.atan, "sinh": ptl.sinh, "cosh": ptl.cosh, "erf": ptl.erf,
    "erfinv": lambda x: ptl.erfinv(x / (x.abs() + 1)), "lgamma": lambda x: ptl.lgamma(x.abs()),
    "digamma": ptl.digamma, "polygamma_1": lambda x: ptl.polygamma(1, x),
    "polygamma_3": lambda x: ptl.polygamma(3, x.abs() + 0.5), "frac": ptl.frac,
    "floor": ptl.floor, "ceil": ptl.ceil, "trunc": ptl.trunc, "round": ptl.round,
    "round_decimals": lambda x: ptl.round(x, decimals=2),
    "round_negative_decimals": lambda x: ptl.round(x * 100, decimals=-1),
    "square": ptl.square, "nan_to_num": lambda x: ptl.nan_to_num(ptl.log(x)),
    "nan_to_num_given": lambda x: ptl.nan_to_num(ptl.log(x), 1.5, 2.5, -3.5),
    "threshold": lambda x: ptl.nn.functional.threshold(x, 0.3, -2.0),
}


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_kernels_match_the_cpu(op, dtype):
    rng = np.random.default_rng(0)
    for name, a, b in layouts(rng, dtype):
        da, db = to_device(name, a, b)
        check(BINARY[op](da, db), BINARY[op](a, b))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary_kernels_match_the_cpu(op, dtype):
    rng = np.random.default_rng(1)
    for name, a, _ in layouts(rng, dtype):
        if op == "log":
            a = a.abs()
        check(UNARY[op](a.cuda()), UNARY[op](a))


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64], ids=str)
def test_inplace_and_out_forms_write_the_device_tensor(dtype):
    rng = np.random.default_rng(2)
    a = ptl.tensor(rng.standard_normal((6, 7)), dtype=dtype)
    b = ptl.tensor(rng.standard_normal(7), dtype=dtype)
    da = a.cuda()
    da.add_(b.cuda(), alpha=3).mul_(b.cuda()).sigmoid_()
    check(da, a.clone().add_(b, alpha=3).mul_(b).sigmoid_())
    out = ptl.empty(6, 7, dtype=dtype, device="cuda")
    ptl.div(a.cuda(), b.cuda(), out=out)
    check(out, ptl.div(a, b))
    strided = ptl.zeros(7, 6, dtype=dtype, device="cuda").t()
    ptl.exp(a.cuda(), out=strided)
    check(strided, ptl.exp(a))


def test_special_functions_in_place_out_and_dtypes_on_the_device():
    a = ptl.tensor(np.linspace(0.5, 9.0, 42).reshape(6, 7))
    da = a.cuda()
    check(da.clone().acosh_(), a.clone().acosh_())
    check(da.clone().hypot_(da.t().contiguous().t()), a.clone().hypot_(a))
    out = ptl.empty(0, device="cuda")
    assert ptl.special.i1e(da, out=out) is out
    check(out, ptl.special.i1e(a))
    check(ptl.igammac(da, da.flip(0), out=ptl.empty(6, 7, device="cuda").t().t()),
          ptl.igammac(a, a.flip(0)))
    i = ptl.arange(5)
    check(ptl.erfc(i.cuda()), ptl.erfc(i))   # integers compute in the default float dtype
    for fn in (ptl.hypot, ptl.igamma):
        with pytest.raises(NotImplementedError,
                           match=f'"{fn.__name__}_cuda" not implemented for \'Long\''):
            fn(i.cuda(), i.cuda())
    x = ptl.tensor(np.linspace(-4, 4, 33))
    dx = x.cuda()
    check(ptl.nn.functional.silu(dx, inplace=True), ptl.nn.functional.silu(x.clone()))
    check(ptl.nn.functional.elu(x.cuda(), inplace=True), ptl.nn.functional.elu(x.clone()))
    check(ptl.nn.functional.leaky_relu(x.cuda(), 0.2, inplace=True),
          ptl.nn.functional.leaky_relu(x.clone(), 0.2))
    # the CPU kernels' argument checks, shared
    with pytest.raises(RuntimeError, match="lambda must be in range"):
        ptl.nn.functional.softshrink(dx, -1.0)
    with pytest.raises(RuntimeError, match="alpha cannot be 0 for CELU"):
        ptl.nn.functional.celu(dx, 0.0)
    with pytest.raises(RuntimeError, match="In-place elu backward calculation"):
        _C._op("aten::elu_backward")(dx, -1.0, 1.0, 1.0, True, dx)
    with pytest.raises(RuntimeError, match="In-place leakyReLu backward calculation"):
        _C._op("aten::leaky_relu_backward")(dx, dx, -0.1, True)


def test_abs_sign_sqrt_reciprocal_clamp_pow_forms_and_errors_on_the_device():
    x = ptl.tensor(np.concatenate([np.linspace(-3, 3, 31), [0.0, -0.0, np.inf, -np.inf,
                                                            np.nan]]))
    dx = x.cuda()
    for fn in (lambda t: t.abs_(), lambda t: t.sign_(), lambda t: t.reciprocal_(),
               lambda t: t.clamp_(-1, 2), lambda t: t.clip_(min=0.5), lambda t: t.pow_(3),
               lambda t: t.pow_(0.5)):
        check(fn(dx.clone()), fn(x.clone()))
    for fn in (ptl.abs, ptl.sign, ptl.sqrt, ptl.reciprocal):
        out = ptl.empty(0, dtype=ptl.float64, device="cuda")
        assert fn(dx, out=out) is out
        check(out, fn(x))
    out = ptl.empty(6, 6, dtype=ptl.float64, device="cuda").t()
    check(ptl.clamp(dx[:36].reshape(6, 6), -1, 1, out=out), ptl.clamp(x[:36].reshape(6, 6), -1, 1))
    check(ptl.pow(dx, 2.5, out=ptl.empty(0, dtype=ptl.float64, device="cuda")), ptl.pow(x, 2.5))
    i = ptl.arange(-3, 4)
    check(ptl.sqrt(i.cuda()), ptl.sqrt(i))          # integers compute in the default dtype
    check(ptl.reciprocal(i.cuda()), ptl.reciprocal(i))
    check(i.cuda().clamp(-1.5, 2.5), i.clamp(-1.5, 2.5))   # a float bound promotes
    check(i.cuda() ** 0.5, i ** 0.5)
    # the CPU kernels' checks, shared
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        ptl.clamp(dx)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type long int"):
        i.cuda().clamp_(0.5)
    with pytest.raises(RuntimeError, match="Found dtype Float but expected Double"):
        ptl.abs(dx, out=ptl.empty(0, device="cuda"))
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
        i.cuda() ** -1
    with pytest.raises(NotImplementedError, match='"clamp_scalar_cuda" not implemented for '
                                                  "'Bool'"):
        ptl.ones(2, dtype=ptl.bool, device="cuda").clamp(False, True)
    with pytest.raises(RuntimeError, match="value cannot be converted to type c10::Half"):
        ptl.ones(2, dtype=ptl.float16, device="cuda") ** 1e10


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_clamp_tensor_matches_the_cpu(dtype):
    """clamp.Tensor and clip.Tensor with both bounds or one, broadcast, in place and out="""
    rng = np.random.default_rng(15)
    for name, x, lo in layouts(rng, dtype):
        hi = lo + 1
        for fn in (lambda a, l, h: ptl.clamp(a, l, h), lambda a, l, h: ptl.clamp(a, min=l),
                   lambda a, l, h: ptl.clamp(a, max=h), lambda a, l, h: ptl.clip(a, l, h)):
            try:
                want = fn(x, lo, hi)
            except RuntimeError:
                continue   # bounds that do not broadcast to x's shape
            dev = [t.cuda() if name != "cpu-scalar" or t is x else t for t in (x, lo, hi)]
            check(fn(*dev), want)
        if x.shape == ptl.broadcast_shapes(x.shape, lo.shape):
            y = x.clone().cuda()
            y.clamp_(lo.cuda(), hi.cuda())
            check(y, x.clamp(lo, hi))
    nan = ptl.tensor([float("nan"), 1.0, -1.0]).to(dtype)
    check(nan.cuda().clamp(nan.cuda().flip(0), None), nan.clamp(nan.flip(0), None))
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        ptl.clamp(ptl.ones(2).cuda(), None, None)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_nextafter_has_the_cpu_bits(dtype):
    """float16 and bfloat16 step on their own bits, as the CPU loops do"""
    vals = [0.0, -0.0, 1.0, -1.0, 1e-3, 65504.0, float("inf"), -float("inf"), float("nan"),
            3.5, -2.25]
    a = ptl.tensor([v for v in vals for _ in vals]).to(dtype)
    b = ptl.tensor([w for _ in vals for w in vals]).to(dtype)
    got, want = ptl.nextafter(a.cuda(), b.cuda()), ptl.nextafter(a, b)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(as_np(got), as_np(want))
    y = a.clone().cuda()
    y.nextafter_(b.cuda())
    np.testing.assert_array_equal(as_np(y), as_np(want))


TERNARY = {
    "lerp_tensor": ptl.lerp, "addcmul": lambda a, b, c: ptl.addcmul(a, b, c, value=0.7),
    "addcdiv": lambda a, b, c: ptl.addcdiv(a, b, c, value=-1.3),
}


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("op", sorted(TERNARY))
def test_ternary_kernels_match_the_cpu(op, dtype):
    """lerp.Tensor, addcmul and addcdiv over every layout, the third operand broadcast from
    the second's shape (a CPU 0-dim one in the cpu-scalar layout)"""
    rng = np.random.default_rng(17)
    for name, a, b in layouts(rng, dtype):
        c = b.abs() + 0.5
        if op == "lerp_tensor":
            c = c / (c + 1)
        da, db = to_device(name, a, b)
        dc = c if name == "cpu-scalar" else c.cuda()
        check(TERNARY[op](da, db, dc), TERNARY[op](a, b, c))


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64, ptl.bfloat16], ids=str)
def test_math_ops_in_place_and_out_forms_on_the_device(dtype):
    """register_cuda_math.c's kernels write self in place and a given out= tensor, strided
    too, as the CPU kernels do"""
    rng = np.random.default_rng(18)
    a = ptl.tensor(rng.standard_normal((6, 7)) * 2).to(dtype)
    b = ptl.tensor(rng.standard_normal(7) * 2).to(dtype)
    c = b.abs() + 0.5
    forms = [lambda x, y: x.sin_(), lambda x, y: x.expm1_(), lambda x, y: x.frac_(),
             lambda x, y: x.floor_(), lambda x, y: x.round_(decimals=1),
             lambda x, y: x.square_(), lambda x, y: x.polygamma_(1),
             lambda x, y: x.nan_to_num_(), lambda x, y: x.erfinv_(),
             lambda x, y: ptl.nn.functional.threshold(x, 0.1, 20.0, inplace=True),
             lambda x, y: x.atan2_(y), lambda x, y: x.pow_(y), lambda x, y: x.fmod_(y),
             lambda x, y: x.remainder_(y), lambda x, y: x.floor_divide_(y),
             lambda x, y: x.div_(y, rounding_mode="trunc"), lambda x, y: x.lerp_(y, 0.25),
             lambda x, y: x.lerp_(y, y.abs() / (y.abs() + 1)),
             lambda x, y: x.addcmul_(y, y, value=2), lambda x, y: x.addcdiv_(y, y.abs() + 1)]
    for fn in forms:
        check(fn(a.clone().cuda(), b.cuda()), fn(a.clone(), b))
    outs = [(ptl.sin, (a,)), (ptl.lgamma, (c,)), (ptl.trunc, (a,)), (ptl.atan2, (a, b)),
            (ptl.maximum, (a, b)), (ptl.fmin, (a, b)), (ptl.pow, (c, b)),
            (ptl.remainder, (a, b)), (ptl.addcdiv, (a, b, c))]
    for fn, args in outs:
        out = ptl.empty(7, 6, dtype=dtype, device="cuda").t()
        assert fn(*[t.cuda() for t in args], out=out) is out
        check(out, fn(*args))
    out = ptl.empty(0, dtype=dtype, device="cuda")
    check(ptl.polygamma(2, c.cuda(), out=out), ptl.polygamma(2, c))
    check(ptl.pow(2.5, a.cuda()), ptl.pow(2.5, a))
    check(ptl.pow(2, a.cuda(), out=ptl.empty(0, dtype=dtype, device="cuda")), ptl.pow(2, a))


INTEGERS = [ptl.uint8, ptl.int8, ptl.int16, ptl.int32, ptl.int64]


@pytest.mark.parametrize("dtype", INTEGERS, ids=str)
def test_integer_pointwise_ops_have_the_cpu_values(dtype):
    """Note [CUDA integer pointwise]: int64 arithmetic, wrapping, truncated at the store"""
    rng = np.random.default_rng(16)
    info = np.iinfo({ptl.uint8: np.uint8, ptl.int8: np.int8, ptl.int16: np.int16,
                     ptl.int32: np.int32, ptl.int64: np.int64}[dtype])
    def r(*shape):
        edge = rng.choice([info.min, info.max, 0, 1, -1 if info.min < 0 else 2], size=shape)
        mid = rng.integers(max(info.min, -1000), min(info.max, 1000), size=shape)
        return ptl.tensor(np.where(rng.random(shape) < 0.2, edge, mid).astype(info.dtype))
    pairs = [(r(37, 29), r(37, 29)), (r(64, 33).t(), r(33, 64)), (r(17, 1), r(23)),
             (r(), r()), (r(0, 5), r(5)), (r(9, 8), r())]
    binary = [lambda a, b: a + b, lambda a, b: a - b, lambda a, b: ptl.add(a, b, alpha=3),
              lambda a, b: ptl.rsub(a, b, alpha=2), lambda a, b: a * b, ptl.gcd, ptl.lcm]
    unary = [ptl.neg, ptl.relu, ptl.abs, ptl.sign]
    for a, b in pairs:
        bd = b if b.dim() == 0 and a.dim() > 0 else b.cuda()   # a CPU 0-dim operand
        for fn in binary:
            check(fn(a.cuda(), bd), fn(a, b))
        for fn in unary:
            check(fn(a.cuda()), fn(a))
        if (a * b).shape == a.shape:
            y = a.clone().cuda()
            y.mul_(bd)
            check(y, a * b)
    with pytest.raises(RuntimeError, match="For integral input tensors, argument alpha must "
                                           "not be a floating point number."):
        ptl.add(ptl.ones(2, dtype=dtype).cuda(), ptl.ones(2, dtype=dtype).cuda(), alpha=0.5)


@pytest.mark.parametrize("dtype", INTEGERS, ids=str)
def test_integer_math_ops_have_the_cpu_values(dtype):
    """the math family on integers: int64 formulas (scalar_math.h's ptl_div_floor_i,
    ptl_pow_i, ptl_lshift_i, ...) truncated at the store, as the CPU's integer loops"""
    rng = np.random.default_rng(19)
    info = np.iinfo({ptl.uint8: np.uint8, ptl.int8: np.int8, ptl.int16: np.int16,
                     ptl.int32: np.int32, ptl.int64: np.int64}[dtype])
    def r(*shape, nonzero=False):
        edge = rng.choice([info.min, info.max, 0, 1, -1 if info.min < 0 else 2], size=shape)
        mid = rng.integers(max(info.min, -1000), min(info.max, 1000), size=shape)
        v = np.where(rng.random(shape) < 0.2, edge, mid).astype(info.dtype)
        return ptl.tensor(np.where(v == 0, 1, v).astype(info.dtype) if nonzero else v)
    pairs = [(r(37, 29), r(37, 29, nonzero=True)), (r(64, 33).t(), r(33, 64, nonzero=True)),
             (r(17, 1), r(23, nonzero=True)), (r(), r(nonzero=True)),
             (r(0, 5), r(5, nonzero=True)), (r(9, 8), r(nonzero=True))]
    binary = [ptl.maximum, ptl.minimum, ptl.fmax, ptl.fmin, ptl.bitwise_and, ptl.bitwise_or,
              ptl.bitwise_xor, ptl.bitwise_left_shift, ptl.bitwise_right_shift,
              lambda a, b: ptl.bitwise_left_shift(a, b.abs() % 9),
              lambda a, b: ptl.bitwise_right_shift(a, b.abs() % 9),
              lambda a, b: ptl.pow(a, b.abs() % 7), ptl.floor_divide, ptl.remainder, ptl.fmod,
              lambda a, b: ptl.div(a, b, rounding_mode="trunc"),
              lambda a, b: ptl.div(a, b, rounding_mode="floor"),
              lambda a, b: ptl.div(a, b, rounding_mode=None),
              lambda a, b: ptl.addcmul(a, b, b, value=3)]
    unary = [ptl.floor, ptl.ceil, ptl.trunc, ptl.round, ptl.square, ptl.bitwise_not,
             ptl.nan_to_num, ptl.sin, ptl.erfinv, ptl.digamma,
             lambda x: ptl.nn.functional.threshold(x, 5, 7)]
    for a, b in pairs:
        bd = b if b.dim() == 0 and a.dim() > 0 else b.cuda()   # a CPU 0-dim operand
        for fn in binary:
            check(fn(a.cuda(), bd), fn(a, b))
        for fn in unary:
            check(fn(a.cuda()), fn(a))
    a, b = pairs[0]
    for fn in (lambda x, y: x.floor_divide_(y), lambda x, y: x.bitwise_xor_(y),
               lambda x, y: x.bitwise_left_shift_(y.abs() % 9), lambda x, y: x.square_(),
               lambda x, y: x.bitwise_not_()):
        check(fn(a.clone().cuda(), b.cuda()), fn(a.clone(), b))
    zero = b.clone()
    zero[3, 4] = 0
    for fn in (ptl.floor_divide, ptl.remainder, ptl.fmod,
               lambda x, y: ptl.div(x, y, rounding_mode="trunc")):
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            fn(a.cuda(), zero.cuda())
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        a.cuda() // 0
    check(ptl.floor_divide(a[:0].cuda(), zero[:0].cuda()), ptl.floor_divide(a[:0], zero[:0]))


def test_bool_math_ops_and_errors_match_the_cpu():
    """bool through the uint8 kernel (and, or, xor, not, maximum, minimum, nan_to_num; square
    promotes to int64), and the CPU kernels' dtype checks"""
    rng = np.random.default_rng(20)
    a = ptl.tensor(rng.random((13, 11)) < 0.5)
    b = ptl.tensor(rng.random(11) < 0.5)
    for fn in (ptl.bitwise_and, ptl.bitwise_or, ptl.bitwise_xor, ptl.maximum, ptl.minimum,
               ptl.fmax, ptl.fmin, lambda x, y: x & y, lambda x, y: x | y, lambda x, y: x ^ y):
        check(fn(a.cuda(), b.cuda()), fn(a, b))
    for fn in (ptl.bitwise_not, lambda x: ~x, ptl.nan_to_num, ptl.square, ptl.sin):
        check(fn(a.cuda()), fn(a))
    y = a.clone().cuda()
    y.bitwise_not_()
    check(y, ~a)
    f, i = ptl.ones(3, device="cuda"), ptl.ones(3, dtype=ptl.int64, device="cuda")
    bools = ptl.ones(3, dtype=ptl.bool, device="cuda")
    for fn, kernel, dtype in [(ptl.bitwise_and, "bitwise_and", "Float"),
                              (ptl.bitwise_not, "bitwise_not", "Float"),
                              (ptl.bitwise_left_shift, "lshift", "Float"),
                              (ptl.frac, "frac", "Long"), (ptl.remainder, "remainder", "Bool"),
                              (ptl.floor, "floor", "Bool"), (ptl.pow, "pow", "Bool")]:
        arg = {"Float": f, "Long": i, "Bool": bools}[dtype]
        with pytest.raises(NotImplementedError, match=f'"{kernel}_cuda" not implemented for '
                                                      f"'{dtype}'"):
            fn(arg) if kernel in ("bitwise_not", "frac", "floor") else fn(arg, arg)
    with pytest.raises(NotImplementedError, match="\"round_cuda\" not implemented for 'Long'"):
        ptl.round(i, decimals=1)
    with pytest.raises(NotImplementedError, match="\"lerp_kernel_scalar\" not implemented"):
        ptl.lerp(i, i, 0.5)
    with pytest.raises(RuntimeError, match="expected dtype float for `end` but got dtype double"):
        ptl.lerp(f, f.double(), 0.5)
    with pytest.raises(RuntimeError, match="Integer division with addcdiv is no longer"):
        ptl.addcdiv(f, i, i)
    with pytest.raises(RuntimeError, match="Found dtype Float but expected Long"):
        ptl.floor(i, out=ptl.empty(3, device="cuda"))
    with pytest.raises(RuntimeError, match="polygamma\\(n, x\\) does not support negative n"):
        ptl.polygamma(-1, f)
    with pytest.raises(RuntimeError, match="div expected rounding_mode to be one of None"):
        ptl.div(f, f, rounding_mode="up")


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_predicates_isclose_and_allclose_match_the_cpu(dtype):
    """elementwise.cu's predicate kernel: isnan, isinf, isfinite, logical_not (+ in-place,
    out=) and isclose write bool from every dtype; allclose reduces isclose on the device"""
    rng = np.random.default_rng(21)
    special = [0.0, -0.0, np.nan, np.inf, -np.inf, 1.0, -2.5]
    def r(*shape):
        v = rng.standard_normal(shape) * 2
        if dtype in FLOATS:
            v = np.where(rng.random(shape) < 0.3, rng.choice(special, size=shape), v)
        return ptl.tensor(v).to(dtype)
    pairs = [(r(37, 29), r(37, 29)), (r(64, 33).t(), r(33, 64)), (r(17, 1), r(23)),
             (r(), r()), (r(0, 5), r(5)), (r(9, 8), r())]
    for a, b in pairs:
        bd = b if b.dim() == 0 and a.dim() > 0 else b.cuda()   # a CPU 0-dim operand
        for fn in (ptl.isnan, ptl.isinf, ptl.isfinite, ptl.logical_not):
            check(fn(a.cuda()), fn(a))
        near = b + 1e-3 if dtype in FLOATS else b
        nd = near if b.dim() == 0 and a.dim() > 0 else near.cuda()
        for fn in (ptl.isclose, lambda x, y: ptl.isclose(x, y, rtol=0.1, atol=0.5),
                   lambda x, y: ptl.isclose(x, y, equal_nan=True)):
            check(fn(a.cuda(), bd), fn(a, b))
            check(fn(b.cuda(), nd), fn(b, near))
    a = pairs[0][0]
    y = a.clone().cuda()
    y.logical_not_()
    check(y, a.clone().logical_not_())
    out = ptl.empty(0, dtype=ptl.float32, device="cuda")
    assert ptl.logical_not(a.cuda(), out=out) is out
    check(out, ptl.logical_not(a, out=ptl.empty(0, dtype=ptl.float32)))
    for x, z in ((a, a.clone()), (a, a + 1 if dtype != ptl.bool else ~a)):
        assert ptl.allclose(x.cuda(), z.cuda()) == ptl.allclose(x, z)
        assert ptl.allclose(x.cuda(), z.cuda(), equal_nan=True) == ptl.allclose(x, z,
                                                                               equal_nan=True)
    with pytest.raises(RuntimeError, match="rtol must be greater than or equal to zero"):
        ptl.isclose(a.cuda(), a.cuda(), rtol=-1.0)
    other = ptl.int16 if dtype != ptl.int16 else ptl.int32
    with pytest.raises(RuntimeError, match="did not match"):
        ptl.isclose(a.cuda(), a.to(other).cuda())


def test_mixed_dtypes_promote_as_on_the_cpu():
    a = ptl.arange(12, dtype=ptl.float32).reshape(3, 4)
    b = ptl.arange(4, dtype=ptl.float64)
    check(a.cuda() + b.cuda(), a + b)
    check(a.cuda() * 2.5, a * 2.5)
    check(ptl.arange(6).cuda() / 4, ptl.arange(6) / 4)


def test_an_op_without_a_cuda_kernel_raises_the_dispatcher_error():
    x = ptl.ones(3, 3, device="cuda")
    with pytest.raises(NotImplementedError,
                       match=r"^Could not run 'aten::linalg_qr' with arguments from the "
                             r"'CUDA' backend\."):
        ptl.linalg.qr(x)


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_copies_both_ways_are_exact(dtype):
    rng = np.random.default_rng(3)
    host = ptl.tensor(rng.standard_normal((5, 6)) * 50, dtype=ptl.float64).to(dtype)
    dev = host.to("cuda")
    assert dev.device.type == "cuda" and dev.dtype == dtype
    back = dev.cpu()
    assert back.device.type == "cpu"
    np.testing.assert_array_equal(as_np(back), as_np(host))
    np.testing.assert_array_equal(as_np(host.t().cuda()), as_np(host.t()))
    np.testing.assert_array_equal(as_np(dev.t().cpu()), as_np(host.t()))
    np.testing.assert_array_equal(as_np(dev[:, 1::2].cpu()), as_np(host[:, 1::2]))


@pytest.mark.parametrize("src", ALL, ids=str)
@pytest.mark.parametrize("dst", ALL, ids=str)
def test_casts_on_the_device_match_the_cpu(src, dst):
    rng = np.random.default_rng(4)
    values = np.concatenate([rng.standard_normal(40) * 300, [0.0, -0.0, 1.5, -2.5, 255, 256]])
    host = ptl.tensor(values, dtype=ptl.float64).to(src)
    np.testing.assert_array_equal(as_np(host.cuda().to(dst)), as_np(host.to(dst)))
    np.testing.assert_array_equal(as_np(host.cuda().to("cpu", dst)), as_np(host.to(dst)))
    np.testing.assert_array_equal(as_np(host.to("cuda", dst)), as_np(host.to(dst)))


def test_copy_into_strided_and_broadcast_device_tensors():
    base = ptl.zeros(4, 6, device="cuda")
    base.t().copy_(ptl.arange(24.0).reshape(6, 4))
    np.testing.assert_array_equal(as_np(base), np.arange(24.0).reshape(6, 4).T)
    row = ptl.tensor([1.0, 2, 3]).cuda()
    target = ptl.empty(2, 3, dtype=ptl.float64, device="cuda")
    target.copy_(row)
    np.testing.assert_array_equal(as_np(target), np.array([[1.0, 2, 3]] * 2))
    target.copy_(ptl.tensor([[7], [8]]))
    np.testing.assert_array_equal(as_np(target), np.array([[7.0] * 3, [8.0] * 3]))
    with pytest.raises(RuntimeError, match="must match the size"):
        target.copy_(ptl.ones(4).cuda())


def test_factories_on_the_device():
    for dtype in ALL:
        np.testing.assert_array_equal(as_np(ptl.zeros(3, 5, dtype=dtype, device="cuda")),
                                      np.zeros((3, 5)))
        np.testing.assert_array_equal(as_np(ptl.ones(7, dtype=dtype, device="cuda")),
                                      np.ones(7))
    np.testing.assert_array_equal(as_np(ptl.full((2, 2), 3.5, device="cuda")),
                                  np.full((2, 2), 3.5))
    np.testing.assert_array_equal(as_np(ptl.arange(10, device="cuda")), np.arange(10))
    assert ptl.empty(0, 4, device="cuda").shape == (0, 4)
    x = ptl.empty(1 << 20, device="cuda").fill_(2.0)
    assert as_np(x).sum() == 2.0 * (1 << 20)
    x.zero_()
    assert as_np(x).sum() == 0


VIEWS = [
    lambda t: t.t(), lambda t: t.transpose(0, 1), lambda t: t.view(4, 6),
    lambda t: t.reshape(2, 12), lambda t: t[:, 1::2].reshape(-1), lambda t: t.permute(1, 0),
    lambda t: t.unsqueeze(1).expand(6, 3, 4), lambda t: t[2], lambda t: t[1:5:2, ::3],
    lambda t: t.narrow(1, 1, 2), lambda t: t.flatten(), lambda t: t.unflatten(1, (2, 2)),
    lambda t: t.as_strided((3, 3), (1, 5), 2), lambda t: t.unbind(1)[2],
    lambda t: t.chunk(3, 0)[1], lambda t: t.split(2, 1)[1], lambda t: t.movedim(0, 1),
    lambda t: t.detach(), lambda t: t[None, :, None].squeeze(0),
]


@pytest.mark.parametrize("view", range(len(VIEWS)))
def test_views_of_device_tensors_share_the_cpu_kernels(view):
    """The views run view.c's kernels on the CUDA key: the same sizes, strides and storage
    offset as on the CPU, the device's storage, and reshape's copy made on the device."""
    host = ptl.arange(24.0).reshape(6, 4)
    dev = host.cuda()
    want, got = VIEWS[view](host), VIEWS[view](dev)
    assert got.device.type == "cuda"
    assert (got.shape, got.stride()) == (want.shape, want.stride())
    np.testing.assert_array_equal(as_np(got), as_np(want))


def test_clone_and_constant_pad_on_the_device():
    """clone keeps a strided tensor's strides (the iterator's layout) and copies on the
    device; F.pad's constant mode fills and copies there, negative pads narrowing."""
    import pytorchlite.nn.functional as F
    host = ptl.arange(60.0).reshape(3, 4, 5).transpose(0, 2)
    got, want = host.cuda().clone(), host.clone()
    assert got.stride() == want.stride()
    np.testing.assert_array_equal(as_np(got), as_np(want))
    for pad in ((1, 2), (1, 0, 2, 3), (-1, 2, 0, 1, 1, 1), (0, 0)):
        check(F.pad(host.cuda(), pad, value=-2.5), F.pad(host, pad, value=-2.5))


def test_to_round_trips_keep_values_and_report_the_device():
    a = ptl.randn(8, 3)
    assert a.cuda().device == ptl.device("cuda", 0)
    assert a.to("cuda").to("cpu").equal(a)
    assert a.cuda(0).cpu().equal(a)
    assert a.to(ptl.device("cuda")).to(a).equal(a)
    assert ptl.cuda.is_available() and ptl.cuda.device_count() >= 1
    # "cuda" is the current device: its tensors mix with "cuda:0" ones
    assert ptl.ones(2, device="cuda").device == ptl.device("cuda:0")
    check(ptl.ones(2, device="cuda") + ptl.ones(2, device="cuda:0"), ptl.full((2,), 2.0))


# ---- reductions and the softmax family (reduce.cu; the plans are checked on the host by
# test_reduce_plan.py) ----

INTS = [ptl.bool, ptl.uint8, ptl.int8, ptl.int16, ptl.int32, ptl.int64]


def reduction_inputs(rng, dtype):
    """(name, CPU tensor): contiguous, transposed, sliced, broadcast (stride 0), 0-dim,
    size-0, long rows and columns (split over blocks) and many short rows."""
    def r(*shape):
        if dtype == ptl.bool:
            return ptl.tensor(rng.integers(0, 2, size=shape)).to(dtype)
        if dtype in INTS:
            return ptl.tensor(rng.integers(0, 6, size=shape)).to(dtype)
        return ptl.tensor(rng.standard_normal(shape), dtype=ptl.float64).to(dtype)
    return [
        ("contiguous", r(37, 129)),
        ("transposed", r(64, 33).t()),
        ("sliced", r(20, 40, 3)[:, ::3]),
        ("broadcast", r(17, 1).expand(17, 23)),
        ("0-dim", r()),
        ("size-0", r(0, 5)),
        # past the default plan's split (2 x 4096 reduced elements, fewer blocks than 4 per
        # SM): one block per output, and one thread per output (33 outputs)
        ("long-rows", r(2, 20001)),
        ("long-columns", r(9000, 33)),
        ("many-rows", r(5000, 7)),
    ]


def dims_of(t):
    """every dim, each single dim, and the first and last together"""
    out = [None] + [[d] for d in range(t.dim())]
    if t.dim() >= 2:
        out.append([0, t.dim() - 1])
    return out


def check_pairs(cuda_result, cpu_result):
    if isinstance(cpu_result, tuple):
        for a, b in zip(cuda_result, cpu_result):
            check(a, b)
    else:
        check(cuda_result, cpu_result)


# (name, fn(t, dims, keepdim), dtypes): every form each reduction is registered for
REDUCTIONS = {
    "sum": (lambda t, d, k: t.sum() if d is None else t.sum(d, keepdim=k), ALL),
    "sum_dtype": (lambda t, d, k: t.sum(d or [], keepdim=k, dtype=ptl.float64), ALL),
    "nansum": (lambda t, d, k: ptl.nansum(t, d, keepdim=k), FLOATS),
    "mean": (lambda t, d, k: t.mean() if d is None else t.mean(d, keepdim=k), FLOATS),
    "prod": (lambda t, d, k: t.prod() if d is None else t.prod(d[0], keepdim=k), ALL),
    "amax": (lambda t, d, k: t.amax(d or [], keepdim=k), ALL),
    "amin": (lambda t, d, k: t.amin(d or [], keepdim=k), ALL),
    "max_dim": (lambda t, d, k: t.max() if d is None else tuple(t.max(d[0], keepdim=k)), ALL),
    "min_dim": (lambda t, d, k: t.min() if d is None else tuple(t.min(d[0], keepdim=k)), ALL),
    "argmax": (lambda t, d, k: t.argmax() if d is None else t.argmax(d[0], keepdim=k),
               [x for x in ALL if x != ptl.bool]),
    "argmin": (lambda t, d, k: t.argmin() if d is None else t.argmin(d[0], keepdim=k),
               [x for x in ALL if x != ptl.bool]),
    "var": (lambda t, d, k: t.var(d, correction=0, keepdim=k), FLOATS),
    "std": (lambda t, d, k: t.std(d, keepdim=k), FLOATS),
    "var_mean": (lambda t, d, k: ptl.var_mean(t, d, correction=2, keepdim=k), FLOATS),
    "std_mean": (lambda t, d, k: ptl.std_mean(t, d, keepdim=k), FLOATS),
    "norm2": (lambda t, d, k: ptl.norm(t) if d is None else ptl.norm(t, 2, d, keepdim=k),
              FLOATS),
    "norm1": (lambda t, d, k: ptl.norm(t, 1, d or [], keepdim=k), FLOATS),
    "norm_inf": (lambda t, d, k: ptl.norm(t, float("inf"), d or [], keepdim=k), FLOATS),
    "norm_p": (lambda t, d, k: ptl.norm(t, 2.5, d or [], keepdim=k), FLOATS),
    "all": (lambda t, d, k: t.all() if d is None else t.all(d, keepdim=k), ALL),
    "any": (lambda t, d, k: t.any() if d is None else t.any(d[0], keepdim=k), ALL),
    "count_nonzero": (lambda t, d, k: ptl.count_nonzero(t, d), ALL),
    "vector_norm": (lambda t, d, k: ptl.linalg.vector_norm(t, 2, d, keepdim=k), FLOATS),
    "vector_norm_0": (lambda t, d, k: ptl.linalg.vector_norm(t, 0, d, keepdim=k,
                                                             dtype=ptl.float64), FLOATS),
    "logsumexp": (lambda t, d, k: ptl.logsumexp(t, d or [], keepdim=k), ALL),
}
# reductions with no identity: an empty input is an error (checked below)
NO_IDENTITY = {"amax", "amin", "max_dim", "min_dim", "argmax", "argmin", "norm_inf"}


@pytest.mark.parametrize("op,dtype", [(op, dt) for op in sorted(REDUCTIONS)
                                       for dt in REDUCTIONS[op][1]], ids=str)
def test_reductions_match_the_cpu(op, dtype):
    fn = REDUCTIONS[op][0]
    rng = np.random.default_rng(5)
    for name, t in reduction_inputs(rng, dtype):
        if name == "size-0" and op in NO_IDENTITY:
            continue
        dev = t.cuda()
        for dims in dims_of(t):
            for keepdim in (False, True):
                check_pairs(fn(dev, dims, keepdim), fn(t, dims, keepdim))


def test_reductions_propagate_nan_and_take_the_first_index():
    x = ptl.tensor([[1.0, 3.0, 3.0, 0.0], [2.0, float("nan"), 5.0, float("nan")],
                    [4.0, 4.0, -1.0, -1.0]])
    for fn in (lambda t: t.amax(1), lambda t: t.argmax(1), lambda t: t.argmin(1),
               lambda t: tuple(t.max(1)), lambda t: tuple(t.min(0)), lambda t: t.argmax(),
               lambda t: ptl.nansum(t, 1), lambda t: t.sum(0), lambda t: t.var(1),
               lambda t: ptl.logsumexp(t, 1), lambda t: ptl.logsumexp(t, [0, 1])):
        check_pairs(fn(x.cuda()), fn(x))


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64, ptl.float16, ptl.int64, ptl.int32,
                                   ptl.bool], ids=str)
def test_cumsum_and_cumprod_have_the_cpu_bits(dtype):
    """one thread per line in the CPU's order (Note [CUDA scans]): the CPU's values"""
    rng = np.random.default_rng(9)
    for name, x in reduction_inputs(rng, dtype):
        for dim in range(x.dim()) if x.dim() else [0]:
            for fn in (lambda t: t.cumsum(dim), lambda t: t.cumprod(dim)):
                want = fn(x)
                got = fn(x.cuda())
                assert got.dtype == want.dtype, name
                np.testing.assert_array_equal(as_np(got), as_np(want))


def test_reduction_errors_match_the_cpu():
    empty = ptl.zeros(3, 0, device="cuda")
    with pytest.raises(IndexError, match=r"^amax\(\): Expected reduction dim 1 to have "
                                         r"non-zero size\.$"):
        empty.amax(1)
    with pytest.raises(IndexError, match=r"argmax\(\): Expected reduction dim to be "
                                         r"specified for input\.numel\(\) == 0\."):
        empty.argmax()
    with pytest.raises(RuntimeError, match=r"mean\(\): could not infer output dtype"):
        ptl.arange(3, device="cuda").mean()
    with pytest.raises(RuntimeError, match=r"std and var only support floating point"):
        ptl.arange(3, device="cuda").var()
    with pytest.raises(RuntimeError, match=r"argmax\(\): does not support bool input"):
        ptl.ones(3, dtype=ptl.bool, device="cuda").argmax()
    with pytest.raises(RuntimeError, match=r"linalg.vector_norm cannot compute the inf norm"):
        ptl.norm(empty, float("inf"))
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        check(ptl.ones(1, device="cuda").var(), ptl.ones(1).var())


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_softmax_and_its_backward_match_the_cpu(dtype, log):
    rng = np.random.default_rng(6)
    fn = ptl.log_softmax if log else ptl.softmax
    shapes = [(37, 129), (4, 3000), (6, 5, 7), (), (0, 4), (3, 1), (2, 100000)]
    for shape in shapes:
        base = ptl.tensor(rng.standard_normal(shape) * 3, dtype=ptl.float64).to(dtype)
        for t in (base, base.t() if base.dim() == 2 else base):
            for d in range(max(t.dim(), 1)):
                g = ptl.tensor(rng.standard_normal(tuple(t.shape)), dtype=ptl.float64).to(dtype)
                x_cpu = t.detach().requires_grad_(True)
                x_dev = t.cuda().detach().requires_grad_(True)
                y_cpu, y_dev = fn(x_cpu, d), fn(x_dev, d)
                check(y_dev.detach(), y_cpu.detach())
                y_cpu.backward(g)
                y_dev.backward(g.cuda())
                check(x_dev.grad, x_cpu.grad)


def test_softmax_of_infinite_and_nan_rows():
    x = ptl.tensor([[float("-inf")] * 3, [1.0, float("inf"), 0.0], [float("nan"), 1.0, 2.0]])
    for fn in (ptl.softmax, ptl.log_softmax):
        check(fn(x.cuda(), 1), fn(x, 1))
        check(fn(x.t().cuda(), 0), fn(x.t(), 0))


def test_softmax_half_to_float_and_dtype_arguments():
    x = ptl.randn(5, 9).to(ptl.float16)
    check(ptl.softmax(x.cuda(), 1, dtype=ptl.float32), ptl.softmax(x, 1, dtype=ptl.float32))
    with pytest.raises(NotImplementedError, match="softmax_lastdim_kernel_impl"):
        ptl.softmax(ptl.arange(4, device="cuda"), 0)


# ---- layer norm, nll_loss / cross_entropy and embedding (nn.cu; Note [CUDA nn kernels]) ----

def cpu_and_device_leaves(t):
    """t as a CPU leaf and a device leaf, both wanting their gradient."""
    return t.detach().requires_grad_(True), t.detach().cuda().requires_grad_(True)


def check_grads(cpu_leaves, dev_leaves):
    for c, d in zip(cpu_leaves, dev_leaves):
        if c is not None:
            check(d.grad, c.grad)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_layer_norm_and_its_backward_match_the_cpu(dtype):
    rng = np.random.default_rng(7)
    # rows shorter than a warp, at a warp, across the 512-thread block; one row and many
    for shape, k in (((6, 20), 1), ((3, 32), 1), ((4, 5, 33), 2), ((1, 1000), 1),
                     ((2000, 64), 1), ((0, 8), 1), ((5, 4097), 1)):
        ns = shape[-k:]
        r = lambda *s: ptl.tensor(rng.standard_normal(s) * 2 + 0.5).to(dtype)  # noqa: E731
        x, w, b = r(*shape), r(*ns), r(*ns)
        for affine in (True, False):
            xc, xd = cpu_and_device_leaves(x)
            wc, wd = cpu_and_device_leaves(w) if affine else (None, None)
            bc, bd = cpu_and_device_leaves(b) if affine else (None, None)
            yc = ptl.nn.functional.layer_norm(xc, ns, wc, bc)
            yd = ptl.nn.functional.layer_norm(xd, ns, wd, bd)
            check(yd.detach(), yc.detach())
            g = r(*shape)
            yc.backward(g)
            yd.backward(g.cuda())
            check_grads([xc, wc, bc], [xd, wd, bd])


def device_layout(t, kind):
    """t (on the device) contiguous, strided (every other element of a wider tensor) or
    channels last (channels innermost in memory); the same values."""
    if kind == "strided":
        return ptl.stack([t, t], -1).flatten(-2)[..., ::2]
    if kind == "channels_last" and t.dim() > 2:
        return t.movedim(1, -1).contiguous().movedim(-1, 1)
    return t


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_batch_norm_and_its_backward_match_the_cpu(dtype):
    """Training (the running statistics updated alike) and eval, on contiguous, strided and
    channels-last inputs; float16 and bfloat16 with float32 parameters; channels of one
    chunk and split ones (a channel of 2 x 10^5 values); the same bits run after run."""
    rng = np.random.default_rng(11)
    F = ptl.nn.functional
    pdt = ptl.float32 if dtype in (ptl.float16, ptl.bfloat16) else dtype
    for shape in ((16, 5), (4, 3, 33), (2, 8, 7, 9), (1, 1, 200000), (3, 600, 2)):
        c = shape[1]
        x = ptl.tensor(rng.standard_normal(shape) * 2 + 1).to(dtype)
        g = ptl.tensor(rng.standard_normal(shape)).to(dtype)
        for kind in ("contiguous", "strided", "channels_last"):
            for training in (True, False):
                w = ptl.tensor(rng.standard_normal(c)).to(pdt)
                b = ptl.tensor(rng.standard_normal(c)).to(pdt)
                rm = ptl.tensor(rng.standard_normal(c)).to(pdt)
                rv = ptl.tensor(rng.random(c) + 0.5).to(pdt)
                xc = x.clone().requires_grad_(True)
                xd = device_layout(x.cuda(), kind).detach().requires_grad_(True)
                wc, wd = cpu_and_device_leaves(w)
                bc, bd = cpu_and_device_leaves(b)
                rmc, rvc, rmd, rvd = rm.clone(), rv.clone(), rm.cuda(), rv.cuda()
                yc = F.batch_norm(xc, rmc, rvc, wc, bc, training, 0.2, 1e-4)
                yd = F.batch_norm(xd, rmd, rvd, wd, bd, training, 0.2, 1e-4)
                check(yd.detach(), yc.detach())
                check(rmd, rmc)
                check(rvd, rvc)
                yc.backward(g)
                yd.backward(g.cuda())
                check_grads([xc, wc, bc], [xd, wd, bd])
        once = F.batch_norm(x.cuda(), None, None, None, None, True)
        assert ptl.equal(once, F.batch_norm(x.cuda(), None, None, None, None, True))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_nll_loss_and_cross_entropy_match_the_cpu(dtype):
    rng = np.random.default_rng(8)
    F = ptl.nn.functional
    for shape in ((7,), (40, 5), (1000, 33), (4, 3, 6, 5), (0, 4)):
        C = shape[0] if len(shape) == 1 else shape[1]
        tshape = () if len(shape) == 1 else (shape[0],) + shape[2:]
        x = ptl.tensor(rng.standard_normal(shape)).to(dtype)
        t = ptl.tensor(rng.integers(0, C, size=tshape))
        weight = ptl.tensor(rng.uniform(0.5, 2, C)).to(dtype)
        for w in (None, weight):
            for ignore in (-100, 1):
                for reduction in ("none", "mean", "sum"):
                    for fn in (F.nll_loss, F.cross_entropy):
                        xc, xd = cpu_and_device_leaves(x)
                        kw = dict(ignore_index=ignore, reduction=reduction)
                        lc = fn(xc, t, weight=w, **kw)
                        ld = fn(xd, t.cuda(), weight=None if w is None else w.cuda(), **kw)
                        check(ld.detach(), lc.detach())
                        g = ptl.tensor(rng.standard_normal(tuple(lc.shape))).to(dtype)
                        lc.backward(g)
                        ld.backward(g.cuda())
                        check_grads([xc], [xd])
    every = ptl.full((6,), 2, dtype=ptl.int64)
    x = ptl.randn(6, 3).to(dtype)
    check(F.nll_loss(x.cuda(), every.cuda(), ignore_index=2),
          F.nll_loss(x, every, ignore_index=2))
    with pytest.raises(IndexError, match="Target 3 is out of bounds."):
        F.nll_loss(x.cuda(), ptl.tensor([0, 1, 3, 0, 0, 0]).cuda())


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_regression_losses_and_their_backward_match_the_cpu(dtype):
    rng = np.random.default_rng(10)
    F = ptl.nn.functional
    losses = [F.mse_loss, lambda x, t, **kw: F.smooth_l1_loss(x, t, beta=0.7, **kw),
              lambda x, t, **kw: F.smooth_l1_loss(x, t, beta=0.0, **kw),
              lambda x, t, **kw: F.huber_loss(x, t, delta=1.3, **kw)]
    for xs, ts in (((37, 29), (37, 29)), ((1001,), (1001,)), ((5, 1), (7,)), ((), ()),
                   ((0, 3), (3,))):
        x = ptl.tensor(rng.standard_normal(xs) * 2).to(dtype)
        t = ptl.tensor(rng.standard_normal(ts) * 2).to(dtype)
        for fn in losses:
            for reduction in ("none", "mean", "sum"):
                same_2d = x.dim() == 2 and x.shape == t.shape
                for xv, tv in [(x, t)] + ([(x.t(), t.t())] if same_2d else []):
                    xc, xd = cpu_and_device_leaves(xv)
                    lc = fn(xc, tv, reduction=reduction)
                    ld = fn(xd, tv.cuda(), reduction=reduction)
                    check(ld.detach(), lc.detach())
                    g = ptl.tensor(rng.standard_normal(tuple(lc.shape))).to(dtype)
                    lc.backward(g)
                    ld.backward(g.cuda())
                    check_grads([xc], [xd])
    x = ptl.randn(4, 3).cuda()
    with pytest.raises(RuntimeError, match="huber_loss does not support non-positive values"):
        F.huber_loss(x, x, delta=0.0)
    with pytest.raises(RuntimeError, match="smooth_l1_loss does not support negative values"):
        F.smooth_l1_loss(x, x, beta=-1.0)
    with pytest.raises(NotImplementedError, match='"mse_cuda" not implemented for \'Long\''):
        _C._op("aten::mse_loss")(ptl.arange(3).cuda(), ptl.arange(3).cuda(), 1)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_binary_cross_entropy_and_its_backward_match_the_cpu(dtype):
    """the pointwise kernel's ptl_bce_d / ptl_bce_grad_d, times the weight, then the CUDA
    reduction; the range check reads the input's extremes back"""
    rng = np.random.default_rng(12)
    F = ptl.nn.functional
    for shape in ((37, 29), (1001,), (), (0, 3)):
        x = ptl.tensor(rng.uniform(0, 1, shape)).to(dtype)
        t = ptl.tensor(rng.uniform(0, 1, shape)).to(dtype)
        weight = ptl.tensor(rng.uniform(0.5, 2, shape[-1:])).to(dtype)
        for w in (None, weight):
            for reduction in ("none", "mean", "sum"):
                xc, xd = cpu_and_device_leaves(x)
                lc = F.binary_cross_entropy(xc, t, weight=w, reduction=reduction)
                ld = F.binary_cross_entropy(xd, t.cuda(), reduction=reduction,
                                            weight=None if w is None else w.cuda())
                check(ld.detach(), lc.detach())
                g = ptl.tensor(rng.standard_normal(tuple(lc.shape))).to(dtype)
                lc.backward(g)
                ld.backward(g.cuda())
                check_grads([xc], [xd])
    edges = ptl.tensor([0.0, 1.0, 0.5, 1e-30]).to(dtype)
    check(F.binary_cross_entropy(edges.cuda(), edges.flip(0).cuda(), reduction="none"),
          F.binary_cross_entropy(edges, edges.flip(0), reduction="none"))
    for bad in (1.5, -0.1, float("nan")):
        with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
            F.binary_cross_entropy(ptl.tensor([0.5, bad]).cuda(), ptl.ones(2).cuda())
    with pytest.raises(ValueError, match=r"Using a target size \(torch.Size\(\[4\]\)\) that is"):
        F.binary_cross_entropy(ptl.ones(3).cuda() / 2, ptl.ones(4).cuda())


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64], ids=str)
def test_embedding_bag_and_its_backward_match_the_cpu(dtype):
    """the composition of index_select, index_add_ and the division (Note [Device embedding
    bags]): equal to the CPU kernel within rounding"""
    rng = np.random.default_rng(13)
    F = ptl.nn.functional
    for V, D, B, L in ((10, 3, 4, 5), (1000, 64, 32, 20), (7, 5, 3, 1)):
        w = ptl.tensor(rng.standard_normal((V, D))).to(dtype)
        idx = ptl.tensor(rng.integers(0, V, size=(B, L)))
        psw = ptl.tensor(rng.standard_normal((B, L))).to(dtype)
        flat, offsets = idx.reshape(-1), ptl.tensor([0, 0] + list(range(2, B * L, 3)))
        for mode, kw in (("sum", {}), ("mean", {}), ("sum", {"per_sample_weights": psw}),
                         ("mean", {"padding_idx": 1})):
            for inp, off in ((idx, None), (flat, offsets)):
                if off is not None and "per_sample_weights" in kw:
                    continue
                wc, wd = cpu_and_device_leaves(w)
                oc = F.embedding_bag(inp, wc, off, mode=mode, **kw)
                kd = {k: v.cuda() if k == "per_sample_weights" else v for k, v in kw.items()}
                od = F.embedding_bag(inp.cuda(), wd, None if off is None else off.cuda(),
                                     mode=mode, **kd)
                check(od.detach(), oc.detach())
                g = ptl.tensor(rng.standard_normal(tuple(oc.shape))).to(dtype)
                oc.backward(g)
                od.backward(g.cuda())
                check_grads([wc], [wd])
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding_bag(ptl.tensor([[0, 9]]).cuda(), ptl.randn(4, 2).cuda())


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_affine_grid_and_its_backward_match_the_cpu(dtype):
    """grid = B @ theta^T and its transpose on the device's GEMM (Note [Device affine_grid])"""
    rng = np.random.default_rng(14)
    F = ptl.nn.functional
    for size in ((2, 3, 4, 5), (1, 1, 1, 7), (3, 2, 3, 4, 5), (2, 1, 33, 40)):
        nd = len(size) - 2
        theta = ptl.tensor(rng.standard_normal((size[0], nd, nd + 1))).to(dtype)
        for align in (False, True):
            tc, td = cpu_and_device_leaves(theta)
            gc = F.affine_grid(tc, size, align_corners=align)
            gd = F.affine_grid(td, size, align_corners=align)
            check(gd.detach(), gc.detach())
            g = ptl.tensor(rng.standard_normal(tuple(gc.shape))).to(dtype)
            gc.backward(g)
            gd.backward(g.cuda())
            check_grads([tc], [td])


@pytest.mark.parametrize("dtype", FLOATS + [ptl.int64], ids=str)
def test_embedding_and_its_backward_match_the_cpu(dtype):
    rng = np.random.default_rng(9)
    F = ptl.nn.functional
    for V, D, L in ((10, 3, (7,)), (1000, 64, (8, 50)), (5, 700, (300,)), (50000, 16, (2, 9)),
                    (4, 5, (0,))):
        w = ptl.tensor(rng.standard_normal((V, D)) * 3).to(dtype)
        idx = ptl.tensor(rng.integers(0, min(V, 6), size=L))   # repeated rows
        for pad, scale in ((None, False), (1, False), (None, True), (2, True)):
            if dtype == ptl.int64:
                check(F.embedding(idx.cuda(), w.cuda(), padding_idx=pad),
                      F.embedding(idx, w, padding_idx=pad))
                continue
            wc, wd = cpu_and_device_leaves(w)
            oc = F.embedding(idx, wc, padding_idx=pad, scale_grad_by_freq=scale)
            od = F.embedding(idx.cuda(), wd, padding_idx=pad, scale_grad_by_freq=scale)
            check(od.detach(), oc.detach())
            g = ptl.tensor(rng.standard_normal(tuple(oc.shape))).to(dtype)
            oc.backward(g)
            od.backward(g.cuda())
            check_grads([wc], [wd])
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(ptl.tensor([0, 9]).cuda(), ptl.randn(4, 2).cuda())


def gemm_check(cuda_result, cpu_result, k):
    """A product against the CPU kernel's: float16 and bfloat16 round the float32 sums, and
    both sides' summation orders differ, so the tolerance grows with sqrt(k)."""
    assert cuda_result.device.type == "cuda" and cuda_result.dtype == cpu_result.dtype
    want = as_np(cpu_result)
    tol = TOL[cpu_result.dtype]
    scale = np.sqrt(max(k, 1)) * (np.abs(want).max() if want.size else 1.0) + 1.0
    np.testing.assert_allclose(as_np(cuda_result), want, rtol=tol, atol=tol * scale)


def gemm_operand(rng, shape, dtype, transposed):
    base = rng.standard_normal(shape)
    if transposed:
        return ptl.tensor(np.swapaxes(base, -1, -2).copy()).to(dtype).transpose(-1, -2)
    return ptl.tensor(base).to(dtype)


GEMM_SHAPES = [(1, 1, 1), (63, 65, 15), (64, 64, 16), (65, 63, 33), (129, 130, 17),
               (300, 257, 100), (7, 3, 0), (0, 5, 4)]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_matrix_products_match_the_cpu(dtype, ta, tb):
    rng = np.random.default_rng(7)
    for m, n, k in GEMM_SHAPES:
        a, b = gemm_operand(rng, (m, k), dtype, ta), gemm_operand(rng, (k, n), dtype, tb)
        c = gemm_operand(rng, (n,), dtype, False)
        gemm_check(ptl.mm(a.cuda(), b.cuda()), ptl.mm(a, b), k)
        gemm_check(ptl.addmm(c.cuda(), a.cuda(), b.cuda(), beta=0.5, alpha=2.0),
                   ptl.addmm(c, a, b, beta=0.5, alpha=2.0), k)
        for batch in (0, 1, 3):
            ba = gemm_operand(rng, (batch, m, k), dtype, ta)
            bb = gemm_operand(rng, (batch, k, n), dtype, tb)
            bc = gemm_operand(rng, (batch, m, n), dtype, False)
            gemm_check(ptl.bmm(ba.cuda(), bb.cuda()), ptl.bmm(ba, bb), k)
            gemm_check(ptl.baddbmm(bc.cuda(), ba.cuda(), bb.cuda(), beta=-1.0, alpha=0.5),
                       ptl.baddbmm(bc, ba, bb, beta=-1.0, alpha=0.5), k)


def gemm_aligned_operand(rng, shape, dtype, transposed, offset=False):
    """A random operand whose rows in memory are padded to a multiple of 8 elements, so that
    it takes the fast paths of Note [CUDA GEMM plan] (simt_vector, mma) whatever its shape;
    with offset, the same values one element past a 16-byte boundary (the fallback)."""
    base = rng.standard_normal(shape)
    mem = np.swapaxes(base, -1, -2) if transposed else base
    inner = mem.shape[-1]
    buf = np.zeros(mem.shape[:-1] + (-(-inner // 8) * 8,))
    buf[..., :inner] = mem
    flat = ptl.tensor(np.concatenate([[0.0], buf.ravel()])).to(dtype)
    rows = flat[1:] if offset else flat[1:].clone()
    t = rows.view(buf.shape)[..., :inner]
    return t.transpose(-1, -2) if transposed else t


def gemm_check_batched(ba, bb, bc, k):
    """bmm and baddbmm (beta -1, alpha 0.5) of CPU operands on the device against the CPU."""
    gemm_check(ptl.bmm(ba.cuda(), bb.cuda()), ptl.bmm(ba, bb), k)
    gemm_check(ptl.baddbmm(bc.cuda(), ba.cuda(), bb.cuda(), beta=-1.0, alpha=0.5),
               ptl.baddbmm(bc, ba, bb, beta=-1.0, alpha=0.5), k)


GEMM_EDGES = [1, 15, 16, 17, 127, 128, 129, 255, 256, 257]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_gemm_fast_paths_across_tile_edges_match_the_cpu(dtype):
    """The fast paths (float32 / float64 simt_vector, float16 / bfloat16 mma) at and across
    every tile edge of m, n and k (each value of GEMM_EDGES in each dim), every transpose of A
    and B, batches 1 and 3 (0 below), alpha and beta, and the same operands one element off their
    16-byte alignment (the strided fallback), against the CPU."""
    rng = np.random.default_rng(9)
    shapes = [(GEMM_EDGES[i], GEMM_EDGES[(i + 3) % 10], GEMM_EDGES[(i + 7) % 10])
              for i in range(10)]
    for m, n, k in shapes:
        for ta, tb in [(False, False), (True, False), (False, True), (True, True)]:
            for offset in (False, True):
                a = gemm_aligned_operand(rng, (m, k), dtype, ta, offset)
                b = gemm_aligned_operand(rng, (k, n), dtype, tb, offset)
                c = gemm_operand(rng, (m, n), dtype, False)
                gemm_check(ptl.mm(a.cuda(), b.cuda()), ptl.mm(a, b), k)
                gemm_check(ptl.addmm(c.cuda(), a.cuda(), b.cuda(), beta=0.5, alpha=-1.5),
                           ptl.addmm(c, a, b, beta=0.5, alpha=-1.5), k)
            for batch in (1, 3):
                gemm_check_batched(gemm_aligned_operand(rng, (batch, m, k), dtype, ta),
                                   gemm_aligned_operand(rng, (batch, k, n), dtype, tb),
                                   gemm_operand(rng, (batch, m, n), dtype, False), k)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_gemm_fast_paths_batch_zero_match_the_cpu(dtype):
    rng = np.random.default_rng(10)
    for ta, tb in [(False, False), (True, False), (False, True), (True, True)]:
        gemm_check_batched(gemm_aligned_operand(rng, (0, 17, 16), dtype, ta),
                           gemm_aligned_operand(rng, (0, 16, 129), dtype, tb),
                           gemm_operand(rng, (0, 17, 129), dtype, False), 16)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_matmul_linear_mv_dot_match_the_cpu(dtype):
    rng = np.random.default_rng(8)
    a = gemm_operand(rng, (2, 3, 33, 70), dtype, True)
    b = gemm_operand(rng, (3, 70, 65), dtype, False)
    gemm_check(ptl.matmul(a.cuda(), b.cuda()), ptl.matmul(a, b), 70)
    x, w = gemm_operand(rng, (9, 70), dtype, False), gemm_operand(rng, (66, 70), dtype, False)
    bias, v = gemm_operand(rng, (66,), dtype, False), gemm_operand(rng, (70,), dtype, False)
    linear = ptl.nn.functional.linear
    gemm_check(linear(x.cuda(), w.cuda(), bias.cuda()), linear(x, w, bias), 70)
    gemm_check(ptl.mv(w.cuda(), v.cuda()), ptl.mv(w, v), 70)
    gemm_check(ptl.dot(v.cuda(), v.cuda()), ptl.dot(v, v), 70)


def test_matrix_products_repeat_exactly_and_refuse_integers():
    a, b = ptl.randn(513, 300).cuda(), ptl.randn(300, 257).cuda()
    assert ptl.equal(ptl.mm(a, b).cpu(), ptl.mm(a, b).cpu())
    with pytest.raises(NotImplementedError, match="\"addmm_cuda\" not implemented for 'Long'"):
        ptl.mm(ptl.ones((2, 2), dtype=ptl.int64).cuda(), ptl.ones((2, 2), dtype=ptl.int64).cuda())


# ---- random fills (src/cuda/random.cu), dropout and the fused optimizer steps (optim.cu) ----

def raw(t):
    """t's bytes in row-major order (on the host)."""
    dense = ptl.empty(t.numel(), dtype=t.dtype).copy_(t.cpu().reshape(-1))
    return dense.view(ptl.uint8).numpy().tobytes()


# (name, dtypes, fill, exact): exact fills need no libm and must give the CPU's bytes (the
# normals of every float dtype: Note [Scalar twins of vector formulas]); the others call
# log/exp/sin/cos/tan, whose device versions are within an ulp or two of glibc's (Note [CUDA
# random fills])
RANDOM_FILLS = [
    ("uniform_", FLOATS, lambda t: t.uniform_(-2.0, 3.0), True),
    ("uniform_unit", FLOATS, lambda t: t.uniform_(), True),
    ("bernoulli_float", ALL, lambda t: t.bernoulli_(0.3), True),
    ("bernoulli_tensor", ALL,
     lambda t: t.bernoulli_(ptl.linspace(0, 1, t.shape[-1], device=t.device)), True),
    ("random_", ALL, lambda t: t.random_(), True),
    ("random_to", ALL[1:], lambda t: t.random_(100), True),
    ("random_from_to", ALL[1:], lambda t: t.random_(3, 90), True),
    ("random_wide", [ptl.int64], lambda t: t.random_(-5, 2 ** 40), True),
    ("rand_like", FLOATS, lambda t: ptl.rand_like(t), True),
    ("randint_like", ALL[1:], lambda t: ptl.randint_like(t, 3, 50), True),
    ("bernoulli_p", FLOATS, lambda t: ptl.bernoulli(t, 0.75), True),
    ("normal_", FLOATS, lambda t: t.normal_(0.5, 2.0), True),
    ("randn_like", FLOATS, lambda t: ptl.randn_like(t), True),
    ("log_normal_", FLOATS, lambda t: t.log_normal_(0.1, 0.5), False),
    ("exponential_", FLOATS, lambda t: t.exponential_(1.5), False),
    ("cauchy_", FLOATS, lambda t: t.cauchy_(0.0, 2.0), False),
    ("geometric_", FLOATS + ALL[1:6], lambda t: t.geometric_(0.3), False),
    ("normal_tensor_tensor", FLOATS,
     lambda t: ptl.normal(t.fill_(-1.0), ptl.linspace(0, 2, t.shape[-1], device=t.device)),
     False),
    ("poisson", [ptl.float32, ptl.float64], lambda t: ptl.poisson(t.fill_(3.5)), False),
    ("poisson_large", [ptl.float64], lambda t: ptl.poisson(t.fill_(40.0)), False),
    ("standard_gamma", [ptl.float32, ptl.float64], lambda t: ptl._standard_gamma(t.fill_(0.7)),
     False),
]
# rejection samplers: a libm ulp may flip an acceptance now and then, changing that draw
MOSTLY = ("geometric_", "poisson", "poisson_large", "standard_gamma")
RANDOM_CASES = [(n, d, f, e) for n, ds, f, e in RANDOM_FILLS for d in ds]


@pytest.mark.parametrize("name,dtype,fill,exact", RANDOM_CASES,
                         ids=[f"{n}-{d}" for n, d, _, _ in RANDOM_CASES])
def test_random_fills_give_the_cpu_draws_for_the_same_seed(name, dtype, fill, exact):
    for shape, view in (((1,), None), ((4099,), None), ((129, 31), "t"), ((2 * 1001,), "step")):
        def make(device):
            t = ptl.empty(shape, dtype=dtype, device=device)
            return t.t() if view == "t" else t[::2] if view == "step" else t
        ptl.manual_seed(11)
        cpu = fill(make("cpu"))
        cpu_state = ptl.get_rng_state()
        ptl.manual_seed(11)
        dev = fill(make("cuda"))
        assert dev.device.type == "cuda"
        # the device drew from its own generator, seeded alike: the same offset after it,
        # and the CPU generator untouched (Note [CUDA generators])
        assert ptl.equal(ptl.cuda.get_rng_state(), cpu_state), "the generator's offset"
        assert ptl.get_rng_state()[8:].sum().item() == 0, "the CPU generator drew"
        if exact:
            assert raw(dev) == raw(cpu), (name, dtype, shape, view)
        elif name in MOSTLY:   # geometric_: the ceil of a libm quotient, rarely one apart
            a, b = as_np(dev).astype(np.float64), as_np(cpu).astype(np.float64)
            close = np.abs(a - b) <= TOL.get(dtype, 0) * (1 + np.abs(b))
            assert close.mean() > 0.99, (name, shape, close.mean())
        else:
            check(dev, cpu)


def test_random_fill_errors_are_pytorchs_cuda_messages():
    with pytest.raises(NotImplementedError,
                       match="\"normal_kernel_cuda\" not implemented for 'Int'"):
        ptl.empty(4, dtype=ptl.int32, device="cuda").normal_()
    with pytest.raises(NotImplementedError,
                       match="\"bernoulli_tensor_cuda_p_\" not implemented for 'Long'"):
        ptl.empty(4, device="cuda").bernoulli_(ptl.ones(4, dtype=ptl.int64, device="cuda"))
    with pytest.raises(NotImplementedError, match="\"check_uniform_bounds\" not implemented"):
        ptl.empty(4, dtype=ptl.int64, device="cuda").uniform_()
    with pytest.raises(RuntimeError, match="bernoulli_ expects p to be in \\[0, 1\\]"):
        ptl.empty(4, device="cuda").bernoulli_(1.5)
    with pytest.raises(RuntimeError, match="Expected p_in >= 0 && p_in <= 1"):
        ptl.empty(4, device="cuda").bernoulli_(ptl.full((4,), 2.0, device="cuda"))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_dropout_draws_the_cpu_mask_for_the_same_seed(dtype):
    """native_dropout (F.dropout's CUDA path, as PyTorch's) and its backward give the CPU
    op's bytes; F.dropout in place and dropout2d (the mask and div_ path) the CPU's."""
    import pytorchlite.nn.functional as F
    x = ptl.randn(37, 129).to(dtype)
    for p, train in ((0.3, True), (0.9, None), (0.5, False), (1.0, True)):
        ptl.manual_seed(3)
        cpu = ptl.native_dropout(x.t(), p, train)
        ptl.manual_seed(3)
        dev = ptl.native_dropout(x.cuda().t(), p, train)
        assert dev[0].device.type == "cuda"
        assert raw(dev[0]) == raw(cpu[0]) and raw(dev[1]) == raw(cpu[1]), (p, train)
        bw = ptl.ops.aten.native_dropout_backward
        assert raw(bw(x.cuda().t(), dev[1], 2.5)) == raw(bw(x.t(), cpu[1], 2.5))
    ptl.manual_seed(3)
    cpu = ptl.native_dropout(x, 0.3, True)[0]
    ptl.manual_seed(3)
    assert raw(F.dropout(x.cuda(), 0.3)) == raw(cpu)
    for fn in (lambda t: F.dropout(t.clone(), 0.3, inplace=True),
               lambda t: F.dropout2d(t.reshape(37, 3, 43), 0.5)):
        ptl.manual_seed(3)
        cpu = fn(x)
        ptl.manual_seed(3)
        dev = fn(x.cuda())
        assert dev.device.type == "cuda" and raw(dev) == raw(cpu)


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64], ids=str)
def test_fused_optimizer_steps_give_the_cpu_bits(dtype):
    aten = ptl.ops.aten
    rng = np.random.default_rng(0)
    for n in (1, 1000, 70001):
        def r():
            return ptl.tensor(rng.standard_normal(n), dtype=ptl.float64).to(dtype)
        cpu = [r(), r(), ptl.zeros(n, dtype=dtype), ptl.zeros(n, dtype=dtype),
               ptl.zeros(n, dtype=dtype), ptl.empty(n, dtype=dtype)]
        dev = [t.cuda() for t in cpu]
        for step in range(1, 4):
            g = r()
            for (p, _, m, v, vmax, buf), grad in ((cpu, g), (dev, g.cuda())):
                aten._fused_sgd_step_(p, grad, buf, 0.05, 0.9, 0.1, 1e-2, step == 2, False,
                                      step == 1)
                aten._fused_adam_step_(p, grad, m, v, vmax, float(step), 1e-3, 0.9, 0.999,
                                       1e-2, 1e-8, step == 3, step == 2)
                aten._fused_adam_step_(p, grad, m, v, None, float(step), 1e-3, 0.9, 0.999,
                                       0.0, 1e-8, False, False)
        for a, b in zip(dev, cpu):
            assert raw(a) == raw(b), n
    with pytest.raises(RuntimeError, match="grad must be on the device of self"):
        aten._fused_sgd_step_(ptl.ones(4).cuda(), ptl.ones(4), None, 0.1, 0.0, 0.0, 0.0, False,
                              False, False)


RNN_CASES = [("RNN", {}), ("RNN", {"nonlinearity": "relu", "bias": False}), ("LSTM", {}),
             ("LSTM", {"proj_size": 3, "num_layers": 2}), ("GRU", {}),
             ("GRU", {"bidirectional": True, "batch_first": True}),
             ("LSTM", {"bidirectional": True})]


@pytest.mark.parametrize("name,kwargs", RNN_CASES)
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64], ids=str)
def test_recurrent_layers_and_their_gradients_match_the_cpu(name, kwargs, dtype):
    """nn.RNN / LSTM / GRU on the device (Note [CUDA recurrent layer]: the device GEMM and
    one cell launch a step) against the CPU: outputs, final states and the gradients of the
    input, the initial states and every parameter, on a strided input with given states
    and on a packed sequence whose rows stop at different steps."""
    rng = np.random.default_rng(21)
    ptl.manual_seed(0)
    cpu = getattr(ptl.nn, name)(6, 8, **kwargs).to(dtype)
    dev = getattr(ptl.nn, name)(6, 8, **kwargs).to(dtype)
    dev.load_state_dict(cpu.state_dict())
    dev = dev.cuda()
    dirs = 2 if kwargs.get("bidirectional") else 1
    layers = kwargs.get("num_layers", 1) * dirs
    hsize = kwargs.get("proj_size", 8)
    wide = ptl.tensor(rng.standard_normal((7, 5, 12))).to(dtype)
    h0 = ptl.tensor(rng.standard_normal((layers, 5, hsize)) * 0.5).to(dtype)
    c0 = ptl.tensor(rng.standard_normal((layers, 5, 8)) * 0.5).to(dtype)

    def run(mod, device, packed):
        x = wide[:, :, ::2].to(device).detach().requires_grad_(True)   # strided
        if kwargs.get("batch_first"):
            x = x.transpose(0, 1).detach().requires_grad_(True)
        states = [h0.to(device).detach().requires_grad_(True)]
        if name == "LSTM":
            states.append(c0.to(device).detach().requires_grad_(True))
        if packed:
            inp = ptl.nn.utils.rnn.pack_padded_sequence(x, [7, 5, 5, 2, 1],
                                                        batch_first=bool(kwargs.get("batch_first")))
        else:
            inp = x
        out, st = mod(inp, tuple(states) if name == "LSTM" else states[0])
        out = out.data if packed else out
        st = st if isinstance(st, tuple) else (st,)
        outs = [out] + list(st)
        loss = sum((o * (i + 1)).sum() for i, o in enumerate(outs))
        leaves = [x] + states + list(mod.parameters())
        return [o.detach() for o in outs] + list(ptl.autograd.grad(loss, leaves))

    for packed in (False, True):
        for d, c in zip(run(dev, "cuda", packed), run(cpu, "cpu", packed)):
            assert d.device.type == "cuda"
            assert d.shape == c.shape and d.dtype == c.dtype
            tol = 2e-4 if dtype == ptl.float32 else 1e-11
            np.testing.assert_allclose(as_np(d), as_np(c), rtol=tol, atol=tol)
