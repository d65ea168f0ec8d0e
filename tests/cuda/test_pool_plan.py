"""The pooling kernels' per-element work (src/cuda/pool_plan.c and pool_plan.h, compiled by
gcc here and by nvcc for pool.cu), checked on the host: with _C._cuda_kernel_emulation on,
max_pool2d/3d with indices, avg_pool2d/3d and adaptive_avg_pool2d of CPU tensors and their
backwards go through the CUDA path (the CPU kernel's checks and copies, then the kernels'
grid-stride loops on the host) and must reproduce a NumPy float64 reference (explicit
windows) under tunings with grids of one block and many, every float dtype, strides,
paddings, dilations, ceil_mode, count_include_pad, divisor_override, adaptive windows that
shrink and grow, NaN, non-contiguous and channels-last inputs and an empty batch; the max
pooling and the average forward reproduce the CPU kernel's bits.  Needs no device."""
import itertools
import math

import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn.functional as F
from kernel_emulation import TUNINGS, emulated

FLOATS = [ptl.float64, ptl.float32, ptl.float16, ptl.bfloat16]
TOL = {ptl.float64: 1e-12, ptl.float32: 1e-6, ptl.float16: 1e-3, ptl.bfloat16: 1e-2}


def out_size(n, k, s, p, d, ceil_mode):
    span = n + 2 * p - d * (k - 1) - 1
    o = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (o - 1) * s >= n + p:
        o -= 1
    return o


def strided_windows(n, k, s, p, d, ceil_mode, avg):
    """Per output: the input indices of its window and the span count_include_pad divides
    by (PyTorch's pooling windows)."""
    wins = []
    for o in range(out_size(n, k, s, p, 1 if avg else d, ceil_mode)):
        hs = o * s - p
        if avg:
            end = min(hs + k, n + p)
            wins.append((list(range(max(hs, 0), min(end, n))), end - hs))
        else:
            wins.append(([i for i in range(hs, hs + d * (k - 1) + 1, d) if 0 <= i < n], 0))
    return wins


def adaptive_windows(n, out):
    return [(list(range(o * n // out, -(-(o + 1) * n // out))), 0) for o in range(out)]


def pool_ref(x, wins, kind, g, divisor=None, include_pad=False):
    """y and the input gradient of sum(y g) for x (planes..., *spatial) in float64; wins one
    window list per spatial dim; kind "max" (first maximum, NaN wins) or "avg"."""
    nd = len(wins)
    lead = x.shape[:-nd]
    y = np.zeros(lead + tuple(len(w) for w in wins))
    gx = np.zeros_like(x)
    for plane in np.ndindex(*lead):
        for o in itertools.product(*(range(len(w)) for w in wins)):
            cells = list(itertools.product(*(wins[i][o[i]][0] for i in range(nd))))
            if kind == "max":
                best, at = -np.inf, cells[0]   # the window's first element unless beaten
                for c in cells:
                    if x[plane + c] > best or math.isnan(x[plane + c]):
                        best, at = x[plane + c], c
                y[plane + o] = best
                gx[plane + at] += g[plane + o]
            else:
                div = divisor or (math.prod(wins[i][o[i]][1] for i in range(nd)) if include_pad
                                  else len(cells))
                y[plane + o] = sum(x[plane + c] for c in cells) / div
                for c in cells:
                    gx[plane + c] += g[plane + o] / div
    return y, gx


def close(got, want, dtype, scale=1.0):
    got = got.detach().to(ptl.float64).numpy()
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_allclose(got, want, rtol=TOL[dtype], atol=TOL[dtype] * scale,
                               equal_nan=True)


def leaf(a, dtype, layout="contiguous"):
    t = ptl.tensor(a).to(dtype)
    if layout == "strided":
        t = ptl.tensor(np.repeat(a, 2, axis=-1)).to(dtype)[..., ::2]
    elif layout == "channels_last":
        t = ptl.tensor(np.moveaxis(a, 1, -1).copy()).to(dtype).permute(0, 3, 1, 2)
    t.requires_grad_(True)
    return t, t.detach().to(ptl.float64).numpy()


def check(rng, dtype, shape, fn, wins_of, kind, layout="contiguous", nan=False, **ref):
    x, xv = leaf(rng.standard_normal(shape) * 3, dtype, layout)
    if nan:
        x = x.detach()
        x[(0,) * (x.dim() - 1) + (1,)] = float("nan")
        x.requires_grad_(True)
        xv = x.detach().to(ptl.float64).numpy()
    y = fn(x)
    g = ptl.tensor(rng.standard_normal(tuple(y.shape))).to(dtype)
    y.backward(g)
    want, gx = pool_ref(xv, wins_of(xv.shape), kind, g.to(ptl.float64).numpy(), **ref)
    close(y, want, dtype, 4)
    close(x.grad, gx, dtype, 8)


MAX_CASES = [   # (shape, kernel, stride, padding, dilation, ceil_mode)
    ((2, 3, 9, 8), 3, 2, 1, 1, False),
    ((2, 3, 9, 8), 3, 2, 1, 1, True),
    ((1, 2, 10, 7), (3, 2), (1, 2), (1, 0), (2, 1), False),
    ((3, 8, 8), 2, 2, 0, 1, False),
    ((2, 2, 5, 6), 3, 1, 1, 2, True),
]


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_max_pool2d_and_its_backward_match_numpy(tuning, dtype):
    rng = np.random.default_rng(0)
    with emulated(TUNINGS[tuning]) as ran:
        for shape, k, s, p, d, cm in MAX_CASES:
            k2, s2, p2, d2 = (v if isinstance(v, tuple) else (v, v) for v in (k, s, p, d))

            def wins(sh, k2=k2, s2=s2, p2=p2, d2=d2, cm=cm):
                return [strided_windows(sh[-2 + i], k2[i], s2[i], p2[i], d2[i], cm, False)
                        for i in range(2)]
            for nan in (False, True):
                check(rng, dtype, shape,
                      lambda x: F.max_pool2d(x, k, s, p, dilation=d, ceil_mode=cm), wins, "max",
                      nan=nan)
    assert ran["pool"] > 0


AVG_CASES = [   # (shape, kernel, stride, padding, ceil_mode, count_include_pad, divisor)
    ((2, 3, 9, 8), 3, 2, 1, False, True, None),
    ((2, 3, 9, 8), 3, 2, 1, True, False, None),
    ((1, 2, 7, 10), (2, 3), (2, 1), (1, 1), True, True, None),
    ((3, 6, 6), 2, 2, 1, False, True, 3),
    ((2, 2, 5, 5), 5, 1, 2, False, False, None),
]


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_avg_pool2d_and_its_backward_match_numpy(tuning, dtype):
    rng = np.random.default_rng(1)
    with emulated(TUNINGS[tuning]) as ran:
        for shape, k, s, p, cm, cip, div in AVG_CASES:
            k2, s2, p2 = (v if isinstance(v, tuple) else (v, v) for v in (k, s, p))

            def wins(sh, k2=k2, s2=s2, p2=p2, cm=cm):
                return [strided_windows(sh[-2 + i], k2[i], s2[i], p2[i], 1, cm, True)
                        for i in range(2)]
            check(rng, dtype, shape,
                  lambda x: F.avg_pool2d(x, k, s, p, ceil_mode=cm, count_include_pad=cip,
                                         divisor_override=div),
                  wins, "avg", divisor=div, include_pad=cip)
    assert ran["pool"] > 0


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_adaptive_avg_pool2d_and_its_backward_match_numpy(tuning, dtype):
    rng = np.random.default_rng(2)
    with emulated(TUNINGS[tuning]) as ran:
        for shape, out in (((2, 3, 9, 8), (4, 5)), ((2, 3, 9, 8), (3, 4)),
                           ((1, 2, 5, 4), (7, 9)), ((2, 4, 6, 6), (1, 1)), ((3, 7, 5), (2, 5))):
            def wins(sh, out=out):
                return [adaptive_windows(sh[-2 + i], out[i]) for i in range(2)]
            check(rng, dtype, shape, lambda x: F.adaptive_avg_pool2d(x, out), wins, "avg")
    assert ran["pool"] > 0


@pytest.mark.parametrize("layout", ["strided", "channels_last"])
@pytest.mark.parametrize("tuning", sorted(TUNINGS))
def test_non_contiguous_and_channels_last_inputs(tuning, layout):
    rng = np.random.default_rng(3)
    shape = (2, 3, 8, 7)

    def wins(sh, avg):
        return [strided_windows(sh[-2 + i], 3, 2, 1, 1, False, avg) for i in range(2)]
    with emulated(TUNINGS[tuning]):
        check(rng, ptl.float64, shape, lambda x: F.max_pool2d(x, 3, 2, 1),
              lambda sh: wins(sh, False), "max", layout=layout)
        check(rng, ptl.float32, shape, lambda x: F.avg_pool2d(x, 3, 2, 1),
              lambda sh: wins(sh, True), "avg", layout=layout, include_pad=True)
        check(rng, ptl.float64, shape, lambda x: F.adaptive_avg_pool2d(x, (3, 2)),
              lambda sh: [adaptive_windows(sh[-2], 3), adaptive_windows(sh[-1], 2)], "avg",
              layout=layout)


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
def test_3d_pooling(tuning):
    rng = np.random.default_rng(4)
    shape = (2, 2, 5, 6, 7)
    with emulated(TUNINGS[tuning]):
        check(rng, ptl.float64, shape, lambda x: F.max_pool3d(x, 3, 2, 1, ceil_mode=True),
              lambda sh: [strided_windows(n, 3, 2, 1, 1, True, False) for n in sh[-3:]], "max")
        check(rng, ptl.float64, shape, lambda x: F.avg_pool3d(x, 2, 2, 1),
              lambda sh: [strided_windows(n, 2, 2, 1, 1, False, True) for n in sh[-3:]], "avg",
              include_pad=True)


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
def test_empty_batch(tuning):
    with emulated(TUNINGS[tuning]):
        for fn in (lambda x: F.max_pool2d(x, 2), lambda x: F.avg_pool2d(x, 2),
                   lambda x: F.adaptive_avg_pool2d(x, 3)):
            x = ptl.zeros(0, 3, 6, 6, requires_grad=True)
            y = fn(x)
            y.sum().backward()
            assert tuple(x.grad.shape) == (0, 3, 6, 6)


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64], ids=str)
def test_max_pooling_and_the_average_forward_have_the_cpu_bits(dtype):
    """The same windows walked in the same order: max values, indices and gradients (added
    in output order on both sides) and the average's sums are the CPU kernel's bits."""
    rng = np.random.default_rng(5)
    xv = rng.standard_normal((4, 5, 17, 15))
    g = ptl.tensor(rng.standard_normal((4, 5, 9, 8))).to(dtype)
    runs = []
    for emulate in (False, True):
        x = ptl.tensor(xv).to(dtype).requires_grad_(True)
        if emulate:
            with emulated(TUNINGS["small"]):
                y, i = F.max_pool2d(x, 3, 2, 1, ceil_mode=True, return_indices=True)
                y.backward(g)
                a = F.avg_pool2d(x.detach(), 3, 2, 1, count_include_pad=False)
        else:
            y, i = F.max_pool2d(x, 3, 2, 1, ceil_mode=True, return_indices=True)
            y.backward(g)
            a = F.avg_pool2d(x.detach(), 3, 2, 1, count_include_pad=False)
        runs.append([t.detach().numpy() for t in (y, i, x.grad, a)])
    for got, want in zip(runs[1], runs[0]):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
def test_gradcheck_through_the_emulation(tuning):
    rng = np.random.default_rng(7)
    x = ptl.tensor(rng.standard_normal((2, 3, 7, 6))).requires_grad_(True)
    with emulated(TUNINGS[tuning]):
        assert ptl.autograd.gradcheck(lambda x: F.max_pool2d(x, 3, 2, 1), (x,))
        assert ptl.autograd.gradcheck(
            lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False), (x,))
        assert ptl.autograd.gradcheck(lambda x: F.adaptive_avg_pool2d(x, (4, 5)), (x,))
