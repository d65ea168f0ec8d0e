"""Sorting, selection and cumulative ops (src/aten/native/sort.c) and their derivatives
(src/autograd/derivatives_sort.c): sort, argsort, msort, topk, kthvalue, median, nanmedian,
mode, quantile, nanquantile, cummax, cummin, logcumsumexp.  NumPy float64 (exact for ints) is
the reference; PyTorch's own choices (NaN placement, tie indices, errors) are cross-checked
against PyTorch's recorded outputs (golden.py; live torch too when installed)."""
import re
import warnings

import numpy as np
import pytest

import pytorchlite as ptl
from golden import golden
from helpers import (ALL_DTYPES, FLOAT_DTYPES, LAYOUTS, SHAPES, assert_close,
                     make, to_numpy, torch)
from pytorchlite.autograd import gradcheck, gradgradcheck


NAN = float("nan")
# shapes with at least one dim, the dims to try on each
DIM_CASES = [(s, d) for s in SHAPES for d in range(-len(s), len(s))] + [((), 0), ((), -1)]
NONEMPTY_LANES = [(s, d) for s, d in DIM_CASES if (s[d] if s else 1) > 0]


def np_lanes(a, d, shape):
    """a with the lane dim last (a 0-dim array becomes one lane of length 1)."""
    return a.reshape(1) if len(shape) == 0 else np.moveaxis(a, d, -1)


def stable_argsort(a, d, shape, descending=False):
    x = np_lanes(np.asarray(a, dtype=np.float64), d, shape)
    idx = np.argsort(-x if descending else x, axis=-1, kind="stable")
    return idx.reshape(()) if len(shape) == 0 else np.moveaxis(idx, -1, d)


# ---- sort / argsort / msort ----

@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_sort_every_dtype_shape_layout(dtype, layout):
    for shape, d in DIM_CASES:
        t, a = make(shape, dtype, layout, seed=len(shape) + d + 3)
        for desc in (False, True):
            v, i = ptl.sort(t, dim=d, descending=desc, stable=True)
            idx = stable_argsort(a, d, shape, desc)
            assert_close(i, idx, dtype=ptl.int64)
            ref = np.take_along_axis(np.asarray(a).reshape(np.shape(idx)), idx, axis=d) \
                if shape else a
            assert_close(v, np.asarray(ref, dtype=np.float64) if dtype in FLOAT_DTYPES else ref,
                         dtype=dtype)
            assert_close(ptl.argsort(t, d, desc), idx, dtype=ptl.int64)


def test_sort_overloads_and_methods():
    t, a = make((4, 6), ptl.float32, seed=3)
    assert_close(t.sort()[0], np.sort(a, -1))
    assert_close(t.sort(0, True).values, -np.sort(-a, 0))
    assert_close(t.argsort(dim=0), np.argsort(a, 0, kind="stable"))
    assert_close(ptl.argsort(t, stable=True, dim=1), np.argsort(a, 1, kind="stable"))
    assert_close(ptl.sort(t, stable=None).indices, np.argsort(a, -1, kind="stable"))
    assert_close(ptl.msort(t), np.sort(a, 0))
    assert_close(t.msort(), np.sort(a, 0))
    r = ptl.sort(t)
    assert type(r).__name__ == "sort" and r._fields == ("values", "indices")
    assert repr(r).startswith("torch.return_types.sort(")


@pytest.mark.parametrize("dtype", [ptl.bool, ptl.uint8, ptl.int8, ptl.int64, ptl.float16,
                                   ptl.float32, ptl.float64])
def test_sort_stability_with_many_ties(dtype):
    gen = np.random.default_rng(0)
    a = gen.integers(0, 2 if dtype == ptl.bool else 4, size=(5, 300)).astype(np.float64)
    t = ptl.tensor(a).to(dtype)
    for desc in (False, True):
        i = ptl.sort(t, dim=1, descending=desc, stable=True).indices
        assert_close(i, np.argsort(-a if desc else a, axis=1, kind="stable"))
        if torch is not None:
            assert_close(i, torch.sort(torch.tensor(a), dim=1, descending=desc, stable=True)
                         .indices.numpy())


def test_sort_long_lane_matches_numpy_and_parallel_lanes():
    gen = np.random.default_rng(1)
    for np_dt, dt in [(np.float32, ptl.float32), (np.float64, ptl.float64),
                      (np.int32, ptl.int32), (np.int64, ptl.int64)]:
        a = (gen.standard_normal(20000) * 1e6).astype(np_dt)
        v, i = ptl.sort(ptl.tensor(a))
        assert_close(i, np.argsort(a, kind="stable"))
        assert (v.numpy() == np.sort(a)).all()
    b = gen.standard_normal((64, 2000)).astype(np.float32)
    assert_close(ptl.argsort(ptl.tensor(b).t(), dim=0), np.argsort(b.T, 0, kind="stable"))


@pytest.mark.parametrize("n", [32, 33, 4000])
def test_sort_long_lanes_of_64_bit_keys(n):
    """int64 / float64 lanes past the insertion-sort limit (32): values decoded from the
    radix keys (zeros and NaNs gathered, so their sign and payload survive) and radix passes
    only over the key bytes that differ (here the lowest and the highest ones)."""
    gen = np.random.default_rng(n)
    ints = gen.integers(0, 256, n) + (gen.integers(-2, 2, n) << 56)
    floats = gen.choice([np.nan, -0.0, 0.0, np.inf, -np.inf, 1.5, -2.25, 1e-310], n)
    for a in (ints, floats, np.full(n, 7, np.int64)):
        for desc in (False, True):
            v, i = ptl.sort(ptl.tensor(a), descending=desc)
            key = np.nan_to_num(-a if desc else a, nan=0.0)
            nan_rank = np.isnan(a) if a.dtype.kind == "f" else np.zeros(n, bool)
            order = np.lexsort((np.arange(n), key, ~nan_rank if desc else nan_rank))
            assert_close(i, order)
            assert (v.numpy().view(np.int64) == a[order].view(np.int64)).all()


@pytest.mark.parametrize("n", [33, 257, 4000])
def test_sort_int64_lanes_by_the_range_of_their_keys(n):
    """Long int64 lanes sort their keys less the smallest, on the bytes of the largest
    difference only (radix64): small values of both signs, ranges at and across byte
    boundaries, the extremes together, all equal, many ties; ascending and descending, stable
    indices and the values back"""
    gen = np.random.default_rng(n)
    info = np.iinfo(np.int64)
    cases = [gen.integers(-1000, 1000, n), gen.integers(0, 256, n), gen.integers(0, 257, n),
             gen.integers(-2**31, 2**31, n), gen.integers(-2**40, 2**40, n) * 3,
             gen.integers(info.min, info.max, n, endpoint=True),
             np.where(gen.integers(0, 2, n) == 1, info.min, info.max),
             np.full(n, info.min), gen.integers(-3, 3, n) * 2**50 + info.max // 2]
    for a in cases:
        a = a.astype(np.int64)
        a[:2] = a[-2:]                  # ties
        for desc in (False, True):
            v, i = ptl.sort(ptl.tensor(a), descending=desc, stable=True)
            order = np.lexsort((np.arange(n), -a.astype(object) if desc else a))
            np.testing.assert_array_equal(i.numpy(), order)
            np.testing.assert_array_equal(v.numpy(), a[order])
            np.testing.assert_array_equal(ptl.argsort(ptl.tensor(a), descending=desc,
                                                      stable=True).numpy(), order)


def test_sort_nan_inf_and_signed_zero_like_torch():
    vals = [3.0, NAN, -np.inf, -0.0, 0.0, np.inf, NAN, -1.0, 0.0, -0.0]
    for dtype in (ptl.float16, ptl.bfloat16, ptl.float32, ptl.float64):
        for desc in (False, True):
            v, i = ptl.sort(ptl.tensor(vals, dtype=dtype), descending=desc, stable=True)
            tv, ti = golden(lambda: tuple(torch.sort(
                torch.tensor(vals, dtype=getattr(torch, str(dtype).split(".")[1])),
                descending=desc, stable=True)))
            assert_close(i, ti.numpy())
            assert_close(v, tv.numpy())
            assert (np.signbit(to_numpy(v)) == np.signbit(tv.numpy())).all()


def test_sort_int_extremes():
    for dtype, np_dt in [(ptl.int8, np.int8), (ptl.int16, np.int16), (ptl.int32, np.int32),
                         (ptl.int64, np.int64), (ptl.uint8, np.uint8)]:
        info = np.iinfo(np_dt)
        a = np.array([info.max, 0, info.min, 1, info.max - 1, info.min + 1, 0], dtype=np_dt)
        v, i = ptl.sort(ptl.tensor(a))
        assert_close(v, np.sort(a))
        assert_close(i, np.argsort(a, kind="stable"))
        assert_close(ptl.sort(ptl.tensor(a), descending=True).values, np.sort(a)[::-1].copy())


def test_sort_errors():
    t = ptl.tensor([1.0, 2.0])
    with pytest.raises(IndexError, match=re.escape(
            "Dimension out of range (expected to be in range of [-1, 0], but got 2)")):
        ptl.sort(t, 2)
    with pytest.raises(IndexError, match=re.escape(
            "Dimension out of range (expected to be in range of [-1, 0], but got 1)")):
        ptl.argsort(t, 1)


# ---- topk ----

@pytest.mark.parametrize("dtype", [d for d in ALL_DTYPES if d != ptl.bool])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_topk(dtype, layout):
    for shape, d in DIM_CASES:
        t, a = make(shape, dtype, layout, seed=7)
        n = shape[d] if shape else 1
        x = np_lanes(np.asarray(a, dtype=np.float64), d, shape)
        for k in sorted({0, min(1, n), n // 2, n}) if shape else [1]:
            for largest in (True, False):
                v, i = ptl.topk(t, k, d, largest)
                ref = (-np.sort(-x, -1) if largest else np.sort(x, -1))[..., :k]
                ref = ref.reshape(()) if not shape else np.moveaxis(ref, -1, d)
                assert_close(v, ref, dtype=dtype)
                if shape:   # the indices point at the values
                    got = np.take_along_axis(np.asarray(a, dtype=np.float64), to_numpy(i), d)
                    assert_close(v, got)


def test_topk_nan_like_torch_and_errors():
    vals = [1.0, NAN, 5.0, -2.0, NAN, 5.0]
    for largest in (True, False):
        assert_close(ptl.topk(ptl.tensor(vals), 3, largest=largest).values,
                     golden(lambda: torch.topk(torch.tensor(vals), 3, largest=largest).values)
                     .numpy())
    assert_close(ptl.tensor(vals).topk(2).values, [NAN, NAN])
    for k in (-1, 7):
        with pytest.raises(RuntimeError, match=re.escape("selected index k out of range")):
            ptl.topk(ptl.tensor(vals), k)
    with pytest.raises(RuntimeError, match=re.escape("topk does not support bool dtypes on CPU")):
        ptl.topk(ptl.tensor([True, False]), 1)
    r = ptl.topk(ptl.tensor(vals), 2)
    assert repr(r).startswith("torch.return_types.topk(")


def test_topk_of_a_0_dim_tensor_is_its_element_for_k_0_and_1():
    """as torch.topk(torch.tensor(5.), 0): the element and index 0, not an empty result"""
    for k in (0, 1):
        v, i = ptl.topk(ptl.tensor(5.0), k)
        assert v.shape == () and v.item() == 5.0 and i.item() == 0


def test_topk_small_k_of_long_lanes():
    """k far below the lane length takes the heap path: the same set and order as the
    first k of the stable sort, NaN counted as the largest."""
    gen = np.random.default_rng(3)
    for dtype in (ptl.float32, ptl.int32, ptl.float16, ptl.uint8):
        a = gen.integers(-50, 50, size=(3, 4000)).astype(np.float64)
        if dtype == ptl.uint8:
            a = np.abs(a)
        t = ptl.tensor(a).to(dtype)
        if dtype in (ptl.float32, ptl.float16):
            t[1, ::9] = NAN
        for k in (1, 5, 200):
            for largest in (True, False):
                v, i = ptl.topk(t, k, 1, largest)
                s = ptl.sort(t, dim=1, descending=largest, stable=True)
                assert_close(i, to_numpy(s.indices)[:, :k])
                assert_close(v, to_numpy(s.values)[:, :k], dtype=dtype)
                if torch is not None:
                    tv = torch.topk(torch.tensor(to_numpy(t)), k, 1, largest).values
                    assert_close(v, tv.numpy())


# ---- kthvalue / median / nanmedian / mode ----

def lane_pick(a, d, shape, pick, keepdim):
    """Applies pick(lane) -> value to every lane of a along d."""
    x = np_lanes(np.asarray(a, dtype=np.float64), d, shape)
    out = np.zeros(x.shape[:-1])
    for lane in np.ndindex(*x.shape[:-1]):
        out[lane] = pick(x[lane])
    if keepdim and shape:
        out = np.expand_dims(out, d)
    return out


@pytest.mark.parametrize("dtype", [d for d in ALL_DTYPES if d != ptl.bool])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_kthvalue_median_nanmedian(dtype, layout):
    for shape, d in NONEMPTY_LANES:
        t, a = make(shape, dtype, layout, seed=11)
        n = shape[d] if shape else 1
        for keepdim in (False, True):
            for k in sorted({1, (n + 1) // 2, n}):
                v, i = ptl.kthvalue(t, k, d, keepdim)
                assert_close(v, lane_pick(a, d, shape, lambda x: np.sort(x)[k - 1], keepdim),
                             dtype=dtype)
                if shape:   # the index points at the value
                    ix = i if keepdim else i.unsqueeze(d)
                    assert_close(ptl.gather(t, d, ix).reshape(v.shape), to_numpy(v))
            for fn in (ptl.median, ptl.nanmedian):
                v, i = fn(t, d, keepdim)
                assert_close(v, lane_pick(a, d, shape, lambda x: np.sort(x)[(len(x) - 1) // 2],
                                          keepdim), dtype=dtype)
                # the stable choice: the tied element that comes first in the input
                pos = lane_pick(a, d, shape,
                                lambda x: np.argsort(x, kind="stable")[(len(x) - 1) // 2], keepdim)
                assert_close(i, pos.astype(np.int64), dtype=ptl.int64)
        if t.numel():
            ref = np.sort(np.asarray(a, dtype=np.float64).ravel())[(t.numel() - 1) // 2]
            assert_close(ptl.median(t), ref, dtype=dtype)
            assert_close(t.nanmedian(), ref, dtype=dtype)


def test_median_ties_and_nan_like_torch():
    cases = [[2.0, 1.0, 2.0, 1.0, 1.0, 2.0], [1.0, NAN, NAN, 2.0], [NAN, NAN],
             [NAN, 3.0, 1.0, NAN, 2.0, 2.0], [5.0]]
    for c in cases:
        for name in ("median", "nanmedian"):
            got = getattr(ptl, name)(ptl.tensor(c), 0)
            values, indices, whole = golden(lambda: (
                *getattr(torch, name)(torch.tensor(c), 0), getattr(torch, name)(torch.tensor(c))))
            assert_close(got.values, values.numpy())
            assert_close(got.indices, indices.numpy())
            assert_close(getattr(ptl, name)(ptl.tensor(c)), whole.numpy())
    assert_close(ptl.median(ptl.tensor([])), NAN)
    assert_close(ptl.nanmedian(ptl.tensor([])), NAN)
    assert_close(ptl.nanquantile(ptl.tensor([NAN, 1.0, 3.0]), 0.5), 2.0)


def test_selection_errors():
    t = ptl.tensor([3.0, 1.0, 2.0])
    for k in (0, 4):
        with pytest.raises(RuntimeError, match=re.escape(
                "kthvalue(): selected number k out of range for dimension 0")):
            ptl.kthvalue(t, k)
    e = ptl.zeros(0, 3)
    for fn, name in [(lambda x, d: ptl.kthvalue(x, 1, d), "kthvalue"),
                     (ptl.median, "median"), (ptl.nanmedian, "median"), (ptl.mode, "mode")]:
        with pytest.raises(IndexError, match=re.escape(
                f"{name}(): Expected reduction dim 0 to have non-zero size.")):
            fn(e, 0)
        assert tuple(fn(e, 1)[0].shape) == (0,)
    b = ptl.tensor([True, False])
    for fn, msg in [(lambda x: ptl.median(x), '"median_cpu" not implemented for \'Bool\''),
                    (lambda x: ptl.nanmedian(x), '"median_cpu" not implemented for \'Bool\''),
                    (lambda x: ptl.median(x, 0), '"median_out" not implemented for \'Bool\''),
                    (lambda x: ptl.kthvalue(x, 1), '"kthvalue_cpu" not implemented for \'Bool\'')]:
        with pytest.raises(NotImplementedError, match=re.escape(msg)):
            fn(b)
    with pytest.raises(IndexError, match=re.escape(
            "Dimension out of range (expected to be in range of [-1, 0], but got 3)")):
        ptl.median(t, 3)


def mode_ref(x):
    vals, counts = np.unique(x, return_counts=True)
    v = vals[np.argmax(counts)]          # the smallest of the most frequent values
    return v, np.nonzero(x == v)[0][-1]  # and its last occurrence


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "expanded"])
def test_mode(dtype, layout):
    for shape, d in NONEMPTY_LANES:
        t, a = make(shape, dtype, layout, seed=5, low=-2, high=2)
        for keepdim in (False, True):
            v, i = ptl.mode(t, d, keepdim)
            assert_close(v, lane_pick(a, d, shape, lambda x: mode_ref(x)[0], keepdim),
                         dtype=dtype)
            assert_close(i, lane_pick(a, d, shape, lambda x: mode_ref(x)[1], keepdim)
                         .astype(np.int64))
    x = [[1.0, 2.0, 2.0, 1.0, 3.0], [2.0, 1.0, 3.0, 0.0, 4.0]]
    got = ptl.tensor(x).mode()
    values, indices = golden(lambda: tuple(torch.tensor(x).mode()))
    assert_close(got.values, values.numpy())
    assert_close(got.indices, indices.numpy())


# ---- cummax / cummin / logcumsumexp ----

def cum_ref(x, is_max):
    vals, idx = np.empty_like(x), np.empty(x.shape, dtype=np.int64)
    best = 0
    for j in range(len(x)):
        if j == 0 or np.isnan(x[j]) or (not np.isnan(x[best]) and
                                         (x[j] >= x[best] if is_max else x[j] <= x[best])):
            best = j
        vals[j], idx[j] = x[best], best
    return vals, idx


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_cummax_cummin(dtype, layout):
    for shape, d in DIM_CASES:
        t, a = make(shape, dtype, layout, seed=9, low=-3, high=3)
        x = np_lanes(np.asarray(a, dtype=np.float64), d, shape)
        for fn, is_max in ((ptl.cummax, True), (ptl.cummin, False)):
            v, i = fn(t, d)
            rv, ri = np.zeros(x.shape), np.zeros(x.shape, dtype=np.int64)
            for lane in np.ndindex(*x.shape[:-1]):
                rv[lane], ri[lane] = cum_ref(x[lane], is_max)
            back = (lambda r: r.reshape(())) if not shape else (lambda r: np.moveaxis(r, -1, d))
            assert_close(v, back(rv), dtype=dtype)
            assert_close(i, back(ri), dtype=ptl.int64)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_cummax_typed_lanes_nan_zero_ties(dtype, threads):
    """The typed lane loops: a NaN first, in the middle and last, -0.0 against 0.0 (equal, so
    the later one and its sign win), infinities, over lanes along either dim of a tensor
    past the parallel grain, checked bit for bit against cum_ref."""
    old = ptl.get_num_threads()
    ptl.set_num_threads(threads)
    gen = np.random.default_rng(11)
    try:
        pool = np.array([NAN, -0.0, 0.0, np.inf, -np.inf, 1.0, -1.0, 2.5])
        a = gen.choice(pool, size=(130, 300), p=[0.01, 0.2, 0.2, 0.02, 0.02, 0.2, 0.2, 0.15])
        a[0, 0] = a[1, -1] = NAN
        t = ptl.tensor(a, dtype=dtype)
        x = to_numpy(t)
        for d in (0, 1):
            for fn, is_max in ((ptl.cummax, True), (ptl.cummin, False)):
                v, i = fn(t, d)
                lanes = np.moveaxis(x, d, -1)
                for k in range(lanes.shape[0]):
                    rv, ri = cum_ref(lanes[k], is_max)
                    got_v = np.moveaxis(to_numpy(v), d, -1)[k]
                    assert (np.moveaxis(i.numpy(), d, -1)[k] == ri).all()
                    assert np.array_equal(got_v, rv, equal_nan=True)
                    assert (np.signbit(got_v) == np.signbit(rv)).all()
    finally:
        ptl.set_num_threads(old)


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64, ptl.int32, ptl.bfloat16])
def test_cummax_blocks_and_stretches(dtype):
    """The block test of the lane loop (CUM_BLOCK 16 elements, stretches doubling to 1024):
    lanes at and across 16 and 32 elements and past 1024, random, rising, falling, tied and
    with a NaN, contiguous and strided."""
    gen = np.random.default_rng(12)
    for n in (1, 15, 16, 17, 31, 32, 33, 100, 3000):
        for kind in ("random", "rising", "falling", "ties", "nan"):
            a = gen.standard_normal(n) * 50
            a = np.sort(a) if kind == "rising" else -np.sort(a) if kind == "falling" else a
            a = gen.integers(0, 3, n).astype(float) if kind == "ties" else a
            if kind == "nan":
                if dtype == ptl.int32:
                    continue
                a[gen.integers(0, n)] = NAN
            t = ptl.tensor(a, dtype=dtype)
            x = to_numpy(t)
            for lane in (t, ptl.stack([t, t], 1)[:, 1]):
                for fn, is_max in ((ptl.cummax, True), (ptl.cummin, False)):
                    v, i = fn(lane, 0)
                    rv, ri = cum_ref(x, is_max)
                    assert (i.numpy() == ri).all(), (n, kind, is_max)
                    assert np.array_equal(to_numpy(v), rv, equal_nan=True)


def test_cummax_nan_and_ties_like_torch():
    for x in ([1.0, NAN, 2.0, NAN, 3.0], [1.0, 1.0, 0.0, 0.0, 2.0, 2.0], [NAN, 1.0]):
        for name in ("cummax", "cummin"):
            got = getattr(ptl, name)(ptl.tensor(x), 0)
            values, indices = golden(lambda: tuple(getattr(torch, name)(torch.tensor(x), 0)))
            assert_close(got.values, values.numpy())
            assert_close(got.indices, indices.numpy())


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_logcumsumexp(dtype, layout):
    for shape, d in DIM_CASES:
        t, a = make(shape, dtype, layout, seed=2)
        x = np_lanes(np.asarray(a, dtype=np.float64), d, shape)
        r = np.logaddexp.accumulate(x, axis=-1) if x.size else x
        assert_close(t.logcumsumexp(d), r.reshape(()) if not shape else np.moveaxis(r, -1, d),
                     dtype=dtype)


def test_logcumsumexp_extremes_and_errors():
    x = [-np.inf, -np.inf, np.inf, 1.0, NAN, 2.0]
    assert_close(ptl.logcumsumexp(ptl.tensor(x), 0),
                 golden(lambda: torch.logcumsumexp(torch.tensor(x), 0)).numpy())
    big = ptl.tensor([1000.0, 1000.0, -1000.0], dtype=ptl.float32)
    assert_close(ptl.logcumsumexp(big, 0), [1000.0, 1000.0 + np.log(2), 1000.0 + np.log(2)])
    for dtype, name in [(ptl.int64, "Long"), (ptl.bool, "Bool"), (ptl.uint8, "Byte")]:
        with pytest.raises(NotImplementedError, match=re.escape(
                f'"logcumsumexp_out_cpu" not implemented for \'{name}\'')):
            ptl.logcumsumexp(ptl.zeros(3, dtype=dtype), 0)
    with pytest.raises(IndexError, match=re.escape(
            "Dimension out of range (expected to be in range of [-1, 0], but got 3)")):
        ptl.cummax(ptl.tensor([1.0, 2.0]), 3)


# ---- quantile / nanquantile ----

METHODS = ["linear", "lower", "higher", "midpoint", "nearest"]


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_quantile(dtype, layout):
    qs = [0.0, 0.25, 0.5, 0.7, 1.0]
    for shape in [(), (1,), (7,), (3, 4), (2, 3, 5)]:
        t, a = make(shape, dtype, layout, seed=4)
        a = np.asarray(a, dtype=np.float64)
        for dim in [None] + list(range(-len(shape), len(shape))):
            for keepdim in (False, True):
                for m in METHODS:
                    qt = ptl.tensor(qs, dtype=dtype)
                    ref = np.quantile(a, qs, axis=dim, keepdims=keepdim, method=m)
                    assert_close(ptl.quantile(t, qt, dim, keepdim, interpolation=m), ref,
                                 dtype=dtype)
                    ref1 = np.quantile(a, 0.3, axis=dim, keepdims=keepdim, method=m)
                    assert_close(t.quantile(0.3, dim=dim, keepdim=keepdim, interpolation=m),
                                 ref1, dtype=dtype)
                    assert_close(t.nanquantile(ptl.tensor(0.6, dtype=dtype), dim, keepdim,
                                               interpolation=m),
                                 np.quantile(a, 0.6, axis=dim, keepdims=keepdim, method=m))


def test_quantile_nan_and_torch():
    a = np.array([[1.0, NAN, 3.0, 2.0], [NAN, NAN, NAN, NAN], [4.0, 0.5, 2.0, 8.0]])
    q = [0.1, 0.5, 0.95]
    for m in METHODS:
        for name, npf in (("quantile", np.quantile), ("nanquantile", np.nanquantile)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")   # NumPy warns about the all-NaN row
                ref = npf(a, q, axis=1, method=m)
            got = getattr(ptl, name)(ptl.tensor(a), ptl.tensor(q, dtype=ptl.float64), 1,
                                     interpolation=m)
            assert_close(got, ref)
            if torch is not None:
                exp = getattr(torch, name)(torch.tensor(a), torch.tensor(q, dtype=torch.float64),
                                           1, interpolation=m)
                assert_close(got, exp.numpy())
    half = np.array([0.0, 1.0, 2.0, 3.0])     # nearest rounds a .5 rank to even like torch
    for qq in (1 / 6, 0.5, 5 / 6):
        assert_close(ptl.quantile(ptl.tensor(half), qq, interpolation="nearest"),
                     golden(lambda: torch.quantile(torch.tensor(half), qq,
                                                   interpolation="nearest")).numpy())


def test_quantile_errors():
    x = ptl.tensor([3.0, 1.0, 2.0, 1.0])
    cases = [
        (lambda: ptl.quantile(x, 1.5), "quantile() q must be in the range [0, 1] but got 1.5"),
        (lambda: ptl.quantile(x.long(), 0.5),
         "quantile() input tensor must be either float or double dtype"),
        (lambda: ptl.quantile(x.half(), 0.5),
         "quantile() input tensor must be either float or double dtype"),
        (lambda: ptl.quantile(x, 0.5, interpolation="foo"),
         "quantile() interpolation must be one of linear, lower, higher, midpoint or nearest, "
         "but got foo"),
        (lambda: ptl.quantile(x, ptl.tensor([[0.5]])), "quantile() q must be a scalar or 1D tensor"),
        (lambda: ptl.quantile(x, ptl.tensor([0.5, 2.0])),
         "quantile() q values must be in the range [0, 1]"),
        (lambda: ptl.nanquantile(x, ptl.tensor(-0.1)),
         "quantile() q values must be in the range [0, 1]"),
        (lambda: ptl.quantile(x, ptl.tensor([0.5], dtype=ptl.float64)),
         "quantile() q tensor must be same dtype as the input tensor"),
        (lambda: ptl.quantile(ptl.tensor([]), 0.5), "quantile() input tensor must be non-empty"),
        (lambda: ptl.quantile(ptl.zeros(0, 2), 0.5, dim=0),
         "quantile() input tensor must be non-empty"),
    ]
    for fn, msg in cases:
        with pytest.raises(RuntimeError, match=re.escape(msg)):
            fn()
    with pytest.raises(IndexError, match=re.escape(
            "Dimension out of range (expected to be in range of [-1, 0], but got 3)")):
        ptl.quantile(x, 0.5, dim=3)


# ---- derivatives ----

def leaf(shape, seed=0):
    a = np.random.default_rng(seed).uniform(-2, 2, size=shape)
    return ptl.tensor(a, dtype=ptl.float64, requires_grad=True)


def noncontig(shape, seed=0):
    """A float64 leaf whose transpose (non-contiguous) is fed to the op."""
    return leaf(shape[::-1], seed)


# derivatives.def row -> (function of one tensor, whether the input is fed transposed)
GRADS = {
    "sort": lambda x: ptl.sort(x.t(), 0, True).values,
    "sort_stable": lambda x: ptl.sort(x, stable=True, dim=1).values,
    "topk": lambda x: ptl.topk(x.t(), 2, 0).values,
    "kthvalue": lambda x: ptl.kthvalue(x, 2, 1, True).values,
    "median": lambda x: ptl.median(x.t()),
    "median_dim": lambda x: ptl.median(x.t(), 0).values,
    "nanmedian": lambda x: ptl.nanmedian(x),
    "nanmedian_dim": lambda x: ptl.nanmedian(x, 1, True).values,
    "mode": lambda x: ptl.mode(x.t(), 0).values,
    "cummax": lambda x: ptl.cummax(x.t(), 1).values,
    "cummin": lambda x: ptl.cummin(x, 0).values,
    "logcumsumexp": lambda x: ptl.logcumsumexp(x.t(), 0),
}
EXTRA = {   # ops differentiated through others (composites)
    "msort": lambda x: ptl.msort(x.t()),
    "quantile": lambda x: ptl.quantile(x.t(), ptl.tensor([0.2, 0.75], dtype=ptl.float64), 0),
    "nanquantile_keep": lambda x: ptl.nanquantile(x, 0.4, dim=1, keepdim=True),
    "quantile_all": lambda x: ptl.quantile(x, 0.5, interpolation="midpoint"),
    "broadcast_sort": lambda x: ptl.sort(x[:1].expand(3, 4), 0).values * x,
    "broadcast_cummax": lambda x: ptl.cummax(x[:, :1].expand(3, 4), 1).values + x,
    "scalar_sort": lambda x: ptl.sort(x[0, 0], 0).values,
    "scalar_kth": lambda x: ptl.kthvalue(x[1, 1], 1).values,
}


@pytest.mark.parametrize("name", sorted(GRADS) + sorted(EXTRA))
def test_gradcheck_and_gradgradcheck(name):
    fn = GRADS.get(name) or EXTRA[name]
    x = leaf((3, 4), seed=len(name))
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


NODES = [
    (lambda m, x: m.sort(x, 1).values, "SortBackward0"),
    (lambda m, x: m.sort(x, stable=True).values, "SortBackward1"),
    (lambda m, x: m.msort(x), "SortBackward0"),
    (lambda m, x: m.topk(x, 1).values, "TopkBackward0"),
    (lambda m, x: m.kthvalue(x, 1).values, "KthvalueBackward0"),
    (lambda m, x: m.median(x), "MedianBackward0"),
    (lambda m, x: m.median(x, 0).values, "MedianBackward1"),
    (lambda m, x: m.nanmedian(x), "NanmedianBackward0"),
    (lambda m, x: m.nanmedian(x, 0).values, "NanmedianBackward1"),
    (lambda m, x: m.mode(x).values, "ModeBackward0"),
    (lambda m, x: m.cummax(x, 0).values, "CummaxBackward0"),
    (lambda m, x: m.cummin(x, 0).values, "CumminBackward0"),
    (lambda m, x: m.logcumsumexp(x, 0), "LogcumsumexpBackward0"),
]


@pytest.mark.parametrize("fn,name", NODES)
def test_node_names_match_torch(fn, name):
    a = np.arange(6.0).reshape(2, 3)
    assert type(fn(ptl, ptl.tensor(a, requires_grad=True)).grad_fn).__name__ == name
    assert golden(lambda: type(fn(torch, torch.tensor(a, requires_grad=True)).grad_fn).__name__) \
        == name
    assert ptl.argsort(ptl.tensor(a, requires_grad=True)).grad_fn is None


TIES = np.array([[1.0, 3.0, 3.0, 0.5], [2.0, 2.0, -1.0, 2.0], [NAN, 1.0, 1.0, 0.0]])
COMPARE = [
    ("sort", lambda m, a: m.sort(a[:2], 1).values * m.arange(4.0, dtype=a.dtype)),
    ("sort_desc", lambda m, a: m.sort(a[:2], dim=0, descending=True, stable=True).values[0]),
    # topk and kthvalue: torch's quickselect picks among ties in no documented order, so
    # the tie cases here select every tied element or none
    ("topk", lambda m, a: m.topk(a[:1], 2).values * 3),
    ("topk_smallest", lambda m, a: m.topk(a[:2], 1, largest=False).values),
    ("kthvalue", lambda m, a: m.kthvalue(a[:2], 1, 1).values),
    ("median_all", lambda m, a: m.median(a[:2])),
    ("median_nan", lambda m, a: m.median(a)),
    ("nanmedian_all", lambda m, a: m.nanmedian(a)),
    ("median_dim", lambda m, a: m.median(a[:2], 1).values),
    ("nanmedian_dim", lambda m, a: m.nanmedian(a, 1, True).values),
    ("mode", lambda m, a: m.mode(a[:2], 1).values),
    ("cummax", lambda m, a: m.cummax(a, 1).values * m.arange(1.0, 5.0, dtype=a.dtype)),
    ("cummin", lambda m, a: m.cummin(a[:2], 0).values),
    ("logcumsumexp", lambda m, a: m.logcumsumexp(a[:2], 1) * m.arange(4.0, dtype=a.dtype)),
    ("quantile", lambda m, a: m.quantile(a[:2], 0.4, dim=1)),
    ("nanquantile", lambda m, a: m.nanquantile(a, 0.5, dim=1)),
]


@pytest.mark.parametrize("name,fn", COMPARE)
def test_same_gradients_as_torch_with_ties(name, fn):
    def grad(m):
        x = m.tensor(TIES, dtype=m.float64, requires_grad=True)
        y = fn(m, x)
        y.sum().backward() if y.dim() == 0 else (y * m.ones_like(y)).sum().backward()
        return x.grad.tolist()
    assert_close(ptl.tensor(grad(ptl), dtype=ptl.float64), np.array(golden(lambda: grad(torch))))
