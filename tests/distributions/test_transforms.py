"""pytorchlite.distributions.transforms and the constraint registry: forward/inverse round
trips, log_abs_det_jacobian against the log |det| of a central-difference Jacobian in NumPy
float64, domain/codomain constraints, shapes, caching, equality, the errors (PyTorch's
types and texts), and biject_to / transform_to over every registered constraint.  The
torch_ref tests compare values with live PyTorch."""
import math
import re

import numpy as np
import pytest
from scipy import stats

import pytorchlite as ptl
from pytorchlite.distributions import (AbsTransform, AffineTransform, CatTransform,
                                       ComposeTransform, CorrCholeskyTransform,
                                       CumulativeDistributionTransform, ExpTransform,
                                       IndependentTransform, LowerCholeskyTransform, Normal,
                                       PositiveDefiniteTransform, PowerTransform,
                                       ReshapeTransform, SigmoidTransform, SoftmaxTransform,
                                       SoftplusTransform, StackTransform,
                                       StickBreakingTransform, TanhTransform, Transform,
                                       biject_to, constraints, identity_transform,
                                       transform_to)
from pytorchlite.distributions.utils import tril_matrix_to_vec, vec_to_tril_matrix
from helpers import assert_close, torch, torch_ref


def t64(a):
    return ptl.tensor(np.asarray(a, dtype=np.float64))


def raises(exc, msg):
    return pytest.raises(exc, match="^" + re.escape(msg) + "$")


def fd_jacobian(f, x, h=1e-6):
    """d f(x) / dx by central differences: x a 1-d float64 array, f to a 1-d array."""
    cols = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        cols.append((f(x + e) - f(x - e)) / (2 * h))
    return np.stack(cols, -1)


def elementwise_ladj(t, x, h=1e-6):
    """log |dy/dx| of an elementwise transform by central differences."""
    xp, xm = t64(x + h), t64(x - h)
    return np.log(np.abs((t(xp).numpy() - t(xm).numpy()) / (2 * h)))


RNG = np.random.default_rng(0)

ELEMENTWISE = [
    ("exp", ExpTransform(), lambda s: RNG.normal(size=s), np.exp),
    ("sigmoid", SigmoidTransform(), lambda s: RNG.normal(size=s) * 3,
     lambda x: 1 / (1 + np.exp(-x))),
    ("softplus", SoftplusTransform(), lambda s: RNG.normal(size=s) * 3,
     lambda x: np.log1p(np.exp(x))),
    ("tanh", TanhTransform(), lambda s: RNG.normal(size=s), np.tanh),
    ("power", PowerTransform(t64(2.5)), lambda s: RNG.uniform(0.2, 3, size=s),
     lambda x: x ** 2.5),
    ("power_neg", PowerTransform(t64(-1.5)), lambda s: RNG.uniform(0.2, 3, size=s),
     lambda x: x ** -1.5),
    ("affine", AffineTransform(1.5, -2.0), lambda s: RNG.normal(size=s),
     lambda x: 1.5 - 2.0 * x),
    ("affine_tensor", AffineTransform(t64([1.0, -1.0, 0.5]), t64([0.5, 2.0, -3.0])),
     lambda s: RNG.normal(size=s), lambda x: np.array([1.0, -1.0, 0.5])
     + np.array([0.5, 2.0, -3.0]) * x),
    ("compose", ComposeTransform([AffineTransform(0.5, 2.0), ExpTransform(),
                                  AffineTransform(1.0, 3.0)]),
     lambda s: RNG.normal(size=s), lambda x: 1 + 3 * np.exp(0.5 + 2 * x)),
    ("exp_inv", ExpTransform().inv, lambda s: RNG.uniform(0.1, 5, size=s), np.log),
    ("sigmoid_inv", SigmoidTransform().inv, lambda s: RNG.uniform(0.05, 0.95, size=s),
     lambda y: np.log(y / (1 - y))),
    ("cdf", CumulativeDistributionTransform(Normal(t64(0.5), t64(2.0))),
     lambda s: RNG.normal(size=s), stats.norm(0.5, 2.0).cdf),
]


@pytest.mark.parametrize("name, t, gen, ref", ELEMENTWISE, ids=[e[0] for e in ELEMENTWISE])
@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (0, 3)])
def test_elementwise_transforms(name, t, gen, ref, shape):
    if name == "affine_tensor" and shape == ():
        shape = (1, 3)   # the log Jacobian has x's shape, which must hold the parameters'
    x = gen(shape)
    y = t(t64(x))
    assert tuple(y.shape) == tuple(np.broadcast_shapes(shape, tuple(t.forward_shape(shape))))
    assert_close(y, ref(x), rtol=1e-12, atol=1e-14)
    assert_close(t.inv(y), np.broadcast_to(x, y.shape), rtol=1e-9, atol=1e-12)
    if 0 in shape:
        assert tuple(t.log_abs_det_jacobian(t64(x), y).shape) == tuple(y.shape)
        return
    assert_close(t.log_abs_det_jacobian(t64(x), y), elementwise_ladj(t, x), rtol=1e-6,
                 atol=1e-7)
    assert t.bijective
    assert bool(t.codomain.check(y).all()) and bool(t.domain.check(t64(x)).all())


def test_inverse_transform_relations():
    t = ExpTransform()
    assert t.inv.inv is t and t.inv is t.inv
    assert t.inv.domain is constraints.positive and t.inv.codomain is constraints.real
    assert t.inv == ExpTransform().inv and t.inv != t
    assert repr(t.inv) == "_InverseTransform(ExpTransform())"
    assert t.inv.sign == 1 and t.inv.bijective
    x = t64([0.5, 2.0])
    assert_close(t.inv.log_abs_det_jacobian(x, t.inv(x)), -np.log([0.5, 2.0]), rtol=1e-14)
    c = ComposeTransform([ExpTransform(), AffineTransform(1.0, -2.0)])
    assert c.inv.inv is c
    assert c.sign == -1 and c.inv.sign == -1
    assert c.inv.parts == [AffineTransform(1.0, -2.0).inv, ExpTransform().inv]


def test_signs_and_equality():
    assert AffineTransform(0.0, -3.0).sign == -1 and AffineTransform(0.0, 0.0).sign == 0
    assert_close(AffineTransform(0.0, t64([-1.0, 2.0])).sign, [-1.0, 1.0])
    assert_close(PowerTransform(t64([-1.0, 2.0])).sign, [-1.0, 1.0])
    assert AffineTransform(1.0, 2.0) == AffineTransform(1.0, 2.0)
    assert AffineTransform(t64([1.0]), 2.0) != AffineTransform(t64([1.5]), 2.0)
    assert PowerTransform(2.0) == PowerTransform(2.0) != PowerTransform(3.0)
    assert ExpTransform() == ExpTransform() and ExpTransform() != SigmoidTransform()
    assert identity_transform == ComposeTransform([])
    with pytest.raises(NotImplementedError):
        Transform().sign
    with pytest.raises(NotImplementedError):
        AbsTransform().log_abs_det_jacobian(t64(1.0), t64(1.0))


def test_affine_event_dim():
    t = AffineTransform(t64([1.0, 2.0, 3.0]), t64([0.5, -2.0, 4.0]), event_dim=1)
    x = t64(RNG.normal(size=(4, 3)))
    y = t(x)
    assert t.event_dim == 1 and t.domain.event_dim == 1 and t.codomain.event_dim == 1
    assert_close(t.log_abs_det_jacobian(x, y), np.full(4, np.log(4.0)), rtol=1e-14)
    assert repr(t.domain) == "IndependentConstraint(Real(), 1)"
    s = AffineTransform(2.0, 3.0, event_dim=2)
    assert_close(s.log_abs_det_jacobian(t64(np.ones((5, 2, 3))), t64(np.ones((5, 2, 3)))),
                 np.full(5, 6 * np.log(3.0)), rtol=1e-14)


def test_abs_and_softmax_are_not_bijective():
    x = t64([-1.5, 0.0, 2.0])
    assert not AbsTransform().bijective and not SoftmaxTransform().bijective
    assert_close(AbsTransform()(x), [1.5, 0.0, 2.0])
    assert_close(AbsTransform().inv(t64([1.5])), [1.5])
    y = SoftmaxTransform()(x)
    e = np.exp([-1.5, 0.0, 2.0])
    assert_close(y, e / e.sum(), rtol=1e-14)
    assert_close(SoftmaxTransform()(SoftmaxTransform().inv(y)), y.numpy(), rtol=1e-14)
    big = SoftmaxTransform()(t64([1000.0, 1000.0]))
    assert_close(big, [0.5, 0.5])


@pytest.mark.parametrize("k", [1, 2, 4])
def test_stick_breaking(k):
    t = StickBreakingTransform()
    x = RNG.normal(size=(3, k)) * 2
    y = t(t64(x))
    assert tuple(y.shape) == (3, k + 1)
    assert bool(constraints.simplex.check(y).all())
    assert_close(t.inv(y), x, rtol=1e-9, atol=1e-11)
    ladj = t.log_abs_det_jacobian(t64(x), y).numpy()
    for row in range(3):
        jac = fd_jacobian(lambda v: t(t64(v)).numpy()[:-1], x[row])
        assert np.isclose(ladj[row], np.linalg.slogdet(jac)[1], rtol=1e-6, atol=1e-7)
    assert t.forward_shape((3, k)) == (3, k + 1) and t.inverse_shape((3, k + 1)) == (3, k)
    # x = 0 maps to the centre of the simplex
    assert_close(t(t64(np.zeros(k))), np.full(k + 1, 1 / (k + 1)), rtol=1e-14)


@pytest.mark.parametrize("d", [2, 3, 4])
def test_corr_cholesky(d):
    t = CorrCholeskyTransform()
    n = d * (d - 1) // 2
    x = RNG.normal(size=(2, n))
    y = t(t64(x))
    assert tuple(y.shape) == (2, d, d)
    assert bool(constraints.corr_cholesky.check(y).all())
    yn = y.numpy()
    corr = yn @ np.swapaxes(yn, -1, -2)
    assert np.allclose(np.diagonal(corr, axis1=-2, axis2=-1), 1.0)
    assert_close(t.inv(y), x, rtol=1e-9, atol=1e-11)
    ladj = t.log_abs_det_jacobian(t64(x), y).numpy()
    rows, cols = np.tril_indices(d, -1)
    for b in range(2):
        jac = fd_jacobian(lambda v: t(t64(v[None])).numpy()[0][rows, cols], x[b])
        assert np.isclose(ladj[b], np.linalg.slogdet(jac)[1], rtol=1e-6, atol=1e-7)
    assert t.forward_shape((5, n)) == (5, d, d) and t.inverse_shape((5, d, d)) == (5, n)


def test_corr_cholesky_shape_errors():
    t = CorrCholeskyTransform()
    with raises(ValueError, "Too few dimensions on input"):
        t.forward_shape(())
    with raises(ValueError, "Input is not a flattened lower-diagonal number"):
        t.forward_shape((4,))
    with raises(ValueError, "Too few dimensions on input"):
        t.inverse_shape((3,))
    with raises(ValueError, "Input is not square"):
        t.inverse_shape((3, 4))


def test_tril_vec_helpers():
    m = np.arange(16.0).reshape(4, 4)
    for diag in (-2, -1, 0):
        rows, cols = np.tril_indices(4, diag)
        v = tril_matrix_to_vec(t64(m), diag=diag)
        assert_close(v, m[rows, cols])
        back = np.zeros((4, 4))
        back[rows, cols] = m[rows, cols]
        assert_close(vec_to_tril_matrix(v, diag=diag), back)
    with raises(ValueError, "diag (4) provided is outside [-4, 3]."):
        tril_matrix_to_vec(t64(m), diag=4)
    with raises(ValueError, "The size of last dimension is 5 which cannot be expressed as "
                "the lower triangular part of a square D x D matrix."):
        vec_to_tril_matrix(t64(np.ones(5)))


def test_lower_cholesky_and_positive_definite():
    x = RNG.normal(size=(2, 3, 3))
    lower = LowerCholeskyTransform()(t64(x))
    want = np.tril(x, -1) + np.einsum("...i,ij->...ij", np.exp(np.diagonal(x, 0, -2, -1)),
                                      np.eye(3))
    assert_close(lower, want, rtol=1e-14)
    assert bool(constraints.lower_cholesky.check(lower).all())
    assert_close(LowerCholeskyTransform().inv(lower), np.tril(x), rtol=1e-12)
    pd = PositiveDefiniteTransform()(t64(x))
    assert_close(pd, want @ np.swapaxes(want, -1, -2), rtol=1e-12)
    assert bool(constraints.positive_definite.check(pd).all())
    assert_close(PositiveDefiniteTransform().inv(pd), np.tril(x), rtol=1e-9, atol=1e-12)


def test_reshape_transform():
    t = ReshapeTransform((2, 3), (6,))
    x = t64(RNG.normal(size=(4, 2, 3)))
    y = t(x)
    assert tuple(y.shape) == (4, 6)
    assert ptl.equal(t.inv(y), x)
    assert_close(t.log_abs_det_jacobian(x, y), np.zeros(4))
    assert t.forward_shape((4, 2, 3)) == (4, 6) and t.inverse_shape((5, 6)) == (5, 2, 3)
    assert t.domain.event_dim == 2 and t.codomain.event_dim == 1
    with raises(ValueError, "in_shape, out_shape have different numbers of elements"):
        ReshapeTransform((2, 3), (5,))
    with raises(ValueError, "Too few dimensions on input"):
        t.forward_shape((3,))
    with raises(ValueError, "Shape mismatch: expected torch.Size([3, 2]) but got "
                "torch.Size([2, 3])"):
        t.forward_shape((3, 2))
    with raises(ValueError, "Please use either .domain.event_dim or .codomain.event_dim"):
        t.event_dim


def test_independent_transform():
    t = IndependentTransform(ExpTransform(), 2)
    x = t64(RNG.normal(size=(3, 2, 4)))
    y = t(x)
    assert_close(y, np.exp(x.numpy()))
    assert_close(t.log_abs_det_jacobian(x, y), x.numpy().sum((-1, -2)), rtol=1e-14)
    assert t.domain.event_dim == 2 and t.sign == 1 and t.bijective
    assert repr(t) == "IndependentTransform(ExpTransform(), 2)"
    with raises(ValueError, "Too few dimensions on input"):
        t(t64([1.0]))
    with raises(ValueError, "Too few dimensions on input"):
        t.inv(t64([1.0]))


def test_compose_event_dims():
    """A composition's domain and log Jacobian cover the largest event a part couples."""
    t = ComposeTransform([ExpTransform(), StickBreakingTransform()])
    assert t.domain.event_dim == 1 and t.codomain.event_dim == 1
    x = t64(RNG.normal(size=(2, 3)))
    y = t(x)
    want = x.numpy().sum(-1) + StickBreakingTransform().log_abs_det_jacobian(
        ptl.exp(x), y).numpy()
    assert_close(t.log_abs_det_jacobian(x, y), want, rtol=1e-12)
    assert t.forward_shape((2, 3)) == (2, 4) and t.inverse_shape((2, 4)) == (2, 3)
    assert_close(identity_transform.log_abs_det_jacobian(x, x), np.zeros((2, 3)))
    assert identity_transform.domain is constraints.real
    assert repr(ComposeTransform([ExpTransform()])) == "ComposeTransform(\n    ExpTransform()\n)"


def test_cat_and_stack_transforms():
    x = RNG.normal(size=(5, 3))
    cat = CatTransform([ExpTransform(), AffineTransform(1.0, 2.0)], dim=0, lengths=[2, 3])
    y = cat(t64(x))
    want = np.concatenate([np.exp(x[:2]), 1 + 2 * x[2:]])
    assert_close(y, want, rtol=1e-14)
    assert_close(cat.inv(y), x, rtol=1e-12)
    assert_close(cat.log_abs_det_jacobian(t64(x), y),
                 np.concatenate([x[:2], np.full((3, 3), np.log(2.0))]), rtol=1e-14)
    assert bool(cat.codomain.check(y).all()) and cat.bijective
    stack = StackTransform([ExpTransform(), SigmoidTransform(), AffineTransform(0.0, 3.0)],
                           dim=1)
    y = stack(t64(x))
    want = np.stack([np.exp(x[:, 0]), 1 / (1 + np.exp(-x[:, 1])), 3 * x[:, 2]], 1)
    assert_close(y, want, rtol=1e-14)
    assert_close(stack.inv(y), x, rtol=1e-9)
    fd = np.stack([elementwise_ladj(stack, x)[:, i] for i in range(3)], 1)
    assert_close(stack.log_abs_det_jacobian(t64(x), y), fd, rtol=1e-6, atol=1e-7)
    assert bool(stack.codomain.check(y).all()) and bool(stack.domain.check(t64(x)).all())


def test_cat_and_stack_errors():
    cat = CatTransform([ExpTransform(), ExpTransform()], dim=0, lengths=[2, 3])
    with raises(AssertionError, "x.size(0) = 4 must equal length 5"):
        cat(t64(np.ones(4)))
    with raises(AssertionError, "dim 0 out of range for tensor with 0 dimensions"):
        cat(t64(1.0))
    with raises(AssertionError, "lengths (1) must match transforms (2)"):
        CatTransform([ExpTransform(), ExpTransform()], lengths=[1])
    with raises(AssertionError, "All elements of tseq must be Transform instances"):
        CatTransform([ExpTransform(), 3])
    stack = StackTransform([ExpTransform(), ExpTransform()], dim=0)
    with raises(AssertionError, "x.size(0) = 3 must equal len(transforms) 2"):
        stack(t64(np.ones(3)))
    with raises(AssertionError, "All elements of tseq must be Transform instances"):
        StackTransform([None])
    with raises(ValueError, "cache_size must be 0 or 1"):
        ExpTransform(cache_size=2)


def test_caching():
    t = ExpTransform(cache_size=1)
    x = t64([0.5, 1.0])
    y = t(x)
    assert t(x) is y and t.inv(y) is x
    z = ExpTransform()
    assert z.inv(z(x)) is not x
    assert ExpTransform().with_cache(1)._cache_size == 1
    c = ComposeTransform([ExpTransform(), AffineTransform(0.0, 2.0)], cache_size=1)
    y = c(x)
    assert c.inv(y) is x
    assert AffineTransform(1.0, 2.0).with_cache()._cache_size == 1
    assert AffineTransform(1.0, 2.0).inv.with_cache()._cache_size == 1

    class Custom(Transform):
        def __init__(self, k, cache_size=0):
            super().__init__(cache_size=cache_size)
            self.k = k
    with pytest.raises(NotImplementedError, match="with_cache is not implemented"):
        Custom(1).with_cache(1)


def test_pickle():
    import pickle

    from pytorchlite.distributions import Gumbel, LogNormal
    x = t64([0.5, 2.0])
    for t in (ExpTransform(), ExpTransform().inv, AffineTransform(t64([1.0, 2.0]), 3.0),
              ComposeTransform([ExpTransform(), SigmoidTransform().inv]),
              StickBreakingTransform(), IndependentTransform(ExpTransform().inv, 1)):
        back = pickle.loads(pickle.dumps(t))
        assert_close(back(x), t(x).numpy(), rtol=1e-15, equal_nan=True)
        assert_close(back.inv(back(x)), t.inv(t(x)).numpy(), rtol=1e-15, equal_nan=True)
    for d in (Gumbel(t64([0.0, 1.0]), t64(2.0)), LogNormal(t64(0.0), t64([1.0, 2.0]))):
        back = pickle.loads(pickle.dumps(d))
        assert_close(back.log_prob(x), d.log_prob(x).numpy(), rtol=1e-15)
        assert_close(back.cdf(x), d.cdf(x).numpy(), rtol=1e-15)


def test_shapes_of_parameterised_transforms():
    assert AffineTransform(t64(np.ones(3)), 1.0).forward_shape((2, 1)) == (2, 3)
    assert PowerTransform(t64(np.ones((4, 1)))).inverse_shape((3,)) == (4, 3)
    assert ExpTransform().forward_shape((2, 5)) == (2, 5)
    with raises(ValueError, "Too few dimensions on input"):
        StickBreakingTransform().forward_shape(())
    with raises(ValueError, "Too few dimensions on input"):
        SoftmaxTransform().inverse_shape(())


# ---------------------------------------------------------------- the constraint registry

REGISTERED = [
    (constraints.real, (4,)),
    (constraints.real_vector, (2, 3)),
    (constraints.positive, (4,)),
    (constraints.nonnegative, (4,)),
    (constraints.greater_than(-2.5), (4,)),
    (constraints.greater_than_eq(1.0), (4,)),
    (constraints.less_than(3.0), (4,)),
    (constraints.unit_interval, (4,)),
    (constraints.interval(-1.0, 3.0), (4,)),
    (constraints.half_open_interval(2.0, 5.0), (4,)),
    (constraints.interval(t64([0.0, 1.0]), t64([2.0, 5.0])), (3, 2)),
    (constraints.independent(constraints.positive, 1), (2, 3)),
    (constraints.corr_cholesky, (2, 3)),
    (constraints.cat([constraints.positive, constraints.real], 0, [2, 3]), (5,)),
    (constraints.stack([constraints.positive, constraints.unit_interval], 1), (3, 2)),
]


@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
@pytest.mark.parametrize("constraint, shape", REGISTERED, ids=[repr(c[0]) for c in REGISTERED])
def test_registry_maps_reals_into_the_constraint(registry, constraint, shape):
    t = (biject_to if registry == "biject_to" else transform_to)(constraint)
    x = t64(RNG.normal(size=shape))
    y = t(x)
    assert bool(constraint.check(y).all())
    assert t.bijective
    assert_close(t(t.inv(y)), y.numpy(), rtol=1e-9, atol=1e-12)
    assert_close(t.inv(y), x.numpy(), rtol=1e-7, atol=1e-9)


def test_registry_choices_and_errors():
    assert isinstance(biject_to(constraints.simplex), StickBreakingTransform)
    assert isinstance(transform_to(constraints.simplex), SoftmaxTransform)
    assert isinstance(biject_to(constraints.unit_interval), SigmoidTransform)
    assert biject_to(constraints.real) is identity_transform
    assert isinstance(transform_to(constraints.lower_cholesky), LowerCholeskyTransform)
    assert isinstance(transform_to(constraints.positive_definite), PositiveDefiniteTransform)
    assert isinstance(transform_to(constraints.positive_semidefinite),
                      PositiveDefiniteTransform)
    pos = biject_to(constraints.positive)
    assert isinstance(pos, ComposeTransform)
    assert pos.parts == [ExpTransform(), AffineTransform(0.0, 1)]
    y = transform_to(constraints.simplex)(t64(RNG.normal(size=(2, 4))))
    assert bool(constraints.simplex.check(y).all())
    m = transform_to(constraints.positive_definite)(t64(RNG.normal(size=(2, 3, 3))))
    assert bool(constraints.positive_definite.check(m).all())
    with raises(NotImplementedError, "Cannot transform _PositiveDefinite constraints"):
        biject_to(constraints.positive_definite)
    with raises(NotImplementedError, "Cannot transform int constraints"):
        biject_to(3)
    with raises(TypeError, "Expected constraint to be either a Constraint subclass or "
                "instance, but got 3"):
        biject_to.register(3, lambda c: ExpTransform())


def test_register_a_new_constraint():
    from pytorchlite.distributions.constraint_registry import ConstraintRegistry

    class Odd(constraints.Constraint):
        def check(self, value):
            return value % 2 == 1
    registry = ConstraintRegistry()

    @registry.register(Odd)
    def factory(constraint):
        return AffineTransform(1.0, 2.0)
    assert isinstance(registry(Odd()), AffineTransform)
    registry.register(Odd(), lambda c: ExpTransform())
    assert isinstance(registry(Odd()), ExpTransform)


# ------------------------------------------------------------------------------ PyTorch

TORCH_CASES = [
    ("ExpTransform", (), (3, 4)), ("SigmoidTransform", (), (3, 4)),
    ("SoftplusTransform", (), (3, 4)), ("TanhTransform", (), (3, 4)),
    ("StickBreakingTransform", (), (3, 4)), ("CorrCholeskyTransform", (), (2, 6)),
    ("SoftmaxTransform", (), (3, 4)), ("LowerCholeskyTransform", (), (2, 3, 3)),
    ("AffineTransform", (0.5, -2.0), (3, 4)), ("PowerTransform", (1.5,), (3, 4)),
]


@torch_ref
@pytest.mark.parametrize("name, args, shape", TORCH_CASES, ids=[c[0] for c in TORCH_CASES])
def test_transforms_match_torch(name, args, shape):
    import pytorchlite.distributions as D
    x = RNG.normal(size=shape)
    if name == "PowerTransform":
        x = np.abs(x) + 0.1
    mine = getattr(D, name)(*args)
    ref = getattr(torch.distributions, name)(*args)
    y, ry = mine(t64(x)), ref(torch.tensor(x))
    assert_close(y, ry.numpy(), rtol=1e-12, atol=1e-14)
    assert_close(mine.inv(y), ref.inv(ry).numpy(), rtol=1e-10, atol=1e-12)
    assert mine.forward_shape(shape) == tuple(ref.forward_shape(torch.Size(shape)))
    assert repr(mine.domain) == repr(ref.domain)
    assert repr(mine.codomain) == repr(ref.codomain)
    if mine.bijective:
        assert_close(mine.log_abs_det_jacobian(t64(x), y),
                     ref.log_abs_det_jacobian(torch.tensor(x), ry).numpy(), rtol=1e-11,
                     atol=1e-12)


@torch_ref
def test_registry_matches_torch():
    import pytorchlite.distributions as D
    cases = [("positive", ()), ("unit_interval", ()), ("simplex", ()), ("real_vector", ()),
             ("greater_than", (2.0,)), ("less_than", (-1.0,)), ("interval", (-1.0, 2.0)),
             ("corr_cholesky", ())]
    for name, args in cases:
        c = getattr(D.constraints, name)
        rc = getattr(torch.distributions.constraints, name)
        if args:
            c, rc = c(*args), rc(*args)
        for reg, rreg in ((D.biject_to, torch.distributions.biject_to),
                          (D.transform_to, torch.distributions.transform_to)):
            try:
                rt = rreg(rc)
            except NotImplementedError:
                continue
            shape = (2, 3)
            x = RNG.normal(size=shape)
            t = reg(c)
            assert type(t).__name__ == type(rt).__name__
            assert_close(t(t64(x)), rt(torch.tensor(x)).numpy(), rtol=1e-12, atol=1e-14)
            if not rt.bijective:
                continue
            assert math.isclose(
                float(t.log_abs_det_jacobian(t64(x), t(t64(x))).sum()),
                float(rt.log_abs_det_jacobian(torch.tensor(x), rt(torch.tensor(x))).sum()),
                rel_tol=1e-11)


def _support_cases():
    import pytorchlite.distributions as D
    return [
        ("Normal", lambda: D.Normal(t64(0.0), t64(1.0))),
        ("Exponential", lambda: D.Exponential(t64(2.0))),
        ("Uniform", lambda: D.Uniform(t64(0.5), t64(3.0))),
        ("Pareto", lambda: D.Pareto(t64(2.0), t64(3.0))),
        ("Beta", lambda: D.Beta(t64(2.0), t64(3.0))),
        ("Dirichlet", lambda: D.Dirichlet(t64([1.0, 2.0, 3.0]))),
        ("Kumaraswamy", lambda: D.Kumaraswamy(t64(2.0), t64(3.0))),
        ("LKJCholesky", lambda: D.LKJCholesky(3, t64(1.0))),
        ("Wishart", lambda: D.Wishart(t64(4.0), t64(np.eye(2)))),
        ("GeneralizedPareto", lambda: D.GeneralizedPareto(t64(0.0), t64(1.0), t64(-0.5))),
        ("LogisticNormal", lambda: D.LogisticNormal(t64([0.0, 1.0]), t64([1.0, 1.0]))),
        ("RelaxedOneHotCategorical", lambda: D.RelaxedOneHotCategorical(t64(0.5),
                                                                        t64([0.2, 0.8]))),
        ("HalfNormal", lambda: D.HalfNormal(t64(1.0))),
        ("ContinuousBernoulli", lambda: D.ContinuousBernoulli(t64(0.3))),
        ("MultivariateNormal", lambda: D.MultivariateNormal(t64(np.zeros(2)), t64(np.eye(2)))),
    ]


@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
@pytest.mark.parametrize("name, make", _support_cases(), ids=[c[0] for c in _support_cases()])
def test_registry_maps_into_each_support(registry, name, make):
    """The usual use: an unconstrained parameter mapped into a distribution's support (an
    event of the sample's shape); PyTorch registers no bijection onto positive-definite
    matrices either."""
    d = make()
    reg = biject_to if registry == "biject_to" else transform_to
    if name == "Wishart" and registry == "biject_to":
        with raises(NotImplementedError, "Cannot transform _PositiveDefinite constraints"):
            reg(d.support)
        return
    t = reg(d.support)
    ptl.manual_seed(0)
    x = ptl.randn(tuple(t.inverse_shape(d.sample().shape)), dtype=ptl.float64)
    assert bool(d.support.check(t(x)).all())
