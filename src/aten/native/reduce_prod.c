/* reduce_prod.c -- float32 products in float32 lanes (Note [Float32 products]): the product
 * of a run and the products of the columns of a block of rows, which reduce_kernels.c's
 * ptl_red_prod_lowp and ptl_red_prod_rows_lowp take for float32 (reduce.c's plans, Note
 * [Reduction plan]).  Mirrors the float32 prod of ATen/native/cpu/ReduceOpsKernel.cpp. */
#include <string.h>

#include "../../c10/cpu_features.h"
#include "../loops.h"
#include "reduce_kernels.h"

/* Note [Float32 products]
 * ~~~~~~~~~~~~~~~~~~~~~~~~
 * A float32 product multiplies in float32, as PyTorch's and NumPy's do, in F4_PROD_LANES
 * lanes: value i of a run into lane i % F4_PROD_LANES, the lanes folded pairwise (lane k
 * times lane k + w, w = 32, 16, ..., 1) into the run's product, which a whole reduction's
 * chunks (reduce.c) multiply in double.  A column product (prod(0) of a matrix) gives row r
 * to lane r % F4_PROD_LANES of its column and folds the same pairs, so it has the bits of the
 * same values as a contiguous run.  The lanes are one logical array at every width (8 ymm, or
 * plain C), so the bits depend on the run alone.  Each multiply rounds, so the error grows
 * with the length as PyTorch's does: 1000 values near 1 are off by 8 units in the last place
 * on average, at most about 40, for PyTorch, NumPy and these lanes alike.  They had taken the
 * double lanes of Note [Half-precision products], correctly rounded but bound by one
 * float-to-double conversion a value: 1000 x 1000, one thread, prod(A, 1) 0.43x and prod(A,
 * 0) 0.24x PyTorch's time (issue 16).
 *
 * A run keeps its 64 lanes in 8 vector registers; the last, partial group of 8 values is
 * the 8 values that end the run, moved down to the group's lanes with ones above (x * 1 is
 * x), and the fold stays in registers (a fold through a stack array and a scalar loop for the
 * rest had been a third of prod(A, 1) of 1000 x 1000, and 3x the time of 100-value runs).
 *
 * A block of columns is a lane at a time: lane l's PROD_COL_S lane-partners (l and l + 32
 * for 2, the fold's first level) multiply the rows l, l + 64, ... of 8 PROD_COL_NV columns
 * in registers, and only the lanes left after those levels go through memory, where rows
 * past R (ones) are skipped.  Rows walked in memory order with the 64 lanes of a block in
 * memory (a load and a store a vector a row) had been 0.67x PyTorch's time for prod(A, 0) of
 * 1000 x 1000, one thread, on the AMD EPYC (Zen 4) measured; prefetching the next block's
 * rows, or the rows 4 ahead, made either way slower.  A column count that is no multiple of
 * the block's ends with a block shifted left to end at the last column (those columns twice,
 * the same bits), narrower blocks below a block's width, and the lanes a row at a time below
 * 8 columns.  The 32 vector registers of AVX-512 (VL) take 16 vectors of 2 partners; AVX2's
 * 16 take 12 vectors of 1 partner from 128 rows on, where the 2 partners' rows 32 apart
 * (6 vectors) had been 2x slower on rows 4096 bytes apart, and 6 of 2 below.
 *
 * Up to PROD_FEW_ROWS rows (from 16 columns), each row is its own lane: 16 columns of every
 * row in registers (rows 16 on multiplied into lane l - 16 as they are loaded, the fold's
 * level 16), folded pairwise from the first level with a partner, 16 columns a step, the
 * last 16 shifted left to end at the last column; the same bits.  For a float32 output the
 * products go straight into it (ptl_red_prod_rows_f4_put), not through reduce.c's double
 * values (their conversion back was a quarter of 4 x 100000).  Through the blocks, a row
 * costs a lane's 32 vectors of ones, their fold and store, and the memory fold after:
 * prod(0) of 4 x 100000 ran at 0.27x PyTorch's time, 8 x 65536 0.24x, 17 x 65536 0.28x (one
 * thread, Zen 4); with a fold whose levels GCC did not unroll (live rows counted at run
 * time), t[] went through the stack and 8 x 65536 ran at 0.48x; 64 rows read 64 B of each
 * a step (64 streams) ran 64 x 4096 at 0.73x against the blocks' 1.0x. */
#define F4_PROD_LANES 64
#define F4_RUN_BLOCK 1024   /* a strided run's values gathered at once (whole lane groups) */
#define PROD_COL_MAX 128    /* the widest block: columns, and 8 x PROD_COL_NV */
#define PROD_FEW_ROWS 32    /* up to this many rows in registers (prod_few_rows_f4) */

typedef float ProdVec __attribute__((vector_size(32)));
typedef float ProdVec16 __attribute__((vector_size(64)));
typedef int ProdIdx __attribute__((vector_size(32)));

#define PROD_ONES ((ProdVec){1, 1, 1, 1, 1, 1, 1, 1})

/* The lanes a[0..8) after the values x[i..n) of the last group (i + 64 > n), into lanes
 * 8v + k from value i + 8v + k */
static inline __attribute__((always_inline)) void
prod_lanes_tail(ProdVec *a, const float *x, int64_t i, int64_t n)
{
    for (int v = 0; v < F4_PROD_LANES / 8 && i < n; v++, i += 8) {
        ProdVec t = PROD_ONES;
        if (i + 8 <= n) {
            memcpy(&t, x + i, sizeof(t));
        }
        else if (n >= 8) {   /* x[n - 8 .. n): values i.. down to lanes 0.., ones above */
            int rem = (int)(n - i);
            ProdIdx iota = {0, 1, 2, 3, 4, 5, 6, 7}, keep = iota < rem;
            memcpy(&t, x + n - 8, sizeof(t));
            t = __builtin_shuffle(t, (iota + (8 - rem)) & 7);
            t = (ProdVec)(((ProdIdx)t & keep) | ((ProdIdx)PROD_ONES & ~keep));
        }
        else {
            for (int k = 0; k < n - i; k++) {
                t[k] = x[i + k];
            }
        }
        a[v] *= t;
    }
}

/* lanes[k] *= x[i + k] in float32 for the groups of F4_PROD_LANES values of x[0..n), then
 * for the last group's k < n % F4_PROD_LANES; with fold, the lanes folded pairwise and lane
 * 0 returned (lanes untouched), else the lanes stored back.  lanes NULL: from ones. */
static inline __attribute__((always_inline)) float
prod_lanes_body(float *lanes, const float *x, int64_t n, int fold)
{
    ProdVec a[F4_PROD_LANES / 8];
    int64_t i = 0;
    if (lanes == NULL && n < 8) {   /* lanes 0..n, the fold's last three levels */
        float t[8] = {1, 1, 1, 1, 1, 1, 1, 1};
        for (int64_t k = 0; k < n; k++) {
            t[k] = x[k];
        }
        return ((t[0] * t[4]) * (t[2] * t[6])) * ((t[1] * t[5]) * (t[3] * t[7]));
    }
    for (int v = 0; v < F4_PROD_LANES / 8; v++) {
        a[v] = PROD_ONES;
        if (lanes != NULL) {
            memcpy(&a[v], lanes + 8 * v, sizeof(a[v]));
        }
    }
    for (; i + F4_PROD_LANES <= n; i += F4_PROD_LANES) {
        for (int v = 0; v < F4_PROD_LANES / 8; v++) {
            ProdVec t;
            memcpy(&t, x + i + 8 * v, sizeof(t));
            a[v] *= t;
        }
    }
    prod_lanes_tail(a, x, i, n);
    if (!fold) {
        memcpy(lanes, a, sizeof(a));
        return 0;
    }
    for (int w = F4_PROD_LANES / 16; w >= 1; w /= 2) {   /* w = 32, 16, 8 lanes */
        for (int v = 0; v < w; v++) {
            a[v] *= a[v + w];
        }
    }
    ProdVec b = a[0];   /* w = 4, 2, 1 */
    b *= __builtin_shuffle(b, (ProdIdx){4, 5, 6, 7, 4, 5, 6, 7});
    b *= __builtin_shuffle(b, (ProdIdx){2, 3, 2, 3, 2, 3, 2, 3});
    b *= __builtin_shuffle(b, (ProdIdx){1, 1, 1, 1, 1, 1, 1, 1});
    return b[0];
}

PTL_LOOP_CLONES static float
prod_lanes_f4(float *lanes, const float *x, int64_t n, int fold)
{
    return prod_lanes_body(lanes, x, n, fold);
}

/* (reduce_kernels.h) the runs' loop in the clone, so that one run's multiplies overlap the
 * last one's fold (a call a run had cost prod(A, 1) of 1000 x 1000 a tenth, and of 10000 x
 * 100 half its time) */
PTL_LOOP_CLONES void
ptl_red_prod_runs_f4(const char *p, int64_t step, int64_t n, int64_t runs, float *out)
{
    for (int64_t r = 0; r < runs; r++) {
        out[r] = prod_lanes_body(NULL, (const float *)(p + r * step), n, 1);
    }
}

/* (reduce_kernels.h) */
double
ptl_red_prod_run_f4(const char *p, int64_t st, int64_t n)
{
    float lanes[F4_PROD_LANES], buf[F4_RUN_BLOCK];
    if (st == (int64_t)sizeof(float)) {
        return prod_lanes_f4(NULL, (const float *)p, n, 1);
    }
    for (int k = 0; k < F4_PROD_LANES; k++) {
        lanes[k] = 1;
    }
    for (int64_t b = 0; b < n; b += F4_RUN_BLOCK) {
        int64_t m = n - b < F4_RUN_BLOCK ? n - b : F4_RUN_BLOCK;
        for (int64_t k = 0; k < m; k++) {
            memcpy(&buf[k], p + (b + k) * st, sizeof(float));
        }
        if (b + m == n) {
            return prod_lanes_f4(lanes, buf, m, 1);
        }
        prod_lanes_f4(lanes, buf, m, 0);
    }
    return 1;   /* n == 0 */
}

/* row[k] *= x[k] in float32 (k < n) */
static inline __attribute__((always_inline)) void
prod_row_f4(float *restrict row, const float *restrict x, int64_t n)
{
    for (int64_t k = 0; k < n; k++) {
        row[k] *= x[k];
    }
}

/* val[k] = the product of column k (k < 8 nv) of the R rows q, q + rs, ... in lanes (Note
 * [Float32 products]), lanes l and l + 64 / s multiplied in registers; lanes: scratch of
 * 64 / s rows of 8 nv */
static inline __attribute__((always_inline)) void
prod_block_f4(double *val, float *lanes, const char *q, int64_t rs, int64_t R, const int s,
              const int nv)
{
    const int L = F4_PROD_LANES / s, width = 8 * nv;
    int live = R < L ? (int)R : L;
    for (int l = 0; l < live; l++) {
        ProdVec a[2][PROD_COL_MAX / 8];   /* [partner][vector] */
        int64_t r = l;
        for (int j = 0; j < s; j++) {
            for (int v = 0; v < nv; v++) {
                a[j][v] = PROD_ONES;
            }
        }
        for (; r + (s - 1) * L < R; r += F4_PROD_LANES) {
            for (int j = 0; j < s; j++) {
                const char *row = q + (r + j * L) * rs;
                for (int v = 0; v < nv; v++) {
                    ProdVec t;
                    memcpy(&t, row + v * (int64_t)sizeof(t), sizeof(t));
                    a[j][v] *= t;
                }
            }
        }
        for (int j = 0; j < s - 1 && r + j * L < R; j++) {   /* the partners with a row left */
            const char *row = q + (r + j * L) * rs;
            for (int v = 0; v < nv; v++) {
                ProdVec t;
                memcpy(&t, row + v * (int64_t)sizeof(t), sizeof(t));
                a[j][v] *= t;
            }
        }
        for (int w = s / 2; w >= 1; w /= 2) {
            for (int j = 0; j < w; j++) {
                for (int v = 0; v < nv; v++) {
                    a[j][v] *= a[j + w][v];
                }
            }
        }
        memcpy(lanes + l * width, a[0], sizeof(ProdVec) * (size_t)nv);
    }
    for (int w = L / 2; w >= 1; w /= 2) {   /* lanes from live on are ones */
        for (int l = 0; l < w && l + w < live; l++) {
            prod_row_f4(lanes + l * width, lanes + (l + w) * width, width);
        }
        live = live < w ? live : w;
    }
    for (int k = 0; k < width; k++) {
        val[k] = R > 0 ? lanes[k] : 1;
    }
}

/* val[k] (or out[k], val NULL) = the product of column k of the R rows p, p + rs, ... (k <
 * n) for R <= PROD_FEW_ROWS (a constant once inlined) and n >= 16: each row a lane (rows 16
 * on multiplied into lane l - 16, the fold's level 16), folded pairwise in registers, 16
 * columns at a time, the last 16 shifted left to end at n */
static inline __attribute__((always_inline)) void
prod_few_rows_f4(double *val, float *out, const char *p, int64_t rs, int64_t n, const int R)
{
    for (int64_t c0 = 0; c0 < n; c0 += 16) {
        const int64_t c = c0 + 16 <= n ? c0 : n - 16;
        ProdVec16 t[16];
        for (int l = 0; l < R && l < 16; l++) {
            memcpy(&t[l], p + l * rs + c * (int64_t)sizeof(float), sizeof(t[l]));
        }
        for (int l = 16; l < R; l++) {   /* the fold's level 16 */
            ProdVec16 u;
            memcpy(&u, p + l * rs + c * (int64_t)sizeof(float), sizeof(u));
            t[l - 16] *= u;
        }
        int live = R < 16 ? R : 16;   /* the fold's levels from w = 32 down to R's have no pair */
#pragma GCC unroll 4
        for (int w = 8; w >= 1; w /= 2) {
#pragma GCC unroll 8
            for (int l = 0; l < w; l++) {
                if (l + w < live) {
                    t[l] *= t[l + w];
                }
            }
            live = live < w ? live : w;
        }
        if (val == NULL) {
            memcpy(out + c, &t[0], sizeof(t[0]));
            continue;
        }
        for (int k = 0; k < 16; k++) {
            val[c + k] = t[0][k];
        }
    }
}

/* prod_few_rows_f4 for each R up to PROD_FEW_ROWS (a function of its own, so that the
 * blocks' code in prod_cols_f4 stays as it was) */
PTL_LOOP_CLONES_WIDE static void
prod_few_rows_any_f4(double *val, float *out, const char *p, int64_t rs, int64_t R,
                     int64_t n)
{
    switch (R) {
#define PROD_FEW_CASE(K)                                                                  \
    case K: prod_few_rows_f4(val, out, p, rs, n, K); return;
        PROD_FEW_CASE(1) PROD_FEW_CASE(2) PROD_FEW_CASE(3) PROD_FEW_CASE(4)
        PROD_FEW_CASE(5) PROD_FEW_CASE(6) PROD_FEW_CASE(7) PROD_FEW_CASE(8)
        PROD_FEW_CASE(9) PROD_FEW_CASE(10) PROD_FEW_CASE(11) PROD_FEW_CASE(12)
        PROD_FEW_CASE(13) PROD_FEW_CASE(14) PROD_FEW_CASE(15) PROD_FEW_CASE(16)
        PROD_FEW_CASE(17) PROD_FEW_CASE(18) PROD_FEW_CASE(19) PROD_FEW_CASE(20)
        PROD_FEW_CASE(21) PROD_FEW_CASE(22) PROD_FEW_CASE(23) PROD_FEW_CASE(24)
        PROD_FEW_CASE(25) PROD_FEW_CASE(26) PROD_FEW_CASE(27) PROD_FEW_CASE(28)
        PROD_FEW_CASE(29) PROD_FEW_CASE(30) PROD_FEW_CASE(31) PROD_FEW_CASE(32)
#undef PROD_FEW_CASE
    default: return;
    }
}

/* val[k] = the product of column k of the R rows p, p + rs, ... (k < n): blocks of 8 nv
 * columns of s partners, the last shifted left to end at n, then blocks of 32 and of 8
 * columns for what is narrower, the lanes a row at a time below 8 */
static inline __attribute__((always_inline)) void
prod_cols_f4(double *val, const char *p, int64_t rs, int64_t R, int64_t n, const int s,
             const int nv)
{
    float lanes[F4_PROD_LANES * 96];   /* the most of 64 / s x 8 nv over the calls */
    if (n >= 8 * nv) {
        for (int64_t c0 = 0; c0 < n; c0 += 8 * nv) {
            int64_t c = c0 + 8 * nv <= n ? c0 : n - 8 * nv;
            prod_block_f4(val + c, lanes, p + c * (int64_t)sizeof(float), rs, R, s, nv);
        }
    }
    else if (n >= 32) {
        for (int64_t c0 = 0; c0 < n; c0 += 32) {
            int64_t c = c0 + 32 <= n ? c0 : n - 32;
            prod_block_f4(val + c, lanes, p + c * (int64_t)sizeof(float), rs, R, 1, 4);
        }
    }
    else if (n >= 8) {
        for (int64_t c0 = 0; c0 < n; c0 += 8) {
            int64_t c = c0 + 8 <= n ? c0 : n - 8;
            prod_block_f4(val + c, lanes, p + c * (int64_t)sizeof(float), rs, R, 1, 1);
        }
    }
    else {
        for (int l = 0; l < F4_PROD_LANES; l++) {
            for (int64_t k = 0; k < n; k++) {
                lanes[l * 8 + k] = 1;
            }
        }
        for (int64_t r = 0; r < R; r++) {
            prod_row_f4(lanes + r % F4_PROD_LANES * 8, (const float *)(p + r * rs), n);
        }
        for (int w = F4_PROD_LANES / 2; w >= 1; w /= 2) {
            for (int l = 0; l < w; l++) {
                prod_row_f4(lanes + l * 8, lanes + (l + w) * 8, n);
            }
        }
        for (int64_t k = 0; k < n; k++) {
            val[k] = lanes[k];
        }
    }
}

PTL_LOOP_CLONES static void
prod_cols_f4_narrow(double *val, const char *p, int64_t rs, int64_t R, int64_t n)
{
    if (R >= 2 * F4_PROD_LANES) {
        prod_cols_f4(val, p, rs, R, n, 1, 12);
    }
    else {
        prod_cols_f4(val, p, rs, R, n, 2, 6);
    }
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(PTL_NO_LOOP_CLONES)
__attribute__((target("avx512f,avx512vl"))) static void
prod_cols_f4_wide(double *val, const char *p, int64_t rs, int64_t R, int64_t n)
{
    prod_cols_f4(val, p, rs, R, n, 2, PROD_COL_MAX / 8);
}
#endif

/* (reduce_kernels.h) */
void
ptl_red_prod_rows_f4(double *val, const char *p, int64_t rs, int64_t R, int64_t n)
{
    if (R >= 1 && R <= PROD_FEW_ROWS && n >= 16) {
        prod_few_rows_any_f4(val, NULL, p, rs, R, n);
        return;
    }
#if defined(__x86_64__) && defined(__GNUC__) && !defined(PTL_NO_LOOP_CLONES)
    if (ptl_cpu_capability() >= PTL_CPU_AVX512) {
        prod_cols_f4_wide(val, p, rs, R, n);
        return;
    }
#endif
    prod_cols_f4_narrow(val, p, rs, R, n);
}

/* (reduce_kernels.h) */
int
ptl_red_prod_rows_f4_put(float *out, const char *p, int64_t rs, int64_t R, int64_t n)
{
    if (R < 1 || R > PROD_FEW_ROWS || n < 16) {
        return 0;
    }
    prod_few_rows_any_f4(NULL, out, p, rs, R, n);
    return 1;
}
