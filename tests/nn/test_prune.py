"""nn.utils.prune: masks against NumPy (exact: masks are 0/1 and the pruned tensor a product),
the weight_orig / weight_mask / forward pre-hook layout PyTorch gives, iterative pruning through
PruningContainer, global pruning, remove, and every error with PyTorch's type and message.
Every test runs on pytorchlite and, where installed, on PyTorch (golden.LIBRARIES); the random
methods are checked by their counts, their generators differing."""
import importlib

import numpy as np
import pytest

from golden import LIBRARIES


def ids(m):
    return m.__name__


def pr(lib):
    return importlib.import_module(lib.__name__ + ".nn.utils.prune")


RNG = np.random.default_rng(2)
# distinct magnitudes, so the entries (and channels) L1 / Ln pruning removes are unambiguous
W = (RNG.permutation(20) + 1.0).reshape(4, 5) * RNG.choice([-1.0, 1.0], (4, 5)) / 10


def linear(lib, w=W):
    m = lib.nn.Linear(w.shape[1], w.shape[0]).double()
    with lib.no_grad():
        m.weight.copy_(lib.tensor(w))
        m.bias.copy_(lib.tensor(np.arange(w.shape[0], dtype=np.float64)))
    return m


def l1_mask(w, k, base=None):
    base = np.ones_like(w) if base is None else base
    mask = base.copy()
    alive = np.flatnonzero(base.reshape(-1))
    order = alive[np.argsort(np.abs(w.reshape(-1)[alive]), kind="stable")]
    mask.reshape(-1)[order[:k]] = 0
    return mask


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
@pytest.mark.parametrize("amount,k", [(0.3, 6), (7, 7), (0, 0), (1.0, 20), (0.0, 0)])
def test_l1_unstructured(lib, amount, k):
    m = linear(lib)
    out = pr(lib).l1_unstructured(m, "weight", amount=amount)
    assert out is m
    assert list(m.state_dict()) == ["bias", "weight_orig", "weight_mask"]
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight_orig"]
    assert [n for n, _ in m.named_buffers()] == ["weight_mask"]
    mask = l1_mask(W, k)
    np.testing.assert_array_equal(m.weight_mask.numpy(), mask)
    np.testing.assert_array_equal(m.weight.detach().numpy(), W * mask)
    assert not isinstance(m.weight, lib.nn.Parameter)
    assert pr(lib).is_pruned(m) and not pr(lib).is_pruned(lib.nn.Linear(2, 2))
    hooks = list(m._forward_pre_hooks.values())
    assert len(hooks) == 1 and isinstance(hooks[0], pr(lib).L1Unstructured)
    assert hooks[0]._tensor_name == "weight"


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_forward_uses_the_masked_weight_and_gradients_are_masked(lib):
    m = linear(lib)
    pr(lib).l1_unstructured(m, "weight", amount=0.5)
    mask = l1_mask(W, 10)
    with lib.no_grad():
        m.weight_orig.mul_(2)     # the hook recomputes weight before each call
    x = RNG.standard_normal((3, 5))
    y = m(lib.tensor(x))
    np.testing.assert_allclose(y.detach().numpy(), x @ (2 * W * mask).T + np.arange(4.0),
                               rtol=1e-13)
    y.sum().backward()
    np.testing.assert_allclose(m.weight_orig.grad.numpy(), np.ones((3, 4)).T @ x * mask,
                               rtol=1e-13)


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_importance_scores_choose_instead_of_the_weight(lib):
    m = linear(lib)
    scores = RNG.permutation(20).reshape(4, 5).astype(np.float64)
    pr(lib).l1_unstructured(m, "weight", amount=5, importance_scores=lib.tensor(scores))
    np.testing.assert_array_equal(m.weight_mask.numpy(), (scores >= 5).astype(np.float64))


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
@pytest.mark.parametrize("n,dim", [(1, 0), (2, 1), (float("inf"), 0), (float("-inf"), -1)])
def test_ln_structured(lib, n, dim):
    m = linear(lib)
    pr(lib).ln_structured(m, "weight", amount=2, n=n, dim=dim)
    other = 1 - (dim % 2)
    norms = np.linalg.norm(W, ord=n, axis=other)
    keep = np.argsort(-norms, kind="stable")[:W.shape[dim] - 2]
    want = np.zeros_like(W)
    if dim == 0:
        want[keep] = 1
    else:
        want[:, keep] = 1
    np.testing.assert_array_equal(m.weight_mask.numpy(), want)
    np.testing.assert_array_equal(m.weight.detach().numpy(), W * want)


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
@pytest.mark.parametrize("amount,count", [(2, 2), (0.4, 2), (0, 0)])
def test_random_structured_prunes_whole_channels(lib, amount, count):
    lib.manual_seed(0)
    m = linear(lib)
    pr(lib).random_structured(m, "weight", amount=amount, dim=1)
    mask = m.weight_mask.numpy()
    cols = mask.all(axis=0)
    assert (mask.any(axis=0) == cols).all()     # each column all kept or all pruned
    assert (~cols).sum() == count


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
@pytest.mark.parametrize("amount,count", [(0.25, 5), (3, 3), (0, 0)])
def test_random_unstructured_counts(lib, amount, count):
    lib.manual_seed(0)
    m = linear(lib)
    pr(lib).random_unstructured(m, "weight", amount=amount)
    mask = m.weight_mask.numpy()
    assert set(np.unique(mask)) <= {0.0, 1.0} and (mask == 0).sum() == count


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_identity_and_custom_from_mask(lib):
    m = linear(lib)
    pr(lib).identity(m, "bias")
    np.testing.assert_array_equal(m.bias_mask.numpy(), np.ones(4))
    assert list(m.state_dict()) == ["weight", "bias_orig", "bias_mask"]
    custom = (RNG.random((4, 5)) > 0.5).astype(np.float64)
    pr(lib).custom_from_mask(m, "weight", mask=lib.tensor(custom))
    np.testing.assert_array_equal(m.weight.detach().numpy(), W * custom)


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_iterative_pruning_builds_a_container(lib):
    p = pr(lib)
    m = linear(lib)
    p.l1_unstructured(m, "weight", amount=4)
    first = l1_mask(W, 4)
    p.l1_unstructured(m, "weight", amount=3)   # 3 more among the entries still kept
    second = l1_mask(W, 3, first)
    np.testing.assert_array_equal(m.weight_mask.numpy(), second)
    hooks = list(m._forward_pre_hooks.values())
    assert len(hooks) == 1 and isinstance(hooks[0], p.PruningContainer)
    assert len(hooks[0]) == 2 and isinstance(hooks[0][1], p.L1Unstructured)
    assert [type(h) for h in hooks[0]] == [p.L1Unstructured, p.L1Unstructured]
    # a structured step works on the channels still alive, and keeps the earlier zeros
    p.ln_structured(m, "weight", amount=1, n=1, dim=0)
    rows = np.abs(W * second).sum(1)
    drop = np.argmin(rows)
    third = second.copy()
    third[drop] = 0
    np.testing.assert_array_equal(m.weight_mask.numpy(), third)
    assert len(hooks[0]) == 3
    custom = np.ones((4, 5))
    custom[0, 0] = custom[3, 4] = 0
    p.custom_from_mask(m, "weight", lib.tensor(custom))
    np.testing.assert_array_equal(m.weight_mask.numpy(), third * custom)
    assert list(m.state_dict()) == ["bias", "weight_orig", "weight_mask"]


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_remove_makes_the_pruned_value_a_parameter(lib):
    m = linear(lib)
    orig = m.weight
    pr(lib).l1_unstructured(m, "weight", amount=0.5)
    assert m.weight_orig is orig
    assert pr(lib).remove(m, "weight") is m
    assert list(m.state_dict()) == ["bias", "weight"]
    assert m.weight is orig and isinstance(m.weight, lib.nn.Parameter)
    np.testing.assert_array_equal(m.weight.detach().numpy(), W * l1_mask(W, 10))
    assert not m._forward_pre_hooks and not pr(lib).is_pruned(m)
    with pytest.raises(ValueError) as info:
        pr(lib).remove(m, "weight")
    assert str(info.value) == ("Parameter 'weight' of module Linear(in_features=5, "
                               "out_features=4, bias=True) has to be pruned before pruning "
                               "can be removed")


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_global_unstructured(lib):
    p = pr(lib)
    a, b = linear(lib), linear(lib, W[:2, :3] * 1.05)
    p.global_unstructured([(a, "weight"), (b, "weight"), (a, "bias")],
                          pruning_method=p.L1Unstructured, amount=8)
    flat = np.concatenate([W.reshape(-1), (W[:2, :3] * 1.05).reshape(-1), np.arange(4.0)])
    mask = l1_mask(flat, 8)
    np.testing.assert_array_equal(a.weight_mask.numpy(), mask[:20].reshape(4, 5))
    np.testing.assert_array_equal(b.weight_mask.numpy(), mask[20:26].reshape(2, 3))
    np.testing.assert_array_equal(a.bias_mask.numpy(), mask[26:])
    assert isinstance(list(a._forward_pre_hooks.values())[0], p.CustomFromMask)
    # a second round counts the entries already pruned, as PyTorch does
    p.global_unstructured([(a, "weight"), (b, "weight")], pruning_method=p.L1Unstructured,
                          amount=0.5)
    # a second round prunes a fraction of the entries still kept, as PyTorch does
    alive = (mask[:26] == 1).sum()
    zeros = (a.weight_mask.numpy() == 0).sum() + (b.weight_mask.numpy() == 0).sum()
    assert zeros == round(0.5 * alive) + (mask[:26] == 0).sum()
    assert not a.weight_mask.requires_grad


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_prune_method_on_a_tensor(lib):
    p = pr(lib)
    t = lib.tensor(W)
    np.testing.assert_array_equal(p.L1Unstructured(amount=4).prune(t).numpy(),
                                  W * l1_mask(W, 4))
    scores = np.abs(W)[::-1].copy()
    np.testing.assert_array_equal(
        p.L1Unstructured(amount=4).prune(t, importance_scores=lib.tensor(scores)).numpy(),
        W * l1_mask(scores, 4))


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_a_failing_mask_rolls_back(lib):
    m = linear(lib)
    with pytest.raises(ValueError):
        pr(lib).l1_unstructured(m, "weight", amount=21)
    assert list(m.state_dict()) == ["bias", "weight"]
    assert isinstance(m.weight, lib.nn.Parameter) and not m._forward_pre_hooks


ERRORS = [
    ("amount-type", lambda p, m, lib: p.l1_unstructured(m, "weight", amount="a"), TypeError,
     "Invalid type for amount: a. Must be int or float."),
    ("amount-negative", lambda p, m, lib: p.random_unstructured(m, "weight", amount=-1),
     ValueError, "amount=-1 should either be a float in the range [0, 1] or a non-negative "
     "integer"),
    ("amount-fraction", lambda p, m, lib: p.ln_structured(m, "weight", 1.5, 1, 0), ValueError,
     "amount=1.5 should either be a float in the range [0, 1] or a non-negative integer"),
    ("amount-too-big", lambda p, m, lib: p.l1_unstructured(m, "weight", amount=21), ValueError,
     "amount=21 should be smaller than the number of parameters to prune=20"),
    ("channels-too-many", lambda p, m, lib: p.ln_structured(m, "weight", 5, 2, 0), ValueError,
     "amount=5 should be smaller than the number of parameters to prune=4"),
    ("structured-1d", lambda p, m, lib: p.random_structured(m, "bias", 1, 0), ValueError,
     "Structured pruning can only be applied to multidimensional tensors. Found tensor of "
     "shape torch.Size([4]) with 1 dims"),
    ("structured-dim", lambda p, m, lib: p.ln_structured(m, "weight", 1, 2, 2), IndexError,
     "Invalid index 2 for tensor of size torch.Size([4, 5])"),
    ("scores-shape", lambda p, m, lib: p.l1_unstructured(m, "weight", 1,
                                                         importance_scores=lib.ones(2)),
     AssertionError, "importance_scores should have the same shape as parameter weight of "
     "Linear(in_features=5, out_features=4, bias=True), got torch.Size([2]) vs "
     "torch.Size([4, 5])"),
    ("global-iterable", lambda p, m, lib: p.global_unstructured(3, p.L1Unstructured,
                                                                amount=1),
     TypeError, "global_unstructured(): parameters is not an Iterable"),
    ("global-scores", lambda p, m, lib: p.global_unstructured([(m, "weight")],
                                                              p.L1Unstructured, [1],
                                                              amount=1),
     TypeError, "global_unstructured(): importance_scores must be of type dict"),
    ("global-structured", lambda p, m, lib: p.global_unstructured(
        [(m, "weight")], p.LnStructured, amount=1, n=2), TypeError, None),
    ("custom-shape", lambda p, m, lib: p.custom_from_mask(m, "weight", lib.ones(3)),
     AssertionError, "default_mask shape torch.Size([4, 5]) must match self.mask shape "
     "torch.Size([3])"),
    ("container-type", lambda p, m, lib: p.PruningContainer().add_pruning_method(3),
     TypeError, "<class 'int'> is not a BasePruningMethod subclass"),
    ("apply-mask", lambda p, m, lib: p.Identity().apply_mask(m), AttributeError,
     "'Identity' object has no attribute '_tensor_name'"),
    ("remove-unpruned", lambda p, m, lib: p.Identity().remove(m), AttributeError,
     "'Identity' object has no attribute '_tensor_name'"),
]


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_errors(lib, case):
    _, call, exc, msg = case
    with pytest.raises(exc) as info:
        call(pr(lib), linear(lib), lib)
    assert type(info.value) is exc
    if msg is not None:
        assert str(info.value) == msg
    else:
        assert str(info.value).startswith('Only "unstructured" PRUNING_TYPE supported for the '
                                          "`pruning_method`. Found method <class '")
        assert str(info.value).endswith("LnStructured'> of type structured")


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_container_refuses_another_tensors_method(lib):
    p = pr(lib)
    a = p.L1Unstructured(amount=1)
    a._tensor_name = "weight"
    b = p.L1Unstructured(amount=1)
    b._tensor_name = "bias"
    c = p.PruningContainer(a)
    with pytest.raises(ValueError) as info:
        c.add_pruning_method(b)
    assert str(info.value).startswith("Can only add pruning methods acting on the parameter "
                                      "named 'weight' to PruningContainer ")
    assert str(info.value).endswith(". Found 'bias'")


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_structured_method_without_dim_in_a_container(lib):
    p = pr(lib)

    class NoDim(p.BasePruningMethod):
        PRUNING_TYPE = "structured"

        def compute_mask(self, t, default_mask):
            return default_mask

    class Odd(p.BasePruningMethod):
        PRUNING_TYPE = "sideways"

        def compute_mask(self, t, default_mask):
            return default_mask

    m = linear(lib)
    p.identity(m, "weight")
    with pytest.raises(AttributeError, match='^Pruning methods of PRUNING_TYPE "structured" '
                                             'need to have the attribute `dim` defined.$'):
        NoDim.apply(m, "weight")
    # as in PyTorch, the failed step took the pruning hook off (the mask stays)
    assert not m._forward_pre_hooks and "weight_mask" in m.state_dict()
    m = linear(lib)
    p.identity(m, "weight")
    with pytest.raises(ValueError, match="^Unrecognized PRUNING_TYPE sideways$"):
        Odd.apply(m, "weight")
