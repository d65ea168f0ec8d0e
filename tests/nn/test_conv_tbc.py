"""torch.conv_tbc / F.conv_tbc (pytorchlite/functional.py, matrix products over the kernel
taps): against a NumPy float64 reference for positive, zero and negative padding, a
0-length sequence, an empty kernel, non-contiguous operands, gradcheck, and every error with
PyTorch's type and message."""
import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn.functional as F
from pytorchlite.autograd import gradcheck, gradgradcheck
from helpers import assert_close, assert_raises_like_torch, make


def _np_conv_tbc(x, w, b, pad):
    t, k = x.shape[0], w.shape[0]
    xp = np.pad(x, ((pad, pad), (0, 0), (0, 0))) if pad >= 0 else x[-pad:t + pad]
    rows = t + 2 * pad - k + 1
    out = np.broadcast_to(b, (rows, x.shape[1], w.shape[2])).copy()
    for r in range(rows):
        for j in range(k):
            out[r] += xp[r + j] @ w[j]
    return out


CASES = [(5, 2, 3, 4, 2, 1), (7, 3, 2, 5, 3, 0), (5, 2, 3, 4, 2, -1), (4, 1, 2, 2, 1, 2),
         (3, 2, 2, 3, 5, 1), (0, 2, 3, 4, 1, 0), (5, 2, 3, 4, 0, 0), (1, 1, 1, 1, 1, 0)]


@pytest.mark.parametrize("t, b, ci, co, k, pad", CASES)
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_conv_tbc_against_numpy(t, b, ci, co, k, pad, layout):
    x, a = make((t, b, ci), ptl.float64, layout, seed=t)
    w, wa = make((k, ci, co), ptl.float64, layout, seed=k + 1)
    bias, ba = make((co,), ptl.float64, seed=3)
    want = _np_conv_tbc(a, wa, ba, pad)
    assert_close(ptl.conv_tbc(x, w, bias, pad), want)
    assert_close(F.conv_tbc(x, w, bias, pad=pad), want)
    y32 = ptl.conv_tbc(x.float(), w.float(), bias.float(), pad)
    assert y32.dtype == ptl.float32
    assert_close(y32, want.astype(np.float32), rtol=1e-5, atol=1e-5)
    if t + 1 >= k:   # pad defaults to 0
        assert_close(ptl.conv_tbc(x, w, bias), _np_conv_tbc(a, wa, ba, 0))


def test_conv_tbc_gradients():
    rng = np.random.default_rng(0)
    x = ptl.tensor(rng.standard_normal((5, 2, 3)), requires_grad=True)
    w = ptl.tensor(rng.standard_normal((2, 3, 4)), requires_grad=True)
    b = ptl.tensor(rng.standard_normal(4), requires_grad=True)
    for pad in (0, 1, -1):
        assert gradcheck(lambda x, w, b: ptl.conv_tbc(x, w, b, pad), (x, w, b))
    assert gradgradcheck(lambda x, w, b: ptl.conv_tbc(x, w, b, 1), (x, w, b))


ERRORS = [
    ((5, 2), (2, 3, 4), (4,), 1, "Input must have 3 dims: time, batch, in_channel"),
    ((5, 2, 3), (2, 3), (4,), 1,
     "Weight tensor must have 3 dims: kernel_width, in_channels, out_channels."),
    ((5, 2, 3), (2, 3, 4), (4, 1), 1, "Bias must be 1-D"),
    ((5, 2, 3), (2, 2, 4), (4,), 1,
     "Input dim 2 (input channels) is not == dim 1 in the weight tensor"),
    ((5, 2, 3), (2, 3, 4), (5,), 1,
     "Bias size must equal dim 2 in the weight tensor (output channels)."),
    ((5, 2, 3), (9, 3, 4), (4,), 1, "Trying to create tensor with negative dimension -1: "
     "[-1, 2, 4]"),
    ((5, 2, 3), (9, 3, 4), (4,), -1, "Trying to create tensor with negative dimension -5: "
     "[-5, 2, 4]"),
]


def test_conv_tbc_dtypes():
    assert_raises_like_torch(lambda lib: lib.conv_tbc(
        lib.ones(5, 2, 3, dtype=lib.float64), lib.ones(2, 3, 4), lib.ones(4)), RuntimeError,
        "self and mat2 must have the same dtype, but got Double and Float")
    assert_raises_like_torch(lambda lib: lib.conv_tbc(
        lib.ones(5, 2, 3), lib.ones(2, 3, 4, dtype=lib.float64), lib.ones(4)), RuntimeError,
        "self and mat2 must have the same dtype, but got Float and Double")
    # a float64 bias leaves a float32 result
    y = ptl.conv_tbc(ptl.ones(5, 2, 3), ptl.ones(2, 3, 4), ptl.ones(4, dtype=ptl.float64))
    assert y.dtype == ptl.float32
    assert_close(y, np.full((4, 2, 4), 7.0, dtype=np.float32))


@pytest.mark.parametrize("xs, ws, bs, pad, msg", ERRORS)
def test_conv_tbc_errors(xs, ws, bs, pad, msg):
    assert_raises_like_torch(lambda lib: lib.conv_tbc(lib.ones(xs), lib.ones(ws), lib.ones(bs),
                                                      pad), RuntimeError, msg)
