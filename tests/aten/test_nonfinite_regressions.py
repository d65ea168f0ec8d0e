"""Regressions found by the non-finite sweep against PyTorch (test_nonfinite_vs_torch.py), each
checked here without torch: against NumPy in float64 or PyTorch's known value and message."""
import math

import numpy as np
import pytest

import pytorchlite as ptl
from helpers import num_threads

HUGE = [1e308, 0.5, -1.0, 0.25, 1.5]


@pytest.mark.parametrize("n", [5, 17, 257, 2049, 4099])
@pytest.mark.parametrize("threads", [1, 2])
def test_var_of_huge_values_is_inf_not_nan(n, threads):
    # var_combine's first part multiplied delta * delta (inf) by a count of 0: nan
    a = np.random.default_rng(n).uniform(-2, 2, (3, n))
    a[0, 0] = a[1, n // 2] = a[2, n - 1] = 1e308
    with num_threads(threads):
        for x, dim in ((ptl.tensor(a), 1), (ptl.tensor(a.T.copy()), 0), (ptl.tensor(a), None)):
            v = ptl.var(x) if dim is None else ptl.var(x, dim)
            assert np.all(np.isposinf(v.numpy())), (dim, v)
            s = ptl.std(x) if dim is None else ptl.std(x, dim)
            assert np.all(np.isposinf(s.numpy())), (dim, s)


@pytest.mark.parametrize("n", [5, 64, 2049])
@pytest.mark.parametrize("threads", [1, 2])
def test_var_mean_of_values_whose_sum_overflows(n, threads):
    # the mean of a row whose sum overflows is finite (PyTorch's Welford mean): the block's
    # mean, and the weight n / total taken before delta * n
    a = np.random.default_rng(n).uniform(-2, 2, (2, n))
    a[:, 0] = a[:, -1] = 1e308
    exact = (a / n).sum(axis=1)
    with num_threads(threads):
        var, mean = ptl.var_mean(ptl.tensor(a), 1)
        np.testing.assert_allclose(mean.numpy(), exact, rtol=1e-12)
        assert np.all(np.isposinf(var.numpy()))
        var, mean = ptl.var_mean(ptl.tensor(a))
        np.testing.assert_allclose(mean.numpy(), exact.mean(), rtol=1e-12)


def test_var_of_one_huge_row():
    assert math.isinf(ptl.var(ptl.tensor(HUGE, dtype=ptl.float64)).item())


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
def test_batch_norm_with_nan_gives_nan_statistics(dtype):
    # the biased variance was clamped by v > 0 ? v : 0, which made nan 0: invstd 1 / sqrt(eps)
    a = np.random.default_rng(0).uniform(-2, 2, (4, 3, 5))
    a[1, 1, 2] = np.nan
    x = ptl.tensor(a, dtype=dtype)
    rm, rv = ptl.zeros(3, dtype=dtype), ptl.ones(3, dtype=dtype)
    out, save_mean, save_invstd = ptl.ops.aten.native_batch_norm(
        x, None, None, rm, rv, True, 0.1, 1e-5)
    assert np.isnan(save_invstd.numpy()[1]) and np.isnan(rv.numpy()[1])
    assert np.all(np.isnan(out.numpy()[:, 1]))
    for c in (0, 2):
        ref = a[:, c]
        np.testing.assert_allclose(out.numpy()[:, c], (ref - ref.mean()) / np.sqrt(
            ref.var() + 1e-5), rtol=1e-4 if dtype == ptl.float32 else 1e-9, atol=1e-5)


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
def test_group_norm_with_nan_gives_nan_rstd(dtype):
    a = np.random.default_rng(0).uniform(-2, 2, (2, 4, 3))
    a[0, 0, 0] = np.nan
    out, mean, rstd = ptl.ops.aten.native_group_norm(
        ptl.tensor(a, dtype=dtype), None, None, 2, 4, 3, 2, 1e-5)
    assert np.isnan(rstd.numpy()[0, 0]) and np.all(np.isfinite(rstd.numpy().ravel()[1:]))
    assert np.all(np.isnan(out.numpy()[0, :2]))
    assert np.all(np.isfinite(out.numpy()[0, 2:])) and np.all(np.isfinite(out.numpy()[1]))


@pytest.mark.parametrize("target", [np.nan, -0.5, 1.5])
def test_binary_cross_entropy_refuses_a_target_outside_0_1(target):
    x = ptl.tensor([0.2, 0.5, 0.7], dtype=ptl.float64)
    t = ptl.tensor([0.5, target, 1.0], dtype=ptl.float64)
    with pytest.raises(RuntimeError, match="all elements of target should be between 0 and 1"):
        ptl.nn.functional.binary_cross_entropy(x, t)


@pytest.mark.parametrize("values, lo, hi", [([0.5, np.nan, 1.0], 0, 0),
                                            ([np.nan, 0.5, 1.0], 0, 0),
                                            ([0.5, np.inf, 1.0], 0, 0),
                                            ([0.5, 0.7, 1.0], -np.inf, 1),
                                            ([0.5, 0.7, 1.0], 0, np.nan)])
def test_histc_refuses_a_range_that_is_not_finite(values, lo, hi):
    # the data's range skipped nan after the first element (PyTorch's propagates it)
    x = ptl.tensor(values, dtype=ptl.float64)
    with pytest.raises(RuntimeError, match=r"torch.histc: range of \[.*\] is not finite"):
        ptl.histc(x, 4, lo, hi)
