"""RMSprop (torch/optim/rmsprop.py): steps scaled by a running RMS of gradients; centered
subtracts the running mean's square, momentum keeps a buffer of scaled steps."""
from ._functional import apply_weight_decay, as_real, check_nonneg, grads, next_step
from .optimizer import Optimizer


class RMSprop(Optimizer):
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        check_nonneg("learning rate", lr)
        check_nonneg("epsilon value", eps)
        check_nonneg("momentum value", momentum)
        check_nonneg("weight_decay value", weight_decay)
        check_nonneg("alpha value", alpha)
        super().__init__(params, dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps,
                                      centered=centered, weight_decay=weight_decay,
                                      capturable=capturable, foreach=foreach, maximize=maximize,
                                      differentiable=differentiable))

    def step(self, closure=None):
        def update(group):
            lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
            wd, momentum = group["weight_decay"], group["momentum"]
            buffers = ("square_avg",) + (("momentum_buffer",) if momentum > 0 else ()) \
                + (("grad_avg",) if group["centered"] else ())
            for p, g in grads(group):
                state = self.state[p]
                next_step(state, p, *buffers)
                square_avg, buf, grad_avg = (state.get(name) for name in
                                             ("square_avg", "momentum_buffer", "grad_avg"))
                if p.is_complex():   # Note [Complex parameters] in _functional.py
                    p, g, square_avg, buf, grad_avg = as_real(p, g, square_avg, buf, grad_avg)
                g = apply_weight_decay(p, g, lr, wd)
                square_avg.mul_(alpha).addcmul_(g, g, value=1 - alpha)
                if group["centered"]:
                    grad_avg.lerp_(g, 1 - alpha)
                    avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
                else:
                    avg = square_avg.sqrt()
                avg.add_(eps)
                if momentum > 0:
                    buf.mul_(momentum).addcdiv_(g, avg)
                    p.add_(buf, alpha=-lr)
                else:
                    p.addcdiv_(g, avg, value=-lr)
        return self._run_step(closure, update)
