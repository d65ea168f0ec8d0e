"""The complex kernels of the unary pointwise math ops, silu, silu_backward and the logical ops
(src/aten/native/complex_unary.c, Note [Complex elementwise math]), soft_margin_loss's and
logaddexp's complex composites and the complex refusals of logit, xlogy, xlog1py, glu,
logaddexp2, fmax and fmin:
values against NumPy's complex128 on random shapes and layouts (0-dim, size-0, broadcast,
non-contiguous), accuracy near 0 against mpmath, branch cuts, infinities and NaNs against
torch 2.13, in-place and out= forms, and the errors PyTorch raises."""
import math
import re

import mpmath
import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn.functional as F
from helpers import assert_close, assert_raises_like_torch, num_threads, torch, torch_ref
from test_complex import crandn

C64, C128 = ptl.complex64, ptl.complex128
SHAPES = [(), (0,), (5,), (3, 4), (0, 3), (2, 1, 3)]
LAYOUTS = ["contiguous", "transposed", "sliced", "expanded"]


def _sigmoid(z):
    return 1 / (1 + np.exp(-z))


# op name -> (pytorchlite function, NumPy complex128 reference)
UNARY = {
    "sin": (ptl.sin, np.sin), "cos": (ptl.cos, np.cos), "tan": (ptl.tan, np.tan),
    "sinh": (ptl.sinh, np.sinh), "cosh": (ptl.cosh, np.cosh), "tanh": (ptl.tanh, np.tanh),
    "asin": (ptl.asin, np.arcsin), "acos": (ptl.acos, np.arccos),
    "atan": (ptl.atan, np.arctan), "asinh": (ptl.asinh, np.arcsinh),
    "acosh": (ptl.acosh, np.arccosh), "atanh": (ptl.atanh, np.arctanh),
    "sigmoid": (ptl.sigmoid, _sigmoid), "rsqrt": (ptl.rsqrt, lambda z: 1 / np.sqrt(z)),
    "log1p": (ptl.log1p, lambda z: np.log(1 + z)), "expm1": (ptl.expm1, np.expm1),
    "exp2": (ptl.exp2, np.exp2), "log2": (ptl.log2, np.log2), "log10": (ptl.log10, np.log10),
    "square": (ptl.square, lambda z: z * z),
    "sinc": (ptl.sinc, lambda z: np.sinc(z)),
    "silu": (F.silu, lambda z: z * _sigmoid(z)),
    "tanhshrink": (F.tanhshrink, lambda z: z - np.tanh(z)),
    "special.expit": (ptl.special.expit, _sigmoid),
    "nn.Tanh": (ptl.nn.Tanh(), np.tanh), "nn.Sigmoid": (ptl.nn.Sigmoid(), _sigmoid),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", [C64, C128], ids=str)
def test_values_match_numpy(name, dtype):
    fn, ref = UNARY[name]
    for shape in SHAPES:
        for layout in LAYOUTS:
            t, a = crandn(shape, dtype, layout, seed=len(shape))
            assert_close(fn(t), ref(a), dtype=dtype)


@pytest.mark.parametrize("name", ["sin", "tanh", "asinh", "sigmoid", "log1p", "exp2", "square"])
def test_in_place_and_out_forms(name):
    fn = getattr(ptl, name)
    t, a = crandn((3, 4), C128, seed=1)
    want = fn(t)
    y = t.clone()
    assert getattr(y, name + "_")() is y
    assert_close(y, want.numpy(), dtype=C128, rtol=0, atol=0)
    out = ptl.empty(3, 4, dtype=C128)
    assert fn(t, out=out) is out
    assert_close(out, want.numpy(), rtol=0, atol=0)
    out64 = ptl.empty(0, dtype=C64)   # resized, the result rounded to complex64
    fn(t, out=out64)
    assert_close(out64, want.numpy().astype(np.complex64), dtype=C64, rtol=0, atol=0)
    x = ptl.tensor([0.25, -0.5, 2.0], dtype=ptl.float64)   # a real input, a complex out=
    outc = ptl.empty(3, dtype=C128)
    fn(x, out=outc)
    assert_close(outc, fn(x).numpy().astype(np.complex128), rtol=0, atol=0)


# name -> NumPy's real function: outside its real domain it gives nan
REAL_DOMAIN = {"log2": np.log2, "log10": np.log10, "log": np.log, "sqrt": np.sqrt,
               "rsqrt": lambda x: 1 / np.sqrt(x), "acosh": np.arccosh, "asin": np.arcsin,
               "log1p": np.log1p, "atanh": np.arctanh, "sin": np.sin, "exp": np.exp,
               "reciprocal": np.reciprocal, "square": np.square}


@pytest.mark.parametrize("name", sorted(REAL_DOMAIN))
@pytest.mark.parametrize("dtype", [ptl.int32, ptl.float32, ptl.float64], ids=str)
def test_a_real_input_computes_in_its_real_dtype_into_a_complex_out(name, dtype):
    """PyTorch computes in the input's (floating) dtype and casts into a complex out=
    tensor: log2(-3) is nan + 0i there, not log2(3) + i pi / ln 2 (and sqrt, log, exp,
    reciprocal computed at all)."""
    a = np.array([[-3, -1, 0], [1, 2, 5]])
    x = ptl.tensor(a).to(dtype).t()
    for out_dtype in (C64, C128):
        out = ptl.empty(0, dtype=out_dtype)
        with np.errstate(all="ignore"):
            want = REAL_DOMAIN[name](a.T.astype(np.float64 if dtype == ptl.float64 else
                                                np.float32))
        assert getattr(ptl, name)(x, out=out) is out
        assert_close(out, want.astype(np.complex128), dtype=out_dtype, rtol=1e-6)


@pytest.mark.parametrize("name", ["sin", "sigmoid"])
def test_out_of_a_real_dtype_is_refused(name):
    assert_raises_like_torch(
        lambda lib: getattr(lib, name)(lib.ones(2, dtype=lib.complex64), out=lib.empty(2)),
        RuntimeError, "result type ComplexFloat can't be cast to the desired output type Float")


def test_large_inputs_split_over_threads_give_the_same_values():
    t, a = crandn((3, 70001), C128, "transposed", seed=3)
    for name in ("tanh", "log1p", "sigmoid"):
        fn, ref = UNARY[name]
        with num_threads(1):
            one = fn(t).numpy()
        with num_threads(2):
            two = fn(t).numpy()
        assert np.array_equal(one, two)
        assert_close(ptl.tensor(two), ref(a))


# ---- accuracy ----

def _mp(fn, z):
    with mpmath.workdps(40):
        return complex(fn(mpmath.mpc(z.real, z.imag)))


def _max_part_error(got, want):
    """The largest error of either part, in units of that part's spacing (ulp)."""
    worst = 0.0
    for g, w in zip(got, want):
        for gp, wp in ((g.real, w.real), (g.imag, w.imag)):
            worst = max(worst, abs(gp - wp) / np.spacing(abs(wp)) if wp else abs(gp))
    return worst


def test_log1p_and_expm1_keep_their_accuracy_near_zero():
    # tiny values, and values on the circle |1 + z| = 1 where log|1 + z| cancels
    theta = np.array([1e-3, 0.03, 0.3, 1.0, 2.0])
    circle = np.exp(1j * theta) - 1 + 1e-12 * (1 + 1j)
    tiny = np.array([1e-10 + 1e-10j, -3e-9 + 2e-12j, 1e-300 - 1e-300j, 2e-6 - 5e-7j])
    z = np.concatenate([circle, tiny, -tiny])
    got = ptl.log1p(ptl.tensor(z, dtype=C128)).numpy()
    assert _max_part_error(got, [_mp(mpmath.log1p, v) for v in z]) < 8
    got = ptl.expm1(ptl.tensor(z, dtype=C128)).numpy()
    assert _max_part_error(got, [_mp(mpmath.expm1, v) for v in z]) < 8


def test_complex64_rounds_the_complex128_result_once():
    t, a = crandn((2000,), C64, seed=5)
    for name in ("sin", "tanh", "acos", "log1p", "sigmoid", "exp2"):
        fn, _ = UNARY[name]
        want = fn(ptl.tensor(a, dtype=C128)).numpy().astype(np.complex64)
        assert np.array_equal(fn(t).numpy(), want)


def test_large_real_parts_do_not_overflow_to_nan():
    z = ptl.tensor([800 + 1j, -800 + 1j, 800 - 2j, -800 - 2j, 1e308 + 0j], dtype=C128)
    assert_close(ptl.tanh(z), [1 + 0j, -1 + 0j, 1 - 0j, -1 - 0j, 1 + 0j], rtol=0, atol=0)
    s = ptl.sigmoid(z).numpy()
    assert np.isfinite(s).all() and np.allclose(s, [1, 0, 1, 0, 1], rtol=0, atol=0)
    assert np.isfinite(ptl.sigmoid(z.to(C64)).numpy()).all()
    assert ptl.expm1(ptl.tensor([1000 + 0j], dtype=C128)).item() == complex(math.inf, 0)


# ---- infinities, NaNs and branch cuts against torch ----

INF, NAN = math.inf, math.nan
SPECIAL = [complex(x, y) for x in (0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 30.0, -30.0,
                                   800.0, -800.0, INF, -INF, NAN)
           for y in (0.0, -0.0, 0.5, -2.0, 2.0, 800.0, INF, -INF, NAN)]

# Where PyTorch's answer is an accident of its implementation (Note [Complex elementwise
# math]): its 1 / (1 + e^-z) is NaN for a large negative real part, its expm1 and sigmoid
# multiply inf by 0 where the imaginary part is 0 or the real part infinite, its 1 / z is NaN
# for an infinite z, and its log1p of an infinite part with a NaN one is NaN (C99's clog and
# NumPy's log give inf + NaN j).
DELIBERATE = {
    "sigmoid": lambda z: z.real < -700 or math.isinf(z.real) or math.isinf(z.imag),
    "expm1": lambda z: math.isinf(z.real) or math.isinf(z.imag) or abs(z.real) > 700 or
    math.isnan(z.real),
    "log1p": lambda z: (math.isinf(z.real) or math.isinf(z.imag)) and
    (math.isnan(z.real) or math.isnan(z.imag)),
    "silu": lambda z: z.real < -700 or math.isinf(z.real) or math.isinf(z.imag),
    "exp2": lambda z: math.isinf(z.real) or math.isinf(z.imag) or abs(z.real) > 1000,
    "rsqrt": lambda z: math.isinf(z.real) or math.isinf(z.imag),
}


@torch_ref
@pytest.mark.parametrize("name", ["sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos",
                                  "atan", "asinh", "acosh", "atanh", "sigmoid", "rsqrt",
                                  "log1p", "expm1", "exp2", "log2", "log10", "square", "silu"])
def test_special_values_match_torch(name):
    skip = DELIBERATE.get(name, lambda z: False)
    zs = [z for z in SPECIAL if not skip(z)]
    lib_fn = (F.silu, torch.nn.functional.silu) if name == "silu" else \
        (getattr(ptl, name), getattr(torch, name))
    got = lib_fn[0](ptl.tensor(zs, dtype=C128)).numpy()
    want = lib_fn[1](torch.tensor(zs, dtype=torch.complex128)).numpy()
    for z, g, w in zip(zs, got, want):
        for gp, wp in ((g.real, w.real), (g.imag, w.imag)):
            ok = (np.isnan(gp) and np.isnan(wp)) or gp == wp or \
                abs(gp - wp) <= 1e-13 * abs(wp)
            assert ok, f"{name}({z}) = {g}, torch {w}"


def test_signed_zeros_choose_the_side_of_a_branch_cut():
    above = ptl.tensor([2 + 0j, -2 + 0j], dtype=C128)
    below = ptl.tensor([complex(2, -0.0), complex(-2, -0.0)], dtype=C128)
    assert_close(ptl.asin(above), np.arcsin(above.numpy()), rtol=0, atol=1e-15)
    assert_close(ptl.asin(below), np.arcsin(below.numpy()), rtol=0, atol=1e-15)
    assert ptl.asin(above)[0].imag.item() > 0 > ptl.asin(below)[0].imag.item()
    axis = ptl.tensor([complex(0.0, 2), complex(-0.0, 2)], dtype=C128)
    assert_close(ptl.asinh(axis), np.arcsinh(axis.numpy()), rtol=0, atol=1e-15)
    assert ptl.log1p(ptl.tensor([complex(-3, 0.0), complex(-3, -0.0)], dtype=C128)).imag \
        .tolist() == [math.pi, -math.pi]


# ---- nan_to_num and the logical ops ----

def test_nan_to_num_replaces_each_part():
    z = np.array([complex(NAN, 1), complex(2, NAN), complex(INF, -INF), complex(-INF, INF),
                  complex(NAN, NAN), 3 - 4j])
    for dtype, big in ((C64, np.finfo(np.float32).max), (C128, np.finfo(np.float64).max)):
        t = ptl.tensor(z, dtype=dtype)
        want = np.array([1j, 2, big - big * 1j, -big + big * 1j, 0, 3 - 4j])
        assert_close(ptl.nan_to_num(t), want, dtype=dtype, rtol=0, atol=0)
        want = np.array([7 + 1j, 2 + 7j, 5 - 6j, -6 + 5j, 7 + 7j, 3 - 4j])
        assert_close(ptl.nan_to_num(t, nan=7.0, posinf=5.0, neginf=-6.0), want, rtol=0, atol=0)
        y = t.clone()
        y.nan_to_num_(nan=7.0, posinf=5.0, neginf=-6.0)
        assert_close(y, want, rtol=0, atol=0)
    with pytest.raises(RuntimeError, match="nan_to_num: dtype of out: ComplexDouble should be "
                                           "same as input: ComplexFloat"):
        ptl.nan_to_num(ptl.ones(2, dtype=C64), out=ptl.empty(2, dtype=C128))


@pytest.mark.parametrize("name", ["logical_not", "logical_and", "logical_or", "logical_xor"])
def test_logical_ops_read_either_part(name):
    a = np.array([0, 1j, 2, complex(0.0, -0.0), NAN, 3 + 4j])
    b = np.array([0, 0, 5j, 1, 0, 2])
    ref = getattr(np, name)
    unary = name == "logical_not"
    ta, tb = ptl.tensor(a, dtype=C64), ptl.tensor(b, dtype=C128)
    fn = getattr(ptl, name)
    want = ref(a) if unary else ref(a, b)
    assert_close(fn(ta) if unary else fn(ta, tb), want, dtype=ptl.bool)
    if not unary:   # a real operand, and broadcasting
        assert_close(fn(ta, ptl.tensor(b.real)), ref(a, b.real), dtype=ptl.bool)
        assert_close(fn(ta[:, None], tb[:2]), ref(a[:, None], b[:2]), dtype=ptl.bool)
    y = ta.clone()   # in place: the bools written as complex numbers
    getattr(y, name + "_")(*(() if unary else (tb,)))
    assert_close(y, want.astype(np.complex64), dtype=C64)
    out = ptl.empty(0, dtype=C128)   # a real input into a complex out=, resized
    x = ptl.tensor(a.real)
    fn(x, out=out) if unary else fn(x, ptl.tensor(b.real), out=out)
    assert_close(out, (ref(a.real) if unary else ref(a.real, b.real)).astype(np.complex128))


# ---- logaddexp ----

def _logaddexp_ref(a, b):
    hi, lo = np.where(a.real < b.real, b, a), np.where(a.real < b.real, a, b)
    return hi + np.log1p(np.exp(lo - hi))


@pytest.mark.parametrize("dtype", [C64, C128], ids=str)
def test_logaddexp_matches_its_formula(dtype):
    for shapes in (((3, 4), (3, 4)), ((2, 1, 3), (4, 1)), ((), (5,)), ((0, 3), (3,))):
        ta, a = crandn(shapes[0], dtype, seed=1)
        tb, b = crandn(shapes[1], dtype, "sliced" if shapes[1] else "contiguous", seed=2)
        assert_close(ptl.logaddexp(ta, tb), _logaddexp_ref(a, b), dtype=dtype)
    x = ptl.tensor([1.0, -2.0], dtype=ptl.float64)   # a real operand joins in complex128
    assert_close(ptl.logaddexp(x, ptl.tensor([1j, 2 + 0j], dtype=C64)),
                 _logaddexp_ref(np.array([1.0, -2.0]), np.array([1j, 2 + 0j])), dtype=C128)
    big = ptl.tensor([1000 + 1j], dtype=C128)   # no overflow: 1000 + log 2 + 1j
    assert_close(ptl.logaddexp(big, big), [1000 + math.log(2) + 1j], rtol=1e-15)


@torch_ref
def test_logaddexp_special_values_match_torch():
    vals = [1 + 2j, complex(-INF, 0), complex(-INF, 1), complex(INF, 0), complex(INF, 2),
            complex(NAN, 0), complex(0, NAN), 1e308 + 1j, -3 - 1j]
    a = [u for u in vals for _ in vals]
    b = [v for _ in vals for v in vals]
    got = ptl.logaddexp(ptl.tensor(a, dtype=C128), ptl.tensor(b, dtype=C128)).numpy()
    want = torch.logaddexp(torch.tensor(a, dtype=torch.complex128),
                           torch.tensor(b, dtype=torch.complex128)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-15, equal_nan=True)


# ---- what PyTorch refuses for complex ----

REFUSED = {
    "logit": (lambda lib, z: lib.logit(z), NotImplementedError,
              "\"logit_cpu\" not implemented for 'ComplexFloat'"),
    "logit_eps": (lambda lib, z: lib.special.logit(z, 0.1), NotImplementedError,
                  "\"logit_cpu\" not implemented for 'ComplexFloat'"),
    "xlogy": (lambda lib, z: lib.xlogy(z, z), NotImplementedError,
              "\"xlogy_cpu\" not implemented for 'ComplexFloat'"),
    "xlogy_real": (lambda lib, z: lib.special.xlogy(z.real.double(), z), NotImplementedError,
                   "\"xlogy_cpu\" not implemented for 'ComplexDouble'"),
    "xlogy_number": (lambda lib, z: lib.xlogy(z, 2.0), NotImplementedError,
                     "\"xlogy_cpu\" not implemented for 'ComplexFloat'"),
    "xlog1py": (lambda lib, z: lib.special.xlog1py(z, z), NotImplementedError,
                "\"xlog1py_cpu\" not implemented for 'ComplexFloat'"),
    "glu": (lambda lib, z: lib.nn.functional.glu(z), NotImplementedError,
            "\"glu_cpu\" not implemented for 'ComplexFloat'"),
    "logaddexp2": (lambda lib, z: lib.logaddexp2(z, z), NotImplementedError,
                   "\"logaddexp2_cpu\" not implemented for 'ComplexFloat'"),
    "fmax": (lambda lib, z: lib.fmax(z, z), RuntimeError,
             "fmax not implemented for complex tensors."),
    "fmin": (lambda lib, z: lib.fmin(z, z.real), RuntimeError,
             "fmin not implemented for complex tensors."),
    "trunc": (lambda lib, z: lib.trunc(z), NotImplementedError,
              "trunc is not supported for complex inputs"),
    "relu6": (lambda lib, z: lib.nn.functional.relu6(z), NotImplementedError,
              "clamp is not supported for complex types"),
    "hardtanh_": (lambda lib, z: lib.nn.functional.hardtanh_(z), NotImplementedError,
                  "clamp is not supported for complex types"),
    "copysign": (lambda lib, z: lib.copysign(z, 1.0), NotImplementedError,
                 "\"copysign_cpu\" not implemented for 'ComplexFloat'"),
    "sign": (lambda lib, z: lib.sign(z), NotImplementedError,
             "Unlike NumPy, torch.sign is not intended to support complex numbers."),
    "float_power_": (lambda lib, z: z.float_power_(2), RuntimeError,
                     "the base given to float_power_ has dtype ComplexFloat but the "
                     "operation's result requires dtype ComplexDouble"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refusals_match_torch(name):
    fn, exc, msg = REFUSED[name]
    assert_raises_like_torch(lambda lib: fn(lib, lib.ones(2, 4, dtype=lib.complex64)), exc,
                             msg)


@pytest.mark.parametrize("dtype", [C64, C128], ids=str)
def test_silu_backward_values(dtype):
    """aten.silu_backward(g, x) = g s (1 + x (1 - s)), s = sigmoid(x), unconjugated as
    PyTorch's kernel; a real g promotes."""
    for shape in SHAPES:
        for layout in LAYOUTS:
            x, a = crandn(shape, dtype, layout, seed=len(shape))
            g, b = crandn(shape, dtype, "contiguous", seed=7)
            s = _sigmoid(a)
            want = b * s * (1 + a * (1 - s))
            assert_close(ptl.ops.aten.silu_backward(g, x), want, dtype=dtype)
            assert_close(ptl.ops.aten.silu_backward(g.real.contiguous(), x),
                         b.real * s * (1 + a * (1 - s)), dtype=dtype)


def test_silu_backward_has_no_derivative_for_complex():
    g, _ = crandn((3,), C128, seed=1)
    x, _ = crandn((3,), C128, seed=2)
    y = ptl.ops.aten.silu_backward(g.requires_grad_(), x.requires_grad_())
    with pytest.raises(RuntimeError, match="derivative for aten::silu_backward is not "
                       "implemented"):   # PyTorch has none, for any dtype
        y.abs().sum().backward()


@pytest.mark.parametrize("dtype", [C64, C128], ids=str)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_soft_margin_loss(dtype, reduction):
    x, a = crandn((3, 4), dtype, "transposed", seed=3)
    for target, t in ((ptl.tensor([1.0, -1.0, 1.0, -1.0]), np.array([1.0, -1.0, 1.0, -1.0])),
                      crandn((3, 4), dtype, seed=4)):
        loss = np.log(1 + np.exp(-t * a))
        want = {"mean": loss.mean(), "sum": loss.sum(), "none": loss}[reduction]
        assert_close(F.soft_margin_loss(x, target, reduction=reduction), want, dtype=dtype)
    target = ptl.tensor(t, dtype=C128)
    assert ptl.autograd.gradcheck(lambda z: F.soft_margin_loss(z, target, reduction=reduction),
                                  (ptl.tensor(a, requires_grad=True),))


@torch_ref
def test_soft_margin_loss_dtypes_match_torch():
    """The loss takes the input's dtype (PyTorch computes into it): a complex target of a
    real input is refused, a float64 target of a float32 input gives float32."""
    def calls(lib):
        f, z = lib.tensor([1.0, -1.0, 2.0]), lib.tensor([1 + 1j, 2 - 1j, 3j])
        yield lambda: lib.nn.functional.soft_margin_loss(f, z).dtype
        yield lambda: lib.nn.functional.soft_margin_loss(f.double(), z).dtype
        yield lambda: lib.nn.functional.soft_margin_loss(f, f.double()).dtype
        yield lambda: lib.nn.functional.soft_margin_loss(z, z.to(lib.complex128)).dtype
        yield lambda: lib.nn.functional.soft_margin_loss(z.to(lib.complex128), z).dtype
    for ours, theirs in zip(calls(ptl), calls(torch)):
        try:
            assert str(ours()) == str(theirs())
        except RuntimeError as e:
            with pytest.raises(RuntimeError, match=re.escape(str(e))):
                theirs()
