"""Adagrad (torch/optim/adagrad.py): steps divided by the root of the summed squared
gradients; the learning rate decays as lr / (1 + (t - 1) * lr_decay)."""
from .. import _C
from ._functional import (apply_weight_decay, as_real, check_nonneg, grads, next_step,
                          step_tensor)
from .optimizer import Optimizer


class Adagrad(Optimizer):
    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
                 eps=1e-10, foreach=None, *, maximize=False, differentiable=False, fused=None):
        check_nonneg("learning rate", lr)
        check_nonneg("lr_decay value", lr_decay)
        check_nonneg("weight_decay value", weight_decay)
        check_nonneg("initial_accumulator_value value", initial_accumulator_value)
        check_nonneg("epsilon value", eps)
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, eps=eps,
                                      weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      foreach=foreach, maximize=maximize,
                                      differentiable=differentiable, fused=fused))
        # PyTorch creates the state eagerly, so a fresh state_dict already holds it
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = step_tensor()
                # a complex parameter's parts each start from the initial value
                init = group["initial_accumulator_value"]
                state["sum"] = _C._functions["full_like"](
                    p, complex(init, init) if p.is_complex() else init)

    def step(self, closure=None):
        def update(group):
            lr, lr_decay, wd, eps = group["lr"], group["lr_decay"], group["weight_decay"], \
                group["eps"]
            for p, g in grads(group):
                state = self.state[p]
                step = next_step(state, p)
                total = state["sum"]
                if p.is_complex():   # Note [Complex parameters] in _functional.py
                    p, g, total = as_real(p, g, total)
                g = apply_weight_decay(p, g, lr, wd)
                clr = lr / (1 + (step - 1) * lr_decay)
                total.addcmul_(g, g, value=1)
                std = total.sqrt().add_(eps)
                p.addcdiv_(g, std, value=-clr)
        return self._run_step(closure, update)
