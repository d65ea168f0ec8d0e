/* distributions.h -- transformations of uniform numbers into the distributions of the
 * random ops, shared by the CPU kernels and future CUDA kernels (PTL_HD).  Mirrors
 * ATen/core/TransformationHelper.h and the samplers of ATen/native/Distributions.h.
 * See Note [Philox streams] in generator.h. */
#ifndef PTL_ATEN_DISTRIBUTIONS_H
#define PTL_ATEN_DISTRIBUTIONS_H

#include <math.h>
#include <stdint.h>

#include "philox.h"
#include "scalar_math.h"

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

/* A standard normal from the stream: the cosine half of a Box-Muller pair. */
PTL_HD static inline double
ptl_philox_next_normal(PtlPhiloxStream *s)
{
    double u1 = ptl_philox_next_uniform(s), u2 = 1.0 - ptl_philox_next_uniform(s);
    return ptl_box_muller(u1, u2, 0);
}

/* _standard_gamma: Gamma(alpha, 1) by Marsaglia and Tsang ("A simple method for generating
 * gamma variables", ACM TOMS 26, 2000): with d = alpha - 1/3 and c = 1 / sqrt(9 d), d v for
 * v = (1 + c z)^3, z standard normal, accepted by the squeeze u < 1 - 0.0331 z^4 or by
 * log u < z^2 / 2 + d (1 - v + log v).  alpha < 1 samples Gamma(alpha + 1) and scales it by
 * u^(1/alpha).  0 for alpha 0, nan for a negative or nan alpha. */
PTL_HD static inline double
ptl_sample_gamma(double alpha, PtlPhiloxStream *s)
{
    double scale = 1.0;
    if (!(alpha >= 0.0)) {
        return NAN;
    }
    if (alpha == 0.0) {
        return 0.0;
    }
    if (alpha < 1.0) {
        scale = pow(1.0 - ptl_philox_next_uniform(s), 1.0 / alpha);
        alpha += 1.0;
    }
    double d = alpha - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        double z, v;
        do {
            z = ptl_philox_next_normal(s);
            v = 1.0 + c * z;
        } while (v <= 0.0);
        v = v * v * v;
        double u = 1.0 - ptl_philox_next_uniform(s), z2 = z * z;
        if (u < 1.0 - 0.0331 * z2 * z2 || log(u) < 0.5 * z2 + d * (1.0 - v + log(v))) {
            return scale * d * v;
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

#endif
