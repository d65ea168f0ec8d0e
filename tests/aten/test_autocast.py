"""torch.amp: CPU autocast (which ops lower to bfloat16/float16, which run in float32, values
and gradients against NumPy), its state functions and warnings, GradScaler on the CPU and
disabled for CUDA, and the deprecated torch.cuda.amp spellings; dtypes and scaler schedules
against PyTorch where it is installed."""
import warnings

import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn.functional as F

from helpers import torch

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
no_cuda = pytest.mark.skipif(ptl.cuda.is_available(), reason="a CUDA device is visible")


def bf16_round(a):
    """a rounded to bfloat16 (round to nearest even), as float64."""
    bits = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# name -> (call on a module m (ptl or torch) and its functional namespace, float32 inputs)
LOWER = {
    "mm": lambda m, f, a, b: m.mm(a, b),
    "matmul": lambda m, f, a, b: a @ b,
    "addmm": lambda m, f, a, b: m.addmm(b[0], a, b),
    "linear": lambda m, f, a, b: f.linear(a, b.t(), b[0]),
    "bmm": lambda m, f, a, b: m.bmm(a[None], b[None]),
    "baddbmm": lambda m, f, a, b: m.baddbmm(a[None], a[None], b[None]),
    "conv2d": lambda m, f, a, b: f.conv2d(a[None, None], b[None, None, :2, :2]),
    "conv1d": lambda m, f, a, b: f.conv1d(a[None], b[None, :, :2]),
}


@pytest.mark.parametrize("name", list(LOWER))
def test_lower_precision_ops(name):
    a, b = rand(4, 4, seed=1), rand(4, 4, seed=2)
    x, w = ptl.tensor(a), ptl.tensor(b)
    with ptl.autocast("cpu"):
        y = LOWER[name](ptl, F, x, w)
    assert y.dtype == ptl.bfloat16
    with ptl.no_grad():
        ref = LOWER[name](ptl, F, ptl.tensor(bf16_round(a)), ptl.tensor(bf16_round(b)))
    np.testing.assert_allclose(y.float().numpy(), ref.numpy(), rtol=2e-2, atol=5e-2)


def test_matmul_against_numpy():
    a, b = rand(5, 3, seed=3), rand(3, 4, seed=4)
    with ptl.autocast("cpu"):
        y = ptl.tensor(a) @ ptl.tensor(b)
    expected = bf16_round(bf16_round(a) @ bf16_round(b))
    np.testing.assert_allclose(y.float().numpy(), expected, rtol=1e-2, atol=1e-2)


def test_float16_autocast_dtype():
    with ptl.autocast("cpu", dtype=ptl.float16):
        assert ptl.get_autocast_dtype("cpu") == ptl.float16
        y = ptl.ones(2, 3) @ ptl.ones(3, 2)
    assert y.dtype == ptl.float16 and y.tolist() == [[3.0, 3.0], [3.0, 3.0]]
    assert ptl.get_autocast_dtype("cpu") == ptl.bfloat16


def test_float64_is_not_cast():
    with ptl.autocast("cpu"):
        y = ptl.ones(2, 2, dtype=ptl.float64) @ ptl.ones(2, 2, dtype=ptl.float64)
        z = ptl.prod(ptl.ones(3, dtype=ptl.float64))
    assert y.dtype == ptl.float64 and z.dtype == ptl.float64


def bf(*shape, seed=0):
    return ptl.tensor(np.abs(rand(*shape, seed=seed)) % 1 + 0.1).to(ptl.bfloat16)


FP32 = {
    "prod": lambda m, f, b: m.prod(b(3)),
    "cdist": lambda m, f, b: m.cdist(b(2, 2), b(2, 2, seed=1)),
    "trace": lambda m, f, b: m.trace(b(2, 2)),
    "quantile": lambda m, f, b: m.quantile(b(4), 0.5),
    "nll_loss": lambda m, f, b: f.nll_loss(b(2, 3), m.tensor([0, 1])),
    "cross_entropy": lambda m, f, b: f.cross_entropy(b(2, 3), m.tensor([0, 1])),
    "binary_cross_entropy": lambda m, f, b: f.binary_cross_entropy(b(3) * 0.5, b(3, seed=1) * 0.5),
    "avg_pool3d": lambda m, f, b: f.avg_pool3d(b(1, 1, 2, 2, 2), 2),
    "max_pool3d": lambda m, f, b: f.max_pool3d(b(1, 1, 2, 2, 2), 2),
    "reflect_pad": lambda m, f, b: f.pad(b(1, 1, 3, 3), (1, 1, 1, 1), mode="reflect"),
    "replicate_pad": lambda m, f, b: f.pad(b(1, 1, 3, 3), (1, 1, 1, 1), mode="replicate"),
    "grid_sample": lambda m, f, b: f.grid_sample(b(1, 1, 3, 3), b(1, 2, 2, 2) * 0.5,
                                                 align_corners=False),
}


def _signs(m, *shape):
    return (m.arange(int(np.prod(shape))).reshape(shape) % 2 * 2 - 1).to(m.bfloat16)


# The losses written in Python (nn.functional's _autocast_to_float32): operators of
# PyTorch's CPU float32 list there, compositions here
PYTHON_LOSSES = {
    "cross_entropy_probabilities": lambda m, f, b: f.cross_entropy(b(2, 3), b(2, 3, seed=1)),
    "mse_loss": lambda m, f, b: f.mse_loss(b(2, 3), b(2, 3, seed=1)),
    "l1_loss": lambda m, f, b: f.l1_loss(b(2, 3), b(2, 3, seed=1), reduction="none"),
    "smooth_l1_loss": lambda m, f, b: f.smooth_l1_loss(b(2, 3), b(2, 3, seed=1), beta=0.3),
    "huber_loss": lambda m, f, b: f.huber_loss(b(2, 3), b(2, 3, seed=1), delta=0.3),
    "binary_cross_entropy_with_logits": lambda m, f, b: f.binary_cross_entropy_with_logits(
        b(2, 3), b(2, 3, seed=1) * 0.5, pos_weight=b(3, seed=2).detach()),
    "kl_div": lambda m, f, b: f.kl_div(b(2, 3), b(2, 3, seed=1), reduction="batchmean"),
    "margin_ranking_loss": lambda m, f, b: f.margin_ranking_loss(b(4), b(4, seed=1),
                                                                 _signs(m, 4)),
    "hinge_embedding_loss": lambda m, f, b: f.hinge_embedding_loss(b(2, 3), _signs(m, 2, 3)),
    "cosine_embedding_loss": lambda m, f, b: f.cosine_embedding_loss(b(2, 3), b(2, 3, seed=1),
                                                                     _signs(m, 2)),
    "soft_margin_loss": lambda m, f, b: f.soft_margin_loss(b(2, 3), _signs(m, 2, 3)),
    "multi_margin_loss": lambda m, f, b: f.multi_margin_loss(b(2, 3), m.tensor([0, 2]),
                                                             weight=b(3, seed=1).detach()),
    "multilabel_margin_loss": lambda m, f, b: f.multilabel_margin_loss(
        b(2, 3), m.tensor([[0, 2, -1], [1, -1, 0]])),
    "triplet_margin_loss": lambda m, f, b: f.triplet_margin_loss(b(2, 3), b(2, 3, seed=1),
                                                                 b(2, 3, seed=2)),
    "poisson_nll_loss": lambda m, f, b: f.poisson_nll_loss(b(2, 3), b(2, 3, seed=1)),
    "ctc_loss": lambda m, f, b: f.ctc_loss(-b(4, 1, 5), m.tensor([[1, 2]]), m.tensor([4]),
                                           m.tensor([2])),
}
FP32.update(PYTHON_LOSSES)


@pytest.mark.parametrize("name", list(FP32))
def test_float32_ops(name):
    with ptl.autocast("cpu"):
        y = FP32[name](ptl, F, bf)
    assert y.dtype == ptl.float32
    ref = FP32[name](ptl, F, lambda *s, seed=0: bf(*s, seed=seed).float())
    np.testing.assert_allclose(y.numpy(), ref.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", list(PYTHON_LOSSES))
def test_python_losses_differentiate_through_the_casts(name):
    leaves = []

    def b(*shape, seed=0):
        leaves.append(bf(*shape, seed=seed).requires_grad_())
        return leaves[-1]
    with ptl.autocast("cpu"):
        y = PYTHON_LOSSES[name](ptl, F, b)
    y.sum().backward()
    assert leaves[0].grad is not None
    for leaf in leaves:   # a detached weight has none
        assert leaf.grad is None or leaf.grad.dtype == ptl.bfloat16


@needs_torch
@pytest.mark.parametrize("name", list(PYTHON_LOSSES))
def test_python_losses_match_torch_under_autocast(name):
    outs = []
    for m, f in ((ptl, F), (torch, torch.nn.functional)):
        leaves = []

        def b(*shape, seed=0):
            a = np.abs(rand(*shape, seed=seed)) % 1 + 0.1
            leaves.append(m.tensor(a).to(m.bfloat16).requires_grad_())
            return leaves[-1]
        with m.autocast("cpu"):
            y = PYTHON_LOSSES[name](m, f, b)
        y.sum().backward()
        outs.append([str(y.dtype), y.detach().numpy()]
                    + [leaf.grad.float().numpy() for leaf in leaves if leaf.grad is not None])
    assert outs[0][0] == outs[1][0] and len(outs[0]) == len(outs[1])
    for got, want in zip(outs[0][1:], outs[1][1:]):
        np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(outs[0][1], outs[1][1], rtol=1e-5, atol=1e-6)


UNLISTED = {
    "softmax": lambda m, f, b, x: m.softmax(b, 0).dtype,
    "sum": lambda m, f, b, x: b.sum().dtype,
    "exp": lambda m, f, b, x: b.exp().dtype,
    "add_mixed": lambda m, f, b, x: (b + x).dtype,
    "dot": lambda m, f, b, x: m.dot(x, x).dtype,
    "layer_norm": lambda m, f, b, x: f.layer_norm(b, (3,)).dtype,
    "cat_mixed": lambda m, f, b, x: m.cat([b, x]).dtype,
    "gaussian_nll_loss": lambda m, f, b, x: f.gaussian_nll_loss(b, b * 2, b).dtype,
    "multilabel_soft_margin_loss": lambda m, f, b, x: f.multilabel_soft_margin_loss(b, b).dtype,
}


@pytest.mark.parametrize("name", list(UNLISTED))
def test_unlisted_ops_keep_dtypes(name):
    with ptl.autocast("cpu"):
        got = UNLISTED[name](ptl, F, ptl.ones(3, dtype=ptl.bfloat16), ptl.ones(3))
    assert got == UNLISTED[name](ptl, F, ptl.ones(3, dtype=ptl.bfloat16), ptl.ones(3))


@needs_torch
@pytest.mark.parametrize("name", list(LOWER) + list(FP32) + list(UNLISTED))
def test_dtypes_as_torch(name):
    def run(m, f):
        with m.autocast("cpu"):
            if name in LOWER:
                return str(LOWER[name](m, f, m.ones(4, 4), m.ones(4, 4)).dtype)
            if name in FP32:
                def b(*s, seed=0):
                    return m.full(s, 0.5).to(m.bfloat16)
                return str(FP32[name](m, f, b).dtype)
            return str(UNLISTED[name](m, f, m.ones(3, dtype=m.bfloat16), m.ones(3)))

    assert run(ptl, F) == run(torch, torch.nn.functional)


def test_backward_through_casts():
    a, b = rand(3, 4, seed=5), rand(4, 2, seed=6)
    x = ptl.tensor(a, requires_grad=True)
    w = ptl.tensor(b, requires_grad=True)
    with ptl.autocast("cpu"):
        y = x @ w
    assert y.dtype == ptl.bfloat16
    y.float().sum().backward()
    assert x.grad.dtype == ptl.float32 and w.grad.dtype == ptl.float32
    ones = np.ones((3, 2))
    np.testing.assert_allclose(x.grad.numpy(), ones @ bf16_round(b).T, rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(w.grad.numpy(), bf16_round(a).T @ ones, rtol=2e-2, atol=2e-2)


def test_module_forward_under_autocast():
    ptl.manual_seed(0)
    model = ptl.nn.Sequential(ptl.nn.Linear(4, 8), ptl.nn.ReLU(), ptl.nn.Linear(8, 3))
    x = ptl.randn(5, 4)
    with ptl.autocast("cpu"):
        out = model(x)
        loss = F.cross_entropy(out, ptl.tensor([0, 1, 2, 0, 1]))
    assert out.dtype == ptl.bfloat16 and loss.dtype == ptl.float32
    loss.backward()
    assert all(p.grad.dtype == ptl.float32 for p in model.parameters())
    np.testing.assert_allclose(out.detach().float().numpy(), model(x).detach().numpy(), atol=0.1)


def test_state_and_nesting():
    assert ptl.is_autocast_enabled("cpu") is False
    assert ptl.is_autocast_enabled() is False
    with ptl.autocast("cpu"):
        assert ptl.is_autocast_enabled("cpu") is True
        with ptl.autocast("cpu", enabled=False):
            assert ptl.is_autocast_enabled("cpu") is False
            assert (ptl.ones(2, 2) @ ptl.ones(2, 2)).dtype == ptl.float32
        assert ptl.is_autocast_enabled("cpu") is True
    assert ptl.is_autocast_enabled("cpu") is False
    ptl.set_autocast_enabled("cpu", True)
    try:
        assert (ptl.ones(2, 2) @ ptl.ones(2, 2)).dtype == ptl.bfloat16
    finally:
        ptl.set_autocast_enabled("cpu", False)
    ptl.set_autocast_dtype("cpu", ptl.float16)
    assert ptl.get_autocast_dtype("cpu") == ptl.float16
    ptl.set_autocast_dtype("cpu", ptl.bfloat16)
    assert ptl.get_autocast_dtype("cuda") == ptl.float16


# PyTorch's older spellings: (call, its replacement in the DeprecationWarning)
LEGACY = [
    (lambda m: m.set_autocast_cpu_enabled(True), "set_autocast_cpu_enabled(enabled)",
     "set_autocast_enabled('cpu', enabled)"),
    (lambda m: m.is_autocast_cpu_enabled(), "is_autocast_cpu_enabled()",
     "is_autocast_enabled('cpu')"),
    (lambda m: m.get_autocast_cpu_dtype(), "get_autocast_cpu_dtype()",
     "get_autocast_dtype('cpu')"),
    (lambda m: m.set_autocast_cpu_dtype(m.float16), "set_autocast_cpu_dtype(dtype)",
     "set_autocast_dtype('cpu', dtype)"),
    (lambda m: m.get_autocast_gpu_dtype(), "get_autocast_gpu_dtype()",
     "get_autocast_dtype('cuda')"),
    (lambda m: m.set_autocast_gpu_dtype(m.bfloat16), "set_autocast_gpu_dtype(dtype)",
     "set_autocast_dtype('cuda', dtype)"),
]


@pytest.mark.parametrize("call, old, new", LEGACY, ids=[c[1] for c in LEGACY])
def test_legacy_spellings_warn_and_act_on_their_device(call, old, new):
    saved = [(d, ptl.is_autocast_enabled(d), ptl.get_autocast_dtype(d)) for d in ("cpu", "cuda")]
    try:
        with pytest.warns(DeprecationWarning) as record:
            call(ptl)
        assert str(record[0].message) == f"torch.{old} is deprecated. Please use torch.{new} " \
                                         "instead."
        assert ptl.is_autocast_cpu_enabled() is ptl.is_autocast_enabled("cpu")
        assert ptl.get_autocast_cpu_dtype() is ptl.get_autocast_dtype("cpu")
        assert ptl.get_autocast_gpu_dtype() is ptl.get_autocast_dtype("cuda")
    finally:
        for d, on, dtype in saved:
            ptl.set_autocast_enabled(d, on)
            ptl.set_autocast_dtype(d, dtype)
    if "cpu_enabled" in old:
        assert ptl.is_autocast_enabled("cpu") is False


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_legacy_setters_refuse_wrong_types():
    for fn in (ptl.set_autocast_cpu_enabled, ptl.set_autocast_cache_enabled):
        with pytest.raises(TypeError, match=r"^enabled must be a bool \(got str\)$"):
            fn("yes")
    for fn in (ptl.set_autocast_cpu_dtype, ptl.set_autocast_gpu_dtype):
        with pytest.raises(TypeError, match=r"^dtype must be a torch.dtype \(got int\)$"):
            fn(1)
    with pytest.raises(TypeError, match=r"argument 'enabled' \(position 2\) must be bool, "
                                        r"not int$"):
        ptl.set_autocast_enabled("cpu", 1)
    with pytest.raises(TypeError, match=r"argument 'enabled' \(position 1\) must be bool, "
                                        r"not int$"):
        ptl.set_autocast_enabled(1)


def test_one_argument_set_autocast_enabled_is_cudas():
    ptl.set_autocast_enabled(True)
    try:
        assert ptl.is_autocast_enabled() is True and ptl.is_autocast_enabled("cpu") is False
    finally:
        ptl.set_autocast_enabled(False)
    assert ptl.is_autocast_enabled("cuda") is False


def test_nesting_depth_and_cache_flag_follow_the_regions():
    assert ptl.autocast_increment_nesting() == 1 and ptl.autocast_decrement_nesting() == 0
    assert ptl.is_autocast_cache_enabled() is True
    with ptl.autocast("cpu", cache_enabled=False):
        assert ptl.is_autocast_cache_enabled() is False
        with ptl.autocast("cpu"):
            assert ptl.is_autocast_cache_enabled() is True
            assert ptl.autocast_increment_nesting() == 3
            assert ptl.autocast_decrement_nesting() == 2
        assert ptl.is_autocast_cache_enabled() is False
    assert ptl.is_autocast_cache_enabled() is True
    with pytest.raises(ValueError):
        with ptl.autocast("cpu", cache_enabled=False):
            raise ValueError
    assert ptl.is_autocast_cache_enabled() is True and ptl.autocast_increment_nesting() == 1
    assert ptl.autocast_decrement_nesting() == 0
    ptl.set_autocast_cache_enabled(False)
    assert ptl.is_autocast_cache_enabled() is False
    ptl.set_autocast_cache_enabled(True)
    assert ptl.clear_autocast_cache() is None and ptl.GradScaler is ptl.amp.GradScaler


@needs_torch
def test_legacy_api_as_torch():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for m in (ptl, torch):
            assert m.get_autocast_cpu_dtype() == m.bfloat16
            assert m.get_autocast_gpu_dtype() == m.float16
            assert m.is_autocast_cpu_enabled() is False and m.is_autocast_cache_enabled()
            depth = m.autocast_increment_nesting()
            with m.autocast("cpu"):
                assert m.autocast_increment_nesting() == depth + 2
                m.autocast_decrement_nesting()
            assert m.autocast_decrement_nesting() == depth - 1


def test_state_restored_after_exception():
    with pytest.raises(ValueError):
        with ptl.autocast("cpu"):
            raise ValueError
    assert ptl.is_autocast_enabled("cpu") is False


def test_decorator():
    @ptl.autocast("cpu")
    def f(a):
        return a @ a, ptl.is_autocast_enabled("cpu")

    y, on = f(ptl.ones(2, 2))
    assert on and y.dtype == ptl.bfloat16 and f.__name__ == "f"
    assert ptl.amp.autocast is ptl.autocast


def test_argument_errors():
    with pytest.raises(ValueError, match=r"^Expected `device_type` of type `str`, got: "
                                         r"`<class 'int'>`$"):
        ptl.autocast(device_type=3)
    with pytest.raises(RuntimeError, match="device type at start of device string: foo"):
        ptl.autocast("foo")
    with pytest.raises(RuntimeError, match="device type at start of device string: foo"):
        ptl.is_autocast_enabled("foo")


def test_unsupported_cpu_dtype_warns_and_disables():
    with pytest.warns(UserWarning) as record:
        ctx = ptl.autocast("cpu", dtype=ptl.float32)
    assert str(record[0].message) == (
        "In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
        "CPU Autocast only supports dtypes of torch.bfloat16, torch.float16 currently.")
    with ctx:
        assert ptl.is_autocast_enabled("cpu") is False


@no_cuda
def test_cuda_autocast_without_cuda_warns_and_disables():
    with pytest.warns(UserWarning, match="^CUDA is not available or torch_xla is imported. "
                                         "Disabling autocast.$"):
        ctx = ptl.autocast("cuda")
    with ctx:
        assert ptl.is_autocast_enabled("cuda") is False
        assert ptl.is_autocast_enabled() is False


def test_deprecated_cuda_amp_aliases():
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        ptl.cuda.amp.autocast()
        ptl.cuda.amp.GradScaler()
    future = [str(w.message) for w in record if w.category is FutureWarning]
    assert future == [
        "`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
        "`torch.amp.autocast('cuda', args...)` instead.",
        "`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
        "`torch.amp.GradScaler('cuda', args...)` instead."]


# ---- GradScaler ----

def make_model(m):
    m.manual_seed(0)
    lin = m.nn.Linear(3, 2)
    with m.no_grad():
        lin.weight.copy_(m.tensor([[0.1, -0.2, 0.3], [0.4, 0.5, -0.6]]))
        lin.bias.copy_(m.tensor([0.05, -0.05]))
    return lin, m.optim.SGD(lin.parameters(), lr=0.1)


def train(m, steps, inf_at=(), **kwargs):
    """Runs a scaled training loop; returns the scales, state dicts and final weights."""
    lin, opt = make_model(m)
    scaler = m.amp.GradScaler("cpu", **kwargs)
    scales, states = [], []
    for i in range(steps):
        opt.zero_grad()
        x = m.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]])
        if i in inf_at:
            x = x * float("inf")
        loss = lin(x).pow(2).sum()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
        states.append(scaler.state_dict())
    return scales, states, lin.weight.detach().numpy().copy()


def test_grad_scaler_schedule():
    scales, states, _ = train(ptl, 6, inf_at=(2,), init_scale=8.0, growth_interval=2)
    assert scales == [8.0, 16.0, 8.0, 8.0, 16.0, 16.0]
    assert [s["_growth_tracker"] for s in states] == [1, 0, 0, 1, 0, 1]
    assert states[0] == {"scale": 8.0, "growth_factor": 2.0, "backoff_factor": 0.5,
                         "growth_interval": 2, "_growth_tracker": 1}


def test_grad_scaler_steps_match_unscaled_sgd():
    _, _, w = train(ptl, 3, init_scale=1024.0)
    lin, opt = make_model(ptl)
    for _ in range(3):
        opt.zero_grad()
        lin(ptl.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]])).pow(2).sum().backward()
        opt.step()
    np.testing.assert_allclose(w, lin.weight.detach().numpy(), rtol=1e-6)


def test_grad_scaler_skips_step_on_inf():
    lin, opt = make_model(ptl)
    before = lin.weight.detach().clone()
    scaler = ptl.amp.GradScaler("cpu")
    scaler.scale(lin(ptl.full((1, 3), float("inf"))).sum()).backward()
    assert scaler.step(opt) is None
    assert ptl.equal(lin.weight.detach(), before)
    scaler.update()
    assert scaler.get_scale() == 2.0**15


@needs_torch
def test_grad_scaler_as_torch():
    mine = train(ptl, 7, inf_at=(1, 4), init_scale=64.0, growth_interval=2)
    ref = train(torch, 7, inf_at=(1, 4), init_scale=64.0, growth_interval=2)
    assert mine[0] == ref[0]
    assert mine[1] == ref[1]
    np.testing.assert_allclose(mine[2], ref[2], rtol=1e-6)


def test_grad_scaler_unscale_and_errors():
    lin, opt = make_model(ptl)
    scaler = ptl.amp.GradScaler("cpu", init_scale=4.0)
    with pytest.raises(AssertionError, match="^Attempted step but _scale is None."):
        scaler.step(opt)
    scaler.scale(lin(ptl.ones(1, 3)).sum()).backward()
    scaler.unscale_(opt)
    np.testing.assert_allclose(lin.weight.grad.numpy(), np.ones((2, 3)))
    with pytest.raises(RuntimeError, match=r"^unscale_\(\) has already been called on this "
                                           r"optimizer since the last update\(\).$"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match=r"^step\(\) has already been called since the last "
                                           r"update\(\).$"):
        scaler.step(opt)
    scaler.update()
    with pytest.raises(RuntimeError, match="^Closure use is not currently supported"):
        scaler.step(opt, closure=lambda: None)
    loaded = ptl.amp.GradScaler("cpu")
    loaded.load_state_dict(scaler.state_dict())
    assert loaded.state_dict() == scaler.state_dict()
    with pytest.raises(RuntimeError, match="^The source state dict is empty"):
        loaded.load_state_dict({})


@no_cuda
def test_cuda_grad_scaler_without_cuda_is_a_no_op():
    with pytest.warns(UserWarning, match=r"^torch.cuda.amp.GradScaler is enabled, but CUDA is "
                                         r"not available.  Disabling.$"):
        scaler = ptl.amp.GradScaler("cuda")
    assert scaler.is_enabled() is False
    lin, opt = make_model(ptl)
    loss = lin(ptl.ones(1, 3)).sum()
    assert scaler.scale(loss) is loss
    loss.backward()
    grad = lin.weight.grad.clone()
    scaler.unscale_(opt)
    assert ptl.equal(lin.weight.grad, grad)
    before = lin.weight.detach().clone()
    scaler.step(opt)
    scaler.update()
    np.testing.assert_allclose(lin.weight.detach().numpy(), (before - 0.1 * grad).numpy())
    assert scaler.get_scale() == 1.0 and scaler.state_dict() == {}
    assert ptl.amp.GradScaler("cuda", enabled=False).is_enabled() is False


# ---- custom_fwd / custom_bwd: a custom Function's forward and backward in autocast ----

class _Scale(ptl.autograd.Function):
    """y = x @ w; records the dtypes and autocast state its forward and backward saw."""
    seen = []

    @staticmethod
    @ptl.amp.custom_fwd(device_type="cpu")
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        _Scale.seen.append(("forward", x.dtype, ptl.is_autocast_enabled("cpu")))
        return x @ w

    @staticmethod
    @ptl.amp.custom_bwd(device_type="cpu")
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        _Scale.seen.append(("backward", g.dtype, ptl.is_autocast_enabled("cpu")))
        return g @ w.t(), x.t() @ g


class _Cast(_Scale):
    @staticmethod
    @ptl.amp.custom_fwd(device_type="cpu", cast_inputs=ptl.float32)
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        _Scale.seen.append(("forward", x.dtype, ptl.is_autocast_enabled("cpu")))
        return x @ w


def test_custom_fwd_keeps_the_region_and_backward_follows_it():
    x = ptl.randn(4, 3, requires_grad=True)
    w = ptl.randn(3, 2, requires_grad=True)
    _Scale.seen.clear()
    with ptl.autocast("cpu", dtype=ptl.bfloat16):
        y = _Scale.apply(x, w)
        z = x @ w                      # an autocast op: bfloat16
    y.float().sum().backward()
    assert z.dtype == ptl.bfloat16 and y.dtype == ptl.bfloat16
    assert _Scale.seen == [("forward", ptl.float32, True), ("backward", ptl.bfloat16, True)]
    _Scale.seen.clear()
    y = _Scale.apply(x, w)
    y.sum().backward()
    assert _Scale.seen == [("forward", ptl.float32, False), ("backward", ptl.float32, False)]


def test_custom_fwd_cast_inputs_runs_forward_without_autocast():
    x = ptl.randn(4, 3, dtype=ptl.bfloat16, requires_grad=True)
    w = ptl.randn(3, 2, dtype=ptl.float64, requires_grad=True)   # float64 is never cast
    _Scale.seen.clear()
    with ptl.autocast("cpu", dtype=ptl.bfloat16):
        y = _Cast.apply(x, ptl.randn(3, 2, requires_grad=True))
        y64 = _Cast.apply(ptl.randn(4, 3, dtype=ptl.float64), w)
    assert y.dtype == ptl.float32 and y64.dtype == ptl.float64
    assert _Scale.seen == [("forward", ptl.float32, False), ("forward", ptl.float64, False)]
    y.sum().backward()
    assert _Scale.seen[-1] == ("backward", ptl.float32, False)
    assert x.grad.dtype == ptl.bfloat16
    # outside a region cast_inputs does nothing
    assert _Cast.apply(ptl.ones(1, 1, dtype=ptl.bfloat16), ptl.ones(1, 1, dtype=ptl.bfloat16)
                       ).dtype == ptl.bfloat16


def test_custom_fwd_errors_and_cuda_spellings():
    for decorator in (ptl.amp.custom_fwd, ptl.amp.custom_bwd):
        with pytest.raises(ValueError, match="Expected `device_type` of type `str`, got: "
                           "`<class 'int'>`"):
            decorator(lambda ctx: None, device_type=0)
        with pytest.raises(TypeError):
            decorator(lambda ctx: None)            # device_type is required
    with pytest.warns(FutureWarning, match=r"`torch.cuda.amp.custom_fwd\(args...\)` is "
                      r"deprecated. Please use `torch.amp.custom_fwd\(args..., "
                      r"device_type='cuda'\)` instead."):
        forward = ptl.cuda.amp.custom_fwd(lambda ctx, x: x)
    with pytest.warns(FutureWarning, match=r"torch.cuda.amp.custom_bwd"):
        ptl.cuda.amp.custom_bwd(lambda ctx, g: g)

    class Ctx:
        pass
    ctx = Ctx()
    assert forward(ctx, 3) == 3 and ctx._fwd_used_autocast is False
