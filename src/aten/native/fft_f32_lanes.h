/* fft_f32_lanes.h -- the lane kernels of native/fft_f32.c (Note [FFT float32] there) for one
 * block width, included once per width with these defined:
 *     FW         lines a block (16 or 8)
 *     LT, CT     the vector of FW floats and the block (re, im) of them
 *     SFX(NAME)  NAME with the width's suffix (fbf4_16, c2c_block_f_8, ...)
 *     ROW_IN(p, sgn), ROW_OUT(x, sc, sim, p)  a block from / to the row of FW complex64 at p
 *     TILE_IN(src, off, sgn, v), TILE_OUT(r, sc, sim, dst, off)  8 blocks from / to the 8
 *                complex64 at byte offset off of each line (FW x 8 points, transposed)
 * Every lane computes the same operations in the same order whatever the width, so a line
 * gets the same bits in a block of 8 as in one of 16.  Private to fft_f32.c; no include
 * guard, on purpose. */

#define fmul SFX(fmul)
#define fadd SFX(fadd)
#define fsub SFX(fsub)
#define fscale SFX(fscale)
#define fmul_neg_i SFX(fmul_neg_i)
#define fbf2 SFX(fbf2)
#define fbf3 SFX(fbf3)
#define fbf4 SFX(fbf4)
#define fbf5 SFX(fbf5)
#define fbf8 SFX(fbf8)
#define dft16 SFX(dft16)
#define ButterflyF SFX(ButterflyF)
#define stage_run_f SFX(stage_run_f)
#define radix2_f SFX(radix2_f)
#define radix3_f SFX(radix3_f)
#define radix4_f SFX(radix4_f)
#define radix5_f SFX(radix5_f)
#define radix8_f SFX(radix8_f)
#define exec_f SFX(exec_f)
#define stage_out_fuses SFX(stage_out_fuses)
#define stage_out_f SFX(stage_out_f)
#define last_stage_f SFX(last_stage_f)
#define gather_f SFX(gather_f)
#define scatter_f SFX(scatter_f)
#define c2c_block_f SFX(c2c_block_f)
#define r2c_block_f SFX(r2c_block_f)
#define r2c_bin SFX(r2c_bin)
#define c2r_block_f SFX(c2r_block_f)

/* ---- lane operations and butterflies (the formulas of fft.c's, in float) ---- */

LANE_INLINE CT
fmul(CT a, float wr, float wi)
{
    return (CT){a.re * wr - a.im * wi, a.re * wi + a.im * wr};
}

LANE_INLINE CT
fadd(CT a, CT b)
{
    return (CT){a.re + b.re, a.im + b.im};
}

LANE_INLINE CT
fsub(CT a, CT b)
{
    return (CT){a.re - b.re, a.im - b.im};
}

LANE_INLINE CT
fscale(CT a, float s)
{
    return (CT){a.re * s, a.im * s};
}

/* -i z */
LANE_INLINE CT
fmul_neg_i(CT z)
{
    return (CT){z.im, -z.re};
}

/* fft.c's butterflies (FFT_BF2 .. FFT_BF5 in fft_impl.h) over the block */
LANE_INLINE void
fbf2(CT *a)
{
    FFT_BF2(CT, fadd, fsub);
}

LANE_INLINE void
fbf4(CT *a)
{
    FFT_BF4(CT, fadd, fsub, fmul_neg_i);
}

LANE_INLINE void
fbf3(CT *a)
{
    FFT_BF3(CT, float, fadd, fsub, fscale, fmul_neg_i);
}

LANE_INLINE void
fbf5(CT *a)
{
    FFT_BF5(CT, float, fadd, fsub, fscale, fmul_neg_i);
}

/* the 8-point DFT: two 4-point ones and w_8^k (as fft.c's dft8) */
LANE_INLINE void
fbf8(CT *a)
{
    const float h = 0.70710678118654752440f;
    CT e[4] = {a[0], a[2], a[4], a[6]}, o[4] = {a[1], a[3], a[5], a[7]};
    fbf4(e);
    fbf4(o);
    CT t[4] = {o[0], {(o[1].re + o[1].im) * h, (o[1].im - o[1].re) * h}, fmul_neg_i(o[2]),
                 {(o[3].im - o[3].re) * h, -(o[3].re + o[3].im) * h}};
    for (int k = 0; k < 4; k++) {
        a[k] = fadd(e[k], t[k]);
        a[k + 4] = fsub(e[k], t[k]);
    }
}

/* c[k] = sum_j w_16^(j k) c[j] in place: with j = b + 4 a and k = k0 + 4 k1, 4-point DFTs
 * over a, the twiddles w_16^(b k0), 4-point DFTs over b */
LANE_INLINE void
dft16(CT *c)
{
    CT y[16];
    for (int b = 0; b < 4; b++) {
        CT a[4] = {c[b], c[b + 4], c[b + 8], c[b + 12]};
        fbf4(a);
        for (int k0 = 0; k0 < 4; k0++) {
            y[4 * b + k0] = b * k0 == 0 ? a[k0] : fmul(a[k0], w16[b * k0][0], w16[b * k0][1]);
        }
    }
    for (int k0 = 0; k0 < 4; k0++) {
        CT a[4] = {y[k0], y[4 + k0], y[8 + k0], y[12 + k0]};
        fbf4(a);
        for (int k1 = 0; k1 < 4; k1++) {
            c[k0 + 4 * k1] = a[k1];
        }
    }
}

typedef void (*ButterflyF)(CT *a);

/* fft.c's stage_run_lanes over a float stage: for each j the twiddles w^(qj); for each k
 * the twiddled inputs (j = 0: w = 1, no product), the butterfly, the outputs */
LANE_INLINE void
stage_run_f(const StageF *st, const CT *in, CT *out, const int p, ButterflyF bf)
{
    const int64_t l = st->l, r = st->r;
    float wr[8], wi[8];
    CT a[8];
    for (int64_t j = 0; j < l; j++) {
        const CT *src = in + j * p * r;
        CT *dst = out + j * r;
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

#define DEFINE_RADIX_F(NAME, P, BF)                   \
    FFT_F32_CLONES static void                        \
    NAME(const StageF *st, const CT *in, CT *out)     \
    {                                                 \
        stage_run_f(st, in, out, P, BF);              \
    }

DEFINE_RADIX_F(radix2_f, 2, fbf2)
DEFINE_RADIX_F(radix3_f, 3, fbf3)
DEFINE_RADIX_F(radix4_f, 4, fbf4)
DEFINE_RADIX_F(radix5_f, 5, fbf5)
DEFINE_RADIX_F(radix8_f, 8, fbf8)
#undef DEFINE_RADIX_F

/* The first ns of p's float stages (all of them: the forward DFT of FW lines in lane blocks
 * v[0..n)) over v, work the same size.  Returns the buffer (v or work) that holds the
 * result. */
static CT *
exec_f(const FftPlan *p, int ns, CT *v, CT *work)
{
    CT *in = v, *out = work;
    for (int s = 0; s < ns; s++) {
        const StageF *st = &p->fstages[s];
        switch (st->p) {
        case 2: radix2_f(st, in, out); break;
        case 3: radix3_f(st, in, out); break;
        case 4: radix4_f(st, in, out); break;
        case 5: radix5_f(st, in, out); break;
        default: radix8_f(st, in, out); break;
        }
        CT *t = in;
        in = out;
        out = t;
    }
    return in;
}

/* ---- moving lines into and out of blocks ---- */

/* v[i], lane ln = point i of line src[ln]: the float at src[ln] + i ps and, times sgn, the
 * one imoff bytes on (a complex64 point: imoff 4; a pair of real points: imoff their
 * stride).  Complex64 points move as rows where they can (fft_impl.h): 16 lines 8 bytes
 * apart a 128-byte row per point, contiguous lines as two 8x8 transposes of 8 points. */
LANE_INLINE void
gather_f(const char **src, int64_t ps, int64_t imoff, int64_t n, float sgn, CT *v)
{
    int64_t i = 0;
#ifdef FFT_ROW_MOVES
    if (imoff == 4 && adjacent_rows((char *const *)src, FW)) {
        for (; i < n; i++) {
            v[i] = ROW_IN(src[0] + i * ps, sgn);
        }
    }
    for (; imoff == 4 && ps == 8 && i + 8 <= n; i += 8) {
        TILE_IN(src, i * 8, sgn, v + i);
    }
#endif
    for (; i < n; i++) {
        for (int ln = 0; ln < FW; ln++) {
            const char *p = src[ln] + i * ps;
            v[i].re[ln] = *(const float *)p;
            v[i].im[ln] = sgn * *(const float *)(p + imoff);
        }
    }
}

/* gather_f's inverse: the float at dst[ln] + i ps = re sc, the one imoff bytes on = im sim
 * of r[i], lane ln.  The pointers are copied first: stores through them may alias the
 * caller's array, so GCC reloaded every pointer after every store. */
LANE_INLINE void
scatter_f(const CT *r, int64_t n, float sc, float sim, char *const *lines, int64_t ps,
          int64_t imoff)
{
    char *dst[FW];
    memcpy(dst, lines, sizeof(dst));
    int64_t i = 0;
#ifdef FFT_ROW_MOVES
    if (imoff == 4 && adjacent_rows(dst, FW)) {
        for (; i < n; i++) {
            ROW_OUT(r[i], sc, sim, dst[0] + i * ps);
        }
    }
    for (; imoff == 4 && ps == 8 && i + 8 <= n; i += 8) {
        TILE_OUT(r + i, sc, sim, dst, i * 8);
    }
#endif
    for (; i < n; i++) {
        LT re = r[i].re * sc, im = r[i].im * sim;
        for (int ln = 0; ln < FW; ln++) {
            char *p = dst[ln] + i * ps;
            *(float *)p = re[ln];
            *(float *)(p + imoff) = im[ln];
        }
    }
}


/* ---- the last stage storing its own points ---- */

/* Where the lines take their points 8 bytes apart, the last stage (r = 1) writes its outputs
 * as tiles of 8 points straight to the lines: one pass over the block less than a stage and
 * scatter_f (the same operations in the same order on every lane: the same bits).  Not
 * where the p tiles of a line lie a multiple of 4 KB apart (l % 512 == 0): all p FW of them
 * then fall in the same sets of the L1 (one thread, fft 16x4096 complex64 142 -> 174 us);
 * nor the first stage reading its tiles from the lines, which was slower at every length
 * tried (rfft 64x1024 float32 67 -> 105 us, fft 16x4096 142 -> 251 us). */
#ifdef FFT_ROW_MOVES
static int
stage_out_fuses(const FftPlan *p)
{
    if (p->fnstages == 0) {
        return 0;
    }
    const int64_t l = p->fstages[p->fnstages - 1].l;
    return l % 8 == 0 && l % 512 != 0;
}

/* stage_run_f of the last stage, its output v l + j to lines[ln] + 8 (v l + j) as (re sc,
 * im sim) */
LANE_INLINE void
stage_out_f(const StageF *st, const CT *in, char *const *lines, float sc, float sim,
            const int p, ButterflyF bf)
{
    char *dst[FW];   /* a copy, as in scatter_f */
    memcpy(dst, lines, sizeof(dst));
    const int64_t l = st->l;
    for (int64_t j0 = 0; j0 < l; j0 += 8) {
        CT t[8][8];   /* [v][j - j0] */
        for (int i = 0; i < 8; i++) {
            const int64_t j = j0 + i;
            const CT *src = in + j * p;
            const float *w = st->tw + 2 * j * (p - 1);
            CT a[8];
            for (int q = 0; q < p; q++) {
                a[q] = j == 0 || q == 0 ? src[q] : fmul(src[q], w[2 * q - 2], w[2 * q - 1]);
            }
            bf(a);
            for (int v = 0; v < p; v++) {
                t[v][i] = a[v];
            }
        }
        for (int v = 0; v < p; v++) {
            TILE_OUT(t[v], sc, sim, dst, (v * l + j0) * 8);
        }
    }
}

/* stage_out_f for the plan's radix */
FFT_F32_CLONES static void
last_stage_f(const FftPlan *p, const CT *in, char **dst, float sc, float sim)
{
    const StageF *st = &p->fstages[p->fnstages - 1];
    switch (st->p) {
    case 2: stage_out_f(st, in, dst, sc, sim, 2, fbf2); break;
    case 3: stage_out_f(st, in, dst, sc, sim, 3, fbf3); break;
    case 4: stage_out_f(st, in, dst, sc, sim, 4, fbf4); break;
    case 5: stage_out_f(st, in, dst, sc, sim, 5, fbf5); break;
    default: stage_out_f(st, in, dst, sc, sim, 8, fbf8); break;
    }
}
#endif


/* ---- blocks of 16 lines ---- */

/* C2C of the lines src[0..16) into dst[0..16) (v: 2 n blocks) */
FFT_F32_CLONES static void
c2c_block_f(const Pass *ps, const char **src, char **dst, CT *v)
{
    const FftPlan *p = ps->plan;
    const int64_t n = p->n, ss = ps->sstr[ps->d], ds = ps->dstr[ps->d];
    const float sgn = ps->inverse ? -1.0f : 1.0f, sc = (float)ps->scale, sim = sgn * sc;
    gather_f(src, ss, 4, n, sgn, v);
#ifdef FFT_ROW_MOVES
    if (ds == 8 && stage_out_fuses(p)) {
        last_stage_f(p, exec_f(p, p->fnstages - 1, v, v + n), dst, sc, sim);
        return;
    }
#endif
    const CT *r = exec_f(p, p->fnstages, v, v + n);
    scatter_f(r, n, sc, sim, dst, ds, 4);
}

/* bin k <= h of the R2C of the real lines whose half transform (n = 2 h) is r */
LANE_INLINE CT
r2c_bin(const FftPlan *pl, const CT *r, int64_t k)
{
    const int64_t h = pl->n / 2;
    CT a = r[k == h ? 0 : k], b = r[k == 0 ? 0 : h - k];
    CT e = {(a.re + b.re) * 0.5f, (a.im - b.im) * 0.5f};
    CT o = {(a.im + b.im) * 0.5f, (b.re - a.re) * 0.5f};   /* (a - conj(b)) / 2i */
    return k < h ? fadd(e, fmul(o, (float)pl->rtw[k].re, (float)pl->rtw[k].im)) : fsub(e, o);
}

/* R2C of FW real lines (Note [Real FFT]; v: 3 h + 1 blocks); contiguous one-sided rows take
 * the bins 8 at a time straight to the lines (x holds the rest, and every bin when the
 * output is two-sided) */
FFT_F32_CLONES static void
r2c_block_f(const Pass *ps, const char **src, char **dst, CT *v)
{
    const FftPlan *pl = ps->plan;
    const int64_t n = pl->n, h = n / 2, ss = ps->sstr[ps->d], ds = ps->dstr[ps->d];
    const float sc = (float)ps->scale;
    CT *x = v + 2 * h;
    gather_f(src, 2 * ss, ss, h, 1.0f, v);
    const CT *r = exec_f(pl->half, pl->half->fnstages, v, v + h);
    int64_t k = 0;
#ifdef FFT_ROW_MOVES
    if (ps->out_len == h + 1 && ds == 8) {   /* contiguous one-sided rows: 8 bins a tile */
        char *lines[FW];   /* a copy, as in scatter_f */
        memcpy(lines, dst, sizeof(lines));
        for (; k + 8 <= h + 1; k += 8) {
            CT t[8];
            for (int i = 0; i < 8; i++) {
                t[i] = r2c_bin(pl, r, k + i);
            }
            TILE_OUT(t, sc, sc, lines, k * 8);
        }
    }
#endif
    for (int64_t j = k; j <= h; j++) {
        x[j] = r2c_bin(pl, r, j);
    }
    char *rest[FW];
    for (int ln = 0; ln < FW; ln++) {
        rest[ln] = dst[ln] + k * ds;
    }
    scatter_f(x + k, h + 1 - k, sc, sc, rest, ds, 4);
    for (int64_t j = h + 1; j < ps->out_len; j++) {   /* two-sided: X_j = conj(X_(n-j)) */
        LT re = x[n - j].re * sc, im = x[n - j].im * -sc;
        for (int ln = 0; ln < FW; ln++) {
            float *z = (float *)(dst[ln] + j * ds);
            z[0] = re[ln];
            z[1] = im[ln];
        }
    }
}

/* C2R of 16 half spectra (Note [Real FFT]; v: 3 h + 1 blocks: the h + 1 bins, the h points
 * and the half plan's work) */
FFT_F32_CLONES static void
c2r_block_f(const Pass *ps, const char **src, char **dst, CT *v)
{
    const FftPlan *pl = ps->plan;
    const int64_t n = pl->n, h = n / 2, ds = ps->dstr[ps->d];
    const float sc = (float)ps->scale;
    CT *z = v + h + 1;
    gather_f(src, ps->sstr[ps->d], 4, h + 1, 1.0f, v);
    v[0].im = v[h].im = (LT){0};
    for (int64_t k = 0; k < h; k++) {
        CT a = v[k], b = {v[h - k].re, -v[h - k].im};
        CT d = fmul(fsub(a, b), (float)pl->rtw[k].re, -(float)pl->rtw[k].im);
        CT sum = fadd(a, b);
        z[k] = (CT){sum.re - d.im, -(sum.im + d.re)};   /* conj(sum + i d) */
    }
    /* (y_2j, y_2j+1) = conj(F(conj(Z)))_j */
#ifdef FFT_ROW_MOVES
    if (ds == 4 && stage_out_fuses(pl->half)) {   /* pairs of points 8 bytes apart */
        const int ns = pl->half->fnstages;
        last_stage_f(pl->half, exec_f(pl->half, ns - 1, z, z + h), dst, sc, -sc);
        return;
    }
#endif
    const CT *r = exec_f(pl->half, pl->half->fnstages, z, z + h);
    scatter_f(r, h, sc, -sc, dst, 2 * ds, ds);
}

#undef fmul
#undef fadd
#undef fsub
#undef fscale
#undef fmul_neg_i
#undef fbf2
#undef fbf3
#undef fbf4
#undef fbf5
#undef fbf8
#undef dft16
#undef ButterflyF
#undef stage_run_f
#undef radix2_f
#undef radix3_f
#undef radix4_f
#undef radix5_f
#undef radix8_f
#undef exec_f
#undef stage_out_fuses
#undef stage_out_f
#undef last_stage_f
#undef gather_f
#undef scatter_f
#undef c2c_block_f
#undef r2c_block_f
#undef r2c_bin
#undef c2r_block_f
#undef FW
#undef LT
#undef CT
#undef SFX
#undef ROW_IN
#undef ROW_OUT
#undef TILE_IN
#undef TILE_OUT
