"""The row kernels of max and average pooling (Note [Pooling rows] in src/aten/native/pool.c):
interior outputs go through one vectorized loop per window column, border outputs through
their window tables.  Shapes here hit both (padding, ceil_mode, dilation, strides 1/2/3, odd
sizes, non-contiguous inputs, size-0 batches); values and indices are compared with a NumPy
float64 walk over each window, NaN and tie rules with PyTorch itself, gradients with gradcheck."""
import re
import warnings

import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn.functional as F
from pytorchlite.autograd import gradcheck
from golden import golden
from helpers import assert_close, make, torch, torch_ref




def out_size(n, k, s, p, d, ceil):
    num = n + 2 * p - d * (k - 1) - 1
    o = (num + (s - 1 if ceil else 0)) // s + 1
    if ceil and (o - 1) * s >= n + p:
        o -= 1
    return o


def windows(n, k, s, p, d, ceil):
    """Valid input indices of each output's window along one dim (in scan order)."""
    return [[i for i in range(o * s - p, o * s - p + d * (k - 1) + 1, d) if 0 <= i < n]
            for o in range(out_size(n, k, s, p, d, ceil))]


def ref_max_pool2d(a, k, s, p, d, ceil):
    """PyTorch's max pooling walked window by window: the first maximum wins, a NaN wins over
    everything and the last NaN over earlier ones; indices are flat h * W + w."""
    H, W = a.shape[-2:]
    wy, wx = windows(H, k[0], s[0], p[0], d[0], ceil), windows(W, k[1], s[1], p[1], d[1], ceil)
    lead = a.shape[:-2]
    flat = a.reshape(-1, H, W).astype(np.float64)
    out = np.empty((flat.shape[0], len(wy), len(wx)))
    idx = np.empty(out.shape, dtype=np.int64)
    for oy, ys in enumerate(wy):
        for ox, xs in enumerate(wx):
            m = np.full(flat.shape[0], -np.inf)
            mi = np.full(flat.shape[0], ys[0] * W + xs[0])
            for y in ys:
                for x in xs:
                    v = flat[:, y, x]
                    take = (v > m) | np.isnan(v)
                    m, mi = np.where(take, v, m), np.where(take, y * W + x, mi)
            out[:, oy, ox], idx[:, oy, ox] = m, mi
    return out.reshape(lead + out.shape[1:]), idx.reshape(lead + out.shape[1:])


def ref_avg_pool2d(a, k, s, p, ceil, include_pad, divisor):
    H, W = a.shape[-2:]
    oh, ow = out_size(H, k[0], s[0], p[0], 1, ceil), out_size(W, k[1], s[1], p[1], 1, ceil)
    flat = a.reshape(-1, H, W).astype(np.float64)
    out = np.empty((flat.shape[0], oh, ow))
    for oy in range(oh):
        y0 = oy * s[0] - p[0]
        y1 = min(y0 + k[0], H + p[0])
        for ox in range(ow):
            x0 = ox * s[1] - p[1]
            x1 = min(x0 + k[1], W + p[1])
            span = (y1 - y0) * (x1 - x0)
            ya, yb, xa, xb = max(y0, 0), min(y1, H), max(x0, 0), min(x1, W)
            win = flat[:, ya:yb, xa:xb]
            div = divisor or (span if include_pad else win.shape[1] * win.shape[2])
            out[:, oy, ox] = win.sum(axis=(1, 2)) / div
    return out.reshape(a.shape[:-2] + (oh, ow))


def ref_avg_pool2d_backward(g, in_shape, k, s, p, ceil, include_pad, divisor):
    H, W = in_shape[-2:]
    gf = g.reshape(-1, *g.shape[-2:]).astype(np.float64)
    gi = np.zeros((gf.shape[0], H, W))
    for oy in range(g.shape[-2]):
        y0 = oy * s[0] - p[0]
        y1 = min(y0 + k[0], H + p[0])
        for ox in range(g.shape[-1]):
            x0 = ox * s[1] - p[1]
            x1 = min(x0 + k[1], W + p[1])
            span = (y1 - y0) * (x1 - x0)
            ya, yb, xa, xb = max(y0, 0), min(y1, H), max(x0, 0), min(x1, W)
            div = divisor or (span if include_pad else (yb - ya) * (xb - xa))
            gi[:, ya:yb, xa:xb] += (gf[:, oy, ox] / div)[:, None, None]
    return gi.reshape(in_shape)


# (shape, kernel, stride, padding, dilation, ceil_mode): interior-only rows, borders from
# padding / ceil_mode / dilation, strides 1, 2, 3 and odd widths
MAX_CASES = [
    ((2, 3, 26, 26), 2, 2, 0, 1, False),
    ((2, 3, 11, 11), 2, 2, 0, 1, False),
    ((2, 3, 11, 11), 2, 2, 0, 1, True),
    ((1, 2, 9, 37), 3, 2, 1, 1, False),
    ((1, 2, 9, 37), 3, 2, 1, 1, True),
    ((2, 2, 8, 21), 3, 1, 1, 1, False),
    ((2, 2, 10, 23), (2, 3), (3, 3), (1, 1), 1, True),
    ((1, 3, 12, 19), 3, 2, 1, 2, False),
    ((3, 7, 15), 2, 2, 0, 1, False),
    ((0, 2, 6, 6), 2, 2, 0, 1, False),
]


def pair(v):
    return (v, v) if isinstance(v, int) else v


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("case", MAX_CASES)
def test_max_pool2d_rows(case, layout, dtype):
    shape, k, s, p, d, ceil = case
    t, a = make(shape, dtype, layout)
    y, i = F.max_pool2d(t, k, s, p, d, ceil_mode=ceil, return_indices=True)
    ry, ri = ref_max_pool2d(a, pair(k), pair(s), pair(p), pair(d), ceil)
    assert_close(y, ry, dtype=dtype)
    np.testing.assert_array_equal(i.numpy(), ri)


@pytest.mark.parametrize("case", MAX_CASES)
def test_max_pool2d_rows_backward(case):
    shape, k, s, p, d, ceil = case
    t, a = make(shape, ptl.float64, "sliced")
    t.requires_grad_()
    y = F.max_pool2d(t, k, s, p, d, ceil_mode=ceil)
    g = ptl.tensor(np.random.default_rng(3).standard_normal(tuple(y.shape)))
    y.backward(g)
    _, ri = ref_max_pool2d(a, pair(k), pair(s), pair(p), pair(d), ceil)
    H, W = shape[-2:]
    gi = np.zeros((int(np.prod(shape[:-2])), H * W))
    per = int(np.prod(ri.shape[-2:]))
    gf, rif = g.numpy().reshape(gi.shape[0], per), ri.reshape(gi.shape[0], per)
    for pl in range(gi.shape[0]):
        np.add.at(gi[pl], rif[pl], gf[pl])
    assert_close(t.grad, gi.reshape(shape), dtype=ptl.float64)


def test_max_pool2d_ties_and_nan_float32():
    # ties inside each 2x2 window and across overlapping 3x3 windows, NaN at the borders
    a = np.array([[1, 1, 2, 2, 0, 5, 5], [1, 1, 2, 2, 0, 5, 5], [3, np.nan, 3, 3, 3, 3, 1],
                  [np.nan, 4, np.nan, 4, 4, 4, 4], [0, 0, 0, 0, 0, 0, np.nan]], np.float32)
    a = np.broadcast_to(a, (2, 3) + a.shape).copy()
    for k, s, p, ceil in [(2, 2, 0, True), (3, 2, 1, False), (3, 1, 1, True), (2, 1, 0, False)]:
        y, i = F.max_pool2d(ptl.tensor(a), k, s, p, ceil_mode=ceil, return_indices=True)
        ry, ri = ref_max_pool2d(a, (k, k), (s, s), (p, p), (1, 1), ceil)
        assert_close(y, ry, dtype=ptl.float32)
        np.testing.assert_array_equal(i.numpy(), ri)


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
@pytest.mark.parametrize("hw", [(2, 2), (3, 3), (26, 26), (11, 40), (7, 33), (64, 17)])
def test_max_pool2d_2x2_path(hw, dtype, threads):
    # Note [2x2 max pooling]: kernel 2, stride 2, no padding; small integers make ties in
    # every window position, with NaN and -inf sprinkled in, on 1 and 2 threads over planes
    rng = np.random.default_rng(hw[0] * 100 + hw[1])
    a = rng.integers(-2, 3, (5, 7) + hw).astype(np.float64)
    a[rng.random(a.shape) < 0.05] = np.nan
    a[rng.random(a.shape) < 0.05] = -np.inf
    a[0, 0] = -np.inf
    a[0, 1] = np.nan
    x = ptl.tensor(a).to(dtype)
    y, i = F.max_pool2d(x, 2, return_indices=True)
    ry, ri = ref_max_pool2d(a, (2, 2), (2, 2), (0, 0), (1, 1), False)
    assert_close(y, ry, dtype=dtype, equal_nan=True)
    np.testing.assert_array_equal(i.numpy(), ri)
    y3, i3 = F.max_pool3d(x.unsqueeze(2), (1, 2, 2), return_indices=True)
    np.testing.assert_array_equal(i3.squeeze(2).numpy(), ri)


def test_max_pool2d_ties_nan_match_torch():
    a = np.array([[1, 1, 2, 2, 0, 5, 5, 5, 5], [1, 1, 2, 2, 0, 5, 5, 5, 5],
                  [3, np.nan, 3, 3, 3, 3, 1, np.nan, np.nan], [np.nan, 4, np.nan, 4, 4, 4, 4, 1, 1],
                  [-np.inf, -np.inf, 0, 0, 0, 0, np.nan, 7, 7]], np.float32)
    a = np.broadcast_to(a, (2, 2) + a.shape).copy()
    for k, s, p, ceil in [(2, 2, 0, True), (3, 2, 1, False), (3, 1, 1, True), (2, 1, 0, False)]:
        def pool(lib, functional):
            x = lib.tensor(a).requires_grad_()
            y, i = functional.max_pool2d(x, k, s, p, ceil_mode=ceil, return_indices=True)
            g = np.random.default_rng(0).standard_normal(tuple(y.shape)).astype(np.float32)
            y.backward(lib.tensor(g))
            return y.detach().tolist(), i.tolist(), x.grad.tolist()
        y, i, grad = pool(ptl, F)
        ty, ti, tgrad = golden(lambda: pool(torch, torch.nn.functional))
        np.testing.assert_array_equal(np.array(y), np.array(ty))
        np.testing.assert_array_equal(np.array(i), np.array(ti))
        np.testing.assert_allclose(np.array(grad), np.array(tgrad), rtol=1e-6, atol=1e-6)


# (shape, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
AVG_CASES = [
    ((2, 3, 26, 26), 2, 2, 0, False, True, None),
    ((2, 3, 11, 13), 3, 2, 1, True, True, None),
    ((2, 3, 11, 13), 3, 2, 1, True, False, None),
    ((1, 2, 9, 37), 3, 1, 1, False, False, None),
    ((1, 2, 10, 23), (2, 3), (3, 3), (1, 1), True, True, None),
    ((2, 2, 9, 17), 3, 2, 1, False, True, 5),
    ((3, 7, 15), 2, 2, 0, True, False, None),
    ((0, 2, 6, 6), 2, 2, 0, False, True, None),
]


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("case", AVG_CASES)
def test_avg_pool2d_rows(case, layout, dtype):
    shape, k, s, p, ceil, inc, div = case
    t, a = make(shape, dtype, layout)
    y = F.avg_pool2d(t, k, s, p, ceil, inc, div)
    assert_close(y, ref_avg_pool2d(a, pair(k), pair(s), pair(p), ceil, inc, div), dtype=dtype)


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
@pytest.mark.parametrize("case", AVG_CASES)
def test_avg_pool2d_rows_backward(case, dtype):
    shape, k, s, p, ceil, inc, div = case
    t, a = make(shape, dtype, "transposed")
    t.requires_grad_()
    y = F.avg_pool2d(t, k, s, p, ceil, inc, div)
    g = np.random.default_rng(4).standard_normal(tuple(y.shape))
    y.backward(ptl.tensor(g, dtype=dtype))
    ref = ref_avg_pool2d_backward(g, shape, pair(k), pair(s), pair(p), ceil, inc, div)
    assert_close(t.grad, ref, dtype=dtype)


GRAD_CASES = [((1, 2, 6, 9), 2, 2, 0, False), ((1, 2, 7, 9), 3, 2, 1, True),
              ((2, 5, 8), 3, 1, 1, False)]


@pytest.mark.parametrize("case", GRAD_CASES)
def test_pool2d_rows_gradcheck(case):
    shape, k, s, p, ceil = case
    # distinct values: the max is unique, so finite differences see one winner per window
    t = ptl.tensor(np.random.default_rng(5).permutation(int(np.prod(shape))).reshape(shape)
                   .astype(np.float64) / 7.0)
    t = t.transpose(-1, -2).contiguous().transpose(-1, -2).requires_grad_()
    assert ptl.autograd.gradcheck(lambda v: F.max_pool2d(v, k, s, p, ceil_mode=ceil), (t,))
    assert ptl.autograd.gradcheck(lambda v: F.avg_pool2d(v, k, s, p, ceil), (t,))
    assert ptl.autograd.gradgradcheck(lambda v: F.avg_pool2d(v, k, s, p, ceil), (t,))


@torch_ref
def test_max_pool3d_shares_rows():
    x = np.random.default_rng(6).standard_normal((2, 2, 5, 9, 11)).astype(np.float32)
    for k, s, p, d in [(2, 2, 0, 1), (3, 2, 1, 1), (3, 1, 1, 2)]:
        y, i = F.max_pool3d(ptl.tensor(x), k, s, p, d, return_indices=True)
        ty, ti = torch.nn.functional.max_pool3d(torch.tensor(x), k, s, p, d, return_indices=True)
        np.testing.assert_array_equal(y.numpy(), ty.numpy())
        np.testing.assert_array_equal(i.numpy(), ti.numpy())
        z = F.avg_pool3d(ptl.tensor(x), k, s, p)
        tz = torch.nn.functional.avg_pool3d(torch.tensor(x), k, s, p)
        np.testing.assert_allclose(z.numpy(), tz.numpy(), rtol=1e-6, atol=1e-6)


def test_adaptive_pools_have_no_interior():
    # adaptive windows take the table path for every output
    x, a = make((2, 3, 10, 13), ptl.float64)
    y = F.adaptive_max_pool2d(x, (4, 5))
    ry = np.empty((2, 3, 4, 5))
    for oy in range(4):
        for ox in range(5):
            ya, yb = oy * 10 // 4, -(-(oy + 1) * 10 // 4)
            xa, xb = ox * 13 // 5, -(-(ox + 1) * 13 // 5)
            ry[:, :, oy, ox] = a[:, :, ya:yb, xa:xb].max(axis=(2, 3))
    assert_close(y, ry, dtype=ptl.float64)


# ---- global and evenly dividing adaptive pooling (Note [Global average pooling]) ----

WIDE_WINDOW = 16   # pool_impl.h: adaptive windows at least this wide are summed one at a time

# planes of H * W values around the float32 sum's 16 lanes and 256-value blocks
GLOBAL_PLANES = [(1, 1), (3, 5), (4, 4), (1, 17), (15, 17), (16, 16), (1, 257), (33, 31)]


def bits(t):
    return np.ascontiguousarray(t.detach().numpy()).tobytes()


@pytest.mark.parametrize("hw", GLOBAL_PLANES, ids=str)
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64, ptl.float16], ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_global_average_pooling(hw, dtype, layout, threads):
    x, a = make((3, 5) + hw, dtype, layout, seed=hw[0] * 100 + hw[1])
    a = a.astype(np.float64)
    y = F.adaptive_avg_pool2d(x, 1)
    tol = {ptl.float16: 2e-3, ptl.float32: 1e-6}.get(dtype, 1e-14)
    assert y.shape == (3, 5, 1, 1) and y.dtype == dtype
    np.testing.assert_allclose(y.double().numpy(), a.mean(axis=(2, 3), keepdims=True),
                               rtol=tol, atol=tol)
    # the backward spreads g / (H * W): the bits of the windowed path (a full-size kernel)
    xr = x.detach().requires_grad_()
    g = ptl.tensor(np.random.default_rng(1).standard_normal((3, 5, 1, 1)), dtype=dtype)
    (gx,) = ptl.autograd.grad(F.adaptive_avg_pool2d(xr, 1), xr, g)
    (gw,) = ptl.autograd.grad(F.avg_pool2d(xr, hw), xr, g)
    assert bits(gx) == bits(gw)
    np.testing.assert_allclose(gx.double().numpy(), np.broadcast_to(
        g.double().numpy() / (hw[0] * hw[1]), a.shape), rtol=tol, atol=tol)


def lane_mean(v):
    """pool.c's window_sum of one row of fewer than 256 values, in Python: sixteen double lanes
    (value i into lane i % 16, in order), folded as ((0+8)+(1+9)) + ..., divided once"""
    acc = [0.0] * 16
    for i, x in enumerate(v.astype(np.float64)):
        acc[i % 16] += x
    lo = [acc[k] + acc[k + 8] for k in range(8)]
    return ((lo[0] + lo[1]) + (lo[2] + lo[3])) + ((lo[4] + lo[5]) + (lo[6] + lo[7]))


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64], ids=str)
def test_global_average_pooling_bits_every_tail(dtype, threads):
    """Every row tail length 0..15 after 0-3 full lane rounds (the zero-padded tail of
    Note [Global average pooling]), ResNet heads' 7 x 7 and 8 x 8 planes among them: the
    exact bits of the lane sums, a -0 plane's mean is +0 as before"""
    rng = np.random.default_rng(7)
    for n in range(1, 64):
        a = (rng.standard_normal((2, 3, 1, n)) * 10.0 ** rng.integers(-3, 4, n)).astype(
            np.float32 if dtype == ptl.float32 else np.float64)
        a[1, 2] = -0.0
        y = F.adaptive_avg_pool2d(ptl.tensor(a), 1).numpy().reshape(6)
        ref = [lane_mean(r) / n for r in a.reshape(6, n)]
        np.testing.assert_array_equal(y, np.array(ref).astype(y.dtype), err_msg=f"n={n}")
        assert not np.signbit(y[5])
    for hw in [(7, 7), (8, 8)]:
        a = rng.standard_normal((4, 64) + hw).astype(np.float32)
        y = F.adaptive_avg_pool2d(ptl.tensor(a), 1).numpy().reshape(-1)
        ref = [lane_mean(r) / r.size for r in a.reshape(256, -1)]
        np.testing.assert_array_equal(y, np.array(ref, np.float32))


def block_mean(v):
    """window_sum of one float32 row in Python: blocks of 256 values summed in 32 float32
    lanes (value b + k of the block into lane k, b a multiple of 32), lanes k and k + 16 then
    added in double into double lane k; the rest sixteen at a time and the tail into the
    double lanes (lane_mean's), folded as lane_mean; divided once"""
    v = np.asarray(v, np.float32)
    acc, i = [0.0] * 16, 0
    while i + 256 <= v.size:
        part = np.zeros(32, np.float32)
        for b in range(0, 256, 32):
            part = part + v[i + b:i + b + 32]
        for k in range(16):
            acc[k] += float(part[k]) + float(part[k + 16])
        i += 256
    for j, x in enumerate(v[i:]):
        acc[j % 16] += float(x)
    lo = [acc[k] + acc[k + 8] for k in range(8)]
    total = ((lo[0] + lo[1]) + (lo[2] + lo[3])) + ((lo[4] + lo[5]) + (lo[6] + lo[7]))
    return total / v.size


@pytest.mark.parametrize("n", [256, 257, 271, 511, 512, 513, 1024, 1024 + 255, 4096 + 17])
def test_global_average_pooling_float_blocks_bits(n, threads):
    """window_sum's 256-value float32 blocks (Note [Global average pooling]): the exact bits
    of block_mean, at and across one, two, four and sixteen blocks, with every kind of tail,
    values over seven decades so that the float lanes round"""
    rng = np.random.default_rng(n)
    a = (rng.standard_normal((3, 2, 1, n)) * 10.0 ** rng.integers(-3, 4, n)).astype(np.float32)
    y = F.adaptive_avg_pool2d(ptl.tensor(a), 1).numpy().reshape(-1)
    ref = np.array([block_mean(r) for r in a.reshape(6, n)], np.float32)
    np.testing.assert_array_equal(y, ref)
    t = ptl.tensor(a.reshape(3, 2, 2, n // 2) if n % 2 == 0 else a)
    np.testing.assert_array_equal(F.adaptive_avg_pool2d(t, 1).numpy().reshape(-1), ref)


def test_global_average_pooling_small_planes_four_at_a_time(threads):
    """Note [Small planes four at a time]: float32 planes of fewer than 256 values go four at a
    time, the tail one masked load a vector: every tail length after 0-15 lane rounds, around
    the 256-value threshold, plane counts around the fours (the input ending right after the
    last plane's tail), and a NaN or inf in the next plane never reaching a plane's tail; the
    bits of the lane sums"""
    rng = np.random.default_rng(8)
    for n in list(range(1, 80)) + [127, 128, 129, 240, 241, 250, 255, 256, 257]:
        for planes in [1, 2, 3, 4, 5, 7]:
            a = (rng.standard_normal((planes, 1, 1, n)) * 10.0 ** rng.integers(-3, 4, n)).astype(
                np.float32)
            y = F.adaptive_avg_pool2d(ptl.tensor(a), 1).numpy().reshape(-1)
            if n < 256:
                ref = [lane_mean(r) / n for r in a.reshape(planes, n)]
                np.testing.assert_array_equal(y, np.array(ref, np.float32), err_msg=f"n={n}")
            else:   # window_sum's float blocks: within 1e-6 of the mean of |a|
                w = a.astype(np.float64)
                np.testing.assert_allclose(y, w.mean((1, 2, 3)), rtol=1e-6,
                                           atol=1e-6 * np.abs(w).mean())
        b = rng.standard_normal((5, 1, 1, n)).astype(np.float32)
        b[1, 0, 0, 0], b[3, 0, 0, -1], b[4, 0, 0, 0] = np.nan, np.inf, -np.inf
        y = F.adaptive_avg_pool2d(ptl.tensor(b), 1).numpy().reshape(-1)
        assert np.isfinite(y[[0, 2]]).all() and np.isnan(y[1])
        assert y[3] == np.inf and y[4] == -np.inf


def column_mean(a):
    """Note [Channels-last global average pooling] in Python: the column means of the rows of
    a (rows x columns), float32 rows summed COL_GROUP at a time in float32 and the groups'
    sums added in double (float64 rows: in double, in order), divided once in double"""
    acc = np.zeros(a.shape[1])
    for g in range(0, a.shape[0], COL_GROUP if a.dtype == np.float32 else 1):
        part = np.zeros(a.shape[1], a.dtype)
        for row in a[g:g + (COL_GROUP if a.dtype == np.float32 else 1)]:
            part += row
        acc += part.astype(np.float64)
    return (acc / a.shape[0]).astype(a.dtype)


def channels_last_means(a):
    """column_mean of each sample of the (N, C, H, W) array a read as H W x C"""
    n, c = a.shape[:2]
    return np.array([column_mean(s.reshape(c, -1).T) for s in a], a.dtype).reshape(n, c)


COL_GROUP = 32      # reduce_kernels.h's PTL_RED_COL_GROUP: float32 rows summed in float
COL_BLOCK = 2048    # PTL_RED_COL_BLOCK: columns summed at once


@pytest.mark.parametrize("hw", [(3, 5), (7, 7), (8, 8)], ids=str)
def test_global_average_pooling_small_planes_split_and_layouts(hw):
    """Planes split between 2 threads at twice the grain (32768 // (n + 1) + 1 planes), in
    chunks that are no multiple of four, and transposed inputs: the bits of one thread and of
    the contiguous input; channels_last inputs the bits of their column sums on both"""
    n = hw[0] * hw[1]
    planes = 2 * (32768 // (n + 1) + 1) + 1
    x = ptl.tensor(np.random.default_rng(9).standard_normal((1, planes) + hw).astype(np.float32))
    ref = np.array([lane_mean(r) / n for r in x.numpy().reshape(planes, n)], np.float32)
    cl_ref = channels_last_means(x.numpy()).reshape(-1)
    old = ptl.get_num_threads()
    try:
        for nt in [1, 2]:
            ptl.set_num_threads(nt)
            for v in [x, x.transpose(2, 3).contiguous().transpose(2, 3)]:
                y = F.adaptive_avg_pool2d(v, 1).numpy().reshape(-1)
                np.testing.assert_array_equal(y, ref)
            y = F.adaptive_avg_pool2d(x.contiguous(memory_format=ptl.channels_last), 1)
            np.testing.assert_array_equal(y.numpy().reshape(-1), cl_ref)
    finally:
        ptl.set_num_threads(old)


# (N, C, H, W): a 1 x 1 plane, rows around the float group (31-33, 64, 65), channels around
# the vectors, the rows kept in registers (8 to 64 in eights) and a column block (2, 3, 8,
# 31-33, 64, 72, COL_BLOCK + 3), an empty batch, and a split
# between two threads inside a sample (3 x 700 planes of 49 over a grain of 656)
CHANNELS_LAST_CASES = [(2, 5, 1, 1), (3, 7, 1, 31), (2, 33, 4, 8), (2, 32, 3, 11),
                       (4, 31, 8, 8), (2, 2, 5, 13), (2, 3, 9, 9), (1, 16, 13, 5), (2, 8, 5, 7),
                       (2, 64, 3, 3), (2, 72, 2, 17),
                       (0, 8, 4, 4), (2, COL_BLOCK + 3, 2, 3), (3, 700, 7, 7)]


@pytest.mark.parametrize("shape", CHANNELS_LAST_CASES, ids=str)
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64], ids=str)
def test_global_average_pooling_channels_last(shape, dtype, threads):
    """Note [Channels-last global average pooling]: a channels-last input is summed by
    columns in its own layout: the bits of column_mean (and of x.mean((2, 3)) from 16
    channels on), within one rounding of NumPy's float64 means; its gradient comes back
    channels_last, the bits of the NCHW backward"""
    x, a = make(shape, dtype, seed=sum(shape))
    xc = x.contiguous(memory_format=ptl.channels_last)
    y = F.adaptive_avg_pool2d(xc, 1)
    assert y.shape == shape[:2] + (1, 1) and y.dtype == dtype
    np.testing.assert_array_equal(y.numpy().reshape(shape[:2]), channels_last_means(a))
    if shape[1] >= 16:   # where the reduction sums by columns (reduce.c)
        assert bits(y) == bits(xc.mean((2, 3), keepdim=True))
    tol = 2e-7 if dtype == ptl.float32 else 1e-15
    np.testing.assert_allclose(y.double().numpy(), a.astype(np.float64).mean(
        (2, 3), keepdims=True), rtol=tol, atol=tol * np.abs(a).max(initial=0))
    g = ptl.tensor(np.random.default_rng(2).standard_normal(shape[:2] + (1, 1)), dtype=dtype)
    xr = xc.detach().requires_grad_()
    (gx,) = ptl.autograd.grad(F.adaptive_avg_pool2d(xr, 1), xr, g)
    xn = x.detach().requires_grad_()
    (gn,) = ptl.autograd.grad(F.adaptive_avg_pool2d(xn, 1), xn, g)
    assert gx.is_contiguous(memory_format=ptl.channels_last) or x.numel() == 0
    np.testing.assert_array_equal(gx.numpy(), gn.numpy())
    ref = np.broadcast_to(g.double().numpy() / (shape[2] * shape[3]), shape)
    np.testing.assert_allclose(gx.double().numpy(), ref, rtol=tol, atol=0)


def test_global_average_pooling_channels_last_other_inputs(threads):
    """What the channels-last kernel does not read directly goes through the NCHW copy: a
    sliced channels_last view, a float16 channels_last input; one channel is NCHW's layout
    too (suggest_memory_format: contiguous), so it keeps the NCHW bits; the float64 gradient
    of a channels_last input passes gradcheck"""
    one, _ = make((3, 1, 5, 13), ptl.float32, seed=3)
    assert bits(F.adaptive_avg_pool2d(one.contiguous(memory_format=ptl.channels_last), 1)) == \
        bits(F.adaptive_avg_pool2d(one, 1))
    x, a = make((3, 6, 10, 8), ptl.float32, seed=4)
    v = x.contiguous(memory_format=ptl.channels_last)[:, 1:5, ::2, 1:]
    ref = a[:, 1:5, ::2, 1:].astype(np.float64).mean((2, 3), keepdims=True)
    np.testing.assert_allclose(F.adaptive_avg_pool2d(v, 1).numpy(), ref, rtol=2e-7, atol=1e-7)
    h = x.half().contiguous(memory_format=ptl.channels_last)
    np.testing.assert_allclose(F.adaptive_avg_pool2d(h, 1).double().numpy(),
                               a.astype(np.float16).astype(np.float64).mean(
                                   (2, 3), keepdims=True), rtol=2e-3, atol=2e-3)
    xd, _ = make((2, 5, 3, 4), ptl.float64, seed=6)
    xr = xd.contiguous(memory_format=ptl.channels_last).requires_grad_()
    assert ptl.autograd.gradcheck(lambda t: F.adaptive_avg_pool2d(t, 1), (xr,))
    assert ptl.autograd.gradgradcheck(lambda t: F.adaptive_avg_pool2d(t, 1), (xr,))


def test_global_pooling_of_3d_and_1d_inputs():
    x, a = make((4, 6, 9), ptl.float64, seed=5)
    np.testing.assert_allclose(F.adaptive_avg_pool2d(x, (1, 1)).numpy(),
                               a.mean(axis=(1, 2), keepdims=True), rtol=1e-14)
    np.testing.assert_allclose(F.adaptive_avg_pool1d(x, 1).numpy(),
                               a.mean(axis=2, keepdims=True), rtol=1e-14)
    y, i = F.adaptive_max_pool1d(x, 1, return_indices=True)
    np.testing.assert_array_equal(y.numpy(), a.max(axis=2, keepdims=True))
    np.testing.assert_array_equal(i.numpy(), a.argmax(axis=2)[..., None])
    xr = x.detach().requires_grad_()
    assert ptl.autograd.gradcheck(lambda v: F.adaptive_avg_pool2d(v, 1), (xr[:2, :3, :4],))
    assert ptl.autograd.gradcheck(lambda v: F.adaptive_max_pool2d(v, 1), (xr[:2, :3, :4],))


@pytest.mark.parametrize("hw", GLOBAL_PLANES, ids=str)
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64], ids=str)
def test_global_max_pooling_matches_the_window_walk(hw, dtype, threads):
    """The first maximum, the last NaN, an all -inf plane: values and indices of a max_pool2d
    whose window is the whole plane."""
    n = hw[0] * hw[1]
    a = np.random.default_rng(n).standard_normal((6, n))
    a[1, n // 3] = a[1, n - 1] = 9.0                 # a tie: the first wins
    a[2, n // 2] = np.nan                            # NaN after the maximum
    a[3, 0] = a[3, n - 1] = np.nan                   # two NaNs: the last wins
    a[4] = -np.inf
    x = ptl.tensor(a.reshape((2, 3) + hw), dtype=dtype)
    y, i = F.adaptive_max_pool2d(x, 1, return_indices=True)
    wy, wi = F.max_pool2d(x, hw, return_indices=True)
    assert bits(y) == bits(wy)
    np.testing.assert_array_equal(i.numpy(), wi.numpy())
    flat = i.numpy().reshape(6)
    assert flat[1] == (n // 3 if n > 1 else 0)
    assert flat[2] == (n // 2 if n > 1 else 0) and flat[3] == n - 1 and flat[4] == 0


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64], ids=str)
def test_adaptive_pools_dividing_the_input_equal_strided_pools(dtype, threads):
    # an output size that divides the input's gives k x k windows at stride k: the same bits
    # as avg_pool2d / max_pool2d (values and indices) and the same gradients (windows under
    # WIDE_WINDOW: the wider ones sum in double, test_adaptive_avg_wide_windows)
    x, _ = make((2, 3, 12, 18), dtype, seed=9)
    for out in [(1, 2), (2, 3), (3, 6), (4, 9), (6, 18), (12, 1)]:
        k = (12 // out[0], 18 // out[1])
        if k[1] < WIDE_WINDOW:
            assert bits(F.adaptive_avg_pool2d(x, out)) == bits(F.avg_pool2d(x, k))
        else:
            assert_close(F.adaptive_avg_pool2d(x, out), F.avg_pool2d(x, k).numpy(), dtype=dtype)
        y, i = F.adaptive_max_pool2d(x, out, return_indices=True)
        wy, wi = F.max_pool2d(x, k, return_indices=True)
        assert bits(y) == bits(wy)
        np.testing.assert_array_equal(i.numpy(), wi.numpy())
        xr = x.detach().requires_grad_()
        g = ptl.ones(2, 3, *out, dtype=dtype)
        assert bits(ptl.autograd.grad(F.adaptive_avg_pool2d(xr, out), xr, g)[0]) == \
            bits(ptl.autograd.grad(F.avg_pool2d(xr, k), xr, g)[0])


# (H, W, output size): the narrowest window just below, at and above WIDE_WINDOW, windows of
# unequal widths (W not divisible), a 256-value row block and a tall narrow output
WIDE_CASES = [(32, 30, (2, 2)), (32, 31, (2, 2)), (32, 32, (2, 2)), (17, 33, (1, 2)),
              (7, 34, (3, 2)), (5, 300, (2, 1)), (40, 48, (5, 3)), (9, 600, (1, 2))]


@pytest.mark.parametrize("case", WIDE_CASES, ids=str)
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64, ptl.float16], ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_adaptive_avg_wide_windows(case, dtype, layout, threads):
    """Note [Global average pooling]: wide adaptive windows summed in double lanes, one
    window at a time, against NumPy's float64 window means; the backward is unchanged"""
    h, w, out = case
    x, a = make((3, 4, h, w), dtype, layout, seed=h * 1000 + w)
    a = a.astype(np.float64)
    ref = np.empty((3, 4) + out)
    for oy in range(out[0]):
        for ox in range(out[1]):
            ya, yb = oy * h // out[0], -(-(oy + 1) * h // out[0])
            xa, xb = ox * w // out[1], -(-(ox + 1) * w // out[1])
            ref[:, :, oy, ox] = a[:, :, ya:yb, xa:xb].mean(axis=(2, 3))
    y = F.adaptive_avg_pool2d(x, out)
    assert y.shape == (3, 4) + out and y.dtype == dtype
    # one rounding of a double sum (float16: of the float32 work value, then to half)
    tol = {ptl.float16: 1e-3, ptl.float32: 1.2e-7}.get(dtype, 1e-15)
    np.testing.assert_allclose(y.double().numpy(), ref, rtol=tol, atol=tol * np.abs(a).max())
    xr = x.detach().requires_grad_()
    g = ptl.ones(3, 4, *out, dtype=dtype)
    (gx,) = ptl.autograd.grad(F.adaptive_avg_pool2d(xr, out), xr, g)
    cnt = np.zeros((h, w))   # overlapping windows (W not divisible) add up
    for oy in range(out[0]):
        for ox in range(out[1]):
            ya, yb = oy * h // out[0], -(-(oy + 1) * h // out[0])
            xa, xb = ox * w // out[1], -(-(ox + 1) * w // out[1])
            cnt[ya:yb, xa:xb] += 1 / ((yb - ya) * (xb - xa))
    np.testing.assert_allclose(gx.double().numpy(), np.broadcast_to(cnt, a.shape), rtol=tol)


# (H, W, output size) of narrow adaptive windows (Note [Adaptive average rows]): overlapping
# windows of two widths (7 from 32, 9, 13, 55), small outputs, a wide output of 1-value
# windows, outputs larger than the input (repeated values), one row or column
ADAPTIVE_CASES = [(32, 32, (7, 7)), (9, 9, (7, 7)), (13, 13, (7, 7)), (55, 55, (7, 7)),
                  (10, 10, (3, 3)), (5, 7, (3, 4)), (3, 17, (5, 16)), (16, 15, (7, 15)),
                  (1, 1, (3, 3)), (2, 3, (5, 7)), (1, 40, (1, 9)), (33, 1, (8, 1))]


def window_walk_ref(a, out, np_dtype):
    """Each output's window summed value after value in row-major order in np_dtype, then
    divided there by its count: the window walk's arithmetic"""
    h, w = a.shape[-2:]
    ref = np.empty(a.shape[:-2] + out, dtype=np_dtype)
    for oy in range(out[0]):
        ya, yb = oy * h // out[0], -(-(oy + 1) * h // out[0])
        for ox in range(out[1]):
            xa, xb = ox * w // out[1], -(-(ox + 1) * w // out[1])
            acc = np.zeros(a.shape[:-2], dtype=np_dtype)
            for r in range(ya, yb):
                for c in range(xa, xb):
                    acc = (acc + a[..., r, c]).astype(np_dtype)
            ref[..., oy, ox] = acc / np_dtype((yb - ya) * (xb - xa))
    return ref


@pytest.mark.parametrize("case", ADAPTIVE_CASES, ids=str)
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64, ptl.float16, ptl.bfloat16],
                         ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_adaptive_avg_narrow_windows(case, dtype, layout, threads):
    """Note [Adaptive average rows]: the window walk's sums in the work dtype (float32 for
    the half types), bit for bit, and NumPy's float64 window means within a few ulp"""
    h, w, out = case
    x, a = make((3, 5, h, w), dtype, layout, seed=h * 1000 + w)
    y = F.adaptive_avg_pool2d(x, out)
    assert y.shape == (3, 5) + out and y.dtype == dtype
    a = x.double().numpy()
    work = np.float64 if dtype == ptl.float64 else np.float32
    ref = ptl.tensor(window_walk_ref(a.astype(work), out, work)).to(dtype)
    if dtype == ptl.bfloat16:                # NumPy has no bfloat16: its bits as int16
        y, ref = y.view(ptl.int16), ref.view(ptl.int16)
    assert bits(y) == bits(ref)
    tol = {ptl.float16: 1e-3, ptl.bfloat16: 8e-3, ptl.float32: 1e-6}.get(dtype, 1e-14)
    y = F.adaptive_avg_pool2d(x, out)
    np.testing.assert_allclose(y.double().numpy(), window_walk_ref(a, out, np.float64),
                               rtol=tol, atol=tol * np.abs(a).max())
    assert bits(F.adaptive_avg_pool2d(x[1], out).double()) == bits(y[1].double())


def test_adaptive_avg_wide_windows_thread_bits():
    """The planes are split over the threads; a window's sum is one plane's business"""
    x, _ = make((64, 40, 32, 32), ptl.float32, seed=3)
    old = ptl.get_num_threads()
    try:
        ptl.set_num_threads(1)
        one = bits(F.adaptive_avg_pool2d(x, 2))
        ptl.set_num_threads(2)
        two = bits(F.adaptive_avg_pool2d(x, 2))
    finally:
        ptl.set_num_threads(old)
    assert one == two


def test_pool_errors_unchanged():
    x = ptl.zeros(1, 1, 4, 4)
    with pytest.raises(RuntimeError, match=re.escape(
            "pad should be at most half of effective kernel size, but got pad=2, kernel_size=2 "
            "and dilation=1")):
        F.max_pool2d(x, 2, 2, 2)
    with pytest.raises(RuntimeError, match=re.escape("divisor must be not zero")):
        F.avg_pool2d(x, 2, divisor_override=0)


# (input shape, kernel, stride, padding, dilation, ceil_mode) for the backward's scatter
SCATTER_CASES = [
    ((4, 8, 26, 26), 2, 2, 0, 1, False),    # the small CNN's pooling: disjoint windows
    ((3, 5, 27, 25), 2, 2, 0, 1, True),     # odd sides, ceil_mode's partial windows
    ((3, 5, 27, 25), 2, 2, 0, 1, False),    # odd sides, a row and a column uncovered
    ((2, 6, 17, 19), 3, 1, 1, 1, False),    # overlapping windows: sums in output order
    ((2, 6, 17, 19), 3, 2, 1, 2, True),     # dilation, padding and ceil_mode
    ((700, 9, 9), 3, 2, 0, 1, False),       # many small planes (a 3-D input)
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", SCATTER_CASES)
def test_max_pool2d_backward_bits(case, dtype, threads):
    """Note [Max pooling backward]: each plane of grad_input is zeroed and added into in
    output order, so the result is NumPy's unbuffered np.add.at in the same dtype bit for bit
    (ties, NaN maxima, -0.0 gradients, on 1 and 2 threads splitting the planes)."""
    shape, k, s, p, d, ceil = case
    rng = np.random.default_rng(sum(shape))
    a = rng.integers(-2, 3, shape).astype(dtype)
    a[rng.random(shape) < 0.03] = np.nan
    x = ptl.tensor(a)
    y, i = F.max_pool2d(x, k, s, p, d, ceil_mode=ceil, return_indices=True)
    g = rng.standard_normal(tuple(y.shape)).astype(dtype)
    g[rng.random(g.shape) < 0.05] = -0.0
    gi = ptl.ops.aten.max_pool2d_with_indices_backward(
        ptl.tensor(g), x, [k, k], [s, s], [p, p], [d, d], ceil, i).numpy()
    H, W = shape[-2:]
    ref = np.zeros((int(np.prod(shape[:-2])), H * W), dtype)
    gf, ix = g.reshape(ref.shape[0], -1), i.numpy().reshape(ref.shape[0], -1)
    for pl in range(ref.shape[0]):
        np.add.at(ref[pl], ix[pl], gf[pl])
    np.testing.assert_array_equal(gi.reshape(ref.shape).view(np.uint8), ref.view(np.uint8))
    if dtype == np.float32:
        t = ptl.tensor(a).requires_grad_(True)
        F.max_pool2d(t, k, s, p, d, ceil_mode=ceil).backward(ptl.tensor(g))
        np.testing.assert_array_equal(t.grad.numpy().view(np.uint8),
                                      gi.view(np.uint8))


@pytest.mark.parametrize("bad", [-1, 81, 10 ** 12])
def test_max_pool2d_backward_index_checked_in_every_plane(bad, threads):
    """Each index is checked as the scatter uses it: a bad one in the last plane (the second
    thread's) raises PyTorch's IndexError with its message, and nothing leaks."""
    x = ptl.tensor(np.random.default_rng(1).standard_normal((64, 9, 9)).astype(np.float32))
    y, i = F.max_pool2d(x, 3, return_indices=True)
    idx = i.numpy().copy()
    idx[-1, 2, 1] = bad
    with pytest.raises(IndexError, match=rf"^index {bad} is out of bounds for an input plane "
                                         r"of 81 elements$"):
        ptl.ops.aten.max_pool2d_with_indices_backward(ptl.ones_like(y), x, [3, 3], [3, 3],
                                                      [0, 0], [1, 1], False, ptl.tensor(idx))


# ---- complex adaptive average pooling: one bin (a mean) or an empty output, as PyTorch's ----

CDTYPES = [ptl.complex64, ptl.complex128]


def complex_input(shape, dtype, layout, seed=0):
    """A complex tensor of these sizes and its values; transposed: a permuted view."""
    gen = np.random.default_rng(seed)
    a = gen.standard_normal(shape) + 1j * gen.standard_normal(shape)
    if layout == "transposed" and len(shape) > 1:
        t = ptl.tensor(np.ascontiguousarray(a.T), dtype=dtype)
        return t.permute(*reversed(range(len(shape)))), a
    return ptl.tensor(a, dtype=dtype), a


@pytest.mark.parametrize("dtype", CDTYPES, ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 5), (2, 3, 4, 5), (1, 2, 3, 4, 5), (2, 0, 3)],
                         ids=str)
def test_complex_adaptive_avg_pool_to_one_bin_is_the_mean(shape, dtype, layout):
    x, a = complex_input(shape, dtype, layout)
    tol = 1e-6 if dtype == ptl.complex64 else 1e-13
    with warnings.catch_warnings():   # the mean of an empty slice: nan, as ours
        warnings.simplefilter("ignore", RuntimeWarning)
        want2 = a.mean(axis=(-1, -2), keepdims=True)
        want1 = a.mean(axis=-1, keepdims=True)
        want3 = a.mean(axis=(-1, -2, -3), keepdims=True) if len(shape) >= 3 else None
    y = F.adaptive_avg_pool2d(x, 1)
    assert y.dtype == dtype
    np.testing.assert_allclose(y.numpy(), want2, rtol=tol, atol=tol)
    if 0 not in shape and len(shape) >= 3:   # None keeps a size, here 1
        np.testing.assert_allclose(F.adaptive_avg_pool2d(x[..., :1, :], (None, 1)).numpy(),
                                   a[..., :1, :].mean(axis=-1, keepdims=True), rtol=tol,
                                   atol=tol)
    elif len(shape) == 2:   # PyTorch's _list_with_default: two sizes need a 3-d input
        with pytest.raises(ValueError, match="^Input dimension should be at least 3$"):
            F.adaptive_avg_pool2d(x[..., :1, :], (None, 1))
    if len(shape) in (2, 3):
        np.testing.assert_allclose(F.adaptive_avg_pool1d(x, 1).numpy(), want1, rtol=tol, atol=tol)
    if len(shape) >= 3:
        np.testing.assert_allclose(F.adaptive_avg_pool3d(x, 1).numpy(), want3, rtol=tol,
                                   atol=tol)


@pytest.mark.parametrize("dtype", CDTYPES, ids=str)
def test_complex_adaptive_avg_pool_empty_outputs(dtype):
    x, _ = complex_input((2, 3, 4), dtype, "contiguous")
    for y, shape in [(F.adaptive_avg_pool1d(x[0], 0), (3, 0)),
                     (F.adaptive_avg_pool2d(x, 0), (2, 0, 0)),
                     (F.adaptive_avg_pool2d(x, (0, 2)), (2, 0, 2)),
                     (F.adaptive_avg_pool2d(x[:0], (2, 3)), (0, 2, 3)),
                     (F.adaptive_avg_pool2d(x[:0, None], (2, 3)), (0, 1, 2, 3))]:
        assert y.dtype == dtype and tuple(y.shape) == shape


def test_complex_adaptive_avg_pool_gradcheck():
    x, _ = complex_input((2, 3, 4), ptl.complex128, "transposed", seed=1)
    x.requires_grad_(True)
    assert gradcheck(lambda x: F.adaptive_avg_pool2d(x, 1), (x,))
    assert gradcheck(lambda x: F.adaptive_avg_pool1d(x, 1), (x,))
    assert gradcheck(lambda x: F.adaptive_avg_pool3d(x[None], 1), (x,))


def test_complex_adaptive_avg_pool_refusals():
    x, _ = complex_input((1, 3, 4), ptl.complex64, "contiguous")
    msg2 = "\"adaptive_avg_pool2d\" not implemented for 'ComplexFloat'"
    for call in (lambda: F.adaptive_avg_pool2d(x, 2), lambda: F.adaptive_avg_pool1d(x, 2),
                 lambda: F.adaptive_avg_pool2d(x, (None, 1)),
                 lambda: ptl.ops.aten._adaptive_avg_pool2d(x, [1, 1])):
        with pytest.raises(NotImplementedError, match=re.escape(msg2)):
            call()
    for size in (2, 0):
        with pytest.raises(NotImplementedError, match=re.escape(
                "\"adaptive_avg_pool3d_cpu\" not implemented for 'ComplexDouble'")):
            F.adaptive_avg_pool3d(x[None].to(ptl.complex128), size)
    with pytest.raises(RuntimeError, match=re.escape(
            "_adaptive_avg_pool2d does not support automatic differentiation for outputs with "
            "complex dtype.")):
        F.adaptive_avg_pool2d(x.requires_grad_(True), 0)


@torch_ref
@pytest.mark.parametrize("call", [
    lambda L, x: L.nn.functional.adaptive_avg_pool2d(x, 1),
    lambda L, x: L.nn.functional.adaptive_avg_pool2d(x[0], 1),
    lambda L, x: L.nn.functional.adaptive_avg_pool2d(x[0, 0], 1),
    lambda L, x: L.nn.functional.adaptive_avg_pool2d(x[None, None], 1),
    lambda L, x: L.nn.functional.adaptive_avg_pool2d(x, 2),
    lambda L, x: L.nn.functional.adaptive_avg_pool2d(x, (0, 3)),
    lambda L, x: L.nn.functional.adaptive_avg_pool1d(x[0], 1),
    lambda L, x: L.nn.functional.adaptive_avg_pool1d(x[0], 0),
    lambda L, x: L.nn.functional.adaptive_avg_pool1d(x[0, 0], 1),
    lambda L, x: L.nn.functional.adaptive_avg_pool3d(x, 1),
    lambda L, x: L.nn.functional.adaptive_avg_pool3d(x[0], 1),
    lambda L, x: L.nn.functional.adaptive_avg_pool3d(x[None], 2),
    lambda L, x: L.adaptive_avg_pool1d(x[0], 1),
    lambda L, x: L.ops.aten._adaptive_avg_pool2d(x, [0, 2]),
    lambda L, x: L.ops.aten._adaptive_avg_pool2d(x, [1, 1]),
    lambda L, x: L.nn.functional.adaptive_avg_pool2d(x.real, 1),
    lambda L, x: L.nn.functional.adaptive_avg_pool2d(x.real[0], 1),
    lambda L, x: L.nn.functional.adaptive_avg_pool2d(x.real[None, None], 1),
    lambda L, x: L.nn.functional.adaptive_avg_pool2d(x.real.to(L.int64), 1),
    lambda L, x: L.nn.functional.adaptive_avg_pool2d(x.real.to(L.int64), 2),
    lambda L, x: L.nn.functional.adaptive_avg_pool3d(x.real[0], 1),
])
def test_adaptive_avg_pool_one_bin_and_complex_match_torch(call):
    """PyTorch's adaptive_avg_pool2d/3d take one bin as a mean before any other check (so
    any rank of at least 2/3 dims pools, and an integer input gets mean's error), and the
    kernels compute a complex output only when it is empty."""
    a = np.random.default_rng(5).standard_normal((2, 3, 4, 5, 2)).view(np.complex128)[..., 0]

    def run(lib):
        try:
            out = call(lib, lib.tensor(a, dtype=lib.complex64))
        except Exception as e:   # compared with torch's
            return type(e).__name__, str(e).split("\n")[0]
        return out.dtype.is_complex, tuple(out.shape), out.numpy()
    ours, theirs = run(ptl), run(torch)
    assert ours[:2] == theirs[:2]
    if len(ours) == 3:
        np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-5, atol=1e-6)
