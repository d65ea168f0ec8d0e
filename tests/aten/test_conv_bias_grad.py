"""The convolution's bias gradient (conv.c's bias_grad: the sum of the output gradient over
the batch and the positions, in double, per channel) against NumPy in float64, on one thread
and on two: the channels split over the threads once they hold 2 * PTL_GRAIN_SIZE elements
(the grain is PTL_GRAIN_SIZE // (n * l + 1) + 1 channels), and the split changes no bit."""
import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn.functional as F

GRAIN = 32768


def bias_grad(conv, x, w, b, g, nthreads):
    old = ptl.get_num_threads()
    ptl.set_num_threads(nthreads)
    try:
        bt = ptl.tensor(b, requires_grad=True)
        conv(ptl.tensor(x), ptl.tensor(w), bt).backward(ptl.tensor(g))
        return bt.grad.numpy()
    finally:
        ptl.set_num_threads(old)


# conv1d with a 1-wide kernel: l = L exactly.  (n, c, L): the channels' elements n*L*c below,
# at and above the split; a grain of one channel (n*L = GRAIN), of 2 and of 3 channels
# (c = 2*grain - 1 runs inline, c = 2*grain splits, c = 2*grain + 1 splits unevenly).
CASES_1D = [(2, 3, 100), (1, 2, GRAIN), (2, 2, GRAIN // 2 - 1), (1, 3, GRAIN // 2),
            (1, 4, GRAIN // 2), (1, 5, GRAIN // 3), (1, 6, GRAIN // 3), (1, 7, GRAIN // 3),
            (1, 1, 3 * GRAIN), (4, 33, 700), (0, 4, 10)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n,c,length", CASES_1D)
def test_conv1d_bias_grad_across_the_split(n, c, length, dtype):
    rng = np.random.default_rng(n * 1000 + c * 10 + length)
    x = rng.standard_normal((n, 2, length)).astype(dtype)
    w = rng.standard_normal((c, 2, 1)).astype(dtype)
    b = rng.standard_normal(c).astype(dtype)
    g = rng.standard_normal((n, c, length)).astype(dtype)
    ref = g.astype(np.float64).sum(axis=(0, 2))
    one, two = (bias_grad(F.conv1d, x, w, b, g, k) for k in (1, 2))
    assert one.dtype == dtype and one.shape == (c,)
    np.testing.assert_array_equal(one, two)
    tol = 1e-4 if dtype == np.float32 else 1e-11
    np.testing.assert_allclose(one, ref, rtol=tol, atol=tol * np.sqrt(max(n * length, 1)))


@pytest.mark.parametrize("stride,padding", [(1, 1), (2, 0)])
def test_conv2d_bias_grad_non_contiguous_gradient(stride, padding):
    # conv 3->32 on 32x32 (a benchmark row) with a transposed, non-contiguous gradient
    rng = np.random.default_rng(7)
    x = rng.standard_normal((8, 3, 32, 32)).astype(np.float32)
    w = rng.standard_normal((32, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(32).astype(np.float32)
    ho = (32 + 2 * padding - 3) // stride + 1
    gt = rng.standard_normal((8, 32, ho, ho)).astype(np.float32)

    def run(nthreads):
        old = ptl.get_num_threads()
        ptl.set_num_threads(nthreads)
        try:
            bt = ptl.tensor(b, requires_grad=True)
            y = F.conv2d(ptl.tensor(x), ptl.tensor(w), bt, stride=stride, padding=padding)
            y.backward(ptl.tensor(gt.transpose(0, 1, 3, 2).copy()).transpose(2, 3))
            return bt.grad.numpy()
        finally:
            ptl.set_num_threads(old)
    one, two = run(1), run(2)
    np.testing.assert_array_equal(one, two)
    np.testing.assert_allclose(one, gt.astype(np.float64).sum(axis=(0, 2, 3)), rtol=1e-4,
                               atol=1e-3)
