"""Adam and AdamW (torch/optim/adam.py, adamw.py): bias-corrected moments, amsgrad,
(decoupled) weight decay, maximize."""
import math

from .. import _C
from ._functional import fusable, fused_adam_step_
from .optimizer import Optimizer


class Adam(Optimizer):
    _decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        differentiable=differentiable, fused=fused)
        if type(self) is Adam:
            defaults["decoupled_weight_decay"] = decoupled_weight_decay
        super().__init__(params, defaults)

    def step(self, closure=None):
        def update(group):
            beta1, beta2 = group["betas"]
            lr, eps, wd = group["lr"], group["eps"], group["weight_decay"]
            decoupled = self._decoupled or group.get("decoupled_weight_decay", False)
            fused_ok = not group["differentiable"] and group["foreach"] is not False
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if fused_ok and state and fusable(p, p.grad, state["exp_avg"],
                                                  state["exp_avg_sq"]) and \
                        (not group["amsgrad"] or fusable(p, state["max_exp_avg_sq"])):
                    state["step"] += 1
                    fused_adam_step_(p, p.grad, state["exp_avg"], state["exp_avg_sq"],
                                     state.get("max_exp_avg_sq") if group["amsgrad"] else None,
                                     state["step"].item(), lr, beta1, beta2, wd, eps,
                                     group["maximize"], decoupled)
                    continue
                g = p.grad if not group["maximize"] else -p.grad
                if not state:
                    state["step"] = _C.tensor(0.0)
                    state["exp_avg"] = _C._functions["zeros_like"](p)
                    state["exp_avg_sq"] = _C._functions["zeros_like"](p)
                    if group["amsgrad"]:
                        state["max_exp_avg_sq"] = _C._functions["zeros_like"](p)
                state["step"] += 1
                step = state["step"].item()
                if wd != 0:
                    if decoupled:
                        p.mul_(1 - lr * wd)
                    else:
                        g = g.add(p, alpha=wd)
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                exp_avg.lerp_(g, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1 - beta2)
                bias1 = 1 - beta1 ** step
                bias2_sqrt = math.sqrt(1 - beta2 ** step)
                if group["amsgrad"]:
                    m = state["max_exp_avg_sq"]
                    _C._functions["maximum"](m, exp_avg_sq, out=m)
                    denom = (m.sqrt() / bias2_sqrt).add_(eps)
                else:
                    denom = (exp_avg_sq.sqrt() / bias2_sqrt).add_(eps)
                p.addcdiv_(exp_avg, denom, value=-lr / bias1)
        return self._run_step(closure, update)


class AdamW(Adam):
    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         amsgrad=amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused)
