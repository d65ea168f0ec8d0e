/* storage.h -- a refcounted block of bytes on one device.  Mirrors c10/core/StorageImpl.h.
 * See Note [TensorImpl ownership] in tensor_impl.h. */
#ifndef PTL_C10_STORAGE_H
#define PTL_C10_STORAGE_H

#include <stdatomic.h>
#include <stddef.h>

#include "allocator.h"
#include "device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Frees foreign memory (a NumPy buffer, a DLPack tensor, shared memory). */
typedef void (*PtlDeleter)(void *ctx, void *data);

typedef struct PtlStorage {
    atomic_long refcnt;
    char *data;
    size_t nbytes;
    const PtlAllocator *alloc;   /* NULL for foreign or inline memory */
    PtlDeleter deleter;          /* foreign memory only */
    void *deleter_ctx;
    PtlDevice device;
    int resizable;
} PtlStorage;

/* Bytes up to this size live in the same block as the header (one allocation). */
#define PTL_STORAGE_INLINE_BYTES 64

PtlStorage *ptl_storage_new(size_t nbytes, PtlDevice device);   /* new ref, or NULL */
/* Wraps memory owned elsewhere; deleter(ctx, data) runs when the last reference goes. */
PtlStorage *ptl_storage_new_foreign(void *data, size_t nbytes, PtlDevice device,
                                    PtlDeleter deleter, void *ctx); /* new ref, or NULL */
/* Grows (never shrinks) the storage to nbytes, keeping its contents; 0 or -1. */
int ptl_storage_resize(PtlStorage *s, size_t nbytes);

static inline void
ptl_storage_incref(PtlStorage *s)
{
    atomic_fetch_add_explicit(&s->refcnt, 1, memory_order_relaxed);
}

void ptl_storage_decref(PtlStorage *s);   /* may free */

#ifdef __cplusplus
}
#endif
#endif
