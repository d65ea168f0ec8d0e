/* storage_shm.c -- storages in POSIX shared memory.  Mirrors c10/core/MapAllocator.cpp with
 * ALLOCATOR_MAPPED_SHAREDMEM | ALLOCATOR_MAPPED_KEEPFD | ALLOCATOR_MAPPED_UNLINK, the flags
 * of PyTorch's default "file_descriptor" sharing strategy.
 *
 * Note [Shared memory lifetime]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A segment is created with shm_open(O_CREAT | O_EXCL) under a unique name, and that name is
 * unlinked at once, before the segment is even sized: from then on the segment is reachable
 * only through its file descriptor and its mappings, and the kernel frees it when the last
 * of them goes -- whichever process holds it, however that process ends (exit, exception,
 * SIGKILL).  So /dev/shm never keeps a leftover, and no process has to know when the others
 * are done; the name only lives for the few instructions between shm_open and shm_unlink.
 *
 * The storage keeps the descriptor open (KEEPFD) so that it can be shared again.  Another
 * process gets the segment by receiving a duplicate of that descriptor over a Unix socket
 * and maps it with ptl_storage_from_shared_fd.  pytorchlite/multiprocessing/reductions.py
 * does the passing: DataLoader workers attach the descriptors to the batch message itself
 * (SCM_RIGHTS), where the kernel keeps them alive in flight even if the worker dies; a
 * multiprocessing Queue, being a plain pipe, carries a key instead, which the receiver
 * trades for the descriptor at the sender's descriptor server, and a sender that exits
 * normally first waits for its receivers.  fork() children inherit descriptor and
 * MAP_SHARED mapping, so a tensor shared before fork is the same memory in the child.
 *
 * ptl_storage_share moves a live storage into shared memory by swapping its data pointer:
 * every tensor and view on the storage follows.  The old block cannot be freed then, since a
 * memoryview or NumPy array exported earlier may still point into it; it is kept (in the
 * segment's context) until the storage dies.  A DataLoader batch pays one extra copy: the
 * worker stacks it, then moves it here, and the old block goes with the batch's storage once
 * it has been sent. */
#define _DEFAULT_SOURCE   /* shm_open, ftruncate, mmap, fstat, getpid */
#include "storage_shm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"

typedef struct ShmContext {
    int fd;
    size_t map_bytes;   /* the mapping's length: nbytes, at least 1 (mmap refuses 0) */
    /* The block share() moved the bytes from; freed with the storage (see the Note). */
    char *old_data;
    size_t old_nbytes;
    const PtlAllocator *old_alloc;
    PtlDeleter old_deleter;
    void *old_ctx;
} ShmContext;

static atomic_long segment_counter;

static void
shm_deleter(void *ctx, void *data)
{
    ShmContext *c = ctx;
    munmap(data, c->map_bytes);
    close(c->fd);
    if (c->old_deleter != NULL) {
        c->old_deleter(c->old_ctx, c->old_data);
    }
    else if (c->old_alloc != NULL) {
        c->old_alloc->free(c->old_alloc->ctx, c->old_data, c->old_nbytes);
    }
    free(c);
}

/* Creates, unlinks and sizes a segment of map_bytes; its fd, or -1 with an error set. */
static int
segment_create(size_t map_bytes)
{
    char name[64];
    int fd = -1;
    for (int attempt = 0; fd < 0; attempt++) {
        long n = atomic_fetch_add(&segment_counter, 1);
        snprintf(name, sizeof(name), "/ptl_%ld_%ld", (long)getpid(), n);
        fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
        if (fd < 0 && (errno != EEXIST || attempt > 100)) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "unable to open shared memory object <%s> in read-write "
                                 "mode: %s (%d)", name, strerror(errno), errno);
        }
    }
    shm_unlink(name);
    if (ftruncate(fd, (off_t)map_bytes) < 0) {
        int err = errno;
        close(fd);
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "unable to resize shared memory object <%s> to %zu bytes: %s (%d)",
                             name, map_bytes, strerror(err), err);
    }
    return fd;
}

/* Maps fd (stolen) into a new context; NULL with an error set (fd closed). */
static ShmContext *
segment_map(int fd, size_t map_bytes, char **data)
{
    ShmContext *c = calloc(1, sizeof(ShmContext));
    if (c == NULL) {
        close(fd);
        ptl_error_set(PTL_ERR_MEMORY, "can't allocate a shared-memory context");
        return NULL;
    }
    *data = mmap(NULL, map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (*data == MAP_FAILED) {
        int err = errno;
        close(fd);
        free(c);
        ptl_error_set(PTL_ERR_RUNTIME, "unable to mmap %zu bytes from shared memory fd %d: "
                      "%s (%d)", map_bytes, fd, strerror(err), err);
        return NULL;
    }
    c->fd = fd;
    c->map_bytes = map_bytes;
    return c;
}

static PtlStorage *
storage_from_fd(int fd, size_t nbytes)
{
    char *data;
    ShmContext *c = segment_map(fd, nbytes ? nbytes : 1, &data);
    if (c == NULL) {
        return NULL;
    }
    PtlStorage *s = ptl_storage_new_foreign(data, nbytes, ptl_device_cpu(), shm_deleter, c);
    if (s == NULL) {
        shm_deleter(c, data);
    }
    return s;
}

PtlStorage *
ptl_storage_new_shared(size_t nbytes)
{
    int fd = segment_create(nbytes ? nbytes : 1);
    if (fd < 0) {
        return NULL;
    }
    return storage_from_fd(fd, nbytes);
}

PtlStorage *
ptl_storage_from_shared_fd(int fd, size_t nbytes)
{
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int err = errno;
        if (fd >= 0) {
            close(fd);
        }
        ptl_error_set(PTL_ERR_RUNTIME, "unable to stat shared memory fd %d: %s (%d)", fd,
                      strerror(err), err);
        return NULL;
    }
    if ((size_t)st.st_size < (nbytes ? nbytes : 1)) {
        close(fd);
        ptl_error_set(PTL_ERR_RUNTIME, "shared memory segment of %lld bytes is too small for a "
                      "storage of %zu bytes", (long long)st.st_size, nbytes);
        return NULL;
    }
    return storage_from_fd(fd, nbytes);
}

int
ptl_storage_share(PtlStorage *s)
{
    if (ptl_storage_is_shared(s)) {
        return 0;
    }
    if (s->device.type != PTL_DEVICE_CPU) {
        return ptl_error_set(PTL_ERR_RUNTIME, "share_memory_: only CPU storages can be moved "
                             "to shared memory here, got a %s storage",
                             ptl_device_type_name(s->device.type));
    }
    int fd = segment_create(s->nbytes ? s->nbytes : 1);
    if (fd < 0) {
        return -1;
    }
    char *data;
    ShmContext *c = segment_map(fd, s->nbytes ? s->nbytes : 1, &data);
    if (c == NULL) {
        return -1;
    }
    memcpy(data, s->data, s->nbytes);
    /* Inline bytes (alloc and deleter both NULL) live in the header: nothing to free. */
    c->old_data = s->data;
    c->old_nbytes = s->capacity;
    c->old_alloc = s->alloc;
    c->old_deleter = s->deleter;
    c->old_ctx = s->deleter_ctx;
    s->data = data;
    s->alloc = NULL;
    s->deleter = shm_deleter;
    s->deleter_ctx = c;
    s->resizable = 0;
    s->capacity = s->nbytes;
    return 0;
}

int
ptl_storage_is_shared(const PtlStorage *s)
{
    return s->deleter == shm_deleter;
}

int
ptl_storage_shared_fd(const PtlStorage *s)
{
    return ptl_storage_is_shared(s) ? ((const ShmContext *)s->deleter_ctx)->fd : -1;
}
