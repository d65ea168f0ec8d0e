"""_C._Reducer (src/python/reducer.c), DDP's gradient buckets in C, in one process: the C
post-accumulate-grad hooks it registers (Note [C post-accumulate-grad hooks]) fire after the
Python ones, count each bucket down once per backward, launch the buckets in order with their
gradients copied in (times the bucket's scale), and go away with the reducer, also from inside
the engine's pass; bad arguments raise."""
import gc
import weakref

import numpy as np
import pytest

import pytorchlite as torch
from pytorchlite import _C


class Buckets:
    """A reducer over params with the given buckets (lists of parameter indices), each with
    its own flat tensor; launch(b) records b and a copy of the bucket's flat tensor."""

    def __init__(self, params, buckets, as_view=False, launch=None, disarm_last=True):
        self.params, self.buckets = params, buckets
        self.flats, views = [], [None] * len(params)
        for indices in buckets:
            flat = torch.zeros(sum(params[i].numel() for i in indices), dtype=params[0].dtype)
            o = 0
            for i in indices:
                views[i] = flat[o:o + params[i].numel()].view(params[i].shape)
                o += params[i].numel()
            self.flats.append(flat)
        self.views = views
        self.launched = []
        self.disarm_last = disarm_last
        self.reducer = _C._Reducer(params, buckets, views, launch or self.launch, as_view)

    def launch(self, b):
        self.launched.append((b, self.flats[b].clone()))
        if self.disarm_last and b == len(self.buckets) - 1:
            self.reducer.armed = False

    def order(self):
        return [b for b, _ in self.launched]


def mlp_params(seed=0, dtype=torch.float64):
    gen = np.random.default_rng(seed)
    shapes = [(5, 4), (5,), (3, 5), (3,)]
    return [torch.tensor(gen.standard_normal(s), dtype=dtype).requires_grad_() for s in shapes]


def mlp_loss(params, x):
    w1, b1, w2, b2 = params
    return (torch.tanh(x @ w1.t() + b1) @ w2.t() + b2).pow(2).sum()


def numpy_grads(params, x):
    w1, b1, w2, b2 = (p.detach().numpy() for p in params)
    x = x.numpy()
    h = np.tanh(x @ w1.T + b1)
    out = h @ w2.T + b2
    g_out = 2 * out
    g_h = g_out @ w2 * (1 - h ** 2)
    return [g_h.T @ x, g_h.sum(0), g_out.T @ h, g_out.sum(0)]


X = torch.tensor(np.random.default_rng(9).standard_normal((6, 4)))


@pytest.mark.parametrize("buckets", [[[3, 2, 1, 0]], [[3, 2], [1, 0]], [[3], [2], [1], [0]],
                                     [[0, 1], [2, 3]]])
def test_buckets_launch_in_order_with_their_gradients(buckets):
    params = mlp_params()
    r = Buckets(params, buckets)
    r.reducer.prepare()
    mlp_loss(params, X).backward()
    # whatever order the gradients arrive in, bucket b launches after bucket b - 1, once
    assert r.order() == list(range(len(buckets)))
    want = numpy_grads(params, X)
    for b, flat in r.launched:
        got = np.concatenate([want[i].reshape(-1) for i in buckets[b]])
        np.testing.assert_allclose(flat.numpy(), got, rtol=1e-12, atol=1e-12)
    # .grad is the parameter's own tensor, untouched
    for p, g in zip(params, want):
        np.testing.assert_allclose(p.grad.numpy(), g, rtol=1e-12, atol=1e-12)
        assert all(p.grad.data_ptr() != f.data_ptr() for f in r.flats)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_scale_multiplies_while_copying(dtype):
    params = mlp_params(1, dtype)
    r = Buckets(params, [[3, 2], [1, 0]])
    r.reducer.set_scale(0, 0.25)
    r.reducer.set_scale(1, 1.0 / 3)
    r.reducer.prepare()
    mlp_loss(params, X.to(dtype)).backward()
    want = numpy_grads([p.double() for p in params], X)
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    for (b, flat), scale in zip(r.launched, (0.25, 1.0 / 3)):
        got = np.concatenate([want[i].reshape(-1) for i in r.buckets[b]]) * scale
        np.testing.assert_allclose(flat.double().numpy(), got, rtol=tol, atol=tol)
    r.reducer.set_scale(0, 1.0)        # back to a plain copy
    r.reducer.prepare()
    for p in params:
        p.grad = None
    mlp_loss(params, X.to(dtype)).backward()
    got = np.concatenate([want[i].reshape(-1) for i in r.buckets[0]])
    np.testing.assert_allclose(r.launched[-2][1].double().numpy(), got, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16,
                                   torch.complex128])
@pytest.mark.parametrize("scale", [1.0, 0.5])
@pytest.mark.parametrize("strided_grad", [False, True])
def test_copies_without_and_through_the_dispatcher_agree(dtype, scale, strided_grad):
    # contiguous float32/float64 gradients are copied by a plain loop (direct_copy in
    # reducer.c); float16, complex and a strided .grad take the operators: same values, and
    # the bucket's and the .grad's version counters move as an in-place operator's do
    params = mlp_params(2, torch.float64)
    if dtype.is_complex:
        params = [(p.detach() + 0.5j * p.detach()).requires_grad_() for p in params]
    else:
        params = [p.detach().to(dtype).requires_grad_() for p in params]
    r = Buckets(params, [[3, 2], [1, 0]])
    r.reducer.set_scale(0, scale)
    r.reducer.set_scale(1, scale)
    if strided_grad:                   # backward accumulates into these transposed tensors
        for p in params:
            p.grad = torch.zeros(tuple(reversed(p.shape)), dtype=dtype).t() \
                if p.dim() == 2 else torch.zeros(p.shape[0] * 2, dtype=dtype)[::2]
        assert not params[0].grad.is_contiguous() and not params[1].grad.is_contiguous()
    versions = [v._version for v in r.views]
    r.reducer.prepare()
    w1, b1, w2, b2 = params          # mlp_loss without tanh (no complex tanh)
    out = (X.to(dtype) @ w1.t() + b1) @ w2.t() + b2
    loss = (out * out).sum()
    (loss.real if dtype.is_complex else loss).backward()
    assert all(v._version > old for v, old in zip(r.views, versions))
    want = [p.grad.clone() for p in params]
    tol = {torch.float16: 1e-3, torch.float32: 1e-6}.get(dtype, 1e-14)
    for b, flat in r.launched:
        got = torch.cat([want[i].reshape(-1) for i in r.buckets[b]]) * scale
        np.testing.assert_allclose(flat.numpy(), got.numpy(), rtol=tol, atol=tol)
    for flat in r.flats:
        flat.mul_(2.0)
    grad_versions = [p.grad._version for p in params]
    for b in range(2):
        r.reducer.write_grads(b)
    for p, g, old in zip(params, want, grad_versions):
        assert p.grad._version > old
        np.testing.assert_allclose(p.grad.numpy(), (g * (2 * scale)).numpy(), rtol=tol,
                                   atol=tol)


def test_python_post_accumulate_grad_hooks_run_first():
    params = mlp_params()
    events = []
    for i, p in enumerate(params):
        p.register_post_accumulate_grad_hook(lambda t, i=i: events.append(("python", i)))
    r = Buckets(params, [[3], [2], [1], [0]],
                launch=lambda b: events.append(("launch", b)))
    r.reducer.prepare()
    mlp_loss(params, X).backward()
    # each parameter's Python hook, then its bucket's launch (one parameter per bucket)
    for b, i in enumerate([3, 2, 1, 0]):
        k = events.index(("launch", b))
        assert ("python", i) in events[:k], events
    assert len(events) == 8


def test_two_reducers_on_one_parameter_fire_in_registration_order():
    p = torch.randn(3, dtype=torch.float64, requires_grad=True)
    events = []
    a = Buckets([p], [[0]], launch=lambda b: events.append("first"))
    b = Buckets([p], [[0]], launch=lambda b: events.append("second"))
    a.reducer.prepare()
    b.reducer.prepare()
    (p * 2).sum().backward()
    assert events == ["first", "second"]


def test_not_armed_does_nothing():
    # DDP's no_sync(): forward does not prepare, so backward accumulates locally
    params = mlp_params()
    r = Buckets(params, [[3, 2, 1, 0]])
    mlp_loss(params, X).backward()
    assert r.launched == [] and not r.reducer.armed
    assert r.reducer.unready() == [0, 1, 2, 3]
    r.reducer.prepare()
    assert r.reducer.armed
    mlp_loss(params, X).backward()
    want = numpy_grads(params, X)
    np.testing.assert_allclose(r.launched[0][1].numpy()[:3], 2 * want[3], rtol=1e-12)


def test_local_counts_down_without_copies_or_launches():
    # a world of one (DDP sets local): the reduction ends with the last bucket, the buckets
    # stay untouched and .grad is backward's own; a bucket left waiting keeps it armed
    params = mlp_params()
    r = Buckets(params, [[3, 2], [1, 0]])
    r.reducer.local = True
    assert r.reducer.local
    r.flats[0].fill_(7.0)
    r.reducer.prepare()
    mlp_loss(params, X).backward()
    assert r.launched == [] and not r.reducer.armed and r.reducer.unready() == []
    np.testing.assert_array_equal(r.flats[0].numpy(), np.full(18, 7.0))
    for p, g in zip(params, numpy_grads(params, X)):
        np.testing.assert_allclose(p.grad.numpy(), g, rtol=1e-12, atol=1e-12)
        p.grad = None
    r.reducer.prepare()
    w1, b1, w2, _ = params
    (torch.tanh(X @ w1.t() + b1) @ w2.t()).pow(2).sum().backward()
    assert r.reducer.armed and r.reducer.unready() == [3]
    r.reducer.mark_ready(3)                       # find_unused_parameters
    assert not r.reducer.armed and r.launched == [] and params[3].grad is None
    r.reducer.local = False
    r.reducer.prepare()
    mlp_loss(params, X).backward()
    assert r.order() == [0, 1]


def test_retain_graph_second_backward_does_not_launch_again():
    params = mlp_params()
    for disarm in (True, False):
        r = Buckets(params, [[3, 2], [1, 0]], disarm_last=disarm)
        r.reducer.prepare()
        loss = mlp_loss(params, X)
        loss.backward(retain_graph=True)
        loss.backward()
        assert r.order() == [0, 1], disarm
        want = numpy_grads(params, X)
        for p, g in zip(params, want):
            p.grad = None
        assert r.reducer.unready() == []


def test_parameter_used_twice_is_ready_once_with_the_summed_gradient():
    w = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    other = torch.tensor([0.5], dtype=torch.float64, requires_grad=True)
    r = Buckets([w, other], [[0], [1]])
    r.reducer.prepare()
    ((w * w).sum() + (w * other).sum()).backward()
    assert r.order() == [0, 1]
    np.testing.assert_allclose(r.launched[0][1].numpy(), 2 * np.array([1.0, 2, 3]) + 0.5)
    np.testing.assert_allclose(r.launched[1][1].numpy(), [6.0])


def test_mark_ready_without_gradient_zeroes_the_slice():
    # find_unused_parameters: DDP marks the parameters forward did not reach
    params = mlp_params()
    r = Buckets(params, [[3, 2], [1, 0]])
    r.flats[0].fill_(7.0)
    r.reducer.prepare()
    r.reducer.mark_ready(3)
    r.reducer.mark_ready(3)                       # twice: counted once
    assert r.reducer.unready() == [0, 1, 2]
    w1, b1, w2, _ = params
    (torch.tanh(X @ w1.t() + b1) @ w2.t()).pow(2).sum().backward()
    assert r.order() == [0, 1]
    flat0 = r.launched[0][1].numpy()
    np.testing.assert_array_equal(flat0[:3], np.zeros(3))
    assert params[3].grad is None


def test_backward_inputs_and_autograd_grad():
    params = mlp_params()
    r = Buckets(params, [[0], [1, 2, 3]])
    r.reducer.prepare()
    torch.autograd.grad(mlp_loss(params, X), params)      # accumulates into no leaf
    assert r.launched == [] and r.reducer.unready() == [0, 1, 2, 3]
    mlp_loss(params, X).backward(inputs=[params[0]])
    assert r.order() == [0] and r.reducer.unready() == [1, 2, 3]


def test_create_graph_fills_values_under_no_grad():
    params = mlp_params()
    r = Buckets(params, [[3, 2, 1, 0]])
    r.reducer.prepare()
    mlp_loss(params, X).backward(create_graph=True)
    assert params[0].grad.grad_fn is not None
    flat = r.launched[0][1]
    assert flat.grad_fn is None and not flat.requires_grad
    want = numpy_grads(params, X)
    np.testing.assert_allclose(flat.numpy()[:3], want[3], rtol=1e-12)


def test_a_raising_launch_stops_backward_and_the_next_iteration_works():
    params = mlp_params()
    calls = []

    def launch(b):
        calls.append(b)
        if len(calls) == 1:
            raise ValueError("launch failed on purpose")
        if b == 1:
            r.reducer.armed = False

    r = Buckets(params, [[3, 2], [1, 0]], launch=launch)
    r.reducer.prepare()
    with pytest.raises(ValueError, match="launch failed on purpose"):
        mlp_loss(params, X).backward()
    assert r.reducer.armed                       # the reduction never finished
    for p in params:
        p.grad = None
    r.reducer.prepare()
    mlp_loss(params, X).backward()
    assert calls == [0, 0, 1]
    want = numpy_grads(params, X)
    for p, g in zip(params, want):
        np.testing.assert_allclose(p.grad.numpy(), g, rtol=1e-12)


def test_as_view_makes_grad_the_bucket_view_and_write_grads_fills_grads():
    params = mlp_params()
    r = Buckets(params, [[3, 2], [1, 0]], as_view=True)
    r.reducer.set_scale(0, 0.5)
    r.reducer.set_scale(1, 0.5)
    want = numpy_grads(params, X)
    for step in range(3):
        r.reducer.prepare()
        mlp_loss(params, X).backward()
        for b in range(2):
            r.reducer.write_grads(b)
        for p, v, g in zip(params, r.views, want):
            assert p.grad.data_ptr() == v.data_ptr()
            np.testing.assert_allclose(p.grad.numpy(), g / 2, rtol=1e-12)
        if step == 0:
            for p in params:        # set_to_none: the next gradient is copied in again
                p.grad = None
        else:                       # set_to_none=False: backward accumulates into the bucket
            for p in params:
                p.grad.zero_()


def test_write_grads_copies_clones_and_skips_unused():
    params = mlp_params()
    r = Buckets(params, [[3, 2], [1, 0]])
    r.reducer.prepare()
    mlp_loss(params, X).backward()
    want = numpy_grads(params, X)
    r.flats[0].mul_(3.0)
    r.flats[1].mul_(3.0)
    old = params[0].grad
    params[1].grad = None
    r.reducer.write_grads(1, None, [1, 1, 1, 0])
    assert params[0].grad is old
    np.testing.assert_allclose(params[0].grad.numpy(), 3 * want[0], rtol=1e-12)
    np.testing.assert_allclose(params[1].grad.numpy(), 3 * want[1], rtol=1e-12)
    assert params[1].grad.data_ptr() != r.views[1].data_ptr()      # a copy, not the view
    # a communication hook's result: views of another flat tensor
    result = torch.arange(r.flats[0].numel(), dtype=torch.float64)
    r.reducer.write_grads(0, [result[:3], result[3:].view(3, 5)], [1, 1, 1, 0])
    np.testing.assert_allclose(params[2].grad.numpy(), np.arange(3, 18).reshape(3, 5))
    np.testing.assert_allclose(params[3].grad.numpy(), want[3], rtol=1e-12)   # unused: kept


def test_hooks_go_with_the_reducer():
    params = mlp_params()
    flat = torch.zeros(sum(p.numel() for p in params), dtype=torch.float64)
    views = [flat[:20].view(5, 4), flat[20:25], flat[25:40].view(3, 5), flat[40:]]
    holder, launched = [], []

    def launch(b):                    # refers back to the reducer: a cycle
        launched.append(holder[0])

    holder.append(_C._Reducer(params, [[3, 2, 1, 0]], views, launch, False))
    holder[0].prepare()
    ref = weakref.ref(launch)
    del launch, holder
    gc.collect()                      # the reducer <-> launch cycle is collectable
    assert ref() is None
    mlp_loss(params, X).backward()
    assert launched == []


def test_reducer_freed_inside_its_own_launch():
    # the hook keeps the reducer alive while launch runs; its hooks are removed during the
    # engine's pass over the parameter's hooks, and a hook registered after it still runs
    w = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    holder, events = [], []

    def launch(b):
        events.append("dropped")
        holder.clear()

    flat = torch.zeros(2, dtype=torch.float64)
    holder.append(_C._Reducer([w], [[0]], [flat], launch, False))
    ref = weakref.ref(launch)
    del launch
    later = Buckets([w], [[0]], launch=lambda b: events.append("later"))
    holder[0].prepare()
    later.reducer.prepare()
    (w * 3).sum().backward()
    assert ref() is None and events == ["dropped", "later"]
    later.reducer.prepare()
    (w * 3).sum().backward()
    assert events == ["dropped", "later", "later"]


def test_bad_arguments_raise():
    p = torch.zeros(3, requires_grad=True)
    v = torch.zeros(3)

    def launch(b):
        pass

    with pytest.raises(TypeError):
        _C._Reducer((p,), [[0]], [v], launch, False)
    with pytest.raises(TypeError, match="launch must be callable"):
        _C._Reducer([p], [[0]], [v], 42, False)
    with pytest.raises(TypeError, match="params must be tensors"):
        _C._Reducer([1.0], [[0]], [v], launch, False)
    with pytest.raises(TypeError, match="views must be tensors"):
        _C._Reducer([p], [[0]], ["x"], launch, False)
    with pytest.raises(ValueError, match="as many views as parameters"):
        _C._Reducer([p], [[0]], [v, v], launch, False)
    with pytest.raises(ValueError, match="as many views as parameters"):
        _C._Reducer([p], [], [v], launch, False)
    with pytest.raises(ValueError, match="view 0 does not match its parameter"):
        _C._Reducer([p], [[0]], [torch.zeros(4)], launch, False)
    with pytest.raises(ValueError, match="view 0 does not match its parameter"):
        _C._Reducer([p], [[0]], [torch.zeros(3, dtype=torch.float64)], launch, False)
    for buckets, msg in (([[1]], "index 1 is out of range"), ([[-1]], "index -1 is out"),
                         ([[0], [0]], "in two buckets"), ([[0], []], "bucket 1 is empty"),
                         ([[0]], "every parameter must be in a bucket"),
                         ([3], "a bucket must be a list of indices")):
        kind = TypeError if buckets == [3] else ValueError
        params = [p, torch.zeros(2, requires_grad=True)] if msg.startswith("every") else [p]
        views = [v, torch.zeros(2)] if msg.startswith("every") else [v]
        with pytest.raises(kind, match=msg):
            _C._Reducer(params, buckets, views, launch, False)
    with pytest.raises(TypeError):
        _C._Reducer([p], [["a"]], [v], launch, False)
    r = _C._Reducer([p], [[0]], [v], launch, False)
    with pytest.raises(IndexError, match="parameter index 1 out of range"):
        r.mark_ready(1)
    with pytest.raises(TypeError):
        r.mark_ready("0")
    with pytest.raises(IndexError, match="bucket 1 out of range"):
        r.set_scale(1, 0.5)
    with pytest.raises(IndexError, match="bucket -1 out of range"):
        r.write_grads(-1)
    with pytest.raises(ValueError, match="bucket 0 needs a list of 1 results"):
        r.write_grads(0, [v, v])
    with pytest.raises(ValueError, match="used must list every parameter"):
        r.write_grads(0, None, [1, 1])
    with pytest.raises(TypeError, match="results must be tensors"):
        r.write_grads(0, ["x"])
    with pytest.raises(AttributeError, match="can't delete armed"):
        del r.armed
    with pytest.raises(AttributeError, match="can't delete local"):
        del r.local
    # the reducers that failed to build left no hook, and this one is not armed: backward
    # runs as without them
    (p * 2).sum().backward()
    np.testing.assert_array_equal(p.grad.numpy(), [2.0, 2.0, 2.0])
