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
