"""The pooling kernels' per-element work (src/cuda/pool_plan.c and pool_plan.h, compiled by
gcc here and by nvcc for pool.cu), checked on the host: with _C._cuda_kernel_emulation on,
max_pool2d/3d with indices, avg_pool2d/3d, adaptive_avg_pool2d, adaptive_max_pool2d/3d of
CPU tensors and their backwards go through the CUDA path (the CPU kernel's checks and
copies, then the kernels' grid-stride loops on the host) and must reproduce a NumPy float64
reference (explicit windows) under tunings with grids of one block and many, every float dtype, strides,
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


ADAPTIVE_MAX_CASES = [   # (shape, output_size): windows that shrink, grow, overlap, 1 x 1
    ((2, 3, 9, 8), (4, 5)),
    ((2, 3, 9, 8), (3, 4)),
    ((1, 2, 5, 4), (7, 9)),
    ((2, 4, 6, 6), (1, 1)),
    ((3, 7, 5), (2, 5)),
]


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_adaptive_max_pool2d_and_its_backward_match_numpy(tuning, dtype):
    rng = np.random.default_rng(8)
    with emulated(TUNINGS[tuning]) as ran:
        for shape, out in ADAPTIVE_MAX_CASES:
            def wins(sh, out=out):
                return [adaptive_windows(sh[-2 + i], out[i]) for i in range(2)]
            for nan in (False, True):
                check(rng, dtype, shape, lambda x: F.adaptive_max_pool2d(x, out), wins, "max",
                      nan=nan)
    assert ran["pool"] > 0


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_adaptive_max_pool3d_and_its_backward_match_numpy(tuning, dtype):
    """adaptive_max_pool3d takes the 3-D max kernel and the gather backward of its 2-D twin"""
    rng = np.random.default_rng(10)
    with emulated(TUNINGS[tuning]) as ran:
        for shape, out in [((2, 3, 4, 6, 5), (2, 3, 4)), ((2, 5, 4, 3), (3, 2, 1)),
                           ((1, 2, 3, 3, 3), (1, 1, 1))]:
            def wins(sh, out=out):
                return [adaptive_windows(sh[-3 + i], out[i]) for i in range(3)]
            for nan in (False, True):
                check(rng, dtype, shape, lambda x: F.adaptive_max_pool3d(x, out), wins, "max",
                      nan=nan)
    assert ran["pool"] > 0


@pytest.mark.parametrize("layout", ["strided", "channels_last"])
@pytest.mark.parametrize("tuning", sorted(TUNINGS))
def test_adaptive_max_pool2d_of_non_contiguous_inputs(tuning, layout):
    rng = np.random.default_rng(9)
    with emulated(TUNINGS[tuning]):
        for out in ((3, 2), (1, 1)):
            check(rng, ptl.float64, (2, 3, 8, 7), lambda x: F.adaptive_max_pool2d(x, out),
                  lambda sh: [adaptive_windows(sh[-2], out[0]), adaptive_windows(sh[-1], out[1])],
                  "max", layout=layout)


def as_np(t):
    """t's values as an array (float dtypes exactly, through float64)"""
    t = t.detach()
    return t.to(ptl.float64).numpy() if t.is_floating_point() else t.numpy()


def cpu_and_emulated(fn, tuning="small"):
    """fn() run on the CPU kernels and through the emulation: two lists of arrays"""
    runs = []
    for emulate in (False, True):
        if emulate:
            with emulated(TUNINGS[tuning]):
                runs.append([as_np(t) for t in fn()])
        else:
            runs.append([as_np(t) for t in fn()])
    return runs


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_adaptive_max_pool2d_has_the_cpu_bits(dtype):
    """The same windows walked in the same order: values, indices and the gradients (added
    in output order on both sides), the 1 x 1 case (a global maximum on the CPU) too."""
    rng = np.random.default_rng(10)
    xv = rng.standard_normal((4, 5, 17, 15))
    xv[0, 0, 3, 4] = xv[1, 2, 0, 0] = np.nan
    xv[2, 1] = -np.inf
    for out in ((9, 8), (5, 7), (1, 1), (20, 3)):
        g = ptl.tensor(rng.standard_normal((4, 5) + out)).to(dtype)

        def run(out=out, g=g):
            x = ptl.tensor(xv).to(dtype).requires_grad_(True)
            y, i = F.adaptive_max_pool2d(x, out, return_indices=True)
            y.backward(g)
            return y, i, x.grad
        for got, want in zip(*cpu_and_emulated(run)):
            np.testing.assert_array_equal(got, want)


def unpool(x, idx, size):
    """aten's max_unpool2d (F.max_unpool2d bounds output_size by the pooling's kernel)"""
    return ptl.ops.aten.max_unpool2d(x, idx, list(size))


def unpool_ref(x, idx, size, g):
    """max_unpool2d of x (planes..., h, w) by idx into size, and the gradient of sum(y g)
    for x, in float64: the last x of an index wins (the CPU's loop)."""
    lead = x.shape[:-2]
    y = np.zeros(lead + size)
    gx = np.zeros_like(x)
    for plane in np.ndindex(*lead):
        flat = y[plane].reshape(-1)
        gflat = g[plane].reshape(-1)
        for o in np.ndindex(*x.shape[-2:]):
            flat[idx[plane + o]] = x[plane + o]
            gx[plane + o] = gflat[idx[plane + o]]
    return y, gx


def unpool_indices(rng, shape, size, duplicates):
    """indices into planes of `size` for a source of `shape`: from a max pooling, or random
    with repeats"""
    if not duplicates:
        pooled = ptl.tensor(rng.standard_normal(shape[:-2] + size))
        return F.max_pool2d(pooled, 2, ceil_mode=True, return_indices=True)[1]
    vol = size[0] * size[1]
    return ptl.tensor(rng.integers(0, min(vol, 5), shape))


UNPOOL_CASES = [   # (source shape, output_size, duplicate indices)
    ((2, 3, 4, 4), (8, 8), False),
    ((2, 3, 4, 5), (7, 9), False),
    ((3, 4, 3), (6, 6), True),
    ((1, 2, 5, 6), (3, 4), True),
    ((2, 1, 1, 1), (1, 1), True),
]


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_max_unpool2d_and_its_backward_match_numpy(tuning, dtype):
    rng = np.random.default_rng(11)
    with emulated(TUNINGS[tuning]) as ran:
        for shape, size, dup in UNPOOL_CASES:
            idx = unpool_indices(rng, shape, size, dup)
            x, xv = leaf(rng.standard_normal(shape) * 3, dtype)
            y = unpool(x, idx, size)
            g = ptl.tensor(rng.standard_normal(tuple(y.shape))).to(dtype)
            y.backward(g)
            want, gx = unpool_ref(xv, idx.numpy(), size, g.to(ptl.float64).numpy())
            close(y, want, dtype)
            close(x.grad, gx, dtype)
    assert ran["unpool"] > 0


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
def test_max_unpool2d_of_strided_sources_and_indices_has_the_cpu_bits(tuning):
    rng = np.random.default_rng(12)
    base = ptl.tensor(rng.standard_normal((2, 3, 5, 12)))
    ibase = ptl.tensor(rng.integers(0, 6, (2, 3, 12, 5))).transpose(2, 3)
    for dtype in (ptl.float32, ptl.float64):
        def run(dtype=dtype):
            x = base.to(dtype)[..., ::2].requires_grad_(True)
            y = unpool(x, ibase[..., ::2], (3, 4))
            y.backward(ptl.arange(float(y.numel())).reshape(y.shape).to(dtype))
            return y, x.grad
        for got, want in zip(*cpu_and_emulated(run, tuning)):
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
def test_max_unpool2d_with_an_empty_batch_or_plane(tuning):
    with emulated(TUNINGS[tuning]):
        x = ptl.zeros(0, 3, 2, 2, requires_grad=True)
        y = F.max_unpool2d(x, ptl.zeros(0, 3, 2, 2, dtype=ptl.int64), 2)
        y.sum().backward()
        assert tuple(y.shape) == (0, 3, 4, 4) and tuple(x.grad.shape) == (0, 3, 2, 2)
        x = ptl.zeros(2, 3, 0, 2, requires_grad=True)
        y = unpool(x, ptl.zeros(2, 3, 0, 2, dtype=ptl.int64), (2, 3))
        np.testing.assert_array_equal(y.detach().numpy(), np.zeros((2, 3, 2, 3)))


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
def test_max_unpool2d_raises_the_cpu_error_for_the_first_bad_index(tuning):
    """The status word keeps the first bad index in row-major order, whichever thread met
    it first; forward and backward raise the CPU check's message."""
    rng = np.random.default_rng(13)
    x = ptl.tensor(rng.standard_normal((2, 3, 4, 4)), requires_grad=True)
    for bad in ([(1, 2, 3, 3, 16), (1, 2, 3, 2, -1)], [(0, 0, 0, 1, -5), (1, 0, 0, 0, 99)]):
        idx = ptl.zeros(2, 3, 4, 4, dtype=ptl.int64)
        for *at, v in bad:
            idx[tuple(at)] = v
        want = sorted(bad)[0][-1]
        msg = f"Found an invalid max index: {want} (output volumes are of size 8x8)"
        with pytest.raises(RuntimeError, match=msg.replace("(", r"\(").replace(")", r"\)")):
            F.max_unpool2d(x, idx, 2)
        with emulated(TUNINGS[tuning]):
            with pytest.raises(RuntimeError) as e:
                F.max_unpool2d(x, idx, 2)
            assert str(e.value) == msg
            with pytest.raises(RuntimeError) as e:
                ptl.ops.aten.max_unpool2d_backward(ptl.zeros(2, 3, 8, 8), x, idx, [8, 8])
            assert str(e.value) == msg


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
def test_gradcheck_of_adaptive_max_and_unpool_through_the_emulation(tuning):
    rng = np.random.default_rng(14)
    x = ptl.tensor(rng.standard_normal((2, 3, 7, 6))).requires_grad_(True)
    # distinct indices: with repeats, the value that lands is the last one's alone
    idx = ptl.tensor(np.stack([rng.permutation(56)[:42] for _ in range(6)]).reshape(2, 3, 7, 6))
    with emulated(TUNINGS[tuning]):
        assert ptl.autograd.gradcheck(lambda x: F.adaptive_max_pool2d(x, (4, 5)), (x,))
        assert ptl.autograd.gradcheck(lambda x: F.adaptive_max_pool2d(x, 1), (x,))
        assert ptl.autograd.gradcheck(lambda x: unpool(x, idx, (7, 8)), (x,))
