/* distributions.h -- transformations of uniform numbers into the distributions of the
 * random ops, and the element of a random fill (PtlDistJob), shared by the CPU kernels
 * (native/random.c) and the CUDA kernels (src/cuda/random.cu): PTL_HD, one source for both
 * compilers.  Mirrors ATen/core/TransformationHelper.h and the samplers of
 * ATen/native/Distributions.h.  See Note [Philox streams] in generator.h and Note [Products
 * rounded apart] in c10/macros.h. */
#ifndef PTL_ATEN_DISTRIBUTIONS_H
#define PTL_ATEN_DISTRIBUTIONS_H

#include <math.h>
#include <stdint.h>

#include "../c10/dtype.h"
#include "philox.h"
#include "scalar_math.h"

#define PTL_PI 3.14159265358979323846

/* The uniform numbers of one element, taken two words (53 bits) at a time from the
 * blocks draw = 0, 1, 2... of its counter.  pre: the blocks 0 .. npre - 1 drawn already
 * (random_fill.c's poisson draws them eight elements at a time), or NULL. */
typedef struct PtlPhiloxStream {
    uint64_t seed, offset, index, draw;
    PtlPhiloxBlock block;
    int used;   /* words of `block` already consumed; 4 = take a new block */
    const PtlPhiloxBlock *pre;
    uint64_t npre;
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
    s.pre = NULL;
    s.npre = 0;
    return s;
}

/* The next uniform double in [0, 1). */
PTL_HD static inline double
ptl_philox_next_uniform(PtlPhiloxStream *s)
{
    if (s->used == 4) {
        s->block = s->draw < s->npre ? s->pre[s->draw]
                                     : ptl_philox_draw(s->seed, s->offset, s->index, s->draw);
        s->draw++;
        s->used = 0;
    }
    s->used += 2;
    return ptl_uniform_bits(s->block.w[s->used - 2], s->block.w[s->used - 1], 53);
}

/* uniform_: u in [0, 1) scaled to [from, to) */
PTL_HD static inline double
ptl_transform_uniform(double u, double from, double to)
{
    return PTL_DMUL_RN(u, to - from) + from;
}

/* The pair of ptl_box_muller for float64 results, z[0] the cosine's and z[1] the sine's,
 * with one log and one square root: u1 in [0, 1) and u2 in (0, 1] carry 53 bits each.  log
 * and the sine and cosine of 2 pi u1 are scalar_math.h's double formulas, whose vector twins
 * random_fill.c runs (Note [Vector Box-Muller]), so the CPU's vector and scalar loops and
 * the CUDA kernel give the same bits; each is within an ulp of the correctly rounded value
 * (libm's, which ptl_box_muller still calls, may differ from them in the last bit). */
PTL_HD static inline void
ptl_box_muller_pair(double u1, double u2, double *z)
{
    double r = sqrt(-2.0 * ptl_log_normal(u2)), s, c;
    ptl_sincos2pi(u1, &s, &c);
    z[0] = r * c;
    z[1] = r * s;
}

/* ptl_box_muller_pair in float, for float16/bfloat16/float32 results: u1 in [0, 1) and u2 in
 * (0, 1] carry 24 bits each (the tail stops at 5.8 sigma, as with PyTorch's float
 * uniforms).  log and the sine and cosine of 2 pi u1 are scalar_math.h's formulas, whose
 * vector twins random_fill.c runs (Note [Vector Box-Muller]), so the CPU's vector and scalar
 * loops and the CUDA kernel give the same bits; each is within an ulp of float64 math. */
PTL_HD static inline void
ptl_box_muller_f(float u1, float u2, double *z)
{
    float r = sqrtf(-2.0f * ptl_logf_normal(u2)), s, c;
    ptl_sincos2pif(u1, &s, &c);
    z[0] = (double)(r * c);
    z[1] = (double)(r * s);
}

/* exponential_: inverse CDF with u in (0, 1] (2^-53 apart, so positive and normal): log is
 * scalar_math.h's ptl_log_normal, whose vector twin random_fill.c runs, so that the vector
 * and scalar loops and the CUDA kernel give the same bits */
PTL_HD static inline double
ptl_transform_exponential(double u, double lambd)
{
    return -ptl_log_normal(u) / lambd;
}

/* cauchy_: inverse CDF with u in [0, 1): tan(pi (u - 1/2)) as the sine over the cosine of
 * 2 pi (u - 1/2) / 2 (exact arguments) by scalar_math.h's ptl_sincos2pi, whose vector twin
 * random_fill.c runs (u = 0 gives -inf: the cosine of -pi / 2 is 0 there) */
PTL_HD static inline double
ptl_transform_cauchy(double u, double median, double sigma)
{
    double s, c;
    ptl_sincos2pi((u - 0.5) * 0.5, &s, &c);
    return median + PTL_DMUL_RN(sigma, s / c);
}

/* geometric_: trials up to the first success, P(k) = (1 - p)^(k - 1) p for k >= 1, by
 * inverse CDF with u in (0, 1] (u = 1 would give 0, hence the floor at 1); log(u) as
 * ptl_transform_exponential takes it */
PTL_HD static inline double
ptl_transform_geometric(double u, double p)
{
    double k = ceil(ptl_log_normal(u) / log1p(-p));
    return k < 1.0 ? 1.0 : k;
}

/* Stirling's series correction of log k!: lgamma(k + 1) - [(k + 1/2) log(k + 1) - (k + 1) +
 * log(2 pi) / 2] for a whole k >= 0, about 1 / (12 (k + 1)).  From k = 64 on it is the series
 * 1/12x - 1/360x^3 + 1/1260x^5 in x = k + 1 (the next term, 1/1680x^7, is below 1.3e-16
 * there); below, lgamma less the rest, whose terms (under 270) leave an error below 1e-13.
 * The acceptance tests of BTRS and PTRS at huge counts take log k! from it (Note [Binomial
 * sampling] in native/random_binomial.c). */
PTL_HD static inline double
ptl_stirling_tail(double k)
{
    double x = k + 1.0;
    if (k < 64.0) {
        return lgamma(x) - (k + 0.5) * log(x) + x - 0.91893853320467274178;
    }
    double r2 = 1.0 / (x * x);
    return (1.0 / 12.0 - r2 * (1.0 / 360.0 - r2 / 1260.0)) / x;
}

/* poisson: Knuth's multiplication method below rate 10; above, Hormann's transformed
 * rejection with squeeze (PTRS; "The transformed rejection method for generating Poisson
 * random variables", Insurance: Mathematics and Economics 12, 1993).  What depends on the
 * rate alone is a PtlPoissonRate, so that a fill whose rates repeat computes it once
 * (random_fill.c); the same operations either way, so the same values.
 *
 * PTRS accepts k when log v' <= -lambda + k log lambda - log k!, whose terms are near
 * lambda log lambda: at rate 1e15 (3.5e16) their rounding leaves an error of several units in
 * a difference of order one, and 2e5 draws at rate 1e16 had 1.43 times the variance.  From
 * rate 2^24 on (below it the error stays within a few 1e-7) the bound is the same quantity with
 * log k! written by Stirling (ptl_stirling_tail) and d = k + 1 - lambda:
 * d - (k + 1/2) log1p(d / lambda) - log(2 pi lambda) / 2 - tail(k), terms of order
 * sqrt(lambda) whose rounding costs about 1e-16 sqrt(lambda).  Below 2^24 the values are
 * those of the lgamma form, bit for bit. */
#define PTL_POISSON_STIRLING_RATE 16777216.0
typedef struct PtlPoissonRate {
    double lambda;
    double limit;                                   /* below 10: e^-lambda */
    double slam, loglam, b, a, inv_alpha, vr, log_inv_alpha;   /* 10 and above */
    double half_log_2pi_lambda;                     /* PTL_POISSON_STIRLING_RATE and above */
} PtlPoissonRate;

PTL_HD static inline PtlPoissonRate
ptl_poisson_rate(double lambda)
{
    PtlPoissonRate r;
    r.lambda = lambda;
    r.limit = r.slam = r.loglam = r.b = r.a = r.inv_alpha = r.vr = r.log_inv_alpha = 0.0;
    r.half_log_2pi_lambda = 0.0;
    if (lambda > 0.0 && lambda < 10.0) {
        r.limit = exp(-lambda);
    }
    else if (lambda >= 10.0) {
        r.slam = sqrt(lambda);
        r.loglam = log(lambda);
        r.b = 0.931 + 2.53 * r.slam;
        r.a = -0.059 + 0.02483 * r.b;
        r.inv_alpha = 1.1239 + 1.1328 / (r.b - 3.4);
        r.vr = 0.9277 - 3.6224 / (r.b - 2.0);
        r.log_inv_alpha = log(r.inv_alpha);
        r.half_log_2pi_lambda = 0.91893853320467274178 + 0.5 * r.loglam;
    }
    return r;
}

PTL_HD static inline double
ptl_sample_poisson_rate(const PtlPoissonRate *r, PtlPhiloxStream *s)
{
    const double lambda = r->lambda;
    if (lambda <= 0.0) {
        return 0.0;
    }
    if (lambda < 10.0) {
        double prod = ptl_philox_next_uniform(s);
        double k = 0.0;
        while (prod > r->limit) {
            prod *= ptl_philox_next_uniform(s);
            k += 1.0;
        }
        return k;
    }
    const double a = r->a, b = r->b;
    for (;;) {
        double u = ptl_philox_next_uniform(s) - 0.5, v = ptl_philox_next_uniform(s);
        double us = 0.5 - fabs(u);
        double k = floor((2.0 * a / us + b) * u + lambda + 0.43);
        if (us >= 0.07 && v <= r->vr) {
            return k;
        }
        if (k < 0.0 || (us < 0.013 && v > us)) {
            continue;
        }
        double d = k + 1.0 - lambda;
        double bound = lambda < PTL_POISSON_STIRLING_RATE
                           ? -lambda + k * r->loglam - lgamma(k + 1.0)
                           : d - (k + 0.5) * log1p(d / lambda) - r->half_log_2pi_lambda -
                                 ptl_stirling_tail(k);
        if (log(v) + r->log_inv_alpha - log(a / (us * us) + b) <= bound) {
            return k;
        }
    }
}

PTL_HD static inline double
ptl_sample_poisson(double lambda, PtlPhiloxStream *s)
{
    PtlPoissonRate r = ptl_poisson_rate(lambda);
    return ptl_sample_poisson_rate(&r, s);
}

/* A standard normal from the stream: the cosine half of the float64 Box-Muller pair
 * (ptl_box_muller_pair) of its next two uniforms, u1 the angle and 1 - u2 the radius. */
PTL_HD static inline double
ptl_philox_next_normal(PtlPhiloxStream *s)
{
    double u1 = ptl_philox_next_uniform(s), u2 = 1.0 - ptl_philox_next_uniform(s), z[2];
    ptl_box_muller_pair(u1, u2, z);
    return z[0];
}

/* _standard_gamma: Gamma(alpha, 1) by Marsaglia and Tsang ("A simple method for generating
 * gamma variables", ACM TOMS 26, 2000): with d = alpha - 1/3 and c = 1 / sqrt(9 d), d v for
 * v = (1 + c z)^3, z standard normal, accepted by the squeeze u < 1 - 0.0331 z^4 or by
 * log u < z^2 / 2 + d (1 - v + log v).  alpha < 1 samples Gamma(alpha + 1) and scales it by
 * u^(1/alpha), u drawn after the accepted try.  As PyTorch's: 0 for alpha 0, for a nan
 * alpha and where d is not positive (alpha <= -2/3); an alpha in (-2/3, 0) goes through the
 * same steps (alpha + 1 sampled, u^(1/alpha) above 1).  Note [Gamma draws in vectors]: a
 * try takes its normal from draw k (words 0-1 the angle, 2-3 the radius) and its u from
 * words 0-1 of draw k + 1, so a first try accepted takes draws 0 and 1 alone (and
 * u^(1/alpha) words 2-3 of draw 1); the logs and the normal are scalar_math.h's formulas
 * with vector twins, and every product that feeds an add is rounded apart, so random_fill.c's
 * vector first try (gamma_range) gives these bits. */
PTL_HD static inline double
ptl_gamma_scale(double alpha, PtlPhiloxStream *s)
{
    return alpha < 1.0 ? pow(1.0 - ptl_philox_next_uniform(s), 1.0 / alpha) : 1.0;
}

PTL_HD static inline double
ptl_sample_gamma(double alpha, PtlPhiloxStream *s)
{
    double a = alpha < 1.0 ? alpha + 1.0 : alpha;
    double d = a - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    if (alpha == 0.0 || !(d > 0.0)) {
        return 0.0;
    }
    for (;;) {
        double z, v;
        do {
            z = ptl_philox_next_normal(s);
            v = 1.0 + PTL_DMUL_RN(c, z);
        } while (v <= 0.0);
        v = v * v * v;
        double u = 1.0 - ptl_philox_next_uniform(s), z2 = z * z;
        if (u < 1.0 - PTL_DMUL_RN(PTL_DMUL_RN(0.0331, z2), z2) ||
            ptl_log_normal(u) <
                PTL_DMUL_RN(0.5, z2) + PTL_DMUL_RN(d, (1.0 - v) + ptl_log_normal(v))) {
            return ptl_gamma_scale(alpha, s) * d * v;
        }
    }
}

/* _standard_gamma_grad: dx/dalpha of a Gamma(alpha, 1) sample x held at its quantile, by
 * implicit differentiation of the CDF P(alpha, x): dx/dalpha = -(dP/dalpha) / (dP/dx).
 * P(a, x) = sum_k x^(a+k) e^-x / Gamma(a+k+1), so term by term
 * dP/da = sum_k x^(a+k) e^-x / Gamma(a+k+1) (ln x - psi(a+k+1)), and dP/dx, the density
 * x^(a-1) e^-x / Gamma(a), divides out of each term:
 *     dx/da = -sum_k exp((k+1) ln x + lgamma(a) - lgamma(a+k+1)) (ln x - psi(a+k+1)).
 * The terms grow up to k ~ x - a and then fall; the sum stops once past that peak a term is
 * below 1e-17 of the sum of magnitudes.  The terms change sign, so the relative error
 * grows like 1e-16 / density: negligible in the bulk, visible only far in the upper tail. */
PTL_HD static inline double
ptl_standard_gamma_grad(double a, double x)
{
    if (!(a > 0.0) || !(x >= 0.0)) {
        return NAN;
    }
    if (x == 0.0 || isinf(x)) {
        return x;
    }
    double lx = log(x), lt = lx - log(a), psi = ptl_digamma_d(a + 1.0);
    double sum = 0.0, mag = 0.0;
    for (int64_t k = 0; k < 100000000; k++) {
        double t = exp(lt), term = t * (lx - psi);
        sum += term;
        mag += fabs(term);
        if ((double)k > x - a && fabs(term) <= 1e-17 * mag) {
            break;
        }
        double next = a + (double)k + 1.0;
        lt += lx - log(next);
        psi += 1.0 / next;
    }
    return -sum;
}

/* _dirichlet_grad: for x ~ Beta(a, b), b = total - a held fixed, the derivative of x in a at
 * a fixed quantile over 1 - x:  -(dI_x(a, b)/da) / density / (1 - x), the factor by which
 * a Dirichlet sample's backward scales g - sum(x g) (pytorchlite/distributions/dirichlet.py).
 * I_x(a, b) = x^a (1-x)^b / (a B(a, b)) sum_n t_n with t_n = (a+b)_n / (a+1)_n x^n, and the
 * prefactor over the density is x (1 - x) / a, so term by term
 *     result = -(x / a) sum_n t_n (ln x - 1/a - psi(a) + psi(a+b)
 *                                  + sum_{k<n} (1/(a+b+k) - 1/(a+1+k))).
 * Above the mean a / (a + b) the series runs in y = 1 - x through I_x(a, b) = 1 - I_y(b, a):
 *     result = (x / b) sum_n s_n (ln x - psi(a) + psi(a+b) + sum_{k<n} 1/(a+b+k)),
 * s_n = (a+b)_n / (b+1)_n y^n.  Either way the terms fall from the first once n passes
 * ((a+b) z - c - 1) / (1 - z) (z the series variable, c = a or b), and the sum stops once a
 * term is below 1e-17 of the sum of magnitudes.  PyTorch approximates the same quantity
 * piecewise.  0 at x = 0; nan outside 0 <= x <= 1 or for a, b not positive. */
PTL_HD static inline double
ptl_dirichlet_grad(double x, double a, double total)
{
    double b = total - a;
    if (!(a > 0.0) || !(b > 0.0) || !(x >= 0.0 && x <= 1.0)) {
        return NAN;
    }
    if (x == 0.0) {
        return 0.0;
    }
    int upper = x > a / (a + b);
    double z = upper ? 1.0 - x : x, c = upper ? b : a;
    double peak = ((a + b) * z - c - 1.0) / (1.0 - z);
    double t = 1.0, d = log(x) + ptl_digamma_d(a + b) - ptl_digamma_d(a) - (upper ? 0.0 : 1.0 / a);
    double sum = 0.0, mag = 0.0;
    for (int64_t n = 0; n < 100000000; n++) {
        double term = t * d;
        sum += term;
        mag += fabs(term);
        if ((double)n > peak && t * (fabs(d) + 1.0) <= 1e-17 * mag) {
            break;
        }
        double ab = a + b + (double)n;
        t *= ab / (c + 1.0 + (double)n) * z;
        d += 1.0 / ab - (upper ? 0.0 : 1.0 / (a + 1.0 + (double)n));
    }
    return upper ? x / b * sum : -x / a * sum;
}

/* ---- one element of a random fill (random.c's kernels and random.cu's) ---- */

/* What a PtlDistJob draws. */
typedef enum PtlDistKind {
    PTL_DIST_UNIFORM,
    PTL_DIST_NORMAL,
    PTL_DIST_LOG_NORMAL,
    PTL_DIST_EXPONENTIAL,
    PTL_DIST_CAUCHY,
    PTL_DIST_GEOMETRIC,
    PTL_DIST_BERNOULLI,
    PTL_DIST_POISSON,
    PTL_DIST_GAMMA,    /* floored at b, the dtype's smallest normal number */
    PTL_DIST_RANDOM,   /* integers from + [0, range) (range 0: all 2^64 values) */
} PtlDistKind;

/* A fill of the n elements of the contiguous buffer `out` (dtype dt): element i is a
 * function of (seed, offset, i) alone (Note [Philox streams]).  Plain data, so that it is
 * a kernel parameter; pa and pb live where out does. */
typedef struct PtlDistJob {
    int32_t kind, dt;
    int32_t bits;          /* PTL_DIST_UNIFORM: random bits of dt's mantissa */
    int32_t block_shift;   /* log2 of the elements per Philox block (ptl_dist_block_shift) */
    uint64_t seed, offset;
    char *out;
    int64_t n;
    double a, b;            /* the parameters (mean/std, from/to, lambda, p...) */
    const double *pa, *pb;  /* per-element a and b (float64, n each), or NULL: the scalars */
    int64_t from;           /* PTL_DIST_RANDOM */
    uint64_t range;
    /* captured in a CUDA graph: where seed and the base of offset are read at run time,
     * offset being the launch's offset in the graph; NULL eagerly (Note [Graph-safe
     * Philox] in philox.h) */
    const uint64_t *seed_ptr, *offset_ptr;
} PtlDistJob;

/* log2 of the elements per Philox block (Note [Philox streams]): 2 (four elements) when an
 * element needs one 32-bit word, 1 when it needs 64 bits (or, for normals, when the two
 * halves of one Box-Muller pair go to elements 2k and 2k+1), 0 for rejection samplers that
 * draw their own blocks. */
PTL_HD static inline int32_t
ptl_dist_block_shift(const PtlDistJob *j)
{
    switch (j->kind) {
    case PTL_DIST_UNIFORM:
        return j->bits <= 24 ? 2 : 1;
    case PTL_DIST_BERNOULLI:
        return 2;
    case PTL_DIST_RANDOM:
        return j->range != 0 && j->range <= ((uint64_t)1 << 32) ? 2 : 1;
    case PTL_DIST_POISSON:
    case PTL_DIST_GAMMA:
        return 0;
    default:
        return 1;
    }
}

/* j with the seed and offset it draws from when it runs: a kernel thread's first step, so
 * that a launch captured in a CUDA graph draws fresh numbers at each replay. */
PTL_HD static inline PtlDistJob
ptl_dist_job_unpack(const PtlDistJob *j)
{
    PtlDistJob u = *j;
    ptl_philox_unpack(&u.seed, &u.offset, j->seed_ptr, j->offset_ptr);
    u.seed_ptr = u.offset_ptr = NULL;
    return u;
}

/* The block a run of elements is reading, so that the elements sharing it compute it once
 * (and, for normals, the Box-Muller pair of block `pair`). */
typedef struct PtlDistCursor {
    int64_t block, pair;
    PtlPhiloxBlock b;
    double z[2];
} PtlDistCursor;

PTL_HD static inline PtlDistCursor
ptl_dist_cursor(void)
{
    PtlDistCursor c;
    c.block = c.pair = -1;
    c.b.w[0] = c.b.w[1] = c.b.w[2] = c.b.w[3] = 0;
    c.z[0] = c.z[1] = 0.0;
    return c;
}

/* The words of element i: its word (4 per block) or its two words (2 per block) in lo/hi;
 * returns its slot in the block. */
PTL_HD static inline int
ptl_dist_element_words(const PtlDistJob *j, PtlDistCursor *c, int64_t i, uint32_t *lo,
                       uint32_t *hi)
{
    int64_t blk = i >> j->block_shift;
    int slot = (int)(i & ((1 << j->block_shift) - 1));
    if (blk != c->block) {
        c->b = ptl_philox_draw(j->seed, j->offset, (uint64_t)blk, 0);
        c->block = blk;
    }
    if (j->block_shift == 2) {
        *lo = c->b.w[slot];
        *hi = 0;
    }
    else {
        *lo = c->b.w[2 * slot];
        *hi = c->b.w[2 * slot + 1];
    }
    return slot;
}

/* Element i of a PTL_DIST_RANDOM job. */
PTL_HD static inline int64_t
ptl_dist_random_value(const PtlDistJob *j, PtlDistCursor *c, int64_t i)
{
    uint32_t lo, hi;
    ptl_dist_element_words(j, c, i, &lo, &hi);
    uint64_t x = (uint64_t)hi << 32 | lo;
    if (j->range == 0) {
        return (int64_t)x;
    }
    return (int64_t)((uint64_t)j->from + x % j->range);
}

/* Element i of the job's distribution (any kind but PTL_DIST_RANDOM), as a double. */
PTL_HD static inline double
ptl_dist_value(const PtlDistJob *j, PtlDistCursor *c, int64_t i)
{
    double a = j->pa ? j->pa[i] : j->a, b = j->pb ? j->pb[i] : j->b;
    uint32_t lo, hi;
    int slot;
    if (j->kind == PTL_DIST_POISSON) {
        PtlPhiloxStream st = ptl_philox_stream(j->seed, j->offset, (uint64_t)i);
        return ptl_sample_poisson(a, &st);
    }
    if (j->kind == PTL_DIST_GAMMA) {
        PtlPhiloxStream st = ptl_philox_stream(j->seed, j->offset, (uint64_t)i);
        double x = ptl_sample_gamma(a, &st);
        return x < b ? b : x;
    }
    if (j->kind == PTL_DIST_NORMAL || j->kind == PTL_DIST_LOG_NORMAL) {
        slot = ptl_dist_element_words(j, c, i, &lo, &hi);
        if (c->pair != c->block && j->dt == PTL_DTYPE_FLOAT64) {
            double u1 = ptl_uniform_bits(c->b.w[0], c->b.w[1], 53);
            double u2 = ptl_uniform_open0(c->b.w[2], c->b.w[3]);
            ptl_box_muller_pair(u1, u2, c->z);
            c->pair = c->block;
        }
        else if (c->pair != c->block) {
            float u1 = (float)(c->b.w[0] >> 8) * 0x1p-24f;
            float u2 = 1.0f - (float)(c->b.w[2] >> 8) * 0x1p-24f;
            ptl_box_muller_f(u1, u2, c->z);
            c->pair = c->block;
        }
        double v = a + PTL_DMUL_RN(b, c->z[slot]);
        return j->kind == PTL_DIST_NORMAL ? v : exp(v);
    }
    ptl_dist_element_words(j, c, i, &lo, &hi);
    /* one word: 32 random bits; two words: 53 */
    double u = j->block_shift == 2 ? (double)lo * (1.0 / 4294967296.0)
                                   : ptl_uniform_bits(lo, hi, 53);
    switch (j->kind) {
    case PTL_DIST_UNIFORM:
        /* dt's mantissa bits, so that u is exact in dt and stays below 1 */
        if (j->block_shift == 2) {
            u = (double)(lo >> (32 - j->bits)) * (1.0 / (double)(1u << j->bits));
        }
        return ptl_transform_uniform(u, a, b);
    case PTL_DIST_EXPONENTIAL:
        return ptl_transform_exponential(1.0 - u, a);
    case PTL_DIST_CAUCHY:
        return ptl_transform_cauchy(u, a, b);
    case PTL_DIST_GEOMETRIC:
        return ptl_transform_geometric(1.0 - u, a);
    default:   /* PTL_DIST_BERNOULLI */
        return u < a ? 1.0 : 0.0;
    }
}

/* double -> int64, saturating (geometric_ can exceed the int64 range) */
PTL_HD static inline int64_t
ptl_dist_sat_i64(double v)
{
    return v >= 9.2233720368547758e18 ? INT64_MAX : v <= -9.2233720368547758e18 ? INT64_MIN
                                                                                 : (int64_t)v;
}

/* Stores element i of the job into out, converted to dt (the job's dtype): the double of
 * ptl_dist_value (integers through a saturating int64), or the int64 of a PTL_DIST_RANDOM
 * job (exact in every integer dtype).  Always inlined, so that a CPU loop that passes a
 * constant dt gets one store and no switch (random.c's dist_range). */
PTL_HD static inline __attribute__((always_inline)) void
ptl_dist_store(const PtlDistJob *j, PtlDistCursor *c, int64_t i, int32_t dt)
{
    char *o = j->out;
    if (j->kind == PTL_DIST_RANDOM) {
        int64_t v = ptl_dist_random_value(j, c, i);
        switch (dt) {
        case PTL_DTYPE_BOOL: ((uint8_t *)o)[i] = (uint8_t)(v != 0); break;
        case PTL_DTYPE_UINT8: ((uint8_t *)o)[i] = (uint8_t)v; break;
        case PTL_DTYPE_INT8: ((int8_t *)o)[i] = (int8_t)v; break;
        case PTL_DTYPE_INT16: ((int16_t *)o)[i] = (int16_t)v; break;
        case PTL_DTYPE_INT32: ((int32_t *)o)[i] = (int32_t)v; break;
        case PTL_DTYPE_INT64: ((int64_t *)o)[i] = v; break;
        case PTL_DTYPE_FLOAT16: ((ptl_half *)o)[i] = ptl_f_to_half((float)v); break;
        case PTL_DTYPE_BFLOAT16: ((ptl_bf16 *)o)[i] = ptl_f_to_bf16((float)v); break;
        case PTL_DTYPE_FLOAT32: ((float *)o)[i] = (float)v; break;
        default: ((double *)o)[i] = (double)v; break;
        }
        return;
    }
    double v = ptl_dist_value(j, c, i);
    switch (dt) {
    case PTL_DTYPE_BOOL: ((uint8_t *)o)[i] = (uint8_t)(v != 0); break;
    case PTL_DTYPE_UINT8: ((uint8_t *)o)[i] = (uint8_t)ptl_dist_sat_i64(v); break;
    case PTL_DTYPE_INT8: ((int8_t *)o)[i] = (int8_t)ptl_dist_sat_i64(v); break;
    case PTL_DTYPE_INT16: ((int16_t *)o)[i] = (int16_t)ptl_dist_sat_i64(v); break;
    case PTL_DTYPE_INT32: ((int32_t *)o)[i] = (int32_t)ptl_dist_sat_i64(v); break;
    case PTL_DTYPE_INT64: ((int64_t *)o)[i] = ptl_dist_sat_i64(v); break;
    case PTL_DTYPE_FLOAT16: ((ptl_half *)o)[i] = ptl_f_to_half((float)v); break;
    case PTL_DTYPE_BFLOAT16: ((ptl_bf16 *)o)[i] = ptl_f_to_bf16((float)v); break;
    case PTL_DTYPE_FLOAT32: ((float *)o)[i] = (float)v; break;
    default: ((double *)o)[i] = v; break;
    }
}

/* The elements [blk k, min((blk + 1) k, n)) of Philox block blk (k = 2^block_shift): one
 * CUDA thread's work in random.cu, so that a block's words are computed once.  j is
 * unpacked (ptl_dist_job_unpack). */
PTL_HD static inline void
ptl_dist_fill_block(const PtlDistJob *j, int64_t blk)
{
    PtlDistCursor c = ptl_dist_cursor();
    int64_t b = blk << j->block_shift, e = b + ((int64_t)1 << j->block_shift);
    for (int64_t i = b; i < (e < j->n ? e : j->n); i++) {
        ptl_dist_store(j, &c, i, j->dt);
    }
}

#endif
