"""pytorchlite.nn.functional: activations, softmax, losses, linear, normalization, embedding,
dropout and attention against NumPy float64 formulas, with PyTorch itself as a second reference
for the tricky semantics (ignore_index, label_smoothing, masked attention rows, running
statistics; live, or its stored answers without it: tests/golden.py), gradcheck for every
differentiable op, and PyTorch's error messages."""
import math
import re

import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn.functional as F
from pytorchlite.autograd import gradcheck, gradgradcheck
from helpers import (FLOAT_DTYPES, LAYOUTS, SHAPES, assert_close, assert_no_leak,
                     assert_raises_like_torch, make, to_numpy, torch, torch_ref)
import golden

TF = torch.nn.functional if torch is not None else None


def leaf(shape, seed=0, low=-2.0, high=2.0):
    a = np.random.default_rng(seed).uniform(low, high, size=shape)
    return ptl.tensor(a, dtype=ptl.float64, requires_grad=True)


def tt(x):
    """The PyTorch twin of a pytorchlite tensor (same values and dtype)."""
    a = to_numpy(x.detach())
    t = torch.from_numpy(np.array(a))
    if x.dtype in (ptl.float32, ptl.float16, ptl.bfloat16):
        t = t.to(getattr(torch, str(x.dtype).split(".")[1]))
    return t


def live(torch_fn):
    """torch_fn() when torch is installed, else None (a torch value that only a
    close_to_torch reference reads)."""
    return torch_fn() if torch is not None else None


def close_to_torch(got, want, rtol=1e-6, atol=1e-7):
    """got equals want()'s torch result in shape and values (not dtype): live, or stored
    without torch (tests/golden.py)."""
    golden.assert_close(got, lambda: want().detach().double(), rtol=rtol, atol=atol, sub=None,
                        check_dtype=False)


# ---- activations ----

def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def _softplus(x, beta=1.0, th=20.0):
    return np.where(x * beta > th, x, np.log1p(np.exp(np.minimum(x * beta, th))) / beta)


_ERF = np.vectorize(math.erf, otypes=[float])
SELU_A, SELU_S = 1.6732632423543772, 1.0507009873554805

ACTIVATIONS = [
    ("gelu", {}, lambda x: 0.5 * x * (1 + _ERF(x / math.sqrt(2)))),
    ("gelu", {"approximate": "tanh"},
     lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))),
    ("silu", {}, lambda x: x * _sig(x)),
    ("mish", {}, lambda x: x * np.tanh(_softplus(x))),
    ("elu", {"alpha": 0.7}, lambda x: np.where(x > 0, x, 0.7 * np.expm1(x))),
    ("selu", {}, lambda x: SELU_S * np.where(x > 0, x, SELU_A * np.expm1(x))),
    ("celu", {"alpha": 2.0}, lambda x: np.where(x > 0, x, 2.0 * np.expm1(x / 2.0))),
    ("leaky_relu", {"negative_slope": 0.2}, lambda x: np.where(x > 0, x, 0.2 * x)),
    ("hardtanh", {"min_val": -2.0, "max_val": 1.5}, lambda x: np.clip(x, -2.0, 1.5)),
    ("relu6", {}, lambda x: np.clip(x, 0, 6)),
    ("softplus", {"beta": 2.0, "threshold": 3.0}, lambda x: _softplus(x, 2.0, 3.0)),
    ("softsign", {}, lambda x: x / (1 + np.abs(x))),
    ("hardswish", {}, lambda x: x * np.clip(x + 3, 0, 6) / 6),
    ("hardsigmoid", {}, lambda x: np.clip(x + 3, 0, 6) / 6),
    ("logsigmoid", {}, lambda x: np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x)))),
    ("tanhshrink", {}, lambda x: x - np.tanh(x)),
    ("softshrink", {"lambd": 1.0}, lambda x: np.where(x > 1, x - 1, np.where(x < -1, x + 1, 0))),
    ("hardshrink", {"lambd": 1.0}, lambda x: np.where(np.abs(x) > 1, x, 0)),
    ("threshold", {"threshold": 0.5, "value": -7.0}, lambda x: np.where(x > 0.5, x, -7.0)),
    ("relu", {}, lambda x: np.maximum(x, 0)),
]
IDS = [a[0] + ("_tanh" if a[1].get("approximate") else "") for a in ACTIVATIONS]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("name, kw, ref", ACTIVATIONS, ids=IDS)
def test_activation_values(name, kw, ref, dtype):
    for shape in SHAPES:
        for layout in LAYOUTS:
            x, a = make(shape, dtype, layout, seed=len(shape))
            assert_close(getattr(F, name)(x, **kw), ref(a.astype(np.float64)), dtype=dtype)


@pytest.mark.parametrize("name, kw, ref", [a for a in ACTIVATIONS if a[0] not in (
    "gelu", "softplus", "softsign", "logsigmoid", "tanhshrink", "softshrink", "hardshrink")],
    ids=[i for i, a in zip(IDS, ACTIVATIONS) if a[0] not in (
        "gelu", "softplus", "softsign", "logsigmoid", "tanhshrink", "softshrink", "hardshrink")])
def test_activation_inplace(name, kw, ref):
    x, a = make((3, 4), ptl.float32)
    v = x._version
    y = getattr(F, name)(x, inplace=True, **kw)
    assert y is x and x._version > v
    assert_close(x, ref(a.astype(np.float64)), dtype=ptl.float32)


def test_large_inputs_are_stable():
    x = ptl.tensor([-1000.0, -50.0, 50.0, 1000.0], dtype=ptl.float64)
    assert_close(F.logsigmoid(x), [-1000.0, -50.0, -math.exp(-50), 0.0])
    assert_close(F.softplus(x), [0.0, math.exp(-50), 50.0, 1000.0])
    assert_close(F.silu(x), [-0.0, -50 * math.exp(-50), 50.0, 1000.0])
    assert_close(F.mish(x), [-0.0, golden.answer(
        lambda: TF.mish(torch.tensor(-50.0, dtype=torch.float64)).item()), 50.0, 1000.0])


@pytest.mark.parametrize("fn, kname", [
    (F.silu, "silu_cpu"), (F.leaky_relu, "leaky_relu_cpu"), (F.elu, "elu_cpu"),
    (F.gelu, "GeluKernelImpl"), (F.hardswish, "hardswish_cpu")])
def test_activation_rejects_integers(fn, kname):
    with pytest.raises(NotImplementedError, match=re.escape(f'"{kname}" not implemented for \'Long\'')):
        fn(ptl.tensor([1, 2]))
    if torch is not None:
        with pytest.raises(NotImplementedError, match=re.escape(f'"{kname}" not implemented')):
            getattr(TF, fn.__name__)(torch.tensor([1, 2]))


@pytest.mark.parametrize("dtype", [ptl.uint8, ptl.int8, ptl.int16, ptl.int32, ptl.int64])
def test_hardtanh_threshold_integers(dtype):
    x, a = make((3, 4), dtype, "transposed", low=0 if dtype == ptl.uint8 else -5)
    a = a.astype(np.int64)
    assert_close(F.hardtanh(x, 1.5, 3.7), np.clip(a, 1, 3), dtype=dtype)
    assert_close(F.relu6(x), np.clip(a, 0, 6), dtype=dtype)
    assert_close(F.threshold(x, 1.5, 9), np.where(a > 1.5, a, 9), dtype=dtype)
    close_to_torch(F.hardtanh(x, 1.5, 3.7), lambda: TF.hardtanh(tt(x), 1.5, 3.7), 0, 0)
    close_to_torch(F.threshold(x, 1.5, 9), lambda: TF.threshold(tt(x), 1.5, 9), 0, 0)
    # the threshold converts to the input's dtype first (truncated, as torch 2.13's): -0.8
    # compares as 0
    assert_close(F.threshold(x, -0.8, 9), np.where(a > 0, a, 9), dtype=dtype)


def test_activation_errors():
    with pytest.raises(RuntimeError, match=re.escape(
            "cannot do hardtanh on an unsigned type with negative limits")):
        F.hardtanh(ptl.tensor([1, 2], dtype=ptl.uint8))
    with pytest.raises(RuntimeError, match=re.escape("Bool inputs not supported for hardtanh")):
        F.relu6(ptl.tensor([True, False]))
    with pytest.raises(NotImplementedError, match=re.escape("\"threshold_cpu\" not implemented for 'Bool'")):
        F.threshold(ptl.tensor([True, False]), 0.5, 1)
    with pytest.raises(NotImplementedError, match=re.escape("\"softshrink_check\" not implemented for 'Long'")):
        F.softshrink(ptl.tensor([1, 2]))
    x = ptl.tensor([1.0, -1.0])
    with pytest.raises(RuntimeError, match=re.escape("approximate argument must be either none or tanh.")):
        F.gelu(x, approximate="foo")
    with pytest.raises(ValueError, match=re.escape("min_val cannot be greater than max_val")):
        F.hardtanh(x, 2.0, 1.0)
    with pytest.raises(RuntimeError, match=re.escape(
            "lambda must be in range [0, 3.40282e+38] for input dtype Float, but found -1")):
        F.softshrink(x, -1.0)
    with pytest.raises(RuntimeError, match=re.escape(
            "lambda must be in range [0, 1.79769e+308] for input dtype Double, but found -1")):
        F.softshrink(x.double(), -1.0)
    with pytest.raises(RuntimeError, match=re.escape("Halving dimension must be even, but dimension 1 is size 3")):
        F.glu(ptl.ones(2, 3))
    with pytest.raises(RuntimeError, match=re.escape(
            "Mismatch of parameter numbers and input channel size. Found parameter numbers = 2 "
            "and channel size = 3.")):
        F.prelu(ptl.ones(2, 3), ptl.ones(2))


def test_prelu_glu_rrelu_against_torch():
    x, _ = make((2, 3, 4), ptl.float64)
    w = ptl.tensor([0.1, -0.5, 2.0], dtype=ptl.float64)
    close_to_torch(F.prelu(x, w), lambda: TF.prelu(tt(x), tt(w)))
    close_to_torch(F.prelu(x, w[:1]), lambda: TF.prelu(tt(x), tt(w[:1])))
    close_to_torch(F.glu(x, 2), lambda: TF.glu(tt(x), 2))
    close_to_torch(F.rrelu(x, 0.1, 0.3), lambda: TF.rrelu(tt(x), 0.1, 0.3))


def test_rrelu_training():
    """Negative elements are scaled by their own slope from U(lower, upper), drawn from the
    default generator; the gradient is that slope (1 for the rest)."""
    x, a = make((40, 50), ptl.float64)
    ptl.manual_seed(3)
    y = to_numpy(F.rrelu(x, 0.1, 0.3, training=True))
    assert np.array_equal(y[a >= 0], a[a >= 0])
    slope = y[a < 0] / a[a < 0]
    assert slope.min() >= 0.1 and slope.max() <= 0.3 and len(np.unique(slope)) > 100
    assert abs(slope.mean() - 0.2) < 0.01
    ptl.manual_seed(3)
    assert np.array_equal(to_numpy(F.rrelu(x, 0.1, 0.3, training=True)), y)
    z = x.clone()
    assert F.rrelu_(z, 0.1, 0.3, training=True) is z
    l = leaf((30,))
    out = F.rrelu(l, training=True)
    out.sum().backward()
    assert_close(l.grad, to_numpy(out.detach()) / to_numpy(l.detach()))


@pytest.mark.parametrize("name, kw", [
    ("gelu", {}), ("celu", {"alpha": 0.5}), ("softsign", {}), ("tanhshrink", {}), ("glu", {}),
    ("relu6", {}), ("rrelu", {})])
def test_activation_gradcheck(name, kw):
    assert gradcheck(lambda a: getattr(F, name)(a * 4, **kw), [leaf((2, 4))])


def test_prelu_gradcheck():
    assert gradcheck(lambda a, w: F.prelu(a, w), [leaf((2, 3, 2)), leaf((3,), seed=1)])


# ---- softmax ----

def np_softmax(a, dim):
    e = np.exp(a - a.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("fn", ["softmax", "log_softmax", "softmin"])
def test_softmax_values(fn, dtype):
    for shape in SHAPES:
        for layout in LAYOUTS:
            x, a = make(shape, dtype, layout, seed=1)
            a = a.astype(np.float64)
            for dim in range(-max(len(shape), 1), max(len(shape), 1)):
                ax = dim if a.ndim else None
                if a.size == 0:
                    want = a
                elif fn == "softmax":
                    want = np_softmax(a, ax)
                elif fn == "softmin":
                    want = np_softmax(-a, ax)
                else:
                    want = np.log(np_softmax(a, ax))
                assert_close(getattr(F, fn)(x, dim), want, dtype=dtype)


def test_softmax_stable_and_dtype():
    x = ptl.tensor([[1000.0, 1001.0, -1000.0], [-1e30, 0.0, 1e30]])
    assert_close(F.softmax(x, 1), np_softmax(np.array(to_numpy(x)), 1))
    close_to_torch(F.log_softmax(x, 1), lambda: TF.log_softmax(tt(x), 1), 1e-5, 1e-6)
    i = ptl.tensor([[1, 2, 3]])
    assert_close(F.softmax(i, 1, dtype=ptl.float64), np_softmax(np.array([[1.0, 2, 3]]), 1),
                 dtype=ptl.float64)
    assert_close(ptl.softmax(x[:1], 1, dtype=ptl.float16), np_softmax(np.array(to_numpy(x[:1])), 1),
                 dtype=ptl.float16)
    # the cast comes first: 1e30 is inf in float16, as in torch
    assert bool(ptl.softmax(x, 0, dtype=ptl.float16)[:, 2].isnan().all())
    if torch is not None:
        assert bool(torch.softmax(tt(x), 0, dtype=torch.float16)[:, 2].isnan().all())
    assert x.softmax(1).dtype == ptl.float32 and x.log_softmax(dim=0).shape == x.shape
    assert_close(F.softmax(ptl.tensor([-math.inf, 0.0])), [0.0, 1.0])
    assert bool(F.softmax(ptl.tensor([-math.inf, -math.inf]), 0).isnan().all())


def test_softmax_errors():
    with pytest.raises(NotImplementedError, match=re.escape(
            "\"softmax_lastdim_kernel_impl\" not implemented for 'Long'")):
        F.softmax(ptl.tensor([1, 2]), 0)
    if torch is not None:
        with pytest.raises(NotImplementedError, match=re.escape(
                "\"softmax_lastdim_kernel_impl\" not implemented for 'Long'")):
            TF.softmax(torch.tensor([1, 2]), 0)
    with pytest.raises(NotImplementedError, match=re.escape(
            "\"log_softmax_kernel_impl\" not implemented for 'Long'")):
        F.log_softmax(ptl.tensor([[1, 2]]), 0)
    with pytest.raises(IndexError, match=re.escape(
            "Dimension out of range (expected to be in range of [-2, 1], but got 2)")):
        F.softmax(ptl.ones(2, 3), 2)


@pytest.mark.parametrize("fn", [F.softmax, F.log_softmax, F.softmin])
@pytest.mark.parametrize("shape, dim", [((5,), 0), ((3, 4), 1), ((3, 4), 0), ((2, 3, 4), 1)])
def test_softmax_gradcheck(fn, shape, dim):
    assert gradcheck(lambda a: fn(a, dim) * ptl.arange(shape[-1]).double(), [leaf(shape)])


def test_softmax_grad_float32_matches_torch():
    x, _ = make((3, 5), ptl.float32)
    x.requires_grad_(True)
    w = ptl.arange(5).float()
    (F.log_softmax(x, 1) * w).sum().backward()
    def torch_grad():
        xt = tt(x).requires_grad_(True)
        (TF.log_softmax(xt, 1) * torch.arange(5).float()).sum().backward()
        return xt.grad
    close_to_torch(x.grad, torch_grad, rtol=1e-5, atol=1e-6)
    assert F.softmax(x, 0).grad_fn.name() == "SoftmaxBackward0"


# ---- nll_loss and cross_entropy ----

def np_nll(x, t, w=None, reduction="mean", ignore=-100):
    """x [N, C, *] (or [C]), t [N, *] (or [])."""
    if x.ndim == 1:
        one = np_nll(x[None], np.array(t)[None], w, reduction, ignore)
        return one.reshape(()) if reduction == "none" else one
    c = x.shape[1]
    w = np.ones(c) if w is None else w
    xm = np.moveaxis(x, 1, -1).reshape(-1, c)
    tf = t.reshape(-1)
    valid = tf != ignore
    tsafe = np.where(valid, tf, 0)
    wt = w[tsafe] * valid
    loss = -xm[np.arange(len(tf)), tsafe] * wt
    if reduction == "none":
        return loss.reshape(t.shape) if x.shape[0] != 1 or t.ndim else loss.reshape(())
    if reduction == "sum":
        return loss.sum()
    with np.errstate(invalid="ignore"):   # all targets ignored: 0 / 0 = nan, as in torch
        return loss.sum() / wt.sum()


NLL_CASES = [((5,), ()), ((4, 5), (4,)), ((2, 5, 3), (2, 3)), ((2, 5, 3, 2), (2, 3, 2)),
             ((0, 5), (0,))]


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("xs, ts", NLL_CASES)
def test_nll_loss(xs, ts, reduction, dtype):
    x, a = make(xs, dtype, "transposed" if len(xs) > 1 else "contiguous")
    gen = np.random.default_rng(3)
    t = gen.integers(0, 5, size=ts)
    if t.size > 1:
        t.reshape(-1)[1] = -100
    w = gen.uniform(0.5, 2.0, size=5)
    tp = ptl.tensor(t)
    assert_close(F.nll_loss(x, tp, reduction=reduction), np_nll(a, t, None, reduction), dtype=dtype)
    assert_close(F.nll_loss(x, tp, weight=ptl.tensor(w, dtype=dtype), reduction=reduction),
                 np_nll(a, t, w, reduction), dtype=dtype)
    t2 = np.where(t == 2, 7, t)   # class 2 ignored instead, 7 counts as ignored too? no: 7 -> ignore
    if t.size:
        t2 = np.where(t == -100, 2, t)
        assert_close(F.nll_loss(x, ptl.tensor(t2), ignore_index=2, reduction=reduction),
                     np_nll(a, t2, None, reduction, ignore=2), dtype=dtype)


def test_nll_loss_all_ignored_and_torch():
    x, _ = make((3, 4), ptl.float64)
    t = ptl.tensor([-100, -100, -100])
    assert math.isnan(F.nll_loss(x, t).item())
    assert math.isnan(golden.answer(lambda: TF.nll_loss(tt(x), tt(t)).item()))
    assert F.nll_loss(x, t, reduction="sum").item() == 0.0
    t = ptl.tensor([1, 3, 0])
    close_to_torch(F.nll_loss(x, t, ignore_index=3),
                   lambda: TF.nll_loss(tt(x), tt(t), ignore_index=3))
    assert F.nll_loss(x.requires_grad_(True), t).grad_fn.name() == "NllLossBackward0"


def test_nll_loss_errors():
    x = ptl.ones(3, 4)
    cases = [
        (lambda: F.nll_loss(x, ptl.tensor([1, 5, 0])), IndexError, "Target 5 is out of bounds."),
        (lambda: F.nll_loss(x, ptl.tensor([1, -1, 0])), IndexError, "Target -1 is out of bounds."),
        (lambda: F.nll_loss(x, ptl.tensor([1, 2])), ValueError,
         "Expected input batch_size (3) to match target batch_size (2)."),
        (lambda: F.nll_loss(x, ptl.tensor([1.0, 2, 0])), RuntimeError,
         "expected target dtype to be Long or Byte, but got Float"),
        (lambda: F.nll_loss(x, ptl.tensor([1, 2, 0]), weight=ptl.ones(2)), RuntimeError,
         "weight tensor should be defined either for all 4 classes or no classes but got "
         "weight tensor of shape: [2]"),
        (lambda: F.nll_loss(ptl.ones(2, 3, 4), ptl.zeros(2, 5, dtype=ptl.int64)), RuntimeError,
         "Expected target size [2, 4], got [2, 5]"),
        (lambda: F.nll_loss(ptl.tensor(1.0), ptl.tensor(0)), ValueError,
         "Expected 1 or more dimensions (got 0)"),
        (lambda: F.nll_loss(x, ptl.tensor([1, 2, 0]), reduction="avg"), ValueError,
         "avg is not a valid value for reduction"),
    ]
    for fn, exc, msg in cases:
        with pytest.raises(exc, match=re.escape(msg)):
            fn()


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_nll_loss_gradcheck(reduction):
    t = ptl.tensor([[1, -100, 0], [2, 2, 1]])
    w = ptl.tensor([0.5, 2.0, 1.5], dtype=ptl.float64)
    assert gradcheck(lambda a: F.nll_loss(a, t, weight=w, reduction=reduction), [leaf((2, 3, 3))])
    assert gradcheck(lambda a: F.nll_loss(a, ptl.tensor(2), reduction=reduction), [leaf((3,))])


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("smoothing", [0.0, 0.25])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_indices_against_torch(reduction, smoothing, weighted):
    x, _ = make((4, 5, 3), ptl.float64)
    t = ptl.tensor([[1, 2, -100], [0, 4, 4], [3, -100, 2], [1, 1, 0]])
    w = ptl.tensor([0.5, 1.0, 2.0, 1.5, 0.3], dtype=ptl.float64) if weighted else None
    got = F.cross_entropy(x, t, weight=w, reduction=reduction, label_smoothing=smoothing)
    close_to_torch(got, lambda: TF.cross_entropy(tt(x), tt(t), weight=None if w is None else tt(w),
                                                 reduction=reduction, label_smoothing=smoothing),
                   rtol=1e-10, atol=1e-12)
    x2, _ = make((6, 5), ptl.float64, seed=2)
    t2 = ptl.tensor([1, 2, -100, 0, 4, 3])
    got = F.cross_entropy(x2, t2, weight=w, reduction=reduction, label_smoothing=smoothing)
    close_to_torch(got, lambda: TF.cross_entropy(tt(x2), tt(t2),
                                                 weight=None if w is None else tt(w),
                                                 reduction=reduction, label_smoothing=smoothing),
                   rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
def test_cross_entropy_probabilities(reduction, smoothing):
    x, a = make((3, 4, 2), ptl.float64)
    p = np_softmax(np.random.default_rng(1).uniform(-1, 1, (3, 4, 2)), 1)
    w = np.array([1.0, 0.5, 2.0, 1.5])
    q = p * (1 - smoothing) + smoothing / 4
    loss = -(np.log(np_softmax(a, 1)) * q * w[None, :, None]).sum(1)
    want = loss if reduction == "none" else loss.sum() if reduction == "sum" else loss.sum() / 6
    got = F.cross_entropy(x, ptl.tensor(p), weight=ptl.tensor(w), reduction=reduction,
                          label_smoothing=smoothing)
    assert_close(got, want, dtype=ptl.float64)
    close_to_torch(got, lambda: TF.cross_entropy(tt(x), torch.tensor(p), weight=torch.tensor(w),
                                         reduction=reduction, label_smoothing=smoothing))


def test_cross_entropy_1d_and_float32():
    x, a = make((5,), ptl.float32)
    assert_close(F.cross_entropy(x, ptl.tensor(3)), -np.log(np_softmax(a.astype(np.float64), 0))[3],
                 dtype=ptl.float32)
    with pytest.raises(RuntimeError, match=re.escape(
            "label_smoothing must be between 0.0 and 1.0. Got: 1.5")):
        F.cross_entropy(x, ptl.tensor(3), label_smoothing=1.5)


def test_cross_entropy_gradcheck():
    t = ptl.tensor([[1, -100], [0, 2]])
    assert gradcheck(lambda a: F.cross_entropy(a, t, label_smoothing=0.2), [leaf((2, 3, 2))])
    p = ptl.tensor(np_softmax(np.random.default_rng(0).uniform(size=(2, 3)), 1))
    assert gradcheck(lambda a: F.cross_entropy(a, p, label_smoothing=0.1), [leaf((2, 3))])


# ---- regression and margin losses ----

def _red(loss, reduction):
    return loss if reduction == "none" else loss.sum() if reduction == "sum" else loss.mean()


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
def test_pointwise_losses(reduction, dtype):
    x, a = make((3, 4), dtype, "transposed")
    y, b = make((3, 4), dtype, seed=1)
    d = np.abs(a.astype(np.float64) - b)
    cases = [
        (F.mse_loss(x, y, reduction=reduction), d * d),
        (F.l1_loss(x, y, reduction=reduction), d),
        (F.smooth_l1_loss(x, y, reduction=reduction, beta=2.0),
         np.where(d < 2.0, 0.5 * d * d / 2.0, d - 1.0)),
        (F.smooth_l1_loss(x, y, reduction=reduction, beta=0.0), d),
        (F.huber_loss(x, y, reduction=reduction, delta=1.5),
         np.where(d < 1.5, 0.5 * d * d, 1.5 * (d - 0.75))),
        (F.soft_margin_loss(x, y, reduction=reduction), np.log1p(np.exp(-b * a))),
    ]
    for got, loss in cases:
        assert_close(got, _red(loss, reduction), dtype=dtype)
    # an infinite difference is an infinite loss, not 0 * inf (torch: inf; nan stays nan)
    inf = ptl.tensor([np.inf, -np.inf, np.nan, 0.5], dtype=dtype)
    got = F.smooth_l1_loss(inf, ptl.zeros(4, dtype=dtype), reduction="none", beta=2.0)
    assert_close(got, [np.inf, np.inf, np.nan, 0.0625], dtype=dtype)


# mse_loss, smooth_l1_loss and huber_loss are aten ops (Note [Regression losses] in
# src/aten/native/loss.c): the elementwise loss in the dtype's arithmetic, 'mean'/'sum' summed
# in double over chunks of REG_CHUNK = 8192 elements (more per chunk above REG_MAX_CHUNKS =
# 256 chunks), the threads sharing the chunks from 4 chunks (PTL_GRAIN_SIZE) on.
REG_LOSSES = [("mse_loss", {}, lambda d: d * d),
              ("smooth_l1_loss", {"beta": 0.6},
               lambda d: np.where(np.abs(d) < 0.6, 0.5 * d * d / 0.6, np.abs(d) - 0.3)),
              ("huber_loss", {"delta": 0.7},
               lambda d: np.where(np.abs(d) < 0.7, 0.5 * d * d, 0.7 * (np.abs(d) - 0.35)))]
REG_GRADS = {"mse_loss": lambda d: 2 * d, "smooth_l1_loss": lambda d: np.clip(d / 0.6, -1, 1),
             "huber_loss": lambda d: np.clip(d, -0.7, 0.7)}
REG_SIZES = [8191, 8192, 8193, 4 * 8192 - 1, 4 * 8192, 4 * 8192 + 1, 256 * 8192 + 1]


@pytest.mark.parametrize("n", REG_SIZES)
@pytest.mark.parametrize("threads", [1, 2])
def test_regression_losses_across_chunks_and_threads(n, threads):
    old = ptl.get_num_threads()
    ptl.set_num_threads(threads)
    try:
        for dtype in (ptl.float32, ptl.float64):
            layout = "transposed" if n < 2 ** 20 else "contiguous"
            x, a = make((n, 1), dtype, layout, low=-2, high=2)
            y, b = make((n, 1), dtype, seed=1, low=-2, high=2)
            d = a.astype(np.float64) - b
            for name, kw, ref in REG_LOSSES:
                for reduction in ("none", "mean", "sum"):
                    got = getattr(F, name)(x, y, reduction=reduction, **kw)
                    assert_close(got, _red(ref(d), reduction), dtype=dtype)
                xg = x.detach().requires_grad_()
                getattr(F, name)(xg, y, **kw).backward()
                assert_close(xg.grad, REG_GRADS[name](d) / n, dtype=dtype)
    finally:
        ptl.set_num_threads(old)


@pytest.mark.parametrize("n", [8193, 4 * 8192 + 1, 256 * 8192 + 1])
def test_regression_losses_do_not_depend_on_thread_count(n):
    x, _ = make((n,), ptl.float32)
    y, _ = make((n,), ptl.float32, seed=1)
    old = ptl.get_num_threads()
    try:
        outs = []
        for threads in (1, 2):
            ptl.set_num_threads(threads)
            outs.append([getattr(F, name)(x, y, reduction=r, **kw).numpy()
                         for name, kw, _ in REG_LOSSES for r in ("mean", "sum")])
    finally:
        ptl.set_num_threads(old)
    for one, two in zip(*outs):
        assert np.array_equal(one, two)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_regression_losses_dtypes_broadcast_and_edges(dtype):
    x, a = make((3, 4), dtype, "sliced")
    y, b = make((4,), dtype, seed=1)
    d = a.astype(np.float64) - b
    for name, kw, ref in REG_LOSSES:
        for reduction in ("none", "mean", "sum"):
            with pytest.warns(UserWarning, match="Using a target size"):
                got = getattr(F, name)(x, y, reduction=reduction, **kw)
            assert got.dtype == dtype
            assert_close(got, _red(ref(d), reduction), dtype=dtype)
        empty = ptl.empty(0, 3, dtype=dtype)
        assert getattr(F, name)(empty, empty, reduction="none", **kw).shape == (0, 3)
        assert math.isnan(getattr(F, name)(empty, empty, **kw).item())   # torch: nan
        assert getattr(F, name)(empty, empty, reduction="sum", **kw).item() == 0
        scalar = getattr(F, name)(ptl.tensor(1.5, dtype=dtype), ptl.tensor(0.25, dtype=dtype),
                                  **kw)
        assert_close(scalar, ref(np.float64(1.25)), dtype=dtype)
        # an infinite difference is an infinite loss (not 0 * inf); nan stays nan
        inf = ptl.tensor([np.inf, -np.inf, np.nan, np.inf], dtype=dtype)
        got = getattr(F, name)(inf, ptl.tensor([0.0, 1.0, 0.0, np.inf], dtype=dtype),
                               reduction="none", **kw)
        assert_close(got, [np.inf, np.inf, np.nan, np.nan], dtype=dtype)


# PyTorch's weighted regression losses: 'mean' is sum(w * loss) / sum(w) for mse and l1, and
# mean(w * loss) for huber; the weight must have the input's size.
WEIGHTED_LOSSES = [("mse_loss", {}, lambda d: d * d, True),
                   ("l1_loss", {}, np.abs, True),
                   ("huber_loss", {"delta": 0.7},
                    lambda d: np.where(np.abs(d) < 0.7, 0.5 * d * d, 0.7 * (np.abs(d) - 0.35)),
                    False)]


@pytest.mark.parametrize("name, kw, ref, over_weight", WEIGHTED_LOSSES,
                         ids=[w[0] for w in WEIGHTED_LOSSES])
@pytest.mark.parametrize("shape", [(), (0,), (3, 4)])
def test_weighted_regression_losses(name, kw, ref, over_weight, shape):
    x, a = make(shape, ptl.float64, "transposed" if len(shape) == 2 else "contiguous")
    y, b = make(shape, ptl.float64, seed=1)
    w, c = make(shape, ptl.float64, seed=2, low=0.1, high=2.0)
    loss = ref(a - b) * c
    fn = getattr(F, name)
    assert_close(fn(x, y, reduction="none", weight=w, **kw), loss)
    assert_close(fn(x, y, reduction="sum", weight=w, **kw), loss.sum())
    mean = fn(x, y, weight=w, **kw)
    if loss.size == 0:
        assert math.isnan(mean.item())
    else:
        assert_close(mean, loss.sum() / (c.sum() if over_weight else loss.size))
    if loss.size:
        xg = x.detach().requires_grad_()
        wg = w.detach().requires_grad_()
        assert gradcheck(lambda p, q: fn(p, y, weight=q, **kw), (xg, wg))


def test_weighted_regression_loss_errors():
    x = ptl.ones(2, 3)
    for name in ("mse_loss", "l1_loss", "huber_loss"):
        with pytest.raises(ValueError, match="Weights and input must have the same size."):
            getattr(F, name)(x, x, weight=ptl.ones(3))
        with pytest.raises(ValueError, match=re.escape(
                "Invalid reduction mode: avg. Expected one of 'none', 'mean', 'sum'.")):
            getattr(F, name)(x, x, reduction="avg", weight=ptl.ones(2, 3))


@torch_ref
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_weighted_regression_losses_against_torch(reduction):
    x, _ = make((3, 4), ptl.float64)
    y, _ = make((3, 4), ptl.float64, seed=1)
    w, _ = make((3, 4), ptl.float64, seed=2, low=0.1, high=2.0)
    for name in ("mse_loss", "l1_loss", "huber_loss"):
        got = getattr(F, name)(x, y, reduction=reduction, weight=w)
        close_to_torch(got, lambda: getattr(TF, name)(tt(x), tt(y), reduction=reduction,
                                                      weight=tt(w)),
                       rtol=1e-12, atol=1e-14)


def test_regression_losses_mixed_dtypes_and_errors():
    x = ptl.tensor([1.0, 2.0])
    assert F.mse_loss(x, ptl.tensor([0.0, 0.5], dtype=ptl.float64)).dtype == ptl.float64
    assert_close(F.huber_loss(x, ptl.tensor([0, 4])), (0.5 + 1.5) / 2)
    for name, kernel in (("mse_loss", "mse"), ("smooth_l1_loss", "smooth_l1"),
                         ("huber_loss", "huber")):
        for dtype, legacy in ((ptl.int64, "Long"), (ptl.bool, "Bool")):
            ints = ptl.ones(2, dtype=dtype)
            with pytest.raises(NotImplementedError, match=re.escape(
                    f'"{kernel}_cpu" not implemented for \'{legacy}\'')):
                getattr(F, name)(ints, ints)
    with pytest.raises(RuntimeError, match=re.escape(
            "huber_loss does not support non-positive values for delta.")):
        F.huber_loss(x, x, delta=0.0)
    with pytest.raises(RuntimeError), pytest.warns(UserWarning, match="Using a target size"):
        F.mse_loss(ptl.ones(2), ptl.ones(3))


# The backward ops take any beta / delta (PyTorch checks only the forward's), and test the
# difference d in the order of PyTorch's scalar loop (Note [Regression loss derivatives at a
# negative beta or delta] in src/aten/scalar_math.h).
REG_BACKWARDS = {
    "smooth_l1_loss_backward":
        lambda d, p: np.where(d <= -p, -1.0, np.where(d >= p, 1.0, d / p)),
    "huber_loss_backward": lambda d, p: np.where(d <= -p, -p, np.where(d >= p, p, d)),
}
REG_BACKWARD_PARAMS = [-1.5, -0.25, 0.0, 0.5, 2.0]


def _reg_backward_ref(name, d, p, g, reduction):
    with np.errstate(divide="ignore", invalid="ignore"):
        ref = REG_BACKWARDS[name](d, np.float64(p))
    return ref * g / (d.size if reduction == 1 and d.size else 1)


@pytest.mark.parametrize("p", REG_BACKWARD_PARAMS)
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
def test_regression_loss_backward_takes_any_beta_or_delta(p, dtype):
    for shape in SHAPES:
        for layout in LAYOUTS:
            x, a = make(shape, dtype, layout, low=-3, high=3)
            t, b = make(shape, dtype, "sliced", seed=1, low=-3, high=3)
            g, c = make(shape, dtype, layout, seed=2)
            d = a.astype(np.float64) - b
            for name in REG_BACKWARDS:
                op = getattr(ptl.ops.aten, name)
                assert_close(op(g, x, t, 0, p), _reg_backward_ref(name, d, p, c, 0),
                             dtype=dtype)
                for reduction in (1, 2):   # a 0-dim grad broadcasts
                    got = op(ptl.tensor(1.5, dtype=dtype), x, t, reduction, p)
                    assert_close(got, _reg_backward_ref(name, d, p, 1.5, reduction),
                                 dtype=dtype)
    # d at +-p (where the order of the tests decides), 0, +-inf and nan, in a short run and in
    # a long contiguous one
    edges = np.array([-p, p, 0.0, 1.0, -1.0, np.inf, -np.inf, np.nan])
    for n in (1, 1024):
        a = np.tile(edges, n)
        x, t, g = ptl.tensor(a, dtype=dtype), ptl.zeros(a.size, dtype=dtype), ptl.ones(1)
        for name in REG_BACKWARDS:
            got = getattr(ptl.ops.aten, name)(g.to(dtype), x, t, 0, p)
            assert_close(got, _reg_backward_ref(name, a, p, 1.0, 0), dtype=dtype)
    with pytest.raises(RuntimeError, match=re.escape(
            "smooth_l1_loss does not support negative values for beta.")):
        ptl.ops.aten.smooth_l1_loss(x, x, 1, -1.0)
    with pytest.raises(RuntimeError, match=re.escape(
            "huber_loss does not support non-positive values for delta.")):
        ptl.ops.aten.huber_loss(x, x, 1, -1.0)


@torch_ref
@pytest.mark.parametrize("p", REG_BACKWARD_PARAMS)
def test_regression_loss_backward_any_beta_or_delta_against_torch(p):
    """Where PyTorch runs its scalar loop (strided inputs)"""
    def strided(x):
        t = tt(x)
        return torch.stack([t, t], -1)[..., 0]
    for dtype in (ptl.float32, ptl.float64):
        for shape, layout in (((7,), "contiguous"), ((3, 5), "transposed"),
                              ((4, 6), "sliced"), ((2, 3, 4), "transposed")):
            x, _ = make(shape, dtype, layout, low=-3, high=3)
            t, _ = make(shape, dtype, layout, seed=1, low=-3, high=3)
            g, _ = make(shape, dtype, layout, seed=2)
            for name in REG_BACKWARDS:
                for reduction in (0, 1, 2):
                    gg = g if reduction == 0 else ptl.tensor(0.5, dtype=dtype)
                    got = getattr(ptl.ops.aten, name)(gg, x, t, reduction, p)
                    want = getattr(torch.ops.aten, name)(strided(gg), strided(x),
                                                         strided(t), reduction, p)
                    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6,
                                               atol=1e-7)


def test_regression_losses_off_the_cpu_take_the_elementwise_ops():
    """The aten ops have CPU kernels only: other devices (CUDA, here meta) compute the loss
    with elementwise ops and mean/sum."""
    x, y = ptl.empty(3, 4, device="meta"), ptl.empty(3, 4, device="meta")
    for name, kw, _ in REG_LOSSES:
        for reduction, shape in (("none", (3, 4)), ("mean", ()), ("sum", ())):
            out = getattr(F, name)(x, y, reduction=reduction, **kw)
            assert out.device.type == "meta" and tuple(out.shape) == shape


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_regression_losses_grad_fn_and_double_backward(reduction):
    cases = [(F.mse_loss, {}, "MseLoss"), (F.smooth_l1_loss, {"beta": 0.6}, "SmoothL1Loss"),
             (F.huber_loss, {"delta": 0.7}, "HuberLoss")]
    for fn, kw, node in cases:
        x, t, t_row = leaf((3, 4)), leaf((3, 4), seed=1), leaf((4,), seed=2)
        out = fn(x, t, reduction=reduction, **kw)
        assert type(out.grad_fn).__name__ == node + "Backward0"
        g, = ptl.autograd.grad(out.sum(), x, create_graph=True)
        assert type(g.grad_fn).__name__ == node + "BackwardBackward0"
        with pytest.warns(UserWarning):
            for args in ((x, t), (x, t_row)):
                f = lambda a, b: fn(a, b, reduction=reduction, **kw)   # noqa: E731
                assert gradcheck(f, args)
                assert gradgradcheck(f, args)
    # beta == 0 is l1_loss, as in PyTorch's F.smooth_l1_loss
    x = leaf((3, 4))
    out = F.smooth_l1_loss(x, leaf((3, 4), seed=1), reduction=reduction, beta=0.0)
    assert type(out.grad_fn).__name__ == {"none": "AbsBackward0", "mean": "MeanBackward0",
                                          "sum": "SumBackward0"}[reduction]


@torch_ref
def test_regression_losses_float32_bits_match_torch():
    x, _ = make((123, 77), ptl.float32, low=-2, high=2)
    y, _ = make((123, 77), ptl.float32, seed=1, low=-2, high=2)
    for name, kw, _ in REG_LOSSES + [("smooth_l1_loss", {}, None)]:
        got = getattr(F, name)(x, y, reduction="none", **kw)
        assert np.array_equal(got.numpy(), getattr(TF, name)(tt(x), tt(y), reduction="none",
                                                             **kw).numpy())
        for reduction in ("mean", "sum"):
            np.testing.assert_allclose(
                getattr(F, name)(x, y, reduction=reduction, **kw).numpy(),
                getattr(TF, name)(tt(x), tt(y), reduction=reduction, **kw).numpy(), rtol=1e-5)
    xg = x.detach().requires_grad_()
    txg = tt(x).requires_grad_()
    F.mse_loss(xg, y).backward()
    TF.mse_loss(txg, tt(y)).backward()
    assert np.array_equal(xg.grad.numpy(), txg.grad.numpy())


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_binary_cross_entropy(reduction):
    gen = np.random.default_rng(0)
    a = gen.uniform(0, 1, (3, 4))
    a[0, 0], a[0, 1] = 0.0, 1.0
    b = gen.uniform(0, 1, (3, 4))
    w = gen.uniform(0.5, 2, (4,))
    la = np.maximum(np.log(np.maximum(a, 1e-300)), -100)
    l1a = np.maximum(np.log(np.maximum(1 - a, 1e-300)), -100)
    loss = -(b * la + (1 - b) * l1a) * w
    got = F.binary_cross_entropy(ptl.tensor(a), ptl.tensor(b), weight=ptl.tensor(w),
                                 reduction=reduction)
    assert_close(got, _red(loss, reduction), dtype=ptl.float64)
    close_to_torch(got, lambda: TF.binary_cross_entropy(torch.tensor(a), torch.tensor(b),
                                                weight=torch.tensor(w), reduction=reduction))


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_binary_cross_entropy_with_logits(reduction):
    gen = np.random.default_rng(0)
    a = gen.uniform(-5, 5, (3, 4))
    a[0, 0], a[0, 1] = 200.0, -200.0     # stable: no overflow
    b = gen.uniform(0, 1, (3, 4))
    pw = gen.uniform(0.5, 3, (4,))
    w = gen.uniform(0.5, 2, (3, 1))
    ls = np.minimum(a, 0) - np.log1p(np.exp(-np.abs(a)))
    loss = -(pw * b * ls + (1 - b) * (ls - a)) * w
    got = F.binary_cross_entropy_with_logits(ptl.tensor(a), ptl.tensor(b), weight=ptl.tensor(w),
                                             pos_weight=ptl.tensor(pw), reduction=reduction)
    assert_close(got, _red(loss, reduction), dtype=ptl.float64)
    got = F.binary_cross_entropy_with_logits(ptl.tensor(a), ptl.tensor(b), reduction=reduction)
    assert_close(got, _red(-(b * ls + (1 - b) * (ls - a)), reduction))


def test_bce_errors():
    with pytest.raises(ValueError, match=re.escape(
            "Using a target size (torch.Size([2])) that is different to the input size "
            "(torch.Size([3])) is deprecated. Please ensure they have the same size.")):
        F.binary_cross_entropy(ptl.tensor([0.1, 0.2, 0.3]), ptl.tensor([0.0, 1.0]))
    with pytest.raises(ValueError, match=re.escape(
            "Target size (torch.Size([2])) must be the same as input size (torch.Size([3]))")):
        F.binary_cross_entropy_with_logits(ptl.tensor([0.1, 0.2, 0.3]), ptl.tensor([0.0, 1.0]))
    with pytest.raises(RuntimeError, match=re.escape("all elements of input should be between 0 and 1")):
        F.binary_cross_entropy(ptl.tensor([2.0]), ptl.tensor([1.0]))
    if torch is not None:
        with pytest.raises(RuntimeError,
                           match=re.escape("all elements of input should be between 0 and 1")):
            TF.binary_cross_entropy(torch.tensor([2.0]), torch.tensor([1.0]))
    with pytest.raises(RuntimeError, match=re.escape(
            "smooth_l1_loss does not support negative values for beta.")):
        F.smooth_l1_loss(ptl.ones(2), ptl.ones(2), beta=-1.0)
    with pytest.raises(ValueError, match=re.escape("foo is not a valid value for reduction")):
        F.mse_loss(ptl.ones(2), ptl.ones(2), reduction="foo")


@pytest.mark.parametrize("reduction", ["none", "mean", "sum", "batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(reduction, log_target):
    gen = np.random.default_rng(0)
    a = np.log(np_softmax(gen.uniform(-2, 2, (3, 4)), 1))
    b = np_softmax(gen.uniform(-2, 2, (3, 4)), 1)
    b[0, 0] = 0.0
    t = np.log(np.maximum(b, 1e-30)) if log_target else b
    loss = np.exp(t) * (t - a) if log_target else np.where(b > 0, b * np.log(np.where(b > 0, b, 1)), 0) - b * a
    want = loss.sum() / 3 if reduction == "batchmean" else _red(loss, reduction)
    assert_close(F.kl_div(ptl.tensor(a), ptl.tensor(t), reduction=reduction, log_target=log_target),
                 want, dtype=ptl.float64)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_margin_losses_against_torch(reduction):
    x1, _ = make((4, 5), ptl.float64)
    x2, _ = make((4, 5), ptl.float64, seed=1)
    x3, _ = make((4, 5), ptl.float64, seed=2)
    y = ptl.tensor([1.0, -1.0, -1.0, 1.0], dtype=ptl.float64)
    s = ptl.tensor([1.0, -1.0, 1.0, -1.0, 1.0], dtype=ptl.float64)
    ys = ptl.tensor(np.where(np.random.default_rng(4).uniform(size=(4, 5)) > 0.5, 1.0, -1.0))
    mt = ptl.tensor([[3, 0, -1, 1, 2], [1, 2, 3, 4, 0], [-1, 1, 0, 0, 0], [4, -1, 2, 2, 2]])
    c = ptl.tensor([1, 0, 4, 2])
    pairs = [
        (F.margin_ranking_loss(x1[0], x2[0], s, 0.5, reduction=reduction),
         lambda: TF.margin_ranking_loss(tt(x1[0]), tt(x2[0]), tt(s), 0.5, reduction=reduction)),
        (F.hinge_embedding_loss(x1, ys, 1.5, reduction=reduction),
         lambda: TF.hinge_embedding_loss(tt(x1), tt(ys), 1.5, reduction=reduction)),
        (F.cosine_embedding_loss(x1, x2, y, 0.2, reduction=reduction),
         lambda: TF.cosine_embedding_loss(tt(x1), tt(x2), tt(y), 0.2, reduction=reduction)),
        (F.multilabel_soft_margin_loss(x1, (ys + 1) * 0.5, reduction=reduction),
         lambda: TF.multilabel_soft_margin_loss(tt(x1), (tt(ys) + 1) * 0.5, reduction=reduction)),
        (F.multi_margin_loss(x1, c, reduction=reduction),
         lambda: TF.multi_margin_loss(tt(x1), tt(c), reduction=reduction)),
        (F.multi_margin_loss(x1, c, p=2, margin=0.7, weight=s.abs() + 1, reduction=reduction),
         lambda: TF.multi_margin_loss(tt(x1), tt(c), p=2, margin=0.7, weight=tt(s).abs() + 1,
                              reduction=reduction)),
        (F.multilabel_margin_loss(x1, mt, reduction=reduction),
         lambda: TF.multilabel_margin_loss(tt(x1), tt(mt), reduction=reduction)),
        (F.triplet_margin_loss(x1, x2, x3, 0.8, reduction=reduction),
         lambda: TF.triplet_margin_loss(tt(x1), tt(x2), tt(x3), 0.8, reduction=reduction)),
        (F.triplet_margin_loss(x1, x2, x3, 1.0, p=1, swap=True, reduction=reduction),
         lambda: TF.triplet_margin_loss(tt(x1), tt(x2), tt(x3), 1.0, p=1, swap=True,
                                        reduction=reduction)),
    ]
    for got, want in pairs:
        close_to_torch(got, want, rtol=1e-9, atol=1e-12)


def test_margin_loss_errors():
    with pytest.raises(RuntimeError, match=re.escape(
            "The anchor, positive, and negative tensors are expected to have the same number of "
            "dimensions, but got: anchor 2D, positive 1D, and negative 2D inputs")):
        F.triplet_margin_loss(ptl.ones(2, 3), ptl.ones(3), ptl.ones(2, 3))


@pytest.mark.parametrize("name, fn", [
    ("mse", lambda a, b: F.mse_loss(a, b)),
    ("l1", lambda a, b: F.l1_loss(a, b, reduction="sum")),
    ("smooth_l1", lambda a, b: F.smooth_l1_loss(a, b, beta=0.5)),
    ("huber", lambda a, b: F.huber_loss(a, b, delta=0.7)),
    ("bce_logits", lambda a, b: F.binary_cross_entropy_with_logits(
        a, b.sigmoid(), pos_weight=ptl.tensor([2.0, 0.5, 1.0], dtype=ptl.float64))),
    ("kl_div", lambda a, b: F.kl_div(a, b.softmax(1), reduction="batchmean")),
    ("margin_ranking", lambda a, b: F.margin_ranking_loss(a, b, ptl.ones(2, 3).double(), 0.1)),
    ("hinge", lambda a, b: F.hinge_embedding_loss(a, ptl.tensor([[1.0, -1, 1], [-1, -1, 1]]))),
    ("cosine_embedding", lambda a, b: F.cosine_embedding_loss(a, b, ptl.tensor([1.0, -1.0]))),
    ("soft_margin", lambda a, b: F.soft_margin_loss(a, b)),
    ("multi_margin", lambda a, b: F.multi_margin_loss(a, ptl.tensor([2, 0]))),
    ("triplet", lambda a, b: F.triplet_margin_loss(a, b, a * 0.5 + 0.3)),
    ("cosine_similarity", lambda a, b: F.cosine_similarity(a, b)),
    ("pairwise_distance", lambda a, b: F.pairwise_distance(a, b, p=3)),
    ("linear", lambda a, b: F.linear(a, b, b[:, 0])),
])
def test_loss_gradcheck(name, fn):
    assert gradcheck(fn, [leaf((2, 3)), leaf((2, 3), seed=1)])


# ---- linear ----

@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
def test_linear_bilinear(dtype):
    x, a = make((2, 3, 4), dtype)
    w, b = make((5, 4), dtype, "transposed", seed=1)
    bias, c = make((5,), dtype, seed=2)
    assert_close(F.linear(x, w, bias), a.astype(np.float64) @ b.T + c, dtype=dtype, rtol=1e-5, atol=1e-5)
    assert_close(F.linear(x[0], w, bias), a[0].astype(np.float64) @ b.T + c, dtype=dtype, rtol=1e-5, atol=1e-5)
    assert_close(F.linear(x, w), a.astype(np.float64) @ b.T, dtype=dtype, rtol=1e-5, atol=1e-5)
    x2, a2 = make((2, 3, 6), dtype, seed=3)
    W, Wn = make((5, 4, 6), dtype, seed=4)
    want = np.einsum("bni,oij,bnj->bno", a, Wn, a2) + c
    assert_close(F.bilinear(x, x2, W, bias), want, dtype=dtype, rtol=1e-4, atol=1e-4)


def test_linear_bilinear_gradcheck():
    assert gradcheck(lambda a, w, b: F.linear(a, w, b), [leaf((2, 3, 4)), leaf((5, 4), 1), leaf((5,), 2)])
    assert gradcheck(lambda a, b, w: F.bilinear(a, b, w),
                     [leaf((3, 2)), leaf((3, 4), 1), leaf((2, 2, 4), 2)])


# ---- normalization ----

def test_batch_norm_training_and_eval():
    x, a = make((4, 3, 5), ptl.float64)
    rm, rv = ptl.zeros(3, dtype=ptl.float64), ptl.ones(3, dtype=ptl.float64)
    w, b = ptl.tensor([1.0, 2.0, 0.5], dtype=ptl.float64), ptl.tensor([0.0, -1.0, 1.0], dtype=ptl.float64)
    trm, trv = live(lambda: (torch.zeros(3, dtype=torch.float64),
                             torch.ones(3, dtype=torch.float64))) or (None, None)
    for _ in range(2):
        got = F.batch_norm(x, rm, rv, w, b, training=True, momentum=0.3)
        close_to_torch(got, lambda: TF.batch_norm(tt(x), trm, trv, tt(w), tt(b), training=True,
                                                  momentum=0.3), rtol=1e-10, atol=1e-12)
    close_to_torch(rm, lambda: trm, rtol=1e-12, atol=1e-14)
    close_to_torch(rv, lambda: trv, rtol=1e-12, atol=1e-14)
    mean, var = a.mean((0, 2)), a.var((0, 2))
    assert_close(F.batch_norm(x, ptl.tensor(mean), ptl.tensor(var), eps=0.0),
                 (a - mean[None, :, None]) / np.sqrt(var[None, :, None]))
    close_to_torch(F.batch_norm(x, rm, rv, w, b),
                   lambda: TF.batch_norm(tt(x), trm, trv, tt(w), tt(b)))
    with pytest.raises(ValueError, match=re.escape(
            "Expected more than 1 value per channel when training, got input size "
            "torch.Size([1, 3])")):
        F.batch_norm(ptl.ones(1, 3), rm, rv, training=True)


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
def test_norms_against_numpy(dtype):
    x, a = make((2, 6, 5), dtype, "transposed")
    a = a.astype(np.float64)
    w, wn = make((5,), dtype, seed=1)
    b, bn = make((5,), dtype, seed=2)
    m, v = a.mean(-1, keepdims=True), a.var(-1, keepdims=True)
    assert_close(F.layer_norm(x, (5,), w, b), (a - m) / np.sqrt(v + 1e-5) * wn + bn, dtype=dtype,
                 rtol=1e-5, atol=1e-5)
    m2, v2 = a.mean((1, 2), keepdims=True), a.var((1, 2), keepdims=True)
    assert_close(F.layer_norm(x, [6, 5], eps=1e-3), (a - m2) / np.sqrt(v2 + 1e-3), dtype=dtype,
                 rtol=1e-5, atol=1e-5)
    assert_close(F.rms_norm(x, [5], w, eps=1e-6),
                 a / np.sqrt((a * a).mean(-1, keepdims=True) + 1e-6) * wn, dtype=dtype,
                 rtol=1e-5, atol=1e-5)
    g = a.reshape(2, 3, 10)
    gm, gv = g.mean(-1, keepdims=True), g.var(-1, keepdims=True)
    gw, gwn = make((6,), dtype, seed=3)
    want = ((g - gm) / np.sqrt(gv + 1e-5)).reshape(2, 6, 5) * gwn[None, :, None]
    assert_close(F.group_norm(x, 3, gw), want, dtype=dtype, rtol=1e-5, atol=1e-5)
    im, iv = a.mean(-1, keepdims=True), a.var(-1, keepdims=True)
    assert_close(F.instance_norm(x), (a - im) / np.sqrt(iv + 1e-5), dtype=dtype, rtol=1e-5, atol=1e-5)
    n = np.sqrt((a * a).sum(1, keepdims=True))
    assert_close(F.normalize(x), a / np.maximum(n, 1e-12), dtype=dtype)
    n1 = np.abs(a).sum(-1, keepdims=True)
    assert_close(F.normalize(x, p=1, dim=-1), a / n1, dtype=dtype)


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_layer_norm_kernel_matches_its_composite(layout):
    """native_layer_norm and its backward against the composite of ops that defines them
    (mean and biased variance over the last dims), float64: values and the gradients of
    input, weight and bias."""
    results = []
    for kernel in (True, False):
        x = make((4, 6, 5), ptl.float64, layout, seed=4)[0].requires_grad_()
        w = make((6, 5), ptl.float64, seed=5)[0].requires_grad_()
        b = make((6, 5), ptl.float64, seed=6)[0].requires_grad_()
        if kernel:
            y = F.layer_norm(x, [6, 5], w, b, eps=1e-3)
        else:
            c = x - x.mean([1, 2], keepdim=True)
            y = c / ((c * c).mean([1, 2], keepdim=True) + 1e-3).sqrt() * w + b
        (y * make((4, 6, 5), ptl.float64, seed=7)[0]).sum().backward()
        results.append([y.detach(), x.grad, w.grad, b.grad])
    for a, b in zip(*results):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("shape", [(4, 3), (4, 3, 5), (2, 3, 4, 5), (2, 3, 1, 2, 2)])
def test_batch_norm_matches_its_composite(shape, training):
    """batch_norm's scale-and-shift form (one pass over the input: input * scale + shift, the
    [C] statistics folded first, as PyTorch's CPU kernel does) against (x - mean) /
    sqrt(var + eps) * weight + bias written out, float64: values, the running statistics and
    the gradients of input, weight and bias."""
    results = []
    dims = [0] + list(range(2, len(shape)))
    cshape = [1, shape[1]] + [1] * (len(shape) - 2)
    for fused in (True, False):
        x = make(shape, ptl.float64, seed=8)[0].requires_grad_()
        w = make((shape[1],), ptl.float64, seed=9)[0].requires_grad_()
        b = make((shape[1],), ptl.float64, seed=10)[0].requires_grad_()
        rm = make((shape[1],), ptl.float64, seed=11)[0]
        rv = make((shape[1],), ptl.float64, seed=12)[0].abs() + 0.5
        if fused:
            y = F.batch_norm(x, rm, rv, w, b, training, 0.1, 1e-3)
        else:
            if training:
                mean = x.mean(dims, keepdim=True)
                var = ((x - mean) * (x - mean)).mean(dims, keepdim=True)
                n = x.numel() // shape[1]
                with ptl.no_grad():
                    rm.mul_(0.9).add_(mean.reshape(-1) * 0.1)
                    rv.mul_(0.9).add_(var.reshape(-1) * (0.1 * n / (n - 1)))
            else:
                mean, var = rm.reshape(cshape), rv.reshape(cshape)
            y = (x - mean) / (var + 1e-3).sqrt() * w.reshape(cshape) + b.reshape(cshape)
        (y * make(shape, ptl.float64, seed=13)[0]).sum().backward()
        results.append([y.detach(), rm, rv, x.grad, w.grad, b.grad])
    for a, b in zip(*results):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-11, atol=1e-11)


def test_norms_against_torch():
    x, _ = make((2, 6, 4, 3), ptl.float64)
    rm, rv = ptl.zeros(6, dtype=ptl.float64), ptl.ones(6, dtype=ptl.float64)
    trm, trv = live(lambda: (torch.zeros(6, dtype=torch.float64),
                             torch.ones(6, dtype=torch.float64))) or (None, None)
    close_to_torch(F.instance_norm(x, rm, rv, momentum=0.2),
                   lambda: TF.instance_norm(tt(x), trm, trv, momentum=0.2), rtol=1e-10, atol=1e-12)
    close_to_torch(rm, lambda: trm, rtol=1e-12, atol=1e-14)
    close_to_torch(rv, lambda: trv, rtol=1e-12, atol=1e-14)
    for size in (1, 2, 3, 4):
        close_to_torch(F.local_response_norm(x, size, 0.1, 0.6, 2.0),
                       lambda: TF.local_response_norm(tt(x), size, 0.1, 0.6, 2.0), rtol=1e-10,
                       atol=1e-12)
    close_to_torch(F.rms_norm(x, [3]), lambda: TF.rms_norm(tt(x), [3]), rtol=1e-10, atol=1e-12)
    close_to_torch(F.normalize(x, p=3.0, dim=2), lambda: TF.normalize(tt(x), p=3.0, dim=2))
    z = ptl.zeros(2, 3)
    assert_close(F.normalize(z), np.zeros((2, 3)))


def test_normalize_and_cosine_similarity_grads_at_a_zero_row():
    """The norm is linalg.vector_norm, whose gradient at 0 is 0 (as PyTorch's): a zero row
    has finite gradients (the eps clamp's 1 / eps), not sqrt's nan."""
    a = np.array([[0.0, 0.0, 0.0], [1.0, -2.0, 0.5]])
    w = np.array([[0.3, -1.0, 2.0], [1.5, 0.2, -0.7]])
    x, x2 = ptl.tensor(a, requires_grad=True), ptl.tensor(a[::-1].copy(), requires_grad=True)
    (F.normalize(x) * ptl.tensor(w)).sum().backward()
    F.cosine_similarity(x, x2).sum().backward()
    assert_close(x.grad[0], w[0] / 1e-12, rtol=1e-3)
    assert np.isfinite(x.grad.numpy()).all() and np.isfinite(x2.grad.numpy()).all()
    if torch is not None:
        tx, tx2 = tt(x).requires_grad_(), tt(x2).requires_grad_()
        (TF.normalize(tx) * torch.tensor(w)).sum().backward()
        TF.cosine_similarity(tx, tx2).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10)
        np.testing.assert_allclose(x2.grad.numpy(), tx2.grad.numpy(), rtol=1e-10)


def test_norm_errors():
    with pytest.raises(RuntimeError, match=re.escape(
            "Given normalized_shape=[4], expected input with shape [*, 4], but got input of "
            "size[2, 3]")):
        F.layer_norm(ptl.ones(2, 3), [4])
    with pytest.raises(RuntimeError, match=re.escape(
            "Expected number of channels in input to be divisible by num_groups, but got input "
            "of shape [2, 3, 4] and num_groups=2")):
        F.group_norm(ptl.ones(2, 3, 4), 2)


@pytest.mark.parametrize("name, fn", [
    ("layer_norm", lambda a, w: F.layer_norm(a, [4], w, w * 0.5)),
    ("group_norm", lambda a, w: F.group_norm(a.reshape(2, 4, 3), 2, w, w)),
    ("batch_norm", lambda a, w: F.batch_norm(a.reshape(2, 4, 3), None, None, w, w, training=True)),
    # running statistics are not differentiable (as in PyTorch): constants here
    ("batch_norm_eval", lambda a, w: F.batch_norm(
        a.reshape(2, 4, 3), ptl.arange(4, dtype=a.dtype) - 1, ptl.arange(4, dtype=a.dtype) + 0.5,
        w)),
    ("instance_norm", lambda a, w: F.instance_norm(a.reshape(2, 4, 3), weight=w)),
    ("rms_norm", lambda a, w: F.rms_norm(a, [4], w)),
    ("local_response_norm", lambda a, w: F.local_response_norm(a.reshape(2, 4, 3), 3) * w[0]),
    ("normalize", lambda a, w: F.normalize(a, dim=1) * w),
])
def test_norm_gradcheck(name, fn):
    assert gradcheck(fn, [leaf((6, 4)), leaf((4,), seed=1, low=0.5)])


# ---- embedding ----

def test_embedding_forward_backward():
    w, wn = make((5, 3), ptl.float32, "transposed")
    idx = np.array([[0, 4, 2], [2, 2, 1]])
    assert_close(F.embedding(ptl.tensor(idx), w), wn[idx], dtype=ptl.float32)
    assert_close(F.embedding(ptl.tensor(idx, dtype=ptl.int32), w.double()), wn[idx])
    for padding_idx, freq in [(None, False), (2, False), (-1, True), (None, True)]:
        wl = w.detach().clone().requires_grad_(True)
        g = np.random.default_rng(0).uniform(-1, 1, (2, 3, 3))
        F.embedding(ptl.tensor(idx), wl, padding_idx=padding_idx,
                    scale_grad_by_freq=freq).backward(ptl.tensor(g, dtype=ptl.float32))

        def torch_grad():
            wt = tt(w).requires_grad_(True)
            TF.embedding(torch.tensor(idx), wt, padding_idx=padding_idx,
                         scale_grad_by_freq=freq).backward(torch.tensor(g, dtype=torch.float32))
            return wt.grad
        close_to_torch(wl.grad, torch_grad, rtol=1e-6, atol=1e-6)
    assert F.embedding(ptl.tensor(idx), w.requires_grad_(True)).grad_fn.name() == "EmbeddingBackward0"


def test_embedding_max_norm():
    w, _ = make((5, 3), ptl.float64)
    wt = live(lambda: tt(w))
    idx = ptl.tensor([0, 3, 3, 4])
    out = F.embedding(idx, w, max_norm=1.5)
    close_to_torch(out, lambda: TF.embedding(tt(idx), wt, max_norm=1.5))
    close_to_torch(w, lambda: wt)   # renormalized in place, rows 1, 2 untouched
    F.embedding(idx, w, max_norm=2.0, norm_type=1.0)
    if torch is not None:
        TF.embedding(tt(idx), wt, max_norm=2.0, norm_type=1.0)
    close_to_torch(w, lambda: wt)


@pytest.mark.parametrize("dtype", [ptl.float64, ptl.complex64, ptl.complex128], ids=str)
@pytest.mark.parametrize("p", [1.0, 2.0, 3.0, math.inf, -math.inf, 0.0], ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_embedding_renorm_matches_numpy(dtype, p, layout):
    """Each row the indices name, once, whose p-norm (of |z| for complex rows; max, min
    and the count of nonzeros for inf, -inf and 0, as PyTorch's norm) exceeds max_norm is
    scaled in place by max_norm / (norm + 1e-7); the other rows stay."""
    gen = np.random.default_rng(3)
    a = 2 * gen.standard_normal((6, 4))
    if dtype.is_complex:
        a = a + 2j * gen.standard_normal((6, 4))
    a[1, 0] = 0
    idx = [0, 2, 2, 5, 1, 3]
    w = ptl.tensor(a, dtype=dtype)
    if layout == "transposed":
        w = ptl.tensor(np.ascontiguousarray(a.T), dtype=dtype).t()
    out = ptl.embedding_renorm_(w, ptl.tensor(idx), 1.5, p)
    ref = a.copy()
    for i in sorted(set(idx)):
        n = np.linalg.norm(np.abs(a[i]), ord=p)
        if n > 1.5:
            ref[i] = a[i] * (1.5 / (n + 1e-7))
    tol = 1e-6 if dtype == ptl.complex64 else 1e-12
    assert out is w and out.dtype == dtype
    np.testing.assert_allclose(w.numpy(), ref, rtol=tol, atol=tol)


@torch_ref
@pytest.mark.parametrize("p", [2.0, math.inf])
def test_embedding_renorm_complex_matches_torch(p):
    a = np.random.default_rng(4).standard_normal((5, 3, 2)).view(np.complex128)[..., 0] * 2
    w, wt = ptl.tensor(a, dtype=ptl.complex64), torch.tensor(a, dtype=torch.complex64)
    ptl.embedding_renorm_(w, ptl.tensor([4, 0, 4]), 1.0, p)
    torch.embedding_renorm_(wt, torch.tensor([4, 0, 4]), 1.0, p)
    np.testing.assert_allclose(w.numpy(), wt.numpy(), rtol=1e-6, atol=1e-6)


def test_embedding_errors():
    w = ptl.ones(3, 4)
    with pytest.raises(IndexError, match=re.escape("index out of range in self")):
        F.embedding(ptl.tensor([1, 5]), w)
    with pytest.raises(IndexError, match=re.escape("index out of range in self")):
        F.embedding(ptl.tensor([[-1]]), w)
    with pytest.raises(RuntimeError, match=re.escape("'weight' must be 2-D")):
        F.embedding(ptl.tensor([1, 2]), ptl.ones(3))
    with pytest.raises(RuntimeError, match=re.escape(
            "Expected tensor for argument #1 'indices' to have one of the following scalar types: "
            "Long, Int; but got torch.FloatTensor instead (while checking arguments for embedding)")):
        F.embedding(ptl.tensor([1.0, 2.0]), w)
    with pytest.raises(AssertionError, match=re.escape("Padding_idx must be within num_embeddings")):
        F.embedding(ptl.tensor([1]), w, padding_idx=5)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_against_torch(mode):
    w, _ = make((6, 3), ptl.float64)
    inp = ptl.tensor([0, 2, 5, 1, 1, 4, 3])
    off = ptl.tensor([0, 2, 2, 5])
    last = ptl.tensor([0, 2, 2, 5, 7])   # include_last_offset: the last offset is len(input)
    for o, kw in [(off, {}), (last, {"include_last_offset": True}), (off, {"padding_idx": 1})]:
        close_to_torch(F.embedding_bag(inp, w, o, mode=mode, **kw),
                       lambda: TF.embedding_bag(tt(inp), tt(w), tt(o), mode=mode, **kw))
    inp2 = ptl.tensor([[0, 2, 5], [1, 1, 4]])
    close_to_torch(F.embedding_bag(inp2, w, mode=mode),
                   lambda: TF.embedding_bag(tt(inp2), tt(w), mode=mode))
    if mode == "sum":
        psw = ptl.tensor([0.5, 1, 2, 3, -1, 1, 0.1], dtype=ptl.float64)
        close_to_torch(F.embedding_bag(inp, w, off, mode="sum", per_sample_weights=psw),
                       lambda: TF.embedding_bag(tt(inp), tt(w), tt(off), mode="sum",
                                                per_sample_weights=tt(psw)))
        assert gradcheck(lambda a, p: F.embedding_bag(inp, a, off, mode="sum", per_sample_weights=p),
                         [leaf((6, 3)), leaf((7,), seed=1)])
    if mode == "mean":
        assert gradcheck(lambda a: F.embedding_bag(inp, a, off, mode="mean"), [leaf((6, 3))])


def _np_bags(w, idx, starts, ends, mode, psw=None, padding_idx=None):
    """float64 loop reference of embedding_bag sum / mean."""
    out = np.zeros((len(starts), w.shape[1]))
    for b, (s, e) in enumerate(zip(starts, ends)):
        keep = [i for i in range(s, e) if idx[i] != padding_idx]
        for i in keep:
            out[b] += w[idx[i]] * (1.0 if psw is None else psw[i])
        if mode == "mean" and keep:
            out[b] /= len(keep)
    return out


@pytest.mark.parametrize("mode", ["sum", "mean"])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_embedding_bag_fused_against_numpy_and_the_composite(mode, threads, layout, monkeypatch):
    # Note [Embedding bags]: sum / mean on the CPU take _ptl_embedding_bag; the composite
    # (reached by refusing the fusion) stays the reference
    prev = ptl.get_num_threads()
    ptl.set_num_threads(threads)
    try:
        gen = np.random.default_rng(7)
        a = gen.standard_normal((40, 33))
        for dt in (ptl.float32, ptl.float64):
            w = ptl.tensor(a).to(dt) if layout == "contiguous" else \
                ptl.tensor(np.ascontiguousarray(a.T)).to(dt).t()
            idx = gen.integers(0, 40, 24)
            cases = [(ptl.tensor(idx), ptl.tensor([0, 5, 5, 20]), {}),            # empty bag
                     (ptl.tensor(idx).int(), ptl.tensor([0, 3, 9, 24]).int(),
                      {"include_last_offset": True}),
                     (ptl.tensor(idx), ptl.tensor([0, 4, 10]), {"padding_idx": int(idx[4])})]
            for inp, off, kw in cases:
                o = off.tolist()
                starts, ends = (o[:-1], o[1:]) if kw.get("include_last_offset") else \
                    (o, o[1:] + [len(idx)])
                want = _np_bags(a, idx, starts, ends, mode, padding_idx=kw.get("padding_idx"))
                got = F.embedding_bag(inp, w, off, mode=mode, **kw)
                assert_close(got, want, dtype=dt)
                monkeypatch.setattr(F, "_fusable_bags", lambda *args: False)
                ref = F.embedding_bag(inp, w, off, mode=mode, **kw)
                monkeypatch.undo()
                np.testing.assert_allclose(got.double().numpy(), ref.double().numpy(),
                                           rtol=1e-5 if dt == ptl.float32 else 1e-12, atol=1e-6)
            # 2-D input (fixed-length bags), a non-contiguous index, per-sample weights
            inp2 = ptl.tensor(gen.integers(0, 40, (6, 10)))[:, ::2]
            i2 = inp2.numpy().reshape(-1)
            st = list(range(0, 30, 5))
            assert_close(F.embedding_bag(inp2, w, mode=mode), _np_bags(a, i2, st, st[1:] + [30],
                                                                       mode), dtype=dt)
            if mode == "sum":
                psw = gen.standard_normal(24)
                got = F.embedding_bag(ptl.tensor(idx), w, ptl.tensor([0, 7, 7]), mode="sum",
                                      per_sample_weights=ptl.tensor(psw).to(dt))
                assert_close(got, _np_bags(a, idx, [0, 7, 7], [7, 7, 24], "sum", psw), dtype=dt)
    finally:
        ptl.set_num_threads(prev)


@pytest.mark.parametrize("threads", [1, 2])
def test_embedding_bag_max_against_numpy_and_gradcheck(threads):
    """mode="max" (_embedding_bag_max: one gather and one max over [bags, longest, D]):
    empty bags and bags of padding_idx only give 0, include_last_offset, 2-D input, float32
    and float64 against a NumPy loop; gradcheck in float64, the gradient of a tie going to the
    bag's first row (torch's)."""
    prev = ptl.get_num_threads()
    ptl.set_num_threads(threads)
    try:
        gen = np.random.default_rng(9)
        a = gen.standard_normal((30, 7))
        idx = gen.integers(0, 30, 40)
        idx[20:23] = 4
        cases = [([0, 5, 5, 20, 23], {}), ([0, 3, 9, 40], {"include_last_offset": True}),
                 ([0, 20, 23], {"padding_idx": 4}), ([0], {}), ([0, 40], {})]
        for dt in (ptl.float32, ptl.float64):
            w = ptl.tensor(a).to(dt)
            for off, kw in cases:
                starts, ends = (off[:-1], off[1:]) if kw.get("include_last_offset") else \
                    (off, off[1:] + [len(idx)])
                want = np.zeros((len(starts), 7))
                for b, (s0, e0) in enumerate(zip(starts, ends)):
                    keep = [i for i in range(s0, e0) if idx[i] != kw.get("padding_idx")]
                    if keep:
                        want[b] = a[idx[keep]].max(0)
                got = F.embedding_bag(ptl.tensor(idx), w, ptl.tensor(off), mode="max", **kw)
                assert_close(got, want, dtype=dt)
            inp2 = gen.integers(0, 30, (5, 6))
            got = F.embedding_bag(ptl.tensor(inp2), w, mode="max")
            assert_close(got, a[inp2].max(1), dtype=dt)
        off = ptl.tensor([0, 5, 5, 20])
        assert gradcheck(lambda t: F.embedding_bag(ptl.tensor(idx), t, off, mode="max",
                                                   padding_idx=4), [leaf((30, 7))])
        # a tie: rows 1 and 2 are equal and the bag lists 2 first, so row 2 gets the gradient
        wt = ptl.tensor(np.array([[0.0], [2.0], [2.0]]), requires_grad=True)
        F.embedding_bag(ptl.tensor([2, 1, 0]), wt, ptl.tensor([0]), mode="max").sum().backward()
        np.testing.assert_array_equal(wt.grad.numpy(), [[0.0], [0.0], [1.0]])
    finally:
        ptl.set_num_threads(prev)


def test_embedding_bag_fused_sum_adds_rows_in_order():
    # each bag's rows add up in index order in float32: the bits of a sequential float32 sum
    gen = np.random.default_rng(3)
    a = (gen.standard_normal((50, 17)) * 100).astype(np.float32)
    idx = gen.integers(0, 50, (8, 16))
    want = np.zeros((8, 17), np.float32)
    for b in range(8):
        for i in idx[b]:
            want[b] += a[i]
    got = F.embedding_bag(ptl.tensor(idx), ptl.tensor(a), mode="sum").numpy()
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("width", [1, 7, 8, 9, 16, 24, 31, 32, 33, 40, 47, 64, 70])
def test_embedding_bag_fused_float32_column_blocks_bits(width, threads):
    # float32 bags add 32 columns at a time in registers (embedding.c bag_run_add_f4), then 8,
    # the rest column by column: across both widths, with per-sample weights, padding and
    # 1-D offsets with an empty bag, the bits stay those of float32 adds in index order
    prev = ptl.get_num_threads()
    ptl.set_num_threads(threads)
    try:
        gen = np.random.default_rng(width)
        a = (gen.standard_normal((30, width)) * 100).astype(np.float32)
        idx = gen.integers(0, 30, 40)
        psw = gen.standard_normal(40).astype(np.float32)
        off = [0, 9, 9, 25]
        bounds = list(zip(off, off[1:] + [40]))
        for kw in ({}, {"per_sample_weights": ptl.tensor(psw)}, {"padding_idx": int(idx[3])}):
            want = np.zeros((len(bounds), width), np.float32)
            for b, (s, e) in enumerate(bounds):
                for i in range(s, e):
                    if "padding_idx" in kw and idx[i] == kw["padding_idx"]:
                        continue
                    want[b] += psw[i] * a[idx[i]] if "per_sample_weights" in kw else a[idx[i]]
            got = F.embedding_bag(ptl.tensor(idx), ptl.tensor(a), ptl.tensor(off), mode="sum",
                                  **kw)
            assert got.numpy().tobytes() == want.tobytes()
        w2 = ptl.tensor(np.ascontiguousarray(a.T)).t()         # a transposed weight
        got = F.embedding_bag(ptl.tensor(idx.reshape(8, 5)), w2, mode="mean").numpy()
        want = np.zeros((8, width), np.float32)
        for b in range(8):
            for i in idx[5 * b:5 * b + 5]:
                want[b] += a[i]
        assert got.tobytes() == (want / np.float32(5)).tobytes()
        # the weight's gradient: g's rows added into fresh zeros in place (derivatives/embedding.c)
        wg = ptl.tensor(a).requires_grad_()
        g = gen.standard_normal((8, width)).astype(np.float32)
        gw, = ptl.autograd.grad(F.embedding_bag(ptl.tensor(idx.reshape(8, 5)), wg, mode="sum"),
                                wg, ptl.tensor(g))
        want_gw = np.zeros((30, width))
        np.add.at(want_gw, idx, np.repeat(g.astype(np.float64), 5, axis=0))
        assert_close(gw, want_gw, dtype=ptl.float32)
        assert F.embedding_bag(ptl.tensor(idx.reshape(40, 1))[:0], ptl.tensor(a),
                               mode="sum").shape == (0, width)
        assert F.embedding_bag(ptl.zeros(3, 0, dtype=ptl.int64), ptl.tensor(a),
                               mode="sum").numpy().tolist() == [[0.0] * width] * 3
    finally:
        ptl.set_num_threads(prev)


def _f4_bag_sums(a, idx, bounds, scale=None, mean=False):
    """float32 sums of the bags [s, e) of bounds in index order from +0 (the bits of
    embedding.c's kernel), and their float64 reference"""
    want = np.zeros((len(bounds), a.shape[1]), np.float32)
    want64 = np.zeros((len(bounds), a.shape[1]))
    for b, (s, e) in enumerate(bounds):
        for k in range(s, e):
            want[b] += a[idx[k]] if scale is None else scale[k] * a[idx[k]]
            want64[b] += a[idx[k]].astype(np.float64) * (1.0 if scale is None else float(scale[k]))
        if mean and e - s > 1:
            want[b] /= np.float32(e - s)
        if mean and e > s:
            want64[b] /= e - s
    return want, want64


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("width", [1, 8, 12, 16, 24, 32, 40, 48, 56, 64, 72])
def test_embedding_bag_f4_offsets_at_and_across_thresholds(width, threads):
    # Note [Embedding bags]: float32 rows of 8 .. 64 columns (a multiple of 8) are added whole
    # (bag_run_sum_f4, a variant per width), others 32 and 8 columns at a time; a table of
    # >= BAG_AHEAD_BYTES (1 MiB: 4096 rows of 64) fetches the rows BAG_AHEAD = 16 indices
    # ahead, except within 16 of the end.  Either way the bits are those of float32 adds in
    # index order from +0; checked against float64 NumPy too, on 1 and 2 threads, with empty
    # bags first, between and last, both forms of the offsets, scales and means.
    aten = ptl.ops.aten
    prev = ptl.get_num_threads()
    ptl.set_num_threads(threads)
    try:
        gen = np.random.default_rng(width)
        lengths = [0, 3, 3, 3, 0, 3, 5, 5, 1, 0, 0, 8, 8, 8, 2, 0]
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        n = int(np.sum(lengths))
        bounds = list(zip(starts, np.cumsum(lengths)))
        for rows in ((30, 4095, 4096, 4097) if width == 64 else (30,)):
            a = (gen.standard_normal((rows, width)) * 100).astype(np.float32)
            idx = gen.integers(0, rows, n)
            scale = gen.standard_normal(n).astype(np.float32)
            for offsets in (starts, np.append(starts, n)):
                for sc, mean in ((None, False), (scale, False), (None, True)):
                    got = aten._ptl_embedding_bag(ptl.tensor(a), ptl.tensor(idx),
                                                  ptl.tensor(offsets),
                                                  None if sc is None else ptl.tensor(sc),
                                                  len(lengths), mean).numpy()
                    want, want64 = _f4_bag_sums(a, idx, bounds, sc, mean)
                    assert got.tobytes() == want.tobytes(), (rows, len(offsets), mean)
                    np.testing.assert_allclose(got, want64, rtol=1e-4, atol=1e-2)
            # fewer indices than BAG_AHEAD, about as many, and none
            for m in (0, 1, 15, 16, 17, 33):
                offs = np.arange(0, m, 2)
                got = aten._ptl_embedding_bag(ptl.tensor(a), ptl.tensor(idx[:m]),
                                              ptl.tensor(offs), None, len(offs), False)
                want = _f4_bag_sums(a, idx[:m], list(zip(offs, list(offs[1:]) + [m])))[0]
                assert got.numpy().tobytes() == want.tobytes()
            # an index out of range anywhere
            for where in (0, 5, n - 1):
                for bad in (rows, -1):
                    i2 = idx.copy()
                    i2[where] = bad
                    with pytest.raises(IndexError, match="index out of range in self"):
                        aten._ptl_embedding_bag(ptl.tensor(a), ptl.tensor(i2),
                                                ptl.tensor(starts), None, len(lengths), False)
        # through F.embedding_bag: 1-D offsets (include_last_offset with indices past the last
        # bag), padding_idx, a 2-D input, one of width 0
        got = F.embedding_bag(ptl.tensor(idx), ptl.tensor(a), ptl.tensor(starts), mode="sum")
        assert got.numpy().tobytes() == _f4_bag_sums(a, idx, bounds)[0].tobytes()
        got = F.embedding_bag(ptl.tensor(idx), ptl.tensor(a), ptl.tensor(starts[:6]),
                              mode="sum", include_last_offset=True)
        assert got.numpy().tobytes() == _f4_bag_sums(a, idx, bounds[:5])[0].tobytes()
        pad = int(idx[7])
        got = F.embedding_bag(ptl.tensor(idx), ptl.tensor(a), ptl.tensor(starts), mode="mean",
                              padding_idx=pad)
        kept = [[k for k in range(s, e) if idx[k] != pad] for s, e in bounds]
        want = np.zeros((len(bounds), width), np.float32)
        for b, ks in enumerate(kept):
            for k in ks:
                want[b] += a[idx[k]]
            if len(ks) > 1:
                want[b] /= np.float32(len(ks))
        assert got.numpy().tobytes() == want.tobytes()
        got = F.embedding_bag(ptl.tensor(idx[:48].reshape(6, 8)), ptl.tensor(a), mode="mean")
        assert got.numpy().tobytes() == _f4_bag_sums(
            a, idx[:48], [(8 * b, 8 * b + 8) for b in range(6)], mean=True)[0].tobytes()
        assert F.embedding_bag(ptl.zeros(3, 0, dtype=ptl.int64), ptl.tensor(a),
                               mode="mean").numpy().tobytes() == bytes(12 * width)
    finally:
        ptl.set_num_threads(prev)


def test_embedding_bag_offsets_errors_of_the_kernel():
    # _ptl_embedding_bag checks its offsets with F.embedding_bag's messages (bag_offsets_host)
    aten = ptl.ops.aten
    w, idx = ptl.ones(6, 3), ptl.tensor([0, 1, 2])
    cases = [(ptl.tensor([1, 2]), 2, "offsets\\[0\\] has to be 0"),
             (ptl.tensor([0, 4]), 2, "can not be greater than input's length 3"),
             (ptl.tensor([0, 2, 1]), 3, "non-decreasing sequence"),
             (ptl.tensor([0.0, 1.0]), 2, "scalar types: Long, Int"),
             (ptl.tensor([[0, 1]]), 2, "1D"),
             (ptl.tensor([0, 1, 2]), 2, "is not the number of indices"),
             (ptl.tensor([0, 1]), 3, "num_bags or num_bags \\+ 1 offsets"),
             (ptl.tensor([], dtype=ptl.int64), 0, "none without bags")]
    for offs, nbags, msg in cases:
        with pytest.raises(RuntimeError, match=msg):
            aten._ptl_embedding_bag(w, idx, offs, None, nbags, False)
    # int32 offsets are read as int64
    got = aten._ptl_embedding_bag(w, idx, ptl.tensor([0, 1]).int(), None, 2, False)
    assert got.tolist() == [[1.0] * 3, [2.0] * 3]


def test_embedding_bag_fused_gradients_and_errors():
    inp = ptl.tensor([0, 2, 5, 1, 1, 4, 3])
    off = ptl.tensor([0, 2, 2, 5])
    assert gradcheck(lambda a: F.embedding_bag(inp, a, off, mode="mean", padding_idx=1),
                     [leaf((6, 3))])
    assert gradgradcheck(lambda a, p: F.embedding_bag(inp, a, off, mode="sum",
                                                      per_sample_weights=p),
                         [leaf((6, 3)), leaf((7,), seed=1)])
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding_bag(ptl.tensor([0, 6]), ptl.ones(6, 3), ptl.tensor([0]))
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding_bag(ptl.tensor([[0, -1]]), ptl.ones(6, 3), mode="sum")


def test_embedding_bag_errors():
    w = ptl.ones(3, 4)
    with pytest.raises(ValueError, match=re.escape("offsets has to be a 1D Tensor but got None")):
        F.embedding_bag(ptl.tensor([1, 2]), w)
    with pytest.raises(ValueError, match=re.escape(
            "if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
            "fixed length sequences. However, found offsets of type")):
        F.embedding_bag(ptl.tensor([[1, 2]]), w, ptl.tensor([0]))
    with pytest.raises(NotImplementedError, match=re.escape(
            "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
            "supported for mode='sum' (got mode='mean'). Please open a feature request on GitHub.")):
        F.embedding_bag(ptl.tensor([1, 2]), w, ptl.tensor([0]), mode="mean",
                        per_sample_weights=ptl.ones(2))



@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "uint8"])
@pytest.mark.parametrize("include_last_offset", [False, True])
def test_embedding_bag_offsets_give_each_index_its_bag(dtype, include_last_offset):
    """_ptl_embedding_bag_offsets (embedding.c): index i is in bag b where offsets[b] <= i <
    offsets[b + 1], against NumPy's searchsorted, on random non-decreasing offsets with empty
    bags, strided offsets, and with include_last_offset the indices past offsets[-1] left out."""
    gen = np.random.default_rng(3)
    aten = ptl.ops.aten
    for n in (0, 1, 7, 40):
        for nb in (0, 1, 3, 12):
            cuts = np.sort(gen.integers(0, n + 1, max(nb - 1, 0)))
            offs = np.concatenate([[0], cuts])[:nb]
            if include_last_offset:
                last = gen.integers(offs[-1], n + 1) if nb else 0   # offsets[0] is 0
                offs = np.concatenate([offs, [last]])
            # every other element of a tensor twice as long: a strided offsets tensor
            strided = ptl.tensor(np.repeat(offs, 2).astype(dtype))[::2]
            got = aten._ptl_embedding_bag_offsets(strided, n, include_last_offset)
            nbags = max(len(offs) - 1, 0) if include_last_offset else len(offs)
            end = (int(offs[-1]) if len(offs) else n) if include_last_offset else n
            end = end if nbags else 0
            want = np.searchsorted(offs[:nbags], np.arange(end), side="right") - 1
            assert got.dtype == ptl.int64
            np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("include_last_offset", [False, True])
def test_embedding_bag_bad_offsets(mode, include_last_offset):
    """PyTorch's messages for offsets that do not start at 0 or run past the input; offsets
    that decrease (PyTorch fails in an internal check for sum and mean) are refused in every
    mode; float offsets are refused, not truncated; nothing leaks on the way out."""
    w, inp = ptl.ones(10, 3), ptl.tensor([1, 2, 3, 4, 5, 6])

    def bag(offsets):
        return F.embedding_bag(inp, w, offsets, mode=mode,
                               include_last_offset=include_last_offset)
    with pytest.raises(RuntimeError, match=re.escape(
            "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start "
            "from position 0. However, got 1")):
        bag(ptl.tensor([1, 3, 6]))
    with pytest.raises(RuntimeError, match=re.escape(
            "offsets[-1] can not be greater than input's length 6 but got offsets[-1] of 9")):
        bag(ptl.tensor([0, 3, 9]))
    with pytest.raises(RuntimeError, match=re.escape(
            "offsets has to be a non-decreasing sequence, but got offsets[2] = 2 after "
            "offsets[1] = 4")):
        bag(ptl.tensor([0, 4, 2, 6]))
    with pytest.raises(RuntimeError, match=re.escape(
            "offsets has to be a non-decreasing sequence, but got offsets[1] = -1 after "
            "offsets[0] = 0")):
        bag(ptl.tensor([0, -1, 6]))
    with pytest.raises(RuntimeError, match=re.escape(
            "Expected tensor for argument #1 'offsets' to have one of the following scalar "
            "types: Long, Int; but got torch.FloatTensor instead (while checking arguments for "
            "embedding_bag)")):
        bag(ptl.tensor([0.0, 3.0, 6.0]))
    with pytest.raises(ValueError, match=re.escape("offsets has to be a 1D Tensor")):
        bag(ptl.tensor([[0, 3]]))

    def refused():
        with pytest.raises(RuntimeError):
            bag(ptl.tensor([0, 4, 2, 6]))
    assert_no_leak(refused)
    assert bag(ptl.tensor([0, 3, 6])).shape == (2 if include_last_offset else 3, 3)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_of_2d_input_with_empty_rows(mode):
    """A [3, 0] input is three empty bags (zeros) in every mode (PyTorch raises "step must be
    nonzero" from the arange of its offsets); a [0, 4] input is no bag."""
    w = ptl.randn(5, 3)
    assert_close(F.embedding_bag(ptl.zeros(3, 0, dtype=ptl.int64), w, mode=mode),
                 np.zeros((3, 3)))
    assert F.embedding_bag(ptl.zeros(0, 4, dtype=ptl.int64), w, mode=mode).shape == (0, 3)


# ---- dropout ----

def test_dropout():
    ptl.manual_seed(0)
    x = ptl.ones(100, 100, dtype=ptl.float64)
    y = F.dropout(x, 0.3)
    a = to_numpy(y)
    assert set(np.unique(a).tolist()) <= {0.0, 1 / 0.7}
    assert abs((a == 0).mean() - 0.3) < 0.03
    ptl.manual_seed(0)
    assert np.array_equal(to_numpy(F.dropout(x, 0.3)), a)      # reproducible
    assert not np.array_equal(to_numpy(F.dropout(x, 0.3)), a)  # fresh mask each call
    assert F.dropout(x, 0.3, training=False) is x
    assert F.dropout(x, 0.0) is x
    assert_close(F.dropout(x, 1.0), np.zeros((100, 100)))
    z = x.clone()
    assert F.dropout(z, 0.5, inplace=True) is z
    assert set(np.unique(to_numpy(z)).tolist()) <= {0.0, 2.0}
    with pytest.raises(ValueError, match=re.escape(
            "dropout probability has to be between 0 and 1, but got 1.5")):
        F.dropout(x, 1.5)
    l = leaf((50,))
    y = F.dropout(l, 0.5)
    y.sum().backward()
    assert_close(l.grad, to_numpy(y.detach()) / to_numpy(l.detach()))


def test_feature_dropout():
    x = ptl.ones(4, 8, 3, 5, dtype=ptl.float32)
    a = to_numpy(F.dropout2d(x, 0.5))
    per_channel = a.reshape(4, 8, -1)
    assert np.all(per_channel.min(-1) == per_channel.max(-1))   # whole channels kept or zeroed
    assert set(np.unique(a).tolist()) <= {0.0, 2.0}
    assert F.dropout2d(x, 0.5, training=False) is x
    assert tuple(F.dropout1d(ptl.ones(3, 4), 0.5).shape) == (3, 4)
    assert tuple(F.dropout3d(ptl.ones(2, 3, 2, 2, 2), 0.5).shape) == (2, 3, 2, 2, 2)
    with pytest.raises(RuntimeError, match=re.escape(
            "dropout1d: Expected 2D or 3D input, but received a 4D input.")):
        F.dropout1d(x, 0.5)


def test_alpha_dropout():
    ptl.manual_seed(1)
    x, a = make((200, 50), ptl.float64)
    p = 0.2
    y = to_numpy(F.alpha_dropout(x, p, training=True))
    alpha = 1.7580993408473766   # PyTorch's: dropped elements end at -alpha * sc * (1 - p)
    sc = 1.0 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
    kept = np.isclose(y, a * sc + alpha * sc * p)
    dropped = np.isclose(y, -alpha * sc * (1 - p))
    assert np.all(kept | dropped)
    assert abs(dropped.mean() - p) < 0.03
    assert F.alpha_dropout(x, p) is x
    n = to_numpy(F.alpha_dropout(ptl.tensor(np.random.default_rng(0).standard_normal(20000)),
                                 0.5, True))
    assert abs(n.mean()) < 0.05 and abs(n.std() - 1) < 0.05   # SELU's fixed point is kept
    f = to_numpy(F.feature_alpha_dropout(ptl.zeros(3, 4, 6), 0.5, True))
    assert np.all(f.min(-1) == f.max(-1))


# ---- attention and distances ----

@pytest.mark.parametrize("case", ["plain", "bool", "float", "causal", "causal_rect", "scale",
                                  "gqa", "masked_rows"])
def test_sdpa_against_torch(case):
    q, _ = make((2, 4, 3, 8), ptl.float32)
    k, _ = make((2, 4, 5, 8), ptl.float32, seed=1)
    v, _ = make((2, 4, 5, 6), ptl.float32, seed=2)
    kw = {}
    bm = np.random.default_rng(0).uniform(size=(3, 5)) > 0.4
    bm[:, 0] = True
    if case == "bool":
        kw["attn_mask"] = bm
    elif case == "float":
        kw["attn_mask"] = np.random.default_rng(1).uniform(-2, 0, (2, 1, 3, 5)).astype(np.float32)
    elif case in ("causal", "causal_rect"):
        kw["is_causal"] = True
        if case == "causal":
            k, v = k[:, :, :3], v[:, :, :3]
    elif case == "scale":
        kw["scale"] = 0.3
    elif case == "gqa":
        k, v = k[:, :2], v[:, :2]
        kw["enable_gqa"] = True
    elif case == "masked_rows":
        bm = bm.copy()
        bm[1] = False
        kw["attn_mask"] = bm
    ours = {key: ptl.tensor(val) if isinstance(val, np.ndarray) else val for key, val in kw.items()}
    theirs = live(lambda: {key: torch.from_numpy(val) if isinstance(val, np.ndarray) else val
                           for key, val in kw.items()})
    got = F.scaled_dot_product_attention(q, k, v, **ours)
    close_to_torch(got, lambda: TF.scaled_dot_product_attention(tt(q), tt(k), tt(v), **theirs),
                   rtol=1e-5, atol=1e-5)


def test_sdpa_errors():
    q = ptl.ones(3, 4)
    m = ptl.ones(3, 3, dtype=ptl.bool)
    msg = "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True"
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        F.scaled_dot_product_attention(q, q, q, attn_mask=m, is_causal=True)
    if torch is not None:
        with pytest.raises(RuntimeError, match=re.escape(msg)):
            TF.scaled_dot_product_attention(tt(q), tt(q), tt(q), attn_mask=tt(m), is_causal=True)


def test_sdpa_dropout_and_gradcheck():
    q, _ = make((2, 3, 4), ptl.float32)
    assert tuple(F.scaled_dot_product_attention(q, q, q, dropout_p=0.5).shape) == (2, 3, 4)
    mask = ptl.tensor([[True, False, True], [True, True, False]])
    assert gradcheck(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, attn_mask=mask),
                     [leaf((2, 4)), leaf((3, 4), 1), leaf((3, 2), 2)])


@pytest.mark.parametrize("p", [1.0, 2.0, 3.0, math.inf, 0.0])
def test_distances_against_torch(p):
    x1, _ = make((4, 5), ptl.float64)
    x2, _ = make((4, 5), ptl.float64, seed=1)
    close_to_torch(F.pairwise_distance(x1, x2, p),
                   lambda: TF.pairwise_distance(tt(x1), tt(x2), p))
    close_to_torch(F.pairwise_distance(x1, x2[0], p, keepdim=True),
                   lambda: TF.pairwise_distance(tt(x1), tt(x2[0]), p, keepdim=True))
    close_to_torch(F.pairwise_distance(x1[0], x2[0], p),
                   lambda: TF.pairwise_distance(tt(x1[0]), tt(x2[0]), p))
    if p == 2.0:
        close_to_torch(F.cosine_similarity(x1, x2),
                       lambda: TF.cosine_similarity(tt(x1), tt(x2)))
        close_to_torch(F.cosine_similarity(x1, x2[:1], dim=-1),
                       lambda: TF.cosine_similarity(tt(x1), tt(x2[:1]), dim=-1))
        z = ptl.zeros(2, 3, dtype=ptl.float64)
        close_to_torch(F.cosine_similarity(z, x1[:2, :3]),
                       lambda: TF.cosine_similarity(tt(z), tt(x1[:2, :3])))


def test_loss_refuses_a_weight_requiring_grad():
    # refused at the forward call, as in PyTorch; bce's target gradient: tests/autograd/test_loss_grad.py
    x = leaf((2, 3))
    w = leaf((3,), low=0.5)
    msg = ("The function 'nll_loss_forward' is not differentiable with respect to argument "
           "'weight'. This input cannot have requires_grad True.")
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        F.nll_loss(x, ptl.tensor([0, 2]), weight=w)


def _every_op_once():
    x = ptl.tensor([[0.5, -1.0, 2.0], [3.0, -4.0, 0.1]], requires_grad=True)
    t = ptl.tensor([2, 0])
    outs = [F.gelu(x), F.silu(x), F.elu(x), F.softplus(x), F.hardswish(x), F.logsigmoid(x),
            F.softshrink(x), F.threshold(x, 0.0, 1.0), F.softmax(x, 1), F.log_softmax(x, 0),
            F.nll_loss(x, t), F.cross_entropy(x, t, label_smoothing=0.1),
            F.binary_cross_entropy(x.sigmoid(), ptl.ones(2, 3)),
            F.embedding(ptl.tensor([1, 0, 1]), x), F.dropout(x, 0.5), F.layer_norm(x, [3])]
    sum(o.sum() for o in outs).backward()
    w = ptl.ones(3, 2)
    ptl.embedding_renorm_(w, t, 1.0, 2.0)
    for bad in [lambda: F.nll_loss(x, ptl.tensor([5, 0])), lambda: F.embedding(ptl.tensor([9]), w),
                lambda: F.binary_cross_entropy(x, ptl.ones(2, 3)),
                lambda: F.softmax(ptl.tensor([1, 2]), 0), lambda: F.softshrink(x, -1.0),
                lambda: ptl.embedding_renorm_(w, ptl.tensor([7]), 1.0, 2.0),
                lambda: F.nll_loss(x, ptl.tensor([1, 0]), weight=ptl.ones(2))]:
        with pytest.raises((RuntimeError, IndexError, ValueError, NotImplementedError)):
            bad()


def test_no_leaks_on_success_and_error_paths():
    assert_no_leak(_every_op_once, 3)


# ---- softmax / log_softmax backward over contiguous rows; nll_loss without float64 copies ----

def _softmax_np(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape, dim", [((5, 1), 1), ((3, 7), 1), ((4, 8), -1), ((2, 9), 1),
                                        ((6, 65), 1), ((2, 3, 17), 2), ((0, 5), 1),
                                        ((3, 7), 0), ((4, 5, 3), 1)])
@pytest.mark.parametrize("log", [True, False])
def test_softmax_backward_rows(dtype, shape, dim, log):
    x, xa = make(shape, dtype, "transposed" if len(shape) == 2 else "contiguous", seed=14)
    g, ga = make(shape, dtype, seed=15)
    x.requires_grad_(True)
    y = (F.log_softmax if log else F.softmax)(x, dim)
    y.backward(g)
    xa, ga = np.asarray(xa, np.float64), np.asarray(ga, np.float64)
    p = _softmax_np(xa, dim)
    if log:
        expected = ga - p * ga.sum(axis=dim, keepdims=True)
    else:
        expected = p * (ga - (ga * p).sum(axis=dim, keepdims=True))
    assert_close(x.grad, expected, dtype=dtype, atol={ptl.float16: 5e-2, ptl.bfloat16: 2e-1}.get(
        dtype), rtol={ptl.float16: 5e-2, ptl.bfloat16: 1e-1}.get(dtype))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_grad(dtype, weighted, reduction):
    rs = np.random.RandomState(16)
    xa = rs.randn(37, 65)
    ta = rs.randint(0, 65, 37)
    ta[[3, 10]] = -100
    wa = rs.rand(65) + 0.5 if weighted else np.ones(65)
    x = ptl.tensor(xa).to(dtype).requires_grad_(True)
    w = ptl.tensor(wa).to(dtype) if weighted else None
    xa = x.detach().double().numpy()
    loss = F.cross_entropy(x, ptl.tensor(ta), weight=w, reduction=reduction)
    keep = ta != -100
    lsm = xa - np.log(np.exp(xa - xa.max(1, keepdims=True)).sum(1, keepdims=True)) - \
        xa.max(1, keepdims=True)
    tw = np.where(keep, wa[np.where(keep, ta, 0)], 0.0)
    per = -lsm[np.arange(37), np.where(keep, ta, 0)] * tw
    scale = {"mean": np.full(37, 1 / tw.sum()), "sum": np.ones(37), "none": np.ones(37)}[reduction]
    expected = {"mean": per.sum() / tw.sum(), "sum": per.sum(), "none": per}[reduction]
    assert_close(loss.detach(), expected, dtype=dtype)
    loss.backward(ptl.ones_like(loss))
    onehot = np.zeros_like(xa)
    onehot[np.arange(37), np.where(keep, ta, 0)] = 1.0
    grad = (np.exp(lsm) - onehot) * (tw * scale)[:, None]
    assert_close(x.grad, grad, dtype=dtype)


def test_cross_entropy_grads_like_torch():
    # ties: equal logits in a row, and a target at the tied maximum
    xa = np.array([[1.0, 1.0, 1.0], [2.0, 2.0, -1.0], [0.5, 3.0, 3.0]])
    ta = np.array([0, 1, 2])
    def run(lib):
        x = lib.tensor(xa, requires_grad=True)
        lib.nn.functional.cross_entropy(x, lib.tensor(ta)).backward()
        return {"grad": x.grad}
    golden.assert_same_results(run, rtol=1e-12, atol=1e-15)


# ---- gelu: float32 AVX2 loops (exact form unrolled, tanh form vectorized) ----

def _gelu_np(x, approx):
    from math import erf
    if approx == "tanh":
        k = np.sqrt(2 / np.pi)
        u = k * (x + 0.044715 * x ** 3)
        t = np.tanh(u)
        return 0.5 * x * (1 + t), 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x)
    cdf = 0.5 * (1 + np.vectorize(erf, otypes=[np.float64])(x / np.sqrt(2)))
    return x * cdf, cdf + x * np.exp(-0.5 * x * x) / np.sqrt(2 * np.pi)


GELU_X = np.concatenate([np.linspace(-12, 12, 301), [0.0, -0.0, 1e-30, -1e-30, 5.0, -5.4, -5.6],
                         np.random.RandomState(17).randn(200) * 2])


@pytest.mark.parametrize("approx", ["none", "tanh"])
@pytest.mark.parametrize("n", [0, 1, 7, 8, 15, 16, 17, 33, len(GELU_X)])
@pytest.mark.parametrize("layout", ["contiguous", "strided"])
def test_gelu_float32(approx, n, layout):
    xa = GELU_X[:n].astype(np.float32)
    x = ptl.tensor(np.repeat(xa, 2))[::2] if layout == "strided" else ptl.tensor(xa)
    x.requires_grad_(True)
    y = F.gelu(x, approximate=approx)
    ga = np.random.RandomState(18).randn(n).astype(np.float32)
    y.backward(ptl.tensor(ga))
    ey, eg = _gelu_np(xa.astype(np.float64), approx)
    assert_close(y.detach(), ey, dtype=ptl.float32, rtol=1e-5, atol=1e-6)
    assert_close(x.grad, eg * ga, dtype=ptl.float32, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("approx", ["none", "tanh"])
def test_gelu_float32_broadcast_grad_and_special(approx):
    # a broadcast grad_output (the gradient of sum) and +-inf, nan, huge values
    xa = np.array([np.inf, -np.inf, np.nan, 3e38, -3e38, -20.0, 20.0, 0.5, -0.5] * 2,
                  np.float32)
    x = ptl.tensor(xa, requires_grad=True)
    F.gelu(x, approximate=approx).sum().backward()
    def torch_run():
        t = torch.tensor(xa.astype(np.float64), requires_grad=True)
        ty = torch.nn.functional.gelu(t, approximate=approx)
        ty.sum().backward()
        return ty.detach(), t.grad
    theirs = live(torch_run) or (None, None)
    close_to_torch(F.gelu(x.detach(), approximate=approx), lambda: theirs[0], 1e-5, 1e-6)
    close_to_torch(x.grad, lambda: theirs[1], 1e-5, 1e-6)


# ---- embedding backward: float32 gradients summed in double without a float64 copy ----

@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("padding_idx", [None, 2])
@pytest.mark.parametrize("scale", [False, True])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_embedding_backward(dtype, padding_idx, scale, layout):
    rs = np.random.RandomState(19)
    ia = rs.randint(0, 7, (5, 6))
    ia[0, :3] = 2
    w = ptl.tensor(rs.randn(7, 9)).to(dtype).requires_grad_(True)
    g, ga = make((5, 9, 6), dtype, "contiguous", seed=20)
    g = g.transpose(1, 2) if layout == "transposed" else g.reshape(5, 6, 9)
    ga = np.asarray(ga, np.float64)
    ga = ga.transpose(0, 2, 1) if layout == "transposed" else ga.reshape(5, 6, 9)
    F.embedding(ptl.tensor(ia), w, padding_idx=padding_idx, scale_grad_by_freq=scale).backward(g)
    expected = np.zeros((7, 9))
    counts = np.bincount(ia.ravel(), minlength=7)
    for i, row in zip(ia.ravel(), ga.reshape(-1, 9)):
        if i != padding_idx:
            expected[i] += row / (counts[i] if scale else 1)
    assert_close(w.grad, expected, dtype=dtype)


def test_embedding_gradcheck():
    idx = ptl.tensor([[0, 2, 2], [1, 0, 3]])
    w = ptl.randn(4, 3, dtype=ptl.float64, requires_grad=True)
    # repeated indices accumulate (scale_grad_by_freq and padding_idx alter the gradient on
    # purpose, so only the plain form is a true derivative)
    assert gradcheck(lambda w: F.embedding(idx, w.transpose(0, 1).transpose(0, 1)), (w,))


# ---- scaled_dot_product_attention: cached causal bias, no fully-masked-row pass ----

def _sdpa_np(q, k, v, causal, scale=None):
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    if causal:
        L, S = s.shape[-2:]
        s = np.where(np.arange(L)[:, None] >= np.arange(S)[None, :], s, -np.inf)
    return _softmax_np(s, -1) @ v


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
@pytest.mark.parametrize("L, S, E", [(5, 5, 3), (4, 7, 8), (7, 4, 2), (1, 1, 4), (6, 6, 9)])
@pytest.mark.parametrize("causal", [True, False])
def test_sdpa(dtype, L, S, E, causal):
    q, qa = make((2, 3, L, E), dtype, seed=21)
    k, ka = make((2, 3, S, E), dtype, "transposed" if S == E else "contiguous", seed=22)
    v, va = make((2, 3, S, 5), dtype, seed=23)
    qa, ka, va = (np.asarray(a, np.float64) / 5 for a in (qa, ka, va))
    out = F.scaled_dot_product_attention(q / 5, k / 5, v / 5, is_causal=causal)
    assert_close(out, _sdpa_np(qa, ka, va, causal), dtype=dtype)
    # twice: the cached bias is reused and left unchanged
    out2 = F.scaled_dot_product_attention(q / 5, k / 5, v / 5, is_causal=causal, scale=0.3)
    assert_close(out2, _sdpa_np(qa, ka, va, causal, 0.3), dtype=dtype)


def test_sdpa_causal_empty_keys_like_torch():
    def run(m):
        return {"output": m.nn.functional.scaled_dot_product_attention(
            m.ones(2, 3, 4), m.ones(2, 0, 4), m.ones(2, 0, 5), is_causal=True)}
    golden.assert_same_results(run, rtol=0, atol=0)


@pytest.mark.parametrize("L, S, E", [(4, 4, 3), (3, 5, 6)])
def test_sdpa_causal_gradcheck(L, S, E):
    q = ptl.randn(2, L, E, dtype=ptl.float64, requires_grad=True)
    k = ptl.randn(2, S, E, dtype=ptl.float64, requires_grad=True)
    v = ptl.randn(2, S, 3, dtype=ptl.float64, requires_grad=True)
    fn = lambda q, k, v: F.scaled_dot_product_attention(q, k.transpose(0, 1).transpose(0, 1),
                                                          v, is_causal=True)
    assert gradcheck(fn, (q, k, v))
    assert gradgradcheck(fn, (q, k, v))


def test_gumbel_softmax():
    logits = ptl.tensor(np.log(np.array([[0.1, 0.6, 0.3]] * 4000)))
    ptl.manual_seed(0)
    soft = F.gumbel_softmax(logits, tau=0.5)
    assert_close(soft.sum(-1), np.ones(4000))
    ptl.manual_seed(0)
    hard = F.gumbel_softmax(logits, tau=0.5, hard=True)
    # the hard sample is the one-hot of the soft one's argmax, drawn from softmax(logits)
    assert_close(hard.argmax(-1), to_numpy(soft.argmax(-1)))
    assert set(np.unique(to_numpy(hard))) == {0.0, 1.0}
    freq = to_numpy(hard).mean(0)
    assert np.allclose(freq, [0.1, 0.6, 0.3], atol=0.03)
    x = ptl.tensor(np.random.default_rng(0).standard_normal((3, 4)), requires_grad=True)
    ptl.manual_seed(1)
    y = F.gumbel_softmax(x, hard=True, dim=0)
    (y * ptl.arange(12.0, dtype=ptl.float64).reshape(3, 4)).sum().backward()
    assert x.grad is not None and float(x.grad.abs().sum()) > 0   # straight-through gradient
    with pytest.warns(UserWarning, match="`eps` parameter is deprecated"):
        F.gumbel_softmax(x, eps=1e-5)


@pytest.mark.parametrize("dtype,ctype", [(ptl.float32, "float"), (ptl.float16, "float"),
                                         (ptl.bfloat16, "float")])
@pytest.mark.parametrize("shape", [(3,), (5, 0)])
def test_elu_parameters_that_overflow_the_opmath_type_are_refused(dtype, ctype, shape):
    """elu's alpha, scale and input_scale (and celu's alpha and 1 / alpha) reach the kernel as
    float for float32 and the half types, with c10's overflow check: float64 takes them"""
    msg = f"value cannot be converted to type {ctype} without overflow"
    aten = lambda lib: lib.ops.aten  # noqa: E731
    calls = [
        lambda lib: lib.nn.functional.elu(lib.ones(shape, dtype=_dtype_of(lib, dtype)), alpha=1e308),
        lambda lib: lib.nn.functional.celu(lib.ones(shape, dtype=_dtype_of(lib, dtype)), alpha=1e-40),
        lambda lib: aten(lib).elu_(lib.ones(shape, dtype=_dtype_of(lib, dtype)), 1, 1e39),
    ] + [lambda lib, i=i: aten(lib).elu_backward(
        lib.ones(shape, dtype=_dtype_of(lib, dtype)), *[1e39 if j == i else 1 for j in range(3)],
        False, lib.ones(shape, dtype=_dtype_of(lib, dtype))) for i in range(3)]
    for call in calls:
        assert_raises_like_torch(call, RuntimeError, msg)
    x = ptl.tensor([-1.0, 2.0], dtype=ptl.float64)
    assert_close(F.elu(x, alpha=1e308), np.array([1e308 * math.expm1(-1.0), 2.0]))


def _dtype_of(lib, dtype):
    return getattr(lib, str(dtype).split(".")[-1])


@pytest.mark.parametrize("grad_dtype,self_dtype,want", [
    (ptl.float32, ptl.int16, None), (ptl.float64, ptl.float32, ptl.float32),
    (ptl.float32, ptl.float64, ptl.float64), (ptl.int16, ptl.float32, ptl.float32),
    (ptl.float16, ptl.float32, ptl.float32)])
def test_mish_backward_returns_selfs_dtype(grad_dtype, self_dtype, want):
    """PyTorch's mish_backward writes into empty_like(self): the promoted result is cast to
    self's dtype, and refused when it cannot be"""
    g, x = ptl.tensor([1.0, -2.0, 0.5]).to(grad_dtype), ptl.tensor([0.3, -1.0, 2.0]).to(self_dtype)
    if want is None:
        assert_raises_like_torch(
            lambda lib: lib.ops.aten.mish_backward(lib.ones(2, dtype=lib.float32),
                                                   lib.ones(2, dtype=lib.int16)),
            RuntimeError, "result type Float can't be cast to the desired output type Short")
        return
    r = ptl.ops.aten.mish_backward(g, x)
    assert r.dtype == want
    xd = x.to(ptl.float64).numpy()
    sp = np.tanh(np.log1p(np.exp(xd)))
    sig = 1 / (1 + np.exp(-xd))
    expected = g.to(ptl.float64).numpy() * (sp + xd * sig * (1 - sp * sp))
    assert_close(r, expected.astype(np.float32 if want == ptl.float32 else np.float64),
                 dtype=want)


@pytest.mark.parametrize("dtypes,msg", [
    (("float64", "float64", "int64"), "Found dtype Long but expected Double"),
    (("float64", "float32", "float32"), "Found dtype Double but expected Float"),
    (("float32", "float64", "float64"), "Found dtype Float but expected Double"),
    (("float32", "float32", "float64"), "Found dtype Double but expected Float"),
    (("float16", "float32", "float32"), "Found dtype Half but expected Float")])
def test_huber_loss_backward_wants_one_dtype(dtypes, msg):
    """PyTorch's huber_loss_backward iterates grad_input (like self), self, target and
    grad_output with every dtype checked against self's"""
    def call(lib):
        g, x, t = (lib.ones(2, dtype=getattr(lib, d)) for d in dtypes)
        lib.ops.aten.huber_loss_backward(g, x, t, 1, 1.0)
    assert_raises_like_torch(call, RuntimeError, msg)


@pytest.mark.parametrize("name", ["mse_loss_backward", "smooth_l1_loss_backward"])
@pytest.mark.parametrize("dtypes", [("bfloat16", "float16", "int64"),
                                    ("float32", "float16", "float16"),
                                    ("float64", "float16", "bfloat16"),
                                    ("float16", "float64", "float32"),
                                    ("float32", "float32", "float32")])
def test_regression_loss_backward_is_in_self_dtype(name, dtypes):
    """mse_loss_backward and smooth_l1_loss_backward compute in the dtype grad_output, self
    and target promote to and return self's dtype, PyTorch's grad_input being empty like self
    (tools/fuzz --torch seed 25, call 997: a bfloat16 grad_output with a float16 self)"""
    rng = np.random.default_rng(7)
    g, x, t = (rng.standard_normal((2, 3)) for _ in range(3))
    args = [ptl.tensor(a).to(getattr(ptl, d)) for a, d in zip((g, x, t), dtypes)]
    extra = [0.5] if name.startswith("smooth") else []
    r = getattr(ptl.ops.aten, name)(*args, 0, *extra)
    assert r.dtype == args[1].dtype
    gd, xd, td = (a.to(ptl.float64).numpy() for a in args)
    d = xd - td
    want = gd * (2 * d if not extra else np.where(np.abs(d) < 0.5, d / 0.5, np.sign(d)))
    assert_close(r, want, dtype=r.dtype)
    if torch is not None:
        theirs = getattr(torch.ops.aten, name)(
            *[torch.tensor(a.to(ptl.float64).numpy()).to(getattr(torch, d))
              for a, d in zip(args, dtypes)], 0, *extra)
        assert str(theirs.dtype) == str(r.dtype)
        np.testing.assert_array_equal(r.to(ptl.float64).numpy(),
                                      theirs.to(torch.float64).numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_smooth_l1_loss_backward_slope_has_torch_bits(dtype):
    """smooth_l1_loss_backward's slope between -beta and beta is (d / beta) norm g, the order
    of PyTorch's vector loop, with its bits on a contiguous run; its scalar loop (short or
    strided runs, a run's tail) multiplies first and keeps beta in double, so g = inf with beta = 1e308 is -inf there and nan in
    its vector loop and ours (fuzzer --torch seed 41, call 474: left, docs/decisions.md)"""
    dt = getattr(ptl, dtype)
    rng = np.random.default_rng(9)
    gs, xs, ts = (rng.standard_normal(300) for _ in range(3))
    got = ptl.ops.aten.smooth_l1_loss_backward(*(ptl.tensor(a, dtype=dt) for a in (gs, xs, ts)),
                                               1, 0.7).numpy()
    d = xs - ts
    want = np.where(d <= -0.7, -gs, np.where(d >= 0.7, gs, d * gs / 0.7)) / 300
    assert_close(ptl.tensor(got), want, dtype=dt)
    if torch is not None:
        tdt = getattr(torch, dtype)
        theirs = torch.ops.aten.smooth_l1_loss_backward(
            *(torch.tensor(a, dtype=tdt) for a in (gs, xs, ts)), 1, 0.7).numpy()
        # its vector loop's bits; the tail past its last pair of vectors is its scalar loop's
        np.testing.assert_array_equal(got[:256], theirs[:256])
        np.testing.assert_allclose(got, theirs, rtol=4 * np.finfo(got.dtype).eps)


@pytest.mark.parametrize("dtypes,msg", [
    (("float32", "int64", "float32"), "result type Float can't be cast to the desired output "
                                      "type Long"),
    (("float32", "bool", "int64"), "result type Float can't be cast to the desired output "
                                   "type Bool"),
    (("float64", "int32", "int32"), "result type Double can't be cast to the desired output "
                                    "type Int")])
def test_regression_loss_backward_refuses_an_integer_self(dtypes, msg):
    for name, extra in (("mse_loss_backward", []), ("smooth_l1_loss_backward", [1.0])):
        def call(lib):
            g, x, t = (lib.ones(2, dtype=getattr(lib, d)) for d in dtypes)
            getattr(lib.ops.aten, name)(g, x, t, 1, *extra)
        assert_raises_like_torch(call, RuntimeError, msg)


def test_gelu_backward_refuses_an_unknown_approximation():
    assert_raises_like_torch(
        lambda lib: lib.ops.aten.gelu_backward(lib.ones(3), lib.ones(3), approximate="constant"),
        RuntimeError, "approximate argument must be either none or tanh.")


@pytest.mark.parametrize("shape", [(3,), (4, 0, 4)])
def test_threshold_and_hardtanh_scalars_that_overflow_are_refused(shape):
    """threshold's threshold reaches its kernel in the opmath type (float for float16) and
    its value in the tensor's dtype; hardtanh's bounds go to clamp in the dtype, an integer
    dtype's through int64 first (toLong): each with c10's overflow check, on empty tensors
    too (tools/fuzz seed 11, call 1421)"""
    aten = lambda lib: lib.ops.aten  # noqa: E731

    def ones(lib, dtype):
        return lib.ones(shape, dtype=getattr(lib, dtype))
    cases = [
        (lambda L: aten(L).threshold(ones(L, "int8"), 1.988, -1e308), "int8_t"),
        (lambda L: aten(L).threshold(ones(L, "int8"), float("inf"), 1), "int8_t"),
        (lambda L: aten(L).threshold_(ones(L, "float16"), 1e300, 1e10), "float"),
        (lambda L: aten(L).threshold(ones(L, "float16"), 1, 1e10), "c10::Half"),
        (lambda L: aten(L).threshold(ones(L, "float32"), 1, -1e308), "float"),
        (lambda L: aten(L).threshold_backward(ones(L, "int8"), ones(L, "int8"), 1e3), "int8_t"),
        (lambda L: aten(L).hardtanh(ones(L, "float32"), -2, 1e308), "float"),
        (lambda L: aten(L).hardtanh_(ones(L, "float16"), -1e10, 1), "c10::Half"),
        (lambda L: aten(L).hardtanh(ones(L, "bfloat16"), -2, 1e308), "c10::BFloat16"),
        (lambda L: aten(L).hardtanh(ones(L, "int8"), -2, 1e308), "int64_t"),
        (lambda L: aten(L).hardtanh(ones(L, "int8"), -1e10, 1), "int8_t"),
    ]
    for call, ctype in cases:
        assert_raises_like_torch(call, RuntimeError,
                                 f"value cannot be converted to type {ctype} without overflow")
    # what fits is taken: float16's threshold in float (threshold_backward's too), a uint8
    # bound that truncates to 0
    x = ptl.tensor([-1.0, 2.0, 3e4], dtype=ptl.float16)
    assert_close(F.threshold(x, 1e10, 5.0), [5.0, 5.0, 5.0], dtype=ptl.float16)
    got = ptl.ops.aten.threshold_backward(ptl.ones(2, dtype=ptl.float16),
                                          ptl.tensor([5, 2000], dtype=ptl.float16), 1e30)
    assert got.tolist() == [0, 0]
    u = ptl.tensor([0, 7, 200], dtype=ptl.uint8)
    assert F.hardtanh(u, -0.5, 100.0).tolist() == [0, 7, 100]
    with pytest.raises(RuntimeError, match="cannot do hardtanh on an unsigned type with "
                                           "negative limits"):
        F.hardtanh(u, -1.0, 100.0)


def test_binary_cross_entropy_wants_one_dtype():
    """PyTorch iterates input and target (and the backward's grad_output) in one dtype: a
    target of another dtype is refused, an empty one too (tools/fuzz seed 11, call 1106)"""
    aten = lambda lib: lib.ops.aten  # noqa: E731
    h = lambda L, n=2: L.full((n,), 0.5, dtype=L.float16)  # noqa: E731
    cases = [
        (lambda L: aten(L).binary_cross_entropy(h(L), L.ones(2, dtype=L.int64)), "Long", "Half"),
        (lambda L: aten(L).binary_cross_entropy(h(L, 0), L.ones(0, dtype=L.int64),
                                                L.ones(0)), "Long", "Half"),
        (lambda L: aten(L).binary_cross_entropy(h(L), L.ones(2)), "Float", "Half"),
        (lambda L: aten(L).binary_cross_entropy(L.full((2,), 2.0), L.ones(2, dtype=L.int64)),
         "Long", "Float"),
        (lambda L: aten(L).binary_cross_entropy_backward(h(L), h(L), h(L).double()),
         "Double", "Half"),
        (lambda L: aten(L).binary_cross_entropy_backward(h(L), h(L).double(), h(L)),
         "Double", "Half"),
        (lambda L: aten(L).binary_cross_entropy_backward(h(L).double(), h(L), h(L)),
         "Half", "Double"),
    ]
    for call, found, want in cases:
        assert_raises_like_torch(call, RuntimeError, f"Found dtype {found} but expected {want}")
    # the weight is not iterated: any floating dtype
    got = ptl.ops.aten.binary_cross_entropy(h(ptl), h(ptl), ptl.ones(2, dtype=ptl.float64))
    assert got.dtype == ptl.float16
    assert_close(got, -math.log(0.5), dtype=ptl.float16)


@pytest.mark.parametrize("op", ["mse", "smooth_l1", "huber"])
def test_regression_loss_backward_mean_divides_by_self_numel(op):
    """The backward's mean divides by self's own element count, as PyTorch's does, not by the
    broadcast one: self (1,), target (1, 4) divide by 1; NumPy float64 reference"""
    g, x = np.array([0.5]), np.array([0.3])
    t = np.array([[1.0, -1.0, 0.2, 0.3]])
    d = x - t
    want = {"mse": 2 * d * g,
            "smooth_l1": np.where(np.abs(d) < 0.607, d / 0.607, np.sign(d)) * g,
            "huber": np.clip(d, -0.5, 0.5) * g}[op]
    args = [ptl.tensor(v) for v in (g, x, t)] + [1]
    fn = getattr(ptl.ops.aten, f"{op}_loss_backward")
    got = fn(*args) if op == "mse" else fn(*args, 0.607 if op == "smooth_l1" else 0.5)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-14)
