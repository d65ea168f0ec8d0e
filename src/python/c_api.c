/* c_api.c -- the stable C ABI of pytorchlite/include/pytorchlite/ptl_api.h: tensors, boxed
 * calls, kernels, fallbacks and autograd for extensions, over the dispatcher and the
 * autograd engine.  Mirrors torch/library.h and torch/csrc/autograd/custom_function.h.  See
 * Note [C ABI] (in the header) and Note [C ABI kernels].
 *
 * Note [C ABI kernels]
 * ~~~~~~~~~~~~~~~~~~~~
 * An extension's kernel is attached with ptl_dispatcher_set_kernel like any other run-time
 * kernel: the dispatcher calls a trampoline here (api_kernel) with a KernelReg as the
 * kernel's data, and the trampoline presents the dispatcher's stack to the extension as a
 * PtlApiStack whose arguments are borrowed.  The values the kernel leaves are moved back to
 * stack[0..nrets) as new references (Note [Stack ownership]).  Fallbacks work the same way
 * through a table per key, since the dispatcher's fallbacks carry no data.  An Autograd
 * registration is a kernel at the Autograd key (api_autograd_kernel) that runs the keys
 * below it and records a node whose kind is embedded in the registration, so the node's
 * apply finds the extension's backward from n->kind.  Registrations live as long as the
 * process, like the operators they belong to.
 *
 * This file sits in src/python because it also converts tensors for generated Python
 * bindings, raises the pending load error, and makes _C's symbols global at import. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pytorchlite/ptl_api.h"

#include "../autograd/autograd.h"
#include "../c10/error.h"
#include "../c10/tls.h"
#include "ptlpy.h"

#define STACK_INLINE PTL_SCHEMA_MAX_ARGS

struct PtlApiStack {
    int64_t n, cap;
    PtlIValue *v;
    uint8_t *own;                        /* 1: the stack holds a reference / the buffer */
    const PtlOperator *op;               /* inside a kernel: the op and keys now running */
    PtlDispatchKeySet ks;
    PtlIValue v_inline[STACK_INLINE];
    uint8_t own_inline[STACK_INLINE];
};

struct PtlApiLibrary {
    const char *ns;
    const char *key;                     /* NULL for PTL_LIBRARY */
    char origin[256];                    /* "file:line" of the block */
    int failed;
};

typedef struct KernelReg {
    PtlApiKernel fn;
    void *data;
} KernelReg;

typedef struct AutogradReg {
    PtlNodeKind kind;                    /* first: apply casts n->kind back */
    PtlApiBackward backward;
    void *data;
    char name[128];
} AutogradReg;

struct PtlApiAutogradContext {
    PtlNode *node;
    int nin;
};

static KernelReg fallback_regs[PTL_KEY_COUNT];
static const PtlApiLibrary *current_library;   /* the block running now, for origins */
static char *load_error;                       /* Note [C ABI]: raised by the loader */
static int load_error_is_import;
static PtlErrorKind load_error_kind;

/* ---- conversions ---- */

#define IMPL(T) ((PtlTensorImpl *)(T))
#define API(T) ((PtlApiTensor *)(T))

/* ORDER DTYPE (src/c10/dtype.h) -> ORDER SCALAR_TYPE */
static const PtlApiDtype dtype_codes[PTL_DTYPE_COUNT] = {
    [PTL_DTYPE_BOOL] = PTL_API_BOOL,       [PTL_DTYPE_UINT8] = PTL_API_UINT8,
    [PTL_DTYPE_INT8] = PTL_API_INT8,       [PTL_DTYPE_INT16] = PTL_API_INT16,
    [PTL_DTYPE_INT32] = PTL_API_INT32,     [PTL_DTYPE_INT64] = PTL_API_INT64,
    [PTL_DTYPE_FLOAT16] = PTL_API_FLOAT16, [PTL_DTYPE_BFLOAT16] = PTL_API_BFLOAT16,
    [PTL_DTYPE_FLOAT32] = PTL_API_FLOAT32, [PTL_DTYPE_FLOAT64] = PTL_API_FLOAT64,
    [PTL_DTYPE_COMPLEX64] = PTL_API_COMPLEX64, [PTL_DTYPE_COMPLEX128] = PTL_API_COMPLEX128,
};

static PtlDtype
dtype_from_code(PtlApiDtype code)
{
    for (int d = 0; d < PTL_DTYPE_COUNT; d++) {
        if (dtype_codes[d] == code) {
            return (PtlDtype)d;
        }
    }
    ptl_error_set(PTL_ERR_VALUE, "unknown dtype code %d", (int)code);
    return PTL_DTYPE_UNDEFINED;
}

static int
device_from_code(PtlApiDeviceType type, int index, PtlDevice *out)
{
    if (type != PTL_API_CPU && type != PTL_API_CUDA) {
        return ptl_error_set(PTL_ERR_VALUE, "unknown device type %d", (int)type);
    }
    out->type = type == PTL_API_CUDA ? PTL_DEVICE_CUDA : PTL_DEVICE_CPU;
    out->index = (int8_t)(type == PTL_API_CUDA ? (index < 0 ? 0 : index) : -1);
    return 0;
}

static int
key_from_name(const char *name, PtlDispatchKey *out)
{
    for (int k = 0; k < PTL_KEY_COUNT; k++) {
        if (strcmp(ptl_dispatch_key_name((PtlDispatchKey)k), name) == 0) {
            *out = (PtlDispatchKey)k;
            return 0;
        }
    }
    return ptl_error_set(PTL_ERR_VALUE, "unknown dispatch key '%s'", name);
}

static PtlOperator *
find_op(const char *name)
{
    PtlOperator *op = ptl_dispatcher_find(name, NULL);
    if (op == NULL) {
        ptl_error_set(PTL_ERR_RUNTIME, "No such operator %s", name);
    }
    return op;
}

/* ---- version and errors ---- */

int
ptl_api_version(void)
{
    return PTL_API_VERSION_MAJOR * 1000 + PTL_API_VERSION_MINOR;
}

int
ptl_api_set_error(PtlApiErrorKind kind, const char *fmt, ...)
{
    /* ORDER ERR: the first five kinds are numbered as PtlErrorKind's */
    static const PtlErrorKind kinds[] = {PTL_ERR_RUNTIME, PTL_ERR_RUNTIME, PTL_ERR_INDEX,
                                         PTL_ERR_TYPE, PTL_ERR_VALUE, PTL_ERR_NOT_IMPLEMENTED};
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    int k = (int)kind;
    return ptl_error_set(k >= 0 && k < (int)(sizeof(kinds) / sizeof(kinds[0])) ? kinds[k]
                                                                                  : PTL_ERR_RUNTIME,
                         "%s", msg);
}

PtlApiErrorKind
ptl_api_error_kind(void)
{
    PtlErrorKind k = ptl_error_kind();
    return k == PTL_ERR_NONE ? PTL_API_ERROR_NONE
           : k <= PTL_ERR_NOT_IMPLEMENTED ? (PtlApiErrorKind)k
                                          : PTL_API_RUNTIME_ERROR;
}

const char *
ptl_api_error_message(void)
{
    return ptl_error_kind() == PTL_ERR_NONE ? "" : ptl_error_message();
}

void
ptl_api_clear_error(void)
{
    ptl_error_clear();
}

/* ---- tensors ---- */

PtlApiTensor *
ptl_api_empty(int64_t dim, const int64_t *sizes, PtlApiDtype dtype, PtlApiDeviceType device,
              int device_index)
{
    PtlDtype dt = dtype_from_code(dtype);
    PtlDevice dev;
    if (dt == PTL_DTYPE_UNDEFINED || device_from_code(device, device_index, &dev) < 0) {
        return NULL;
    }
    if (dim < 0 || dim > PTL_MAX_DIMS) {
        ptl_error_set(PTL_ERR_VALUE, "a tensor has 0 to %d dimensions, not %lld", PTL_MAX_DIMS,
                      (long long)dim);
        return NULL;
    }
    return API(ptl_empty((int)dim, sizes, dt, dev));
}

PtlApiTensor *
ptl_api_zeros(int64_t dim, const int64_t *sizes, PtlApiDtype dtype, PtlApiDeviceType device,
              int device_index)
{
    PtlApiTensor *t = ptl_api_empty(dim, sizes, dtype, device, device_index);
    if (t == NULL) {
        return NULL;
    }
    PtlIValue args[2] = {ptl_iv_tensor(IMPL(t)), ptl_iv_int(0)};
    PtlTensorImpl *r = ptl_call_tensor(PTL_OP_fill__Scalar, args);
    if (r == NULL) {
        ptl_api_release(t);
        return NULL;
    }
    ptl_decref(r);
    return t;
}

PtlApiTensor *
ptl_api_empty_like(const PtlApiTensor *t)
{
    const PtlTensorImpl *x = IMPL(t);
    return API(ptl_empty(x->dim, x->sizes, x->dtype, x->device));
}

/* Copies dim-dimensional strided elements at src into contiguous dst (itemsize bytes each). */
static void
copy_strided(char *dst, const char *src, int64_t dim, const int64_t *sizes,
             const int64_t *strides, size_t itemsize, int64_t numel)
{
    int64_t idx[PTL_MAX_DIMS] = {0};
    for (int64_t e = 0; e < numel; e++) {
        int64_t off = 0;
        for (int64_t d = 0; d < dim; d++) {
            off += idx[d] * strides[d];
        }
        memcpy(dst + (size_t)e * itemsize, src + off * (int64_t)itemsize, itemsize);
        for (int64_t d = dim - 1; d >= 0 && ++idx[d] == sizes[d]; d--) {
            idx[d] = 0;
        }
    }
}

PtlApiTensor *
ptl_api_from_data(const void *data, int64_t dim, const int64_t *sizes, const int64_t *strides,
                  PtlApiDtype dtype)
{
    PtlApiTensor *t = ptl_api_empty(dim, sizes, dtype, PTL_API_CPU, -1);
    if (t == NULL) {
        return NULL;
    }
    PtlTensorImpl *x = IMPL(t);
    size_t itemsize = ptl_dtype_itemsize(x->dtype);
    if (strides == NULL) {
        memcpy(ptl_tensor_data(x), data, (size_t)x->numel * itemsize);
    }
    else {
        copy_strided(ptl_tensor_data(x), data, dim, sizes, strides, itemsize, x->numel);
    }
    return t;
}

void
ptl_api_retain(PtlApiTensor *t)
{
    ptl_incref(IMPL(t));
}

void
ptl_api_release(PtlApiTensor *t)
{
    ptl_xdecref(IMPL(t));
}

int64_t
ptl_api_dim(const PtlApiTensor *t)
{
    return IMPL(t)->dim;
}

const int64_t *
ptl_api_sizes(const PtlApiTensor *t)
{
    return IMPL(t)->sizes;
}

const int64_t *
ptl_api_strides(const PtlApiTensor *t)
{
    return IMPL(t)->strides;
}

int64_t
ptl_api_numel(const PtlApiTensor *t)
{
    return IMPL(t)->numel;
}

PtlApiDtype
ptl_api_dtype(const PtlApiTensor *t)
{
    return dtype_codes[IMPL(t)->dtype];
}

size_t
ptl_api_element_size(const PtlApiTensor *t)
{
    return ptl_dtype_itemsize(IMPL(t)->dtype);
}

PtlApiDeviceType
ptl_api_device_type(const PtlApiTensor *t)
{
    return IMPL(t)->device.type == PTL_DEVICE_CUDA ? PTL_API_CUDA : PTL_API_CPU;
}

int
ptl_api_device_index(const PtlApiTensor *t)
{
    return IMPL(t)->device.type == PTL_DEVICE_CUDA ? IMPL(t)->device.index : -1;
}

void *
ptl_api_data_ptr(const PtlApiTensor *t)
{
    return ptl_tensor_data(IMPL(t));
}

int
ptl_api_is_contiguous(const PtlApiTensor *t)
{
    return ptl_tensor_is_contiguous(IMPL(t));
}

int
ptl_api_requires_grad(const PtlApiTensor *t)
{
    return ptl_requires_grad(IMPL(t));
}

/* ---- stacks ---- */

static void
stack_init(PtlApiStack *s)
{
    s->n = 0;
    s->cap = STACK_INLINE;
    s->v = s->v_inline;
    s->own = s->own_inline;
    s->op = NULL;
    s->ks = 0;
}

PtlApiStack *
ptl_api_stack_new(void)
{
    PtlApiStack *s = malloc(sizeof(PtlApiStack));
    if (s == NULL) {
        ptl_error_set(PTL_ERR_MEMORY, "out of memory allocating a stack");
        return NULL;
    }
    stack_init(s);
    return s;
}

/* Releases what slot i owns. */
static void
slot_release(PtlApiStack *s, int64_t i)
{
    PtlIValue *v = &s->v[i];
    if (s->own[i]) {
        if (v->tag == PTL_IV_INTLIST) {
            free((void *)v->u.il.data);
        }
        else {
            ptl_ivalue_release(v);
        }
    }
    v->tag = PTL_IV_NONE;
    s->own[i] = 0;
}

void
ptl_api_stack_clear(PtlApiStack *s)
{
    for (int64_t i = 0; i < s->n; i++) {
        slot_release(s, i);
    }
    s->n = 0;
}

static void
stack_release_buffers(PtlApiStack *s)
{
    if (s->v != s->v_inline) {
        free(s->v);
        free(s->own);
    }
}

void
ptl_api_stack_free(PtlApiStack *s)
{
    if (s == NULL) {
        return;
    }
    ptl_api_stack_clear(s);
    stack_release_buffers(s);
    free(s);
}

int64_t
ptl_api_stack_size(const PtlApiStack *s)
{
    return s->n;
}

/* Appends v (owned when own); 0 or -1 (the value is not taken: the caller releases it). */
static int
stack_push(PtlApiStack *s, PtlIValue v, int own)
{
    if (s->n == s->cap) {
        int64_t cap = 2 * s->cap;
        PtlIValue *nv = malloc(sizeof(PtlIValue) * (size_t)cap);
        uint8_t *no = malloc((size_t)cap);
        if (nv == NULL || no == NULL) {
            free(nv);
            free(no);
            return ptl_error_set(PTL_ERR_MEMORY, "out of memory growing a stack");
        }
        memcpy(nv, s->v, sizeof(PtlIValue) * (size_t)s->n);
        memcpy(no, s->own, (size_t)s->n);
        stack_release_buffers(s);
        s->v = nv;
        s->own = no;
        s->cap = cap;
    }
    s->v[s->n] = v;
    s->own[s->n] = (uint8_t)own;
    s->n++;
    return 0;
}

int
ptl_api_push_tensor(PtlApiStack *s, PtlApiTensor *t)
{
    if (t == NULL) {
        return ptl_api_push_none(s);
    }
    if (stack_push(s, ptl_iv_tensor(IMPL(t)), 1) < 0) {
        return -1;
    }
    ptl_incref(IMPL(t));
    return 0;
}

int
ptl_api_push_int(PtlApiStack *s, int64_t v)
{
    return stack_push(s, ptl_iv_int(v), 0);
}

int
ptl_api_push_double(PtlApiStack *s, double v)
{
    return stack_push(s, ptl_iv_double(v), 0);
}

int
ptl_api_push_complex(PtlApiStack *s, double re, double im)
{
    return stack_push(s, ptl_iv_complex(re, im), 0);
}

int
ptl_api_push_bool(PtlApiStack *s, int v)
{
    return stack_push(s, ptl_iv_bool(v != 0), 0);
}

int
ptl_api_push_none(PtlApiStack *s)
{
    return stack_push(s, ptl_iv_none(), 0);
}

int
ptl_api_push_int_list(PtlApiStack *s, const int64_t *v, int64_t n)
{
    int64_t *copy = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
    if (copy == NULL) {
        return ptl_error_set(PTL_ERR_MEMORY, "out of memory copying an int list");
    }
    if (n > 0) {
        memcpy(copy, v, sizeof(int64_t) * (size_t)n);
    }
    if (stack_push(s, ptl_iv_intlist(copy, n), 1) < 0) {
        free(copy);
        return -1;
    }
    return 0;
}

/* Slot i, or NULL with an IndexError. */
static const PtlIValue *
stack_at(const PtlApiStack *s, int64_t i)
{
    if (i < 0 || i >= s->n) {
        ptl_error_set(PTL_ERR_INDEX, "stack index %lld out of range for a stack of %lld values",
                      (long long)i, (long long)s->n);
        return NULL;
    }
    return &s->v[i];
}

static int
wrong_type(int64_t i, const char *want)
{
    return ptl_error_set(PTL_ERR_TYPE, "stack value %lld is not %s", (long long)i, want);
}

PtlApiTensor *
ptl_api_stack_tensor(const PtlApiStack *s, int64_t i)
{
    const PtlIValue *v = stack_at(s, i);
    if (v == NULL || v->tag == PTL_IV_NONE) {
        return NULL;
    }
    if (v->tag != PTL_IV_TENSOR) {
        wrong_type(i, "a Tensor");
        return NULL;
    }
    return API(v->u.t);
}

int64_t
ptl_api_stack_int(const PtlApiStack *s, int64_t i)
{
    const PtlIValue *v = stack_at(s, i);
    if (v == NULL) {
        return -1;
    }
    if (v->tag != PTL_IV_INT && v->tag != PTL_IV_BOOL && v->tag != PTL_IV_DOUBLE) {
        return wrong_type(i, "a number");
    }
    return ptl_iv_to_int(v);
}

double
ptl_api_stack_double(const PtlApiStack *s, int64_t i)
{
    const PtlIValue *v = stack_at(s, i);
    if (v == NULL) {
        return -1;
    }
    if (v->tag == PTL_IV_COMPLEX) {
        return ptl_error_set(PTL_ERR_TYPE, "stack value %lld is a complex number: read it with "
                             "ptl_api_stack_complex", (long long)i);
    }
    if (v->tag != PTL_IV_INT && v->tag != PTL_IV_BOOL && v->tag != PTL_IV_DOUBLE) {
        return wrong_type(i, "a number");
    }
    return ptl_iv_to_double(v);
}

int
ptl_api_stack_complex(const PtlApiStack *s, int64_t i, double *re, double *im)
{
    const PtlIValue *v = stack_at(s, i);
    if (v == NULL) {
        return -1;
    }
    if (v->tag != PTL_IV_INT && v->tag != PTL_IV_BOOL && v->tag != PTL_IV_DOUBLE &&
        v->tag != PTL_IV_COMPLEX) {
        return wrong_type(i, "a number");
    }
    *re = ptl_iv_to_double(v);
    *im = ptl_iv_imag(v);
    return 0;
}

int
ptl_api_stack_is_complex(const PtlApiStack *s, int64_t i)
{
    const PtlIValue *v = stack_at(s, i);
    return v == NULL ? -1 : v->tag == PTL_IV_COMPLEX;
}

int
ptl_api_stack_bool(const PtlApiStack *s, int64_t i)
{
    const PtlIValue *v = stack_at(s, i);
    if (v == NULL) {
        return -1;
    }
    if (v->tag != PTL_IV_BOOL && v->tag != PTL_IV_INT) {
        return wrong_type(i, "a bool");
    }
    return ptl_iv_to_int(v) != 0;
}

int
ptl_api_stack_is_none(const PtlApiStack *s, int64_t i)
{
    const PtlIValue *v = stack_at(s, i);
    return v == NULL ? -1 : v->tag == PTL_IV_NONE;
}

const int64_t *
ptl_api_stack_int_list(const PtlApiStack *s, int64_t i, int64_t *n)
{
    const PtlIValue *v = stack_at(s, i);
    if (v == NULL) {
        return NULL;
    }
    if (v->tag != PTL_IV_INTLIST) {
        wrong_type(i, "an int list");
        return NULL;
    }
    *n = v->u.il.n;
    return v->u.il.data;
}

/* Releases the top slot of a non-empty stack (the pops read it first; reading an empty one
 * has already set the error). */
static void
drop_top(PtlApiStack *s)
{
    if (s->n > 0) {
        slot_release(s, --s->n);
    }
}

PtlApiTensor *
ptl_api_pop_tensor(PtlApiStack *s)
{
    if (s->n == 0) {
        ptl_error_set(PTL_ERR_INDEX, "pop from an empty stack");
        return NULL;
    }
    PtlApiTensor *t = ptl_api_stack_tensor(s, s->n - 1);
    if (t != NULL) {
        ptl_incref(IMPL(t));
    }
    slot_release(s, --s->n);
    return t;
}

int64_t
ptl_api_pop_int(PtlApiStack *s)
{
    int64_t v = ptl_api_stack_int(s, s->n - 1);
    drop_top(s);
    return v;
}

double
ptl_api_pop_double(PtlApiStack *s)
{
    double v = ptl_api_stack_double(s, s->n - 1);
    drop_top(s);
    return v;
}

int
ptl_api_pop_complex(PtlApiStack *s, double *re, double *im)
{
    int rc = ptl_api_stack_complex(s, s->n - 1, re, im);
    drop_top(s);
    return rc;
}

int
ptl_api_pop_bool(PtlApiStack *s)
{
    int v = ptl_api_stack_bool(s, s->n - 1);
    drop_top(s);
    return v;
}

/* ---- calls ---- */

/* ORDER IV (ivalue.h), up to the last kind the C API pushes */
static const char *const tag_names[] = {"None", "Tensor", "int", "float", "bool", "str",
                                        "List[int]"};

static const char *
tag_name(int tag)
{
    if (tag == PTL_IV_COMPLEX) {
        return "complex";
    }
    return tag >= 0 && tag < (int)(sizeof(tag_names) / sizeof(tag_names[0])) ? tag_names[tag]
                                                                              : "a value";
}

/* Checks pushed value v against argument a of op, converting an int given for a float and
 * an int given for a bool.  0, or -1 with PyTorch's boxed-call error. */
static int
check_arg(const PtlOperator *op, const PtlArg *a, PtlIValue *v)
{
    static const char *kind_names[PTL_ARG_KIND_COUNT] = {
        /* ORDER ARG_KIND */
        "Tensor", "int", "float", "bool", "str", "number", "ScalarType", "Device", "Layout",
        "MemoryFormat", "Generator", "List[Tensor]", "List[int]", "List[float]",
    };
    int ok;
    if (v->tag == PTL_IV_NONE) {
        ok = a->optional || (a->has_default && a->def.tag == PTL_IV_NONE);
    }
    else {
        switch (a->kind) {
        case PTL_ARG_TENSOR:
            ok = v->tag == PTL_IV_TENSOR;
            break;
        case PTL_ARG_INT:
            ok = v->tag == PTL_IV_INT || v->tag == PTL_IV_BOOL;
            break;
        case PTL_ARG_SCALAR:
            ok = v->tag == PTL_IV_INT || v->tag == PTL_IV_DOUBLE || v->tag == PTL_IV_BOOL ||
                 v->tag == PTL_IV_COMPLEX;
            break;
        case PTL_ARG_FLOAT:
            ok = v->tag == PTL_IV_DOUBLE || v->tag == PTL_IV_INT;
            if (v->tag == PTL_IV_INT) {
                *v = ptl_iv_double((double)v->u.i);
            }
            break;
        case PTL_ARG_BOOL:
            ok = v->tag == PTL_IV_BOOL || v->tag == PTL_IV_INT;
            if (v->tag == PTL_IV_INT) {
                *v = ptl_iv_bool(v->u.i != 0);
            }
            break;
        case PTL_ARG_INTLIST:
            ok = v->tag == PTL_IV_INTLIST;
            break;
        default:
            ok = 0;   /* a kind the C API cannot push: leave it to its default */
            break;
        }
    }
    if (!ok) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s%s%s() Expected a value of type '%s%s%s' for "
                             "argument '%s' but instead found type '%s'.", op->schema.name,
                             op->schema.overload[0] ? "." : "", op->schema.overload,
                             a->optional ? "Optional[" : "", kind_names[a->kind],
                             a->optional ? "]" : "", a->name, tag_name(v->tag));
    }
    return 0;
}

/* Runs op on the values of s (completed with the schema's defaults) with keys ks (0: the
 * keys of the arguments) and replaces them with the returns; clears s on failure. */
static int
stack_call(const PtlOperator *op, PtlDispatchKeySet ks, PtlApiStack *s)
{
    const PtlSchema *sc = &op->schema;
    PtlIValue args[PTL_SCHEMA_MAX_ARGS];
    int rc = -1;
    if (s->n > sc->nargs) {
        ptl_error_set(PTL_ERR_TYPE, "%s%s%s() takes %d arguments but %lld were given",
                      sc->name, sc->overload[0] ? "." : "", sc->overload, sc->nargs,
                      (long long)s->n);
        goto done;
    }
    for (int i = 0; i < sc->nargs; i++) {
        if (i < s->n) {
            args[i] = s->v[i];
            if (check_arg(op, &sc->args[i], &args[i]) < 0) {
                goto done;
            }
        }
        else if (sc->args[i].has_default) {
            args[i] = sc->args[i].def;
        }
        else {
            ptl_error_set(PTL_ERR_TYPE, "%s%s%s() missing required argument '%s' (pos %d)",
                          sc->name, sc->overload[0] ? "." : "", sc->overload, sc->args[i].name,
                          i + 1);
            goto done;
        }
    }
    rc = ks ? ptl_dispatcher_redispatch(op, ks, args) : ptl_dispatcher_call(op, args);
done:
    ptl_api_stack_clear(s);
    if (rc < 0) {
        return -1;
    }
    for (int k = 0; k < sc->nrets; k++) {
        s->v[k] = args[k];
        s->own[k] = 1;
    }
    s->n = sc->nrets;
    return 0;
}

int
ptl_api_call(const char *schema_name, PtlApiStack *stack)
{
    const PtlOperator *op = find_op(schema_name);
    if (op == NULL) {
        ptl_api_stack_clear(stack);
        return -1;
    }
    return stack_call(op, 0, stack);
}

int
ptl_api_redispatch(const PtlApiOperator *op, PtlApiStack *stack)
{
    const PtlOperator *o = (const PtlOperator *)op;
    if (stack->op != o || stack->ks == 0) {
        ptl_api_stack_clear(stack);
        return ptl_error_set(PTL_ERR_RUNTIME, "ptl_api_redispatch needs the stack of the "
                                              "kernel now running for %s", o->schema.name);
    }
    PtlDispatchKeySet below = stack->ks & ptl_keyset_below(ptl_keyset_highest(stack->ks));
    return stack_call(o, below, stack);
}

const char *
ptl_api_operator_name(const PtlApiOperator *op)
{
    return ((const PtlOperator *)op)->schema.name;
}

/* ---- kernels (Note [C ABI kernels]) ---- */

/* Runs reg on the dispatcher's stack: arguments borrowed, returns moved back as new refs. */
static int
run_kernel(const KernelReg *reg, const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *stack)
{
    const PtlSchema *sc = &op->schema;
    PtlApiStack view;
    stack_init(&view);
    view.op = op;
    view.ks = ks;
    memcpy(view.v, stack, sizeof(PtlIValue) * (size_t)sc->nargs);
    memset(view.own, 0, (size_t)sc->nargs);
    view.n = sc->nargs;
    if (reg->fn((const PtlApiOperator *)op, &view, reg->data) < 0) {
        if (ptl_error_kind() == PTL_ERR_NONE) {
            ptl_error_set(PTL_ERR_RUNTIME, "the kernel of %s failed without setting an error",
                          sc->name);
        }
        goto error;
    }
    if (view.n != sc->nrets) {
        ptl_error_set(PTL_ERR_RUNTIME, "the kernel of %s left %lld values on the stack; its "
                      "schema returns %d", sc->name, (long long)view.n, sc->nrets);
        goto error;
    }
    for (int k = 0; k < sc->nrets; k++) {
        if (!view.own[k] && view.v[k].tag == PTL_IV_TENSOR) {
            ptl_incref(view.v[k].u.t);   /* an argument returned as it came */
        }
        stack[k] = view.v[k];
        view.own[k] = 0;
        view.v[k].tag = PTL_IV_NONE;
    }
    stack_release_buffers(&view);
    return 0;
error:
    ptl_api_stack_clear(&view);
    stack_release_buffers(&view);
    return -1;
}

static int
api_kernel(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *stack)
{
    return run_kernel(ptl_dispatcher_kernel_data(op, ks), op, ks, stack);
}

static int
api_fallback(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *stack)
{
    return run_kernel(&fallback_regs[ptl_keyset_highest(ks)], op, ks, stack);
}

static const char *
registrant(void)
{
    return current_library ? current_library->origin : "a C extension";
}

/* Attaches fn with data (owned: freed here on failure) to op at key; warns on a
 * replacement as PyTorch does.  A replaced KernelReg is freed; a replaced AutogradReg is
 * kept, since the nodes it recorded point at its kind. */
static int
set_kernel(PtlOperator *op, PtlDispatchKey key, PtlKernel fn, void *data)
{
    char prev[256];
    snprintf(prev, sizeof(prev), "%s", op->kernel_origin[key] ? op->kernel_origin[key] : "");
    void *old = op->kernels[key] == api_kernel ? op->kernel_data[key] : NULL;
    int replaced = ptl_dispatcher_set_kernel(op, key, fn, data, registrant());
    if (replaced < 0) {
        free(data);
        return -1;
    }
    free(old);
    if (replaced) {
        char sch[512];
        ptl_schema_format(&op->schema, sch, sizeof(sch));
        ptl_warn("Overriding a previously registered kernel for the same operator and the same "
                 "dispatch key\n  operator: %s\n  dispatch key: %s\n  previous kernel: "
                 "registered at %s\n       new kernel: registered at %s",
                 sch, ptl_dispatch_key_name(key), prev, registrant());
    }
    return 0;
}

int
ptl_api_define(const char *schema)
{
    return ptl_dispatcher_add_op(schema, PTL_OPF_FUNCTION) == NULL ? -1 : 0;
}

int
ptl_api_register_kernel(const char *op_name, const char *key, PtlApiKernel fn, void *data)
{
    PtlOperator *op = find_op(op_name);
    PtlDispatchKey k = PTL_KEY_CPU;
    if (op == NULL || key_from_name(key, &k) < 0) {
        return -1;
    }
    KernelReg *reg = malloc(sizeof(KernelReg));
    if (reg == NULL) {
        return ptl_error_set(PTL_ERR_MEMORY, "out of memory registering a kernel");
    }
    reg->fn = fn;
    reg->data = data;
    return set_kernel(op, k, api_kernel, reg);
}

int
ptl_api_register_fallback(const char *key, PtlApiKernel fn, void *data)
{
    PtlDispatchKey k = PTL_KEY_CPU;
    if (key_from_name(key, &k) < 0) {
        return -1;
    }
    if (ptl_dispatcher_fallback(k) != NULL) {
        return ptl_error_set(PTL_ERR_RUNTIME, "Tried to register multiple backend fallbacks "
                             "for the same dispatch key %s", key);
    }
    fallback_regs[k].fn = fn;
    fallback_regs[k].data = data;
    ptl_dispatcher_register_fallback(k, api_fallback);
    return 0;
}

/* ---- autograd (Note [C ABI kernels]) ---- */

static int
autograd_apply(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out)
{
    const AutogradReg *reg = (const AutogradReg *)n->kind;
    PtlApiAutogradContext ctx = {n, n->num_next};
    PtlTensorImpl *grads[PTL_NODE_MAX_SAVED] = {NULL};
    int rc = -1;
    /* outputs nothing flowed into get zeros, as PyTorch's materialize_grads */
    for (int k = 0; k < n->num_outputs; k++) {
        if (grads_in[k] != NULL) {
            grads[k] = grads_in[k];
            ptl_incref(grads[k]);
            continue;
        }
        PtlApiTensor *out = ptl_api_ctx_saved_output(&ctx, k);
        grads[k] = out ? IMPL(ptl_api_empty_like(out)) : NULL;
        ptl_api_release(out);
        PtlIValue args[2] = {ptl_iv_tensor(grads[k]), ptl_iv_int(0)};
        PtlTensorImpl *z = grads[k] ? ptl_call_tensor(PTL_OP_fill__Scalar, args) : NULL;
        if (z == NULL) {
            goto done;
        }
        ptl_decref(z);
    }
    if (reg->backward(&ctx, (PtlApiTensor *const *)grads, (PtlApiTensor **)grads_out,
                      reg->data) < 0) {
        if (ptl_error_kind() == PTL_ERR_NONE) {
            ptl_error_set(PTL_ERR_RUNTIME, "the backward of %s failed without setting an error",
                          n->op->schema.name);
        }
        for (int i = 0; i < n->num_next; i++) {
            PTL_CLEAR(grads_out[i]);
        }
        goto done;
    }
    for (int i = 0; i < n->num_next; i++) {
        if (n->next[i].fn == NULL) {
            PTL_CLEAR(grads_out[i]);
        }
    }
    rc = 0;
done:
    for (int k = 0; k < n->num_outputs; k++) {
        ptl_xdecref(grads[k]);
    }
    return rc;
}

/* The node of a recorded call: edges to the inputs, their metadata, every input and output
 * saved.  outs: the call's returns.  New ref or NULL. */
static PtlNode *
record_node(const AutogradReg *reg, const PtlOperator *op, PtlTensorImpl **in, int nin,
            PtlEdge *edges, PtlIValue *outs)
{
    int nouts = op->schema.nrets;
    PtlNode *node = ptl_node_new(&reg->kind, nouts, nin);
    if (node == NULL) {
        return NULL;
    }
    node->op = op;
    for (int i = 0; i < nin; i++) {
        node->next[i] = edges[i];
        edges[i].fn = NULL;
        if (node->next[i].fn != NULL) {
            node->needs |= 1u << (i < 31 ? i : 31);
        }
        PtlInputMeta *m = &node->input_meta[i];
        m->dtype = in[i]->dtype;
        m->device = in[i]->device;
        m->dim = in[i]->dim;
        memcpy(m->sizes, in[i]->sizes, sizeof(int64_t) * (size_t)in[i]->dim);
        ptl_saved_set(node, i, in[i], 0, 0);
    }
    for (int k = 0; k < nouts; k++) {
        ptl_saved_set(node, nin + k, outs[k].u.t, 1, k);
    }
    return node;
}

static int
api_autograd_kernel(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    const AutogradReg *reg = ptl_dispatcher_kernel_data(op, ks);
    const PtlSchema *sc = &op->schema;
    PtlDispatchKeySet below = ks & ptl_keyset_below(PTL_KEY_AUTOGRAD);
    PtlTensorImpl *in[PTL_SCHEMA_MAX_ARGS];
    PtlEdge edges[PTL_SCHEMA_MAX_ARGS];
    int nin = 0, any = 0, rc = -1;
    for (int i = 0; i < sc->nargs; i++) {
        if (s[i].tag == PTL_IV_TENSOR) {
            any |= ptl_requires_grad(s[i].u.t);
            in[nin++] = s[i].u.t;
        }
    }
    if (!any || !ptl_grad_mode_enabled()) {
        return ptl_dispatcher_redispatch(op, below, s);
    }
    for (int i = 0; i < nin; i++) {
        edges[i].fn = NULL;
        edges[i].input_nr = 0;
        if (ptl_requires_grad(in[i])) {
            edges[i] = ptl_gradient_edge(in[i]);
        }
        ptl_incref(in[i]);   /* s[i] is overwritten by the returns */
    }
    if (ptl_dispatcher_redispatch(op, below, s) < 0) {
        goto done;
    }
    for (int k = 0; k < sc->nrets; k++) {
        if (s[k].tag != PTL_IV_TENSOR) {
            ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "%s: ptl_api_register_autograd supports "
                          "operators that return tensors only", sc->name);
            goto release_outputs;
        }
    }
    PtlNode *node = record_node(reg, op, in, nin, edges, s);
    if (node == NULL) {
        goto release_outputs;
    }
    for (int k = 0; k < sc->nrets; k++) {
        if (ptl_dtype_is_differentiable(s[k].u.t->dtype)) {
            ptl_set_grad_fn(s[k].u.t, node, k);
        }
    }
    ptl_node_decref(node);
    rc = 0;
    goto done;
release_outputs:
    for (int k = 0; k < sc->nrets; k++) {
        ptl_ivalue_release(&s[k]);
    }
done:
    for (int i = 0; i < nin; i++) {
        if (edges[i].fn != NULL) {
            ptl_node_decref(edges[i].fn);
        }
        ptl_decref(in[i]);
    }
    return rc;
}

/* "myops::sigmoid_add" -> "SigmoidAddBackward0", PyTorch's node naming. */
static void
node_name(const char *op_name, char *buf, size_t n)
{
    const char *base = strstr(op_name, "::");
    base = base ? base + 2 : op_name;
    size_t j = 0;
    int upper = 1;
    for (; *base && *base != '.' && j + 11 < n; base++) {
        if (*base == '_') {
            upper = 1;
            continue;
        }
        buf[j++] = upper && *base >= 'a' && *base <= 'z' ? (char)(*base - 'a' + 'A') : *base;
        upper = 0;
    }
    snprintf(buf + j, n - j, "Backward0");
}

int
ptl_api_register_autograd(const char *op_name, PtlApiBackward backward, void *data)
{
    PtlOperator *op = find_op(op_name);
    if (op == NULL) {
        return -1;
    }
    if (op->schema.nargs + op->schema.nrets > PTL_NODE_MAX_SAVED) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "%s: ptl_api_register_autograd saves at "
                             "most %d arguments and returns", op_name, PTL_NODE_MAX_SAVED);
    }
    AutogradReg *reg = calloc(1, sizeof(AutogradReg));
    if (reg == NULL) {
        return ptl_error_set(PTL_ERR_MEMORY, "out of memory registering a backward");
    }
    node_name(op->schema.name, reg->name, sizeof(reg->name));
    reg->kind.name = reg->name;
    reg->kind.apply = autograd_apply;
    reg->backward = backward;
    reg->data = data;
    return set_kernel(op, PTL_KEY_AUTOGRAD, api_autograd_kernel, reg);
}

static PtlApiTensor *
ctx_saved(PtlApiAutogradContext *ctx, int64_t slot)
{
    int err = 0;
    PtlTensorImpl *t = ptl_saved_unpack(ctx->node, (int)slot, &err);
    return err ? NULL : API(t);
}

PtlApiTensor *
ptl_api_ctx_saved_input(PtlApiAutogradContext *ctx, int64_t i)
{
    if (i < 0 || i >= ctx->nin) {
        ptl_error_set(PTL_ERR_INDEX, "saved input %lld out of range (%d inputs)", (long long)i,
                      ctx->nin);
        return NULL;
    }
    return ctx_saved(ctx, i);
}

PtlApiTensor *
ptl_api_ctx_saved_output(PtlApiAutogradContext *ctx, int64_t k)
{
    if (k < 0 || k >= ctx->node->num_outputs) {
        ptl_error_set(PTL_ERR_INDEX, "saved output %lld out of range (%d outputs)",
                      (long long)k, ctx->node->num_outputs);
        return NULL;
    }
    return ctx_saved(ctx, ctx->nin + k);
}

int
ptl_api_ctx_needs_input_grad(const PtlApiAutogradContext *ctx, int64_t i)
{
    return i >= 0 && i < ctx->nin && ctx->node->next[i].fn != NULL;
}

/* ---- library blocks ---- */

/* Keeps msg as the pending load error (the first one wins) and clears the slot. */
static void
keep_load_error(const char *msg, int is_import, PtlErrorKind kind)
{
    ptl_error_clear();
    if (load_error != NULL || (load_error = malloc(strlen(msg) + 1)) == NULL) {
        return;
    }
    strcpy(load_error, msg);
    load_error_kind = kind;
    load_error_is_import = is_import;
}

/* "ns::name" into buf; 0 or -1. */
static int
qualify(const PtlApiLibrary *m, const char *name, char *buf, size_t n)
{
    if ((size_t)snprintf(buf, n, "%s::%s", m->ns, name) >= n) {
        return ptl_error_set(PTL_ERR_VALUE, "operator name too long: %s::%s", m->ns, name);
    }
    return 0;
}

static int
library_failed(PtlApiLibrary *m)
{
    m->failed = 1;
    return -1;
}

int
ptl_api_def(PtlApiLibrary *m, const char *schema)
{
    char buf[2048];
    if (qualify(m, schema, buf, sizeof(buf)) < 0 || ptl_api_define(buf) < 0) {
        return library_failed(m);
    }
    return 0;
}

int
ptl_api_impl(PtlApiLibrary *m, const char *name, PtlApiKernel fn, void *data)
{
    char buf[256];
    if (m->key == NULL) {
        ptl_error_set(PTL_ERR_RUNTIME, "ptl_api_impl(m, \"%s\", ...) in PTL_LIBRARY(%s, m) "
                      "names no dispatch key: register it in PTL_LIBRARY_IMPL(%s, CPU, m)",
                      name, m->ns, m->ns);
        return library_failed(m);
    }
    if (qualify(m, name, buf, sizeof(buf)) < 0 ||
        ptl_api_register_kernel(buf, m->key, fn, data) < 0) {
        return library_failed(m);
    }
    return 0;
}

int
ptl_api_impl_autograd(PtlApiLibrary *m, const char *name, PtlApiBackward backward, void *data)
{
    char buf[256];
    if (qualify(m, name, buf, sizeof(buf)) < 0 ||
        ptl_api_register_autograd(buf, backward, data) < 0) {
        return library_failed(m);
    }
    return 0;
}

void
ptl_api_library_run(int version_major, int version_minor, const char *ns, const char *key,
                    PtlApiLibraryInit init, const char *file, int line)
{
    char msg[1024];
    if (version_major != PTL_API_VERSION_MAJOR) {
        snprintf(msg, sizeof(msg), "%s:%d: this extension was built against the pytorchlite C "
                 "API version %d.%d, but the pytorchlite it runs in has version %d.%d; rebuild "
                 "the extension against this pytorchlite", file, line, version_major,
                 version_minor, PTL_API_VERSION_MAJOR, PTL_API_VERSION_MINOR);
        keep_load_error(msg, 1, PTL_ERR_RUNTIME);
        return;
    }
    PtlApiLibrary m = {.ns = ns, .key = key, .failed = 0};
    snprintf(m.origin, sizeof(m.origin), "%s:%d", file, line);
    current_library = &m;
    init(&m);
    current_library = NULL;
    if (ptl_error_kind() != PTL_ERR_NONE) {
        snprintf(msg, sizeof(msg), "%s: %s", m.origin, ptl_error_message());
        keep_load_error(msg, 0, ptl_error_kind());
    }
    else if (m.failed) {
        snprintf(msg, sizeof(msg), "%s: a registration failed", m.origin);
        keep_load_error(msg, 0, PTL_ERR_RUNTIME);
    }
}

char *
ptl_api_take_load_error(void)
{
    char *e = load_error;
    load_error = NULL;
    return e;
}

/* ---- Python bindings of extensions ---- */

void *
ptl_api_python_from_tensor(PtlApiTensor *t)
{
    if (t == NULL) {
        return ptl_api_python_raise();
    }
    return ptlpy_wrap(IMPL(t));
}

PtlApiTensor *
ptl_api_python_to_tensor(void *obj, int pos, const char *fn)
{
    PyObject *o = obj;
    if (!PtlPyTensor_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s(): argument %d must be Tensor, not %s", fn, pos + 1,
                     Py_TYPE(o)->tp_name);
        return NULL;
    }
    return API(PTLPY_IMPL(o));
}

void *
ptl_api_python_raise(void)
{
    if (ptl_error_kind() == PTL_ERR_NONE && !PyErr_Occurred()) {
        PyErr_SetString(PyExc_RuntimeError, "a C extension function failed without setting "
                                            "an error");
        return NULL;
    }
    return PyErr_Occurred() ? NULL : ptlpy_raise();
}

int
ptl_api_python_warn(void)
{
    return ptlpy_flush_warnings();
}

int
ptl_api_python_check_load(void)
{
    PtlErrorKind kind = load_error_kind;
    int is_import = load_error_is_import;
    char *e = ptl_api_take_load_error();
    if (e == NULL) {
        return ptlpy_flush_warnings();
    }
    if (is_import) {
        PyErr_SetString(PyExc_ImportError, e);
    }
    else {
        ptl_error_set(kind, "%s", e);
        ptlpy_raise();
    }
    free(e);
    return -1;
}

/* _C._extension_check_load(): raises the pending load error of the extension just loaded */
static PyObject *
py_extension_check_load(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    if (ptl_api_python_check_load() < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef c_api_methods[] = {
    {"_extension_check_load", py_extension_check_load, METH_NOARGS,
     "raises the registration error of the C extension loaded last, if any"},
    {NULL},
};

/* Note [C ABI]: Python loads _C with RTLD_LOCAL; opening it again with RTLD_NOLOAD |
 * RTLD_GLOBAL promotes the loaded copy to the global scope, so extensions bind to its
 * exported ptl_api_* functions however they are loaded (cpp_extension.load, a setup.py
 * build imported as a module, ops.load_library).  The alternative, a table of function
 * pointers in a capsule, would make every extension call an import function before its
 * PTL_LIBRARY constructors could run, which a constructor cannot do. */
int
ptlpy_c_api_init(PyObject *module)
{
    Dl_info info;
    if (dladdr((void *)ptl_api_version, &info) == 0 || info.dli_fname == NULL ||
        dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL) == NULL) {
        PyErr_Format(PyExc_ImportError, "pytorchlite._C could not export its C API: %s",
                     dlerror());
        return -1;
    }
    return PyModule_AddFunctions(module, c_api_methods);
}
