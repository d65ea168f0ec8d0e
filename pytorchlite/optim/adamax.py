"""Adamax (torch/optim/adamax.py): Adam with the infinity norm of past gradients."""
from .. import _C
from ._functional import (adam_defaults, apply_weight_decay, as_real, bias_corrections, grads,
                          next_step)
from .optimizer import Optimizer


class Adamax(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        super().__init__(params, adam_defaults(lr, betas, eps, weight_decay, foreach=foreach,
                                               maximize=maximize, differentiable=differentiable,
                                               capturable=capturable))

    def step(self, closure=None):
        def update(group):
            beta1, beta2 = group["betas"]
            lr, eps, wd = group["lr"], group["eps"], group["weight_decay"]
            for p, g in grads(group):
                state = self.state[p]
                step = next_step(state, p, "exp_avg", "exp_inf")
                exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
                if p.is_complex():   # Note [Complex parameters] in _functional.py
                    p, g, exp_avg, exp_inf = as_real(p, g, exp_avg, exp_inf)
                g = apply_weight_decay(p, g, lr, wd)
                exp_avg.lerp_(g, 1 - beta1)
                # u_t = max(beta2 * u_{t-1}, |g| + eps)
                _C._functions["maximum"](exp_inf.mul_(beta2), g.abs().add_(eps), out=exp_inf)
                p.addcdiv_(exp_avg, exp_inf, value=-lr / bias_corrections(beta1, beta2, step)[0])
        return self._run_step(closure, update)
