"""Scalars and floats converted to a tensor's dtype as PyTorch converts them: a Scalar that
does not fit the dtype raises c10's checked_convert error (fill_, masked_fill, index_fill,
clamp's bounds, a float16 pow's exponent), an unsigned dtype takes -255..-1 wrapped, and a
float -> integer cast gives what PyTorch's x86 build gives for NaN and out-of-range values."""
import re

import numpy as np
import pytest

import pytorchlite as ptl
from helpers import assert_close, torch, torch_ref


def overflow(name):
    return "^" + re.escape(f"value cannot be converted to type {name} without overflow") + "$"


@pytest.mark.parametrize("dt,value,name", [
    (ptl.uint8, 300, "uint8_t"), (ptl.uint8, -256, "uint8_t"), (ptl.int8, 200, "int8_t"),
    (ptl.int16, 1 << 15, "int16_t"), (ptl.int32, 1 << 31, "int"), (ptl.float16, 1e10,
                                                                   "c10::Half")])
def test_fill_values_that_do_not_fit_raise(dt, value, name):
    mask = ptl.tensor([True, False])
    with pytest.raises(RuntimeError, match=overflow(name)):
        ptl.zeros(2, dtype=dt).masked_fill(mask, value)
    with pytest.raises(RuntimeError, match=overflow(name)):
        ptl.zeros(2, dtype=dt).masked_fill_(mask, value)
    with pytest.raises(RuntimeError, match=overflow(name)):
        ptl.zeros(2, dtype=dt).fill_(value)
    with pytest.raises(RuntimeError, match=overflow(name)):
        ptl.zeros(2, dtype=dt).index_fill(0, ptl.tensor([0]), value)


def test_unsigned_fill_wraps_small_negatives():
    t = ptl.tensor([1, 2], dtype=ptl.uint8)
    assert t.masked_fill(ptl.tensor([True, False]), -1).tolist() == [255, 2]
    assert t.clone().fill_(-255).tolist() == [1, 1]
    assert ptl.zeros(2, dtype=ptl.float16).fill_(float("inf")).tolist() == [float("inf")] * 2


@pytest.mark.parametrize("lo,hi,want", [(-1, None, [255, 255, 255]), (-5, 100, [100] * 3),
                                        (-1, 250, [250] * 3), (None, 2, [0, 2, 2]),
                                        (3, 100, [3, 5, 100])])
def test_clamp_bounds_are_converted_to_uint8(lo, hi, want):
    x = ptl.tensor([0, 5, 200], dtype=ptl.uint8)
    assert ptl.clamp(x, lo, hi).tolist() == want
    y = x.clone()
    y.clamp_(lo, hi)
    assert y.tolist() == want
    if hi is None:
        assert ptl.clamp_min(x, lo).tolist() == want


@pytest.mark.parametrize("dt,lo,hi,name", [(ptl.uint8, None, 300, "uint8_t"),
                                           (ptl.int8, -200, 300, "int8_t"),
                                           (ptl.float16, -1e10, None, "c10::Half")])
def test_clamp_bounds_that_do_not_fit_raise(dt, lo, hi, name):
    with pytest.raises(RuntimeError, match=overflow(name)):
        ptl.clamp(ptl.zeros(3, dtype=dt), lo, hi)


@pytest.mark.parametrize("exponent", [1e10, -1e10, 65536.0])
def test_float16_pow_by_an_exponent_beyond_half_raises(exponent):
    x = ptl.tensor([0.5, 1.0, 2.0], dtype=ptl.float16)
    with pytest.raises(RuntimeError, match=overflow("c10::Half")):
        ptl.pow(x, exponent)
    with pytest.raises(RuntimeError, match=overflow("c10::Half")):
        x ** exponent


def test_pow_exponents_that_fit_keep_working():
    x = ptl.tensor([0.5, 1.0, 2.0], dtype=ptl.float16)
    assert_close(x ** 65504.0, np.array([0.0, 1.0, np.inf]), dtype=ptl.float16)
    assert_close(ptl.tensor([0.5, 2.0], dtype=ptl.bfloat16) ** 1e10, np.array([0.0, np.inf]),
                 dtype=ptl.bfloat16)


NAN, INF = float("nan"), float("inf")
SPECIAL = [NAN, INF, -INF, 1e20, 3e9, 2.5, -2.5, 300.0, -3.0]


@pytest.mark.parametrize("src", [ptl.float32, ptl.float64])
@pytest.mark.parametrize("dt,want", [
    (ptl.int64, [-(1 << 63)] * 4 + [3000000000, 2, -2, 300, -3]),
    (ptl.int32, [-(1 << 31)] * 5 + [2, -2, 300, -3]),
    (ptl.int16, [0] * 5 + [2, -2, 300, -3]),
    (ptl.int8, [0] * 5 + [2, -2, 44, -3]),
    (ptl.uint8, [0] * 5 + [2, 254, 44, 253]),
])
def test_float_to_integer_casts_of_special_values(src, dt, want):
    x = ptl.tensor(SPECIAL, dtype=src)
    assert x.to(dt).tolist() == want
    # strided source
    assert ptl.tensor([[v, 0.0] for v in SPECIAL], dtype=src)[:, 0].to(dt).tolist() == want


def test_float16_nan_to_int32():
    x = ptl.tensor([NAN, INF, -INF, 2.5, -2.5], dtype=ptl.float16)
    assert x.to(ptl.int32).tolist() == [-(1 << 31)] * 3 + [2, -2]


@torch_ref
@pytest.mark.parametrize("dt", ["int64", "int32", "int16", "int8", "uint8"])
def test_float_to_integer_casts_match_torch(dt):
    ours = ptl.tensor(SPECIAL).to(getattr(ptl, dt)).tolist()
    assert ours == torch.tensor(SPECIAL).to(getattr(torch, dt)).tolist()


@torch_ref
def test_scalar_conversions_match_torch():
    for L in (ptl, torch):
        x = L.tensor([0, 5, 200], dtype=L.uint8)
        assert L.clamp(x, -1).tolist() == [255, 255, 255]
        with pytest.raises(RuntimeError, match=overflow("uint8_t")):
            x.masked_fill(L.tensor([True, False, False]), 300)
        with pytest.raises(RuntimeError, match=overflow("c10::Half")):
            L.pow(L.ones(2, dtype=L.float16), 1e10)


@pytest.mark.parametrize("fn", ["unique", "unique_consecutive"])
@pytest.mark.parametrize("dim", [0, -1, 1])
def test_unique_along_a_dim_of_a_0dim_tensor_raises(fn, dim):
    msg = f"^Dimension specified as {dim} but tensor has no dimensions$"
    with pytest.raises(IndexError, match=msg):
        getattr(ptl, fn)(ptl.tensor(3), dim=dim)


def test_unique_along_dim_of_a_1d_tensor():
    vals, inv, cnt = ptl.unique(ptl.tensor([3, 1, 3]), dim=0, return_inverse=True,
                                return_counts=True)
    assert vals.tolist() == [1, 3] and inv.tolist() == [1, 0, 1] and cnt.tolist() == [1, 2]
