"""float64 asin, acos, atan, asinh, acosh and atan2 in vector lanes (Note [Vector float64 asin,
acos, atan, asinh, acosh] in unary_f8_trig.h), and float32 acos, asinh, acosh in double lanes:
the ulp error against NumPy's long double (x86's 64-bit mantissa) on dense random points over
every range the formulas split and across each split, against mpmath on fewer points, the
split points and their neighbours, special values exactly, every tail length, 0-dim, size-0,
strided (the portable loop), in-place and out=.  logit's eps rule as PyTorch's.  The file
reruns with the portable loops and with AVX2 only (PTL_CPU_CAPABILITY=default, avx2)."""
import os

import mpmath
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import assert_inplace_and_out_match, rerun_with_capability, same_each

# the bound on the ulp error of each op: the vector formulas' (measured 0.6-1.35 ulp), and
# libm's for the portable loops (strided data, PTL_CPU_CAPABILITY=default: glibc's acosh loses
# 2.4 ulp near 1)
PORTABLE = os.environ.get("PTL_CPU_CAPABILITY") == "default"
VECTOR_BOUNDS = {"asin": 1.0, "acos": 1.0, "atan": 1.0, "asinh": 1.5, "acosh": 1.5,
                 "atan2": 1.0}
LIBM_BOUNDS = {"asin": 1.0, "acos": 1.0, "atan": 1.0, "asinh": 2.0, "acosh": 2.5,
               "atan2": 1.5}
BOUNDS = LIBM_BOUNDS if PORTABLE else VECTOR_BOUNDS
REF = {"asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "asinh": np.arcsinh,
       "acosh": np.arccosh}
MP = {"asin": mpmath.asin, "acos": mpmath.acos, "atan": mpmath.atan, "asinh": mpmath.asinh,
      "acosh": mpmath.acosh}
RANGES = {
    # |x| <= 1/2 (the polynomial on x), above (2 asin(sqrt((1 - |x|) / 2))), across 1/2, near 1
    "asin": [(-1, 1), (-0.5, 0.5), (0.49, 0.51), (-0.51, -0.49), (0.999999, 1), (-1, -0.999999),
             (-1e-9, 1e-9)],
    "acos": [(-1, 1), (-0.5, 0.5), (0.49, 0.51), (-0.51, -0.49), (0.999999, 1), (-1, -0.999999),
             (-1e-9, 1e-9)],
    # |x| <= 1/2, (1/2, 2] (pi/4 + atan((|x| - 1) / (|x| + 1))), above (pi/2 - atan(1 / |x|))
    "atan": [(-3, 3), (-0.5, 0.5), (0.45, 0.55), (1.9, 2.1), (-2.1, -1.9), (2, 1e3),
             (1e3, 1e300), (-1e-9, 1e-9)],
    # log1p's form up to 2, log(2a + 1 / (a + sqrt(a^2 + 1))) to 2^28, log(a) + ln 2 above
    "asinh": [(-3, 3), (-0.01, 0.01), (1.9, 2.1), (-2.1, -1.9), (2, 1e4), (2.6e8, 2.8e8),
              (1e9, 1e300), (-1e-9, 1e-9)],
    "acosh": [(1, 3), (1, 1 + 1e-9), (1, 1.01), (1.9, 2.1), (2, 1e4), (2.6e8, 2.8e8),
              (1e9, 1e300)],
}
# the split points (and what lies beside them)
EDGES = {"asin": [0.5, 1.0], "acos": [0.5, 1.0], "atan": [0.5, 2.0],
         "asinh": [2.0, 2.0 ** 28], "acosh": [1.0, 2.0, 2.0 ** 28]}
SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 2.2250738585072014e-308,
            -2.2250738585072014e-308, 1.7976931348623157e308, -1.7976931348623157e308, 1.0,
            -1.0, 0.5, -0.5, 2.0, -2.0, 1 + 2.0 ** -52, -1 - 2.0 ** -52, 1 - 2.0 ** -53,
            -1 + 2.0 ** -53, 1e-300, -1e-300, 2.0 ** 28, 2.0 ** 1000, 1e300, 3.0, -3.0]


def _ulps(got, ref):
    """|got - ref| in float64 ulps of ref (ref in long double); 0 where both are equal or NaN"""
    with np.errstate(all="ignore"):
        rounded = ref.astype(np.float64)
        scale = np.spacing(np.minimum(np.abs(rounded), np.finfo(np.float64).max))
        err = np.abs(got.astype(np.longdouble) - ref) / scale.astype(np.longdouble)
    both = (got == rounded) | (np.isnan(got) & np.isnan(rounded))
    return np.where(both, 0.0, err.astype(np.float64))


def _ref(name, x):
    with np.errstate(all="ignore"):
        return REF[name](x.astype(np.longdouble))


def _points(name, n=100000):
    rng = np.random.default_rng(7)
    parts = []
    for a, b in RANGES[name]:
        if a > 0 and b / a > 1e3:   # log-uniform over wide positive ranges
            parts.append(np.exp(rng.uniform(np.log(a), np.log(b), n)))
        else:
            parts.append(rng.uniform(a, b, n))
    return np.concatenate(parts)


def _edge_points(name):
    pts = []
    for e in EDGES[name]:
        for s in (1, -1):
            v = s * e
            for k in range(-8, 9):
                pts.append(v + k * np.spacing(v))
    return np.array(pts)


@pytest.mark.parametrize("name", list(REF))
def test_max_ulp(name):
    x = np.concatenate([_points(name), _edge_points(name)])
    got = getattr(ptl, name)(ptl.tensor(x)).numpy()
    err = _ulps(got, _ref(name, x))
    assert err.max() <= BOUNDS[name], (err.max(), x[np.argmax(err)])


@pytest.mark.parametrize("name", list(REF))
def test_max_ulp_mpmath(name):
    """against mpmath (120 bits), fewer points per range"""
    x = np.concatenate([_points(name, 300), _edge_points(name)])
    got = getattr(ptl, name)(ptl.tensor(x)).numpy()
    with mpmath.workprec(120):
        for xi, gi in zip(x, got):
            r = MP[name](mpmath.mpf(float(xi)))
            if not isinstance(r, mpmath.mpf):   # complex: outside the domain
                assert np.isnan(gi), xi
                continue
            u = np.spacing(float(abs(r))) if r != 0 else 5e-324
            assert abs(mpmath.mpf(float(gi)) - r) <= BOUNDS[name] * u, (xi, gi, r)


@pytest.mark.parametrize("name", list(REF))
def test_special_values(name):
    x = np.array(SPECIALS)
    got = getattr(ptl, name)(ptl.tensor(x)).numpy()
    with np.errstate(all="ignore"):
        ref = REF[name](x)
    assert _ulps(got, _ref(name, x)).max() <= BOUNDS[name]
    # zeros (with their sign), infinities, NaN, and the multiples of pi: correctly rounded
    exact = np.isinf(ref) | np.isnan(ref) | (ref == 0) | np.isin(
        np.abs(ref), [np.pi / 2, np.pi, np.pi / 4]) | (np.abs(x) <= 1e-300)
    assert same_each(got[exact], ref[exact]).all(), (x[exact], got[exact], ref[exact])


def test_named_values():
    t = ptl.tensor(np.array([1.0, -1.0, 0.0, -0.0, 1 + 2.0 ** -52, -1 - 2.0 ** -52, 2.0]))
    nan = np.nan
    assert same_each(ptl.asin(t).numpy(),
                     np.array([np.pi / 2, -np.pi / 2, 0.0, -0.0, nan, nan, nan])).all()
    assert same_each(ptl.acos(t).numpy(),
                     np.array([0.0, np.pi, np.pi / 2, np.pi / 2, nan, nan, nan])).all()
    inf = ptl.tensor(np.array([np.inf, -np.inf, 0.0, -0.0, nan]))
    assert same_each(ptl.atan(inf).numpy(),
                     np.array([np.pi / 2, -np.pi / 2, 0.0, -0.0, nan])).all()
    assert same_each(ptl.asinh(inf).numpy(), np.array([np.inf, -np.inf, 0.0, -0.0, nan])).all()
    x = ptl.tensor(np.array([1.0, np.inf, 1 - 2.0 ** -53, -np.inf, 0.0, nan]))
    assert same_each(ptl.acosh(x).numpy(), np.array([0.0, np.inf, nan, nan, nan, nan])).all()


@pytest.mark.parametrize("name", list(REF))
def test_every_tail_length_and_shapes(name):
    x = _points(name)[::9973][:70]
    whole = getattr(ptl, name)(ptl.tensor(x)).numpy()
    for n in list(range(18)) + [31, 32, 33, 63, 64, 65, 70]:
        part = getattr(ptl, name)(ptl.tensor(x[:n])).numpy()
        assert np.array_equal(part, whole[:n]), n
    assert getattr(ptl, name)(ptl.tensor(np.float64(x[3]))).shape == ()
    assert getattr(ptl, name)(ptl.tensor(np.float64(x[3]))).item() == whole[3]
    assert getattr(ptl, name)(ptl.tensor(np.zeros(0))).shape == (0,)
    # strided data takes the portable (libm) loop: within the bound of each other
    t = ptl.tensor(np.repeat(x, 2))[::2]
    assert _ulps(getattr(ptl, name)(t).numpy(), _ref(name, x)).max() <= LIBM_BOUNDS[name]
    # a 2-D transposed view, in place and out= reach the same loops
    m = ptl.tensor(x[:60].reshape(6, 10)).t()
    assert _ulps(getattr(ptl, name)(m).numpy(), _ref(name, x[:60].reshape(6, 10).T)).max() \
        <= LIBM_BOUNDS[name]
    assert_inplace_and_out_match(name, x, whole)


@pytest.mark.parametrize("name", ["acos", "asinh", "acosh"])
def test_float32_in_double_lanes(name):
    """float32 acos, asinh, acosh: the double formula rounded once to float32 (libm's
    float32 functions in the portable loops)"""
    with np.errstate(over="ignore"):   # the widest ranges' tops become inf
        x = _points(name, 20000).astype(np.float32)
    got = getattr(ptl, name)(ptl.tensor(x)).numpy()
    assert got.dtype == np.float32
    with np.errstate(all="ignore"):
        ref = REF[name](x.astype(np.longdouble))
        scale = np.spacing(np.abs(ref.astype(np.float32)))
        err = np.abs(got.astype(np.longdouble) - ref) / scale.astype(np.longdouble)
    err = np.where((got == ref.astype(np.float32)) | np.isnan(got) & np.isnan(ref), 0, err)
    assert err.max() <= (2.0 if PORTABLE else 0.501), (err.max(), x[np.argmax(err)])
    for n in range(18):
        assert np.array_equal(getattr(ptl, name)(ptl.tensor(x[:n])).numpy(), got[:n])
    with np.errstate(all="ignore"):
        s = np.array(SPECIALS).astype(np.float32)
        ref = REF[name](s)
    exact = np.isinf(ref) | np.isnan(ref) | (ref == 0)
    assert same_each(getattr(ptl, name)(ptl.tensor(s)).numpy()[exact], ref[exact]).all()


def _atan2_points():
    rng = np.random.default_rng(5)
    n = 100000
    sgn = lambda: rng.choice([-1.0, 1.0], n)   # noqa: E731
    x = rng.uniform(0.5, 2, n)
    parts = [
        (rng.standard_normal(n), rng.standard_normal(n)),
        # |y| / |x| around 1/2 (the split), 1, 2, and wide exponents
        (rng.uniform(0.45, 0.55, n) * x * sgn(), x * sgn()),
        (rng.uniform(0.99, 1.01, n) * x * sgn(), x * sgn()),
        (rng.uniform(1.9, 2.1, n) * x * sgn(), x * sgn()),
        (np.exp(rng.uniform(-700, 700, n)) * sgn(), np.exp(rng.uniform(-700, 700, n)) * sgn()),
    ]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def _atan2_ref(y, x):
    with np.errstate(all="ignore"):
        return np.arctan2(y.astype(np.longdouble), x.astype(np.longdouble))


def test_atan2_max_ulp():
    y, x = _atan2_points()
    got = ptl.atan2(ptl.tensor(y), ptl.tensor(x)).numpy()
    err = _ulps(got, _atan2_ref(y, x))
    assert err.max() <= BOUNDS["atan2"], (err.max(), y[np.argmax(err)], x[np.argmax(err)])
    with mpmath.workprec(120):
        for yi, xi, gi in zip(y[::500], x[::500], got[::500]):
            r = mpmath.atan2(mpmath.mpf(float(yi)), mpmath.mpf(float(xi)))
            assert abs(mpmath.mpf(float(gi)) - r) <= BOUNDS["atan2"] * np.spacing(float(abs(r)))


def test_atan2_special_values():
    """zeros, infinities, NaN and huge operands (the lanes the vector leaves to libm)"""
    v = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 5e-324, -5e-324,
                  1.7976931348623157e308, -1.7976931348623157e308, 2.0 ** 1000, 0.5, 2.0])
    y, x = (a.ravel() for a in np.meshgrid(v, v))
    got = ptl.atan2(ptl.tensor(y), ptl.tensor(x)).numpy()
    ref = np.arctan2(y, x)
    exact = np.isinf(ref) | np.isnan(ref) | (ref == 0) | np.isin(
        np.abs(ref), [np.pi / 2, np.pi, np.pi / 4, 3 * np.pi / 4])
    assert same_each(got[exact], ref[exact]).all()
    assert _ulps(got, _atan2_ref(y, x)).max() <= BOUNDS["atan2"]


def test_atan2_tails_broadcast_and_layouts():
    y, x = _atan2_points()
    y, x = y[::7001][:70], x[::7001][:70]
    ref = _atan2_ref(y, x)
    for n in list(range(18)) + [33, 70]:
        got = ptl.atan2(ptl.tensor(y[:n]), ptl.tensor(x[:n])).numpy()
        assert _ulps(got, ref[:n]).max(initial=0) <= BOUNDS["atan2"], n
    # one operand broadcast (stride 0), either side
    got = ptl.atan2(ptl.tensor(y), ptl.tensor(np.float64(-0.75))).numpy()
    assert _ulps(got, _atan2_ref(y, np.full_like(y, -0.75))).max() <= BOUNDS["atan2"]
    got = ptl.atan2(ptl.tensor(np.float64(3.0)), ptl.tensor(x)).numpy()
    assert _ulps(got, _atan2_ref(np.full_like(x, 3.0), x)).max() <= BOUNDS["atan2"]
    # strided, in place, out=
    got = ptl.atan2(ptl.tensor(np.repeat(y, 2))[::2], ptl.tensor(x)).numpy()
    assert _ulps(got, ref).max() <= LIBM_BOUNDS["atan2"]
    whole = ptl.atan2(ptl.tensor(y), ptl.tensor(x)).numpy()
    t = ptl.tensor(y.copy())
    t.atan2_(ptl.tensor(x))
    assert np.array_equal(t.numpy(), whole)
    out = ptl.empty(len(y), dtype=ptl.float64)
    ptl.atan2(ptl.tensor(y), ptl.tensor(x), out=out)
    assert np.array_equal(out.numpy(), whole)
    assert ptl.atan2(ptl.tensor(np.zeros(0)), ptl.tensor(np.zeros(0))).shape == (0,)


def _np_logit(x, eps):
    """PyTorch's rule in x's dtype: eps >= 0 sets x < eps to eps, else x > 1 - eps to
    1 - eps; then log(x / (1 - x)) in float64"""
    if eps is not None and eps >= 0:
        lo = x.dtype.type(eps)
        hi = x.dtype.type(1) - lo
        x = np.where(x < lo, lo, np.where(x > hi, hi, x))
    x = x.astype(np.float64)
    with np.errstate(all="ignore"):
        return np.log(x / (1 - x))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("eps", [None, 1e-6, 0.2, 0.5, 0.7, -0.1, 0.0])
def test_logit(dtype, eps):
    x = np.concatenate([np.random.default_rng(3).uniform(-0.2, 1.2, 1000),
                        [0.0, -0.0, 1.0, 0.5, np.nan, np.inf, -np.inf, 1e-300, 0.7, 0.3]])
    x = x.astype(dtype)
    got = ptl.logit(ptl.tensor(x), eps).numpy()
    ref = _np_logit(x, eps)
    assert got.dtype == dtype
    fin = np.isfinite(ref)
    assert same_each(got[~fin], ref[~fin].astype(dtype)).all()
    np.testing.assert_allclose(got[fin], ref[fin], rtol=1e-5 if dtype == np.float32 else 1e-12,
                               atol=1e-6 if dtype == np.float32 else 1e-14)
    out = ptl.empty(len(x), dtype=ptl.float32 if dtype == np.float32 else ptl.float64)
    ptl.logit(ptl.tensor(x), eps, out=out)
    assert np.array_equal(out.numpy(), got, equal_nan=True)


def test_logit_autograd():
    """the recorded path (out of place) gives the in-place path's values, and PyTorch's
    gradient: 1 / (p (1 - p)) inside [eps, 1 - eps] (its ends included), 0 outside"""
    x = np.array([0.0, 0.05, 0.1, 0.3, 0.5, 0.9, 0.95, 1.0])
    t = ptl.tensor(x, requires_grad=True)
    y = ptl.logit(t, 0.1)
    y.sum().backward()
    assert np.array_equal(y.detach().numpy(), ptl.logit(ptl.tensor(x), 0.1).numpy())
    inside = (x >= 0.1) & (x <= 0.9)
    with np.errstate(divide="ignore"):
        want = np.where(inside, 1 / (x * (1 - x)), 0)
    np.testing.assert_allclose(t.grad.numpy(), want, rtol=1e-15)
    t = ptl.tensor(x[1:-1], requires_grad=True)
    ptl.logit(t).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), 1 / (x[1:-1] * (1 - x[1:-1])), rtol=1e-15)


@pytest.mark.skipif("PTL_CPU_CAPABILITY" in os.environ,
                    reason="already running with a capability chosen by a parent run")
@pytest.mark.parametrize("cap", ["default", "avx2"])
def test_portable_and_avx2_loops(cap):
    """Reruns this file with the vector loops switched off, and with AVX2 only."""
    rerun_with_capability(__file__, cap)
