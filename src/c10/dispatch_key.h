/* dispatch_key.h -- dispatch keys and key sets.  Mirrors c10/core/DispatchKey(Set).h.
 *
 * Note [Dispatch key order]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~
 * A key's value is its bit in a PtlDispatchKeySet and its priority: the dispatcher runs the
 * kernel of the HIGHEST set bit that has one, so the enum is written lowest priority first.
 * Backends sit at the bottom, Meta above CPU and CUDA (a meta tensor beside a CPU scalar
 * takes the Meta kernel, and the Meta fallback stops it from falling through to a CPU kernel
 * that would read its missing data, Note [Meta kernels] in aten/native/meta.c), SparseCPU
 * above the dense ones as in PyTorch (its fallback stops a sparse argument from falling
 * through to a dense kernel, Note [Sparse tensors]); Complex, which only complex64/complex128
 * tensors carry, sits above them (Note [Complex dtypes] in aten/native/complex.c: its kernels
 * and fallback decide what a complex argument may reach; a meta call never takes it);
 * Python, carried by the tensors of a __torch_dispatch__ subclass and included while a
 * TorchDispatchMode is on the thread's mode stack (Note [Python dispatch key] in
 * python/python_dispatch.c), sits above Complex and the backends and below Conjugate,
 * CompositeImplicit and Autograd, where PyTorch puts its Python key: a mode or a subclass
 * sees what reaches the kernels, composites already decomposed and the backward's ops
 * included, conjugate bits already resolved;
 * Conjugate, which only a complex tensor whose conjugate bit is set carries (x.conj(), Note
 * [Conjugate views] in aten/native/conjugate.c), sits above Complex and below
 * CompositeImplicit, as in PyTorch: composite ops decompose first, its fallback resolves the
 * bit for every other op, so each kernel below it (Complex's, the backends') sees resolved
 * values, and view ops pass through it keeping the bit;
 * CompositeImplicit sits just above them and is always in the set (ops written in terms of
 * other ops take it before any backend kernel); Autograd wraps them, Tracer (included only
 * while pytorchlite.jit.trace runs, Note [Tracing] in python/tracer.c) records what reaches
 * Autograd, and AutocastCPU (included only inside torch.autocast("cpu"), Note [Autocast] in
 * aten/autocast.h) casts arguments before Autograd sees them.  Profiler, the highest, is
 * included only while a profiler runs (Note [Profiler] in autograd/profiler.h): it sees every
 * call first and times everything below it.  A key
 * exists only while something registers a kernel or a fallback for it
 * (tests/aten/test_dispatcher.py checks);
 * factory functions find their backend without a key of their own (Note [Dispatch]). */
#ifndef PTL_C10_DISPATCH_KEY_H
#define PTL_C10_DISPATCH_KEY_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ORDER KEY: lowest priority first. */
#define PTL_FORALL_DISPATCH_KEYS(_)                    \
    _(CPU, "CPU")                                      \
    _(CUDA, "CUDA")                                    \
    _(META, "Meta")                                    \
    _(SPARSE_CPU, "SparseCPU")                         \
    _(COMPLEX, "Complex")                              \
    _(PYTHON, "Python")                                \
    _(CONJUGATE, "Conjugate")                          \
    _(COMPOSITE_IMPLICIT, "CompositeImplicitAutograd") \
    _(AUTOGRAD, "Autograd")                            \
    _(TRACER, "Tracer")                                \
    _(AUTOCAST_CPU, "AutocastCPU")                     \
    _(PROFILER, "Profiler")

typedef enum PtlDispatchKey {
#define PTL_KEY_ENUM(E, NAME) PTL_KEY_##E,
    PTL_FORALL_DISPATCH_KEYS(PTL_KEY_ENUM)
#undef PTL_KEY_ENUM
    PTL_KEY_COUNT
} PtlDispatchKey;

typedef uint32_t PtlDispatchKeySet;

#define PTL_KEYSET(K) ((PtlDispatchKeySet)1u << (K))

const char *ptl_dispatch_key_name(PtlDispatchKey k);

/* The highest-priority key of a non-empty set. */
static inline PtlDispatchKey
ptl_keyset_highest(PtlDispatchKeySet ks)
{
    return (PtlDispatchKey)(31 - __builtin_clz(ks));
}

/* Every key strictly below k. */
static inline PtlDispatchKeySet
ptl_keyset_below(PtlDispatchKey k)
{
    return PTL_KEYSET(k) - 1u;
}

#ifdef __cplusplus
}
#endif
#endif
