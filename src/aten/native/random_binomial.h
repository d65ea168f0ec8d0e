/* random_binomial.h -- binomial's sampler (random_binomial.c, Note [Binomial sampling]) for
 * random.c's binomial kernel, which checks the arguments, broadcasts them to float64 and
 * reserves the generator's counters. */
#ifndef PTL_ATEN_NATIVE_RANDOM_BINOMIAL_H
#define PTL_ATEN_NATIVE_RANDOM_BINOMIAL_H

#include <stdint.h>

#include "../../c10/dtype.h"

/* out[i] ~ Binomial(count[i], prob[i]) for the elements of one call: out is float32 or
 * float64 (dt), count and prob contiguous float64 of out's size; element i draws from
 * counter offset + i of seed */
typedef struct PtlBinomialJob {
    const double *count, *prob;
    char *out;
    PtlDtype dt;
    uint64_t seed, offset;
} PtlBinomialJob;

/* The draws [b, e) of a binomial job (ctx: a const PtlBinomialJob *), the chunk function of
 * ptl_parallel_for.  Always 0. */
int ptl_binomial_range(void *ctx, int64_t b, int64_t e);

#endif
