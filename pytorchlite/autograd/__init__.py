"""pytorchlite.autograd: backward, grad and grad mode (torch/autograd/__init__.py).

The engine is C (src/autograd/engine.c, Note [Engine]); this module only checks arguments and
turns single tensors into sequences."""
import os
import threading

from .. import _C
from .grad_mode import (enable_grad, enforce_grad_layout_policy, inference_mode, is_grad_enabled,
                        is_inference_mode_enabled, is_multithreading_enabled,
                        is_view_replay_enabled, no_grad, set_grad_enabled,
                        set_multithreading_enabled)
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from . import _hooks  # noqa: F401  (installs the hook runners)
from . import graph  # noqa: F401
from . import functional  # noqa: F401
from . import profiler  # noqa: F401
from .anomaly_mode import (detect_anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled,
                           set_detect_anomaly)
from .function import Function, FunctionCtx, NestedIOFunction, once_differentiable
from .variable import Variable  # noqa: F401

# the handle of one tensor a node saved: grad_fn._raw_saved_<name>, ctx._raw_saved_tensors
SavedTensor = _C.SavedTensor

__all__ = ["backward", "grad", "no_grad", "enable_grad", "set_grad_enabled", "inference_mode",
           "is_grad_enabled", "gradcheck", "gradgradcheck", "GradcheckError", "Function",
           "FunctionCtx", "once_differentiable", "detect_anomaly", "set_detect_anomaly",
           "is_anomaly_enabled", "is_anomaly_check_nan_enabled"]

# call sites in the in-place error skip the package's own frames (Note [In-place provenance])
_C._set_site_prefix(os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep)


def _as_tuple(x):
    if x is None:
        return ()
    if isinstance(x, _C.TensorBase):
        return (x,)
    return tuple(x)


def _grads(outputs, grad_outputs):
    grads = list(_as_tuple(grad_outputs)) if grad_outputs is not None else [None] * len(outputs)
    if len(grads) != len(outputs):
        raise RuntimeError(f"grad_outputs has {len(grads)} elements but outputs has {len(outputs)}")
    return grads


# Per thread, one entry per backward()/grad() call running (innermost last): whether it
# computes only some inputs' gradients (grad(), backward(inputs=...)).  A reentrant checkpoint
# can't run in those (utils.checkpoint, Note [Checkpoint]).
_runs = threading.local()


def _is_checkpoint_valid():
    stack = getattr(_runs, "partial", None)
    return not (stack and stack[-1])


def _run(partial, fn, *args):
    stack = _runs.__dict__.setdefault("partial", [])
    stack.append(partial)
    try:
        return fn(*args)
    finally:
        stack.pop()


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulates the gradients of `tensors` into the .grad of the leaves of their graph."""
    tensors = _as_tuple(tensors)
    if retain_graph is None:
        retain_graph = create_graph
    if inputs is not None and len(_as_tuple(inputs)) == 0:
        raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    inputs = _as_tuple(inputs)
    _run(bool(inputs), _C._run_backward, tensors, _grads(tensors, grad_tensors),
         bool(retain_graph), bool(create_graph), inputs)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of `outputs` with respect to `inputs`, without touching any .grad."""
    outputs = _as_tuple(outputs)
    inputs = _as_tuple(inputs)
    if retain_graph is None:
        retain_graph = create_graph
    if allow_unused is None:
        allow_unused = materialize_grads
    if materialize_grads and not allow_unused:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, "
                         "but got: allow_unused=False.")
    result = _run(True, _C._run_grad, outputs, _grads(outputs, grad_outputs), inputs,
                  bool(retain_graph), bool(create_graph), bool(allow_unused))
    if materialize_grads:
        from .. import zeros_like
        result = tuple(zeros_like(i) if g is None else g for g, i in zip(result, inputs))
    return result
from . import forward_ad  # noqa: E402,F401  (needs grad, defined above)
