/* generator.c -- the generator state, its lock and the default generator.  Mirrors
 * ATen/CPUGeneratorImpl.cpp and ATen/cuda/CUDAGeneratorImpl.cpp (seed + offset).
 * See Note [Philox streams] in generator.h. */
#include "generator.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../c10/error.h"

static PtlGenerator default_generator = {PTL_GENERATOR_DEFAULT_SEED, 0,
                                         PTHREAD_MUTEX_INITIALIZER, {PTL_DEVICE_CPU, -1},
                                         NULL, NULL, 0};
/* Note [CUDA generators]: set up by install_generators */
static PtlGenerator cuda_generators[PTL_GENERATOR_MAX_CUDA_DEVICES];
static pthread_once_t install_once = PTHREAD_ONCE_INIT;

/* Hold the default generators' locks across fork() so the child gets a consistent,
 * unlocked state (Note [Philox streams]). */
static void
fork_prepare(void)
{
    pthread_mutex_lock(&default_generator.lock);
    for (int i = 0; i < PTL_GENERATOR_MAX_CUDA_DEVICES; i++) {
        pthread_mutex_lock(&cuda_generators[i].lock);
    }
}

static void
fork_release(void)
{
    for (int i = PTL_GENERATOR_MAX_CUDA_DEVICES - 1; i >= 0; i--) {
        pthread_mutex_unlock(&cuda_generators[i].lock);
    }
    pthread_mutex_unlock(&default_generator.lock);
}

static void
install_generators(void)
{
    for (int i = 0; i < PTL_GENERATOR_MAX_CUDA_DEVICES; i++) {
        PtlGenerator *g = &cuda_generators[i];
        g->seed = PTL_GENERATOR_DEFAULT_SEED;
        g->offset = 0;
        pthread_mutex_init(&g->lock, NULL);
        g->device.type = PTL_DEVICE_CUDA;
        g->device.index = (int8_t)i;
    }
    pthread_atfork(fork_prepare, fork_release, fork_release);
}

PtlGenerator *
ptl_default_generator(void)
{
    pthread_once(&install_once, install_generators);
    return &default_generator;
}

PtlGenerator *
ptl_cuda_default_generator(int index)
{
    if (index < 0 || index >= PTL_GENERATOR_MAX_CUDA_DEVICES) {
        ptl_error_set(PTL_ERR_INDEX, "CUDA device index %d has no default generator", index);
        return NULL;
    }
    pthread_once(&install_once, install_generators);
    return &cuda_generators[index];
}

PtlGenerator *
ptl_generator_default_for(PtlDevice dev)
{
    return dev.type == PTL_DEVICE_CUDA ? ptl_cuda_default_generator(dev.index)
                                       : ptl_default_generator();
}

PtlGenerator *
ptl_generator_new(uint64_t seed, PtlDevice device)
{
    PtlGenerator *g = calloc(1, sizeof(*g));   /* not in a graph (Note [Graph-safe Philox]) */
    if (g == NULL) {
        ptl_error_set(PTL_ERR_MEMORY, "out of memory allocating a Generator");
        return NULL;
    }
    g->seed = seed;
    g->offset = 0;
    pthread_mutex_init(&g->lock, NULL);
    g->device = device;
    return g;
}

void
ptl_generator_free(PtlGenerator *g)
{
    if (g != NULL && g != &default_generator) {
        pthread_mutex_destroy(&g->lock);
        free(g);
    }
}

void
ptl_generator_set_seed(PtlGenerator *g, uint64_t seed)
{
    pthread_mutex_lock(&g->lock);
    g->seed = seed;
    g->offset = 0;
    pthread_mutex_unlock(&g->lock);
}

uint64_t
ptl_generator_initial_seed(PtlGenerator *g)
{
    pthread_mutex_lock(&g->lock);
    uint64_t s = g->seed;
    pthread_mutex_unlock(&g->lock);
    return s;
}

/* 64 bits from /dev/urandom, or from the clock when it cannot be read (c10's
 * getNonDeterministicRandom). */
static uint64_t
entropy64(void)
{
    uint64_t s = 0;
    FILE *f = fopen("/dev/urandom", "rb");
    if (f != NULL) {
        size_t got = fread(&s, sizeof(s), 1, f);
        fclose(f);
        if (got == 1) {
            return s;
        }
    }
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (uint64_t)ts.tv_sec * 1000000007ull ^ (uint64_t)ts.tv_nsec;
}

uint64_t
ptl_generator_seed_random(PtlGenerator *g)
{
    uint64_t s = entropy64();
    ptl_generator_set_seed(g, s);
    return s;
}

int
ptl_generator_reserve(PtlGenerator *g, uint64_t n, uint64_t *seed, uint64_t *offset)
{
    pthread_mutex_lock(&g->lock);
    int capturing = g->graph_seed != NULL;
    if (!capturing) {
        *seed = g->seed;
        *offset = g->offset;
        g->offset += n;
    }
    pthread_mutex_unlock(&g->lock);
    if (capturing) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "CUDA error: operation not permitted when stream is capturing");
    }
    return 0;
}

void
ptl_generator_reserve_launch(PtlGenerator *g, uint64_t n, uint64_t *seed, uint64_t *offset,
                             const uint64_t **seed_ptr, const uint64_t **offset_ptr)
{
    pthread_mutex_lock(&g->lock);
    *seed_ptr = g->graph_seed;
    *offset_ptr = g->graph_offset;
    if (g->graph_seed != NULL) {
        *seed = 0;
        *offset = g->offset_intragraph;
        g->offset_intragraph += n;
    }
    else {
        *seed = g->seed;
        *offset = g->offset;
        g->offset += n;
    }
    pthread_mutex_unlock(&g->lock);
}

int
ptl_generator_capture_prologue(PtlGenerator *g, const uint64_t *seed_ptr,
                               const uint64_t *offset_ptr)
{
    pthread_mutex_lock(&g->lock);
    int busy = g->graph_seed != NULL;
    if (!busy) {
        g->graph_seed = seed_ptr;
        g->graph_offset = offset_ptr;
        g->offset_intragraph = 0;
    }
    pthread_mutex_unlock(&g->lock);
    if (busy) {
        return ptl_error_set(PTL_ERR_RUNTIME, "the generator is already being captured by a "
                                              "CUDA graph");
    }
    return 0;
}

uint64_t
ptl_generator_capture_epilogue(PtlGenerator *g)
{
    pthread_mutex_lock(&g->lock);
    uint64_t increment = g->offset_intragraph;
    g->graph_seed = g->graph_offset = NULL;
    g->offset_intragraph = 0;
    pthread_mutex_unlock(&g->lock);
    return increment;
}

void
ptl_generator_replay_prologue(PtlGenerator *g, uint64_t increment, uint64_t *seed,
                              uint64_t *offset)
{
    pthread_mutex_lock(&g->lock);
    *seed = g->seed;
    *offset = g->offset;
    g->offset += increment;
    pthread_mutex_unlock(&g->lock);
}

void
ptl_generator_get_state(PtlGenerator *g, uint8_t out[PTL_GENERATOR_STATE_SIZE])
{
    pthread_mutex_lock(&g->lock);
    for (int i = 0; i < 8; i++) {
        out[i] = (uint8_t)(g->seed >> (8 * i));
        out[8 + i] = (uint8_t)(g->offset >> (8 * i));
    }
    pthread_mutex_unlock(&g->lock);
}

void
ptl_generator_set_state(PtlGenerator *g, const uint8_t in[PTL_GENERATOR_STATE_SIZE])
{
    uint64_t seed = 0, offset = 0;
    for (int i = 0; i < 8; i++) {
        seed |= (uint64_t)in[i] << (8 * i);
        offset |= (uint64_t)in[8 + i] << (8 * i);
    }
    pthread_mutex_lock(&g->lock);
    g->seed = seed;
    g->offset = offset;
    pthread_mutex_unlock(&g->lock);
}
