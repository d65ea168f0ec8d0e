"""index_put_ / index_put / x[idx] = v with a value of another dtype (Note [Index put of one
value through a mask] in src/aten/native/index.c): PyTorch's "Index put requires the source
and destination dtypes match" for every pair of dtypes, 0-dim values included, raised after
the indices' and the value's shape checks and before any index's range is read; and its one
exception, a one-element value through a single mask without accumulate (masked_fill_):
converted to self's dtype with masked_fill's range check, a uint8 mask refused, the same
elements written as with a value of self's dtype."""
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import assert_raises_like_torch

NAMES = ["complex64", "complex128", "float32", "float64", "float16", "int64", "int32", "uint8",
         "bool"]
LEGACY = {"complex64": "ComplexFloat", "complex128": "ComplexDouble", "float32": "Float",
          "float64": "Double", "float16": "Half", "int64": "Long", "int32": "Int",
          "uint8": "Byte", "bool": "Bool"}


def _puts(lib, dst, src):
    """(name, call) of every form that must refuse a src value into a dst tensor"""
    d, s = getattr(lib, dst), getattr(lib, src)
    i, m = lib.tensor([0, 2]), lib.tensor([True, False, False, True])
    return [
        ("setitem", lambda: lib.zeros(4, dtype=d).__setitem__(i, lib.ones(2, dtype=s))),
        ("setitem 0-dim", lambda: lib.zeros(4, dtype=d).__setitem__(i, lib.tensor(1, dtype=s))),
        ("index_put_", lambda: lib.zeros(4, dtype=d).index_put_((i,), lib.ones(2, dtype=s))),
        ("index_put", lambda: lib.zeros(4, dtype=d).index_put((i,), lib.ones(2, dtype=s))),
        ("accumulate", lambda: lib.zeros(4, dtype=d).index_put_((i,), lib.ones(1, dtype=s),
                                                                 accumulate=True)),
        ("mask, two values", lambda: lib.zeros(4, dtype=d).__setitem__(m, lib.ones(2, dtype=s))),
        ("mask, accumulate", lambda: lib.zeros(4, dtype=d).index_put_(
            (m,), lib.tensor(1, dtype=s), accumulate=True)),
        ("mask and index", lambda: lib.zeros(2, 2, dtype=d).__setitem__(
            (lib.tensor([True, False]), lib.tensor([0])), lib.tensor(1, dtype=s))),
        ("out of range", lambda: lib.zeros(4, dtype=d).index_put_((lib.tensor([7]),),
                                                                   lib.ones(1, dtype=s))),
    ]


@pytest.mark.parametrize("dst", NAMES)
@pytest.mark.parametrize("src", NAMES)
def test_index_put_refuses_another_dtype(dst, src):
    if dst == src:
        return
    for k in range(len(_puts(ptl, dst, src))):
        assert_raises_like_torch(
            lambda lib, k=k: _puts(lib, dst, src)[k][1](), RuntimeError,
            f"Index put requires the source and destination dtypes match, got {LEGACY[dst]} "
            f"for the destination and {LEGACY[src]} for the source.")


def test_index_put_checks_shapes_before_dtypes():
    assert_raises_like_torch(
        lambda lib: lib.zeros(4, dtype=lib.complex64).__setitem__(lib.tensor([0, 2]),
                                                                  lib.ones(3)),
        RuntimeError, "shape mismatch: value tensor of shape [3] cannot be broadcast to "
                      "indexing result of shape [2]")
    assert_raises_like_torch(
        lambda lib: lib.zeros(4, dtype=lib.complex64).index_put_((lib.tensor([True, False]),),
                                                                 lib.tensor(2.0)),
        IndexError, "The shape of the mask [2] at index 0 does not match the shape of the "
                    "indexed tensor [4] at index 0")
    # a value of self's dtype: the bad index raises
    assert_raises_like_torch(
        lambda lib: lib.zeros(4).index_put_((lib.tensor([7]),), lib.ones(1)),
        IndexError, "index 7 is out of bounds for dimension 0 with size 4")


@pytest.mark.parametrize("dst", NAMES)
@pytest.mark.parametrize("src", ["complex128", "float64", "int64", "bool"])
def test_one_value_through_a_mask_converts(dst, src):
    g = np.random.default_rng(3)
    m = g.random((3, 4)) > 0.5
    x = g.integers(0, 3, (3, 4))
    row = np.array([True, False, True])
    for value, want in ((ptl.tensor(1, dtype=getattr(ptl, src)), 1),
                        (ptl.ones(1, 1, dtype=getattr(ptl, src)), 1)):
        for index, sel in (((ptl.tensor(m),), m), ((ptl.tensor(row),), row),
                           ((slice(None), ptl.tensor(m[0])), (slice(None), m[0]))):
            t = ptl.tensor(x).to(getattr(ptl, dst))
            t[index] = value
            a = x.copy()
            a[sel] = want
            np.testing.assert_array_equal(t.numpy(), a.astype(t.numpy().dtype))
            if not isinstance(index[0], slice):
                got = ptl.tensor(x).to(getattr(ptl, dst)).index_put(index, value)
                np.testing.assert_array_equal(got.numpy(), t.numpy())


def test_one_value_through_a_mask_errors():
    m = [True, False, False, True]
    for dst, v, what in (("float32", 2 + 1j, "float"), ("int64", float("nan"), "int64_t"),
                         ("int8", 300, "int8_t"), ("uint8", -300, "uint8_t")):
        assert_raises_like_torch(
            lambda lib, dst=dst, v=v: lib.zeros(4, dtype=getattr(lib, dst)).__setitem__(
                lib.tensor(m), lib.tensor(v)),
            RuntimeError, f"value cannot be converted to type {what} without overflow")
    for dt in ("complex64", "float32"):
        assert_raises_like_torch(
            lambda lib, dt=dt: lib.zeros(4, dtype=getattr(lib, dt)).__setitem__(
                lib.tensor(m, dtype=lib.uint8), lib.tensor(2, dtype=getattr(lib, dt))),
            RuntimeError, "masked_fill_ only supports boolean masks, but got mask with dtype "
                          "unsigned char")
    # a one-element value with an imaginary part of zero fits a real tensor
    t = ptl.zeros(4)
    t[ptl.tensor(m)] = ptl.tensor(2 + 0j)
    assert t.tolist() == [2.0, 0.0, 0.0, 2.0]


def test_one_value_through_a_mask_gradients():
    """autograd sees index_put: the value's gradient sums the masked positions' gradients,
    in the value's own dtype"""
    m = ptl.tensor([True, False, True, False])
    x = ptl.zeros(4, requires_grad=True)
    v = ptl.tensor([2.0], dtype=ptl.float64, requires_grad=True)
    y = x.clone().index_put((m,), v)
    (y * ptl.tensor([1.0, 3.0, 4.0, 5.0])).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 3, 0, 5])
    assert v.grad.dtype == ptl.float64
    np.testing.assert_array_equal(v.grad.numpy(), [5.0])
