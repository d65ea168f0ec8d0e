"""Custom autograd Functions (torch/autograd/function.py, written afresh).

    class Exp(Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            y, = ctx.saved_tensors
            return g * y

    Exp.apply(x)

apply runs forward without recording, then records one graph node named "<Class>Backward"
(src/python/python_function.c) whose backward calls the class's backward.  Saved tensors sit
in the node's saved slots, so modifying one in place is caught as for built-in ops.  A class
that defines jvp gives forward-mode AD its tangents (Note [Custom Function jvp over the double
vjp]); one used under torch.func transforms needs setup_context, and under vmap a vmap
staticmethod or generate_vmap_rule = True (Note [Custom Functions under torch.func]).

Note [Custom Function jvp over the double vjp]
Forward-mode tangents come from two reverse passes (Note [Forward AD over eager autograd] in
forward_ad.py): the first, with create_graph, runs the graph from the output back to the
tangents' sources with a dummy cotangent; the second differentiates that pass w.r.t. the dummy
along the tangents.  Inside a first pass (_tangent_pass()), a custom Function's node does not
run its backward: it records a _JvpBridge node instead, which maps the node's output gradients
to placeholder input gradients.  The map g -> J^T g that the bridge stands for is linear, and
its own vjp is v -> J v, so the bridge's backward is the class's jvp: the second pass hands it
exactly the tangents of the Function's inputs and carries what jvp returns on to the outputs.
So jvp is called (with save_for_forward's tensors as ctx.saved_tensors) once per tangent that
is asked for, not once in forward as in PyTorch; its results are checked then (count,
non-differentiable outputs, shapes, in-place and as-is outputs) with PyTorch's messages.  The
placeholders' values are never used: the first pass's results only carry the graph.  A class
without jvp is refused in apply, as in PyTorch, when an input depends on a tangent's source (a
dual of the level, an input of func.jvp), found by walking the inputs' graphs; one the walk
misses is refused by the first pass.  As in PyTorch, jvp gets zeros for a tensor input without
a tangent and None for other arguments.  What differs: a jvp returning None for a
differentiable output gives it a zero tangent (PyTorch fails an internal assert); jvp may be
called more than once, and never when no tangent is asked for; a dirty input's tangent is
handed to jvp as a copy, so modifying it in place does not reach the caller's tangent; jvp's
own operations are differentiated by an outer forward transform (func.jvp of func.jvp, jacfwd
of jacfwd), where PyTorch 2.13 gives zero second-order tangents through a custom Function.

Note [Transform state per thread]
What apply and the node's backward read of the running transforms (_transforms: how many
torch.func transforms' functions run, each running vmap's randomness, the first passes of
tangent computations, func.jvp's inputs) is per thread, as functorch's interpreter stack is:
a transform on one thread changes nothing that a custom Function on another sees, and an error
that unwinds one thread's transforms leaves the other threads' state as it was.  The engine
runs a backward on the calling thread, so a first pass is always its own thread's.  The
forward-AD level is not per thread, as in PyTorch (torch/csrc/autograd/forward_grad.cpp keeps
its levels in one process-wide list under a mutex): one level exists in the process, a dual
made on any thread is a tangent source for all (_level_sources), and entering a level on a
second thread raises PyTorch's nested-level error (forward_ad.py).
"""
import collections
import functools
import threading

from .. import _C
from .grad_mode import is_grad_enabled, no_grad

_NO_JVP = ("You must implement the jvp function for custom autograd.Function to use it with "
           "forward mode AD.")
_EXTENDING_FUNC = ("For more details, please see "
                   "https://pytorch.org/docs/main/notes/extending.func.html")


class _TransformState(threading.local):
    """What Function.apply needs to know of this thread's running torch.func transforms and
    tangent computations (Note [Transform state per thread])."""

    def __init__(self):
        self.depth = 0            # torch.func transforms whose function is running
        self.vmaps = []           # randomness of each running vmap (innermost last)
        self.tangent_passes = 0   # first passes of tangent computations running
        self.sources = []         # tensors tangents start from: func.jvp's inputs


_transforms = _TransformState()
# the forward-AD level's duals (forward_ad.py), tangent sources of every thread
_level_sources = []


class _transform:
    """Context manager around a torch.func transform's call of its function; vmap_randomness
    is the randomness of a vmap (None for the other transforms)."""

    def __init__(self, vmap_randomness=None):
        self.vmap_randomness = vmap_randomness

    def __enter__(self):
        _transforms.depth += 1
        if self.vmap_randomness is not None:
            _transforms.vmaps.append(self.vmap_randomness)

    def __exit__(self, *exc):
        _transforms.depth -= 1
        if self.vmap_randomness is not None:
            _transforms.vmaps.pop()


class _tangent_pass:
    """Context manager around the first reverse pass of a tangent computation: custom Function
    nodes record their jvp instead of running backward (Note [Custom Function jvp over the
    double vjp])."""

    def __enter__(self):
        _transforms.tangent_passes += 1

    def __exit__(self, *exc):
        _transforms.tangent_passes -= 1


class _tangent_sources:
    """Context manager: tensors tangents start from while a function runs (func.jvp's
    inputs), so that apply refuses a Function without jvp that depends on them."""

    def __init__(self, tensors):
        self.tensors = list(tensors)

    def __enter__(self):
        _transforms.sources.extend(self.tensors)

    def __exit__(self, *exc):
        del _transforms.sources[len(_transforms.sources) - len(self.tensors):]


def _has_sources():
    return bool(_transforms.sources or _level_sources)


def _reaches_source(args):
    """Whether a tensor in args is, or depends through the graph on, a tangent source."""
    sources = _transforms.sources + _level_sources
    source_ids = {id(t) for t in sources}
    source_nodes = {id(t.grad_fn) for t in sources if t.grad_fn is not None}
    seen, stack = {}, []
    for a in args:
        if isinstance(a, _C.TensorBase) and a.requires_grad:
            if id(a) in source_ids:
                return True
            stack.append(a.grad_fn)
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen[id(node)] = node
        if id(node) in source_nodes or id(getattr(node, "variable", None)) in source_ids:
            return True
        stack.extend(f for f, _ in node.next_functions)
    return False


VmapInfo = collections.namedtuple("VmapInfo", ["batch_size", "randomness"])


def _transform_rule(cls):
    """PyTorch's checks on a Function applied under torch.func transforms; the call that runs
    cls's vmap staticmethod under vmap, or None to apply cls as usual (Note [Custom Functions
    under torch.func])."""
    if cls.setup_context is Function.setup_context:
        raise RuntimeError("In order to use an autograd.Function with functorch transforms "
                           "(vmap, grad, jvp, jacrev, ...), it must override the setup_context "
                           "staticmethod. " + _EXTENDING_FUNC)
    if not _transforms.vmaps:
        return None
    has_rule = cls.vmap is not Function.vmap
    generate = getattr(cls, "generate_vmap_rule", False)
    if has_rule and generate:
        raise RuntimeError(f"You tried to vmap over {cls.__name__}, but it has both "
                           "generate_vmap_rule=True and an overridden vmap staticmethod. Please "
                           "set generate_vmap_rule=False or delete the overridden vmap "
                           "staticmethod to avoid ambiguity. " + _EXTENDING_FUNC)
    if not has_rule and not generate:
        raise RuntimeError(f"You tried to vmap over {cls.__name__}, but it does not have vmap "
                           "support. Please override and implement the vmap staticmethod or set "
                           "generate_vmap_rule=True. " + _EXTENDING_FUNC)
    return functools.partial(_apply_vmap_rule, cls) if has_rule else None


def _apply_vmap_rule(cls, *args, **kwargs):
    """One sample of func.vmap through cls's vmap staticmethod: every tensor argument as a
    batch of one at dimension 0, the sample taken back out of each output."""
    randomness = _transforms.vmaps.pop()
    _transforms.depth -= 1
    try:
        in_dims = tuple(0 if isinstance(a, _C.TensorBase) else None for a in args)
        batched = tuple(a.unsqueeze(0) if isinstance(a, _C.TensorBase) else a for a in args)
        result = cls.vmap(VmapInfo(1, randomness), in_dims, *batched, **kwargs)
    finally:
        _transforms.depth += 1
        _transforms.vmaps.append(randomness)
    if not (isinstance(result, tuple) and len(result) == 2):
        raise RuntimeError("Expected the vmap staticmethod to have two returns, an output and "
                           f"out_dims with pytree structure compatible with the output. Got "
                           f"{type(result).__name__}")
    output, out_dims = result
    single = not isinstance(output, tuple)
    outs = (output,) if single else output
    dims = out_dims if isinstance(out_dims, tuple) else (out_dims,) * len(outs)
    if len(dims) != len(outs):
        raise RuntimeError(f"The vmap staticmethod of {cls.__name__} returned out_dims "
                           f"{out_dims!r}, which does not match its {len(outs)} outputs")
    unbatched = tuple(o.select(d, 0) if d is not None and isinstance(o, _C.TensorBase) else o
                      for o, d in zip(outs, dims))
    return unbatched[0] if single else unbatched


class FunctionCtx:
    """The `ctx` of forward/setup_context/backward."""

    def __init__(self):
        self.to_save = ()
        self.saved_for_forward = ()
        self.dirty_tensors = ()
        self.non_differentiable = ()
        self.materialize_grads = True
        self.needs_input_grad = ()
        self._state = None
        self._nsave = 0
        self._in_jvp = False
        self._output_kinds = None

    def save_for_backward(self, *tensors):
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, _C.TensorBase):
                raise TypeError(f"save_for_backward can only save variables, but argument {i} "
                                f"is of type {type(t).__name__}")
        self.to_save = tensors

    def save_for_forward(self, *tensors):
        """Tensors jvp reads as ctx.saved_tensors."""
        if not all(t is None or isinstance(t, _C.TensorBase) for t in tensors):
            raise AssertionError("save_for_forward expects all arguments to be tensors; you "
                                 "should save non-tensors as attributes on ctx.")
        self.saved_for_forward = tensors

    @property
    def _raw_saved_tensors(self):
        """A SavedTensor handle per save_for_backward tensor (see autograd.SavedTensor)."""
        if self._state is None:
            raise RuntimeError("the tensors of this Function are saved once its forward "
                               "returned")
        return _C._function_saved(self._state, True)[:self._nsave]

    @property
    def saved_tensors(self):
        """save_for_backward's tensors (save_for_forward's inside jvp), version-checked."""
        if self._state is None:
            return tuple(self.saved_for_forward if self._in_jvp else self.to_save)
        saved = _C._function_saved(self._state)
        return saved[self._nsave:] if self._in_jvp else saved[:self._nsave]

    def mark_dirty(self, *args):
        self.dirty_tensors = args

    def mark_non_differentiable(self, *args):
        self.non_differentiable = args

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)


class Function:
    """Base class of custom Functions: subclass it with static forward and backward."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward mode AD.")

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError(_NO_JVP)

    @staticmethod
    def vmap(info, in_dims, *args):
        raise NotImplementedError("To use autograd.Function with vmap, you must either override "
                                  "the vmap staticmethod or set generate_vmap_rule=True.")

    @classmethod
    def apply(cls, *args, **kwargs):
        if _transforms.depth:
            rule = _transform_rule(cls)
            if rule is not None:
                return rule(*args, **kwargs)
        if cls.jvp is Function.jvp and _has_sources() and _reaches_source(args):
            raise NotImplementedError(_NO_JVP)
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(isinstance(a, _C.TensorBase) and a.requires_grad
                                     for a in args)
        with no_grad():
            if cls.setup_context is not Function.setup_context:
                output = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, output)
            else:
                output = cls.forward(ctx, *args, **kwargs)
        if not (is_grad_enabled() and any(ctx.needs_input_grad)):
            return output
        outs = output if isinstance(output, tuple) else (output,)
        positions = [k for k, o in enumerate(outs) if isinstance(o, _C.TensorBase)]
        tensors = tuple(outs[k] for k in positions)
        nondiff = {id(t) for t in ctx.non_differentiable}
        differentiable = tuple(id(t) not in nondiff for t in tensors)
        ctx._cls = cls
        ctx._nargs = len(args)
        ctx._tensor_inputs = tuple(i for i, a in enumerate(args) if isinstance(a, _C.TensorBase))
        ctx._output_positions = (len(outs), tuple(positions))
        ctx._output_meta = tuple((tuple(t.shape), t.dtype) for t in tensors)
        if _has_sources():
            _keep_jvp_meta(ctx, args, tensors, differentiable)
        ctx._nsave = len(ctx.to_save)
        recorded = _C._function_record(
            ctx, cls.__name__ + "Backward", tuple(args[i] for i in ctx._tensor_inputs), tensors,
            differentiable, tuple(ctx.dirty_tensors),
            tuple(ctx.to_save) + tuple(ctx.saved_for_forward))
        # the node holds these now; the ctx keeping outputs would be a cycle through C
        ctx.to_save = ctx.saved_for_forward = ctx.dirty_tensors = ctx.non_differentiable = ()
        outs = list(outs)
        for k, t in zip(positions, recorded):
            outs[k] = t
        return tuple(outs) if isinstance(output, tuple) else outs[0]


def _keep_jvp_meta(ctx, args, tensors, differentiable):
    """What the bridge needs of a node made while tangent sources exist (only such a node
    can lie between a tangent's source and a tensor depending on it)."""
    ctx._input_meta = tuple((tuple(args[i].shape), args[i].dtype, args[i].device)
                            for i in ctx._tensor_inputs)
    # per tensor output: whether it may carry a tangent, and the forward argument it is
    # (None for a new tensor) with whether that argument was modified in place
    ctx._output_kinds = tuple(
        (diff and (t.is_floating_point() or t.is_complex()),
         next((i for i in ctx._tensor_inputs if args[i] is t), None),
         any(d is t for d in ctx.dirty_tensors))
        for t, diff in zip(tensors, differentiable))


def _run_backward(ctx, grads):
    """Called by the node: the gradients of the tensor outputs in, those of the tensor inputs
    out (a tuple with one entry per tensor input)."""
    from .. import zeros
    if _transforms.tangent_passes and is_grad_enabled() and ctx._output_kinds is not None:
        if ctx._cls.jvp is Function.jvp:
            raise NotImplementedError(_NO_JVP)
        return _JvpBridge.apply(ctx, *grads)
    cls = ctx._cls
    name = cls.__name__ + "Backward"
    nouts, positions = ctx._output_positions
    if ctx.materialize_grads:
        grads = tuple(zeros(shape, dtype=dtype) if g is None else g
                      for g, (shape, dtype) in zip(grads, ctx._output_meta))
    full = [None] * nouts
    for k, g in zip(positions, grads):
        full[k] = g
    result = cls.backward(ctx, *full)
    if not isinstance(result, tuple):
        result = (result,)
    n = ctx._nargs
    if len(result) > n and all(r is None for r in result[n:]):
        result = result[:n]
    if len(result) != n:
        raise RuntimeError(f"function {name} returned an incorrect number of gradients "
                           f"(expected {n}, got {len(result)})")
    inputs = set(ctx._tensor_inputs)
    for i, r in enumerate(result):
        if r is not None and i not in inputs:
            raise RuntimeError(f"function {name} returned a gradient different than None at "
                               f"position {i + 1}, but the corresponding forward input was not "
                               "a Variable")
    return tuple(result[i] for i in ctx._tensor_inputs)


class _JvpBridge(Function):
    """A custom Function's node inside the first pass of a tangent computation: forward maps
    the node's output gradients to placeholder input gradients, backward is the Function's
    jvp (Note [Custom Function jvp over the double vjp])."""
    generate_vmap_rule = True

    @staticmethod
    def forward(fctx, *grads):
        from .. import zeros
        return tuple(zeros(shape, dtype=dtype, device=device)
                     for shape, dtype, device in fctx._input_meta)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.fctx = inputs[0]
        ctx.defined = tuple(g is not None for g in inputs[1:])

    @staticmethod
    def backward(ctx, *tangents):
        out = _run_jvp(ctx.fctx, tangents)
        return (None,) + tuple(t if d else None for t, d in zip(out, ctx.defined))

    @staticmethod
    def jvp(ctx, *tangents):
        # the placeholders are constants: only their graph is ever used
        return (None,) * len(ctx.fctx._input_meta)


def _run_jvp(ctx, tangents):
    """ctx's class's jvp on the tangents of its tensor inputs (zeros where none flows): the
    checked tangents of its tensor outputs."""
    nouts, positions = ctx._output_positions
    dirty_inputs = {i for _, i, dirty in ctx._output_kinds if dirty}
    full = [None] * ctx._nargs
    for i, t in zip(ctx._tensor_inputs, tangents):
        full[i] = t.clone() if i in dirty_inputs else t
    ctx._in_jvp = True
    try:
        result = ctx._cls.jvp(ctx, *full)
    finally:
        ctx._in_jvp = False
    if not isinstance(result, tuple):
        result = (result,)
    if len(result) != nouts:
        raise RuntimeError(f"Function's jvp returned an invalid number of forward gradients "
                           f"(expected {nouts} but got {len(result)})")
    tensor_out = dict(zip(positions, zip(ctx._output_kinds, ctx._output_meta)))
    out = []
    for k, r in enumerate(result):
        if r is None:
            if k in tensor_out:
                out.append(None)
            continue
        if not isinstance(r, _C.TensorBase):
            raise RuntimeError(f"expected Variable or None (got {type(r).__name__}) for grad "
                               f"output {k}.")
        if k not in tensor_out or not tensor_out[k][0][0]:
            raise RuntimeError(f"Function's jvp returned a gradient at position {k}, but  the "
                               "corresponding forward output is not a differentiable Tensor."
                               "You should return None at that position instead.")
        (_, source, dirty), (shape, _) = tensor_out[k]
        if tuple(r.shape) != shape:
            raise RuntimeError("Trying to set a forward gradient that has a different size than "
                               "that of the original Tensor, this is not supported. Tensor is of "
                               f"size {list(shape)} while the given forward gradient is of size "
                               f"{list(r.shape)}.")
        if dirty and r is not full[source]:
            raise RuntimeError("An inplace custom Function is not modifying the forward mode "
                               "gradients inplace. If the forward is modifying an input "
                               "inplace, then the jvp function must modify the corresponding "
                               "gradient inplace.")
        if source is not None and not dirty and (r is full[source] or not r._is_view()):
            raise RuntimeError("A custom Function's forward is returning a view (or an input "
                               "as-is) but the jvp is not returning a view.")
        out.append(r)
    return tuple(out)


class _DelayedError(Function):
    """Identity whose backward raises: marks the outputs of a once_differentiable backward."""
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return x

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, g):
        raise RuntimeError("trying to differentiate twice a function that was marked with "
                           "@once_differentiable")


def once_differentiable(fn):
    """Decorates a backward that is not itself differentiable: it runs under no_grad, and
    differentiating its result (create_graph=True) raises."""
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            outputs = fn(ctx, *args)
        if not is_grad_enabled():
            return outputs
        if not any(isinstance(a, _C.TensorBase) and a.requires_grad for a in args):
            return outputs
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        wrapped = tuple(_DelayedError.apply(_requiring(o)) if isinstance(o, _C.TensorBase)
                        else o for o in outs)
        return wrapped[0] if single else wrapped
    return wrapper


def _requiring(t):
    t = t.detach()
    return t.requires_grad_(True) if t.is_floating_point() or t.is_complex() else t


# ---- NestedIOFunction: the legacy Function over nested tuples and lists ----

def _nested_leaves(obj, keep_none=False):
    """The tensors (and with keep_none the Nones) of nested tuples / lists, in order."""
    if isinstance(obj, _C.TensorBase) or (keep_none and obj is None):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _nested_leaves(o, keep_none)
    elif obj is not None:
        kind = type(obj)
        name = kind.__qualname__ if kind.__module__ == "builtins" else \
            f"{kind.__module__}.{kind.__qualname__}"
        raise ValueError(f"Auto nesting doesn't know how to process an input object of type "
                         f"{name}. Accepted types: Tensors, or lists/tuples of them")


def _nested_like(flat, proto):
    """flat's items in the nesting of proto (whose Nones stay None)."""
    items = iter(flat)

    def build(p):
        if p is None:
            return None
        if isinstance(p, (list, tuple)):
            return type(p)(build(e) for e in p)
        return next(items)
    return build(proto)


class _NestedIOApply(Function):
    """A NestedIOFunction call as a Function over the flat tensors (fn rides along)."""

    @staticmethod
    def forward(ctx, fn, *flat):
        fn._ctx = ctx
        result = fn.forward_extended(*_nested_like(flat, fn._nested_input))
        del fn._nested_input
        fn._nested_output = result
        ctx.fn = fn
        ctx.save_for_backward(*fn.to_save)
        ctx.mark_dirty(*fn.dirty_tensors)
        ctx.mark_non_differentiable(*fn.non_differentiable)
        return tuple(_nested_leaves(result))

    @staticmethod
    def backward(ctx, *grads):
        fn = ctx.fn
        result = fn.backward_extended(*_nested_like(grads, fn._nested_output))
        return (None,) + tuple(_nested_leaves(result, keep_none=True))


class NestedIOFunction(Function):
    """The legacy Function whose instances are called, with tensors nested in tuples and
    lists: subclass it with forward_extended(*inputs) and backward_extended(*grad_outputs),
    which see (and return) the same nesting, and call an instance once.  PyTorch 2.13 keeps
    the class for backward compatibility only, and calling an instance there fails inside
    its base class (AttributeError: 'super' object has no attribute '_do_forward'); here
    the call works as the class describes."""

    to_save = ()
    dirty_tensors = ()
    non_differentiable = ()

    def __call__(self, *inputs):
        self._nested_input = inputs
        flat = _NestedIOApply.apply(self, *_nested_leaves(inputs))
        return _nested_like(flat, self._nested_output)

    def save_for_backward(self, *args):
        self.to_save = tuple(_nested_leaves(args))
        self._to_save_nested = args

    @property
    def saved_tensors(self):
        return _nested_like(self._ctx.saved_tensors, self._to_save_nested)

    def mark_dirty(self, *args, **kwargs):
        self.dirty_tensors = tuple(_nested_leaves((args, tuple(kwargs.values()))))

    def mark_non_differentiable(self, *args, **kwargs):
        self.non_differentiable = tuple(_nested_leaves((args, tuple(kwargs.values()))))

    def forward_extended(self, *input):
        """User defined forward."""
        raise NotImplementedError

    def backward_extended(self, *grad_output):
        """User defined backward."""
        raise NotImplementedError


_C._set_function_runner(_run_backward)
