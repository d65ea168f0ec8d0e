/* conv_packed.h -- what the packed float32 forward (conv_packed.c) shares with the packed
 * weight gradient (conv_packed_wgrad.c, and its rows in conv_wgrad_rows.c): the engines'
 * target attributes, the column windows of one task (Note [Packed float32 convolution], Note
 * [Compact windows for small images]), the shape of a job over them and the weight gradient
 * by rows.  Private to those three files. */
#ifndef PTL_ATEN_NATIVE_CONV_PACKED_H
#define PTL_ATEN_NATIVE_CONV_PACKED_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#include "conv_impl.h"

#define AVX512 __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma")))
#define AVX2 __attribute__((target("avx2,fma")))

/* The lanes [lo, hi) of a 16-lane mask (empty when hi <= lo). */
static inline __mmask16
lane_mask(int64_t lo, int64_t hi)
{
    lo = lo < 0 ? 0 : lo;
    hi = hi > 16 ? 16 : hi;
    if (hi <= lo) {
        return 0;
    }
    return (__mmask16)(((1u << hi) - 1u) & ~((1u << lo) - 1u));
}

/* The windows of one task's columns (conv_cols_init). */
typedef struct Cols {
    int64_t span;                        /* 1 + the last output pixel's flat index */
    int64_t nq, nblk;                    /* flat indices per block (a multiple of 32; of wq
                                          * by rows), blocks */
    int64_t hq, wq, winst;               /* phase plane height, flat row width; floats per
                                          * window */
    int64_t nph;                         /* windows per channel */
    int compact;                         /* rows cut to the output's width */
    int flat;                            /* the window is the image itself (stride 1, no
                                          * padding): filled by copies */
    int by_rows;                         /* blocks of output rows, slivers from each row's
                                          * start (Note [Row-aligned slivers]) */
    int64_t *off;                        /* kdim tap offsets */
    int64_t *phase;                      /* nph x 3: the windows' (pz, py, px or kx * dx),
                                          * by slot */
} Cols;

/* What the forward and weight-gradient jobs share: the geometry, the column blocks, and the
 * channels (ci in, co out; cpg, opg per group; kdim = cpg * kvol columns per output). */
typedef struct JobShape {
    const ConvGeom *g;
    const Cols *cl;
    int64_t ci, co, cpg, opg, kdim;
} JobShape;

/* Whether the packed kernels run the AVX-512 engine (else AVX2): read once per call. */
int conv_packed_wide(void);

/* Lays out the columns of one (sample, group) of cpg channels, at least min_blocks blocks
 * where there are enough slivers, by rows where rows_ok and that pays (a forward storing
 * straight into its (n, co, cols) output); cl->off is allocated (freed with free).  0, or
 * -1 with the error set. */
int conv_cols_init(Cols *cl, const ConvGeom *g, int64_t cpg, int64_t min_blocks, int rows_ok);
/* Floats of one task's windows. */
size_t conv_cols_floats(const Cols *cl, int64_t cpg);
/* The windows of block [q0, q0 + nq) of one sample and group (cpg planes at x) into buf:
 * the AVX-512 engine's fills, and the AVX2 engine's. */
AVX512 void conv_cols_fill(const Cols *cl, const float *x, const ConvGeom *g, int64_t cpg,
                           int64_t q0, float *buf);
AVX2 void conv_cols_fill2(const Cols *cl, const float *x, const ConvGeom *g, int64_t cpg,
                          int64_t q0, float *buf);
/* The next run of output pixels at or after flat index *q and below end (*q moves to its
 * start); returns its length, 0 when there is none, and sets *pix to its first pixel's
 * index in the output of col[0] x col[1] x col[2] pixels. */
int64_t conv_flat_next_run(const Cols *cl, const int64_t *col, int64_t *q, int64_t end,
                           int64_t *pix);
void conv_job_shape_init(JobShape *sh, const ConvGeom *g, const Cols *cl, int64_t ci,
                         int64_t co);

/* Whether the AVX-512 weight gradient runs by rows (conv_wgrad_rows.c, Note [Weight gradient
 * by rows]), and that weight gradient: conv_packed_wgrad's arguments and result. */
int conv_wgrad_rows_fit(const ConvGeom *g);
AVX512 int conv_wgrad_rows(const float *gy, const float *x, float *gw, const ConvGeom *g,
                           int64_t n, int64_t ci, int64_t co);

#endif
