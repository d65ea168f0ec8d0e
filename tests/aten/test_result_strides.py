"""Result layouts as PyTorch's: nonzero is column-major (Note [nonzero is column-major] in
native/index.c), a resized out= takes the layout a new result would have (iter_new_output in
tensor_iterator.c), roll keeps a channels-last input's format, index_fill and index_put keep
self's layout, stack, group norm, max_unpool2d, the elementwise losses, bce's backward and
the self-first backward ops lay their results out as PyTorch's; and the sweep of the operator
table (tests/aten/stride_sweep.py: every op on contiguous, transposed, channels-last and
stepped inputs) against torch 2.13, whose remaining differences EXPECTED lists with their
reasons.  A difference fixed must leave the list: a stale entry fails too."""
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import make, torch_ref

REASONS = {
    "contiguous_in_torch": "PyTorch allocates this op's result contiguous, outside its "
                           "TensorIterator's layout rule; ours follows the inputs' order as "
                           "every TensorIterator op does",
    "alias_in_torch": "PyTorch's conj_physical of a real tensor returns self (the stepped "
                      "view's strides); ours returns a new tensor",
    "lapack": "PyTorch's LAPACK results are column-major (batched Fortran order); ours are "
              "row-major with the same values",
    "composite": "the layout is an accident of PyTorch's implementation (a permuted view of "
                 "an internal buffer); ours is contiguous",
    "sort": "PyTorch's sort lays values and indices out like self (infer_dense_strides); "
            "ours writes them contiguous (the lane kernel's output geometry)",
}

DIFFERENCES = {
    "contiguous_in_torch": """
        _dirichlet_grad _standard_gamma_grad bernoulli bernoulli.p pow.Scalar
        relu.out renorm special_ndtr.out
    """,
    "alias_in_torch": "conj_physical",
    "lapack": """
        _linalg_det _linalg_eigh _linalg_slogdet _linalg_solve_ex _linalg_svd inverse
        linalg_cholesky linalg_cholesky_ex linalg_eigh linalg_inv linalg_inv_ex
        linalg_ldl_factor linalg_ldl_factor_ex linalg_ldl_solve linalg_lu_factor
        linalg_lu_factor_ex linalg_qr linalg_solve linalg_solve_ex linalg_solve_triangular
        linalg_svd svd
    """,
    "composite": """
        _scaled_dot_product_flash_attention_for_cpu
        _scaled_dot_product_flash_attention_for_cpu_backward affine_grid_generator_backward
    """,
    "sort": "argsort msort sort sort.stable",
}

EXPECTED = {name: REASONS[why] for why, names in DIFFERENCES.items() for name in names.split()}


@pytest.fixture(scope="module")
def sweep():
    import stride_sweep
    return stride_sweep.sweep()


@torch_ref
def test_every_layout_difference_is_listed(sweep):
    unlisted = sorted(why for name, why in sweep.items() if name not in EXPECTED)
    assert not unlisted, "result layouts that differ from torch's:\n" + "\n".join(unlisted)


@torch_ref
def test_no_stale_entry(sweep):
    stale = sorted(name for name in EXPECTED if name not in sweep)
    assert not stale, "EXPECTED entries whose layout is torch's now (remove them): " + \
        " ".join(stale)


# ---- nonzero, argwhere, where(cond) ----

@pytest.mark.parametrize("shape", [(), (0,), (7,), (2, 0), (3, 4), (2, 3, 4), (5, 1, 3)])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
def test_nonzero_is_column_major(shape, layout):
    t, a = make(shape, ptl.int64, layout, seed=len(shape), low=-1, high=1)
    want = np.argwhere(a) if a.ndim else np.zeros((int(a != 0), 0), dtype=np.int64)
    n, k = want.shape
    for r in (t.nonzero(), ptl.nonzero(t), ptl.argwhere(t)):
        assert tuple(r.shape) == (n, k) and r.dtype == ptl.int64
        assert r.stride() == (1, n)
        np.testing.assert_array_equal(r.numpy(), want)
    if a.ndim:
        cols = ptl.where(t)
        assert len(cols) == k
        for c, w in zip(cols, want.T):
            assert c.stride() == (1,) and c.is_contiguous()
            np.testing.assert_array_equal(c.numpy(), w)


def test_nonzero_on_the_device_path_is_column_major():
    # the host walk's result moves to the device row-major, then is laid out again
    t, a = make((4, 6), ptl.int64, "transposed", seed=7, low=-1, high=1)
    ptl._C._cuda_kernel_emulation((64, 6, 3, 8))
    try:
        r = t.nonzero()
    finally:
        ran = ptl._C._cuda_kernel_emulation(None)
    assert ran, "the emulated kernels did not run"
    assert r.stride() == (1, r.shape[0])
    np.testing.assert_array_equal(r.numpy(), np.argwhere(a))


def test_boolean_mask_indices_read_nonzero_columns():
    x, a = make((4, 5, 3), ptl.float64, "contiguous", seed=3)
    m = x[..., 0] > 0
    np.testing.assert_array_equal(x[m].numpy(), a[a[..., 0] > 0])
    np.testing.assert_array_equal(x[:, m[0]].numpy(), a[:, a[0, :, 0] > 0])
    y = x.clone()
    y[m, 1] = 7.0
    b = a.copy()
    b[a[..., 0] > 0, 1] = 7.0
    np.testing.assert_array_equal(y.numpy(), b)


# ---- out= resized by TensorIterator ----

def _layouts():
    x = ptl.tensor(np.arange(12.0).reshape(4, 3)).t()                   # (3, 4), (1, 3)
    y = ptl.tensor(np.arange(120.0).reshape(2, 4, 5, 3)).permute(0, 3, 1, 2)  # channels-last
    return [(x, x), (y, y), (x, 2.5), (y, ptl.ones(3, 1, 1, dtype=ptl.float64))]


@pytest.mark.parametrize("case", range(4))
@pytest.mark.parametrize("dtype", [ptl.float64, ptl.float32])
def test_resized_out_takes_the_new_results_layout(case, dtype):
    a, b = _layouts()[case]
    want = ptl.add(a, b)
    out = ptl.empty(0, dtype=dtype)
    r = ptl.add(a, b, out=out)
    assert r is out and out.shape == want.shape and out.stride() == want.stride()
    np.testing.assert_array_equal(out.double().numpy(), want.numpy())
    # an out= of the right shape keeps its own layout
    kept = ptl.empty(tuple(want.shape), dtype=dtype)
    ptl.add(a, b, out=kept)
    assert kept.is_contiguous()
    np.testing.assert_array_equal(kept.double().numpy(), want.numpy())


def test_resized_out_of_a_unary_op_and_a_comparison():
    x, a = make((3, 5), ptl.float64, "transposed", seed=1)
    out = ptl.empty(0, dtype=ptl.float64)
    ptl.exp(x, out=out)
    assert out.stride() == (1, 3)
    np.testing.assert_allclose(out.numpy(), np.exp(a), rtol=1e-15)
    out = ptl.empty(2, dtype=ptl.bool)
    ptl.lt(x, 0, out=out)
    assert out.stride() == (1, 3)
    np.testing.assert_array_equal(out.numpy(), a < 0)


# ---- roll, index_fill, index_put ----

@pytest.mark.parametrize("shifts, dims", [(1, 1), ((2, -1), (1, 3)), ((1, 1, 1, 1), (0, 1, 2, 3)),
                                          (3, None)])
def test_roll_keeps_channels_last(shifts, dims):
    x, a = make((2, 3, 4, 5), ptl.float64, "contiguous", seed=2)
    c = x.contiguous(memory_format=ptl.channels_last)
    roll = (lambda t: ptl.roll(t, shifts)) if dims is None else \
        (lambda t: ptl.roll(t, shifts, dims))
    r = roll(c)
    want = np.roll(a, shifts, dims)
    np.testing.assert_array_equal(r.numpy(), want)
    assert r.is_contiguous(memory_format=ptl.channels_last) == (dims is not None)
    assert r.is_contiguous() == (dims is None)
    t = roll(x.transpose(0, 3))
    assert t.is_contiguous()
    np.testing.assert_array_equal(t.numpy(), np.roll(a.swapaxes(0, 3), shifts, dims))


@pytest.mark.parametrize("layout", ["transposed", "channels_last"])
def test_index_fill_and_index_put_keep_self_layout(layout):
    x, a = make((2, 3, 4, 5), ptl.float64, "contiguous", seed=4)
    x = x.permute(3, 2, 1, 0) if layout == "transposed" else \
        x.contiguous(memory_format=ptl.channels_last)
    a = a.transpose(3, 2, 1, 0) if layout == "transposed" else a
    idx = ptl.tensor([0, 2])
    f = x.index_fill(1, idx, -1.0)
    b = a.copy()
    b[:, [0, 2]] = -1.0
    np.testing.assert_array_equal(f.numpy(), b)
    p = x.index_put((ptl.tensor([1, 0]),), ptl.tensor(9.0, dtype=ptl.float64))
    c = a.copy()
    c[[1, 0]] = 9.0
    np.testing.assert_array_equal(p.numpy(), c)
    for r in (f, p):
        assert r.stride() == x.stride()
    assert x.index_add(1, idx, ptl.ones(x.shape[0], 2, *x.shape[2:],
                                        dtype=ptl.float64)).is_contiguous()


# ---- pixel_shuffle, pixel_unshuffle ----

@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "transposed"])
def test_pixel_shuffle_keeps_channels_last(layout):
    x, a = make((2, 8, 3, 4), ptl.float64, "contiguous", seed=5)
    if layout == "channels_last":
        x = x.contiguous(memory_format=ptl.channels_last)
    elif layout == "transposed":
        x = x.transpose(2, 3).contiguous().transpose(2, 3)
    F = ptl.nn.functional
    y = F.pixel_shuffle(x, 2)
    want = a.reshape(2, 2, 2, 2, 3, 4).transpose(0, 1, 4, 2, 5, 3).reshape(2, 2, 6, 8)
    np.testing.assert_array_equal(y.numpy(), want)
    z = F.pixel_unshuffle(y, 2)
    np.testing.assert_array_equal(z.numpy(), a)
    cl = layout == "channels_last"
    for r in (y, z):
        assert r.is_contiguous(memory_format=ptl.channels_last) == cl
        assert r.is_contiguous() == (not cl)
    g = x.detach().requires_grad_()
    assert ptl.autograd.gradcheck(lambda t: F.pixel_unshuffle(F.pixel_shuffle(t, 2) * 2, 2),
                                  (g,))


# ---- layouts kept as PyTorch keeps them (each was an EXPECTED entry) ----

def _channels_last(shape=(2, 3, 4, 5), seed=8):
    x, a = make(shape, ptl.float64, "contiguous", seed=seed)
    return x.contiguous(memory_format=ptl.channels_last), a


@pytest.mark.parametrize("dim, strides", [(0, (120, 60, 1, 15, 3)), (1, (120, 3, 1, 30, 6)),
                                          (2, (120, 1, 60, 15, 3)), (-1, (120, 40, 10, 2, 1))])
def test_stack_of_channels_last_is_cat_split(dim, strides):
    # PyTorch stacks below the rank as cat along dim viewed with that dim split; the strides
    # are torch 2.13's
    x, a = _channels_last()
    y, b = _channels_last(seed=9)
    r = ptl.stack([x, y], dim)
    np.testing.assert_array_equal(r.numpy(), np.stack([a, b], dim))
    assert r.stride() == strides
    g = x.detach().requires_grad_()
    assert ptl.autograd.gradcheck(lambda t: ptl.stack([t, t * 2], dim), (g,))


def test_group_norm_and_max_unpool2d_keep_channels_last():
    x, a = _channels_last((2, 4, 3, 5))
    out, mean, rstd = ptl.ops.aten.native_group_norm(x, None, None, 2, 4, 15, 2, 1e-5)
    want = ptl.ops.aten.native_group_norm(ptl.tensor(a), None, None, 2, 4, 15, 2, 1e-5)
    assert out.is_contiguous(memory_format=ptl.channels_last) and not out.is_contiguous()
    for r, w in zip((out, mean, rstd), want):
        np.testing.assert_allclose(r.numpy(), w.numpy(), rtol=1e-13, atol=1e-13)
    F = ptl.nn.functional
    pooled, idx = F.max_pool2d(x, 2, return_indices=True)
    u = F.max_unpool2d(pooled, idx, 2, output_size=(3, 5))
    assert u.is_contiguous(memory_format=ptl.channels_last)
    want = F.max_unpool2d(pooled.contiguous(), idx.contiguous(), 2, output_size=(3, 5))
    np.testing.assert_array_equal(u.numpy(), want.numpy())


@pytest.mark.parametrize("op", ["threshold_backward", "leaky_relu_backward"])
def test_backward_follows_self_where_grad_output_differs(op):
    # PyTorch's TensorIterator for these two takes self before grad_output
    g, ga = make((3, 4), ptl.float64, "transposed", seed=10)
    x, xa = make((3, 4), ptl.float64, "contiguous", seed=11)
    f = getattr(ptl.ops.aten, op)
    args = (0.5,) if op == "threshold_backward" else (0.2, False)
    r = f(g, x, *args)
    assert r.is_contiguous()
    want = np.where(xa > 0.5, ga, 0) if op == "threshold_backward" else \
        ga * np.where(xa > 0, 1, 0.2)
    np.testing.assert_array_equal(r.numpy(), want)
    assert f(x, g, *args).stride() == g.stride()


@pytest.mark.parametrize("loss", ["mse_loss", "huber_loss", "smooth_l1_loss"])
@pytest.mark.parametrize("layout", ["channels_last", "transposed"])
def test_elementwise_losses_follow_their_inputs(loss, layout):
    x, a = _channels_last()
    t, b = _channels_last(seed=12)
    if layout == "transposed":
        x, t, a, b = x.contiguous().transpose(1, 3), t.contiguous().transpose(1, 3), \
            a.swapaxes(1, 3), b.swapaxes(1, 3)
    F = ptl.nn.functional
    r = getattr(F, loss)(x, t, reduction="none")
    want = getattr(F, loss)(ptl.tensor(a), ptl.tensor(b), reduction="none")
    assert r.stride() == x.stride()
    np.testing.assert_array_equal(r.numpy(), want.numpy())
    # a channels-last input with a contiguous target: the input's order comes first
    r2 = getattr(F, loss)(x, ptl.tensor(b), reduction="none")
    assert r2.stride() == x.stride()


def test_binary_cross_entropy_backward_is_laid_out_as_self():
    x, a = _channels_last()
    x = (x.sigmoid() * 0.8 + 0.1).contiguous(memory_format=ptl.channels_last)
    t = ptl.rand(2, 3, 4, 5, dtype=ptl.float64)
    g = ptl.ops.aten.binary_cross_entropy_backward(ptl.ones(2, 3, 4, 5, dtype=ptl.float64),
                                                   x, t, None, 0)
    assert g.stride() == x.stride()
    want = ptl.ops.aten.binary_cross_entropy_backward(
        ptl.ones(2, 3, 4, 5, dtype=ptl.float64), x.contiguous(), t, None, 0)
    np.testing.assert_array_equal(g.numpy(), want.numpy())
