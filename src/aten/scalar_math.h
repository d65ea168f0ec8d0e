/* scalar_math.h -- scalar formulas shared by the CPU loops and the CUDA kernels
 * (PTL_HD marks them __host__ __device__ under nvcc), so the CPU tests check the GPU's
 * math.  Mirrors the scalar lambdas of ATen/native/cpu/BinaryOpsKernel.cpp. */
#ifndef PTL_ATEN_SCALAR_MATH_H
#define PTL_ATEN_SCALAR_MATH_H

#include <math.h>
#include <stdint.h>

#include "../c10/macros.h"

PTL_HD static inline double ptl_add_d(double a, double b, double alpha) { return a + alpha * b; }
PTL_HD static inline float ptl_add_f(float a, float b, float alpha) { return a + alpha * b; }
PTL_HD static inline int64_t ptl_add_i(int64_t a, int64_t b, int64_t alpha) { return (int64_t)((uint64_t)a + (uint64_t)alpha * (uint64_t)b); }

#endif
