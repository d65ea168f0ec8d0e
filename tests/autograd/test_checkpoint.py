"""utils.checkpoint (Note [Checkpoint]): checkpointed functions give the gradients of the plain
ones exactly (float64), dropout draws the same mask on the rerun, the forward keeps no
intermediate alive, nesting and checkpoint_sequential, and PyTorch's warnings and errors.
Every test runs on pytorchlite and, where installed, on PyTorch (golden.LIBRARIES)."""
import gc
import importlib
import warnings

import numpy as np
import pytest

import pytorchlite as ptl
from golden import LIBRARIES

MODES = [True, False]


def ids(m):
    return m.__name__


def cp(lib):
    return importlib.import_module(lib.__name__ + ".utils.checkpoint")


def make_net(lib, dropout=0.0):
    lib.manual_seed(0)
    nn = lib.nn
    return nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Dropout(dropout), nn.Linear(7, 4),
                         nn.Sigmoid(), nn.Linear(4, 3)).double()


def grads(net, x):
    out = [p.grad.clone() for p in net.parameters()]
    if x.requires_grad:
        out.append(x.grad.clone())
    return out


def run(lib, net, x, fn, seed=3):
    net.zero_grad()
    x.grad = None
    lib.manual_seed(seed)
    y = fn(x)
    (y * y).sum().backward()
    return y.detach().clone(), grads(net, x)


def assert_same(a, b):
    ya, ga = a
    yb, gb = b
    np.testing.assert_array_equal(ya.numpy(), yb.numpy())
    assert len(ga) == len(gb)
    for u, v in zip(ga, gb):
        np.testing.assert_array_equal(u.numpy(), v.numpy())


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
@pytest.mark.parametrize("reentrant", MODES)
@pytest.mark.parametrize("dropout", [0.0, 0.5])
def test_gradients_equal_the_plain_model(lib, reentrant, dropout):
    net = make_net(lib, dropout)
    x = lib.randn(6, 5, dtype=lib.float64, requires_grad=True)
    plain = run(lib, net, x, net)
    ckpt = run(lib, net, x, lambda t: cp(lib).checkpoint(net, t, use_reentrant=reentrant))
    assert_same(plain, ckpt)
    if dropout:
        other_seed = run(lib, net, x, net, seed=4)
        assert not np.array_equal(other_seed[0].numpy(), plain[0].numpy())


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
@pytest.mark.parametrize("reentrant", MODES)
def test_rng_state_after_checkpoint_is_as_without_it(lib, reentrant):
    net = make_net(lib, 0.5)
    x = lib.randn(4, 5, dtype=lib.float64, requires_grad=True)
    lib.manual_seed(11)
    net(x).sum().backward()
    after_plain = lib.rand(3)
    lib.manual_seed(11)
    cp(lib).checkpoint(net, x, use_reentrant=reentrant).sum().backward()
    np.testing.assert_array_equal(lib.rand(3).numpy(), after_plain.numpy())


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_preserve_rng_state_false_draws_a_new_mask(lib):
    net = make_net(lib, 0.5)
    x = lib.ones(8, 5, dtype=lib.float64, requires_grad=True)
    lib.manual_seed(0)
    y = cp(lib).checkpoint(net, x, use_reentrant=False, preserve_rng_state=False)
    plain = run(lib, net, x, net, seed=0)
    # the rerun draws after the forward's draw: its mask differs from the forward's
    net.zero_grad()
    x.grad = None
    (y * y).sum().backward()
    assert not all(np.array_equal(a.numpy(), b.numpy()) for a, b in zip(plain[1], grads(net, x)))


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_input_without_grad_reentrant_warns_and_output_has_no_grad(lib):
    net = make_net(lib)
    x = lib.randn(3, 5, dtype=lib.float64)
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True. "
                                         "Gradients will be None"):
        y = cp(lib).checkpoint(net, x, use_reentrant=True)
    assert not y.requires_grad


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_input_without_grad_non_reentrant_trains_the_parameters(lib):
    net = make_net(lib)
    x = lib.randn(3, 5, dtype=lib.float64)
    plain = run(lib, net, x, net)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ckpt = run(lib, net, x, lambda t: cp(lib).checkpoint(net, t, use_reentrant=False))
    assert_same(plain, ckpt)


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
@pytest.mark.parametrize("reentrant", MODES)
def test_several_inputs_and_outputs_and_non_tensor_arguments(lib, reentrant):
    a = lib.randn(3, 4, dtype=lib.float64, requires_grad=True)
    b = lib.randn(4, dtype=lib.float64, requires_grad=True)

    def f(x, scale, y):
        h = (x * y).sin() * scale
        return h.exp(), h.sum(1)

    def total(outs):
        return (outs[0] * outs[0]).sum() + outs[1].pow(3).sum()

    total(f(a, 2.5, b)).backward()
    ref = [a.grad.clone(), b.grad.clone()]
    a.grad = b.grad = None
    total(cp(lib).checkpoint(f, a, 2.5, b, use_reentrant=reentrant)).backward()
    for g, r in zip([a.grad, b.grad], ref):
        np.testing.assert_array_equal(g.numpy(), r.numpy())


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_non_reentrant_passes_kwargs_and_works_with_autograd_grad(lib):
    x = lib.randn(5, dtype=lib.float64, requires_grad=True)

    def f(t, *, power):
        return t.sin().pow(power)

    y = cp(lib).checkpoint(f, x, use_reentrant=False, power=3)
    (g,) = lib.autograd.grad(y.sum(), x)
    xv = x.detach().numpy()
    np.testing.assert_allclose(g.numpy(), 3 * np.sin(xv) ** 2 * np.cos(xv), rtol=1e-13)


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_non_reentrant_double_backward(lib):
    x = lib.randn(4, dtype=lib.float64, requires_grad=True)
    y = cp(lib).checkpoint(lambda t: t.pow(3).sin(), x, use_reentrant=False)
    (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
    (h,) = lib.autograd.grad(g.sum(), x)
    xv = x.detach().numpy()
    u = xv ** 3
    want = 6 * xv * np.cos(u) - 9 * xv ** 4 * np.sin(u)
    np.testing.assert_allclose(h.numpy(), want, rtol=1e-12)


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_reentrant_refuses_autograd_grad_and_backward_inputs(lib):
    x = lib.randn(3, dtype=lib.float64, requires_grad=True)
    msg = ("^When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad\\(\\) "
           "or passing an `inputs` parameter to .backward\\(\\). To resolve this error, you "
           "can either set use_reentrant=False, or call .backward\\(\\) without passing the "
           "`inputs` argument.$")
    y = cp(lib).checkpoint(lambda t: t.sin(), x, use_reentrant=True).sum()
    with pytest.raises(RuntimeError, match=msg):
        lib.autograd.grad(y, x, retain_graph=True)
    with pytest.raises(RuntimeError, match=msg):
        y.backward(inputs=[x], retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), np.cos(x.detach().numpy()), rtol=1e-14)


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
@pytest.mark.parametrize("reentrant", [False])
def test_gradcheck_through_checkpoint(lib, reentrant):
    x = lib.randn(3, 2, dtype=lib.float64, requires_grad=True)
    w = lib.randn(2, 2, dtype=lib.float64, requires_grad=True)

    def f(a, b):
        return cp(lib).checkpoint(lambda p, q: (p @ q).tanh() * p, a, b,
                                  use_reentrant=reentrant)
    assert lib.autograd.gradcheck(f, (x, w))


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
@pytest.mark.parametrize("outer,inner", [(False, False), (True, True), (False, True),
                                         (True, False)])
def test_nested_checkpoints(lib, outer, inner):
    net = make_net(lib, 0.3)
    first, rest = net[:3], net[3:]
    x = lib.randn(4, 5, dtype=lib.float64, requires_grad=True)

    def body(t):
        h = cp(lib).checkpoint(first, t, use_reentrant=inner)
        return rest(h * 2)

    plain = run(lib, net, x, lambda t: rest(first(t) * 2))
    ckpt = run(lib, net, x, lambda t: cp(lib).checkpoint(body, t, use_reentrant=outer))
    assert_same(plain, ckpt)


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
@pytest.mark.parametrize("reentrant", MODES)
@pytest.mark.parametrize("segments", [1, 2, 3, 6])
def test_checkpoint_sequential_equals_the_sequential(lib, reentrant, segments):
    net = make_net(lib, 0.4)
    x = lib.randn(5, 5, dtype=lib.float64, requires_grad=True)
    plain = run(lib, net, x, net)
    ckpt = run(lib, net, x, lambda t: cp(lib).checkpoint_sequential(
        net, segments, t, use_reentrant=reentrant))
    assert_same(plain, ckpt)
    as_list = run(lib, net, x, lambda t: cp(lib).checkpoint_sequential(
        list(net.children()), segments, t, use_reentrant=reentrant))
    assert_same(plain, as_list)


@pytest.mark.parametrize("reentrant", [None] + MODES)
def test_forward_keeps_no_intermediate(reentrant):
    """pytorchlite's allocator counts the bytes held: after the forward, the plain function
    holds its two saved intermediates (and the output), a checkpointed one only the output."""
    n = 20000
    size = 8 * n
    x = ptl.randn(n, dtype=ptl.float64, requires_grad=True)

    def f(t):
        a = t.sin()
        b = a.exp()
        return (b * a).cos()

    gc.collect()
    before = ptl.cpu.memory_allocated()
    saved0 = ptl.cpu.saved_tensor_memory()
    if reentrant is None:
        y = f(x)
    else:
        y = cp(ptl).checkpoint(f, x, use_reentrant=reentrant)
    gc.collect()
    held = ptl.cpu.memory_allocated() - before
    # the bytes the graph's nodes save (each storage once): x, a, b and b * a; or only x
    assert ptl.cpu.saved_tensor_memory() - saved0 == (4 * size if reentrant is None else size)
    if reentrant is None:
        assert held >= 4 * size     # a, b, b * a (saved by cos) and the output
    else:
        assert size <= held < 2 * size
    y.sum().backward()
    xv = x.detach().numpy()
    a = np.sin(xv)
    c = np.exp(a) * a
    want = -np.sin(c) * np.exp(a) * (a + 1) * np.cos(xv)
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_non_reentrant_keeps_placeholders_not_tensors(lib):
    packed = []

    def pack(t):
        packed.append(t)
        return t

    x = lib.randn(10, dtype=lib.float64, requires_grad=True)
    with lib.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = cp(lib).checkpoint(lambda t: t.sin().exp().cos(), x, use_reentrant=False)
    # the outer hooks keep the input; the checkpoint's own hooks, innermost, everything inside
    assert len(packed) == 1 and packed[0] is x
    y.sum().backward()


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_missing_use_reentrant_warns_and_means_reentrant(lib):
    x = lib.randn(3, dtype=lib.float64, requires_grad=True)
    msg = ("torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
           "Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an "
           "exception. use_reentrant=False is recommended, but if you need to preserve the "
           "current default behavior, you can pass use_reentrant=True. Refer to docs for more "
           "details on the differences between the two variants.")
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        y = cp(lib).checkpoint(lambda t: t * 2, x)
    assert [(w.category, str(w.message)) for w in rec] == [(UserWarning, msg)]
    if lib is ptl:   # PyTorch's points into torch._dynamo's wrapper
        assert rec[0].filename == __file__
    assert type(y.grad_fn).__name__ == "CheckpointFunctionBackward"
    msg = ("torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should "
           "be passed explicitly. In version 2.9 we will raise an exception if use_reentrant "
           "is not passed. use_reentrant=False is recommended, but if you need to preserve "
           "the current default behavior, you can pass use_reentrant=True. Refer to docs for "
           "more details on the differences between the two variants.")
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        cp(lib).checkpoint_sequential([lambda t: t * 2, lambda t: t + 1], 2, x)
    assert (rec[0].category, str(rec[0].message)) == (UserWarning, msg)


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_argument_errors(lib):
    c = cp(lib)
    x = lib.randn(3, dtype=lib.float64, requires_grad=True)
    with pytest.raises(ValueError, match="^Unexpected keyword arguments: a,b$"):
        c.checkpoint(lambda t, **k: t, x, use_reentrant=True, a=1, b=2)
    with pytest.raises(ValueError, match=r"^Passing `context_fn` or `debug` is only supported "
                                         r"when use_reentrant=False.$"):
        c.checkpoint(lambda t: t, x, use_reentrant=True,
                     context_fn=lambda: (None, None))
    with pytest.raises(ValueError, match="^Passing `context_fn`"):
        c.checkpoint(lambda t: t, x, use_reentrant=True, debug=True)
    with pytest.raises(ValueError, match=r"^determinism_check should be one of \['default', "
                                         r"'none'\], but got sometimes$"):
        c.checkpoint(lambda t: t, x, use_reentrant=False, determinism_check="sometimes")
    with pytest.raises(ValueError, match="^Unexpected keyword arguments: foo$"):
        c.checkpoint_sequential([lambda t: t], 1, x, use_reentrant=True, foo=1)


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_reentrant_output_without_grad_fails_in_backward(lib):
    x = lib.randn(3, dtype=lib.float64, requires_grad=True)
    y = cp(lib).checkpoint(lambda t: t.detach() * 2, x, use_reentrant=True)
    with pytest.raises(RuntimeError, match="^none of output has requires_grad=True, this "
                                           "checkpoint\\(\\) is not necessary$"):
        y.sum().backward()


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_non_reentrant_rerun_saving_more_or_fewer_tensors_fails(lib):
    calls = []

    def fewer_on_rerun(t):
        calls.append(1)
        return t.sin() if len(calls) == 1 else t + 1.0

    x = lib.randn(3, dtype=lib.float64, requires_grad=True)
    y = cp(lib).checkpoint(fewer_on_rerun, x, use_reentrant=False)
    with pytest.raises(RuntimeError, match="^torch.utils.checkpoint: A different number of "
                                           "tensors was saved during the original forward "
                                           "and recomputation.\nNumber of tensors saved during "
                                           "forward: 1\nNumber of tensors saved during "
                                           "recomputation: 0."):
        y.sum().backward()


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_non_reentrant_rerun_saving_more_tensors_fails(lib):
    calls = []

    def more_on_rerun(t):
        calls.append(1)
        return t.sin() if len(calls) == 1 else t.sin().sin()

    x = lib.randn(3, dtype=lib.float64, requires_grad=True)
    # PyTorch's early stop (the default) would end the rerun once it has what it needs
    y = cp(lib).checkpoint(more_on_rerun, x, use_reentrant=False, early_stop=False)
    with pytest.raises(cp(lib).CheckpointError,
                       match="^torch.utils.checkpoint: trying to save more tensors during "
                             "recomputation than during the original forward pass.\n"):
        y.sum().backward()


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_non_reentrant_rerun_with_other_shapes_fails(lib):
    calls = []

    def other_shape_on_rerun(t):
        calls.append(1)
        u = t if len(calls) == 1 else t.unsqueeze(0)
        return u.sin().sum()

    x = lib.randn(3, dtype=lib.float64, requires_grad=True)
    y = cp(lib).checkpoint(other_shape_on_rerun, x, use_reentrant=False)
    with pytest.raises(cp(lib).CheckpointError,
                       match="^torch.utils.checkpoint: Recomputed values for the following "
                             "tensors have different metadata than during the forward pass.\n"
                             "tensor at position 0:\nsaved metadata: {'shape': "):
        y.backward()


def test_helpers():
    c = cp(ptl)
    x = ptl.ones(2, requires_grad=True)
    out = c.detach_variable((x, 3))
    assert out[1] == 3 and out[0].requires_grad and out[0].grad_fn is None
    assert out[0] is not x
    with pytest.raises(RuntimeError, match="^Only tuple of tensors is supported. Got "
                                           "Unsupported input type: list$"):
        c.detach_variable([x])
    with c.set_checkpoint_debug_enabled(False):
        assert c._checkpoint_debug_enabled is False
    assert c._checkpoint_debug_enabled is None
    c.DefaultDeviceType.set_device_type("cpu")
    assert c.DefaultDeviceType.get_device_type() == "cpu"
    # debug=True is accepted (the errors carry no operator trace here)
    y = c.checkpoint(lambda t: t.sin(), x, use_reentrant=False, debug=True)
    y.sum().backward()
    # float32 cos is within 1 ulp of the float64 value (Note [Vector float32 sin, cos])
    np.testing.assert_allclose(x.grad.numpy(), np.cos(x.detach().numpy().astype(np.float64)),
                               rtol=1.2e-7)


@pytest.mark.parametrize("reentrant", MODES)
def test_backward_releases_the_rerun(reentrant):
    """Once backward has used them, the rerun's tensors are not kept for as long as the output
    (and its graph) lives: what stays is the output and the input's gradient."""
    n = 20000
    size = 8 * n
    x = ptl.randn(n, dtype=ptl.float64, requires_grad=True)
    gc.collect()
    before = ptl.cpu.memory_allocated()
    y = cp(ptl).checkpoint(lambda t: t.sin().exp().cos(), x, use_reentrant=reentrant)
    y.sum().backward()
    gc.collect()
    assert 2 * size <= ptl.cpu.memory_allocated() - before < 3 * size
    assert y.grad_fn is not None


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_retained_graph_second_backward_reruns(lib):
    net = make_net(lib, 0.5)
    inp = lib.randn(6, 5, dtype=lib.float64, requires_grad=True)
    lib.manual_seed(1)
    y = cp(lib).checkpoint(net, inp, use_reentrant=False).sum()
    y.backward(retain_graph=True)
    first = inp.grad.clone()
    inp.grad = None
    y.backward()
    np.testing.assert_array_equal(inp.grad.numpy(), first.numpy())


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
@pytest.mark.parametrize("reentrant", MODES)
def test_rerun_under_the_forwards_autocast(lib, reentrant):
    lin = lib.nn.Linear(4, 3)
    x = lib.randn(2, 4, requires_grad=True)
    with lib.autocast("cpu", dtype=lib.bfloat16):
        plain = lin(x).float().sin()
    plain.sum().backward()
    want = [x.grad.clone(), lin.weight.grad.clone()]
    x.grad = lin.weight.grad = None
    with lib.autocast("cpu", dtype=lib.bfloat16):
        y = cp(lib).checkpoint(lambda t: lin(t).float().sin(), x, use_reentrant=reentrant)
    y.sum().backward()     # outside the autocast region: the rerun restores it
    np.testing.assert_array_equal(x.grad.numpy(), want[0].numpy())
    np.testing.assert_array_equal(lin.weight.grad.numpy(), want[1].numpy())


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_early_stop_and_device_state_helpers(lib):
    c = cp(lib)
    with c.set_checkpoint_early_stop(False):
        x = lib.randn(3, dtype=lib.float64, requires_grad=True)
        c.checkpoint(lambda t: t.exp(), x, use_reentrant=False).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp(x.detach().numpy()), rtol=1e-15)
    devices, states = c.get_device_states(x)
    assert devices == [] and states == []
    c.set_device_states(devices, states)


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_context_fn_wraps_the_forward_and_the_rerun(lib):
    import contextlib
    events = []

    @contextlib.contextmanager
    def tag(name):
        events.append(name + " in")
        yield
        events.append(name + " out")

    def body(t):
        events.append("body")
        return t.sin()

    x = lib.randn(3, dtype=lib.float64, requires_grad=True)
    # (PyTorch's early stop would leave the rerun's context by an exception)
    y = cp(lib).checkpoint(body, x, use_reentrant=False, early_stop=False,
                           context_fn=lambda: (tag("forward"), tag("rerun")))
    assert events == ["forward in", "body", "forward out"]
    y.sum().backward()
    assert events[3:] == ["rerun in", "body", "rerun out"]
    np.testing.assert_allclose(x.grad.numpy(), np.cos(x.detach().numpy()), rtol=1e-15)


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_determinism_check_none_skips_the_metadata_check(lib):
    calls = []

    def reshaped_on_rerun(t):
        calls.append(1)
        return (t if len(calls) == 1 else t.reshape(1, 3)).sin().sum()

    x = lib.randn(3, dtype=lib.float64, requires_grad=True)
    y = cp(lib).checkpoint(reshaped_on_rerun, x, use_reentrant=False, determinism_check="none")
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), np.cos(x.detach().numpy()), rtol=1e-15)


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
@pytest.mark.parametrize("reentrant", MODES)
def test_under_no_grad_it_is_a_plain_call(lib, reentrant):
    x = lib.randn(4, dtype=lib.float64, requires_grad=True)
    with lib.no_grad():
        y = cp(lib).checkpoint(lambda t: t.exp() * 2, x, use_reentrant=reentrant)
    assert not y.requires_grad
    np.testing.assert_allclose(y.numpy(), 2 * np.exp(x.detach().numpy()), rtol=1e-15)


def test_partial_runs_are_per_thread():
    import threading
    x = ptl.randn(3, dtype=ptl.float64, requires_grad=True)
    seen = []

    def in_other_thread():
        seen.append(ptl.autograd._is_checkpoint_valid())

    def f(t):
        th = threading.Thread(target=in_other_thread)
        th.start()
        th.join()
        seen.append(ptl.autograd._is_checkpoint_valid())
        return t.sin()

    class Probe(ptl.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t.clone()

        @staticmethod
        def backward(ctx, g):
            f(g)
            return g

    ptl.autograd.grad(Probe.apply(x).sum(), x)
    assert seen == [True, False]


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
@pytest.mark.parametrize("reentrant", MODES)
def test_non_tensor_outputs_pass_through(lib, reentrant):
    x = lib.randn(3, dtype=lib.float64, requires_grad=True)
    out = cp(lib).checkpoint(lambda t: (t.sin(), 3, None), x, use_reentrant=reentrant)
    assert isinstance(out, tuple) and out[1:] == (3, None) and out[0].requires_grad
    out[0].sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.cos(x.detach().numpy()), rtol=1e-15)


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
@pytest.mark.parametrize("reentrant", MODES)
def test_training_a_transformer_block_is_unchanged(lib, reentrant):
    """Three SGD steps of a transformer encoder layer (dropout on) with and without
    checkpointing give the same parameters, bit for bit."""
    def train(checkpointed):
        lib.manual_seed(0)
        layer = lib.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.2,
                                               batch_first=True).double()
        opt = lib.optim.SGD(layer.parameters(), lr=0.1)
        lib.manual_seed(1)
        for _ in range(3):
            # the reentrant form needs an input requiring grad for its output to have one
            x = lib.randn(2, 5, 8, dtype=lib.float64).requires_grad_(reentrant)
            y = cp(lib).checkpoint(layer, x, use_reentrant=reentrant) if checkpointed \
                else layer(x)
            loss = (y * y).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        return [p.detach().numpy().copy() for p in layer.parameters()]

    for a, b in zip(train(False), train(True)):
        np.testing.assert_array_equal(a, b)
