"""The matmul family (mm, bmm, addmm, addmv, mv, baddbmm, dot, vdot, outer, matmul) against
NumPy in float64 (exact for integers, which wrap like PyTorch's), on every dtype PyTorch
supports, odd sizes that do not fit the GEMM blocking, size-0 dims and non-contiguous
layouts; and every error path with torch's exception type and text."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import pytorchlite as ptl
from helpers import FLOAT_DTYPES, INT_DTYPES, NP_DTYPE, assert_close, make, to_numpy, torch

DTYPES = FLOAT_DTYPES + INT_DTYPES
EPS = {ptl.float16: 1e-3, ptl.bfloat16: 8e-3, ptl.float32: 1.2e-7, ptl.float64: 2.3e-16}
# Sizes that are not multiples of the blocking (MR 4/6, NR 8/16, MC 64..96, KC 256).
MKN = [(1, 1, 1), (0, 3, 2), (2, 0, 3), (3, 2, 0), (7, 33, 65), (65, 7, 33), (33, 257, 7)]
LAYOUTS = ["contiguous", "transposed", "sliced", "expanded"]


def ref(x, dtype):
    """float64 (or int64) copy of an ndarray for the reference computation."""
    return np.asarray(x).astype(np.float64 if dtype in FLOAT_DTYPES else np.int64)


def expected(r, dtype):
    """The reference result in the op's dtype: integers wrap (two's complement) like
    PyTorch's integer matmul; floats stay float64 and are compared with tolerances."""
    if dtype in INT_DTYPES:
        return np.asarray(r).astype(np.int64).astype(NP_DTYPE[dtype])
    return np.asarray(r)


def check(actual, exp, dtype, k):
    """Compare with tolerances scaled by the reduction length k (inputs are in [-5, 5])."""
    if dtype in INT_DTYPES:
        assert_close(actual, exp, dtype=dtype)
        return
    atol = 25 * max(k, 1) * EPS[dtype] * 4
    assert_close(actual, exp, dtype=dtype, rtol=4 * EPS[dtype] + 1e-6 * (dtype == ptl.float16),
                 atol=atol)


def scalar_as(v, dtype):
    """PyTorch converts alpha/beta to the result type: integers truncate."""
    return v if dtype in FLOAT_DTYPES else int(v)


# ---- mm ----

@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("mkn", MKN, ids=str)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_mm(dtype, mkn, layout):
    m, k, n = mkn
    a, an = make((m, k), dtype, layout, seed=1)
    b, bn = make((k, n), dtype, "transposed" if layout == "sliced" else layout, seed=2)
    out = ptl.mm(a, b)
    check(out, expected(ref(an, dtype) @ ref(bn, dtype), dtype), dtype, k)
    check(a.mm(b), expected(ref(an, dtype) @ ref(bn, dtype), dtype), dtype, k)


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64], ids=str)
@pytest.mark.parametrize("mkn,la,lb", [((200, 300, 2100), "transposed", "contiguous"),
                                       ((300, 513, 260), "contiguous", "transposed"),
                                       ((5, 700, 3), "sliced", "sliced")])
def test_mm_large(dtype, mkn, la, lb):
    """Several KC and NC blocks, the thread pool and the GIL release."""
    m, k, n = mkn
    a, an = make((m, k), dtype, la, seed=3)
    b, bn = make((k, n), dtype, lb, seed=4)
    check(ptl.mm(a, b), ref(an, dtype) @ ref(bn, dtype), dtype, k)


def test_mm_integer_wraps():
    a, an = make((3, 40), ptl.int8, seed=5, low=100, high=127)
    b, bn = make((40, 2), ptl.int8, seed=6, low=100, high=127)
    r = (an.astype(np.int64) @ bn.astype(np.int64)).astype(np.int8)
    assert_close(ptl.mm(a, b), r, dtype=ptl.int8)
    if torch is not None:
        t = torch.mm(torch.from_numpy(an), torch.from_numpy(bn)).numpy()
        np.testing.assert_array_equal(t, r)
    big = ptl.tensor(np.array([[2 ** 62, 3]], dtype=np.int64))
    col = ptl.tensor(np.array([[4], [5]], dtype=np.int64))
    assert ptl.mm(big, col).numpy()[0, 0] == np.int64(15)   # 2**64 wraps to 0


@pytest.mark.parametrize("out_shape,layout", [((0,), "contiguous"), ((4, 5), "contiguous"),
                                              ((5, 4), "transposed"), ((7, 3), "contiguous")])
def test_mm_out(out_shape, layout):
    a, an = make((4, 6), ptl.float32, seed=7)
    b, bn = make((6, 5), ptl.float32, seed=8)
    out, _ = make(out_shape, ptl.float32, seed=9)
    if layout == "transposed":
        out = out.t()
    r = ptl.mm(a, b, out=out)
    assert r is out
    check(out, ref(an, ptl.float32) @ ref(bn, ptl.float32), ptl.float32, 6)
    if layout == "transposed":
        assert out.stride() == (1, 4)


def test_mm_out_int():
    a, an = make((3, 4), ptl.int16, seed=10)
    b, bn = make((4, 2), ptl.int16, seed=11)
    out = ptl.tensor(np.zeros((0,), dtype=np.int16))
    ptl.mm(a, b, out=out)
    assert_close(out, expected(ref(an, ptl.int16) @ ref(bn, ptl.int16), ptl.int16),
                 dtype=ptl.int16)


def test_portable_kernel():
    """The portable micro-kernels (no AVX2) give the same results."""
    code = (
        "import numpy as np, pytorchlite as ptl\n"
        "g = np.random.default_rng(0)\n"
        "for dt in ('float32', 'float64'):\n"
        "    a = g.standard_normal((33, 300)).astype(dt); b = g.standard_normal((300, 65)).astype(dt)\n"
        "    r = ptl.mm(ptl.tensor(a), ptl.tensor(b)).numpy()\n"
        "    assert np.allclose(r, a.astype(float) @ b, rtol=1e-4, atol=1e-4), dt\n"
        "print('ok')\n")
    env = dict(os.environ, PTL_CPU_CAPABILITY="default",
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert res.stdout.strip() == "ok", res.stderr


# ---- bmm / baddbmm ----

BMK = [(0, 2, 3, 4), (3, 1, 1, 1), (2, 7, 33, 5), (4, 3, 0, 2), (2, 0, 4, 3), (70, 5, 6, 7)]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("bmkn", BMK, ids=str)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_bmm(dtype, bmkn, layout):
    bs, m, k, n = bmkn
    a, an = make((bs, m, k), dtype, layout, seed=1)
    b, bn = make((bs, k, n), dtype, layout, seed=2)
    check(ptl.bmm(a, b), expected(ref(an, dtype) @ ref(bn, dtype), dtype), dtype, k)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("self_shape", [(2, 3, 4), (3, 4), (4,), (1, 1, 1), (), (2, 1, 4)], ids=str)
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 2), (0, 1.5), (-2, 3)])
def test_baddbmm(dtype, self_shape, beta, alpha):
    s, sn = make(self_shape, dtype, seed=3)
    a, an = make((2, 3, 5), dtype, "transposed", seed=4)
    b, bn = make((2, 5, 4), dtype, seed=5)
    be, al = scalar_as(beta, dtype), scalar_as(alpha, dtype)
    r = al * (ref(an, dtype) @ ref(bn, dtype)) + (be * ref(sn, dtype) if be != 0 else 0)
    out = ptl.baddbmm(s, a, b, beta=beta, alpha=alpha)
    check(out, expected(np.broadcast_to(r, (2, 3, 4)), dtype), dtype, 5 * abs(al) + abs(be))


# ---- addmm ----

@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("self_shape", [(7, 9), (9,), (1, 9), (7, 1), ()], ids=str)
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 2), (0, 1.5), (-2, 3)])
@pytest.mark.parametrize("k", [0, 33])
def test_addmm(dtype, self_shape, beta, alpha, k):
    s, sn = make(self_shape, dtype, seed=3)
    a, an = make((7, k), dtype, "transposed", seed=4)
    b, bn = make((k, 9), dtype, "sliced", seed=5)
    be, al = scalar_as(beta, dtype), scalar_as(alpha, dtype)
    r = al * (ref(an, dtype) @ ref(bn, dtype)) + (be * ref(sn, dtype) if be != 0 else 0)
    out = ptl.addmm(s, a, b, beta=beta, alpha=alpha)
    check(out, expected(np.broadcast_to(r, (7, 9)), dtype), dtype, k * abs(al) + abs(be))
    if beta == 1 and alpha == 1:
        check(s.addmm(a, b), expected(np.broadcast_to(r, (7, 9)), dtype), dtype, k + 1)


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64, ptl.float16, ptl.bfloat16], ids=str)
def test_beta_zero_ignores_nan(dtype):
    nan = ptl.tensor(np.full((3, 2), np.nan, dtype=np.float32)).to(dtype)
    a, an = make((3, 4), dtype, seed=1)
    b, bn = make((4, 2), dtype, seed=2)
    r = ref(an, dtype) @ ref(bn, dtype)
    check(ptl.addmm(nan, a, b, beta=0), r, dtype, 4)
    check(ptl.addmv(nan[:, 0], a, b[:, 0], beta=0), r[:, 0], dtype, 4)
    check(ptl.baddbmm(nan.reshape(1, 3, 2), a.reshape(1, 3, 4), b.reshape(1, 4, 2), beta=0),
          r[None], dtype, 4)
    zero_k = ptl.addmm(nan, a[:, :0], b[:0], beta=0)
    assert_close(zero_k, np.zeros((3, 2)), dtype=dtype)
    # beta != 0 keeps NaN; alpha == 0 still multiplies (0 * NaN = NaN), as in PyTorch
    assert np.isnan(to_numpy(ptl.addmm(nan, a, b))).all()
    nan_a = ptl.tensor(np.full((3, 4), np.nan, dtype=np.float32)).to(dtype)
    assert np.isnan(to_numpy(ptl.addmm(a[:, :2], nan_a, b, alpha=0))).all()


# ---- addmv / mv / dot / vdot / outer ----

@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("mk", [(1, 1), (0, 3), (3, 0), (7, 33), (65, 257)], ids=str)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_mv(dtype, mk, layout):
    m, k = mk
    a, an = make((m, k), dtype, layout, seed=1)
    v, vn = make((k,), dtype, "sliced" if layout == "expanded" else layout, seed=2)
    r = expected(ref(an, dtype) @ ref(vn, dtype), dtype)
    check(ptl.mv(a, v), r, dtype, k)
    check(a.mv(v), r, dtype, k)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("self_shape", [(7,), (1,), ()], ids=str)
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 2), (0, 1.5), (-2, 3)])
def test_addmv(dtype, self_shape, beta, alpha):
    s, sn = make(self_shape, dtype, seed=3)
    a, an = make((7, 33), dtype, "transposed", seed=4)
    v, vn = make((33,), dtype, "sliced", seed=5)
    be, al = scalar_as(beta, dtype), scalar_as(alpha, dtype)
    r = al * (ref(an, dtype) @ ref(vn, dtype)) + (be * ref(sn, dtype) if be != 0 else 0)
    out = ptl.addmv(s, a, v, beta=beta, alpha=alpha)
    check(out, expected(np.broadcast_to(r, (7,)), dtype), dtype, 33 * abs(al) + abs(be))


@pytest.mark.parametrize("op", ["dot", "vdot"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("k", [0, 1, 7, 5000])
@pytest.mark.parametrize("layout", ["contiguous", "sliced", "expanded"])
def test_dot(op, dtype, k, layout):
    a, an = make((k,), dtype, layout, seed=1)
    b, bn = make((k,), dtype, "sliced", seed=2)
    r = expected(np.dot(ref(an, dtype), ref(bn, dtype)), dtype)
    check(getattr(ptl, op)(a, b), r, dtype, k)
    check(getattr(a, op)(b), r, dtype, k)


@pytest.mark.parametrize("da,db", [(ptl.float32, ptl.float32), (ptl.int64, ptl.int64),
                                   (ptl.float16, ptl.float16), (ptl.bool, ptl.bool),
                                   (ptl.float32, ptl.float64), (ptl.int32, ptl.bool),
                                   (ptl.uint8, ptl.int8)], ids=str)
@pytest.mark.parametrize("n,m", [(3, 4), (0, 2), (1, 1)])
def test_outer(da, db, n, m):
    a, an = make((n,), da, "sliced", seed=1)
    b, bn = make((m,), db, seed=2)
    out = ptl.outer(a, b)
    if torch is not None:
        tdt = {ptl.float32: torch.float32, ptl.int64: torch.int64, ptl.float16: torch.float16,
               ptl.bool: torch.bool, ptl.float64: torch.float64, ptl.int32: torch.int32,
               ptl.uint8: torch.uint8, ptl.int8: torch.int8}
        want = torch.outer(torch.zeros(n, dtype=tdt[da]), torch.zeros(m, dtype=tdt[db])).dtype
        assert str(out.dtype) == str(want)
    if out.dtype == ptl.bool:
        assert_close(out, np.outer(an, bn).astype(bool))
    elif out.dtype in INT_DTYPES:
        assert_close(out, np.outer(an.astype(np.int64), bn.astype(np.int64)).astype(
            NP_DTYPE[out.dtype]))
    else:
        check(out, np.outer(an.astype(np.float64), bn.astype(np.float64)), out.dtype, 1)


# ---- matmul ----

MATMUL_SHAPES = [
    ((3,), (3,)), ((0,), (0,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
    ((5, 2, 3), (3,)), ((5, 2, 3), (3, 4)), ((3,), (5, 3, 4)), ((2, 3), (5, 3, 4)),
    ((2, 1, 2, 3), (5, 3, 4)), ((5, 2, 3), (5, 3, 4)), ((1, 2, 3), (7, 1, 3, 2)),
    ((0, 2, 3), (3, 4)), ((2, 0, 3), (3,)), ((4,), (2, 4, 0)), ((3, 1, 2, 3), (1, 4, 3, 1)),
]


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64, ptl.int64, ptl.float16, ptl.uint8],
                         ids=str)
@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES, ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "expanded"])
def test_matmul(dtype, sa, sb, layout):
    a, an = make(sa, dtype, layout, seed=1)
    b, bn = make(sb, dtype, "sliced" if layout == "expanded" else layout, seed=2)
    r = expected(np.matmul(ref(an, dtype), ref(bn, dtype)), dtype)
    check(ptl.matmul(a, b), r, dtype, sa[-1])
    check(a @ b, r, dtype, sa[-1])


# ---- errors: PyTorch's type and text (cross-checked with torch when installed) ----

def T(mod, shape, dtype="float32"):
    return mod.tensor(np.ones(shape), dtype=getattr(mod, dtype))


ERRORS = [
    # mm
    (lambda m: m.mm(T(m, (2, 3)), T(m, (4, 5))), RuntimeError,
     "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"),
    (lambda m: m.mm(T(m, (3,)), T(m, (2, 3))), RuntimeError, "self must be a matrix"),
    (lambda m: m.mm(T(m, (2, 3)), T(m, (3,))), RuntimeError, "mat2 must be a matrix"),
    (lambda m: m.mm(T(m, (2, 3)), T(m, (3, 4), "float64")), RuntimeError,
     "expected m1 and m2 to have the same dtype, but got: float != double"),
    (lambda m: m.mm(T(m, (2, 3), "int32"), T(m, (3, 4), "int64")), RuntimeError,
     "expected m1 and m2 to have the same dtype, but got: int != long int"),
    (lambda m: m.mm(T(m, (2, 3)), T(m, (3, 4), "float16")), RuntimeError,
     "expected m1 and m2 to have the same dtype, but got: float != c10::Half"),
    (lambda m: m.mm(T(m, (2, 3)), T(m, (3, 2)), out=T(m, (0,), "float64")), RuntimeError,
     "Expected out tensor to have dtype float, but got double instead"),
    (lambda m: m.mm(T(m, (2, 3)), T(m, (3, 2)), out=T(m, (0,), "uint8")), RuntimeError,
     "Expected out tensor to have dtype float, but got unsigned char instead"),
    (lambda m: m.mm(T(m, (2, 3), "bool"), T(m, (3, 2), "bool")), NotImplementedError,
     "\"addmm_impl_cpu_\" not implemented for 'Bool'"),
    # bmm
    (lambda m: m.bmm(T(m, (2, 3)), T(m, (1, 3, 2))), RuntimeError, "batch1 must be a 3D tensor"),
    (lambda m: m.bmm(T(m, (1, 2, 3)), T(m, (3, 2))), RuntimeError, "batch2 must be a 3D tensor"),
    (lambda m: m.bmm(T(m, (2, 2, 3)), T(m, (3, 3, 2))), RuntimeError,
     "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [3, 3]."),
    (lambda m: m.bmm(T(m, (2, 2, 3)), T(m, (2, 4, 2))), RuntimeError,
     "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [2, 4]."),
    (lambda m: m.bmm(T(m, (2, 2, 3)), T(m, (2, 3, 2), "float64")), RuntimeError,
     "expected scalar type Float but found Double"),
    (lambda m: m.bmm(T(m, (2, 2, 3), "bool"), T(m, (2, 3, 2), "bool")), NotImplementedError,
     "\"bmm\" not implemented for 'Bool'"),
    # addmm
    (lambda m: m.addmm(T(m, (2, 2)), T(m, (3,)), T(m, (3, 2))), RuntimeError,
     "mat1 must be a matrix, got 1-D tensor"),
    (lambda m: m.addmm(T(m, (2, 2)), T(m, (2, 3)), T(m, (3,))), RuntimeError,
     "mat2 must be a matrix, got 1-D tensor"),
    (lambda m: m.addmm(T(m, (5,)), T(m, (2, 3)), T(m, (4, 2))), RuntimeError,
     "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x2)"),
    (lambda m: m.addmm(T(m, (5,)), T(m, (2, 3), "float64"), T(m, (3, 2))), RuntimeError,
     "mat1 and mat2 must have the same dtype, but got Double and Float"),
    (lambda m: m.addmm(T(m, (5,)), T(m, (2, 3)), T(m, (3, 2))), RuntimeError,
     "The expanded size of the tensor (2) must match the existing size (5) at non-singleton "
     "dimension 1.  Target sizes: [2, 2].  Tensor sizes: [5]"),
    (lambda m: m.addmm(T(m, (1, 1, 1)), T(m, (2, 3)), T(m, (3, 2))), RuntimeError,
     "expand(torch.FloatTensor{[1, 1, 1]}, size=[2, 2]): the number of sizes provided (2) must "
     "be greater or equal to the number of dimensions in the tensor (3)"),
    (lambda m: m.addmm(T(m, (2, 2), "float64"), T(m, (2, 3)), T(m, (3, 2))), RuntimeError,
     "self and mat2 must have the same dtype, but got Double and Float"),
    (lambda m: m.addmm(T(m, (2, 2), "bool"), T(m, (2, 3), "bool"), T(m, (3, 2), "bool")),
     NotImplementedError, "\"addmm_impl_cpu_\" not implemented for 'Bool'"),
    # addmv / mv
    (lambda m: m.addmv(T(m, (2, 2)), T(m, (2, 3)), T(m, (3,))), RuntimeError,
     "vector + matrix @ vector expected, got 2, 2, 1"),
    (lambda m: m.addmv(T(m, (2,)), T(m, (3,)), T(m, (3,))), RuntimeError,
     "vector + matrix @ vector expected, got 1, 1, 1"),
    (lambda m: m.addmv(T(m, (5,)), T(m, (2, 3)), T(m, (3,))), RuntimeError,
     "size mismatch, got input (5), mat (2x3), vec (3)"),
    (lambda m: m.addmv(T(m, (2,)), T(m, (2, 3)), T(m, (4,))), RuntimeError,
     "size mismatch, got input (2), mat (2x3), vec (4)"),
    (lambda m: m.addmv(T(m, (2,), "float64"), T(m, (2, 3)), T(m, (3,))), RuntimeError,
     "addmv input tensors must have the same dtype, but got Double, Float, and Float"),
    (lambda m: m.addmv(T(m, (2,), "bool"), T(m, (2, 3), "bool"), T(m, (3,), "bool")),
     NotImplementedError, "\"addmv_impl_cpu\" not implemented for 'Bool'"),
    (lambda m: m.mv(T(m, (3,)), T(m, (3,))), RuntimeError,
     "vector + matrix @ vector expected, got 1, 1, 1"),
    (lambda m: m.mv(T(m, (2, 3)), T(m, (2, 3))), RuntimeError,
     "vector + matrix @ vector expected, got 1, 2, 2"),
    (lambda m: m.mv(T(m, (2, 3)), T(m, (4,))), RuntimeError,
     "size mismatch, got input (2), mat (2x3), vec (4)"),
    (lambda m: m.mv(T(m, (2, 3)), T(m, (3,), "float64")), RuntimeError,
     "addmv input tensors must have the same dtype, but got Double, Float, and Double"),
    (lambda m: m.mv(T(m, (2, 3), "int32"), T(m, (3,), "int64")), RuntimeError,
     "addmv input tensors must have the same dtype, but got Long, Int, and Long"),
    (lambda m: m.mv(T(m, (2, 3), "bool"), T(m, (3,), "bool")), NotImplementedError,
     "\"addmv_impl_cpu\" not implemented for 'Bool'"),
    # baddbmm
    (lambda m: m.baddbmm(T(m, (2,)), T(m, (2, 3)), T(m, (1, 3, 2))), RuntimeError,
     "batch1 must be a 3D tensor"),
    (lambda m: m.baddbmm(T(m, (2,)), T(m, (1, 2, 3)), T(m, (3, 2))), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    (lambda m: m.baddbmm(T(m, (2,)), T(m, (1, 2, 3)), T(m, (3,))), IndexError,
     "Dimension out of range (expected to be in range of [-1, 0], but got 2)"),
    (lambda m: m.baddbmm(T(m, (2,)), T(m, (1, 2, 3)), T(m, ())), IndexError,
     "Dimension specified as 2 but tensor has no dimensions"),
    (lambda m: m.baddbmm(T(m, (5,)), T(m, (1, 2, 3)), T(m, (1, 4, 2))), RuntimeError,
     "The expanded size of the tensor (2) must match the existing size (5) at non-singleton "
     "dimension 2.  Target sizes: [1, 2, 2].  Tensor sizes: [5]"),
    (lambda m: m.baddbmm(T(m, (2,)), T(m, (1, 2, 3)), T(m, (1, 1, 3, 2))), RuntimeError,
     "The expanded size of the tensor (3) must match the existing size (2) at non-singleton "
     "dimension 2.  Target sizes: [1, 2, 3].  Tensor sizes: [2]"),
    (lambda m: m.baddbmm(T(m, (3,)), T(m, (1, 2, 3)), T(m, (1, 1, 3, 3))), RuntimeError,
     "batch2 must be a 3D tensor"),
    (lambda m: m.baddbmm(T(m, (2,), "float64"), T(m, (1, 2, 3)), T(m, (1, 3, 2))), RuntimeError,
     "Input dtypes must be the same, got: input double, batch1: float, batch2: float"),
    (lambda m: m.baddbmm(T(m, (2,), "int64"), T(m, (1, 2, 3)), T(m, (1, 3, 2))), RuntimeError,
     "Input dtypes must be the same, got: input long int, batch1: float, batch2: float"),
    (lambda m: m.baddbmm(T(m, (2,)), T(m, (1, 2, 3)), T(m, (1, 3, 2), "float64")), RuntimeError,
     "expected scalar type Float but found Double"),
    (lambda m: m.baddbmm(T(m, (2,)), T(m, (1, 2, 3)), T(m, (2, 3, 2))), RuntimeError,
     "Expected size for first two dimensions of batch2 tensor to be: [1, 3] but got: [2, 3]."),
    (lambda m: m.baddbmm(T(m, (2,), "bool"), T(m, (1, 2, 3), "bool"), T(m, (1, 3, 2), "bool")),
     NotImplementedError, "\"baddbmm\" not implemented for 'Bool'"),
    # dot / vdot
    (lambda m: m.dot(T(m, (2, 2)), T(m, (2, 2))), RuntimeError,
     "1D tensors expected, but got 2D and 2D tensors"),
    (lambda m: m.dot(T(m, ()), T(m, ())), RuntimeError,
     "1D tensors expected, but got 0D and 0D tensors"),
    (lambda m: m.vdot(T(m, (3,)), T(m, (2, 2))), RuntimeError,
     "1D tensors expected, but got 1D and 2D tensors"),
    (lambda m: m.dot(T(m, (3,)), T(m, (4,))), RuntimeError,
     "inconsistent tensor size, expected tensor [3] and src [4] to have the same number of "
     "elements, but got 3 and 4 elements respectively"),
    (lambda m: m.dot(T(m, (3,)), T(m, (4,), "float64")), RuntimeError,
     "dot : expected both vectors to have same dtype, but found Float and Double"),
    (lambda m: m.vdot(T(m, (3,), "int32"), T(m, (3,), "int64")), RuntimeError,
     "dot : expected both vectors to have same dtype, but found Int and Long"),
    (lambda m: m.dot(T(m, (3,), "bool"), T(m, (3,), "bool")), NotImplementedError,
     "\"dot\" not implemented for 'Bool'"),
    (lambda m: m.vdot(T(m, (3,), "bool"), T(m, (3,), "bool")), NotImplementedError,
     "\"dot\" not implemented for 'Bool'"),
    # outer
    (lambda m: m.outer(T(m, (2, 2)), T(m, (3,))), RuntimeError,
     "outer: Expected 1-D argument self, but got 2-D"),
    (lambda m: m.outer(T(m, ()), T(m, (3,))), RuntimeError,
     "outer: Expected 1-D argument self, but got 0-D"),
    (lambda m: m.outer(T(m, (2,)), T(m, (3, 1))), RuntimeError,
     "outer: Expected 1-D argument vec2, but got 2-D"),
    # matmul
    (lambda m: m.matmul(T(m, ()), T(m, (3,))), RuntimeError,
     "both arguments to matmul need to be at least 1D, but they are 0D and 1D"),
    (lambda m: m.matmul(T(m, (3,)), T(m, ())), RuntimeError,
     "both arguments to matmul need to be at least 1D, but they are 1D and 0D"),
    (lambda m: m.matmul(T(m, (3,)), T(m, (4,))), RuntimeError,
     "inconsistent tensor size, expected tensor [3] and src [4] to have the same number of "
     "elements, but got 3 and 4 elements respectively"),
    (lambda m: m.matmul(T(m, (2, 3)), T(m, (4,))), RuntimeError,
     "size mismatch, got input (2), mat (2x3), vec (4)"),
    (lambda m: m.matmul(T(m, (3,)), T(m, (4, 2))), RuntimeError,
     "mat1 and mat2 shapes cannot be multiplied (1x3 and 4x2)"),
    (lambda m: m.matmul(T(m, (2, 2, 3)), T(m, (4, 2))), RuntimeError,
     "mat1 and mat2 shapes cannot be multiplied (4x3 and 4x2)"),
    (lambda m: m.matmul(T(m, (2, 2, 3)), T(m, (4,))), RuntimeError,
     "size mismatch, got input (4), mat (4x3), vec (4)"),
    (lambda m: m.matmul(T(m, (2, 2, 3)), T(m, (3, 3, 2))), RuntimeError,
     "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"),
    (lambda m: m.matmul(T(m, (2, 2, 3)), T(m, (2, 4, 2))), RuntimeError,
     "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [2, 4]."),
    (lambda m: m.matmul(T(m, (4,)), T(m, (2, 3, 2))), RuntimeError,
     "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [2, 3]."),
    (lambda m: m.matmul(T(m, (2, 3)), T(m, (3, 2), "float64")), RuntimeError,
     "expected m1 and m2 to have the same dtype, but got: float != double"),
    (lambda m: m.matmul(T(m, (3,)), T(m, (3,), "float64")), RuntimeError,
     "dot : expected both vectors to have same dtype, but found Float and Double"),
    (lambda m: m.matmul(T(m, (2, 2, 3)), T(m, (2, 3, 2), "float64")), RuntimeError,
     "expected scalar type Float but found Double"),
    (lambda m: m.matmul(T(m, (3,), "bool"), T(m, (3,), "bool")), NotImplementedError,
     "\"dot\" not implemented for 'Bool'"),
    (lambda m: m.matmul(T(m, (2, 3), "bool"), T(m, (3,), "bool")), NotImplementedError,
     "\"addmv_impl_cpu\" not implemented for 'Bool'"),
    (lambda m: m.matmul(T(m, (2, 3), "bool"), T(m, (3, 2), "bool")), NotImplementedError,
     "\"addmm_impl_cpu_\" not implemented for 'Bool'"),
    (lambda m: m.matmul(T(m, (2, 2, 3), "bool"), T(m, (2, 3, 2), "bool")), NotImplementedError,
     "\"bmm\" not implemented for 'Bool'"),
]


@pytest.mark.parametrize("fn,exc,msg", ERRORS, ids=[e[2][:60] for e in ERRORS])
def test_errors(fn, exc, msg):
    with pytest.raises(exc, match="^" + re.escape(msg) + "$"):
        fn(ptl)
    if torch is not None:
        with pytest.raises(exc) as info:
            fn(torch)
        assert str(info.value).split("\n")[0] == msg


@pytest.mark.parametrize("dtype", DTYPES + [ptl.bool], ids=str)
def test_dtype_support_matches_torch(dtype):
    """Every dtype torch accepts for mm works here, and the ones it rejects are rejected."""
    a, _ = make((2, 3), dtype, seed=1)
    b, _ = make((3, 2), dtype, seed=2)
    if dtype == ptl.bool:
        with pytest.raises(NotImplementedError):
            ptl.mm(a, b)
    else:
        assert ptl.mm(a, b).dtype == dtype
