"""copy_ / contiguous / clone of strided sources (copy.c's fixed-size strided loops): every
item size (bool and 1-byte ints, float16/bfloat16, float32/int32, float64/int64), from a
broadcast source (a fill), into a contiguous destination (a gather) and between two strided
tensors, against NumPy (exact: a copy changes no value), on 0-dim, size-0 and shapes
across the iterator's parallel grain (32768 elements)."""
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import ALL_DTYPES, make, to_numpy

SHAPES = [(), (0, 3), (5, 7), (3, 4, 5), (64, 512), (64, 513), (2, 128, 129)]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("layout", ["transposed", "sliced", "expanded"])
def test_contiguous_of_strided(dtype, shape, layout):
    t, a = make(shape, dtype, layout, seed=3)
    out = t.contiguous()
    assert out.is_contiguous()
    np.testing.assert_array_equal(to_numpy(out), a)
    np.testing.assert_array_equal(to_numpy(t.clone()), a)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(5, 7), (64, 513)], ids=str)
def test_copy_between_strided_tensors(dtype, shape):
    src, a = make(shape, dtype, "transposed", seed=4)
    base, b = make(tuple(2 * s for s in shape), dtype, seed=5)
    dst = base[::2, ::2]
    dst.copy_(src)
    b[::2, ::2] = a
    np.testing.assert_array_equal(to_numpy(base), b)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_fill_from_a_scalar_tensor(dtype):
    v, a = make((), dtype, seed=6)
    dst = ptl.empty((3, 40000), dtype=dtype)[:, ::3]
    dst.copy_(v)
    np.testing.assert_array_equal(to_numpy(dst), np.broadcast_to(a, dst.shape))
