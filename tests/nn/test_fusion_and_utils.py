"""The rest of nn.utils: fusion (conv / linear + batch norm), stateless.functional_call,
skip_init, get_total_norm / clip_grads_with_norm_ / clip_grad_norm_ / clip_grad_norm (the
deprecated alias) / clip_grad_value_, and the conv weight memory-format converters: against
NumPy float64 and the unfused modules, with PyTorch's warnings and errors.  Every test runs on
pytorchlite and, where installed, on PyTorch (golden.LIBRARIES)."""
import importlib
import math
import warnings

import numpy as np
import pytest

import pytorchlite as ptl
from golden import LIBRARIES


def ids(m):
    return m.__name__


def sub(lib, name):
    return importlib.import_module(f"{lib.__name__}.nn.utils.{name}")


RNG = np.random.default_rng(3)


def trained_bn(lib, bn):
    """bn (float64) with non-trivial running statistics, affine parameters, in eval mode."""
    with lib.no_grad():
        c = bn.num_features
        bn.running_mean.copy_(lib.tensor(RNG.standard_normal(c)))
        bn.running_var.copy_(lib.tensor(RNG.random(c) + 0.5))
        if bn.weight is not None:
            bn.weight.copy_(lib.tensor(RNG.standard_normal(c)))
            bn.bias.copy_(lib.tensor(RNG.standard_normal(c)))
    return bn.eval()


def close(a, b, rtol=1e-12):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy() if hasattr(b, "detach")
                               else b, rtol=rtol, atol=1e-12)


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
@pytest.mark.parametrize("kind", ["conv1d", "conv2d", "conv3d", "convT2d", "nobias", "noaffine"])
def test_fuse_conv_bn_eval_equals_conv_then_bn(lib, kind):
    nn = lib.nn
    conv = {"conv1d": lambda: nn.Conv1d(2, 3, 3), "conv2d": lambda: nn.Conv2d(2, 3, 3),
            "conv3d": lambda: nn.Conv3d(2, 3, 2), "convT2d": lambda: nn.ConvTranspose2d(2, 3, 2),
            "nobias": lambda: nn.Conv2d(2, 3, 3, bias=False),
            "noaffine": lambda: nn.Conv2d(2, 3, 3)}[kind]().double().eval()
    dims = {"conv1d": 1, "conv3d": 3}.get(kind, 2)
    bn_cls = {1: nn.BatchNorm1d, 2: nn.BatchNorm2d, 3: nn.BatchNorm3d}[dims]
    bn = trained_bn(lib, bn_cls(3, affine=kind != "noaffine").double())
    fused = sub(lib, "fusion").fuse_conv_bn_eval(conv, bn, transpose=kind == "convT2d")
    assert type(fused) is type(conv) and fused is not conv
    assert isinstance(fused.weight, nn.Parameter) and isinstance(fused.bias, nn.Parameter)
    x = lib.tensor(RNG.standard_normal((2, 2) + (5,) * dims))
    close(fused(x), bn(conv(x)))
    assert fused.weight.requires_grad and not fused.bias.requires_grad \
        if kind == "nobias" else fused.bias.requires_grad


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_fuse_conv_bn_weights_closed_form(lib):
    w = RNG.standard_normal((3, 2, 2))
    b = RNG.standard_normal(3)
    rm, rv = RNG.standard_normal(3), RNG.random(3) + 0.1
    gamma, beta = RNG.standard_normal(3), RNG.standard_normal(3)
    t = lib.tensor
    fw, fb = sub(lib, "fusion").fuse_conv_bn_weights(t(w), t(b), t(rm), t(rv), 1e-5, t(gamma),
                                                     t(beta))
    s = gamma / np.sqrt(rv + 1e-5)
    close(fw, w * s[:, None, None])
    close(fb, (b - rm) * s + beta)
    fw, fb = sub(lib, "fusion").fuse_conv_bn_weights(t(w).float(), None, t(rm), t(rv), 1e-5,
                                                     None, None)
    assert fw.dtype == lib.float32 and fb.dtype == lib.float32
    close(fb, (-rm / np.sqrt(rv + 1e-5)).astype(np.float32), rtol=1e-6)


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
@pytest.mark.parametrize("features,bias", [(3, True), (1, True), (3, False)])
def test_fuse_linear_bn_eval(lib, features, bias):
    nn = lib.nn
    lin = nn.Linear(4, 3, bias=bias).double().eval()
    bn = trained_bn(lib, nn.BatchNorm1d(features).double())
    fused = sub(lib, "fusion").fuse_linear_bn_eval(lin, bn)
    x = lib.tensor(RNG.standard_normal((5, 4)))
    want = bn(lin(x)) if features == 3 else bn(lin(x).reshape(-1, 1)).reshape(5, 3)
    close(fused(x), want)


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_fusion_errors(lib):
    nn = lib.nn
    f = sub(lib, "fusion")
    with pytest.raises(AssertionError, match="^Fusion only for eval!$"):
        f.fuse_conv_bn_eval(nn.Conv2d(2, 3, 1), nn.BatchNorm2d(3).eval())
    with pytest.raises(AssertionError, match="^Fusion only for eval!$"):
        f.fuse_linear_bn_eval(nn.Linear(2, 3).eval(), nn.BatchNorm1d(3))
    with pytest.raises(AssertionError, match="^bn.running_mean and bn.running_var must not be "
                                             "None$"):
        f.fuse_conv_bn_eval(nn.Conv2d(2, 3, 1).eval(),
                            nn.BatchNorm2d(3, track_running_stats=False).eval())
    with pytest.raises(AssertionError, match="^To fuse, linear.out_features == bn.num_features "
                                             "or bn.num_features == 1, got linear.out_features=3 "
                                             "and bn.num_features=2$"):
        f.fuse_linear_bn_eval(nn.Linear(2, 3).eval(), nn.BatchNorm1d(2).eval())
    assert lib.nn.utils.fuse_conv_bn_eval is f.fuse_conv_bn_eval
    assert lib.nn.utils.fuse_linear_bn_weights is f.fuse_linear_bn_weights


# ---- stateless.functional_call ----

def functional_call(lib, *args, **kwargs):
    with pytest.warns(FutureWarning, match="^`torch.nn.utils.stateless.functional_call` is "
                                           "deprecated as of PyTorch 2.0 and will be removed in "
                                           "a future version of PyTorch. Please use `torch.func."
                                           "functional_call` instead which is a drop-in "
                                           "replacement.$"):
        return sub(lib, "stateless").functional_call(*args, **kwargs)


def mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2), nn.BatchNorm1d(2)).double()


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_functional_call_uses_the_given_tensors_then_restores(lib):
    net = mlp(lib)
    before = {k: v.clone() for k, v in net.state_dict().items()}
    w0 = lib.tensor(RNG.standard_normal((4, 3)), requires_grad=True)
    x = lib.tensor(RNG.standard_normal((5, 3)))
    out = functional_call(lib, net, {"0.weight": w0}, (x,))
    with lib.no_grad():
        net[0].weight.copy_(w0)
    close(out, net(x).detach())
    with lib.no_grad():
        net[0].weight.copy_(before["0.weight"])
    for k, v in net.state_dict().items():
        if k != "3.num_batches_tracked":
            assert k in before
    assert net[0].weight is not w0 and isinstance(net[0].weight, lib.nn.Parameter)
    out.sum().backward()
    assert w0.grad is not None and net[0].weight.grad is None


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_functional_call_buffers_args_kwargs_and_strict(lib):
    nn = lib.nn

    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("s", lib.tensor(2.0, dtype=lib.float64))

        def forward(self, x, *, shift=0.0):
            return x * self.s + shift

    m = Scale()
    x = lib.tensor([1.0, 2.0], dtype=lib.float64)
    close(functional_call(lib, m, {"s": lib.tensor(5.0, dtype=lib.float64)}, x,
                          {"shift": 1.0}), np.array([6.0, 11.0]))
    assert m.s.item() == 2.0
    close(functional_call(lib, m, {}, (x,)), np.array([2.0, 4.0]))
    with pytest.raises(RuntimeError) as info:
        functional_call(lib, m, {"t": x}, (x,), strict=True)
    assert str(info.value) == ("Error(s) in reparametrizing for Scale:\n\tUnexpected key(s): "
                               "'t'.\n\tMissing key(s): 's'.")


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_functional_call_tied_weights(lib):
    nn = lib.nn
    m = nn.Sequential(nn.Linear(3, 3, bias=False), nn.Linear(3, 3, bias=False)).double()
    m[1].weight = m[0].weight
    w = lib.tensor(np.eye(3) * 2)
    x = lib.tensor(RNG.standard_normal((1, 3)))
    close(functional_call(lib, m, {"0.weight": w}, (x,)), 4 * x)
    assert m[0].weight is m[1].weight
    close(functional_call(lib, m, {"0.weight": w}, (x,), tie_weights=False),
          (2 * x) @ m[1].weight.detach().T)
    with pytest.raises(ValueError) as info:
        functional_call(lib, m, {"0.weight": w, "1.weight": w.clone()}, (x,))
    assert str(info.value) == ("functional_call got multiple values for keys ['0.weight', "
                               "'1.weight'], which are tied. Consider using tie_weights=False")


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_functional_call_errors(lib):
    m = lib.nn.Linear(2, 2)
    with pytest.raises(TypeError, match="is not an instance of torch.Tensor$"):
        functional_call(lib, m, {"weight": 3}, (lib.ones(2),))
    assert isinstance(m.weight, lib.nn.Parameter)
    with pytest.raises(RuntimeError, match="^The stateless API can't be used with "
                                           "nn.DataParallel module$"):
        functional_call(lib, lib.nn.DataParallel(m), {}, (lib.ones(2),))


# ---- skip_init ----

@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_skip_init(lib):
    m = lib.nn.utils.skip_init(lib.nn.Linear, 4, 3, bias=False, dtype=lib.float64)
    assert type(m) is lib.nn.Linear and m.weight.device.type == "cpu"
    assert tuple(m.weight.shape) == (3, 4) and m.weight.dtype == lib.float64 and m.bias is None

    class NoDevice(lib.nn.Module):
        pass

    with pytest.raises(RuntimeError, match="^Module must support a 'device' arg to skip "
                                           "initialization$"):
        lib.nn.utils.skip_init(NoDevice)
    with pytest.raises(RuntimeError, match="^Expected a Module; got <class 'int'>$"):
        lib.nn.utils.skip_init(int)


# ---- gradient clipping ----

def with_grads(lib, grads):
    params = []
    for g in grads:
        p = lib.nn.Parameter(lib.zeros(np.shape(g), dtype=lib.float64))
        p.grad = lib.tensor(np.asarray(g, dtype=np.float64))
        params.append(p)
    return params


GRADS = [RNG.standard_normal((3, 4)), RNG.standard_normal(5), np.array(2.5)]


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, math.inf, 0.5])
def test_get_total_norm_and_clip_grad_norm(lib, norm_type):
    flat = np.concatenate([np.ravel(g) for g in GRADS])
    want = np.abs(flat).max() if norm_type == math.inf else \
        (np.abs(flat) ** norm_type).sum() ** (1 / norm_type)
    close(lib.nn.utils.get_total_norm([lib.tensor(g) for g in GRADS], norm_type), want)
    params = with_grads(lib, GRADS)
    total = lib.nn.utils.clip_grad_norm_(params, max_norm=1.0, norm_type=norm_type)
    close(total, want)
    coef = min(1.0, 1.0 / (want + 1e-6))
    for p, g in zip(params, GRADS):
        close(p.grad, np.asarray(g) * coef)


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_clip_grads_with_norm_and_no_clipping_under_the_max(lib):
    params = with_grads(lib, GRADS)
    lib.nn.utils.clip_grads_with_norm_(params, 2.0, lib.tensor(8.0, dtype=lib.float64))
    for p, g in zip(params, GRADS):
        close(p.grad, np.asarray(g) * (2.0 / (8.0 + 1e-6)))
    params = with_grads(lib, GRADS)
    lib.nn.utils.clip_grad_norm_(params, 1e6)
    for p, g in zip(params, GRADS):
        close(p.grad, g)
    single = with_grads(lib, [np.array([3.0, 4.0])])[0]
    close(lib.nn.utils.clip_grad_norm_(single, 1.0), 5.0)
    close(single.grad, np.array([3.0, 4.0]) / (5.0 + 1e-6))


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_clip_grad_norm_edge_cases(lib):
    u = lib.nn.utils
    total = u.clip_grad_norm_([lib.nn.Parameter(lib.ones(2))], 1.0)
    assert total.item() == 0.0 and total.dtype == lib.float32
    assert u.get_total_norm([]).item() == 0.0
    with pytest.warns(UserWarning, match="^`parameters` is an empty generator, no gradient "
                                         "clipping will occur.$"):
        u.clip_grad_norm_((p for p in []), 1.0)
    params = with_grads(lib, [np.array([1.0, np.inf])])
    with pytest.raises(RuntimeError) as info:
        u.clip_grad_norm_(params, 1.0, error_if_nonfinite=True)
    assert str(info.value) == ("The total norm of order 2.0 for gradients from `parameters` is "
                               "non-finite, so it cannot be clipped. To disable this error and "
                               "scale the gradients by the non-finite norm anyway, set "
                               "`error_if_nonfinite=False`")
    params = with_grads(lib, [np.array([1.0, np.nan])])
    u.clip_grad_norm_(params, 1.0)
    assert np.isnan(params[0].grad.numpy()).all()    # scaled by a NaN coefficient


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_clip_grad_norm_deprecated_alias(lib):
    params = with_grads(lib, GRADS)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        total = lib.nn.utils.clip_grad_norm(params, 1.0)
    assert [(w.category, str(w.message)) for w in rec] == [
        (FutureWarning, "`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                        "`torch.nn.utils.clip_grad_norm_`.")]
    flat = np.concatenate([np.ravel(g) for g in GRADS])
    close(total, np.linalg.norm(flat))


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_clip_grad_value(lib):
    params = with_grads(lib, GRADS)
    lib.nn.utils.clip_grad_value_(params, 0.5)
    for p, g in zip(params, GRADS):
        close(p.grad, np.clip(g, -0.5, 0.5))


# ---- memory format ----

@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_convert_conv_weight_memory_format(lib):
    nn = lib.nn
    net = nn.Sequential(nn.Conv2d(2, 3, 3), nn.Sequential(nn.ConvTranspose2d(3, 2, 2)),
                        nn.Conv3d(2, 2, 1), nn.Linear(2, 2))
    ws = [net[0].weight, net[1][0].weight, net[2].weight]
    values = [w.detach().clone() for w in ws]
    out = lib.nn.utils.convert_conv2d_weight_memory_format(net, lib.channels_last)
    assert out is net
    assert net[0].weight is ws[0] and net[1][0].weight is ws[1]
    assert ws[0].is_contiguous(memory_format=lib.channels_last)
    assert not ws[0].is_contiguous()
    assert ws[1].is_contiguous(memory_format=lib.channels_last)
    assert ws[2].is_contiguous()
    for w, v in zip(ws, values):
        np.testing.assert_array_equal(w.detach().numpy(), v.numpy())
    lib.nn.utils.convert_conv3d_weight_memory_format(net, lib.channels_last_3d)
    assert ws[2].is_contiguous(memory_format=lib.channels_last_3d)
    x = lib.randn(1, 2, 5, 5)
    net[0](x).sum().backward()
    assert ws[0].grad is not None


def test_nn_utils_names_are_pytorchs():
    want = ["clip_grad", "clip_grad_norm", "clip_grad_norm_", "clip_grad_value_",
            "clip_grads_with_norm_", "convert_conv2d_weight_memory_format",
            "convert_conv3d_weight_memory_format", "convert_parameters", "fuse_conv_bn_eval",
            "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights", "fusion",
            "get_total_norm", "init", "memory_format", "parameters_to_vector",
            "parametrizations", "parametrize", "remove_spectral_norm", "remove_weight_norm",
            "rnn", "skip_init", "spectral_norm", "stateless", "vector_to_parameters",
            "weight_norm"]
    assert all(hasattr(ptl.nn.utils, n) for n in want + ["prune"])
    assert callable(ptl.nn.utils.weight_norm) and callable(ptl.nn.utils.spectral_norm)
    with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
        ptl.nn.utils.nothing
