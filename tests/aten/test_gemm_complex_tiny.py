"""The complex products of at most 32768 (32^3) multiply-adds a matrix (gemm_complex.c's
tiny kernels, Note [Complex GEMM]): per-matrix loops without packing, in column chunks of
8 / 4 / 2 / 1 complex numbers (complex64) or 4 / 2 / 1 (complex128), rows in pairs.  Against
NumPy in complex128: every chunk split of n, odd and even m, k 0 to 3, the size threshold
from both sides, batches on 1 and 2 threads, B with strided or transposed rows (copied to a
buffer), strided and transposed C (the update path), complex alpha and beta.  The whole file
runs again with the capability capped at avx2 and at default: on an AVX-512 host the native
run takes the 64-byte chunks' one-vector AVX-512 kernel, the capped runs their two halves."""
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import capability_reruns, num_threads
from test_gemm_complex import NP, bmm_on_one_and_two_threads, check, crandn, mm_ref

C64, C128 = ptl.complex64, ptl.complex128

test_lower_capabilities = capability_reruns(__file__)


# (m, k, n): n across every chunk split (1 .. 18: 8 + 8 + 2, 4 + 2 + 1, ...), odd and even
# m (the row pairs and a last single row), k 0 .. 3, and the 32768 multiply-adds threshold
# from both sides (32^3 tiny, 32 x 33 x 32 blocked; long k and long m at 8 x 8 columns)
SHAPES = ([(m, k, n) for m in (2, 3) for k in (0, 1, 2, 3) for n in range(2, 19)] +
          [(m, 5, 7) for m in (2, 3, 4, 5, 16, 17)] +
          [(32, 32, 32), (32, 33, 32), (33, 32, 32), (8, 512, 8), (8, 513, 8), (512, 8, 8),
           (513, 8, 8), (8, 8, 512), (8, 8, 513), (2, 2, 2), (4, 4, 4), (16, 16, 16)])


@pytest.mark.parametrize("dtype", [C64, C128])
@pytest.mark.parametrize("threads", [1, 2])
def test_tiny_shapes(dtype, threads):
    with num_threads(threads):
        for i, (m, k, n) in enumerate(SHAPES):
            a, b = crandn((m, k), dtype, i), crandn((k, n), dtype, 500 + i)
            check(ptl.mm(ptl.from_numpy(a), ptl.from_numpy(b)), *mm_ref(a, b), dtype)


# batches: empty, one, odd, and large enough (batch * m * n * (k + 1) >= 2^16) to split
# over the threads
BATCHES = [(0, 4, 4, 4), (1, 3, 5, 7), (3, 2, 2, 2), (17, 8, 8, 8), (4096, 2, 2, 2),
           (300, 5, 7, 9), (129, 16, 16, 16), (64, 32, 32, 32)]


@pytest.mark.parametrize("dtype", [C64, C128])
def test_tiny_batches_one_and_two_threads(dtype, restore_threads):
    bmm_on_one_and_two_threads(BATCHES, dtype)


@pytest.mark.parametrize("dtype", [C64, C128])
def test_tiny_views(dtype):
    """B with contiguous columns (mT, mH: copied to the buffer), strided rows and columns,
    a transposed A, a broadcast (stride 0) batch of B, and the conjugated operands."""
    for i, (bs, m, k, n) in enumerate([(5, 3, 4, 5), (7, 8, 8, 8), (3, 9, 7, 13), (2, 1, 1, 2)]):
        a, b = crandn((bs, m, k), dtype, i), crandn((bs, k, n), dtype, 10 + i)
        ref, scale = mm_ref(a, b)
        ta, tb = ptl.from_numpy(a), ptl.from_numpy(b)
        bt = ptl.from_numpy(np.ascontiguousarray(np.swapaxes(b, -1, -2))).mT
        at = ptl.from_numpy(np.ascontiguousarray(np.swapaxes(a, -1, -2))).mT
        bh = ptl.from_numpy(np.ascontiguousarray(np.swapaxes(b.conj(), -1, -2))).mH
        wide = ptl.from_numpy(np.repeat(np.repeat(b, 2, axis=-1), 2, axis=-2))[..., ::2, ::2]
        for x, y in [(ta, bt), (at, tb), (at, bt), (ta, bh), (ta, wide)]:
            check(ptl.bmm(x, y), ref, scale, dtype)
        check(ptl.bmm(ta.conj(), tb), *mm_ref(a.conj(), b), dtype)
        e = ptl.from_numpy(b[:1]).expand(bs, k, n)
        check(ptl.bmm(ta, e), *mm_ref(a, np.broadcast_to(b[:1], (bs, k, n))), dtype)


@pytest.mark.parametrize("dtype", [C64, C128])
@pytest.mark.parametrize("threads", [1, 2])
def test_tiny_update_paths(dtype, threads):
    """alpha and beta (real, complex, beta 0 with NaN in self), a broadcast bias, and results
    written through strides (a transposed out): the chunks' update instead of their plain
    stores."""
    with num_threads(threads):
        for i, (bs, m, k, n) in enumerate([(3, 5, 4, 3), (2, 8, 8, 8), (4, 3, 2, 11)]):
            a, b, c = (crandn((bs, m, k), dtype, i), crandn((bs, k, n), dtype, 20 + i),
                       crandn((bs, m, n), dtype, 40 + i))
            ref, scale = mm_ref(a, b)
            ta, tb, tc = ptl.from_numpy(a), ptl.from_numpy(b), ptl.from_numpy(c)
            for al, be in [(1, 1), (0.5, -2), (0.5 - 2j, 1j), (2j, 0)]:
                check(ptl.baddbmm(tc, ta, tb, beta=be, alpha=al), be * c + al * ref,
                      4 * scale + 4, dtype)
            nan = ptl.from_numpy(np.full((bs, m, n), complex(float("nan"), 1), NP[dtype]))
            check(ptl.baddbmm(nan, ta, tb, beta=0, alpha=1j), 1j * ref, scale, dtype)
            check(ptl.baddbmm(tc[0, 0], ta, tb), c[0, 0] + ref, 2 * scale + 2, dtype)
            out = ptl.from_numpy(np.ascontiguousarray(np.swapaxes(c, -1, -2))).mT
            out.baddbmm_(ta, tb, beta=0)
            check(out, ref, scale, dtype)
            out = tc.clone()
            out.baddbmm_(ta, tb, alpha=-1j)
            check(out, c - 1j * ref, 2 * scale + 2, dtype)
