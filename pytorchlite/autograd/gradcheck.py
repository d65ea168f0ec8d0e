"""gradcheck: compares analytical gradients (backward) with finite differences
(torch/autograd/gradcheck.py, written afresh).  Use float64 or complex128 inputs.

A complex input or output counts as its real and imaginary parts: the check perturbs each
part of each input element, and runs one backward per part of each output element, with
grad_output 1 for the real part and 1j for the imaginary part.  Under PyTorch's convention
(x.grad = dL/dre + i dL/dim for a real L; Note [Complex autograd] in
src/autograd/derivatives/complex.c) the real and imaginary parts of the gradient those
backwards give are the Jacobian's entries for the input's real and imaginary parts, so the
whole real Jacobian is compared, which checks what PyTorch's Wirtinger checks do.

PyTorch's options, each a check of its own (Note [Gradcheck options]):
- nondet_tol: the backward runs twice; the two Jacobians may differ by at most this much.
- check_undefined_grad: backward with every output's gradient undefined, and with one output's
  undefined and the others' zero, gives undefined or zero gradients (and does not fail).
- check_grad_dtypes: each gradient has its input's dtype.
- check_backward_ad (default) / check_forward_ad: the Jacobian from backward / from forward
  AD (dual tensors, one tangent per input number) against finite differences.
- check_batched_grad / check_batched_forward_grad: func.vmap over two random grad_outputs /
  tangents gives what two separate backwards / forward passes give.
- fast_mode: instead of whole Jacobians, v^T J u for random u (over the inputs) and v (over
  the outputs): one directional finite difference and one backward per output pair.
- masked: the masked semantics of sparse inputs; dense inputs have none, and sparse inputs
  are refused (NotImplementedError)."""
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


def _undefined_grad(t):
    """t through a node whose backward gives no gradient (PyTorch's UndefinedGrad)."""
    from .function import Function

    class UndefinedGrad(Function):
        @staticmethod
        def forward(ctx, x):
            return x.view_as(x)

        @staticmethod
        def backward(ctx, g):
            return None

    return UndefinedGrad.apply(t)


def _differentiable(outputs):
    return [(j, o) for j, o in enumerate(outputs)
            if isinstance(o, _C.TensorBase) and (o.is_floating_point() or o.dtype.is_complex)]


def _dof_count(t):
    return t.numel() * (2 if t.dtype.is_complex else 1)


def _basis(t, k):
    """A tensor like t that is 0 but for its k-th real number, 1."""
    from .. import zeros as _zeros
    g = _zeros(tuple(t.shape), dtype=t.dtype, device=t.device)
    _real_view(g)[_unravel(k, tuple(_real_view(t).shape))] = 1.0
    return g


def _random_like(t, rnd):
    from .. import tensor
    flat = [rnd.uniform(-1, 1) for _ in range(_dof_count(t))]
    r = tensor(flat, dtype=t.dtype.to_real() if t.dtype.is_complex else t.dtype)
    if t.dtype.is_complex:
        from .. import view_as_complex
        r = view_as_complex(r.reshape(tuple(t.shape) + (2,)))
    return r.reshape(tuple(t.shape)).to(t.device)


def _jacobian_table(n_in, n_out):
    return [[0.0] * n_out for _ in range(n_in)]


class _Checker:
    """One gradcheck call: func, its inputs, the differentiable inputs (diff) and outputs."""

    def __init__(self, func, inputs, eps, atol, rtol, raise_exception):
        self.func, self.inputs = func, inputs
        self.eps, self.atol, self.rtol = eps, atol, rtol
        self.raise_exception = raise_exception
        self.diff = [i for i, x in enumerate(inputs)
                     if isinstance(x, _C.TensorBase) and x.requires_grad]

    def fail(self, msg):
        if self.raise_exception:
            raise GradcheckError(msg)
        return False

    def not_reentrant(self, nondet_tol):
        return self.fail("Backward is not reentrant, i.e., running backward with same input "
                         "and grad_output multiple times gives different values, although "
                         "analytical gradient matches numerical gradient. The tolerance for "
                         f"nondeterminism was {nondet_tol}.")

    def output(self, j):
        """func's output j, computed afresh (finite differences bump the inputs' versions)."""
        return _as_tuple(self.func(*self.inputs))[j]

    def close(self, a, b, tol=None):
        return abs(a - b) <= (self.atol + self.rtol * abs(b) if tol is None else tol)

    # -- Jacobians (rows: input numbers, columns: output numbers) --

    def backward_jacobians(self, out, check_dtypes):
        """{input: J^T} from one backward per real number of out; a str on a failure."""
        from . import grad as autograd_grad
        n_out = _dof_count(out)
        tables = {i: _jacobian_table(_dof_count(self.inputs[i]), n_out) for i in self.diff}
        if not out.requires_grad:
            return tables
        for k in range(n_out):
            grads = autograd_grad([out], [self.inputs[i] for i in self.diff], [_basis(out, k)],
                                  retain_graph=True, allow_unused=True)
            for i, gi in zip(self.diff, grads):
                if gi is None:
                    continue
                x = self.inputs[i]
                if gi.dtype.is_complex != x.dtype.is_complex or \
                        (check_dtypes and gi.dtype != x.dtype):
                    return (f"Gradient for input {i} has dtype {gi.dtype}, but the input has "
                            f"dtype {x.dtype}")
                if tuple(gi.shape) != tuple(x.shape):
                    return (f"Gradient for input {i} has shape {tuple(gi.shape)}, but the "
                            f"input has shape {tuple(x.shape)}")
                for e, v in enumerate(_flat_values(gi)):
                    tables[i][e][k] = v
        return tables

    def numerical_jacobian(self, j, i):
        """J^T of output j in input i by central differences."""
        from .grad_mode import no_grad
        x = self.inputs[i]
        with no_grad():
            xr = _real_view(x)
        in_dofs = tuple(xr.shape)
        rows = []
        for e in range(_dof_count(x)):
            idx = _unravel(e, in_dofs)
            with no_grad():
                orig = xr[idx].item()
                xr[idx] = orig + self.eps
                plus = _flat_values(self.output(j))
                xr[idx] = orig - self.eps
                minus = _flat_values(self.output(j))
                xr[idx] = orig
            rows.append([(p - m) / (2 * self.eps) for p, m in zip(plus, minus)])
        return rows

    def forward_jacobian(self, j, i):
        """J^T of output j in input i from forward AD: one dual pass per input number."""
        from . import forward_ad as fwAD
        x = self.inputs[i]
        rows = []
        for e in range(_dof_count(x)):
            with fwAD.dual_level():
                args = list(self.inputs)
                args[i] = fwAD.make_dual(x.detach(), _basis(x, e))
                out = _as_tuple(self.func(*args))[j]
                tangent = fwAD.unpack_dual(out).tangent
            rows.append(_flat_values(tangent) if tangent is not None
                        else [0.0] * _dof_count(out))
        return rows

    def mismatch(self, what, j, i, numerical, analytical, out):
        x = self.inputs[i]
        bad = [(e, k) for e in range(len(numerical)) for k in range(len(numerical[e]))
               if not self.close(analytical[e][k], numerical[e][k])]
        if not bad:
            return None

        def part(t, d):
            return "" if not t.dtype.is_complex else (" (imag)" if d % 2 else " (real)")

        def elem(t, d):
            return d // 2 if t.dtype.is_complex else d
        rows = "\n".join(f"  input element {elem(x, e)}{part(x, e)}, output element "
                         f"{elem(out, k)}{part(out, k)}: numerical {numerical[e][k]:.6g}, "
                         f"analytical {analytical[e][k]:.6g}" for e, k in bad[:10])
        more = f"\n  ... and {len(bad) - 10} more" if len(bad) > 10 else ""
        return f"{what} for output {j} with respect to input {i},\n{rows}{more}"

    # -- the checks --

    def check_full(self, outs, backward, forward, nondet_tol, check_dtypes):
        for j, _ in outs:
            out = self.output(j)
            if backward:
                analytical = self.backward_jacobians(out, check_dtypes)
                if isinstance(analytical, str):
                    return self.fail(analytical)
                again = self.backward_jacobians(self.output(j), check_dtypes)
            for i in self.diff:
                numerical = self.numerical_jacobian(j, i)
                if backward:
                    msg = self.mismatch("Jacobian mismatch", j, i, numerical, analytical[i], out)
                    if msg is not None:
                        return self.fail(msg)
                    if any(not self.close(a, b, nondet_tol)
                           for ra, rb in zip(analytical[i], again[i]) for a, b in zip(ra, rb)):
                        return self.not_reentrant(nondet_tol)
                if forward:
                    msg = self.mismatch("Jacobian computed with forward mode mismatch", j, i,
                                        numerical, self.forward_jacobian(j, i), out)
                    if msg is not None:
                        return self.fail(msg)
        return True

    def check_fast(self, outs, backward, forward, nondet_tol):
        """v^T J u against its directional finite difference, for random u and v."""
        import random
        from . import grad as autograd_grad
        from .grad_mode import no_grad
        rnd = random.Random(0)
        for j, _ in outs:
            out = self.output(j)
            v = _random_like(out, rnd)
            vflat = _flat_values(v)
            for i in self.diff:
                x = self.inputs[i]
                u = _random_like(x, rnd)
                uflat = _flat_values(u)
                with no_grad():
                    xr, ur = _real_view(x), _real_view(u)
                    orig = xr.clone()
                    xr.add_(ur, alpha=self.eps)
                    plus = _flat_values(self.output(j))
                    xr.copy_(orig).sub_(ur, alpha=self.eps)
                    minus = _flat_values(self.output(j))
                    xr.copy_(orig)
                numerical = sum(w * (p - m) / (2 * self.eps)
                                for w, p, m in zip(vflat, plus, minus))
                results = []
                if backward and out.requires_grad:
                    for _ in range(2):
                        g = autograd_grad([self.output(j)], [x], [v], allow_unused=True)[0]
                        results.append(0.0 if g is None else
                                       sum(a * b for a, b in zip(_flat_values(g), uflat)))
                    if not self.close(results[0], numerical):
                        return self.fail(f"Jacobian mismatch for output {j} with respect to "
                                         f"input {i},\nnumerical:{numerical!r}\n"
                                         f"analytical:{results[0]!r}\n(fast mode: v^T J u "
                                         f"for random u and v; run with fast_mode=False for "
                                         f"the entries)")
                    if not self.close(results[0], results[1], nondet_tol):
                        return self.not_reentrant(nondet_tol)
                if forward:
                    from . import forward_ad as fwAD
                    with fwAD.dual_level():
                        args = list(self.inputs)
                        args[i] = fwAD.make_dual(x.detach(), u)
                        t = fwAD.unpack_dual(_as_tuple(self.func(*args))[j]).tangent
                    analytical = 0.0 if t is None else \
                        sum(a * b for a, b in zip(_flat_values(t), vflat))
                    if not self.close(analytical, numerical):
                        return self.fail(f"Jacobian computed with forward mode mismatch for "
                                         f"output {j} with respect to input {i},\n"
                                         f"numerical:{numerical!r}\nanalytical:{analytical!r}\n")
        return True

    def check_undefined_grad(self):
        """Backward with undefined output gradients (PyTorch's check_undefined_grad)."""
        from .. import zeros_like
        from . import grad as autograd_grad

        def attempt(outputs):
            try:
                grads = autograd_grad(outputs, [self.inputs[i] for i in self.diff],
                                      [zeros_like(o) for o in outputs], allow_unused=True)
            except RuntimeError as e:
                raise GradcheckError("Expected backward function to handle undefined output "
                                     "grads. Please look at \"Notes about undefined output "
                                     "gradients\" in \"tools/autograd/derivatives.yaml\"") from e
            if any(g is not None and not bool(g.eq(0).all()) for g in grads):
                raise GradcheckError("Expected all input grads to be undefined or zero when "
                                     "all output grads are undefined or zero. Please look at "
                                     "\"Notes about undefined output gradients\" in "
                                     "\"tools/autograd/derivatives.yaml\"")

        def outputs_with(undefined):
            outs = [o for _, o in _differentiable(_as_tuple(self.func(*self.inputs)))
                    if o.requires_grad]
            return [_undefined_grad(o) if undefined is None or k == undefined else o
                    for k, o in enumerate(outs)], len(outs)

        try:
            outputs, n = outputs_with(None)
            if outputs:
                attempt(outputs)
            for k in range(n if n > 1 else 0):
                attempt(outputs_with(k)[0])
        except GradcheckError as e:
            return self.fail(str(e))
        return True

    def check_batched(self, outs, forward):
        """func.vmap over two random grad_outputs (forward: tangents) against two runs."""
        import random
        from .. import stack
        from ..func import vmap
        from . import grad as autograd_grad
        rnd = random.Random(1)
        for j, _ in outs:
            for i in self.diff:
                x = self.inputs[i]
                if forward:
                    from . import forward_ad as fwAD
                    seeds = [_random_like(x, rnd) for _ in range(2)]

                    def one(t):
                        with fwAD.dual_level():
                            args = list(self.inputs)
                            args[i] = fwAD.make_dual(x.detach(), t)
                            return fwAD.unpack_dual(_as_tuple(self.func(*args))[j]).tangent
                else:
                    out = self.output(j)
                    if not out.requires_grad:
                        continue
                    seeds = [_random_like(out, rnd) for _ in range(2)]

                    def one(g):
                        got = autograd_grad([out], [x], [g], retain_graph=True,
                                            allow_unused=True)[0]
                        return got if got is not None else (x * 0).detach()
                expected = stack([one(s) for s in seeds])
                try:
                    batched = vmap(one)(stack(seeds))
                except Exception as e:  # noqa: BLE001 - reported as the check's failure
                    return self.fail(f"While computing batched {'forward ' if forward else ''}"
                                     f"gradients for output {j} and input {i}, got: "
                                     f"{type(e).__name__}: {e}")
                if tuple(batched.shape) != tuple(expected.shape) or any(
                        not self.close(a, b) for a, b in zip(_flat_values(batched),
                                                             _flat_values(expected))):
                    return self.fail(f"For output {j} and input {i}:\n\nbatched_grad:\n"
                                     f"{batched}\nexpected:\n{expected}")
        return True


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False,
              check_forward_ad=False, check_backward_ad=True, fast_mode=False, masked=None):
    """True when the derivatives of func at inputs match central finite differences: the
    Jacobian from backward (and/or from forward AD), plus the checks the options ask for
    (module docstring).  On a failure raises GradcheckError (or returns False) saying which
    output, input and entries."""
    inputs = _as_tuple(inputs)
    c = _Checker(func, inputs, eps, atol, rtol, raise_exception)
    if not c.diff:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, "
                         "but none of the them have requires_grad=True.")
    if any(isinstance(x, _C.TensorBase) and x.is_sparse for x in inputs):
        raise NotImplementedError("gradcheck of sparse inputs (and masked=) is not supported "
                                  "by pytorchlite; check the dense form")
    if not (check_backward_ad or check_forward_ad):
        raise AssertionError("Expected at least one of check_forward_ad or check_backward_ad "
                             "to be True")
    if check_batched_grad and not check_backward_ad:
        raise AssertionError("Setting check_batched_grad=True requires check_backward_ad to "
                             "be True")
    if check_batched_forward_grad and not check_forward_ad:
        raise AssertionError("Setting check_batched_forward_grad=True requires "
                             "check_forward_ad to be True")
    for i in c.diff:
        if inputs[i].dtype not in (_C.float64, _C.complex128):
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating "
                          "point or complex. This check will likely fail if all the inputs are "
                          "not of double precision floating point or complex. ")
    outs = _differentiable(_as_tuple(func(*inputs)))
    check = c.check_fast if fast_mode else \
        lambda o, b, f, t: c.check_full(o, b, f, t, check_grad_dtypes)
    if not check(outs, check_backward_ad, check_forward_ad, nondet_tol):
        return False
    if check_undefined_grad and check_backward_ad and not c.check_undefined_grad():
        return False
    if check_batched_grad and not c.check_batched(outs, forward=False):
        return False
    if check_batched_forward_grad and not c.check_batched(outs, forward=True):
        return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False,
                  masked=False):
    """gradcheck of the gradient itself (a create_graph=True backward), for random
    grad_outputs when none are given (non-contiguous ones with gen_non_contig_grad_outputs);
    check_rev_over_rev checks it with backward, check_fwd_over_rev with forward AD."""
    import random
    from . import grad as autograd_grad
    from .grad_mode import enable_grad

    inputs = _as_tuple(inputs)
    diff = [x for x in inputs if isinstance(x, _C.TensorBase) and x.requires_grad]
    if not diff:
        return True
    outputs = _as_tuple(func(*inputs))
    if grad_outputs is None:
        rnd = random.Random(0)
        grad_outputs = []
        for o in outputs:
            g = _random_like(o, rnd)
            if gen_non_contig_grad_outputs and g.dim() > 0:
                from .. import stack
                g = stack([g, g * 0], -1).select(-1, 0)   # every other number of a wider one
            grad_outputs.append(g.requires_grad_(True))
    grad_outputs = list(_as_tuple(grad_outputs))

    def first_grads(*args):
        xs = args[:len(inputs)]
        gos = args[len(inputs):]
        with enable_grad():   # gradcheck evaluates us under no_grad for finite differences
            outs = _as_tuple(func(*xs))
            gs = autograd_grad(outs, [x for x in xs if isinstance(x, _C.TensorBase) and
                                      x.requires_grad],
                               gos, create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(first_grads, tuple(inputs) + tuple(grad_outputs), eps=eps, atol=atol,
                     rtol=rtol, raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes,
                     check_batched_grad=check_batched_grad, check_forward_ad=check_fwd_over_rev,
                     check_backward_ad=check_rev_over_rev, fast_mode=fast_mode, masked=masked)
