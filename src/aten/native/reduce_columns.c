/* reduce_columns.c -- column reductions stored straight into their outputs, for reduce.c's
 * column plans (Note [Reduction plan]): the extremes of the columns of a few float32 rows
 * (amax(0), amin(0)) in registers, Note [Column extremes in registers]; the float32 products
 * of reduce_prod.c; the integer, float64, float16 and bfloat16 extremes by typed loops; the
 * integer sums into int64; the float32 and float64 sums and means of few rows (Note [Column
 * sums of few rows]) and of narrow columns (Notes [Sums of narrow columns], [Float32 sums of
 * narrow columns]); all and any (reduce_truth.c).  Mirrors the outer reductions of ATen/native/cpu/Reduce.h (vectorized_outer_reduction). */
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_VECTOR_EXTREMES 1
#endif

#include "../../c10/cpu_features.h"
#include "../loops.h"
#include "native.h"
#include "reduce_kernels.h"
#include "reduce_plan.h"

/* Note [Column extremes in registers]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * amax(0) of R x n float32 keeps a step of columns (64 with AVX-512, 32 with AVX2) in
 * registers down the rows and stores each output once, as PyTorch's outer reduction does,
 * where reduce_kernels.c's column fold wrote every 2048-column unit as double values, four
 * rows a pass, that ptl_red_put_columns converted back (amax(0) of 2 x 40000 ran at 0.53x
 * PyTorch's time, 6 x 40000 0.65x; now 1.5x and 1.3x, one thread, Zen 4).  The rows go
 * EXTREME_GROUP at a time over a block of EXTREME_COLS columns, the extremes (and sums)
 * kept in out (and sum) between groups: 64 rows in flight at once lost the prefetchers'
 * streams (64 x 100000 from L3 at half the column fold's speed).  A row's step is one max
 * (min) a vector, b = v > b ? v : b, which keeps the first of equal values (+0 and -0) and
 * drops a NaN v; beside it s += v, whose lanes are NaN wherever a column holds a NaN (or
 * +inf and -inf, or sums past the range).  A step whose s has a NaN lane is folded again by
 * extreme_columns_exact, the column fold's own rule (the last NaN of the column in row order
 * wins, else the extreme), so the values are the fold's bits for every input; a NaN costs
 * its step a second, scalar pass.  float64 takes the same kernel on AVX-512, 32 columns a
 * step (5 x 40000 0.89 -> 1.21x).  The last partial step is masked (AVX2: whole vectors of
 * 8, the columns past them by the scalar rule).  Without AVX2, and above EXTREME_FEW_ROWS
 * rows (1024 x 1024 and 256 x 1024, rows 4 KiB apart, ran faster by the column fold),
 * reduce.c keeps the column fold. */
#define EXTREME_FEW_ROWS 64   /* up to this many rows in registers */
#define EXTREME_GROUP 16      /* rows a pass over the columns */
#define EXTREME_COLS 2048     /* columns a block of passes */
#define F4 ((int64_t)sizeof(float))
#define F8 ((int64_t)sizeof(double))
#define F8_FEW_ROWS 16        /* up to this many float64 rows by f8_extreme */

/* out[k] for k < n by the column fold's rule, column after column */
static void
extreme_columns_exact(float *out, const char *p, int64_t rs, int64_t R, int64_t n, int is_max)
{
    for (int64_t k = 0; k < n; k++) {
        const float *x = (const float *)p + k;
        float b = *x, nan = b != b ? b : 0;
        for (int64_t r = 1; r < R; r++) {
            float v = *(const float *)((const char *)x + r * rs);
            b = (is_max ? v > b : v < b) ? v : b;
            nan = v != v ? v : nan;
        }
        out[k] = nan != nan ? nan : b;
    }
}

#ifdef HAVE_VECTOR_EXTREMES
#define AVX512_ATTR __attribute__((target("avx512f,avx512vl")))
#define AVX2_ATTR __attribute__((target("avx2,fma")))

/* The extremes of the n <= 64 columns at p (16 a vector, masked) over rows r0 .. r1 - 1: from
 * row 0 when r0 is 0, else from the rows before's extremes in out and sums in sum; into out
 * and sum, or when r1 is R into out alone, by extreme_columns_exact where a sum is NaN */
static inline __attribute__((always_inline)) AVX512_ATTR void
extreme_chunk_avx512(float *out, float *sum, const char *p, int64_t rs, int64_t R, int64_t r0,
                     int64_t r1, int64_t n, const int is_max)
{
    __m512 b[4], s[4];
    __mmask16 mk[4];
    const float *x = (const float *)(p + r0 * rs);
    _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) {
        int64_t c = n - 16 * j;
        mk[j] = c >= 16 ? 0xffff : c <= 0 ? 0 : (__mmask16)((1u << c) - 1);
        b[j] = _mm512_maskz_loadu_ps(mk[j], (r0 == 0 ? x : out) + 16 * j);
        s[j] = r0 == 0 ? b[j] : _mm512_maskz_loadu_ps(mk[j], sum + 16 * j);
    }
    for (int64_t r = r0 + (r0 == 0); r < r1; r++) {
        x = (const float *)(p + r * rs);
        _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) {
            __m512 v = _mm512_maskz_loadu_ps(mk[j], x + 16 * j);
            b[j] = is_max ? _mm512_max_ps(v, b[j]) : _mm512_min_ps(v, b[j]);
            s[j] = _mm512_add_ps(s[j], v);
        }
    }
    if (r1 < R) {
        _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) {
            _mm512_mask_storeu_ps(out + 16 * j, mk[j], b[j]);
            _mm512_mask_storeu_ps(sum + 16 * j, mk[j], s[j]);
        }
        return;
    }
    __m512 t = _mm512_add_ps(_mm512_add_ps(s[0], s[1]), _mm512_add_ps(s[2], s[3]));
    if (_mm512_cmp_ps_mask(t, t, _CMP_UNORD_Q)) {
        extreme_columns_exact(out, p, rs, R, n, is_max);
        return;
    }
    _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) {
        _mm512_mask_storeu_ps(out + 16 * j, mk[j], b[j]);
    }
}

/* The same for NV <= 4 vectors of 8 columns, all read */
static inline __attribute__((always_inline)) AVX2_ATTR void
extreme_chunk_avx2(float *out, float *sum, const char *p, int64_t rs, int64_t R, int64_t r0,
                   int64_t r1, const int NV, const int is_max)
{
    __m256 b[4], s[4];
    const float *x = (const float *)(p + r0 * rs);
    _Pragma("GCC unroll 4") for (int j = 0; j < NV; j++) {
        b[j] = _mm256_loadu_ps((r0 == 0 ? x : out) + 8 * j);
        s[j] = r0 == 0 ? b[j] : _mm256_loadu_ps(sum + 8 * j);
    }
    for (int64_t r = r0 + (r0 == 0); r < r1; r++) {
        x = (const float *)(p + r * rs);
        _Pragma("GCC unroll 4") for (int j = 0; j < NV; j++) {
            __m256 v = _mm256_loadu_ps(x + 8 * j);
            b[j] = is_max ? _mm256_max_ps(v, b[j]) : _mm256_min_ps(v, b[j]);
            s[j] = _mm256_add_ps(s[j], v);
        }
    }
    if (r1 < R) {
        _Pragma("GCC unroll 4") for (int j = 0; j < NV; j++) {
            _mm256_storeu_ps(out + 8 * j, b[j]);
            _mm256_storeu_ps(sum + 8 * j, s[j]);
        }
        return;
    }
    __m256 t = s[0];
    _Pragma("GCC unroll 4") for (int j = 1; j < NV; j++) {
        t = _mm256_add_ps(t, s[j]);
    }
    if (_mm256_movemask_ps(_mm256_cmp_ps(t, t, _CMP_UNORD_Q))) {
        extreme_columns_exact(out, p, rs, R, 8 * NV, is_max);
        return;
    }
    _Pragma("GCC unroll 4") for (int j = 0; j < NV; j++) {
        _mm256_storeu_ps(out + 8 * j, b[j]);
    }
}

/* The columns c0 .. c0 + m of each group of EXTREME_GROUP rows in turn, 64 (AVX2: 32) at a
 * time; AVX2 leaves the last m % 8 to extreme_columns_exact */
#define DEFINE_EXTREME_ROWS(NAME, ATTR, AVX512)                                               \
    static inline __attribute__((always_inline)) ATTR void NAME##_impl(                      \
        float *out, const char *p, int64_t rs, int64_t R, int64_t n, const int is_max)       \
    {                                                                                         \
        float sum[EXTREME_COLS];                                                              \
        for (int64_t c0 = 0; c0 < n; c0 += EXTREME_COLS) {                                    \
            int64_t m = n - c0 < EXTREME_COLS ? n - c0 : EXTREME_COLS, k = 0;                 \
            const char *pc = p + c0 * F4;                                                     \
            for (int64_t r0 = 0; r0 < R; r0 += EXTREME_GROUP) {                               \
                int64_t r1 = R - r0 < EXTREME_GROUP ? R : r0 + EXTREME_GROUP;                 \
                for (k = 0; AVX512 && k < m; k += 64) {                                       \
                    extreme_chunk_avx512(out + c0 + k, sum + k, pc + k * F4, rs, R, r0, r1,   \
                                         m - k < 64 ? m - k : 64, is_max);                    \
                }                                                                             \
                for (; !AVX512 && k + 32 <= m; k += 32) {                                     \
                    extreme_chunk_avx2(out + c0 + k, sum + k, pc + k * F4, rs, R, r0, r1, 4,  \
                                       is_max);                                               \
                }                                                                             \
                for (; !AVX512 && k + 8 <= m; k += 8) {                                       \
                    extreme_chunk_avx2(out + c0 + k, sum + k, pc + k * F4, rs, R, r0, r1, 1,  \
                                       is_max);                                               \
                }                                                                             \
            }                                                                                 \
            if (k < m) {                                                                      \
                extreme_columns_exact(out + c0 + k, pc + k * F4, rs, R, m - k, is_max);       \
            }                                                                                 \
        }                                                                                     \
    }                                                                                         \
    ATTR static void                                                                          \
    NAME(float *out, const char *p, int64_t rs, int64_t R, int64_t n, int is_max)             \
    {                                                                                         \
        if (is_max) {                                                                         \
            NAME##_impl(out, p, rs, R, n, 1);                                                 \
        }                                                                                     \
        else {                                                                                \
            NAME##_impl(out, p, rs, R, n, 0);                                                 \
        }                                                                                     \
    }
DEFINE_EXTREME_ROWS(extreme_rows_avx512, AVX512_ATTR, 1)
DEFINE_EXTREME_ROWS(extreme_rows_avx2, AVX2_ATTR, 0)
#undef DEFINE_EXTREME_ROWS

/* float64 on AVX-512: extreme_columns_exact's and extreme_chunk_avx512's twins, 8 lanes a
 * vector, 32 columns a step */
static void
extreme_columns_exact_f8(double *out, const char *p, int64_t rs, int64_t R, int64_t n,
                         int is_max)
{
    for (int64_t k = 0; k < n; k++) {
        const double *x = (const double *)p + k;
        double b = *x, nan = b != b ? b : 0;
        for (int64_t r = 1; r < R; r++) {
            double v = *(const double *)((const char *)x + r * rs);
            b = (is_max ? v > b : v < b) ? v : b;
            nan = v != v ? v : nan;
        }
        out[k] = nan != nan ? nan : b;
    }
}

static inline __attribute__((always_inline)) AVX512_ATTR void
extreme_chunk_f8_avx512(double *out, double *sum, const char *p, int64_t rs, int64_t R,
                        int64_t r0, int64_t r1, int64_t n, const int is_max)
{
    __m512d b[4], s[4];
    __mmask8 mk[4];
    const double *x = (const double *)(p + r0 * rs);
    _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) {
        int64_t c = n - 8 * j;
        mk[j] = c >= 8 ? 0xff : c <= 0 ? 0 : (__mmask8)((1u << c) - 1);
        b[j] = _mm512_maskz_loadu_pd(mk[j], (r0 == 0 ? x : out) + 8 * j);
        s[j] = r0 == 0 ? b[j] : _mm512_maskz_loadu_pd(mk[j], sum + 8 * j);
    }
    for (int64_t r = r0 + (r0 == 0); r < r1; r++) {
        x = (const double *)(p + r * rs);
        _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) {
            __m512d v = _mm512_maskz_loadu_pd(mk[j], x + 8 * j);
            b[j] = is_max ? _mm512_max_pd(v, b[j]) : _mm512_min_pd(v, b[j]);
            s[j] = _mm512_add_pd(s[j], v);
        }
    }
    if (r1 < R) {
        _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) {
            _mm512_mask_storeu_pd(out + 8 * j, mk[j], b[j]);
            _mm512_mask_storeu_pd(sum + 8 * j, mk[j], s[j]);
        }
        return;
    }
    __m512d t = _mm512_add_pd(_mm512_add_pd(s[0], s[1]), _mm512_add_pd(s[2], s[3]));
    if (_mm512_cmp_pd_mask(t, t, _CMP_UNORD_Q)) {
        extreme_columns_exact_f8(out, p, rs, R, n, is_max);
        return;
    }
    _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) {
        _mm512_mask_storeu_pd(out + 8 * j, mk[j], b[j]);
    }
}

static inline __attribute__((always_inline)) AVX512_ATTR void
extreme_rows_f8_avx512_impl(double *out, const char *p, int64_t rs, int64_t R, int64_t n,
                            const int is_max)
{
    double sum[EXTREME_COLS];
    for (int64_t c0 = 0; c0 < n; c0 += EXTREME_COLS) {
        int64_t m = n - c0 < EXTREME_COLS ? n - c0 : EXTREME_COLS;
        const char *pc = p + c0 * F8;
        for (int64_t r0 = 0; r0 < R; r0 += EXTREME_GROUP) {
            int64_t r1 = R - r0 < EXTREME_GROUP ? R : r0 + EXTREME_GROUP;
            for (int64_t k = 0; k < m; k += 32) {
                extreme_chunk_f8_avx512(out + c0 + k, sum + k, pc + k * F8, rs, R, r0, r1,
                                        m - k < 32 ? m - k : 32, is_max);
            }
        }
    }
}

AVX512_ATTR static void
extreme_rows_f8_avx512(double *out, const char *p, int64_t rs, int64_t R, int64_t n,
                       int is_max)
{
    if (is_max) {
        extreme_rows_f8_avx512_impl(out, p, rs, R, n, 1);
    }
    else {
        extreme_rows_f8_avx512_impl(out, p, rs, R, n, 0);
    }
}
#endif

/* (reduce_kernels.h) */
int
ptl_red_rows_f4_put(PtlRedColOp op, float *out, const char *p, int64_t rs, int64_t R,
                    int64_t n)
{
    if (op == PTL_RED_COL_PROD) {
        return ptl_red_prod_rows_f4_put(out, p, rs, R, n);
    }
#ifdef HAVE_VECTOR_EXTREMES
    PtlCpuCapability cap = ptl_cpu_capability();
    if ((op != PTL_RED_COL_MAX && op != PTL_RED_COL_MIN) || R < 1 || R > EXTREME_FEW_ROWS ||
        cap < PTL_CPU_AVX2) {
        return 0;
    }
    if (cap >= PTL_CPU_AVX512) {
        extreme_rows_avx512(out, p, rs, R, n, op == PTL_RED_COL_MAX);
    }
    else {
        extreme_rows_avx2(out, p, rs, R, n, op == PTL_RED_COL_MAX);
    }
    return 1;
#else
    (void)out, (void)p, (void)rs, (void)R, (void)n;
    return 0;
#endif
}

/* Note [Column sums of few rows]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * sum(0) and mean(0) of up to SUM_FEW_ROWS float32 rows, and of any count of float64 rows,
 * go down each column in a register and store it once.  reduce.c's sums (add_rows_f4,
 * add_row_f8) put each unit's columns through a double buffer: float32 rows summed into a
 * float buffer, that added into the zeroed double buffer, that converted back into the
 * output; float64 rows added one at a time into the buffer (two loads and a store a value),
 * then copied out.  The register chain adds the same values in the same order from the same
 * +0, so the bits are theirs: float32's float chain of up to PTL_RED_COL_GROUP rows is the
 * buffer's group sum, which the double buffer held exactly and gave back; float64's chain is
 * the buffer's row after row.  The rows go SUM_GROUP at a time, the chain kept in the output
 * between passes: 16 rows a pass, 256 KiB apart for 65536 float32 columns, share the 8-way
 * L1's sets and evicted one another (sum(0) of 16 x 65536 float32 took 1.7x the time of
 * two passes of 8).  A mean divides the finished sum by R in double, as ptl_red_put_columns
 * does.  (sum(0) of 8 x 65536 float32 had run at 0.79x PyTorch's time, float64 at 0.61x,
 * one thread, Zen 4.)  A unit of 8 to 8 NARROW_VECS float64 columns (100000 x 16) goes down
 * all its rows in one pass instead (narrow_sums), its chains in registers: a call, the
 * pointers and the vector loop's ends every 8 rows of 128 bytes had held sum(0) of 100000 x
 * 16 at 0.48x PyTorch's time; the same chains, so the same bits. */
#define SUM_FEW_ROWS PTL_RED_COL_GROUP   /* float32: one float chain (add_rows_f4's group) */
#define SUM_GROUP 8                      /* rows a pass over the columns */
#define NARROW_VECS 4                    /* float64: up to 32 columns down all rows at once */

/* o[k] = (from_o ? o[k] : +0) + the column k of the NR rows of T at p, rs bytes apart, in
 * row order (k < m); NR a constant in the cases below, each row's pointer in a register */
#define DEFINE_COLUMN_SUMS(T)                                                                 \
    static inline __attribute__((always_inline)) void                                        \
    column_sums_body_##T(T *restrict o, const char *p, int64_t rs, const int NR, int64_t m,  \
                         int from_o)                                                          \
    {                                                                                         \
        const T *restrict x[SUM_GROUP];                                                       \
        for (int r = 0; r < NR; r++) {                                                        \
            x[r] = (const T *)(p + r * rs);                                                   \
        }                                                                                     \
        for (int64_t k = 0; k < m; k++) {                                                     \
            T s = from_o ? o[k] : (T)0;                                                       \
            for (int r = 0; r < NR; r++) {                                                    \
                s += x[r][k];                                                                 \
            }                                                                                 \
            o[k] = s;                                                                         \
        }                                                                                     \
    }                                                                                         \
    PTL_LOOP_CLONES_WIDE static void                                                          \
    column_sums_##T(T *restrict o, const char *p, int64_t rs, int64_t nr, int64_t m,          \
                    int from_o)                                                               \
    {                                                                                         \
        switch (nr) {                                                                         \
            COLUMN_SUMS_CASE(T, 1) COLUMN_SUMS_CASE(T, 2) COLUMN_SUMS_CASE(T, 3)              \
            COLUMN_SUMS_CASE(T, 4) COLUMN_SUMS_CASE(T, 5) COLUMN_SUMS_CASE(T, 6)              \
            COLUMN_SUMS_CASE(T, 7)                                                            \
        default: column_sums_body_##T(o, p, rs, SUM_GROUP, m, from_o); return;                \
        }                                                                                     \
    }
#define COLUMN_SUMS_CASE(T, N)                                                                \
    case N: column_sums_body_##T(o, p, rs, N, m, from_o); return;
DEFINE_COLUMN_SUMS(float)
DEFINE_COLUMN_SUMS(double)
#undef COLUMN_SUMS_CASE
#undef DEFINE_COLUMN_SUMS

/* o[k] = 0 + column k of the R float64 rows at p, rs bytes apart (k < m, 8 nv - 7 <= m <= 8
 * nv, nv <= NARROW_VECS a constant once inlined), all rows in one pass: nv vectors of eight
 * chains, the last one shifted left to end at column m (its columns twice, the same chains
 * and bits) */
typedef double NarrowVec __attribute__((vector_size(64)));
static inline __attribute__((always_inline)) void
narrow_sums_body(double *o, const char *p, int64_t rs, int64_t R, int64_t m, const int nv)
{
    NarrowVec s[NARROW_VECS];
    for (int v = 0; v < nv; v++) {
        s[v] = (NarrowVec){0};
    }
    for (int64_t r = 0; r < R; r++) {
        const double *x = (const double *)(p + r * rs);
        for (int v = 0; v < nv; v++) {
            NarrowVec t;
            memcpy(&t, x + (v < nv - 1 ? 8 * v : m - 8), sizeof t);
            s[v] += t;
        }
    }
    for (int v = 0; v < nv; v++) {
        memcpy(o + (v < nv - 1 ? 8 * v : m - 8), &s[v], sizeof s[v]);
    }
}

PTL_LOOP_CLONES_WIDE static void
narrow_sums(double *o, const char *p, int64_t rs, int64_t R, int64_t m)
{
    switch ((m + 7) / 8) {
    case 1: narrow_sums_body(o, p, rs, R, m, 1); return;
    case 2: narrow_sums_body(o, p, rs, R, m, 2); return;
    case 3: narrow_sums_body(o, p, rs, R, m, 3); return;
    default: narrow_sums_body(o, p, rs, R, m, 4); return;
    }
}

/* o[k] /= R (k < m): a float32 mean is its float sum over R in double, rounded once; a
 * product by 1 / R where R is a power of two (exact, so the same bits: the divisions had
 * cost mean(0) of 2 x 65536 float32 two thirds of its time) */
PTL_LOOP_CLONES_WIDE static void
column_means_float(float *restrict o, int64_t m, int64_t R)
{
    const double inv = 1 / (double)R;
    if ((R & (R - 1)) == 0) {
        for (int64_t k = 0; k < m; k++) {
            o[k] = (float)((double)o[k] * inv);
        }
        return;
    }
    for (int64_t k = 0; k < m; k++) {
        o[k] = (float)((double)o[k] / (double)R);
    }
}

PTL_LOOP_CLONES_WIDE static void
column_means_double(double *restrict o, int64_t m, int64_t R)
{
    const double inv = 1 / (double)R;
    if ((R & (R - 1)) == 0) {
        for (int64_t k = 0; k < m; k++) {
            o[k] = o[k] * inv;
        }
        return;
    }
    for (int64_t k = 0; k < m; k++) {
        o[k] = o[k] / (double)R;
    }
}

/* The sums (means) of Note [Column sums of few rows] when they take pl: 1 then, else 0 and
 * nothing done */
static int
column_sums(const Plan *pl, int64_t o0, const char *p, int64_t m)
{
    int64_t rs = pl->rstride[0], R = pl->R;
    int f4 = pl->dt == PTL_DTYPE_FLOAT32;
    if ((pl->kind != R_SUM && pl->kind != R_MEAN) || pl->odt0 != pl->dt ||
        (!f4 && pl->dt != PTL_DTYPE_FLOAT64) || (f4 && R > SUM_FEW_ROWS)) {
        return 0;
    }
    int narrow = !f4 && m >= 8 && m <= 8 * NARROW_VECS;
    if (narrow) {
        narrow_sums((double *)pl->out0 + o0, p, rs, R, m);
    }
    for (int64_t r0 = 0; r0 < R && !narrow; r0 += SUM_GROUP) {
        int64_t nr = R - r0 < SUM_GROUP ? R - r0 : SUM_GROUP;
        if (f4) {
            column_sums_float((float *)pl->out0 + o0, p + r0 * rs, rs, nr, m, r0 > 0);
        }
        else {
            column_sums_double((double *)pl->out0 + o0, p + r0 * rs, rs, nr, m, r0 > 0);
        }
    }
    if (pl->kind == R_MEAN && f4) {
        column_means_float((float *)pl->out0 + o0, m, R);
    }
    else if (pl->kind == R_MEAN) {
        column_means_double((double *)pl->out0 + o0, m, R);
    }
    return 1;
}

/* o[k] = the maximum (is_max) or minimum of column k of the R >= 1 rows of T at p, rs bytes
 * apart (k < m), in o itself four rows a pass (the rows past R repeat the last): typed
 * loops the clones vectorize (bool as uint8: its maximum is any, its minimum all).  Two
 * rows a pass, o's block loaded and stored twice as often, had made amax(0) of 8 x 40000
 * int64 0.94x PyTorch's time (one thread, Zen 4). */
#define INT_EXTREME_ROWS(T, R, r, a, b, c, e)                                             \
    const T *a = (const T *)(p + (r) * rs);                                               \
    const T *b = (const T *)(p + ((r) + 1 < (R) ? (r) + 1 : (R) - 1) * rs);               \
    const T *c = (const T *)(p + ((r) + 2 < (R) ? (r) + 2 : (R) - 1) * rs);               \
    const T *e = (const T *)(p + ((r) + 3 < (R) ? (r) + 3 : (R) - 1) * rs)
#define DEFINE_INT_EXTREME(T)                                                             \
    PTL_LOOP_CLONES_WIDE static void                                                      \
    int_extreme_##T(T *o, const char *p, int64_t rs, int64_t R, int64_t m, int is_max)    \
    {                                                                                     \
        for (int64_t r = 0; r < R; r += 4) {                                              \
            INT_EXTREME_ROWS(T, R, r, a, b, c, e);                                        \
            for (int64_t k = 0; k < m && is_max; k++) {                                   \
                T u = a[k] > b[k] ? a[k] : b[k], w = c[k] > e[k] ? c[k] : e[k];           \
                T v = u > w ? u : w;                                                      \
                o[k] = r == 0 || v > o[k] ? v : o[k];                                     \
            }                                                                             \
            for (int64_t k = 0; k < m && !is_max; k++) {                                  \
                T u = a[k] < b[k] ? a[k] : b[k], w = c[k] < e[k] ? c[k] : e[k];           \
                T v = u < w ? u : w;                                                      \
                o[k] = r == 0 || v < o[k] ? v : o[k];                                     \
            }                                                                             \
        }                                                                                 \
    }
DEFINE_INT_EXTREME(uint8_t)
DEFINE_INT_EXTREME(int8_t)
DEFINE_INT_EXTREME(int16_t)
DEFINE_INT_EXTREME(int32_t)
DEFINE_INT_EXTREME(int64_t)
#undef DEFINE_INT_EXTREME
#undef INT_EXTREME_ROWS

/* The same for float64 by the column fold's rule: a later value replaces the one kept when it
 * is larger (smaller) or NaN, so the first of equal values stays and the last NaN wins; two
 * rows a pass give the same result (the rule picks the same value in any grouping that
 * keeps the row order) */
PTL_LOOP_CLONES_WIDE static void
f8_extreme(double *o, const char *p, int64_t rs, int64_t R, int64_t m, int is_max)
{
    const double *a = (const double *)p, *b = (const double *)(p + (R > 1 ? rs : 0));
    int64_t r = 2;
    if (is_max) {
        for (int64_t k = 0; k < m; k++) {
            o[k] = (b[k] > a[k]) | (b[k] != b[k]) ? b[k] : a[k];
        }
        for (; r < R; r += 2) {
            a = (const double *)(p + r * rs);
            b = (const double *)(p + (r + 1 < R ? r + 1 : r) * rs);
            for (int64_t k = 0; k < m; k++) {
                double v = (b[k] > a[k]) | (b[k] != b[k]) ? b[k] : a[k];
                o[k] = (v > o[k]) | (v != v) ? v : o[k];
            }
        }
        return;
    }
    for (int64_t k = 0; k < m; k++) {
        o[k] = (b[k] < a[k]) | (b[k] != b[k]) ? b[k] : a[k];
    }
    for (; r < R; r += 2) {
        a = (const double *)(p + r * rs);
        b = (const double *)(p + (r + 1 < R ? r + 1 : r) * rs);
        for (int64_t k = 0; k < m; k++) {
            double v = (b[k] < a[k]) | (b[k] != b[k]) ? b[k] : a[k];
            o[k] = (v < o[k]) | (v != v) ? v : o[k];
        }
    }
}

/* o[k] = x[k] where the column fold's rule takes it over o[k] (k < m): float16 / bfloat16
 * rows, converted to float32 exactly, folded row after row */
PTL_LOOP_CLONES_WIDE static void
f4_take(float *o, const float *x, int64_t m, int is_max)
{
    if (is_max) {
        for (int64_t k = 0; k < m; k++) {
            o[k] = (x[k] > o[k]) | (x[k] != x[k]) ? x[k] : o[k];
        }
        return;
    }
    for (int64_t k = 0; k < m; k++) {
        o[k] = (x[k] < o[k]) | (x[k] != x[k]) ? x[k] : o[k];
    }
}

/* (reduce_plan.h) the integer extremes by int_extreme_T, the float64 ones in registers on
 * AVX-512 (extreme_rows_f8_avx512), else by f8_extreme up to F8_FEW_ROWS rows, the
 * float16 / bfloat16 ones in float32 by f4_take between the cast loops: a call an output
 * (reduce.c's acc_finish) had made amax(0) of 2 x 40000 int32 0.04x PyTorch's time, float16
 * 0.05x, bfloat16 0.07x; ptl_red_maxmin_rows_lowp's double values and their conversion back
 * left float16 at 0.42x; the integer sums into int64 by ptl_red_add_rows_int, all and any
 * by reduce_truth.c */
int
ptl_red_columns_put(const Plan *pl, int64_t o0, const char *p, int64_t m)
{
    int ext = pl->kind == R_MAX || pl->kind == R_MIN, is_max = pl->kind == R_MAX;
    int64_t rs = pl->rstride[0], isz = (int64_t)ptl_dtype_itemsize(pl->odt0);
    if ((pl->kind == R_SUM || pl->kind == R_NANSUM) && pl->use_int &&
        pl->odt0 == PTL_DTYPE_INT64) {   /* through a put an output: 0.07x sum(0) 2 x 65536 */
        int64_t *o = (int64_t *)pl->out0 + o0;
        memset(o, 0, sizeof(int64_t) * (size_t)m);
        ptl_red_add_rows_int(o, pl->dt, p, rs, pl->R, m);
        return 1;
    }
    if (ptl_red_truth_columns(pl, o0, p, m) || column_sums(pl, o0, p, m)) {
        return 1;
    }
    if (pl->dt == PTL_DTYPE_FLOAT32 && pl->odt0 == PTL_DTYPE_FLOAT32 &&
        (ext || pl->kind == R_PROD)) {
        PtlRedColOp op = pl->kind == R_PROD ? PTL_RED_COL_PROD
                         : is_max           ? PTL_RED_COL_MAX
                                            : PTL_RED_COL_MIN;
        return ptl_red_rows_f4_put(op, (float *)pl->out0 + o0, p, rs, pl->R, m);
    }
    if (!ext || pl->odt0 != pl->dt || m > PTL_RED_COL_BLOCK) {
        return 0;
    }
    char *o = pl->out0 + o0 * isz;
#ifdef HAVE_VECTOR_EXTREMES
    if (pl->dt == PTL_DTYPE_FLOAT64 && pl->R <= EXTREME_FEW_ROWS &&
        ptl_cpu_capability() >= PTL_CPU_AVX512) {   /* registers, as float32's */
        extreme_rows_f8_avx512((double *)o, p, rs, pl->R, m, is_max);
        return 1;
    }
#endif
    switch (pl->use_int || (pl->dt == PTL_DTYPE_FLOAT64 && pl->R <= F8_FEW_ROWS) ? pl->dt
                                                                   : PTL_DTYPE_UNDEFINED) {
    case PTL_DTYPE_BOOL:
    case PTL_DTYPE_UINT8: int_extreme_uint8_t((uint8_t *)o, p, rs, pl->R, m, is_max); return 1;
    case PTL_DTYPE_INT8: int_extreme_int8_t((int8_t *)o, p, rs, pl->R, m, is_max); return 1;
    case PTL_DTYPE_INT16: int_extreme_int16_t((int16_t *)o, p, rs, pl->R, m, is_max); return 1;
    case PTL_DTYPE_INT32: int_extreme_int32_t((int32_t *)o, p, rs, pl->R, m, is_max); return 1;
    case PTL_DTYPE_INT64: int_extreme_int64_t((int64_t *)o, p, rs, pl->R, m, is_max); return 1;
    case PTL_DTYPE_FLOAT64: f8_extreme((double *)o, p, rs, pl->R, m, is_max); return 1;
    default: break;
    }
    if (IS_LOWP(pl->dt)) {   /* rows to float32 by the cast loops, the extremes back */
        float best[PTL_RED_COL_BLOCK], row[PTL_RED_COL_BLOCK];
        int64_t st[2] = {sizeof(float), 2}, sto[2] = {2, sizeof(float)};
        PtlLoop to_f4 = ptl_cast_loop(PTL_DTYPE_FLOAT32, pl->dt);
        char *io[2] = {(char *)best, (char *)p};
        to_f4(io, st, m, NULL);
        for (int64_t r = 1; r < pl->R; r++) {
            io[0] = (char *)row;
            io[1] = (char *)(p + r * rs);
            to_f4(io, st, m, NULL);
            f4_take(best, row, m, is_max);
        }
        io[0] = o;
        io[1] = (char *)best;
        ptl_cast_loop(pl->dt, PTL_DTYPE_FLOAT32)(io, sto, m, NULL);
        return 1;
    }
    return 0;
}

/* Note [Sums of narrow columns]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * sum(0) and mean(0) of fewer than 16 float32 or float64 columns (100000 x 8) are no column
 * plan (reduce.c takes those from 16 columns): each output folded its column alone, blocks
 * of NARROW_BLOCK rows gathered into doubles and summed by ptl_red_sum_contiguous (sixteen
 * lanes, value i of a block in lane i % 16, folded as (l + l+4) + (l+8 + l+12), then (0 +
 * 2) + (1 + 3), the values past the last 16 added one by one), the block sums added from
 * +0.  The gathers and the column's cache lines read once per column cost 6 ns a value: sum(0)
 * of 100000 x 8 float32 ran at 0.13x PyTorch's time, float64 0.33x (one thread, Zen 4).
 * With AVX-512 a row's columns (8 at a time, masked) are one vector, so the sixteen lanes
 * of every column are sixteen registers down the rows: each column takes the same adds in
 * the same order as its own fold, so the bits are the same; where AVX2's order is not the
 * portable loop's (8 lanes), the CPUs without AVX-512 keep the fold.  Into a float32 output
 * (sum, mean), float32 columns take Note [Float32 sums of narrow columns] instead. */
#define NARROW_BLOCK 256   /* the block of fold_run's gathers (reduce.c's BLOCK) */
#define NARROW_COLS 16     /* up to 15 columns: two vectors of 8 */

/* Note [Float32 sums of narrow columns]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * sum(0) and mean(0) of 2 to 15 float32 columns into float32 add in float32 first, as the
 * column plan's groups do (ptl_red_add_rows_f4): row r of column k goes to chain (r % 16, k);
 * a chain sums its values of a block of NARROW_F4_ROWS rows (32 values) in float32 from +0,
 * and adds that sum in double to its double total (from +0, block after block); the 16
 * totals of a column fold as Note [Sums of narrow columns]'s lanes do, (l + l+4) + (l+8 +
 * l+12), then (0 + 2) + (1 + 3), and the sum (a mean: the sum over R in double) rounds once
 * to float32.  Contiguous rows are one array whose 16 rows of c columns are c vectors of
 * 16 floats, lane j of vector v always column (16 v + j) % c: the c chains' vectors add a
 * 64-byte load each, one vector add per 16 / c rows (the double lanes had cost one
 * conversion and one add a row, 8 columns or 2); the last, partial 16 rows are zeros past
 * the end (x + 0 is x: the chains start from +0).  Strided rows are copied into that form
 * a block at a time, so a view has the bits of its contiguous copy; the threads' share of
 * the outputs starts and ends within rows, and each computes its rows' every column, so
 * the bits do not depend on the thread count.  Accuracy: a float32 chain of 32 values, then
 * double, is the column plan's error (at most 31 float32 roundings of a partial sum of 32
 * values per value), below PyTorch's cascade of four float32 levels of 16 (its last level
 * adds R / 4096 sums of 4096 values in float32); a chain overflows to inf where its 32
 * values' float32 sum does, as PyTorch's float32 sums do.  The double lanes had run sum(0) of
 * 100000 x 8 float32 at 0.60x PyTorch's time, of 100000 x 2 (then each column's own fold)
 * at 0.60x (one thread, Zen 4). */
#define NARROW_F4_GROUP PTL_RED_COL_GROUP        /* a chain's values summed in float32 */
#define NARROW_F4_ROWS (16 * NARROW_F4_GROUP)   /* rows a block: 512 */

typedef float NarrowF4 __attribute__((vector_size(64)));

/* tot[16 v + j] += the chains' sums (v < c) of R rows of c contiguous floats at x, block after
 * block: the values x[16 (c t + v) + j] of the block's groups t of 16 rows, in float32 from +0,
 * then added in double; a last, partial group from tail (16 rows, zeros past R) instead of
 * x (c a constant once inlined) */
static inline __attribute__((always_inline)) void
narrow_f4_rows(double *tot, const float *x, int64_t R, const float *tail, const int c)
{
    for (int64_t b0 = 0; b0 < R; b0 += NARROW_F4_ROWS) {
        const int64_t n = R - b0 < NARROW_F4_ROWS ? R - b0 : NARROW_F4_ROWS;
        const float *xb = x + b0 * c;
        NarrowF4 f[NARROW_COLS - 1];
        for (int v = 0; v < c; v++) {
            f[v] = (NarrowF4){0};
        }
        for (int64_t t = 0; t < n / 16; t++) {
            for (int v = 0; v < c; v++) {
                NarrowF4 u;
                memcpy(&u, xb + 16 * (c * t + v), sizeof u);
                f[v] += u;
            }
        }
        for (int v = 0; v < c && n % 16 != 0; v++) {
            NarrowF4 u;
            memcpy(&u, tail + 16 * v, sizeof u);
            f[v] += u;
        }
        for (int v = 0; v < c; v++) {
            for (int j = 0; j < 16; j++) {
                tot[16 * v + j] += (double)f[v][j];
            }
        }
    }
}

/* narrow_f4_rows for each c of 2 .. 15 */
PTL_LOOP_CLONES_WIDE static void
narrow_f4_rows_any(double *tot, const float *x, int64_t R, const float *tail, int c)
{
    switch (c) {
#define NARROW_F4_CASE(C) \
    case C: narrow_f4_rows(tot, x, R, tail, C); return;
        NARROW_F4_CASE(2) NARROW_F4_CASE(3) NARROW_F4_CASE(4) NARROW_F4_CASE(5)
        NARROW_F4_CASE(6) NARROW_F4_CASE(7) NARROW_F4_CASE(8) NARROW_F4_CASE(9)
        NARROW_F4_CASE(10) NARROW_F4_CASE(11) NARROW_F4_CASE(12) NARROW_F4_CASE(13)
        NARROW_F4_CASE(14) NARROW_F4_CASE(15)
#undef NARROW_F4_CASE
    default: return;
    }
}

/* tail[0 .. 16 c) = the n < 16 rows of c floats at q, rs bytes apart, then zeros */
static void
narrow_f4_tail(float *tail, const char *q, int64_t rs, int64_t n, int c)
{
    memset(tail, 0, sizeof(float) * 16 * (size_t)c);
    for (int64_t r = 0; r < n; r++) {
        memcpy(tail + r * c, q + r * rs, sizeof(float) * (size_t)c);
    }
}

/* sums[k] = the sum of column k (k < c) of the R float32 rows at p, rs bytes apart, in the
 * order of Note [Float32 sums of narrow columns] */
static void
narrow_f4_sums(double *sums, const char *p, int64_t rs, int64_t R, int c)
{
    double tot[16 * (NARROW_COLS - 1)] = {0};
    float buf[NARROW_F4_ROWS * (NARROW_COLS - 1)], tail[16 * (NARROW_COLS - 1)];
    const int64_t row = c * (int64_t)sizeof(float);
    if (rs == row) {   /* contiguous rows: one array */
        narrow_f4_tail(tail, p + R / 16 * 16 * rs, rs, R % 16, c);
        narrow_f4_rows_any(tot, (const float *)p, R, tail, c);
    }
    for (int64_t b0 = 0; b0 < R && rs != row; b0 += NARROW_F4_ROWS) {   /* a block at a time */
        const int64_t n = R - b0 < NARROW_F4_ROWS ? R - b0 : NARROW_F4_ROWS;
        const char *q = p + b0 * rs;
        for (int64_t r = 0; r < n / 16 * 16; r++) {
            memcpy(buf + r * c, q + r * rs, (size_t)row);
        }
        narrow_f4_tail(tail, q + n / 16 * 16 * rs, rs, n % 16, c);
        narrow_f4_rows_any(tot, buf, n, tail, c);
    }
    for (int k = 0; k < c; k++) {   /* chain l of column k: tot[l c + k] */
        double h[4];
        for (int l = 0; l < 4; l++) {
            h[l] = (tot[l * c + k] + tot[(l + 4) * c + k]) +
                   (tot[(l + 8) * c + k] + tot[(l + 12) * c + k]);
        }
        sums[k] = (h[0] + h[2]) + (h[1] + h[3]);
    }
}

#ifdef HAVE_VECTOR_EXTREMES
/* acc[g] += the block sums of Note [Sums of narrow columns] of the n <= NARROW_BLOCK rows of
 * T at q (rs bytes apart), columns 8 g .. 8 g + 8 under mk[g] (g < ng) */
#define DEFINE_NARROW_BLOCK(T, LOAD)                                                          \
    static inline __attribute__((always_inline)) AVX512_ATTR void                            \
    narrow_block_##T(__m512d *acc, const char *q, int64_t rs, int64_t n, const __mmask8 *mk, \
                     int ng)                                                                  \
    {                                                                                         \
        const int64_t full = n / 16 * 16;                                                     \
        for (int g = 0; g < ng; g++) {                                                        \
            const T *x = (const T *)q + 8 * g;                                                \
            __m512d L[16];                                                                    \
            _Pragma("GCC unroll 16") for (int j = 0; j < 16; j++) {                           \
                L[j] = _mm512_setzero_pd();                                                   \
            }                                                                                 \
            for (int64_t i = 0; i < full; i += 16) {                                          \
                _Pragma("GCC unroll 16") for (int j = 0; j < 16; j++) {                       \
                    L[j] = _mm512_add_pd(L[j], LOAD(mk[g], x, (i + j) * rs));                 \
                }                                                                             \
            }                                                                                 \
            __m512d v[4];                                                                     \
            for (int l = 0; l < 4; l++) {                                                     \
                v[l] = _mm512_add_pd(_mm512_add_pd(L[l], L[l + 4]),                           \
                                     _mm512_add_pd(L[l + 8], L[l + 12]));                     \
            }                                                                                 \
            __m512d s = _mm512_add_pd(_mm512_add_pd(v[0], v[2]), _mm512_add_pd(v[1], v[3])); \
            for (int64_t i = full; i < n; i++) {                                              \
                s = _mm512_add_pd(s, LOAD(mk[g], x, i * rs));                                 \
            }                                                                                 \
            acc[g] = _mm512_add_pd(acc[g], s);                                                \
        }                                                                                     \
    }
#define NARROW_LOAD_F8(MK, X, OFF) _mm512_maskz_loadu_pd((MK), (const char *)(X) + (OFF))
#define NARROW_LOAD_F4(MK, X, OFF) \
    _mm512_cvtps_pd(_mm256_maskz_loadu_ps((MK), (const char *)(X) + (OFF)))
DEFINE_NARROW_BLOCK(double, NARROW_LOAD_F8)
DEFINE_NARROW_BLOCK(float, NARROW_LOAD_F4)
#undef NARROW_LOAD_F8
#undef NARROW_LOAD_F4
#undef DEFINE_NARROW_BLOCK

/* sums[k] = the sum of column k (k < w <= 15) of the R rows of dt (float32 or float64) at p */
AVX512_ATTR static void
narrow_sums_avx512(double *sums, PtlDtype dt, const char *p, int64_t rs, int64_t R, int w)
{
    __m512d acc[2] = {_mm512_setzero_pd(), _mm512_setzero_pd()};
    __mmask8 mk[2] = {(__mmask8)(w >= 8 ? 0xff : (1u << w) - 1),
                      (__mmask8)(w > 8 ? (1u << (w - 8)) - 1 : 0)};
    const int ng = w > 8 ? 2 : 1;
    for (int64_t b0 = 0; b0 < R; b0 += NARROW_BLOCK) {
        int64_t n = R - b0 < NARROW_BLOCK ? R - b0 : NARROW_BLOCK;
        if (dt == PTL_DTYPE_FLOAT64) {
            narrow_block_double(acc, p + b0 * rs, rs, n, mk, ng);
        }
        else {
            narrow_block_float(acc, p + b0 * rs, rs, n, mk, ng);
        }
    }
    _mm512_storeu_pd(sums, acc[0]);
    _mm512_storeu_pd(sums + 8, acc[1]);
}
#endif

/* The outputs [b, e) of a float32 plan of narrow columns into float32, by narrow_f4_sums:
 * each row of outputs computed whole (Note [Float32 sums of narrow columns]) */
static void
narrow_f4_columns(const Plan *pl, int64_t c, int64_t b, int64_t e)
{
    double sums[NARROW_COLS];
    for (int64_t q = b / c; q * c < e; q++) {
        narrow_f4_sums(sums, kept_ptr(pl, q * c), pl->rstride[0], pl->R, (int)c);
        for (int64_t k = 0; k < c; k++) {
            if (q * c + k >= b && q * c + k < e) {
                double v = pl->kind == R_MEAN ? sums[k] / (double)pl->R : sums[k];
                ((float *)pl->out0)[q * c + k] = (float)v;
            }
        }
    }
}

/* (reduce_plan.h) */
int
ptl_red_narrow_columns(const Plan *pl, int64_t b, int64_t e)
{
    int64_t isz = (int64_t)ptl_dtype_itemsize(pl->dt), c = pl->nk > 0 ? pl->ksize[pl->nk - 1] : 0;
    if ((pl->kind == R_SUM || pl->kind == R_MEAN) && pl->dt == PTL_DTYPE_FLOAT32 &&
        pl->odt0 == PTL_DTYPE_FLOAT32 && pl->nr == 1 && c >= 2 && c < NARROW_COLS &&
        pl->kstride[pl->nk - 1] == isz && pl->rstride[0] != isz) {
        narrow_f4_columns(pl, c, b, e);
        return 1;
    }
#ifdef HAVE_VECTOR_EXTREMES
    double sums[NARROW_COLS];
    if ((pl->kind != R_SUM && pl->kind != R_MEAN) ||
        (pl->dt != PTL_DTYPE_FLOAT32 && pl->dt != PTL_DTYPE_FLOAT64) ||
        (pl->odt0 != PTL_DTYPE_FLOAT32 && pl->odt0 != PTL_DTYPE_FLOAT64) || pl->nr != 1 ||
        c < 2 + (pl->dt == PTL_DTYPE_FLOAT32) || c >= NARROW_COLS ||
        pl->kstride[pl->nk - 1] != isz || pl->rstride[0] == isz ||
        ptl_cpu_capability() < PTL_CPU_AVX512) {
        return 0;
    }
    for (int64_t o = b, w; o < e; o += w) {
        w = c - o % c < e - o ? c - o % c : e - o;
        narrow_sums_avx512(sums, pl->dt, kept_ptr(pl, o), pl->rstride[0], pl->R, (int)w);
        for (int64_t k = 0; k < w; k++) {
            double v = pl->kind == R_MEAN ? sums[k] / (double)pl->R : sums[k];
            if (pl->odt0 == PTL_DTYPE_FLOAT32) {
                ((float *)pl->out0)[o + k] = (float)v;
            }
            else {
                ((double *)pl->out0)[o + k] = v;
            }
        }
    }
    return 1;
#else
    (void)pl, (void)b, (void)e;
    return 0;
#endif
}
