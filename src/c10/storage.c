/* storage.c -- refcounted bytes.  Mirrors c10/core/StorageImpl.cpp. */
#include "storage.h"

#include <stdlib.h>
#include <string.h>

#include "debug_counts.h"
#include "error.h"

/* The header is padded to 64 bytes; inline data follows it with malloc's 16-byte alignment
 * (aligned_alloc costs several times more than malloc on this hot path). */
#define HEADER_BYTES 64
_Static_assert(sizeof(PtlStorage) <= HEADER_BYTES, "PtlStorage header outgrew its padding");

static PtlStorage *
storage_alloc_header(size_t extra)
{
    PtlStorage *s = malloc(HEADER_BYTES + extra);
    if (s == NULL) {
        ptl_error_set(PTL_ERR_MEMORY, "can't allocate memory for a storage header");
        return NULL;
    }
    atomic_init(&s->refcnt, 1);
    s->data = NULL;
    s->nbytes = 0;
    s->alloc = NULL;
    s->deleter = NULL;
    s->deleter_ctx = NULL;
    s->resizable = 1;
    atomic_init(&s->saved_refs, 0);
    s->capacity = 0;
    ptl_debug_count(PTL_COUNT_STORAGE, 1);
    return s;
}

PtlStorage *
ptl_storage_new(size_t nbytes, PtlDevice device)
{
    PtlStorage *s;
    if (device.type == PTL_DEVICE_META) {   /* no data: Note [Meta tensors] in device.h */
        if ((s = storage_alloc_header(0)) == NULL) {
            return NULL;
        }
        s->nbytes = nbytes;
        s->capacity = nbytes;
        s->device = device;
        return s;
    }
    if (device.type == PTL_DEVICE_CPU && nbytes <= PTL_STORAGE_INLINE_BYTES) {
        if ((s = storage_alloc_header(PTL_STORAGE_INLINE_BYTES)) == NULL) {
            return NULL;
        }
        s->data = (char *)s + HEADER_BYTES;
        s->nbytes = nbytes;
        s->capacity = PTL_STORAGE_INLINE_BYTES;
        s->device = device;
        return s;
    }
    const PtlAllocator *a = ptl_allocator_for(&device);
    if (a == NULL || (s = storage_alloc_header(0)) == NULL) {
        return NULL;
    }
    /* no block for no bytes: a device allocator returns NULL for 0, as cudaMalloc does, and a
     * size-0 device tensor's data_ptr() is 0 as in PyTorch */
    s->data = nbytes == 0 ? NULL : a->alloc(a->ctx, nbytes);
    if (s->data == NULL && nbytes > 0) {
        ptl_debug_count(PTL_COUNT_STORAGE, -1);
        free(s);
        return NULL;
    }
    s->nbytes = nbytes;
    s->capacity = nbytes;
    s->alloc = a;
    s->device = device;
    return s;
}

PtlStorage *
ptl_storage_new_foreign(void *data, size_t nbytes, PtlDevice device, PtlDeleter deleter,
                        void *ctx)
{
    PtlStorage *s = storage_alloc_header(0);
    if (s == NULL) {
        return NULL;
    }
    s->data = data;
    s->nbytes = nbytes;
    s->capacity = nbytes;
    s->device = device;
    s->deleter = deleter;
    s->deleter_ctx = ctx;
    s->resizable = 0;
    return s;
}

static void set_nbytes(PtlStorage *s, size_t nbytes);

/* Moves the contents to a new block of nbytes from the storage's allocator, through its copy
 * function (a device's) or memcpy. */
static int
storage_realloc(PtlStorage *s, size_t nbytes)
{
    if (s->device.type == PTL_DEVICE_META) {
        set_nbytes(s, nbytes);
        s->capacity = nbytes;
        return 0;
    }
    const PtlAllocator *a = s->alloc ? s->alloc : ptl_allocator_for(&s->device);
    if (a == NULL) {
        return -1;
    }
    char *p = a->alloc(a->ctx, nbytes);
    if (p == NULL && nbytes > 0) {   /* a device's 0 bytes are NULL (ptl_storage_new) */
        return -1;
    }
    size_t keep = s->nbytes < nbytes ? s->nbytes : nbytes;
    if (keep > 0 && a->copy != NULL && a->copy(a->ctx, p, s->data, keep) < 0) {
        a->free(a->ctx, p, nbytes);
        return -1;
    }
    if (keep > 0 && a->copy == NULL) {
        memcpy(p, s->data, keep);
    }
    if (s->alloc != NULL && s->data != NULL) {
        s->alloc->free(s->alloc->ctx, s->data, s->capacity);
    }
    s->data = p;
    set_nbytes(s, nbytes);
    s->capacity = nbytes;
    s->alloc = a;
    return 0;
}

static int
not_resizable(void)
{
    return ptl_error_set(PTL_ERR_RUNTIME, "Trying to resize storage that is not resizable");
}

/* ---- saved tensor bytes (Note [Saved tensor bytes]) ---- */

static _Atomic int64_t saved_current, saved_peak, saved_added, saved_removed;
static _Atomic int64_t saved_base_added, saved_base_removed;

static void
saved_bytes_update(int64_t delta)
{
    if (delta > 0) {
        int64_t now = atomic_fetch_add(&saved_current, delta) + delta;
        atomic_fetch_add(&saved_added, delta);
        int64_t peak = atomic_load(&saved_peak);
        while (now > peak && !atomic_compare_exchange_weak(&saved_peak, &peak, now)) {
        }
    }
    else if (delta < 0) {
        atomic_fetch_add(&saved_current, delta);
        atomic_fetch_add(&saved_removed, -delta);
    }
}

void
ptl_storage_mark_saved(PtlStorage *s)
{
    if (s->device.type == PTL_DEVICE_META) {   /* holds no bytes */
        return;
    }
    if (atomic_fetch_add(&s->saved_refs, 1) == 0) {
        saved_bytes_update((int64_t)s->nbytes);
    }
}

void
ptl_storage_unmark_saved(PtlStorage *s)
{
    if (s->device.type == PTL_DEVICE_META) {
        return;
    }
    if (atomic_fetch_sub(&s->saved_refs, 1) == 1) {
        saved_bytes_update(-(int64_t)s->nbytes);
    }
}

PtlStat
ptl_saved_tensor_bytes(void)
{
    PtlStat st;
    st.current = atomic_load(&saved_current);
    st.peak = atomic_load(&saved_peak);
    st.allocated = atomic_load(&saved_added) - atomic_load(&saved_base_added);
    st.freed = atomic_load(&saved_removed) - atomic_load(&saved_base_removed);
    st.peak = st.peak > st.current ? st.peak : st.current;
    return st;
}

void
ptl_saved_tensor_bytes_reset_peak(void)
{
    atomic_store(&saved_peak, atomic_load(&saved_current));
}

void
ptl_saved_tensor_bytes_reset_accumulated(void)
{
    atomic_store(&saved_base_added, atomic_load(&saved_added));
    atomic_store(&saved_base_removed, atomic_load(&saved_removed));
}

/* Sets s->nbytes, moving saved_tensor_bytes with it when s is marked saved. */
static void
set_nbytes(PtlStorage *s, size_t nbytes)
{
    if (atomic_load(&s->saved_refs) > 0) {
        saved_bytes_update((int64_t)nbytes - (int64_t)s->nbytes);
    }
    s->nbytes = nbytes;
}

int
ptl_storage_resize(PtlStorage *s, size_t nbytes)
{
    if (nbytes <= s->nbytes) {
        return 0;
    }
    if (!s->resizable) {
        return not_resizable();
    }
    if (nbytes <= s->capacity) {
        set_nbytes(s, nbytes);
        return 0;
    }
    return storage_realloc(s, nbytes);
}

int
ptl_storage_resize_bytes(PtlStorage *s, size_t nbytes)
{
    if (nbytes == s->nbytes) {
        return 0;
    }
    if (!s->resizable) {
        return not_resizable();
    }
    if (nbytes > s->nbytes) {
        return ptl_storage_resize(s, nbytes);
    }
    /* See Note [Storage capacity]: only a storage nobody else holds gives its block back. */
    if (s->alloc != NULL && atomic_load(&s->refcnt) == 1) {
        return storage_realloc(s, nbytes);
    }
    set_nbytes(s, nbytes);
    return 0;
}

void
ptl_storage_decref(PtlStorage *s)
{
    if (atomic_fetch_sub_explicit(&s->refcnt, 1, memory_order_acq_rel) != 1) {
        return;
    }
    if (s->deleter != NULL) {
        s->deleter(s->deleter_ctx, s->data);
    }
    else if (s->alloc != NULL && s->data != NULL) {
        s->alloc->free(s->alloc->ctx, s->data, s->capacity);
    }
    ptl_debug_count(PTL_COUNT_STORAGE, -1);
    free(s);
}
