/* macros.h -- portability macros shared by C and CUDA code.  Mirrors c10/macros/Macros.h. */
#ifndef PTL_C10_MACROS_H
#define PTL_C10_MACROS_H

#ifdef __CUDACC__
#define PTL_HD __host__ __device__
#else
#define PTL_HD
#endif

#if defined(__GNUC__)
#define PTL_LIKELY(X) __builtin_expect(!!(X), 1)
#define PTL_UNLIKELY(X) __builtin_expect(!!(X), 0)
#else
#define PTL_LIKELY(X) (X)
#define PTL_UNLIKELY(X) (X)
#endif

#define PTL_MAX_DIMS 16

#endif
