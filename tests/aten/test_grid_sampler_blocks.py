"""grid_sampler_2d/3d on the CPU by blocks of GS_BLOCK = 64 points (Note [Grid sampler
blocks] in src/aten/native/grid_sampler.c): bilinear/nearest against float64 NumPy loops,
float32 reading its own dtype with the float64 arithmetic (so exactly the float64 path's
result rounded), point counts at and across the block size, and 1 vs 2 threads."""
import math

import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn.functional as F

BLOCK = 64


def unnormalize(g, size, align):
    return (g + 1) / 2 * (size - 1) if align else ((g + 1) * size - 1) / 2


def taps(g, size, mode, pad, align):
    """[(index, weight)] of one coordinate along one dim (zeros/border padding)."""
    p = unnormalize(g, size, align)
    if pad == "border":
        p = min(max(p, 0.0), size - 1.0)
    if mode == "nearest":
        i = int(np.rint(p))
        return [(i, 1.0)] if 0 <= i < size else []
    i0 = math.floor(p)
    t = p - i0
    return [(i, w) for i, w in ((i0, 1 - t), (i0 + 1, t)) if 0 <= i < size]


def reference(x, grid, mode, pad, align, go):
    """Forward and input gradient of grid_sample 2-d in float64."""
    n, c, h, w = x.shape
    ho, wo = grid.shape[1:3]
    y = np.zeros((n, c, ho, wo))
    gx = np.zeros_like(x)
    for b in range(n):
        for i in range(ho):
            for j in range(wo):
                tx = taps(grid[b, i, j, 0], w, mode, pad, align)
                ty = taps(grid[b, i, j, 1], h, mode, pad, align)
                for iy, wy in ty:
                    for ix, wx in tx:
                        y[b, :, i, j] += wy * wx * x[b, :, iy, ix]
                        gx[b, :, iy, ix] += wy * wx * go[b, :, i, j]
    return y, gx


def run(x, grid, go, **kw):
    xt = x.detach().requires_grad_(True)
    gt = grid.detach().requires_grad_(True)
    y = F.grid_sample(xt, gt, **kw)
    y.backward(go)
    return y.detach(), xt.grad, gt.grad


GRIDS = [(1, 1), (1, 63), (8, 8), (1, 65), (3, 43), (2, 64)]


@pytest.mark.parametrize("ho, wo", GRIDS)
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("pad", ["zeros", "border"])
@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "sliced"])
def test_matches_numpy(ho, wo, mode, pad, align, layout):
    rng = np.random.default_rng(ho * 100 + wo)
    xa = rng.standard_normal((2, 3, 5, 7))
    # some points outside the input, so a block's points differ in their counts of taps
    ga = rng.uniform(-1.3, 1.3, (2, ho, wo, 2))
    goa = rng.standard_normal((2, 3, ho, wo))
    x = ptl.tensor(xa)
    if layout == "channels_last":
        x = x.contiguous(memory_format=ptl.channels_last)
    elif layout == "sliced":
        x = ptl.tensor(np.concatenate([xa, xa], axis=3))[..., ::2][..., :7]
        xa = x.numpy()
    y, gx, _ = run(x, ptl.tensor(ga), ptl.tensor(goa), mode=mode, padding_mode=pad,
                   align_corners=align)
    want, gwant = reference(xa, ga, mode, pad, align, goa)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gx.numpy(), gwant, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("ho, wo", GRIDS)
@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("pad", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("inside", [False, True])
def test_float32_is_the_float64_arithmetic_rounded(ho, wo, mode, pad, inside):
    rng = np.random.default_rng(7)
    xa = rng.standard_normal((2, 3, 6, 4)).astype(np.float32)
    lim = 0.9 if inside else 1.4
    ga = rng.uniform(-lim, lim, (2, ho, wo, 2)).astype(np.float32)
    goa = rng.standard_normal((2, 3, ho, wo)).astype(np.float32)
    r32 = run(ptl.tensor(xa), ptl.tensor(ga), ptl.tensor(goa), mode=mode, padding_mode=pad,
              align_corners=False)
    r64 = run(ptl.tensor(xa).double(), ptl.tensor(ga).double(), ptl.tensor(goa).double(),
              mode=mode, padding_mode=pad, align_corners=False)
    for a, b in zip(r32, r64):
        assert a.dtype == ptl.float32
        np.testing.assert_array_equal(a.numpy(), b.float().numpy())


def test_3d_float32_is_the_float64_arithmetic_rounded():
    rng = np.random.default_rng(8)
    xa = rng.standard_normal((2, 2, 3, 4, 5)).astype(np.float32)
    ga = rng.uniform(-1.2, 1.2, (2, 3, 5, 7, 3)).astype(np.float32)
    goa = rng.standard_normal((2, 2, 3, 5, 7)).astype(np.float32)
    r32 = run(ptl.tensor(xa), ptl.tensor(ga), ptl.tensor(goa), align_corners=True)
    r64 = run(ptl.tensor(xa).double(), ptl.tensor(ga).double(), ptl.tensor(goa).double(),
              align_corners=True)
    for a, b in zip(r32, r64):
        np.testing.assert_array_equal(a.numpy(), b.float().numpy())


@pytest.mark.parametrize("shape, gshape", [((0, 3, 4, 4), (0, 5, 5, 2)),
                                           ((2, 0, 4, 4), (2, 5, 5, 2)),
                                           ((2, 3, 4, 4), (2, 0, 5, 2)),
                                           ((1, 2, 1, 1), (1, 3, 2, 2))])
def test_empty_and_one_pixel(shape, gshape):
    rng = np.random.default_rng(9)
    xa = rng.standard_normal(shape)
    ga = rng.uniform(-1.2, 1.2, gshape)
    goa = rng.standard_normal((shape[0], shape[1]) + gshape[1:3])
    y, gx, gg = run(ptl.tensor(xa), ptl.tensor(ga), ptl.tensor(goa), align_corners=False)
    want, gwant = reference(xa, ga, "bilinear", "zeros", False, goa)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gx.numpy(), gwant, rtol=1e-12, atol=1e-12)
    assert tuple(gg.shape) == gshape


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_one_and_two_threads_give_the_same_bits(mode):
    # 4 samples x 70 blocks of 64 points: both the forward's items and the backward's
    # samples split over two threads
    rng = np.random.default_rng(10)
    x = ptl.tensor(rng.standard_normal((4, 3, 9, 11)).astype(np.float32))
    grid = ptl.tensor(rng.uniform(-1.1, 1.1, (4, 70, BLOCK, 2)).astype(np.float32))
    go = ptl.tensor(rng.standard_normal((4, 3, 70, BLOCK)).astype(np.float32))
    outs = []
    old = ptl.get_num_threads()
    try:
        for n in (1, 2):
            ptl.set_num_threads(n)
            outs.append([t.numpy() for t in run(x, grid, go, mode=mode, align_corners=False)])
    finally:
        ptl.set_num_threads(old)
    for a, b in zip(*outs):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("mode, nd", [("bilinear", 2), ("nearest", 2), ("bicubic", 2),
                                      ("bilinear", 3), ("nearest", 3)])
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
def test_one_gradient_alone_is_the_same_as_both(mode, nd, dtype):
    """The backward skips the grid gradient's terms (and the taps' derivatives) when only
    the input's is wanted, and the input gradient when only the grid's is."""
    rng = np.random.default_rng(11)
    xs, gs = ((2, 3, 5, 7), (2, 9, 70, 2)) if nd == 2 else ((2, 3, 3, 4, 5), (2, 3, 5, 7, 3))
    x = ptl.tensor(rng.standard_normal(xs)).to(dtype)
    grid = ptl.tensor(rng.uniform(-1.2, 1.2, gs)).to(dtype)
    go = ptl.tensor(rng.standard_normal(xs[:2] + gs[1:-1])).to(dtype)
    _, gx, gg = run(x, grid, go, mode=mode, align_corners=False)
    for wants in ((True, False), (False, True)):
        xx = x.detach().requires_grad_(wants[0])
        g2 = grid.detach().requires_grad_(wants[1])
        F.grid_sample(xx, g2, mode=mode, align_corners=False).backward(go)
        if wants[0]:
            assert g2.grad is None
            np.testing.assert_array_equal(xx.grad.numpy(), gx.numpy())
        else:
            assert xx.grad is None
            np.testing.assert_array_equal(g2.grad.numpy(), gg.numpy())
