"""RAdam (torch/optim/radam.py): Adam whose adaptive step is rectified by the variance of
the adaptive learning rate, and plain momentum SGD while that variance is intractable."""
import math

from ._functional import (adam_defaults, apply_weight_decay, as_real, bias_corrections, grads,
                          next_step, update_moments)
from .optimizer import Optimizer


class RAdam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False,
                 capturable=False, differentiable=False):
        super().__init__(params, adam_defaults(lr, betas, eps, weight_decay, maximize=maximize,
                                               foreach=foreach, capturable=capturable,
                                               decoupled_weight_decay=decoupled_weight_decay,
                                               differentiable=differentiable))

    def step(self, closure=None):
        def update(group):
            beta1, beta2 = group["betas"]
            lr, eps, wd = group["lr"], group["eps"], group["weight_decay"]
            rho_inf = 2 / (1 - beta2) - 1
            for p, g in grads(group):
                state = self.state[p]
                step = next_step(state, p, "exp_avg", "exp_avg_sq")
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                if p.is_complex():   # Note [Complex parameters] in _functional.py
                    p, g, exp_avg, exp_avg_sq = as_real(p, g, exp_avg, exp_avg_sq)
                g = apply_weight_decay(p, g, lr, wd, group["decoupled_weight_decay"])
                update_moments(exp_avg, exp_avg_sq, g, beta1, beta2)
                bias1, bias2 = bias_corrections(beta1, beta2, step)
                corrected = exp_avg / bias1
                rho_t = rho_inf - 2 * step * (beta2 ** step) / bias2
                if rho_t > 5.0:
                    rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf
                                     / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
                    adaptive = math.sqrt(bias2) / exp_avg_sq.sqrt().add_(eps)
                    p.add_(corrected * lr * adaptive * rect, alpha=-1.0)
                else:
                    p.add_(corrected * lr, alpha=-1.0)
        return self._run_step(closure, update)
