/* unary_f8_trig.h -- the float64 vector formulas of unary.c's asin, acos, atan, asinh and
 * acosh and binary.c's atan2, in double lanes of kind S (pd, pd512): DEFINE_UNARY_VEC_TRIG_D(S)
 * defines ptl_vm_<op>_S and its map for unary.c's vector loop tables (float32 acos, asinh and
 * acosh run the same formulas in double lanes), DEFINE_VEC_ATAN2_D(S) atan2 alone (binary.c);
 * from vec_math.h's double log (the macros expand after vec_math.h).  Private to unary.c and
 * binary.c. */
#ifndef PTL_ATEN_NATIVE_UNARY_F8_TRIG_H
#define PTL_ATEN_NATIVE_UNARY_F8_TRIG_H

/* Note [Vector float64 asin, acos, atan, asinh, acosh]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * libm's scalar asin, acos, atan, atan2, asinh and acosh per element made these float64 ops
 * 0.3-0.9x PyTorch's vector loops (1e6 values, one thread).  The inverse trigonometric
 * results are sums hi + k s + (lo + k c) (trig_sum), hi + lo a multiple of pi/4 in two
 * doubles, s the main term, c its small correction: hi + k s is rounded once and its error
 * recovered exactly (Fast2Sum: |hi| >= |k s| or hi = 0), so only the last addition rounds at
 * the result's size.  Measured against long double and mpmath on dense samples of every range
 * and split (tests/aten/test_vec_trig_f64.py): asin 0.64 ulp, acos 0.6, atan 0.69, atan2
 * 0.73, asinh 1.35, acosh 1.2.
 *
 * asin, acos (asin_core): on a = |x|, a <= 1/2: asin(a) = a + a z P(z), z = a^2; a > 1/2:
 * asin(a) = pi/2 - 2 asin(sqrt(w)), w = (1 - a) / 2 (exact), asin(sqrt(w)) = s + c +
 * s w P(w) with s = sqrt(w) rounded and c = (w - s^2) / (2 s) (w - s^2 by one FMA: sqrt's
 * rounding does not double into the result).  P is a degree-12 Chebyshev fit of
 * (asin(sqrt t) - sqrt t) / t^(3/2) on t in [0, 1/4] (2.2e-17 absolute with the rounded
 * coefficients; tools/fit_asin_atan_f64.py).  asin: x's sign put back (+-0 kept); acos:
 * pi/2 - asin(x) for |x| <= 1/2, 2 asin(sqrt(w)) for x > 1/2, pi - 2 asin(sqrt(w)) for
 * x < -1/2 (acos(1) = +0, acos(-1) pi rounded).  |x| > 1 gives sqrt's NaN, NaN propagates.
 *
 * atan2 (atan is atan2(x, 1), x clamped to +-DBL_MAX): with mn, mx the smaller and larger of
 * |x|, |y|, z = mn / mx for mn <= mx / 2, else (mn - mx) / (mn + mx) (mn - mx exact) plus
 * pi/4: |z| <= 1/2.  The quotient's error dz comes back from its exact remainder (an FMA) and
 * mn + mx's rounding error (Fast2Sum), atan(z + dz) = z + z t Q(t) + dz (1 - t), t = z^2, Q a
 * degree-12 Chebyshev fit of (atan(sqrt t) - sqrt t) / t^(3/2) on [0, 1/4] (1.9e-17).  Then
 * m pi/4 +- atan(z) with m = 2 - m where |y| > |x| and 4 - m where x < 0 (m pi/4 as an
 * exact product's FMA split), y's sign.  Slow lanes (the caller's libm atan2): zeros (the
 * signed quadrants), infinities, NaN and mx > 2^1000 (mn + mx would overflow).
 *
 * asinh, acosh: log(u) + l / u for a value u + l (u >= 1, l its rounding errors): log1p's
 * arrangement of Note [Vector float64 log, log1p, expm1] (u = 1 + v, exact error by
 * Sterbenz's lemma) on fdlibm's v: asinh(a) = log1p(a + a^2 / (1 + sqrt(1 + a^2))) for a <= 2,
 * acosh(x) = log1p(t + sqrt(2t + t^2)), t = x - 1 (exact), for x <= 2, the sums by Fast2Sum
 * and acosh's sqrt corrected by its residual (else 2.4 ulp near 1, as glibc's); above 2
 * fdlibm's log(2a + 1 / (a + sqrt(a^2 + 1))) and log(2x - 1 / (x + sqrt(x^2 - 1))) with the
 * sum's error by Fast2Sum; above 2^28 log(a) + ln 2.  asinh keeps x's sign (+-0 kept,
 * subnormals exact: u = 1, l = a), +-inf gives +-inf; acosh(1) = +0, acosh(inf) = inf,
 * x < 1 and NaN NaN. */
/* (asin(sqrt t) - sqrt t) / t^(3/2) = P(t), t in [0, 1/4], the highest power first */
static const double asin_d_coef[] = {
    0.028757851367421566, -0.014851887071247204, 0.01740087944269402,  0.005457506718640358,
    0.01032281435018578,  0.011479177415184906,  0.013971212973552933, 0.017352392720869973,
    0.02237217294214989,  0.030381944138531247,  0.04464285714635543,  0.07499999999998433,
    0.16666666666666669};
/* (atan(sqrt t) - sqrt t) / t^(3/2) = Q(t), t in [0, 1/4], the highest power first */
static const double atan_d_coef[] = {
    -0.009215792047089858, 0.025006503566489507, -0.03806653672057366, 0.04628024868570153,
    -0.05240099507994713,  0.05879578429582425,  -0.06666435677235948, 0.07692294712540285,
    -0.09090908620322523,  0.11111111100917376,  -0.14285714285599188, 0.19999999999999488,
    -0.3333333333333333};
/* pi/4, pi/2 and pi as HI (rounded) + LO */
#define TRIG_PIO4_HI 0.78539816339744828
#define TRIG_PIO4_LO 3.0616169978683830e-17
#define TRIG_PIO2_HI 1.5707963267948966
#define TRIG_PIO2_LO 6.1232339957367660e-17
#define TRIG_PI_HI 3.1415926535897931
#define TRIG_PI_LO 1.2246467991473532e-16
#define TRIG_LN2 0.69314718055994531
/* atan2's lanes of kind S (binary.c expands this alone): z t Q(t), t = z^2, the part of
 * atan(z) past z (|z| <= 1/2), and atan2 itself (*slow: the lanes the caller redoes) */
#define DEFINE_VEC_ATAN2_D(S)                                                             \
    /* hi + k s + (lo + k c), hi + k s's rounding error recovered (Fast2Sum) */           \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_trig_sum_##S(PTL_VT(S) hi, PTL_VT(S) lo,  \
                                                            PTL_VT(S) k, PTL_VT(S) s,     \
                                                            PTL_VT(S) c)                  \
    {                                                                                     \
        PTL_VT(S) ks = PTL_V(S, mul)(k, s), sum = PTL_V(S, add)(hi, ks);                  \
        PTL_VT(S) err = PTL_V(S, sub)(ks, PTL_V(S, sub)(sum, hi));                        \
        return PTL_V(S, add)(sum, PTL_V(S, fmadd)(k, c, PTL_V(S, add)(err, lo)));         \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_atan_tail_##S(PTL_VT(S) z)                \
    {                                                                                     \
        PTL_VT(S) t = PTL_V(S, mul)(z, z);                                                \
        return PTL_V(S, mul)(PTL_V(S, mul)(z, t), PTL_VM_POLY(S, t, atan_d_coef));        \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S)                                                  \
        ptl_vm_atan2d_##S(PTL_VT(S) y, PTL_VT(S) x, PTL_VMT(S) *slow)                     \
    {                                                                                     \
        const PTL_VT(S) sign = PTL_V(S, set1)(-0.0), zero = PTL_V(S, setzero)();          \
        const PTL_VT(S) one = PTL_V(S, set1)(1.0), m_one = PTL_V(S, set1)(-1.0);          \
        PTL_VT(S) ax = PTL_V(S, andnot)(sign, x), ay = PTL_V(S, andnot)(sign, y);         \
        PTL_VT(S) mx = PTL_V(S, max)(ax, ay), mn = PTL_V(S, min)(ax, ay);                 \
        PTL_VMT(S) mid = PTL_VCMP(S, mn, PTL_V(S, mul)(mx, PTL_V(S, set1)(0.5)), _CMP_GT_OQ); \
        PTL_VT(S) sum = PTL_V(S, add)(mn, mx);                                            \
        PTL_VT(S) num = PTL_VSEL(S, mid, mn, PTL_V(S, sub)(mn, mx));                      \
        PTL_VT(S) den = PTL_VSEL(S, mid, mx, sum);                                        \
        PTL_VT(S) z = PTL_V(S, div)(num, den);                                            \
        /* num / (den + e) = z + dz, e: mn + mx's rounding error (Fast2Sum), dz from the  \
         * quotient's exact remainder; atan(z + dz) = atan(z) + dz (1 - z^2) */           \
        PTL_VT(S) e = PTL_VSEL(S, mid, zero, PTL_V(S, sub)(mn, PTL_V(S, sub)(sum, mx)));  \
        PTL_VT(S) dz = PTL_V(S, fnmadd)(z, e, PTL_V(S, fnmadd)(z, den, num));             \
        dz = PTL_V(S, div)(dz, den);                                                      \
        PTL_VT(S) c = PTL_V(S, add)(ptl_vm_atan_tail_##S(z),                              \
                                    PTL_V(S, fnmadd)(dz, PTL_V(S, mul)(z, z), dz));       \
        PTL_VT(S) m = PTL_VSEL(S, mid, zero, one), k = one;                               \
        PTL_VMT(S) swap = PTL_VCMP(S, ay, ax, _CMP_GT_OQ);                                \
        m = PTL_VSEL(S, swap, m, PTL_V(S, sub)(PTL_V(S, set1)(2.0), m));                  \
        k = PTL_VSEL(S, swap, k, m_one);                                                  \
        PTL_VMT(S) neg = PTL_VCMP(S, x, zero, _CMP_LT_OQ);                                \
        m = PTL_VSEL(S, neg, m, PTL_V(S, sub)(PTL_V(S, set1)(4.0), m));                   \
        k = PTL_VSEL(S, neg, k, PTL_V(S, sub)(zero, k));                                  \
        PTL_VT(S) hi = PTL_V(S, mul)(m, PTL_V(S, set1)(TRIG_PIO4_HI));                    \
        PTL_VT(S) lo = PTL_V(S, fmadd)(m, PTL_V(S, set1)(TRIG_PIO4_LO),                   \
                                       PTL_V(S, fmsub)(m, PTL_V(S, set1)(TRIG_PIO4_HI), hi)); \
        *slow = PTL_VMOR(S, PTL_VCMP(S, mx, PTL_V(S, set1)(0x1p1000), _CMP_NLE_UQ),       \
                         PTL_VMOR(S, PTL_VCMP(S, mx, zero, _CMP_EQ_OQ),                   \
                                  PTL_VCMP(S, x, y, _CMP_UNORD_Q)));                      \
        return PTL_V(S, or)(ptl_vm_trig_sum_##S(hi, lo, k, z, c), PTL_V(S, and)(sign, y)); \
    }

#define DEFINE_UNARY_VEC_TRIG_D(S)                                                        \
    DEFINE_VEC_ATAN2_D(S)                                                                 \
    /* asin(a) = s + *c for a = |x| <= 1/2, asin(sqrt(w)) = s + *c above (*near) */      \
    PTL_VATTR(S) static inline PTL_VT(S)                                                  \
        ptl_vm_asin_core_##S(PTL_VT(S) a, PTL_VMT(S) *near, PTL_VT(S) *c)                 \
    {                                                                                     \
        *near = PTL_VCMP(S, a, PTL_V(S, set1)(0.5), _CMP_LE_OQ);                          \
        PTL_VT(S) w = PTL_V(S, mul)(PTL_V(S, sub)(PTL_V(S, set1)(1.0), a),                \
                                    PTL_V(S, set1)(0.5));                                 \
        PTL_VT(S) sq = PTL_V(S, sqrt)(w), two_sq = PTL_V(S, add)(sq, sq);                 \
        PTL_VT(S) r = PTL_V(S, div)(PTL_V(S, fnmadd)(sq, sq, w),                          \
                                    PTL_V(S, max)(two_sq, PTL_V(S, set1)(DBL_MIN)));      \
        PTL_VT(S) z = PTL_VSEL(S, *near, w, PTL_V(S, mul)(a, a));                         \
        PTL_VT(S) s = PTL_VSEL(S, *near, sq, a);                                          \
        r = PTL_VSEL(S, *near, r, PTL_V(S, setzero)());                                   \
        *c = PTL_V(S, fmadd)(PTL_V(S, mul)(s, z), PTL_VM_POLY(S, z, asin_d_coef), r);     \
        return s;                                                                         \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_asin_##S(PTL_VT(S) x)                     \
    {                                                                                     \
        const PTL_VT(S) sign = PTL_V(S, set1)(-0.0), zero = PTL_V(S, setzero)();          \
        PTL_VMT(S) near;                                                                  \
        PTL_VT(S) c, s = ptl_vm_asin_core_##S(PTL_V(S, andnot)(sign, x), &near, &c);      \
        PTL_VT(S) hi = PTL_VSEL(S, near, PTL_V(S, set1)(TRIG_PIO2_HI), zero);             \
        PTL_VT(S) lo = PTL_VSEL(S, near, PTL_V(S, set1)(TRIG_PIO2_LO), zero);             \
        PTL_VT(S) k = PTL_VSEL(S, near, PTL_V(S, set1)(-2.0), PTL_V(S, set1)(1.0));       \
        return PTL_V(S, or)(ptl_vm_trig_sum_##S(hi, lo, k, s, c), PTL_V(S, and)(sign, x)); \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_acos_##S(PTL_VT(S) x)                     \
    {                                                                                     \
        const PTL_VT(S) sign = PTL_V(S, set1)(-0.0), zero = PTL_V(S, setzero)();          \
        PTL_VMT(S) near, neg = PTL_VCMP(S, x, zero, _CMP_LT_OQ);                          \
        PTL_VT(S) c, s = ptl_vm_asin_core_##S(PTL_V(S, andnot)(sign, x), &near, &c);      \
        PTL_VT(S) hi = PTL_VSEL(S, neg, zero, PTL_V(S, set1)(TRIG_PI_HI));                \
        PTL_VT(S) lo = PTL_VSEL(S, neg, zero, PTL_V(S, set1)(TRIG_PI_LO));                \
        PTL_VT(S) k = PTL_VSEL(S, neg, PTL_V(S, set1)(2.0), PTL_V(S, set1)(-2.0));        \
        hi = PTL_VSEL(S, near, hi, PTL_V(S, set1)(TRIG_PIO2_HI));                         \
        lo = PTL_VSEL(S, near, lo, PTL_V(S, set1)(TRIG_PIO2_LO));                         \
        k = PTL_VSEL(S, near, k, PTL_V(S, xor)(PTL_V(S, set1)(-1.0), PTL_V(S, and)(sign, x))); \
        return ptl_vm_trig_sum_##S(hi, lo, k, s, c);                                      \
    }                                                                                     \
    /* atan(x) = atan2(x, 1) with x clamped to the finite doubles (whose atan rounds to  \
     * inf's), no slow lanes but NaN */                                                   \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_atan_##S(PTL_VT(S) x)                     \
    {                                                                                     \
        PTL_VMT(S) slow;                                                                  \
        PTL_VT(S) xc = PTL_V(S, max)(PTL_V(S, min)(x, PTL_V(S, set1)(DBL_MAX)),           \
                                     PTL_V(S, set1)(-DBL_MAX));                           \
        PTL_VT(S) y = ptl_vm_atan2d_##S(xc, PTL_V(S, set1)(1.0), &slow);                  \
        return PTL_VSEL(S, PTL_VCMP(S, x, x, _CMP_UNORD_Q), y, x);                        \
    }                                                                                     \
    /* u = 1 + vh rounded, *l = vl + its rounding error (vh >= 0; exact by Sterbenz) */  \
    PTL_VATTR(S) static inline PTL_VT(S)                                                  \
        ptl_vm_one_plus_err_##S(PTL_VT(S) vh, PTL_VT(S) vl, PTL_VT(S) *l)                 \
    {                                                                                     \
        const PTL_VT(S) one = PTL_V(S, set1)(1.0);                                        \
        PTL_VT(S) u = PTL_V(S, add)(one, vh);                                             \
        *l = PTL_V(S, add)(vl, PTL_VSEL(S, PTL_VCMP(S, vh, one, _CMP_GE_OQ),              \
                                        PTL_V(S, sub)(vh, PTL_V(S, sub)(u, one)),         \
                                        PTL_V(S, sub)(one, PTL_V(S, sub)(u, vh))));       \
        return u;                                                                         \
    }                                                                                     \
    /* log(u + l) for u >= 1 finite, |l| <= ulp(u); plus ln 2 where huge */               \
    PTL_VATTR(S) static inline PTL_VT(S)                                                  \
        ptl_vm_log_sum_##S(PTL_VT(S) u, PTL_VT(S) l, PTL_VMT(S) huge)                     \
    {                                                                                     \
        PTL_VT(S) y = PTL_V(S, add)(ptl_vm_log_normal_##S(u), PTL_V(S, div)(l, u));       \
        return PTL_V(S, add)(y, PTL_VSEL(S, huge, PTL_V(S, setzero)(),                    \
                                         PTL_V(S, set1)(TRIG_LN2)));                      \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_asinh_##S(PTL_VT(S) x)                    \
    {                                                                                     \
        const PTL_VT(S) sign = PTL_V(S, set1)(-0.0), one = PTL_V(S, set1)(1.0);           \
        PTL_VT(S) a = PTL_V(S, andnot)(sign, x), a2 = PTL_V(S, mul)(a, a);                \
        PTL_VT(S) sq = PTL_V(S, sqrt)(PTL_V(S, add)(a2, one));                            \
        PTL_VT(S) d = PTL_V(S, div)(a2, PTL_V(S, add)(one, sq)), vh = PTL_V(S, add)(a, d); \
        PTL_VT(S) l, u = ptl_vm_one_plus_err_##S(vh, PTL_V(S, sub)(d, PTL_V(S, sub)(vh, a)), &l); \
        PTL_VT(S) q = PTL_V(S, div)(one, PTL_V(S, add)(sq, a)), a2x = PTL_V(S, add)(a, a); \
        PTL_VT(S) w = PTL_V(S, add)(a2x, q);                                              \
        PTL_VMT(S) far = PTL_VCMP(S, a, PTL_V(S, set1)(2.0), _CMP_GT_OQ);                 \
        PTL_VMT(S) huge = PTL_VCMP(S, a, PTL_V(S, set1)(0x1p28), _CMP_GT_OQ);             \
        u = PTL_VSEL(S, far, u, w);                                                       \
        l = PTL_VSEL(S, far, l, PTL_V(S, sub)(q, PTL_V(S, sub)(w, a2x)));                 \
        u = PTL_VSEL(S, huge, u, PTL_V(S, min)(a, PTL_V(S, set1)(DBL_MAX)));              \
        l = PTL_VSEL(S, huge, l, PTL_V(S, setzero)());                                    \
        PTL_VT(S) y = ptl_vm_log_sum_##S(u, l, huge);                                     \
        y = PTL_VSEL(S, PTL_VCMP(S, a, PTL_V(S, set1)(DBL_MAX), _CMP_GT_OQ), y, a);       \
        y = PTL_VSEL(S, PTL_VCMP(S, x, x, _CMP_UNORD_Q), y, x);                           \
        return PTL_V(S, or)(y, PTL_V(S, and)(sign, x));                                   \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_acosh_##S(PTL_VT(S) x)                    \
    {                                                                                     \
        const PTL_VT(S) one = PTL_V(S, set1)(1.0);                                        \
        PTL_VT(S) t = PTL_V(S, sub)(x, one);                                              \
        PTL_VT(S) t2 = PTL_V(S, add)(t, t), sq = PTL_V(S, sqrt)(PTL_V(S, fmadd)(t, t, t2)); \
        /* sqrt(2t + t^2) = sq + (2t + t^2 - sq^2) / (2 sq), sq + t by Fast2Sum */         \
        PTL_VT(S) vl = PTL_V(S, div)(PTL_V(S, fmadd)(t, t, PTL_V(S, fnmadd)(sq, sq, t2)),  \
                                     PTL_V(S, max)(PTL_V(S, add)(sq, sq),                 \
                                                   PTL_V(S, set1)(DBL_MIN)));             \
        PTL_VT(S) vh = PTL_V(S, add)(sq, t);                                              \
        vl = PTL_V(S, add)(vl, PTL_V(S, sub)(t, PTL_V(S, sub)(vh, sq)));                  \
        PTL_VT(S) l, u = ptl_vm_one_plus_err_##S(vh, vl, &l);                             \
        PTL_VT(S) q = PTL_V(S, div)(one, PTL_V(S, add)(                                   \
                                             x, PTL_V(S, sqrt)(PTL_V(S, fmsub)(x, x, one)))); \
        PTL_VT(S) x2 = PTL_V(S, add)(x, x), w = PTL_V(S, sub)(x2, q);                     \
        PTL_VMT(S) far = PTL_VCMP(S, x, PTL_V(S, set1)(2.0), _CMP_GT_OQ);                 \
        PTL_VMT(S) huge = PTL_VCMP(S, x, PTL_V(S, set1)(0x1p28), _CMP_GT_OQ);             \
        u = PTL_VSEL(S, far, u, w);                                                       \
        l = PTL_VSEL(S, far, l, PTL_V(S, sub)(PTL_V(S, sub)(x2, w), q));                  \
        u = PTL_VSEL(S, huge, u, PTL_V(S, min)(x, PTL_V(S, set1)(DBL_MAX)));              \
        l = PTL_VSEL(S, huge, l, PTL_V(S, setzero)());                                    \
        PTL_VT(S) y = ptl_vm_log_sum_##S(u, l, huge);                                     \
        y = PTL_VSEL(S, PTL_VCMP(S, x, PTL_V(S, set1)(DBL_MAX), _CMP_GT_OQ), y, x);       \
        return PTL_VSEL(S, PTL_VCMP(S, x, one, _CMP_NGE_UQ), y, PTL_V(S, set1)(NAN));     \
    }                                                                                     \
    PTL_VM_DEFINE_MAP(asin, S)                                                            \
    PTL_VM_DEFINE_MAP(acos, S)                                                            \
    PTL_VM_DEFINE_MAP(atan, S)                                                            \
    PTL_VM_DEFINE_MAP(asinh, S)                                                           \
    PTL_VM_DEFINE_MAP(acosh, S)                                                           \
    DEFINE_F4_IN_DOUBLE_MAP(acos, acos, S)                                                \
    DEFINE_F4_IN_DOUBLE_MAP(asinh, asinh, S)                                              \
    DEFINE_F4_IN_DOUBLE_MAP(acosh, acosh, S)

#endif
