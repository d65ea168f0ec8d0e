/* autocast.c -- the AutocastCPU fallback and its per-operator policy.  Mirrors
 * ATen/autocast_mode.cpp (the CPU lists).  See Note [Autocast] in autocast.h. */
#include "autocast.h"

#include "../c10/error.h"
#include "../c10/tls.h"
#include "dispatcher.h"

typedef enum AutocastPolicy {
    POLICY_NONE = 0,
    POLICY_LOWER,   /* cast floating arguments to the autocast dtype */
    POLICY_FP32,    /* cast float16/bfloat16 arguments to float32 */
} AutocastPolicy;

/* PyTorch's "CPU Ops that can autocast to bfloat16", as far as ops.def has them (linear
 * and conv1d/2d/3d reach addmm, matmul and convolution) */
static const PtlOpId lower_ops[] = {
    PTL_OP_mm, PTL_OP_bmm, PTL_OP_matmul, PTL_OP_addmm, PTL_OP_baddbmm, PTL_OP_convolution,
};

/* PyTorch's "CPU Ops that can autocast to float32", as far as ops.def has them */
static const PtlOpId fp32_ops[] = {
    PTL_OP_avg_pool3d, PTL_OP_binary_cross_entropy, PTL_OP_grid_sampler_2d,
    PTL_OP_grid_sampler_3d, PTL_OP_prod, PTL_OP_prod_dim_int, PTL_OP_quantile,
    PTL_OP_quantile_scalar, PTL_OP_nanquantile, PTL_OP_nanquantile_scalar, PTL_OP_cdist,
    PTL_OP_trace, PTL_OP_max_pool3d_with_indices, PTL_OP_max_unpool2d,
    PTL_OP_reflection_pad1d, PTL_OP_reflection_pad2d, PTL_OP_replication_pad1d,
    PTL_OP_replication_pad2d, PTL_OP_replication_pad3d, PTL_OP_nll_loss_nd,
    PTL_OP_linalg_svd, PTL_OP__linalg_svd, PTL_OP_svd,
};

static unsigned char policy[PTL_OP_COUNT];   /* AutocastPolicy, indexed by PtlOpId */

/* Whether the tensor argument t is cast under the policy, and to what */
static int
wants_cast(const PtlTensorImpl *t, AutocastPolicy p, PtlDtype lower, PtlDtype *to)
{
    if (t == NULL || t->device.type != PTL_DEVICE_CPU || !ptl_dtype_is_floating(t->dtype) ||
        t->dtype == PTL_DTYPE_FLOAT64) {
        return 0;
    }
    *to = p == POLICY_LOWER ? lower : PTL_DTYPE_FLOAT32;
    return t->dtype != *to;
}

/* The boxed AutocastCPU kernel of every operator: casts the listed operators' tensor
 * arguments (single tensors; lists are left alone), then redispatches below AutocastCPU.
 * The casts are owned here and released after the call (Note [Stack ownership]). */
static int
autocast_fallback(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *stack)
{
    const PtlDispatchKeySet below = ks & ptl_keyset_below(PTL_KEY_AUTOCAST_CPU);
    AutocastPolicy p = op->id >= 0 && op->id < PTL_OP_COUNT ? policy[op->id] : POLICY_NONE;
    if (p == POLICY_NONE) {
        return ptl_dispatcher_redispatch(op, below, stack);
    }
    PtlLocalState *tls = ptl_tls();
    const PtlDispatchKeySet excluded = tls->excluded;
    PtlTensorImpl *casts[PTL_SCHEMA_MAX_ARGS];
    int ncasts = 0, rc = -1;
    tls->excluded |= PTL_KEYSET(PTL_KEY_AUTOCAST_CPU);
    for (int i = 0; i < op->schema.nargs; i++) {
        PtlDtype to;
        if (stack[i].tag != PTL_IV_TENSOR ||
            !wants_cast(stack[i].u.t, p, tls->autocast_cpu_dtype, &to)) {
            continue;
        }
        if ((casts[ncasts] = ptl_to_copy(stack[i].u.t, to, NULL)) == NULL) {
            goto done;
        }
        stack[i].u.t = casts[ncasts++];
    }
    rc = ptl_dispatcher_redispatch(op, below, stack);
done:
    tls->excluded = excluded;
    for (int i = 0; i < ncasts; i++) {
        ptl_decref(casts[i]);
    }
    return rc;
}

int
ptl_autocast_init(void)
{
    for (size_t i = 0; i < sizeof(lower_ops) / sizeof(lower_ops[0]); i++) {
        policy[lower_ops[i]] = POLICY_LOWER;
    }
    for (size_t i = 0; i < sizeof(fp32_ops) / sizeof(fp32_ops[0]); i++) {
        policy[fp32_ops[i]] = POLICY_FP32;
    }
    ptl_dispatcher_register_fallback(PTL_KEY_AUTOCAST_CPU, autocast_fallback);
    return 0;
}
