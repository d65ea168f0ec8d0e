/* ptlpy.h -- declarations shared by the Python frontend (the only layer with Python.h).
 * Mirrors torch/csrc/ (python_variable.h, python_arg_parser.h, Exceptions.h). */
#ifndef PTL_PYTHON_PTLPY_H
#define PTL_PYTHON_PTLPY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "../aten/dispatcher.h"
#include "../aten/pointwise_program.h"
#include "../aten/tensor_iterator.h"
#include "../c10/error.h"
#include "../c10/tensor_impl.h"

/* ---- Tensor ---- */
typedef struct PtlPyTensor {
    PyObject_HEAD
    PtlTensorImpl *impl;   /* owned */
} PtlPyTensor;

extern PyTypeObject PtlPyTensorBase_Type;
extern PyTypeObject *ptlpy_tensor_class;   /* pytorchlite.Tensor once the package set it */

#define PtlPyTensor_Check(O) PyObject_TypeCheck((O), &PtlPyTensorBase_Type)
#define PTLPY_IMPL(O) (((PtlPyTensor *)(O))->impl)

/* Wraps t (STOLEN) in its Python object, reusing impl->pyobj when it exists.  New ref. */
PyObject *ptlpy_wrap(PtlTensorImpl *t);
/* The borrowed impl t as a new object (t gains a reference); None for NULL. */
PyObject *ptlpy_wrap_borrowed(PtlTensorImpl *t);
/* Wraps into a specific type (a subclass such as Parameter). */
PyObject *ptlpy_wrap_as(PtlTensorImpl *t, PyTypeObject *type);
/* A tuple of n objects, item i made by make_item(items, i) (a new reference, or NULL with an
 * exception set); NULL with an exception set. */
PyObject *ptlpy_tuple_from(int n, PyObject *(*make_item)(const void *items, int i),
                           const void *items);
int ptlpy_tensor_init_type(PyObject *module);
/* A Python number or a tensor as an impl (new ref); NULL without error when o is neither. */
PtlTensorImpl *ptlpy_to_impl(PyObject *o);
/* The int64 value of Python int o where it stands for a number (a Scalar, or a Tensor):
 * 0, or -1 with PyTorch's error set (Note [Huge int Scalars]). */
int ptlpy_unpack_scalar_long(PyObject *o, int64_t *v);
PyObject *ptlpy_tolist(PtlTensorImpl *t);
/* t's values in a tensor without the conjugate bit: t itself, or a resolved copy of a conj
 * view made with grad mode off (new ref); NULL with a Python exception set. */
PtlTensorImpl *ptlpy_resolve_conj(PtlTensorImpl *t);
PyObject *ptlpy_scalar_to_py(const char *p, PtlDtype dt);

/* ---- dtype, device, Size ---- */
typedef struct PtlPyDtype {
    PyObject_HEAD
    PtlDtype dtype;
} PtlPyDtype;
typedef struct PtlPyDevice {
    PyObject_HEAD
    PtlDevice device;
} PtlPyDevice;
extern PyTypeObject PtlPyDtype_Type;
extern PyTypeObject PtlPyDevice_Type;
PyObject *ptlpy_dtype_object(PtlDtype dt);   /* borrowed */
PyObject *ptlpy_device_object(PtlDevice d);  /* new ref */
/* Accepts a dtype object or the builtins bool/int/float; -1 with TypeError set on failure
 * only when `raise` is set, else returns PTL_DTYPE_UNDEFINED silently. */
PtlDtype ptlpy_parse_dtype(PyObject *o, int raise);
typedef struct PtlPyMemoryFormat {
    PyObject_HEAD
    PtlMemoryFormat format;
} PtlPyMemoryFormat;
extern PyTypeObject PtlPyMemoryFormat_Type;
PyObject *ptlpy_memory_format_object(PtlMemoryFormat f);   /* borrowed */
/* Accepts a device object, a string or an int; 0 or -1 (error set if raise). */
int ptlpy_parse_device(PyObject *o, PtlDevice *out, int raise);
/* The thread's default device for factories (default_device.c, Note [The default device]):
 * 1 and *out set when one is set, else 0. */
int ptlpy_default_device(PtlDevice *out);
PyObject *ptlpy_device_enter(PyObject *self, PyObject *unused);
PyObject *ptlpy_device_exit(PyObject *self, PyObject *args);
PyObject *ptlpy_set_default_device(PyObject *module, PyObject *arg);
PyObject *ptlpy_get_default_device(PyObject *module, PyObject *unused);
int ptlpy_dtype_init_types(PyObject *module);
PyObject *ptlpy_make_size(int dim, const int64_t *sizes);   /* pytorchlite.Size, new ref */
int ptlpy_size_init_type(PyObject *module);                  /* size_object.c */

/* ---- errors ---- */
/* Turns the thread-local error into a Python exception; returns NULL. */
PyObject *ptlpy_raise(void);
/* Adds _C._LinAlgError (raised for PTL_ERR_LINALG) to the module; 0 or -1. */
int ptlpy_errors_init(PyObject *module);
/* Makes _C's ptl_api_* functions global and adds _extension_check_load (c_api.c, Note
 * [C ABI]); 0 or -1. */
int ptlpy_c_api_init(PyObject *module);
int ptlpy_raise_int(void);   /* same, returns -1 */
/* Issues a pending ptl_warn() as a UserWarning at the user's line (ptlpy_user_stacklevel:
 * the same line whether the op was called by the user or by the package's Python code); -1
 * when the warning became an error. */
int ptlpy_flush_warnings(void);
/* PyErr_WarnEx's stack level that names the innermost frame outside the package, the user's
 * line (python_hooks.c); 1 when there is none.  Holds the GIL; leaves no error set. */
int ptlpy_user_stacklevel(void);

/* ---- operators ---- */
int ptlpy_ops_init(PyObject *module);
/* Calls op on a prepared stack and converts the returns (releases the stack's outputs). */
PyObject *ptlpy_call_op(const PtlOperator *op, PtlIValue *stack);
/* A borrowed argument or return slot as a new Python object (a Layout or MemoryFormat slot
 * holds the object it was parsed from; None for a Generator or an empty one); NULL with an
 * exception set.  The tracer and Python kernels see their arguments through it. */
PyObject *ptlpy_ivalue_to_py(const PtlIValue *v);
/* Fills stack[from..nargs) with the schema defaults. */
void ptlpy_fill_defaults(const PtlOperator *op, PtlIValue *stack, int from);
PyObject *ptlpy_getitem(PyObject *self, PyObject *index);
int ptlpy_setitem(PyObject *self, PyObject *index, PyObject *value);

/* ---- __torch_function__ (torch_function.c, Note [Torch function]) ---- */
#if defined(__GNUC__)
#define PTLPY_COLD __attribute__((cold, noinline))
#else
#define PTLPY_COLD
#endif
extern int ptlpy_tf_modes;                 /* TorchFunctionModes active on any thread */
extern PyObject *ptlpy_tf_disabled_impl;   /* _C._disabled_torch_function_impl */
int ptlpy_torch_function_init(PyObject *module);
/* Adds _C._module_getattr_slot (module_getattr.c, Note [Module attribute lookup]); 0 or -1. */
int ptlpy_module_getattr_init(PyObject *module);
/* 1 when a call with these n arguments goes to __torch_function__ (the full check) */
PTLPY_COLD int ptlpy_tf_overloaded(PyObject *const *args, Py_ssize_t n);
/* func(*args, **kwargs) through pytorchlite.overrides (vectorcall arguments); new ref */
PTLPY_COLD PyObject *ptlpy_tf_dispatch(PyObject *func, PyObject *const *args, Py_ssize_t nargs,
                            PyObject *kwnames);
/* 1 when o, a tensor of a Tensor subclass, is overloaded here (its type's __torch_function__
 * is enabled and not _disabled_torch_function_impl, and no Disable* block runs) */
PTLPY_COLD int ptlpy_tf_subclass(PyObject *o);
/* the same with func = Tensor.<name> */
PTLPY_COLD PyObject *ptlpy_tf_dispatch_slot(const char *name, PyObject *const *args,
                                             Py_ssize_t nargs);
/* a binary operator slot: Tensor.<name>(a, b) when a is a tensor, else Tensor.<rname>(b, a) */
PTLPY_COLD PyObject *ptlpy_tf_binary_slot(PyObject *a, PyObject *b, const char *name,
                                           const char *rname);

/* The operator slots' fast check, inlined without a stack frame: 1 (plain) when no mode is
 * active and each operand is an exact Tensor, an int or a float (a type compare each); else
 * the slot calls its cold *_or function, which makes the full check and either goes to
 * __torch_function__ or calls the slot's own function */
static inline int
ptlpy_tf_plain_fast(PyTypeObject *t)
{
    return t == ptlpy_tensor_class || t == &PyLong_Type || t == &PyFloat_Type;
}

static inline int
ptlpy_tf_plain1(PyObject *a)
{
    return !ptlpy_tf_modes && ptlpy_tf_plain_fast(Py_TYPE(a));
}

static inline int
ptlpy_tf_plain2(PyObject *a, PyObject *b)
{
    return !ptlpy_tf_modes && ptlpy_tf_plain_fast(Py_TYPE(a)) && ptlpy_tf_plain_fast(Py_TYPE(b));
}

/* a binary operator slot: ptlpy_tf_binary_slot when an operand is overloaded, else slot(a, b) */
PTLPY_COLD PyObject *ptlpy_tf_binary_or(PyObject *a, PyObject *b, const char *name,
                                        const char *rname, binaryfunc slot);
/* Tensor.<name>(a, b) through __torch_function__ when overloaded, else slot(a, b) */
PTLPY_COLD PyObject *ptlpy_tf_call2_or(PyObject *a, PyObject *b, const char *name,
                                       binaryfunc slot);
PTLPY_COLD PyObject *ptlpy_tf_unary_or(PyObject *a, const char *name, unaryfunc slot);

/* Tensor's getters, setters and methods that are not operators (x.shape, x.grad = g,
 * x.dim() ...): ptlpy_tf_self(self) says whether the call goes to __torch_function__ (a mode
 * is active or self's type overloads it; a flag and a type compare on the plain path), and
 * then ptlpy_tf_getter passes func = Tensor.<name>.__get__ and args (self,), ptlpy_tf_setter
 * Tensor.<name>.__set__ (self, value) or __delete__ (self,) when value is NULL (0 or -1), and
 * ptlpy_tf_method Tensor.<name> with (self, *args) and kwargs (either may be NULL) */
static inline int
ptlpy_tf_self(PyObject *self)
{
    return PTL_UNLIKELY(!ptlpy_tf_plain1(self)) && ptlpy_tf_overloaded(&self, 1);
}
PTLPY_COLD PyObject *ptlpy_tf_getter(PyObject *self, const char *name);
PTLPY_COLD int ptlpy_tf_setter(PyObject *self, const char *name, PyObject *value);
PTLPY_COLD PyObject *ptlpy_tf_method(PyObject *self, const char *name, PyObject *args,
                                     PyObject *kwargs);

/* ---- the dispatcher from Python, Python kernels (library.c) ---- */
int ptlpy_library_init(PyObject *module);
enum {
    PTLPY_BOXED_BUMP_WRITES = 1,     /* bump the version of every Tensor(a!) argument */
    PTLPY_BOXED_SKIP_DEFAULTS = 2,   /* leave out arguments that hold their default */
};
/* Calls fn(lead, *args, **kwargs) (lead may be NULL: no leading argument) with op's
 * arguments from stack, keyword-only ones by name, and boxes its result into the stack's
 * return slots as the schema says (a wrong count or type is a RuntimeError that names op
 * and key's kernel).  0, or -1 with a Python error set and the stack's arguments untouched.
 * Holds the GIL. */
int ptlpy_call_boxed(const PtlOperator *op, PtlDispatchKey key, PyObject *fn, PyObject *lead,
                     int flags, PtlIValue *stack);
/* ---- dispatch modes and subclasses (python_dispatch.c, Note [Python dispatch key]) ---- */
int ptlpy_python_dispatch_init(PyObject *module);
/* Whether objects of type carry the Python key: it defines __torch_dispatch__. */
int ptlpy_python_tensor_type(PyTypeObject *type);
/* Gives o's impl the Python key and makes it own o (Note [Python tensors]); 0, or -1 with a
 * Python error set. */
int ptlpy_python_tensor_own(PyObject *o);
/* The number of threads whose included set holds the Python key (a dispatch mode is on). */
extern int ptlpy_dispatch_mode_threads;
/* Whether this thread's included set holds the Python key. */
int ptlpy_python_dispatch_on(void);
/* Whether item(), bool(), int(), float() and index() of t read its value through
 * aten::_local_scalar_dense, so the Python key sees it: t carries the key, or this thread has
 * a dispatch mode.  A plain tensor with no mode anywhere pays a bit test and a load. */
static inline int
ptlpy_python_item(const PtlTensorImpl *t)
{
    return (t->keys & PTL_KEYSET(PTL_KEY_PYTHON)) ||
           (ptlpy_dispatch_mode_threads != 0 && ptlpy_python_dispatch_on());
}
/* t's one value through aten::_local_scalar_dense, as a 0-dim CPU tensor of the Scalar's
 * kind (bool, int64, float64 or complex128): a new reference, or NULL with a Python error
 * set. */
PtlTensorImpl *ptlpy_local_scalar(PtlTensorImpl *t);
/* A tensor of a wrapper subclass: elements, but no data of its own (Note [Python tensors]). */
static inline int
ptlpy_no_data(const PtlTensorImpl *t)
{
    return (t->keys & PTL_KEYSET(PTL_KEY_PYTHON)) && t->storage->nbytes == 0 && t->numel > 0;
}
/* PyTorch's refusals to read values (tensor_object.c), each setting the Python error and
 * returning -1: of a meta tensor as `what` ("a Python scalar", "a Python list", "numpy"...),
 * of a tensor without data (ptlpy_no_data), of a sparse tensor (0 for a strided one). */
int ptlpy_meta_has_no_data(const char *what);
int ptlpy_no_data_error(void);
int ptlpy_check_strided(const PtlTensorImpl *t);
/* The buffer protocol of TensorBase (tensor_buffer.c). */
extern PyBufferProcs ptlpy_tensor_as_buffer;
/* ---- storages (storage_object.c) ---- */
/* Adds _C.StorageBase and _C._set_storage; 0 or -1. */
int ptlpy_storage_init(PyObject *module);

/* ---- autograd ---- */
int ptlpy_autograd_init(PyObject *module);
/* _C._Reducer, DDP's gradient buckets (reducer.c) */
int ptlpy_reducer_init(PyObject *module);

/* ---- the tracer (tracer.c, Note [Tracing]) ---- */
int ptlpy_tracer_init(PyObject *module);
/* Issues the running trace's TracerWarning for a tensor turned into a Python `what`
 * ("boolean", "number", ...); 0 when no trace runs, -1 when the warning became an error. */
int ptlpy_tracer_python_value(const char *what);
/* _C._jit_run_pointwise_program (pointwise_program.c) */
int ptlpy_pointwise_program_init(PyObject *module);
/* Reads program (a sequence of (opcode, a, b)) and scalars (a sequence of floats) into prog
 * and values, PTL_PROGRAM_MAX_REGS entries each; 0 with *ninstr and *nscalars set, or -1 with
 * an exception set (ValueError when the program and ntensors inputs need more registers). */
int ptlpy_pointwise_program_parse(PyObject *program, PyObject *scalars, int ntensors,
                                  PtlProgramInstr *prog, int *ninstr, double *values,
                                  int *nscalars);
/* _C._jit_program and the C API's ptl_api_jit_* (jit_exec.c) */
int ptlpy_jit_exec_init(PyObject *module);
/* ---- profiler (profiler.c) ---- */
int ptlpy_profiler_init(PyObject *module);
/* with_stack: nonzero while op calls from Python capture the Python stack; then
 * ptlpy_profiler_note_stack (GIL held) hands it to the next op call: 0, or -1 with an
 * exception set. */
extern int ptlpy_profiler_with_stack;
int ptlpy_profiler_note_stack(void);

/* ---- Generator (generator.c) ---- */
int ptlpy_generator_init(PyObject *module);
/* 1 and out = the PtlGenerator when o is a pytorchlite.Generator, else 0. */
int ptlpy_generator_unwrap(PyObject *o, PtlIValue *out);

/* ---- memory statistics and caching allocators (memory.c) ---- */
int ptlpy_memory_init(PyObject *module);
/* ---- the CUDA device model (cuda_module.c) ---- */
int ptlpy_cuda_init(PyObject *module);
/* cuda_stream.c: streams, events and pinned memory */
int ptlpy_cuda_stream_init(PyObject *module);
/* cuda_graph.c: CUDA graph capture and replay */
int ptlpy_cuda_graph_init(PyObject *module);
/* pin_memory=True of a factory: 0, or -1 with PyTorch's RuntimeError when no pinned memory
 * allocator is available. */
int ptlpy_pin_memory_check(void);

/* ---- creation ---- */
PyObject *ptlpy_tensor_new(PyObject *module, PyObject *args, PyObject *kwargs);
PyObject *ptlpy_from_numpy(PyObject *module, PyObject *arr);
PtlTensorImpl *ptlpy_impl_from_data(PyObject *data, PtlDtype dtype, PtlDevice device);
PyObject *ptlpy_tensor_bytes(PyObject *module, PyObject *tensor);   /* pickling */
PyObject *ptlpy_tensor_from_bytes(PyObject *module, PyObject *args);

/* ---- DLPack (dlpack.c) ---- */
PyObject *ptlpy_to_dlpack(PyObject *module, PyObject *args);       /* capsule, new ref */
PyObject *ptlpy_from_dlpack(PyObject *module, PyObject *capsule);  /* consumes the capsule */

/* ---- shared memory and the CUDA fork guard (shared_memory.c) ---- */
PyObject *ptlpy_share_memory(PyObject *module, PyObject *arg);
PyObject *ptlpy_is_shared(PyObject *module, PyObject *arg);
PyObject *ptlpy_shared_fd(PyObject *module, PyObject *arg);
PyObject *ptlpy_tensor_from_shared_fd(PyObject *module, PyObject *arg);
PyObject *ptlpy_new_shared(PyObject *module, PyObject *arg);
PyObject *ptlpy_tensor_on_storage(PyObject *module, PyObject *arg);
PyObject *ptlpy_cuda_lazy_init(PyObject *module, PyObject *unused);
PyObject *ptlpy_cuda_mark_initialized(PyObject *module, PyObject *unused);
PyObject *ptlpy_cuda_is_initialized(PyObject *module, PyObject *unused);
PyObject *ptlpy_cuda_in_bad_fork(PyObject *module, PyObject *unused);

#endif
