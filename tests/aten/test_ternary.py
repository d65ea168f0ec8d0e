"""where, clamp/clip, clamp_min/max, lerp, addcmul, addcdiv vs NumPy float64 (exact for
integers), with PyTorch's promotion rules encoded in the references and its errors."""
import re

import numpy as np
import pytest

import pytorchlite as ptl
from golden import golden
from helpers import (ALL_DTYPES, BROADCAST_PAIRS, FLOAT_DTYPES, INT_DTYPES, LAYOUTS, NP_DTYPE,
                     SHAPES, assert_close, assert_raises_like_torch, make, to_numpy, torch,
                     torch_ref)

PROMOTE = {ptl.bool: 0, ptl.uint8: 1, ptl.int8: 2, ptl.int16: 3, ptl.int32: 4, ptl.int64: 5,
           ptl.float16: 6, ptl.bfloat16: 7, ptl.float32: 8, ptl.float64: 9}


def promote(a, b):
    """torch.promote_types, checked against torch below."""
    if a == b:
        return a
    if {a, b} == {ptl.float16, ptl.bfloat16}:
        return ptl.float32
    if {a, b} == {ptl.uint8, ptl.int8}:
        return ptl.int16
    return a if PROMOTE[a] > PROMOTE[b] else b


def test_promote_matches_torch():
    names = [str(a).split(".")[1] for a in ALL_DTYPES]
    table = golden(lambda: [[str(torch.promote_types(getattr(torch, a), getattr(torch, b)))
                             for b in names] for a in names])
    for a, row in zip(ALL_DTYPES, table):
        for b, want in zip(ALL_DTYPES, row):
            assert want == str(promote(a, b))


def category(dt):
    return 2 if dt in FLOAT_DTYPES else 0 if dt == ptl.bool else 1


def result_type(da, sa, db, sb):
    """torch.result_type of two tensors: a 0-dim one only lifts the category."""
    if (len(sa) == 0) == (len(sb) == 0):
        return promote(da, db)
    (dd, zd) = (da, db) if len(sa) else (db, da)
    return promote(dd, zd) if category(zd) > category(dd) else dd


def exact(a, dt):
    return a.astype(np.float64) if dt in FLOAT_DTYPES else a.astype(np.int64)


# ---- where ----

@pytest.mark.parametrize("dt", ALL_DTYPES, ids=str)
def test_where_shapes_layouts(dt):
    for si, shape in enumerate(SHAPES):
        for layout in LAYOUTS:
            c, ca = make(shape, ptl.bool, layout, seed=si)
            x, xa = make(shape, dt, layout, seed=si + 1)
            y, ya = make(shape, dt, "contiguous", seed=si + 2)
            assert_close(ptl.where(c, x, y), np.where(ca, xa, ya), dtype=dt)


@pytest.mark.parametrize("sa,sb", BROADCAST_PAIRS)
@pytest.mark.parametrize("da,db", [(ptl.float32, ptl.int64), (ptl.int8, ptl.uint8),
                                   (ptl.float16, ptl.bfloat16), (ptl.bool, ptl.int32)], ids=str)
def test_where_broadcast_promotion(sa, sb, da, db):
    c, ca = make(sb, ptl.bool, seed=3)
    x, xa = make(sa, da, seed=4)
    y, ya = make(sb, db, seed=5)
    rt = result_type(da, sa, db, sb)
    exp = np.where(ca, exact(xa, rt), exact(ya, rt))
    assert_close(ptl.where(c, x, y), exp, dtype=rt)


@pytest.mark.parametrize("dt", [ptl.uint8, ptl.int16, ptl.float32, ptl.float64], ids=str)
def test_where_select_copies_bits(dt):
    """The branch-free select of each element size copies the chosen element's bits (NaN
    payloads, -0.0), takes any nonzero uint8 condition as true, on the contiguous loop at
    every length 0..40, broadcast numbers and a transposed condition."""
    gen = np.random.default_rng(8)
    n = 1000
    bits = gen.integers(0, 2**63, (2, n), dtype=np.uint64)
    xa, ya = (bits.view(NP_DTYPE[dt])[:, :n] if dt in (ptl.float32, ptl.float64)
              else bits.astype(NP_DTYPE[dt]))
    if dt in (ptl.float32, ptl.float64):
        xa[:3], ya[:3] = [np.nan, -0.0, np.inf], [-0.0, np.nan, 0.0]
    ca = gen.integers(0, 3, n).astype(np.uint8) * 127
    exp = np.where(ca != 0, xa, ya)
    with pytest.warns(UserWarning):
        got = ptl.where(ptl.tensor(ca), ptl.tensor(xa), ptl.tensor(ya)).numpy()
    np.testing.assert_array_equal(got.view(np.uint8), exp.view(np.uint8))
    c, x, y = ptl.tensor(ca != 0), ptl.tensor(xa), ptl.tensor(ya)
    for k in range(41):
        np.testing.assert_array_equal(ptl.where(c[:k], x[:k], y[:k]).numpy().view(np.uint8),
                                      exp[:k].view(np.uint8))
    np.testing.assert_array_equal(ptl.where(c, x, y[5]).numpy().view(np.uint8),
                                  np.where(ca != 0, xa, ya[5]).view(np.uint8))
    ct = ptl.tensor((ca != 0).reshape(40, 25)).t()
    got = ptl.where(ct, x.reshape(25, 40), y.reshape(25, 40)).numpy()
    ref = np.where((ca != 0).reshape(40, 25).T, xa.reshape(25, 40), ya.reshape(25, 40))
    np.testing.assert_array_equal(np.ascontiguousarray(got).view(np.uint8),
                                  np.ascontiguousarray(ref).view(np.uint8))


@pytest.mark.parametrize("dt", [ptl.uint8, ptl.int16, ptl.float32, ptl.float64], ids=str)
def test_where_broadcast_operands_copy_bits(dt):
    """A 0-dim operand (a number, or x[5]) in either place or both, and a [k, 1] operand
    broadcast along the run, go through the contiguous loop: the same bits as NumPy's
    select at every length 0..40 and past the iterator's threading grain, on 3-D, on
    non-contiguous and on uint8 conditions."""
    gen = np.random.default_rng(9)
    n = 70000
    bits = gen.integers(0, 2**63, (2, n), dtype=np.uint64)
    xa, ya = (bits.view(NP_DTYPE[dt])[:, :n] if dt in (ptl.float32, ptl.float64)
              else bits.astype(NP_DTYPE[dt]))
    if dt in (ptl.float32, ptl.float64):
        xa[:3], ya[:3] = [np.nan, -0.0, np.inf], [-0.0, np.nan, 0.0]
    ca = gen.integers(0, 2, n).astype(bool)
    c, x = ptl.tensor(ca), ptl.tensor(xa)
    a0, b0 = xa[1], ya[2]

    def same(got, ref):
        np.testing.assert_array_equal(np.ascontiguousarray(got.numpy()).view(np.uint8),
                                      np.ascontiguousarray(ref).view(np.uint8))

    for k in list(range(41)) + [n]:
        same(ptl.where(c[:k], x[:k], ptl.tensor(b0)), np.where(ca[:k], xa[:k], b0))
        same(ptl.where(c[:k], ptl.tensor(a0), x[:k]), np.where(ca[:k], a0, xa[:k]))
        same(ptl.where(c[:k], ptl.tensor(a0), ptl.tensor(b0)), np.where(ca[:k], a0, b0))
    same(ptl.where(c.reshape(7, 100, 100), x.reshape(7, 100, 100), x[5]),
         np.where(ca.reshape(7, 100, 100), xa.reshape(7, 100, 100), xa[5]))
    col = ptl.tensor(ya[:700].reshape(700, 1))
    same(ptl.where(c.reshape(700, 100), col, x.reshape(700, 100)),
         np.where(ca.reshape(700, 100), ya[:700].reshape(700, 1), xa.reshape(700, 100)))
    same(ptl.where(c.reshape(100, 700).t(), x.reshape(700, 100), ptl.tensor(b0)),
         np.where(ca.reshape(100, 700).T, xa.reshape(700, 100), b0))
    with pytest.warns(UserWarning):
        got = ptl.where(ptl.tensor(ca.astype(np.uint8) * 5), ptl.tensor(a0), x)
    same(got, np.where(ca, a0, xa))
    if dt in (ptl.float32, ptl.float64):
        same(ptl.where(c, x, 0.5), np.where(ca, xa, NP_DTYPE[dt](0.5)))
        same(ptl.where(c, -2.0, x), np.where(ca, NP_DTYPE[dt](-2.0), xa))
    else:
        same(ptl.where(c, x, 7), np.where(ca, xa, NP_DTYPE[dt](7)))
        same(ptl.where(c, 3, x), np.where(ca, NP_DTYPE[dt](3), xa))


def test_where_numbers_and_out():
    c = ptl.tensor([True, False, True])
    i = ptl.tensor([1, 2, 3])
    assert_close(ptl.where(c, 1.5, i), np.array([1.5, 2.0, 1.5]), dtype=ptl.float32)
    assert_close(ptl.where(c, 1, i.to(ptl.int8)), np.array([1, 2, 1]), dtype=ptl.int8)
    out = ptl.tensor(np.zeros(3, dtype=np.float32))
    r = ptl.where(c, i.float(), i, out=out)
    assert r is out
    assert_close(out, np.array([1.0, 2.0, 3.0]), dtype=ptl.float32)


def test_where_errors_and_uint8_warning():
    f = ptl.tensor([1.0, 2.0])
    for dt, name in [(ptl.float32, "Float"), (ptl.int64, "Long")]:
        msg = f"where expected condition to be a boolean tensor, but got a tensor with dtype {name}"
        with pytest.raises(RuntimeError, match=re.escape(msg)):
            ptl.where(f.to(dt), f, f)
    out = ptl.tensor(np.zeros(2))
    with pytest.raises(RuntimeError, match=re.escape("Expected out type to be Float but got Double")):
        ptl.where(ptl.tensor([True, False]), f, f, out=out)
    with pytest.warns(UserWarning, match="where received a uint8 condition tensor"):
        r = ptl.where(ptl.tensor([1, 0], dtype=ptl.uint8), f, -f)
    assert_close(r, np.array([1.0, -2.0]))


# ---- clamp / clip ----

def clamp_ref(x, lo, hi):
    r = x
    if lo is not None:
        r = np.where(np.isnan(r), r, np.where(np.isnan(lo) | (r < lo), lo, r))
    if hi is not None:
        r = np.where(np.isnan(r), r, np.where(np.isnan(hi) | (r > hi), hi, r))
    return r


BOUNDS = [(1, None), (None, 2), (-1, 2), (3, 1), (-1.5, 2.5), (0.5, None), (True, None)]


def scalar_result(dt, lo, hi):
    nums = [v for v in (lo, hi) if v is not None]
    if dt not in FLOAT_DTYPES and any(isinstance(v, float) for v in nums):
        return ptl.float32
    if dt == ptl.bool and any(not isinstance(v, bool) for v in nums):
        return ptl.int64
    return dt


@pytest.mark.parametrize("fn", ["clamp", "clip"])
@pytest.mark.parametrize("dt", ALL_DTYPES, ids=str)
def test_clamp_scalar(fn, dt):
    for lo, hi in BOUNDS:
        rt = scalar_result(dt, lo, hi)
        x, a = make((3, 4), dt, "transposed")
        if rt == ptl.bool:
            msg = "\"clamp_scalar_cpu\" not implemented for 'Bool'"
            with pytest.raises(NotImplementedError, match=re.escape(msg)):
                getattr(ptl, fn)(x, lo, hi)
            continue
        lo_, hi_ = (None if v is None else float(v) for v in (lo, hi))
        if rt == ptl.uint8:   # PyTorch converts the bounds to uint8 first: -1 is 255
            lo_, hi_ = (None if v is None else float(int(v) % 256) for v in (lo_, hi_))
        exp = clamp_ref(exact(a, rt), lo_, hi_)
        for si, shape in enumerate(SHAPES if (lo, hi) == (-1, 2) else [(3, 4)]):
            for layout in LAYOUTS if (lo, hi) == (-1, 2) else ["contiguous"]:
                x, a = make(shape, dt, layout, seed=si)
                exp = clamp_ref(exact(a, rt), lo_, hi_)
                assert_close(getattr(ptl, fn)(x, lo, hi), exp, dtype=rt)
        x, a = make((3, 4), dt)
        exp = clamp_ref(exact(a, rt), lo_, hi_)
        if rt == dt:
            y = x + 0 if dt != ptl.bool else x.clone()
            assert getattr(y, fn + "_")(lo, hi) is y
            assert_close(y, exp, dtype=dt)
        out = ptl.tensor(np.zeros(12, dtype=NP_DTYPE[ptl.float32])).to(rt)
        assert getattr(ptl, fn)(x, lo, hi, out=out) is out
        assert_close(out, exp, dtype=rt)


def test_clamp_nan_and_min_gt_max():
    x = ptl.tensor([np.nan, 1.0, 5.0])
    assert_close(ptl.clamp(x, 0, 0.5), np.array([np.nan, 0.5, 0.5]))
    assert_close(ptl.clamp(x, float("nan"), 2), np.array([np.nan] * 3))
    assert_close(ptl.clamp(x, 3, 1), np.array([np.nan, 1.0, 1.0]))
    if torch is not None:
        t = torch.clamp(torch.tensor([np.nan, 1.0, 5.0]), 3, 1).numpy()
        assert_close(ptl.clamp(x, 3, 1), t)


@pytest.mark.parametrize("dt", [ptl.float32, ptl.float64], ids=str)
def test_clamp_contiguous_selects_match_the_double_path(dt):
    """Contiguous float32/float64 clamps compare with the bounds rounded to the dtype, as
    selects; strided ones compare in double (ptl_clamp_d): the same bits for bounds that are
    not representable, values next to them, signed zeros, infinities and NaN."""
    npdt = np.float32 if dt == ptl.float32 else np.float64
    lo_hi = [(0.1, 0.7), (-0.1, None), (None, 1e-45), (-0.0, 0.0), (0.0, -0.0),
             (-np.inf, np.inf), (0.7, 0.1), (3e38, None), (None, -3e38)]
    for lo, hi in lo_hi:
        near = [v for b in (lo, hi) if b is not None for v in
                (npdt(b), np.nextafter(npdt(b), npdt(np.inf)), np.nextafter(npdt(b),
                                                                          npdt(-np.inf)))]
        a = np.concatenate([np.random.default_rng(0).standard_normal(37), near,
                            [0.0, -0.0, np.inf, -np.inf, np.nan]]).astype(npdt)
        with np.errstate(over="ignore"):
            fast = ptl.clamp(ptl.tensor(a), lo, hi)
            wide = np.zeros(2 * a.size, dtype=npdt)
            wide[::2] = a
            slow = ptl.clamp(ptl.tensor(wide)[::2], lo, hi)
        assert fast.numpy().tobytes() == slow.contiguous().numpy().tobytes(), (lo, hi)
        if torch is not None:
            want = torch.clamp(torch.tensor(a), lo, hi).numpy()
            assert fast.numpy().tobytes() == want.tobytes(), (lo, hi)


@pytest.mark.parametrize("dt", ALL_DTYPES, ids=str)
def test_clamp_min_max(dt):
    x, a = make((4, 5), dt, "sliced")
    for fn, kw in [("clamp_min", "lo"), ("clamp_max", "hi")]:
        for v in [1, 2.5]:
            rt = scalar_result(dt, v, None)
            if rt == ptl.bool:
                continue
            lo, hi = (float(v), None) if kw == "lo" else (None, float(v))
            assert_close(getattr(ptl, fn)(x, v), clamp_ref(exact(a, rt), lo, hi), dtype=rt)
    b = ptl.tensor([True, False])
    for fn in ["clamp_min", "clamp_max"]:
        msg = f"\"{fn}_scalar_cpu\" not implemented for 'Bool'"
        with pytest.raises(NotImplementedError, match=re.escape(msg)):
            getattr(ptl, fn)(b, False)


# (self, bound) dtypes of the Tensor-bound clamps: same, int with float, two ints, half with double
TENSOR_BOUND_DTYPES = [(ptl.float32, ptl.float32), (ptl.int64, ptl.float32),
                       (ptl.int8, ptl.int16), (ptl.float16, ptl.float64)]


@pytest.mark.parametrize("sa,sb", BROADCAST_PAIRS)
@pytest.mark.parametrize("da,db", TENSOR_BOUND_DTYPES, ids=str)
def test_clamp_tensor(sa, sb, da, db):
    x, a = make(sa, da, seed=1)
    lo, la = make(sb, db, seed=2, low=-3, high=0)
    hi, ha = make(sb, db, seed=3, low=0, high=3)
    rt = result_type(da, sa, db, sb)
    assert_close(ptl.clamp(x, lo, hi), clamp_ref(exact(a, rt), exact(la, rt), exact(ha, rt)),
                 dtype=rt)
    assert_close(ptl.clamp(x, lo), clamp_ref(exact(a, rt), exact(la, rt), None), dtype=rt)
    assert_close(ptl.clip(x, None, hi), clamp_ref(exact(a, rt), None, exact(ha, rt)), dtype=rt)
    assert_close(ptl.clamp(x, min=None, max=hi), clamp_ref(exact(a, rt), None, exact(ha, rt)),
                 dtype=rt)


@pytest.mark.parametrize("sa,sb", BROADCAST_PAIRS)
@pytest.mark.parametrize("da,db", TENSOR_BOUND_DTYPES, ids=str)
def test_clamp_min_max_of_a_tensor_bound(sa, sb, da, db):
    # clamp_min.Tensor / clamp_max.Tensor (and their .Tensor_out): clamp with one bound
    x, a = make(sa, da, seed=1)
    b, ba = make(sb, db, seed=2, low=-2, high=2)
    rt = result_type(da, sa, db, sb)
    assert_close(ptl.clamp_min(x, b), clamp_ref(exact(a, rt), exact(ba, rt), None), dtype=rt)
    assert_close(x.clamp_max(b), clamp_ref(exact(a, rt), None, exact(ba, rt)), dtype=rt)
    # out= float64: computed in the result type, then cast
    out = ptl.empty(0, dtype=ptl.float64)
    assert ptl.clamp_min(x, b, out=out) is out
    want = clamp_ref(exact(a, rt), exact(ba, rt), None).astype(NP_DTYPE[rt])
    assert_close(out, want.astype(np.float64), dtype=ptl.float64)
    assert ptl.ops.aten.clamp_max.Tensor_out(x, b, out=out) is out
    want = clamp_ref(exact(a, rt), None, exact(ba, rt)).astype(NP_DTYPE[rt])
    assert_close(out, want.astype(np.float64), dtype=ptl.float64)


def test_clamp_min_max_of_a_tensor_bound_grad_and_errors():
    from pytorchlite.autograd import gradcheck
    rng = np.random.default_rng(4)
    x = ptl.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    b = ptl.tensor(rng.standard_normal(4) + 0.05, requires_grad=True)   # no ties with x
    assert gradcheck(lambda x, b: ptl.clamp_min(x, b), (x, b))
    assert gradcheck(lambda x, b: x.clamp_max(b), (x, b))
    xa, ba = x.detach().numpy(), b.detach().numpy()
    y = ptl.clamp_min(x, b)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), (xa >= ba).astype(np.float64))
    np.testing.assert_array_equal(b.grad.numpy(), (xa < ba).sum(0).astype(np.float64))
    for fn in ("clamp_min", "clamp_max"):
        assert_raises_like_torch(
            lambda L: getattr(L, fn)(L.ones(3), L.zeros(3), out=L.empty(3, dtype=L.int64)),
            RuntimeError, "result type Float can't be cast to the desired output type Long")
        assert_raises_like_torch(
            lambda L: getattr(L, fn)(L.ones(3), L.zeros(2)), RuntimeError,
            "The size of tensor a (3) must match the size of tensor b (2) at non-singleton "
            "dimension 0")
        with pytest.raises(TypeError, match=fn):
            getattr(ptl, fn)(ptl.ones(3))


def test_clamp_tensor_inplace_and_out():
    x, a = make((3, 4), ptl.float32, "transposed")
    lo, la = make((4,), ptl.float32, seed=5, low=-2, high=0)
    y = x + 0
    assert y.clamp_(lo, None) is y
    assert_close(y, clamp_ref(a.astype(np.float64), la.astype(np.float64), None))
    out = ptl.tensor(np.zeros((3, 4)))
    ptl.clamp(x.long(), lo.long(), None, out=out)
    assert_close(out, clamp_ref(a.astype(np.int64), la.astype(np.int64), None).astype(np.float64),
                 dtype=ptl.float64)
    msg = "output with shape [] doesn't match the broadcast shape [4]"
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        ptl.tensor(1.0).clamp_(lo, None)
    msg = "result type Float can't be cast to the desired output type Long"
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        ptl.tensor([1, 2, 3, 4]).clamp_(lo, None)


def _no_bounds_calls(lib, f):
    return [lambda: lib.clamp(f), lambda: lib.clip(f), lambda: lib.clamp(f, None, None),
            lambda: f.clamp_(), lambda: lib.ops.aten.clamp.Tensor(f),
            lambda: lib.ops.aten.clip_.Tensor(f, None, None),
            lambda: lib.ops.aten.clamp.out(f, out=lib.empty_like(f))]


def test_clamp_errors():
    f = ptl.tensor([1.0, 2.0])
    msg = "torch.clamp: At least one of 'min' or 'max' must not be None"
    for call in _no_bounds_calls(ptl, f):
        with pytest.raises(RuntimeError, match=re.escape(msg)):
            call()
    msg = "result type Float can't be cast to the desired output type long int"
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        ptl.tensor([1, 2]).clamp_(1.5, 2.5)
    msg = "result type Long can't be cast to the desired output type bool"
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        ptl.tensor([True]).clamp_(0, 1)
    out = ptl.tensor(np.zeros(2, dtype=np.int64))
    with pytest.raises(RuntimeError, match=re.escape("Found dtype Long but expected Float")):
        ptl.clamp(f, 1, 2, out=out)
    msg = "\"clamp_cpu\" not implemented for 'Bool'"
    b = ptl.tensor([True, False])
    for call in (lambda: ptl.clamp(b, b, b), lambda: ptl.clip(b, b, b),
                 lambda: b.clone().clamp_(b, b), lambda: ptl.clamp(b, b, b, out=b.clone())):
        with pytest.raises(NotImplementedError, match=re.escape(msg)):
            call()


@pytest.mark.parametrize("bound", ["min", "max"])
def test_clamp_of_bools_with_one_tensor_bound(bound):
    """a bool tensor with one bool Tensor bound: PyTorch's clamp_min / clamp_max kernels
    (maximum, minimum: an or, an and), through clamp, clip, clamp_min, clamp_max, their
    in-place and out= forms, broadcast and strided (fuzzer --torch seeds 27-55)"""
    rng = np.random.default_rng(5)
    x = rng.integers(0, 2, (3, 4)).astype(bool)
    lo = rng.integers(0, 2, (4,)).astype(bool)
    want = np.logical_or(x, lo) if bound == "min" else np.logical_and(x, lo)
    xt, lt = ptl.tensor(x), ptl.tensor(lo)
    xs = ptl.tensor(np.ascontiguousarray(x.T)).t()
    one = getattr(ptl, "clamp_" + bound)
    calls = [lambda: ptl.clamp(xt, **{bound: lt}), lambda: ptl.clip(xs, **{bound: lt}),
             lambda: one(xt, lt), lambda: getattr(xt, "clamp_" + bound)(lt),
             lambda: xt.clone().clamp_(**{bound: lt}),
             lambda: one(xs, lt, out=ptl.empty(3, 4, dtype=ptl.bool))]
    for call in calls:
        r = call()
        assert r.dtype == ptl.bool
        np.testing.assert_array_equal(r.numpy(), want)
    if torch is not None:
        np.testing.assert_array_equal(
            torch.clamp(torch.tensor(x), **{bound: torch.tensor(lo)}).numpy(), want)
    # a bool self with an int bound promotes, as any clamp
    r = ptl.clamp(xt, **{bound: ptl.tensor([0, 2, 1, 0])})
    assert r.dtype == ptl.int64


# ---- lerp ----

def lerp_ref(a, b, w):
    return np.where(np.abs(w) < 0.5, a + w * (b - a), b - (b - a) * (1 - w))


@pytest.mark.parametrize("dt", FLOAT_DTYPES, ids=str)
def test_lerp(dt):
    for si, shape in enumerate(SHAPES):
        for layout in LAYOUTS:
            x, a = make(shape, dt, layout, seed=si)
            e, ea = make(shape, dt, "contiguous", seed=si + 7)
            w, wa = make(shape, dt, "sliced", seed=si + 9, low=-1, high=2)
            assert_close(ptl.lerp(x, e, 0.3), lerp_ref(a, ea, 0.3), dtype=dt)
            assert_close(ptl.lerp(x, e, w), lerp_ref(a, ea, wa.astype(np.float64)), dtype=dt)
    x, a = make((2, 3), dt)
    e, ea = make((3,), dt, seed=2)
    w, wa = make((2, 1), dt, seed=3)
    assert_close(ptl.lerp(x, e, w), lerp_ref(a, ea, wa.astype(np.float64)), dtype=dt)
    y = x + 0
    assert y.lerp_(e, 0.75) is y
    assert_close(y, lerp_ref(a, ea, 0.75), dtype=dt)
    y = x + 0
    y.lerp_(e, ptl.tensor(0.25, dtype=ptl.float64))   # a 0-dim weight may differ in dtype
    assert_close(y, lerp_ref(a, ea, 0.25), dtype=dt)
    assert_close(ptl.lerp(ptl.tensor([0.0]), ptl.tensor([10.0]), 1.0), np.array([10.0]))


@pytest.mark.parametrize("dt", [ptl.float32, ptl.float64, ptl.bfloat16], ids=str)
def test_lerp_vector_loops_pick_each_side(dt):
    """Contiguous runs take the vectorized loops, which compute both sides of the two-sided
    formula and pick one per element: weights on both sides of 0.5 in one vector, the
    specials, w = 1 exactly end, and the same bits as the loops' broadcast paths."""
    n = 1000
    x, a = make((n,), dt, seed=1)
    e, ea = make((n,), dt, seed=2)
    w, wa = make((n,), dt, seed=3, low=-1, high=2)
    specials = [0.5, -0.5, 1.0, 0.0, np.nan, np.inf, -np.inf, 0.49999, 0.5000001]
    w[:len(specials)] = ptl.tensor(specials, dtype=dt)
    wa = w.double().numpy()
    got = ptl.lerp(x, e, w)
    assert_close(got, lerp_ref(a, ea, wa), dtype=dt)
    assert ptl.equal(ptl.lerp(x, e, ptl.ones(n, dtype=dt)), e)   # finite x, e
    xb = x[:1].expand(n)   # a broadcast self: the loops' other paths

    def same(p, q):   # equal values, NaN where NaN
        np.testing.assert_array_equal(p.double().numpy(), q.double().numpy())
    same(ptl.lerp(xb, e, w), ptl.lerp(xb.contiguous(), e, w))
    for wv in (0.3, 0.75, 1.0):
        same(ptl.lerp(xb, e, wv), ptl.lerp(xb.contiguous(), e, wv))
    same(ptl.lerp(x, e, 1.0), e)


def test_lerp_errors():
    f = ptl.tensor([1.0, 2.0])
    names = {ptl.bool: "bool", ptl.uint8: "unsigned char", ptl.int8: "signed char",
             ptl.int16: "short int", ptl.int32: "int", ptl.int64: "long int",
             ptl.float16: "c10::Half", ptl.bfloat16: "c10::BFloat16", ptl.float64: "double"}
    for dt, n in names.items():
        msg = f"expected dtype float for `end` but got dtype {n}"
        with pytest.raises(RuntimeError, match=re.escape(msg)):
            ptl.lerp(f, f.to(dt), 0.5)
    msg = "expected dtype float for `weight` but got dtype double"
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        ptl.lerp(f, f, f.double())
    i = ptl.tensor([1, 2])
    with pytest.raises(NotImplementedError,
                       match=re.escape("\"lerp_kernel_scalar\" not implemented for 'Long'")):
        ptl.lerp(i, i, 0.5)
    with pytest.raises(NotImplementedError,
                       match=re.escape("\"lerp_kernel_tensor\" not implemented for 'Long'")):
        ptl.lerp(i, i, i)
    with pytest.raises(RuntimeError,
                       match=re.escape("output with shape [] doesn't match the broadcast shape [2]")):
        ptl.tensor(1.0).lerp_(f, 0.5)


# ---- addcmul / addcdiv ----

@pytest.mark.parametrize("dt", [d for d in ALL_DTYPES if d != ptl.bool], ids=str)
def test_addcmul(dt):
    value = 2 if dt in INT_DTYPES else 0.5
    for si, shape in enumerate(SHAPES):
        for layout in LAYOUTS if dt in (ptl.float32, ptl.int64) else ["sliced"]:
            x, a = make(shape, dt, layout, seed=si)
            t1, b = make(shape, dt, "contiguous", seed=si + 1)
            t2, c = make(shape, dt, "transposed", seed=si + 2)
            exp = exact(a, dt) + value * exact(b, dt) * exact(c, dt)
            if dt in INT_DTYPES:
                exp = exp.astype(NP_DTYPE[dt])
            assert_close(ptl.addcmul(x, t1, t2, value=value), exp, dtype=dt)
    # integer inputs truncate a float value to an integer (PyTorch)
    i = ptl.tensor([1, 2, 3])
    assert_close(ptl.addcmul(i, i, i, value=2.5), np.array([3, 10, 21]))
    if torch is not None:
        ti = torch.tensor([1, 2, 3])
        assert torch.addcmul(ti, ti, ti, value=2.5).tolist() == [3, 10, 21]


@pytest.mark.parametrize("dt", FLOAT_DTYPES, ids=str)
def test_addcdiv(dt):
    for si, shape in enumerate(SHAPES):
        x, a = make(shape, dt, "transposed", seed=si)
        t1, b = make(shape, dt, "sliced", seed=si + 1)
        t2, c = make(shape, dt, "expanded", seed=si + 2, low=0.5, high=4)
        exp = a.astype(np.float64) + 0.5 * (b.astype(np.float64) / c.astype(np.float64))
        assert_close(ptl.addcdiv(x, t1, t2, value=0.5), exp, dtype=dt)


# ternary.c's LOOP3_BLOCK: broadcast (stride 0) operands are read from blocks of copies
LOOP3_BLOCK = 256


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("n", [1, LOOP3_BLOCK - 1, LOOP3_BLOCK, LOOP3_BLOCK + 1,
                               2 * LOOP3_BLOCK + 5])
@pytest.mark.parametrize("bcast", [(0, 1, 1), (1, 0, 1), (1, 1, 0), (1, 0, 0), (0, 0, 1),
                                   (0, 1, 0)])
@pytest.mark.parametrize("dt", [ptl.float32, ptl.float64, ptl.bfloat16, ptl.int64], ids=str)
def test_addc_broadcast_runs(threads, n, bcast, dt):
    # operands that are [rows, 1] (one value per inner run of n, stride 0) next to [rows, n]
    # ones; runs below, at and across the block, on 1 and 2 threads (the largest cases pass
    # twice the parallel grain of 32768 elements, where the iterator splits over threads)
    rows = 160
    shapes = [(rows, n) if full else (rows, 1) for full in bcast]
    (x, a), (t1, b), (t2, c) = (make(sh, dt, seed=k, low=0.5, high=4)
                                for k, sh in enumerate(shapes))
    value = 2 if dt == ptl.int64 else 0.5
    before = ptl.get_num_threads()
    try:
        ptl.set_num_threads(threads)
        got_mul = ptl.addcmul(x, t1, t2, value=value)
        got_div = ptl.addcdiv(x, t1, t2, value=value) if dt != ptl.int64 else None
    finally:
        ptl.set_num_threads(before)
    a, b, c = (exact(v, dt) for v in (a, b, c))
    exp = np.broadcast_to(a + value * b * c, (rows, n))
    if dt == ptl.int64:
        exp = exp.astype(np.int64)
    assert_close(got_mul, exp, dtype=dt)
    if got_div is not None:
        assert_close(got_div, np.broadcast_to(a + value * (b / c), (rows, n)), dtype=dt)


def test_addc_broadcast_promotion_inplace_out():
    x, a = make((2, 3), ptl.int64)
    t1, b = make((3,), ptl.float32, seed=1)
    t2, c = make((2, 1), ptl.int32, seed=2, low=1, high=4)
    assert_close(ptl.addcmul(x, t1, t2), a + b.astype(np.float64) * c, dtype=ptl.float32)
    assert_close(ptl.addcdiv(x, t1, t2, value=2), a + 2 * (b.astype(np.float64) / c),
                 dtype=ptl.float32)
    y, ya = make((2, 3), ptl.float64, seed=3)
    assert y.addcmul_(t1, t2, value=3) is y
    assert_close(y, ya + 3 * (b.astype(np.float64) * c), dtype=ptl.float64)
    y.addcdiv_(t1, t2)
    out = ptl.tensor(np.zeros((2, 3)))
    assert ptl.addcmul(x, t1, t2, out=out) is out
    assert_close(out, a + b.astype(np.float64) * c, dtype=ptl.float64, rtol=1e-6)
    msg = "result type Float can't be cast to the desired output type Long"
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        ptl.addcmul(x, t1, t2, out=ptl.tensor(np.zeros((2, 3), dtype=np.int64)))
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        (x + 0).addcmul_(t1, t2)
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        (x + 0).addcdiv_(t1, t2)


def test_addc_errors():
    i, f, b = ptl.tensor([1, 2]), ptl.tensor([1.0, 2.0]), ptl.tensor([True, False])
    msg = ("Integer division with addcdiv is no longer supported, and in a future  release "
           "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
           "behavior can be implemented as (input + value * torch.trunc(tensor1 / "
           "tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / "
           "tensor2) for float inputs. The future addcdiv behavior is just the latter "
           "implementation: (input + value * tensor1 / tensor2), for all dtypes.")
    for t1, t2 in [(i, i), (i, b), (b, b)]:
        with pytest.raises(RuntimeError, match=re.escape(msg)):
            ptl.addcdiv(f, t1, t2)
    assert_close(ptl.addcdiv(i, f, i), np.array([2.0, 3.0]))   # only tensor1/tensor2 matter
    with pytest.raises(NotImplementedError,
                       match=re.escape("\"addcmul_cpu_out\" not implemented for 'Bool'")):
        ptl.addcmul(b, b, b)
    if torch is not None:
        with pytest.raises(RuntimeError, match=re.escape(msg)):
            torch.addcdiv(torch.tensor([1.0]), torch.tensor([1]), torch.tensor([1]))


@pytest.mark.parametrize("name", ["addcmul", "addcdiv"])
@pytest.mark.parametrize("dtype,value,ctype", [
    ("uint8", 300, "uint8_t"), ("int8", 200, "int8_t"), ("float32", 1e308, "float"),
    ("float16", 1e39, "float"), ("bfloat16", -1e39, "float")])
@pytest.mark.parametrize("shape", [(3,), (0,), ()])
def test_addc_value_that_overflows_the_opmath_type_is_refused(name, dtype, value, ctype, shape):
    """value reaches the kernel as the opmath type (float for the half types, the integer
    type itself) with c10's overflow check, even for an empty input"""
    if name == "addcdiv" and dtype in ("uint8", "int8"):
        return   # integer addcdiv is refused first
    def call(lib):
        t = lib.ones(shape, dtype=getattr(lib, dtype))
        getattr(lib, name)(t, t, t, value=value)
    assert_raises_like_torch(call, RuntimeError,
                             f"value cannot be converted to type {ctype} without overflow")


def test_addc_value_within_the_opmath_type_computes():
    # uint8 takes -255..255 (c10's check of an unsigned type); float16 computes in float, so
    # a value past float16's range is fine
    u = ptl.tensor([1, 2], dtype=ptl.uint8)
    assert ptl.addcmul(u, u, u, value=-1).tolist() == [0, 254]
    h = ptl.tensor([1e-3], dtype=ptl.float16)
    for name in ("addcmul", "addcdiv"):
        r = getattr(ptl, name)(ptl.zeros(1, dtype=ptl.float16), h,
                               ptl.ones(1, dtype=ptl.float16), value=1e6)
        assert abs(r.item() - 1e6 * h.item()) < 1


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
def test_addcdiv_multiplies_by_value_before_it_divides(dtype):
    # PyTorch's CPU kernel computes self + (value * t1) / t2: float32 1e10 * 1e30 overflows
    n = 20   # the vector body and the tail
    b = ptl.full((n,), 1e30, dtype=dtype)
    r = ptl.addcdiv(ptl.zeros(n, dtype=dtype), b, b, value=1e10)
    with np.errstate(over="ignore"):
        want = np.float32(1e10) * np.float32(1e30) / np.float32(1e30) \
            if dtype == ptl.float32 else 1e10
    assert np.all(r.numpy() == want)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_division_is_smiths_without_infinity_recovery(dtype):
    # c10::complex's and NumPy's a / b: C99's `/` turns (-inf + nan i) / (2 + i) into an
    # infinity; PyTorch's gives nan + nan i, and addcdiv's value * t1 (5 (-inf + 0i) =
    # -inf + nan i) reaches it so
    inf, nan = float("inf"), float("nan")
    a = np.array([complex(-inf, nan), complex(-inf, 0), 1 + 2j, complex(inf, inf), 3 - 4j,
                  1e30 + 1e30j, 2 + 0j, 0j], dtype=dtype)
    b = np.array([2 + 1j, 2 + 1j, 0j, 2 + 1j, 1e-3 + 2e3j, 1e30 + 1e30j, 0j, 0j], dtype=dtype)
    got = (ptl.tensor(a) / ptl.tensor(b)).numpy()
    with np.errstate(all="ignore"):
        want = a / b
    assert np.array_equal(got.real, want.real, equal_nan=True)
    assert np.array_equal(got.imag, want.imag, equal_nan=True)
    z = ptl.zeros(1, dtype=getattr(ptl, dtype))
    r = ptl.addcdiv(z, ptl.tensor(a[1:2]), ptl.tensor(b[1:2]), value=5).numpy()
    assert np.isnan(r.real).all() and np.isnan(r.imag).all()


@pytest.mark.parametrize("lib", ["ptl", pytest.param("torch", marks=torch_ref)])
def test_clamp_without_bounds_is_refused_before_complex(lib):
    """clamp and clip check their bounds first, so a complex input without bounds gets the
    bounds' RuntimeError, not the complex refusal (the Complex key runs the check)"""
    lib = ptl if lib == "ptl" else torch
    z = lib.tensor([1 + 2j, 3j])
    for call in _no_bounds_calls(lib, z):
        with pytest.raises(RuntimeError,
                           match="^torch.clamp: At least one of 'min' or 'max' must not be None$"):
            call()
    with pytest.raises(NotImplementedError,   # a bound given: the complex refusal
                       match="^clamp is not supported for complex types$"):
        lib.clamp(z, 0)


@pytest.mark.parametrize("call", [
    lambda L: L.lerp(L.ones(2), L.zeros(2), -1e308),
    lambda L: L.ones(2, dtype=L.float16).lerp_(L.zeros(2, dtype=L.float16), 1e39),
    lambda L: L.nn.functional.softplus(L.ones(2), 1e308),
    lambda L: L.nn.functional.softplus(L.ones(2), 1, 1e39),
    lambda L: L.ops.aten.softplus_backward(L.ones(2), L.ones(2), 1e308, 1),
    lambda L: L.ops.aten.softplus_backward(L.ones(2), L.ones(2), 1, 1e308)])
def test_scalars_that_overflow_the_opmath_type(call):
    # lerp's weight and softplus's beta and threshold reach the float32 kernels as float
    # with c10's overflow check (tools/fuzz --torch seed 11); float64 takes them
    assert_raises_like_torch(call, RuntimeError,
                             "value cannot be converted to type float without overflow")
    d = ptl.ones(2, dtype=ptl.float64)
    assert ptl.lerp(d, d * 0, -1e308).tolist() == [1e308, 1e308]
    assert ptl.nn.functional.softplus(d, 1e308).tolist() == [1.0, 1.0]
