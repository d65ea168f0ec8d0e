"""The piecewise formulas of torch.special (src/aten/bessel_math.h and gaussian_math.h, which
the CPU's src/aten/native/special.c and the CUDA kernels call: Note [Fast Bessel functions of
real argument], [Fast ndtri], [Fast modified Bessel functions K], [Fast Airy Ai], and
special.c's vector erfc, sin and sincos blocks of ndtr, log_ndtr, erfcx, spherical j0 and
J, Y): accuracy against mpmath at and across every region boundary and table interval edge
(both neighbours of each edge), in float64 with test_special_functions.py's bounds and in
float32 within 1 ulp; layouts (strided, transposed) and one or two threads give the same
bits."""
import math

import mpmath
import numpy as np
import pytest

import pytorchlite as ptl
from test_special_functions import UNARY, _reference, _ulp_errors

S = ptl.special


def _around(edges):
    """each edge and its two float64 neighbours"""
    e = np.asarray(edges, dtype=np.float64)
    return np.concatenate([e, np.nextafter(e, -np.inf), np.nextafter(e, np.inf)])


def _pow2_quarters(kmin, kmax):
    """the edges 2^k (1 + j/4) of the exponent/mantissa tables"""
    return [2.0 ** k * (1 + j / 4) for k in range(kmin, kmax + 1) for j in range(4)]


# name -> the edges of its regions and table intervals
EDGES = {
    "bessel_j0": list(range(1, 26)) + [-1.0, -3.0, -24.5, -25.0],
    "bessel_j1": list(range(1, 26)) + [-1.0, -3.0, -24.5, -25.0],
    "bessel_y0": list(range(1, 26)) + [0.5],
    "bessel_y1": list(range(1, 26)) + [0.5],
    "modified_bessel_k0": _pow2_quarters(0, 5) + [0.5],
    "modified_bessel_k1": _pow2_quarters(0, 5) + [0.5],
    "scaled_modified_bessel_k0": _pow2_quarters(0, 5) + [0.5, 1e4],
    "scaled_modified_bessel_k1": _pow2_quarters(0, 5) + [0.5, 1e4],
    "airy_ai": [-12 + i / 2 for i in range(29)] + _pow2_quarters(1, 6)[:-1] + [-1e5],
    # r = sqrt(-2 log p) = 1.5 + i: p = e^(-r^2 / 2), and 1 - p above
    "ndtri": [0.25, 0.75] + [math.exp(-(1.5 + i) ** 2 / 2) for i in range(1, 37)] +
             [1 - math.exp(-(1.5 + i) ** 2 / 2) for i in range(1, 8)],
    "ndtr": [-1.0, -38.5, -38.0, -20.0, -5.0, 0.0, 5.0],
    "log_ndtr": [-1.0, -36.0, -37.5, -20.0, 0.0, 5.0, -1e4],
    "spherical_bessel_j0": [0.5, -0.5, 2.0 ** 20, -(2.0 ** 20), 1e22, math.pi, 100 * math.pi],
    "erfcx": [26.0, -26.0, -26.6, 8.0, 0.5, -0.5, 27.3, 1e5],
}


@pytest.mark.parametrize("name", sorted(EDGES))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_accuracy_across_edges(name, dtype):
    xs = _around(EDGES[name])
    if dtype == np.float32:
        xs = np.unique(xs.astype(np.float32)).astype(np.float64)
    ref = _reference(name, xs)
    got = getattr(S, name)(ptl.tensor(xs.astype(dtype))).numpy().astype(np.float64)
    errs = _ulp_errors(got, ref, xs, dtype, UNARY[name][3])
    assert len(errs) > len(xs) // 2
    limit = UNARY[name][1] if dtype == np.float64 else UNARY[name][2]
    i = int(np.argmax(errs))
    assert errs[i] <= limit, (name, errs[i])


@pytest.mark.parametrize("name", ["ndtr", "log_ndtr", "erfcx", "ndtri", "bessel_j1",
                                  "bessel_y0", "spherical_bessel_j0", "modified_bessel_k0",
                                  "airy_ai"])
@pytest.mark.parametrize("dtype", [ptl.float64, ptl.float32])
def test_layouts_and_threads_agree(name, dtype):
    """the blocks of ndtr, log_ndtr and erfcx (vector erfc), J and Y (vector sincos) and spherical
    j0 (vector sin) take every layout (the bits do not depend on it); one or two threads
    split the work without changing a bit"""
    fn = getattr(S, name)
    rng = np.random.default_rng(7)
    if name == "ndtri":
        x = rng.uniform(0, 1, (300, 1001))
    else:
        x = rng.standard_normal((300, 1001)) * (15 if name != "modified_bessel_k0" else 5)
        x = np.abs(x) if name in ("modified_bessel_k0", "bessel_y0") else x
    a = ptl.tensor(x, dtype=dtype)
    before = ptl.get_num_threads()
    try:
        ptl.set_num_threads(1)
        one, one_t, one_s = fn(a).numpy(), fn(a.t()).numpy(), fn(a[:, ::3]).numpy()
        ptl.set_num_threads(2)
        two = fn(a).numpy()
    finally:
        ptl.set_num_threads(before)
    np.testing.assert_array_equal(one, two)
    np.testing.assert_array_equal(one_t, one.T)
    np.testing.assert_array_equal(one_s, one[:, ::3])


def test_ndtr_out_aliasing_its_input():
    """out= the input itself: the block loop reads each element before writing it"""
    x = np.random.default_rng(3).standard_normal(1000) * 10
    a = ptl.tensor(x)
    want = S.ndtr(a).numpy()
    S.ndtr(a, out=a)
    np.testing.assert_array_equal(a.numpy(), want)


@pytest.mark.parametrize("n", [0, 1, 255, 256, 257, 513])
def test_ndtr_block_lengths(n):
    """the vector erfc runs in blocks of 256 elements: lengths at and across a block agree
    with each element computed alone"""
    x = np.random.default_rng(n).standard_normal(n) * 8
    got = S.ndtr(ptl.tensor(x)).numpy()
    alone = np.array([S.ndtr(ptl.tensor(x[i:i + 1])).numpy()[0] for i in range(n)])
    np.testing.assert_array_equal(got, alone.reshape(got.shape))


def _j0_taylor(x):
    """bessel_math.h's ptl_spherical_bessel_j0_small, its operations in float64"""
    z, t, s = x * x, np.ones_like(x), np.ones_like(x)
    for k in range(1, 8):
        t = t * (-z / float((2 * k) * (2 * k + 1)))
        s = s + t
    return s


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_spherical_j0_blocks_with_and_without_small_elements(dtype):
    """spherical j0 runs in blocks of 256 elements: a block with no |x| < 1/2 (nor inf)
    divides, one with any takes both formulas for every element and keeps one.  Blocks with
    none, with one small element first or last, all small, and mixed with inf and NaN, at
    and across the block's length: each element as computed alone; the small ones the
    Taylor polynomial's bits, inf 0, NaN NaN"""
    g = np.random.default_rng(11)
    big = g.uniform(0.5, 50, 256) * g.choice([-1, 1], 256)
    one_first, one_last = big.copy(), big.copy()
    one_first[0], one_last[255] = 0.3, -np.nextafter(0.5, 0)
    small = g.uniform(-0.5, 0.5, 256)
    mixed = g.uniform(-3, 3, 256)
    mixed[[3, 50, 100, 200]] = [np.inf, 0.5, -np.inf, np.nan]
    x = np.concatenate([big, one_first, one_last, small, mixed, big[:5], small[:1]])
    x = x.astype(dtype).astype(np.float64)
    for n in (len(x), 255, 256, 257, 511, 512):
        got = S.spherical_bessel_j0(ptl.tensor(x[:n].astype(dtype))).numpy()
        alone = np.array([S.spherical_bessel_j0(ptl.tensor(x[i:i + 1].astype(dtype))).numpy()[0]
                          for i in range(n)])
        np.testing.assert_array_equal(got, alone)
    got = S.spherical_bessel_j0(ptl.tensor(x.astype(dtype))).numpy()
    lo = np.abs(x) < 0.5
    np.testing.assert_array_equal(got[lo], _j0_taylor(x[lo]).astype(dtype))
    assert np.all(got[np.isinf(x)] == 0) and np.all(np.isnan(got[np.isnan(x)]))
    assert got.dtype == dtype


def _recurrence(kind, x, k):
    """p_k(x) of Chebyshev T, U, V, W (kind 0-3) or Hermite H, He ("h", "he") by the
    three-term recurrence in 40-digit mpmath"""
    x = mpmath.mpf(float(x))
    with mpmath.workdps(40):
        if kind in ("h", "he"):
            c = 2 if kind == "h" else 1
            p, q = mpmath.mpf(1), c * x
            for j in range(1, k):
                p, q = q, c * (x * q - j * p)
        else:
            p = mpmath.mpf(1)
            q = [x, 2 * x, 2 * x - 1, 2 * x + 1][kind]
            for _ in range(1, k):
                p, q = q, 2 * x * q - p
        return float(q) if k > 0 else 1.0


CHEBYSHEV = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
             "chebyshev_polynomial_w"]


@pytest.mark.parametrize("kind", range(4))
@pytest.mark.parametrize("shifted", [False, True])
def test_chebyshev_recurrence_across_its_degree_limit(kind, shifted):
    """the CPU's fma recurrence runs degrees 1-16 inside (-1, 1), the closed forms above:
    degrees 0-20 at random x, within 20 + 2k ulps of the polynomial's size there (1 for T,
    k + 1 for U, 2k + 1 for V and W; the closed forms' phase k acos x carries k ulps: T_18
    measured 29)"""
    x = np.random.default_rng(kind).uniform(-0.999, 0.999, 25)
    name = ("shifted_" if shifted else "") + CHEBYSHEV[kind]
    for k in range(21):
        arg = (x + 1) / 2 if shifted else x
        got = getattr(S, name)(ptl.tensor(arg), ptl.tensor(np.full(25, float(k)))).numpy()
        want = np.array([_recurrence(kind, 2 * a - 1 if shifted else a, k) for a in arg])
        size = [1, k + 1, 2 * k + 1, 2 * k + 1][kind]
        limit = (20 + 2 * k) * np.spacing(float(size))
        assert np.all(np.abs(got - want) <= limit), (name, k)


@pytest.mark.parametrize("kind", ["h", "he"])
def test_hermite_fma_step(kind):
    """the CPU's Hermite step is one fma: degrees 0-40 within 20 ulps of the polynomial's
    size (e^(x^2/2) sqrt(2^k k!) for H, e^(x^2/4) sqrt(k!) for He)"""
    x = np.random.default_rng(5).uniform(-6, 6, 25)
    fn = S.hermite_polynomial_h if kind == "h" else S.hermite_polynomial_he
    for k in range(41):
        got = fn(ptl.tensor(x), ptl.tensor(np.full(25, float(k)))).numpy()
        want = np.array([_recurrence(kind, a, k) for a in x])
        if kind == "h":
            size = np.exp(x * x / 2) * math.sqrt(2.0 ** k * math.factorial(k))
        else:
            size = np.exp(x * x / 4) * math.sqrt(math.factorial(k))
        assert np.all(np.abs(got - want) <= 20 * np.spacing(size)), (kind, k)


def test_legendre_fma_step():
    """the CPU's Legendre step fma((2j + 1) x, P_j, -j P_(j-1)) / (j + 1): degrees 0-40 on
    (-1, 1) within 20 ulps of 1 (P's size there), against mpmath"""
    x = np.random.default_rng(9).uniform(-0.999, 0.999, 25)
    for k in range(41):
        got = S.legendre_polynomial_p(ptl.tensor(x), ptl.tensor(np.full(25, float(k)))).numpy()
        with mpmath.workdps(40):
            want = np.array([float(mpmath.legendre(k, mpmath.mpf(float(a)))) for a in x])
        assert np.all(np.abs(got - want) <= 20 * np.spacing(1.0)), k
