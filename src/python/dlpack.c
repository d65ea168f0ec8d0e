/* dlpack.c -- zero-copy exchange of tensors through DLPack capsules.  Mirrors
 * aten/src/ATen/DLConvertor.cpp and the capsule half of torch/csrc/Module.cpp
 * (_to_dlpack, _from_dlpack).  See Note [DLPack ownership].
 *
 * Note [DLPack ownership]
 * ~~~~~~~~~~~~~~~~~~~~~~~
 * A DLPack capsule named "dltensor" wraps a DLManagedTensor (DLPack 0.8) whose deleter
 * releases the producer's memory; one named "dltensor_versioned" wraps the DLPack 1.x
 * DLManagedTensorVersioned, which adds a version and flags (NumPy marks arrays built from
 * 0.8 capsules read-only, and writable from 1.x ones).  The rules are the same for both
 * ("used_" is prepended on consumption).  Exactly one party calls the deleter:
 * - Export: the DLManagedTensor owns one reference to our TensorImpl (so the data outlives
 *   the Python tensor).  While the capsule is unconsumed, its destructor calls the deleter;
 *   a consumer renames the capsule "used_dltensor" and calls the deleter itself later.  The
 *   deleter only drops C references, so any thread may run it without the GIL.
 * - Import: we rename the capsule "used_dltensor" as soon as a Storage owns the managed
 *   tensor; the Storage's foreign deleter calls the producer's deleter when the last tensor
 *   on that memory dies.  Before that point every error leaves the capsule untouched, so
 *   its own destructor frees it.
 * A capsule can therefore be consumed once; the second from_dlpack raises.  The read-only
 * flag of an imported 1.x tensor is ignored: tensors have no read-only mode (PyTorch too). */
#include "ptlpy.h"

#include <string.h>

/* ---- the DLPack v0.8 ABI (dlpack.h, Apache-2.0 spec; written from the specification) ---- */

typedef enum {
    kDLCPU = 1,
    kDLCUDA = 2,
    kDLCUDAHost = 3,
} DLDeviceType;

typedef struct {
    int32_t device_type;   /* DLDeviceType */
    int32_t device_id;
} DLDevice;

typedef enum {
    kDLInt = 0,
    kDLUInt = 1,
    kDLFloat = 2,
    kDLOpaqueHandle = 3,
    kDLBfloat = 4,
    kDLComplex = 5,
    kDLBool = 6,
} DLDataTypeCode;

typedef struct {
    uint8_t code;    /* DLDataTypeCode */
    uint8_t bits;
    uint16_t lanes;
} DLDataType;

typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides;      /* in elements; NULL means compact row-major */
    uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

typedef struct {
    uint32_t major;
    uint32_t minor;
} DLPackVersion;


typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;

/* ---- export ---- */

/* One allocation: the managed tensor (one of the two forms is used), its shape and
 * strides, and the tensor it keeps alive. */
typedef struct Exported {
    DLManagedTensor managed;
    DLManagedTensorVersioned versioned;
    PtlTensorImpl *impl;   /* owned */
    int64_t shape[PTL_MAX_DIMS];
    int64_t strides[PTL_MAX_DIMS];
} Exported;

/* ORDER DTYPE */
static const DLDataType dl_dtypes[PTL_DTYPE_COUNT] = {
    [PTL_DTYPE_BOOL] = {kDLBool, 8, 1},      [PTL_DTYPE_UINT8] = {kDLUInt, 8, 1},
    [PTL_DTYPE_INT8] = {kDLInt, 8, 1},       [PTL_DTYPE_INT16] = {kDLInt, 16, 1},
    [PTL_DTYPE_INT32] = {kDLInt, 32, 1},     [PTL_DTYPE_INT64] = {kDLInt, 64, 1},
    [PTL_DTYPE_FLOAT16] = {kDLFloat, 16, 1}, [PTL_DTYPE_BFLOAT16] = {kDLBfloat, 16, 1},
    [PTL_DTYPE_FLOAT32] = {kDLFloat, 32, 1}, [PTL_DTYPE_FLOAT64] = {kDLFloat, 64, 1},
    [PTL_DTYPE_COMPLEX64] = {kDLComplex, 64, 1}, [PTL_DTYPE_COMPLEX128] = {kDLComplex, 128, 1},
};

static void
exported_free(Exported *e)
{
    ptl_decref(e->impl);
    PyMem_RawFree(e);
}

/* The deleters of exported tensors; they need no GIL. */
static void
exported_delete(DLManagedTensor *self)
{
    exported_free(self->manager_ctx);
}

static void
exported_delete_versioned(DLManagedTensorVersioned *self)
{
    exported_free(self->manager_ctx);
}

/* Destructors of the capsules we produce: free the managed tensor unless it was consumed. */
static void
capsule_destructor(PyObject *capsule)
{
    if (PyCapsule_IsValid(capsule, "dltensor")) {
        DLManagedTensor *m = PyCapsule_GetPointer(capsule, "dltensor");
        m->deleter(m);
    }
}

static void
capsule_destructor_versioned(PyObject *capsule)
{
    if (PyCapsule_IsValid(capsule, "dltensor_versioned")) {
        DLManagedTensorVersioned *m = PyCapsule_GetPointer(capsule, "dltensor_versioned");
        m->deleter(m);
    }
}

static DLDevice
dl_device_of(PtlDevice d)
{
    DLDevice dl = {kDLCPU, 0};
    if (d.type == PTL_DEVICE_CUDA) {
        dl.device_type = kDLCUDA;
        dl.device_id = d.index < 0 ? 0 : d.index;
    }
    return dl;
}

/* _to_dlpack(tensor, versioned=False) -> a capsule sharing the tensor's memory: "dltensor",
 * or "dltensor_versioned" (DLPack 1.0) when versioned.  New ref. */
PyObject *
ptlpy_to_dlpack(PyObject *module, PyObject *args)
{
    PyObject *arg;
    int versioned = 0;
    (void)module;
    if (!PyArg_ParseTuple(args, "O!|p:_to_dlpack", &PtlPyTensorBase_Type, &arg, &versioned)) {
        return NULL;
    }
    PtlTensorImpl *t = PTLPY_IMPL(arg);
    if (ptl_tensor_is_conj(t)) {
        PyErr_SetString(PyExc_BufferError, "Can't export tensors with the conjugate bit set");
        return NULL;
    }
    Exported *e = PyMem_RawCalloc(1, sizeof(Exported));
    if (e == NULL) {
        return PyErr_NoMemory();
    }
    for (int i = 0; i < t->dim; i++) {
        e->shape[i] = t->sizes[i];
        e->strides[i] = t->strides[i];
    }
    ptl_incref(t);
    e->impl = t;
    DLTensor *dl = versioned ? &e->versioned.dl_tensor : &e->managed.dl_tensor;
    dl->data = ptl_tensor_data(t);
    dl->device = dl_device_of(t->device);
    dl->ndim = t->dim;
    dl->dtype = dl_dtypes[t->dtype];
    dl->shape = e->shape;
    dl->strides = e->strides;
    dl->byte_offset = 0;
    PyObject *capsule;
    if (versioned) {
        e->versioned.version.major = 1;
        e->versioned.version.minor = 0;
        e->versioned.manager_ctx = e;
        e->versioned.deleter = exported_delete_versioned;
        e->versioned.flags = 0;
        capsule = PyCapsule_New(&e->versioned, "dltensor_versioned",
                                capsule_destructor_versioned);
    }
    else {
        e->managed.manager_ctx = e;
        e->managed.deleter = exported_delete;
        capsule = PyCapsule_New(&e->managed, "dltensor", capsule_destructor);
    }
    if (capsule == NULL) {
        exported_free(e);
    }
    return capsule;
}

/* ---- import ---- */

/* The Storage deleters of imported memory: hand the managed tensor back to its producer. */
static void
imported_delete(void *ctx, void *data)
{
    (void)data;
    DLManagedTensor *m = ctx;
    if (m->deleter != NULL) {
        m->deleter(m);
    }
}

static void
imported_delete_versioned(void *ctx, void *data)
{
    (void)data;
    DLManagedTensorVersioned *m = ctx;
    if (m->deleter != NULL) {
        m->deleter(m);
    }
}

/* The dtype of a DLDataType, or PTL_DTYPE_UNDEFINED with a RuntimeError set. */
static PtlDtype
dtype_from_dl(DLDataType t)
{
    static const char *const code_names[] = {
        [kDLInt] = "kDLInt", [kDLUInt] = "kDLUInt", [kDLFloat] = "kDLFloat",
        [kDLOpaqueHandle] = "kDLOpaqueHandle", [kDLBfloat] = "kDLBfloat",
        [kDLComplex] = "kDLComplex", [kDLBool] = "kDLBool",
    };
    if (t.lanes != 1) {
        PyErr_SetString(PyExc_RuntimeError,
                        "DLPack tensors with lanes != 1 are not supported");
        return PTL_DTYPE_UNDEFINED;
    }
    for (int d = 0; d < PTL_DTYPE_COUNT; d++) {
        if (dl_dtypes[d].code == t.code && dl_dtypes[d].bits == t.bits) {
            return (PtlDtype)d;
        }
    }
    if (t.code <= kDLBool) {
        PyErr_Format(PyExc_RuntimeError, "Unsupported %s bits %d", code_names[t.code], t.bits);
    }
    else {
        PyErr_Format(PyExc_RuntimeError, "Unsupported DLDataType code %d", t.code);
    }
    return PTL_DTYPE_UNDEFINED;
}

/* _from_dlpack(capsule) -> Tensor sharing the capsule's memory; consumes the capsule. */
PyObject *
ptlpy_from_dlpack(PyObject *module, PyObject *capsule)
{
    (void)module;
    int versioned = PyCapsule_IsValid(capsule, "dltensor_versioned");
    if (!versioned && !PyCapsule_IsValid(capsule, "dltensor")) {
        PyErr_SetString(PyExc_RuntimeError,
                        "from_dlpack received an invalid capsule. Note that DLTensor capsules "
                        "can be consumed only once, so you might have already constructed a "
                        "tensor from it once.");
        return NULL;
    }
    void *m = PyCapsule_GetPointer(capsule, versioned ? "dltensor_versioned" : "dltensor");
    DLTensor *dl;
    if (versioned) {
        DLManagedTensorVersioned *mv = m;
        if (mv->version.major > 1) {
            PyErr_Format(PyExc_BufferError,
                         "Unsupported DLPack version: %u.%u (pytorchlite supports up to 1.x)",
                         mv->version.major, mv->version.minor);
            return NULL;
        }
        dl = &mv->dl_tensor;
    }
    else {
        dl = &((DLManagedTensor *)m)->dl_tensor;
    }
    PtlDevice device = ptl_device_cpu();
    if (dl->device.device_type == kDLCUDA) {
        device.type = PTL_DEVICE_CUDA;
        device.index = (int8_t)dl->device.device_id;
    }
    else if (dl->device.device_type != kDLCPU && dl->device.device_type != kDLCUDAHost) {
        PyErr_Format(PyExc_RuntimeError, "Unsupported device_type: %d",
                     (int)dl->device.device_type);
        return NULL;
    }
    PtlDtype dtype = dtype_from_dl(dl->dtype);
    if (dtype == PTL_DTYPE_UNDEFINED) {
        return NULL;
    }
    if (dl->ndim < 0 || dl->ndim > PTL_MAX_DIMS) {
        PyErr_Format(PyExc_RuntimeError, "pytorchlite supports at most %d dimensions, got %d",
                     PTL_MAX_DIMS, (int)dl->ndim);
        return NULL;
    }
    /* sizes and strides (compact row-major when absent); extent in elements */
    int64_t sizes[PTL_MAX_DIMS], strides[PTL_MAX_DIMS], extent = 1, numel = 1;
    for (int i = dl->ndim - 1; i >= 0; i--) {
        sizes[i] = dl->shape[i];
        strides[i] = dl->strides != NULL ? dl->strides[i] : numel;
        if (sizes[i] < 0 || strides[i] < 0) {
            PyErr_SetString(PyExc_RuntimeError,
                            "DLPack tensors with negative sizes or strides are not supported");
            return NULL;
        }
        numel *= sizes[i];
        extent += (sizes[i] - 1) * strides[i];
    }
    size_t item = ptl_dtype_itemsize(dtype);
    size_t nbytes = numel == 0 ? 0 : (size_t)extent * item;
    char *data = (char *)dl->data + dl->byte_offset;
    PtlStorage *st = ptl_storage_new_foreign(
        data, nbytes, device, versioned ? imported_delete_versioned : imported_delete, m);
    if (st == NULL) {
        return ptlpy_raise();
    }
    /* the Storage owns the managed tensor now: see Note [DLPack ownership] */
    if (PyCapsule_SetName(capsule, versioned ? "used_dltensor_versioned" : "used_dltensor") <
        0) {
        st->deleter = NULL;
        ptl_storage_decref(st);
        return NULL;
    }
    PtlTensorImpl *t = ptl_tensor_impl_new(st, dtype, dl->ndim, sizes, strides, 0);
    return ptlpy_wrap(t);
}
