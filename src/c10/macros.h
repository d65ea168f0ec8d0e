/* macros.h -- portability macros shared by C and CUDA code.  Mirrors c10/macros/Macros.h. */
#ifndef PTL_C10_MACROS_H
#define PTL_C10_MACROS_H

#ifdef __CUDACC__
#define PTL_HD __host__ __device__
#else
#define PTL_HD
#endif

/* A formula for both backends that the CPU always inlines, so that the callers compiled for
 * several instruction sets (loops.h's clones, special.c's FMA clones) compile it with their
 * instructions: its fma an instruction, not a call of libm's */
#ifdef __CUDACC__
#define PTL_HD_INLINE __host__ __device__ static inline
#else
#define PTL_HD_INLINE static inline __attribute__((always_inline))
#endif

#if defined(__GNUC__)
#define PTL_LIKELY(X) __builtin_expect(!!(X), 1)
#define PTL_UNLIKELY(X) __builtin_expect(!!(X), 0)
#else
#define PTL_LIKELY(X) (X)
#define PTL_UNLIKELY(X) (X)
#endif

#define PTL_MAX_DIMS 16

/* Note [Products rounded apart]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * a * b rounded on its own, never fused with a following add into one fma.  gcc under
 * -std=c11 does not contract a * b + c (and the baseline x86-64 has no fma), but nvcc does
 * by default (-fmad=true) in device code, so a formula that must give the CPU's bits on the
 * device (the random transforms, the fused optimizer steps) writes its products that feed
 * an add with these.  __dmul_rn / __fmul_rn are never contracted. */
#ifdef __CUDA_ARCH__
#define PTL_DMUL_RN(A, B) __dmul_rn((A), (B))
#define PTL_FMUL_RN(A, B) __fmul_rn((A), (B))
#else
#define PTL_DMUL_RN(A, B) ((A) * (B))
#define PTL_FMUL_RN(A, B) ((A) * (B))
#endif

#endif
