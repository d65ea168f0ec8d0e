"""F.linear_cross_entropy, nn.LinearCrossEntropyLoss and nn.LinearCrossEntropyOptions: the
reference path and the chunked one (Note [Chunked linear cross entropy]) against a NumPy
float64 formula, the chunked one against the reference at and across every chunk boundary,
gradcheck, and PyTorch 2.13 itself (live, or its stored answers: tests/golden.py) for the
values, the chunk sizes "auto" resolves to, the warnings and the error messages."""
import re
import warnings

import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn.functional as F
from pytorchlite.autograd import gradcheck
from helpers import torch
import golden

Options = ptl.nn.LinearCrossEntropyOptions


def _np_loss(x, w, t, b=None, cw=None, reduction="mean", ignore_index=-100):
    """float64 cross entropy of x @ w.T + b against class indices t (x [N, F] or [F])."""
    x2, t1 = np.atleast_2d(x), np.atleast_1d(t)
    z = x2 @ w.T + (0 if b is None else b)
    m = z.max(1, keepdims=True)
    lse = np.log(np.exp(z - m).sum(1)) + m[:, 0]
    keep = t1 != ignore_index
    safe = np.where(keep, t1, 0)
    rw = keep * (1.0 if cw is None else cw[safe])
    rows = rw * (lse - z[np.arange(len(t1)), safe])
    if reduction == "none":
        return rows if np.ndim(x) == 2 else rows[0]
    if reduction == "sum":
        return rows.sum()
    return rows.sum() / rw.sum() if rw.sum() else np.nan


def _case(n, f, c, seed, bias=False, cw=False, ignore=0):
    """float64 leaves x [n, f], w [c, f], b [c] (or None), class weight (or None), targets
    [n] of which `ignore` are -100."""
    rng = np.random.default_rng(seed)
    x = ptl.tensor(rng.normal(size=(n, f)), requires_grad=True)
    w = ptl.tensor(rng.normal(size=(c, f)), requires_grad=True)
    b = ptl.tensor(rng.normal(size=c), requires_grad=True) if bias else None
    k = ptl.tensor(rng.uniform(0.5, 2, size=c)) if cw else None
    t = rng.integers(0, c, size=n)
    t[rng.permutation(n)[:ignore]] = -100
    return x, w, b, k, ptl.tensor(t)


def _np(t):
    return None if t is None else t.detach().numpy()


def _grads(loss, leaves):
    leaves = [p for p in leaves if p is not None]
    g = ptl.ones_like(loss) if loss.dim() else None
    return ptl.autograd.grad(loss, leaves, g)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("chunk", [1, 2, 3, 6, 7, 8, None])
def test_chunked_against_numpy_and_the_reference(reduction, chunk):
    """7 rows in chunks of 1, 2, 3 (a partial last chunk), 6, 7 (one chunk), 8 (past N) and
    chunking_method's pick: the same losses and gradients as options=None and NumPy."""
    options = Options(batch_chunk_size=chunk) if chunk else Options()
    for seed, (bias, cw, ignore) in enumerate([(False, False, 0), (True, True, 2),
                                              (True, False, 7), (False, True, 3)]):
        x, w, b, k, t = _case(7, 4, 5, seed, bias, cw, ignore)
        kw = dict(linear_bias=b, weight=k, reduction=reduction)
        got = F.linear_cross_entropy(x, w, t, options=options, **kw)
        ref = F.linear_cross_entropy(x, w, t, **kw)
        want = _np_loss(_np(x), _np(w), _np(t), _np(b), _np(k), reduction)
        np.testing.assert_allclose(got.detach().numpy(), want, rtol=1e-12, atol=1e-12)
        assert got.dtype == ptl.float64 and got.shape == ref.shape
        if reduction == "mean" and ignore == 7:
            continue   # every target ignored: nan, and nan gradients
        for g, r in zip(_grads(got, [x, w, b]), _grads(ref, [x, w, b])):
            np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_chunked_gradcheck(reduction):
    x, w, b, k, t = _case(5, 3, 4, 7, bias=True, cw=True, ignore=1)
    options = Options(batch_chunk_size=2, allow_retain_graph=True)
    fn = (lambda x, w, b: F.linear_cross_entropy(x, w, t, linear_bias=b, weight=k,
                                                 reduction=reduction, options=options))
    assert gradcheck(fn, [x, w, b])


def test_chunked_unbatched_and_only_some_gradients():
    x, w, b, _, t = _case(1, 3, 4, 3, bias=True)
    got = F.linear_cross_entropy(x[0], w, t[0], linear_bias=b, options=Options())
    assert got.shape == ()
    np.testing.assert_allclose(got.item(), _np_loss(_np(x)[0], _np(w), _np(t)[0], _np(b)))
    xd = x.detach()
    loss = F.linear_cross_entropy(xd, w, t, options=Options(), reduction="sum")
    loss.backward()
    ref_w = ptl.autograd.grad(F.linear_cross_entropy(xd, w, t, reduction="sum"), [w])[0]
    np.testing.assert_allclose(w.grad.numpy(), ref_w.numpy(), rtol=1e-12)
    assert b.grad is None and xd.grad is None
    with ptl.no_grad():
        out = F.linear_cross_entropy(x, w, t, options=Options())
    assert out.grad_fn is None and not out.requires_grad


def test_chunked_second_backward():
    """mean / sum consume their gradients: a second backward raises unless
    allow_retain_graph; reduction="none" recomputes, so it may run twice."""
    x, w, _, _, t = _case(4, 3, 5, 1)
    loss = F.linear_cross_entropy(x, w, t, options=Options(batch_chunk_size=3))
    loss.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match=re.escape(
            "linear_cross_entropy chunked backward called twice; retain_graph=True / double "
            "backward are not supported.")):
        loss.backward()
    x.grad = None
    loss = F.linear_cross_entropy(x, w, t, options=Options(allow_retain_graph=True))
    loss.backward(retain_graph=True)
    first = x.grad.clone()
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * first.numpy())
    rows = F.linear_cross_entropy(x, w, t, reduction="none", options=Options(batch_chunk_size=1))
    go = ptl.tensor([1.0, -2.0, 0.5, 3.0], dtype=ptl.float64)
    g1 = ptl.autograd.grad(rows, [x, w], go, retain_graph=True)
    g2 = ptl.autograd.grad(rows, [x, w], go)
    ref = ptl.autograd.grad(F.linear_cross_entropy(x, w, t, reduction="none"), [x, w], go)
    for a, b, r in zip(g1, g2, ref):
        np.testing.assert_allclose(a.numpy(), r.numpy(), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(b.numpy(), r.numpy(), rtol=1e-12, atol=1e-14)


def _reference_cases():
    """(input, linear_weight, target, kwargs) for the paths the reference handles alone:
    label smoothing, class probabilities, K-dimensional losses, unbatched input."""
    rng = np.random.default_rng(5)

    def r(*shape):
        return rng.normal(size=shape)
    probs = rng.uniform(size=(3, 4))
    probs /= probs.sum(1, keepdims=True)
    return [
        (r(3, 2), r(4, 2), rng.integers(0, 4, 3), dict(label_smoothing=0.2)),
        (r(3, 2), r(4, 2), probs, dict(weight=rng.uniform(1, 2, 4))),
        (r(3, 2), r(4, 5, 2), rng.integers(0, 4, (3, 5)), dict(linear_bias=r(4, 5))),
        (r(3, 2), r(4, 5, 2), rng.integers(0, 4, (3, 5)), dict(reduction="none",
                                                                ignore_index=1)),
        (r(2), r(4, 2), np.array(3), dict(linear_bias=r(4), reduction="sum")),
    ]


@pytest.mark.parametrize("case", range(5))
def test_reference_path_against_torch_and_composite(case):
    """options=None (and options that the chunked path cannot take: a warning, then the
    reference) is cross_entropy(linear(...)), with PyTorch's values and gradients."""
    x, w, t, kw = _reference_cases()[case]

    def run(lib, options=None):
        def ten(a, grad=False):
            return lib.tensor(a, dtype=lib.float64, requires_grad=grad)
        xx, ww = ten(x, True), ten(w, True)
        tt = lib.tensor(t) if t.dtype.kind == "i" else ten(t)
        kwargs = {k: ten(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
        loss = lib.nn.functional.linear_cross_entropy(xx, ww, tt, options=options, **kwargs)
        gx, gw = lib.autograd.grad(loss.sum(), [xx, ww])
        return {"loss": loss, "grad_input": gx, "grad_weight": gw}
    golden.assert_same_results(run, rtol=1e-12, atol=1e-12)
    ours = run(ptl)
    xx, ww = ptl.tensor(x, requires_grad=True), ptl.tensor(w, requires_grad=True)
    kwargs = {k: ptl.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    bias = kwargs.pop("linear_bias", None)
    logits = F.linear(xx, ww.reshape(-1, ww.shape[-1]), None if bias is None else
                      bias.reshape(-1)).reshape(*xx.shape[:-1], *ww.shape[:-1])
    tt = ptl.tensor(t)
    ref = F.cross_entropy(logits, tt, **kwargs)
    np.testing.assert_allclose(ours["loss"].detach().numpy(), ref.detach().numpy(), rtol=1e-14)
    if case == 4:
        return   # unbatched class indices: the chunked path takes it
    with pytest.warns(UserWarning) as caught:
        fell = run(ptl, Options())
    for k in ours:
        np.testing.assert_allclose(fell[k].detach().numpy(), ours[k].detach().numpy())
    golden.assert_equal([str(m.message) for m in caught], lambda: _torch_warnings(
            lambda: run(torch, torch.nn.LinearCrossEntropyOptions())), sub="warning")


def _torch_warnings(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [str(m.message) for m in caught]


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_chunked_against_torch(dtype, reduction):
    rng = np.random.default_rng(11)
    x, w, b = rng.normal(size=(9, 6)), rng.normal(size=(20, 6)) * 0.5, rng.normal(size=20)
    t = rng.integers(0, 20, 9)
    t[4] = 3
    tol = dict(bfloat16=2e-2, float32=1e-5, float64=1e-12)[dtype]

    def run(lib):
        dt = getattr(lib, dtype)
        xx = lib.tensor(x, dtype=dt, requires_grad=True)
        ww = lib.tensor(w, dtype=dt, requires_grad=True)
        bb = lib.tensor(b, dtype=dt, requires_grad=True)
        loss = lib.nn.functional.linear_cross_entropy(
            xx, ww, lib.tensor(t), linear_bias=bb, reduction=reduction, ignore_index=3,
            options=lib.nn.LinearCrossEntropyOptions(batch_chunk_size=4))
        gx, gw, gb = lib.autograd.grad(loss.sum(), [xx, ww, bb])
        return {"loss": loss.float(), "grad_input": gx.float(), "grad_weight": gw.float(),
                "grad_bias": gb.float(), "dtype": str(loss.dtype)}
    golden.assert_same_results(run, rtol=tol, atol=tol)


def test_auto_chunk_sizes_against_torch():
    """_adjust: what "auto", aspect_ratio[:N] and batch_chunk_size resolve to."""
    shapes = [(7, 4, 5), (1000, 64, 50000), (4096, 512, 32000), (3, 100, 10), (0, 4, 5)]
    settings = [dict(), dict(chunking_method="aspect_ratio"),
                dict(chunking_method="aspect_ratio:4"),
                dict(chunking_method=None, batch_chunk_size=5), dict(batch_chunk_size=3),
                dict(chunking_method=None), dict(acc_policy="balanced")]

    def run(lib):
        out = {}
        for i, (n, f, c) in enumerate(shapes):
            for j, kw in enumerate(settings):
                for dt in ("float32", "bfloat16"):
                    o = lib.nn.LinearCrossEntropyOptions(**kw)._adjust(
                        n, f, c, getattr(lib, dt), lib.device("cpu"))
                    out[f"{i}-{j}-{dt}"] = [o.batch_chunk_size, o.acc_policy,
                                            o.chunking_method, str(o.acc_dtype)]
        return out
    golden.assert_same_results(run)


def test_options_errors_against_torch():
    def raises(make):
        golden.assert_raises(lambda: make(ptl), lambda: make(torch), sub=str(raises.n))
        raises.n += 1
    raises.n = 0
    raises(lambda lib: lib.nn.LinearCrossEntropyOptions(acc_policy="fast"))
    raises(lambda lib: lib.nn.LinearCrossEntropyOptions(chunking_method="aspect_ratio:0"))
    raises(lambda lib: lib.nn.LinearCrossEntropyOptions(chunking_method="rows"))
    raises(lambda lib: lib.nn.LinearCrossEntropyOptions(batch_chunk_size=0))
    raises(lambda lib: lib.nn.LinearCrossEntropyOptions(acc_dtype=lib.int32))
    raises(lambda lib: lib.nn.LinearCrossEntropyOptions(
        batch_chunk_size=3, chunking_method="aspect_ratio")._adjust(7, 4, 5, lib.float32))
    raises(lambda lib: setattr(lib.nn.LinearCrossEntropyOptions(), "batch_chunk_size", 2))


def test_shape_errors_against_torch():
    def raises(x, w, t, **kw):
        def call(lib):
            def ten(s):
                return lib.zeros(s, dtype=lib.float64)
            kw2 = {k: ten(v) if isinstance(v, tuple) else v for k, v in kw.items()}
            tt = lib.zeros(t, dtype=lib.int64) if "probs" not in kw2 else ten(t)
            kw2.pop("probs", None)
            return lib.nn.functional.linear_cross_entropy(ten(x), ten(w), tt, **kw2)
        golden.assert_raises(lambda: call(ptl), lambda: call(torch), sub=str(raises.n))
        raises.n += 1
    raises.n = 0
    raises((2, 3, 4), (5, 4), (2,))
    raises((), (5, 4), ())
    raises((2, 4), (4,), (2,))
    raises((2, 3), (5, 4), (2,))
    raises((2, 4), (5, 4), (2,), linear_bias=(4,))
    raises((4,), (5, 2, 4), (2,))
    raises((2, 4), (5, 4), (2, 5), probs=True, ignore_index=1)
    raises((2, 4), (5, 4), (3,))


def test_module_against_torch():
    def run(lib):
        lib.manual_seed(0)
        m = lib.nn.LinearCrossEntropyLoss(
            3, 4, out_features=(2,), bias=True, dtype=lib.float64,
            weight=lib.tensor([1.0, 2.0, 0.5, 1.0], dtype=lib.float64), ignore_index=1)
        with lib.no_grad():
            m.linear.weight.copy_(lib.arange(24, dtype=lib.float64).reshape(8, 3).sin())
            m.linear.bias.copy_(lib.arange(8, dtype=lib.float64).cos())
        x = lib.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], dtype=lib.float64)
        t = lib.tensor([[0, 1], [3, 2]])
        loss = m(x, t)
        loss.backward()
        return {"loss": loss, "grad": m.linear.weight.grad, "repr": repr(m),
                "buffers": [n for n, _ in m.named_buffers()],
                "params": [n for n, _ in m.named_parameters()]}
    golden.assert_same_results(run, rtol=1e-12, atol=1e-12)
    m = ptl.nn.LinearCrossEntropyLoss(3, 5, options=Options(batch_chunk_size=2))
    x, t = ptl.randn(4, 3), ptl.tensor([0, 4, 2, 1])
    ref = F.cross_entropy(F.linear(x, m.linear.weight), t)
    np.testing.assert_allclose(m(x, t).item(), ref.item(), rtol=1e-6)
    for kw in (dict(weight=ptl.ones(4)), dict(label_smoothing=1.5)):
        golden.assert_raises(lambda: ptl.nn.LinearCrossEntropyLoss(3, 5, **kw),
                             lambda: torch.nn.LinearCrossEntropyLoss(
                                 3, 5, **{k: torch.ones(4) if k == "weight" else v
                                          for k, v in kw.items()}), sub=str(list(kw)))
