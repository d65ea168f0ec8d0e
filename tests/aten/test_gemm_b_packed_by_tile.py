"""A row-major B packed by the first A sliver's tile that meets each of its slivers (gemm.c,
Note [GEMM B packed by its first tile]; the AVX2 engine): a sliver packed just before use
(one A block) or a block packed once (several A blocks, the first one's pass), for a packed
A, a row-major A read in place, a transposed one read in place and one packed by its own
first tiles (Note [GEMM transposed A packed by its first tiles]).  Against NumPy in float64
at, below and above each threshold, and the bits of the same product with B transposed or
column-strided (packed before use) on 1 and 2 threads, as mm, addmm, into C in place and
into a transposed C.  The file reruns itself under PTL_CPU_CAPABILITY=avx2 and =default (no
tile: always packed)."""

import numpy as np
import pytest

import pytorchlite as ptl
from gemm_operands import bits, close, operand, rand
from helpers import capability_reruns

test_lower_capabilities = capability_reruns(__file__)


def a_operand(a, layout):
    """A row-major (read in place up to 16 B slivers), transposed with 128 floats between its
    k steps (read in place on AVX2; m when A is wider) or 512 (packed by its first tiles),
    or column-strided (packed before the tiles)."""
    if layout in ("t128", "t512"):
        m, k = a.shape
        base = np.zeros((k, max(m, int(layout[1:]))), a.dtype)
        base[:, :m] = a.T
        return ptl.tensor(base)[:, :m].t()
    return operand(a, layout)


# (m, k, n): m = 64 (B read in place when a K block of it spans at most 32 KiB), 65 and 66
# (one A block: slivers packed just before use), 70 (a last 4-row pair), 71 (a last sliver of 5 rows), 144 and 145 across
# the A block (145: two blocks, B packed once), 300 (three); n = 8 (one narrow sliver: packed
# before use), 16 (one whole sliver), 17 and 40 (a narrower last sliver packed before use),
# 256 and 272 across the 16 slivers of A read in place; k = 1, 33 (past the small-K rule), 700
# (two K blocks; float64 three); B rows of 1024 (a K block of 40 rows spans 160 KiB): float32
# reads B in place up to m = 12 and packs it from 13 (8: a 4-row pair first), k = 10 (under
# the small-K rule's 32 rows, but a K block over 32 KiB).
CASES = [(64, 50, 40), (65, 50, 40), (66, 50, 16), (70, 50, 17), (71, 50, 40), (144, 50, 40),
         (145, 50, 40), (300, 700, 40), (66, 50, 8), (66, 1, 40), (145, 33, 40),
         (130, 40, 256), (130, 40, 272), (128, 256, 512), (1024, 512, 128), (12, 40, 1024),
         (13, 40, 1024), (14, 40, 1024), (64, 40, 1024), (64, 10, 1024), (8, 40, 1024)]
LAYOUTS = ["contiguous", "strided", "t128", "t512"]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_b_packed_by_first_tile(case, dtype, restore_threads):
    m, k, n = case
    a, b = rand((m, k), 100, dtype), rand((k, n), 101, dtype)
    row = rand((n,), 102, dtype)
    exp = a.astype(np.float64) @ b.astype(np.float64)
    tdtype = ptl.float32 if dtype == np.float32 else ptl.float64
    for nt in (1, 2):
        ptl.set_num_threads(nt)
        ref = bits(ptl.mm(operand(a, "strided"), operand(b, "strided")))
        close(ptl.tensor(ref), exp, k, dtype)
        for la in LAYOUTS:
            aa = a_operand(a, la)
            for lb in ("contiguous", "transposed"):
                assert np.array_equal(bits(ptl.mm(aa, operand(b, lb))), ref), (la, lb, nt)
            out = ptl.empty((n, m), dtype=tdtype).t()
            ptl.mm(aa, ptl.tensor(b), out=out)
            assert np.array_equal(bits(out), ref), (la, nt)
            r = ptl.addmm(ptl.tensor(row), aa, ptl.tensor(b), beta=0.5, alpha=-2)
            flip = ptl.addmm(ptl.tensor(row), aa, operand(b, "transposed"), beta=0.5,
                             alpha=-2)
            close(r, 0.5 * row.astype(np.float64) - 2 * exp, k, dtype)
            assert np.array_equal(bits(r), bits(flip)), (la, nt)
        c = ptl.tensor(np.broadcast_to(row, (m, n)).copy())
        c.addmm_(a_operand(a, "t512"), ptl.tensor(b))
        close(c, row.astype(np.float64) + exp, k, dtype)
