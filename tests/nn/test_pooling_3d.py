"""F.adaptive_avg_pool3d / nn.AdaptiveAvgPool3d (two passes of the 2-D adaptive kernel),
F.adaptive_max_pool3d / nn.AdaptiveMaxPool3d (pool.c's window kernel over three dims) and
F.max_unpool3d / nn.MaxUnpool3d (the 2-D unpooling kernel on flattened volumes): against a
NumPy reference in float64 with PyTorch's bin edges, batched and unbatched, gradcheck, errors,
and torch when installed."""
import math

import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn.functional as F
from pytorchlite.autograd import gradcheck, gradgradcheck
from helpers import assert_close, assert_no_leak, assert_raises_like_torch, make, num_threads, \
    torch, torch_ref


def _bins(n, out):
    return [(math.floor(i * n / out), math.ceil((i + 1) * n / out)) for i in range(out)]


def _np_adaptive_avg3d(a, size):
    d, h, w = a.shape[-3:]
    out = np.empty(a.shape[:-3] + tuple(size))
    for i, (d0, d1) in enumerate(_bins(d, size[0])):
        for j, (h0, h1) in enumerate(_bins(h, size[1])):
            for k, (w0, w1) in enumerate(_bins(w, size[2])):
                out[..., i, j, k] = a[..., d0:d1, h0:h1, w0:w1].mean((-3, -2, -1))
    return out


@pytest.mark.parametrize("shape", [(2, 3, 5, 7, 6), (3, 4, 4, 5)])
@pytest.mark.parametrize("size", [(2, 3, 4), (5, 1, 3), 1, (None, 2, None)])
def test_adaptive_avg_pool3d_against_numpy(shape, size, layout="transposed"):
    x, a = make(shape, ptl.float64, layout)
    full = [shape[-3 + i] if s is None else s for i, s in
            enumerate(size if isinstance(size, tuple) else (size,) * 3)]
    want = _np_adaptive_avg3d(a, full)
    assert_close(F.adaptive_avg_pool3d(x, size), want)
    assert_close(ptl.nn.AdaptiveAvgPool3d(size)(x), want)


def test_adaptive_avg_pool3d_gradients_and_errors():
    x = ptl.tensor(np.random.default_rng(0).standard_normal((1, 2, 3, 4, 5)), requires_grad=True)
    assert gradcheck(lambda t: F.adaptive_avg_pool3d(t, (2, 3, 2)), (x,))
    assert repr(ptl.nn.AdaptiveAvgPool3d((1, 2, None))) == \
        "AdaptiveAvgPool3d(output_size=(1, 2, None))"
    assert_raises_like_torch(lambda lib: lib.nn.functional.adaptive_avg_pool3d(lib.ones(2, 3, 4),
                                                                               2),
                             RuntimeError, "adaptive_avg_pool3d(): Expected 4D or 5D tensor, but "
                             "got [2, 3, 4]")
    assert_raises_like_torch(lambda lib: lib.nn.functional.adaptive_avg_pool3d(
        lib.ones(1, 2, 3, 4), (2, 1)), RuntimeError, "adaptive_avg_pool3d: output_size must be 3")
    assert_raises_like_torch(lambda lib: lib.nn.functional.adaptive_avg_pool3d(
        lib.ones(1, 2, 0, 4), 2), RuntimeError, "adaptive_avg_pool3d(): Expected input to have "
        "non-zero size for non-batch dimensions, but input has sizes [1, 2, 0, 4] with dimension "
        "2 being empty")


def _np_unpool(values, indices, size):
    flat = np.zeros(values.shape[:-3] + (size[0] * size[1] * size[2],))
    lead = values.reshape(-1, values.shape[-3] * values.shape[-2] * values.shape[-1])
    idx = indices.reshape(lead.shape)
    out = flat.reshape(lead.shape[0], -1)
    for r in range(lead.shape[0]):
        out[r, idx[r]] = lead[r]
    return out.reshape(values.shape[:-3] + tuple(size))


@pytest.mark.parametrize("batched", [True, False])
def test_max_unpool3d_against_numpy(batched):
    shape = (2, 3, 4, 6, 8) if batched else (3, 4, 6, 8)
    x, _ = make(shape, ptl.float64)
    values, indices = F.max_pool3d(x, 2, return_indices=True)
    want = _np_unpool(values.numpy(), indices.numpy(), [4, 6, 8])
    assert_close(F.max_unpool3d(values, indices, 2), want)
    assert_close(ptl.nn.MaxUnpool3d(2)(values, indices), want)
    x5, _ = make(shape[:-3] + (5, 7, 9), ptl.float64)
    values, indices = F.max_pool3d(x5, 2, return_indices=True)
    got = F.max_unpool3d(values, indices, 2, output_size=(5, 7, 9))
    assert_close(got, _np_unpool(values.numpy(), indices.numpy(), [5, 7, 9]))


def test_max_unpool3d_gradients_and_errors():
    x, _ = make((1, 1, 4, 4, 4), ptl.float64)
    values, indices = F.max_pool3d(x, 2, return_indices=True)
    v = values.detach().requires_grad_()
    assert gradcheck(lambda t: F.max_unpool3d(t, indices, 2), (v,))
    assert repr(ptl.nn.MaxUnpool3d(2)) == \
        "MaxUnpool3d(kernel_size=(2, 2, 2), stride=(2, 2, 2), padding=(0, 0, 0))"
    assert_raises_like_torch(lambda lib: lib.nn.functional.max_unpool3d(
        lib.ones(1, 1, 1, 1, 1), lib.tensor([[[[[9]]]]]), 2), RuntimeError,
        "Found an invalid max index: 9 (output volumes are of size 2x2x2)")


@torch_ref
def test_matches_torch():
    a = np.random.default_rng(0).standard_normal((2, 3, 5, 7, 6))
    for size in [(2, 3, 4), (3, None, 2), 4]:
        assert_close(F.adaptive_avg_pool3d(ptl.tensor(a), size),
                     torch.nn.functional.adaptive_avg_pool3d(torch.tensor(a), size).numpy())
    for size in [(2, 3, 4), (3, None, 2), 4, (5, 7, 6)]:
        y, i = F.adaptive_max_pool3d(ptl.tensor(a), size, return_indices=True)
        ty, ti = torch.nn.functional.adaptive_max_pool3d(torch.tensor(a), size,
                                                         return_indices=True)
        assert np.array_equal(y.numpy(), ty.numpy()) and np.array_equal(i.numpy(), ti.numpy())
    b = np.random.default_rng(1).standard_normal((2, 3, 4, 6, 8))
    v, i = torch.nn.functional.max_pool3d(torch.tensor(b), 2, return_indices=True)
    assert_close(F.max_unpool3d(ptl.tensor(v.numpy()), ptl.tensor(i.numpy()), 2),
                 torch.nn.functional.max_unpool3d(v, i, 2).numpy())


def _np_adaptive_max3d(a, size):
    """(values, flat (d * H + h) * W + w indices) of the first maximum of each bin (NaN wins)"""
    d, h, w = a.shape[-3:]
    lead = a.reshape((-1, d, h, w))
    out = np.empty((lead.shape[0],) + tuple(size))
    idx = np.empty(out.shape, dtype=np.int64)
    for p in range(lead.shape[0]):
        for i, (d0, d1) in enumerate(_bins(d, size[0])):
            for j, (h0, h1) in enumerate(_bins(h, size[1])):
                for k, (w0, w1) in enumerate(_bins(w, size[2])):
                    best, at = -math.inf, (d0 * h + h0) * w + w0
                    for z in range(d0, d1):
                        for y in range(h0, h1):
                            for x in range(w0, w1):
                                v = lead[p, z, y, x]
                                if v > best or np.isnan(v):
                                    best, at = v, (z * h + y) * w + x
                    out[p, i, j, k], idx[p, i, j, k] = best, at
    return out.reshape(a.shape[:-3] + tuple(size)), idx.reshape(a.shape[:-3] + tuple(size))


@pytest.mark.parametrize("shape", [(2, 3, 5, 7, 6), (3, 4, 4, 5), (1, 2, 1, 1, 9)])
@pytest.mark.parametrize("size", [(2, 3, 4), (5, 1, 3), 1, (None, 2, None), (1, 1, 1)])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced", "channels_last"])
def test_adaptive_max_pool3d_against_numpy(shape, size, layout):
    x, a = make(shape, ptl.float64, "contiguous" if layout == "channels_last" else layout,
                seed=len(shape))
    if layout == "channels_last" and len(shape) == 5:
        x = x.contiguous(memory_format=ptl.channels_last_3d)
    full = [shape[-3 + i] if s is None else s for i, s in
            enumerate(size if isinstance(size, tuple) else (size,) * 3)]
    want, want_idx = _np_adaptive_max3d(a, full)
    y, idx = F.adaptive_max_pool3d(x, size, return_indices=True)
    assert_close(y, want, rtol=0, atol=0)
    assert np.array_equal(idx.numpy(), want_idx) and y.is_contiguous()
    assert_close(ptl.nn.AdaptiveMaxPool3d(size)(x), want, rtol=0, atol=0)
    y32 = F.adaptive_max_pool3d(x.float(), size)
    assert y32.dtype == ptl.float32
    assert_close(y32, want.astype(np.float32))


def test_adaptive_max_pool3d_nan_size_zero_and_threads():
    """160 planes of 4 x 9 x 10 -> 3 x 4 x 5: planes split over threads in chunks of 79
    (32768 / (360 + 60) + 1), so two threads share them"""
    a = np.random.default_rng(3).standard_normal((4, 40, 4, 9, 10))
    a.reshape(-1)[::11] = np.nan
    want, want_idx = _np_adaptive_max3d(a, (3, 4, 5))
    for threads in (1, 2):
        with num_threads(threads):
            y, idx = F.adaptive_max_pool3d(ptl.tensor(a), (3, 4, 5), return_indices=True)
        assert_close(y, want, rtol=0, atol=0)
        assert np.array_equal(idx.numpy(), want_idx)
    y, idx = F.adaptive_max_pool3d(ptl.ones(0, 3, 4, 4, 4), 2, return_indices=True)
    assert tuple(y.shape) == (0, 3, 2, 2, 2) and tuple(idx.shape) == (0, 3, 2, 2, 2)
    y = F.adaptive_max_pool3d(ptl.ones(2, 3, 4, 4, 4), (0, 3, 4))
    assert tuple(y.shape) == (2, 3, 0, 3, 4)
    assert F.adaptive_max_pool3d(ptl.ones(1, 2, 3, 3, dtype=ptl.float16), 2).dtype == \
        ptl.float16


def test_adaptive_max_pool3d_gradients():
    x = ptl.tensor(np.random.default_rng(0).standard_normal((1, 2, 3, 4, 5)), requires_grad=True)
    assert gradcheck(lambda t: F.adaptive_max_pool3d(t, (2, 3, 2)), (x,))
    assert gradgradcheck(lambda t: F.adaptive_max_pool3d(t, (2, 3, 2)), (x,))
    assert type(F.adaptive_max_pool3d(x, 2).grad_fn).__name__ == "AdaptiveMaxPool3DBackward0"
    assert repr(ptl.nn.AdaptiveMaxPool3d((1, None, 2), return_indices=True)) == \
        "AdaptiveMaxPool3d(output_size=(1, None, 2))"


def test_adaptive_max_pool3d_errors():
    def raises(fn, exc, msg):
        assert_raises_like_torch(fn, exc, msg)
    raises(lambda lib: lib.nn.functional.adaptive_max_pool3d(lib.ones(2, 3, 4, 4, 4), (2, 3)),
           RuntimeError, "adaptive_max_pool3d(): internal error: output_size.size() must be 3")
    raises(lambda lib: lib.nn.functional.adaptive_max_pool3d(lib.ones(3, 4, 5), (2, 3, 4)),
           ValueError, "Input dimension should be at least 4")
    raises(lambda lib: lib.ops.aten.adaptive_max_pool3d(lib.ones(9, 10), [2, 3, 3]),
           RuntimeError, "adaptive_max_pool3d(): Expected 4D or 5D tensor, but got: [9, 10]")
    raises(lambda lib: lib.nn.functional.adaptive_max_pool3d(lib.ones(2, 3, 0, 4, 4), 2),
           RuntimeError, "adaptive_max_pool3d(): Expected input to have non-zero size for "
           "non-batch dimensions, but input has sizes [2, 3, 0, 4, 4] with dimension 2 being "
           "empty")
    raises(lambda lib: lib.nn.functional.adaptive_max_pool3d(lib.ones(2, 3, 4, 4, 4),
                                                             (-1, 3, 4)),
           RuntimeError, "Trying to create tensor with negative dimension -1: [2, 3, -1, 3, 4]")
    raises(lambda lib: lib.nn.functional.adaptive_max_pool3d(
        lib.ones(2, 3, 4, 4, 4, dtype=lib.int32), 2), NotImplementedError,
        "\"adaptive_max_pool3d_cpu\" not implemented for 'Int'")
    x = (2, 3, 5, 6, 7)
    raises(lambda lib: lib.ops.aten.adaptive_max_pool3d_backward(
        lib.ones(2, 3, 2, 3, 4), lib.ones(x), lib.zeros(2, 3, 2, 3, 4)), RuntimeError,
        "expected scalar type Long but found Float")
    raises(lambda lib: lib.ops.aten.adaptive_max_pool3d_backward(
        lib.ones(2, 3, 2, 3, 4), lib.ones(9, 10), lib.zeros(2, 3, 2, 3, 4, dtype=lib.int64)),
        RuntimeError, "expected dimensions 2 for `indices` but got dimensions 5")
    raises(lambda lib: lib.ops.aten.adaptive_max_pool3d_backward(
        lib.ones(2, 3, 2, 3, 4), lib.ones(x), lib.zeros(2, 3, 2, 3, 5, dtype=lib.int64)),
        RuntimeError, "expected sizes [2, 3, 2, 3, 5] for `gradOutput` but got sizes "
        "[2, 3, 2, 3, 4]")


def test_adaptive_max_pool3d_no_leaks():
    x = ptl.randn(2, 3, 5, 6, 7, requires_grad=True)

    def calls():
        F.adaptive_max_pool3d(x, (2, 3, 4)).sum().backward()
        with pytest.raises(RuntimeError):
            F.adaptive_max_pool3d(x, (-1, 3, 4))
        with pytest.raises(RuntimeError):
            ptl.ops.aten.adaptive_max_pool3d_backward(ptl.ones(2, 3, 2, 3, 4), x.detach(),
                                                      ptl.zeros(2, 3, 2, 3, 5, dtype=ptl.int64))
    assert_no_leak(calls)
