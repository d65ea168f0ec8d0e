/* gemm_gemv.c -- gemm.c's matrix-vector products (n == 1 or m == 1, and the last columns
 * of Note [GEMM last columns] in gemm.c): dot products of A's rows, or axpys over its
 * columns when they are contiguous.  Plays the role of BlasKernel.cpp's gemv. */
#include <stdlib.h>

#include "../../c10/parallel.h"
#include "gemm_impl.h"

/* A matrix-vector product: c[i] = alpha * A[i, :] . x + beta * c[i] for rows of A. */
typedef struct GemvJob {
    const GemmProblem *pr;
    const char *a;                       /* row 0 of A */
    int64_t ars, acs;                    /* element strides of A's rows and columns */
    PtlDtype adtype;
    const char *x;                       /* packed vector, engine type, contiguous */
    char *c;
    int64_t cs;                          /* element stride of c */
} GemvJob;

/* Rows that are not contiguous in the engine type are packed before their dot products; rows
 * that are adjacent (A's columns contiguous: a transposed A's last columns, Note [GEMM last
 * columns], or a float16 A^T @ x) up to GEMV_PACK_ROWS at a time, at most GEMV_PACK_BYTES of
 * them, so that each of A's lines is read once (by 8 x 8 transposes for float32), not once
 * per row.  A 1024 x 1024 @ 1024 x 65 product with a transposed A (a weight gradient g^T @ x
 * of 65 features) spent 3.3 ms on its last column gathered row by row, 4 KiB apart, and
 * 1.2 ms on the other 64; one Zen 4 core, the product 4.5 -> 1.55 ms (docs/performance.md,
 * GEMM: a transposed A's last columns).  The same values are packed: the bits do not
 * change. */
#define GEMV_PACK_ROWS 16
#define GEMV_PACK_BYTES (256 * 1024)
/* rows whose dot products one call computes, before one C update for them all */
#define GEMV_DOT_ROWS 64

/* Rows [r0, r1). */
static int
gemv_rows(void *ctx, int64_t r0, int64_t r1)
{
    const GemvJob *g = (const GemvJob *)ctx;
    const GemmEngine *e = g->pr->e;
    const size_t aitem = ptl_dtype_itemsize(g->adtype);
    const int64_t k = g->pr->k;
    int direct = g->adtype == e->acc_dtype && g->acs == 1;
    int64_t block = (int64_t)(GEMV_PACK_BYTES / ((size_t)k * e->item));
    block = block < 1 ? 1 : block < GEMV_PACK_ROWS ? block : GEMV_PACK_ROWS;
    block = direct ? GEMV_DOT_ROWS : block;
    /* packed rows ld apart: a line more than k, so that rows 4 KiB long do not all land in
     * one L1 set */
    const int64_t ld = k + 64 / (int64_t)e->item;
    char *rows = direct ? NULL : ptl_gemm_alloc((size_t)(block * ld) * e->item);
    _Alignas(64) char acc[GEMV_DOT_ROWS * 16];

    if (!direct && rows == NULL) {
        return -1;
    }
    for (int64_t i0 = r0; i0 < r1; i0 += block) {
        int64_t h = r1 - i0 < block ? r1 - i0 : block;
        const char *a0 = g->a + (size_t)(i0 * g->ars) * aitem;
        /* row i at rows + i * ld: when the rows are adjacent, A^T's k rows as one sliver ld
         * wide (by 8 x 8 transposes for float32), else row by row */
        if (!direct && g->ars == 1) {
            e->pack[g->adtype](a0, g->acs, 1, k, h, ld, rows);
        }
        for (int64_t i = 0; !direct && g->ars != 1 && i < h; i++) {
            e->pack[g->adtype](a0 + (size_t)(i * g->ars) * aitem, 1, g->acs, 1, k, 1,
                               rows + (size_t)(i * ld) * e->item);
        }
        e->dot(direct ? a0 : rows, direct ? g->ars : ld, g->x, k, h, acc);
        e->update(acc, 1, h, 1, g->c + (size_t)(i0 * g->cs) * e->item, g->cs, 0,
                  g->pr->alpha, g->pr->beta);
    }
    free(rows);
    return 0;
}

/* Rows [r0, r1) when A's columns are contiguous in the engine type (a transposed matrix,
 * or row @ B for a row-major B): c[r0:r1] accumulates x[p] * A[r0:r1, p] column by column,
 * in blocks of rows that stay in L1, instead of gathering each row across the columns. */
#define GEMV_COL_BLOCK 1024

static int
gemv_cols(void *ctx, int64_t r0, int64_t r1)
{
    const GemvJob *g = (const GemvJob *)ctx;
    const GemmEngine *e = g->pr->e;
    char *acc = ptl_gemm_alloc((size_t)GEMV_COL_BLOCK * e->item);

    if (acc == NULL) {
        return -1;
    }
    for (int64_t i = r0; i < r1; i += GEMV_COL_BLOCK) {
        int64_t n = r1 - i < GEMV_COL_BLOCK ? r1 - i : GEMV_COL_BLOCK;
        memset(acc, 0, (size_t)n * e->item);
        e->axpy(g->a + (size_t)i * e->item, g->acs, g->x, g->pr->k, n, acc);
        e->update(acc, 1, n, 1, g->c + (size_t)(i * g->cs) * e->item, g->cs, 0, g->pr->alpha,
                  g->pr->beta);
    }
    free(acc);
    return 0;
}

/* (gemm_impl.h) */
int
ptl_gemm_gemv(const GemmProblem *pr, int64_t bi, int parallel)
{
    const GemmEngine *e = pr->e;
    const GemmMat *mat = pr->n == 1 ? &pr->a : &pr->b, *vec = pr->n == 1 ? &pr->b : &pr->a;
    const size_t mitem = ptl_dtype_itemsize(mat->dtype), vitem = ptl_dtype_itemsize(vec->dtype);
    int64_t rows = pr->n == 1 ? pr->m : pr->n;
    int64_t vs = pr->n == 1 ? vec->rs : vec->cs;
    const char *v = vec->data + (size_t)ptl_gemm_batch_offset(pr, vec, bi) * vitem;
    int direct = vec->dtype == e->acc_dtype && (vs == 1 || pr->k == 1);
    char *x = direct ? NULL : ptl_gemm_alloc((size_t)pr->k * e->item);
    GemvJob g;

    if (!direct && x == NULL) {
        return -1;
    }
    g.pr = pr;
    g.a = mat->data + (size_t)ptl_gemm_batch_offset(pr, mat, bi) * mitem;
    g.ars = pr->n == 1 ? mat->rs : mat->cs;
    g.acs = pr->n == 1 ? mat->cs : mat->rs;
    g.adtype = mat->dtype;
    g.c = pr->c.data + (size_t)ptl_gemm_batch_offset(pr, &pr->c, bi) * e->item;
    g.cs = pr->n == 1 ? pr->c.rs : pr->c.cs;
    if (!direct) {
        e->pack[vec->dtype](v, 1, vs, 1, pr->k, 1, x);
    }
    g.x = direct ? v : x;
    PtlParallelFn fn = !pr->dot_rows && g.ars == 1 && g.acs != 1 && g.adtype == e->acc_dtype
                           ? gemv_cols
                           : gemv_rows;
    int rc = parallel && (double)rows * (double)pr->k >= GEMM_PARALLEL_FLOPS
                 ? ptl_parallel_for(0, rows, PTL_GRAIN_SIZE / pr->k + 1, fn, &g)
                 : fn(&g, 0, rows);
    free(x);
    return rc;
}
