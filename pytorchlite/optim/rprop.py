"""Rprop (torch/optim/rprop.py): resilient backpropagation.  Each element keeps its own step
size, grown by etaplus while its gradient keeps its sign and shrunk by etaminus when the sign
flips (that element then skips the step and forgets its gradient); the update moves by the
step size against the gradient's sign, its magnitude unused."""
from .. import _C
from ._functional import as_real, check_nonneg, grads, next_step
from .optimizer import Optimizer


class Rprop(Optimizer):
    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        check_nonneg("learning rate", lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        super().__init__(params, dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable,
                                      capturable=capturable))

    def step(self, closure=None):
        def update(group):
            etaminus, etaplus = group["etas"]
            smallest, largest = group["step_sizes"]
            for p, g in grads(group):
                if g.is_sparse:
                    raise RuntimeError("Rprop does not support sparse gradients")
                state = self.state[p]
                if not state:
                    next_step(state, p, "prev")
                    # a complex parameter's parts are two real ones, each with its step size
                    lr = complex(group["lr"], group["lr"]) if p.is_complex() else group["lr"]
                    state["step_size"] = _C._functions["full_like"](g, lr)
                else:
                    next_step(state, p)
                prev, step_size = state["prev"], state["step_size"]
                if p.is_complex():   # Note [Complex parameters] in _functional.py
                    p, g, prev, step_size = as_real(p, g, prev, step_size)
                # the factor of each element: etaplus where g and prev agree in sign, etaminus
                # where they differ, 1 where either is zero (NaN stays NaN)
                agreement = g.mul(prev).sign()
                where = _C._functions["where"]
                factor = where(agreement.gt(0), etaplus, where(
                    agreement.lt(0), etaminus, where(agreement.eq(0), 1.0, agreement)))
                step_size.mul_(factor).clamp_(smallest, largest)
                g = g.masked_fill(agreement.lt(0), 0)
                p.addcmul_(g.sign(), step_size, value=-1)
                prev.copy_(g)
        return self._run_step(closure, update)
