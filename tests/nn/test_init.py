"""nn.init: every initialiser against its definition (distributions by Kolmogorov-Smirnov
tests against scipy.stats with the bounds and scales PyTorch's documentation gives; exact
values for constant/eye/dirac; Q^T Q = gain^2 I for orthogonal_), generators, PyTorch's
errors and warnings (messages checked against PyTorch 2.13), and the deprecated names."""
import math
import warnings

import numpy as np
import pytest
from scipy import stats

import pytorchlite as ptl
from pytorchlite.nn import init


@pytest.mark.parametrize("name, param, gain", [
    ("linear", None, 1.0), ("conv1d", None, 1.0), ("conv2d", None, 1.0),
    ("conv3d", None, 1.0), ("conv_transpose1d", None, 1.0), ("conv_transpose2d", None, 1.0),
    ("conv_transpose3d", None, 1.0), ("sigmoid", None, 1.0), ("tanh", None, 5 / 3),
    ("relu", None, math.sqrt(2)), ("leaky_relu", None, math.sqrt(2 / (1 + 0.01 ** 2))),
    ("leaky_relu", 0.2, math.sqrt(2 / 1.04)), ("leaky_relu", 2, math.sqrt(2 / 5)),
    ("selu", None, 0.75)])
def test_calculate_gain(name, param, gain):
    assert init.calculate_gain(name, param) == pytest.approx(gain, rel=1e-15)


@pytest.mark.parametrize("shape, fans", [((5, 3), (3, 5)), ((4, 3, 5, 6), (90, 120)),
                                         ((2, 7, 3), (21, 6))])
def test_fans(shape, fans):
    assert init._calculate_fan_in_and_fan_out(ptl.empty(shape)) == fans


def _ks(values, dist, *args):
    return stats.kstest(np.asarray(values, np.float64).ravel(), dist, args=args).pvalue


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
def test_distributions(dtype):
    ptl.manual_seed(0)
    w = ptl.empty(200, 100, dtype=dtype)                  # fan_in 100, fan_out 200
    assert _ks(init.uniform_(w, -2, 3).numpy(), "uniform", -2, 5) > 1e-3
    assert _ks(init.normal_(w, 1.5, 0.5).numpy(), "norm", 1.5, 0.5) > 1e-3
    bound = math.sqrt(6 / 300)
    assert _ks(init.xavier_uniform_(w).numpy(), "uniform", -bound, 2 * bound) > 1e-3
    assert _ks(init.xavier_normal_(w, gain=2).numpy(), "norm", 0, 2 * math.sqrt(2 / 300)) > 1e-3
    gain = math.sqrt(2 / (1 + 0.2 ** 2))
    bound = math.sqrt(3) * gain / math.sqrt(100)
    assert _ks(init.kaiming_uniform_(w, a=0.2).numpy(), "uniform", -bound, 2 * bound) > 1e-3
    std = math.sqrt(2) / math.sqrt(200)
    assert _ks(init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu").numpy(),
               "norm", 0, std) > 1e-3
    # the same test rejects a wrong scale
    assert _ks(init.kaiming_normal_(w, mode="fan_in", nonlinearity="relu").numpy(),
               "norm", 0, std) < 1e-6
    t = init.trunc_normal_(w, mean=0.5, std=2.0, a=-1.0, b=3.0).numpy()
    assert t.min() >= -1 and t.max() <= 3
    assert _ks(t, stats.truncnorm(-0.75, 1.25, loc=0.5, scale=2.0).cdf) > 1e-3


def test_exact_initialisers():
    w = ptl.empty(3, 4)
    assert init.constant_(w, 2.5).tolist() == [[2.5] * 4] * 3
    assert init.ones_(w).tolist() == [[1.0] * 4] * 3
    assert init.zeros_(w).tolist() == [[0.0] * 4] * 3
    np.testing.assert_array_equal(init.eye_(w).numpy(), np.eye(3, 4))
    strided = ptl.empty(5, 6)[::2, 1::2]
    np.testing.assert_array_equal(init.eye_(strided).numpy(), np.eye(3))
    for shape, groups in [((4, 4, 3), 1), ((6, 2, 3, 3), 2), ((4, 3, 1, 3, 3), 1),
                          ((2, 5, 3), 1)]:
        d = init.dirac_(ptl.empty(shape), groups=groups).numpy()
        ref = np.zeros(shape)
        per_group = shape[0] // groups
        for g in range(groups):
            for k in range(min(per_group, shape[1])):
                ref[(g * per_group + k, k) + tuple(s // 2 for s in shape[2:])] = 1
        np.testing.assert_array_equal(d, ref)


@pytest.mark.parametrize("shape", [(6, 6), (10, 3), (3, 10), (4, 3, 2), (1, 5), (257, 300)])
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
def test_orthogonal(shape, dtype):
    ptl.manual_seed(1)
    w = init.orthogonal_(ptl.empty(shape, dtype=dtype), gain=1.5)
    m = w.reshape(shape[0], -1).to(ptl.float64).numpy()
    tol = 1e-5 if dtype == ptl.float32 else 1e-12
    if m.shape[0] <= m.shape[1]:
        np.testing.assert_allclose(m @ m.T, 2.25 * np.eye(m.shape[0]), atol=tol * 10)
    else:
        np.testing.assert_allclose(m.T @ m, 2.25 * np.eye(m.shape[1]), atol=tol * 10)
    strided = ptl.zeros(8, 10)[:, ::2]
    init.orthogonal_(strided)
    np.testing.assert_allclose(strided.numpy().T @ strided.numpy(), np.eye(5), atol=1e-5)
    assert init.orthogonal_(ptl.empty(0, 3)).shape == (0, 3)


def test_orthogonal_is_haar_distributed():
    """A Haar-random orthogonal matrix has entries of mean 0 and variance 1/n, and the
    signs of its first column are independent fair coins."""
    ptl.manual_seed(2)
    first = np.array([init.orthogonal_(ptl.empty(4, 4, dtype=ptl.float64))[:, 0].numpy()
                      for _ in range(2000)])
    assert abs(first.mean()) < 0.02 and abs(first.var() - 0.25) < 0.02
    assert abs((first > 0).mean() - 0.5) < 0.03


def test_sparse():
    ptl.manual_seed(3)
    w = init.sparse_(ptl.empty(40, 300), sparsity=0.3, std=0.5).numpy()
    assert ((w == 0).sum(axis=0) >= math.ceil(0.3 * 40)).all()
    nonzero = w[w != 0]
    assert _ks(nonzero, "norm", 0, 0.5) > 1e-3


def test_generator_gives_the_same_values():
    for fn in (init.uniform_, init.normal_, init.xavier_uniform_, init.kaiming_normal_,
               init.trunc_normal_, init.orthogonal_):
        a = fn(ptl.empty(5, 7), generator=ptl.Generator().manual_seed(11))
        b = fn(ptl.empty(5, 7), generator=ptl.Generator().manual_seed(11))
        assert ptl.equal(a, b), fn.__name__


def test_initialisers_do_not_record_autograd():
    w = ptl.nn.Parameter(ptl.empty(3, 3))
    for fn in (init.uniform_, init.eye_, init.orthogonal_, init.kaiming_uniform_):
        assert fn(w) is w and w.grad_fn is None and w.requires_grad


@pytest.mark.parametrize("call, kind, message", [
    (lambda: init.calculate_gain("foo"), ValueError, "Unsupported nonlinearity foo"),
    (lambda: init.calculate_gain("leaky_relu", "x"), ValueError,
     "negative_slope x not a valid number"),
    (lambda: init.calculate_gain("leaky_relu", True), ValueError,
     "negative_slope True not a valid number"),
    (lambda: init.xavier_uniform_(ptl.empty(3)), ValueError,
     "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions"),
    (lambda: init.kaiming_uniform_(ptl.empty(3, 4), mode="bad"), ValueError,
     "Mode bad not supported, please use one of ['fan_in', 'fan_out']"),
    (lambda: init.eye_(ptl.empty(3, 4, 5)), ValueError,
     "Only tensors with 2 dimensions are supported"),
    (lambda: init.dirac_(ptl.empty(3, 4)), ValueError,
     "Only tensors with 3, 4, or 5 dimensions are supported"),
    (lambda: init.dirac_(ptl.empty(6, 4, 3), groups=4), ValueError,
     "dim 0 must be divisible by groups"),
    (lambda: init.orthogonal_(ptl.empty(3)), ValueError,
     "Only tensors with 2 or more dimensions are supported"),
    (lambda: init.sparse_(ptl.empty(3, 4, 5), 0.1), ValueError,
     "Only tensors with 2 dimensions are supported"),
    (lambda: init.uniform_(ptl.empty(3), 2, 1), RuntimeError,
     "uniform_ expects to return a [from, to) range, but found from=2 > to=1"),
    (lambda: init.normal_(ptl.empty(3), 0, -1), RuntimeError,
     "normal expects std >= 0.0, but found std -1"),
    (lambda: init.kaiming_uniform_(ptl.empty(2, 3), nonlinearity="bad"), ValueError,
     "Unsupported nonlinearity bad"),
])
def test_errors(call, kind, message):
    with pytest.raises(kind) as info:
        call()
    assert str(info.value) == message


def test_warnings():
    for fn in (init.kaiming_uniform_, init.kaiming_normal_):
        with pytest.warns(UserWarning, match="^Initializing zero-element tensors is a no-op$"):
            assert fn(ptl.empty(0, 4)).shape == (0, 4)
    with pytest.warns(UserWarning, match=r"mean is more than 2 std from \[a, b\] in "
                      r"nn.init.trunc_normal_. The distribution of values may be incorrect."):
        init.trunc_normal_(ptl.empty(3), mean=5, std=1, a=-2, b=2)


@pytest.mark.parametrize("old", ["uniform", "normal", "constant", "eye", "dirac",
                                 "xavier_uniform", "xavier_normal", "kaiming_uniform",
                                 "kaiming_normal", "orthogonal", "sparse"])
def test_deprecated_names(old):
    args = {"constant": (0.5,), "sparse": (0.2,)}.get(old, ())
    shape = (4, 3, 3) if old == "dirac" else (4, 3)
    with pytest.warns(FutureWarning, match=rf"^`nn.init.{old}` is now deprecated in favor of "
                      rf"`nn.init.{old}_`.$"):
        w = getattr(init, old)(ptl.empty(shape), *args)
    assert w.shape == shape
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        getattr(init, old + "_")(ptl.empty(shape), *args)
