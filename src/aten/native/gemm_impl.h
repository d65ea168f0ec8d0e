/* gemm_impl.h -- what gemm.c's driver, gemm_gemv.c's matrix-vector products and
 * gemm_kernels.c's engines share: the engine table (packing, micro-kernels and tiles of one
 * accumulation type and instruction set), its function types, and the driver's problem.
 * Private to those files (Note [GEMM blocking] in gemm.c). */
#ifndef PTL_ATEN_NATIVE_GEMM_IMPL_H
#define PTL_ATEN_NATIVE_GEMM_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "../../c10/dtype.h"
#include "../../c10/macros.h"

/* the largest MR x NR tile of any engine, in bytes */
#define GEMM_ACC_BYTES 1536

typedef void (*PackFn)(const char *src, int64_t rs, int64_t cs, int64_t rows, int64_t kc,
                       int64_t w, void *dst);
typedef void (*KernelFn)(int64_t kc, const void *ap, const void *bp, void *acc);
/* C (MR x NR, rows ldc apart) = alpha * A (kc x MR: a packed sliver, or for a direct_a tile
 * MR rows of a row-major A, lda apart) @ B (kc x NR, rows ldb apart)
 * + beta * S (rows lds apart: C itself, or addmm's bias), stored for C's first `rows` rows
 * only (a last sliver of fewer rows than the tile computes); S is not read when beta is 0 */
typedef void (*TileFn)(int64_t kc, const void *ap, int64_t lda, const void *bp, int64_t ldb,
                       void *c, int64_t ldc, const void *src, int64_t lds, double alpha,
                       double beta, int64_t rows);
/* a TileFn on MR rows of a transposed A read in place (as GemmEngine.direct_at) that also
 * copies them into the packed sliver pk (Note [GEMM transposed A packed by its first tiles]) */
typedef void (*PackTileFn)(int64_t kc, const void *ap, int64_t lda, void *pk, const void *bp,
                           int64_t ldb, void *c, int64_t ldc, const void *src, int64_t lds,
                           double alpha, double beta, int64_t rows);
/* out[r] = a[r * lda : r * lda + k] . b for r < rows (element strides, engine type) */
typedef void (*DotFn)(const void *a, int64_t lda, const void *b, int64_t k, int64_t rows,
                      void *out);
typedef void (*AxpyFn)(const char *a, int64_t lda, const void *x, int64_t k, int64_t n,
                       void *acc);
typedef void (*UpdateFn)(const void *acc, int64_t nr_ld, int64_t mr, int64_t nr, char *c,
                         int64_t rs, int64_t cs, double alpha, double beta);

/* One engine per accumulation type and instruction set.  ORDER DTYPE for pack[]: indexed by
 * the source dtype. */
typedef struct GemmEngine {
    int64_t mr, nr, kc, mc, nc;
    int64_t direct_b_max_m;              /* Note [GEMM packing of B] */
    size_t item;                         /* sizeof the accumulation type */
    PtlDtype acc_dtype;
    KernelFn kernel;                     /* acc = A sliver @ B sliver; NULL when tile is set */
    TileFn tile;                         /* or the tile that also stores C, reads B in place */
    UpdateFn update;
    DotFn dot;                           /* for matrix-vector products */
    AxpyFn axpy;                         /* the same over contiguous columns */
    PackFn pack[PTL_DTYPE_COUNT];
    TileFn tile4, tile8, tile10;         /* tile's first 4, 8 and 10 rows, or NULL (SIMD tiles) */
    TileFn pair4;                        /* a 4-row tile on slivers packed 4 wide, for a last
                                          * MR + 1 or MR + 2 rows as two of them, or NULL */
    TileFn half, quarter;                /* its first NR / 2 and NR / 4 columns, or NULL */
    TileFn direct_a;                     /* tile on MR rows of A read in place, or NULL
                                          * (Note [GEMM direct A]) */
    TileFn direct_a4, direct_a8;         /* the same on a last 4 or 8 rows, of which it reads
                                          * only the first `rows` (the others stand in for
                                          * row 0 and are not stored), or NULL */
    TileFn direct_at;                    /* tile on MR rows of a transposed A read in place
                                          * (row i's element p at a[i + p * lda]), or NULL */
    PackTileFn direct_at_pack;           /* direct_at that also packs the sliver (MR 6), or
                                          * NULL */
    PackTileFn direct_at_pack2;          /* and the next sliver's rows too, kc * MR on */
    PackTileFn tile_bpack, direct_a_bpack, direct_at_bpack;
                                         /* tile, direct_a and direct_at reading a row-major
                                          * B's NR columns in place (ldb apart) and storing
                                          * them into the packed sliver pk (Note [GEMM B
                                          * packed by its first tile]), or NULL */
    TileFn tile_ct, direct_a_ct, pair4_ct;
                                         /* tile, direct_a and pair4 storing a C whose
                                          * rows are one element apart (ldc: its column
                                          * stride; Note [GEMM C stored transposed]), or
                                          * NULL */
} GemmEngine;

/* ---- what the driver's parts share: gemm.c, and gemm_gemv.c's matrix-vector products ---- */

/* Products of at least this many multiply-adds use the thread pool and drop the GIL. */
#define GEMM_PARALLEL_FLOPS (1 << 18)

/* One operand: the first element of batch 0 and strides in elements, one per batch dim
 * (bs) then the row and column strides. */
typedef struct GemmMat {
    char *data;
    int64_t bs[PTL_MAX_DIMS - 2], rs, cs;
    PtlDtype dtype;
} GemmMat;

typedef struct GemmProblem {
    const GemmEngine *e;
    PackFn pack_a, pack_b;               /* e->pack for the operands' dtype */
    int b_direct;                        /* e->tile can read whole B slivers in place (when
                                          * m <= e->direct_b_max_m) */
    int64_t batch, m, n, k;              /* batch: the product of the nbd batch sizes */
    int nbd;
    int64_t bsizes[PTL_MAX_DIMS - 2];
    GemmMat a, b, c;                     /* c has the engine's type */
    GemmMat s;                           /* beta * s, not beta * c, when s.data != NULL */
    double alpha, beta;
    int dot_rows;                        /* a vector product is computed as dot products of
                                          * A's rows (Note [GEMM last columns]) */
} GemmProblem;

/* Elements from m's batch 0 to its batch bi (batches numbered row-major over the batch
 * dims, so a 4-D attention operand that no 3-D view can hold is read in place). */
static inline int64_t
ptl_gemm_batch_offset(const GemmProblem *pr, const GemmMat *m, int64_t bi)
{
    int64_t off = 0;
    for (int d = pr->nbd - 1; d > 0; d--) {
        off += bi % pr->bsizes[d] * m->bs[d];
        bi /= pr->bsizes[d];
    }
    return pr->nbd > 0 ? off + bi * m->bs[0] : 0;
}

/* aligned_alloc of nbytes rounded up to 64, or NULL with the error set (gemm.c) */
void *ptl_gemm_alloc(size_t nbytes);
/* n == 1 (A @ column) or m == 1 (row @ B, the same problem transposed) for batch bi: dot
 * products of A's rows or axpys over its columns (gemm_gemv.c).  The vector is used in
 * place when it is contiguous in the engine type, else packed. */
int ptl_gemm_gemv(const GemmProblem *pr, int64_t bi, int parallel);

/* The engine for C's dtype on this CPU (PTL_CPU_CAPABILITY lowers the choice), or NULL. */
const GemmEngine *ptl_gemm_engine(PtlDtype dtype);

/* double -> int64 without undefined behaviour for out-of-range scalars */
static inline uint64_t
ptl_gemm_scalar_to_u64(double v)
{
    if (!(v > -9.2233720368547758e18 && v < 9.2233720368547758e18)) {
        return (uint64_t)INT64_MIN;
    }
    return (uint64_t)(int64_t)v;
}

#endif
