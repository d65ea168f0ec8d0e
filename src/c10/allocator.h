/* allocator.h -- the allocator vtable and the CPU allocator.  Mirrors c10/core/Allocator.h
 * and c10/core/CPUAllocator.cpp. */
#ifndef PTL_C10_ALLOCATOR_H
#define PTL_C10_ALLOCATOR_H

#include <stddef.h>
#include <stdint.h>

#include "device.h"
#include "memory_stats.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct PtlAllocator {
    const char *name;
    /* Returns memory for nbytes, or NULL with a MemoryError set.  Storages never ask for 0
     * bytes (a device's block of 0 bytes would be NULL, as cudaMalloc's). */
    void *(*alloc)(void *ctx, size_t nbytes);
    void (*free)(void *ctx, void *ptr, size_t nbytes);
    void *ctx;
    int8_t device_type;
    /* Copies nbytes from one of its blocks to another, 0 or -1 with the error set; NULL:
     * the host's memcpy (a growing storage keeps its bytes through this). */
    int (*copy)(void *ctx, void *dst, const void *src, size_t nbytes);
} PtlAllocator;

#define PTL_CPU_ALIGNMENT 64

/* The process-wide CPU allocator: 64-byte aligned blocks, small blocks cached per size
 * class.  PTL_FAIL_ALLOC_AFTER=n (read at init) makes the n-th allocation fail;
 * PTL_NO_ALLOC_CACHE=1 bypasses the caches (Note [Allocator cache bypass] in allocator.c). */
const PtlAllocator *ptl_cpu_allocator(void);
/* Why there are no CUDA tensors (Note [CUDA availability] in src/cuda/lazy_init.c), and
 * PyTorch's error for one. */
#define PTL_NO_CUDA_BACKEND \
    "pytorchlite has no CUDA backend: no allocator or kernels are registered for the CUDA device"
#define PTL_NO_CUDA_MESSAGE "Torch not compiled with CUDA enabled (" PTL_NO_CUDA_BACKEND ")"

/* Allocator for a device; NULL (with PTL_NO_CUDA_MESSAGE) when none is registered and none
 * can be.  The device type's initializer may fill in a missing index (the current device). */
const PtlAllocator *ptl_allocator_for(PtlDevice *device);
void ptl_allocator_register(int device_type, const PtlAllocator *alloc);
/* init is called by every ptl_allocator_for() of device_type: a backend's lazy
 * initialisation (cheap after the first call), which gives a device without an index the
 * current one; 0 once the allocator is registered, or -1 with an error set. */
void ptl_allocator_set_initializer(int device_type, int (*init)(PtlDevice *device));
/* 1 when an allocator is registered for the device type; sets no error. */
int ptl_allocator_is_registered(int device_type);

typedef struct PtlCpuAllocStats {
    int64_t allocated_bytes;   /* live bytes handed out */
    int64_t cached_bytes;      /* bytes held in the small-block cache */
    int64_t alloc_count;       /* allocations served since start */
    int64_t cache_hits;
    int caching;               /* 0 when the caches are bypassed */
} PtlCpuAllocStats;

PtlCpuAllocStats ptl_cpu_alloc_stats(void);
void ptl_cpu_alloc_empty_cache(void);
/* pytorchlite.cpu.memory_stats(): Note [CPU memory statistics] in allocator.c. */
PtlMemoryStats ptl_cpu_alloc_memory_stats(void);
void ptl_cpu_alloc_reset_peak(void);
void ptl_cpu_alloc_reset_accumulated(void);
/* Sets (or clears, with NULL) the function called with +nbytes after every CPU allocation and
 * -nbytes before every free, on the calling thread (the profiler's memory events). */
void ptl_cpu_alloc_set_hook(void (*hook)(int64_t delta));
/* Fault injection for tests: fail the n-th allocation from now (0 disables). */
void ptl_cpu_alloc_fail_after(int64_t n);

#ifdef __cplusplus
}
#endif
#endif
