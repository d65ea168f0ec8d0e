/* tls.c -- thread-local dispatch state.  See tls.h. */
#include "tls.h"

static int trace_default = 0;
static _Thread_local int tls_ready = 0;
static _Thread_local PtlLocalState tls_state;

static const char *const key_names[PTL_KEY_COUNT] = {
#define PTL_KEY_NAME(E, NAME) NAME,
    PTL_FORALL_DISPATCH_KEYS(PTL_KEY_NAME)
#undef PTL_KEY_NAME
};

const char *
ptl_dispatch_key_name(PtlDispatchKey k)
{
    return (k >= 0 && k < PTL_KEY_COUNT) ? key_names[k] : "Undefined";
}

PtlLocalState *
ptl_tls(void)
{
    if (!tls_ready) {
        tls_state.included = PTL_KEYSET(PTL_KEY_COMPOSITE_IMPLICIT);
        tls_state.excluded = 0;
        tls_state.grad_enabled = 1;
        tls_state.inference_mode = 0;
        tls_state.trace_dispatch = trace_default;
        tls_state.trace_depth = 0;
        tls_state.autocast_cpu_dtype = PTL_DTYPE_BFLOAT16;
        tls_state.autocast_cuda_dtype = PTL_DTYPE_FLOAT16;
        tls_state.autocast_cuda_enabled = 0;
        tls_ready = 1;
    }
    return &tls_state;
}

void
ptl_tls_set_trace_default(int on)
{
    trace_default = on;
    ptl_tls()->trace_dispatch = on;
}
