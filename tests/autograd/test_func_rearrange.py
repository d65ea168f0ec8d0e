"""torch.func.rearrange (pytorchlite/func/_einops.py): einops patterns against the NumPy
reshape / transpose each one means, in float64 and int64, on contiguous and strided inputs
(0-dim, size-0 and lists of tensors included); PyTorch's results where torch is installed (or
stored), its errors for bad patterns, gradients, and the size errors that are ours (see Note
[rearrange as reshape, permute, reshape])."""
import warnings

import numpy as np
import pytest

import golden
import pytorchlite as ptl
from pytorchlite.func import rearrange
from helpers import torch

# (input shape, pattern, axes_lengths, the NumPy expression)
CASES = [
    ((2, 3, 4), "b h w -> b h w", {}, lambda a: a),
    ((2, 3, 4), "a b c -> c b a", {}, lambda a: a.transpose(2, 1, 0)),
    ((2, 3, 4), "a b c -> a (b c)", {}, lambda a: a.reshape(2, 12)),
    ((2, 3, 4), "a b c -> (c a) b", {}, lambda a: a.transpose(2, 0, 1).reshape(8, 3)),
    ((2, 3, 4), "a b c -> b (c a)", {}, lambda a: a.transpose(1, 2, 0).reshape(3, 8)),
    ((2, 12), "a (b c) -> a b c", {"b": 3}, lambda a: a.reshape(2, 3, 4)),
    ((2, 12), "a (b c) -> a c b", {"c": 6}, lambda a: a.reshape(2, 2, 6).transpose(0, 2, 1)),
    ((2, 12), "a (b c) -> a c b", {"b": 3, "c": 4},
     lambda a: a.reshape(2, 3, 4).transpose(0, 2, 1)),
    ((6, 4), "(a b) c -> b (c a)", {"a": 2},
     lambda a: a.reshape(2, 3, 4).transpose(1, 2, 0).reshape(3, 8)),
    ((4, 6, 8, 3), "b (h h1) (w w1) c -> b h w (c h1 w1)", {"h1": 2, "w1": 2},
     lambda a: a.reshape(4, 3, 2, 4, 2, 3).transpose(0, 1, 3, 5, 2, 4).reshape(4, 3, 4, 12)),
    ((4, 6, 8, 3), "b (h1 h) (w1 w) c -> (b h1 w1) h w c", {"h1": 2, "w1": 2},
     lambda a: a.reshape(4, 2, 3, 2, 4, 3).transpose(0, 1, 3, 2, 4, 5).reshape(16, 3, 4, 3)),
    ((2, 3, 4), "a b c -> a 1 b c 1", {}, lambda a: a.reshape(2, 1, 3, 4, 1)),
    ((2, 3), "a b -> (b a) ()", {}, lambda a: a.T.reshape(6, 1)),
    ((2, 3), "a b -> b (1 a)", {}, lambda a: a.T),
    ((2, 1, 3), "a 1 c -> c a", {}, lambda a: a[:, 0].T),
    ((2, 1, 3), "(a) () b -> b a", {}, lambda a: a[:, 0].T),
    ((2, 3, 4, 5), "... c -> c ...", {}, lambda a: a.transpose(3, 0, 1, 2)),
    ((2, 3, 4, 5), "a ... c -> (a c) ...", {},
     lambda a: a.transpose(0, 3, 1, 2).reshape(10, 3, 4)),
    ((2, 3, 4, 5), "a ... c -> a (...) c", {}, lambda a: a.reshape(2, 12, 5)),
    ((2, 3, 4, 5), "a ... c -> (... a) c", {},
     lambda a: a.transpose(1, 2, 0, 3).reshape(24, 5)),
    ((2, 3), "a b ... -> a b ...", {}, lambda a: a),
    ((2, 3), "a b ... -> a b (...)", {}, lambda a: a.reshape(2, 3, 1)),
    ((2, 3), "... -> (...)", {}, lambda a: a.reshape(6)),
    ((), " -> ", {}, lambda a: a),
    ((), "... -> ...", {}, lambda a: a),
    ((1,), "1 -> ", {}, lambda a: a.reshape(())),
    ((2, 0, 3), "a b c -> (a b) c", {}, lambda a: a.reshape(0, 3)),
    ((2, 0, 3), "a b c -> c (b a)", {}, lambda a: a.transpose(2, 1, 0).reshape(3, 0)),
    ((2, 0), "x (b c) -> x c b", {"b": 3}, lambda a: a.reshape(2, 3, 0).transpose(0, 2, 1)),
    ((5, 6), "x (b 1 c) -> x (1 c) b 1", {"b": 2},
     lambda a: a.reshape(5, 2, 3).transpose(0, 2, 1).reshape(5, 3, 2, 1)),
    ((3, 4), "first second -> second first", {}, lambda a: a.T),
]


def _input(shape, dtype, strided, seed):
    rng = np.random.default_rng(seed)
    if dtype == "int64":
        a = rng.integers(-50, 50, size=shape)
    else:
        a = rng.standard_normal(shape)
    t = ptl.tensor(a)
    if strided and len(shape) > 0:
        # the same values, laid out with the dimensions reversed in memory
        t = ptl.tensor(np.ascontiguousarray(a.transpose())).permute(
            list(range(len(shape)))[::-1])
    return a, t


@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided"])
@pytest.mark.parametrize("dtype", ["float64", "int64"])
@pytest.mark.parametrize("case", CASES, ids=[c[1] for c in CASES])
def test_rearrange_matches_numpy(case, dtype, strided):
    shape, pattern, lengths, ref = case
    a, t = _input(shape, dtype, strided, seed=len(pattern))
    got = rearrange(t, pattern, **lengths)
    expected = ref(a)
    assert tuple(got.shape) == expected.shape
    assert got.dtype == t.dtype
    np.testing.assert_array_equal(got.numpy(), expected)


@pytest.mark.parametrize("case", CASES, ids=[c[1] for c in CASES])
def test_rearrange_matches_torch(case):
    shape, pattern, lengths, _ = case
    a = np.random.default_rng(1).standard_normal(shape)
    golden.assert_close(rearrange(ptl.tensor(a), pattern, **lengths),
                        lambda: torch.func.rearrange(torch.tensor(a), pattern, **lengths))


def test_rearrange_adds_axes_to_a_0_dim_tensor():
    # PyTorch returns a 0-dim input unchanged whatever the right side adds
    x = ptl.tensor(2.5)
    assert tuple(rearrange(x, " -> 1").shape) == (1,)
    assert tuple(rearrange(x, " -> 1 ()").shape) == (1, 1)
    assert rearrange(x, "... -> 1 (...)").tolist() == [[2.5]]


def test_rearrange_list_is_stacked_first():
    parts = [np.random.default_rng(i).standard_normal((3, 4)) for i in range(2)]
    got = rearrange([ptl.tensor(p) for p in parts], "s h w -> h (s w)")
    np.testing.assert_array_equal(got.numpy(), np.stack(parts).transpose(1, 0, 2).reshape(3, 8))
    got = rearrange(tuple(ptl.tensor(p) for p in parts), "s h w -> w h s")
    np.testing.assert_array_equal(got.numpy(), np.stack(parts).transpose(2, 1, 0))
    golden.assert_close(got, lambda: torch.func.rearrange(
        tuple(torch.tensor(p) for p in parts), "s h w -> w h s"))


def test_rearrange_views_where_reshape_can():
    x = ptl.arange(24.).reshape(2, 3, 4)
    assert rearrange(x, "a b c -> c b a").data_ptr() == x.data_ptr()
    assert rearrange(x, "a b c -> a (b c)").data_ptr() == x.data_ptr()
    y = rearrange(x, "a b c -> (c a) b")
    assert y.is_contiguous() and y.data_ptr() != x.data_ptr()


def test_rearrange_gradient():
    x = ptl.randn(4, 6, dtype=ptl.float64, requires_grad=True)
    assert ptl.autograd.gradcheck(
        lambda t: rearrange(t, "a (b c) -> (c a) b", b=2), (x,))
    y = rearrange(x, "(a b) c -> c b a", a=2)
    w = ptl.randn(tuple(y.shape), dtype=ptl.float64)
    (y * w).sum().backward()
    np.testing.assert_array_equal(
        x.grad.numpy(), w.numpy().transpose(2, 1, 0).reshape(4, 6))


PATTERN_ERRORS = [
    ((2, 3), "a b -> a", {}),
    ((2, 3), "a b -> a c", {}),
    ((2, 3), "a b", {}),
    ((2, 3), "a b -> a -> b", {}),
    ((2, 3), "a b -> (a b", {}),
    ((2, 3), "a b) -> a b", {}),
    ((2, 3), "((a b)) -> a b", {}),
    ((2, 3), "a a -> a a", {}),
    ((2, 3), "a b -> b 2 a", {}),
    ((2, 3), "a _b -> _b a", {}),
    ((2, 3), "a b_ -> b_ a", {}),
    ((2, 3), "1a b -> 1a b", {}),
    ((2, 3), "a b. -> b a", {}),
    ((2, 3), "a .... -> b a", {}),
    ((2, 3), "a ... ... -> b a", {}),
    ((2, 3), "a b -> ...", {}),
    ((2, 3), "a (...) -> a ...", {}),
    ((2, 3), "a b -> a b", {"c": 2}),
    ((2, 3), "a b -> a b", {"a": 2.0}),
    ((2, 3), "a b -> a b", {"a": True}),
    ((2, 3), "a b c -> a b c", {}),
    ((2, 3), "a b c ... -> a b c ...", {}),
    ((2, 3), "a b$ -> a b", {}),
    ((2, 3), "a 0 -> a", {}),
    ((2, 3), "a b -> a b", {"\u2026": 1}),
    ((2, 3), "a ... -> a", {}),
]


@pytest.mark.parametrize("case", PATTERN_ERRORS, ids=[c[1] for c in PATTERN_ERRORS])
def test_rearrange_pattern_errors(case):
    shape, pattern, lengths = case
    golden.assert_raises(lambda: rearrange(ptl.ones(shape), pattern, **lengths),
                         lambda: torch.func.rearrange(torch.ones(shape), pattern, **lengths),
                         compare=lambda a, b: golden.sets_sorted(a) == golden.sets_sorted(b))


def test_rearrange_axis_name_warnings():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rearrange(ptl.ones(2, 3), "axis for -> for axis")
    keyword = (RuntimeWarning, "It is discouraged to use axes names that are keywords: for")
    axis = (FutureWarning, "It is discouraged to use 'axis' as an axis name and will raise an "
                           "error in future")
    assert [(w.category, str(w.message)) for w in caught] == [axis, keyword, keyword, axis]
    assert caught[0].filename == __file__


# The sizes that do not fit: PyTorch's first-class dimensions raise DimensionBindError or
# ZeroDivisionError, or sum a "1" axis of another size away; these are ours.
SIZE_ERRORS = [
    ((2, 3), "a b -> a b", {"a": 3}, "Shape mismatch, 2 != 3"),
    ((2, 6), "a (b c) -> a b c", {"b": 4}, "Shape mismatch, can't divide axis of length 6 in "
                                           "chunks of 4"),
    ((2, 6), "a (b c) -> a b c", {"b": 0}, "Shape mismatch, can't divide axis of length 6 in "
                                           "chunks of 0"),
    ((2, 0), "x (b c) -> x b c", {"b": 0}, "Shape mismatch, can't divide axis of length 0 in "
                                           "chunks of 0"),
    ((2, 6), "a (b c) -> a b c", {"b": 2, "c": 4}, "Shape mismatch, 6 != 8"),
    ((2, 6), "x (b c) -> x b c", {"b": -3, "c": -2}, "rearrange axis lengths must be "
                                                     "non-negative, got: b=-3"),
    ((2, 3), "a 1 -> a", {}, "Shape mismatch, 3 != 1"),
    ((6,), "(a b) -> a b", {"a": 4}, "Shape mismatch, can't divide axis of length 6 in "
                                     "chunks of 4"),
]


@pytest.mark.parametrize("case", SIZE_ERRORS, ids=[c[1] + str(c[2]) for c in SIZE_ERRORS])
def test_rearrange_size_errors(case):
    shape, pattern, lengths, message = case
    with pytest.raises(ValueError) as info:
        rearrange(ptl.ones(shape), pattern, **lengths)
    assert str(info.value) == message


def test_rearrange_two_unknown_sizes():
    with pytest.raises(ValueError) as info:
        rearrange(ptl.ones(2, 6), "a (b c) -> a b c")
    assert str(info.value) in ("Could not infer sizes for {'b', 'c'}",
                               "Could not infer sizes for {'c', 'b'}")


def test_rearrange_single_group():
    # PyTorch's generated indexing reads "(d0, d1)" as two indices here and refuses
    got = rearrange(ptl.arange(6), "(a b) -> b a", a=2)
    np.testing.assert_array_equal(got.numpy(), np.arange(6).reshape(2, 3).T)
