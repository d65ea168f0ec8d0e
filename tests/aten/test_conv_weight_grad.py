"""The convolution weight gradient across every size threshold of its blocking (conv.c's
wgrad, Note [Convolution as GEMM]; gemm.c, Note [GEMM K split]), against a NumPy float64
reference, on one and two threads.

The thresholds: the column buffer holds at most COL_BUDGET = 2**24 elements, so the batch is
cut into chunks of b = 2**24 // (Cin * kvol * Ho * Wo) samples (one chunk, several whole
chunks, a short last chunk, one sample per chunk); each chunk is one GEMM of
(Cout/G) x (Cin/G * kvol) over K = b * Ho * Wo, which splits K when K >= 8192 and the
result has at most 256 * 256 elements, and otherwise runs blocked (several A blocks when
Cout/G > 144, several K blocks) or as a matrix-vector product (Cout/G == 1).

Regression: a one-sample chunk is already contiguous, so the chunk's view of the output
gradient was used with its storage offset dropped and every chunk read sample 0's gradient
(x [2, 32, 72, 72], w [3, 32, 9, 9] gave a weight gradient off by ~100%)."""
import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn.functional as F

COL_BUDGET = 1 << 24


def conv_weight_grad_ref(x, g, k, stride, padding, dilation, groups):
    """d(sum(g * conv2d(x, w)))/dw in float64: gw[o, c, i, j] = sum over n, h, w of
    g[n, o, h, w] * xpad[n, c, h*s + i*d, w*s + j*d], per group."""
    n, cin, _, _ = x.shape
    cout, ho, wo = g.shape[1], g.shape[2], g.shape[3]
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    cpg, opg = cin // groups, cout // groups
    gw = np.zeros((cout, cpg, k, k))
    for grp in range(groups):
        gg = g[:, grp * opg:(grp + 1) * opg]
        xg = xp[:, grp * cpg:(grp + 1) * cpg]
        for i in range(k):
            for j in range(k):
                patch = xg[:, :, i * dilation:i * dilation + stride * (ho - 1) + 1:stride,
                           j * dilation:j * dilation + stride * (wo - 1) + 1:stride]
                gw[grp * opg:(grp + 1) * opg, :, i, j] = np.tensordot(
                    gg, patch, axes=([0, 2, 3], [0, 2, 3]))
    return gw


# (N, Cin, H, Cout, k, stride, padding, dilation, groups, what it crosses)
CASES = [
    (2, 32, 72, 3, 9, 1, 0, 1, 1, "one sample per chunk, two chunks (the reported case)"),
    (4, 32, 72, 3, 9, 1, 0, 1, 1, "one sample per chunk, four chunks"),
    (3, 20, 72, 3, 9, 1, 0, 1, 1, "chunks of 2 + a short last chunk of 1, K split (K=8192)"),
    (4, 20, 72, 3, 9, 1, 0, 1, 1, "two whole chunks of 2 samples, K split (K=8192)"),
    (2, 32, 72, 1, 9, 1, 0, 1, 1, "one sample per chunk, Cout=1: matrix-vector product"),
    (2, 64, 72, 6, 9, 1, 0, 1, 2, "groups=2, one sample per chunk"),
    (2, 32, 76, 3, 9, 2, 4, 1, 1, "stride 2, padding, one sample per chunk"),
    (2, 16, 80, 3, 5, 1, 2, 3, 1, "dilation 3, one chunk of 2 samples"),
    (2, 4, 66, 160, 3, 1, 0, 1, 1, "one chunk, K split with 160 rows (several A blocks)"),
    (2, 48, 66, 160, 3, 1, 0, 1, 1, "one chunk, blocked: m*n > 256*256, several A and K blocks"),
    (5, 3, 40, 8, 3, 1, 1, 1, 1, "one chunk, K below the split"),
]


def chunk_samples(n, cin, ho, k):
    return max(1, min(n, COL_BUDGET // (cin * k * k * ho * ho)))


@pytest.mark.parametrize("case", CASES, ids=[c[-1] for c in CASES])
@pytest.mark.parametrize("dtype", [ptl.float64, ptl.float32])
def test_conv2d_weight_grad_thresholds(case, dtype):
    n, cin, h, cout, k, stride, padding, dilation, groups, _ = case
    gen = np.random.default_rng(n * 1000 + cin)
    x = gen.standard_normal((n, cin, h, h))
    w = gen.standard_normal((cout, cin // groups, k, k))
    ho = (h + 2 * padding - dilation * (k - 1) - 1) // stride + 1
    g = gen.standard_normal((n, cout, ho, ho))
    expected = conv_weight_grad_ref(x, g, k, stride, padding, dilation, groups)
    tol = 1e-10 if dtype == ptl.float64 else 2e-4
    threads = ptl.get_num_threads()
    try:
        for nthreads in (1, 2):
            ptl.set_num_threads(nthreads)
            wt = ptl.tensor(w, dtype=dtype, requires_grad=True)
            y = F.conv2d(ptl.tensor(x, dtype=dtype), wt, stride=stride, padding=padding,
                         dilation=dilation, groups=groups)
            y.backward(ptl.tensor(g, dtype=dtype))
            got = wt.grad.numpy().astype(np.float64)
            err = np.abs(got - expected).max() / np.abs(expected).max()
            assert err < tol, (nthreads, err)
    finally:
        ptl.set_num_threads(threads)


def test_cases_cross_the_chunk_thresholds():
    """The table above reaches each chunking regime (so it cannot pass vacuously)."""
    regimes = set()
    for n, cin, h, _, k, stride, padding, dilation, _, _ in CASES:
        ho = (h + 2 * padding - dilation * (k - 1) - 1) // stride + 1
        b = chunk_samples(n, cin, ho, k)
        regimes.add("one" if b == 1 else "short last" if n % b else "whole" if b < n else "all")
    assert regimes == {"one", "short last", "whole", "all"}


@pytest.mark.parametrize("dtype", [ptl.float64, ptl.float32])
def test_conv_transpose2d_weight_grad_chunked(dtype):
    """The transposed convolution's weight gradient is wgrad with input and output gradient
    swapped: the input x plays the column side, chunked one sample at a time here."""
    gen = np.random.default_rng(7)
    n, cin, h, cout, k = 2, 3, 64, 32, 9
    x = gen.standard_normal((n, cin, h, h))
    w = gen.standard_normal((cin, cout, k, k))
    wt = ptl.tensor(w, dtype=dtype, requires_grad=True)
    y = F.conv_transpose2d(ptl.tensor(x, dtype=dtype), wt)
    g = gen.standard_normal(tuple(y.shape))
    y.backward(ptl.tensor(g, dtype=dtype))
    # y[n, o, h + i, w + j] += x[n, c, h, w] w[c, o, i, j], so
    # gw[c, o, i, j] = sum x[n, c, h, w] g[n, o, h + i, w + j]
    expected = np.zeros((cin, cout, k, k))
    for i in range(k):
        for j in range(k):
            expected[:, :, i, j] = np.tensordot(x, g[:, :, i:i + h, j:j + h],
                                                axes=([0, 2, 3], [0, 2, 3]))
    assert chunk_samples(n, cout, h, k) == 1
    err = np.abs(wt.grad.numpy().astype(np.float64) - expected).max() / np.abs(expected).max()
    assert err < (1e-10 if dtype == ptl.float64 else 2e-4)
