"""Forward-mode AD (torch/autograd/forward_ad.py): dual_level, make_dual, unpack_dual.

Note [Forward AD over eager autograd]
PyTorch gives every op a forward-mode formula and carries tangents alongside values.  Here
there are no forward formulas: make_dual returns a tensor that requires grad (a view of the
primal, sharing its memory) and records it with its tangent in the current level, and
unpack_dual(y) computes y's tangent when asked, as the vjp of a vjp w.r.t. the level's duals
(the reverse pass is linear in its cotangent, so differentiating it gives J t; the same trick
as torch.func.jvp, Note [Function transforms over eager autograd]).  What differs from
PyTorch:
- a dual tensor requires grad (PyTorch's does not unless its primal did), so the ops that
  compute y must run with grad mode on: under no_grad they record nothing and y has no tangent;
- each unpack_dual of a computed tensor runs two reverse passes (no cost while computing);
- the primal of a computed tensor is detached when no dual of the level was made from a
  tensor that requires grad, and is the tensor itself otherwise.
Like PyTorch, one level exists at a time, in the whole process (Note [Transform state per
thread] in function.py), and exiting it forgets every tangent.  A custom Function's tangents
come from its jvp (Note [Custom Function jvp over the double vjp] in function.py)."""
import threading
from collections import namedtuple

from .. import _C
from . import grad
from .function import _level_sources, _tangent_pass
from .grad_mode import _DecoratorContextManager, enable_grad

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual",
           "unpack_dual", "dual_level"]


class _Level:
    """The process's forward-AD level, as PyTorch's: shared by every thread, changed under
    lock (Note [Transform state per thread] in function.py)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.index = -1   # -1: no level
        self.duals = []   # (dual tensor, tangent, whether the primal required grad)


_level = _Level()


def enter_dual_level():
    """Enters the forward-AD level (only one may exist) and returns its index, 0."""
    with _level.lock:
        if _level.index >= 0:
            raise RuntimeError("Nested forward mode AD is not supported at the moment")
        _level.index = 0
        return _level.index


def exit_dual_level(*, level=None):
    """Leaves the level; every dual made in it loses its tangent."""
    with _level.lock:
        if level is None:
            level = _level.index
        if level != _level.index:
            raise RuntimeError("Trying to exit a forward AD level that was not the last one "
                               "that was created. This is not supported.")
        if level < 0:
            raise RuntimeError("Dual level must be a positive number.")
        _level_sources.clear()
        _level.duals.clear()
        _level.index = level - 1


def _is_inexact(t):
    return t.dtype.is_floating_point or t.dtype.is_complex


def make_dual(tensor, tangent, *, level=None):
    """A view of tensor carrying tangent at the level (Note [Forward AD over eager
    autograd])."""
    if level is None:
        level = _level.index
    if level < 0:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, "
                           "make sure to enter_dual_level() first.")
    if not _is_inexact(tensor):
        raise ValueError(f"Expected primal to be floating point or complex, but got: "
                         f"{tensor.dtype}")
    if not _is_inexact(tangent):
        raise ValueError(f"Expected tangent to be floating point or complex, but got: "
                         f"{tangent.dtype}")
    if tuple(tensor.shape) != tuple(tangent.shape):
        raise RuntimeError("Trying to set a forward gradient that has a different size than "
                           "that of the original Tensor, this is not supported. Tensor is of "
                           f"size {list(tensor.shape)} while the given forward gradient is of "
                           f"size {list(tangent.shape)}.")
    had_grad = tensor.requires_grad
    with enable_grad():
        dual = tensor.view_as(tensor)
    if not had_grad:
        dual.requires_grad_()
    with _level.lock:
        if any(d is tensor for d, _, _ in _level.duals):
            raise RuntimeError("Making a dual Tensor based on a Tensor that already has a "
                               f"forward gradient at the same level {level} is not supported.")
        _level.duals.append((dual, tangent, had_grad))
        _level_sources.append(dual)
    return dual


UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])
UnpackedDualTensor.__module__ = __name__


def _tangent(tensor):
    """tensor's tangent at the level: J t summed over the duals it depends on, or None when
    it depends on none of them."""
    duals = [(d, t) for d, t, _ in _level.duals]
    if not tensor.requires_grad or not duals:
        return None
    with enable_grad():
        dummy = _C._functions["zeros_like"](tensor).requires_grad_()
        with _tangent_pass():
            back = grad([tensor], [d for d, _ in duals], [dummy], retain_graph=True,
                        create_graph=True, allow_unused=True)
        pairs = [(b, t) for b, (_, t) in zip(back, duals) if b is not None]
        if not pairs:
            return None
        live = [(b, t) for b, t in pairs if b.requires_grad]
        fwd = None
        if live:
            fwd = grad([b for b, _ in live], [dummy], [t for _, t in live],
                       allow_unused=True)[0]
    return _C._functions["zeros_like"](tensor) if fwd is None else fwd.detach()


def unpack_dual(tensor, *, level=None):
    """(primal, tangent) of tensor at the level; tangent is None outside a level and for a
    tensor that depends on no dual."""
    if level is None:
        level = _level.index
    if level < 0:
        return UnpackedDualTensor(tensor, None)
    duals = list(_level.duals)
    for dual, tangent, had_grad in duals:
        if dual is tensor:
            return UnpackedDualTensor(tensor if had_grad else tensor.detach(), tangent)
    keep_graph = any(had_grad for _, _, had_grad in duals)
    return UnpackedDualTensor(tensor if keep_graph else tensor.detach(), _tangent(tensor))


class dual_level(_DecoratorContextManager):
    """Context manager (and decorator) for one forward-AD level: tangents made inside are
    forgotten on exit."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, exc_type, exc_value, traceback):
        exit_dual_level()
