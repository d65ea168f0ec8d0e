"""float32 / float64 <-> float16 and bfloat16 casts (Note [Half-precision conversions] in
copy.c): contiguous runs take F16C (8 values a block, 16 with AVX-512) or a vectorized loop,
strided ones dtype.h's functions element by element; both give the same bits, and NumPy's
float16 the same numbers.  The file reruns capped at AVX2 and at the portable loops."""
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import rerun_with_capability


def all_halves():
    return np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)


def floats_near_halves():
    """Every finite half, the float32 midpoints between neighbours (ties to even) and one
    float32 step either side of them, below the subnormals, around the overflow to inf
    (65504, 65520), infinities and NaNs (quiet, signalling, both signs)."""
    h = all_halves().astype(np.float64)
    h = np.sort(h[np.isfinite(h)])
    mids = (h[:-1] + h[1:]) / 2
    f = np.concatenate([h, mids]).astype(np.float32)
    f = np.concatenate([f, np.nextafter(f, np.float32(np.inf)),
                        np.nextafter(f, np.float32(-np.inf)),
                        np.array([65504, 65519.99, 65520, 65536, 1e30, 2.0 ** -25, 2.0 ** -26,
                                  3 * 2.0 ** -26, 1e-30, 0.0, -0.0, np.inf, -np.inf],
                                 dtype=np.float32)])
    nans = np.array([0x7fc00000, 0xffc00000, 0x7f800001, 0x7fa00000, 0xff812345],
                    dtype=np.uint32).view(np.float32)
    return np.concatenate([f, nans])


def strided(a):
    """The same values as a non-contiguous tensor (every other element of a wider one)."""
    wide = np.zeros(2 * a.size, dtype=a.dtype)
    wide[::2] = a
    return ptl.tensor(wide)[::2]


def as_bits(t, np_dtype):
    t = t.contiguous()
    if t.dtype == ptl.bfloat16:          # NumPy has no bfloat16: its bytes as int16
        t = t.view(ptl.int16)
    return t.numpy().view(np_dtype)


@pytest.mark.parametrize("threads_n", [1, 2])
def test_float_to_half_matches_numpy_and_the_scalar_path(threads_n):
    old = ptl.get_num_threads()
    ptl.set_num_threads(threads_n)
    try:
        f = floats_near_halves()
        fast = ptl.tensor(f).half()
        slow = strided(f).half()
        np.testing.assert_array_equal(as_bits(fast, np.uint16), as_bits(slow, np.uint16))
        finite = ~np.isnan(f)
        with np.errstate(over="ignore"):
            expected = f[finite].astype(np.float16).view(np.uint16)
        np.testing.assert_array_equal(as_bits(fast, np.uint16)[finite], expected)
        assert np.isnan(fast.float().numpy()[~finite]).all()
    finally:
        ptl.set_num_threads(old)


def test_half_to_float_is_exact_on_every_half():
    h = all_halves()
    fast = ptl.tensor(h).float()
    slow = strided(h).float()
    np.testing.assert_array_equal(as_bits(fast, np.uint32), as_bits(slow, np.uint32))
    finite = ~np.isnan(h)
    np.testing.assert_array_equal(fast.numpy()[finite], h[finite].astype(np.float32))
    assert np.isnan(fast.numpy()[~finite]).all()


@pytest.mark.parametrize("n", [1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47])
def test_blocks_and_tails_with_a_nan_anywhere(n):
    # the F16C loops take 8 (AVX-512: 16) values a block and redo a block holding a NaN one
    # by one; the bfloat16 loops are vectorized by gcc, 8 or 16 lanes
    base = np.random.default_rng(n).standard_normal(n).astype(np.float32) * 1000
    for k in range(n):
        a = base.copy()
        a[k] = np.nan
        for src, conv in ((a, lambda t: t.half()), (a.astype(np.float16), lambda t: t.float()),
                          (a, lambda t: t.bfloat16()),
                          (a, lambda t: t.bfloat16().float())):
            fast, slow = conv(ptl.tensor(src)), conv(strided(src))
            item = np.uint32 if fast.dtype == ptl.float32 else np.uint16
            np.testing.assert_array_equal(as_bits(fast, item), as_bits(slow, item))


def test_bfloat16_round_trip_matches_the_scalar_path():
    f = floats_near_halves()
    f = np.concatenate([f, np.random.default_rng(3).standard_normal(1000).astype(np.float32),
                        np.array([3.4e38, -3.4e38, 1e-40, -1e-45], dtype=np.float32)])
    fast = ptl.tensor(f).bfloat16()
    slow = strided(f).bfloat16()
    np.testing.assert_array_equal(as_bits(fast, np.uint16), as_bits(slow, np.uint16))
    # round to nearest even on the upper 16 bits, NaN stays NaN
    u = f.view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7fff + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    finite = ~np.isnan(f)
    np.testing.assert_array_equal(as_bits(fast, np.uint16)[finite], rounded[finite])
    back = fast.float()
    np.testing.assert_array_equal(as_bits(back, np.uint32),
                                  as_bits(fast, np.uint16).astype(np.uint32) << 16)
    np.testing.assert_array_equal(as_bits(back, np.uint32), as_bits(strided(
        as_bits(fast, np.int16)).view(ptl.bfloat16).float(), np.uint32))


def doubles_near_halves():
    """floats_near_halves() as float64, with the doubles one float64 step either side of
    every float32 value (ties that float64 -> float32 -> float16 rounds twice) and doubles
    beyond float32's range"""
    with np.errstate(invalid="ignore"):             # the signalling NaNs
        f = floats_near_halves().astype(np.float64)
    finite = f[np.isfinite(f)]
    big = np.array([1e300, -1e300, 3.5e38, 1e-300, -1e-320, 2.0 ** -1074], dtype=np.float64)
    nans = np.array([0x7ff8000000000000, 0xfff8000000000000, 0x7ff0000000000001,
                     0x7ff4000000000000], dtype=np.uint64).view(np.float64)
    return np.concatenate([f, np.nextafter(finite, np.inf), np.nextafter(finite, -np.inf), big,
                           nans])


@pytest.mark.parametrize("half", ["float16", "bfloat16"])
def test_double_to_half_goes_through_float(half):
    """float64 -> float16 / bfloat16 rounds to float32 first, as PyTorch does (NumPy rounds
    once): the F16C loop (float16) and the vectorized one (bfloat16) give the scalar path's
    bits, a NaN stays NaN"""
    d = doubles_near_halves()
    to = getattr(ptl, half)
    fast = ptl.tensor(d).to(to)
    slow = strided(d).to(to)
    np.testing.assert_array_equal(as_bits(fast, np.uint16), as_bits(slow, np.uint16))
    with np.errstate(over="ignore", invalid="ignore"):
        f = d.astype(np.float32)
        expected = f.astype(np.float16).view(np.uint16)
    np.testing.assert_array_equal(as_bits(fast, np.uint16),
                                  as_bits(ptl.tensor(f).to(to), np.uint16))
    finite = ~np.isnan(d)
    if half == "float16":
        np.testing.assert_array_equal(as_bits(fast, np.uint16)[finite], expected[finite])
    assert np.isnan(fast.double().numpy()[~finite]).all()


@pytest.mark.parametrize("half", ["float16", "bfloat16"])
def test_half_to_double_is_exact_on_every_half(half):
    bits16 = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    src = ptl.tensor(bits16.view(np.int16)).view(getattr(ptl, half))
    fast = src.double()
    slow = strided(bits16.view(np.int16)).view(getattr(ptl, half)).double()
    np.testing.assert_array_equal(as_bits(fast, np.uint64), as_bits(slow, np.uint64))
    np.testing.assert_array_equal(as_bits(fast, np.uint64),
                                  as_bits(src.float().double(), np.uint64))
    if half == "float16":
        h = bits16.view(np.float16)
        finite = ~np.isnan(h)
        np.testing.assert_array_equal(fast.numpy()[finite], h[finite].astype(np.float64))


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65])
def test_double_blocks_and_tails_with_a_nan_anywhere(n):
    # the float64 F16C loops take 8 values a block (float64 -> float16 16 with AVX-512) and
    # redo a block holding a NaN one by one
    base = np.random.default_rng(n).standard_normal(n) * 1000
    for k in range(max(n, 1)):
        a = base.copy()
        if n:
            a[k] = np.nan
        for src, conv in ((a, lambda t: t.half()), (a.astype(np.float16), lambda t: t.double()),
                          (a, lambda t: t.bfloat16()),
                          (a.astype(np.float32), lambda t: t.bfloat16().double())):
            fast, slow = conv(ptl.tensor(src)), conv(strided(src))
            item = np.uint64 if fast.dtype == ptl.float64 else np.uint16
            np.testing.assert_array_equal(as_bits(fast, item), as_bits(slow, item))
        for lo in range(min(n, 17)):            # runs starting at every lane of a block
            np.testing.assert_array_equal(as_bits(ptl.tensor(a)[lo:].half(), np.uint16),
                                          as_bits(strided(a[lo:]).half(), np.uint16))


@pytest.mark.parametrize("cap", ["default", "avx2"])
def test_portable_and_avx2_loops(cap):
    """Reruns this file with F16C off (dtype.h's functions), and with 8-value blocks."""
    rerun_with_capability(__file__, cap, "-k", "not portable_and_avx2")
