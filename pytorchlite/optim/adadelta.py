"""Adadelta (torch/optim/adadelta.py): steps scaled by RMS[delta] / RMS[grad], both running
averages with decay rho."""
from ._functional import apply_weight_decay, as_real, check_nonneg, grads, next_step
from .optimizer import Optimizer


class Adadelta(Optimizer):
    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        check_nonneg("learning rate", lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        check_nonneg("epsilon value", eps)
        check_nonneg("weight_decay value", weight_decay)
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                                      maximize=maximize, capturable=capturable, foreach=foreach,
                                      differentiable=differentiable))

    def step(self, closure=None):
        def update(group):
            lr, rho, eps, wd = group["lr"], group["rho"], group["eps"], group["weight_decay"]
            for p, g in grads(group):
                state = self.state[p]
                next_step(state, p, "square_avg", "acc_delta")
                square_avg, acc_delta = state["square_avg"], state["acc_delta"]
                if p.is_complex():   # Note [Complex parameters] in _functional.py
                    p, g, square_avg, acc_delta = as_real(p, g, square_avg, acc_delta)
                g = apply_weight_decay(p, g, lr, wd)
                square_avg.mul_(rho).addcmul_(g, g, value=1 - rho)
                std = square_avg.add(eps).sqrt_()
                delta = acc_delta.add(eps).sqrt_().div_(std).mul_(g)
                acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
                p.add_(delta, alpha=-lr)
        return self._run_step(closure, update)
