/* storage.h -- a refcounted block of bytes on one device.  Mirrors c10/core/StorageImpl.h.
 * See Note [TensorImpl ownership] in tensor_impl.h. */
#ifndef PTL_C10_STORAGE_H
#define PTL_C10_STORAGE_H

#include <stdatomic.h>
#include <stddef.h>

#include "allocator.h"
#include "device.h"
#include "memory_stats.h"

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
    int8_t resizable;
    atomic_uint saved_refs;      /* saved tensors of the autograd graph over this storage
                                  * (Note [Saved tensor bytes]) */
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

/* Note [Saved tensor bytes]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~
 * Beyond PyTorch, pytorchlite.cpu.memory_stats() reports saved_tensor_bytes: the bytes of the
 * storages that the autograd graph's saved tensors keep alive, each storage counted once
 * however many nodes saved it or views of it (a node saving x and another saving x.t() hold
 * one storage).  src/autograd marks a storage when a node saves a tensor over it and unmarks
 * it when the node releases that tensor (after backward, when the graph dies, or when a
 * saved-tensor pack hook takes it); the first mark adds the storage's bytes, the last unmark
 * removes them, and resizing a marked storage moves the figure by the difference. */
void ptl_storage_mark_saved(PtlStorage *s);
void ptl_storage_unmark_saved(PtlStorage *s);
/* The saved_tensor_bytes statistic (current, peak and running sums since the last reset). */
PtlStat ptl_saved_tensor_bytes(void);
void ptl_saved_tensor_bytes_reset_peak(void);
void ptl_saved_tensor_bytes_reset_accumulated(void);

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
