/* igamma_density.c -- the CPU kernel of the hidden op _ptl_igamma_density, x^(a-1) e^-x /
 * Gamma(a), the derivative in x of igamma and igammac (their backward,
 * derivatives.yaml's igamma row).  Its formula is special_math.h's ptl_igamma_density_d (Note
 * [Incomplete gamma density]); here it runs on AVX2 / AVX-512 double lanes (Note [Incomplete
 * gamma density lanes]).  (a: [*sa], x: [*sx]) -> out: [broadcast(sa, sx)]. */
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "../../c10/cpu_features.h"
#include "../special_math.h"
#include "block_load.h"
#include "igamma_density.h"
#include "unary_loops.h"
#include "vec_math.h"

/* Note [Incomplete gamma density lanes]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * ptl_igamma_density_d element by element (libm's log, two exp and lgamma or Gamma*(a) each
 * time) made igamma's backward in x 0.5-0.9x PyTorch's speed in float64 and 0.3-0.6x in
 * float32 (docs/performance.md).  The lanes run its formulas with vec_math.h's log and exp
 * (about an ulp each, 1e-16 relative), with these differences:
 * - Below PTL_IGAMMA_DENSITY_STIRLING_A, a lane whose |(a - 1) log x| + |lgamma a| + x is at
 *   most DENSITY_PLAIN_MAX (32) sums its exponent in plain doubles: its few roundings, each
 *   at most 32 2^-53, bound the error by about 1.5e-14 (measured against mpmath: within
 *   5e-15, as with the double-double sum, whose error is lgamma's).  Other lanes take the double-double
 *   sum, with e^-x folded into one exponential (e^-x e^v differs only where e^v alone
 *   overflows, x < 1e-300, where e^-x is 1).
 * - a phi's series is a fixed polynomial to r^36 / 39 (r^2 <= 1/9 there, so what it leaves
 *   out is under 1e-18), as two chains in r^4; r = (x - a) / (x + a) comes from one
 *   reciprocal, not correctly rounded, as rl takes what r misses.
 * - e^(-a phi) is always taken in two halves.
 * - lgamma(a) (unary_special.c's float64 lanes) or sqrt(a / 2 pi) / Gamma*(a) is kept for the
 *   last a seen: a vector whose lanes all hold it (a broadcast operand, or a tensor of one
 *   value) skips it; any other computes it for its lanes.
 * Slow lanes take ptl_igamma_density_d itself: outside a > 0, a < inf, x < inf, x normal (its
 * special values; subnormal x, which the exponent split cannot take), x > 700 below the
 * Stirling form (e^-x in two halves), and x / a below the normal range.  Each lane's value
 * depends on its own a and x alone (a vector computes every form one of its lanes needs and
 * each lane keeps its own), and every dtype and layout goes through the same lanes (float64
 * contiguous data in place, the rest copied into blocks of doubles): the value of an element
 * does not depend on its neighbours, the layout, the block or the thread split, and float32,
 * float16 and bfloat16 round the float64 value (through float, as the portable loops do). */

/* the last a of the lanes and what they computed from it: lgamma(a), or sqrt(a / 2 pi) /
 * Gamma*(a) from PTL_IGAMMA_DENSITY_STIRLING_A */
typedef struct DensityRun {
    double a, k;
} DensityRun;

/* out[i] = the density at a[i], x[i] for i < n; out may be a or x */
typedef void (*DensityLanes)(const double *a, const double *x, double *out, int64_t n,
                             DensityRun *run);

static void
density_lanes_scalar(const double *a, const double *x, double *out, int64_t n, DensityRun *run)
{
    (void)run;
    for (int64_t i = 0; i < n; i++) {
        out[i] = ptl_igamma_density_d(a[i], x[i]);
    }
}

#ifdef PTL_HAVE_AVX2_KERNELS
/* the largest |(a - 1) log x| + |lgamma a| + x whose exponent the form below
 * PTL_IGAMMA_DENSITY_STIRLING_A sums in plain doubles (Note [Incomplete gamma density lanes]) */
#define DENSITY_PLAIN_MAX 32.0

/* ptl_igamma_gamma_star's series */
static const double density_gamma_star_coef[] = {PTL_IGAMMA_GAMMA_STAR_COEF};

/* log m's tail s^3 P(s^2) (ptl_log_m_dd) */
static const double density_log_tail_coef[] = {PTL_LOG_ATANH_TAIL_COEF};

/* a phi's series sum_k r^2k / (2k + 3) to k = 18 (r^2 <= 1/9 where it is used, so what is
 * left out is under 1e-18) as E(r^4) + r^2 O(r^4), two chains half as long: the even k's
 * and the odd k's coefficients, the highest power first */
static const double density_series_even[] = {1.0 / 39, 1.0 / 35, 1.0 / 31, 1.0 / 27, 1.0 / 23,
                                             1.0 / 19, 1.0 / 15, 1.0 / 11, 1.0 / 7,  1.0 / 3};
static const double density_series_odd[] = {1.0 / 37, 1.0 / 33, 1.0 / 29, 1.0 / 25, 1.0 / 21,
                                            1.0 / 17, 1.0 / 13, 1.0 / 9,  1.0 / 5};

/* The lanes of vector kind S (pd, pd512): density_small_S is the form below
 * PTL_IGAMMA_DENSITY_STIRLING_A, density_a_phi_S a phi as hi + *lo (ptl_igamma_a_phi),
 * density_vec_S one vector (slow lanes not yet patched, returned in *slow), density_lanes_S
 * the loop. */
#define DEFINE_DENSITY_LANES(S)                                                           \
    /* m in (sqrt(1/2), sqrt(2)] and k (in *k) with y = m 2^k, y positive and normal     \
     * (ptl_log_reduce_d) */                                                              \
    PTL_VATTR(S) static inline PTL_VT(S) density_log_reduce_##S(PTL_VT(S) y, PTL_VT(S) *k) \
    {                                                                                     \
        PTL_VT(S) e, m = ptl_vm_split_##S(y, &e);                                         \
        PTL_VMT(S) big = PTL_VCMP(S, m, PTL_V(S, set1)(1.4142135623730951), _CMP_GT_OQ);  \
        *k = PTL_VSEL(S, big, e, PTL_V(S, add)(e, PTL_V(S, set1)(1.0)));                  \
        return PTL_VSEL(S, big, m, PTL_V(S, mul)(m, PTL_V(S, set1)(0.5)));                \
    }                                                                                     \
    /* log y as *hi + the result, y positive and normal (ptl_log_split_d) */              \
    PTL_VATTR(S) static inline PTL_VT(S) density_log_split_##S(PTL_VT(S) y, PTL_VT(S) *hi) \
    {                                                                                     \
        PTL_VT(S) k, m = density_log_reduce_##S(y, &k);                                   \
        *hi = PTL_V(S, mul)(k, PTL_V(S, set1)(PTL_LN2_HI_32));                            \
        return PTL_V(S, fmadd)(k, PTL_V(S, set1)(PTL_LN2_LO_32), ptl_vm_log_normal_##S(m)); \
    }                                                                                     \
    /* log m as *hi + the result for m in [sqrt(1/2), sqrt(2)] (ptl_log_m_dd; s = f / u   \
     * by a product with 1 / u need not be rounded correctly: sl takes what it misses) */ \
    PTL_VATTR(S) static inline PTL_VT(S) density_log_m_dd_##S(PTL_VT(S) m, PTL_VT(S) *hi)  \
    {                                                                                     \
        PTL_VT(S) f = PTL_V(S, sub)(m, PTL_V(S, set1)(1.0)), ul;                          \
        PTL_VT(S) u = ptl_vm_two_sum_##S(PTL_V(S, set1)(2.0), f, &ul);                    \
        PTL_VT(S) inv = PTL_V(S, div)(PTL_V(S, set1)(1.0), u), s = PTL_V(S, mul)(f, inv); \
        PTL_VT(S) sl = PTL_V(S, mul)(                                                     \
            PTL_V(S, sub)(PTL_V(S, fnmadd)(s, u, f), PTL_V(S, mul)(s, ul)), inv);         \
        PTL_VT(S) z = PTL_V(S, mul)(s, s);                                                \
        *hi = PTL_V(S, add)(s, s);                                                        \
        return PTL_V(S, add)(PTL_V(S, add)(sl, sl),                                       \
                             PTL_V(S, mul)(PTL_V(S, mul)(s, z),                           \
                                           PTL_VM_POLY(S, z, density_log_tail_coef)));    \
    }                                                                                     \
    /* e^w, w = (a - 1) log x - lg - x, for x normal, x <= 700: in doubles on the lanes   \
     * where |(a - 1) log x| + |lg| + x is at most DENSITY_PLAIN_MAX, else w + wl in       \
     * double-doubles and e^w (1 + wl) (one exponential: e^-x e^v could only differ where  \
     * e^v alone overflows, x < 1e-300, where e^-x is 1) */                                \
    PTL_VATTR(S) static inline PTL_VT(S)                                                  \
        density_small_##S(PTL_VT(S) a, PTL_VT(S) x, PTL_VT(S) lg)                         \
    {                                                                                     \
        const PTL_VT(S) sign = PTL_V(S, set1)(-0.0);                                      \
        PTL_VT(S) lx = PTL_V(S, mul)(PTL_V(S, sub)(a, PTL_V(S, set1)(1.0)),               \
                                     ptl_vm_log_normal_##S(x));                           \
        PTL_VT(S) size = PTL_V(S, add)(                                                   \
            PTL_V(S, add)(PTL_V(S, andnot)(sign, lx), PTL_V(S, andnot)(sign, lg)), x);    \
        PTL_VMT(S) plain = PTL_VCMP(S, size, PTL_V(S, set1)(DENSITY_PLAIN_MAX), _CMP_LE_OQ); \
        PTL_VT(S) y = ptl_vm_exp_normal_##S(PTL_V(S, sub)(lx, PTL_V(S, add)(lg, x)));     \
        int nplain = PTL_VBITS(S, plain);                                                 \
        if (nplain == (1 << PTL_VLANES(S)) - 1) {                                         \
            return y;                                                                     \
        }                                                                                 \
        PTL_VT(S) ae, am1 = ptl_vm_two_sum_##S(a, PTL_V(S, set1)(-1.0), &ae), lh;         \
        PTL_VT(S) ll = density_log_split_##S(x, &lh);                                     \
        PTL_VT(S) p = PTL_V(S, mul)(am1, lh), q = PTL_V(S, mul)(am1, ll), e1, e2;         \
        PTL_VT(S) v = ptl_vm_two_sum_##S(ptl_vm_two_sum_##S(p, q, &e1),                   \
                                         PTL_V(S, sub)(PTL_V(S, setzero)(), lg), &e2);    \
        PTL_VT(S) vl = PTL_V(S, add)(                                                     \
            PTL_V(S, add)(PTL_V(S, add)(PTL_V(S, add)(e1, e2), PTL_V(S, fmsub)(am1, lh, p)), \
                          PTL_V(S, fmsub)(am1, ll, q)),                                   \
            PTL_V(S, mul)(ae, PTL_V(S, add)(lh, ll)));                                    \
        PTL_VT(S) e3, w = ptl_vm_two_sum_##S(v, PTL_V(S, sub)(PTL_V(S, setzero)(), x), &e3); \
        PTL_VT(S) yd = PTL_V(S, mul)(ptl_vm_exp_##S(w),                                   \
                                     PTL_V(S, add)(PTL_V(S, set1)(1.0), PTL_V(S, add)(vl, e3))); \
        return nplain == 0 ? yd : PTL_VSEL(S, plain, yd, y);                              \
    }                                                                                     \
    /* a phi = x - a - a log(x / a) as hi + *lo for a >= 10; the lanes where x / a is      \
     * below the normal range are or-ed into *slow */                                     \
    PTL_VATTR(S) static inline PTL_VT(S)                                                  \
        density_a_phi_##S(PTL_VT(S) a, PTL_VT(S) x, PTL_VT(S) *lo, PTL_VMT(S) *slow)      \
    {                                                                                     \
        const PTL_VT(S) half = PTL_V(S, set1)(0.5), zero = PTL_V(S, setzero)();           \
        PTL_VT(S) d = PTL_V(S, sub)(x, a), hd = PTL_V(S, mul)(half, d);                   \
        PTL_VMT(S) ser = PTL_VCMP(S, PTL_V(S, andnot)(PTL_V(S, set1)(-0.0), d),           \
                                  PTL_V(S, mul)(half, a), _CMP_LE_OQ);                    \
        int nser = PTL_VBITS(S, ser), full = (1 << PTL_VLANES(S)) - 1;                    \
        PTL_VT(S) hi = zero, e1, e2;                                                      \
        if (nser != 0) {                                                                  \
            PTL_VT(S) s = ptl_vm_two_sum_##S(PTL_V(S, mul)(half, x), PTL_V(S, mul)(half, a), \
                                             &e1);                                        \
            /* r = hd / s need not be rounded correctly: rl takes what it misses */       \
            PTL_VT(S) inv = PTL_V(S, div)(PTL_V(S, set1)(1.0), s), r = PTL_V(S, mul)(hd, inv); \
            PTL_VT(S) rl = PTL_V(S, mul)(                                                 \
                PTL_V(S, sub)(PTL_V(S, fnmadd)(r, s, hd), PTL_V(S, mul)(r, e1)), inv);    \
            PTL_VT(S) r2 = PTL_V(S, mul)(r, r), r4 = PTL_V(S, mul)(r2, r2);               \
            PTL_VT(S) sum = PTL_V(S, fmadd)(r2, PTL_VM_POLY(S, r4, density_series_odd),   \
                                            PTL_VM_POLY(S, r4, density_series_even));     \
            PTL_VT(S) p = PTL_V(S, mul)(r, d);                                            \
            PTL_VT(S) cubic = PTL_V(S, mul)(                                              \
                PTL_V(S, mul)(PTL_V(S, mul)(PTL_V(S, add)(r, r), r2), sum), a);           \
            hi = ptl_vm_two_sum_##S(p, PTL_V(S, sub)(zero, cubic), &e2);                  \
            *lo = PTL_V(S, add)(PTL_V(S, add)(e2, PTL_V(S, fmsub)(r, d, p)),              \
                                PTL_V(S, mul)(rl, d));                                    \
        }                                                                                 \
        if (nser != full) {                                                               \
            PTL_VT(S) lam = PTL_V(S, div)(x, a);                                          \
            PTL_VT(S) laml = PTL_V(S, div)(PTL_V(S, fnmadd)(lam, a, x), a), k, l1, e3, dle; \
            PTL_VMT(S) tiny = PTL_VCMP(S, lam, PTL_V(S, set1)(DBL_MIN), _CMP_NGE_UQ);     \
            /* the tiny lanes are slow: any normal value keeps their arithmetic quiet */  \
            lam = PTL_VSEL(S, tiny, lam, PTL_V(S, set1)(1.0));                            \
            PTL_VT(S) m = density_log_reduce_##S(lam, &k);                                \
            PTL_VT(S) l2 = PTL_V(S, add)(                                                 \
                density_log_m_dd_##S(m, &l1),                                             \
                PTL_V(S, fmadd)(k, PTL_V(S, set1)(PTL_LN2_LO_32), PTL_V(S, div)(laml, lam))); \
            PTL_VT(S) kh = PTL_V(S, mul)(k, PTL_V(S, set1)(PTL_LN2_HI_32));               \
            PTL_VT(S) p = PTL_V(S, mul)(a, kh), q1 = PTL_V(S, mul)(a, l1);                \
            PTL_VT(S) q2 = PTL_V(S, mul)(a, l2);                                          \
            PTL_VT(S) dl = ptl_vm_two_sum_##S(x, PTL_V(S, sub)(zero, a), &dle);           \
            PTL_VT(S) h = ptl_vm_two_sum_##S(                                             \
                ptl_vm_two_sum_##S(ptl_vm_two_sum_##S(dl, PTL_V(S, sub)(zero, p), &e1),   \
                                   PTL_V(S, sub)(zero, q1), &e2),                         \
                PTL_V(S, sub)(zero, q2), &e3);                                            \
            PTL_VT(S) hl = PTL_V(S, add)(PTL_V(S, add)(PTL_V(S, add)(e1, e2), e3), dle);  \
            hl = PTL_V(S, sub)(PTL_V(S, sub)(PTL_V(S, sub)(hl, PTL_V(S, fmsub)(a, kh, p)), \
                                             PTL_V(S, fmsub)(a, l1, q1)),                 \
                               PTL_V(S, fmsub)(a, l2, q2));                               \
            hi = PTL_VSEL(S, ser, h, hi);                                                 \
            *lo = nser != 0 ? PTL_VSEL(S, ser, hl, *lo) : hl;                             \
            *slow = PTL_VMOR(S, *slow, tiny);                                             \
        }                                                                                 \
        return hi;                                                                        \
    }                                                                                     \
    /* sqrt(a / 2 pi) e^(-a phi) / (Gamma*(a) x), c = sqrt(a / 2 pi) / Gamma*(a), with    \
     * e^(-a phi) in two halves (the product may be normal where e^(-a phi) is not), 0     \
     * from a phi = 2000 */                                                               \
    PTL_VATTR(S) static inline PTL_VT(S)                                                  \
        density_stirling_##S(PTL_VT(S) a, PTL_VT(S) x, PTL_VT(S) c, PTL_VMT(S) *slow)     \
    {                                                                                     \
        const PTL_VT(S) one = PTL_V(S, set1)(1.0), zero = PTL_V(S, setzero)();            \
        PTL_VT(S) lo, hi = density_a_phi_##S(a, x, &lo, slow);                            \
        PTL_VMT(S) live = PTL_VCMP(S, hi, PTL_V(S, set1)(2000.0), _CMP_LT_OQ);            \
        if (PTL_VBITS(S, live) == 0) {                                                    \
            return zero;                                                                  \
        }                                                                                 \
        PTL_VT(S) h = ptl_vm_exp_##S(PTL_V(S, mul)(PTL_V(S, set1)(-0.5), hi));            \
        PTL_VT(S) y = PTL_V(S, mul)(PTL_V(S, mul)(PTL_V(S, div)(PTL_V(S, mul)(h, c), x), h), \
                                    PTL_V(S, sub)(one, lo));                              \
        return PTL_VSEL(S, live, zero, y);                                                \
    }                                                                                     \
    /* lgamma(a) below PTL_IGAMMA_DENSITY_STIRLING_A (small), else sqrt(a / 2 pi) /      \
     * Gamma*(a); the last lane's value kept in *run */                                   \
    PTL_VATTR(S) static inline PTL_VT(S)                                                  \
        density_constants_##S(PTL_VT(S) a, PTL_VMT(S) small, DensityRun *run)             \
    {                                                                                     \
        double as[PTL_VLANES(S)], ks[PTL_VLANES(S)];                                      \
        /* each lane is set below; zeroed first for gcc -O1 (the sanitized build), which  \
         * cannot tell that one of the two branches always runs (-Wmaybe-uninitialized) */\
        PTL_VT(S) k = PTL_V(S, setzero)();                                                \
        PTL_V(S, storeu)(as, a);                                                          \
        if (PTL_VBITS(S, small) != 0) {                                                   \
            ptl_unary_special_map(PTL_SPECIAL_LGAMMA, 1, ks, as, PTL_VLANES(S));          \
            k = PTL_V(S, loadu)(ks);                                                      \
        }                                                                                 \
        if (PTL_VBITS(S, small) != (1 << PTL_VLANES(S)) - 1) {                            \
            PTL_VT(S) z = PTL_V(S, div)(PTL_V(S, set1)(1.0), PTL_V(S, mul)(a, a));        \
            PTL_VT(S) g = ptl_vm_exp_##S(                                                 \
                PTL_V(S, div)(PTL_VM_POLY(S, z, density_gamma_star_coef), a));            \
            PTL_VT(S) c = PTL_V(S, mul)(PTL_V(S, div)(PTL_V(S, set1)(0.3989422804014327), g), \
                                        PTL_V(S, sqrt)(a));                               \
            k = PTL_VBITS(S, small) != 0 ? PTL_VSEL(S, small, c, k) : c;                  \
        }                                                                                 \
        PTL_V(S, storeu)(ks, k);                                                          \
        run->a = as[PTL_VLANES(S) - 1];                                                   \
        run->k = ks[PTL_VLANES(S) - 1];                                                   \
        return k;                                                                         \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S)                                                  \
        density_vec_##S(PTL_VT(S) a, PTL_VT(S) x, DensityRun *run, PTL_VMT(S) *slow)      \
    {                                                                                     \
        const PTL_VT(S) inf = PTL_V(S, set1)(INFINITY);                                   \
        const int full = (1 << PTL_VLANES(S)) - 1;                                        \
        PTL_VT(S) k = PTL_V(S, set1)(run->k);                                             \
        PTL_VMT(S) small = PTL_VCMP(S, a, PTL_V(S, set1)(PTL_IGAMMA_DENSITY_STIRLING_A),  \
                                    _CMP_LT_OQ);                                          \
        if (PTL_VBITS(S, PTL_VCMP(S, a, PTL_V(S, set1)(run->a), _CMP_EQ_OQ)) != full) {   \
            k = density_constants_##S(a, small, run);                                     \
        }                                                                                 \
        *slow = PTL_VMOR(                                                                 \
            S,                                                                            \
            PTL_VMOR(S, PTL_VCMP(S, a, PTL_V(S, setzero)(), _CMP_NGT_UQ),                 \
                     PTL_VCMP(S, a, inf, _CMP_NLT_UQ)),                                   \
            PTL_VMOR(S, PTL_VCMP(S, x, PTL_V(S, set1)(DBL_MIN), _CMP_NGE_UQ),             \
                     PTL_VCMP(S, x, inf, _CMP_NLT_UQ)));                                  \
        *slow = PTL_VMOR(S, *slow, PTL_VMAND(S, small, PTL_VCMP(S, x, PTL_V(S, set1)(700.0), \
                                                                _CMP_GT_OQ)));            \
        int nsmall = PTL_VBITS(S, small);                                                 \
        if (nsmall == full) {                                                             \
            return density_small_##S(a, x, k);                                            \
        }                                                                                 \
        PTL_VT(S) y = density_stirling_##S(a, x, k, slow);                                \
        return nsmall == 0 ? y : PTL_VSEL(S, small, y, density_small_##S(a, x, k));       \
    }                                                                                     \
    /* one vector's m results into out, its slow lanes by ptl_igamma_density_d */         \
    PTL_VATTR(S) static inline void                                                       \
        density_put_##S(double *out, int m, PTL_VT(S) a, PTL_VT(S) x, PTL_VT(S) y,        \
                        PTL_VMT(S) slow)                                                  \
    {                                                                                     \
        double pa[PTL_VLANES(S)], px[PTL_VLANES(S)], po[PTL_VLANES(S)];                   \
        int bits = PTL_VBITS(S, slow);                                                    \
        if (m == PTL_VLANES(S) && bits == 0) {                                            \
            PTL_V(S, storeu)(out, y);                                                     \
            return;                                                                       \
        }                                                                                 \
        PTL_V(S, storeu)(pa, a);                                                          \
        PTL_V(S, storeu)(px, x);                                                          \
        PTL_V(S, storeu)(po, y);                                                          \
        for (int l = 0; l < m; l++) {                                                     \
            out[l] = bits & (1 << l) ? ptl_igamma_density_d(pa[l], px[l]) : po[l];        \
        }                                                                                 \
    }                                                                                     \
    /* the loop; the tail's missing lanes repeat its last element */                     \
    PTL_VATTR(S) static void                                                              \
        density_lanes_##S(const double *a, const double *x, double *out, int64_t n,       \
                          DensityRun *run)                                                \
    {                                                                                     \
        const int L = PTL_VLANES(S);                                                      \
        for (int64_t i = 0; i < n; i += L) {                                              \
            int m = n - i < L ? (int)(n - i) : L;                                         \
            PTL_VT(S) va, vx;                                                             \
            PTL_VMT(S) slow;                                                              \
            if (m == L) {                                                                 \
                va = PTL_V(S, loadu)(a + i);                                              \
                vx = PTL_V(S, loadu)(x + i);                                              \
            } else {                                                                      \
                double pa[PTL_VLANES(S)], px[PTL_VLANES(S)];                              \
                for (int l = 0; l < L; l++) {                                             \
                    pa[l] = a[i + (l < m ? l : m - 1)];                                   \
                    px[l] = x[i + (l < m ? l : m - 1)];                                   \
                }                                                                         \
                va = PTL_V(S, loadu)(pa);                                                 \
                vx = PTL_V(S, loadu)(px);                                                 \
            }                                                                             \
            PTL_VT(S) y = density_vec_##S(va, vx, run, &slow);                            \
            density_put_##S(out + i, m, va, vx, y, slow);                                 \
        }                                                                                 \
    }
DEFINE_DENSITY_LANES(pd)
DEFINE_DENSITY_LANES(pd512)
#undef DEFINE_DENSITY_LANES
#endif

/* the lanes of the widest vectors the CPU has */
static DensityLanes
density_lanes(void)
{
#ifdef PTL_HAVE_AVX2_KERNELS
    if (ptl_cpu_capability() >= PTL_CPU_AVX512) {
        return density_lanes_pd512;
    }
    if (ptl_cpu_capability() >= PTL_CPU_AVX2) {
        return density_lanes_pd;
    }
#endif
    return density_lanes_scalar;
}

/* elements a loop copies into doubles at a time */
#define DENSITY_BLOCK 256

/* The loop of dtype DT (tag TAG): float64 contiguous data straight through the lanes, the
 * rest through blocks of doubles (Note [Incomplete gamma density lanes]) */
#define DEFINE_DENSITY_LOOP(TAG, DT)                                                      \
    static void                                                                           \
    igamma_density_loop_##TAG(char **d, const int64_t *s, int64_t n, const void *extra)   \
    {                                                                                     \
        DensityLanes lanes = density_lanes();                                             \
        DensityRun run = {NAN, 0.0};                                                      \
        double a[DENSITY_BLOCK], x[DENSITY_BLOCK], o[DENSITY_BLOCK];                      \
        (void)extra;                                                                      \
        if ((DT) == PTL_DTYPE_FLOAT64 && s[0] == sizeof(double) &&                        \
            s[1] == sizeof(double) && s[2] == sizeof(double)) {                           \
            lanes((const double *)d[1], (const double *)d[2], (double *)d[0], n, &run);   \
            return;                                                                       \
        }                                                                                 \
        for (int64_t i = 0; i < n; i += DENSITY_BLOCK) {                                  \
            int64_t m = n - i < DENSITY_BLOCK ? n - i : DENSITY_BLOCK;                    \
            ptl_block_load_d[DT](d[1] + i * s[1], s[1], m, a);                            \
            ptl_block_load_d[DT](d[2] + i * s[2], s[2], m, x);                            \
            lanes(a, x, o, m, &run);                                                      \
            ptl_block_store_d[DT](d[0] + i * s[0], s[0], m, o);                           \
        }                                                                                 \
    }
DEFINE_DENSITY_LOOP(f2, PTL_DTYPE_FLOAT16)
DEFINE_DENSITY_LOOP(bf, PTL_DTYPE_BFLOAT16)
DEFINE_DENSITY_LOOP(f4, PTL_DTYPE_FLOAT32)
DEFINE_DENSITY_LOOP(f8, PTL_DTYPE_FLOAT64)
#undef DEFINE_DENSITY_LOOP

static const PtlLoop igamma_density_loops[PTL_DTYPE_COUNT] = {FLOAT_ENTRIES(igamma_density)};

int
ptl_igamma_density_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    static const int self_other[2] = {0, 1};
    double unused = 0;
    (void)ks;
    return ptl_pointwise(op, s, 2, self_other, ptl_iter_config(), igamma_density_loops,
                         &unused);
}
