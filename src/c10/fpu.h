/* fpu.h -- the calling thread's floating-point control: flushing denormals to zero.  Mirrors
 * at::Context::setFlushDenormal (ATen/Context.cpp). */
#ifndef PTL_C10_FPU_H
#define PTL_C10_FPU_H

/* Turns flush-to-zero and denormals-are-zero on (on != 0) or off for the calling thread only
 * (MXCSR's FTZ and DAZ bits on x86-64, FPCR's FZ bit on aarch64), as PyTorch does; returns 1,
 * or 0 without changing anything where the CPU has no such control. */
int ptl_fpu_set_flush_denormal(int on);

#endif
