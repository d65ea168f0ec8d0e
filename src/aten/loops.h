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

/* The C type a dtype computes in (float16/bfloat16 compute in float). */
#define PTL_LOAD_f2(X) ptl_half_to_f(X)
#define PTL_STORE_f2(X) ptl_f_to_half(X)
#define PTL_LOAD_bf(X) ptl_bf16_to_f(X)
#define PTL_STORE_bf(X) ptl_f_to_bf16(X)

#endif
