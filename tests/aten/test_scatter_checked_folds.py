"""scatter_gather.c's checked folds (Note [Checked scatter folds]): float32/float64 scatter_add
and scatter_reduce with sum, prod, amax or amin and include_self, the index checked inside
the fold loop, against a sequential NumPy reference in the tensor's dtype (the same order, so
the same bits; its float64 runs are the float64 reference), with NaN, for int64 and int32
indices, along the contiguous last dim (the loops with constant strides) and any other,
non-contiguous operands, 0-dim and size-0, on 1 and 2 threads; and the first bad index's
error, with the values before it in.  The complex sums and products (fold_complex_row)
too."""
import itertools

import numpy as np
import pytest

import pytorchlite as ptl
from helpers import NP_DTYPE, assert_raises_like_torch, num_threads

REDUCES = ["sum", "prod", "amax", "amin"]


def _fold(a, b, reduce):
    if reduce == "sum":
        return a + b
    if reduce == "prod":
        return a * b
    if reduce == "amax":
        return a if (a != a or a > b) else b
    return a if (a != a or a < b) else b


def _scatter_ref(a, dim, idx, v, reduce):
    """self.scatter_reduce(dim, idx, v, reduce) with include_self, in idx's row-major order
    and a's dtype."""
    out = a.copy()
    for pos in itertools.product(*[range(s) for s in idx.shape]):
        tgt = list(pos)
        tgt[dim] = idx[pos]
        out[tuple(tgt)] = _fold(out[tuple(tgt)], v[pos], reduce)
    return out


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64], ids=str)
@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("index_dtype", [ptl.int64, ptl.int32], ids=str)
def test_checked_fold_1d_matches_sequential_bits(threads, dtype, reduce, index_dtype):
    npdt = NP_DTYPE[dtype]
    rng = np.random.default_rng(21)
    with num_threads(threads):
        for n in [0, 1, 255, 256, 257, 2000]:
            for size in [1, 7, 300]:
                a = rng.standard_normal(size).astype(npdt)
                v = (1 + rng.standard_normal(2 * n) / 8).astype(npdt)
                if n > 3:
                    v[6] = np.nan
                i = rng.integers(0, size, 2 * n)
                want = _scatter_ref(a, 0, i[::2], v[::2], reduce)
                ti = ptl.tensor(i).to(index_dtype)
                # contiguous (the constant-stride loops) and strided index and src
                for idx, src in [(ti[::2].contiguous(), ptl.tensor(v[::2].copy())),
                                 (ti[::2], ptl.tensor(v)[::2])]:
                    got = ptl.tensor(a).scatter_reduce(0, idx, src, reduce)
                    np.testing.assert_array_equal(got.numpy(), want)
                if reduce == "sum":
                    got = ptl.tensor(a).scatter_add(0, ti[::2], ptl.tensor(v)[::2])
                    np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_checked_fold_3d_any_dim_non_contiguous(threads, reduce, dim):
    rng = np.random.default_rng(22)
    shape = (5, 6, 7)
    a = rng.standard_normal(shape)
    ishape = (4, 5, 6)
    i = rng.integers(0, shape[dim], ishape)
    v = 1 + rng.standard_normal((6, 7, 8)) / 8
    want = _scatter_ref(a, dim, i, v, reduce)
    with num_threads(threads):
        # self transposed (non-contiguous), index and src slices of larger tensors
        x = ptl.tensor(np.ascontiguousarray(a.transpose(2, 1, 0))).permute(2, 1, 0)
        ti = ptl.tensor(np.pad(i, ((0, 1), (0, 1), (0, 1))))[:4, :5, :6]
        got = x.scatter_reduce(dim, ti, ptl.tensor(v), reduce)
        np.testing.assert_array_equal(got.numpy(), want)
        assert x.scatter_reduce_(dim, ti, ptl.tensor(v), reduce) is x
        np.testing.assert_array_equal(x.numpy(), want)
        # float32, along the contiguous last dim
        a4 = a.astype(np.float32)
        v4 = v.astype(np.float32)
        got = ptl.tensor(a4).scatter_reduce(dim, ptl.tensor(i), ptl.tensor(v4), reduce)
        np.testing.assert_array_equal(got.numpy(), _scatter_ref(a4, dim, i, v4, reduce))


@pytest.mark.parametrize("reduce", REDUCES)
def test_checked_fold_0dim_size0_and_broadcast_value(reduce):
    x = ptl.tensor(2.5)
    got = x.scatter_reduce(0, ptl.tensor(0), ptl.tensor(4.0), reduce)
    np.testing.assert_array_equal(got.numpy(), np.float32(_fold(2.5, 4.0, reduce)))
    z = ptl.zeros(3, 0)
    got = z.scatter_reduce(1, ptl.zeros(3, 0, dtype=ptl.int64), ptl.ones(3, 0), reduce)
    assert got.shape == (3, 0)
    got = ptl.ones(4).scatter_reduce(0, ptl.zeros(0, dtype=ptl.int64), ptl.ones(0), reduce)
    np.testing.assert_array_equal(got.numpy(), np.ones(4, np.float32))
    # src expanded from one value (stride 0)
    a = np.arange(5.0)
    src = ptl.tensor([3.0], dtype=ptl.float64).expand(6)
    i = np.array([0, 4, 4, 2, 0, 1])
    got = ptl.tensor(a).scatter_reduce(0, ptl.tensor(i), src, reduce)
    np.testing.assert_array_equal(got.numpy(), _scatter_ref(a, 0, i, np.full(6, 3.0), reduce))


@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("bad", [7, -1])
def test_checked_fold_errors(reduce, bad):
    assert_raises_like_torch(
        lambda m: m.zeros(7).scatter_reduce(0, m.tensor([1, 2, bad, 3]), m.ones(4), reduce),
        RuntimeError, f"index {bad} is out of bounds for dimension 0 with size 7")
    assert_raises_like_torch(
        lambda m: m.zeros(2, 7, dtype=m.float64).scatter_reduce_(
            1, m.tensor([[1, 2], [bad, 3]], dtype=m.int32), m.ones(2, 2, dtype=m.float64),
            reduce),
        RuntimeError, f"index {bad} is out of bounds for dimension 1 with size 7")
    # in place: the values before the bad index are in, those after it are not
    x = ptl.zeros(7)
    with pytest.raises(RuntimeError):
        x.scatter_reduce_(0, ptl.tensor([1, 2, bad, 3]), ptl.full((4,), 5.0), "amax")
    np.testing.assert_array_equal(x.numpy(), [0, 5, 5, 0, 0, 0, 0])


# The complex folds (fold_complex_row): sums add the pair as one vector, with the bits of
# two adds; products are the textbook formula with no fused multiply-add in either clone
# (Note [Loop clones]): both exactly the sequential reference's bits.
NPZ = {ptl.complex64: np.complex64, ptl.complex128: np.complex128}


def _zcheck(got, want):
    np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [ptl.complex64, ptl.complex128], ids=str)
@pytest.mark.parametrize("reduce", ["sum", "prod"])
@pytest.mark.parametrize("index_dtype", [ptl.int64, ptl.int32], ids=str)
def test_checked_complex_fold_1d(threads, dtype, reduce, index_dtype):
    npdt = NPZ[dtype]
    rng = np.random.default_rng(23)
    with num_threads(threads):
        for n in [0, 1, 255, 256, 257, 2000]:
            for size in [1, 7, 300]:
                a = (rng.standard_normal(size) + 1j * rng.standard_normal(size)).astype(npdt)
                v = (1 + (rng.standard_normal(2 * n) + 1j * rng.standard_normal(2 * n)) / 64
                     ).astype(npdt)
                i = rng.integers(0, size, 2 * n)
                want = _scatter_ref(a, 0, i[::2], v[::2], reduce)
                ti = ptl.tensor(i).to(index_dtype)
                for idx, src in [(ti[::2].contiguous(), ptl.tensor(v[::2].copy())),
                                 (ti[::2], ptl.tensor(v)[::2])]:
                    _zcheck(ptl.tensor(a).scatter_reduce(0, idx, src, reduce), want)
                    legacy = "add" if reduce == "sum" else "multiply"
                    _zcheck(ptl.tensor(a).scatter(0, idx, src, reduce=legacy), want)
                if reduce == "sum":
                    got = ptl.tensor(a).scatter_add(0, ti[::2], ptl.tensor(v)[::2])
                    np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("reduce", ["sum", "prod"])
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_checked_complex_fold_3d_any_dim_non_contiguous(reduce, dim):
    rng = np.random.default_rng(24)
    shape, ishape = (5, 6, 7), (4, 5, 6)
    a = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    i = rng.integers(0, shape[dim], ishape)
    v = 1 + (rng.standard_normal((6, 7, 8)) + 1j * rng.standard_normal((6, 7, 8))) / 8
    want = _scatter_ref(a, dim, i, v, reduce)
    x = ptl.tensor(np.ascontiguousarray(a.transpose(2, 1, 0))).permute(2, 1, 0)
    ti = ptl.tensor(np.pad(i, ((0, 1), (0, 1), (0, 1))))[:4, :5, :6]
    _zcheck(x.scatter_reduce(dim, ti, ptl.tensor(v), reduce), want)
    assert x.scatter_reduce_(dim, ti, ptl.tensor(v), reduce) is x
    _zcheck(x, want)
    a8, v8 = a.astype(np.complex64), v.astype(np.complex64)
    got = ptl.tensor(a8).scatter_reduce(dim, ptl.tensor(i), ptl.tensor(v8), reduce)
    _zcheck(got, _scatter_ref(a8, dim, i, v8, reduce))


@pytest.mark.parametrize("dtype", [ptl.complex64, ptl.complex128], ids=str)
@pytest.mark.parametrize("bad", [7, -1])
def test_checked_complex_fold_errors(dtype, bad):
    name = str(dtype).split(".")[-1]
    for reduce in ("sum", "prod"):
        assert_raises_like_torch(
            lambda m: m.zeros(7, dtype=getattr(m, name)).scatter_reduce(
                0, m.tensor([1, 2, bad, 3]), m.ones(4, dtype=getattr(m, name)), reduce),
            RuntimeError, f"index {bad} is out of bounds for dimension 0 with size 7")
    # in place: the values before the bad index are in, those after it are not, the bad
    # index first or second of the sum's pair of elements
    for idx, want in (([1, 2, bad, 3], [0, 5 + 1j, 5 + 1j, 0, 0, 0, 0]),
                      ([1, bad, 2, 3], [0, 5 + 1j, 0, 0, 0, 0, 0]),
                      ([4, 4, 4, bad, 2], [0, 0, 0, 0, 15 + 3j, 0, 0])):
        x = ptl.zeros(7, dtype=dtype)
        with pytest.raises(RuntimeError):
            x.scatter_add_(0, ptl.tensor(idx), ptl.full((len(idx),), 5 + 1j, dtype=dtype))
        np.testing.assert_array_equal(x.numpy(), want)
