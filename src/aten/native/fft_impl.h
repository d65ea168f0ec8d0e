/* fft_impl.h -- the lane blocks of native/fft.c (Note [FFT kernel] there) and the vector
 * moves of complex64 rows into and out of them.  Private to fft.c. */
#ifndef PTL_ATEN_NATIVE_FFT_IMPL_H
#define PTL_ATEN_NATIVE_FFT_IMPL_H

#include <stdint.h>
#include <string.h>

#define FFT_LANES 8
#define LANE_INLINE static inline __attribute__((always_inline))

/* Point b of FFT_LANES lines: their real parts, then their imaginary parts, as two vectors
 * (GCC's vector extension; lowered to what the target has). */
typedef double Lanes __attribute__((vector_size(8 * FFT_LANES)));
typedef struct CpxL {
    Lanes re, im;
} CpxL;

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
