"""The layer norm, nll_loss and embedding kernels' plans and index arithmetic
(src/cuda/nn_plan.c and nn_plan.h, compiled by gcc here and by nvcc for nn.cu), checked on the
host: with _C._cuda_kernel_emulation on, these ops on CPU tensors go through the CUDA path
(the CPU kernel's checks and copies, then the kernels' per-thread loops, block tree and grid
loops run on the host) and must reproduce NumPy in float64, under tunings that put rows
below, at and above a warp and the block limits, grids of one block (grid-stride loops) and
many, for every reduction, weight, ignore_index (everywhere), repeated indices,
padding_idx and scale_grad_by_freq.  Needs no device and no nvcc."""
import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn.functional as F
from kernel_emulation import TUNINGS, emulated

FLOATS = [ptl.float64, ptl.float32, ptl.float16, ptl.bfloat16]
TOL = {ptl.float64: 1e-10, ptl.float32: 2e-5, ptl.float16: 2e-2, ptl.bfloat16: 1e-1}


def close(got, want, dtype, scale=1.0):
    """got within the dtype's tolerance of want; scale: the size of the terms that cancel
    in want (the absolute tolerance grows with it)."""
    got = got.detach().to(ptl.float64).numpy()
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_allclose(got, want, rtol=TOL[dtype], atol=TOL[dtype] * max(scale, 1.0),
                               equal_nan=True)


def leaf(a, dtype):
    """a (NumPy) as a leaf tensor of dtype that wants its gradient, and the float64 values it
    holds after rounding."""
    t = ptl.tensor(a).to(dtype).requires_grad_(True)
    return t, t.detach().to(ptl.float64).numpy()


# row lengths below, at and across a warp (32) and the tunings' block limits (32, 64, 512)
ROW_LENGTHS = [1, 5, 31, 32, 33, 64, 65, 130, 513, 1030]


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_layer_norm_and_its_backward_match_numpy(tuning, dtype):
    rng = np.random.default_rng(0)
    with emulated(TUNINGS[tuning]) as ran:
        for n in ROW_LENGTHS:
            for rows, affine in (((), True), ((3,), False), ((2, 4), True), ((0,), True),
                                 ((7,), "weight")):
                x, xv = leaf(rng.standard_normal(rows + (n,)) * 2 + 1, dtype)
                w, wv = leaf(rng.standard_normal(n), dtype)
                b, bv = leaf(rng.standard_normal(n), dtype)
                w_arg = w if affine else None
                b_arg = b if affine is True else None
                y = F.layer_norm(x, (n,), w_arg, b_arg, 1e-5)
                mean = xv.mean(-1, keepdims=True)
                rstd = 1 / np.sqrt(((xv - mean) ** 2).mean(-1, keepdims=True) + 1e-5)
                xhat = (xv - mean) * rstd
                want = xhat * (wv if affine else 1) + (bv if affine is True else 0)
                close(y, want, dtype)
                dy = rng.standard_normal(rows + (n,))
                y.backward(ptl.tensor(dy).to(dtype))
                dyv = ptl.tensor(dy).to(dtype).to(ptl.float64).numpy()
                g = dyv * (wv if affine else 1)
                dx = rstd * (g - g.mean(-1, keepdims=True) -
                             xhat * (g * xhat).mean(-1, keepdims=True))
                # dx is a difference of terms of size rstd |g|: rounded in the dtype
                close(x.grad, dx, dtype, np.abs(rstd * g).max(initial=0))
                flat = (-1, n)
                if affine:
                    close(w.grad, (dyv * xhat).reshape(flat).sum(0), dtype)
                if affine is True:
                    close(b.grad, dyv.reshape(flat).sum(0), dtype)
    assert ran["layer_norm"] > 0
    if tuning != "device":
        assert ran["layer_norm_split"] > 0


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
def test_layer_norm_weight_and_bias_gradients_split_over_rows(tuning):
    """Many rows, few columns: the column sums split over row chunks (every tuning), each
    chunk summed in order and the chunks added in order by a second pass."""
    rng = np.random.default_rng(4)
    with emulated(TUNINGS[tuning]) as ran:
        for m, n in ((4100, 3), (50, 40), (2, 1), (33, 70)):
            x, xv = leaf(rng.standard_normal((m, n)), ptl.float64)
            w, _ = leaf(rng.standard_normal(n), ptl.float64)
            b, _ = leaf(rng.standard_normal(n), ptl.float64)
            dy = rng.standard_normal((m, n))
            F.layer_norm(x, (n,), w, b).backward(ptl.tensor(dy))
            xhat = (xv - xv.mean(-1, keepdims=True)) / np.sqrt(xv.var(-1, keepdims=True) + 1e-5)
            close(w.grad, (dy * xhat).sum(0), ptl.float64)
            close(b.grad, dy.sum(0), ptl.float64)
    assert ran["layer_norm_split"] > 0


def test_layer_norm_of_constant_rows_and_large_offsets():
    """A constant row normalizes to 0 (variance 0, rstd 1/sqrt(eps)); rows far from 0 keep
    float64 accuracy in float32 (double sums)."""
    x = ptl.tensor(np.full((3, 100), 7.0)).to(ptl.float32)
    big = ptl.tensor(1e4 + np.random.default_rng(1).standard_normal((2, 700))).to(ptl.float32)
    with emulated(TUNINGS["small"]):
        y0 = F.layer_norm(x, (100,))
        y1 = F.layer_norm(big, (700,))
    np.testing.assert_array_equal(y0.numpy(), np.zeros((3, 100), np.float32))
    xv = big.to(ptl.float64).numpy()
    want = (xv - xv.mean(-1, keepdims=True)) / np.sqrt(xv.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(y1.numpy(), want, atol=2e-3)


def nll_numpy(logp, target, weight, ignore):
    """nll_loss in float64 over logp [N, C, S...] (or [C]): each target's loss and the total
    weight (the mean's divisor)."""
    if logp.ndim == 1:
        logp, target = logp[None], np.asarray(target)[None]
    C = logp.shape[1]
    lp = np.moveaxis(logp, 1, -1).reshape(-1, C)
    t = target.reshape(-1)
    w = np.ones(C) if weight is None else weight
    keep = t != ignore
    tw = np.where(keep, w[np.where(keep, t, 0)], 0.0)
    losses = -tw * lp[np.arange(len(t)), np.where(keep, t, 0)]
    total = tw.sum()
    return losses, total


@pytest.mark.filterwarnings("ignore:invalid value")
@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_nll_loss_and_cross_entropy_match_numpy(tuning, dtype):
    rng = np.random.default_rng(2)
    # targets below, at and across a warp and the block limits; 1-D, 2-D and spatial inputs
    shapes = [(5,), (1, 4), (31, 3), (32, 7), (33, 2), (65, 5), (600, 3), (3, 4, 5, 2),
              (2, 3, 40), (0, 3)]
    with emulated(TUNINGS[tuning]) as ran:
        for shape in shapes:
            C = shape[0] if len(shape) == 1 else shape[1]
            tshape = () if len(shape) == 1 else (shape[0],) + shape[2:]
            for weighted in (False, True):
                for ignore in (-100, 1, "all"):
                    target = rng.integers(0, C, size=tshape)
                    ig = ignore
                    if ignore == "all":   # every target ignored: mean is 0 / 0
                        target = np.full(tshape, 1 % C)
                        ig = 1 % C
                    weight = rng.uniform(0.5, 2, C) if weighted else None
                    for reduction in ("none", "mean", "sum"):
                        x, xv = leaf(rng.standard_normal(shape), dtype)
                        wt = ptl.tensor(weight).to(dtype) if weighted else None
                        wv = wt.to(ptl.float64).numpy() if weighted else None
                        out = F.nll_loss(x, ptl.tensor(target), weight=wt, ignore_index=ig,
                                         reduction=reduction)
                        losses, total = nll_numpy(xv, target, wv, ig)
                        with np.errstate(all="ignore"):
                            want = {"none": losses.reshape(tshape), "sum": losses.sum(),
                                    "mean": losses.sum() / total}[reduction]
                        close(out, want, dtype)
                        go = rng.standard_normal(np.shape(want))
                        out.backward(ptl.tensor(go).to(dtype))
                        gov = ptl.tensor(go).to(dtype).to(ptl.float64).numpy()
                        with np.errstate(all="ignore"):
                            scale = {"none": gov.reshape(-1), "sum": gov,
                                     "mean": gov / total}[reduction]
                        close(x.grad, nll_grad_numpy(xv, target, wv, ig, scale), dtype)
            # cross_entropy: the emulated log_softmax (reduce_plan.c), then nll_loss
            x, xv = leaf(rng.standard_normal(shape), dtype)
            target = rng.integers(0, C, size=tshape)
            ax = 1 if len(shape) > 1 else 0
            m = xv.max(axis=ax, keepdims=True) if xv.size else 0
            logp = xv - m - np.log(np.exp(xv - m).sum(axis=ax, keepdims=True))
            losses, total = nll_numpy(logp, target, None, -100)
            with np.errstate(all="ignore"):
                close(F.cross_entropy(x, ptl.tensor(target)), losses.sum() / total, dtype)
    assert ran["nll_loss"] > 0


def nll_grad_numpy(logp, target, weight, ignore, scale):
    """The gradient of sum(scale * losses) with respect to logp."""
    one_d = logp.ndim == 1
    lp = logp[None] if one_d else logp
    t = np.asarray(target)[None] if one_d else target
    C = lp.shape[1]
    w = np.ones(C) if weight is None else weight
    grad = np.zeros(np.moveaxis(lp, 1, -1).shape)
    flat = grad.reshape(-1, C)
    tf = t.reshape(-1)
    sc = np.broadcast_to(np.asarray(scale), tf.shape)
    for e, c in enumerate(tf):
        if c != ignore:
            flat[e, c] = -w[c] * sc[e]
    grad = np.moveaxis(flat.reshape(grad.shape), -1, 1)
    return grad[0] if one_d else grad


def test_nll_loss_bad_targets_raise_the_cpu_error():
    x = ptl.randn(4, 3)
    with emulated(TUNINGS["tiny"]):
        for bad in (3, -1):
            t = ptl.tensor([0, bad, 1, 2])
            with pytest.raises(IndexError, match=f"Target {bad} is out of bounds."):
                F.nll_loss(x, t)
            with pytest.raises(IndexError, match=f"Target {bad} is out of bounds."):
                F.nll_loss(x, t, reduction="none")
            xg = x.clone().requires_grad_(True)
            loss = F.nll_loss(xg, ptl.tensor([0, 1, 1, 2]))
            with pytest.raises(IndexError, match=f"Target {bad} is out of bounds."):
                ptl.ops.aten.nll_loss_nd_backward(ptl.ones(()), xg, t, None, 1, -100)
            loss.backward()
        with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte"):
            F.nll_loss(x, ptl.tensor([0, 1, 1, 2], dtype=ptl.int32))


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", [ptl.float64, ptl.float32, ptl.float16, ptl.bfloat16,
                                   ptl.int64], ids=str)
def test_embedding_and_its_backward_match_numpy(tuning, dtype):
    rng = np.random.default_rng(3)
    grads = dtype != ptl.int64
    with emulated(TUNINGS[tuning]) as ran:
        for V, D in ((1, 1), (5, 3), (40, 33), (130, 2), (7, 600), (3, 0), (0, 4)):
            for L in ((), (0,), (9,), (4, 50)):
                for pad, scale in ((None, False), (0, False), (None, True), (-1, True)):
                    if V == 0 and L not in ((0,),):
                        continue
                    # few distinct rows: indices repeat
                    idx_np = rng.integers(0, max(min(V, 4), 1), size=L) if V else \
                        np.zeros(L, np.int64)
                    idx = ptl.tensor(idx_np)
                    base = rng.standard_normal((V, D)) * 3
                    if grads:
                        w, wv = leaf(base, dtype)
                    else:
                        w = ptl.tensor(base.round()).to(dtype)
                        wv = w.numpy()
                    pad_arg = None if pad is None or V == 0 else pad
                    out = F.embedding(idx, w, padding_idx=pad_arg, scale_grad_by_freq=scale)
                    want = wv[idx_np]
                    if not grads:
                        np.testing.assert_array_equal(out.numpy(), want)
                        continue
                    close(out, want, dtype)
                    g = rng.standard_normal(np.shape(want))
                    out.backward(ptl.tensor(g).to(dtype))
                    flat = idx_np.reshape(-1)
                    gv = ptl.tensor(g).to(dtype).to(ptl.float64).numpy().reshape(flat.size, D)
                    counts = np.bincount(flat, minlength=V)
                    f = 1.0 / counts[flat] if scale and flat.size else np.ones(flat.size)
                    dw = np.zeros((V, D))
                    np.add.at(dw, flat, gv * f[:, None])
                    if pad_arg is not None:
                        dw[pad_arg % V] = 0
                    close(w.grad, dw, dtype)
    assert ran["embedding"] > 0


def test_embedding_bad_indices_raise_the_cpu_error():
    w = ptl.randn(5, 3)
    with emulated(TUNINGS["small"]):
        for bad in (5, -1, 100):
            idx = ptl.tensor([[0, 1], [bad, 2]])
            with pytest.raises(IndexError, match="index out of range in self"):
                F.embedding(idx, w)
            with pytest.raises(IndexError, match="index out of range in self"):
                ptl.ops.aten.embedding_dense_backward(ptl.ones(2, 2, 3), idx, 5, -1, False)
        out = F.embedding(ptl.tensor([4, 0], dtype=ptl.int32), w)
    np.testing.assert_array_equal(out.numpy(), w.numpy()[[4, 0]])


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
def test_a_language_model_step_matches_the_cpu_kernels(tuning):
    """embedding -> layer norm -> linear -> cross_entropy and its backward, with every CUDA
    kernel on the path emulated, against the same step on the CPU kernels."""
    ptl.manual_seed(0)
    V, D = 50, 32
    emb, ln, head = ptl.nn.Embedding(V, D), ptl.nn.LayerNorm(D), ptl.nn.Linear(D, V)
    params = [*emb.parameters(), *ln.parameters(), *head.parameters()]
    idx, tgt = ptl.randint(0, V, (3, 16)), ptl.randint(0, V, (3, 16))

    def step():
        for p in params:
            p.grad = None
        loss = F.cross_entropy(head(ln(emb(idx))).view(-1, V), tgt.view(-1))
        loss.backward()
        return [loss.detach()] + [p.grad.clone() for p in params]

    want = step()
    with emulated(TUNINGS[tuning]) as ran:
        got = step()
    for g, w in zip(got, want):
        close(g, w.to(ptl.float64).numpy(), ptl.float32)
    assert min(ran["layer_norm"], ran["nll_loss"], ran["embedding"]) > 0
