"""The alias names of pytorchlite/_functions.py (torch.divide is torch.div, ...) as functions,
Tensor methods and in-place methods, and the in-place composites built by _in_place
(cumsum_, cumprod_, clamp_min_/clamp_max_): against NumPy in float64 or exactly, on every
layout, with gradients and PyTorch's errors."""
import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite._functions import _ALIASES, _FUNCTION_ONLY_ALIASES, _NO_IN_PLACE_ALIASES
from helpers import LAYOUTS, assert_close, assert_raises_like_torch, make, torch

UNARY = {"negative": np.negative, "absolute": np.abs, "fix": np.trunc,
         "arccos": np.arccos, "arcsin": np.arcsin, "arctan": np.arctan,
         "arccosh": np.arccosh, "arcsinh": np.arcsinh, "arctanh": np.arctanh}
BINARY = {"divide": np.divide, "true_divide": np.divide, "multiply": np.multiply,
          "subtract": np.subtract, "not_equal": np.not_equal, "greater": np.greater,
          "greater_equal": np.greater_equal, "less": np.less, "less_equal": np.less_equal,
          "arctan2": np.arctan2}


def test_every_alias_is_tested_and_bound_to_its_operator():
    assert set(UNARY) | set(BINARY) | {"concatenate", "row_stack", "ger"} == set(_ALIASES)
    for alias, op in _ALIASES.items():
        assert getattr(ptl, alias) is getattr(ptl, op)
        method = alias not in _FUNCTION_ONLY_ALIASES
        in_place = method and alias not in _NO_IN_PLACE_ALIASES
        assert hasattr(ptl.Tensor, alias) == method
        assert hasattr(ptl.Tensor, alias + "_") == in_place
        if method:
            assert getattr(ptl.Tensor, alias) is getattr(ptl.Tensor, op)
        if in_place:
            assert getattr(ptl.Tensor, alias + "_") is getattr(ptl.Tensor, op + "_")
        if torch is not None:
            assert hasattr(torch, alias)
            assert hasattr(torch.Tensor, alias) == method
            assert hasattr(torch.Tensor, alias + "_") == in_place


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", [(), (0,), (3, 4), (2, 0, 3)])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_aliases(name, shape, layout):
    t, a = make(shape, ptl.float64, layout, low=-0.9, high=0.9)
    with np.errstate(all="ignore"):
        want = UNARY[name](a.astype(np.float64))
    assert_close(getattr(ptl, name)(t), want, dtype=ptl.float64, rtol=1e-12, atol=1e-14)
    assert_close(getattr(t, name)(), want, rtol=1e-12, atol=1e-14)
    c = t.clone()
    assert getattr(c, name + "_")() is c
    assert_close(c, want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shapes", [((3, 4), (4,)), ((), (2, 3)), ((0, 3), (3,))])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_aliases(name, shapes, layout):
    t, a = make(shapes[0], ptl.float64, layout, seed=1)
    u, b = make(shapes[1], ptl.float64, seed=2)
    with np.errstate(all="ignore"):
        want = BINARY[name](a.astype(np.float64), b.astype(np.float64))
    assert_close(getattr(ptl, name)(t, u), want, rtol=1e-12, atol=1e-14)
    assert_close(getattr(t, name)(u), want, rtol=1e-12, atol=1e-14)


def test_alias_keywords_and_integer_dtypes():
    a, b = ptl.tensor([7, -7, 4]), ptl.tensor([2, 2, 3])
    assert_close(ptl.divide(a, b), np.array([3.5, -3.5, 4 / 3]), dtype=ptl.float32)
    assert_close(ptl.divide(a, b, rounding_mode="floor"), np.array([3, -4, 1]),
                 dtype=ptl.int64)
    assert_close(ptl.subtract(a, b, alpha=3), np.array([1, -13, -5]), dtype=ptl.int64)
    assert_close(ptl.multiply(a, b), np.array([14, -14, 12]), dtype=ptl.int64)
    assert_close(ptl.greater(a, b), np.array([True, False, True]), dtype=ptl.bool)
    assert_close(ptl.absolute(a), np.array([7, 7, 4]), dtype=ptl.int64)
    assert_close(ptl.fix(a), np.array([7, -7, 4]), dtype=ptl.int64)
    assert_close(ptl.concatenate([a, b]), np.array([7, -7, 4, 2, 2, 3]))
    assert_close(ptl.concatenate([a.view(1, 3), b.view(1, 3)], 1),
                 np.array([[7, -7, 4, 2, 2, 3]]))
    out = ptl.empty(3)
    assert ptl.true_divide(a, b, out=out) is out
    assert_close(ptl.ger(a, b), np.outer([7, -7, 4], [2, 2, 3]), dtype=ptl.int64)
    assert_close(a.ger(b), np.outer([7, -7, 4], [2, 2, 3]))
    assert_close(ptl.row_stack([a, b]), np.vstack([[7, -7, 4], [2, 2, 3]]))


def test_alias_gradients_are_the_operators():
    x = ptl.tensor([0.5, -0.25], dtype=ptl.float64, requires_grad=True)
    y = ptl.tensor([2.0, 4.0], dtype=ptl.float64, requires_grad=True)
    ptl.divide(x, y).sum().backward()
    assert_close(x.grad, np.array([0.5, 0.25]), rtol=1e-15)
    assert_close(y.grad, np.array([-0.125, 0.015625]), rtol=1e-15)
    assert ptl.arctan2(x, y).grad_fn.name() == "Atan2Backward0"


def test_alias_errors():
    assert_raises_like_torch(lambda m: m.divide(m.ones(2), m.ones(2), rounding_mode="x"),
                             RuntimeError, "div expected rounding_mode to be one of None, "
                             "'trunc', or 'floor' but found 'x'")
    assert_raises_like_torch(lambda m: m.ones(2, dtype=m.int64).divide_(m.ones(2)),
                             RuntimeError, "result type Float can't be cast to the desired "
                             "output type Long")


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape, dim", [((5,), 0), ((3, 4), 1), ((3, 4), -2), ((2, 0, 3), 2),
                                        ((), 0)])
def test_cumsum_and_cumprod_in_place(shape, dim, layout):
    t, a = make(shape, ptl.float64, layout, low=-1.5, high=1.5)
    axis = None if len(shape) == 0 else dim
    for name, ref in (("cumsum", np.cumsum), ("cumprod", np.cumprod)):
        c = t.clone()
        assert getattr(c, name + "_")(dim) is c
        want = ref(a.astype(np.float64), axis=axis).reshape(shape)
        assert_close(c, want, dtype=ptl.float64, rtol=1e-12, atol=1e-14)
    i = ptl.tensor([[1, 2], [3, 4]], dtype=ptl.int32)
    assert_close(i.cumsum_(1), np.array([[1, 3], [3, 7]]), dtype=ptl.int32)
    assert_close(ptl.tensor([1.0, 2.0]).cumsum_(0, dtype=ptl.float64), np.array([1.0, 3.0]),
                 dtype=ptl.float32)


def test_cumprod_in_place_gradient_of_a_non_leaf():
    a = ptl.tensor([1.0, 2.0, 3.0], dtype=ptl.float64, requires_grad=True)
    b = a * 1
    b.cumprod_(0)
    b.sum().backward()
    assert_close(a.grad, np.array([9.0, 4.0, 2.0]), rtol=1e-15)
    assert_raises_like_torch(lambda m: m.ones(2, requires_grad=True).cumsum_(0), RuntimeError,
                             "a leaf Variable that requires grad is being used in an in-place "
                             "operation.")


def test_clamp_min_and_max_in_place():
    for layout in LAYOUTS[:3]:
        t, a = make((3, 4), ptl.float64, layout)
        c = t.clone()
        assert c.clamp_min_(-1.0) is c
        assert_close(c, np.maximum(a, -1.0), rtol=0, atol=0)
        assert_close(c.clamp_max_(ptl.tensor(0.5, dtype=ptl.float64)), np.clip(a, -1.0, 0.5),
                     rtol=0, atol=0)
    i = ptl.tensor([-3, 0, 3])
    assert_close(i.clamp_min_(-1).clamp_max_(2), np.array([-1, 0, 2]), dtype=ptl.int64)
