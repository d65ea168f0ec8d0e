"""Random fills of complex tensors: rand / rand_like / uniform_ draw each part uniformly,
randn / randn_like / normal_ draw each part from a normal of std / sqrt(2) (so E|z|^2 = std^2,
as PyTorch), drawn as the real view's interleaved parts (the same numbers as the real tensor of
twice the length); non-contiguous and size-0 targets; and PyTorch's errors for the random ops
that take no complex dtype."""
import math

import numpy as np
import pytest
from scipy import stats

import pytorchlite as ptl

COMPLEX = [ptl.complex64, ptl.complex128]


def _parts(z):
    return ptl.view_as_real(z).to(ptl.float64).numpy().reshape(-1, 2)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_randn_parts_are_normal_with_half_the_variance(dtype):
    ptl.manual_seed(1)
    z = ptl.randn(40000, dtype=dtype)
    assert z.dtype == dtype and z.shape == (40000,)
    parts = _parts(z)
    for k in range(2):
        assert stats.kstest(parts[:, k], "norm", args=(0, math.sqrt(0.5))).pvalue > 1e-3
    # a wrong scale is caught by the same test
    assert stats.kstest(parts[:, 0], "norm", args=(0, 1)).pvalue < 1e-6
    assert abs(np.mean(np.abs(parts[:, 0] + 1j * parts[:, 1]) ** 2) - 1) < 0.03
    assert abs(np.corrcoef(parts[:, 0], parts[:, 1])[0, 1]) < 0.03


@pytest.mark.parametrize("dtype", COMPLEX)
def test_rand_parts_are_uniform(dtype):
    ptl.manual_seed(2)
    parts = _parts(ptl.rand(200, 100, dtype=dtype))
    for k in range(2):
        assert stats.kstest(parts[:, k], "uniform").pvalue > 1e-3
    assert parts.min() >= 0 and parts.max() < 1


def test_same_numbers_as_the_real_view():
    ptl.manual_seed(3)
    z = ptl.randn(7, 3, dtype=ptl.complex128)
    ptl.manual_seed(3)
    x = ptl.randn(42, dtype=ptl.float64) * math.sqrt(0.5)
    np.testing.assert_allclose(ptl.view_as_real(z).flatten().numpy(), x.numpy(), rtol=1e-15)
    ptl.manual_seed(4)
    u = ptl.rand(5, dtype=ptl.complex64)
    ptl.manual_seed(4)
    np.testing.assert_array_equal(ptl.view_as_real(u).flatten().numpy(), ptl.rand(10).numpy())


@pytest.mark.parametrize("dtype", COMPLEX)
def test_in_place_fills_and_likes(dtype):
    ptl.manual_seed(5)
    base = ptl.zeros(3000, 4, dtype=dtype)
    column = base[:, 1]                        # non-contiguous: the other columns stay 0
    column.normal_(2.0, 3.0)
    parts = _parts(column)
    assert stats.kstest(parts[:, 0], "norm", args=(2, 3 / math.sqrt(2))).pvalue > 1e-3
    assert stats.kstest(parts[:, 1], "norm", args=(2, 3 / math.sqrt(2))).pvalue > 1e-3
    assert ptl.equal(base[:, 0], ptl.zeros(3000, dtype=dtype))
    column.uniform_(-1.0, 3.0)
    parts = _parts(column)
    assert stats.kstest(parts[:, 1], "uniform", args=(-1, 4)).pvalue > 1e-3
    like = ptl.randn_like(column)
    assert like.dtype == dtype and like.shape == (3000,)
    assert ptl.rand_like(column).dtype == dtype
    empty = ptl.randn(0, 3, dtype=dtype)
    assert empty.shape == (0, 3)
    assert ptl.randn((), dtype=dtype).shape == ()


def test_errors_match_pytorch():
    z = ptl.empty(2, dtype=ptl.complex64)
    continuous = "is a continuous probability distribution. dtype must be a floating point"
    with pytest.raises(RuntimeError, match="Exponential distribution " + continuous +
                       " but you specified ComplexFloat"):
        z.exponential_()
    with pytest.raises(RuntimeError, match=r"Cauchy distribution " + continuous +
                       r" but you specified c10::complex<float>"):
        z.cauchy_()
    with pytest.raises(NotImplementedError,
                       match="\"bernoulli_scalar_cpu_\" not implemented for 'ComplexFloat'"):
        z.bernoulli_(0.5)
    with pytest.raises(NotImplementedError,
                       match="\"random_kernel_cpu\" not implemented for 'ComplexFloat'"):
        z.random_()
    bounds = "check_random_bounds handles only integral, floating-point and boolean types"
    with pytest.raises(RuntimeError, match=bounds):
        z.random_(0, 5)
    with pytest.raises(RuntimeError, match=bounds):
        ptl.randint(0, 3, (2,), dtype=ptl.complex128)
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0, but found std -1"):
        z.normal_(0.0, -1.0)
    with pytest.raises(RuntimeError, match="uniform_ expects to return a"):
        z.uniform_(1.0, 0.0)


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("form", ["Tensor_float", "Tensor_Tensor", "broadcast"])
def test_normal_of_a_complex_mean(dtype, form):
    """normal(complex mean, std): mean + std times a standard complex draw (each part of
    variance 1/2, normal_'s), in mean's dtype and the broadcast shape, as PyTorch's."""
    n = 100000
    mean = ptl.full((n,), 1 + 2j, dtype=dtype)
    std = ptl.full((n,), 2.0, dtype=ptl.float64)
    g = ptl.Generator().manual_seed(3)
    if form == "Tensor_float":
        z = ptl.normal(mean, 2.0, generator=g)
    elif form == "Tensor_Tensor":
        z = ptl.normal(mean, std, generator=g)
    else:
        z = ptl.normal(mean[:1], std, generator=g)
    assert z.dtype == dtype and tuple(z.shape) == (n,)
    p = _parts(z)
    for k, centre in enumerate((1.0, 2.0)):
        assert stats.kstest((p[:, k] - centre) / math.sqrt(2.0), "norm").pvalue > 1e-4
    again = ptl.normal(mean[:1] if form == "broadcast" else mean,
                       2.0 if form == "Tensor_float" else std,
                       generator=ptl.Generator().manual_seed(3))
    np.testing.assert_array_equal(again.numpy(), z.numpy())


def test_normal_refuses_a_complex_std_or_a_negative_one():
    m = ptl.zeros(3, dtype=ptl.complex64)
    for call in (lambda: ptl.normal(m, ptl.ones(3, dtype=ptl.complex64)),
                 lambda: ptl.normal(1.0, ptl.ones(3, dtype=ptl.complex64))):
        with pytest.raises(RuntimeError, match="^normal expects standard deviation to be "
                                               "non-complex$"):
            call()
    with pytest.raises(RuntimeError, match="^normal expects std >= 0.0, but found std -1"):
        ptl.normal(m, -1.0)
    with pytest.raises(RuntimeError, match="^normal expects all elements of std >= 0.0$"):
        ptl.normal(m, -ptl.ones(3, dtype=ptl.float64))
