"""L-BFGS (torch/optim/lbfgs.py): a quasi-Newton direction from the last history_size
(step, gradient change) pairs by the two-loop recursion, then either a fixed step lr or a
strong-Wolfe line search (bracketing, then zooming with cubic interpolation).

All parameters are handled as one flat vector.  Scalars that PyTorch keeps as 0-dim tensors
(directional derivatives, the step size) stay tensors here too, so float32 problems round
exactly as they do there."""
from .. import _C
from ..autograd.grad_mode import enable_grad, no_grad
from .optimizer import Optimizer


def _cubic_minimum(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimizer of the cubic through (x1, f1) and (x2, f2) with slopes g1, g2, clamped to
    bounds (default: the interval); the midpoint when the cubic has no minimum."""
    lo, hi = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square < 0:
        return (lo + hi) / 2.0
    d2 = d2_square.sqrt()
    if x1 <= x2:
        x = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        x = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(x, lo), hi)


class _Point:
    """One trial step of the line search: step t, loss f, flat gradient g, slope gtd."""

    def __init__(self, t, f, g, gtd):
        self.t, self.f, self.g, self.gtd = t, f, g, gtd


def _strong_wolfe(evaluate, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9,
                  max_ls=25):
    """Returns (loss, flat grad, step, evaluations) at a step satisfying the strong Wolfe
    conditions, or the best one found in max_ls evaluations."""
    d_norm = d.abs().max()
    start = _Point(0, f, g.clone(), gtd)

    def trial(step):
        f_new, g_new = evaluate(step)
        return _Point(step, f_new, g_new, g_new.dot(d))

    def armijo_fails(p):
        return p.f > (f + c1 * p.t * gtd)

    def curvature_holds(p):
        return abs(p.gtd) <= -c2 * gtd

    # bracketing: grow the step until an interval surely holds an acceptable one
    prev, new = start, trial(t)
    evals, it = 1, 0
    bracket, done = None, False
    while it < max_ls:
        if armijo_fails(new) or (it > 1 and new.f >= prev.f):
            bracket = [prev, _Point(new.t, new.f, new.g.clone(), new.gtd)]
            break
        if curvature_holds(new):
            bracket, done = [new], True
            break
        if new.gtd >= 0:
            bracket = [prev, _Point(new.t, new.f, new.g.clone(), new.gtd)]
            break
        step = _cubic_minimum(prev.t, prev.f, prev.gtd, new.t, new.f, new.gtd,
                              bounds=(new.t + 0.01 * (new.t - prev.t), new.t * 10))
        prev = _Point(new.t, new.f, new.g.clone(), new.gtd)
        new = trial(step)
        evals += 1
        it += 1
    if it == max_ls:
        bracket = [start, new]

    # zoom: shrink the bracket around a point satisfying both conditions
    low, high = (0, 1) if bracket[0].f <= bracket[-1].f else (1, 0)
    insufficient = False
    while not done and it < max_ls:
        a, b = bracket[0].t, bracket[1].t
        if abs(b - a) * d_norm < tolerance_change:
            break
        step = _cubic_minimum(a, bracket[0].f, bracket[0].gtd, b, bracket[1].f, bracket[1].gtd)
        top, bottom = max(a, b), min(a, b)
        margin = 0.1 * (top - bottom)
        # a step at (or next to) an end of the bracket twice running moves 10% inside it
        if min(top - step, step - bottom) < margin:
            if insufficient or step >= top or step <= bottom:
                step = top - margin if abs(step - top) < abs(step - bottom) else bottom + margin
                insufficient = False
            else:
                insufficient = True
        else:
            insufficient = False
        new = trial(step)
        evals += 1
        it += 1
        point = _Point(new.t, new.f, new.g.clone(), new.gtd)
        if armijo_fails(new) or new.f >= bracket[low].f:
            bracket[high] = point
            low, high = (0, 1) if bracket[0].f <= bracket[1].f else (1, 0)
        else:
            if curvature_holds(new):
                done = True
            elif new.gtd * (bracket[high].t - bracket[low].t) >= 0:
                bracket[high] = bracket[low]
            bracket[low] = point
    best = bracket[low]
    return best.f, best.g, best.t, evals


class LBFGS(Optimizer):
    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7,
                 tolerance_change=1e-9, history_size=100, line_search_fn=None):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                                      tolerance_grad=tolerance_grad,
                                      tolerance_change=tolerance_change,
                                      history_size=history_size,
                                      line_search_fn=line_search_fn))
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def _flat_grad(self):
        parts = [p.grad.reshape(-1) if p.grad is not None
                 else _C._functions["zeros"](p.numel(), dtype=p.dtype) for p in self._params]
        return _C._functions["cat"](parts, 0)

    def _add_to_params(self, step, direction):
        offset = 0
        for p in self._params:
            n = p.numel()
            p.add_(direction[offset:offset + n].view_as(p), alpha=float(step))
            offset += n

    def _evaluate_at(self, closure, saved, step, direction):
        """Loss and flat gradient at params + step * direction; params are then restored."""
        self._add_to_params(step, direction)
        with enable_grad():
            loss = float(closure())
        flat = self._flat_grad()
        for p, s in zip(self._params, saved):
            p.copy_(s)
        return loss, flat

    def _direction(self, state, flat_grad, history_size):
        """-H g by the two-loop recursion over the stored (s, y) pairs, after adding the newest
        pair when its curvature y.s is positive."""
        y = flat_grad.sub(state["prev_flat_grad"])
        s = state["d"].mul(state["t"])
        ys = y.dot(s)
        dirs, steps, ro = state["old_dirs"], state["old_stps"], state["ro"]
        if ys > 1e-10:
            if len(dirs) == history_size:
                dirs.pop(0)
                steps.pop(0)
                ro.pop(0)
            dirs.append(y)
            steps.append(s)
            ro.append(1.0 / ys)
            state["H_diag"] = ys / y.dot(y)
        al = state.setdefault("al", [None] * history_size)
        q = flat_grad.neg()
        for i in range(len(dirs) - 1, -1, -1):
            al[i] = steps[i].dot(q) * ro[i]
            q.add_(dirs[i], alpha=-float(al[i]))
        r = _C._functions["mul"](q, state["H_diag"])
        for i in range(len(dirs)):
            be_i = dirs[i].dot(r) * ro[i]
            r.add_(steps[i], alpha=float(al[i] - be_i))
        return r

    def step(self, closure):
        """One call runs up to max_iter iterations; closure() re-evaluates the loss and its
        gradients (it must zero them first)."""
        for hook in list(self._optimizer_step_pre_hooks.values()):
            hook(self, (), {})
        with no_grad():
            loss = self._iterate(closure)
        for hook in list(self._optimizer_step_post_hooks.values()):
            hook(self, (), {})
        return loss

    def _iterate(self, closure):
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tol_grad, tol_change = group["tolerance_grad"], group["tolerance_change"]
        history_size, line_search = group["history_size"], group["line_search_fn"]
        if line_search is not None and line_search != "strong_wolfe":
            raise RuntimeError("only 'strong_wolfe' is supported")
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        with enable_grad():
            orig_loss = closure()
        loss = float(orig_loss)
        evals = 1
        state["func_evals"] += 1
        flat_grad = self._flat_grad()
        if flat_grad.abs().max() <= tol_grad:
            return orig_loss
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = flat_grad.neg()
                state.update(old_dirs=[], old_stps=[], ro=[], H_diag=1)
            else:
                d = self._direction(state, flat_grad, history_size)
            if state.get("prev_flat_grad") is None:
                state["prev_flat_grad"] = flat_grad.clone()
            else:
                state["prev_flat_grad"].copy_(flat_grad)
            state["prev_loss"] = prev_loss = loss
            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / flat_grad.abs().sum()) * lr
            else:
                t = lr
            state["d"], state["t"] = d, t
            gtd = flat_grad.dot(d)
            if gtd > -tol_change:
                break
            ls_evals = 0
            if line_search is not None:
                saved = [p.clone() for p in self._params]
                loss, flat_grad, t, ls_evals = _strong_wolfe(
                    lambda step: self._evaluate_at(closure, saved, step, d), t, d, loss,
                    flat_grad, gtd)
                state["t"] = t
                self._add_to_params(t, d)
                converged = flat_grad.abs().max() <= tol_grad
            else:
                self._add_to_params(t, d)
                converged = False
                if n_iter != max_iter:
                    with enable_grad():
                        loss = float(closure())
                    flat_grad = self._flat_grad()
                    converged = flat_grad.abs().max() <= tol_grad
                    ls_evals = 1
            evals += ls_evals
            state["func_evals"] += ls_evals
            if n_iter == max_iter or evals >= max_eval or converged:
                break
            if d.mul(t).abs().max() <= tol_change or abs(loss - prev_loss) < tol_change:
                break
        # the step's results last, in PyTorch's order (state_dict() lists the keys so)
        for key in ("d", "t", "old_dirs", "old_stps", "ro", "H_diag", "prev_flat_grad",
                    "prev_loss"):
            state[key] = state.pop(key)
        return orig_loss
