"""The __torch_function__ protocol (Note [Torch function] in src/python/torch_function.c):
Tensor subclasses keep their type through functions, methods, operators, indexing and
properties; a subclass's or a mode's __torch_function__ sees PyTorch's func objects in
PyTorch's order; NotImplemented, precedence, Parameter/Buffer (disabled), as_subclass,
autograd, pickling, the Disable* context managers, tensor-likes that are no Tensor, and the
overrides helpers.  Compared with torch 2.13 where it is installed."""
import io
import pickle
import warnings

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.overrides import (TorchFunctionMode, get_default_nowrap_functions,
                                   handle_torch_function, has_torch_function,
                                   has_torch_function_unary, has_torch_function_variadic,
                                   is_tensor_like)
from helpers import torch, torch_ref


class Sub(ptl.Tensor):
    pass


class Logged(ptl.Tensor):
    calls = []

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        cls.calls.append(getattr(func, "__name__", repr(func)))
        return super().__torch_function__(func, types, args, kwargs or {})


def sub(values=(1.0, 2.0, 3.0), cls=Sub, dtype=None):
    return ptl.tensor(list(values), dtype=dtype).as_subclass(cls)


# (expression, whether the result is a tensor of the subclass); x float, xi int64
EXPRESSIONS = [
    "x + 1", "1 + x", "x - 1", "1 - x", "x * 2", "2 * x", "x / 2", "2 / x", "x // 2", "2 // x",
    "x % 2", "2 % x", "x ** 2", "2 ** x", "x @ x", "-x", "+x", "abs(x)", "~xi", "xi & 1",
    "1 & xi", "xi | 1", "1 | xi", "xi ^ 1", "xi << 1", "1 << xi", "xi >> 1", "x == 1", "x != 1",
    "x < 1", "1 < x", "x >= 1", "x <= 1", "x[0]", "x[1:]", "x[None, :]", "x.add(1)",
    "ptl.add(x, 1)", "x.sum()", "ptl.cat([x, x])", "ptl.stack([x, x])", "x.view(3)",
    "x.reshape(3)", "x.clone()", "x.detach()", "x.to(ptl.float64)", "x.float()",
    "ptl.nn.functional.relu(x)", "ptl.relu(x)", "x.relu()", "x.unsqueeze(0)", "x.new_zeros(2)",
    "ptl.where(x > 1, x, 0)", "x.mean()", "x.norm()", "x.expand(2, 3)", "x.contiguous()",
    "x.masked_fill(x > 1, 0)", "x.type(ptl.float64)", "x.cpu()", "ptl.zeros_like(x)",
    "ptl.full_like(x, 2)", "ptl.flatten(x)", "x.data", "x.T", "x.exp()", "ptl.sigmoid(x)",
]


def evaluate(lib, expr, cls):
    x = lib.tensor([1.0, 2.0, 3.0]).as_subclass(cls)
    xi = lib.tensor([1, 2, 3]).as_subclass(cls)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return eval(expr, {"ptl": lib, "x": x, "xi": xi})


@pytest.mark.parametrize("expr", EXPRESSIONS)
def test_results_keep_the_subclass(expr):
    r = evaluate(ptl, expr, Sub)
    assert type(r) is Sub, f"{expr} -> {type(r).__name__}"


@pytest.mark.parametrize("expr", ["x.max(0)", "x.sort()", "x.topk(1)", "x.split(1)",
                                  "x.chunk(3)", "x.unbind()", "ptl.aminmax(x)"])
def test_tuple_results_keep_the_subclass(expr):
    r = evaluate(ptl, expr, Sub)
    assert isinstance(r, tuple) and all(type(t) is Sub for t in r)
    if expr != "x.split(1)" and hasattr(r, "_fields"):
        assert type(r).__name__ == expr.split("(")[0].split(".")[-1]


def test_values_are_the_plain_computation():
    x = sub((1.0, -2.0, 3.0))
    plain = ptl.tensor([1.0, -2.0, 3.0])
    for f in (lambda t: t * 2 + 1, lambda t: t.exp().sum(), lambda t: t[1:] @ t[:2],
              lambda t: ptl.nn.functional.softmax(t, 0)):
        np.testing.assert_array_equal(f(x).numpy(), f(plain).numpy())


def test_in_place_returns_the_object_itself():
    x = sub()
    assert x.add_(1) is x and x.mul_(2) is x
    y = x
    y += 1
    assert y is x and type(y) is Sub
    np.testing.assert_array_equal(x.numpy(), [5.0, 7.0, 9.0])
    x[0] = 0.0
    assert x[0].item() == 0.0


def test_out_argument_of_a_subclass():
    out = sub((0.0, 0.0, 0.0))
    r = ptl.add(ptl.ones(3), ptl.ones(3), out=out)
    assert r is out and type(r) is Sub
    np.testing.assert_array_equal(out.numpy(), [2.0, 2.0, 2.0])


@torch_ref
@pytest.mark.parametrize("expr", EXPRESSIONS)
def test_funcs_seen_are_torchs(expr):
    """A logging subclass sees the names of the func objects PyTorch passes, in its order."""

    def names(lib):
        class Log(lib.Tensor):
            calls = []

            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                cls.calls.append(func.__name__)
                return super().__torch_function__(func, types, args, kwargs or {})
        r = evaluate(lib, expr, Log)
        return Log.calls, type(r).__name__

    ours, theirs = names(ptl), names(torch)
    aliases = {"__rtruediv__": "__rdiv__", "__pow__": "pow"}   # one object, two names
    assert [aliases.get(n, n) for n in ours[0]][-len(theirs[0]):] == theirs[0] or \
        expr in PYTHON_LEVEL, (ours, theirs)
    assert ours[1] == theirs[1]


# our Python-level functions call operators (the logged funcs are theirs), torch's are C
PYTHON_LEVEL = {"x.to(ptl.float64)", "x.type(ptl.float64)", "x.float()", "x.cpu()",
                "ptl.nn.functional.relu(x)", "x.norm()", "ptl.flatten(x)"}


def test_func_objects_are_the_public_callables():
    seen = []

    class Spy(ptl.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            seen.append((func, types, args, kwargs))
            return super().__torch_function__(func, types, args, kwargs or {})
    x = sub(cls=Spy)
    ptl.add(x, 1, alpha=2)
    x.add(1)
    x + 1
    1 - x
    x[0]
    assert seen[0][0] is ptl.add and seen[0][1] == (Spy,) and seen[0][3] == {"alpha": 2}
    assert seen[1][0] is ptl.Tensor.add and seen[1][2][0] is x
    assert seen[2][0] is ptl.Tensor.add and seen[2][2] == (x, 1)
    assert seen[3][0] is ptl.Tensor.__rsub__ and seen[3][2] == (x, 1)
    assert seen[4][0] is ptl.Tensor.__getitem__


def test_precedence_subclass_first_and_not_implemented():
    order = []

    class A(ptl.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            order.append("A")
            return NotImplemented

    class B(A):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            order.append("B")
            return NotImplemented

    class C(ptl.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            order.append("C")
            return NotImplemented

    a, b, c = sub(cls=A), sub(cls=B), sub(cls=C)
    with pytest.raises(TypeError, match="no implementation found for 'torch.cat' on types "
                                        "that implement __torch_function__"):
        ptl.cat([a, c, b])
    assert order == ["B", "A", "C"]


def test_default_returns_not_implemented_for_an_unrelated_type():
    class A(ptl.Tensor):
        pass

    class B(ptl.Tensor):
        pass
    with pytest.raises(TypeError, match="no implementation found"):
        sub(cls=A) + sub(cls=B)


def test_parameter_and_buffer_results_are_plain():
    p = ptl.nn.Parameter(ptl.ones(3))
    b = ptl.nn.Buffer(ptl.ones(3))
    for r in (p * 2, p[0], p.sum(), b + 1, ptl.add(p, b), p.data):
        assert type(r) is ptl.Tensor
    assert not has_torch_function_unary(p) and not has_torch_function_unary(b)
    lin = ptl.nn.Linear(3, 2)
    assert type(lin(ptl.ones(1, 3))) is ptl.Tensor
    assert type(lin(sub().unsqueeze(0))) is Sub


def test_as_subclass_shares_storage_and_history():
    base = ptl.ones(3, requires_grad=True)
    s = base.as_subclass(Sub)
    assert type(s) is Sub and s.data_ptr() == base.data_ptr()
    assert s.grad_fn is not None and s.grad_fn.name() == "AliasBackward0"
    (s * 3).sum().backward()
    np.testing.assert_array_equal(base.grad.numpy(), [3.0, 3.0, 3.0])
    plain = ptl.zeros(2)
    view = plain.as_subclass(Sub)
    view.add_(1)
    np.testing.assert_array_equal(plain.numpy(), [1.0, 1.0])
    with pytest.raises(TypeError, match="Creating a Tensor subclass from a class that does not "
                                        "inherit from Tensor is not possible"):
        plain.as_subclass(int)


def test_autograd_through_a_subclass_leaf():
    leaf = ptl.Tensor._make_subclass(Sub, ptl.tensor([1.0, 2.0]), True)
    y = (leaf * leaf).sum()
    assert type(y) is Sub
    y.backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), [2.0, 4.0])
    assert type(leaf.grad) is ptl.Tensor   # the grad getter is a nowrap function
    assert type(leaf.detach()) is Sub


def test_pickle_and_save_keep_the_subclass_and_its_attributes():
    x = sub()
    x.note = "kept"
    back = pickle.loads(pickle.dumps(x))
    assert type(back) is Sub and back.note == "kept"
    np.testing.assert_array_equal(back.numpy(), x.numpy())
    f = io.BytesIO()
    ptl.save({"x": x}, f)
    f.seek(0)
    loaded = ptl.load(f, weights_only=False)["x"]
    assert type(loaded) is Sub and loaded.note == "kept"
    f.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="Unsupported global: GLOBAL "
                                                     f"{__name__}.Sub"):
        ptl.load(f)
    f.seek(0)
    with ptl.serialization.safe_globals([Sub]):
        assert type(ptl.load(f)["x"]) is Sub


def test_disable_context_managers():
    Logged.calls = []
    x = sub(cls=Logged)
    with ptl._C.DisableTorchFunctionSubclass():
        r = x + 1
        assert not ptl._C._is_torch_function_enabled()
    assert Logged.calls == [] and type(r) is ptl.Tensor
    assert ptl._C._is_torch_function_enabled()
    with ptl._C.DisableTorchFunction():
        assert type(x.sum()) is ptl.Tensor
    assert Logged.calls == []
    x.sum()
    assert Logged.calls == ["sum"]


class Log(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.calls.append(func.__name__)
        return func(*args, **(kwargs or {}))


def test_mode_sees_every_call_and_is_off_inside_itself():
    with Log() as mode:
        t = ptl.ones(2)
        u = (t + 1).sum()
    assert mode.calls == ["ones", "add", "sum"]
    assert u.item() == 4.0
    after = ptl.ones(1) + 1   # the mode is gone
    assert after.item() == 2.0 and mode.calls == ["ones", "add", "sum"]


def test_nested_modes_innermost_first():
    outer, inner = Log(), Log()
    with outer, inner:
        ptl.ones(1).neg()
    assert inner.calls == ["ones", "neg"]
    assert outer.calls == ["ones", "neg"]   # the inner mode's own calls reach the outer one


def test_mode_with_disable_torch_function():
    with Log() as mode, ptl._C.DisableTorchFunction():
        ptl.ones(1)
    assert mode.calls == []


def test_a_tensor_like_that_is_no_tensor():
    class Like:
        seen = []

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            cls.seen.append((func.__name__, types))
            return "handled"
    like = Like()
    assert ptl.add(ptl.ones(1), like) == "handled"
    assert ptl.add(like, 1) == "handled"
    assert Like.seen == [("add", (Like,)), ("add", (Like,))]
    assert is_tensor_like(like) and is_tensor_like(ptl.ones(1)) and not is_tensor_like(3)


def test_overrides_helpers():
    x, p = sub(), ptl.nn.Parameter(ptl.ones(1))
    assert has_torch_function((ptl.ones(1), x)) and not has_torch_function((ptl.ones(1), p, 2))
    assert has_torch_function_variadic(1, x) and not has_torch_function_variadic(1, p)

    def double(t):
        if has_torch_function_unary(t):
            return handle_torch_function(double, (t,), t)
        return t * 2
    seen = []

    class Spy(ptl.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            seen.append(func)
            return super().__torch_function__(func, types, args, kwargs or {})
    r = double(sub(cls=Spy))
    assert seen[0] is double and type(r) is Spy
    assert ptl.Tensor.grad.__get__ in get_default_nowrap_functions()


def test_uninitialized_parameter_refuses_compute():
    u = ptl.nn.UninitializedParameter()
    with pytest.raises(ValueError, match="Attempted to use an uninitialized parameter in"):
        u + 1
    lazy = ptl.nn.LazyLinear(2)
    assert lazy(ptl.ones(1, 3)).shape == (1, 2)


def test_return_types_take_one_sequence_as_torchs():
    values, indices = ptl.ones(2), ptl.zeros(2, dtype=ptl.int64)
    r = ptl.return_types.max((values, indices))
    assert r.values is values and r.indices is indices
    assert ptl.return_types.max(iter([values, indices])).indices is indices
    with pytest.raises(TypeError, match=r"takes a 2-sequence \(1-sequence given\)"):
        ptl.return_types.max([values])


@torch_ref
def test_return_types_match_torch():
    a, b = torch.ones(2), torch.zeros(2)
    assert tuple(torch.return_types.max((a, b))) == (a, b)
    with pytest.raises(TypeError, match="2-sequence"):
        torch.return_types.max([a])
