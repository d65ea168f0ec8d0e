/* unary_f8_math.h -- the float64 vector formulas of unary.c's log, log1p, expm1, log10, sinh,
 * cosh and atanh, in double lanes of kind S (pd, pd512): DEFINE_UNARY_VEC_LOG1P_EXPM1_D(S)
 * defines ptl_vm_<op>_S and its map for unary.c's vector loop tables, from vec_math.h's
 * double log, exp and pow2i (the macro expands where unary.c instantiates its double
 * formulas, after vec_math.h).  Private to unary.c. */
#ifndef PTL_ATEN_NATIVE_UNARY_F8_MATH_H
#define PTL_ATEN_NATIVE_UNARY_F8_MATH_H

/* Note [Vector float64 log, log1p, expm1]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * libm's scalar log, log1p, expm1, log10, sinh, cosh and atanh per element made these float64
 * ops 0.19-0.63x PyTorch's vector loops (1e6 values, one thread).
 *
 * log (logd): vec_math.h's double log (ptl_vm_log_normal, fdlibm's e ln2 + log(m)
 * arrangement) on normal x; subnormal x takes libm's log, +-0 gives -inf, x < 0 and NaN
 * NaN, inf inf.
 *
 * log1p (log1pd): u = 1 + x rounded and log(u) + c, c = ((1 + x) - u) / u the rounding
 * error's share (fdlibm's log1p correction): (1 + x) - u is x - (u - 1) below x = 1 and
 * 1 - (u - x) from 1 up, each exact by Sterbenz's lemma.  u is 1 when |x| < 2^-53: then x
 * itself (-0 and subnormals kept).  x = -1 gives -inf, x < -1 and NaN NaN, inf inf.
 *
 * expm1 (expm1d): x = n ln2 + r as in Note [Vector exp] (n = round(x log2(e)), ln2 in two
 * parts, |r| <= ln2 / 2), e^r - 1 = y = r + r^2 P(r) with exp's Taylor terms (relative to
 * the result: no 1 is added), then 2^n e^r - 1 = 2 ((h r + (h - 1/2)) + h r^2 P(r)), h =
 * 2^(n-1) (exact scalings; h - 1/2 is exact up to n = 54, and h stays finite up to n =
 * 1024, where x <= 709.78 needs it; y rounded first and then added to h - 1/2 lost 1.8 ulp
 * at n = 1).  n = 0 returns y itself; x = +-0 x; x > 709.782712893384 inf,
 * x < -40 -1 (e^-40 is below half an ulp of 1), NaN NaN.
 *
 * log10: e log10(2) + log(m) / ln(10) as the double log's m, e, with log10(2) in two parts
 * (e HI exact), fdlibm's e_log10 arrangement (1.8 ulp measured).  sinh (sinhd), a = |x|,
 * t = expm1(a), fdlibm's forms: (2t - t^2 / (t + 1)) / 2 below 1, (t + t / (t + 1)) / 2 below
 * 22, e^a / 2 above (half_exp: exp's y 2^n scaled by 2^(n-2) and 2, finite to 710.47), x's
 * sign put back, x itself below 2^-28.  cosh (coshd): (e^a + e^-a) / 2 below 22 (a sum of
 * positives: no cancellation, so no expm1 form near 0), e^a / 2 above.  atanh: fdlibm's
 * log1p(2a + 2a^2 / (1 - a)) / 2 below 1/2, log1p(2a / (1 - a)) / 2 above, x's sign; +-1
 * gives +-inf, |x| > 1 and NaN NaN, x itself below 2^-28. */
/* log10(2) = LOG10_2_HI + LOG10_2_LO, HI's low 20 bits zero (e HI exact); 1 / ln(10) */
/* The double logs' shared pieces (log2 in unary.c, log and log10 here), lanes of kind S:
 * ptl_vm_log_split_d: x = m 2^e with m in [sqrt(1/2), sqrt(2)] (normal x), m returned;
 * ptl_vm_log_edges_d: y, the formula's value on positive normal x, with x's edges put in
 * (inf for inf, -inf for +-0, NaN below 0 and for NaN, libm's f on subnormals). */
#define DEFINE_UNARY_VEC_LOG_PARTS_D(S)                                                   \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_log_split_d_##S(PTL_VT(S) x, PTL_VT(S) *ep) \
    {                                                                                     \
        PTL_VT(S) e, m = ptl_vm_split_##S(x, &e);                                         \
        PTL_VMT(S) big = PTL_VCMP(S, m, PTL_V(S, set1)(1.4142135623730951), _CMP_GT_OQ);  \
        m = PTL_VSEL(S, big, m, PTL_V(S, mul)(m, PTL_V(S, set1)(0.5)));                   \
        *ep = PTL_VSEL(S, big, e, PTL_V(S, add)(e, PTL_V(S, set1)(1.0)));                 \
        return m;                                                                         \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S)                                                  \
        ptl_vm_log_edges_d_##S(PTL_VT(S) y, PTL_VT(S) x, double (*f)(double))             \
    {                                                                                     \
        const PTL_VT(S) zero = PTL_V(S, setzero)();                                       \
        y = PTL_VSEL(S, PTL_VCMP(S, x, PTL_V(S, set1)(DBL_MAX), _CMP_GT_OQ), y, x);       \
        y = PTL_VSEL(S, PTL_VCMP(S, x, zero, _CMP_EQ_OQ), y, PTL_V(S, set1)(-INFINITY));  \
        y = PTL_VSEL(S, PTL_VCMP(S, x, zero, _CMP_NGE_UQ), y, PTL_V(S, set1)(NAN));       \
        PTL_VMT(S) slow = PTL_VMAND(S, PTL_VCMP(S, x, zero, _CMP_GT_OQ),                  \
                                    PTL_VCMP(S, x, PTL_V(S, set1)(DBL_MIN), _CMP_LT_OQ)); \
        return ptl_vm_patch_##S(y, x, slow, f);                                           \
    }

#define LOG10_2_HI 3.01029995663611771306e-01
#define LOG10_2_LO 3.69423907715893078616e-13
#define IVLN10 4.34294481903251816668e-01
#define DEFINE_UNARY_VEC_LOG1P_EXPM1_D(S)                                                 \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_logd_##S(PTL_VT(S) x)                     \
    {                                                                                     \
        return ptl_vm_log_edges_d_##S(ptl_vm_log_normal_##S(x), x, log);                  \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_log1pd_##S(PTL_VT(S) x)                   \
    {                                                                                     \
        const PTL_VT(S) one = PTL_V(S, set1)(1.0);                                        \
        PTL_VT(S) u = PTL_V(S, add)(one, x);                                              \
        PTL_VT(S) err = PTL_VSEL(S, PTL_VCMP(S, x, one, _CMP_GE_OQ),                      \
                                 PTL_V(S, sub)(x, PTL_V(S, sub)(u, one)),                 \
                                 PTL_V(S, sub)(one, PTL_V(S, sub)(u, x)));                \
        PTL_VT(S) y = PTL_V(S, add)(ptl_vm_log_normal_##S(u), PTL_V(S, div)(err, u));     \
        y = PTL_VSEL(S, PTL_VCMP(S, u, one, _CMP_EQ_OQ), y, x);                           \
        y = PTL_VSEL(S, PTL_VCMP(S, x, PTL_V(S, set1)(DBL_MAX), _CMP_GT_OQ), y, x);       \
        y = PTL_VSEL(S, PTL_VCMP(S, x, PTL_V(S, set1)(-1.0), _CMP_EQ_OQ), y,              \
                     PTL_V(S, set1)(-INFINITY));                                          \
        return PTL_VSEL(S, PTL_VCMP(S, x, PTL_V(S, set1)(-1.0), _CMP_NGE_UQ), y,          \
                        PTL_V(S, set1)(NAN));                                             \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_expm1d_##S(PTL_VT(S) x)                   \
    {                                                                                     \
        const PTL_VT(S) half = PTL_V(S, set1)(0.5), zero = PTL_V(S, setzero)();           \
        PTL_VT(S) xc = PTL_V(S, max)(PTL_V(S, min)(x, PTL_V(S, set1)(709.782712893384)),  \
                                     PTL_V(S, set1)(-40.0));                              \
        PTL_VT(S) n = PTL_VROUND(S, PTL_V(S, mul)(xc, PTL_V(S, set1)(PTL_VM_LOG2E_pd)));  \
        PTL_VT(S) r = PTL_V(S, fnmadd)(n, PTL_V(S, set1)(PTL_VM_LN2_HI_pd), xc);          \
        r = PTL_V(S, fnmadd)(n, PTL_V(S, set1)(PTL_VM_LN2_LO_pd), r);                     \
        PTL_VT(S) p = PTL_VM_POLY(S, r, ptl_vm_exp_coef_pd), rr = PTL_V(S, mul)(r, r);    \
        PTL_VT(S) y = PTL_V(S, fmadd)(p, rr, r);                                          \
        PTL_VT(S) h = ptl_vm_pow2i_##S(PTL_V(S, sub)(n, PTL_V(S, set1)(1.0)));            \
        PTL_VT(S) z = PTL_V(S, fmadd)(h, PTL_V(S, mul)(p, rr),                            \
                                      PTL_V(S, fmadd)(h, r, PTL_V(S, sub)(h, half)));     \
        z = PTL_VSEL(S, PTL_VCMP(S, n, zero, _CMP_EQ_OQ), PTL_V(S, add)(z, z), y);        \
        z = PTL_VSEL(S, PTL_VCMP(S, x, zero, _CMP_EQ_OQ), z, x);                          \
        z = PTL_VSEL(S, PTL_VCMP(S, x, PTL_V(S, set1)(709.782712893384), _CMP_GT_OQ), z,  \
                     PTL_V(S, set1)(INFINITY));                                           \
        z = PTL_VSEL(S, PTL_VCMP(S, x, PTL_V(S, set1)(-40.0), _CMP_LT_OQ), z,             \
                     PTL_V(S, set1)(-1.0));                                               \
        return PTL_VSEL(S, PTL_VCMP(S, x, x, _CMP_UNORD_Q), z, x);                        \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_log10_##S(PTL_VT(S) x)                    \
    {                                                                                     \
        PTL_VT(S) e, m = ptl_vm_log_split_d_##S(x, &e);                                   \
        PTL_VT(S) y = PTL_V(S, fmadd)(ptl_vm_log_normal_##S(m), PTL_V(S, set1)(IVLN10),   \
                                      PTL_V(S, mul)(e, PTL_V(S, set1)(LOG10_2_LO)));      \
        y = PTL_V(S, fmadd)(e, PTL_V(S, set1)(LOG10_2_HI), y);                            \
        return ptl_vm_log_edges_d_##S(y, x, log10);                                       \
    }                                                                                     \
    /* e^a / 2 for 0 <= a <= 711 (finite to 710.47): exp's y 2^n, scaled by 2^(n-2) and 2 \
     * (exact; 2^(n-1) itself overflows at n = 1025) */                                   \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_half_exp_##S(PTL_VT(S) a)                 \
    {                                                                                     \
        PTL_VT(S) n, y = ptl_vm_exp_reduced_##S(PTL_V(S, min)(a, PTL_V(S, set1)(711.0)), &n); \
        y = PTL_V(S, mul)(y, ptl_vm_pow2i_##S(PTL_V(S, sub)(n, PTL_V(S, set1)(2.0))));     \
        return PTL_V(S, mul)(y, PTL_V(S, set1)(2.0));                                     \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_sinhd_##S(PTL_VT(S) x)                    \
    {                                                                                     \
        const PTL_VT(S) sign = PTL_V(S, set1)(-0.0), half = PTL_V(S, set1)(0.5);          \
        const PTL_VT(S) one = PTL_V(S, set1)(1.0);                                        \
        PTL_VT(S) a = PTL_V(S, andnot)(sign, x), t = ptl_vm_expm1d_##S(a);                \
        PTL_VT(S) tq = PTL_V(S, div)(t, PTL_V(S, add)(t, one));                           \
        PTL_VT(S) small = PTL_V(S, fnmadd)(t, tq, PTL_V(S, add)(t, t));                   \
        PTL_VT(S) y = PTL_V(S, mul)(half, PTL_VSEL(S, PTL_VCMP(S, a, one, _CMP_LT_OQ),    \
                                                  PTL_V(S, add)(t, tq), small));          \
        y = PTL_VSEL(S, PTL_VCMP(S, a, PTL_V(S, set1)(22.0), _CMP_GE_OQ), y,              \
                     ptl_vm_half_exp_##S(a));                                             \
        y = PTL_VSEL(S, PTL_VCMP(S, a, PTL_V(S, set1)(0x1p-28), _CMP_LT_OQ), y, a);       \
        return PTL_V(S, or)(y, PTL_V(S, and)(sign, x));                                   \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_coshd_##S(PTL_VT(S) x)                    \
    {                                                                                     \
        const PTL_VT(S) half = PTL_V(S, set1)(0.5);                                       \
        PTL_VT(S) a = PTL_V(S, andnot)(PTL_V(S, set1)(-0.0), x);                          \
        PTL_VT(S) ea = ptl_vm_exp_##S(PTL_V(S, min)(a, PTL_V(S, set1)(22.0)));            \
        PTL_VT(S) y = PTL_V(S, add)(PTL_V(S, mul)(half, ea), PTL_V(S, div)(half, ea));    \
        y = PTL_VSEL(S, PTL_VCMP(S, a, PTL_V(S, set1)(22.0), _CMP_GE_OQ), y,              \
                     ptl_vm_half_exp_##S(a));                                             \
        return PTL_VSEL(S, PTL_VCMP(S, x, x, _CMP_UNORD_Q), y, x);                        \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_atanh_##S(PTL_VT(S) x)                    \
    {                                                                                     \
        const PTL_VT(S) sign = PTL_V(S, set1)(-0.0), one = PTL_V(S, set1)(1.0);           \
        PTL_VT(S) a = PTL_V(S, andnot)(sign, x), a2 = PTL_V(S, add)(a, a);                \
        PTL_VT(S) q = PTL_V(S, div)(a2, PTL_V(S, sub)(one, a));                           \
        PTL_VT(S) arg = PTL_VSEL(S, PTL_VCMP(S, a, PTL_V(S, set1)(0.5), _CMP_LT_OQ), q,   \
                                 PTL_V(S, fmadd)(a, q, a2));                              \
        PTL_VT(S) y = PTL_V(S, mul)(PTL_V(S, set1)(0.5), ptl_vm_log1pd_##S(arg));         \
        y = PTL_VSEL(S, PTL_VCMP(S, a, PTL_V(S, set1)(0x1p-28), _CMP_LT_OQ), y, a);       \
        y = PTL_VSEL(S, PTL_VCMP(S, a, one, _CMP_EQ_OQ), y, PTL_V(S, set1)(INFINITY));    \
        y = PTL_VSEL(S, PTL_VCMP(S, a, one, _CMP_NLE_UQ), y, PTL_V(S, set1)(NAN));        \
        return PTL_V(S, or)(y, PTL_V(S, and)(sign, x));                                   \
    }                                                                                     \
    PTL_VM_DEFINE_MAP(logd, S)                                                            \
    PTL_VM_DEFINE_MAP(log1pd, S)                                                          \
    PTL_VM_DEFINE_MAP(expm1d, S)                                                          \
    PTL_VM_DEFINE_MAP(log10, S)                                                           \
    PTL_VM_DEFINE_MAP(sinhd, S)                                                           \
    PTL_VM_DEFINE_MAP(coshd, S)                                                           \
    PTL_VM_DEFINE_MAP(atanh, S)

#endif
