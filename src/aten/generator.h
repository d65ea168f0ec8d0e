/* generator.h -- random number generator state.  Mirrors c10/core/GeneratorImpl.h and
 * ATen/CPUGeneratorImpl.h, with PyTorch's CUDA scheme (Philox, seed + offset) on the CPU too.
 *
 * Note [Philox streams]
 * ~~~~~~~~~~~~~~~~~~~~~
 * A generator is (seed, offset).  A kernel that makes n random elements reserves n
 * counters: it reads the offset and advances it by n under the generator's lock.  Block
 * (b, draw) is Philox4x32-10 with key = seed and 128-bit counter = (offset + b, draw): four
 * 32-bit words.  Element i reads block i / k, where k, the elements per block, is fixed per
 * distribution: 4 when an element needs one word (float uniforms, bernoulli, small integer
 * ranges: word i % 4), 2 when it needs two (double uniforms, exponential, cauchy,
 * geometric, wide integer ranges; normals, where elements 2m and 2m+1 take the cosine and
 * sine halves of one Box-Muller pair), 1 for rejection samplers (poisson), which read
 * draw = 0, 1, 2... of their own block as long as they need.  Element i depends on nothing
 * but (seed, offset, i), so the values are the same whatever the number of threads and
 * however the work is split, and a CUDA kernel computing philox.h and distributions.h gets
 * the same stream.  Elements are numbered in row-major order of the output's shape,
 * whatever its strides.  (Reserving n counters when n / k would do keeps the rule simple;
 * 2^64 counters do not run out.)
 *
 * Rejected alternative: one sequential engine (mt19937, PyTorch's CPU default) makes the
 * values depend on the order in which threads draw, so PyTorch fills sequentially.
 *
 * The state is 16 bytes: seed then offset, little-endian uint64 each (get_state/set_state),
 * the byte layout of PyTorch's CUDA generator state.
 *
 * Fork: a forked child keeps the parent's state (as PyTorch's CPU generator does), so two
 * children draw the same numbers until they are reseeded (DataLoader workers reseed).  A
 * pthread_atfork handler holds the default generators' locks across fork(), so the child
 * never inherits one locked.
 *
 * Note [CUDA generators]
 * ~~~~~~~~~~~~~~~~~~~~~~
 * Each CUDA device has its default generator (ptl_cuda_default_generator, PyTorch's
 * torch.cuda.default_generators[i]), seeded like the CPU's with PTL_GENERATOR_DEFAULT_SEED,
 * and a kernel on a CUDA tensor without a generator argument draws from its device's.  The
 * scheme is the CPU's (Note [Philox streams]): a launch reserves one counter per element,
 * so after manual_seed(s) on both, the k-th fill of n elements reads the same counters, and
 * gives the same values, on either device.  PyTorch's CUDA generator also advances its
 * offset once per launch, but by a multiple of 4 that depends on the launch's grid (each
 * thread's curand4 calls); copying that would tie the values to the launch geometry and
 * part the CUDA stream from the CPU's, so offsets here advance by the element count and
 * set_state takes any offset (PyTorch's "offset must be a multiple of 4" does not apply).
 * The state keeps PyTorch's CUDA layout: 16 bytes, seed then offset (8 bytes: seed only,
 * offset 0).  The generators are plain host memory that exist before CUDA is initialised,
 * so torch.cuda.manual_seed and friends seed them at once where PyTorch queues the call
 * until initialisation (the same end state: the latest seed wins per generator).  While the
 * tests emulate the CUDA kernels, a CPU tensor takes a CUDA generator too (random.c's
 * generator_for), so the device's stream is checked without a device. */
#ifndef PTL_ATEN_GENERATOR_H
#define PTL_ATEN_GENERATOR_H

#include <pthread.h>
#include <stdint.h>

#include "../c10/device.h"

#define PTL_GENERATOR_STATE_SIZE 16
/* The CUDA devices that have a default generator (the allocators' MAX_DEVICES). */
#define PTL_GENERATOR_MAX_CUDA_DEVICES 64
/* The seed of the default generator and of every new Generator (PyTorch's
 * default_rng_seed_val). */
#define PTL_GENERATOR_DEFAULT_SEED 67280421310721ull

typedef struct PtlGenerator {
    uint64_t seed;
    uint64_t offset;
    pthread_mutex_t lock;
    PtlDevice device;   /* the device whose kernels draw from it: CPU, or CUDA with an index */
    /* while a CUDA graph captures its launches (Note [Graph-safe Philox] in philox.h): the
     * device memory its kernels read seed and base offset from, and the counters reserved
     * in the graph so far; graph_seed is NULL otherwise */
    const uint64_t *graph_seed, *graph_offset;
    uint64_t offset_intragraph;
} PtlGenerator;

/* The process-wide CPU generator (borrowed; lives for the process). */
PtlGenerator *ptl_default_generator(void);
/* CUDA device index's default generator (borrowed; lives for the process), or NULL with an
 * IndexError when index is outside [0, PTL_GENERATOR_MAX_CUDA_DEVICES) (Note [CUDA
 * generators]). */
PtlGenerator *ptl_cuda_default_generator(int index);
/* The default generator of dev (CPU or a CUDA device with its index), borrowed, or NULL
 * with an error set. */
PtlGenerator *ptl_generator_default_for(PtlDevice dev);
/* A new generator for device seeded with `seed`, or NULL with a MemoryError; free with
 * ptl_generator_free. */
PtlGenerator *ptl_generator_new(uint64_t seed, PtlDevice device);
void ptl_generator_free(PtlGenerator *g);

void ptl_generator_set_seed(PtlGenerator *g, uint64_t seed);   /* also resets the offset */
uint64_t ptl_generator_initial_seed(PtlGenerator *g);
/* Seeds g from the operating system's entropy (time when none); returns the seed. */
uint64_t ptl_generator_seed_random(PtlGenerator *g);
/* Reserves n counters for draws made on the host: *seed and *offset receive the stream to
 * use (Note [Philox streams]).  0, or -1 with PyTorch's capture error while a CUDA graph
 * captures g's draws (host work would be baked into the graph). */
int ptl_generator_reserve(PtlGenerator *g, uint64_t n, uint64_t *seed, uint64_t *offset);
/* Reserves n counters for a kernel launch: eagerly as ptl_generator_reserve, and while a
 * graph captures g, *seed_ptr and *offset_ptr receive the generator's device memory and
 * *offset the launch's offset in the graph (NULL pointers eagerly). */
void ptl_generator_reserve_launch(PtlGenerator *g, uint64_t n, uint64_t *seed,
                                  uint64_t *offset, const uint64_t **seed_ptr,
                                  const uint64_t **offset_ptr);
/* A graph starts capturing g's launches, which read seed and base offset from seed_ptr and
 * offset_ptr (device memory that stays valid while g is in any graph).  0, or -1 with an
 * error when a capture of g is already underway. */
int ptl_generator_capture_prologue(PtlGenerator *g, const uint64_t *seed_ptr,
                                   const uint64_t *offset_ptr);
/* Ends the capture; returns the counters the graph's launches reserve in all. */
uint64_t ptl_generator_capture_epilogue(PtlGenerator *g);
/* Before a replay: *seed and *offset receive what to write to the graph's seed and offset
 * memory, and g advances by the graph's `increment` counters, as the launches would. */
void ptl_generator_replay_prologue(PtlGenerator *g, uint64_t increment, uint64_t *seed,
                                   uint64_t *offset);
void ptl_generator_get_state(PtlGenerator *g, uint8_t out[PTL_GENERATOR_STATE_SIZE]);
void ptl_generator_set_state(PtlGenerator *g, const uint8_t in[PTL_GENERATOR_STATE_SIZE]);

#endif
