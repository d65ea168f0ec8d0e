"""The casts of training with vectorized contiguous loops (Note [Vectorized casts] in copy.c):
float32 -> int64 / int32, float64 -> int64, int64 / int32 / uint8 / bool -> float32,
float32 <-> float64, int64 -> float64.  A contiguous run takes the AVX2 or AVX-512 loop, a
strided one the table's scalar loop: both give the same bits, PyTorch's x86 results for NaN
and out-of-range values (INT64_MIN / INT32_MIN), and NumPy's float64 numbers elsewhere."""
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import rerun_with_capability

INT_MIN = {ptl.int64: np.iinfo(np.int64).min, ptl.int32: np.iinfo(np.int32).min}

# (source numpy dtype, destination dtype): the pairs of copy.c's vec_convs
PAIRS = [(np.float32, ptl.int64), (np.float32, ptl.int32), (np.float64, ptl.int64),
         (np.int64, ptl.float32), (np.int32, ptl.float32), (np.uint8, ptl.float32),
         (np.bool_, ptl.float32), (np.float64, ptl.float32), (np.float32, ptl.float64),
         (np.int64, ptl.float64)]
NP_OF = {ptl.int64: np.int64, ptl.int32: np.int32, ptl.float32: np.float32,
         ptl.float64: np.float64}
# run lengths around the vector widths (4 to 16 lanes, unrolled by gcc) and a run that is
# split over two threads
LENGTHS = list(range(0, 34)) + [63, 64, 65, 127, 128, 129, 255, 256, 257, 100003]


def values(src, n, seed):
    rng = np.random.default_rng(seed)
    if src == np.bool_:
        return rng.integers(0, 2, n).astype(np.bool_)
    if np.issubdtype(src, np.integer):
        info = np.iinfo(src)
        a = rng.integers(info.min, info.max, n, dtype=src, endpoint=True)
        special = np.array([0, 1, -1, info.min, info.max, 2 ** 24 + 1, 255], dtype=np.int64)
        special = special[(special >= info.min) & (special <= info.max)].astype(src)
    else:
        a = (rng.standard_normal(n) * 10.0 ** rng.integers(-8, 25, n)).astype(src)
        special = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30, -1e30, 2.0 ** 31,
                            -2.0 ** 31, 2.0 ** 31 - 128, -2.0 ** 31 - 256, 2.0 ** 63, -2.0 ** 63,
                            -0.5, 0.5, 2.5, 1e-45, 1e-40, 3.4e38, 2.0 ** 53 + 2], dtype=src)
    a[:min(n, special.size)] = special[:n]
    return rng.permutation(a)


def strided(a):
    wide = np.zeros(2 * a.size, dtype=a.dtype)
    wide[::2] = a
    return ptl.tensor(wide)[::2]


def reference(a, dst):
    """NumPy's float64 values: integers truncated toward zero, NaN and out of range to the
    integer's minimum (cvttss2si / vcvttps2qq, what PyTorch gives on x86)"""
    if dst in INT_MIN:
        info = np.iinfo(NP_OF[dst])
        x = a.astype(np.float64)
        ok = (x >= info.min) & (x < -float(info.min))
        out = np.full(a.shape, info.min, dtype=NP_OF[dst])
        out[ok] = np.trunc(x[ok]).astype(NP_OF[dst])
        return out
    return a.astype(NP_OF[dst])


def bits(x):
    return np.ascontiguousarray(x).tobytes()


@pytest.mark.parametrize("src, dst", PAIRS, ids=str)
def test_vector_and_scalar_loops_give_the_same_bits(src, dst, threads):
    for n in LENGTHS:
        a = values(src, n, seed=n)
        fast = ptl.tensor(a).to(dst).numpy()
        slow = strided(a).to(dst).contiguous().numpy()
        assert bits(fast) == bits(slow), (src, dst, n)
        np.testing.assert_array_equal(fast, reference(a, dst), err_msg=f"n={n}")


@pytest.mark.parametrize("src, dst", PAIRS, ids=str)
def test_strided_destination_and_offset_runs(src, dst):
    a = values(src, 300, seed=1)
    for lo in range(0, 17):                     # runs starting at every lane of a vector
        np.testing.assert_array_equal(ptl.tensor(a)[lo:].to(dst).numpy(),
                                      reference(a[lo:], dst))
    out = ptl.zeros(600, dtype=dst)
    out[::2].copy_(ptl.tensor(a))
    np.testing.assert_array_equal(out[::2].numpy(), reference(a, dst))
    assert not out[1::2].numpy().any()
    assert ptl.tensor(a[:0]).to(dst).shape == (0,)
    assert ptl.tensor(a[3]).to(dst).item() == reference(a[3:4], dst)[0]


REAL = {"bool": np.bool_, "uint8": np.uint8, "int8": np.int8, "int16": np.int16,
        "int32": np.int32, "int64": np.int64, "float16": np.float16, "bfloat16": None,
        "float32": np.float32, "float64": np.float64}
# every pair of real dtypes: copy.c's vec_convs, or the F16C loops between float16 and
# float32 / float64
ALL_PAIRS = [(s, d) for s in REAL for d in REAL if s != d]


def bf16_bits(f):
    """float32 values rounded to bfloat16 (to nearest even, NaN quiet), as uint16"""
    u = np.asarray(f, np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7fff + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(f), ((u >> 16) | 0x40).astype(np.uint16), r)


def source(src, n, seed):
    """(tensor, float64-or-int64 values) of dtype src: values() of the nearest NumPy dtype,
    bfloat16 from float32 values it holds exactly"""
    if src == "bfloat16":
        f = values(np.float32, n, seed)
        f = (bf16_bits(f).astype(np.uint32) << 16).view(np.float32)
        return ptl.tensor(f).bfloat16(), f
    a = values(REAL[src], n, seed)
    return ptl.tensor(a), a


def expected_bits(a, src, dst):
    """The cast of a (source values) to dst as bits (NaN positions masked by the caller):
    floats to integers truncate, NaN and out of range give INT64_MIN (int64) or INT32_MIN
    wrapped to the type; integers wrap; float16 and bfloat16 round through float32"""
    with np.errstate(all="ignore"):
        if dst == "bool":
            return (a != 0).astype(np.uint8)
        if dst == "bfloat16":
            return bf16_bits(a.astype(np.float32))
        if dst in ("float16", "float32", "float64"):
            v = a.astype(np.float32).astype(np.float16) if dst == "float16" else a.astype(REAL[dst])
            return v.view({"float16": np.uint16, "float32": np.uint32, "float64": np.uint64}[dst])
        if a.dtype.kind in "biu":
            return a.astype(np.int64).astype(REAL[dst])
        x = a.astype(np.float64)
        if dst == "int64":
            ok = (x >= -2.0 ** 63) & (x < 2.0 ** 63)
            out = np.full(a.shape, np.iinfo(np.int64).min, np.int64)
        else:
            ok = (x >= -2.0 ** 31) & (x < 2.0 ** 31)
            out = np.full(a.shape, np.iinfo(np.int32).min, np.int64)
        out[ok] = np.trunc(x[ok]).astype(np.int64)
        return out.astype(REAL[dst])


def bits_of(t, dst):
    t = t.contiguous()
    if dst == "bfloat16":
        return t.view(ptl.int16).numpy().view(np.uint16)
    a = t.numpy()
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.itemsize]) \
        if dst.startswith("float") else a.astype(np.uint8) if dst == "bool" else a


def wide_strided(t):
    """t's values as a non-contiguous tensor (every other element of a wider one)"""
    wide = t.new_zeros(2 * t.shape[0])
    wide[::2] = t
    return wide[::2]


@pytest.mark.parametrize("src, dst", ALL_PAIRS, ids=str)
def test_every_real_pair_vector_and_scalar_bits(src, dst):
    """A contiguous run takes the vectorized loop (Note [Vectorized casts]), a strided one
    the table's: the same bits at every length around the vector widths and from every lane
    offset, and the expected values (NaN stays NaN)"""
    to = getattr(ptl, dst)
    with np.errstate(all="ignore"):
        for n in [0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 257,
                  100003]:
            t, a = source(src, n, seed=n)
            fast = bits_of(t.to(to), dst)
            np.testing.assert_array_equal(fast, bits_of(wide_strided(t).to(to), dst),
                                          err_msg=f"n={n}")
            nan = np.isnan(a) if a.dtype.kind == "f" and dst.startswith(("float", "bf")) \
                else np.zeros(n, bool)
            np.testing.assert_array_equal(fast[~nan], expected_bits(a, src, dst)[~nan],
                                          err_msg=f"n={n}")
            if nan.any():
                assert np.isnan(t.to(to)[ptl.tensor(nan)].double().numpy()).all()
        t, a = source(src, 300, seed=1)
        for lo in range(17):
            np.testing.assert_array_equal(bits_of(t[lo:].to(to), dst),
                                          bits_of(wide_strided(t[lo:]).to(to), dst))


@pytest.mark.parametrize("src", [np.float32, np.float64], ids=str)
def test_bfloat16_rounding_edges_at_every_lane(src):
    """copy.c's hand-written float32 / float64 -> bfloat16 loops (16 values a block): ties
    to even both ways, the largest floats (rounding to inf), subnormals, +-0 and NaNs with
    payloads (quiet and signaling) at every lane of a block, the strided loop's bits and
    bf16_bits' (float64 through float32, as the scalar loop rounds it)"""
    ties = np.array([0x3f808000, 0x3f818000, 0xbf808000, 0x3f80ffff, 0x7f7fffff, 0xff7f8000,
                     0x7f7f7fff, 0x00018000, 0x80008000, 0x00000001, 0x80000000, 0x00000000,
                     0x7f800000, 0xff800000, 0x7fc12345, 0xffa00001, 0x7f800001],
                    np.uint32).view(np.float32)
    with np.errstate(all="ignore"):
        edges = ties.astype(src)
        base = np.linspace(-3, 3, 16, dtype=src)
        runs = [np.tile(edges, 5)[:n] for n in (16, 17, 33, 85)]
        for v in edges:
            for k in range(16):
                a = base.copy()
                a[k] = v
                runs.append(a)
        for a in runs:
            t = ptl.tensor(a)
            fast = bits_of(t.bfloat16(), "bfloat16")
            np.testing.assert_array_equal(fast, bits_of(wide_strided(t).bfloat16(), "bfloat16"))
            np.testing.assert_array_equal(fast, bf16_bits(a.astype(np.float32)))


@pytest.mark.parametrize("src", [np.float32, np.float64], ids=str)
def test_int64_casts_around_the_mantissa_range(src):
    """AVX2's float -> int64 loops read a block of four values of magnitude below 2^51 out of
    the mantissa and take the scalar formula for a block with any other value (Note [AVX2
    casts into int64]): each value at and next to +-2^51, at every lane of a block of small
    values, and four of them in a block, give NumPy's truncation and the strided loop's bits"""
    edge = src(2.0 ** 51)
    near = [np.nextafter(edge, src(0)), edge, np.nextafter(edge, src(np.inf)),
            src(2.0 ** 51 + 3), src(2.0 ** 51 - 0.5), src(2.0 ** 50 + 0.75)]
    near = np.array(near + [-v for v in near], dtype=src)
    small = np.array([1.5, -2.7, 3.0, -0.0, 7.9, -8.5, 0.25, 11.0, -12.0], dtype=src)
    runs = [np.tile(near, 3)]
    for v in near:
        for k in range(len(small)):
            a = small.copy()
            a[k] = v
            runs.append(a)
    for a in runs:
        fast = ptl.tensor(a).to(ptl.int64).numpy()
        np.testing.assert_array_equal(fast, reference(a, ptl.int64), err_msg=str(a))
        assert bits(fast) == bits(strided(a).to(ptl.int64).contiguous().numpy())
    assert ptl.tensor(near[:1]).long().item() == int(near[0])


@pytest.mark.parametrize("cap", ["default", "avx2"])
def test_portable_and_avx2_loops(cap):
    """Reruns this file with the vector loops switched off, and with AVX2 only."""
    rerun_with_capability(__file__, cap, "-k", "not portable_and_avx2")
