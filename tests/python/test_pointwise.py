"""The pointwise composites of pytorchlite/_pointwise.py and special.py (deg2rad, rad2deg,
sgn, signbit, isposinf, isneginf, isreal, logaddexp, logaddexp2, float_power, xlogy, sinc,
logit as torch.X and Tensor methods): against NumPy in float64 on every layout, 0-D, size-0
and broadcast inputs; the dtypes PyTorch gives integer and bool inputs; special values
(-0.0, NaN, equal infinities); gradcheck; PyTorch's errors."""
import math

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck
from helpers import LAYOUTS, assert_close, assert_raises_like_torch, make, torch, torch_ref

INF, NAN = math.inf, math.nan
# NumPy warns on the log of 0 and the like that these references compute on purpose
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

SHAPES = [(), (0,), (7,), (3, 4), (2, 0, 3)]


def _np_logaddexp2(a, b):
    return np.logaddexp2(a, b)


UNARY = {
    "deg2rad": np.deg2rad, "rad2deg": np.rad2deg, "sgn": np.sign,
    "signbit": np.signbit, "isposinf": np.isposinf, "isneginf": np.isneginf,
    "isreal": np.isreal, "sinc": np.sinc,
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_against_numpy(name, shape, layout):
    t, a = make(shape, ptl.float64, layout)
    want = UNARY[name](a.astype(np.float64))
    assert_close(getattr(ptl, name)(t), want, rtol=1e-14, atol=1e-15)
    assert_close(getattr(t, name)(), want, rtol=1e-14, atol=1e-15)


def test_special_values():
    x = np.array([0.0, -0.0, INF, -INF, NAN, -NAN, -1.5, 2.0, 1e-300])
    for dtype in (ptl.float16, ptl.bfloat16, ptl.float32, ptl.float64):
        t = ptl.tensor(x).to(dtype)
        assert_close(ptl.signbit(t), np.signbit(x), dtype=ptl.bool)
        assert_close(ptl.isposinf(t), np.isposinf(x), dtype=ptl.bool)
        assert_close(ptl.isneginf(t), np.isneginf(x), dtype=ptl.bool)
    assert_close(ptl.sinc(ptl.tensor(x)), np.sinc(x), rtol=1e-14, atol=1e-15)
    assert_close(ptl.sgn(ptl.tensor([-0.0, 3.0, -2.0])), np.array([0.0, 1.0, -1.0]))


@pytest.mark.parametrize("dtype", [ptl.bool, ptl.uint8, ptl.int8, ptl.int32, ptl.int64])
def test_integer_and_bool_dtypes(dtype):
    t, a = make((5,), dtype, low=-3, high=3)
    f = np.float64
    assert_close(ptl.deg2rad(t), np.deg2rad(a.astype(f)), dtype=ptl.float32)
    assert_close(ptl.rad2deg(t), np.rad2deg(a.astype(f)), dtype=ptl.float32)
    assert_close(ptl.sinc(t), np.sinc(a.astype(f)), dtype=ptl.float32)
    assert_close(ptl.sgn(t), np.sign(a) if dtype != ptl.bool else a, dtype=dtype)
    for name in ("signbit", "isposinf", "isneginf", "isreal"):
        assert_close(getattr(ptl, name)(t), UNARY[name](a), dtype=ptl.bool)
    assert_close(ptl.float_power(t, 2), a.astype(f) ** 2, dtype=ptl.float64)
    assert_close(ptl.xlogy(t, t), np.where(a == 0, 0, a * np.log(a.astype(f))),
                 dtype=ptl.float32)
    assert ptl.logit(t).dtype == ptl.float32


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shapes", [((3, 4), (4,)), ((), (2, 3)), ((0, 3), (3,)), ((5,), ())])
def test_logaddexp_against_numpy(shapes, layout):
    t, a = make(shapes[0], ptl.float64, layout, seed=1, low=-40, high=40)
    u, b = make(shapes[1], ptl.float64, seed=2, low=-40, high=40)
    for name, ref in (("logaddexp", np.logaddexp), ("logaddexp2", np.logaddexp2)):
        assert_close(getattr(ptl, name)(t, u), ref(a, b), dtype=ptl.float64, rtol=1e-14,
                     atol=1e-15)
        assert_close(getattr(t, name)(u), ref(a, b), rtol=1e-14, atol=1e-15)


def test_logaddexp_special_values():
    a = np.array([INF, -INF, INF, NAN, 0.0, 1e308, -1e308, 3.0])
    b = np.array([INF, -INF, -INF, 1.0, -800.0, 1e308, -1e308, NAN])
    for name, ref in (("logaddexp", np.logaddexp), ("logaddexp2", np.logaddexp2)):
        assert_close(getattr(ptl, name)(ptl.tensor(a), ptl.tensor(b)), ref(a, b), rtol=1e-14)
    got = ptl.logaddexp(ptl.tensor([1.0], dtype=ptl.float32), ptl.tensor([2], dtype=ptl.int64))
    assert_close(got, np.logaddexp([1.0], [2.0]), dtype=ptl.float32)
    assert_raises_like_torch(lambda m: m.logaddexp(m.tensor([1]), m.tensor([2])),
                             NotImplementedError, "\"logaddexp_cpu\" not implemented for 'Long'")


def _with_zeros(layout):
    """(tensor, ndarray) of shape (3, 4) in layout, about a third of their values zeros."""
    t, a = make((3, 4), ptl.float64, layout, low=-2, high=2)
    a = np.where(np.abs(a) < 0.7, 0.0, a)
    return t.masked_fill(t.abs() < 0.7, 0.0), a


@pytest.mark.parametrize("layout", LAYOUTS)
def test_xlogy_against_numpy(layout):
    t, a = _with_zeros(layout)
    y = np.array([NAN, 0.0, 2.0, -1.0])
    with np.errstate(all="ignore"):
        want = np.where((a == 0) & ~np.isnan(y), 0.0, a * np.log(y))
    assert_close(ptl.xlogy(t, ptl.tensor(y)), want, dtype=ptl.float64, rtol=1e-14)
    assert_close(t.xlogy(ptl.tensor(y)), want, rtol=1e-14)
    assert_close(ptl.special.xlogy(t, 2.0), np.where(a == 0, 0.0, a * np.log(2.0)), rtol=1e-14)
    assert_close(ptl.xlogy(0, ptl.tensor(y)), np.where(np.isnan(y), NAN, 0.0),
                 dtype=ptl.float64)
    assert_close(ptl.xlogy(ptl.tensor([0.0, 1.0]), NAN), np.array([NAN, NAN]))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_xlog1py_and_ldexp_against_numpy(layout):
    t, a = _with_zeros(layout)
    y = np.array([NAN, -1.0, 2.0, -0.5])
    want = np.where((a == 0) & ~np.isnan(y), 0.0, a * np.log1p(y))
    assert_close(ptl.special.xlog1py(t, ptl.tensor(y)), want, dtype=ptl.float64, rtol=1e-14)
    assert_close(ptl.special.xlog1py(2, ptl.tensor(y)), 2 * np.log1p(y), rtol=1e-14)
    assert_close(ptl.special.xlog1py(t, 0.5), a * np.log1p(0.5), rtol=1e-14)
    e, ea = make((4,), ptl.int32, low=-3, high=3)
    assert_close(ptl.ldexp(t, e), np.ldexp(a, ea), dtype=ptl.float64, rtol=1e-15)
    assert_close(t.ldexp(e), np.ldexp(a, ea), rtol=1e-15)
    c = t.clone()
    assert c.ldexp_(e) is c
    assert_close(c, np.ldexp(a, ea), rtol=1e-15)
    assert_close(ptl.ldexp(ptl.tensor([1, 3]), ptl.tensor([2, -1])), np.array([4.0, 1.5]),
                 dtype=ptl.float32)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_copysign_and_heaviside_against_numpy(layout):
    t, a = _with_zeros(layout)
    signs = np.array([-0.0, NAN, -2.0, 3.0])
    want = np.copysign(a, signs)
    assert_close(ptl.copysign(t, ptl.tensor(signs)), want, dtype=ptl.float64, rtol=0, atol=0)
    assert_close(ptl.signbit(ptl.copysign(t, ptl.tensor(signs))), np.signbit(want))
    assert_close(t.copysign(-0.0), np.copysign(a, -0.0), rtol=0, atol=0)
    c = t.clone()
    assert c.copysign_(ptl.tensor(signs)) is c
    assert_close(c, want, rtol=0, atol=0)
    assert_close(ptl.copysign(ptl.tensor([1, -2]), ptl.tensor([-1, 1], dtype=ptl.int16)),
                 np.array([-1.0, 2.0]), dtype=ptl.float32)
    values = np.array([0.5, NAN, 2.0, -1.0])
    with_nan = np.where(a > 1.5, NAN, a)
    t_nan = t.masked_fill(t > 1.5, NAN)
    # a NaN input steps to 0 in PyTorch (its kernel's `x > 0`), where NumPy's gives NaN
    want = np.where(np.isnan(with_nan), 0.0, np.heaviside(with_nan, values))
    assert_close(ptl.heaviside(t_nan, ptl.tensor(values)), want, dtype=ptl.float64)
    assert_close(t_nan.heaviside(ptl.tensor(values)), want)
    i = np.array([-3, 0, 4])
    assert_close(ptl.tensor(i).heaviside(ptl.tensor([7])), np.heaviside(i, 7),
                 dtype=ptl.int64)
    assert_raises_like_torch(lambda m: m.heaviside(m.ones(2), m.ones(2, dtype=m.float64)),
                             RuntimeError, "heaviside is not yet implemented for tensors with "
                             "different dtypes.")


def test_positive():
    t = ptl.tensor([1, -2])
    assert ptl.positive(t) is t and t.positive() is t
    assert_raises_like_torch(lambda m: m.positive(m.tensor([True])), RuntimeError,
                             "The `+` operator, on a bool tensor is not supported.")


def test_float_power():
    t, a = make((3, 4), ptl.float32, "transposed", low=0.5, high=3)
    u, b = make((4,), ptl.int32, seed=1, low=-2, high=3)
    want = a.astype(np.float64) ** b.astype(np.float64)
    assert_close(ptl.float_power(t, u), want, dtype=ptl.float64, rtol=1e-14)
    assert_close(t.float_power(0.5), np.sqrt(a.astype(np.float64)), dtype=ptl.float64)
    assert_close(ptl.float_power(2, u), 2.0 ** b, dtype=ptl.float64)
    d = t.double()
    assert d.float_power_(2) is d
    assert_close(d, a.astype(np.float64) ** 2, rtol=1e-14)
    assert_raises_like_torch(lambda m: m.ones(2).float_power_(2), RuntimeError,
                             "the base given to float_power_ has dtype Float but the "
                             "operation's result requires dtype Double")


def test_in_place_forms():
    t, a = make((3, 4), ptl.float64, "transposed", low=0.05, high=0.95)
    for name, ref in (("deg2rad", np.deg2rad), ("rad2deg", np.rad2deg), ("sinc", np.sinc),
                      ("sgn", np.sign), ("logit", lambda x: np.log(x / (1 - x)))):
        c = t.clone()
        assert getattr(c, name + "_")() is c
        assert_close(c, ref(a), rtol=1e-13)
    c = t.clone()
    assert_close(c.xlogy_(ptl.tensor(3.0, dtype=ptl.float64)), a * np.log(3.0), rtol=1e-14)
    assert_close(t.clone().logit_(eps=0.2), np.log(np.clip(a, 0.2, 0.8) /
                                                   (1 - np.clip(a, 0.2, 0.8))), rtol=1e-13)
    assert_raises_like_torch(lambda m: m.arange(3).deg2rad_(), RuntimeError,
                             "result type Float can't be cast to the desired output type Long")
    x = ptl.tensor([0.2, 0.6], dtype=ptl.float64, requires_grad=True)
    y = x * 1
    y.logit_()
    y.sum().backward()
    assert_close(x.grad, 1 / (np.array([0.2, 0.6]) * (1 - np.array([0.2, 0.6]))), rtol=1e-13)


def test_complex_errors():
    z = ptl.ones(2, dtype=ptl.complex64)
    assert_raises_like_torch(lambda m: m.deg2rad(m.ones(2, dtype=m.complex64)), RuntimeError,
                             "deg2rad is not supported for complex tensors.")
    assert_raises_like_torch(lambda m: m.signbit(m.ones(2, dtype=m.complex64)),
                             NotImplementedError, "signbit is not implemented for complex "
                             "tensors.")
    assert_raises_like_torch(lambda m: m.isposinf(m.ones(2, dtype=m.complex128)), RuntimeError,
                             "isposinf does not support complex inputs.")
    assert_close(ptl.isreal(z), np.array([True, True]), dtype=ptl.bool)
    zi = ptl.tensor(np.array([1 + 0j, 2 - 1j, 0j]))
    assert_close(ptl.isreal(zi), np.isreal(np.array([1 + 0j, 2 - 1j, 0j])), dtype=ptl.bool)


def test_gradcheck():
    x = make((3, 4), ptl.float64, "transposed", low=0.1, high=0.9)[0].requires_grad_()
    y = make((4,), ptl.float64, seed=1, low=0.1, high=2)[0].requires_grad_()
    z = ptl.tensor([0.0, 0.5, -1.25], dtype=ptl.float64, requires_grad=True)
    for fn, args in [(ptl.deg2rad, (x,)), (ptl.rad2deg, (x,)), (ptl.sinc, (z,)),
                     (ptl.logit, (x,)), (lambda a: ptl.logit(a, 0.3), (x,)),
                     (ptl.xlogy, (x, y)), (ptl.special.xlog1py, (x, y)), (ptl.ldexp, (x, y)),
                     (ptl.logaddexp, (x, y)), (ptl.logaddexp2, (x, y)),
                     (lambda a: ptl.copysign(a, -1.0), (x,)),
                     (lambda a, b: ptl.copysign(b, a - 0.5), (x, y)),
                     (ptl.float_power, (x, y)), (lambda a: ptl.float_power(a, 2.5), (x,))]:
        assert gradcheck(fn, args)
    # sinc's gradient at 0 is 0 and xlogy's is 0 for x == 0 (not the NaN of 0/0 or 0*log 0)
    ptl.sinc(z).sum().backward()
    assert z.grad[0].item() == 0.0
    x0 = ptl.tensor([0.0], dtype=ptl.float64, requires_grad=True)
    y0 = ptl.tensor([0.0], dtype=ptl.float64, requires_grad=True)
    ptl.xlogy(x0, y0).sum().backward()
    assert x0.grad.item() == 0.0


@torch_ref
def test_matches_torch():
    a = np.array([0.0, -0.0, 0.3, -2.5, 7.0, INF, NAN])
    b = np.array([1.0, INF, -0.0, 0.5, 7.0, INF, 2.0])
    for name in ("deg2rad", "rad2deg", "sgn", "signbit", "isposinf", "isneginf", "isreal",
                 "sinc", "logit"):
        got = getattr(ptl, name)(ptl.tensor(a))
        want = getattr(torch, name)(torch.tensor(a))
        assert str(got.dtype) == str(want.dtype)
        assert_close(got, want.numpy(), rtol=1e-15, atol=0)
    for name in ("logaddexp", "logaddexp2", "xlogy", "float_power", "ldexp", "copysign",
                 "heaviside"):
        got = getattr(ptl, name)(ptl.tensor(a), ptl.tensor(b))
        assert_close(got, getattr(torch, name)(torch.tensor(a), torch.tensor(b)).numpy(),
                     rtol=1e-15, atol=0)
