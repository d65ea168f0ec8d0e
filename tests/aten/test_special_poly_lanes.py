"""The orthogonal polynomials' float32 and float64 loops in lock-step (src/aten/native/special.c,
Note [Orthogonal polynomials in lock-step]): blocks of 256 elements, those of the block's
first degree with x in the recurrence's domain run together, the others per element, and
Hermite's and Laguerre's lanes that overflow are recomputed per element.

Every layout must give the same bits: n a full tensor of one degree (the blocks that skip
the gathering), n a Python number (stride 0), n with other degrees and other values of the
same degree mixed in (the gathering), strided x and n, and each element on its own, at sizes
around the block edges, on one and two threads.  The values are checked against mpmath (and
NumPy's float64 polynomial evaluation where it has the family) at the degrees where the
lanes begin and end: Chebyshev 16 and 17 (float64 leaves the lanes above 16) and 256 and 257
(float32 leaves them above 256)."""
import os

import mpmath
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import rerun_with_capability
from test_special_polynomials import FAMILIES

S = ptl.special
NAMES = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
         "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
         "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
         "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
         "laguerre_polynomial_l", "legendre_polynomial_p"]
SIZES = [0, 1, 15, 16, 17, 255, 256, 257, 600]
DTYPES = {"float32": ptl.float32, "float64": ptl.float64}


def _x(name, size, rng):
    """mostly the recurrence's domain, some elements outside it and special values"""
    lo, hi = (0.0, 1.0) if name.startswith("shifted") else (-1.0, 1.0)
    if name.startswith("hermite"):
        lo, hi = -4.0, 4.0
    if name.startswith("laguerre"):
        lo, hi = -2.0, 8.0
    x = rng.uniform(lo, hi, size)
    odd = rng.random(size) < 0.1
    x[odd] = rng.choice([np.nan, np.inf, -np.inf, 1.0, -1.0, 0.0, 1.5, -3.0, 40.0], odd.sum())
    return x


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("name", NAMES)
def test_layouts_give_the_same_bits(name, dtype, threads):
    fn = getattr(S, name)
    rng = np.random.default_rng(len(name) + len(dtype))
    dt = DTYPES[dtype]
    for size in SIZES:
        for k in (1, 4, 16, 17, 40, 256, 257):
            x = _x(name, size, rng)
            xt = ptl.tensor(x, dtype=dt)
            full = fn(xt, ptl.full((size,), float(k), dtype=dt)).numpy()
            assert _same(fn(xt, float(k)).numpy(), full)
            # the same degree as k + 0.5, other degrees, negative and NaN n mixed in
            n = np.full(size, float(k))
            n[rng.random(size) < 0.2] = k + 0.5
            other = rng.random(size) < 0.1
            n[other] = rng.choice([0.0, 2.0, 3.0, -1.0, np.nan, 300.0], other.sum())
            mixed = fn(xt, ptl.tensor(n, dtype=dt)).numpy()
            # strided x and n
            x2 = np.repeat(x, 2)
            n2 = np.repeat(n, 2)
            strided = fn(ptl.tensor(x2, dtype=dt)[::2], ptl.tensor(n2, dtype=dt)[::2]).numpy()
            assert _same(strided, mixed)
            if size <= 17:
                one = [fn(ptl.tensor([a], dtype=dt), ptl.tensor([b], dtype=dt)).item()
                       for a, b in zip(x, n)]
                assert _same(np.array(one, dtype=mixed.dtype), mixed)
                one = [fn(ptl.tensor([a], dtype=dt), float(k)).item() for a in x]
                assert _same(np.array(one, dtype=full.dtype), full)
            # each element's value does not depend on the block's other elements
            keep = n == k
            assert _same(mixed[keep], full[keep])


def _laguerre(k, x):
    """the explicit sum, exact at 40 + 2k digits (mpmath's hypergeometric form fails to
    converge at some zeros)"""
    with mpmath.workdps(40 + 2 * k):
        return +sum(mpmath.binomial(k, i) * (-x) ** i / mpmath.factorial(i)
                    for i in range(k + 1))


# name -> (mpmath p(k, x), E(x, k): the size where it oscillates): test_special_polynomials.py's,
# Laguerre's by the explicit sum
REF = dict(FAMILIES, laguerre_polynomial_l=(lambda k, x: _laguerre(k, x),
                                            FAMILIES["laguerre_polynomial_l"][1]))


def _ulps(name, x, k, got, dtype):
    """errors in ulps of max(|p|, E), as test_special_polynomials.py measures them"""
    shifted = name.startswith("shifted")
    ref, env = REF[name.replace("shifted_", "")]
    spacing = np.spacing if dtype == "float64" else (lambda v: np.spacing(np.float32(v)))
    out = []
    with mpmath.workdps(40):
        for xi, g in zip(x, got):
            xe = 2 * float(xi) - 1 if shifted else float(xi)
            r = float(ref(k, mpmath.mpf(2) * mpmath.mpf(float(xi)) - 1 if shifted
                          else mpmath.mpf(float(xi))))
            scale = max(abs(r), env(xe, k))
            if not np.isfinite(r) or scale > (3e38 if dtype == "float32" else 1e300):
                continue
            out.append(abs(float(g) - r) / float(spacing(scale)))
    return np.array(out)


# the degrees where the lanes start and stop, the domain's edges included
EDGE_DEGREES = {"float64": [1, 2, 16, 17, 40], "float32": [1, 16, 17, 40, 256, 257]}


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("name", NAMES)
def test_accuracy_at_the_lanes_edges(name, dtype):
    """float64 within 8 + 2k ulps, float32 within 1 ulp, of max(|p_k(x)|, E), near +-1
    (where the Chebyshev recurrence loses the most) and inside"""
    rng = np.random.default_rng(7)
    lo, hi = (0.0, 1.0) if name.startswith("shifted") else (-1.0, 1.0)
    if name.startswith("hermite"):
        lo, hi = -5.0, 5.0
    if name.startswith("laguerre"):
        lo, hi = -3.0, 30.0
    near = 1.0 - np.exp(rng.uniform(np.log(1e-9), np.log(1e-2), 12))
    x = np.concatenate([rng.uniform(lo, hi, 36), near, -near if lo < 0 else 1.0 - near])
    x = x.astype(dtype).astype(np.float64)
    top = 16 if dtype == "float64" else 256
    for k in EDGE_DEGREES[dtype] if "chebyshev" in name else [1, 2, 17, 40]:
        # (float64 Chebyshev above 16 takes polynomial_math.h's closed forms, whose error
        # grows near +-1: not this file's subject)
        xk = x[:36] if "chebyshev" in name and k > top else x
        got = getattr(S, name)(ptl.tensor(xk, dtype=DTYPES[dtype]), float(k)).numpy()
        err = _ulps(name, xk, k, got, dtype)
        assert len(err) > 20
        assert err.max() <= (8 + 2 * k if dtype == "float64" else 1), (k, err.max())


# NumPy's float64 series evaluation (Clenshaw) of the families it has
NUMPY = {"chebyshev_polynomial_t": np.polynomial.chebyshev.chebval,
         "hermite_polynomial_h": np.polynomial.hermite.hermval,
         "hermite_polynomial_he": np.polynomial.hermite_e.hermeval,
         "laguerre_polynomial_l": np.polynomial.laguerre.lagval,
         "legendre_polynomial_p": np.polynomial.legendre.legval}


@pytest.mark.parametrize("name", list(NUMPY))
def test_float32_matches_numpy(name, threads):
    """float32 on 1000 elements (four blocks, the last partial) against NumPy in float64,
    within 2 float32 ulps of max(|p|, E) (NumPy's own error is far below that)"""
    rng = np.random.default_rng(3)
    lo, hi = {"hermite_polynomial_h": (-3, 3), "hermite_polynomial_he": (-4, 4),
              "laguerre_polynomial_l": (-2, 10)}.get(name, (-1, 1))
    x = rng.uniform(lo, hi, 1000).astype(np.float32)
    env = REF[name][1]
    for k in (3, 12, 17, 30):
        got = getattr(S, name)(ptl.tensor(x), float(k)).numpy().astype(np.float64)
        want = NUMPY[name](x.astype(np.float64), np.eye(k + 1)[k])
        scale = np.maximum(np.abs(want), [env(float(a), k) for a in x]).astype(np.float32)
        assert np.all(np.abs(got - want) <= 2 * np.spacing(scale)), (name, k)


@pytest.mark.parametrize("name", ["hermite_polynomial_h", "hermite_polynomial_he",
                                  "laguerre_polynomial_l"])
def test_overflowing_lanes_take_the_per_element_formula(name, threads):
    """lanes that overflow mid-recurrence beside finite ones, and blocks whose lanes all
    overflow at a huge degree (they stop: 10^9 steps would take minutes)"""
    fn = getattr(S, name)
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, 300)
    x[::7] = 1e150
    x[3::7] = -1e150
    k = 40.0
    got = fn(ptl.tensor(x), k).numpy()
    one = np.array([fn(ptl.tensor([a]), ptl.tensor([k])).item() for a in x])
    assert _same(got, one)
    assert np.isinf(got[::7]).all() and np.isfinite(got[1::7]).all()
    big = np.full(300, 50.0) if name.startswith("hermite") else np.full(300, -50.0)
    huge = fn(ptl.tensor(big), 1e9).numpy()
    assert np.isinf(huge).all()
    assert _same(huge, [fn(ptl.tensor([b]), 1e9).item() for b in big[:3]] * 100)


@pytest.mark.skipif("PTL_CPU_CAPABILITY" in os.environ,
                    reason="already running with a capability chosen by a parent run")
@pytest.mark.parametrize("cap", ["default", "avx2"])
def test_portable_and_avx2_lanes(cap):
    """Reruns this file's layout and accuracy tests with the lanes compiled for the
    baseline x86-64 (fma by libm) and for AVX2 (4 doubles a vector)."""
    rerun_with_capability(__file__, cap, "-k", "layouts or accuracy")


@pytest.mark.parametrize("k", [17.0, 1e3, 1e6, 2.0**40])
def test_float64_closed_forms_at_large_degrees(k, threads):
    """float64 Chebyshev above 16 inside (-1, 1) by the vector acos, sin and cos (libm's
    sin and cos on their slow lanes: arguments past 2^20): NumPy's closed forms in float64
    within the phase's error, k ulps of the angle"""
    x = np.random.default_rng(8).uniform(-0.999, 0.999, 300)
    th = np.arccos(x)
    tol = 1e-13 + 4 * k * np.spacing(np.pi)
    want = {"t": np.cos(k * th), "u": np.sin((k + 1) * th) / np.sin(th),
            "v": np.cos((k + 0.5) * th) / np.cos(th / 2),
            "w": np.sin((k + 0.5) * th) / np.sin(th / 2)}
    size = {"t": 1.0, "u": k + 1, "v": 2 * k + 1, "w": 2 * k + 1}
    for kind, ref in want.items():
        got = getattr(S, "chebyshev_polynomial_" + kind)(ptl.tensor(x), k).numpy()
        assert np.all(np.abs(got - ref) <= tol * size[kind] * 10), kind
        shifted = getattr(S, "shifted_chebyshev_polynomial_" + kind)(
            ptl.tensor((x + 1) / 2), k).numpy()
        assert _same(shifted, getattr(S, "chebyshev_polynomial_" + kind)(
            ptl.tensor(2 * ((x + 1) / 2) - 1), k).numpy())


@pytest.mark.parametrize("name", ["chebyshev_polynomial_t", "laguerre_polynomial_l",
                                  "hermite_polynomial_he", "legendre_polynomial_p"])
def test_out_may_be_an_input(name):
    """a block's x and n are read before any of its results is written"""
    fn = getattr(S, name)
    rng = np.random.default_rng(9)
    for dtype in (ptl.float32, ptl.float64):
        x = ptl.tensor(rng.uniform(-1, 1, 700), dtype=dtype)
        n = ptl.tensor(rng.integers(0, 30, 700).astype(np.float64), dtype=dtype)
        want = fn(x, n).numpy()
        xc = x.clone()
        assert fn(xc, n, out=xc) is xc
        np.testing.assert_array_equal(xc.numpy(), want)
        nc = n.clone()
        fn(x, nc, out=nc)
        np.testing.assert_array_equal(nc.numpy(), want)


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_two_threads_split_blocks_without_changing_bits(dtype, restore_threads):
    """262147 elements (the iterator gives each thread a part, whose blocks start elsewhere)
    of one degree and of mixed ones: one and two threads agree"""
    rng = np.random.default_rng(13)
    dt = DTYPES[dtype]
    for name in NAMES:
        fn = getattr(S, name)
        x = ptl.tensor(_x(name, 262147, rng), dtype=dt)
        for n in (ptl.full((262147,), 40.0, dtype=dt),
                  ptl.tensor(rng.integers(0, 60, 262147).astype(np.float64), dtype=dt)):
            ptl.set_num_threads(1)
            one = fn(x, n).numpy()
            ptl.set_num_threads(2)
            assert _same(fn(x, n).numpy(), one), name


CHEB_NAMES = [n for n in NAMES if "chebyshev" in n]


@pytest.mark.parametrize("name", CHEB_NAMES)
def test_float32_chebyshev_above_the_lanes_takes_the_float64_closed_forms(name, threads):
    """float32 Chebyshev of degree above 256 inside the domain: the float64 closed forms'
    value rounded once (Note [Orthogonal polynomials in lock-step]), in blocks of 256 -+ 1
    that mix those degrees with the lanes' (17, 256) and points outside; and within one
    float32 ulp of max(|p|, E) against mpmath next to the ends"""
    rng = np.random.default_rng(11)
    lo = 0.0 if name.startswith("shifted") else -1.0
    fn = getattr(S, name)
    for m in (1, 255, 256, 257, 513):
        x = rng.uniform(lo, 1.0, m)
        x[::5] = 1.0 - np.exp(rng.uniform(np.log(1e-7), np.log(1e-2), len(x[::5])))
        x[1::9] = lo + np.exp(rng.uniform(np.log(1e-7), np.log(1e-2), len(x[1::9])))
        x[2::11] = rng.choice([lo, 1.0, 1.5, lo - 0.5], len(x[2::11]))
        x = x.astype(np.float32)
        k = rng.choice([17.0, 256.0, 257.0, 1000.0, 4097.0], m).astype(np.float32)
        for xs, ks in ((x, k), (x, np.full(m, np.float32(1000)))):
            got = fn(ptl.tensor(xs), ptl.tensor(ks)).numpy()
            want = fn(ptl.tensor(xs.astype(np.float64)), ptl.tensor(ks.astype(np.float64)))
            with np.errstate(over="ignore"):   # outside the domain, from 1.5 on
                want = want.numpy().astype(np.float32)
            inside = (ks > 256) & (xs > lo) & (xs < 1.0)
            np.testing.assert_array_equal(got[inside], want[inside])
            strided = fn(ptl.tensor(np.repeat(xs, 2))[::2], ptl.tensor(ks)).numpy()
            np.testing.assert_array_equal(strided, got)
    near = 1.0 - np.exp(rng.uniform(np.log(1e-7), np.log(1e-2), 24))
    x = np.concatenate([near, lo + 1.0 - near, rng.uniform(lo, 1.0, 24)]).astype(np.float32)
    for k in (257, 1000):
        got = fn(ptl.tensor(x), float(k)).numpy()
        err = _ulps(name, x.astype(np.float64), k, got, "float32")
        assert len(err) > 60 and err.max() <= 1, (k, err.max())
