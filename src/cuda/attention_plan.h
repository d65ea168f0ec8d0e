/* attention_plan.h -- the per-tile arithmetic of the fused attention kernels (the forward
 * and backward of _scaled_dot_product_flash_attention_for_cpu on CUDA tensors), compiled by
 * nvcc for the device (attention.cu) and by gcc for the host (attention_plan.c), whose
 * emulation runs exactly these functions in the kernels' block, stage and thread order.
 * Mirrors the flash-attention kernels behind ATen/native/transformers/cuda/attention.cu in
 * behaviour (not their tensor-core code).
 *
 * Note [CUDA flash attention]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * attention.c checks the arguments, casts float16 and bfloat16 to float32 (the work dtype:
 * every sum, the running max and the running sum are float32 for them and for float32,
 * double for float64), allocates the outputs and hands the job over (device_attention.h)
 * with every operand's strides, so heads split from the features ([B, T, H, E] transposed)
 * are read in place.  Three kernels, each a grid-stride loop over items (a block per item;
 * max_grid blocks at most), each item a fixed program of stages separated by
 * __syncthreads(): two INIT stages, then for each tile of its loop the five stages LOAD,
 * SCORES, PROBS, DSCORES, ACC, then FINISH (ptl_attn_step; a stage with nothing to do for a
 * kernel is empty).  Thread t of nt takes the stage's entries t, t + nt, ...; within a stage
 * the threads write disjoint elements, so running the threads one after another (the host
 * emulation) computes what the device does.
 * - forward, an item per (batch, head, query tile of bq rows): the query tile is staged in
 *   shared memory, then the key tiles (bk rows, those right of the diagonal skipped when
 *   causal) are staged with their values: s = scale q . k (+ mask; -inf where key j > query
 *   i when causal, PyTorch's top-left alignment), a thread per row takes the new running
 *   max m' and the rescale alpha = exp(m - m'), p = exp(s - m') for each entry, and the rows'
 *   sums l = alpha l + sum p and accumulators acc = alpha acc + P V are updated.  FINISH
 *   writes out = acc / l and logsumexp = m + log l.  A row with no finite score (S = 0, or
 *   a mask of -inf) gives zeros and a logsumexp of +inf, as on the CPU.
 * - backward, dk and dv: an item per (batch, head, key tile), which stages its keys and
 *   values and accumulates dV += P^T dO and dK += dS^T Q over the query tiles that see it,
 *   in order, with P = exp(s - lse) recomputed from the forward's logsumexp, dP = dO V^T,
 *   dS = P (dP - D) scale and D_i = dO_i . O_i (recomputed per query tile: Ev products a row
 *   against the tile's E bk).
 * - backward, dq: an item per (batch, head, query tile) that walks the key tiles as the
 *   forward does and accumulates dQ += dS K.  P and dS are computed twice (once per
 *   backward kernel) rather than summed into dq with float atomics: every element of every
 *   output is one thread's sum in a fixed order, so results repeat run after run, whatever
 *   the grid.  (The device contracts a * b + c into fma where gcc does not, so the device's
 *   last bits may differ from the emulation's; both are float32/float64 accurate.)
 * The six products (S = Q K^T, dP = dO V^T, P V, P^T dO, dS^T Q, dS K) are one function,
 * ptl_attn_product, with a thread per 4 x 4 micro-tile of the result: each value read from
 * shared memory feeds four multiply-adds, each element is still one fixed-order sum.
 * Shared memory holds the staged tiles in the work dtype with rows of ld = max(E, Ev) + 1
 * elements (an odd stride: the threads of a warp reading the rows of different keys hit
 * different banks), the scores and score gradients (bq x bk) and three row arrays;
 * ptl_attn_smem gives the layout.  The plan (attention_plan.c) takes bq from the tuning's
 * min_chunk (1 in the tests' tiny tuning, 8 in the small one, 64 on a device), bk = 2 bq up
 * to 64, then halves bk, then bq, until the largest kernel's layout fits 96 KiB (float64
 * with head dim 256: bq 8, bk 4).  Head dims up to 256 (PyTorch's flash limit, checked on
 * the host); dropout is refused by the CPU kernel's checks before the job is made. */
#ifndef PTL_CUDA_ATTENTION_PLAN_H
#define PTL_CUDA_ATTENTION_PLAN_H

#include <math.h>
#include <stdint.h>

#include "../aten/native/device_attention.h"
#include "../c10/macros.h"
#include "cuda_api.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PTL_ATTN_MAX_HEAD_DIM 256
#define PTL_ATTN_MAX_TILE 64
#define PTL_ATTN_MAX_THREADS 256
#define PTL_ATTN_SMEM_BYTES (96 * 1024)
/* a thread's micro-tile of a product: rows by columns */
#define PTL_ATTN_MR 4
#define PTL_ATTN_NR 4

/* ORDER PtlAttnKind: the plan's items and grids, the launcher */
enum { PTL_ATTN_FORWARD, PTL_ATTN_BACKWARD_KV, PTL_ATTN_BACKWARD_Q, PTL_ATTN_KINDS };

/* the stages of an item's program (Note [CUDA flash attention]); LOAD..ACC per tile */
enum { PTL_ATTN_INIT, PTL_ATTN_INIT2, PTL_ATTN_LOAD, PTL_ATTN_SCORES, PTL_ATTN_PROBS,
       PTL_ATTN_DSCORES, PTL_ATTN_ACC, PTL_ATTN_FINISH };

/* what a product's epilogue writes (ptl_attn_product) */
enum { PTL_ATTN_EPI_SCORES, PTL_ATTN_EPI_DSCORES, PTL_ATTN_EPI_ACC };

/* How the kernels run: kernel k has items[k] items on grid[k] blocks of `block` threads
 * and smem_elems elements of the work dtype of dynamic shared memory (the largest layout). */
typedef struct PtlCudaAttnPlan {
    int32_t block;
    int64_t bq, bk, ld, nqt, nkt;
    int64_t items[PTL_ATTN_KINDS], grid[PTL_ATTN_KINDS];
    int64_t smem_elems;
} PtlCudaAttnPlan;

/* Element offsets into shared memory: staged q, dout, k, v tiles (rows of ld), scores sc
 * and score gradients ds (bq x bk), accumulators of the query tile (acc: out or dq) and of
 * the key tile (dk, dv), three row arrays (forward: m, l, alpha; backward: lse, D). */
typedef struct PtlAttnSmem {
    int64_t qs, dos, ks, vs, sc, ds, acc, dk, dv, r0, r1, r2, total;
} PtlAttnSmem;

PTL_HD static inline PtlAttnSmem
ptl_attn_smem(int kind, int64_t bq, int64_t bk, int64_t ld)
{
    const int fwd = kind == PTL_ATTN_FORWARD, kv = kind == PTL_ATTN_BACKWARD_KV;
    PtlAttnSmem s;
    int64_t o = 0;
    s.qs = o;
    o += bq * ld;
    s.dos = o;
    o += fwd ? 0 : bq * ld;
    s.ks = o;
    o += bk * ld;
    s.vs = o;
    o += bk * ld;
    s.sc = o;
    o += bq * bk;
    s.ds = o;
    o += fwd ? 0 : bq * bk;
    s.acc = o;
    o += kv ? 0 : bq * ld;
    s.dk = o;
    o += kv ? bk * ld : 0;
    s.dv = o;
    o += kv ? bk * ld : 0;
    s.r0 = o;
    s.r1 = o + bq;
    s.r2 = o + 2 * bq;
    s.total = o + 3 * bq;
    return s;
}

/* the element offset of (b, h, r, c) in m */
PTL_HD static inline int64_t
ptl_attn_at(const PtlDeviceAttnMat *m, int64_t b, int64_t h, int64_t r, int64_t c)
{
    return b * m->st[0] + h * m->st[1] + r * m->st[2] + c * m->st[3];
}

PTL_HD static inline int64_t
ptl_attn_min(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* An item's tiles: batch b, head h, query rows [i0, i0 + nq), key rows [j0, j0 + nk).  The
 * forward and dq items fix the query tile and `it` picks the key tile, the dk/dv items the
 * other way round (it < 0: the INIT and FINISH stages, the looped tile unset). */
typedef struct PtlAttnTile {
    int64_t b, h, i0, nq, j0, nk;
} PtlAttnTile;

/* the keys a query tile [i0, i0 + nq) sees: [0, kend) */
PTL_HD static inline int64_t
ptl_attn_key_end(const PtlDeviceAttnJob *j, int64_t i0, int64_t nq)
{
    return j->causal ? ptl_attn_min(j->S, i0 + nq) : j->S;
}

PTL_HD static inline PtlAttnTile
ptl_attn_tile(int kind, const PtlDeviceAttnJob *j, const PtlCudaAttnPlan *p, int64_t item,
              int64_t it)
{
    PtlAttnTile tl = {0, 0, 0, 0, 0, 0};
    const int kv = kind == PTL_ATTN_BACKWARD_KV;
    const int64_t ntiles = kv ? p->nkt : p->nqt, bh = item / ntiles, x = item % ntiles;
    const int64_t qt = kv ? it : x, kt = kv ? x : it;
    tl.b = bh / j->H;
    tl.h = bh % j->H;
    if (qt >= 0) {
        tl.i0 = qt * p->bq;
        tl.nq = ptl_attn_min(p->bq, j->L - tl.i0);
    }
    if (kt >= 0) {
        tl.j0 = kt * p->bk;
        tl.nk = ptl_attn_min(p->bk, kv ? j->S - tl.j0 : ptl_attn_key_end(j, tl.i0, tl.nq) - tl.j0);
    }
    return tl;
}

/* the tiles [*lo, *hi) an item loops over: key tiles up to the diagonal (forward, dq), the
 * query tiles from the diagonal on (dk, dv) */
PTL_HD static inline void
ptl_attn_loop_range(int kind, const PtlDeviceAttnJob *j, const PtlCudaAttnPlan *p,
                    int64_t item, int64_t *lo, int64_t *hi)
{
    const PtlAttnTile tl = ptl_attn_tile(kind, j, p, item, -1);
    if (kind == PTL_ATTN_BACKWARD_KV) {
        const int64_t j0 = item % p->nkt * p->bk;
        *lo = j->causal ? j0 / p->bq : 0;
        *hi = p->nqt;
        return;
    }
    *lo = 0;
    *hi = (ptl_attn_key_end(j, tl.i0, tl.nq) + p->bk - 1) / p->bk;
}

/* The typed stage work, stamped for float (f4: expf, logf) and double (f8).  Each function
 * takes the entries t, t + nt, ... of its loop. */
#define PTL_ATTN_DEFINE(T, DT, EXP, LOG)                                                   \
    /* rows [r0, r0 + nr) x cols [0, ncols) of m into dst (rows of ld) */                 \
    PTL_HD static inline void ptl_attn_load_##DT(const PtlDeviceAttnMat *m, int64_t b,    \
                                                 int64_t h, int64_t r0, int64_t nr,       \
                                                 int64_t ncols, T *dst, int64_t ld,       \
                                                 int64_t t, int64_t nt)                   \
    {                                                                                     \
        const T *src = (const T *)m->data;                                                \
        for (int64_t u = t; u < nr * ncols; u += nt) {                                    \
            const int64_t r = u / ncols, c = u % ncols;                                   \
            dst[r * ld + c] = src[ptl_attn_at(m, b, h, r0 + r, c)];                       \
        }                                                                                 \
    }                                                                                     \
                                                                                          \
    /* src's rows [0, nr) x cols [0, ncols) (rows of ld) into m's rows from r0 */         \
    PTL_HD static inline void ptl_attn_store_##DT(const T *src, int64_t ld,               \
                                                  const PtlDeviceAttnMat *m, int64_t b,   \
                                                  int64_t h, int64_t r0, int64_t nr,      \
                                                  int64_t ncols, int64_t t, int64_t nt)   \
    {                                                                                     \
        T *dst = (T *)m->data;                                                            \
        for (int64_t u = t; u < nr * ncols; u += nt) {                                    \
            const int64_t r = u / ncols, c = u % ncols;                                   \
            dst[ptl_attn_at(m, b, h, r0 + r, c)] = src[r * ld + c];                       \
        }                                                                                 \
    }                                                                                     \
                                                                                          \
    PTL_HD static inline void ptl_attn_fill_##DT(T *p, int64_t n, T v, int64_t t,         \
                                                 int64_t nt)                              \
    {                                                                                     \
        for (int64_t u = t; u < n; u += nt) {                                             \
            p[u] = v;                                                                     \
        }                                                                                 \
    }                                                                                     \
                                                                                          \
    /* The products of the stages: C[r][c] for r < nr, c < nc is init (0, or out[r][c]    \
     * times alpha[r] for PTL_ATTN_EPI_ACC) plus the sum over k < n, in order, of         \
     * a[r ars + k acs] b[k brs + c bcs], then the epilogue `epi` writes it to out (rows of \
     * ldo): the scores (scale, mask, -inf past the causal diagonal), the score gradients \
     * (p (C - d[r]) scale) or the accumulator.  Thread t takes the micro-tiles u = t, t + \
     * nt, ... of PTL_ATTN_MR rows rg + i nrg by PTL_ATTN_NR columns cg + x ncg, on clamped \
     * indices past the edges (not stored): a warp's threads read neighbouring columns of b \
     * and share rows of a, and each value loaded from shared memory feeds four products. */ \
    typedef struct {                                                                      \
        int epi;                                                                          \
        int64_t nr, nc, n, ars, acs, brs, bcs, ldo;                                       \
        const T *a, *b, *p, *d, *alpha;                                                   \
        T *out;                                                                           \
    } PtlAttnProduct_##DT;                                                                \
                                                                                          \
    PTL_HD static inline void ptl_attn_product_##DT(const PtlDeviceAttnJob *j,            \
                                                    const PtlAttnTile *tl,                \
                                                    const PtlAttnProduct_##DT *pr,        \
                                                    int64_t t, int64_t nt)                \
    {                                                                                     \
        const int64_t nrg = (pr->nr + PTL_ATTN_MR - 1) / PTL_ATTN_MR;                     \
        const int64_t ncg = (pr->nc + PTL_ATTN_NR - 1) / PTL_ATTN_NR;                     \
        const T scale = (T)j->scale, *mask = (const T *)j->mask.data;                     \
        for (int64_t u = t; u < nrg * ncg; u += nt) {                                     \
            /* shared memory offsets fit 32 bits: fewer registers in the loop */           \
            int32_t ao[PTL_ATTN_MR], bo[PTL_ATTN_NR];                                     \
            T s[PTL_ATTN_MR][PTL_ATTN_NR];                                                \
            for (int i = 0; i < PTL_ATTN_MR; i++) {                                       \
                const int64_t r = ptl_attn_min(u / ncg + i * nrg, pr->nr - 1);            \
                ao[i] = (int32_t)(r * pr->ars);                                           \
                for (int x = 0; x < PTL_ATTN_NR; x++) {                                   \
                    const int64_t c = ptl_attn_min(u % ncg + x * ncg, pr->nc - 1);        \
                    bo[x] = (int32_t)(c * pr->bcs);                                       \
                    s[i][x] = 0;                                                          \
                    if (pr->epi == PTL_ATTN_EPI_ACC) {                                    \
                        const T o = pr->out[r * pr->ldo + c];                             \
                        s[i][x] = pr->alpha != 0 ? o * pr->alpha[r] : o;                  \
                    }                                                                     \
                }                                                                         \
            }                                                                             \
            const T *a = pr->a, *b = pr->b;                                               \
            for (int64_t k = 0; k < pr->n; k++, a += pr->acs, b += pr->brs) {             \
                T av[PTL_ATTN_MR], bv[PTL_ATTN_NR];                                       \
                for (int i = 0; i < PTL_ATTN_MR; i++) {                                   \
                    av[i] = a[ao[i]];                                                     \
                }                                                                         \
                for (int x = 0; x < PTL_ATTN_NR; x++) {                                   \
                    bv[x] = b[bo[x]];                                                     \
                }                                                                         \
                for (int i = 0; i < PTL_ATTN_MR; i++) {                                   \
                    for (int x = 0; x < PTL_ATTN_NR; x++) {                               \
                        s[i][x] += av[i] * bv[x];                                         \
                    }                                                                     \
                }                                                                         \
            }                                                                             \
            for (int i = 0; i < PTL_ATTN_MR; i++) {                                       \
                for (int x = 0; x < PTL_ATTN_NR; x++) {                                   \
                    const int64_t ri = u / ncg + i * nrg, cx = u % ncg + x * ncg;         \
                    const int64_t qi = tl->i0 + ri, kj = tl->j0 + cx;                     \
                    T v = s[i][x];                                                        \
                    if (ri >= pr->nr || cx >= pr->nc) {                                   \
                        continue;                                                         \
                    }                                                                     \
                    if (pr->epi == PTL_ATTN_EPI_SCORES) {                                 \
                        v = j->causal && kj > qi ? -(T)INFINITY : v * scale;              \
                        if (j->has_mask && !(j->causal && kj > qi)) {                     \
                            v += mask[ptl_attn_at(&j->mask, tl->b, tl->h, qi, kj)];       \
                        }                                                                 \
                    }                                                                     \
                    else if (pr->epi == PTL_ATTN_EPI_DSCORES) {                           \
                        v = pr->p[ri * pr->ldo + cx] * (v - pr->d[ri]) * scale;           \
                    }                                                                     \
                    pr->out[ri * pr->ldo + cx] = v;                                       \
                }                                                                         \
            }                                                                             \
        }                                                                                 \
    }                                                                                     \
                                                                                          \
    /* forward, a thread per row: the new running max m and the rescale alpha */          \
    PTL_HD static inline void ptl_attn_rowmax_##DT(const T *sc, int64_t bk,               \
                                                   const PtlAttnTile *tl, T *m, T *alpha, \
                                                   int64_t t, int64_t nt)                 \
    {                                                                                     \
        for (int64_t i = t; i < tl->nq; i += nt) {                                        \
            T mx = m[i];                                                                  \
            for (int64_t c = 0; c < tl->nk; c++) {                                        \
                mx = sc[i * bk + c] > mx ? sc[i * bk + c] : mx;                           \
            }                                                                             \
            alpha[i] = mx == -(T)INFINITY ? (T)1 : EXP(m[i] - mx);                        \
            m[i] = mx;                                                                    \
        }                                                                                 \
    }                                                                                     \
                                                                                          \
    /* sc[i][c] = exp(sc[i][c] - sub[i]) (0 for -inf): the forward's p with sub the       \
     * running max, the backward's P with sub the logsumexp (+inf: an empty row) */       \
    PTL_HD static inline void ptl_attn_exp_##DT(T *sc, int64_t bk, const PtlAttnTile *tl, \
                                                const T *sub, int64_t t, int64_t nt)      \
    {                                                                                     \
        for (int64_t u = t; u < tl->nq * tl->nk; u += nt) {                               \
            const int64_t i = u / tl->nk, c = u % tl->nk;                                 \
            const T s = sc[i * bk + c];                                                   \
            sc[i * bk + c] = s == -(T)INFINITY ? (T)0 : EXP(s - sub[i]);                  \
        }                                                                                 \
    }                                                                                     \
                                                                                          \
    /* forward, a thread per row: l = alpha l + sum_c p */                                \
    PTL_HD static inline void ptl_attn_rowsum_##DT(const T *sc, int64_t bk,               \
                                                   const PtlAttnTile *tl, T *l,           \
                                                   const T *alpha, int64_t t, int64_t nt) \
    {                                                                                     \
        for (int64_t i = t; i < tl->nq; i += nt) {                                        \
            T s = 0;                                                                      \
            for (int64_t c = 0; c < tl->nk; c++) {                                        \
                s += sc[i * bk + c];                                                      \
            }                                                                             \
            l[i] = l[i] * alpha[i] + s;                                                   \
        }                                                                                 \
    }                                                                                     \
                                                                                          \
    /* forward FINISH: out = acc / l (0 for an empty row), lse = m + log l (+inf; nan     \
     * for l nan: Note [Attention with NaN] in attention.c) */                            \
    PTL_HD static inline void ptl_attn_write_out_##DT(const PtlDeviceAttnJob *j,          \
                                                      const PtlAttnTile *tl, const T *acc, \
                                                      int64_t ld, const T *m, const T *l, \
                                                      int64_t t, int64_t nt)              \
    {                                                                                     \
        T *out = (T *)j->out.data, *lse = (T *)j->lse.data;                               \
        for (int64_t u = t; u < tl->nq * j->Ev; u += nt) {                                \
            const int64_t i = u / j->Ev, e = u % j->Ev;                                   \
            const T inv = l[i] == 0 ? (T)0 : 1 / l[i];                                    \
            out[ptl_attn_at(&j->out, tl->b, tl->h, tl->i0 + i, e)] = acc[i * ld + e] * inv; \
        }                                                                                 \
        for (int64_t i = t; i < tl->nq; i += nt) {                                        \
            lse[ptl_attn_at(&j->lse, tl->b, tl->h, tl->i0 + i, 0)] =                      \
                l[i] == 0 ? (T)INFINITY : m[i] + LOG(l[i]);                               \
        }                                                                                 \
    }                                                                                     \
                                                                                          \
    /* backward, a thread per row of the query tile: its logsumexp and D = dO . O */      \
    PTL_HD static inline void ptl_attn_rows_##DT(const PtlDeviceAttnJob *j,               \
                                                 const PtlAttnTile *tl, const T *dos,     \
                                                 int64_t ld, T *lse, T *d, int64_t t,     \
                                                 int64_t nt)                              \
    {                                                                                     \
        const T *o = (const T *)j->o.data, *ls = (const T *)j->lse.data;                  \
        for (int64_t i = t; i < tl->nq; i += nt) {                                        \
            const int64_t qi = tl->i0 + i;                                                \
            T s = 0;                                                                      \
            for (int64_t e = 0; e < j->Ev; e++) {                                         \
                s += dos[i * ld + e] * o[ptl_attn_at(&j->o, tl->b, tl->h, qi, e)];        \
            }                                                                             \
            d[i] = s;                                                                     \
            lse[i] = ls[ptl_attn_at(&j->lse, tl->b, tl->h, qi, 0)];                       \
        }                                                                                 \
    }                                                                                     \
                                                                                          \
    /* Stage `stage` of item `item` of kernel `kind` (tile `it` of its loop, -1 outside   \
     * it) for threads t, t + nt, ...: Note [CUDA flash attention]. */                    \
    PTL_HD static inline void ptl_attn_step_##DT(int kind, int stage,                     \
                                                 const PtlDeviceAttnJob *j,               \
                                                 const PtlCudaAttnPlan *p, int64_t item,  \
                                                 int64_t it, T *sm, int64_t t, int64_t nt) \
    {                                                                                     \
        const PtlAttnSmem o = ptl_attn_smem(kind, p->bq, p->bk, p->ld);                   \
        const PtlAttnTile tl = ptl_attn_tile(kind, j, p, item, it);                       \
        const int64_t ld = p->ld, bk = p->bk, E = j->E, Ev = j->Ev;                       \
        const int fwd = kind == PTL_ATTN_FORWARD, kv = kind == PTL_ATTN_BACKWARD_KV;      \
        T *qs = sm + o.qs, *dos = sm + o.dos, *ks = sm + o.ks, *vs = sm + o.vs;           \
        T *sc = sm + o.sc, *ds = sm + o.ds, *r0 = sm + o.r0, *r1 = sm + o.r1;             \
        T *acc = sm + o.acc, *dkt = sm + o.dk, *dvt = sm + o.dv, *r2 = sm + o.r2;         \
        /* the products: {epi, nr, nc, n, ars, acs, brs, bcs, ldo, a, b, p, d, alpha, out} */ \
        const PtlAttnProduct_##DT scores = {PTL_ATTN_EPI_SCORES, tl.nq, tl.nk, E, ld, 1, 1, \
                                            ld, bk, qs, ks, 0, 0, 0, sc};                 \
        const PtlAttnProduct_##DT dscores = {PTL_ATTN_EPI_DSCORES, tl.nq, tl.nk, Ev, ld, 1, \
                                             1, ld, bk, dos, vs, sc, r1, 0, ds};          \
        const PtlAttnProduct_##DT pv = {PTL_ATTN_EPI_ACC, tl.nq, Ev, tl.nk, bk, 1, ld, 1, \
                                        ld, sc, vs, 0, 0, r2, acc};                       \
        const PtlAttnProduct_##DT dv = {PTL_ATTN_EPI_ACC, tl.nk, Ev, tl.nq, 1, bk, ld, 1, \
                                        ld, sc, dos, 0, 0, 0, dvt};                       \
        const PtlAttnProduct_##DT dk = {PTL_ATTN_EPI_ACC, tl.nk, E, tl.nq, 1, bk, ld, 1,  \
                                        ld, ds, qs, 0, 0, 0, dkt};                        \
        const PtlAttnProduct_##DT dq = {PTL_ATTN_EPI_ACC, tl.nq, E, tl.nk, bk, 1, ld, 1,  \
                                        ld, ds, ks, 0, 0, 0, acc};                        \
        switch (stage) {                                                                  \
        case PTL_ATTN_INIT:                                                               \
            if (kv) {                                                                     \
                ptl_attn_load_##DT(&j->k, tl.b, tl.h, tl.j0, tl.nk, E, ks, ld, t, nt);    \
                ptl_attn_load_##DT(&j->v, tl.b, tl.h, tl.j0, tl.nk, Ev, vs, ld, t, nt);   \
                ptl_attn_fill_##DT(dkt, 2 * p->bk * ld, 0, t, nt);                        \
                break;                                                                    \
            }                                                                             \
            ptl_attn_load_##DT(&j->q, tl.b, tl.h, tl.i0, tl.nq, E, qs, ld, t, nt);        \
            ptl_attn_fill_##DT(acc, p->bq * ld, 0, t, nt);                                \
            if (fwd) {                                                                    \
                ptl_attn_fill_##DT(r0, p->bq, -(T)INFINITY, t, nt);                       \
                ptl_attn_fill_##DT(r1, p->bq, 0, t, nt);                                  \
            }                                                                             \
            else {                                                                        \
                ptl_attn_load_##DT(&j->dout, tl.b, tl.h, tl.i0, tl.nq, Ev, dos, ld, t, nt); \
            }                                                                             \
            break;                                                                        \
        case PTL_ATTN_INIT2:                                                              \
            if (kind == PTL_ATTN_BACKWARD_Q) {                                            \
                ptl_attn_rows_##DT(j, &tl, dos, ld, r0, r1, t, nt);                       \
            }                                                                             \
            break;                                                                        \
        case PTL_ATTN_LOAD:                                                               \
            if (kv) {                                                                     \
                ptl_attn_load_##DT(&j->q, tl.b, tl.h, tl.i0, tl.nq, E, qs, ld, t, nt);    \
                ptl_attn_load_##DT(&j->dout, tl.b, tl.h, tl.i0, tl.nq, Ev, dos, ld, t, nt); \
            }                                                                             \
            else {                                                                        \
                ptl_attn_load_##DT(&j->k, tl.b, tl.h, tl.j0, tl.nk, E, ks, ld, t, nt);    \
                ptl_attn_load_##DT(&j->v, tl.b, tl.h, tl.j0, tl.nk, Ev, vs, ld, t, nt);   \
            }                                                                             \
            break;                                                                        \
        case PTL_ATTN_SCORES:                                                             \
            ptl_attn_product_##DT(j, &tl, &scores, t, nt);                                \
            if (kv) {                                                                     \
                ptl_attn_rows_##DT(j, &tl, dos, ld, r0, r1, t, nt);                       \
            }                                                                             \
            break;                                                                        \
        case PTL_ATTN_PROBS:                                                              \
            if (fwd) {                                                                    \
                ptl_attn_rowmax_##DT(sc, bk, &tl, r0, r2, t, nt);                         \
            }                                                                             \
            else {                                                                        \
                ptl_attn_exp_##DT(sc, bk, &tl, r0, t, nt);                                \
            }                                                                             \
            break;                                                                        \
        case PTL_ATTN_DSCORES:                                                            \
            if (fwd) {                                                                    \
                ptl_attn_exp_##DT(sc, bk, &tl, r0, t, nt);                                \
                break;                                                                    \
            }                                                                             \
            ptl_attn_product_##DT(j, &tl, &dscores, t, nt);                               \
            if (kv) {                                                                     \
                ptl_attn_product_##DT(j, &tl, &dv, t, nt);                                \
            }                                                                             \
            break;                                                                        \
        case PTL_ATTN_ACC:                                                                \
            if (fwd) {                                                                    \
                ptl_attn_rowsum_##DT(sc, bk, &tl, r1, r2, t, nt);                         \
                ptl_attn_product_##DT(j, &tl, &pv, t, nt);                                \
            }                                                                             \
            else if (kv) {                                                                \
                ptl_attn_product_##DT(j, &tl, &dk, t, nt);                                \
            }                                                                             \
            else {                                                                        \
                ptl_attn_product_##DT(j, &tl, &dq, t, nt);                                \
            }                                                                             \
            break;                                                                        \
        default:                                                                          \
            if (fwd) {                                                                    \
                ptl_attn_write_out_##DT(j, &tl, acc, ld, r0, r1, t, nt);                  \
            }                                                                             \
            else if (kv) {                                                                \
                ptl_attn_store_##DT(dkt, ld, &j->dk, tl.b, tl.h, tl.j0, tl.nk, E, t, nt); \
                ptl_attn_store_##DT(dvt, ld, &j->dv, tl.b, tl.h, tl.j0, tl.nk, Ev, t,     \
                                    nt);                                                  \
            }                                                                             \
            else {                                                                        \
                ptl_attn_store_##DT(acc, ld, &j->dq, tl.b, tl.h, tl.i0, tl.nq, E, t,      \
                                    nt);                                                  \
            }                                                                             \
            break;                                                                        \
        }                                                                                 \
    }

PTL_ATTN_DEFINE(float, f4, expf, logf)
PTL_ATTN_DEFINE(double, f8, exp, log)
#undef PTL_ATTN_DEFINE

/* The plan of job j in the work dtype (f8: float64) under tuning t (attention_plan.c). */
PtlCudaAttnPlan ptl_cuda_attention_plan(const PtlDeviceAttnJob *j, int f8,
                                        const PtlCudaReduceTuning *t);
/* The hook: the forward (backward 0) or the backward on the device, or emulated on the host
 * while kernel emulation is on.  0, or -1 with an error set (a head dim over 256). */
int ptl_cuda_attention(const PtlDeviceAttnJob *j, int backward, int f8);
/* attention.cu (cuda_stub.c without nvcc): kernel `kind` of the plan on the current stream */
int ptl_cuda_attention_launch(const PtlDeviceAttnJob *j, const PtlCudaAttnPlan *p, int kind,
                              int f8);

#ifdef __cplusplus
}
#endif
#endif
