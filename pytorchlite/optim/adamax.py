"""Adamax (torch/optim/adamax.py): Adam with the infinity norm of past gradients."""
from .. import _C
from ._functional import check_betas, check_nonneg, grads, step_tensor, zeros_like
from .optimizer import Optimizer


class Adamax(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        check_nonneg("learning rate", lr)
        check_nonneg("epsilon value", eps)
        check_betas(betas)
        check_nonneg("weight_decay value", weight_decay)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize,
                                      differentiable=differentiable, capturable=capturable))

    def step(self, closure=None):
        def update(group):
            beta1, beta2 = group["betas"]
            lr, eps, wd = group["lr"], group["eps"], group["weight_decay"]
            for p, g in grads(group):
                state = self.state[p]
                if not state:
                    state["step"] = step_tensor()
                    state["exp_avg"] = zeros_like(p)
                    state["exp_inf"] = zeros_like(p)
                state["step"] += 1
                step = state["step"].item()
                if wd != 0:
                    g = g.add(p, alpha=wd)
                exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
                exp_avg.lerp_(g, 1 - beta1)
                # u_t = max(beta2 * u_{t-1}, |g| + eps)
                _C._functions["maximum"](exp_inf.mul_(beta2), g.abs().add_(eps), out=exp_inf)
                p.addcdiv_(exp_avg, exp_inf, value=-lr / (1 - beta1 ** step))
        return self._run_step(closure, update)
