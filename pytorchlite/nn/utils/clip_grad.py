"""clip_grad_norm_ / clip_grad_value_ (torch/nn/utils/clip_grad.py)."""
import math

from ... import _C
from ...autograd.grad_mode import no_grad


def _grads(parameters):
    if isinstance(parameters, _C.TensorBase):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scales the gradients in place so their joint norm is at most max_norm; returns the norm."""
    grads = _grads(parameters)
    norm_type = float(norm_type)
    if not grads:
        return _C.tensor(0.0)
    with no_grad():
        if norm_type == math.inf:
            norms = [g.abs().max() for g in grads]
            total = _C._functions["stack"](norms).max()
        else:
            norms = [g.norm(norm_type) for g in grads]
            total = _C._functions["stack"](norms).norm(norm_type)
        if error_if_nonfinite and not math.isfinite(total.item()):
            raise RuntimeError(
                f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
                "so it cannot be clipped. To disable this error and scale the gradients by the "
                "non-finite norm anyway, set `error_if_nonfinite=False`")
        clip_coef = max_norm / (total.item() + 1e-6)
        if clip_coef < 1:
            for g in grads:
                g.mul_(clip_coef)
    return total


def clip_grad_value_(parameters, clip_value, foreach=None):
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(min=-clip_value, max=clip_value)
