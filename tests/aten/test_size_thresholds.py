"""Every kernel whose blocking, threading or splitting depends on sizes, tested just below, at
and just above each threshold (and with several blocks plus a tail), with contiguous,
transposed and strided operands where the kernel has a strided path, in float64 and float32
(exactly for integers), on 1 and 2 threads, against NumPy in float64.  Where the code says a
result does not depend on the thread count (Note [GEMM blocking] and [GEMM K split],
Note [Philox streams], Note [Layer norm rows]), 1 and 2 threads must give the same bits; the
row-wise kernels whose rows never straddle a task are held to that too.  Elementwise
results are compared with NumPy only: float32 gelu and silu send whole 16- / 8-element
blocks holding a very negative x, and each task's tail, through the portable loop, so their
last bits depend on where a task starts.  The conv2d weight gradient across its chunks:
tests/test_conv_weight_grad_blocking.py.

c10/parallel.c ptl_parallel_for: a range below 2 * grain runs inline, else at most
    num_threads chunks of ceil(n / chunks) -> every split below crosses 2 * grain.
c10/parallel.h PTL_GRAIN_SIZE = 32768 (test_threshold_constants reads every constant here
    back from the C source).
aten/tensor_iterator.c ptl_iter_run: inline below GRAIN, split by GRAIN from 2 GRAIN, a
    chunk may start inside a coalesced row; no 32/64-bit or contiguous switch of its own
    (the loops pick contiguous / broadcast-scalar / strided forms) -> numel 2 GRAIN - 1,
    2 GRAIN, 2 GRAIN + 1; 256 x 256 and 263 x 251 contiguous, transposed and broadcast.
gemm_kernels.c engines (MR, NR, KC, MC, NC, rows reading B in place) f4 (6, 16, 512, 144, 2048),
    f8 (6, 8, 256, 72, 1024), i8 (4, 8, 256, 64, 1024), on AVX2 f4 and f8 with B in place
    up to 64 rows, on AVX-512 f4 (12, 32, 512, 192, 1024, any) and f8 (12, 16, 256, 96,
    1024, 24) -> partial / whole tiles (m, n = MR - 1 / MR / 2 MR + 1 ...),
    k = KC, 5/4 KC (one K block), 5/4 KC + 1, 3 KC + 1, m = MC, MC + 1, 2 MC + 7,
    n = NC, NC + 1, 2 NC + 3; layouts nn, tn, nt, tt, and a column stride of 2.  This file
    runs the engine of this CPU (AVX-512 cases as well, on any CPU);
    tests/aten/test_gemm.py reruns the AVX2 and portable ones at their edges.
gemm_kernels.c pack_f4_avx2 (transposed float32: kc >= 8; a last sliver of fewer rows too,
    its padding zeros: tests/aten/test_gemm.py test_partial_slivers) -> k = 7, 8, 9;
    a transposed A (or row-major B) PACK_KROWS = 16 rows of K at a time, whole vectors
    spilling into the next row where the row stride leaves room -> k = 15, 16, 17, 33 with
    A transposed (row stride m: the last sliver copied exactly) and strided.
gemm_kernels.c pack_rows8 stores a row-major A's 6 or 4 rows a column as whole vectors, but
    each sliver's last column of its kc8 -> m = 6 at k = 16, m = 8 at k = 8, m = 14 at k = 9.
gemm.c Note [GEMM narrow N] (transposed when that saves a fifth of the tiles' work) and the
    AVX-512 tiles of 4, 8 and 10 rows: tests/aten/test_gemm.py test_narrow_n_transposed
    (m = 8 / 9, 24 / 25 at n = 10 on AVX-512) and test_partial_slivers.
gemm.c a last MR + 1 or MR + 2 rows of an A block as two 4-row slivers (AVX2's pair4) ->
    m = 7, 8 (no 6-row sliver), 9 (not paired), 13, 14, 15, and MC + 1 (its second block
    of 67 rows ends with 7).
gemm.c rows reading B in place (direct_b_max_m: AVX2 float32 12, float64 64; 24 on AVX-512
    float64, any height on AVX-512 float32 up to an L2 span; and up to 64 rows when a K block
    of B spans at most GEMM_DIRECT_B_SPAN = 32 KB) -> m = 64 (n = 48, 47), 65; m = 200 at n =
    200; float32 m = 12, 13 at B rows of 1024 (tests/aten/test_gemm_b_packed_by_tile.py).
gemm.c Note [GEMM direct A]: A read in place by products of at most GEMM_DIRECT_A_SLIVERS = 16
    B slivers (512 columns on AVX-512, 256 on AVX2) -> tests/aten/test_gemm.py test_direct_a
    and tests/aten/test_gemm_transposed_a.py (n = 16 NR, 17 NR, a narrow last sliver).
gemm_impl.h GEMM_PARALLEL_FLOPS = 2**18 -> gemv rows * k at it; gemm.c GEMM_THREAD_MACS =
    2**20 a thread -> 128 x 128 x 127 (one thread), 128 x 128 x 128 (two), 192 x 128 x 128 (three).
gemm.c GEMM_KSPLIT = 4096 (k >= 2 GEMM_KSPLIT), GEMM_KSPLIT_MAX_CHUNKS = 32,
    GEMM_KSPLIT_MAX_MN = 256 * 256 -> k = 8191, 8192, 8193, 131072, 131077;
    m x n = 256 x 256 (split) and 256 x 257 (blocked) at k = 8192.
gemm_gemv.c gemv_rows / gemv_cols, GEMV_COL_BLOCK = 1024 -> rows 1023, 1024, 1025, 2051 at
    k = 256 (crossing GEMM_PARALLEL_FLOPS too), A row-major, transposed, strided, the
    vector in place or packed; A @ x and x @ B.
gemm.c gemm_run batches: grain GEMM_PARALLEL_FLOPS / flops for small products, one matrix a
    thread when batch % threads == 0 or batch >= 4 threads, else threaded products ->
    bmm batches 129 / 130 of 16^3, 2, 3, 8 of 64^3, K-split and matrix-vector batches,
    stride-0 B; einsum through the same product; addmm's beta source on every path.
reduce.c reduce_run: column reductions (kept contiguous dim >= 16, COL_BLOCK = 2048 columns a
    unit, narrower to feed every thread, float32 rows COL_GROUP = 32 at a time) -> columns 15,
    16, 17, 100, 2047, 2048, 2049, 4101 x rows 2, 3, 31, 32, 33, 70, one and three outer blocks,
    for the sums and for the float extremes (amax/amin, argmax/argmin, max.dim, min.dim), prod
    and the 1- and 2-norms, with ties, NaN and infinities; one output and R >= 2 GRAIN: min(R /
    GRAIN, MAX_CHUNKS = 64, 4 threads) chunks combined in order (logsumexp: min(R / GRAIN, 64)
    on any thread count) -> R = 255, 256, 257 (BLOCK =
    256), 65535, 65536, 65537, 262147, contiguous and strided, every kind (sum, mean, prod,
    amax/amin, argmax/argmin with ties and NaN across chunks, var, std, norms, logsumexp,
    count_nonzero, all/any, aminmax, nansum, integer sums); many outputs: GRAIN / R + 1 outputs
    a task.
reduce.c scan_lines (cumsum, cumprod): GRAIN / len + 1 lines a task, RED_BLOCK pieces ->
    len 255, 256, 257, 513 along the last and the first (strided) dim.
unary.c DEFINE_AVX2_LOOP(_PD) (exp, log, sigmoid, tanh, erf: 8 / 4 lanes, masked tail),
    activation.c gelu (16 a step, blocks with x < -5.5 and the tail by the portable loop),
    gelu tanh, silu and their backwards -> n = 1, 3, 7, 8, 9, 15, 16, 17, 33, 65541,
    contiguous and strided.
nn.c softmax_run: rows of n in 8 (float32) / 4 (float64) lanes + tail, GRAIN / n + 1 rows
    a task; inner > 1 blocks by GRAIN / (n inner) + 1 -> n = 1, 3, 4, 5, 7, 8, 9, 15, 16,
    17, 33, forward and backward, softmax and log_softmax.  The forward and the backward
    with inner > 1 (and logsumexp over an outer dim) by columns, SM_COLS = 128 a unit, GRAIN / (n SM_COLS) + 1
    units a task, 8 / 16 float (4 / 8 double) lanes + a masked tail, SM_ROW_GROUP = 32 rows
    summed in the dtype -> inner 1, 3, 7, 8, 9, 15, 16, 17, 127, 128, 129, 300 x n = 1, 5,
    31, 32, 33, 67 with one and several units a task, specials in columns.
layer_norm.c ln_run: rows of N in 8 partial sums + tail, GRAIN / (N + 1) + 1 rows a task,
    weight / bias gradients by column blocks -> N = 1, 7, 8, 9, 17, 64 with just over
    2 grains of rows, forward and backward.
sort.c SMALL_LANE = 32 (insertion / radix sort), topk heap when k < n / 16, lanes
    GRAIN / len + 1 a task -> len 31, 32, 33, 300 with ties and NaN, stable, both orders,
    contiguous and strided; topk of 160 with k = 1, 9, 10, 11, 160.
random.c RANDOM_GRAIN = GRAIN / 8 (fill), RANDOM_GRAIN / (ncat + n) + 1 rows (multinomial)
    -> n = 8191, 8192, 8193, 8194, 8195, 24583: tasks starting inside a Philox block or a
    Box-Muller pair; rand, randn, randint, bernoulli, exponential_, strided normal_ and
    uniform_; the same bits on 1 and 2 threads, and a draw is a prefix of a longer one.
conv.c chunk_of: COL_BUDGET = 2**24 column elements -> conv2d forward and input gradient
    with 1 sample per chunk, chunks of 2 + a short last one, two whole chunks, one chunk;
    run_jobs (GRAIN / (kvol * cols) + 1 planes) is crossed by the same cases.  (On AVX-512
    the float32 cases run conv_packed.c instead; its thresholds: test_conv_packed.py.)
pool.c run_planes: GRAIN / (input + output plane) + 1 planes -> 51, 52, 53 planes of
    32 x 32, max and avg pooling, forward and backward.
factory.c set_range (arange, linspace), optim.c fused SGD / Adam steps: GRAIN elements a
    task -> 65535, 65536, 65537, 65539.
linalg_norm.c cdist_run: GRAIN / (R M + 1) rows a task -> 203, 204 rows.

Not crossed here: rnn.c row_grain (LSTM / GRU / RNN cell rows, pointwise per row; the
recurrent layer's steps cross it and the GEMM's row thresholds on 1 and 2 threads in
tests/nn/test_rnn.py test_layer_sizes_and_threads), rnn.c LAYER_PART_ROWS and
LAYER_SPLIT_MACS (the layer's rows cut between threads: test_layer_row_split there), resample.c
run_maps, grid_sampler.c (tests/test_grid_sample_double.py), svd.c batches, nn.c embedding
backward (serial, no size switch), index.c / einsum.c (no size switch of their own; einsum
reduces to the bmm above) and the GIL-release thresholds (they change no result)."""
import functools
import math
import os
import re

import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn.functional as F
from helpers import ROOT

SRC = os.path.join(ROOT, "src")

# The thresholds as this file assumes them; test_threshold_constants reads each one back
# from the C source, so retuning a constant fails here instead of silently leaving every
# size below on one side of it.
GRAIN = 32768                      # c10/parallel.h PTL_GRAIN_SIZE
COL_BUDGET = 1 << 24               # aten/native/conv.c
GEMM_DIRECT_B_SPAN = 32 * 1024     # aten/native/gemm.c
GEMM_DIRECT_B_L2_SPAN = 512 * 1024  # test_gemm_in_place.py's ONE_A_BLOCK_CASES cross these two
GEMM_ONE_A_BLOCK_BYTES = 1024 * 1024
GEMM_DIRECT_A_SLIVERS = 16
GEMM_PARALLEL_FLOPS = 1 << 18
GEMM_THREAD_MACS = 1 << 20
GEMV_COL_BLOCK = 1024
SM_COLS = 128                      # aten/native/nn.c: softmax columns a work unit
SM_ROW_GROUP = 32                  # rows a column sums in its dtype before the double add
GEMM_KSPLIT = 4096
GEMM_KSPLIT_MAX_CHUNKS = 32
GEMM_KSPLIT_MAX_MN = 256 * 256
PACK_KROWS = 16                    # aten/native/gemm_kernels.c
# (MR, NR, KC, MC, NC, rows reading B in place) of each GEMM engine, with the prefix of its
# MR / NR macros
ENGINE = {"f4": ("F4", 6, 16, 512, 144, 2048, 0), "f4_avx2": ("F4", 6, 16, 512, 144, 2048, 12),
          "f4_avx512": ("F4_AVX512", 12, 32, 512, 192, 1024, "INT64_MAX"),
          "f8": ("F8", 6, 8, 256, 72, 1024, 0), "f8_avx2": ("F8", 6, 8, 256, 72, 1024, 64),
          "f8_avx512": ("F8_AVX512", 12, 16, 256, 96, 1024, 24),
          "i8": ("I8", 4, 8, 256, 64, 1024, 0)}
RED_BLOCK = 256                    # aten/native/reduce.c BLOCK
RED_MAX_CHUNKS = 64
RED_COL_BLOCK = 2048
RED_COL_GROUP = 32
SMALL_LANE = 32                    # aten/native/sort.c
RANDOM_GRAIN = GRAIN // 8          # aten/native/random.c

FLOATS = [ptl.float64, ptl.float32]


def c_source(rel):
    with open(os.path.join(SRC, rel)) as f:
        return f.read()


def c_define(rel, name, names=None):
    """The integer value of `#define name expr` in src/<rel>: expr may use integer literals,
    + - * / << ( ) and the names given (their values)."""
    m = re.search(r"^#define\s+%s\s+(.+?)\s*(?:/\*.*)?$" % name, c_source(rel), re.M)
    assert m, f"#define {name} not found in src/{rel}"
    expr = m.group(1)
    for k, v in (names or {}).items():
        expr = re.sub(r"\b%s\b" % k, str(v), expr)
    expr = re.sub(r"\(int64_t\)", "", expr).replace("/", "//")
    assert re.fullmatch(r"[\d\s()+\-*/<]+", expr), f"{name}: cannot evaluate {expr!r}"
    return eval(expr)


def test_threshold_constants():
    assert c_define("c10/parallel.h", "PTL_GRAIN_SIZE") == GRAIN
    assert c_define("aten/native/conv.c", "COL_BUDGET") == COL_BUDGET
    # the channels-last convolution's tiles (test_conv_channels_last.py crosses them)
    assert c_define("aten/native/conv_nhwc.c", "NHWC_TILE_FLOATS") == 16384
    assert c_define("aten/native/conv_nhwc.c", "NHWC_WGRAD_FLOATS") == 1 << 20
    assert c_define("aten/native/conv_nhwc.c", "FEW_MAX_CI") == 8
    assert c_define("aten/native/conv_nhwc.c", "FEW_MAX_NV") == 4
    assert c_define("aten/native/conv_nhwc.c", "FEW_TASK_ROWS") == 8
    assert c_define("aten/native/conv_nhwc.c", "FEW2_MAX_NV") == 2
    gemm = "aten/native/gemm.c"
    assert c_define(gemm, "GEMM_DIRECT_B_SPAN") == GEMM_DIRECT_B_SPAN
    assert c_define(gemm, "GEMM_DIRECT_B_L2_SPAN") == GEMM_DIRECT_B_L2_SPAN
    assert c_define(gemm, "GEMM_ONE_A_BLOCK_BYTES") == GEMM_ONE_A_BLOCK_BYTES
    assert c_define(gemm, "GEMM_DIRECT_A_SLIVERS") == GEMM_DIRECT_A_SLIVERS
    assert c_define("aten/native/gemm_impl.h", "GEMM_PARALLEL_FLOPS") == GEMM_PARALLEL_FLOPS
    assert c_define(gemm, "GEMM_THREAD_MACS") == GEMM_THREAD_MACS
    assert c_define("aten/native/gemm_gemv.c", "GEMV_COL_BLOCK") == GEMV_COL_BLOCK
    assert c_define(gemm, "GEMM_KSPLIT") == GEMM_KSPLIT
    assert c_define(gemm, "GEMM_KSPLIT_MAX_CHUNKS") == GEMM_KSPLIT_MAX_CHUNKS
    assert c_define(gemm, "GEMM_KSPLIT_MAX_MN") == GEMM_KSPLIT_MAX_MN
    kernels_c = "aten/native/gemm_kernels.c"   # the engines' table
    assert c_define(kernels_c, "PACK_KROWS") == PACK_KROWS
    text = c_source(kernels_c)
    for tag, (up, mr, nr, kc, mc, nc, direct) in ENGINE.items():
        assert (c_define(kernels_c, f"{up}_MR"), c_define(kernels_c, f"{up}_NR")) == (mr, nr)
        m = re.search(r"engine_%s = \{\s*%s_MR, %s_NR, (\d+), (\d+), (\d+), (\d+|INT64_MAX),"
                      % (tag, up, up), text)
        assert m, tag
        found = tuple(int(g) if g.isdigit() else g for g in m.groups())
        assert found == (kc, mc, nc, direct), tag
    red = "aten/native/reduce.c"
    assert c_define(red, "BLOCK") == RED_BLOCK
    assert c_define(red, "MAX_CHUNKS") == RED_MAX_CHUNKS
    kernels = "aten/native/reduce_kernels.h"
    assert c_define(kernels, "PTL_RED_COL_BLOCK") == RED_COL_BLOCK
    assert c_define(kernels, "PTL_RED_COL_GROUP") == RED_COL_GROUP
    # test_reduce.py's lane order of float16/bfloat16 products
    assert c_define("aten/native/reduce_kernels.c", "LOWP_PROD_LANES") == 32
    # test_prod_f4_lanes.py's column kernels: rows in registers and the stage's sizes
    prod = "aten/native/reduce_prod.c"
    assert c_define(prod, "F4_PROD_LANES") == 64
    assert c_define(prod, "PROD_FEW_ROWS") == 64
    assert c_define(prod, "PROD_STAGE_ROWS") == 16
    assert c_define(prod, "PROD_STAGE_COLS") == 256
    # test_column_extremes_rows.py's rows in registers, row groups and column blocks
    cols = "aten/native/reduce_columns.c"
    assert c_define(cols, "EXTREME_FEW_ROWS") == 64
    assert c_define(cols, "EXTREME_GROUP") == 16
    assert c_define(cols, "EXTREME_COLS") == 2048
    assert c_define(cols, "F8_FEW_ROWS") == 16
    assert c_define("aten/native/nn.c", "SM_COLS") == SM_COLS
    assert c_define("aten/native/nn.c", "SM_ROW_GROUP") == SM_ROW_GROUP
    assert c_define("aten/native/sort.c", "SMALL_LANE") == SMALL_LANE
    assert "job->nsel < n / 16" in c_source("aten/native/sort.c")
    assert c_define("aten/native/random.c", "RANDOM_GRAIN", {"PTL_GRAIN_SIZE": GRAIN}) == \
        RANDOM_GRAIN
    # test_random_binomial.py's chi-square cases on both sides of BTRS's log k! memo
    assert c_define("aten/native/random_binomial.c", "BINOMIAL_MEMO") == 1024
    # Stirling's form of BTRS's and PTRS's exact tests from 2^24 on: test_random_binomial.py
    # draws at 2^24 - 1, 2^24 and 2^24 + 1, test_random.py's poisson at 2^24 - 1 and 2^24
    assert re.search(r"^#define BINOMIAL_STIRLING_COUNT 16777216\.0\b",
                     c_source("aten/native/random_binomial.c"), re.M)
    assert re.search(r"^#define PTL_POISSON_STIRLING_RATE 16777216\.0\b",
                     c_source("aten/distributions.h"), re.M)


# ---- helpers ----

def on_threads(fn, counts=(1, 2)):
    """[fn() on 1 thread, fn() on 2 threads]; the thread count is restored."""
    saved = ptl.get_num_threads()
    out = []
    try:
        for nt in counts:
            ptl.set_num_threads(nt)
            out.append(fn())
    finally:
        ptl.set_num_threads(saved)
    return out


def np_of(t):
    return np.array(t.detach().contiguous().numpy())


def assert_same_bits(a, b, what=""):
    """a (1 thread) and b (2 threads) hold the same bytes."""
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype, what
    ua = a.view(np.dtype(f"u{a.itemsize}")) if a.itemsize in (1, 2, 4, 8) else a
    ub = b.view(ua.dtype)
    bad = np.argwhere(ua != ub)
    assert bad.size == 0, f"{what}: 1 and 2 threads differ at {bad[:3].tolist()}"


def assert_near(got, expected, scale, tol, what=""):
    """|got - expected| <= tol * scale elementwise (scale: an array or a number); NaN must
    match NaN."""
    got = np.asarray(got, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    assert got.shape == expected.shape, (what, got.shape, expected.shape)
    nan = np.isnan(expected)
    assert np.array_equal(np.isnan(got), nan), f"{what}: NaN positions differ"
    err = np.where(nan, 0, np.abs(got - expected))
    bound = tol * np.broadcast_to(np.asarray(scale, dtype=np.float64), err.shape)
    bad = np.argwhere(err > bound)
    if bad.size:
        i = tuple(bad[0])
        raise AssertionError(f"{what}: at {i} got {got[i]!r}, expected {expected[i]!r} "
                             f"({len(bad)} of {err.size} off)")


def tol_of(dtype):
    return 1e-12 if dtype == ptl.float64 else 2e-6


def rounded(a, dtype):
    """a as dtype would hold it, back in float64 (the reference starts from the same values)."""
    return a.astype(np.float32).astype(np.float64) if dtype == ptl.float32 else a


# ---- GEMM (gemm.c): blocking, packing, B read in place, K split, gemv, batches ----

def operand(a, layout, dtype):
    """A pytorchlite view holding a's values: 'n' row-major, 't' a transposed view of a
    column-major copy, 's' every other column of a wider matrix (no unit stride)."""
    if layout == "n":
        return ptl.tensor(np.ascontiguousarray(a), dtype=dtype)
    if layout == "t":
        return ptl.tensor(np.ascontiguousarray(a.T), dtype=dtype).t()
    wide = np.zeros((a.shape[0], 2 * a.shape[1]), dtype=a.dtype)
    wide[:, ::2] = a
    return ptl.tensor(wide, dtype=dtype)[:, ::2]


def gemm_inputs(m, n, k, dtype, seed):
    gen = np.random.default_rng(seed)
    if dtype in (ptl.int64, ptl.int32):
        return gen.integers(-3, 4, (m, k)), gen.integers(-3, 4, (k, n))
    return (rounded(gen.standard_normal((m, k)), dtype),
            rounded(gen.standard_normal((k, n)), dtype))


def check_gemm(got, a, b, dtype, what):
    if dtype in (ptl.int64, ptl.int32):
        assert np.array_equal(got, a @ b), what
    else:
        assert_near(got, a @ b, np.abs(a) @ np.abs(b), 10 * tol_of(dtype), what)


def run_mm(m, n, k, dtype, layouts, seed=0):
    a, b = gemm_inputs(m, n, k, dtype, seed)
    for la, lb in layouts:
        ta, tb = operand(a, la, dtype), operand(b, lb, dtype)
        one, two = on_threads(lambda: np_of(ptl.mm(ta, tb)))
        what = f"mm {m}x{k} @ {k}x{n} {dtype} layouts {la}{lb}"
        check_gemm(one, a, b, dtype, what)
        assert_same_bits(one, two, what)


ALL_LAYOUTS = ["nn", "tn", "nt", "tt", "sn", "ns"]
F8 = ENGINE["f8"][1:]
F4 = ENGINE["f4"][1:]
I8 = ENGINE["i8"][1:]
F8X = ENGINE["f8_avx512"][1:]
F4X = ENGINE["f4_avx512"][1:]

# (m, n, k, layouts, what it crosses), for the float64 engine
GEMM_F8 = [
    (F8[0] - 1, F8[1] - 1, 3, ALL_LAYOUTS, "one partial MR x NR tile"),
    (F8[0], F8[1], F8[2], ALL_LAYOUTS, "one whole tile, k = KC"),
    (F8[0] + 1, F8[1] + 1, F8[2] + 1, ALL_LAYOUTS, "tile + tails, k = KC + 1 (one K block)"),
    (13, 17, F8[2] * 5 // 4, ["nn", "tt"], "k = 5/4 KC: still one K block"),
    (13, 17, F8[2] * 5 // 4 + 1, ALL_LAYOUTS, "k = 5/4 KC + 1: two K blocks"),
    (13, 17, 3 * F8[2] + 1, ["nn", "tn"], "four K blocks"),
    (7, 17, 40, ["nn", "tn", "nt"], "m = 7: two 4-row slivers (AVX2 pair4)"),
    (8, 17, 40, ["nn", "tn", "sn"], "m = 8: two whole 4-row slivers"),
    (14, 17, 40, ["nn", "tn"], "m = 6 + 8"),
    (F8[3], 24, 64, ["nn", "tt"], "m = MC: one A block"),
    (F8[3] + 1, 24, 64, ["nn", "tt"], "m = MC + 1: two A blocks"),
    (2 * F8[3] + 7, 40, 300, ["nn", "tn", "ns"], "three A blocks, two K blocks, tails"),
    (7, F8[4], 16, ["nn", "nt"], "n = NC"),
    (7, F8[4] + 1, 16, ["nn", "nt"], "n = NC + 1: two column blocks"),
    (7, 2 * F8[4] + 3, 16, ["nn"], "three column blocks"),
    (128, 128, 127, ["nn", "tt"], "just below two GEMM_THREAD_MACS: one thread"),
    (128, 128, 128, ["nn", "tt"], "two GEMM_THREAD_MACS: a rectangle per thread"),
    (F8X[0] - 1, F8X[1] - 1, 3, ["nn", "tt"], "one partial AVX-512 tile"),
    (F8X[0] + 1, F8X[1] + 1, 9, ["nn", "tn", "nt"], "AVX-512 tile + tails"),
    (F8X[3], 24, 64, ["nn", "tt"], "m = AVX-512 MC"),
    (F8X[3] + 1, 24, 64, ["nn", "tt"], "m = AVX-512 MC + 1"),
    (7, F8X[4] + 1, 16, ["nn", "nt"], "n = AVX-512 NC + 1"),
    (24, 40, 2 * GEMM_KSPLIT - 1, ["nn", "tt"], "k just below the K split"),
    (24, 40, 2 * GEMM_KSPLIT, ["nn", "tt", "sn"], "k = 2 GEMM_KSPLIT: two K chunks"),
    (24, 40, 2 * GEMM_KSPLIT + 1, ["nn"], "uneven K chunks"),
    (8, 9, GEMM_KSPLIT * GEMM_KSPLIT_MAX_CHUNKS, ["nn"], "the largest number of K chunks"),
    (8, 9, GEMM_KSPLIT * GEMM_KSPLIT_MAX_CHUNKS + 5, ["nt"], "chunks capped: longer chunks"),
    (256, 256, 2 * GEMM_KSPLIT, ["nn"], "m n = GEMM_KSPLIT_MAX_MN: K split"),
    (256, 257, 2 * GEMM_KSPLIT, ["nn"], "m n above GEMM_KSPLIT_MAX_MN: blocked"),
]

GEMM_F4 = [
    (F4[0] - 1, F4[1] - 1, 7, ALL_LAYOUTS, "partial tile, k < 8 (no AVX2 transpose packing)"),
    (F4[0], F4[1], 8, ALL_LAYOUTS, "one whole tile, k = 8"),
    (2 * F4[0] + 1, 2 * F4[1] + 1, 9, ALL_LAYOUTS, "whole tiles + tails, k = 9"),
    (13, 33, F4[2], ["nn", "tn", "nt"], "k = KC: one K block"),
    (13, 33, F4[2] * 5 // 4, ["nn", "tt", "sn"], "k = 5/4 KC: still one K block"),
    (13, 33, F4[2] * 5 // 4 + 1, ALL_LAYOUTS, "two K blocks"),
    (F4X[3] + 1, 33, 3 * F4[2] + 1, ["nn", "tn", "nt"], "two A blocks, four K blocks"),
    (64, 48, 40, ["nn", "tn", "nt"], "m = 64: B in place (AVX2, or a short B span)"),
    (64, 47, 40, ["nn"], "B in place, a narrower last sliver packed"),
    (65, 48, 40, ["nn", "nt"], "m above it: B packed"),
    (200, 200, 50, ["nn", "tn"], "AVX-512 float32 reads B in place at any height (40 KB; "
     "its L2-span limit: tests/aten/test_gemm_in_place.py)"),
    (F4X[0] - 1, F4X[1] - 1, 9, ["nn", "tt"], "one partial AVX-512 tile"),
    (2 * F4X[0] + 1, 2 * F4X[1] + 1, 9, ["nn", "tn", "nt"], "AVX-512 tiles + tails"),
    (F4X[3], 32, 30, ["nn", "tt"], "m = AVX-512 MC"),
    (F4X[3] + 1, 32, 30, ["nn", "tt"], "m = AVX-512 MC + 1"),
    (5, F4X[4] + 1, 9, ["nn", "nt"], "n = AVX-512 NC + 1"),
    (192, 128, 128, ["nn", "nt"], "three GEMM_THREAD_MACS"),
    (12, 20, PACK_KROWS - 1, ["tn", "sn"], "k = PACK_KROWS - 1: one short block of K rows"),
    (12, 20, PACK_KROWS, ["tn", "sn"], "k = PACK_KROWS"),
    (13, 20, PACK_KROWS + 1, ["tn", "sn", "nn"], "k = PACK_KROWS + 1, m = 6 + 7 (pair4)"),
    (14, 20, 2 * PACK_KROWS + 1, ["tn", "sn", "nn"], "three blocks of K rows, m = 6 + 8"),
    (6, 20, 16, ["nn", "ns"], "row-major A: 6-row columns stored as whole vectors, k = 16"),
    (8, 20, 8, ["nn"], "two 4-row slivers, k = 8: each last column stored exactly"),
    (14, 20, 9, ["nn"], "6 + 4 + 4 rows, k = 9: whole-vector columns, then the tail"),
    (7, 20, 40, ["nn", "tn", "nt"], "m = 7: two 4-row slivers (3 rows used), no 6-row one"),
    (8, 20, 40, ["nn", "tn", "ns"], "m = 8: two whole 4-row slivers"),
    (9, 20, 40, ["nn", "tn"], "m = 9: 6 + 3, not paired"),
    (15, 33, 40, ["nn", "tn"], "m = 15: 6 + 6 + 3, not paired"),
    (F4[3] + 1, 33, 300, ["nn", "tn", "nt"], "m = MC + 1: the second A block ends with 7"),
    (F4[3], 32, 30, ["nn", "tt"], "m = MC"),
    (F4[3] + 1, 32, 30, ["nn", "tt"], "m = MC + 1: two A blocks"),
    (5, F4[4], 9, ["nn", "nt"], "n = NC"),
    (5, F4[4] + 1, 9, ["nn", "nt"], "n = NC + 1"),
    (24, 40, 2 * GEMM_KSPLIT - 1, ["nn", "tt"], "k just below the K split"),
    (24, 40, 2 * GEMM_KSPLIT, ["nn", "tt"], "k = 2 GEMM_KSPLIT: two K chunks"),
    (8, 9, GEMM_KSPLIT * GEMM_KSPLIT_MAX_CHUNKS + 5, ["nn"], "chunks capped"),
    (256, 256, 2 * GEMM_KSPLIT, ["nn"], "m n = GEMM_KSPLIT_MAX_MN: K split"),
    (256, 257, 2 * GEMM_KSPLIT, ["nn"], "m n above GEMM_KSPLIT_MAX_MN: blocked"),
]

GEMM_I8 = [
    (I8[0] + 1, I8[1] + 1, I8[2] + 1, ALL_LAYOUTS, "tile tails, k = KC + 1"),
    (I8[3] + 1, 9, I8[2] * 5 // 4 + 1, ["nn", "tt"], "two A blocks, two K blocks"),
    (8, 9, 2 * GEMM_KSPLIT, ["nn"], "K split"),
]


@pytest.mark.parametrize("case", GEMM_F8, ids=[c[-1] for c in GEMM_F8])
def test_mm_float64_engine(case):
    m, n, k, layouts, _ = case
    run_mm(m, n, k, ptl.float64, layouts)


@pytest.mark.parametrize("case", GEMM_F4, ids=[c[-1] for c in GEMM_F4])
def test_mm_float32_engine(case):
    m, n, k, layouts, _ = case
    run_mm(m, n, k, ptl.float32, layouts)


@pytest.mark.parametrize("dtype", [ptl.int64, ptl.int32])
@pytest.mark.parametrize("case", GEMM_I8, ids=[c[-1] for c in GEMM_I8])
def test_mm_integer_engine(case, dtype):
    m, n, k, layouts, _ = case
    run_mm(m, n, k, dtype, layouts)


# matrix-vector products: rows * k crosses GEMM_PARALLEL_FLOPS at rows = 1024 (k = 256), and
# the column form (gemv_cols) works in blocks of GEMV_COL_BLOCK rows
GEMV_ROWS = [GEMV_COL_BLOCK - 1, GEMV_COL_BLOCK, GEMV_COL_BLOCK + 1, 2 * GEMV_COL_BLOCK + 3]


@pytest.mark.parametrize("dtype", FLOATS + [ptl.int64])
@pytest.mark.parametrize("rows", GEMV_ROWS)
def test_gemv_thresholds(rows, dtype):
    k = GEMM_PARALLEL_FLOPS // GEMV_COL_BLOCK
    a, x = gemm_inputs(rows, 1, k, dtype, rows)
    for la in ("n", "t", "s"):           # gemv_rows, gemv_cols, rows packed first
        for lx in ("n", "s"):            # the vector used in place, or packed
            ta, tx = operand(a, la, dtype), operand(x, lx, dtype)
            one, two = on_threads(lambda: np_of(ptl.mm(ta, tx)))
            check_gemm(one, a, x, dtype, f"A @ x, {rows} rows, {la}{lx}")
            assert_same_bits(one, two, f"A @ x {la}{lx}")
            # row @ B: the same problem transposed (B row-major: the column form)
            one, two = on_threads(lambda: np_of(ptl.mm(tx.t(), ta.t())))
            check_gemm(one, x.T, a.T, dtype, f"x @ B, {rows} columns, {la}{lx}")
            assert_same_bits(one, two, f"x @ B {la}{lx}")


# (batch, m, n, k, expand b, what): gemm_run splits a batch of small products by a grain of
# GEMM_PARALLEL_FLOPS / flops, gives even or large batches one matrix per thread and runs
# other batches matrix by matrix, each one threaded
BMM = [
    (2 * (GEMM_PARALLEL_FLOPS // 4096 + 1) - 1, 16, 16, 16, False, "small products, inline"),
    (2 * (GEMM_PARALLEL_FLOPS // 4096 + 1), 16, 16, 16, False, "small products, two chunks"),
    (2, 64, 64, 64, False, "batch a multiple of the threads"),
    (3, 64, 64, 64, False, "odd batch: each product threaded"),
    (8, 64, 64, 64, True, "batch >= 4 threads, stride-0 B"),
    (3, 7, 9, 2 * GEMM_KSPLIT, False, "odd batch of K-split products"),
    (2, 7, 9, 2 * GEMM_KSPLIT, True, "even batch of K-split products, stride-0 B"),
    (3, 300, 1, 300, False, "odd batch of matrix-vector products"),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", BMM, ids=[c[-1] for c in BMM])
def test_bmm_batch_paths(case, dtype):
    batch, m, n, k, expand, _ = case
    gen = np.random.default_rng(batch + m)
    a = rounded(gen.standard_normal((batch, m, k)), dtype)
    b = rounded(gen.standard_normal((1 if expand else batch, k, n)), dtype)
    ta = ptl.tensor(a, dtype=dtype)
    tb = ptl.tensor(b, dtype=dtype)
    tb = tb.expand(batch, k, n) if expand else tb.transpose(1, 2).contiguous().transpose(1, 2)
    one, two = on_threads(lambda: np_of(ptl.bmm(ta, tb)))
    b = np.broadcast_to(b, (batch, k, n))
    assert_near(one, a @ b, np.abs(a) @ np.abs(b), 10 * tol_of(dtype), "bmm")
    assert_same_bits(one, two, "bmm")
    # einsum contracts through the same batched product
    got = np_of(ptl.einsum("bmk,bkn->bmn", ta, tb))
    assert_near(got, a @ b, np.abs(a) @ np.abs(b), 10 * tol_of(dtype), "einsum")


# addmm: beta * bias (read in place by the blocked product, copied into C first by the other
# paths) + alpha * A @ B, on each path
ADDMM = [(5, 7, 3), (F8[3] + 1, 33, F8[2] * 5 // 4 + 1), (30, 1, 300), (1, 30, 300),
         (24, 40, 2 * GEMM_KSPLIT)]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", ADDMM, ids=lambda s: "x".join(map(str, s)))
def test_addmm_beta_source(shape, dtype):
    m, n, k = shape
    a, b = gemm_inputs(m, n, k, dtype, m * n)
    bias = rounded(np.random.default_rng(k).standard_normal(n), dtype)
    expected = 0.5 * bias + 1.5 * (a @ b)
    scale = 0.5 * np.abs(bias) + 1.5 * (np.abs(a) @ np.abs(b))
    for lb in ("n", "t"):
        ta, tb = operand(a, "n", dtype), operand(b, lb, dtype)
        tbias = ptl.tensor(bias, dtype=dtype)
        one, two = on_threads(lambda: np_of(ptl.addmm(tbias, ta, tb, beta=0.5, alpha=1.5)))
        assert_near(one, expected, scale, 10 * tol_of(dtype), f"addmm {shape} {lb}")
        assert_same_bits(one, two, "addmm")


# ---- reductions (reduce.c, Note [Reduction plan]) ----
# One output and R >= 2 GRAIN on more than one thread: the run is cut into
# min(R / GRAIN, MAX_CHUNKS, 4 threads) chunks whose accumulators are combined in order;
# each run is folded RED_BLOCK elements at a time.

FULL_LENGTHS = [RED_BLOCK - 1, RED_BLOCK, RED_BLOCK + 1, 2 * GRAIN - 1, 2 * GRAIN,
                2 * GRAIN + 1, 8 * GRAIN + 3]


# (name, pytorchlite fn, NumPy float64 fn) of every whole-tensor reduction kind
FULL_REDUCTIONS = [
    ("sum", lambda t: t.sum(), np.sum),
    ("mean", lambda t: t.mean(), np.mean),
    ("prod", lambda t: (1 + t / 64).prod(), lambda a: np.prod(1 + a / 64)),
    ("amax", lambda t: t.amax(), np.max),
    ("amin", lambda t: t.amin(), np.min),
    ("argmax", lambda t: t.argmax(), np.argmax),
    ("argmin", lambda t: t.argmin(), np.argmin),
    ("var", lambda t: t.var(), lambda a: np.var(a, ddof=1)),
    ("std", lambda t: t.std(correction=0), np.std),
    ("norm2", lambda t: ptl.linalg.vector_norm(t), np.linalg.norm),
    ("norm3", lambda t: ptl.linalg.vector_norm(t, 3),
     lambda a: np.sum(np.abs(a) ** 3) ** (1 / 3)),
    ("norminf", lambda t: ptl.linalg.vector_norm(t, math.inf), lambda a: np.abs(a).max()),
    ("logsumexp", lambda t: t.logsumexp(0),
     lambda a: np.log(np.sum(np.exp(a - a.max()))) + a.max()),
    ("count_nonzero", lambda t: ptl.count_nonzero(t.round()),
     lambda a: np.count_nonzero(np.round(a))),
    ("all", lambda t: (t < 5).all(), lambda a: np.all(a < 5)),
    ("any", lambda t: (t > 4.5).any(), lambda a: np.any(a > 4.5)),
    ("aminmax", lambda t: ptl.stack(list(ptl.aminmax(t))),
     lambda a: np.array([a.min(), a.max()])),
]


@pytest.mark.parametrize("layout", ["contiguous", "strided"])
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("R", FULL_LENGTHS)
def test_full_reduction_chunks(R, dtype, layout):
    gen = np.random.default_rng(R)
    a = rounded(gen.uniform(-4, 4, R), dtype)
    # a tie for the largest and the smallest value, the first copy in an early chunk
    a[R // 7], a[R - 2] = 4.25, 4.25
    a[R // 5], a[R - 1] = -4.25, -4.25
    if layout == "strided":
        wide = np.zeros(2 * R)
        wide[::2] = a
        t = ptl.tensor(wide, dtype=dtype)[::2]
    else:
        t = ptl.tensor(a, dtype=dtype)
    for name, fn, ref in FULL_REDUCTIONS:
        one, two = on_threads(lambda: np_of(fn(t)))
        expected = ref(a)
        if name in ("argmax", "argmin", "count_nonzero", "all", "any"):
            assert one == expected and two == expected, (name, one, two, expected)
            continue
        scale = {"sum": np.abs(a).sum(), "mean": np.abs(a).mean(),
                 "var": np.var(a) + a.mean() ** 2}.get(name, np.abs(expected))
        tol = 1e-12 if dtype == ptl.float64 else 2e-7
        if name in ("prod", "norm3") and dtype == ptl.float32:
            tol = 1e-5          # products and cubes rounded to float32 element by element
        assert_near(one, expected, scale, tol, f"{name} R={R} 1 thread")
        assert_near(two, expected, scale, tol, f"{name} R={R} 2 threads")
        if name in ("logsumexp", "prod"):   # their chunks do not depend on the thread count
            assert_same_bits(one, two, name)


@pytest.mark.parametrize("R", [2 * GRAIN, 8 * GRAIN + 3])
def test_full_reduction_chunks_nan_and_integers(R):
    gen = np.random.default_rng(R)
    a = gen.uniform(-4, 4, R)
    a[R - 3] = np.nan
    t = ptl.tensor(a)
    for name, fn in (("amax", lambda t: t.amax()), ("logsumexp", lambda t: t.logsumexp(0))):
        one, two = on_threads(lambda: np_of(fn(t)))
        assert np.isnan(one) and np.isnan(two), name
    for name, fn in (("argmax", lambda t: t.argmax()), ("argmin", lambda t: t.argmin())):
        one, two = on_threads(lambda: np_of(fn(t)))
        assert one == R - 3 and two == R - 3, (name, one, two)
    for one in on_threads(lambda: np_of(t.nansum())):
        assert_near(one, np.nansum(a), np.nansum(np.abs(a)), 1e-12, "nansum")
    ai = gen.integers(-1000, 1000, R)
    ai[R // 3], ai[R - 1] = 5000, 5000
    for dtype in (ptl.int64, ptl.int32, ptl.int16):
        t = ptl.tensor(ai, dtype=dtype)
        for name, fn, expected in [("sum", lambda t: t.sum(), ai.sum()),
                                   ("amax", lambda t: t.amax(), 5000),
                                   ("argmax", lambda t: t.argmax(), R // 3),
                                   ("prod", lambda t: (t[:62] % 3 + 1).prod(),
                                    np.prod(ai[:62] % 3 + 1))]:
            one, two = on_threads(lambda: np_of(fn(t)))
            assert one == expected and two == expected, (name, dtype, one, two, expected)


# sum(dim=0)-like reductions run by columns: a kept contiguous dim of at least 16, blocks of
# at most COL_BLOCK columns (narrower so that every thread gets one), float32 rows added
# COL_GROUP at a time
COLUMN_CASES = [(15, RED_COL_GROUP), (16, RED_COL_GROUP - 1), (17, RED_COL_GROUP + 1),
                (100, RED_COL_GROUP), (RED_COL_BLOCK - 1, 3), (RED_COL_BLOCK, RED_COL_GROUP + 1),
                (RED_COL_BLOCK + 1, 2), (2 * RED_COL_BLOCK + 5, 70)]


@pytest.mark.parametrize("outer", [1, 3])
@pytest.mark.parametrize("dtype", FLOATS + [ptl.int32])
@pytest.mark.parametrize("cols,R", COLUMN_CASES)
def test_column_reductions(cols, R, dtype, outer):
    gen = np.random.default_rng(cols * R)
    if dtype == ptl.int32:
        a = gen.integers(-100, 100, (outer, R, cols))
    else:
        a = rounded(gen.standard_normal((outer, R, cols)), dtype)
    t = ptl.tensor(a, dtype=dtype)
    ops = [("sum", lambda t: t.sum(1), lambda a: a.sum(1))]
    if dtype != ptl.int32:
        a[0, R // 2, cols // 3] = np.nan
        t = ptl.tensor(a, dtype=dtype)
        ops += [("mean", lambda t: t.mean(1), lambda a: a.mean(1)),
                ("nansum", lambda t: t.nansum(1), lambda a: np.nansum(a, 1))]
    for name, fn, ref in ops:
        for view, arr in ((t, a), (t.transpose(1, 2).contiguous().transpose(1, 2), a)):
            one, two = on_threads(lambda: np_of(fn(view)))
            expected = ref(arr)
            if dtype == ptl.int32:
                assert np.array_equal(one, expected) and np.array_equal(two, expected), name
                continue
            scale = np.nansum(np.abs(arr), 1)
            assert_near(one, expected, scale, 20 * tol_of(dtype), f"{name} 1 thread")
            assert_near(two, expected, scale, 20 * tol_of(dtype), f"{name} 2 threads")


# max/min, argmax/argmin (max.dim, min.dim), prod and the 1- and 2-norms of float32/float64
# run by columns too, keeping a value per column (reduce.c column_fold); the 3-norm and
# float16 take the per-output path, as a control
COLUMN_EXTREMES = [
    ("amax", lambda t: t.amax(1), lambda a: a.max(1)),
    ("amin", lambda t: t.amin(1), lambda a: a.min(1)),
    ("argmax", lambda t: t.argmax(1), lambda a: a.argmax(1)),
    ("argmin", lambda t: t.argmin(1), lambda a: a.argmin(1)),
    ("max.values", lambda t: t.max(1).values, lambda a: a.max(1)),
    ("max.indices", lambda t: t.max(1).indices, lambda a: a.argmax(1)),
    ("min.indices", lambda t: t.min(1).indices, lambda a: a.argmin(1)),
    ("norm2", lambda t: ptl.linalg.vector_norm(t, 2, 1), lambda a: np.sqrt((a * a).sum(1))),
    ("norm1", lambda t: t.norm(1, 1), lambda a: np.abs(a).sum(1)),
    ("norm3", lambda t: t.norm(3, 1), lambda a: (np.abs(a) ** 3).sum(1) ** (1 / 3)),
    ("prod", lambda t: (1 + t / 64).prod(1), lambda a: (1 + a / 64).prod(1)),
]


@pytest.mark.parametrize("outer", [1, 3])
@pytest.mark.parametrize("dtype", FLOATS + [ptl.float16])
@pytest.mark.parametrize("cols,R", COLUMN_CASES)
def test_column_extremes_and_norms(cols, R, dtype, outer):
    gen = np.random.default_rng(cols * R + 1)
    a = gen.standard_normal((outer, R, cols))
    a = a.astype(np.float16).astype(np.float64) if dtype == ptl.float16 else rounded(a, dtype)
    # ties (the first copy wins), an all -inf column, an all-zero one, an infinity
    a[0, R - 1, 0] = a[0, 0, 0] = 8.0
    a[0, R - 1, 1] = a[0, 0, 1] = -8.0
    a[0, :, 2] = -np.inf
    a[-1, :, cols - 1] = 0.0
    a[-1, R - 1, cols // 2] = np.inf
    for nan in (False, True):
        if nan:            # a NaN in a column: max/min give NaN, arg* its row
            a[0, R // 2, cols // 3] = np.nan
            a[-1, R - 1, cols - 2] = np.nan
        t = ptl.tensor(a, dtype=dtype)
        for name, fn, ref in COLUMN_EXTREMES:
            expected = ref(a)
            if nan and name in ("argmax", "argmin", "max.indices", "min.indices"):
                expected = np.where(np.isnan(a).any(1), np.isnan(a).argmax(1), expected)
            for view in (t, t.transpose(1, 2).contiguous().transpose(1, 2)):
                one, two = on_threads(lambda: np_of(fn(view)))
                what = f"{name} nan={nan}"
                if "norm" not in name and name != "prod":   # a value of the column, or its row
                    np.testing.assert_array_equal(one, expected.astype(one.dtype), what)
                    assert_same_bits(one, two, what)
                    continue
                tol = {ptl.float16: 2e-3, ptl.float32: 2e-6}.get(dtype, 1e-12)
                if name == "prod":   # the column fold multiplies in step_d's order
                    row_path = np_of(fn(t.transpose(1, 2).contiguous().transpose(1, 2)))
                    assert_same_bits(one, row_path, what)
                    tol = {ptl.float16: 2e-2, ptl.float32: 2e-5}.get(dtype, 1e-12)
                with np.errstate(invalid="ignore"):
                    assert_near(one, expected, np.abs(expected), tol, what + " 1 thread")
                    assert_near(two, expected, np.abs(expected), tol, what + " 2 threads")


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("rows", [2 * (GRAIN // 300 + 1) - 1, 2 * (GRAIN // 300 + 1)])
def test_row_reductions_split_by_outputs(rows, dtype):
    """Many outputs: grain = GRAIN / R + 1 outputs a task."""
    gen = np.random.default_rng(rows)
    a = rounded(gen.standard_normal((rows, 300)), dtype)
    for t, arr in ((ptl.tensor(a, dtype=dtype), a),
                   (ptl.tensor(np.ascontiguousarray(a.T), dtype=dtype).t(), a)):
        for name, fn, ref in [("sum", lambda t: t.sum(1), lambda a: a.sum(1)),
                              ("var", lambda t: t.var(1), lambda a: a.var(1, ddof=1)),
                              ("argmax", lambda t: t.argmax(1), lambda a: a.argmax(1)),
                              ("logsumexp", lambda t: t.logsumexp(1),
                               lambda a: np.log(np.exp(a).sum(1)))]:
            one, two = on_threads(lambda: np_of(fn(t)))
            if name == "argmax":
                assert np.array_equal(one, ref(arr)) and np.array_equal(two, ref(arr))
                continue
            assert_near(one, ref(arr), np.abs(ref(arr)) + 1, 10 * tol_of(dtype), name)
            assert_same_bits(one, two, name)


# ---- scans (reduce.c scan_lines): lines split by GRAIN / len + 1, each in RED_BLOCK pieces ----

@pytest.mark.parametrize("dtype", FLOATS + [ptl.int32])
@pytest.mark.parametrize("length", [RED_BLOCK - 1, RED_BLOCK, RED_BLOCK + 1, 2 * RED_BLOCK + 1])
def test_cumsum_cumprod(length, dtype):
    lines = 2 * (GRAIN // length + 1)
    gen = np.random.default_rng(length)
    if dtype == ptl.int32:
        a = gen.integers(-50, 50, (lines, length))
        p = gen.integers(-1, 2, (lines, length))
    else:
        a = rounded(gen.standard_normal((lines, length)), dtype)
        p = rounded(1 + gen.standard_normal((lines, length)) / 64, dtype)
    for dim in (1, 0):
        for name, src, ref in (("cumsum", a, np.cumsum), ("cumprod", p, np.cumprod)):
            n = lines if dim == 0 else length
            t = ptl.tensor(src, dtype=dtype)
            if dim == 0:    # a strided scan: the scanned dim is the outer one
                t = t[:n]
            one, two = on_threads(lambda: np_of(getattr(ptl, name)(t, dim)))
            expected = ref(src[:n] if dim == 0 else src, axis=dim)
            if dtype == ptl.int32:
                assert np.array_equal(one, expected) and np.array_equal(two, expected)
                continue
            scale = np.cumsum(np.abs(src[:n] if dim == 0 else src), axis=dim) \
                if name == "cumsum" else np.abs(expected)
            tol = 1e-12 if dtype == ptl.float64 else 1e-5
            assert_near(one, expected, scale, tol, f"{name} dim {dim}")
            assert_same_bits(one, two, f"{name} dim {dim}")


# ---- elementwise (tensor_iterator.c): inline below GRAIN, split over the threads from
# 2 GRAIN; a split may fall inside a coalesced row ----

ITER_SHAPES = [(2 * GRAIN - 1,), (2 * GRAIN,), (2 * GRAIN + 1,), (256, 256), (263, 251)]


@pytest.mark.parametrize("dtype", FLOATS + [ptl.int32])
@pytest.mark.parametrize("shape", ITER_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_elementwise_split(shape, dtype):
    gen = np.random.default_rng(len(shape) * 7 + shape[0])
    npdt = {ptl.float64: np.float64, ptl.float32: np.float32, ptl.int32: np.int32}[dtype]
    a = gen.integers(-1000, 1000, shape).astype(npdt)
    b = gen.integers(-1000, 1000, shape).astype(npdt)
    if dtype != ptl.int32:
        a = (a / 7).astype(npdt)
    cases = [("contiguous", ptl.tensor(a), ptl.tensor(b), a, b)]
    if len(shape) == 2:
        cases.append(("transposed", ptl.tensor(np.ascontiguousarray(a.T)).t(), ptl.tensor(b),
                      a, b))
        cases.append(("broadcast", ptl.tensor(a[:, :1]), ptl.tensor(b[:1]),
                      np.broadcast_to(a[:, :1], shape), np.broadcast_to(b[:1], shape)))
    for what, ta, tb, na, nb in cases:
        one, two = on_threads(lambda: np_of(ta * tb + ta))
        expected = na * nb + na        # exact in float64 and int32; rounded as float32 does
        assert np.array_equal(one, expected), what
        assert np.array_equal(two, expected), what


# float32 (and float64 exp) run 8 (4) lanes with a masked tail on contiguous data, the
# portable loop on strided data
UNARY_LENGTHS = [1, 3, 7, 8, 9, 15, 16, 17, 33, 2 * GRAIN + 5]


def np_erf(a):
    return np.vectorize(math.erf, otypes=[np.float64])(a)


UNARY = [
    ("exp", lambda t: t.exp(), np.exp, (-80, 80)),
    ("log", lambda t: t.log(), np.log, (1e-3, 1e3)),
    ("sigmoid", lambda t: t.sigmoid(), lambda a: 1 / (1 + np.exp(-a)), (-30, 30)),
    ("tanh", lambda t: t.tanh(), np.tanh, (-10, 10)),
    ("erf", lambda t: t.erf(), np_erf, (-5, 5)),
    ("gelu", lambda t: F.gelu(t), lambda a: 0.5 * a * (1 + np_erf(a / math.sqrt(2))), (-8, 8)),
    ("gelu_tanh", lambda t: F.gelu(t, approximate="tanh"),
     lambda a: 0.5 * a * (1 + np.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a ** 3))),
     (-8, 8)),
    ("silu", lambda t: F.silu(t), lambda a: a / (1 + np.exp(-a)), (-30, 30)),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", UNARY_LENGTHS)
def test_vectorised_unary_tails(n, dtype):
    gen = np.random.default_rng(n)
    for name, fn, ref, (lo, hi) in UNARY:
        a = rounded(gen.uniform(lo, hi, n), dtype)
        wide = np.zeros(2 * n)
        wide[::2] = a
        for what, t in (("contiguous", ptl.tensor(a, dtype=dtype)),
                        ("strided", ptl.tensor(wide, dtype=dtype)[::2])):
            one, two = on_threads(lambda: np_of(fn(t)))
            expected = ref(a)
            tol = 1e-14 if dtype == ptl.float64 else 1e-6
            scale = np.abs(expected) + (1e-300 if dtype == ptl.float64 else 1e-37)
            if name in ("gelu", "gelu_tanh", "silu"):
                scale = np.maximum(scale, np.abs(a))   # 1 + erf, 1 + tanh cancel for x < 0
            assert_near(one, expected, scale, tol, f"{name} {what} n={n} 1 thread")
            assert_near(two, expected, scale, tol, f"{name} {what} n={n} 2 threads")


@pytest.mark.parametrize("n", [7, 8, 9, 16, 17, 33, 2 * GRAIN + 5])
def test_vectorised_activation_backward_tails(n):
    gen = np.random.default_rng(n)
    a = rounded(gen.uniform(-8, 8, n), ptl.float32)
    g = rounded(gen.standard_normal(n), ptl.float32)
    c = math.sqrt(2 / math.pi)
    u = np.tanh(c * (a + 0.044715 * a ** 3))
    pdf = np.exp(-a * a / 2) / math.sqrt(2 * math.pi)
    sig = 1 / (1 + np.exp(-a))
    # (name, fn, the derivative as two terms that cancel for x < 0)
    refs = [("gelu", lambda t: F.gelu(t), 0.5 * (1 + np_erf(a / math.sqrt(2))), a * pdf),
            ("gelu_tanh", lambda t: F.gelu(t, approximate="tanh"), 0.5 * (1 + u),
             0.5 * a * (1 - u * u) * c * (1 + 3 * 0.044715 * a * a)),
            ("silu", lambda t: F.silu(t), sig, sig * a * (1 - sig))]
    for name, fn, d0, d1 in refs:
        def grad():
            t = ptl.tensor(a, dtype=ptl.float32, requires_grad=True)
            fn(t).backward(ptl.tensor(g, dtype=ptl.float32))
            return np_of(t.grad)
        one, two = on_threads(grad)
        expected = g * (d0 + d1)
        # float32 rounds 1 + tanh (erf) to a few ulp of 1, times x
        scale = np.abs(g) * (np.abs(d0) + np.abs(d1) + 0.1 * np.abs(a))
        assert_near(one, expected, scale, 2e-6, f"{name}' 1 thread")
        assert_near(two, expected, scale, 2e-6, f"{name}' 2 threads")


# ---- softmax / log_softmax (nn.c): rows of n in 8 (float32) or 4 (float64) lanes + a tail,
# lines split by GRAIN / n + 1; a softmax dim that is not the last walks [n, inner] blocks ----

SOFTMAX_N = [1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 33]


def np_softmax(a, axis, lg):
    z = a - a.max(axis, keepdims=True)
    lse = np.log(np.exp(z).sum(axis, keepdims=True))
    return z - lse if lg else np.exp(z - lse)


@pytest.mark.parametrize("lg", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", SOFTMAX_N)
def test_softmax_rows(n, dtype, lg):
    gen = np.random.default_rng(n)
    fn = F.log_softmax if lg else F.softmax
    for shape, dim in (((2 * (GRAIN // n + 1), n), 1), ((2 * (GRAIN // (3 * n) + 1), n, 3), 1)):
        a = rounded(gen.uniform(-20, 20, shape), dtype)
        g = rounded(gen.standard_normal(shape), dtype)

        def run():
            t = ptl.tensor(a, dtype=dtype, requires_grad=True)
            y = fn(t, dim=dim)
            y.backward(ptl.tensor(g, dtype=dtype))
            return np_of(y), np_of(t.grad)
        (y1, g1), (y2, g2) = on_threads(run)
        y = np_softmax(a, dim, lg)
        if lg:
            gx = g - np.exp(y) * g.sum(dim, keepdims=True)
            gscale = np.abs(g) + np.exp(y) * np.abs(g).sum(dim, keepdims=True)
        else:
            gx = y * (g - (g * y).sum(dim, keepdims=True))
            gscale = y * (np.abs(g) + (np.abs(g) * y).sum(dim, keepdims=True))
        tol = 1e-13 if dtype == ptl.float64 else 2e-6
        # exp(x - max) inherits the rounding of x - max: relative error |x - max| ulp
        yscale = np.abs(y) + 1 if lg else y * (1 + np.abs(a - a.max(dim, keepdims=True)))
        what = f"{fn.__name__} {shape} dim {dim}"
        for got_y, got_g, nt in ((y1, g1, 1), (y2, g2, 2)):
            assert_near(got_y, y, yscale, tol, f"{what} forward, {nt} threads")
            assert_near(got_g, gx, gscale + 1e-30, 4 * tol, f"{what} backward, {nt} threads")
        assert_same_bits(y1, y2, what)


SOFTMAX_INNER = [1, 3, 7, 8, 9, 15, 16, 17, SM_COLS - 1, SM_COLS, SM_COLS + 1, 300]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("inner", SOFTMAX_INNER)
def test_softmax_columns(inner, dtype):
    """softmax, log_softmax and logsumexp over a dim that is not the last (Note [Softmax
    columns]): column groups of SM_COLS, tails of the vector lanes, row groups of
    SM_ROW_GROUP, a few units a task and several tasks (GRAIN / (n SM_COLS) + 1 units),
    contiguous and transposed inputs"""
    gen = np.random.default_rng(inner)
    units = -(-inner // SM_COLS)
    for n in (1, 5, SM_ROW_GROUP - 1, SM_ROW_GROUP, SM_ROW_GROUP + 1, 2 * SM_ROW_GROUP + 3):
        outer = 2 * (GRAIN // (n * SM_COLS) + 1) // units + 1
        a = rounded(gen.uniform(-30, 30, (outer, n, inner)), dtype)
        a[0, :, 0] = -np.inf                     # a column of -inf only
        if n > 1:
            a[-1, 1, -1] = np.nan
            a[-1, 0, inner // 2] = np.inf
            a[outer // 2, n - 1, inner - 1] = -np.inf
        tr = np.ascontiguousarray(a.transpose(0, 2, 1))
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            mx = np.max(a, 1, keepdims=True)
            z = a - np.where(np.isneginf(mx), 0, mx)
            lse = np.log(np.exp(z).sum(1, keepdims=True))
            want = {"softmax": np.exp(z - lse), "log_softmax": z - lse,
                    "logsumexp": np.where(np.isfinite(mx), lse + mx, mx)[:, 0]}
        for t in (ptl.tensor(a, dtype=dtype), ptl.tensor(tr, dtype=dtype).transpose(1, 2)):
            for name, fn in (("softmax", lambda t: F.softmax(t, 1)),
                             ("log_softmax", lambda t: F.log_softmax(t, 1)),
                             ("logsumexp", lambda t: t.logsumexp(1))):
                one, two = on_threads(lambda: np_of(fn(t)))
                exp = want[name]
                what = f"{name} {(outer, n, inner)} {dtype}"
                fin = np.isfinite(exp)
                assert np.array_equal(one[~fin], exp[~fin], equal_nan=True), what
                # exp(x - max) inherits the rounding of x - max: relative error |x - max| ulp
                zf = np.broadcast_to(z, a.shape)[fin] if name != "logsumexp" else 0
                zf = np.nan_to_num(np.abs(zf), posinf=0)
                scale = exp[fin] * (1 + zf) if name == "softmax" else np.abs(exp[fin]) + 1
                assert_near(one[fin], exp[fin], scale, 4 * tol_of(dtype), what)
                assert_same_bits(one, two, what)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("inner", SOFTMAX_INNER)
def test_softmax_backward_columns(inner, dtype):
    """softmax's and log_softmax's backward over a dim that is not the last, by the column
    groups of Note [Softmax columns]: SM_COLS a unit, the lanes' tails, SM_ROW_GROUP rows
    summed in the dtype, one and several units a task; contiguous and transposed operands"""
    gen = np.random.default_rng(100 + inner)
    units = -(-inner // SM_COLS)
    aten = ptl.ops.aten
    for n in (1, 5, SM_ROW_GROUP - 1, SM_ROW_GROUP, SM_ROW_GROUP + 1, 2 * SM_ROW_GROUP + 3):
        outer = 2 * (GRAIN // (n * SM_COLS) + 1) // units + 1
        z = gen.uniform(-8, 8, (outer, n, inner))
        logp = z - np.log(np.exp(z).sum(1, keepdims=True))
        g = rounded(gen.standard_normal((outer, n, inner)), dtype)
        g[0, 0, 0] = np.nan
        for name, y, op in (("softmax", rounded(np.exp(logp), dtype),
                             aten._softmax_backward_data),
                            ("log_softmax", rounded(logp, dtype),
                             aten._log_softmax_backward_data)):
            if name == "softmax":
                want = y * (g - (g * y).sum(1, keepdims=True))
                scale = y * (np.abs(g) + np.abs(g * y).sum(1, keepdims=True))
            else:
                ey = np.exp(y)
                want = g - ey * g.sum(1, keepdims=True)
                # e^y inherits y's rounding: |y| ulp relative
                scale = np.abs(g) + ey * (1 + np.abs(y)) * np.abs(g).sum(1, keepdims=True)
            what = f"{name} backward {(outer, n, inner)} {dtype}"
            for layout in ("contiguous", "transposed"):
                def args():
                    if layout == "contiguous":
                        return [ptl.tensor(v, dtype=dtype) for v in (g, y)]
                    return [ptl.tensor(np.ascontiguousarray(v.transpose(0, 2, 1)),
                                       dtype=dtype).transpose(1, 2) for v in (g, y)]
                one, two = on_threads(lambda: np_of(op(*args(), 1, dtype)))
                assert_near(one, want, scale + 1e-300, 4 * tol_of(dtype), f"{what} {layout}")
                assert_same_bits(one, two, f"{what} {layout}")


@pytest.mark.parametrize("inner", [3, 17])
def test_softmax_columns_gradcheck(inner):
    """float64 gradcheck and gradgradcheck of softmax and log_softmax over an outer dim (the
    column backward, with a masked tail at either vector width, and the double backward
    through it)"""
    gen = np.random.default_rng(inner)
    x = ptl.tensor(gen.standard_normal((2, 5, inner)), dtype=ptl.float64, requires_grad=True)
    for fn in (F.softmax, F.log_softmax):
        f = lambda t: fn(t, 1)
        assert ptl.autograd.gradcheck(f, (x,))
        assert ptl.autograd.gradgradcheck(f, (x,))


# ---- layer_norm (layer_norm.c, Note [Layer norm rows]): rows of N in 8 partial sums + a
# tail, GRAIN / (N + 1) + 1 rows a task; weight and bias gradients by column blocks, summed
# in the same order whatever the thread count ----

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("N", [1, 7, 8, 9, 17, 64])
def test_layer_norm_rows(N, dtype):
    M = 2 * (GRAIN // (N + 1) + 1) + 1
    gen = np.random.default_rng(N)
    x = rounded(3 + gen.standard_normal((M, N)), dtype)
    w = rounded(gen.standard_normal(N), dtype)
    b = rounded(gen.standard_normal(N), dtype)
    g = rounded(gen.standard_normal((M, N)), dtype)
    eps = 1e-5

    def run():
        tx, tw, tb = (ptl.tensor(v, dtype=dtype, requires_grad=True) for v in (x, w, b))
        y = F.layer_norm(tx, [N], tw, tb, eps)
        y.backward(ptl.tensor(g, dtype=dtype))
        return [np_of(v) for v in (y, tx.grad, tw.grad, tb.grad)]
    r1, r2 = on_threads(run)
    mean = x.mean(1, keepdims=True)
    rstd = 1 / np.sqrt(x.var(1, keepdims=True) + eps)
    xh = (x - mean) * rstd
    gh = g * w
    dx = rstd * (gh - gh.mean(1, keepdims=True) - xh * (gh * xh).mean(1, keepdims=True))
    expected = [xh * w + b, dx, (g * xh).sum(0), g.sum(0)]
    # y = (x rstd - mean rstd) w + b rounds x rstd and mean rstd apart
    scales = [(np.abs(x - mean) + 0.05 * (np.abs(x) + np.abs(mean))) * rstd * np.abs(w) +
              np.abs(b), rstd * (np.abs(gh) + np.abs(gh).mean(1, keepdims=True)
                                                  * (1 + np.abs(xh))),
              (np.abs(g) * np.abs(xh)).sum(0), np.abs(g).sum(0)]
    tol = 1e-11 if dtype == ptl.float64 else 1e-5
    if N == 1:      # x rstd and mean rstd round alike: the normalized value is exactly 0
        assert np.array_equal(r1[0], np.broadcast_to(b, (M, N)).astype(r1[0].dtype))
    for name, got1, got2, e, s in zip(("y", "dx", "dw", "db"), r1, r2, expected, scales):
        assert_near(got1, e, s + 1e-30, tol, f"layer_norm {name} N={N}")
        assert_same_bits(got1, got2, f"layer_norm {name} N={N}")


# ---- sort / topk (sort.c, Note [Sort keys]): insertion sort up to SMALL_LANE elements, radix
# sort above; topk with k < n / 16 keeps a heap of the best k; lanes split by GRAIN / len + 1 ----

SORT_LENGTHS = [SMALL_LANE - 1, SMALL_LANE, SMALL_LANE + 1, 300]


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64, ptl.int16, ptl.int64])
@pytest.mark.parametrize("n", SORT_LENGTHS)
def test_sort_lanes(n, dtype):
    lanes = 2 * (GRAIN // n + 1)
    gen = np.random.default_rng(n)
    a = gen.integers(-20, 20, (lanes, n))          # many ties: stability decides the indices
    if dtype in FLOATS:
        a = a / 4
        a[0, :3] = [np.nan, -0.0, 0.0]
    for layout, view in (("contiguous", ptl.tensor(a, dtype=dtype)),
                         ("strided", ptl.tensor(np.ascontiguousarray(a.T), dtype=dtype).t())):
        for descending in (False, True):
            def run():
                v, i = ptl.sort(view, dim=1, descending=descending, stable=True)
                return np_of(v), np_of(i)
            (v1, i1), (v2, i2) = on_threads(run)
            key = -a if descending else a
            if dtype in FLOATS:     # NaN sorts last ascending, first descending
                key = np.where(np.isnan(a), -np.inf if descending else np.inf, key)
            idx = np.argsort(key, axis=1, kind="stable")
            what = f"sort n={n} {dtype} {layout} descending={descending}"
            assert np.array_equal(i1, idx), what
            assert np.array_equal(i2, idx), what
            assert_same_bits(v1, v2, what)
            assert np.array_equal(v1, np.take_along_axis(a, idx, 1), equal_nan=True), what


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64, ptl.int32])
@pytest.mark.parametrize("k", [1, 160 // 16 - 1, 160 // 16, 160 // 16 + 1, 160])
def test_topk_heap_threshold(k, dtype):
    n, lanes = 160, 2 * (GRAIN // 160 + 1)
    gen = np.random.default_rng(k)
    a = np.argsort(gen.random((lanes, n)), axis=1) - n // 2   # distinct values per lane
    t = ptl.tensor(a, dtype=dtype)
    for largest in (True, False):
        def run():
            v, i = ptl.topk(t, k, dim=1, largest=largest)
            return np_of(v), np_of(i)
        (v1, i1), (v2, i2) = on_threads(run)
        order = np.argsort(-a if largest else a, axis=1)[:, :k]
        assert np.array_equal(i1, order) and np.array_equal(i2, order), (k, largest)
        assert np.array_equal(v1, np.take_along_axis(a, order, 1))


# ---- random (random.c, Note [Philox streams]): RANDOM_GRAIN elements a task; element i
# depends only on (seed, offset, i), so the values must not depend on the thread count or
# on where a task starts (odd starts split a Box-Muller pair or a 4-word block) ----

RANDOM_SIZES = [2 * RANDOM_GRAIN - 1, 2 * RANDOM_GRAIN, 2 * RANDOM_GRAIN + 1,
                2 * RANDOM_GRAIN + 2, 2 * RANDOM_GRAIN + 3, 6 * RANDOM_GRAIN + 7]

SAMPLERS = [
    ("rand", lambda n, dt: ptl.rand(n, dtype=dt)),
    ("randn", lambda n, dt: ptl.randn(n, dtype=dt)),
    ("randint", lambda n, dt: ptl.randint(-5, 1 << 40, (n,))),
    ("bernoulli", lambda n, dt: ptl.bernoulli(ptl.full((n,), 0.3, dtype=dt))),
    ("normal_ strided", lambda n, dt: ptl.empty(2, n, dtype=dt).t().normal_(1.0, 2.0)),
    ("exponential_", lambda n, dt: ptl.empty(n, dtype=dt).exponential_()),
    ("uniform_ strided", lambda n, dt: ptl.empty(n, 3, dtype=dt)[:, 1].uniform_(-2, 3)),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", RANDOM_SIZES)
def test_random_independent_of_threads(n, dtype):
    for name, draw in SAMPLERS:
        def run():
            ptl.manual_seed(1234)
            return np_of(draw(n, dtype)), np_of(draw(5, dtype))
        (a1, next1), (a2, next2) = on_threads(run)
        assert_same_bits(a1, a2, f"{name} n={n}")
        assert_same_bits(next1, next2, f"{name}: the generator advanced differently")
        # a prefix of a longer draw: element i depends on i alone
        def longer():
            ptl.manual_seed(1234)
            return np_of(draw(n + 17, dtype))
        (b1,) = on_threads(longer, counts=(2,))
        if name not in ("normal_ strided", "uniform_ strided"):
            assert_same_bits(a1, b1[:n], f"{name}: prefix")
    ptl.manual_seed(7)
    x = np_of(ptl.randn(n, dtype=dtype))
    assert abs(x.mean()) < 6 / math.sqrt(n) and abs(x.std() - 1) < 0.05


def test_multinomial_independent_of_threads():
    rows = 2 * (RANDOM_GRAIN // (50 + 10) + 1) + 1
    probs = ptl.tensor(np.random.default_rng(0).random((rows, 50)))

    def run():
        ptl.manual_seed(99)
        return np_of(ptl.multinomial(probs, 10)), np_of(ptl.multinomial(probs, 10, True))
    (a1, b1), (a2, b2) = on_threads(run)
    assert_same_bits(a1, a2, "multinomial")
    assert_same_bits(b1, b2, "multinomial with replacement")
    assert all(len(set(r)) == 10 for r in a1)


# ---- convolution forward and input gradient (conv.c, Note [Convolution as GEMM]): the
# batch is cut into chunks of COL_BUDGET // (Cin * kvol * Ho * Wo) samples (the weight
# gradient's chunks: tests/test_conv_weight_grad_blocking.py) ----

def conv_points(x, w, g, stride, padding, gen):
    """y = conv2d(x, w) and dx = d(sum(g * y))/dx in float64 at 48 random points of every
    sample (a chunk that reads the wrong samples shows at all of them), with the sums of
    |terms| as their scales: [(index, value, scale)] for y and for dx."""
    n, cin, h, _ = x.shape
    cout, _, k, _ = w.shape
    ho = g.shape[2]
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    ys, dxs = [], []
    for b in range(n):
        for o, r, c in zip(gen.integers(0, cout, 48), gen.integers(0, ho, 48),
                           gen.integers(0, ho, 48)):
            terms = xp[b, :, r * stride:r * stride + k, c * stride:c * stride + k] * w[o]
            ys.append(((b, o, r, c), terms.sum(), np.abs(terms).sum()))
        for ch, r, c in zip(gen.integers(0, cin, 48), gen.integers(0, h, 48),
                            gen.integers(0, h, 48)):
            total = scale = 0.0
            for i in range(k):
                for j in range(k):
                    yr, yc = r + padding - i, c + padding - j
                    if yr % stride or yc % stride:
                        continue
                    yr, yc = yr // stride, yc // stride
                    if 0 <= yr < ho and 0 <= yc < ho:
                        t = g[b, :, yr, yc] * w[:, ch, i, j]
                        total += t.sum()
                        scale += np.abs(t).sum()
            dxs.append(((b, ch, r, c), total, scale))
    return ys, dxs


@functools.lru_cache(maxsize=None)
def conv_case_ref(case):
    """Inputs rounded to float32 (so both dtypes start from them) and the reference."""
    n, cin, h, cout, k, stride, padding, _ = case
    ho = (h + 2 * padding - k) // stride + 1
    gen = np.random.default_rng(n * cin)
    x, w, g = (rounded(gen.standard_normal(shape), ptl.float32)
               for shape in ((n, cin, h, h), (cout, cin, k, k), (n, cout, ho, ho)))
    return (x, w, g) + conv_points(x, w, g, stride, padding, gen)


# (N, Cin, H, Cout, k, stride, padding, samples per chunk)
CONV_CASES = [
    (2, 32, 72, 3, 9, 1, 0, 1),     # one sample per chunk
    (3, 20, 72, 3, 9, 1, 0, 2),     # chunks of 2 and a short last chunk of 1
    (4, 20, 72, 2, 9, 1, 0, 2),     # two whole chunks
    (2, 32, 76, 3, 9, 2, 4, 4),     # stride and padding: one chunk holds the batch
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", CONV_CASES, ids=lambda c: f"N{c[0]}-Cin{c[1]}-chunk{c[-1]}")
def test_conv2d_forward_and_input_grad_chunks(case, dtype):
    n, cin, h, cout, k, stride, padding, per_chunk = case
    ho = (h + 2 * padding - k) // stride + 1
    assert COL_BUDGET // (cin * k * k * ho * ho) == per_chunk
    x, w, g, ys, dxs = conv_case_ref(case)

    def run():
        tx = ptl.tensor(x, dtype=dtype, requires_grad=True)
        out = F.conv2d(tx, ptl.tensor(w, dtype=dtype), stride=stride, padding=padding)
        out.backward(ptl.tensor(g, dtype=dtype))
        return np_of(out), np_of(tx.grad)
    (y1, gx1), (y2, gx2) = on_threads(run)
    tol = 1e-13 if dtype == ptl.float64 else 1e-6
    for got, points, what in ((y1, ys, "y, 1 thread"), (y2, ys, "y, 2 threads"),
                              (gx1, dxs, "dx, 1 thread"), (gx2, dxs, "dx, 2 threads")):
        idx = tuple(np.array([p[0] for p in points]).T)
        assert_near(got[idx], [p[1] for p in points], [p[2] for p in points], 10 * tol, what)
    assert_same_bits(y1, y2, "conv2d forward")


# ---- pooling (pool.c run_planes): GRAIN / (input + output plane) + 1 planes a task ----

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("planes", [2 * (GRAIN // 1280 + 1) + d for d in (-1, 0, 1)])
def test_pool2d_planes(planes, dtype):
    gen = np.random.default_rng(planes)
    x = rounded(gen.permutation(planes * 1024).reshape(1, planes, 32, 32) / 1024.0, dtype)
    g = rounded(gen.standard_normal((1, planes, 16, 16)), dtype)
    # the 2 x 2 windows as a last axis of 4
    win = x.reshape(1, planes, 16, 2, 16, 2).transpose(0, 1, 2, 4, 3, 5)
    win = win.reshape(1, planes, 16, 16, 4)
    first = win.argmax(-1)
    gmax = np.zeros_like(win)
    np.put_along_axis(gmax, first[..., None], g[..., None], -1)
    gmax = gmax.reshape(1, planes, 16, 16, 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(x.shape)
    gavg = np.repeat(np.repeat(g / 4, 2, 2), 2, 3)
    for name, fn, y, gx in (("max_pool2d", F.max_pool2d, win.max(-1), gmax),
                            ("avg_pool2d", F.avg_pool2d, win.mean(-1), gavg)):
        def run():
            tx = ptl.tensor(x, dtype=dtype, requires_grad=True)
            out = fn(tx, 2)
            out.backward(ptl.tensor(g, dtype=dtype))
            return np_of(out), np_of(tx.grad)
        (y1, gx1), (y2, gx2) = on_threads(run)
        for got, ref in ((y1, y), (y2, y), (gx1, gx), (gx2, gx)):
            assert_near(got, ref, np.abs(ref) + 1e-30, tol_of(dtype), name)


# ---- the other GRAIN splits of one flat range: arange / linspace (factory.c), the fused
# SGD and Adam steps (optim.c), cdist rows (linalg_norm.c) ----

FLAT_SIZES = [2 * GRAIN - 1, 2 * GRAIN, 2 * GRAIN + 1, 2 * GRAIN + 3]


@pytest.mark.parametrize("n", FLAT_SIZES)
def test_ranges_split(n):
    for dtype in (ptl.int64, ptl.int32, ptl.float64, ptl.float32):
        one, two = on_threads(lambda: np_of(ptl.arange(-3, -3 + 2 * n, 2, dtype=dtype)))
        assert np.array_equal(one, np.arange(-3, -3 + 2 * n, 2)), dtype
        assert_same_bits(one, two, f"arange {dtype}")
    for dtype in FLOATS:
        one, two = on_threads(lambda: np_of(ptl.linspace(-1, 2, n, dtype=dtype)))
        assert_near(one, np.linspace(-1, 2, n), 2.0, tol_of(dtype), "linspace")
        assert one[0] == -1 and one[-1] == 2
        assert_same_bits(one, two, f"linspace {dtype}")


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", FLAT_SIZES)
def test_fused_optimizer_steps_split(n, dtype):
    gen = np.random.default_rng(n)
    p0 = rounded(gen.standard_normal(n), dtype)
    grads = [rounded(gen.standard_normal(n), dtype) for _ in range(2)]

    def run(make):
        p = ptl.tensor(p0, dtype=dtype, requires_grad=True)
        opt = make([p])
        for g in grads:
            p.grad = ptl.tensor(g, dtype=dtype)
            opt.step()
        return np_of(p)
    lr, wd = 0.1, 0.01
    # SGD with momentum 0.9, dampening 0, weight decay: buf = g (first), then 0.9 buf + g
    sgd = on_threads(lambda: run(lambda ps: ptl.optim.SGD(ps, lr=lr, momentum=0.9,
                                                          weight_decay=wd)))
    p, buf = p0.copy(), None
    for g in grads:
        d = g + wd * p
        buf = d if buf is None else 0.9 * buf + d
        p = p - lr * buf
    b1, b2, eps = 0.9, 0.999, 1e-8
    adam = on_threads(lambda: run(lambda ps: ptl.optim.Adam(ps, lr=lr, betas=(b1, b2),
                                                            eps=eps)))
    q, m, v = p0.copy(), 0, 0
    for t, g in enumerate(grads, 1):
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        q = q - lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)
    for name, (one, two), ref in (("SGD", sgd, p), ("Adam", adam, q)):
        assert_near(one, ref, np.abs(ref) + 1, 10 * tol_of(dtype), name)
        assert_same_bits(one, two, name)


@pytest.mark.parametrize("rows", [2 * (GRAIN // (40 * 8 + 1)) - 1, 2 * (GRAIN // (40 * 8 + 1))])
def test_cdist_rows_split(rows):
    gen = np.random.default_rng(rows)
    x1, x2 = gen.standard_normal((rows, 8)), gen.standard_normal((40, 8))
    diff = x1[:, None, :] - x2[None, :, :]
    for p, ref in ((2.0, np.sqrt((diff ** 2).sum(-1))), (1.0, np.abs(diff).sum(-1)),
                   (math.inf, np.abs(diff).max(-1))):
        one, two = on_threads(lambda: np_of(ptl.cdist(ptl.tensor(x1), ptl.tensor(x2), p=p)))
        assert_near(one, ref, ref, 1e-12, f"cdist p={p}")
        assert_same_bits(one, two, f"cdist p={p}")
