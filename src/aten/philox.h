/* philox.h -- the Philox4x32-10 counter-based generator and the conversions of its bits
 * to uniform numbers.  Mirrors ATen/core/PhiloxRNGEngine.h and the uniform helpers of
 * ATen/core/DistributionsHelper.h; the algorithm is Salmon, Moraes, Dror and Shaw,
 * "Parallel random numbers: as easy as 1, 2, 3" (SC 2011).  PTL_HD so that a CUDA kernel
 * reproduces the CPU stream bit for bit.  See Note [Philox streams] in generator.h. */
#ifndef PTL_ATEN_PHILOX_H
#define PTL_ATEN_PHILOX_H

#include <stdint.h>

#include "../c10/macros.h"

/* The multipliers and the Weyl key increments (golden ratio and sqrt(3) - 1) of the paper. */
#define PTL_PHILOX_M0 0xD2511F53u
#define PTL_PHILOX_M1 0xCD9E8D57u
#define PTL_PHILOX_W0 0x9E3779B9u
#define PTL_PHILOX_W1 0xBB67AE85u

typedef struct PtlPhiloxBlock {
    uint32_t w[4];
} PtlPhiloxBlock;

/* One round: two 32x32->64 multiplies; the high halves are mixed with the key. */
PTL_HD static inline void
ptl_philox_round(uint32_t c[4], uint32_t k0, uint32_t k1)
{
    uint64_t p0 = (uint64_t)PTL_PHILOX_M0 * c[0];
    uint64_t p1 = (uint64_t)PTL_PHILOX_M1 * c[2];
    uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
    uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
    uint32_t n0 = hi1 ^ c[1] ^ k0, n2 = hi0 ^ c[3] ^ k1;
    c[0] = n0;
    c[1] = lo1;
    c[2] = n2;
    c[3] = lo0;
}

/* Philox4x32-10 of the 128-bit counter (c0, c1, c2, c3) under the 64-bit key (k0, k1). */
PTL_HD static inline PtlPhiloxBlock
ptl_philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0,
                  uint32_t k1)
{
    PtlPhiloxBlock b;
    uint32_t c[4] = {c0, c1, c2, c3};
    for (int r = 0; r < 10; r++) {
        if (r > 0) {
            k0 += PTL_PHILOX_W0;
            k1 += PTL_PHILOX_W1;
        }
        ptl_philox_round(c, k0, k1);
    }
    b.w[0] = c[0];
    b.w[1] = c[1];
    b.w[2] = c[2];
    b.w[3] = c[3];
    return b;
}

/* Note [Graph-safe Philox]
 * ~~~~~~~~~~~~~~~~~~~~~~~~
 * A CUDA graph replays its kernels with the arguments they were captured with, so a random
 * kernel whose (seed, offset) were plain arguments would draw the same numbers at every
 * replay.  As PyTorch's PhiloxCudaState, a launch captured while its generator is in a
 * graph takes instead two pointers to device memory that the generator owns (its seed and
 * a base offset) and, as `offset`, its offset within the graph: the sum of the counters
 * that the graph's earlier random launches reserved.  The kernel reads the pointers when it
 * runs (ptl_philox_unpack); replay() first writes the generator's seed and current offset
 * there and advances the generator by the whole graph's counters.  A replay therefore draws
 * what the same launches run eagerly from the same generator state would draw, element for
 * element (each launch still reserves one counter per element, Note [CUDA generators] in
 * generator.h), and leaves the generator where they would. */

/* The seed and offset of a launch: eager ones as they are; captured ones (seed_ptr set)
 * read from the generator's device memory, offset being the launch's offset in the graph
 * (Note [Graph-safe Philox]). */
PTL_HD static inline void
ptl_philox_unpack(uint64_t *seed, uint64_t *offset, const uint64_t *seed_ptr,
                  const uint64_t *offset_ptr)
{
    if (seed_ptr != NULL) {
        *seed = *seed_ptr;
        *offset += *offset_ptr;
    }
}

/* Block `draw` of element `index` of the stream (seed, offset): counter words 0-1 hold
 * offset + index, words 2-3 the draw number (Note [Philox streams]). */
PTL_HD static inline PtlPhiloxBlock
ptl_philox_draw(uint64_t seed, uint64_t offset, uint64_t index, uint64_t draw)
{
    uint64_t e = offset + index;
    return ptl_philox4x32_10((uint32_t)e, (uint32_t)(e >> 32), (uint32_t)draw,
                             (uint32_t)(draw >> 32), (uint32_t)seed, (uint32_t)(seed >> 32));
}

/* A uniform double in [0, 1) with `bits` (at most 53) random bits from two words. */
PTL_HD static inline double
ptl_uniform_bits(uint32_t lo, uint32_t hi, int bits)
{
    uint64_t x = ((uint64_t)hi << 32 | lo) >> (64 - bits);
    return (double)x * (1.0 / (double)((uint64_t)1 << bits));
}

/* A uniform double in (0, 1]: never 0, so that log() stays finite. */
PTL_HD static inline double
ptl_uniform_open0(uint32_t lo, uint32_t hi)
{
    return 1.0 - ptl_uniform_bits(lo, hi, 53);
}

#endif
