/* conv_winograd.c -- float32 3x3 stride-1 convolution by Winograd's minimal filtering,
 * F(4x4, 3x3).  Plays the role of oneDNN's Winograd convolution (which PyTorch's
 * CPU build reaches through mkldnn for such layers when it judges it faster).
 *
 * Note [Winograd convolution]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A 1-D convolution of 4 outputs with a 3-tap kernel g over 6 inputs d is a polynomial
 * product evaluated at 6 points: Y = A^T [(G g) . (B^T d)], with the points 0, 1, -1, 2,
 * -2 and infinity (Lavin and Gray, "Fast algorithms for convolutional neural networks",
 * 2015):
 *
 *     B^T = | 4  0 -5  0  1  0 |   G = |  1/4     0     0  |   A^T = | 1  1  1  1  1  0 |
 *           | 0 -4 -4  1  1  0 |       | -1/6  -1/6  -1/6  |         | 0  1 -1  2 -2  0 |
 *           | 0  4 -4 -1  1  0 |       | -1/6   1/6  -1/6  |         | 0  1  1  4  4  0 |
 *           | 0 -2 -1  2  1  0 |       |  1/24  1/12  1/6  |         | 0  1 -1  8 -8  1 |
 *           | 0  2 -1 -2  1  0 |       |  1/24 -1/12  1/6  |
 *           | 0  4  0 -5  0  1 |       |  0     0     1    |
 *
 * (row i of A^T is the points to the power i, the last column the point at infinity; B^T
 * and G are the interpolation that goes with it).  Nested in both spatial dims, a 4 x 4
 * output tile of one channel pair is Y = A^T [U . V] A with U = G g G^T and V = B^T d B
 * (6 x 6 each, d the tile's 6 x 6 input window), and summed over the input channels the
 * elementwise product becomes 36 matrix products: M[xi] (tiles x co) = V[xi] (tiles x ci)
 * @ U[xi] (ci x co) for each of the 36 coordinates xi.  That is 36 multiply-adds per tile
 * and channel pair instead of 16 * 9 = 144, 4x fewer, paid for by the transforms, which
 * are O(tiles * (ci + co)) and memory-bound: the path wins where the channel counts make
 * the products dominate (see conv_winograd_fits for the crossover).
 *
 * Accuracy: the transforms' constants (up to 8 in A^T, 1/24 in G) scale the rounding
 * errors; in float32 the output's error against a float64 reference is about 1e-6 to
 * 1e-5 of the largest |term|, some ten times the direct sum's (F(6x6, 3x3), with points
 * up to 3 and 1/2, loses another decimal digit and is not used; F(2x2, 3x3) saves 2.25x
 * instead of 4x).  tests/aten/test_conv_winograd.py holds it to rtol 1e-4 of the sum of
 * |terms|.
 *
 * Layout: a task takes whole samples (or bands of tile rows of one sample) of about
 * WINO_TILES tiles, copies their padded input into an interleaved buffer P (pixel, channel
 * rounded up to 8), transforms every tile's window 8 channels at a time into V (36 x
 * tiles x cip), runs the 36 products with the weight's transform packed once per call
 * (ptl_gemm_packed), transforms M (36 x tiles x cop) back to 4 x 4 pixels and stores them
 * with the bias added.  The tasks depend on the shape only and each product row on its own
 * row of V, so the result does not depend on the thread count.
 *
 * Used for the forward of a float32 convolution with a 3x3 kernel, stride 1, dilation 1,
 * one group, and for the input gradient of such a convolution (the convolution of the
 * output gradient with the flipped, transposed weight, padding 2 - p), and for its weight
 * gradient by F(3x3, 4x4) (Note [Winograd weight gradient]), where conv_winograd_fits says
 * each wins.  The transforms are 8-lane vector code, cloned for AVX2
 * (PTL_LOOP_CLONES); the automatic mode takes the path on AVX2 machines only, where the
 * crossover was measured (Note [Winograd crossover]). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../../c10/cpu_features.h"
#include "../../c10/error.h"
#include "../../c10/parallel.h"
#include "../loops.h"
#include "conv_impl.h"
#include "gemm.h"

#define WINO_TILES 96                  /* tiles a task takes at most */
#define WINO_BUF_BYTES (768 * 1024)    /* a task's V and M at most (then fewer tiles) */
#define WINO_XI 36                     /* the transformed coordinates, 6 x 6 */
#define WINO_WB 8                      /* output channels the weight transform takes at once */
#define WINO_WGRAD_CHUNKS 4            /* the weight gradient's chunks at most, */
#define WINO_WGRAD_BYTES (32 << 20)    /* and their sums' bytes at most (then fewer) */

/* Note [Winograd crossover]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~
 * The automatic mode takes Winograd where the output is at least `width` wide, the smaller
 * channel count at least `least` and ci + co at least `sum`, for any row of the engine's
 * table; the portable engine never.  Measured on a Zen 4 EPYC, one thread, batch 32,
 * forward, direct / Winograd time by output width 4, 6, 8, 12, 16, 32 (docs/performance.md,
 * "Winograd's transforms"):
 *   AVX2     16 -> 16  2.1  0.92 1.23 1.41 1.14 0.87
 *            16 -> 32  1.7  0.97 1.23 1.60 1.25 1.27
 *            32 -> 32  1.9  1.41 1.90 1.30 1.33 1.48
 *            48 -> 48  0.9  1.40 1.94 2.12 2.00 2.12
 *   AVX-512  32 -> 32  1.05 1.23 1.02 1.03 1.10 1.22
 *            24 -> 48  0.50 0.55 0.65 1.64 1.31 1.45
 *            32 -> 64  1.04 1.18 1.43 1.75 1.46 1.78
 *            48 -> 48  0.52 1.28 1.56 1.73 1.79 1.67
 *            64 -> 64  1.14 1.31 1.65 1.93 1.59 2.00
 * AVX-512's direct tile is twice as wide, so it keeps more shapes; 8 -> 8 and 16 -> 16
 * stay direct there at every width (0.5-1.0). */
typedef struct WinoRule {
    int64_t width, least, sum;
} WinoRule;

/* the forward and input gradient's, and (WGRAD) the weight gradient's */
static const WinoRule WINO_AVX2_RULES[] = {{8, 16, 48}, {6, 48, 96}};
static const WinoRule WINO_AVX512_RULES[] = {{12, 24, 72}, {8, 32, 96}, {6, 48, 96}};
static const WinoRule WINO_AVX2_WGRAD_RULES[] = {{4, 32, 64}};
static const WinoRule WINO_AVX512_WGRAD_RULES[] = {{4, 24, 64}};

typedef struct WinoRules {
    const WinoRule *rule;
    size_t n;
} WinoRules;

#define WINO_RULES(a) {(a), sizeof(a) / sizeof((a)[0])}

/* [weight gradient][AVX-512] */
static const WinoRules WINO_RULES_OF[2][2] = {
    {WINO_RULES(WINO_AVX2_RULES), WINO_RULES(WINO_AVX512_RULES)},
    {WINO_RULES(WINO_AVX2_WGRAD_RULES), WINO_RULES(WINO_AVX512_WGRAD_RULES)},
};

static int wino_mode = CONV_WINOGRAD_AUTO;

int
conv_winograd_set_mode(int mode)
{
    int old = wino_mode;
    wino_mode = mode;
    return old;
}

int
conv_winograd_fits(const ConvGeom *g, int64_t ci, int64_t co, int pass)
{
    if (wino_mode == CONV_WINOGRAD_NEVER || g->groups != 1 ||
        g->k[0] != 1 || g->k[1] != 3 || g->k[2] != 3 || g->p[0] != 0 || g->img[0] != 1 ||
        g->col[0] != 1 || g->col[1] < 1 || g->col[2] < 1 || ci < 1 || co < 1) {
        return 0;
    }
    for (int i = 1; i < NN_SPATIAL; i++) {
        if (g->s[i] != 1 || g->d[i] != 1) {
            return 0;
        }
    }
    /* The direct path (conv_packed.c) wins with few channels, where the transforms cost more
     * than the products they save, and on small images, where the 4 x 4 tiles are mostly
     * padding: each engine's table of WinoRule (Note [Winograd crossover]). */
    if (wino_mode == CONV_WINOGRAD_ALWAYS) {
        return 1;
    }
    int cap = ptl_cpu_capability();
    const WinoRules *rules = &WINO_RULES_OF[pass == CONV_WINOGRAD_WGRAD][cap >= PTL_CPU_AVX512];
    int64_t least = ci < co ? ci : co;
    for (size_t r = 0; cap >= PTL_CPU_AVX2 && r < rules->n; r++) {
        const WinoRule *u = &rules->rule[r];
        if (g->col[2] >= u->width && least >= u->least && ci + co >= u->sum) {
            return 1;
        }
    }
    return 0;
}

int
conv_winograd_grad_geom(const ConvGeom *g, ConvGeom *t)
{
    *t = *g;
    for (int i = 0; i < NN_SPATIAL; i++) {
        if (g->s[i] != 1 || g->d[i] != 1 || g->p[i] > g->k[i] - 1) {
            return 0;
        }
        t->img[i] = g->col[i];
        t->col[i] = g->img[i];
        t->p[i] = g->k[i] - 1 - g->p[i];
    }
    t->img_numel = g->col_numel;
    t->col_numel = g->img_numel;
    return 1;
}

typedef struct WinoJob {
    const float *x, *bias, *gy;       /* gy: the weight gradient's output gradient */
    float *y, *dw;                    /* dw: the weight gradient's sums, one slab a chunk */
    PtlGemmPackedB *u[WINO_XI];
    int64_t n, ci, co, cip, cop;
    int64_t ih, iw, oh, ow, ph, pw;   /* input, output, padding before */
    int64_t th, tw;                   /* tiles per sample: rows, columns */
    int64_t ipt, rpt, tps;            /* samples a task, tile rows a task, tasks a sample */
    int64_t pw_cols, ph_rows;         /* P's columns and rows per sample */
    int64_t ntasks, nchunks;          /* the weight gradient's tasks, and chunks of them */
} WinoJob;

/* Eight channels of one pixel: the transforms run on these, 8 channels at a time. */
typedef float WinoVec __attribute__((vector_size(32)));
#define WINO_VL 8

/* Eight floats at any float-aligned address: WINO_LOAD and WINO_STORE through this type are
 * single unaligned vector moves (a memcpy into a WinoVec goes through the stack in 16-byte
 * halves, and the whole-vector reload then waits for them). */
typedef float WinoVecU __attribute__((vector_size(32), aligned(4), may_alias));

#define WINO_LOAD(p) (*(const WinoVecU *)(p))
#define WINO_STORE(p, v) (*(WinoVecU *)(p) = (v))

/* The 6-point transform of six vectors: r = B^T d. */
static inline __attribute__((always_inline)) void
wino_bt(const WinoVec d[6], WinoVec r[6])
{
    WinoVec a = d[4] - 4.0f * d[2], b = d[3] - 4.0f * d[1];
    WinoVec c = d[4] - d[2], e = 2.0f * (d[3] - d[1]);
    r[0] = 4.0f * d[0] - 5.0f * d[2] + d[4];
    r[1] = a + b;
    r[2] = a - b;
    r[3] = c + e;
    r[4] = c - e;
    r[5] = 4.0f * d[1] - 5.0f * d[3] + d[5];
}

/* The output transform of six vectors: o = A^T m. */
static inline __attribute__((always_inline)) void
wino_at(const WinoVec m[6], WinoVec o[4])
{
    WinoVec s12 = m[1] + m[2], d12 = m[1] - m[2], s34 = m[3] + m[4], d34 = m[3] - m[4];
    o[0] = m[0] + s12 + s34;
    o[1] = d12 + 2.0f * d34;
    o[2] = s12 + 4.0f * s34;
    o[3] = d12 + 8.0f * d34 + m[5];
}

/* The weight gradient's kernel transform of four vectors: r = G4 g (Note [Winograd weight
 * gradient]). */
static inline __attribute__((always_inline)) void
wino_g4(const WinoVec g[4], WinoVec r[6])
{
    WinoVec e = g[0] + g[2], o = g[1] + g[3];
    WinoVec E = g[0] * (1.0f / 24) + g[2] * (1.0f / 6), O = g[1] * (1.0f / 12) + g[3] * (1.0f / 3);
    r[0] = g[0] * 0.25f;
    r[1] = (e + o) * (-1.0f / 6);
    r[2] = (e - o) * (-1.0f / 6);
    r[3] = E + O;
    r[4] = E - O;
    r[5] = g[3];
}

/* The 2-D transform of 8 channels of one tile's n x n window, n = 6 (f = wino_bt: B^T d B)
 * or 4 (f = wino_g4: G4 g G4^T): src's rows rs floats apart and columns cs apart; the 36
 * results to dst, coordinates xs floats apart. */
static inline __attribute__((always_inline)) void
wino_tile_2d(const float *src, int64_t rs, int64_t cs, int n,
             void (*f)(const WinoVec *, WinoVec *), float *dst, int64_t xs)
{
    WinoVec tmp[6][6];
    for (int c = 0; c < n; c++) {
        WinoVec d[6], r[6];
        for (int k = 0; k < n; k++) {
            d[k] = WINO_LOAD(src + k * rs + c * cs);
        }
        f(d, r);
        for (int k = 0; k < 6; k++) {
            tmp[k][c] = r[k];
        }
    }
    for (int k = 0; k < 6; k++) {
        WinoVec r[6];
        f(tmp[k], r);
        for (int l = 0; l < 6; l++) {
            WINO_STORE(dst + (k * 6 + l) * xs, r[l]);
        }
    }
}

/* The 8 x 8 block whose rows are v[0..8) becomes its columns (v[q] = column q): pairs of
 * rows interleaved, then 4-row columns within each half, then the halves joined (the steps
 * of transpose_block.h's ptl_transpose8_ps, in vector extensions for both clones). */
static inline __attribute__((always_inline)) void
wino_transpose8(WinoVec v[8])
{
    WinoVec t[8], u[8];
    for (int p = 0; p < 8; p += 2) {
        t[p] = __builtin_shufflevector(v[p], v[p + 1], 0, 8, 1, 9, 4, 12, 5, 13);
        t[p + 1] = __builtin_shufflevector(v[p], v[p + 1], 2, 10, 3, 11, 6, 14, 7, 15);
    }
    for (int p = 0; p < 8; p += 4) {
        for (int h = 0; h < 2; h++) {
            u[p + 2 * h] = __builtin_shufflevector(t[p + h], t[p + h + 2], 0, 1, 8, 9, 4, 5, 12,
                                                   13);
            u[p + 2 * h + 1] = __builtin_shufflevector(t[p + h], t[p + h + 2], 2, 3, 10, 11, 6,
                                                       7, 14, 15);
        }
    }
    for (int q = 0; q < 4; q++) {
        v[q] = __builtin_shufflevector(u[q], u[q + 4], 0, 1, 2, 3, 8, 9, 10, 11);
        v[q + 4] = __builtin_shufflevector(u[q], u[q + 4], 4, 5, 6, 7, 12, 13, 14, 15);
    }
}

/* One image row of nc channels (src: channel 0's row, w values; channels cs apart) into an
 * interleaved row (dst: pixel 0, channel 0; pixels ds apart), 8 x 8 blocks transposed in
 * registers, the ragged edges one value at a time. */
static inline __attribute__((always_inline)) void
wino_fill_row(const float *src, int64_t cs, int64_t nc, int64_t w, float *dst, int64_t ds)
{
    int64_t c = 0;
    for (; c + WINO_VL <= nc; c += WINO_VL) {
        int64_t x = 0;
        for (; x + WINO_VL <= w; x += WINO_VL) {
            WinoVec v[8];
            for (int p = 0; p < 8; p++) {
                v[p] = WINO_LOAD(src + (c + p) * cs + x);
            }
            wino_transpose8(v);
            for (int q = 0; q < 8; q++) {
                WINO_STORE(dst + (x + q) * ds + c, v[q]);
            }
        }
        for (; x < w; x++) {
            for (int p = 0; p < 8; p++) {
                dst[x * ds + c + p] = src[(c + p) * cs + x];
            }
        }
    }
    for (; c < nc; c++) {
        for (int64_t x = 0; x < w; x++) {
            dst[x * ds + c] = src[c * cs + x];
        }
    }
}

/* Tile (oy, ox) of sample i, output channels [cb, cb + 8): y = A^T m A + bias from its 36
 * transformed products (m: coordinate 0's 8 values; coordinates xs apart), transposed in
 * registers to 4-pixel rows of each channel; the parts outside the output are dropped. */
static inline __attribute__((always_inline)) void
wino_store_tile(const WinoJob *j, const float *m, int64_t xs, int64_t i, int64_t oy, int64_t ox,
                int64_t cb)
{
    WinoVec tmp[4][6], rows[2][8];
    for (int l = 0; l < 6; l++) {
        WinoVec v[6], o[4];
        for (int k = 0; k < 6; k++) {
            v[k] = WINO_LOAD(m + (k * 6 + l) * xs);
        }
        wino_at(v, o);
        for (int r = 0; r < 4; r++) {
            tmp[r][l] = o[r];
        }
    }
    for (int r = 0; r < 4; r++) {
        wino_at(tmp[r], &rows[r / 2][(r % 2) * 4]);
    }
    wino_transpose8(rows[0]);
    wino_transpose8(rows[1]);
    const int64_t nr = j->oh - oy < 4 ? j->oh - oy : 4, nc = j->ow - ox < 4 ? j->ow - ox : 4;
    const int64_t nq = j->co - cb < WINO_VL ? j->co - cb : WINO_VL;
    for (int64_t q = 0; q < nq; q++) {
        float b = j->bias != NULL ? j->bias[cb + q] : 0.0f;
        float *plane = j->y + ((i * j->co + cb + q) * j->oh + oy) * j->ow + ox;
        for (int h = 0; h < 2 && 2 * h < nr; h++) {
            float px[8];
            WINO_STORE(px, rows[h][q] + b);
            for (int64_t r = 2 * h; r < nr && r < 2 * h + 2; r++) {
                if (nc == 4) {
                    memcpy(plane + r * j->ow, px + (r - 2 * h) * 4, 4 * sizeof(float));
                }
                else {
                    memcpy(plane + r * j->ow, px + (r - 2 * h) * 4, (size_t)nc * sizeof(float));
                }
            }
        }
    }
}

/* The transformed input of one task (samples [i0, i0 + ni), tile rows [ty0, ty0 + nty) of
 * each): V[xi][t] = B^T d B of tile t's 6 x 6 window, through P, the padded windows. */
PTL_LOOP_CLONES static void
wino_input(const WinoJob *j, int64_t i0, int64_t ni, int64_t ty0, int64_t nty, float *P,
           float *V)
{
    const int64_t cip = j->cip, tw = j->tw, pwc = j->pw_cols;
    const int64_t prow = 4 * nty + 2, tiles = ni * nty * tw;
    /* P: the padded windows, interleaved (sample, row, column, channel) */
    const int64_t w = j->iw < pwc - j->pw ? j->iw : pwc - j->pw;
    memset(P, 0, (size_t)(ni * prow * pwc * cip) * sizeof(float));
    for (int64_t s = 0; s < ni; s++) {
        for (int64_t r = 0; r < prow; r++) {
            int64_t iy = 4 * ty0 + r - j->ph;
            if (iy >= 0 && iy < j->ih) {
                wino_fill_row(j->x + ((i0 + s) * j->ci * j->ih + iy) * j->iw, j->ih * j->iw,
                              j->ci, w, P + ((s * prow + r) * pwc + j->pw) * cip, cip);
            }
        }
    }
    /* V[xi][t] = B^T d B of tile t's window, 8 channels at a time */
    for (int64_t s = 0, t = 0; s < ni; s++) {
        for (int64_t ty = 0; ty < nty; ty++) {
            for (int64_t tx = 0; tx < tw; tx++, t++) {
                const float *base = P + ((s * prow + 4 * ty) * pwc + 4 * tx) * cip;
                for (int64_t cb = 0; cb < cip; cb += WINO_VL) {
                    wino_tile_2d(base + cb, pwc * cip, cip, 6, wino_bt, V + t * cip + cb,
                                 tiles * cip);
                }
            }
        }
    }
}

/* One task: samples [i0, i0 + ni), tile rows [ty0, ty0 + nty) of each; P, V, M its
 * buffers (M's columns past co stay zero). */
PTL_LOOP_CLONES static int
wino_task(const WinoJob *j, int64_t i0, int64_t ni, int64_t ty0, int64_t nty, float *P, float *V,
          float *M)
{
    const int64_t cip = j->cip, cop = j->cop, tw = j->tw, tiles = ni * nty * tw;
    wino_input(j, i0, ni, ty0, nty, P, V);
    for (int xi = 0; xi < WINO_XI; xi++) {
        if (ptl_gemm_packed(j->u[xi], tiles, V + xi * tiles * cip, cip, M + xi * tiles * cop,
                            cop, NULL, 0, 0.0) < 0) {
            return -1;
        }
    }
    /* y = A^T m A of each tile plus the bias, 8 output channels at a time */
    for (int64_t s = 0, t = 0; s < ni; s++) {
        for (int64_t ty = 0; ty < nty; ty++) {
            for (int64_t tx = 0; tx < tw; tx++, t++) {
                for (int64_t cb = 0; cb < cop; cb += WINO_VL) {
                    wino_store_tile(j, M + t * cop + cb, tiles * cop, i0 + s, 4 * (ty0 + ty),
                                    4 * tx, cb);
                }
            }
        }
    }
    return 0;
}

/* Task `task`'s samples [*i0, *i0 + *ni) and tile rows [*ty0, *ty0 + *nty). */
static void
wino_task_range(const WinoJob *j, int64_t task, int64_t *i0, int64_t *ni, int64_t *ty0,
                int64_t *nty)
{
    if (j->ipt > 1) {
        *i0 = task * j->ipt;
        *ni = j->n - *i0 < j->ipt ? j->n - *i0 : j->ipt;
        *ty0 = 0;
        *nty = j->th;
    }
    else {
        *i0 = task / j->tps;
        *ni = 1;
        *ty0 = task % j->tps * j->rpt;
        *nty = j->th - *ty0 < j->rpt ? j->th - *ty0 : j->rpt;
    }
}

/* P, V and a task's third buffer (M; the weight gradient's R and Y), for the largest task. */
typedef struct WinoBufs {
    float *P, *V, *M, *R;
} WinoBufs;

static int
wino_bufs_alloc(const WinoJob *j, WinoBufs *b, int wgrad)
{
    int64_t ni = j->ipt, nty = j->rpt, tiles = ni * nty * j->tw;
    b->P = conv_alloc((size_t)(ni * (4 * nty + 2) * j->pw_cols * j->cip) * sizeof(float));
    b->V = conv_alloc((size_t)(WINO_XI * tiles * j->cip) * sizeof(float));
    b->M = conv_alloc((size_t)(WINO_XI * tiles * j->cop) * sizeof(float));
    b->R = wgrad ? conv_alloc((size_t)(16 * tiles * j->cop) * sizeof(float)) : NULL;
    if (b->P == NULL || b->V == NULL || b->M == NULL || (wgrad && b->R == NULL)) {
        return -1;
    }
    memset(b->M, 0, (size_t)(WINO_XI * tiles * j->cop) * sizeof(float));
    return 0;
}

static void
wino_bufs_free(WinoBufs *b)
{
    free(b->P);
    free(b->V);
    free(b->M);
    free(b->R);
}

static int
wino_tasks(void *ctx, int64_t begin, int64_t end)
{
    const WinoJob *j = ctx;
    WinoBufs b;
    int rc = wino_bufs_alloc(j, &b, 0);
    for (int64_t task = begin; task < end && rc == 0; task++) {
        int64_t i0, ni, ty0, nty;
        wino_task_range(j, task, &i0, &ni, &ty0, &nty);
        rc = wino_task(j, i0, ni, ty0, nty, b.P, b.V, b.M);
    }
    wino_bufs_free(&b);
    return rc;
}

/* The weight's transform and packing (wino_weight), a job for the threads */
typedef struct WinoWeightJob {
    WinoJob *j;
    const float *w;
    ConvPackedWeight wkind;
    float *U;
} WinoWeightJob;

/* U[xi] (ci x co) = G g G^T of the kernels of input channels [c0, c1), in double */
PTL_LOOP_CLONES static int
wino_weight_channels(void *ctx, int64_t c0, int64_t c1)
{
    static const double G[6][3] = {
        {1.0 / 4, 0.0, 0.0},           {-1.0 / 6, -1.0 / 6, -1.0 / 6},
        {-1.0 / 6, 1.0 / 6, -1.0 / 6}, {1.0 / 24, 1.0 / 12, 1.0 / 6},
        {1.0 / 24, -1.0 / 12, 1.0 / 6}, {0.0, 0.0, 1.0},
    };
    const WinoWeightJob *wj = ctx;
    const int64_t ci = wj->j->ci, co = wj->j->co;
    const float *w = wj->w;
    const ConvPackedWeight wkind = wj->wkind;
    float *U = wj->U;
    /* WINO_WB output channels at a time, so that the loops over them are vector loops */
    for (int64_t c = c0; c < c1; c++) {
        for (int64_t o0 = 0; o0 < co; o0 += WINO_WB) {
            int64_t no = co - o0 < WINO_WB ? co - o0 : WINO_WB;
            double g[9][WINO_WB] = {{0}}, gg[18][WINO_WB];
            for (int64_t o = 0; o < no; o++) {
                for (int a = 0; a < 3; a++) {
                    for (int b = 0; b < 3; b++) {
                        g[a * 3 + b][o] = wkind == CONV_PACKED_W_PLAIN
                                              ? w[(((o0 + o) * ci + c) * 3 + a) * 3 + b]
                                              : w[((c * co + o0 + o) * 3 + 2 - a) * 3 + 2 - b];
                    }
                }
            }
            for (int k = 0; k < 6; k++) {
                for (int b = 0; b < 3; b++) {
                    for (int o = 0; o < WINO_WB; o++) {
                        gg[k * 3 + b][o] = G[k][0] * g[b][o] + G[k][1] * g[3 + b][o] +
                                           G[k][2] * g[6 + b][o];
                    }
                }
            }
            for (int k = 0; k < 6; k++) {
                for (int l = 0; l < 6; l++) {
                    float v[WINO_WB];
                    for (int o = 0; o < WINO_WB; o++) {
                        v[o] = (float)(gg[k * 3][o] * G[l][0] + gg[k * 3 + 1][o] * G[l][1] +
                                       gg[k * 3 + 2][o] * G[l][2]);
                    }
                    memcpy(U + ((k * 6 + l) * ci + c) * co + o0, v, (size_t)no * sizeof(float));
                }
            }
        }
    }
    return 0;
}

/* U[xi] packed for the products, xi in [x0, x1) */
static int
wino_weight_pack(void *ctx, int64_t x0, int64_t x1)
{
    const WinoWeightJob *wj = ctx;
    const int64_t ci = wj->j->ci, co = wj->j->co;
    for (int64_t xi = x0; xi < x1; xi++) {
        wj->j->u[xi] = ptl_gemm_pack_b(PTL_DTYPE_FLOAT32, ci, co, wj->U + xi * ci * co, co, 1);
        if (wj->j->u[xi] == NULL) {
            return -1;
        }
    }
    return 0;
}

/* U[xi] (ci x co) = G g G^T of each channel pair's kernel, in double; packed for the
 * products.  Both steps run on the threads from WINO_WEIGHT_PARALLEL channel pairs (on one
 * they were a seventh of the 64 -> 64 forward on 8x8, batch 32, and serial before its
 * tasks); each U element and each packing is one task's, so the bits do not change. */
#define WINO_WEIGHT_PARALLEL 1024
static int
wino_weight(WinoJob *j, const float *w, ConvPackedWeight wkind)
{
    const int64_t ci = j->ci, co = j->co;
    WinoWeightJob wj = {j, w, wkind, conv_alloc((size_t)(WINO_XI * ci * co) * sizeof(float))};
    if (wj.U == NULL) {
        return -1;
    }
    int parallel = ci * co >= WINO_WEIGHT_PARALLEL;
    void *tok = ptl_nogil_begin();
    int rc = parallel ? ptl_parallel_for(0, ci, 1, wino_weight_channels, &wj)
                      : wino_weight_channels(&wj, 0, ci);
    if (rc == 0) {
        rc = parallel ? ptl_parallel_for(0, WINO_XI, 1, wino_weight_pack, &wj)
                      : wino_weight_pack(&wj, 0, WINO_XI);
    }
    ptl_nogil_end(tok);
    free(wj.U);
    return rc;
}

/* conv_any_nonfinite, vectorized for AVX2 where the CPU has it */
PTL_LOOP_CLONES static int
wino_any_nonfinite(const float *v, int64_t n)
{
    return conv_any_nonfinite(v, n);
}

/* wino_nonfinite's scan on the threads: from WINO_SCAN_PARALLEL floats (the input's scan was
 * a fortieth of the 64 -> 64 forward on 8x8, batch 32, serial before its tasks), shares of
 * WINO_SCAN_GRAIN */
#define WINO_SCAN_PARALLEL (1 << 16)
#define WINO_SCAN_GRAIN (1 << 14)

typedef struct WinoScan {
    const float *v;
    atomic_int bad;
} WinoScan;

static int
wino_scan_range(void *ctx, int64_t i0, int64_t i1)
{
    WinoScan *s = ctx;
    if (wino_any_nonfinite(s->v + i0, i1 - i0)) {
        atomic_store_explicit(&s->bad, 1, memory_order_relaxed);
    }
    return 0;
}

/* Whether any of v[0, n) is Inf or NaN */
static int
wino_nonfinite(const float *v, int64_t n)
{
    if (n < WINO_SCAN_PARALLEL) {
        return wino_any_nonfinite(v, n);
    }
    WinoScan s = {.v = v};
    atomic_init(&s.bad, 0);
    void *tok = ptl_nogil_begin();
    int rc = ptl_parallel_for(0, n, WINO_SCAN_GRAIN, wino_scan_range, &s);
    ptl_nogil_end(tok);
    return rc == 0 ? atomic_load_explicit(&s.bad, memory_order_relaxed) != 0
                   : wino_any_nonfinite(v, n);
}

/* The job's geometry and its split into tasks of about WINO_TILES tiles (fewer where V and
 * the third buffer would pass WINO_BUF_BYTES): whole samples, or bands of tile rows of one
 * sample.  Returns the number of tasks. */
static int64_t
wino_plan(WinoJob *j, const ConvGeom *g, int64_t n, int64_t ci, int64_t co)
{
    j->n = n;
    j->ci = ci;
    j->co = co;
    j->cip = (ci + WINO_VL - 1) / WINO_VL * WINO_VL;
    j->cop = (co + WINO_VL - 1) / WINO_VL * WINO_VL;
    j->ih = g->img[1];
    j->iw = g->img[2];
    j->oh = g->col[1];
    j->ow = g->col[2];
    j->ph = g->p[1];
    j->pw = g->p[2];
    j->th = (j->oh + 3) / 4;
    j->tw = (j->ow + 3) / 4;
    j->pw_cols = 4 * j->tw + 2;
    int64_t want = WINO_BUF_BYTES / (WINO_XI * (int64_t)sizeof(float) * (j->cip + j->cop));
    want = want > WINO_TILES ? WINO_TILES : want < 12 ? 12 : want;
    if (j->th * j->tw <= want) {
        j->ipt = want / (j->th * j->tw);
        j->rpt = j->th;
        j->tps = 1;
        return (n + j->ipt - 1) / j->ipt;
    }
    j->ipt = 1;
    j->rpt = want / j->tw > 0 ? want / j->tw : 1;
    j->tps = (j->th + j->rpt - 1) / j->rpt;
    return n * j->tps;
}

int
conv_winograd_fwd(const float *x, const float *w, ConvPackedWeight wkind, const float *bias,
                  float *y, const ConvGeom *g, int64_t n, int64_t ci, int64_t co)
{
    /* an Inf would turn whole tiles to NaN (inf - inf in the transforms), where the direct
     * sum gives Inf or NaN at its 3x3 neighbours only: such inputs keep the direct path */
    if (wino_nonfinite(x, n * ci * g->img_numel) || wino_nonfinite(w, 9 * ci * co)) {
        return 1;
    }
    WinoJob j = {.x = x, .bias = bias, .y = y};
    int64_t ntasks = wino_plan(&j, g, n, ci, co);
    int rc = wino_weight(&j, w, wkind);
    if (rc == 0) {
        double per_task = (double)WINO_XI * (double)(j.ipt * j.rpt * j.tw) * (double)(ci * co);
        int64_t grain = per_task >= (1 << 18) ? 1 : (int64_t)((1 << 18) / (per_task + 1.0)) + 1;
        void *tok = ptl_nogil_begin();
        rc = ptl_parallel_for(0, ntasks, grain, wino_tasks, &j);
        ptl_nogil_end(tok);
    }
    for (int xi = 0; xi < WINO_XI; xi++) {
        ptl_gemm_packed_b_free(j.u[xi]);
    }
    return rc;
}

/* ---- the weight gradient ---- */

/* Note [Winograd weight gradient]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * The weight gradient of a 3x3 stride-1 convolution, dw[a][b] = sum over samples and output
 * pixels of gy[y][x] * x[y + a - p][x + b - p], is over one 4 x 4 tile of gy a correlation
 * of the tile's 6 x 6 input window (the forward's) with a 4-tap kernel, gy's tile, giving 3 x
 * 3 outputs: Winograd's F(3x3, 4x4) on the same six points, so the same B^T, with
 *
 *     G4 = |  1/4     0     0     0   |   A3^T = | 1  1  1  1  1  0 |
 *          | -1/6  -1/6  -1/6  -1/6   |          | 0  1 -1  2 -2  0 |
 *          | -1/6   1/6  -1/6   1/6   |          | 0  1  1  4  4  1 |
 *          |  1/24  1/12  1/6   1/3   |
 *          |  1/24 -1/12  1/6  -1/3   |
 *          |  0     0     0     1     |
 *
 * (A3^T: the points' powers 0 to 2, infinity in the last; G4 the interpolation that goes with
 * B^T).  dw = A3^T [sum over tiles of (G4 gy G4^T) . (B^T d B)] A3: the sum over tiles is 36
 * products D[xi] (co x ci) += Y[xi]^T (co x tiles) @ V[xi] (tiles x ci), 36 multiply-adds
 * per tile and channel pair instead of 144, the transforms O(tiles (ci + co)) and the output
 * transform once per call.  The tasks are the forward's (wino_plan); consecutive tasks are
 * grouped into at most WINO_WGRAD_CHUNKS chunks, a number that depends on the shape only,
 * each summing into its own slab of D, and the slabs are added in chunk order, so the result
 * does not depend on the thread count.  The sum (by ranges of D's elements, each one's in
 * chunk order) and the output transform (by blocks of channel pairs) run on the threads
 * too, as two more jobs from WINO_OUT_PARALLEL floats of slabs.  Inputs holding an Inf or a NaN keep the direct path,
 * as in the forward.  Accuracy as the forward's (tests/aten/test_conv_winograd.py). */

/* One weight-gradient task (samples [i0, i0 + ni), tile rows [ty0, ty0 + nty)): V as the
 * forward's, R the output gradient's tiles, Y[xi][t] = G4 gy G4^T of tile t, and D[xi] +=
 * Y[xi]^T V[xi] (D written, not added to, when beta is 0). */
PTL_LOOP_CLONES static int
wino_wgrad_task(const WinoJob *j, int64_t i0, int64_t ni, int64_t ty0, int64_t nty,
                const WinoBufs *b, float *D, double beta)
{
    const int64_t cip = j->cip, cop = j->cop, tw = j->tw, rw = 4 * tw, tiles = ni * nty * tw;
    wino_input(j, i0, ni, ty0, nty, b->P, b->V);
    /* R: gy's tiles, interleaved (sample, row, column, channel), zeros past the output */
    memset(b->R, 0, (size_t)(16 * tiles * cop) * sizeof(float));
    for (int64_t s = 0; s < ni; s++) {
        for (int64_t r = 0; r < 4 * nty && 4 * ty0 + r < j->oh; r++) {
            wino_fill_row(j->gy + ((i0 + s) * j->co * j->oh + 4 * ty0 + r) * j->ow,
                          j->oh * j->ow, j->co, j->ow, b->R + (s * 4 * nty + r) * rw * cop, cop);
        }
    }
    /* Y[xi][t] = G4 gy G4^T of tile t, 8 channels at a time */
    for (int64_t s = 0, t = 0; s < ni; s++) {
        for (int64_t ty = 0; ty < nty; ty++) {
            for (int64_t tx = 0; tx < tw; tx++, t++) {
                const float *base = b->R + ((s * 4 * nty + 4 * ty) * rw + 4 * tx) * cop;
                for (int64_t cb = 0; cb < cop; cb += WINO_VL) {
                    wino_tile_2d(base + cb, rw * cop, cop, 4, wino_g4, b->M + t * cop + cb,
                                 tiles * cop);
                }
            }
        }
    }
    for (int xi = 0; xi < WINO_XI; xi++) {
        if (ptl_gemm_f32(j->co, j->ci, tiles, 1.0, b->M + xi * tiles * cop, 1, cop,
                         b->V + xi * tiles * cip, cip, 1, beta, D + xi * j->co * j->ci,
                         j->ci) < 0) {
            return -1;
        }
    }
    return 0;
}

/* Chunks [begin, end): each one's tasks in order into its slab of j->dw. */
static int
wino_wgrad_chunks(void *ctx, int64_t begin, int64_t end)
{
    const WinoJob *j = ctx;
    WinoBufs b;
    int rc = wino_bufs_alloc(j, &b, 1);
    for (int64_t c = begin; c < end && rc == 0; c++) {
        int64_t t0 = c * j->ntasks / j->nchunks, t1 = (c + 1) * j->ntasks / j->nchunks;
        float *D = j->dw + c * WINO_XI * j->co * j->ci;
        for (int64_t task = t0; task < t1 && rc == 0; task++) {
            int64_t i0, ni, ty0, nty;
            wino_task_range(j, task, &i0, &ni, &ty0, &nty);
            rc = wino_wgrad_task(j, i0, ni, ty0, nty, &b, D, task > t0 ? 1.0 : 0.0);
        }
    }
    wino_bufs_free(&b);
    return rc;
}

/* The output's two steps run on the threads from this many floats of D's slabs: on one
 * they were a ninth of the 64 -> 64 weight gradient on 8x8 (batch 32), which a second
 * thread then waited out.  Each step's share: WINO_OUT_GRAIN floats of the slab sum,
 * WINO_OUT_GRAIN / WINO_XI / WINO_WB blocks of the transform. */
#define WINO_OUT_PARALLEL (1 << 16)
#define WINO_OUT_GRAIN (1 << 13)

/* D's slab 0 += the other chunks' slabs, in chunk order, floats [i0, i1) */
PTL_LOOP_CLONES static int
wino_wgrad_sum(void *ctx, int64_t i0, int64_t i1)
{
    const WinoJob *j = ctx;
    const int64_t slab = WINO_XI * j->co * j->ci;
    float *D = j->dw;
    for (int64_t c = 1; c < j->nchunks; c++) {
        for (int64_t i = i0; i < i1; i++) {
            D[i] += D[c * slab + i];
        }
    }
    return 0;
}

/* gw (co, ci, 3, 3) = A3^T D A3 for channel pairs [WINO_WB * b0, WINO_WB * b1), D the
 * chunks' slabs added (wino_wgrad_sum); WINO_WB channel pairs at a time, so that the loops
 * over them are vector loops. */
PTL_LOOP_CLONES static void
wino_wgrad_output(const WinoJob *j, float *gw, int64_t b0, int64_t b1)
{
    const int64_t pairs = j->co * j->ci;
    const float *D = j->dw;
    for (int64_t p0 = WINO_WB * b0; p0 < pairs && p0 < WINO_WB * b1; p0 += WINO_WB) {
        int64_t np = pairs - p0 < WINO_WB ? pairs - p0 : WINO_WB;
        float m[6][6][WINO_WB] = {{{0}}}, t[3][6][WINO_WB], o[3][3][WINO_WB];
        for (int xi = 0; xi < WINO_XI; xi++) {
            memcpy(m[xi / 6][xi % 6], D + xi * pairs + p0, (size_t)np * sizeof(float));
        }
        /* t = A3^T m over the rows, then o = t A3 over the columns */
        for (int l = 0; l < 6; l++) {
            for (int p = 0; p < WINO_WB; p++) {
                float s12 = m[1][l][p] + m[2][l][p], s34 = m[3][l][p] + m[4][l][p];
                t[0][l][p] = m[0][l][p] + s12 + s34;
                t[1][l][p] = (m[1][l][p] - m[2][l][p]) + 2.0f * (m[3][l][p] - m[4][l][p]);
                t[2][l][p] = s12 + 4.0f * s34 + m[5][l][p];
            }
        }
        for (int a = 0; a < 3; a++) {
            for (int p = 0; p < WINO_WB; p++) {
                float s12 = t[a][1][p] + t[a][2][p], s34 = t[a][3][p] + t[a][4][p];
                o[a][0][p] = t[a][0][p] + s12 + s34;
                o[a][1][p] = (t[a][1][p] - t[a][2][p]) + 2.0f * (t[a][3][p] - t[a][4][p]);
                o[a][2][p] = s12 + 4.0f * s34 + t[a][5][p];
            }
        }
        for (int64_t p = 0; p < np; p++) {
            for (int e = 0; e < 9; e++) {
                gw[(p0 + p) * 9 + e] = o[e / 3][e % 3][p];
            }
        }
    }
}

typedef struct WinoOutJob {
    const WinoJob *j;
    float *gw;
} WinoOutJob;

static int
wino_wgrad_output_blocks(void *ctx, int64_t b0, int64_t b1)
{
    const WinoOutJob *o = ctx;
    wino_wgrad_output(o->j, o->gw, b0, b1);
    return 0;
}

int
conv_winograd_wgrad(const float *gy, const float *x, float *gw, const ConvGeom *g, int64_t n,
                    int64_t ci, int64_t co)
{
    if (wino_nonfinite(x, n * ci * g->img_numel) || wino_nonfinite(gy, n * co * g->col_numel)) {
        return 1;
    }
    WinoJob j = {.x = x, .gy = gy};
    j.ntasks = wino_plan(&j, g, n, ci, co);
    int64_t slab = WINO_XI * ci * co, fit = WINO_WGRAD_BYTES / (slab * (int64_t)sizeof(float));
    j.nchunks = j.ntasks < WINO_WGRAD_CHUNKS ? j.ntasks : WINO_WGRAD_CHUNKS;
    j.nchunks = j.nchunks < fit ? j.nchunks : fit > 1 ? fit : 1;
    if ((j.dw = conv_alloc((size_t)(j.nchunks * slab) * sizeof(float))) == NULL) {
        return -1;
    }
    int64_t blocks = (ci * co + WINO_WB - 1) / WINO_WB;
    WinoOutJob o = {&j, gw};
    void *tok = ptl_nogil_begin();
    int rc = ptl_parallel_for(0, j.nchunks, 1, wino_wgrad_chunks, &j);
    if (rc == 0 && j.nchunks * slab >= WINO_OUT_PARALLEL) {
        rc = ptl_parallel_for(0, slab, WINO_OUT_GRAIN, wino_wgrad_sum, &j);
        rc = rc < 0 ? rc
                    : ptl_parallel_for(0, blocks, WINO_OUT_GRAIN / (WINO_XI * WINO_WB),
                                       wino_wgrad_output_blocks, &o);
    }
    else if (rc == 0) {
        wino_wgrad_sum(&j, 0, slab);
        wino_wgrad_output_blocks(&o, 0, blocks);
    }
    ptl_nogil_end(tok);
    free(j.dw);
    return rc;
}
