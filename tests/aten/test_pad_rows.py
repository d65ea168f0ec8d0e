"""constant_pad_nd's row path (Note [Constant pad rows] in src/aten/native/resample.c): CPU
inputs with no negative pad and a unit-strided last dim are written run of value, input row,
run of value, ... against np.pad in the same dtype (a copy: exact).  Runs of up to 32 bytes
are stored inline (at and across that size, for 1-, 2-, 4- and 8-byte elements), the
rows split among threads from 2 * grain units on (at and across it, 1 and 2 threads give the
same bytes), and the value is any bit pattern (zero: memset; -0.0 and 1.5: copied)."""
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
    assert layout == "last_strided"
    return ptl.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2)), dtype=dtype).transpose(-1, -2)


def check(shape, pads, dtype, layout, value, seed=0):
    a = data(shape, dtype, seed)
    if layout == "expanded" and a.ndim >= 2:
        a = np.broadcast_to(a[:1], a.shape)
    x = laid_out(a, dtype, layout)
    got = F.pad(x, pads, value=value)
    ref = np.pad(a, widths(a.ndim, pads), constant_values=value)
    assert got.dtype == dtype and tuple(got.shape) == ref.shape
    g = got.numpy()
    assert np.array_equal(g.view(np.uint8), np.ascontiguousarray(ref).view(np.uint8)), \
        (shape, pads, dtype, layout, value)


@pytest.mark.parametrize("seed", range(16))
@pytest.mark.parametrize("layout", ["contiguous", "narrowed", "permuted", "expanded",
                                    "last_strided"])
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
