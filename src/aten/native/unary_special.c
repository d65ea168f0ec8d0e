/* unary_special.c -- lgamma, digamma and trigamma (polygamma(1, .)) of float32 and float64
 * and the float64 modified Bessel functions i0, i0e, i1, i1e in AVX2 and AVX-512 lanes
 * (double lanes for both dtypes), for unary.c's contiguous loops.  Mirrors the lgamma /
 * digamma / polygamma and i0 / special_i0e / i1 / i1e kernels of
 * ATen/native/cpu/UnaryOpsKernel.cpp in purpose (PyTorch maps the scalar calc_digamma,
 * calc_trigamma, std::lgamma and calc_i0 ... over its vectors); the formulas are our own,
 * below.
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
 * lgamma (float32; float64 has its own formula, Note [Float64 lgamma and Bessel lanes]): at
 * z >= 8, Stirling's series
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
 * 1/x^2 + pi^2 / 6.  +-0 and the negative integers give +inf, -inf NaN (no limit), +inf
 * 0, NaN propagates: ptl_polygamma_d(1, .)'s values. */
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

/* Note [Float64 lgamma and Bessel lanes]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * The float32 formulas above carry about 5e-15 absolute error (lgamma) or 1e-10 relative
 * (unary.c's float32 Bessel fits): enough for a float32 result, not for float64.  These are
 * float64 grade (errors measured against mpmath by tests/aten/test_vec_special_f64.py).
 *
 * lgamma, |x| < 7.5: t = x - m, m = round(x), exact, |t| <= 1/2; lgamma(2 + t) = t Q(t), Q
 * a degree-19 fit (Chebyshev interpolation, powers of t; truncation about 2e-19 relative),
 * then Gamma(x) = Gamma(2 + t) (t + 2) ... (t + m - 1) for m > 2 and Gamma(2 + t) /
 * ((t + 1) t ... (t + m)) for m < 2: lgamma(x) = t Q(t) +- log |P|, P the product (at most
 * 9 factors, each t + j rounded once).  Near the zeros at 1 and 2 the result is relative:
 * x = 2 + t gives t Q(t) and x = 1 + t gives t Q(t) - log(1 + t) (log's small-argument form,
 * no cancellation worse than 0.42 t - t).  The negative zeros (two in each (-n - 1, -n) from
 * n = 2) get the absolute error of t Q(t) - log |P|, a few 1e-16.  |x| < 1e-300 (where the
 * product would go subnormal) gives -log |x| (the rest is under 1e-300).
 * |x| >= 7.5: Stirling's series for z = x, or z = 1 - x by the reflection
 * lgamma(x) = log pi - log |sin(pi r)| - lgamma(1 - x) (r = x - round(x), sin(pi r) by the
 * Taylor polynomial above), (z - 1/2)(log z - 1) + (log(2 pi) - 1) / 2 + sum_k B_2k /
 * (2k (2k - 1) z^(2k - 1)) to k = 8 (the next term is under 3e-16 at z = 7.5, 0.3 ulp).
 * Next to the poles below -7.5 the error is absolute, about an ulp of lgamma(1 - x).
 * Special values: +inf at +-0, the negative integers and +-inf; NaN propagates.
 *
 * i0, i0e, i1, i1e, |x| <= 8: the power series I0 = sum q^k / (k!)^2 and I1 = (x/2)
 * sum q^k / (k! (k + 1)!), q = (x/2)^2, to k = 22 (positive terms; truncation under 1e-18
 * relative), times e^-|x| for the scaled forms.  q's rounding costs up to (x/2) I1 / I0 / 2
 * ulp, 1.8 at x = 8.  |x| > 8: sqrt(x) e^-x I_n(x) = R(v), v = 16 / x - 1 in (-1, 1], R a
 * degree-25 fit (Chebyshev interpolation in v, converted to powers of v: the coefficients
 * fall fast, so the powers cost nothing in accuracy; truncation under 1e-17), divided by
 * sqrt(x), times e^x for i0 / i1 (e^(x/2) twice past 700, where e^x alone would overflow
 * before I_n does).  i1 and i1e are odd (x's sign put back: -0 stays -0); i0(+-inf) and
 * i1(+-inf) are NaN (Note [Special functions at the infinities] in special_math.h), the
 * scaled forms 0 (with x's sign for i1e); NaN propagates. */
static const double lgamma2_coef[] = {
    -4.078534068052586e-08, -3.4479731556290396e-08, -3.935367409100538e-09,
    1.0494396669769736e-07, -9.14935328797869e-08, 1.8260106722411254e-07,
    -4.601314619834736e-07, 9.63306867869914e-07, -2.0349770372134926e-06,
    4.373549250121044e-06, -9.440379833236786e-06, 2.050733646452371e-05,
    -4.4926124966965185e-05, 9.945750655015098e-05, -0.00022315476687909385,
    0.0005096695248665068, -0.001192753911338867, 0.0028905103307426553, -0.007385551028682022,
    0.02058080842778449, -0.06735230105319803, 0.3224670334241132, 0.42278433509846713};
static const double i0e_far_coef[] = {
    1.6645473602872717e-11, -6.067631570603006e-11, -1.2429481430536811e-10,
    4.577087631643623e-10, 4.388861044991905e-10, -1.618980683624682e-09,
    -1.0267340552488217e-09, 3.6379546359011143e-09, 1.983359036878627e-09,
    -5.95356943826489e-09, -3.82099512308995e-09, 7.430464650325426e-09, 7.697662019062485e-09,
    -5.404771567579958e-09, -1.3453822931523271e-08, -6.747657956107524e-09,
    7.56377201554603e-09, 2.1548377974791598e-08, 3.9324708328742363e-08,
    8.872219737904054e-08, 2.9735993830791437e-07, 1.4838475658279249e-06,
    1.1143033788352455e-05, 0.0001362160743919305, 0.0033605519836678865, 0.4021765094450081};
static const double i1e_far_coef[] = {
    -1.5626599071977848e-11, 6.305965197150057e-11, 1.161813630287145e-10,
    -4.758818838703853e-10, -4.086984233473255e-10, 1.6848984479705146e-09,
    9.568523624905203e-10, -3.794670896208339e-09, -1.8736450470066097e-09,
    6.242741219786445e-09, 3.7219797447255018e-09, -7.888351507862078e-09,
    -7.778592763970399e-09, 5.974437608040264e-09, 1.4076395500755014e-08,
    6.734464815301592e-09, -8.436290430234562e-09, -2.337392820814264e-08,
    -4.312811174972107e-08, -1.0001288294864884e-07, -3.4838565069237384e-07,
    -1.8349101326980946e-06, -1.503854719814553e-05, -0.00021923576383388928,
    -0.00974957719323576, 0.38939845902587233};
static const double i0_near_coef[] = {
    7.915289708078262e-43, 3.8310002187098785e-40, 1.6894710964510564e-37,
    6.757884385804225e-35, 2.4395962632753253e-32, 7.904291893012054e-30,
    2.2843403570804838e-27, 5.8479113141260385e-25, 1.3157800456783586e-22,
    2.5789288895295828e-20, 4.358389823304995e-18, 6.276081345559193e-16,
    7.594058428126623e-14, 7.594058428126624e-12, 6.151187326782565e-10, 3.936759889140842e-08,
    1.9290123456790124e-06, 6.944444444444444e-05, 0.001736111111111111, 0.027777777777777776,
    0.25, 1.0, 1.0};
static const double i1_near_coef[] = {
    3.4414303078601135e-44, 1.7413637357772174e-41, 8.045100459290744e-39,
    3.3789421929021126e-36, 1.2839980333028028e-33, 4.391273273895586e-31,
    1.3437296218120491e-28, 3.654944571328774e-26, 8.771866971189057e-24,
    1.842092063949702e-21, 3.352607556388458e-19, 5.230067787965994e-17, 6.903689480115112e-15,
    7.594058428126623e-13, 6.834652585313961e-11, 4.920949861426052e-09, 2.755731922398589e-07,
    1.1574074074074073e-05, 0.00034722222222222224, 0.006944444444444444, 0.08333333333333333,
    0.5, 1.0};

static const double lgamma_stirling8_coef[] = {-3617.0 / 122400, 1.0 / 156, -691.0 / 360360,
                                               1.0 / 1188,       -1.0 / 1680, 1.0 / 1260,
                                               -1.0 / 360,       1.0 / 12};
#define LN2 0.6931471805599453

#define DEFINE_F8_FORMULAS(S)                                                             \
    /* Stirling's lgamma(z) for z >= 7.5 */                                               \
    PTL_VATTR(S) static inline PTL_VT(S) stirling_f8_##S(PTL_VT(S) z)                     \
    {                                                                                     \
        const PTL_VT(S) one = PTL_V(S, set1)(1.0);                                        \
        PTL_VT(S) w = PTL_V(S, div)(one, z);                                              \
        PTL_VT(S) c = PTL_V(S, mul)(w, PTL_VM_POLY(S, PTL_V(S, mul)(w, w),                \
                                                   lgamma_stirling8_coef));               \
        c = PTL_V(S, add)(c, PTL_V(S, set1)(HALF_LOG_2PI - 0.5));                         \
        PTL_VT(S) lz = PTL_V(S, sub)(ptl_vm_log_normal_##S(z), one);                      \
        return PTL_V(S, fmadd)(PTL_V(S, sub)(z, PTL_V(S, set1)(0.5)), lz, c);             \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) lgamma_f8_##S(PTL_VT(S) x)                       \
    {                                                                                     \
        const PTL_VT(S) one = PTL_V(S, set1)(1.0), two = PTL_V(S, set1)(2.0);             \
        const PTL_VT(S) zero = PTL_V(S, setzero)(), sign = PTL_V(S, set1)(-0.0);          \
        PTL_VT(S) ax = PTL_V(S, andnot)(sign, x);                                         \
        PTL_VMT(S) far = PTL_VCMP(S, ax, PTL_V(S, set1)(7.5), _CMP_NLT_UQ);               \
        PTL_VT(S) xn = PTL_VSEL(S, far, x, two);                                          \
        PTL_VT(S) m = PTL_VROUND(S, xn);                                                  \
        m = PTL_VSEL(S, PTL_VCMP(S, xn, PTL_V(S, set1)(1.25), _CMP_GE_OQ), m,             \
                     PTL_V(S, max)(m, two));                                              \
        PTL_VT(S) t = PTL_V(S, sub)(xn, m);                                               \
        PTL_VMT(S) up = PTL_VCMP(S, m, two, _CMP_GE_OQ);                                  \
        PTL_VT(S) count = PTL_V(S, andnot)(sign, PTL_V(S, sub)(m, two));                  \
        PTL_VT(S) j = PTL_VSEL(S, up, one, two);                                          \
        PTL_VT(S) step = PTL_VSEL(S, up, PTL_V(S, set1)(-1.0), one);                      \
        PTL_VT(S) p = one, k = zero;                                                      \
        for (int i = 0; i < 9; i++) {                                                     \
            PTL_VMT(S) more = PTL_VCMP(S, k, count, _CMP_LT_OQ);                          \
            if (PTL_VBITS(S, more) == 0) {                                                \
                break;                                                                    \
            }                                                                             \
            p = PTL_VSEL(S, more, p, PTL_V(S, mul)(p, PTL_V(S, add)(t, j)));              \
            j = PTL_V(S, add)(j, step);                                                   \
            k = PTL_V(S, add)(k, one);                                                    \
        }                                                                                 \
        PTL_VT(S) lp = ptl_vm_log_normal_##S(PTL_V(S, andnot)(sign, p));                  \
        lp = PTL_VSEL(S, up, PTL_V(S, xor)(lp, sign), lp);                                \
        PTL_VT(S) y = PTL_V(S, fmadd)(t, PTL_VM_POLY(S, t, lgamma2_coef), lp);            \
        PTL_VMT(S) neg = PTL_VCMP(S, x, zero, _CMP_LT_OQ);                                \
        PTL_VT(S) rd = PTL_VROUND(S, x);                                                  \
        if (PTL_VBITS(S, far) != 0) {                                                     \
            PTL_VT(S) z = PTL_VSEL(S, neg, ax, PTL_V(S, sub)(one, x));                    \
            z = PTL_VSEL(S, far, PTL_V(S, set1)(8.0), z);                                 \
            PTL_VT(S) st = stirling_f8_##S(z);                                            \
            PTL_VMT(S) refl = PTL_VMAND(S, far, neg);                                     \
            if (PTL_VBITS(S, refl) != 0) {                                                \
                PTL_VT(S) rn = PTL_V(S, sub)(x, rd);                                      \
                PTL_VT(S) s = PTL_V(S, mul)(rn, PTL_VM_POLY(S, PTL_V(S, mul)(rn, rn),     \
                                                            sinpi_coef));                 \
                s = PTL_V(S, andnot)(sign, s);                                            \
                s = PTL_VSEL(S, refl, one, s);                                            \
                PTL_VT(S) ls = PTL_V(S, add)(ptl_vm_log_normal_##S(s), st);               \
                st = PTL_VSEL(S, refl, st, PTL_V(S, sub)(PTL_V(S, set1)(LOG_PI), ls));    \
            }                                                                             \
            y = PTL_VSEL(S, far, y, st);                                                  \
        }                                                                                 \
        PTL_VMT(S) tiny = PTL_VCMP(S, ax, PTL_V(S, set1)(1e-300), _CMP_LT_OQ);            \
        if (PTL_VBITS(S, tiny) != 0) {                                                    \
            PTL_VT(S) big = PTL_V(S, max)(PTL_V(S, mul)(ax, PTL_V(S, set1)(0x1p64)),      \
                                          PTL_V(S, set1)(0x1p-1022));                     \
            PTL_VT(S) l = PTL_V(S, sub)(PTL_V(S, set1)(64 * LN2), ptl_vm_log_normal_##S(big)); \
            y = PTL_VSEL(S, tiny, y, l);                                                  \
        }                                                                                 \
        PTL_VMT(S) pole = PTL_VMOR(S, PTL_VCMP(S, x, zero, _CMP_EQ_OQ),                   \
                                   PTL_VMAND(S, neg, PTL_VCMP(S, x, rd, _CMP_EQ_OQ)));    \
        pole = PTL_VMOR(S, pole, PTL_VCMP(S, ax, PTL_V(S, set1)(INFINITY), _CMP_EQ_OQ));  \
        y = PTL_VSEL(S, pole, y, PTL_V(S, set1)(INFINITY));                               \
        return PTL_VSEL(S, PTL_VCMP(S, x, x, _CMP_UNORD_Q), y, x);                        \
    }                                                                                     \
    /* I_order(x), times e^-|x| when scaled (order 0 or 1) */                             \
    PTL_VATTR(S) static inline PTL_VT(S) bessel_f8_##S(PTL_VT(S) x, int order, int scaled) \
    {                                                                                     \
        const PTL_VT(S) eight = PTL_V(S, set1)(8.0), sign = PTL_V(S, set1)(-0.0);         \
        PTL_VT(S) ax = PTL_V(S, andnot)(sign, x);                                         \
        PTL_VT(S) h = PTL_V(S, mul)(PTL_V(S, min)(ax, eight), PTL_V(S, set1)(0.5));       \
        PTL_VT(S) q = PTL_V(S, mul)(h, h);                                                \
        PTL_VT(S) y = order == 0 ? PTL_VM_POLY(S, q, i0_near_coef)                        \
                                 : PTL_V(S, mul)(h, PTL_VM_POLY(S, q, i1_near_coef));     \
        if (scaled) {                                                                     \
            PTL_VT(S) e = ptl_vm_exp_##S(PTL_V(S, mul)(h, PTL_V(S, set1)(-2.0)));         \
            y = PTL_V(S, mul)(y, e);                                                      \
        }                                                                                 \
        PTL_VMT(S) big = PTL_VCMP(S, ax, eight, _CMP_GT_OQ);                              \
        if (PTL_VBITS(S, big) != 0) {                                                     \
            PTL_VT(S) ab = PTL_V(S, max)(ax, eight);                                      \
            PTL_VT(S) v = PTL_V(S, sub)(PTL_V(S, div)(PTL_V(S, set1)(16.0), ab),          \
                                        PTL_V(S, set1)(1.0));                             \
            PTL_VT(S) r = order == 0 ? PTL_VM_POLY(S, v, i0e_far_coef)                    \
                                     : PTL_VM_POLY(S, v, i1e_far_coef);                   \
            r = PTL_V(S, div)(r, PTL_V(S, sqrt)(ab));                                     \
            if (!scaled) {                                                                \
                const PTL_VT(S) lim = PTL_V(S, set1)(700.0);                              \
                PTL_VMT(S) huge = PTL_VCMP(S, ab, lim, _CMP_GT_OQ);                       \
                PTL_VT(S) e = ptl_vm_exp_##S(PTL_V(S, min)(ab, lim));                     \
                PTL_VT(S) rh = PTL_V(S, mul)(r, e);                                       \
                if (PTL_VBITS(S, huge) != 0) {                                            \
                    PTL_VT(S) eh = ptl_vm_exp_##S(PTL_V(S, mul)(ab, PTL_V(S, set1)(0.5))); \
                    PTL_VT(S) r2 = PTL_V(S, mul)(PTL_V(S, mul)(r, eh), eh);               \
                    rh = PTL_VSEL(S, huge, rh, r2);                                       \
                }                                                                         \
                PTL_VMT(S) inf = PTL_VCMP(S, ab, PTL_V(S, set1)(INFINITY), _CMP_EQ_OQ);   \
                r = PTL_VSEL(S, inf, rh, PTL_V(S, set1)(NAN));                            \
            }                                                                             \
            y = PTL_VSEL(S, big, y, r);                                                   \
        }                                                                                 \
        y = order == 0 ? y : PTL_V(S, or)(y, PTL_V(S, and)(sign, x));                     \
        return PTL_VSEL(S, PTL_VCMP(S, x, x, _CMP_UNORD_Q), y, x);                        \
    }
DEFINE_F8_FORMULAS(pd)
DEFINE_F8_FORMULAS(pd512)
#undef DEFINE_F8_FORMULAS

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
        y = PTL_VSEL(S, PTL_VCMP(S, x, PTL_V(S, set1)(-INFINITY), _CMP_EQ_OQ), y,         \
                     PTL_V(S, set1)(NAN));                                                \
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
    PTL_VATTR(S) static inline PTL_VT(S) apply_f8_##S(PTL_VT(S) v, int fn)                \
    {                                                                                     \
        switch (fn) {                                                                     \
        case PTL_SPECIAL_LGAMMA: return lgamma_f8_##S(v);                                 \
        case PTL_SPECIAL_DIGAMMA: return digamma_##S(v);                                  \
        case PTL_SPECIAL_TRIGAMMA: return trigamma_##S(v);                                \
        case PTL_SPECIAL_I0: return bessel_f8_##S(v, 0, 0);                               \
        case PTL_SPECIAL_I0E: return bessel_f8_##S(v, 0, 1);                              \
        case PTL_SPECIAL_I1: return bessel_f8_##S(v, 1, 0);                               \
        default: return bessel_f8_##S(v, 1, 1);                                           \
        }                                                                                 \
    }                                                                                     \
    /* o[i] = F(a[i]) over float64 data */                                                \
    PTL_VATTR(S) static void map_f8_##S(double *o, const double *a, int64_t n, int fn)    \
    {                                                                                     \
        const int64_t L = PTL_VLANES(S);                                                  \
        for (int64_t i = 0; i < n; i += L) {                                              \
            double buf[PTL_VLANES(S)] = {0};                                              \
            if (n - i < L) {                                                              \
                memcpy(buf, a + i, (size_t)(n - i) * sizeof(double));                     \
                PTL_V(S, storeu)(buf, apply_f8_##S(PTL_V(S, loadu)(buf), fn));           \
                memcpy(o + i, buf, (size_t)(n - i) * sizeof(double));                     \
            } else {                                                                      \
                PTL_V(S, storeu)(o + i, apply_f8_##S(PTL_V(S, loadu)(a + i), fn));        \
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
    if (cap < PTL_CPU_AVX2 || fn < 0 || fn > PTL_SPECIAL_I1E ||
        (!is_double && fn > PTL_SPECIAL_TRIGAMMA)) {
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
