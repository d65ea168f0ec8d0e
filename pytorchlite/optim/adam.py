"""Adam and AdamW (torch/optim/adam.py, adamw.py): bias-corrected moments, amsgrad,
(decoupled) weight decay, maximize.  A float32/float64 contiguous parameter takes the fused C
step from its first step on; the op-by-op update below is its reference."""
import math

from .. import _C
from ._functional import (adam_defaults, apply_weight_decay, as_real, bias_corrections,
                          fusable, fused_adam_step_, fused_allowed, next_step, update_moments)
from .optimizer import Optimizer


class Adam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        super().__init__(params, adam_defaults(
            lr, betas, eps, weight_decay, amsgrad=amsgrad, maximize=maximize, foreach=foreach,
            capturable=capturable, differentiable=differentiable, fused=fused,
            decoupled_weight_decay=decoupled_weight_decay))

    def step(self, closure=None):
        def update(group):
            beta1, beta2 = group["betas"]
            lr, eps, wd = group["lr"], group["eps"], group["weight_decay"]
            amsgrad, maximize = group["amsgrad"], group["maximize"]
            decoupled = group.get("decoupled_weight_decay", False)
            fused_ok = fused_allowed(group)
            buffers = ("exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if amsgrad else ())
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                step = next_step(state, p, *buffers)
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                max_exp_avg_sq = state["max_exp_avg_sq"] if amsgrad else None
                grad = p.grad
                if p.is_complex():   # Note [Complex parameters] in _functional.py
                    p, grad, exp_avg, exp_avg_sq, max_exp_avg_sq = as_real(
                        p, grad, exp_avg, exp_avg_sq, max_exp_avg_sq)
                if fused_ok and fusable(p, grad, exp_avg, exp_avg_sq,
                                        *((max_exp_avg_sq,) if amsgrad else ())):
                    fused_adam_step_(p, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step, lr,
                                     beta1, beta2, wd, eps, maximize, decoupled)
                    continue
                g = apply_weight_decay(p, -grad if maximize else grad, lr, wd, decoupled)
                update_moments(exp_avg, exp_avg_sq, g, beta1, beta2)
                bias1, bias2 = bias_corrections(beta1, beta2, step)
                if amsgrad:
                    _C._functions["maximum"](max_exp_avg_sq, exp_avg_sq, out=max_exp_avg_sq)
                    exp_avg_sq = max_exp_avg_sq
                denom = (exp_avg_sq.sqrt() / math.sqrt(bias2)).add_(eps)
                p.addcdiv_(exp_avg, denom, value=-lr / bias1)
        return self._run_step(closure, update)


class AdamW(Adam):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         amsgrad=amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def __setstate__(self, state):
        # a state_dict loaded into AdamW keeps its weight decay decoupled, as in PyTorch
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
