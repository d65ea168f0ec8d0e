"""Operands the GEMM's tiles read in place with rows far apart, fetched ahead (gemm.c, Notes
[GEMM packing of B] and [GEMM direct A]; GEMM_AHEAD_K in gemm_kernels.c): on AVX-512 a
row-major float32 B at any height (not only up to 24 or 64 rows), and a transposed A (a weight
gradient's g^T) at any row stride, a power of two floats (4 KiB: every k step in one L1 set)
included; on AVX2 a transposed A whose k steps fill at most 8 of 64 in one L1 set.
Against NumPy in float64 and against the bits of the same product with the operand packed (a
transposed or column-strided view), at and across MR, NR, MC, KC and NC, narrow last slivers
and last columns, k under the fetch distance (16), B rows that are not a multiple of a line,
size 0, alpha and beta, a bias and C accumulated in place, on 1 and 2 threads.  The file reruns
itself under PTL_CPU_CAPABILITY=avx2 and =default (no tile: every operand packed)."""
import subprocess
import sys

import numpy as np
import pytest

import pytorchlite as ptl
from gemm_operands import bits, close, operand, rand
from helpers import capability_reruns

test_lower_capabilities = capability_reruns(__file__)


def row_strided(b, ldb, offset):
    """b (k x n) as columns [offset, offset + n) of a k x ldb row-major matrix."""
    k, n = b.shape
    base = np.zeros((k, ldb), b.dtype)
    base[:, offset:offset + n] = b
    return ptl.tensor(base)[:, offset:offset + n]


def transposed(a, lda):
    """a (m x k) as the transpose of the first m columns of a k x lda row-major matrix."""
    m, k = a.shape
    base = np.zeros((k, lda), a.dtype)
    base[:, :m] = a.T
    return ptl.tensor(base)[:, :m].t()


# (m, k, n, ldb, offset) for a row-major B: m past the old in-place limits (24 and 64 rows)
# and at and across MC (192: one block, 193: two) and two MC blocks plus a tile of 4 rows;
# k at and across KC (float64 256, one block up to 320: 321 is two; float32 512, up to 640:
# 641 is two), one under the fetch distance (16)
# and k = 1; n at NR (32), a narrow last sliver read in place by the tile exactly as wide
# (AVX-512: 40 = 32 + 8 and 48 = 32 + 16, n = 16 alone, 300 rows on two threads; AVX2: 36 =
# 32 + 4 and 40 = 32 + 8) and packed one column on either side (44, 47, 49), the last columns
# (65 = 64 + 1: a vector product) and at and across NC (1024, 1025); rows a power of two
# apart (1024 floats: 4 KiB, one L1 set; 2048) and rows that do not start on a line (ldb 1000,
# offset 3); several A blocks whose K block of B spans 512 KiB (256 rows 2 KiB apart: in place)
# and one row more (packed), and one A block over 2 MiB (in place)
B_CASES = [(65, 40, 64, 64, 0), (192, 33, 96, 96, 0), (193, 70, 96, 128, 0),
           (388, 20, 64, 1024, 0), (100, 256, 32, 2048, 0), (100, 320, 64, 1024, 0),
           (100, 321, 64, 1000, 3), (150, 15, 96, 1000, 3), (130, 1, 64, 64, 0),
           (70, 40, 48, 64, 0), (70, 40, 65, 1024, 0), (30, 24, 1024, 1024, 0),
           (200, 24, 1025, 2048, 7), (25, 600, 128, 1024, 0), (200, 256, 64, 512, 0),
           (200, 257, 64, 512, 0), (150, 300, 64, 2048, 0), (100, 640, 64, 1024, 0),
           (100, 641, 64, 1000, 3), (200, 1537, 64, 512, 0), (70, 40, 40, 1000, 3),
           (70, 40, 36, 64, 0), (70, 40, 44, 64, 0), (70, 40, 47, 64, 0), (70, 40, 49, 64, 0),
           (20, 300, 16, 16, 0), (300, 300, 48, 1024, 0)]


# Note [GEMM one A block] (AVX-512 float32): a row-major A read in place is one block when its
# K block spans at most 1 MiB (m * kc * 4 bytes), so that a B whose K block spans more than
# 512 KiB is read in place instead of packed.  m at MC (192: one block either way) and one
# over (193, 12 x 16 + 1: the 1-row edge tile), 200 (16 x 12 + 8: the 8-row edge) and 205 with
# two K blocks of 321 (k = 641) and rows off a line (ldb 1000, offset 3); B's span one float
# row over 512 KiB (ldb 513) and a power of two (4 KiB rows); A's span at 1 MiB (1024 x 256:
# one block, on two threads two of 512 rows) and one row over (1025: blocks, B packed);
# 512^3 (1 MiB each); a narrow last sliver (n 40: A packed, the rule off)
ONE_A_BLOCK_CASES = [(192, 256, 64, 513, 0), (193, 256, 64, 513, 0), (200, 512, 96, 1024, 0),
                     (205, 641, 64, 1000, 3), (1024, 256, 64, 520, 0), (1025, 256, 64, 520, 0),
                     (512, 512, 512, 512, 0), (300, 512, 40, 1024, 0)]


@pytest.mark.parametrize("case", B_CASES + ONE_A_BLOCK_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_b_in_place(case, dtype, restore_threads):
    m, k, n, ldb, offset = case
    a, b = rand((m, k), 90, dtype), rand((k, n), 91, dtype)
    row = rand((n,), 92, dtype)
    exp = a.astype(np.float64) @ b.astype(np.float64)
    bb = row_strided(b, ldb, offset)
    for nt in (1, 2):
        ptl.set_num_threads(nt)
        ref = bits(ptl.mm(ptl.tensor(a), operand(b, "transposed")))   # B packed
        close(ptl.tensor(ref), exp, k, dtype)
        for aa in (ptl.tensor(a), operand(a, "transposed")):
            assert np.array_equal(bits(ptl.mm(aa, bb)), ref), nt
            assert np.array_equal(bits(ptl.mm(aa, ptl.tensor(b))), ref), nt
        r = ptl.addmm(ptl.tensor(row), ptl.tensor(a), bb, beta=0.5, alpha=-2)
        packed = ptl.addmm(ptl.tensor(row), ptl.tensor(a), operand(b, "strided"), beta=0.5,
                           alpha=-2)
        close(r, 0.5 * row.astype(np.float64) - 2 * exp, k, dtype)
        assert np.array_equal(bits(r), bits(packed))
        c = ptl.tensor(np.broadcast_to(row, (m, n)).copy())
        c.addmm_(ptl.tensor(a), bb)
        close(c, row.astype(np.float64) + exp, k, dtype)
        c2 = ptl.tensor(np.broadcast_to(row, (m, n)).copy())
        c2.addmm_(ptl.tensor(a), operand(b, "transposed"))
        assert np.array_equal(bits(c), bits(c2))


# (m, k, n, lda) for a transposed A: row strides of 256, 512, 1024 and 2048 floats (1 KiB to
# 8 KiB: 4, 2, 1 and 1 L1 sets for 64 k steps; the AVX2 tiles pack these, and read 128 (8 sets)
# and 96 (32 sets) in place), with m at MR (12; AVX2 6), one row over (the last row packed),
# across MC (192; 400 is three blocks); k under the fetch distance, at and across KC; n at
# NR, 256 (8 slivers, the old limit), 512 (16, the limit; AVX2: 32, packed), a narrow last
# sliver (48: packed) and 241 (in place)
A_CASES = [(12, 64, 32, 256), (13, 64, 64, 512), (24, 5, 128, 1024), (25, 15, 96, 2048),
           (6, 40, 32, 128), (7, 300, 64, 128), (90, 256, 64, 96), (200, 321, 96, 1024),
           (400, 40, 32, 512), (60, 700, 256, 1024), (60, 100, 241, 2048), (60, 100, 48, 512),
           (130, 1, 64, 1024), (40, 64, 512, 1024)]


@pytest.mark.parametrize("case", A_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_transposed_a_any_stride(case, dtype, restore_threads):
    m, k, n, lda = case
    a, b = rand((m, k), 93, dtype), rand((k, n), 94, dtype)
    row = rand((n,), 95, dtype)
    exp = a.astype(np.float64) @ b.astype(np.float64)
    at = transposed(a, lda)
    for nt in (1, 2):
        ptl.set_num_threads(nt)
        ref = bits(ptl.mm(operand(a, "strided"), operand(b, "transposed")))   # both packed
        close(ptl.tensor(ref), exp, k, dtype)
        for lb in ("contiguous", "transposed"):
            assert np.array_equal(bits(ptl.mm(at, operand(b, lb))), ref), (lb, nt)
            assert np.array_equal(bits(ptl.mm(ptl.tensor(a), operand(b, lb))), ref), (lb, nt)
        r = ptl.addmm(ptl.tensor(row), at, ptl.tensor(b), beta=0.5, alpha=-2)
        packed = ptl.addmm(ptl.tensor(row), operand(a, "strided"), ptl.tensor(b), beta=0.5,
                           alpha=-2)
        close(r, 0.5 * row.astype(np.float64) - 2 * exp, k, dtype)
        assert np.array_equal(bits(r), bits(packed))
        c = ptl.tensor(np.broadcast_to(row, (m, n)).copy())
        c.addmm_(at, ptl.tensor(b))
        close(c, row.astype(np.float64) + exp, k, dtype)


@pytest.mark.parametrize("mkn", [(0, 40, 64), (70, 0, 64), (70, 40, 0)])
def test_size_zero(mkn):
    """Empty products with a strided row-major B and a transposed A: C is empty, or beta * C
    (zeros for beta = 0) when k is 0."""
    m, k, n = mkn
    a, b = rand((m, k), 96), rand((k, n), 97)
    r = ptl.mm(transposed(a, 1024), row_strided(b, 1024, 0))
    assert tuple(r.shape) == (m, n)
    assert np.array_equal(bits(r), np.zeros((m, n), np.float32))
    s = rand((m, n), 98)
    r2 = ptl.addmm(ptl.tensor(s), transposed(a, 1024), row_strided(b, 1024, 0), beta=0.5)
    assert np.array_equal(bits(r2), (0.5 * s).astype(np.float32))


def test_weight_gradient_gpt_shapes(restore_threads):
    """A GPT block's weight gradients g^T @ x (g [1024, out], x [1024, in]): both operands
    read in place on AVX-512, the same bits as with both packed, on 1 and 2 threads."""
    for out, inp in ((128, 128), (512, 128), (128, 512), (65, 128)):
        g, x = rand((1024, out), 99), rand((1024, inp), 100)
        exp = g.astype(np.float64).T @ x.astype(np.float64)
        for nt in (1, 2):
            ptl.set_num_threads(nt)
            r = ptl.mm(ptl.tensor(g).t(), ptl.tensor(x))
            close(r, exp, 1024, np.float32)
            packed = ptl.mm(operand(g.T, "strided"), operand(x, "transposed"))
            assert np.array_equal(bits(r), bits(packed)), (out, inp, nt)


GUARDED_B = """
import ctypes, mmap, sys
import numpy as np
import pytorchlite as ptl
dt = np.dtype(sys.argv[1])
page = mmap.PAGESIZE
libc = ctypes.CDLL(None)
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
for case in sys.argv[2:]:
    m, k, n = (int(v) for v in case.split(","))
    print(case, end=" ", flush=True)   # a crash's output ends with its case
    buf = mmap.mmap(-1, 2 * page)
    b = np.frombuffer(buf, dt, k * n, page - k * n * dt.itemsize).reshape(k, n)
    b[...] = np.random.default_rng(m * 1000 + k * 10 + n).standard_normal((k, n))
    a = np.random.default_rng(1).standard_normal((m, k)).astype(dt)
    if libc.mprotect(ctypes.addressof(ctypes.c_char.from_buffer(buf)) + page, page, 0) != 0:
        raise OSError("mprotect")
    out = ptl.mm(ptl.from_numpy(a), ptl.from_numpy(b)).numpy()
    ref = a.astype(np.float64) @ b.astype(np.float64)
    print(float(np.abs(out - ref).max() / max(1.0, float(np.abs(ref).max()))), flush=True)
"""

# (m, k, n): m across the 4-row pair tiles' split (7 and 8 rows) and whole tiles (6, 12, 14);
# narrow last slivers (n = 4, 8, 20: NR / 4, NR / 2 past whole slivers) and whole ones (16)
GUARDED_CASES = [(m, k, n) for m in (6, 7, 8, 12, 14)
                 for k, n in ((5, 4), (5, 8), (20, 8), (64, 4), (5, 20), (5, 16))]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_narrow_last_b_sliver_ends_at_a_guard_page(dtype):
    """A row-major B whose last row ends at an unmapped page: a narrow last sliver (NR / 2 or
    NR / 4 columns) under whole-width tiles (the 4-row pair tiles past a 7- or 8-row block's
    split) was read in place NR columns wide, past B's end (a segfault here, an
    AddressSanitizer report in a sanitized build); it is packed instead.  Every case in one
    child process, each B its own two pages (the second unmapped)."""
    r = subprocess.run([sys.executable, "-c", GUARDED_B, dtype,
                        *(",".join(map(str, c)) for c in GUARDED_CASES)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, (r.stdout[-500:], r.stderr)
    lines = r.stdout.splitlines()
    assert len(lines) == len(GUARDED_CASES), r.stdout
    for case, line in zip(GUARDED_CASES, lines):
        name, err = line.split()
        assert name == ",".join(map(str, case)) and float(err) < 1e-5, line
