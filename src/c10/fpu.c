/* fpu.c -- flushing denormals (fpu.h).  Mirrors at::Context::setFlushDenormal. */
#include "fpu.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <xmmintrin.h>

#define MXCSR_DAZ (1u << 6)    /* denormal inputs read as zero */
#define MXCSR_FTZ (1u << 15)   /* denormal results written as zero */

int
ptl_fpu_set_flush_denormal(int on)
{
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("sse3")) {   /* PyTorch asks for DAZ; every SSE3 CPU has it */
        return 0;
    }
    unsigned int csr = _mm_getcsr();
    csr = on ? (csr | MXCSR_DAZ | MXCSR_FTZ) : (csr & ~(MXCSR_DAZ | MXCSR_FTZ));
    _mm_setcsr(csr);
    return 1;
}

#elif defined(__aarch64__) && defined(__GNUC__)
#include <stdint.h>

#define FPCR_FZ ((uint64_t)1 << 24)

int
ptl_fpu_set_flush_denormal(int on)
{
    uint64_t fpcr;
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(fpcr));
    fpcr = on ? (fpcr | FPCR_FZ) : (fpcr & ~FPCR_FZ);
    __asm__ __volatile__("msr fpcr, %0" : : "r"(fpcr));
    return 1;
}

#else

int
ptl_fpu_set_flush_denormal(int on)
{
    (void)on;
    return 0;
}

#endif
