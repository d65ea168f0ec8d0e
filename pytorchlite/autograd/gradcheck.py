"""gradcheck: compares analytical gradients (backward) with finite differences
(torch/autograd/gradcheck.py, written afresh).  Use float64 inputs."""
import itertools
import warnings

from .. import _C


class GradcheckError(RuntimeError):
    pass


def _unravel(k, shape):
    idx = []
    for s in reversed(shape):
        idx.append(k % s)
        k //= s
    return tuple(reversed(idx))


def _flat_values(t):
    return t.detach().reshape(-1).tolist()


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _as_tuple(x):
    return (x,) if isinstance(x, _C.TensorBase) else tuple(x)


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=False, fast_mode=False):
    """True when d func / d inputs computed by backward matches central finite differences.

    On a mismatch raises GradcheckError (or returns False) naming the output and input and
    showing both Jacobians' mismatching entries."""
    from .. import zeros as _zeros
    from . import grad as autograd_grad
    from .grad_mode import no_grad

    inputs = _as_tuple(inputs)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, _C.TensorBase) and x.requires_grad]
    if not diff:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, "
                         "but none of the them have requires_grad=True.")
    for i in diff:
        if inputs[i].dtype != _C.float64:
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating "
                          "point. This check will likely fail if all the inputs are not of "
                          "double precision floating point.")
    outputs = _as_tuple(func(*inputs))
    outs = [(j, o) for j, o in enumerate(outputs)
            if isinstance(o, _C.TensorBase) and o.is_floating_point()]

    def fail(msg):
        if raise_exception:
            raise GradcheckError(msg)
        return False

    for j, _ in outs:
        out = _as_tuple(func(*inputs))[j]   # fresh: finite differences bump input versions
        n_out = out.numel()
        # analytical: one backward per output element gives a row of J^T for every input
        analytical = {i: [[0.0] * n_out for _ in range(inputs[i].numel())] for i in diff}
        if out.requires_grad:
            for k in range(n_out):
                g = _zeros(tuple(out.shape), dtype=out.dtype)
                if out.dim() == 0:
                    g.fill_(1.0)
                else:
                    g[_unravel(k, tuple(out.shape))] = 1.0
                grads = autograd_grad([out], [inputs[i] for i in diff], [g], retain_graph=True,
                                      allow_unused=True)
                for i, gi in zip(diff, grads):
                    if gi is None:
                        continue
                    for e, v in enumerate(_flat_values(gi)):
                        analytical[i][e][k] = v
        # numerical: central differences, one input element at a time
        for i in diff:
            x = inputs[i]
            shape = tuple(x.shape)
            numerical = [[0.0] * n_out for _ in range(x.numel())]
            for e in range(x.numel()):
                idx = _unravel(e, shape) if shape else ()
                with no_grad():
                    orig = x[idx].item() if shape else x.item()
                    x[idx] = orig + eps
                    plus = _flat_values(_as_tuple(func(*inputs))[j])
                    x[idx] = orig - eps
                    minus = _flat_values(_as_tuple(func(*inputs))[j])
                    x[idx] = orig
                for k in range(n_out):
                    numerical[e][k] = (plus[k] - minus[k]) / (2 * eps)
            bad = [(e, k) for e, k in itertools.product(range(x.numel()), range(n_out))
                   if abs(numerical[e][k] - analytical[i][e][k]) > atol + rtol * abs(numerical[e][k])]
            if bad:
                rows = "\n".join(f"  input element {e}, output element {k}: numerical "
                                 f"{numerical[e][k]:.6g}, analytical {analytical[i][e][k]:.6g}"
                                 for e, k in bad[:10])
                more = f"\n  ... and {len(bad) - 10} more" if len(bad) > 10 else ""
                return fail(f"Jacobian mismatch for output {j} with respect to input {i},\n"
                            f"{rows}{more}")
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  raise_exception=True):
    """gradcheck of the gradient itself (create_graph=True backward)."""
    from .. import zeros as _zeros
    from . import grad as autograd_grad

    inputs = _as_tuple(inputs)
    diff = [x for x in inputs if isinstance(x, _C.TensorBase) and x.requires_grad]
    outputs = _as_tuple(func(*inputs))
    if grad_outputs is None:
        import random
        rnd = random.Random(0)
        grad_outputs = []
        for o in outputs:
            g = _zeros(tuple(o.shape), dtype=o.dtype)
            flat = g.reshape(-1)
            for k in range(flat.numel()):
                flat[k] = rnd.uniform(-1, 1)
            grad_outputs.append(g.requires_grad_(True))
    grad_outputs = list(_as_tuple(grad_outputs))

    from .grad_mode import enable_grad

    def first_grads(*args):
        xs = args[:len(inputs)]
        gos = args[len(inputs):]
        with enable_grad():   # gradcheck evaluates us under no_grad for finite differences
            outs = _as_tuple(func(*xs))
            gs = autograd_grad(outs, [x for x in xs if isinstance(x, _C.TensorBase) and x.requires_grad],
                               gos, create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(first_grads, tuple(inputs) + tuple(grad_outputs), eps=eps, atol=atol,
                     rtol=rtol, raise_exception=raise_exception) if diff else True
