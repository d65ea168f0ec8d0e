/* reduce_prod.c -- float32 products in float32 lanes (Note [Float32 products]): the product
 * of a run and the products of the columns of a block of rows, which reduce_kernels.c's
 * ptl_red_prod_lowp and ptl_red_prod_rows_lowp take for float32 (reduce.c's plans, Note
 * [Reduction plan]).  Mirrors the float32 prod of ATen/native/cpu/ReduceOpsKernel.cpp. */
#include <float.h>
#include <math.h>
#include <stdint.h>
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
 * Up to PROD_FEW_ROWS rows (from 16 columns), each row is its own lane: 16 columns a step,
 * the fold's levels from 32 down evaluated depth first in registers (lane l after level 16
 * is (r_l r_{l+32}) (r_{l+16} r_{l+48}), absent rows skipped), the last 16 columns shifted
 * left to end at the last column; the same bits.  For a float32 output the products go
 * straight into it (ptl_red_prod_rows_f4_put), not through reduce.c's double values (their
 * conversion back was a quarter of 4 x 100000).  Through the blocks, a row costs a lane's
 * 32 vectors of ones, their fold and store, and the memory fold after: prod(0) of 4 x 100000
 * ran at 0.27x PyTorch's time, 8 x 65536 0.24x, 17 x 65536 0.28x, and from 33 rows (blocks
 * again, until session 31) 33 x 4096 0.46x, 64 x 1000 0.58x (one thread, Zen 4); with a
 * fold whose levels GCC did not unroll (live rows counted at run time), t[] went through
 * the stack and 8 x 65536 ran at 0.48x.
 *
 * Rows whose addresses are equal modulo 4096 (a power-of-two row of 1024 floats or more)
 * share one set of the 8-way L1: a step's 16 to 64 loads, and the next lines the hardware
 * prefetches for each, evict one another, and 32 x 4096 ran 2.6x the time of 32 x 4000
 * (0.9x PyTorch's time, which has the same trouble).  From PROD_STAGE_ROWS rows, where more
 * than 8 share a set (prod_rows_alias), blocks of PROD_STAGE_COLS columns go through a stage
 * instead: lane l < 8 after the fold's level 8 (rows l + 8 j, up to 8, read together a
 * 64-byte step, 1 KiB of each row in turn) into stage[l], then the 8 staged lanes folded in
 * registers; the same bits again.  32 x 4096 runs at 1.9-2.2x PyTorch's time, 64 x 4096
 * 2.3-2.4x, 16 x 65536 (from L3) 1.03-1.06x against the registers' 0.87-0.90x.  Below 16
 * rows the registers stay (9 x 65536: the stage's lanes of one row each ran 0.78x against
 * 1.0x), and two lanes staged together (16 rows in flight) ran 64 x 4096 at 1.33x.
 *
 * Many contiguous runs (prod(1)) take a loop made for their length: below 8 values the
 * fold's last three levels of the values themselves; up to PROD_SHORT_RUN values the
 * vectors that hold values (ceil(n / 8), the last moved down with ones above), folded only
 * where they hold values; past that the lanes with the last group's count of vectors a
 * constant.  The runs up to PROD_SHORT_RUN values are checked for a product that left the
 * normal range PROD_SHORT_CHECK at a time (a 0 product looks for a 0 in its run, 128 values
 * at most, in place).  The products of the columns of up to PROD_FEW_ROWS rows are marked
 * as they are made, 16 at a time, when one is not normal (prod_put_marked: an and, a
 * subtraction, a compare and an or a vector), and only then checked one by one: a second
 * pass over the products had kept prod(0) of 2 x 100000 at 0.94x PyTorch's time, 4 x
 * 100000 at 0.90x (one thread, Zen 4).  The same bits; the one loop for any length, its
 * last group's vectors picked at run time and its lanes through the stack, ran prod(1) of 100000 x 5 at 0.59x PyTorch's time, 100000 x
 * 8 0.73x, 20000 x 33 0.50x, 10000 x 100 0.55x, 5000 x 129 0.58x, and prod_suspect a column
 * (a call each) prod(0) of 2 x 100000 at 0.22x (one thread, Zen 4). */
/* Note [Float32 products at the ends of the range]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A lane's partial product can underflow to 0 or overflow to inf where the whole product
 * does not: 2049 values in [-2, 2] and an inf gave NaN (a lane's 0 times the inf's) where
 * the product is +-inf, and 1e30, 1e30, 1e-30, 1e-30 in one lane gave inf for 1.  A
 * partial product that left the normal range leaves its mark on the result, which is then
 * 0, a subnormal, +-inf or NaN.  The lanes' signs are exact, an inf or NaN value makes the
 * result inf or NaN, a 0 value makes it 0 or NaN: so a 0 result is right when a value is 0,
 * an inf when a value is inf, a NaN when a value is NaN (prod_suspect looks for the first
 * such value).  A contiguous run's 0 is looked for in its lanes instead: a 0 value makes its
 * lane 0, so prod_lanes_body keeps the 64 lanes through the fold and, for a 0 product,
 * searches the values of the last lane that is 0 (one in 64); a lane that underflowed has
 * none, and the run goes on to the search.  The search of the run to its 0 had made prod(1)
 * of 1000 x 1000 with a 0 in column 500 of each row 0.57x PyTorch's time, its 0 at the end
 * 0.42x (one thread, Zen 4); tracking 0s during the pass (a compare and an or a vector) cost
 * the runs without one 10% to 2x.  Otherwise the run (or
 * column) is multiplied again by prod_exact_f4: in double with the exponent kept apart
 * (frexp every 4 values: four float32 factors stay inside double's range), which gives the
 * exact product's rounding, 0 or +-inf only when that is, NaN only for a NaN or a 0 times
 * an inf.  PyTorch's float32 lanes give NaN or 0 there (its NaN for 2049 values and an inf
 * at the end). */
#define F4_PROD_LANES 64
#define F4_RUN_BLOCK 1024   /* a strided run's values gathered at once (whole lane groups) */
#define PROD_COL_MAX 128    /* the widest block: columns, and 8 x PROD_COL_NV */
#define PROD_STAGE_COLS 256 /* columns a block of prod_few_rows_staged_f4 */
#define PROD_STAGE_ROWS 16  /* from this many rows sharing L1 sets, through the stage */
#define PROD_FEW_ROWS 64    /* up to this many rows in registers or the stage */
#define PROD_SHORT_RUN 128  /* runs up to this long each in its own loop (prod_short_runs_f4) */
#define PROD_SHORT_CHECK 256 /* those runs checked at once */

/* C(K) for K = B + 1 .. B + 8: the cases of a switch over a count that the kernels take as
 * a constant */
#define PROD_CASES_8(C, B) C((B) + 1) C((B) + 2) C((B) + 3) C((B) + 4) C((B) + 5) C((B) + 6) \
                           C((B) + 7) C((B) + 8)

typedef float ProdVec __attribute__((vector_size(32)));
typedef float ProdVec16 __attribute__((vector_size(64)));
typedef int ProdIdx __attribute__((vector_size(32)));
typedef unsigned ProdBits __attribute__((vector_size(32)));

#define PROD_ONES ((ProdVec){1, 1, 1, 1, 1, 1, 1, 1})

/* *t = the values x[n - rem..n) in lanes 0..rem with ones above (1 <= rem <= 8 <= n) */
static inline __attribute__((always_inline)) void
prod_last_vec(ProdVec *t, const float *x, int64_t n, int rem)
{
    ProdIdx iota = {0, 1, 2, 3, 4, 5, 6, 7}, keep = iota < rem;
    memcpy(t, x + n - 8, sizeof(*t));
    *t = __builtin_shuffle(*t, (iota + (8 - rem)) & 7);
    *t = (ProdVec)(((ProdIdx)*t & keep) | ((ProdIdx)PROD_ONES & ~keep));
}

/* The lanes a[0..8) after the values x[i..n) of the last group (i + 64 > n), into lanes
 * 8v + k from value i + 8v + k; nt: the group's count of vectors, ceil((n - i) / 8), when
 * a constant (and n >= 8), else -1 */
static inline __attribute__((always_inline)) void
prod_lanes_tail(ProdVec *a, const float *x, int64_t i, int64_t n, const int nt)
{
    if (nt >= 0) {
        for (int v = 0; v < nt; v++) {
            ProdVec t;
            if (v < nt - 1) {
                memcpy(&t, x + i + 8 * v, sizeof(t));
            }
            else {
                prod_last_vec(&t, x, n, (int)(n - i - 8 * v));
            }
            a[v] *= t;
        }
        return;
    }
#pragma GCC unroll 8
    for (int v = 0; v < F4_PROD_LANES / 8 && i < n; v++, i += 8) {
        ProdVec t = PROD_ONES;
        if (i + 8 <= n) {
            memcpy(&t, x + i, sizeof(t));
        }
        else if (n >= 8) {   /* x[n - 8 .. n): values i.. down to lanes 0.., ones above */
            prod_last_vec(&t, x, n, (int)(n - i));
        }
        else {
            for (int k = 0; k < n - i; k++) {
                t[k] = x[i + k];
            }
        }
        a[v] *= t;
    }
}

/* The product of lanes t[0..8) in the fold's last three levels (w = 4, 2, 1) */
static inline __attribute__((always_inline)) float
prod_fold8(const float *t)
{
    return ((t[0] * t[4]) * (t[2] * t[6])) * ((t[1] * t[5]) * (t[3] * t[7]));
}

/* Whether one of the values x[l], x[l + F4_PROD_LANES], ... (those below n) is 0 */
static inline __attribute__((always_inline)) int
prod_lane_has_zero(const float *x, int64_t l, int64_t n)
{
    for (int64_t i = l; i < n; i += F4_PROD_LANES) {
        if (x[i] == 0.0f) {
            return 1;
        }
    }
    return 0;
}

/* lanes[k] *= x[i + k] in float32 for the groups of F4_PROD_LANES values of x[0..n), then
 * for the last group's k < n % F4_PROD_LANES; with fold, the lanes folded pairwise and lane
 * 0 returned (lanes untouched), else the lanes stored back.  lanes NULL: from ones.  zero
 * (not NULL, with lanes NULL and fold): set to 1 when the product is 0 and a value is 0,
 * found in the last lane that is 0 (Note [Float32 products at the ends of the range]). */
static inline __attribute__((always_inline)) float
prod_lanes_body(float *lanes, const float *x, int64_t n, int fold, int *zero, const int nt)
{
    ProdVec a[F4_PROD_LANES / 8], c[F4_PROD_LANES / 32], b;
    int64_t i = 0;
    if (lanes == NULL && n < 8) {   /* lanes 0..n, the fold's last three levels */
        float t[8] = {1, 1, 1, 1, 1, 1, 1, 1};
        for (int64_t k = 0; k < n; k++) {
            t[k] = x[k];
        }
        float v = prod_fold8(t);
        for (int64_t k = 0; zero != NULL && v == 0.0f && k < n; k++) {
            *zero |= x[k] == 0.0f;
        }
        return v;
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
    prod_lanes_tail(a, x, i, n, nt);
    if (!fold) {
        memcpy(lanes, a, sizeof(a));
        return 0;
    }
    if (zero == NULL) {
        for (int w = F4_PROD_LANES / 16; w >= 1; w /= 2) {   /* w = 32, 16, 8 lanes */
            for (int v = 0; v < w; v++) {
                a[v] *= a[v + w];
            }
        }
        b = a[0];
    }
    else {   /* the same levels, a kept */
        for (int v = 0; v < F4_PROD_LANES / 32; v++) {
            c[v] = (a[v] * a[v + 4]) * (a[v + 2] * a[v + 6]);
        }
        b = c[0] * c[1];
    }
    /* w = 4, 2, 1 */
    b *= __builtin_shuffle(b, (ProdIdx){4, 5, 6, 7, 4, 5, 6, 7});
    b *= __builtin_shuffle(b, (ProdIdx){2, 3, 2, 3, 2, 3, 2, 3});
    b *= __builtin_shuffle(b, (ProdIdx){1, 1, 1, 1, 1, 1, 1, 1});
    if (zero != NULL && b[0] == 0.0f) {   /* rare: the last lane that is 0 */
        ProdIdx iota = {0, 1, 2, 3, 4, 5, 6, 7}, last = iota - 8;
        int l = -1;
        for (int v = 0; v < F4_PROD_LANES / 8; v++) {
            ProdIdx m = a[v] == 0.0f;
            last = (last & ~m) | ((iota + 8 * v) & m);
        }
        for (int k = 0; k < 8; k++) {
            l = last[k] > l ? last[k] : l;
        }
        *zero = l >= 0 && prod_lane_has_zero(x, l, n);
    }
    return b[0];
}

PTL_LOOP_CLONES static float
prod_lanes_f4(float *lanes, const float *x, int64_t n, int fold, int *zero)
{
    return prod_lanes_body(lanes, x, n, fold, zero, -1);
}

/* Whether one of the n values p[0], p[st], ... is 0 (what 0), +-inf (1) or NaN (2): its bits
 * shifted past the sign in [lo, hi], 512 values at a time, the contiguous ones in a loop gcc
 * vectorizes (64 at a time, its reduction and exit test ran at a third of the speed) */
PTL_LOOP_CLONES static int
prod_has_f4(const char *p, int64_t st, int64_t n, int what)
{
    const uint32_t lo = what == 0 ? 0 : what == 1 ? 0xff000000u : 0xff000001u;
    const uint32_t span = (what == 2 ? 0xffffffffu : lo) - lo;
    for (int64_t i = 0; i < n; i += 512) {
        int64_t m = n - i < 512 ? n - i : 512;
        uint32_t hit = 0, b;
        if (st == (int64_t)sizeof(float)) {
            const uint32_t *x = (const uint32_t *)(const void *)p + i;
            for (int64_t j = 0; j < m; j++) {
                hit |= (x[j] << 1) - lo <= span;
            }
        }
        else {
            for (int64_t j = 0; j < m; j++) {
                memcpy(&b, p + (i + j) * st, sizeof b);
                hit |= (b << 1) - lo <= span;
            }
        }
        if (hit) {
            return 1;
        }
    }
    return 0;
}

/* Whether the lanes' product v of the n values p[0], p[st], ... may not be the exact
 * product's rounding (Note [Float32 products at the ends of the range]): a normal v is;
 * a 0 is when a value is 0, an inf when a value is inf, a NaN when a value is NaN.  zero: 1
 * when a value is known to be 0 (prod_lanes_body's), else 0 (then searched for) */
static int
prod_suspect(float v, int zero, const char *p, int64_t st, int64_t n)
{
    float a = fabsf(v);
    if ((a >= FLT_MIN && a <= FLT_MAX) || (a == 0.0f && zero)) {
        return 0;
    }
    int what = a == 0.0f ? 0 : a == INFINITY ? 1 : v != v ? 2 : -1;
    return what < 0 || !prod_has_f4(p, st, n, what);
}

/* Whether the m products v[0..m) are all normal, so that none is suspect (prod_suspect): a
 * loop gcc vectorizes (prod_suspect a column, a call each, had been 6 times the products of
 * prod(0) of 2 x 100000) */
PTL_LOOP_CLONES static int
prod_all_normal_f4(const float *v, int64_t m)
{
    int normal = 1;
    for (int64_t k = 0; k < m; k++) {
        float a = fabsf(v[k]);
        normal &= (a >= FLT_MIN) & (a <= FLT_MAX);
    }
    return normal;
}

/* out[0..16) = t, and *bad |= lanes of t that are not normal (0, subnormal, +-inf, NaN):
 * |t|'s bits less those of FLT_MIN are below those of FLT_MAX less FLT_MIN (0x7f000000)
 * only for a normal t (a 0 or a subnormal wraps around), the check of prod_all_normal_f4
 * fused into the pass that makes the products.  u >= 0x7f000000 is written as (u >> 24) +
 * 1 >= 128, by shifts and an add: gcc makes a compare of 16-lane vectors 16 scalar
 * compares in the AVX2 clone (which has no 64-byte vectors), and that had kept prod(0) of
 * 2 x 100000 at 0.3x PyTorch's time on a Zen 3.  The store and the marks go by 8-lane
 * halves of t into 8-lane marks: the AVX2 clone had kept a 16-lane bad and t's store in
 * the stack, written by 8-byte pieces and read back whole (a stalled store forwarding a
 * step), and prod(0) of 2 x 100000 ran at 0.43x PyTorch's time on a Zen 3. */
static inline __attribute__((always_inline)) void
prod_put_marked(float *out, ProdBits *bad, ProdVec16 t)
{
    ProdVec h[2] = {__builtin_shufflevector(t, t, 0, 1, 2, 3, 4, 5, 6, 7),
                    __builtin_shufflevector(t, t, 8, 9, 10, 11, 12, 13, 14, 15)};
    for (int i = 0; i < 2; i++) {
        ProdBits u = ((ProdBits)h[i] & 0x7fffffffu) - 0x00800000u;
        *bad |= ((u >> 24) + 1) >> 7;
        memcpy(out + 8 * i, &h[i], sizeof(h[i]));
    }
}

/* Whether no lane of bad is marked (prod_put_marked) */
static inline __attribute__((always_inline)) int
prod_none_marked(ProdBits bad)
{
    unsigned any = 0;
    for (int k = 0; k < 8; k++) {
        any |= bad[k];
    }
    return any == 0;
}

/* The product of the n float32 values p[0], p[st], ... in double, the exponent kept apart:
 * the exact product's rounding to double (Note [Float32 products at the ends of the
 * range]) */
static double
prod_exact_f4(const char *p, int64_t st, int64_t n)
{
    double m = 1.0;
    int64_t e = 0;
    for (int64_t i = 0; i < n; i++) {
        float x;
        memcpy(&x, p + i * st, sizeof x);
        m *= (double)x;
        if ((i & 3) == 3 && m != 0.0 && isfinite(m)) {
            int k;
            m = frexp(m, &k);
            e += k;
        }
    }
    e = e < -4000 ? -4000 : e > 4000 ? 4000 : e;
    return ldexp(m, (int)e);
}

/* The lanes' product of the contiguous run x[0..n) of 8 (nv - 1) < n <= 8 nv values, nv <=
 * 16 (a constant once inlined): vector v of the lanes is x[8 v..) (v < 8) times x[64 + 8 v..)
 * (v + 8 < nv), the last vector x[n - 8..n) moved down with ones above, and only the vectors
 * that hold values are folded */
static inline __attribute__((always_inline)) float
prod_group_f4(const float *x, int64_t n, const int nv)
{
    ProdVec a[8], b, t;
    const int rem = (int)(n - 8 * (nv - 1));   /* 1..8 */
    int live = nv < 8 ? nv : 8;
    for (int v = 0; v < nv; v++) {
        if (v < nv - 1) {
            memcpy(&t, x + 8 * v, sizeof(t));
        }
        else {
            prod_last_vec(&t, x, n, rem);
        }
        if (v < 8) {
            a[v] = t;
        }
        else {
            a[v - 8] *= t;
        }
    }
    for (int w = F4_PROD_LANES / 16; w >= 1; w /= 2) {   /* w = 32, 16, 8 lanes */
        for (int v = 0; v < w && v + w < live; v++) {
            a[v] *= a[v + w];
        }
        live = live < w ? live : w;
    }
    b = a[0];
    b *= __builtin_shuffle(b, (ProdIdx){4, 5, 6, 7, 4, 5, 6, 7});
    b *= __builtin_shuffle(b, (ProdIdx){2, 3, 2, 3, 2, 3, 2, 3});
    b *= __builtin_shuffle(b, (ProdIdx){1, 1, 1, 1, 1, 1, 1, 1});
    return b[0];
}

/* Whether one of the values of the run x[0..n) is 0 (n < 8 for nv 0, else 8 (nv - 1) < n <=
 * 8 nv, nv a constant once inlined): below 8 values the least of their bits past the sign
 * (0 only for +-0), else the run compared whole, prod_group_f4's nv vectors (the last one
 * ending at x[n]) at a time, the lanes' hits folded in the vector.  The search that stopped
 * at the first 0 went value after value: a 0 in each row had left prod(1) of 100000 x 5 at
 * 0.80x PyTorch's time, 10000 x 100 at 0.64x, 20000 x 33 at 0.60x (one thread). */
static inline __attribute__((always_inline)) int
prod_run_has_zero(const float *x, int64_t n, const int nv)
{
    ProdIdx hit = {0};
    ProdVec b;
    uint32_t least = UINT32_MAX, u;
    for (int64_t k = 0; nv == 0 && k < n; k++) {
        memcpy(&u, x + k, sizeof u);
        least = u << 1 < least ? u << 1 : least;
    }
    for (int v = 0; v < nv; v++) {
        memcpy(&b, v < nv - 1 ? x + 8 * v : x + n - 8, sizeof(b));
        hit |= b == 0.0f;
    }
    hit |= __builtin_shuffle(hit, (ProdIdx){4, 5, 6, 7, 4, 5, 6, 7});
    hit |= __builtin_shuffle(hit, (ProdIdx){2, 3, 2, 3, 2, 3, 2, 3});
    hit |= __builtin_shuffle(hit, (ProdIdx){1, 1, 1, 1, 1, 1, 1, 1});
    return least == 0 || hit[0] != 0;
}

/* out[r] = the product of the run at p + r * step of n values (r < runs): below 8 (nv 0) the
 * fold's last three levels of the values, else prod_group_f4's (nv = ceil(n / 8), a constant
 * once inlined); then the suspect ones multiplied again, PROD_SHORT_CHECK runs at a time (a
 * 0 product searches its run for a 0: at most 128 values) */
static inline __attribute__((always_inline)) void
prod_short_runs_f4(const char *p, int64_t step, int64_t n, int64_t runs, float *out,
                   const int nv)
{
    for (int64_t r0 = 0; r0 < runs; r0 += PROD_SHORT_CHECK) {
        const int64_t m = runs - r0 < PROD_SHORT_CHECK ? runs - r0 : PROD_SHORT_CHECK;
        for (int64_t r = r0; r < r0 + m; r++) {
            const float *x = (const float *)(p + r * step);
            if (nv > 0) {
                out[r] = prod_group_f4(x, n, nv);
                continue;
            }
            float t[8] = {1, 1, 1, 1, 1, 1, 1, 1};
            for (int k = 0; k < n; k++) {
                t[k] = x[k];
            }
            out[r] = prod_fold8(t);
        }
        const int normal = prod_all_normal_f4(out + r0, m);
        for (int64_t r = r0; !normal && r < r0 + m; r++) {
            const float *x = (const float *)(p + r * step);
            if (out[r] == 0.0f && prod_run_has_zero(x, n, nv)) {   /* a 0 value's 0: right */
                continue;
            }
            if (prod_suspect(out[r], 0, p + r * step, (int64_t)sizeof(float), n)) {
                out[r] = (float)prod_exact_f4(p + r * step, (int64_t)sizeof(float), n);
            }
        }
    }
}

/* out[r] = the product of the run at p + r * step of n > PROD_SHORT_RUN values (r < runs),
 * its last group nt vectors (a constant once inlined) */
static inline __attribute__((always_inline)) void
prod_long_runs_f4(const char *p, int64_t step, int64_t n, int64_t runs, float *out,
                  const int nt)
{
    for (int64_t r = 0; r < runs; r++) {
        int zero = 0;
        out[r] = prod_lanes_body(NULL, (const float *)(p + r * step), n, 1, &zero, nt);
        if (prod_suspect(out[r], zero, p + r * step, (int64_t)sizeof(float), n)) {
            out[r] = (float)prod_exact_f4(p + r * step, (int64_t)sizeof(float), n);
        }
    }
}

/* (reduce_kernels.h) the runs' loop in the clone, so that one run's multiplies overlap the
 * last one's fold (a call a run had cost prod(A, 1) of 1000 x 1000 a tenth, and of 10000 x
 * 100 half its time); a loop for each short length and count of vectors (Note [Float32
 * products]) */
PTL_LOOP_CLONES void
ptl_red_prod_runs_f4(const char *p, int64_t step, int64_t n, int64_t runs, float *out)
{
    switch (n) {
#define PROD_SHORT_CASE(K)                                                                \
    case K: prod_short_runs_f4(p, step, K, runs, out, 0); return;
        PROD_CASES_8(PROD_SHORT_CASE, -1)
#undef PROD_SHORT_CASE
    default: break;
    }
    switch (n <= PROD_SHORT_RUN ? (n + 7) / 8 : 0) {
#define PROD_GROUP_CASE(K)                                                                \
    case K: prod_short_runs_f4(p, step, n, runs, out, K); return;
        PROD_CASES_8(PROD_GROUP_CASE, 0) PROD_CASES_8(PROD_GROUP_CASE, 8)
#undef PROD_GROUP_CASE
    default: break;
    }
    switch ((n % F4_PROD_LANES + 7) / 8) {
#define PROD_LONG_CASE(K)                                                                 \
    case K: prod_long_runs_f4(p, step, n, runs, out, K); return;
        PROD_CASES_8(PROD_LONG_CASE, -1) PROD_LONG_CASE(8)
#undef PROD_LONG_CASE
    default: return;
    }
}

/* The lanes' product of the n values p[0], p[st], ...; zero as prod_lanes_body's for a
 * contiguous run */
static float
prod_run_lanes_f4(const char *p, int64_t st, int64_t n, int *zero)
{
    float lanes[F4_PROD_LANES], buf[F4_RUN_BLOCK];
    if (st == (int64_t)sizeof(float)) {
        return prod_lanes_f4(NULL, (const float *)p, n, 1, zero);
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
            return prod_lanes_f4(lanes, buf, m, 1, NULL);
        }
        prod_lanes_f4(lanes, buf, m, 0, NULL);
    }
    return 1;   /* n == 0 */
}

/* (reduce_kernels.h) */
double
ptl_red_prod_run_f4(const char *p, int64_t st, int64_t n)
{
    int zero = 0;
    float v = prod_run_lanes_f4(p, st, n, &zero);
    return prod_suspect(v, zero, p, st, n) ? prod_exact_f4(p, st, n) : v;
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

/* *a = lane l (l < 16) of 16 columns at q after the fold's levels 32 and 16: rows l,
 * l + 32, l + 16 and l + 48 of R, (r_l r_{l+32}) (r_{l+16} r_{l+48}), the rows from R on
 * ones (skipped: x * 1 is x); R > l */
static inline __attribute__((always_inline)) void
prod_few_leaf(ProdVec16 *a, const char *q, int64_t rs, const int R, const int l)
{
    ProdVec16 b, u;
    memcpy(a, q + l * rs, sizeof(*a));
    if (l + 32 < R) {
        memcpy(&u, q + (l + 32) * rs, sizeof(u));
        *a *= u;
    }
    if (l + 16 < R) {
        memcpy(&b, q + (l + 16) * rs, sizeof(b));
        if (l + 48 < R) {
            memcpy(&u, q + (l + 48) * rs, sizeof(u));
            b *= u;
        }
        *a *= b;
    }
}

/* *a = lane l after the fold's level W (8, 4, 2, 1; l < W, R > l): lane l of level 2 W
 * times lane l + W where it holds a row; depth first, so that few vectors are live */
#define PROD_FEW_NODE(W, CHILD)                                                             \
    static inline __attribute__((always_inline)) void                                      \
    prod_few_node##W(ProdVec16 *a, const char *q, int64_t rs, const int R, const int l)    \
    {                                                                                       \
        CHILD(a, q, rs, R, l);                                                              \
        if (l + (W) < R) {                                                                  \
            ProdVec16 b;                                                                    \
            CHILD(&b, q, rs, R, l + (W));                                                   \
            *a *= b;                                                                        \
        }                                                                                   \
    }
PROD_FEW_NODE(8, prod_few_leaf)
PROD_FEW_NODE(4, prod_few_node8)
PROD_FEW_NODE(2, prod_few_node4)
PROD_FEW_NODE(1, prod_few_node2)
#undef PROD_FEW_NODE

/* val[k] (or out[k], val NULL) = the product of column k of the R rows p, p + rs, ... (k <
 * n) for R <= PROD_FEW_ROWS (a constant once inlined) and n >= 16: each row a lane, the
 * fold's levels from 32 down evaluated depth first in registers, 16 columns at a time, the
 * last 16 shifted left to end at n.  Returns whether every product is normal (into out
 * only; 0 for val) */
static inline __attribute__((always_inline)) int
prod_few_rows_f4(double *val, float *out, const char *p, int64_t rs, int64_t n, const int R)
{
    ProdBits bad = {0};
    for (int64_t c0 = 0; c0 < n; c0 += 16) {
        const int64_t c = c0 + 16 <= n ? c0 : n - 16;
        ProdVec16 t;
        prod_few_node1(&t, p + c * (int64_t)sizeof(float), rs, R, 0);
        if (val == NULL) {
            prod_put_marked(out + c, &bad, t);
            continue;
        }
        for (int k = 0; k < 16; k++) {
            val[c + k] = t[k];
        }
    }
    return val == NULL && prod_none_marked(bad);
}

/* lane[k] = column k's product of the rows l + 8 j (j < 8, those below R: the first cnt)
 * in the fold's order, lanes l and l + 32, l + 16 and l + 48 (levels 32 and 16), then l and
 * l + 8 (level 8), for k < PROD_STAGE_COLS; q's rows rs bytes apart */
static inline __attribute__((always_inline)) void
prod_stage_lane(float *restrict lane, const char *q, int64_t rs, const int cnt)
{
    for (int k = 0; k < PROD_STAGE_COLS; k += 16) {
        ProdVec16 h[2];   /* lanes l and l + 8 after level 16 */
        for (int i = 0; i < 2 && i < cnt; i++) {
            ProdVec16 x, y;
            memcpy(&h[i], q + (8 * i) * rs + k * (int64_t)sizeof(float), sizeof(h[i]));
            if (4 + i < cnt) {   /* row + 32 */
                memcpy(&x, q + (8 * i + 32) * rs + k * (int64_t)sizeof(float), sizeof(x));
                h[i] *= x;
            }
            if (2 + i < cnt) {   /* row + 16, times row + 48 */
                memcpy(&y, q + (8 * i + 16) * rs + k * (int64_t)sizeof(float), sizeof(y));
                if (6 + i < cnt) {
                    memcpy(&x, q + (8 * i + 48) * rs + k * (int64_t)sizeof(float),
                           sizeof(x));
                    y *= x;
                }
                h[i] *= y;
            }
        }
        if (cnt > 1) {
            h[0] *= h[1];
        }
        memcpy(lane + k, &h[0], sizeof(h[0]));
    }
}

/* prod_few_rows_f4 for 8 < R <= PROD_FEW_ROWS and n >= PROD_STAGE_COLS, rows that share L1
 * sets, through a staging buffer: PROD_STAGE_COLS columns at a time, the 8 lanes after the
 * fold's levels 32, 16 and 8 into stage (a lane's rows read together), then those 8 lanes
 * folded in registers; the last block shifted left to end at n.  Returns prod_few_rows_f4's
 * flag */
PTL_LOOP_CLONES_WIDE static int
prod_few_rows_staged_f4(double *val, float *out, const char *p, int64_t rs, int64_t R,
                        int64_t n)
{
    float stage[8 * PROD_STAGE_COLS] __attribute__((aligned(64)));
    ProdBits bad = {0};
    for (int64_t c0 = 0; c0 < n; c0 += PROD_STAGE_COLS) {
        const int64_t c = c0 + PROD_STAGE_COLS <= n ? c0 : n - PROD_STAGE_COLS;
        const char *q = p + c * (int64_t)sizeof(float);
        for (int l = 0; l < 8; l++) {
            float *lane = stage + l * PROD_STAGE_COLS;
            const char *ql = q + l * rs;
            switch ((R - l + 7) / 8) {   /* the rows l + 8 j below R */
            case 1: prod_stage_lane(lane, ql, rs, 1); break;
            case 2: prod_stage_lane(lane, ql, rs, 2); break;
            case 3: prod_stage_lane(lane, ql, rs, 3); break;
            case 4: prod_stage_lane(lane, ql, rs, 4); break;
            case 5: prod_stage_lane(lane, ql, rs, 5); break;
            case 6: prod_stage_lane(lane, ql, rs, 6); break;
            case 7: prod_stage_lane(lane, ql, rs, 7); break;
            default: prod_stage_lane(lane, ql, rs, 8); break;
            }
        }
        for (int k = 0; k < PROD_STAGE_COLS; k += 16) {
            ProdVec16 t;
            prod_few_node1(&t, (const char *)(stage + k),
                           PROD_STAGE_COLS * (int64_t)sizeof(float), 8, 0);
            if (val == NULL) {
                prod_put_marked(out + c + k, &bad, t);
                continue;
            }
            for (int i = 0; i < 16; i++) {
                val[c + k + i] = t[i];
            }
        }
    }
    return val == NULL && prod_none_marked(bad);
}

/* prod_few_rows_f4 for each R up to PROD_FEW_ROWS (a function of its own, so that the
 * blocks' code in prod_cols_f4 stays as it was); returns its flag */
PTL_LOOP_CLONES_WIDE static int
prod_few_rows_any_f4(double *val, float *out, const char *p, int64_t rs, int64_t R,
                     int64_t n)
{
    switch (R) {
#define PROD_FEW_CASE(K)                                                                  \
    case K: return prod_few_rows_f4(val, out, p, rs, n, K);
        PROD_CASES_8(PROD_FEW_CASE, 0) PROD_CASES_8(PROD_FEW_CASE, 8)
        PROD_CASES_8(PROD_FEW_CASE, 16) PROD_CASES_8(PROD_FEW_CASE, 24)
        PROD_CASES_8(PROD_FEW_CASE, 32) PROD_CASES_8(PROD_FEW_CASE, 40)
        PROD_CASES_8(PROD_FEW_CASE, 48) PROD_CASES_8(PROD_FEW_CASE, 56)
#undef PROD_FEW_CASE
    default: return 0;
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

/* Whether more than 8 of the R rows rs bytes apart share each set of a 4096-byte, 8-way L1
 * (their addresses equal modulo 4096 / the rows' count of distinct 64-byte sets) */
static int
prod_rows_alias(int64_t rs, int64_t R)
{
    int64_t g = 4096, a = (rs % 4096 + 4096) % 4096;
    while (a != 0) {
        int64_t t = g % a;
        g = a;
        a = t;
    }
    return R >= PROD_STAGE_ROWS && R * (g < 64 ? 64 : g) / 4096 > 8;
}

/* The columns' products of the lanes (ptl_red_prod_rows_f4's, into val) */
static void
prod_rows_lanes_f4(double *val, const char *p, int64_t rs, int64_t R, int64_t n)
{
    if (R <= PROD_FEW_ROWS && n >= PROD_STAGE_COLS && prod_rows_alias(rs, R)) {
        prod_few_rows_staged_f4(val, NULL, p, rs, R, n);
        return;
    }
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
void
ptl_red_prod_rows_f4(double *val, const char *p, int64_t rs, int64_t R, int64_t n)
{
    prod_rows_lanes_f4(val, p, rs, R, n);
    for (int64_t k = 0; k < n; k++) {
        const char *col = p + k * (int64_t)sizeof(float);
        if (prod_suspect((float)val[k], 0, col, rs, R)) {
            val[k] = prod_exact_f4(col, rs, R);
        }
    }
}

/* (reduce_kernels.h) */
int
ptl_red_prod_rows_f4_put(float *out, const char *p, int64_t rs, int64_t R, int64_t n)
{
    if (R < 1 || R > PROD_FEW_ROWS || n < 16) {
        return 0;
    }
    const int normal = n >= PROD_STAGE_COLS && prod_rows_alias(rs, R)
                           ? prod_few_rows_staged_f4(NULL, out, p, rs, R, n)
                           : prod_few_rows_any_f4(NULL, out, p, rs, R, n);
    for (int64_t k = 0; !normal && k < n; k++) {
        const char *col = p + k * (int64_t)sizeof(float);
        if (prod_suspect(out[k], 0, col, rs, R)) {
            out[k] = (float)prod_exact_f4(col, rs, R);
        }
    }
    return 1;
}
