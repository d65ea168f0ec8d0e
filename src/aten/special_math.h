/* special_math.h -- scalar formulas of the inverse hyperbolic functions, erfc, hypot,
 * nextafter, gcd/lcm, frexp, the modified Bessel functions I0 and I1 (and their exponentially
 * scaled forms) and the regularized incomplete gamma functions, shared by the CPU loops
 * (native/unary.c, native/binary.c) and the CUDA kernels (src/cuda/elementwise.cu): PTL_HD
 * marks them __host__ __device__ under nvcc, so the CPU tests check the GPU's math.  Mirrors
 * the scalar code of ATen/native/Math.h (calc_i0, calc_igamma, ...), written from the series
 * and continued fractions rather than Cephes' Chebyshev tables.  See Note [Bessel and
 * incomplete gamma] in docs/decisions.md. */
#ifndef PTL_ATEN_SPECIAL_MATH_H
#define PTL_ATEN_SPECIAL_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../c10/dtype.h"
#include "../c10/macros.h"

/* ---- one-line wrappers, so that both compilers call the same function ---- */

PTL_HD static inline double ptl_acosh_d(double x) { return acosh(x); }
PTL_HD static inline float ptl_acosh_f(float x) { return acoshf(x); }
PTL_HD static inline double ptl_asinh_d(double x) { return asinh(x); }
PTL_HD static inline float ptl_asinh_f(float x) { return asinhf(x); }
PTL_HD static inline double ptl_atanh_d(double x) { return atanh(x); }
PTL_HD static inline float ptl_atanh_f(float x) { return atanhf(x); }
PTL_HD static inline double ptl_erfc_d(double x) { return erfc(x); }
PTL_HD static inline float ptl_erfc_f(float x) { return erfcf(x); }
PTL_HD static inline double ptl_hypot_d(double a, double b) { return hypot(a, b); }
PTL_HD static inline float ptl_hypot_f(float a, float b) { return hypotf(a, b); }
PTL_HD static inline double ptl_nextafter_d(double a, double b) { return nextafter(a, b); }
PTL_HD static inline float ptl_nextafter_f(float a, float b) { return nextafterf(a, b); }

/* nextafter for the 16-bit floats (float16, bfloat16: sign and magnitude bits, like the
 * wide formats): the bits of the neighbour of a (bits `ab`, value `a`) towards b (value b,
 * bits bb), NaN (bits 0x7e00 or 0x7fc0, the caller's `nan`) when either is NaN. */
PTL_HD static inline uint16_t
ptl_nextafter_bits16(uint16_t ab, float a, uint16_t bb, float b, uint16_t nan)
{
    if (a != a || b != b) {
        return nan;
    }
    if (a == b) {
        return bb;
    }
    if (a == 0.0f) {   /* the smallest subnormal with b's sign */
        return (uint16_t)((bb & 0x8000u) | 1u);
    }
    /* away from zero when b lies beyond a on a's side of zero */
    return (uint16_t)(((a < b) == (a > 0.0f)) ? ab + 1u : ab - 1u);
}

/* nextafter in float16 and bfloat16, on the bits */
PTL_HD static inline ptl_half
ptl_nextafter_f2(ptl_half a, ptl_half b)
{
    ptl_half r;
    r.x = ptl_nextafter_bits16(a.x, ptl_half_to_f(a), b.x, ptl_half_to_f(b), 0x7e00u);
    return r;
}

PTL_HD static inline ptl_bf16
ptl_nextafter_bf(ptl_bf16 a, ptl_bf16 b)
{
    ptl_bf16 r;
    r.x = ptl_nextafter_bits16(a.x, ptl_bf16_to_f(a), b.x, ptl_bf16_to_f(b), 0x7fc0u);
    return r;
}

/* gcd(a, b) >= 0 by Euclid's algorithm on the magnitudes (|INT64_MIN| wraps to itself, as
 * in PyTorch); lcm(a, b) = |a / gcd * b|, 0 when both are 0. */
PTL_HD static inline int64_t
ptl_gcd_i(int64_t a, int64_t b)
{
    uint64_t x = a < 0 ? 0 - (uint64_t)a : (uint64_t)a;
    uint64_t y = b < 0 ? 0 - (uint64_t)b : (uint64_t)b;
    while (y != 0) {
        uint64_t r = x % y;
        x = y;
        y = r;
    }
    return (int64_t)x;
}

PTL_HD static inline int64_t
ptl_lcm_i(int64_t a, int64_t b)
{
    int64_t g = ptl_gcd_i(a, b);
    if (g == 0) {
        return 0;
    }
    uint64_t m = (uint64_t)(a / g) * (uint64_t)b;
    return (int64_t)m < 0 ? (int64_t)(0 - m) : (int64_t)m;
}

/* frexp: x = mantissa * 2^exponent with 0.5 <= |mantissa| < 1; zeros, infinities and NaN
 * keep their value with exponent 0.  The float version is exact in double. */
PTL_HD static inline double
ptl_frexp_mantissa_d(double x)
{
    int e;
    return frexp(x, &e);
}

PTL_HD static inline int32_t
ptl_frexp_exponent_d(double x)
{
    int e = 0;
    if (isfinite(x)) {
        (void)frexp(x, &e);
    }
    return (int32_t)e;
}

/* ---- the modified Bessel functions of the first kind, orders 0 and 1 ----
 *
 * |x| <= 30: the power series sum_k (x/2)^(2k+n) / (k! (k+n)!), all terms positive, summed
 * in double-double (a pair hi + lo, products and quotients exact through fma), so the
 * result is the sum rounded once: in double the recurrence's ~60 roundings cost up to
 * 11 ulps near |x| = 30.  |x| > 30: the asymptotic series e^|x| / sqrt(2 pi |x|)
 * sum_k c_k |x|^-k with c_k = c_(k-1) ((2k-1)^2 - 4n^2) / (8k), whose smallest term at
 * |x| = 30 is below 1e-25, so it stops at 1e-17. */
#define PTL_BESSEL_SERIES_MAX 30.0

typedef struct PtlDoubleDouble {
    double hi, lo;
} PtlDoubleDouble;

/* hi + lo with |lo| <= ulp(hi) / 2, given |a| >= |b| */
PTL_HD static inline PtlDoubleDouble
ptl_dd_quick_sum(double a, double b)
{
    PtlDoubleDouble r;
    r.hi = a + b;
    r.lo = b - (r.hi - a);
    return r;
}

/* a + b, both nonnegative (the series' terms) */
PTL_HD static inline PtlDoubleDouble
ptl_dd_add(PtlDoubleDouble a, PtlDoubleDouble b)
{
    double s = a.hi + b.hi, bb = s - a.hi;
    double err = (a.hi - (s - bb)) + (b.hi - bb) + a.lo + b.lo;
    return ptl_dd_quick_sum(s, err);
}

/* a * b, and a / b for a double b */
PTL_HD static inline PtlDoubleDouble
ptl_dd_mul(PtlDoubleDouble a, PtlDoubleDouble b)
{
    double p = a.hi * b.hi;
    return ptl_dd_quick_sum(p, fma(a.hi, b.hi, -p) + a.hi * b.lo + a.lo * b.hi);
}

PTL_HD static inline PtlDoubleDouble
ptl_dd_div(PtlDoubleDouble a, double b)
{
    double q = a.hi / b;
    return ptl_dd_quick_sum(q, (fma(-q, b, a.hi) + a.lo) / b);
}

/* the power series of I_n(|x|) (n 0 or 1) without the sign */
PTL_HD static inline double
ptl_bessel_i_series(int n, double ax)
{
    double h = 0.5 * ax;
    PtlDoubleDouble q = {h * h, fma(h, h, -(h * h))};   /* (x/2)^2 exactly */
    PtlDoubleDouble t = {n == 0 ? 1.0 : h, 0.0}, sum = t;
    for (int k = 1; k < 200; k++) {
        t = ptl_dd_div(ptl_dd_mul(t, q), (double)k * (double)(k + n));
        sum = ptl_dd_add(sum, t);
        if (t.hi <= sum.hi * 1e-18) {
            break;
        }
    }
    return sum.hi + sum.lo;
}

/* e^-|x| I_n(|x|) by the asymptotic series (|x| > PTL_BESSEL_SERIES_MAX) */
PTL_HD static inline double
ptl_bessel_ie_asymptotic(int n, double ax)
{
    double t = 1.0, sum = 1.0, nu = 4.0 * (double)(n * n);
    for (int k = 1; k < 60; k++) {
        double odd = (double)(2 * k - 1);
        t *= (odd * odd - nu) / (8.0 * (double)k * ax);
        sum += t;
        if (fabs(t) <= fabs(sum) * 1e-17) {
            break;
        }
    }
    /* sqrt(2 pi |x|) overflows above DBL_MAX / (2 pi): the two roots apart there */
    return sum / (ax < 1e300 ? sqrt(2.0 * 3.14159265358979323846 * ax)
                             : 2.5066282746310002 * sqrt(ax));
}

/* Note [Special functions at the infinities]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * At x = +-inf the Bessel functions J0, J1, Y0, Y1 (bessel_math.h), the Airy function Ai,
 * the modified Bessel functions I0, I1 (i0, special_i1, modified_bessel_i0 and _i1), zeta(s,
 * +inf) (scalar_math.h, and polygamma of order 2 and up through it) and trigamma(-inf) are
 * NaN, in every dtype and on every device: the values of PyTorch's float32 and float64
 * kernels (Cephes' fits, whose inf * 0 or sin(inf) gives NaN) and of SciPy's j0, j1, y0, y1,
 * airy, i0, i1 (NumPy's i0 too).  Our kernels had given the limits (0, +-inf) in both dtypes;
 * the non-finite sweep against PyTorch (tests/aten/test_nonfinite_vs_torch.py) then had to
 * leave these ops out whole.  The limits are not wrong for I0 (+inf) and zeta(s, +inf) (0,
 * SciPy's value), but no reference we test against gives them, and NaN says that the
 * kernel evaluated no formula there.  trigamma(-inf) has no limit (a pole at each negative
 * integer): NaN is the value, PyTorch's.  Kept as PyTorch's: the scaled forms i0e, i1e and
 * K(+inf), K's scaled forms and the spherical j0 are 0 at the infinities, trigamma(+inf) is
 * 0, zeta(1, q) inf and zeta(s, -inf) inf (a pole, as every non-positive integer q). */

/* I_n(x) (scaled 0: the function; 1: e^-|x| I_n(x)); I1 is odd; NaN at +-inf unscaled
 * (Note [Special functions at the infinities]) */
PTL_HD static inline double
ptl_bessel_i(int n, double x, int scaled)
{
    double ax = fabs(x), v;
    if (x != x) {
        return x;
    }
    if (ax <= PTL_BESSEL_SERIES_MAX) {
        v = ptl_bessel_i_series(n, ax);
        v = scaled ? v * exp(-ax) : v;
    }
    else if (isinf(ax)) {
        return scaled ? copysign(0.0, n == 1 ? x : 1.0) : NAN;
    }
    else {
        v = ptl_bessel_ie_asymptotic(n, ax);
        if (!scaled) {   /* e^(|x|/2) twice: e^|x| alone overflows before I0 does */
            double h = exp(0.5 * ax);
            v = v * h * h;
        }
    }
    return n == 1 ? copysign(v, x) : v;
}

PTL_HD static inline double ptl_i0_d(double x) { return ptl_bessel_i(0, x, 0); }
PTL_HD static inline double ptl_i0e_d(double x) { return ptl_bessel_i(0, x, 1); }
PTL_HD static inline double ptl_i1_d(double x) { return ptl_bessel_i(1, x, 0); }
PTL_HD static inline double ptl_i1e_d(double x) { return ptl_bessel_i(1, x, 1); }

/* ---- the regularized incomplete gamma functions P(a, x) (igamma) and Q(a, x) = 1 - P
 * (igammac), a, x >= 0 ----
 *
 * Note [Incomplete gamma for large a]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * a >= 100 and |x - a| <= a / 2: Temme's uniform asymptotic expansion (DiDonato and Morris
 * use it too).  With phi = x/a - 1 - log(x/a) and eta = sign(x - a) sqrt(2 phi),
 *     Q = erfc(eta sqrt(a/2)) / 2 + e^(-a phi) / sqrt(2 pi a) sum_k D_k(eta) / a^k,
 * the D_k power series in eta (the table below, printed by tools/igamma_temme_coef.py, whose
 * docstring derives it; 9 rows suffice from a = 100 for |eta| <= 0.63, which |x - a| <= a/2
 * keeps).  The smaller of P and Q comes from this, the other by subtraction.  Elsewhere: P by
 * its series e^-x x^a / Gamma(a) sum_n x^n / (a (a+1) ... (a+n)) for x < a + 1, else Q by
 * Legendre's continued fraction (modified Lentz), each side's complement by subtraction,
 * which loses nothing there since the computed one is below ~0.6.  Outside the expansion's
 * region both loops stop within about 60 steps for a >= 100 (the series needs ~8 sqrt(a)
 * steps at x = a: truncated at 100000 it gave gammainc(1e9, 1e9) = 0.4992 for 0.500004).
 * phi is summed in r = (x - a) / (x + a) (x - a is exact there), never as the difference of
 * two logarithms of size log a; from a = 100 the prefactor x^a e^-x / Gamma(a) is also
 * sqrt(a / 2 pi) e^(-a phi) / Gamma*(a) with Stirling's series for Gamma*, where
 * e^(a log x - x - lgamma(a)) had a relative error of (|a log x| + x + |lgamma a|) ulps. */
/* 9 rows, 121 coefficients (tools/igamma_temme_coef.py) */
#define PTL_IGAMMA_TEMME_LEN 23, 21, 19, 17, 14, 12, 9, 5, 1
#define PTL_IGAMMA_TEMME_COEF \
    2.8534893807047445e-14, -1.392388722418162e-13, 3.371763262400985e-13, 1.1004392031956135e-13,\
    -5.0276692801141755e-12, 2.4361948020667415e-11, -5.830772132550426e-11, -2.5514193994946248e-11,\
    9.14769958223679e-10, -4.382036018453353e-09, 1.0261809784240309e-08, 6.707853543401498e-09,\
    -1.7665952736826078e-07, 8.296711340953087e-07, -1.85406221071516e-06, -2.185448510679992e-06,\
    3.919263178522438e-05, -0.0001787551440329218, 0.0003527336860670194, 0.0011574074074074073,\
    -0.014814814814814815, 0.08333333333333333, -0.3333333333333333, 5.996696365683689e-13,\
    -2.933186643771437e-12, 7.1624989648114856e-12, 6.067215101604758e-14, -8.56390702649298e-11,\
    4.162792991842583e-10, -1.0091543710600413e-09, -1.7543241719747647e-11, 1.1951628599778148e-08,\
    -5.752545603517705e-08, 1.378633446915721e-07, 4.647127802807434e-09, -1.6120900894563446e-06,\
    7.64916091608111e-06, -1.8098550334489977e-05, -4.018775720164609e-07, 0.00020576131687242798,\
    -0.0009902263374485596, 0.0026455026455026454, -0.003472222222222222, -0.001851851851851852,\
    1.197593554636698e-11, -5.5645956134363323e-11, 1.2872252400089318e-10, 9.428356159014678e-13,\
    -1.3670488396617114e-09, 6.228974084922022e-09, -1.409252991086752e-08, -2.0477098421990866e-10,\
    1.4280614206064242e-07, -6.298992138380055e-07, 1.3721957309062934e-06, 3.423578734096138e-08,\
    -1.2760635188618728e-05, 5.2923448829120125e-05, -0.0001073665322636516, 2.0093878600823047e-06,\
    0.0007716049382716049, -0.0026813271604938273, 0.004133597883597883, 2.1541049775774907e-10,\
    -9.460496661855133e-10, 2.0620131815488797e-09, 2.3928620439808118e-12, -1.9111168485973655e-08,\
    8.099464905388083e-08, -1.6958404091930278e-07, -2.7861080291528143e-11, 1.4230900732435883e-06,\
    -5.6749528269915965e-06, 1.1082654115347302e-05, -2.396505113867297e-07, -7.561801671883977e-05,\
    0.00026772063206283885, -0.0004691894943952557, 0.00022947209362139917, 0.0006494341563786008,\
    -1.4189739437803219e-08, 2.8865829742708783e-08, 2.956794137544049e-11, -2.292934834000805e-07,\
    8.907507532205309e-07, -1.6954149536558305e-06, 2.507497226237533e-10, 1.1375726970678419e-05,\
    -3.968365047179435e-05, 6.641498215465122e-05, -1.4638452578843418e-06, -0.0002990724803031902,\
    0.0007840392217200666, -0.0008618882909167117, -1.8447187191171344e-07, 3.4652846491085265e-07,\
    -3.252473551298454e-10, -2.291481176508095e-06, 8.018470256334202e-06, -1.3594048189768693e-05,\
    1.419062920643967e-07, 6.797780477937208e-05, -0.00019932570516188847, 0.0002772753244959392,\
    -6.972813758365857e-05, -0.00033679855336635813, 3.465155368803609e-06, -3.0796134506033047e-09,\
    -1.8329116582843375e-05, 5.61168275310625e-05, -8.153969367561969e-05, 7.902353232660328e-07,\
    0.0002708782096718045, -0.0005921664373536939, 0.0005313079364639922, -0.00010976582244684731,\
    0.0002812695154763237, -0.00033493161081142234, 5.171790908260592e-05, 0.00034436760689237765,\
    -0.0006526239185953094

/* the smallest a of Temme's expansion and of the Stirling form of the prefactor (below it
 * the form of lgamma is cheaper, and its error of ~(a log x + x + lgamma a) ulps small) */
#define PTL_IGAMMA_LARGE_A 100.0

/* phi = x/a - 1 - log(x/a) >= 0, a few ulps: for |x - a| <= a / 2 as
 * r mu - 2 r^3 (1/3 + r^2/5 + r^4/7 + ...), mu = (x - a) / a (x - a exact), r = mu / (2 + mu)
 * = (x - a) / (x + a), |r| <= 1/3 (log(x/a) = 2 atanh r and mu - 2 r = r mu) */
PTL_HD static inline double
ptl_igamma_phi(double a, double x)
{
    double mu = (x - a) / a;
    if (fabs(mu) > 0.5) {
        double lam = x / a;
        return (lam - 1.0) - log(lam);
    }
    double r = mu / (2.0 + mu), r2 = r * r, t = r2, s = 1.0 / 3.0;
    for (int j = 5; t > 1e-17; j += 2) {
        s += t / (double)j;
        t *= r2;
    }
    return r * mu - 2.0 * r * r2 * s;
}

/* Gamma*(a) = Gamma(a) / (sqrt(2 pi / a) (a/e)^a) for a >= PTL_IGAMMA_LARGE_A:
 * e^(sum_j B_2j / (2j (2j - 1) a^(2j - 1))), j <= 8 (the next term is below 2e-18) */
/* Stirling's series of log Gamma*(a) = (1/12 - 1/(360 a^2) + ...) / a in 1 / a^2, the highest
 * power first (the density's vector lanes use it too) */
#define PTL_IGAMMA_GAMMA_STAR_COEF                                                        \
    -3617.0 / 122400.0, 1.0 / 156.0, -691.0 / 360360.0, 1.0 / 1188.0, -1.0 / 1680.0,      \
        1.0 / 1260.0, -1.0 / 360.0, 1.0 / 12.0
PTL_HD static inline double
ptl_igamma_gamma_star(double a)
{
    const double c[] = {PTL_IGAMMA_GAMMA_STAR_COEF};
    double z = 1.0 / (a * a), s = 0.0;
    for (int i = 0; i < 8; i++) {
        s = s * z + c[i];
    }
    return exp(s / a);
}

/* x^a e^-x / Gamma(a) (Note [Incomplete gamma for large a]) */
PTL_HD static inline double
ptl_igamma_prefactor(double a, double x)
{
    if (a < PTL_IGAMMA_LARGE_A) {
        return exp(a * log(x) - x - lgamma(a));
    }
    double e = -a * ptl_igamma_phi(a, x), c = 0.3989422804014327 / ptl_igamma_gamma_star(a);
    /* e^e alone is subnormal below -708 while the product may not be */
    return e > -700.0 ? exp(e) * sqrt(a) * c : exp(e + 0.5 * log(a)) * c;
}

/* whether P and Q come from Temme's expansion (a > 0 finite, x >= 0 finite) */
PTL_HD static inline int
ptl_igamma_uses_temme(double a, double x)
{
    return a >= PTL_IGAMMA_LARGE_A && fabs(x - a) <= 0.5 * a;
}

/* P(a, x) (upper 0) or Q(a, x) (upper 1) by Temme's expansion */
PTL_HD static inline double
ptl_igamma_temme(double a, double x, int upper)
{
    const double c[] = {PTL_IGAMMA_TEMME_COEF};
    const int len[] = {PTL_IGAMMA_TEMME_LEN};
    int at = (int)(sizeof(c) / sizeof(c[0]));
    double phi = ptl_igamma_phi(a, x), eta = copysign(sqrt(2.0 * phi), x - a), s = 0.0;
    for (int k = (int)(sizeof(len) / sizeof(len[0])) - 1; k >= 0; k--) {
        double d = 0.0;
        at -= len[k];
        for (int n = 0; n < len[k]; n++) {
            d = d * eta + c[at + n];
        }
        s = s / a + d;
    }
    /* 2.5066... = sqrt(2 pi); sqrt(2 pi a) would overflow above a = 2.8e307 */
    double r = exp(-a * phi) * s / (2.5066282746310002 * sqrt(a)), y = eta * sqrt(0.5 * a);
    if (eta < 0.0) {
        double p = 0.5 * erfc(-y) - r;
        return upper ? 1.0 - p : p;
    }
    double q = 0.5 * erfc(y) + r;
    return upper ? q : 1.0 - q;
}

/* the series' sum, without the prefactor */
PTL_HD static inline double
ptl_igamma_series(double a, double x)
{
    double t = 1.0 / a, sum = t;
    for (int n = 1; n < 100000; n++) {
        t *= x / (a + (double)n);
        sum += t;
        if (t <= sum * 1e-17) {
            break;
        }
    }
    return sum;
}

/* the continued fraction, without the prefactor */
PTL_HD static inline double
ptl_igammac_fraction(double a, double x)
{
    const double tiny = 1e-300;
    double b = x + 1.0 - a, c = 1.0 / tiny, d = 1.0 / b, h = d;
    for (int i = 1; i < 100000; i++) {
        double an = -(double)i * ((double)i - a);
        b += 2.0;
        d = an * d + b;
        d = fabs(d) < tiny ? tiny : d;
        c = b + an / c;
        c = fabs(c) < tiny ? tiny : c;
        d = 1.0 / d;
        double step = d * c;
        h *= step;
        if (fabs(step - 1.0) <= 1e-16) {
            break;
        }
    }
    return h;
}

/* P(a, x) (upper 0) or Q(a, x) (upper 1); NaN for negative arguments, as PyTorch */
PTL_HD static inline double
ptl_igamma_pq(double a, double x, int upper)
{
    double p;
    if (a != a || x != x || a < 0.0 || x < 0.0 || (a == 0.0 && x == 0.0) ||
        (isinf(a) && isinf(x))) {
        return NAN;
    }
    if (a == 0.0 || isinf(x)) {
        return upper ? 0.0 : 1.0;
    }
    if (x == 0.0 || isinf(a)) {
        return upper ? 1.0 : 0.0;
    }
    if (ptl_igamma_uses_temme(a, x)) {
        return ptl_igamma_temme(a, x, upper);
    }
    /* a prefactor of 0 makes the computed side 0 without its loop, whose terms overflow for
     * a near DBL_MAX (0 * inf) */
    double f = ptl_igamma_prefactor(a, x);
    if (x < a + 1.0) {
        p = f == 0.0 ? 0.0 : f * ptl_igamma_series(a, x);
        return upper ? 1.0 - p : p;
    }
    p = f == 0.0 ? 0.0 : f * ptl_igammac_fraction(a, x);
    return upper ? p : 1.0 - p;
}

/* ---- the Gamma(a) density x^(a-1) e^-x / Gamma(a), igamma's derivative in x ----
 *
 * Note [Incomplete gamma density]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * d/dx P(a, x) = -d/dx Q(a, x) = x^(a-1) e^-x / Gamma(a), the hidden op _ptl_igamma_density
 * that igamma's and igammac's derivatives call.  derivatives.yaml writes it
 * e^((a - 1) log x - x - lgamma(a)), whose exponent's rounding, (|a log x| + x + |lgamma a|)
 * ulps, is all of its error: 7e-14 at a = 100, 2e-12 at 3300, 0.4% at 1e12, none right at
 * 1e17.  Here, from a = PTL_IGAMMA_DENSITY_STIRLING_A, it is
 * sqrt(a / 2 pi) e^(-a phi) / (Gamma*(a) x) with a phi = x - a - a log(x / a) (Note
 * [Incomplete gamma for large a]; Stirling's series for Gamma* is within 2e-18 from a = 10),
 * and below it e^-x e^((a - 1) log x - lgamma(a)).  Either exponent is summed as a
 * double-double (TwoSum, fma's exact products, log as k ln 2 + log m with k ln2_hi exact; on
 * a phi's logarithmic side, where a multiplies it, log m itself as a double-double by
 * ptl_log_m_dd) and e^(hi + lo) is e^hi (1 + lo), which leaves lgamma's rounding (and log m's
 * below a = 10, times a - 1) and a few ulps of the series' cubic part (a sixth of a phi at
 * most).  Below e^-700 the exponential is taken in two halves, since the product may still be
 * normal.  Measured against mpmath at a in 1e-3..1e300 and x from 1e-320 to the density's
 * underflow, wherever the density is a normal double: within 6e-15 below a = 10, 7e-14 above
 * (the cubic part at |x - a| near a / 2, a phi near 700; 4e-15 on the logarithmic side,
 * where a log m rounded to one double cost up to 4e-13 from a = 2000).  Outside a > 0,
 * 0 < x < inf, a < inf it is the formula, for PyTorch's special values (NaN at a = 1, x = 0
 * and at a >= 1, x = inf; 0 at a = 0, x > 0).  The CPU kernel runs these formulas on vector
 * lanes (Note [Incomplete gamma density lanes] in native/igamma_density.c). */

/* the smallest a of the density's Stirling form (Note [Incomplete gamma density]) */
#define PTL_IGAMMA_DENSITY_STIRLING_A 10.0

/* s = a + b rounded, *err = a + b - s exactly (Knuth's TwoSum) */
PTL_HD static inline double
ptl_two_sum_d(double a, double b, double *err)
{
    double s = a + b, bv = s - a;
    *err = (a - (s - bv)) + (b - bv);
    return s;
}

/* ln 2 as its 32 leading bits (k ln2_hi is exact for |k| < 2^21) and the rest */
#define PTL_LN2_HI_32 6.93147180369123816490e-01
#define PTL_LN2_LO_32 1.90821492927058770002e-10

/* m with y = m 2^k, m in (sqrt(1/2), sqrt(2)], for 0 < y < inf; k in *k */
PTL_HD static inline double
ptl_log_reduce_d(double y, double *k)
{
    int e;
    double m = 2.0 * frexp(y, &e);
    if (m > 1.4142135623730951) {
        m *= 0.5;
    } else {
        e -= 1;
    }
    *k = (double)e;
    return m;
}

/* log y for 0 < y < inf as *hi + the result: *hi = k ln2_hi (exact), the result k ln2_lo +
 * log m (ptl_log_reduce_d's m and k), within 3e-17 (half an ulp of |log m| <= 0.35) */
PTL_HD static inline double
ptl_log_split_d(double y, double *hi)
{
    double k, m = ptl_log_reduce_d(y, &k);
    *hi = k * PTL_LN2_HI_32;
    return k * PTL_LN2_LO_32 + log(m);
}

/* 2 atanh(s) = log((1 + s) / (1 - s)) less 2 s, over s^3, in s^2: 2/3 + 2 s^2/5 + ... to
 * 2 s^22/25, the highest power first (|s| <= 0.172 leaves out under 2e-22 of log m) */
#define PTL_LOG_ATANH_TAIL_COEF                                                          \
    2.0 / 25, 2.0 / 23, 2.0 / 21, 2.0 / 19, 2.0 / 17, 2.0 / 15, 2.0 / 13, 2.0 / 11, 2.0 / 9, \
        2.0 / 7, 2.0 / 5, 2.0 / 3

/* log m for m in [sqrt(1/2), sqrt(2)] as *hi + the result, within 1e-19: s + sl = (m - 1) /
 * (m + 1) as a double-double (m - 1 exact, 2 + (m - 1) by a two-sum), *hi = 2 s (exact) and
 * the result 2 sl + s^3 P(s^2) (under 0.0034, rounded once) */
PTL_HD static inline double
ptl_log_m_dd(double m, double *hi)
{
    const double c[] = {PTL_LOG_ATANH_TAIL_COEF};
    double f = m - 1.0, ul, u = ptl_two_sum_d(2.0, f, &ul);
    double s = f / u, sl = (fma(-s, u, f) - s * ul) / u, z = s * s, p = 0.0;
    for (int i = 0; i < (int)(sizeof(c) / sizeof(c[0])); i++) {
        p = p * z + c[i];
    }
    *hi = 2.0 * s;
    return 2.0 * sl + s * z * p;
}

/* a phi(a, x) = x - a - a log(x / a) >= 0 for 0 < a, x < inf, as hi + *lo: the products by
 * fma and the sums by ptl_two_sum_d, so that only a times log m's rounding (3e-17) and a few
 * ulps of the series' cubic part are left (Note [Incomplete gamma density]) */
PTL_HD static inline double
ptl_igamma_a_phi(double a, double x, double *lo)
{
    double e1, e2, hi;
    if (fabs(x - a) <= 0.5 * a) {
        /* r = (x - a) / (x + a) as r + rl, halved (x + a may overflow), x - a exact: a phi =
         * r (x - a) - 2 a r^3 (1/3 + r^2/5 + ...), ptl_igamma_phi's series times a */
        double d = x - a, s = ptl_two_sum_d(0.5 * x, 0.5 * a, &e1);
        double r = 0.5 * d / s, rl = (fma(-r, s, 0.5 * d) - r * e1) / s;
        double r2 = r * r, t = r2, sum = 1.0 / 3.0;
        for (int j = 5; t > 1e-17; j += 2) {
            sum += t / (double)j;
            t *= r2;
        }
        double p = r * d;
        hi = ptl_two_sum_d(p, -(2.0 * r * r2 * sum) * a, &e2);
        *lo = e2 + fma(r, d, -p) + rl * d;
        return hi;
    }
    /* log(x / a) = kh + l1 + l2 (kh = k ln2_hi, l1 + l2 = log m + k ln2_lo + laml / lam by
     * ptl_log_m_dd), x / a = lam + laml: a log m's error is a 1e-19, where one double's
     * rounding of it cost a 3e-17 (2e-13 of the density at a = 5000, x = 1.52 a) */
    double lam = x / a, laml = fma(-lam, a, x) / a, k, m = ptl_log_reduce_d(lam, &k), l1;
    double l2 = ptl_log_m_dd(m, &l1) + (k * PTL_LN2_LO_32 + laml / lam), kh = k * PTL_LN2_HI_32;
    double p = a * kh, q1 = a * l1, q2 = a * l2, dl, dle, e3;
    dl = ptl_two_sum_d(x, -a, &dle);
    hi = ptl_two_sum_d(ptl_two_sum_d(ptl_two_sum_d(dl, -p, &e1), -q1, &e2), -q2, &e3);
    *lo = e1 + e2 + e3 + dle - fma(a, kh, -p) - fma(a, l1, -q1) - fma(a, l2, -q2);
    return hi;
}

/* x^(a-1) e^-x / Gamma(a), the Gamma(a) density: d/dx P(a, x) = -d/dx Q(a, x) (Note
 * [Incomplete gamma density]) */
PTL_HD static inline double
ptl_igamma_density_d(double a, double x)
{
    if (!(a > 0.0 && x > 0.0 && x < INFINITY && a < INFINITY)) {
        /* PyTorch's special values: its formula */
        return exp((a - 1.0) * log(x) - x - lgamma(a));
    }
    if (a >= PTL_IGAMMA_DENSITY_STIRLING_A) {
        /* sqrt(a / 2 pi) e^(-a phi) / (Gamma*(a) x); e^(-a phi) in two halves below e^-700,
         * where the product may still be normal */
        double lo, hi = ptl_igamma_a_phi(a, x, &lo);
        double c = 0.3989422804014327 / ptl_igamma_gamma_star(a) * sqrt(a);
        if (!(hi < 2000.0)) {
            /* e^-1000 c / x underflows wherever a phi reaches 2000, and hi may be inf or NaN
             * when x / a underflows */
            return 0.0;
        }
        if (hi < 700.0) {
            return exp(-hi) * (1.0 - lo) * c / x;
        }
        double h = exp(-0.5 * hi);
        return h * c / x * h * (1.0 - lo);
    }
    /* v = (a - 1) log x - lgamma(a) as v + vl (the products by fma, the sums by
     * ptl_two_sum_d; a - 1 is inexact below 1/2); e^-x apart, in two halves from x = 700, and
     * 0 from x = 1500, where e^v may overflow (x^9 e^-x < e^-1430 there) */
    if (x >= 1500.0) {
        return 0.0;
    }
    double ae, am1 = ptl_two_sum_d(a, -1.0, &ae), lh, ll = ptl_log_split_d(x, &lh);
    double p = am1 * lh, q = am1 * ll, e1, e2;
    double v = ptl_two_sum_d(ptl_two_sum_d(p, q, &e1), -lgamma(a), &e2);
    double vl = e1 + e2 + fma(am1, lh, -p) + fma(am1, ll, -q) + ae * (lh + ll);
    if (x <= 700.0) {
        return exp(-x) * exp(v) * (1.0 + vl);
    }
    double h = exp(-0.5 * x);
    return h * exp(v) * h * (1.0 + vl);
}

PTL_HD static inline double ptl_igamma_d(double a, double x) { return ptl_igamma_pq(a, x, 0); }
PTL_HD static inline double ptl_igammac_d(double a, double x) { return ptl_igamma_pq(a, x, 1); }

#endif
