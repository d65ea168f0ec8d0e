"""special.entr's float32 and float64 loops (src/aten/native/special.c): blocks of 256
elements whose logs come from vec_math.h's double log of positive normal numbers (AVX2,
AVX-512) or its scalar twin scalar_math.h's ptl_log_normal (the portable loop, float16 and
bfloat16), subnormal float64 x, 0, negative x, inf and NaN by the scalar formula.  Checked
against NumPy in float64 at sizes around the block's edge, strided and on one and two
threads, within test_special_functions.py's bounds (float64 2 ulps, float32 1 ulp); every
layout and every capability gives the same bits."""
import os

import numpy as np
import pytest

import pytorchlite as ptl
from helpers import rerun_with_capability

SIZES = [0, 1, 15, 16, 17, 255, 256, 257, 1000]
SPECIALS = [0.0, -0.0, -1.0, np.inf, -np.inf, np.nan, 5e-324, 1e-310, 2.2250738585072014e-308,
            1.0, 1e-45, 3e38]


def _x(size, rng, top):
    x = np.concatenate([rng.uniform(0, 5, size), np.exp(rng.uniform(-top, top, size))])
    x = rng.permutation(x)[:size]
    odd = rng.random(size) < 0.1
    x[odd] = rng.choice(SPECIALS, odd.sum())
    return x


def _want(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.isnan(x), x, np.where(x > 0, -x * np.log(np.where(x > 0, x, 1.0)),
                                                 np.where(x == 0, 0.0, -np.inf)))


def _ulps(got, want, dtype):
    with np.errstate(over="ignore", invalid="ignore"):
        same = (got == want.astype(dtype).astype(np.float64)) | (np.isnan(got) & np.isnan(want))
        scale = np.abs(want).astype(dtype)
        err = np.abs(got - want) / np.spacing(scale).astype(np.float64)
    return np.where(same, 0.0, err)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_values_and_layouts(dtype, threads):
    rng = np.random.default_rng(11)
    dt = getattr(ptl, dtype)
    for size in SIZES:
        x = _x(size, rng, 700 if dtype == "float64" else 87).astype(dtype)
        got = ptl.special.entr(ptl.tensor(x)).numpy()
        assert got.dtype == np.dtype(dtype)
        err = _ulps(got.astype(np.float64), _want(x.astype(np.float64)), np.dtype(dtype))
        assert err.max(initial=0) <= (2 if dtype == "float64" else 1)
        strided = ptl.special.entr(ptl.tensor(np.repeat(x, 2), dtype=dt)[::2]).numpy()
        np.testing.assert_array_equal(strided, got)
        if size <= 17:
            one = [ptl.special.entr(ptl.tensor([v], dtype=dt)).item() for v in x]
            np.testing.assert_array_equal(np.array(one, dtype=dtype), got)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_halves_round_the_float32_value(dtype):
    x = np.concatenate([np.linspace(0, 6, 300), SPECIALS])
    t = ptl.tensor(x, dtype=getattr(ptl, dtype))
    want = ptl.special.entr(t.float()).to(getattr(ptl, dtype)).double().numpy()
    got = ptl.special.entr(t).double().numpy()
    np.testing.assert_array_equal(got, want)


@pytest.mark.skipif("PTL_CPU_CAPABILITY" in os.environ,
                    reason="already running with a capability chosen by a parent run")
@pytest.mark.parametrize("cap", ["default", "avx2"])
def test_portable_and_avx2_loops(cap):
    """Reruns this file with the portable loop (ptl_log_normal) and AVX2's."""
    rerun_with_capability(__file__, cap)
