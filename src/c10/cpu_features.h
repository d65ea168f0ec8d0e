/* cpu_features.h -- run-time CPU feature detection for SIMD kernel selection.  Mirrors
 * ATen/native/DispatchStub.cpp's cpu capability. */
#ifndef PTL_C10_CPU_FEATURES_H
#define PTL_C10_CPU_FEATURES_H

typedef enum PtlCpuCapability {
    PTL_CPU_DEFAULT = 0,
    PTL_CPU_AVX2 = 1,     /* AVX2 + FMA */
    PTL_CPU_AVX512 = 2,   /* AVX-512 F/BW/VL/DQ (on top of AVX2) */
} PtlCpuCapability;

/* Detected once; PTL_CPU_CAPABILITY=default|avx2|avx512 lowers it (for testing fallbacks). */
PtlCpuCapability ptl_cpu_capability(void);
const char *ptl_cpu_capability_name(PtlCpuCapability c);
/* Whether the float16 conversions of F16C may run: the CPU has them and the capability is at
 * least AVX2 (so PTL_CPU_CAPABILITY=default turns them off too). */
int ptl_cpu_has_f16c(void);

#endif
