"""Backward kernels reachable as torch.ops.aten.* validate what they read: a grad_output,
indices or sizes that disagree with the forward raise PyTorch's error (its message where
PyTorch has one) instead of reading or writing outside a buffer."""
import re

import numpy as np
import pytest

import pytorchlite as ptl
from helpers import assert_close, torch, torch_ref

A = ptl.ops.aten
LONG = ptl.int64


def ones(*shape):
    return ptl.ones(*shape)


def dim_size_msg(ndim, i, want, got_dim, got):
    return re.escape(f"Expected a tensor of dimension {ndim} and tensor.size[{i}] == {want} "
                     f"but got: dimension {got_dim} and tensor.size[{i}] = {got}")


POOL2D = ([2, 2], [2, 2], [0, 0], [1, 1], False)


@pytest.mark.parametrize("grad,idx,i,want,got", [
    ((9, 9, 9, 9), (1, 1, 2, 2), 1, 1, 9),
    ((1, 1, 1, 1), (1, 1, 1, 1), 2, 2, 1),
    ((1, 1, 2, 2), (1, 1, 1, 2), 2, 2, 1),
])
def test_max_pool2d_backward_shapes(grad, idx, i, want, got):
    with pytest.raises(RuntimeError, match=dim_size_msg(4, i, want, 4, got)):
        A.max_pool2d_with_indices_backward(ones(*grad), ones(1, 1, 4, 4), *POOL2D,
                                           ptl.zeros(*idx, dtype=LONG))


@pytest.mark.parametrize("value", [16, 10 ** 9, -1, -5])
def test_max_pool_backward_indices_out_of_range(value):
    idx = ptl.full((1, 1, 2, 2), value, dtype=LONG)
    with pytest.raises(IndexError, match=rf"^index {value} is out of bounds for an input plane "
                                         r"of 16 elements$"):
        A.max_pool2d_with_indices_backward(ones(1, 1, 2, 2), ones(1, 1, 4, 4), *POOL2D, idx)
    with pytest.raises(IndexError, match=rf"^index {value} is out of bounds"):
        A.adaptive_max_pool2d_backward(ones(1, 1, 2, 2), ones(1, 1, 4, 4), idx)
    idx3 = ptl.full((1, 1, 1, 2, 2), value * 2, dtype=LONG)
    with pytest.raises(IndexError, match=r"of 32 elements$"):
        A.max_pool3d_with_indices_backward(ones(1, 1, 1, 2, 2), ones(1, 1, 2, 4, 4),
                                           [2, 2, 2], [2, 2, 2], [0, 0, 0], [1, 1, 1], False,
                                           idx3)


def test_max_pool_backward_with_valid_indices_scatters():
    # the last index of each window, on a non-contiguous grad_output
    idx = ptl.tensor([[[[5, 7], [13, 15]]]])
    g = ptl.arange(4.0, dtype=ptl.float64).reshape(2, 2).t().reshape(1, 1, 2, 2)
    gi = A.max_pool2d_with_indices_backward(g, ptl.ones(1, 1, 4, 4, dtype=ptl.float64),
                                            *POOL2D, idx)
    want = np.zeros(16)
    want[[5, 7, 13, 15]] = [0.0, 2.0, 1.0, 3.0]
    assert_close(gi, want.reshape(1, 1, 4, 4))


def test_avg_pool_backward_shapes():
    with pytest.raises(RuntimeError, match=dim_size_msg(4, 1, 1, 4, 9)):
        A.avg_pool2d_backward(ones(9, 9, 9, 9), ones(1, 1, 4, 4), [2, 2], [2, 2], [0, 0],
                              False, True, None)
    with pytest.raises(RuntimeError, match=dim_size_msg(4, 2, 2, 4, 1)):
        A.avg_pool2d_backward(ones(1, 1, 1, 1), ones(1, 1, 4, 4), [2, 2], [2, 2], [0, 0],
                              False, True, None)
    with pytest.raises(RuntimeError, match=dim_size_msg(5, 1, 1, 5, 9)):
        A.avg_pool3d_backward(ones(9, 9, 9, 9, 9), ones(1, 1, 2, 4, 4), [2, 2, 2], [2, 2, 2],
                              [0, 0, 0], False, True, None)


def test_adaptive_pool_backward_shapes():
    with pytest.raises(RuntimeError, match=dim_size_msg(4, 1, 1, 4, 9)):
        A._adaptive_avg_pool2d_backward(ones(9, 9, 9, 9), ones(1, 1, 4, 4))
    with pytest.raises(RuntimeError, match=r"^adaptive_avg_pool2d_backward: Expected dimensions "
                                           r"4 for `grad_output` but got dimensions 3$"):
        A._adaptive_avg_pool2d_backward(ones(9, 9, 9), ones(1, 1, 4, 4))
    with pytest.raises(RuntimeError, match=re.escape(
            "expected sizes [1, 1, 2, 2] for `grad_output` but got sizes [9, 9, 9, 9]")):
        A.adaptive_max_pool2d_backward(ones(9, 9, 9, 9), ones(1, 1, 4, 4),
                                       ptl.zeros(1, 1, 2, 2, dtype=LONG))


@pytest.mark.parametrize("op,grad,self_,pad,msg", [
    ("reflection_pad1d_backward", (9, 9, 9), (1, 2, 4), [1, 1], "batch unexpected. Expected: 1"),
    ("reflection_pad1d_backward", (1, 2, 5), (1, 2, 4), [1, 1], "width unexpected. Expected: 6"),
    ("reflection_pad2d_backward", (1, 1, 6, 9), (1, 1, 4, 4), [1, 1, 1, 1],
     "width unexpected. Expected: 6, Got: 9"),
    ("reflection_pad3d_backward", (1, 1, 6, 6, 9), (1, 1, 4, 4, 4), [1] * 6,
     "width unexpected. Expected: 6, Got: 9"),
    ("replication_pad1d_backward", (2, 3), (1, 2, 4), [1, 1], None),
    ("replication_pad2d_backward", (1, 1, 2, 2), (1, 1, 4, 4), [1, 1, 1, 1],
     "height unexpected. Expected: 6, Got: 2"),
    ("replication_pad3d_backward", (1, 9, 6, 6, 6), (1, 1, 4, 4, 4), [1] * 6,
     "channel unexpected. Expected: 1, Got: 9"),
    ("_pad_circular_backward", (1, 1, 7, 6), (1, 1, 4, 4), [1, 1, 1, 1],
     "height unexpected. Expected: 6, Got: 7"),
])
def test_padding_backward_grad_shape(op, grad, self_, pad, msg):
    pattern = re.escape("gradOutput " + msg) if msg else r"^Expected grad_output of shape"
    with pytest.raises(RuntimeError, match=pattern):
        getattr(A, op)(ones(*grad), ones(*self_), pad)


# PyTorch reads the input's sizes (replication_pad3d's from dim 0, the others' from dim 1, up
# to the width) before it checks anything, so an input of too few dims is c10's IndexError at
# the first dim it lacks (a forward-style dims message would be a RuntimeError)
PAD_INPUT_DIMS = [
    ("reflection_pad1d_backward", (1,), [2, 1],
     "Dimension out of range (expected to be in range of [-1, 0], but got 1)"),
    ("reflection_pad1d_backward", (), [2, 1], "Dimension specified as 1 but tensor has no "
     "dimensions"),
    ("replication_pad1d_backward", (), [2, 0], "Dimension specified as 1 but tensor has no "
     "dimensions"),
    ("reflection_pad2d_backward", (3, 3), [1, 2, 1, 0],
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    ("reflection_pad2d_backward", (3,), [1, 2, 1, 0],
     "Dimension out of range (expected to be in range of [-1, 0], but got 1)"),
    ("replication_pad2d_backward", (4,), [1, 2, 1, 0],
     "Dimension out of range (expected to be in range of [-1, 0], but got 1)"),
    ("replication_pad3d_backward", (2, 5), [0, 1, 2, 2, 1, 1],
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    ("replication_pad3d_backward", (3, 2, 2), [0, 1, 2, 2, 1, 1],
     "Dimension out of range (expected to be in range of [-3, 2], but got 3)"),
    ("replication_pad3d_backward", (), [0, 1, 2, 2, 1, 1],
     "Dimension specified as 0 but tensor has no dimensions"),
]


def _pad_input_dims(lib, op, self_, pad):
    getattr(lib.ops.aten, op)(lib.ones(self_), lib.ones(self_), pad)


@pytest.mark.parametrize("op,self_,pad,msg", PAD_INPUT_DIMS)
def test_padding_backward_input_dims(op, self_, pad, msg):
    with pytest.raises(IndexError, match="^" + re.escape(msg) + "$"):
        _pad_input_dims(ptl, op, self_, pad)


@torch_ref
@pytest.mark.parametrize("op,self_,pad,msg", PAD_INPUT_DIMS)
def test_padding_backward_input_dims_match_torch(op, self_, pad, msg):
    with pytest.raises(IndexError, match="^" + re.escape(msg) + "$"):
        _pad_input_dims(torch, op, self_, pad)


UPSAMPLE_BACKWARDS = [
    ("upsample_nearest1d_backward", [8], [1, 1, 4], ()),
    ("upsample_nearest2d_backward", [8, 8], [1, 1, 4, 4], ()),
    ("upsample_nearest3d_backward", [8, 8, 8], [1, 1, 4, 4, 4], ()),
    ("upsample_linear1d_backward", [8], [1, 1, 4], (False,)),
    ("upsample_bilinear2d_backward", [8, 8], [1, 1, 4, 4], (False,)),
    ("upsample_trilinear3d_backward", [8, 8, 8], [1, 1, 4, 4, 4], (False,)),
    ("upsample_bicubic2d_backward", [8, 8], [1, 1, 4, 4], (False,)),
]


@pytest.mark.parametrize("op,osize,isize,extra", UPSAMPLE_BACKWARDS,
                         ids=[u[0] for u in UPSAMPLE_BACKWARDS])
def test_upsample_backward_grad_shape(op, osize, isize, extra):
    fn = getattr(A, op)
    scales = (None,) * len(osize)
    nd = len(isize)
    with pytest.raises(RuntimeError, match=re.escape(
            "Expected grad_output to have the same shape as output; output.size(0) = 1 but got "
            "grad_output.size(0) = 9")):
        fn(ones(*[9] * nd), osize, isize, *extra, *scales)
    with pytest.raises(RuntimeError, match=re.escape(
            f"output.size({nd - 1}) = 8 but got grad_output.size({nd - 1}) = 2")):
        fn(ones(*([1, 1] + [8] * (nd - 3) + [2])), osize, isize, *extra, *scales)
    with pytest.raises(RuntimeError, match=rf"^Expected grad_output to be a tensor of dimension "
                                           rf"{nd} but got: dimension 2$"):
        fn(ones(8, 8), osize, isize, *extra, *scales)
    # the right shape (non-contiguous) sums each output back to its input
    g = ptl.ones(*([1, 1] + osize[:-1] + [2 * osize[-1]]), dtype=ptl.float64)[..., ::2]
    total = fn(g, osize, isize, *extra, *scales).sum().item()
    assert abs(total - float(np.prod(osize))) < 1e-9


@pytest.mark.parametrize("fwd,extra", [
    ("upsample_nearest2d", ()), ("upsample_bilinear2d", (False,)),
    ("upsample_bicubic2d", (False,))])
@pytest.mark.parametrize("scale", [1000.0, -1000.0, 1e-9])
def test_upsample_scale_that_disagrees_with_the_size_stays_in_bounds(fwd, extra, scale):
    x = ptl.arange(16.0, dtype=ptl.float64).reshape(1, 1, 4, 4)
    y = getattr(A, fwd)(x, [8, 8], *extra, scale, scale)
    assert y.shape == (1, 1, 8, 8)
    if fwd != "upsample_bicubic2d":
        assert y.min().item() >= 0.0 and y.max().item() <= 15.0
    g = getattr(A, fwd + "_backward")(ptl.ones(1, 1, 8, 8, dtype=ptl.float64), [8, 8],
                                      [1, 1, 4, 4], *extra, scale, scale)
    assert g.shape == (1, 1, 4, 4)


@torch_ref
@pytest.mark.parametrize("fwd,extra", [
    ("upsample_nearest2d", ()), ("upsample_bilinear2d", (False,)),
    ("upsample_bicubic2d", (False,))])
@pytest.mark.parametrize("scale", [1000.0, 0.3])
def test_upsample_scale_that_disagrees_with_the_size_matches_torch(fwd, extra, scale):
    a = np.arange(16.0).reshape(1, 1, 4, 4)
    ours = getattr(A, fwd)(ptl.tensor(a), [8, 8], *extra, scale, scale)
    ref = getattr(torch.ops.aten, fwd)(torch.tensor(a), [8, 8], *extra, scale, scale)
    assert_close(ours, ref.numpy())


@pytest.mark.parametrize("op,name", [("_softmax_backward_data", "softmax_backward"),
                                     ("_log_softmax_backward_data", "log_softmax_backward")])
@pytest.mark.parametrize("grad", [(9, 9), (3,), (4, 3)])
def test_softmax_backward_grad_shape(op, name, grad):
    got = "[" + ", ".join(map(str, grad)) + "]"
    msg = ("Expected tensor for argument #1 'grad' to have same size as tensor for argument #2 "
           f"'output'; but {got} does not equal [3, 4] (while checking arguments for {name})")
    with pytest.raises(RuntimeError, match="^" + re.escape(msg) + "$"):
        getattr(A, op)(ones(*grad), ones(3, 4), 1, ptl.float32)


@pytest.mark.parametrize("op", ["_softmax_backward_data", "_log_softmax_backward_data"])
def test_softmax_backward_result_has_the_grads_dtype(op):
    """The result takes grad_output's dtype whatever input_dtype says (uint8 had made a uint8
    gradient), but for a float32 grad_output of a float16 input (half_to_float's backward),
    as PyTorch's."""
    a = np.random.default_rng(0).random((3, 4))
    y = np.exp(a) / np.exp(a).sum(1, keepdims=True)
    g = np.linspace(-1, 1, 12).reshape(3, 4)
    want = y * (g - (g * y).sum(1, keepdims=True)) if op[1] == "s" else \
        g - np.exp(np.log(y)) * g.sum(1, keepdims=True)
    out = y if op[1] == "s" else np.log(y)
    for dt, in_dt, res_dt in [(ptl.float64, ptl.uint8, ptl.float64),
                              (ptl.float64, ptl.float32, ptl.float64),
                              (ptl.float32, ptl.bfloat16, ptl.float32),
                              (ptl.float16, ptl.float32, ptl.float16),
                              (ptl.float32, ptl.float16, ptl.float16)]:
        got = getattr(A, op)(ptl.tensor(g, dtype=dt), ptl.tensor(out, dtype=dt), 1, in_dt)
        assert_close(got, want, dtype=res_dt)


@pytest.mark.parametrize("grad,sizes,dim,size,step,msg", [
    ((9, 9, 9), [2, 6], 1, 2, 1, "unfold_backward: expected grad_in of shape [2, 5, 2] but "
                                 "got [9, 9, 9]"),
    ((1, 1), [2, 6], 1, 2, 1, "unfold_backward: expected grad_in of shape [2, 5, 2] but got "
                              "[1, 1]"),
    ((2, 5, 2), [2, 6], 1, 2, 0, "step is 0 but must be > 0"),
    ((2, 5, 2), [2, 6], 1, 200, 1, "maximum size for tensor at dimension 1 is 6 but size is "
                                   "200"),
    ((2, 5, 2), [2, 6], 1, -1, 1, "maximum size for tensor at dimension 1 is 6 but size is -1"),
])
def test_unfold_backward_arguments(grad, sizes, dim, size, step, msg):
    with pytest.raises(RuntimeError, match="^" + re.escape(msg) + "$"):
        A.unfold_backward(ones(*grad), sizes, dim, size, step)


def test_unfold_backward_dim_out_of_range():
    with pytest.raises(IndexError, match=re.escape(
            "Dimension out of range (expected to be in range of [-2, 1], but got 7)")):
        A.unfold_backward(ones(2, 5, 2), [2, 6], 7, 2, 1)


@pytest.mark.parametrize("sizes,dim,size,step", [([2, 6], 1, 2, 1), ([7], 0, 3, 2), ([], 0, 1, 1),
                                                 ([3, 0], 0, 2, 1)])
def test_unfold_backward_of_valid_grads_matches_numpy(sizes, dim, size, step):
    x = ptl.zeros(tuple(sizes), dtype=ptl.float64)
    n = x.unfold(dim, size, step).shape
    g = np.random.default_rng(0).standard_normal(n)
    out = A.unfold_backward(ptl.tensor(g), sizes, dim, size, step)
    want = np.zeros(sizes)
    if len(sizes) == 0:
        want = g.sum().reshape(())
    else:
        moved = np.moveaxis(want, dim, -1)
        gm = np.moveaxis(g, dim, -2)
        for w in range(gm.shape[-2]):
            moved[..., w * step:w * step + size] += gm[..., w, :]
    assert_close(out, want)


def test_embedding_dense_backward_grad_must_hold_a_row_per_index():
    # a [1, 3] grad for 4 indices used to be read 4 rows deep
    with pytest.raises(RuntimeError, match=re.escape("shape '[4, 3]' is invalid for input of "
                                                     "size 3")):
        A.embedding_dense_backward(ones(1, 3), ptl.tensor([[0, 1], [2, 3]]), 10, -1, False)
    g = ptl.arange(12.0, dtype=ptl.float64).reshape(2, 2, 3)
    gw = A.embedding_dense_backward(g, ptl.tensor([[0, 1], [1, 3]]), 4, -1, False)
    want = np.zeros((4, 3))
    for i, k in enumerate([0, 1, 1, 3]):
        want[k] += np.arange(12.0).reshape(4, 3)[i]
    assert_close(gw, want)


@pytest.mark.parametrize("grad,x2,cdist,msg", [
    ((1, 1), (4, 2), (3, 4), r"expected grad of size \[\.\.\., 3, 4\] \(x1's rows by x2's "
                             r"rows\), but got \[\.\.\., 1, 1\]"),
    ((3, 4), (4, 2), (4, 3), r"expected cdist of size \[\.\.\., 3, 4\]"),
    ((3, 4), (4, 3), (3, 4), r"X1 and X2 must have the same number of columns\. X1: 2 X2: 3"),
])
def test_cdist_backward_shapes(grad, x2, cdist, msg):
    with pytest.raises(RuntimeError, match="_cdist_backward: " + msg):
        A._cdist_backward(ones(*grad), ones(3, 2), ones(*x2), 2.0, ones(*cdist))


@pytest.mark.parametrize("grad,reduction,msg", [
    ((50,), 0, r"The size of tensor a \(50\) must match the size of tensor b \(5\) at "
               r"non-singleton dimension 0"),
    ((0,), 1, r"The size of tensor a \(0\) must match the size of tensor b \(5\)"),
    ((2, 5), 0, r"grad_output of 2 dimensions does not broadcast to the input's 1"),
])
def test_binary_cross_entropy_backward_grad_shapes(grad, reduction, msg):
    # a grad_output that does not broadcast to the input's shape used to be read past its end
    with pytest.raises(RuntimeError, match=msg):
        A.binary_cross_entropy_backward(ones(*grad), ptl.full((5,), 0.5), ones(5), None,
                                        reduction)


def test_binary_cross_entropy_backward_broadcasts_grad():
    x = np.array([0.2, 0.5, 0.9])
    t = np.array([1.0, 0.0, 1.0])
    dx = (x - t) / (x * (1 - x))
    px, pt = ptl.tensor(x), ptl.tensor(t)
    g = np.array([1.0, -2.0, 3.0])
    # a non-contiguous grad_output for reduction='none'
    pg = ptl.tensor(np.stack([g, g]).T.copy()).t()[0]
    assert_close(A.binary_cross_entropy_backward(pg, px, pt, None, 0), g * dx)
    assert_close(A.binary_cross_entropy_backward(ptl.tensor(2.0, dtype=ptl.float64), px, pt,
                                                 None, 1), 2.0 * dx / 3)
    assert_close(A.binary_cross_entropy_backward(ptl.ones(1, dtype=ptl.float64), px, pt, None,
                                                 2), dx)


@pytest.mark.parametrize("grad,i,want,got_dim,got", [
    ((1, 1, 1, 1), 2, 4, 4, 1),   # a grad smaller than output_size was gathered past its end
    ((9, 9, 4, 4), 1, 1, 4, 9),
    ((1, 4, 4), 1, 1, 3, 4),
])
def test_max_unpool2d_backward_grad_shape(grad, i, want, got_dim, got):
    idx = ptl.tensor([[[[0, 5], [10, 15]]]])
    with pytest.raises(RuntimeError, match=dim_size_msg(4, i, want, got_dim, got)):
        A.max_unpool2d_backward(ones(*grad), ones(1, 1, 2, 2), idx, [4, 4])


def test_max_unpool2d_backward_gathers_at_the_indices():
    g = np.arange(16.0).reshape(1, 1, 4, 4)
    idx = ptl.tensor([[[[0, 5], [10, 15]]]])
    got = A.max_unpool2d_backward(ptl.tensor(g), ones(1, 1, 2, 2).double(), idx, [4, 4])
    assert_close(got, g.reshape(-1)[[0, 5, 10, 15]].reshape(1, 1, 2, 2))
