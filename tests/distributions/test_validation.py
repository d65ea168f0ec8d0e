"""Argument and sample validation of pytorchlite.distributions (PyTorch's ValueError texts),
Distribution.set_default_validate_args, the reprs, expand, and the constraints' checks.
The literal texts run without torch; the torch_ref tests compare with live PyTorch."""
import re

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.distributions import (Bernoulli, Beta, Categorical, Dirichlet, Distribution,
                                       Gamma, Independent, Normal, Uniform, constraints)
from helpers import torch, torch_ref


def raises(exc, msg):
    return pytest.raises(exc, match=re.escape(msg))


def test_parameter_outside_its_constraint():
    with raises(ValueError, "Expected parameter scale (Tensor of shape (3,)) of distribution "
                "Normal(loc: torch.Size([3]), scale: torch.Size([3])) to satisfy the "
                "constraint GreaterThan(lower_bound=0.0), but found invalid values:\n"
                "tensor([-1., -1., -1.])"):
        Normal(ptl.zeros(3), -ptl.ones(3))
    with raises(ValueError, "Expected parameter probs (Tensor of shape (1,)) of distribution "
                "Bernoulli(probs: tensor([1.5000])) to satisfy the constraint "
                "Interval(lower_bound=0.0, upper_bound=1.0), but found invalid values:\n"
                "tensor([1.5000])"):
        Bernoulli(ptl.tensor([1.5]))
    with raises(ValueError, "Expected parameter low (Tensor of shape ()) of distribution "
                "Uniform(low: 1.0, high: 0.0) to satisfy the constraint "
                "LessThan(upper_bound=0.0), but found invalid values:\n1.0"):
        Uniform(1.0, 0.0)
    with raises(ValueError, "to satisfy the constraint IndependentConstraint(GreaterThan("
                "lower_bound=0.0), 1)"):
        Dirichlet(ptl.tensor([1.0, -1.0]))
    with raises(ValueError, "Expected parameter concentration (Tensor of shape (1, 2)) of "
                "distribution Dirichlet(concentration: torch.Size([1, 2]))"):
        Beta(ptl.tensor([-1.0]), ptl.tensor([1.0]))
    with raises(ValueError, "Expected parameter rate"):
        Gamma(ptl.tensor([1.0]), ptl.tensor([0.0]))


def test_value_outside_the_support():
    with raises(ValueError, "Expected value argument (Tensor of shape (1,)) to be within the "
                "support (Real()) of the distribution Normal(loc: 0.0, scale: 1.0), but found "
                "invalid values:\ntensor([nan])"):
        Normal(0.0, 1.0).log_prob(ptl.tensor([float("nan")]))
    with raises(ValueError, "to be within the support (IntegerInterval(lower_bound=0, "
                "upper_bound=1)) of the distribution Categorical(probs: torch.Size([1, 2]))"):
        Categorical(ptl.tensor([[0.2, 0.8]])).log_prob(ptl.tensor([3]))
    with raises(ValueError, "to be within the support (GreaterThanEq(lower_bound=0.0))"):
        Gamma(1.0, 1.0).log_prob(ptl.tensor(-1.0))
    with raises(ValueError, "to be within the support (Simplex())"):
        Dirichlet(ptl.ones(3)).log_prob(ptl.tensor([0.5, 0.5, 0.5]))


def test_value_shape_and_type():
    with raises(ValueError, "Value is not broadcastable with batch_shape+event_shape: "
                "torch.Size([2]) vs torch.Size([3])."):
        Normal(ptl.zeros(3), ptl.ones(3)).log_prob(ptl.zeros(2))
    with raises(ValueError, "The right-most size of value must match event_shape: "
                "torch.Size([2]) vs torch.Size([3])."):
        Dirichlet(ptl.ones(3)).log_prob(ptl.ones(2) / 2)
    with raises(ValueError, "The value argument to log_prob must be a Tensor"):
        Normal(0.0, 1.0).log_prob(0.5)


def test_constructor_errors():
    with raises(ValueError, "Either `probs` or `logits` must be specified, but not both."):
        Bernoulli()
    with raises(ValueError, "Either `probs` or `logits` must be specified, but not both."):
        Categorical(ptl.ones(2), ptl.ones(2))
    with raises(ValueError, "`probs` parameter must be at least one-dimensional."):
        Categorical(ptl.tensor(0.5))
    with raises(ValueError, "`logits` parameter must be at least one-dimensional."):
        Categorical(logits=ptl.tensor(0.5))
    with raises(ValueError, "`concentration` parameter must be at least one-dimensional."):
        Dirichlet(ptl.tensor(1.0))
    with raises(ValueError, "Expected reinterpreted_batch_ndims <= "
                "len(base_distribution.batch_shape), actual 1 vs 0"):
        Independent(Normal(0.0, 1.0), 1)
    with raises(ValueError, "Input arguments must all be instances of numbers.Number"):
        Normal("a", 1.0)


def test_validate_args_off_and_default():
    d = Normal(ptl.zeros(2), -ptl.ones(2), validate_args=False)
    assert np.isnan(d.log_prob(ptl.zeros(2)).numpy()).all()
    Normal(0.0, 1.0, validate_args=False).log_prob(ptl.tensor(float("nan")))
    try:
        Distribution.set_default_validate_args(False)
        Normal(ptl.zeros(2), -ptl.ones(2))
        assert Normal(0.0, 1.0)._validate_args is False
        assert Normal(0.0, -1.0, validate_args=False)._validate_args is False
        with pytest.raises(ValueError):
            Normal(0.0, -1.0, validate_args=True)
    finally:
        Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        Normal(ptl.zeros(2), -ptl.ones(2))
    with pytest.raises(ValueError):
        Distribution.set_default_validate_args(3)


def test_reprs():
    assert repr(Normal(ptl.zeros(3), ptl.ones(3))) == \
        "Normal(loc: torch.Size([3]), scale: torch.Size([3]))"
    assert repr(Normal(0.0, 1.0)) == "Normal(loc: 0.0, scale: 1.0)"
    assert repr(Gamma(ptl.tensor([-1.0]), 1.0, validate_args=False)) == \
        "Gamma(concentration: tensor([-1.]), rate: tensor([1.]))"
    assert repr(Categorical(logits=ptl.ones(2))) == "Categorical(logits: torch.Size([2]))"
    assert repr(Beta(2.0, 3.0)) == "Beta()"
    assert repr(Independent(Normal(ptl.zeros(2, 3), ptl.ones(3)), 1)) == \
        "Independent(Normal(loc: torch.Size([2, 3]), scale: torch.Size([2, 3])), 1)"
    assert repr(constraints.real_vector) == "IndependentConstraint(Real(), 1)"
    assert repr(constraints.half_open_interval(0.0, 1.0)) == \
        "HalfOpenInterval(lower_bound=0.0, upper_bound=1.0)"
    assert repr(Uniform(0.0, 2.0).support) == "Interval(lower_bound=0.0, upper_bound=2.0)"


def test_expand():
    d = Normal(ptl.zeros(3), ptl.ones(3)).expand((2, 3))
    assert d.batch_shape == ptl.Size([2, 3]) and d.sample().shape == ptl.Size([2, 3])
    c = Categorical(ptl.ones(2, 3)).expand((4, 2))
    assert c.batch_shape == ptl.Size([4, 2]) and c.param_shape == ptl.Size([4, 2, 3])
    b = Beta(ptl.tensor([2.0]), ptl.tensor([3.0])).expand((5,))
    assert b.batch_shape == ptl.Size([5]) and b.rsample().shape == ptl.Size([5])
    i = Independent(Normal(ptl.zeros(3), ptl.ones(3)), 1).expand((4,))
    assert i.batch_shape == ptl.Size([4]) and i.event_shape == ptl.Size([3])
    for d in (Uniform(0.0, 1.0), Gamma(1.0, 2.0), Bernoulli(logits=ptl.tensor(0.3)),
              Dirichlet(ptl.ones(3))):
        e = d.expand((2,))
        assert e.batch_shape == ptl.Size([2]) and e.event_shape == d.event_shape
        assert e.log_prob(e.sample()).shape == ptl.Size([2])


def test_constraint_checks():
    x = ptl.tensor([-1.0, 0.0, 0.5, 1.0, 2.0, float("nan")])
    np.testing.assert_array_equal(constraints.real.check(x).numpy(), [1, 1, 1, 1, 1, 0])
    np.testing.assert_array_equal(constraints.positive.check(x).numpy(), [0, 0, 1, 1, 1, 0])
    np.testing.assert_array_equal(constraints.nonnegative.check(x).numpy(), [0, 1, 1, 1, 1, 0])
    np.testing.assert_array_equal(constraints.unit_interval.check(x).numpy(), [0, 1, 1, 1, 0, 0])
    np.testing.assert_array_equal(constraints.half_open_interval(0, 1).check(x).numpy(),
                                  [0, 1, 1, 0, 0, 0])
    np.testing.assert_array_equal(constraints.boolean.check(x).numpy(), [0, 1, 0, 1, 0, 0])
    np.testing.assert_array_equal(constraints.integer_interval(0, 1).check(x).numpy(),
                                  [0, 1, 0, 1, 0, 0])
    s = ptl.tensor([[0.2, 0.8], [0.5, 0.6], [-0.1, 1.1]])
    np.testing.assert_array_equal(constraints.simplex.check(s).numpy(), [1, 0, 0])
    np.testing.assert_array_equal(constraints.real_vector.check(s).numpy(), [1, 1, 1])
    m = ptl.tensor([[[1.0, 0.0], [2.0, 3.0]], [[1.0, 1.0], [0.0, 1.0]], [[-1.0, 0.0], [0.0, 1.0]]])
    np.testing.assert_array_equal(constraints.lower_cholesky.check(m).numpy(), [1, 0, 0])
    assert constraints.real_vector.event_dim == 1 and constraints.lower_cholesky.event_dim == 2
    assert constraints.boolean.is_discrete and not constraints.real.is_discrete
    assert constraints.is_dependent(constraints.dependent)
    with pytest.raises(ValueError, match="Cannot determine validity of dependent constraint"):
        constraints.dependent.check(x)
    assert constraints.is_dependent(Uniform.support)


@torch_ref
def test_messages_and_reprs_match_torch():
    cases = [
        lambda D, t: D.Normal(t.zeros(3), -t.ones(3)),
        lambda D, t: D.Normal(0.0, 1.0).log_prob(t.tensor([float("nan")])),
        lambda D, t: D.Categorical(t.tensor([[0.2, 0.8]])).log_prob(t.tensor([3])),
        lambda D, t: D.Uniform(1.0, 0.0),
        lambda D, t: D.Gamma(t.tensor([-1.0]), 1.0),
        lambda D, t: D.Bernoulli(t.tensor([1.5])),
        lambda D, t: D.Dirichlet(t.ones(3)).log_prob(t.ones(2) / 2),
        lambda D, t: D.Independent(D.Normal(0.0, 1.0), 1),
        lambda D, t: D.Categorical(t.tensor(0.5)),
    ]
    import torch.distributions as TD
    import pytorchlite.distributions as PD
    for case in cases:
        with pytest.raises(ValueError) as want:
            case(TD, torch)
        with pytest.raises(ValueError) as got:
            case(PD, ptl)
        assert str(got.value) == str(want.value)
    reprs = [
        lambda D, t: D.Beta(2.0, 3.0),
        lambda D, t: D.Categorical(logits=t.tensor([0.2, 0.8])),
        lambda D, t: D.Uniform(0.0, 1.0),
        lambda D, t: D.Gamma(t.tensor(2.0), t.tensor([1.0, 2.0])),
        lambda D, t: D.Independent(D.Normal(t.zeros(2, 3), t.ones(3)), 1),
        lambda D, t: D.Uniform(0.0, 1.0).support,
        lambda D, t: D.constraints.integer_interval(0, 3),
        lambda D, t: D.constraints.nonnegative_integer,
        lambda D, t: D.constraints.positive_definite,
    ]
    for r in reprs:
        assert repr(r(PD, ptl)) == repr(r(TD, torch))
