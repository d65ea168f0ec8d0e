"""SGD with momentum, dampening, Nesterov, weight decay, maximize (torch/optim/sgd.py)."""
from .. import _C
from ._functional import apply_weight_decay, fusable, fused_allowed, fused_sgd_step_
from .optimizer import Optimizer, required


class SGD(Optimizer):
    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        if lr is not required and lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize, foreach=foreach,
                                      differentiable=differentiable, fused=fused))

    def step(self, closure=None):
        def update(group):
            lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
            wd, nesterov, maximize = group["weight_decay"], group["nesterov"], group["maximize"]
            fused_ok = fused_allowed(group)
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p] if momentum != 0 else None
                buf = state.get("momentum_buffer") if state is not None else None
                if fused_ok and fusable(p, p.grad, *(() if buf is None else (buf,))):
                    first = state is not None and buf is None
                    if first:
                        buf = state["momentum_buffer"] = _C._functions["empty_like"](p)
                    fused_sgd_step_(p, p.grad, buf, lr, momentum, dampening, wd, nesterov,
                                    maximize, first)
                    continue
                g = apply_weight_decay(p, -p.grad if maximize else p.grad, lr, wd)
                if state is not None:
                    if buf is None:
                        buf = state["momentum_buffer"] = g.clone()
                    else:
                        buf.mul_(momentum).add_(g, alpha=1 - dampening)
                    g = g.add(buf, alpha=momentum) if nesterov else buf
                p.add_(g, alpha=-lr)
        return self._run_step(closure, update)
