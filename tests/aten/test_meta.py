"""The meta device and the Meta dispatch key (Note [Meta tensors] in src/c10/device.h, Note
[Meta kernels] in src/aten/native/meta.c): tensors with sizes, strides and a dtype but no
data, kernels that compute the CPU kernel's output geometry without running a loop, and
PyTorch's errors wherever data would be read."""
import json
import operator
import os
import pickle
import subprocess
import sys

import pytest

import pytorchlite as ptl
from pytorchlite import _C
from helpers import torch, torch_ref
from opinfo import SCHEMAS

HERE = os.path.dirname(os.path.abspath(__file__))


def meta(*shape, dtype=None):
    return ptl.empty(*shape, dtype=dtype, device="meta")


def geometry(t):
    return tuple(t.shape), t.stride(), str(t.dtype).split(".")[1]


# ---- the device and its tensors ----

def test_device_names_and_tensor_properties():
    assert str(ptl.device("meta")) == "meta" and ptl.device("meta").type == "meta"
    assert repr(ptl.device("meta:0")) == "device(type='meta', index=0)"
    x = meta(2, 3)
    assert x.is_meta and not ptl.ones(1).is_meta and not x.is_cpu
    assert str(x.device) == "meta"
    assert geometry(x) == ((2, 3), (3, 1), "float32")
    assert x.data_ptr() == 0   # PyTorch's answer for a tensor without data
    assert x.untyped_storage().nbytes() == 24


def test_a_meta_tensor_allocates_nothing():
    before = ptl.cpu.memory_stats()["allocated_bytes.all.current"]
    huge = ptl.zeros(10**12, device="meta")
    also = (ptl.ones(10**6, 10**6, device="meta") * 2).sum(0)
    assert huge.shape == (10**12,) and also.shape == (10**6,)
    assert ptl.cpu.memory_stats()["allocated_bytes.all.current"] - before < 4096


def test_repr_as_pytorch():
    assert repr(meta(2, 3)) == "tensor(..., device='meta', size=(2, 3))"
    assert repr(meta(0)) == "tensor(..., device='meta', size=(0,))"
    assert repr(meta((), dtype=ptl.int64)) == \
        "tensor(..., device='meta', size=(), dtype=torch.int64)"
    w = ptl.empty(2, device="meta", requires_grad=True)
    assert repr(w) == "tensor(..., device='meta', size=(2,), requires_grad=True)"
    assert repr(w * 2) == "tensor(..., device='meta', size=(2,), grad_fn=<MulBackward0>)"
    assert repr(meta(2, dtype=ptl.float16)) == \
        "tensor(..., device='meta', size=(2,), dtype=torch.float16)"


@pytest.mark.parametrize("read, exc, message", [
    (lambda x: x[0, 0].item(), RuntimeError, "Tensor.item() cannot be called on meta tensors"),
    (lambda x: float(x.sum()), RuntimeError, "Tensor.item() cannot be called on meta tensors"),
    (lambda x: bool(x.sum() > 0), RuntimeError,
     "Tensor.item() cannot be called on meta tensors"),
    (lambda x: x.item(), RuntimeError, "a Tensor with 6 elements cannot be converted to Scalar"),
    (lambda x: x.tolist(), NotImplementedError, "Cannot copy out of meta tensor; no data!"),
    (lambda x: x.cpu(), NotImplementedError, "Cannot copy out of meta tensor; no data!"),
    (lambda x: x.to("cpu"), NotImplementedError, "Cannot copy out of meta tensor; no data!"),
    (lambda x: ptl.empty(2, 3).copy_(x), NotImplementedError,
     "Cannot copy out of meta tensor; no data!"),
    (lambda x: x.numpy(), TypeError,
     "can't convert meta device type tensor to numpy. Use Tensor.cpu() to copy the tensor to "
     "host memory first."),
    (lambda x: memoryview(x), TypeError, "can't convert meta device type tensor to numpy."),
    (lambda x: x.__dlpack__(), BufferError, "Cannot pack tensors on meta"),
    (lambda x: x + ptl.ones(3), RuntimeError,
     "Tensor on device cpu is not on the expected device meta!"),
    (lambda x: x.nonzero(), NotImplementedError,
     "Could not run 'aten::nonzero' with arguments from the 'Meta' backend."),
    (lambda x: ptl.empty(2, 3).copy_(x.sum(0, keepdim=True)), NotImplementedError,
     "Cannot copy out of meta tensor; no data!"),
])
def test_reading_data_raises(read, exc, message):
    x = meta(2, 3)
    with pytest.raises(exc) as info:
        read(x)
    assert str(info.value).startswith(message)


@pytest.mark.parametrize("use, exc, message", [
    (operator.index, RuntimeError, "Tensor.item() cannot be called on meta tensors"),
    (lambda i: ptl.zeros(3)[i], RuntimeError, "Tensor.item() cannot be called on meta tensors"),
    (lambda i: [1, 2, 3][i], RuntimeError, "Tensor.item() cannot be called on meta tensors"),
    # a Scalar argument: a meta number has no value to pass, so no overload takes it
    (lambda i: ptl.add(ptl.ones(2), ptl.ones(2), alpha=i), TypeError,
     "add(): argument 'alpha' must be Number, not Tensor"),
    (lambda i: ptl.ops.aten.bucketize.Scalar(i, self=5, out_int32=2), RuntimeError,
     "aten::bucketize() Expected a value of type 'number' for argument 'self' but instead "
     "found type 'Tensor'.\nPosition: 0\nValue: tensor(..., device='meta', size=(), "
     "dtype=torch.int64)"),
])
def test_a_meta_number_is_never_read(use, exc, message):
    """A 0-dim meta integer where Python wants an int or an op a Scalar raises (it read the
    missing data: the fuzzer's 43:22717 crashed in the Scalar conversion)."""
    with pytest.raises(exc) as info:
        use(ptl.empty((), dtype=ptl.int64, device="meta"))
    assert str(info.value).startswith(message)


@torch_ref
def test_errors_match_pytorch():
    for ours, theirs in [(meta(2, 3), torch.empty(2, 3, device="meta"))]:
        for read in (lambda x: x[0, 0].item(), lambda x: x.tolist(), lambda x: x.cpu(),
                     lambda x: x.numpy(), lambda x: x.__dlpack__(),
                     lambda x: x + x.new_ones(3, device="cpu")):
            with pytest.raises(Exception) as a:
                read(ours)
            with pytest.raises(Exception) as b:
                read(theirs)
            assert (type(a.value), str(a.value)) == (type(b.value), str(b.value))


def test_copies_into_meta_and_between_meta_tensors():
    x = ptl.arange(6.0).reshape(2, 3)
    m = x.to("meta")
    assert m.is_meta and geometry(m) == geometry(x)
    y = meta(2, 3)
    assert y.copy_(x) is y and y.copy_(m) is y and y.copy_(ptl.ones(3)) is y
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        meta(3).copy_(ptl.ones(2, 3))
    assert ptl.ones(3).to("meta", dtype=ptl.float64).dtype == ptl.float64
    # a CPU 0-dim tensor rides along as a scalar, as in PyTorch
    assert (meta(2, 3) + ptl.tensor(1.0)).is_meta


def test_pickle_keeps_the_geometry():
    x = meta(2, 3, dtype=ptl.float64).t()
    y = pickle.loads(pickle.dumps(x))
    assert y.is_meta and geometry(y) == geometry(x)
    r = pickle.loads(pickle.dumps(ptl.empty(2, device="meta", requires_grad=True)))
    assert r.requires_grad


# ---- kernels: every operator either matches the CPU kernel's geometry or raises ----

def _sweep():
    """{op: (status, detail)} from meta_sweep.py, restarted after any op that crashes."""
    results, skip = {}, 0
    while True:
        p = subprocess.run([sys.executable, os.path.join(HERE, "meta_sweep.py"), "--skip",
                            str(skip)], capture_output=True, text=True, timeout=1200)
        started = 0
        for line in p.stdout.splitlines():
            row = json.loads(line)
            if row.get("start"):
                started += 1
                last = row["op"]
            else:
                results[row["op"]] = (row["status"], row["detail"])
        if p.returncode == 0:
            return results
        assert started, p.stderr[-2000:]
        results[last] = ("crash", p.returncode)
        skip += started


def test_every_operator_on_meta_inputs_returns_the_cpu_geometry_or_raises():
    results = _sweep()
    assert set(results) == set(SCHEMAS) - {n for n in SCHEMAS if n not in results} and \
        len(results) > 600
    crashed = [n for n, (s, _) in results.items() if s == "crash"]
    assert not crashed, f"these ops crash on meta inputs: {crashed}"
    wrong = {n: d for n, (s, d) in results.items() if s == "mismatch"}
    assert not wrong, wrong
    # an op with a Meta kernel must return on every sample the CPU kernel accepts
    with_meta = {n for n, row in SCHEMAS.items() if "Meta" in row["kernels"]}
    refused = {n: results[n] for n in with_meta if results[n][0] != "match"}
    assert not refused, refused
    # and the families the Meta key is for have one
    for name in ["add.Tensor", "mul_.Tensor", "sum", "mean", "amax", "argmax", "var",
                 "empty.memory_format", "zeros", "ones", "full", "arange", "rand", "randn",
                 "normal_", "uniform_", "zero_", "fill_.Scalar", "copy_", "_to_copy",
                 "empty_like", "zeros_like", "ones_like", "full_like", "mm", "bmm", "addmm",
                 "convolution", "convolution_backward", "cat", "stack", "embedding",
                 "embedding_dense_backward", "_softmax", "_log_softmax",
                 "_softmax_backward_data", "native_layer_norm", "native_layer_norm_backward",
                 "nll_loss_nd", "nll_loss_nd_backward", "view", "transpose.int", "expand",
                 "as_strided", "tril", "masked_fill.Scalar", "where.self"]:
        assert name in with_meta, name


def test_ops_without_a_meta_kernel_raise_the_dispatcher_error():
    x = meta(4)
    backends = r"CPU, CUDA, Autograd" if ptl.cuda.is_built() else r"CPU, Autograd"
    with pytest.raises(NotImplementedError, match=r"Could not run 'aten::sort.stable' with "
                       r"arguments from the 'Meta' backend\. 'aten::sort.stable' is only "
                       rf"available for these backends: \[{backends}\]"):
        x.sort()


# ---- what models do with meta tensors ----

def test_model_init_shape_inference_and_backward_on_meta():
    model = ptl.nn.Sequential(ptl.nn.Conv2d(3, 8, 3, padding=1, device="meta"),
                              ptl.nn.ReLU(), ptl.nn.Flatten(),
                              ptl.nn.Linear(8 * 16 * 16, 10, device="meta"),
                              ptl.nn.LayerNorm(10, device="meta"), ptl.nn.Dropout(0.1))
    assert all(p.is_meta for p in model.parameters())
    x = ptl.empty(4, 3, 16, 16, device="meta")
    out = model(x)
    assert out.is_meta and out.shape == (4, 10)
    loss = ptl.nn.functional.cross_entropy(out, ptl.empty(4, dtype=ptl.int64, device="meta"))
    assert loss.shape == () and loss.is_meta
    loss.backward()
    for p in model.parameters():
        assert p.grad.is_meta and p.grad.shape == p.shape
    opt = ptl.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    opt.step()
    emb = ptl.nn.Embedding(100, 16, device="meta")
    attn = ptl.softmax(emb(ptl.empty(2, 5, dtype=ptl.int64, device="meta")) @
                       emb.weight.t(), dim=-1)
    assert attn.shape == (2, 5, 100) and attn.is_meta


def test_to_empty_gives_real_memory():
    model = ptl.nn.Sequential(ptl.nn.Linear(4, 5, device="meta"), ptl.nn.ReLU(),
                              ptl.nn.Linear(5, 2, device="meta"))
    big = ptl.nn.Linear(4096, 4096, device="meta")   # 64 MiB it never allocates
    assert big.weight.is_meta
    w = model[0].weight
    assert model.to_empty(device="cpu") is model
    for p in model.parameters():
        assert p.device.type == "cpu" and isinstance(p, ptl.nn.Parameter) and p.requires_grad
    assert model[0].weight is not w   # meta and CPU are different kinds: a new Parameter
    model[0].reset_parameters()
    model[2].reset_parameters()
    assert model(ptl.ones(3, 4)).shape == (3, 2)
    shallow = ptl.nn.Sequential(ptl.nn.Linear(2, 2, device="meta"))
    shallow.to_empty(device="cpu", recurse=False)
    assert shallow[0].weight.is_meta


def test_empty_like_and_new_factories_follow_the_meta_input():
    x = meta(2, 3).t()
    for t in (ptl.empty_like(x), ptl.zeros_like(x), ptl.ones_like(x), ptl.rand_like(x),
              x.new_empty(4), x.new_zeros(4), x.new_full((4,), 2.0)):
        assert t.is_meta
    assert ptl.empty_like(x).stride() == x.stride()


# ---- against PyTorch's meta kernels ----

CASES = [
    ("add", lambda t, d: t.add(t.empty(3, 1, device=d), t.empty(3, 4, device=d).t()[:1])),
    ("broadcast_mul", lambda t, d: t.empty(2, 1, 4, device=d) * t.empty(3, 1, device=d)),
    ("transposed_unary", lambda t, d: t.empty(3, 5, device=d).t().exp()),
    ("promotion", lambda t, d: t.empty(3, dtype=t.int32, device=d) / 2),
    ("compare", lambda t, d: t.empty(3, 4, device=d) > t.empty(4, device=d)),
    ("sum_dim", lambda t, d: t.empty(2, 3, 4, device=d).sum((0, 2), keepdim=True)),
    ("mean_int", lambda t, d: t.empty(2, 3, device=d).mean(1)),
    ("argmax", lambda t, d: t.empty(2, 3, device=d).argmax(0)),
    ("mm", lambda t, d: t.empty(2, 3, device=d) @ t.empty(3, 4, device=d)),
    ("bmm", lambda t, d: t.bmm(t.empty(5, 2, 3, device=d), t.empty(5, 3, 4, device=d))),
    ("matmul_batched", lambda t, d: t.empty(7, 2, 3, device=d) @ t.empty(3, 4, device=d)),
    ("addmm", lambda t, d: t.addmm(t.empty(4, device=d), t.empty(2, 3, device=d),
                                   t.empty(3, 4, device=d))),
    ("linear", lambda t, d: t.nn.functional.linear(t.empty(5, 3, device=d),
                                                   t.empty(4, 3, device=d), t.empty(4, device=d))),
    ("conv2d", lambda t, d: t.nn.functional.conv2d(t.empty(2, 3, 9, 9, device=d),
                                                   t.empty(6, 3, 3, 3, device=d), stride=2,
                                                   padding=1)),
    ("conv_transpose", lambda t, d: t.nn.functional.conv_transpose2d(
        t.empty(2, 3, 5, 5, device=d), t.empty(3, 4, 3, 3, device=d), stride=2)),
    ("cat", lambda t, d: t.cat([t.empty(2, 3, device=d), t.empty(4, 3, device=d)])),
    ("stack", lambda t, d: t.stack([t.empty(2, 3, device=d)] * 3, dim=1)),
    ("embedding", lambda t, d: t.nn.functional.embedding(
        t.zeros(2, 5, dtype=t.int64, device=d), t.empty(10, 4, device=d))),
    ("softmax", lambda t, d: t.empty(2, 5, device=d).softmax(-1)),
    ("log_softmax", lambda t, d: t.empty(2, 5, device=d).log_softmax(0)),
    ("layer_norm", lambda t, d: t.nn.functional.layer_norm(t.empty(2, 5, device=d), (5,))),
    ("cross_entropy", lambda t, d: t.nn.functional.cross_entropy(
        t.empty(4, 5, device=d), t.zeros(4, dtype=t.int64, device=d))),
    ("nll_none", lambda t, d: t.nn.functional.nll_loss(
        t.empty(4, 5, device=d), t.zeros(4, dtype=t.int64, device=d), reduction="none")),
    ("dropout", lambda t, d: t.nn.functional.dropout(t.empty(4, 5, device=d), 0.3)),
    ("views", lambda t, d: t.empty(2, 3, 4, device=d).permute(2, 0, 1)[1:, :, ::2]),
    ("reshape_copy", lambda t, d: t.empty(2, 3, device=d).t().reshape(6)),
    ("factories", lambda t, d: (t.zeros(2, 3, device=d), t.arange(5, device=d),
                                t.full((2,), 1, device=d), t.rand(3, device=d),
                                t.eye(3, 4, device=d), t.linspace(0, 1, 7, device=d))),
    ("inplace", lambda t, d: t.empty(2, 3, device=d).normal_().uniform_().zero_().add_(1)),
    ("tril", lambda t, d: t.empty(4, 4, device=d).tril(1)),
    ("masked_fill", lambda t, d: t.empty(2, 3, device=d).masked_fill(
        t.zeros(3, dtype=t.bool, device=d), 0.0)),
    ("where", lambda t, d: t.where(t.zeros(3, dtype=t.bool, device=d), t.empty(2, 3, device=d),
                                   0.0)),
]


def _flat(x):
    return [g for y in x for g in _flat(y)] if isinstance(x, (tuple, list)) else [x]


@pytest.mark.parametrize("name, fn", CASES, ids=[c[0] for c in CASES])
def test_meta_outputs_match_the_cpu_kernel(name, fn):
    ptl.manual_seed(0)
    cpu = _flat(fn(ptl, "cpu"))
    got = _flat(fn(ptl, "meta"))
    assert all(t.is_meta for t in got)
    assert [geometry(t) for t in got] == [geometry(t) for t in cpu]


@torch_ref
@pytest.mark.parametrize("name, fn", CASES, ids=[c[0] for c in CASES])
def test_meta_outputs_match_pytorch(name, fn):
    got = [geometry(t) for t in _flat(fn(ptl, "meta"))]
    want = [(tuple(t.shape), t.stride(), str(t.dtype).split(".")[1])
            for t in _flat(fn(torch, "meta"))]
    assert got == want


def _backward_grads(t, device):
    t.manual_seed(0)
    w = t.randn(4, 3, device=device, requires_grad=True)
    x = t.randn(5, 3, device=device, requires_grad=True)
    y = t.nn.functional.layer_norm((x @ w.t()).relu(), (4,)).log_softmax(-1).sum()
    y.backward()
    return w.grad, x.grad


def test_backward_geometry_matches_the_cpu():
    got = [geometry(g) for g in _backward_grads(ptl, "meta")]
    assert got == [geometry(g) for g in _backward_grads(ptl, "cpu")]


@torch_ref
def test_backward_shapes_match_pytorch():
    # shapes and dtypes: PyTorch's AccumulateGrad also restrides a gradient to its
    # parameter's layout, which pytorchlite's does not do on any device
    got = [geometry(g)[::2] for g in _backward_grads(ptl, "meta")]
    want = [(tuple(g.shape), str(g.dtype).split(".")[1]) for g in _backward_grads(torch, "meta")]
    assert got == want


# derivatives whose formula branches on values (any zero? a NaN result? a NaN gradient under
# anomaly detection?) take their general path on meta tensors, which have no values to read
# (these read a NULL pointer before)
DATA_DEPENDENT_GRADS = {
    "prod()": lambda x: x.prod(),
    "prod(1)": lambda x: x.prod(1),
    "max()": lambda x: x.max(),
    "amax(1)": lambda x: x.amax(1),
}


@pytest.mark.parametrize("name", list(DATA_DEPENDENT_GRADS))
@pytest.mark.parametrize("anomaly", [False, True])
def test_data_dependent_backward_on_meta(name, anomaly):
    fn = DATA_DEPENDENT_GRADS[name]
    x = ptl.empty(3, 4, device="meta", requires_grad=True)
    with ptl.autograd.set_detect_anomaly(anomaly):
        y = fn(x)
        (g,) = ptl.autograd.grad([y], [x], [ptl.ones_like(y)])
    cpu = ptl.ones(3, 4, requires_grad=True)
    out = fn(cpu)
    (want,) = ptl.autograd.grad([out], [cpu], [ptl.ones_like(out)])
    assert g.device.type == "meta" and geometry(g) == geometry(want)


def test_a_meta_gradient_into_a_cpu_leaf_is_refused():
    """The move's gradient goes back to the leaf's device, which a meta tensor cannot do:
    PyTorch's error."""
    b = ptl.ones(2, 5, requires_grad=True)
    y = b.to("meta").prod(1)
    with pytest.raises(NotImplementedError, match="^Cannot copy out of meta tensor; no data!$"):
        ptl.autograd.grad([y], [b], [ptl.ones_like(y)])


def test_dispatch_dump_shows_meta():
    assert "Meta: kernel registered at meta.c" in _C._dispatch_dump("aten::mm")


MIXED = [
    lambda t: t.ones(2).masked_fill_(t.zeros(2, dtype=t.bool, device="meta"), 5),
    lambda t: t.mm(t.ones(2, 2), t.empty(2, 2, device="meta")),
    lambda t: t.empty(2, 2, device="meta") @ t.ones(2, 2),
    lambda t: t.cat([t.empty(2, device="meta"), t.ones(2)]),
]


@pytest.mark.parametrize("call", MIXED)
def test_a_cpu_tensor_beside_a_meta_one_is_refused(call):
    # the Meta kernel checks every tensor argument before the CPU kernel it reuses runs.
    # PyTorch 2.13 refuses only the cat; it returns a CPU tensor of garbage for the mm and
    # masked_fill_ ones and a meta tensor for meta @ cpu (docs/decisions.md, "Meta tensors")
    with pytest.raises(RuntimeError, match="^Tensor on device cpu is not on the expected "
                                           "device meta!$"):
        call(ptl)
