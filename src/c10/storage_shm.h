/* storage_shm.h -- storages in POSIX shared memory.  Mirrors c10/core/MapAllocator.h (the
 * file-descriptor sharing strategy).  See Note [Shared memory lifetime] in storage_shm.c. */
#ifndef PTL_C10_STORAGE_SHM_H
#define PTL_C10_STORAGE_SHM_H

#include <stddef.h>

#include "storage.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A CPU storage of nbytes (zero-filled) in a fresh shared-memory segment.  New ref, or NULL. */
PtlStorage *ptl_storage_new_shared(size_t nbytes);
/* Maps the segment behind fd (STOLEN: kept open by the storage, closed on error) as a CPU
 * storage of nbytes.  New ref, or NULL. */
PtlStorage *ptl_storage_from_shared_fd(int fd, size_t nbytes);
/* Moves s (a CPU storage) into a new segment in place: same PtlStorage, same bytes, so
 * every tensor and view on it follows.  A no-op when s is already shared.  0 or -1. */
int ptl_storage_share(PtlStorage *s);
int ptl_storage_is_shared(const PtlStorage *s);
/* The descriptor of s's segment (owned by s: dup it to keep it), or -1 if not shared. */
int ptl_storage_shared_fd(const PtlStorage *s);

#ifdef __cplusplus
}
#endif
#endif
