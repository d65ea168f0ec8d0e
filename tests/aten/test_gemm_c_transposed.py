"""A C whose rows are one element apart, stored by the AVX2 float32 tiles themselves (gemm.c's
gemm_step; Note [GEMM C stored transposed] in gemm_kernels.c): a narrow-N product computed
as C^T = B^T @ A^T (Note [GEMM narrow N]: whole tiles on a packed A and on A read in place),
and a product written into a transposed C (out=, addmm_; a last 4-row pair too).  Against NumPy in
float64, and the bits of the same product with B padded by zero columns (no transposition,
C stored row by row), for mm, addmm with a bias row, with a whole beta source, with alpha and
beta of 1, 0, 0.5 and -2, in place (addmm_), on 1 and 2 threads.  The file reruns itself
under PTL_CPU_CAPABILITY=avx2 and =default (no tile: the update stores C)."""

import numpy as np
import pytest

import pytorchlite as ptl
from gemm_operands import bits, close, operand, rand
from helpers import capability_reruns

test_lower_capabilities = capability_reruns(__file__)

# (m, k, n): n = 10 (a classifier head: C^T's 10 rows are a sliver of 6 then an edge of 4,
# stored through the update), 12 (two whole slivers), 9 (6 + 3) and 4 (one edge sliver);
# m = 64, 128 (C^T's whole 16-column slivers), 100 (a narrower last one: through the update)
# and 300 (C^T's 19 slivers: A^T read in place stops at 16); k = 1, 33, 256 and 700 (two K
# blocks: C^T accumulated in place by the second).
CASES = [(128, 256, 10), (128, 33, 12), (64, 1, 10), (100, 50, 10), (300, 40, 10),
         (128, 700, 10), (64, 50, 4), (64, 50, 9), (128, 256, 12)]
# products written into a transposed C as they are (no narrow-N transposition): m = 64 and 70
# (a last 4-row tile), 128 (a last 4 + 4 pair: pair4), 13 and 127 (6 + 4 + 3 and 120 + 4 + 3:
# a pair's last tile of 3 rows), 12 (A read in place and B too); n = 40 and 50 (a narrower
# last sliver: through the update)
OUT_CASES = [(64, 50, 40), (128, 256, 512), (70, 33, 48), (130, 700, 64), (12, 40, 100),
             (13, 40, 48), (127, 300, 32), (128, 33, 50)]
PAD = 64


def padded(x, cols):
    """x with zero columns up to `cols`."""
    out = np.zeros((x.shape[0], cols), x.dtype)
    out[:, :x.shape[1]] = x
    return out


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("layout_a", ["contiguous", "transposed"])
@pytest.mark.parametrize("layout_b", ["contiguous", "transposed"])
def test_narrow_n_stored_transposed(case, layout_a, layout_b, restore_threads):
    m, k, n = case
    a, b = rand((m, k), 200), rand((k, n), 201)
    row, s = rand((n,), 202), rand((m, n), 203)
    exp = a.astype(np.float64) @ b.astype(np.float64)
    aa, bb, bp = operand(a, layout_a), operand(b, layout_b), operand(padded(b, PAD), layout_b)
    for nt in (1, 2):
        ptl.set_num_threads(nt)
        for alpha, beta in ((1, 0), (3, 0), (1, 1), (-2, 0.5)):
            for src in (row, s):
                r = ptl.addmm(ptl.tensor(src), aa, bb, beta=beta, alpha=alpha)
                wide = np.broadcast_to(src, (m, n))
                ref = ptl.addmm(ptl.tensor(padded(wide, PAD)), aa, bp, beta=beta, alpha=alpha)
                close(r, beta * wide.astype(np.float64) + alpha * exp, k, np.float32)
                assert np.array_equal(bits(r), bits(ref)[:, :n]), (alpha, beta, nt)
        r = ptl.mm(aa, bb)
        close(r, exp, k, np.float32)
        assert np.array_equal(bits(r), bits(ptl.mm(aa, bp))[:, :n]), nt
        c = ptl.tensor(s)
        c.addmm_(aa, bb)
        ref = ptl.tensor(padded(s, PAD))
        ref.addmm_(aa, bp)
        close(c, s.astype(np.float64) + exp, k, np.float32)
        assert np.array_equal(bits(c), bits(ref)[:, :n]), nt


@pytest.mark.parametrize("case", OUT_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_out_transposed(case, dtype, restore_threads):
    m, k, n = case
    a, b, s = rand((m, k), 210, dtype), rand((k, n), 211, dtype), rand((m, n), 212, dtype)
    exp = a.astype(np.float64) @ b.astype(np.float64)
    tdtype = ptl.float32 if dtype == np.float32 else ptl.float64
    for nt in (1, 2):
        ptl.set_num_threads(nt)
        ref = bits(ptl.mm(ptl.tensor(a), ptl.tensor(b)))
        close(ptl.tensor(ref), exp, k, dtype)
        out = ptl.empty((n, m), dtype=tdtype).t()
        ptl.mm(ptl.tensor(a), ptl.tensor(b), out=out)
        assert np.array_equal(bits(out), ref), nt
        c = ptl.tensor(np.ascontiguousarray(s.T)).t()
        c.addmm_(ptl.tensor(a), ptl.tensor(b), beta=0.5, alpha=-2)
        rc = ptl.tensor(s)
        rc.addmm_(ptl.tensor(a), ptl.tensor(b), beta=0.5, alpha=-2)
        close(c, 0.5 * s.astype(np.float64) - 2 * exp, k, dtype)
        assert np.array_equal(bits(c), bits(rc)), nt
