"""CUDA graphs on a device (pytorchlite/cuda/graphs.py over src/cuda/graph.cu): capture and
replay of an elementwise chain and of a whole training step (PyTorch's whole-network capture
example: an MLP's forward, backward and SGD step on static tensors), random numbers that are
fresh at each replay and equal to the eager draws from the same generator state (rand,
dropout), make_graphed_callables' outputs and gradients against eager autograd, private pool
sharing, the memory statistics after reset, and the capture errors of host synchronisations.
Without a device these skip (tests/python/test_cuda_graph_api.py checks the bookkeeping over a
fake runtime); tools/gpu_check.sh runs them with PTL_REQUIRE_GPU=1."""
import copy

import numpy as np
import pytest

import pytorchlite as ptl
from device_required import pytestmark, require_device  # noqa: F401

F = ptl.nn.functional


def side_stream_warmup(fn, iters=3):
    """PyTorch's recipe: run fn a few times on a side stream before capturing it."""
    side = ptl.cuda.Stream()
    side.wait_stream(ptl.cuda.current_stream())
    with ptl.cuda.stream(side):
        for _ in range(iters):
            fn()
    ptl.cuda.current_stream().wait_stream(side)


def host(t):
    return t.detach().cpu().numpy()


def test_elementwise_chain_replays_on_new_inputs():
    x = ptl.zeros(1000, device="cuda")

    def chain():
        return ((x * 2 + 1).sin() - x.exp()) / 3

    side_stream_warmup(chain)
    g = ptl.cuda.CUDAGraph()
    with ptl.cuda.graph(g):
        assert ptl.cuda.is_current_stream_capturing()
        y = chain()
    assert not ptl.cuda.is_current_stream_capturing()
    for seed in range(3):
        data = ptl.randn(1000, device="cuda", generator=ptl.Generator("cuda").manual_seed(seed))
        x.copy_(data)
        g.replay()
        np.testing.assert_array_equal(host(y), host(chain()))   # the same kernels: same bits


def test_replay_on_the_default_stream_and_keep_graph():
    x = ptl.ones(64, device="cuda")
    g = ptl.cuda.CUDAGraph(keep_graph=True)
    side_stream_warmup(lambda: x.mul_(1.0))
    with ptl.cuda.graph(g):
        x.mul_(2.0)
    g.instantiate()
    for _ in range(3):
        g.replay()                                 # the default stream: legal after capture
    ptl.cuda.synchronize()
    np.testing.assert_array_equal(host(x), np.full(64, 8.0, np.float32))


def make_mlp(seed):
    ptl.manual_seed(seed)
    return ptl.nn.Sequential(ptl.nn.Linear(32, 64), ptl.nn.ReLU(), ptl.nn.Linear(64, 8)).cuda()


def test_whole_training_step_capture_matches_eager_steps():
    """PyTorch's whole-network capture: zero_grad(set_to_none), forward, MSE loss, backward
    and SGD step captured once, replayed on new data; the parameters follow the eager
    steps of an identical model on the same data."""
    model = make_mlp(0)
    twin = copy.deepcopy(model)
    opt = ptl.optim.SGD(model.parameters(), lr=0.1)
    twin_opt = ptl.optim.SGD(twin.parameters(), lr=0.1)
    static_x = ptl.randn(16, 32, device="cuda")
    static_y = ptl.randn(16, 8, device="cuda")

    def step(m, o, x, y):
        o.zero_grad(set_to_none=True)
        loss = F.mse_loss(m(x), y)
        loss.backward()
        o.step()
        return loss

    side_stream_warmup(lambda: step(model, opt, static_x, static_y))
    for _ in range(3):
        step(twin, twin_opt, static_x, static_y)
    g = ptl.cuda.CUDAGraph()
    with ptl.cuda.graph(g):
        static_loss = step(model, opt, static_x, static_y)
    gen = ptl.Generator("cuda").manual_seed(5)
    for _ in range(4):
        x, y = ptl.randn(16, 32, device="cuda", generator=gen), ptl.randn(16, 8, device="cuda",
                                                                          generator=gen)
        static_x.copy_(x)
        static_y.copy_(y)
        g.replay()
        loss = step(twin, twin_opt, x, y)
        np.testing.assert_allclose(host(static_loss), host(loss), rtol=1e-6)
        for p, q in zip(model.parameters(), twin.parameters()):
            np.testing.assert_allclose(host(p), host(q), rtol=1e-6, atol=1e-7)


def test_random_replays_draw_fresh_values_equal_to_eager_draws():
    """rand and dropout captured: each replay draws new numbers, those that the same eager
    calls draw from the same generator state, and leaves the generator where they would."""
    x = ptl.ones(4099, device="cuda")

    def draws():
        return ptl.rand(1000, device="cuda"), F.dropout(x, 0.3, training=True)

    side_stream_warmup(draws)
    g = ptl.cuda.CUDAGraph()
    with ptl.cuda.graph(g):
        static = draws()
    start = ptl.cuda.get_rng_state()
    replays = []
    for _ in range(3):
        g.replay()
        replays.append([host(t).copy() for t in static])
    after_replays = ptl.cuda.get_rng_state()
    ptl.cuda.set_rng_state(start)
    for replay in replays:
        for got, want in zip(replay, draws()):
            np.testing.assert_array_equal(got, host(want))
    assert not np.array_equal(replays[0][0], replays[1][0])
    assert ptl.equal(ptl.cuda.get_rng_state(), after_replays)


@pytest.mark.parametrize("kind", ["module", "function", "tuple"])
def test_make_graphed_callables_gradients_equal_eager(kind):
    model = make_mlp(1)
    twin = copy.deepcopy(model)
    w = ptl.randn(8, 8, device="cuda", requires_grad=True)

    def fn(a):
        return (a @ w).tanh()

    sample = ptl.randn(16, 32, device="cuda", requires_grad=True)
    if kind == "module":
        graphed = ptl.cuda.make_graphed_callables(model, (sample,))
        eager = twin
    elif kind == "function":
        graphed = ptl.cuda.make_graphed_callables(fn, (ptl.randn(16, 8, device="cuda",
                                                                 requires_grad=True),))
        eager = fn
    else:
        m, f = ptl.cuda.make_graphed_callables(
            (model, fn), ((sample,), (ptl.randn(16, 8, device="cuda", requires_grad=True),)))
        graphed, eager = (lambda a: f(m(a))), (lambda a: fn(twin(a)))
    for seed in range(3):
        gen = ptl.Generator("cuda").manual_seed(seed)
        width = 8 if kind == "function" else 32
        a = ptl.randn(16, width, device="cuda", generator=gen).requires_grad_()
        b = a.detach().clone().requires_grad_()
        out, ref = graphed(a), eager(b)
        np.testing.assert_allclose(host(out), host(ref), rtol=1e-6, atol=1e-7)
        grad = ptl.randn(out.shape, device="cuda", generator=gen)
        out.backward(grad)
        ref.backward(grad)
        np.testing.assert_allclose(host(a.grad), host(b.grad), rtol=1e-5, atol=1e-6)
    if kind != "function":
        for p, q in zip(model.parameters(), twin.parameters()):
            np.testing.assert_allclose(host(p.grad), host(q.grad), rtol=1e-5, atol=1e-6)
    if kind == "module":
        model.eval()                               # another mode: the eager forward runs
        np.testing.assert_allclose(host(model(a)), host(twin.eval()(b)), rtol=1e-6)


def pool_segments(pool):
    return [s for s in ptl.cuda.memory_snapshot() if tuple(s["segment_pool_id"]) == pool]


def test_graphs_share_a_private_pool():
    x = ptl.ones(1 << 16, device="cuda")
    handle = ptl.cuda.graph_pool_handle()
    g1, g2 = ptl.cuda.CUDAGraph(), ptl.cuda.CUDAGraph()
    with ptl.cuda.graph(g1, pool=handle):
        a = x * 2
        del a                                      # freed in g1's capture: the pool keeps it
        b = x + 1
    with ptl.cuda.graph(g2, pool=g1.pool()):
        c = b * 3                                  # in the segment g1's capture took
    assert g1.pool() == g2.pool() == handle
    assert len(pool_segments(handle)) == 1         # both graphs in one small segment
    g1.replay()
    g2.replay()
    ptl.cuda.synchronize()
    np.testing.assert_array_equal(host(c), np.full(1 << 16, 6.0, np.float32))
    ordinary = x * 5                               # an ordinary tensor never lands there
    seg = pool_segments(handle)[0]
    assert not seg["address"] <= ordinary.data_ptr() < seg["address"] + seg["total_size"]


def test_memory_stats_after_reset():
    """A graph's pool stays reserved while the graph lives; after reset() the segments whose
    blocks are all freed go back at empty_cache(), and a graph output still alive keeps
    its own (PyTorch's test_graph_memory_stats_and_use_result_after_destroy_graph)."""
    ptl.cuda.synchronize()
    ptl.cuda.empty_cache()
    x = ptl.ones(1 << 20, device="cuda")           # 4 MiB: the large pool
    g = ptl.cuda.CUDAGraph()
    side_stream_warmup(lambda: (x * 2) + 1)
    ptl.cuda.empty_cache()
    base = ptl.cuda.memory_reserved()
    with ptl.cuda.graph(g):
        tmp = x * 2
        out = tmp + 1
        del tmp
    assert len(pool_segments(g.pool())) >= 1
    assert ptl.cuda.memory_reserved() > base
    g.replay()
    ptl.cuda.empty_cache()                         # the graph lives: nothing goes back
    assert len(pool_segments(g.pool())) >= 1
    pool = g.pool()
    g.reset()
    ptl.cuda.empty_cache()
    segs = pool_segments(pool)
    assert sum(s["allocated_size"] for s in segs) == (4 << 20)   # only out's block
    np.testing.assert_array_equal(host(out), np.full(1 << 20, 3.0, np.float32))
    del out
    ptl.cuda.empty_cache()
    assert pool_segments(pool) == []
    assert ptl.cuda.memory_reserved() == base


@pytest.mark.parametrize("op", [
    lambda x: x.sum().item(),
    lambda x: x.cpu(),
    lambda x: ptl.randperm(10, device="cuda"),
    lambda x: ptl.cuda.synchronize(),
], ids=["item", "cpu", "randperm", "synchronize"])
def test_host_synchronisations_raise_the_capture_error(op):
    x = ptl.ones(8, device="cuda")
    g = ptl.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="capturing|capture"):
        with ptl.cuda.graph(g):
            op(x)
    ptl.cuda.synchronize()
    assert not ptl.cuda.is_current_stream_capturing()
    y = x + 1                                      # the device still works
    np.testing.assert_array_equal(host(y), np.full(8, 2.0, np.float32))
