/* conv_wgrad_rows.c -- the float32 convolution weight gradient by output rows, on AVX-512:
 * the sum over pixels vectorized along the rows of the output gradient, against a
 * zero-padded copy of the input whose rows are split into the phases of the stride.  The
 * alternative to the tiles of conv_packed_wgrad.c (Note [Packed weight gradient]) where the
 * output rows fill the vectors; with them it plays the role of oneDNN's direct
 * backward-weights kernels under ATen/native/mkldnn/Conv.cpp.
 *
 * Note [Weight gradient by rows]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * gw[o][p] = sum over samples and output pixels q of gy[o][q] * x[q + tap p].  The tiles
 * (Note [Packed weight gradient]) vectorize over output channels: they transpose the output
 * gradient, fill windows of the image, compute the dropped flat indices past each row's
 * end, and with few taps compute 8 or 16 of them for kdim.  Here the sum over pixels is
 * vectorized instead: a task is MO output channels of a group and a block of MP taps, its
 * MO x MP accumulators hold 16 partial sums each (one per lane), and per output row and 16
 * of its pixels it loads the channels' output gradient and, per tap, the 16 input elements
 * the tap reads, one multiply-add per channel: MO + MP loads for MO * MP multiply-adds, no
 * windows, no transposes, no dropped pixels but those that round a row up to 16.
 *
 * The input is read from a copy, per block of samples and group, of the padded image each
 * tap reads: its rows along z and y as far as the taps reach (zeros in the padding), each
 * row split into the sx phases of the stride along it (sx = 1 or 2; phase ph holds padded
 * columns ph, ph + sx, ...), each phase wq = cols + the largest shift of a tap floats long.
 * Tap (kz, ky, kx) of output pixel (oz, oy, ox) is then element ox + kx * dx / sx of phase
 * kx * dx % sx of copy row (oz * sz + kz * dz, oy * sy + ky * dy): 16 consecutive pixels
 * are one load at a fixed offset from the output row's start, whatever the stride, the
 * padding or the border.  Only a row's last vector, where the row does not fill it, is
 * masked (the output gradient's lanes and the input's: a lane past the row reads nothing,
 * so an Inf there cannot reach a tap that never reads it).  Reading the image itself
 * instead, through masked loads per tap and vector and masks for the border rows, ran the
 * 32x32 16 -> 16 3x3 weight gradient in 1.79 ms, from the copy in 1.64-1.70 (one thread,
 * Zen 4); the copy also takes the stride 2 along the rows, which the image's rows cannot.
 *
 * Tasks: up to WG_ROWS_KDIM taps a group, one block of all of them and three output
 * channels a task (two above WG_ROWS_WIDE_KDIM taps, to keep the accumulators in
 * registers); above, blocks of at most WG_ROWS_SPLIT_MP taps (the taps cut into
 * ceil(kdim / WG_ROWS_SPLIT_MP) nearly equal blocks) and four channels a task (six
 * channels of four taps, five of five and three of eight ran the 16 -> 16 and 16 -> 32
 * benchmarks 14-100% slower).  The tasks pass over blocks of samples whose copy takes
 * WG_ROWS_BLOCK_BYTES, but at least WG_ROWS_RUN output row vectors: a task loads and
 * stores its accumulators once a block, which cost a 16-row run a third of its time (the
 * 64 -> 128 3x3 stride-2 weight gradient on 32x32, blocks of one sample, ran 0.80x PyTorch
 * against the tiles' 0.86x; of four samples 0.85x).  Each thread copies the block of each
 * group its tasks take and runs them all over it, the accumulators kept between blocks.  On
 * one thread the tasks go by sets of output channels (a set's output gradient stays in L1
 * over its blocks of taps) and the whole group is copied at once; on several they go by
 * blocks of taps, and each thread copies only the input channels its blocks read: by sets,
 * both threads copied every channel, a tenth of the 16 -> 16 weight gradient's one-thread
 * time (32x32, stride 1) and a seventh of the 16 -> 32 stride-2 one's, done twice.
 * Each lane sums its pixels in sample and row order and the lanes are added at the end,
 * whatever the threads: a task owns its outputs.
 *
 * A row of cols pixels takes ceil(cols / 16) vectors, so this runs where they are at least
 * WG_ROWS_NUM / WG_ROWS_DEN full (26 of 32 lanes for 28x28; 16 x 16 outputs fill them, 8 x
 * 8 ones do not), for a stride along the rows of 1 or 2. */
#include <stdlib.h>
#include <string.h>

#include "../../c10/error.h"
#include "../../c10/parallel.h"
#include "conv_packed.h"

#define WG_ROWS_KDIM 12                  /* at most 12 taps a group in one block */
#define WG_ROWS_WIDE_KDIM 9              /* up to 9 taps, 3 output channels a task (27
                                          * accumulators), else 2 */
#define WG_ROWS_SPLIT_MP 6               /* more taps: blocks of at most 6 taps, 4 output
                                          * channels a task (24 accumulators) */
#define WG_ROWS_NUM 3                    /* output rows filling at least 3/4 of */
#define WG_ROWS_DEN 4                    /* their vectors */
#define WG_ROWS_BLOCK_BYTES (512 * 1024) /* the copy of a block of samples at most, */
#define WG_ROWS_RUN 64                   /* unless it has fewer row vectors */

/* The output channels a task of kdim taps takes, at most ROWS_MO_MAX: its accumulators
 * stay in registers.  (The arrays of the always-inline bodies below are ROWS_MO_MAX long:
 * sized by their MO parameter they would be variable-length arrays, on the stack.) */
#define ROWS_MO_MAX 4
#define ROWS_MP_MAX 12                   /* WG_ROWS_KDIM */
#define ROWS_PLAIN_ACC 24                /* whole vectors by plain loads up to 24
                                          * accumulators (rows_chunk) */

typedef struct RowsJob {
    const ConvGeom *g;
    const float *gy, *x;
    float *acc;                          /* tasks x mo x kb x 16 partial sums */
    int64_t n, ci, co, cpg, opg, kdim, nb, ntasks;
    int64_t mo;                          /* output channels a task (rows_mo) */
    int64_t ntb, kb;                     /* blocks of taps, taps a block at most */
    int64_t sx, wq;                      /* phases of a copy row, floats a phase */
    int64_t ext[2];                      /* copy rows along z and y */
    int64_t plane;                       /* floats of one channel's copy */
    const int64_t *toff;                 /* per tap: its element in the copy from the
                                          * output row's first pixel's */
    const __mmask16 *vmask;              /* rows_copy's masks */
    __mmask16 full;                      /* every lane (rows_chunk) */
    int by_taps;                         /* the tasks' order (rows_task) */
} RowsJob;

static inline int
rows_mo(int64_t kdim)
{
    return kdim > WG_ROWS_KDIM ? ROWS_MO_MAX : kdim <= WG_ROWS_WIDE_KDIM ? 3 : 2;
}

/* Task t's group, first output channel and block of taps.  On one thread a group's tasks
 * go set of output channels by set, each set's blocks of taps in turn (a set's output
 * gradient stays in L1 while its tasks run); on several, block of taps by block, each
 * block's sets in turn, so that a thread's share of the tasks reads a share of the input
 * channels and copies only those (rows_tasks).  A task owns its outputs: the order does not
 * change the result. */
static inline void
rows_task(const RowsJob *j, int64_t t, int64_t *grp, int64_t *o0, int64_t *tb)
{
    const int64_t nset = (j->opg + j->mo - 1) / j->mo, u = t % (nset * j->ntb);
    *grp = t / (nset * j->ntb);
    *tb = j->by_taps ? u / nset : u % j->ntb;
    *o0 = *grp * j->opg + (j->by_taps ? u % nset : u / j->ntb) * j->mo;
}

/* The first tap of block tb (tb = ntb: kdim). */
static inline int64_t
rows_block_tap(const RowsJob *j, int64_t tb)
{
    return tb * j->kdim / j->ntb;
}

int
conv_wgrad_rows_fit(const ConvGeom *g)
{
    int64_t cols = g->col[2], lanes = (cols + 15) / 16 * 16;
    return (g->s[2] == 1 || g->s[2] == 2) && cols * WG_ROWS_DEN >= lanes * WG_ROWS_NUM;
}

/* The copy (Note [Weight gradient by rows]) of channels [c0, c1) of group grp of samples
 * [n0, n1) into buf:
 * buf[((e * cpg + c) * ext[0] * ext[1] + z * ext[1] + y) * sx * wq + ph * wq + i] = the
 * image of channel c of sample n0 + e at (z - p0, y - p1, i * sx + ph - p2), zero outside
 * it.  Vector v of a phase row reads the image row's 16 * sx elements from v * 16 * sx - p2,
 * 16 at a time through vmask[v * sx + i] (the same for every row); the last is stored
 * through a mask, so that it stops at the phase row's end. */
AVX512 static void
rows_copy(const RowsJob *j, int64_t n0, int64_t n1, int64_t grp, int64_t c0, int64_t c1,
          float *buf)
{
    const ConvGeom *g = j->g;
    const int64_t width = g->img[2], wq = j->wq, nv = (wq + 15) / 16, sx = j->sx;
    const __mmask16 last = lane_mask(0, wq - (nv - 1) * 16), *vm = j->vmask;
    const __m512i evens = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26,
                                            28, 30);
    const __m512i odds = _mm512_add_epi32(evens, _mm512_set1_epi32(1));
    for (int64_t n = n0; n < n1; n++) {
        for (int64_t c = c0; c < c1; c++) {
            const float *xc = j->x + (n * j->ci + grp * j->cpg + c) * g->img_numel;
            float *d = buf + ((n - n0) * j->cpg + c) * j->plane;
            for (int64_t z = 0; z < j->ext[0]; z++) {
                for (int64_t y = 0; y < j->ext[1]; y++, d += sx * wq) {
                    int64_t iz = z - g->p[0], iy = y - g->p[1];
                    if (iz < 0 || iz >= g->img[0] || iy < 0 || iy >= g->img[1]) {
                        memset(d, 0, (size_t)(sx * wq) * sizeof(float));
                        continue;
                    }
                    /* masked-off lanes are not read, so the address may lie outside the row */
                    const char *src = (const char *)(xc + (iz * g->img[1] + iy) * width -
                                                     g->p[2]);
                    for (int64_t v = 0; v < nv; v++) {
                        const __mmask16 st = v + 1 < nv ? (__mmask16)0xffff : last;
                        __m512 lo = _mm512_maskz_loadu_ps(vm[v * sx], src + v * 64 * sx);
                        if (sx == 1) {
                            _mm512_mask_storeu_ps(d + v * 16, st, lo);
                            continue;
                        }
                        __m512 hi = _mm512_maskz_loadu_ps(vm[2 * v + 1], src + v * 128 + 64);
                        _mm512_mask_storeu_ps(d + v * 16, st,
                                              _mm512_permutex2var_ps(lo, evens, hi));
                        _mm512_mask_storeu_ps(d + wq + v * 16, st,
                                              _mm512_permutex2var_ps(lo, odds, hi));
                    }
                }
            }
        }
    }
}

/* One vector of an output row, lanes m (where `masked`, else all): the output gradient of
 * the task's channels at gr + ocl[c], the taps' input at xr + off[p].  With more than
 * ROWS_PLAIN_ACC accumulators gcc makes plain loads of the input memory operands of the
 * multiply-adds, one load per channel (the 1 -> 32 weight gradient ran 1.6x slower): masked
 * loads it keeps in a register. */
AVX512 static inline __attribute__((always_inline)) void
rows_chunk(const int MP, const int MO, const int masked, __mmask16 m, const float *gr,
           const int64_t *ocl, const float *xr, const int64_t *off, __m512 (*a)[ROWS_MP_MAX])
{
    __m512 v[ROWS_MO_MAX];
    for (int c = 0; c < MO; c++) {
        v[c] = masked ? _mm512_maskz_loadu_ps(m, gr + ocl[c]) : _mm512_loadu_ps(gr + ocl[c]);
    }
    for (int p = 0; p < MP; p++) {
        const __m512 xv = masked ? _mm512_maskz_loadu_ps(m, xr + off[p])
                                 : _mm512_loadu_ps(xr + off[p]);
        for (int c = 0; c < MO; c++) {
            a[c][p] = _mm512_fmadd_ps(v[c], xv, a[c][p]);
        }
    }
}

/* Task t (MO output channels, taps [p0, p0 + MP)) over samples [n0, n1), whose copy is
 * buf: accumulators from and back to j->acc. */
AVX512 static inline __attribute__((always_inline)) void
rows_body(const int MP, const int MO, const RowsJob *j, const float *buf, int64_t t, int64_t p0,
          int64_t n0, int64_t n1)
{
    const ConvGeom *g = j->g;
    const int64_t L = g->col_numel, cols = g->col[2], pitch = j->sx * j->wq;
    int64_t grp, o0, tb;
    rows_task(j, t, &grp, &o0, &tb);
    int64_t ocl[ROWS_MO_MAX], off[ROWS_MP_MAX];
    for (int c = 0; c < MO; c++) {   /* past the group: its last channel again */
        ocl[c] = (o0 + c < (grp + 1) * j->opg ? o0 + c : (grp + 1) * j->opg - 1) * L;
    }
    for (int p = 0; p < MP; p++) {
        off[p] = j->toff[p0 + p];
    }
    float *acc = j->acc + t * MO * j->kb * 16;
    __m512 a[ROWS_MO_MAX][ROWS_MP_MAX];
    for (int c = 0; c < MO; c++) {
        for (int p = 0; p < MP; p++) {
            a[c][p] = _mm512_loadu_ps(acc + (c * MP + p) * 16);
        }
    }
    const int64_t xstep = g->s[1] * pitch, nfull = cols / 16;
    const __mmask16 tail = lane_mask(0, cols - nfull * 16);
    for (int64_t n = n0; n < n1; n++) {
        for (int64_t oz = 0; oz < g->col[0]; oz++) {
            const float *xr = buf + (n - n0) * j->cpg * j->plane +
                              oz * g->s[0] * j->ext[1] * pitch;
            const float *gr = j->gy + n * j->co * L + oz * g->col[1] * cols;
            for (int64_t oy = 0; oy < g->col[1]; oy++, xr += xstep, gr += cols) {
                for (int64_t ch = 0; ch < nfull; ch++) {
                    rows_chunk(MP, MO, MO * MP > ROWS_PLAIN_ACC, j->full, gr + ch * 16, ocl,
                               xr + ch * 16, off, a);
                }
                if (tail != 0) {
                    rows_chunk(MP, MO, 1, tail, gr + nfull * 16, ocl, xr + nfull * 16, off, a);
                }
            }
        }
    }
    for (int c = 0; c < MO; c++) {
        for (int p = 0; p < MP; p++) {
            _mm512_storeu_ps(acc + (c * MP + p) * 16, a[c][p]);
        }
    }
}

#define ROWS_CASE(MP)                                                                     \
    case MP:                                                                              \
        rows_body(MP, rows_mo(MP), j, buf, t, 0, n0, n1);                                 \
        break
#define ROWS_SPLIT_CASE(MP)                                                               \
    case MP:                                                                              \
        rows_body(MP, ROWS_MO_MAX, j, buf, t, p0, n0, n1);                                \
        break

/* Tasks [t0, t1), one block of samples at a time, the copy of each input channel made when
 * a task first reads it (the tasks of a group read their channels in order). */
AVX512 static int
rows_tasks(void *ctx, int64_t t0, int64_t t1)
{
    const RowsJob *j = (const RowsJob *)ctx;
    float *buf = conv_alloc((size_t)(j->nb * j->cpg * j->plane) * sizeof(float));
    if (buf == NULL) {
        return -1;
    }
    for (int64_t n0 = 0; n0 < j->n; n0 += j->nb) {
        int64_t n1 = j->n - n0 < j->nb ? j->n : n0 + j->nb, copied = -1, c_end = 0;
        for (int64_t t = t0; t < t1; t++) {
            int64_t grp, o0, tb;
            rows_task(j, t, &grp, &o0, &tb);
            int64_t p0 = rows_block_tap(j, tb), p1 = rows_block_tap(j, tb + 1);
            /* by taps: the channels of the block's taps; else the group's at once */
            int64_t c0 = j->by_taps ? p0 / j->g->kvol : 0;
            int64_t c1 = j->by_taps ? (p1 - 1) / j->g->kvol + 1 : j->cpg;
            if (grp != copied) {
                copied = grp;
                c_end = c0;
            }
            if (c1 > c_end) {
                rows_copy(j, n0, n1, grp, c_end, c1, buf);
                c_end = c1;
            }
            if (j->ntb > 1) {
                switch (p1 - p0) {
                    ROWS_SPLIT_CASE(4);
                    ROWS_SPLIT_CASE(5);
                    ROWS_SPLIT_CASE(6);
                    default:
                        break;
                }
                continue;
            }
            switch (j->kdim) {
                ROWS_CASE(1);
                ROWS_CASE(2);
                ROWS_CASE(3);
                ROWS_CASE(4);
                ROWS_CASE(5);
                ROWS_CASE(6);
                ROWS_CASE(7);
                ROWS_CASE(8);
                ROWS_CASE(9);
                ROWS_CASE(10);
                ROWS_CASE(11);
                ROWS_CASE(12);
                default:
                    break;
            }
        }
    }
    free(buf);
    return 0;
}
#undef ROWS_CASE
#undef ROWS_SPLIT_CASE

AVX512 int
conv_wgrad_rows(const float *gy, const float *x, float *gw, const ConvGeom *g, int64_t n,
                int64_t ci, int64_t co)
{
    RowsJob j = {.g = g, .gy = gy, .x = x, .n = n, .ci = ci, .co = co};
    j.cpg = ci / g->groups;
    j.opg = co / g->groups;
    j.kdim = j.cpg * g->kvol;
    j.mo = rows_mo(j.kdim);
    j.ntb = j.kdim > WG_ROWS_KDIM ? (j.kdim + WG_ROWS_SPLIT_MP - 1) / WG_ROWS_SPLIT_MP : 1;
    j.kb = (j.kdim + j.ntb - 1) / j.ntb;
    j.ntasks = g->groups * ((j.opg + j.mo - 1) / j.mo) * j.ntb;
    /* the copy: the rows the taps reach along z and y, each phase as wide as the output
     * row plus the largest shift of a tap */
    j.sx = g->s[2];
    for (int i = 0; i < 2; i++) {
        j.ext[i] = (g->col[i] - 1) * g->s[i] + (g->k[i] - 1) * g->d[i] + 1;
    }
    j.wq = g->col[2] + (g->k[2] - 1) * g->d[2] / j.sx;
    j.plane = j.ext[0] * j.ext[1] * j.sx * j.wq;
    int64_t per = j.cpg * j.plane * (int64_t)sizeof(float);
    /* samples a block: its copy within WG_ROWS_BLOCK_BYTES, but at least WG_ROWS_RUN row
     * vectors, and no more than the batch */
    int64_t run = g->col[0] * g->col[1] * ((g->col[2] + 15) / 16);
    j.nb = WG_ROWS_BLOCK_BYTES / per;
    j.nb = j.nb * run >= WG_ROWS_RUN ? j.nb : (WG_ROWS_RUN + run - 1) / run;
    j.nb = j.nb < n ? j.nb : n;
    const int64_t nv = (j.wq + 15) / 16;
    int64_t *toff = conv_alloc((size_t)j.kdim * sizeof(int64_t));
    __mmask16 *vmask = conv_alloc((size_t)(2 * nv) * sizeof(__mmask16));
    j.acc = conv_alloc((size_t)(j.ntasks * j.mo * j.kb * 16) * sizeof(float));
    int rc = -1;
    if (toff == NULL || vmask == NULL || j.acc == NULL) {
        goto done;
    }
    for (int64_t v = 0; v < 2 * nv; v++) {
        /* the image column of the vector's lane 0 */
        int64_t at = v * 16 - g->p[2];
        vmask[v] = lane_mask(-at, g->img[2] - at);
    }
    j.vmask = vmask;
    j.full = (__mmask16)0xffff;
    for (int64_t p = 0; p < j.kdim; p++) {
        int64_t kk = p % g->kvol, kx = kk % g->k[2], ky = kk / g->k[2] % g->k[1];
        int64_t kz = kk / (g->k[1] * g->k[2]), sh = kx * g->d[2];
        toff[p] = (p / g->kvol) * j.plane +
                  ((kz * g->d[0] * j.ext[1] + ky * g->d[1]) * j.sx + sh % j.sx) * j.wq +
                  sh / j.sx;
    }
    j.toff = toff;
    memset(j.acc, 0, (size_t)(j.ntasks * j.mo * j.kb * 16) * sizeof(float));
    double work = (double)n * (double)co * (double)j.kdim * (double)g->col_numel;
    int parallel = work >= (1 << 18) && ptl_get_num_threads() > 1 && !ptl_in_parallel_region();
    j.by_taps = parallel;
    void *tok = ptl_nogil_begin();
    rc = parallel ? ptl_parallel_for(0, j.ntasks, 1, rows_tasks, &j)
                  : rows_tasks(&j, 0, j.ntasks);
    ptl_nogil_end(tok);
    for (int64_t t = 0; rc == 0 && t < j.ntasks; t++) {
        int64_t grp, o0, tb;
        rows_task(&j, t, &grp, &o0, &tb);
        int64_t p0 = rows_block_tap(&j, tb), mp = rows_block_tap(&j, tb + 1) - p0;
        const float *acc = j.acc + t * j.mo * j.kb * 16;
        for (int64_t h = 0; h < j.mo && o0 + h < (grp + 1) * j.opg; h++) {
            for (int64_t p = 0; p < mp; p++) {
                gw[(o0 + h) * j.kdim + p0 + p] =
                    _mm512_reduce_add_ps(_mm512_loadu_ps(acc + (h * mp + p) * 16));
            }
        }
    }
done:
    free(toff);
    free(vmask);
    free(j.acc);
    return rc;
}
