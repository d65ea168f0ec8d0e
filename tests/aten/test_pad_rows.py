"""constant_pad_nd's row path (Note [Constant pad rows] in src/aten/native/constant_pad.c):
CPU inputs with no negative pad and a unit-strided last dim are written run of value, input row,
run of value, ... against np.pad in the same dtype (a copy: exact).  Runs of up to 32 bytes
are stored inline (at and across that size, for 1-, 2-, 4- and 8-byte elements), rows whose
gap and row take at most 128 bytes go by blocks of 128 rows (at and across both), the
rows split among threads from 2 * grain units on (at and across it, 1 and 2 threads give the
same bytes), and the value is any bit pattern (zero: memset; -0.0 and 1.5: copied).  F.pad's
and constant_pad_nd's errors are PyTorch's."""
import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck
from pytorchlite.nn import _functional_conv as F
from helpers import torch

NP_DT = {ptl.bool: np.bool_, ptl.int8: np.int8, ptl.float16: np.float16,
         ptl.int32: np.int32, ptl.float32: np.float32, ptl.float64: np.float64,
         ptl.int64: np.int64}


def widths(ndim, pads):
    n = len(pads) // 2
    return [(0, 0)] * (ndim - n) + [(pads[2 * i], pads[2 * i + 1]) for i in reversed(range(n))]


def data(shape, dtype, seed):
    a = np.random.default_rng(seed).uniform(-4, 4, shape)
    return a.astype(NP_DT[dtype]) if dtype != ptl.bool else a > 0


def laid_out(a, dtype, layout):
    """a as a tensor laid out as asked, its last dim unit-strided (the row path) unless
    layout is "last_strided" (the general path, for comparison)."""
    if layout == "contiguous" or a.ndim < 2:
        return ptl.tensor(a, dtype=dtype)
    if layout == "narrowed":     # rows of a wider tensor: dim -2's stride > the row length
        wide = np.concatenate([a, np.zeros(a.shape[:-1] + (3,), a.dtype)], axis=-1)
        return ptl.tensor(wide, dtype=dtype)[..., :a.shape[-1]]
    if layout == "permuted":     # the leading dims reversed, the last dim kept
        perm = tuple(reversed(range(a.ndim - 1))) + (a.ndim - 1,)
        t = ptl.tensor(np.ascontiguousarray(a.transpose(perm)), dtype=dtype)
        return t.permute(*perm)
    if layout == "expanded":     # dim 0 of stride 0
        return ptl.tensor(a[:1], dtype=dtype).expand(*a.shape)
    if layout == "expanded_rows":   # dim -2 of stride 0: every row of a run the same
        return ptl.tensor(a[..., :1, :], dtype=dtype).expand(*a.shape)
    assert layout == "last_strided"
    return ptl.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2)), dtype=dtype).transpose(-1, -2)


def check(shape, pads, dtype, layout, value, seed=0):
    a = data(shape, dtype, seed)
    if layout == "expanded" and a.ndim >= 2:
        a = np.broadcast_to(a[:1], a.shape)
    if layout == "expanded_rows" and a.ndim >= 2:
        a = np.broadcast_to(a[..., :1, :], a.shape)
    x = laid_out(a, dtype, layout)
    got = F.pad(x, pads, value=value)
    ref = np.pad(a, widths(a.ndim, pads), constant_values=value)
    assert got.dtype == dtype and tuple(got.shape) == ref.shape
    g = got.numpy()
    assert np.array_equal(g.view(np.uint8), np.ascontiguousarray(ref).view(np.uint8)), \
        (shape, pads, dtype, layout, value)


@pytest.mark.parametrize("seed", range(16))
@pytest.mark.parametrize("layout", ["contiguous", "narrowed", "permuted", "expanded",
                                    "expanded_rows", "last_strided"])
def test_random_shapes_pads_and_layouts(seed, layout):
    rng = np.random.default_rng(seed)
    shape = tuple(int(v) for v in rng.integers(0, 6, rng.integers(1, 5)))
    pads = [int(v) for v in rng.integers(0, 4, 2 * rng.integers(1, len(shape) + 1))]
    dtype = list(NP_DT)[seed % len(NP_DT)]
    value = {ptl.bool: True, ptl.int8: -3, ptl.int32: 7, ptl.int64: -9}.get(dtype, 1.5)
    check(shape, pads, dtype, layout, value, seed)
    check(shape, pads, dtype, layout, 0, seed)


# the run between two rows is r + l elements, the row n: at, below and above 32 bytes
@pytest.mark.parametrize("dtype,n,lr", [
    (ptl.float32, 8, (3, 4)), (ptl.float32, 7, (4, 4)), (ptl.float32, 9, (4, 5)),
    (ptl.float64, 4, (2, 2)), (ptl.float64, 3, (1, 2)), (ptl.float64, 5, (2, 3)),
    (ptl.float16, 16, (8, 8)), (ptl.float16, 17, (7, 10)), (ptl.float16, 3, (1, 0)),
    (ptl.int8, 32, (16, 16)), (ptl.int8, 33, (17, 16)), (ptl.int8, 3, (0, 1)),
    (ptl.bool, 4, (2, 2)), (ptl.int64, 4, (2, 2)), (ptl.int64, 5, (3, 2)),
])
@pytest.mark.parametrize("value", [0, -0.0, 1.5])
def test_inline_runs_at_and_across_32_bytes(dtype, n, lr, value):
    if dtype == ptl.bool:
        value = bool(value)
    elif dtype in (ptl.int8, ptl.int64):
        value = int(value)
    check((3, 5, n), (lr[0], lr[1], 1, 2), dtype, "contiguous", value)
    check((3, 5, n), (lr[0], lr[1]), dtype, "narrowed", value)


# rows whose gap and row take at most 128 bytes (pad_small_rows): blocks of 128 rows filled
# whole, then the rows stored over the fill, a fixed-size copy for rows of 2, 4, 8, 16 and 32
# bytes, the element loop for others.  (dtype, n, (left, right)): the unit (gap + row) at 128
# bytes and across it (132, 136: the row by row loop), rows of 0 .. 120 bytes; runs of 1 ..
# 257 rows along dim -2 (at and across the block of 128 and twice it)
SMALL_ROWS = [
    (ptl.float32, 2, (1, 1)), (ptl.float16, 1, (0, 1)), (ptl.int8, 4, (1, 0)),
    (ptl.float64, 2, (1, 2)), (ptl.float32, 8, (12, 12)), (ptl.float32, 8, (12, 13)),
    (ptl.float64, 3, (3, 3)), (ptl.int8, 5, (2, 1)), (ptl.bool, 3, (1, 1)),
    (ptl.int64, 15, (1, 0)), (ptl.float32, 31, (0, 1)), (ptl.float32, 32, (0, 1)),
    (ptl.float64, 16, (1, 0)), (ptl.int32, 0, (2, 1)), (ptl.float16, 1, (63, 0)),
    (ptl.float16, 1, (64, 0)),
]


@pytest.mark.parametrize("dtype,n,lr", SMALL_ROWS)
@pytest.mark.parametrize("rows", [1, 127, 128, 129, 256, 257])
@pytest.mark.parametrize("value", [0, 1.5])
def test_small_rows_in_blocks(dtype, n, lr, rows, value):
    if dtype == ptl.bool:
        value = bool(value)
    elif dtype in (ptl.int8, ptl.int32, ptl.int64):
        value = int(value) - 5
    check((2, rows, n), lr, dtype, "contiguous", value, seed=rows)
    check((2, rows, n), lr, dtype, "narrowed", value, seed=rows)
    check((2, rows, n), lr + (0, 1), dtype, "permuted", value, seed=rows)
    check((2, rows, n), lr, dtype, "expanded_rows", value, seed=rows)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype,n,lr", [(ptl.float32, 2, (1, 1)), (ptl.float64, 3, (3, 3)),
                                        (ptl.float16, 4, (2, 0))])
def test_small_rows_split_between_threads(threads, dtype, n, lr):
    old = ptl.get_num_threads()
    ptl.set_num_threads(threads)
    try:
        for rows in (8191, 8192, 8193, 30001):
            check((rows, n), lr, dtype, "contiguous", 2.5, seed=rows)
            check((3, rows // 3, n), lr + (1, 1), dtype, "narrowed", 0, seed=rows)
    finally:
        ptl.set_num_threads(old)


def test_zero_dim_and_size_zero_inputs():
    x = ptl.tensor(3.5)
    y = F.pad(x, [])
    assert y.shape == () and y.item() == 3.5 and y.data_ptr() != x.data_ptr()
    check((0, 2), (1, 1), ptl.float32, "contiguous", 1.5)
    check((300, 0), (2, 1), ptl.float32, "contiguous", 1.5)


# PyTorch's errors: F.pad checks the mode, then the pad's length, then the mode's own
# arguments; constant_pad_nd has its own words for the length
@pytest.mark.parametrize("call,shape,pad,kind,msg", [
    ("F", (2, 3), (1, 1, 1), RuntimeError, "Padding length must be divisible by 2"),
    ("F", (2, 3), (1,) * 6, RuntimeError,
     "Padding length should be less than or equal to two times the input dimension but got "
     "padding length 6 and input of dimension 2"),
    ("F", (), (1, 1), RuntimeError,
     "Padding length should be less than or equal to two times the input dimension but got "
     "padding length 2 and input of dimension 0"),
    ("aten", (2, 3), (1, 1, 1), RuntimeError, "Length of pad must be even but instead it "
     "equals 3"),
    ("aten", (2, 3), (1,) * 6, RuntimeError,
     "Length of pad should be no more than twice the number of dimensions of the input. Pad "
     "length is 6while the input has 2dimensions."),
    ("F", (2, 3), (-2, -2), RuntimeError, "narrow(): length must be non-negative."),
    ("aten", (2, 3), (-4, 1), RuntimeError, "narrow(): length must be non-negative."),
])
def test_errors(call, shape, pad, kind, msg):
    libs = [ptl] + ([torch] if torch is not None else [])
    for lib in libs:
        x = lib.zeros(shape)
        fn = lib.nn.functional.pad if call == "F" else lib.constant_pad_nd
        with pytest.raises(kind) as info:
            fn(x, pad)
        assert str(info.value).splitlines()[0] == msg, lib


@pytest.mark.parametrize("mode,pad,value,kind,msg", [
    ("reflect", (1, 1, 1), None, RuntimeError, "Padding length must be divisible by 2"),
    ("reflect", (1,) * 6, None, RuntimeError,
     "Padding length should be less than or equal to two times the input dimension but got "
     "padding length 6 and input of dimension 2"),
    ("reflect", (1, 1, 1), 1.0, RuntimeError, "Padding length must be divisible by 2"),
    ("foo", (1, 1, 1), None, NotImplementedError, "Unrecognised padding mode foo"),
])
def test_errors_of_the_other_modes(mode, pad, value, kind, msg):
    for lib in [ptl] + ([torch] if torch is not None else []):
        with pytest.raises(kind) as info:
            lib.nn.functional.pad(lib.zeros(2, 3), pad, mode=mode, value=value)
        assert str(info.value).splitlines()[0] == msg, lib


def test_negative_zero_keeps_its_sign():
    y = F.pad(ptl.ones(2, 3), (1, 2, 3, 0), value=-0.0)
    pad = np.ones((5, 6), bool)
    pad[3:, 1:4] = False
    assert np.all(np.signbit(y.numpy()[pad])) and np.all(y.numpy()[~pad] == 1)


# rows of 30 floats padded to 32: 32R // (R + 1) + 1 = 32 output elements a unit, a grain of
# 32768 // 32 + 1 = 1025 units, so R rows (R + 1 units) split between two threads from
# R = 2049 on
@pytest.mark.parametrize("rows", [2048, 2049, 5000])
@pytest.mark.parametrize("value", [0.0, 2.5])
def test_threads_at_and_across_the_split(rows, value):
    a = data((rows, 30), ptl.float32, rows)
    x = ptl.tensor(a)
    old = ptl.get_num_threads()
    try:
        outs = []
        for threads in (1, 2):
            ptl.set_num_threads(threads)
            outs.append(F.pad(x, (1, 1), value=value).numpy())
    finally:
        ptl.set_num_threads(old)
    ref = np.pad(a, [(0, 0), (1, 1)], constant_values=value)
    assert np.array_equal(outs[0], ref) and np.array_equal(outs[1], ref)


# rows of a few elements go run by run along dim -2 (a fixed gap and step between rows): the
# runs restart at each index of dim 0 and stop at the threads' split (18000 rows of width 4:
# a grain of 8193 units, split in two), with inline and memcpy'd rows and fills
@pytest.mark.parametrize("shape,pads,dtype,value", [
    ((3, 6000, 2), (1, 1), ptl.float32, 1.5),
    ((3, 6000, 2), (0, 1, 1, 0), ptl.float64, 0.0),
    ((2, 9000, 9), (2, 3), ptl.float32, -0.0),
    ((4, 3, 5, 1), (3, 0, 0, 2), ptl.int8, 7),
])
def test_narrow_rows_in_runs(shape, pads, dtype, value):
    old = ptl.get_num_threads()
    try:
        for threads in (1, 2):
            ptl.set_num_threads(threads)
            check(shape, pads, dtype, "contiguous", value, seed=threads)
            check(shape, pads, dtype, "permuted", value, seed=threads)
    finally:
        ptl.set_num_threads(old)


@pytest.mark.parametrize("threads", [1, 2])
def test_whole_planes_of_pad_and_empty_inputs(threads):
    old = ptl.get_num_threads()
    ptl.set_num_threads(threads)
    try:
        check((40, 64, 33), (0, 0, 0, 0, 3, 5), ptl.float32, "contiguous", 0.5)
        check((40, 64, 33), (2, 0, 0, 0, 3, 5), ptl.float32, "permuted", 0)
        check((4, 0, 5), (1, 1, 1, 1, 1, 1), ptl.float64, "contiguous", 1.5)
        check((4, 3, 0), (1, 1, 1, 1), ptl.float64, "contiguous", 1.5)
        check((0,), (2, 3), ptl.float32, "contiguous", -1.0)
        check((4, 3, 0), (0, 0), ptl.float64, "contiguous", 1.5)
    finally:
        ptl.set_num_threads(old)


def test_no_pad_is_a_copy():
    x = ptl.tensor(data((3, 4), ptl.float32, 5))
    y = F.pad(x, (0, 0, 0, 0))
    y[0, 0] = 100.0
    assert x[0, 0].item() != 100.0


def test_gradcheck_through_the_row_path():
    x = ptl.tensor(data((2, 3, 4), ptl.float64, 7), requires_grad=True)
    assert gradcheck(lambda t: F.pad(t, (1, 2, 0, 1, 2, 0), value=-1.25), (x,))
    assert gradcheck(lambda t: F.pad(t[:, :, :3], (2, 1), value=0.5), (x,))


@pytest.mark.skipif(torch is None, reason="cross-check with PyTorch: pip install torch==2.13.0")
def test_like_torch():
    a = data((2, 3, 4, 5), ptl.float32, 9)
    got = F.pad(ptl.tensor(a), (1, 2, 3, 0, 1, 1), value=0.75)
    ref = torch.nn.functional.pad(torch.tensor(a), (1, 2, 3, 0, 1, 1), value=0.75)
    assert np.array_equal(got.numpy(), ref.numpy())


# Note [Constant pad keeps channels-last]: the result in self's suggested memory format, its
# rows in (N, [D,] H, W, C) order; pads of any dim, negative ones included
@pytest.mark.parametrize("fmt,shape", [("channels_last", (2, 3, 4, 5)),
                                       ("channels_last_3d", (2, 3, 2, 4, 3))])
@pytest.mark.parametrize("pads", [(1, 2), (1, 2, 0, 1), (0, 0, 2, 1), (-1, 2, 1, -1),
                                  (1, 1, 1, 1, 1, 1), (0, 0, 0, 0, 2, -1),
                                  (1, 0, 0, 1, 0, 0, 1, 1)])
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64, ptl.int8])
def test_channels_last_stays_channels_last(fmt, shape, pads, dtype):
    if len(pads) // 2 > len(shape):
        pytest.skip("more pads than dims")
    a = data(shape, dtype, 11)
    x = ptl.tensor(a, dtype=dtype).contiguous(memory_format=getattr(ptl, fmt))
    y = F.pad(x, pads, value=-2)
    if min(pads) < 0:
        keep = tuple(slice(max(0, -lo), n - max(0, -hi)) for n, (lo, hi)
                     in zip(a.shape, widths(a.ndim, pads)))
        a = a[keep]
    ref = np.pad(a, [(max(0, lo), max(0, hi)) for lo, hi in widths(a.ndim, pads)],
                 constant_values=-2)
    assert y.is_contiguous(memory_format=getattr(ptl, fmt))
    assert np.array_equal(y.numpy(), ref)


def test_unpadded_trailing_dims_join_the_row():
    """pads on the leading dims only: rows of the trailing dims' product (and a sliced x,
    whose trailing dims do not join, the same values)"""
    a = data((3, 4, 5, 6), ptl.float32, 12)
    for pads in [(0, 0, 1, 2), (0, 0, 0, 0, 2, 1), (0, 0, 0, 0, 0, 0, 1, 0)]:
        ref = np.pad(a, widths(4, pads), constant_values=1.5)
        assert np.array_equal(F.pad(ptl.tensor(a), pads, value=1.5).numpy(), ref)
        wide = ptl.tensor(np.concatenate([a, a], -1))[..., :6]
        assert np.array_equal(F.pad(wide, pads, value=1.5).numpy(), ref)


@pytest.mark.skipif(torch is None, reason="cross-check with PyTorch: pip install torch==2.13.0")
def test_channels_last_strides_like_torch():
    a = data((2, 3, 4, 5), ptl.float32, 13)
    for pads in [(1, 1), (1, 1, 1, 1, 1, 1), (-1, 1, 0, 2)]:
        got = F.pad(ptl.tensor(a).contiguous(memory_format=ptl.channels_last), pads)
        ref = torch.nn.functional.pad(
            torch.tensor(a).contiguous(memory_format=torch.channels_last), pads)
        assert got.stride() == ref.stride() and np.array_equal(got.numpy(), ref.numpy())
