"""float32 products in float32 lanes (reduce_prod.c, Note [Float32 products]): the bits of
the lane order (value i of a run into lane i % 64, the lanes folded pairwise) for contiguous
runs (every length to 200: the last partial group of 8, runs below 8), many runs at once,
strided runs (1024-value blocks), columns (prod(0): row r into lane r % 64 of its column;
blocks of 128, 96 or 48 columns, the last shifted left, then 32 and 8, the lanes a row at a
time below 8; lanes l and l + 32 in registers, rows past R skipped; up to 64 rows folded in
registers, 16 columns a step; from 16 rows sharing L1 sets, through a stage of 256 columns)
and a whole reduction's chunks, at and across each of those sizes, on 1 and 2 threads and
on the AVX2 and portable capabilities; the error against float64 within the bound of one
rounding a multiply (PyTorch's and NumPy's float32 products round as often); zeros,
infinities and NaN; 0-dim, size-0, expanded and non-contiguous inputs; the error paths."""
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import assert_raises_like_torch, num_threads, rerun_with_capability

LANES = 64
GRAIN = 32768   # c10/parallel.h PTL_GRAIN_SIZE (test_size_thresholds checks it)
RUN_LENGTHS = [0, 1, 7, 8, 63, 64, 65, 127, 128, 129, 1000, 1023, 1024, 1025, 2049,
               2 * GRAIN - 1, 2 * GRAIN, 2 * GRAIN + 64 * 3 + 5]


def run_product(v):
    """The float32 product of the run v in the lane order."""
    v = np.asarray(v, np.float32)
    lanes = np.ones(LANES, np.float32)
    with np.errstate(all="ignore"):
        for i in range(0, len(v), LANES):
            g = v[i:i + LANES]
            lanes[:len(g)] *= g
        w = LANES // 2
        while w >= 1:
            lanes[:w] *= lanes[w:2 * w]
            w //= 2
    return lanes[0]


def whole_product(v):
    """A whole reduction: one run, or from 2 GRAIN values min(R / GRAIN, 64) chunks of equal
    length (the last shorter) whatever the thread count, their products multiplied in double
    in order and rounded once."""
    R = len(v)
    if R < 2 * GRAIN:
        return run_product(v)
    chunk = -(-R // min(R // GRAIN, 64))
    acc = 1.0
    for c in range(0, R, chunk):
        acc *= float(run_product(v[c:c + chunk]))
    return np.float32(acc)


def same(got, want):
    np.testing.assert_array_equal(got.numpy(), np.asarray(want, np.float32))


@pytest.mark.parametrize("threads", [1, 2])
def test_runs_bits_contiguous_strided_and_whole(threads):
    rng = np.random.default_rng(30)
    with num_threads(threads):
        for n in RUN_LENGTHS:
            a = (1 + rng.standard_normal(2 * n) / 64).astype(np.float32)
            t = ptl.tensor(a)
            same(t[:n].prod(), whole_product(a[:n]))
            same(t[1::2].prod(), whole_product(a[1::2]))
            if n <= 2049:
                x = ptl.tensor(a[:n].reshape(1, n))
                same(x.prod(1), [run_product(a[:n])])
                same(x.prod(-1, keepdim=True), [[run_product(a[:n])]])


@pytest.mark.parametrize("threads", [1, 2])
def test_rows_and_columns_bits(threads):
    rng = np.random.default_rng(31)
    with num_threads(threads):
        for shape in [(1, 40), (2, 16), (4, 17), (5, 63), (63, 64), (64, 65), (65, 129),
                      (200, 3), (130, 1000), (1000, 20), (3, 1025)]:
            a = (1 + rng.standard_normal(shape) / 16).astype(np.float32)
            t = ptl.tensor(a)
            for x, v in [(t, a), (t.t().contiguous().t(), a), (t[:, 1:], a[:, 1:]),
                         (t[::2], a[::2])]:
                same(x.prod(0), [run_product(v[:, k]) for k in range(v.shape[1])])
                same(x.prod(1), [run_product(v[k]) for k in range(v.shape[0])])
            b = (1 + rng.standard_normal((3,) + shape) / 16).astype(np.float32)
            same(ptl.tensor(b).prod(1),
                 [[run_product(s[:, k]) for k in range(shape[1])] for s in b])


@pytest.mark.parametrize("threads", [1, 2])
def test_error_against_float64_within_one_rounding_a_multiply(threads):
    rng = np.random.default_rng(32)
    with num_threads(threads):
        for n in [10, 1000, 5000]:
            a = (1 + rng.standard_normal((50, n)) / 100).astype(np.float32)
            exact = np.prod(a.astype(np.float64), 1)
            bound = n * 2.0 ** -24 * np.abs(exact)
            for got in [ptl.tensor(a).prod(1), ptl.tensor(a.T.copy()).prod(0)]:
                err = np.abs(got.numpy().astype(np.float64) - exact)
                assert np.all(err <= bound)


def test_zeros_infinities_nan():
    v = np.array([2.0, 0.5, np.inf, 0.0, 3.0, np.nan, -1.0] * 19, np.float32)
    t = ptl.tensor(v)
    same(t.prod(), run_product(v))
    assert np.isnan(t.prod().item())
    assert t[:3].prod().item() == np.inf
    assert np.isnan(t[:4].prod().item())           # inf * 0
    assert t[3:5].prod().item() == 0.0
    neg_zero = ptl.tensor(np.array([-0.0] + [1.0] * 70, np.float32)).prod().item()
    assert neg_zero == 0.0 and np.signbit(neg_zero)
    big = ptl.tensor(np.full(200, 1e30, np.float32))
    assert big.prod().item() == np.inf
    same(big.view(2, 100).prod(0), np.full(100, np.inf))
    m = ptl.tensor(v[:130].reshape(2, 65))
    same(m.prod(1), [run_product(v[:65]), run_product(v[65:130])])
    same(m.t().contiguous().prod(0), [run_product(v[:65]), run_product(v[65:130])])


def test_0dim_size0_and_expanded():
    same(ptl.tensor(np.float32(2.5)).prod(), np.float32(2.5))
    same(ptl.tensor(np.float32(2.5)).prod(0), np.float32(2.5))
    same(ptl.zeros(0).prod(), np.float32(1))
    same(ptl.zeros(3, 0).prod(1), np.ones(3, np.float32))
    same(ptl.zeros(0, 70).prod(0), np.ones(70, np.float32))
    # stride 0 runs and columns: the same value over and over
    e = ptl.tensor([1.01], dtype=ptl.float32).expand(3000)
    same(e.prod(), whole_product(np.full(3000, 1.01, np.float32)))
    c = ptl.tensor(np.linspace(0.9, 1.1, 70).astype(np.float32)).expand(300, 70)
    col = np.linspace(0.9, 1.1, 70).astype(np.float32)
    same(c.prod(0), [run_product(np.full(300, col[k])) for k in range(70)])
    same(c.prod(1), [run_product(col)] * 300)


def test_errors():
    assert_raises_like_torch(lambda m: m.ones(2, 3).prod(2), IndexError,
                             "Dimension out of range (expected to be in range of [-2, 1], but "
                             "got 2)")
    assert_raises_like_torch(lambda m: m.ones(2, 3).prod(0, dtype=m.float32).prod(-3),
                             IndexError,
                             "Dimension out of range (expected to be in range of [-1, 0], but "
                             "got -3)")


def run_products(a):
    """run_product of each row of the 2-d array a."""
    a = np.asarray(a, np.float32)
    lanes = np.ones((a.shape[0], LANES), np.float32)
    with np.errstate(all="ignore"):
        for i in range(0, a.shape[1], LANES):
            g = a[:, i:i + LANES]
            lanes[:, :g.shape[1]] *= g
        w = LANES // 2
        while w >= 1:
            lanes[:, :w] *= lanes[:, w:2 * w]
            w //= 2
    return lanes[:, 0]


# the column kernel's block widths (128 with AVX-512, 96 from 128 rows and 48 below them
# with AVX2, then 32 and 8) and row counts (the 64 lanes, 32 partners, the AVX2 switch at 128)
COLUMN_WIDTHS = [1, 7, 8, 9, 31, 32, 33, 47, 48, 49, 95, 96, 97, 127, 128, 129, 200, 257]
COLUMN_ROWS = [1, 2, 31, 32, 33, 63, 64, 65, 95, 96, 97, 127, 128, 129, 191, 300]


@pytest.mark.parametrize("threads", [1, 2])
def test_column_blocks_and_rows_bits(threads):
    rng = np.random.default_rng(33)
    with num_threads(threads):
        for R in COLUMN_ROWS:
            a = (1 + rng.standard_normal((R, 257 + 5)) / 8).astype(np.float32)
            for n in COLUMN_WIDTHS:
                v = a[:, 3:3 + n]   # rows 262 values apart, an unaligned start
                same(ptl.tensor(a)[:, 3:3 + n].prod(0), run_products(v.T))
            same(ptl.tensor(a).prod(0), run_products(a.T))


# up to 64 rows (PROD_FEW_ROWS) each column's rows are folded in registers (from 17 rows, row
# l + 16 into lane l, from 33 row l + 32), 16 columns a step, the last 16 shifted left to end at the last
# column, stored as float32 straight into the output; reduce.c hands the kernel units of at
# most 2048 columns
FEW_ROWS = list(range(1, 19)) + [24, 31, 32, 33, 40, 48, 49, 63, 64, 65]
FEW_WIDTHS = [8, 15, 16, 17, 31, 32, 33, 100, 2047, 2048, 2049, 4100]


@pytest.mark.parametrize("threads", [1, 2])
def test_few_rows_bits(threads):
    rng = np.random.default_rng(35)
    with num_threads(threads):
        for R in FEW_ROWS:
            a = (1 + rng.standard_normal((2 * R, 4100 + 5)) / 8).astype(np.float32)
            t = ptl.tensor(a)
            for n in FEW_WIDTHS:
                v = a[:R, 3:3 + n]
                same(t[:R, 3:3 + n].prod(0), run_products(v.T))
                same(t[::2, 3:3 + n].prod(0), run_products(a[::2, 3:3 + n].T))
            b = a[:R, :40].reshape(R, 2, 20)
            same(ptl.tensor(b).prod(0), run_products(b.reshape(R, 40).T).reshape(2, 20))
            same(ptl.tensor(a[:R, :40].copy()).expand(3, R, 40).prod(1),
                 np.tile(run_products(a[:R, :40].T), (3, 1)))
    v = np.ones((5, 40), np.float32)
    v[1, 3], v[4, 3], v[2, 20], v[0, 39], v[3, 39] = np.inf, 0.0, np.nan, -0.0, -2.0
    got = ptl.tensor(v).prod(0).numpy()
    assert np.isnan(got[3]) and np.isnan(got[20])
    assert got[39] == 0.0 and not np.signbit(got[39])
    same(ptl.tensor(v).prod(0), run_products(v.T))



# rows 4096 bytes apart or any multiple (more than 8 of them in one L1 set: PROD_STAGE_ROWS =
# 16 rows on, up to PROD_FEW_ROWS = 64) go through the stage in blocks of PROD_STAGE_COLS =
# 256 columns, the last shifted left; rows 2048 bytes apart from 17 rows; 1040 floats apart
# never; narrower than 256 columns in registers
STAGED_ROWS = [8, 9, 15, 16, 17, 23, 24, 25, 31, 32, 33, 40, 47, 48, 49, 56, 63, 64, 65]
STAGED_WIDTHS = [16, 100, 255, 256, 257, 511, 512, 513, 1000, 2047, 2048, 2049, 4000]


@pytest.mark.parametrize("threads", [1, 2])
def test_staged_rows_sharing_l1_sets_bits(threads):
    rng = np.random.default_rng(36)
    with num_threads(threads):
        for R in STAGED_ROWS:
            for stride in [512, 1024, 1040, 4096]:
                a = (1 + rng.standard_normal((2 * R, stride)) / 8).astype(np.float32)
                t = ptl.tensor(a)
                for n in STAGED_WIDTHS:
                    if n + 3 > stride:
                        continue
                    same(t[:R, 3:3 + n].prod(0), run_products(a[:R, 3:3 + n].T))
                    same(t[:R, :n].prod(0, keepdim=True), [run_products(a[:R, :n].T)])
                same(t[::2, :stride].prod(0), run_products(a[::2].T))
            b = (1 + rng.standard_normal((R, 3, 1024)) / 8).astype(np.float32)
            same(ptl.tensor(b).prod(0), run_products(b.reshape(R, -1).T).reshape(3, 1024))
            same(ptl.tensor(b[:, 1]).expand(2, R, 1024).prod(1),
                 np.tile(run_products(b[:, 1].T), (2, 1)))


def test_staged_rows_special_values():
    # an inf, a zero, a NaN, -0 in rows of every staged lane level (l, l + 8, l + 16, l + 32,
    # l + 48), rows 4096 bytes apart
    v = np.ones((64, 1024), np.float32)
    v[5, 3], v[37, 3], v[63, 700], v[48, 7], v[8, 7] = np.inf, 0.0, np.nan, -0.0, -2.0
    v[16, 300], v[56, 301] = np.inf, -np.inf
    got = ptl.tensor(v).prod(0).numpy()
    assert np.isnan(got[3]) and np.isnan(got[700])
    assert got[7] == 0.0 and not np.signbit(got[7])
    assert got[300] == np.inf and got[301] == -np.inf
    same(ptl.tensor(v).prod(0), run_products(v.T))
    assert ptl.tensor(np.full((40, 1024), 1e30, np.float32)).prod(0).numpy()[0] == np.inf

@pytest.mark.parametrize("threads", [1, 2])
def test_many_runs_every_length_bits(threads):
    rng = np.random.default_rng(34)
    with num_threads(threads):
        for n in list(range(0, 200)) + [1000, 1023, 1025]:
            a = (1 + rng.standard_normal((37, n)) / 8).astype(np.float32)
            same(ptl.tensor(a).prod(1), run_products(a))
            same(ptl.tensor(a).t().prod(0), run_products(a))   # rows of a, as columns


def test_special_values_in_columns_and_tails():
    # an inf, a zero and a NaN in the partial group, and in a column's lane partner
    v = np.ones((70, 130), np.float32)
    v[5, 3], v[37, 3], v[69, 100] = np.inf, 0.0, np.nan
    v[64, 7], v[1, 7] = -0.0, -2.0
    got = ptl.tensor(v).prod(0).numpy()
    assert np.isnan(got[3]) and np.isnan(got[100])
    assert got[7] == 0.0 and not np.signbit(got[7])   # -0 * -2
    same(ptl.tensor(v).prod(0), run_products(v.T))
    same(ptl.tensor(v.T.copy()).prod(1), run_products(v.T))


@pytest.mark.parametrize("cap", ["avx2", "default"])
def test_capabilities(cap):
    rerun_with_capability(__file__, cap, "-k", "bits and not capabilities")


def zero_lane_rows(n, rng):
    """Rows of n values near 1 (n > 0), each with the 0s or the underflowing lanes of one case:
    a 0 in every position in turn; a lane that underflows (1e-20 three times, 64 apart, and
    1e30 once in the next lane: the product is near 1e-30) alone, after a lane with a 0, and
    before one"""
    rows = []
    for pos in range(n):
        r = (1 + rng.standard_normal(n) / 8).astype(np.float32)
        r[pos] = -0.0 if pos % 3 == 0 else 0.0
        rows.append(r)
    if n >= 3 * LANES + 2:
        for lane in (0, 1, 31, 32, 62):
            for zero_at in (None, lane - 1, lane + 2, n - 1):
                r = (1 + rng.standard_normal(n) / 8).astype(np.float32)
                r[lane:lane + 3 * LANES:LANES] = 1e-20
                r[lane + 1] = 1e30
                if zero_at is not None and zero_at >= 0 and zero_at not in (lane, lane + 1):
                    r[zero_at] = 0.0
                rows.append(r)
    return np.array(rows)


@pytest.mark.parametrize("threads", [1, 2])
def test_zero_found_in_its_lane(threads):
    # Note [Float32 products at the ends of the range]: a 0 product of a contiguous run is
    # checked in the values of its last lane that is 0; a lane that underflowed has no 0, and
    # then the run is searched or multiplied again exactly.  Every position of the 0 for the
    # lengths about the partial groups of 8 and 64, the blocks and the grain, against float64.
    rng = np.random.default_rng(35)
    with num_threads(threads):
        for n in list(range(1, 34)) + [63, 64, 65, 127, 128, 129, 200, 1000, 1023, 1025]:
            a = zero_lane_rows(n, rng)
            want = np.prod(a.astype(np.float64), axis=1).astype(np.float32)
            got = ptl.tensor(a).prod(1).numpy()
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=0)
            assert np.array_equal(got == 0, want == 0), n
            assert np.array_equal(np.signbit(got), np.signbit(want)), n
            for r in range(0, len(a), max(1, len(a) // 8)):   # a whole run, and strided
                np.testing.assert_allclose(ptl.tensor(a[r]).prod().item(), want[r], rtol=1e-5)
                x = ptl.tensor(np.repeat(a[r:r + 1], 2, 0).T.copy()).t()[0]
                np.testing.assert_allclose(x.prod().item(), want[r], rtol=1e-5)
        # many rows: the runs split at the grain (GRAIN values) among the threads
        for rows in (GRAIN // 100 - 1, GRAIN // 100, GRAIN // 100 + 1, 3 * GRAIN // 100):
            a = (1 + rng.standard_normal((rows, 100)) / 8).astype(np.float32)
            a[np.arange(rows), rng.integers(0, 100, rows)] = 0.0
            a[::7] = np.where(a[::7] == 0, 1.0, a[::7])
            want = np.prod(a.astype(np.float64), axis=1).astype(np.float32)
            np.testing.assert_allclose(ptl.tensor(a).prod(1).numpy(), want, rtol=1e-5, atol=0)


# runs of up to 128 values (PROD_SHORT_RUN) take a loop for their length (below 8) or for
# their count of vectors (8 to 128), and are checked for values that left the normal range
# 256 runs at a time (PROD_SHORT_CHECK); the runs split among threads from 2 GRAIN values
SHORT_LENGTHS = [0, 1, 2, 5, 7, 8, 9, 15, 16, 17, 33, 63, 64, 65, 100, 120, 127, 128, 129]
SHORT_RUNS = [1, 255, 256, 257, 513]


@pytest.mark.parametrize("threads", [1, 2])
def test_short_runs_bits_across_checks_and_threads(threads):
    rng = np.random.default_rng(37)
    with num_threads(threads):
        for n in SHORT_LENGTHS:
            for rows in SHORT_RUNS + [2 * GRAIN // max(n, 1) + 3]:
                a = (1 + rng.standard_normal((rows, n)) / 8).astype(np.float32)
                same(ptl.tensor(a).prod(1), run_products(a))
                if n > 1:
                    same(ptl.tensor(a)[:, 1:].prod(1), run_products(a[:, 1:]))


@pytest.mark.parametrize("threads", [1, 2])
def test_short_runs_special_values_in_some_runs(threads):
    # in a few runs of each block of 256: a lane that overflows (2^100 twice, in the lanes the
    # fold multiplies first) beside two values of 2^-100, so that the product is near 1; a 0,
    # a -0, an inf, a NaN, a 0 times an inf, and 2^-100 everywhere (0 without a 0 value); the
    # other runs are plain
    rng = np.random.default_rng(38)
    hi, lo = np.float32(2.0 ** 100), np.float32(2.0 ** -100)
    with num_threads(threads):
        for n in [4, 5, 7, 8, 9, 16, 31, 40, 64, 65, 100, 128]:
            a = (1 + rng.standard_normal((700, n)) / 8).astype(np.float32)
            far = min(32, 1 << (n - 1).bit_length() - 1)   # the largest power of 2 below n
            lows = [k for k in range(1, n) if k != far][:2]
            for r in (3, 300, 699):
                a[r, [0, far]] = hi
                a[r, lows] = lo
            a[10, n - 1], a[11, n // 2], a[12, 0], a[13, n - 1] = 0.0, -0.0, np.inf, np.nan
            a[14, 0], a[14, n - 1] = 0.0, -np.inf
            a[15, :] = lo
            with np.errstate(invalid="ignore"):
                want = np.prod(a.astype(np.float64), 1).astype(np.float32)
            got = ptl.tensor(a).prod(1).numpy()
            np.testing.assert_allclose(got, want, rtol=2e-6, atol=0)
            assert np.array_equal(np.signbit(got), np.signbit(want)), n
            assert all(np.isfinite(got[[3, 300, 699]])) and got[15] == 0.0, n
            assert np.isnan(got[13]) and np.isnan(got[14]), n


@pytest.mark.parametrize("threads", [1, 2])
def test_few_rows_special_values_in_wide_columns(threads):
    # up to 64 rows the products of all the columns are checked at once for one that left the
    # normal range, then those columns one at a time: an inf, a 0, a NaN, a 0 times an inf, a
    # column whose lanes overflow where its product does not, and one that underflows to 0
    rng = np.random.default_rng(39)
    hi, lo = np.float32(2.0 ** 100), np.float32(2.0 ** -100)
    with num_threads(threads):
        for R in [2, 3, 8, 17, 64]:
            a = (1 + rng.standard_normal((R, 3000)) / 8).astype(np.float32)
            a[0, 5], a[R - 1, 6], a[R // 2, 2999] = np.inf, 0, np.nan
            a[0, 7], a[R - 1, 7] = 0, -np.inf
            a[:, 100] = lo
            if R >= 4:   # rows 0 and far are the first pair the fold multiplies
                far = min(32, 1 << (R - 1).bit_length() - 1)
                a[[0, far], 200] = hi
                a[[k for k in range(1, R) if k != far][:2], 200] = lo
            with np.errstate(invalid="ignore"):
                want = np.prod(a.astype(np.float64), 0).astype(np.float32)
            got = ptl.tensor(a).prod(0).numpy()
            np.testing.assert_allclose(got, want, rtol=2e-6, atol=0)
            assert np.array_equal(np.signbit(got), np.signbit(want)), R
            assert got[100] == 0.0 and np.isnan(got[7]) and np.isnan(got[2999]), R


def lanes_overflow_column(R):
    """A column of R >= 4 rows whose exact product is 1 but whose lanes overflow: 2^100 in
    rows 0 and far (the first pair the fold multiplies), 2^-100 in two other rows"""
    c = np.ones(R, np.float32)
    far = min(32, 1 << (R - 1).bit_length() - 1)
    c[[0, far]] = 2.0 ** 100
    c[[k for k in range(1, R) if k != far][:2]] = 2.0 ** -100
    return c


@pytest.mark.parametrize("threads", [1, 2])
def test_few_rows_check_fused_into_every_step(threads):
    # the normal-range check rides on the pass that makes the products (16 columns a step,
    # the last step shifted left to end at the last column; the stage's blocks of 256): one
    # column whose lanes overflow, in each position in turn, is found and multiplied again
    rng = np.random.default_rng(41)
    with num_threads(threads):
        for R, stride, widths in [(4, 64, [16, 17, 31, 32, 33, 47]), (5, 64, [16, 40]),
                                  (16, 1024, [256, 257, 300]), (64, 1024, [256, 513])]:
            a = (1 + rng.standard_normal((R, stride)) / 64).astype(np.float32)
            for n in widths:
                ks = range(n) if n <= 64 else sorted({k % n for k in (0, 15, 16, 255, 256,
                                                                       n - 17, n - 16, n - 1,
                                                                       n // 2)})
                for k in ks:
                    b = a.copy()
                    b[:, k] = lanes_overflow_column(R)
                    got = ptl.tensor(b)[:, :n].prod(0).numpy()
                    want = run_products(b[:, :n].T)
                    want[k] = 1
                    np.testing.assert_array_equal(got, want, err_msg=f"R {R} n {n} k {k}")
