/* gemm.h -- the matrix-multiply engine under mm, bmm, addmm, addmv, baddbmm, dot and mv
 * (linalg.c), and later conv (im2col) and linear.  Plays the role of ATen/native/CPUBlas.h
 * and ATen/native/cpu/BlasKernel.cpp (PyTorch calls MKL/OpenBLAS there; we carry our own). */
#ifndef PTL_ATEN_NATIVE_GEMM_H
#define PTL_ATEN_NATIVE_GEMM_H

#include "../../c10/tensor_impl.h"

/* dst[p * w + r] = src[r * rs + p] for the rows r < h <= 8 and the columns p < kc8 (a multiple
 * of 8): a transposed sliver by 8 x 8 transposes, as gemm packs its float32 operands.
 * AVX2 code: call it only when ptl_cpu_capability() >= PTL_CPU_AVX2 (attention.c packs its
 * keys with it). */
void ptl_gemm_pack_rows8_f4(const float *src, int64_t rs, int64_t h, int64_t kc8, int64_t w,
                            float *dst);

/* C = alpha * A @ B + beta * C.
 *
 * Shapes: A (m x k), B (k x n), C (m x n), or all three batched with the same leading batch
 * dims (... x m x k, ... x k x n, ... x m x n; bmm's one, or matmul's several when no 3-D
 * view can hold them).  Any strides, including 0 and transposed views: the operands are read
 * through packing, never copied whole.  A and B must have C's dtype.
 * float32, float16 and bfloat16 compute in float32; float64 in double; the integer dtypes
 * in int64 with two's-complement wrap-around (alpha and beta truncated to integers), as
 * PyTorch does.  When beta == 0, C is only written (NaN or Inf already in C is ignored).
 * bool is refused: callers report PyTorch's op-specific message before calling.
 * Borrows every tensor; releases the GIL for large products (Note [GIL release]).
 * Returns 0, or -1 with the error set. */
int ptl_gemm(PtlTensorImpl *c, PtlTensorImpl *a, PtlTensorImpl *b, double alpha, double beta);

/* C = alpha * A @ B + beta * S: addmm's and baddbmm's bias read in place (through its
 * strides, 0 for a broadcast bias) instead of copied into C first.  S has C's sizes and
 * dtype and does not overlap C; it is not read when beta == 0. */
int ptl_gemm_add(PtlTensorImpl *c, PtlTensorImpl *a, PtlTensorImpl *b, double alpha, double beta,
                 PtlTensorImpl *src);

/* The same on raw float64 arrays, for the blocked factorisations (linalg_*.c), which work
 * on float64 copies of their own: C (m x n, row stride ldc) = alpha * A @ B + beta * C, with
 * A's element (i, p) at a[i * ars + p * acs] and B's (p, j) at b[p * brs + j * bcs].  A and B
 * must not overlap the part of C written.  Uses the thread pool for large products (nested
 * inside a parallel region it runs inline); keeps the GIL as the caller left it.  0, or -1
 * with the error set (out of memory). */
int ptl_gemm_f64(int64_t m, int64_t n, int64_t k, double alpha, const double *a, int64_t ars,
                 int64_t acs, const double *b, int64_t brs, int64_t bcs, double beta, double *c,
                 int64_t ldc);
/* The same in float32 (conv_winograd.c's weight gradient). */
int ptl_gemm_f32(int64_t m, int64_t n, int64_t k, double alpha, const float *a, int64_t ars,
                 int64_t acs, const float *b, int64_t brs, int64_t bcs, double beta, float *c,
                 int64_t ldc);

/* A B reused by many products (a recurrent layer's W_hh^T, one product per time step),
 * packed once into the engine's slivers (Note [GEMM packing of B]).  float32 and float64
 * only.  B is k x n with its element (p, j) at b[p * brs + j * bcs].  Returns a new panel to
 * free with ptl_gemm_packed_b_free (NULL-safe), or NULL with the error set. */
typedef struct PtlGemmPackedB PtlGemmPackedB;
PtlGemmPackedB *ptl_gemm_pack_b(PtlDtype dtype, int64_t k, int64_t n, const void *b,
                                int64_t brs, int64_t bcs);
void ptl_gemm_packed_b_free(PtlGemmPackedB *pb);

/* C (m x n, rows ldc apart) = A (m x k, rows lda apart, columns contiguous) @ B + beta * S
 * (rows lds apart), or + beta * C when s is NULL; the panel's dtype throughout.  The same
 * bits as ptl_gemm on the unpacked B.  Uses the thread pool for large products (inline
 * inside a parallel region); keeps the GIL as the caller left it.  0, or -1 with the error
 * set (out of memory). */
int ptl_gemm_packed(const PtlGemmPackedB *pb, int64_t m, const void *a, int64_t lda, void *c,
                    int64_t ldc, const void *s, int64_t lds, double beta);
/* Whether ptl_gemm of an m x k by k x n product in dtype (the CPU, one batch) has the bits of
 * ptl_gemm_packed over any split of its rows: the blocked product, not one it computes
 * transposed, by vector products or split along k (a recurrent layer's projections, one
 * step's rows at a time: Note [LSTM step projections] in rnn.c). */
int ptl_gemm_packed_rows_exact(PtlDtype dtype, int64_t m, int64_t n, int64_t k);

#endif
