/* loops.h -- the inner-loop ABI shared by every elementwise kernel.  Mirrors NumPy's
 * ufunc loop signature and ATen/native/cpu/Loops.h.
 *
 * A loop gets one data pointer and one BYTE stride per operand (the output first) and a
 * count: the same signature serves every dtype and layout.  TensorIterator calls it once
 * per coalesced 1-D run, possibly from several threads at once; `extra` carries the op's
 * scalars (alpha, rounding mode, ...) and is read-only. */
#ifndef PTL_ATEN_LOOPS_H
#define PTL_ATEN_LOOPS_H

#include <stdint.h>

#include "../c10/dtype.h"

typedef void (*PtlLoop)(char **data, const int64_t *strides, int64_t n, const void *extra);

#define PTL_ID(X) (X)

/* Note [Loop clones]
 * ~~~~~~~~~~~~~~~~~
 * The elementwise loop templates (binary_loops.h, unary_loops.h, ternary.c) are compiled
 * twice, for the baseline x86-64 (SSE2) and for AVX2, and the dynamic loader picks one per
 * function at import from the CPU it runs on (GCC's target_clones: an ifunc, no -march
 * flag).  gcc vectorizes the same C source both ways; 32-byte loads halve the time of a
 * float add whose operands live in L2/L3 (add 1e5 float32: 39 -> 19 us), which is where
 * NumPy's own AVX2 loops had been beating ours.  FMA is left out on purpose: gcc would
 * contract a + x * b into one rounding, and a result must not depend on the CPU.
 * PTL_LOOP_CLONES_WIDE adds an AVX-512 clone (8 doubles a vector; gcc's avx512f target does
 * not contract a + x * b either): the float64 linear algebra's loops (linalg_*.c), which were
 * compiled for SSE2 only, ran 1.3-2.3x faster with it (eigh 256: 14.3 -> 10.0 ms, solve 256:
 * 2.5 -> 1.5 ms, one thread) and give the same bits.  One exception: gcc 12 turns products of
 * complex numbers written as (re, im) pairs into vfmaddsub in the avx512f clone whatever
 * -ffp-contract says, so loops of those stay out of it (fft.c's stages).  Kernels that fuse on
 * purpose say so where they do (an explicit _mm256_fmadd_pd, or svd.c's rotations compiled
 * with fp-contract=fast).  Elsewhere the macros are empty. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(PTL_NO_LOOP_CLONES)
#define PTL_LOOP_CLONES __attribute__((target_clones("avx2", "default")))
#define PTL_LOOP_CLONES_WIDE __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define PTL_LOOP_CLONES
#define PTL_LOOP_CLONES_WIDE
#endif

/* The C type a dtype computes in (float16/bfloat16 compute in float). */
#define PTL_LOAD_f2(X) ptl_half_to_f(X)
#define PTL_STORE_f2(X) ptl_f_to_half(X)
#define PTL_LOAD_bf(X) ptl_bf16_to_f(X)
#define PTL_STORE_bf(X) ptl_f_to_bf16(X)

#endif
