/* dispatcher.c -- the operator registry and boxed calls.  See Note [Dispatch]. */
#include "dispatcher.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../c10/error.h"
#include "../c10/tls.h"

#define MAX_DYNAMIC_OPS 1024

typedef struct PtlOpDecl {
    const char *schema;
    uint32_t flags;
} PtlOpDecl;

#define F PTL_OPF_FUNCTION
#define M PTL_OPF_METHOD
#define P PTL_OPF_POINTWISE
#define N PTL_OPF_NONDIFF
#define H PTL_OPF_HIDDEN
static const PtlOpDecl op_decls[PTL_OP_COUNT] = {
#define PTL_OP(ID, SCHEMA, FLAGS) [PTL_OP_##ID] = {SCHEMA, FLAGS},
#include "ops.def"
#undef PTL_OP
};
#undef F
#undef M
#undef P
#undef N
#undef H

PtlOperator *ptl_ops = NULL;
static int num_ops = 0;
static PtlKernel fallbacks[PTL_KEY_COUNT];

static int
init_op(PtlOperator *op, int id, const char *schema, uint32_t flags)
{
    memset(op, 0, sizeof(*op));
    op->id = id;
    op->flags = flags;
    op->device_arg = -1;
    if (ptl_schema_parse(schema, &op->schema) < 0) {
        return -1;
    }
    for (int i = 0; i < op->schema.nargs; i++) {
        const PtlArg *a = &op->schema.args[i];
        if (a->kind == PTL_ARG_TENSOR || a->kind == PTL_ARG_TENSORLIST) {
            op->tensor_args |= 1u << i;
            op->write_args |= a->alias_write ? 1u << i : 0;
        }
        if (a->kind == PTL_ARG_DTYPE) {
            op->dtype_args |= 1u << i;
        }
        if (a->kind == PTL_ARG_SCALAR) {
            op->scalar_args |= 1u << i;
        }
        if (a->kind == PTL_ARG_DEVICE && strcmp(a->name, "device") == 0) {
            op->device_arg = i;
        }
    }
    return 0;
}

int
ptl_dispatcher_init(void)
{
    if (ptl_ops != NULL) {
        return 0;
    }
    ptl_ops = calloc(PTL_OP_COUNT + MAX_DYNAMIC_OPS, sizeof(PtlOperator));
    if (ptl_ops == NULL) {
        return ptl_error_set(PTL_ERR_MEMORY, "can't allocate the operator table");
    }
    for (int i = 0; i < PTL_OP_COUNT; i++) {
        if (init_op(&ptl_ops[i], i, op_decls[i].schema, op_decls[i].flags) < 0) {
            return -1;
        }
    }
    num_ops = PTL_OP_COUNT;
    return 0;
}

int
ptl_dispatcher_num_ops(void)
{
    return num_ops;
}

PtlOperator *
ptl_dispatcher_op_at(int i)
{
    return (i >= 0 && i < num_ops) ? &ptl_ops[i] : NULL;
}

PtlOperator *
ptl_dispatcher_find(const char *name, const char *overload)
{
    char full[128];
    const char *dot = NULL;
    if (overload == NULL) {   /* "aten::add.Tensor" */
        dot = strrchr(name, '.');
        size_t n = dot ? (size_t)(dot - name) : strlen(name);
        if (n >= sizeof(full)) {
            return NULL;
        }
        memcpy(full, name, n);
        full[n] = '\0';
        name = full;
        overload = dot ? dot + 1 : "";
    }
    for (int i = 0; i < num_ops; i++) {
        if (strcmp(ptl_ops[i].schema.name, name) == 0 &&
            strcmp(ptl_ops[i].schema.overload, overload) == 0) {
            return &ptl_ops[i];
        }
    }
    return NULL;
}

PtlOperator *
ptl_dispatcher_add_op(const char *schema, uint32_t flags)
{
    if (num_ops >= PTL_OP_COUNT + MAX_DYNAMIC_OPS) {
        ptl_error_set(PTL_ERR_RUNTIME, "too many operators registered");
        return NULL;
    }
    /* parsed in its slot, not copied there: a default string or list (PtlArg.def) points
     * into its own argument, so a copy's would point into the parse's stack frame */
    PtlOperator *op = &ptl_ops[num_ops];
    if (init_op(op, num_ops, schema, flags) < 0) {
        memset(op, 0, sizeof(*op));
        return NULL;
    }
    if (ptl_dispatcher_find(op->schema.name, op->schema.overload) != NULL) {
        ptl_error_set(PTL_ERR_RUNTIME,
                      "Tried to register an operator (%s%s%s) with the same name and overload "
                      "name multiple times.",
                      op->schema.name, op->schema.overload[0] ? "." : "", op->schema.overload);
        memset(op, 0, sizeof(*op));
        return NULL;
    }
    num_ops++;
    return op;
}

int
ptl_dispatcher_remove_op(PtlOperator *op)
{
    if (op->id < PTL_OP_COUNT) {
        return ptl_error_set(PTL_ERR_RUNTIME, "can't remove the built-in operator %s",
                             op->schema.name);
    }
    for (int k = 0; k < PTL_KEY_COUNT; k++) {
        ptl_dispatcher_set_kernel(op, (PtlDispatchKey)k, NULL, NULL, "");
    }
    memset(op->calls, 0, sizeof(op->calls));
    op->schema.name[0] = '\0';
    op->schema.overload[0] = '\0';
    return 0;
}

int
ptl_dispatcher_register(const PtlKernelReg *regs, size_t n, const char *origin)
{
    const char *base = strrchr(origin, '/');
    base = base ? base + 1 : origin;
    for (size_t i = 0; i < n; i++) {
        PtlOperator *op = &ptl_ops[regs[i].op];
        if (op->kernels[regs[i].key] != NULL) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "%s%s%s: a kernel for key %s is registered twice (%s and %s)",
                                 op->schema.name, op->schema.overload[0] ? "." : "",
                                 op->schema.overload, ptl_dispatch_key_name(regs[i].key),
                                 op->kernel_origin[regs[i].key], base);
        }
        op->kernels[regs[i].key] = regs[i].fn;
        op->kernel_origin[regs[i].key] = base;
    }
    return 0;
}

int
ptl_dispatcher_set_kernel(PtlOperator *op, PtlDispatchKey key, PtlKernel fn, void *data,
                          const char *origin)
{
    char *copy = NULL;
    if (fn != NULL) {
        size_t n = strlen(origin) + 1;
        if ((copy = malloc(n)) == NULL) {
            return ptl_error_set(PTL_ERR_MEMORY, "can't copy the name of a kernel's registrant");
        }
        memcpy(copy, origin, n);
    }
    int replaced = op->kernels[key] != NULL;
    if (op->kernel_owned_origin & PTL_KEYSET(key)) {
        free((char *)op->kernel_origin[key]);
    }
    op->kernels[key] = fn;
    op->kernel_data[key] = fn ? data : NULL;
    op->kernel_origin[key] = copy;
    if (copy != NULL) {
        op->kernel_owned_origin |= PTL_KEYSET(key);
    }
    else {
        op->kernel_owned_origin &= ~PTL_KEYSET(key);
    }
    return replaced;
}

void
ptl_dispatcher_register_fallback(PtlDispatchKey key, PtlKernel fn)
{
    fallbacks[key] = fn;
}

PtlKernel
ptl_dispatcher_fallback(PtlDispatchKey key)
{
    return fallbacks[key];
}

/* The keys the arguments carry, before the thread's included and excluded keys. */
static PtlDispatchKeySet
argument_keys(const PtlOperator *op, const PtlIValue *stack)
{
    PtlDispatchKeySet ks = 0;
    uint32_t m = op->tensor_args;
    while (m) {
        int i = __builtin_ctz(m);
        m &= m - 1;
        const PtlIValue *v = &stack[i];
        if (v->tag == PTL_IV_TENSOR) {
            ks |= v->u.t->keys;
        }
        else if (v->tag == PTL_IV_TENSORLIST) {
            for (int64_t j = 0; j < v->u.tl.n; j++) {
                if (v->u.tl.data[j] != NULL) {
                    ks |= v->u.tl.data[j]->keys;
                }
            }
        }
    }
    if (ks == 0) {   /* a factory function: the backend named by `device` */
        int type = op->device_arg >= 0 && stack[op->device_arg].tag == PTL_IV_DEVICE
                       ? stack[op->device_arg].u.device.type
                       : PTL_DEVICE_CPU;
        ks = PTL_KEYSET(type == PTL_DEVICE_CUDA   ? PTL_KEY_CUDA
                        : type == PTL_DEVICE_META ? PTL_KEY_META
                                                  : PTL_KEY_CPU);
    }
    /* a complex result asked for by `dtype`, or a complex Scalar, passes the Complex key too
     * (Note [Complex dtypes] in native/complex.c, Note [Complex Scalars] in ivalue.h) */
    for (uint32_t d = op->dtype_args | op->scalar_args; d; d &= d - 1) {
        const PtlIValue *v = &stack[__builtin_ctz(d)];
        if (v->tag == PTL_IV_COMPLEX ||
            (v->tag == PTL_IV_DTYPE && ptl_dtype_is_complex(v->u.dtype))) {
            ks |= PTL_KEYSET(PTL_KEY_COMPLEX);
        }
    }
    if (ks & PTL_KEYSET(PTL_KEY_META)) {
        ks &= ~PTL_KEYSET(PTL_KEY_COMPLEX);   /* the Meta kernels compute shapes, not values */
    }
    /* the SparseCPU kernels compute through dispatcher ops on their (dense) values, which
     * pass the Complex key themselves; a Complex kernel would read a sparse tensor's empty
     * storage */
    if (ks & PTL_KEYSET(PTL_KEY_SPARSE_CPU)) {
        ks &= ~PTL_KEYSET(PTL_KEY_COMPLEX);
    }
    return ks;
}

PtlDispatchKeySet
ptl_dispatcher_keys(const PtlOperator *op, const PtlIValue *stack)
{
    const PtlLocalState *tls = ptl_tls();
    return (argument_keys(op, stack) | tls->included) & ~tls->excluded;
}

/* The keys the thread's excluded set took from the call being traced; the trace line of
 * the call's first kernel prints them and clears them. */
static _Thread_local PtlDispatchKeySet trace_masked;

static int
format_keys(char *buf, size_t n, PtlDispatchKeySet ks)
{
    int off = 0;
    buf[0] = '\0';
    for (int k = PTL_KEY_COUNT - 1; k >= 0; k--) {
        if ((ks & PTL_KEYSET(k)) && k != PTL_KEY_COMPOSITE_IMPLICIT && (size_t)off < n) {
            off += snprintf(buf + off, n - (size_t)off, "%s%s", off ? ", " : "",
                            ptl_dispatch_key_name((PtlDispatchKey)k));
        }
    }
    return off;
}

/* One line per kernel entered: the operator, the keys it dispatched on, the keys the
 * thread's excluded set masked (masked=), the keys above the chosen one that had neither a
 * kernel nor a fallback and so fell through (fallthrough=), and what served the call. */
static void
trace_call(const PtlOperator *op, PtlDispatchKeySet ks, PtlDispatchKey chosen, int depth)
{
    char keys[256], list[256], masked[272] = "", through[272] = "";
    PtlDispatchKeySet above = ks & ~ptl_keyset_below(chosen) & ~PTL_KEYSET(chosen);
    format_keys(keys, sizeof(keys), ks);
    if (trace_masked != 0) {
        format_keys(list, sizeof(list), trace_masked);
        snprintf(masked, sizeof(masked), "  masked={%s}", list);
        trace_masked = 0;
    }
    if (format_keys(list, sizeof(list), above) > 0) {
        snprintf(through, sizeof(through), "  fallthrough={%s}", list);
    }
    fprintf(stderr, "%*s[dispatch] %s%s%s  keys={%s}%s%s  -> %s %s\n", depth * 2, "",
            op->schema.name, op->schema.overload[0] ? "." : "", op->schema.overload, keys,
            masked, through, ptl_dispatch_key_name(chosen),
            op->kernels[chosen] ? "kernel" : "fallback");
    fflush(stderr);
}

int
ptl_dispatcher_no_kernel_error(const PtlOperator *op, PtlDispatchKeySet ks)
{
    PtlDispatchKey backend = (ks & PTL_KEYSET(PTL_KEY_SPARSE_CPU)) ? PTL_KEY_SPARSE_CPU
                             : (ks & PTL_KEYSET(PTL_KEY_META)) ? PTL_KEY_META
                             : (ks & PTL_KEYSET(PTL_KEY_CUDA)) ? PTL_KEY_CUDA
                                                               : PTL_KEY_CPU;
    char avail[256];
    int off = 0;
    avail[0] = '\0';
    for (int k = 0; k < PTL_KEY_COUNT; k++) {
        if (op->kernels[k] != NULL) {
            off += snprintf(avail + off, sizeof(avail) - (size_t)off, "%s%s", off ? ", " : "",
                            ptl_dispatch_key_name((PtlDispatchKey)k));
        }
    }
    return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED,
                         "Could not run '%s%s%s' with arguments from the '%s' backend. '%s%s%s' "
                         "is only available for these backends: [%s].",
                         op->schema.name, op->schema.overload[0] ? "." : "",
                         op->schema.overload, ptl_dispatch_key_name(backend), op->schema.name,
                         op->schema.overload[0] ? "." : "", op->schema.overload, avail);
}

int
ptl_dispatcher_redispatch(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *stack)
{
    const PtlDispatchKeySet all = ks;
    while (ks) {
        PtlDispatchKey k = ptl_keyset_highest(ks);
        PtlKernel fn = op->kernels[k];
        if (fn == NULL) {
            fn = fallbacks[k];
        }
        if (fn != NULL) {
            PtlLocalState *tls = ptl_tls();
            ((PtlOperator *)op)->calls[k]++;
            if (PTL_LIKELY(!tls->trace_dispatch)) {
                return fn(op, ks, stack);
            }
            trace_call(op, all, k, tls->trace_depth);
            tls->trace_depth++;
            int rc = fn(op, ks, stack);
            tls->trace_depth--;
            return rc;
        }
        ks &= ~PTL_KEYSET(k);
    }
    return ptl_dispatcher_no_kernel_error(op, all);
}

/* Every tensor op writes may be written now (ptl_tensor_impl_check_inplace: Note
 * [Inference tensors] in c10/tensor_impl.h): 0, or -1 with the error set. */
static int
check_writes(const PtlOperator *op, const PtlIValue *stack)
{
    for (uint32_t m = op->write_args; m; m &= m - 1) {
        const PtlIValue *v = &stack[__builtin_ctz(m)];
        if (v->tag == PTL_IV_TENSOR && ptl_tensor_impl_check_inplace(v->u.t) < 0) {
            return -1;
        }
        for (int64_t j = 0; v->tag == PTL_IV_TENSORLIST && j < v->u.tl.n; j++) {
            if (v->u.tl.data[j] != NULL && ptl_tensor_impl_check_inplace(v->u.tl.data[j]) < 0) {
                return -1;
            }
        }
    }
    return 0;
}

int
ptl_dispatcher_call(const PtlOperator *op, PtlIValue *stack)
{
    const PtlLocalState *tls = ptl_tls();
    if (PTL_UNLIKELY(op->write_args != 0) && !tls->inference_mode && check_writes(op, stack) < 0) {
        return -1;
    }
    PtlDispatchKeySet ks = argument_keys(op, stack) | tls->included;
    if (PTL_UNLIKELY(tls->trace_dispatch)) {
        trace_masked = ks & tls->excluded;
    }
    return ptl_dispatcher_redispatch(op, ks & ~tls->excluded, stack);
}

PtlTensorImpl *
ptl_call_tensor(PtlOpId id, PtlIValue *args)
{
    const PtlOperator *op = &ptl_ops[id];
    if (ptl_dispatcher_call(op, args) < 0) {
        return NULL;
    }
    for (int i = 1; i < op->schema.nrets; i++) {
        ptl_ivalue_release(&args[i]);
    }
    return args[0].u.t;
}

PtlTensorImpl *
ptl_to_copy(PtlTensorImpl *t, PtlDtype dtype, const PtlDevice *device)
{
    const PtlOperator *op = &ptl_ops[PTL_OP__to_copy];
    PtlIValue st[PTL_SCHEMA_MAX_ARGS];
    st[0] = ptl_iv_tensor(t);
    for (int i = 1; i < op->schema.nargs; i++) {
        st[i] = op->schema.args[i].def;
    }
    st[1] = ptl_iv_dtype(dtype);          /* _to_copy(self, *, dtype, layout, device, ...) */
    if (device != NULL) {
        st[3] = ptl_iv_device(*device);
    }
    st[6] = ptl_iv_memory_format(PTL_MEMORY_FORMAT_CONTIGUOUS);   /* memory_format */
    return ptl_call_tensor(PTL_OP__to_copy, st);
}

void
ptl_dispatcher_reset_stats(void)
{
    for (int i = 0; i < num_ops; i++) {
        memset(ptl_ops[i].calls, 0, sizeof(ptl_ops[i].calls));
    }
}
