"""F.dropout2d / nn.Dropout2d on inputs that are not 4-D: PyTorch's warnings, and its
(N, C, ...) reading of them (2-D: each element on its own; 3-D: whole rows of L); F.dropout3d
on inputs that are not 5-D (a batch dim of 1 in front); complex inputs refused as PyTorch's.
native_dropout and its backward: the mask is bernoulli_(1 - p)'s draw for the seed (the
draw F.dropout makes too, and the CUDA kernel reproduces: tests/cuda), the values and
gradients are input * mask * 1/(1-p) exactly (NumPy float64), PyTorch's errors."""
import warnings

import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn.functional as F

from helpers import torch

DEPRECATED_2D = (
    "dropout2d: Received a 2-D input to dropout2d, which is deprecated and will result in an "
    "error in a future release. To retain the behavior and silence this warning, please use "
    "dropout instead. Note that dropout2d exists to provide channel-wise dropout on inputs "
    "with 2 spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 3D "
    "or 4D inputs).")
THREE_D = (
    "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
    "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel "
    "dim. This behavior will change in a future release to interpret the input as one without "
    "a batch dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout "
    "behavior, please switch to using dropout1d instead.")


def messages(fn):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        out = fn()
    return out, [str(w.message) for w in record if w.category is UserWarning]


def test_two_dim_input_warns_and_drops_elements():
    ptl.manual_seed(0)
    out, msgs = messages(lambda: ptl.nn.Dropout2d(0.5)(ptl.ones(40, 50)))
    assert msgs == [DEPRECATED_2D]
    a = out.numpy()
    assert set(np.unique(a).tolist()) <= {0.0, 2.0}
    assert 0.3 < (a == 0).mean() < 0.7
    assert len({tuple(row) for row in a}) > 1   # not one mask per row or column


def test_three_dim_input_is_n_c_l():
    ptl.manual_seed(0)
    out, msgs = messages(lambda: F.dropout2d(ptl.ones(8, 16, 5), 0.5))
    assert msgs == [THREE_D]
    a = out.numpy()
    assert np.all(a.min(-1) == a.max(-1))   # whole rows of L kept or zeroed
    assert len(np.unique(a[:, :, 0].min(1))) <= 2 and 0 < (a == 0).mean() < 1


def test_four_dim_input_does_not_warn():
    _, msgs = messages(lambda: F.dropout2d(ptl.ones(2, 3, 4, 4), 0.5))
    assert msgs == []


def test_eval_mode_and_one_dim():
    x = ptl.ones(3, 4)
    _, msgs = messages(lambda: F.dropout2d(x, 0.5, training=False))
    assert msgs == [DEPRECATED_2D]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert F.dropout2d(x, 0.5, training=False) is x
        with pytest.raises(RuntimeError, match="^Feature dropout requires at least 2 dimensions "
                                               "in the input$"):
            F.dropout2d(ptl.ones(3), 0.5)


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 4), (2, 3, 4, 4), (1, 2, 3, 4, 4)])
def test_warnings_as_torch(shape):
    _, mine = messages(lambda: F.dropout2d(ptl.ones(*shape), 0.5))
    _, ref = messages(lambda: torch.nn.functional.dropout2d(torch.ones(*shape), 0.5))
    assert mine == ref


def deprecated_3d(dim):
    return (f"dropout3d: Received a {dim}-D input to dropout3d, which is deprecated and will "
            "result in an error in a future release. To retain the behavior and silence this "
            "warning, please use dropout instead. Note that dropout3d exists to provide "
            "channel-wise dropout on inputs with 3 spatial dimensions, a channel dimension, and "
            "an optional batch dimension (i.e. 4D or 5D inputs).")


@pytest.mark.parametrize("shape", [(40, 50), (30, 4, 5), (200,), (2, 30, 1, 2, 1, 3)], ids=str)
def test_dropout3d_unbatched_inputs_warn_and_drop_along_dim_0(shape):
    """As PyTorch's, an input that is not 4-D or 5-D warns and gets a batch dim of 1, so its
    dim 0 holds the channels: rows of a 2-D input, blocks of a 3-D one, single elements of a
    1-D one."""
    ptl.manual_seed(0)
    out, msgs = messages(lambda: F.dropout3d(ptl.ones(*shape), 0.5))
    assert msgs == [deprecated_3d(len(shape))] and tuple(out.shape) == shape
    a = out.numpy().reshape(shape[0], -1)
    assert set(np.unique(a).tolist()) <= {0.0, 2.0}
    assert np.all(a.min(1) == a.max(1))   # each channel kept or dropped whole
    assert 0.2 < (a[:, 0] == 0).mean() < 0.8


def test_dropout3d_four_and_five_dims_inplace_and_eval():
    _, msgs = messages(lambda: F.dropout3d(ptl.ones(2, 3, 2, 2, 2), 0.5))
    assert msgs == []
    ptl.manual_seed(1)
    out, msgs = messages(lambda: F.dropout3d(ptl.ones(6, 2, 2, 2), 0.5))
    assert msgs == [] and np.all(out.numpy().reshape(6, -1).min(1) ==
                                 out.numpy().reshape(6, -1).max(1))
    x = ptl.ones(30, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ptl.manual_seed(2)
        assert F.dropout3d(x, 0.5, inplace=True) is x and x.shape == (30, 4)
        assert 0 < (x.numpy() == 0).mean() < 1 and np.all(x.numpy().min(1) == x.numpy().max(1))
        y = F.dropout3d(x, 0.5, training=False)
        assert y.shape == x.shape and np.array_equal(y.numpy(), x.numpy())
        with pytest.raises(RuntimeError, match="^Feature dropout requires at least 2 dimensions "
                                               "in the input$"):
            F.dropout3d(ptl.ones(()), 0.5)


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
@pytest.mark.parametrize("shape", [(), (3,), (3, 4), (2, 3, 4), (2, 3, 4, 4), (1, 2, 3, 4, 4)],
                         ids=str)
def test_dropout3d_warnings_and_errors_as_torch(shape):
    def run(lib):
        try:
            out, msgs = messages(lambda: lib.nn.functional.dropout3d(lib.ones(shape), 0.5))
        except RuntimeError as e:
            return str(e)
        return tuple(out.shape), msgs
    assert run(ptl) == run(torch)


@pytest.mark.parametrize("fn", [F.dropout, F.dropout1d, F.dropout2d, F.dropout3d,
                                F.alpha_dropout, F.feature_alpha_dropout], ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", [ptl.complex64, ptl.complex128], ids=str)
def test_complex_dropout_refuses_the_draw_as_torch(fn, dtype):
    """PyTorch draws a complex input's mask in its dtype, which bernoulli_ refuses; p = 0
    returns the input and p = 1 zeroes it without a draw."""
    x = ptl.full((2, 3, 4), 1 + 2j, dtype=dtype)
    name = "ComplexFloat" if dtype == ptl.complex64 else "ComplexDouble"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(NotImplementedError, match=f"^\"bernoulli_scalar_cpu_\" not "
                                                      f"implemented for '{name}'$"):
            fn(x, 0.5, True)
        assert fn(x, 0.0, True) is x or np.array_equal(fn(x, 0.0, True).numpy(), x.numpy())
        zero = fn(x, 1.0, True)
        assert zero.dtype == dtype and not zero.numpy().any()


def _mask_of_seed(shape, p, seed, dtype=ptl.float32):
    ptl.manual_seed(seed)
    return ptl.empty(shape, dtype=dtype).bernoulli_(1 - p).numpy().astype(bool)


@pytest.mark.parametrize("p", [0.0, 0.3, 0.5, 0.9, 1.0])
@pytest.mark.parametrize("train", [True, None])
@pytest.mark.parametrize("dtype", [ptl.float64, ptl.float32], ids=str)
def test_native_dropout_mask_is_bernoullis_draw(p, train, dtype):
    rng = np.random.default_rng(0)
    for shape in [(1,), (7,), (33, 5), (4, 1029)]:
        xv = rng.standard_normal(shape)
        x = ptl.tensor(xv, dtype=dtype).requires_grad_(True)
        ptl.manual_seed(9)
        out, mask = ptl.native_dropout(x, p, train)
        want_mask = _mask_of_seed(shape, p, 9)
        assert mask.dtype == ptl.bool
        np.testing.assert_array_equal(mask.numpy(), want_mask)
        scale = 0.0 if p == 1 else 1 / (1 - p)
        xd = x.detach().to(ptl.float64).numpy()
        np.testing.assert_allclose(out.detach().to(ptl.float64).numpy(),
                                   xd * want_mask * scale, rtol=1e-6 if dtype == ptl.float32
                                   else 1e-15, atol=0)
        out.backward(ptl.ones(shape, dtype=dtype))
        np.testing.assert_allclose(x.grad.to(ptl.float64).numpy(), want_mask * scale,
                                   rtol=1e-6, atol=0)
        ptl.manual_seed(9)   # F.dropout draws the same mask
        np.testing.assert_array_equal(F.dropout(ptl.ones(shape), p).numpy() != 0,
                                      want_mask if p < 1 else np.zeros(shape, bool))


def test_native_dropout_strided_input_and_threads():
    """A transposed input: the mask has the input's strides and row-major draws, the same on
    one and two threads (the fill's grain is crossed)."""
    old = ptl.get_num_threads()
    try:
        got = []
        for threads in (1, 2):
            ptl.set_num_threads(threads)
            x = ptl.ones(300, 700).t()
            ptl.manual_seed(4)
            out, mask = ptl.native_dropout(x, 0.25, True)
            assert mask.stride() == x.stride()
            got.append(mask.contiguous().numpy())
        np.testing.assert_array_equal(got[0], got[1])
        np.testing.assert_array_equal(got[0], _mask_of_seed((700, 300), 0.25, 4))
    finally:
        ptl.set_num_threads(old)


def test_native_dropout_eval_empty_and_backward_op():
    x = ptl.arange(6.0).requires_grad_(True)
    out, mask = ptl.native_dropout(x, 0.5, False)
    np.testing.assert_array_equal(out.detach().numpy(), np.arange(6.0))
    assert mask.dtype == ptl.bool and bool(mask.all())
    assert type(out.grad_fn).__name__ == "NativeDropoutBackward0"
    e = ptl.ones(0, 3)
    out, mask = ptl.native_dropout(e, 0.5, True)
    assert out is e and mask.shape == (0, 3) and mask.dtype == ptl.float32
    bw = ptl.ops.aten.native_dropout_backward
    g = ptl.tensor([1.0, 2.0, 3.0], requires_grad=True)
    r = bw(g, ptl.tensor([True, False, True]), 2.0)
    np.testing.assert_array_equal(r.detach().numpy(), [2.0, 0.0, 6.0])
    assert type(r.grad_fn).__name__ == "NativeDropoutBackwardBackward0"
    np.testing.assert_array_equal(bw(ptl.ones(2), ptl.tensor([0.5, 1.0]), 3.0).numpy(),
                                  [1.5, 3.0])


def test_native_dropout_train_none_differentiates_the_scaled_forward():
    """train=None drops and scales; its gradient is the scaled mask (PyTorch 2.13's formula
    takes scale 1 there: docs/decisions.md)."""
    x = ptl.ones(64, requires_grad=True)
    out, mask = ptl.native_dropout(x, 0.5, None)
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), mask.numpy() * 2.0)


@pytest.mark.parametrize("args,msg", [
    ((ptl.ones(3, dtype=ptl.int64), 0.5, True),
     "result type Float can't be cast to the desired output type Long"),
    ((ptl.ones(3), 1.5, True), "bernoulli_ expects p to be in [0, 1], but got p=-0.5"),
    ((ptl.ones(3), -0.1, True), "bernoulli_ expects p to be in [0, 1], but got p=1.1"),
])
def test_native_dropout_errors_are_pytorchs(args, msg):
    with pytest.raises(RuntimeError) as info:
        ptl.native_dropout(*args)
    assert msg in str(info.value)
    if torch is not None:
        targs = [torch.tensor(a.numpy()) if isinstance(a, ptl.Tensor) else a for a in args]
        with pytest.raises(RuntimeError, match=msg.replace("[", "\\[").replace("]", "\\]")):
            torch.native_dropout(*targs)
