"""The GEMM engine's paths for small and edge products (gemm.c, Notes [GEMM last columns],
[GEMM direct A] and [GEMM packing of B]): the last 1 or 2 columns past a multiple of 32, and
the columns of a product of two, computed as dot products (a transposed A's rows packed up to
16 at a time), a row-major A's last 4 or 8 rows read in place by the edge tiles, a row-major B
read in place by products of any height when K <= 32 and a K block spans at most 32 KiB, and
the step's buffers on the stack.  Against NumPy in float64 at, below and above each
threshold, with transposed and strided operands, alpha/beta (addmm), on 1 and 2 threads; every
path gives the bits of the generic one.  The file reruns itself under
PTL_CPU_CAPABILITY=avx2 and =default."""

import numpy as np
import pytest

import pytorchlite as ptl
from gemm_operands import bits, close, operand, rand
from helpers import capability_reruns

test_lower_capabilities = capability_reruns(__file__)


# (m, k, n) at and across Note [GEMM last columns]'s rule: n = 32 (no tail), 33 and 34 (one
# and two dot-product columns), 35 (the tiles), 65, 66 and 67; n = 33 with m = 2 (two rows)
# and a K block or three (k = 700); a GPT head (1024 x 128 @ 128 x 65); k = 1, and k = 8192
# with a small C (the K split, no tail); two columns in all (all tail) with 2, 20 and 8192
# rows, 3 columns (the tiles) and the K split
TAIL = [(20, 40, 32), (20, 40, 33), (20, 40, 34), (20, 40, 35), (37, 700, 65), (13, 29, 66),
        (13, 29, 67), (2, 40, 33), (1024, 128, 65), (30, 1, 33), (3, 8192, 33), (2, 40, 2),
        (20, 40, 2), (8192, 64, 2), (20, 40, 3), (3, 8192, 2)]


@pytest.mark.parametrize("mkn", TAIL)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_last_columns(mkn, dtype, restore_threads):
    """Against NumPy for every layout of A and B, the same bits for all of them and on one
    and two threads; each last column of a float32 tail the bits of A @ that column (a
    matrix-vector product);
    as addmm with a row and a whole-matrix bias (alpha, beta) and into C (beta = 1)."""
    m, k, n = mkn
    a, b = rand((m, k), 10, dtype), rand((k, n), 11, dtype)
    row, whole = rand((n,), 12, dtype), rand((m, n), 13, dtype)
    exp = a.astype(np.float64) @ b.astype(np.float64)
    ref = None
    for nt in (1, 2):
        ptl.set_num_threads(nt)
        for la in ("contiguous", "transposed", "strided"):
            for lb in ("contiguous", "transposed", "strided"):
                r = ptl.mm(operand(a, la), operand(b, lb))
                close(r, exp, k, dtype)
                ref = bits(r) if ref is None else ref
                assert np.array_equal(bits(r), ref), (nt, la, lb)
        # (the float32 engines with tiles only: AVX2 and AVX-512)
        tiles = dtype == np.float32 and ptl.backends.cpu.get_cpu_capability() != "DEFAULT"
        tail = n % 32 if tiles and n != 1 and n % 32 <= 2 and m > 1 and k < 8192 else 0
        for j in range(n - tail, n):
            col = bits(ptl.mm(ptl.tensor(a), ptl.tensor(np.ascontiguousarray(b[:, j:j + 1]))))
            assert np.array_equal(col[:, 0], ref[:, j]), j
        for bias in (row, whole):
            r = ptl.addmm(ptl.tensor(bias), operand(a, "transposed"), ptl.tensor(b), beta=0.5,
                          alpha=-2)
            close(r, 0.5 * bias.astype(np.float64) - 2 * exp, k, dtype)
        c = ptl.tensor(whole.copy())
        c.addmm_(ptl.tensor(a), ptl.tensor(b))
        close(c, whole.astype(np.float64) + exp, k, dtype)


@pytest.mark.parametrize("bmkn", [(3, 20, 40, 33), (4, 64, 64, 65), (2, 1, 40, 34)])
def test_last_columns_batched(bmkn, restore_threads):
    """bmm with a tail: each matrix the bits of its own mm, on one and two threads."""
    bt, m, k, n = bmkn
    a, b = rand((bt, m, k), 14), rand((bt, k, n), 15)
    for nt in (1, 2):
        ptl.set_num_threads(nt)
        r = bits(ptl.bmm(ptl.tensor(a), ptl.tensor(b)))
        np.testing.assert_allclose(r, a.astype(np.float64) @ b.astype(np.float64),
                                   rtol=1e-5, atol=1.6e-6 * k)
        for i in range(bt):
            assert np.array_equal(r[i], bits(ptl.mm(ptl.tensor(a[i]), ptl.tensor(b[i]))))


# (m, k, n): a tail's rows packed 16 at a time (gemv_rows, GEMV_PACK_ROWS), at most 256 KiB
# of them: m below, at and past one and two blocks of 16; k = 4096 (16 rows of 16 KiB) and
# 4097 (15 rows a block); k below 8; rows split among two threads (rows x k >= 2^18) in
# chunks of 33 rows (k = 1000) and of 9 (k = 4096); two columns in all
TAIL_ROWS = [(15, 40, 33), (16, 40, 33), (17, 40, 33), (32, 40, 65), (33, 40, 65),
             (35, 4096, 33), (35, 4097, 34), (17, 3, 33), (40, 7, 34), (300, 1000, 33),
             (100, 4096, 33), (17, 40, 2), (300, 1000, 2)]


@pytest.mark.parametrize("mkn", TAIL_ROWS)
def test_last_columns_transposed_a(mkn, restore_threads):
    """A transposed A's tail rows are packed several at a time, reading A along its lines:
    against NumPy, the bits of a contiguous and a strided A and of A @ each last column (dot
    products of A's rows), on one and two threads."""
    m, k, n = mkn
    a, b = rand((m, k), 18), rand((k, n), 19)
    exp = a.astype(np.float64) @ b.astype(np.float64)
    for nt in (1, 2):
        ptl.set_num_threads(nt)
        r = bits(ptl.mm(operand(a, "transposed"), ptl.tensor(b)))
        close(ptl.tensor(r), exp, k, np.float32)
        for la in ("contiguous", "strided"):
            assert np.array_equal(bits(ptl.mm(operand(a, la), ptl.tensor(b))), r), (nt, la)
        tiles = ptl.backends.cpu.get_cpu_capability() != "DEFAULT"   # (no tail without)
        for j in range(n - n % 32 if tiles else n, n):
            col = np.ascontiguousarray(b[:, j:j + 1])
            assert np.array_equal(bits(ptl.mm(ptl.tensor(a), ptl.tensor(col)))[:, 0], r[:, j]), j


# k at GEMV_PACK_BYTES's limits for float16 rows (packed to float32): 16 rows a block up to
# k = 4096, 15 at 4097, one at 65536 and past it
@pytest.mark.parametrize("k", [4096, 4097, 65536, 65537])
def test_half_matrix_vector_rows(k):
    """float16 A @ x packs A's rows to float32 several at a time: the bits of every layout
    of A, against NumPy."""
    m = 33
    a = (rand((m, k), 23) / 4).astype(np.float16)
    x = (rand((k,), 24) / 4).astype(np.float16)
    exp = a.astype(np.float64) @ x.astype(np.float64)
    r = bits(ptl.mv(operand(a, "transposed"), ptl.tensor(x)).float())
    np.testing.assert_allclose(r, exp, rtol=2e-2, atol=2e-3 * np.sqrt(k))
    for la in ("contiguous", "strided"):
        assert np.array_equal(bits(ptl.mv(operand(a, la), ptl.tensor(x)).float()), r), la


def test_last_columns_half():
    """float16 and bfloat16 products compute in float32: their tail too."""
    a, b = rand((40, 30), 16), rand((30, 33), 17)
    for dt in (ptl.float16, ptl.bfloat16):
        aa, bb = ptl.tensor(a).to(dt), ptl.tensor(b).to(dt)
        exp = aa.float().numpy().astype(np.float64) @ bb.float().numpy().astype(np.float64)
        r = ptl.mm(aa, bb).float().numpy()
        np.testing.assert_allclose(r, exp, rtol=1e-2, atol=1e-1)


# (m, k, n): row-major A's last sliver of r rows read in place, m = 12 q + r on AVX-512 (r = 1
# to 4: the 4-row edge tile; 5 to 8: the 8-row one; 9 to 11: packed) and 6 q + r on AVX2
# (r <= 4: its 4-row edge tile; 5 packed); a 64 x 64 x 64 batch element (5 x 12 + 4); n
# of one sliver and of two; several K blocks (k = 700)
EDGE_ROWS = [(13, 40, 64), (14, 40, 64), (16, 40, 32), (17, 40, 64), (20, 40, 64),
             (21, 40, 64), (23, 40, 64), (64, 64, 64), (128, 10, 256), (29, 700, 64),
             (11, 40, 64), (12, 40, 64), (1024, 128, 64)]


@pytest.mark.parametrize("mkn", EDGE_ROWS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_direct_a_edge_rows(mkn, dtype, restore_threads):
    """A row-major A whose last rows end its storage: the bits of a packed A (transposed and
    strided) on one and two threads, against NumPy; addmm with alpha and beta; C transposed
    (the tile's rows through the accumulator)."""
    m, k, n = mkn
    a, b = rand((m, k), 20, dtype), rand((k, n), 21, dtype)
    s = rand((m, n), 22, dtype)
    exp = a.astype(np.float64) @ b.astype(np.float64)
    for nt in (1, 2):
        ptl.set_num_threads(nt)
        ref = bits(ptl.mm(operand(a, "transposed"), ptl.tensor(b)))
        close(ptl.tensor(ref), exp, k, dtype)
        for la in ("contiguous", "strided"):
            for lb in ("contiguous", "transposed"):
                assert np.array_equal(bits(ptl.mm(operand(a, la), operand(b, lb))), ref)
        r = ptl.addmm(ptl.tensor(s), ptl.tensor(a), ptl.tensor(b), beta=0.25, alpha=3)
        close(r, 0.25 * s.astype(np.float64) + 3 * exp, k, dtype)
        out = ptl.empty((n, m), dtype=ptl.float32 if dtype == np.float32 else ptl.float64).t()
        ptl.mm(ptl.tensor(a), ptl.tensor(b), out=out)
        assert np.array_equal(bits(out), ref)


# (m, k, n): a row-major B read in place by a product of more than 64 rows when k <= 32 and
# k * n * 4 <= 32 KiB: k = 10, 32 (in place) and 33 (packed) with n = 256; n = 512 with
# k = 16 (32 KiB: in place) and 17 (packed); n = 1024 (rows 4 KiB apart, one L1 set) with
# k = 8; several A blocks (m = 400); m = 65 (just past the old limit)
SMALL_K = [(128, 10, 256), (128, 32, 256), (128, 33, 256), (100, 16, 512), (100, 17, 512),
           (70, 8, 1024), (400, 12, 96), (65, 20, 48)]


@pytest.mark.parametrize("mkn", SMALL_K)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_small_k_b_in_place(mkn, dtype, restore_threads):
    """The bits of a packed B (transposed, strided) for A contiguous and transposed, on one
    and two threads, against NumPy; addmm with a row bias."""
    m, k, n = mkn
    a, b = rand((m, k), 30, dtype), rand((k, n), 31, dtype)
    row = rand((n,), 32, dtype)
    exp = a.astype(np.float64) @ b.astype(np.float64)
    for nt in (1, 2):
        ptl.set_num_threads(nt)
        for la in ("contiguous", "transposed"):
            ref = bits(ptl.mm(operand(a, la), operand(b, "transposed")))
            close(ptl.tensor(ref), exp, k, dtype)
            for lb in ("contiguous", "strided"):
                assert np.array_equal(bits(ptl.mm(operand(a, la), operand(b, lb))), ref), lb
        r = ptl.addmm(ptl.tensor(row), ptl.tensor(a), ptl.tensor(b), beta=-1, alpha=0.5)
        close(r, 0.5 * exp - row.astype(np.float64), k, dtype)


@pytest.mark.parametrize("mkn", [(48, 100, 64), (64, 64, 64), (40, 96, 64), (200, 300, 70)])
def test_step_buffers_stack_and_heap(mkn, restore_threads):
    """A step's packed A block and B sliver on the stack (up to 24 KiB: 64 x 64, 40 x 96)
    or allocated (48 x 100, 200 x 300): the same bits either way as with A and B packed."""
    m, k, n = mkn
    a, b = rand((m, k), 40), rand((k, n), 41)
    exp = a.astype(np.float64) @ b.astype(np.float64)
    for nt in (1, 2):
        ptl.set_num_threads(nt)
        ref = bits(ptl.mm(operand(a, "transposed"), operand(b, "transposed")))
        close(ptl.tensor(ref), exp, k, np.float32)
        assert np.array_equal(bits(ptl.mm(ptl.tensor(a), ptl.tensor(b))), ref)


# A @ x and x @ B^T as rows of dot products (gemv_rows): GEMV_DOT_ROWS = 64 rows a call and
# one C update for them, the AVX2/AVX-512 float32 dot two rows a pass (an odd last row paired
# with itself), each row's sums in blocks of 32, then 8, then one by one: rows on both sides
# of 64 and 128 and odd, k on both sides of 8 and 32 and of their multiples
GEMV_ROWS_SHAPES = [(m, k) for m in (1, 2, 3, 63, 64, 65, 129) for k in (1, 7, 8, 9, 31, 32, 33,
                                                                        40, 64, 65, 100)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["contiguous", "strided"])
def test_matrix_vector_rows(dtype, layout):
    """Every row of A @ x (A's rows read in place, or packed when they have no unit stride)
    against NumPy, with alpha and beta (addmv), and with the bits of the same row alone: the
    result does not depend on the number of rows nor on which pair a row falls in."""
    for m, k in GEMV_ROWS_SHAPES:
        a, x, c = rand((m, k), 31, dtype), rand((k,), 32, dtype), rand((m,), 33, dtype)
        aa, xx = operand(a, layout), ptl.tensor(x)
        got = ptl.mv(aa, xx)
        close(got, a.astype(np.float64) @ x.astype(np.float64), k, dtype)
        r = bits(got)
        for i in {0, m // 2, m - 1}:
            assert np.array_equal(bits(ptl.mv(aa[i:i + 1], xx)), r[i:i + 1]), (m, k, i)
        row = bits(ptl.mm(xx[None], aa.t()))[0]   # x @ A^T: the same dot products
        assert np.array_equal(row, r), (m, k)
        out = ptl.addmv(ptl.tensor(c), aa, xx, beta=0.5, alpha=-2.0)
        close(out, 0.5 * c.astype(np.float64) - 2.0 * (a.astype(np.float64) @ x), k, dtype)
