/* cpu_features.c -- see cpu_features.h. */
#include "cpu_features.h"

#include <stdlib.h>
#include <string.h>

static int detected = -1;

PtlCpuCapability
ptl_cpu_capability(void)
{
    if (detected >= 0) {
        return (PtlCpuCapability)detected;
    }
    int cap = PTL_CPU_DEFAULT;
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        cap = PTL_CPU_AVX2;
        if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")) {
            cap = PTL_CPU_AVX512;
        }
    }
#endif
    const char *env = getenv("PTL_CPU_CAPABILITY");
    if (env != NULL) {
        int want = strcmp(env, "default") == 0 ? PTL_CPU_DEFAULT
                   : strcmp(env, "avx2") == 0  ? PTL_CPU_AVX2
                                               : PTL_CPU_AVX512;
        if (want < cap) {
            cap = want;
        }
    }
    detected = cap;
    return (PtlCpuCapability)cap;
}

const char *
ptl_cpu_capability_name(PtlCpuCapability c)
{
    switch (c) {
    case PTL_CPU_AVX2: return "AVX2";
    case PTL_CPU_AVX512: return "AVX512";
    default:
#if defined(__aarch64__)
        return "NEON";
#else
        return "DEFAULT";
#endif
    }
}

int
ptl_cpu_has_f16c(void)
{
    static int known = -1;
    if (known < 0) {
        known = 0;
#if defined(__x86_64__) && defined(__GNUC__)
        __builtin_cpu_init();
        known = ptl_cpu_capability() >= PTL_CPU_AVX2 && __builtin_cpu_supports("f16c");
#endif
    }
    return known;
}
