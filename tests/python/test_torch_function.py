"""The __torch_function__ protocol (Note [Torch function] in src/python/torch_function.c):
Tensor subclasses keep their type through functions, methods, operators, indexing and
properties; a subclass's or a mode's __torch_function__ sees PyTorch's func objects in
PyTorch's order; NotImplemented, precedence, Parameter/Buffer (disabled), as_subclass,
autograd, pickling, the Disable* context managers, tensor-likes that are no Tensor, and the
overrides helpers.  Compared with torch 2.13 where it is installed."""
import copy
import inspect
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


def logging_subclass(base):
    """A subclass of base (either library's Tensor) that logs the funcs' names in .calls."""
    class Log(base):
        calls = []

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            cls.calls.append(getattr(func, "__name__", repr(func)))
            return super().__torch_function__(func, types, args, kwargs or {})
    return Log


Logged = logging_subclass(ptl.Tensor)


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
        Log = logging_subclass(lib.Tensor)
        r = evaluate(lib, expr, Log)
        return Log.calls, type(r).__name__

    ours, theirs = names(ptl), names(torch)
    aliases = {"__rtruediv__": "__rdiv__", "__pow__": "pow"}   # one object, two names
    assert [aliases.get(n, n) for n in ours[0]][-len(theirs[0]):] == theirs[0], (ours, theirs)
    assert ours[1] == theirs[1]


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


def logging_mode(base):
    """A mode class of base (either library's TorchFunctionMode) that logs the funcs' names
    in .calls and computes them."""
    class Mode(base):
        def __init__(self):
            super().__init__()
            self.calls = []

        def __torch_function__(self, func, types, args=(), kwargs=None):
            self.calls.append(getattr(func, "__name__", repr(func)))
            return func(*args, **(kwargs or {}))
    return Mode


Log = logging_mode(TorchFunctionMode)


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


# Functions written in Python here (nn.functional, torch.functional, the Python methods of
# Tensor ...) go to __torch_function__ themselves, as PyTorch's: (expression, the funcs a
# mode logs, the funcs a logging subclass logs, the subclass result's type), as torch 2.13
# logs them (test_python_level_rows_are_torchs).  v = [1., -2., 3.], s = 2.5 (0-dim),
# x = [[1., 2.], [3., 4.]], i = [0, 1], img = ones(1, 1, 4, 4); the subclass holds all but
# w = ones(3, 2) and b = zeros(3).
PYTHON_LEVEL = [
    ('len(v)', ['__len__'], ['__len__'], 'int'),
    ('repr(v)', ['__repr__'], ['__repr__'], 'str'),
    ('format(v)', ['__format__'], ['__format__'], 'str'),
    ('f"{s:.2f}"', ['__format__'],
     ['__format__', 'EXC TypeError: unsupported format string passed to Log.__format__'], None),
    ('reversed(v)', ['__reversed__'], ['__reversed__'], 'Log'),
    ('1.0 in v', ['__contains__'], ['__contains__'], 'bool'),
    ('v.to(torch.float64)', ['to'], ['to'], 'Log'),
    ('v.float()', ['float'], ['float'], 'Log'),
    ('v.double()', ['double'], ['double'], 'Log'),
    ('v.int()', ['int'], ['int'], 'Log'),
    ('v.type(torch.float64)', ['type'], ['type'], 'Log'),
    ('v.cpu()', ['cpu'], ['cpu'], 'Log'),
    ('v.type_as(x)', ['type_as'], ['type_as'], 'Log'),
    ('v.norm()', ['norm'], ['norm'], 'Log'),
    ('v.split(1)', ['split'], ['split'], 'tuple[Log]'),
    ('v.unique()', ['unique'], ['unique'], 'Log'),
    ('torch.norm(v)', ['norm'], ['norm'], 'Log'),
    ('torch.unique(v)', ['unique'], ['unique'], 'Log'),
    ('torch.einsum("i,i->", v, v)', ['einsum'], ['einsum'], 'Log'),
    ('torch.tensordot(x, x, 1)', ['tensordot'], ['tensordot'], 'Log'),
    ('torch.broadcast_tensors(v, v)', ['broadcast_tensors'], ['broadcast_tensors'], 'tuple[Log]'),
    ('torch.meshgrid(v, v, indexing="ij")', ['meshgrid'], ['meshgrid'], 'tuple[Log]'),
    ('torch.atleast_2d(v)', ['atleast_2d'], ['atleast_2d'], 'Log'),
    ('torch.block_diag(x, x)', ['block_diag'], ['block_diag'], 'Log'),
    ('torch.cartesian_prod(v, v)', ['cartesian_prod'], ['cartesian_prod'], 'Log'),
    ('torch.cdist(x, x)', ['cdist'], ['cdist'], 'Log'),
    ('torch.chain_matmul(x, x, x)', ['chain_matmul'], ['chain_matmul'], 'Log'),
    ('torch.cov(x)', ['cov'], ['cov'], 'Log'),
    ('torch.corrcoef(x)', ['corrcoef'], ['corrcoef'], 'Log'),
    ('torch.isin(v, v)', ['isin'], ['isin'], 'Log'),
    ('torch.nonzero(v)', ['nonzero'], ['nonzero'], 'Log'),
    ('torch.logaddexp(v, v)', ['logaddexp'], ['logaddexp'], 'Log'),
    ('torch.heaviside(v, v)', ['heaviside'], ['heaviside'], 'Log'),
    ('torch.copysign(v, v)', ['copysign'], ['copysign'], 'Log'),
    ('torch.dist(v, v)', ['dist'], ['dist'], 'Log'),
    ('torch.inner(v, v)', ['inner'], ['inner'], 'Log'),
    ('torch.stft(torch.ones(16), 8, return_complex=True)', ['ones', 'stft'], [], 'Tensor'),
    ('torch.hann_window(4)', ['hann_window'], [], 'Tensor'),
    ('torch.numel(v)', ['numel'], ['numel'], 'int'),
    ('torch.is_complex(v)', ['is_complex'], ['is_complex'], 'bool'),
    ('F.relu(v)', ['relu'], ['relu'], 'Log'),
    ('F.linear(x, w, b)', ['linear'], ['linear'], 'Log'),
    ('F.linear(x, w)', ['linear'], ['linear'], 'Log'),
    ('F.softmax(v, 0)', ['softmax'], ['softmax'], 'Log'),
    ('F.log_softmax(v, 0)', ['log_softmax'], ['log_softmax'], 'Log'),
    ('F.gelu(v)', ['gelu'], ['gelu'], 'Log'),
    ('F.silu(v)', ['silu'], ['silu'], 'Log'),
    ('F.dropout(v, 0.5, False)', ['dropout'], ['dropout'], 'Log'),
    ('F.layer_norm(x, (2,))', ['layer_norm'], ['layer_norm'], 'Log'),
    ('F.mse_loss(v, v)', ['mse_loss'], ['mse_loss'], 'Log'),
    ('F.cross_entropy(x, i)', ['cross_entropy'], ['cross_entropy'], 'Log'),
    ('F.nll_loss(x, i)', ['nll_loss'], ['nll_loss'], 'Log'),
    ('F.conv2d(img, torch.ones(1, 1, 3, 3))', ['ones', 'conv2d'], ['conv2d'], 'Log'),
    ('F.max_pool2d(img, 2)', ['max_pool2d'], ['max_pool2d'], 'Log'),
    ('F.avg_pool2d(img, 2)', ['avg_pool2d'], ['avg_pool2d'], 'Log'),
    ('F.pad(v, (1, 1))', ['pad'], ['pad'], 'Log'),
    ('F.interpolate(img, scale_factor=2)', ['interpolate'], ['interpolate'], 'Log'),
    ('F.embedding(i, x)', ['embedding'], ['embedding'], 'Log'),
    ('F.normalize(x)', ['normalize'], ['normalize'], 'Log'),
    ('F.one_hot(i)', ['one_hot'], ['one_hot'], 'Log'),
    ('F.sigmoid(v)', ['sigmoid'], ['sigmoid'], 'Log'),
    ('F.tanh(v)', ['tanh'], ['tanh'], 'Log'),
    ('F.batch_norm(x, None, None, training=True)', ['batch_norm'], ['batch_norm'], 'Log'),
    ('F.scaled_dot_product_attention(img, img, img)', ['scaled_dot_product_attention'],
     ['scaled_dot_product_attention'], 'Log'),
    ('F.hardtanh(v)', ['hardtanh'], ['hardtanh'], 'Log'),
    ('F.leaky_relu(v)', ['leaky_relu'], ['leaky_relu'], 'Log'),
    ('F.elu(v)', ['elu'], ['elu'], 'Log'),
    ('F.softplus(v)', ['softplus'], ['softplus'], 'Log'),
    ('F.cosine_similarity(x, x)', ['cosine_similarity'], ['cosine_similarity'], 'Log'),
    ('F.pixel_shuffle(torch.ones(1, 4, 2, 2), 2)', ['ones', 'pixel_shuffle'], [], 'Tensor'),
    ('v.new_zeros(2)', ['new_zeros'], ['new_zeros'], 'Log'),
    ('v.new_tensor([1.0])', ['new_tensor'], ['new_tensor'], 'Log'),
    ('v.nanmean()', ['nanmean'], ['nanmean'], 'Log'),
    ('v.clamp_min_(0)', ['clamp_min_'], ['clamp_min_'], 'Log'),
    ('v.cumsum_(0)', ['cumsum_'], ['cumsum_'], 'Log'),
    # Tensor's getters, setters and methods that are no operators (C or Python), iteration,
    # and the pools that return indices (torch's boolean_dispatch)
    ('list(v)', ['dim', 'unbind', '__len__'], ['dim', 'unbind', '__len__'], 'list[Log]'),
    ('v.T', ['__get__'], ['__get__'], 'Log'),
    ('x.mT', ['__get__'], ['__get__'], 'Log'),
    ('x.H', ['__get__'], ['__get__'], 'Log'),
    ('x.mH', ['__get__'], ['__get__'], 'Log'),
    ('v.real', ['__get__'], ['__get__'], 'Log'),
    ('v.imag', ['EXC RuntimeError: imag is not implemented for tensors with non-complex dtypes.'], ['__get__', 'EXC RuntimeError: imag is not implemented for tensors with non-complex dtypes.'], None),
    ('v.is_cpu', ['__get__'], ['__get__'], 'bool'),
    ('v.layout', ['__get__'], ['__get__'], 'layout'),
    ('v.is_sparse', ['__get__'], ['__get__'], 'bool'),
    ('v.requires_grad', ['__get__'], ['__get__'], 'bool'),
    ('v.dim()', ['dim'], ['dim'], 'int'),
    ('v.ndimension()', ['dim'], ['dim'], 'int'),
    ('v.ndim', ['__get__'], ['__get__'], 'int'),
    ('v.shape', ['__get__'], ['__get__'], 'Size[int]'),
    ('v.size()', ['size'], ['size'], 'Size[int]'),
    ('v.size(0)', ['size'], ['size'], 'int'),
    ('v.size(dim=0)', ['size'], ['size'], 'int'),
    ('v.stride()', ['stride'], ['stride'], 'tuple[int]'),
    ('v.stride(0)', ['stride'], ['stride'], 'int'),
    ('v.numel()', ['numel'], ['numel'], 'int'),
    ('v.nelement()', ['numel'], ['numel'], 'int'),
    ('v.dtype', ['__get__'], ['__get__'], 'dtype'),
    ('v.device', ['__get__'], ['__get__'], 'device'),
    ('v.is_cuda', ['__get__'], ['__get__'], 'bool'),
    ('v.grad', ['__get__'], ['__get__'], 'NoneType'),
    ('v.is_leaf', ['__get__'], ['__get__'], 'bool'),
    ('v.grad_fn', ['__get__'], ['__get__'], 'NoneType'),
    ('v.output_nr', ['__get__'], ['__get__'], 'int'),
    ('v.data', ['__get__'], ['__get__'], 'Log'),
    ('v._base', ['__get__'], ['__get__'], 'Tensor'),
    ('v._version', ['__get__'], ['__get__'], 'int'),
    ('v.itemsize', ['__get__'], ['__get__'], 'int'),
    ('v.nbytes', ['__get__'], ['__get__'], 'int'),
    ('v.retains_grad', ['__get__'], ['__get__'], 'bool'),
    ('v.data_ptr() > 0', ['data_ptr'], ['data_ptr'], 'bool'),
    ('v.element_size()', ['element_size'], ['element_size'], 'int'),
    ('v.is_contiguous()', ['is_contiguous'], ['is_contiguous'], 'bool'),
    ('v.is_floating_point()', ['is_floating_point'], ['is_floating_point'], 'bool'),
    ('v.is_conj()', ['is_conj'], ['is_conj'], 'bool'),
    ('v.is_inference()', ['is_inference'], ['is_inference'], 'bool'),
    ('v.storage_offset()', ['storage_offset'], ['storage_offset'], 'int'),
    ('s.item()', ['item'], ['item'], 'float'),
    ('v.tolist()', ['tolist'], ['tolist'], 'list[float]'),
    ('bool(s)', ['__bool__'], ['__bool__'], 'bool'),
    ('int(s)', ['__int__'], ['__int__'], 'int'),
    ('float(s)', ['__float__'], ['__float__'], 'float'),
    ('i[0].__index__()', ['__getitem__', '__index__'], ['__getitem__', '__index__'], 'int'),
    ('v.requires_grad_()', ['requires_grad_'], ['requires_grad_'], 'Log'),
    ('v.detach_()', ['detach_'], ['detach_', "EXC RuntimeError: Can't detach views in-place. Use detach() instead. If you ar"], None),
    ("setattr(v, 'requires_grad', True)", ['__set__'], ['__set__'], 'NoneType'),
    ("setattr(v, 'grad', torch.ones(3))", ['ones', '__set__'], ['__set__'], 'NoneType'),
    ("delattr(v, 'grad')", ['__delete__'], ['__delete__'], 'NoneType'),
    ("setattr(v, 'data', torch.ones(3))", ['ones', '__set__'], ['__set__'], 'NoneType'),
    ('dir(v)', ['__dir__'], ['__dir__'], 'list[str]'),
    ('v.fill_diagonal_(0) if v.dim() > 1 else x.fill_diagonal_(0)', ['dim', 'fill_diagonal_'], ['dim', 'fill_diagonal_'], 'Log'),
    ('F.max_pool1d(img[0], 2, return_indices=True)', ['__getitem__', 'max_pool1d_with_indices'], ['__getitem__', 'max_pool1d_with_indices'], 'tuple[Log]'),
    ('F.max_pool2d(img, 2, return_indices=True)', ['max_pool2d_with_indices'], ['max_pool2d_with_indices'], 'tuple[Log]'),
    ('F.max_pool2d(img, 2, 2, 0, 1, False, True)', ['max_pool2d_with_indices'], ['max_pool2d_with_indices'], 'tuple[Log]'),
    ('F.max_pool3d(img, 1, return_indices=True)', ['max_pool3d_with_indices'], ['max_pool3d_with_indices'], 'tuple[Log]'),
    ('F.adaptive_max_pool1d(img[0], 2, return_indices=True)', ['__getitem__', 'adaptive_max_pool1d_with_indices'], ['__getitem__', 'adaptive_max_pool1d_with_indices'], 'tuple[Log]'),
    ('F.adaptive_max_pool2d(img, 2, True)', ['adaptive_max_pool2d_with_indices'], ['adaptive_max_pool2d_with_indices'], 'tuple[Log]'),
    ('F.adaptive_max_pool3d(img, 2, return_indices=True)', ['adaptive_max_pool3d_with_indices'], ['adaptive_max_pool3d_with_indices'], 'tuple[Log]'),
    ('F.fractional_max_pool2d(img, 2, output_size=2, return_indices=True)', ['fractional_max_pool2d_with_indices'], ['fractional_max_pool2d_with_indices'], 'tuple[Log]'),
    ('F.fractional_max_pool2d(img, 2, output_size=2)', ['fractional_max_pool2d'], ['fractional_max_pool2d'], 'Log'),
    ('F.adaptive_max_pool2d(img, 2)', ['adaptive_max_pool2d'], ['adaptive_max_pool2d'], 'Log'),
    ('F.max_pool1d(img[0], 2)', ['__getitem__', 'max_pool1d'], ['__getitem__', 'max_pool1d'], 'Log'),
]


def _logged(lib, expr, mode_class):
    """(the funcs logged, the result's type name or None on an exception) of expr under a
    mode (mode_class) or with its tensors of a logging subclass (mode_class None)."""
    Log = logging_subclass(lib.Tensor)
    g = {"torch": lib, "F": lib.nn.functional, "copy": copy, "w": lib.ones(3, 2),
         "b": lib.zeros(3)}
    tensors = {"x": lib.tensor([[1.0, 2.0], [3.0, 4.0]]), "i": lib.tensor([0, 1]),
               "v": lib.tensor([1.0, -2.0, 3.0]), "s": lib.tensor(2.5),
               "img": lib.ones(1, 1, 4, 4)}
    for name, t in tensors.items():
        g[name] = t if mode_class is not None else t.as_subclass(Log)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if mode_class is not None:
                with mode_class() as mode:
                    r = eval(expr, g)
                return mode.calls, type(r).__name__
            r = eval(expr, g)
    except Exception as exc:   # noqa: BLE001 -- the exception is part of the answer
        return Log.calls + [f"EXC {type(exc).__name__}: {str(exc)[:60]}"], None
    name = type(r).__name__
    if isinstance(r, (tuple, list)) and r:
        name += f"[{type(r[0]).__name__}]"
    return Log.calls, name


@pytest.mark.parametrize("row", PYTHON_LEVEL, ids=[r[0] for r in PYTHON_LEVEL])
def test_python_level_functions_are_routed(row):
    expr, mode_calls, sub_calls, sub_type = row
    assert _logged(ptl, expr, Log)[0] == mode_calls
    assert _logged(ptl, expr, None) == (sub_calls, sub_type)


@torch_ref
@pytest.mark.parametrize("row", PYTHON_LEVEL, ids=[r[0] for r in PYTHON_LEVEL])
def test_python_level_rows_are_torchs(row):
    expr, mode_calls, sub_calls, sub_type = row
    assert _logged(torch, expr, logging_mode(torch.overrides.TorchFunctionMode))[0] == mode_calls
    assert _logged(torch, expr, None) == (sub_calls, sub_type)


def test_routed_functions_look_like_functions():
    F = ptl.nn.functional
    assert F.relu.__name__ == "relu" and F.relu.__module__ == "pytorchlite.nn.functional"
    assert ptl.Tensor.unique.__name__ == "unique"
    assert ptl.Tensor.unique.__qualname__ == "Tensor.unique"
    assert inspect.signature(F.linear) == inspect.signature(F.linear.__wrapped__)
    assert list(inspect.signature(ptl.ones(1).to).parameters) == ["args", "kwargs"]
    assert pickle.loads(pickle.dumps(F.relu)) is F.relu
    assert pickle.loads(pickle.dumps(ptl.Tensor.to)) is ptl.Tensor.to
    assert ptl.norm is ptl.functional.norm and F.__dict__["relu"] is F.relu
    assert F.relu.__doc__ == F.relu.__wrapped__.__doc__ and repr(F.relu).startswith(
        "<function relu")
    assert ptl.overrides.is_tensor_method_or_property(ptl.Tensor.to)


def test_a_tensor_like_reaches_a_python_level_function():
    class Like:
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return func.__name__, len(args), sorted(kwargs or {})
    like = Like()
    F = ptl.nn.functional
    assert F.linear(like, ptl.ones(2, 2)) == ("linear", 2, [])
    # a Python function of PyTorch's passes every argument on, defaults filled in
    assert F.softmax(ptl.ones(2), dim=like) == ("softmax", 1, ["_stacklevel", "dim", "dtype"])
    assert ptl.einsum("i,i->", [like, ptl.ones(2)]) == ("einsum", 2, [])
    assert ptl.Tensor.to(like, ptl.float64) == ("to", 2, [])


def test_iteration_is_unbind_and_len_is_routed():
    x = ptl.arange(6.0).view(3, 2).clone()
    rows = list(x)   # views of x, as unbind's
    assert len(rows) == 3 and all(r._base is x for r in rows)
    assert [r.tolist() for r in rows] == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        iter(ptl.tensor(1.0))
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(ptl.tensor(1.0))
    with Log() as mode:
        n, rows = len(x), list(x)
    assert n == 3 and mode.calls == ["__len__", "dim", "unbind", "__len__"]   # torch's
    x.requires_grad_(True)
    sum(r.sum() for r in x).backward()
    assert x.grad.tolist() == [[1.0, 1.0]] * 3


def test_getters_reach_a_mode_with_torchs_func_objects():
    seen = []

    class Spy(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append((func, args, kwargs))
            return func(*args, **(kwargs or {}))
    x, g = ptl.ones(2, 3), ptl.zeros(2, 3)
    p = ptl.nn.Parameter(ptl.ones(2))
    with Spy():
        assert x.shape == (2, 3) and x.dim() == 2 and x.size(0) == 2 and x.size(dim=1) == 3
        assert x.T.shape == (3, 2) and p.requires_grad
        x.requires_grad = True
        x.grad = g
        del x.grad
    assert seen[0][0] == ptl.Tensor.shape.__get__ and seen[0][1][0] is x
    assert seen[1][0] is ptl.Tensor.dim and seen[2][0] is ptl.Tensor.size
    assert seen[2][1] == (x, 0) and seen[3][1] == (x,) and seen[3][2] == {"dim": 1}
    assert seen[4][0] == ptl.Tensor.T.__get__ and seen[4][0] != ptl.Tensor.mT.__get__
    assert seen[6][0] == ptl.Tensor.requires_grad.__get__ and seen[6][1][0] is p
    assert seen[7][0] == ptl.Tensor.requires_grad.__set__ and seen[7][1] == (x, True)
    assert seen[8][0] == ptl.Tensor.grad.__set__ and seen[8][1][1] is g
    assert seen[9][0] == ptl.Tensor.grad.__delete__ and len(seen) == 10
    assert x.requires_grad and x.grad is None
    seen.clear()
    assert x.shape == (2, 3) and x.T.shape == (3, 2) and seen == []   # no mode: not seen


def test_python_properties_behave_as_properties():
    x = ptl.ones(2, 3)
    T = ptl.Tensor.__dict__["T"]
    assert ptl.Tensor.T is T and T.__name__ == "T" and T.fget(x).shape == (3, 2)
    assert T.__doc__ is None and ptl.Tensor.mH.__doc__.startswith("The conjugate transpose")
    with pytest.raises(AttributeError, match="property 'T' of 'Tensor' object has no setter"):
        x.T = x
    with pytest.raises(AttributeError, match="property 'is_cpu' of 'Tensor' object has no "
                                             "deleter"):
        del x.is_cpu
    assert x.is_cpu and not x.is_sparse and x.mT.shape == (3, 2)
