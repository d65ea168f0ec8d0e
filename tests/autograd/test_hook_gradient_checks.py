"""Gradients that hooks and custom Functions hand to the engine are checked, as PyTorch's
check_variable_result (hooks) and validate_outputs (every node's outputs) do: a wrong size,
dtype or device raises PyTorch's RuntimeError instead of reaching a kernel or being
broadcast; a gradient the input expands to is summed down, another dtype is cast."""
import re

import numpy as np
import pytest

import pytorchlite as ptl
from helpers import assert_close, torch, torch_ref

# (name, forward from x): ops whose backward kernels read the incoming gradient's shape
FORWARDS = [
    ("max_pool2d", (1, 1, 4, 4), lambda L, x: L.nn.functional.max_pool2d(x, 2)),
    ("softmax", (3, 4), lambda L, x: L.softmax(x, 1)),
    ("interpolate", (1, 1, 3, 3),
     lambda L, x: L.nn.functional.interpolate(x, scale_factor=2, mode="bilinear")),
    ("pad", (2, 3), lambda L, x: L.nn.functional.pad(x, (1, 2), mode="constant")),
    ("unfold", (2, 6), lambda L, x: x.unfold(1, 2, 1)),
    ("conv2d", (1, 1, 4, 4), lambda L, x: L.nn.functional.conv2d(x, L.ones(1, 1, 2, 2))),
    ("sum", (3, 4), lambda L, x: x.sum(1)),
]


def wrong(g):
    return ptl.ones(9, 9, 9, 9)


@pytest.mark.parametrize("name,shape,fwd", FORWARDS, ids=[f[0] for f in FORWARDS])
def test_tensor_hook_changing_the_size_raises(name, shape, fwd):
    x = ptl.ones(*shape, requires_grad=True)
    y = fwd(ptl, x)
    y.register_hook(wrong)
    with pytest.raises(RuntimeError, match=r"^hook 'wrong' has changed the size of value$"):
        y.sum().backward()
    assert x.grad is None


@pytest.mark.parametrize("name,shape,fwd", FORWARDS, ids=[f[0] for f in FORWARDS])
def test_node_prehook_changing_the_size_raises(name, shape, fwd):
    x = ptl.ones(*shape, requires_grad=True)
    y = fwd(ptl, x)

    def hook(grads):
        return (ptl.ones(9, 9, 9, 9),) + tuple(grads[1:])
    y.grad_fn.register_prehook(hook)
    with pytest.raises(RuntimeError, match=r"^hook 'hook' has changed the size of value$"):
        y.sum().backward()


def test_broadcastable_hook_result_is_not_broadcast():
    # ones(1) would broadcast to x.sum(1)'s shape (3,); PyTorch raises
    x = ptl.ones(3, 4, requires_grad=True)
    y = x.sum(1)
    y.register_hook(lambda g: ptl.ones(1))
    with pytest.raises(RuntimeError, match=r"^hook '<lambda>' has changed the size of value$"):
        y.sum().backward()


@pytest.mark.parametrize("dtype,name", [(ptl.float64, "DoubleTensor"),
                                        (ptl.int64, "LongTensor")])
def test_hook_changing_the_dtype_raises(dtype, name):
    x = ptl.ones(3, 4, requires_grad=True)
    y = x.sum(1)
    y.register_hook(lambda g: ptl.ones(3, dtype=dtype))
    msg = (r"^hook '<lambda>' has changed the type of value \(was torch.FloatTensor got "
           rf"torch.{name}\)$")
    with pytest.raises(RuntimeError, match=msg):
        y.sum().backward()


def test_hook_replacing_a_none_gradient_raises():
    x = ptl.ones(3, requires_grad=True)
    a = (x * 2).unbind(0)[0]
    a.grad_fn.register_prehook(lambda grads: (grads[0],) + (ptl.ones(()),) * (len(grads) - 1))
    with pytest.raises(RuntimeError, match=r"^can't replace a None gradient with a non-None "
                                           r"value$"):
        a.backward()


def test_hook_returning_a_non_tensor_raises():
    x = ptl.ones(3, requires_grad=True)
    y = x * 2
    y.grad_fn.register_prehook(lambda grads: ([1.0],) * len(grads))
    with pytest.raises(TypeError, match=r"^expected Variable or None \(got list\)$"):
        y.sum().backward()


def test_post_hook_returning_the_wrong_number_raises():
    x = ptl.ones(3, 4, requires_grad=True)
    y = x * 2
    y.grad_fn.register_hook(lambda gi, go: (ptl.ones(5),))
    msg = r"^hook '<lambda>' has returned an incorrect number of values \(got 1, but expected 2\)$"
    with pytest.raises(RuntimeError, match=msg):
        y.sum().backward()


def test_hook_returning_the_same_metadata_is_used():
    x = ptl.ones(3, 4, requires_grad=True)
    y = x.sum(1)
    y.register_hook(lambda g: g * 3)
    y.sum().backward()
    assert_close(x.grad, np.full((3, 4), 3.0))


def function_returning(make_grad):
    class Twice(ptl.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return make_grad(g)
    return Twice


@pytest.mark.parametrize("shape", [(5,), (4,), (1,), (3, 1), (4, 3)])
def test_custom_function_gradient_of_an_incompatible_shape_raises(shape):
    x = ptl.ones(3, 4, requires_grad=True)
    fn = function_returning(lambda g: ptl.ones(*shape))
    got = "[" + ", ".join(map(str, shape)) + "]"
    msg = (r"^Function TwiceBackward returned an invalid gradient at index 0 - got "
           rf"{re.escape(got)} but expected shape compatible with \[3, 4\]$")
    with pytest.raises(RuntimeError, match=msg):
        fn.apply(x).sum().backward()
    assert x.grad is None


def test_custom_function_gradient_the_input_expands_to_is_summed():
    x = ptl.ones(3, 1, requires_grad=True)
    fn = function_returning(lambda g: ptl.ones(2, 3, 4, dtype=ptl.float64))
    fn.apply(x).sum().backward()
    assert x.grad.dtype == ptl.float32
    assert_close(x.grad, np.full((3, 1), 8.0))


def test_custom_function_gradient_of_another_dtype_is_cast():
    x = ptl.ones(3, 4, requires_grad=True)
    fn = function_returning(lambda g: g.double() * 5)
    fn.apply(x).sum().backward()
    assert x.grad.dtype == ptl.float32
    assert_close(x.grad, np.full((3, 4), 5.0))


def test_custom_function_gradient_check_in_float64():
    fn = function_returning(lambda g: (g * 2).unsqueeze(0).expand(2, *g.shape) / 2)
    x = ptl.tensor(np.random.default_rng(0).standard_normal((3, 4)), requires_grad=True)
    assert ptl.autograd.gradcheck(lambda t: fn.apply(t), (x,))


@torch_ref
@pytest.mark.parametrize("name,shape,fwd", FORWARDS, ids=[f[0] for f in FORWARDS])
def test_hook_errors_match_torch(name, shape, fwd):
    msgs = []
    for L in (ptl, torch):
        x = L.ones(*shape, requires_grad=True)
        y = fwd(L, x)
        y.register_hook(lambda g: L.ones(9, 9, 9, 9))
        with pytest.raises(RuntimeError) as info:
            y.sum().backward()
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]


@torch_ref
@pytest.mark.parametrize("shape", [(5,), (4,), (2, 3, 4)])
def test_custom_function_results_match_torch(shape):
    results = []
    for L in (ptl, torch):
        class Twice(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return L.ones(*shape, dtype=L.float64)
        x = L.ones(3, 4, requires_grad=True)
        try:
            Twice.apply(x).sum().backward()
            results.append((x.grad.dtype == L.float32, x.grad.sum().item()))
        except RuntimeError as e:
            results.append(str(e))
    assert results[0] == results[1]
