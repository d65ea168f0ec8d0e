"""grid_sampler_2d/3d on the CPU channels-last (Note [Grid sampler channels-last] in
src/aten/native/grid_sampler.c: c >= 8 channels and at least as many taps as pixels per
plane): every mode, padding and align_corners against a NumPy float64 reference (points on
the borders, outside, NaN), against the per-channel path it replaces (each channel alone
takes Note [Grid sampler blocks]'s loops: the same output and input-gradient bits, the grid
gradient to rounding), gradcheck for the input and the grid in 4-D and 5-D, size-0 and
non-contiguous tensors, channel counts at and across the threshold and the 16-channel
chunks, tap counts at and across the plane size, and 1 vs 2 threads."""
import os
import subprocess
import sys
import tempfile

import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn.functional as F
from pytorchlite.autograd import gradcheck
from grid_sample_ref import MODES, PADDINGS, taps
from helpers import ROOT, rerun_with_capability


def reference(x, grid, go, mode, pad, align):
    """Forward and input gradient in float64: x [N, C, *S], grid [N, *O, k] (component j
    indexes spatial dim k - 1 - j), go [N, C, *O]"""
    sizes = x.shape[2:]
    k = len(sizes)
    with np.errstate(invalid="ignore"):
        per_dim = [taps(grid[..., k - 1 - d], sizes[d], mode, pad, align) for d in range(k)]
    y = np.zeros(x.shape[:2] + grid.shape[1:-1])
    gx = np.zeros_like(x)
    for sel in np.ndindex(*[len(t) for t in per_dim]):
        w = np.ones(grid.shape[:-1])
        inside = np.ones(grid.shape[:-1], bool)
        idx = []
        for d, s in enumerate(sel):
            i, wt = per_dim[d][s]
            w = w * wt
            with np.errstate(invalid="ignore"):
                inside &= (i >= 0) & (i < sizes[d])
            idx.append(np.where(inside, i, 0).astype(np.int64))
        # a tap outside reads 0 but still multiplies its weight (nan for a nan coordinate:
        # Note [Grid sampler non-finite coordinates]); it takes no gradient
        for b in range(x.shape[0]):
            at = (slice(None),) + tuple(i[b] for i in idx)
            y[b] += np.where(inside[b], x[b][at], 0.0) * w[b]
            np.add.at(gx[b], at, go[b] * np.where(inside[b], w[b], 0.0))
    return y, gx


def run(x, grid, go, **kw):
    xt = x.detach().requires_grad_(True)
    gt = grid.detach().requires_grad_(True)
    y = F.grid_sample(xt, gt, **kw)
    y.backward(go)
    return y.detach(), xt.grad, gt.grad


def per_channel(x, grid, go, **kw):
    """The same sampling one channel at a time (the per-channel loops): y and grad_input
    concatenated, grad_grid summed over the channels in float64"""
    parts = [run(x[:, c:c + 1], grid, go[:, c:c + 1], **kw) for c in range(x.shape[1])]
    gg = sum(p[2].double().numpy() for p in parts)
    return (np.concatenate([p[0].numpy() for p in parts], axis=1),
            np.concatenate([p[1].numpy() for p in parts], axis=1), gg)


def special_grid(rng, shape, nan=True):
    """uniform in [-1.3, 1.3] with exact borders (-1, 1), points just outside and NaNs"""
    g = rng.uniform(-1.3, 1.3, shape)
    flat = g.reshape(-1)
    specials = [-1.0, 1.0, 0.0, -1.0 - 1e-9, 1.0 + 1e-9, 3.0, -7.5] + ([np.nan] if nan else [])
    for i, v in enumerate(specials):
        flat[(7 * i + 3) % flat.size] = v
    return g


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("pad", PADDINGS)
@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("c", [8, 19, 35])
def test_matches_numpy(mode, pad, align, c):
    rng = np.random.default_rng(c)
    xa = rng.standard_normal((2, c, 5, 6))
    # NaN grid values: zeros padding has no tap inside (output nan, nearest 0); PyTorch's
    # border/reflection results for NaN are the per-channel path's
    # (test_matches_the_per_channel_path)
    ga = special_grid(rng, (2, 7, 9, 2), nan=pad == "zeros")
    goa = rng.standard_normal((2, c, 7, 9))
    y, gx, gg = run(ptl.tensor(xa), ptl.tensor(ga), ptl.tensor(goa), mode=mode,
                    padding_mode=pad, align_corners=align)
    want, gwant = reference(xa, ga, goa, mode, pad, align)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gx.numpy(), gwant, rtol=1e-12, atol=1e-12)
    assert np.isfinite(gg.numpy()).all() or np.isnan(ga).any()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("pad", PADDINGS)
@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("dtype", [ptl.float64, ptl.float32])
def test_matches_the_per_channel_path(mode, pad, align, dtype):
    rng = np.random.default_rng(3)
    x = ptl.tensor(rng.standard_normal((2, 21, 4, 5))).to(dtype)
    grid = ptl.tensor(special_grid(rng, (2, 5, 6, 2))).to(dtype)
    go = ptl.tensor(rng.standard_normal((2, 21, 5, 6))).to(dtype)
    kw = dict(mode=mode, padding_mode=pad, align_corners=align)
    y, gx, gg = run(x, grid, go, **kw)
    y1, gx1, gg1 = per_channel(x, grid, go, **kw)
    np.testing.assert_array_equal(y.numpy(), y1)
    np.testing.assert_array_equal(gx.numpy(), gx1)
    np.testing.assert_allclose(gg.double().numpy(), gg1, rtol=1e-12 if dtype == ptl.float64
                               else 2e-6, atol=1e-12 if dtype == ptl.float64 else 2e-5)


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("pad", PADDINGS)
def test_3d_matches_numpy_and_the_per_channel_path(mode, pad):
    rng = np.random.default_rng(4)
    xa = rng.standard_normal((2, 17, 3, 4, 5))
    ga = special_grid(rng, (2, 3, 4, 6, 3), nan=pad == "zeros")
    goa = rng.standard_normal((2, 17, 3, 4, 6))
    kw = dict(mode=mode, padding_mode=pad, align_corners=False)
    y, gx, gg = run(ptl.tensor(xa), ptl.tensor(ga), ptl.tensor(goa), **kw)
    want, gwant = reference(xa, ga, goa, mode, pad, False)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gx.numpy(), gwant, rtol=1e-12, atol=1e-12)
    _, _, gg1 = per_channel(ptl.tensor(xa), ptl.tensor(ga), ptl.tensor(goa), **kw)
    np.testing.assert_allclose(gg.numpy(), gg1, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("c", [7, 8, 15, 16, 17, 32, 33])
@pytest.mark.parametrize("wo", [2, 3, 4])
def test_at_and_across_the_thresholds(c, wo):
    """c at and across 8 (the channels-last threshold) and the 16-channel chunks; 4 x wo
    bilinear points of 4 taps against a 4 x 12 plane: 16 * wo taps vs 48 pixels, below
    (wo = 2), at (3) and above (4) the threshold"""
    rng = np.random.default_rng(c * 10 + wo)
    xa = rng.standard_normal((2, c, 4, 12))
    ga = rng.uniform(-1.1, 1.1, (2, 4, wo, 2))
    goa = rng.standard_normal((2, c) + ga.shape[1:3])
    y, gx, gg = run(ptl.tensor(xa), ptl.tensor(ga), ptl.tensor(goa), align_corners=False)
    want, gwant = reference(xa, ga, goa, "bilinear", "zeros", False)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gx.numpy(), gwant, rtol=1e-12, atol=1e-12)
    _, _, gg1 = per_channel(ptl.tensor(xa), ptl.tensor(ga), ptl.tensor(goa),
                            align_corners=False)
    np.testing.assert_allclose(gg.numpy(), gg1, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("pad", PADDINGS)
def test_float32_is_the_float64_arithmetic_rounded(mode, pad):
    rng = np.random.default_rng(5)
    xa = rng.standard_normal((2, 18, 5, 4)).astype(np.float32)
    ga = rng.uniform(-1.2, 1.2, (2, 6, 7, 2)).astype(np.float32)
    goa = rng.standard_normal((2, 18, 6, 7)).astype(np.float32)
    kw = dict(mode=mode, padding_mode=pad, align_corners=False)
    r32 = run(ptl.tensor(xa), ptl.tensor(ga), ptl.tensor(goa), **kw)
    r64 = run(ptl.tensor(xa).double(), ptl.tensor(ga).double(), ptl.tensor(goa).double(), **kw)
    for a, b in zip(r32, r64):
        assert a.dtype == ptl.float32
        np.testing.assert_array_equal(a.numpy(), b.float().numpy())


@pytest.mark.parametrize("mode, pad", [("bilinear", "zeros"), ("bilinear", "reflection"),
                                       ("nearest", "border"), ("bicubic", "zeros"),
                                       ("bicubic", "border")])
def test_gradcheck_2d(mode, pad):
    rng = np.random.default_rng(6)
    x = ptl.tensor(rng.standard_normal((1, 9, 3, 4))).requires_grad_(True)
    # away from the integer pixel coordinates, where the taps' weights have kinks
    g = ptl.tensor(rng.uniform(-1.2, 1.2, (1, 3, 4, 2)) + 0.013).requires_grad_(True)
    assert gradcheck(lambda x, g: F.grid_sample(x, g, mode=mode, padding_mode=pad,
                                                align_corners=False), (x, g))


def test_gradcheck_3d():
    rng = np.random.default_rng(7)
    x = ptl.tensor(rng.standard_normal((1, 8, 2, 3, 3))).requires_grad_(True)
    g = ptl.tensor(rng.uniform(-1.1, 1.1, (1, 2, 2, 3, 3)) + 0.013).requires_grad_(True)
    assert gradcheck(lambda x, g: F.grid_sample(x, g, align_corners=True), (x, g))


@pytest.mark.parametrize("shape, gshape", [((0, 9, 4, 4), (0, 5, 5, 2)),
                                           ((2, 9, 4, 4), (2, 0, 5, 2)),
                                           ((0, 9, 2, 3, 3), (0, 4, 5, 5, 3))])
def test_size_0(shape, gshape):
    x = ptl.zeros(shape).requires_grad_(True)
    g = ptl.zeros(gshape).requires_grad_(True)
    y = F.grid_sample(x, g, align_corners=False)
    assert tuple(y.shape) == shape[:2] + gshape[1:-1]
    y.sum().backward()
    assert tuple(x.grad.shape) == shape and tuple(g.grad.shape) == gshape


@pytest.mark.parametrize("layout", ["channels_last", "sliced", "transposed_grid"])
def test_non_contiguous(layout):
    rng = np.random.default_rng(8)
    xa = rng.standard_normal((2, 12, 5, 6))
    ga = rng.uniform(-1.2, 1.2, (2, 6, 7, 2))
    goa = rng.standard_normal((2, 12, 6, 7))
    x, g = ptl.tensor(xa), ptl.tensor(ga)
    if layout == "channels_last":
        x = x.contiguous(memory_format=ptl.channels_last)
    elif layout == "sliced":
        x = ptl.tensor(np.concatenate([xa, xa], axis=3))[..., ::2][..., :6]
        xa = x.numpy()
    else:
        g = ptl.tensor(ga.transpose(0, 2, 1, 3).copy()).transpose(1, 2)
        assert not g.is_contiguous()
    y, gx, gg = run(x, g, ptl.tensor(goa), align_corners=True)
    want, gwant = reference(xa, ga, goa, "bilinear", "zeros", True)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gx.numpy(), gwant, rtol=1e-12, atol=1e-12)
    _, _, gg1 = per_channel(ptl.tensor(xa), ptl.tensor(ga), ptl.tensor(goa), align_corners=True)
    np.testing.assert_allclose(gg.numpy(), gg1, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_one_and_two_threads_give_the_same_bits(mode):
    # 4 samples x 70 blocks of 64 points: the forward's items and the backward's samples
    # split over two threads
    rng = np.random.default_rng(10)
    x = ptl.tensor(rng.standard_normal((4, 20, 9, 11)).astype(np.float32))
    grid = ptl.tensor(rng.uniform(-1.1, 1.1, (4, 70, 64, 2)).astype(np.float32))
    go = ptl.tensor(rng.standard_normal((4, 20, 70, 64)).astype(np.float32))
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


@pytest.mark.parametrize("wants", [(True, False), (False, True)])
def test_one_gradient_alone_is_the_same_as_both(wants):
    rng = np.random.default_rng(11)
    x = ptl.tensor(rng.standard_normal((2, 24, 5, 7)))
    grid = ptl.tensor(rng.uniform(-1.2, 1.2, (2, 9, 10, 2)))
    go = ptl.tensor(rng.standard_normal((2, 24, 9, 10)))
    _, gx, gg = run(x, grid, go, mode="bicubic", align_corners=False)
    xx = x.detach().requires_grad_(wants[0])
    g2 = grid.detach().requires_grad_(wants[1])
    F.grid_sample(xx, g2, mode="bicubic", align_corners=False).backward(go)
    got, want = (xx.grad, gx) if wants[0] else (g2.grad, gg)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("wo", [1023, 1024, 1025, 2100])
@pytest.mark.parametrize("nd", [2, 3])
@pytest.mark.parametrize("threads", [1, 2])
def test_nearest_runs_of_points(wo, nd, threads):
    """The nearest forward and backward go by runs of 1024 points (Note [Grid sampler
    nearest forward]): point counts at and across a run, 1 and 2 threads, NaN and outside
    points"""
    rng = np.random.default_rng(wo + nd)
    # 40 channels: a run of points is work enough for the two threads to split the runs
    xs = (2, 40, 4, 5) if nd == 2 else (2, 40, 2, 4, 5)
    xa = rng.standard_normal(xs)
    xa.reshape(-1)[::7] = -0.0
    ga = special_grid(rng, (2,) + (1,) * (nd - 1) + (wo, nd))
    goa = rng.standard_normal((2, 40) + ga.shape[1:-1])
    old = ptl.get_num_threads()
    try:
        ptl.set_num_threads(threads)
        y, gx, gg = run(ptl.tensor(xa), ptl.tensor(ga), ptl.tensor(goa), mode="nearest",
                        align_corners=False)
    finally:
        ptl.set_num_threads(old)
    want, gwant = reference(xa, ga, goa, "nearest", "zeros", False)
    np.testing.assert_array_equal(y.numpy(), want)
    np.testing.assert_allclose(gx.numpy(), gwant, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(gg.numpy(), np.zeros_like(ga))
    # -0.0 read at a tap comes out +0.0, as the per-point sum 0.0 + 1.0 * x
    assert not np.signbit(y.numpy()[y.numpy() == 0]).any()


@pytest.mark.parametrize("c", [3, 12])
def test_nearest_grid_gradient_is_zero(c):
    """PyTorch's nearest grid gradient is zeros, also where the input is not finite"""
    rng = np.random.default_rng(12)
    xa = rng.standard_normal((2, c, 4, 5))
    xa[0, 0, 1, 2], xa[1, -1, 3, 0] = np.inf, np.nan
    ga = rng.uniform(-1.1, 1.1, (2, 6, 7, 2))
    goa = rng.standard_normal((2, c, 6, 7))
    _, gx, gg = run(ptl.tensor(xa), ptl.tensor(ga), ptl.tensor(goa), mode="nearest",
                    align_corners=False)
    np.testing.assert_array_equal(gg.numpy(), np.zeros_like(ga))
    _, gwant = reference(xa, ga, goa, "nearest", "zeros", False)
    np.testing.assert_allclose(gx.numpy(), gwant, rtol=1e-12, atol=1e-12)


def test_the_portable_loops():
    """The same tests on the portable (SSE2) build of the loops, in a child process"""
    rerun_with_capability(__file__, "default", "-k", "not portable")


def test_portable_and_avx2_loops_give_the_same_bits():
    code = (
        "import sys\nimport numpy as np, pytorchlite as ptl\n"
        "import pytorchlite.nn.functional as F\n"
        "rng = np.random.default_rng(13)\n"
        "out = {}\n"
        "for dt in ('float32', 'float64'):\n"
        "    for mode in ('bilinear', 'nearest', 'bicubic'):\n"
        "        x = ptl.tensor(rng.standard_normal((2, 37, 6, 7)).astype(dt))\n"
        "        g = ptl.tensor(rng.uniform(-1.2, 1.2, (2, 8, 9, 2)).astype(dt))\n"
        "        x.requires_grad_(True)\n"
        "        g.requires_grad_(True)\n"
        "        y = F.grid_sample(x, g, mode=mode, align_corners=False)\n"
        "        y.backward(ptl.tensor(rng.standard_normal((2, 37, 8, 9)).astype(dt)))\n"
        "        for k, t in (('y', y.detach()), ('gx', x.grad), ('gg', g.grad)):\n"
        "            out[f'{dt}_{mode}_{k}'] = t.numpy()\n"
        "np.savez(sys.argv[1], **out)\n")
    runs = []
    with tempfile.TemporaryDirectory() as d:
        for cap in (None, "default"):
            env = dict(os.environ)
            if cap is not None:
                env["PTL_CPU_CAPABILITY"] = cap
            path = f"{d}/{cap}.npz"
            subprocess.run([sys.executable, "-c", code, path], check=True, env=env, cwd=ROOT)
            runs.append(dict(np.load(path)))
    for k in runs[0]:
        np.testing.assert_array_equal(runs[0][k], runs[1][k], err_msg=k)
