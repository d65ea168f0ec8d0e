/* fft_f32.c -- the float32 / complex64 transforms of native/fft.c in float32 arithmetic, 8
 * or 16 lines a block.  Mirrors what pocketfft does for float in ATen/native/mkl/SpectralOps.cpp
 * (float32 computed in float32); the transform is ours, the plans are fft.c's.
 *
 * Note [FFT float32]
 * ~~~~~~~~~~~~~~~~~~
 * A pass whose input and output are both single precision and whose plan has radices 2 .. 5
 * only (no generic prime, no Bluestein; for a real transform, its half plan) runs here: the
 * stages of Note [FFT kernel] over blocks of 8 or FFT_LANES_F = 16 lines, point b of the lines
 * as one vector of their real parts and one of their imaginary parts (16: one AVX-512 register
 * each; the AVX2 and baseline clones split them; no FMA, so every clone gives the same bits;
 * the kernels are one template, fft_f32_lanes.h, and a lane computes the same at either width;
 * fft_f32_lines says which width runs where).  The plan keeps float stages of its own
 * (fft_f32_plan: radix 8 first, so fewer passes over the block than fft.c's radix 4) whose
 * twiddles are computed in double and rounded once.  Every line of a pass of several runs in
 * such a block: the last block of a task is filled up with copies of its last line (their
 * results are the same bits, written to the same place again), so a line's bits do not depend
 * on how lines fall into threads or blocks, nor on how they move in and out (rows of 8 points,
 * rows of 8 or 16 lines, points).  A pass of one complex line of n = 256 m points runs the
 * four-step of Note [Four-step] over 16: 16-point DFTs of the columns, vectorized across 16
 * neighbouring columns and transposed (16x16) into lane blocks, the twiddles ftwf, then the
 * float stages of the plan of n / 16 (four16).  Other lines alone, and every pass of other
 * lengths or of mixed precision, keep fft.c's double path and its bits.
 *
 * On AVX2 (no AVX-512) nothing runs in 64-byte vectors, whose shuffles GCC lowers there an
 * element at a time through the stack: blocks of 8 only, moved by 4x4 transposes of 32-byte
 * rows (tile_in8), and the four-step 8 columns at a time with the 16 lanes of n / 16 as two
 * halves of 8 (four_step_f8).  The last stage writes contiguous output lines itself and
 * rfft's one-sided rows take their bins 8 at a time (fft_f32_lanes.h).  All of these are
 * the same operations on each lane: the same bits on every host.
 *
 * The error is float32 arithmetic's: against NumPy's float64 on the same float32 inputs,
 * at most 1.5e-7 of the result's norm (Frobenius) up to 65536 points where PyTorch 2.13
 * (pocketfft in float32) gives 1.6e-7 to 1.9e-7 on the same inputs; per input ours is
 * 1.0 to 1.4 times PyTorch's (1.8 at a few tiny lengths, n = 6).
 * tests/aten/test_fft_f32.py bounds it at 2x PyTorch's worst per size class. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../c10/cpu_features.h"
#include "../../c10/error.h"
#include "../loops.h"
#include "fft_impl.h"

/* ---- the two block widths ---- */

/* The kernels' clones (Note [Loop clones] in loops.h): as PTL_LOOP_CLONES_WIDE but AVX-512
 * with VL (x86-64-v4; gcc 12's target_clones takes no "avx512vl" alone), so that blocks of
 * 8 (256-bit vectors) get 32 registers too: radix 8 spilled with 16 (one thread, rfft
 * 64x1024 float32 57 -> 52 us, irfft 55 -> 50 us).  No FMA in them either (objdump). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(PTL_NO_LOOP_CLONES)
#define FFT_F32_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define FFT_F32_CLONES
#endif

typedef float LanesF8 __attribute__((vector_size(32)));
typedef struct CpxF8 {
    LanesF8 re, im;
} CpxF8;

#ifdef FFT_ROW_MOVES
/* the block of 16 complex64 held in f[0] (points 0 .. 7) and f[1] (8 .. 15), im times sgn */
LANE_INLINE CpxF
split16(const Floats16 *f, float sgn)
{
    LanesF re = __builtin_shufflevector(f[0], f[1], 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22,
                                        24, 26, 28, 30);
    LanesF im = __builtin_shufflevector(f[0], f[1], 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23,
                                        25, 27, 29, 31);
    return (CpxF){re, im * sgn};
}

/* split16's inverse: (re sc, im sim) of x as 16 complex64 in f[0] and f[1] */
LANE_INLINE void
join16(CpxF x, float sc, float sim, Floats16 *f)
{
    LanesF re = x.re * sc, im = x.im * sim;
    f[0] = __builtin_shufflevector(re, im, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7,
                                   23);
    f[1] = __builtin_shufflevector(re, im, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14,
                                   30, 15, 31);
}

/* the row of 16 complex64 at p as a block, im times sgn; the block as that row, (re sc,
 * im sim) */
LANE_INLINE CpxF
row_in16(const char *p, float sgn)
{
    Floats16 f[2];
    memcpy(f, p, sizeof(f));
    return split16(f, sgn);
}

LANE_INLINE void
row_out16(CpxF x, float sc, float sim, char *p)
{
    Floats16 f[2];
    join16(x, sc, sim, f);
    memcpy(p, f, sizeof(f));
}

/* v[t], lane ln = the complex64 at src[ln] + off + 8 t, t < 8, im times sgn: two 8x8
 * transposes of 64-bit words (64-byte vectors: the AVX-512 clone's; blocks of 16 run on
 * AVX-512 hosts only, fft_f32_lines) */
LANE_INLINE void
tile_in16(const char **src, int64_t off, float sgn, CpxF *v)
{
    Words m[2][8];
    for (int h = 0; h < 2; h++) {
        for (int ln = 0; ln < 8; ln++) {
            memcpy(&m[h][ln], src[8 * h + ln] + off, sizeof(Words));
        }
        transpose8(m[h]);
    }
    for (int t = 0; t < 8; t++) {
        Floats16 f[2] = {(Floats16)m[0][t], (Floats16)m[1][t]};
        v[t] = split16(f, sgn);
    }
}

/* tile_in16's inverse: the complex64 at dst[ln] + off + 8 t = (re sc, im sim) of r[t] */
LANE_INLINE void
tile_out16(const CpxF *r, float sc, float sim, char **dst, int64_t off)
{
    Words m[2][8];
    for (int t = 0; t < 8; t++) {
        Floats16 f[2];
        join16(r[t], sc, sim, f);
        m[0][t] = (Words)f[0];
        m[1][t] = (Words)f[1];
    }
    for (int h = 0; h < 2; h++) {
        transpose8(m[h]);
        for (int ln = 0; ln < 8; ln++) {
            memcpy(dst[8 * h + ln] + off, &m[h][ln], sizeof(Words));
        }
    }
}

/* Blocks of 8 move with 32-byte vectors only: on AVX2, GCC lowers the shuffles of 64-byte
 * vectors (split8 of a Floats16, transpose8 of Words) an element at a time through the
 * stack, which took most of c2c_block_f_8's time (one thread, fft 64x1024 complex64 ~500
 * -> see docs/performance.md).  Every move is a permutation: the same bits either way. */
typedef long long Words4 __attribute__((vector_size(32)));

/* (re, im sgn) of the 8 complex64 in a (points 0 .. 3) and b (4 .. 7) */
LANE_INLINE CpxF8
split8(Floats8 a, Floats8 b, float sgn)
{
    LanesF8 re = __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14);
    LanesF8 im = __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15);
    return (CpxF8){re, im * sgn};
}

/* split8's inverse: (re sc, im sim) of x as 8 complex64 in f[0] and f[1] */
LANE_INLINE void
join8(CpxF8 x, float sc, float sim, Floats8 *f)
{
    LanesF8 re = x.re * sc, im = x.im * sim;
    f[0] = __builtin_shufflevector(re, im, 0, 8, 1, 9, 2, 10, 3, 11);
    f[1] = __builtin_shufflevector(re, im, 4, 12, 5, 13, 6, 14, 7, 15);
}

/* 32 bytes of a line, loaded and stored as one vector: never through an array a memcpy
 * writes into, whose 32-byte loads GCC's AVX2 clone made from two 16-byte stores (a stalled
 * store forward) */
typedef long long Words4u __attribute__((vector_size(32), aligned(4), may_alias));

LANE_INLINE CpxF8
row_in8(const char *p, float sgn)
{
    return split8((Floats8) * (const Words4u *)p, (Floats8) * (const Words4u *)(p + 32), sgn);
}

LANE_INLINE void
row_out8(CpxF8 x, float sc, float sim, char *p)
{
    Floats8 f[2];
    join8(x, sc, sim, f);
    *(Words4u *)p = (Words4)f[0];
    *(Words4u *)(p + 32) = (Words4)f[1];
}

/* m[t], word r = m[r], word t (a 4x4 transpose of 64-bit words) */
LANE_INLINE void
transpose4(Words4 *m)
{
    Words4 t0 = __builtin_shufflevector(m[0], m[1], 0, 4, 2, 6);
    Words4 t1 = __builtin_shufflevector(m[0], m[1], 1, 5, 3, 7);
    Words4 t2 = __builtin_shufflevector(m[2], m[3], 0, 4, 2, 6);
    Words4 t3 = __builtin_shufflevector(m[2], m[3], 1, 5, 3, 7);
    m[0] = __builtin_shufflevector(t0, t2, 0, 1, 4, 5);
    m[1] = __builtin_shufflevector(t1, t3, 0, 1, 4, 5);
    m[2] = __builtin_shufflevector(t0, t2, 2, 3, 6, 7);
    m[3] = __builtin_shufflevector(t1, t3, 2, 3, 6, 7);
}

/* tile_in16 for 8 lines: per 4 points, the 4x4 transposes of lines 0 .. 3 (a) and 4 .. 7 (b) */
LANE_INLINE void
tile_in8(const char **src, int64_t off, float sgn, CpxF8 *v)
{
    for (int q = 0; q < 2; q++) {
        const int64_t o = off + 32 * q;
        Words4 a[4], b[4];
        for (int ln = 0; ln < 4; ln++) {
            a[ln] = *(const Words4u *)(src[ln] + o);
            b[ln] = *(const Words4u *)(src[4 + ln] + o);
        }
        transpose4(a);
        transpose4(b);
        for (int k = 0; k < 4; k++) {
            v[4 * q + k] = split8((Floats8)a[k], (Floats8)b[k], sgn);
        }
    }
}

/* tile_in8's inverse */
LANE_INLINE void
tile_out8(const CpxF8 *r, float sc, float sim, char **dst, int64_t off)
{
    for (int q = 0; q < 2; q++) {
        const int64_t o = off + 32 * q;
        Words4 a[4], b[4];
        for (int k = 0; k < 4; k++) {
            Floats8 f[2];
            join8(r[4 * q + k], sc, sim, f);
            a[k] = (Words4)f[0];
            b[k] = (Words4)f[1];
        }
        transpose4(a);
        transpose4(b);
        for (int ln = 0; ln < 4; ln++) {
            *(Words4u *)(dst[ln] + o) = a[ln];
            *(Words4u *)(dst[4 + ln] + o) = b[ln];
        }
    }
}
#endif

/* whether the w lines start 8 bytes apart */
static inline int
adjacent_rows(char *const *p, int w)
{
    for (int ln = 1; ln < w; ln++) {
        if (p[ln] - p[0] != 8 * ln) {
            return 0;
        }
    }
    return 1;
}

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

#define FW 16
#define LT LanesF
#define CT CpxF
#define SFX(NAME) NAME##_16
#define ROW_IN row_in16
#define ROW_OUT row_out16
#define TILE_IN tile_in16
#define TILE_OUT tile_out16
#include "fft_f32_lanes.h"

#define FW 8
#define LT LanesF8
#define CT CpxF8
#define SFX(NAME) NAME##_8
#define ROW_IN row_in8
#define ROW_OUT row_out8
#define TILE_IN tile_in8
#define TILE_OUT tile_out8
#include "fft_f32_lanes.h"

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

/* ---- a line alone: the four-step over 16 ---- */
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

/* re[t] and im[t] sgn: the complex64 at p + t s, t < w */
LANE_INLINE void
strided_points(const char *p, int64_t s, float sgn, int w, float *re, float *im)
{
    for (int t = 0; t < w; t++) {
        re[t] = ((const float *)(p + t * s))[0];
        im[t] = sgn * ((const float *)(p + t * s))[1];
    }
}

/* the 16 points at p (byte stride s) as one block, im times sgn */
LANE_INLINE CpxF
load16(const char *p, int64_t s, float sgn)
{
    Floats16 f[2];
    if (s == 8) {
        memcpy(f, p, sizeof(f));
        return split16(f, sgn);
    }
    float re[FFT_LANES_F], im[FFT_LANES_F];
    strided_points(p, s, sgn, FFT_LANES_F, re, im);
    CpxF x;
    memcpy(&x.re, re, sizeof(re));
    memcpy(&x.im, im, sizeof(im));
    return x;
}

/* the 16 points at p (byte stride s) = (re sc, im sim) of x */
LANE_INLINE void
store16(CpxF x, float sc, float sim, char *p, int64_t s)
{
    Floats16 f[2];
    join16(x, sc, sim, f);
    if (s == 8) {
        memcpy(p, f, sizeof(f));
        return;
    }
    for (int t = 0; t < FFT_LANES_F; t++) {
        float *z = (float *)(p + t * s);
        z[0] = f[t / 8][2 * (t % 8)];
        z[1] = f[t / 8][2 * (t % 8) + 1];
    }
}

/* Note [FFT float32]: the C2C of the line at src (byte stride ss) into dst (ds) by plan p
 * (n = 256 m); v: 2 n / 16 blocks */
FFT_F32_CLONES static void
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
        dft16_16(c);
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
    const CpxF *r = exec_f_16(p->four16, p->four16->fnstages, v, v + n2);
    for (int64_t k2 = 0; k2 < n2; k2++) {
        store16(r[k2], sc, sim, dst + FFT_LANES_F * k2 * ds, ds);
    }
}

/* m[i], element j = m[j], element i (an 8x8 transpose of floats) */
LANE_INLINE void
transpose8f(LanesF8 *m)
{
    LanesF8 t[8], u[8];
    for (int k = 0; k < 8; k += 2) {
        t[k] = __builtin_shufflevector(m[k], m[k + 1], 0, 8, 1, 9, 4, 12, 5, 13);
        t[k + 1] = __builtin_shufflevector(m[k], m[k + 1], 2, 10, 3, 11, 6, 14, 7, 15);
    }
    for (int k = 0; k < 8; k += 4) {
        for (int h = 0; h < 2; h++) {
            u[k + 2 * h] = __builtin_shufflevector(t[k + h], t[k + h + 2], 0, 1, 8, 9, 4, 5,
                                                   12, 13);
            u[k + 2 * h + 1] = __builtin_shufflevector(t[k + h], t[k + h + 2], 2, 3, 10, 11, 6,
                                                       7, 14, 15);
        }
    }
    for (int k = 0; k < 4; k++) {
        m[k] = __builtin_shufflevector(u[k], u[k + 4], 0, 1, 2, 3, 8, 9, 10, 11);
        m[k + 4] = __builtin_shufflevector(u[k], u[k + 4], 4, 5, 6, 7, 12, 13, 14, 15);
    }
}

/* 8 points at p (byte stride s) as one block of 8 lanes, im times sgn */
LANE_INLINE CpxF8
load8(const char *p, int64_t s, float sgn)
{
    if (s == 8) {
        return row_in8(p, sgn);
    }
    float re[8], im[8];
    strided_points(p, s, sgn, 8, re, im);
    CpxF8 x;
    memcpy(&x.re, re, sizeof(re));
    memcpy(&x.im, im, sizeof(im));
    return x;
}

/* the 8 points at p (byte stride s) = (re sc, im sim) of x */
LANE_INLINE void
store8(CpxF8 x, float sc, float sim, char *p, int64_t s)
{
    if (s == 8) {
        row_out8(x, sc, sim, p);
        return;
    }
    LanesF8 re = x.re * sc, im = x.im * sim;
    for (int t = 0; t < 8; t++) {
        float *z = (float *)(p + t * s);
        z[0] = re[t];
        z[1] = im[t];
    }
}

/* four_step_f in 32-byte vectors, for hosts without AVX-512 (whose clones lower the 64-byte
 * shuffles of transpose16, split16 and join16 an element at a time through the stack): the
 * same operations on every lane, 8 columns at a time, and the 16 lanes k1 of the n / 16
 * point transforms as two halves (k1 < 8, k1 >= 8) of 8, so the same bits.  v: 2 n / 16
 * blocks of 16 = 4 n / 16 blocks of 8: each half and its work. */
FFT_F32_CLONES static void
four_step_f8(const Pass *ps, const char *src, char *dst, CpxF8 *v)
{
    const FftPlan *p = ps->plan;
    const int64_t n2 = p->n / FFT_LANES_F, ss = ps->sstr[ps->d], ds = ps->dstr[ps->d];
    const float sgn = ps->inverse ? -1.0f : 1.0f, sc = (float)ps->scale, sim = sgn * sc;
    CpxF8 *half[2] = {v, v + 2 * n2};
    for (int64_t b = 0; b < n2; b += 8) {   /* columns b .. b + 7 */
        CpxF8 c[FFT_LANES_F];
        for (int j1 = 0; j1 < FFT_LANES_F; j1++) {
            c[j1] = load8(src + (j1 * n2 + b) * ss, ss, sgn);
        }
        dft16_8(c);
        for (int h = 0; h < 2; h++) {   /* lanes k1 = 8 h .. 8 h + 7 */
            LanesF8 re[8], im[8];
            for (int k = 0; k < 8; k++) {
                re[k] = c[8 * h + k].re;
                im[k] = c[8 * h + k].im;
            }
            transpose8f(re);
            transpose8f(im);
            for (int t = 0; t < 8; t++) {
                LanesF8 wr, wi;
                memcpy(&wr, (const float *)&p->ftwf[b + t].re + 8 * h, sizeof(wr));
                memcpy(&wi, (const float *)&p->ftwf[b + t].im + 8 * h, sizeof(wi));
                half[h][b + t] = (CpxF8){re[t] * wr - im[t] * wi, re[t] * wi + im[t] * wr};
            }
        }
    }
    for (int h = 0; h < 2; h++) {
        const CpxF8 *r = exec_f_8(p->four16, p->four16->fnstages, half[h], half[h] + n2);
        for (int64_t k2 = 0; k2 < n2; k2++) {
            store8(r[k2], sc, sim, dst + (FFT_LANES_F * k2 + 8 * h) * ds, ds);
        }
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
        if (ptl_cpu_capability() >= PTL_CPU_AVX512) {
            four_step_f(ps, ps->src + so, ps->dst + dof, v);
        } else {
            four_step_f8(ps, ps->src + so, ps->dst + dof, (CpxF8 *)v);
        }
        free(v);
        return 0;
    }
#endif
    /* Lines 8 bytes apart (a transform along an outer dim) run 16 a block, as rows of 128
     * bytes; others 8 a block: 16 lines of a power-of-two length lie in one set of the 8-way
     * L1, the two 8x8 transposes of 16 lines cost more than the vectors' width saves, and a
     * block of 16 lines of 4096 points fills the L2 (one thread, 64x1024: 88 -> 83 us,
     * 256x256: 67 -> 60 us, 16x4096: 103 -> 97 us, fastest of 30).  Either width gives a
     * line the same bits (fft_f32_lanes.h). */
    const int wide = ptl_cpu_capability() >= PTL_CPU_AVX512;
    for (int64_t line = begin, nl; line < end; line += nl) {
        /* the last block of the task: copies of its last line fill it up */
        nl = end - line < FFT_LANES_F ? end - line : FFT_LANES_F;
        const char *src[FFT_LANES_F];
        char *dst[FFT_LANES_F];
        for (int ln = 0; ln < FFT_LANES_F; ln++) {
            int64_t so, dof;
            line_offsets(ps, line + (ln < nl ? ln : nl - 1), &so, &dof);
            src[ln] = ps->src + so;
            dst[ln] = ps->dst + dof;
        }
        if (nl > 8 && wide && (adjacent_rows((char *const *)src, FFT_LANES_F) ||
                       adjacent_rows(dst, FFT_LANES_F))) {
            switch (ps->kind) {
            case PASS_C2C: c2c_block_f_16(ps, src, dst, v); break;
            case PASS_R2C: r2c_block_f_16(ps, src, dst, v); break;
            default: c2r_block_f_16(ps, src, dst, v); break;
            }
            continue;
        }
        nl = nl < 8 ? nl : 8;
        switch (ps->kind) {
        case PASS_C2C: c2c_block_f_8(ps, src, dst, (CpxF8 *)v); break;
        case PASS_R2C: r2c_block_f_8(ps, src, dst, (CpxF8 *)v); break;
        default: c2r_block_f_8(ps, src, dst, (CpxF8 *)v); break;
        }
    }
    free(v);
    return 0;
}
