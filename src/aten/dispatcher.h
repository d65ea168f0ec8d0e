/* dispatcher.h -- the operator registry and boxed calls.  Mirrors ATen/core/dispatch/.
 *
 * Note [Dispatch]
 * ~~~~~~~~~~~~~~~
 * Every operator has one row in ops.def (its schema) and a kernel table indexed by
 * dispatch key.  A call computes the key set = union of the keys of every tensor argument
 * (or, for factory functions with no tensor argument, the backend named by their `device`
 * argument, which PyTorch leaves to its BackendSelect key), plus the thread's included keys,
 * minus its excluded keys, and runs the kernel of the highest-priority key that has a kernel
 * or a fallback (Note [Dispatch key order]).  Keys with neither fall through.  A kernel that
 * wraps others (Autograd) calls ptl_dispatcher_redispatch with the keys below its own.
 * Kernels are boxed: int kernel(op, keys, stack); see Note [Stack ownership]. */
#ifndef PTL_ATEN_DISPATCHER_H
#define PTL_ATEN_DISPATCHER_H

#include <stdint.h>

#include "../c10/dispatch_key.h"
#include "ivalue.h"
#include "ops.h"
#include "schema.h"

typedef struct PtlOperator PtlOperator;
typedef int (*PtlKernel)(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *stack);

struct PtlOperator {
    int id;
    uint32_t flags;        /* PTL_OPF_* */
    int device_arg;        /* index of the `Device? device` argument, or -1 */
    uint32_t tensor_args;  /* bit i: argument i is a Tensor, Tensor? or Tensor[] */
    uint32_t write_args;   /* bit i: argument i is written, Tensor(a!) or Tensor(a!)[] */
    uint32_t dtype_args;   /* bit i: argument i is a ScalarType (a complex one adds Complex) */
    uint32_t scalar_args;  /* bit i: argument i is a Scalar (a complex one adds Complex) */
    PtlSchema schema;
    PtlKernel kernels[PTL_KEY_COUNT];
    const char *kernel_origin[PTL_KEY_COUNT];   /* "binary.c" etc., for _dispatch_dump */
    void *kernel_data[PTL_KEY_COUNT];           /* set with the kernel at run time */
    PtlDispatchKeySet kernel_owned_origin;      /* keys whose kernel_origin was copied */
    uint64_t calls[PTL_KEY_COUNT];              /* how often each key's kernel ran */
};

typedef struct PtlKernelReg {
    int op;                /* PtlOpId */
    PtlDispatchKey key;
    PtlKernel fn;
} PtlKernelReg;

/* Declares `int ptl_register_NAME(void)` that registers the table NAME (native.def). */
#define PTL_DEFINE_REGISTER(NAME)                                                        \
    int ptl_register_##NAME(void)                                                        \
    {                                                                                    \
        return ptl_dispatcher_register(NAME, sizeof(NAME) / sizeof(NAME[0]), __FILE__); \
    }

/* Parses every schema of ops.def and registers every kernel table; 0 or -1. */
int ptl_dispatcher_init(void);
int ptl_dispatcher_register(const PtlKernelReg *regs, size_t n, const char *origin);
void ptl_dispatcher_register_fallback(PtlDispatchKey key, PtlKernel fn);
PtlKernel ptl_dispatcher_fallback(PtlDispatchKey key);
/* Adds an operator at run time (_C._register_op); returns it, or NULL on error. */
PtlOperator *ptl_dispatcher_add_op(const char *schema, uint32_t flags);
/* Removes an operator added at run time: clears its kernels (the caller releases their data
 * first) and its name, so lookups no longer find it; its slot is not reused.  0 or -1. */
int ptl_dispatcher_remove_op(PtlOperator *op);
/* Sets (fn != NULL) or removes (fn == NULL) op's kernel for key at run time: library.impl,
 * the C ABI.  data travels with the kernel (ptl_dispatcher_kernel_data); the caller owns it
 * and reads op->kernel_data[key] first when it must release the one it replaces.  origin
 * names the registrant in _dispatch_dump and is copied.  Returns 1 when a kernel was
 * replaced (PyTorch warns and overrides), 0 when none was there, -1 on error. */
int ptl_dispatcher_set_kernel(PtlOperator *op, PtlDispatchKey key, PtlKernel fn, void *data,
                              const char *origin);
/* The data registered with the kernel now running for the highest key of ks. */
static inline void *
ptl_dispatcher_kernel_data(const PtlOperator *op, PtlDispatchKeySet ks)
{
    return op->kernel_data[ptl_keyset_highest(ks)];
}

int ptl_dispatcher_num_ops(void);
PtlOperator *ptl_dispatcher_op_at(int i);
/* The operator for an id of ops.def. */
extern PtlOperator *ptl_ops;
static inline const PtlOperator *
ptl_op(PtlOpId id)
{
    return &ptl_ops[id];
}
/* "aten::add", "Tensor" (or "aten::add.Tensor", NULL); NULL when unknown (no error set). */
PtlOperator *ptl_dispatcher_find(const char *name, const char *overload);

/* The key set a call of op with these arguments dispatches on. */
PtlDispatchKeySet ptl_dispatcher_keys(const PtlOperator *op, const PtlIValue *stack);
int ptl_dispatcher_call(const PtlOperator *op, PtlIValue *stack);
int ptl_dispatcher_redispatch(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *stack);
/* Sets PyTorch's "Could not run 'op' with arguments from the '<backend of ks>' backend"
 * NotImplementedError; returns -1. */
int ptl_dispatcher_no_kernel_error(const PtlOperator *op, PtlDispatchKeySet ks);

/* Typed helper for internal calls: calls op on args (borrowed) and returns its first
 * output tensor (new ref; other outputs released), or NULL with the error set. */
PtlTensorImpl *ptl_call_tensor(PtlOpId id, PtlIValue *args);
/* t through aten::_to_copy (so autograd records the cast or move) to dtype
 * (PTL_DTYPE_UNDEFINED: t's) on *device (NULL: t's): a new reference, or NULL with the error
 * set. */
PtlTensorImpl *ptl_to_copy(PtlTensorImpl *t, PtlDtype dtype, const PtlDevice *device);

void ptl_dispatcher_reset_stats(void);

#endif
