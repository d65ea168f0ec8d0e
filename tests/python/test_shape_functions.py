"""The shape composites of pytorchlite/_shape_functions.py and the index composites of
_indexing.py (ravel, atleast_Nd, column_stack, dstack, h/v/dsplit, diagflat, narrow_copy,
sum_to_size, block_diag, cartesian_prod, combinations, tril/triu_indices, unravel_index,
isin): against NumPy (exact: integer and float64 values are moved or compared, not
computed) on 0-D, size-0 and non-contiguous inputs, gradcheck in float64, and PyTorch's
errors."""
import itertools
import re

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck
from helpers import LAYOUTS, assert_close, assert_raises_like_torch, make, torch

SHAPES = [(), (0,), (4,), (3, 4), (2, 0, 3), (2, 3, 4)]


def _exact(got, want):
    assert_close(got, want, rtol=0, atol=0)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", SHAPES)
def test_ravel_atleast_diagflat_narrow_copy(shape, layout):
    t, a = make(shape, ptl.float64, layout)
    _exact(ptl.ravel(t), np.ravel(a))
    _exact(t.ravel(), np.ravel(a))
    for n, ref in ((1, np.atleast_1d), (2, np.atleast_2d), (3, np.atleast_3d)):
        fn = getattr(ptl, f"atleast_{n}d")
        _exact(fn(t), ref(a))
        pair = fn(t, t)
        assert isinstance(pair, tuple) and len(pair) == 2
        _exact(pair[1], ref(a))
        assert isinstance(fn([t]), tuple)
    _exact(ptl.diagflat(t, -1), np.diagflat(a, -1))
    _exact(t.diagflat(2), np.diagflat(a, 2))
    if len(shape) >= 1 and shape[-1] >= 2:
        c = ptl.narrow_copy(t, -1, 1, shape[-1] - 1)
        assert c.is_contiguous()
        _exact(c, a[..., 1:])


def test_atleast_of_int_and_bool_and_nothing():
    assert ptl.atleast_1d() == ()
    _exact(ptl.atleast_3d(ptl.tensor(True)), np.array([[[True]]]))
    assert ptl.atleast_2d(ptl.tensor([1, 2])).dtype == ptl.int64
    r = ptl.ravel(ptl.ones(2, 3))
    assert r.shape == (6,)
    assert_raises_like_torch(lambda m: m.atleast_2d(3), TypeError,
                             "atleast_2d() received an invalid combination of arguments - got "
                             "(int)")
    assert_raises_like_torch(lambda m: m.atleast_1d([m.ones(1), 3]), TypeError,
                             "expected Tensor as element 1 in argument 0, but got int")


@pytest.mark.parametrize("layout", LAYOUTS)
def test_column_stack_and_dstack(layout):
    t, a = make((3, 4), ptl.float64, layout)
    u, b = make((3,), ptl.float64, seed=1)
    _exact(ptl.column_stack([t, u, t]), np.column_stack([a, b, a]))
    _exact(ptl.column_stack((u, ptl.tensor(2.0, dtype=ptl.float64).expand(3))),
           np.column_stack([b, np.full(3, 2.0)]))
    _exact(ptl.dstack([t, t]), np.dstack([a, a]))
    _exact(ptl.dstack([u, u]), np.dstack([b, b]))
    _exact(ptl.dstack([ptl.tensor(1), ptl.tensor(2)]), np.dstack([1, 2]))
    out = ptl.empty(3, 2, dtype=ptl.float64)
    assert ptl.column_stack([u, u], out=out) is out
    assert ptl.column_stack([ptl.tensor([1]), ptl.tensor([2.5])]).dtype == ptl.float32


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name, shape, sections", [
    ("hsplit", (6,), 3), ("hsplit", (2, 6), 2), ("hsplit", (2, 6), [1, 4]),
    ("hsplit", (2, 0), 1), ("vsplit", (4, 3), 2), ("vsplit", (5, 2), [2, 9]),
    ("dsplit", (2, 2, 4), 4), ("dsplit", (2, 2, 4), (1, 1, 3))])
def test_splits(name, shape, sections, layout):
    t, a = make(shape, ptl.float64, layout)
    for pieces in (getattr(ptl, name)(t, sections), getattr(t, name)(sections)):
        want = getattr(np, name)(a, sections)
        assert isinstance(pieces, tuple) and len(pieces) == len(want)
        for p, w in zip(pieces, want):
            _exact(p, w)


def test_split_and_stack_errors():
    assert_raises_like_torch(lambda m: m.hsplit(m.tensor(1.0), 2), RuntimeError,
                             "torch.hsplit requires a tensor with at least 1 dimension, but got "
                             "a tensor with 0 dimensions!")
    assert_raises_like_torch(lambda m: m.vsplit(m.ones(3), 2), RuntimeError,
                             "torch.vsplit requires a tensor with at least 2 dimension, but got "
                             "a tensor with 1 dimensions!")
    assert_raises_like_torch(lambda m: m.dsplit(m.ones(2, 2), 2), RuntimeError,
                             "torch.dsplit requires a tensor with at least 3 dimension")
    assert_raises_like_torch(lambda m: m.hsplit(m.ones(2, 3), 2), RuntimeError,
                             "torch.hsplit attempted to split along dimension 1, but the size "
                             "of the dimension 3 is not divisible by the split_size 2!")
    assert_raises_like_torch(lambda m: m.hsplit(m.ones(3), 0), RuntimeError,
                             "is not divisible by the split_size 0!")
    assert_raises_like_torch(lambda m: m.column_stack([]), RuntimeError,
                             "column_stack expects a non-empty TensorList")
    assert_raises_like_torch(lambda m: m.dstack([]), RuntimeError,
                             "dstack expects a non-empty TensorList")


@pytest.mark.parametrize("layout", LAYOUTS[:3])
@pytest.mark.parametrize("shape, size", [
    ((2, 3), (2, 3)), ((2, 3), (1, 3)), ((2, 3), (3,)), ((2, 3), (2, 1)), ((4, 2, 3), (1,)),
    ((4, 2, 3), (2, 1)), ((4, 2, 3), ()), ((0, 3), (1, 3)), ((), ())])
def test_sum_to_size(shape, size, layout):
    t, a = make(shape, ptl.float64, layout)
    lead = len(shape) - len(size)
    axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(size)
                                      if s == 1 and shape[lead + i] != 1)
    want = a.sum(axis=axes, keepdims=True).reshape(size)
    assert_close(t.sum_to_size(*size), want, rtol=1e-12, atol=1e-14)
    assert_close(t.sum_to_size(size), want, rtol=1e-12, atol=1e-14)
    if tuple(size) == tuple(shape):
        assert t.sum_to_size(size) is t


def test_sum_to_size_errors_and_integers():
    assert_close(ptl.tensor([[1, 2], [3, 4]]).sum_to_size(2), np.array([4, 6]),
                 dtype=ptl.int64)
    assert_raises_like_torch(lambda m: m.ones(2, 3).sum_to_size(3, 3), RuntimeError,
                             "size {[3, 3]} is not expandable to size {[2, 3]}.")
    assert_raises_like_torch(lambda m: m.ones(2, 3).sum_to_size(1, 2, 3, 4), RuntimeError,
                             "size {[1, 2, 3, 4]} is not expandable to size {[2, 3]}.")


def _np_block_diag(*arrays):
    arrays = [np.atleast_2d(a) for a in arrays]
    out = np.zeros((sum(a.shape[0] for a in arrays), sum(a.shape[1] for a in arrays)),
                   dtype=np.result_type(*arrays) if arrays else np.float32)
    r = c = 0
    for a in arrays:
        out[r:r + a.shape[0], c:c + a.shape[1]] = a
        r, c = r + a.shape[0], c + a.shape[1]
    return out


def test_block_diag():
    t, a = make((2, 3), ptl.float64, "transposed")
    u, b = make((4,), ptl.float64, "sliced", seed=1)
    _exact(ptl.block_diag(t, u, ptl.tensor(7.0, dtype=ptl.float64), ptl.ones(0, 2)),
           _np_block_diag(a, b, np.array(7.0), np.ones((0, 2))))
    assert ptl.block_diag().shape == (1, 0)
    mixed = ptl.block_diag(ptl.tensor([[1, 2]]), ptl.tensor([0.5]))
    assert_close(mixed, np.array([[1, 2, 0], [0, 0, 0.5]]), dtype=ptl.float32)
    _exact(ptl.block_diag(ptl.tensor([[True]]), ptl.tensor([[False, True]])),
           np.array([[True, False, False], [False, False, True]]))
    assert_raises_like_torch(lambda m: m.block_diag(m.ones(2, 2, 2)), RuntimeError,
                             "torch.block_diag: Input tensors must have 2 or fewer dimensions. "
                             "Input 0 has 3 dimensions")


def test_cartesian_prod_and_combinations():
    a, b = ptl.tensor([1, 2, 3]), ptl.tensor([4, 5])
    _exact(ptl.cartesian_prod(a, b), np.array(list(itertools.product([1, 2, 3], [4, 5]))))
    assert ptl.cartesian_prod(a) is a
    x, xa = make((5,), ptl.float64, "sliced")
    for r in (1, 2, 3, 5, 6):
        for with_replacement in (False, True):
            it = (itertools.combinations_with_replacement if with_replacement
                  else itertools.combinations)
            want = np.array(list(it(xa, r))).reshape(-1, r)
            _exact(ptl.combinations(x, r, with_replacement), want)
    _exact(ptl.combinations(x, 0), np.zeros(0))
    assert ptl.combinations(ptl.tensor([], dtype=ptl.int32)).shape == (0, 2)
    assert ptl.combinations(ptl.tensor([], dtype=ptl.int32)).dtype == ptl.int32
    assert_raises_like_torch(lambda m: m.combinations(m.ones(2, 2)), RuntimeError,
                             "Expect a 1D vector, but got shape [2, 2]")
    assert_raises_like_torch(lambda m: m.combinations(m.ones(2), r=-1), RuntimeError,
                             "Expect a non-negative number, but got -1")
    assert_raises_like_torch(lambda m: m.cartesian_prod(m.ones(2), m.ones(2, 2)), RuntimeError,
                             "Expect a 1D vector, but got shape [2, 2]")


@pytest.mark.parametrize("row, col, offset", [(3, 4, 0), (4, 3, -1), (0, 3, 0), (3, 3, 5),
                                              (3, 3, -5), (1, 1, 0), (5, 2, 1), (3, 0, 0),
                                              (0, 0, 0), (0, 0, -2), (4, 6, 2), (6, 4, -2),
                                              (4, 6, 6), (4, 6, 5), (4, 6, -4), (4, 6, -3),
                                              (2, 3, 2 ** 62), (2, 3, -2 ** 62),
                                              (2, 3, 2 ** 63 - 1), (2, 3, -2 ** 63)])
def test_tril_and_triu_indices(row, col, offset):
    # the native factories (factory.c): offsets on, past and far past both corners
    # (clamped before any row + offset), empty rows or columns
    clip = max(min(offset, 10), -10)
    _exact(ptl.tril_indices(row, col, offset), np.array(np.tril_indices(row, clip, col)))
    _exact(ptl.triu_indices(row, col, offset), np.array(np.triu_indices(row, clip, col)))
    for fn, npfn in ((ptl.tril_indices, np.tril_indices), (ptl.triu_indices, np.triu_indices)):
        got = fn(row, col, offset, dtype=ptl.int32)
        assert got.dtype == ptl.int32
        _exact(got, np.array(npfn(row, clip, col)).astype(np.int32))
        assert fn(row, col, offset, dtype=None).dtype == ptl.int64


def test_tri_indices_large_and_devices():
    r, c = np.triu_indices(1000, 0, 1000)
    got = ptl.triu_indices(1000, 1000)
    assert got.shape == (2, 500500) and got.is_contiguous()
    _exact(got, np.stack([r, c]))
    _exact(ptl.tril_indices(257, 300, -3), np.array(np.tril_indices(257, -3, 300)))
    meta = ptl.triu_indices(5, 7, 1, device="meta")
    assert meta.shape == (2, 20) and meta.device.type == "meta"
    assert ptl.tril_indices(3, 3, device="cpu").device.type == "cpu"
    if torch is not None:
        for args in [(5, 7, 1), (7, 5, -2), (0, 4, 0)]:
            for name in ("tril_indices", "triu_indices"):
                _exact(getattr(ptl, name)(*args), getattr(torch, name)(*args).numpy())


def test_tri_indices_count_every_small_corner():
    # the closed-form count (factory.c's tri_count) against NumPy on every small shape and
    # every offset on, before and past both corners
    for row in range(7):
        for col in range(7):
            for offset in range(-9, 10):
                for fn, npfn in ((ptl.tril_indices, np.tril_indices),
                                 (ptl.triu_indices, np.triu_indices)):
                    _exact(fn(row, col, offset), np.array(npfn(row, offset, col)))


BIG = 2 ** 63 - 1


@pytest.mark.parametrize("name, args, rows, cols", [
    # rows that keep no column are never visited (a loop over 2^40 or 2^63 rows hung)
    ("triu_indices", (2 ** 40, 5, 0), *np.triu_indices(5)),
    ("tril_indices", (5, BIG, 0), *np.tril_indices(5)),
    ("tril_indices", (2 ** 62, 5, -2 ** 62 + 3),
     [2 ** 62 - 3, 2 ** 62 - 2, 2 ** 62 - 2, 2 ** 62 - 1, 2 ** 62 - 1, 2 ** 62 - 1],
     [0, 0, 1, 0, 1, 2]),
    ("tril_indices", (BIG, 3, -BIG + 1), [BIG - 1], [0]),
    ("tril_indices", (2 ** 40, 0, 0), [], []), ("triu_indices", (BIG, 0, -BIG), [], []),
    # PyTorch 2.13 raises an overflow here: no triu row keeps a column past the last one
    ("triu_indices", (BIG, 5, 2 ** 40), [], []),
    # and a negative dimension here
    ("triu_indices", (5, BIG, BIG), [], []),
])
def test_tri_indices_of_huge_sizes(name, args, rows, cols):
    got = getattr(ptl, name)(*args)
    _exact(got, np.array([rows, cols], dtype=np.int64).reshape(2, -1))
    assert getattr(ptl, name)(*args, device="meta").shape == (2, len(rows))


@pytest.mark.parametrize("name, args", [
    ("tril_indices", (BIG, 5, 2 ** 40)), ("triu_indices", (5, BIG, 0)),
    ("triu_indices", (BIG, BIG, 0)),
])
def test_tri_indices_count_overflow_like_torch(name, args):
    assert_raises_like_torch(lambda m: getattr(m, name)(*args), RuntimeError,
                             "Storage size calculation overflowed")


def test_tri_indices_count_overflow():
    # PyTorch 2.13 returns 11 and 4 indices here (its count wraps); there are 5 (3) x 2^63 - 1
    for row in (5, 3):
        with pytest.raises(RuntimeError, match=re.escape(
                f"Storage size calculation overflowed: tril_indices({row}, {BIG}, offset) has "
                "more than 2^63 - 1 indices")):
            ptl.tril_indices(row, BIG, BIG)


def test_tri_indices_errors():
    assert_raises_like_torch(lambda m: m.tril_indices(-1, 2), RuntimeError,
                             "row must be non-negative, got-1")
    assert_raises_like_torch(lambda m: m.triu_indices(2, -3), RuntimeError,
                             "col must be non-negative, got-3")
    assert_raises_like_torch(lambda m: m.tril_indices(2, 2, dtype=m.float32),
                             NotImplementedError, "\"tril_indices\" not implemented for 'Float'")
    for dt, name in [("int16", "Short"), ("int8", "Char"), ("uint8", "Byte"), ("bool", "Bool"),
                     ("float64", "Double"), ("complex64", "ComplexFloat")]:
        assert_raises_like_torch(lambda m: m.triu_indices(3, 2, dtype=getattr(m, dt)),
                                 NotImplementedError,
                                 f"\"triu_indices\" not implemented for '{name}'")
    assert_raises_like_torch(lambda m: m.triu_indices(-1, 2, dtype=m.float32), RuntimeError,
                             "row must be non-negative, got-1")


@pytest.mark.parametrize("shape", [(2, 3), (4,), (2, 1, 5), (3, 0), 6])
def test_unravel_index(shape):
    size = int(np.prod(shape))
    flat = np.arange(size).reshape(-1, 2) if size % 2 == 0 else np.arange(size)
    got = ptl.unravel_index(ptl.tensor(flat), shape)
    want = np.unravel_index(flat, shape)
    assert isinstance(got, tuple) and len(got) == len(want)
    for g, w in zip(got, want):
        _exact(g, w)
    # out-of-range and negative indices wrap (PyTorch's floor_divide / remainder composite)
    got = ptl.unravel_index(ptl.tensor([7, -1], dtype=ptl.int32), (2, 3))
    _exact(got[0], np.array([0, 1]))
    _exact(got[1], np.array([1, 2]))
    assert_raises_like_torch(lambda m: m.unravel_index(m.tensor([1.0]), (2, 2)), TypeError,
                             "expected 'indices' to be integer dtype, but got torch.float32")
    assert_raises_like_torch(lambda m: m.unravel_index(m.tensor([1]), (2, -2)), ValueError,
                             "'shape' cannot have negative values, but got (2, -2)")


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [ptl.int32, ptl.int64, ptl.float32, ptl.float64])
def test_isin_against_numpy(dtype, layout):
    t, a = make((3, 4), dtype, layout, low=-4, high=4)
    for test in ([1, -2, 3, 3], [], [0], list(range(-4, 5)), [[2, 7], [-4, -4]]):
        for invert in (False, True):
            want = np.isin(a, np.array(test, dtype=np.int64), invert=invert)
            got = ptl.isin(t, ptl.tensor(test, dtype=ptl.int64), invert=invert)
            _exact(got, want)
    _exact(ptl.isin(t, 2, assume_unique=True), np.isin(a, 2))
    _exact(ptl.isin(2, t), np.isin(2, a))
    _exact(ptl.isin(ptl.tensor([], dtype=dtype), t), np.zeros(0, dtype=bool))


def test_isin_special_values_and_errors():
    x = np.array([np.nan, -0.0, 1.5, np.inf])
    test = np.array([np.nan, 0.0, np.inf, 2.0])
    _exact(ptl.isin(ptl.tensor(x), ptl.tensor(test)), np.isin(x, test))
    _exact(ptl.isin(ptl.tensor([1.5, 2.0]), ptl.tensor([2])), np.array([False, True]))
    assert_raises_like_torch(lambda m: m.isin(m.tensor([True]), m.tensor([True])), RuntimeError,
                             "Unsupported input type encountered for isin(): Bool")


def test_gradcheck():
    t = make((3, 4), ptl.float64, "transposed")[0].requires_grad_()
    u = make((3,), ptl.float64, seed=1)[0].requires_grad_()
    for fn, args in [
            (ptl.ravel, (t,)), (lambda x: ptl.atleast_3d(x), (u,)),
            (lambda x, y: ptl.column_stack([x, y]), (t, u)),
            (lambda x, y: ptl.dstack([x, x]), (t, u)), (lambda x: ptl.hsplit(x, 2)[1], (t,)),
            (lambda x: ptl.diagflat(x, 1), (u,)), (lambda x: ptl.narrow_copy(x, 1, 1, 2), (t,)),
            (lambda x: x.sum_to_size(1, 4), (t,)), (lambda x, y: ptl.block_diag(x, y), (t, u)),
            (lambda x, y: ptl.cartesian_prod(x, y), (u, u)),
            (lambda x: ptl.combinations(x, 2, True), (u,))]:
        assert gradcheck(fn, args)
