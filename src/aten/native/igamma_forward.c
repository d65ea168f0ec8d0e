/* igamma_forward.c -- igamma's and igammac's forward on AVX2 / AVX-512 double lanes for
 * binary.c's igamma and igammac loops: special_math.h's Temme expansion (large a near x) and
 * the prefactor x^a e^-x / Gamma(a) of the series and the continued fraction (Note
 * [Incomplete gamma for large a], Note [Incomplete gamma forward lanes]).  PyTorch's
 * ATen/native/Math.h (calc_igamma, calc_igammac) runs its formulas per element. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../../c10/cpu_features.h"
#include "../special_math.h"
#include "igamma_forward.h"
#include "unary_loops.h"
#include "vec_math.h"
#include "unary_f8_erf.h"

/* Note [Incomplete gamma forward lanes]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * binary.c's blocks run the series and the continued fraction over many elements at once;
 * the rest was per element: ptl_igamma_temme (a loop for phi, 121 coefficients in nine rows,
 * libm's exp and erfc) made gammainc and gammaincc at a >= 100, |x - a| <= a / 2 0.5-0.65x
 * PyTorch's speed in float32, and ptl_igamma_prefactor (libm's log, exp and lgamma, or two
 * exp and a log from a = 100) 0.1-0.2x where a >= 1000 is far from x, whose answer is 0 or 1
 * (docs/performance.md).  Both run here on vector lanes, the same formulas with these
 * differences, each within a few ulps of the scalar one:
 * - vec_math.h's exp and log (about an ulp each), unary_f8_erf.h's erfc (1.45 ulps) and
 *   unary_special.c's float64 lgamma lanes for libm's;
 * - phi's series in r^2 is a fixed polynomial to r^36 / 39 (r^2 <= 1/9 in Temme's region, so
 *   what it leaves out is under 1e-18 of phi), in two chains (ptl_vm_poly_split), each row
 *   D_k(eta) in two chains too, and s / a as s (1 / a);
 * - from a = PTL_IGAMMA_LARGE_A the prefactor's e^(-a phi) is taken in two halves (normal
 *   wherever the prefactor is), not by e^(-a phi + log(a) / 2) below e^-700.
 * The prefactor's error is its exponent's rounding, (|a log x| + x + |lgamma a|) ulps below
 * a = 100 and a phi ulps above, as in the scalar code; Temme's lanes differ from
 * ptl_igamma_temme by at most 4e-13 relative, where P or Q is near e^-350 and both are
 * that far from mpmath (tests/aten/test_igamma_forward.py).  Lanes outside the
 * formulas' range take the scalar function: x (below a = 100) or x / a (above) below the
 * normal range.  A lane's value depends on its own a and x alone (the tail's missing lanes
 * repeat its last element), so not on the block, the layout or the thread split.  Without
 * AVX2 the elements take the scalar functions. */

#ifdef PTL_HAVE_AVX2_KERNELS
/* phi's series 1/3 + r^2/5 + r^4/7 + ... + r^36/39 in r^2, the highest power first */
static const double temme_phi_coef[] = {
    1.0 / 39, 1.0 / 37, 1.0 / 35, 1.0 / 33, 1.0 / 31, 1.0 / 29, 1.0 / 27, 1.0 / 25, 1.0 / 23,
    1.0 / 21, 1.0 / 19, 1.0 / 17, 1.0 / 15, 1.0 / 13, 1.0 / 11, 1.0 / 9,  1.0 / 7,  1.0 / 5,
    1.0 / 3};

/* the rows D_k(eta), k = 0..8, and their lengths (special_math.h's table) */
static const double temme_coef[] = {PTL_IGAMMA_TEMME_COEF};
static const int temme_len[] = {PTL_IGAMMA_TEMME_LEN};
#define TEMME_ROWS ((int)(sizeof(temme_len) / sizeof(temme_len[0])))

/* temme_vec_S: P or Q of one vector; temme_lanes_S: the loop */
#define DEFINE_TEMME_LANES(S)                                                             \
    DEFINE_VM_POLY_SPLIT(S)                                                               \
    DEFINE_UNARY_VEC_ERF_D(S)                                                             \
    /* the smaller side of P and Q (P below a, in *below) from a phi = ap, eta = eta */    \
    PTL_VATTR(S) static inline PTL_VT(S)                                                  \
        temme_side_##S(PTL_VT(S) a, PTL_VT(S) ap, PTL_VT(S) eta, PTL_VMT(S) below)        \
    {                                                                                     \
        const PTL_VT(S) sign = PTL_V(S, set1)(-0.0);                                      \
        /* s = sum_k D_k(eta) / a^k, the last row first */                                \
        PTL_VT(S) inv = PTL_V(S, div)(PTL_V(S, set1)(1.0), a), s = PTL_V(S, setzero)();   \
        int at = (int)PTL_VM_COUNT(temme_coef);                                           \
        for (int k = TEMME_ROWS - 1; k >= 0; k--) {                                       \
            at -= temme_len[k];                                                           \
            PTL_VT(S) dk = temme_len[k] == 1                                              \
                               ? PTL_V(S, set1)(temme_coef[at])                           \
                               : ptl_vm_poly_split_##S(eta, temme_coef + at,              \
                                                       (size_t)temme_len[k]);             \
            s = PTL_V(S, fmadd)(s, inv, dk);                                              \
        }                                                                                 \
        /* r = e^(-a phi) s / sqrt(2 pi a) (2.5066... = sqrt(2 pi)), y = |eta| sqrt(a / 2);  \
         * P = erfc(y) / 2 - r below a, Q = erfc(y) / 2 + r above */                      \
        PTL_VT(S) rt = PTL_V(S, div)(                                                     \
            PTL_V(S, mul)(ptl_vm_exp_##S(PTL_V(S, sub)(PTL_V(S, setzero)(), ap)), s),     \
            PTL_V(S, mul)(PTL_V(S, set1)(2.5066282746310002), PTL_V(S, sqrt)(a)));        \
        PTL_VT(S) y = PTL_V(S, mul)(PTL_V(S, andnot)(sign, eta),                          \
                                    PTL_V(S, sqrt)(PTL_V(S, mul)(PTL_V(S, set1)(0.5), a))); \
        return PTL_V(S, fmadd)(PTL_V(S, set1)(0.5), ptl_vm_erfcd_##S(y),                  \
                               PTL_VSEL(S, below, rt, PTL_V(S, xor)(rt, sign)));          \
    }                                                                                     \
    /* P (upper 0) or Q (upper 1) of one vector; the smaller side is 0 where a phi >      \
     * zero_from on every lane */                                                         \
    PTL_VATTR(S) static inline PTL_VT(S)                                                  \
        temme_vec_##S(PTL_VT(S) a, PTL_VT(S) x, int upper, double zero_from)              \
    {                                                                                     \
        const PTL_VT(S) one = PTL_V(S, set1)(1.0), zero = PTL_V(S, setzero)();            \
        /* phi = r mu - 2 r^3 (1/3 + r^2/5 + ...), mu = (x - a) / a (x - a exact), r =    \
         * mu / (2 + mu) (ptl_igamma_phi) */                                              \
        PTL_VT(S) d = PTL_V(S, sub)(x, a), mu = PTL_V(S, div)(d, a);                      \
        PTL_VT(S) r = PTL_V(S, div)(mu, PTL_V(S, add)(PTL_V(S, set1)(2.0), mu));          \
        PTL_VT(S) r2 = PTL_V(S, mul)(r, r);                                               \
        PTL_VT(S) ser = ptl_vm_poly_split_##S(r2, temme_phi_coef, PTL_VM_COUNT(temme_phi_coef)); \
        PTL_VT(S) phi = PTL_V(S, sub)(                                                    \
            PTL_V(S, mul)(r, mu), PTL_V(S, mul)(PTL_V(S, mul)(PTL_V(S, add)(r, r), r2), ser)); \
        PTL_VT(S) eta = PTL_V(S, or)(PTL_V(S, sqrt)(PTL_V(S, add)(phi, phi)),             \
                                     PTL_V(S, and)(PTL_V(S, set1)(-0.0), d));             \
        PTL_VT(S) ap = PTL_V(S, mul)(a, phi), side = zero;                                \
        PTL_VMT(S) below = PTL_VCMP(S, eta, zero, _CMP_LT_OQ);                            \
        if (PTL_VBITS(S, PTL_VCMP(S, ap, PTL_V(S, set1)(zero_from), _CMP_GT_OQ)) !=       \
            (1 << PTL_VLANES(S)) - 1) {                                                   \
            side = temme_side_##S(a, ap, eta, below);                                     \
        }                                                                                 \
        PTL_VT(S) other = PTL_V(S, sub)(one, side);                                       \
        /* P below a is the answer for igamma, Q above it for igammac */                  \
        return upper ? PTL_VSEL(S, below, side, other) : PTL_VSEL(S, below, other, side); \
    }                                                                                     \
    PTL_VATTR(S) static void temme_lanes_##S(const double *a, const double *x, double *out, \
                                             int64_t n, int upper, double zero_from)    \
    {                                                                                     \
        const int L = PTL_VLANES(S);                                                      \
        for (int64_t i = 0; i < n; i += L) {                                              \
            int m = n - i < L ? (int)(n - i) : L;                                         \
            if (m == L) {                                                                 \
                PTL_V(S, storeu)(out + i, temme_vec_##S(PTL_V(S, loadu)(a + i),           \
                                                        PTL_V(S, loadu)(x + i), upper,    \
                                                        zero_from));                      \
                continue;                                                                 \
            }                                                                             \
            double pa[PTL_VLANES(S)], px[PTL_VLANES(S)], po[PTL_VLANES(S)];               \
            for (int l = 0; l < L; l++) {                                                 \
                pa[l] = a[i + (l < m ? l : m - 1)];                                       \
                px[l] = x[i + (l < m ? l : m - 1)];                                       \
            }                                                                             \
            PTL_V(S, storeu)(po, temme_vec_##S(PTL_V(S, loadu)(pa), PTL_V(S, loadu)(px), upper, \
                                               zero_from));                               \
            for (int l = 0; l < m; l++) {                                                 \
                out[i + l] = po[l];                                                       \
            }                                                                             \
        }                                                                                 \
    }
DEFINE_TEMME_LANES(pd)
DEFINE_TEMME_LANES(pd512)
#undef DEFINE_TEMME_LANES
/* Stirling's series of log Gamma*(a) (ptl_igamma_gamma_star) */
static const double prefactor_gamma_star_coef[] = {PTL_IGAMMA_GAMMA_STAR_COEF};

/* prefactor_c_S: sqrt(a / 2 pi) / Gamma*(a); prefactor_vec_S: the prefactor of one vector,
 * k = lgamma(a) on the lanes below PTL_IGAMMA_LARGE_A and prefactor_c_S's above (the slow
 * lanes or-ed into *slow); prefactor_lanes_S: the loop, same: every a is a[0] (the
 * constants once) */
#define DEFINE_PREFACTOR_LANES(S)                                                         \
    PTL_VATTR(S) static inline PTL_VT(S) prefactor_c_##S(PTL_VT(S) a)                     \
    {                                                                                     \
        PTL_VT(S) z = PTL_V(S, div)(PTL_V(S, set1)(1.0), PTL_V(S, mul)(a, a));            \
        PTL_VT(S) g = ptl_vm_exp_##S(                                                     \
            PTL_V(S, div)(PTL_VM_POLY(S, z, prefactor_gamma_star_coef), a));              \
        return PTL_V(S, mul)(PTL_V(S, div)(PTL_V(S, set1)(0.3989422804014327), g),        \
                             PTL_V(S, sqrt)(a));                                          \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S)                                                  \
        prefactor_vec_##S(PTL_VT(S) a, PTL_VT(S) x, PTL_VT(S) k, PTL_VMT(S) *slow)        \
    {                                                                                     \
        const PTL_VT(S) one = PTL_V(S, set1)(1.0), normal = PTL_V(S, set1)(DBL_MIN);      \
        PTL_VMT(S) small = PTL_VCMP(S, a, PTL_V(S, set1)(PTL_IGAMMA_LARGE_A), _CMP_LT_OQ); \
        int nsmall = PTL_VBITS(S, small), full = (1 << PTL_VLANES(S)) - 1;                \
        PTL_VT(S) y = PTL_V(S, setzero)();                                                \
        *slow = PTL_VMAND(S, small, PTL_VCMP(S, x, normal, _CMP_LT_OQ));                  \
        if (nsmall != 0) {                                                                \
            /* e^(a log x - x - lgamma(a)), the exponent as u + ul: log x = k ln2_hi (exact) \
             * + k ln2_lo + log m, the products by fma, the sums by two-sums; the slow     \
             * lanes' x taken as 1 */                                                     \
            PTL_VT(S) e, m = ptl_vm_split_##S(PTL_VSEL(S, *slow, x, one), &e);            \
            PTL_VMT(S) big = PTL_VCMP(S, m, PTL_V(S, set1)(1.4142135623730951), _CMP_GT_OQ); \
            m = PTL_VSEL(S, big, m, PTL_V(S, mul)(m, PTL_V(S, set1)(0.5)));               \
            e = PTL_VSEL(S, big, e, PTL_V(S, add)(e, one));                               \
            PTL_VT(S) lh = PTL_V(S, mul)(e, PTL_V(S, set1)(PTL_LN2_HI_32));               \
            PTL_VT(S) ll = PTL_V(S, fmadd)(e, PTL_V(S, set1)(PTL_LN2_LO_32),              \
                                           ptl_vm_log_normal_##S(m));                     \
            PTL_VT(S) p = PTL_V(S, mul)(a, lh), q = PTL_V(S, mul)(a, ll), e1, e2, e3;     \
            PTL_VT(S) u = ptl_vm_two_sum_##S(                                             \
                ptl_vm_two_sum_##S(ptl_vm_two_sum_##S(p, q, &e1),                         \
                                   PTL_V(S, sub)(PTL_V(S, setzero)(), x), &e2),           \
                PTL_V(S, sub)(PTL_V(S, setzero)(), k), &e3);                              \
            PTL_VT(S) ul = PTL_V(S, add)(                                                 \
                PTL_V(S, add)(PTL_V(S, add)(e1, e2), e3),                                 \
                PTL_V(S, add)(PTL_V(S, fmsub)(a, lh, p), PTL_V(S, fmsub)(a, ll, q)));     \
            y = PTL_V(S, mul)(ptl_vm_exp_##S(u), PTL_V(S, add)(one, ul));                 \
        }                                                                                 \
        if (nsmall != full) {                                                             \
            /* sqrt(a / 2 pi) e^(-a phi) / Gamma*(a), phi = lam - 1 - log lam (|x - a| >   \
             * a / 2 outside Temme's region), e^(-a phi) in two halves */                 \
            PTL_VT(S) lam = PTL_V(S, div)(x, a);                                          \
            PTL_VMT(S) tiny = PTL_VCMP(S, lam, normal, _CMP_LT_OQ);                       \
            lam = PTL_VSEL(S, tiny, lam, one);                                            \
            PTL_VT(S) phi = PTL_V(S, sub)(PTL_V(S, sub)(lam, one), ptl_vm_log_normal_##S(lam)); \
            PTL_VT(S) h = ptl_vm_exp_##S(PTL_V(S, mul)(PTL_V(S, set1)(-0.5),              \
                                                       PTL_V(S, mul)(a, phi)));           \
            PTL_VT(S) big = PTL_V(S, mul)(PTL_V(S, mul)(h, k), h);                        \
            y = nsmall == 0 ? big : PTL_VSEL(S, small, big, y);                           \
            *slow = PTL_VMOR(S, *slow, PTL_VMAND(S, tiny, PTL_VCMP(S, a, PTL_V(S, set1)(  \
                                                    PTL_IGAMMA_LARGE_A), _CMP_GE_OQ)));   \
        }                                                                                 \
        return y;                                                                         \
    }                                                                                     \
    PTL_VATTR(S) static void prefactor_lanes_##S(const double *a, const double *x,        \
                                                 const double *lg, double *out, int64_t n, \
                                                 int same)                                \
    {                                                                                     \
        const int L = PTL_VLANES(S);                                                      \
        PTL_VT(S) c = same && n ? prefactor_c_##S(PTL_V(S, set1)(a[0])) : PTL_V(S, setzero)(); \
        for (int64_t i = 0; i < n; i += L) {                                              \
            int m = n - i < L ? (int)(n - i) : L;                                         \
            double pa[PTL_VLANES(S)], px[PTL_VLANES(S)], pl[PTL_VLANES(S)];               \
            double po[PTL_VLANES(S)];                                                     \
            const double *va_at = a + i, *vx_at = x + i, *vl_at = lg + i;                  \
            if (m < L) {   /* a full vector loads in place (copied, its loads stalled) */ \
                for (int l = 0; l < L; l++) {                                             \
                    pa[l] = a[i + (l < m ? l : m - 1)];                                   \
                    px[l] = x[i + (l < m ? l : m - 1)];                                   \
                    pl[l] = lg[i + (l < m ? l : m - 1)];                                  \
                }                                                                         \
                va_at = pa;                                                               \
                vx_at = px;                                                               \
                vl_at = pl;                                                               \
            }                                                                             \
            PTL_VMT(S) slow;                                                              \
            PTL_VT(S) va = PTL_V(S, loadu)(va_at), k = c;                                 \
            PTL_VMT(S) small = PTL_VCMP(S, va, PTL_V(S, set1)(PTL_IGAMMA_LARGE_A), _CMP_LT_OQ); \
            if (!same && PTL_VBITS(S, small) != (1 << PTL_VLANES(S)) - 1) {               \
                k = prefactor_c_##S(va);                                                  \
            }                                                                             \
            k = PTL_VSEL(S, small, k, PTL_V(S, loadu)(vl_at));                            \
            PTL_VT(S) y = prefactor_vec_##S(va, PTL_V(S, loadu)(vx_at), k, &slow);        \
            int bits = PTL_VBITS(S, slow);                                                \
            if (m == L && bits == 0) {                                                    \
                PTL_V(S, storeu)(out + i, y);                                             \
                continue;                                                                 \
            }                                                                             \
            PTL_V(S, storeu)(po, y);                                                      \
            for (int l = 0; l < m; l++) {                                                 \
                out[i + l] = bits & (1 << l) ? ptl_igamma_prefactor(va_at[l], vx_at[l])   \
                                             : po[l];                                     \
            }                                                                             \
        }                                                                                 \
    }
DEFINE_PREFACTOR_LANES(pd)
DEFINE_PREFACTOR_LANES(pd512)
#undef DEFINE_PREFACTOR_LANES
#endif

void
ptl_igamma_temme_lanes(const double *a, const double *x, double *out, int64_t n, int upper,
                       double zero_from)
{
#ifdef PTL_HAVE_AVX2_KERNELS
    if (ptl_cpu_capability() >= PTL_CPU_AVX512) {
        temme_lanes_pd512(a, x, out, n, upper, zero_from);
        return;
    }
    if (ptl_cpu_capability() >= PTL_CPU_AVX2) {
        temme_lanes_pd(a, x, out, n, upper, zero_from);
        return;
    }
#endif
    (void)zero_from;
    for (int64_t i = 0; i < n; i++) {
        out[i] = ptl_igamma_temme(a[i], x[i], upper);
    }
}

void
ptl_igamma_prefactor_lanes(const double *a, const double *x, double *out, int64_t n)
{
#ifdef PTL_HAVE_AVX2_KERNELS
    /* lgamma(a) for the lanes below PTL_IGAMMA_LARGE_A, if any, once for a run of one a (a
     * broadcast operand: the lanes' other constant once too); the other lanes do not use it */
    double lg[256];
    PtlCpuCapability cap = ptl_cpu_capability();
    if (cap >= PTL_CPU_AVX2) {
        for (int64_t i = 0; i < n; i += 256) {
            int64_t m = n - i < 256 ? n - i : 256, same = 1, small = 0;
            for (int64_t j = 0; j < m; j++) {
                same &= a[i + j] == a[i];
                small |= a[i + j] < PTL_IGAMMA_LARGE_A;
            }
            if (small) {
                (void)ptl_unary_special_map(PTL_SPECIAL_LGAMMA, 1, lg, a + i, same ? 1 : m);
                for (int64_t j = 1; same && j < m; j++) {
                    lg[j] = lg[0];
                }
            } else {
                memset(lg, 0, (size_t)m * sizeof(double));
            }
            if (cap >= PTL_CPU_AVX512) {
                prefactor_lanes_pd512(a + i, x + i, lg, out + i, m, (int)same);
            } else {
                prefactor_lanes_pd(a + i, x + i, lg, out + i, m, (int)same);
            }
        }
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++) {
        out[i] = ptl_igamma_prefactor(a[i], x[i]);
    }
}
