"""F.adaptive_avg_pool3d / nn.AdaptiveAvgPool3d (two passes of the 2-D adaptive kernel) and
F.max_unpool3d / nn.MaxUnpool3d (the 2-D unpooling kernel on flattened volumes): against a
NumPy reference in float64 with PyTorch's bin edges, batched and unbatched, gradcheck, errors,
and torch when installed."""
import math

import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn.functional as F
from pytorchlite.autograd import gradcheck
from helpers import assert_close, assert_raises_like_torch, make, torch, torch_ref


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
    b = np.random.default_rng(1).standard_normal((2, 3, 4, 6, 8))
    v, i = torch.nn.functional.max_pool3d(torch.tensor(b), 2, return_indices=True)
    assert_close(F.max_unpool3d(ptl.tensor(v.numpy()), ptl.tensor(i.numpy()), 2),
                 torch.nn.functional.max_unpool3d(v, i, 2).numpy())
