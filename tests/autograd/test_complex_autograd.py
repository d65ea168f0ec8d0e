"""Autograd on complex tensors (Note [Complex autograd] in src/autograd/derivatives/complex.c):
PyTorch's convention z.grad = dL/dre + i dL/dim for a real loss L.  Every complex derivative
passes gradcheck and gradgradcheck in complex128 on random shapes (0-dim, size-0, broadcast,
non-contiguous); gradcheck itself is shown to catch a wrong complex formula; linalg.eig and
eigvals differentiate for real matrices (batched, n = 1, empty batches) against gradcheck
and an independent NumPy derivation; PyTorch's gradients and error messages are compared
where torch is installed."""
import re
import warnings

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck, gradgradcheck
from helpers import assert_no_leak, assert_raises_like_torch, torch, torch_ref

C64, C128 = ptl.complex64, ptl.complex128
RNG = np.random.RandomState(1234)


def crand(*shape, layout="contiguous", requires_grad=True):
    """A complex128 leaf of the given shape, laid out as asked (its values from RNG)."""
    if layout == "transposed":
        a = RNG.randn(*shape[::-1]) + 1j * RNG.randn(*shape[::-1])
        t = ptl.tensor(a, dtype=C128).t()
    elif layout == "sliced":
        a = RNG.randn(*shape[:-1], 2 * shape[-1]) + 1j * RNG.randn(*shape[:-1], 2 * shape[-1])
        t = ptl.tensor(a, dtype=C128)[..., ::2]
    else:
        t = ptl.tensor(RNG.randn(*shape) + 1j * RNG.randn(*shape), dtype=C128)
    t = t.detach()
    return t.requires_grad_() if requires_grad else t


def frand(*shape, positive=False):
    a = RNG.randn(*shape)
    return ptl.tensor(np.abs(a) + 0.5 if positive else a, dtype=ptl.float64,
                      requires_grad=True)


SHAPES = [((), "contiguous"), ((0,), "contiguous"), ((2, 3), "contiguous"),
          ((3, 2), "transposed"), ((4,), "sliced")]

UNARY = {
    "neg": lambda z: -z,
    "exp": ptl.exp,
    "log": ptl.log,
    "sqrt": ptl.sqrt,
    "reciprocal": ptl.reciprocal,
    "abs": ptl.abs,
    "angle": ptl.angle,
    "real": ptl.real,
    "imag": ptl.imag,
    "view_as_real": ptl.view_as_real,
    "conj": ptl.conj,
    "conj_physical": ptl.conj_physical,
    "sum": lambda z: z.sum(),
    "sum_dim": lambda z: z.sum(-1) if z.dim() else z.sum(),
    "mean": lambda z: z.mean(),
    "mean_dim": lambda z: z.mean(0, keepdim=True) if z.dim() else z.mean(),
    "to_complex64_and_back": lambda z: z.to(C64).to(C128),
    # complex_unary.c's kernels; derivatives/unary.c conjugates their factors
    **{name: getattr(ptl, name) for name in (
        "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan", "asinh", "acosh",
        "atanh", "sigmoid", "rsqrt", "log1p", "expm1", "exp2", "log2", "log10", "square",
        "sinc")},
    # torch 2.13's in-place silu gives the unconjugated factor (its gradcheck fails) and
    # its functional silu refuses complex gradients: ours passes
    "silu_": lambda z: ptl.nn.functional.silu(z.clone(), inplace=True),
    "tanhshrink": ptl.nn.functional.tanhshrink,
}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("shape, layout", SHAPES, ids=lambda v: str(v))
def test_unary_gradcheck(name, shape, layout):
    fn = UNARY[name]
    z = crand(*shape, layout=layout)
    if name == "to_complex64_and_back":   # finite differences through complex64 rounding
        assert gradcheck(fn, (z,), eps=1e-3, atol=1e-3, rtol=1e-3)
        return
    assert gradcheck(fn, (z,))
    assert gradgradcheck(fn, (z,))


BINARY = {
    "add": lambda a, b: a + b,
    "add_alpha": lambda a, b: ptl.add(a, b, alpha=-1.5),
    "sub": lambda a, b: ptl.sub(a, b, alpha=2),
    "rsub": lambda a, b: ptl.rsub(a, b, alpha=0.5),
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "logaddexp": ptl.logaddexp,
}


@pytest.mark.parametrize("name", ["silu", "nan_to_num"])
def test_functional_forms_refuse_complex_gradients_as_torch(name):
    fn = {"silu": lambda lib, z: lib.nn.functional.silu(z),
          "nan_to_num": lambda lib, z: lib.nan_to_num(z)}[name]
    assert_raises_like_torch(
        lambda lib: fn(lib, lib.ones(2, dtype=lib.complex128, requires_grad=True)),
        RuntimeError, f"{name} does not support automatic differentiation for outputs with "
                      "complex dtype.")


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("shapes", [((2, 3), (2, 3)), ((2, 3), (3,)), ((), (2, 2)),
                                    ((0, 3), (1, 3))], ids=str)
def test_binary_gradcheck(name, shapes):
    a, b = crand(*shapes[0]), crand(*shapes[1])
    assert gradcheck(BINARY[name], (a, b))
    assert gradgradcheck(BINARY[name], (a, b))


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_of_real_and_complex(name):
    """A real input of a complex computation gets the real part of its gradient, in its own
    dtype, without the warning a complex -> real cast gives."""
    x, z = frand(2, 3), crand(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert gradcheck(BINARY[name], (x, z))
        assert gradcheck(BINARY[name], (z, x))
        out = BINARY[name](x, z)
        out.backward(ptl.ones_like(out))
    assert x.grad.dtype == ptl.float64 and z.grad.dtype == C128


def test_builders_gradcheck():
    re, im = frand(2, 3), frand(3)
    r, theta = frand(2, 3, positive=True), frand(2, 3)
    parts = frand(3, 2)
    for fn, args in [(ptl.complex, (re, im)), (ptl.polar, (r, theta)),
                     (ptl.view_as_complex, (parts,)),
                     (lambda x: x.to(C128) * (2 - 1j), (re,)),
                     (lambda x: ptl.view_as_complex(ptl.stack([x, x * x], -1)).exp(), (re,))]:
        assert gradcheck(fn, args)
        assert gradgradcheck(fn, args)


@pytest.mark.parametrize("base", [0.0, 0j, -2.0, 3.0, -2 + 0j, 1 + 1j, 1j])
def test_pow_of_a_scalar_base_gradient_in_a_complex_exponent(base):
    """pow.Scalar's exponent gradient g conj(base^e log(base)): a real base is taken as complex
    (a negative one's log has imaginary part pi), and a zero base gives 0 where the exponent is
    real and >= 0 (imag == 0 and real >= 0), base^e log(base) elsewhere, as PyTorch's."""
    e_np = np.array([2 + 0j, 2 + 1j, -1 + 0j, 0.5 - 0.5j, 0j, 2j, -0.5 + 0j])
    g_np = np.array([1 + 2j, 0.5 - 1j, 1j, 2 + 0j, -1j, 1 + 1j, 3 - 1j])
    e = ptl.tensor(e_np, dtype=C128, requires_grad=True)
    (grad,) = ptl.autograd.grad(ptl.pow(base, e), e, ptl.tensor(g_np, dtype=C128))
    b = complex(base)
    with np.errstate(all="ignore"):
        result = np.array([b ** x if b != 0 else (0j if x.real > 0 else
                           (1 + 0j if x == 0 else complex(np.inf, np.nan))) for x in e_np])
        expect = g_np * np.conj(result * np.log(b))
    if b == 0:
        expect = np.where((e_np.imag == 0) & (e_np.real >= 0), 0j, expect)
    got = grad.numpy()
    finite = np.isfinite(expect)
    np.testing.assert_allclose(got[finite], expect[finite], rtol=1e-13)
    assert (~np.isfinite(got[~finite])).all()
    if b != 0:
        assert gradcheck(lambda x: ptl.pow(base, x), (crand(2, 3),))


def test_composite_graph_gradcheck():
    a, b = crand(3, 2, layout="transposed"), crand(2)

    def f(a, b):
        w = (a * b).exp() / (a.conj() + 3) - b.sqrt() * ptl.log(a)
        return ptl.view_as_real(w).sum(0), w.abs().mean(), ptl.angle(w)

    assert gradcheck(f, (a, b))
    assert gradgradcheck(f, (a, b))


def _wirtinger_reference(z):
    """dL/dre + i dL/dim of L = sum(|z^2 + z|^2) in NumPy: with w = z^2 + z,
    L = sum(w conj(w)), and the gradient is 2 conj(dw/dz) w = 2 conj(2z + 1) w."""
    w = z * z + z
    return 2 * np.conj(2 * z + 1) * w


def test_grad_matches_a_numpy_derivation():
    a = RNG.randn(2, 3) + 1j * RNG.randn(2, 3)
    z = ptl.tensor(a, dtype=C128, requires_grad=True)
    w = z * z + z
    (w * w.conj()).real.sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), _wirtinger_reference(a), rtol=1e-13)
    z.grad = None
    w = z * z + z
    (w.abs() ** 2).sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), _wirtinger_reference(a), rtol=1e-12)


def test_complex64_gradients_stay_complex64():
    z = ptl.tensor([1 + 2j, -3 + 0.5j], dtype=C64, requires_grad=True)
    (z * z).abs().sum().backward()
    assert z.grad.dtype == C64
    np.testing.assert_allclose(z.grad.numpy(), 2 * np.array([1 + 2j, -3 + 0.5j]),
                               rtol=1e-6)


def test_requires_grad_and_grad_fn_of_complex_results():
    x = ptl.ones(2, requires_grad=True)
    z = x * 1j
    assert z.requires_grad and z.grad_fn.name() == "MulBackward0"
    assert ptl.complex(x, x).grad_fn.name() == "ComplexBackward0"
    assert ptl.tensor([1j], requires_grad=True).requires_grad
    assert ptl.zeros(2, dtype=C64).requires_grad_().is_leaf
    with ptl.no_grad():
        assert not (x * 1j).requires_grad


def test_errors():
    z = crand(2)
    with pytest.raises(RuntimeError, match=r"^grad can be implicitly created only for real "
                       r"scalar outputs but got torch.complex128$"):
        z.sum().backward()
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar "
                       "outputs"):
        (z * 2).backward()
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require "
                       "gradients"):
        ptl.ones(2, dtype=ptl.int64).requires_grad_()


def test_anomaly_mode_sees_nan_in_complex_gradients():
    z = ptl.tensor([0j], dtype=C128, requires_grad=True)
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"), \
            ptl.autograd.detect_anomaly(), pytest.warns(UserWarning, match="LogBackward0"):
        with pytest.raises(RuntimeError, match="returned nan values"):
            ptl.log(ptl.log(z * 0)).real.sum().backward()


class _MulForgetsConj(ptl.autograd.Function):
    """z * c with the real-number formula g * c: wrong for a complex c."""

    @staticmethod
    def forward(ctx, z, c):
        ctx.c = c
        return z * c

    @staticmethod
    def backward(ctx, g):
        return g * ctx.c, None


def test_gradcheck_catches_a_missing_conjugate():
    z = crand(3)
    c = ptl.tensor([1 + 1j, 2 - 1j, -0.5j], dtype=C128)
    assert not gradcheck(lambda z: _MulForgetsConj.apply(z, c), (z,), raise_exception=False)
    assert gradcheck(lambda z: _MulForgetsConj.apply(z, c.real + 0j), (z,))
    with pytest.raises(RuntimeError, match=r"(?s)Jacobian mismatch .*\(imag\)"):
        gradcheck(lambda z: _MulForgetsConj.apply(z, c), (z,))


# ---- linalg.eig / eigvals ----

def _phase_free(L, V):
    return L, V.abs()


EIG_SHAPES = [(1, 1), (2, 2), (3, 3), (5, 5), (2, 3, 3), (3, 1, 1), (0, 3, 3), (2, 0, 0),
              (2, 1, 4, 4)]


@pytest.mark.parametrize("shape", EIG_SHAPES, ids=str)
def test_eig_gradcheck(shape):
    A = frand(*shape)
    assert gradcheck(lambda A: ptl.linalg.eigvals(A), (A,))
    assert gradcheck(lambda A: _phase_free(*ptl.linalg.eig(A)), (A,))
    assert gradcheck(lambda A: ptl.linalg.eig(A)[1].abs(), (A,))


def test_eig_gradgradcheck():
    A = frand(3, 3)
    assert gradgradcheck(lambda A: ptl.linalg.eigvals(A), (A,))
    assert gradgradcheck(lambda A: _phase_free(*ptl.linalg.eig(A)), (A,))


def test_eig_of_a_transposed_matrix_and_float32():
    A = frand(4, 4).detach().t().requires_grad_()
    assert gradcheck(lambda A: _phase_free(*ptl.linalg.eig(A)), (A,))
    A32 = ptl.tensor(RNG.randn(3, 3), dtype=ptl.float32, requires_grad=True)
    ptl.linalg.eigvals(A32).abs().sum().backward()
    assert A32.grad.dtype == ptl.float32


def test_eigvals_gradient_matches_numpy():
    """d sum(w) = trace(dA), and for distinct eigenvalues d w_k = u_k^H dA v_k / (u_k^H v_k)
    with u_k the left eigenvectors (rows of V^-1, conjugated): the gradient of
    sum(Re(c_k w_k)) is Re(sum_k conj(c_k) conj(V^-H)[:, k] conj(V)[:, k]^T)."""
    a = RNG.randn(2, 4, 4)
    c = RNG.randn(2, 4) + 1j * RNG.randn(2, 4)
    A = ptl.tensor(a, requires_grad=True)
    w = ptl.linalg.eigvals(A)
    (w * ptl.tensor(c)).real.sum().backward()
    for b in range(2):
        wn, vn = np.linalg.eig(a[b])
        order = [int(np.argmin(np.abs(wn - x))) for x in w[b].detach().numpy()]
        vn, cn = vn[:, order], c[b]
        left = np.linalg.inv(vn).conj().T   # columns: left eigenvectors, u_k^H v_k = 1
        want = (left.conj() * cn[None, :]) @ vn.T
        np.testing.assert_allclose(A.grad[b].numpy(), want.real, rtol=1e-9, atol=1e-12)


# eigenvalues 1.106 and -0.053 +- 1.309i: complex eigenvectors, whose phases eig chooses
ROTATING = [[0.0, -2.0, 1.0], [1.0, 0.0, 0.5], [0.3, 0.2, 1.0]]


def test_eig_phase_dependent_loss_is_refused():
    A = ptl.tensor(ROTATING, dtype=ptl.float64, requires_grad=True)
    msg = ("linalg_eig_backward: The eigenvectors in the complex case are specified up to "
           "multiplication by e^{i phi}. The specified loss function depends on this "
           "quantity, so it is ill-defined.")
    for loss in (lambda V: V.imag.sum(), lambda V: V.real.sum(),
                 lambda V: (V.sum() * (1 + 1j)).real):
        with pytest.raises(RuntimeError, match=f"^{re.escape(msg)}$"):
            loss(ptl.linalg.eig(A)[1]).backward()


def test_eig_repeated_eigenvalues_give_nan_for_vectors():
    A = ptl.eye(3, dtype=ptl.float64).requires_grad_()
    ptl.linalg.eig(A)[1].abs().sum().backward()
    assert np.isnan(A.grad.numpy()).all()
    A.grad = None
    ptl.linalg.eig(A)[0].real.sum().backward()
    np.testing.assert_array_equal(A.grad.numpy(), np.eye(3))


def test_eig_of_complex_matrix_has_a_complex_gradient():
    # linalg_complex.c's kernel; the formula's gA is complex for a complex A (the gradchecks
    # are in test_linalg_complex_grad.py)
    A = crand(2, 2).requires_grad_(True)
    ptl.linalg.eigvals(A).abs().sum().backward()
    assert A.grad.dtype == A.dtype


def test_eig_split_without_vectors_cannot_differentiate():
    A = frand(2, 2)
    wr, wi, _, _ = ptl.linalg._eig_split(A, False)
    with pytest.raises(RuntimeError, match="the eigenvectors were not computed"):
        (wr.sum() + wi.sum()).backward()


# ---- PyTorch's gradients ----

def _both(fn, *arrays):
    """fn's gradients w.r.t. each array on pytorchlite and on torch (complex128 or float64
    leaves, an explicit complex grad for a complex result)."""
    grads = []
    for lib in (ptl, torch):
        leaves = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = fn(lib, *leaves)
        gout = lib.ones_like(out) * (0.5 - 2j) if out.is_complex() else lib.ones_like(out)
        out.backward(gout)
        grads.append([np.asarray(x.grad.tolist()) for x in leaves])
    return grads


TORCH_GRAPHS = {
    "arith": lambda lib, a, b: (a * b - a / (b + 2)).exp() + lib.sqrt(a).conj(),
    "to_real": lambda lib, a, b: (lib.log(a) * b.abs()).real + lib.angle(b) - a.imag.mean(),
    "views": lambda lib, a, b: lib.view_as_real(a * lib.conj_physical(b)).sum(-1),
    "reduce": lambda lib, a, b: (a.reciprocal() - 1.5 * b).sum(0) * a.mean(),
    "trig": lambda lib, a, b: lib.tan(a) * lib.asinh(b) - lib.acos(a).cosh() / lib.atanh(b),
    "exp_log": lambda lib, a, b: lib.sigmoid(a) * lib.log1p(b) + lib.expm1(a).rsqrt() -
    lib.exp2(b).log10() + lib.acosh(-a) * lib.log2(b),
    "activations": lambda lib, a, b: lib.nn.functional.tanhshrink(a) + lib.logaddexp(a, b) +
    lib.tanh(b).square(),
}


@torch_ref
@pytest.mark.parametrize("name", sorted(TORCH_GRAPHS))
def test_grads_match_torch(name):
    a = RNG.randn(3, 2) + 1j * RNG.randn(3, 2)
    b = RNG.randn(3, 2) + 1j * RNG.randn(3, 2)
    mine, theirs = _both(TORCH_GRAPHS[name], a, b)
    for m, t in zip(mine, theirs):
        np.testing.assert_allclose(m, t, rtol=1e-12, atol=1e-14)


@torch_ref
def test_real_builders_match_torch():
    x, y = RNG.randn(4), np.abs(RNG.randn(4)) + 0.1
    mine, theirs = _both(lambda lib, x, y: lib.polar(y, x) * lib.complex(x, y), x, y)
    for m, t in zip(mine, theirs):
        np.testing.assert_allclose(m, t, rtol=1e-12, atol=1e-14)


@torch_ref
@pytest.mark.parametrize("shape", [(1, 1), (4, 4), (2, 3, 3), (0, 2, 2)], ids=str)
def test_eig_grads_match_torch(shape):
    a, m = RNG.randn(*shape), RNG.randn(*shape)
    losses = [lambda L, V, M: L.abs().sum() + (L * L).imag.sum(),
              lambda L, V, M: (V.abs() * M).sum() + L.real.sum(),
              lambda L, V, M: (V * V.conj()).real.sum() + L.exp().imag.sum()]
    for loss in losses:
        grads = []
        for lib in (ptl, torch):
            A = lib.tensor(a, requires_grad=True)
            L, V = lib.linalg.eig(A)
            loss(L, V, lib.tensor(m)).backward()
            grads.append(np.asarray(A.grad.tolist()).reshape(shape))
        np.testing.assert_allclose(grads[0], grads[1], rtol=1e-9, atol=1e-11)


@torch_ref
def test_error_texts_match_torch():
    for lib in (ptl, torch):
        z = lib.tensor([1j, 2.0], requires_grad=True)
        with pytest.raises(RuntimeError) as e:
            z.sum().backward()
        A = lib.tensor(ROTATING, dtype=lib.float64, requires_grad=True)
        with pytest.raises(RuntimeError) as f:
            lib.linalg.eig(A)[1].imag.sum().backward()
        if lib is ptl:
            mine = (str(e.value), str(f.value))
        else:
            assert (str(e.value), str(f.value)) == mine


def test_grad_output_of_the_other_kind_is_refused():
    """PyTorch's message: a complex root needs a complex gradient and a real root a real
    one."""
    z, x = crand(2), frand(2)
    with pytest.raises(RuntimeError, match=r"^For complex Tensors, both grad_output and output "
                       r"are required to have the same dtype. Mismatch in dtype: grad_output\[0\] "
                       r"has a dtype of torch.float64 and output\[0\] has a dtype of "
                       r"torch.complex128.$"):
        (z * 2).backward(ptl.ones(2, dtype=ptl.float64))
    with pytest.raises(RuntimeError, match=r"grad_output\[0\] has a dtype of torch.complex128 "
                       r"and output\[0\] has a dtype of torch.float64"):
        ptl.autograd.grad(x * 2, x, ptl.ones(2, dtype=C128))


# In-place ops through real / imag / view_as_real / view_as_complex views; `lib` is
# pytorchlite or torch.
def _real_view_mul(lib, z):
    w = z * 2
    w.real.mul_(3)
    return w


def _view_as_real_mul(lib, z):
    w = z * 2
    lib.view_as_real(w).mul_(lib.tensor([2.0, -1.0], dtype=lib.float64))
    return w


def _base_changed_under_imag(lib, z):
    w = z * 2
    r = w.imag
    w.mul_(1j)
    return r * r


def _view_as_complex_mul(lib, x):
    w = x * 1
    lib.view_as_complex(w).mul_(1 + 1j)
    return w


def _base_changed_under_view_as_complex(lib, x):
    w = x * 1
    c = lib.view_as_complex(w)
    w.mul_(2)
    return c


def _imag_copy(lib, z, y):
    w = z * 2
    w.imag.copy_(y * y)
    return w


def _strided_real_slice(lib, z):
    w = (z * 2).t()
    w.real[1:].mul_(3)
    return w


IN_PLACE_THROUGH_VIEWS = [
    (_real_view_mul, lambda: (crand(3),)),
    (_view_as_real_mul, lambda: (crand(3),)),
    (_base_changed_under_imag, lambda: (crand(3),)),
    (_view_as_complex_mul, lambda: (frand(3, 2),)),
    (_base_changed_under_view_as_complex, lambda: (frand(3, 2),)),
    (_imag_copy, lambda: (crand(3), frand(3))),
    (_strided_real_slice, lambda: (crand(2, 3),)),
]
VIEW_IDS = [fn.__name__ for fn, _ in IN_PLACE_THROUGH_VIEWS]


@pytest.mark.parametrize("fn, make", IN_PLACE_THROUGH_VIEWS, ids=VIEW_IDS)
def test_in_place_through_views_of_another_dtype(fn, make):
    """real / imag / view_as_real / view_as_complex views are replayed on the real numbers
    of their base (Note [CopySlices], PtlViewInfo's parts): an in-place op on such a view,
    or on its base before the view is used, differentiates correctly, twice."""
    args = make()
    assert gradcheck(lambda *a: fn(ptl, *a), args)
    assert gradgradcheck(lambda *a: fn(ptl, *a), args)


@torch_ref
@pytest.mark.parametrize("fn, make", IN_PLACE_THROUGH_VIEWS, ids=VIEW_IDS)
def test_in_place_through_views_matches_torch(fn, make):
    mine, theirs = _both(fn, *[x.detach().numpy() for x in make()])
    for m, t in zip(mine, theirs):
        np.testing.assert_allclose(m, t, rtol=1e-12, atol=1e-14)


def test_backward_leaks_nothing():
    """The formulas' temporaries (Scope) and saved tensors are released, on success and on
    the phase error's path."""
    z = crand(2, 3)
    A = frand(2, 3, 3)
    R = ptl.tensor(ROTATING, dtype=ptl.float64, requires_grad=True)

    def complex_graph():
        w = (z * z.conj()).exp() / (z + 2)
        ptl.autograd.grad(ptl.angle(w).sum() + w.abs().sum(), z)

    def eig_graph():
        L, V = ptl.linalg.eig(A)
        ptl.autograd.grad(L.abs().sum() + V.abs().sum(), A)

    def eig_refused():
        with pytest.raises(RuntimeError, match="e\\^\\{i phi\\}"):
            ptl.linalg.eig(R)[1].imag.sum().backward()

    for fn in (complex_graph, eig_graph, eig_refused):
        assert_no_leak(fn)
