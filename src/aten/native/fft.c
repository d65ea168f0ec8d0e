/* fft.c -- the discrete Fourier transforms under torch.fft: _fft_c2c, _fft_r2c and
 * _fft_c2r.  Mirrors ATen/native/SpectralOps.cpp (the ops) and ATen/native/mkl/
 * SpectralOps.cpp (the CPU kernels, which call pocketfft there; the transform here is our
 * own).  Derivatives: Note [FFT derivatives] in autograd/derivatives/fft.c.
 *
 * Note [FFT kernel]
 * ~~~~~~~~~~~~~~~~~
 * A transform over several dims is a 1-D transform of every line along one dim after
 * another.  A line is copied into a contiguous scratch line of complex doubles, transformed
 * there and written back, so any strides (and any dtype pair) cost one gather and one
 * scatter; lines are split over the thread pool (FFT_GRAIN_POINTS points per task at
 * least).  The first pass reads the input tensor and writes the output; later passes work in
 * place on the output; the last pass applies the normalization's scale.
 *
 * The 1-D transform of n points is an iterative mixed-radix Stockham FFT (decimation in
 * time, ping-pong between two buffers, so there is no bit reversal): n = p_1 ... p_k with
 * radices 4, 2, 3, 5 written out and any other prime up to FFT_MAX_RADIX as a direct
 * O(p^2) butterfly.  After the stages of radices p_1 .. p_s (product l), the buffer holds,
 * for each residue k < r = n / l, the l-point DFT of x[k], x[k + r], ... at [j r + k]; a
 * stage of radix p turns p of those into one of l p points:
 *     X_k^(lp)[j + l v] = sum_q w_p^(q v) (w_lp^(q j) X_(k + r' q)^(l)[j]),  r' = n / (l p)
 * whose twiddles w_lp^(q j) each plan precomputes.  A length with a prime factor above
 * FFT_MAX_RADIX goes through Bluestein's chirp-z: X_k = c_k sum_j (x_j c_j) conj(c_(k-j))
 * with c_j = exp(-i pi j^2 / n), a convolution computed with a power-of-two FFT of
 * M >= 2n - 1 points (the plan keeps the transformed chirp).  The backward direction is
 * conj(F(conj(x))).  A task with several lines to transform runs them FFT_LANES at a time
 * (Bluestein's products and inner FFTs too): point b of 8 lines sits in one lane block,
 * their real parts then their imaginary parts as two vectors, so each butterfly operation
 * is one vector operation across lines (8 doubles: one AVX-512 register); the lines left
 * over run one by one, and a pass of one line splits it into 8 (Note [Four-step]), also
 * inside Bluestein (a pass of several lines keeps the plain stages there, whose bits the
 * lane stages give: results do not depend on how lines fall into threads).  The gather of a block
 * also reads 8 neighbouring lines together, which is what a transform along an outer dim
 * (fft2's dim 0) needs to use whole cache lines.  Real transforms of even length run on
 * a complex plan of half the length (Note [Real FFT]), in lane blocks too.  Every angle is
 * reduced exactly in integers (q j mod L, j^2 mod 2n) before cos/sin, so each twiddle is
 * within an ulp or so of its value whatever the length.
 *
 * float32 / complex64 passes of lengths with factors 2, 3 and 5 compute in float32
 * (Note [FFT float32] in fft_f32.c: 16 lines a block, twice the lanes of a vector, about
 * 1.5e-7 of the result's norm, as PyTorch's pocketfft).  Every other pass computes in
 * double, float32 lines widened on the gather and rounded on the scatter: against NumPy's
 * float64 on the same float32 inputs, within 3.4e-8 of the result's norm (Frobenius;
 * complex128: 9.3e-16, n up to 65536, Bluestein included).
 *
 * Plans (factors, twiddles, the Bluestein chirp) are built once per length and kept in a
 * small cache shared by all threads (FFT_CACHE entries, least recently used dropped); a
 * plan is immutable and refcounted, so a call holds its plans while another thread evicts
 * them. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../../c10/error.h"
#include "../../c10/parallel.h"
#include "../loops.h"
#include "fft_impl.h"
#include "native.h"

#define FFT_CACHE 16
#define FFT_CACHE_BYTES ((size_t)512 << 20)
#define FFT_GRAIN_POINTS 16384
#define FFT_FOUR_MIN 64
#define FFT_TWO_PI 6.28318530717958647692


/* exp(-2 pi i num / den) for 0 <= num < den */
static Cpx
unit_root(int64_t num, int64_t den)
{
    double a = -FFT_TWO_PI * ((double)num / (double)den);
    return (Cpx){cos(a), sin(a)};
}

static void plan_free(FftPlan *p);
static FftPlan *plan_new(int64_t n);

/* ---- the stages ---- */

static inline Cpx
cmul(Cpx a, Cpx b)
{
    return (Cpx){a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}

/* -i z */
static inline Cpx
mul_neg_i(Cpx z)
{
    return (Cpx){z.im, -z.re};
}

static inline Cpx
cadd(Cpx a, Cpx b)
{
    return (Cpx){a.re + b.re, a.im + b.im};
}

static inline Cpx
csub(Cpx a, Cpx b)
{
    return (Cpx){a.re - b.re, a.im - b.im};
}

static inline Cpx
cscale(Cpx a, double s)
{
    return (Cpx){a.re * s, a.im * s};
}

/* A butterfly: the p-point DFT of a[0..p) in place (st: the generic one's roots).
 *
 * The stages are compiled for the baseline and AVX2 (Note [Loop clones] in loops.h), not
 * AVX-512: gcc 12's avx512f clone of these Cpx loops turns the complex products into
 * vfmaddsub (fused, whatever -ffp-contract says), which would make the bits depend on the
 * CPU.  The lane stages below keep their AVX-512 clone: they compile to separate multiplies
 * and adds (checked with objdump), so every line gets the same bits on either path. */
typedef void (*Butterfly)(Cpx *a, const Stage *st);

/* One stage of radix p (Note [FFT kernel]): for each j, its twiddles w^(qj); for each k,
 * the p inputs in[(j p + q) r + k] twiddled, the butterfly, the outputs out[(j + l v) r +
 * k].  Inlined into each radix's stage with p and bf constant, so the q and v loops unroll
 * and the k loop runs over contiguous rows. */
static inline __attribute__((always_inline)) void
stage_run(const Stage *st, const Cpx *in, Cpx *out, const int p, Butterfly bf)
{
    const int64_t l = st->l, r = st->r;
    Cpx a[FFT_MAX_RADIX], w[FFT_MAX_RADIX];
    for (int64_t j = 0; j < l; j++) {
        const Cpx *src = in + j * p * r;
        Cpx *dst = out + j * r;
        for (int q = 1; q < p; q++) {
            w[q] = st->tw[j * (p - 1) + q - 1];
        }
        for (int64_t k = 0; k < r; k++) {
            a[0] = src[k];
            for (int q = 1; q < p; q++) {
                a[q] = j == 0 ? src[q * r + k] : cmul(src[q * r + k], w[q]);
            }
            bf(a, st);
            for (int v = 0; v < p; v++) {
                dst[v * l * r + k] = a[v];
            }
        }
    }
}

static inline void
bf2(Cpx *a, const Stage *st)
{
    (void)st;
    FFT_BF2(Cpx, cadd, csub);
}

static inline void
bf4(Cpx *a, const Stage *st)
{
    (void)st;
    FFT_BF4(Cpx, cadd, csub, mul_neg_i);
}

static inline void
bf3(Cpx *a, const Stage *st)
{
    (void)st;
    FFT_BF3(Cpx, double, cadd, csub, cscale, mul_neg_i);
}

static inline void
bf5(Cpx *a, const Stage *st)
{
    (void)st;
    FFT_BF5(Cpx, double, cadd, csub, cscale, mul_neg_i);
}

static void
bf_generic(Cpx *a, const Stage *st)
{
    FFT_BF_GENERIC(Cpx, cadd, cmul);
}

/* one stage function per radix: RUN (stage_run or stage_run_lanes) with constant p, bf */
#define DEFINE_RADIX(NAME, CLONES, T, RUN, P, BF)                 \
    CLONES static void                                            \
    NAME(const Stage *st, const T *in, T *out)                    \
    {                                                             \
        RUN(st, in, out, P, BF);                                  \
    }

DEFINE_RADIX(radix2, PTL_LOOP_CLONES, Cpx, stage_run, 2, bf2)
DEFINE_RADIX(radix3, PTL_LOOP_CLONES, Cpx, stage_run, 3, bf3)
DEFINE_RADIX(radix4, PTL_LOOP_CLONES, Cpx, stage_run, 4, bf4)
DEFINE_RADIX(radix5, PTL_LOOP_CLONES, Cpx, stage_run, 5, bf5)
DEFINE_RADIX(radix_generic, PTL_LOOP_CLONES, Cpx, stage_run, st->p, bf_generic)

/* ---- lanes: FFT_LANES lines at once ---- */

/* Lane blocks (CpxL): each operation of a butterfly is one vector operation across the
 * lines. */
LANE_INLINE CpxL
lmul(CpxL a, Cpx w)
{
    return (CpxL){a.re * w.re - a.im * w.im, a.re * w.im + a.im * w.re};
}

LANE_INLINE CpxL
ladd(CpxL a, CpxL b)
{
    return (CpxL){a.re + b.re, a.im + b.im};
}

LANE_INLINE CpxL
lsub(CpxL a, CpxL b)
{
    return (CpxL){a.re - b.re, a.im - b.im};
}

LANE_INLINE CpxL
lscale(CpxL a, double s)
{
    return (CpxL){a.re * s, a.im * s};
}

/* -i z */
LANE_INLINE CpxL
lmul_neg_i(CpxL z)
{
    return (CpxL){z.im, -z.re};
}

/* the butterflies of bf2 .. bf5 and bf_generic, over lanes (the same formulas) */
LANE_INLINE void
lbf2(CpxL *a, const Stage *st)
{
    (void)st;
    FFT_BF2(CpxL, ladd, lsub);
}

LANE_INLINE void
lbf4(CpxL *a, const Stage *st)
{
    (void)st;
    FFT_BF4(CpxL, ladd, lsub, lmul_neg_i);
}

LANE_INLINE void
lbf3(CpxL *a, const Stage *st)
{
    (void)st;
    FFT_BF3(CpxL, double, ladd, lsub, lscale, lmul_neg_i);
}

LANE_INLINE void
lbf5(CpxL *a, const Stage *st)
{
    (void)st;
    FFT_BF5(CpxL, double, ladd, lsub, lscale, lmul_neg_i);
}

LANE_INLINE void
lbf_generic(CpxL *a, const Stage *st)
{
    FFT_BF_GENERIC(CpxL, ladd, lmul);
}

typedef void (*ButterflyL)(CpxL *a, const Stage *st);

/* stage_run over lane blocks (j = 0 multiplies by w = 1, which is exact) */
LANE_INLINE void
stage_run_lanes(const Stage *st, const CpxL *in, CpxL *out, const int p, ButterflyL bf)
{
    const int64_t l = st->l, r = st->r;
    Cpx w[FFT_MAX_RADIX];
    CpxL a[FFT_MAX_RADIX];
    for (int64_t j = 0; j < l; j++) {
        const CpxL *src = in + j * p * r;
        CpxL *dst = out + j * r;
        for (int q = 1; q < p; q++) {
            w[q] = st->tw[j * (p - 1) + q - 1];
        }
        for (int64_t k = 0; k < r; k++) {
            a[0] = src[k];
            for (int q = 1; q < p; q++) {
                a[q] = lmul(src[q * r + k], w[q]);
            }
            bf(a, st);
            for (int v = 0; v < p; v++) {
                dst[v * l * r + k] = a[v];
            }
        }
    }
}

DEFINE_RADIX(radix2_lanes, PTL_LOOP_CLONES_WIDE, CpxL, stage_run_lanes, 2, lbf2)
DEFINE_RADIX(radix3_lanes, PTL_LOOP_CLONES_WIDE, CpxL, stage_run_lanes, 3, lbf3)
DEFINE_RADIX(radix4_lanes, PTL_LOOP_CLONES_WIDE, CpxL, stage_run_lanes, 4, lbf4)
DEFINE_RADIX(radix5_lanes, PTL_LOOP_CLONES_WIDE, CpxL, stage_run_lanes, 5, lbf5)
DEFINE_RADIX(radix_generic_lanes, PTL_LOOP_CLONES_WIDE, CpxL, stage_run_lanes, st->p, lbf_generic)
#undef DEFINE_RADIX

/* The forward DFT of FFT_LANES lines in lane blocks v[0..n), work the same size; a
 * Stockham plan only (no Bluestein, no real plan).  Returns the buffer (v or work) that
 * holds the result. */
static CpxL *
plan_exec_lanes(const FftPlan *p, CpxL *v, CpxL *work)
{
    CpxL *in = v, *out = work;
    for (int s = 0; s < p->nstages; s++) {
        const Stage *st = &p->stages[s];
        switch (st->p) {
        case 2: radix2_lanes(st, in, out); break;
        case 3: radix3_lanes(st, in, out); break;
        case 4: radix4_lanes(st, in, out); break;
        case 5: radix5_lanes(st, in, out); break;
        default: radix_generic_lanes(st, in, out); break;
        }
        CpxL *t = in;
        in = out;
        out = t;
    }
    return in;
}

/* Note [Four-step]
 * ~~~~~~~~~~~~~~~~
 * A line alone vectorizes only in the stages whose r is long.  With n = 8 n2, j = j1 n2 + j2
 * and k = k1 + 8 k2,
 *     X_k = sum_j2 w_n2^(j2 k2) [w_n^(j2 k1) sum_j1 w_8^(j1 k1) x_(j1 n2 + j2)]
 * so the line becomes 8 lines of n2 points (k1 the lane): an 8-point DFT of each column j2
 * (scalar), the twiddles ftw, then the lane stages of the n2 plan, and X_(k1 + 8 k2) is
 * lane k1 of block k2: the output is read in order.  Used for a pass of one line only (a
 * line in a pass of several takes the lane or plain path, which give each other's bits,
 * so results do not depend on how lines fall into threads), Bluestein's inner FFTs
 * included. */

/* the 8-point DFT of a in place: two 4-point ones and w_8^k */
static void
dft8(Cpx *a)
{
    const double h = 0.70710678118654752440;
    Cpx e[4] = {a[0], a[2], a[4], a[6]}, o[4] = {a[1], a[3], a[5], a[7]};
    bf4(e, NULL);
    bf4(o, NULL);
    Cpx t[4] = {o[0], {(o[1].re + o[1].im) * h, (o[1].im - o[1].re) * h}, mul_neg_i(o[2]),
                {(o[3].im - o[3].re) * h, -(o[3].re + o[3].im) * h}};
    for (int k = 0; k < 4; k++) {
        a[k] = cadd(e[k], t[k]);
        a[k + 4] = csub(e[k], t[k]);
    }
}

PTL_LOOP_CLONES_WIDE static void
four_twiddle(CpxL *v, const CpxL *ftw, int64_t n2)
{
    for (int64_t j = 0; j < n2; j++) {
        CpxL a = v[j], w = ftw[j];
        v[j] = (CpxL){a.re * w.re - a.im * w.im, a.re * w.im + a.im * w.re};
    }
}

static void plan_exec(const FftPlan *p, Cpx *x, Cpx *work, int four);

/* Note [Four-step]; work: 2n + 4 points, aligned here */
static void
four_step(const FftPlan *p, Cpx *x, Cpx *work)
{
    const int64_t n2 = p->n / FFT_LANES;
    CpxL *v = (CpxL *)(((uintptr_t)work + 63) & ~(uintptr_t)63);
    for (int64_t j2 = 0; j2 < n2; j2++) {
        Cpx a[FFT_LANES];
        for (int j1 = 0; j1 < FFT_LANES; j1++) {
            a[j1] = x[j1 * n2 + j2];
        }
        dft8(a);
        for (int k1 = 0; k1 < FFT_LANES; k1++) {
            v[j2].re[k1] = a[k1].re;
            v[j2].im[k1] = a[k1].im;
        }
    }
    four_twiddle(v, p->ftw, n2);
    const CpxL *r = plan_exec_lanes(p->four, v, v + n2);
    for (int64_t k2 = 0; k2 < n2; k2++) {
        for (int k1 = 0; k1 < FFT_LANES; k1++) {
            x[k1 + FFT_LANES * k2] = (Cpx){r[k2].re[k1], r[k2].im[k1]};
        }
    }
}

/* The forward DFT of x[0..n) in place; work holds plan_work(p) points; `four`: a Stockham
 * plan may take the four-step path.  See Note [FFT kernel]. */
static void
plan_exec(const FftPlan *p, Cpx *x, Cpx *work, int four)
{
    if (four && p->four != NULL) {
        four_step(p, x, work);
        return;
    }
    if (p->sub != NULL) {   /* Bluestein */
        const int64_t n = p->n, m = p->m;
        Cpx *a = work, *w2 = work + m;
        for (int64_t j = 0; j < n; j++) {
            a[j] = cmul(x[j], p->chirp[j]);
        }
        memset(a + n, 0, sizeof(Cpx) * (size_t)(m - n));
        plan_exec(p->sub, a, w2, four);
        for (int64_t k = 0; k < m; k++) {   /* the inverse through conj(F(conj(.))) */
            Cpx z = cmul(a[k], p->bhat[k]);
            a[k] = (Cpx){z.re, -z.im};
        }
        plan_exec(p->sub, a, w2, four);
        for (int64_t k = 0; k < n; k++) {
            x[k] = cmul((Cpx){a[k].re, -a[k].im}, p->chirp[k]);
        }
        return;
    }
    Cpx *in = x, *out = work;
    for (int s = 0; s < p->nstages; s++) {
        const Stage *st = &p->stages[s];
        switch (st->p) {
        case 2: radix2(st, in, out); break;
        case 3: radix3(st, in, out); break;
        case 4: radix4(st, in, out); break;
        case 5: radix5(st, in, out); break;
        default: radix_generic(st, in, out); break;
        }
        Cpx *t = in;
        in = out;
        out = t;
    }
    if (in != x) {
        memcpy(x, in, sizeof(Cpx) * (size_t)p->n);
    }
}

/* blocks of work exec_lanes needs besides the n blocks of the lines */
static int64_t
lanes_work(const FftPlan *p)
{
    return p->sub != NULL ? 2 * p->m : p->n;
}

/* Bluestein's transform (Note [FFT kernel]) of the lane blocks v[0..n), in place; a and w:
 * m blocks each */
PTL_LOOP_CLONES_WIDE static void
bluestein_lanes(const FftPlan *p, CpxL *v, CpxL *a, CpxL *w)
{
    const int64_t n = p->n, m = p->m;
    for (int64_t j = 0; j < n; j++) {
        a[j] = lmul(v[j], p->chirp[j]);
    }
    memset(a + n, 0, sizeof(CpxL) * (size_t)(m - n));
    CpxL *r = plan_exec_lanes(p->sub, a, w);
    for (int64_t k = 0; k < m; k++) {   /* the inverse through conj(F(conj(.))) */
        CpxL z = lmul(r[k], p->bhat[k]);
        r[k] = (CpxL){z.re, -z.im};
    }
    r = plan_exec_lanes(p->sub, r, r == a ? w : a);
    for (int64_t k = 0; k < n; k++) {
        v[k] = lmul((CpxL){r[k].re, -r[k].im}, p->chirp[k]);
    }
}

/* The forward DFT of FFT_LANES lines in lane blocks v[0..n) by plan p (Stockham or
 * Bluestein); work: lanes_work(p) blocks.  Returns the buffer holding the result. */
static CpxL *
exec_lanes(const FftPlan *p, CpxL *v, CpxL *work)
{
    if (p->sub == NULL) {
        return plan_exec_lanes(p, v, work);
    }
    bluestein_lanes(p, v, work, work + p->m);
    return v;
}

/* points of work plan_exec needs besides the line (a real plan: the half line and its
 * work) */
static int64_t
plan_work(const FftPlan *p)
{
    if (p->real) {
        return p->n / 2 + plan_work(p->half);
    }
    if (p->sub != NULL) {
        return p->m + plan_work(p->sub);
    }
    return p->four != NULL ? 2 * p->n + 4 : p->n;
}

/* points of scratch a transform of p needs: the line and plan_exec's work */
static int64_t
plan_scratch(const FftPlan *p)
{
    return p->n + plan_work(p);
}

/* ---- plans ---- */

static void
plan_free(FftPlan *p)
{
    if (p == NULL) {
        return;
    }
    if (p->sub != NULL) {
        plan_free(p->sub);
    }
    if (p->four != NULL) {
        plan_free(p->four);
    }
    free(p->ftw);
    if (p->four16 != NULL) {
        plan_free(p->four16);
    }
    free(p->ftwf);
    free(p->ftable);
    if (p->half != NULL) {
        plan_free(p->half);
    }
    free(p->rtw);
    free(p->table);
    free(p->chirp);
    free(p->bhat);
    free(p);
}

/* the Bluestein part of plan p of n points (Note [FFT kernel]); 0 or -1 */
static int
plan_bluestein(FftPlan *p, int64_t n)
{
    int64_t m = 1;
    while (m < 2 * n - 1) {
        m *= 2;
    }
    p->m = m;
    p->bytes += sizeof(Cpx) * (size_t)(n + m);
    p->chirp = malloc(sizeof(Cpx) * (size_t)n);
    p->bhat = calloc((size_t)m, sizeof(Cpx));
    Cpx *work = NULL;
    if (p->chirp == NULL || p->bhat == NULL || (p->sub = plan_new(m)) == NULL ||
        (work = malloc(sizeof(Cpx) * (size_t)plan_work(p->sub))) == NULL) {
        return -1;
    }
    /* exp(-i pi j^2 / n) = exp(-2 pi i (j^2 mod 2n) / 2n), with (j + 1)^2 = j^2 + 2j + 1 */
    for (int64_t j = 0, j2 = 0; j < n; j++) {
        p->chirp[j] = unit_root(j2, 2 * n);
        j2 = (j2 + 2 * j + 1) % (2 * n);
    }
    for (int64_t j = 0; j < n; j++) {
        Cpx b = {p->chirp[j].re / (double)m, -p->chirp[j].im / (double)m};
        p->bhat[j] = b;
        if (j > 0) {
            p->bhat[m - j] = b;
        }
    }
    plan_exec(p->sub, p->bhat, work, 1);
    free(work);
    return 0;
}

/* A plan of n >= 1 points, refcount 1; NULL with a MemoryError. */
static FftPlan *
plan_new(int64_t n)
{
    int radices[FFT_MAX_STAGES], ns = 0;
    int64_t rest = n;
    while (rest % 4 == 0) {
        radices[ns++] = 4;
        rest /= 4;
    }
    for (int64_t f = 2; rest > 1 && f <= FFT_MAX_RADIX; f++) {
        while (rest % f == 0) {
            radices[ns++] = (int)f;
            rest /= f;
        }
    }
    FftPlan *p = calloc(1, sizeof(FftPlan));
    if (p == NULL) {
        goto error;
    }
    atomic_init(&p->refcnt, 1);
    p->n = n;
    if (rest > 1) {
        if (plan_bluestein(p, n) < 0) {
            goto error;
        }
        return p;
    }
    int64_t total = 0, l = 1;
    for (int s = 0; s < ns; s++) {
        total += (int64_t)(radices[s] - 1) * l + (radices[s] > 5 ? radices[s] : 0);
        l *= radices[s];
    }
    p->bytes = sizeof(FftPlan) + sizeof(Cpx) * (size_t)(total + 1);
    if ((p->table = malloc(sizeof(Cpx) * (size_t)(total + 1))) == NULL) {
        goto error;
    }
    Cpx *t = p->table;
    l = 1;
    for (int s = 0; s < ns; s++) {
        Stage *st = &p->stages[s];
        const int r = radices[s];
        const int64_t len = l * r;
        st->p = r;
        st->l = l;
        st->r = n / len;
        st->tw = t;
        for (int64_t j = 0; j < l; j++) {
            for (int q = 1; q < r; q++) {
                *t++ = unit_root((q * j) % len, len);
            }
        }
        st->root = NULL;
        if (r > 5) {
            st->root = t;
            for (int m = 0; m < r; m++) {
                *t++ = unit_root(m, r);
            }
        }
        l = len;
    }
    p->nstages = ns;
    if (n % FFT_LANES == 0 && n >= FFT_FOUR_MIN) {
        const int64_t n2 = n / FFT_LANES;
        if ((p->four = plan_new(n2)) == NULL ||
            (p->ftw = aligned_alloc(64, sizeof(CpxL) * (size_t)n2)) == NULL) {
            goto error;
        }
        p->bytes += sizeof(CpxL) * (size_t)n2;
        for (int64_t j = 0; j < n2; j++) {
            for (int k = 0; k < FFT_LANES; k++) {
                Cpx w = unit_root(j * k % n, n);
                p->ftw[j].re[k] = w.re;
                p->ftw[j].im[k] = w.im;
            }
        }
    }
    int smooth = 1;   /* radices 2 .. 5 only: the float32 path (Note [FFT float32]) */
    for (int s = 0; s < ns; s++) {
        smooth &= radices[s] <= 5;
    }
    if (smooth && fft_f32_plan(p) < 0) {
        goto error;
    }
    if (smooth && n % (FFT_LANES_F * FFT_LANES_F) == 0) {
        const int64_t n2 = n / FFT_LANES_F;
        if ((p->four16 = plan_new(n2)) == NULL ||
            (p->ftwf = aligned_alloc(64, sizeof(CpxF) * (size_t)n2)) == NULL) {
            goto error;
        }
        p->bytes += sizeof(CpxF) * (size_t)n2;
        for (int64_t j = 0; j < n2; j++) {
            for (int k = 0; k < FFT_LANES_F; k++) {
                Cpx w = unit_root(j * k % n, n);
                p->ftwf[j].re[k] = (float)w.re;
                p->ftwf[j].im[k] = (float)w.im;
            }
        }
    }
    return p;
error:
    plan_free(p);
    ptl_error_set(PTL_ERR_MEMORY, "fft: out of memory building a plan of %lld points",
                  (long long)n);
    return NULL;
}

/* A real plan of n (even) points, refcount 1; NULL with a MemoryError. */
static FftPlan *
plan_new_real(int64_t n)
{
    const int64_t h = n / 2;
    FftPlan *p = calloc(1, sizeof(FftPlan));
    if (p == NULL || (p->rtw = malloc(sizeof(Cpx) * (size_t)h)) == NULL) {
        plan_free(p);
        ptl_error_set(PTL_ERR_MEMORY, "fft: out of memory building a plan of %lld points",
                      (long long)n);
        return NULL;
    }
    atomic_init(&p->refcnt, 1);
    p->n = n;
    p->real = 1;
    p->bytes = sizeof(FftPlan) + sizeof(Cpx) * (size_t)h;
    if ((p->half = plan_new(h)) == NULL) {
        plan_free(p);
        return NULL;
    }
    for (int64_t k = 0; k < h; k++) {
        p->rtw[k] = unit_root(k, n);
    }
    return p;
}

/* the bytes a plan holds, its sub-plans' included */
static size_t
plan_bytes(const FftPlan *p)
{
    return p == NULL ? 0 : p->bytes + plan_bytes(p->sub) + plan_bytes(p->four) +
                           plan_bytes(p->four16) + plan_bytes(p->half);
}

/* The cache holds at most FFT_CACHE plans and FFT_CACHE_BYTES of tables (least recently
 * used dropped first); a plan bigger than that serves its call and is freed. */
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static FftPlan *cache[FFT_CACHE];   /* most recently used first; owns one ref each */
static size_t cache_bytes;

static void
plan_release(FftPlan *p)
{
    if (p != NULL && atomic_fetch_sub(&p->refcnt, 1) == 1) {
        plan_free(p);
    }
}

/* The plan of n points (a real one when `real` and n is even) from the cache, or a new one
 * put there.  New ref, or NULL. */
static FftPlan *
plan_get(int64_t n, int real)
{
    real = real && n % 2 == 0;
    pthread_mutex_lock(&cache_lock);
    for (int i = 0; i < FFT_CACHE && cache[i] != NULL; i++) {
        if (cache[i]->n == n && cache[i]->real == real) {
            FftPlan *p = cache[i];
            memmove(cache + 1, cache, sizeof(FftPlan *) * (size_t)i);
            cache[0] = p;
            atomic_fetch_add(&p->refcnt, 1);
            pthread_mutex_unlock(&cache_lock);
            return p;
        }
    }
    pthread_mutex_unlock(&cache_lock);
    FftPlan *p = real ? plan_new_real(n) : plan_new(n);
    if (p == NULL) {
        return NULL;
    }
    if (plan_bytes(p) > FFT_CACHE_BYTES) {
        return p;
    }
    FftPlan *dropped[FFT_CACHE];
    int nd = 0;
    pthread_mutex_lock(&cache_lock);
    if (cache[FFT_CACHE - 1] != NULL) {
        dropped[nd++] = cache[FFT_CACHE - 1];
    }
    memmove(cache + 1, cache, sizeof(FftPlan *) * (FFT_CACHE - 1));
    cache[0] = p;
    cache_bytes += plan_bytes(p);
    atomic_fetch_add(&p->refcnt, 1);
    for (int i = FFT_CACHE - 1; i > 0 && cache_bytes > FFT_CACHE_BYTES; i--) {
        if (cache[i] != NULL) {
            dropped[nd++] = cache[i];
            cache[i] = NULL;
        }
    }
    for (int i = 0; i < nd; i++) {
        cache_bytes -= plan_bytes(dropped[i]);
    }
    pthread_mutex_unlock(&cache_lock);
    for (int i = 0; i < nd; i++) {
        plan_release(dropped[i]);
    }
    return p;
}

/* ---- lines ---- */


/* the complex point i of a line of dtype dt at p with byte stride s */
static inline Cpx
load_c(const char *p, int64_t s, int64_t i, int f32)
{
    if (f32) {
        const float *z = (const float *)(p + i * s);
        return (Cpx){z[0], z[1]};
    }
    const double *z = (const double *)(p + i * s);
    return (Cpx){z[0], z[1]};
}

static void
gather(const Pass *ps, const char *p, Cpx *x)
{
    const int64_t n = ps->plan->n, s = ps->sstr[ps->d];
    const int f32 = ps->sdt == PTL_DTYPE_FLOAT32 || ps->sdt == PTL_DTYPE_COMPLEX64;
    if (ps->kind == PASS_R2C) {
        for (int64_t i = 0; i < n; i++) {
            x[i] = (Cpx){f32 ? *(const float *)(p + i * s) : *(const double *)(p + i * s), 0};
        }
    } else if (ps->kind == PASS_C2C) {
        for (int64_t i = 0; i < n; i++) {
            Cpx z = load_c(p, s, i, f32);
            x[i] = ps->inverse ? (Cpx){z.re, -z.im} : z;
        }
    } else {
        /* the Hermitian extension of the half spectrum x_0 .. x_(n/2), conjugated for the
         * backward direction: X_0 and X_(n/2) (n even) are real, X_(n-k) = conj(X_k) */
        const int64_t half = n / 2 + 1;
        for (int64_t k = 0; k < half; k++) {
            Cpx z = load_c(p, s, k, f32);
            x[k] = (Cpx){z.re, -z.im};
            if (k > 0 && n - k >= half) {
                x[n - k] = z;
            }
        }
        x[0].im = 0;
        if (n % 2 == 0) {
            x[n / 2].im = 0;
        }
    }
}

static void
scatter(const Pass *ps, const Cpx *x, char *p)
{
    const int64_t s = ps->dstr[ps->d], len = ps->out_len;
    const int f32 = ps->ddt == PTL_DTYPE_FLOAT32 || ps->ddt == PTL_DTYPE_COMPLEX64;
    const double sc = ps->scale, sim = ps->inverse ? -sc : sc;
    if (ps->kind == PASS_C2R) {
        for (int64_t i = 0; i < len; i++) {
            if (f32) {
                *(float *)(p + i * s) = (float)(x[i].re * sc);
            } else {
                *(double *)(p + i * s) = x[i].re * sc;
            }
        }
        return;
    }
    for (int64_t i = 0; i < len; i++) {
        if (f32) {
            float *z = (float *)(p + i * s);
            z[0] = (float)(x[i].re * sc);
            z[1] = (float)(x[i].im * sim);
        } else {
            double *z = (double *)(p + i * s);
            z[0] = x[i].re * sc;
            z[1] = x[i].im * sim;
        }
    }
}

/* Note [Real FFT]
 * ~~~~~~~~~~~~~~~
 * A real line of even length n = 2h is transformed as h complex points z_j = x_2j +
 * i x_(2j+1): with Z = F_h(z) (indices mod h), the DFTs of the even and odd samples are
 *     E_k = (Z_k + conj(Z_(h-k))) / 2,   O_k = (Z_k - conj(Z_(h-k))) / 2i
 * and X_k = E_k + w_n^k O_k for k = 0 .. h (w_n^h = -1): half the work of an n-point
 * complex transform.  The inverse runs it backward: from the half spectrum (the imaginary
 * parts of X_0 and X_h dropped, as the Hermitian extension has them 0)
 *     Z_k = (X_k + conj(X_(h-k))) + i conj(w_n^k) (X_k - conj(X_(h-k)))
 * whose backward h-point transform holds the n outputs as (y_2j, y_(2j+1)) pairs.  Odd
 * lengths use the complex plan of n points. */

/* the R2C transform of the line at p into x[0 .. out_len) (z: the half plan's scratch) */
static void
r2c_line(const Pass *ps, const char *p, Cpx *x, Cpx *z)
{
    const FftPlan *pl = ps->plan;
    const int64_t n = pl->n, h = n / 2, s = ps->sstr[ps->d];
    if (ps->sdt == PTL_DTYPE_FLOAT32) {
        for (int64_t j = 0; j < h; j++) {
            z[j] = (Cpx){*(const float *)(p + 2 * j * s), *(const float *)(p + (2 * j + 1) * s)};
        }
    } else {
        for (int64_t j = 0; j < h; j++) {
            z[j] = (Cpx){*(const double *)(p + 2 * j * s),
                         *(const double *)(p + (2 * j + 1) * s)};
        }
    }
    plan_exec(pl->half, z, z + h, ps->lines == 1);
    for (int64_t k = 0; k <= h; k++) {
        Cpx a = z[k == h ? 0 : k], b = z[k == 0 ? 0 : h - k];
        Cpx e = {(a.re + b.re) * 0.5, (a.im - b.im) * 0.5};
        Cpx o = {(a.im + b.im) * 0.5, (b.re - a.re) * 0.5};   /* (a - conj(b)) / 2i */
        x[k] = k < h ? cadd(e, cmul(o, pl->rtw[k])) : csub(e, o);
    }
    for (int64_t k = h + 1; k < ps->out_len; k++) {
        x[k] = (Cpx){x[n - k].re, -x[n - k].im};
    }
}

/* the C2R transform of the half spectrum at p into x[0 .. n).re (z: the half plan's
 * scratch) */
static void
c2r_line(const Pass *ps, const char *p, Cpx *x, Cpx *z)
{
    const FftPlan *pl = ps->plan;
    const int64_t n = pl->n, h = n / 2, s = ps->sstr[ps->d];
    const int f32 = ps->sdt == PTL_DTYPE_COMPLEX64;
    for (int64_t k = 0; k <= h; k++) {
        x[k] = load_c(p, s, k, f32);
    }
    x[0].im = 0;
    x[h].im = 0;
    for (int64_t k = 0; k < h; k++) {
        Cpx a = x[k], b = {x[h - k].re, -x[h - k].im};
        Cpx d = cmul(csub(a, b), (Cpx){pl->rtw[k].re, -pl->rtw[k].im});
        Cpx sum = cadd(a, b);
        z[k] = (Cpx){sum.re - d.im, -(sum.im + d.re)};   /* conj(sum + i d) */
    }
    plan_exec(pl->half, z, z + h, ps->lines == 1);
    for (int64_t j = 0; j < h; j++) {   /* conj(F(conj(Z))): the real parts keep, the imag flip */
        x[2 * j].re = z[j].re;
        x[2 * j + 1].re = -z[j].im;
    }
}


/* the lines' starts in src and dst, FFT_LANES lines from `line` on */
static void
lane_lines(const Pass *ps, int64_t line, const char **src, char **dst)
{
    for (int ln = 0; ln < FFT_LANES; ln++) {
        int64_t so, dof;
        line_offsets(ps, line + ln, &so, &dof);
        src[ln] = ps->src + so;
        dst[ln] = ps->dst + dof;
    }
}

/* point i of every lane line of dst (byte stride ds) = (re sc, im sim) of x */
static inline void
store_lanes(char **dst, int64_t ds, int64_t i, CpxL x, double sc, double sim, int f32)
{
    for (int ln = 0; ln < FFT_LANES; ln++) {
        if (f32) {
            float *z = (float *)(dst[ln] + i * ds);
            z[0] = (float)(x.re[ln] * sc);
            z[1] = (float)(x.im[ln] * sim);
        } else {
            double *z = (double *)(dst[ln] + i * ds);
            z[0] = x.re[ln] * sc;
            z[1] = x.im[ln] * sim;
        }
    }
}

/* r2c_line over FFT_LANES lines (Note [Real FFT]; v: 2 n blocks) */
PTL_LOOP_CLONES_WIDE static void
r2c_lanes(const Pass *ps, int64_t line, CpxL *v)
{
    const FftPlan *pl = ps->plan;
    const int64_t n = pl->n, h = n / 2, ss = ps->sstr[ps->d], ds = ps->dstr[ps->d];
    const int sf32 = ps->sdt == PTL_DTYPE_FLOAT32, df32 = ps->ddt == PTL_DTYPE_COMPLEX64;
    const double sc = ps->scale;
    const char *src[FFT_LANES];
    char *dst[FFT_LANES];
    lane_lines(ps, line, src, dst);
    /* contiguous float32: the pairs (x_2j, x_2j+1) are 8-byte words, as complex64 points */
    for (int64_t j = sf32 && ss == 4 ? fft_rows_gather(src, 8, h, 1.0, v) : 0; j < h; j++) {
        for (int ln = 0; ln < FFT_LANES; ln++) {
            const char *p = src[ln] + 2 * j * ss;
            v[j].re[ln] = sf32 ? *(const float *)p : *(const double *)p;
            v[j].im[ln] = sf32 ? *(const float *)(p + ss) : *(const double *)(p + ss);
        }
    }
    const CpxL *r = exec_lanes(pl->half, v, v + h);
    for (int64_t k = 0; k <= h; k++) {
        CpxL a = r[k == h ? 0 : k], b = r[k == 0 ? 0 : h - k];
        CpxL e = {(a.re + b.re) * 0.5, (a.im - b.im) * 0.5};
        CpxL o = {(a.im + b.im) * 0.5, (b.re - a.re) * 0.5};
        CpxL x = k < h ? ladd(e, lmul(o, pl->rtw[k])) : lsub(e, o);
        store_lanes(dst, ds, k, x, sc, sc, df32);
        if (k > 0 && n - k > h && n - k < ps->out_len) {
            store_lanes(dst, ds, n - k, x, sc, -sc, df32);
        }
    }
}

/* c2r_line over FFT_LANES lines (Note [Real FFT]; v: 2 n blocks: the h + 1 bins, then the h
 * points and the half plan's work) */
PTL_LOOP_CLONES_WIDE static void
c2r_lanes(const Pass *ps, int64_t line, CpxL *v)
{
    const FftPlan *pl = ps->plan;
    const int64_t n = pl->n, h = n / 2, ss = ps->sstr[ps->d], ds = ps->dstr[ps->d];
    const int sf32 = ps->sdt == PTL_DTYPE_COMPLEX64, df32 = ps->ddt == PTL_DTYPE_FLOAT32;
    const double sc = ps->scale;
    const char *src[FFT_LANES];
    char *dst[FFT_LANES];
    CpxL *z = v + h + 1;
    lane_lines(ps, line, src, dst);
    for (int64_t k = sf32 ? fft_rows_gather(src, ss, h + 1, 1.0, v) : 0; k <= h; k++) {
        for (int ln = 0; ln < FFT_LANES; ln++) {
            Cpx c = load_c(src[ln], ss, k, sf32);
            v[k].re[ln] = c.re;
            v[k].im[ln] = c.im;
        }
    }
    v[0].im = v[h].im = (Lanes){0};
    for (int64_t k = 0; k < h; k++) {
        CpxL a = v[k], b = {v[h - k].re, -v[h - k].im};
        CpxL d = lmul(lsub(a, b), (Cpx){pl->rtw[k].re, -pl->rtw[k].im});
        CpxL sum = ladd(a, b);
        z[k] = (CpxL){sum.re - d.im, -(sum.im + d.re)};   /* conj(sum + i d) */
    }
    const CpxL *r = exec_lanes(pl->half, z, z + h);
    for (int64_t j = df32 && ds == 4 ? fft_rows_scatter(r, h, sc, -sc, dst, 8) : 0; j < h; j++) {
        for (int ln = 0; ln < FFT_LANES; ln++) {
            char *p = dst[ln] + 2 * j * ds;
            if (df32) {
                *(float *)p = (float)(r[j].re[ln] * sc);
                *(float *)(p + ds) = (float)(-r[j].im[ln] * sc);
            } else {
                *(double *)p = r[j].re[ln] * sc;
                *(double *)(p + ds) = -r[j].im[ln] * sc;
            }
        }
    }
}

/* v[i], lane ln = point i of line src[ln] (byte stride ss), imaginary parts times sgn;
 * inlined with f32 constant */
LANE_INLINE void
gather_lanes(const char **src, int64_t ss, int64_t n, double sgn, const int f32, CpxL *v)
{
    for (int64_t i = f32 ? fft_rows_gather(src, ss, n, sgn, v) : 0; i < n; i++) {
        for (int ln = 0; ln < FFT_LANES; ln++) {
            const char *p = src[ln] + i * ss;
            v[i].re[ln] = f32 ? ((const float *)p)[0] : ((const double *)p)[0];
            v[i].im[ln] = sgn * (f32 ? ((const float *)p)[1] : ((const double *)p)[1]);
        }
    }
}

/* point i of line dst[ln] (byte stride ds) = (re sc, im sim) of r[i], lane ln */
LANE_INLINE void
scatter_lanes(const CpxL *r, int64_t n, double sc, double sim, const int f32, char **dst,
              int64_t ds)
{
    for (int64_t i = f32 ? fft_rows_scatter(r, n, sc, sim, dst, ds) : 0; i < n; i++) {
        CpxL x = {r[i].re * sc, r[i].im * sim};
        for (int ln = 0; ln < FFT_LANES; ln++) {
            char *p = dst[ln] + i * ds;
            if (f32) {
                ((float *)p)[0] = (float)x.re[ln];
                ((float *)p)[1] = (float)x.im[ln];
            } else {
                ((double *)p)[0] = x.re[ln];
                ((double *)p)[1] = x.im[ln];
            }
        }
    }
}

/* C2C of the FFT_LANES lines from `line` on through lane blocks (v: 2 n blocks) */
PTL_LOOP_CLONES_WIDE static void
c2c_lanes(const Pass *ps, int64_t line, CpxL *v)
{
    const int64_t n = ps->plan->n, ss = ps->sstr[ps->d], ds = ps->dstr[ps->d];
    const int sf32 = ps->sdt == PTL_DTYPE_COMPLEX64, df32 = ps->ddt == PTL_DTYPE_COMPLEX64;
    const double sgn = ps->inverse ? -1.0 : 1.0, sc = ps->scale, sim = sgn * sc;
    const char *src[FFT_LANES];
    char *dst[FFT_LANES];
    lane_lines(ps, line, src, dst);
    if (sf32) {
        gather_lanes(src, ss, n, sgn, 1, v);
    } else {
        gather_lanes(src, ss, n, sgn, 0, v);
    }
    const CpxL *r = exec_lanes(ps->plan, v, v + n);
    if (df32) {
        scatter_lanes(r, n, sc, sim, 1, dst, ds);
    } else {
        scatter_lanes(r, n, sc, sim, 0, dst, ds);
    }
}

static int
pass_lines(void *ctx, int64_t begin, int64_t end)
{
    const Pass *ps = ctx;
    const FftPlan *pl = ps->plan;
    if (fft_f32_takes(ps)) {
        return fft_f32_lines(ps, begin, end);
    }
    const int lanes = (pl->real || (ps->kind == PASS_C2C && pl->n > 1)) &&
                      end - begin >= FFT_LANES;
    const int64_t blocks = pl->real ? pl->n + 1 + lanes_work(pl->half) : pl->n + lanes_work(pl);
    size_t len = lanes ? sizeof(CpxL) * (size_t)blocks : 0;
    if (len < sizeof(Cpx) * (size_t)plan_scratch(pl)) {
        len = sizeof(Cpx) * (size_t)plan_scratch(pl);
    }
    Cpx *x = aligned_alloc(64, (len + 63) / 64 * 64);   /* CpxL's alignment */
    if (x == NULL) {
        return ptl_error_set(PTL_ERR_MEMORY, "fft: out of memory");
    }
    int64_t line = begin;
    for (; lanes && end - line >= FFT_LANES; line += FFT_LANES) {
        if (!pl->real) {
            c2c_lanes(ps, line, (CpxL *)x);
        } else if (ps->kind == PASS_R2C) {
            r2c_lanes(ps, line, (CpxL *)x);
        } else {
            c2r_lanes(ps, line, (CpxL *)x);
        }
    }
    for (; line < end; line++) {
        int64_t so, dof;
        line_offsets(ps, line, &so, &dof);
        if (ps->plan->real && ps->kind == PASS_R2C) {
            r2c_line(ps, ps->src + so, x, x + ps->plan->n);
        } else if (ps->plan->real) {
            c2r_line(ps, ps->src + so, x, x + ps->plan->n);
        } else {
            gather(ps, ps->src + so, x);
            plan_exec(ps->plan, x, x + ps->plan->n, ps->lines == 1);
        }
        scatter(ps, x, ps->dst + dof);
    }
    free(x);
    return 0;
}

/* Runs one pass of n-point transforms over src into dst; 0 or -1. */
static int
run_pass(int kind, int inverse, double scale, int d, int64_t n, PtlTensorImpl *src,
         PtlTensorImpl *dst)
{
    Pass ps = {.kind = kind, .inverse = inverse, .scale = scale, .dim = dst->dim, .d = d,
               .src = ptl_tensor_data(src), .sdt = src->dtype, .dst = ptl_tensor_data(dst),
               .ddt = dst->dtype, .out_len = dst->sizes[d]};
    const int64_t sis = (int64_t)ptl_tensor_itemsize(src), dis = (int64_t)ptl_tensor_itemsize(dst);
    int64_t lines = 1;
    for (int i = 0; i < dst->dim; i++) {
        ps.sizes[i] = i == d ? 1 : dst->sizes[i];
        ps.sstr[i] = src->strides[i] * sis;
        ps.dstr[i] = dst->strides[i] * dis;
        lines *= ps.sizes[i];
    }
    if (lines == 0) {
        return 0;
    }
    ps.lines = lines;
    FftPlan *plan = plan_get(n, kind != PASS_C2C);
    if (plan == NULL) {
        return -1;
    }
    ps.plan = plan;
    int64_t grain = FFT_GRAIN_POINTS / n > 1 ? FFT_GRAIN_POINTS / n : 1;
    void *tok = lines * n >= FFT_GRAIN_POINTS ? ptl_nogil_begin() : NULL;
    int rc = ptl_parallel_for(0, lines, grain, pass_lines, &ps);
    ptl_nogil_end(tok);
    plan_release(plan);
    return rc;
}

/* ---- the operators ---- */

/* Wraps and checks the dims of s[1] against self (distinct, in range) into out; the count,
 * or -1 with the error set. */
static int
fft_dims(const PtlIValue *s, const char *name, int64_t *out)
{
    const PtlTensorImpl *self = s[0].u.t;
    const int64_t nd = s[1].u.il.n;
    if (nd > self->dim) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s: got %lld dims for a %d-d tensor", name,
                             (long long)nd, self->dim);
    }
    for (int64_t i = 0; i < nd; i++) {
        out[i] = s[1].u.il.data[i];
        if (ptl_wrap_dim(&out[i], self->dim) < 0) {
            return -1;
        }
        for (int64_t j = 0; j < i; j++) {
            if (out[j] == out[i]) {
                return ptl_error_set(PTL_ERR_RUNTIME, "%s: dims must be unique", name);
            }
        }
    }
    if (s[2].u.i < 0 || s[2].u.i > 2) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s: invalid normalization %lld", name,
                             (long long)s[2].u.i);
    }
    return (int)nd;
}

/* 1, 1/sqrt(n) or 1/n for normalization 0, 1, 2 and the signal's n points */
static double
norm_scale(int64_t normalization, double n)
{
    return normalization == 0 ? 1.0 : normalization == 1 ? 1.0 / sqrt(n) : 1.0 / n;
}

/* CPU, or meta (Note [Meta tensors]: the kernels return the output's geometry only) */
static int
check_device(const PtlTensorImpl *t, const char *name)
{
    if (t->device.type != PTL_DEVICE_CPU && !ptl_tensor_is_meta(t)) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "%s: only CPU tensors are supported",
                             name);
    }
    return 0;
}

/* c2c over dims[0..nd) from src into out (both of out's sizes), the scale on the last
 * pass; the first pass reads src, the others work in place on out.  0 or -1. */
static int
c2c_passes(PtlTensorImpl *src, PtlTensorImpl *out, const int64_t *dims, int nd, int inverse,
           double scale, int scale_last)
{
    for (int i = nd - 1; i >= 0; i--) {
        int d = (int)dims[i];
        if (run_pass(PASS_C2C, inverse, i == 0 && scale_last ? scale : 1.0, d, out->sizes[d],
                     i == nd - 1 ? src : out, out) < 0) {
            return -1;
        }
    }
    return 0;
}

static int
zero_fill(PtlTensorImpl *t)
{
    memset(ptl_tensor_data(t), 0, (size_t)t->numel * ptl_tensor_itemsize(t));
    return 0;
}

/* _fft_c2c(Tensor self, int[] dim, int normalization, bool forward) -> Tensor */
static int
fft_c2c_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op, (void)ks;
    PtlTensorImpl *self = s[0].u.t, *out = NULL;
    int64_t dims[PTL_MAX_DIMS];
    int nd = fft_dims(s, "_fft_c2c", dims);
    if (nd < 0 || check_device(self, "_fft_c2c") < 0) {
        return -1;
    }
    PTL_CHECK(ptl_dtype_is_complex(self->dtype), PTL_ERR_RUNTIME,
              "_fft_c2c: expected a complex input tensor, but got %s",
              ptl_dtype_name(self->dtype));
    if (nd == 0) {
        PtlIValue v[1] = {ptl_iv_tensor(self)};
        return ptl_kernel_return(s, ptl_call_k(PTL_OP_clone, 1, v));
    }
    if ((out = ptl_empty(self->dim, self->sizes, self->dtype, self->device)) == NULL) {
        goto error;
    }
    double n = 1;
    for (int i = 0; i < nd; i++) {
        n *= (double)self->sizes[dims[i]];
    }
    if (out->numel > 0 && !ptl_tensor_is_meta(out) &&
        c2c_passes(self, out, dims, nd, !s[3].u.b, norm_scale(s[2].u.i, n), 1) < 0) {
        goto error;
    }
    return ptl_kernel_return(s, out);
error:
    ptl_xdecref(out);
    return -1;
}

/* _fft_r2c(Tensor self, int[] dim, int normalization, bool onesided) -> Tensor: the last dim
 * first (real to complex), then c2c over the others in place */
static int
fft_r2c_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op, (void)ks;
    PtlTensorImpl *self = s[0].u.t, *out = NULL;
    int64_t dims[PTL_MAX_DIMS], sizes[PTL_MAX_DIMS];
    int nd = fft_dims(s, "_fft_r2c", dims);
    if (nd < 0 || check_device(self, "_fft_r2c") < 0) {
        return -1;
    }
    PTL_CHECK(self->dtype == PTL_DTYPE_FLOAT32 || self->dtype == PTL_DTYPE_FLOAT64,
              PTL_ERR_RUNTIME, "_fft_r2c: expected a real input tensor, but got %s",
              ptl_dtype_name(self->dtype));
    PTL_CHECK(nd > 0, PTL_ERR_RUNTIME, "_fft_r2c: expected at least one dim");
    int last = (int)dims[nd - 1];
    const int64_t n = self->sizes[last];
    memcpy(sizes, self->sizes, sizeof(int64_t) * (size_t)self->dim);
    sizes[last] = s[3].u.b ? n / 2 + 1 : n;
    if ((out = ptl_empty(self->dim, sizes, ptl_dtype_to_complex(self->dtype),
                         self->device)) == NULL) {
        goto error;
    }
    double total = 1;
    for (int i = 0; i < nd; i++) {
        total *= (double)self->sizes[dims[i]];
    }
    const double scale = norm_scale(s[2].u.i, total);
    if (ptl_tensor_is_meta(out)) {
        return ptl_kernel_return(s, out);
    }
    if (self->numel == 0) {
        zero_fill(out);
    } else if (out->numel > 0 &&
               (run_pass(PASS_R2C, 0, nd == 1 ? scale : 1.0, last, n, self, out) < 0 ||
                c2c_passes(out, out, dims, nd - 1, 0, scale, 1) < 0)) {
        goto error;
    }
    return ptl_kernel_return(s, out);
error:
    ptl_xdecref(out);
    return -1;
}

/* _fft_c2r(Tensor self, int[] dim, int normalization, SymInt last_dim_size) -> Tensor: the
 * backward c2c over all dims but the last (into a copy of the first n/2 + 1 bins of the
 * last), then the last dim complex to real */
static int
fft_c2r_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op, (void)ks;
    PtlTensorImpl *self = s[0].u.t, *out = NULL, *mid = NULL;
    int64_t dims[PTL_MAX_DIMS], sizes[PTL_MAX_DIMS];
    int nd = fft_dims(s, "_fft_c2r", dims);
    if (nd < 0 || check_device(self, "_fft_c2r") < 0) {
        return -1;
    }
    PTL_CHECK(ptl_dtype_is_complex(self->dtype), PTL_ERR_RUNTIME,
              "_fft_c2r: expected a complex input tensor, but got %s",
              ptl_dtype_name(self->dtype));
    PTL_CHECK(nd > 0, PTL_ERR_RUNTIME, "_fft_c2r: expected at least one dim");
    const int last = (int)dims[nd - 1];
    const int64_t n = s[3].u.i, half = n / 2 + 1;
    PTL_CHECK(n >= 1, PTL_ERR_RUNTIME, "_fft_c2r: expected last_dim_size >= 1, got %lld",
              (long long)n);
    PTL_CHECK(self->sizes[last] >= half || self->numel == 0, PTL_ERR_RUNTIME,
              "_fft_c2r: %lld points need %lld input bins along dim %d, got %lld",
              (long long)n, (long long)half, last, (long long)self->sizes[last]);
    memcpy(sizes, self->sizes, sizeof(int64_t) * (size_t)self->dim);
    sizes[last] = n;
    if ((out = ptl_empty(self->dim, sizes, ptl_dtype_to_real(self->dtype),
                         self->device)) == NULL) {
        goto error;
    }
    double total = 1;
    for (int i = 0; i < nd; i++) {
        total *= (double)out->sizes[dims[i]];
    }
    if (ptl_tensor_is_meta(out) || out->numel == 0) {
        return ptl_kernel_return(s, out);
    }
    if (self->numel == 0) {
        zero_fill(out);
        return ptl_kernel_return(s, out);
    }
    PtlTensorImpl *src = self;
    if (nd > 1) {
        sizes[last] = half;
        if ((mid = ptl_empty(self->dim, sizes, self->dtype, self->device)) == NULL ||
            c2c_passes(self, mid, dims, nd - 1, 1, 1.0, 0) < 0) {
            goto error;
        }
        src = mid;
    }
    if (run_pass(PASS_C2R, 1, norm_scale(s[2].u.i, total), last, n, src, out) < 0) {
        goto error;
    }
    ptl_xdecref(mid);
    return ptl_kernel_return(s, out);
error:
    ptl_xdecref(mid);
    ptl_xdecref(out);
    return -1;
}

static const PtlKernelReg fft_kernels[] = {
    {PTL_OP__fft_c2c, PTL_KEY_CPU, fft_c2c_cpu},
    {PTL_OP__fft_r2c, PTL_KEY_CPU, fft_r2c_cpu},
    {PTL_OP__fft_c2r, PTL_KEY_CPU, fft_c2r_cpu},
    {PTL_OP__fft_c2c, PTL_KEY_META, fft_c2c_cpu},
    {PTL_OP__fft_r2c, PTL_KEY_META, fft_r2c_cpu},
    {PTL_OP__fft_c2r, PTL_KEY_META, fft_c2r_cpu},
};
PTL_DEFINE_REGISTER(fft_kernels)
