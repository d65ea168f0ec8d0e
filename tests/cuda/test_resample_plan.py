"""The pad and upsampling kernels' per-element arithmetic and packed maps (src/cuda/
resample_plan.c and resample_plan.h, compiled by gcc here and by nvcc for resample.cu; Note
[CUDA resampling]), checked on the host: with _C._cuda_kernel_emulation on, the reflection,
replication and circular pads and every upsampling mode, with their backwards, on CPU
tensors take the CUDA path (resample.c's checks and maps, then the maps packed with the
backward's inverse and the kernels' grid loop run on the host) and must reproduce NumPy in
float64 (separable tap matrices written from PyTorch's index rules) and the CPU kernel,
under tunings with a grid of one block (grid-stride loops) and many.  Needs no device."""
import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn.functional as F
from kernel_emulation import TUNINGS, emulated

FLOATS = [ptl.float64, ptl.float32, ptl.float16, ptl.bfloat16]
TOL = {ptl.float64: 1e-12, ptl.float32: 2e-6, ptl.float16: 2e-3, ptl.bfloat16: 1.6e-2}
NP_PAD = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def pad_matrix(n_in, left, right, mode):
    """[n_out, n_in]: row o is the one-hot of the input position output o copies"""
    return np.pad(np.eye(n_in), ((left, right), (0, 0)), mode=NP_PAD[mode])


def cubic_weights(t, a=-0.75):
    def c1(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def c2(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return [c2(t + 1), c1(t), c1(1 - t), c2(2 - t)]


def up_matrix(n_in, n_out, mode, align, scale):
    """[n_out, n_in] of PyTorch's upsampling along one dim (scale: the user's factor or
    None)"""
    m = np.zeros((n_out, n_in))
    for o in range(n_out):
        if mode == "nearest":
            step = 1 / scale if scale else n_in / n_out
            m[o, min(int(np.floor(np.float32(o) * np.float32(step))), n_in - 1)] = 1
            continue
        if align:
            sc = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
            src = sc * o
        else:
            sc = 1 / scale if scale else n_in / n_out
            src = sc * (o + 0.5) - 0.5
        if mode == "linear":
            src = max(src, 0.0)
            i0 = min(int(src), n_in - 1)
            i1 = i0 + (1 if i0 < n_in - 1 else 0)
            lam = min(max(src - i0, 0.0), 1.0)
            m[o, i0] += 1 - lam
            m[o, i1] += lam
        else:
            f = np.floor(src)
            for k, w in enumerate(cubic_weights(src - f)):
                m[o, min(max(int(f) - 1 + k, 0), n_in - 1)] += w
    return m


def apply(mats, a):
    """a's last len(mats) dims each multiplied by its matrix (mats[k] [out, in])"""
    for k, m in enumerate(mats):
        axis = a.ndim - len(mats) + k
        a = np.moveaxis(np.tensordot(m, a, axes=([1], [axis])), 0, axis)
    return a


def apply_t(mats, g):
    return apply([m.T for m in mats], g)


def check(got, want, dtype, scale=1.0):
    got = got.detach().to(ptl.float64).numpy()
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=TOL[dtype], atol=TOL[dtype] * scale)


def strided(t, kind):
    """t contiguous or as every other element of a wider tensor (the same values)"""
    return ptl.stack([t, t], dim=-1).flatten(-2)[..., ::2] if kind == "strided" else t


# (input shape, pads of the last dims in F.pad's order)
PAD_CASES = [((2, 3, 9), (2, 3)), ((3, 1), (0, 0)), ((2, 2, 5, 7), (1, 3, 4, 2)),
             ((1, 3, 4, 5, 6), (1, 2, 3, 0, 2, 1)), ((0, 2, 4, 4), (1, 1, 1, 1)),
             ((2, 40, 37), (5, 31))]


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_pads_and_their_backward_match_numpy(tuning, dtype):
    rng = np.random.default_rng(0)
    with emulated(TUNINGS[tuning]) as ran:
        for shape, pads in PAD_CASES:
            nd = len(pads) // 2
            for mode in ("reflect", "replicate", "circular"):
                if mode == "circular" and len(shape) == nd + 1 or mode == "reflect" and any(
                        p >= n for p, n in zip(pads, sum(((s, s) for s in shape[::-1]), ()))):
                    continue
                for kind in ("contiguous", "strided"):
                    x = strided(ptl.tensor(rng.standard_normal(shape)).to(dtype), kind)
                    x.requires_grad_(True)
                    xv = x.detach().to(ptl.float64).numpy()
                    y = F.pad(x, pads, mode=mode)
                    mats = [pad_matrix(shape[-nd + k], pads[2 * (nd - 1 - k)],
                                       pads[2 * (nd - 1 - k) + 1], mode) for k in range(nd)]
                    check(y, apply(mats, xv), dtype)
                    g = ptl.tensor(rng.standard_normal(tuple(y.shape))).to(dtype)
                    y.backward(g)
                    check(x.grad, apply_t(mats, g.to(ptl.float64).numpy()), dtype, 8)
    assert ran["resample"] > 0


def test_pads_copy_integers_raw():
    """The pads move raw elements: int64 beyond 2^53 and int16 come through exactly."""
    x = ptl.tensor([[[2 ** 60 + 1, -3, 7, 2 ** 62 - 5]]])
    b = ptl.tensor([[[-32768, 5, 32767]]], dtype=ptl.int16)
    with emulated(TUNINGS["small"]) as ran:
        for mode in ("reflect", "replicate", "circular"):
            want = np.pad(x.numpy(), ((0, 0), (0, 0), (2, 1)), mode=NP_PAD[mode])
            np.testing.assert_array_equal(F.pad(x, (2, 1), mode=mode).numpy(), want)
        np.testing.assert_array_equal(F.pad(b, (1, 2), mode="replicate").numpy(),
                                      np.pad(b.numpy(), ((0, 0), (0, 0), (1, 2)), mode="edge"))
    assert ran["resample"] == 4


# (input shape, mode, align_corners, size or None, scale_factor or None)
UP_CASES = [((2, 3, 7), "nearest", None, (15,), None), ((2, 3, 7), "nearest", None, (14,), None),
            ((1, 2, 5, 6), "nearest", None, None, (1.7, 0.6)),
            ((1, 2, 3, 4, 5), "nearest", None, (4, 3, 9), None),
            ((2, 3, 7), "linear", False, (16,), None), ((2, 3, 7), "linear", True, (3,), None),
            ((2, 2, 5, 6), "bilinear", False, (9, 13), None),
            ((2, 2, 5, 6), "bilinear", True, (9, 4), None),
            ((1, 3, 4, 5), "bilinear", False, None, (2.5, 1.5)),
            ((1, 2, 3, 4, 5), "trilinear", False, (5, 2, 7), None),
            ((1, 2, 3, 4, 5), "trilinear", True, (5, 2, 7), None),
            ((2, 2, 5, 6), "bicubic", False, (11, 3), None),
            ((2, 2, 5, 6), "bicubic", True, (11, 13), None),
            ((1, 1, 1, 1), "bicubic", False, (3, 2), None),
            ((0, 2, 4, 4), "bilinear", False, (8, 8), None),
            ((1, 3, 40, 50), "bilinear", False, (81, 23), None)]


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_upsampling_and_its_backward_match_numpy(tuning, dtype):
    rng = np.random.default_rng(1)
    with emulated(TUNINGS[tuning]) as ran:
        for shape, mode, align, size, scale in UP_CASES:
            nd = len(shape) - 2
            base = "nearest" if mode == "nearest" else "cubic" if mode == "bicubic" else "linear"
            for kind in ("contiguous", "strided"):
                x = strided(ptl.tensor(rng.standard_normal(shape)).to(dtype), kind)
                x.requires_grad_(True)
                xv = x.detach().to(ptl.float64).numpy()
                y = F.interpolate(x, size=size, scale_factor=scale, mode=mode,
                                  align_corners=align)
                out = tuple(y.shape[2:])
                mats = [up_matrix(shape[2 + k], out[k], base, align,
                                  scale[k] if scale else None) for k in range(nd)]
                check(y, apply(mats, xv), dtype, 4)
                g = ptl.tensor(rng.standard_normal(tuple(y.shape))).to(dtype)
                y.backward(g)
                check(x.grad, apply_t(mats, g.to(ptl.float64).numpy()), dtype, 16)
    assert ran["resample"] > 0


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
def test_emulated_kernels_agree_with_the_cpu_kernel(tuning):
    """The pads' and nearest's bits, the weighted forwards within an ulp (the CPU sums
    float32/float64 taps separably, Note [Separable resampling]), the backward's within
    an ulp of the terms (the gather's order), and uint8 images (rounded, clamped) exactly."""
    rng = np.random.default_rng(2)
    x = ptl.tensor(rng.standard_normal((2, 3, 6, 5))).requires_grad_(True)
    u8 = ptl.tensor(rng.integers(0, 256, (1, 2, 5, 7)).astype(np.uint8))
    fns = [lambda t: F.pad(t, (2, 3, 1, 4), mode="reflect"),
           lambda t: F.interpolate(t, size=(13, 4), mode="bicubic", align_corners=True),
           lambda t: F.interpolate(t, scale_factor=3, mode="bilinear"),
           lambda t: F.interpolate(t, size=(11, 7), mode="nearest")]
    for k, fn in enumerate(fns):
        y0 = fn(x)
        g = ptl.tensor(rng.standard_normal(tuple(y0.shape)))
        (gx0,) = ptl.autograd.grad(y0, x, g)
        with emulated(TUNINGS[tuning]):
            y1 = fn(x)
            (gx1,) = ptl.autograd.grad(y1, x, g)
        if k in (0, 3):
            np.testing.assert_array_equal(y1.detach().numpy(), y0.detach().numpy())
        np.testing.assert_allclose(y1.detach().numpy(), y0.detach().numpy(), rtol=1e-14,
                                   atol=1e-14)
        np.testing.assert_allclose(gx1.numpy(), gx0.numpy(), rtol=1e-14, atol=1e-14)
    for mode in ("bilinear", "bicubic", "nearest"):
        want = F.interpolate(u8, size=(9, 12), mode=mode)
        with emulated(TUNINGS[tuning]):
            got = F.interpolate(u8, size=(9, 12), mode=mode)
        assert got.dtype == ptl.uint8
        np.testing.assert_array_equal(got.numpy(), want.numpy())
