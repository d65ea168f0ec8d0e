"""pytorchlite.special (pytorchlite/special.py): the names map to the operators and agree
with scipy.special in float64; logit's eps clamp; the torch_ref test checks that the
functions of torch.special we provide give the same values."""
import numpy as np
import pytest
from scipy import special as sp

import pytorchlite as ptl
from helpers import assert_close, torch, torch_ref

X = np.array([0.1, 0.5, 1.0, 2.5, 7.0, 30.0])


@pytest.mark.parametrize("name, ref", [
    ("gammaln", sp.gammaln), ("digamma", sp.digamma), ("psi", sp.digamma),
    ("erf", sp.erf), ("expit", sp.expit), ("exp2", sp.exp2), ("expm1", np.expm1),
    ("log1p", np.log1p)])
def test_against_scipy(name, ref):
    assert_close(getattr(ptl.special, name)(ptl.tensor(X)), ref(X), rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("n", [0, 1, 2, 5])
def test_polygamma(n):
    assert_close(ptl.special.polygamma(n, ptl.tensor(X)), sp.polygamma(n, X), rtol=1e-12,
                 atol=1e-14)
    assert_close(ptl.tensor(X).polygamma(n), sp.polygamma(n, X), rtol=1e-12, atol=1e-14)


def test_poles_and_negative_arguments():
    x = ptl.tensor([0.0, -0.0, -1.0, -2.5, -0.5])
    got = ptl.digamma(x.double()).numpy()
    assert got[0] == -np.inf and got[1] == np.inf and np.isnan(got[2])
    assert_close(ptl.digamma(ptl.tensor([-2.5, -0.5], dtype=ptl.float64)),
                 sp.digamma([-2.5, -0.5]), rtol=1e-13)
    assert_close(ptl.lgamma(ptl.tensor([-2.5, -0.5, 0.0], dtype=ptl.float64)),
                 sp.gammaln([-2.5, -0.5, 0.0]), rtol=1e-13)
    assert_close(ptl.polygamma(1, ptl.tensor([-2.5, -0.5], dtype=ptl.float64)),
                 sp.polygamma(1, [-2.5, -0.5]), rtol=1e-12)


def test_float32_and_integer_inputs():
    assert_close(ptl.lgamma(ptl.tensor(X, dtype=ptl.float32)), sp.gammaln(X), rtol=1e-5)
    assert_close(ptl.digamma(ptl.tensor(X, dtype=ptl.float32)), sp.digamma(X), rtol=1e-5,
                 atol=1e-6)
    assert ptl.lgamma(ptl.tensor([1, 2, 3])).dtype == ptl.float32
    assert_close(ptl.polygamma(1, ptl.tensor([1, 2])), sp.polygamma(1, [1, 2]), rtol=1e-6)


def test_logit():
    p = np.array([0.01, 0.25, 0.5, 0.9])
    assert_close(ptl.special.logit(ptl.tensor(p)), sp.logit(p), rtol=1e-13)
    got = ptl.special.logit(ptl.tensor([0.0, 1.0], dtype=ptl.float64), eps=1e-6)
    assert_close(got, sp.logit([1e-6, 1 - 1e-6]), rtol=1e-9)


def test_polygamma_negative_order():
    with pytest.raises(RuntimeError, match="polygamma\\(n, x\\) does not support negative n."):
        ptl.polygamma(-1, ptl.ones(2))


@torch_ref
def test_matches_torch_special():
    x64 = torch.tensor(X)
    for name in ("gammaln", "digamma", "psi", "erf", "expit", "exp2", "expm1", "log1p",
                 "logit"):
        assert_close(getattr(ptl.special, name)(ptl.tensor(X / 31)),
                     getattr(torch.special, name)(x64 / 31).numpy(), rtol=1e-12, atol=1e-14)
    assert_close(ptl.special.polygamma(3, ptl.tensor(X)),
                 torch.special.polygamma(3, x64).numpy(), rtol=1e-10)
    assert ptl.polygamma(1, ptl.tensor(X, requires_grad=True)).grad_fn.name() == \
        torch.polygamma(1, x64.requires_grad_()).grad_fn.name()
