"""Autograd: the graph objects, the engine, the classic errors, and gradcheck of every formula
in src/autograd/derivatives.def (float64)."""
import gc
import re

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite import _C
from pytorchlite.autograd import GradcheckError, gradcheck, gradgradcheck
import golden
from helpers import ROOT, TESTS, assert_no_leak, torch, torch_ref


def leaf(shape, seed=0, low=-2.0, high=2.0):
    a = np.random.default_rng(seed).uniform(low, high, size=shape)
    return ptl.tensor(a, dtype=ptl.float64, requires_grad=True)


# ---- the seed article's examples ----

def test_seed_times_two():
    a = ptl.tensor([1.0, 2.0], requires_grad=True)
    b = a * 2
    b.sum().backward()
    assert a.grad.tolist() == [2.0, 2.0]


def test_seed_next_functions():
    x = ptl.tensor([1.0, 2.0], requires_grad=True)
    y = ptl.tensor([3.0, 4.0])
    z = x + y
    nf = z.grad_fn.next_functions
    assert type(z.grad_fn).__name__ == "AddBackward0"
    assert re.fullmatch(r"<AddBackward0 object at 0x[0-9a-f]+>", repr(z.grad_fn))
    assert len(nf) == 2 and nf[1] == (None, 0)
    assert type(nf[0][0]).__name__ == "AccumulateGrad" and nf[0][1] == 0
    assert nf[0][0].variable is x
    assert z.grad_fn.name() == "AddBackward0"


def test_seed_inplace_error():
    x = ptl.tensor([1.0, 2.0], requires_grad=True)
    y = x.sigmoid()
    y.mul_(2)
    with pytest.raises(RuntimeError, match=re.escape(
            "one of the variables needed for gradient computation has been modified by an "
            "inplace operation: [torch.FloatTensor [2]], which is output 0 of Sigmoid, "
            "is at version 1; expected version 0 instead. Hint:")):
        y.sum().backward()


# ---- graph objects and tensor API ----

def test_grad_fn_identity_and_saved_values():
    a = leaf((2, 3))
    b = leaf((2, 3), seed=1)
    c = a * b
    assert c.grad_fn is c.grad_fn
    assert c.grad_fn._saved_self.tolist() == a.tolist()
    assert c.grad_fn._saved_other.tolist() == b.tolist()
    d = a.exp()
    assert np.allclose(d.grad_fn._saved_result.tolist(), np.exp(np.array(a.tolist())))
    e = a.add(b, alpha=3)
    assert e.grad_fn._saved_alpha == 3
    with pytest.raises(AttributeError, match="'MulBackward0' object has no attribute '_saved_nope'"):
        c.grad_fn._saved_nope
    c.grad_fn.metadata["k"] = 1
    assert c.grad_fn.metadata == {"k": 1}


def test_leaf_flags_and_requires_grad_errors():
    a = ptl.tensor([1.0], requires_grad=True)
    b = a * 2
    assert a.is_leaf and not b.is_leaf and b.requires_grad and a.grad_fn is None
    assert ptl.tensor([1.0]).is_leaf
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        ptl.tensor([1, 2]).requires_grad_()
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables"):
        b.requires_grad_(False)
    assert b.detach().requires_grad is False and b.detach().grad_fn is None


def test_grad_setter():
    a = ptl.tensor([1.0, 2.0], requires_grad=True)
    a.grad = ptl.tensor([3.0, 4.0])
    assert a.grad.tolist() == [3.0, 4.0]
    a.grad = None
    assert a.grad is None
    with pytest.raises(RuntimeError, match="assigned grad has data of a different size"):
        a.grad = ptl.tensor([1.0])
    with pytest.raises(RuntimeError, match="assigned grad has data of a different type"):
        a.grad = ptl.tensor([1.0, 2.0], dtype=ptl.float64)


def test_accumulation_over_two_backwards():
    a = ptl.tensor([1.0, 2.0], requires_grad=True)
    (a * 3).sum().backward()
    (a * a).sum().backward()
    assert a.grad.tolist() == [3.0 + 2.0, 3.0 + 4.0]


def test_broadcast_gradients_are_reduced():
    a = leaf((3, 1))
    b = leaf((4,), seed=1)
    (a * b).sum().backward()
    an, bn = np.array(a.tolist()), np.array(b.tolist())
    assert np.allclose(a.grad.tolist(), np.broadcast_to(bn.sum(), (3, 1)))
    assert np.allclose(b.grad.tolist(), np.broadcast_to(an.sum(), (4,)))


def test_integer_inputs_give_float_grads_for_float_leaf():
    a = ptl.tensor([1.0, 2.0], requires_grad=True)
    (a * ptl.tensor([2, 3])).sum().backward()
    assert a.grad.dtype == ptl.float32 and a.grad.tolist() == [2.0, 3.0]


# ---- the classic errors ----

def test_backward_twice():
    a = ptl.tensor([1.0, 2.0], requires_grad=True)
    y = (a * a).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()
    z = (a * a).sum()
    z.backward(retain_graph=True)
    z.backward()
    assert a.grad.tolist() == [2.0 + 4.0, 4.0 + 8.0]


def test_nonscalar_backward_needs_gradient():
    a = ptl.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        (a * 2).backward()
    (a * 2).backward(ptl.tensor([1.0, 0.5]))
    assert a.grad.tolist() == [2.0, 1.0]


def test_backward_without_grad_fn():
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"):
        ptl.tensor([1.0]).sum().backward()


def test_leaf_inplace_error():
    a = ptl.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation."):
        a.add_(1)
    with ptl.no_grad():
        a.add_(1)   # allowed without grad mode
    assert a.tolist() == [2.0]


def test_numpy_of_requires_grad_tensor():
    a = ptl.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=re.escape("Can't call numpy() on Tensor that requires grad. "
                                                     "Use tensor.detach().numpy() instead.")):
        a.numpy()
    assert a.detach().numpy().tolist() == [1.0]


def test_out_with_requires_grad():
    a = ptl.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="add\\(\\): functions with out=... arguments don't support automatic differentiation"):
        ptl.add(a, a, out=ptl.empty(1))


def test_missing_formula_fails_at_backward():
    a = ptl.tensor([1.0, 4.0], requires_grad=True)
    y = ptl.bernoulli(a, 0.5)   # no row in derivatives.def yet
    assert type(y.grad_fn).__name__ == "NotImplemented"
    with pytest.raises(NotImplementedError, match=re.escape(
            "the derivative for 'aten::bernoulli.p' is not implemented.")):
        y.sum().backward()


def test_inplace_on_nonleaf_rebases_history():
    a = leaf((3,))
    b = a * 2
    b.mul_(3)
    assert type(b.grad_fn).__name__ == "MulBackward0"
    b.sum().backward()
    assert np.allclose(a.grad.tolist(), [6.0] * 3)
    c = leaf((3,), seed=2)
    d = c * 2            # MulBackward0 saves c, not d: relu_ on d is allowed
    d.relu_()
    d.sum().backward()
    cn = np.array(c.tolist())
    assert np.allclose(c.grad.tolist(), 2.0 * (cn > 0))
    e = c.exp()          # ExpBackward0 saves its result: modifying it must be caught
    e.relu_()
    with pytest.raises(RuntimeError, match="which is output 0 of Exp, is at version 1"):
        e.sum().backward()


# ---- grad mode ----

def test_no_grad_and_friends():
    a = ptl.tensor([1.0], requires_grad=True)
    with ptl.no_grad():
        assert not ptl.is_grad_enabled()
        assert not (a * 2).requires_grad
        with ptl.enable_grad():
            assert (a * 2).requires_grad
    assert ptl.is_grad_enabled()

    @ptl.no_grad()
    def f(x):
        return x * 2
    assert not f(a).requires_grad
    with ptl.set_grad_enabled(False):
        assert not (a * 2).requires_grad
    assert ptl.is_grad_enabled()
    with ptl.inference_mode():
        assert not (a * 2).requires_grad
    import threading
    seen = []
    with ptl.no_grad():
        t = threading.Thread(target=lambda: seen.append(ptl.is_grad_enabled()))
        t.start()
        t.join()
    assert seen == [True]   # thread-local


# ---- autograd.grad ----

def test_autograd_grad_and_create_graph():
    x = leaf((3,))
    y = (x * x * x).sum()
    (g,) = ptl.autograd.grad(y, x, create_graph=True)
    xn = np.array(x.tolist())
    assert np.allclose(g.tolist(), 3 * xn ** 2)
    assert x.grad is None
    (gg,) = ptl.autograd.grad(g.sum(), x)
    assert np.allclose(gg.tolist(), 6 * xn)


def test_autograd_grad_unused_and_errors():
    x = leaf((2,))
    z = leaf((2,), seed=1)
    y = (x * 2).sum()
    with pytest.raises(RuntimeError, match="One of the differentiated Tensors appears to not have been used in the graph"):
        ptl.autograd.grad(y, [x, z], retain_graph=True)
    gx, gz = ptl.autograd.grad(y, [x, z], allow_unused=True, retain_graph=True)
    assert gz is None and gx.tolist() == [2.0, 2.0]
    gx, gz = ptl.autograd.grad(y, [x, z], materialize_grads=True)
    assert gz.tolist() == [0.0, 0.0]
    with pytest.raises(RuntimeError, match="One of the differentiated Tensors does not require grad"):
        ptl.autograd.grad((x * 2).sum(), ptl.tensor([1.0]))


def test_backward_inputs_only_accumulates_there():
    a = leaf((2,))
    b = leaf((2,), seed=1)
    (a * b).sum().backward(inputs=[a])
    assert a.grad is not None and b.grad is None


# ---- memory ----

def test_saved_tensors_freed_after_backward():
    a = leaf((100,))
    gc.collect()
    base = _C._live_counts()
    y = (a.exp() * a).sum()
    with_graph = _C._live_counts()
    assert with_graph["Node"] == base["Node"] + 4   # Sum, Mul, Exp, AccumulateGrad
    y.backward()
    after = _C._live_counts()   # the graph lives on (y holds it) but its saved tensors are gone
    assert after["Node"] == with_graph["Node"]
    assert after["TensorImpl"] <= with_graph["TensorImpl"] - 1   # + a.grad - (exp result, its alias)
    del y
    gc.collect()
    final = _C._live_counts()
    assert final["Node"] == base["Node"]
    assert final["TensorImpl"] == base["TensorImpl"] + 1   # a.grad


def test_deep_graph_backward_and_free_without_recursion():
    a = ptl.tensor([1.0], requires_grad=True)
    y = a
    for _ in range(100_000):
        y = y * 1.0
    y.sum().backward()
    assert a.grad.tolist() == [1.0]
    del y
    gc.collect()


def test_training_loop_keeps_counts_flat():
    w = leaf((4, 3))
    x = ptl.tensor(np.random.default_rng(0).normal(size=(8, 4)))
    def step():
        loss = (x.mm(w).tanh() * 0.5).mean()
        loss.backward()
        with ptl.no_grad():
            w.sub_(w.grad * 0.1)
        w.grad = None
    for _ in range(20):
        step()
    gc.collect()
    before = _C._live_counts()
    for _ in range(300):
        step()
    gc.collect()
    assert _C._live_counts() == before


# ---- gradcheck of every formula (float64) ----

FORMULAS = [
    ("add", lambda a, b: a.add(b, alpha=2.5), [(3, 4), (4,)]),
    ("add_", lambda a, b: (a * 1).add_(b), [(3, 4), (3, 4)]),
    ("sub", lambda a, b: a.sub(b, alpha=0.5), [(2, 3), (2, 1)]),
    ("sub_", lambda a, b: (a * 1).sub_(b), [(3,), (3,)]),
    ("rsub", lambda a, b: ptl.rsub(a, b, alpha=2), [(2, 3), (3,)]),
    ("mul", lambda a, b: a * b, [(2, 3), (1, 3)]),
    ("mul_", lambda a, b: (a * 1).mul_(b), [(2, 3), (2, 3)]),
    ("div", lambda a, b: a / b, [(2, 3), (3,)]),
    ("div_", lambda a, b: (a * 1).div_(b), [(3,), (3,)]),
    ("neg", lambda a: -a, [(2, 3)]),
    ("neg_", lambda a: (a * 1).neg_(), [(3,)]),
    ("exp", lambda a: a.exp(), [(2, 3)]),
    ("exp_", lambda a: (a * 1).exp_(), [(3,)]),
    ("log", lambda a: a.log(), [(2, 3)]),
    ("log_", lambda a: (a * 1).log_(), [(3,)]),
    ("sqrt", lambda a: a.sqrt(), [(2, 3)]),
    ("sqrt_", lambda a: (a * 1).sqrt_(), [(3,)]),
    ("sin", lambda a: a.sin(), [(2, 3)]),
    ("cos", lambda a: a.cos(), [(2, 3)]),
    ("tanh", lambda a: a.tanh(), [(2, 3)]),
    ("tanh_", lambda a: (a * 1).tanh_(), [(3,)]),
    ("sigmoid", lambda a: a.sigmoid(), [(2, 3)]),
    ("sigmoid_", lambda a: (a * 1).sigmoid_(), [(3,)]),
    ("relu", lambda a: a.relu(), [(2, 3)]),
    ("relu_", lambda a: (a * 1).relu_(), [(3,)]),
    ("abs", lambda a: a.abs(), [(2, 3)]),
    ("reciprocal", lambda a: a.reciprocal(), [(2, 3)]),
    ("square", lambda a: a.square(), [(2, 3)]),
    ("sum", lambda a: a.sum(), [(2, 3)]),
    ("sum_dim", lambda a: a.sum((0, 2)), [(2, 3, 2)]),
    ("sum_dim_keepdim", lambda a: a.sum(-1, keepdim=True), [(2, 3)]),
    ("mean", lambda a: a.mean(), [(2, 3)]),
    ("mean_dim", lambda a: a.mean(1), [(2, 3, 2)]),
    ("view", lambda a: a.view(3, 2), [(2, 3)]),
    ("reshape", lambda a: a.t().reshape(-1), [(2, 3)]),
    ("t", lambda a: a.t(), [(2, 3)]),
    ("transpose", lambda a: a.transpose(0, 2), [(2, 3, 2)]),
    ("permute", lambda a: a.permute(2, 0, 1), [(2, 3, 2)]),
    ("expand", lambda a: a.expand(2, 3, 3), [(3, 1)]),
    ("unsqueeze", lambda a: a.unsqueeze(1), [(2, 3)]),
    ("select", lambda a: a[1], [(3, 2)]),
    ("slice", lambda a: a[:, 1::2], [(2, 5)]),
    ("clone", lambda a: a.clone(), [(2, 3)]),
    ("contiguous", lambda a: a.t().contiguous(), [(2, 3)]),
    ("to_copy", lambda a: ptl.ops.aten._to_copy(a), [(2, 3)]),
    ("pow", lambda a, b: a ** b, [(2, 3), (3,)]),
    ("pow_scalar", lambda a: a ** 3, [(2, 3)]),
    ("copy_", lambda a, b: (a * 1).copy_(b), [(2, 3), (3,)]),
    ("mm", lambda a, b: a.mm(b), [(2, 3), (3, 4)]),
    # convolution, pooling, padding, interpolation, fold (convpool)
    ("convolution", lambda x, w, b: ptl.convolution(x, w, b, [2, 1], [1, 0], [1, 2], False, [0, 0], 2),
     [(1, 4, 4, 5), (2, 2, 2, 2), (2,)]),
    ("im2col", lambda a: ptl.ops.aten.im2col(a, [2, 2], [1, 1], [1, 0], [1, 2]), [(1, 2, 3, 4)]),
    ("col2im", lambda a: ptl.ops.aten.col2im(a, [3, 3], [2, 2], [1, 1], [0, 0], [1, 1]), [(1, 8, 4)]),
    ("max_pool2d_with_indices", lambda a: ptl.max_pool2d_with_indices(a, [2, 2], [1, 1], [1, 1])[0],
     [(1, 2, 3, 3)]),
    ("max_pool3d_with_indices", lambda a: ptl.max_pool3d_with_indices(a, [2, 2, 2])[0], [(1, 1, 2, 4, 2)]),
    ("adaptive_max_pool2d", lambda a: ptl.ops.aten.adaptive_max_pool2d(a, [2, 2])[0], [(1, 3, 3)]),
    ("avg_pool2d", lambda a: ptl.avg_pool2d(a, [2, 2], [1, 1], [1, 1], True, False), [(1, 2, 3, 3)]),
    ("avg_pool3d", lambda a: ptl.avg_pool3d(a, [2, 2, 2]), [(1, 1, 2, 4, 2)]),
    ("_adaptive_avg_pool2d", lambda a: ptl.ops.aten._adaptive_avg_pool2d(a, [2, 3]), [(1, 3, 4)]),
    ("max_unpool2d", lambda a: ptl.ops.aten.max_unpool2d(
        a, ptl.tensor([[[0, 3], [9, 14]]]), [4, 4]), [(1, 2, 2)]),
    ("constant_pad_nd", lambda a: ptl.constant_pad_nd(a, [1, -1, 2, 0], 1.5), [(2, 3)]),
    ("reflection_pad1d", lambda a: ptl.ops.aten.reflection_pad1d(a, [2, 1]), [(2, 4)]),
    ("reflection_pad2d", lambda a: ptl.ops.aten.reflection_pad2d(a, [1, 1, 2, 0]), [(1, 3, 3)]),
    ("reflection_pad3d", lambda a: ptl.ops.aten.reflection_pad3d(a, [1] * 6), [(1, 2, 2, 2)]),
    ("replication_pad1d", lambda a: ptl.ops.aten.replication_pad1d(a, [2, 1]), [(2, 3)]),
    ("replication_pad2d", lambda a: ptl.ops.aten.replication_pad2d(a, [1, 2, 0, 1]), [(1, 2, 2)]),
    ("replication_pad3d", lambda a: ptl.ops.aten.replication_pad3d(a, [1, 0, 1, 0, 0, 1]),
     [(1, 2, 2, 2)]),
    ("_pad_circular", lambda a: ptl.ops.aten._pad_circular(a, [2, 1]), [(2, 3)]),
    ("upsample_nearest1d", lambda a: ptl.ops.aten.upsample_nearest1d(a, [5]), [(1, 2, 3)]),
    ("upsample_nearest2d", lambda a: ptl.ops.aten.upsample_nearest2d(a, [3, 5]), [(1, 1, 2, 3)]),
    ("upsample_nearest3d", lambda a: ptl.ops.aten.upsample_nearest3d(a, [3, 2, 3]), [(1, 1, 2, 2, 2)]),
    ("upsample_linear1d", lambda a: ptl.ops.aten.upsample_linear1d(a, [5], False), [(1, 2, 3)]),
    ("upsample_bilinear2d", lambda a: ptl.ops.aten.upsample_bilinear2d(a, [3, 5], True),
     [(1, 1, 2, 3)]),
    ("upsample_trilinear3d", lambda a: ptl.ops.aten.upsample_trilinear3d(a, [3, 2, 3], False),
     [(1, 1, 2, 2, 2)]),
    ("upsample_bicubic2d", lambda a: ptl.ops.aten.upsample_bicubic2d(a, [4, 3], False), [(1, 1, 3, 2)]),
    ("grid_sampler_2d", lambda x, g: ptl.ops.aten.grid_sampler_2d(x, g * 0.4, 0, 0, False),
     [(1, 2, 3, 3), (1, 2, 2, 2)]),
    ("affine_grid_generator", lambda t: ptl.ops.aten.affine_grid_generator(t, [1, 1, 3, 2], False),
     [(1, 2, 3)]),
    # nn operators; more in nn/test_functional.py
    ("_gelu", lambda a: ptl.nn.functional.gelu(a, approximate="tanh"), [(2, 3)]),
    ("silu", lambda a: ptl.nn.functional.silu(a), [(2, 3)]),
    ("silu_", lambda a: ptl.nn.functional.silu(a * 1, inplace=True), [(2, 3)]),
    ("mish", lambda a: ptl.nn.functional.mish(a), [(2, 3)]),
    ("mish_", lambda a: ptl.nn.functional.mish(a * 1, inplace=True), [(2, 3)]),
    ("elu", lambda a: ptl.nn.functional.elu(a, 0.7), [(2, 3)]),
    ("elu_", lambda a: ptl.nn.functional.selu(a * 1, inplace=True), [(2, 3)]),
    ("leaky_relu", lambda a: ptl.nn.functional.leaky_relu(a, 0.2), [(2, 3)]),
    ("leaky_relu_", lambda a: ptl.nn.functional.leaky_relu(a * 1, 0.2, True), [(2, 3)]),
    ("hardtanh", lambda a: ptl.nn.functional.hardtanh(a, -0.5, 1.5), [(2, 3)]),
    ("hardtanh_", lambda a: ptl.nn.functional.relu6(a * 4, inplace=True), [(2, 3)]),
    ("softplus", lambda a: ptl.nn.functional.softplus(a, 2.0, 1.0), [(2, 3)]),
    ("hardswish", lambda a: ptl.nn.functional.hardswish(a * 3), [(2, 3)]),
    ("hardswish_", lambda a: ptl.nn.functional.hardswish(a * 3, inplace=True), [(2, 3)]),
    ("hardsigmoid", lambda a: ptl.nn.functional.hardsigmoid(a * 3), [(2, 3)]),
    ("hardsigmoid_", lambda a: ptl.nn.functional.hardsigmoid(a * 3, inplace=True), [(2, 3)]),
    ("log_sigmoid", lambda a: ptl.nn.functional.logsigmoid(a), [(2, 3)]),
    ("softshrink", lambda a: ptl.nn.functional.softshrink(a, 0.3), [(2, 3)]),
    ("hardshrink", lambda a: ptl.nn.functional.hardshrink(a, 0.3), [(2, 3)]),
    ("threshold", lambda a: ptl.nn.functional.threshold(a, 0.1, -3.0), [(2, 3)]),
    ("threshold_", lambda a: ptl.nn.functional.threshold(a * 1, 0.1, -3.0, True), [(2, 3)]),
    ("_softmax", lambda a: ptl.softmax(a, 0), [(3, 4)]),
    ("_log_softmax", lambda a: ptl.log_softmax(a, -1), [(3, 4)]),
    ("_log_softmax_dim0", lambda a: ptl.log_softmax(a, 0), [(3, 20)]),
    ("nll_loss_nd", lambda a: ptl.nn.functional.nll_loss(
        a, ptl.tensor([1, 0, 3]), weight=ptl.tensor([1.0, 2.0, 0.5, 3.0], dtype=ptl.float64)),
     [(3, 4)]),
    ("binary_cross_entropy", lambda a: ptl.nn.functional.binary_cross_entropy(
        a.sigmoid(), ptl.tensor([[0.0, 1.0, 0.3], [1.0, 0.2, 0.0]], dtype=ptl.float64)),
     [(2, 3)]),
    ("embedding", lambda w: ptl.nn.functional.embedding(ptl.tensor([[0, 2], [2, 3]]), w),
     [(4, 3)]),
]

POSITIVE = {"log", "log_", "sqrt", "sqrt_", "div", "div_", "reciprocal", "pow"}


@pytest.mark.parametrize("name, fn, shapes", FORMULAS, ids=[f[0] for f in FORMULAS])
def test_gradcheck_formula(name, fn, shapes):
    low, high = (0.5, 2.0) if name in POSITIVE else (-2.0, 2.0)
    if name in ("abs", "relu", "relu_"):
        low, high = 0.2, 2.0   # away from the kink
    inputs = [leaf(s, seed=i, low=low, high=high) for i, s in enumerate(shapes)]
    if name in ("abs", "relu", "relu_"):
        with ptl.no_grad():
            inputs[0].mul_(ptl.tensor(np.sign(np.random.default_rng(5).uniform(-1, 1, shapes[0]))))
    assert gradcheck(fn, inputs)


@pytest.mark.parametrize("name, fn, shapes", [f for f in FORMULAS if f[0] in
                         ("mul", "div", "exp", "log", "tanh", "sigmoid", "sum_dim", "mm", "sin", "sqrt")],
                         ids=lambda v: v if isinstance(v, str) else "")
def test_gradgradcheck_formula(name, fn, shapes):
    low, high = (0.5, 2.0) if name in POSITIVE else (-2.0, 2.0)
    inputs = [leaf(s, seed=i, low=low, high=high) for i, s in enumerate(shapes)]
    assert gradgradcheck(fn, inputs)


def test_gradcheck_reports_mismatch():
    a = leaf((3,))
    with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"):
        # a deliberately wrong gradient: detach one factor
        gradcheck(lambda x: x * x.detach(), (a,))


# ---- in-place ops on views: CopySlices (compared with torch) ----

def _copy_slices_cases(lib):
    def mul_view(x, w):
        y = x * 1
        y[:, 1].mul_(w)
        return y * y

    def setitem_zero(x, w):
        y = x * 2
        y[:, 0] = 0
        return y * w.sum()

    def iadd_slice(x, w):
        y = x * 2
        y[1:] += w
        return y * y

    def relu_view(x, w):
        y = x - 0.5
        y[0].relu_()
        return y * y * w

    def copy_into_zeros(x, w):
        z = lib.zeros(3, 3, dtype=lib.float64)
        z[1:].copy_(x[:2] * w[0])
        return z * z

    def view_output(x, w):
        y = x.clone()
        v = y[:, 2]
        v.mul_(w)
        return v * 3

    return [mul_view, setitem_zero, iadd_slice, relu_view, copy_into_zeros, view_output]


@pytest.mark.parametrize("k", range(6))
def test_copy_slices_matches_torch_and_gradcheck(k):
    xs = np.random.default_rng(k).uniform(-1, 1, (3, 3))
    ws = np.array([0.7, -1.3, 2.0])

    def run(lib):
        x = lib.tensor(xs, dtype=lib.float64, requires_grad=True)
        w = lib.tensor(ws, dtype=lib.float64, requires_grad=True)
        out = _copy_slices_cases(lib)[k](x, w)
        out.sum().backward()
        return {"output": out.detach(), "x.grad": x.grad, "w.grad": w.grad}
    golden.assert_same_results(run, rtol=1e-5, atol=1e-8)
    x = ptl.tensor(xs, dtype=ptl.float64, requires_grad=True)
    w = ptl.tensor(ws, dtype=ptl.float64, requires_grad=True)
    assert gradcheck(_copy_slices_cases(ptl)[k], (x, w))


def test_copy_slices_graph_and_errors():
    x = ptl.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x.clone()
    v = y[:, 0]
    v.mul_(2)
    assert type(y.grad_fn).__name__ == "CopySlices"
    assert type(v.grad_fn).__name__ == "AsStridedBackward0"
    nf = y.grad_fn.next_functions
    assert type(nf[0][0]).__name__ == "CloneBackward0" and nf[1] == (None, 0)
    assert v.grad_fn.next_functions[0][0] is y.grad_fn
    with pytest.raises(RuntimeError, match=re.escape(
            "a view of a leaf Variable that requires grad is being used in an in-place operation.")):
        x[0].mul_(2)
    d = x.detach()
    d[0].mul_(2)   # a view without grad of a base that requires none: plain in-place
    assert d.grad_fn is None


def test_copy_slices_frees_its_graph():
    def once():
        x = ptl.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        y = x * 1
        y[:, 0].mul_(x[0])
        y[1] = 0
        y.sum().backward()

    assert_no_leak(once, 30)


def test_saved_results_do_not_leak_without_backward():
    """A node that saves its own output must not keep that output alive (no cycle)."""
    a = leaf((10,))
    gc.collect()
    before = _C._live_counts()
    for _ in range(50):
        y = a.exp()              # ExpBackward0 saves its result
        z = a.sigmoid().tanh()   # two saved results in a chain
        del y, z
    gc.collect()
    assert _C._live_counts() == before


def test_detach_in_place_and_inference_mode_flag():
    a = ptl.tensor([1.0, 2.0], requires_grad=True)
    b = a * 2
    assert b.detach_() is b
    assert b.grad_fn is None and not b.requires_grad and b.is_leaf
    v = (a * 1)[0:1]
    with pytest.raises(RuntimeError, match="Can't detach views in-place. Use detach\\(\\) instead."):
        v.detach_()
    w = ptl.ones(3)[:2]   # a view without grad too, as PyTorch's
    with pytest.raises(RuntimeError, match="Can't detach views in-place. Use detach\\(\\) instead."):
        w.detach_()
    assert ptl.ones(3).detach_().shape == (3,)
    assert not ptl.is_inference_mode_enabled()
    with ptl.inference_mode():
        assert ptl.is_inference_mode_enabled() and not ptl.is_grad_enabled()
        with ptl.inference_mode(False):
            assert not ptl.is_inference_mode_enabled()
    assert not ptl.is_inference_mode_enabled() and ptl.is_grad_enabled()


def test_many_inputs_get_gradients():
    # more than 32 edges, and more than the 64 inputs the Autograd kernel keeps inline
    for n in (40, 70):
        xs = [ptl.ones(2, requires_grad=True) for _ in range(n)]
        ptl.cat(xs).sum().backward()
        assert all(x.grad.tolist() == [1.0, 1.0] for x in xs)
    assert tuple(ptl.cat([ptl.ones(2) for _ in range(70)]).shape) == (140,)


@pytest.mark.parametrize("name", ["view_as", "reshape_as", "expand_as"])
def test_the_shape_argument_of_the_as_ops_is_not_differentiated(name):
    """view_as / reshape_as / expand_as read only other's sizes (composite ops, as in
    PyTorch): other requiring grad neither makes the result require grad nor gets a gradient."""
    shapes = {"view_as": ((2, 3), (3, 2)), "reshape_as": ((2, 3), (6,)),
              "expand_as": ((3, 1), (2, 3, 4))}[name]
    a = ptl.randn(*shapes[0], dtype=ptl.float64)
    b = ptl.randn(*shapes[1], dtype=ptl.float64, requires_grad=True)
    out = getattr(a, name)(b)
    assert not out.requires_grad and out.grad_fn is None and out.shape == b.shape
    a.requires_grad_()
    out = getattr(a, name)(b)
    assert out.requires_grad
    assert type(out.grad_fn).__name__ == ("ExpandBackward0" if name == "expand_as"
                                          else "ViewBackward0")
    (out * 2).sum().backward()
    assert b.grad is None
    np.testing.assert_array_equal(a.grad.numpy(), np.full(shapes[0], 2.0 * (
        8 if name == "expand_as" else 1)))
    assert gradcheck(lambda x: getattr(x, name)(b), (a,))


def test_a_seed_of_another_dtype_is_cast_to_its_roots():
    """PyTorch casts a grad_output of another real dtype to its output's dtype, so a leaf's
    gradient keeps the leaf's dtype even when the leaf is the root."""
    x = ptl.ones(3, dtype=ptl.float64, requires_grad=True)
    g = ptl.tensor([1.0, 2.0, 3.0])                    # float32
    (gx,) = ptl.autograd.grad(x, x, g)
    assert gx.dtype == ptl.float64 and gx.tolist() == [1.0, 2.0, 3.0]
    x.backward(g)
    assert x.grad.dtype == ptl.float64 and x.grad.tolist() == [1.0, 2.0, 3.0]
    y = x * 2
    (gy,) = ptl.autograd.grad(y, y, g.to(ptl.float16))
    assert gy.dtype == ptl.float64
    half = ptl.ones(2, dtype=ptl.float16, requires_grad=True)
    (gh,) = ptl.autograd.grad(half, half, ptl.tensor([0.1, 0.2], dtype=ptl.float64))
    assert gh.dtype == ptl.float16 and gh.tolist() == ptl.tensor([0.1, 0.2]).half().tolist()


@pytest.mark.parametrize("switch,query", [
    ("set_multithreading_enabled", "is_multithreading_enabled"),
    ("enforce_grad_layout_policy", None)])
def test_engine_switches(switch, query):
    """PyTorch 2.13's function-or-context-manager engine switches: set now, restored on exit
    (and by the decorator); pytorchlite's engine satisfies both settings (grad_mode.py)."""
    lib = ptl.autograd
    setter = getattr(lib, switch)
    ask = getattr(lib, query) if query else (lambda: ptl.autograd.grad_mode._switches
                                             .grad_layout_policy)
    assert setter(True) is not None and ask() is True
    with setter(False):
        assert ask() is False
        p = ptl.empty(2, 3, 4).permute(2, 0, 1).requires_grad_()
        (p * 2).sum().backward()
        assert p.grad.stride() == p.stride() and (p.grad == 2).all()
    assert ask() is True
    setter(False)
    assert ask() is False
    deco = setter(False)   # sets now, as PyTorch's (set_grad_enabled's) constructor does
    setter(True)

    @deco
    def inside():
        return ask()
    assert inside() is False and ask() is True
    assert lib.is_view_replay_enabled() is False


@torch_ref
def test_engine_switches_match_torch():
    for lib in (ptl, torch):
        a = lib.autograd
        assert a.is_multithreading_enabled() is True and a.is_view_replay_enabled() is False
        with a.set_multithreading_enabled(False):
            assert a.is_multithreading_enabled() is False
        assert a.is_multithreading_enabled() is True
        with a.enforce_grad_layout_policy(False):
            pass
