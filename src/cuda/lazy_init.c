/* lazy_init.c -- whether CUDA is available, the "CUDA initialised" flag and its fork guard,
 * built with or without nvcc.  Mirrors torch/csrc/cuda/Module.cpp (poison_fork, in_bad_fork)
 * and torch/cuda/__init__.py (is_available, _lazy_init).
 *
 * Note [CUDA availability]
 * ~~~~~~~~~~~~~~~~~~~~~~~~
 * nvcc at build time and a GPU at run time are not enough: a CUDA tensor needs a backend, that
 * is an allocator registered for the CUDA device and CUDA kernels, at least aten::copy_'s (the
 * one that moves data onto and off the device).  CUDA is available only when both are
 * registered and a device is visible.  The CUDA caching allocator (cuda_memory.cu) registers
 * itself the first time a CUDA kernel for aten::copy_ is seen: register_cuda.c registers the
 * CUDA kernels at module init in a build with nvcc, and makes the first CUDA allocation
 * initialise CUDA (ptl_allocator_set_initializer), so a CUDA tensor needs no explicit
 * is_available() first.  A CPU-only build registers no CUDA kernel, and is_available(),
 * device_count() and init() say so.  The backend is checked first because it touches no
 * driver.
 *
 * Note [CUDA and fork]
 * ~~~~~~~~~~~~~~~~~~~~
 * A CUDA context does not survive fork(): the child inherits the parent's driver state but
 * not the driver threads, and any CUDA call there may hang or corrupt the parent's context.
 * So the first CUDA initialisation installs a pthread_atfork child handler; a child forked
 * after that point is "in a bad fork" and every later ptl_cuda_lazy_init() in it fails with
 * PyTorch's message.  A child forked before CUDA was touched may initialise it freely.  The
 * DataLoader's fork workers hit this guard as soon as a dataset tries to use CUDA. */
#define _DEFAULT_SOURCE
#include "cuda_api.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "../aten/dispatcher.h"
#include "../c10/allocator.h"
#include "../c10/error.h"

static atomic_int initialized;
static atomic_int bad_fork;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static pthread_once_t register_once = PTHREAD_ONCE_INIT;

static void
child_after_fork(void)
{
    if (atomic_load(&initialized)) {
        atomic_store(&bad_fork, 1);
    }
}

static void
install_atfork(void)
{
    pthread_atfork(NULL, NULL, child_after_fork);
}

/* Why the CUDA allocator could not be registered (a bad PTL_CUDA_ALLOC_CONF), or "". */
static char register_error[256];

static void
register_allocator(void)
{
    if (ptl_cuda_register_allocator() < 0) {
        /* no allocator: has_backend() stays 0, and the reason is CUDA's unavailable reason */
        snprintf(register_error, sizeof(register_error), "%s", ptl_error_message());
        ptl_error_clear();
    }
}

/* The CUDA allocator is registered the first time CUDA kernels are seen, so that a build
 * with no kernels has no allocator either. */
static int
has_backend(void)
{
    if (ptl_op(PTL_OP_copy_)->kernels[PTL_KEY_CUDA] == NULL) {
        return 0;
    }
    if (ptl_cuda_is_built()) {
        pthread_once(&register_once, register_allocator);
    }
    return ptl_allocator_is_registered(PTL_DEVICE_CUDA);
}

int
ptl_cuda_is_available(void)
{
    return ptl_cuda_is_built() && has_backend() && ptl_cuda_device_count() > 0;
}

const char *
ptl_cuda_unavailable_reason(void)
{
    if (ptl_cuda_is_built() && !has_backend()) {
        return register_error[0] != '\0' ? register_error : PTL_NO_CUDA_BACKEND;
    }
    return ptl_cuda_device_count() > 0 ? "" : ptl_cuda_no_device_reason();
}

void
ptl_cuda_mark_initialized(void)
{
    pthread_once(&atfork_once, install_atfork);
    atomic_store(&initialized, 1);
}

int
ptl_cuda_is_initialized(void)
{
    return atomic_load(&initialized) && !atomic_load(&bad_fork);
}

int
ptl_cuda_in_bad_fork(void)
{
    return atomic_load(&bad_fork);
}

int
ptl_cuda_lazy_init(void)
{
    if (atomic_load(&bad_fork)) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Cannot re-initialize CUDA in forked subprocess. To use CUDA with "
                             "multiprocessing, you must use the 'spawn' start method");
    }
    if (atomic_load(&initialized)) {
        return 0;
    }
    if (!ptl_cuda_is_built() || !has_backend()) {
        return ptl_error_set(PTL_ERR_RUNTIME, "Torch not compiled with CUDA enabled (%s)",
                             ptl_cuda_unavailable_reason());
    }
    if (ptl_cuda_device_count() == 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "No CUDA GPUs are available");
    }
    ptl_cuda_mark_initialized();
    return 0;
}
