"""Advanced indexing and the index ops (src/aten/native/index.c, summary.c,
src/python/indexing.c) against NumPy, their errors against PyTorch's wording, and a float64
gradcheck of every formula of the indexing section of derivatives.def."""
import re

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck, gradgradcheck

from helpers import (ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, LAYOUTS, NP_DTYPE, SHAPES,
                     assert_close, assert_no_leak, assert_raises_like_torch, make, to_numpy,
                     torch)

GEN = np.random.default_rng(1234)


def rand_index(size, shape, seed=0):
    """int64 indices in [-size, size) (negative ones included) as ndarray."""
    return np.random.default_rng(seed).integers(-size, size, size=shape).astype(np.int64)


def ref(a):
    """The float64 (or exact) reference of an ndarray."""
    return a.astype(np.float64) if a.dtype.kind == "f" else a


# ---- __getitem__: placement of advanced dims, vs NumPy ----

GETITEM_CASES = [
    lambda t: ([0, 2, -1],),
    lambda t: (slice(None), [0, 1], [1, 3]),                    # adjacent: in place
    lambda t: ([0, 1], slice(None), [1, 3]),                    # separated: front
    lambda t: (Ellipsis, [4, 0]),
    lambda t: (None, [1], None, slice(1, 3), [2, 3]),
    lambda t: (t([[0], [1]]), 1, t([1, 2])),                    # int between tensors
    lambda t: (slice(None), t([[1, 0], [2, 2]]), 0),            # 2-D index, int after
    lambda t: ([True, False, True],),                           # list of bools
    lambda t: (t(np.arange(60).reshape(3, 4, 5) % 3 == 0),),     # 3-D mask
    lambda t: (slice(None), t(np.array([True, False, True, True])), slice(0, 2)),
    lambda t: (1, t(np.array([[True, False, True, True, False]] * 4))),  # 2-D mask after int
    lambda t: (t(np.array(1)), [0, 2]),                          # 0-dim int tensor: select
    lambda t: ([],),                                            # empty list
    lambda t: ([0, 0, 1], slice(None, None, 2), [[0], [2]], 3),
]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("case", range(len(GETITEM_CASES)))
def test_getitem_placement(case, layout):
    x, a = make((3, 4, 5, 6), ptl.float32, layout, seed=case)
    got = x[GETITEM_CASES[case](ptl.tensor)]
    assert_close(got, ref(a[GETITEM_CASES[case](np.array)]), dtype=ptl.float32)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", [s for s in SHAPES if len(s) > 0])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_getitem_int_and_mask_all_dtypes(shape, dtype, layout):
    x, a = make(shape, dtype, layout)
    idx = rand_index(shape[0], (3,)) if shape[0] else np.zeros(0, np.int64)
    assert_close(x[ptl.tensor(idx)], ref(a[idx]), dtype=dtype)
    mask = np.random.default_rng(3).integers(0, 2, size=shape).astype(bool)
    assert_close(x[ptl.tensor(mask)], ref(a[mask]), dtype=dtype)


def test_getitem_int32_index_and_uint8_mask():
    x, a = make((4, 3), ptl.int64)
    idx = np.array([3, -4, 1], dtype=np.int32)
    assert_close(x[ptl.tensor(idx)], a[idx])
    m = np.array([1, 0, 1, 1], dtype=np.uint8)
    assert_close(x[ptl.tensor(m)], a[m.astype(bool)])


def test_getitem_bool_scalars_and_view_semantics():
    x, a = make((3, 2), ptl.float64)
    assert_close(x[ptl.tensor(True)], a[None])
    assert_close(x[ptl.tensor(False)], a[None][:0])
    y = x[[0, 1]]            # advanced indexing copies
    y[0, 0] = 100.0
    assert x[0, 0].item() == a[0, 0]


# ---- __setitem__ through index_put_ ----

SETITEM_CASES = [
    (lambda t: ([0, 2],), lambda s: np.arange(np.prod(s[1:]), dtype=np.float64).reshape(s[1:])),
    (lambda t: (slice(None), [1, 3]), lambda s: 7.5),
    (lambda t: ([0, 1], [1, 3]), lambda s: np.arange(2.0)),
    (lambda t: (t(np.arange(12).reshape(3, 4) % 5 == 0),), lambda s: -1.0),
    (lambda t: (Ellipsis, [0]), lambda s: np.ones((s[0], 1))),
    (lambda t: ([[0], [2]], [1, 3]), lambda s: np.array([[1.0, 2.0], [3.0, 4.0]])),
]


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("case", range(len(SETITEM_CASES)))
def test_setitem(case, layout):
    idx_fn, val_fn = SETITEM_CASES[case]
    x, a = make((3, 4), ptl.float64, layout, seed=case)
    a = a.copy()
    v = val_fn(a.shape)
    x[idx_fn(ptl.tensor)] = ptl.tensor(v) if isinstance(v, np.ndarray) else v
    a[idx_fn(np.array)] = v
    assert_close(x, a)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_setitem_value_dtype(dtype):
    """a tensor value of another dtype is PyTorch's error through an integer index (Note
    [Index put of one value through a mask]); numbers and a one-element value through one
    mask convert to self's dtype"""
    x, a = make((4, 3), dtype)
    a = a.copy()
    if dtype != ptl.int64:
        name = str(dtype).split(".")[-1]

        def put(lib):
            lib.zeros(4, 3, dtype=getattr(lib, name))[[1, 3]] = lib.tensor([1, 0, 1])
        assert_raises_like_torch(put, RuntimeError, "Index put requires the source and "
                                                    "destination dtypes match, got ")
    x[[1, 3]] = ptl.tensor([1, 0, 1], dtype=ptl.int64).to(dtype)
    a[[1, 3]] = np.array([1, 0, 1]).astype(a.dtype)
    assert_close(x, ref(a), dtype=dtype)
    x[x.to(ptl.bool)] = 1
    a[a.astype(bool)] = 1
    assert_close(x, ref(a), dtype=dtype)
    x[x.to(ptl.bool)] = ptl.tensor(0, dtype=ptl.int64)
    a[a.astype(bool)] = 0
    assert_close(x, ref(a), dtype=dtype)


def test_setitem_from_tensor_and_scalar_exact_int64():
    x = ptl.zeros(4, dtype=ptl.int64)
    x[[0, 3]] = ptl.tensor([2 ** 60 + 1, -5])
    assert x.tolist() == [2 ** 60 + 1, 0, 0, -5]
    x[ptl.tensor([1])] = 2 ** 62 + 3
    assert x.tolist() == [2 ** 60 + 1, 2 ** 62 + 3, 0, -5]


def test_setitem_bumps_version():
    x = ptl.zeros(3)
    v = x._version
    x[[0]] = 1.0
    assert x._version > v


# ---- index_put / index_put_ ----

@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS[:3])
def test_index_put_accumulate(dtype, layout):
    x, a = make((5, 3), dtype, layout, low=0, high=3)
    idx = np.array([0, 4, 0, -1, 2])
    v, b = make((5, 3), dtype, seed=2, low=0, high=3)
    got = ptl.index_put(x, (ptl.tensor(idx),), v, True)
    exp = ref(a).astype(np.float64 if dtype in FLOAT_DTYPES else np.int64)
    if dtype == ptl.bool:
        exp = a.astype(np.int64)
    np.add.at(exp, idx, ref(b).astype(exp.dtype))
    if dtype == ptl.bool:
        exp = exp != 0
    elif dtype in INT_DTYPES:
        exp = exp.astype(NP_DTYPE[dtype])
    assert_close(got, exp, dtype=dtype)
    assert_close(x, ref(a))   # functional form leaves self alone


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64, ptl.int64, ptl.float16], ids=str)
@pytest.mark.parametrize("idtype", [np.int64, np.int32], ids=str)
def test_index_put_flat_element_loops(dtype, idtype):
    # Note [One-dim index offsets] and index.c flat_scatter: one value per index offset, the
    # bits of NumPy's ufunc.at in the dtype (float sums round once), duplicates, negative and
    # strided indices, whole and one-element values, several 1-D indices, and the bad index
    rng = np.random.default_rng(11)
    npdt = NP_DTYPE[dtype]
    for n in [0, 1, 5, 1000]:
        a = (rng.standard_normal(37) * 4).astype(npdt)
        i = rng.integers(-37, 37, 2 * n).astype(idtype)
        v = (rng.standard_normal(2 * n) * 4).astype(npdt)
        idx, vals = ptl.tensor(i)[::2], ptl.tensor(v)[::2]
        for accumulate in (False, True):
            want = a.copy()
            if accumulate:
                np.add.at(want, i[::2], v[::2])
            else:
                for k, val in zip(i[::2], v[::2]):
                    want[k] = val
            got = ptl.tensor(a).index_put_((idx,), vals.contiguous(), accumulate=accumulate)
            np.testing.assert_array_equal(got.numpy(), want)
            want = a.copy()
            np.add.at(want, i[::2], npdt(2)) if accumulate else want.__setitem__(i[::2], 2)
            got = ptl.tensor(a).index_put_((idx,), ptl.tensor(2, dtype=dtype), accumulate)
            np.testing.assert_array_equal(got.numpy(), want)
        np.testing.assert_array_equal(ptl.tensor(a)[idx].numpy(), a[i[::2]])
    x = rng.standard_normal((6, 7)).astype(np.float32)
    r, c = rng.integers(-6, 6, 50), rng.integers(0, 7, 50)
    want = x.copy()
    np.add.at(want, (r, c), np.float32(1.5))
    got = ptl.tensor(x).index_put_((ptl.tensor(r), ptl.tensor(c)), ptl.tensor(1.5), True)
    np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_array_equal(ptl.tensor(x)[ptl.tensor(r), ptl.tensor(c)].numpy(), x[r, c])
    for bad, msg in [(37, "index 37 is out of bounds for dimension 0 with size 37"),
                     (-38, "index -38 is out of bounds for dimension 0 with size 37")]:
        y = ptl.zeros(37, dtype=dtype)
        with pytest.raises(IndexError, match=msg):
            y.index_put_((ptl.tensor([1, bad, 2]),), ptl.ones(3, dtype=dtype), True)
        with pytest.raises(IndexError, match=msg):
            y[ptl.tensor([bad])]
    with pytest.raises(IndexError, match="index 6 is out of bounds for dimension 1 with size 6"):
        ptl.zeros(3, 6)[ptl.tensor([0]), ptl.tensor([6])]


def test_index_put_inplace_returns_self():
    x = ptl.zeros(2, 3)
    r = x.index_put_((ptl.tensor([1]), ptl.tensor([2])), ptl.tensor(5.0))
    assert r is x and x.tolist() == [[0, 0, 0], [0, 0, 5.0]]


# ---- index_select, index_add, index_copy, index_fill ----

@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_index_select(shape, dtype, layout):
    x, a = make(shape, dtype, layout)
    for dim in range(max(len(shape), 1)):
        size = shape[dim] if shape else 1
        idx = (rand_index(size, (4,), seed=dim) % size) if size else np.zeros(0, np.int64)
        got = x.index_select(dim, ptl.tensor(idx))
        exp = np.take(a.reshape(1) if not shape else a, idx, axis=dim)
        assert_close(got, ref(exp), dtype=dtype)


def test_index_select_out_and_scalar_index():
    x, a = make((3, 4), ptl.float32)
    out = ptl.empty(0)
    r = ptl.index_select(x, 1, ptl.tensor([2, 0]), out=out)
    assert r is out
    assert_close(out, ref(a[:, [2, 0]]))
    assert_close(x.index_select(0, ptl.tensor(1)), ref(a[[1]]))
    assert_close(ptl.tensor(3.0).index_select(0, ptl.tensor(0)), np.array(3.0))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_add_copy_fill(dtype, dim):
    x, a = make((4, 5), dtype, "transposed", low=0, high=3)
    idx = np.array([3, 0, 3])
    shape = list(a.shape)
    shape[dim] = 3
    s, b = make(shape, dtype, seed=5, low=0, high=3)
    alpha = True if dtype == ptl.bool else (2 if dtype not in FLOAT_DTYPES else 1.5)
    wide = np.int64 if dtype not in FLOAT_DTYPES else np.float64
    exp = np.moveaxis(ref(a).astype(wide).copy(), dim, 0)
    np.add.at(exp, idx, np.moveaxis(ref(b).astype(wide), dim, 0) * alpha)
    exp = np.moveaxis(exp, 0, dim)
    exp = exp != 0 if dtype == ptl.bool else exp.astype(wide if dtype in FLOAT_DTYPES
                                                           else NP_DTYPE[dtype])
    assert_close(x.index_add(dim, ptl.tensor(idx), s, alpha=alpha), exp, dtype=dtype)
    uidx = np.array([4 if dim != 0 else 3, 0, 2])
    exp = np.moveaxis(ref(a).copy(), dim, 0)
    exp[uidx] = np.moveaxis(ref(b), dim, 0)
    assert_close(x.index_copy(dim, ptl.tensor(uidx), s), np.moveaxis(exp, 0, dim), dtype=dtype)
    y = x.clone()
    assert y.index_fill_(dim, ptl.tensor(uidx), 1) is y
    exp = np.moveaxis(ref(a).copy(), dim, 0)
    exp[uidx] = 1
    assert_close(y, np.moveaxis(exp, 0, dim), dtype=dtype)
    assert_close(x.index_fill(dim, ptl.tensor([1]), ptl.tensor(0, dtype=dtype)),
                 np.where(np.arange(a.shape[dim]).reshape([-1, 1][::1 if dim == 0 else -1]) == 1,
                          0, ref(a)), dtype=dtype)


# ---- gather / scatter ----

@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_gather_scatter(dtype, layout, dim):
    x, a = make((3, 4, 5), dtype, layout, low=0, high=3)
    # index smaller than self off the axis; NumPy wants equal sizes, so compare with a slice
    ishape = [2, 3, 4]
    ishape[dim] = 6
    sl = tuple(slice(0, n) if d != dim else slice(None) for d, n in enumerate(ishape))
    idx = np.random.default_rng(dim).integers(0, a.shape[dim], size=ishape)
    got = x.gather(dim, ptl.tensor(idx))
    assert_close(got, ref(np.take_along_axis(a[sl], idx, dim)), dtype=dtype)
    # scatter with distinct targets along dim, so the result is well defined
    uidx = np.argsort(np.random.default_rng(7).random(a.shape), axis=dim)[sl]
    uidx = np.take(uidx, range(2), axis=dim)
    src, b = make(uidx.shape, dtype, seed=9, low=0, high=3)
    exp = ref(a).copy()
    np.put_along_axis(exp[sl], uidx, ref(b), dim)
    assert_close(x.scatter(dim, ptl.tensor(uidx), src), exp, dtype=dtype)
    exp = ref(a).copy()
    np.put_along_axis(exp[sl], uidx, 1, dim)
    assert_close(x.scatter(dim, ptl.tensor(uidx), 1), exp, dtype=dtype)


def scatter_reduce_ref(a, dim, idx, b, reduce, include_self):
    """Loop reference of scatter_reduce on 2-D arrays (float64 / int64)."""
    out = a.copy()
    touched = {}
    for i in range(idx.shape[0]):
        for j in range(idx.shape[1]):
            k = (idx[i, j], j) if dim == 0 else (i, idx[i, j])
            touched.setdefault(k, [a[k]] if include_self else []).append(b[i, j])
    for k, vals in touched.items():
        vals = np.array(vals)
        if reduce == "sum":
            out[k] = vals.sum()
        elif reduce == "prod":
            out[k] = vals.prod()
        elif reduce == "amax":
            out[k] = vals.max()
        elif reduce == "amin":
            out[k] = vals.min()
        else:
            out[k] = vals.sum() / len(vals) if out.dtype.kind == "f" else \
                np.floor_divide(vals.sum(), len(vals))
    return out


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64, ptl.int64, ptl.int16, ptl.float16])
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dim", [0, 1])
def test_scatter_reduce(dtype, reduce, include_self, dim):
    x, a = make((3, 4), dtype, "transposed", seed=1, low=-3, high=3)
    idx = np.random.default_rng(4).integers(0, a.shape[dim], size=(3, 4))
    s, b = make((3, 4), dtype, seed=2, low=-3, high=3)
    wide = np.float64 if dtype in FLOAT_DTYPES else np.int64
    exp = scatter_reduce_ref(ref(a).astype(wide), dim, idx, ref(b).astype(wide), reduce,
                             include_self)
    got = x.scatter_reduce(dim, ptl.tensor(idx), s, reduce, include_self=include_self)
    assert_close(got, exp if dtype in FLOAT_DTYPES else exp.astype(NP_DTYPE[dtype]),
                 dtype=dtype)


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64], ids=str)
@pytest.mark.parametrize("reduce,ufunc", [("prod", np.multiply), ("amax", np.maximum),
                                          ("amin", np.minimum)])
def test_scatter_reduce_float_loops_exact(dtype, reduce, ufunc):
    # scatter_row's typed product / extreme loops (include_self): the bits of NumPy's ufunc.at
    # in the dtype (a float32 product rounds once either way), NaN propagating as
    # np.maximum's; many duplicates, lengths around ROW_CHUNK = 256, strided src and index
    npdt = NP_DTYPE[dtype]
    rng = np.random.default_rng(5)
    for n in [0, 1, 255, 256, 257, 1000]:
        for size in [1, 7, 300]:
            a = rng.standard_normal(size).astype(npdt)
            v = (1 + rng.standard_normal(2 * n) / 8).astype(npdt)
            if n > 3:
                v[3] = np.nan
            i = rng.integers(0, size, 2 * n)
            src, idx = ptl.tensor(v)[::2], ptl.tensor(i)[::2]
            want = a.copy()
            ufunc.at(want, i[::2], v[::2])
            got = ptl.tensor(a).scatter_reduce(0, idx, src, reduce)
            np.testing.assert_array_equal(got.numpy(), want)
    x, a = make((40, 30), dtype, "transposed", seed=3)
    i = rng.integers(0, 40, (300, 30))
    v = rng.standard_normal((300, 30)).astype(npdt)
    want = a.copy()
    ufunc.at(want, (i, np.arange(30)[None, :]), v)
    np.testing.assert_array_equal(x.scatter_reduce(0, ptl.tensor(i), ptl.tensor(v),
                                                   reduce).numpy(), want)
    with pytest.raises(RuntimeError, match="index 7 is out of bounds for dimension 0 with size 7"):
        ptl.zeros(7, dtype=dtype).scatter_reduce(0, ptl.tensor([1, 7]), ptl.ones(2, dtype=dtype),
                                                  reduce)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_scatter_add_and_legacy_reduce(dtype):
    x, a = make((3, 4), dtype, low=0, high=2)
    idx = np.array([[0, 1, 2, 0], [2, 2, 0, 1]])
    s, b = make((2, 4), dtype, seed=3, low=0, high=2)
    wide = np.float64 if dtype in FLOAT_DTYPES else np.int64
    for op, reduce in [("scatter_add", "sum"), ("add", "sum"), ("multiply", "prod")]:
        exp = scatter_reduce_ref(ref(a).astype(wide), 0, idx, ref(b).astype(wide), reduce, True)
        exp = exp != 0 if dtype == ptl.bool else exp.astype(
            wide if dtype in FLOAT_DTYPES else NP_DTYPE[dtype])
        got = (x.scatter_add(0, ptl.tensor(idx), s) if op == "scatter_add"
               else x.scatter(0, ptl.tensor(idx), s, reduce=op))
        assert_close(got, exp, dtype=dtype)
    y = x.clone()
    assert y.scatter_add_(0, ptl.tensor(idx), s) is y


# Note [Index row walk] (scatter_gather.c) checks and moves ROW_CHUNK = 256 indices of a row
# of index at a time; rows of 1, 255, 256, 257 and 513 sit at and across the chunk edges.
ROW_CHUNK_LENGTHS = [1, 255, 256, 257, 513]


def _laid_out(a, layout):
    """a (ndarray) as a pytorchlite tensor with the same values: contiguous, transposed
    (a permuted copy viewed back) or sliced (every other element of a wider tensor)."""
    if layout == "transposed":
        return ptl.tensor(np.ascontiguousarray(a.T)).permute(*range(a.ndim - 1, -1, -1))
    if layout == "sliced":
        wide = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
        wide[..., ::2] = a
        return ptl.tensor(wide)[..., ::2]
    return ptl.tensor(a)


@pytest.mark.parametrize("n", ROW_CHUNK_LENGTHS)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("threads", [1, 2])
def test_gather_scatter_add_rows_across_the_chunk(n, layout, threads):
    gen = np.random.default_rng(n)
    prev = ptl.get_num_threads()
    ptl.set_num_threads(threads)
    try:
        for dim in (0, 1):
            a = gen.standard_normal((5, 300)).astype(np.float32)
            ishape = (4, n) if dim == 1 else (n, 7)
            idx = gen.integers(0, a.shape[dim], ishape)
            for itype in (np.int64, np.int32):
                x, i = _laid_out(a, layout), _laid_out(idx.astype(itype), layout)
                sl = (slice(0, 4), slice(None)) if dim == 1 else (slice(None), slice(0, 7))
                got = x.gather(dim, i).numpy()
                assert np.array_equal(got, np.take_along_axis(a[sl], idx, dim))
                # same order of float32 additions as np.add.at: the same bits
                b = gen.standard_normal(ishape).astype(np.float32)
                want = a.copy()
                rows, cols = np.indices(ishape)
                if dim == 1:
                    np.add.at(want, (rows, idx), b)
                else:
                    np.add.at(want, (idx, cols), b)
                got = x.scatter_add(dim, i, _laid_out(b, layout)).numpy()
                assert got.tobytes() == want.tobytes(), (dim, itype)
                y = x.clone()
                assert y.scatter_add_(dim, i, _laid_out(b, layout)) is y
                assert y.numpy().tobytes() == want.tobytes()
    finally:
        ptl.set_num_threads(prev)


@pytest.mark.parametrize("dtype", [ptl.float64, ptl.float16, ptl.bfloat16, ptl.int64,
                                   ptl.int32, ptl.uint8, ptl.bool], ids=str)
@pytest.mark.parametrize("n", [255, 257])
@pytest.mark.parametrize("layout", ["transposed", "contiguous"])
def test_gather_scatter_rows_every_dtype(dtype, n, layout):
    # contiguous: gather's unit-stride row loop (gather_row), every item size
    x, a = make((3, n), dtype, layout, low=0, high=3)
    idx = np.random.default_rng(n).integers(0, n, (3, n))
    assert_close(x.gather(1, ptl.tensor(idx)), ref(np.take_along_axis(a, idx, 1)), dtype=dtype)
    src, b = make((3, n), dtype, seed=2, low=0, high=3)
    wide = np.float64 if dtype in FLOAT_DTYPES else np.int64
    exp = scatter_reduce_ref(ref(a).astype(wide), 1, idx, ref(b).astype(wide), "sum", True)
    exp = exp != 0 if dtype == ptl.bool else exp.astype(
        wide if dtype in FLOAT_DTYPES else NP_DTYPE[dtype])
    assert_close(x.scatter_add(1, ptl.tensor(idx), src), exp, dtype=dtype)
    # one target per element: scatter is a pure move
    uidx = np.argsort(np.random.default_rng(1).random((3, n)), axis=1)
    exp = ref(a).copy()
    np.put_along_axis(exp, uidx, ref(b), 1)
    assert_close(x.scatter(1, ptl.tensor(uidx), src), exp, dtype=dtype)


@pytest.mark.parametrize("reduce", ["mean", "amax"])
def test_scatter_reduce_counts_on_a_strided_self(reduce):
    # the counts of mean / include_self=False are kept per element offset of a strided self
    x, a = make((4, 300), ptl.float64, "sliced")
    idx = np.random.default_rng(3).integers(0, 4, (6, 300))
    s, b = make((6, 300), ptl.float64, seed=4)
    for include_self in (True, False):
        exp = scatter_reduce_ref(a, 0, idx, b, reduce, include_self)
        y = x.clone()
        y.scatter_reduce_(0, ptl.tensor(idx), s, reduce, include_self=include_self)
        assert_close(y, exp)
        assert_close(x.scatter_reduce(0, ptl.tensor(idx), s, reduce,
                                      include_self=include_self), exp)


def test_gather_scatter_size_zero_and_zero_dim():
    x = ptl.tensor(np.arange(6.0).reshape(2, 3))
    empty = ptl.zeros((2, 0), dtype=ptl.int64)
    assert tuple(x.gather(1, empty).shape) == (2, 0)
    assert_close(x.scatter_add(1, empty, ptl.zeros((2, 0), dtype=ptl.float64)),
                 np.arange(6.0).reshape(2, 3))
    assert_close(ptl.tensor(3.0).gather(0, ptl.tensor(0)), np.array(3.0))
    assert_close(ptl.tensor(3.0).scatter_add(0, ptl.tensor(0), ptl.tensor(2.0)),
                 np.array(5.0))


@pytest.mark.parametrize("bad", [1024, -1])
@pytest.mark.parametrize("at", [0, 300])
@pytest.mark.parametrize("itype", [ptl.int64, ptl.int32], ids=str)
def test_gather_scatter_errors_inside_the_row_walk(bad, at, itype):
    x = ptl.zeros((2, 1024))
    idx = ptl.zeros((2, 600), dtype=itype)
    idx[1, at] = bad
    msg = f"index {bad} is out of bounds for dimension 1 with size 1024"
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        x.gather(1, idx)
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        x.scatter_add(1, idx, ptl.ones((2, 600)))
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        x.scatter(1, idx, 1.0)
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        x.scatter_reduce(1, idx, ptl.ones((2, 600)), "mean")
    if torch is not None:
        with pytest.raises(RuntimeError, match=re.escape(msg)):
            torch.zeros(2, 1024).gather(1, torch.tensor(idx.numpy()).long())


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64, ptl.int16, ptl.uint8], ids=str)
def test_gather_unit_rows_check_every_lane_and_extreme(dtype):
    """x.gather(-1, idx) with int64 indices checks a chunk's indices in one pass before it
    moves them (gather_unit_i64, scatter_gather.c): a bad index at every position of the
    first 17 and at the chunk edges 255, 256, 257, the extremes of int64 and the in-range
    edges 0 and size - 1, each with PyTorch's message; good rows give NumPy's values"""
    x, a = make((3, 600), dtype, low=0, high=100)
    rng = np.random.default_rng(8)
    idx = rng.integers(0, 600, (3, 600))
    idx[:, :2] = [0, 599]
    assert_close(x.gather(1, ptl.tensor(idx)), ref(np.take_along_axis(a, idx, 1)), dtype=dtype)
    info = np.iinfo(np.int64)
    for at in list(range(17)) + [255, 256, 257, 599]:
        for bad in (600, -1, int(info.min), int(info.max)):
            b = idx.copy()
            b[2, at] = bad
            msg = f"index {bad} is out of bounds for dimension 1 with size 600"
            with pytest.raises(RuntimeError, match=re.escape(msg)):
                x.gather(1, ptl.tensor(b))
    with pytest.raises(RuntimeError, match=re.escape("index 0 is out of bounds for "
                                                     "dimension 1 with size 0")):
        ptl.zeros((3, 0), dtype=dtype).gather(1, ptl.zeros((3, 5), dtype=ptl.int64))


@pytest.mark.parametrize("itype", [np.int64, np.int32], ids=str)
@pytest.mark.parametrize("dim", [0, 1])
def test_scatter_index_check_every_lane_and_extreme(itype, dim):
    """The scatter index check folds v and size - 1 - v into one sign bit over vector lanes
    (Note [Index row walk]): a bad index at each lane of the first vectors and across the
    256-index chunks, the extremes of the index dtype, and the in-range edges 0 and size - 1
    (along dim 1 a contiguous int64 index row is the offsets itself)"""
    size = 5
    info = np.iinfo(itype)
    n = 600
    shape = (size, n) if dim == 0 else (3, n)
    x = ptl.zeros(shape, dtype=ptl.float64)
    rng = np.random.default_rng(7)
    idx = rng.integers(0, size if dim == 0 else n, (3, n)).astype(itype)
    idx[:, :3] = [0, (size if dim == 0 else n) - 1, 0]
    src = rng.standard_normal((3, n))
    want = x.numpy().copy()
    rows, cols = np.indices(idx.shape)
    np.add.at(want, (idx, cols) if dim == 0 else (rows, idx), src)
    got = x.scatter_add(dim, ptl.tensor(idx), ptl.tensor(src))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-14, atol=1e-14)
    limit = size if dim == 0 else n
    for at in list(range(9)) + [15, 16, 17, 255, 256, 257, 599]:
        for bad in {limit, limit + 1, -1, -limit, int(info.min), int(info.max)}:
            b = idx.copy()
            b[2, at] = bad
            msg = f"index {bad} is out of bounds for dimension {dim} with size {limit}"
            with pytest.raises(RuntimeError, match=re.escape(msg)):
                x.scatter_add(dim, ptl.tensor(b), ptl.tensor(src))
            with pytest.raises(RuntimeError, match=re.escape(msg)):
                x.scatter(dim, ptl.tensor(b), 1.0)


@pytest.mark.parametrize("n", [1, 3, 300])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
def test_index_select_last_dim_and_strided_rows(n, layout):
    # index_select along the last dim (one element per index) and x[idx] of strided rows take
    # through take_row; exact moves
    a = np.random.default_rng(n).standard_normal((4, 6, n)).astype(np.float32)
    x = _laid_out(a, layout)
    idx = np.random.default_rng(1).integers(0, n, 9)
    for it in (np.int64, np.int32):
        got = x.index_select(2, ptl.tensor(idx.astype(it))).numpy()
        assert np.array_equal(got, a[:, :, idx])
    rows = np.array([3, 0, 3, 1])
    assert np.array_equal(x[ptl.tensor(rows)].numpy(), a[rows])
    assert np.array_equal(x.index_select(1, ptl.tensor(rows)).numpy(), a[:, rows])
    with pytest.raises(IndexError, match="index out of range in self"):
        x.index_select(2, ptl.tensor([0, n]))


def test_index_add_float32_alpha_one_matches_the_double_rounding():
    # alpha 1 adds in float32; np.add.at adds in float32 in the same order: the same bits
    gen = np.random.default_rng(5)
    a = gen.standard_normal((7, 33)).astype(np.float32)
    v = (gen.standard_normal((9, 33)) * 1e3).astype(np.float32)
    idx = np.array([3, 0, 3, 6, 3, 1, 0, 0, 2])
    want = a.copy()
    np.add.at(want, idx, v)
    got = ptl.tensor(a).index_add(0, ptl.tensor(idx), ptl.tensor(v)).numpy()
    assert got.tobytes() == want.tobytes()
    w = a.astype(np.float64)
    np.add.at(w, idx, v.astype(np.float64) * 0.5)
    got = ptl.tensor(a).index_add(0, ptl.tensor(idx), ptl.tensor(v), alpha=0.5).numpy()
    np.testing.assert_allclose(got, w, rtol=1e-6, atol=1e-3)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_index_add_rows_every_tail(dtype):
    # scatter_gather.c's index_add_row (loop clones): rows of every length around the vectors,
    # repeated indices, alpha 1 and 0.5: the bits of adding row after row in index order
    # (float32: in float with alpha 1, else in double rounded once)
    gen = np.random.default_rng(6)
    idx = np.array([2, 0, 2, 4, 2, 1])
    for n in list(range(1, 40)) + [63, 64, 65, 1000]:
        a = gen.standard_normal((5, n)).astype(dtype)
        v = (gen.standard_normal((6, n)) * 1e3).astype(dtype)
        for alpha in [1.0, 0.5, -3.0]:
            want = a.copy()
            for k, i in enumerate(idx):
                if dtype == np.float32 and alpha == 1.0:
                    want[i] = want[i] + v[k]
                else:
                    want[i] = (want[i].astype(np.float64) + v[k].astype(np.float64) * alpha
                               ).astype(dtype)
            got = ptl.tensor(a).index_add(0, ptl.tensor(idx), ptl.tensor(v), alpha=alpha)
            assert got.numpy().tobytes() == want.tobytes(), (n, alpha)


# ---- masked ops, take, take_along_dim ----

@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_masked_ops(shape, dtype, layout):
    x, a = make(shape, dtype, layout)
    mask = np.random.default_rng(2).integers(0, 2, size=shape).astype(bool)
    m = ptl.tensor(mask)
    assert_close(x.masked_fill(m, 1), ref(np.where(mask, np.array(1).astype(a.dtype), a)),
                 dtype=dtype)
    assert_close(x.masked_select(m), ref(a[mask]), dtype=dtype)
    src, b = make((int(np.prod(shape)) + 2,), dtype, seed=4)
    exp = a.copy()
    exp[mask] = b[:int(mask.sum())]
    assert_close(x.masked_scatter(m, src), ref(exp), dtype=dtype)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_masked_fill_elementwise_pass(dtype, threads):
    """masked_fill is one elementwise pass (a branch-free select by element size) that the
    iterator splits over threads above its grain: sizes on both sides of it, strided self and
    mask, broadcast masks, in place, and NaN / -0.0 values kept bit for bit."""
    old = ptl.get_num_threads()
    ptl.set_num_threads(threads)
    gen = np.random.default_rng(3)
    try:
        for shape in [(), (0, 3), (5, 7), (300, 301), (2, 70000)]:
            x, a = make(shape, dtype, "sliced" if len(shape) == 2 else "contiguous")
            mask = gen.integers(0, 2, size=shape).astype(bool)
            views = [(ptl.tensor(mask), mask)]
            if len(shape) == 2:
                views += [(ptl.tensor(mask.T.copy()).t(), mask),
                          (ptl.tensor(mask[:1]), np.broadcast_to(mask[:1], shape)),
                          (ptl.tensor(mask[:, :1]), np.broadcast_to(mask[:, :1], shape))]
            for m, mn in views:
                val = np.array(-0.0 if dtype in FLOAT_DTYPES else 1).astype(a.dtype)
                got = x.masked_fill(m, float(val) if dtype in FLOAT_DTYPES else 1)
                assert_close(got, ref(np.where(mn, val, a)), dtype=dtype)
                y = x.clone()
                assert y.masked_fill_(m, 1) is y
                assert_close(y, ref(np.where(mn, np.array(1).astype(a.dtype), a)))
                if dtype in FLOAT_DTYPES and got.numel():
                    assert (np.signbit(to_numpy(got)) == (mn | np.signbit(a))).all()
                    assert np.isnan(to_numpy(x.masked_fill(m, float("nan")))[mn]).all()
        m = ptl.tensor([[True], [False]])
        assert_close(ptl.zeros(3, dtype=dtype).masked_fill(m, 1),
                     np.where([[True], [False]], 1, np.zeros((2, 3))).astype(NP_DTYPE[dtype]))
    finally:
        ptl.set_num_threads(old)


def test_masked_broadcasting_and_inplace():
    x, a = make((3, 4), ptl.float32)
    m = np.array([True, False, True, False])
    assert_close(x.masked_fill(ptl.tensor(m), ptl.tensor(2.0)), ref(np.where(m, 2.0, a)))
    assert_close(x.masked_select(ptl.tensor(m[:, None][:3, :1].repeat(1, 1))),
                 ref(np.broadcast_to(a, (3, 4))[np.broadcast_to(m[:3, None], (3, 4))]))
    col = ptl.tensor([[True], [False], [True]])
    assert_close(ptl.zeros(4).masked_fill(col, 1.0), np.where(col.numpy(), 1.0, np.zeros((3, 4))))
    y = x.clone()
    assert y.masked_fill_(ptl.tensor(m), -1.0) is y
    assert_close(y, ref(np.where(m, -1.0, a)))
    y.masked_scatter_(ptl.tensor(~m), ptl.arange(12.0))
    m2 = np.broadcast_to(m, (3, 4))
    exp = np.where(m2, -1.0, 0.0)
    exp[~m2] = np.arange(6.0)
    assert_close(y, exp)


OVERLAP = ("unsupported operation: some elements of the input tensor and the written-to tensor "
           "refer to a single memory location. Please clone() the tensor before performing the "
           "operation.")


def test_in_place_index_writes_refuse_a_source_that_overlaps_the_target():
    """PyTorch's assert_no_overlap: the answer would depend on the order of the writes."""
    x = ptl.ones(8, 4)
    n = ptl.zeros(8, dtype=ptl.int64)
    i = ptl.tensor([1, 2, 1])
    writes = [lambda: x.index_put_((i,), x[:3], accumulate=True),
              lambda: x.index_put_((i,), x[:3]),
              lambda: x.index_put_((i,), x),
              lambda: x.index_copy_(0, i, x[:3]),
              lambda: x.index_add_(0, i, x[5:8]),
              lambda: x.scatter_(0, ptl.zeros(2, 4, dtype=ptl.int64), x[:2]),
              lambda: x.scatter_add_(0, ptl.zeros(2, 4, dtype=ptl.int64), x[6:]),
              lambda: n.index_fill_(0, n[:2], 5),
              lambda: n.index_put_((n,), ptl.tensor(5))]
    for write in writes:
        with pytest.raises(RuntimeError, match=re.escape(OVERLAP)):
            write()
    assert (x == 1).all() and (n == 0).all()
    # disjoint parts of one storage, the functional forms and a copied source are fine
    top, bottom = x[:4], x[4:]
    top.index_add_(0, ptl.tensor([0, 0, 3]), bottom[:3])
    assert_close(top.sum(1), np.array([12.0, 4.0, 4.0, 8.0]))
    assert_close(x.index_put((i,), x[:3], accumulate=True)[1], np.array([5.0, 5.0, 5.0, 5.0]))
    y = ptl.ones(3, 2)
    y.index_put_((ptl.tensor([0, 2]),), y[1].clone())
    assert_close(y, np.ones((3, 2)))
    b = ptl.tensor([True, False, True])   # a mask may be self: it becomes indices first
    b[b] = False
    assert b.tolist() == [False, False, False]


INTERNAL_OVERLAP = ("unsupported operation: more than one element of the written-to tensor "
                    "refers to a single memory location. Please clone() the tensor before "
                    "performing the operation.")


def test_in_place_index_writes_refuse_an_expanded_target():
    """PyTorch's assert_no_internal_overlap: an expanded self has elements sharing memory, so
    the answer would depend on the order of the writes (tools/fuzz --torch seed 11:
    masked_scatter_ on an expanded self wrote through)."""
    writes = [lambda L, x, i, m, src: x.masked_scatter_(m, src),
              lambda L, x, i, m, src: x.masked_scatter_(~m, src),
              lambda L, x, i, m, src: x.index_copy_(0, i, src),
              lambda L, x, i, m, src: x.index_add_(0, i, src),
              lambda L, x, i, m, src: x.scatter_(0, i, src),
              lambda L, x, i, m, src: x.scatter_(0, i, 3),
              lambda L, x, i, m, src: x.scatter_add_(0, i, src),
              lambda L, x, i, m, src: x.scatter_reduce_(0, i, src, "amax"),
              lambda L, x, i, m, src: x.scatter_(0, i, src, reduce="add")]
    for name in ("float32", "int64"):
        for lib in ([torch] if torch is not None else []) + [ptl]:
            dtype = getattr(lib, name)
            args = (lib.tensor([0, 1]), lib.tensor([True, True]), lib.tensor([1, 2]).to(dtype))
            for write in writes:
                x = lib.zeros(1, dtype=dtype).expand(2)
                with pytest.raises(RuntimeError, match=re.escape(INTERNAL_OVERLAP)):
                    write(lib, x, *args)
                assert x.tolist() == [0, 0]
        # the functional forms of an expanded self, and a stride-0 dim of size 1
        dtype = getattr(ptl, name)
        i, m, src = ptl.tensor([0, 1]), ptl.tensor([True, True]), ptl.tensor([1, 2]).to(dtype)
        x = ptl.zeros(1, dtype=dtype).expand(2)
        assert x.masked_scatter(m, src).tolist() == [1, 2]
        assert x.index_add(0, i, src).tolist() == [1, 2]
        assert x.scatter(0, i, src).tolist() == [1, 2]
        y = ptl.zeros(1, dtype=dtype).expand(1)
        assert y.index_add_(0, i[:1], src[:1]).tolist() == [1]


def test_a_mask_that_does_not_broadcast_names_the_clashing_dimension():
    """PyTorch's messages: the first clash from the right, the mask's size first except in
    masked_fill_ (self's first)."""
    x = ptl.zeros(6, 7, 5).transpose(0, 2)[:, ::2]   # [5, 4, 6]
    m = ptl.zeros(7, 1, dtype=ptl.bool)
    mask_first = ("The size of tensor a (7) must match the size of tensor b (4) at "
                  "non-singleton dimension 1")
    for call in (lambda: x.masked_fill(m, 3), lambda: x.masked_fill(m, ptl.tensor(3.0)),
                 lambda: ptl.masked_select(x, m), lambda: x.masked_scatter(m, ptl.zeros(120))):
        with pytest.raises(RuntimeError, match=re.escape(mask_first)):
            call()
    with pytest.raises(RuntimeError, match=re.escape(
            "The size of tensor a (4) must match the size of tensor b (7) at non-singleton "
            "dimension 1")):
        x.masked_fill_(m, 3)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", [s for s in SHAPES if np.prod(s) > 0])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_take(shape, dtype, layout):
    x, a = make(shape, dtype, layout)
    n = int(np.prod(shape))
    idx = rand_index(n, (2, 3))
    assert_close(x.take(ptl.tensor(idx)), ref(np.take(a.reshape(-1), idx)), dtype=dtype)


@pytest.mark.parametrize("dtype", [ptl.float64, ptl.int32, ptl.bool])
def test_take_along_dim(dtype):
    x, a = make((3, 4), dtype, "transposed")
    idx = np.argsort(ref(a).astype(np.float64), axis=1, kind="stable")
    assert_close(ptl.take_along_dim(x, ptl.tensor(idx), dim=1), ref(np.take_along_axis(a, idx, 1)))
    row = np.array([[2, 0, 1, 1]])
    assert_close(x.take_along_dim(ptl.tensor(row), dim=0), ref(np.take_along_axis(a, row, 0)))
    col = np.array([[1], [0], [3]])   # broadcast along the other dim
    assert_close(x.take_along_dim(ptl.tensor(col), dim=1), ref(np.take_along_axis(a, col, 1)))
    flat = np.array([11, 0, 5])   # dim None views x as 1-d: a contiguous x
    assert_close(ptl.take_along_dim(x.contiguous(), ptl.tensor(flat)),
                 ref(np.take(a.reshape(-1), flat)))


# ---- nonzero, argwhere, where ----

@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_nonzero(shape, dtype, layout):
    x, a = make(shape, dtype, layout, low=-1, high=1)
    assert_close(ptl.nonzero(x), np.argwhere(a), dtype=ptl.int64)
    assert_close(ptl.argwhere(x), np.argwhere(a))
    got = x.nonzero(as_tuple=True)
    exp = np.nonzero(np.atleast_1d(a))
    assert len(got) == len(exp)
    for g, e in zip(got, exp):
        assert_close(g, e)
    for g, e in zip(ptl.where(x), exp):
        assert_close(g, e)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_mask_rows_chunks_and_layouts(dtype, threads):
    """nonzero and x[mask] walk the mask a row of at most 4096 elements at a time (Note [Mask
    rows]): last dims at and across 4096 and 8192, strided and flipped masks, -0.0 and NaN
    in float masks, empty and 0-dim ones; a lone mask index takes the direct offset path,
    a mask next to another index the nonzero one."""
    old = ptl.get_num_threads()
    ptl.set_num_threads(threads)
    gen = np.random.default_rng(7)
    try:
        for shape in [(), (0,), (3, 0), (7, 9), (2, 3, 4), (4095,), (2, 4096), (3, 4097),
                      (8193,)]:
            a = gen.integers(-1, 2, shape).astype(NP_DTYPE[dtype])
            if dtype in FLOAT_DTYPES and a.size:
                a.flat[::3] = -0.0
                a.flat[1::5] = np.nan
            t = ptl.tensor(a, dtype=dtype)
            views = [(t, a)]
            if t.dim() >= 1:
                views.append((t.flip(0), a[::-1]))
            if t.dim() == 2:
                views.append((t.t(), a.T))
            for x, xa in views:
                assert_close(x.nonzero(), np.argwhere(xa), dtype=ptl.int64)
                if dtype != ptl.bool:
                    continue
                v = ptl.tensor(gen.standard_normal(xa.shape + (2,)))
                vn = v.numpy()
                assert_close(v[..., 0][x], vn[..., 0][xa])
                assert_close(v[..., 1][x], vn[..., 1][xa])
                assert_close(v.select(-1, 0).masked_select(x), vn[..., 0][xa])
                assert_close(v[x], vn[xa])
                if xa.ndim >= 1:
                    assert_close(v[x, 1], vn[xa, 1])
                w = v.clone()
                w[x] = -3.0
                wn = vn.copy()
                wn[xa] = -3.0
                assert_close(w, wn)
    finally:
        ptl.set_num_threads(old)


# ---- unique, unique_consecutive ----

@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_unique(shape, dtype):
    x, a = make(shape, dtype, "transposed", low=-2, high=2)
    vals, inv, counts = ptl.unique(x, return_inverse=True, return_counts=True)
    ev, ei, ec = np.unique(a, return_inverse=True, return_counts=True)
    assert_close(vals, ref(ev), dtype=dtype)
    assert_close(inv, ei.reshape(a.shape))
    assert_close(counts, ec)
    assert_close(ptl.unique(x), ref(ev))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_unique_flat_long_and_strided(dtype, threads):
    """The flat path (Note [Flat unique]): sort, then one pass over the sorted values; around
    the sort's short-lane limit (32), long, strided, expanded, empty and 0-dim inputs."""
    old = ptl.get_num_threads()
    ptl.set_num_threads(threads)
    try:
        for n in (0, 1, 31, 32, 33, 1000):
            for layout in ("contiguous", "sliced", "expanded"):
                x, a = make((n, 3), dtype, layout, seed=n, low=-40, high=40)
                for inv_, cnt_ in ((False, False), (True, False), (False, True), (True, True)):
                    got = ptl.unique(x, return_inverse=inv_, return_counts=cnt_)
                    got = got if isinstance(got, tuple) else (got,)
                    ev, ei, ec = np.unique(a, return_inverse=True, return_counts=True)
                    assert_close(got[0], ref(ev), dtype=dtype)
                    if inv_:
                        assert_close(got[1], ei.reshape(a.shape))
                    if cnt_:
                        assert_close(got[-1], ec)
        x, a = make((), dtype)
        v, i, c = ptl.unique(x, return_inverse=True, return_counts=True)
        assert_close(v, ref(a.reshape(1)))
        assert i.shape == () and c.tolist() == [1]
    finally:
        ptl.set_num_threads(old)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_unique_flat_nan_and_signed_zero(dtype):
    """Each NaN is its own group, sorted last in input order (as PyTorch: NaN != NaN), and
    -0.0 joins 0.0 with the first occurrence's sign, in long lanes too."""
    base = np.array([0.0, np.nan, -0.0, 1.0, np.nan, -np.inf, 0.0, 1.0] * 9)
    for a in (base, -base[::-1]):
        v, i, c = ptl.unique(ptl.tensor(a, dtype=dtype), return_inverse=True, return_counts=True)
        ev, ei, ec = np.unique(a, return_inverse=True, return_counts=True, equal_nan=False)
        # NumPy's inverse orders the NaNs as its unstable sort left them; PyTorch's, by input
        ei = ei.reshape(-1).copy()
        ei[np.isnan(a)] = np.isfinite(ev).sum() + np.isinf(ev).sum() + np.arange(
            np.isnan(a).sum())
        assert_close(v, ev, dtype=dtype, equal_nan=True)
        assert_close(i, ei.reshape(-1))
        assert_close(c, ec)
        zero = v.double().numpy() == 0
        assert np.signbit(v.double().numpy()[zero]) == np.signbit(a[a == 0][:1])


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_unique_dim(dim):
    a = np.array([[1, 2, 1, 2], [0, 1, 0, 3], [1, 2, 1, 2]])
    v, i, c = ptl.unique(ptl.tensor(a), dim=dim, return_inverse=True, return_counts=True)
    ev, ei, ec = np.unique(a, axis=dim, return_inverse=True, return_counts=True)
    assert_close(v, ev)
    assert_close(i, ei.reshape(-1))
    assert_close(c, ec)


def test_unique_nan_rows_and_runs():
    """A row or run holding a NaN is never equal to another (PyTorch's unique_consecutive and
    unique(dim) compare with ==)."""
    nan = float("nan")
    v, i, c = ptl.unique_consecutive(ptl.tensor([nan, nan, 1.0, 1.0, -0.0, 0.0]),
                                     return_inverse=True, return_counts=True)
    assert_close(v, [nan, nan, 1.0, -0.0], equal_nan=True)
    assert i.tolist() == [0, 1, 2, 2, 3, 3] and c.tolist() == [1, 1, 2, 2]
    rows = ptl.tensor([[1.0, nan], [0.0, 2.0], [1.0, nan], [0.0, 2.0]])
    v, i, c = ptl.unique(rows, dim=0, return_inverse=True, return_counts=True)
    assert_close(v, [[0.0, 2.0], [1.0, nan], [1.0, nan]], equal_nan=True)
    assert i.tolist() == [1, 0, 2, 0] and c.tolist() == [2, 1, 1]
    v, c = rows.unique_consecutive(dim=0, return_counts=True)
    assert v.shape == (4, 2) and c.tolist() == [1, 1, 1, 1]


def consecutive_ref(a):
    a = a.reshape(-1)
    starts = [0] + [i for i in range(1, len(a)) if a[i] != a[i - 1]]
    counts = np.diff(starts + [len(a)])
    return a[starts], np.repeat(np.arange(len(starts)), counts), counts


@pytest.mark.parametrize("dtype", [ptl.int64, ptl.float32, ptl.bool, ptl.uint8])
def test_unique_consecutive(dtype):
    x, a = make((9,), dtype, low=0, high=1)
    v, i, c = ptl.unique_consecutive(x, return_inverse=True, return_counts=True)
    ev, ei, ec = consecutive_ref(a)
    assert_close(v, ref(ev), dtype=dtype)
    assert_close(i, ei)
    assert_close(c, ec)
    rows = ptl.tensor([[1, 1], [1, 1], [2, 0], [1, 1]])
    v, c = rows.unique_consecutive(return_counts=True, dim=0)
    assert v.tolist() == [[1, 1], [2, 0], [1, 1]] and c.tolist() == [2, 1, 1]


@pytest.mark.parametrize("flags", [(False, False), (True, False), (False, True)])
def test_unique_consecutive_op_with_dim_returns_inverse_and_counts(flags):
    """aten's unique_consecutive with a dim fills inverse and counts whatever the flags say
    (PyTorch's unique_dim_consecutive, as unique_dim); without a dim only the asked ones."""
    x = ptl.tensor([[1, 1, 2, 1], [0, 0, 5, 0]])
    v, i, c = ptl.ops.aten.unique_consecutive(x, *flags, dim=1)
    assert v.tolist() == [[1, 2, 1], [0, 5, 0]]
    assert i.tolist() == [0, 0, 1, 2] and c.tolist() == [2, 1, 1]
    v, i, c = ptl.ops.aten.unique_consecutive(x, *flags)
    assert i.tolist() == ([[0, 0, 1, 2], [3, 3, 4, 5]] if flags[0] else [])
    assert c.tolist() == ([2, 1, 1, 2, 1, 1] if flags[1] else [])


# ---- bincount, histc, searchsorted, bucketize, one_hot ----

@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_bincount(dtype):
    a = np.random.default_rng(0).integers(0, 6, size=20).astype(NP_DTYPE[dtype])
    assert_close(ptl.bincount(ptl.tensor(a)), np.bincount(a), dtype=ptl.int64)
    assert_close(ptl.tensor(a).bincount(minlength=10), np.bincount(a, minlength=10))
    w = np.random.default_rng(1).random(20)
    assert_close(ptl.bincount(ptl.tensor(a), weights=ptl.tensor(w)), np.bincount(a, w),
                 dtype=ptl.float64)
    assert_close(ptl.bincount(ptl.tensor(a), ptl.tensor(w, dtype=ptl.float32)),
                 np.bincount(a, w.astype(np.float32)), dtype=ptl.float32)
    assert_close(ptl.bincount(ptl.tensor(a), ptl.tensor(a)), np.bincount(a, a),
                 dtype=ptl.float64)
    assert_close(ptl.bincount(ptl.tensor([], dtype=dtype)), np.zeros(0, np.int64))


@pytest.mark.parametrize("dtype", [ptl.int64, ptl.int32, ptl.int16, ptl.uint8], ids=str)
def test_bincount_typed_loops_and_lanes(dtype):
    # Note [Typed bincount]: 4 histograms when n >= 4 * bins and bins <= 65536, else one;
    # contiguous and strided self, at and across both thresholds
    rng = np.random.default_rng(3)
    top = {ptl.uint8: 255, ptl.int16: 32767}.get(dtype, 70000)
    for n, hi in [(0, 1), (1, 1), (7, 2), (8, 2), (9, 2), (400, 100), (399, 100), (401, 100),
                  (300000, min(top, 65536)), (300000, min(top, 65537)), (5000, 1000)]:
        a = rng.integers(0, hi, 2 * n).astype(NP_DTYPE[dtype])
        if n and dtype != ptl.uint8:
            a[0] = hi - 1
        t = ptl.tensor(a)
        np.testing.assert_array_equal(ptl.bincount(t).numpy(), np.bincount(a))
        np.testing.assert_array_equal(ptl.bincount(t[::2]).numpy(), np.bincount(a[::2]))
        np.testing.assert_array_equal(t[1::2].bincount(minlength=hi + 3).numpy(),
                                      np.bincount(a[1::2], minlength=hi + 3))
        assert ptl.bincount(t).dtype == ptl.int64
    if dtype != ptl.uint8:
        with pytest.raises(RuntimeError, match="bincount only supports 1-d non-negative"):
            ptl.bincount(ptl.tensor([3, -1, 2], dtype=dtype))
        with pytest.raises(RuntimeError, match="bincount only supports 1-d non-negative"):
            ptl.bincount(ptl.tensor([3, 0, -1, 5, 1], dtype=dtype)[::2])


@pytest.mark.parametrize("bdt", [ptl.int64, ptl.int32, ptl.float32, ptl.float64], ids=str)
@pytest.mark.parametrize("vdt", [ptl.int64, ptl.float32], ids=str)
def test_searchsorted_typed_and_generic_loops(bdt, vdt):
    # Note [Typed searches] (same dtypes) and the generic loop (mixed): NumPy's positions,
    # duplicates, infinities, every boundary length up to 9, strided and 2-D values, int32
    # output; a NaN value at the end on both sides, as PyTorch (the device's search_plan.h
    # keeps the same rule as the CPU loops)
    rng = np.random.default_rng(8)
    for n in list(range(10)) + [100]:
        b = np.sort(rng.integers(-6, 6, n)).astype(NP_DTYPE[bdt])
        if bdt.is_floating_point and n > 2:
            b[0], b[-1] = -np.inf, np.inf
        v = rng.integers(-8, 8, (6, 10)).astype(NP_DTYPE[vdt])
        if vdt.is_floating_point:
            v[0, :4] = [np.nan, np.inf, -np.inf, 0.5]
        for right in (False, True):
            want = np.searchsorted(b.astype(np.float64), v.astype(np.float64),
                                   "right" if right else "left")
            want[np.isnan(v)] = n
            bt, vt = ptl.tensor(b), ptl.tensor(v)
            got = ptl.searchsorted(bt, vt, right=right)
            np.testing.assert_array_equal(got.numpy(), want)
            got = ptl.searchsorted(bt, vt[:, ::3], right=right, out_int32=True)
            assert got.dtype == ptl.int32
            np.testing.assert_array_equal(got.numpy(), want[:, ::3])
            np.testing.assert_array_equal(ptl.bucketize(vt.t(), bt, right=right).numpy(),
                                          want.T)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_histc(dtype, layout):
    x, a = make((4, 5), dtype, layout)
    exp, _ = np.histogram(ref(a), bins=7, range=(-3, 3))
    assert_close(ptl.histc(x, bins=7, min=-3, max=3), exp, dtype=dtype)
    lo, hi = ref(a).min(), ref(a).max()
    exp, _ = np.histogram(ref(a), bins=5, range=(lo, hi))
    assert_close(x.histc(5), exp, dtype=dtype)
    assert_close(ptl.histc(ptl.tensor([1.0, 1.0], dtype=dtype), bins=4), np.array([0, 0, 2, 0]))


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64, ptl.int64, ptl.int16, ptl.uint8,
                                   ptl.float16])
@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_bucketize(dtype, right):
    b = np.array([0, 1, 1, 3, 4, 7]).astype(NP_DTYPE[dtype])
    v, va = make((3, 4), dtype, "transposed", low=0, high=7)
    side = "right" if right else "left"
    exp = np.searchsorted(ref(b), ref(va), side=side)
    assert_close(ptl.searchsorted(ptl.tensor(b), v, right=right), exp, dtype=ptl.int64)
    assert_close(ptl.searchsorted(ptl.tensor(b), v, side=side, out_int32=True), exp,
                 dtype=ptl.int32)
    assert_close(ptl.bucketize(v, ptl.tensor(b), right=right), exp)
    # bucketize's right=False is np.digitize's right=True
    assert_close(ptl.bucketize(v, ptl.tensor(b), right=right),
                 np.digitize(ref(va), ref(b), right=not right))
    assert ptl.searchsorted(ptl.tensor(b), 3, right=right).item() == \
        np.searchsorted(ref(b), 3, side=side)
    assert ptl.bucketize(3, ptl.tensor(b), right=right).item() == \
        np.searchsorted(ref(b), 3, side=side)


def test_searchsorted_rows_and_sorter():
    b = np.sort(GEN.integers(0, 10, size=(3, 5)), axis=1)
    v = GEN.integers(0, 10, size=(3, 4))
    got = ptl.searchsorted(ptl.tensor(b), ptl.tensor(v))
    assert_close(got, np.stack([np.searchsorted(b[i], v[i]) for i in range(3)]))
    unsorted = np.array([5.0, 1.0, 3.0, 9.0])
    order = np.argsort(unsorted)
    q = np.array([0.0, 3.0, 4.0, 10.0])
    assert_close(ptl.searchsorted(ptl.tensor(unsorted), ptl.tensor(q), sorter=ptl.tensor(order)),
                 np.searchsorted(unsorted, q, sorter=order))


@pytest.mark.parametrize("shape", [(), (0,), (5,), (2, 3)])
def test_one_hot(shape):
    a = np.random.default_rng(0).integers(0, 4, size=shape)
    assert_close(ptl.nn.functional.one_hot(ptl.tensor(a), 6), np.eye(6, dtype=np.int64)[a])
    if a.size:
        k = int(a.max()) + 1
        assert_close(ptl.nn.functional.one_hot(ptl.tensor(a)), np.eye(k, dtype=np.int64)[a])


# ---- errors: PyTorch's type and wording (checked against torch itself when installed) ----

def f32(*s):
    return lambda lib: lib.arange(float(np.prod(s))).reshape(*s)


ERRORS = [
    (lambda L: f32(3)(L)[[5]], IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
    (lambda L: f32(2, 3)(L)[[0], [4]], IndexError,
     "index 4 is out of bounds for dimension 1 with size 3"),
    (lambda L: f32(4)(L)[L.tensor([True, False, True])], IndexError,
     "The shape of the mask [3] at index 0 does not match the shape of the indexed tensor [4] "
     "at index 0"),
    (lambda L: f32(4)(L)[L.tensor([1.0])], IndexError,
     "tensors used as indices must be long, int, byte or bool tensors"),
    (lambda L: f32(2, 3)(L)[[0, 1], [0, 1, 2]], IndexError,
     "shape mismatch: indexing tensors could not be broadcast together with shapes [2], [3]"),
    (lambda L: f32(2, 3)(L)[[0], [0], [0]], IndexError, "too many indices for tensor of dimension 2"),
    (lambda L: L.index_put(f32(2, 3)(L), (L.tensor([0]),), L.tensor([1.0], dtype=L.float64)),
     RuntimeError, "Index put requires the source and destination dtypes match, got Float for "
                   "the destination and Double for the source."),
    (lambda L: f32(2, 3)(L).__setitem__(L.tensor([0, 1]), L.ones(3, 3)), RuntimeError,
     "shape mismatch: value tensor of shape [3, 3] cannot be broadcast to indexing result of "
     "shape [2, 3]"),
    (lambda L: f32(2, 3)(L).index_select(0, L.tensor([[0]])), IndexError,
     "index_select(): Index is supposed to be a vector"),
    (lambda L: f32(2, 3)(L).index_select(0, L.tensor([0.0])), RuntimeError,
     "index_select(): Expected dtype int32 or int64 for index"),
    (lambda L: f32(2, 3)(L).index_select(0, L.tensor([5])), IndexError,
     "index out of range in self"),
    (lambda L: f32(2, 3)(L).index_add_(0, L.tensor([0, 1]), L.ones(3, 3)), RuntimeError,
     "index_add_(): Number of indices (2) should be equal to source.size(dim): (3), for dim: 0"),
    (lambda L: f32(2, 3)(L).index_add_(0, L.tensor([0]), L.ones(1, 3, dtype=L.float64)),
     RuntimeError, "index_add_(): self (Float) and source (Double) must have the same scalar type"),
    (lambda L: f32(2, 3)(L).index_add_(0, L.tensor([4]), L.ones(1, 3)), RuntimeError,
     "index 4 is out of bounds for dimension 0 with size 2"),
    (lambda L: f32(2, 3)(L).index_add_(0, L.tensor([0.0]), L.ones(1, 3)), RuntimeError,
     "index_add_(): Expected dtype int32/int64 for index but got: Float"),
    (lambda L: f32(2, 3)(L).index_add_(0, L.tensor([0]), L.ones(1, 4)), RuntimeError,
     "source tensor shape must match self tensor shape, excluding the specified dimension. Got "
     "self.shape = [2, 3] source.shape = [1, 4]"),
    (lambda L: f32(2, 3)(L).index_copy_(0, L.tensor([0, 1]), L.ones(3, 3)), IndexError,
     "index_copy_(): Number of indices (2) should be equal to source.size(dim) (3)"),
    (lambda L: f32(2, 3)(L).index_copy_(0, L.tensor([4]), L.ones(1, 3)), IndexError,
     "index_copy_(): index 4 is out of bounds for dimension 0 with size 2"),
    (lambda L: f32(2, 3)(L).index_copy_(0, L.tensor([0]), L.ones(1, 3, dtype=L.float64)),
     RuntimeError, "index_copy_(): self and source expected to have the same dtype, but got "
                   "(self) Float and (source) Double"),
    (lambda L: f32(2, 3)(L).index_fill_(0, L.tensor([4]), 1.0), IndexError,
     "index 4 is out of bounds for dimension 0 with size 2"),
    (lambda L: f32(2, 3)(L).index_fill_(0, L.tensor([0]), L.tensor([1.0, 2.0])), RuntimeError,
     "index_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 "
     "dimension(s)."),
    (lambda L: f32(2, 3)(L).index_fill_(0, L.tensor([0.0]), 1.0), IndexError,
     "index_fill_(): Expected dtype int64 for index."),
    (lambda L: f32(2, 3)(L).index_fill(0, L.tensor([[0]]), 1.0), RuntimeError,
     "Index has to be a vector/scalar"),
    (lambda L: f32(2, 3)(L).gather(0, L.tensor([1])), RuntimeError,
     "Index tensor must have the same number of dimensions as input tensor"),
    (lambda L: f32(2, 3)(L).gather(0, L.tensor([[5]])), RuntimeError,
     "index 5 is out of bounds for dimension 0 with size 2"),
    (lambda L: f32(2, 3)(L).gather(0, L.tensor([[0, 0, 0, 0]])), RuntimeError,
     "Size does not match at dimension 1 expected index [1, 4] to be no larger than self [2, 3] "
     "apart from dimension 0"),
    (lambda L: f32(2, 3)(L).gather(0, L.tensor([[0.0]])), RuntimeError,
     "gather(): Expected dtype int32/int64 for index"),
    (lambda L: f32(2, 3)(L).scatter_(0, L.tensor([1]), L.ones(2, 3)), RuntimeError,
     "Index tensor must have the same number of dimensions as self tensor"),
    (lambda L: f32(2, 3)(L).scatter_(0, L.tensor([[0, 0, 0, 0]]), L.ones(2, 3)), RuntimeError,
     "Expected index [1, 4] to be no larger than self [2, 3] apart from dimension 0 and to be "
     "no larger size than src [2, 3]"),
    (lambda L: f32(2, 3)(L).scatter_(0, L.tensor([[0, 0, 0]]), L.ones(1, 2)), RuntimeError,
     "Expected index [1, 3] to be no larger than self [2, 3] apart from dimension 0 and to be "
     "no larger size than src [1, 2]"),
    (lambda L: f32(2, 3)(L).scatter_(0, L.tensor([[5]]), L.ones(2, 3)), RuntimeError,
     "index 5 is out of bounds for dimension 0 with size 2"),
    (lambda L: f32(2, 3)(L).scatter_(0, L.tensor([[0]]), L.ones(2, 3, dtype=L.float64)),
     RuntimeError, "scatter(): Expected self.dtype to be equal to src.dtype"),
    (lambda L: f32(2, 3)(L).scatter_add_(0, L.tensor([[0]]), L.ones(2, 3, dtype=L.float64)),
     RuntimeError, "scatter(): Expected self.dtype to be equal to src.dtype"),
    (lambda L: f32(2, 3)(L).scatter_reduce_(0, L.tensor([[0]]), L.ones(2, 3), reduce="foo"),
     RuntimeError, "reduce argument must be either sum, prod, mean, amax or amin, got foo"),
    (lambda L: L.zeros(3, dtype=L.bool).scatter_reduce(0, L.tensor([0]), L.ones(1, dtype=L.bool),
                                                       "mean"),
     NotImplementedError, "\"scatter_gather_tensor_cpu_reduce_mean\" not implemented for 'Bool'"),
    (lambda L: f32(2, 3)(L).masked_fill(L.tensor([[1, 0, 1]], dtype=L.uint8), 1.0), RuntimeError,
     "masked_fill_ only supports boolean masks, but got mask with dtype unsigned char"),
    (lambda L: f32(2, 3)(L).masked_fill(L.tensor([True, False, True]), L.tensor([1.0, 2.0])),
     RuntimeError, "masked_fill_ only supports a 0-dimensional value tensor, but got tensor "
                   "with 1 dimension(s)."),
    (lambda L: L.zeros(3).masked_fill_(L.tensor([[True], [False]]), 1.0), RuntimeError,
     "output with shape [3] doesn't match the broadcast shape [2, 3]"),
    (lambda L: f32(2, 3)(L).masked_select(L.tensor([1.0, 0.0, 1.0])), RuntimeError,
     "masked_select: expected BoolTensor for mask"),
    (lambda L: f32(2, 3)(L).masked_scatter_(L.tensor([True, True, True]), L.ones(2)),
     RuntimeError, "Number of elements of source < number of ones in mask"),
    (lambda L: f32(2, 3)(L).masked_scatter_(L.tensor([True, True, True]),
                                            L.ones(6, dtype=L.float64)),
     RuntimeError, "masked_scatter: expected self and source to have same dtypes but "
                   "gotFloat and Double"),
    (lambda L: f32(2, 3)(L).take(L.tensor([6])), IndexError,
     "out of range: tried to access index 6 on a tensor of 6 elements."),
    (lambda L: f32(2, 3)(L).take(L.tensor([0], dtype=L.int32)), RuntimeError,
     "take(): Expected a long tensor for index, but got Int"),
    (lambda L: L.take_along_dim(f32(2, 3)(L), L.tensor([0]), dim=0), RuntimeError,
     "torch.take_along_dim(): input and indices should have the same number of dimensions, but "
     "got 2 dimensions for input, and 1 dimensions for indices"),
    (lambda L: L.bincount(L.tensor([-1, 2])), RuntimeError,
     "bincount only supports 1-d non-negative integral inputs."),
    (lambda L: L.bincount(L.tensor([[1, 2]])), RuntimeError,
     "bincount only supports 1-d non-negative integral inputs."),
    (lambda L: L.bincount(L.tensor([1.0, 2.0])), NotImplementedError,
     "\"bincount_cpu\" not implemented for 'Float'"),
    (lambda L: L.bincount(L.tensor([True])), NotImplementedError,
     "\"bincount_cpu\" not implemented for 'Bool'"),
    (lambda L: L.bincount(L.tensor([1, 2]), minlength=-1), RuntimeError,
     "minlength should be >= 0"),
    (lambda L: L.bincount(L.tensor([1, 2]), weights=L.tensor([1.0, 2, 3])), RuntimeError,
     "weights should be 1-d and have the same length as input"),
    (lambda L: L.histc(f32(2, 3)(L), bins=0), RuntimeError,
     "torch.histogram(): bins must be > 0, but got 0 for dimension 0"),
    (lambda L: L.histc(f32(2, 3)(L), bins=3, min=3, max=1), RuntimeError,
     "torch.histc: max must be larger than min"),
    (lambda L: L.histc(L.tensor([1, 2]), bins=3), NotImplementedError,
     "\"histogram_cpu\" not implemented for 'Long'"),
    (lambda L: L.searchsorted(L.zeros(2, 3), L.zeros(3, 1)), RuntimeError,
     "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions "
     "of boundaries tensor and input value tensor must match, but we got boundaries tensor "
     "[2, 3] and input value tensor [3, 1]"),
    (lambda L: L.searchsorted(L.zeros(3), L.zeros(3), side="left", right=True), RuntimeError,
     "torch.searchsorted(): side and right can't be set to opposites, got side of left while "
     "right was True"),
    (lambda L: L.searchsorted(L.zeros(3), L.zeros(3), side="foo"), RuntimeError,
     "torch.searchsorted(): side can only be 'left' or 'right' but got foo"),
    # boundaries of 0 or 2 dims with a scalar value, and of 0 dims (tools/fuzz --torch seed 11)
    (lambda L: L.searchsorted(L.tensor(3), 2.0), RuntimeError,
     "torch.searchsorted(): input value can be a scalar only when boundaries tensor dimension "
     "is 1, but we got boundaries tensor dim(0) and input value's dim(0) numel(1)"),
    (lambda L: L.searchsorted(L.zeros(2, 2), L.tensor(2.0)), RuntimeError,
     "torch.searchsorted(): input value can be a scalar only when boundaries tensor dimension "
     "is 1, but we got boundaries tensor dim(2) and input value's dim(0) numel(1)"),
    (lambda L: L.searchsorted(L.tensor(3), L.zeros(2)), RuntimeError,
     "torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 "
     "dimension"),
    (lambda L: L.searchsorted(L.zeros(3), L.zeros(3), sorter=L.tensor([0.0, 1, 2])),
     RuntimeError, "torch.searchsorted(): sorter must be a tensor of long dtype but got dtype "
                   "Float"),
    (lambda L: L.searchsorted(L.zeros(3), L.zeros(3), sorter=L.tensor([0, 1])), RuntimeError,
     "torch.searchsorted(): boundary and sorter must have the same size, but got boundary "
     "tensor [3]and got sorter tensor [2]"),
    (lambda L: L.searchsorted(L.zeros(3), L.zeros(3), sorter=L.tensor([0, 1, 5])), RuntimeError,
     "torch.searchsorted(): sorter index out of range"),
    (lambda L: L.searchsorted(L.zeros(3, dtype=L.bool), L.zeros(3, dtype=L.bool)),
     NotImplementedError, "\"searchsorted_out_cpu\" not implemented for 'Bool'"),
    (lambda L: L.bucketize(L.zeros(3), L.zeros(2, 2)), RuntimeError,
     "boundaries tensor must be 1 dimension, but got dim(2)"),
    (lambda L: L.nn.functional.one_hot(L.tensor([1, 2], dtype=L.int32)), RuntimeError,
     "one_hot is only applicable to index tensor of type LongTensor."),
    (lambda L: L.nn.functional.one_hot(L.tensor([-1, 2])), RuntimeError,
     "Class values must be non-negative."),
    (lambda L: L.nn.functional.one_hot(L.tensor([1, 2]), 2), RuntimeError,
     "Class values must be smaller than num_classes."),
    (lambda L: L.nn.functional.one_hot(L.tensor([], dtype=L.long)), RuntimeError,
     "Can not infer total number of classes from empty tensor."),
    (lambda L: L.unique(f32(2, 3)(L), dim=2), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors(case):
    fn, exc, msg = ERRORS[case]
    with pytest.raises(exc, match=re.escape(msg)):
        fn(ptl)
    if torch is not None:   # the message is PyTorch's own
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(exc, match=re.escape(msg)):
                fn(torch)


# ---- gradients (float64 gradcheck + gradgradcheck of every formula) ----

def leaf(shape, seed=0):
    a = np.random.default_rng(seed).uniform(-2, 2, size=shape)
    return ptl.tensor(a, dtype=ptl.float64, requires_grad=True)


I2 = ptl.tensor([2, 0])
G = ptl.tensor([[0, 0], [1, 3], [3, 3]])
M = ptl.tensor([[True, False, True, False]] * 3)

GRADCHECKED_ROWS = {
    "index_Tensor": (lambda a: a[[0, 2, 2]][:, ptl.tensor([[1], [3]])], [(3, 4)]),
    "index_put": (lambda a, b: ptl.index_put(a, (ptl.tensor([0, 2]),), b), [(3, 4), (4,)]),
    "index_put_": (lambda a, b: (a * 1).index_put_((ptl.tensor([0, 0]), ptl.tensor([1, 1])), b,
                                                   True), [(3, 4), (2,)]),
    "index_select": (lambda a: a.index_select(1, ptl.tensor([3, 0, 3])), [(3, 4)]),
    "index_add": (lambda a, b: a.index_add(0, I2, b, alpha=2), [(3, 4), (2, 4)]),
    "index_add_": (lambda a, b: (a * 1).index_add_(0, ptl.tensor([1, 1]), b), [(3, 4), (2, 4)]),
    "index_copy": (lambda a, b: a.index_copy(0, I2, b), [(3, 4), (2, 4)]),
    "index_copy_": (lambda a, b: (a * 1).index_copy_(1, I2, b), [(3, 4), (3, 2)]),
    "index_fill_int_Scalar": (lambda a: a.index_fill(1, ptl.tensor([1]), 2.0), [(3, 4)]),
    "index_fill__int_Scalar": (lambda a: (a * 1).index_fill_(0, I2, 2.0), [(3, 4)]),
    "index_fill_int_Tensor": (lambda a, b: a.index_fill(1, ptl.tensor([1, 3]), b), [(3, 4), ()]),
    "index_fill__int_Tensor": (lambda a, b: (a * 1).index_fill_(0, I2, b), [(3, 4), ()]),
    "gather": (lambda a: a.gather(1, G), [(3, 4)]),
    "scatter_src": (lambda a, b: a.scatter(1, ptl.tensor([[0, 1], [2, 3], [3, 0]]), b),
                    [(3, 4), (3, 2)]),
    "scatter__src": (lambda a, b: (a * 1).scatter_(0, ptl.tensor([[2, 0, 1, 1]]), b),
                     [(3, 4), (1, 4)]),
    "scatter_value": (lambda a: a.scatter(1, G, 1.5), [(3, 4)]),
    "scatter__value": (lambda a: (a * 1).scatter_(1, G, 1.5), [(3, 4)]),
    "scatter_add": (lambda a, b: a.scatter_add(1, G, b), [(3, 4), (3, 2)]),
    "scatter_add_": (lambda a, b: (a * 1).scatter_add_(1, G, b), [(3, 4), (3, 2)]),
    "masked_fill_Scalar": (lambda a: a.masked_fill(M, 0.5), [(3, 4)]),
    "masked_fill__Scalar": (lambda a: (a * 1).masked_fill_(M[0], 0.5), [(3, 4)]),
    "masked_fill_Tensor": (lambda a, b: a.masked_fill(M[0], b), [(3, 4), ()]),
    "masked_fill__Tensor": (lambda a, b: (a * 1).masked_fill_(M, b), [(3, 4), ()]),
    "masked_scatter": (lambda a, b: a.masked_scatter(M, b), [(3, 4), (2, 4)]),
    "masked_scatter_": (lambda a, b: (a * 1).masked_scatter_(M[0], b), [(3, 4), (7,)]),
    "take": (lambda a: a.take(ptl.tensor([[0, 11], [5, 5]])), [(3, 4)]),
}

NODE_NAMES = {"index_Tensor": "IndexBackward0", "index_put": "IndexPutBackward0",
              "index_select": "IndexSelectBackward0", "gather": "GatherBackward0",
              "masked_fill_Scalar": "MaskedFillBackward0", "scatter_add": "ScatterAddBackward0",
              "take": "TakeBackward0", "index_add": "IndexAddBackward0",
              "scatter_src": "ScatterBackward0", "masked_fill_Tensor": "MaskedFillBackward1"}


@pytest.mark.parametrize("row", sorted(GRADCHECKED_ROWS))
def test_gradcheck(row):
    fn, shapes = GRADCHECKED_ROWS[row]
    args = [leaf(s, seed=i) for i, s in enumerate(shapes)]
    assert gradcheck(fn, args)
    assert gradgradcheck(fn, args)
    if row in NODE_NAMES:
        assert type(fn(*args).grad_fn).__name__ == NODE_NAMES[row]


def test_composites_differentiate_through_their_parts():
    a = leaf((3, 4))
    assert gradcheck(lambda t: t.masked_select(M[0]), [a])
    assert gradcheck(lambda t: ptl.take_along_dim(t, G, dim=1), [a])
    assert type(ptl.take_along_dim(a, G, dim=1).grad_fn).__name__ == "GatherBackward0"


def test_index_backward_accumulates_duplicates():
    a = leaf((4,))
    a[[1, 1, 3]].sum().backward()
    assert a.grad.tolist() == [0.0, 2.0, 0.0, 1.0]


def test_setitem_records_index_put():
    a = leaf((3,))
    v = leaf((2,), seed=1)
    b = a * 1
    b[[0, 2]] = v
    assert type(b.grad_fn).__name__ == "IndexPutBackward0"
    b.sum().backward()
    assert a.grad.tolist() == [0.0, 1.0, 0.0] and v.grad.tolist() == [1.0, 1.0]


def test_negative_indices_follow_pytorch():
    x, a = make((3, 4), ptl.float32)
    assert_close(x[[-1, -3]], ref(a[[-1, -3]]))
    assert_close(x.take(ptl.tensor([-1])), ref(a.reshape(-1)[[-1]]))
    assert_close(x.index_fill(0, ptl.tensor([-1]), 0.0), ref(np.where(
        np.arange(3)[:, None] == 2, 0.0, a)))
    for fn in [lambda L: L.zeros(2, 3).gather(0, L.tensor([[-1]])),
               lambda L: L.zeros(2, 3).scatter(0, L.tensor([[-1]]), 1.0),
               lambda L: L.zeros(2, 3).index_add(0, L.tensor([-1]), L.ones(1, 3))]:
        with pytest.raises(RuntimeError, match=re.escape(
                "index -1 is out of bounds for dimension 0 with size 2")):
            fn(ptl)
    with pytest.raises(IndexError, match=re.escape("index out of range in self")):
        x.index_select(0, ptl.tensor([-1]))


def test_no_leaks_including_error_paths():
    x = ptl.arange(12.0).reshape(3, 4)
    i = ptl.tensor([2, 0])
    g = ptl.tensor([[0, 1], [2, 3], [3, 3]])
    m = x > 4

    def run():
        x[i], x[:, [1, 3]], x[m], x[[0, 1], [1, 2]]
        y = x.clone()
        y[[0, 2]] = 1.0
        y[m] = ptl.tensor(2.0)
        x.index_select(1, i), x.index_add(0, i, x[:2]), x.index_copy(0, i, x[:2])
        x.index_fill(1, i, 0.0), x.gather(1, g), x.scatter(1, g, 1.0)
        x.scatter_add(1, g, x[:, :2]), x.scatter_reduce(1, g, x[:, :2], "mean",
                                                        include_self=False)
        x.masked_fill(m, 0.0), x.masked_select(m), x.masked_scatter(m, x), x.take(g)
        ptl.take_along_dim(x, g, dim=1), ptl.nonzero(x), ptl.where(m), ptl.argwhere(x)
        ptl.unique(x, return_inverse=True, return_counts=True), ptl.unique(x, dim=0)
        ptl.unique_consecutive(x), ptl.bincount(g.reshape(-1)), ptl.histc(x, 4)
        ptl.searchsorted(ptl.tensor([1.0, 5.0]), x), ptl.nn.functional.one_hot(g)
        a = ptl.ones(3, 4, dtype=ptl.float64, requires_grad=True)
        (a[[0, 0]].sum() + a.gather(1, g).sum() + a.masked_fill(m, 0.0).sum()).backward()
        for bad in [lambda: x[[7]], lambda: x[ptl.tensor([1.0])], lambda: x[[0, 1], [0, 1, 2]],
                    lambda: x.gather(1, ptl.tensor([[9]])), lambda: x.scatter(1, g, x.double()),
                    lambda: x.index_add(0, ptl.tensor([5]), x[:1]),
                    lambda: x.masked_scatter(m, ptl.ones(1)), lambda: x.take(ptl.tensor([99])),
                    lambda: ptl.nn.functional.one_hot(ptl.tensor([5]), 2),
                    lambda: ptl.searchsorted(ptl.zeros(3), x, sorter=ptl.tensor([0, 1, 7]))]:
            with pytest.raises((IndexError, RuntimeError)):
                bad()

    assert_no_leak(run)


# ---- whole rows (index.c, Note [Contiguous index rows]): a contiguous trailing run moves by
# memcpy, or by a typed add for index_add_ / accumulating index_put_ with values laid out as
# the result; other layouts take the element walk, with the same bits ----

def _walk_and_rows(fn, base, values):
    """fn on contiguous operands (the row paths) and on transposed copies (the walk)."""
    rows = fn(base.clone(), values)
    walk = fn(base.clone().t().contiguous().t(),
              values.t().contiguous().t() if values.dim() > 1 else values)
    return rows, walk


@pytest.mark.parametrize("dt", [ptl.float32, ptl.float64, ptl.int32, ptl.float16], ids=str)
@pytest.mark.parametrize("n", [1, 2, 17])
def test_index_rows_match_the_element_walk(dt, n):
    gen = np.random.default_rng(n)
    a = gen.standard_normal((9, n)) * 8
    base = ptl.tensor(a).to(dt)
    idx = ptl.tensor([3, 0, 3, 8, 3, 1])            # duplicates accumulate in order
    vals = ptl.tensor(gen.standard_normal((6, n)) * 8).to(dt)
    expected_sel = a.astype(NP_DTYPE[dt])[[3, 0, 3, 8, 3, 1]]
    for got in (base.index_select(0, idx), base[idx], base.t().contiguous().t()[idx]):
        np.testing.assert_array_equal(got.numpy(), expected_sel)
    for name, fn in [
            ("index_put_", lambda b, v: b.index_put_((idx,), v)),
            ("index_put_ accumulate", lambda b, v: b.index_put_((idx,), v, accumulate=True)),
            ("index_add_", lambda b, v: b.index_add_(0, idx, v)),
            ("index_add_ alpha", lambda b, v: b.index_add_(0, idx, v, alpha=3)),
            ("index_copy_", lambda b, v: b.index_copy_(0, ptl.tensor([5, 0, 4, 8, 2, 1]), v))]:
        rows, walk = _walk_and_rows(fn, base, vals)
        assert rows.numpy().tobytes() == walk.contiguous().numpy().tobytes(), name
    # NumPy for the accumulation (float64: exact order-independent checks aside, compare)
    if dt == ptl.float64:
        want = a.copy()
        np.add.at(want, [3, 0, 3, 8, 3, 1], vals.numpy() * 3)
        np.testing.assert_allclose(base.clone().index_add_(0, idx, vals, alpha=3).numpy(), want,
                                   rtol=1e-14)
    # broadcast values take the walk
    one = ptl.tensor(gen.standard_normal((1, n))).to(dt)
    got = base.clone().index_put_((idx,), one, accumulate=True)
    want = a.astype(NP_DTYPE[dt]).astype(np.float64)
    np.add.at(want, [3, 0, 3, 8, 3, 1], one.double().numpy()[0])
    # float32 rounds each of up to four additions of values of about 8: atol 4 * 8 * 2^-23
    tol = {ptl.float16: 0.2, ptl.float32: 4e-6, ptl.int32: 0.0}.get(dt, 1e-13)
    if dt == ptl.int32:
        want = np.trunc(a).astype(np.float64)
        np.add.at(want, [3, 0, 3, 8, 3, 1], one.double().numpy()[0])
    np.testing.assert_allclose(got.double().numpy(), want, rtol=0, atol=tol)


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.int32, ptl.float64, ptl.int16], ids=str)
def test_index_select_last_dim_every_length_around_the_four_moves(dtype):
    """index_select along the last dim moves one element per index, 4-byte elements four
    loads before four stores (index_impl.h's take_row4): every index count around the
    groups of four, repeated indices, on a strided self"""
    rng = np.random.default_rng(12)
    a = rng.integers(-1000, 1000, (5, 2, 13)).astype(NP_DTYPE[dtype])
    x = ptl.tensor(a)
    for n in range(0, 11):
        idx = rng.integers(0, 13, n)
        np.testing.assert_array_equal(x.index_select(2, ptl.tensor(idx)).numpy(),
                                      np.take(a, idx, 2))
        half = idx % 7   # into the 7 columns of the strided view
        np.testing.assert_array_equal(x[:, :, ::2].index_select(2, ptl.tensor(half)).numpy(),
                                      np.take(a[:, :, ::2], half, 2))
        np.testing.assert_array_equal(x[..., ptl.tensor(idx)].numpy(), a[..., idx])


_LEGACY = {ptl.float32: "Float", ptl.float64: "Double", ptl.float16: "Half",
           ptl.bfloat16: "BFloat16", ptl.int64: "Long", ptl.int32: "Int", ptl.int16: "Short",
           ptl.int8: "Char", ptl.uint8: "Byte", ptl.bool: "Bool",
           ptl.complex64: "ComplexFloat", ptl.complex128: "ComplexDouble"}


@pytest.mark.parametrize("dtype", list(_LEGACY), ids=str)
@pytest.mark.parametrize("value, name", [([1.0, 2.0], "list"), ((1.0, 2.0), "tuple"),
                                         (np.array([1.0, 2.0]), "numpy.ndarray"),
                                         (np.float32(1.5), "numpy.float32"),
                                         (np.bool_(True), "numpy.bool"), (None, "NoneType")])
def test_setitem_refuses_what_is_not_a_tensor_or_a_number(dtype, value, name):
    # a list was converted (x[idx] = [1.0, 2.0] assigned); PyTorch refuses it
    for index in (ptl.tensor([0, 1]), slice(0, 2), 1, ...):
        x = ptl.zeros(4, dtype=dtype)
        with pytest.raises(TypeError, match=rf"^can't assign a {name} to a "
                                            rf"torch\.{_LEGACY[dtype]}Tensor$"):
            x[index] = value
        assert not x.to(ptl.complex128).abs().sum().item()


@pytest.mark.parametrize("value", [2, 2.5, True, 1 + 0j, np.float64(2.5), np.int64(3),
                                   np.uint8(3)], ids=repr)
def test_setitem_takes_numbers(value):
    x = ptl.zeros(3, dtype=ptl.complex64)
    x[ptl.tensor([0, 2])] = value
    assert x.tolist() == [complex(value), 0j, complex(value)]


@pytest.mark.parametrize("index", [lambda: ptl.tensor(True), lambda: ptl.tensor(False),
                                   lambda: (Ellipsis, ptl.tensor(True)), lambda: (True, 0),
                                   lambda: (0, ptl.tensor(True))])
@pytest.mark.parametrize("shape", [(1,), ()])
def test_setitem_bool_index_needs_the_dtype(index, shape):
    # a 0-dim bool tensor (or a bool among other indices) is an advanced index: index_put_
    # refuses a value of another dtype, where it was a copy that cast
    x = ptl.zeros(2, 2, dtype=ptl.complex64)
    with pytest.raises(RuntimeError, match=r"Index put requires the source and destination "
                                           r"dtypes match, got ComplexFloat for the "
                                           r"destination and Float for the source\."):
        x[index()] = ptl.full(shape, 2.0)
    assert x.abs().sum().item() == 0
    with pytest.raises(RuntimeError, match=r"shape mismatch: value tensor of shape \[2\] cannot "
                                           r"be broadcast to indexing result of shape "
                                           r"\[2, 2, 1\]"):
        x[..., ptl.tensor(True)] = ptl.full((2,), 2.0 + 0j)


def test_setitem_bool_index_same_dtype_and_masks():
    x = ptl.zeros(2, 2, dtype=ptl.complex64)
    x[ptl.tensor(True)] = ptl.full((2,), 2.0 + 1j)
    assert x.tolist() == [[2 + 1j, 2 + 1j]] * 2
    assert tuple(x[ptl.tensor(True)].shape) == (1, 2, 2)
    assert tuple(x[ptl.tensor(False)].shape) == (0, 2, 2)
    x[ptl.tensor(False)] = ptl.full((2,), 5.0 + 0j)
    assert x.tolist() == [[2 + 1j, 2 + 1j]] * 2
    # one element through one mask is a masked fill, any dtype (PyTorch's exception)
    x[ptl.tensor([[True, False], [False, True]])] = ptl.tensor([3.0])
    assert x.tolist() == [[3 + 0j, 2 + 1j], [2 + 1j, 3 + 0j]]
    # a lone Python bool is a view that the value is copied into, cast
    x[True] = ptl.tensor([1.0, 1.0])
    assert x.tolist() == [[1 + 0j, 1 + 0j]] * 2


def test_index_with_no_indices_raises_like_torch():
    """aten::index.Tensor with an empty list of indices: PyTorch's IndexError (index_put_
    takes [] and puts everywhere; index does not)."""
    assert_raises_like_torch(lambda lib: lib.ops.aten.index.Tensor(lib.ones(3), []),
                             IndexError, "at least one index must be provided")


@pytest.mark.parametrize("dtype,lo,hi,ctype", [
    ("float16", -1e308, -2, "c10::Half"), ("float16", -1e6, -2, "c10::Half"),
    ("float16", -2, 1e6, "c10::Half"), ("float32", -2, 1e39, "float"),
    ("bfloat16", -2, 1e39, "c10::BFloat16")])
@pytest.mark.parametrize("n", [3, 0])
def test_histc_range_that_overflows_the_dtype_is_refused(dtype, lo, hi, ctype, n):
    # PyTorch's linspace of the outer edges converts them to self's dtype, with c10's check
    assert_raises_like_torch(
        lambda lib: lib.histc(lib.ones(n, dtype=getattr(lib, dtype)), min=lo, max=hi),
        RuntimeError, f"value cannot be converted to type {ctype} without overflow")


def test_histc_range_within_the_dtype_computes():
    x = ptl.tensor([1.0, 2.0, 60000.0], dtype=ptl.float16)
    assert ptl.histc(x, bins=2, min=0, max=65504).tolist() == [2.0, 1.0]
    assert ptl.histc(x.double(), bins=2, min=-2, max=1e39).tolist() == [3.0, 0.0]


@pytest.mark.parametrize("build", [
    lambda lib: (lib.ones(4, 4, 4).transpose(0, 1), lib.zeros(1, 4, 1, dtype=lib.long)),
    lambda lib: (lib.ones(4, 1, 4).expand(4, 4, 4), lib.zeros(3, dtype=lib.long)),
    lambda lib: (lib.ones(4, 4), lib.zeros(4, 4, dtype=lib.long).t()),
])
def test_take_along_dim_without_dim_views_both_as_pytorch(build):
    """dim=None flattens self and indices with view(-1): PyTorch's error where their
    elements are not one stride apart"""
    assert_raises_like_torch(
        lambda lib: lib.take_along_dim(*build(lib)), RuntimeError,
        "view size is not compatible with input tensor's size and stride (at least one "
        "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
    x = ptl.arange(12.0).view(3, 4)[:, 1:3]   # rows one stride apart: views fine
    assert ptl.take_along_dim(x[0], ptl.tensor([1, 0])).tolist() == [2.0, 1.0]


@pytest.mark.parametrize("index_shape", [(1, 2, 3, 0), (0,), (0, 5)])
@pytest.mark.parametrize("op", ["scatter", "scatter_", "scatter_add", "scatter_reduce"])
def test_scatter_with_an_empty_index_of_any_shape_returns_self(index_shape, op):
    """PyTorch checks the index's shape only when it has elements (scatter_shape_check): an
    empty index of other dimensions scatters nothing (tools/fuzz seed 11, calls 553, 1293)"""
    for lib in [ptl] + ([torch] if torch is not None else []):
        self_, a = make((3, 4, 4, 4), ptl.float32)
        x = self_ if lib is ptl else torch.from_numpy(a.copy())
        index = lib.zeros(index_shape, dtype=lib.int64)
        src = lib.ones(4, dtype=x.dtype)
        args = (0, index, src) + (("sum",) if op == "scatter_reduce" else ())
        out = getattr(x, op)(*args)
        assert (out is x) == op.endswith("_")
        np.testing.assert_array_equal(np.asarray(out.tolist()), a)
