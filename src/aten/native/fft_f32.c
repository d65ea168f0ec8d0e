/* fft_f32.c -- the float32 / complex64 transforms of native/fft.c in float32 arithmetic, 16
 * lines a block.  Mirrors what pocketfft does for float in ATen/native/mkl/SpectralOps.cpp
 * (float32 computed in float32); the transform is ours, the plans are fft.c's.
 *
 * Note [FFT float32]
 * ~~~~~~~~~~~~~~~~~~
 * A pass whose input and output are both single precision and whose plan has radices 2 .. 5
 * only (no generic prime, no Bluestein; for a real transform, its half plan) runs here:
 * the stages of Note [FFT kernel] over blocks of FFT_LANES_F = 16 lines, point b of the
 * lines as one vector of 16 real parts and one of 16 imaginary parts (one AVX-512 register
 * each; the AVX2 and baseline clones split them; no FMA, so every clone gives the same
 * bits).  The plan keeps float stages of its own (fft_f32_plan: radix 8 first, so fewer
 * passes over the block than fft.c's radix 4) whose twiddles are computed in double and
 * rounded once.  Every line of a pass of several runs in such a block: the last block of a
 * task is filled up with copies of its last line (their results are the same bits, written
 * to the same place again), so a line's bits do not depend on how lines fall into threads
 * or blocks, nor on how they move in and out (rows of 8 points, rows of 16 lines, points).
 * A pass of one complex line of n = 256 m points runs the four-step of Note [Four-step]
 * over 16: 16-point DFTs of the columns, vectorized across 16 neighbouring columns and
 * transposed (16x16) into lane blocks, the twiddles ftwf, then the float stages of the plan
 * of n / 16 (four16).  Other lines alone, and every pass of other lengths or of mixed
 * precision, keep fft.c's double path and its bits.
 *
 * The error is float32 arithmetic's: against NumPy's float64 on the same float32 inputs,
 * at most 1.5e-7 of the result's norm (Frobenius) up to 65536 points where PyTorch 2.13
 * (pocketfft in float32) gives 1.6e-7 to 1.9e-7 on the same inputs; per input ours is
 * 1.0 to 1.4 times PyTorch's (1.8 at a few tiny lengths, n = 6).
 * tests/aten/test_fft_f32.py bounds it at 2x PyTorch's worst per size class. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../c10/error.h"
#include "../loops.h"
#include "fft_impl.h"

/* ---- lane operations and butterflies (the formulas of fft.c's, in float) ---- */

LANE_INLINE CpxF
fmul(CpxF a, float wr, float wi)
{
    return (CpxF){a.re * wr - a.im * wi, a.re * wi + a.im * wr};
}

LANE_INLINE CpxF
fadd(CpxF a, CpxF b)
{
    return (CpxF){a.re + b.re, a.im + b.im};
}

LANE_INLINE CpxF
fsub(CpxF a, CpxF b)
{
    return (CpxF){a.re - b.re, a.im - b.im};
}

LANE_INLINE CpxF
fscale(CpxF a, float s)
{
    return (CpxF){a.re * s, a.im * s};
}

/* -i z */
LANE_INLINE CpxF
fmul_neg_i(CpxF z)
{
    return (CpxF){z.im, -z.re};
}

LANE_INLINE void
fbf2(CpxF *a)
{
    CpxF t = a[1];
    a[1] = fsub(a[0], t);
    a[0] = fadd(a[0], t);
}

LANE_INLINE void
fbf4(CpxF *a)
{
    CpxF t0 = fadd(a[0], a[2]), t1 = fsub(a[0], a[2]);
    CpxF t2 = fadd(a[1], a[3]), t3 = fmul_neg_i(fsub(a[1], a[3]));
    a[0] = fadd(t0, t2);
    a[1] = fadd(t1, t3);
    a[2] = fsub(t0, t2);
    a[3] = fsub(t1, t3);
}

LANE_INLINE void
fbf3(CpxF *a)
{
    const float s3 = 0.86602540378443864676f;
    CpxF t = fadd(a[1], a[2]);
    CpxF m = fsub(a[0], fscale(t, 0.5f));
    CpxF s = fmul_neg_i(fscale(fsub(a[1], a[2]), s3));
    a[0] = fadd(a[0], t);
    a[1] = fadd(m, s);
    a[2] = fsub(m, s);
}

LANE_INLINE void
fbf5(CpxF *a)
{
    const float c1 = 0.30901699437494742410f, c2 = -0.80901699437494742410f;
    const float s1 = 0.95105651629515357212f, s2 = 0.58778525229247312917f;
    CpxF t1 = fadd(a[1], a[4]), t2 = fadd(a[2], a[3]);
    CpxF d1 = fsub(a[1], a[4]), d2 = fsub(a[2], a[3]);
    CpxF m1 = fadd(a[0], fadd(fscale(t1, c1), fscale(t2, c2)));
    CpxF m2 = fadd(a[0], fadd(fscale(t1, c2), fscale(t2, c1)));
    CpxF n1 = fmul_neg_i(fadd(fscale(d1, s1), fscale(d2, s2)));
    CpxF n2 = fmul_neg_i(fsub(fscale(d1, s2), fscale(d2, s1)));
    a[0] = fadd(a[0], fadd(t1, t2));
    a[1] = fadd(m1, n1);
    a[4] = fsub(m1, n1);
    a[2] = fadd(m2, n2);
    a[3] = fsub(m2, n2);
}

/* the 8-point DFT: two 4-point ones and w_8^k (as fft.c's dft8) */
LANE_INLINE void
fbf8(CpxF *a)
{
    const float h = 0.70710678118654752440f;
    CpxF e[4] = {a[0], a[2], a[4], a[6]}, o[4] = {a[1], a[3], a[5], a[7]};
    fbf4(e);
    fbf4(o);
    CpxF t[4] = {o[0], {(o[1].re + o[1].im) * h, (o[1].im - o[1].re) * h}, fmul_neg_i(o[2]),
                 {(o[3].im - o[3].re) * h, -(o[3].re + o[3].im) * h}};
    for (int k = 0; k < 4; k++) {
        a[k] = fadd(e[k], t[k]);
        a[k + 4] = fsub(e[k], t[k]);
    }
}

typedef void (*ButterflyF)(CpxF *a);

/* fft.c's stage_run_lanes over a float stage: for each j the twiddles w^(qj); for each k
 * the twiddled inputs (j = 0: w = 1, no product), the butterfly, the outputs */
LANE_INLINE void
stage_run_f(const StageF *st, const CpxF *in, CpxF *out, const int p, ButterflyF bf)
{
    const int64_t l = st->l, r = st->r;
    float wr[8], wi[8];
    CpxF a[8];
    for (int64_t j = 0; j < l; j++) {
        const CpxF *src = in + j * p * r;
        CpxF *dst = out + j * r;
        for (int q = 1; q < p; q++) {
            wr[q] = st->tw[2 * (j * (p - 1) + q - 1)];
            wi[q] = st->tw[2 * (j * (p - 1) + q - 1) + 1];
        }
        if (j == 0) {
            for (int64_t k = 0; k < r; k++) {
                for (int q = 0; q < p; q++) {
                    a[q] = src[q * r + k];
                }
                bf(a);
                for (int v = 0; v < p; v++) {
                    dst[v * l * r + k] = a[v];
                }
            }
            continue;
        }
        for (int64_t k = 0; k < r; k++) {
            a[0] = src[k];
            for (int q = 1; q < p; q++) {
                a[q] = fmul(src[q * r + k], wr[q], wi[q]);
            }
            bf(a);
            for (int v = 0; v < p; v++) {
                dst[v * l * r + k] = a[v];
            }
        }
    }
}

#define DEFINE_RADIX_F(NAME, P, BF)                              \
    PTL_LOOP_CLONES_WIDE static void                             \
    NAME(const StageF *st, const CpxF *in, CpxF *out)            \
    {                                                            \
        stage_run_f(st, in, out, P, BF);                         \
    }

DEFINE_RADIX_F(radix2_f, 2, fbf2)
DEFINE_RADIX_F(radix3_f, 3, fbf3)
DEFINE_RADIX_F(radix4_f, 4, fbf4)
DEFINE_RADIX_F(radix5_f, 5, fbf5)
DEFINE_RADIX_F(radix8_f, 8, fbf8)
#undef DEFINE_RADIX_F

/* The forward DFT of 16 lines in lane blocks v[0..n) by p's float stages, work the same
 * size.  Returns the buffer (v or work) that holds the result. */
static CpxF *
exec_f(const FftPlan *p, CpxF *v, CpxF *work)
{
    CpxF *in = v, *out = work;
    for (int s = 0; s < p->fnstages; s++) {
        const StageF *st = &p->fstages[s];
        switch (st->p) {
        case 2: radix2_f(st, in, out); break;
        case 3: radix3_f(st, in, out); break;
        case 4: radix4_f(st, in, out); break;
        case 5: radix5_f(st, in, out); break;
        default: radix8_f(st, in, out); break;
        }
        CpxF *t = in;
        in = out;
        out = t;
    }
    return in;
}

/* The float stages of p (n = 2^e 3^a 5^b): radix 8 while three factors 2 are left, then 4 4,
 * 4 or 2 for the rest (8 ... 8 4 4 rather than 8 ... 8 8 2), then 3 and 5: fewer passes
 * over the block than fft.c's radix 4 (1024: 4 rather than 5, 4096: 4 rather than 6). */
int
fft_f32_plan(FftPlan *p)
{
    const int64_t n = p->n;
    int radices[FFT_MAX_STAGES], ns = 0, e = 0;
    int64_t rest = n;
    while (rest % 2 == 0) {
        rest /= 2;
        e++;
    }
    int e8 = e / 3, tail = e % 3;
    if (tail == 1 && e8 > 0) {
        e8--;
        tail = 4;
    }
    for (int i = 0; i < e8; i++) {
        radices[ns++] = 8;
    }
    if (tail == 4) {
        radices[ns++] = 4;
        radices[ns++] = 4;
    } else if (tail > 0) {
        radices[ns++] = tail == 1 ? 2 : 4;
    }
    for (int f = 3; f <= 5; f += 2) {
        while (rest % f == 0) {
            radices[ns++] = f;
            rest /= f;
        }
    }
    int64_t total = 0, l = 1;
    for (int s = 0; s < ns; s++) {
        total += (int64_t)(radices[s] - 1) * l;
        l *= radices[s];
    }
    if ((p->ftable = malloc(sizeof(float) * 2 * (size_t)(total + 1))) == NULL) {
        return -1;
    }
    p->bytes += sizeof(float) * 2 * (size_t)(total + 1);
    float *t = p->ftable;
    l = 1;
    for (int s = 0; s < ns; s++) {
        StageF *st = &p->fstages[s];
        const int r = radices[s];
        const int64_t len = l * r;
        *st = (StageF){.p = r, .l = l, .r = n / len, .tw = t};
        for (int64_t j = 0; j < l; j++) {
            for (int q = 1; q < r; q++) {
                double a = -6.28318530717958647692 * ((double)(q * j % len) / (double)len);
                *t++ = (float)cos(a);
                *t++ = (float)sin(a);
            }
        }
        l = len;
    }
    p->fnstages = ns;
    return 0;
}

/* ---- moving lines into and out of blocks ---- */

#ifdef FFT_ROW_MOVES
/* the block of 16 complex64 held as lo (points 0 .. 7) and hi (8 .. 15), im times sgn */
LANE_INLINE CpxF
split16(Floats16 lo, Floats16 hi, float sgn)
{
    LanesF re = __builtin_shufflevector(lo, hi, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24,
                                        26, 28, 30);
    LanesF im = __builtin_shufflevector(lo, hi, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25,
                                        27, 29, 31);
    return (CpxF){re, im * sgn};
}

/* split16's inverse: (re sc, im sim) of x as 16 complex64 in lo and hi */
LANE_INLINE void
join16(CpxF x, float sc, float sim, Floats16 *lo, Floats16 *hi)
{
    LanesF re = x.re * sc, im = x.im * sim;
    *lo = __builtin_shufflevector(re, im, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7,
                                  23);
    *hi = __builtin_shufflevector(re, im, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14,
                                  30, 15, 31);
}

/* whether the 16 lines start 8 bytes apart */
static inline int
adjacent16(char *const *p)
{
    for (int ln = 1; ln < FFT_LANES_F; ln++) {
        if (p[ln] - p[0] != 8 * ln) {
            return 0;
        }
    }
    return 1;
}
#endif

/* v[i], lane ln = point i of line src[ln]: the float at src[ln] + i ps and, times sgn, the
 * one imoff bytes on (a complex64 point: imoff 4; a pair of real points: imoff their
 * stride).  Complex64 points move as rows where they can (fft_impl.h): 16 lines 8 bytes
 * apart a 128-byte row per point, contiguous lines as two 8x8 transposes of 8 points. */
LANE_INLINE void
gather_f(const char **src, int64_t ps, int64_t imoff, int64_t n, float sgn, CpxF *v)
{
    int64_t i = 0;
#ifdef FFT_ROW_MOVES
    if (imoff == 4 && adjacent16((char *const *)src)) {
        for (; i < n; i++) {
            Floats16 lo, hi;
            memcpy(&lo, src[0] + i * ps, sizeof(lo));
            memcpy(&hi, src[0] + i * ps + 64, sizeof(hi));
            v[i] = split16(lo, hi, sgn);
        }
    }
    for (; imoff == 4 && ps == 8 && i + 8 <= n; i += 8) {
        Words m[2][8];
        for (int h = 0; h < 2; h++) {
            for (int ln = 0; ln < 8; ln++) {
                memcpy(&m[h][ln], src[8 * h + ln] + i * 8, sizeof(Words));
            }
            transpose8(m[h]);
        }
        for (int t = 0; t < 8; t++) {
            v[i + t] = split16((Floats16)m[0][t], (Floats16)m[1][t], sgn);
        }
    }
#endif
    for (; i < n; i++) {
        for (int ln = 0; ln < FFT_LANES_F; ln++) {
            const char *p = src[ln] + i * ps;
            v[i].re[ln] = *(const float *)p;
            v[i].im[ln] = sgn * *(const float *)(p + imoff);
        }
    }
}

/* gather_f's inverse: the float at dst[ln] + i ps = re sc, the one imoff bytes on = im sim
 * of r[i], lane ln */
LANE_INLINE void
scatter_f(const CpxF *r, int64_t n, float sc, float sim, char **dst, int64_t ps, int64_t imoff)
{
    int64_t i = 0;
#ifdef FFT_ROW_MOVES
    if (imoff == 4 && adjacent16(dst)) {
        for (; i < n; i++) {
            Floats16 lo, hi;
            join16(r[i], sc, sim, &lo, &hi);
            memcpy(dst[0] + i * ps, &lo, sizeof(lo));
            memcpy(dst[0] + i * ps + 64, &hi, sizeof(hi));
        }
    }
    for (; imoff == 4 && ps == 8 && i + 8 <= n; i += 8) {
        Words m[2][8];
        for (int t = 0; t < 8; t++) {
            Floats16 lo, hi;
            join16(r[i + t], sc, sim, &lo, &hi);
            m[0][t] = (Words)lo;
            m[1][t] = (Words)hi;
        }
        for (int h = 0; h < 2; h++) {
            transpose8(m[h]);
            for (int ln = 0; ln < 8; ln++) {
                memcpy(dst[8 * h + ln] + i * 8, &m[h][ln], sizeof(Words));
            }
        }
    }
#endif
    for (; i < n; i++) {
        LanesF re = r[i].re * sc, im = r[i].im * sim;
        for (int ln = 0; ln < FFT_LANES_F; ln++) {
            char *p = dst[ln] + i * ps;
            *(float *)p = re[ln];
            *(float *)(p + imoff) = im[ln];
        }
    }
}

/* ---- blocks of 16 lines ---- */

/* C2C of the lines src[0..16) into dst[0..16) (v: 2 n blocks) */
PTL_LOOP_CLONES_WIDE static void
c2c_block_f(const Pass *ps, const char **src, char **dst, CpxF *v)
{
    const int64_t n = ps->plan->n;
    const float sgn = ps->inverse ? -1.0f : 1.0f, sc = (float)ps->scale, sim = sgn * sc;
    gather_f(src, ps->sstr[ps->d], 4, n, sgn, v);
    const CpxF *r = exec_f(ps->plan, v, v + n);
    scatter_f(r, n, sc, sim, dst, ps->dstr[ps->d], 4);
}

/* R2C of 16 real lines (Note [Real FFT]; v: 3 h + 1 blocks) */
PTL_LOOP_CLONES_WIDE static void
r2c_block_f(const Pass *ps, const char **src, char **dst, CpxF *v)
{
    const FftPlan *pl = ps->plan;
    const int64_t n = pl->n, h = n / 2, ss = ps->sstr[ps->d], ds = ps->dstr[ps->d];
    const float sc = (float)ps->scale;
    CpxF *x = v + 2 * h;
    gather_f(src, 2 * ss, ss, h, 1.0f, v);
    const CpxF *r = exec_f(pl->half, v, v + h);
    for (int64_t k = 0; k <= h; k++) {
        CpxF a = r[k == h ? 0 : k], b = r[k == 0 ? 0 : h - k];
        CpxF e = {(a.re + b.re) * 0.5f, (a.im - b.im) * 0.5f};
        CpxF o = {(a.im + b.im) * 0.5f, (b.re - a.re) * 0.5f};   /* (a - conj(b)) / 2i */
        x[k] = k < h ? fadd(e, fmul(o, (float)pl->rtw[k].re, (float)pl->rtw[k].im))
                     : fsub(e, o);
    }
    scatter_f(x, h + 1, sc, sc, dst, ds, 4);
    for (int64_t k = h + 1; k < ps->out_len; k++) {   /* two-sided: X_k = conj(X_(n-k)) */
        LanesF re = x[n - k].re * sc, im = x[n - k].im * -sc;
        for (int ln = 0; ln < FFT_LANES_F; ln++) {
            float *z = (float *)(dst[ln] + k * ds);
            z[0] = re[ln];
            z[1] = im[ln];
        }
    }
}

/* C2R of 16 half spectra (Note [Real FFT]; v: 3 h + 1 blocks: the h + 1 bins, the h points
 * and the half plan's work) */
PTL_LOOP_CLONES_WIDE static void
c2r_block_f(const Pass *ps, const char **src, char **dst, CpxF *v)
{
    const FftPlan *pl = ps->plan;
    const int64_t n = pl->n, h = n / 2, ds = ps->dstr[ps->d];
    const float sc = (float)ps->scale;
    CpxF *z = v + h + 1;
    gather_f(src, ps->sstr[ps->d], 4, h + 1, 1.0f, v);
    v[0].im = v[h].im = (LanesF){0};
    for (int64_t k = 0; k < h; k++) {
        CpxF a = v[k], b = {v[h - k].re, -v[h - k].im};
        CpxF d = fmul(fsub(a, b), (float)pl->rtw[k].re, -(float)pl->rtw[k].im);
        CpxF sum = fadd(a, b);
        z[k] = (CpxF){sum.re - d.im, -(sum.im + d.re)};   /* conj(sum + i d) */
    }
    const CpxF *r = exec_f(pl->half, z, z + h);
    scatter_f(r, h, sc, -sc, dst, 2 * ds, ds);   /* (y_2j, y_2j+1) = conj(F(conj(Z)))_j */
}

/* ---- a line alone: the four-step over 16 ---- */

/* w_16^m, m < 10 (the products b k0 of dft16) */
static const float w16[10][2] = {
    {1.0f, 0.0f},
    {0.92387953251128675613f, -0.38268343236508977173f},
    {0.70710678118654752440f, -0.70710678118654752440f},
    {0.38268343236508977173f, -0.92387953251128675613f},
    {0.0f, -1.0f},
    {-0.38268343236508977173f, -0.92387953251128675613f},
    {-0.70710678118654752440f, -0.70710678118654752440f},
    {-0.92387953251128675613f, -0.38268343236508977173f},
    {-1.0f, 0.0f},
    {-0.92387953251128675613f, 0.38268343236508977173f},
};

/* c[k] = sum_j w_16^(j k) c[j] in place: with j = b + 4 a and k = k0 + 4 k1, 4-point DFTs
 * over a, the twiddles w_16^(b k0), 4-point DFTs over b */
LANE_INLINE void
dft16(CpxF *c)
{
    CpxF y[16];
    for (int b = 0; b < 4; b++) {
        CpxF a[4] = {c[b], c[b + 4], c[b + 8], c[b + 12]};
        fbf4(a);
        for (int k0 = 0; k0 < 4; k0++) {
            y[4 * b + k0] = b * k0 == 0 ? a[k0] : fmul(a[k0], w16[b * k0][0], w16[b * k0][1]);
        }
    }
    for (int k0 = 0; k0 < 4; k0++) {
        CpxF a[4] = {y[k0], y[4 + k0], y[8 + k0], y[12 + k0]};
        fbf4(a);
        for (int k1 = 0; k1 < 4; k1++) {
            c[k0 + 4 * k1] = a[k1];
        }
    }
}

#ifdef FFT_ROW_MOVES
#define UNWRAP(...) __VA_ARGS__

/* one step of a 16x16 transpose: rows i and i + D (i & D == 0) swap bit D of the row index
 * with bit D of the column index; LO and HI (in parentheses) pick from the two rows */
#define TRANSPOSE_STEP(D, LO, HI)                                                   \
    do {                                                                            \
        LanesF t_[16];                                                              \
        for (int i = 0; i < 16; i++) {                                              \
            if ((i & (D)) == 0) {                                                   \
                t_[i] = __builtin_shufflevector(m[i], m[i + (D)], UNWRAP LO);       \
                t_[i + (D)] = __builtin_shufflevector(m[i], m[i + (D)], UNWRAP HI); \
            }                                                                       \
        }                                                                           \
        memcpy(m, t_, sizeof(t_));                                                  \
    } while (0)

/* m[i], element j = m[j], element i */
LANE_INLINE void
transpose16(LanesF *m)
{
    TRANSPOSE_STEP(8, (0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23),
                   (8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31));
    TRANSPOSE_STEP(4, (0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27),
                   (4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31));
    TRANSPOSE_STEP(2, (0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29),
                   (2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31));
    TRANSPOSE_STEP(1, (0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30),
                   (1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31));
}
#undef TRANSPOSE_STEP
#undef UNWRAP

/* the 16 points at p (byte stride s) as one block, im times sgn */
LANE_INLINE CpxF
load16(const char *p, int64_t s, float sgn)
{
    Floats16 lo, hi;
    if (s == 8) {
        memcpy(&lo, p, sizeof(lo));
        memcpy(&hi, p + 64, sizeof(hi));
        return split16(lo, hi, sgn);
    }
    float re[FFT_LANES_F], im[FFT_LANES_F];
    for (int t = 0; t < FFT_LANES_F; t++) {
        re[t] = ((const float *)(p + t * s))[0];
        im[t] = sgn * ((const float *)(p + t * s))[1];
    }
    CpxF x;
    memcpy(&x.re, re, sizeof(re));
    memcpy(&x.im, im, sizeof(im));
    return x;
}

/* the 16 points at p (byte stride s) = (re sc, im sim) of x */
LANE_INLINE void
store16(CpxF x, float sc, float sim, char *p, int64_t s)
{
    Floats16 lo, hi;
    join16(x, sc, sim, &lo, &hi);
    if (s == 8) {
        memcpy(p, &lo, sizeof(lo));
        memcpy(p + 64, &hi, sizeof(hi));
        return;
    }
    for (int t = 0; t < FFT_LANES_F; t++) {
        float *z = (float *)(p + t * s);
        z[0] = t < 8 ? lo[2 * t] : hi[2 * t - 16];
        z[1] = t < 8 ? lo[2 * t + 1] : hi[2 * t - 15];
    }
}

/* Note [FFT float32]: the C2C of the line at src (byte stride ss) into dst (ds) by plan p
 * (n = 256 m); v: 2 n / 16 blocks */
PTL_LOOP_CLONES_WIDE static void
four_step_f(const Pass *ps, const char *src, char *dst, CpxF *v)
{
    const FftPlan *p = ps->plan;
    const int64_t n2 = p->n / FFT_LANES_F, ss = ps->sstr[ps->d], ds = ps->dstr[ps->d];
    const float sgn = ps->inverse ? -1.0f : 1.0f, sc = (float)ps->scale, sim = sgn * sc;
    for (int64_t b = 0; b < n2; b += FFT_LANES_F) {   /* columns b .. b + 15 */
        CpxF c[FFT_LANES_F];
        LanesF re[FFT_LANES_F], im[FFT_LANES_F];
        for (int j1 = 0; j1 < FFT_LANES_F; j1++) {
            c[j1] = load16(src + (j1 * n2 + b) * ss, ss, sgn);
        }
        dft16(c);
        for (int k1 = 0; k1 < FFT_LANES_F; k1++) {
            re[k1] = c[k1].re;
            im[k1] = c[k1].im;
        }
        transpose16(re);
        transpose16(im);
        for (int t = 0; t < FFT_LANES_F; t++) {
            const CpxF w = p->ftwf[b + t];
            v[b + t] = (CpxF){re[t] * w.re - im[t] * w.im, re[t] * w.im + im[t] * w.re};
        }
    }
    const CpxF *r = exec_f(p->four16, v, v + n2);
    for (int64_t k2 = 0; k2 < n2; k2++) {
        store16(r[k2], sc, sim, dst + FFT_LANES_F * k2 * ds, ds);
    }
}
#endif

/* ---- passes ---- */

/* a plan the float32 stages run: radices 2 .. 5 only */
static int
smooth_plan(const FftPlan *p)
{
    if (p->sub != NULL) {
        return 0;
    }
    for (int s = 0; s < p->nstages; s++) {
        if (p->stages[s].p > 5) {
            return 0;
        }
    }
    return 1;
}

int
fft_f32_takes(const Pass *ps)
{
    const FftPlan *pl = ps->plan;
    const int single = (ps->sdt == PTL_DTYPE_FLOAT32 || ps->sdt == PTL_DTYPE_COMPLEX64) &&
                       (ps->ddt == PTL_DTYPE_FLOAT32 || ps->ddt == PTL_DTYPE_COMPLEX64);
    if (!single) {
        return 0;
    }
    if (ps->kind != PASS_C2C) {
        return pl->real && ps->lines > 1 && smooth_plan(pl->half);
    }
#ifdef FFT_ROW_MOVES
    if (ps->lines == 1) {
        return pl->four16 != NULL;
    }
#endif
    return ps->lines > 1 && pl->n > 1 && smooth_plan(pl);
}

int
fft_f32_lines(const Pass *ps, int64_t begin, int64_t end)
{
    const FftPlan *pl = ps->plan;
    const int64_t n = pl->n;
    const int64_t blocks = ps->kind != PASS_C2C ? 3 * (n / 2) + 1 :
                           ps->lines == 1 ? 2 * (n / FFT_LANES_F) : 2 * n;
    CpxF *v = aligned_alloc(64, sizeof(CpxF) * (size_t)blocks);
    if (v == NULL) {
        return ptl_error_set(PTL_ERR_MEMORY, "fft: out of memory");
    }
#ifdef FFT_ROW_MOVES
    if (ps->kind == PASS_C2C && ps->lines == 1) {
        int64_t so, dof;
        line_offsets(ps, 0, &so, &dof);
        four_step_f(ps, ps->src + so, ps->dst + dof, v);
        free(v);
        return 0;
    }
#endif
    for (int64_t line = begin; line < end; line += FFT_LANES_F) {
        /* the last block of the task: copies of its last line fill it up */
        const int64_t nl = end - line < FFT_LANES_F ? end - line : FFT_LANES_F;
        const char *src[FFT_LANES_F];
        char *dst[FFT_LANES_F];
        for (int ln = 0; ln < FFT_LANES_F; ln++) {
            int64_t so, dof;
            line_offsets(ps, line + (ln < nl ? ln : nl - 1), &so, &dof);
            src[ln] = ps->src + so;
            dst[ln] = ps->dst + dof;
        }
        switch (ps->kind) {
        case PASS_C2C: c2c_block_f(ps, src, dst, v); break;
        case PASS_R2C: r2c_block_f(ps, src, dst, v); break;
        default: c2r_block_f(ps, src, dst, v); break;
        }
    }
    free(v);
    return 0;
}
