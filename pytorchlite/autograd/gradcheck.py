"""gradcheck: compares analytical gradients (backward) with finite differences
(torch/autograd/gradcheck.py, written afresh).  Use float64 or complex128 inputs.

A complex input or output counts as its real and imaginary parts: the check perturbs each
part of each input element, and runs one backward per part of each output element, with
grad_output 1 for the real part and 1j for the imaginary part.  Under PyTorch's convention
(x.grad = dL/dre + i dL/dim for a real L; Note [Complex autograd] in
src/autograd/derivatives/complex.c) the real and imaginary parts of the gradient those
backwards give are the Jacobian's entries for the input's real and imaginary parts, so the
whole real Jacobian is compared, which checks what PyTorch's Wirtinger checks do."""
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


def _real_view(t):
    """t, or for a complex t its (..., 2) real view: the real numbers gradcheck perturbs and
    compares (a complex number is two of them, as in PyTorch's gradcheck); a conj view's
    resolved values (view_as_real refuses the view itself)."""
    from .. import view_as_real
    return view_as_real(t.resolve_conj()) if t.dtype.is_complex else t


def _flat_values(t):
    return _real_view(t.detach()).reshape(-1).cpu().tolist()   # a CUDA t: its host copy


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
        if inputs[i].dtype not in (_C.float64, _C.complex128):
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating "
                          "point or complex. This check will likely fail if all the inputs are "
                          "not of double precision floating point or complex. ")
    outputs = _as_tuple(func(*inputs))
    outs = [(j, o) for j, o in enumerate(outputs)
            if isinstance(o, _C.TensorBase) and (o.is_floating_point() or o.dtype.is_complex)]

    def fail(msg):
        if raise_exception:
            raise GradcheckError(msg)
        return False

    def dof_count(t):
        return t.numel() * (2 if t.dtype.is_complex else 1)

    for j, _ in outs:
        out = _as_tuple(func(*inputs))[j]   # fresh: finite differences bump input versions
        n_out = dof_count(out)
        out_dofs = tuple(_real_view(out).shape)
        # analytical: one backward per real number of the output gives a row of J^T
        analytical = {i: [[0.0] * n_out for _ in range(dof_count(inputs[i]))] for i in diff}
        if out.requires_grad:
            for k in range(n_out):
                g = _zeros(tuple(out.shape), dtype=out.dtype, device=out.device)
                _real_view(g)[_unravel(k, out_dofs)] = 1.0
                grads = autograd_grad([out], [inputs[i] for i in diff], [g], retain_graph=True,
                                      allow_unused=True)
                for i, gi in zip(diff, grads):
                    if gi is None:
                        continue
                    if gi.dtype.is_complex != inputs[i].dtype.is_complex:
                        return fail(f"Gradient for input {i} has dtype {gi.dtype}, but the "
                                    f"input has dtype {inputs[i].dtype}")
                    for e, v in enumerate(_flat_values(gi)):
                        analytical[i][e][k] = v
        # numerical: central differences, one real number of one input at a time
        for i in diff:
            x = inputs[i]
            n_in = dof_count(x)
            numerical = [[0.0] * n_out for _ in range(n_in)]
            with no_grad():
                xr = _real_view(x)
            in_dofs = tuple(xr.shape)
            for e in range(n_in):
                idx = _unravel(e, in_dofs)
                with no_grad():
                    orig = xr[idx].item()
                    xr[idx] = orig + eps
                    plus = _flat_values(_as_tuple(func(*inputs))[j])
                    xr[idx] = orig - eps
                    minus = _flat_values(_as_tuple(func(*inputs))[j])
                    xr[idx] = orig
                for k in range(n_out):
                    numerical[e][k] = (plus[k] - minus[k]) / (2 * eps)
            bad = [(e, k) for e, k in itertools.product(range(n_in), range(n_out))
                   if abs(numerical[e][k] - analytical[i][e][k]) > atol + rtol * abs(numerical[e][k])]
            if bad:
                def part(t, d):
                    return "" if not t.dtype.is_complex else (" (imag)" if d % 2 else " (real)")

                def elem(t, d):
                    return d // 2 if t.dtype.is_complex else d
                rows = "\n".join(f"  input element {elem(x, e)}{part(x, e)}, output element "
                                 f"{elem(out, k)}{part(out, k)}: numerical "
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
            flat = _real_view(g).reshape(-1)
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
