"""autograd.functional: jacobian, hessian, vjp, jvp, vhp, hvp against closed forms in NumPy
float64, the nesting and shapes of their results, create_graph (checked with gradcheck),
vectorize and strategy="forward-mode", and every error with PyTorch's type and message.
Every test runs on pytorchlite and, where installed, on PyTorch (golden.LIBRARIES)."""
import numpy as np
import pytest

import pytorchlite as ptl
from golden import LIBRARIES


def ids(m):
    return m.__name__


def F(lib):
    return lib.autograd.functional


def t64(lib, a, requires_grad=False):
    return lib.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


def close(got, want, rtol=1e-12):
    assert tuple(got.shape) == np.shape(want)
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=rtol, atol=1e-14)


RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 4))
X = RNG.standard_normal(4)
Y = RNG.standard_normal((2, 3))


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
@pytest.mark.parametrize("vectorize,strategy", [(False, "reverse-mode"), (True, "reverse-mode"),
                                                (True, "forward-mode")])
def test_jacobian_of_one_tensor(lib, vectorize, strategy):
    a = t64(lib, A)
    # f(x) = sin(A x): J = diag(cos(A x)) A
    jac = F(lib).jacobian(lambda x: (a @ x).sin(), t64(lib, X), vectorize=vectorize,
                          strategy=strategy)
    close(jac, np.cos(A @ X)[:, None] * A)
    assert not jac.requires_grad


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
@pytest.mark.parametrize("vectorize,strategy", [(False, "reverse-mode"), (True, "reverse-mode"),
                                                (True, "forward-mode")])
def test_jacobian_of_tuples_nests_outputs_then_inputs(lib, vectorize, strategy):
    def f(x, y):
        return (x.exp().sum() * y, (y * y).sum(0))

    jac = F(lib).jacobian(f, (t64(lib, X), t64(lib, Y)), vectorize=vectorize,
                          strategy=strategy)
    # PyTorch's forward mode nests lists, its reverse mode tuples
    kind = list if strategy == "forward-mode" else tuple
    assert isinstance(jac, kind) and len(jac) == 2
    assert all(isinstance(j, kind) and len(j) == 2 for j in jac)
    s = np.exp(X).sum()
    close(jac[0][0], Y[:, :, None] * np.exp(X)[None, None, :])
    close(jac[0][1], s * np.eye(6).reshape(2, 3, 2, 3))
    close(jac[1][0], np.zeros((3, 4)))
    want = np.zeros((3, 2, 3))
    for j in range(3):
        want[j, :, j] = 2 * Y[:, j]
    close(jac[1][1], want)


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_jacobian_levels_follow_what_was_passed(lib):
    x = t64(lib, X)
    one_in_tuple_out = F(lib).jacobian(lambda v: (v * 2, v.sum()), x)
    assert isinstance(one_in_tuple_out, tuple) and len(one_in_tuple_out) == 2
    close(one_in_tuple_out[1], np.ones(4))
    tuple_in_one_out = F(lib).jacobian(lambda v: v * 3, (x,))
    assert isinstance(tuple_in_one_out, tuple) and len(tuple_in_one_out) == 1
    close(tuple_in_one_out[0], 3 * np.eye(4))


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_jacobian_of_0_dim_and_size_0(lib):
    s = t64(lib, 0.7)
    close(F(lib).jacobian(lambda v: v.sin(), s), np.cos(0.7))
    close(F(lib).jacobian(lambda v: (v * v).sum(), t64(lib, np.zeros(0))), np.zeros(0))
    close(F(lib).jacobian(lambda v: v.sum() * t64(lib, [1.0, 2.0]), t64(lib, np.zeros(0))),
          np.zeros((2, 0)))
    # an output of no element: PyTorch stacks no rows, and fails
    with pytest.raises(RuntimeError, match="^stack expects a non-empty TensorList$"):
        F(lib).jacobian(lambda v: v * v, t64(lib, np.zeros(0)))


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_jacobian_create_graph_is_differentiable(lib):
    x = t64(lib, X, requires_grad=True)
    jac = F(lib).jacobian(lambda v: v.pow(3), x, create_graph=True)
    assert jac.requires_grad
    (g,) = lib.autograd.grad(jac.sum(), x)
    close(g, 6 * X)
    assert lib.autograd.gradcheck(
        lambda v: F(lib).jacobian(lambda u: u.sin() * u.sum(), v, create_graph=True),
        (t64(lib, X[:3], requires_grad=True),))


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
@pytest.mark.parametrize("vectorize,strategy", [(False, "reverse-mode"), (True, "reverse-mode"),
                                                (True, "forward-mode")])
def test_hessian(lib, vectorize, strategy):
    # f(x, y) = sum(x^3) * sum(y^2)
    def f(x, y):
        return x.pow(3).sum() * (y * y).sum()

    x, y = t64(lib, X), t64(lib, Y)
    h = F(lib).hessian(f, (x, y), vectorize=vectorize, outer_jacobian_strategy=strategy)
    sy = (Y * Y).sum()
    close(h[0][0], np.diag(6 * X) * sy)
    close(h[0][1], (3 * X ** 2)[:, None, None] * 2 * Y[None])
    close(h[1][0], 2 * Y[:, :, None] * (3 * X ** 2)[None, None])
    close(h[1][1], 2 * (X ** 3).sum() * np.eye(6).reshape(2, 3, 2, 3))
    single = F(lib).hessian(lambda v: v.pow(3).sum(), x, vectorize=vectorize,
                            outer_jacobian_strategy=strategy)
    close(single, np.diag(6 * X))


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_vjp_and_jvp(lib):
    a = t64(lib, A)
    x = t64(lib, X)
    u = RNG.standard_normal(3)
    v = RNG.standard_normal(4)
    J = np.cos(A @ X)[:, None] * A
    out, vj = F(lib).vjp(lambda t: (a @ t).sin(), x, t64(lib, u))
    close(out, np.sin(A @ X))
    close(vj, u @ J)
    out, jv = F(lib).jvp(lambda t: (a @ t).sin(), x, t64(lib, v))
    close(out, np.sin(A @ X))
    close(jv, J @ v)
    assert not vj.requires_grad and not jv.requires_grad and not out.requires_grad


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_vjp_jvp_tuples_and_implicit_v(lib):
    def f(x, y):
        return (x * y.sum(), x.exp().sum())

    x, y = t64(lib, X), t64(lib, Y)
    outs, vjs = F(lib).vjp(f, (x, y), (t64(lib, np.ones(4)), t64(lib, 2.0)))
    assert isinstance(outs, tuple) and isinstance(vjs, tuple)
    close(vjs[0], np.full(4, Y.sum()) + 2 * np.exp(X))
    close(vjs[1], np.full((2, 3), X.sum()))
    # v may be left out for a function of one element
    _, g = F(lib).vjp(lambda t: (t * t).sum(), x)
    close(g, 2 * X)
    _, d = F(lib).jvp(lambda t: t * t, t64(lib, [3.0]))
    close(d, [6.0])
    outs, jvs = F(lib).jvp(f, (x, y), (t64(lib, np.ones(4)), t64(lib, np.zeros((2, 3)))))
    close(jvs[0], np.full(4, Y.sum()))
    close(jvs[1], np.exp(X).sum())


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_vhp_and_hvp(lib):
    # f(x) = sum(x^2 * (A^T A x)): H = 2 diag(B x) + 2 diag(x) B + 2 B diag(x), B = A^T A
    B = A.T @ A
    b = t64(lib, B)
    v = RNG.standard_normal(4)
    H = 2 * np.diag(B @ X) + 2 * np.diag(X) @ B + 2 * B @ np.diag(X)

    def f(t):
        return (t * t * (b @ t)).sum()

    out, vh = F(lib).vhp(f, t64(lib, X), t64(lib, v))
    close(out, (X * X * (B @ X)).sum())
    close(vh, v @ H)
    out, hv = F(lib).hvp(f, t64(lib, X), t64(lib, v))
    close(hv, H @ v)
    _, hv1 = F(lib).hvp(lambda t: t.pow(4).sum(), t64(lib, [2.0]))
    close(hv1, [48.0])


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
@pytest.mark.parametrize("name", ["vjp", "jvp", "vhp", "hvp"])
def test_create_graph_products_are_differentiable(lib, name):
    fn = getattr(F(lib), name)
    v = t64(lib, RNG.standard_normal(3))

    def prod(x):
        return fn(lambda t: (t.sin() * t).sum() if name in ("vhp", "hvp") else t.sin() * t,
                  x, v, create_graph=True)[1]

    x = t64(lib, X[:3], requires_grad=True)
    assert prod(x).requires_grad
    assert lib.autograd.gradcheck(prod, (x,))


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_independent_input_gives_zeros_unless_strict(lib):
    x, y = t64(lib, X), t64(lib, Y)
    _, vj = F(lib).vjp(lambda a, b: a * 2, (x, y), t64(lib, np.ones(4)))
    close(vj[1], np.zeros((2, 3)))
    msg = ("^The output of the user-provided function is independent of input 1. This is not "
           "allowed in strict mode.$")
    with pytest.raises(RuntimeError, match=msg):
        F(lib).vjp(lambda a, b: a * 2, (x, y), t64(lib, np.ones(4)), strict=True)
    with pytest.raises(RuntimeError, match="^Output 0 of the user-provided function is "
                                           "independent of input 1. This is not allowed in "
                                           "strict mode.$"):
        F(lib).jacobian(lambda a, b: a * 2, (x, y), strict=True)


STRICT = [
    ("vjp", lambda lib, x: F(lib).vjp(lambda t: lib.ones(4, dtype=lib.float64), x,
                                      lib.ones(4, dtype=lib.float64), strict=True),
     "Output 0 of the user-provided function does not require gradients. The outputs must be "
     "computed in a differentiable manner from the input when running in strict mode."),
    ("jacobian-create-graph",
     lambda lib, x: F(lib).jacobian(lambda t: t * 2, x, strict=True, create_graph=True),
     "The jacobian of the user-provided function is independent of input 0. This is not "
     "allowed in strict mode when create_graph=True."),
    ("jvp-grad-inputs", lambda lib, x: F(lib).jvp(lambda t: t.sign(), x,
                                                  lib.ones(4, dtype=lib.float64), strict=True),
     "The gradient with respect to input 0 is independent of the inputs of the user-provided "
     "function. This is not allowed in strict mode."),
    ("vhp-jacobian", lambda lib, x: F(lib).vhp(lambda t: (t * 2).sum(), x,
                                               lib.ones(4, dtype=lib.float64), strict=True),
     "While computing the hessian, found that the jacobian of the user-provided function with "
     "respect to input 0 is independent of the input. This is not allowed in strict mode. You "
     "should ensure that your function is twice differentiable and that the jacobian depends "
     "on the inputs (this would be violated by a linear function for example)."),
    ("hessian-jacobian", lambda lib, x: F(lib).hessian(lambda t: (t * 2).sum(), x, strict=True),
     "While computing the hessian, found that the jacobian of the user-provided function with "
     "respect to input 0 is independent of the input. This is not allowed in strict mode. You "
     "should ensure that your function is twice differentiable and that the jacobian depends "
     "on the inputs (this would be violated by a linear function for example)."),
    ("vhp-linear-in-one", lambda lib, x: F(lib).vhp(
        lambda t, u: (t * t).sum() + u.sum(), (x, x.clone()),
        (lib.ones(4, dtype=lib.float64), lib.ones(4, dtype=lib.float64)), strict=True),
     "While computing the hessian, found that the jacobian of the user-provided function with "
     "respect to input 1 is independent of the input. This is not allowed in strict mode. You "
     "should ensure that your function is twice differentiable and that the jacobian depends "
     "on the inputs (this would be violated by a linear function for example)."),
    ("jvp-detached", lambda lib, x: F(lib).jvp(lambda t: t.detach().requires_grad_() * 1.0,
                                               x, lib.ones(4, dtype=lib.float64), strict=True),
     "The output of the user-provided function is independent of input 0. This is not "
     "allowed in strict mode."),
]


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
@pytest.mark.parametrize("case", STRICT, ids=[c[0] for c in STRICT])
def test_strict_mode_errors(lib, case):
    _, call, msg = case
    with pytest.raises(RuntimeError) as info:
        call(lib, t64(lib, X))
    assert str(info.value) == msg


ERRORS = [
    ("inputs-list", lambda lib, x: F(lib).vjp(lambda t: t, [x]), TypeError,
     "The inputs given to vjp must be either a Tensor or a tuple of Tensors but the given "
     "inputs has type <class 'list'>."),
    ("inputs-tuple-int", lambda lib, x: F(lib).jacobian(lambda t, u: t, (x, 3)), TypeError,
     "The inputs given to jacobian must be either a Tensor or a tuple of Tensors but the value "
     "at index 1 has type <class 'int'>."),
    ("outputs-list", lambda lib, x: F(lib).jvp(lambda t: [t], x, x), TypeError,
     "The outputs of the user-provided function given to jvp must be either a Tensor or a "
     "tuple of Tensors but the given outputs of the user-provided function has type "
     "<class 'list'>."),
    ("outputs-none", lambda lib, x: F(lib).hessian(lambda t: None, x), TypeError,
     "The outputs of the user-provided function given to hessian must be either a Tensor or a "
     "tuple of Tensors but the given outputs of the user-provided function has type "
     "<class 'NoneType'>."),
    ("v-none-vjp", lambda lib, x: F(lib).vjp(lambda t: t, x), RuntimeError,
     "The vector v can only be None if the user-provided function returns a single Tensor "
     "with a single element."),
    ("v-none-jvp", lambda lib, x: F(lib).jvp(lambda t: t, x), RuntimeError,
     "The vector v can only be None if the input to the user-provided function is a single "
     "Tensor with a single element."),
    ("v-size", lambda lib, x: F(lib).jvp(lambda t: t, x, lib.ones(3)), RuntimeError,
     "v has invalid size: should be torch.Size([4]) but got torch.Size([3])."),
    ("v-entry-size", lambda lib, x: F(lib).vhp(lambda t, u: (t * u).sum(), (x, x),
                                               (lib.ones(4), lib.ones(2))), RuntimeError,
     "Entry 1 in v has invalid size: should be torch.Size([4]) but got torch.Size([2])."),
    ("v-length", lambda lib, x: F(lib).hvp(lambda t, u: (t * u).sum(), (x, x),
                                           (lib.ones(4),)), RuntimeError,
     "v is a tuple of invalid length: should be 2 but got 1."),
    ("v-single", lambda lib, x: F(lib).vjp(lambda t: t, x, (lib.ones(4), lib.ones(4))),
     RuntimeError, "The given v should contain a single Tensor."),
    ("v-type", lambda lib, x: F(lib).vjp(lambda t: t, x, 1.0), TypeError,
     "The v given to vjp must be either a Tensor or a tuple of Tensors but the given v has "
     "type <class 'float'>."),
    ("hvp-tuple", lambda lib, x: F(lib).hvp(lambda t: (t.sum(),), x, x), RuntimeError,
     "The function given to hvp should return a single Tensor"),
    ("vhp-many", lambda lib, x: F(lib).vhp(lambda t: t * 2, x, x), RuntimeError,
     "The Tensor returned by the function given to vhp should contain a single element"),
    ("hessian-tuple", lambda lib, x: F(lib).hessian(lambda t: (t.sum(),), x), RuntimeError,
     "The function given to hessian should return a single Tensor"),
    ("hessian-many", lambda lib, x: F(lib).hessian(lambda t: t * 2, x), RuntimeError,
     "The Tensor returned by the function given to hessian should contain a single element"),
    ("strategy", lambda lib, x: F(lib).jacobian(lambda t: t, x, strategy="sideways"),
     AssertionError,
     'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your function '
     'has more outputs than inputs, "forward-mode" tends to be more performant. Otherwise, '
     'prefer to use "reverse-mode".'),
    ("hessian-strategy", lambda lib, x: F(lib).hessian(lambda t: t.sum(), x,
                                                       outer_jacobian_strategy="x"),
     AssertionError, 'Expected strategy to be either "forward-mode" or "reverse-mode".'),
    ("forward-create-graph", lambda lib, x: F(lib).jacobian(
        lambda t: t, x, create_graph=True, strategy="forward-mode"), NotImplementedError,
     "torch.autograd.functional.jacobian: `create_graph=True` and `strategy=\"forward-mode\"` "
     "are not supported together (yet). Please either set `create_graph=False` or "
     "`strategy=\"reverse-mode\"`."),
    ("forward-not-vectorized", lambda lib, x: F(lib).jacobian(lambda t: t, x,
                                                              strategy="forward-mode"),
     NotImplementedError, "Computing Jacobian using forward-AD or forward-over-reverse Hessian "
     "isonly implemented for `vectorize=True`."),
    ("forward-strict", lambda lib, x: F(lib).jacobian(lambda t: t, x, strict=True,
                                                      vectorize=True,
                                                      strategy="forward-mode"),
     RuntimeError, "torch.autograd.functional.jacobian: `strict=True` and "
     "`strategy=\"forward-mode\"` are not supported together (yet). Please either set "
     "`strict=False` or `strategy=\"reverse-mode\"`."),
    ("vectorize-strict", lambda lib, x: F(lib).jacobian(lambda t: t * t, x, strict=True,
                                                        vectorize=True),
     RuntimeError, "torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` "
     "are not supported together. Please either set `strict=False` or `vectorize=False`."),
]


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_errors(lib, case):
    _, call, exc, msg = case
    with pytest.raises(exc) as info:
        call(lib, t64(lib, X))
    assert type(info.value) is exc and str(info.value) == msg


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_v_of_another_dtype_is_cast_as_the_engine_casts_gradients(lib):
    _, vj = F(lib).vjp(lambda t: t * 2, t64(lib, X), lib.ones(4))
    assert vj.dtype == lib.float64
    close(vj, np.full(4, 2.0))


def test_results_keep_no_graph_and_inputs_stay_untouched():
    x = t64(ptl, X, requires_grad=True)
    jac = F(ptl).jacobian(lambda t: t.exp(), x)
    assert jac.grad_fn is None and x.grad is None
    out, hv = F(ptl).hvp(lambda t: t.exp().sum(), x, ptl.ones(4, dtype=ptl.float64))
    assert out.grad_fn is None and hv.grad_fn is None and x.grad is None
