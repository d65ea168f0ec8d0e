"""copy_ / contiguous / clone of strided sources (copy.c's fixed-size strided loops): every
item size (bool and 1-byte ints, float16/bfloat16, float32/int32, float64/int64), from a
broadcast source (a fill), into a contiguous destination (a gather) and between two strided
tensors, against NumPy (exact: a copy changes no value), on 0-dim, size-0 and shapes
across the iterator's parallel grain (32768 elements)."""
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import ALL_DTYPES, make, rerun_with_capability, to_numpy

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


# ---- a contiguous fill (copy.c fill_run): zero bytes by memset, other values as a pattern
# of FILL_PATTERN_BYTES = 64 bytes stored line after line (AVX-512, AVX2 or the portable
# loop), the last partial line copied ----

FILL_BYTES = [1, 17, 63, 64, 65, 127, 128, 129, 4096 + 5, 70000]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("nbytes", FILL_BYTES)
@pytest.mark.parametrize("threads", [1, 2])
def test_contiguous_fills_across_the_pattern_size(dtype, nbytes, threads):
    item = ptl.empty(0, dtype=dtype).element_size()
    n = max(1, nbytes // item)
    old = ptl.get_num_threads()
    ptl.set_num_threads(threads)
    try:
        for value in (0, 1, -0.0 if dtype.is_floating_point else 3):
            got = ptl.full((n,), value, dtype=dtype)
            ref = np.full((n,), value, dtype=to_numpy(ptl.zeros(1, dtype=dtype)).dtype)
            np.testing.assert_array_equal(to_numpy(got), ref)
            if isinstance(value, float):   # -0.0 is not zero bytes: its sign must survive
                assert np.signbit(to_numpy(got)).all()
        np.testing.assert_array_equal(to_numpy(ptl.zeros(n, dtype=dtype)), 0)
        np.testing.assert_array_equal(to_numpy(ptl.ones(n, dtype=dtype)), 1)
        v, a = make((), dtype, seed=7)
        np.testing.assert_array_equal(to_numpy(v.expand(n).contiguous()), np.full((n,), a))
        # a destination one element past an aligned start, its neighbours untouched
        base = ptl.zeros(n + 2, dtype=dtype)
        base[1:n + 1].fill_(v)
        want = np.concatenate([[0], np.full((n,), a), [0]]).astype(to_numpy(base).dtype)
        np.testing.assert_array_equal(to_numpy(base), want)
    finally:
        ptl.set_num_threads(old)


@pytest.mark.parametrize("capability", ["avx2", "default"])
def test_contiguous_fills_on_lower_capabilities(capability):
    rerun_with_capability(__file__, capability, "-k", "contiguous_fills_across")


# ---- transposed sources go through tiles (copy.c, Note [Transposed copies]): TILE_I = 8
# values of the destination's run by TILE_J = 64 of the source's, tiled from 512 elements on,
# bands of TILE_J split over the threads; 4-byte items in 8 x 8 AVX2 blocks, the sides
# crossing 8 ----

TRANSPOSE_SIDES = [1, 7, 8, 9, 63, 64, 65, 130]


@pytest.mark.parametrize("dtype", [ptl.bool, ptl.int8, ptl.float16, ptl.bfloat16, ptl.float32,
                                   ptl.int32, ptl.int64, ptl.float64], ids=str)
def test_transposed_copies_across_tiles(dtype, threads):
    for rows in TRANSPOSE_SIDES:
        for cols in TRANSPOSE_SIDES:
            t, a = make((rows, cols), dtype, "transposed", seed=rows * 1000 + cols)
            np.testing.assert_array_equal(to_numpy(t.contiguous()), a, err_msg=f"{rows}x{cols}")


@pytest.mark.parametrize("perm", [(0, 2, 1), (1, 0, 2), (2, 1, 0), (1, 2, 0), (0, 2, 3, 1),
                                  (0, 2, 1, 3), (3, 1, 2, 0)], ids=str)
def test_permuted_copies_with_outer_dims(perm, threads):
    shape = (3, 9, 65, 7)[:len(perm)]
    t, a = make(shape, ptl.float32, seed=len(perm))
    out = t.permute(*perm).contiguous()
    np.testing.assert_array_equal(to_numpy(out), a.transpose(perm))
    dst = ptl.zeros(*out.shape)
    dst.copy_(t.permute(*perm))           # copy_ into an existing contiguous tensor
    np.testing.assert_array_equal(to_numpy(dst), a.transpose(perm))


@pytest.mark.parametrize("dtype", [ptl.complex64, ptl.complex128], ids=str)
def test_transposed_complex_copies(dtype):
    # complex64 moves as 8-byte items through the tiles, complex128 (16 bytes) element-wise
    a = (np.arange(70 * 90) + 1j * np.arange(70 * 90)[::-1]).reshape(90, 70)
    t = ptl.tensor(a, dtype=dtype).t()
    np.testing.assert_array_equal(t.contiguous().numpy(), a.T)


def test_transposed_copy_into_a_strided_destination():
    src, a = make((70, 90), ptl.float64, "transposed", seed=8)
    base = ptl.zeros(70, 180, dtype=ptl.float64)
    base[:, ::2].copy_(src)               # the destination's run is not contiguous: no tiles
    np.testing.assert_array_equal(to_numpy(base)[:, ::2], a)
    assert (to_numpy(base)[:, 1::2] == 0).all()


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_fill_and_zero_write_an_expanded_tensor(dtype):
    """fill_ and zero_ write one value, so PyTorch lets them write a tensor whose elements
    overlap (tools/fuzz seed 11, call 2842); copy_ into one stays refused"""
    base = ptl.ones(1, 2, 1, 3, dtype=dtype)
    view = base.expand(4, 2, 5, 3)
    assert view.zero_() is view
    np.testing.assert_array_equal(to_numpy(base), np.zeros((1, 2, 1, 3)))
    view.fill_(1)
    np.testing.assert_array_equal(to_numpy(base), np.ones((1, 2, 1, 3)))
    view.fill_(ptl.tensor(0, dtype=dtype))
    np.testing.assert_array_equal(to_numpy(view), np.zeros((4, 2, 5, 3)))
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        view.copy_(ptl.ones(4, 2, 5, 3, dtype=dtype))
