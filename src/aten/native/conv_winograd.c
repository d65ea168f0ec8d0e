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
 * output gradient with the flipped, transposed weight, padding 2 - p), where
 * conv_winograd_fits says it wins.  The transforms are 8-lane vector code, cloned for AVX2
 * (PTL_LOOP_CLONES); the automatic mode takes the path on AVX2 machines only, where the
 * crossover was measured. */
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
#define WINO_MIN_CHANNELS 32           /* auto: ci and co at least, */
#define WINO_MIN_WIDTH 8               /* outputs at least this wide (AVX2); AVX-512: */
#define WINO_WIDE_MIN_WIDTH 12         /* outputs at least this wide and */
#define WINO_WIDE_MIN_SUM 96           /* ci + co at least (the measured crossovers) */

static int wino_mode = CONV_WINOGRAD_AUTO;

int
conv_winograd_set_mode(int mode)
{
    int old = wino_mode;
    wino_mode = mode;
    return old;
}

int
conv_winograd_fits(const ConvGeom *g, int64_t ci, int64_t co)
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
     * padding.  Measured on a Zen 4 EPYC, batch 32, forward, direct / Winograd time: AVX2
     * 8 -> 8 0.51-0.54, 16 -> 16 0.77-0.78, 16 -> 64 0.89, 32 -> 32 1.32-1.36, 64 -> 64 on 8x8
     * 1.25 and on 4x4 0.98; AVX-512 (its direct tile is twice as wide) 32 -> 32 0.88-0.97,
     * 32 -> 64 1.06-1.38, 48 -> 48 1.39, 64 -> 64 1.21-1.50 from 12x12 up, 0.90 on 8x8,
     * 256 -> 256 0.98 on 8x8 and 0.41 on 4x4. */
    int64_t least = ci < co ? ci : co;
    int cap = ptl_cpu_capability();
    if (wino_mode == CONV_WINOGRAD_ALWAYS) {
        return 1;
    }
    if (cap >= PTL_CPU_AVX512) {
        return least >= WINO_MIN_CHANNELS && ci + co >= WINO_WIDE_MIN_SUM &&
               g->col[2] >= WINO_WIDE_MIN_WIDTH;
    }
    return cap >= PTL_CPU_AVX2 && least >= WINO_MIN_CHANNELS && g->col[2] >= WINO_MIN_WIDTH;
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
    const float *x, *bias;
    float *y;
    PtlGemmPackedB *u[WINO_XI];
    int64_t n, ci, co, cip, cop;
    int64_t ih, iw, oh, ow, ph, pw;   /* input, output, padding before */
    int64_t th, tw;                   /* tiles per sample: rows, columns */
    int64_t ipt, rpt, tps;            /* samples a task, tile rows a task, tasks a sample */
    int64_t pw_cols, ph_rows;         /* P's columns and rows per sample */
} WinoJob;

/* Eight channels of one pixel: the transforms run on these, 8 channels at a time. */
typedef float WinoVec __attribute__((vector_size(32)));
#define WINO_VL 8

/* The 6-point transform of six vectors: r = B^T d. */
static inline void
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
static inline void
wino_at(const WinoVec m[6], WinoVec o[4])
{
    WinoVec s12 = m[1] + m[2], d12 = m[1] - m[2], s34 = m[3] + m[4], d34 = m[3] - m[4];
    o[0] = m[0] + s12 + s34;
    o[1] = d12 + 2.0f * d34;
    o[2] = s12 + 4.0f * s34;
    o[3] = d12 + 8.0f * d34 + m[5];
}

/* One task: samples [i0, i0 + ni), tile rows [ty0, ty0 + nty) of each; P, V, M, Q its
 * buffers (M's columns past co stay zero). */
PTL_LOOP_CLONES static int
wino_task(const WinoJob *j, int64_t i0, int64_t ni, int64_t ty0, int64_t nty, float *P, float *V,
          float *M, float *Q)
{
    const int64_t cip = j->cip, cop = j->cop, tw = j->tw, pwc = j->pw_cols;
    const int64_t prow = 4 * nty + 2, tiles = ni * nty * tw;
    /* P: the padded windows, interleaved (sample, row, column, channel) */
    memset(P, 0, (size_t)(ni * prow * pwc * cip) * sizeof(float));
    for (int64_t s = 0; s < ni; s++) {
        for (int64_t c = 0; c < j->ci; c++) {
            const float *src = j->x + ((i0 + s) * j->ci + c) * j->ih * j->iw;
            for (int64_t r = 0; r < prow; r++) {
                int64_t iy = 4 * ty0 + r - j->ph;
                if (iy < 0 || iy >= j->ih) {
                    continue;
                }
                float *dst = P + ((s * prow + r) * pwc + j->pw) * cip + c;
                const float *row = src + iy * j->iw;
                int64_t w = j->iw < pwc - j->pw ? j->iw : pwc - j->pw;
                for (int64_t x = 0; x < w; x++) {
                    dst[x * cip] = row[x];
                }
            }
        }
    }
    /* V[xi][t] = B^T d B of tile t's window, 8 channels at a time */
    int64_t t = 0;
    for (int64_t s = 0; s < ni; s++) {
        for (int64_t ty = 0; ty < nty; ty++) {
            for (int64_t tx = 0; tx < tw; tx++, t++) {
                const float *base = P + ((s * prow + 4 * ty) * pwc + 4 * tx) * cip;
                for (int64_t cb = 0; cb < cip; cb += WINO_VL) {
                    WinoVec tmp[6][6];
                    for (int c = 0; c < 6; c++) {
                        WinoVec d[6], r[6];
                        for (int k = 0; k < 6; k++) {
                            memcpy(&d[k], base + (k * pwc + c) * cip + cb, sizeof d[k]);
                        }
                        wino_bt(d, r);
                        for (int k = 0; k < 6; k++) {
                            tmp[k][c] = r[k];
                        }
                    }
                    for (int k = 0; k < 6; k++) {
                        WinoVec r[6];
                        wino_bt(tmp[k], r);
                        for (int l = 0; l < 6; l++) {
                            memcpy(V + ((k * 6 + l) * tiles + t) * cip + cb, &r[l], sizeof r[l]);
                        }
                    }
                }
            }
        }
    }
    for (int xi = 0; xi < WINO_XI; xi++) {
        if (ptl_gemm_packed(j->u[xi], tiles, V + xi * tiles * cip, cip, M + xi * tiles * cop,
                            cop, NULL, 0, 0.0) < 0) {
            return -1;
        }
    }
    /* Q[t][pixel] = A^T m A of tile t, 8 output channels at a time */
    for (t = 0; t < tiles; t++) {
        for (int64_t cb = 0; cb < cop; cb += WINO_VL) {
            WinoVec tmp[4][6];
            for (int l = 0; l < 6; l++) {
                WinoVec m[6], o[4];
                for (int k = 0; k < 6; k++) {
                    memcpy(&m[k], M + ((k * 6 + l) * tiles + t) * cop + cb, sizeof m[k]);
                }
                wino_at(m, o);
                for (int i = 0; i < 4; i++) {
                    tmp[i][l] = o[i];
                }
            }
            for (int i = 0; i < 4; i++) {
                WinoVec o[4];
                wino_at(tmp[i], o);
                for (int k = 0; k < 4; k++) {
                    memcpy(Q + (t * 16 + i * 4 + k) * cop + cb, &o[k], sizeof o[k]);
                }
            }
        }
    }
    /* y = Q + bias, the pixels inside the output */
    for (int64_t s = 0; s < ni; s++) {
        for (int64_t o = 0; o < j->co; o++) {
            float b = j->bias != NULL ? j->bias[o] : 0.0f;
            float *plane = j->y + ((i0 + s) * j->co + o) * j->oh * j->ow;
            for (int64_t ty = 0; ty < nty; ty++) {
                for (int64_t i = 0; i < 4; i++) {
                    int64_t oy = 4 * (ty0 + ty) + i;
                    if (oy >= j->oh) {
                        break;
                    }
                    const float *q = Q + ((s * nty + ty) * tw * 16 + i * 4) * cop + o;
                    float *dst = plane + oy * j->ow;
                    for (int64_t ox = 0; ox < j->ow; ox++) {
                        dst[ox] = q[((ox >> 2) * 16 + (ox & 3)) * cop] + b;
                    }
                }
            }
        }
    }
    return 0;
}

static int
wino_tasks(void *ctx, int64_t begin, int64_t end)
{
    const WinoJob *j = ctx;
    int64_t ni = j->ipt, nty = j->rpt, tiles = ni * nty * j->tw;
    float *P = conv_alloc((size_t)(ni * (4 * nty + 2) * j->pw_cols * j->cip) * sizeof(float));
    float *V = conv_alloc((size_t)(WINO_XI * tiles * j->cip) * sizeof(float));
    float *M = conv_alloc((size_t)(WINO_XI * tiles * j->cop) * sizeof(float));
    float *Q = conv_alloc((size_t)(16 * tiles * j->cop) * sizeof(float));
    int rc = -1;
    if (P == NULL || V == NULL || M == NULL || Q == NULL) {
        goto done;
    }
    memset(M, 0, (size_t)(WINO_XI * tiles * j->cop) * sizeof(float));
    for (int64_t task = begin; task < end; task++) {
        int64_t i0, tni, ty0, tnty;
        if (j->ipt > 1) {
            i0 = task * j->ipt;
            tni = j->n - i0 < j->ipt ? j->n - i0 : j->ipt;
            ty0 = 0;
            tnty = j->th;
        }
        else {
            i0 = task / j->tps;
            tni = 1;
            ty0 = task % j->tps * j->rpt;
            tnty = j->th - ty0 < j->rpt ? j->th - ty0 : j->rpt;
        }
        if (wino_task(j, i0, tni, ty0, tnty, P, V, M, Q) < 0) {
            goto done;
        }
    }
    rc = 0;
done:
    free(P);
    free(V);
    free(M);
    free(Q);
    return rc;
}

/* U[xi] (ci x co) = G g G^T of each channel pair's kernel, in double; packed for the
 * products. */
static int
wino_weight(WinoJob *j, const float *w, ConvPackedWeight wkind)
{
    static const double G[6][3] = {
        {1.0 / 4, 0.0, 0.0},           {-1.0 / 6, -1.0 / 6, -1.0 / 6},
        {-1.0 / 6, 1.0 / 6, -1.0 / 6}, {1.0 / 24, 1.0 / 12, 1.0 / 6},
        {1.0 / 24, -1.0 / 12, 1.0 / 6}, {0.0, 0.0, 1.0},
    };
    const int64_t ci = j->ci, co = j->co;
    float *U = conv_alloc((size_t)(WINO_XI * ci * co) * sizeof(float));
    if (U == NULL) {
        return -1;
    }
    for (int64_t c = 0; c < ci; c++) {
        for (int64_t o = 0; o < co; o++) {
            double g[3][3], gg[6][3];
            for (int a = 0; a < 3; a++) {
                for (int b = 0; b < 3; b++) {
                    g[a][b] = wkind == CONV_PACKED_W_PLAIN
                                  ? w[((o * ci + c) * 3 + a) * 3 + b]
                                  : w[((c * co + o) * 3 + 2 - a) * 3 + 2 - b];
                }
            }
            for (int k = 0; k < 6; k++) {
                for (int b = 0; b < 3; b++) {
                    gg[k][b] = G[k][0] * g[0][b] + G[k][1] * g[1][b] + G[k][2] * g[2][b];
                }
            }
            for (int k = 0; k < 6; k++) {
                for (int l = 0; l < 6; l++) {
                    double v = gg[k][0] * G[l][0] + gg[k][1] * G[l][1] + gg[k][2] * G[l][2];
                    U[((k * 6 + l) * ci + c) * co + o] = (float)v;
                }
            }
        }
    }
    int rc = 0;
    for (int xi = 0; xi < WINO_XI && rc == 0; xi++) {
        j->u[xi] = ptl_gemm_pack_b(PTL_DTYPE_FLOAT32, ci, co, U + xi * ci * co, co, 1);
        rc = j->u[xi] == NULL ? -1 : 0;
    }
    free(U);
    return rc;
}

/* Whether any of v[0, n) is Inf or NaN (all exponent bits set). */
PTL_LOOP_CLONES static int
wino_any_nonfinite(const float *v, int64_t n)
{
    uint32_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, v + i, sizeof u);
        bad |= (u & 0x7f800000u) == 0x7f800000u;
    }
    return bad != 0;
}

int
conv_winograd_fwd(const float *x, const float *w, ConvPackedWeight wkind, const float *bias,
                  float *y, const ConvGeom *g, int64_t n, int64_t ci, int64_t co)
{
    /* an Inf would turn whole tiles to NaN (inf - inf in the transforms), where the direct
     * sum gives Inf or NaN at its 3x3 neighbours only: such inputs keep the direct path */
    if (wino_any_nonfinite(x, n * ci * g->img_numel) || wino_any_nonfinite(w, 9 * ci * co)) {
        return 1;
    }
    WinoJob j = {.x = x, .bias = bias, .y = y, .n = n, .ci = ci, .co = co};
    j.cip = (ci + WINO_VL - 1) / WINO_VL * WINO_VL;
    j.cop = (co + WINO_VL - 1) / WINO_VL * WINO_VL;
    j.ih = g->img[1];
    j.iw = g->img[2];
    j.oh = g->col[1];
    j.ow = g->col[2];
    j.ph = g->p[1];
    j.pw = g->p[2];
    j.th = (j.oh + 3) / 4;
    j.tw = (j.ow + 3) / 4;
    j.pw_cols = 4 * j.tw + 2;
    /* tiles a task: WINO_TILES, fewer where V and M would pass WINO_BUF_BYTES */
    int64_t want = WINO_BUF_BYTES / (WINO_XI * (int64_t)sizeof(float) * (j.cip + j.cop));
    want = want > WINO_TILES ? WINO_TILES : want < 12 ? 12 : want;
    int64_t ntasks;
    if (j.th * j.tw <= want) {
        j.ipt = want / (j.th * j.tw);
        j.rpt = j.th;
        j.tps = 1;
        ntasks = (n + j.ipt - 1) / j.ipt;
    }
    else {
        j.ipt = 1;
        j.rpt = want / j.tw > 0 ? want / j.tw : 1;
        j.tps = (j.th + j.rpt - 1) / j.rpt;
        ntasks = n * j.tps;
    }
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
