"""The separable float32/float64 path of linear/bilinear/bicubic upsampling and its backward
(Note [Separable resampling] in src/aten/native/resample.c) against float64 NumPy loops."""
import math

import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn.functional as F
from pytorchlite.autograd import gradcheck


def cubic_w(t, a=-0.75):
    def c1(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def c2(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [c2(t + 1), c1(t), c1(1 - t), c2(2 - t)]


def weight_matrix(n_in, n_out, mode, align, scale):
    """Dense (n_out, n_in) matrix of PyTorch's source indices and weights along one dim."""
    m = np.zeros((n_out, n_in))
    for o in range(n_out):
        if align:
            sc = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
            src = sc * o
        else:
            sc = 1.0 / scale if scale else n_in / n_out
            src = sc * (o + 0.5) - 0.5
        if mode == "linear":
            if not align and src < 0:
                src = 0.0
            i0 = min(int(math.floor(src)), n_in - 1)
            lam = min(max(src - i0, 0.0), 1.0)
            i1 = i0 + 1 if i0 < n_in - 1 else i0
            m[o, i0] += 1 - lam
            m[o, i1] += lam
        else:
            f = math.floor(src)
            for k, w in enumerate(cubic_w(src - f)):
                m[o, min(max(f - 1 + k, 0), n_in - 1)] += w
    return m


def reference(x, size, mode, align, scales):
    """x: float64 array (N, C, *spatial); the separable product of per-dim matrices."""
    kind = "linear" if mode in ("linear", "bilinear", "trilinear") else "cubic"
    mats = [weight_matrix(n, o, kind, align, s) for n, o, s in zip(x.shape[2:], size, scales)]
    if len(mats) == 1:
        return np.einsum("ncw,ow->nco", x, mats[0]), mats
    if len(mats) == 3:
        return np.einsum("ncdhw,rd,ph,qw->ncrpq", x, *mats), mats
    return np.einsum("nchw,ph,qw->ncpq", x, mats[0], mats[1]), mats


def reference_grad(g, mats):
    if len(mats) == 1:
        return np.einsum("nco,ow->ncw", g, mats[0])
    if len(mats) == 3:
        return np.einsum("ncrpq,rd,ph,qw->ncdhw", g, *mats)
    return np.einsum("ncpq,ph,qw->nchw", g, mats[0], mats[1])


def out_size(spatial, size, scale):
    if size is not None:
        return list(size) if isinstance(size, (tuple, list)) else [size] * len(spatial)
    sc = scale if isinstance(scale, (tuple, list)) else [scale] * len(spatial)
    return [int(math.floor(n * s)) for n, s in zip(spatial, sc)]


CASES = [
    # (shape, mode, size, scale_factor, align)
    ((2, 3, 7, 9), "bilinear", None, 2, False),
    ((2, 3, 7, 9), "bilinear", None, 2, True),
    ((1, 2, 1, 1), "bilinear", (5, 4), None, False),
    ((1, 2, 1, 1), "bicubic", (5, 4), None, True),
    ((1, 2, 13, 11), "bilinear", (4, 3), None, False),
    ((1, 2, 13, 11), "bicubic", (4, 3), None, False),
    ((1, 2, 31, 5), "bilinear", (1, 1), None, False),
    ((1, 2, 31, 5), "bilinear", (1, 7), None, True),
    ((2, 2, 5, 6), "bilinear", None, (0.3, 1.7), False),
    ((2, 2, 5, 6), "bicubic", None, (2.5, 0.6), False),
    ((2, 2, 5, 6), "bicubic", None, 3, True),
    ((3, 2, 9), "linear", (4,), None, False),
    ((3, 2, 9), "linear", None, 1.7, True),
    ((3, 2, 1), "linear", (6,), None, False),
    ((0, 3, 4, 5), "bilinear", (8, 10), None, False),
    ((2, 0, 4, 5), "bicubic", (3, 3), None, False),
    ((2, 2, 3, 4, 5), "trilinear", None, 2, False),
    ((1, 3, 5, 4, 3), "trilinear", (2, 7, 1), None, True),
    ((1, 2, 1, 1, 1), "trilinear", (3, 2, 2), None, False),
    ((2, 1, 16, 3, 4), "trilinear", (4, 5, 6), None, False),
    ((0, 2, 3, 4, 5), "trilinear", (4, 5, 6), None, False),
]


def run_case(case, dtype, layout, seed):
    shape, mode, size, scale, align = case
    a = np.random.default_rng(seed).standard_normal(shape)
    if layout == "transposed" and len(shape) >= 4:
        x = ptl.tensor(np.swapaxes(a, -1, -2).copy(), dtype=dtype).transpose(-1, -2)
    elif layout == "sliced":
        x = ptl.tensor(np.concatenate([a, a], axis=1), dtype=dtype)[:, ::2]
    else:
        x = ptl.tensor(a, dtype=dtype)
        if layout == "channels_last" and len(shape) >= 4:
            x = x.contiguous(memory_format=ptl.channels_last if len(shape) == 4
                             else ptl.channels_last_3d)
    a = x.double().numpy()
    x.requires_grad_(True)
    y = F.interpolate(x, size=size, scale_factor=scale, mode=mode, align_corners=align)
    osz = out_size(shape[2:], size, scale)
    scales = [None] * len(osz) if scale is None else (
        list(scale) if isinstance(scale, (tuple, list)) else [scale] * len(osz))
    want, mats = reference(a, osz, mode, align, scales)
    g = np.random.default_rng(seed + 1).standard_normal(want.shape)
    y.backward(ptl.tensor(g, dtype=dtype))
    return y, want, x.grad, reference_grad(g, mats)


TOLS = {ptl.float32: dict(rtol=1e-5, atol=1e-5), ptl.float64: dict(rtol=1e-12, atol=1e-12)}


@pytest.mark.parametrize("i", range(len(CASES)))
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "channels_last", "sliced"])
def test_forward_and_backward_match_numpy(i, dtype, layout):
    y, want, gx, gwant = run_case(CASES[i], dtype, layout, seed=10 + i)
    assert y.dtype == dtype and tuple(y.shape) == want.shape
    np.testing.assert_allclose(y.detach().double().numpy(), want, **TOLS[dtype])
    assert gx.dtype == dtype
    np.testing.assert_allclose(gx.double().numpy(), gwant, **TOLS[dtype])


@pytest.mark.parametrize("mode, size", [("bilinear", (32, 32)), ("bilinear", (7, 40)),
                                        ("bicubic", (32, 32)), ("bicubic", (7, 40)),
                                        ("trilinear", (5, 9, 6))])
def test_one_and_two_threads_give_the_same_bits(mode, size):
    # enough planes of enough work that two threads split them
    rng = np.random.default_rng(3)
    shape = (4, 8, 16, 16) if len(size) == 2 else (4, 8, 4, 8, 8)
    a = rng.standard_normal(shape).astype(np.float32)
    g = rng.standard_normal((4, 8) + size).astype(np.float32)
    outs = []
    old = ptl.get_num_threads()
    try:
        for n in (1, 2):
            ptl.set_num_threads(n)
            x = ptl.tensor(a, requires_grad=True)
            y = F.interpolate(x, size=size, mode=mode)
            y.backward(ptl.tensor(g))
            outs.append((y.detach().numpy(), x.grad.numpy()))
    finally:
        ptl.set_num_threads(old)
    assert np.array_equal(outs[0][0], outs[1][0])
    assert np.array_equal(outs[0][1], outs[1][1])


@pytest.mark.parametrize("kw, shape", [
    (dict(size=(4, 5), mode="bilinear"), (2, 1, 3, 2)),
    (dict(size=(2, 3), mode="bilinear", align_corners=True), (1, 2, 5, 4)),
    (dict(scale_factor=(1.5, 0.6), mode="bicubic"), (1, 1, 3, 5)),
    (dict(size=(5, 1), mode="bicubic", align_corners=True), (1, 1, 3, 3)),
    (dict(size=5, mode="linear"), (2, 2, 3)),
    (dict(size=(3, 4, 2), mode="trilinear"), (1, 2, 2, 3, 3)),
    (dict(size=(1, 4, 5), mode="trilinear", align_corners=True), (1, 1, 3, 2, 2)),
])
def test_gradcheck_float64(kw, shape):
    x = ptl.tensor(np.random.default_rng(5).standard_normal(shape), requires_grad=True)
    assert gradcheck(lambda x: F.interpolate(x, **kw), (x,))
