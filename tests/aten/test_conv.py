"""Convolution, pooling, padding, interpolation, fold and grid sampling against NumPy
references written as explicit loops (direct summation for convolutions, window loops for
pooling), cross-checked with torch.nn.functional, plus gradcheck and every error path."""
import itertools

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck
from pytorchlite.nn import _functional_conv as F
import golden
from helpers import TOL, assert_close, make, torch
from opinfo import _np_constant_pad

TF = torch.nn.functional if torch is not None else None
TORCH_DT = {} if torch is None else {
    ptl.float16: torch.float16, ptl.bfloat16: torch.bfloat16, ptl.float32: torch.float32,
    ptl.float64: torch.float64, ptl.int64: torch.int64, ptl.int32: torch.int32,
    ptl.uint8: torch.uint8, ptl.bool: torch.bool}
CONV_TOL = {ptl.float16: (2e-2, 5e-2), ptl.bfloat16: (5e-2, 2e-1), ptl.float32: (1e-4, 1e-4),
            ptl.float64: (1e-10, 1e-10)}
FLOATS = [ptl.float32, ptl.float64, ptl.float16, ptl.bfloat16]


def to_torch(t):
    """The same values as a torch tensor (via float64 for the reduced float types)."""
    if t.dtype in (ptl.float16, ptl.bfloat16):
        return torch.tensor(t.detach().double().numpy()).to(TORCH_DT[t.dtype])
    return torch.tensor(np.array(t.detach().numpy()))


def rnd(shape, seed=0, dtype=ptl.float64, requires_grad=False):
    a = np.random.RandomState(seed).uniform(-2, 2, size=shape)
    t = ptl.tensor(a, dtype=dtype)
    if requires_grad:
        t.requires_grad_(True)
    return t, a


class _P:
    """pytorchlite with numpy-backed randn/zeros/ones, so one lambda builds the same case for
    torch and for pytorchlite (values are irrelevant to the error paths)."""
    def __getattr__(self, name):
        return getattr(ptl, name)

    @staticmethod
    def randn(*shape, dtype=None):
        return ptl.tensor(np.random.RandomState(0).randn(*shape), dtype=dtype or ptl.float32)


P = _P()


def check_error(ptl_fn, torch_fn):
    """ptl_fn raises what torch_fn raises: the same exception class, a message that starts
    with torch's first line (live, or stored: tests/golden.py)."""
    golden.assert_raises(ptl_fn, torch_fn, compare=golden.first_line_prefix)


def close_to_torch(got, torch_fn, sub, rtol=None, atol=None, check_dtype=True):
    """got equals torch_fn()'s result (live, or stored: tests/golden.py) within the
    tolerance of got's dtype (exactly for integers)."""
    r, a = TOL.get(got.dtype, (0, 0))
    golden.assert_close(got, torch_fn, rtol=r if rtol is None else rtol,
                        atol=a if atol is None else atol, sub=sub, check_dtype=check_dtype)


# ---- NumPy references ------------------------------------------------------------------

def conv_ref(x, w, b, stride, padding, dilation, groups):
    """Direct summation over kernel offsets: y[n, o, p] = sum_{c, k} x[n, c, p*s + k*d] w[o, c, k]."""
    nd = w.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])
    n, c = x.shape[:2]
    o = w.shape[0]
    cpg, opg = c // groups, o // groups
    out = [(xp.shape[2 + i] - dilation[i] * (w.shape[2 + i] - 1) - 1) // stride[i] + 1
           for i in range(nd)]
    y = np.zeros((n, o, *out))
    for g in range(groups):
        for k in np.ndindex(*w.shape[2:]):
            sl = tuple(slice(k[i] * dilation[i], k[i] * dilation[i] + stride[i] * (out[i] - 1) + 1,
                             stride[i]) for i in range(nd))
            patch = xp[(slice(None), slice(g * cpg, (g + 1) * cpg)) + sl]
            wk = w[(slice(g * opg, (g + 1) * opg), slice(None)) + k]
            y[:, g * opg:(g + 1) * opg] += np.einsum("nc...,oc->no...", patch, wk)
    if b is not None:
        y += b.reshape((1, -1) + (1,) * nd)
    return y


def conv_t_ref(x, w, b, stride, padding, output_padding, groups, dilation):
    """Scatter form: every input element adds x * w[k] at position i*s - p + k*d."""
    nd = w.ndim - 2
    n, c = x.shape[:2]
    cpg, opg = c // groups, w.shape[1]
    ins = x.shape[2:]
    full = [(ins[i] - 1) * stride[i] + dilation[i] * (w.shape[2 + i] - 1) + 1 + output_padding[i]
            for i in range(nd)]
    y = np.zeros((n, opg * groups, *full))
    for g in range(groups):
        for k in np.ndindex(*w.shape[2:]):
            sl = tuple(slice(k[i] * dilation[i], k[i] * dilation[i] + stride[i] * (ins[i] - 1) + 1,
                             stride[i]) for i in range(nd))
            y[(slice(None), slice(g * opg, (g + 1) * opg)) + sl] += np.einsum(
                "nc...,co->no...", x[:, g * cpg:(g + 1) * cpg], w[(slice(g * cpg, (g + 1) * cpg),
                                                                   slice(None)) + k])
    crop = tuple(slice(padding[i], full[i] - padding[i]) for i in range(nd))
    y = y[(slice(None), slice(None)) + crop]
    if b is not None:
        y = y + b.reshape((1, -1) + (1,) * nd)
    return y


def pool_out(n, k, s, p, d, ceil):
    num = n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)
    out = num // s + 1
    if ceil and (out - 1) * s >= n + p:
        out -= 1
    return out


def max_pool_ref(x, k, s, p, d, ceil):
    """Window loops: max and the flat index of the first maximum (inputs have no ties)."""
    nd = len(k)
    sp = x.shape[-nd:]
    outs = [pool_out(sp[i], k[i], s[i], p[i], d[i], ceil) for i in range(nd)]
    lead = x.shape[:-nd]
    y = np.empty(lead + tuple(outs))
    idx = np.empty(lead + tuple(outs), dtype=np.int64)
    for o in np.ndindex(*outs):
        best = np.full(lead, -np.inf)
        bi = np.zeros(lead, dtype=np.int64)
        for kk in np.ndindex(*k):
            pos = [o[i] * s[i] - p[i] + kk[i] * d[i] for i in range(nd)]
            if any(q < 0 or q >= sp[i] for i, q in enumerate(pos)):
                continue
            v = x[(Ellipsis,) + tuple(pos)]
            flat = np.ravel_multi_index(pos, sp)
            better = v > best
            best = np.where(better, v, best)
            bi = np.where(better, flat, bi)
        y[(Ellipsis,) + o] = best
        idx[(Ellipsis,) + o] = bi
    return y, idx


def avg_pool_ref(x, k, s, p, ceil, count_include_pad, divisor=None):
    nd = len(k)
    sp = x.shape[-nd:]
    outs = [pool_out(sp[i], k[i], s[i], p[i], 1, ceil) for i in range(nd)]
    y = np.empty(x.shape[:-nd] + tuple(outs))
    for o in np.ndindex(*outs):
        acc = 0.0
        span, count = 1, 1
        sl = []
        for i in range(nd):
            start = o[i] * s[i] - p[i]
            end = min(start + k[i], sp[i] + p[i])
            span *= end - start
            lo, hi = max(start, 0), min(end, sp[i])
            count *= hi - lo
            sl.append(slice(lo, hi))
        acc = x[(Ellipsis,) + tuple(sl)].sum(axis=tuple(range(-nd, 0)))
        div = divisor if divisor else (span if count_include_pad else count)
        y[(Ellipsis,) + o] = acc / div
    return y


def adaptive_ref(x, out, fn):
    nd = len(out)
    sp = x.shape[-nd:]
    y = np.empty(x.shape[:-nd] + tuple(out))
    for o in np.ndindex(*out):
        sl = tuple(slice((o[i] * sp[i]) // out[i], -((-(o[i] + 1) * sp[i]) // out[i]))
                   for i in range(nd))
        y[(Ellipsis,) + o] = fn(x[(Ellipsis,) + sl], axis=tuple(range(-nd, 0)))
    return y


def unfold_ref(x, k, d, p, s):
    n, c, h, w = x.shape
    xp = np.pad(x, [(0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])])
    oh = (h + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (w + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    cols = np.empty((n, c, k[0], k[1], oh, ow))
    for i, j in np.ndindex(k[0], k[1]):
        cols[:, :, i, j] = xp[:, :, i * d[0]:i * d[0] + s[0] * (oh - 1) + 1:s[0],
                              j * d[1]:j * d[1] + s[1] * (ow - 1) + 1:s[1]]
    return cols.reshape(n, c * k[0] * k[1], oh * ow)


def bilinear_ref(x, oh, ow, align):
    """Separable linear interpolation with PyTorch's source-index rule."""
    def taps(n_in, n_out):
        m = np.zeros((n_out, n_in))
        for o in range(n_out):
            if align:
                src = o * (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
            else:
                src = max((o + 0.5) * n_in / n_out - 0.5, 0.0)
            i0 = int(src)
            i1 = i0 + (1 if i0 < n_in - 1 else 0)
            lam = src - i0
            m[o, i0] += 1 - lam
            m[o, i1] += lam
        return m
    mh, mw = taps(x.shape[-2], oh), taps(x.shape[-1], ow)
    return np.einsum("ph,nchw,qw->ncpq", mh, x, mw)


# ---- convolution -----------------------------------------------------------------------

CONV_CASES = [
    # (x shape, w shape, stride, padding, dilation, groups)
    ((2, 3, 7), (4, 3, 3), [1], [0], [1], 1),
    ((2, 4, 9), (6, 2, 2), [3], [1], [2], 2),
    ((2, 3, 6, 5), (4, 3, 3, 3), [1, 1], [1, 1], [1, 1], 1),
    ((1, 4, 7, 6), (6, 2, 3, 2), [2, 1], [1, 0], [1, 2], 2),
    ((2, 2, 5, 5), (2, 1, 1, 1), [3, 3], [0, 0], [1, 1], 2),     # stride > kernel
    ((1, 3, 4, 4), (3, 1, 3, 3), [1, 1], [2, 2], [1, 1], 3),     # depthwise, big padding
    ((1, 2, 4, 5, 3), (3, 2, 2, 3, 1), [1, 2, 1], [1, 1, 0], [1, 1, 2], 1),
    ((0, 3, 5, 5), (2, 3, 3, 3), [1, 1], [0, 0], [1, 1], 1),     # empty batch
]


@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize("dtype", FLOATS)
def test_convolution_forward(case, dtype):
    xs, ws, stride, padding, dilation, groups = case
    x, xa = make(xs, dtype, "contiguous", seed=1, low=-2, high=2)
    w, wa = make(ws, dtype, "contiguous", seed=2, low=-2, high=2)
    b, ba = make((ws[0],), dtype, seed=3)
    got = ptl.convolution(x, w, b, stride, padding, dilation, False, [0] * len(stride), groups)
    ref = conv_ref(xa.astype(np.float64), wa.astype(np.float64), ba.astype(np.float64), stride,
                   padding, dilation, groups)
    rtol, atol = CONV_TOL[dtype]
    assert_close(got, ref, dtype=dtype, rtol=rtol, atol=atol * max(1.0, np.abs(ref).max(initial=0)))


@pytest.mark.parametrize("layout", ["transposed", "sliced", "expanded"])
def test_conv2d_noncontiguous(layout):
    x, xa = make((2, 3, 6, 5), ptl.float32, layout, seed=4)
    w, wa = make((4, 3, 3, 2), ptl.float32, layout, seed=5)
    got = F.conv2d(x, w, None, stride=(2, 1), padding=1)
    assert_close(got, conv_ref(xa, wa, None, [2, 1], [1, 1], [1, 1], 1), dtype=ptl.float32,
                 rtol=1e-4, atol=1e-3)


CONV_T_CASES = [
    # (x shape, w shape, stride, padding, output_padding, groups, dilation)
    ((2, 4, 5), (4, 3, 3), [2], [1], [1], 2, [1]),
    ((2, 3, 4), (3, 2, 2), [1], [0], [0], 1, [2]),
    ((1, 2, 3, 4), (2, 3, 3, 2), [2, 3], [1, 0], [1, 2], 1, [1, 1]),
    ((2, 4, 3, 3), (4, 1, 2, 2), [1, 2], [0, 1], [0, 1], 4, [2, 1]),
]


@pytest.mark.parametrize("case", CONV_T_CASES)
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
def test_conv_transpose_forward(case, dtype):
    xs, ws, stride, padding, opad, groups, dilation = case
    x, xa = make(xs, dtype, "sliced", seed=6)
    w, wa = make(ws, dtype, seed=7)
    b, ba = make((ws[1] * groups,), dtype, seed=8)
    fn = F.conv_transpose1d if len(xs) == 3 else F.conv_transpose2d
    got = fn(x, w, b, stride, padding, opad, groups, dilation)
    ref = conv_t_ref(xa, wa, ba, stride, padding, opad, groups, dilation)
    assert_close(got, ref, dtype=dtype, rtol=1e-4, atol=1e-3)


def test_conv_unbatched_padding_modes_and_torch():
    x, _ = rnd((3, 7, 6), seed=9)
    w, _ = rnd((4, 3, 2, 3), seed=10)
    b, _ = rnd((4,), seed=11)
    for kw in [dict(padding="same"), dict(padding="valid"), dict(padding="same", dilation=2),
               dict(padding=(1, 2), stride=2)]:
        close_to_torch(F.conv2d(x, w, b, **kw),
                       lambda: TF.conv2d(to_torch(x), to_torch(w), to_torch(b), **kw), repr(kw))
    x1, _ = rnd((2, 3, 8), seed=12)
    w1, _ = rnd((6, 1, 4), seed=13)
    close_to_torch(F.conv1d(x1, w1, None, padding="same", groups=3),
                   lambda: TF.conv1d(to_torch(x1), to_torch(w1), None, padding="same", groups=3),
                   "conv1d")
    x3, _ = rnd((1, 2, 3, 4, 4), seed=14)
    w3, _ = rnd((2, 2, 2, 2, 2), seed=15)
    close_to_torch(F.conv_transpose3d(x3, w3, None, stride=2, output_padding=1),
                   lambda: TF.conv_transpose3d(to_torch(x3), to_torch(w3), None, stride=2,
                                               output_padding=1), "conv_transpose3d")
    close_to_torch(F.conv3d(x3, w3, None, padding=1, dilation=(1, 2, 1)),
                   lambda: TF.conv3d(to_torch(x3), to_torch(w3), None, padding=1,
                                     dilation=(1, 2, 1)), "conv3d")


def test_conv_integer_dtype_matches_torch():
    x = ptl.tensor(np.arange(2 * 3 * 5 * 5).reshape(2, 3, 5, 5) % 7 - 3, dtype=ptl.int64)
    w = ptl.tensor(np.arange(4 * 3 * 3 * 3).reshape(4, 3, 3, 3) % 5 - 2, dtype=ptl.int64)
    got = F.conv2d(x, w, padding=1)
    assert got.dtype == ptl.int64
    assert_close(got, conv_ref(x.numpy(), w.numpy(), None, [1, 1], [1, 1], [1, 1], 1))
    close_to_torch(got, lambda: TF.conv2d(to_torch(x), to_torch(w), padding=1), "conv2d")


def test_conv_grad_fn_name():
    x, _ = rnd((1, 2, 4, 4), requires_grad=True)
    w, _ = rnd((3, 2, 3, 3), seed=1, requires_grad=True)
    assert type(F.conv2d(x, w).grad_fn).__name__ == "ConvolutionBackward0"


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_convolution_gradcheck(nd, transposed):
    shapes = {1: (5,), 2: (4, 3), 3: (3, 3, 2)}[nd]
    groups = 2
    x, _ = rnd((2, 4) + shapes, seed=20, requires_grad=True)
    k = tuple(2 for _ in range(nd))
    w, _ = rnd(((4, 3) if transposed else (6, 2)) + k, seed=21, requires_grad=True)
    b, _ = rnd((6,), seed=22, requires_grad=True)
    stride, pad, dil = [2] * nd, [1] * nd, [1] * nd
    opad = [1] * nd if transposed else [0] * nd

    def fn(x, w, b):
        return ptl.convolution(x, w, b, stride, pad, dil, transposed, opad, groups)
    assert gradcheck(fn, (x, w, b))


def test_convolution_grads_match_torch():
    def run(lib):
        x, w, b = (lib.tensor(rnd(shape, seed=seed)[1], requires_grad=True) for shape, seed in
                   [((2, 4, 6, 5), 30), ((6, 2, 3, 2), 31), ((6,), 32)])
        y = lib.nn.functional.conv2d(x, w, b, stride=(2, 1), padding=(1, 0), dilation=(1, 2),
                                     groups=2)
        (y * lib.tensor(np.random.RandomState(0).randn(*y.shape))).sum().backward()
        return {"x.grad": x.grad, "w.grad": w.grad, "b.grad": b.grad}
    golden.assert_same_results(run, rtol=1e-12, atol=1e-12)


CONV_ERRORS = [
    lambda F, t: F.conv2d(t.randn(1, 2), t.randn(8, 3, 3, 3)),
    lambda F, t: F.conv1d(t.randn(2, 3, 4, 5, 6), t.randn(8, 3, 3)),
    lambda F, t: F.conv3d(t.randn(2, 3), t.randn(8, 3, 3, 3, 3)),
    lambda F, t: F.conv_transpose2d(t.randn(2, 3), t.randn(3, 3, 3, 3)),
    lambda F, t: F.conv2d(t.randn(1, 4, 5, 5), t.randn(8, 3, 3, 3)),
    lambda F, t: F.conv2d(t.randn(1, 3, 2, 2), t.randn(8, 3, 3, 3)),
    lambda F, t: F.conv2d(t.randn(1, 3, 4, 4), t.randn(8, 3, 3, 3), dilation=2),
    lambda F, t: F.conv2d(t.randn(1, 4, 5, 5), t.randn(8, 4, 3, 3, dtype=t.float64)),
    lambda F, t: F.conv2d(t.randn(1, 4, 5, 5), t.randn(8, 4, 3, 3), t.randn(8, dtype=t.float64)),
    lambda F, t: F.conv2d(t.randn(1, 4, 5, 5), t.randn(8, 4, 3, 3), t.randn(7)),
    lambda F, t: F.conv2d(t.randn(1, 4, 5, 5), t.randn(8, 2, 3, 3), groups=3),
    lambda F, t: F.conv2d(t.randn(1, 4, 5, 5), t.randn(8, 4, 3, 3), groups=0),
    lambda F, t: F.conv_transpose2d(t.randn(2, 0, 3, 3), t.randn(0, 2, 2, 2)),
    lambda F, t: F.conv2d(t.randn(1, 4, 5, 5), t.randn(8, 4, 3, 3), stride=0),
    lambda F, t: F.conv2d(t.randn(1, 4, 5, 5), t.randn(8, 4, 3, 3), padding=-1),
    lambda F, t: F.conv2d(t.randn(1, 4, 5, 5), t.randn(8, 4, 3, 3), dilation=0),
    lambda F, t: F.conv2d(t.randn(1, 4, 5, 5), t.randn(8, 4, 3, 3), stride=2, padding="same"),
    lambda F, t: F.conv2d(t.randn(1, 4, 5, 5), t.randn(8, 4, 3, 3), padding="foo"),
    lambda F, t: F.conv2d(t.ones(1, 3, 5, 5, dtype=t.bool), t.ones(8, 3, 3, 3, dtype=t.bool)),
    lambda F, t: F.conv_transpose2d(t.randn(1, 4, 5, 5), t.randn(3, 2, 3, 3)),
    lambda F, t: F.conv_transpose2d(t.randn(1, 4, 5, 5), t.randn(4, 2, 3, 3), t.randn(3)),
    lambda F, t: F.conv_transpose2d(t.randn(1, 4, 5, 5), t.randn(4, 2, 3, 3), output_padding=2),
    lambda F, t: F.conv_transpose1d(t.randn(1, 4, 5), t.randn(4, 2, 3), output_padding=2),
    lambda F, t: F.conv_transpose2d(t.randn(1, 4, 5, 5), t.randn(4, 2, 3, 3), padding=4),
    lambda F, t: t.convolution(t.randn(1, 4, 5, 5), t.randn(8, 4, 3, 3), None, [1, 1, 1],
                               [0, 0], [1, 1], False, [0, 0], 1),
    lambda F, t: t.convolution(t.randn(1, 4, 5, 5), t.randn(8, 4, 3, 3, 3), None, [1], [0],
                               [1], False, [0], 1),
]


@pytest.mark.parametrize("i", range(len(CONV_ERRORS)))
def test_conv_errors(i):
    check_error(lambda: CONV_ERRORS[i](F, P), lambda: CONV_ERRORS[i](TF, torch))


# ---- pooling ---------------------------------------------------------------------------

MAX_POOL_CASES = [
    # (shape, kernel, stride, padding, dilation, ceil_mode)
    ((2, 3, 7, 6), (3, 2), (2, 2), (1, 1), (1, 1), False),
    ((2, 3, 7, 6), (3, 2), (2, 2), (1, 1), (1, 1), True),
    ((1, 2, 5, 5), (2, 2), (1, 1), (1, 1), (1, 1), True),       # ceil window starts in padding
    ((1, 2, 8, 7), (3, 3), (2, 3), (1, 0), (2, 1), True),       # dilation
    ((2, 6, 5), (2, 2), (3, 3), (0, 0), (1, 1), False),         # unbatched, stride > kernel
    ((0, 2, 4, 4), (2, 2), (2, 2), (0, 0), (1, 1), False),      # empty batch
]


@pytest.mark.parametrize("case", MAX_POOL_CASES)
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64, ptl.bfloat16, ptl.int64])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_max_pool2d(case, dtype, layout):
    shape, k, s, p, d, ceil = case
    x, xa = make(shape, dtype, layout, seed=40)
    y, idx = F.max_pool2d(x, k, s, p, d, ceil, return_indices=True)
    ry, ridx = max_pool_ref(xa.astype(np.float64), k, s, p, d, ceil)
    assert_close(y, ry.astype(xa.dtype), dtype=dtype)
    assert_close(idx, ridx)


def test_max_pool_nan_and_1d_3d():
    x = ptl.tensor([[[1.0, float("nan"), 3.0, 2.0]]])
    y, i = F.max_pool1d(x, 2, return_indices=True)
    assert np.isnan(y.numpy()[0, 0, 0]) and i.tolist() == [[[1, 2]]]
    x1, xa1 = make((2, 3, 9), ptl.float32, "sliced", seed=41)
    y1, i1 = F.max_pool1d(x1, 3, 2, 1, 2, True, return_indices=True)
    ry1, ri1 = max_pool_ref(xa1, (3,), (2,), (1,), (2,), True)
    assert_close(y1, ry1, dtype=ptl.float32)
    assert_close(i1, ri1)
    x3, xa3 = make((1, 2, 5, 4, 6), ptl.float64, "transposed", seed=42)
    y3, i3 = F.max_pool3d(x3, (2, 3, 2), (2, 1, 2), (1, 1, 0), (1, 1, 2), True,
                          return_indices=True)
    ry3, ri3 = max_pool_ref(xa3, (2, 3, 2), (2, 1, 2), (1, 1, 0), (1, 1, 2), True)
    assert_close(y3, ry3)
    assert_close(i3, ri3)


AVG_POOL_CASES = [
    # (shape, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
    ((2, 3, 7, 6), (3, 2), (2, 2), (1, 1), False, True, None),
    ((2, 3, 7, 6), (3, 2), (2, 2), (1, 1), True, False, None),
    ((1, 2, 5, 5), (2, 2), (2, 2), (1, 1), True, True, None),
    ((1, 2, 6, 5), (3, 3), (1, 2), (1, 0), False, True, 4),
    ((3, 5, 5), (2, 2), (3, 3), (0, 0), False, True, None),
]


@pytest.mark.parametrize("case", AVG_POOL_CASES)
@pytest.mark.parametrize("dtype", FLOATS)
def test_avg_pool2d(case, dtype):
    shape, k, s, p, ceil, cip, div = case
    x, xa = make(shape, dtype, "sliced", seed=43)
    y = F.avg_pool2d(x, k, s, p, ceil, cip, div)
    rtol, atol = CONV_TOL[dtype]
    assert_close(y, avg_pool_ref(xa.astype(np.float64), k, s, p, ceil, cip, div), dtype=dtype,
                 rtol=rtol, atol=atol)


def test_avg_pool_1d_3d_and_int64():
    x1, xa1 = make((2, 3, 9), ptl.float64, "transposed", seed=44)
    assert_close(F.avg_pool1d(x1, 3, 2, 1, True, False),
                 avg_pool_ref(xa1, (3,), (2,), (1,), True, False))
    x3, xa3 = make((1, 2, 5, 4, 6), ptl.float64, seed=45)
    assert_close(F.avg_pool3d(x3, (2, 3, 2), (2, 1, 2), (1, 1, 0), True, False),
                 avg_pool_ref(xa3, (2, 3, 2), (2, 1, 2), (1, 1, 0), True, False))
    xi = ptl.tensor(np.arange(-20, 30).reshape(1, 2, 5, 5), dtype=ptl.int64)
    got = F.avg_pool2d(xi, 2, 2, 1)
    assert got.dtype == ptl.int64
    close_to_torch(got, lambda: TF.avg_pool2d(to_torch(xi), 2, 2, 1), "int64")


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64, ptl.float16])
def test_adaptive_pools(dtype):
    x, xa = make((2, 3, 7, 5), dtype, "transposed", seed=46)
    xa = xa.astype(np.float64)
    rtol, atol = CONV_TOL[dtype]
    assert_close(F.adaptive_avg_pool2d(x, (3, 4)), adaptive_ref(xa, (3, 4), np.mean), dtype=dtype,
                 rtol=rtol, atol=atol)
    assert_close(F.adaptive_avg_pool2d(x, (None, 2)), adaptive_ref(xa, (7, 2), np.mean),
                 dtype=dtype, rtol=rtol, atol=atol)
    y, i = F.adaptive_max_pool2d(x, (4, 3), return_indices=True)
    assert_close(y, adaptive_ref(xa, (4, 3), np.max), dtype=dtype)
    close_to_torch(i, lambda: TF.adaptive_max_pool2d(to_torch(x).double(), (4, 3),
                                                     return_indices=True)[1], "indices")
    x1, xa1 = make((2, 9), dtype, seed=47)
    assert_close(F.adaptive_avg_pool1d(x1, 4), adaptive_ref(xa1.astype(np.float64), (4,), np.mean),
                 dtype=dtype, rtol=rtol, atol=atol)
    assert_close(F.adaptive_max_pool1d(x1, 4), adaptive_ref(xa1.astype(np.float64), (4,), np.max),
                 dtype=dtype)


def test_max_unpool_and_lp_pool():
    x, xa = rnd((2, 3, 6, 5), seed=48)
    _, io = F.max_pool2d(x, 3, stride=1, return_indices=True)
    # overlapping windows repeat an index: the value is placed once, not summed
    assert len(np.unique(io.numpy())) < io.numel()
    x1a = rnd((2, 8), seed=49)[1]
    xpa = np.abs(rnd((1, 2, 6, 6), seed=50)[1]) + 0.1

    def run(lib):
        TF, t, tp = lib.nn.functional, lib.tensor(xa), lib.tensor(xpa)
        y, i = TF.max_pool2d(t, 2, return_indices=True)
        res = {"unpool2d": TF.max_unpool2d(y, i, 2, output_size=(6, 5))}
        y1, i1 = TF.max_pool1d(lib.tensor(x1a), 2, return_indices=True)
        res["unpool1d"] = TF.max_unpool1d(y1, i1, 2)
        yo, io = TF.max_pool2d(t, 3, stride=1, return_indices=True)
        res["overlapping"] = TF.max_unpool2d(yo, io, 3, stride=1)
        for p in (1.0, 2.0, 3.0):
            res[f"lp_pool2d p={p}"] = TF.lp_pool2d(tp, p, (3, 2), stride=2)
        res["lp_pool1d"] = TF.lp_pool1d(tp[0], 2.0, 3)
        return res
    golden.assert_same_results(run, rtol=1e-12, atol=1e-12)


POOL_GRADS = [
    ("MaxPool2DWithIndicesBackward0",
     lambda x: F.max_pool2d(x, 3, 2, 1, 1, True), (1, 2, 5, 6)),
    ("MaxPool3DWithIndicesBackward0",
     lambda x: F.max_pool3d(x, 2, 1, 1, 1, False), (1, 1, 3, 3, 3)),
    ("AvgPool2DBackward0", lambda x: F.avg_pool2d(x, 3, 2, 1, True, False), (2, 1, 5, 6)),
    ("AvgPool2DBackward0", lambda x: F.avg_pool2d(x, 2, 1, 1, False, True, 3), (1, 2, 4, 4)),
    ("AvgPool3DBackward0", lambda x: F.avg_pool3d(x, 2, 2, 1, True), (1, 1, 3, 4, 3)),
    ("AdaptiveAvgPool2DBackward0", lambda x: F.adaptive_avg_pool2d(x, (3, 2)), (1, 2, 5, 7)),
    ("AdaptiveMaxPool2DBackward0", lambda x: F.adaptive_max_pool2d(x, (3, 2)), (1, 2, 5, 7)),
    (None, lambda x: F.max_pool1d(x, 2, 1, 1), (2, 2, 5)),
    (None, lambda x: F.avg_pool1d(x, 3, 2, 1), (2, 2, 5)),
    (None, lambda x: F.lp_pool2d(x * x + 0.5, 2.0, 2), (1, 1, 4, 4)),
]


@pytest.mark.parametrize("i", range(len(POOL_GRADS)))
def test_pool_gradcheck(i):
    name, fn, shape = POOL_GRADS[i]
    x, _ = rnd(shape, seed=60 + i, requires_grad=True)
    if name is not None:
        assert type(fn(x).grad_fn).__name__ == name
    assert gradcheck(fn, (x,))


def test_max_unpool_gradcheck():
    x, _ = rnd((1, 2, 4, 4), seed=70)
    _, idx = F.max_pool2d(x, 2, return_indices=True)
    y, _ = rnd((1, 2, 2, 2), seed=71, requires_grad=True)
    assert gradcheck(lambda y: F.max_unpool2d(y, idx, 2), (y,))


POOL_ERRORS = [
    lambda F, t: F.max_pool2d(t.randn(1, 4, 5, 5), 3, padding=2),
    lambda F, t: F.max_pool2d(t.randn(1, 1, 2, 2), 3),
    lambda F, t: F.max_pool2d(t.randn(2, 2), 1),
    lambda F, t: F.max_pool2d(t.randn(1, 4, 5, 5), 2, stride=0),
    lambda F, t: F.max_pool2d(t.randn(1, 4, 5, 5), 2, stride=-1),
    lambda F, t: F.max_pool2d(t.randn(1, 4, 5, 5), -1),
    lambda F, t: F.max_pool2d(t.randn(1, 4, 5, 5), 2, dilation=0),
    lambda F, t: F.max_pool2d(t.randn(1, 0, 3, 3), 2),
    lambda F, t: F.max_pool2d(t.randn(1, 4, 5, 5) > 0, 2),
    lambda F, t: F.max_pool3d(t.randn(2, 2), 2),
    lambda F, t: F.max_pool3d(t.randn(1, 1, 3, 3, 3), 4),
    lambda F, t: F.max_pool3d(t.randn(1, 1, 3, 3, 3), 3, padding=2),
    lambda F, t: F.max_pool1d(t.randn(5), 3),
    lambda F, t: F.avg_pool2d(t.randn(1, 4, 5, 5), 3, padding=2),
    lambda F, t: F.avg_pool2d(t.randn(1, 1, 2, 2), 3),
    lambda F, t: F.avg_pool2d(t.randn(1, 4, 5, 5), 2, divisor_override=0),
    lambda F, t: F.avg_pool2d(t.randn(1, 4, 5, 5) > 0, 2),
    lambda F, t: F.avg_pool2d(t.randn(1, 4, 5, 5), 0),
    lambda F, t: F.avg_pool1d(t.randn(1, 1, 2), 3),
    lambda F, t: F.avg_pool3d(t.randn(2, 2), 2),
    lambda F, t: F.adaptive_avg_pool2d(t.randn(1, 1), 2),
    lambda F, t: F.adaptive_avg_pool2d(t.randn(1, 2, 0, 3), 2),
    lambda F, t: F.adaptive_avg_pool2d(t.randn(1, 2, 3, 3), (2, -1)),
    lambda F, t: F.adaptive_avg_pool2d(t.ones(1, 2, 3, 3, dtype=t.int64), 2),
    lambda F, t: F.adaptive_avg_pool1d(t.randn(1, 2, 3, 3), 2),
    lambda F, t: F.adaptive_max_pool2d(t.randn(1, 1), 2),
    lambda F, t: F.adaptive_max_pool2d(t.randn(1, 2, 0, 3), 2),
    lambda F, t: F.adaptive_max_pool2d(t.ones(1, 2, 3, 3, dtype=t.int64), 2),
    lambda F, t: F.max_unpool2d(t.randn(1, 4, 5, 5), t.zeros(1, 4, 5, 5, dtype=t.int64) + 100, 2),
    lambda F, t: F.max_unpool2d(t.randn(1, 4, 5, 5), t.zeros(1, 4, 5, 5, dtype=t.int64), 2,
                                output_size=(3, 3)),
    lambda F, t: F.max_unpool2d(t.randn(1, 1, 2, 2), t.zeros(1, 1, 2, 3, dtype=t.int64), 2),
    lambda F, t: F.max_unpool2d(t.randn(1, 4, 5, 5), t.zeros(1, 4, 5, 5, dtype=t.int32), 2),
    lambda F, t: F.max_unpool2d(t.ones(1, 4, 5, 5, dtype=t.int64),
                                t.zeros(1, 4, 5, 5, dtype=t.int64), 2),
]


@pytest.mark.parametrize("i", range(len(POOL_ERRORS)))
def test_pool_errors(i):
    check_error(lambda: POOL_ERRORS[i](F, P), lambda: POOL_ERRORS[i](TF, torch))


# ---- padding ---------------------------------------------------------------------------

PAD_CASES = [
    ((2, 3, 5), (2, 3)),
    ((3, 5), (1, 4)),
    ((1, 2, 4, 5), (1, 2, 3, 0)),
    ((1, 2, 3, 4, 5), (1, 1, 2, 0, 1, 2)),
]
NP_MODE = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


@pytest.mark.parametrize("case", PAD_CASES)
@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64, ptl.bfloat16, ptl.int64])
def test_pad(case, mode, dtype):
    shape, pads = case
    x, xa = make(shape, dtype, "transposed", seed=80)
    n = len(pads) // 2
    widths = [(0, 0)] * (len(shape) - n) + [(pads[2 * i], pads[2 * i + 1])
                                             for i in reversed(range(n))]
    if mode == "constant":
        got = F.pad(x, pads, value=1.5 if dtype != ptl.int64 else 2)
        ref = np.pad(xa, widths, constant_values=1.5 if dtype != ptl.int64 else 2)
    else:
        got = F.pad(x, pads, mode=mode)
        ref = np.pad(xa, widths, mode=NP_MODE[mode])
    assert_close(got, ref, dtype=dtype)


def test_pad_negative_crops_and_any_dtype():
    x, xa = make((2, 3, 5), ptl.float64, seed=81)
    assert_close(F.pad(x, (-1, 2, 1, -2)), np.pad(xa, [(0, 0), (1, 0), (0, 2)])[:, :2, 1:])
    for mode in ("circular", "reflect"):
        close_to_torch(F.pad(x, (-2, 1), mode=mode),
                       lambda: TF.pad(to_torch(x), (-2, 1), mode=mode), mode)
    b = ptl.tensor([[True, False]])
    assert F.pad(b, (1, 1)).tolist() == [[False, True, False, False]]
    assert F.pad(b, (1, 0, 1, 0), value=True).tolist() == [[True, True, True], [True, True, False]]


@pytest.mark.parametrize("seed", range(12))
def test_constant_pad_random_shapes_and_pads(seed):
    # random ranks, sizes (some 0), pads (negative, zero, positive) and layouts
    rng = np.random.default_rng(seed)
    shape = tuple(int(v) for v in rng.integers(0, 5, rng.integers(1, 5)))
    x, xa = make(shape, ptl.float64, ["contiguous", "transposed"][seed % 2], seed=seed)
    pads = []
    for d in range(int(rng.integers(1, len(shape) + 1))):
        size = shape[len(shape) - 1 - d]
        lo = int(rng.integers(-min(size, 2), 4))
        hi = int(rng.integers(-min(size + min(lo, 0), 2), 4))
        pads += [lo, hi]
    assert_close(F.pad(x, pads, value=-2.5), _np_constant_pad(xa, pads, -2.5), dtype=ptl.float64)


# constant_pad_nd fills and copies chunks of about 128 KiB of output along dim 0: output rows
# (dim-0 slices) of 28 KiB (four to a chunk), of 129 KiB (one) and of a few bytes (one chunk),
# with the box's edges on and inside chunk boundaries
@pytest.mark.parametrize("shape,pads", [
    ((11, 58, 60), (1, 1, 0, 2, 2, 3)),
    ((11, 58, 60), (-1, 2, 1, 0, -3, 4)),
    ((14, 58, 60), (0, 0, 0, 0, 4, -2)),
    ((5, 127, 127), (1, 0, 0, 1, 1, 1)),
    ((9, 3, 2), (1, 1, 1, 1, 1, 1)),
])
@pytest.mark.parametrize("threads", [1, 2])
def test_constant_pad_in_chunks(shape, pads, threads):
    x, xa = make(shape, ptl.float64, "transposed", seed=82)
    old = ptl.get_num_threads()
    ptl.set_num_threads(threads)
    try:
        got = F.pad(x, pads, value=0.25)
    finally:
        ptl.set_num_threads(old)
    assert_close(got, _np_constant_pad(xa, pads, 0.25), dtype=ptl.float64)


def test_constant_pad_of_a_0_dim_tensor():
    assert F.pad(ptl.tensor(2.5), ()).item() == 2.5


PAD_GRADS = [
    ("ConstantPadNdBackward0", lambda x: F.pad(x, (1, -1, 2, 0), value=3.0), (2, 3, 4)),
    ("ReflectionPad1DBackward0", lambda x: F.pad(x, (2, 1), mode="reflect"), (2, 4)),
    ("ReflectionPad2DBackward0", lambda x: F.pad(x, (2, 1, 1, 2), mode="reflect"), (1, 3, 4)),
    ("ReflectionPad3DBackward0", lambda x: F.pad(x, (1,) * 6, mode="reflect"), (1, 1, 2, 3, 2)),
    ("ReplicationPad1DBackward0", lambda x: F.pad(x, (3, 1), mode="replicate"), (1, 2, 3)),
    ("ReplicationPad2DBackward0", lambda x: F.pad(x, (1, 2, 3, 0), mode="replicate"),
     (1, 2, 3)),
    ("ReplicationPad3DBackward0", lambda x: F.pad(x, (1, 0, 0, 1, 2, 1), mode="replicate"),
     (1, 2, 2, 2)),
    (None, lambda x: F.pad(x, (2, 1, 1, 1), mode="circular"), (1, 1, 3, 3)),
]


@pytest.mark.parametrize("i", range(len(PAD_GRADS)))
def test_pad_gradcheck(i):
    name, fn, shape = PAD_GRADS[i]
    x, _ = rnd(shape, seed=90 + i, requires_grad=True)
    if name is not None:
        assert type(fn(x).grad_fn).__name__ == name
    assert gradcheck(fn, (x,))


PAD_ERRORS = [
    lambda F, t: F.pad(t.randn(1, 4, 5, 5), (5, 1, 1, 1), "reflect"),
    lambda F, t: F.pad(t.randn(1, 4, 5, 5), (1, 1, 5, 1), "reflect"),
    lambda F, t: F.pad(t.randn(1, 4, 5, 5), (3, 3), mode="reflect"),
    lambda F, t: F.pad(t.randn(1, 4, 5, 5), (1,), mode="reflect"),
    lambda F, t: F.pad(t.randn(1, 2, 5), (6, 1), "circular"),
    lambda F, t: F.pad(t.randn(1, 1, 0), (1, 1), mode="replicate"),
    lambda F, t: F.pad(t.randn(1, 2, 5), (-6, 1), "reflect"),
    lambda F, t: F.pad(t.randn(1, 4, 5, 5), (1, 1), mode="foo"),
    lambda F, t: F.pad(t.randn(1, 2, 3), (1, 1), value=2, mode="reflect"),
    lambda F, t: F.pad(t.randn(1, 2, 3) > 0, (1, 1), mode="reflect"),
    lambda F, t: F.pad(t.randn(1, 2, 3), (1, 1, 1, 1, 1, 1, 1, 1)),
    lambda F, t: t.constant_pad_nd(t.randn(1, 2, 3), (1, 1, 1)),
    lambda F, t: t.constant_pad_nd(t.randn(1, 2, 3), (-2, -2)),
]


@pytest.mark.parametrize("i", range(len(PAD_ERRORS)))
def test_pad_errors(i):
    check_error(lambda: PAD_ERRORS[i](F, P), lambda: PAD_ERRORS[i](TF, torch))



@pytest.mark.parametrize("mode", ["reflection", "replication"])
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_pad_ops_refuse_a_padding_list_of_the_wrong_length(mode, nd):
    # the schema's SymInt[2 nd] does not bind the length (PyTorch's kernels check it); an
    # empty list once made the kernel read past the list
    op = getattr(P.ops.aten, f"{mode}_pad{nd}d").default
    backward = getattr(P.ops.aten, f"{mode}_pad{nd}d_backward").default
    x, g = P.randn(*([1, 2] + [5] * nd)), P.randn(*([1, 2] + [7] * nd))
    assert op(x, [1] * (2 * nd)).shape == g.shape
    for n in (0, 2 * nd - 1, 2 * nd + 1):
        msg = rf"^padding size is expected to be {2 * nd}, but got: {n}$"
        with pytest.raises(RuntimeError, match=msg):
            op(x, [1] * n)
        with pytest.raises(RuntimeError, match=msg):
            backward(g, x, [1] * n)


INT64_MIN, INT64_MAX = -2 ** 63, 2 ** 63 - 1


@pytest.mark.parametrize("mode", ["reflection", "replication", "circular"])
@pytest.mark.parametrize("pad", [[INT64_MIN, INT64_MIN], [INT64_MAX, INT64_MAX], [INT64_MAX, 0],
                                 [INT64_MAX, INT64_MIN]])
def test_pad_ops_refuse_pads_whose_output_size_overflows(mode, pad):
    # in + l + r wrapped around to a small size and the kernel indexed far outside the input
    # (the fuzzer's reflection_pad1d(x, -2**63) segfault)
    op = P.ops.aten._pad_circular if mode == "circular" else getattr(P.ops.aten, f"{mode}_pad1d")
    x = P.randn(2, 2)
    with pytest.raises(RuntimeError, match=r"^padding \(-?\d+, -?\d+\) at dimension 1 of "
                                            r"input \[2, 2\] overflows the output size$"):
        op(x, pad)
    if mode != "circular":
        backward = getattr(P.ops.aten, f"{mode}_pad1d_backward")
        with pytest.raises(RuntimeError, match="overflows the output size"):
            backward(P.randn(2, 3), x, pad)


def test_replication_pad_with_a_left_pad_beyond_the_input_replicates_the_last_element():
    # a left pad below -in is only reachable with a right pad as large: o - l must not overflow
    x = P.arange(3.).reshape(1, 3)
    for pad in ([-2 ** 62, 2 ** 62 + 2], [INT64_MIN, INT64_MAX]):
        y = P.ops.aten.replication_pad1d(x, pad)
        assert y.tolist() == [[2.0] * (3 + pad[0] + pad[1])]


def test_reflection_pad3d_with_one_int64_min_pad_raises():
    with pytest.raises(RuntimeError, match="overflows the output size"):
        P.ops.aten.reflection_pad3d(P.zeros(1, 5, 3, 3, dtype=P.bfloat16), INT64_MIN)

# ---- interpolation ---------------------------------------------------------------------

INTERP_CASES = [
    ((2, 3, 5), dict(size=8, mode="nearest")),
    ((2, 3, 5), dict(scale_factor=2, mode="nearest")),
    ((1, 2, 5, 4), dict(size=(3, 7), mode="nearest")),
    ((1, 2, 5, 4), dict(scale_factor=(1.7, 0.6), mode="nearest")),
    ((1, 2, 3, 4, 3), dict(size=(4, 2, 5), mode="nearest")),
    ((2, 3, 5), dict(size=8, mode="linear", align_corners=False)),
    ((2, 3, 5), dict(scale_factor=1.5, mode="linear", align_corners=True)),
    ((1, 2, 5, 4), dict(size=(3, 7), mode="bilinear", align_corners=False)),
    ((1, 2, 5, 4), dict(size=(8, 1), mode="bilinear", align_corners=True)),
    ((1, 2, 5, 4), dict(scale_factor=(1.7, 2.3), mode="bilinear")),
    ((1, 2, 5, 4), dict(scale_factor=(1.7, 2.3), mode="bilinear", recompute_scale_factor=True)),
    ((1, 2, 5, 4), dict(size=(9, 6), mode="bicubic", align_corners=False)),
    ((1, 2, 5, 4), dict(scale_factor=1.5, mode="bicubic", align_corners=True)),
    ((1, 2, 3, 4, 3), dict(size=(4, 2, 5), mode="trilinear")),
    ((1, 2, 6, 5), dict(size=(4, 3), mode="area")),
]


@pytest.mark.parametrize("case", INTERP_CASES)
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64, ptl.bfloat16])
def test_interpolate_vs_torch(case, dtype):
    shape, kw = case
    x, _ = make(shape, dtype, "sliced", seed=100)
    got = F.interpolate(x, **kw)
    assert got.dtype == dtype
    rtol, atol = CONV_TOL[dtype]
    close_to_torch(got, lambda: TF.interpolate(to_torch(x).double(), **kw), "", rtol=rtol,
                   atol=atol, check_dtype=False)


@pytest.mark.parametrize("align", [False, True])
def test_bilinear_numpy_reference(align):
    x, xa = make((2, 3, 4, 6), ptl.float64, "transposed", seed=101)
    assert_close(F.interpolate(x, size=(7, 3), mode="bilinear", align_corners=align),
                 bilinear_ref(xa, 7, 3, align))


def test_nearest_uint8():
    x = ptl.tensor(np.arange(24).reshape(1, 2, 3, 4) * 10, dtype=ptl.uint8)
    got = F.interpolate(x, scale_factor=1.5)
    assert got.dtype == ptl.uint8
    close_to_torch(got, lambda: TF.interpolate(to_torch(x), scale_factor=1.5), "")


INTERP_GRADS = [
    ("UpsampleNearest1DBackward0", dict(size=7, mode="nearest"), (1, 2, 3)),
    ("UpsampleNearest2DBackward0", dict(scale_factor=(1.5, 2), mode="nearest"), (1, 1, 3, 2)),
    ("UpsampleNearest3DBackward0", dict(size=(3, 2, 3), mode="nearest"), (1, 1, 2, 2, 2)),
    ("UpsampleLinear1DBackward0", dict(size=7, mode="linear"), (1, 2, 3)),
    ("UpsampleBilinear2DBackward0", dict(size=(4, 5), mode="bilinear", align_corners=True),
     (1, 1, 3, 2)),
    ("UpsampleTrilinear3DBackward0", dict(size=(3, 3, 2), mode="trilinear"), (1, 1, 2, 2, 2)),
    ("UpsampleBicubic2DBackward0", dict(size=(5, 4), mode="bicubic"), (1, 1, 3, 3)),
]


@pytest.mark.parametrize("i", range(len(INTERP_GRADS)))
def test_interpolate_gradcheck(i):
    name, kw, shape = INTERP_GRADS[i]
    x, _ = rnd(shape, seed=110 + i, requires_grad=True)
    assert type(F.interpolate(x, **kw).grad_fn).__name__ == name
    assert gradcheck(lambda x: F.interpolate(x, **kw), (x,))


INTERP_ERRORS = [
    lambda F, t: F.interpolate(t.randn(1, 4, 5, 5), size=3, scale_factor=2),
    lambda F, t: F.interpolate(t.randn(1, 4, 5, 5)),
    lambda F, t: F.interpolate(t.randn(1, 4, 5, 5), scale_factor=2, mode="linear"),
    lambda F, t: F.interpolate(t.randn(1, 4, 5, 5), scale_factor=2, mode="trilinear"),
    lambda F, t: F.interpolate(t.randn(1, 4, 5, 5), scale_factor=2, mode="nearest",
                               align_corners=True),
    lambda F, t: F.interpolate(t.randn(1, 4, 5, 5), scale_factor=2, mode="foo"),
    lambda F, t: F.interpolate(t.randn(1, 4, 5, 5), size=(0, 2)),
    lambda F, t: F.interpolate(t.randn(1, 2, 3, 3), scale_factor=0.1),
    lambda F, t: F.interpolate(t.randn(1, 2, 3, 3), scale_factor=(2, 3, 4)),
    lambda F, t: F.interpolate(t.randn(1, 2, 3, 3), size=(2, 3, 4)),
    lambda F, t: F.interpolate(t.ones(1, 2, 3, dtype=t.int64), scale_factor=2),
    lambda F, t: F.interpolate(t.ones(1, 2, 3, dtype=t.int64), scale_factor=2, mode="linear"),
]


@pytest.mark.parametrize("i", range(len(INTERP_ERRORS)))
def test_interpolate_errors(i):
    check_error(lambda: INTERP_ERRORS[i](F, P), lambda: INTERP_ERRORS[i](TF, torch))


# ---- pixel shuffle, fold/unfold --------------------------------------------------------

def test_pixel_shuffle_roundtrip():
    x, xa = make((2, 3, 8, 2, 3), ptl.float32, "transposed", seed=120)
    y = F.pixel_shuffle(x, 2)
    ref = xa.reshape(2, 3, 2, 2, 2, 2, 3).transpose(0, 1, 2, 5, 3, 6, 4).reshape(2, 3, 2, 4, 6)
    assert_close(y, ref, dtype=ptl.float32)
    assert_close(F.pixel_unshuffle(y, 2), xa, dtype=ptl.float32)
    xg, _ = rnd((1, 4, 2, 2), requires_grad=True)
    assert gradcheck(lambda x: F.pixel_shuffle(x, 2), (xg,))


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=(2, 3), stride=(2, 1)),
                                dict(kernel_size=3, padding=1, dilation=2),
                                dict(kernel_size=(1, 2), stride=3)])
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64, ptl.bool])
def test_unfold_fold(kw, dtype):
    x, xa = make((2, 3, 6, 7), dtype, "transposed", seed=121)
    full = dict(kernel_size=1, dilation=1, padding=0, stride=1)
    full.update(kw)
    pair = {k: v if isinstance(v, tuple) else (v, v) for k, v in full.items()}
    cols = F.unfold(x, **kw)
    assert_close(cols, unfold_ref(xa, pair["kernel_size"], pair["dilation"], pair["padding"],
                                  pair["stride"]).astype(xa.dtype), dtype=dtype)
    assert_close(F.unfold(x[0], **kw), to_numpy_first(cols), dtype=dtype)
    if dtype != ptl.bool:
        back = F.fold(cols, (6, 7), **kw)
        assert back.dtype == dtype
        close_to_torch(back, lambda: TF.fold(to_torch(cols).double(), (6, 7), **kw), "fold",
                       check_dtype=False)


def to_numpy_first(t):
    return np.array(t.numpy())[0]


def test_fold_unfold_gradcheck():
    x, _ = rnd((1, 2, 4, 5), requires_grad=True)
    y = F.unfold(x, 2, padding=1, stride=(1, 2))
    assert type(y.grad_fn).__name__ == "Im2ColBackward0"
    assert gradcheck(lambda x: F.unfold(x, 2, padding=1, stride=(1, 2)), (x,))
    c, _ = rnd((1, 8, 6), seed=1, requires_grad=True)
    assert type(F.fold(c, (3, 4), 2).grad_fn).__name__ == "Col2ImBackward0"
    assert gradcheck(lambda c: F.fold(c, (3, 4), 2), (c,))


FOLD_ERRORS = [
    lambda F, t: F.pixel_shuffle(t.randn(2, 2), 2),
    lambda F, t: F.pixel_shuffle(t.randn(1, 3, 2, 2), 2),
    lambda F, t: F.pixel_unshuffle(t.randn(1, 3, 3, 3), 2),
    lambda F, t: F.pixel_unshuffle(t.randn(1, 3, 4, 3), 2),
    lambda F, t: F.unfold(t.randn(1, 4, 5, 5), 7),
    lambda F, t: F.unfold(t.randn(1, 1, 3, 3), 3, stride=0),
    lambda F, t: F.unfold(t.randn(1, 1, 3, 3), 0),
    lambda F, t: F.unfold(t.randn(1, 1, 3, 3), 2, padding=-1),
    lambda F, t: F.unfold(t.randn(1, 1, 3, 3), 2, dilation=0),
    lambda F, t: F.unfold(t.randn(1, 1, 0, 3), 2),
    lambda F, t: F.unfold(t.ones(1, 1, 3, 3, dtype=t.int64), 2),
    lambda F, t: F.fold(t.randn(1, 5, 4), (3, 3), 2),
    lambda F, t: F.fold(t.randn(1, 4, 5), (3, 3), 2),
    lambda F, t: F.fold(t.randn(1, 0, 4), (3, 3), 2),
    lambda F, t: F.fold(t.randn(1, 9, 1), (1, 1), 3),
    # a kernel wider than the image: the block count rounds down to 0 (it once rounded
    # toward zero, to 1, and fold returned a 1x1 image)
    lambda F, t: F.fold(t.ones(1, 4, 1), (1, 1), 2, stride=2),
    lambda F, t: F.fold(t.ones(1, 4, 4), (1, 1), 2, stride=2),
    lambda F, t: F.fold(t.randn(1, 4, 1), (1, 1), 2),          # length checked first
    lambda F, t: F.fold(t.randn(1, 4, 0), (1, 1), 2),          # then the grid's size
    lambda F, t: F.unfold(t.randn(1, 1, 1, 1), 2, stride=2),
    # kernel_height * kernel_width wrapped to 0 and fold divided by it (fuzz seed 89)
    lambda F, t: F.fold(t.zeros(2, 1), (2, 1), 2**32, dilation=(1, 2), padding=2),
]


@pytest.mark.parametrize("call, message", [
    # sizes that overflow int64 once padded, dilated or multiplied raise instead of wrapping
    (lambda: F.unfold(P.zeros(1, 1, 4, 4), 2, padding=(2**62, 0)),
     "the size 4 with padding 4611686018427387904, dilation 1 and kernel size 2 overflows"),
    (lambda: F.unfold(P.zeros(1, 1, 4, 4), 2, padding=2**40),
     r"the number of sliding blocks, 2199023255555 \* 2199023255555, overflows int64"),
    (lambda: F.fold(P.zeros(1, 4, 9), (4, 4), 2, dilation=(2**62, 1)),
     r"calculated shape of the array of sliding blocks as \(-4611686018427387900, 3\)"),
    (lambda: F.unfold(P.zeros(1, 1, 4, 4), 2, dilation=(2**62, 2**62)),
     "components must be at least one"),
    (lambda: F.unfold(P.zeros(3, 4, 4), 2**31, padding=2**40),
     "overflows int64"),
    # PyTorch's unfold returns from this one without a word
    (lambda: F.unfold(P.zeros(1, 1, 2, 2), (2**32, 2**32)),
     "Given kernel_width = 4294967296 and kernel_height = 4294967296 the product"),
])
def test_fold_sizes_that_overflow_int64_raise(call, message):
    with pytest.raises(RuntimeError, match=message):
        call()


@pytest.mark.parametrize("call", [
    lambda x, w: F.conv2d(x, w, padding=2**62),
    lambda x, w: F.conv_transpose2d(x, w, stride=2**62),     # wrapped to a 1x1 output
    lambda x, w: F.conv_transpose2d(x, w, stride=2**30),     # each side fits, the area not
    lambda x, w: F.conv_transpose2d(x, w, dilation=2**62),
])
def test_conv_extents_that_overflow_int64_raise(call):
    x, w = P.zeros(1, 1, 4, 4), P.zeros(1, 1, 2, 2)
    with pytest.raises(RuntimeError, match="has an extent or output size that overflows int64"):
        call(x, w)


@pytest.mark.parametrize("i", range(len(FOLD_ERRORS)))
def test_fold_errors(i):
    check_error(lambda: FOLD_ERRORS[i](F, P), lambda: FOLD_ERRORS[i](TF, torch))


# ---- grid sampling ---------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_vs_torch(mode, padding_mode, align):
    x, _ = make((2, 3, 5, 4), ptl.float32, "transposed", seed=130)
    g, _ = make((2, 3, 6, 2), ptl.float32, seed=131, low=-1.3, high=1.3)
    got = F.grid_sample(x, g, mode, padding_mode, align)
    close_to_torch(got, lambda: TF.grid_sample(to_torch(x), to_torch(g), mode, padding_mode,
                                               align), "", rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("padding_mode", ["zeros", "border"])
def test_grid_sample_gradcheck(padding_mode):
    x, _ = rnd((1, 2, 3, 4), seed=132, requires_grad=True)
    g, _ = rnd((1, 2, 3, 2), seed=133)
    g = (g * 0.6).detach().requires_grad_(True)
    y = F.grid_sample(x, g, padding_mode=padding_mode, align_corners=False)
    assert type(y.grad_fn).__name__ == "GridSampler2DBackward0"
    assert gradcheck(lambda x, g: F.grid_sample(x, g, padding_mode=padding_mode,
                                                align_corners=False), (x, g))


@pytest.mark.parametrize("size", [(2, 3, 4, 5), (1, 1, 3, 2, 4), (1, 1, 1, 3)])
@pytest.mark.parametrize("align", [False, True])
def test_affine_grid(size, align):
    nd = len(size) - 2
    theta, _ = rnd((size[0], nd, nd + 1), seed=140, requires_grad=True)
    got = F.affine_grid(theta, size, align_corners=align)
    close_to_torch(got.detach(), lambda: TF.affine_grid(to_torch(theta), size,
                                                        align_corners=align), "")
    assert gradcheck(lambda t: F.affine_grid(t, size, align_corners=align), (theta,))


GRID_ERRORS = [
    lambda F, t: F.grid_sample(t.randn(1, 4, 5, 5), t.randn(1, 3, 3, 3), align_corners=False),
    lambda F, t: F.grid_sample(t.randn(1, 4, 5, 5), t.randn(2, 3, 3, 2), align_corners=False),
    lambda F, t: F.grid_sample(t.randn(1, 4, 5, 5), t.randn(1, 3, 3, 2), mode="foo"),
    lambda F, t: F.grid_sample(t.randn(1, 4, 5, 5), t.randn(1, 3, 3, 2), padding_mode="foo"),
    lambda F, t: F.grid_sample(t.randn(1, 2, 0, 3), t.randn(1, 2, 2, 2), align_corners=False),
    lambda F, t: F.grid_sample(t.randn(1, 2, 3, 3).double(), t.randn(1, 2, 2, 2)),
    lambda F, t: F.affine_grid(t.randn(1, 3, 3), (1, 1, 4, 4), align_corners=False),
    lambda F, t: F.affine_grid(t.randn(1, 2, 3), (1, 1, 4), align_corners=False),
    lambda F, t: F.affine_grid(t.ones(1, 2, 3, dtype=t.int64), (1, 1, 4, 4)),
    lambda F, t: F.affine_grid(t.randn(1, 2, 3), (1, 1, 0, 4)),
]


@pytest.mark.parametrize("i", range(len(GRID_ERRORS)))
def test_grid_errors(i):
    check_error(lambda: GRID_ERRORS[i](F, P), lambda: GRID_ERRORS[i](TF, torch))


def _leak_round(x, w, g):
    y = F.max_pool2d(F.conv2d(F.pad(x, (1, 1, 1, 1), mode="reflect"), w, groups=1), 2)
    y = F.interpolate(y, scale_factor=2, mode="bilinear")
    y = F.avg_pool2d(y, 2, ceil_mode=True) + F.adaptive_max_pool2d(y, 3)
    y = F.grid_sample(y, g, align_corners=False).sum() + F.unfold(x, 2).sum()
    y = y + F.conv_transpose2d(x, w.transpose(0, 1), stride=2).sum()
    y.backward()
    for bad in (lambda: F.conv2d(x, w[:, :1]), lambda: F.max_pool2d(x, 3, padding=2),
                lambda: F.pad(x, (9, 9), mode="reflect"), lambda: F.unfold(x, 9),
                lambda: F.interpolate(x, size=(0, 1))):
        with pytest.raises(RuntimeError):
            bad()


def test_live_counts_flat_over_forward_backward_and_errors():
    from pytorchlite import _C
    import gc
    x, _ = rnd((2, 2, 6, 6), requires_grad=True)
    w, _ = rnd((3, 2, 3, 3), seed=1, requires_grad=True)
    g, _ = rnd((2, 2, 2, 2), seed=2)
    _leak_round(x, w, g)
    x.grad = None
    w.grad = None
    gc.collect()
    before = _C._live_counts()
    for _ in range(3):
        _leak_round(x, w, g)
    x.grad = None
    w.grad = None
    gc.collect()
    assert _C._live_counts() == before


def test_conv2d_parameter_grid_vs_torch():
    """Every combination of stride, padding and dilation of a small conv matches torch and
    the NumPy reference."""
    x, xa = rnd((1, 2, 6, 5), seed=150)
    w, wa = rnd((2, 2, 2, 3), seed=151)
    for s, p, d in itertools.product((1, 2), (0, 1), (1, 2)):
        got = F.conv2d(x, w, stride=s, padding=p, dilation=d)
        assert_close(got, conv_ref(xa, wa, None, [s, s], [p, p], [d, d], 1))
        close_to_torch(got, lambda: TF.conv2d(to_torch(x), to_torch(w), stride=s, padding=p,
                                              dilation=d), f"s={s} p={p} d={d}")
