"""NAdam (torch/optim/nadam.py): Adam with Nesterov momentum and a momentum-decay schedule
mu_t = beta1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))."""
from ._functional import (adam_defaults, apply_weight_decay, as_real, bias_corrections,
                          check_nonneg, grads, next_step, update_moments)
from .optimizer import Optimizer


class NAdam(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False):
        defaults = adam_defaults(lr, betas, eps, weight_decay, momentum_decay=momentum_decay,
                                 decoupled_weight_decay=decoupled_weight_decay,
                                 maximize=maximize, foreach=foreach, capturable=capturable,
                                 differentiable=differentiable)
        check_nonneg("momentum_decay value", momentum_decay)
        super().__init__(params, defaults)

    def step(self, closure=None):
        def update(group):
            beta1, beta2 = group["betas"]
            lr, eps, wd = group["lr"], group["eps"], group["weight_decay"]
            decay = group["momentum_decay"]
            for p, g in grads(group):
                state = self.state[p]
                # mu_product: a float32 tensor as in PyTorch, so the product rounds the same way
                step = next_step(state, p, "exp_avg", "exp_avg_sq", mu_product=1.0)
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                if p.is_complex():   # Note [Complex parameters] in _functional.py
                    p, g, exp_avg, exp_avg_sq = as_real(p, g, exp_avg, exp_avg_sq)
                g = apply_weight_decay(p, g, lr, wd, group["decoupled_weight_decay"])
                mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * decay))
                mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * decay))
                state["mu_product"] *= mu
                mu_product = state["mu_product"].item()
                update_moments(exp_avg, exp_avg_sq, g, beta1, beta2)
                denom = exp_avg_sq.div(bias_corrections(beta1, beta2, step)[1]).sqrt().add_(eps)
                p.addcdiv_(g, denom, value=-lr * (1.0 - mu) / (1.0 - mu_product))
                p.addcdiv_(exp_avg, denom, value=-lr * mu_next / (1.0 - mu_product * mu_next))
        return self._run_step(closure, update)
