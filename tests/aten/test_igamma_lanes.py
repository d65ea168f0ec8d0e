"""igamma and igammac's float32 and float64 loops in blocks (src/aten/native/binary.c): the
series and the continued fraction of special_math.h's ptl_igamma_pq run over a block of 128
elements together, each element frozen from the step where its own loop stops and the
still-running ones moved to the front every 8 steps, so every element gets the per-element
formula's bits.  Checked: each element computed alone, in blocks, strided, broadcast and on
one and two threads gives the same bits, at sizes around the block's edge and with the
special arguments (0, inf, NaN, negative) mixed in; values against SciPy in float64 within
test_binary.py's bound; the portable and AVX2 loops in subprocesses."""
import os

import numpy as np
import pytest
from scipy import special as sp

import pytorchlite as ptl
from helpers import assert_binary_bits_in_layouts, rerun_with_capability

SIZES = [0, 1, 7, 8, 9, 127, 128, 129, 300]
SPECIALS = [0.0, np.inf, np.nan, -1.0, 5e-324, 1e300]


def _ax(size, rng):
    """the benchmark's range, small and large arguments (long series and fractions), and
    the special values"""
    a = np.where(rng.random(size) < 0.5, rng.uniform(0.1, 20, size),
                 np.exp(rng.uniform(-8, 7, size)))
    x = np.where(rng.random(size) < 0.5, rng.uniform(0, 20, size),
                 np.exp(rng.uniform(-8, 7, size)))
    for v in (a, x):
        odd = rng.random(size) < 0.08
        v[odd] = rng.choice(SPECIALS, odd.sum())
    return a, x


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("fn", [ptl.igamma, ptl.igammac])
def test_layouts_give_the_per_element_bits(fn, dtype, threads):
    rng = np.random.default_rng(21)
    dt = getattr(ptl, dtype)
    for size in SIZES:
        a, x = _ax(size, rng)
        assert_binary_bits_in_layouts(fn, a, x, dt, size <= 9)


@pytest.mark.parametrize("upper", [False, True])
def test_float64_against_scipy(upper):
    """test_binary.py's bound: 2 (8 + |a log x| + x + |lgamma(a)|) eps relative, results
    of 1e-280 and below absolutely (the prefactor's exponent rounding), on the blocks'
    mixture of series and fractions; igammac's times 1 + P / Q (its cancellation, in
    special_math.h's formula: test_binary.py's points do not reach it)"""
    rng = np.random.default_rng(22)
    a, x = _ax(3000, rng)
    keep = (a > 0.05) & (x > 0) & (a < 30) & (x < 60)   # test_binary.py's domain
    a, x = a[keep], x[keep]
    got = (ptl.igammac if upper else ptl.igamma)(ptl.tensor(a), ptl.tensor(x)).numpy()
    ref = (sp.gammaincc if upper else sp.gammainc)(a, x)
    big = ref > 1e-280
    size = 8 + np.abs(a * np.log(x)) + x + np.abs(sp.gammaln(a))
    if upper:   # Q = 1 - P by the series below x = a + 1: P's error grows by P / Q
        size = size * (1 + sp.gammainc(a, x) / np.maximum(ref, 1e-300))
    assert np.all(np.abs(got - ref)[big] / ref[big] <= 2 * size[big] * 2.2e-16)
    assert np.all(np.abs(got - ref)[~big] <= 1e-280)


def test_two_threads_agree_on_a_large_block_run(restore_threads):
    rng = np.random.default_rng(23)
    a, x = _ax(200003, rng)
    for dt in (ptl.float32, ptl.float64):
        at, xt = ptl.tensor(a, dtype=dt), ptl.tensor(x, dtype=dt)
        for fn in (ptl.special.gammainc, ptl.special.gammaincc):
            ptl.set_num_threads(1)
            one = fn(at, xt).numpy()
            ptl.set_num_threads(2)
            assert _same(fn(at, xt).numpy(), one)


@pytest.mark.skipif("PTL_CPU_CAPABILITY" in os.environ,
                    reason="already running with a capability chosen by a parent run")
@pytest.mark.parametrize("cap", ["default", "avx2"])
def test_portable_and_avx2_loops(cap):
    """Reruns this file with the portable and the AVX2 clones of the lanes."""
    rerun_with_capability(__file__, cap)
