"""The batch norm kernels' plan and per-thread arithmetic (src/cuda/nn_plan.c and nn_plan.h,
compiled by gcc here and by nvcc for nn.cu; Note [CUDA nn kernels]), checked on the host:
with _C._cuda_kernel_emulation on, native_batch_norm and its backward on CPU tensors take
the CUDA path (batch_norm.c's checks and copies, then the (channel, chunk) block sums, the
per-channel pass and the elementwise pass run on the host in the kernels' order) and must
reproduce NumPy in float64 and the CPU kernel, under tunings that keep each channel in one
chunk or split it (across min_chunk and target_blocks), with blocks below, at and above a
warp, a grid of one block (grid-stride loops) and many.  Needs no device and no nvcc."""
import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn.functional as F
from kernel_emulation import TUNINGS, emulated

FLOATS = [ptl.float64, ptl.float32, ptl.float16, ptl.bfloat16]
TOL = {ptl.float64: 1e-10, ptl.float32: 2e-5, ptl.float16: 2e-2, ptl.bfloat16: 1e-1}
# [N, C, *]: BatchNorm1d's [N, C] (hw 1), one value a channel over N, [N, C, L], a channel
# of one element when N = 1 too, 2-D images across a warp and the tunings' chunks
SHAPES = [(5, 3), (7, 1), (2, 4, 33), (1, 2, 1), (3, 2, 8, 9), (2, 5, 17, 31), (64, 2, 40)]
# training needs two values a channel (F.batch_norm's ValueError)
TRAIN_SHAPES = [s for s in SHAPES if np.prod(s) > s[1]]


def close(got, want, dtype, scale=1.0):
    got = got.detach().to(ptl.float64).numpy()
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_allclose(got, want, rtol=TOL[dtype], atol=TOL[dtype] * max(scale, 1.0))


def layout(t, kind):
    """t in a layout: contiguous, strided (every other element of a wider tensor), or
    channels last (channels innermost in memory); the same values."""
    if kind == "strided":
        return ptl.stack([t, t], dim=-1).flatten(-2)[..., ::2]
    if kind == "channels_last" and t.dim() > 2:
        return t.movedim(1, -1).contiguous().movedim(-1, 1)
    return t


def numpy_batch_norm(xv, wv, bv, dyv, eps):
    """y, batch mean, biased var, and the gradients of x, w, b in float64 (training)."""
    axes = (0,) + tuple(range(2, xv.ndim))
    shape = (1, -1) + (1,) * (xv.ndim - 2)
    mean = xv.mean(axes)
    var = xv.var(axes)
    inv = 1 / np.sqrt(var + eps)
    xhat = (xv - mean.reshape(shape)) * inv.reshape(shape)
    y = xhat * wv.reshape(shape) + bv.reshape(shape)
    g = dyv * wv.reshape(shape)
    dx = inv.reshape(shape) * (g - g.mean(axes, keepdims=True) -
                               xhat * (g * xhat).mean(axes, keepdims=True))
    return y, mean, var, dx, (dyv * xhat).sum(axes), dyv.sum(axes)


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_batch_norm_training_and_its_backward_match_numpy(tuning, dtype):
    rng = np.random.default_rng(0)
    pdt = ptl.float32 if dtype in (ptl.float16, ptl.bfloat16) else dtype
    with emulated(TUNINGS[tuning]) as ran:
        for shape in TRAIN_SHAPES:
            for kind in ("contiguous", "strided", "channels_last"):
                c = shape[1]
                xv = rng.standard_normal(shape) * 3 + 2
                x = layout(ptl.tensor(xv).to(dtype), kind).requires_grad_(True)
                xv = x.detach().to(ptl.float64).numpy()
                w = ptl.tensor(rng.standard_normal(c)).to(pdt).requires_grad_(True)
                b = ptl.tensor(rng.standard_normal(c)).to(pdt).requires_grad_(True)
                rm0, rv0 = rng.standard_normal(c), rng.random(c) + 0.5
                rm, rv = ptl.tensor(rm0).to(pdt), ptl.tensor(rv0).to(pdt)
                y = F.batch_norm(x, rm, rv, w, b, True, 0.3, 1e-5)
                dyv = rng.standard_normal(shape)
                dy = ptl.tensor(dyv).to(dtype)
                dyv = dy.to(ptl.float64).numpy()
                wv, bv = w.detach().to(ptl.float64).numpy(), b.detach().to(ptl.float64).numpy()
                want = numpy_batch_norm(xv, wv, bv, dyv, 1e-5)
                close(y, want[0], dtype)
                m = xv.size // c
                rm0p = ptl.tensor(rm0).to(pdt).to(ptl.float64).numpy()
                rv0p = ptl.tensor(rv0).to(pdt).to(ptl.float64).numpy()
                close(rm, 0.7 * rm0p + 0.3 * want[1], pdt)
                close(rv, 0.7 * rv0p + 0.3 * want[2] * m / (m - 1), pdt)
                y.backward(dy)
                # dx is a difference of terms of size |dy| invstd: rounded in the dtype
                close(x.grad, want[3], dtype, np.abs(dyv).max() / np.sqrt(want[2] + 1e-5).min())
                close(w.grad, want[4], pdt, np.sqrt(m))
                close(b.grad, want[5], pdt, np.sqrt(m))
    assert ran["batch_norm"] + ran["batch_norm_split"] > 0
    if tuning != "device":
        assert ran["batch_norm_split"] > 0


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_batch_norm_eval_and_its_backward_match_numpy(tuning, dtype):
    """Eval: the running statistics normalize, are left alone, and the backward is a dy."""
    rng = np.random.default_rng(1)
    pdt = ptl.float32 if dtype in (ptl.float16, ptl.bfloat16) else dtype
    with emulated(TUNINGS[tuning]) as ran:
        for shape in SHAPES:
            c = shape[1]
            shp = (1, -1) + (1,) * (len(shape) - 2)
            x = ptl.tensor(rng.standard_normal(shape)).to(dtype).requires_grad_(True)
            xv = x.detach().to(ptl.float64).numpy()
            rm = ptl.tensor(rng.standard_normal(c)).to(pdt)
            rv = ptl.tensor(rng.random(c) + 0.5).to(pdt)
            rmv, rvv = rm.to(ptl.float64).numpy(), rv.to(ptl.float64).numpy()
            for affine in (True, False):
                w = ptl.tensor(rng.standard_normal(c)).to(pdt).requires_grad_(True)
                b = ptl.tensor(rng.standard_normal(c)).to(pdt).requires_grad_(True)
                wv = w.detach().to(ptl.float64).numpy() if affine else np.ones(c)
                bv = b.detach().to(ptl.float64).numpy() if affine else np.zeros(c)
                y = F.batch_norm(x, rm, rv, w if affine else None, b if affine else None,
                                 False, 0.1, 1e-3)
                inv = 1 / np.sqrt(rvv + 1e-3)
                xhat = (xv - rmv.reshape(shp)) * inv.reshape(shp)
                close(y, xhat * wv.reshape(shp) + bv.reshape(shp), dtype, 4)
                dyv = rng.standard_normal(shape)
                dy = ptl.tensor(dyv).to(dtype)
                dyv = dy.to(ptl.float64).numpy()
                x.grad = None
                y.backward(dy)
                close(x.grad, dyv * (wv * inv).reshape(shp), dtype, 4)
                axes = (0,) + tuple(range(2, len(shape)))
                if affine:
                    close(w.grad, (dyv * xhat).sum(axes), pdt, np.sqrt(xv.size / c) * 4)
                    close(b.grad, dyv.sum(axes), pdt, np.sqrt(xv.size / c))
            np.testing.assert_array_equal(rm.to(ptl.float64).numpy(), rmv)
            np.testing.assert_array_equal(rv.to(ptl.float64).numpy(), rvv)
    assert ran["batch_norm"] + ran["batch_norm_split"] > 0


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
def test_batch_norm_emulated_kernels_agree_with_the_cpu_kernel(tuning):
    """The emulated kernels against the CPU kernel (its own chunks and lanes) in float64 and
    float32, with the parameter gradients asked for one at a time (output_mask) and the
    saved statistics of the forward."""
    rng = np.random.default_rng(2)
    for shape in ((6, 3, 50), (2, 1, 300), (9, 4)):
        for dtype in (ptl.float64, ptl.float32):
            c = shape[1]
            x = ptl.tensor(rng.standard_normal(shape) + 5).to(dtype)
            w = ptl.tensor(rng.standard_normal(c)).to(dtype)
            b = ptl.tensor(rng.random(c)).to(dtype)
            dy = ptl.tensor(rng.standard_normal(shape)).to(dtype)
            rm, rv = ptl.zeros(c, dtype=dtype), ptl.ones(c, dtype=dtype)
            outs = []
            for emulate in (False, True):
                rmc, rvc = rm.clone(), rv.clone()
                if emulate:
                    with emulated(TUNINGS[tuning]):
                        outs.append(run_ops(x, w, b, rmc, rvc, dy))
                else:
                    outs.append(run_ops(x, w, b, rmc, rvc, dy))
                outs[-1].extend([rmc, rvc])
            for cpu, emu in zip(*outs):
                if cpu is None:
                    assert emu is None
                    continue
                assert emu.dtype == cpu.dtype and emu.shape == cpu.shape
                tol = 1e-12 if dtype == ptl.float64 else 1e-5
                np.testing.assert_allclose(emu.to(ptl.float64).numpy(),
                                           cpu.to(ptl.float64).numpy(), rtol=tol, atol=tol)


def run_ops(x, w, b, rm, rv, dy):
    """native_batch_norm (training) and its backward under every output mask."""
    y, mean, invstd = ptl.ops.aten.native_batch_norm(x, w, b, rm, rv, True, 0.1, 1e-5)
    res = [y, mean, invstd]
    for mask in ([1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 1]):
        res.extend(ptl.ops.aten.native_batch_norm_backward(dy, x, w, rm, rv, mean, invstd,
                                                           True, 1e-5, mask))
    ye, me, ie = ptl.ops.aten.native_batch_norm(x, w, None, rm, rv, False, 0.1, 1e-5)
    res.extend([ye, me, ie])
    res.extend(ptl.ops.aten.native_batch_norm_backward(dy, x, w, rm, rv, None, None, False,
                                                       1e-5, [1, 1, 1]))
    return res


@pytest.mark.parametrize("m, split", [(8191, False), (8192, True)])
def test_batch_norm_splits_a_channel_of_two_min_chunks(m, split):
    """Under the device's tuning one channel stays in one chunk below two min_chunks (4096)
    of values and splits at it; the result is NumPy's either way."""
    rng = np.random.default_rng(3)
    xv = rng.standard_normal((1, 1, m)) + 100
    dyv = rng.standard_normal((1, 1, m))
    x = ptl.tensor(xv).requires_grad_(True)
    w = ptl.tensor([1.5], dtype=ptl.float64).requires_grad_(True)
    b = ptl.tensor([0.5], dtype=ptl.float64).requires_grad_(True)
    with emulated(TUNINGS["device"]) as ran:
        y = F.batch_norm(x, None, None, w, b, True)
        y.backward(ptl.tensor(dyv))
    assert (ran["batch_norm_split"] > 0) == split and (ran["batch_norm"] > 0) != split
    want = numpy_batch_norm(xv, np.array([1.5]), np.array([0.5]), dyv, 1e-5)
    for got, ref in zip((y, x.grad, w.grad, b.grad), want[:1] + want[3:]):
        close(got, ref, ptl.float64, np.sqrt(m))
