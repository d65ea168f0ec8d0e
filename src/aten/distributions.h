/* distributions.h -- transformations of uniform numbers into the distributions of the
 * random ops, shared by the CPU kernels and future CUDA kernels (PTL_HD).  Mirrors
 * ATen/core/TransformationHelper.h and the samplers of ATen/native/Distributions.h.
 * See Note [Philox streams] in generator.h. */
#ifndef PTL_ATEN_DISTRIBUTIONS_H
#define PTL_ATEN_DISTRIBUTIONS_H

#include <math.h>
#include <stdint.h>

#include "philox.h"

#define PTL_PI 3.14159265358979323846

/* The uniform numbers of one element, taken two words (53 bits) at a time from the
 * blocks draw = 0, 1, 2... of its counter. */
typedef struct PtlPhiloxStream {
    uint64_t seed, offset, index, draw;
    PtlPhiloxBlock block;
    int used;   /* words of `block` already consumed; 4 = take a new block */
} PtlPhiloxStream;

PTL_HD static inline PtlPhiloxStream
ptl_philox_stream(uint64_t seed, uint64_t offset, uint64_t index)
{
    PtlPhiloxStream s;
    s.seed = seed;
    s.offset = offset;
    s.index = index;
    s.draw = 0;
    s.block.w[0] = s.block.w[1] = s.block.w[2] = s.block.w[3] = 0;
    s.used = 4;
    return s;
}

/* The next uniform double in [0, 1). */
PTL_HD static inline double
ptl_philox_next_uniform(PtlPhiloxStream *s)
{
    if (s->used == 4) {
        s->block = ptl_philox_draw(s->seed, s->offset, s->index, s->draw++);
        s->used = 0;
    }
    s->used += 2;
    return ptl_uniform_bits(s->block.w[s->used - 2], s->block.w[s->used - 1], 53);
}

/* uniform_: u in [0, 1) scaled to [from, to) */
PTL_HD static inline double
ptl_transform_uniform(double u, double from, double to)
{
    return u * (to - from) + from;
}

/* normal_: Box-Muller, a standard normal from u1 in [0, 1) (the angle) and u2 in (0, 1]
 * (the radius); slot 0 takes the cosine half of the pair, slot 1 the sine half. */
PTL_HD static inline double
ptl_box_muller(double u1, double u2, int slot)
{
    double r = sqrt(-2.0 * log(u2)), theta = 2.0 * PTL_PI * u1;
    return r * (slot == 0 ? cos(theta) : sin(theta));
}

/* ptl_box_muller in float, for float16/bfloat16/float32 results: u1 in [0, 1) and u2 in
 * (0, 1] carry 24 bits each (the tail stops at 5.8 sigma, as with PyTorch's float
 * uniforms) and the float functions cost half as much. */
PTL_HD static inline float
ptl_box_muller_f(float u1, float u2, int slot)
{
    float r = sqrtf(-2.0f * logf(u2)), theta = 2.0f * (float)PTL_PI * u1;
    return r * (slot == 0 ? cosf(theta) : sinf(theta));
}

/* exponential_: inverse CDF with u in (0, 1] */
PTL_HD static inline double
ptl_transform_exponential(double u, double lambd)
{
    return -log(u) / lambd;
}

/* cauchy_: inverse CDF with u in [0, 1) */
PTL_HD static inline double
ptl_transform_cauchy(double u, double median, double sigma)
{
    return median + sigma * tan(PTL_PI * (u - 0.5));
}

/* geometric_: trials up to the first success, P(k) = (1 - p)^(k - 1) p for k >= 1, by
 * inverse CDF with u in (0, 1] (u = 1 would give 0, hence the floor at 1) */
PTL_HD static inline double
ptl_transform_geometric(double u, double p)
{
    double k = ceil(log(u) / log1p(-p));
    return k < 1.0 ? 1.0 : k;
}

/* poisson: Knuth's multiplication method below rate 10; above, Hormann's transformed
 * rejection with squeeze (PTRS; "The transformed rejection method for generating Poisson
 * random variables", Insurance: Mathematics and Economics 12, 1993). */
PTL_HD static inline double
ptl_sample_poisson(double lambda, PtlPhiloxStream *s)
{
    if (lambda <= 0.0) {
        return 0.0;
    }
    if (lambda < 10.0) {
        double limit = exp(-lambda), prod = ptl_philox_next_uniform(s);
        double k = 0.0;
        while (prod > limit) {
            prod *= ptl_philox_next_uniform(s);
            k += 1.0;
        }
        return k;
    }
    double slam = sqrt(lambda), loglam = log(lambda);
    double b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
    double inv_alpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2.0);
    for (;;) {
        double u = ptl_philox_next_uniform(s) - 0.5, v = ptl_philox_next_uniform(s);
        double us = 0.5 - fabs(u);
        double k = floor((2.0 * a / us + b) * u + lambda + 0.43);
        if (us >= 0.07 && v <= vr) {
            return k;
        }
        if (k < 0.0 || (us < 0.013 && v > us)) {
            continue;
        }
        if (log(v) + log(inv_alpha) - log(a / (us * us) + b) <=
            -lambda + k * loglam - lgamma(k + 1.0)) {
            return k;
        }
    }
}

#endif
