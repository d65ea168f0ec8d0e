"""The grid sampler's CUDA kernels checked on the host (src/cuda/grid_sampler_plan.c and
grid_sampler.cu over src/aten/native/grid_sampler_taps.h, the per-point functions the CPU
kernel runs too; Note [CUDA grid sampler]): with _C._cuda_kernel_emulation on,
grid_sampler_2d and 3d and their backwards on CPU tensors take the CUDA path (grid_sampler.c's
checks and float64 copies, then one thread per grid point in the kernels' grid-stride loop,
grad_input by the kernels' atomic adds) and must reproduce a NumPy float64 reference written
from PyTorch's rules (every mode, padding and align_corners), the CPU kernel's values and
gradients, and a float64 gradcheck, under tunings whose grids hold one block (grid-stride
loops), a few and many, with point counts at and across the block and grid sizes.  Needs no
device."""
import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn.functional as F
from pytorchlite.autograd import gradcheck
from grid_sample_ref import MODES, PADDINGS, taps
from kernel_emulation import TUNINGS, emulated

FLOATS = [ptl.float64, ptl.float32, ptl.float16, ptl.bfloat16]
TOL = {ptl.float64: 1e-12, ptl.float32: 2e-6, ptl.float16: 2e-3, ptl.bfloat16: 1.6e-2}


def np_grid_sample(x, grid, mode, pad, align):
    """x [N, C, *S], grid [N, *O, k] (grid[..., j] indexes spatial dim k - 1 - j)"""
    sizes = x.shape[2:]
    k = len(sizes)
    per_dim = [taps(grid[..., k - 1 - d], sizes[d], mode, pad, align) for d in range(k)]
    out = np.zeros(x.shape[:2] + grid.shape[1:-1])
    for sel in np.ndindex(*[len(t) for t in per_dim]):
        w = np.ones(grid.shape[:-1])
        inside = np.ones(grid.shape[:-1], bool)
        idx = []
        for d, s in enumerate(sel):
            i, wt = per_dim[d][s]
            w = w * wt
            inside &= (i >= 0) & (i < sizes[d])
            idx.append(np.clip(i, 0, sizes[d] - 1).astype(np.int64))
        for b in range(x.shape[0]):
            vals = x[b][(slice(None),) + tuple(i[b] for i in idx)]
            out[b] += vals * np.where(inside[b], w[b], 0.0)
    return out


def check(got, want, dtype, scale=1.0):
    got = got.detach().to(ptl.float64).numpy()
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=TOL[dtype] * scale, atol=TOL[dtype] * scale)


def inputs(rng, xshape, gshape, dtype, kind="contiguous"):
    """input and grid (points reach past [-1, 1]); strided: every other element of wider
    tensors, transposed: the input's last two dims swapped in memory"""
    x = ptl.tensor(rng.standard_normal(xshape)).to(dtype)
    g = ptl.tensor(rng.uniform(-1.3, 1.3, gshape)).to(dtype)
    if kind == "strided":
        x = ptl.stack([x, x], dim=-1).flatten(-2)[..., ::2]
        g = ptl.stack([g, g], dim=1).flatten(1, 2)[:, ::2]
    elif kind == "transposed":
        x = x.transpose(-1, -2).contiguous().transpose(-1, -2)
    return x.requires_grad_(True), g.requires_grad_(True)


# (input shape, grid shape): grid point counts N Ho Wo of 1, 31, 32, 33 (the tiny tuning's
# block is 32, its grid one block) and 2 x 99, an empty channel dim and 3-D ones
CASES_2D = [((1, 2, 3, 4), (1, 1, 1, 2)), ((1, 3, 5, 4), (1, 31, 1, 2)),
            ((2, 2, 4, 6), (2, 4, 4, 2)), ((1, 1, 7, 3), (1, 3, 11, 2)),
            ((2, 3, 8, 9), (2, 9, 11, 2)), ((2, 0, 3, 3), (2, 2, 2, 2)),
            ((1, 2, 1, 1), (1, 2, 3, 2))]
CASES_3D = [((1, 2, 3, 4, 5), (1, 2, 3, 4, 3)), ((2, 1, 2, 5, 3), (2, 1, 33, 1, 3))]


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("mode", MODES)
def test_forward_and_backward_match_numpy_and_the_cpu(tuning, mode):
    rng = np.random.default_rng(MODES.index(mode))
    cases = CASES_2D + ([] if mode == "bicubic" else CASES_3D)
    for (xs, gs) in cases:
        for pad in PADDINGS:
            for align in (False, True):
                x, g = inputs(rng, xs, gs, ptl.float64)
                y_cpu = F.grid_sample(x, g, mode, pad, align)
                go = ptl.tensor(rng.standard_normal(tuple(y_cpu.shape)))
                gx_cpu, gg_cpu = ptl.autograd.grad(y_cpu, (x, g), go)
                with emulated(TUNINGS[tuning]) as ran:
                    y = F.grid_sample(x, g, mode, pad, align)
                    gx, gg = ptl.autograd.grad(y, (x, g), go)
                want = np_grid_sample(x.detach().numpy(), g.detach().numpy(), mode, pad,
                                      align)
                check(y, want, ptl.float64, 10)
                # the same per-point code: the CPU's bits, but for grad_input's sum order
                assert ptl.equal(y, y_cpu) and ptl.equal(gg, gg_cpu), (xs, gs, pad, align)
                check(gx, gx_cpu.numpy(), ptl.float64, 10)
                assert ran["grid_sampler"] == 2, (xs, gs)


@pytest.mark.parametrize("kind", ["contiguous", "strided", "transposed"])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_every_float_dtype_and_layout(kind, dtype):
    """float16 and bfloat16 (computed in float64, rounded once), strided and transposed
    inputs (the float64 copies are contiguous) against NumPy on the same values."""
    rng = np.random.default_rng(3)
    with emulated(TUNINGS["small"]) as ran:
        for mode in MODES:
            x, g = inputs(rng, (2, 3, 5, 7), (2, 6, 4, 2), dtype, kind)
            y = F.grid_sample(x, g, mode, "border", False)
            assert y.dtype == dtype
            check(y, np_grid_sample(x.detach().to(ptl.float64).numpy(),
                                    g.detach().to(ptl.float64).numpy(), mode, "border", False),
                  dtype, 10)
            y.sum().backward()
            assert x.grad.dtype == dtype and g.grad.dtype == dtype
    assert ran["grid_sampler"] == 6


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("pad", PADDINGS)
def test_gradcheck_through_the_emulated_kernels(mode, pad):
    """grad_input (the atomic adds) and grad_grid against finite differences of the
    emulated forward."""
    rng = np.random.default_rng(5)
    x, g = inputs(rng, (2, 2, 4, 3), (2, 3, 2, 2), ptl.float64)
    with emulated(TUNINGS["tiny"]) as ran:
        assert gradcheck(lambda a, b: F.grid_sample(a, b, mode, pad, True), (x, g))
    assert ran["grid_sampler"] > 0


def test_errors_are_the_cpu_kernels():
    """The checks run before the device path: PyTorch's messages."""
    x = ptl.randn(2, 3, 4, 4)
    with emulated(TUNINGS["small"]) as ran:
        with pytest.raises(RuntimeError, match="same batch size"):
            F.grid_sample(x, ptl.randn(1, 2, 2, 2), align_corners=False)
        with pytest.raises(RuntimeError, match="bicubic interpolation only supports 4D"):
            F.grid_sample(x.unsqueeze(2), ptl.randn(2, 1, 2, 2, 3), mode="bicubic",
                          align_corners=False)
    assert ran["grid_sampler"] == 0


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("pad", PADDINGS)
@pytest.mark.parametrize("dtype", [ptl.float64, ptl.float32])
def test_cpu_blocks_give_the_per_point_bits(mode, pad, dtype):
    """The CPU's blocks of points (Note [Grid sampler blocks]) sum the per-point functions'
    terms in their order: the forward and the grid gradient are the emulation's bits."""
    rng = np.random.default_rng(21)
    x = ptl.tensor(rng.standard_normal((2, 3, 5, 7))).to(dtype)
    grid = ptl.tensor(rng.uniform(-1.3, 1.3, (2, 9, 15, 2))).to(dtype)
    go = ptl.tensor(rng.standard_normal((2, 3, 9, 15))).to(dtype)
    outs = []
    for emulate in (False, True):
        xx, gg = x.detach().requires_grad_(True), grid.detach().requires_grad_(True)
        if emulate:
            with emulated(TUNINGS["small"]) as ran:
                y = F.grid_sample(xx, gg, mode=mode, padding_mode=pad, align_corners=False)
                y.backward(go)
            assert ran["grid_sampler"] == 2
        else:
            y = F.grid_sample(xx, gg, mode=mode, padding_mode=pad, align_corners=False)
            y.backward(go)
        outs.append((y.detach().numpy(), gg.grad.numpy(), xx.grad.numpy()))
    np.testing.assert_array_equal(outs[0][0], outs[1][0])
    np.testing.assert_array_equal(outs[0][1], outs[1][1])
    np.testing.assert_allclose(outs[0][2], outs[1][2], rtol=TOL[dtype], atol=TOL[dtype])
