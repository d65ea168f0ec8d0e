/* tls.h -- thread-local dispatch state.  Mirrors c10/core/impl/LocalDispatchKeySet.h and
 * c10/core/GradMode.h: grad mode and the included/excluded key sets live here so that
 * the dispatcher (aten) and autograd can both read them without depending on each other. */
#ifndef PTL_C10_TLS_H
#define PTL_C10_TLS_H

#include "dispatch_key.h"
#include "dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct PtlLocalState {
    PtlDispatchKeySet included;
    PtlDispatchKeySet excluded;
    int grad_enabled;
    int inference_mode;
    int trace_dispatch;   /* print every dispatcher call (PTL_SHOW_DISPATCH_TRACE) */
    int trace_depth;
    /* torch.autocast: CPU autocasting is on while PTL_KEY_AUTOCAST_CPU is included; CUDA's
     * flag is bookkeeping until CUDA kernels exist (Note [Autocast] in aten/autocast.h) */
    PtlDtype autocast_cpu_dtype;
    PtlDtype autocast_cuda_dtype;
    int autocast_cuda_enabled;
} PtlLocalState;

/* The calling thread's state (never NULL). */
PtlLocalState *ptl_tls(void);
/* The value new threads start with for trace_dispatch (set from the environment at init). */
void ptl_tls_set_trace_default(int on);

#ifdef __cplusplus
}
#endif
#endif
