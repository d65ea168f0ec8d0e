"""flip with the innermost dim among the flipped (Note [Flip of the innermost dim] in
src/aten/native/shape_gather.c): no table for that dim, each row reversed by 64-byte lane
permutes (AVX-512), gcc's vectorized loop (AVX2) or the plain loop (default).  Every dtype
(elements of 1, 2, 4, 8 and 16 bytes) against np.flip, exactly: rows of every length up to
70 (every vector width and tail) and 65537, 0-dim, size-0, sliced and transposed inputs,
several dims at once, negative and repeated dims, 1 and 2 threads, the AVX2 and portable
loops, and flip's backward (a flip) by gradcheck."""
import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck

from helpers import make, num_threads, rerun_with_capability, to_numpy, torch, torch_ref

DTYPES = [ptl.bool, ptl.uint8, ptl.int8, ptl.int16, ptl.int32, ptl.int64, ptl.float16,
          ptl.bfloat16, ptl.float32, ptl.float64, ptl.complex64, ptl.complex128]
# every row length up to 70 (each element size's vector widths 4..64 and their tails), and
# one long row that ends in a tail
LENGTHS = list(range(0, 71)) + [65537]
CDT = {ptl.complex64: np.complex64, ptl.complex128: np.complex128}


def sample(shape, dtype, layout="contiguous", seed=0):
    """(tensor, ndarray) of distinct-ish values laid out as helpers.make's; complex ones with
    their own imaginary parts"""
    if dtype not in CDT:
        return make(shape, dtype, layout, seed=seed, low=-100, high=100)
    shape = tuple(shape)
    big = {"sliced": tuple(2 * s for s in shape), "transposed": shape[::-1]}.get(
        layout if shape else "", shape)
    gen = np.random.default_rng(seed)
    base = (gen.uniform(-100, 100, big) + 1j * gen.uniform(-100, 100, big)).astype(CDT[dtype])
    t = ptl.tensor(base, dtype=dtype)
    if layout == "sliced" and shape:
        idx = tuple(slice(None, None, 2) for _ in shape)
        return t[idx], base[idx]
    if layout == "transposed" and shape:
        return t.permute(*reversed(range(len(shape)))), base.transpose()
    return t, base


def expect(a, dims, dtype):
    """np.flip of a, as to_numpy gives pytorchlite's values"""
    return to_numpy(ptl.tensor(np.ascontiguousarray(np.flip(a, dims)), dtype=dtype))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_rows_of_every_length(dtype, threads):
    with num_threads(threads):
        for n in LENGTHS:
            t, a = sample((n,), dtype, seed=n)
            np.testing.assert_array_equal(to_numpy(t.flip(0)), expect(a, 0, dtype))
            np.testing.assert_array_equal(to_numpy(t.flip(-1)), expect(a, -1, dtype))
            if n <= 70:
                t, a = sample((3, n), dtype, seed=n)
                np.testing.assert_array_equal(to_numpy(t.flip(1)), expect(a, 1, dtype))
                np.testing.assert_array_equal(to_numpy(t.flip((0, 1))),
                                              expect(a, (0, 1), dtype))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_long_rows_at_every_alignment(dtype):
    """rows that end at every offset of a 64-byte line (the AVX-512 kernel's aligned loads
    combined by lane permutes, its first and last loads masked to the row; the unaligned
    loads of 1-byte elements), of lengths on either side of one, two and sixteen 64-byte
    blocks"""
    t, a = sample((3, 1200), dtype, seed=5)
    isz = t.element_size()
    for k in range(64 // isz + 1):
        for n in (64 // isz - 1, 64 // isz, 64 // isz + 1, 128 // isz - 1, 128 // isz,
                  128 // isz + 1, 1024 // isz - 1, 1024 // isz, 1024 // isz + 1,
                  1024 // isz + 37):
            v, va = t[:, k:k + n], a[:, k:k + n]
            np.testing.assert_array_equal(to_numpy(v.flip(1)), expect(va, 1, dtype))
            np.testing.assert_array_equal(to_numpy(v.flip((0, 1))), expect(va, (0, 1), dtype))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_shapes_layouts_and_dims(dtype, threads):
    """2-D and 3-D shapes with the innermost dim flipped alone or with outer dims, and outer
    dims only (the table path); sliced and transposed sources; negative dims.  (2000, 40) and
    (30, 70, 33) are split over two threads (more rows than the grain of PTL_GRAIN_SIZE / n),
    the latter inside a run of rows along dim 1"""
    shapes = [(5, 67), (4, 3, 33), (2, 130, 17), (1, 1, 129), (3, 1), (700, 40), (2000, 40),
              (30, 70, 33)]
    with num_threads(threads):
        for k, shape in enumerate(shapes):
            nd = len(shape)
            dim_lists = [(nd - 1,), (-1,), (0, -1), (0,), tuple(range(nd)),
                         tuple(range(-nd, 0)), (nd - 2,)]
            for layout in ("contiguous", "sliced", "transposed"):
                t, a = sample(shape, dtype, layout, seed=k)
                for dims in dim_lists:
                    np.testing.assert_array_equal(to_numpy(t.flip(dims)),
                                                  expect(a, dims, dtype))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_rows_four_at_a_time_and_the_rest(dtype, threads):
    """AVX2 reverses the rows of an even run four to a loop (Note [Flip of the innermost
    dim]): 1 to 9 rows (groups of four and every remainder), a run of 1 to 9 rows under an
    outer dim (a run at a time), rows of a sliced source (their stride longer than the row),
    and 4099 rows of 9 split over two threads inside a group"""
    with num_threads(threads):
        for rows in range(1, 10):
            for n in (1, 7, 33, 300):
                for layout in ("contiguous", "sliced"):
                    t, a = sample((rows, n), dtype, layout, seed=rows * n)
                    np.testing.assert_array_equal(to_numpy(t.flip(1)), expect(a, 1, dtype))
            t, a = sample((3, rows, 21), dtype, seed=rows)
            np.testing.assert_array_equal(to_numpy(t.flip(2)), expect(a, 2, dtype))
            np.testing.assert_array_equal(to_numpy(t.flip((0, 2))), expect(a, (0, 2), dtype))
        t, a = sample((4099, 9), dtype, seed=3)
        np.testing.assert_array_equal(to_numpy(t.flip(1)), expect(a, 1, dtype))


PERMUTED = [((40, 70), (1, 0)), ((4, 3, 33), (2, 0, 1)), ((4, 3, 33), (1, 2, 0)),
            ((2, 5, 1, 7), (0, 2, 3, 1)), ((3, 1, 6), (2, 1, 0)), ((300, 257), (1, 0)),
            ((2, 0, 5), (2, 1, 0))]


def permuted(shape, order, dtype, sliced, seed):
    """a tensor of shape[order] whose memory runs along `shape` (sliced: every other element
    of a twice-as-big one, so not dense), and its NumPy twin"""
    big = tuple(2 * n for n in shape) if sliced else shape
    t, a = sample(big, dtype, seed=seed)
    if sliced:
        idx = tuple(slice(None, None, 2) for _ in shape)
        t, a = t[idx], a[idx]
    return t.permute(*order), a.transpose(order)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [ptl.uint8, ptl.float32, ptl.float64, ptl.complex128],
                         ids=str)
def test_result_keeps_the_input_layout(dtype, threads):
    """Note [Flip keeps the layout]: the result is laid out as empty_like lays out the input
    (PyTorch's strides: x.t().flip(1).stride() == (1, n)), each dims list, dense and sliced
    inputs; (300, 257) is split over two threads"""
    with num_threads(threads):
        for k, (shape, order) in enumerate(PERMUTED):
            for sliced in (False, True):
                t, a = permuted(shape, order, dtype, sliced, seed=k)
                nd = len(order)
                for dims in [(0,), (nd - 1,), (0, nd - 1), tuple(range(nd))]:
                    got = t.flip(dims)
                    np.testing.assert_array_equal(to_numpy(got), expect(a, dims, dtype))
                    assert got.stride() == ptl.empty_like(t).stride(), (shape, order, dims)


@torch_ref
def test_result_strides_as_pytorch():
    # (an empty tensor has no layout to keep: the size-0 case is left out)
    for shape, order in [p for p in PERMUTED if 0 not in p[0]] + [((6, 5, 4, 3), (0, 2, 3, 1))]:
        for sliced in (False, True):
            t, a = permuted(shape, order, ptl.float32, sliced, seed=1)
            ref = torch.from_numpy(np.ascontiguousarray(a))
            ref = ref.permute(*np.argsort(order)).contiguous().permute(*order)
            if sliced:
                big = torch.zeros(tuple(2 * n for n in shape))
                big[tuple(slice(None, None, 2) for _ in shape)] = ref.permute(*np.argsort(order))
                ref = big[tuple(slice(None, None, 2) for _ in shape)].permute(*order)
            for dims in [(0,), (len(order) - 1,), tuple(range(len(order)))]:
                assert t.flip(dims).stride() == ref.flip(dims).stride(), (shape, order, dims)


def test_backward_of_a_transposed_input():
    x = ptl.randn(5, 7, dtype=ptl.float64).t().requires_grad_()
    assert gradcheck(lambda v: v.flip(1), (x,))
    assert gradcheck(lambda v: v.permute(1, 0).flip((0, 1)), (x,))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_scalar_empty_and_expanded(dtype):
    t, a = sample((), dtype)
    np.testing.assert_array_equal(to_numpy(t.flip([])), expect(a, (), dtype))
    for shape in [(0,), (3, 0), (0, 70), (2, 0, 5)]:
        t, a = sample(shape, dtype)
        assert tuple(t.flip(-1).shape) == shape
        assert tuple(t.flip(tuple(range(len(shape)))).shape) == shape
    t, a = sample((1, 67), dtype)
    e, ea = t.expand(3, 67), np.broadcast_to(a, (3, 67))
    np.testing.assert_array_equal(to_numpy(e.flip(1)), expect(ea, 1, dtype))
    t, a = sample((67, 1), dtype)
    e, ea = t.expand(67, 5), np.broadcast_to(a, (67, 5))
    np.testing.assert_array_equal(to_numpy(e.flip((0, 1))), expect(ea, (0, 1), dtype))


def test_flipped_halves_and_rot90():
    """rot90 by an odd k flips a dim by the same path; fliplr of a 2-D tensor flips dim 1"""
    t, a = sample((37, 70), ptl.float32)
    for k in (1, 3, -1):
        np.testing.assert_array_equal(to_numpy(ptl.rot90(t, k, (0, 1))),
                                      np.rot90(a, k, (0, 1)).astype(np.float64))
        np.testing.assert_array_equal(to_numpy(ptl.rot90(t, k, (1, 0))),
                                      np.rot90(a, k, (1, 0)).astype(np.float64))
    np.testing.assert_array_equal(to_numpy(ptl.fliplr(t)), np.fliplr(a).astype(np.float64))


def test_errors_as_pytorch():
    t = ptl.zeros(3, 4)
    for dims, d in [((1, 1), 1), ((0, -2), 0), ((-1, 1), 1)]:
        with pytest.raises(RuntimeError, match=f"^dim {d} appears multiple times in the list "
                                               "of dims$"):
            t.flip(dims)
    with pytest.raises(IndexError, match=r"^Dimension out of range \(expected to be in range "
                                         r"of \[-2, 1\], but got 2\)$"):
        t.flip(2)


def test_backward_is_a_flip():
    for shape, dims in [((7,), 0), ((3, 65), (0, 1)), ((2, 3, 17), (-1,)), ((4, 5), 0)]:
        x = ptl.randn(*shape, dtype=ptl.float64, requires_grad=True)
        assert gradcheck(lambda v: v.flip(dims), (x,))
        g = ptl.randn(*shape, dtype=ptl.float64)
        x.flip(dims).backward(g)
        np.testing.assert_array_equal(x.grad.numpy(), np.flip(g.numpy(), dims))


@pytest.mark.parametrize("cap", ["default", "avx2"])
def test_portable_and_avx2_loops(cap):
    """Reruns this file with the vector loops switched off, and with AVX2 only."""
    rerun_with_capability(__file__, cap, "-k", "not portable_and_avx2")
