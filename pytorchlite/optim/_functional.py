"""Shared pieces of the optimizers: argument checks, per-parameter state, weight decay, Adam's
moments, and the fused C steps (Note [Fused optimizer step]) with the test for using them."""
from .. import _C


def check_nonneg(name, value):
    if not 0.0 <= value:
        raise ValueError(f"Invalid {name}: {value}")


def check_betas(betas):
    for i, beta in enumerate(betas):
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {beta}")


def adam_defaults(lr, betas, eps, weight_decay, **options):
    """The defaults of Adam, AdamW, Adamax, NAdam and RAdam, after PyTorch's checks (and
    messages) on the four arguments they share."""
    check_nonneg("learning rate", lr)
    check_nonneg("epsilon value", eps)
    check_betas(betas)
    check_nonneg("weight_decay value", weight_decay)
    return dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, **options)


def zeros_like(p):
    return _C._functions["zeros_like"](p)


def step_tensor(value=0.0):
    """The `step` counter as PyTorch keeps it: a 0-dim float32 tensor."""
    return _C.tensor(value)


def next_step(state, p, *buffers, **scalars):
    """Advances the parameter's `step` and returns it as a Python number.  An empty state is
    first created as PyTorch does at the first step, in its state_dict order: `step`, the 0-dim
    float32 tensors given in scalars, then zero buffers shaped like p, named by buffers."""
    if not state:
        state["step"] = step_tensor()
        for name, value in scalars.items():
            state[name] = _C.tensor(value)
        for name in buffers:
            state[name] = zeros_like(p)
    state["step"] += 1
    return state["step"].item()


def as_real(*tensors):
    """Each complex tensor as its real view, [..., 2] of its parts (view_as_real), any other
    tensor or None as given.

    Note [Complex parameters]
    ~~~~~~~~~~~~~~~~~~~~~~~~~
    As PyTorch's, the optimizers update a complex parameter as the real tensor of its parts:
    the parameter, its gradient and its state buffers (complex, made like the parameter, so a
    state_dict holds what PyTorch's holds) are viewed as real before the update.  Adam's
    second moment is then per part (g.real^2 and g.imag^2), not |g|^2, and the updates match
    PyTorch's to the rounding; the fused float step applies to the views as to any real
    parameter."""
    return tuple(None if t is None or not t.is_complex() else _C._functions["view_as_real"](t)
                 for t in tensors)


def grads(group):
    """(param, grad) for each param with a gradient; grad negated when maximizing."""
    for p in group["params"]:
        if p.grad is not None:
            yield p, (-p.grad if group.get("maximize", False) else p.grad)


def apply_weight_decay(p, g, lr, weight_decay, decoupled=False):
    """Returns the gradient after weight decay: g + wd p, or g with p shrunk in place by
    (1 - lr wd) when decoupled (AdamW's)."""
    if weight_decay == 0:
        return g
    if decoupled:
        p.mul_(1 - lr * weight_decay)
        return g
    return g.add(p, alpha=weight_decay)


def update_moments(exp_avg, exp_avg_sq, g, beta1, beta2):
    """Adam's running averages, in place: m = lerp(m, g, 1 - beta1),
    v = beta2 v + (1 - beta2) g^2."""
    exp_avg.lerp_(g, 1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1 - beta2)


def bias_corrections(beta1, beta2, step):
    """(1 - beta1^step, 1 - beta2^step), in Python floats as PyTorch computes them."""
    return 1 - beta1 ** step, 1 - beta2 ** step


_FUSED_DTYPES = None


def fused_allowed(group):
    """The fused C step may replace the op-by-op one: not asked for autograd through the step
    (differentiable), nor for the op-by-op loop (foreach=False)."""
    return not group.get("differentiable", False) and group.get("foreach") is not False


def fusable(p, *others):
    """True when the fused per-parameter C step (Note [Fused optimizer step]) applies: dense
    contiguous float32/float64 tensors of one dtype and size, no autograd through the step.
    Sizes are compared by numel (a shape costs a Size object per call): a gradient has its
    parameter's shape (assignment checks it), state is made like it, and the kernel checks."""
    global _FUSED_DTYPES
    if _FUSED_DTYPES is None:
        _FUSED_DTYPES = (_C.float32, _C.float64)
    dtype = p.dtype
    if dtype not in _FUSED_DTYPES or not p.is_contiguous() or p.requires_grad and \
            _C.is_grad_enabled():
        return False
    n = p.numel()
    for t in others:
        if t.dtype != dtype or t.numel() != n or not t.is_contiguous():
            return False
    return True


fused_sgd_step_ = _C._op("aten::_fused_sgd_step_")
fused_adam_step_ = _C._op("aten::_fused_adam_step_")
