"""nn.utils.parametrize and nn.utils.parametrizations (weight_norm, spectral_norm, orthogonal),
and the older hook-based nn.utils.weight_norm / spectral_norm: values against NumPy float64,
the state_dict keys, classes and attributes PyTorch gives, gradients (gradcheck), state dict
round trips, removal, and every error with PyTorch's type and message.  Every test runs on
pytorchlite and, where installed, on PyTorch (golden.LIBRARIES)."""
import copy
import importlib
import pickle
import warnings

import numpy as np
import pytest

import pytorchlite as ptl
from golden import LIBRARIES


def ids(m):
    return m.__name__


def P(lib):
    return importlib.import_module(lib.__name__ + ".nn.utils.parametrize")


def PS(lib):
    return importlib.import_module(lib.__name__ + ".nn.utils.parametrizations")


RNG = np.random.default_rng(1)
W = RNG.standard_normal((3, 4))


def linear(lib, w=W):
    m = lib.nn.Linear(w.shape[1], w.shape[0]).double()
    with lib.no_grad():
        m.weight.copy_(lib.tensor(w))
        m.bias.copy_(lib.tensor(np.arange(w.shape[0], dtype=np.float64)))
    return m


def square(lib, n=3):
    return linear(lib, RNG.standard_normal((n, n)))


def close(got, want, rtol=1e-12):
    assert tuple(got.shape) == np.shape(want)
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=rtol, atol=1e-13)


def make_parametrizations(lib):
    nn = lib.nn

    class Symmetric(nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).transpose(-1, -2)

    class Skew(nn.Module):
        def forward(self, X):
            A = X.tril(-1)
            return A - A.transpose(-1, -2)

        def right_inverse(self, A):
            return A.tril(-1)

    class Double(nn.Module):
        def forward(self, X):
            return 2 * X

        def right_inverse(self, Y):
            return Y / 2

    class Split(nn.Module):   # weight = a + b, stored as two halves
        def forward(self, a, b):
            return a + b

        def right_inverse(self, w):
            return (w / 2, w / 2)

    return Symmetric, Skew, Double, Split


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_register_moves_the_tensor_and_gives_the_module_its_own_class(lib):
    Symmetric, _, _, _ = make_parametrizations(lib)
    m = square(lib)
    w0 = m.weight.detach().numpy().copy()
    p = P(lib).register_parametrization(m, "weight", Symmetric())
    assert p is m
    assert type(m).__name__ == "ParametrizedLinear" and type(m).__bases__ == (lib.nn.Linear,)
    assert isinstance(m, lib.nn.Linear)
    assert P(lib).type_before_parametrizations(m) is lib.nn.Linear
    assert P(lib).type_before_parametrizations(lib.nn.ReLU()) is lib.nn.ReLU
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original"]
    assert [n for n, _ in m.named_parameters()] == ["bias", "parametrizations.weight.original"]
    close(m.parametrizations.weight.original, w0)
    close(m.weight, np.triu(w0) + np.triu(w0, 1).T)
    assert P(lib).is_parametrized(m) and P(lib).is_parametrized(m, "weight")
    assert not P(lib).is_parametrized(m, "bias")
    assert not P(lib).is_parametrized(lib.nn.Linear(2, 2))
    assert repr(m) == ("ParametrizedLinear(\n  in_features=3, out_features=3, bias=True\n"
                       "  (parametrizations): ModuleDict(\n    (weight): ParametrizationList(\n"
                       "      (0): Symmetric()\n    )\n  )\n)")
    x = RNG.standard_normal((2, 3))
    close(m(lib.tensor(x)), x @ (np.triu(w0) + np.triu(w0, 1).T).T + np.arange(3.0))


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_gradients_flow_to_the_original(lib):
    Symmetric, _, _, _ = make_parametrizations(lib)
    m = square(lib)
    P(lib).register_parametrization(m, "weight", Symmetric())
    x = RNG.standard_normal((5, 3))
    m(lib.tensor(x)).sum().backward()
    gw = np.ones((5, 3)).T @ x        # d sum / d weight
    want = np.triu(gw) + np.tril(gw, -1).T
    close(m.parametrizations.weight.original.grad, want)

    def through(orig):
        return Symmetric()(orig) @ orig
    assert lib.autograd.gradcheck(through, (lib.randn(3, 3, dtype=lib.float64,
                                                      requires_grad=True),))


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_chained_parametrizations_and_assignment_through_right_inverse(lib):
    _, Skew, Double, _ = make_parametrizations(lib)
    m = square(lib)
    w0 = m.weight.detach().numpy().copy()
    P(lib).register_parametrization(m, "weight", Skew())
    # the first right_inverse ran at registration: original holds tril(w0, -1)
    close(m.parametrizations.weight.original, np.tril(w0, -1))
    P(lib).register_parametrization(m, "weight", Double())
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original"]
    A = np.tril(w0, -1)
    close(m.weight, 2 * (A - A.T))
    target = RNG.standard_normal((3, 3))
    target = target - target.T
    original = m.parametrizations.weight.original
    m.weight = lib.tensor(target)
    assert m.parametrizations.weight.original is original    # updated in place
    close(m.weight, target)
    assert len(m.parametrizations.weight) == 2


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_assignment_needs_right_inverse(lib):
    Symmetric, _, _, _ = make_parametrizations(lib)
    m = square(lib)
    P(lib).register_parametrization(m, "weight", Symmetric())
    with pytest.raises(RuntimeError, match="^parametrization Symmetric does not implement "
                                           "right_inverse.$"):
        m.weight = lib.eye(3, dtype=lib.float64)


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_cached_computes_once(lib):
    Symmetric, _, _, _ = make_parametrizations(lib)
    m = square(lib)
    P(lib).register_parametrization(m, "weight", Symmetric())
    assert m.weight is not m.weight
    with P(lib).cached():
        a = m.weight
        with P(lib).cached():
            assert m.weight is a
        assert m.weight is a
    assert m.weight is not a


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
@pytest.mark.parametrize("leave", [True, False])
def test_remove_parametrizations(lib, leave):
    Symmetric, _, _, _ = make_parametrizations(lib)
    m = square(lib)
    w0 = m.weight.detach().numpy().copy()
    P(lib).register_parametrization(m, "weight", Symmetric())
    original = m.parametrizations.weight.original
    assert P(lib).remove_parametrizations(m, "weight", leave_parametrized=leave) is m
    assert type(m) is lib.nn.Linear and not hasattr(m, "parametrizations")
    assert list(m.state_dict()) == ["bias", "weight"]
    assert m.weight is original and isinstance(m.weight, lib.nn.Parameter)
    close(m.weight, np.triu(w0) + np.triu(w0, 1).T if leave else w0)


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_two_tensors_parametrized_class_stays_until_the_last_goes(lib):
    _, _, Double, _ = make_parametrizations(lib)
    m = square(lib)
    P(lib).register_parametrization(m, "weight", Double())
    P(lib).register_parametrization(m, "bias", Double())
    assert list(m.state_dict()) == ["parametrizations.weight.original",
                                    "parametrizations.bias.original"]
    close(m.bias, np.arange(3.0))
    P(lib).remove_parametrizations(m, "weight")
    assert type(m).__name__ == "ParametrizedLinear"
    P(lib).remove_parametrizations(m, "bias")
    assert type(m) is lib.nn.Linear


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_right_inverse_returning_several_tensors(lib):
    _, _, _, Split = make_parametrizations(lib)
    m = linear(lib)
    P(lib).register_parametrization(m, "weight", Split())
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original0",
                                    "parametrizations.weight.original1"]
    pl = m.parametrizations.weight
    assert not pl.is_tensor and pl.ntensors == 2
    assert isinstance(pl.original0, lib.nn.Parameter)
    close(pl.original0, W / 2)
    close(m.weight, W)
    m.weight = lib.zeros(3, 4, dtype=lib.float64)
    close(pl.original1, np.zeros((3, 4)))
    with pytest.raises(ValueError, match=r"^Cannot leave unparametrized "
                                         r"\(`leave_parametrized=False`\) a tensor that is "
                                         r"parametrized in terms of a sequence of tensors.$"):
        P(lib).remove_parametrizations(m, "weight", leave_parametrized=False)
    P(lib).remove_parametrizations(m, "weight")
    assert list(m.state_dict()) == ["bias", "weight"]
    assert isinstance(m.weight, lib.nn.Parameter)


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_buffer_can_be_parametrized(lib):
    _, _, Double, _ = make_parametrizations(lib)
    bn = lib.nn.BatchNorm1d(3).double()
    P(lib).register_parametrization(bn, "running_mean", Double())
    assert "parametrizations.running_mean.original" in bn.state_dict()
    assert not isinstance(bn.parametrizations.running_mean.original, lib.nn.Parameter)


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_state_dict_round_trip(lib):
    _, Skew, _, _ = make_parametrizations(lib)
    a, b = square(lib), square(lib)
    P(lib).register_parametrization(a, "weight", Skew())
    P(lib).register_parametrization(b, "weight", Skew())
    b.load_state_dict(a.state_dict())
    close(b.weight, a.weight.detach().numpy())


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_pickle_refused_deepcopy_works(lib):
    Symmetric, _, _, _ = make_parametrizations(lib)
    m = square(lib)
    P(lib).register_parametrization(m, "weight", Symmetric())
    with pytest.raises(RuntimeError, match="^Serialization of parametrized modules is only "
                                           "supported through state_dict\\(\\). See:\n"):
        pickle.dumps(m)
    c = copy.deepcopy(m)
    close(c.weight, m.weight.detach().numpy())
    assert c.parametrizations.weight.original is not m.parametrizations.weight.original


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_registration_errors(lib):
    nn = lib.nn
    Symmetric, _, _, _ = make_parametrizations(lib)
    p = P(lib)

    class ToFloat(nn.Module):
        def forward(self, X):
            return X.float()

    class Flat(nn.Module):
        def forward(self, X):
            return X.reshape(-1)

    class NotTensor(nn.Module):
        def forward(self, X):
            return 3

    class BadInverse(nn.Module):
        def forward(self, X):
            return X

        def right_inverse(self, X):
            return 3

    m = square(lib)
    with pytest.raises(ValueError) as info:
        p.register_parametrization(m, "foo", Symmetric())
    assert str(info.value) == ("Module 'Linear(in_features=3, out_features=3, bias=True)' does "
                               "not have a parameter, a buffer, or a parametrized element with "
                               "name 'foo'")
    with pytest.raises(ValueError) as info:
        p.register_parametrization(m, "weight", ToFloat())
    assert str(info.value) == ("Registering a parametrization may not change the dtype of the "
                               "tensor, unless `unsafe` flag is enabled.\nunparametrized "
                               "dtype: torch.float64\nparametrized dtype: torch.float32")
    with pytest.raises(ValueError) as info:
        p.register_parametrization(m, "weight", Flat())
    assert str(info.value) == ("Registering a parametrization may not change the shape of the "
                               "tensor, unless `unsafe` flag is enabled.\nunparametrized "
                               "shape: torch.Size([3, 3])\nparametrized shape: torch.Size([9])")
    with pytest.raises(ValueError, match="^A parametrization must return a tensor. Got int.$"):
        p.register_parametrization(m, "weight", NotTensor())
    with pytest.raises(ValueError, match=r"^'right_inverse' must return a Tensor or a Sequence "
                                         r"of tensors \(list, tuple...\). Got int$"):
        p.register_parametrization(m, "weight", BadInverse())
    assert type(m) is nn.Linear and list(m.state_dict()) == ["weight", "bias"]
    p.register_parametrization(m, "weight", Flat(), unsafe=True)
    assert tuple(m.weight.shape) == (9,)
    m = square(lib)
    p.register_parametrization(m, "weight", Symmetric())
    with pytest.raises(ValueError) as info:
        p.register_parametrization(m, "weight", ToFloat())
    assert str(info.value) == ("Registering a parametrization may not change the dtype of the "
                               "tensor, unless the `unsafe` flag is enabled.\nmodule.weight."
                               "dtype: torch.float64\nparametrization(module.weight).dtype: "
                               "torch.float32")
    with pytest.raises(ValueError) as info:
        p.register_parametrization(m, "weight", Flat())
    assert str(info.value).startswith("Registering a parametrization may not change the shape "
                                      "of the tensor, unless the `unsafe` flag is enabled.\n"
                                      "module.weight.shape: torch.Size([3, 3])\n")
    with pytest.raises(ValueError) as info:
        p.remove_parametrizations(m, "bias")
    assert str(info.value) == ("Module ParametrizedLinear(\n  in_features=3, out_features=3, "
                               "bias=True\n  (parametrizations): ModuleDict(\n    (weight): "
                               "ParametrizationList(\n      (0): Symmetric()\n    )\n  )\n) "
                               "does not have a parametrization on bias")
    with pytest.raises(ValueError, match="^ParametrizationList requires one or more modules.$"):
        p.ParametrizationList([], lib.zeros(2))


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_transfer_parametrizations_and_params(lib):
    _, Skew, _, _ = make_parametrizations(lib)
    a, b = square(lib), square(lib)
    P(lib).register_parametrization(a, "weight", Skew())
    P(lib).transfer_parametrizations_and_params(a, b)
    assert P(lib).is_parametrized(b, "weight")
    close(b.weight, a.weight.detach().numpy())


# ---- parametrizations.weight_norm / spectral_norm / orthogonal ----

def norm_except(w, dim):
    if dim is None or dim == -1:
        return np.sqrt((w * w).sum())
    axes = tuple(d for d in range(w.ndim) if d != dim)
    return np.sqrt((w * w).sum(axis=axes, keepdims=True))


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
@pytest.mark.parametrize("dim", [0, 1, None])
def test_parametrized_weight_norm(lib, dim):
    m = PS(lib).weight_norm(linear(lib), dim=dim)
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original0",
                                    "parametrizations.weight.original1"]
    g = m.parametrizations.weight.original0
    close(g, norm_except(W, dim))
    close(m.parametrizations.weight.original1, W)
    close(m.weight, W)
    with lib.no_grad():
        g.mul_(2)
    close(m.weight, 2 * W)

    def wn(gg, vv):
        return vv * (gg / vv.norm(2, dim=[d for d in range(2) if d != dim], keepdim=True)) \
            if dim is not None else vv * (gg / vv.norm())
    gg = lib.tensor(np.asarray(norm_except(W, dim)) + 0.5, requires_grad=True)
    vv = lib.tensor(W, requires_grad=True)
    assert lib.autograd.gradcheck(lambda a, b: PS(lib)._WeightNorm(dim)(a, b), (gg, vv))
    close(PS(lib)._WeightNorm(dim)(gg, vv), wn(gg, vv).detach().numpy())


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_parametrized_weight_norm_loads_the_old_keys(lib):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        old = lib.nn.utils.weight_norm(linear(lib)).state_dict()
    assert list(old) == ["bias", "weight_g", "weight_v"]
    m = PS(lib).weight_norm(lib.nn.Linear(4, 3).double())
    m.load_state_dict(old)
    close(m.weight, W)


def top_singular_value(w, dim=0):
    mat = np.moveaxis(w, dim, 0).reshape(w.shape[dim], -1)
    return np.linalg.svd(mat, compute_uv=False)[0]


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_parametrized_spectral_norm(lib):
    lib.manual_seed(0)
    m = PS(lib).spectral_norm(linear(lib))
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original",
                                    "parametrizations.weight.0._u",
                                    "parametrizations.weight.0._v"]
    assert tuple(m.parametrizations.weight[0]._u.shape) == (3,)
    assert tuple(m.parametrizations.weight[0]._v.shape) == (4,)
    # training-mode calls refine u and v: sigma converges to the top singular value
    for _ in range(50):
        w = m.weight
    close(w, W / top_singular_value(W), rtol=1e-9)
    m.eval()
    u = m.parametrizations.weight[0]._u.clone()
    m.weight
    close(m.parametrizations.weight[0]._u, u.numpy())   # eval: no power iteration
    vec = PS(lib).spectral_norm(lib.nn.Linear(3, 1).double(), name="bias")
    close(vec.bias, vec.parametrizations.bias.original.detach().numpy()
          / np.linalg.norm(vec.parametrizations.bias.original.detach().numpy()))


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_spectral_norm_dim_and_transposed_convolutions(lib):
    lib.manual_seed(0)
    c = PS(lib).spectral_norm(lib.nn.ConvTranspose2d(2, 3, 2).double())
    sn = c.parametrizations.weight[0]
    assert sn.dim == 1 and tuple(sn._u.shape) == (3,) and tuple(sn._v.shape) == (8,)
    w = c.parametrizations.weight.original.detach().numpy()
    for _ in range(60):
        out = c.weight
    close(out, w / top_singular_value(w, 1), rtol=1e-8)
    m = PS(lib).spectral_norm(linear(lib), dim=-1)
    assert m.parametrizations.weight[0].dim == 1


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
@pytest.mark.parametrize("orth_map", ["matrix_exp", "cayley", "householder", None])
@pytest.mark.parametrize("shape", [(3, 3), (5, 3), (2, 4)])
def test_orthogonal(lib, orth_map, shape):
    lib.manual_seed(0)
    m = linear(lib, RNG.standard_normal(shape))
    PS(lib).orthogonal(m, orthogonal_map=orth_map)
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original",
                                    "parametrizations.weight.0.base"]
    def assert_orthonormal(w):
        gram = w.T @ w if shape[0] >= shape[1] else w @ w.T
        np.testing.assert_allclose(gram, np.eye(min(shape)), atol=1e-12)

    assert_orthonormal(m.weight.detach().numpy())
    # a step off the diagonal (householder reads the diagonal's signs: right_inverse left -1s)
    step = 0.3 * RNG.standard_normal(shape)
    np.fill_diagonal(step, 0.0)
    with lib.no_grad():
        m.parametrizations.weight.original.add_(lib.tensor(step))
    assert_orthonormal(m.weight.detach().numpy())
    m(lib.ones(2, shape[1], dtype=lib.float64)).sum().backward()
    assert m.parametrizations.weight.original.grad is not None


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_orthogonal_assignment_keeps_an_orthogonal_value(lib):
    m = square(lib, 4)
    PS(lib).orthogonal(m)
    q, _ = np.linalg.qr(RNG.standard_normal((4, 4)))
    m.weight = lib.tensor(q)
    close(m.weight, q, rtol=1e-10)


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_parametrizations_errors(lib):
    ps = PS(lib)
    m = linear(lib)
    with pytest.raises(ValueError) as info:
        ps.spectral_norm(m, name="foo")
    assert str(info.value) == ("Module 'Linear(in_features=4, out_features=3, bias=True)' has "
                               "no parameter or buffer with name 'foo'")
    with pytest.raises(IndexError, match=r"^Dimension out of range \(expected to be in range "
                                         r"of \[-2, 1\] but got 2\)$"):
        ps.spectral_norm(linear(lib), dim=2)
    with pytest.raises(ValueError, match="^Expected n_power_iterations to be positive, but got "
                                         "n_power_iterations=0$"):
        ps.spectral_norm(linear(lib), n_power_iterations=0)
    with pytest.raises(ValueError, match="^Expected a matrix or batch of matrices. Got a tensor "
                                         "of 1 dimensions.$"):
        ps.orthogonal(linear(lib), name="bias")
    with pytest.raises(ValueError, match='^orthogonal_map has to be one of "matrix_exp", '
                                         '"cayley", "householder". Got: qr$'):
        ps.orthogonal(linear(lib), orthogonal_map="qr")
    holder = lib.nn.Module()
    holder.weight = lib.nn.Parameter(lib.zeros(2, 2, dtype=lib.complex128))
    with pytest.raises(ValueError, match="^The householder parametrization does not support "
                                         "complex tensors.$"):
        ps.orthogonal(holder, orthogonal_map="householder")
    # registration passes over a right_inverse that raises NotImplementedError; assigning
    # then raises it
    m = square(lib)
    w0 = m.weight.detach().numpy().copy()
    ps.orthogonal(m, use_trivialization=False)
    close(m.parametrizations.weight.original, w0)
    assert "base" not in m.parametrizations.weight[0]._buffers
    with pytest.raises(NotImplementedError, match="^It is not possible to assign to the matrix "
                                                  "exponential or the Cayley parametrizations "
                                                  "when use_trivialization=False.$"):
        m.weight = lib.eye(3, dtype=lib.float64)
    m = square(lib)
    ps.orthogonal(m)
    with pytest.raises(ValueError, match=r"^Expected a matrix or batch of matrices of shape "
                                         r"torch.Size\(\[3, 3\]\). Got a tensor of shape "
                                         r"torch.Size\(\[2, 2\]\).$"):
        m.weight = lib.eye(2, dtype=lib.float64)


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
@pytest.mark.parametrize("shape", [(5, 3), (3, 3), (2, 4)])
def test_orthogonal_householder_without_trivialization(lib, shape):
    m = linear(lib, RNG.standard_normal(shape))
    PS(lib).orthogonal(m, orthogonal_map="householder", use_trivialization=False)
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original"]
    tall = shape[0] >= shape[1]

    def gram(w):
        return w.T @ w if tall else w @ w.T
    np.testing.assert_allclose(gram(m.weight.detach().numpy()), np.eye(min(shape)), atol=1e-12)
    q, _ = np.linalg.qr(RNG.standard_normal(shape if tall else shape[::-1]))
    q = q if tall else q.T
    m.weight = lib.tensor(q)          # stored as Householder reflectors; read back exactly
    np.testing.assert_allclose(m.weight.detach().numpy(), q, atol=1e-12)


@pytest.mark.parametrize("shape", [(5, 3), (4, 4), (2, 6, 3), (3, 1)])
def test_householder_qr_reconstructs_the_matrix(shape):
    from pytorchlite.nn.utils.parametrizations import _householder_qr
    a = RNG.standard_normal(shape)
    A, tau = _householder_qr(ptl.tensor(a))
    q = ptl.linalg.householder_product(A, tau).numpy()
    r = np.triu(A.numpy())[..., :shape[-1], :]
    np.testing.assert_allclose(q @ r, a, atol=1e-12)
    if shape[-2] == shape[-1]:
        # LAPACK's convention: a column with nothing below its diagonal is not reflected
        assert (tau.numpy()[..., -1] == 0).all()


# ---- the older hook-based weight_norm / spectral_norm ----

@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
@pytest.mark.parametrize("dim", [0, 1, None])
def test_hook_weight_norm(lib, dim):
    u = lib.nn.utils
    with pytest.warns(FutureWarning, match="^`torch.nn.utils.weight_norm` is deprecated in "
                                           "favor of `torch.nn.utils.parametrizations."
                                           "weight_norm`.$"):
        m = u.weight_norm(linear(lib), dim=dim)
    assert list(m.state_dict()) == ["bias", "weight_g", "weight_v"]
    assert type(m) is lib.nn.Linear and len(m._forward_pre_hooks) == 1
    close(m.weight_g, norm_except(W, dim))
    close(m.weight, W)
    with lib.no_grad():
        m.weight_g.mul_(3)
    x = RNG.standard_normal((2, 4))
    close(m(lib.tensor(x)), x @ (3 * W).T + np.arange(3.0))
    m(lib.tensor(x)).sum().backward()
    assert m.weight_g.grad is not None and m.weight_v.grad is not None
    assert u.remove_weight_norm(m) is m
    assert list(m.state_dict()) == ["bias", "weight"] and not m._forward_pre_hooks
    close(m.weight, 3 * W)
    with pytest.raises(ValueError) as info:
        u.remove_weight_norm(m)
    assert str(info.value) == ("weight_norm of 'weight' not found in Linear(in_features=4, "
                               "out_features=3, bias=True)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        u.weight_norm(m)
        with pytest.raises(RuntimeError, match="^Cannot register two weight_norm hooks on the "
                                               "same parameter weight$"):
            u.weight_norm(m)


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_hook_spectral_norm(lib):
    u = lib.nn.utils
    lib.manual_seed(0)
    m = u.spectral_norm(linear(lib))
    assert list(m.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    assert not isinstance(m.weight, lib.nn.Parameter)
    x = lib.tensor(RNG.standard_normal((2, 4)))
    for _ in range(50):
        m(x)
    close(m.weight, W / top_singular_value(W), rtol=1e-9)
    m(x).sum().backward()
    assert m.weight_orig.grad is not None
    n = u.spectral_norm(lib.nn.Linear(4, 3).double())
    n.load_state_dict(m.state_dict())
    n.eval()
    n(x)
    close(n.weight, m.weight.detach().numpy())
    assert u.remove_spectral_norm(m) is m
    assert list(m.state_dict()) == ["bias", "weight"]
    assert isinstance(m.weight, lib.nn.Parameter)
    with pytest.raises(ValueError) as info:
        u.remove_spectral_norm(m)
    assert str(info.value) == ("spectral_norm of 'weight' not found in Linear(in_features=4, "
                               "out_features=3, bias=True)")
    c = u.spectral_norm(lib.nn.ConvTranspose1d(2, 3, 2).double())
    assert tuple(c.weight_u.shape) == (3,) and tuple(c.weight_v.shape) == (4,)
    with pytest.raises(RuntimeError, match="^Cannot register two spectral_norm hooks on the "
                                           "same parameter weight$"):
        u.spectral_norm(c)
    with pytest.raises(ValueError, match="^Expected n_power_iterations to be positive, but got "
                                         "n_power_iterations=-1$"):
        u.spectral_norm(linear(lib), n_power_iterations=-1)
    no_bias = lib.nn.Linear(2, 2, bias=False)
    with pytest.raises(ValueError, match="^`SpectralNorm` cannot be applied as parameter "
                                         "`bias` is None$"):
        u.spectral_norm(no_bias, name="bias")


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_hook_spectral_norm_loads_a_state_dict_without_v(lib):
    lib.manual_seed(0)
    u = lib.nn.utils
    m = u.spectral_norm(linear(lib))
    x = lib.tensor(RNG.standard_normal((2, 4)))
    for _ in range(30):
        m(x)
    sd = m.state_dict()
    old = {"bias": sd["bias"], "weight_orig": sd["weight_orig"], "weight_u": sd["weight_u"],
           "weight": m.weight.detach().clone()}
    n = u.spectral_norm(lib.nn.Linear(4, 3).double())
    n.load_state_dict(old)
    n.eval()
    n(x)
    close(n.weight, m.weight.detach().numpy(), rtol=1e-8)


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
@pytest.mark.parametrize("dim", [0, 1, 3, -2, -1, None])
def test_weight_norm_of_a_convolution(lib, dim):
    conv = lib.nn.Conv2d(2, 3, (2, 4)).double()
    w = conv.weight.detach().numpy().copy()
    if dim is None or dim == -1:     # both mean the norm of the whole tensor, as in PyTorch
        g = np.sqrt((w * w).sum())
    else:
        g = norm_except(w, dim % 4)
    m = PS(lib).weight_norm(conv, dim=dim)
    close(m.parametrizations.weight.original0, g)
    close(m.weight, w)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        old = lib.nn.utils.weight_norm(lib.nn.Conv2d(2, 3, (2, 4)).double(), dim=dim)
    with lib.no_grad():
        old.weight_v.copy_(lib.tensor(w))
        old.weight_g.copy_(lib.tensor(2 * np.asarray(g)))
    x = lib.tensor(RNG.standard_normal((1, 2, 3, 5)))
    want = lib.nn.functional.conv2d(x, lib.tensor(2 * w), old.bias)
    close(old(x), want.detach().numpy())


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_parametrized_module_converts_with_to(lib):
    _, Skew, _, _ = make_parametrizations(lib)
    m = lib.nn.Linear(3, 3)
    P(lib).register_parametrization(m, "weight", Skew())
    m.double()
    assert m.parametrizations.weight.original.dtype == lib.float64
    assert m.weight.dtype == lib.float64
    opt = lib.optim.SGD(m.parameters(), lr=0.1)
    m(lib.ones(1, 3, dtype=lib.float64)).sum().backward()
    opt.step()
    w = m.weight.detach().numpy()
    np.testing.assert_allclose(w, -w.T, atol=1e-15)
