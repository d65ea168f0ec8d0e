"""Adafactor (torch/optim/_adafactor.py): second moments kept factored for matrices (a row
and a column running mean of squared gradients, their outer product over the rows' mean
standing for the full matrix: memory O(m + n), not O(mn)), a relative step
rho_t = min(lr, 1 / sqrt(t)) scaled by the parameter's RMS, beta2_t = 1 - t^beta2_decay, and
updates clipped to RMS <= d.  Weight decay is decoupled (scaled by lr), as PyTorch does it."""
from .. import _C
from .._type_info import finfo
from ._functional import grads, step_tensor
from .optimizer import Optimizer


class Adafactor(Optimizer):
    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0,
                 weight_decay=0.0, *, foreach=None, maximize=False):
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        super().__init__(params, dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d,
                                      weight_decay=weight_decay, foreach=foreach,
                                      maximize=maximize))

    def _new_state(self, p, g):
        state = self.state[p]
        state["step"] = step_tensor()
        if g.dim() > 1:
            state["row_var"] = g.new_zeros(tuple(g.shape[:-1]) + (1,))
            state["col_var"] = g.new_zeros(tuple(g.shape[:-2]) + (1, g.shape[-1]))
        else:
            state["variance"] = _C._functions["zeros_like"](g)
        return state

    def step(self, closure=None):
        def update(group):
            lr, wd, d = group["lr"], group["weight_decay"], group["d"]
            eps1, eps2 = group["eps"]
            for p, g in grads(group):
                if p.is_complex():
                    raise RuntimeError("Adafactor does not support complex parameters")
                if g.is_sparse:
                    raise RuntimeError("Adafactor does not support sparse gradients")
                state = self.state[p] or self._new_state(p, g)
                if eps1 is None:   # the first parameter's dtype decides, as in PyTorch
                    eps1 = finfo(p.dtype).eps
                state["step"] += 1
                t = state["step"].item()
                one_minus_beta2 = t ** group["beta2_decay"]
                rho = min(lr, 1 / t ** 0.5)
                alpha = max(eps2, p.norm(2).item() / p.numel() ** 0.5) * rho
                if wd != 0:
                    p.mul_(1 - lr * wd)
                if g.dim() > 1:
                    row_var, col_var = state["row_var"], state["col_var"]
                    row_var.lerp_(g.norm(dim=-1, keepdim=True).square_().div_(g.shape[-1]),
                                  one_minus_beta2)
                    col_var.lerp_(g.norm(dim=-2, keepdim=True).square_().div_(g.shape[-2]),
                                  one_minus_beta2)
                    variance = row_var @ col_var
                    variance.div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1))
                else:
                    state["variance"].lerp_(g * g, one_minus_beta2)
                    variance = state["variance"].clone()
                step = variance.clamp_(min=eps1 * eps1).rsqrt_().mul_(g)
                clip = max(1.0, step.norm(2).item() / (step.numel() ** 0.5 * d))
                p.add_(step, alpha=-alpha / clip)
        return self._run_step(closure, update)
