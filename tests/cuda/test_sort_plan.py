"""The sort kernels' plan and per-element arithmetic (src/cuda/sort_plan.c and sort_plan.h,
compiled by gcc here and by nvcc for sort.cu), checked on the host: with
_C._cuda_kernel_emulation on, sort, argsort, msort and topk of CPU tensors go through the
CUDA path (the CPU kernel's checks and outputs, then the keys, merge passes and emit run on
the host in the kernels' grid order) and must reproduce NumPy's stable argsort exactly
(NaN last ascending and first descending, -0.0 equal to +0.0, equal elements in input
order both ways) and the CPU kernel bit for bit, under tunings that give grids of one block
(grid-stride loops) and many, for every dtype, lane lengths 0 to 4097 (every merge pass
count, runs with and without a partner), many lanes, every dim, non-contiguous inputs, int64
extremes and the gradients.  Needs no device and no nvcc."""
import numpy as np
import pytest

import pytorchlite as ptl
from kernel_emulation import TUNINGS, emulated

DTYPES = [ptl.bool, ptl.uint8, ptl.int8, ptl.int16, ptl.int32, ptl.int64, ptl.float16,
          ptl.bfloat16, ptl.float32, ptl.float64]
INTS = {ptl.bool, ptl.uint8, ptl.int8, ptl.int16, ptl.int32, ptl.int64}
LENGTHS = [0, 1, 2, 3, 31, 32, 33, 1000, 4097]


def values(rng, shape, dtype):
    """random values of dtype with many repeats (stability); floats with NaN, +-inf and
    +-0.0, int64 with its extremes"""
    n = int(np.prod(shape))
    if dtype == ptl.bool:
        return ptl.tensor(rng.integers(0, 2, size=shape).astype(bool))
    if dtype == ptl.int64:
        v = rng.integers(-5, 6, size=n)
        special = np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max, -1, 0])
    elif dtype in INTS:
        lo = 0 if dtype == ptl.uint8 else -5
        return ptl.tensor(rng.integers(lo, 6, size=shape)).to(dtype)
    else:
        v = rng.integers(-5, 6, size=n) * 0.5
        special = np.array([np.nan, -np.nan, np.inf, -np.inf, -0.0, 0.0])
    pick = rng.random(n) < 0.2
    v = np.where(pick, special[rng.integers(0, len(special), size=n)], v)
    return ptl.tensor(v.reshape(shape)).to(dtype)


def bits(t):
    """t's raw bytes (exact comparison, NaN payloads and the sign of zero included)"""
    dense = ptl.empty(t.numel(), dtype=t.dtype).copy_(t.reshape(-1))
    return dense.view(ptl.uint8).numpy().tobytes()


def np_of(t):
    """t as NumPy (float64 for float16 and bfloat16: exact)"""
    if t.dtype in (ptl.float16, ptl.bfloat16):
        return t.to(ptl.float64).numpy()
    return t.numpy()


def stable_argsort(x, descending):
    """NumPy's stable argsort along the last axis in PyTorch's order: NaN the largest,
    -0.0 == +0.0, ties in input order"""
    if not descending:
        return np.argsort(x, axis=-1, kind="stable")
    if x.dtype.kind == "f":
        # NaNs first, then the numbers from the largest (negated: ties keep their order)
        return np.lexsort((np.where(np.isnan(x), 0.0, -x), ~np.isnan(x)), axis=-1)
    return np.argsort(~x.astype(np.int64) if x.dtype != np.bool_ else ~x, axis=-1,
                      kind="stable")


def layouts(t):
    """t contiguous, transposed (a strided view of a copy) and sliced with a step"""
    out = [t]
    if t.dim() >= 2:
        out.append(t.transpose(0, 1).contiguous().transpose(0, 1))
    if t.dim() >= 1:
        big = ptl.cat([t, t], 0)
        out.append(big[::2])
    return out


def check_sort(t, dim, descending, tuning):
    want_v, want_i = ptl.sort(t, dim=dim, descending=descending)
    with emulated(TUNINGS[tuning]) as ran:
        got_v, got_i = ptl.sort(t, dim=dim, descending=descending)
        got_a = ptl.argsort(t, dim=dim, descending=descending)
    assert bits(got_v) == bits(want_v) and bits(got_i) == bits(want_i)
    assert bits(got_a) == bits(want_i)
    if t.dim() > 0:
        x = np.moveaxis(np_of(t), dim, -1)
        ref = stable_argsort(x, descending)
        np.testing.assert_array_equal(np.moveaxis(got_i.numpy(), dim, -1), ref)
        np.testing.assert_array_equal(np.moveaxis(np_of(got_v), dim, -1),
                                      np.take_along_axis(x, ref, -1))
    assert ran["sort"] == (2 if t.numel() > 0 else 0)


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_sort_of_every_lane_length_matches_numpy(tuning, dtype):
    rng = np.random.default_rng(1)
    for n in LENGTHS:
        t = values(rng, (n,), dtype)
        for view in layouts(t):
            for descending in (False, True):
                check_sort(view, 0, descending, tuning)


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_sort_along_every_dim_matches_numpy(tuning, dtype):
    rng = np.random.default_rng(2)
    for shape in [(3, 5, 4), (300, 7), (2, 33, 3), (4, 0, 3), ()]:
        t = values(rng, shape, dtype)
        for view in layouts(t):
            for dim in range(-1, max(t.dim(), 1)):
                for descending in (False, True):
                    check_sort(view, dim, descending, tuning)


def test_stability_of_equal_keys_and_signed_zeros():
    """equal values, and -0.0 and +0.0, keep their input order ascending and descending;
    the values keep their bits (the CPU kernel gathers them)"""
    x = ptl.tensor([0.0, -0.0, 1.0, -0.0, 0.0, 1.0, float("nan"), -1.0, float("nan")])
    with emulated(TUNINGS["tiny"]):
        v, i = ptl.sort(x)
        vd, idd = ptl.sort(x, descending=True)
    assert i.tolist() == [7, 0, 1, 3, 4, 2, 5, 6, 8]
    assert idd.tolist() == [6, 8, 2, 5, 0, 1, 3, 4, 7]
    assert [np.signbit(f) for f in v.numpy()[1:5]] == [False, True, True, False]


def test_int64_extremes():
    lo, hi = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    x = ptl.tensor([hi, lo, 0, -1, hi, lo, 1])
    with emulated(TUNINGS["small"]):
        v, i = ptl.sort(x)
        vd, idd = ptl.sort(x, descending=True)
    assert v.tolist() == [lo, lo, -1, 0, 1, hi, hi] and i.tolist() == [1, 5, 3, 2, 6, 0, 4]
    assert idd.tolist() == [0, 4, 6, 2, 3, 1, 5]


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != ptl.bool], ids=str)
def test_topk_matches_the_sorted_lanes_first_k(tuning, dtype):
    rng = np.random.default_rng(3)
    for shape, dim in [((33,), 0), ((4, 1000), 1), ((40, 6), 0), ((3, 5, 4), 1), ((), 0)]:
        t = values(rng, shape, dtype)
        n = t.shape[dim] if t.dim() else 1
        for view in layouts(t):
            for k in sorted({0, 1, n // 2, n}):
                for largest in (True, False):
                    want = ptl.topk(view, k, dim, largest)
                    with emulated(TUNINGS[tuning]) as ran:
                        got = ptl.topk(view, k, dim, largest)
                    assert bits(got[0]) == bits(want[0]) and bits(got[1]) == bits(want[1])
                    if view.dim() > 0:
                        x = np.moveaxis(np_of(view), dim, -1)
                        ref = stable_argsort(x, largest)[..., :k]
                        np.testing.assert_array_equal(np.moveaxis(got[1].numpy(), dim, -1),
                                                      ref)
                    assert ran["sort"] == (1 if got[0].numel() > 0 else 0)


def test_msort_and_errors_are_the_cpu_kernels():
    rng = np.random.default_rng(4)
    t = values(rng, (6, 5), ptl.float32)
    with emulated(TUNINGS["small"]) as ran:
        got = ptl.msort(t)
        with pytest.raises(RuntimeError, match="selected index k out of range"):
            ptl.topk(t, 6, 1)
        with pytest.raises(IndexError):
            ptl.sort(t, 2)
    assert bits(got) == bits(ptl.msort(t)) and ran["sort"] == 1


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
def test_gradients_through_sort_and_topk(tuning):
    """sort's and topk's backward scatter the gradient to the sorted indices: the CPU
    kernel's bits, and NumPy's values"""
    rng = np.random.default_rng(5)
    xv = rng.integers(-3, 4, size=(6, 40)).astype(np.float64)
    gv = rng.standard_normal((6, 40))

    def grads():
        x = ptl.tensor(xv).requires_grad_(True)
        v, _ = ptl.sort(x, 1, descending=True)
        (v * ptl.tensor(gv)).sum().backward()
        g1 = x.grad.clone()
        x.grad = None
        v, _ = ptl.topk(x, 4, 0)
        (v * ptl.tensor(gv[:4])).sum().backward()
        return g1, x.grad

    want = grads()
    with emulated(TUNINGS[tuning]) as ran:
        got = grads()
    for g, w in zip(got, want):
        assert bits(g) == bits(w)
    order = stable_argsort(xv, True)
    ref = np.zeros_like(xv)
    np.put_along_axis(ref, order, gv, 1)
    np.testing.assert_array_equal(got[0].numpy(), ref)
    assert ran["sort"] == 2


@pytest.mark.parametrize("threads", [1, 2])
def test_results_do_not_depend_on_the_thread_count(threads):
    rng = np.random.default_rng(6)
    t = values(rng, (50, 300), ptl.float32)
    old = ptl.get_num_threads()
    ptl.set_num_threads(threads)
    try:
        want = ptl.sort(t, 1)
        with emulated(TUNINGS["small"]):
            got = ptl.sort(t, 1)
    finally:
        ptl.set_num_threads(old)
    assert bits(got[0]) == bits(want[0]) and bits(got[1]) == bits(want[1])
