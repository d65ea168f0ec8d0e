/* tensor_object.c -- _C.TensorBase, the C half of pytorchlite.Tensor.  Mirrors
 * torch/csrc/autograd/python_variable.cpp.  See Note [TensorImpl ownership].
 *
 * Note [Tensor GC]
 * ~~~~~~~~~~~~~~~~
 * A tensor reaches Python objects only through its impl: tensor hooks (AutogradMeta.py_hooks)
 * and the hooks its grad_fn keeps (PtlNode.py_state).  A hook closure that refers to its own
 * tensor makes a cycle, so TensorBase is a GC type whose tp_traverse visits that state, as
 * PyTorch's THPVariable does -- but only while the impl (and its grad_fn) belong to this
 * wrapper alone: otherwise C owns them and they must outlive the wrapper.  To keep the hot
 * path off the GC lists, tensors are allocated untracked and tracked (_C._track_tensor) only
 * when Python state that may refer back is attached: a hook.  Subclasses with a __dict__
 * stay tracked from birth.
 * A grad that refers back to its tensor (x.grad = x[:], or a grad whose graph reaches x)
 * makes a cycle through C alone, which would outlive the wrapper.  So the grad setter makes
 * the wrapper own itself (AutogradMeta.py_self) and tracks it; tp_traverse visits py_self,
 * as the other state, once the impl's only owners besides the wrapper are its grad and what
 * the grad alone keeps alive (ptl_grad_refs_to's trial deletion), and tp_clear drops the
 * grad and py_self. */
#include "ptlpy.h"

#include <string.h>

#include "../autograd/autograd.h"
#include "../c10/parallel.h"
#include "../c10/tls.h"

PyTypeObject *ptlpy_tensor_class = &PtlPyTensorBase_Type;

PyObject *
ptlpy_wrap_as(PtlTensorImpl *t, PyTypeObject *type)
{
    if (t == NULL) {
        return ptlpy_raise();
    }
    if (t->pyobj != NULL) {
        PyObject *o = (PyObject *)t->pyobj;
        Py_INCREF(o);
        ptl_decref(t);
        return o;
    }
    /* Note [Tensor GC]: without a __dict__, allocated untracked (tp_alloc would track) */
    PtlPyTensor *o = type->tp_dictoffset == 0 ? PyObject_GC_New(PtlPyTensor, type)
                                               : (PtlPyTensor *)type->tp_alloc(type, 0);
    if (o == NULL) {
        ptl_decref(t);
        return NULL;
    }
    if (type->tp_dictoffset == 0) {
        memset((char *)o + sizeof(PyObject), 0, (size_t)type->tp_basicsize - sizeof(PyObject));
    }
    o->impl = t;
    t->pyobj = o;
    if (type != ptlpy_tensor_class && ptlpy_python_tensor_type(type) &&
        ptlpy_python_tensor_own((PyObject *)o) < 0) {
        Py_DECREF(o);
        return NULL;
    }
    /* a view made in no_grad or inference mode comes here first: record that (Note [View
     * regeneration]; in grad mode the Autograd kernel does) */
    if ((t->flags & PTL_TF_IS_VIEW) && t->base != NULL && t->autograd_meta == NULL &&
        ptl_dtype_is_differentiable(t->dtype) && !ptl_grad_mode_enabled()) {
        PtlViewCreation how = ptl_tls()->inference_mode ? PTL_VIEW_INFERENCE : PTL_VIEW_NO_GRAD;
        if (ptl_view_mark(t, how, NULL) < 0) {
            Py_DECREF(o);
            return ptlpy_raise();
        }
    }
    return (PyObject *)o;
}

PyObject *
ptlpy_wrap(PtlTensorImpl *t)
{
    return ptlpy_wrap_as(t, ptlpy_tensor_class);
}

PyObject *
ptlpy_wrap_borrowed(PtlTensorImpl *t)
{
    if (t == NULL) {
        Py_RETURN_NONE;
    }
    ptl_incref(t);
    return ptlpy_wrap(t);
}

PyObject *
ptlpy_tuple_from(int n, PyObject *(*make_item)(const void *items, int i), const void *items)
{
    PyObject *tup = PyTuple_New(n);
    for (int i = 0; tup != NULL && i < n; i++) {
        PyObject *o = make_item(items, i);
        if (o == NULL) {
            Py_CLEAR(tup);
            break;
        }
        PyTuple_SET_ITEM(tup, i, o);
    }
    return tup;
}

static void
tensor_dealloc(PtlPyTensor *self)
{
    PtlTensorImpl *t = self->impl;
    PyObject_GC_UnTrack(self);
    /* clear weak references here too (a no-op when the subclass's dealloc already did) */
    if (Py_TYPE(self)->tp_weaklistoffset != 0) {
        PyObject_ClearWeakRefs((PyObject *)self);
    }
    if (t != NULL) {
        t->pyobj = NULL;
        self->impl = NULL;
        ptl_decref(t);
    }
    PyTypeObject *tp = Py_TYPE(self);
    tp->tp_free((PyObject *)self);
    /* the Tensor subclass deallocates here directly (module.c); a heap type is owned by its
     * instances, which subtype_dealloc would otherwise release */
    if (tp->tp_dealloc == (destructor)tensor_dealloc && (tp->tp_flags & Py_TPFLAGS_HEAPTYPE)) {
        Py_DECREF(tp);
    }
}

/* Note [Tensor GC]: the Python state only this wrapper keeps alive (the impl's other owners,
 * if any, being its own grad and what that grad alone keeps alive) */
static int
tensor_traverse(PtlPyTensor *self, visitproc visit, void *arg)
{
    PtlTensorImpl *t = self->impl;
    PtlAutogradMeta *m = t != NULL ? t->autograd_meta : NULL;
    if (m == NULL ||
        atomic_load(&t->refcnt) != 1 + (m->py_self != NULL ? ptl_grad_refs_to(t, 1) : 0)) {
        return 0;
    }
    Py_VISIT((PyObject *)m->py_hooks);
    if (m->grad_fn != NULL && atomic_load(&m->grad_fn->refcnt) == 1) {
        Py_VISIT((PyObject *)m->grad_fn->py_state);
    }
    Py_VISIT((PyObject *)m->py_self);
    return 0;
}

/* Note [Tensor GC]: an unreachable tensor whose grad refers back to it drops that grad and
 * the reference to itself */
static int
tensor_clear(PtlPyTensor *self)
{
    PtlTensorImpl *t = self->impl;
    PtlAutogradMeta *m = t != NULL ? t->autograd_meta : NULL;
    if (m != NULL && m->py_self != NULL) {
        PyObject *o = m->py_self;
        PTL_CLEAR(m->grad);
        m->py_self = NULL;
        Py_DECREF(o);
    }
    return 0;
}

/* TensorBase() itself builds nothing: the legacy constructors live in Tensor.__new__
 * (pytorchlite/_tensor_types.py), and tensors are made by ptlpy_wrap_as. */
static PyObject *
tensor_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    (void)type;
    (void)args;
    (void)kwargs;
    PyErr_SetString(PyExc_TypeError, "Cannot directly construct TensorBase; subclass it and "
                                     "then construct that instead.");
    return NULL;
}

/* A NumPy scalar that is not a Python bool, int, float or complex already (np.float32(2),
 * np.int64(3), np.bool_(True), np.complex64(1j)) as a wrapped number of its value, as
 * PyTorch takes it: `x / np.float32(2)` had fallen to NumPy's reflected division and
 * returned an ndarray.  NULL without an error when o is none (NumPy is not imported here:
 * its scalar types are named "numpy.*"). */
static PtlTensorImpl *
numpy_scalar_impl(PyObject *o)
{
    const char *name = Py_TYPE(o)->tp_name;
    PtlTensorImpl *t = NULL;
    if (strncmp(name, "numpy.", 6) != 0 || strcmp(name, "numpy.ndarray") == 0) {
        return NULL;
    }
    if (strcmp(name, "numpy.bool") == 0 || strcmp(name, "numpy.bool_") == 0) {
        int v = PyObject_IsTrue(o);
        if (v < 0) {
            return NULL;
        }
        t = ptl_wrapped_bool(v);
    }
    else if (PyIndex_Check(o)) {
        PyObject *i = PyNumber_Index(o);
        if (i == NULL) {
            return NULL;
        }
        PtlTensorImpl *r = ptlpy_to_impl(i);
        Py_DECREF(i);
        return r;
    }
    else if (PyObject_HasAttrString(o, "__complex__")) {
        Py_complex z = PyComplex_AsCComplex(o);
        if (z.real == -1.0 && PyErr_Occurred()) {
            return NULL;
        }
        t = ptl_wrapped_complex(z.real, z.imag);
    }
    else if (Py_TYPE(o)->tp_as_number != NULL && Py_TYPE(o)->tp_as_number->nb_float != NULL) {
        double v = PyFloat_AsDouble(o);
        if (v == -1.0 && PyErr_Occurred()) {
            return NULL;
        }
        t = ptl_wrapped_double(v);
    }
    else {
        return NULL;
    }
    if (t == NULL) {
        ptlpy_raise();
    }
    return t;
}

/* Note [Huge int Scalars]
 * ~~~~~~~~~~~~~~~~~~~~~~~
 * PyTorch's parser reads a Python int that stands for a number (a Scalar, or a Tensor) as an
 * int64, else as a uint64 Scalar: past [-2**63, 2**64) it raises the OverflowError of
 * CPython's unsigned conversion ("int too big to convert", "can't convert negative int to
 * unsigned"), which we raise too, by the same call.  There are no uint64 Scalars here, so
 * 2**63 .. 2**64-1, which PyTorch takes, raise the parser's RuntimeError "Overflow when
 * unpacking long" (an int parameter's overflow). */
int
ptlpy_unpack_scalar_long(PyObject *o, int64_t *v)
{
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (x == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (overflow) {
        if (PyLong_AsUnsignedLongLong(o) == (unsigned long long)-1 && PyErr_Occurred()) {
            return -1;
        }
        PyErr_SetString(PyExc_RuntimeError, "Overflow when unpacking long");
        return -1;
    }
    *v = x;
    return 0;
}

PtlTensorImpl *
ptlpy_to_impl(PyObject *o)
{
    if (PtlPyTensor_Check(o)) {
        ptl_incref(PTLPY_IMPL(o));
        return PTLPY_IMPL(o);
    }
    PtlTensorImpl *t = NULL;
    if (PyBool_Check(o)) {
        t = ptl_wrapped_bool(o == Py_True);
    }
    else if (PyLong_Check(o)) {
        int64_t v;
        if (ptlpy_unpack_scalar_long(o, &v) < 0) {
            return NULL;
        }
        t = ptl_wrapped_int(v);
    }
    else if (PyFloat_Check(o)) {
        t = ptl_wrapped_double(PyFloat_AS_DOUBLE(o));
    }
    else if (PyComplex_Check(o)) {
        t = ptl_wrapped_complex(PyComplex_RealAsDouble(o), PyComplex_ImagAsDouble(o));
    }
    else {
        return numpy_scalar_impl(o);
    }
    if (t == NULL) {
        ptlpy_raise();
    }
    return t;
}

PyObject *
ptlpy_scalar_to_py(const char *p, PtlDtype dt)
{
    switch (dt) {
    case PTL_DTYPE_BOOL: return PyBool_FromLong(*(const uint8_t *)p != 0);
    case PTL_DTYPE_UINT8: return PyLong_FromLong(*(const uint8_t *)p);
    case PTL_DTYPE_INT8: return PyLong_FromLong(*(const int8_t *)p);
    case PTL_DTYPE_INT16: return PyLong_FromLong(*(const int16_t *)p);
    case PTL_DTYPE_INT32: return PyLong_FromLong(*(const int32_t *)p);
    case PTL_DTYPE_INT64: return PyLong_FromLongLong(*(const int64_t *)p);
    case PTL_DTYPE_FLOAT16: return PyFloat_FromDouble(ptl_half_to_f(*(const ptl_half *)p));
    case PTL_DTYPE_BFLOAT16: return PyFloat_FromDouble(ptl_bf16_to_f(*(const ptl_bf16 *)p));
    case PTL_DTYPE_FLOAT32: return PyFloat_FromDouble(*(const float *)p);
    case PTL_DTYPE_FLOAT64: return PyFloat_FromDouble(*(const double *)p);
    case PTL_DTYPE_COMPLEX64: {
        const float *z = (const float *)p;
        return PyComplex_FromDoubles(z[0], z[1]);
    }
    case PTL_DTYPE_COMPLEX128: {
        const double *z = (const double *)p;
        return PyComplex_FromDoubles(z[0], z[1]);
    }
    default: PyErr_SetString(PyExc_RuntimeError, "unknown dtype"); return NULL;
    }
}

static PyObject *
tolist_rec(PtlTensorImpl *t, int d, const char *p)
{
    if (d == t->dim) {
        return ptlpy_scalar_to_py(p, t->dtype);
    }
    PyObject *list = PyList_New(t->sizes[d]);
    int64_t step = t->strides[d] * (int64_t)ptl_tensor_itemsize(t);
    for (int64_t i = 0; list != NULL && i < t->sizes[d]; i++) {
        PyObject *v = tolist_rec(t, d + 1, p + i * step);
        if (v == NULL) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, i, v);
    }
    return list;
}

PtlTensorImpl *
ptlpy_resolve_conj(PtlTensorImpl *t)
{
    if (!ptl_tensor_is_conj(t)) {
        ptl_incref(t);
        return t;
    }
    PtlLocalState *tls = ptl_tls();
    int grad_was = tls->grad_enabled;
    PtlIValue a[2] = {ptl_iv_tensor(t), ptl_iv_none()};
    tls->grad_enabled = 0;
    PtlTensorImpl *r = ptl_call_tensor(PTL_OP_clone, a);   /* the Conjugate fallback resolves */
    tls->grad_enabled = grad_was;
    return r != NULL ? r : (ptlpy_raise(), NULL);
}

/* Reading a meta tensor's values: PyTorch's error for each way (Note [Meta tensors]). */
int
ptlpy_meta_has_no_data(const char *what)
{
    if (strcmp(what, "a Python scalar") == 0) {
        PyErr_SetString(PyExc_RuntimeError, "Tensor.item() cannot be called on meta tensors");
    }
    else if (strcmp(what, "a Python list") == 0) {
        PyErr_SetString(PyExc_NotImplementedError, "Cannot copy out of meta tensor; no data!");
    }
    else {
        PyErr_Format(PyExc_TypeError,
                     "can't convert meta device type tensor to %s. Use Tensor.cpu() to copy the "
                     "tensor to host memory first.",
                     what);
    }
    return -1;
}

/* Reading the values of a tensor without data (Note [Python tensors]): PyTorch's error for
 * its storage, and -1. */
int
ptlpy_no_data_error(void)
{
    PyErr_SetString(PyExc_RuntimeError, "The tensor has a non-zero number of elements, but its "
                    "data is not allocated yet.");
    return -1;
}

/* t's values where the host can read them, for item(), tolist(), int(), float(), bool() and
 * index(): t itself (a new reference) on the CPU; a CUDA tensor's copy to the host, as
 * PyTorch's item() and tolist() copy and wait for the device (never recorded by autograd);
 * PyTorch's error for any other device, NULL. */
static PtlTensorImpl *
host_values(PtlTensorImpl *t, const char *what)
{
    if (ptlpy_no_data(t)) {
        ptlpy_no_data_error();
        return NULL;
    }
    if (ptl_tensor_is_conj(t)) {
        PtlTensorImpl *r = ptlpy_resolve_conj(t), *h;
        if (r == NULL) {
            return NULL;
        }
        h = host_values(r, what);
        ptl_decref(r);
        return h;
    }
    if (t->device.type == PTL_DEVICE_CPU) {
        ptl_incref(t);
        return t;
    }
    if (t->device.type == PTL_DEVICE_META) {
        ptlpy_meta_has_no_data(what);
        return NULL;
    }
    if (t->device.type == PTL_DEVICE_CUDA) {
        PtlDevice cpu = {PTL_DEVICE_CPU, -1};
        PtlLocalState *tls = ptl_tls();
        int grad_was = tls->grad_enabled;
        tls->grad_enabled = 0;
        PtlTensorImpl *host = ptl_to_copy(t, PTL_DTYPE_UNDEFINED, &cpu);
        tls->grad_enabled = grad_was;
        return host ? host : (ptlpy_raise(), NULL);
    }
    PyErr_Format(PyExc_TypeError,
                 "can't convert %s:%d device type tensor to %s. Use Tensor.cpu() to copy the "
                 "tensor to host memory first.",
                 ptl_device_type_name(t->device.type), t->device.index, what);
    return NULL;
}

/* A sparse tensor has no elements in memory to read (Note [Sparse tensors]): PyTorch's
 * error and -1; 0 for a strided tensor. */
int
ptlpy_check_strided(const PtlTensorImpl *t)
{
    if (t->sparse != NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "Cannot access data pointer of Tensor that doesn't have storage");
        return -1;
    }
    return 0;
}

PyObject *
ptlpy_tolist(PtlTensorImpl *t)
{
    PtlTensorImpl *host;
    if (ptlpy_check_strided(t) < 0 || (host = host_values(t, "a Python list")) == NULL) {
        return NULL;
    }
    PyObject *list = tolist_rec(host, 0, ptl_tensor_data(host));
    ptl_decref(host);
    return list;
}

static PyObject *
tensor_tolist(PyObject *self, PyObject *unused)
{
    (void)unused;
    if (ptlpy_tf_self(self)) {
        return ptlpy_tf_method(self, "tolist", NULL, NULL);
    }
    if (ptlpy_tracer_python_value("list") < 0) {
        return NULL;
    }
    if (PTLPY_IMPL(self)->keys & PTL_KEYSET(PTL_KEY_PYTHON)) {
        return PyErr_Format(PyExc_RuntimeError, ".tolist() is not supported for tensor "
                            "subclasses, got %s", Py_TYPE(self)->tp_name);
    }
    return ptlpy_tolist(PTLPY_IMPL(self));
}

static PyObject *
tensor_item(PyObject *self, PyObject *unused)
{
    (void)unused;
    if (ptlpy_tf_self(self)) {
        return ptlpy_tf_method(self, "item", NULL, NULL);
    }
    PtlTensorImpl *t = PTLPY_IMPL(self);
    if (t->numel != 1) {
        PyErr_Format(PyExc_RuntimeError, "a Tensor with %lld elements cannot be converted to Scalar",
                     (long long)t->numel);
        return NULL;
    }
    PtlTensorImpl *host;
    if (ptlpy_check_strided(t) < 0 || ptlpy_tracer_python_value("number") < 0) {
        return NULL;
    }
    host = PTL_UNLIKELY(ptlpy_python_item(t)) ? ptlpy_local_scalar(t)
                                              : host_values(t, "a Python scalar");
    if (host == NULL) {
        return NULL;
    }
    PyObject *v = ptlpy_scalar_to_py(ptl_tensor_data(host), host->dtype);
    ptl_decref(host);
    return v;
}

/* ---- properties ---- */

static PyObject *
tensor_get_shape(PyObject *self, void *c)
{
    (void)c;
    if (ptlpy_tf_self(self)) {
        return ptlpy_tf_getter(self, "shape");
    }
    PtlTensorImpl *t = PTLPY_IMPL(self);
    return ptlpy_make_size(t->dim, t->sizes);
}

static PyObject *
tensor_get_dtype(PyObject *self, void *c)
{
    (void)c;
    if (ptlpy_tf_self(self)) {
        return ptlpy_tf_getter(self, "dtype");
    }
    PyObject *o = ptlpy_dtype_object(PTLPY_IMPL(self)->dtype);
    Py_INCREF(o);
    return o;
}

static PyObject *
tensor_get_device(PyObject *self, void *c)
{
    (void)c;
    if (ptlpy_tf_self(self)) {
        return ptlpy_tf_getter(self, "device");
    }
    PtlDevice d = PTLPY_IMPL(self)->device;
    if (d.type == PTL_DEVICE_CUDA && d.index < 0) {
        d.index = 0;
    }
    return ptlpy_device_object(d);
}

static PyObject *
tensor_get_ndim(PyObject *self, void *c)
{
    (void)c;
    if (ptlpy_tf_self(self)) {
        return ptlpy_tf_getter(self, "ndim");
    }
    return PyLong_FromLong(PTLPY_IMPL(self)->dim);
}

static PyObject *
tensor_get_is_cuda(PyObject *self, void *c)
{
    (void)c;
    if (ptlpy_tf_self(self)) {
        return ptlpy_tf_getter(self, "is_cuda");
    }
    return PyBool_FromLong(PTLPY_IMPL(self)->device.type == PTL_DEVICE_CUDA);
}

static PyObject *
tensor_get_version(PyObject *self, void *c)
{
    (void)c;
    if (ptlpy_tf_self(self)) {
        return ptlpy_tf_getter(self, "_version");
    }
    int64_t version;
    if (ptl_tensor_impl_version(PTLPY_IMPL(self), &version) < 0) {
        return ptlpy_raise();
    }
    return PyLong_FromLongLong(version);
}

static PyObject *
tensor_get_itemsize(PyObject *self, void *c)
{
    (void)c;
    if (ptlpy_tf_self(self)) {
        return ptlpy_tf_getter(self, "itemsize");
    }
    return PyLong_FromSize_t(ptl_tensor_itemsize(PTLPY_IMPL(self)));
}

static PyObject *
tensor_get_nbytes(PyObject *self, void *c)
{
    (void)c;
    if (ptlpy_tf_self(self)) {
        return ptlpy_tf_getter(self, "nbytes");
    }
    PtlTensorImpl *t = PTLPY_IMPL(self);
    return PyLong_FromLongLong(t->numel * (int64_t)ptl_tensor_itemsize(t));
}

static PyObject *
tensor_get_is_view(PyObject *self, void *c)
{
    (void)c;
    return PyBool_FromLong(PTLPY_IMPL(self)->base != NULL);
}

static PyObject *
tensor_get_base(PyObject *self, void *c)
{
    (void)c;
    if (ptlpy_tf_self(self)) {
        return ptlpy_tf_getter(self, "_base");
    }
    return ptlpy_wrap_borrowed(PTLPY_IMPL(self)->base);
}

static PyGetSetDef tensor_getset[] = {
    {"shape", tensor_get_shape, NULL, "the size of the tensor (a pytorchlite.Size)", NULL},
    {"dtype", tensor_get_dtype, NULL, NULL, NULL},
    {"device", tensor_get_device, NULL, NULL, NULL},
    {"ndim", tensor_get_ndim, NULL, NULL, NULL},
    {"is_cuda", tensor_get_is_cuda, NULL, NULL, NULL},
    {"_version", tensor_get_version, NULL, NULL, NULL},
    {"itemsize", tensor_get_itemsize, NULL, NULL, NULL},
    {"nbytes", tensor_get_nbytes, NULL, NULL, NULL},
    {"_is_view_", tensor_get_is_view, NULL, NULL, NULL},
    {"_base", tensor_get_base, NULL, NULL, NULL},
    {NULL},
};

/* ---- small methods ---- */

static PyObject *
tensor_dim(PyObject *self, PyObject *unused)
{
    (void)unused;
    if (ptlpy_tf_self(self)) {
        return ptlpy_tf_method(self, "dim", NULL, NULL);
    }
    return PyLong_FromLong(PTLPY_IMPL(self)->dim);
}

static PyObject *
tensor_numel(PyObject *self, PyObject *unused)
{
    (void)unused;
    if (ptlpy_tf_self(self)) {
        return ptlpy_tf_method(self, "numel", NULL, NULL);
    }
    return PyLong_FromLongLong(PTLPY_IMPL(self)->numel);
}

static PyObject *
size_or_stride(PyObject *self, PyObject *args, PyObject *kwargs, int stride)
{
    static char *kwlist[] = {"dim", NULL};
    PyObject *dimo = Py_None;
    PtlTensorImpl *t = PTLPY_IMPL(self);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, stride ? "|O:stride" : "|O:size", kwlist,
                                     &dimo)) {
        return NULL;
    }
    if (dimo == Py_None) {
        if (stride) {
            PyObject *tup = PyTuple_New(t->dim);
            for (int i = 0; tup != NULL && i < t->dim; i++) {   /* sparse: 0, as torch */
                PyTuple_SET_ITEM(tup, i, PyLong_FromLongLong(t->sparse ? 0 : t->strides[i]));
            }
            return tup;
        }
        return ptlpy_make_size(t->dim, t->sizes);
    }
    int64_t d = PyLong_AsLongLong(dimo);
    if (d == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (ptl_wrap_dim(&d, t->dim) < 0) {
        return ptlpy_raise();
    }
    if (t->dim == 0) {
        return PyLong_FromLong(stride ? 1 : 1);
    }
    return PyLong_FromLongLong(stride ? (t->sparse ? 0 : t->strides[d]) : t->sizes[d]);
}

static PyObject *
tensor_size(PyObject *self, PyObject *args, PyObject *kwargs)
{
    if (ptlpy_tf_self(self)) {
        return ptlpy_tf_method(self, "size", args, kwargs);
    }
    return size_or_stride(self, args, kwargs, 0);
}

static PyObject *
tensor_stride(PyObject *self, PyObject *args, PyObject *kwargs)
{
    if (ptlpy_tf_self(self)) {
        return ptlpy_tf_method(self, "stride", args, kwargs);
    }
    return size_or_stride(self, args, kwargs, 1);
}

/* is_contiguous(memory_format=torch.contiguous_format) */
static PyObject *
tensor_is_contiguous(PyObject *self, PyObject *args, PyObject *kwargs)
{
    if (ptlpy_tf_self(self)) {
        return ptlpy_tf_method(self, "is_contiguous", args, kwargs);
    }
    static char *kwlist[] = {"memory_format", NULL};
    PyObject *fo = NULL;
    PtlMemoryFormat f = PTL_MEMORY_FORMAT_CONTIGUOUS;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:is_contiguous", kwlist, &fo)) {
        return NULL;
    }
    if (fo != NULL && !Py_IS_TYPE(fo, &PtlPyMemoryFormat_Type)) {
        return PyErr_Format(PyExc_TypeError, "is_contiguous(): argument 'memory_format' must "
                            "be torch.memory_format, not %s", Py_TYPE(fo)->tp_name);
    }
    if (fo != NULL) {
        f = ((PtlPyMemoryFormat *)fo)->format;
    }
    return PyBool_FromLong(ptl_tensor_impl_is_contiguous_as(PTLPY_IMPL(self), f));
}

static PyObject *
tensor_data_ptr(PyObject *self, PyObject *unused)
{
    (void)unused;
    if (ptlpy_tf_self(self)) {
        return ptlpy_tf_method(self, "data_ptr", NULL, NULL);
    }
    PtlTensorImpl *t = PTLPY_IMPL(self);
    if (ptlpy_check_strided(t) < 0) {
        return NULL;
    }
    /* no data (a wrapper subclass's, empty too): PyTorch says 0 */
    if (t->device.type == PTL_DEVICE_META ||
        ((t->keys & PTL_KEYSET(PTL_KEY_PYTHON)) && t->storage->nbytes == 0)) {
        return PyLong_FromLong(0);
    }
    return PyLong_FromVoidPtr(t->numel ? ptl_tensor_data(t) : t->storage->data);
}

static PyObject *
tensor_is_conj(PyObject *self, PyObject *unused)
{
    (void)unused;
    if (ptlpy_tf_self(self)) {
        return ptlpy_tf_method(self, "is_conj", NULL, NULL);
    }
    return PyBool_FromLong(ptl_tensor_is_conj(PTLPY_IMPL(self)));
}

static PyObject *
tensor_is_inference(PyObject *self, PyObject *unused)
{
    (void)unused;
    if (ptlpy_tf_self(self)) {
        return ptlpy_tf_method(self, "is_inference", NULL, NULL);
    }
    return PyBool_FromLong(ptl_tensor_is_inference(PTLPY_IMPL(self)));
}

static PyObject *
tensor_element_size(PyObject *self, PyObject *unused)
{
    (void)unused;
    if (ptlpy_tf_self(self)) {
        return ptlpy_tf_method(self, "element_size", NULL, NULL);
    }
    return PyLong_FromSize_t(ptl_tensor_itemsize(PTLPY_IMPL(self)));
}

static PyObject *
tensor_storage_offset(PyObject *self, PyObject *unused)
{
    (void)unused;
    if (ptlpy_tf_self(self)) {
        return ptlpy_tf_method(self, "storage_offset", NULL, NULL);
    }
    return PyLong_FromLongLong(PTLPY_IMPL(self)->storage_offset);
}

static PyObject *
tensor_is_floating_point(PyObject *self, PyObject *unused)
{
    (void)unused;
    if (ptlpy_tf_self(self)) {
        return ptlpy_tf_method(self, "is_floating_point", NULL, NULL);
    }
    return PyBool_FromLong(ptl_dtype_is_floating(PTLPY_IMPL(self)->dtype));
}

static PyObject *
tensor_untyped_storage_nbytes(PyObject *self, PyObject *unused)
{
    (void)unused;
    return PyLong_FromSize_t(PTLPY_IMPL(self)->storage->nbytes);
}

static PyObject *
tensor_storage_ptr(PyObject *self, PyObject *unused)
{
    (void)unused;
    return PyLong_FromVoidPtr(PTLPY_IMPL(self)->storage->data);
}

/* _sparse_info(): None for a strided tensor; (sparse_dim, dense_dim, nnz, coalesced) for a
 * sparse one (Note [Sparse tensors]). */
static PyObject *
tensor_sparse_info(PyObject *self, PyObject *unused)
{
    (void)unused;
    const PtlSparseMeta *m = PTLPY_IMPL(self)->sparse;
    if (m == NULL) {
        Py_RETURN_NONE;
    }
    return Py_BuildValue("iiLO", m->sparse_dim, m->dense_dim, (long long)m->indices->sizes[1],
                         m->coalesced ? Py_True : Py_False);
}

/* Tensor._make_subclass(cls, data, require_grad=False): a new object of type cls sharing
 * data's storage, an inference tensor when data is one (nn.Parameter). */
static PyObject *
tensor_make_subclass(PyObject *unused, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"cls", "data", "require_grad", NULL};
    PyObject *cls, *data;
    int rg = 0;
    (void)unused;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO!|p:_make_subclass", kwlist, &cls,
                                     &PtlPyTensorBase_Type, &data, &rg)) {
        return NULL;
    }
    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, &PtlPyTensorBase_Type)) {
        PyErr_SetString(PyExc_TypeError, "cls must be a subclass of Tensor");
        return NULL;
    }
    PtlTensorImpl *d = PTLPY_IMPL(data);
    ptl_storage_incref(d->storage);
    PtlTensorImpl *t = ptl_tensor_impl_new(d->storage, d->dtype, d->dim, d->sizes, d->strides,
                                           d->storage_offset);
    if (t == NULL) {
        return ptlpy_raise();
    }
    t->flags |= d->flags & PTL_TF_INFERENCE;   /* data's alias (Note [Inference tensors]) */
    if (ptlpy_no_data(d)) {   /* a wrapper's: no kernel may read it (Note [Python tensors]) */
        t->keys |= PTL_KEYSET(PTL_KEY_PYTHON);
    }
    if (ptl_set_requires_grad(t, rg) < 0) {
        ptl_decref(t);
        return ptlpy_raise();
    }
    return ptlpy_wrap_as(t, (PyTypeObject *)cls);
}

/* Tensor.as_subclass(cls): an alias of self (a view of all of it, sharing its autograd
 * history) as an object of type cls, as PyTorch's. */
static PyObject *
tensor_as_subclass(PyObject *self, PyObject *cls)
{
    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, &PtlPyTensorBase_Type)) {
        PyErr_SetString(PyExc_TypeError, "Creating a Tensor subclass from a class that does not "
                        "inherit from Tensor is not possible. Make sure your class inherits from "
                        "Tensor.");
        return NULL;
    }
    PtlIValue v[1] = {ptl_iv_tensor(PTLPY_IMPL(self))};
    return ptlpy_wrap_as(ptl_call_tensor(PTL_OP_alias, v), (PyTypeObject *)cls);
}

/* ---- number protocol ---- */

static PyObject *
binary_slot(PtlOpId id, PyObject *a, PyObject *b)
{
    PtlTensorImpl *ta = ptlpy_to_impl(a), *tb;
    if (ta == NULL) {
        if (PyErr_Occurred()) {
            return NULL;
        }
        Py_RETURN_NOTIMPLEMENTED;
    }
    if ((tb = ptlpy_to_impl(b)) == NULL) {
        ptl_decref(ta);
        if (PyErr_Occurred()) {
            return NULL;
        }
        Py_RETURN_NOTIMPLEMENTED;
    }
    const PtlOperator *op = ptl_op(id);
    PtlIValue stack[PTL_SCHEMA_MAX_ARGS];
    stack[0] = ptl_iv_tensor(ta);
    stack[1] = ptl_iv_tensor(tb);
    ptlpy_fill_defaults(op, stack, 2);
    PyObject *res = ptlpy_call_op(op, stack);
    ptl_decref(ta);
    ptl_decref(tb);
    return res;
}

static PyObject *
unary_slot(PtlOpId id, PyObject *a)
{
    const PtlOperator *op = ptl_op(id);
    PtlIValue stack[PTL_SCHEMA_MAX_ARGS];
    stack[0] = ptl_iv_tensor(PTLPY_IMPL(a));
    ptlpy_fill_defaults(op, stack, 1);
    return ptlpy_call_op(op, stack);
}

/* number * tensor and number / tensor as PyTorch's Tensor.__rmul__ and __rtruediv__ compute
 * them: mul(tensor, number), and reciprocal(tensor) * number (1.1 / x rounds twice, as there:
 * a quarter of a random float32 tensor's quotients differ in the last bit from a division).
 * The number second also lets a float16 tensor multiply by it in float (Note [Half-precision
 * tensor times a number] in aten/native/binary.c). */
static PyObject *
nb_mul(PyObject *a, PyObject *b)
{
    if (!PtlPyTensor_Check(a) && PtlPyTensor_Check(b)) {
        return binary_slot(PTL_OP_mul_Tensor, b, a);
    }
    return binary_slot(PTL_OP_mul_Tensor, a, b);
}

static PyObject *
nb_truediv(PyObject *a, PyObject *b)
{
    if (!PtlPyTensor_Check(a) && PtlPyTensor_Check(b)) {
        PyObject *r = unary_slot(PTL_OP_reciprocal, b);
        if (r == NULL) {
            return NULL;
        }
        PyObject *res = binary_slot(PTL_OP_mul_Tensor, r, a);
        Py_DECREF(r);
        return res;
    }
    return binary_slot(PTL_OP_div_Tensor, a, b);
}

#define BINARY_SLOT(NAME, ID)                         \
    static PyObject *                                 \
    NAME(PyObject *a, PyObject *b)                    \
    {                                                 \
        return binary_slot(PTL_OP_##ID, a, b);        \
    }
BINARY_SLOT(nb_add, add_Tensor)
BINARY_SLOT(nb_sub, sub_Tensor)
BINARY_SLOT(nb_floordiv, floor_divide)
BINARY_SLOT(nb_remainder, remainder_Tensor)
BINARY_SLOT(nb_matmul, matmul)
BINARY_SLOT(nb_and, bitwise_and_Tensor)
BINARY_SLOT(nb_or, bitwise_or_Tensor)
BINARY_SLOT(nb_xor, bitwise_xor_Tensor)
BINARY_SLOT(nb_lshift, bitwise_left_shift_Tensor)
BINARY_SLOT(nb_rshift, bitwise_right_shift_Tensor)
BINARY_SLOT(nb_iadd, add__Tensor)
BINARY_SLOT(nb_isub, sub__Tensor)
BINARY_SLOT(nb_imul, mul__Tensor)
BINARY_SLOT(nb_itruediv, div__Tensor)
BINARY_SLOT(nb_ifloordiv, floor_divide_)
BINARY_SLOT(nb_iremainder, remainder__Tensor)
BINARY_SLOT(nb_iand, bitwise_and__Tensor)
BINARY_SLOT(nb_ior, bitwise_or__Tensor)
BINARY_SLOT(nb_ixor, bitwise_xor__Tensor)
BINARY_SLOT(nb_ilshift, bitwise_left_shift__Tensor)
BINARY_SLOT(nb_irshift, bitwise_right_shift__Tensor)
#undef BINARY_SLOT

/* A Python bool, int (in int64 range) or float as a Scalar: 1, or 0 when o is none. */
static int
number_iv(PyObject *o, PtlIValue *out)
{
    if (PyBool_Check(o)) {
        *out = ptl_iv_bool(o == Py_True);
        return 1;
    }
    if (PyFloat_Check(o)) {
        *out = ptl_iv_double(PyFloat_AS_DOUBLE(o));
        return 1;
    }
    if (PyLong_Check(o)) {
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (overflow == 0 && !(v == -1 && PyErr_Occurred())) {
            *out = ptl_iv_int(v);
            return 1;
        }
        PyErr_Clear();
    }
    return 0;
}

/* a ** b: a Python-number exponent is pow.Tensor_Scalar (pow_.Scalar in place), a
 * Python-number base pow.Scalar, two tensors pow.Tensor_Tensor; their nodes are
 * PowBackward0, 2 and 1, as in PyTorch. */
static PyObject *
pow_slot(PyObject *a, PyObject *b, int inplace)
{
    PtlIValue stack[PTL_SCHEMA_MAX_ARGS], num;
    const PtlOperator *op;
    if (PtlPyTensor_Check(a) && number_iv(b, &num)) {
        op = ptl_op(inplace ? PTL_OP_pow__Scalar : PTL_OP_pow_Tensor_Scalar);
        stack[0] = ptl_iv_tensor(PTLPY_IMPL(a));
        stack[1] = num;
    }
    else if (!inplace && PtlPyTensor_Check(b) && number_iv(a, &num)) {
        op = ptl_op(PTL_OP_pow_Scalar);
        stack[0] = num;
        stack[1] = ptl_iv_tensor(PTLPY_IMPL(b));
    }
    else {
        return binary_slot(inplace ? PTL_OP_pow__Tensor_Tensor : PTL_OP_pow_Tensor_Tensor, a, b);
    }
    ptlpy_fill_defaults(op, stack, 2);
    return ptlpy_call_op(op, stack);
}

static PyObject *
nb_pow(PyObject *a, PyObject *b, PyObject *mod)
{
    if (mod != Py_None) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    return pow_slot(a, b, 0);
}

static PyObject *
nb_ipow(PyObject *a, PyObject *b, PyObject *mod)
{
    if (mod != Py_None) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    return pow_slot(a, b, 1);
}

static PyObject *
nb_neg(PyObject *a)
{
    return unary_slot(PTL_OP_neg, a);
}

static PyObject *
nb_abs(PyObject *a)
{
    return unary_slot(PTL_OP_abs, a);
}

static PyObject *
nb_invert(PyObject *a)
{
    return unary_slot(PTL_OP_bitwise_not, a);
}

static PyObject *
nb_pos(PyObject *a)
{
    Py_INCREF(a);
    return a;
}

/* int(t), float(t): ValueError; bool(t): RuntimeError with `what` (PyTorch's wording).  Then
 * the tracer's check (`kind` of Python value) and t's values where the host reads them (a
 * new reference, host_values; through the Python key when it has a say, ptlpy_python_item),
 * or NULL with the error set. */
static PtlTensorImpl *
one_element(PtlTensorImpl *t, const char *what, const char *kind)
{
    if (t->numel != 1) {
        if (what != NULL) {
            PyErr_SetString(PyExc_RuntimeError, what);
        }
        else {
            PyErr_SetString(PyExc_ValueError,
                            "only one element tensors can be converted to Python scalars");
        }
        return NULL;
    }
    if (ptlpy_check_strided(t) < 0 || ptlpy_tracer_python_value(kind) < 0) {
        return NULL;
    }
    if (PTL_UNLIKELY(ptlpy_python_item(t))) {
        return ptlpy_local_scalar(t);
    }
    return host_values(t, "a Python scalar");
}

/* The imaginary part of a one-element host tensor (0 for the real dtypes): bool(t) of a
 * complex t asks whether either part is nonzero, and int(t) and float(t) refuse a nonzero
 * imaginary part as PyTorch's checked conversion does (`type` names the C type there). */
static double
item_imag(PtlTensorImpl *host)
{
    const char *p = ptl_tensor_data(host);
    switch (host->dtype) {
    case PTL_DTYPE_COMPLEX64: return ((const float *)p)[1];
    case PTL_DTYPE_COMPLEX128: return ((const double *)p)[1];
    default: return 0.0;
    }
}

static int
check_real_item(PtlTensorImpl *host, const char *type)
{
    if (item_imag(host) != 0.0) {
        PyErr_Format(PyExc_RuntimeError,
                     "value cannot be converted to type %s without overflow", type);
        return -1;
    }
    return 0;
}

/* bool(x), int(x), float(x), operator.index(x) of an overloaded x (or under a mode) go to
 * __torch_function__ as Tensor.__bool__ ... (Note [Torch function]) */
static int
nb_bool(PyObject *a)
{
    if (ptlpy_tf_self(a)) {
        PyObject *r = ptlpy_tf_dispatch_slot("__bool__", &a, 1);
        int truth = r != NULL ? PyObject_IsTrue(r) : -1;
        Py_XDECREF(r);
        return truth;
    }
    PtlTensorImpl *t = PTLPY_IMPL(a);
    PtlTensorImpl *host = one_element(t, t->numel == 0
                                             ? "Boolean value of Tensor with no values is ambiguous"
                                             : "Boolean value of Tensor with more than one value "
                                               "is ambiguous",
                                      "boolean");
    if (host == NULL) {
        return -1;
    }
    int truth = ptl_item_double(host) != 0.0 || item_imag(host) != 0.0;
    ptl_decref(host);
    return truth;
}

static PyObject *
nb_int(PyObject *a)
{
    if (ptlpy_tf_self(a)) {
        return ptlpy_tf_dispatch_slot("__int__", &a, 1);
    }
    PtlTensorImpl *t = PTLPY_IMPL(a), *host = one_element(t, NULL, "integer");
    if (host == NULL) {
        return NULL;
    }
    /* PyTorch reads a floating tensor's value as a double (a subclass may give a complex) */
    if (check_real_item(host, ptl_dtype_is_floating(t->dtype) ? "double" : "int64_t") < 0) {
        ptl_decref(host);
        return NULL;
    }
    PyObject *r;
    if (ptl_dtype_is_floating(host->dtype)) {
        PyObject *f = PyFloat_FromDouble(ptl_item_double(host));
        r = f ? PyNumber_Long(f) : NULL;
        Py_XDECREF(f);
    }
    else {
        r = PyLong_FromLongLong(ptl_item_int(host));
    }
    ptl_decref(host);
    return r;
}

static PyObject *
nb_float(PyObject *a)
{
    if (ptlpy_tf_self(a)) {
        return ptlpy_tf_dispatch_slot("__float__", &a, 1);
    }
    PtlTensorImpl *host = one_element(PTLPY_IMPL(a), NULL, "float");
    if (host == NULL) {
        return NULL;
    }
    if (check_real_item(host, "double") < 0) {
        ptl_decref(host);
        return NULL;
    }
    PyObject *r = PyFloat_FromDouble(ptl_item_double(host));
    ptl_decref(host);
    return r;
}

static PyObject *
nb_index(PyObject *a)
{
    if (ptlpy_tf_self(a)) {
        return ptlpy_tf_dispatch_slot("__index__", &a, 1);
    }
    PtlTensorImpl *t = PTLPY_IMPL(a);
    if (t->numel != 1 || !ptl_dtype_is_integral(t->dtype, 1)) {
        PyErr_SetString(PyExc_TypeError,
                        "only integer tensors of a single element can be converted to an index");
        return NULL;
    }
    PtlTensorImpl *host;
    if (ptlpy_check_strided(t) < 0 || ptlpy_tracer_python_value("integer") < 0) {
        return NULL;
    }
    host = PTL_UNLIKELY(ptlpy_python_item(t)) ? ptlpy_local_scalar(t)
                                              : host_values(t, "a Python scalar");
    if (host == NULL) {
        return NULL;
    }
    PyObject *r = PyLong_FromLongLong(ptl_item_int(host));
    ptl_decref(host);
    return r;
}

/* The operator slots as the table installs them: an operand that is overloaded (Note [Torch
 * function]) sends the call to __torch_function__ with func the Tensor attribute PyTorch
 * passes for that operator: Tensor.add for `x + 1` and `1 + x` (args (x, 1)),
 * Tensor.__rsub__ for `1 - x`, Tensor.lt for `x < 1`, Tensor.add_ for `x += 1` ... */
#define TF_BINARY(SLOT, NAME, RNAME)                              \
    static PyObject *                                             \
    tf_##SLOT(PyObject *a, PyObject *b)                           \
    {                                                             \
        if (PTL_LIKELY(ptlpy_tf_plain2(a, b))) {                  \
            return SLOT(a, b);                                    \
        }                                                         \
        return ptlpy_tf_binary_or(a, b, NAME, RNAME, SLOT);       \
    }
TF_BINARY(nb_add, "add", "add")
TF_BINARY(nb_sub, "sub", "__rsub__")
TF_BINARY(nb_mul, "mul", "mul")
TF_BINARY(nb_truediv, "div", "__rdiv__")
TF_BINARY(nb_floordiv, "__floordiv__", "__rfloordiv__")
TF_BINARY(nb_remainder, "remainder", "__rmod__")
TF_BINARY(nb_matmul, "matmul", "__rmatmul__")
TF_BINARY(nb_and, "__and__", "bitwise_and")
TF_BINARY(nb_or, "__or__", "bitwise_or")
TF_BINARY(nb_xor, "__xor__", "bitwise_xor")
TF_BINARY(nb_lshift, "__lshift__", "__rlshift__")
TF_BINARY(nb_rshift, "__rshift__", "__rrshift__")
TF_BINARY(nb_iadd, "add_", "add_")
TF_BINARY(nb_isub, "sub_", "sub_")
TF_BINARY(nb_imul, "mul_", "mul_")
TF_BINARY(nb_itruediv, "div_", "div_")
TF_BINARY(nb_ifloordiv, "floor_divide_", "floor_divide_")
TF_BINARY(nb_iremainder, "remainder_", "remainder_")
TF_BINARY(nb_iand, "__iand__", "__iand__")
TF_BINARY(nb_ior, "__ior__", "__ior__")
TF_BINARY(nb_ixor, "__ixor__", "__ixor__")
TF_BINARY(nb_ilshift, "__ilshift__", "__ilshift__")
TF_BINARY(nb_irshift, "__irshift__", "__irshift__")
#undef TF_BINARY

/* ** and **= take a third (modulo) argument that only the plain slot answers */
#define TF_POW(SLOT, NAME, RNAME, INPLACE)                                   \
    static PyObject *                                                        \
    SLOT##_2(PyObject *a, PyObject *b)                                       \
    {                                                                        \
        return pow_slot(a, b, INPLACE);                                      \
    }                                                                        \
    static PyObject *                                                        \
    tf_##SLOT(PyObject *a, PyObject *b, PyObject *mod)                       \
    {                                                                        \
        if (PTL_LIKELY(mod != Py_None || ptlpy_tf_plain2(a, b))) {           \
            return SLOT(a, b, mod);                                          \
        }                                                                    \
        return ptlpy_tf_binary_or(a, b, NAME, RNAME, SLOT##_2);              \
    }
TF_POW(nb_pow, "__pow__", "__rpow__", 0)
TF_POW(nb_ipow, "__ipow__", "__ipow__", 1)
#undef TF_POW

#define TF_UNARY(SLOT, NAME)                                      \
    static PyObject *                                             \
    tf_##SLOT(PyObject *a)                                        \
    {                                                             \
        if (PTL_LIKELY(ptlpy_tf_plain1(a))) {                     \
            return SLOT(a);                                       \
        }                                                         \
        return ptlpy_tf_unary_or(a, NAME, SLOT);                  \
    }
TF_UNARY(nb_neg, "neg")
TF_UNARY(nb_pos, "positive")
TF_UNARY(nb_abs, "abs")
TF_UNARY(nb_invert, "__invert__")
#undef TF_UNARY

static PyNumberMethods tensor_as_number = {
    .nb_add = tf_nb_add,
    .nb_subtract = tf_nb_sub,
    .nb_multiply = tf_nb_mul,
    .nb_remainder = tf_nb_remainder,
    .nb_power = tf_nb_pow,
    .nb_negative = tf_nb_neg,
    .nb_positive = tf_nb_pos,
    .nb_absolute = tf_nb_abs,
    .nb_bool = nb_bool,
    .nb_invert = tf_nb_invert,
    .nb_lshift = tf_nb_lshift,
    .nb_rshift = tf_nb_rshift,
    .nb_and = tf_nb_and,
    .nb_xor = tf_nb_xor,
    .nb_or = tf_nb_or,
    .nb_int = nb_int,
    .nb_float = nb_float,
    .nb_inplace_add = tf_nb_iadd,
    .nb_inplace_subtract = tf_nb_isub,
    .nb_inplace_multiply = tf_nb_imul,
    .nb_inplace_remainder = tf_nb_iremainder,
    .nb_inplace_power = tf_nb_ipow,
    .nb_inplace_lshift = tf_nb_ilshift,
    .nb_inplace_rshift = tf_nb_irshift,
    .nb_inplace_and = tf_nb_iand,
    .nb_inplace_xor = tf_nb_ixor,
    .nb_inplace_or = tf_nb_ior,
    .nb_floor_divide = tf_nb_floordiv,
    .nb_true_divide = tf_nb_truediv,
    .nb_inplace_floor_divide = tf_nb_ifloordiv,
    .nb_inplace_true_divide = tf_nb_itruediv,
    .nb_index = nb_index,
    .nb_matrix_multiply = tf_nb_matmul,
};

static PyObject *
tensor_richcompare(PyObject *a, PyObject *b, int cmp)
{
    static const PtlOpId ids[6] = {
        [Py_LT] = PTL_OP_lt_Tensor, [Py_LE] = PTL_OP_le_Tensor, [Py_EQ] = PTL_OP_eq_Tensor,
        [Py_NE] = PTL_OP_ne_Tensor, [Py_GT] = PTL_OP_gt_Tensor, [Py_GE] = PTL_OP_ge_Tensor,
    };
    static const char *names[6] = {
        [Py_LT] = "lt", [Py_LE] = "le", [Py_EQ] = "__eq__",
        [Py_NE] = "ne", [Py_GT] = "gt", [Py_GE] = "ge",
    };
    if (PTL_UNLIKELY(!ptlpy_tf_plain2(a, b))) {   /* Note [Torch function] */
        PyObject *ab[2] = {a, b};
        if (ptlpy_tf_overloaded(ab, 2)) {
            return ptlpy_tf_binary_slot(a, b, names[cmp], names[cmp]);
        }
    }
    return binary_slot(ids[cmp], a, b);
}

/* ---- sequence / mapping ---- */

/* len(x); an overloaded x (or a mode) goes to __torch_function__ as Tensor.__len__ */
static Py_ssize_t
tensor_length(PyObject *self)
{
    if (PTL_UNLIKELY(!ptlpy_tf_plain1(self)) && ptlpy_tf_overloaded(&self, 1)) {
        PyObject *r = ptlpy_tf_dispatch_slot("__len__", &self, 1);
        if (r == NULL) {
            return -1;
        }
        Py_ssize_t n = PyNumber_AsSsize_t(r, PyExc_OverflowError);
        Py_DECREF(r);
        return n;
    }
    PtlTensorImpl *t = PTLPY_IMPL(self);
    if (t->dim == 0) {
        PyErr_SetString(PyExc_TypeError, "len() of a 0-d tensor");
        return -1;
    }
    return (Py_ssize_t)t->sizes[0];
}

/* x[i] and x[i] = v: an overloaded operand goes to __torch_function__ (Note [Torch
 * function]) as Tensor.__getitem__ / Tensor.__setitem__ */
static PyObject *
tf_getitem(PyObject *self, PyObject *index)
{
    if (PTL_LIKELY(ptlpy_tf_plain2(self, index))) {
        return ptlpy_getitem(self, index);
    }
    return ptlpy_tf_call2_or(self, index, "__getitem__", ptlpy_getitem);
}

static int
tf_setitem(PyObject *self, PyObject *index, PyObject *value)
{
    if (PTL_UNLIKELY(value != NULL && !(ptlpy_tf_plain2(self, index) && ptlpy_tf_plain1(value)))) {
        PyObject *args[3] = {self, index, value};
        if (ptlpy_tf_overloaded(args, 3)) {
            PyObject *r = ptlpy_tf_dispatch_slot("__setitem__", args, 3);
            Py_XDECREF(r);
            return r != NULL ? 0 : -1;
        }
    }
    return ptlpy_setitem(self, index, value);
}

static PyMappingMethods tensor_as_mapping = {
    .mp_length = tensor_length,
    .mp_subscript = tf_getitem,
    .mp_ass_subscript = tf_setitem,
};

static PyMethodDef tensor_methods[] = {
    {"dim", tensor_dim, METH_NOARGS, NULL},
    {"ndimension", tensor_dim, METH_NOARGS, NULL},
    {"numel", tensor_numel, METH_NOARGS, NULL},
    {"nelement", tensor_numel, METH_NOARGS, NULL},
    {"size", (PyCFunction)(void (*)(void))tensor_size, METH_VARARGS | METH_KEYWORDS, NULL},
    {"stride", (PyCFunction)(void (*)(void))tensor_stride, METH_VARARGS | METH_KEYWORDS, NULL},
    {"is_contiguous", (PyCFunction)(void (*)(void))tensor_is_contiguous,
     METH_VARARGS | METH_KEYWORDS, NULL},
    {"data_ptr", tensor_data_ptr, METH_NOARGS, NULL},
    {"element_size", tensor_element_size, METH_NOARGS, NULL},
    {"is_conj", tensor_is_conj, METH_NOARGS, NULL},
    {"is_inference", tensor_is_inference, METH_NOARGS, NULL},
    {"storage_offset", tensor_storage_offset, METH_NOARGS, NULL},
    {"is_floating_point", tensor_is_floating_point, METH_NOARGS, NULL},
    {"item", tensor_item, METH_NOARGS, NULL},
    {"tolist", tensor_tolist, METH_NOARGS, NULL},
    {"_storage_nbytes", tensor_untyped_storage_nbytes, METH_NOARGS, NULL},
    {"_storage_ptr", tensor_storage_ptr, METH_NOARGS, NULL},
    {"_sparse_info", tensor_sparse_info, METH_NOARGS, NULL},
    {"as_subclass", tensor_as_subclass, METH_O,
     "as_subclass(cls) -> Tensor: self's values and history as an object of type cls"},
    {"_make_subclass", (PyCFunction)(void (*)(void))tensor_make_subclass,
     METH_VARARGS | METH_KEYWORDS | METH_STATIC, NULL},
    {NULL},
};

PyTypeObject PtlPyTensorBase_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pytorchlite._C.TensorBase",
    .tp_basicsize = sizeof(PtlPyTensor),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_dealloc = (destructor)tensor_dealloc,
    .tp_traverse = (traverseproc)tensor_traverse,
    .tp_clear = (inquiry)tensor_clear,
    .tp_free = PyObject_GC_Del,
    .tp_new = tensor_new,
    .tp_as_number = &tensor_as_number,
    .tp_as_mapping = &tensor_as_mapping,
    .tp_as_buffer = &ptlpy_tensor_as_buffer,
    .tp_richcompare = tensor_richcompare,
    .tp_getset = tensor_getset,
    .tp_methods = tensor_methods,
};

int
ptlpy_tensor_init_type(PyObject *module)
{
    PtlPyTensorBase_Type.tp_hash = PyBaseObject_Type.tp_hash;
    if (PyType_Ready(&PtlPyTensorBase_Type) < 0) {
        return -1;
    }
    Py_INCREF(&PtlPyTensorBase_Type);
    if (PyModule_AddObject(module, "TensorBase", (PyObject *)&PtlPyTensorBase_Type) < 0) {
        Py_DECREF(&PtlPyTensorBase_Type);
        return -1;
    }
    return 0;
}
