/* random_binomial.c -- binomial's sampler: Binomial(n, p) draws by inversion or Hormann's
 * BTRS (Note [Binomial sampling]), element by element, for random.c's binomial kernel
 * (random_binomial.h).  Mirrors sample_binomial of ATen/native/Distributions.h.  Element i
 * draws from its own Philox stream (Note [Philox streams] in generator.h), so threads may
 * split the elements any way. */
#include <math.h>
#include <stdint.h>

#include "../distributions.h"
#include "random_binomial.h"

/* Note [Binomial sampling]
 * ~~~~~~~~~~~~~~~~~~~~~~~~
 * binomial(count, prob) draws element i from its own Philox stream (offset + i, Note
 * [Philox streams]), so any split over threads gives the same values.  With q = min(p,
 * 1 - p) and n = floor(count), a mean n q below 10 is sampled by inversion (walking the
 * pmf from (1 - q)^n by its ratio, expected n q + 1 steps), a larger one by Hormann's BTRS
 * (transformed rejection with squeeze, "The generation of binomial random variates",
 * 1993), about 1.2 pairs of uniforms a draw at any n; a draw for 1 - p is mirrored.  The
 * edges follow PyTorch: count <= 0 or prob <= 0 give 0, prob >= 1 gives count itself
 * (unfloored).  PyTorch never returns for a NaN count or prob; we return NaN.  BTRS's exact
 * test, which takes lgamma(k + 1) and lgamma(n - k + 1) of whole numbers, keeps them for
 * the rest of its thread's range (log_factorial), in two direct-mapped tables (slot k mod
 * BINOMIAL_MEMO, tagged with its k), one for k and one for n - k: the same values, and draws
 * near n q keep theirs at any n.  100000 draws of Binomial(50, 0.3), whose squeeze passes
 * under half of them, take 7.5 -> 5.9 ms, 0.99 -> 1.26x PyTorch's time (one thread, CPU
 * time; lgamma was a fifth of it); Binomial(10000, 0.3) 1.02 -> 1.11x.
 *
 * Huge counts.  The exact test compares log v' with h - log k! - log (n - k)! + (k - m)
 * log(q / (1 - q)), h = log m! + log (n - m)!, terms near n log n (3.5e16 at n = 1e15) whose
 * rounding leaves an error of several units in a difference of order one: 2e5 draws of
 * Binomial(1e15, 0.3) had 0.84 times the variance n p q, of Binomial(1e17, 0.5) 3.3 times
 * (PyTorch's own form, log ratios times n + 1, drifts too: 1.12 times at 1e17).  From n =
 * BINOMIAL_STIRLING_COUNT on, every log j! is (j + 1/2) log(j + 1) - (j + 1) + log(2 pi) / 2
 * + tail(j) (Stirling's series correction, ptl_stirling_tail in distributions.h); the linear
 * and constant parts cancel exactly, and with d = k - m the bound is
 *   tail(m) + tail(n - m) - tail(k) - tail(n - k) - (m + 1/2) log1p(d / (m + 1))
 *     - (n - m + 1/2) log1p(-d / (n - m + 1)) + d log(q (n - k + 1) / ((1 - q) (k + 1))),
 * terms of order d (about sqrt(n p q)) whose rounding costs some 1e-16 |d| (3e-8 at 1e17
 * against mpmath; the lgamma form's was 260): the spacing of the doubles near n q over the
 * standard deviation, so the test is as fine as the draws' own grid.  Inversion's
 * (1 - q)^n becomes exp(n log1p(-q)) there too: 1 - q rounds to 1 for q below 1.1e-16, so
 * Binomial(1e17, 1e-17) was always 0.  Below the threshold the lgamma form's error stays
 * within a few 1e-7 and its memo is kept, so those draws are bit for bit the same as before.
 * Above 2^53 not every whole number is a double: k is BTRS's continuous variate rounded to
 * the nearest double (floor does nothing there), so a draw is the binomial value rounded
 * to the double grid (spacing 16 at 1e17, against a standard deviation of 1.6e8), as exact
 * as the output type allows; PyTorch runs the same arithmetic and returns such doubles too. */
#define BINOMIAL_MEMO 1024   /* slots of each table; a power of 2 */
#define BINOMIAL_STIRLING_COUNT 16777216.0   /* 2^24: Stirling's form of the test from here */
typedef struct LogFactorial { double k, value; } LogFactorial;   /* a slot; k < 0: empty */

/* What draws of Binomial(n, q), q <= 1/2, need from n and q alone: BTRS's constants, or
 * inversion's pmf at 0 and odds ratio; set up once for a run of equal parameters. */
typedef struct BinomialPlan {
    double n, q;
    int btrs, stirling;                             /* stirling: n >= BINOMIAL_STIRLING_COUNT */
    double ratio, p0;                               /* inversion */
    double a, b, c, vr, alpha, lpq, m, h, tails;    /* BTRS; tails: stirling's h */
} BinomialPlan;

static void
binomial_plan(BinomialPlan *pl, double n, double q)
{
    pl->n = n;
    pl->q = q;
    pl->btrs = n * q >= 10.0;
    pl->stirling = n >= BINOMIAL_STIRLING_COUNT;
    if (!pl->btrs) {
        pl->ratio = q / (1.0 - q);
        pl->p0 = pl->stirling ? exp(n * log1p(-q)) : pow(1.0 - q, n);
        return;
    }
    double spq = sqrt(n * q * (1.0 - q));
    pl->b = 1.15 + 2.53 * spq;
    pl->a = -0.0873 + 0.0248 * pl->b + 0.01 * q;
    pl->c = n * q + 0.5;
    pl->vr = 0.92 - 4.2 / pl->b;
    pl->alpha = (2.83 + 5.1 / pl->b) * spq;
    pl->lpq = log(q / (1.0 - q));
    pl->m = floor((n + 1.0) * q);
    if (pl->stirling) {
        pl->tails = ptl_stirling_tail(pl->m) + ptl_stirling_tail(n - pl->m);
    }
    else {
        pl->h = lgamma(pl->m + 1.0) + lgamma(n - pl->m + 1.0);
    }
}

/* lgamma(k + 1) for a whole k >= 0, from `table` (BINOMIAL_MEMO slots) when its slot holds k */
static double
log_factorial(double k, LogFactorial *table)
{
    LogFactorial *slot = &table[(int64_t)k & (BINOMIAL_MEMO - 1)];
    if (slot->k != k) {
        *slot = (LogFactorial){k, lgamma(k + 1.0)};
    }
    return slot->value;
}

/* log f(k) - log f(m) of f, the pmf of Binomial(n, q), in Stirling's form (Note [Binomial
 * sampling]: huge counts).  Kept out of binomial_btrs: inlined there, it made 100000 draws of
 * Binomial(50, 0.3), which never take it, 16% slower (5.9 -> 6.9 ms). */
__attribute__((noinline)) static double
binomial_stirling_bound(const BinomialPlan *pl, double k)
{
    double n = pl->n, m = pl->m, d = k - m;
    return pl->tails - ptl_stirling_tail(k) - ptl_stirling_tail(n - k) -
           (m + 0.5) * log1p(d / (m + 1.0)) - (n - m + 0.5) * log1p(-d / (n - m + 1.0)) +
           d * log(pl->q * (n - k + 1.0) / ((1.0 - pl->q) * (k + 1.0)));
}

/* BTRS: transformed rejection, most draws accepted by the squeeze without a log; memo:
 * log_factorial's two tables (k's, then n - k's) */
static double
binomial_btrs(const BinomialPlan *pl, PtlPhiloxStream *st, LogFactorial *memo)
{
    for (;;) {
        double u = ptl_philox_next_uniform(st) - 0.5, v = ptl_philox_next_uniform(st);
        double us = 0.5 - fabs(u), k = floor((2.0 * pl->a / us + pl->b) * u + pl->c);
        if (k < 0.0 || k > pl->n) {
            continue;
        }
        if (us >= 0.07 && v <= pl->vr) {
            return k;
        }
        v = log(v * pl->alpha / (pl->a / (us * us) + pl->b));
        if (pl->stirling ? v <= binomial_stirling_bound(pl, k)
                         : v <= pl->h - log_factorial(k, memo) -
                                    log_factorial(pl->n - k, memo + BINOMIAL_MEMO) +
                                    (k - pl->m) * pl->lpq) {
            return k;
        }
    }
}

/* Inversion: the smallest k whose cdf reaches a uniform */
static double
binomial_inversion(const BinomialPlan *pl, PtlPhiloxStream *st)
{
    double u = ptl_philox_next_uniform(st), pk = pl->p0, k = 0.0;
    while (u > pk && k < pl->n) {
        u -= pk;
        k += 1.0;
        pk *= pl->ratio * (pl->n - k + 1.0) / k;
    }
    return k;
}

/* One Binomial(count, p) draw (Note [Binomial sampling]); pl: the plan of the last draw,
 * set up again when n or q differ; memo: log_factorial's */
static double
binomial_draw(double count, double p, BinomialPlan *pl, PtlPhiloxStream *st, LogFactorial *memo)
{
    if (isnan(count) || isnan(p)) {
        return NAN;
    }
    if (count <= 0.0 || p <= 0.0) {
        return 0.0;
    }
    if (p >= 1.0 || isinf(count)) {
        return count;
    }
    double n = floor(count), q = p <= 0.5 ? p : 1.0 - p;
    if (n != pl->n || q != pl->q) {
        binomial_plan(pl, n, q);
    }
    double k = pl->btrs ? binomial_btrs(pl, st, memo) : binomial_inversion(pl, st);
    return p <= 0.5 ? k : n - k;
}

int
ptl_binomial_range(void *ctx, int64_t b, int64_t e)
{
    const PtlBinomialJob *j = ctx;
    BinomialPlan plan = {.n = -1.0};
    LogFactorial memo[2 * BINOMIAL_MEMO];          /* log_factorial's tables: k, n - k */
    for (int k = 0; k < 2 * BINOMIAL_MEMO; k++) {
        memo[k].k = -1.0;
    }
    for (int64_t i = b; i < e; i++) {
        PtlPhiloxStream st = ptl_philox_stream(j->seed, j->offset, (uint64_t)i);
        double v = binomial_draw(j->count[i], j->prob[i], &plan, &st, memo);
        if (j->dt == PTL_DTYPE_FLOAT32) {
            ((float *)j->out)[i] = (float)v;
        }
        else {
            ((double *)j->out)[i] = v;
        }
    }
    return 0;
}
