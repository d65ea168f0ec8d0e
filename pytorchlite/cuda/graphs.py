"""torch.cuda.graphs: CUDAGraph capture and replay, the graph context manager,
graph_pool_handle, make_graphed_callables and is_current_stream_capturing
(torch/cuda/graphs.py and at/cuda/CUDAGraph.cpp).

A capture routes the capturing stream's allocations to the graph's private pool (Note
[Private pools] in src/c10/caching_allocator.c) and points the current device's generator,
and those given to register_generator_state, at the graph's own seed and offset memory
(Note [Graph-safe Philox] in src/aten/philox.h); replay() writes the generators' states
there and launches the graph.  The runtime calls are src/cuda/graph.cu's (Note [CUDA
graphs]).  In a build without CUDA each entry point raises what PyTorch's CPU build raises
(its dummy classes' error); in a CUDA build without a device, the no-CUDA error, except
is_current_stream_capturing and graph_pool_handle, which need no device, as in PyTorch."""
import gc
import itertools
import warnings

from .. import _C

__all__ = ["is_current_stream_capturing", "graph_pool_handle", "CUDAGraph", "graph",
           "make_graphed_callables"]

# ORDER CAPTURE_MODE (src/cuda/graph_api.h)
_CAPTURE_MODES = {"global": 0, "thread_local": 1, "relaxed": 2}
# graph ids and pool handles, from one counter as PyTorch's (ids (n, 0), handles (0, n))
_uids = itertools.count(1)


def _cuda():
    from .. import cuda
    return cuda


def _require_cuda_build(name):
    """PyTorch's CPU build defines the CUDA graph classes as dummies that raise this."""
    if not _cuda().is_built():
        raise RuntimeError(f"Tried to instantiate dummy base class {name}")


def _allocator(device):
    from . import memory
    return memory._allocator(device, init=True)


def _new_generator_state(device):
    """The memory a graph's random launches read seed and base offset from."""
    from .. import int64, zeros
    return zeros(2, dtype=int64, device=f"cuda:{device}")


def _int64_bits(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def is_current_stream_capturing():
    """True while a CUDA graph captures the current stream; False, without initialising
    CUDA, when it is not initialised."""
    _require_cuda_build("_cuda_isCurrentStreamCapturing")
    cuda = _cuda()
    if not cuda.is_initialized():
        return False
    return _C._cuda_stream_is_capturing(cuda.current_stream().cuda_stream)


def graph_pool_handle():
    """An id for a private memory pool that graphs can share (capture_begin(pool=...)):
    an opaque token, (0, n)."""
    _require_cuda_build("_graph_pool_handle")
    return (0, next(_uids))


class CUDAGraph:
    """A CUDA graph: capture_begin()/capture_end() (or the graph context manager) record the
    work queued on the current stream, replay() launches it again.  With keep_graph=True the
    captured graph is kept after capture_end, and instantiate() (or the first replay) makes
    it executable; otherwise capture_end instantiates it and drops it."""

    def __new__(cls, keep_graph=False):
        _require_cuda_build("CUDAGraph")
        _cuda()._lazy_init()
        return super().__new__(cls)

    def __init__(self, keep_graph=False):
        self._keep_graph = bool(keep_graph)
        self._debug = False
        self._id = next(_uids)
        self._pool = None             # the private pool's id once capture began
        self._device = None
        self._stream = None           # the capturing stream's handle
        self._graph = 0               # cudaGraph_t
        self._exec = 0                # cudaGraphExec_t
        self._captured = False
        self._extra_generators = []
        self._rng = []                # (generator, state tensor, counters per replay)

    def register_generator_state(self, generator):
        """Makes the graph's replays draw fresh numbers from generator too (the current
        device's default generator always is)."""
        if self._stream is not None or self._captured:
            raise RuntimeError("register_generator_state must be called before capture")
        if all(g is not generator for g in self._extra_generators):
            self._extra_generators.append(generator)

    def capture_begin(self, pool=None, capture_error_mode="global"):
        """Begins capturing the current stream's work into this graph; its allocations come
        from the private pool `pool` (an id from graph_pool_handle() or another graph's
        pool()), or the graph's own."""
        cuda = _cuda()
        if self._captured or self._stream is not None:
            raise RuntimeError("This CUDAGraph instance already owns a captured graph. To "
                               "capture a new graph, create a new instance.")
        if capture_error_mode not in _CAPTURE_MODES:
            raise RuntimeError("Unknown capture error mode. Expected `global`, "
                               f"`thread_local`, or `relaxed`, got {capture_error_mode}")
        stream = cuda.current_stream()
        if stream.cuda_stream == 0:
            raise RuntimeError("CUDA graphs must be captured on a non-default stream. "
                               "(However, after capture, it's ok to replay them on the "
                               "default stream.)")
        if pool is not None:
            pool = tuple(pool)
            if len(pool) != 2 or pool == (0, 0):
                raise RuntimeError("pool must be a value returned by graph_pool_handle() or "
                                   "another graph's pool()")
        device = stream.device_index
        generators = [cuda._generator(device)]
        generators += [g for g in self._extra_generators if g is not generators[0]]
        states = [_new_generator_state(device) for _ in generators]
        self._device, self._pool = device, pool if pool is not None else (self._id, 0)
        allocator = _allocator(device)
        allocator.begin_allocate_to_pool(self._pool, stream.cuda_stream)
        begun = []
        try:
            for gen, state in zip(generators, states):
                gen._graph_capture_prologue(state)
                begun.append((gen, state))
            _C._cuda_stream_begin_capture(stream.cuda_stream,
                                          _CAPTURE_MODES[capture_error_mode])
        except BaseException:
            for gen, _ in begun:
                gen._graph_capture_epilogue()
            allocator.end_allocate_to_pool(self._pool)
            allocator.release_pool(self._pool)
            self._pool = None
            raise
        self._stream = stream.cuda_stream
        self._rng = [(gen, state, 0) for gen, state in begun]

    def capture_end(self):
        """Ends the capture begun on the current stream; the graph is instantiated unless
        keep_graph was given."""
        cuda = _cuda()
        if self._stream is None:
            raise RuntimeError("capture_end() called without a preceding capture_begin()")
        if cuda.current_stream().cuda_stream != self._stream:
            raise RuntimeError("Capture must end on the same stream it began on.")
        stream, self._stream = self._stream, None
        allocator = _allocator(self._device)
        try:
            self._graph = _C._cuda_stream_end_capture(stream)
        except BaseException:
            allocator.release_pool(self._pool)   # an invalidated capture leaves no graph
            raise
        finally:
            allocator.end_allocate_to_pool(self._pool)
            self._rng = [(gen, state, gen._graph_capture_epilogue())
                         for gen, state, _ in self._rng]
        self._captured = True
        if not (self._keep_graph or self._debug):
            self.instantiate()
            _C._cuda_graph_destroy(self._graph)
            self._graph = 0

    def instantiate(self):
        """Makes the captured graph executable (done by capture_end without keep_graph)."""
        if not self._captured:
            raise RuntimeError("CUDAGraph::instantiate called without a preceding successful "
                               "capture.")
        if self._graph == 0:
            raise RuntimeError("instantiate() is only valid for graphs captured with "
                               "keep_graph=True, before the graph is dropped")
        if self._exec:
            _C._cuda_graph_exec_destroy(self._exec)
            self._exec = 0
        self._exec = _C._cuda_graph_instantiate(self._graph)

    def replay(self):
        """Launches the graph on the current stream, the generators' states written first
        and the generators advanced as the captured launches would."""
        cuda = _cuda()
        if not self._captured:
            raise RuntimeError("Called CUDAGraph::replay without a preceding successful "
                               "capture.")
        if self._exec == 0:
            self.instantiate()
        for gen, state, increment in self._rng:
            if increment == 0:
                continue   # the graph draws nothing from gen: no kernel reads its state
            seed, offset = gen._graph_replay_prologue(increment)
            state[0].fill_(_int64_bits(seed))
            state[1].fill_(_int64_bits(offset))
        _C._cuda_graph_launch(self._exec, cuda.current_stream().cuda_stream)

    def reset(self):
        """Drops the graph and gives its private pool up (the memory goes back at the next
        empty_cache once no tensor of the pool is alive)."""
        if self._graph:
            _C._cuda_graph_destroy(self._graph)
            self._graph = 0
        if self._exec:
            _C._cuda_graph_exec_destroy(self._exec)
            self._exec = 0
        if self._captured:
            _allocator(self._device).release_pool(self._pool)
        self._captured = False
        self._rng = []

    def pool(self):
        """The id of the private pool the graph allocated from, for pool= of another
        capture."""
        if self._pool is None:
            raise RuntimeError("Called CUDAGraph::pool() without a preceding successful "
                               "capture.")
        return self._pool

    def enable_debug_mode(self):
        """Keeps the captured graph so that debug_dump() can write it."""
        self._debug = True

    def debug_dump(self, debug_path):
        """Writes the captured graph in Graphviz dot form to debug_path."""
        if self._graph == 0:
            warnings.warn("CUDA Graphs debug not enabled, set with "
                          "[graph].enable_debug_mode()")
            return
        _C._cuda_graph_debug_dump(self._graph, debug_path)

    def __del__(self):
        if getattr(self, "_id", None) is not None and self._stream is None:
            try:
                self.reset()
            except Exception:
                pass   # the interpreter is shutting down, or CUDA with it


class graph:
    """Captures the block's CUDA work into cuda_graph: after synchronize(), gc.collect() and
    empty_cache(), on a side stream (one shared by default, or `stream`), with the graph's
    allocations from `pool` when given."""

    default_capture_stream = None

    def __init__(self, cuda_graph, pool=None, stream=None, capture_error_mode="global"):
        cuda = _cuda()
        if self.__class__.default_capture_stream is None:
            self.__class__.default_capture_stream = cuda.Stream()
        self.pool = () if pool is None else (pool,)
        self.capture_stream = (stream if stream is not None
                               else self.__class__.default_capture_stream)
        self.stream_ctx = cuda.stream(self.capture_stream)
        self.cuda_graph = cuda_graph
        self.capture_error_mode = capture_error_mode

    def __enter__(self):
        cuda = _cuda()
        cuda.synchronize()
        gc.collect()
        cuda.empty_cache()
        self.stream_ctx.__enter__()
        try:
            self.cuda_graph.capture_begin(*self.pool,
                                          capture_error_mode=self.capture_error_mode)
        except BaseException:
            self.stream_ctx.__exit__(None, None, None)
            raise

    def __exit__(self, exc_type, exc_value, traceback):
        try:
            self.cuda_graph.capture_end()
        finally:
            self.stream_ctx.__exit__(exc_type, exc_value, traceback)


# ---- make_graphed_callables ----

def _tree_flatten(obj, leaves):
    """The structure of obj (tensors in nested tuples, lists and dicts) with each tensor
    appended to leaves."""
    from .. import Tensor
    if isinstance(obj, Tensor):
        leaves.append(obj)
        return None
    if isinstance(obj, (tuple, list)):
        return (type(obj), tuple(_tree_flatten(o, leaves) for o in obj))
    if isinstance(obj, dict):
        return (dict, tuple(obj), tuple(_tree_flatten(v, leaves) for v in obj.values()))
    raise TypeError(f"make_graphed_callables: outputs may hold only Tensors in tuples, "
                    f"lists and dicts, not {type(obj).__name__}")


def _tree_unflatten(spec, leaves):
    """obj of _tree_flatten from its structure and an iterator over the leaves."""
    if spec is None:
        return next(leaves)
    if spec[0] is dict:
        return {k: _tree_unflatten(s, leaves) for k, s in zip(spec[1], spec[2])}
    return spec[0](_tree_unflatten(s, leaves) for s in spec[1])


def _flat_args(args):
    from .. import Tensor
    flat = []
    for a in args:
        if isinstance(a, (tuple, list, dict)):
            _tree_flatten(a, flat)
        else:
            flat.append(a)
    if not all(isinstance(a, Tensor) for a in flat):
        raise AssertionError("In the beta API, sample_args for each callable must contain "
                             "only Tensors. Other types are not allowed.")
    return tuple(flat)


def _check_module(c):
    if c._backward_hooks or c._forward_hooks or c._forward_pre_hooks:
        raise AssertionError("Modules must not have hooks registered at the time they are "
                             "passed. However, registering hooks on modules after passing "
                             "them through make_graphed_callables is allowed.")
    if any(b.requires_grad for b in c.buffers()):
        raise AssertionError("In any :class:`~torch.nn.Module` passed to "
                             ":func:`~make_graphed_callables`, only parameters may be "
                             "trainable. All buffers must have ``requires_grad=False``.")


def _graphed_function(fwd_graph, bwd_graph, module_params, len_user_args, output_spec,
                      static_inputs, static_outputs, static_grad_outputs, static_grad_inputs):
    """The callable whose forward replays fwd_graph and whose backward replays bwd_graph,
    copying new inputs and incoming gradients into the graphs' static tensors first."""
    from ..autograd import Function
    from ..autograd.function import once_differentiable

    class Graphed(Function):
        @staticmethod
        def forward(ctx, *inputs):
            for i in range(len_user_args):
                if static_inputs[i].data_ptr() != inputs[i].data_ptr():
                    static_inputs[i].copy_(inputs[i])
            fwd_graph.replay()
            return tuple(o.detach() for o in static_outputs)

        @staticmethod
        @once_differentiable
        def backward(ctx, *grads):
            for g, grad in zip(static_grad_outputs, grads):
                if g is not None and grad is not None and g.data_ptr() != grad.data_ptr():
                    g.copy_(grad)
            bwd_graph.replay()
            return tuple(b.detach() if b is not None else None for b in static_grad_inputs)

    def functionalized(*user_args):
        out = Graphed.apply(*(_flat_args(user_args) + module_params))
        return _tree_unflatten(output_spec, iter(out))

    return functionalized


def make_graphed_callables(callables, sample_args, num_warmup_iters=3,
                           allow_unused_input=False, pool=None):
    """Graphed versions of callables (functions or modules, or a tuple of them) for the
    sample arguments' shapes: each forward and each backward is captured once, in a shared
    private pool, and replayed at each call; autograd goes through the replays.  A module's
    forward is replaced, and runs the graph only in the training mode it was captured in."""
    from .. import autograd, empty_like, nn
    _require_cuda_build("CUDAGraph")
    cuda = _cuda()
    cuda._lazy_init()
    just_one = not isinstance(callables, tuple)
    if just_one:
        callables, sample_args = (callables,), (sample_args,)
    flat_sample_args = []
    for c, args in zip(callables, sample_args):
        if isinstance(c, nn.Module):
            _check_module(c)
        flat_sample_args.append(_flat_args(args))
    module_params = [tuple(c.parameters()) if isinstance(c, nn.Module) else ()
                     for c in callables]
    static_inputs = [flat_sample_args[i] + module_params[i] for i in range(len(callables))]
    fwd_graphs = [CUDAGraph() for _ in callables]
    bwd_graphs = [CUDAGraph() for _ in callables]
    mempool = graph_pool_handle() if pool is None else pool

    # warm up on a side stream, so that lazy initialisations stay out of the captures
    cuda.synchronize()
    with cuda.stream(cuda.Stream()):
        for func, args, inputs in zip(callables, sample_args, static_inputs):
            for _ in range(num_warmup_iters):
                outputs = []
                _tree_flatten(func(*args), outputs)
                needing = tuple(o for o in outputs if o.requires_grad)
                if needing:
                    autograd.grad(outputs=needing,
                                  inputs=tuple(i for i in inputs if i.requires_grad),
                                  grad_outputs=tuple(empty_like(o) for o in needing),
                                  only_inputs=True, allow_unused=allow_unused_input)
            outputs = needing = None   # the warm-up's tensors go before the captures
    cuda.synchronize()

    # capture the forwards in order, then the backwards in reverse order: the order they
    # run in, so that the shared pool's reuse across graphs is safe
    static_outputs, output_specs = [], []
    for func, args, fwd_graph in zip(callables, sample_args, fwd_graphs):
        with graph(fwd_graph, pool=mempool):
            outputs = func(*args)
        flat = []
        output_specs.append(_tree_flatten(outputs, flat))
        static_outputs.append(tuple(flat))

    static_grad_outputs, static_grad_inputs = [], []
    for inputs, outputs, bwd_graph in zip(reversed(static_inputs), reversed(static_outputs),
                                          reversed(bwd_graphs)):
        grad_outputs = tuple(empty_like(o) if o.requires_grad else None for o in outputs)
        needing = tuple(o for o in outputs if o.requires_grad)
        grads = None
        if needing:
            with graph(bwd_graph, pool=mempool):
                grads = autograd.grad(outputs=needing,
                                      inputs=tuple(i for i in inputs if i.requires_grad),
                                      grad_outputs=tuple(g for g in grad_outputs
                                                         if g is not None),
                                      only_inputs=True, allow_unused=allow_unused_input)
        # one slot per input, None for those that need no gradient
        grads_iter = iter(grads if grads is not None else ())
        static_grad_inputs.append(tuple(next(grads_iter) if i.requires_grad and grads
                                        is not None else None for i in inputs))
        static_grad_outputs.append(grad_outputs)
    static_grad_outputs.reverse()
    static_grad_inputs.reverse()

    ret = []
    for i, func in enumerate(callables):
        graphed = _graphed_function(fwd_graphs[i], bwd_graphs[i], module_params[i],
                                    len(flat_sample_args[i]), output_specs[i],
                                    static_inputs[i], static_outputs[i],
                                    static_grad_outputs[i], static_grad_inputs[i])
        if isinstance(func, nn.Module):
            func.forward = _graphed_forward(func, func.training, graphed, func.forward)
            ret.append(func)
        else:
            ret.append(graphed)
    return ret[0] if just_one else tuple(ret)


def _graphed_forward(module, training, graphed, eager_forward):
    """A module's forward that replays the graphs in the training mode they were captured
    in and runs the module's own forward in the other."""
    def forward(*user_args):
        if module.training == training:
            return graphed(*user_args)
        return eager_forward(*user_args)
    return forward
