"""The GEMM engine's tiles, packing and threads (gemm_kernels.c and gemm.c, Notes [GEMM blocking],
[GEMM packing of B] and [GEMM threads]): on AVX-512 12 x 32 float and 12 x 16 double tiles (and
their first 4 and 8 rows for a last A sliver of at most that many), on AVX2 6 x 16 float and
6 x 8 double tiles (and their first 4 rows, also on two 4-row slivers for a block's last 7 or 8
rows; a row-major B read in place by products of any height on AVX-512 in float32, at most
24 rows in float64, 64 on AVX2), B
slivers packed just before use when A is one block,
vector packing (copies of row-major B, 8 x 8 transposes of transposed B and of row-major A,
tails in the portable packer), a row-major A read in place by products of few columns (Note
[GEMM direct A]), whole tiles stored straight into C with alpha and beta, and a product cut
into one rectangle of C per thread.
Against NumPy in float64, on sizes at and across every block edge of every engine (MR, NR, KC,
MC, NC, the in-place-B row limit, the parallel limit), transposed and strided operands,
alpha/beta, size-0; the paths must give the same bits as the generic ones, as each other (AVX2
and AVX-512) and on 1, 2 and 3 threads. The file reruns itself under PTL_CPU_CAPABILITY=avx2 and
=default."""
import os
import subprocess
import sys

import numpy as np
import pytest

import pytorchlite as ptl
from gemm_operands import bits, operand, rand
from helpers import ROOT, assert_close, capability_reruns, to_numpy, torch

CAPABILITY = os.environ.get("PTL_CPU_CAPABILITY")

# (m, k, n): whole tiles, edge rows (m % 6), edge columns (n % 16), k % 8 tails, k < 8,
# one A block with m <= 64 (B in place) and m > 64, several A blocks (m > 144), several K
# blocks (k > 320)
MKN = [(6, 8, 16), (32, 128, 512), (7, 13, 17), (13, 7, 33), (64, 40, 48), (65, 41, 47),
       (128, 96, 80), (150, 24, 40), (30, 700, 35), (2, 3, 5)]


def close(actual, exp, k):
    assert_close(actual, exp, dtype=ptl.float32, rtol=1e-5, atol=4e-7 * max(k, 1) * 4)


@pytest.mark.parametrize("mkn", MKN)
@pytest.mark.parametrize("la", ["contiguous", "transposed", "strided"])
@pytest.mark.parametrize("lb", ["contiguous", "transposed", "strided"])
def test_mm_float32_layouts(mkn, la, lb):
    m, k, n = mkn
    a, b = rand((m, k), 1), rand((k, n), 2)
    r = ptl.mm(operand(a, la), operand(b, lb))
    close(r, a.astype(np.float64) @ b.astype(np.float64), k)
    # the layouts only change how the operands are read, never the bits of the result
    assert np.array_equal(to_numpy(r), to_numpy(ptl.mm(ptl.tensor(a), ptl.tensor(b))))


@pytest.mark.parametrize("mkn", [(32, 128, 512), (13, 7, 33), (65, 41, 47), (30, 700, 35),
                                 (10, 128, 256), (22, 40, 64), (128, 10, 256)])
def test_tile_store_matches_update(mkn):
    """A transposed out makes C's columns strided, so every tile goes through the
    accumulator and the generic update instead of being stored by the tile (which stores
    the first rows of a last sliver of 10 or 22 = 12 + 10 rows itself)."""
    m, k, n = mkn
    a, b = ptl.tensor(rand((m, k), 3)), ptl.tensor(rand((k, n), 4))
    out = ptl.empty((n, m)).t()
    ptl.mm(a, b, out=out)
    assert np.array_equal(to_numpy(out), to_numpy(ptl.mm(a, b)))


@pytest.mark.parametrize("mkn", [(32, 128, 512), (7, 13, 17), (150, 24, 40), (30, 700, 35)])
@pytest.mark.parametrize("beta, alpha", [(1, 1), (0.5, 2), (0, 1), (0, -1.5), (2, 0)])
def test_addmm_float32_beta_alpha(mkn, beta, alpha):
    m, k, n = mkn
    s, a, b = rand((n,), 5), rand((m, k), 6), rand((n, k), 7)
    r = ptl.addmm(ptl.tensor(s), ptl.tensor(a), ptl.tensor(b).t(), beta=beta, alpha=alpha)
    exp = beta * s.astype(np.float64) + alpha * (a.astype(np.float64) @ b.T.astype(np.float64))
    close(r, exp, k)
    if torch is not None:
        t = torch.addmm(torch.from_numpy(s), torch.from_numpy(a), torch.from_numpy(b).t(),
                        beta=beta, alpha=alpha)
        close(r, t.double().numpy(), k)


def test_addmm_beta_zero_ignores_nan():
    a, b = rand((13, 300), 8), rand((300, 33), 9)
    nan = ptl.full((13, 33), float("nan"))
    r = ptl.addmm(nan, ptl.tensor(a), ptl.tensor(b), beta=0)
    close(r, a.astype(np.float64) @ b.astype(np.float64), 300)
    assert np.isnan(to_numpy(ptl.addmm(nan, ptl.tensor(a), ptl.tensor(b)))).all()


@pytest.mark.parametrize("dtype", [ptl.float16, ptl.bfloat16])
@pytest.mark.parametrize("mkn", [(32, 128, 64), (7, 13, 17)])
def test_mm_half_through_float_tiles(dtype, mkn):
    m, k, n = mkn
    a, b = ptl.tensor(rand((m, k), 10)).to(dtype), ptl.tensor(rand((k, n), 11)).to(dtype)
    an, bn = to_numpy(a.float()).astype(np.float64), to_numpy(b.float()).astype(np.float64)
    r = ptl.mm(a, b)
    assert r.dtype == dtype
    tol = 1e-2 if dtype == ptl.float16 else 6e-2
    assert_close(r, an @ bn, dtype=dtype, rtol=tol, atol=tol * k)


@pytest.mark.parametrize("mkn", [(7, 13, 17), (32, 128, 64)])
def test_float64_and_int_unchanged(mkn):
    m, k, n = mkn
    a, b = rand((m, k), 12, np.float64), rand((k, n), 13, np.float64)
    assert_close(ptl.mm(ptl.tensor(a), ptl.tensor(b)), a @ b, dtype=ptl.float64)
    ai = np.random.default_rng(14).integers(-50, 50, (m, k))
    bi = np.random.default_rng(15).integers(-50, 50, (k, n))
    assert_close(ptl.mm(ptl.tensor(ai), ptl.tensor(bi)), ai @ bi, dtype=ptl.int64)


@pytest.mark.parametrize("mkn", [(0, 5, 16), (6, 0, 16), (6, 5, 0)])
def test_size_zero(mkn):
    m, k, n = mkn
    a, b = rand((m, k), 16), rand((k, n), 17)
    assert_close(ptl.mm(ptl.tensor(a), ptl.tensor(b)), np.zeros((m, n)), dtype=ptl.float32)
    s = rand((m, n), 18)
    r = ptl.addmm(ptl.tensor(s), ptl.tensor(a), ptl.tensor(b), beta=0.5)
    assert_close(r, 0.5 * s.astype(np.float64), dtype=ptl.float32)


@pytest.mark.parametrize("bmkn", [(3, 32, 128, 48), (4, 7, 13, 17)])
def test_bmm_float32(bmkn):
    bs, m, k, n = bmkn
    a, b = rand((bs, m, k), 19), rand((bs, n, k), 20)
    r = ptl.bmm(ptl.tensor(a), ptl.tensor(b).transpose(1, 2))
    close(r, a.astype(np.float64) @ b.transpose(0, 2, 1).astype(np.float64), k)
    r2 = ptl.bmm(ptl.tensor(a), ptl.tensor(np.ascontiguousarray(b.transpose(0, 2, 1))))
    assert np.array_equal(to_numpy(r), to_numpy(r2))


@pytest.mark.parametrize("mkn, bt", [((32, 128, 512), False), ((128, 784, 512), True),
                                     ((150, 300, 200), False), ((40, 64, 33), True)])
def test_same_bits_on_one_and_two_threads(mkn, bt):
    m, k, n = mkn
    a = ptl.tensor(rand((m, k), 21))
    b = ptl.tensor(rand((n, k), 22)).t() if bt else ptl.tensor(rand((k, n), 22))
    old = ptl.get_num_threads()
    try:
        ptl.set_num_threads(1)
        one = to_numpy(ptl.mm(a, b))
        ptl.set_num_threads(2)
        two = to_numpy(ptl.mm(a, b))
    finally:
        ptl.set_num_threads(old)
    assert np.array_equal(one, two)


def test_mm_float32_grad():
    a = ptl.tensor(rand((13, 40), 23), requires_grad=True)
    b = ptl.tensor(rand((40, 33), 24), requires_grad=True)
    g = rand((13, 33), 25)
    ptl.mm(a, b).backward(ptl.tensor(g))
    an, bn, gn = (x.astype(np.float64) for x in (rand((13, 40), 23), rand((40, 33), 24), g))
    close(a.grad, gn @ bn.T, 33)
    close(b.grad, an.T @ gn, 13)


test_lower_capabilities = capability_reruns(__file__)


BIAS = {  # addmm's self, for an (m, n) product: shape and how it is laid out
    "row": lambda m, n: ptl.tensor(rand((n,), 30)),
    "column": lambda m, n: ptl.tensor(rand((m, 1), 31)),
    "matrix": lambda m, n: ptl.tensor(rand((m, n), 32)),
    "transposed": lambda m, n: ptl.tensor(rand((n, m), 33)).t(),
    "scalar": lambda m, n: ptl.tensor(rand((), 34)),
}


@pytest.mark.parametrize("bias", list(BIAS))
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64, ptl.int64, ptl.int32, ptl.float16])
@pytest.mark.parametrize("mkn", [(32, 128, 512), (13, 300, 33), (1, 40, 20), (20, 40, 1),
                                 (4, 0, 5), (3, 8200, 2)])
def test_addmm_bias_in_place(bias, dtype, mkn):
    """addmm and baddbmm read the bias through its strides as the beta term (1-D bias: rows
    0 apart) instead of copying it into the result first; vectors, k = 0 and long-K products
    still copy it."""
    m, k, n = mkn
    s = BIAS[bias](m, n)
    a, b = ptl.tensor(rand((m, k), 35)), ptl.tensor(rand((k, n), 36))
    if dtype in (ptl.int64, ptl.int32):
        s, a, b = (ptl.tensor(np.rint(to_numpy(x) * 10)).to(dtype) for x in (s, a, b))
    else:
        s, a, b = s.to(dtype), a.to(dtype), b.to(dtype)
    sn, an, bn = (to_numpy(x).astype(np.float64) for x in (s, a, b))
    beta, alpha = (2, 3) if dtype in (ptl.int64, ptl.int32) else (0.5, 1.5)
    r = ptl.addmm(s, a, b, beta=beta, alpha=alpha)
    exp = beta * np.broadcast_to(sn, (m, n)) + alpha * (an @ bn)
    if dtype in (ptl.int64, ptl.int32):
        assert_close(r, exp.astype(np.int64), dtype=dtype)
    else:
        tol = 2e-2 if dtype == ptl.float16 else 1e-5
        assert_close(r, exp, dtype=dtype, rtol=tol, atol=tol * max(k, 1) * 4)
    r3 = ptl.baddbmm(s, a.unsqueeze(0).expand(2, m, k), b.unsqueeze(0).expand(2, k, n),
                     beta=beta, alpha=alpha)
    assert np.array_equal(to_numpy(r3[1]), to_numpy(r))


@pytest.mark.parametrize("mkn", [(32, 128, 512), (13, 200, 33), (128, 256, 70)])
def test_addmm_bias_same_bits_as_mm_plus_bias(mkn):
    """One K block: alpha * acc + beta * bias is acc + bias for alpha = beta = 1, as mm + add."""
    m, k, n = mkn
    s, a, b = ptl.tensor(rand((n,), 37)), ptl.tensor(rand((m, k), 38)), ptl.tensor(rand((n, k), 39))
    r = ptl.addmm(s, a, b.t())
    assert np.array_equal(to_numpy(r), to_numpy(ptl.mm(a, b.t()) + s))


# (m, k, n) at and across every block edge of the three float engines (AVX-512 12 x 32
# float / 12 x 16 double tiles, MC 192 / 96, NC 1024, B in place (float64: up to m = 24;
# float32 at any m, test_gemm_in_place.py); AVX2 6 x 16,
# MC 144, NC 2048, B in place up to m = 64; portable 6 x 16 / 6 x 8, MC 144 / 72) and of
# KC (float64 256, one block up to 320; float32 512, up to 640: Note [GEMM K block]); B in
# place up to 64 rows when a K block of it spans at most
# 32 KB (64 x 128 floats), not at 64 x 129 or 65 rows
EDGES = [(64, 64, 128), (64, 64, 129), (65, 64, 128), (11, 5, 31), (12, 8, 32), (13, 9, 33), (24, 40, 64), (25, 40, 65), (64, 17, 48),
         (65, 17, 48), (72, 16, 17), (73, 16, 17), (96, 9, 16), (97, 9, 16), (144, 10, 40),
         (145, 10, 40), (192, 12, 33), (193, 12, 33), (12, 256, 32), (13, 257, 31),
         (7, 320, 16), (7, 321, 16), (5, 20, 1024), (5, 20, 1025), (3, 9, 2048),
         (3, 9, 2049), (12, 512, 32), (13, 513, 31), (7, 640, 16), (7, 641, 16),
         (193, 1537, 33)]


@pytest.mark.parametrize("mkn", EDGES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("lb", ["contiguous", "transposed", "strided"])
def test_block_edges(mkn, dtype, lb):
    m, k, n = mkn
    a, b = rand((m, k), 40, dtype), rand((k, n), 41, dtype)
    r = ptl.mm(ptl.tensor(a), operand(b, lb))
    exp = a.astype(np.float64) @ b.astype(np.float64)
    if dtype == np.float32:
        close(r, exp, k)
    else:
        assert_close(r, exp, dtype=ptl.float64, rtol=1e-12, atol=1e-13 * k)
    # B read in place, packed per sliver or packed as a block: the same bits
    assert np.array_equal(to_numpy(r), to_numpy(ptl.mm(ptl.tensor(a), ptl.tensor(b))))


# every row count of the last A sliver (m % 12) around the AVX-512 tiles of 4 and 8 rows:
# 4, 8, 16 = 12 + 4, 20 = 12 + 8, 32 = 12 + 12 + 8 use them whole; the others through the
# accumulator (1-3 with the 4-row tile, 5-7 with the 8-row one, 9-11 with the 12-row one)
# and around AVX2's tile of 4 rows (m % 6): 4, 10, 16 = 6 + 6 + 4 (an LSTM step's batch)
# and 22 use it whole, 1-3 (7-9, ...) through the accumulator, 5 with the 6-row tile
LAST_SLIVER_ROWS = list(range(1, 26)) + [28, 32, 44]


def close_dtype(actual, exp, k, dtype):
    if dtype == np.float32:
        close(actual, exp, k)
    else:
        assert_close(actual, exp, dtype=ptl.float64, rtol=1e-12, atol=1e-13 * k)


def check_edge_tiles(m, k, n, seed, dtype):
    """m x k @ k x n against NumPy, and the same bits whether C is stored by the tile, through
    the accumulator (a transposed out) or with B transposed (m > 1), and with a matrix bias
    apart from C (beta * S, one K block: acc + S for alpha = beta = 1, as a layer's step GEMM
    adds its input gates); alpha and beta against NumPy."""
    a, b = rand((m, k), seed, dtype), rand((k, n), seed + 1, dtype)
    s = rand((m, n), seed + 2, dtype)
    r = ptl.mm(ptl.tensor(a), ptl.tensor(b))
    exp = a.astype(np.float64) @ b.astype(np.float64)
    close_dtype(r, exp, k, dtype)
    out = ptl.empty((n, m), dtype=r.dtype).t()
    ptl.mm(ptl.tensor(a), ptl.tensor(b), out=out)
    assert np.array_equal(to_numpy(out), to_numpy(r))
    if m > 1:   # one row is a matrix-vector product: its two loops sum in other orders
        rt = ptl.mm(ptl.tensor(a), ptl.tensor(np.ascontiguousarray(b.T)).t())
        assert np.array_equal(to_numpy(rt), to_numpy(r))
    r2 = ptl.addmm(ptl.tensor(s), ptl.tensor(a), ptl.tensor(b))
    assert np.array_equal(to_numpy(r2), to_numpy(r + ptl.tensor(s)))
    r3 = ptl.addmm(ptl.tensor(s), ptl.tensor(a), ptl.tensor(b), beta=0.5, alpha=2)
    close_dtype(r3, 0.5 * s.astype(np.float64) + 2 * exp, k, dtype)


@pytest.mark.parametrize("m", LAST_SLIVER_ROWS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_last_sliver_rows(m, dtype):
    """The tiles of 4 and 8 rows read the 12-row (AVX2: 6-row) sliver's first rows."""
    for n in (64, 65):
        check_edge_tiles(m, 37, n, 60, dtype)


# A blocks whose last rows are MR + 1 or MR + 2 (7 or 8 on AVX2): two 4-row slivers packed 4
# wide (pair4), the first one or two A blocks of m = 145 (78 + 67) and 200 (102 + 98), one K
# block or three (k = 700: the later ones accumulate with alpha = beta = 1); 9, 15, 129 not
PAIR_ROWS = [7, 8, 9, 13, 14, 15, 127, 128, 129, 145, 200]


@pytest.mark.parametrize("m", PAIR_ROWS)
@pytest.mark.parametrize("k", [37, 700])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_last_rows_as_two_4_row_slivers(m, k, dtype):
    """Against NumPy with A contiguous, transposed and strided, B contiguous and transposed,
    C stored by the tile and through the accumulator (transposed out); every row the same bits
    as in a product of its 6 rows (one 6-row tile)."""
    n = 40
    a, b = rand((m, k), 90, dtype), rand((k, n), 91, dtype)
    exp = a.astype(np.float64) @ b.astype(np.float64)
    rt = ptl.mm(ptl.tensor(a), ptl.tensor(b))
    close_dtype(rt, exp, k, dtype)
    r = to_numpy(rt)
    for la in ("contiguous", "transposed", "strided"):
        for lb in ("contiguous", "transposed"):
            assert np.array_equal(to_numpy(ptl.mm(operand(a, la), operand(b, lb))), r)
    out = ptl.empty((n, m), dtype=ptl.float32 if dtype == np.float32 else ptl.float64).t()
    ptl.mm(ptl.tensor(a), ptl.tensor(b), out=out)
    assert np.array_equal(to_numpy(out), r)
    # (a last row alone would be a matrix-vector product: it goes with the row before)
    for i in range(0, m, 6):
        j = min(i, m - 2)
        part = to_numpy(ptl.mm(ptl.tensor(a[j:i + 6]), ptl.tensor(b)))
        assert np.array_equal(part[i - j:], r[i:i + 6]), i


@pytest.mark.parametrize("mkn", [(8, 0, 33), (14, 0, 5), (0, 37, 33), (8, 37, 0), (7, 1, 40)])
@pytest.mark.parametrize("beta, alpha", [(1, 1), (0.5, 2), (0, 1)])
def test_last_rows_pairs_size_zero(mkn, beta, alpha):
    """The pair4 row counts with k = 0 (C = beta * C only), no rows or no columns, and k = 1."""
    m, k, n = mkn
    s, a, b = rand((m, n), 95), rand((m, k), 96), rand((k, n), 97)
    r = ptl.addmm(ptl.tensor(s), ptl.tensor(a), ptl.tensor(b), beta=beta, alpha=alpha)
    exp = beta * s.astype(np.float64) + alpha * (a.astype(np.float64) @ b.astype(np.float64))
    close(r, exp, k)


@pytest.mark.parametrize("m", [8, 13, 128])
@pytest.mark.parametrize("k", [37, 700])
@pytest.mark.parametrize("lc", ["contiguous", "transposed", "strided"])
def test_addmm_accumulate_into_c(m, k, lc):
    """C += A @ B (alpha = beta = 1, C itself the beta term: the tiles store acc + C) against
    NumPy, Inf and NaN in C carried through, the same bits as alpha = 1.0 and beta = 1.0 reached
    through addmm with a separate bias; beta = 0 ignores the NaN, alpha = 0 leaves beta * C."""
    n = 33
    a, b, c = rand((m, k), 92), rand((k, n), 93), rand((m, n), 94)
    c[0, 0], c[m - 1, n - 1], c[m // 2, 5] = np.inf, np.nan, -np.inf
    exp = c.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
    ct = operand(c, lc)
    ct.addmm_(ptl.tensor(a), ptl.tensor(b))
    got = to_numpy(ct)
    finite = np.isfinite(exp)
    np.testing.assert_allclose(got[finite], exp[finite], rtol=1e-5, atol=1.6e-6 * k)
    assert np.array_equal(np.isnan(got), np.isnan(exp))
    assert np.array_equal(got[~finite & ~np.isnan(exp)], exp[~finite & ~np.isnan(exp)])
    apart = to_numpy(ptl.addmm(ptl.tensor(c), ptl.tensor(a), ptl.tensor(b)))
    assert np.array_equal(got, apart, equal_nan=True)
    zero = operand(c, lc)
    zero.addmm_(ptl.tensor(a), ptl.tensor(b), beta=0)
    close(zero, a.astype(np.float64) @ b.astype(np.float64), k)
    scaled = operand(c, lc)
    scaled.addmm_(ptl.tensor(a), ptl.tensor(b), beta=1, alpha=0)
    assert np.array_equal(to_numpy(scaled), c, equal_nan=True)


# the width of the last B sliver around the narrow tiles (one vector per row, NR / 4 and
# NR / 2 wide: 8 and 16 floats or 4 and 8 doubles on AVX-512, 4 and 8 floats or 2 and 4
# doubles on AVX2) and the whole tile past them: n = 1 ... 33, then 32 + 1 ... 17
LAST_SLIVER_COLS = list(range(1, 34)) + [36, 40, 41, 48, 49, 50, 65]


@pytest.mark.parametrize("n", LAST_SLIVER_COLS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_last_sliver_columns(n, dtype):
    """A narrow tile computes a last sliver of few columns (a GPT head's 65 = 32 + 32 + 1, an
    MLP head's 10), with whole MR tiles (6, 12, 24 rows: stored by the tile when the width
    matches) and edge rows."""
    for m in (5, 6, 12, 13, 24):
        check_edge_tiles(m, 37, n, 70, dtype)


# (m, k, n) of a transposed A (autograd's weight gradient g^T @ x): whole 12- and 6-row
# slivers copied 8 + 4 and 4 + 2 + ... wide, a last partial sliver, one and several K blocks
# (k = 1024: four of 256), one and several A blocks (m > 192), and the GPT / MLP heads; K
# rows packed 16 at a time (k = 15, 16, 17, 33) with the spilling whole-vector copies, whose
# last sliver copies exactly when A's row stride (m: 12, 14, 128) leaves no room past it
TRANSPOSED_A = [(11, 40, 33), (12, 40, 33), (13, 40, 33), (25, 257, 64), (65, 1024, 128),
                (200, 300, 40), (384, 1024, 130), (10, 128, 256), (12, 15, 20), (12, 16, 20),
                (14, 17, 20), (128, 33, 40), (8, 700, 24)]


@pytest.mark.parametrize("mkn", TRANSPOSED_A)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_transposed_a(mkn, dtype, restore_threads):
    """A transposed (its rows adjacent in memory) is packed with vector copies: the values
    against NumPy, and the bits of a contiguous A, on one and two threads; a strided
    transposed A (every other row) too."""
    m, k, n = mkn
    a, b = rand((m, k), 80, dtype), rand((k, n), 81, dtype)
    exp = a.astype(np.float64) @ b.astype(np.float64)
    ref = None
    for nt in (1, 2):
        ptl.set_num_threads(nt)
        at = ptl.tensor(np.ascontiguousarray(a.T)).t()
        wide = np.zeros((k, 2 * m), dtype)
        wide[:, ::2] = a.T
        for aa in (at, ptl.tensor(wide)[:, ::2].t(), ptl.tensor(a)):
            r = ptl.mm(aa, ptl.tensor(b))
            close_dtype(r, exp, k, dtype)
            ref = to_numpy(r) if ref is None else ref
            assert np.array_equal(to_numpy(r), ref)


# (m, k, n): the thread limits (m * n * k = 2 * 2 ** 20 and just under: two threads or one;
# 3 * 2 ** 20: three), rectangles of rows (tall), of columns (wide, the skinny 64 x 4096 @
# 4096 x 1024 in small) and both on 3 threads, edge tiles at the cuts, several K blocks
GRID = [(128, 128, 128), (128, 127, 128), (192, 128, 128), (1200, 80, 44), (44, 80, 1200),
        (64, 700, 300), (301, 300, 299), (37, 129, 1030), (1024, 128, 65), (1100, 40, 10)]


@pytest.mark.parametrize("mkn", GRID)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_threads_same_bits(mkn, dtype, restore_threads):
    m, k, n = mkn
    if dtype == np.int64:
        a = np.random.default_rng(42).integers(-9, 9, (m, k))
        b = np.random.default_rng(43).integers(-9, 9, (k, n))
    else:
        a, b = rand((m, k), 42, dtype), rand((k, n), 43, dtype)
    results = {False: [], True: []}
    for nt in (1, 2, 3):
        ptl.set_num_threads(nt)
        for bt in (False, True):
            # a row bias (read through a 0 row stride) and a whole matrix, read in place
            s = rand((m, n) if bt else (n,), 44, np.float64).astype(a.dtype)
            exp = 0.5 * s.astype(np.float64) + 2 * (a.astype(np.float64) @ b.astype(np.float64))
            tb = ptl.tensor(np.ascontiguousarray(b.T)).t() if bt else ptl.tensor(b)
            r = ptl.addmm(ptl.tensor(s), ptl.tensor(a), tb, beta=0.5, alpha=2)
            if dtype == np.int64:
                # alpha and beta truncate to integers, as in PyTorch
                assert_close(r, 0 * s + 2 * (a @ b), dtype=ptl.int64)
            elif dtype == np.float32:
                close(r, exp, k)
            else:
                assert_close(r, exp, dtype=ptl.float64, rtol=1e-12, atol=1e-13 * k)
            results[bt].append(to_numpy(r))
    for same in results.values():
        for r in same[1:]:
            assert np.array_equal(r, same[0])


# (m, k, n) at and across Note [GEMM narrow N]'s rule (computed as C^T = B^T @ A^T when that
# saves a fifth of the tiles' multiply-adds; on AVX-512's 12 x 32 tiles and n = 10, m = 2 to
# 8, 13 to 16 and from 25 on are transposed, 9 to 12 and 17 to 24 not): 128 x 10 (the MLP
# head), 2 x 10, 8 x 10 and 25 x 10 transposed, 9 x 10 and 24 x 10 not; 128 x 20 and 50 x 9
# transposed; 128 x 31, 1024 x 67 (a ninth saved) and 300 x 5 not; several K blocks (1024 x
# 65's last column is a dot product, Note [GEMM last columns]: test_gemm_small.py).
# The AVX2 rerun decides by its 6 x 16 tiles on the same shapes.  2 x 10 written transposed
# has two columns, which the float32 tile engines compute as dot products (all tail, Note
# [GEMM last columns]): there the bits are those of the contiguous operands instead.
NARROW_N = [(128, 256, 10), (32, 256, 10), (8, 40, 10), (2, 40, 10), (9, 40, 10),
            (24, 256, 10), (25, 40, 10), (128, 256, 20), (128, 256, 31), (1024, 128, 67),
            (50, 700, 9), (300, 64, 5)]


@pytest.mark.parametrize("mkn", NARROW_N)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_narrow_n_transposed(mkn, dtype, restore_threads):
    """A narrow product computed transposed: against NumPy in float64, with every operand
    layout, as addmm with a row bias and a whole-matrix bias, on one and two threads; the
    bits are those of the same product written transposed, (B^T @ A^T)^T, which is computed
    the other way round, and do not depend on the layout or the thread count."""
    m, k, n = mkn
    a, b = rand((m, k), 90, dtype), rand((k, n), 91, dtype)
    row, whole = rand((n,), 92, dtype), rand((m, n), 93, dtype)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    exp = a64 @ b64
    results = []
    tiles = dtype == np.float32 and ptl.backends.cpu.get_cpu_capability() != "DEFAULT"
    flip_bits = not (tiles and m <= 2)
    for nt in (1, 2):
        ptl.set_num_threads(nt)
        ref = bits(ptl.mm(ptl.tensor(np.ascontiguousarray(b.T)),
                          ptl.tensor(np.ascontiguousarray(a.T))).t() if flip_bits else
                   ptl.mm(ptl.tensor(a), ptl.tensor(b)))
        close_dtype(ptl.tensor(ref), exp, k, dtype)
        for la in ("contiguous", "transposed", "strided"):
            for lb in ("contiguous", "transposed", "strided"):
                r = bits(ptl.mm(operand(a, la), operand(b, lb)))
                close_dtype(ptl.tensor(r), exp, k, dtype)
                assert np.array_equal(r, ref), (la, lb)
        for bias in (row, whole):
            r = ptl.addmm(ptl.tensor(bias), operand(a, "transposed"), ptl.tensor(b), beta=0.5,
                          alpha=-2)
            close_dtype(r, 0.5 * bias.astype(np.float64) - 2 * exp, k, dtype)
            tb = np.ascontiguousarray(np.broadcast_to(bias, (m, n)).T)
            flip = ptl.addmm(ptl.tensor(tb), ptl.tensor(np.ascontiguousarray(b.T)),
                             ptl.tensor(np.ascontiguousarray(a.T)), beta=0.5, alpha=-2).t()
            if flip_bits:
                assert np.array_equal(bits(r), bits(flip))
            results.append(bits(r))
        # a batch of such products, and C accumulated in place (beta = 1)
        bb = ptl.bmm(ptl.tensor(np.stack([a, 2 * a])), ptl.tensor(np.stack([b, b])))
        close_dtype(bb[1], 2 * exp, k, dtype)
        assert np.array_equal(bits(bb[0]), ref)
        c = ptl.tensor(whole.copy())
        c.addmm_(ptl.tensor(a), ptl.tensor(b))
        close_dtype(c, whole.astype(np.float64) + exp, k, dtype)
        results.append(bits(c))
    half = len(results) // 2
    for one, two in zip(results[:half], results[half:]):
        assert np.array_equal(one, two)


# (m, k, n): a last A sliver of fewer rows than MR packed by pack_f4_avx2 (copies of a
# transposed A's rows, 8 x 8 transposes of a row-major A's, the rows past it zeros), under
# one sliver (m < 8, 8 < m < 12; m > 1, as one row is a matrix-vector product) and after
# whole ones, k below 8, a multiple of 8 and with a tail; B's last sliver of fewer columns
# likewise (n % 32, n % 16)
PARTIAL_SLIVERS = [(2, 9, 17), (5, 8, 9), (10, 16, 31), (11, 17, 33), (10, 7, 20),
                   (22, 40, 64), (23, 129, 47), (37, 24, 10), (10, 128, 256)]


@pytest.mark.parametrize("mkn", PARTIAL_SLIVERS)
def test_partial_slivers(mkn, restore_threads):
    m, k, n = mkn
    a, b = rand((m, k), 95), rand((k, n), 96)
    exp = a.astype(np.float64) @ b.astype(np.float64)
    ref = None
    for nt in (1, 2):
        ptl.set_num_threads(nt)
        for la in ("contiguous", "transposed", "strided"):
            for lb in ("contiguous", "transposed"):
                r = ptl.mm(operand(a, la), operand(b, lb))
                close(r, exp, k)
                ref = bits(r) if ref is None else ref
                assert np.array_equal(bits(r), ref), (nt, la, lb)
        s = rand((m, n), 97)
        r = ptl.addmm(ptl.tensor(s), operand(a, "transposed"), ptl.tensor(b), beta=-1, alpha=3)
        close(r, 3 * exp - s.astype(np.float64), k)


# (m, k, n) at and across Note [GEMM direct A]'s rule, for both engines (AVX-512: MR 12, NR 32,
# at most 16 slivers, 512 columns; the AVX2 rerun: MR 6, NR 16, at most 256): n = 512, 256 and
# 255 read a row-major A in place, 544 and 272 (past the limit: 17 slivers), 496 and 248 (a
# narrow last sliver: 16 of 32, 8 of 16) do not, 497 and 249 do; the old limit of 8 slivers
# (256, 257, 240, 241 on AVX-512; 128, 127, 120, 121 on AVX2), all in place now but for the
# narrow last slivers; an MLP's x [128, 784] @ W^T (one A block, four K blocks) and its input
# gradient g [128, 256] @ W [256, 512]; m under one sliver (packed), one sliver and one row more
# (the last packed), the AVX2 pair of 4-row slivers (13, 14), several A blocks (m > 192) and
# several K blocks (k > 320); k = 1024 puts all of a tile's rows in one L1 set (packed), 1000
# does not, and k = 5 is under one 8-column transpose.
DIRECT_A = [(12, 64, 256), (13, 64, 256), (11, 64, 256), (24, 40, 257), (25, 40, 240),
            (25, 40, 241), (6, 40, 128), (7, 40, 127), (13, 40, 120), (14, 40, 121),
            (200, 700, 64), (400, 130, 96), (40, 1024, 64), (40, 1000, 64), (37, 5, 32),
            (1024, 128, 32), (12, 64, 512), (13, 40, 544), (25, 40, 496), (25, 40, 497),
            (6, 40, 256), (7, 40, 255), (7, 40, 272), (13, 40, 248), (14, 40, 249),
            (128, 784, 512), (128, 256, 512)]


@pytest.mark.parametrize("mkn", DIRECT_A)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_direct_a(mkn, dtype, restore_threads):
    """A row-major A read in place by the tiles: against NumPy in float64, and the bits of
    the same product with A packed (transposed or strided A), on one and two threads; a
    row-major A that is a column slice of a wider matrix (lda > k, an unaligned start); as
    addmm with a row bias and into C in place (beta = 1)."""
    m, k, n = mkn
    a, b = rand((m, k), 70, dtype), rand((k, n), 71, dtype)
    row = rand((n,), 72, dtype)
    exp = a.astype(np.float64) @ b.astype(np.float64)
    wider = np.zeros((m, k + 3), dtype)
    wider[:, 1:k + 1] = a
    for nt in (1, 2):
        ptl.set_num_threads(nt)
        ref = bits(ptl.mm(operand(a, "transposed"), ptl.tensor(b)))
        close_dtype(ptl.tensor(ref), exp, k, dtype)
        for aa in (ptl.tensor(a), ptl.tensor(wider)[:, 1:k + 1], operand(a, "strided")):
            for lb in ("contiguous", "transposed"):
                assert np.array_equal(bits(ptl.mm(aa, operand(b, lb))), ref), lb
        r = ptl.addmm(ptl.tensor(row), ptl.tensor(a), ptl.tensor(b), beta=0.5, alpha=-2)
        flip = ptl.addmm(ptl.tensor(row), operand(a, "transposed"), ptl.tensor(b), beta=0.5,
                         alpha=-2)
        close_dtype(r, 0.5 * row.astype(np.float64) - 2 * exp, k, dtype)
        assert np.array_equal(bits(r), bits(flip))
        c = ptl.tensor(np.broadcast_to(row, (m, n)).copy())
        c.addmm_(ptl.tensor(a), ptl.tensor(b))
        close_dtype(c, row.astype(np.float64) + exp, k, dtype)


BITS_CASES = [(13, 300, 33), (25, 40, 65), (200, 321, 70), (64, 700, 300), (32, 128, 512),
              (13, 640, 33), (25, 641, 65), (200, 1537, 40),
              (16, 37, 65), (7, 20, 40), (1024, 128, 65), (128, 256, 10), (36, 30, 9),
              (24, 50, 36), (8, 40, 33), (128, 700, 40), (145, 30, 20)]


def _products(capability, path):
    """mm of each BITS_CASES shape in float32 and float64 (B contiguous and transposed), on
    two threads, computed by a fresh process under PTL_CPU_CAPABILITY=capability."""
    code = f"""
import numpy as np, pytorchlite as ptl
ptl.set_num_threads(2)
out = {{}}
for i, (m, k, n) in enumerate({BITS_CASES!r}):
    for dt in ("float32", "float64"):
        g = np.random.default_rng(i)
        a = g.uniform(-2, 2, (m, k)).astype(dt)
        b = g.uniform(-2, 2, (k, n)).astype(dt)
        out[f"{{i}}{{dt}}"] = ptl.mm(ptl.tensor(a), ptl.tensor(b)).numpy()
        out[f"{{i}}{{dt}}t"] = ptl.mm(ptl.tensor(a), ptl.tensor(np.ascontiguousarray(b.T)).t()).numpy()
np.savez({str(path)!r}, **out)
"""
    env = dict(os.environ, PTL_CPU_CAPABILITY=capability)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    return np.load(path)


def test_avx512_same_bits_as_avx2(tmp_path):
    """Each C element is one chain of FMAs over k in order, cut at the same KC, in both
    tiles, and the stores round alpha * acc + beta * C alike: the bits agree."""
    if ptl.backends.cpu.get_cpu_capability() != "AVX512":
        pytest.skip("this CPU has no AVX-512: there is no AVX-512 tile to compare")
    wide = _products("avx512", tmp_path / "avx512.npz")
    narrow = _products("avx2", tmp_path / "avx2.npz")
    assert sorted(wide.files) == sorted(narrow.files)
    for key in wide.files:
        assert np.array_equal(wide[key], narrow[key]), key


@pytest.mark.parametrize("mkn", [(256, 784, 512), (128, 784, 512), (64, 2048, 300)])
def test_mm_float32_grad_large(mkn, restore_threads):
    """mm backward at sizes above every block edge and the parallel limit: the weight
    gradient is A^T @ G (transposed A), the input gradient G @ B^T (transposed B)."""
    m, k, n = mkn
    an, bn, gn = rand((m, k), 50), rand((n, k), 51), rand((m, n), 52)
    for nt in (1, 2):
        ptl.set_num_threads(nt)
        a = ptl.tensor(an, requires_grad=True)
        w = ptl.tensor(bn, requires_grad=True)
        ptl.mm(a, w.t()).backward(ptl.tensor(gn))
        a64, b64, g64 = (x.astype(np.float64) for x in (an, bn, gn))
        close(a.grad, g64 @ b64, n)
        close(w.grad, g64.T @ a64, m)


def test_mm_gradcheck_float64_across_tiles():
    a = ptl.tensor(rand((13, 7), 53, np.float64), requires_grad=True)
    b = ptl.tensor(rand((7, 33), 54, np.float64), requires_grad=True)
    assert ptl.autograd.gradcheck(ptl.mm, (a, b))
    assert ptl.autograd.gradgradcheck(ptl.mm, (a, b))
