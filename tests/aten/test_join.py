"""cat/concat, stack, hstack, vstack against NumPy (values, every dtype and layout) and torch
(type promotion, legacy empty inputs, errors)."""
import re

import numpy as np
import pytest

import pytorchlite as ptl
from golden import Raised, golden
from helpers import (ALL_DTYPES, LAYOUTS, assert_close, assert_raises_like_torch, make, torch)

TORCH_DTYPE = {d: getattr(torch, str(d).split(".")[-1]) for d in ALL_DTYPES} if torch else {}

# (shapes joined, dim): every shape equal except along dim
CAT_CASES = [
    ([(3,), (4,)], 0), ([(2, 3), (4, 3)], 0), ([(2, 3), (2, 1), (2, 0)], 1),
    ([(2, 3), (2, 5)], -1), ([(2, 3, 4), (2, 1, 4), (2, 2, 4)], 1), ([(0, 3), (2, 3)], 0),
    ([(2, 3, 5)], 2), ([(1, 2, 3), (4, 2, 3)], -3),
]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shapes,dim", CAT_CASES, ids=str)
def test_cat_vs_numpy(shapes, dim, layout):
    pairs = [make(s, ptl.float32, layout, seed=i) for i, s in enumerate(shapes)]
    want = np.concatenate([a for _, a in pairs], axis=dim)
    assert_close(ptl.cat([t for t, _ in pairs], dim), want, dtype=ptl.float32)
    assert_close(ptl.concat([t for t, _ in pairs], dim=dim), want, dtype=ptl.float32)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_join_every_dtype(dtype):
    (a, na), (b, nb) = make((2, 3), dtype, "transposed", 1), make((2, 3), dtype, "sliced", 2)
    assert_close(ptl.cat([a, b], 1), np.concatenate([na, nb], 1), dtype=dtype)
    assert_close(ptl.stack([a, b], 1), np.stack([na, nb], 1), dtype=dtype)
    assert_close(ptl.hstack([a, b]), np.hstack([na, nb]), dtype=dtype)
    assert_close(ptl.vstack([a, b]), np.vstack([na, nb]), dtype=dtype)


@pytest.mark.parametrize("da,db", [(ptl.int32, ptl.float32), (ptl.bool, ptl.uint8),
                                   (ptl.int8, ptl.uint8), (ptl.float16, ptl.bfloat16),
                                   (ptl.int64, ptl.float64), (ptl.bool, ptl.bool)], ids=str)
def test_cat_promotes_like_torch(da, db):
    (a, na), (b, nb) = make((2, 2), da, seed=1), make((3, 2), db, seed=2)
    got = ptl.cat([a, b])
    want = golden(lambda: torch.cat([torch.from_numpy(na).to(TORCH_DTYPE[da]),
                                     torch.from_numpy(nb).to(TORCH_DTYPE[db])]))
    assert str(got.dtype) == str(want.dtype)
    assert_close(got, np.concatenate([na, nb]).astype(np.float64))
    assert str(ptl.stack([a[:2], b[:2]]).dtype) == str(want.dtype)


def test_cat_legacy_empty_1d_skipped():
    for make_inputs in [
        lambda m: [m.zeros(2, 3), m.zeros(0)],
        lambda m: [m.zeros(0), m.ones(2, 3, dtype=m.int32)],
        lambda m: [m.zeros(0, dtype=m.float64), m.ones(2, 3, dtype=m.int32)],
        lambda m: [m.zeros(0), m.zeros(0)],
        lambda m: [m.zeros(0, dtype=m.int8)],
    ]:
        for dim in (0, 1):
            want = golden(lambda: torch.cat(make_inputs(torch), dim))
            if isinstance(want, Raised):
                assert want.type_name == "IndexError"
                with pytest.raises(IndexError, match=re.escape(want.message)):
                    ptl.cat(make_inputs(ptl), dim)
                continue
            got = ptl.cat(make_inputs(ptl), dim)
            assert tuple(got.shape) == tuple(want.shape)
            assert str(got.dtype) == str(want.dtype)
            np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 0, 4)], ids=str)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_stack_vs_numpy(shape, dim):
    if not -len(shape) - 1 <= dim <= len(shape):
        dim = 0
    pairs = [make(shape, ptl.float64, "contiguous", seed=i) for i in range(3)]
    assert_close(ptl.stack([t for t, _ in pairs], dim), np.stack([a for _, a in pairs], dim),
                 dtype=ptl.float64)


@pytest.mark.parametrize("shapes", [[(), (2,)], [(3,), (2,)], [(2, 1), (2, 3)],
                                    [(2, 3, 1), (2, 2, 1)], [(1,), ()]], ids=str)
def test_hstack_vs_numpy(shapes):
    pairs = [make(s, ptl.int64, seed=i) for i, s in enumerate(shapes)]
    assert_close(ptl.hstack([t for t, _ in pairs]), np.hstack([a for _, a in pairs]),
                 dtype=ptl.int64)


@pytest.mark.parametrize("shapes", [[(), (1,)], [(3,), (2, 3)], [(2, 3), (3,)],
                                    [(1, 2, 3), (2, 2, 3)], [(0, 3), (3,)]], ids=str)
def test_vstack_vs_numpy(shapes):
    pairs = [make(s, ptl.int64, seed=i) for i, s in enumerate(shapes)]
    assert_close(ptl.vstack([t for t, _ in pairs]), np.vstack([a for _, a in pairs]),
                 dtype=ptl.int64)


def test_join_outputs_are_new_tensors():
    a = ptl.ones(2, 3)
    out = ptl.cat([a])
    assert out.data_ptr() != a.data_ptr()
    out.zero_()
    assert float(a.numpy().sum()) == 6.0
    assert ptl.stack([a, a]).is_contiguous()
    assert ptl.cat([a.t(), a.t()]).is_contiguous()


ERRORS = [
    (lambda m: m.cat([]), ValueError, "torch.cat(): expected a non-empty list of Tensors"),
    (lambda m: m.cat([m.zeros(()), m.zeros(2)]), RuntimeError,
     "zero-dimensional tensor (at position 0) cannot be concatenated"),
    (lambda m: m.cat([m.zeros(2), m.zeros(())]), RuntimeError,
     "zero-dimensional tensor (at position 1) cannot be concatenated"),
    (lambda m: m.cat([m.zeros(2, 3), m.zeros(2)]), RuntimeError,
     "Tensors must have same number of dimensions: got 2 and 1"),
    (lambda m: m.cat([m.zeros(2, 3), m.zeros(3, 3)], 1), RuntimeError,
     "Sizes of tensors must match except in dimension 1. Expected size 2 but got size 3 for "
     "tensor number 1 in the list."),
    (lambda m: m.cat([m.zeros(0, 3), m.zeros(2, 3)], 1), RuntimeError,
     "Sizes of tensors must match except in dimension 1. Expected size 0 but got size 2 for "
     "tensor number 1 in the list."),
    (lambda m: m.cat([m.zeros(2, 3), m.zeros(2, 3)], 2), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    (lambda m: m.concat([m.zeros(2, 3), m.zeros(2, 3)], dim=-3), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got -3)"),
    (lambda m: m.stack([]), RuntimeError, "stack expects a non-empty TensorList"),
    (lambda m: m.stack([m.zeros(2), m.zeros(3)]), RuntimeError,
     "stack expects each tensor to be equal size, but got [2] at entry 0 and [3] at entry 1"),
    (lambda m: m.stack([m.zeros(2, 1), m.zeros(2, 1), m.zeros(2)]), RuntimeError,
     "stack expects each tensor to be equal size, but got [2, 1] at entry 0 and [2] at entry 2"),
    (lambda m: m.stack([m.zeros(2), m.zeros(2)], 2), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    (lambda m: m.hstack([]), RuntimeError, "hstack expects a non-empty TensorList"),
    (lambda m: m.vstack([]), RuntimeError, "vstack expects a non-empty TensorList"),
    (lambda m: m.hstack([m.zeros(3), m.zeros(2, 3)]), RuntimeError,
     "Tensors must have same number of dimensions: got 1 and 2"),
    (lambda m: m.vstack([m.zeros(2), m.zeros(2, 3)]), RuntimeError,
     "Sizes of tensors must match except in dimension 0. Expected size 2 but got size 3 for "
     "tensor number 1 in the list."),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors_match_torch(case):
    assert_raises_like_torch(*ERRORS[case])
