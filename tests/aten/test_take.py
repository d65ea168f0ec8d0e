"""take (src/aten/native/take.c, Note [Take chunks]) for every dtype against NumPy's take of
the flattened array (exact: take only moves values): any layout of self and of the index,
0-dim, size-0, negative indices, PyTorch's errors.  The kernel checks and moves TAKE_CHUNK =
1024 indices at a time, and reads a non-contiguous self through its strides when the index
has fewer than a TAKE_FEW = 4th of self's elements (else from a contiguous copy): index
lengths cross both.  Nothing is split between threads; 1 and 2 threads must agree."""
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import ALL_DTYPES, assert_raises_like_torch, make, num_threads

TAKE_CHUNK = 1024
TAKE_FEW = 4
DTYPES = ALL_DTYPES + [ptl.complex64, ptl.complex128]
LAYOUTS = ["contiguous", "transposed", "sliced", "expanded"]


def values(shape, dtype, layout, seed=0):
    """(tensor, ndarray) of shape with equal values (complex: random imaginary parts too)"""
    if dtype in (ptl.complex64, ptl.complex128):
        re, a = make(shape, ptl.float32, layout, seed)
        im, b = make(shape, ptl.float32, layout, seed + 1)
        return ptl.complex(re, im).to(dtype), a + 1j * b
    return make(shape, dtype, layout, seed)


def index(n, shape, gen, layout="contiguous"):
    """(int64 tensor, ndarray) of shape with values in [-n, n), laid out as asked"""
    a = gen.integers(-n, n, size=shape) if n else np.zeros(shape, np.int64)
    if layout == "transposed" and len(shape) >= 2:
        t = ptl.tensor(np.ascontiguousarray(a.T)).t()
    elif layout == "sliced" and len(shape) >= 1:
        big = np.zeros((2 * shape[0],) + tuple(shape[1:]), np.int64)
        big[::2] = a
        t = ptl.tensor(big)[::2]
    else:
        t = ptl.tensor(a)
    return t, a


def check(x, a, idx, ia):
    got = x.take(idx)
    want = np.asarray(a).reshape(-1)[ia] if ia.size else np.zeros(ia.shape, np.asarray(a).dtype)
    assert tuple(got.shape) == ia.shape
    assert got.dtype == x.dtype
    g = got.float().numpy() if x.dtype == ptl.bfloat16 else got.numpy()
    assert np.array_equal(g, want.astype(g.dtype)), (g, want)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_take_every_dtype_and_layout(dtype, layout):
    gen = np.random.default_rng(0)
    for k, (shape, ishape) in enumerate([((), (3,)), ((7,), (5,)), ((3, 4), (2, 3)),
                                         ((2, 3, 5), (4, 2)), ((3, 4), ()), ((3, 4), (0, 2)),
                                         ((0, 3), (0,)), ((30, 20), (7,))]):
        x, a = values(shape, dtype, layout, seed=k)
        n = int(np.prod(shape))
        for ilayout in ("contiguous", "transposed", "sliced"):
            idx, ia = index(n, ishape, gen, ilayout)
            check(x, a, idx, ia)


@pytest.mark.parametrize("dtype", [ptl.bool, ptl.float16, ptl.float32, ptl.int64,
                                   ptl.complex64, ptl.complex128])
@pytest.mark.parametrize("threads", [1, 2])
def test_take_across_the_chunk_and_the_strided_threshold(dtype, threads):
    gen = np.random.default_rng(1)
    for layout in ("contiguous", "transposed", "sliced"):
        x, a = values((80, 60), dtype, layout, seed=2)   # 4800 elements: TAKE_FEW x 1200
        for m in (1, TAKE_CHUNK - 1, TAKE_CHUNK, TAKE_CHUNK + 1, 4800 // TAKE_FEW - 1,
                  4800 // TAKE_FEW, 4800 // TAKE_FEW + 1, 2 * TAKE_CHUNK + 1, 4800):
            idx, ia = index(4800, (m,), gen)
            with num_threads(threads):
                check(x, a, idx, ia)


def test_take_negative_and_extreme_indices():
    x, a = values((3, 4), ptl.complex128, "transposed")
    for ia in ([-12, -1, 0, 11], [11] * 2000, [-12] * 3):
        check(x, a, ptl.tensor(ia), np.array(ia))


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("m", [1, TAKE_CHUNK, TAKE_CHUNK + 1, 3000])
def test_take_errors_name_the_first_bad_index(layout, m):
    """the first index outside [-n, n) in order, wherever it sits in a chunk"""
    for bad, first in ((12, 12), (-13, -13), (2 ** 63 - 1, 2 ** 63 - 1), (-2 ** 63, -2 ** 63)):
        def take(lib, bad=bad):
            x = lib.zeros(4, 3).t() if layout == "transposed" else lib.zeros(3, 4)
            i = [0] * m
            i[m - 1] = bad
            if m > 2:
                i[m // 2] = bad
                i[m - 1] = 100
            x.take(lib.tensor(i))
        assert_raises_like_torch(take, IndexError, "out of range: tried to access index %d on a "
                                                   "tensor of 12 elements." % first)


def test_take_error_messages():
    assert_raises_like_torch(lambda lib: lib.zeros(2, 3).take(lib.tensor([1], dtype=lib.int32)),
                             RuntimeError, "take(): Expected a long tensor for index, but got "
                                           "Int")
    assert_raises_like_torch(lambda lib: lib.zeros(2, 3).take(lib.tensor([1.0])),
                             RuntimeError, "take(): Expected a long tensor for index, but got "
                                           "Float")
    assert_raises_like_torch(lambda lib: lib.zeros(0).take(lib.tensor([0])),
                             IndexError, "take(): tried to take from an empty tensor")
    assert_raises_like_torch(lambda lib: lib.zeros(0, 3).t().take(lib.tensor([-1])),
                             IndexError, "take(): tried to take from an empty tensor")
    assert tuple(ptl.zeros(0).take(ptl.zeros(0, 3, dtype=ptl.int64)).shape) == (0, 3)
