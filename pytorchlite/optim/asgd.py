"""ASGD (torch/optim/asgd.py): averaged stochastic gradient descent.  SGD with a decaying
rate eta = lr / (1 + lambd lr t)^alpha and a decay of the parameter by lambd eta, keeping in
`ax` the running average of the parameters from step t0 on (before t0 it tracks the
parameter itself)."""
from .. import _C
from ._functional import apply_weight_decay, as_real, check_nonneg, grads, next_step
from .optimizer import Optimizer


class ASGD(Optimizer):
    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
                 foreach=None, maximize=False, differentiable=False, capturable=False):
        check_nonneg("learning rate", lr)
        check_nonneg("weight_decay value", weight_decay)
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0,
                                      weight_decay=weight_decay, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable,
                                      capturable=capturable))

    def step(self, closure=None):
        def update(group):
            lr, lambd, alpha, t0 = group["lr"], group["lambd"], group["alpha"], group["t0"]
            for p, g in grads(group):
                if g.is_sparse:
                    raise RuntimeError("ASGD does not support sparse gradients")
                state = self.state[p]
                step = next_step(state, p, "ax", eta=lr, mu=1.0) if not state \
                    else next_step(state, p)
                ax = state["ax"]
                if p.is_complex():   # Note [Complex parameters] in _functional.py
                    p, g, ax = as_real(p, g, ax)
                if group["foreach"]:
                    foreach_update(p, g, ax, state, lr, lambd, alpha, t0,
                                   group["weight_decay"])
                    continue
                g = apply_weight_decay(p, g, lr, group["weight_decay"])
                # eta and mu live in 0-dim float32 tensors, as PyTorch keeps them: their
                # values are float32 roundings
                eta, mu = state["eta"].item(), state["mu"].item()
                p.mul_(1 - lambd * eta).add_(g, alpha=-eta)
                if mu != 1:
                    ax.add_(p.sub(ax).mul_(mu))
                else:
                    ax.copy_(p)
                state["eta"].fill_(lr / ((1 + lambd * lr * step) ** alpha))
                state["mu"].fill_(1 / max(1, step - t0))
        return self._run_step(closure, update)


def foreach_update(p, g, ax, state, lr, lambd, alpha, t0, weight_decay):
    """One parameter's step as PyTorch's foreach=True path computes it (_multi_tensor_asgd:
    each _foreach_* op is the tensor op on each parameter, so the one-parameter ops round as
    its do).  It orders the arithmetic otherwise than the op-by-op step, and the results
    differ by float rounding (about 1e-8 relative in float64, where eta's float32 rounding
    scales it):

    - the decay and the gradient in one term, p - eta (g + wd p + lambd p), not
      p (1 - lambd eta) - eta g;
    - ax + mu (p - ax) at every step, where the op-by-op step copies p while mu is 1;
    - the next eta from the float32 `step` tensor in float32 tensor arithmetic, not from the
      step's value in Python floats."""
    inter = g.add(p, alpha=weight_decay) if weight_decay != 0 else g
    inter = inter.add(p, alpha=lambd)
    p.addcmul_(inter, state["eta"], value=-1)
    ax.addcmul_(p.sub(ax), state["mu"])
    step = state["step"]
    state["eta"].copy_(lr / ((1 + lambd * lr * step) ** alpha))
    state["mu"].fill_(1 / max(1, step.item() - t0))
