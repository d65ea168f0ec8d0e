"""In-place elu saves its result, as torch does: elu_ (and selu with inplace=True) records
EluBackward1, celu_ CeluBackward1, both saving the result and differentiating through
elu_backward(..., is_result=True, result); celu is an op of its own (CeluBackward0).  Checks
the is_result kernel against NumPy and torch, the first and second derivatives against torch
(ties at 0 included), gradcheck/gradgradcheck of the in-place ELU rows of
derivatives.def, the errors, and that elu_ keeps no copy of its input.  The in-place ELU
family's second derivatives (EluBackwardBackward0), and in-place leaky_relu, which saves its
result too (LeakyReluBackward1), are checked the same way."""
import re

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck, gradgradcheck
from helpers import (FLOAT_DTYPES, INT_DTYPES, LAYOUTS, SHAPES, assert_close, assert_no_leak,
                     assert_raises_like_torch, make, to_numpy)
import golden


NEG_SLOPE_MSG = ("In-place elu backward calculation is triggered with a negative slope which is "
                 "not supported. This is caused by calling in-place forward function with a "
                 "negative slope, please call out-of-place version instead.")


# ---- the elu_backward kernel with is_result=True ----

def _elu_ref(x, alpha, scale, input_scale):
    return np.where(x <= 0, alpha * scale * np.expm1(x * input_scale), x * scale)


def _result_grad_ref(g, y, alpha, scale, input_scale):
    return np.where(y <= 0, g * input_scale * (y + alpha * scale), g * scale)


PARAMS = [(1.0, 1.0, 1.0), (0.7, 1.3, 0.5), (0.0, 2.0, 1.0),
          (1.6732632423543772, 1.0507009873554805, 1.0)]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_elu_backward_is_result_matches_numpy(dtype, shape, layout):
    alpha, scale, input_scale = 0.7, 1.3, 0.5
    x, xn = make(shape, dtype, layout, seed=1)
    g, gn = make(shape, dtype, layout, seed=2)
    y = ptl.ops.aten.elu(x, alpha, scale, input_scale)
    assert_close(y, _elu_ref(xn.astype(np.float64), alpha, scale, input_scale), dtype=dtype)
    # the reference starts from y as stored in dtype: the formula reads the stored result
    yn = to_numpy(y)
    got = ptl.ops.aten.elu_backward(g, alpha, scale, input_scale, True, y)
    assert_close(got, _result_grad_ref(gn.astype(np.float64), yn, alpha, scale, input_scale),
                 dtype=dtype)


@pytest.mark.parametrize("params", PARAMS)
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
def test_elu_backward_is_result_matches_torch(params, dtype):
    # ties at 0 and -0, nan, both sides; grad_output broadcast against a transposed result
    vals = np.array([[-3.0, -0.5, 0.0, -0.0], [0.25, 2.0, np.nan, -1e-3]]).T
    gvals = np.array([1.5, -0.75])

    def run(m):
        dt = getattr(m, dtype)
        y = m.ops.aten.elu(m.tensor(vals, dtype=dt), *params)
        return {"grad": m.ops.aten.elu_backward(m.tensor(gvals, dtype=dt), *params, True, y)}
    golden.assert_same_results(run, rtol=1e-6, atol=1e-6)


def test_elu_backward_is_result_at_zero():
    # the result side of the kink: y <= 0 takes input_scale (y + alpha scale)
    for m in golden.LIBRARIES:
        got = m.ops.aten.elu_backward(m.ones(3, dtype=m.float64), 2.0, 3.0, 0.5, True,
                                      m.tensor([-1.0, 0.0, 1.0], dtype=m.float64))
        assert got.tolist() == [2.5, 3.0, 3.0]


def test_elu_backward_is_result_negative_alpha_raises():
    assert_raises_like_torch(
        lambda m: m.ops.aten.elu_backward(m.ones(2), -0.5, 1.0, 1.0, True, m.ones(2)),
        RuntimeError, NEG_SLOPE_MSG)
    # is_result=False accepts a negative alpha
    for m in golden.LIBRARIES:
        got = m.ops.aten.elu_backward(m.ones(2, dtype=m.float64), -0.5, 1.0, 1.0, False,
                                      m.tensor([-1.0, 1.0], dtype=m.float64))
        np.testing.assert_allclose(got.numpy(), [-0.5 * np.exp(-1.0), 1.0])


@pytest.mark.parametrize("dtype", INT_DTYPES + [ptl.bool])
def test_elu_backward_is_result_rejects_non_float(dtype):
    name = str(dtype).split(".")[1]
    assert_raises_like_torch(
        lambda m: m.ops.aten.elu_backward(m.ones(2, dtype=getattr(m, name)), 1.0, 1.0, 1.0,
                                          True, m.ones(2, dtype=getattr(m, name))),
        NotImplementedError, '"elu_backward_cpu" not implemented for')


# ---- celu, now an op of its own ----

@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_celu_matches_numpy(dtype, shape, layout):
    alpha = 0.6
    x, xn = make(shape, dtype, layout, seed=3)
    want = _elu_ref(xn.astype(np.float64), alpha, 1.0, 1.0 / alpha)
    assert_close(ptl.nn.functional.celu(x, alpha), want, dtype=dtype)
    if layout != "expanded":
        y = x.clone()
        assert ptl.nn.functional.celu(y, alpha, inplace=True) is y
        assert_close(y, want, dtype=dtype)


def test_celu_alpha_zero_raises():
    msg = "ZeroDivisionError: alpha cannot be 0 for CELU"
    for inplace in (False, True):
        assert_raises_like_torch(
            lambda m: m.nn.functional.celu(m.ones(2), 0.0, inplace=inplace), RuntimeError, msg)


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_celu_rejects_integers(dtype):
    name = str(dtype).split(".")[1]
    for inplace in (False, True):
        assert_raises_like_torch(
            lambda m: m.nn.functional.celu(m.ones(2, dtype=getattr(m, name)), inplace=inplace),
            NotImplementedError, '"elu_cpu" not implemented for')


# ---- nodes, first and second derivatives against torch ----

# (name, fn(lib, x), torch's node name)
CASES = [
    ("elu_inplace", lambda m, x: m.nn.functional.elu(x.clone(), 1.3, inplace=True),
     "EluBackward1"),
    ("elu_", lambda m, x: m.nn.functional.elu_(x.clone(), 0.6), "EluBackward1"),
    ("elu_alpha0", lambda m, x: m.nn.functional.elu(x.clone(), 0.0, inplace=True),
     "EluBackward1"),
    ("selu_inplace", lambda m, x: m.nn.functional.selu(x.clone(), inplace=True),
     "EluBackward1"),
    ("selu_", lambda m, x: m.nn.functional.selu_(x.clone()), "EluBackward1"),
    ("celu_inplace", lambda m, x: m.nn.functional.celu(x.clone(), 0.3, inplace=True),
     "CeluBackward1"),
    ("celu_", lambda m, x: m.nn.functional.celu_(x.clone(), 1.7), "CeluBackward1"),
    ("celu", lambda m, x: m.nn.functional.celu(x, 0.3), "CeluBackward0"),
]
IDS = [c[0] for c in CASES]
# ties at exactly 0 on both the input and the result side, values on both sides
VALUES = [[-2.0, -0.7, 0.0, 3.0], [0.0, 0.4, 1.5, -1e-4]]


def _grads(m, fn):
    x = m.tensor(VALUES, dtype=m.float64).t().requires_grad_(True)   # non-contiguous
    y = fn(m, x)
    g, = m.autograd.grad((y * y).sum(), x, create_graph=True)
    gg, = m.autograd.grad((g * g * x).sum(), x)
    return y, g, gg


@pytest.mark.parametrize("name, fn, node", CASES, ids=IDS)
def test_node_name_and_saved_result_match_torch(name, fn, node):
    for m in golden.LIBRARIES:
        x = m.tensor([-1.0, 0.0, 2.0], dtype=m.float64, requires_grad=True)
        y = fn(m, x)
        assert y.grad_fn.name() == node
        if node.endswith("1"):
            # the in-place op saves its result (the output itself), not a copy of self
            r = y.grad_fn._saved_result
            assert r.data_ptr() == y.data_ptr() and r.tolist() == y.tolist()


@pytest.mark.parametrize("name, fn, node", CASES, ids=IDS)
def test_first_and_second_derivatives_match_torch(name, fn, node):
    golden.assert_same_results(lambda m: golden.named(_grads(m, fn)), rtol=1e-12, atol=1e-12)
    # the double backward node of the in-place ops reaches their result's node, as in torch
    for m in golden.LIBRARIES:
        assert _grads(m, fn)[1].grad_fn.name() == "EluBackwardBackward0"


def _next_names(m, fn):
    x = m.tensor([-1.0, 0.5], dtype=m.float64, requires_grad=True)
    g, = m.autograd.grad(fn(m, x).sum(), x, create_graph=True)
    return [f.name() if f is not None else None for f, _ in g.grad_fn.next_functions]


@pytest.mark.parametrize("name, fn, node", [c for c in CASES if c[2].endswith("1")],
                         ids=[c[0] for c in CASES if c[2].endswith("1")])
def test_double_backward_graph_goes_through_the_result(name, fn, node):
    for m in golden.LIBRARIES:
        assert _next_names(m, fn) == [None, node]


def test_elu_backward_is_result_double_backward_matches_torch():
    # d/d(grad_output) = elu_backward(gg, ..., True, result); d/d(result) = gg gO input_scale
    # (result < 0); gradients of both inputs, result ties at 0 included
    yv, gv = [-0.9, 0.0, 0.0, 1.2, -0.2], [0.3, -1.1, 2.0, 0.7, -0.4]
    ggv = [1.0, 0.5, -2.0, 3.0, 1.5]
    def run(m):
        y = m.tensor(yv, dtype=m.float64, requires_grad=True)
        g = m.tensor(gv, dtype=m.float64, requires_grad=True)
        r = m.ops.aten.elu_backward(g, 0.8, 1.2, 0.6, True, y)
        return golden.named(m.autograd.grad(r, (g, y), m.tensor(ggv, dtype=m.float64)))
    golden.assert_same_results(run, rtol=1e-12, atol=1e-12)


# ---- gradcheck of the in-place ELU and CELU rows ----

def _x(shape=(3, 2)):
    # non-contiguous, away from the kink at 0 (finite differences straddle no tie)
    x = ptl.tensor([[-1.3, 0.4, -0.05], [2.0, -0.2, 0.9]], dtype=ptl.float64)
    return x.t() if shape == (3, 2) else x


def _elu_inplace_bcast(t):
    # the in-place op on a broadcast sum (the input to elu_ is a non-leaf)
    return ptl.nn.functional.elu(t + ptl.tensor([0.1, -0.3], dtype=ptl.float64), 0.9,
                                 inplace=True)


GRADCHECK = {
    "elu_": [lambda t: ptl.nn.functional.elu(t.clone(), 1.3, inplace=True),
             lambda t: ptl.nn.functional.selu(t.clone(), inplace=True),
             lambda t: ptl.ops.aten.elu_(t.clone(), 0.8, 1.5, 0.7),
             _elu_inplace_bcast],
    "celu": [lambda t: ptl.nn.functional.celu(t, 0.3),
             lambda t: ptl.nn.functional.celu(t.expand(2, 3, 2), 1.7)],
    "celu_": [lambda t: ptl.nn.functional.celu(t.clone(), 0.3, inplace=True),
              lambda t: ptl.nn.functional.celu_(t * 2.0, 1.7)],
}


@pytest.mark.parametrize("op, k", [(op, k) for op, fns in GRADCHECK.items()
                                   for k in range(len(fns))])
def test_gradcheck_and_gradgradcheck(op, k):
    x = _x().requires_grad_(True)
    fn = GRADCHECK[op][k]
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


def test_elu_backward_is_result_gradgradcheck():
    y = ptl.tensor([-0.9, -0.3, 0.6, 1.2], dtype=ptl.float64).requires_grad_(True)
    g = ptl.tensor([[0.3, -1.1, 2.0, 0.7]], dtype=ptl.float64).t().requires_grad_(True)
    fn = lambda gr, yr: ptl.ops.aten.elu_backward(gr.t(), 0.8, 1.2, 0.6, True, yr)  # noqa: E731
    assert gradcheck(fn, (g, y))
    assert gradgradcheck(fn, (g, y))


# ---- errors of the in-place ops with a negative alpha ----

@pytest.mark.parametrize("fn", [
    lambda m, x: m.nn.functional.elu(x.clone(), -1.0, inplace=True),
    lambda m, x: m.nn.functional.celu(x.clone(), -1.0, inplace=True),
], ids=["elu", "celu"])
def test_inplace_negative_alpha_raises_at_backward(fn):
    # as in torch, the forward runs (also under grad mode); backward refuses
    def run(m):
        x = m.tensor([-1.0, 0.0, 2.0], dtype=m.float64, requires_grad=True)
        y = fn(m, x)
        y.sum().backward()
    assert_raises_like_torch(run, RuntimeError, NEG_SLOPE_MSG)


def test_out_of_place_negative_alpha_differentiates():
    def run(m):
        x = m.tensor([-1.0, 0.0, 2.0], dtype=m.float64, requires_grad=True)
        m.nn.functional.celu(x, -1.0).sum().backward()
        return {"grad": x.grad}
    golden.assert_same_results(run, rtol=1e-12, atol=0)


# ---- no copy of the input ----

def _live_after(fn):
    x = ptl.tensor([-1.0, 0.0, 2.0], dtype=ptl.float64, requires_grad=True)
    before = ptl._C._live_counts()
    y = fn(x.clone())
    after = ptl._C._live_counts()
    del y
    return {k: after[k] - before.get(k, 0) for k in after}


@pytest.mark.parametrize("fn", [
    lambda t: ptl.nn.functional.elu(t, 1.3, inplace=True),
    lambda t: ptl.nn.functional.selu(t, inplace=True),
    lambda t: ptl.nn.functional.celu(t, 0.4, inplace=True),
    lambda t: ptl.nn.functional.leaky_relu(t, 0.2, inplace=True),
], ids=["elu", "selu", "celu", "leaky_relu"])
def test_inplace_activation_keeps_no_copy_of_its_input(fn):
    # relu_ saves its result too: the in-place elu family and leaky_relu_ hold exactly as much
    assert _live_after(fn) == _live_after(lambda t: ptl.relu_(t))
    assert _live_after(fn)["Storage"] == 1    # the clone's, which the result shares


def test_modified_result_raises_like_torch():
    def run(m):
        x = m.tensor([-1.0, 2.0], dtype=m.float64, requires_grad=True)
        y = m.nn.functional.elu(x.clone(), inplace=True)
        y.mul_(2)
        y.sum().backward()
    assert_raises_like_torch(run, RuntimeError, "modified by an inplace operation")


def test_no_leak():
    def step():
        x = ptl.tensor([-1.0, 0.0, 2.0], dtype=ptl.float64, requires_grad=True)
        y = ptl.nn.functional.celu(x.clone(), 0.5, inplace=True)
        g, = ptl.autograd.grad(y.sum(), x, create_graph=True)
        g.sum().backward()
    assert_no_leak(step)


# ---- in-place ELU family: second derivatives through EluBackwardBackward0 ----

# (name, fn(lib, x)); x has a tie at 0 and values on both sides
ELU_INPLACE = [
    ("elu_inplace", lambda m, x: m.nn.functional.elu(x.clone(), 1.3, inplace=True)),
    ("elu_", lambda m, x: m.nn.functional.elu_(x.clone(), 0.6)),
    ("selu_inplace", lambda m, x: m.nn.functional.selu(x.clone(), inplace=True)),
    ("celu_inplace", lambda m, x: m.nn.functional.celu(x.clone(), 0.5, inplace=True)),
]
ELU_VALUES = [[-2.0, -0.7, 0.0], [0.0, 0.4, 1.5]]


def _elu_grads(m, fn):
    x = m.tensor(ELU_VALUES, dtype=m.float64).t().requires_grad_(True)   # non-contiguous
    y = fn(m, x)
    g, = m.autograd.grad((y * y).sum(), x, create_graph=True)
    gg, = m.autograd.grad((g * g).sum(), x)
    return y, g, gg


@pytest.mark.parametrize("name, fn", ELU_INPLACE, ids=[c[0] for c in ELU_INPLACE])
def test_inplace_elu_double_backward_matches_torch(name, fn):
    # celu's input_scale 1/alpha: torch rounds it through float, hence 1e-7
    golden.assert_same_results(lambda m: golden.named(_elu_grads(m, fn)), rtol=1e-7, atol=1e-7)
    for m in golden.LIBRARIES:
        assert _elu_grads(m, fn)[1].grad_fn.name() == "EluBackwardBackward0"


@pytest.mark.parametrize("name, fn", ELU_INPLACE, ids=[c[0] for c in ELU_INPLACE])
def test_inplace_elu_gradgradcheck(name, fn):
    x = ptl.tensor([[-1.3, 0.4], [2.0, -0.2], [-0.6, 0.9]], dtype=ptl.float64).t()
    x.requires_grad_(True)
    assert gradcheck(lambda t: fn(ptl, t), (x,))
    assert gradgradcheck(lambda t: fn(ptl, t), (x,))


# ---- in-place leaky_relu saves its result, not a copy of its input (LeakyReluBackward1
# with leaky_relu_backward(..., self_is_result=True)) ----

# ties at exactly 0, values on both sides; transposed below (non-contiguous)
LEAKY_VALUES = [[-2.0, -0.7, 0.0, 3.0], [0.0, 0.4, 1.5, -1e-4]]
LEAKY_SLOPES = [0.01, 0.0, 0.3, 1.5]
LEAKY_NEG_SLOPE_MSG = ("In-place leakyReLu backward calculation is triggered with a negative slope which is "
       "not supported.")


def leaky_relu_inplace(m, x, slope):
    return m.nn.functional.leaky_relu(x.clone(), slope, inplace=True)


def _leaky_grads(m, slope):
    x = m.tensor(LEAKY_VALUES, dtype=m.float64).t().requires_grad_(True)
    y = leaky_relu_inplace(m, x, slope)
    g, = m.autograd.grad((y * y).sum(), x, create_graph=True)
    gg, = m.autograd.grad((g * g * x).sum(), x)
    return y, g, gg


@pytest.mark.parametrize("slope", LEAKY_SLOPES)
def test_leaky_relu_inplace_derivatives_match_torch(slope):
    golden.assert_same_results(lambda m: golden.named(_leaky_grads(m, slope)), rtol=1e-12,
                               atol=1e-12)


def test_leaky_relu_inplace_node_saves_the_result():
    for m in golden.LIBRARIES:
        x = m.tensor([-1.0, 0.0, 2.0], dtype=m.float64, requires_grad=True)
        y = leaky_relu_inplace(m, x, 0.2)
        assert y.grad_fn.name() == "LeakyReluBackward1"
        r = y.grad_fn._saved_result
        assert r.data_ptr() == y.data_ptr() and r.tolist() == y.tolist()


@pytest.mark.parametrize("slope", LEAKY_SLOPES)
def test_leaky_relu_inplace_gradcheck_and_gradgradcheck(slope):
    x = ptl.tensor(np.random.default_rng(0).standard_normal((3, 4)), dtype=ptl.float64)
    x = x.t().requires_grad_(True)
    assert gradcheck(lambda a: leaky_relu_inplace(ptl, a, slope), (x,))
    assert gradgradcheck(lambda a: leaky_relu_inplace(ptl, a, slope), (x,))


def test_leaky_relu_inplace_negative_slope_raises_at_backward():
    def run(m):
        x = m.tensor([-1.0, 2.0], dtype=m.float64, requires_grad=True)
        leaky_relu_inplace(m, x, -0.1).sum().backward()
    assert_raises_like_torch(run, RuntimeError, LEAKY_NEG_SLOPE_MSG)


def test_leaky_relu_backward_refuses_a_negative_slope_on_the_result():
    def run(m):
        t = m.ones(3)
        m.ops.aten.leaky_relu_backward(t, t, -0.1, True)
    assert_raises_like_torch(run, RuntimeError, LEAKY_NEG_SLOPE_MSG)


def test_leaky_relu_backward_from_result_matches_numpy():
    y = np.array([-0.3, 0.0, 2.0, -0.0, 5.0])
    g = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    got = ptl.ops.aten.leaky_relu_backward(ptl.tensor(g), ptl.tensor(y), 0.1, True)
    np.testing.assert_array_equal(got.numpy(), np.where(y > 0, g, 0.1 * g))

