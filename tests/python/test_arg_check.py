"""The Python composites whose PyTorch twin is native (pytorchlite/_native_signature.py,
_arg_check.py): a bad argument raises PyTorch's TypeError naming the function called and its
own argument, by position when passed by position, never an internal op's argument (dist's p
once surfaced as linalg_vector_norm's `ord`)."""
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import assert_raises_like_torch, torch, torch_ref


def _x(m):
    return m.ones(2, 3)


# (call on a module m, the message PyTorch 2.13 gives)
CASES = [
    (lambda m: m.dist(_x(m), _x(m), p="a"), "dist(): argument 'p' must be Number, not str"),
    (lambda m: m.dist(_x(m), _x(m), "a"),
     "dist(): argument 'p' (position 3) must be Number, not str"),
    (lambda m: m.dist(_x(m), _x(m), None),
     "dist(): argument 'p' (position 3) must be Number, not NoneType"),
    (lambda m: m.dist(_x(m), _x(m), m.ones(2)),
     "dist(): argument 'p' (position 3) must be Number, not Tensor"),
    (lambda m: m.dist(_x(m), 1), "dist(): argument 'other' (position 2) must be Tensor, not int"),
    (lambda m: m.dist(1.0, _x(m)),
     "dist(): argument 'input' (position 1) must be Tensor, not float"),
    (lambda m: m.dist(_x(m), other=_x(m), p="a"),
     "dist(): argument 'p' must be Number, not str"),
    (lambda m: _x(m).dist(_x(m), "a"),
     "dist(): argument 'p' (position 2) must be Number, not str"),
    (lambda m: _x(m).dist(1), "dist(): argument 'other' (position 1) must be Tensor, not int"),
    (lambda m: _x(m).dist(_x(m), p="a"), "dist(): argument 'p' must be Number, not str"),
    (lambda m: m.cdist(_x(m), _x(m), p="a"),
     "cdist(): argument 'p' (position 3) must be float, not str"),
    (lambda m: m.cdist([1.0], _x(m)), "cdist(): argument 'x1' (position 1) must be Tensor, not list"),
    (lambda m: m.nn.functional.pdist(_x(m), "a"),
     "pdist(): argument 'p' (position 2) must be float, not str"),
    (lambda m: m.nn.functional.pdist([1.0]),
     "pdist(): argument 'input' (position 1) must be Tensor, not list"),
    (lambda m: m.nn.functional.pairwise_distance(_x(m), _x(m), p="a"),
     "pairwise_distance(): argument 'p' must be float, not str"),
    (lambda m: m.nn.functional.pairwise_distance(_x(m), _x(m), "a"),
     "pairwise_distance(): argument 'p' (position 3) must be float, not str"),
    (lambda m: m.nn.functional.pairwise_distance(_x(m), _x(m), 2.0, "a"),
     "pairwise_distance(): argument 'eps' (position 4) must be float, not str"),
    (lambda m: m.nn.functional.pairwise_distance(_x(m), _x(m), keepdim=1),
     "pairwise_distance(): argument 'keepdim' must be bool, not int"),
    (lambda m: m.nn.functional.pairwise_distance([1.0], _x(m)),
     "pairwise_distance(): argument 'x1' (position 1) must be Tensor, not list"),
    (lambda m: m.nn.functional.cosine_similarity(_x(m), _x(m), dim="a"),
     "cosine_similarity(): argument 'dim' must be int, not str"),
    (lambda m: m.nn.functional.cosine_similarity(_x(m), _x(m), 1.0),
     "cosine_similarity(): argument 'dim' (position 3) must be int, not float"),
    (lambda m: m.nn.functional.cosine_similarity(_x(m), _x(m), True),
     "cosine_similarity(): argument 'dim' (position 3) must be int, not bool"),
    (lambda m: m.nn.functional.cosine_similarity(_x(m), _x(m), eps="a"),
     "cosine_similarity(): argument 'eps' must be float, not str"),
    (lambda m: m.nn.functional.cosine_similarity([1.0], _x(m)),
     "cosine_similarity(): argument 'x1' (position 1) must be Tensor, not list"),
    (lambda m: m.nn.functional.triplet_margin_loss(_x(m), _x(m), _x(m), p="a"),
     "triplet_margin_loss(): argument 'p' (position 5) must be float, not str"),
    (lambda m: m.nn.functional.triplet_margin_loss(_x(m), _x(m), _x(m), eps="a"),
     "triplet_margin_loss(): argument 'eps' (position 6) must be float, not str"),
    (lambda m: m.nn.functional.triplet_margin_loss(_x(m), _x(m), _x(m), swap="a"),
     "triplet_margin_loss(): argument 'swap' (position 7) must be bool, not str"),
    (lambda m: m.nn.functional.triplet_margin_loss([1.0], _x(m), _x(m)),
     "triplet_margin_loss(): argument 'anchor' (position 1) must be Tensor, not list"),
    # torch.norm is PyTorch's Python composite over linalg.vector_norm, which names these
    (lambda m: m.norm(_x(m), p=[1]),
     "linalg_vector_norm(): argument 'ord' (position 2) must be Number, not list"),
    (lambda m: m.norm(_x(m), dim="a"),
     "linalg_vector_norm(): argument 'dim' (position 3) must be tuple of ints, not str"),
    (lambda m: m.norm(_x(m), 2, 1.5),
     "linalg_vector_norm(): argument 'dim' (position 3) must be tuple of ints, not float"),
    (lambda m: _x(m).norm(2, "a"),
     "linalg_vector_norm(): argument 'dim' (position 3) must be tuple of ints, not str"),
]


@pytest.mark.parametrize("k", range(len(CASES)))
def test_composite_argument_errors(k):
    call, msg = CASES[k]
    assert_raises_like_torch(call, TypeError, msg)


def test_margin_must_be_positive():
    for margin in (0, -1.0):
        assert_raises_like_torch(
            lambda m: m.nn.functional.triplet_margin_loss(_x(m), _x(m), _x(m), margin=margin),
            ValueError, f"margin must be greater than 0, got {margin}")


def test_accepted_argument_forms_still_compute():
    x = ptl.tensor(np.arange(6.0).reshape(2, 3))
    y = ptl.zeros(2, 3, dtype=ptl.float64)
    want = np.sqrt((np.arange(6.0) ** 2).sum())
    for p in (2, 2.0, np.float64(2), np.int64(2), ptl.tensor(2.0)):
        np.testing.assert_allclose(ptl.dist(x, y, p).item(), want)
        np.testing.assert_allclose(x.dist(y, p=p).item(), want)
    np.testing.assert_allclose(ptl.dist(x, ptl.tensor(0.0, dtype=ptl.float64)).item(), want)
    F = ptl.nn.functional
    assert F.pairwise_distance(x, y, True, 1e-6, True).shape == (2, 1)
    assert F.pairwise_distance(x, y, p=ptl.tensor(1.0)).shape == (2,)
    assert F.cosine_similarity(x, x + 1, 1, eps=1).shape == (2,)
    assert F.pdist(x, 1).shape == (1,)
    assert F.triplet_margin_loss(x, y, x, p=1, eps=0, swap=True).dim() == 0


@torch_ref
def test_accepted_forms_match_torch():
    a = np.arange(6.0).reshape(2, 3)
    for m in (torch, ptl):
        x = m.tensor(a)
        r = [m.dist(x, x * 0, True), m.nn.functional.pairwise_distance(x, x * 2, True),
             m.nn.functional.cosine_similarity(x, x + 1, eps=1)]
        if m is torch:
            want = [t.numpy() for t in r]
        else:
            for got, w in zip(r, want):
                np.testing.assert_allclose(got.numpy(), w, rtol=1e-12)
