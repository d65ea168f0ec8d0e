"""cat's row copies (join.c, Note [Cat rows]): inputs of the output's dtype with a contiguous
last dim move as rows (the dims that continue a row merged into it), every input's row r in
turn when they have as many rows, input after input otherwise, the rest through
ptl_copy_into.  Exact against np.concatenate for random shapes, chunks and other views
(transposed, sliced, expanded), rows across the 32-byte moves and CAT_ROW_INLINE = 1024
bytes, one long row at and across 2 * PTL_GRAIN_SIZE elements, mixed dtypes, size-0 inputs,
on 1 and 2 threads; and cat's errors."""
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import assert_raises_like_torch, num_threads

GRAIN = 32768   # c10/parallel.h PTL_GRAIN_SIZE (test_size_thresholds checks it)


def check(parts, dim):
    got = ptl.cat([ptl.tensor(p) if isinstance(p, np.ndarray) else p for p in parts], dim)
    want = np.concatenate([p if isinstance(p, np.ndarray) else p.numpy() for p in parts], dim)
    assert got.shape == want.shape and str(got.dtype).split(".")[-1] == str(want.dtype)
    np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("threads", [1, 2])
def test_chunks_of_one_tensor(threads):
    rng = np.random.default_rng(40)
    with num_threads(threads):
        for shape, k, along, dim in [((1000, 1000), 10, 1, 0), ((37, 301), 7, 1, 0),
                                     ((6, 50, 40), 4, 2, 1), ((300, 20), 3, 0, 1),
                                     ((64, 64), 64, 1, 0), ((5, 9), 2, 1, 1)]:
            a = rng.standard_normal(shape).astype(np.float32)
            t = ptl.tensor(a)
            got = ptl.cat(ptl.chunk(t, k, along), dim)
            n = shape[along]
            cs = -(-n // k)   # torch.chunk: pieces of ceil(n / k), the last shorter
            want = np.concatenate([a.take(range(i, min(i + cs, n)), along)
                                   for i in range(0, n, cs)], dim)
            np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int8, np.bool_,
                                   np.complex64], ids=str)
def test_row_lengths_across_the_moves(threads, dtype):
    # rows of 1..40 bytes around the 32-byte moves, and around CAT_ROW_INLINE
    rng = np.random.default_rng(41)
    item = np.dtype(dtype).itemsize
    lengths = sorted({1, 2, 3, 31 // item + 1, 32 // item, 32 // item + 1, 1024 // item,
                      1024 // item + 1, 1000 // item})
    with num_threads(threads):
        for n in lengths:
            base = (rng.standard_normal((23, 3 * n + 2)) * 50).astype(dtype)
            t = ptl.tensor(base)
            # views with a contiguous last dim but strided rows, of the same and other counts
            parts = [t[:, 1:1 + n], t[:, 1 + n:1 + 2 * n], t[3:9, 2:2 + n]]
            check(parts, 0)
            check([t[:, :n], t[:, n:2 * n]], 1)
            check([t[::2, :n], t[1::2, :n][:11]], 0)


@pytest.mark.parametrize("threads", [1, 2])
def test_long_rows_around_the_grain(threads):
    # one contiguous input is one row; from 2 * GRAIN elements on two threads it goes through
    # ptl_copy_into, which splits it
    rng = np.random.default_rng(42)
    with num_threads(threads):
        for n in [2 * GRAIN - 1, 2 * GRAIN, 2 * GRAIN + 1]:
            a = rng.standard_normal(n).astype(np.float32)
            b = rng.standard_normal(n // 2).astype(np.float32)
            check([a, b, a], 0)
            check([a.reshape(1, n), a.reshape(1, n)], 0)
            check([a[: n // 4 * 4].reshape(-1, 4), b[: n // 8 * 4].reshape(-1, 4)], 0)


@pytest.mark.parametrize("threads", [1, 2])
def test_mixed_layouts_dtypes_and_sizes(threads):
    rng = np.random.default_rng(43)
    with num_threads(threads):
        for trial in range(40):
            nd = int(rng.integers(1, 4))
            shape = [int(s) for s in rng.integers(0, 6, nd)]
            dim = int(rng.integers(0, nd))
            parts, arrays = [], []
            for i in range(int(rng.integers(1, 5))):
                s = list(shape)
                s[dim] = int(rng.integers(0, 5))
                a = (rng.standard_normal(s) * 10).astype(np.float32)
                kind = int(rng.integers(0, 5))
                if kind == 1 and nd >= 2:   # transposed storage: last dim not contiguous
                    t = ptl.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2)))
                    t = t.transpose(-1, -2)
                elif kind == 2:   # sliced out of a wider tensor
                    w = np.concatenate([a, a], -1)
                    t = ptl.tensor(w)[..., :s[-1]]
                elif kind == 3 and s[0] > 0:   # expanded (stride 0) outer dim
                    t = ptl.tensor(a[:1].copy()).expand(*s)
                    a = np.broadcast_to(a[:1], s).copy()
                elif kind == 4:   # another dtype: promoted through ptl_copy_into
                    a = a.astype(np.float64)
                    t = ptl.tensor(a)
                else:
                    t = ptl.tensor(a)
                parts.append(t)
                arrays.append(a)
            got = ptl.cat(parts, dim)
            want = np.concatenate(arrays, dim)
            np.testing.assert_array_equal(got.numpy(), want.astype(got.numpy().dtype))


def test_errors():
    assert_raises_like_torch(lambda m: m.cat([m.ones(2, 3), m.ones(2, 4)], 0), RuntimeError,
                             "Sizes of tensors must match except in dimension 0. Expected size "
                             "3 but got size 4 for tensor number 1 in the list.")
    assert_raises_like_torch(lambda m: m.cat([m.ones(2, 3), m.ones(3)], 0), RuntimeError,
                             "Tensors must have same number of dimensions: got 2 and 1")
    assert_raises_like_torch(lambda m: m.cat([m.ones(2, 3), m.tensor(1.0)], 0), RuntimeError,
                             "zero-dimensional tensor (at position 1) cannot be concatenated")
    assert_raises_like_torch(lambda m: m.cat(m.chunk(m.ones(4, 4), 2, 1), 2), IndexError,
                             "Dimension out of range (expected to be in range of [-2, 1], but "
                             "got 2)")
    assert_raises_like_torch(lambda m: m.cat([], 0), ValueError,
                             "torch.cat(): expected a non-empty list of Tensors")
