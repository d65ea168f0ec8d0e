/* unary_special.c -- float32 lgamma and float32 / float64 digamma and trigamma
 * (polygamma(1, .)) in AVX2 and AVX-512 lanes (double lanes for both dtypes), for unary.c's
 * contiguous loops.  Mirrors the lgamma / digamma / polygamma kernels of
 * ATen/native/cpu/UnaryOpsKernel.cpp in purpose (PyTorch maps the scalar calc_digamma,
 * calc_trigamma and std::lgamma over its vectors); the formulas are our own, below.
 *
 * Note [Vector lgamma and digamma]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * Both work in double lanes: a float32 input widens exactly, the result rounds once.
 *
 * Shift: for z >= 0 below the threshold T, the lanes step z, z + 1, ... up to T at most K
 * times (K = T here, enough from z = 0), keeping the product p = z (z + 1) ... for lgamma
 * and the sum of the 1 / (z + i) as one fraction num / den for digamma (num / den + 1 / z =
 * (num z + den) / (den z): one division at the end instead of K).
 *
 * lgamma (float32 only; float64 keeps libm's): at z >= 8, Stirling's series
 * (z - 1/2) log z - z + log(2 pi) / 2 + 1/(12 z) - 1/(360 z^3) + ... + 1/(156 z^13) (the
 * next term is below 1e-15), minus log p.  x < 0 by the
 * reflection lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x), with sin(pi x) =
 * +-sin(pi r), r = x - round(x) exact, by its Taylor polynomial to r^21 (|r| <= 1/2,
 * truncation under 2e-18): the two logs merge into one of p / |sin(pi r)|.  The cancellation
 * near lgamma's zeros (1, 2 and one between each pair of negative integers) costs about
 * 5e-15 absolute in double, under an ulp of float32 there.  +-0, the negative integers and
 * -inf give +inf, +inf gives +inf (z is clamped at 1e38, whose lgamma is past float32's
 * range), NaN propagates.
 *
 * digamma (float32 and float64; T = 10 as in ptl_digamma_d): log z - 1/(2z) - the
 * asymptotic series in 1/z^2 to its seventh term, minus num / den.  x < 0 by the reflection
 * psi(x) = psi(1 - x) - pi cos(pi r) / sin(pi r) (cos by its Taylor polynomial to r^22).
 * 0 < x < 1e-280 gives -1/x - euler's constant (the shift's product would lose digits
 * below the normal range; the rest is under 1e-280 there).  +0 gives -inf, -0 +inf, the
 * negative integers and -inf NaN, +inf +inf (the infinite lanes' arithmetic is replaced),
 * NaN propagates: ptl_digamma_d's values.
 *
 * trigamma (float32 and float64; T = 10): the shift's sum of 1 / (z + i)^2 as one fraction,
 * then 1/z + 1/(2 z^2) + sum_k B_2k / z^(2k+1) to B_16 (the next term is under 6e-18
 * relative).  x < 0 by psi1(x) = pi^2 / sin^2(pi x) - psi1(1 - x) (no cancellation: the
 * first term is at least pi^2, the second at most pi^2 / 6).  0 < x < 1e-100 gives
 * 1/x^2 + pi^2 / 6.  +-0, the negative integers and -inf give +inf, +inf gives 0, NaN
 * propagates: ptl_polygamma_d(1, .)'s values. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../../c10/cpu_features.h"
#include "unary_loops.h"
#include "vec_math.h"

#ifdef PTL_HAVE_AVX2_KERNELS

/* sin(pi r) / r and cos(pi r) as polynomials in r^2 (Taylor, the highest power first) */
static const double sinpi_coef[] = {
    5.392664662608129e-10,  -2.2948428997269873e-08, 7.952054001475513e-07,
    -2.1915353447830217e-05, 0.00046630280576761255, -0.0073704309457143504,
    0.08214588661112823,    -0.5992645293207921,     2.5501640398773455,
    -5.16771278004997,      3.141592653589793};
static const double cospi_coef[] = {
    -7.700707130601354e-11, 3.604730797462501e-09,  -1.3878952462213771e-07,
    4.303069587032947e-06,  -0.0001046381049248457, 0.0019295743094039231,
    -0.02580689139001406,   0.2353306303588932,     -1.3352627688545895,
    4.0587121264167685,     -4.934802200544679,     1.0};
/* Stirling's corrections B_2k / (2k (2k - 1)) for lgamma (times 1/z, in 1/z^2), and
 * B_2k / (2k) for digamma (times 1/z^2, in 1/z^2), the highest power first */
static const double lgamma_stirling_coef[] = {1.0 / 156,  -691.0 / 360360, 1.0 / 1188,
                                              -1.0 / 1680, 1.0 / 1260,     -1.0 / 360,
                                              1.0 / 12};
static const double digamma_series_coef[] = {1.0 / 12,   -691.0 / 32760, 1.0 / 132,
                                             -1.0 / 240, 1.0 / 252,      -1.0 / 120,
                                             1.0 / 12};
/* trigamma's B_2k (times 1/z^3, in 1/z^2), the highest power first */
static const double trigamma_series_coef[] = {-3617.0 / 510, 7.0 / 6,    -691.0 / 2730,
                                              5.0 / 66,      -1.0 / 30,  1.0 / 42,
                                              -1.0 / 30,     1.0 / 6};
#define LOG_PI 1.1447298858494002
#define PI_SQUARED 9.869604401089358
#define PI_SQUARED_6 1.6449340668482264
#define HALF_LOG_2PI 0.9189385332046728
#define EULER 0.5772156649015329

#define DEFINE_SPECIAL_FORMULAS(S)                                                        \
    /* lgamma of float32 values (held in double lanes) */                                 \
    PTL_VATTR(S) static inline PTL_VT(S) lgamma_##S(PTL_VT(S) x)                          \
    {                                                                                     \
        const PTL_VT(S) one = PTL_V(S, set1)(1.0), eight = PTL_V(S, set1)(8.0);           \
        const PTL_VT(S) zero = PTL_V(S, setzero)(), inf = PTL_V(S, set1)(INFINITY);       \
        PTL_VMT(S) neg = PTL_VCMP(S, x, zero, _CMP_LT_OQ);                                \
        PTL_VT(S) z = PTL_VSEL(S, neg, x, PTL_V(S, sub)(one, x));                         \
        z = PTL_V(S, min)(z, PTL_V(S, set1)(1e38));                                       \
        PTL_VT(S) p = one;                                                                \
        for (int k = 0; k < 8; k++) {                                                     \
            PTL_VMT(S) m = PTL_VCMP(S, z, eight, _CMP_LT_OQ);                             \
            p = PTL_VSEL(S, m, p, PTL_V(S, mul)(p, z));                                   \
            z = PTL_VSEL(S, m, z, PTL_V(S, add)(z, one));                                 \
        }                                                                                 \
        PTL_VT(S) w = PTL_V(S, div)(one, z);                                              \
        PTL_VT(S) c = PTL_V(S, mul)(w, PTL_VM_POLY(S, PTL_V(S, mul)(w, w),                \
                                                   lgamma_stirling_coef));                \
        PTL_VT(S) lz = ptl_vm_log_normal_##S(z);                                          \
        PTL_VT(S) st = PTL_V(S, fmadd)(PTL_V(S, sub)(z, PTL_V(S, set1)(0.5)), lz,         \
                                       PTL_V(S, sub)(c, z));                              \
        st = PTL_V(S, add)(st, PTL_V(S, set1)(HALF_LOG_2PI));                             \
        PTL_VT(S) q = p, rd = PTL_VROUND(S, x);                                           \
        if (PTL_VBITS(S, neg) != 0) {                                                     \
            PTL_VT(S) rn = PTL_V(S, sub)(x, rd);                                          \
            PTL_VT(S) s = PTL_V(S, mul)(rn, PTL_VM_POLY(S, PTL_V(S, mul)(rn, rn), sinpi_coef)); \
            s = PTL_V(S, andnot)(PTL_V(S, set1)(-0.0), s);                                \
            q = PTL_VSEL(S, neg, p, PTL_V(S, div)(p, s));                                 \
        }                                                                                 \
        PTL_VT(S) lq = ptl_vm_log_normal_##S(q);                                          \
        PTL_VT(S) y = PTL_VSEL(S, neg, PTL_V(S, sub)(st, lq),                             \
                               PTL_V(S, add)(PTL_V(S, sub)(PTL_V(S, set1)(LOG_PI), st), lq)); \
        PTL_VMT(S) pole = PTL_VMOR(S, PTL_VCMP(S, x, zero, _CMP_EQ_OQ),                   \
                                   PTL_VMAND(S, neg, PTL_VCMP(S, x, rd, _CMP_EQ_OQ)));    \
        y = PTL_VSEL(S, pole, y, inf);                                                    \
        PTL_VMT(S) exact = PTL_VMOR(S, PTL_VCMP(S, x, one, _CMP_EQ_OQ),                   \
                                    PTL_VCMP(S, x, PTL_V(S, set1)(2.0), _CMP_EQ_OQ));     \
        y = PTL_VSEL(S, exact, y, zero);                                                  \
        return PTL_VSEL(S, PTL_VCMP(S, x, x, _CMP_UNORD_Q), y, x);                        \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) digamma_##S(PTL_VT(S) x)                         \
    {                                                                                     \
        const PTL_VT(S) one = PTL_V(S, set1)(1.0), ten = PTL_V(S, set1)(10.0);            \
        const PTL_VT(S) zero = PTL_V(S, setzero)(), sign = PTL_V(S, set1)(-0.0);          \
        PTL_VMT(S) neg = PTL_VCMP(S, x, zero, _CMP_LT_OQ);                                \
        PTL_VT(S) z = PTL_VSEL(S, neg, x, PTL_V(S, sub)(one, x));                         \
        PTL_VT(S) num = zero, den = one;                                                  \
        for (int k = 0; k < 10; k++) {                                                    \
            PTL_VMT(S) m = PTL_VCMP(S, z, ten, _CMP_LT_OQ);                               \
            num = PTL_VSEL(S, m, num, PTL_V(S, fmadd)(num, z, den));                      \
            den = PTL_VSEL(S, m, den, PTL_V(S, mul)(den, z));                             \
            z = PTL_VSEL(S, m, z, PTL_V(S, add)(z, one));                                 \
        }                                                                                 \
        PTL_VT(S) w = PTL_V(S, div)(one, z), w2 = PTL_V(S, mul)(w, w);                    \
        PTL_VT(S) ser = PTL_V(S, mul)(w2, PTL_VM_POLY(S, w2, digamma_series_coef));       \
        PTL_VT(S) y = PTL_V(S, fnmadd)(PTL_V(S, set1)(0.5), w, ptl_vm_log_normal_##S(z)); \
        y = PTL_V(S, sub)(y, PTL_V(S, add)(ser, PTL_V(S, div)(num, den)));               \
        PTL_VT(S) rd = PTL_VROUND(S, x);                                                  \
        if (PTL_VBITS(S, neg) != 0) {                                                     \
            PTL_VT(S) rn = PTL_V(S, sub)(x, rd);                                          \
            PTL_VT(S) r2 = PTL_V(S, mul)(rn, rn);                                         \
            PTL_VT(S) s = PTL_V(S, mul)(rn, PTL_VM_POLY(S, r2, sinpi_coef));              \
            PTL_VT(S) c = PTL_V(S, mul)(PTL_V(S, set1)(3.141592653589793),                \
                                        PTL_VM_POLY(S, r2, cospi_coef));                  \
            y = PTL_VSEL(S, neg, y, PTL_V(S, sub)(y, PTL_V(S, div)(c, s)));               \
        }                                                                                 \
        PTL_VMT(S) tiny = PTL_VMAND(S, PTL_VCMP(S, x, zero, _CMP_GT_OQ),                  \
                                    PTL_VCMP(S, x, PTL_V(S, set1)(1e-280), _CMP_LT_OQ));  \
        y = PTL_VSEL(S, tiny, y,                                                          \
                     PTL_V(S, sub)(PTL_V(S, div)(PTL_V(S, set1)(-1.0), x),                \
                                   PTL_V(S, set1)(EULER)));                               \
        PTL_VMT(S) nan = PTL_VMAND(S, neg, PTL_VCMP(S, x, rd, _CMP_EQ_OQ));               \
        y = PTL_VSEL(S, nan, y, PTL_V(S, set1)(NAN));                                     \
        PTL_VT(S) pole = PTL_V(S, xor)(PTL_V(S, and)(sign, x), PTL_V(S, set1)(-INFINITY)); \
        y = PTL_VSEL(S, PTL_VCMP(S, x, zero, _CMP_EQ_OQ), y, pole);                       \
        y = PTL_VSEL(S, PTL_VCMP(S, x, PTL_V(S, set1)(INFINITY), _CMP_EQ_OQ), y, x);      \
        return PTL_VSEL(S, PTL_VCMP(S, x, x, _CMP_UNORD_Q), y, x);                        \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) trigamma_##S(PTL_VT(S) x)                        \
    {                                                                                     \
        const PTL_VT(S) one = PTL_V(S, set1)(1.0), ten = PTL_V(S, set1)(10.0);            \
        const PTL_VT(S) zero = PTL_V(S, setzero)();                                       \
        PTL_VMT(S) neg = PTL_VCMP(S, x, zero, _CMP_LT_OQ);                                \
        PTL_VT(S) z = PTL_VSEL(S, neg, x, PTL_V(S, sub)(one, x));                         \
        PTL_VT(S) num = zero, den = one;                                                  \
        for (int k = 0; k < 10; k++) {                                                    \
            PTL_VMT(S) m = PTL_VCMP(S, z, ten, _CMP_LT_OQ);                               \
            PTL_VT(S) z2 = PTL_V(S, mul)(z, z);                                           \
            num = PTL_VSEL(S, m, num, PTL_V(S, fmadd)(num, z2, den));                     \
            den = PTL_VSEL(S, m, den, PTL_V(S, mul)(den, z2));                            \
            z = PTL_VSEL(S, m, z, PTL_V(S, add)(z, one));                                 \
        }                                                                                 \
        PTL_VT(S) w = PTL_V(S, div)(one, z), w2 = PTL_V(S, mul)(w, w);                    \
        PTL_VT(S) ser = PTL_V(S, mul)(PTL_V(S, mul)(w2, w),                               \
                                      PTL_VM_POLY(S, w2, trigamma_series_coef));          \
        PTL_VT(S) y = PTL_V(S, fmadd)(PTL_V(S, set1)(0.5), w2, ser);                      \
        y = PTL_V(S, add)(PTL_V(S, add)(y, w), PTL_V(S, div)(num, den));                 \
        PTL_VT(S) rd = PTL_VROUND(S, x);                                                  \
        if (PTL_VBITS(S, neg) != 0) {                                                     \
            PTL_VT(S) rn = PTL_V(S, sub)(x, rd);                                          \
            PTL_VT(S) s = PTL_V(S, mul)(rn, PTL_VM_POLY(S, PTL_V(S, mul)(rn, rn), sinpi_coef)); \
            PTL_VT(S) refl = PTL_V(S, div)(PTL_V(S, set1)(PI_SQUARED), PTL_V(S, mul)(s, s)); \
            y = PTL_VSEL(S, neg, y, PTL_V(S, sub)(refl, y));                              \
        }                                                                                 \
        PTL_VMT(S) tiny = PTL_VMAND(S, PTL_VCMP(S, x, zero, _CMP_GT_OQ),                  \
                                    PTL_VCMP(S, x, PTL_V(S, set1)(1e-100), _CMP_LT_OQ));  \
        y = PTL_VSEL(S, tiny, y,                                                          \
                     PTL_V(S, add)(PTL_V(S, div)(one, PTL_V(S, mul)(x, x)),               \
                                   PTL_V(S, set1)(PI_SQUARED_6)));                        \
        PTL_VMT(S) pole = PTL_VMAND(S, PTL_VCMP(S, x, zero, _CMP_LE_OQ),                  \
                                    PTL_VCMP(S, x, rd, _CMP_EQ_OQ));                      \
        y = PTL_VSEL(S, pole, y, PTL_V(S, set1)(INFINITY));                               \
        y = PTL_VSEL(S, PTL_VCMP(S, x, PTL_V(S, set1)(INFINITY), _CMP_EQ_OQ), y, zero);   \
        return PTL_VSEL(S, PTL_VCMP(S, x, x, _CMP_UNORD_Q), y, x);                        \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) apply_##S(PTL_VT(S) v, int fn)                   \
    {                                                                                     \
        return fn == PTL_SPECIAL_LGAMMA    ? lgamma_##S(v)                                \
               : fn == PTL_SPECIAL_DIGAMMA ? digamma_##S(v)                               \
                                           : trigamma_##S(v);                             \
    }                                                                                     \
    /* o[i] = F(a[i]) over float32 data; the tail through a zero-padded buffer */         \
    PTL_VATTR(S) static void map_f4_##S(float *o, const float *a, int64_t n, int fn)      \
    {                                                                                     \
        const int64_t L = PTL_VLANES(S);                                                  \
        for (int64_t i = 0; i < n; i += L) {                                              \
            float buf[PTL_VLANES(S)] = {0};                                               \
            const float *src = a + i;                                                     \
            if (n - i < L) {                                                              \
                memcpy(buf, src, (size_t)(n - i) * sizeof(float));                        \
                src = buf;                                                                \
            }                                                                             \
            PTL_VT(S) v = PTL_VLOADF(S, src);                                             \
            v = apply_##S(v, fn);                                                         \
            if (n - i < L) {                                                              \
                PTL_VSTOREF(S, buf, v);                                                   \
                memcpy(o + i, buf, (size_t)(n - i) * sizeof(float));                      \
            } else {                                                                      \
                PTL_VSTOREF(S, o + i, v);                                                 \
            }                                                                             \
        }                                                                                 \
    }                                                                                     \
    /* o[i] = F(a[i]) over float64 data (not lgamma) */                                 \
    PTL_VATTR(S) static void map_f8_##S(double *o, const double *a, int64_t n, int fn)    \
    {                                                                                     \
        const int64_t L = PTL_VLANES(S);                                                  \
        for (int64_t i = 0; i < n; i += L) {                                              \
            double buf[PTL_VLANES(S)] = {0};                                              \
            if (n - i < L) {                                                              \
                memcpy(buf, a + i, (size_t)(n - i) * sizeof(double));                     \
                PTL_V(S, storeu)(buf, apply_##S(PTL_V(S, loadu)(buf), fn));              \
                memcpy(o + i, buf, (size_t)(n - i) * sizeof(double));                     \
            } else {                                                                      \
                PTL_V(S, storeu)(o + i, apply_##S(PTL_V(S, loadu)(a + i), fn));           \
            }                                                                             \
        }                                                                                 \
    }
DEFINE_SPECIAL_FORMULAS(pd)
DEFINE_SPECIAL_FORMULAS(pd512)
#undef DEFINE_SPECIAL_FORMULAS

#endif

int
ptl_unary_special_map(int fn, int is_double, void *o, const void *a, int64_t n)
{
#ifdef PTL_HAVE_AVX2_KERNELS
    PtlCpuCapability cap = ptl_cpu_capability();
    if (cap < PTL_CPU_AVX2 || fn < 0 || fn > PTL_SPECIAL_TRIGAMMA ||
        (is_double && fn == PTL_SPECIAL_LGAMMA)) {
        return -1;
    }
    if (is_double) {
        if (cap >= PTL_CPU_AVX512) {
            map_f8_pd512((double *)o, (const double *)a, n, fn);
        } else {
            map_f8_pd((double *)o, (const double *)a, n, fn);
        }
    } else if (cap >= PTL_CPU_AVX512) {
        map_f4_pd512((float *)o, (const float *)a, n, fn);
    } else {
        map_f4_pd((float *)o, (const float *)a, n, fn);
    }
    return 0;
#else
    (void)fn;
    (void)is_double;
    (void)o;
    (void)a;
    (void)n;
    return -1;
#endif
}
