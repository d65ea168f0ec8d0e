"""torch.utils.checkpoint: activation checkpointing, written afresh for pytorchlite.

checkpoint(fn, *args) runs fn keeping none of the tensors its ops save for backward, and runs
fn again during backward to get them back (Note [Checkpoint]).

Note [Checkpoint]
~~~~~~~~~~~~~~~~~
use_reentrant=True is an autograd.Function: its forward runs fn under no_grad and saves only
the inputs; its backward reruns fn on detached copies of them with grad enabled (the RNG state
of the first run restored, so dropout draws the same mask, and its autocast state) and calls
autograd.backward on the rerun's outputs, whose input .grads are the Function's answers.
It works only through .backward(): in autograd.grad or backward(inputs=...) its backward
raises PyTorch's error (that inner backward would fill the .grad of every parameter of fn).

use_reentrant=False runs fn with grad enabled under saved_tensors_hooks (Note [Saved tensor
hooks]): the graph is built as usual, but each tensor a node saves is replaced by a numbered
placeholder.  The first unpack of a placeholder reruns fn (RNG restored) under a second pair
of hooks that store what each node saves, in order, under the same numbers; the placeholders
then resolve to those tensors.  The rerun's own graph is thrown away: only its saved values
are used, so autograd.grad, backward(inputs=...) and double backward work as usual.  The
inputs are saved by a node of their own, through whatever hooks surround the call: an inner
checkpoint's inputs thus become placeholders of the outer one (which keeps none of its
intermediates alive), and the rerun of the inner one unpacks them (rerunning the outer).
Unlike PyTorch there is no early stop: the rerun always runs fn to its end; and debug=True is
accepted but adds no operator trace to the errors (pytorchlite records none).  Selective
checkpointing (create_selective_checkpoint_contexts, CheckpointPolicy) needs dispatch modes,
which pytorchlite does not have: it is absent."""
import contextlib
import warnings

from .. import _C
from ..autograd.function import Function
from ..autograd.graph import saved_tensors_hooks
from ..autograd.grad_mode import enable_grad, is_grad_enabled, no_grad

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction",
           "check_backward_validity", "detach_variable", "noop_context_fn",
           "set_checkpoint_debug_enabled", "set_checkpoint_early_stop", "DefaultDeviceType",
           "get_device_states", "set_device_states"]

_checkpoint_debug_enabled = None


class CheckpointError(RuntimeError):
    """Raised when the rerun of a checkpointed function disagrees with its first run."""


class DefaultDeviceType:
    """The device type whose RNG state checkpoint saves when no argument is on a device."""
    _default_device_type = None

    @staticmethod
    def set_device_type(device="cuda"):
        DefaultDeviceType._default_device_type = device

    @staticmethod
    def get_device_type():
        if not DefaultDeviceType._default_device_type:
            from .. import cuda
            DefaultDeviceType._default_device_type = "cuda" if cuda.is_available() else "cpu"
        return DefaultDeviceType._default_device_type


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled):
    """Within the block, debug=... of every non-reentrant checkpoint is `enabled` (None: the
    call's own argument); kept for PyTorch's API, debug changing nothing here."""
    global _checkpoint_debug_enabled
    prev = _checkpoint_debug_enabled
    _checkpoint_debug_enabled = enabled
    try:
        yield
    finally:
        _checkpoint_debug_enabled = prev


def noop_context_fn():
    return contextlib.nullcontext(), contextlib.nullcontext()


def detach_variable(inputs):
    """Each tensor of the tuple detached, keeping its requires_grad."""
    if not isinstance(inputs, tuple):
        raise RuntimeError("Only tuple of tensors is supported. Got Unsupported input type: "
                           f"{type(inputs).__name__}")
    out = []
    for inp in inputs:
        if isinstance(inp, _C.TensorBase):
            x = inp.detach()
            x.requires_grad = inp.requires_grad
            inp = x
        out.append(inp)
    return tuple(out)


def check_backward_validity(inputs):
    if not any(inp.requires_grad for inp in inputs if isinstance(inp, _C.TensorBase)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      stacklevel=2)


def get_device_states(*args):
    """(devices, RNG states) of the CUDA devices the tensor arguments are on."""
    return _cuda_states(args)


def set_device_states(devices, states, *, device_type=None):
    """Restores the RNG states get_device_states returned."""
    from .. import cuda
    for d, s in zip(devices, states):
        cuda.set_rng_state(s, d)


@contextlib.contextmanager
def set_checkpoint_early_stop(enable):
    """Accepted for PyTorch's API; pytorchlite's rerun always runs the function to its end
    (Note [Checkpoint]), which gives the same values."""
    yield


def _autocast_states():
    return {d: _C._autocast_state(d) for d in ("cpu", "cuda")}


@contextlib.contextmanager
def _autocast_as(states):
    """The block runs with the autocast states of the first run."""
    now = _autocast_states()
    try:
        for d, st in states.items():
            _C._set_autocast_state(d, *st)
        yield
    finally:
        for d, st in now.items():
            _C._set_autocast_state(d, *st)


def _cuda_states(args):
    """(devices, states) of the CUDA generators the arguments live on, when CUDA is used."""
    from .. import cuda
    if not cuda.is_available():
        return [], []
    devices = sorted({a.device.index or 0 for a in args
                      if isinstance(a, _C.TensorBase) and a.device.type == "cuda"})
    return devices, [cuda.get_rng_state(d) for d in devices]


@contextlib.contextmanager
def _rng_as_in_forward(enabled, cpu_state, devices, device_states):
    """Runs the block with the RNG state of the first run; the state around it is restored."""
    if not enabled:
        yield
        return
    from .. import cuda, random
    with random.fork_rng(devices=devices, device_type="cuda"):
        random.set_rng_state(cpu_state)
        for d, s in zip(devices, device_states):
            cuda.set_rng_state(s, d)
        yield


class CheckpointFunction(Function):
    """use_reentrant=True (Note [Checkpoint])."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        ctx.autocast = _autocast_states()
        if preserve_rng_state:
            from .. import random
            ctx.fwd_cpu_state = random.get_rng_state()
            ctx.fwd_devices, ctx.fwd_device_states = _cuda_states(args)
        ctx.inputs = [None if isinstance(a, _C.TensorBase) else a for a in args]
        ctx.tensor_indices = [i for i, a in enumerate(args) if isinstance(a, _C.TensorBase)]
        ctx.save_for_backward(*[args[i] for i in ctx.tensor_indices])
        with no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        from .. import autograd
        if not autograd._is_checkpoint_valid():
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or "
                "passing an `inputs` parameter to .backward(). To resolve this error, you can "
                "either set use_reentrant=False, or call .backward() without passing the "
                "`inputs` argument.")
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = t
        states = (ctx.fwd_cpu_state, ctx.fwd_devices, ctx.fwd_device_states) \
            if ctx.preserve_rng_state else (None, [], [])
        with _rng_as_in_forward(ctx.preserve_rng_state, *states):
            detached = detach_variable(tuple(inputs))
            with enable_grad(), _autocast_as(ctx.autocast):
                outputs = ctx.run_function(*detached)
        if isinstance(outputs, _C.TensorBase):
            outputs = (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grads)
                 if isinstance(o, _C.TensorBase) and o.requires_grad]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is "
                               "not necessary")
        outs, gs = zip(*pairs)
        for t in detached:
            if isinstance(t, _C.TensorBase) and t.requires_grad:
                t.grad = None
        autograd.backward(outs, gs)
        return (None, None) + tuple(t.grad if isinstance(t, _C.TensorBase) else None
                                    for t in detached)


class _SaveInputs(Function):
    """Saves the tensors it is given (a dummy input requiring grad makes the node exist);
    its ctx goes into holder, to read them back."""

    @staticmethod
    def forward(ctx, holder, dummy, *tensors):
        ctx.save_for_backward(*tensors)
        holder.append(ctx)
        return _C._functions["empty"]((0,))

    @staticmethod
    def backward(ctx, *grads):
        raise AssertionError("checkpoint's input saver is never differentiated")


class _Placeholder:
    """What a node of the first run keeps instead of a saved tensor: its number in the run."""
    __slots__ = ("frame", "index")

    def __init__(self, frame, index):
        self.frame = frame
        self.index = index


def _meta(t):
    return {"shape": tuple(t.shape), "dtype": t.dtype, "device": t.device}


class _Frame:
    """One non-reentrant checkpoint call (Note [Checkpoint])."""

    def __init__(self, fn, args, kwargs, preserve, determinism_check):
        self.fn = fn
        self.kwargs = kwargs
        self.determinism_check = determinism_check
        self.metadata = []      # per placeholder of the first run
        self.recomputed = None  # per placeholder, after the rerun
        self.recording = False  # whether the rerun is running (pack stores, not numbers)
        self.args = list(args)
        self.input_saver = None
        if is_grad_enabled():
            # the tensor inputs are saved by a node of their own, so that the hooks around the
            # call (an enclosing checkpoint's, save_on_cpu, ...) keep them as they keep any
            # saved tensor: an inner checkpoint keeps none of the outer one's intermediates
            tensors = [a for a in args if isinstance(a, _C.TensorBase)]
            holder = []
            dummy = _C._functions["empty"]((0,), requires_grad=True)
            self.saver_output = _SaveInputs.apply(holder, dummy, *tensors)
            self.input_saver = holder[0]
            self.args = [None if isinstance(a, _C.TensorBase) else a for a in args]
        self.preserve = preserve
        self.autocast = _autocast_states()
        if preserve:
            from .. import random
            self.cpu_state = random.get_rng_state()
            self.devices, self.device_states = _cuda_states(args)
        else:
            self.cpu_state, self.devices, self.device_states = None, [], []

    def pack(self, t):
        if self.recomputed is not None and self.recording:
            if len(self.recomputed) >= len(self.metadata):
                raise CheckpointError(
                    "torch.utils.checkpoint: trying to save more tensors during recomputation "
                    "than during the original forward pass.\n")
            self.recomputed.append(t)
            return t
        self.metadata.append(_meta(t))
        return _Placeholder(self, len(self.metadata) - 1)

    def unpack(self, p):
        if not isinstance(p, _Placeholder):
            return p
        if p.frame is not self:
            return p.frame.unpack(p)
        if self.recomputed is None or self.recomputed[p.index] is _USED:
            self.recompute()
        # handed out once: a backward unpacks each saved tensor once, and keeping it would
        # hold the rerun's intermediates as long as the graph (a second backward through a
        # retained graph reruns the function)
        t = self.recomputed[p.index]
        self.recomputed[p.index] = _USED
        return t

    def recompute(self):
        # the inputs themselves, not detached copies: what the rerun saves is then part of
        # their graph, so double backward reaches them
        args = list(self.args)
        if self.input_saver is not None:
            saved = iter(self.input_saver.saved_tensors)
            args = [next(saved) if a is None else a for a in args]
        self.recomputed = []
        self.recording = True
        try:
            with _rng_as_in_forward(self.preserve, self.cpu_state, self.devices,
                                    self.device_states), enable_grad(), \
                    _autocast_as(self.autocast), saved_tensors_hooks(self.pack, self.unpack):
                self.fn(*args, **self.kwargs)
        except BaseException:
            self.recomputed = None
            raise
        finally:
            self.recording = False
        self.check()

    def check(self):
        got = self.recomputed
        if len(got) != len(self.metadata):
            self.recomputed = None
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved during the "
                "original forward and recomputation.\n"
                f"Number of tensors saved during forward: {len(self.metadata)}\n"
                f"Number of tensors saved during recomputation: {len(got)}.\n")
        if self.determinism_check == "none":
            return
        bad = [(i, m, _meta(t)) for i, (m, t) in enumerate(zip(self.metadata, got))
               if m != _meta(t)]
        if bad:
            self.recomputed = None
            lines = "".join(f"tensor at position {i}:\nsaved metadata: {m}\n"
                            f"recomputed metadata: {r}\n" for i, m, r in bad)
            raise CheckpointError(
                "torch.utils.checkpoint: Recomputed values for the following tensors have "
                f"different metadata than during the forward pass.\n{lines}.\n")


_DETERMINISM_MODES = ("default", "none")
_USED = object()


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn,
               determinism_check="default", debug=False, early_stop=True, **kwargs):
    """Runs function(*args, **kwargs) keeping only its inputs for backward; backward runs it
    again to get the tensors its ops need (Note [Checkpoint])."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
            "Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an "
            "exception. use_reentrant=False is recommended, but if you need to preserve the "
            "current default behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        return CheckpointFunction.apply(function, preserve, *args)
    if determinism_check not in _DETERMINISM_MODES:
        raise ValueError("determinism_check should be one of "
                         f"{list(_DETERMINISM_MODES)}, but got {determinism_check}")
    forward_ctx, recompute_ctx = context_fn()
    frame = _Frame(function, args, kwargs, preserve, determinism_check)
    if recompute_ctx is not None and not isinstance(recompute_ctx, contextlib.nullcontext):
        fn = frame.fn

        def in_recompute_ctx(*a, **k):
            with recompute_ctx:
                return fn(*a, **k)
        frame.fn = in_recompute_ctx
    with forward_ctx, saved_tensors_hooks(frame.pack, frame.unpack):
        return function(*args, **kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Runs the functions (or an nn.Sequential's children) in order, in `segments` chunks of
    which all but the last are checkpointed."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should "
            "be passed explicitly. In version 2.9 we will raise an exception if use_reentrant "
            "is not passed. use_reentrant=False is recommended, but if you need to preserve "
            "the current default behavior, you can pass use_reentrant=True. Refer to docs for "
            "more details on the differences between the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run(start, end):
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x
        return forward

    from ..nn.modules.container import Sequential
    if isinstance(functions, Sequential):
        functions = list(functions.children())
    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return run(end + 1, len(functions) - 1)(input)
