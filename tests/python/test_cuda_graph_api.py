"""torch.cuda's graph API without a CUDA device (pytorchlite/cuda/graphs.py).

Without a device every entry point raises what PyTorch raises: the no-CUDA error in a CUDA
build (is_current_stream_capturing answers False and graph_pool_handle a handle, needing no
device), the dummy classes' error in a CPU-only build.  Then CUDAGraph's bookkeeping is
driven over a fake runtime: the capture calls of src/cuda/graph.cu recorded instead of
made, the caching allocator on the fake device (Note [Private pools]), and the graphs'
generator memory on the host, with the random kernels emulated (Note [Graph-safe Philox]),
so that what capture, replay, reset and the pools do is checked here.  With a device:
tests/cuda/test_cuda_graphs.py."""
import contextlib
import types

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite import _C
from pytorchlite.cuda import graphs
from helpers import NO_CUDA_ERROR

pytestmark = pytest.mark.skipif(ptl.cuda.is_available(), reason="a CUDA device is present")

CUDA_BUILD = ptl.cuda.is_built()
# the fake runtime below drives the CUDA build's graph bookkeeping (graph.cu's bindings, the
# allocator's private pools), which a CPU-only build does not compile
needs_cuda_build = pytest.mark.skipif(not CUDA_BUILD, reason="a CPU-only build has no graph "
                                                             "bookkeeping to drive")


@pytest.mark.skipif(not CUDA_BUILD, reason="a CPU-only build")
@pytest.mark.parametrize("fn", [
    lambda: ptl.cuda.CUDAGraph(),
    lambda: ptl.cuda.CUDAGraph(keep_graph=True),
    lambda: ptl.cuda.graph(None),
    lambda: ptl.cuda.make_graphed_callables(ptl.nn.Linear(2, 2), (ptl.zeros(3, 2),)),
    lambda: ptl.cuda.make_graphed_callables(lambda x: x * 2, (ptl.zeros(3),)),
], ids=["CUDAGraph", "keep_graph", "graph", "make_graphed_module", "make_graphed_function"])
def test_entry_points_raise_the_no_cuda_error(fn):
    exc, message = NO_CUDA_ERROR
    with pytest.raises(exc, match=message):
        fn()


@pytest.mark.skipif(not CUDA_BUILD, reason="a CPU-only build")
def test_queries_that_need_no_device():
    assert ptl.cuda.is_current_stream_capturing() is False
    a, b = ptl.cuda.graph_pool_handle(), ptl.cuda.graph_pool_handle()
    assert a[0] == b[0] == 0 and b[1] > a[1] > 0


@pytest.mark.skipif(CUDA_BUILD, reason="a CUDA build")
@pytest.mark.parametrize("fn,name", [
    (lambda: ptl.cuda.CUDAGraph(), "CUDAGraph"),
    (lambda: ptl.cuda.is_current_stream_capturing(), "_cuda_isCurrentStreamCapturing"),
    (lambda: ptl.cuda.graph_pool_handle(), "_graph_pool_handle"),
])
def test_cpu_only_build_raises_pytorchs_dummy_class_errors(fn, name):
    with pytest.raises(RuntimeError, match=f"Tried to instantiate dummy base class {name}"):
        fn()


def test_the_api_is_torchs():
    for name in ("CUDAGraph", "graph", "graph_pool_handle", "make_graphed_callables",
                 "is_current_stream_capturing"):
        assert getattr(ptl.cuda, name) is getattr(graphs, name)
    assert sorted(graphs.__all__) == sorted(
        ["CUDAGraph", "graph", "graph_pool_handle", "is_current_stream_capturing",
         "make_graphed_callables"])


# ---- CUDAGraph over a fake runtime ----

class FakeRuntime:
    """The _C functions graphs.py calls, recording them: handles are counters, a capture
    must end on the stream it began on, a launch needs an executable graph."""

    def __init__(self):
        self.calls, self.capturing, self.live = [], {}, set()
        self.next = 100

    def _new(self, kind):
        self.next += 1
        self.live.add((kind, self.next))
        return self.next

    def _cuda_stream_begin_capture(self, stream, mode):
        assert stream not in self.capturing
        self.capturing[stream] = mode
        self.calls.append(("begin", stream, mode))

    def _cuda_stream_end_capture(self, stream):
        del self.capturing[stream]
        self.calls.append(("end", stream))
        return self._new("graph")

    def _cuda_stream_is_capturing(self, stream):
        return stream in self.capturing

    def _cuda_graph_instantiate(self, graph):
        assert ("graph", graph) in self.live
        self.calls.append(("instantiate", graph))
        return self._new("exec")

    def _cuda_graph_launch(self, exec_, stream):
        assert ("exec", exec_) in self.live
        self.calls.append(("launch", exec_, stream))

    def _cuda_graph_destroy(self, graph):
        self.live.remove(("graph", graph))

    def _cuda_graph_exec_destroy(self, exec_):
        self.live.remove(("exec", exec_))

    def _cuda_graph_debug_dump(self, graph, path):
        self.calls.append(("dump", graph, path))


@pytest.fixture
def fake(monkeypatch):
    """A fake device 0 with current stream 5: (runtime, allocator, set_stream)."""
    runtime = FakeRuntime()
    allocator = _C._FakeDeviceAllocator(1 << 30)
    current = {"stream": 5}
    cuda = ptl.cuda
    monkeypatch.setattr(graphs, "_C", runtime)
    monkeypatch.setattr(graphs, "_allocator", lambda device: allocator)
    monkeypatch.setattr(graphs, "_new_generator_state",
                        lambda device: ptl.zeros(2, dtype=ptl.int64))
    monkeypatch.setattr(cuda, "_lazy_init", lambda: None)
    monkeypatch.setattr(cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(cuda, "current_stream", lambda device=None: types.SimpleNamespace(
        cuda_stream=current["stream"], device_index=0))
    yield runtime, allocator, lambda s: current.__setitem__("stream", s)


def offset_of(gen):
    return int.from_bytes(gen.get_state().numpy().tobytes()[8:], "little")


@needs_cuda_build
def test_capture_routes_the_streams_allocations_to_the_graphs_pool(fake):
    runtime, alloc, _ = fake
    g = ptl.cuda.CUDAGraph()
    g.capture_begin()
    assert runtime.capturing == {5: 0}
    p = alloc.malloc(4096, 5)                      # what a kernel's output would take
    assert alloc.pool_use_count(g.pool()) == 1
    seg = next(s for s in alloc.snapshot() if s["address"] <= p < s["address"] + 2 ** 21)
    assert seg["segment_pool_id"] == g.pool() == (g._id, 0)
    assert graphs.is_current_stream_capturing()
    g.capture_end()
    assert not graphs.is_current_stream_capturing()
    # instantiated at capture_end and the captured graph dropped (keep_graph=False)
    assert [c[0] for c in runtime.calls] == ["begin", "end", "instantiate"]
    assert {kind for kind, _ in runtime.live} == {"exec"}
    assert alloc.malloc(4096, 5) != p              # an ordinary allocation again
    g.replay()
    g.replay()
    assert [c[0] for c in runtime.calls[-2:]] == ["launch", "launch"]
    g.reset()
    assert runtime.live == set()
    alloc.free(p)
    assert alloc.pool_use_count(g.pool()) == 0
    alloc.empty_cache()
    assert alloc.pool_use_count(g.pool()) == -1    # the pool went back to the device


@needs_cuda_build
def test_capture_errors(fake):
    runtime, alloc, set_stream = fake
    g = ptl.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="without a preceding successful capture"):
        g.replay()
    with pytest.raises(RuntimeError, match="without a preceding successful capture"):
        g.pool()
    with pytest.raises(RuntimeError, match="Unknown capture error mode"):
        g.capture_begin(capture_error_mode="local")
    set_stream(0)
    with pytest.raises(RuntimeError, match="must be captured on a non-default stream"):
        g.capture_begin()
    set_stream(5)
    g.capture_begin(capture_error_mode="relaxed")
    assert runtime.capturing == {5: 2}
    set_stream(6)
    with pytest.raises(RuntimeError, match="Capture must end on the same stream"):
        g.capture_end()
    set_stream(5)
    g.capture_end()
    with pytest.raises(RuntimeError, match="already owns a captured graph"):
        g.capture_begin()
    with pytest.raises(RuntimeError, match="keep_graph=True"):
        g.instantiate()


@needs_cuda_build
def test_a_failed_capture_begin_leaves_no_pool_and_no_capture(fake, monkeypatch):
    runtime, alloc, _ = fake

    def refuse(stream, mode):
        raise RuntimeError("CUDA error: operation not permitted when stream is capturing")

    monkeypatch.setattr(runtime, "_cuda_stream_begin_capture", refuse)
    g = ptl.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="not permitted"):
        g.capture_begin()
    assert alloc.pool_use_count((g._id, 0)) == 0
    gen = ptl.cuda._generator(0)
    gen._graph_capture_prologue(ptl.zeros(2, dtype=ptl.int64))   # the generator is free
    gen._graph_capture_epilogue()


@needs_cuda_build
def test_keep_graph_instantiates_at_the_first_replay_and_debug_dump_writes_it(fake):
    runtime, _, _ = fake
    g = ptl.cuda.CUDAGraph(keep_graph=True)
    with pytest.warns(UserWarning, match="debug not enabled"):
        g.debug_dump("/tmp/none.dot")
    g.capture_begin()
    g.capture_end()
    assert [c[0] for c in runtime.calls] == ["begin", "end"]
    g.debug_dump("/tmp/graph.dot")
    g.replay()
    assert [c[0] for c in runtime.calls[2:]] == ["dump", "instantiate", "launch"]
    g.instantiate()                                # again: the old executable is dropped
    assert sum(kind == "exec" for kind, _ in runtime.live) == 1
    g.reset()
    assert runtime.live == set()


@needs_cuda_build
def test_graphs_share_a_pool(fake):
    _, alloc, _ = fake
    handle = ptl.cuda.graph_pool_handle()
    g1, g2, g3 = ptl.cuda.CUDAGraph(), ptl.cuda.CUDAGraph(), ptl.cuda.CUDAGraph()
    g1.capture_begin(pool=handle)
    p = alloc.malloc(8192, 5)
    alloc.free(p)                                  # freed in g1's capture: kept by the pool
    g1.capture_end()
    g2.capture_begin(pool=g1.pool())
    assert alloc.malloc(8192, 5) == p              # g2 reuses g1's memory
    g2.capture_end()
    g3.capture_begin(pool=list(handle))
    g3.capture_end()
    assert g1.pool() == g2.pool() == g3.pool() == handle
    assert alloc.pool_use_count(handle) == 3
    with pytest.raises(RuntimeError, match="graph_pool_handle"):
        ptl.cuda.CUDAGraph().capture_begin(pool=(0, 0))
    for g, left in ((g1, 2), (g2, 1), (g3, 0)):
        g.reset()
        assert alloc.pool_use_count(handle) == left


@contextlib.contextmanager
def emulated(tuning):
    """The CUDA kernels emulated on the host (tests/cuda/kernel_emulation.py's switch)."""
    _C._cuda_kernel_emulation(tuning)
    try:
        yield
    finally:
        _C._cuda_kernel_emulation(None)


# (max_threads, target_blocks, max_grid, min_chunk): kernel_emulation.TUNINGS' tiny, small
@needs_cuda_build
@pytest.mark.parametrize("tuning", [(32, 4, 1, 1), (64, 6, 3, 8)], ids=["tiny", "small"])
def test_replays_draw_what_eager_launches_draw(fake, tuning):
    """Random launches captured in the graph reserve counters in the graph; each replay
    writes the generator's seed and offset into the graph's memory and advances the
    generator by the graph's counters: the emulated launches, reading that memory, give the
    eager values of the same generator state."""
    gen = ptl.cuda._generator(0)

    def launches():
        return (ptl.rand(30, generator=gen).tolist(),
                ptl.randn(7, dtype=ptl.float64, generator=gen).tolist())

    gen.manual_seed(11)
    with emulated(tuning):
        want = [launches() for _ in range(2)]
    after_two = offset_of(gen)
    gen.manual_seed(11)
    g = ptl.cuda.CUDAGraph()
    g.capture_begin()
    with emulated(tuning):
        launches()
    assert offset_of(gen) == 0                     # reserved in the graph, not the generator
    g.capture_end()
    (_, state, increment), = g._rng
    assert increment == 37
    for replay in range(2):
        g.replay()
        assert state.tolist() == [11, 37 * replay]
        # the captured launches as the device runs them: reading the graph's memory
        gen._graph_capture_prologue(state)
        try:
            with emulated(tuning):
                assert launches() == want[replay]
        finally:
            gen._graph_capture_epilogue()
    assert offset_of(gen) == after_two
    g.reset()


@needs_cuda_build
def test_register_generator_state_adds_a_generator(fake):
    extra = ptl.cuda._generator(1)                 # another device's, as a stand-in
    g = ptl.cuda.CUDAGraph()
    g.register_generator_state(extra)
    g.register_generator_state(extra)
    g.capture_begin()
    g.capture_end()
    assert [gen for gen, _, _ in g._rng][1:] == [extra]
    with pytest.raises(RuntimeError, match="before capture"):
        g.register_generator_state(ptl.cuda._generator(0))
    g.reset()


@needs_cuda_build
def test_graph_context_manager_captures_on_a_side_stream(fake, monkeypatch):
    runtime, alloc, set_stream = fake
    cuda = ptl.cuda
    events = []
    side = types.SimpleNamespace(cuda_stream=9, device_index=0)

    class StreamCtx:
        def __init__(self, s):
            self.s = s

        def __enter__(self):
            set_stream(self.s.cuda_stream)

        def __exit__(self, *exc):
            set_stream(5)

    monkeypatch.setattr(cuda, "synchronize", lambda device=None: events.append("sync"))
    monkeypatch.setattr(cuda, "empty_cache", lambda: events.append("empty_cache"))
    monkeypatch.setattr(cuda, "stream", StreamCtx)
    monkeypatch.setattr(graphs.graph, "default_capture_stream", side)
    g = ptl.cuda.CUDAGraph()
    with ptl.cuda.graph(g):
        assert runtime.capturing == {9: 0}
        events.append("body")
    assert events == ["sync", "empty_cache", "body"]
    assert runtime.capturing == {}
    assert g.pool() == (g._id, 0)
    g2 = ptl.cuda.CUDAGraph()
    with pytest.raises(ValueError):
        with ptl.cuda.graph(g2, pool=g.pool(), capture_error_mode="thread_local"):
            assert runtime.capturing == {9: 1}
            raise ValueError("the body failed")
    assert runtime.capturing == {}                 # the capture ended all the same
    assert alloc.pool_use_count(g.pool()) == 2


@pytest.fixture
def fake_streams(fake, monkeypatch):
    """fake, plus side streams, synchronize and empty_cache for the graph context manager
    and make_graphed_callables."""
    runtime, alloc, set_stream = fake
    cuda = ptl.cuda
    handles = iter(range(20, 1000))

    class Stream(types.SimpleNamespace):
        def __init__(self):
            super().__init__(cuda_stream=next(handles), device_index=0)

    class StreamCtx:
        def __init__(self, s):
            self.s = s

        def __enter__(self):
            self.prev = cuda.current_stream().cuda_stream
            set_stream(self.s.cuda_stream)

        def __exit__(self, *exc):
            set_stream(self.prev)

    monkeypatch.setattr(cuda, "Stream", Stream)
    monkeypatch.setattr(cuda, "stream", StreamCtx)
    monkeypatch.setattr(cuda, "synchronize", lambda device=None: None)
    monkeypatch.setattr(cuda, "empty_cache", lambda: None)
    monkeypatch.setattr(graphs.graph, "default_capture_stream", None)
    yield fake


@needs_cuda_build
def test_make_graphed_callables_over_the_fake_runtime(fake_streams):
    """The captures' order and pool, and the autograd wiring: with a fake runtime a capture
    runs its block eagerly and a replay does nothing, so a graphed call on the sample inputs
    returns the captured outputs, and its backward the captured gradients (of the static
    gradient outputs, which the call fills with the incoming gradients before the replay);
    shapes, requires_grad and the module's eval fallback are what a device would give."""
    runtime, alloc, _ = fake_streams
    ptl.manual_seed(0)
    module = ptl.nn.Sequential(ptl.nn.Linear(4, 3), ptl.nn.Tanh())
    w = ptl.randn(3, 2, requires_grad=True)

    def fn(a):
        return {"y": a @ w, "z": [a.sum(1)]}

    x = ptl.randn(5, 4, requires_grad=True)
    m, f = ptl.cuda.make_graphed_callables((module, fn),
                                           ((x,), (ptl.randn(5, 3, requires_grad=True),)))
    assert m is module
    begins = [c[1] for c in runtime.calls if c[0] == "begin"]
    assert len(begins) == 4                        # fwd m, fwd f, bwd f, bwd m
    pools = {s["segment_pool_id"] for s in alloc.snapshot()}
    assert len(pools - {(0, 0)}) <= 1              # one shared pool
    h = m(x)
    out = f(h)
    assert set(out) == {"y", "z"} and out["y"].shape == (5, 2)
    assert out["z"][0].shape == (5,) and out["y"].requires_grad
    np.testing.assert_allclose(h.detach().numpy(), module[1](module[0](x)).detach().numpy(),
                               rtol=1e-6)
    (out["y"].sum() + out["z"][0].sum()).backward()
    assert x.grad is not None and x.grad.shape == (5, 4)
    assert all(p.grad is not None and p.grad.shape == p.shape for p in module.parameters())
    launches = [c for c in runtime.calls if c[0] == "launch"]
    assert len(launches) == 4                      # two forward and two backward replays
    module.eval()                                  # not the captured mode: eager forward
    np.testing.assert_allclose(m(x).detach().numpy(),
                               module[1](module[0](x)).detach().numpy(), rtol=1e-6)
    assert len([c for c in runtime.calls if c[0] == "launch"]) == 4


@needs_cuda_build
def test_make_graphed_callables_checks_its_arguments(fake_streams):
    module = ptl.nn.Linear(2, 2)
    module.register_forward_hook(lambda *a: None)
    with pytest.raises(AssertionError, match="must not have hooks"):
        ptl.cuda.make_graphed_callables(module, (ptl.zeros(1, 2),))
    with pytest.raises(AssertionError, match="only Tensors"):
        ptl.cuda.make_graphed_callables(lambda a, b: a, (ptl.zeros(1), 3))


@pytest.mark.parametrize("make", [
    lambda ps: ptl.optim.Adam(ps),
    lambda ps: ptl.optim.AdamW(ps, capturable=True),
    lambda ps: ptl.optim.RMSprop(ps),
], ids=["Adam", "AdamW-capturable", "RMSprop"])
def test_optimizers_with_host_step_counts_refuse_a_capture(make, monkeypatch):
    """A captured step() of Adam and friends would replay the capture's step count and bias
    corrections: as PyTorch's health check, step() raises while the stream is capturing
    (capturable=True too: the counts live on the host here).  SGD keeps no count."""
    p = ptl.zeros(3, requires_grad=True)
    p.grad = ptl.ones(3)
    opt, sgd = make([p]), ptl.optim.SGD([p], lr=0.1)
    opt.step()                                      # not capturing: a step
    monkeypatch.setattr(ptl.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(ptl.cuda, "is_current_stream_capturing", lambda: True)
    capturable = opt.param_groups[0]["capturable"]
    message = ("cannot be captured in a CUDA graph" if capturable
               else "param_groups' capturable is False")
    with pytest.raises(RuntimeError, match=message):
        opt.step()
    sgd.step()
