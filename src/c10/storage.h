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
    size_t capacity;             /* bytes of the block at data (>= nbytes); see the Note */
} PtlStorage;

/* Note [Storage capacity]
 * ~~~~~~~~~~~~~~~~~~~~~~~
 * UntypedStorage.resize_ may shrink a storage that tensors still use (FSDP frees parameter
 * memory with resize_(0) and grows it back before use).  PyTorch then frees the block and a
 * tensor that reads it crashes.  Here the block is kept (nbytes drops, capacity stays) while
 * anything else holds the storage, so every tensor keeps pointing into memory it owns; a
 * storage held by its caller alone gets a block of the new size.  Growing back within the
 * capacity reuses the block.  Blocks are freed with their capacity. */

/* Bytes up to this size live in the same block as the header (one allocation). */
#define PTL_STORAGE_INLINE_BYTES 64

PtlStorage *ptl_storage_new(size_t nbytes, PtlDevice device);   /* new ref, or NULL */
/* Wraps memory owned elsewhere; deleter(ctx, data) runs when the last reference goes. */
PtlStorage *ptl_storage_new_foreign(void *data, size_t nbytes, PtlDevice device,
                                    PtlDeleter deleter, void *ctx); /* new ref, or NULL */
/* Grows (never shrinks) the storage to nbytes, keeping its contents; 0 or -1. */
int ptl_storage_resize(PtlStorage *s, size_t nbytes);
/* Sets the storage's size to nbytes, growing or shrinking it (UntypedStorage.resize_; Note
 * [Storage capacity]); keeps the first min(old, new) bytes; 0 or -1. */
int ptl_storage_resize_bytes(PtlStorage *s, size_t nbytes);

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
