/* gemm.c -- a cache-blocked GEMM: C = alpha * A @ B + beta * C.  Plays the role of
 * ATen/native/cpu/BlasKernel.cpp (PyTorch's fallback when no BLAS is linked); the blocking
 * follows Goto & van de Geijn, "Anatomy of High-Performance Matrix Multiplication".
 *
 * Note [GEMM blocking]
 * ~~~~~~~~~~~~~~~~~~~~
 * for jc over n in steps of NC:                    B block: KC x NC, in L2 or L3
 *     for pc over k in steps of KC:
 *         pack B[pc:pc+KC, jc:jc+NC] into NR-wide slivers
 *         for ic over m in steps of MC:            A block: MC x KC, in L2
 *             pack A[ic:ic+MC, pc:pc+KC] into MR-tall slivers
 *             for each NR sliver of B, each MR sliver of A:
 *                 micro-kernel: acc (MR x NR) = A sliver @ B sliver   (KC rank-1 updates)
 *                 C tile = alpha * acc + beta' * C tile        (beta' = beta, then 1)
 * Packing reads the operands through their strides, so transposed and broadcast views cost
 * nothing extra, and it converts float16/bfloat16 to float32 and integers to int64 on the
 * way.  The micro-kernel only sees contiguous, zero-padded slivers, so one kernel per
 * engine serves every layout.  An engine is an accumulation type and an instruction set,
 * chosen at run time by ptl_cpu_capability() (PTL_CPU_CAPABILITY lowers it): float and
 * double tiles of 12 x 32 and 12 x 16 on AVX-512 (24 zmm accumulators, two B vectors, A
 * broadcast from memory into the FMA), 6 x 16 floats and 6 x 8 doubles on AVX2+FMA, and
 * portable C kernels (written so gcc vectorizes their NR loop) for those and for int64.
 * Edge tiles are computed whole and only their valid part is stored, except that AVX-512
 * computes a last A sliver of at most 4, 8 or 10 rows with a tile of that height (an LSTM
 * step's batch of 16 or 32 rows wasted a third or a ninth of its multiply-adds on padding),
 * that AVX2 packs an A block's last 7 or 8 rows as two 4-row slivers for a 4-row tile (6 + 2
 * computed 10 rows through the accumulator; 4 + 4 computes 8, stored by the tile),
 * and that the SIMD engines compute a last B sliver of at most NR / 4 or NR / 2 columns with
 * a tile of one vector per row, a quarter or a half as wide (a GPT head's 65 columns are
 * 32 + 32 + 1 on AVX-512: the last column cost a whole 32-wide tile, a third of the product).
 * C always has the engine's type (float, double or int64): ptl_gemm routes other output
 * dtypes through a temporary.
 *
 * Every engine of one type cuts K at the same KC (float32 512, or one block up to 640;
 * float64 and int64 256, or up to 320), and each C
 * element is one chain of multiply-adds over k in order from zero within a K block, then
 * alpha * acc + beta' * C rounded as mul, mul, add: the AVX-512 and AVX2 tiles (both FMA)
 * give the same bits (tests/aten/test_gemm.py compares them); the portable kernels, which
 * round each product before adding it, do not.
 *
 * Note [GEMM K block]
 * ~~~~~~~~~~~~~~~~~~~
 * Each K block is a pass over C: every tile loads its C, adds and stores it, and a 2048^3
 * product's C (16 MiB) then lives in L3, shared with the other core.  float32's KC was 256
 * (a 12 x 256 A sliver and a 256 x 32 B sliver fit L1 together); at 512 a B sliver (64 KiB
 * on AVX-512) no longer fits L1 but streams from L2 in time (a k step reads 176 bytes per
 * 24 cycles of FMAs), and half the passes over C are saved.  One Zen 4 core, thread CPU
 * time, min of 8-30 runs in one process, load 9-11 on the 2 cores, GFLOP/s, KC 256 -> 512:
 * 2048^3 102 -> 104-107 (1024: 106-107), 1024^3 100 -> 104-105; AVX2's 6 x 16 tile 1024^3
 * 102 -> 104 (it keeps the same KC so that both engines give the same bits).  MC (96-240)
 * and NC (512-2048) moved nothing measurable there.  K <= 320 is one block either way, so
 * the training shapes change only where K > 320 (within the noise of +-5% there).  Tried
 * and dropped: fetching C 32 k steps before the tile's end instead of at
 * its start (1% at 2048^3, but the split loop cost 6% on tiles of 10 k steps: 128 x 10 @
 * 10 x 256 7.1 -> 7.6 us), and C fetched into L2 only (no change).  The sums' order changes
 * with KC (results differ from KC 256's in the last bits), not across engines or thread
 * counts.
 *
 * Integers accumulate in uint64_t so that overflow wraps as two's complement (as PyTorch's
 * integer matmul does) without signed-overflow undefined behaviour. */
#include <stdlib.h>
#include <string.h>

#include "../../c10/error.h"
#include "../../c10/parallel.h"
#include "../tensor_iterator.h"
#include "device_gemm.h"
#include "gemm.h"
#include "gemm_complex.h"
#include "gemm_impl.h"

/* A row-major B is also read in place by products of up to 64 rows when a K block of it spans
 * at most this many bytes (Note [GEMM packing of B]). */
#define GEMM_DIRECT_B_SPAN (32 * 1024)
/* and by a product of any height whose K is at most this (Note [GEMM packing of B]) */
#define GEMM_DIRECT_B_SMALL_K 32
/* A B read in place by several A blocks spans at most this many bytes a K block (Note [GEMM
 * packing of B]) */
#define GEMM_DIRECT_B_L2_SPAN (512 * 1024)


/* ---- the driver ---- */

/* The work of one (jc, pc) step for one matrix: MC blocks of A x one block of B. */
typedef struct GemmStep {
    const GemmProblem *pr;
    const char *a, *b;                   /* A at (0, pc); B at (pc, jc) */
    const char *bp;                      /* packed B block, or NULL: slivers packed before use */
    int b_direct;                        /* whole B slivers are read in place */
    int a_direct;                        /* whole A slivers are read in place, 1: a row-major
                                          * A, 2: a transposed one (Note [GEMM
                                          * direct A]) */
    int a_pack_first;                    /* a transposed A's whole slivers are packed by the
                                          * first B sliver's tiles (Note [GEMM transposed A
                                          * packed by its first tiles]) */
    int b_pack_first;                    /* a row-major B's whole slivers are packed by the
                                          * first A sliver's tile (Note [GEMM B packed by its
                                          * first tile]) */
    char *c;                             /* C at (0, jc) */
    int64_t nc, kc;
    int64_t mc;                          /* rows per A block (at most the engine's MC) */
    double beta;                         /* beta for this pc step */
    const char *s;                       /* what beta scales at (0, jc): C, or pr->s */
    int64_t srs, scs;
} GemmStep;

/* (gemm_impl.h) */
void *
ptl_gemm_alloc(size_t nbytes)
{
    void *p = aligned_alloc(64, (nbytes + 63) & ~(size_t)63);
    if (p == NULL) {
        ptl_error_set(PTL_ERR_MEMORY, "gemm: out of memory allocating %zu bytes", nbytes);
    }
    return p;
}

/* dst[i, j] = src[i, j] for i < rows, j < cols: elements of `item` bytes, strides in
 * elements; a row at a time when both rows are contiguous */
static void
copy_tile(size_t item, int64_t rows, int64_t cols, const char *src, int64_t srs, int64_t scs,
          char *dst, int64_t drs, int64_t dcs)
{
    for (int64_t i = 0; i < rows; i++) {
        if (scs == 1 && dcs == 1) {
            memcpy(dst + (size_t)(i * drs) * item, src + (size_t)(i * srs) * item,
                   (size_t)cols * item);
            continue;
        }
        for (int64_t j = 0; j < cols; j++) {
            memcpy(dst + (size_t)(i * drs + j * dcs) * item,
                   src + (size_t)(i * srs + j * scs) * item, item);
        }
    }
}

/* A step whose packed A block and B sliver fit in this many bytes keeps them on the stack,
 * not in two aligned_alloc blocks per step (a batch of 64 products of 64 x 64 x 64 ran 3%
 * faster). */
#define GEMM_STACK_BYTES (24 * 1024)

/* B's sliver jr (nr columns) for a step's A block ic: in place when the step reads B in
 * place and `direct_ok` (*ldb set to B's row stride, Note [GEMM packing of B]), or packed, now
 * or by the first A sliver's tile when `tile_ok` (*by_tile set, Note [GEMM B packed by its
 * first tile] in gemm_kernels.c): one packed just before use, or one of a packed block on
 * the first A block's pass. */
static const char *
step_sliver_b(const GemmStep *st, int64_t ic, int64_t jr, int64_t nr, int direct_ok,
              char *sliver, int64_t *ldb, int tile_ok, int *by_tile)
{
    const GemmProblem *pr = st->pr;
    const GemmEngine *e = pr->e;
    const size_t bitem = ptl_dtype_itemsize(pr->b.dtype);
    char *bs = sliver;
    if (st->bp != NULL) {
        bs = (char *)st->bp + (size_t)(jr * st->kc) * e->item;
        if (!st->b_pack_first || ic > 0 || nr < e->nr) {
            return bs;
        }
    }
    else if (st->b_direct && direct_ok) {
        *ldb = pr->b.rs;
        return st->b + (size_t)jr * bitem;
    }
    *by_tile = tile_ok;
    if (!tile_ok) {
        pr->pack_b(st->b + (size_t)(jr * pr->b.cs) * bitem, pr->b.cs, pr->b.rs, nr, st->kc,
                   e->nr, bs);
    }
    return bs;
}

/* The tile on A's rows i0 .. i0 + MR that also packs an operand (Notes [GEMM transposed A
 * packed by its first tiles] and [GEMM B packed by its first tile] in gemm_kernels.c): A's
 * sliver at `as` (and the next when `a_left` rows of whole slivers remain), or B's sliver
 * jr at `bs` from its in-place columns when `packs_a` is 0, for A packed or, when `a_in_place`,
 * read in place.  C's tile stored by it when whole, else through acc and the update. */
static void
pack_tile(const GemmStep *st, int packs_a, int64_t i0, int64_t jr, int64_t a_left,
          int a_in_place, const char *as, const char *bs, int64_t ldb, char *c,
          const char *src, int64_t nr)
{
    const GemmProblem *pr = st->pr;
    const GemmEngine *e = pr->e;
    _Alignas(64) char acc[GEMM_ACC_BYTES];
    const char *a = packs_a ? st->a + (size_t)i0 * ptl_dtype_itemsize(pr->a.dtype) : as;
    const char *b = packs_a ? bs : st->b + (size_t)jr * ptl_dtype_itemsize(pr->b.dtype);
    int64_t lda = packs_a || (a_in_place && st->a_direct == 2) ? pr->a.cs
                  : a_in_place                                 ? pr->a.rs
                                                               : 0;
    PackTileFn pt = packs_a       ? (a_left > e->mr ? e->direct_at_pack2 : e->direct_at_pack)
                    : !a_in_place ? e->tile_bpack
                    : st->a_direct == 2 ? e->direct_at_bpack
                                        : e->direct_a_bpack;
    char *pk = (char *)(packs_a ? as : bs);
    ldb = packs_a ? ldb : pr->b.rs;
    if (nr == e->nr && pr->c.cs == 1 && (st->scs == 1 || st->beta == 0)) {
        pt(st->kc, a, lda, pk, b, ldb, c, pr->c.rs, src, st->srs, pr->alpha, st->beta, e->mr);
        return;
    }
    pt(st->kc, a, lda, pk, b, ldb, acc, e->nr, acc, e->nr, 1, 0, e->mr);
    if (src != c && st->beta != 0) {
        copy_tile(e->item, e->mr, nr, src, st->srs, st->scs, c, pr->c.rs, pr->c.cs);
    }
    e->update(acc, e->nr, e->mr, nr, c, pr->c.rs, pr->c.cs, pr->alpha, st->beta);
}

/* A block's rows [direct, mc) packed before its tiles, ap at row `direct`: all but the whole
 * slivers that the first B sliver's tiles pack (Note [GEMM transposed A packed by its first
 * tiles] in gemm_kernels.c), whose rows it returns; the rows from `split` on 4 wide. */
static int64_t
step_pack_a(const GemmStep *st, int64_t ic, int64_t mc, int64_t split, int64_t direct,
            char *ap)
{
    const GemmProblem *pr = st->pr;
    const GemmEngine *e = pr->e;
    const size_t aitem = ptl_dtype_itemsize(pr->a.dtype);
    int64_t fused = st->a_pack_first ? split / e->mr * e->mr : 0, from = direct + fused;
    if (split > from) {
        pr->pack_a(st->a + (size_t)((ic + from) * pr->a.rs) * aitem, pr->a.rs, pr->a.cs,
                   split - from, st->kc, e->mr, ap + (size_t)(fused * st->kc) * e->item);
    }
    if (split < mc) {
        pr->pack_a(st->a + (size_t)((ic + split) * pr->a.rs) * aitem, pr->a.rs, pr->a.cs,
                   mc - split, st->kc, 4, ap + (size_t)((split - direct) * st->kc) * e->item);
    }
    return fused;
}

/* The tile of the whole slivers from row ir of a step's A block up to *end (A read in place
 * up to `direct`, then packed up to `split`) when it stores C itself and ir's tile does not
 * `pack` an operand, else NULL: gemm_step calls it for them all without the edge cases'
 * tests, which were 2-4% of a K = 128 product. */
static TileFn
step_run(const GemmStep *st, int64_t ir, int64_t direct, int64_t split, int pack, TileFn wide,
         int64_t tile_nr, int64_t nr, int store_c, int store_ct, int64_t *end)
{
    const GemmEngine *e = st->pr->e;
    *end = ir < direct ? direct : split;
    if (pack || ir + e->mr > *end || nr != (ir < direct ? e->nr : tile_nr)) {
        return NULL;
    }
    if (ir < direct) {
        return store_ct ? (st->a_direct == 1 ? e->direct_a_ct : NULL)
               : store_c ? (st->a_direct == 2 ? e->direct_at : e->direct_a)
                         : NULL;
    }
    return store_ct ? (wide == e->tile ? e->tile_ct : NULL) : store_c ? wide : NULL;
}

/* The tile for the sliver at row ir (mr rows) of a step's A block, its rows (*tile_mr) and
 * columns (*tile_w) and A's row stride for it (*ars): `wide` on whole packed slivers; a last
 * sliver of fewer rows gets the shortest tile that covers them (on the 4-wide slivers past
 * split, always pair4), and A's rows read in place before `direct` the whole width (a
 * narrower last B sliver goes through acc; an edge tile reads only A's mr rows, so it
 * computes and stores those). */
static TileFn
step_tile(const GemmStep *st, int64_t ir, int64_t mr, int64_t direct, int64_t split,
          TileFn wide, TileFn edge, int64_t tile_nr, int64_t *tile_mr, int64_t *tile_w,
          int64_t *ars)
{
    const GemmEngine *e = st->pr->e;
    *tile_mr = e->mr;
    *tile_w = tile_nr;
    *ars = 0;
    if (ir < direct) {
        *tile_mr = mr < e->mr ? mr : e->mr;
        *tile_w = e->nr;
        *ars = st->a_direct == 2 ? st->pr->a.cs : st->pr->a.rs;
        return mr < e->mr ? edge : st->a_direct == 2 ? e->direct_at : e->direct_a;
    }
    if (ir >= split) {
        *tile_mr = 4;
        *tile_w = e->nr;
        return e->pair4;
    }
    const TileFn edges[3] = {e->tile4, e->tile8, e->tile10};
    const int64_t rows[3] = {4, 8, 10};
    for (int i = 0; i < 3 && tile_nr == e->nr; i++) {
        if (mr <= rows[i] && edges[i] != NULL) {
            *tile_mr = rows[i];
            return edges[i];
        }
    }
    return wide;
}

/* One step: every A block against the B block. */
static int
gemm_step(const GemmStep *st)
{
    const GemmProblem *pr = st->pr;
    const GemmEngine *e = pr->e;
    const size_t aitem = ptl_dtype_itemsize(pr->a.dtype);
    const int64_t nsl = (st->nc + e->nr - 1) / e->nr;
    const int64_t kc = st->kc, crs = pr->c.rs, ccs = pr->c.cs, srs = st->srs, scs = st->scs;
    const double alpha = pr->alpha, beta = st->beta;
    const int store_c = ccs == 1 && (scs == 1 || beta == 0);
    /* or, a C^T whose rows are one element apart, by the tiles that store it transposed
     * (Note [GEMM C stored transposed] in gemm_kernels.c) */
    const int store_ct = crs == 1 && ccs != 1 && (srs == 1 || beta == 0);
    _Alignas(64) char acc[GEMM_ACC_BYTES];
    const int64_t lda = pr->a.rs;
    /* with A read in place only a last sliver's rows are packed: fewer than MR, or the last
     * MR + 1 .. 8 as two 4-wide slivers */
    const int64_t ap_rows = st->a_direct && st->mc > e->mr + 8 ? e->mr + 8 : st->mc;
    const size_t ap_bytes = (size_t)(ap_rows * st->kc) * e->item;
    const size_t sl_bytes = st->bp == NULL ? (size_t)(st->kc * e->nr) * e->item : 0;
    _Alignas(64) char stack[GEMM_STACK_BYTES];
    const int on_stack = ap_bytes + sl_bytes <= sizeof(stack);
    char *ap = on_stack ? stack : ptl_gemm_alloc(ap_bytes);
    char *sliver = st->bp != NULL ? NULL : on_stack ? stack + ap_bytes : ptl_gemm_alloc(sl_bytes);

    if (ap == NULL || (st->bp == NULL && sliver == NULL)) {
        if (!on_stack) {
            free(ap);
        }
        return -1;
    }
    for (int64_t ic = 0; ic < pr->m; ic += st->mc) {
        int64_t mc = pr->m - ic < st->mc ? pr->m - ic : st->mc;
        /* a last MR + 1 or MR + 2 rows (7 or 8 on AVX2) from `split` on: two slivers packed
         * 4 wide for e->pair4, not a whole sliver and one mostly of padding */
        int64_t rem = mc % e->mr, split = mc;
        if (e->pair4 != NULL && mc > e->mr && rem > 0 && e->mr + rem <= 8) {
            split = mc - e->mr - rem;
        }
        /* the whole slivers before `split` read in place, and a last one of at most 4 or 8
         * rows too when the engine has a tile for it (else it is packed) */
        int64_t direct = st->a_direct ? split / e->mr * e->mr : 0;
        TileFn edge = NULL;
        if (st->a_direct == 1 && split == mc && direct < mc) {
            edge = mc - direct <= 4 ? e->direct_a4 : mc - direct <= 8 ? e->direct_a8 : NULL;
            direct = edge != NULL ? mc : direct;
        }
        int64_t fused = step_pack_a(st, ic, mc, split, direct, ap);
        for (int64_t s = 0; s < nsl; s++) {
            int64_t jr = s * e->nr;
            int64_t nr = st->nc - jr < e->nr ? st->nc - jr : e->nr;
            /* a last sliver of fewer columns: the narrowest tile that covers them */
            TileFn wide = e->tile;
            int64_t tile_nr = e->nr;
            if (nr <= e->nr / 4 && e->quarter != NULL) {
                wide = e->quarter;
                tile_nr = e->nr / 4;
            }
            else if (nr <= e->nr / 2 && e->half != NULL) {
                wide = e->half;
                tile_nr = e->nr / 2;
            }
            /* B read in place by a tile exactly as wide as the sliver (Note [GEMM packing of
             * B]): whole slivers, and a last one of NR / 2 or NR / 4 columns unless a
             * whole-width tile (direct A rows, pair4 rows past split) would read NR columns
             * of it, past B's end on its last row; or packed, by the first A sliver's tile
             * when that is a whole one and does not pack A */
            int b_by_tile = 0;
            int64_t ldb = e->nr;
            int narrow_ok = tile_nr == e->nr || (direct == 0 && split == mc);
            int tile_ok = st->b_pack_first && nr == e->nr && !(s == 0 && fused > 0) &&
                          (direct >= e->mr || (direct == 0 && split >= e->mr));
            const char *bs = step_sliver_b(st, ic, jr, nr, nr == tile_nr && narrow_ok, sliver,
                                           &ldb, tile_ok, &b_by_tile);
            char *cs = st->c + (size_t)(ic * crs + jr * ccs) * e->item;
            const char *ss = st->s + (size_t)(ic * srs + jr * scs) * e->item;
            for (int64_t ir = 0; ir < mc;) {
                int64_t h = ir < split ? e->mr : 4;
                int64_t mr = mc - ir < h ? mc - ir : h;
                TileFn tile;
                int64_t tile_mr, tile_w, ars;
                const char *as = ir < direct ? st->a + (size_t)((ic + ir) * lda) * aitem
                                             : ap + (size_t)((ir - direct) * kc) * e->item;
                int packs = (s == 0 && ir < fused) || (ir == 0 && b_by_tile);
                int64_t end;
                TileFn run = step_run(st, ir, direct, split, packs, wide, tile_nr, nr, store_c,
                                      store_ct, &end);
                if (run != NULL) {
                    const int64_t ars1 = ir >= direct ? 0 : st->a_direct == 2 ? pr->a.cs : lda;
                    const size_t astep = ir < direct ? (size_t)(e->mr * lda) * aitem
                                                     : (size_t)(e->mr * kc) * e->item;
                    for (; ir + e->mr <= end; ir += e->mr, as += astep) {
                        run(kc, as, ars1, bs, ldb, cs, store_ct ? ccs : crs, ss,
                            store_ct ? scs : srs, alpha, beta, e->mr);
                        cs += (size_t)(e->mr * crs) * e->item;
                        ss += (size_t)(e->mr * srs) * e->item;
                    }
                    continue;
                }
                if ((s == 0 && ir < fused && ir / e->mr % 2 == 0) || (ir == 0 && b_by_tile)) {
                    pack_tile(st, s == 0 && ir < fused, ic + ir, jr, fused - ir, direct > 0, as,
                              bs, ldb, cs, ss, nr);
                    cs += (size_t)(h * crs) * e->item;
                    ss += (size_t)(h * srs) * e->item;
                    ir += h;
                    continue;
                }
                tile = step_tile(st, ir, mr, direct, split, wide, edge, tile_nr, &tile_mr,
                                 &tile_w, &ars);
                /* tiles of a row-major C whose columns are all used are written by the
                 * tile itself, its first mr rows (a 10-row last sliver through the
                 * accumulator and the update took longer than a whole 12-row tile) */
                TileFn ct = !store_ct || nr != tile_w ? NULL
                            : tile == e->tile         ? e->tile_ct
                            : tile == e->direct_a     ? e->direct_a_ct
                            : tile == e->pair4        ? e->pair4_ct
                                                      : NULL;
                if (ct != NULL) {
                    ct(kc, as, ars, bs, ldb, cs, ccs, ss, scs, alpha, beta, mr);
                }
                else if (tile != NULL && nr == tile_w && store_c) {
                    tile(kc, as, ars, bs, ldb, cs, crs, ss, srs, alpha, beta, mr);
                }
                else {
                    if (tile != NULL) {
                        tile(kc, as, ars, bs, ldb, acc, e->nr, acc, e->nr, 1, 0, tile_mr);
                    }
                    else {
                        e->kernel(kc, as, bs, acc);
                    }
                    if (ss != cs && beta != 0) {
                        copy_tile(e->item, mr, nr, ss, srs, scs, cs, crs, ccs);
                    }
                    e->update(acc, e->nr, mr, nr, cs, crs, ccs, alpha, beta);
                }
                cs += (size_t)(h * crs) * e->item;
                ss += (size_t)(h * srs) * e->item;
                ir += h;
            }
        }
    }
    if (!on_stack) {
        free(ap);
        free(sliver);
    }
    return 0;
}

/* C = beta * C for k == 0 (zeros when beta == 0). */
static void
gemm_scale(const GemmProblem *pr, char *c)
{
    const GemmEngine *e = pr->e;
    _Alignas(64) char zero[GEMM_ACC_BYTES];
    memset(zero, 0, sizeof(zero));
    for (int64_t i = 0; i < pr->m; i += e->mr) {
        for (int64_t j = 0; j < pr->n; j += e->nr) {
            int64_t mr = pr->m - i < e->mr ? pr->m - i : e->mr;
            int64_t nr = pr->n - j < e->nr ? pr->n - j : e->nr;
            e->update(zero, e->nr, mr, nr, c + (size_t)(i * pr->c.rs + j * pr->c.cs) * e->item,
                      pr->c.rs, pr->c.cs, pr->alpha, pr->beta);
        }
    }
}

/* Note [GEMM K split]
 * ~~~~~~~~~~~~~~~~~~~~
 * A product with a long K and a small C (a convolution's weight gradient: 32 x 9 over
 * K = batch * pixels = 43264) gives the M/N split nothing to share: every KC step would
 * meet the threads for a few microseconds of work.  Such products cut K into chunks of
 * about GEMM_KSPLIT (at most GEMM_KSPLIT_MAX_CHUNKS of them), compute each chunk's partial C
 * on its own (in parallel), then add the parts in chunk order.  The chunking depends only on the shape, so the result does not depend
 * on the thread count. */
#define GEMM_KSPLIT 4096
#define GEMM_KSPLIT_MAX_CHUNKS 32
#define GEMM_KSPLIT_MAX_MN (256 * 256)

static int gemm_one(const GemmProblem *pr, int64_t bi, int parallel);

typedef struct GemmKSplit {
    const GemmProblem *pr;
    int64_t bi, chunks;
    char *parts;                         /* chunks x m x n, the engine's type */
} GemmKSplit;

static int
gemm_ksplit_tasks(void *ctx, int64_t t0, int64_t t1)
{
    const GemmKSplit *ks = (const GemmKSplit *)ctx;
    const GemmProblem *pr = ks->pr;
    const size_t aitem = ptl_dtype_itemsize(pr->a.dtype), bitem = ptl_dtype_itemsize(pr->b.dtype);
    for (int64_t t = t0; t < t1; t++) {
        int64_t k0 = t * pr->k / ks->chunks, k1 = (t + 1) * pr->k / ks->chunks;
        GemmProblem sub = *pr;
        sub.batch = 1;
        sub.k = k1 - k0;
        sub.alpha = 1.0;
        sub.beta = 0.0;
        sub.a.data += (size_t)(ptl_gemm_batch_offset(pr, &pr->a, ks->bi) + k0 * pr->a.cs) * aitem;
        sub.b.data += (size_t)(ptl_gemm_batch_offset(pr, &pr->b, ks->bi) + k0 * pr->b.rs) * bitem;
        sub.s.data = NULL;
        sub.c.data = ks->parts + (size_t)(t * pr->m * pr->n) * pr->e->item;
        sub.c.rs = pr->n;
        sub.c.cs = 1;
        if (gemm_one(&sub, 0, 0) < 0) {
            return -1;
        }
    }
    return 0;
}

#define DEFINE_ADD_PARTS(ETAG, T)                                                         \
    static void                                                                           \
    add_parts_##ETAG(char *parts, int64_t chunks, int64_t len)                            \
    {                                                                                     \
        T *sum = (T *)parts;                                                              \
        for (int64_t t = 1; t < chunks; t++) {                                            \
            const T *part = (const T *)parts + t * len;                                   \
            for (int64_t i = 0; i < len; i++) {                                           \
                sum[i] += part[i];                                                        \
            }                                                                             \
        }                                                                                 \
    }

DEFINE_ADD_PARTS(f4, float)
DEFINE_ADD_PARTS(f8, double)
DEFINE_ADD_PARTS(i8, uint64_t)
#undef DEFINE_ADD_PARTS

/* C = alpha * (sum of the K chunks' products) + beta * C for batch bi. */
static int
gemm_ksplit(const GemmProblem *pr, int64_t bi, int parallel)
{
    const GemmEngine *e = pr->e;
    int64_t chunks = (pr->k + GEMM_KSPLIT - 1) / GEMM_KSPLIT;
    GemmKSplit ks = {pr, bi, chunks < GEMM_KSPLIT_MAX_CHUNKS ? chunks : GEMM_KSPLIT_MAX_CHUNKS,
                     NULL};
    int64_t len = pr->m * pr->n;
    ks.parts = ptl_gemm_alloc((size_t)(ks.chunks * len) * e->item);
    if (ks.parts == NULL) {
        return -1;
    }
    int rc = parallel ? ptl_parallel_for(0, ks.chunks, 1, gemm_ksplit_tasks, &ks)
                      : gemm_ksplit_tasks(&ks, 0, ks.chunks);
    if (rc == 0) {
        if (e->acc_dtype == PTL_DTYPE_FLOAT32) {
            add_parts_f4(ks.parts, ks.chunks, len);
        }
        else if (e->acc_dtype == PTL_DTYPE_FLOAT64) {
            add_parts_f8(ks.parts, ks.chunks, len);
        }
        else {
            add_parts_i8(ks.parts, ks.chunks, len);
        }
        e->update(ks.parts, pr->n, pr->m, pr->n,
                  pr->c.data + (size_t)ptl_gemm_batch_offset(pr, &pr->c, bi) * e->item,
                  pr->c.rs, pr->c.cs, pr->alpha, pr->beta);
    }
    free(ks.parts);
    return rc;
}

/* Rows per A block: blocks of equal height, so m = 200 is two blocks of 108 rows, not
 * 192 + 8. */
static int64_t
gemm_mc(const GemmEngine *e, int64_t m)
{
    int64_t mblocks = (m + e->mc - 1) / e->mc;
    int64_t mc = (m + mblocks - 1) / mblocks;
    return (mc + e->mr - 1) / e->mr * e->mr;
}

/* The K block: K in equal blocks of at most KC, or one block up to 5/4 KC (a thin last block,
 * 576 = 512 + 64, would cost a whole extra pass over C for little work; Note [GEMM K
 * block]).  Every path cuts K here, so they all give the same bits. */
static int64_t
gemm_kc(const GemmEngine *e, int64_t k)
{
    int64_t kblocks = k <= e->kc + e->kc / 4 ? 1 : (k + e->kc - 1) / e->kc;
    return kblocks > 0 ? (k + kblocks - 1) / kblocks : 0;
}

/* Note [GEMM direct A]
 * ~~~~~~~~~~~~~~~~~~~~~
 * A row-major A (the forward's x of x @ W^T, the input gradient's g of g @ W) is packed with
 * 8 x 8 transposes, once per K block, and each packed sliver then meets every B sliver.  When there
 * are few B slivers the packing is not paid back: a GPT's g (1024 x 512) @ W (512 x 128) spent a
 * twentieth of its time packing, an LSTM's input gradient (N = 64) an eighth.  So an engine with a
 * direct_a tile reads the whole MR-row slivers of such an A in place, broadcasting each element
 * from its row (lda apart); a last, shorter sliver too when it has at most 4 rows (AVX2, AVX-512)
 * or 8 (AVX-512) and no 4-row pair follows, with the engine's direct_a4 or direct_a8 tile, which
 * reads only the sliver's rows (a batch of 64 x 64 x 64 products, 5 x 12 + 4 rows each, spent a
 * tenth of its time packing and computing the last 4 rows); else it is packed.  The rule
 * (gemm_a_direct): a row-major A of the engine's type, at most GEMM_DIRECT_A_SLIVERS B slivers
 * (16: the limit was 8, where 12 interleaved row streams per tile had run 1-3% slower than one
 * packed stream, 1024 x 128 @ 128 x 384; since the tiles fetch ahead, 9 to 16 slivers in place
 * ran faster, one Zen 4 core, packed -> in place, us: 1024 x 128 @ 128 x 384 922 -> 894, an
 * MLP's x [128, 784] @ W^T [784, 512] 972 -> 960, its g [128, 256] @ W [256, 512] 298 -> 292,
 * 1024 x 128 @ 128 x 512 1215 -> 1195; float64 128 x 784 @ 784 x 256 1080 -> 1024, 256^3 658
 * -> 622; the AVX2 tiles (16 slivers: 256 columns) 1024 x 128 @ 128 x 256 624 -> 612), no
 * narrow last B sliver (the direct tile is whole-width, and half and quarter tiles read a
 * packed A), and rows that do not pile up in one L1 set (at most MR / 2 of a tile's
 * rows: a 4 KiB row stride puts all twelve in one 8-way set).  Measured on one Zen 4 core: 1024 x
 * 512 @ 512 x 128 104 -> 109 GFLOPS, N = 64 96 -> 109, N = 32 76-83 -> 107.  The tile computes the
 * same chain of FMAs over k as the packed one, so the bits do not change.
 * A transposed A (a weight gradient's g^T of g^T @ x, g [K, M] row-major) is packed by copies,
 * not transposes, but a copy of all of A all the same: 512 x 1024 floats took about 110 us
 * whatever the product's N, a sixth of an LSTM's 512 x 1024 @ 1024 x 64 input-weight gradient.
 * The direct_at tile reads its whole slivers in place (each k's MR elements are consecutive, as
 * in a packed sliver, and the k steps lda apart), any last rows packed, under the same rule but
 * for the L1 sets, and fetches each k step's elements GEMM_AHEAD_K steps before use
 * (gemm_kernels.c).  Without that fetch a stride of a power of two cache lines made in place
 * slower than packed: g [1024, 512] put every k step of a tile in 2 of L1's 64 sets, and each
 * sliver then fetched again the lines its neighbour had just used (512 x 1024 @ 1024 x 64 in
 * place 800 us, packed 700), which is why the recurrent layer pads its gate gradients' rows
 * (Note [Recurrent layer]; harmless now).  With it the AVX-512 tiles read A in place at any
 * stride: one Zen 4 core, packed -> in place, M x 1024 @ 1024 x 128 with lda = M, GFLOP/s:
 * M = 128 102 -> 108, 384 106 -> 113, 512 (2 sets) 105 -> 112, 1024 (1 set) 101 -> 112;
 * 512 x 4096 @ 4096 x 128 98 -> 109 (Note [GEMM packing of B] then also reads B in place).
 * The AVX2 tile, whose k step is a quarter as long, still needs its k steps spread over the
 * sets (at most GEMM_DIRECT_AT_SET_HITS of 64 in one): lda = 128 floats (8 sets) 95 -> 101,
 * but 512 (2 sets) 90 -> 85 and 1024 (1 set) 91 -> 30 in place.  Before the fetch, packed / in
 * place for M = 12 .. 1040 (lda = M, or 528 for 512), K = 1024, N = 64 and 128 was
 * 1.02-1.13; K = 4096, N = 32: 1.10-1.48.  The same FMA chain again. */
#define GEMM_DIRECT_A_SLIVERS 16
/* a transposed A is read in place by the AVX2 tiles (MR 6) when no L1 set holds more than
 * this many of 64 k steps; by the AVX-512 tiles (MR 12) at any stride */
#define GEMM_DIRECT_AT_SET_HITS 8
#define GEMM_DIRECT_AT_ANY_MR 12

/* 0: A packed, 1: a row-major A read in place, 2: a transposed one (Note [GEMM direct A]) */
static int
gemm_a_direct(const GemmProblem *pr)
{
    const GemmEngine *e = pr->e;
    int64_t r = pr->n % e->nr;
    if (pr->a.dtype != e->acc_dtype || pr->m < e->mr ||
        pr->n > GEMM_DIRECT_A_SLIVERS * e->nr || (r != 0 && r <= e->nr / 2)) {
        return 0;
    }
    if (pr->a.cs != 1) {   /* transposed: on AVX2 the k steps must spread over L1's sets */
        if (pr->a.rs != 1 || e->direct_at == NULL) {
            return 0;
        }
        int in_set[64] = {0};
        for (int64_t p = 0; e->mr < GEMM_DIRECT_AT_ANY_MR && p < 64; p++) {
            int set = (int)(((uint64_t)(p * pr->a.cs) * e->item >> 6) & 63);
            if (++in_set[set] > GEMM_DIRECT_AT_SET_HITS) {
                return 0;
            }
        }
        return 2;
    }
    if (e->direct_a == NULL) {
        return 0;
    }
    int in_set[64] = {0};
    for (int64_t i = 0; i < e->mr; i++) {
        int set = (int)(((uint64_t)(i * pr->a.rs) * e->item >> 6) & 63);
        if (++in_set[set] > e->mr / 2) {
            return 0;
        }
    }
    return 1;
}

/* B in place for few rows of A, or up to 64 rows (any number when K is at most
 * GEMM_DIRECT_B_SMALL_K) when a K block of B spans at most GEMM_DIRECT_B_SPAN bytes (its rows
 * then share no L1 set: einsum's 64 x 64 batches); mblocks A blocks of kc columns. */
static int
gemm_b_direct(const GemmProblem *pr, int64_t kc, int64_t mblocks)
{
    const GemmEngine *e = pr->e;
    int64_t span = kc * pr->b.rs * (int64_t)e->item;
    return pr->b_direct &&
           ((pr->m <= e->direct_b_max_m && (mblocks == 1 || span <= GEMM_DIRECT_B_L2_SPAN)) ||
            ((pr->m <= 64 || kc <= GEMM_DIRECT_B_SMALL_K) && span <= GEMM_DIRECT_B_SPAN));
}

/* Note [GEMM one A block]
 * ~~~~~~~~~~~~~~~~~~~~~~~
 * A row-major B that several A blocks read is packed once a K block when that K block spans
 * more than GEMM_DIRECT_B_L2_SPAN (Note [GEMM packing of B]): a 512^3 product packed all of B,
 * 1 MiB, for three A blocks of 180 rows.  When A is read in place (Note [GEMM direct A]) its
 * blocks are not packed copies that must fit L2, only a loop order, so an A whose K block
 * spans at most GEMM_ONE_A_BLOCK_BYTES (L2) is taken as one block, and then B is read in place
 * by the tiles, each sliver of it streaming from L2 once for all of A's rows.  The same
 * FMAs in the same order: the same bits.  One Zen 4 core, the best of 10 processes, 5 rounds
 * each, GFLOP/s, 3 A blocks (or 2) -> 1: 512^3 110.7 -> 112.2, 384^3 110.4 -> 115.1, 320 x 512
 * @ 512 x 512 110.2 -> 114.0, 640 x 256 @ 256 x 512 108.9 -> 113.1; 256 x 512 @ 512 x 512
 * 111.0 -> 111.5.  Products whose B is transposed (a Linear's W^T, packed anyway) or already
 * read in place keep their blocks: for those one block measured the same within the noise
 * (1024 x 128 @ 128 x 512 (W^T) 108.1 -> 108.0). */
#define GEMM_ONE_A_BLOCK_BYTES (1024 * 1024)

/* The blocked product (Note [GEMM blocking]) of one matrix on the calling thread: pr has no
 * batch dims, and its A, B, C and S start at the matrix's first element. */
static int
gemm_blocked(const GemmProblem *pr)
{
    const GemmEngine *e = pr->e;
    const size_t aitem = ptl_dtype_itemsize(pr->a.dtype), bitem = ptl_dtype_itemsize(pr->b.dtype);
    int64_t ncmax = pr->n < e->nc ? pr->n : e->nc;
    int64_t mc = gemm_mc(e, pr->m), mblocks = (pr->m + mc - 1) / mc;
    int64_t kcmax = gemm_kc(e, pr->k);
    int a_direct = gemm_a_direct(pr);
    int b_direct = gemm_b_direct(pr, kcmax, mblocks);
    int a_pack_first = a_direct == 0 && e->direct_at_pack != NULL && pr->a.rs == 1 &&
                       pr->a.cs != 1 && pr->a.dtype == e->acc_dtype;
    /* A read in place as one block, so that B is read in place too (Note [GEMM one A block]) */
    if (!b_direct && a_direct == 1 && mblocks > 1 && gemm_b_direct(pr, kcmax, 1) &&
        pr->m * kcmax * (int64_t)e->item <= GEMM_ONE_A_BLOCK_BYTES) {
        mc = (pr->m + e->mr - 1) / e->mr * e->mr;
        mblocks = 1;
        b_direct = 1;
    }
    int b_pack_first = !b_direct && e->tile_bpack != NULL && pr->b.cs == 1 &&
                       pr->b.dtype == e->acc_dtype;
    char *bp = NULL;

    /* One A block: every B sliver meets A once, so slivers are packed just before use
     * (Note [GEMM packing of B]) */
    if (mblocks > 1 && !b_direct &&
        (bp = ptl_gemm_alloc((size_t)(kcmax * ((ncmax + e->nr - 1) / e->nr) * e->nr) * e->item)) ==
            NULL) {
        return -1;
    }
    for (int64_t jc = 0; jc < pr->n; jc += e->nc) {
        int64_t nc = pr->n - jc < e->nc ? pr->n - jc : e->nc;
        for (int64_t pc = 0; pc < pr->k; pc += kcmax) {
            GemmStep st;
            st.pr = pr;
            st.kc = pr->k - pc < kcmax ? pr->k - pc : kcmax;
            st.nc = nc;
            st.mc = mc;
            st.a = pr->a.data + (size_t)(pc * pr->a.cs) * aitem;
            st.b = pr->b.data + (size_t)(pc * pr->b.rs + jc * pr->b.cs) * bitem;
            st.bp = bp;
            st.b_direct = b_direct;
            st.a_direct = a_direct;
            st.a_pack_first = a_pack_first && nc > e->nr / 2;
            st.b_pack_first = b_pack_first;
            st.c = pr->c.data + (size_t)(jc * pr->c.cs) * e->item;
            st.beta = pc == 0 ? pr->beta : 1.0;
            st.s = st.c;
            st.srs = pr->c.rs;
            st.scs = pr->c.cs;
            if (pc == 0 && pr->s.data != NULL) {
                st.s = pr->s.data + (size_t)(jc * pr->s.cs) * e->item;
                st.srs = pr->s.rs;
                st.scs = pr->s.cs;
            }
            /* B block (kc x nc) = rows of B^T: the sliver direction is B's columns */
            /* (only a last narrower sliver when the tiles pack the whole ones) */
            int64_t packed = b_pack_first ? nc / e->nr * e->nr : 0;
            if (bp != NULL && packed < nc) {
                pr->pack_b(st.b + (size_t)(packed * pr->b.cs) * bitem, pr->b.cs, pr->b.rs,
                           nc - packed, st.kc, e->nr, bp + (size_t)(packed * st.kc) * e->item);
            }
            if (gemm_step(&st) < 0) {
                free(bp);
                return -1;
            }
        }
    }
    free(bp);
    return 0;
}

/* Note [GEMM threads]
 * ~~~~~~~~~~~~~~~~~~~
 * A product on several threads is cut once into a grid of pm x pn rectangles of C, one per
 * thread, on MR row and NR column boundaries (so no two threads write one tile, and a
 * row-major C is split at a multiple of 128 bytes on AVX-512), and each thread runs the
 * whole blocked product of its rectangle on its own: it packs its own B blocks (never one
 * thread packing while the other waits) and meets the others once, at the end.  A column
 * split makes each thread pack all of A's rows, a row split all of B's columns; the grid
 * minimises a thread's tiles plus its packing (rows + columns, weighted as 16 multiply-adds
 * per packed element), so a skinny 64 x 4096 @ 4096 x 1024 splits its columns and a tall
 * 4096 x 64 @ 64 x 64 its rows.  A product takes at most one thread per GEMM_THREAD_MACS
 * multiply-adds.  The sums of each C element do not depend on the grid, so
 * the bits do not depend on the number of threads. */
#define GEMM_PACK_WEIGHT 16

/* Each thread of a grid gets at least this many multiply-adds (about 20 us on one Zen 4
 * core), so 128^3 (43 us on one thread) splits in two, as MKL and OpenBLAS split it: the
 * workers poll for the next job (Note [Spin before sleeping]), and a chunk that no worker
 * has picked up when the caller finishes its own is run by the caller, so a machine with
 * no free core loses a few microseconds, not a worker's wake-up. */
#define GEMM_THREAD_MACS (1 << 20)

typedef struct GemmGrid {
    const GemmProblem *pr;               /* one matrix, no batch dims */
    int64_t pm, pn;                      /* row and column parts */
    int64_t um, un;                      /* MR-tall row units and NR-wide column units */
} GemmGrid;

static int
gemm_grid_tasks(void *ctx, int64_t t0, int64_t t1)
{
    const GemmGrid *g = (const GemmGrid *)ctx;
    const GemmProblem *pr = g->pr;
    const GemmEngine *e = pr->e;
    const size_t aitem = ptl_dtype_itemsize(pr->a.dtype), bitem = ptl_dtype_itemsize(pr->b.dtype);
    for (int64_t t = t0; t < t1; t++) {
        int64_t i = t / g->pn, j = t % g->pn;
        int64_t m0 = i * g->um / g->pm * e->mr, m1 = (i + 1) * g->um / g->pm * e->mr;
        int64_t n0 = j * g->un / g->pn * e->nr, n1 = (j + 1) * g->un / g->pn * e->nr;
        GemmProblem sub = *pr;
        sub.m = (m1 < pr->m ? m1 : pr->m) - m0;
        sub.n = (n1 < pr->n ? n1 : pr->n) - n0;
        sub.a.data += (size_t)(m0 * pr->a.rs) * aitem;
        sub.b.data += (size_t)(n0 * pr->b.cs) * bitem;
        sub.c.data += (size_t)(m0 * pr->c.rs + n0 * pr->c.cs) * e->item;
        if (sub.s.data != NULL) {
            sub.s.data += (size_t)(m0 * pr->s.rs + n0 * pr->s.cs) * e->item;
        }
        if (gemm_blocked(&sub) < 0) {
            return -1;
        }
    }
    return 0;
}

/* The blocked product of one matrix on up to nthreads threads (Note [GEMM threads]). */
static int
gemm_grid(const GemmProblem *pr, int64_t nthreads)
{
    const GemmEngine *e = pr->e;
    GemmGrid g = {pr, 1, 1, (pr->m + e->mr - 1) / e->mr, (pr->n + e->nr - 1) / e->nr};
    double best = -1;
    for (int64_t pm = 1; pm <= nthreads; pm++) {
        int64_t pn = nthreads / pm;
        if (pm > g.um || pn > g.un) {
            continue;
        }
        double rows = (double)((g.um + pm - 1) / pm * e->mr);
        double cols = (double)((g.un + pn - 1) / pn * e->nr);
        double cost = rows * cols + GEMM_PACK_WEIGHT * (rows + cols);
        if (best < 0 || cost < best) {
            best = cost;
            g.pm = pm;
            g.pn = pn;
        }
    }
    return g.pm * g.pn > 1 ? ptl_parallel_for(0, g.pm * g.pn, 1, gemm_grid_tasks, &g)
                           : gemm_blocked(pr);
}

/* Note [GEMM narrow N]
 * ~~~~~~~~~~~~~~~~~~~~
 * A product of few columns and many rows (an MLP's classifier head: 128 x 256 @ 256 x 10)
 * fills a tile badly: its one B sliver is computed by the half or quarter tile, 16 or 8
 * columns a row for the 10 used, and packing all of A's rows costs as much as the products.
 * Such a product is computed transposed instead, C^T = B^T @ A^T: A's rows become 32-wide B
 * slivers that fill the whole tile, and its 10 columns one A sliver.  Each C element is the
 * same chain of multiply-adds over k in order (an FMA does not care which factor is
 * broadcast), and C^T's tiles are stored through the accumulator and the update, which
 * round as the tile does: the bits do not change, on any number of threads.  The tiles'
 * work (tile_work: rows and columns computed, padding included) decides, and the product is
 * transposed only when that saves a fifth of it, since C^T's stores are scalar: a GPT
 * head's 1024 x 65 would save a sixteenth and ran 10% slower. */

/* Rows computed for m rows of full-width tiles: MR-tall slivers, the last one by the
 * shortest tile that covers it. */
static int64_t
tile_rows(const GemmEngine *e, int64_t m)
{
    int64_t r = m % e->mr;
    int64_t last = r == 0                              ? 0
                   : r <= 4 && e->tile4 != NULL        ? 4
                   : r <= 8 && e->tile8 != NULL        ? 8
                   : r <= 10 && e->tile10 != NULL      ? 10
                                                       : e->mr;
    return m - r + last;
}

/* Multiply-adds per k that the tiles compute for an m x n C (Note [GEMM narrow N]). */
static int64_t
tile_work(const GemmEngine *e, int64_t m, int64_t n)
{
    int64_t r = n % e->nr;
    int64_t w = r == 0 ? 0 : r <= e->nr / 4 && e->quarter != NULL ? e->nr / 4
                             : r <= e->nr / 2 && e->half != NULL  ? e->nr / 2
                                                                  : e->nr;
    int64_t narrow_rows = (m + e->mr - 1) / e->mr * e->mr;
    return (n - r) * tile_rows(e, m) + w * (w == e->nr ? tile_rows(e, m) : narrow_rows);
}

/* pr as the product C^T = B^T @ A^T (Note [GEMM narrow N]); pr has no batch dims. */
static void
gemm_transpose(GemmProblem *pr)
{
    const GemmEngine *e = pr->e;
    GemmMat a = pr->a, b = pr->b;
    int64_t m = pr->m;
    pr->a = (GemmMat){.data = b.data, .rs = b.cs, .cs = b.rs, .dtype = b.dtype};
    pr->b = (GemmMat){.data = a.data, .rs = a.cs, .cs = a.rs, .dtype = a.dtype};
    pr->c = (GemmMat){.data = pr->c.data, .rs = pr->c.cs, .cs = pr->c.rs, .dtype = pr->c.dtype};
    pr->s = (GemmMat){.data = pr->s.data, .rs = pr->s.cs, .cs = pr->s.rs, .dtype = pr->s.dtype};
    pr->m = pr->n;
    pr->n = m;
    pr->b_direct = e->tile != NULL && pr->b.dtype == e->acc_dtype && pr->b.cs == 1;
}

/* Note [GEMM last columns]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A product whose N is a multiple of 32 plus one or two (a GPT head's 65 columns) computed
 * its last column(s) with a quarter tile on a packed A: 8 lanes a row for 1 used, a tenth of
 * the product's time, and the narrow sliver also kept A from being read in place (Note [GEMM
 * direct A]).  So the columns past the last multiple of 32 are computed as matrix-vector
 * products (ptl_gemm_gemv: a dot product per row of A), the others by the blocked product.
 * The rule depends on 32, not on the engine's NR, so AVX2 (NR 16) and AVX-512 split alike and
 * still give the same bits; those columns are summed in the dot product's order
 * (dot_f4_fma's), not in the tiles', on any number of threads and for every layout of A
 * (always as dot products: ptl_gemm_gemv's column-by-column axpy sums in another order).
 * Rows are not split so: a last row would be dot products with B's columns, which a row-major B
 * has strided (a 65 x 1024 @ 1024 x 128 weight gradient ran 2.4x slower).  So C^T =
 * B^T @ A^T no longer has C's bits when one of them has such a tail and the other not (2
 * x 10 and its transposed writing, 10 x 2, below).  Only for
 * the float32 engines with tiles (AVX2 and AVX-512).  1024 x 128 @ 128 x 65 (W^T): 201 ->
 * 172 us on one Zen 4 core, 0.94x -> 1.10x NumPy's.  A product of two columns in all (W @
 * x^T for two rows x) is all tail by the same rule: its quarter tiles computed 4 columns of
 * packed rows for 2, and A was packed; as two matrix-vector products A is read in place, and
 * each column has the bits of A @ that column.  One Zen 3 core (AVX2), [8192, 64] @ [64, 2]
 * with column-major B: 265 -> 119 us, 0.64x -> 1.43x PyTorch's time. */
#define GEMM_TAIL_WIDTH 32
#define GEMM_TAIL_COLS 2

/* The last columns of a product computed as vector products: n % GEMM_TAIL_WIDTH when that
 * is at most GEMM_TAIL_COLS (all n columns when 1 < n <= GEMM_TAIL_COLS), else 0. */
static int64_t
gemm_tail(const GemmProblem *pr)
{
    int64_t m = pr->m, n = pr->n, r = n % GEMM_TAIL_WIDTH;
    int blocked = pr->k > 0 && m > 1 && !(pr->k >= 2 * GEMM_KSPLIT && m * n <= GEMM_KSPLIT_MAX_MN);
    return pr->e->tile != NULL && pr->e->acc_dtype == PTL_DTYPE_FLOAT32 && blocked &&
                   (n > GEMM_TAIL_WIDTH || (n > 1 && n <= GEMM_TAIL_COLS)) &&
                   r <= GEMM_TAIL_COLS
               ? r
               : 0;
}

/* C's last `tail` columns as vector products, the others by gemm_one (Note [GEMM last
 * columns]). */
static int
gemm_tails(const GemmProblem *pr, int64_t bi, int parallel, int64_t tail)
{
    const GemmEngine *e = pr->e;
    const size_t bitem = ptl_dtype_itemsize(pr->b.dtype);
    GemmProblem head = *pr;
    head.n = pr->n - tail;
    if (head.n > 0 && gemm_one(&head, bi, parallel) < 0) {
        return -1;
    }
    for (int64_t j = head.n; j < pr->n; j++) {
        GemmProblem col = *pr;
        col.n = 1;
        col.dot_rows = 1;
        col.b.data += (size_t)(j * pr->b.cs) * bitem;
        col.c.data += (size_t)(j * pr->c.cs) * e->item;
        if (col.s.data != NULL) {
            col.s.data += (size_t)(j * pr->s.cs) * e->item;
        }
        if (gemm_one(&col, bi, parallel) < 0) {
            return -1;
        }
    }
    return 0;
}

/* One matrix (batch index bi); uses the thread pool when `parallel`. */
static int
gemm_one(const GemmProblem *pr, int64_t bi, int parallel)
{
    const GemmEngine *e = pr->e;
    const size_t aitem = ptl_dtype_itemsize(pr->a.dtype), bitem = ptl_dtype_itemsize(pr->b.dtype);
    char *c = pr->c.data + (size_t)ptl_gemm_batch_offset(pr, &pr->c, bi) * e->item;
    int64_t tail = gemm_tail(pr);

    /* the last columns one at a time (Note [GEMM last columns]) */
    if (tail > 0) {
        return gemm_tails(pr, bi, parallel, tail);
    }
    /* only the blocked product below reads the beta source in place */
    int blocked = pr->k > 0 && pr->n > 1 && pr->m > 1 &&
                  !(pr->k >= 2 * GEMM_KSPLIT && pr->m * pr->n <= GEMM_KSPLIT_MAX_MN);
    if (pr->s.data != NULL && pr->beta != 0 && !blocked) {
        copy_tile(e->item, pr->m, pr->n,
                  pr->s.data + (size_t)ptl_gemm_batch_offset(pr, &pr->s, bi) * e->item,
                  pr->s.rs, pr->s.cs, c, pr->c.rs, pr->c.cs);
    }
    if (pr->k == 0) {
        gemm_scale(pr, c);
        return 0;
    }
    /* vector products (gemm_gemv.c) */
    if (pr->n == 1 || pr->m == 1) {
        return ptl_gemm_gemv(pr, bi, parallel);
    }
    if (pr->k >= 2 * GEMM_KSPLIT && pr->m * pr->n <= GEMM_KSPLIT_MAX_MN) {
        return gemm_ksplit(pr, bi, parallel);
    }
    GemmProblem mat = *pr;
    mat.batch = 1;
    mat.nbd = 0;
    mat.a.data += (size_t)ptl_gemm_batch_offset(pr, &pr->a, bi) * aitem;
    mat.b.data += (size_t)ptl_gemm_batch_offset(pr, &pr->b, bi) * bitem;
    mat.c.data = c;
    if (mat.s.data != NULL) {
        mat.s.data += (size_t)ptl_gemm_batch_offset(pr, &pr->s, bi) * e->item;
    }
    if (e->tile != NULL && 5 * tile_work(e, pr->n, pr->m) < 4 * tile_work(e, pr->m, pr->n)) {
        gemm_transpose(&mat);
    }
    int64_t nthreads = parallel ? ptl_get_num_threads() : 1;
    double share = (double)pr->m * (double)pr->n * (double)pr->k / GEMM_THREAD_MACS;
    nthreads = share < (double)nthreads ? (int64_t)share : nthreads;
    return nthreads > 1 ? gemm_grid(&mat, nthreads) : gemm_blocked(&mat);
}

/* Batches [b0, b1), each single-threaded (small matrices, many of them). */
static int
gemm_batch_tasks(void *ctx, int64_t b0, int64_t b1)
{
    for (int64_t bi = b0; bi < b1; bi++) {
        if (gemm_one((const GemmProblem *)ctx, bi, 0) < 0) {
            return -1;
        }
    }
    return 0;
}

/* Batches run in parallel, each matrix on one thread, when they are small or when they
 * share out evenly among the threads: one matrix at a time would pack B on one thread and
 * meet the other threads once per KC step (a conv's 32 products of 32 x 27 x 1024 ran at
 * the speed of one thread on two). */
static int
gemm_run(const GemmProblem *pr)
{
    double flops = (double)pr->m * (double)pr->n * (double)(pr->k > 0 ? pr->k : 1);
    int64_t nthreads = ptl_get_num_threads();
    if (pr->batch > 1 && flops < GEMM_PARALLEL_FLOPS) {
        int64_t grain = (int64_t)(GEMM_PARALLEL_FLOPS / flops) + 1;
        return ptl_parallel_for(0, pr->batch, grain, gemm_batch_tasks, (void *)pr);
    }
    if (nthreads > 1 && (pr->batch % nthreads == 0 || pr->batch >= 4 * nthreads)) {
        return ptl_parallel_for(0, pr->batch, 1, gemm_batch_tasks, (void *)pr);
    }
    for (int64_t bi = 0; bi < pr->batch; bi++) {
        if (gemm_one(pr, bi, flops >= GEMM_PARALLEL_FLOPS) < 0) {
            return -1;
        }
    }
    return 0;
}

static void
gemm_mat(GemmMat *m, PtlTensorImpl *t)
{
    int off = t->dim - 2;
    m->data = ptl_tensor_data(t);
    for (int d = 0; d < off; d++) {
        m->bs[d] = t->strides[d];
    }
    m->rs = t->strides[off];
    m->cs = t->strides[off + 1];
    m->dtype = t->dtype;
}

/* ptl_gemm_f64 and ptl_gemm_f32: one raw product of the dtype's engine */
static int
gemm_raw(PtlDtype dtype, int64_t m, int64_t n, int64_t k, double alpha, const void *a,
         int64_t ars, int64_t acs, const void *b, int64_t brs, int64_t bcs, double beta, void *c,
         int64_t ldc)
{
    GemmProblem pr;
    memset(&pr, 0, sizeof(pr));
    pr.e = ptl_gemm_engine(dtype);
    pr.pack_a = pr.pack_b = pr.e->pack[dtype];
    pr.batch = 1;
    pr.m = m;
    pr.n = n;
    pr.k = k;
    pr.b_direct = pr.e->tile != NULL && bcs == 1;
    pr.alpha = alpha;
    pr.beta = beta;
    pr.a = (GemmMat){.data = (char *)a, .rs = ars, .cs = acs, .dtype = dtype};
    pr.b = (GemmMat){.data = (char *)b, .rs = brs, .cs = bcs, .dtype = dtype};
    pr.c = (GemmMat){.data = (char *)c, .rs = ldc, .cs = 1, .dtype = dtype};
    return m == 0 || n == 0 ? 0 : gemm_run(&pr);
}

int
ptl_gemm_f64(int64_t m, int64_t n, int64_t k, double alpha, const double *a, int64_t ars,
             int64_t acs, const double *b, int64_t brs, int64_t bcs, double beta, double *c,
             int64_t ldc)
{
    return gemm_raw(PTL_DTYPE_FLOAT64, m, n, k, alpha, a, ars, acs, b, brs, bcs, beta, c, ldc);
}

int
ptl_gemm_f32(int64_t m, int64_t n, int64_t k, double alpha, const float *a, int64_t ars,
             int64_t acs, const float *b, int64_t brs, int64_t bcs, double beta, float *c,
             int64_t ldc)
{
    return gemm_raw(PTL_DTYPE_FLOAT32, m, n, k, alpha, a, ars, acs, b, brs, bcs, beta, c, ldc);
}

/* A packed B (Note [GEMM packing of B]): for each K block of kc rows (kc from gemm_kc, the
 * last block maybe shorter), all of B's columns as NR-wide slivers, zero-padded to npad
 * columns; block pc starts at element pc * npad (pc a multiple of kc, the K block's first
 * row). */
struct PtlGemmPackedB {
    const GemmEngine *e;
    PtlDtype dtype;
    int64_t k, n, kc, npad;
    char *data;
};

PtlGemmPackedB *
ptl_gemm_pack_b(PtlDtype dtype, int64_t k, int64_t n, const void *b, int64_t brs, int64_t bcs)
{
    PtlGemmPackedB *pb;
    if (dtype != PTL_DTYPE_FLOAT32 && dtype != PTL_DTYPE_FLOAT64) {
        ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"gemm_pack_b\" not implemented for '%s'",
                      ptl_dtype_legacy_name(dtype));
        return NULL;
    }
    if ((pb = calloc(1, sizeof(*pb))) == NULL) {
        ptl_error_set(PTL_ERR_MEMORY, "gemm: out of memory");
        return NULL;
    }
    pb->e = ptl_gemm_engine(dtype);
    pb->dtype = dtype;
    pb->k = k;
    pb->n = n;
    pb->kc = gemm_kc(pb->e, k);
    pb->npad = (n + pb->e->nr - 1) / pb->e->nr * pb->e->nr;
    pb->data = ptl_gemm_alloc((size_t)((k > 0 ? k : 1) * pb->npad + 1) * pb->e->item);
    if (pb->data == NULL) {
        free(pb);
        return NULL;
    }
    for (int64_t pc = 0; pc < k; pc += pb->kc) {
        int64_t kc = k - pc < pb->kc ? k - pc : pb->kc;
        /* the block's rows of B^T: the sliver direction is B's columns */
        pb->e->pack[dtype]((const char *)b + (size_t)(pc * brs) * pb->e->item, bcs, brs, n, kc,
                           pb->e->nr, pb->data + (size_t)(pc * pb->npad) * pb->e->item);
    }
    return pb;
}

void
ptl_gemm_packed_b_free(PtlGemmPackedB *pb)
{
    if (pb != NULL) {
        free(pb->data);
        free(pb);
    }
}

/* One product on a packed B: pr's B is the panel (pr->b.data), columns [n0, n1) of C. */
typedef struct GemmPackedJob {
    const GemmProblem *pr;
    const PtlGemmPackedB *pb;
} GemmPackedJob;

/* Columns [u0, u1) in NR-wide units: every K block of the panel's slivers there. */
static int
gemm_packed_cols(void *ctx, int64_t u0, int64_t u1)
{
    const GemmPackedJob *j = ctx;
    const GemmProblem *pr = j->pr;
    const PtlGemmPackedB *pb = j->pb;
    const GemmEngine *e = pr->e;
    int64_t n0 = u0 * e->nr, n1 = u1 * e->nr < pr->n ? u1 * e->nr : pr->n;
    const int a_direct = gemm_a_direct(pr);
    for (int64_t pc = 0; pc < pr->k; pc += pb->kc) {
        GemmStep st;
        st.pr = pr;
        st.kc = pr->k - pc < pb->kc ? pr->k - pc : pb->kc;
        st.nc = n1 - n0;
        st.mc = gemm_mc(e, pr->m);
        st.a = pr->a.data + (size_t)(pc * pr->a.cs) * e->item;
        st.b = NULL;
        st.bp = pb->data + (size_t)(pc * pb->npad + n0 * st.kc) * e->item;
        st.b_direct = 0;
        st.a_direct = a_direct;
        st.a_pack_first = 0;
        st.b_pack_first = 0;
        st.c = pr->c.data + (size_t)n0 * e->item;
        st.beta = pc == 0 ? pr->beta : 1.0;
        st.s = st.c;
        st.srs = pr->c.rs;
        st.scs = 1;
        if (pc == 0 && pr->s.data != NULL) {
            st.s = pr->s.data + (size_t)n0 * e->item;
            st.srs = pr->s.rs;
        }
        if (gemm_step(&st) < 0) {
            return -1;
        }
    }
    return 0;
}

int
ptl_gemm_packed(const PtlGemmPackedB *pb, int64_t m, const void *a, int64_t lda, void *c,
                int64_t ldc, const void *s, int64_t lds, double beta)
{
    const GemmEngine *e = pb->e;
    GemmProblem pr;
    memset(&pr, 0, sizeof(pr));
    pr.e = e;
    pr.pack_a = pr.pack_b = e->pack[pb->dtype];
    pr.batch = 1;
    pr.m = m;
    pr.n = pb->n;
    pr.k = pb->k;
    pr.alpha = 1.0;
    pr.beta = beta;
    pr.a = (GemmMat){.data = (char *)a, .rs = lda, .cs = 1, .dtype = pb->dtype};
    pr.b = (GemmMat){.data = pb->data, .rs = pb->npad, .cs = 1, .dtype = pb->dtype};
    pr.c = (GemmMat){.data = c, .rs = ldc, .cs = 1, .dtype = pb->dtype};
    if (s != NULL && beta != 0) {
        pr.s = (GemmMat){.data = (char *)s, .rs = lds, .cs = 1, .dtype = pb->dtype};
    }
    if (m == 0 || pr.n == 0) {
        return 0;
    }
    if (pr.k == 0) {
        if (pr.s.data != NULL) {
            copy_tile(e->item, m, pr.n, pr.s.data, lds, 1, c, ldc, 1);
        }
        gemm_scale(&pr, c);
        return 0;
    }
    /* columns split among the threads as gemm_one would allow (Note [GEMM threads]) */
    GemmPackedJob job = {&pr, pb};
    int64_t units = pb->npad / e->nr, nthreads = ptl_get_num_threads();
    double share = (double)m * (double)pr.n * (double)pr.k / GEMM_THREAD_MACS;
    nthreads = share < (double)nthreads ? (int64_t)share : nthreads;
    if (nthreads > 1 && !ptl_in_parallel_region()) {
        return ptl_parallel_for(0, units, (units + nthreads - 1) / nthreads, gemm_packed_cols,
                                &job);
    }
    return gemm_packed_cols(&job, 0, units);
}

int
ptl_gemm_packed_rows_exact(PtlDtype dtype, int64_t m, int64_t n, int64_t k)
{
    const GemmEngine *e = ptl_gemm_engine(dtype);
    GemmProblem pr;
    memset(&pr, 0, sizeof(pr));
    pr.e = e;
    pr.m = m;
    pr.n = n;
    pr.k = k;
    /* gemm_one's blocked product, neither transposed nor with vector-product columns */
    return e != NULL && !ptl_dtype_is_complex(dtype) && e->acc_dtype != PTL_DTYPE_INT64 &&
           m > 1 && n > 1 && k > 0 && !(k >= 2 * GEMM_KSPLIT && m * n <= GEMM_KSPLIT_MAX_MN) &&
           gemm_tail(&pr) == 0 &&
           !(e->tile != NULL && 5 * tile_work(e, n, m) < 4 * tile_work(e, m, n));
}

int (*ptl_device_gemm_hook)(const PtlDeviceGemmArgs *a);
int ptl_device_gemm_emulation;

/* A CUDA product (or, under emulation, a CPU one) handed to the backend's kernels with its
 * geometry; the kernels read every stride themselves (Note [CUDA GEMM plan]). */
static int
device_gemm(PtlTensorImpl *c, PtlTensorImpl *a, PtlTensorImpl *b, double alpha, double beta,
            PtlTensorImpl *src)
{
    PtlDeviceGemmArgs g;
    int off = c->dim - 2;
    if (ptl_device_gemm_hook == NULL) {
        return ptl_error_set(PTL_ERR_RUNTIME, "gemm: the CUDA backend is not registered");
    }
    src = src != NULL ? src : c;
    memset(&g, 0, sizeof(g));
    g.dtype = c->dtype;
    g.nbd = off;
    g.batch = 1;
    for (int d = 0; d < off; d++) {
        g.bsizes[d] = c->sizes[d];
        g.batch *= c->sizes[d];
        g.a_bs[d] = a->strides[d];
        g.b_bs[d] = b->strides[d];
        g.c_bs[d] = c->strides[d];
        g.s_bs[d] = src->strides[d];
    }
    g.m = c->sizes[off];
    g.n = c->sizes[off + 1];
    g.k = a->sizes[off + 1];
    g.a = ptl_tensor_data(a);
    g.b = ptl_tensor_data(b);
    g.c = ptl_tensor_data(c);
    g.s = ptl_tensor_data(src);
    g.ars = a->strides[off];
    g.acs = a->strides[off + 1];
    g.brs = b->strides[off];
    g.bcs = b->strides[off + 1];
    g.crs = c->strides[off];
    g.ccs = c->strides[off + 1];
    g.srs = src->strides[off];
    g.scs = src->strides[off + 1];
    g.alpha = alpha;
    g.beta = beta;
    return g.batch == 0 || g.m == 0 || g.n == 0 ? 0 : ptl_device_gemm_hook(&g);
}

int
ptl_gemm(PtlTensorImpl *c, PtlTensorImpl *a, PtlTensorImpl *b, double alpha, double beta)
{
    return ptl_gemm_add(c, a, b, alpha, beta, NULL);
}

int
ptl_gemm_add(PtlTensorImpl *c, PtlTensorImpl *a, PtlTensorImpl *b, double alpha, double beta,
             PtlTensorImpl *src)
{
    const GemmEngine *e = ptl_gemm_engine(c->dtype);
    PtlTensorImpl *work = NULL;
    GemmProblem pr;
    int off = c->dim - 2;

    if (ptl_dtype_is_complex(c->dtype)) {   /* Note [Complex GEMM] in gemm_complex.c */
        const double al[2] = {alpha, 0}, be[2] = {beta, 0};
        return ptl_gemm_complex(c, a, b, al, be, src, 0);
    }
    if (e != NULL && e->acc_dtype == PTL_DTYPE_INT64) {
        beta = (double)(int64_t)ptl_gemm_scalar_to_u64(beta);
    }
    else if (e == NULL) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"gemm\" not implemented for '%s'",
                             ptl_dtype_legacy_name(c->dtype));
    }
    if (a->dtype != c->dtype || b->dtype != c->dtype || a->dim != c->dim || b->dim != c->dim ||
        c->dim < 2) {
        return ptl_error_set(PTL_ERR_RUNTIME, "gemm: operands must be at least 2-D, of one "
                             "dtype and rank");
    }
    if (src != NULL && (src->dtype != c->dtype || src->dim != c->dim)) {
        return ptl_error_set(PTL_ERR_RUNTIME, "gemm: the beta term must have C's dtype and rank");
    }
    if (ptl_tensor_is_meta(c)) {   /* shapes only: Note [Meta kernels] in meta.c */
        return 0;
    }
    if (c->device.type == PTL_DEVICE_CUDA || ptl_device_gemm_emulation) {
        return device_gemm(c, a, b, alpha, beta, src);
    }
    pr.e = e;
    pr.pack_a = pr.pack_b = e->pack[c->dtype];
    pr.nbd = off;
    pr.batch = 1;
    for (int d = 0; d < off; d++) {
        pr.bsizes[d] = c->sizes[d];
        pr.batch *= c->sizes[d];
    }
    pr.m = c->sizes[off];
    pr.n = c->sizes[off + 1];
    pr.k = a->sizes[off + 1];
    pr.b_direct = e->tile != NULL && b->dtype == e->acc_dtype && b->strides[off + 1] == 1;
    pr.alpha = alpha;
    pr.beta = beta;
    pr.dot_rows = 0;
    if (pr.batch == 0 || pr.m == 0 || pr.n == 0) {
        return 0;
    }
    if (c->dtype != e->acc_dtype) {
        if ((work = ptl_empty(c->dim, c->sizes, e->acc_dtype, c->device)) == NULL) {
            return -1;
        }
        if (beta != 0 && ptl_copy_into(work, src != NULL ? src : c) < 0) {
            goto error;
        }
    }
    gemm_mat(&pr.a, a);
    gemm_mat(&pr.b, b);
    gemm_mat(&pr.c, work != NULL ? work : c);
    pr.s.data = NULL;
    if (src != NULL && work == NULL && beta != 0) {
        gemm_mat(&pr.s, src);
    }

    double flops = (double)pr.batch * (double)pr.m * (double)pr.n * (double)pr.k;
    void *token = flops >= GEMM_PARALLEL_FLOPS ? ptl_nogil_begin() : NULL;
    int rc = gemm_run(&pr);
    ptl_nogil_end(token);
    if (rc < 0) {
        goto error;
    }
    if (work != NULL) {
        if (ptl_copy_into(c, work) < 0) {
            goto error;
        }
        ptl_decref(work);
    }
    return 0;
error:
    ptl_xdecref(work);
    return -1;
}
