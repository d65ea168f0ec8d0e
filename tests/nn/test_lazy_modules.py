"""LazyLinear, LazyConv*d / LazyConvTranspose*d, LazyBatchNorm*d, LazyModuleMixin and
UninitializedParameter / UninitializedBuffer: the first forward infers the input size,
materializes the parameters with the eager module's initialization and turns the module into
that module; the values against NumPy (or the eager module with the same weights), training
through it, the errors and PyTorch's reprs and class changes when torch is installed."""
import copy
import math

import numpy as np
import pytest

import pytorchlite as ptl
from helpers import assert_close, make, torch, torch_ref


def test_lazy_linear_becomes_linear():
    m = ptl.nn.LazyLinear(3)
    assert repr(m) == "LazyLinear(in_features=0, out_features=3, bias=True)"
    assert isinstance(m.weight, ptl.nn.UninitializedParameter)
    assert m.has_uninitialized_params()
    x = ptl.tensor(np.random.default_rng(0).standard_normal((4, 5)), dtype=ptl.float32)
    y = m(x)
    assert type(m) is ptl.nn.Linear and type(m.weight) is ptl.nn.Parameter
    assert repr(m) == "Linear(in_features=5, out_features=3, bias=True)"
    assert tuple(m.weight.shape) == (3, 5) and tuple(m.bias.shape) == (3,)
    bound = 1 / math.sqrt(5)   # kaiming_uniform(a=sqrt(5)) and the bias, as Linear
    assert float(m.weight.abs().max()) <= bound and float(m.bias.abs().max()) <= bound
    w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    assert_close(y.detach(), x.numpy() @ w.T + b)
    assert not hasattr(m, "_initialize_hook")
    assert_close(m(x).detach(), x.numpy() @ w.T + b)   # the second call is a plain Linear call


def test_lazy_linear_options_and_training():
    m = ptl.nn.LazyLinear(2, bias=False, dtype=ptl.float64)
    assert m.bias is None
    m(ptl.ones(3, dtype=ptl.float64))                      # unbatched input
    assert m.weight.dtype == ptl.float64 and tuple(m.weight.shape) == (2, 3)
    net = ptl.nn.Sequential(ptl.nn.LazyLinear(4), ptl.nn.ReLU(), ptl.nn.LazyLinear(1))
    x = ptl.tensor(np.random.default_rng(1).standard_normal((16, 3)), dtype=ptl.float32)
    net(x)
    opt = ptl.optim.SGD(net.parameters(), lr=0.05)
    target = x.sum(1, keepdim=True)
    first = None
    for _ in range(30):
        opt.zero_grad()
        loss = ((net(x) - target) ** 2).mean()
        loss.backward()
        opt.step()
        first = float(loss) if first is None else first
    assert float(loss) < first
    assert len(list(net.parameters())) == 4


def test_uninitialized_tensors():
    p = ptl.nn.UninitializedParameter()
    assert repr(p) == "<UninitializedParameter>" and p.requires_grad
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized "
                                           "parameter or buffer"):
        p.shape
    q = copy.deepcopy(p)
    assert type(q) is ptl.nn.UninitializedParameter and q is not p
    p.materialize((2, 3), dtype=ptl.float64)
    assert type(p) is ptl.nn.Parameter and tuple(p.shape) == (2, 3) and p.dtype == ptl.float64
    b = ptl.nn.UninitializedBuffer()
    assert repr(b) == "<UninitializedBuffer>" and not b.requires_grad
    b.materialize((4,))
    assert type(b) is ptl.Tensor and tuple(b.shape) == (4,)


def test_mixin_without_initializer():
    class Half(ptl.nn.modules.lazy.LazyModuleMixin, ptl.nn.Module):
        def forward(self, x):
            return x
    with pytest.raises(NotImplementedError, match="initialize_parameters is not implemented "
                                                  "for Half"):
        Half()(ptl.ones(1))


LAZY_CONVS = [
    ("LazyConv1d", "Conv1d", (4, 3), {}, (2, 3, 9)),
    ("LazyConv2d", "Conv2d", (4, 3), {"padding": 1, "bias": False}, (2, 2, 5, 5)),
    ("LazyConv3d", "Conv3d", (2, 2), {"groups": 2}, (1, 4, 3, 4, 3)),
    ("LazyConvTranspose1d", "ConvTranspose1d", (4, 3), {"groups": 2, "stride": 2}, (2, 6, 5)),
    ("LazyConvTranspose2d", "ConvTranspose2d", (3, 2), {}, (1, 2, 3, 4)),
    ("LazyConvTranspose3d", "ConvTranspose3d", (2, 2), {"output_padding": 1, "stride": 2},
     (1, 3, 2, 2, 2)),
    ("LazyConv1d", "Conv1d", (4, 3), {}, (3, 9)),   # unbatched: in_channels from dim 0
]


@pytest.mark.parametrize("lazy,eager,args,kwargs,shape", LAZY_CONVS)
def test_lazy_convolutions(lazy, eager, args, kwargs, shape):
    m = getattr(ptl.nn, lazy)(*args, **kwargs)
    assert repr(m).startswith(f"{lazy}(0, {args[0]}, kernel_size=")
    x = ptl.tensor(np.random.default_rng(0).standard_normal(shape), dtype=ptl.float32)
    y = m(x)
    assert type(m) is getattr(ptl.nn, eager)
    in_channels = shape[0] if len(shape) == m._n + 1 else shape[1]
    assert m.in_channels == in_channels
    reference = getattr(ptl.nn, eager)(in_channels, *args, **kwargs)
    reference.load_state_dict(m.state_dict())
    assert_close(y.detach(), reference(x).detach().numpy())
    fan_in = m.weight[0].numel() if not m.transposed else m.weight.shape[1] * math.prod(
        m.kernel_size)
    assert float(m.weight.abs().max()) <= 1 / math.sqrt(fan_in) + 1e-6


def test_lazy_conv_errors():
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        ptl.nn.LazyConv1d(4, 3, groups=3)(ptl.ones(1, 4, 5))


@pytest.mark.parametrize("n", [1, 2, 3])
def test_lazy_batch_norm(n):
    m = getattr(ptl.nn, f"LazyBatchNorm{n}d")(momentum=0.5)
    shape = (4, 3) + (5,) * n if n > 1 else (4, 3, 5)
    x, a = make(shape, ptl.float64)
    m = m.double()
    y = m(x)
    assert type(m) is getattr(ptl.nn, f"BatchNorm{n}d") and m.num_features == 3
    axes = (0,) + tuple(range(2, len(shape)))
    mean, var = a.mean(axes), a.var(axes)
    view = (1, 3) + (1,) * (len(shape) - 2)
    assert_close(y.detach(), (a - mean.reshape(view)) / np.sqrt(var.reshape(view) + 1e-5))
    count = a.size / 3
    assert_close(m.running_mean, 0.5 * mean)
    assert_close(m.running_var, 0.5 + 0.5 * var * count / (count - 1))
    assert type(m.running_mean) is ptl.Tensor and type(m.weight) is ptl.nn.Parameter
    assert m.running_mean.dtype == m.weight.dtype == ptl.float64   # .double() while lazy
    plain = ptl.nn.LazyBatchNorm1d(affine=False, track_running_stats=False)
    plain(ptl.ones(2, 3))   # nothing to infer: it stays with num_features 0, as in PyTorch
    assert repr(plain) == ("BatchNorm1d(0, eps=1e-05, momentum=0.1, affine=False, bias=False, "
                           "track_running_stats=False)")


@pytest.mark.parametrize("n", [1, 2, 3])
def test_lazy_instance_norm(n):
    m = getattr(ptl.nn, f"LazyInstanceNorm{n}d")(dtype=ptl.float64)
    assert repr(m) == (f"LazyInstanceNorm{n}d(0, eps=1e-05, momentum=0.1, affine=True, "
                       "bias=True, track_running_stats=True)")
    shape = (2, 3) + (4,) * n
    x, a = make(shape, ptl.float64)
    y = m(x)
    assert type(m) is getattr(ptl.nn, f"InstanceNorm{n}d") and m.num_features == 3
    axes = tuple(range(2, len(shape)))
    want = (a - a.mean(axes, keepdims=True)) / np.sqrt(a.var(axes, keepdims=True) + 1e-5)
    assert_close(y.detach(), want)
    assert tuple(m.running_mean.shape) == (3,) and tuple(m.weight.shape) == (3,)


@torch_ref
def test_matches_torch():
    for lib in (ptl, torch):
        m = lib.nn.LazyLinear(3)
        assert repr(m) == "LazyLinear(in_features=0, out_features=3, bias=True)"
        m(lib.ones(2, 5))
        assert type(m).__name__ == "Linear" and repr(m) == \
            "Linear(in_features=5, out_features=3, bias=True)"
    assert repr(ptl.nn.UninitializedParameter()) == repr(torch.nn.UninitializedParameter())
    for lazy, _, args, kwargs, shape in LAZY_CONVS:
        reprs = []
        for lib in (ptl, torch):
            m = getattr(lib.nn, lazy)(*args, **kwargs)
            before = repr(m)
            m(lib.ones(*shape))
            reprs.append((before, repr(m), tuple(m.weight.shape)))
        assert reprs[0] == reprs[1]
    for kind, n, shape in (("Batch", 1, (2, 3)), ("Batch", 2, (2, 4, 3, 3)),
                           ("Batch", 3, (1, 2, 2, 2, 2)), ("Instance", 1, (2, 3, 5)),
                           ("Instance", 2, (2, 4, 3, 3)), ("Instance", 3, (1, 2, 2, 2, 2))):
        reprs = []
        for lib in (ptl, torch):
            m = getattr(lib.nn, f"Lazy{kind}Norm{n}d")()
            before = repr(m)
            m(lib.ones(*shape))
            reprs.append((before, repr(m), type(m).__name__))
        assert reprs[0] == reprs[1]


def _buffered_lazy(lib, persistent):
    """A lazy module with a lazy buffer of the given persistence (PyTorch 2.13's
    UninitializedBuffer(persistent=...))."""
    class Scaled(lib.nn.modules.lazy.LazyModuleMixin, lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.offset = lib.nn.UninitializedBuffer(persistent=persistent)
            self.scale = lib.nn.UninitializedParameter()

        def initialize_parameters(self, x):
            self.offset.materialize(x.shape)
            self.scale.materialize(x.shape)
            with lib.no_grad():
                self.offset.fill_(1.0)
                self.scale.fill_(2.0)

        def forward(self, x):
            return x * self.scale + self.offset
    return Scaled()


# PyTorch 2.13's state_dict keys before and after the first forward, and after loading an
# initialized state_dict into a fresh module: the offset's type and shape
PERSISTENCE = {True: (["offset", "scale"], ["offset", "scale"], ("Tensor", (3,))),
               False: (["scale"], ["scale"], ("UninitializedBuffer", None))}


@pytest.mark.parametrize("persistent", [True, False])
def test_uninitialized_buffer_persistence(persistent):
    b = ptl.nn.UninitializedBuffer(persistent=persistent)
    assert b.persistent is persistent and isinstance(b, ptl.nn.UninitializedBuffer)
    assert repr(b) == "<UninitializedBuffer>" and not b.requires_grad
    before, after, (loaded_type, loaded_shape) = PERSISTENCE[persistent]
    m = _buffered_lazy(ptl, persistent)
    sd = m.state_dict()
    assert sorted(sd) == before and "offset" in dict(m.named_buffers())
    assert all(isinstance(v, ptl.nn.parameter.UninitializedTensorMixin) for v in sd.values())
    assert (m._non_persistent_buffers_set == set()) is persistent
    y = m(ptl.ones(3))
    assert y.tolist() == [3.0, 3.0, 3.0] and sorted(m.state_dict()) == after
    fresh = _buffered_lazy(ptl, persistent)
    assert str(fresh.load_state_dict(m.state_dict())) == "<All keys matched successfully>"
    assert isinstance(fresh.offset, getattr(ptl.nn, loaded_type, ptl.Tensor))
    assert type(fresh.scale) is ptl.nn.Parameter
    if loaded_shape is not None:
        assert tuple(fresh.offset.shape) == loaded_shape and fresh.offset.tolist() == [1.0] * 3
    # an uninitialized state_dict loads into an uninitialized module and leaves it so
    lazy = _buffered_lazy(ptl, persistent)
    lazy.load_state_dict(_buffered_lazy(ptl, persistent).state_dict())
    assert type(lazy.scale) is ptl.nn.UninitializedParameter


def test_uninitialized_buffer_copies_and_register_buffer():
    b = ptl.nn.UninitializedBuffer(persistent=False, dtype=ptl.float64)
    c = copy.deepcopy(b)
    assert c is not b and c.persistent is False and c.dtype == ptl.float64
    c.materialize((2,))
    assert type(c) is ptl.Tensor and tuple(c.shape) == (2,)
    m = ptl.nn.Module()
    m.register_buffer("b", ptl.nn.UninitializedBuffer(persistent=False))   # its own flag wins
    assert m._non_persistent_buffers_set == set()
    m.register_buffer("n", ptl.nn.UninitializedBuffer(), persistent=False)
    assert m._non_persistent_buffers_set == {"n"}


def test_lazy_linear_state_dict_round_trip():
    src = ptl.nn.Linear(3, 4)
    m = ptl.nn.LazyLinear(4)
    assert [type(v).__name__ for _, v in sorted(m.state_dict().items())] == \
        ["UninitializedParameter"] * 2
    m.load_state_dict(src.state_dict())
    assert type(m).__name__ == "LazyLinear" and tuple(m.weight.shape) == (4, 3)
    x = ptl.ones(2, 3)
    assert ptl.equal(m(x), src(x)) and type(m).__name__ == "Linear" and m.in_features == 3
    wrong = ptl.nn.LazyLinear(4)
    wrong.load_state_dict(src.state_dict())
    with pytest.raises(AssertionError, match="The in_features inferred from input: 5 is not "
                                             "equal to in_features from self.weight: 3"):
        wrong(ptl.ones(2, 5))
    norm = ptl.nn.LazyBatchNorm1d()
    norm.load_state_dict(ptl.nn.BatchNorm1d(3).state_dict())
    assert tuple(norm.running_mean.shape) == (3,) and type(norm.running_mean) is ptl.Tensor


@torch_ref
@pytest.mark.parametrize("persistent", [True, False])
def test_uninitialized_buffer_persistence_matches_torch(persistent):
    before, after, (loaded_type, loaded_shape) = PERSISTENCE[persistent]
    assert torch.nn.UninitializedBuffer(persistent=persistent).persistent is persistent
    m = _buffered_lazy(torch, persistent)
    assert sorted(m.state_dict()) == before
    m(torch.ones(3))
    assert sorted(m.state_dict()) == after
    fresh = _buffered_lazy(torch, persistent)
    fresh.load_state_dict(m.state_dict())
    assert type(fresh.offset).__name__ == loaded_type
    if loaded_shape is not None:
        assert tuple(fresh.offset.shape) == loaded_shape
    m = torch.nn.Module()
    m.register_buffer("b", torch.nn.UninitializedBuffer(persistent=False))
    assert m._non_persistent_buffers_set == set()
