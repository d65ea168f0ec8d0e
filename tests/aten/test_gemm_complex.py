"""Complex matrix products (src/aten/native/gemm_complex.c, Note [Complex GEMM]): mm, bmm,
addmm, baddbmm, addbmm, addmv, mv, dot, vdot, matmul, einsum, inner, tensordot and linear on
complex64 / complex128, against NumPy in complex128.  Shapes at and across every blocking
edge of the engine this CPU runs (MR rows, NR columns, KC, MC, NC, the one-row / one-column
path, the parallel threshold) on 1 and 2 threads, with the portable and AVX2 engines rerun
in a child process; strided, transposed, conjugated and broadcast operands; complex alpha
and beta; gradients with PyTorch's conjugates; mixed-dtype errors with PyTorch's messages."""
import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn.functional as F
from helpers import (assert_raises_like_torch, num_threads, rerun_with_capability, torch,
                     torch_ref)
from pytorchlite.autograd import gradcheck

C64, C128 = ptl.complex64, ptl.complex128
NP = {C64: np.complex64, C128: np.complex128}


def crandn(shape, dtype=C128, seed=0):
    g = np.random.default_rng(seed)
    return (g.standard_normal(shape) + 1j * g.standard_normal(shape)).astype(NP[dtype])


def check(out, ref, scale, dtype):
    """out (a pytorchlite tensor) against ref (complex128), to 1e-5 (complex64) or 1e-13
    (complex128) of `scale`, the largest sum of |products| (sums lose absolute accuracy)."""
    assert out.dtype == dtype and tuple(out.shape) == ref.shape
    tol = (1e-5 if dtype == C64 else 1e-13) * max(float(scale), 1.0)
    np.testing.assert_allclose(out.numpy().astype(np.complex128), ref, rtol=0, atol=tol)


def mm_ref(a, b):
    a, b = a.astype(np.complex128), b.astype(np.complex128)
    scale = (np.abs(a) @ np.abs(b)).max(initial=0.0)
    return a @ b, scale


# (m, k, n) at and across the tiles and blocks of every engine: MR 4 / 6 / 8 rows, NR 2 / 4 /
# 8 / 16 columns (AVX-512's half tiles for a last sliver of at most NR / 2), KC 256 (complex128) / 512 (complex64), MC 120 / 128, NC 512 / 1024, one row
# or column (gemv), empty k, and the products of at most 64 multiply-adds computed directly
SHAPES = ([(m, 3, 17) for m in (1, 2, 5, 6, 7, 8, 9, 119, 120, 121, 127, 128, 129, 257)] +
          [(9, 3, n) for n in (1, 2, 3, 4, 5, 8, 9, 12, 13, 15, 16, 17, 24, 25, 511, 512, 513,
                               1023, 1024, 1025, 2049)] +
          [(9, k, 17) for k in (0, 1, 2, 255, 256, 257, 511, 512, 513, 1025)] +
          [(130, 520, 1030), (33, 257, 513), (1, 300, 1), (300, 129, 1), (1, 129, 300)] +
          [(4, 4, 4), (4, 5, 4), (2, 16, 2), (2, 17, 2), (2, 8, 4), (2, 9, 4), (3, 7, 3)])


@pytest.mark.parametrize("dtype", [C64, C128])
@pytest.mark.parametrize("threads", [1, 2])
def test_mm_thresholds(dtype, threads):
    with num_threads(threads):
        for i, (m, k, n) in enumerate(SHAPES):
            a, b = crandn((m, k), dtype, i), crandn((k, n), dtype, 100 + i)
            ref, scale = mm_ref(a, b)
            check(ptl.mm(ptl.from_numpy(a), ptl.from_numpy(b)), ref, scale, dtype)


# the parallel threshold (2**16 complex multiply-adds, counted as batch * m * n * (k + 1)):
# just under and at it, one matrix (split over MC blocks or column groups) and a batch
# (split over matrices), and the one-column path split over rows
PARALLEL_SHAPES = [(1, 32, 62, 32), (1, 32, 63, 32), (1, 9, 300, 64), (1, 300, 9, 64),
                   (1, 260, 50, 33), (2, 32, 63, 32), (3, 40, 50, 41), (1, 2048, 64, 1),
                   (1, 1, 64, 2048), (4, 1024, 20, 1)]


@pytest.mark.parametrize("dtype", [C64, C128])
def test_parallel_threshold(dtype, restore_threads):
    bmm_on_one_and_two_threads(PARALLEL_SHAPES, dtype)


def bmm_on_one_and_two_threads(shapes, dtype):
    """bmm of random [bs, m, k] @ [bs, k, n] for each shape, against NumPy on 1 and 2 threads,
    with the same bits on both (the split never changes a sum's order)."""
    for i, (bs, m, k, n) in enumerate(shapes):
        a, b = crandn((bs, m, k), dtype, i), crandn((bs, k, n), dtype, 50 + i)
        ref, scale = mm_ref(a, b)
        outs = []
        for threads in (1, 2):
            ptl.set_num_threads(threads)
            out = ptl.bmm(ptl.from_numpy(a), ptl.from_numpy(b))
            check(out, ref, scale, dtype)
            outs.append(out.numpy())
        np.testing.assert_array_equal(outs[0], outs[1])


def test_other_engines():
    """The AVX2 and the portable engines (other MR, NR and MC) on this file's shape tests."""
    path = __file__
    rerun_with_capability(path, "avx2", "-k", "thresholds or views or addmm_alpha")
    rerun_with_capability(path, "default", "-k", "thresholds or views or addmm_alpha")


def variants(x):
    """x (a complex128 array) as pytorchlite operands of its value: contiguous, transposed
    (the mT of a contiguous transpose), a column slice, the conj of its conj (an eager copy),
    and the mH of its conjugate transpose."""
    t = ptl.from_numpy(x)
    wide = ptl.from_numpy(np.repeat(x, 2, axis=-1))
    yield "contiguous", t
    yield "mT", ptl.from_numpy(np.ascontiguousarray(np.swapaxes(x, -1, -2))).mT
    yield "strided", wide[..., ::2]
    yield "conj", t.conj().conj()
    yield "mH", ptl.from_numpy(np.ascontiguousarray(np.swapaxes(x.conj(), -1, -2))).mH


@pytest.mark.parametrize("dtype", [C64, C128])
def test_views(dtype):
    for m, k, n in [(7, 5, 9), (130, 129, 20), (3, 0, 4), (0, 4, 3), (5, 3, 1)]:
        a, b = crandn((m, k), dtype, m), crandn((k, n), dtype, n)
        ref, scale = mm_ref(a, b)
        for (_, ta), (_, tb) in zip(variants(a), list(variants(b))[::-1]):
            check(ptl.mm(ta, tb), ref, scale, dtype)
        # a conjugated operand: conj() is eager here, so mm sees plain values
        ta = ptl.from_numpy(a)
        check(ptl.mm(ta.conj(), ptl.from_numpy(b)), *mm_ref(a.conj(), b), dtype)
        check(ptl.mm(ptl.from_numpy(b).mH, ta.mH), *mm_ref(b.conj().T, a.conj().T), dtype)


@pytest.mark.parametrize("dtype", [C64, C128])
def test_batched_and_broadcast(dtype):
    a, b = crandn((2, 1, 5, 4), dtype, 1), crandn((3, 4, 6), dtype, 2)
    check(ptl.matmul(ptl.from_numpy(a), ptl.from_numpy(b)), *mm_ref(a, b), dtype)
    # a batch of transposed matrices, and an expanded (stride 0) batch
    at = ptl.from_numpy(np.ascontiguousarray(np.swapaxes(a, -1, -2))).mT
    check(ptl.matmul(at, ptl.from_numpy(b)), *mm_ref(a, b), dtype)
    e = ptl.from_numpy(b[:1]).expand(4, 4, 6)
    check(ptl.bmm(ptl.from_numpy(crandn((4, 5, 4), dtype, 3)), e),
          *mm_ref(crandn((4, 5, 4), dtype, 3), np.broadcast_to(b[:1], (4, 4, 6))), dtype)
    # empty batches and matrices
    for sa, sb in [((0, 3, 4), (0, 4, 5)), ((2, 0, 4), (2, 4, 5)), ((2, 3, 0), (2, 0, 5))]:
        x, y = crandn(sa, dtype), crandn(sb, dtype)
        check(ptl.bmm(ptl.from_numpy(x), ptl.from_numpy(y)), *mm_ref(x, y), dtype)


@pytest.mark.parametrize("dtype", [C64, C128])
def test_vector_products(dtype):
    for k in (0, 1, 7, 300):
        x, y = crandn(k, dtype, 1), crandn(k, dtype, 2)
        s = float(np.abs(x) @ np.abs(y)) if k else 0.0
        tx, ty = ptl.from_numpy(x), ptl.from_numpy(y)
        check(ptl.dot(tx, ty), np.asarray(np.dot(x.astype(np.complex128), y)), s, dtype)
        check(ptl.vdot(tx, ty), np.asarray(np.vdot(x.astype(np.complex128), y)), s, dtype)
        check(tx @ ty, np.asarray(np.dot(x.astype(np.complex128), y)), s, dtype)
        # strided vectors
        w = ptl.from_numpy(np.repeat(x, 2))[::2]
        check(ptl.vdot(w, ty), np.asarray(np.vdot(x.astype(np.complex128), y)), s, dtype)
    m = crandn((6, 300), dtype, 3)
    v = crandn(300, dtype, 4)
    ref, scale = mm_ref(m, v[:, None])
    check(ptl.mv(ptl.from_numpy(m), ptl.from_numpy(v)), ref[:, 0], scale, dtype)
    check(ptl.from_numpy(v) @ ptl.from_numpy(np.ascontiguousarray(m.T)), ref[:, 0], scale,
          dtype)
    check(ptl.mv(ptl.from_numpy(np.ascontiguousarray(m.T)).mT, ptl.from_numpy(v)), ref[:, 0],
          scale, dtype)


def naive_products(a, b):
    """a @ b as sums of elementwise complex products (NumPy's multiply: re = ar br - ai bi,
    im = ar bi + ai br), as torch's dot sums them; complex128."""
    a, b = a.astype(np.complex128), b.astype(np.complex128)
    with np.errstate(invalid="ignore", over="ignore"):
        return (a[..., :, :, None] * b[..., None, :, :]).sum(-2)


@pytest.mark.parametrize("dtype", [C64, C128])
@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (1, 7, 1), (6, 300, 1), (1, 300, 6), (4, 4, 4),
                                   (3, 7, 3), (9, 3, 17), (9, 600, 17), (130, 520, 40)])
def test_infinite_sums_keep_their_parts(dtype, m, k, n):
    """An alpha of 1 leaves the sums as they are: (-inf + 0i)(2 - 0.39i) = -inf + inf i, and
    so is dot's result, as torch's dot (1 * the sum as a complex product had made it nan +
    nan i).  Every path: one row or column (dot, vdot, mv over rows and over adjacent
    rows), the tiny products, the blocked engine over one and several k blocks (C += sums),
    addmm's C = S + sums."""
    a, b = crandn((m, k), dtype, m + k), crandn((k, n), dtype, n)
    a[m // 2, k // 3] = complex(-np.inf, 0)
    b[k - 1, n - 1] = complex(0.5, np.inf)
    want = naive_products(a, b)
    assert np.isinf(want).any()
    ta, tb = ptl.from_numpy(a), ptl.from_numpy(b)
    np.testing.assert_allclose(ptl.mm(ta, tb).numpy(), want, rtol=1e-4)
    np.testing.assert_allclose((ta.mT.contiguous().mT @ tb).numpy(), want, rtol=1e-4)
    s = crandn((m, n), dtype, 7)
    np.testing.assert_allclose(ptl.addmm(ptl.from_numpy(s), ta, tb).numpy(), want + s,
                               rtol=1e-4)
    if n == 1:
        np.testing.assert_allclose(ptl.mv(ta, tb[:, 0]).numpy(), want[:, 0], rtol=1e-4)
        np.testing.assert_allclose(ptl.mv(ta.mT.contiguous().mT, tb[:, 0]).numpy(),
                                   want[:, 0], rtol=1e-4)
    if m == 1 and n == 1:
        np.testing.assert_allclose(ptl.dot(ta[0], tb[:, 0]).numpy(), want[0, 0], rtol=1e-4)
        np.testing.assert_allclose(ptl.vdot(ta[0].conj(), tb[:, 0]).numpy(), want[0, 0],
                                   rtol=1e-4)


@torch_ref
def test_dot_of_an_infinite_product_as_torch():
    inf = float("inf")
    for dtype in ("complex64", "complex128"):
        x, y = [complex(-inf, 0), 1 + 1j, 2], [2 - 0.39j, 1j, 3]
        ours = ptl.dot(ptl.tensor(x, dtype=getattr(ptl, dtype)),
                       ptl.tensor(y, dtype=getattr(ptl, dtype)))
        theirs = torch.dot(torch.tensor(x, dtype=getattr(torch, dtype)),
                           torch.tensor(y, dtype=getattr(torch, dtype)))
        assert ours.item() == theirs.item() == complex(-inf, inf)


@pytest.mark.parametrize("dtype", [C64, C128])
def test_addmm_family(dtype):
    a, b, c = crandn((5, 4), dtype, 1), crandn((4, 3), dtype, 2), crandn((5, 3), dtype, 3)
    ref, scale = mm_ref(a, b)
    ta, tb, tc = ptl.from_numpy(a), ptl.from_numpy(b), ptl.from_numpy(c)
    check(ptl.addmm(tc, ta, tb, beta=0.5, alpha=-2), 0.5 * c + -2 * ref, 3 * scale, dtype)
    # a broadcast bias (a row), as nn.Linear's
    check(ptl.addmm(tc[0], ta, tb), c[0] + ref, 2 * scale, dtype)
    # beta = 0: self is not read, NaN included
    nan = ptl.from_numpy(np.full((5, 3), complex(float("nan"), 1), dtype=NP[dtype]))
    check(ptl.addmm(nan, ta, tb, beta=0), ref, scale, dtype)
    ba, bb = crandn((2, 5, 4), dtype, 4), crandn((2, 4, 3), dtype, 5)
    bref, bscale = mm_ref(ba, bb)
    tba, tbb = ptl.from_numpy(ba), ptl.from_numpy(bb)
    check(ptl.baddbmm(tc, tba, tbb, beta=2, alpha=0.5), 2 * c + 0.5 * bref, 3 * bscale, dtype)
    check(ptl.addbmm(tc, tba, tbb, beta=2, alpha=0.5), 2 * c + 0.5 * bref.sum(0),
          3 * bscale * 2, dtype)
    v = crandn(4, dtype, 6)
    vref, vscale = mm_ref(a, v[:, None])
    check(ptl.addmv(tc[:, 0], ta, ptl.from_numpy(v), beta=3, alpha=2),
          3 * c[:, 0] + 2 * vref[:, 0], 5 * vscale, dtype)
    check(ptl.addmv(tc[:, 0], ta, ptl.from_numpy(v), beta=0), vref[:, 0], vscale, dtype)
    # the in-place forms
    out = tc.clone()
    out.addmm_(ta, tb, beta=2)
    check(out, 2 * c + ref, 3 * scale, dtype)


@pytest.mark.parametrize("dtype", [C64, C128])
def test_addmm_alpha_beta_complex(dtype):
    a, b, c = crandn((5, 4), dtype, 1), crandn((4, 3), dtype, 2), crandn((5, 3), dtype, 3)
    ref, scale = mm_ref(a, b)
    ta, tb, tc = ptl.from_numpy(a), ptl.from_numpy(b), ptl.from_numpy(c)
    al, be = 0.5 - 2j, 1j
    check(ptl.addmm(tc, ta, tb, beta=be, alpha=al), be * c + al * ref, 3 * scale, dtype)
    check(tc.addmm(ta, tb, alpha=al), c + al * ref, 3 * scale, dtype)
    out = tc.clone()
    out.addmm_(ta, tb, beta=be)
    check(out, be * c + ref, 2 * scale, dtype)
    nan = ptl.from_numpy(np.full((5, 3), complex(float("nan"), 1), dtype=NP[dtype]))
    check(ptl.addmm(nan, ta, tb, beta=0j, alpha=al), al * ref, 3 * scale, dtype)
    ba, bb = crandn((2, 5, 4), dtype, 4), crandn((2, 4, 3), dtype, 5)
    bref, bscale = mm_ref(ba, bb)
    check(ptl.baddbmm(tc, ptl.from_numpy(ba), ptl.from_numpy(bb), beta=be, alpha=al),
          be * c + al * bref, 3 * bscale, dtype)
    check(ptl.addbmm(tc, ptl.from_numpy(ba), ptl.from_numpy(bb), beta=be, alpha=al),
          be * c + al * bref.sum(0), 6 * bscale, dtype)
    v = crandn(4, dtype, 6)
    vref, vscale = mm_ref(a, v[:, None])
    check(ptl.addmv(tc[:, 0], ta, ptl.from_numpy(v), beta=be, alpha=al),
          be * c[:, 0] + al * vref[:, 0], 3 * vscale, dtype)


def test_complex_scalar_on_real_tensors():
    x = ptl.ones(2, 2)
    # a zero imaginary part is a real scalar; any other is PyTorch's conversion error
    assert ptl.addmm(x, x, x, alpha=2 + 0j).tolist() == [[5.0, 5.0], [5.0, 5.0]]
    for lib_case in [
        (lambda t: t.addmm(t.ones(2, 2), t.ones(2, 2), t.ones(2, 2), alpha=1j),
         "value cannot be converted to type float without overflow"),
        (lambda t: t.addmm(t.ones(2, 2, dtype=t.float64), t.ones(2, 2, dtype=t.float64),
                           t.ones(2, 2, dtype=t.float64), beta=1j),
         "value cannot be converted to type double without overflow"),
        (lambda t: t.addmv(t.ones(2, dtype=t.int64), t.ones(2, 2, dtype=t.int64),
                           t.ones(2, dtype=t.int64), alpha=1j),
         "value cannot be converted to type int64_t without overflow"),
        (lambda t: t.addbmm(t.ones(2, 2), t.ones(1, 2, 2), t.ones(1, 2, 2), alpha=1j),
         "value cannot be converted to type float without overflow"),
    ]:
        assert_raises_like_torch(lib_case[0], RuntimeError, lib_case[1])
    # add's own check (the complex Scalar reaches its kernel: Note [Complex Scalars])
    assert_raises_like_torch(lambda t: t.add(t.ones(2), t.ones(2), alpha=1j), RuntimeError,
                             "For non-complex input tensors, argument alpha must not be a "
                             "complex number.")


@pytest.mark.parametrize("dtype", [C64, C128])
def test_composites(dtype):
    a, b = crandn((2, 3, 4), dtype, 1), crandn((2, 4, 5), dtype, 2)
    ta, tb = ptl.from_numpy(a), ptl.from_numpy(b)
    ref, scale = mm_ref(a, b)
    check(ptl.einsum("bij,bjk->bik", ta, tb), ref, scale, dtype)
    check(ptl.einsum("bij,bjk->ik", ta, tb), ref.sum(0), 2 * scale, dtype)
    check(ptl.tensordot(ta, ptl.from_numpy(b[0]), 1), *mm_ref(a, b[0]), dtype)
    x, y = crandn((3, 4), dtype, 3), crandn((5, 4), dtype, 4)
    check(ptl.inner(ptl.from_numpy(x), ptl.from_numpy(y)), *mm_ref(x, y.T), dtype)
    w, bias = crandn((6, 4), dtype, 5), crandn(6, dtype, 6)
    lref, lscale = mm_ref(x, w.T)
    check(F.linear(ptl.from_numpy(x), ptl.from_numpy(w), ptl.from_numpy(bias)), lref + bias,
          2 * lscale, dtype)
    check(F.linear(ptl.from_numpy(x), ptl.from_numpy(w)), lref, lscale, dtype)
    u, v = crandn(3, dtype, 7), crandn(4, dtype, 8)
    check(ptl.outer(ptl.from_numpy(u), ptl.from_numpy(v)), *mm_ref(u[:, None], v[None]), dtype)


def r128(*shape, seed=0):
    return ptl.from_numpy(crandn(shape, C128, seed)).requires_grad_()


GRAD_CASES = {
    "mm": (ptl.mm, [(3, 4), (4, 2)]),
    "mm_column_major_a": (lambda a, b: ptl.mm(a.t(), b), [(4, 3), (4, 2)]),
    "mm_column_major_b": (lambda a, b: ptl.mm(a, b.t()), [(3, 4), (2, 4)]),
    "bmm": (ptl.bmm, [(2, 3, 4), (2, 4, 2)]),
    "addmm": (lambda s, a, b: ptl.addmm(s, a, b, beta=0.5, alpha=2), [(3, 2), (3, 4), (4, 2)]),
    "addmm_complex_scalars": (lambda s, a, b: ptl.addmm(s, a, b, beta=1j, alpha=1 - 2j),
                              [(2,), (3, 4), (4, 2)]),
    "baddbmm": (lambda s, a, b: ptl.baddbmm(s, a, b, beta=0.5, alpha=2),
                [(3, 2), (2, 3, 4), (2, 4, 2)]),
    "addbmm": (lambda s, a, b: ptl.addbmm(s, a, b, beta=0.5, alpha=2j),
               [(3, 2), (2, 3, 4), (2, 4, 2)]),
    "addmv": (lambda s, a, b: ptl.addmv(s, a, b, beta=0.5, alpha=2), [(3,), (3, 4), (4,)]),
    "mv": (ptl.mv, [(3, 4), (4,)]),
    "dot": (ptl.dot, [(4,), (4,)]),
    "vdot": (ptl.vdot, [(4,), (4,)]),
    "outer": (ptl.outer, [(4,), (3,)]),
    "matmul_1_1": (ptl.matmul, [(4,), (4,)]),
    "matmul_2_1": (ptl.matmul, [(3, 4), (4,)]),
    "matmul_1_2": (ptl.matmul, [(4,), (4, 3)]),
    "matmul_3_1": (ptl.matmul, [(2, 3, 4), (4,)]),
    "matmul_1_3": (ptl.matmul, [(4,), (2, 4, 3)]),
    "matmul_broadcast": (ptl.matmul, [(2, 1, 3, 4), (3, 4, 2)]),
    "einsum": (lambda a, b: ptl.einsum("bij,bjk->bik", a, b), [(2, 3, 4), (2, 4, 2)]),
    "inner": (ptl.inner, [(2, 4), (3, 4)]),
    "tensordot": (lambda a, b: ptl.tensordot(a, b, 2), [(2, 3, 4), (3, 4, 2)]),
    "linear": (F.linear, [(3, 4), (2, 4), (2,)]),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradcheck(name):
    fn, shapes = GRAD_CASES[name]
    assert gradcheck(fn, tuple(r128(*s, seed=i) for i, s in enumerate(shapes)))


def test_gradient_convention():
    """PyTorch's convention, in NumPy: with the output's gradient w, a @ b gives
    a.grad = w @ b^H and b.grad = a^H @ w; vdot(x, y) = sum conj(x) y gives x.grad =
    conj(g) y and y.grad = g x."""
    a, b, w = crandn((3, 4), seed=1), crandn((4, 2), seed=2), crandn((3, 2), seed=3)
    ta, tb = ptl.from_numpy(a).requires_grad_(), ptl.from_numpy(b).requires_grad_()
    (ta @ tb).backward(ptl.from_numpy(w))
    np.testing.assert_allclose(ta.grad.numpy(), w @ b.conj().T, rtol=1e-13)
    np.testing.assert_allclose(tb.grad.numpy(), a.conj().T @ w, rtol=1e-13)
    x, y, g = crandn(4, seed=4), crandn(4, seed=5), 0.5 - 1.5j
    tx, ty = ptl.from_numpy(x).requires_grad_(), ptl.from_numpy(y).requires_grad_()
    ptl.vdot(tx, ty).backward(ptl.tensor(g, dtype=C128))
    np.testing.assert_allclose(tx.grad.numpy(), np.conj(g) * y, rtol=1e-13)
    np.testing.assert_allclose(ty.grad.numpy(), g * x, rtol=1e-13)


def T(lib, shape, dtype):
    return lib.ones(shape, dtype=getattr(lib, dtype))


# PyTorch 2.13's messages for mixed dtypes
MIXED = [
    (lambda t: t.mm(T(t, (2, 3), "complex64"), T(t, (3, 2), "float32")),
     "expected m1 and m2 to have the same dtype, but got: c10::complex<float> != float"),
    (lambda t: t.mm(T(t, (2, 3), "float32"), T(t, (3, 2), "complex64")),
     "expected m1 and m2 to have the same dtype, but got: float != c10::complex<float>"),
    (lambda t: t.mm(T(t, (2, 3), "complex64"), T(t, (3, 2), "complex128")),
     "expected m1 and m2 to have the same dtype, but got: c10::complex<float> != "
     "c10::complex<double>"),
    (lambda t: t.mm(T(t, (2, 3), "complex64"), T(t, (3, 2), "complex64"),
                    out=T(t, (2, 2), "complex128")),
     "Expected out tensor to have dtype c10::complex<float>, but got c10::complex<double> "
     "instead"),
    (lambda t: t.bmm(T(t, (2, 2, 3), "complex64"), T(t, (2, 3, 2), "float32")),
     "expected scalar type ComplexFloat but found Float"),
    (lambda t: t.addmm(T(t, (2, 2), "complex64"), T(t, (2, 3), "complex64"),
                       T(t, (3, 2), "float32")),
     "self and mat2 must have the same dtype, but got ComplexFloat and Float"),
    (lambda t: t.addmm(T(t, (2, 2), "complex64"), T(t, (2, 3), "float32"),
                       T(t, (3, 2), "complex64")),
     "mat1 and mat2 must have the same dtype, but got Float and ComplexFloat"),
    (lambda t: t.addmm(T(t, (2, 2), "float32"), T(t, (2, 3), "float32"),
                       T(t, (3, 2), "float64")),
     "self and mat2 must have the same dtype, but got Float and Double"),
    (lambda t: t.baddbmm(T(t, (2, 2, 2), "float32"), T(t, (2, 2, 3), "complex64"),
                         T(t, (2, 3, 2), "complex64")),
     "Input dtypes must be the same, got: input float, batch1: c10::complex<float>, batch2: "
     "c10::complex<float>"),
    (lambda t: t.baddbmm(T(t, (2, 2, 2), "complex64"), T(t, (2, 2, 3), "complex64"),
                         T(t, (2, 3, 2), "complex128")),
     "expected scalar type ComplexFloat but found ComplexDouble"),
    (lambda t: t.addbmm(T(t, (2, 2), "complex64"), T(t, (2, 2, 3), "complex64"),
                        T(t, (2, 3, 2), "float32")),
     "self and mat2 must have the same dtype, but got ComplexFloat and Float"),
    (lambda t: t.addbmm(T(t, (2, 2), "complex64"), T(t, (2, 2, 3), "float32"),
                        T(t, (2, 3, 2), "complex64")),
     "mat1 and mat2 must have the same dtype, but got Float and ComplexFloat"),
    (lambda t: t.addbmm(T(t, (2, 2), "float64"), T(t, (2, 2, 3), "float32"),
                        T(t, (2, 3, 2), "float32")),
     "self and mat2 must have the same dtype, but got Double and Float"),
    (lambda t: t.addmv(T(t, (2,), "float32"), T(t, (2, 3), "complex64"),
                       T(t, (3,), "complex64")),
     "addmv input tensors must have the same dtype, but got Float, ComplexFloat, and "
     "ComplexFloat"),
    (lambda t: t.mv(T(t, (2, 3), "complex64"), T(t, (3,), "float32")),
     "addmv input tensors must have the same dtype, but got Float, ComplexFloat, and Float"),
    (lambda t: t.mv(T(t, (2, 3), "float64"), T(t, (3,), "float32")),
     "addmv input tensors must have the same dtype, but got Float, Double, and Float"),
    (lambda t: t.matmul(T(t, (2, 2, 3), "complex64"), T(t, (3,), "float32")),
     "addmv input tensors must have the same dtype, but got Float, ComplexFloat, and Float"),
    (lambda t: t.dot(T(t, (3,), "complex64"), T(t, (3,), "float32")),
     "dot : expected both vectors to have same dtype, but found ComplexFloat and Float"),
    (lambda t: t.vdot(T(t, (3,), "complex64"), T(t, (3,), "complex128")),
     "dot : expected both vectors to have same dtype, but found ComplexFloat and ComplexDouble"),
    (lambda t: t.matmul(T(t, (2, 2, 3), "complex64"), T(t, (2, 3, 2), "float32")),
     "expected scalar type ComplexFloat but found Float"),
    (lambda t: t.einsum("ij,jk->ik", T(t, (2, 3), "complex64"), T(t, (3, 2), "float32")),
     "expected scalar type ComplexFloat but found Float"),
    (lambda t: t.nn.functional.linear(T(t, (2, 3), "complex64"), T(t, (4, 3), "float32")),
     "expected m1 and m2 to have the same dtype, but got: c10::complex<float> != float"),
    (lambda t: t.nn.functional.linear(T(t, (2, 3), "complex64"), T(t, (4, 3), "complex64"),
                                      T(t, (4,), "float32")),
     "self and mat2 must have the same dtype, but got Float and ComplexFloat"),
]


@pytest.mark.parametrize("case", range(len(MIXED)))
def test_mixed_dtypes_raise_like_torch(case):
    fn, msg = MIXED[case]
    assert_raises_like_torch(fn, RuntimeError, msg)
