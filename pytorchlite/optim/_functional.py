"""Shared pieces of the optimizers below: argument checks and per-parameter state set-up."""
from .. import _C


def check_nonneg(name, value):
    if not 0.0 <= value:
        raise ValueError(f"Invalid {name}: {value}")


def check_betas(betas):
    for i, beta in enumerate(betas):
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {beta}")


def zeros_like(p):
    return _C._functions["zeros_like"](p)


def step_tensor(value=0.0):
    """The `step` counter as PyTorch keeps it: a 0-dim float32 tensor."""
    return _C.tensor(value)


def grads(group):
    """(param, grad) for each param with a gradient; grad negated when maximizing."""
    for p in group["params"]:
        if p.grad is not None:
            yield p, (-p.grad if group.get("maximize", False) else p.grad)


_FUSED_DTYPES = None


def fusable(p, *others):
    """True when the fused per-parameter C step (Note [Fused optimizer step]) applies: dense
    contiguous float32/float64 tensors of one dtype and shape, no autograd through the step."""
    global _FUSED_DTYPES
    if _FUSED_DTYPES is None:
        _FUSED_DTYPES = (_C.float32, _C.float64)
    if p.dtype not in _FUSED_DTYPES or not p.is_contiguous() or p.requires_grad and \
            _C.is_grad_enabled():
        return False
    return all(t.dtype == p.dtype and t.shape == p.shape and t.is_contiguous() for t in others)


fused_sgd_step_ = _C._op("aten::_fused_sgd_step_")
fused_adam_step_ = _C._op("aten::_fused_adam_step_")
