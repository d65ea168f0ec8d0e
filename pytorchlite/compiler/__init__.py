"""torch.compile and torch.compiler.

Note [torch.compile runs the code as written]
PyTorch's torch.compile captures a function's Python bytecode (TorchDynamo), turns the tensor
operations into an FX graph and hands it to a backend that generates code (Inductor).  A
program written for PyTorch 2 calls it once on its model and expects the same results.
pytorchlite has no bytecode capture, so every named backend runs the function or module as
written: the results, gradients, hooks, random draws and Python side effects are eager
mode's, for any input.  What is kept is the interface: the same signature, the same decorator
forms, the same wrapper (an OptimizedModule whose state_dict keys carry "_orig_mod.", which is
what checkpoints saved from compiled PyTorch models contain), and the same errors for a bad
mode, backend or combination of arguments.

Why not replay a trace: torch.jit.trace records only the tensor operations of one call, so a
replay would silently drop Python side effects (a counter, a list append), bake in the branch
a value-dependent `if` took and the Python random numbers it drew.  Dynamo guards against
those; a trace cannot, so torch.compile never replays one behind a program's back.  A
program that wants a fused graph asks for it: torch.jit.trace(model, x) and
torch.jit.optimize_for_inference (docs/handbook/the-jit.md).

A callable backend is such a request: `backend(gm, example_inputs)` receives the torch.fx
graph of the model (symbolic_trace on the first call, whose arguments are example_inputs) and
returns what runs every call after.  A model fx cannot trace (control flow on a tensor) runs
as written, with one warning, where Dynamo would break the graph; fullgraph=True raises
instead.  A backend that raises makes the call raise BackendCompilerFailed, as PyTorch's."""
import contextlib
import functools
import inspect
import warnings

from .._dynamo.eval_frame import OptimizedModule
from .._dynamo.exc import BackendCompilerFailed, InvalidBackend
from ..nn.modules.module import Module

_MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")
# name -> tags, as PyTorch's registry lists them (list_backends hides "debug" and
# "experimental" by default); each runs the code as written (Note above)
_BACKENDS = {"inductor": (), "eager": ("debug",), "aot_eager": ("debug",)}
_STANCES = ("default", "force_eager", "eager_on_recompile", "fail_on_recompile",
            "eager_then_compile", "aot_eager_then_compile")
_default_backend = "inductor"


def list_backends(exclude_tags=("debug", "experimental")):
    """The names torch.compile(backend=...) accepts, without those tagged exclude_tags."""
    excluded = set(exclude_tags or ())
    return sorted(n for n, tags in _BACKENDS.items() if not excluded.intersection(tags))


def _check_backend(backend):
    if isinstance(backend, str):
        if backend not in _BACKENDS:
            raise InvalidBackend(backend)
        return
    if not callable(backend):
        raise InvalidBackend(backend)


class _GraphCompiled:
    """model's calls through a callable backend: the first call traces model with torch.fx
    and hands the GraphModule and the call's arguments to the backend; every call runs what
    the backend returned (Note [torch.compile runs the code as written])."""

    def __init__(self, model, backend, fullgraph):
        self._model = model
        self._backend = backend
        self._fullgraph = fullgraph
        self._compiled = None

    def _trace(self):
        from .. import fx
        root = self._model
        if inspect.ismethod(root) and isinstance(root.__self__, Module) and \
                root.__func__ is type(root.__self__).forward:
            root = root.__self__
        return fx.symbolic_trace(root)

    def _compile(self, args):
        try:
            gm = self._trace()
        except Exception as e:
            if self._fullgraph:
                raise
            warnings.warn(f"torch.compile: torch.fx cannot trace {_name_of(self._model)} "
                          f"({type(e).__name__}: {e}); it runs as written")
            return self._model
        try:
            compiled = self._backend(gm, list(args))
        except Exception as e:
            raise BackendCompilerFailed(self._backend, e) from e
        if not callable(compiled):
            raise BackendCompilerFailed(
                self._backend, TypeError("the backend did not return a callable"))
        return compiled

    def __call__(self, *args, **kwargs):
        if self._compiled is None:
            self._compiled = self._compile(args)
        return self._compiled(*args, **kwargs)


def _name_of(model):
    return type(model).__name__ if isinstance(model, Module) else \
        getattr(model, "__name__", repr(model))


def get_default_backend():
    """The backend torch.compile uses when backend is None."""
    return _default_backend


def set_default_backend(backend):
    """Sets the backend torch.compile uses when backend is None (None: "inductor")."""
    global _default_backend
    if backend is None:
        backend = "inductor"
    _check_backend(backend)
    _default_backend = backend


def compile(model=None, *, fullgraph=False, dynamic=None, backend=None, mode=None,
            options=None, name=None, disable=False, recompile_limit=None,
            isolate_recompiles=False, shapes_spec=None):
    """torch.compile: returns model wrapped for compilation, with PyTorch's signature, forms
    and argument checks.  The wrapped code runs as written (Note [torch.compile runs the code
    as written]): results are exactly eager mode's."""
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be "
                           "specified at the same time.")
    if mode is not None and mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(_MODES)}")
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"torch.compile: options must be a dict, got {type(options).__name__}")
    if dynamic is not None and not isinstance(dynamic, bool):
        raise AssertionError(f"Expected enable to be a bool, got {type(dynamic)}")
    _check_backend(_default_backend if backend is None else backend)
    settings = {"fullgraph": fullgraph, "dynamic": dynamic,
                "backend": _default_backend if backend is None else backend, "mode": mode,
                "options": options, "name": name}
    if model is None:
        def decorate(fn):
            return compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                           options=options, name=name, disable=disable,
                           recompile_limit=recompile_limit,
                           isolate_recompiles=isolate_recompiles, shapes_spec=shapes_spec)
        return decorate
    if not callable(model):
        raise AssertionError(f"A callable function is expected, but {type(model)} is provided.")
    if disable:
        return model
    runs = model if isinstance(settings["backend"], str) else \
        _GraphCompiled(model, settings["backend"], fullgraph)
    if isinstance(model, Module):
        return OptimizedModule(model, settings, runs)

    @functools.wraps(model)
    def compiled(*args, **kwargs):
        return runs(*args, **kwargs)

    compiled._torchdynamo_orig_callable = model
    return compiled


def reset():
    """Clears compiled code caches: running the code as written keeps none."""


def disable(fn=None, recursive=True, *, reason=None):
    """Marks fn to run without compilation, which is how everything runs here."""
    if fn is None:
        return functools.partial(disable, recursive=recursive, reason=reason)
    if not callable(fn):
        raise TypeError(f"torch.compiler.disable expects a callable, got {type(fn).__name__}")
    return fn


def allow_in_graph(fn):
    """Lets fn appear as one node of a captured graph; with no capture it is fn itself."""
    if isinstance(fn, (list, tuple)):
        return [allow_in_graph(x) for x in fn]
    if not callable(fn):
        raise TypeError("allow_in_graph expects a callable")
    return fn


def assume_constant_result(fn):
    """Lets a captured graph treat fn's result as a constant; without capture, fn itself."""
    return fn


def substitute_in_graph(original_fn, *, can_constant_fold_through=False,
                        skip_signature_check=False):
    """Registers a traceable stand-in for original_fn; without capture the original runs."""
    if not callable(original_fn):
        raise TypeError(f"substitute_in_graph expects a callable, got "
                        f"{type(original_fn).__name__}")
    return lambda polyfill: polyfill


def is_compiling():
    """Whether the caller runs inside a graph capture: never here."""
    return False


def is_dynamo_compiling():
    """Whether the caller runs inside TorchDynamo's capture: never here."""
    return False


def is_exporting():
    """Whether the caller runs inside torch.export: never here."""
    return False


def cudagraph_mark_step_begin():
    """Marks a training step's start for CUDA graph trees; nothing to mark here."""


class set_stance(contextlib.ContextDecorator):
    """Sets how compiled functions behave ("default", "force_eager", ...); usable as a call,
    a context manager and a decorator, as PyTorch's.  Every stance runs the code as written
    here; an unknown stance is refused at the call (PyTorch only refuses it at the next
    compiled call)."""

    def __init__(self, stance="default", *, skip_guard_eval_unsafe=False, force_backend=None):
        if stance not in _STANCES:
            raise RuntimeError(f"invalid torch.compile stance '{stance}', expected one of: "
                               f"{', '.join(_STANCES)}")
        if force_backend is not None:
            if stance != "default":
                raise RuntimeError("non-default stance cannot have force_backend set")
            _check_backend(force_backend)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


__all__ = ["compile", "reset", "disable", "allow_in_graph", "assume_constant_result",
           "substitute_in_graph", "is_compiling", "is_dynamo_compiling", "is_exporting",
           "list_backends", "get_default_backend", "set_default_backend", "set_stance",
           "cudagraph_mark_step_begin"]
