"""The packing of A and B in the complex GEMM (gemm_complex.c, Note [Complex GEMM]): the
AVX-512 engines pack a full sliver of 8 rows of A with shuffles when A's rows are contiguous
(8 k steps of complex64, 4 of complex128 at a time, the rest one by one) or adjacent (an mT
view), and element by element otherwise; a row-major B's full slivers by shuffles too.  The
AVX2 engines do the same on slivers of 6 rows (4 k steps of complex64, 2 of complex128) and
on B's slivers of 8 / 4 columns (this file reruns at the capped capabilities).  Every
layout packs the same numbers, so the products agree bit for bit across layouts and thread
counts, and with NumPy to rounding, at and across the group sizes, the slivers and the
blocks (KC, MC, NC)."""
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import num_threads, rerun_with_capability

C64, C128 = ptl.complex64, ptl.complex128
NP = {C64: np.complex64, C128: np.complex128}
TINY_MACS = 32768   # gemm_complex.c's ZGEMM_TINY_MACS: larger products are packed


def crandn(shape, dtype, seed):
    g = np.random.default_rng(seed)
    return (g.standard_normal(shape) + 1j * g.standard_normal(shape)).astype(NP[dtype])


def layouts(a):
    """a (m x k) as pytorchlite operands: rows contiguous, rows adjacent (an mT view), and
    neither (every other column of a wider matrix)."""
    yield ptl.from_numpy(a.copy())
    yield ptl.from_numpy(np.ascontiguousarray(a.T)).mT
    yield ptl.from_numpy(np.repeat(a, 2, axis=-1))[:, ::2]


def check_layouts(m, k, n, dtype, seed):
    a, b = crandn((m, k), dtype, seed), crandn((k, n), dtype, seed + 1)
    assert m * n * k > TINY_MACS and m > 1 and n > 1   # the packed path
    ref = a.astype(np.complex128) @ b.astype(np.complex128)
    scale = max((np.abs(a).astype(np.float64) @ np.abs(b)).max(), 1.0)
    tol = (1e-5 if dtype == C64 else 1e-13) * scale
    tb = ptl.from_numpy(b)
    outs = [ptl.mm(ta, tb).numpy() for ta in layouts(a)]
    np.testing.assert_allclose(outs[0].astype(np.complex128), ref, rtol=0, atol=tol)
    for out in outs[1:]:
        np.testing.assert_array_equal(out, outs[0])
    return outs[0]


# k across the shuffle groups (AVX-512: 8 steps of complex64, 4 of complex128; AVX2: 4, 2)
# and KC (512 / 256); m across the 8-row (AVX2: 6-row) slivers (a last partial one packs
# element by element) and MC (128, AVX2 120)
KS = [1, 2, 3, 4, 5, 7, 8, 9, 12, 15, 16, 17, 63, 64, 65, 255, 256, 257, 511, 512, 513]
MS = [2, 5, 6, 7, 8, 9, 12, 13, 15, 16, 17, 64, 119, 120, 121, 127, 128, 129, 136]


@pytest.mark.parametrize("dtype", [C64, C128])
@pytest.mark.parametrize("threads", [1, 2])
def test_a_layouts_same_bits(dtype, threads):
    with num_threads(threads):
        for i, k in enumerate(KS):
            n = max(24, TINY_MACS // (16 * k) + 1)
            check_layouts(16, k, n, dtype, i)
        for i, m in enumerate(MS):
            n = max(20, TINY_MACS // (m * 33) + 1)
            check_layouts(m, 33, n, dtype, 100 + i)


def b_layouts(b):
    """b (k x n) as pytorchlite operands: rows contiguous (packed a row at a time, the full
    slivers by shuffles), columns contiguous (an mT view) and neither."""
    yield ptl.from_numpy(b.copy())
    yield ptl.from_numpy(np.ascontiguousarray(b.T)).mT
    yield ptl.from_numpy(np.repeat(b, 2, axis=-1))[:, ::2]


# n across the slivers of B (16 complex64 / 8 complex128 columns, AVX-512's half tiles for a
# last one of at most 8 / 4; AVX2: 8 / 4) and NC (1024 / 512)
NS = [2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 40, 511, 512, 513, 1023, 1024, 1025,
      1040]


@pytest.mark.parametrize("dtype", [C64, C128])
@pytest.mark.parametrize("threads", [1, 2])
def test_b_layouts_same_bits(dtype, threads):
    with num_threads(threads):
        for i, n in enumerate(NS):
            k = max(3, TINY_MACS // (9 * n) + 1)
            a, b = crandn((9, k), dtype, i), crandn((k, n), dtype, 50 + i)
            ref = a.astype(np.complex128) @ b.astype(np.complex128)
            scale = max((np.abs(a).astype(np.float64) @ np.abs(b)).max(), 1.0)
            ta = ptl.from_numpy(a)
            outs = [ptl.mm(ta, tb).numpy() for tb in b_layouts(b)]
            np.testing.assert_allclose(outs[0].astype(np.complex128), ref, rtol=0,
                                       atol=(1e-5 if dtype == C64 else 1e-13) * scale)
            for out in outs[1:]:
                np.testing.assert_array_equal(out, outs[0])


@pytest.mark.parametrize("dtype", [C64, C128])
def test_threads_same_bits(dtype, restore_threads):
    """One product split over MC blocks and column groups on two threads, each task packing
    its own A blocks: the bits of one thread."""
    outs = []
    for threads in (1, 2):
        ptl.set_num_threads(threads)
        outs.append(check_layouts(260, 67, 90, dtype, 7))
    np.testing.assert_array_equal(outs[0], outs[1])


@pytest.mark.parametrize("dtype", [C64, C128])
def test_bmm_layouts(dtype):
    """A batch of 64 x 64 products (the packed path per matrix), A as a batch of mT views."""
    a, b = crandn((5, 64, 64), dtype, 1), crandn((5, 64, 64), dtype, 2)
    ref = a.astype(np.complex128) @ b.astype(np.complex128)
    tb = ptl.from_numpy(b)
    out = ptl.bmm(ptl.from_numpy(a), tb).numpy()
    tol = (1e-5 if dtype == C64 else 1e-13) * 64 * 8
    np.testing.assert_allclose(out.astype(np.complex128), ref, rtol=0, atol=tol)
    ta = ptl.from_numpy(np.ascontiguousarray(np.swapaxes(a, -1, -2))).mT
    np.testing.assert_array_equal(ptl.bmm(ta, tb).numpy(), out)


@pytest.mark.parametrize("dtype", [C64, C128])
@pytest.mark.parametrize("n", [40, 200])
def test_cholesky_conjugated_a(dtype, n):
    """The blocked complex Cholesky's trailing updates run the GEMM with conj(A) on A's
    contiguous rows (the packing negates the imaginary parts)."""
    x = crandn((n, n), C128, n)
    h = x @ x.conj().T + n * np.eye(n)
    out = ptl.linalg.cholesky(ptl.from_numpy(h.astype(NP[dtype]))).numpy()
    ref = np.linalg.cholesky(h)
    tol = 1e-4 if dtype == C64 else 1e-11
    np.testing.assert_allclose(out.astype(np.complex128), ref, rtol=0,
                               atol=tol * np.abs(ref).max())


@pytest.mark.parametrize("dtype", [C64, C128])
@pytest.mark.parametrize("m, k", [(6, 61), (13, 67), (64, 64)])
def test_conjugated_a_layouts(dtype, m, k):
    """conj(A) @ B (a conjugate view: the packing negates A's imaginary parts) with A's rows
    contiguous, adjacent and neither: the same bits, and NumPy's product to rounding."""
    a, b = crandn((m, k), dtype, m), crandn((k, 40), dtype, k)
    ref = a.conj().astype(np.complex128) @ b.astype(np.complex128)
    tb = ptl.from_numpy(b)
    outs = [ptl.mm(ta.conj(), tb).numpy() for ta in layouts(a)]
    scale = (np.abs(a).astype(np.float64) @ np.abs(b)).max()
    np.testing.assert_allclose(outs[0].astype(np.complex128), ref, rtol=0,
                               atol=(1e-5 if dtype == C64 else 1e-13) * scale)
    for out in outs[1:]:
        np.testing.assert_array_equal(out, outs[0])


def test_other_engines():
    """The AVX2 and the portable engines (no shuffle packing) on the same layouts."""
    rerun_with_capability(__file__, "avx2", "-k", "layouts or cholesky")
    rerun_with_capability(__file__, "default", "-k", "layouts or cholesky")
