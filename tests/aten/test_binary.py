"""Binary pointwise ops (binary.c, compare.c) against NumPy in float64 (exact for integers),
with PyTorch's semantics encoded where NumPy differs; result dtypes, errors and float edge
cases come from PyTorch's recorded outputs (golden.py; live torch too when installed)."""
import builtins
import operator
import os
import re

import numpy as np
import pytest

import pytorchlite as ptl
from golden import Raised, golden
from helpers import (ALL_DTYPES, BROADCAST_PAIRS, FLOAT_DTYPES, INT_DTYPES, LAYOUTS, NP_DTYPE,
                     SHAPES, assert_close, make, rerun_with_capability, to_numpy, torch)


def tdt(d):
    """The torch dtype of a pytorchlite dtype."""
    return getattr(torch, str(d).split(".")[1])


def as_torch(t):
    return torch.tensor(to_numpy(t)).to(tdt(t.dtype))


def np_cast(a, d):
    """a (float64 or exact ints) in dtype d's NumPy dtype; float16 rounds, bfloat16 and the
    other floats stay float64 (the result is compared with a tolerance)."""
    if d == ptl.float16:
        return np.asarray(a).astype(np.float16).astype(np.float64)
    if d in FLOAT_DTYPES:
        return np.asarray(a).astype(np.float64)
    with np.errstate(all="ignore"):
        return np.asarray(a).astype(NP_DTYPE[d])


# ---- references: PyTorch's semantics in NumPy.  a, b arrive in the compute dtype
# (exact integers of that dtype, or float64 for floating dtypes). ----

def ref_trunc(a, b):
    if a.dtype.kind == "f":
        return np.trunc(a / b)
    q = np.abs(a.astype(np.int64)) // np.abs(b.astype(np.int64))
    return np.where((a < 0) != (b < 0), -q, q)


def ref_pow(a, b):
    if a.dtype.kind == "f":
        with np.errstate(all="ignore"):
            return np.power(a, b)
    with np.errstate(all="ignore"):
        p = np.power(a, np.maximum(b, 0).astype(a.dtype))
    neg = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 1, -1, 1), 0))
    return np.where(b < 0, neg.astype(a.dtype), p)


def ref_shift(left):
    def f(a, b):
        bits = a.dtype.itemsize * 8
        out_of_range = (b < 0) | (b >= bits)
        bs = np.where(out_of_range, 0, b).astype(a.dtype)
        with np.errstate(all="ignore"):
            r = np.left_shift(a, bs) if left else np.right_shift(a, bs)
        fill = 0 if left else np.where(a < 0, -1, 0).astype(a.dtype)
        return np.where(out_of_range, fill, r)
    return f


def ref_isclose(a, b):
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    with np.errstate(all="ignore"):
        diff = np.abs(a - b)
        return (a == b) | (np.isfinite(diff) & (diff <= 1e-8 + np.abs(1e-5 * b)))


# name: (pytorchlite call, reference, kind): kind "arith" (result in the op's dtype),
# "pred" (bool result computed in the common dtype), "div" (divisor kept away from 0).
OPS = {
    "div": (ptl.div, lambda a, b: a.astype(np.float64) / b, "div"),
    "div_trunc": (lambda a, b: ptl.div(a, b, rounding_mode="trunc"), ref_trunc, "div"),
    "div_floor": (lambda a, b: ptl.div(a, b, rounding_mode="floor"), np.floor_divide, "div"),
    "floor_divide": (ptl.floor_divide, np.floor_divide, "div"),
    "remainder": (ptl.remainder, np.remainder, "div"),
    "fmod": (ptl.fmod, np.fmod, "div"),
    "pow": (ptl.pow, ref_pow, "arith"),
    "atan2": (ptl.atan2, lambda a, b: np.arctan2(a.astype(np.float64), b), "arith"),
    "maximum": (ptl.maximum, np.maximum, "arith"),
    "minimum": (ptl.minimum, np.minimum, "arith"),
    "fmax": (ptl.fmax, np.fmax, "arith"),
    "fmin": (ptl.fmin, np.fmin, "arith"),
    "eq": (ptl.eq, np.equal, "pred"),
    "ne": (ptl.ne, np.not_equal, "pred"),
    "lt": (ptl.lt, np.less, "pred"),
    "le": (ptl.le, np.less_equal, "pred"),
    "gt": (ptl.gt, np.greater, "pred"),
    "ge": (ptl.ge, np.greater_equal, "pred"),
    "logical_and": (ptl.logical_and, np.logical_and, "pred"),
    "logical_or": (ptl.logical_or, np.logical_or, "pred"),
    "logical_xor": (ptl.logical_xor, np.logical_xor, "pred"),
    "bitwise_and": (ptl.bitwise_and, np.bitwise_and, "arith"),
    "bitwise_or": (ptl.bitwise_or, np.bitwise_or, "arith"),
    "bitwise_xor": (ptl.bitwise_xor, np.bitwise_xor, "arith"),
    "bitwise_left_shift": (ptl.bitwise_left_shift, ref_shift(True), "shift"),
    "bitwise_right_shift": (ptl.bitwise_right_shift, ref_shift(False), "shift"),
    "isclose": (ptl.isclose, ref_isclose, "pred"),
}
TORCH_NAME = {"div_trunc": "div", "div_floor": "div"}
TORCH_KW = {"div_trunc": {"rounding_mode": "trunc"}, "div_floor": {"rounding_mode": "floor"}}


def torch_call(name, a, b):
    return getattr(torch, TORCH_NAME.get(name, name))(a, b, **TORCH_KW.get(name, {}))


def operands(name, sa, sb, da, db, la="contiguous", lb="contiguous", seed=0):
    kind = OPS[name][2]
    a, an = make(sa, da, la, seed)
    if kind == "div" and db != ptl.bool:
        b, bn = make(sb, db, lb, seed + 1, low=1, high=5)
    elif kind == "shift":
        b, bn = make(sb, db, lb, seed + 1, low=-2, high=9)
    elif name == "isclose":   # half of the values close to a's
        b, bn = make(sb, db, lb, seed + 1, low=-1, high=1)
    else:
        b, bn = make(sb, db, lb, seed + 1)
    return a, an, b, bn


def torch_dtypes(name, ta, tb):
    """The names of torch.result_type(ta, tb) and of the dtype of op `name`'s result."""
    return [str(torch.result_type(ta, tb)).split(".")[1],
            str(torch_call(name, ta, tb).dtype).split(".")[1]]


def torch_dtype_rules(name, cases):
    """For each (da, db, sa, sb) in cases, what torch does with op `name` on tensors of those
    dtypes and shapes: None where it rejects their promoted dtype, else the names of
    (result_type, the result's dtype).  From golden.py: one record for all the cases."""
    def live():
        rules = []
        for da, db, sa, sb in cases:
            one = torch.ones(2, dtype=torch.promote_types(tdt(da), tdt(db)))
            try:
                torch_call(name, one, one)
            except Exception:  # noqa: BLE001 -- torch rejects the promoted dtype
                rules.append(None)
                continue
            rules.append(torch_dtypes(name, torch.ones(sa, dtype=tdt(da)),
                                      torch.ones(sb, dtype=tdt(db))))
        return rules
    return golden(live)


def check(name, a, an, b, bn, dtypes):
    """Runs op `name` on (a, b) and compares with the reference; dtypes: the names of torch's
    result_type of (a, b) and of the op's result dtype."""
    fn, ref, kind = OPS[name]
    common, out_dtype = getattr(ptl, dtypes[0]), getattr(ptl, dtypes[1])
    if name == "isclose":   # tolerance arithmetic happens in the inputs' own precision
        an, bn = np_cast(an, common), np_cast(bn, common)
    compute = common if kind == "pred" or common not in INT_DTYPES + [ptl.bool] else out_dtype
    got = fn(a, b)
    x, y = np_cast(an, compute), np_cast(bn, compute)
    if compute == ptl.bool and kind not in ("pred",):
        x, y = x.astype(np.bool_), y.astype(np.bool_)
    with np.errstate(all="ignore"):
        expected = np_cast(ref(x, y), out_dtype)
    assert_close(got, expected, dtype=out_dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("name", list(OPS))
def test_op_shapes_layouts(name, dtype):
    dtypes = golden(lambda: torch_dtypes(name, torch.ones(2, dtype=tdt(dtype)),
                                         torch.ones(2, dtype=tdt(dtype))))
    if isinstance(dtypes, Raised):   # torch rejects the dtype: so do we, in the same words
        a, _, b, _ = operands(name, (3,), (3,), dtype, dtype)
        with pytest.raises(getattr(builtins, dtypes.type_name), match=re.escape(dtypes.message)):
            OPS[name][0](a, b)
        return
    for i, shape in enumerate(SHAPES):
        for layout in LAYOUTS:
            check(name, *operands(name, shape, shape, dtype, dtype, layout, layout, seed=i),
                  dtypes)


MIXED = [(ptl.int32, ptl.float32), (ptl.uint8, ptl.int8), (ptl.bool, ptl.int16),
         (ptl.float16, ptl.float64), (ptl.int64, ptl.bfloat16), (ptl.uint8, ptl.bool)]


@pytest.mark.parametrize("name", list(OPS))
def test_op_broadcast_mixed_dtypes(name):
    cases = []
    for i, (sa, sb) in enumerate(BROADCAST_PAIRS):
        for da, db in MIXED:
            if name == "isclose":
                db = da   # isclose requires equal dtypes
            cases += [(da, db, sa, sb), (db, da, sb, sa)]
    rules = torch_dtype_rules(name, cases)
    for k in range(0, len(cases), 2):
        (da, db, sa, sb), i = cases[k], k // (2 * len(MIXED))
        if rules[k] is None:   # torch rejects the promoted dtype
            continue
        if OPS[name][2] == "div" and ptl.bool in (da, db):
            continue   # a bool divisor is 0 half the time
        lb = LAYOUTS[i % len(LAYOUTS)]
        check(name, *operands(name, sa, sb, da, db, "contiguous", lb, seed=i), rules[k])
        check(name, *operands(name, sb, sa, db, da, lb, "sliced", seed=i), rules[k + 1])


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=str)
@pytest.mark.parametrize("name", ["div_trunc", "div_floor", "floor_divide", "remainder", "fmod"])
def test_integer_division_signs(name, dtype):
    """Negative dividends and divisors, against NumPy in int64 (and torch when installed)."""
    lo = 0 if dtype == ptl.uint8 else -9
    av = np.arange(lo, 10)
    bv = np.array([v for v in range(lo, 5) if v != 0])
    an, bn = np.meshgrid(av, bv)
    a, b = ptl.tensor(an, dtype=dtype), ptl.tensor(bn, dtype=dtype)
    got = OPS[name][0](a, b)
    assert_close(got, np_cast(OPS[name][1](an, bn), dtype), dtype=dtype)
    if torch is not None:
        assert_close(got, torch_call(name, as_torch(a), as_torch(b)).numpy(), dtype=dtype)


def test_integer_division_by_zero():
    a, z = ptl.tensor([5, -5, 7]), ptl.tensor([0, 1, 2])
    for f in [lambda: ptl.div(a, z, rounding_mode="trunc"),
              lambda: ptl.div(a, z, rounding_mode="floor"), lambda: a // z, lambda: a // 0,
              lambda: a % 0, lambda: ptl.remainder(a, z), lambda: ptl.fmod(a, z),
              lambda: ptl.tensor([1], dtype=ptl.uint8) % ptl.tensor(256)]:
        with pytest.raises(RuntimeError, match="^ZeroDivisionError$"):
            f()
    x = ptl.tensor([4, 6])
    with pytest.raises(RuntimeError, match="^ZeroDivisionError$"):
        x //= 0
    assert_close(ptl.div(a, z), [np.inf, -5.0, 3.5], dtype=ptl.float32)
    assert_close(a / 0, [np.inf, -np.inf, np.inf], dtype=ptl.float32)


def test_int64_min_by_minus_one_does_not_trap():
    m = ptl.tensor([-2**63])
    assert_close(ptl.div(m, ptl.tensor([-1]), rounding_mode="trunc"), np.array([-2**63]))
    assert_close(ptl.div(m, ptl.tensor([-1]), rounding_mode="floor"), np.array([-2**63]))
    assert_close(ptl.remainder(m, ptl.tensor([-1])), np.array([0]))
    assert_close(ptl.fmod(m, ptl.tensor([-1])), np.array([0]))


FLOAT_EDGE = [5.0, -5.0, 0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 0.3, 4.5]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("name", ["div", "div_trunc", "div_floor", "remainder", "fmod", "pow",
                                  "atan2", "maximum", "minimum", "fmax", "fmin", "eq", "lt",
                                  "isclose"])
def test_float_edge_values_match_torch(name, dtype):
    if name == "div_trunc" and dtype in (ptl.float16, ptl.bfloat16):
        # torch rounds a / b to the dtype before trunc on its vector path but not on its
        # scalar path (4.5 / 0.3 gives 15 or 14); we truncate the float quotient
        an, bn = np.meshgrid([4.5, -4.5], [0.3])
        got = ptl.div(ptl.tensor(an, dtype=dtype), ptl.tensor(bn, dtype=dtype), rounding_mode="trunc")
        assert_close(got, np.array([[14.0, -14.0]]), dtype=dtype)
        return
    an, bn = np.meshgrid(FLOAT_EDGE, FLOAT_EDGE + [-3.0, 0.1, 1.5])
    a, b = ptl.tensor(an, dtype=dtype), ptl.tensor(bn, dtype=dtype)
    expected = golden(lambda: torch_call(name, as_torch(a), as_torch(b)))
    assert_close(OPS[name][0](a, b), expected.numpy(), dtype=expected.dtype)
    if name == "maximum":   # NaN propagation is not a tolerance question
        got = to_numpy(ptl.maximum(a, b))
        assert np.array_equal(np.isnan(got), np.isnan(an) | np.isnan(bn))


def test_pow_python_exponent_fast_paths_match_torch():
    vals = [-np.inf, -2.0, -0.0, 0.0, 0.5, 3.0, np.inf, np.nan]
    for dtype in FLOAT_DTYPES:
        x = ptl.tensor(vals, dtype=dtype)
        for e in [2, 3, 0.5, -0.5, -1, -2, 0, 1, 1.7, -3]:
            by_number, by_tensor = golden(lambda: (
                torch.tensor(vals, dtype=tdt(dtype)) ** e,
                torch.pow(torch.tensor(vals, dtype=tdt(dtype)), torch.tensor(e, dtype=tdt(dtype)))))
            assert_close(x ** e, by_number.numpy(), dtype=dtype)
            assert_close(ptl.pow(x, ptl.tensor(e, dtype=dtype)), by_tensor.numpy())


def test_pow_integer_rules():
    i = ptl.tensor([1, -1, 2, 0, 3])
    for bad in [lambda: i ** -1, lambda: ptl.pow(i, -2), lambda: ptl.tensor([True]) ** -1]:
        with pytest.raises(RuntimeError,
                           match=re.escape("Integers to negative integer powers are not allowed.")):
            bad()
    e = ptl.tensor([-1, -1, -2, -1, 2])
    assert_close(i ** e, ref_pow(to_numpy(i), to_numpy(e)), dtype=ptl.int64)
    if torch is not None:
        assert_close(i ** e, torch.pow(as_torch(i), as_torch(e)).numpy(), dtype=ptl.int64)
    assert_close(i ** ptl.tensor(-1), np.array([1, -1, 0, 0, 0]), dtype=ptl.int64)
    assert_close(ptl.tensor([2], dtype=ptl.int32) ** 40, np.array([0]), dtype=ptl.int32)
    assert_close(ptl.tensor([3], dtype=ptl.uint8) ** 5, np.array([243]), dtype=ptl.uint8)
    assert_close(2 ** ptl.tensor([3], dtype=ptl.uint8), np.array([8]), dtype=ptl.uint8)
    assert_close(2.5 ** ptl.tensor([3], dtype=ptl.uint8), np.array([15.625]), dtype=ptl.float32)
    with np.errstate(all="ignore"):
        assert_close(i ** 0.5, np.sqrt([1.0, -1, 2, 0, 3]), dtype=ptl.float32)
        assert_close(i ** -1.0, 1 / np.array([1.0, -1, 2, 0, 3]), dtype=ptl.float32)


def test_shifts_out_of_range_match_torch():
    cases = [(ptl.int8, [-100, 100, 3, -1], [8, -1, 7, 9]),
             (ptl.uint8, [200, 100, 3, 255], [8, 200, 1, 7]),
             (ptl.int64, [100, -100, 5, -2**63], [64, 65, -1, 63]),
             (ptl.int32, [1, -1, 7, 2**30], [31, 32, 0, 1])]
    for dtype, av, bv in cases:
        a, b = ptl.tensor(av, dtype=dtype), ptl.tensor(bv, dtype=dtype)
        an, bn = np.array(av, dtype=NP_DTYPE[dtype]), np.array(bv, dtype=NP_DTYPE[dtype])
        for name, op in [("bitwise_left_shift", operator.lshift),
                         ("bitwise_right_shift", operator.rshift)]:
            expected = OPS[name][1](an, bn)
            if torch is not None:
                assert_close(ptl.tensor(expected), torch_call(name, as_torch(a),
                                                              as_torch(b)).numpy())
            assert_close(op(a, b), expected, dtype=dtype)
            assert_close(OPS[name][0](a, b), expected, dtype=dtype)
    assert_close(ptl.tensor([1, 2], dtype=ptl.int8) << 10, np.array([0, 0]), dtype=ptl.int8)
    assert_close(ptl.tensor([True, False]) << 1, np.array([2, 0]), dtype=ptl.int64)


@pytest.mark.parametrize("name,kname", [
    ("bitwise_and", "bitwise_and_cpu"), ("bitwise_or", "bitwise_or_cpu"),
    ("bitwise_xor", "bitwise_xor_cpu"), ("bitwise_left_shift", "lshift_cpu"),
    ("bitwise_right_shift", "rshift_cpu")])
def test_bitwise_rejects_floats(name, kname):
    for dtype in FLOAT_DTYPES:
        x = ptl.tensor([1.0, 2.0], dtype=dtype)
        legacy = {ptl.float16: "Half", ptl.bfloat16: "BFloat16", ptl.float32: "Float",
                  ptl.float64: "Double"}[dtype]
        with pytest.raises(NotImplementedError,
                           match=re.escape(f'"{kname}" not implemented for \'{legacy}\'')):
            OPS[name][0](x, x)
    with pytest.raises(NotImplementedError, match=re.escape('"lshift_cpu" not implemented for \'Float\'')):
        ptl.tensor([1, 2]) << 1.5


# ---- Python numbers and operators ----

def test_python_numbers_and_reflected_operators():
    x, xn = make((3, 4), ptl.float32, "transposed", seed=3)
    i, inn = make((3, 4), ptl.int64, "sliced", seed=4, low=1, high=9)
    assert_close(x + 1, xn + 1, dtype=ptl.float32)
    assert_close(2 * x, 2 * xn, dtype=ptl.float32)
    assert_close(2 - x, 2 - xn, dtype=ptl.float32)
    assert_close(1.5 - i, 1.5 - inn, dtype=ptl.float32)
    assert_close(i / 2, inn / 2, dtype=ptl.float32)
    assert_close(7 / i, 7 / inn, dtype=ptl.float32)
    assert_close(i // 2, inn // 2, dtype=ptl.int64)
    assert_close(-7 // i, -7 // inn, dtype=ptl.int64)
    assert_close(i % 3, inn % 3, dtype=ptl.int64)
    assert_close(-7 % i, -7 % inn, dtype=ptl.int64)
    assert_close(x // 0.5, xn // 0.5, dtype=ptl.float32)
    assert_close(x % -1.5, np.remainder(xn.astype(np.float64), -1.5), dtype=ptl.float32)
    assert_close(x ** 2, xn.astype(np.float64) ** 2, dtype=ptl.float32)
    assert_close(2 ** x, 2.0 ** xn.astype(np.float64), dtype=ptl.float32)
    assert_close(i ** 2, inn ** 2, dtype=ptl.int64)
    assert_close(i & 6, inn & 6, dtype=ptl.int64)
    assert_close(6 | i, 6 | inn, dtype=ptl.int64)
    assert_close(i ^ 3, inn ^ 3, dtype=ptl.int64)
    assert_close(i << 2, inn << 2, dtype=ptl.int64)
    assert_close(i >> 1, inn >> 1, dtype=ptl.int64)
    assert_close(ptl.tensor([True, False]) & True, np.array([True, False]), dtype=ptl.bool)
    for op in [operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge]:
        assert_close(op(x, 0.5), op(xn, np.float32(0.5)), dtype=ptl.bool)
        assert_close(op(0.5, x), op(np.float32(0.5), xn), dtype=ptl.bool)
        assert_close(op(i, 3), op(inn, 3), dtype=ptl.bool)
        assert_close(op(i, x), op(inn, xn), dtype=ptl.bool)
    assert_close(x / 0, np.where(xn > 0, np.inf, np.where(xn < 0, -np.inf, np.nan)),
                 dtype=ptl.float32)


def test_inplace_operators():
    x, xn = make((3, 4), ptl.float32, "contiguous", seed=5)
    y = x.clone()
    y += 1
    y *= 2
    y -= x
    y /= 4
    y //= 0.25
    y %= 3
    y **= 2
    assert_close(y, np.remainder(((xn.astype(np.float64) + 1) * 2 - xn) / 4 // 0.25, 3) ** 2)
    i, inn = make((5,), ptl.int32, seed=6, low=1, high=50)
    j = i.clone()
    j += 1
    j //= 3
    j %= 5
    j &= 6
    j |= 1
    j ^= 2
    j <<= 2
    j >>= 1
    r = (((((((inn + 1) // 3) % 5) & 6) | 1) ^ 2) << 2) >> 1
    assert_close(j, r, dtype=ptl.int32)
    with pytest.raises(RuntimeError,
                       match=re.escape("result type Float can't be cast to the desired output type Long")):
        k = ptl.tensor([1, 2, 3])
        k += 1.5
    with pytest.raises(RuntimeError,
                       match=re.escape("result type Float can't be cast to the desired output type Long")):
        k = ptl.tensor([1, 2, 3])
        k /= 2


@pytest.mark.parametrize("name", ["div", "remainder", "fmod", "pow", "atan2", "eq", "lt",
                                  "logical_and", "bitwise_and", "bitwise_left_shift",
                                  "div_floor", "fmin"])
def test_inplace_and_out_forms(name):
    fn = OPS[name][0]
    method = TORCH_NAME.get(name, name)
    kw = TORCH_KW.get(name, {})
    dtype = ptl.int32 if name.startswith("bitwise") else ptl.float64
    a, an, b, bn = operands(name, (3, 4), (4,), dtype, dtype, "transposed", "contiguous")
    expected = fn(a, b)
    if golden(lambda: hasattr(torch.Tensor, method + "_")):
        c = a.clone()
        r = getattr(c, method + "_")(b, **kw)
        assert r is c
        with np.errstate(all="ignore"):   # in place, the result is cast to a's dtype
            assert_close(c, np_cast(OPS[name][1](an, bn), dtype), dtype=dtype)
        if torch is not None:
            texp = getattr(as_torch(a), method + "_")(as_torch(b), **kw)
            assert_close(c, texp.numpy(), dtype=dtype)
    out = ptl.tensor(np.zeros((3, 4)), dtype=expected.dtype)
    r = getattr(ptl, method)(a, b, out=out, **kw)
    assert r is out
    assert_close(out, to_numpy(expected), dtype=expected.dtype)
    out = ptl.tensor(np.zeros((1,)), dtype=expected.dtype)   # out= is resized
    getattr(ptl, method)(a, b, out=out, **kw)
    assert_close(out, to_numpy(expected), dtype=expected.dtype)


def test_comparison_inplace_keeps_dtype_and_out_casts():
    x = ptl.tensor([1.0, 2.0])
    x.lt_(ptl.tensor([2, 2]))
    assert_close(x, np.array([1.0, 0.0]), dtype=ptl.float32)
    i = ptl.tensor([1, 2, 3])
    i.eq_(2.5)
    assert_close(i, np.array([0, 0, 0]), dtype=ptl.int64)
    i = ptl.tensor([1, 0])
    i.logical_and_(ptl.tensor([2.0, 2.0]))
    assert_close(i, np.array([1, 0]), dtype=ptl.int64)
    out = ptl.tensor([9.0, 9.0, 9.0])
    ptl.eq(ptl.tensor([1, 2, 3]), 2, out=out)
    assert_close(out, np.array([0.0, 1.0, 0.0]), dtype=ptl.float32)
    with pytest.raises(RuntimeError,
                       match=re.escape("result type Float can't be cast to the desired output type Long")):
        ptl.div(ptl.tensor([1, 2]), 2, out=ptl.tensor([0, 0]))
    assert_close(ptl.div(ptl.tensor([1, 2]), 2, rounding_mode="floor", out=ptl.tensor([0.0, 0.0])),
                 np.array([0.0, 1.0]), dtype=ptl.float32)


def test_broadcast_errors():
    a, b = ptl.tensor(np.zeros((2, 3))), ptl.tensor(np.zeros((2, 4)))
    msg = "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1"
    for name in OPS:
        with pytest.raises(RuntimeError, match=re.escape(msg)):
            OPS[name][0](a.to(ptl.int64), b.to(ptl.int64) + 1)
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        ptl.allclose(a, b)
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        a == b
    x = ptl.tensor([1.0, 2.0, 3.0])
    y = ptl.tensor(np.ones((2, 3)))
    msg = "output with shape [3] doesn't match the broadcast shape [2, 3]"
    for f in [lambda: x.div_(y), lambda: x.eq_(y), lambda: x.pow_(y), lambda: x.atan2_(y),
              lambda: x.logical_or_(y), lambda: x.remainder_(y)]:
        with pytest.raises(RuntimeError, match=re.escape(msg)):
            f()
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        x += y


def test_div_rounding_mode_errors_and_dtypes():
    i = ptl.tensor([1, 2, 3])
    with pytest.raises(RuntimeError, match=re.escape(
            "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'x'")):
        ptl.div(i, i, rounding_mode="x")
    assert ptl.div(i, 2, rounding_mode="floor").dtype == ptl.int64
    assert ptl.div(i, 2.0, rounding_mode="floor").dtype == ptl.float32
    assert ptl.div(i.to(ptl.float16), 2, rounding_mode="floor").dtype == ptl.float16
    assert ptl.div(i, i, rounding_mode=None).dtype == ptl.float32
    for name, kname in [("div_trunc", "div_trunc_cpu"), ("div_floor", "div_floor_cpu"),
                        ("floor_divide", "div_floor_cpu"), ("remainder", "remainder_cpu"),
                        ("fmod", "fmod_cpu"), ("pow", "pow")]:
        t = ptl.tensor([True])
        with pytest.raises(NotImplementedError,
                           match=re.escape(f'"{kname}" not implemented for \'Bool\'')):
            OPS[name][0](t, t)


def test_ops_without_number_overloads_reject_numbers():
    x = ptl.tensor([1.0, 2.0])
    for f in [lambda: ptl.maximum(x, 2), lambda: ptl.atan2(x, 1), lambda: ptl.fmin(x, 1.0),
              lambda: ptl.logical_xor(x, 0.5), lambda: ptl.isclose(x, 1)]:
        with pytest.raises(TypeError):
            f()


# ---- isclose, allclose, equal ----

def test_isclose_options_and_errors():
    a = ptl.tensor([np.nan, np.inf, -np.inf, 1.0, 1.0, 1.0])
    b = ptl.tensor([np.nan, np.inf, np.inf, np.inf, 1.1, 1.0 + 1e-6])
    for kw in [{}, {"equal_nan": True}, {"rtol": 0.2}, {"atol": 0.05}, {"rtol": 0, "atol": 0},
               {"rtol": 0.2, "atol": 0.0, "equal_nan": True}]:
        close, all_close = golden(lambda: (torch.isclose(as_torch(a), as_torch(b), **kw),
                                           torch.allclose(as_torch(a), as_torch(b), **kw)))
        assert_close(ptl.isclose(a, b, **kw), close.numpy(), dtype=ptl.bool)
        assert ptl.allclose(a, b, **kw) is all_close
    i, j = ptl.tensor([127, 5, 6], dtype=ptl.int8), ptl.tensor([-128, 6, 5], dtype=ptl.int8)
    for kw in [{"atol": 10}, {"rtol": 0.2, "atol": 0}, {"rtol": 0.1, "atol": 0}]:
        close = golden(lambda: torch.isclose(as_torch(i), as_torch(j), **kw))
        assert_close(ptl.isclose(i, j, **kw), close.numpy())
    t, f = ptl.tensor([True, False]), ptl.tensor([False, False])
    assert_close(ptl.isclose(t, f, atol=1), np.array([True, True]), dtype=ptl.bool)
    assert_close(ptl.isclose(t, f), np.array([False, True]), dtype=ptl.bool)
    x, y = ptl.tensor([1.0]), ptl.tensor([1.0], dtype=ptl.float64)
    for f in [lambda: ptl.isclose(x, y), lambda: ptl.allclose(x, y)]:
        with pytest.raises(RuntimeError, match="^Float did not match Double$"):
            f()
    with pytest.raises(RuntimeError, match=re.escape(
            "rtol must be greater than or equal to zero, but got -1e-05")):
        ptl.isclose(x, x, rtol=-1e-5, atol=-1)
    with pytest.raises(RuntimeError, match=re.escape(
            "atol must be greater than or equal to zero, but got -0.5")):
        ptl.allclose(x, x, atol=-0.5)


def test_allclose_and_equal():
    a, an = make((3, 4), ptl.float32, "transposed", seed=7)
    assert ptl.allclose(a, a + 1e-7) is True
    assert ptl.allclose(a, a + 1e-3) is False
    row = ptl.tensor(an[0])
    assert ptl.allclose(row.expand(3, 4).clone(), row) is True   # broadcasts
    assert ptl.equal(a, a.clone()) is True
    assert ptl.equal(a, a + 1) is False
    assert ptl.equal(ptl.tensor([1.0, 2.0]), ptl.tensor([1.0])) is False   # no broadcasting
    assert ptl.equal(ptl.tensor([1.0, 2.0]), ptl.tensor([1.0, 2.0, 3.0])) is False
    assert ptl.equal(ptl.tensor([np.nan]), ptl.tensor([np.nan])) is False
    assert ptl.equal(ptl.tensor([1, 2]), ptl.tensor([1.0, 2.0])) is True
    assert ptl.equal(ptl.tensor([1, 2]), ptl.tensor([1.0, 2.5])) is False
    assert ptl.equal(ptl.tensor([True]), ptl.tensor([1])) is True
    assert ptl.equal(ptl.tensor(np.zeros((0, 3))), ptl.tensor(np.zeros((0, 3)))) is True
    assert a.equal(a) is True and a.allclose(a) is True


def test_pow_overloads_from_python():
    """A Python-number exponent is pow.Tensor_Scalar (PowBackward0), a Python-number base
    pow.Scalar (PowBackward2), two tensors pow.Tensor_Tensor (PowBackward1), as in PyTorch;
    the values and dtypes stay those of the wrapped-number promotion."""
    x = ptl.tensor([0.5, 1.5, 2.0], dtype=ptl.float64, requires_grad=True)
    cases = [(lambda: x ** 2, "PowBackward0"), (lambda: x.pow(2.5), "PowBackward0"),
             (lambda: ptl.pow(x, 3), "PowBackward0"), (lambda: 2 ** x, "PowBackward2"),
             (lambda: ptl.pow(1.5, x), "PowBackward2"), (lambda: x ** x, "PowBackward1"),
             (lambda: x.pow(ptl.tensor(2.0)), "PowBackward1")]
    for make, node in cases:
        assert make().grad_fn.name() == node
    a = np.array([0.5, 1.5, 2.0])
    np.testing.assert_allclose((x ** 2).detach().numpy(), a ** 2, rtol=1e-15)
    np.testing.assert_allclose((2 ** x).detach().numpy(), 2 ** a, rtol=1e-15)
    (g,) = ptl.autograd.grad((x ** 3).sum(), x)
    np.testing.assert_allclose(g.numpy(), 3 * a ** 2, rtol=1e-15)
    (g,) = ptl.autograd.grad((3 ** x).sum(), x)
    np.testing.assert_allclose(g.numpy(), 3 ** a * np.log(3), rtol=1e-15)
    i = ptl.tensor([1, 2, 3])
    assert (i ** 2).dtype == ptl.int64 and (i ** 0.5).dtype == ptl.float32
    assert (2 ** i).dtype == ptl.int64 and (2.0 ** i).dtype == ptl.float32
    y = ptl.tensor([1.0, 2.0])
    y **= 2
    assert y.tolist() == [1.0, 4.0]
    out = ptl.empty(2)
    assert ptl.pow(y, 0.5, out=out) is out and out.tolist() == [1.0, 2.0]
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed."):
        i ** -1


def test_pow_node_names_match_torch():
    # PyTorch 2.13's names, written out: x ** 2 is pow.Tensor_Scalar, 2 ** x pow.Scalar,
    # x ** x pow.Tensor_Tensor; checked against live torch when it is installed
    for lib in [ptl] + ([torch] if torch is not None else []):
        x = lib.tensor([0.5, 1.5], dtype=lib.float64, requires_grad=True)
        names = [(x ** 2).grad_fn.name(), (2 ** x).grad_fn.name(), (x ** x).grad_fn.name(),
                 x.clone().pow_(2).grad_fn.name()]
        assert names == ["PowBackward0", "PowBackward2", "PowBackward1", "PowBackward0"], lib


# ---- float32 vector loops (vec_math.h, Note [Vector float32 division] and Note [Vector
# atan2 and erfinv]): AVX-512 (16 floats, 8 double lanes), AVX2 (8 / 4) and the portable
# loops, chosen by PTL_CPU_CAPABILITY ----

def _float32_operands():
    """Every pair of special values, random values across exponents, quotients at and next
    to integers up to 2^24 and past it (the vector loops' limit), in one flat array each."""
    gen = np.random.default_rng(16)
    v = np.float32([0.0, -0.0, np.inf, -np.inf, np.nan, 1, -1, 1.5, -1.5, 3, -3, 0.1, 7,
                    1e-45, -1e-45, 1e-38, 3.4e38, -3.4e38, 2**24, 2**24 + 2, 2**25, 1e30,
                    -2.5e-30, 16777215, -8388609.5])
    sa, sb = (x.ravel() for x in np.meshgrid(v, v))
    ra = (gen.standard_normal(40000) * np.exp2(gen.integers(-45, 45, 40000))).astype(np.float32)
    rb = (gen.standard_normal(40000) * np.exp2(gen.integers(-45, 45, 40000))).astype(np.float32)
    b = gen.standard_normal(20000).astype(np.float32)
    k = gen.integers(-2**25, 2**25, 20000).astype(np.float32)
    ka = (k * b).astype(np.float32)
    na = np.concatenate([ka, np.nextafter(ka, np.float32(np.inf)),
                         np.nextafter(ka, np.float32(-np.inf))])
    return (np.concatenate([sa, ra, na]).astype(np.float32),
            np.concatenate([sb, rb, np.tile(b, 3)]).astype(np.float32))


def _remainder_f32(a, b):
    """PyTorch's float remainder: fmod, plus b where the signs differ (a zero keeps a's sign,
    unlike NumPy's, which takes b's)."""
    with np.errstate(all="ignore"):
        m = np.fmod(a, b)
        return np.where((m != 0) & ((b < 0) != (m < 0)), m + b, m).astype(np.float32)


DIVISION_F32 = {
    "fmod": (ptl.fmod, np.fmod),
    "remainder": (ptl.remainder, _remainder_f32),
    "floor_divide": (ptl.floor_divide, np.floor_divide),   # NumPy's float divmod is ours
}


def assert_same_bits(got, ref):
    got, ref = np.asarray(got, np.float32), np.asarray(ref, np.float32)
    nan = np.isnan(ref)
    np.testing.assert_array_equal(np.isnan(got), nan)
    bad = np.nonzero(got[~nan].view(np.uint32) != ref[~nan].view(np.uint32))[0]
    assert bad.size == 0, (bad.size, got[~nan][bad[:5]], ref[~nan][bad[:5]])


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", list(DIVISION_F32))
def test_float32_division_bits(name, threads):
    """Bit for bit the scalar formulas (fmodf, ptl_remainder_f, ptl_div_floor_f, which NumPy
    shares), on contiguous, broadcast (a or b one value) and strided operands, each length
    from 0 to 40 (whole vectors of 4, 8 and 16 lanes and every tail), and torch's values."""
    f, ref = DIVISION_F32[name]
    a, b = _float32_operands()
    old = ptl.get_num_threads()
    ptl.set_num_threads(threads)
    try:
        with np.errstate(all="ignore"):
            assert_same_bits(f(ptl.tensor(a), ptl.tensor(b)).numpy(), ref(a, b))
            for n in range(41):
                assert_same_bits(f(ptl.tensor(a[:n]), ptl.tensor(b[:n])).numpy(),
                                 ref(a[:n], b[:n]))
            for s in [np.float32(1.5), np.float32(-0.0), np.float32(np.inf), b[7]]:
                assert_same_bits(f(ptl.tensor(a), ptl.tensor(s)).numpy(), ref(a, s))
                assert_same_bits(f(ptl.tensor(s), ptl.tensor(b)).numpy(), ref(s, b))
            an, bn = a[:20000].reshape(200, 100), b[:20000].reshape(200, 100)
            got = f(ptl.tensor(an).t(), ptl.tensor(bn).t()).numpy()
            assert_same_bits(got, ref(an.T, bn.T))
            x = ptl.tensor(a)
            getattr(x, name + "_")(ptl.tensor(b))
            assert_same_bits(x.numpy(), ref(a, b))
    finally:
        ptl.set_num_threads(old)
    if torch is not None:
        # torch 2.13's vector fmod is a - trunc(a / b) b, NaN where a / b overflows float32;
        # ours is fmodf's exact remainder there: the values are compared elsewhere
        with np.errstate(all="ignore"):
            keep = np.isfinite(a / b) | ~np.isfinite(a) | ~np.isfinite(b)
        got = f(ptl.tensor(a), ptl.tensor(b)).numpy()[keep]
        t = getattr(torch, name)(torch.tensor(a), torch.tensor(b)).numpy()[keep]
        np.testing.assert_array_equal(got, t)
        number = ~np.isnan(t)
        np.testing.assert_array_equal(np.signbit(got[number]), np.signbit(t[number]))


def _float64_operands():
    """Every pair of special values (signed zeros, infinities, NaN, subnormals, the largest
    double, quotients at 2^52 and 2^53), random values across the exponents, and quotients at
    and next to integers up to 2^53 and past it (the vector loops' limit is 2^52)."""
    gen = np.random.default_rng(64)
    v = np.float64([0.0, -0.0, np.inf, -np.inf, np.nan, 1, -1, 1.5, -1.5, 3, -3, 0.1, 7,
                    5e-324, -5e-324, 2.2e-308, 1.7976931348623157e308, -1.7e308, 2.0**52,
                    2.0**52 + 1, 2.0**53, 1e300, -2.5e-300, 2.0**52 - 0.5, -4503599627370497.0])
    sa, sb = (x.ravel() for x in np.meshgrid(v, v))
    ra = gen.standard_normal(40000) * np.exp2(gen.integers(-1000, 1000, 40000))
    rb = gen.standard_normal(40000) * np.exp2(gen.integers(-1000, 1000, 40000))
    ca = gen.standard_normal(20000) * np.exp2(gen.integers(-60, 60, 20000))
    cb = gen.standard_normal(20000) * np.exp2(gen.integers(-60, 60, 20000))
    b = gen.standard_normal(20000)
    k = np.concatenate([gen.integers(-2**40, 2**40, 10000), gen.integers(-2**54, 2**54, 10000)])
    ka = k.astype(np.float64) * b
    na = np.concatenate([ka, np.nextafter(ka, np.inf), np.nextafter(ka, -np.inf)])
    return (np.concatenate([sa, ra, ca, na]), np.concatenate([sb, rb, cb, np.tile(b, 3)]))


def _remainder_f64(a, b):
    with np.errstate(all="ignore"):
        m = np.fmod(a, b)
        return np.where((m != 0) & ((b < 0) != (m < 0)), m + b, m)


DIVISION_F64 = {
    "fmod": (ptl.fmod, np.fmod),
    "remainder": (ptl.remainder, _remainder_f64),
    "floor_divide": (ptl.floor_divide, np.floor_divide),
}


def assert_same_bits64(got, ref):
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    nan = np.isnan(ref)
    np.testing.assert_array_equal(np.isnan(got), nan)
    bad = np.nonzero(got[~nan].view(np.uint64) != ref[~nan].view(np.uint64))[0]
    assert bad.size == 0, (bad.size, got[~nan][bad[:5]], ref[~nan][bad[:5]])


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", list(DIVISION_F64))
def test_float64_division_bits(name, threads):
    """Note [Vector float64 division]: bit for bit libm's fmod and the scalar formulas
    (ptl_remainder_d, ptl_div_floor_d, which NumPy shares), on contiguous, broadcast and
    strided operands, each length from 0 to 40 (whole vectors of 4 and 8 lanes and every
    tail), and in place."""
    f, ref = DIVISION_F64[name]
    a, b = _float64_operands()
    old = ptl.get_num_threads()
    ptl.set_num_threads(threads)
    try:
        with np.errstate(all="ignore"):
            assert_same_bits64(f(ptl.tensor(a), ptl.tensor(b)).numpy(), ref(a, b))
            for n in range(41):
                assert_same_bits64(f(ptl.tensor(a[:n]), ptl.tensor(b[:n])).numpy(),
                                   ref(a[:n], b[:n]))
            for s in [1.5, -0.0, np.inf, b[7], 5e-324]:
                s = np.float64(s)
                assert_same_bits64(f(ptl.tensor(a), ptl.tensor(s)).numpy(), ref(a, s))
                assert_same_bits64(f(ptl.tensor(s), ptl.tensor(b)).numpy(), ref(s, b))
            an, bn = a[:20000].reshape(200, 100), b[:20000].reshape(200, 100)
            got = f(ptl.tensor(an).t(), ptl.tensor(bn).t()).numpy()
            assert_same_bits64(got, ref(an.T, bn.T))
            x = ptl.tensor(a)
            getattr(x, name + "_")(ptl.tensor(b))
            assert_same_bits64(x.numpy(), ref(a, b))
    finally:
        ptl.set_num_threads(old)


def _ulps_f32(got, ref):
    """|got - ref| in float32 ulps of ref (float64); 0 where got is ref rounded to float32"""
    got = np.asarray(got, np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        spacing = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
        same = (got == ref.astype(np.float32)) | (np.isnan(got) & np.isnan(ref))
        return np.where(same, 0.0, np.abs(got - ref) / spacing)


@pytest.mark.parametrize("threads", [1, 2])
def test_float32_atan2_accuracy_and_specials(threads):
    """Within 2.5 ulp of float64 atan2 (measured 2.49 at -7.65e-7 / 1.76e-6), every special
    pair exactly as NumPy's float32 atan2 (signed zeros, infinities, NaN), on every length
    from 0 to 40 and with a broadcast operand."""
    a, b = _float32_operands()
    old = ptl.get_num_threads()
    ptl.set_num_threads(threads)
    try:
        got = ptl.atan2(ptl.tensor(a), ptl.tensor(b)).numpy()
        for n in range(41):
            np.testing.assert_array_equal(
                ptl.atan2(ptl.tensor(a[:n]), ptl.tensor(b[:n])).numpy(), got[:n])
        full = ptl.tensor(np.full_like(a, b[3]))
        np.testing.assert_array_equal(ptl.atan2(ptl.tensor(a), ptl.tensor(b[3])).numpy(),
                                      ptl.atan2(ptl.tensor(a), full).numpy())
    finally:
        ptl.set_num_threads(old)
    ref = np.arctan2(a.astype(np.float64), b.astype(np.float64))
    assert _ulps_f32(got, ref).max() <= 2.5
    special = ~(np.isfinite(a) & np.isfinite(b)) | ((a == 0) & (b == 0))
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(got[special], np.arctan2(a[special], b[special]))
        np.testing.assert_array_equal(np.signbit(got[special]),
                                      np.signbit(np.arctan2(a[special], b[special])))
    if torch is not None:
        t = torch.atan2(torch.tensor(a), torch.tensor(b)).numpy()
        assert _ulps_f32(got, t.astype(np.float64)).max() <= 3.5


@pytest.mark.parametrize("threads", [1, 2])
def test_float32_pow_number_accuracy_and_specials(threads):
    """x ** e for a float32 tensor and a Python number e (Note [Vector float32 pow]): within
    1 ulp of float64 pow (measured: correctly rounded on every point here), every length
    0..40 and strided input as the contiguous whole, x <= 0, inf, NaN and e = inf / NaN as
    powf; the exponents 2, 3, +-0.5, -1, -2 keep their exact fast paths."""
    gen = np.random.default_rng(21)
    x = np.concatenate([np.arange(0, 0x7f800000, 4099, dtype=np.uint32).view(np.float32),
                        gen.uniform(0, 10, 50000).astype(np.float32),
                        np.float32([0.0, -0.0, np.inf, -np.inf, np.nan, -1, -2.5, 1, 1e-45])])
    old = ptl.get_num_threads()
    ptl.set_num_threads(threads)
    try:
        for e in [3.5, -3.5, 1.0, 0.0, 7.0, -0.3, 1 / 3, 100.5, -20.25, 1e-3, 2.0, -0.5,
                  np.inf, -np.inf, np.nan]:
            got = ptl.tensor(x).pow(e).numpy()
            for n in range(41):
                np.testing.assert_array_equal(ptl.tensor(x[:n]).pow(e).numpy(), got[:n])
            np.testing.assert_array_equal(ptl.tensor(x)[::3].pow(e).numpy(), got[::3])
            if e in (2.0, -0.5):   # x * x and 1 / sqrt(x), as before (and as torch)
                continue
            with np.errstate(all="ignore"):
                ref = np.power(x.astype(np.float64), np.float64(np.float32(e)))
                special = ~(np.isfinite(x) & (x > 0)) | ~np.isfinite(np.float32(e))
                np.testing.assert_array_equal(got[special], np.power(x[special], np.float32(e)))
            assert _ulps_f32(got[~special], ref[~special]).max(initial=0) <= 1.0, e
    finally:
        ptl.set_num_threads(old)


@pytest.mark.parametrize("n", [1, 10, 40])
def test_float32_pow_number_that_float_flushes_to_zero(n):
    """A float32 tensor to a number exponent that float rounds to 0 (5e-324, 1e-46): in
    double with the exponent itself, as PyTorch's scalar loop does (its vector lanes take the
    0: 1 at a negative base from the 16th element), so a negative base is nan and 0 ** -5e-324
    is inf, contiguous or strided, whatever the length"""
    x = np.float32([-2.0, -1.0, -0.0, 0.0, 0.5, 1.0, 3.0, np.inf, -np.inf, np.nan] * n)
    for e in (5e-324, -5e-324, 1e-46):
        with np.errstate(all="ignore"):
            ref = np.power(x.astype(np.float64), e).astype(np.float32)
        np.testing.assert_array_equal(ptl.tensor(x).pow(e).numpy(), ref)
        np.testing.assert_array_equal(ptl.tensor(x)[::3].pow(e).numpy(), ref[::3])
    np.testing.assert_array_equal(ptl.tensor(x).pow(1e-30).numpy(),
                                  ptl.tensor(x).pow(np.float32(1e-30).item()).numpy())


@pytest.mark.parametrize("base", [2.0, 1.0])
def test_pow_scalar_out_resizes_an_expanded_out_first(base):
    """pow.Scalar_out takes the exponent's shape for out before it computes (PyTorch's meta
    function), so an expanded out of another shape is resized, not refused as an overlap"""
    out = ptl.zeros(1, 3).expand(4, 3)
    with pytest.warns(UserWarning, match="was resized"):
        r = ptl.ops.aten.pow.Scalar_out(base, ptl.tensor([1.0, 3.0]), out=out)
    assert r is out and out.shape == (2,) and out.stride() == (1,)
    assert out.tolist() == [base, base ** 3]


HALF_OPS = {
    "abs": lambda x, y: x.abs(), "neg": lambda x, y: -x, "exp": lambda x, y: x.exp(),
    "sigmoid": lambda x, y: x.sigmoid(), "sqrt": lambda x, y: x.abs().sqrt(),
    "round": lambda x, y: x.round(), "tanh": lambda x, y: x.tanh(),
    "add": lambda x, y: x + y, "sub alpha": lambda x, y: ptl.sub(x, y, alpha=3),
    "mul": lambda x, y: x * y, "div": lambda x, y: x / y, "add scalar": lambda x, y: x + 1.5,
}


def half_bits(t):
    return t.contiguous().view(ptl.int16).numpy()


@pytest.mark.parametrize("dtype", [ptl.float16, ptl.bfloat16], ids=str)
@pytest.mark.parametrize("name", list(HALF_OPS))
def test_float16_pointwise_through_float32_blocks(name, dtype, threads):
    """Note [Half-precision pointwise through float32]: a float16 op (and a bfloat16 one with
    a vector float32 formula) gives the bits of its float32 op on the converted values,
    rounded back, on every length around the 1024-value blocks and the vector widths, strided,
    broadcast and in place; special values included.  The other bfloat16 loops compute the
    same formula in float, so they give those bits too."""
    f = HALF_OPS[name]
    gen = np.random.default_rng(16)
    special = np.float16([0.0, -0.0, np.inf, -np.inf, np.nan, 65504, -65504, 6e-8, 1e-4, 0.5,
                          2.5, -2.5, 11.0])
    for n in [0, 1, 7, 8, 9, 15, 16, 17, 255, 256, 257, 513, 1000, 1023, 1024, 1025, 2049]:
        a = (gen.standard_normal(n) * 4).astype(np.float16)
        b = (gen.standard_normal(n) * 4).astype(np.float16)
        a[:min(n, special.size)] = special[:n]
        b[:min(n, special.size)] = special[::-1][:n]
        x, y = ptl.tensor(a).to(dtype), ptl.tensor(b).to(dtype)
        want = half_bits(f(x.float(), y.float()).to(dtype))
        np.testing.assert_array_equal(half_bits(f(x, y)), want, err_msg=f"n={n}")
        wide = ptl.zeros(2 * n, dtype=dtype)
        wide[::2] = x
        np.testing.assert_array_equal(half_bits(f(wide[::2], y)), want, err_msg=f"n={n}")
        if n:
            np.testing.assert_array_equal(half_bits(f(x, y[3 % n])),
                                          half_bits(f(x.float(), y[3 % n].float()).to(dtype)))
    x = ptl.tensor(np.float16([1.5, -2.0, 0.25, 3.0])).to(dtype)
    if name in ("add", "mul", "div"):
        z = x.clone()
        getattr(z, {"add": "add_", "mul": "mul_", "div": "div_"}[name])(x)
        np.testing.assert_array_equal(half_bits(z), half_bits(f(x, x)))
    a, b = ptl.tensor(a).to(dtype).double().numpy(), ptl.tensor(b).to(dtype).double().numpy()
    with np.errstate(all="ignore"):
        ref = f(ptl.tensor(a), ptl.tensor(b)).numpy()
    got = f(ptl.tensor(a).to(dtype), ptl.tensor(b).to(dtype)).double().numpy()
    fin = np.isfinite(ref) & (np.abs(ref) < 65504)
    tol = 1e-3 if dtype == ptl.float16 else 8e-3
    np.testing.assert_allclose(got[fin], ref[fin], rtol=tol, atol=1e-7)


# float16 arithmetic: the op, and its formula in float32 lanes (NumPy), whose result rounded to
# float16 is PyTorch's (Note [Float16 arithmetic in registers])
HALF_ARITH = {
    "add": (lambda x, y: x + y, lambda a, b: a + b),
    "add alpha": (lambda x, y: ptl.add(x, y, alpha=0.3), lambda a, b: a + np.float32(0.3) * b),
    "sub alpha": (lambda x, y: ptl.sub(x, y, alpha=-3), lambda a, b: a - np.float32(-3) * b),
    "rsub": (lambda x, y: ptl.rsub(x, y), lambda a, b: b - a),
    "mul": (lambda x, y: x * y, lambda a, b: a * b),
    "div": (lambda x, y: x / y, lambda a, b: a / b),
}


def half_arith_inputs(n, gen):
    """n float16 values of each operand: random ones of every magnitude and every pair of
    special values (signed zeros, infinities, NaNs of both signs, the largest and subnormal
    halves, sums and products that overflow or round at a half's last bit)"""
    special = np.float16([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 65504, -65504, 6e-8,
                          -6e-8, 1e-4, 0.5, 2049, 2050, 1, 3.0, -2.5, 256])
    a = (gen.standard_normal(n) * 10.0 ** gen.integers(-6, 5, n)).astype(np.float16)
    b = (gen.standard_normal(n) * 10.0 ** gen.integers(-6, 5, n)).astype(np.float16)
    k = min(n, special.size ** 2)
    a[:k] = np.repeat(special, special.size)[:k]
    b[:k] = np.tile(special, special.size)[:k]
    return a, b


def assert_half_result(got, a, b, formula, dtype=ptl.float16):
    """got has the bits of formula on float32 lanes rounded to float16, a NaN where it gives
    one"""
    with np.errstate(all="ignore"):
        want = formula(a.astype(np.float32), b.astype(np.float32))
        want16 = want.astype(np.float16)
    g = got.numpy()
    assert got.dtype == dtype
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(g), nan)
    np.testing.assert_array_equal(g[~nan].view(np.uint16),
                                  want16[~nan].view(np.uint16))


@pytest.mark.parametrize("name", list(HALF_ARITH))
def test_float16_arith_in_registers(name, threads):
    """Note [Float16 arithmetic in registers]: add, sub, rsub, mul and true division of float16
    give the float32 result rounded to float16, bit for bit, at every length through two
    AVX-512 vectors and one (0..33: every tail), past the threads' split, contiguous, offset
    by one value (unaligned), strided (staged runs), each operand broadcast (a 0-dim tensor,
    a Python number, an expanded row, an outer product), in place and into out=.  A NaN
    result has the float32 path's bits, but for its sign where both operands are NaN (x86
    returns one of them; PyTorch's sign there changes with the length)."""
    f, formula = HALF_ARITH[name]
    gen = np.random.default_rng(33)
    for n in list(range(34)) + [63, 64, 65, 1000, 4097, 2 * 32768 + 17]:
        a, b = half_arith_inputs(n + 2, gen)
        x, y = ptl.tensor(a), ptl.tensor(b)
        got = f(x[:n], y[:n])
        assert_half_result(got, a[:n], b[:n], formula)
        one_nan = ~(np.isnan(a[:n]) & np.isnan(b[:n]))   # two: either sign, as in PyTorch
        np.testing.assert_array_equal(half_bits(got)[one_nan],
                                      half_bits(f(x[:n].float(), y[:n].float()).half())[one_nan])
        assert_half_result(f(x[1:n + 1], y[2:n + 2]), a[1:n + 1], b[2:n + 2], formula)
        if n > 1:
            assert_half_result(f(x[:n][::2], y[1:n + 1][::2]), a[:n][::2],
                               b[1:n + 1][::2], formula)
            for k in (0, n - 1):
                assert_half_result(f(x[:n], y[k]), a[:n], b[k:k + 1], formula)
                assert_half_result(f(x[k], y[:n]), a[k:k + 1], b[:n], formula)
                assert_half_result(f(x[:n], y[k:k + 1].expand(n)), a[:n], b[k:k + 1], formula)
    for v in (1.5, -0.0, 2.0 ** -20, 3072.0):   # halves: PyTorch computes with the float value
        a, b = half_arith_inputs(40, gen)
        assert_half_result(f(ptl.tensor(a), v), a, np.float16(v), formula)
        assert_half_result(f(v, ptl.tensor(a)), np.float16(v), a, formula)
    a, b = half_arith_inputs(37 * 19, gen)
    col, row = a[:37].reshape(37, 1), b[:19].reshape(1, 19)
    assert_half_result(f(ptl.tensor(col), ptl.tensor(row)), col, row, formula)
    x, y = ptl.tensor(a.reshape(37, 19)), ptl.tensor(b.reshape(19, 37))
    assert_half_result(f(x, y.t()), a.reshape(37, 19), b.reshape(19, 37).T, formula)
    out = ptl.empty(37 * 19, dtype=ptl.float16)
    assert_half_result(f(ptl.tensor(a), ptl.tensor(b)), a, b, formula)
    if name in ("add", "mul", "div"):
        z = ptl.tensor(a)
        getattr(z, {"add": "add_", "mul": "mul_", "div": "div_"}[name])(ptl.tensor(b))
        assert_half_result(z, a, b, formula)
        fn = {"add": ptl.add, "mul": ptl.mul, "div": ptl.div}[name]
        fn(ptl.tensor(a), ptl.tensor(b), out=out)
        assert_half_result(out, a, b, formula)
        wide = ptl.empty(37 * 19, dtype=ptl.float32)
        fn(ptl.tensor(a), ptl.tensor(b), out=wide)
        with np.errstate(all="ignore"):
            want = formula(a.astype(np.float32), b.astype(np.float32)).astype(np.float16)
        np.testing.assert_array_equal(wide.numpy(), want.astype(np.float32))


@pytest.mark.skipif("PTL_CPU_CAPABILITY" in os.environ,
                    reason="already running with a capability chosen by a parent run")
@pytest.mark.parametrize("cap", ["default", "avx2"])
def test_float32_vector_loops_other_capabilities(cap):
    """Reruns the float32 and float64 vector loop tests with the portable loops and with AVX2
    only."""
    rerun_with_capability(__file__, cap, "-k",
                          "float32_division_bits or float64_division_bits or float32_atan2 or "
                          "float32_pow or float16_pointwise or float16_arith or "
                          "times_a_number_in_float")


# ---- hypot, nextafter, igamma/igammac, gcd/lcm (special_math.h's formulas) ----

def _ulps(got, ref):
    return np.abs(got - ref) / np.spacing(np.abs(ref))


FLOAT_ONLY = {"hypot": np.hypot, "nextafter": np.nextafter}


@pytest.mark.parametrize("name", list(FLOAT_ONLY))
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64], ids=str)
def test_float_only_ops_shapes_layouts_broadcast(name, dtype):
    fn, ref = getattr(ptl, name), FLOAT_ONLY[name]
    for si, shape in enumerate(SHAPES):
        for layout in LAYOUTS:
            a, an = make(shape, dtype, layout, seed=si)
            b, bn = make(shape, dtype, "contiguous", seed=si + 50)
            expected = ref(an.astype(NP_DTYPE[dtype]), bn.astype(NP_DTYPE[dtype]))
            assert_close(fn(a, b), expected, dtype=dtype, rtol=0, atol=0)
    for sa, sb in BROADCAST_PAIRS:
        a, an = make(sa, dtype, seed=1)
        b, bn = make(sb, dtype, seed=2)
        expected = ref(an.astype(NP_DTYPE[dtype]), bn.astype(NP_DTYPE[dtype]))
        assert_close(fn(a, b), expected, dtype=dtype, rtol=0, atol=0)


def test_hypot_edges_and_promotion():
    big = np.array([1e300, 3e-320, np.inf, np.nan, -np.inf, 0.0, -0.0, 3.0])
    other = np.array([1e300, 4e-320, np.nan, np.inf, 1.0, -0.0, 0.0, -4.0])
    got = ptl.hypot(ptl.tensor(big), ptl.tensor(other)).numpy()
    np.testing.assert_array_equal(got, np.hypot(big, other))
    r = ptl.hypot(ptl.tensor([3.0, 5.0]), ptl.tensor([4, 12]))
    assert_close(r, [5.0, 13.0], dtype=ptl.float32)
    h = ptl.hypot(ptl.tensor([3.0], dtype=ptl.float16), ptl.tensor([4.0], dtype=ptl.float16))
    assert h.dtype == ptl.float16 and h.item() == 5.0


@pytest.mark.parametrize("dtype, np_dtype", [(ptl.float16, np.float16),
                                             (ptl.float32, np.float32),
                                             (ptl.float64, np.float64)], ids=str)
def test_nextafter_steps_in_the_dtype(dtype, np_dtype):
    a = np.array([0.0, -0.0, 1.0, 1.0, -1.0, 65504.0, np.inf, np.nan, 1.0, 2.0, 6e-8, -0.0],
                 dtype=np_dtype)
    b = np.array([1.0, -1.0, 2.0, 0.0, 0.0, np.inf, 0.0, 1.0, np.nan, 2.0, 0.0, 0.0],
                 dtype=np_dtype)
    got = ptl.nextafter(ptl.tensor(a, dtype=dtype), ptl.tensor(b, dtype=dtype)).numpy()
    with np.errstate(over="ignore"):   # 65504 -> inf in float16
        want = np.nextafter(a, b)
    # a == b gives b (C's nextafter, PyTorch: nextafter(-0., 0.) is 0.); NumPy's float16
    # gives a
    want = np.where(a == b, b, want)
    nan = np.isnan(want)   # any NaN; the others bit for bit (the signs of zeros too)
    assert np.array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan].view(np.uint8), want[~nan].view(np.uint8))


def test_nextafter_bfloat16_bits():
    a = ptl.tensor([0.0, -0.0, 1.0, 1.0, -1.0, 3.0, float("nan")], dtype=ptl.bfloat16)
    b = ptl.tensor([-1.0, 1.0, 2.0, 0.0, -2.0, 3.0, 1.0], dtype=ptl.bfloat16)
    bits = ptl.nextafter(a, b).view(ptl.int16).numpy().astype(np.int64) & 0xFFFF
    one = 0x3F80
    np.testing.assert_array_equal(bits, [0x8001, 0x0001, one + 1, one - 1, 0xBF81, 0x4040,
                                         0x7FC0])


def test_nextafter_gradient_is_zero():
    a = ptl.tensor([1.0, 2.0], dtype=ptl.float64, requires_grad=True)
    b = ptl.tensor([3.0, 0.0], dtype=ptl.float64, requires_grad=True)
    r = ptl.nextafter(a, b)
    assert type(r.grad_fn).__name__ == "NextafterBackward0"
    r.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [0.0, 0.0])
    np.testing.assert_array_equal(b.grad.numpy(), [0.0, 0.0])


@pytest.mark.parametrize("name", ["hypot", "nextafter", "igamma", "igammac"])
def test_float_only_ops_refuse_integers(name):
    for dt, legacy in [(ptl.int64, "Long"), (ptl.bool, "Bool"), (ptl.uint8, "Byte")]:
        x = ptl.tensor([1, 2]).to(dt)
        with pytest.raises(NotImplementedError,
                           match=re.escape(f"\"{name}_cpu\" not implemented for '{legacy}'")):
            getattr(ptl, name)(x, x)
    with pytest.raises(TypeError):
        getattr(ptl, name)(ptl.tensor([1.0]), 2.0)


def _gammainc_ref(a, x, upper):
    from scipy import special
    return special.gammaincc(a, x) if upper else special.gammainc(a, x)


@pytest.mark.parametrize("upper", [0, 1])
def test_igamma_accuracy_against_scipy(upper):
    """Relative error within 2 (8 + |a log x| + x + |lgamma(a)|) eps of SciPy over a in
    (0.05, 30), x in (0, 60): the prefactor e^(a log x - x - lgamma(a)) turns its exponent's
    rounding (that size, absolutely) into relative error (measured: 145 ulps at a = 30,
    x = 30; from a = 100 its Stirling form: Note [Incomplete gamma for large a]); results of
    1e-280 and below are compared absolutely."""
    rs = np.random.RandomState(upper)
    a, x = rs.uniform(0.05, 30, 4000), rs.uniform(0, 60, 4000)
    fn = ptl.igammac if upper else ptl.igamma
    got = fn(ptl.tensor(a), ptl.tensor(x)).numpy()
    ref = _gammainc_ref(a, x, upper)
    big = ref > 1e-280
    from scipy import special
    with np.errstate(divide="ignore"):
        size = 8 + np.abs(a * np.log(x)) + x + np.abs(special.gammaln(a))
    assert np.all(np.abs(got - ref)[big] / ref[big] <= 2 * size[big] * 2.2e-16)
    assert np.all(np.abs(got - ref)[~big] <= 1e-280)


def test_igamma_identities_and_special_values():
    x = np.linspace(0, 40, 401)
    one = ptl.ones(401, dtype=ptl.float64)
    np.testing.assert_allclose(ptl.igamma(one, ptl.tensor(x)).numpy(), -np.expm1(-x),
                               rtol=1e-15, atol=1e-300)
    import math
    half = ptl.full((401,), 0.5, dtype=ptl.float64)
    erf = np.array([math.erf(math.sqrt(v)) for v in x])
    np.testing.assert_allclose(ptl.igamma(half, ptl.tensor(x)).numpy(), erf, rtol=1e-15)
    a, xx = make((50, 40), ptl.float64, seed=3, low=0.1, high=12)
    b, _ = make((50, 40), ptl.float64, seed=4, low=0.0, high=25)
    total = (ptl.igamma(a, b) + ptl.igammac(a, b)).numpy()
    np.testing.assert_allclose(total, 1.0, rtol=0, atol=4e-16)
    inf, nan = np.inf, np.nan
    av = ptl.tensor([0, 0, inf, inf, 1, -1, 1, 2, 0.5, 1, inf, 0], dtype=ptl.float64)
    xv = ptl.tensor([0, 1, inf, 1, inf, 1, -1, 0, 0, nan, 0, inf], dtype=ptl.float64)
    np.testing.assert_array_equal(ptl.igamma(av, xv).numpy(),
                                  [nan, 1, nan, 0, 1, nan, nan, 0, 0, nan, 0, 1])
    np.testing.assert_array_equal(ptl.igammac(av, xv).numpy(),
                                  [nan, 0, nan, 1, 0, nan, nan, 1, 1, nan, 1, 0])


@pytest.mark.parametrize("dtype", [ptl.float16, ptl.bfloat16, ptl.float32], ids=str)
def test_igamma_low_precision_is_the_float64_result_rounded(dtype):
    a, _ = make((3, 41), dtype, seed=5, low=0.1, high=6)
    x, _ = make((41,), dtype, seed=6, low=0.0, high=9)
    for fn in (ptl.igamma, ptl.igammac):
        got = fn(a, x)
        assert got.dtype == dtype
        want = fn(a.to(ptl.float64), x.to(ptl.float64)).to(dtype)
        np.testing.assert_array_equal(got.to(ptl.float64).numpy(), want.to(ptl.float64).numpy())


def test_igamma_derivatives():
    a = ptl.tensor([0.7, 2.5, 4.0], dtype=ptl.float64)
    x = ptl.tensor([0.4, 3.0, 2.2], dtype=ptl.float64, requires_grad=True)
    for fn in (ptl.igamma, ptl.igammac, ptl.special.gammainc, ptl.special.gammaincc):
        assert ptl.autograd.gradcheck(lambda t: fn(a, t), (x,))
        assert ptl.autograd.gradgradcheck(lambda t: fn(a, t), (x,))
    for name in ("igamma", "igammac"):
        s = a.clone().requires_grad_()
        r = getattr(ptl, name)(s, x)
        assert type(r.grad_fn).__name__ == name.capitalize() + "Backward0"
        with pytest.raises(NotImplementedError, match=re.escape(
                f"the derivative for '{name}: input' is not implemented.")):
            r.sum().backward()


def test_hypot_derivatives():
    a = ptl.tensor([[3.0, -1.5], [0.2, 7.0]], dtype=ptl.float64, requires_grad=True)
    b = ptl.tensor([4.0, -0.3], dtype=ptl.float64, requires_grad=True)
    assert ptl.autograd.gradcheck(ptl.hypot, (a, b))
    assert ptl.autograd.gradgradcheck(ptl.hypot, (a, b))
    assert type(ptl.hypot(a, b).grad_fn).__name__ == "HypotBackward0"


GCD_DTYPES = [ptl.uint8, ptl.int8, ptl.int16, ptl.int32, ptl.int64]


@pytest.mark.parametrize("dtype", GCD_DTYPES, ids=str)
def test_gcd_lcm_every_integer_dtype(dtype):
    low = 0 if dtype == ptl.uint8 else -40
    for si, shape in enumerate(SHAPES):
        for layout in LAYOUTS:
            a, an = make(shape, dtype, layout, seed=si, low=low, high=40)
            b, bn = make(shape, dtype, "contiguous", seed=si + 9, low=low, high=40)
            assert_close(ptl.gcd(a, b), np.gcd(an, bn).astype(NP_DTYPE[dtype]), dtype=dtype)
            assert_close(ptl.lcm(a, b), np.lcm(an, bn).astype(NP_DTYPE[dtype]), dtype=dtype)
    for sa, sb in BROADCAST_PAIRS:
        a, an = make(sa, dtype, seed=1, low=low, high=40)
        b, bn = make(sb, dtype, seed=2, low=low, high=40)
        assert_close(ptl.gcd(a, b), np.gcd(an, bn).astype(NP_DTYPE[dtype]), dtype=dtype)


def test_gcd_lcm_extremes_promotion_and_in_place():
    lo = np.iinfo(np.int64).min
    a = ptl.tensor([lo, -6, 0, 0, 2 ** 40, 7, -12])
    b = ptl.tensor([0, -4, 0, 5, 3, -7, 18])
    np.testing.assert_array_equal(ptl.gcd(a, b).numpy(), [lo, 2, 0, 5, 1, 7, 6])
    np.testing.assert_array_equal(ptl.lcm(a[1:], b[1:]).numpy(), [12, 0, 0, 3 * 2 ** 40, 7, 36])
    r = ptl.gcd(ptl.tensor([12, 9], dtype=ptl.uint8), ptl.tensor([8, -3], dtype=ptl.int8))
    assert r.dtype == ptl.int16 and r.tolist() == [4, 3]
    x = ptl.tensor([12, 15])
    assert x.gcd_(ptl.tensor([8, 10])) is x and x.tolist() == [4, 5]
    y = ptl.tensor([4, 6])
    assert ptl.lcm_(y, ptl.tensor([6, 4])) is y and y.tolist() == [12, 12]
    out = ptl.empty(0, dtype=ptl.int64)
    assert ptl.gcd(ptl.tensor([9]), ptl.tensor([6]), out=out) is out and out.tolist() == [3]
    assert ptl.gcd(ptl.tensor([4, 6]), ptl.tensor([6, 4])).grad_fn is None


def test_gcd_lcm_refuse_floats_and_bool():
    for dt, legacy in [(ptl.float32, "Float"), (ptl.float64, "Double"), (ptl.bool, "Bool"),
                       (ptl.float16, "Half")]:
        x = ptl.tensor([1, 2]).to(dt)
        for name in ("gcd", "lcm"):
            with pytest.raises(NotImplementedError, match=re.escape(
                    f"\"{name}_cpu\" not implemented for '{legacy}'")):
                getattr(ptl, name)(x, x)
    with pytest.raises(NotImplementedError, match="\"gcd_cpu\" not implemented for 'Float'"):
        ptl.gcd(ptl.tensor([4]), ptl.tensor([2.0]))
    z = ptl.tensor([4], dtype=ptl.int32)   # int64 casts to int32 (the same category)
    assert z.gcd_(ptl.tensor([6])).tolist() == [2] and z.dtype == ptl.int32


@pytest.mark.parametrize("name", ["hypot", "nextafter", "igamma", "igammac"])
def test_float_only_in_place_and_out(name):
    fn = getattr(ptl, name)
    a, an = make((3, 4), ptl.float64, "transposed", seed=1, low=0.1, high=5)
    b, bn = make((4,), ptl.float64, seed=2, low=0.1, high=5)
    expected = fn(a, b).numpy()
    out = ptl.empty(0, dtype=ptl.float64)
    assert fn(a, b, out=out) is out
    np.testing.assert_array_equal(out.numpy(), expected)
    c = a.clone()
    assert getattr(c, name + "_")(b) is c
    np.testing.assert_array_equal(c.numpy(), expected)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        getattr(ptl.tensor([1, 2]), name + "_")(ptl.tensor([1.0, 2.0]))


@pytest.mark.torch_ref
@pytest.mark.parametrize("name", ["hypot", "nextafter", "igamma", "igammac", "gcd", "lcm"])
def test_new_binary_functions_match_torch(name):
    ints = name in ("gcd", "lcm")
    dts = GCD_DTYPES if ints else [ptl.float64, ptl.float32, ptl.float16, ptl.bfloat16]
    for da in dts:
        for db in dts[:2]:
            a, _ = make((4, 5), da, seed=1, low=0 if ints else 0.1, high=30 if ints else 6)
            b, _ = make((5,), db, seed=2, low=0 if ints else 0.1, high=30 if ints else 6)
            got, want = getattr(ptl, name)(a, b), getattr(torch, name)(as_torch(a), as_torch(b))
            assert str(got.dtype) == str(want.dtype), (name, da, db)
            rtol = {ptl.float64: 1e-12, ptl.float32: 1e-6, ptl.float16: 2e-3}.get(got.dtype,
                                                                                     1.6e-2)
            wv = want.to(torch.float64).numpy() if want.is_floating_point() else want.numpy()
            assert_close(got, wv, rtol=rtol, atol=1e-12)
    x = ptl.tensor([1.0, 2.0]) if ints else ptl.tensor([1, 2])
    tx = as_torch(x)
    with pytest.raises(NotImplementedError) as ours:
        getattr(ptl, name)(x, x)
    with pytest.raises(NotImplementedError) as theirs:
        getattr(torch, name)(tx, tx)
    assert str(ours.value) == str(theirs.value)


# Note [Half-precision tensor times a number]: numbers that are not exact in float16 or
# bfloat16 (70000 overflows float16; 7 is an int; 1e-8 is below float16's subnormals)
NUMBERS = [0.001, 1.1, 0.1, -3.3, 70000.0, 1e-8, 7]


def round_to(dtype, f32):
    """float32 values rounded to nearest even in dtype, as float32"""
    return ptl.tensor(np.asarray(f32, np.float32)).to(dtype).float().numpy()


@pytest.mark.parametrize("dtype", [ptl.float16, ptl.bfloat16], ids=str)
def test_half_tensor_times_a_number_in_float(dtype, threads):
    """x * v and x / v of a float16/bfloat16 x and a one-value v (a Python number, a 0-dim
    float64, float32 or int64 tensor) are float(x) * float(v) and float(x) * (1 / float(v))
    rounded once, as PyTorch computes them; so are v * x (x * v) and v / x (reciprocal(x) *
    v); in place and into out= of the half dtype and of float32; on every tail length of the
    float16 vector loop, strided and 0-dim.  add, sub and a 0-dim tensor as mul's first
    operand keep v in the half dtype, as PyTorch does."""
    gen = np.random.default_rng(5)
    for n in list(range(0, 35)) + [1000, 4097]:
        a = round_to(dtype, gen.standard_normal(n + 1) * 3)
        a[:min(n, 4)] = np.float32([0.0, -0.0, np.inf, np.nan])[:min(n, 4)]
        x = ptl.tensor(a).to(dtype)
        for v in NUMBERS:
            vf = np.float32(v)
            with np.errstate(all="ignore"):
                times, over = a * vf, a * (np.float32(1) / vf)
            for number in (v, ptl.tensor(v, dtype=ptl.float64), ptl.tensor(v, dtype=ptl.float32)
                           if isinstance(v, float) else ptl.tensor(v)):
                np.testing.assert_array_equal((x * number).float().numpy(), round_to(dtype, times))
                np.testing.assert_array_equal((x / number).float().numpy(), round_to(dtype, over))
            np.testing.assert_array_equal((v * x).float().numpy(), round_to(dtype, times))
            if n > 1:
                np.testing.assert_array_equal((x[::2] * v).float().numpy(),
                                              round_to(dtype, times[:n + 1:2]))
    a = round_to(dtype, gen.standard_normal(37) * 3)
    x = ptl.tensor(a).to(dtype)
    with np.errstate(all="ignore"):
        recip = round_to(dtype, np.float32(1) / a)
        np.testing.assert_array_equal((1.1 / x).float().numpy(),
                                      round_to(dtype, recip * np.float32(1.1)))
    z = x.clone()
    z.mul_(0.001)
    np.testing.assert_array_equal(z.float().numpy(), round_to(dtype, a * np.float32(0.001)))
    z = x.clone()
    z /= 1.1
    np.testing.assert_array_equal(z.float().numpy(),
                                  round_to(dtype, a * (np.float32(1) / np.float32(1.1))))
    out = ptl.empty(37, dtype=dtype)
    ptl.mul(x, 0.001, out=out)
    np.testing.assert_array_equal(out.float().numpy(), round_to(dtype, a * np.float32(0.001)))
    out32 = ptl.empty(37)
    ptl.mul(x, 0.001, out=out32)
    np.testing.assert_array_equal(out32.numpy(), round_to(dtype, a * np.float32(0.001)))
    v0 = ptl.tensor(a[0]).to(dtype)
    assert (v0 * 0.001).dim() == 0 and (v0 * 0.001).dtype == dtype
    np.testing.assert_array_equal((v0 * 0.001).float().numpy(),
                                  round_to(dtype, a[:1] * np.float32(0.001))[0])
    # the number in the half dtype: add, sub, and a 0-dim tensor first
    h = round_to(dtype, np.float32(0.1))
    np.testing.assert_array_equal((x + 0.1).float().numpy(), round_to(dtype, a + h))
    np.testing.assert_array_equal((x - 0.1).float().numpy(), round_to(dtype, a - h))
    np.testing.assert_array_equal((ptl.tensor(0.1) * x).float().numpy(), round_to(dtype, h * a))


def test_half_tensor_times_a_number_like_pytorch():
    """The same results as PyTorch's, value for value, where PyTorch is installed."""
    torch = pytest.importorskip("torch", reason="PyTorch is the reference here")
    a = np.random.default_rng(6).standard_normal(4096).astype(np.float32) * 3
    for dt in ("float16", "bfloat16", "float32"):
        x, t = ptl.tensor(a).to(getattr(ptl, dt)), torch.tensor(a).to(getattr(torch, dt))
        fs = [lambda y: y * 0.001, lambda y: y / 1.1, lambda y: y / 70000.0,
              lambda y: 1.1 / y, lambda y: 0.001 * y, lambda y: y + 0.1, lambda y: 0.1 - y,
              lambda y: y // 1.1, lambda y: y.div(-0.3, rounding_mode="trunc")]
        if dt != "float32":   # float32 pow: the vector powf and Sleef's may differ in a last bit
            fs.append(lambda y: y.abs() ** 0.3)
        for f in fs:
            got, want = f(x).float().numpy(), f(t).float().numpy()
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [ptl.float16, ptl.bfloat16], ids=str)
def test_half_tensor_floor_and_trunc_division_by_a_number_in_float(dtype, threads):
    """div(x, v, rounding_mode="floor" / "trunc") and x // v of a half-type x and a number:
    float32's floor and trunc division of float(x) by float(v), rounded once (PyTorch's
    reduced-float scalar paths); an unknown mode is still PyTorch's error."""
    a = round_to(dtype, np.random.default_rng(8).standard_normal(1000) * 5)
    a[:4] = [0.0, -0.0, np.inf, np.nan]
    x = ptl.tensor(a).to(dtype)
    for v in (1.1, -0.3, 7, 70000.0):
        vf = ptl.tensor(np.float32(v))
        for mode in ("floor", "trunc"):
            want = ptl.div(x.float(), vf, rounding_mode=mode).to(dtype)
            np.testing.assert_array_equal(half_bits(ptl.div(x, v, rounding_mode=mode)),
                                          half_bits(want))
        np.testing.assert_array_equal(half_bits(x // v),
                                      half_bits(ptl.floor_divide(x.float(), vf).to(dtype)))
    with pytest.raises(RuntimeError, match="rounding_mode to be one of None, 'trunc', or"):
        ptl.div(x, 1.1, rounding_mode="round")


def test_bfloat16_pow_takes_the_exponent_in_bfloat16():
    """x ** 0.3 of a bfloat16 x raises to 0.3 rounded to bfloat16 (0.30078125), as PyTorch
    does: 256 ** 0.30078125 = 5.30, where 256 ** 0.3 = 5.28 is another bfloat16."""
    x = ptl.tensor([256.0, 2.0, 0.5, 10.0]).to(ptl.bfloat16)
    e = float(ptl.tensor(0.3).to(ptl.bfloat16))
    assert e == 0.30078125
    want = ptl.tensor(np.float32([256.0, 2.0, 0.5, 10.0]) ** np.float32(e)).to(ptl.bfloat16)
    np.testing.assert_array_equal(half_bits(x ** 0.3), half_bits(want))
    assert float((x ** 0.3)[0]) == 5.3125


@pytest.mark.parametrize("dtype", [ptl.uint8, ptl.int8, ptl.int16, ptl.int64])
def test_an_integer_result_refuses_any_float_alpha(dtype):
    """add, sub and rsub of integer results refuse a float alpha by its type, even
    one with an integral value (2.0, 1e308), as PyTorch's alpha_check; an int alpha and a
    float alpha with a floating operand still compute (tools/fuzz --torch seed 23, call 887)"""
    def calls(lib):
        dt = getattr(lib, str(dtype).split(".")[-1])
        x, e = lib.ones(2, dtype=dt), lib.ones(0, dtype=dt)
        return [lambda: lib.add(x, x, alpha=2.0), lambda: lib.sub(x, x, alpha=-1.0),
                lambda: lib.rsub(x, x, alpha=1e308), lambda: lib.add(e, e, alpha=3.0),
                lambda: x.clone().add_(x, alpha=1.0), lambda: lib.add(x, 2, alpha=2.0),
                lambda: lib.sub(x, x, alpha=0.0, out=lib.empty(2, dtype=dt)),
                lambda: lib.add(x, x, alpha=2.0, out=lib.empty(2))]
    for lib in [ptl] + ([torch] if torch is not None else []):
        for call in calls(lib):
            with pytest.raises(RuntimeError, match="For integral input tensors, argument "
                                                   "alpha must not be a floating point number."):
                call()
    x = ptl.tensor([3, 5], dtype=dtype)
    np.testing.assert_array_equal(ptl.add(x, x, alpha=2).numpy(), x.numpy() * 3)
    np.testing.assert_allclose(ptl.add(x, x.double(), alpha=1.5).numpy(),
                               x.numpy().astype(np.float64) * 2.5)


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.int64, ptl.complex64, ptl.bfloat16])
def test_a_bool_alpha_wants_a_bool_result(dtype):
    """add, sub and rsub take a bool alpha for bool results only (PyTorch's alpha_check),
    out= and empty tensors too (tools/fuzz seed 13, call 2996)"""
    def calls(lib):
        dt = getattr(lib, str(dtype).split(".")[-1])
        x, e = lib.ones(2, dtype=dt), lib.ones(0, dtype=dt)
        return [lambda: lib.add(x, x, alpha=False), lambda: lib.sub(x, x, alpha=True),
                lambda: lib.rsub(x, x, alpha=True), lambda: lib.add(e, e, alpha=True),
                lambda: x.add_(x, alpha=True),
                lambda: lib.sub(x, x, alpha=False, out=lib.empty(2, dtype=dt))]
    for lib in [ptl] + ([torch] if torch is not None else []):
        for call in calls(lib):
            with pytest.raises(RuntimeError, match="Boolean alpha only supported for Boolean "
                                                   "results."):
                call()
    # a false (or zero) alpha makes a bool sum self, as in PyTorch
    b, c = ptl.tensor([True, False]), ptl.tensor([True, True])
    assert ptl.add(b, c, alpha=True).tolist() == [True, True]
    assert ptl.add(b, c, alpha=False).tolist() == [True, False]
    assert ptl.add(b, c, alpha=0).tolist() == [True, False]
    assert ptl.add(b, c, alpha=2).tolist() == [True, True]
