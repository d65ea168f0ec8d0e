"""copy.c's memcpy_loop for contiguous runs of 32 to COPY_ROW_INLINE = 1024 bytes (32-byte
moves, the last one ending at the run's end) and around both edges: the copies of column
slices and of column chunks into cat, every item size, against NumPy exactly, with the AVX2
loop and (rerun) the portable memcpy."""
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import rerun_with_capability

ROW_BYTES = [1, 8, 31, 32, 33, 63, 64, 65, 400, 1000, 1023, 1024, 1025, 1032, 4096]


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32, np.float64], ids=str)
def test_short_rows_copy_exactly(dtype):
    item = np.dtype(dtype).itemsize
    rng = np.random.default_rng(9)
    for nbytes in ROW_BYTES:
        if nbytes % item:
            continue
        k = nbytes // item
        a = (rng.standard_normal((7, k + 5)) * 100).astype(dtype)
        t = ptl.tensor(a)
        for off in (0, 1, 3):
            if off + k > a.shape[1]:
                continue
            np.testing.assert_array_equal(t[:, off:off + k].contiguous().numpy(),
                                          a[:, off:off + k])
            out = ptl.zeros(9, k + 2, dtype=t.dtype)
            out[1:8, 1:k + 1] = t[:, off:off + k]
            want = np.zeros((9, k + 2), dtype)
            want[1:8, 1:k + 1] = a[:, off:off + k]
            np.testing.assert_array_equal(out.numpy(), want)
        b = (rng.standard_normal((7, 3 * k)) * 100).astype(dtype)   # chunks of k columns
        np.testing.assert_array_equal(ptl.cat(ptl.chunk(ptl.tensor(b), 3, 1), 0).numpy(),
                                      np.concatenate(np.split(b, 3, 1), 0))
        np.testing.assert_array_equal(ptl.cat(ptl.chunk(ptl.tensor(b), 7, 0), 1).numpy(),
                                      np.concatenate(np.split(b, 7, 0), 1))


def test_portable_memcpy():
    rerun_with_capability(__file__, "default", "-k", "exactly")
