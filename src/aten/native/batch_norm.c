/* batch_norm.c -- native_batch_norm and native_batch_norm_backward.  Mirrors
 * ATen/native/Normalization.cpp and ATen/native/cpu/batch_norm_kernel.cpp.
 *
 * Note [Batch norm channels]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~
 * The input [N, C, *] is read as N blocks of C channels of HW = prod(*) contiguous elements;
 * channel c holds M = N HW values.  A contiguous input with HW >= BN_MIN_HW is used in place;
 * any other (channels_last, strided, short HW as BatchNorm1d's [N, C], float16/bfloat16) is
 * first copied to [C, N, *] in the work dtype (N = 1, HW = M in the same code), and the
 * result copied back.  Each channel is split into chunks of BN_CHUNK values, fixed by the
 * sizes alone, and ptl_parallel_for runs over the C * chunks (channel, chunk) tasks: few
 * channels of many values spread over threads as well as many small channels do, and every
 * sum is added in the same order whatever the thread count.  With two channels a thread or
 * more the tasks are whole channels instead (Note [Batch norm fused channels]), same bits.
 *
 * Forward (training): one pass per chunk sums x - K and (x - K)^2 in double (float32: in
 * float lanes added to double ones, Note [Batch norm float lanes]), K the
 * channel's first value (the shifted-data algorithm: no cancellation as long as K is a
 * value of the channel), so mean = K + S1 / M and var = S2 / M - (S1 / M)^2; a second pass
 * writes y = x scale + shift with scale = w invstd and shift = b - mean scale.  Eval skips
 * the first pass and takes mean and var from the running statistics.
 * Backward: one pass sums dy and dy (x - mean) per chunk in double; with invstd r and
 * a = w r the input gradient is
 *
 *     training:  dx = a dy + b x + k,  b = -a r^2 sum(dy (x - mean)) / M,
 *                                      k = -a sum(dy) / M - b mean
 *     eval:      dx = a dy
 *
 * and grad_weight = r sum(dy (x - mean)), grad_bias = sum(dy). */
#include <math.h>
#include <stdlib.h>

#include "../../c10/cpu_features.h"
#include "../../c10/parallel.h"
#include "device_nn.h"
#include "nn_common.h"
#include "vec_math.h"

/* values of one channel per task of Note [Batch norm channels] */
#define BN_CHUNK 8192
/* the shortest contiguous run (HW) the kernels read in place */
#define BN_MIN_HW 16

typedef struct {
    const char *x, *dy;      /* [N, C, HW] in the work dtype */
    char *out;               /* y (forward) or dx (backward), same layout */
    int64_t n, c, hw, chunks;
    int moved;               /* x was copied to [C, N, *] (n = 1) */
    double *part;            /* [C * chunks][2] partial sums */
    const double *ref;       /* [C] K (forward statistics) or mean (backward sums) */
    const double *a, *b, *k; /* [C] the elementwise pass: out = a (dy or x) + b x + k */
    /* fused (Note [Batch norm fused channels]): the coefficients of channel c from its
     * sums s[2c], s[2c + 1], ctx the caller's scratch */
    void (*coef)(void *ctx, int64_t c);
    void *coef_ctx;
    double *sums;
} BnJob;

/* The contiguous run of channel c's values [i, i1) that starts at value i (i = n HW + h):
 * returns its length and sets *off to its element offset. */
static inline int64_t
bn_run(const BnJob *j, int64_t c, int64_t i, int64_t i1, size_t *off)
{
    int64_t nn = i / j->hw, h = i - nn * j->hw;
    int64_t len = j->hw - h < i1 - i ? j->hw - h : i1 - i;
    *off = (size_t)((nn * j->c + c) * j->hw + h);
    return len;
}

/* The run after one at *off of len values that ended its block of HW (or [i, i1) ends):
 * sets *off, returns its length (bn_run without the division). */
static inline int64_t
bn_next_run(const BnJob *j, int64_t i, int64_t i1, size_t *off, int64_t len)
{
    *off += (size_t)(len + (j->c - 1) * j->hw);
    return j->hw < i1 - i ? j->hw : i1 - i;
}

/* The values [*i0, *i1) of task t's chunk of channel *c. */
static inline void
bn_task(const BnJob *j, int64_t t, int64_t *c, int64_t *i0, int64_t *i1)
{
    int64_t m = j->n * j->hw;
    *c = t / j->chunks;
    *i0 = (t % j->chunks) * BN_CHUNK;
    *i1 = *i0 + BN_CHUNK < m ? *i0 + BN_CHUNK : m;
}

/* float64 (float32 takes Note [Batch norm float lanes]'s path):
 * the sums of one run in double, as eight independent partial sums each (lanes k = i mod 8):
 * s1 += sum(p - ref), s2 += sum((p - ref)^2) over p[0..n) (x NULL: forward moments), or
 * s1 += sum(p), s2 += sum(p (x - ref)) (p = dy: backward sums).  bn_sums_lanes continues
 * the lanes a, q from value i (the AVX2 loop below stops at a multiple of 8 and hands its
 * lanes over; the portable path starts at 0), then adds the tail and the lanes in one fixed
 * order, so both paths give the same bits. */
static inline void
bn_sums_lanes(int f8, const char *restrict p, const char *restrict x, int64_t i, int64_t n,
              double ref, double *a, double *q, double *s1, double *s2)
{
    double ta = 0, tq = 0;
    /* v the value summed, d the one it is weighted by: d = v = p - ref (moments) or
     * v = p, d = x - ref (backward) */
    for (; i + 8 <= n; i += 8) {
        for (int k = 0; k < 8; k++) {
            double v = nn_load(f8, p, i + k), d = nn_load(f8, x != NULL ? x : p, i + k) - ref;
            v = x != NULL ? v : d;
            a[k] += v;
            q[k] += v * d;
        }
    }
    for (; i < n; i++) {
        double v = nn_load(f8, p, i), d = nn_load(f8, x != NULL ? x : p, i) - ref;
        v = x != NULL ? v : d;
        ta += v;
        tq += v * d;
    }
    *s1 += ta + ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]));
    *s2 += tq + ((q[0] + q[4]) + (q[1] + q[5])) + ((q[2] + q[6]) + (q[3] + q[7]));
}

#ifdef PTL_HAVE_AVX2_KERNELS
/* values [i, i + 8) of p as two vectors of four doubles */
PTL_AVX2 static inline void
bn_load8_pd(int f8, const char *p, int64_t i, __m256d *lo, __m256d *hi)
{
    if (f8) {
        *lo = _mm256_loadu_pd((const double *)p + i);
        *hi = _mm256_loadu_pd((const double *)p + i + 4);
    }
    else {
        __m256 v = _mm256_loadu_ps((const float *)p + i);
        *lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
        *hi = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
    }
}

/* bn_sums_lanes with the eight lanes in two AVX2 vectors (no FMA: the same roundings) */
PTL_AVX2 static inline void
bn_sums_avx2(int f8, const char *restrict p, const char *restrict x, int64_t n, double ref,
             double *s1, double *s2)
{
    __m256d a0 = _mm256_setzero_pd(), a1 = a0, q0 = a0, q1 = a0, r = _mm256_set1_pd(ref);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256d v0, v1, d0, d1;
        bn_load8_pd(f8, p, i, &v0, &v1);
        bn_load8_pd(f8, x != NULL ? x : p, i, &d0, &d1);
        d0 = _mm256_sub_pd(d0, r);
        d1 = _mm256_sub_pd(d1, r);
        if (x == NULL) {
            v0 = d0;
            v1 = d1;
        }
        a0 = _mm256_add_pd(a0, v0);
        a1 = _mm256_add_pd(a1, v1);
        q0 = _mm256_add_pd(q0, _mm256_mul_pd(v0, d0));
        q1 = _mm256_add_pd(q1, _mm256_mul_pd(v1, d1));
    }
    double a[8], q[8];
    _mm256_storeu_pd(a, a0);
    _mm256_storeu_pd(a + 4, a1);
    _mm256_storeu_pd(q, q0);
    _mm256_storeu_pd(q + 4, q1);
    bn_sums_lanes(f8, p, x, i, n, ref, a, q, s1, s2);
}

PTL_AVX2 static void
bn_sums_avx2_f8(const char *p, const char *x, int64_t n, double ref, double *s1, double *s2)
{
    bn_sums_avx2(1, p, x, n, ref, s1, s2);
}
#endif

/* Note [Batch norm float lanes]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * float32 sums: 32 float lanes k = the value's place in its
 * step of 32 (or 8, a run's rest); every BN_FLUSH steps the lanes are added to 32 double
 * lanes and cleared; a run's last (< 8) values go to a double tail.  The AVX2 loop keeps
 * the float lanes in four vectors and gives the same bits (no FMA: -std=c11 contracts
 * nothing).  A float lane adds at most BN_FLUSH values (relative error ~1e-6 of its
 * partial sum) before the double lanes take over; eight float lanes a vector and four
 * vectors break the add latency chain the double lanes had (the sums pass ran at half the
 * speed of a copy). */
#define BN_LANES 32
#define BN_FLUSH 8

typedef struct {
    float fa[BN_LANES], fq[BN_LANES];
    double da[BN_LANES], dq[BN_LANES], ta, tq;
    int steps;
} BnLanes;

/* adds the float lanes to the double ones */
static inline void
bn_lanes_flush(BnLanes *l)
{
    for (int k = 0; k < BN_LANES; k++) {
        l->da[k] += l->fa[k];
        l->dq[k] += l->fq[k];
        l->fa[k] = l->fq[k] = 0;
    }
    l->steps = 0;
}

/* values [i, n) (n - i < 8) of a run into the double tail */
static inline void
bn_lanes_tail(BnLanes *l, const float *p, const float *x, int64_t i, int64_t n, float rf)
{
    for (; i < n; i++) {
        float v = p[i], d = (x != NULL ? x[i] : v) - rf;
        v = x != NULL ? v : d;
        l->ta += v;
        l->tq += (double)v * d;
    }
}

/* s1, s2 += the lanes, added in one fixed order */
static inline void
bn_lanes_total(BnLanes *l, double *s1, double *s2)
{
    bn_lanes_flush(l);
    for (int w = BN_LANES / 2; w >= 1; w /= 2) {
        for (int k = 0; k < w; k++) {
            l->da[k] += l->da[k + w];
            l->dq[k] += l->dq[k + w];
        }
    }
    *s1 += l->ta + l->da[0];
    *s2 += l->tq + l->dq[0];
}

/* one run of n values into the lanes: p - rf (x NULL) or p and p (x - rf) */
static void
bn_lanes_run(BnLanes *l, const float *restrict p, const float *restrict x, int64_t n, float rf)
{
    int64_t i = 0;
    for (int width = BN_LANES; width >= 8; width /= 4) {
        for (; i + width <= n; i += width) {
            for (int k = 0; k < width; k++) {
                float v = p[i + k], d = (x != NULL ? x[i + k] : v) - rf;
                v = x != NULL ? v : d;
                l->fa[k] += v;
                l->fq[k] += v * d;
            }
            if (++l->steps == BN_FLUSH) {
                bn_lanes_flush(l);
            }
        }
    }
    bn_lanes_tail(l, p, x, i, n, rf);
}

#ifdef PTL_HAVE_AVX2_KERNELS
/* the float lanes fa, fq (four vectors each) added to l's double lanes, then cleared */
PTL_AVX2 static inline void
bn_lanes_flush_avx2(BnLanes *l, __m256 *fa, __m256 *fq)
{
    for (int v = 0; v < 4; v++) {
        double *a = l->da + 8 * v, *q = l->dq + 8 * v;
        _mm256_storeu_pd(a, _mm256_add_pd(_mm256_loadu_pd(a),
                                          _mm256_cvtps_pd(_mm256_castps256_ps128(fa[v]))));
        _mm256_storeu_pd(a + 4, _mm256_add_pd(_mm256_loadu_pd(a + 4),
                                              _mm256_cvtps_pd(_mm256_extractf128_ps(fa[v], 1))));
        _mm256_storeu_pd(q, _mm256_add_pd(_mm256_loadu_pd(q),
                                          _mm256_cvtps_pd(_mm256_castps256_ps128(fq[v]))));
        _mm256_storeu_pd(q + 4, _mm256_add_pd(_mm256_loadu_pd(q + 4),
                                              _mm256_cvtps_pd(_mm256_extractf128_ps(fq[v], 1))));
        fa[v] = fq[v] = _mm256_setzero_ps();
    }
    l->steps = 0;
}

/* values [i, i + 8) into the lanes vectors a, q */
PTL_AVX2 static inline void
bn_lanes_step8_avx2(const float *p, const float *x, int64_t i, __m256 r, __m256 *a, __m256 *q)
{
    __m256 v = _mm256_loadu_ps(p + i);
    __m256 d = _mm256_sub_ps(x != NULL ? _mm256_loadu_ps(x + i) : v, r);
    v = x != NULL ? v : d;
    *a = _mm256_add_ps(*a, v);
    *q = _mm256_add_ps(*q, _mm256_mul_ps(v, d));
}

/* runs ahead that bn_lanes_chunk_avx2 prefetches, and the most lines of a run it fetches:
 * a channel's short runs lie C HW apart, too far for the hardware's stream prefetch (a
 * batch norm's input comes cold from memory in a training step) */
#define BN_AHEAD 2
#define BN_PREFETCH_LINES 8

/* the first lines of a run of n floats at p (and x) into the cache */
PTL_AVX2 static inline void
bn_prefetch_run(const float *p, const float *x, int64_t n)
{
    int64_t lines = (n * (int64_t)sizeof(float) + 63) / 64;
    lines = lines < BN_PREFETCH_LINES ? lines : BN_PREFETCH_LINES;
    for (int64_t k = 0; k < lines; k++) {
        _mm_prefetch((const char *)(p + 16 * k), _MM_HINT_T0);
        if (x != NULL) {
            _mm_prefetch((const char *)(x + 16 * k), _MM_HINT_T0);
        }
    }
}

/* bn_lanes_run over every run of channel c's values [i, i1), the float lanes in registers;
 * bw: backward sums (j->dy given) */
PTL_AVX2 static inline void
bn_lanes_chunk_avx2(const BnJob *j, int bw, int64_t c, int64_t i, int64_t i1, float rf,
                    BnLanes *l)
{
    __m256 fa[4], fq[4], r = _mm256_set1_ps(rf);
    for (int v = 0; v < 4; v++) {
        fa[v] = fq[v] = _mm256_setzero_ps();
    }
    size_t off;
    for (int64_t n = bn_run(j, c, i, i1, &off); i < i1; n = bn_next_run(j, i, i1, &off, n)) {
        int64_t k = 0;
        const float *x = bw ? (const float *)j->x + off : NULL;
        const float *p = (const float *)(bw ? j->dy : j->x) + off;
        if (i + n + BN_AHEAD * j->hw <= i1) {
            bn_prefetch_run(p + BN_AHEAD * j->c * j->hw, x != NULL ? x + BN_AHEAD * j->c * j->hw
                                                                   : NULL, n);
        }
        for (; k + BN_LANES <= n; k += BN_LANES) {
            for (int v = 0; v < 4; v++) {
                bn_lanes_step8_avx2(p, x, k + 8 * v, r, &fa[v], &fq[v]);
            }
            if (++l->steps == BN_FLUSH) {
                bn_lanes_flush_avx2(l, fa, fq);
            }
        }
        for (; k + 8 <= n; k += 8) {
            bn_lanes_step8_avx2(p, x, k, r, &fa[0], &fq[0]);
            if (++l->steps == BN_FLUSH) {
                bn_lanes_flush_avx2(l, fa, fq);
            }
        }
        bn_lanes_tail(l, p, x, k, n, rf);
        i += n;
    }
    bn_lanes_flush_avx2(l, fa, fq);
}

PTL_AVX2 static void
bn_lanes_chunk_avx2_fw(const BnJob *j, int64_t c, int64_t i, int64_t i1, float rf, BnLanes *l)
{
    bn_lanes_chunk_avx2(j, 0, c, i, i1, rf, l);
}

PTL_AVX2 static void
bn_lanes_chunk_avx2_bw(const BnJob *j, int64_t c, int64_t i, int64_t i1, float rf, BnLanes *l)
{
    bn_lanes_chunk_avx2(j, 1, c, i, i1, rf, l);
}
#endif

/* The float32 sums of channel c's values [i, i1) by the float lanes; 0, or -1 where a
 * sum is not finite (bn_chunk_sums_f4 then sums again in double). */
static int
bn_chunk_lanes_f4(const BnJob *j, int64_t c, int64_t i, int64_t i1, double *s1, double *s2)
{
    BnLanes l;
    memset(&l, 0, sizeof l);
    float rf = (float)j->ref[c];
#ifdef PTL_HAVE_AVX2_KERNELS
    if (ptl_cpu_capability() >= PTL_CPU_AVX2) {
        (j->dy != NULL ? bn_lanes_chunk_avx2_bw : bn_lanes_chunk_avx2_fw)(j, c, i, i1, rf, &l);
        bn_lanes_total(&l, s1, s2);
        return isfinite(*s1) && isfinite(*s2) ? 0 : -1;
    }
#endif
    size_t off;
    for (int64_t n = bn_run(j, c, i, i1, &off); i < i1; n = bn_next_run(j, i, i1, &off, n)) {
        const float *x = (const float *)j->x + off;
        bn_lanes_run(&l, j->dy != NULL ? (const float *)j->dy + off : x,
                     j->dy != NULL ? x : NULL, n, rf);
        i += n;
    }
    bn_lanes_total(&l, s1, s2);
    return isfinite(*s1) && isfinite(*s2) ? 0 : -1;
}

/* Note [Batch norm float overflow]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * The float lanes (Note [Batch norm float lanes]) square and add in float, so a channel
 * with values beyond ~1e19 from its first value (or lanes of values near 1e38) overflows to
 * inf, and the channel normalized to 0 where PyTorch (which sums float32 in double) gives
 * the values.  A chunk whose lane sums are not finite is summed again by the double lanes
 * (bn_sums_lanes reading floats), whose squares reach 1e308: the channels with finite sums,
 * all of them in practice, keep the float lanes' speed and bits, and a channel holding inf
 * or nan pays one more pass for the same inf or nan. */

/* The float32 sums of channel c's values [i, i1) (bn_sums' job for one task). */
static void
bn_chunk_sums_f4(const BnJob *j, int64_t c, int64_t i, int64_t i1, double *s1, double *s2)
{
    double l1 = 0, l2 = 0;
    if (bn_chunk_lanes_f4(j, c, i, i1, &l1, &l2) == 0) {
        *s1 += l1;
        *s2 += l2;
        return;
    }
    size_t off;
    for (int64_t n = bn_run(j, c, i, i1, &off); i < i1; n = bn_next_run(j, i, i1, &off, n)) {
        const char *x = j->x + off * sizeof(float);
        double a[8] = {0, 0, 0, 0, 0, 0, 0, 0}, q[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        bn_sums_lanes(0, j->dy != NULL ? j->dy + off * sizeof(float) : x,
                      j->dy != NULL ? x : NULL, 0, n, j->ref[c], a, q, s1, s2);
        i += n;
    }
}

/* The sums of one run (bn_sums_lanes), on AVX2 where the CPU has it. */
static inline void
bn_sums_run(int f8, const char *p, const char *x, int64_t n, double ref, double *s1,
            double *s2)
{
#ifdef PTL_HAVE_AVX2_KERNELS
    if (ptl_cpu_capability() >= PTL_CPU_AVX2) {
        if (f8) {
            bn_sums_avx2_f8(p, x, n, ref, s1, s2);
            return;
        }
    }
#endif
    double a[8] = {0, 0, 0, 0, 0, 0, 0, 0}, q[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    bn_sums_lanes(f8, p, x, 0, n, ref, a, q, s1, s2);
}

/* The elementwise passes compute in the work dtype T: o = a p + k (p = x), or
 * o = a p + b x + k (p = dy, x given). */
#define DEFINE_BN_AFFINE_RUN(T, DT)                                                       \
    PTL_LOOP_CLONES static void                                                           \
    bn_affine_run_##DT(const char *pp, const char *xp, char *op, int64_t n, double a_d,   \
                       double b_d, double k_d)                                            \
    {                                                                                     \
        const T *restrict p = (const T *)pp, *restrict x = (const T *)xp;                 \
        T *restrict o = (T *)op;                                                          \
        const T a = (T)a_d, b = (T)b_d, k = (T)k_d;                                       \
        if (x != NULL) {                                                                  \
            for (int64_t i = 0; i < n; i++) {                                             \
                o[i] = a * p[i] + b * x[i] + k;                                           \
            }                                                                             \
        }                                                                                 \
        else {                                                                            \
            for (int64_t i = 0; i < n; i++) {                                             \
                o[i] = a * p[i] + k;                                                      \
            }                                                                             \
        }                                                                                 \
    }
DEFINE_BN_AFFINE_RUN(float, f4)
DEFINE_BN_AFFINE_RUN(double, f8)
#undef DEFINE_BN_AFFINE_RUN

/* tasks [t0, t1): forward moments about ref (dy NULL) or backward sums (dy given) */
static inline int
bn_sums(const BnJob *j, int f8, int64_t t0, int64_t t1)
{
    const size_t isz = f8 ? sizeof(double) : sizeof(float);
    for (int64_t t = t0; t < t1; t++) {
        int64_t c, i, i1;
        double s1 = 0, s2 = 0;
        bn_task(j, t, &c, &i, &i1);
        if (!f8) {
            bn_chunk_sums_f4(j, c, i, i1, &s1, &s2);
            i = i1;
        }
        size_t off;
        for (int64_t len = bn_run(j, c, i, i1, &off); i < i1;
             len = bn_next_run(j, i, i1, &off, len)) {
            const char *x = j->x + off * isz;
            bn_sums_run(f8, j->dy != NULL ? j->dy + off * isz : x, j->dy != NULL ? x : NULL,
                        len, j->ref[c], &s1, &s2);
            i += len;
        }
        j->part[2 * t] = s1;
        j->part[2 * t + 1] = s2;
    }
    return 0;
}

/* tasks [t0, t1) of the elementwise pass: out = a x + k (forward) or a dy + b x + k */
static inline int
bn_affine(const BnJob *j, int f8, int64_t t0, int64_t t1)
{
    const size_t isz = f8 ? sizeof(double) : sizeof(float);
    for (int64_t t = t0; t < t1; t++) {
        int64_t c, i, i1;
        bn_task(j, t, &c, &i, &i1);
        size_t off;
        for (int64_t len = bn_run(j, c, i, i1, &off); i < i1;
             len = bn_next_run(j, i, i1, &off, len)) {
            const char *p = (j->dy != NULL ? j->dy : j->x) + off * isz;
            const char *x = j->dy != NULL && j->b[c] != 0 ? j->x + off * isz : NULL;
            (f8 ? bn_affine_run_f8 : bn_affine_run_f4)(p, x, j->out + off * isz, len, j->a[c],
                                                       j->b != NULL ? j->b[c] : 0, j->k[c]);
            i += len;
        }
    }
    return 0;
}

#define DEFINE_BN(DT, F8)                                                                 \
    static int                                                                            \
    bn_sums_##DT(void *ctx, int64_t t0, int64_t t1)                                       \
    {                                                                                     \
        return bn_sums(ctx, F8, t0, t1);                                                  \
    }                                                                                     \
    static int                                                                            \
    bn_affine_##DT(void *ctx, int64_t t0, int64_t t1)                                     \
    {                                                                                     \
        return bn_affine(ctx, F8, t0, t1);                                                \
    }
DEFINE_BN(f4, 0)
DEFINE_BN(f8, 1)
#undef DEFINE_BN

/* Note [Batch norm fused channels]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * Where there are channels for every thread (bn_fused), one task does all of a channel:
 * its chunks' sums, added in chunk order as bn_channel_sums adds them, its coefficients
 * (j->coef, the same per-channel arithmetic the serial loop does), then its elementwise
 * pass, which reads the channel again while it is still in the core's cache (the passes
 * over all channels read it back from memory or L3).  The bits are those of the two-phase
 * path, whatever the thread count. */
static inline int
bn_fused(const BnJob *j, int f8, int64_t c0, int64_t c1)
{
    for (int64_t c = c0; c < c1; c++) {
        int64_t t0 = c * j->chunks, t1 = t0 + j->chunks;
        bn_sums(j, f8, t0, t1);
        j->sums[2 * c] = j->sums[2 * c + 1] = 0;
        for (int64_t t = t0; t < t1; t++) {
            j->sums[2 * c] += j->part[2 * t];
            j->sums[2 * c + 1] += j->part[2 * t + 1];
        }
        j->coef(j->coef_ctx, c);
        bn_affine(j, f8, t0, t1);
    }
    return 0;
}

static int
bn_fused_f4(void *ctx, int64_t c0, int64_t c1)
{
    return bn_fused(ctx, 0, c0, c1);
}

static int
bn_fused_f8(void *ctx, int64_t c0, int64_t c1)
{
    return bn_fused(ctx, 1, c0, c1);
}

/* Whether the sums and the elementwise pass run fused (Note [Batch norm fused channels]):
 * two channels a thread at least. */
static int
bn_use_fused(const BnJob *j)
{
    return j->c >= 2 * (int64_t)ptl_get_num_threads();
}

/* fn over the C * chunks tasks, about PTL_GRAIN_SIZE values a thread's share at least */
static int
bn_run_tasks(BnJob *j, PtlParallelFn fn)
{
    int64_t m = j->n * j->hw, per = m < BN_CHUNK ? m : BN_CHUNK, tasks = j->c * j->chunks;
    void *tok = tasks * per >= PTL_GRAIN_SIZE ? ptl_nogil_begin() : NULL;
    int rc = ptl_parallel_for(0, tasks, PTL_GRAIN_SIZE / (per + 1) + 1, fn, j);
    ptl_nogil_end(tok);
    return rc;
}

/* bn_fused over the C channels */
static int
bn_run_fused(BnJob *j, int f4)
{
    int64_t m = j->n * j->hw;
    void *tok = j->c * m >= PTL_GRAIN_SIZE ? ptl_nogil_begin() : NULL;
    int rc = ptl_parallel_for(0, j->c, PTL_GRAIN_SIZE / (m + 1) + 1,
                              f4 ? bn_fused_f4 : bn_fused_f8, j);
    ptl_nogil_end(tok);
    return rc;
}

/* The chunk sums of every channel added in chunk order: s[2c], s[2c + 1]. */
static void
bn_channel_sums(const BnJob *j, double *s)
{
    for (int64_t c = 0; c < j->c; c++) {
        s[2 * c] = s[2 * c + 1] = 0;
        for (int64_t q = 0; q < j->chunks; q++) {
            s[2 * c] += j->part[2 * (c * j->chunks + q)];
            s[2 * c + 1] += j->part[2 * (c * j->chunks + q) + 1];
        }
    }
}

static PtlTensorImpl *
opt_tensor(const PtlIValue *v)
{
    return v->tag == PTL_IV_TENSOR ? v->u.t : NULL;
}

/* The c values of the 1-D tensor t (any dtype and stride) in double; `dflt` where t is
 * NULL. */
static void
bn_load_channels(PtlTensorImpl *t, int64_t c, double dflt, double *out)
{
    for (int64_t i = 0; i < c; i++) {
        out[i] = t == NULL ? dflt
                           : ptl_load_double((const char *)ptl_tensor_data(t) +
                                                 (size_t)(i * t->strides[0]) *
                                                     ptl_tensor_itemsize(t),
                                             t->dtype);
    }
}

/* Checks the input and the per-channel tensors as PyTorch's batch_norm does; sets *c.
 * params: weight, bias, running_mean, running_var (NULL when None). */
static int
bn_check(PtlTensorImpl *x, PtlTensorImpl **params, int training, int64_t *c)
{
    static const char *const names[4] = {"weight", "bias", "running_mean", "running_var"};
    static const int order[4] = {2, 3, 0, 1};
    char b1[256];
    int64_t one = 1;
    if (ptl_wrap_dim(&one, x->dim) < 0 ||
        nn_check_dtype("batch_norm", x->dtype, 0) < 0) {
        return -1;
    }
    if (x->numel == 0) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "input tensor must have at least one element, but got "
                             "input_sizes = %s",
                             ptl_format_sizes(b1, sizeof b1, x->dim, x->sizes));
    }
    *c = x->sizes[1];
    for (int q = 0; q < 4; q++) {
        int i = order[q];
        if (params[i] == NULL) {
            if (i >= 2 && !training) {
                return ptl_error_set(PTL_ERR_RUNTIME, "%s must be defined in evaluation mode",
                                     names[i]);
            }
            continue;
        }
        if (params[i]->numel != *c) {
            return ptl_error_set(PTL_ERR_RUNTIME, "%s should contain %lld elements not %lld",
                                 names[i], (long long)*c, (long long)params[i]->numel);
        }
        if (params[i]->dim != 1) {
            return ptl_error_set(PTL_ERR_RUNTIME, "%s must be 1-dimensional, got %d dims",
                                 names[i], params[i]->dim);
        }
    }
    return nn_check_mixed_dtype(x, params, 4);
}

/* The dtype of the statistics and parameter gradients: float32 for a float16/bfloat16
 * input with float32 parameters (mixed), else the input's. */
static PtlDtype
bn_param_dtype(PtlTensorImpl *x, PtlTensorImpl **params, int k)
{
    for (int i = 0; i < k; i++) {
        if (params[i] != NULL) {
            return params[i]->dtype;
        }
    }
    return x->dtype;
}

/* HW of x [N, C, *] */
static int64_t
bn_hw(PtlTensorImpl *x)
{
    int64_t hw = 1;
    for (int d = 2; d < x->dim; d++) {
        hw *= x->sizes[d];
    }
    return hw;
}

/* Whether the kernels read x in place (Note [Batch norm channels]); the device's read
 * any contiguous run (on_device). */
static int
bn_in_place(PtlTensorImpl *x, PtlDtype work, int on_device)
{
    return x->dtype == work && (on_device || bn_hw(x) >= BN_MIN_HW) &&
           ptl_tensor_is_contiguous(x);
}

/* x [N, C, *] as the kernels read it: itself (move 0) or a [C, N, *] copy in the work dtype
 * (move 1); fills j's geometry.  New ref. */
static PtlTensorImpl *
bn_prepare(PtlTensorImpl *x, PtlDtype work, int move, BnJob *j)
{
    j->c = x->sizes[1];
    j->moved = move;
    j->n = move ? 1 : x->sizes[0];
    j->hw = move ? x->sizes[0] * bn_hw(x) : bn_hw(x);
    if (!move) {
        ptl_incref(x);
        return x;
    }
    int64_t sizes[PTL_MAX_DIMS], strides[PTL_MAX_DIMS];
    memcpy(sizes, x->sizes, sizeof(int64_t) * (size_t)x->dim);
    memcpy(strides, x->strides, sizeof(int64_t) * (size_t)x->dim);
    sizes[0] = x->sizes[1];
    sizes[1] = x->sizes[0];
    strides[0] = x->strides[1];
    strides[1] = x->strides[0];
    PtlTensorImpl *v = ptl_tensor_impl_view(x, x->dim, sizes, strides, x->storage_offset);
    if (v == NULL) {
        return NULL;
    }
    PtlTensorImpl *r = nn_prepare(v, work);
    ptl_decref(v);
    return r;
}

/* The result r (stolen; laid out as bn_prepare laid out x) as a contiguous [N, C, *] tensor
 * of dtype dt.  New ref. */
static PtlTensorImpl *
bn_finish(PtlTensorImpl *r, PtlTensorImpl *x, const BnJob *j, PtlDtype dt)
{
    if (!j->moved) {
        return nn_finish(r, dt);
    }
    int64_t strides[PTL_MAX_DIMS];
    memcpy(strides, r->strides, sizeof(int64_t) * (size_t)r->dim);
    strides[0] = r->strides[1];
    strides[1] = r->strides[0];
    PtlTensorImpl *v = ptl_tensor_impl_view(r, x->dim, x->sizes, strides, 0);
    PtlTensorImpl *out = v != NULL ? ptl_empty(x->dim, x->sizes, dt, x->device) : NULL;
    if (out != NULL && ptl_copy_into(out, v) < 0) {
        PTL_CLEAR(out);
    }
    ptl_xdecref(v);
    ptl_decref(r);
    return out;
}

/* The per-channel scratch of one call: the chunk partial sums, then nine [C] arrays. */
typedef struct {
    double *buf, *part, *ref, *a, *b, *k, *w, *bias, *mean, *var, *sums;
} BnScratch;

static int
bn_scratch(BnScratch *sc, BnJob *j)
{
    int64_t c = j->c;
    j->chunks = (j->n * j->hw + BN_CHUNK - 1) / BN_CHUNK;
    sc->buf = malloc(sizeof(double) * (size_t)(2 * c * j->chunks + 10 * c + 1));
    if (sc->buf == NULL) {
        return ptl_error_set(PTL_ERR_MEMORY, "batch_norm: out of memory for %lld channels",
                             (long long)c);
    }
    sc->part = sc->buf;
    sc->ref = sc->part + 2 * c * j->chunks;
    sc->a = sc->ref + c;
    sc->b = sc->a + c;
    sc->k = sc->b + c;
    sc->w = sc->k + c;
    sc->bias = sc->w + c;
    sc->mean = sc->bias + c;
    sc->var = sc->mean + c;
    sc->sums = sc->var + c;
    j->part = sc->part;
    j->ref = sc->ref;
    j->a = sc->a;
    j->k = sc->k;
    return 0;
}

/* What the per-channel coefficients of bn_forward_coef and bn_backward_coef read. */
typedef struct {
    BnScratch *sc;
    double m, eps;
    int training;
} BnCoef;

/* Forward, channel i: (training) mean and biased var from the sums about ref, then
 * b = invstd, a = w invstd and k = bias - mean a (out = a x + k). */
static void
bn_forward_coef(void *ctx, int64_t i)
{
    const BnCoef *q = ctx;
    BnScratch *sc = q->sc;
    if (q->training) {
        double d = sc->sums[2 * i] / q->m, v = sc->sums[2 * i + 1] / q->m - d * d;
        sc->mean[i] = sc->ref[i] + d;
        sc->var[i] = v < 0 ? 0 : v;   /* rounding below 0 clamps; nan stays nan */
    }
    sc->b[i] = 1.0 / sqrt(sc->var[i] + q->eps);   /* invstd */
    sc->a[i] = sc->w[i] * sc->b[i];
    sc->k[i] = sc->bias[i] - sc->mean[i] * sc->a[i];
}

/* Backward, channel i (var holds invstd): dx = a dy + b x + k (Note [Batch norm
 * channels]). */
static void
bn_backward_coef(void *ctx, int64_t i)
{
    const BnCoef *q = ctx;
    BnScratch *sc = q->sc;
    double inv = sc->var[i], a = sc->w[i] * inv;
    sc->a[i] = a;
    sc->b[i] = q->training ? -a * inv * inv * sc->sums[2 * i + 1] / q->m : 0.0;
    sc->k[i] = q->training ? -a * sc->sums[2 * i] / q->m - sc->b[i] * sc->mean[i] : 0.0;
}

/* The sums pass, the coefficients (coef) and the elementwise pass (affine) of j: fused
 * per channel where bn_use_fused says so, else each over all channels. */
static int
bn_two_passes(BnJob *j, int f4, void (*coef)(void *, int64_t), BnCoef *q)
{
    if (bn_use_fused(j)) {
        j->coef = coef;
        j->coef_ctx = q;
        j->sums = q->sc->sums;
        return bn_run_fused(j, f4);
    }
    if (bn_run_tasks(j, f4 ? bn_sums_f4 : bn_sums_f8) < 0) {
        return -1;
    }
    bn_channel_sums(j, q->sc->sums);
    for (int64_t i = 0; i < j->c; i++) {
        coef(q, i);
    }
    return bn_run_tasks(j, f4 ? bn_affine_f4 : bn_affine_f8);
}

/* A new contiguous [n] tensor of dtype dt holding v[0..n) (n may be 0). */
static PtlTensorImpl *
bn_channels_tensor(const double *v, int64_t n, PtlDtype dt, PtlDevice dev)
{
    PtlTensorImpl *t = ptl_empty(1, &n, dt, dev);
    for (int64_t i = 0; t != NULL && i < n; i++) {
        ptl_store_double((char *)ptl_tensor_data(t) + (size_t)i * ptl_tensor_itemsize(t), dt,
                         v[i]);
    }
    return t;
}

/* t = (1 - momentum) t + momentum v, in place, for the 1-D running statistic t (may be
 * NULL).  Its version is left alone, as PyTorch's kernel leaves it: a graph that saved it
 * (an earlier training step of the same module) stays valid. */
static void
bn_update_running(PtlTensorImpl *t, const double *v, int64_t c, double momentum)
{
    if (t == NULL) {
        return;
    }
    for (int64_t i = 0; i < c; i++) {
        char *p = (char *)ptl_tensor_data(t) + (size_t)(i * t->strides[0]) *
                                                   ptl_tensor_itemsize(t);
        ptl_store_double(p, t->dtype, (1 - momentum) * ptl_load_double(p, t->dtype) +
                                          momentum * v[i]);
    }
}

int (*ptl_device_batch_norm_hook)(const PtlDeviceBatchNormArgs *a);

/* a: the device job's per-channel tensors from params (weight, bias, mean, var; NULL when
 * None) */
static void
bn_device_params(PtlDeviceBatchNormArgs *a, PtlTensorImpl *const *params)
{
    for (int k = 0; k < 4; k++) {
        PtlTensorImpl *t = params[k];
        a->p[k] = t != NULL ? ptl_tensor_data(t) : NULL;
        a->ps[k] = t != NULL ? t->strides[0] : 0;
        a->pdt[k] = t != NULL ? t->dtype : PTL_DTYPE_FLOAT32;
    }
}

/* native_batch_norm on the device (Note [CUDA nn kernels] in src/cuda/nn_plan.h): the
 * checked input and parameters in, r[0..3) out. */
static int
bn_device_forward(PtlTensorImpl *x, PtlTensorImpl **p, int training, double momentum,
                  double eps, PtlTensorImpl **r)
{
    PtlDtype work = nn_work_dtype(x->dtype), pdt = bn_param_dtype(x, p, 4);
    PtlTensorImpl *xc;
    BnJob j = {0};
    int64_t c = x->sizes[1], nc = training ? c : 0;
    if ((xc = bn_prepare(x, work, !bn_in_place(x, work, 1), &j)) == NULL) {
        return -1;
    }
    if ((r[0] = ptl_empty(xc->dim, xc->sizes, work, x->device)) == NULL ||
        (r[1] = ptl_empty(1, &nc, pdt, x->device)) == NULL ||
        (r[2] = ptl_empty(1, &nc, pdt, x->device)) == NULL) {
        ptl_decref(xc);
        return -1;
    }
    PtlDeviceBatchNormArgs a = {.training = training, .dtype = work, .odt = pdt,
                                .x = ptl_tensor_data(xc), .y = ptl_tensor_data(r[0]),
                                .out0 = ptl_tensor_data(r[1]), .out1 = ptl_tensor_data(r[2]),
                                .n = j.n, .c = j.c, .hw = j.hw, .momentum = momentum,
                                .eps = eps};
    bn_device_params(&a, p);
    int rc = ptl_device_batch_norm_hook(&a);
    ptl_decref(xc);
    if (rc < 0 || (r[0] = bn_finish(r[0], x, &j, x->dtype)) == NULL) {
        return -1;
    }
    return 0;
}

/* native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor(a!)? running_mean,
 *     Tensor(b!)? running_var, bool training, float momentum, float eps)
 *     -> (Tensor, Tensor, Tensor)
 * input [N, C, *] -> out [N, C, *], save_mean [C], save_invstd [C]; in eval the two saved
 * tensors are empty ([0]), as PyTorch's CPU kernel returns them.  Training updates
 * running_mean and running_var in place with the batch mean and unbiased variance. */
static int
native_batch_norm_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *x = s[0].u.t, *xc = NULL, *r[3] = {NULL, NULL, NULL};
    PtlTensorImpl *p[4] = {opt_tensor(&s[1]), opt_tensor(&s[2]), opt_tensor(&s[3]),
                           opt_tensor(&s[4])};
    int training = s[5].u.b;
    double momentum = ptl_iv_to_double(&s[6]), eps = ptl_iv_to_double(&s[7]);
    BnJob j = {0};
    BnScratch sc = {0};
    int64_t c;
    if (bn_check(x, p, training, &c) < 0) {
        return -1;
    }
    if (nn_on_device(x, ptl_device_batch_norm_hook != NULL)) {
        if (bn_device_forward(x, p, training, momentum, eps, r) < 0) {
            goto error;
        }
        goto done;
    }
    PtlDtype work = nn_work_dtype(x->dtype), pdt = bn_param_dtype(x, p, 4);
    int f4 = work == PTL_DTYPE_FLOAT32;
    if ((xc = bn_prepare(x, work, !bn_in_place(x, work, 0), &j)) == NULL ||
        bn_scratch(&sc, &j) < 0 ||
        (r[0] = ptl_empty(xc->dim, xc->sizes, work, x->device)) == NULL) {
        goto error;
    }
    j.x = ptl_tensor_data(xc);
    j.out = ptl_tensor_data(r[0]);
    bn_load_channels(p[0], c, 1.0, sc.w);
    bn_load_channels(p[1], c, 0.0, sc.bias);
    double m = (double)(j.n * j.hw);
    BnCoef q = {&sc, m, eps, training};
    if (training) {
        for (int64_t i = 0; i < c; i++) {
            sc.ref[i] = nn_load(!f4, j.x, i * j.hw);   /* value 0 of channel i */
        }
        if (bn_two_passes(&j, f4, bn_forward_coef, &q) < 0) {
            goto error;
        }
    }
    else {
        bn_load_channels(p[2], c, 0.0, sc.mean);
        bn_load_channels(p[3], c, 1.0, sc.var);
        for (int64_t i = 0; i < c; i++) {
            bn_forward_coef(&q, i);
        }
        if (bn_run_tasks(&j, f4 ? bn_affine_f4 : bn_affine_f8) < 0) {
            goto error;
        }
    }
    if ((r[0] = bn_finish(r[0], x, &j, x->dtype)) == NULL ||
        (r[1] = bn_channels_tensor(sc.mean, training ? c : 0, pdt, x->device)) == NULL ||
        (r[2] = bn_channels_tensor(sc.b, training ? c : 0, pdt, x->device)) == NULL) {
        goto error;
    }
    if (training) {
        bn_update_running(p[2], sc.mean, c, momentum);
        for (int64_t i = 0; i < c; i++) {
            sc.var[i] *= m / (m - 1);
        }
        bn_update_running(p[3], sc.var, c, momentum);
    }
    free(sc.buf);
    ptl_decref(xc);
done:
    for (int i = 0; i < 3; i++) {
        s[i] = ptl_iv_tensor(r[i]);
    }
    return 0;
error:
    free(sc.buf);
    ptl_xdecref(xc);
    for (int i = 0; i < 3; i++) {
        ptl_xdecref(r[i]);
    }
    return -1;
}

/* native_batch_norm_backward on the device: the checked gradient, input, weight and
 * statistics (stats: mean, then invstd (training) or var) in, r[0..3) out as mask asks. */
static int
bn_device_backward(PtlTensorImpl *dy, PtlTensorImpl *x, PtlTensorImpl **p,
                   PtlTensorImpl **stats, int training, double eps, const int64_t *mask,
                   PtlTensorImpl **r)
{
    PtlDtype work = nn_work_dtype(x->dtype), pdt = bn_param_dtype(x, p, 4);
    PtlTensorImpl *xc = NULL, *dyc = NULL, *q[4] = {p[0], NULL, stats[0], stats[1]};
    BnJob j = {0}, jg = {0};
    int64_t c = x->sizes[1];
    int rc = -1, move = !bn_in_place(x, work, 1) || !bn_in_place(dy, work, 1);
    if ((xc = bn_prepare(x, work, move, &j)) == NULL ||
        (dyc = bn_prepare(dy, work, move, &jg)) == NULL ||
        (mask[0] && (r[0] = ptl_empty(xc->dim, xc->sizes, work, x->device)) == NULL) ||
        (mask[1] && (r[1] = ptl_empty(1, &c, pdt, x->device)) == NULL) ||
        (mask[2] && (r[2] = ptl_empty(1, &c, pdt, x->device)) == NULL)) {
        goto done;
    }
    PtlDeviceBatchNormArgs a = {.backward = 1, .training = training, .dtype = work,
                                .odt = pdt, .x = ptl_tensor_data(xc),
                                .dy = ptl_tensor_data(dyc), .n = j.n, .c = j.c, .hw = j.hw,
                                .eps = eps};
    a.y = r[0] != NULL ? ptl_tensor_data(r[0]) : NULL;
    a.out0 = r[1] != NULL ? ptl_tensor_data(r[1]) : NULL;
    a.out1 = r[2] != NULL ? ptl_tensor_data(r[2]) : NULL;
    bn_device_params(&a, q);
    if (ptl_device_batch_norm_hook(&a) < 0 ||
        (r[0] != NULL && (r[0] = bn_finish(r[0], x, &j, x->dtype)) == NULL)) {
        goto done;
    }
    rc = 0;
done:
    ptl_xdecref(xc);
    ptl_xdecref(dyc);
    return rc;
}

/* native_batch_norm_backward(Tensor grad_out, Tensor input, Tensor? weight,
 *     Tensor? running_mean, Tensor? running_var, Tensor? save_mean, Tensor? save_invstd,
 *     bool train, float eps, bool[3] output_mask) -> (Tensor, Tensor, Tensor)
 * grad_out, input [N, C, *] -> grad_input [N, C, *], grad_weight [C], grad_bias [C], each
 * undefined when its mask entry is 0.  train: the statistics are save_mean and save_invstd;
 * eval: running_mean and 1 / sqrt(running_var + eps).  Note [Batch norm channels]. */
static int
native_batch_norm_backward_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *dy = s[0].u.t, *x = s[1].u.t, *w = opt_tensor(&s[2]);
    PtlTensorImpl *rm = opt_tensor(&s[3]), *rv = opt_tensor(&s[4]);
    PtlTensorImpl *smean = opt_tensor(&s[5]), *sinv = opt_tensor(&s[6]);
    PtlTensorImpl *xc = NULL, *dyc = NULL, *r[3] = {NULL, NULL, NULL};
    int training = s[7].u.b;
    double eps = ptl_iv_to_double(&s[8]);
    const int64_t *mask = s[9].u.il.data;
    char b1[256], b2[256];
    BnJob j = {0}, jg = {0};
    BnScratch sc = {0};
    int64_t c;
    PtlTensorImpl *p[4] = {w, NULL, rm, rv};
    if (bn_check(x, p, 1, &c) < 0) {
        return -1;
    }
    if (dy->dim != x->dim ||
        memcmp(dy->sizes, x->sizes, sizeof(int64_t) * (size_t)x->dim) != 0) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "native_batch_norm_backward: grad_out of size %s does not match "
                             "input of size %s",
                             ptl_format_sizes(b1, sizeof b1, dy->dim, dy->sizes),
                             ptl_format_sizes(b2, sizeof b2, x->dim, x->sizes));
    }
    PtlTensorImpl *stats[2] = {training ? smean : rm, training ? sinv : rv};
    if (stats[0] == NULL || stats[1] == NULL || stats[0]->numel != c || stats[1]->numel != c ||
        stats[0]->dim != 1 || stats[1]->dim != 1) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "native_batch_norm_backward: %s must be 1-dimensional tensors of "
                             "%lld elements",
                             training ? "save_mean and save_invstd" :
                                        "running_mean and running_var",
                             (long long)c);
    }
    if (nn_on_device(x, ptl_device_batch_norm_hook != NULL)) {
        if (bn_device_backward(dy, x, p, stats, training, eps, mask, r) < 0) {
            goto error;
        }
        goto done;
    }
    PtlDtype work = nn_work_dtype(x->dtype), pdt = bn_param_dtype(x, p, 4);
    int f4 = work == PTL_DTYPE_FLOAT32;
    int move = !bn_in_place(x, work, 0) || !bn_in_place(dy, work, 0);
    if ((xc = bn_prepare(x, work, move, &j)) == NULL ||
        (dyc = bn_prepare(dy, work, move, &jg)) == NULL || bn_scratch(&sc, &j) < 0) {
        goto error;
    }
    j.x = ptl_tensor_data(xc);
    j.dy = ptl_tensor_data(dyc);
    bn_load_channels(w, c, 1.0, sc.w);
    bn_load_channels(stats[0], c, 0.0, sc.mean);
    bn_load_channels(stats[1], c, 1.0, sc.var);
    for (int64_t i = 0; i < c; i++) {
        sc.ref[i] = sc.mean[i];
        if (!training) {
            sc.var[i] = 1.0 / sqrt(sc.var[i] + eps);   /* invstd */
        }
    }
    BnCoef q = {&sc, (double)(j.n * j.hw), eps, training};
    int sums = training || mask[1] || mask[2];
    if (mask[0]) {
        if ((r[0] = ptl_empty(xc->dim, xc->sizes, work, x->device)) == NULL) {
            goto error;
        }
        j.out = ptl_tensor_data(r[0]);
        j.b = sc.b;
    }
    if (mask[0] && sums) {
        if (bn_two_passes(&j, f4, bn_backward_coef, &q) < 0) {
            goto error;
        }
    }
    else if (sums) {
        if (bn_run_tasks(&j, f4 ? bn_sums_f4 : bn_sums_f8) < 0) {
            goto error;
        }
        bn_channel_sums(&j, sc.sums);
    }
    else if (mask[0]) {
        for (int64_t i = 0; i < c; i++) {
            bn_backward_coef(&q, i);
        }
        if (bn_run_tasks(&j, f4 ? bn_affine_f4 : bn_affine_f8) < 0) {
            goto error;
        }
    }
    if (mask[0] && (r[0] = bn_finish(r[0], x, &j, x->dtype)) == NULL) {
        goto error;
    }
    if (mask[1]) {
        for (int64_t i = 0; i < c; i++) {
            sc.a[i] = sc.sums[2 * i + 1] * sc.var[i];
        }
        if ((r[1] = bn_channels_tensor(sc.a, c, pdt, x->device)) == NULL) {
            goto error;
        }
    }
    if (mask[2]) {
        for (int64_t i = 0; i < c; i++) {
            sc.a[i] = sc.sums[2 * i];
        }
        if ((r[2] = bn_channels_tensor(sc.a, c, pdt, x->device)) == NULL) {
            goto error;
        }
    }
    free(sc.buf);
    ptl_decref(xc);
    ptl_decref(dyc);
done:
    for (int i = 0; i < 3; i++) {
        s[i] = r[i] != NULL ? ptl_iv_tensor(r[i]) : ptl_iv_none();
    }
    return 0;
error:
    free(sc.buf);
    ptl_xdecref(xc);
    ptl_xdecref(dyc);
    for (int i = 0; i < 3; i++) {
        ptl_xdecref(r[i]);
    }
    return -1;
}

/* The output and the input gradient take the layout the input suggests
 * (Note [Channels-last at the kernel boundary]). */
PTL_KERNEL_AS_INPUT(native_batch_norm_cpu)
PTL_KERNEL_AS_INPUT(native_batch_norm_backward_cpu)

static const PtlKernelReg batch_norm_cpu[] = {
    {PTL_OP_native_batch_norm, PTL_KEY_CPU, native_batch_norm_cpu_as_input},
    {PTL_OP_native_batch_norm_backward, PTL_KEY_CPU, native_batch_norm_backward_cpu_as_input},
};
PTL_DEFINE_REGISTER(batch_norm_cpu)
