"""The fused recurrent cells (_thnn_fused_lstm_cell / _thnn_fused_gru_cell and their
backwards, nn.LSTMCell and nn.GRUCell), cummax / cummin / logcumsumexp, kthvalue / median /
nanmedian / mode, aminmax, trace, diag_embed, masked_scatter, renorm, histc, searchsorted and
bucketize on CUDA tensors
against the CPU kernels: bit for bit where the device computes what the CPU does (the scans'
extrema, the selections' values and indices, diag_embed, aminmax, masked_scatter, histc, the
searches' positions), to
rounding elsewhere, in every dtype each op
takes, on contiguous, transposed and sliced inputs with ties, NaN, +-inf and +-0.0, 0-dim and
size-0 tensors; float64 gradchecks on the device; the CPU kernels' errors and the device
check.  Each test skips, with the reason the device is missing, on a machine without a GPU;
tools/gpu_check.sh runs them on one, with PTL_REQUIRE_GPU=1 turning a skip into a failure."""
import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn as nn
from pytorchlite.autograd import gradcheck
from device_required import bits, pytestmark, require_device, same  # noqa: F401

aten = ptl.ops.aten
DTYPES = [ptl.bool, ptl.uint8, ptl.int8, ptl.int16, ptl.int32, ptl.int64, ptl.float16,
          ptl.bfloat16, ptl.float32, ptl.float64]
FLOATS = {ptl.float16, ptl.bfloat16, ptl.float32, ptl.float64}
SHAPES = [(7,), (3, 5), (2, 33), (1, 700), (300, 3), (2, 3, 4), (), (0, 3), (3, 0)]


def values(rng, shape, dtype):
    if dtype == ptl.bool:
        return ptl.tensor(rng.integers(0, 2, size=shape).astype(bool))
    if dtype not in FLOATS:
        return ptl.tensor(rng.integers(0 if dtype == ptl.uint8 else -3, 4, size=shape)).to(dtype)
    v = rng.integers(-3, 4, size=shape).astype(np.float64) * 0.5
    if v.size:
        flat = v.reshape(-1)
        picks = rng.integers(0, flat.size, size=max(1, flat.size // 6))
        flat[picks] = rng.choice([np.nan, np.inf, -np.inf, -0.0, 0.0], size=picks.size)
    return ptl.tensor(v).to(dtype)


def close(cuda_result, cpu_result, rtol):
    assert cuda_result.device.type == "cuda"
    assert cuda_result.shape == cpu_result.shape and cuda_result.dtype == cpu_result.dtype
    np.testing.assert_allclose(cuda_result.cpu().double().numpy(),
                               cpu_result.double().numpy(), rtol=rtol, atol=rtol)


def views(t):
    """(cpu, cuda) pairs: t, transposed, a slice of a larger tensor"""
    out = [(t, t.cuda())]
    if t.dim() == 2:
        tr = t.t().contiguous()
        out.append((tr.t(), tr.cuda().t()))
    if t.dim() >= 1 and t.shape[0] > 0:
        big = ptl.cat([t, t], 0)
        out.append((big[t.shape[0]:], big.cuda()[t.shape[0]:]))
    return out


def dims(t):
    return range(-max(t.dim(), 1), max(t.dim(), 1))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_cummax_cummin(dtype):
    rng = np.random.default_rng(0)
    for shape in SHAPES:
        for c, g in views(values(rng, shape, dtype)):
            for d in dims(c):
                for name in ("cummax", "cummin"):
                    for gv, cv in zip(getattr(g, name)(d), getattr(c, name)(d)):
                        same(gv, cv)


@pytest.mark.parametrize("dtype", sorted(FLOATS, key=str), ids=str)
def test_logcumsumexp(dtype):
    rng = np.random.default_rng(1)
    rtol = 1e-12 if dtype == ptl.float64 else 1e-6 if dtype == ptl.float32 else 1e-2
    for shape in SHAPES:
        for c, g in views(values(rng, shape, dtype)):
            for d in dims(c):
                close(g.logcumsumexp(d), c.logcumsumexp(d), rtol)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_selections(dtype):
    rng = np.random.default_rng(2)
    for shape in SHAPES:
        for c, g in views(values(rng, shape, dtype)):
            for d in dims(c):
                n = c.shape[d] if c.dim() else 1
                if n == 0:
                    continue
                calls = [lambda t: t.mode(d), lambda t: t.mode(d, keepdim=True)]
                if dtype != ptl.bool:
                    calls += [lambda t: t.kthvalue(1, d), lambda t: t.kthvalue(n, d, True),
                              lambda t: t.kthvalue((n + 1) // 2, d), lambda t: t.median(d),
                              lambda t: t.nanmedian(d, keepdim=True)]
                for fn in calls:
                    for gv, cv in zip(fn(g), fn(c)):
                        same(gv, cv)
            if dtype != ptl.bool:
                same(g.median(), c.median())
                same(g.nanmedian(), c.nanmedian())


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_aminmax_trace_diag_embed(dtype):
    rng = np.random.default_rng(3)
    for shape in ((5,), (3, 7), (2, 40, 3), (), (1000, 3)):
        for c, g in views(values(rng, shape, dtype)):
            for kw in [{}] + [{"dim": d, "keepdim": k} for d in dims(c) for k in (False, True)]:
                for gv, cv in zip(ptl.aminmax(g, **kw), ptl.aminmax(c, **kw)):
                    same(gv, cv)
            if 1 <= c.dim() <= 2:
                for off in (0, 1, -2):
                    same(ptl.diag_embed(g, off), ptl.diag_embed(c, off))
            if c.dim() == 2 and dtype != ptl.bool:
                got, want = g.trace(), c.trace()
                close(got, want, 1e-12 if dtype == ptl.float64 else 1e-5 if dtype ==
                      ptl.float32 else 1e-2 if dtype in FLOATS else 0)


@pytest.mark.parametrize("fn", [
    lambda t: t.cummax(1)[0], lambda t: t.cummin(0)[0], lambda t: t.logcumsumexp(1),
    lambda t: t.kthvalue(2, 0)[0], lambda t: t.median(1)[0], lambda t: t.nanmedian(),
    lambda t: t.mode(1)[0], lambda t: t.trace(), lambda t: ptl.diag_embed(t, 1),
    lambda t: ptl.aminmax(t, dim=0)[0], lambda t: t.renorm(2, 1, 0.5),
    lambda t: t.masked_scatter(t > 0, t * 2)],
    ids=["cummax", "cummin", "logcumsumexp", "kthvalue", "median", "nanmedian", "mode",
         "trace", "diag_embed", "aminmax", "renorm", "masked_scatter"])
def test_gradcheck_on_the_device(fn):
    x = ptl.randn(4, 3, dtype=ptl.float64, device="cuda").t().requires_grad_(True)
    assert gradcheck(fn, (x,))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_masked_scatter_and_renorm(dtype):
    rng = np.random.default_rng(6)
    for shape, mshape in (((4, 5), (5,)), ((3, 1), (3, 6)), ((300, 7), (300, 7)), ((), ())):
        x = values(rng, shape, dtype)
        mv = rng.integers(0, 2, size=mshape).astype(bool)
        nset = int(np.broadcast_to(mv, np.broadcast_shapes(shape, mshape)).sum())
        src = values(rng, (2 * nset + 1,), dtype)
        for s in (src, src[::2]):
            same(x.cuda().masked_scatter(ptl.tensor(mv).cuda(), s.cuda()),
                 x.masked_scatter(ptl.tensor(mv), s))
        if mv.shape == x.shape:
            got = x.cuda()
            got.masked_scatter_(ptl.tensor(mv).cuda(), src.cuda())
            same(got, x.clone().masked_scatter_(ptl.tensor(mv), src))
    if dtype in (ptl.float32, ptl.float64):
        x = ptl.tensor(rng.standard_normal((6, 5, 3))).to(dtype)
        for c, g in views(x[:, :, 0]) + [(x, x.cuda())]:
            close(g.renorm(2, 0, 1.0), c.renorm(2, 0, 1.0), 1e-5)
            close(g.renorm(1.5, -1, 0.3), c.renorm(1.5, -1, 0.3), 1e-5)


@pytest.mark.parametrize("dtype", sorted(FLOATS, key=str), ids=str)
def test_histc(dtype):
    rng = np.random.default_rng(7)
    for shape in ((100000,), (7, 9), (), (0,)):
        x = ptl.tensor(rng.standard_normal(shape)).to(dtype)
        for c, g in views(x):
            for args in ((10,), (7, -1, 1), (5, 0.5, 0.5), (3, -0.3, 2.0), (1000, 0, 0)):
                same(g.histc(*args), c.histc(*args))


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != ptl.bool], ids=str)
def test_searchsorted_bucketize(dtype):
    rng = np.random.default_rng(8)
    for bshape, vshape in (((7,), (5,)), ((7,), (30, 40)), ((3, 600), (3, 4)), ((6,), ()),
                           ((4,), (0,)), ((0,), (3,))):
        b = ptl.tensor(np.sort(rng.integers(0, 9, size=bshape), -1)).to(dtype)
        v = ptl.tensor(rng.integers(-1, 11, size=vshape).astype(np.float64))
        if v.numel():
            v.view(-1)[0] = float("nan")
        for vals in (v.to(dtype), v):
            for kw in ({}, {"right": True}, {"out_int32": True}):
                same(ptl.searchsorted(b.cuda(), vals.cuda(), **kw), ptl.searchsorted(b, vals, **kw))
                if b.dim() == 1:
                    same(ptl.bucketize(vals.cuda(), b.cuda(), **kw), ptl.bucketize(vals, b, **kw))
            same(ptl.searchsorted(b.cuda(), 3, right=True), ptl.searchsorted(b, 3, right=True))
        if b.dim() == 1 and b.numel():
            perm = ptl.tensor(rng.permutation(b.numel()))
            shuffled = ptl.empty_like(b)
            shuffled[perm] = b
            same(ptl.searchsorted(shuffled.cuda(), v.cuda(), sorter=perm.cuda()),
                 ptl.searchsorted(shuffled, v, sorter=perm))


def test_errors_are_the_cpu_kernels():
    x = ptl.randn(3, 4, device="cuda")
    with pytest.raises(RuntimeError, match="sorter index out of range"):
        ptl.searchsorted(ptl.tensor([3., 1.], device="cuda"), x,
                         sorter=ptl.tensor([0, 2], device="cuda"))
    with pytest.raises(RuntimeError, match="boundaries and input value tensors should have same "
                                           "device type"):
        ptl.searchsorted(ptl.tensor([1., 2.], device="cuda"), ptl.tensor([1.5]))
    with pytest.raises(RuntimeError, match="torch.histc: max must be larger than min"):
        x.histc(4, 2, 1)
    with pytest.raises(RuntimeError, match="Number of elements of source < number of ones"):
        x.masked_scatter(x > -10, ptl.randn(3, device="cuda"))
    with pytest.raises(RuntimeError, match="kthvalue\\(\\): selected number k out of range"):
        x.kthvalue(5, 1)
    with pytest.raises(IndexError, match="median\\(\\): Expected reduction dim 1 to have "
                                         "non-zero size."):
        ptl.zeros(3, 0, device="cuda").median(1)
    with pytest.raises(NotImplementedError,
                       match="\"logcumsumexp_out_cpu\" not implemented for 'Long'"):
        ptl.tensor([1, 2], device="cuda").logcumsumexp(0)
    with pytest.raises(RuntimeError, match="trace: expected a matrix"):
        ptl.ones(3, device="cuda").trace()


# ---- the fused cells ----

def cell_args(rng, gates, B, H, bias, dtype):
    G = gates * H
    t = [rng.standard_normal((B, G)), rng.standard_normal((B, G)),
         rng.standard_normal((B, H)) * 0.5]
    if bias:
        t += [rng.standard_normal(G) * 0.3, rng.standard_normal(G) * 0.3]
    return [ptl.tensor(v).to(dtype) for v in t]


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64], ids=str)
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_fused_cells_and_backwards(dtype, cell):
    rng = np.random.default_rng(4)
    rtol = 1e-12 if dtype == ptl.float64 else 2e-5
    fwd = aten._thnn_fused_lstm_cell if cell == "lstm" else aten._thnn_fused_gru_cell
    for B, H in ((1, 1), (3, 5), (64, 33), (2, 300), (0, 4), (3, 0)):
        for bias in (True, False):
            cpu = cell_args(rng, 4 if cell == "lstm" else 3, B, H, bias, dtype)
            dev = [t.cuda() for t in cpu]
            want, got = fwd(*cpu), fwd(*dev)
            for g, w in zip(got, want):
                close(g, w, rtol)
            gh = ptl.tensor(rng.standard_normal((B, H))).to(dtype)
            if cell == "lstm":
                gc = ptl.tensor(rng.standard_normal((B, H))).to(dtype)
                for a, b in ((gh, gc), (None, gc), (gh, None)):
                    w = aten._thnn_fused_lstm_cell_backward_impl(a, b, cpu[2], want[1], want[2],
                                                                 bias)
                    g = aten._thnn_fused_lstm_cell_backward_impl(
                        a.cuda() if a is not None else None, b.cuda() if b is not None else None,
                        dev[2], got[1], got[2], bias)
                    for gv, wv in zip(g, w):
                        if wv is None:
                            assert gv is None
                        else:
                            close(gv, wv, rtol)
            else:
                w = aten._thnn_fused_gru_cell_backward(gh, want[1], bias)
                g = aten._thnn_fused_gru_cell_backward(gh.cuda(), got[1], bias)
                for gv, wv in zip(g, w):
                    if wv is None:
                        assert gv is None
                    else:
                        close(gv, wv, rtol)


@pytest.mark.parametrize("name", ["LSTMCell", "GRUCell"])
def test_cell_modules_train_on_the_device(name):
    ptl.manual_seed(0)
    cpu = getattr(nn, name)(4, 6).double()
    dev = getattr(nn, name)(4, 6).double()
    dev.load_state_dict(cpu.state_dict())
    dev.cuda()
    x = ptl.randn(5, 4, dtype=ptl.float64)
    xs = [x.clone().requires_grad_(True), x.cuda().requires_grad_(True)]
    results = []
    for mod, xi in zip((cpu, dev), xs):
        out = mod(xi)
        outs = list(out) if isinstance(out, tuple) else [out]
        sum((o * (i + 2)).sum() for i, o in enumerate(outs)).backward()
        results.append([o.detach() for o in outs] + [xi.grad] +
                       [p.grad for p in mod.parameters()])
    for w, g in zip(*results):
        close(g, w, 1e-12)


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_fused_cells_gradcheck_on_the_device(cell):
    rng = np.random.default_rng(5)
    args = [t.cuda().requires_grad_(True)
            for t in cell_args(rng, 4 if cell == "lstm" else 3, 2, 3, True, ptl.float64)]
    fwd = aten._thnn_fused_lstm_cell if cell == "lstm" else aten._thnn_fused_gru_cell
    assert gradcheck(lambda *a: fwd(*a)[:2] if cell == "lstm" else fwd(*a)[0], tuple(args))


def test_fused_cell_errors():
    g = ptl.randn(2, 8, device="cuda", dtype=ptl.float64)
    with pytest.raises(RuntimeError, match="expected scalar type Double but found Float"):
        aten._thnn_fused_lstm_cell(g, g.float(), g[:, :2])
    with pytest.raises(RuntimeError, match=(
            r"^Expected all tensors to be on the same device, but found at least two devices, "
            r"cuda:0 and cpu! \(when checking argument for argument cx in method "
            r"wrapper_CUDA___thnn_fused_lstm_cell\)$")):
        aten._thnn_fused_lstm_cell(g, g, g[:, :2].cpu())
