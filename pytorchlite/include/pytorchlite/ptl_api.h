/* ptl_api.h -- pytorchlite's stable C ABI, for extensions written in C or C++.  Mirrors what
 * torch/library.h, ATen's Tensor accessors and c10's boxed kernels offer a C++ extension, as
 * plain C.  See Note [C ABI].
 *
 * Note [C ABI]
 * ~~~~~~~~~~~~
 * - Versioning: PTL_API_VERSION_MAJOR changes when a declaration here changes meaning;
 *   MINOR when one is added.  An extension records the version it was compiled against in
 *   every PTL_LIBRARY block (ptl_api_library_run receives it); pytorchlite refuses to
 *   register a block built against another MAJOR version and the loader raises ImportError
 *   naming both versions.  ptl_api_library_run's signature never changes.
 * - Linking: pytorchlite._C exports the ptl_api_* functions and nothing else (it is built
 *   with -fvisibility=hidden) and makes them global when it is imported, so an extension
 *   leaves them undefined and the dynamic loader binds them to the _C already loaded.
 *   Import pytorchlite before loading an extension (pytorchlite.utils.cpp_extension
 *   does); extensions link with -z now, so a missing symbol fails the load by its name.
 * - Tensors are opaque, reference-counted handles.  "New" results are owned by the caller,
 *   who releases them with ptl_api_release; "borrowed" ones live as long as their owner.
 * - Errors: a function that fails returns NULL or -1 (or, for inspection functions given a
 *   bad argument, -1 / NULL) and sets the thread-local error slot.  A kernel that fails
 *   returns -1 with the slot set (ptl_api_set_error); the Python caller gets the exception
 *   type the kind names (RuntimeError, IndexError, TypeError, ValueError,
 *   NotImplementedError).
 * - Kernels are boxed: they read their arguments from a PtlApiStack and leave their returns
 *   on it (see ptl_api_stack_*). */
#ifndef PYTORCHLITE_PTL_API_H
#define PYTORCHLITE_PTL_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PTL_API_VERSION_MAJOR 1
#define PTL_API_VERSION_MINOR 2

#if defined(__GNUC__)
#define PTL_API __attribute__((visibility("default")))
#define PTL_API_PRINTF(F, A) __attribute__((format(printf, F, A)))
#else
#define PTL_API
#define PTL_API_PRINTF(F, A)
#endif

/* ---- types ---- */

typedef struct PtlApiTensor PtlApiTensor;       /* a tensor */
typedef struct PtlApiStack PtlApiStack;         /* boxed values: arguments, then returns */
typedef struct PtlApiOperator PtlApiOperator;   /* a registered operator */
typedef struct PtlApiLibrary PtlApiLibrary;     /* the `m` of a PTL_LIBRARY block */
typedef struct PtlApiAutogradContext PtlApiAutogradContext;
typedef struct PtlApiJitModule PtlApiJitModule;  /* a graph file loaded for ptl_api_jit_run */

/* Element types, numbered as PyTorch's ScalarType.  ORDER SCALAR_TYPE */
typedef enum PtlApiDtype {
    PTL_API_UINT8 = 0,
    PTL_API_INT8 = 1,
    PTL_API_INT16 = 2,
    PTL_API_INT32 = 3,
    PTL_API_INT64 = 4,
    PTL_API_FLOAT16 = 5,
    PTL_API_FLOAT32 = 6,
    PTL_API_FLOAT64 = 7,
    PTL_API_COMPLEX64 = 9,
    PTL_API_COMPLEX128 = 10,
    PTL_API_BOOL = 11,
    PTL_API_BFLOAT16 = 15,
} PtlApiDtype;

typedef enum PtlApiDeviceType {
    PTL_API_CPU = 0,
    PTL_API_CUDA = 1,
} PtlApiDeviceType;

/* The exception a failed call raises in Python. */
typedef enum PtlApiErrorKind {
    PTL_API_ERROR_NONE = 0,
    PTL_API_RUNTIME_ERROR = 1,
    PTL_API_INDEX_ERROR = 2,
    PTL_API_TYPE_ERROR = 3,
    PTL_API_VALUE_ERROR = 4,
    PTL_API_NOT_IMPLEMENTED_ERROR = 5,
} PtlApiErrorKind;

/* A kernel or a boxed fallback: on entry the stack holds the call's arguments in schema
 * order (borrowed from the caller); on success the kernel leaves exactly the schema's
 * returns on it (clear it, then push them) and returns 0; on failure -1 with the error set.
 * data is what was registered with it. */
typedef int (*PtlApiKernel)(const PtlApiOperator *op, PtlApiStack *stack, void *data);

/* A backward: grad_outputs[k] is the gradient of the forward's output k (borrowed; zeros
 * when nothing flowed into it); store the gradient of tensor argument i in grad_inputs[i]
 * (new reference, or leave NULL for none).  0, or -1 with the error set. */
typedef int (*PtlApiBackward)(PtlApiAutogradContext *ctx, PtlApiTensor *const *grad_outputs,
                              PtlApiTensor **grad_inputs, void *data);

/* ---- version ---- */

/* MAJOR * 1000 + MINOR of the pytorchlite the extension runs in. */
PTL_API int ptl_api_version(void);

/* ---- errors (the thread-local slot) ---- */

/* Sets the error (the first one set wins until cleared); returns -1. */
PTL_API int ptl_api_set_error(PtlApiErrorKind kind, const char *fmt, ...) PTL_API_PRINTF(2, 3);
PTL_API PtlApiErrorKind ptl_api_error_kind(void);
/* The message, or "" when none is set (borrowed, valid until the next error). */
PTL_API const char *ptl_api_error_message(void);
PTL_API void ptl_api_clear_error(void);

/* ---- tensors ---- */

/* Uninitialised / zero-filled contiguous tensors; new, or NULL with the error set. */
PTL_API PtlApiTensor *ptl_api_empty(int64_t dim, const int64_t *sizes, PtlApiDtype dtype,
                                    PtlApiDeviceType device, int device_index);
PTL_API PtlApiTensor *ptl_api_zeros(int64_t dim, const int64_t *sizes, PtlApiDtype dtype,
                                    PtlApiDeviceType device, int device_index);
/* An empty tensor with t's sizes, dtype and device (contiguous). */
PTL_API PtlApiTensor *ptl_api_empty_like(const PtlApiTensor *t);
/* A new CPU tensor holding a copy of the elements at data, laid out with strides (in
 * elements; NULL: contiguous). */
PTL_API PtlApiTensor *ptl_api_from_data(const void *data, int64_t dim, const int64_t *sizes,
                                        const int64_t *strides, PtlApiDtype dtype);
PTL_API void ptl_api_retain(PtlApiTensor *t);
PTL_API void ptl_api_release(PtlApiTensor *t);   /* NULL is allowed */

PTL_API int64_t ptl_api_dim(const PtlApiTensor *t);
PTL_API const int64_t *ptl_api_sizes(const PtlApiTensor *t);     /* borrowed [dim] */
PTL_API const int64_t *ptl_api_strides(const PtlApiTensor *t);   /* in elements */
PTL_API int64_t ptl_api_numel(const PtlApiTensor *t);
PTL_API PtlApiDtype ptl_api_dtype(const PtlApiTensor *t);
PTL_API size_t ptl_api_element_size(const PtlApiTensor *t);
PTL_API PtlApiDeviceType ptl_api_device_type(const PtlApiTensor *t);
PTL_API int ptl_api_device_index(const PtlApiTensor *t);         /* -1 on the CPU */
/* The first element (storage offset applied); writing through it bypasses autograd. */
PTL_API void *ptl_api_data_ptr(const PtlApiTensor *t);
PTL_API int ptl_api_is_contiguous(const PtlApiTensor *t);
PTL_API int ptl_api_requires_grad(const PtlApiTensor *t);

/* ---- boxed calls ---- */

PTL_API PtlApiStack *ptl_api_stack_new(void);   /* NULL when out of memory */
PTL_API void ptl_api_stack_free(PtlApiStack *s);   /* releases what it holds */
PTL_API int64_t ptl_api_stack_size(const PtlApiStack *s);
/* Drops every value (releasing the ones the stack owns). */
PTL_API void ptl_api_stack_clear(PtlApiStack *s);
/* Pushes a value; the stack takes its own reference to a tensor and copies a list.  0/-1. */
PTL_API int ptl_api_push_tensor(PtlApiStack *s, PtlApiTensor *t);
PTL_API int ptl_api_push_int(PtlApiStack *s, int64_t v);
PTL_API int ptl_api_push_double(PtlApiStack *s, double v);
PTL_API int ptl_api_push_complex(PtlApiStack *s, double re, double im);   /* since 1.2 */
PTL_API int ptl_api_push_bool(PtlApiStack *s, int v);
PTL_API int ptl_api_push_none(PtlApiStack *s);
PTL_API int ptl_api_push_int_list(PtlApiStack *s, const int64_t *v, int64_t n);
/* Reads value i (0 is the bottom): a tensor (borrowed; NULL for None), a number, a bool, an
 * int list (borrowed, its length in *n).  A value of another type sets a TypeError and
 * returns NULL / -1.  A Scalar argument may hold a complex number (Python's 1j): the
 * integer and double readers refuse it, ptl_api_stack_complex reads any number (an
 * imaginary part 0 for the real ones) and ptl_api_stack_is_complex tells which it is. */
PTL_API PtlApiTensor *ptl_api_stack_tensor(const PtlApiStack *s, int64_t i);
PTL_API int64_t ptl_api_stack_int(const PtlApiStack *s, int64_t i);
PTL_API double ptl_api_stack_double(const PtlApiStack *s, int64_t i);
PTL_API int ptl_api_stack_bool(const PtlApiStack *s, int64_t i);
/* since 1.2: 0 / -1, and 1 / 0 / -1 */
PTL_API int ptl_api_stack_complex(const PtlApiStack *s, int64_t i, double *re, double *im);
PTL_API int ptl_api_stack_is_complex(const PtlApiStack *s, int64_t i);
PTL_API int ptl_api_stack_is_none(const PtlApiStack *s, int64_t i);
PTL_API const int64_t *ptl_api_stack_int_list(const PtlApiStack *s, int64_t i, int64_t *n);
/* Removes the top value; a tensor comes back as a new reference (NULL for None). */
PTL_API PtlApiTensor *ptl_api_pop_tensor(PtlApiStack *s);
PTL_API int64_t ptl_api_pop_int(PtlApiStack *s);
PTL_API double ptl_api_pop_double(PtlApiStack *s);
PTL_API int ptl_api_pop_bool(PtlApiStack *s);
PTL_API int ptl_api_pop_complex(PtlApiStack *s, double *re, double *im);   /* since 1.2 */

/* Calls the operator named "ns::name" or "ns::name.overload" ("aten::add.Tensor") through
 * the dispatcher, as Python's pytorchlite.ops does (autograd included).  The stack holds
 * the arguments in schema order; trailing arguments with defaults may be left out.  On
 * success they are replaced by the returns; on failure the stack is cleared.  0 or -1. */
PTL_API int ptl_api_call(const char *schema_name, PtlApiStack *stack);
/* Inside a kernel or fallback: calls op again with the keys below the one now running
 * (PyTorch's redispatch).  Same stack contract. */
PTL_API int ptl_api_redispatch(const PtlApiOperator *op, PtlApiStack *stack);
/* "ns::name" or "ns::name.overload" (borrowed, lives as long as the operator). */
PTL_API const char *ptl_api_operator_name(const PtlApiOperator *op);

/* ---- registration ---- */

/* Declares an operator: "myops::sigmoid_add(Tensor x, Tensor y) -> Tensor".  0 or -1 (a
 * malformed schema names the position and what was expected). */
PTL_API int ptl_api_define(const char *schema);
/* Sets op's kernel for key ("CPU", "CUDA", "Autograd", "CompositeImplicitAutograd"); a
 * second kernel for the same op and key replaces the first with a warning, as PyTorch
 * does.  0 or -1. */
PTL_API int ptl_api_register_kernel(const char *op_name, const char *key, PtlApiKernel fn,
                                    void *data);
/* The kernel for key of every operator that has none there.  A second fallback for the
 * same key is an error.  0 or -1. */
PTL_API int ptl_api_register_fallback(const char *key, PtlApiKernel fn, void *data);
/* Makes op differentiable: an Autograd kernel that runs the kernels below Autograd and,
 * when an input requires grad, records a graph node whose backward is `backward`.  It
 * saves every tensor argument and output for the context.  0 or -1. */
PTL_API int ptl_api_register_autograd(const char *op_name, PtlApiBackward backward, void *data);

/* In a backward: tensor argument i / output k of the forward (new reference; an error when
 * it was modified in place since), and whether argument i needs a gradient. */
PTL_API PtlApiTensor *ptl_api_ctx_saved_input(PtlApiAutogradContext *ctx, int64_t i);
PTL_API PtlApiTensor *ptl_api_ctx_saved_output(PtlApiAutogradContext *ctx, int64_t k);
PTL_API int ptl_api_ctx_needs_input_grad(const PtlApiAutogradContext *ctx, int64_t i);

/* The library blocks.  In a block, `m` names the namespace (and, for PTL_LIBRARY_IMPL, the
 * key) that the calls below complete: */
/* ptl_api_def(m, "sigmoid_add(Tensor x, Tensor y) -> Tensor") */
PTL_API int ptl_api_def(PtlApiLibrary *m, const char *schema);
/* ptl_api_impl(m, "sigmoid_add", fn, data): the block's key (PTL_LIBRARY_IMPL only) */
PTL_API int ptl_api_impl(PtlApiLibrary *m, const char *name, PtlApiKernel fn, void *data);
/* ptl_api_impl_autograd(m, "sigmoid_add", backward, data) */
PTL_API int ptl_api_impl_autograd(PtlApiLibrary *m, const char *name, PtlApiBackward backward,
                                  void *data);

typedef void (*PtlApiLibraryInit)(PtlApiLibrary *m);
/* Runs one block (the macros below call it when the shared object is loaded).  key is NULL
 * for PTL_LIBRARY.  A block built against another major version, or one whose calls fail,
 * is kept as the pending load error that the loader raises (pytorchlite cannot raise while
 * the dynamic loader runs constructors). */
PTL_API void ptl_api_library_run(int version_major, int version_minor, const char *ns,
                                 const char *key, PtlApiLibraryInit init, const char *file,
                                 int line);
/* The pending load error (new string owned by the caller, free() it), or NULL. */
PTL_API char *ptl_api_take_load_error(void);

/* ---- for generated Python bindings (cpp_extension); obj is a PyObject * ---- */

/* A Python object for t (stolen); NULL: raises the error slot's exception (for a function
 * that returned NULL).  A new reference. */
PTL_API void *ptl_api_python_from_tensor(PtlApiTensor *t);
/* The tensor of a pytorchlite.Tensor (borrowed), or NULL with a TypeError naming argument
 * pos (0-based) of fn. */
PTL_API PtlApiTensor *ptl_api_python_to_tensor(void *obj, int pos, const char *fn);
/* Raises the error slot's exception; returns NULL. */
PTL_API void *ptl_api_python_raise(void);
/* Issues the warnings pytorchlite buffered (a kernel replaced, ...) as UserWarnings; -1
 * when one became an exception, else 0. */
PTL_API int ptl_api_python_warn(void);
/* Raises the pending load error (ImportError for a version mismatch); 0 when none, else -1. */
PTL_API int ptl_api_python_check_load(void);

/* ---- graphs written by pytorchlite.jit.save (since 1.1) ---- */

/* Loads the file at path and lowers its graph for the C executor; new (release it with
 * ptl_api_jit_free), or NULL with the error set.  The file is read and checked by the
 * Python loader (pytorchlite.jit.load): this takes the GIL, so call it from a thread that
 * may run Python, after pytorchlite is imported. */
PTL_API PtlApiJitModule *ptl_api_jit_load(const char *path);
/* The graph's tensor inputs (the module itself not counted) and outputs. */
PTL_API int ptl_api_jit_num_inputs(const PtlApiJitModule *m);
PTL_API int ptl_api_jit_num_outputs(const PtlApiJitModule *m);
/* Runs the graph on inputs[0..n) (borrowed) and stores its ptl_api_jit_num_outputs(m)
 * results in outputs (new: the caller releases each with ptl_api_release); 0, or -1 with
 * the error set and nothing stored.  It runs in C alone (no GIL taken, no Python object
 * touched), through the dispatcher as eager mode does (autograd included). */
PTL_API int ptl_api_jit_run(const PtlApiJitModule *m, PtlApiTensor *const *inputs, int64_t n,
                            PtlApiTensor **outputs);
/* Releases the module (takes the GIL); NULL is allowed. */
PTL_API void ptl_api_jit_free(PtlApiJitModule *m);

/* Blocks run when the shared object loads: every PTL_LIBRARY block of a library before its
 * PTL_LIBRARY_IMPL blocks, whatever the order of its sources (constructor priorities). */
#if defined(__GNUC__)
#define PTL_API_CONSTRUCTOR(PRIORITY) __attribute__((constructor(PRIORITY)))
#else
#error "PTL_LIBRARY needs a compiler with constructor functions (GCC, Clang)"
#endif

#define PTL_API_CAT_(A, B) A##B
#define PTL_API_CAT(A, B) PTL_API_CAT_(A, B)
#define PTL_API_BLOCK_(NS, KEYSTR, PRIORITY, M, UID)                                         \
    static void PTL_API_CAT(ptl_library_init_, UID)(PtlApiLibrary * M);                      \
    PTL_API_CONSTRUCTOR(PRIORITY) static void PTL_API_CAT(ptl_library_load_, UID)(void)      \
    {                                                                                        \
        ptl_api_library_run(PTL_API_VERSION_MAJOR, PTL_API_VERSION_MINOR, #NS, KEYSTR,       \
                            PTL_API_CAT(ptl_library_init_, UID), __FILE__, __LINE__);        \
    }                                                                                        \
    static void PTL_API_CAT(ptl_library_init_, UID)(PtlApiLibrary * M)

/* PTL_LIBRARY(myops, m) { ptl_api_def(m, "..."); }: defines operators of namespace myops. */
#define PTL_LIBRARY(NS, M) PTL_API_BLOCK_(NS, NULL, 1001, M, PTL_API_CAT(NS##_def_, __LINE__))
/* PTL_LIBRARY_IMPL(myops, CPU, m) { ptl_api_impl(m, "sigmoid_add", fn, NULL); } */
#define PTL_LIBRARY_IMPL(NS, KEY, M) \
    PTL_API_BLOCK_(NS, #KEY, 1002, M, PTL_API_CAT(NS##_##KEY##_, __LINE__))

#ifdef __cplusplus
}
#endif
#endif
