"""x.gather(-1, idx) along a contiguous last dim with int64 indices (gather_unit_i64 in
scatter_gather.c): after the chunk's index check, the move runs four elements an iteration
and the rest one by one.  Row lengths around every multiple of four up to nine and across the
256-index chunk, each item size (complex128's 16 bytes too), contiguous and non-contiguous
self and index, a broadcast (expanded) index, size-0 and 0-dim inputs, on one and two
threads, against NumPy."""
import numpy as np
import pytest

import pytorchlite as ptl

LENGTHS = list(range(1, 10)) + [255, 256, 257, 259, 515]
DTYPES = [(ptl.uint8, np.uint8), (ptl.int16, np.int16), (ptl.float32, np.float32),
          (ptl.float64, np.float64), (ptl.complex64, np.complex64),
          (ptl.complex128, np.complex128)]


def _data(shape, np_dtype, seed):
    g = np.random.default_rng(seed)
    a = g.integers(0, 100, shape)
    if np.dtype(np_dtype).kind == "c":   # both halves of the element differ
        return (a + 1j * g.integers(100, 200, shape)).astype(np_dtype)
    return a.astype(np_dtype)


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("dtype,np_dtype", DTYPES, ids=lambda d: str(d))
def test_gather_last_dim_rows(n, dtype, np_dtype, threads):
    a = _data((3, n + 2), np_dtype, n)
    idx = np.random.default_rng(n + 1).integers(0, n + 2, (3, n))
    idx[0, 0], idx[-1, -1] = 0, n + 1
    got = ptl.tensor(a).gather(1, ptl.tensor(idx))
    assert got.dtype == dtype
    np.testing.assert_array_equal(got.numpy(), np.take_along_axis(a, idx, 1))
    # a non-contiguous self row (the move with strides) and index (the fused chunk)
    wide = np.repeat(a, 2, axis=1)
    got = ptl.tensor(wide)[:, ::2].gather(1, ptl.tensor(idx))
    np.testing.assert_array_equal(got.numpy(), np.take_along_axis(a, idx, 1))
    widx = np.repeat(idx, 2, axis=1)
    got = ptl.tensor(a).gather(1, ptl.tensor(widx)[:, ::2])
    np.testing.assert_array_equal(got.numpy(), np.take_along_axis(a, idx, 1))


@pytest.mark.parametrize("n", [3, 4, 257])
def test_gather_last_dim_broadcast_index_and_empty(n, threads):
    a = _data((4, n), np.float32, 7)
    row = np.random.default_rng(3).integers(0, n, (1, n))
    got = ptl.tensor(a).gather(1, ptl.tensor(row).expand(4, n))
    np.testing.assert_array_equal(got.numpy(), np.take_along_axis(a, np.repeat(row, 4, 0), 1))
    empty = ptl.tensor(a).gather(1, ptl.zeros((4, 0), dtype=ptl.int64))
    assert tuple(empty.shape) == (4, 0)
    np.testing.assert_array_equal(ptl.tensor(np.float32(2.5)).gather(0, ptl.tensor(0)).numpy(),
                                  np.float32(2.5))
