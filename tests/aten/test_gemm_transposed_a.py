"""A transposed A read in place by the GEMM's tiles (gemm.c, Note [GEMM direct A]): a weight
gradient's g^T of g^T @ x, whose whole MR-row slivers the direct_at tile reads where they lie
when the product has at most 16 B slivers (AVX-512: 512 columns; AVX2: 256) and no narrow last
one; on AVX2 also k steps that spread over L1's sets (at most 8 of 64 in one set: a stride of
128 floats is, 256 is not), on AVX-512 at any stride (test_gemm_in_place.py).  Against NumPy in float64 at, below and above each threshold, and the
bits of the same product with A packed (a column-strided A) and row-major, on 1 and 2 threads,
as mm, addmm and into C in place.  The file reruns itself under PTL_CPU_CAPABILITY=avx2 (MR 6,
NR 16) and =default (no tile: always packed)."""

import numpy as np
import pytest

import pytorchlite as ptl
from gemm_operands import bits, close, operand, rand
from helpers import capability_reruns

test_lower_capabilities = capability_reruns(__file__)


def transposed(a, lda):
    """a (m x k) as the transpose of the first m columns of a k x lda row-major matrix:
    row i's element p at i + p * lda."""
    m, k = a.shape
    base = np.zeros((k, lda), a.dtype)
    base[:, :m] = a.T
    return ptl.tensor(base)[:, :m].t()


def check_addmm(at, a, b, row, exp, dtype):
    """addmm with a row bias, alpha and beta against NumPy and bit for bit against the same
    with A packed (column-strided), and addmm_ into C."""
    m, k = a.shape
    r = ptl.addmm(ptl.tensor(row), at, ptl.tensor(b), beta=0.5, alpha=-2)
    flip = ptl.addmm(ptl.tensor(row), operand(a, "strided"), ptl.tensor(b), beta=0.5, alpha=-2)
    close(r, 0.5 * row.astype(np.float64) - 2 * exp, k, dtype)
    assert np.array_equal(bits(r), bits(flip))
    c = ptl.tensor(np.broadcast_to(row, (m, b.shape[1])).copy())
    c.addmm_(at, ptl.tensor(b))
    close(c, row.astype(np.float64) + exp, k, dtype)


# (m, k, n, lda) at and across the rule, for both engines: m = MR (12; AVX2 6) one sliver in
# place, one row under (packed) and over (the last row packed); n = 512 and 256 in place, 544
# and 272 past the limit (17 slivers), 496 and 248 a narrow last sliver (not), 497 and 249 (in
# place); the old limit's 256, 257, 240, 241 (AVX2: 128, 127, 120, 121); an MLP's weight
# gradients g^T @ x (g [128, 512] and [128, 256], x [128, 784] and [128, 512]); several A
# blocks (m > 192) and K blocks (k > 320); lda 64 floats (4 of 64 k steps in one set;
# doubles: 8), 128 (8; doubles 16: packed on AVX2), 512 (an LSTM's 4H: 32, packed on AVX2),
# 528 (one line more: in place, Note [Recurrent layer]) and 1024 (all in one set: packed on
# AVX2); all in place on AVX-512; k under one vector.
CASES = [(12, 64, 256, 12), (11, 64, 256, 11), (13, 64, 256, 13), (24, 40, 257, 24),
         (25, 40, 240, 25), (25, 40, 241, 25), (6, 40, 128, 6), (7, 40, 127, 7),
         (13, 40, 120, 13), (14, 40, 121, 14), (200, 700, 64, 200), (400, 130, 96, 400),
         (40, 300, 64, 64), (40, 300, 64, 128), (40, 1000, 64, 512), (40, 1000, 64, 528),
         (30, 200, 33, 1024), (37, 5, 32, 37), (512, 1024, 64, 528), (12, 64, 512, 12),
         (24, 40, 544, 24), (25, 40, 496, 25), (25, 40, 497, 25), (6, 40, 256, 6),
         (7, 40, 272, 7), (13, 40, 248, 13), (14, 40, 249, 14), (512, 128, 784, 512),
         (256, 128, 512, 256)]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_transposed_a_in_place(case, dtype, restore_threads):
    m, k, n, lda = case
    a, b = rand((m, k), 80, dtype), rand((k, n), 81, dtype)
    row = rand((n,), 82, dtype)
    exp = a.astype(np.float64) @ b.astype(np.float64)
    for nt in (1, 2):
        ptl.set_num_threads(nt)
        ref = bits(ptl.mm(operand(a, "strided"), ptl.tensor(b)))   # A packed
        close(ptl.tensor(ref), exp, k, dtype)
        at = transposed(a, lda)
        for aa in (at, ptl.tensor(a)):
            for lb in ("contiguous", "transposed"):
                assert np.array_equal(bits(ptl.mm(aa, operand(b, lb))), ref), (lb, nt)
        check_addmm(at, a, b, row, exp, dtype)


def test_weight_gradient_through_linear():
    """nn.functional.linear's weight gradient is g^T @ x with g [batch, out]: padded g rows
    (read in place) and contiguous ones (packed) give the same bits."""
    g = rand((300, 40), 83)
    x = rand((300, 24), 84)
    w = ptl.tensor(rand((40, 24), 85)).requires_grad_()
    grads = []
    for gout in (ptl.tensor(g), transposed(g.T, 48).t()):
        w.grad = None
        ptl.nn.functional.linear(ptl.tensor(x), w).backward(gout)
        grads.append(bits(w.grad))
    close(ptl.tensor(grads[0]), g.astype(np.float64).T @ x.astype(np.float64), 300,
          np.float32)
    assert np.array_equal(grads[0], grads[1])


# Note [GEMM transposed A packed by its first tiles]: a transposed A that the tiles do not read
# in place (AVX2: lda 256, 512 or 1024 floats; or more than 16 B slivers) has its whole
# slivers packed by the first B sliver's tiles, two slivers a tile, and the rest (a last
# sliver of under MR rows, the 4-row pair past `split`) packed as before.  (m, k, n, lda):
# m = 5 (no whole sliver), 6 (one: the one-sliver tile), 12 (a pair), 18 (a pair and one), 13
# and 14 (one sliver and a 4-row pair), 15 (two and a 3-row sliver), 143, 144, 145 and 150
# across an A block (MC 144), 300 (three blocks); n = 8 (a first sliver of NR / 2: not
# packed by the tiles), 9 (packed, stored through the accumulator), 16, 17 and 33 (a narrow
# last sliver), 272 (lda 128 but 17 B slivers: not in place); k = 1, 7, 640 (one K block),
# 700 (two; float64: 300 against KC 256); the GPT's and MLP's weight gradients.
FIRST_TILES = [(5, 40, 32, 512), (6, 40, 32, 512), (12, 40, 32, 512), (18, 40, 32, 512),
               (13, 40, 32, 512), (14, 40, 32, 512), (15, 40, 32, 512), (143, 60, 20, 256),
               (144, 60, 20, 256), (145, 60, 20, 256), (150, 60, 20, 1024),
               (300, 700, 40, 512), (24, 40, 8, 512), (24, 40, 9, 512), (24, 40, 16, 512),
               (24, 40, 17, 512), (24, 40, 33, 1024), (30, 40, 272, 128), (30, 1, 40, 512),
               (30, 7, 40, 512), (30, 640, 40, 512), (30, 300, 40, 512),
               (512, 1024, 128, 512), (256, 128, 512, 256)]


@pytest.mark.parametrize("case", FIRST_TILES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_transposed_a_packed_by_first_tiles(case, dtype, restore_threads):
    """The bits of A packed in its own pass (a column-strided A) and of a row-major A, on 1
    and 2 threads, against NumPy; addmm with a row bias (alpha, beta), into C in place and
    into a transposed C (stored through the accumulator)."""
    m, k, n, lda = case
    a, b = rand((m, k), 90, dtype), rand((k, n), 91, dtype)
    row = rand((n,), 92, dtype)
    exp = a.astype(np.float64) @ b.astype(np.float64)
    tdtype = ptl.float32 if dtype == np.float32 else ptl.float64
    for nt in (1, 2):
        ptl.set_num_threads(nt)
        ref = bits(ptl.mm(operand(a, "strided"), ptl.tensor(b)))
        close(ptl.tensor(ref), exp, k, dtype)
        at = transposed(a, lda)
        for aa in (at, ptl.tensor(a)):
            assert np.array_equal(bits(ptl.mm(aa, ptl.tensor(b))), ref), nt
        out = ptl.empty((n, m), dtype=tdtype).t()
        ptl.mm(at, ptl.tensor(b), out=out)
        assert np.array_equal(bits(out), ref), nt
        check_addmm(at, a, b, row, exp, dtype)
