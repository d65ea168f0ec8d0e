"""The GEMM paths convolution leans on (src/aten/native/gemm.c): batches shared out among the
threads one matrix each, and products with a long K cut into chunks whose partial results
are added in chunk order (Note [GEMM K split], a conv's weight gradient).  Compared with NumPy
in float64 (exact for int64) on shapes on both sides of each threshold, with transposed
operands, and checked to give the same bits on 1, 2 and 3 threads."""
import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn.functional as F
from helpers import assert_close, torch, torch_ref




def check(out, ref, dtype):
    """Exact for int64, float64 to 1e-12 and float32 to 1e-5 of the largest |value|: sums of
    thousands of products lose absolute, not relative, accuracy on the small entries."""
    if dtype == ptl.float32:
        assert out.dtype == ptl.float32 and tuple(out.shape) == ref.shape
        scale = max(np.abs(ref).max(initial=0.0), 1.0)
        np.testing.assert_allclose(out.numpy() / scale, ref / scale, rtol=0, atol=1e-5)
    else:
        assert_close(out, ref, dtype=dtype)


def arr(shape, dtype, seed):
    a = np.random.default_rng(seed).standard_normal(shape)
    return (a * 4).astype(np.int64) if dtype == ptl.int64 else a


# (m, k, n): K split (k >= 8192, small m * n), its edge (k just under) and one with more
# than the maximum number of chunks
KSPLIT_SHAPES = [(32, 43264, 9), (64, 8192, 100), (3, 9000, 5), (5, 8191, 7), (2, 140000, 3)]


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64, ptl.int64])
@pytest.mark.parametrize("m,k,n", KSPLIT_SHAPES)
def test_mm_long_k(m, k, n, dtype, restore_threads):
    a, b = arr((m, k), dtype, 0), arr((k, n), dtype, 1)
    ta, tb = ptl.tensor(a, dtype=dtype), ptl.tensor(b, dtype=dtype)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    results = []
    for nt in (1, 2, 3):
        ptl.set_num_threads(nt)
        out = ta @ tb
        check(out, ref, dtype)
        results.append(out.numpy())
    # the chunking depends on the shape only: every thread count gives the same bits
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])
    # transposed operands and addmm's alpha / beta go through the same split
    c = arr((m, n), dtype, 2)
    ta_t = ptl.tensor(np.ascontiguousarray(a.T), dtype=dtype).t()
    out = ptl.addmm(ptl.tensor(c, dtype=dtype), ta_t, tb, beta=2, alpha=3)
    check(out, 3 * ref + 2 * c.astype(np.float64), dtype)


def test_mm_long_k_beta_zero_ignores_nan(restore_threads):
    a, b = arr((4, 9000), ptl.float64, 3), arr((9000, 6), ptl.float64, 4)
    out = ptl.full((4, 6), float("nan"), dtype=ptl.float64)
    ptl.mm(ptl.tensor(a), ptl.tensor(b), out=out)
    assert_close(out, a @ b, dtype=ptl.float64)


# (batch, m, k, n): per-matrix products above the parallel threshold; batches that split
# evenly among 2 threads, that do not (3) and many (9 >= 4 * 2); per-matrix shapes across
# the AVX-512 tile and block edges (m 13 / 25 / 193, n 33 / 65, k 257 / 321)
BATCH_SHAPES = [(4, 70, 65, 80), (3, 70, 65, 80), (9, 64, 64, 64), (2, 33, 300, 47),
                (5, 25, 257, 65), (3, 193, 321, 33), (16, 13, 40, 33)]


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64, ptl.int64])
@pytest.mark.parametrize("b,m,k,n", BATCH_SHAPES)
def test_bmm_batches_in_parallel(b, m, k, n, dtype, restore_threads):
    a, c = arr((b, m, k), dtype, 5), arr((b, n, k), dtype, 6)
    ta = ptl.tensor(a, dtype=dtype)
    tc = ptl.tensor(c, dtype=dtype).transpose(1, 2)          # a transposed operand
    ref = a.astype(np.float64) @ c.astype(np.float64).transpose(0, 2, 1)
    results = []
    for nt in (1, 2, 3):
        ptl.set_num_threads(nt)
        out = ptl.bmm(ta, tc)
        check(out, ref, dtype)
        results.append(out.numpy())
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])
    check(ptl.einsum("bij,bjk->bik", ta, tc), ref, dtype)


def ref_conv2d(x, w, b, stride, pad):
    """float64 convolution through an explicit im2col."""
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    kh, kw = w.shape[2:]
    win = np.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(2, 3))
    win = win[:, :, ::stride, ::stride]                        # N, C, oh, ow, kh, kw
    y = np.einsum("nchwij,ocij->nohw", win, w.astype(np.float64))
    return y + b.astype(np.float64)[None, :, None, None]


# (N, Ci, H, W, Co, stride, pad): the CNN benchmark's two convolutions (weight gradients over
# 43264 and 7744 columns), the conv2d benchmark rows, odd sizes and a stride
CONV_CASES = [(64, 1, 28, 28, 32, 1, 0), (16, 32, 13, 13, 64, 1, 0), (8, 3, 32, 32, 32, 1, 1),
              (4, 32, 16, 16, 64, 1, 1), (5, 3, 17, 23, 6, 2, 1)]


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv2d_forward_backward(case, restore_threads):
    n, ci, h, w_, co, s, p = case
    g = np.random.default_rng(7)
    x = g.standard_normal((n, ci, h, w_)).astype(np.float32)
    w = g.standard_normal((co, ci, 3, 3)).astype(np.float32)
    b = g.standard_normal(co).astype(np.float32)
    ref = ref_conv2d(x, w, b, s, p)
    mag = ref_conv2d(np.abs(x), np.abs(w), np.abs(b), s, p)
    gy = g.standard_normal(ref.shape).astype(np.float32)
    grads = []
    for nt in (1, 2):
        ptl.set_num_threads(nt)
        tx, tw, tb = (ptl.tensor(v).requires_grad_() for v in (x, w, b))
        y = F.conv2d(tx, tw, tb, stride=s, padding=p)
        # 3x3 stride-1 layers of 8 or more channels take Winograd (Note [Winograd
        # convolution]): its rounding is bounded by the sum of the terms' magnitudes
        np.testing.assert_array_less(np.abs(y.detach().numpy() - ref), 1e-5 * mag + 1e-6)
        y.backward(ptl.tensor(gy))
        grads.append([t.grad.numpy() for t in (tx, tw, tb)])
    for a, c in zip(grads[0], grads[1]):
        np.testing.assert_array_equal(a, c)
    # weight gradient: sum over samples and positions of gy * patches, in float64
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (p, p), (p, p)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))[:, :, ::s, ::s]
    gw = np.einsum("nohw,nchwij->ocij", gy.astype(np.float64), win)
    scale = np.abs(gw).max()
    np.testing.assert_allclose(grads[0][1] / scale, gw / scale, rtol=0, atol=2e-5)
    np.testing.assert_allclose(grads[0][2], gy.astype(np.float64).sum(axis=(0, 2, 3)),
                               rtol=1e-4, atol=1e-3)


@torch_ref
def test_conv2d_grads_match_torch(restore_threads):
    ptl.set_num_threads(2)
    g = np.random.default_rng(8)
    x = g.standard_normal((16, 32, 13, 13)).astype(np.float32)
    w = g.standard_normal((64, 32, 3, 3)).astype(np.float32)
    ours = [ptl.tensor(v).requires_grad_() for v in (x, w)]
    ref = [torch.tensor(v).requires_grad_() for v in (x, w)]
    y, ty = F.conv2d(*ours), torch.nn.functional.conv2d(*ref)
    # ours takes Winograd here: within 1e-5 of the sum of the terms' magnitudes
    mag = torch.nn.functional.conv2d(torch.tensor(np.abs(x)), torch.tensor(np.abs(w))).numpy()
    np.testing.assert_array_less(np.abs(y.detach().numpy() - ty.detach().numpy()),
                                 1e-5 * mag + 1e-6)
    gy = g.standard_normal(tuple(ty.shape)).astype(np.float32)
    y.backward(ptl.tensor(gy))
    ty.backward(torch.tensor(gy))
    for o, r in zip(ours, ref):
        np.testing.assert_allclose(o.grad.numpy(), r.grad.numpy(), rtol=1e-3, atol=1e-3)


def test_conv2d_weight_gradcheck_long_k(restore_threads):
    # 8 x 1024 output positions: the weight gradient is a K-split product; a weighted sum
    # keeps the Jacobian to one row
    ptl.set_num_threads(2)
    g = np.random.default_rng(9)
    x = ptl.tensor(g.standard_normal((8, 1, 34, 34)))
    r = ptl.tensor(g.standard_normal((8, 2, 32, 32)))
    w = ptl.tensor(g.standard_normal((2, 1, 3, 3))).requires_grad_()
    assert ptl.autograd.gradcheck(lambda v: (F.conv2d(x, v) * r).sum(), (w,))


# ---- matmul over several batch dims read in place (Note [Batched matmul without copies]) ----

def heads(x, b, t, h, d):
    """[b, t, h * d] -> [b, h, t, d]: a batch no 3-D view can hold (attention's heads)"""
    return x.view(b, t, h, d).transpose(1, 2)


# (b, h, t, d, e): q [b, h, t, d] @ k^T [b, h, d, e] (e keys); the GPT benchmark's heads,
# a gemv per matrix (t = 1, e = 1), long-K chunks (d >= 8192 with a small result), products
# above the parallel threshold, in batches of 4 (split evenly on 2 threads), 3 (not) and 9
MATMUL_HEAD_SHAPES = [(16, 4, 64, 32, 64), (2, 3, 1, 5, 7), (3, 2, 6, 5, 1),
                      (1, 2, 3, 9000, 4), (2, 2, 70, 65, 80), (3, 1, 70, 65, 80),
                      (3, 3, 64, 64, 64), (2, 0, 3, 4, 5)]


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64, ptl.int64])
@pytest.mark.parametrize("b,h,t,d,e", MATMUL_HEAD_SHAPES)
def test_matmul_strided_batches(b, h, t, d, e, dtype, restore_threads):
    qn, kn = arr((b, t, h * d), dtype, 10), arr((b, e, h * d), dtype, 11)
    q = heads(ptl.tensor(qn, dtype=dtype), b, t, h, d)
    k = heads(ptl.tensor(kn, dtype=dtype), b, e, h, d)
    q64 = qn.astype(np.float64).reshape(b, t, h, d).transpose(0, 2, 1, 3)
    k64 = kn.astype(np.float64).reshape(b, e, h, d).transpose(0, 2, 1, 3)
    ref = q64 @ k64.transpose(0, 1, 3, 2)
    results = []
    for nt in (1, 2, 3):
        ptl.set_num_threads(nt)
        out = q @ k.transpose(-2, -1)
        assert out.is_contiguous()
        check(out, ref, dtype)
        results.append(out.numpy())
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])
    # attn @ v: a contiguous left operand, a strided right one
    check(ptl.tensor(ref, dtype=dtype) @ k, ref @ k64, dtype)


@pytest.mark.parametrize("sa,sb", [((2, 1, 3, 4), (1, 5, 4, 2)), ((3, 4), (2, 2, 4, 5)),
                                   ((2, 3, 2, 4, 3), (3, 1, 3, 2)), ((4,), (2, 3, 4, 5)),
                                   ((2, 3, 4, 5), (5,))])
def test_matmul_broadcast_strided_batches(sa, sb):
    an, bn = arr(sa, ptl.float64, 12), arr(sb, ptl.float64, 13)
    # transposed copies: every operand reaches the product with permuted strides
    a = ptl.tensor(np.ascontiguousarray(an.T)).permute(*reversed(range(len(sa))))
    b = ptl.tensor(np.ascontiguousarray(bn.T)).permute(*reversed(range(len(sb))))
    assert_close(a @ b, np.matmul(an, bn), dtype=ptl.float64)


def test_matmul_strided_batches_gradcheck():
    g = np.random.default_rng(14)
    q = heads(ptl.tensor(g.standard_normal((2, 3, 4))), 2, 3, 2, 2).detach().requires_grad_()
    k = heads(ptl.tensor(g.standard_normal((2, 5, 4))), 2, 5, 2, 2).detach().requires_grad_()
    fn = lambda x, y: x @ y.transpose(-2, -1)  # noqa: E731
    assert ptl.autograd.gradcheck(fn, (q, k))
    assert ptl.autograd.gradgradcheck(fn, (q, k))


def test_matmul_strided_batches_refuses_like_bmm():
    a, b = ptl.randn(2, 3, 4, 5).transpose(1, 2), ptl.randn(2, 4, 6, 2)
    with pytest.raises(RuntimeError, match=r"Expected size for first two dimensions of batch2 "
                                           r"tensor to be: \[8, 5\] but got: \[8, 6\]\."):
        a @ b
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        a @ b[:, :, :5].double()
