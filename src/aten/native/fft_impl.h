/* fft_impl.h -- the plans, passes, lane blocks and butterflies of native/fft.c (Note [FFT
 * kernel] there) and the vector moves of complex64 rows into and out of blocks.  Private to
 * fft.c and fft_f32.c (Note [FFT float32]). */
#ifndef PTL_ATEN_NATIVE_FFT_IMPL_H
#define PTL_ATEN_NATIVE_FFT_IMPL_H

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "../../c10/dtype.h"
#include "../../c10/macros.h"

#define FFT_LANES 8
#define LANE_INLINE static inline __attribute__((always_inline))

/* Point b of FFT_LANES lines: their real parts, then their imaginary parts, as two vectors
 * (GCC's vector extension; lowered to what the target has). */
typedef double Lanes __attribute__((vector_size(8 * FFT_LANES)));
typedef struct CpxL {
    Lanes re, im;
} CpxL;

/* The float32 path's block (fft_f32.c): point b of FFT_LANES_F lines, 16 floats a vector. */
#define FFT_LANES_F 16
typedef float LanesF __attribute__((vector_size(4 * FFT_LANES_F)));
typedef struct CpxF {
    LanesF re, im;
} CpxF;

#define FFT_MAX_RADIX 31

/* The butterflies (Note [FFT kernel]), written once for every block type T: fft.c's Cpx
 * (one line) and CpxL (8 lines in double), fft_f32.c's blocks of 16 and 8 in float.  Each is
 * the body of a function of `a`, the p points to transform in place, through T's ADD, SUB,
 * SCALE (by a real of type R) and NEG_I (times -i); the same operations in the same order
 * for every type, so a lane of a block gets the bits of its line alone. */
#define FFT_BF2(T, ADD, SUB)                                                    \
    do {                                                                        \
        T t_ = a[1];                                                            \
        a[1] = SUB(a[0], t_);                                                   \
        a[0] = ADD(a[0], t_);                                                   \
    } while (0)

#define FFT_BF4(T, ADD, SUB, NEG_I)                                             \
    do {                                                                        \
        T t0 = ADD(a[0], a[2]), t1 = SUB(a[0], a[2]);                           \
        T t2 = ADD(a[1], a[3]), t3 = NEG_I(SUB(a[1], a[3]));                    \
        a[0] = ADD(t0, t2);                                                     \
        a[1] = ADD(t1, t3);                                                     \
        a[2] = SUB(t0, t2);                                                     \
        a[3] = SUB(t1, t3);                                                     \
    } while (0)

/* w_3 = -1/2 - i sqrt(3)/2 */
#define FFT_BF3(T, R, ADD, SUB, SCALE, NEG_I)                                   \
    do {                                                                        \
        const R s3 = (R)0.86602540378443864676;                                 \
        T t = ADD(a[1], a[2]);                                                  \
        T m = SUB(a[0], SCALE(t, (R)0.5));                                      \
        T s = NEG_I(SCALE(SUB(a[1], a[2]), s3));                                \
        a[0] = ADD(a[0], t);                                                    \
        a[1] = ADD(m, s);                                                       \
        a[2] = SUB(m, s);                                                       \
    } while (0)

/* with t1 = a1 + a4, t2 = a2 + a3, d1 = a1 - a4, d2 = a2 - a3 and th = 2 pi / 5:
 * b1, b4 = a0 + c1 t1 + c2 t2 -+ i (s1 d1 + s2 d2), b2, b3 = a0 + c2 t1 + c1 t2 -+ i (s2 d1
 * - s1 d2), c_m = cos(m th), s_m = sin(m th) */
#define FFT_BF5(T, R, ADD, SUB, SCALE, NEG_I)                                   \
    do {                                                                        \
        const R c1 = (R)0.30901699437494742410, c2 = (R)-0.80901699437494742410; \
        const R s1 = (R)0.95105651629515357212, s2 = (R)0.58778525229247312917; \
        T t1 = ADD(a[1], a[4]), t2 = ADD(a[2], a[3]);                           \
        T d1 = SUB(a[1], a[4]), d2 = SUB(a[2], a[3]);                           \
        T m1 = ADD(a[0], ADD(SCALE(t1, c1), SCALE(t2, c2)));                    \
        T m2 = ADD(a[0], ADD(SCALE(t1, c2), SCALE(t2, c1)));                    \
        T n1 = NEG_I(ADD(SCALE(d1, s1), SCALE(d2, s2)));                        \
        T n2 = NEG_I(SUB(SCALE(d1, s2), SCALE(d2, s1)));                        \
        a[0] = ADD(a[0], ADD(t1, t2));                                          \
        a[1] = ADD(m1, n1);                                                     \
        a[4] = SUB(m1, n1);                                                     \
        a[2] = ADD(m2, n2);                                                     \
        a[3] = SUB(m2, n2);                                                     \
    } while (0)

/* any prime p <= FFT_MAX_RADIX (st: its Stage): b_v = sum_q a_q w_p^(q v mod p), MULW(z, w)
 * the product of a T and a Cpx */
#define FFT_BF_GENERIC(T, ADD, MULW)                                            \
    do {                                                                        \
        const int p_ = st->p;                                                   \
        T b_[FFT_MAX_RADIX];                                                    \
        for (int v = 0; v < p_; v++) {                                          \
            T s_ = a[0];                                                        \
            int e = 0;                                                          \
            for (int q = 1; q < p_; q++) {                                      \
                e += v;                                                         \
                e -= e >= p_ ? p_ : 0;                                          \
                s_ = ADD(s_, MULW(a[q], st->root[e]));                          \
            }                                                                   \
            b_[v] = s_;                                                         \
        }                                                                       \
        memcpy(a, b_, sizeof(T) * (size_t)p_);                                  \
    } while (0)
#define FFT_MAX_STAGES 64

typedef struct Cpx {
    double re, im;
} Cpx;

typedef struct Stage {
    int p;            /* radix */
    int64_t l;        /* points per DFT before the stage */
    int64_t r;        /* residues after the stage: n / (l p) */
    const Cpx *tw;    /* tw[j (p - 1) + q - 1] = w_(lp)^(q j), j < l, 0 < q < p */
    const Cpx *root;  /* generic radix: root[m] = w_p^m, m < p; NULL otherwise */
} Stage;

/* a stage of the float32 path (fft_f32.c): radix 8, 4, 2, 3 or 5, its twiddles in float */
typedef struct StageF {
    int p;
    int64_t l, r;
    const float *tw;  /* (re, im) of w_(lp)^(q j) at 2 (j (p - 1) + q - 1) */
} StageF;

typedef struct FftPlan {
    atomic_int refcnt;
    int64_t n;
    int nstages;
    Stage stages[FFT_MAX_STAGES];
    Cpx *table;              /* owns every stage's tw and root */
    struct FftPlan *sub;     /* Bluestein: the plan of M points (owned), else NULL */
    int64_t m;               /* Bluestein's M */
    Cpx *chirp;              /* c_j, j < n */
    Cpx *bhat;               /* F(b) / M with b_j = conj(c_|j|) wrapped around M */
    int real;                /* a real plan (Note [Real FFT]): n even, */
    struct FftPlan *half;    /* the complex plan of n/2 points (owned) */
    Cpx *rtw;                /* and w_n^k, k < n/2 */
    struct FftPlan *four;    /* a line alone (Note [Four-step]): the plan of n / 8 (owned) */
    CpxL *ftw;               /* ftw[j2], lane k1: w_n^(j2 k1), j2 < n / 8 */
    struct FftPlan *four16;  /* float32 (fft_f32.c): the plan of n / 16 (owned), */
    CpxF *ftwf;              /* and ftwf[j2], lane k1: w_n^(j2 k1), j2 < n / 16 */
    int fnstages;            /* float32 (a plan of radices 2 .. 5): its own stages, */
    StageF fstages[FFT_MAX_STAGES];
    float *ftable;           /* owning their twiddles */
    size_t bytes;            /* of the tables above that this plan allocated itself */
} FftPlan;

enum { PASS_C2C, PASS_R2C, PASS_C2R };

/* One pass: the 1-D transform of every line along dim `d` from src to dst.  Both tensors
 * have the same sizes but along d, where dst holds `out_len` points. */
typedef struct Pass {
    const FftPlan *plan;
    int kind;               /* PASS_* */
    int inverse;            /* C2C: the backward direction (C2R always is) */
    double scale;
    int dim, d;
    int64_t sizes[PTL_MAX_DIMS];   /* the iteration shape (d: 1) */
    const char *src;
    int64_t sstr[PTL_MAX_DIMS];    /* bytes */
    PtlDtype sdt;
    char *dst;
    int64_t dstr[PTL_MAX_DIMS];    /* bytes */
    PtlDtype ddt;
    int64_t out_len;
    int64_t lines;          /* lines in the pass (Note [Four-step]: 1 may take that path) */
} Pass;

/* the byte offsets of line `line` in src and dst */
static inline void
line_offsets(const Pass *ps, int64_t line, int64_t *so, int64_t *dof)
{
    *so = *dof = 0;
    for (int i = ps->dim - 1; i >= 0; i--) {
        int64_t idx = line % ps->sizes[i];
        line /= ps->sizes[i];
        *so += idx * ps->sstr[i];
        *dof += idx * ps->dstr[i];
    }
}

/* fft_f32.c (Note [FFT float32]): whether a pass runs in float32 there, and its lines
 * begin .. end there (0 or -1, a MemoryError set); the float stages of a plan of radices
 * 2 .. 5 (0 or -1, nothing set: free the plan). */
int fft_f32_takes(const Pass *ps);
int fft_f32_plan(FftPlan *p);
int fft_f32_lines(const Pass *ps, int64_t begin, int64_t end);

/* Complex64 lines move into and out of lane blocks a row at a time where the compiler has
 * the two builtins (gcc 12, clang): lines 8 bytes apart (a transform along an outer dim,
 * fft2's dim 0) hold point i of the 8 lines in one 64-byte row; contiguous lines move 8
 * points at a time as an 8x8 transpose of 64-bit words (one complex64 each).  Either way
 * the parts are split with shuffles and widened or narrowed as vectors: the values of the
 * element loops in fft.c, which do the rest (fft_rows_* return how many points they
 * moved; 0 without the builtins). */
#if defined(__has_builtin)
#if __has_builtin(__builtin_shufflevector) && __has_builtin(__builtin_convertvector)
#define FFT_ROW_MOVES 1
#endif
#endif

#ifdef FFT_ROW_MOVES
typedef long long Words __attribute__((vector_size(64)));
typedef float Floats8 __attribute__((vector_size(32)));
typedef float Floats16 __attribute__((vector_size(64)));

/* m[t], word r = m[r], word t (an 8x8 transpose of 64-bit words) */
LANE_INLINE void
transpose8(Words *m)
{
    Words t[8];
    for (int k = 0; k < 8; k += 2) {
        t[k] = __builtin_shuffle(m[k], m[k + 1], (Words){0, 8, 2, 10, 4, 12, 6, 14});
        t[k + 1] = __builtin_shuffle(m[k], m[k + 1], (Words){1, 9, 3, 11, 5, 13, 7, 15});
    }
    for (int k = 0; k < 8; k += 4) {
        for (int u = k; u < k + 2; u++) {
            m[u] = __builtin_shuffle(t[u], t[u + 2], (Words){0, 1, 8, 9, 4, 5, 12, 13});
            m[u + 2] = __builtin_shuffle(t[u], t[u + 2], (Words){2, 3, 10, 11, 6, 7, 14, 15});
        }
    }
    for (int u = 0; u < 4; u++) {
        t[u] = __builtin_shuffle(m[u], m[u + 4], (Words){0, 1, 2, 3, 8, 9, 10, 11});
        t[u + 4] = __builtin_shuffle(m[u], m[u + 4], (Words){4, 5, 6, 7, 12, 13, 14, 15});
    }
    memcpy(m, t, sizeof(t));
}

/* whether the 8 lines start 8 bytes apart */
static inline int
adjacent_lines(char *const *p)
{
    for (int ln = 1; ln < FFT_LANES; ln++) {
        if (p[ln] - p[0] != 8 * ln) {
            return 0;
        }
    }
    return 1;
}

/* one block from a row of 8 complex64: (re, im sgn) widened */
LANE_INLINE CpxL
block_of_row(Floats16 f, double sgn)
{
    Floats8 re = __builtin_shufflevector(f, f, 0, 2, 4, 6, 8, 10, 12, 14);
    Floats8 im = __builtin_shufflevector(f, f, 1, 3, 5, 7, 9, 11, 13, 15);
    return (CpxL){__builtin_convertvector(re, Lanes), __builtin_convertvector(im, Lanes) * sgn};
}

/* the row of 8 complex64 at `row` from one block: (re sc, im sim) narrowed */
LANE_INLINE void
row_of_block(CpxL x, double sc, double sim, void *row)
{
    Floats8 re = __builtin_convertvector(x.re * sc, Floats8);
    Floats8 im = __builtin_convertvector(x.im * sim, Floats8);
    Floats16 f = __builtin_shufflevector(re, im, 0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14,
                                         7, 15);
    memcpy(row, &f, sizeof(f));
}

/* v[i], lane ln = point i of complex64 line src[ln] (byte stride ss), imaginary parts
 * times sgn, for the points the row moves reach; returns their count */
LANE_INLINE int64_t
fft_rows_gather(const char **src, int64_t ss, int64_t n, double sgn, CpxL *v)
{
    int64_t i = 0;
    if (adjacent_lines((char *const *)src)) {
        for (; i < n; i++) {
            Floats16 f;
            memcpy(&f, src[0] + i * ss, sizeof(f));
            v[i] = block_of_row(f, sgn);
        }
    }
    for (; ss == 8 && i + 8 <= n; i += 8) {
        Words m[8];
        for (int ln = 0; ln < FFT_LANES; ln++) {
            memcpy(&m[ln], src[ln] + i * 8, sizeof(Words));
        }
        transpose8(m);
        for (int t = 0; t < 8; t++) {
            v[i + t] = block_of_row((Floats16)m[t], sgn);
        }
    }
    return i;
}

/* point i of complex64 line dst[ln] (byte stride ds) = (re sc, im sim) of r[i], lane ln,
 * for the points the row moves reach; returns their count */
LANE_INLINE int64_t
fft_rows_scatter(const CpxL *r, int64_t n, double sc, double sim, char **dst, int64_t ds)
{
    int64_t i = 0;
    if (adjacent_lines(dst)) {
        for (; i < n; i++) {
            row_of_block(r[i], sc, sim, dst[0] + i * ds);
        }
    }
    for (; ds == 8 && i + 8 <= n; i += 8) {
        Words m[8];
        for (int t = 0; t < 8; t++) {
            row_of_block(r[i + t], sc, sim, &m[t]);
        }
        transpose8(m);
        for (int ln = 0; ln < FFT_LANES; ln++) {
            memcpy(dst[ln] + i * 8, &m[ln], sizeof(Words));
        }
    }
    return i;
}
#else
static inline int64_t
fft_rows_gather(const char **src, int64_t ss, int64_t n, double sgn, CpxL *v)
{
    (void)src, (void)ss, (void)n, (void)sgn, (void)v;
    return 0;
}

static inline int64_t
fft_rows_scatter(const CpxL *r, int64_t n, double sc, double sim, char **dst, int64_t ds)
{
    (void)r, (void)n, (void)sc, (void)sim, (void)dst, (void)ds;
    return 0;
}
#endif

#endif
