/* activation.c -- pointwise activation functions and their backward kernels.  Mirrors
 * ATen/native/Activation.cpp and ATen/native/cpu/Activation.cpp.
 *
 * Every activation computes in double through the scalar formulas of scalar_math.h
 * (float16/bfloat16/float32 load to double and round once on store); parameters
 * (alpha, beta, lambd, ...) travel in a double[4] as the loop's `extra`.  Forward loops
 * take (out, self), backward loops (grad_input, grad_output, self).  Only floating
 * dtypes have loops, so integer and bool inputs raise PyTorch's "not implemented for".
 * Exception: float32 gelu (both forms), silu, elu, softplus, log_sigmoid, mish, their
 * backwards and hardswish run in float vectors (Note [Vector activations]). */
#include <float.h>
#include <math.h>
#include <string.h>

#include "../../c10/cpu_features.h"
#include "../../c10/error.h"
#include "../../c10/parallel.h"
#include "../scalar_math.h"
#include "native.h"
#include "unary_loops.h"
#include "vec_math.h"

/* The length of every activation loop's parameter array (its `extra`). */
#define ACT_NPARAMS 4

/* Note [Select formulas]
 * ~~~~~~~~~~~~~~~~~~~~~~
 * The loop of a formula CALL of x (the input d[X]) and g (d[G], the incoming gradient of a
 * backward loop: d[1] and x d[2], or the other way round for the two backward ops that
 * PyTorch's TensorIterator takes self first, which decides their results' layout; a
 * forward loop has X = G = 1 and no g); p is a copy of the
 * parameters (every caller passes a double[ACT_NPARAMS] as extra).  Piecewise formulas
 * (relu's and threshold's backward, leaky_relu, hardtanh, the shrinks, hardswish) must not
 * branch per element: on random signs the branch mispredicts half the time, 5-7 ns an
 * element.  So the parameters are locals (no load that only one side of a select would
 * make), the loop reads contiguous operands as plain arrays, and every formula computes
 * each of its pieces unconditionally and then selects (gcc treats a floating compare or
 * multiply as a possible trap unless built with -fno-trapping-math, as we are): gcc then
 * vectorizes them into compares and blends (Note [Loop clones]), with the same results as
 * the branches.  The formulas compute in act_t, C of the loop: double, except for the
 * float32 loops of the piecewise formulas (DEFINE_SELECT), which compute in float: a float32
 * loop in double ran at half the vector width (leaky_relu 2.8x, hardtanh 2.3x, hardswish 3x
 * PyTorch's time on 1e6 values).  Those made of selects and one rounded operation
 * (leaky_relu, hardtanh, threshold, the shrinks, their backwards, hardsigmoid's backward)
 * give the same bits either way (one operation on floats rounds the same in double, which
 * has over 2 x 24 + 2 bits); hardswish, its backward and hardsigmoid round after each
 * operation in float, in PyTorch's order, so they give PyTorch's float32 bits. */
#define DEFINE_ACT_LOOP_OF(NAME, T, DT, LOAD, STORE, C, X, G, CALL)                       \
    PTL_LOOP_CLONES static void                                                           \
    NAME##_loop_##DT(char **d, const int64_t *s, int64_t n, const void *extra)            \
    {                                                                                     \
        typedef C act_t;                                                                  \
        const double *e = (const double *)extra;                                          \
        const act_t p[ACT_NPARAMS] = {(act_t)e[0], (act_t)e[1], (act_t)e[2], (act_t)e[3]}; \
        (void)p;                                                                          \
        if (s[0] == sizeof(T) && s[G] == sizeof(T) && s[X] == sizeof(T)) {                \
            T *o = (T *)d[0];                                                             \
            const T *gs = (const T *)d[G], *xs = (const T *)d[X];                         \
            for (int64_t i = 0; i < n; i++) {                                             \
                act_t g = (act_t)LOAD(gs[i]);                                             \
                act_t x = (act_t)LOAD(xs[i]);                                             \
                (void)g;                                                                  \
                o[i] = STORE(CALL);                                                       \
            }                                                                             \
            return;                                                                       \
        }                                                                                 \
        for (int64_t i = 0; i < n; i++) {                                                 \
            act_t g = (act_t)LOAD(*(const T *)(d[G] + i * s[G]));                         \
            act_t x = (act_t)LOAD(*(const T *)(d[X] + i * s[X]));                         \
            (void)g;                                                                      \
            *(T *)(d[0] + i * s[0]) = STORE(CALL);                                        \
        }                                                                                 \
    }
#define DEFINE_ACT_LOOP(NAME, T, DT, LOAD, STORE, C, F)                                   \
    DEFINE_ACT_LOOP_OF(NAME, T, DT, LOAD, STORE, C, 1, 1, F(x, p))
#define DEFINE_ACT_GRAD_LOOP(NAME, T, DT, LOAD, STORE, C, G)                              \
    DEFINE_ACT_LOOP_OF(NAME, T, DT, LOAD, STORE, C, 2, 1, G(g, x, p))
#define DEFINE_ACT_GRAD_SELF_FIRST_LOOP(NAME, T, DT, LOAD, STORE, C, G)                   \
    DEFINE_ACT_LOOP_OF(NAME, T, DT, LOAD, STORE, C, 1, 2, G(g, x, p))

#define TO_F(X) ((float)(X))
#define TO_F2(X) PTL_STORE_f2((float)(X))
#define TO_BF(X) PTL_STORE_bf((float)(X))

/* One loop per floating dtype (DEF: DEFINE_ACT_LOOP or DEFINE_ACT_GRAD_LOOP), float32's
 * computing in C4, and (DEFINE_ACT, DEFINE_ACT_GRAD) the table indexed by dtype. */
#define DEFINE_FLOAT_LOOPS_AS(DEF, NAME, F, C4)                                           \
    DEF(NAME, ptl_half, f2, PTL_LOAD_f2, TO_F2, double, F)                                \
    DEF(NAME, ptl_bf16, bf, PTL_LOAD_bf, TO_BF, double, F)                                \
    DEF(NAME, float, f4, PTL_ID, TO_F, C4, F)                                             \
    DEF(NAME, double, f8, PTL_ID, PTL_ID, double, F)
#define DEFINE_FLOAT_LOOPS(DEF, NAME, F) DEFINE_FLOAT_LOOPS_AS(DEF, NAME, F, double)

#define DEFINE_FLOAT_TABLE(NAME)                                                          \
    static const PtlLoop NAME##_loops[PTL_DTYPE_COUNT] = {                                \
        [PTL_DTYPE_FLOAT16] = NAME##_loop_f2, [PTL_DTYPE_BFLOAT16] = NAME##_loop_bf,      \
        [PTL_DTYPE_FLOAT32] = NAME##_loop_f4, [PTL_DTYPE_FLOAT64] = NAME##_loop_f8};

#define DEFINE_ACT_FLOAT_LOOPS(NAME, F) DEFINE_FLOAT_LOOPS(DEFINE_ACT_LOOP, NAME, F)
#define DEFINE_ACT(NAME, F) DEFINE_ACT_FLOAT_LOOPS(NAME, F) DEFINE_FLOAT_TABLE(NAME)
#define DEFINE_ACT_GRAD(NAME, G)                                                          \
    DEFINE_FLOAT_LOOPS(DEFINE_ACT_GRAD_LOOP, NAME, G) DEFINE_FLOAT_TABLE(NAME)
/* the same for the formulas whose float32 loop computes in float (Note [Select formulas]) */
#define DEFINE_SELECT_LOOPS(NAME, F) DEFINE_FLOAT_LOOPS_AS(DEFINE_ACT_LOOP, NAME, F, float)
#define DEFINE_SELECT(NAME, F) DEFINE_SELECT_LOOPS(NAME, F) DEFINE_FLOAT_TABLE(NAME)
#define DEFINE_SELECT_GRAD(NAME, G)                                                       \
    DEFINE_FLOAT_LOOPS_AS(DEFINE_ACT_GRAD_LOOP, NAME, G, float) DEFINE_FLOAT_TABLE(NAME)
#define DEFINE_SELECT_GRAD_SELF_FIRST(NAME, G)                                            \
    DEFINE_FLOAT_LOOPS_AS(DEFINE_ACT_GRAD_SELF_FIRST_LOOP, NAME, G, float)                \
    DEFINE_FLOAT_TABLE(NAME)

/* ---- formulas: x the input, g the incoming gradient, p the parameters ---- */

/* hardtanh, softshrink, hardshrink, leaky_relu and hardsigmoid's backward are scalar_math.h's
 * (the CUDA kernels' formulas), in float for the float32 loops (Note [Select formulas]) */
#define HARDTANH(X, LO, HI) _Generic((X), float: ptl_hardtanh_f, default: ptl_hardtanh_d)(X, LO, HI)
#define SOFTSHRINK(X, L) _Generic((X), float: ptl_softshrink_f, default: ptl_softshrink_d)(X, L)
#define HARDSHRINK(X, L) _Generic((X), float: ptl_hardshrink_f, default: ptl_hardshrink_d)(X, L)
#define SHRINK_GRAD(G, X, L)                                                              \
    _Generic((X), float: ptl_shrink_grad_f, default: ptl_shrink_grad_d)(G, X, L)
#define LEAKY(X, S) _Generic((X), float: ptl_leaky_relu_f, default: ptl_leaky_relu_d)(X, S)
#define LEAKY_GRAD(G, X, S)                                                               \
    _Generic((X), float: ptl_leaky_relu_grad_f, default: ptl_leaky_relu_grad_d)(G, X, S)
#define HARDTANH_GRAD(G, X, LO, HI)                                                       \
    _Generic((X), float: ptl_hardtanh_grad_f, default: ptl_hardtanh_grad_d)(G, X, LO, HI)

#define GELU_F(X, P) ptl_gelu_d((X), (P)[0] != 0)
#define GELU_G(G, X, P) ptl_gelu_grad_d((G), (X), (P)[0] != 0)
#define SILU_F(X, P) ((X) * ptl_sigmoid_d(X))
#define SILU_G(G, X, P) ptl_silu_grad_d((G), (X))
#define MISH_F(X, P) ptl_mish_d(X)
#define MISH_G(G, X, P) ptl_mish_grad_d((G), (X))
#define ELU_F(X, P) ptl_elu_d((X), (P)[0], (P)[1], (P)[2])
#define ELU_G(G, X, P) ptl_elu_grad_d((G), (X), (P)[0], (P)[1], (P)[2])
#define ELU_RG(G, Y, P) ptl_elu_result_grad_d((G), (Y), (P)[0], (P)[1], (P)[2])
#define LEAKY_F(X, P) LEAKY((X), (P)[0])
#define LEAKY_G(G, X, P) LEAKY_GRAD((G), (X), (P)[0])
#define HARDTANH_F(X, P) HARDTANH((X), (P)[0], (P)[1])
#define HARDTANH_G(G, X, P) HARDTANH_GRAD((G), (X), (P)[0], (P)[1])
#define SOFTPLUS_F(X, P) ptl_softplus_d((X), (P)[0], (P)[1])
#define SOFTPLUS_G(G, X, P) ptl_softplus_grad_d((G), (X), (P)[0], (P)[1])
#define HARDSWISH_F(X, P) _Generic((X), float: ptl_hardswish_f, default: ptl_hardswish_d)(X)
#define HARDSWISH_G(G, X, P)                                                              \
    _Generic((X), float: ptl_hardswish_grad_f, default: ptl_hardswish_grad_d)((G), (X))
#define HARDSIGMOID_F(X, P)                                                               \
    _Generic((X), float: ptl_hardsigmoid_f, default: ptl_hardsigmoid_d)(X)
#define HARDSIGMOID_G(G, X, P)                                                            \
    _Generic((X), float: ptl_hardsigmoid_grad_f, default: ptl_hardsigmoid_grad_d)((G), (X))
#define LOGSIG_F(X, P) ptl_log_sigmoid_d(X)
#define LOGSIG_BUFFER_F(X, P) exp(-fabs(X))
#define SOFTSHRINK_F(X, P) SOFTSHRINK((X), (P)[0])
#define SHRINK_G(G, X, P) SHRINK_GRAD((G), (X), (P)[0])
#define HARDSHRINK_F(X, P) HARDSHRINK((X), (P)[0])
#define THRESHOLD_F(X, P) ((X) <= (P)[0] ? (P)[1] : (X))
#define THRESHOLD_G(G, X, P) ((X) <= (P)[0] ? (act_t)0 : (G))

/* hardtanh and threshold also take integer tensors (limits truncated on store, as in
 * PyTorch); the loops go through double, exact up to 2^53 */
#define ACT_INT_LOOP(NAME, T, DT, F) DEFINE_ACT_LOOP(NAME, T, DT, PTL_ID, (T), double, F)
#define DEFINE_ACT_INT(NAME, F) PTL_INT_LOOPS(ACT_INT_LOOP, NAME, F)

DEFINE_ACT_INT(hardtanh_int, HARDTANH_F)
DEFINE_ACT_INT(threshold_int, THRESHOLD_F)

DEFINE_ACT_FLOAT_LOOPS(gelu, GELU_F)
DEFINE_FLOAT_LOOPS(DEFINE_ACT_GRAD_LOOP, gelu_grad, GELU_G)
DEFINE_ACT_FLOAT_LOOPS(silu, SILU_F)
DEFINE_FLOAT_LOOPS(DEFINE_ACT_GRAD_LOOP, silu_grad, SILU_G)
DEFINE_ACT_FLOAT_LOOPS(elu, ELU_F)
DEFINE_FLOAT_LOOPS(DEFINE_ACT_GRAD_LOOP, elu_grad, ELU_G)
DEFINE_FLOAT_LOOPS(DEFINE_ACT_GRAD_LOOP, elu_result_grad, ELU_RG)
DEFINE_ACT_FLOAT_LOOPS(softplus, SOFTPLUS_F)
DEFINE_FLOAT_LOOPS(DEFINE_ACT_GRAD_LOOP, softplus_grad, SOFTPLUS_G)
DEFINE_ACT_FLOAT_LOOPS(log_sigmoid, LOGSIG_F)
DEFINE_ACT_FLOAT_LOOPS(log_sigmoid_buffer, LOGSIG_BUFFER_F)
DEFINE_ACT_FLOAT_LOOPS(mish, MISH_F)
DEFINE_FLOAT_LOOPS(DEFINE_ACT_GRAD_LOOP, mish_grad, MISH_G)
DEFINE_SELECT_LOOPS(hardswish, HARDSWISH_F)

/* Note [Vector activations]
 * float32 gelu (both forms), silu, elu (celu and selu are elu), softplus, log_sigmoid, mish,
 * their backwards and hardswish (Note [Hardswish sixth]) run in float on contiguous data, 8
 * (AVX2) or 16 (AVX-512) lanes at a time, the tail through masked loads, with the formulas
 * below written once for both widths (Note [Vector twins]).  An element below the formula's
 * limit (where float cancellation would lose digits, or e^-x nears overflow) or NaN is
 * redone by the double formula, alone: each element's result depends on its value only, not
 * on its neighbours, the vector width, the tail or how the threads split the array, so the
 * two widths give the same bits.  Strided data uses the double loops.
 *
 * gelu: x Phi(x), Phi the normal CDF, 0.5 erfc(|x| / sqrt 2) = e^(-x^2/2) R(u) for x < 0
 * and 1 minus that for x >= 0 (no cancellation either side), R a degree-7 polynomial in
 * u = 1 / (1 + P |x|) fitted by tools/fit_gelu_cdf.py (relative error 3.6e-7 in float on
 * |x| <= 5.6).  The derivative cdf + x pdf reuses the e^(-x^2/2) of the CDF as its pdf, so
 * the backward costs one exp, not two, and neither pass evaluates two branches per lane.
 * |x| is clamped at 12, where the CDF is 1 in float and e^(-x^2/2) >= e^-72 still a normal
 * number, so exp needs no range checks (Note [Vector gelu exp]).  The limit is -5.5 forward,
 * -3 backward (where cdf and x pdf cancel).
 * tanh form: 0.5 x (1 + tanh(u)) = x s with s = 1 / (1 + e^(-2u)), u = sqrt(2 / pi) (x +
 * 0.044715 x^3); neither form cancels, so only NaN has a limit.  Backward s + 2 x s (1 - s)
 * du/dx, with 1 - s = e^(-2u) s.
 * silu: x s with s = 1 / (1 + e^-x); backward s (1 + x e^-x s) (1 - s written as e^-x s,
 * which does not cancel); the limit is -80.
 * elu, with p = {alpha, scale, input_scale} and the coefficients (alpha scale, input_scale
 * alpha scale) rounded once to float: x >= 0 gives scale x, x < 0 alpha scale
 * expm1(input_scale x) (Note [Vector expm1]); the backward's slope is scale or input_scale
 * alpha scale e^(input_scale x), or from the result y (elu_ in place) scale or
 * input_scale (y + alpha scale).  input_scale x is split exactly into t + lo (one FMA) and
 * the exponential corrected by its derivative times lo, so celu's 1 / alpha costs no
 * accuracy (rounding t alone would put 2^-24 |t| into e^t: 60 ulps at t = -100).  expm1 and
 * exp get 0 on the lanes whose result they do not give (x > 0, NaN: scale x), so no lane
 * leaves their fast paths for nothing; nothing cancels, so only NaN has a limit.
 * softplus: log(1 + e^t) / beta, t = beta x, as max(t, 0) + log1p(e^-|t|) (Note [Vector
 * expm1]'s log1p), which neither overflows nor cancels, and x where t > threshold; backward
 * sigmoid(t) there, else 1, sigmoid taken from e^-|t| (e^t / (1 + e^t) for t < 0), right
 * down to the subnormals.  log_sigmoid: min(x, 0) - log1p(e^-|x|), and its buffer e^-|x|
 * (Note [Log-sigmoid buffer]).
 * mish: x tanh(softplus(x)) with tanh(log(1 + e^x)) = n / (n + 2), n = e^x (e^x + 2), and
 * 1 - tanh^2 = 4 (n + 1) / (n + 2)^2, neither cancelling (1 - t^2 would in float for
 * x > 4); backward t + x sigmoid(x) (1 - t^2); the limit is -80, where e^x nears the
 * subnormals.  Only NaN has a limit in the others. */
#ifdef PTL_HAVE_AVX2_KERNELS
/* Note [Hardswish sixth]
 * float32 hardswish runs in the vector loops too, with PyTorch's bits: x min(max(x + 3, 0),
 * 6) / 6, each operation rounded to float in that order.  The division (3.5 ns an element
 * in the AVX2 loop gcc made, ~40% of its time) becomes m HI + m LO in one FMA, HI + LO = 1/6
 * with HI = 1/6 rounded down (so LO > 0 and a zero or infinite m keeps its sign through both
 * terms).  For every float m but 0 < |m| <= 2^-121.7 that is m / 6 correctly rounded (the
 * product is exact to 2^-48 relative, the quotient never within that of a rounding boundary:
 * checked on all 2^32 floats against the division; Brisebarre and Muller, "Correctly
 * rounded multiplication by arbitrary precision constants", 2008).  |m| that small comes
 * only from |x| < 2^-120, so a vector holding such an x (or 0) divides; NaN goes to the
 * scalar loop with the others' NaNs. */
#define HARDSWISH_SIXTH_HI 0x1.555554p-3f
#define HARDSWISH_SIXTH_LO 0x1.555556p-27f
#define HARDSWISH_X_TINY 0x1p-120f
#define GELU_ABS_MAX 12.0f
#define GELU_P 3.181980550e-01f
/* R(u) = 0.5 erfcx(|x| / sqrt 2), u = 1 / (1 + GELU_P |x|), the highest power first */
static const float gelu_cdf_coef[] = {4.893409088e-02f, -2.623864114e-01f, 4.659737647e-01f,
                                      -2.377210855e-01f, 2.692820132e-01f, 8.228777349e-02f,
                                      1.341271698e-01f, -4.973285832e-04f};
/* 2^(j / 16) rounded to float, j = 0..15 (Note [Vector gelu exp]) */
static const float gelu_exp2_16th[16] = {
    0x1.000000p+0f, 0x1.0b5586p+0f, 0x1.172b84p+0f, 0x1.2387a6p+0f,
    0x1.306fe0p+0f, 0x1.3dea64p+0f, 0x1.4bfdaep+0f, 0x1.5ab07ep+0f,
    0x1.6a09e6p+0f, 0x1.7a1148p+0f, 0x1.8ace54p+0f, 0x1.9c4918p+0f,
    0x1.ae89fap+0f, 0x1.c199bep+0f, 0x1.d5818ep+0f, 0x1.ea4afap+0f};
/* Note [Vector gelu exp]
 * gelu's e^(-x^2/2) = 2^(m/16) e^r, m = round(-8 log2(e) x^2), |x| <= GELU_ABS_MAX.  x^2 is
 * split exactly into x2 + x2lo (one FMA); m comes from one FMA with the rounding constant
 * 1.5 2^23, whose low 4 bits pick 2^(j/16) from a table of 16 (one vpermps with AVX-512, two
 * and a blend with AVX2: the same value), and whose next bits, shifted into the exponent
 * field, scale by 2^(m >> 4) with an integer add (the scaled numbers stay normal: 2^-104 at
 * the clamp, which is why it is 12, not 13).  t = x2 + m ln2 / 8 is exact (ln2's high part
 * is short), then takes ln2's tail and x2lo; r = -t/2 (|r| <= ln2 / 32) and e^r = 1 + t (-1/2
 * + t (1/8 - t/48)) (truncation 9e-9, the table's rounding 3e-8, against the R fit's 3.6e-7).
 * Against exp's degree-7 polynomial, a rounding, the halving of x^2 and a multiply by 2^n
 * this takes 6 vector multiply-adds fewer an element: gelu 1e6 floats 555 -> 450 us, one
 * AVX-512 thread. */
#define GELU_EXP2_16TH_ps(KB)                                                             \
    _mm256_blendv_ps(_mm256_permutevar8x32_ps(_mm256_loadu_ps(gelu_exp2_16th), KB),       \
                     _mm256_permutevar8x32_ps(_mm256_loadu_ps(gelu_exp2_16th + 8), KB),   \
                     _mm256_castsi256_ps(_mm256_slli_epi32(KB, 28)))
#define GELU_EXP2_16TH_ps512(KB) _mm512_permutexvar_ps(KB, _mm512_loadu_ps(gelu_exp2_16th))
#define DEFINE_ACT_FORMULAS(S)                                                            \
    /* Phi(x) = c (x < 0) or 1 - c, c = e R(u), where e = e^(-x^2/2) (Note [Vector gelu   \
     * exp]) is also returned for the backward's pdf */                                   \
    PTL_VATTR(S) static inline PTL_VT(S) gelu_cdf_##S(PTL_VT(S) x, PTL_VT(S) *e_out)      \
    {                                                                                     \
        const PTL_VT(S) one = PTL_V(S, set1)(1.0f), magic = PTL_V(S, set1)(PTL_VM_MAGIC_ps); \
        PTL_VT(S) ax = PTL_V(S, min)(PTL_V(S, andnot)(PTL_V(S, set1)(-0.0f), x),          \
                                     PTL_V(S, set1)(GELU_ABS_MAX));                       \
        PTL_VT(S) x2 = PTL_V(S, mul)(ax, ax), x2lo = PTL_V(S, fmsub)(ax, ax, x2);         \
        PTL_VT(S) k = PTL_V(S, fmadd)(x2, PTL_V(S, set1)(-8.0f * PTL_VM_LOG2E_ps), magic); \
        PTL_VT(S) m = PTL_V(S, sub)(k, magic);                                            \
        PTL_VT(S) t = PTL_V(S, fmadd)(m, PTL_V(S, set1)(PTL_VM_LN2_HI_ps / 8), x2);       \
        t = PTL_V(S, fmadd)(m, PTL_V(S, set1)(PTL_VM_LN2_LO_ps / 8), t);                  \
        t = PTL_V(S, add)(t, x2lo);                                                       \
        PTL_VT(S) q = PTL_V(S, fmadd)(t, PTL_V(S, set1)(-1.0f / 48), PTL_V(S, set1)(0.125f)); \
        PTL_VT(S) er = PTL_V(S, mul)(PTL_V(S, fmadd)(q, t, PTL_V(S, set1)(-0.5f)), t);    \
        PTL_VIT(S) kb = PTL_VTOI(S, k);                                                   \
        PTL_VT(S) tab = GELU_EXP2_16TH_##S(kb);                                           \
        PTL_VT(S) e16 = PTL_V(S, fmadd)(er, tab, tab);                                    \
        /* (m >> 4) << 23: the exponent's bits of kb, the index bits dropped */           \
        PTL_VIT(S) sh = PTL_VSI(S, and)(PTL_VI(S, slli)(kb, 19),                          \
                                        PTL_VI_SET1(S)((int32_t)0xff800000u));            \
        PTL_VT(S) u = PTL_V(S, div)(one, PTL_V(S, fmadd)(ax, PTL_V(S, set1)(GELU_P), one)); \
        PTL_VT(S) c = PTL_V(S, mul)(e16, PTL_VM_POLY(S, u, gelu_cdf_coef));               \
        c = PTL_VFROMI(S, PTL_VI(S, add)(PTL_VTOI(S, c), sh));                            \
        *e_out = PTL_VFROMI(S, PTL_VI(S, add)(PTL_VTOI(S, e16), sh));                     \
        return PTL_VSEL(S, PTL_VCMP(S, x, PTL_V(S, setzero)(), _CMP_LT_OQ),               \
                        PTL_V(S, sub)(one, c), c);                                        \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S)                                                  \
        gelu_y_##S(PTL_VT(S) x, const double *p)                                          \
    {                                                                                     \
        (void)p;                                                                          \
        PTL_VT(S) e;                                                                      \
        return PTL_V(S, mul)(x, gelu_cdf_##S(x, &e));                                     \
    }                                                                                     \
    /* cdf + x pdf; the pdf is 0 where |x| was clamped, as the double formula's e^-inf */  \
    PTL_VATTR(S) static inline PTL_VT(S)                                                  \
        gelu_dydx_##S(PTL_VT(S) x, const double *p)                                       \
    {                                                                                     \
        (void)p;                                                                          \
        PTL_VT(S) e, cdf = gelu_cdf_##S(x, &e);                                           \
        PTL_VT(S) pdf = PTL_V(S, mul)(e, PTL_V(S, set1)(0.3989422804014327f));            \
        pdf = PTL_VSEL(S, PTL_VCMP(S, PTL_V(S, andnot)(PTL_V(S, set1)(-0.0f), x),         \
                                   PTL_V(S, set1)(GELU_ABS_MAX), _CMP_LT_OQ),             \
                       PTL_V(S, setzero)(), pdf);                                         \
        return PTL_V(S, fmadd)(x, pdf, cdf);                                              \
    }                                                                                     \
    /* e^(-2u) of the tanh form */                                                        \
    PTL_VATTR(S) static inline PTL_VT(S) gelu_tanh_e_##S(PTL_VT(S) x)                     \
    {                                                                                     \
        PTL_VT(S) x2 = PTL_V(S, mul)(x, x);                                               \
        PTL_VT(S) c = PTL_V(S, fmadd)(x2, PTL_V(S, set1)(0.044715f), PTL_V(S, set1)(1.0f)); \
        return ptl_vm_exp_##S(                                                            \
            PTL_V(S, mul)(PTL_V(S, mul)(x, c), PTL_V(S, set1)(-1.5957691216057308f)));    \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S)                                                  \
        gelu_tanh_y_##S(PTL_VT(S) x, const double *p)                                     \
    {                                                                                     \
        (void)p;                                                                          \
        return PTL_V(S, div)(x, PTL_V(S, add)(PTL_V(S, set1)(1.0f), gelu_tanh_e_##S(x))); \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S)                                                  \
        gelu_tanh_dydx_##S(PTL_VT(S) x, const double *p)                                  \
    {                                                                                     \
        (void)p;                                                                          \
        const PTL_VT(S) one = PTL_V(S, set1)(1.0f), e = gelu_tanh_e_##S(x);               \
        PTL_VT(S) sg = PTL_V(S, div)(one, PTL_V(S, add)(one, e));                         \
        PTL_VT(S) du = PTL_V(S, mul)(                                                     \
            PTL_V(S, fmadd)(PTL_V(S, mul)(x, x), PTL_V(S, set1)(3.0f * 0.044715f), one),  \
            PTL_V(S, set1)(0.7978845608028654f));                                         \
        /* 2 x s (1 - s) du = 2 x du e s^2 */                                             \
        PTL_VT(S) t = PTL_V(S, mul)(PTL_V(S, mul)(PTL_V(S, add)(x, x), du),               \
                                    PTL_V(S, mul)(e, PTL_V(S, mul)(sg, sg)));             \
        /* where e is 0 or inf (|x| huge: x^2 may overflow) the second term is 0, as in   \
         * the double formula; x = +-inf gives nan like it */                             \
        PTL_VMT(S) finite = PTL_VMAND(                                                    \
            S, PTL_VCMP(S, e, PTL_V(S, set1)(INFINITY), _CMP_LT_OQ),                      \
            PTL_VCMP(S, e, PTL_V(S, setzero)(), _CMP_GT_OQ));                             \
        t = PTL_VSEL(S, finite, PTL_V(S, setzero)(), t);                                  \
        PTL_VMT(S) inf = PTL_VCMP(S, PTL_V(S, andnot)(PTL_V(S, set1)(-0.0f), x),          \
                                  PTL_V(S, set1)(INFINITY), _CMP_EQ_OQ);                  \
        return PTL_VSEL(S, inf, PTL_V(S, add)(sg, t), PTL_V(S, set1)(NAN));               \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S)                                                  \
        silu_y_##S(PTL_VT(S) x, const double *p)                                          \
    {                                                                                     \
        (void)p;                                                                          \
        PTL_VT(S) e = ptl_vm_exp_##S(PTL_V(S, sub)(PTL_V(S, setzero)(), x));              \
        return PTL_V(S, div)(x, PTL_V(S, add)(PTL_V(S, set1)(1.0f), e));                  \
    }                                                                                     \
    /* sg (1 + x e sg), sg = 1 / (1 + e), e = e^-x */                                     \
    PTL_VATTR(S) static inline PTL_VT(S)                                                  \
        silu_dydx_##S(PTL_VT(S) x, const double *p)                                       \
    {                                                                                     \
        (void)p;                                                                          \
        const PTL_VT(S) one = PTL_V(S, set1)(1.0f);                                       \
        PTL_VT(S) e = ptl_vm_exp_##S(PTL_V(S, sub)(PTL_V(S, setzero)(), x));              \
        PTL_VT(S) sg = PTL_V(S, div)(one, PTL_V(S, add)(one, e));                         \
        return PTL_V(S, mul)(sg, PTL_V(S, fmadd)(x, PTL_V(S, mul)(e, sg), one));          \
    }                                                                                     \
    /* input_scale x where x <= 0 (the mask *neg), else 0; where also -inf < t < 88 (the  \
     * mask *exact: e^t finite, lo not NaN), input_scale x = t + *lo exactly */           \
    PTL_VATTR(S) static inline PTL_VT(S)                                                  \
        elu_exponent_##S(PTL_VT(S) x, const double *p, PTL_VMT(S) *neg, PTL_VMT(S) *exact, \
                         PTL_VT(S) *lo)                                                   \
    {                                                                                     \
        const PTL_VT(S) zero = PTL_V(S, setzero)(), is = PTL_V(S, set1)((float)p[2]);     \
        PTL_VT(S) t = PTL_V(S, mul)(x, is);                                               \
        *neg = PTL_VCMP(S, x, zero, _CMP_LE_OQ);                                          \
        *exact = PTL_VMAND(S, PTL_VMAND(S, *neg, PTL_VCMP(S, t, PTL_V(S, set1)(88.0f),    \
                                                         _CMP_LT_OQ)),                    \
                           PTL_VCMP(S, t, PTL_V(S, set1)(-INFINITY), _CMP_GT_OQ));        \
        *lo = PTL_V(S, fmsub)(x, is, t);                                                  \
        return PTL_VSEL(S, *neg, zero, t);                                                \
    }                                                                                     \
    /* expm1(t + lo) = expm1(t) + e^t lo where x < 0; scale x at +-0 (ptl_elu_d) */       \
    PTL_VATTR(S) static inline PTL_VT(S) elu_y_##S(PTL_VT(S) x, const double *p)          \
    {                                                                                     \
        PTL_VMT(S) neg, exact;                                                            \
        PTL_VT(S) lo, t = elu_exponent_##S(x, p, &neg, &exact, &lo);                      \
        PTL_VT(S) e = ptl_vm_expm1_##S(t);                                                \
        PTL_VT(S) e1 = PTL_V(S, add)(e, PTL_V(S, set1)(1.0f));                            \
        e = PTL_VSEL(S, exact, e, PTL_V(S, fmadd)(e1, lo, e));                            \
        PTL_VMT(S) below = PTL_VCMP(S, x, PTL_V(S, setzero)(), _CMP_LT_OQ);               \
        return PTL_VSEL(S, below, PTL_V(S, mul)(x, PTL_V(S, set1)((float)p[1])),          \
                        PTL_V(S, mul)(e, PTL_V(S, set1)((float)(p[0] * p[1]))));          \
    }                                                                                     \
    /* e^(t + lo) = e^t + e^t lo */                                                       \
    PTL_VATTR(S) static inline PTL_VT(S) elu_dydx_##S(PTL_VT(S) x, const double *p)       \
    {                                                                                     \
        PTL_VMT(S) neg, exact;                                                            \
        PTL_VT(S) lo, e = ptl_vm_exp_##S(elu_exponent_##S(x, p, &neg, &exact, &lo));      \
        e = PTL_VSEL(S, exact, e, PTL_V(S, fmadd)(e, lo, e));                             \
        return PTL_VSEL(S, neg, PTL_V(S, set1)((float)p[1]),                              \
                        PTL_V(S, mul)(e, PTL_V(S, set1)((float)(p[2] * p[0] * p[1]))));   \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S)                                                  \
        elu_result_dydx_##S(PTL_VT(S) y, const double *p)                                 \
    {                                                                                     \
        PTL_VMT(S) neg = PTL_VCMP(S, y, PTL_V(S, setzero)(), _CMP_LE_OQ);                 \
        PTL_VT(S) slope = PTL_V(S, add)(y, PTL_V(S, set1)((float)(p[0] * p[1])));         \
        return PTL_VSEL(S, neg, PTL_V(S, set1)((float)p[1]),                              \
                        PTL_V(S, mul)(slope, PTL_V(S, set1)((float)p[2])));               \
    }                                                                                     \
    /* sigmoid(t) from e = e^-|t|, which never overflows: 1 / (1 + e) for t >= 0, else     \
     * e / (1 + e) (down to the subnormals, where ptl_vm_sigmoid's 1 / (1 + e^-t) gives 0) */ \
    PTL_VATTR(S) static inline PTL_VT(S) sigmoid_full_##S(PTL_VT(S) t)                    \
    {                                                                                     \
        const PTL_VT(S) one = PTL_V(S, set1)(1.0f);                                       \
        PTL_VT(S) e = ptl_vm_exp_##S(PTL_V(S, or)(t, PTL_V(S, set1)(-0.0f)));             \
        PTL_VT(S) r = PTL_V(S, div)(one, PTL_V(S, add)(one, e));                          \
        return PTL_VSEL(S, PTL_VCMP(S, t, PTL_V(S, setzero)(), _CMP_LT_OQ), r,            \
                        PTL_V(S, mul)(e, r));                                             \
    }                                                                                     \
    /* log(1 + e^t) = max(t, 0) + log1p(e^-|t|) */                                        \
    PTL_VATTR(S) static inline PTL_VT(S) log1p_exp_##S(PTL_VT(S) t)                       \
    {                                                                                     \
        PTL_VT(S) na = PTL_V(S, or)(t, PTL_V(S, set1)(-0.0f));                            \
        return PTL_V(S, add)(PTL_V(S, max)(t, PTL_V(S, setzero)()),                       \
                             ptl_vm_log1p_##S(ptl_vm_exp_##S(na)));                       \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) softplus_y_##S(PTL_VT(S) x, const double *p)     \
    {                                                                                     \
        const PTL_VT(S) beta = PTL_V(S, set1)((float)p[0]);                               \
        PTL_VT(S) t = PTL_V(S, mul)(x, beta);                                             \
        PTL_VT(S) y = log1p_exp_##S(t);                                                   \
        /* y / 1 is y: the default beta spares a division */                              \
        y = (float)p[0] == 1.0f ? y : PTL_V(S, div)(y, beta);                             \
        return PTL_VSEL(S, PTL_VCMP(S, t, PTL_V(S, set1)((float)p[1]), _CMP_GT_OQ), y, x); \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) softplus_dydx_##S(PTL_VT(S) x, const double *p)  \
    {                                                                                     \
        PTL_VT(S) t = PTL_V(S, mul)(x, PTL_V(S, set1)((float)p[0]));                      \
        return PTL_VSEL(S, PTL_VCMP(S, t, PTL_V(S, set1)((float)p[1]), _CMP_GT_OQ),       \
                        sigmoid_full_##S(t), PTL_V(S, set1)(1.0f));                       \
    }                                                                                     \
    /* min(x, 0) - log1p(e^-|x|) */                                                       \
    PTL_VATTR(S) static inline PTL_VT(S) log_sigmoid_y_##S(PTL_VT(S) x, const double *p)  \
    {                                                                                     \
        (void)p;                                                                          \
        PTL_VT(S) na = PTL_V(S, or)(x, PTL_V(S, set1)(-0.0f));                            \
        return PTL_V(S, sub)(PTL_V(S, min)(x, PTL_V(S, setzero)()),                       \
                             ptl_vm_log1p_##S(ptl_vm_exp_##S(na)));                       \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) log_sigmoid_buffer_y_##S(PTL_VT(S) x, const double *p) \
    {                                                                                     \
        (void)p;                                                                          \
        return ptl_vm_exp_##S(PTL_V(S, or)(x, PTL_V(S, set1)(-0.0f)));                    \
    }                                                                                     \
    /* tanh(softplus(x)) = n / (n + 2), n = e^x (e^x + 2), x clamped at 20 (t is 1 in      \
     * float from 9 on); returns 1 - t^2 = 4 (n + 1) / (n + 2)^2 in *sech2 */              \
    PTL_VATTR(S) static inline PTL_VT(S) mish_t_##S(PTL_VT(S) x, PTL_VT(S) *sech2)        \
    {                                                                                     \
        const PTL_VT(S) one = PTL_V(S, set1)(1.0f), two = PTL_V(S, set1)(2.0f);           \
        PTL_VT(S) e = ptl_vm_exp_##S(PTL_V(S, min)(x, PTL_V(S, set1)(20.0f)));            \
        PTL_VT(S) n = PTL_V(S, mul)(e, PTL_V(S, add)(e, two));                            \
        PTL_VT(S) d = PTL_V(S, div)(one, PTL_V(S, add)(n, two));                          \
        *sech2 = PTL_V(S, mul)(PTL_V(S, mul)(PTL_V(S, set1)(4.0f), PTL_V(S, add)(n, one)), \
                               PTL_V(S, mul)(d, d));                                      \
        return PTL_V(S, mul)(n, d);                                                       \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) mish_y_##S(PTL_VT(S) x, const double *p)         \
    {                                                                                     \
        PTL_VT(S) sech2;                                                                  \
        (void)p;                                                                          \
        return PTL_V(S, mul)(x, mish_t_##S(x, &sech2));                                   \
    }                                                                                     \
    /* t + x sigmoid(x) (1 - t^2), 1 - t^2 taken as 0 past the clamp (t is 1 in float     \
     * there; the clamped 4 e^-40 times a huge x made a slope of 1.2 at x = 1e16 and inf   \
     * at inf): x > 20 gives t, +inf nan, as the scalar loop and PyTorch's formula */      \
    PTL_VATTR(S) static inline PTL_VT(S) mish_dydx_##S(PTL_VT(S) x, const double *p)      \
    {                                                                                     \
        PTL_VT(S) sech2, t = mish_t_##S(x, &sech2);                                       \
        (void)p;                                                                          \
        sech2 = PTL_VSEL(S, PTL_VCMP(S, x, PTL_V(S, set1)(20.0f), _CMP_GT_OQ), sech2,     \
                         PTL_V(S, setzero)());                                            \
        return PTL_V(S, fmadd)(PTL_V(S, mul)(x, ptl_vm_sigmoid_##S(x)), sech2, t);        \
    }                                                                                     \
    /* x min(max(x + 3, 0), 6) / 6 in PyTorch's order, the division as m (1/6 split in  \
     * two floats): Note [Hardswish sixth] */                                             \
    PTL_VATTR(S) static inline PTL_VT(S) hardswish_y_##S(PTL_VT(S) x, const double *p)    \
    {                                                                                     \
        const PTL_VT(S) six = PTL_V(S, set1)(6.0f);                                       \
        (void)p;                                                                          \
        PTL_VT(S) r = PTL_V(S, max)(PTL_V(S, add)(x, PTL_V(S, set1)(3.0f)),               \
                                    PTL_V(S, setzero)());                                 \
        PTL_VT(S) m = PTL_V(S, mul)(x, PTL_V(S, min)(r, six));                            \
        PTL_VMT(S) tiny = PTL_VCMP(S, PTL_V(S, andnot)(PTL_V(S, set1)(-0.0f), x),         \
                                   PTL_V(S, set1)(HARDSWISH_X_TINY), _CMP_LT_OQ);         \
        if (PTL_VBITS(S, tiny) != 0) {                                                    \
            return PTL_V(S, div)(m, six);                                                 \
        }                                                                                 \
        return PTL_V(S, fmadd)(m, PTL_V(S, set1)(HARDSWISH_SIXTH_HI),                     \
                               PTL_V(S, mul)(m, PTL_V(S, set1)(HARDSWISH_SIXTH_LO)));     \
    }

/* The elements i + l of a float32 vector loop's operands d (strides s) for each bit l of
 * bad, again one by one by the scalar loop (GRAD: a backward's, grad_output maybe
 * broadcast).  Out of line: inlined into the vector loops, its call made gcc spill and
 * reload their constants on the hot path (gelu 1e6 715 us against 560; an input with 3% of
 * its elements redone pays ~10 ns more for each of them instead). */
static __attribute__((noinline)) void
act_redo_f4(PtlLoop scalar, int grad, char **d, const int64_t *s, int64_t i, unsigned bad,
            const void *extra)
{
    const int64_t gs = s[1] == 0 ? 0 : 4;
    for (; bad != 0; bad &= bad - 1) {
        const int64_t k = i + __builtin_ctz(bad);
        char *dd[3] = {d[0] + 4 * k, d[1] + gs * k, d[1 + grad] + 4 * k};
        scalar(dd, s, 1, extra);
    }
}

/* NAME_loop_f4_S: o = F(x, p) (forward, GRAD 0: d = out, self) or o = g F(x, p) (backward,
 * GRAD 1: d = grad_input, grad_output, self, with grad_output contiguous or broadcast), p a
 * copy of the parameters, elements below LIM or NaN redone one by one by the double loop
 * SCALAR.  Whole vectors, then one masked tail of m < L elements (NAME_step_f4_S with a
 * constant m: the loop that tested for the tail at every vector took 1.9x as long on
 * hardswish 1e6, 1.1x on gelu). */
#define DEFINE_ACT_VEC_LOOP(NAME, S, F, GRAD, LIM, SCALAR)                                \
    PTL_VATTR(S) static inline __attribute__((always_inline)) void                        \
        NAME##_step_f4_##S(char **d, const int64_t *s, int64_t i, int m, const double *p, \
                           const void *extra)                                             \
    {                                                                                     \
        float *o = (float *)d[0];                                                         \
        const float *g = (const float *)d[1], *a = (const float *)d[1 + GRAD];            \
        const int full = m == PTL_VLANES(S);                                              \
        const PTL_VTAILT(S) tail = PTL_VTAIL(S, full ? 0 : m);                            \
        PTL_VT(S) x = full ? PTL_V(S, loadu)(a + i) : PTL_VLOAD_TAIL(S, a + i, tail);     \
        PTL_VT(S) y = F##_##S(x, p);                                                      \
        if (GRAD) {                                                                       \
            PTL_VT(S) gv = s[1] == 0 ? PTL_V(S, set1)(g[0])                               \
                           : full    ? PTL_V(S, loadu)(g + i)                             \
                                     : PTL_VLOAD_TAIL(S, g + i, tail);                    \
            y = PTL_V(S, mul)(gv, y);                                                     \
        }                                                                                 \
        if (full) {                                                                       \
            PTL_V(S, storeu)(o + i, y);                                                   \
        }                                                                                 \
        else {                                                                            \
            PTL_VSTORE_TAIL(S, o + i, tail, y);                                           \
        }                                                                                 \
        unsigned bad = (unsigned)PTL_VBITS(S, PTL_VCMP(S, x, PTL_V(S, set1)(LIM), _CMP_NGE_UQ)) \
                       & ((1u << m) - 1);                                                 \
        if (__builtin_expect(bad != 0, 0)) {                                              \
            act_redo_f4(SCALAR, GRAD, d, s, i, bad, extra);                               \
        }                                                                                 \
    }                                                                                     \
    PTL_VATTR(S) static void                                                              \
        NAME##_loop_f4_##S(char **d, const int64_t *s, int64_t n, const void *extra)      \
    {                                                                                     \
        const double *e = (const double *)extra;                                          \
        const double p[ACT_NPARAMS] = {e[0], e[1], e[2], e[3]};                           \
        int64_t i = 0;                                                                    \
        for (; i + PTL_VLANES(S) <= n; i += PTL_VLANES(S)) {                              \
            NAME##_step_f4_##S(d, s, i, PTL_VLANES(S), p, extra);                         \
        }                                                                                 \
        if (i < n) {                                                                      \
            NAME##_step_f4_##S(d, s, i, (int)(n - i), p, extra);                          \
        }                                                                                 \
    }

#define DEFINE_ACT_VEC_LOOPS(S)                                                           \
    DEFINE_ACT_FORMULAS(S)                                                                \
    DEFINE_ACT_VEC_LOOP(gelu, S, gelu_y, 0, -5.5f, gelu_loop_f4)                          \
    DEFINE_ACT_VEC_LOOP(gelu_grad, S, gelu_dydx, 1, -3.0f, gelu_grad_loop_f4)             \
    DEFINE_ACT_VEC_LOOP(gelu_tanh, S, gelu_tanh_y, 0, -INFINITY, gelu_loop_f4)            \
    DEFINE_ACT_VEC_LOOP(gelu_tanh_grad, S, gelu_tanh_dydx, 1, -INFINITY, gelu_grad_loop_f4) \
    DEFINE_ACT_VEC_LOOP(silu, S, silu_y, 0, -80.0f, silu_loop_f4)                         \
    DEFINE_ACT_VEC_LOOP(silu_grad, S, silu_dydx, 1, -80.0f, silu_grad_loop_f4)             \
    DEFINE_ACT_VEC_LOOP(elu, S, elu_y, 0, -INFINITY, elu_loop_f4)                         \
    DEFINE_ACT_VEC_LOOP(elu_grad, S, elu_dydx, 1, -INFINITY, elu_grad_loop_f4)            \
    DEFINE_ACT_VEC_LOOP(elu_result_grad, S, elu_result_dydx, 1, -INFINITY,                \
                        elu_result_grad_loop_f4)                                          \
    DEFINE_ACT_VEC_LOOP(softplus, S, softplus_y, 0, -INFINITY, softplus_loop_f4)          \
    DEFINE_ACT_VEC_LOOP(softplus_grad, S, softplus_dydx, 1, -INFINITY, softplus_grad_loop_f4) \
    DEFINE_ACT_VEC_LOOP(log_sigmoid, S, log_sigmoid_y, 0, -INFINITY, log_sigmoid_loop_f4) \
    DEFINE_ACT_VEC_LOOP(log_sigmoid_buffer, S, log_sigmoid_buffer_y, 0, -INFINITY,        \
                        log_sigmoid_buffer_loop_f4)                                       \
    DEFINE_ACT_VEC_LOOP(mish, S, mish_y, 0, -80.0f, mish_loop_f4)                         \
    DEFINE_ACT_VEC_LOOP(mish_grad, S, mish_dydx, 1, -80.0f, mish_grad_loop_f4)            \
    DEFINE_ACT_VEC_LOOP(hardswish, S, hardswish_y, 0, -INFINITY, hardswish_loop_f4)

DEFINE_ACT_VEC_LOOPS(ps)
DEFINE_ACT_VEC_LOOPS(ps512)

/* log_sigmoid_forward's two float32 results of n contiguous values in one pass (Note
 * [Log-sigmoid buffer]): the buffer e = e^-|x| and the output min(x, 0) - log1p(e) from the
 * same e, which are log_sigmoid_y's and log_sigmoid_buffer_y's operations, so the bits of
 * the two loops; a vector holding a NaN, and the last n % L values, go to those loops
 * (log_sigmoid_pair_rest) */
static void log_sigmoid_pair_rest(float *o, float *b, const float *a, int64_t n);
#define DEFINE_LOGSIG_PAIR_LOOP(S)                                                        \
    PTL_VATTR(S) static void                                                              \
        log_sigmoid_pair_f4_##S(float *o, float *b, const float *a, int64_t n)           \
    {                                                                                     \
        int64_t i = 0;                                                                    \
        for (; i + PTL_VLANES(S) <= n; i += PTL_VLANES(S)) {                              \
            PTL_VT(S) x = PTL_V(S, loadu)(a + i);                                         \
            PTL_VT(S) e = ptl_vm_exp_##S(PTL_V(S, or)(x, PTL_V(S, set1)(-0.0f)));         \
            PTL_V(S, storeu)(b + i, e);                                                   \
            PTL_V(S, storeu)(o + i, PTL_V(S, sub)(PTL_V(S, min)(x, PTL_V(S, setzero)()),  \
                                                  ptl_vm_log1p_##S(e)));                  \
            if (__builtin_expect(PTL_VBITS(S, PTL_VCMP(S, x, x, _CMP_UNORD_Q)) != 0, 0)) { \
                log_sigmoid_pair_rest(o + i, b + i, a + i, PTL_VLANES(S));                \
            }                                                                             \
        }                                                                                 \
        if (i < n) {                                                                      \
            log_sigmoid_pair_rest(o + i, b + i, a + i, n - i);                            \
        }                                                                                 \
    }
DEFINE_LOGSIG_PAIR_LOOP(ps)
DEFINE_LOGSIG_PAIR_LOOP(ps512)
#undef DEFINE_LOGSIG_PAIR_LOOP
#define LOGSIG_PAIR_LOOPS                                                                 \
    ((void (*const[2])(float *, float *, const float *, int64_t)){log_sigmoid_pair_f4_ps,  \
                                                                 log_sigmoid_pair_f4_ps512})

/* the AVX2 and the AVX-512 loop of NAME */
#define VEC_LOOPS(NAME) ((const PtlLoop[2]){NAME##_loop_f4_ps, NAME##_loop_f4_ps512})
#else
#define VEC_LOOPS(NAME) NULL
#define LOGSIG_PAIR_LOOPS NULL
#endif

/* Runs vec[1] (AVX-512) or vec[0] (AVX2), the widest the CPU has, where vec is not NULL and
 * the float32 operands are contiguous (a backward's (grad) grad_output may also be broadcast;
 * one element counts as contiguous); else portable. */
static void
run_f4(const PtlLoop *vec, PtlLoop portable, int grad, char **d, const int64_t *s, int64_t n,
       const void *extra)
{
    int contiguous = n == 1 ||
                     (s[0] == sizeof(float) && (s[1] == sizeof(float) || (grad && s[1] == 0)) &&
                      (!grad || s[2] == sizeof(float)));
    PtlCpuCapability cap = ptl_cpu_capability();
    if (vec != NULL && contiguous && cap >= PTL_CPU_AVX2) {
        vec[cap >= PTL_CPU_AVX512](d, s, n, extra);
        return;
    }
    portable(d, s, n, extra);
}

/* float32 gelu (exact or tanh) and its backward */
static void
gelu_fast_loop_f4(char **d, const int64_t *s, int64_t n, const void *extra)
{
    int tanh_form = ((const double *)extra)[0] != 0;
    run_f4(tanh_form ? VEC_LOOPS(gelu_tanh) : VEC_LOOPS(gelu), gelu_loop_f4, 0, d, s, n, extra);
}

static void
gelu_grad_fast_loop_f4(char **d, const int64_t *s, int64_t n, const void *extra)
{
    int tanh_form = ((const double *)extra)[0] != 0;
    run_f4(tanh_form ? VEC_LOOPS(gelu_tanh_grad) : VEC_LOOPS(gelu_grad), gelu_grad_loop_f4, 1,
           d, s, n, extra);
}

static const PtlLoop gelu_fast_loops[PTL_DTYPE_COUNT] = {
    [PTL_DTYPE_FLOAT16] = gelu_loop_f2, [PTL_DTYPE_BFLOAT16] = gelu_loop_bf,
    [PTL_DTYPE_FLOAT32] = gelu_fast_loop_f4, [PTL_DTYPE_FLOAT64] = gelu_loop_f8};
static const PtlLoop gelu_grad_fast_loops[PTL_DTYPE_COUNT] = {
    [PTL_DTYPE_FLOAT16] = gelu_grad_loop_f2, [PTL_DTYPE_BFLOAT16] = gelu_grad_loop_bf,
    [PTL_DTYPE_FLOAT32] = gelu_grad_fast_loop_f4, [PTL_DTYPE_FLOAT64] = gelu_grad_loop_f8};

/* NAME_loops: the table of NAME whose float32 entry runs the vector loops where run_f4
 * can (GRAD: a backward's) */
#define DEFINE_FAST_TABLE(NAME, GRAD)                                                     \
    static void                                                                           \
    NAME##_fast_loop_f4(char **d, const int64_t *s, int64_t n, const void *extra)         \
    {                                                                                     \
        run_f4(VEC_LOOPS(NAME), NAME##_loop_f4, GRAD, d, s, n, extra);                    \
    }                                                                                     \
    static const PtlLoop NAME##_loops[PTL_DTYPE_COUNT] = {                                \
        [PTL_DTYPE_FLOAT16] = NAME##_loop_f2, [PTL_DTYPE_BFLOAT16] = NAME##_loop_bf,      \
        [PTL_DTYPE_FLOAT32] = NAME##_fast_loop_f4, [PTL_DTYPE_FLOAT64] = NAME##_loop_f8};

DEFINE_FAST_TABLE(silu, 0)
DEFINE_FAST_TABLE(silu_grad, 1)
DEFINE_FAST_TABLE(elu, 0)
DEFINE_FAST_TABLE(elu_grad, 1)
DEFINE_FAST_TABLE(elu_result_grad, 1)
DEFINE_FAST_TABLE(softplus, 0)
DEFINE_FAST_TABLE(softplus_grad, 1)
DEFINE_FAST_TABLE(log_sigmoid, 0)
DEFINE_FAST_TABLE(log_sigmoid_buffer, 0)
DEFINE_FAST_TABLE(mish, 0)
DEFINE_FAST_TABLE(mish_grad, 1)
DEFINE_FAST_TABLE(hardswish, 0)
#undef DEFINE_FAST_TABLE
#undef VEC_LOOPS

#ifdef PTL_HAVE_AVX2_KERNELS
static void
log_sigmoid_pair_rest(float *o, float *b, const float *a, int64_t n)
{
    static const double p[ACT_NPARAMS] = {0, 0, 0, 0};
    static const int64_t st[2] = {sizeof(float), sizeof(float)};
    char *dy[2] = {(char *)o, (char *)a}, *db[2] = {(char *)b, (char *)a};
    log_sigmoid_fast_loop_f4(dy, st, n, p);
    log_sigmoid_buffer_fast_loop_f4(db, st, n, p);
}
#endif
DEFINE_SELECT(leaky_relu, LEAKY_F)
DEFINE_SELECT_GRAD_SELF_FIRST(leaky_relu_grad, LEAKY_G)
DEFINE_SELECT_LOOPS(hardtanh, HARDTANH_F)
DEFINE_SELECT_GRAD(hardtanh_grad, HARDTANH_G)
DEFINE_SELECT_GRAD(hardswish_grad, HARDSWISH_G)
DEFINE_SELECT(hardsigmoid, HARDSIGMOID_F)
DEFINE_SELECT_GRAD(hardsigmoid_grad, HARDSIGMOID_G)
DEFINE_SELECT(softshrink, SOFTSHRINK_F)
DEFINE_SELECT(hardshrink, HARDSHRINK_F)
DEFINE_SELECT_GRAD(shrink_grad, SHRINK_G)
DEFINE_SELECT_LOOPS(threshold, THRESHOLD_F)
DEFINE_SELECT_GRAD_SELF_FIRST(threshold_grad, THRESHOLD_G)

#define INT_AND_FLOAT_ENTRIES(NAME, INAME)                                                \
    [PTL_DTYPE_UINT8] = INAME##_loop_u1, [PTL_DTYPE_INT8] = INAME##_loop_i1,              \
    [PTL_DTYPE_INT16] = INAME##_loop_i2, [PTL_DTYPE_INT32] = INAME##_loop_i4,             \
    [PTL_DTYPE_INT64] = INAME##_loop_i8, [PTL_DTYPE_FLOAT16] = NAME##_loop_f2,            \
    [PTL_DTYPE_BFLOAT16] = NAME##_loop_bf, [PTL_DTYPE_FLOAT32] = NAME##_loop_f4,          \
    [PTL_DTYPE_FLOAT64] = NAME##_loop_f8

static const PtlLoop hardtanh_all_loops[PTL_DTYPE_COUNT] = {
    INT_AND_FLOAT_ENTRIES(hardtanh, hardtanh_int)};
static const PtlLoop threshold_all_loops[PTL_DTYPE_COUNT] = {
    INT_AND_FLOAT_ENTRIES(threshold, threshold_int)};

/* ---- kernels ---- */

/* the stack slots of the inputs, in the iterator's order (its first input breaks the ties
 * of its result's layout) */
static const int fwd_inputs[1] = {0};
static const int grad_inputs[2] = {0, 1};
static const int self_first_inputs[2] = {1, 0};

/* Which stack slots hold an op's parameters, in the order its formula reads p[]. */
typedef struct ActKernel {
    PtlOpId id;
    const PtlLoop *loops;
    int ninputs;            /* 1: forward (self), 2: backward (grad_output, self) */
    int nparams;
    int param_slot[3];
    const char *kname;      /* the kernel PyTorch's dtype error names; NULL: "<op>_cpu" */
    unsigned in_dtype;      /* bit j: p[j] is a bound the input is compared with */
    int self_first;         /* a backward that PyTorch iterates as (self, grad_output) */
} ActKernel;

/* [*] -> [*] (forward) and [*], [*] -> [*] (backward) */
static const ActKernel act_table[] = {
    {PTL_OP__gelu, gelu_fast_loops, 1, 1, {1}, "GeluKernelImpl", 0, 0},
    {PTL_OP_silu, silu_loops, 1, 0, {0}, NULL, 0, 0},
    {PTL_OP_silu_, silu_loops, 1, 0, {0}, NULL, 0, 0},
    {PTL_OP_silu_backward, silu_grad_loops, 2, 0, {0}, NULL, 0, 0},
    {PTL_OP_mish, mish_loops, 1, 0, {0}, NULL, 0, 0},
    {PTL_OP_mish_, mish_loops, 1, 0, {0}, NULL, 0, 0},
    {PTL_OP_mish_backward, mish_grad_loops, 2, 0, {0}, NULL, 0, 0},
    {PTL_OP_elu, elu_loops, 1, 3, {1, 2, 3}, NULL, 0, 0},
    {PTL_OP_elu_, elu_loops, 1, 3, {1, 2, 3}, NULL, 0, 0},
    {PTL_OP_leaky_relu, leaky_relu_loops, 1, 1, {1}, NULL, 0, 0},
    {PTL_OP_leaky_relu_, leaky_relu_loops, 1, 1, {1}, NULL, 0, 0},
    {PTL_OP_leaky_relu_backward, leaky_relu_grad_loops, 2, 1, {2}, NULL, 0, 1},
    {PTL_OP_hardtanh, hardtanh_all_loops, 1, 2, {1, 2}, NULL, 3, 0},
    {PTL_OP_hardtanh_, hardtanh_all_loops, 1, 2, {1, 2}, NULL, 3, 0},
    {PTL_OP_hardtanh_backward, hardtanh_grad_loops, 2, 2, {2, 3}, NULL, 3, 0},
    {PTL_OP_softplus, softplus_loops, 1, 2, {1, 2}, NULL, 0, 0},
    {PTL_OP_softplus_backward, softplus_grad_loops, 2, 2, {2, 3}, NULL, 0, 0},
    {PTL_OP_hardswish, hardswish_loops, 1, 0, {0}, NULL, 0, 0},
    {PTL_OP_hardswish_, hardswish_loops, 1, 0, {0}, NULL, 0, 0},
    {PTL_OP_hardswish_backward, hardswish_grad_loops, 2, 0, {0}, NULL, 0, 0},
    {PTL_OP_hardsigmoid, hardsigmoid_loops, 1, 0, {0}, NULL, 0, 0},
    {PTL_OP_hardsigmoid_, hardsigmoid_loops, 1, 0, {0}, NULL, 0, 0},
    {PTL_OP_hardsigmoid_backward, hardsigmoid_grad_loops, 2, 0, {0}, NULL, 0, 0},
    {PTL_OP_softshrink, softshrink_loops, 1, 1, {1}, "softshrink_check", 1, 0},
    {PTL_OP_softshrink_backward, shrink_grad_loops, 2, 1, {2}, NULL, 1, 0},
    {PTL_OP_hardshrink, hardshrink_loops, 1, 1, {1}, NULL, 1, 0},
    {PTL_OP_hardshrink_backward, shrink_grad_loops, 2, 1, {2}, NULL, 1, 0},
    {PTL_OP_threshold, threshold_all_loops, 1, 2, {1, 2}, NULL, 3, 0},
    {PTL_OP_threshold_, threshold_all_loops, 1, 2, {1, 2}, NULL, 3, 0},
    {PTL_OP_threshold_backward, threshold_grad_loops, 2, 1, {2}, NULL, 1, 1},
};

/* A parameter as PyTorch's kernels see it: a bound the input is compared with in the
 * input's dtype (Scalar.to<scalar_t>: threshold(0.1) keeps a float32 0.1f, an int32
 * threshold(-0.8) compares with 0), any other in float for the float32, float16 and
 * bfloat16 inputs (their opmath type) and in double for float64; integer inputs keep the
 * double. */
double
ptl_activation_param(double v, PtlDtype dt, int in_dtype)
{
    if (in_dtype && !ptl_dtype_is_floating(dt) && !ptl_dtype_is_complex(dt)) {
        return trunc(v);
    }
    if (dt == PTL_DTYPE_FLOAT32 || ((dt == PTL_DTYPE_FLOAT16 || dt == PTL_DTYPE_BFLOAT16) &&
                                    !in_dtype)) {
        return (double)(float)v;
    }
    if (dt == PTL_DTYPE_FLOAT16) {
        return (double)ptl_half_to_f(ptl_f_to_half((float)v));
    }
    if (dt == PTL_DTYPE_BFLOAT16) {
        return (double)ptl_bf16_to_f(ptl_f_to_bf16((float)v));
    }
    return v;
}

/* The table-driven kernel of every op in act_table. */
static int
act_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    double p[ACT_NPARAMS] = {0, 0, 0, 0};
    (void)ks;
    for (size_t k = 0; k < sizeof(act_table) / sizeof(act_table[0]); k++) {
        const ActKernel *a = &act_table[k];
        if ((int)a->id != op->id) {
            continue;
        }
        PtlDtype dt = s[0].tag == PTL_IV_TENSOR ? s[0].u.t->dtype : PTL_DTYPE_FLOAT64;
        if (a->ninputs == 2) {   /* a backward's Scalars go to the dtype it computes in */
            PtlTensorImpl *ts[2] = {s[0].u.t, s[1].u.t};
            dt = ptl_result_type(ts, 2);
        }
        for (int j = 0; j < a->nparams; j++) {
            p[j] = ptl_activation_param(ptl_iv_to_double(&s[a->param_slot[j]]), dt,
                                        (a->in_dtype >> j) & 1);
        }
        const int *in = a->ninputs == 1 ? fwd_inputs
                        : a->self_first ? self_first_inputs : grad_inputs;
        return ptl_pointwise_named(op, s, a->ninputs, in, ptl_iter_config(), a->loops, p,
                                   a->kname);
    }
    return ptl_error_set(PTL_ERR_RUNTIME, "activation kernel for an unknown op");
}

/* The type an activation kernel computes a reduced-precision dtype's values in */
static PtlDtype
opmath(PtlDtype dt)
{
    return dt == PTL_DTYPE_FLOAT64 ? PTL_DTYPE_FLOAT64 : PTL_DTYPE_FLOAT32;
}

/* elu's Scalars s[1..end) (alpha, scale, input_scale) reach its kernel converted to the
 * opmath type with c10's overflow check: PyTorch's "value cannot be converted to type float
 * without overflow" for alpha=1e308 on a float32 tensor, none on a float64 one. */
static int
elu_params_check(const PtlIValue *s, int end, PtlDtype dt)
{
    for (int i = 1; i < end; i++) {
        if (ptl_scalar_check_range(&s[i], opmath(dt)) < 0) {
            return -1;
        }
    }
    return 0;
}

/* threshold's threshold Scalar as its kernel converts it (c10's overflow check): to the
 * opmath type of a floating dtype, to an integer dtype itself */
static int
threshold_param_check(const PtlIValue *v, PtlDtype dt)
{
    return ptl_scalar_check_range(v, ptl_dtype_is_floating(dt) ? opmath(dt) : dt);
}

/* hardtanh's bounds s[1], s[2] as PyTorch's hardtanh passes them to clamp, which converts
 * each to the dtype with c10's overflow check: an integer dtype's first to int64 (toLong,
 * which truncates), and uint8's must not be negative then */
static int
hardtanh_bounds_check(const PtlIValue *s, PtlDtype dt)
{
    PtlIValue lo = s[1], hi = s[2];
    if (ptl_dtype_is_integral(dt, 0)) {
        if (ptl_scalar_check_range(&lo, PTL_DTYPE_INT64) < 0 ||
            ptl_scalar_check_range(&hi, PTL_DTYPE_INT64) < 0) {
            return -1;
        }
        lo = ptl_iv_int(ptl_iv_to_int(&lo));
        hi = ptl_iv_int(ptl_iv_to_int(&hi));
        if (dt == PTL_DTYPE_UINT8 && (lo.u.i < 0 || hi.u.i < 0)) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "cannot do hardtanh on an unsigned type with negative limits");
        }
    }
    return ptl_scalar_check_range(&lo, dt) < 0 ? -1 : ptl_scalar_check_range(&hi, dt);
}

int
ptl_activation_check(const PtlOperator *op, const PtlIValue *s)
{
    PtlDtype dt = s[0].u.t->dtype;
    switch (op->id) {
    case PTL_OP_softshrink: {   /* lambd must fit the dtype and be >= 0 */
        double lambd = ptl_iv_to_double(&s[1]);
        double hi = dt == PTL_DTYPE_FLOAT64 ? DBL_MAX : dt == PTL_DTYPE_FLOAT16 ? 65504.0
                  : dt == PTL_DTYPE_BFLOAT16 ? 3.3895313892515355e38 : FLT_MAX;
        if (ptl_dtype_is_floating(dt) && (lambd < 0 || lambd > hi)) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "lambda must be in range [0, %g] for input dtype %s, but "
                                 "found %g", hi, ptl_dtype_legacy_name(dt), lambd);
        }
        return 0;
    }
    case PTL_OP_hardtanh: case PTL_OP_hardtanh_:
        if (dt == PTL_DTYPE_BOOL) {
            return ptl_error_set(PTL_ERR_RUNTIME, "Bool inputs not supported for hardtanh");
        }
        return hardtanh_bounds_check(s, dt);
    case PTL_OP_celu: case PTL_OP_celu_: {
        if (ptl_iv_to_double(&s[1]) == 0) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "ZeroDivisionError: alpha cannot be 0 for CELU");
        }
        /* elu with input_scale 1 / alpha: both reach the kernel's opmath type */
        PtlIValue inv = ptl_iv_double(1.0 / ptl_iv_to_double(&s[1]));
        return elu_params_check(s, 2, dt) < 0 ? -1 : ptl_scalar_check_range(&inv, opmath(dt));
    }
    case PTL_OP_elu: case PTL_OP_elu_:
        return elu_params_check(s, 4, dt);
    case PTL_OP_softplus:   /* beta and threshold reach the kernel in the opmath type */
        return elu_params_check(s, 3, dt);
    case PTL_OP_softplus_backward:
        return ptl_scalar_check_range(&s[2], opmath(dt)) < 0
                   ? -1 : ptl_scalar_check_range(&s[3], opmath(dt));
    case PTL_OP_elu_backward:   /* alpha (s[1]) with is_result (s[4]) */
        if (s[4].tag == PTL_IV_BOOL && s[4].u.b && ptl_iv_to_double(&s[1]) < 0) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "In-place elu backward calculation is triggered with a "
                                 "negative slope which is not supported. This is caused by "
                                 "calling in-place forward function with a negative slope, "
                                 "please call out-of-place version instead.");
        }
        return elu_params_check(s, 4, dt);
    case PTL_OP_leaky_relu_backward:   /* negative_slope (s[2]) with self_is_result (s[3]) */
        if (s[3].u.b && ptl_iv_to_double(&s[2]) < 0) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "In-place leakyReLu backward calculation is triggered with a "
                                 "negative slope which is not supported. This is caused by "
                                 "calling in-place forward function with a negative slope, "
                                 "please call out-of-place version instead. File an issue at "
                                 "https://github.com/pytorch/pytorch if you do require "
                                 "supporting in-place leakRelu backward calculation with "
                                 "negative slope");
        }
        return 0;
    case PTL_OP_threshold: case PTL_OP_threshold_:
        /* c10's overflow checks, threshold's first: threshold in the opmath type (float for
         * float16 too), value in the tensor's dtype */
        return threshold_param_check(&s[1], dt) < 0 ? -1 : ptl_scalar_check_range(&s[2], dt);
    case PTL_OP_threshold_backward:   /* in the dtype grad_output and self promote to */
        return threshold_param_check(&s[2], ptl_promote_types(dt, s[1].u.t->dtype));
    default: return 0;
    }
}

/* softshrink, hardtanh (integer tensors too), elu, leaky_relu_backward and threshold: act_cpu
 * after the argument checks */
static int
checked_act_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    if (ptl_activation_check(op, s) < 0) {
        return -1;
    }
    /* PyTorch's hardtanh is clamp, where a NaN bound makes every element NaN; the select
     * loops would pass over it (fuzzer --torch seed 72, call 744) */
    if ((op->id == PTL_OP_hardtanh || op->id == PTL_OP_hardtanh_) &&
        ptl_dtype_is_floating(s[0].u.t->dtype) &&
        (isnan(ptl_iv_to_double(&s[1])) || isnan(ptl_iv_to_double(&s[2])))) {
        PtlIValue args[3] = {s[0], s[1], s[2]};
        PtlTensorImpl *r =
            ptl_call_tensor(op->id == PTL_OP_hardtanh ? PTL_OP_clamp : PTL_OP_clamp_, args);
        if (r == NULL) {
            return -1;
        }
        s[0] = ptl_iv_tensor(r);
        return 0;
    }
    return act_cpu(op, ks, s);
}

/* mish_backward(Tensor grad_output, Tensor self) -> Tensor: [*], [*] -> [*] in self's dtype
 * (PyTorch's output is empty_like(self)), computed in the dtype the two promote to, which
 * must cast to it */
static int
mish_backward_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *self = s[1].u.t;
    PtlDtype rt = ptl_promote_types(s[0].u.t->dtype, self->dtype);
    if (ptl_dtype_is_floating(rt) && !ptl_can_cast(rt, self->dtype)) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "result type %s can't be cast to the desired output type %s",
                             ptl_dtype_legacy_name(rt), ptl_dtype_legacy_name(self->dtype));
    }
    PtlDevice dev = self->device;
    PtlDtype dt = self->dtype;
    if (act_cpu(op, ks, s) < 0) {
        return -1;
    }
    PtlTensorImpl *r = s[0].u.t;
    if (r->dtype == dt) {
        return 0;
    }
    PtlTensorImpl *c = ptl_to_copy(r, dt, &dev);
    ptl_decref(r);
    s[0] = c != NULL ? ptl_iv_tensor(c) : ptl_iv_none();
    return c != NULL ? 0 : -1;
}

/* gelu(Tensor self, *, str approximate='none') -> Tensor: checks the mode and calls the
 * hidden _gelu(self, int) that autograd records (node arguments keep no strings). */
static int
gelu_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    const char *mode = s[1].tag == PTL_IV_STRING ? s[1].u.s : "none";
    int tanh_approx = strcmp(mode, "tanh") == 0;
    (void)op;
    (void)ks;
    if (!tanh_approx && strcmp(mode, "none") != 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "approximate argument must be either none or tanh.");
    }
    PtlIValue a[2] = {s[0], ptl_iv_int(tanh_approx)};
    PtlTensorImpl *r = ptl_call_tensor(PTL_OP__gelu, a);
    if (r == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(r);
    return 0;
}

/* gelu_backward(Tensor grad_output, Tensor self, *, str approximate='none') -> Tensor */
static int
gelu_backward_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    const char *mode = s[2].tag == PTL_IV_STRING ? s[2].u.s : "none";
    double p[ACT_NPARAMS] = {strcmp(mode, "tanh") == 0, 0, 0, 0};
    (void)ks;
    if (p[0] == 0 && strcmp(mode, "none") != 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "approximate argument must be either none or tanh.");
    }
    return ptl_pointwise(op, s, 2, grad_inputs, ptl_iter_config(), gelu_grad_fast_loops, p);
}

/* elu_backward(grad_output, alpha, scale, input_scale, bool is_result, self_or_result):
 * [*], [*] -> [*], the parameters in grad_output's opmath type, as the forward takes them.
 * From self x the slope for x <= 0 is input_scale alpha scale e^(x input_scale); from the
 * result y = alpha scale (e^(x input_scale) - 1) of the in-place op it is input_scale (y +
 * alpha scale) for y <= 0, which needs alpha >= 0 (with a negative alpha the sign of y no
 * longer tells the side of x). */
static int
elu_backward_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlDtype dt = s[0].u.t->dtype;
    double p[ACT_NPARAMS] = {ptl_activation_param(ptl_iv_to_double(&s[1]), dt, 0),
                             ptl_activation_param(ptl_iv_to_double(&s[2]), dt, 0),
                             ptl_activation_param(ptl_iv_to_double(&s[3]), dt, 0), 0};
    int is_result = s[4].tag == PTL_IV_BOOL && s[4].u.b;
    static const int gs[2] = {0, 5};
    (void)ks;
    if (ptl_activation_check(op, s) < 0) {
        return -1;
    }
    return ptl_pointwise(op, s, 2, gs, ptl_iter_config(),
                         is_result ? elu_result_grad_loops : elu_grad_loops, p);
}

/* celu(Tensor self, Scalar alpha=1.0): [*] -> [*], elu with scale 1 and input_scale
 * 1 / alpha (and celu_ in place) */
static int
celu_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    double alpha = ptl_iv_to_double(&s[1]);
    double p[ACT_NPARAMS] = {alpha, 1.0, 1.0 / alpha, 0};
    (void)ks;
    if (ptl_activation_check(op, s) < 0) {
        return -1;
    }
    return ptl_pointwise_named(op, s, 1, fwd_inputs, ptl_iter_config(), elu_loops, p, "elu_cpu");
}

/* Note [Log-sigmoid buffer]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * As in PyTorch, log_sigmoid(x) is log_sigmoid_forward(x)[0], and log_sigmoid_forward also
 * returns the buffer e^-|x| that its CPU backward log_sigmoid_backward(g, x, buffer) reads:
 * (x < 0 ? 1 - t : t) g with t = b / (1 + b), which is g sigmoid(-x) for b = e^-|x|.  The
 * backward computes that formula from whatever buffer it is given (broadcast with g and x,
 * all three of one dtype: PyTorch's checks and messages), as PyTorch's CPU kernel does; its
 * CUDA kernel (PyTorch's and ours) ignores the buffer, and log_sigmoid_forward on CUDA
 * returns an empty one.  The buffer is no differentiable output (no grad_fn).  A contiguous
 * float32 x takes one pass that computes e^-|x| once for both results (log_sigmoid_pair, the
 * same bits as the two loops); other inputs run twice over x, once per result. */

/* Runs loops (a forward activation's, no parameters) over self into out, or (out NULL)
 * into a new contiguous tensor, as PyTorch's CPU kernel allocates both results whatever
 * self's layout; the result (a new reference; out's version bumped) or NULL with the error
 * set, naming the kernel "log_sigmoid_cpu" as PyTorch's. */
static PtlTensorImpl *
log_sigmoid_part(PtlTensorImpl *self, PtlTensorImpl *out, const PtlLoop *loops)
{
    static const double p[ACT_NPARAMS] = {0, 0, 0, 0};
    PtlIterConfig cfg = ptl_iter_config();
    PtlTensorIter it;
    PtlTensorImpl *fresh = NULL, *r;
    if (loops[self->dtype] == NULL) {
        ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"log_sigmoid_cpu\" not implemented for '%s'",
                      ptl_dtype_legacy_name(self->dtype));
        return NULL;
    }
    if (out == NULL &&
        (fresh = out = ptl_empty(self->dim, self->sizes, self->dtype, self->device)) == NULL) {
        return NULL;
    }
    cfg.ninputs = 1;
    cfg.inputs[0] = self;
    cfg.out = out;
    if (ptl_iter_build(&it, &cfg) < 0) {
        ptl_xdecref(fresh);
        return NULL;
    }
    if (loops[it.compute_dtype] == NULL) {   /* an out= of an integer dtype */
        ptl_iter_release(&it);
        ptl_xdecref(fresh);
        ptl_dtype_not_implemented(ptl_op(PTL_OP_log_sigmoid), it.compute_dtype);
        return NULL;
    }
    if (ptl_iter_run(&it, loops[it.compute_dtype], p) < 0) {
        ptl_iter_release(&it);
        ptl_xdecref(fresh);
        return NULL;
    }
    r = ptl_iter_finish(&it);
    if (r != NULL && fresh == NULL) {
        ptl_tensor_bump_version(r);
    }
    ptl_xdecref(fresh);
    return r;
}

/* A contiguous float32 self's two results in one pass (LOGSIG_PAIR_LOOPS), split across
 * threads in grains of LOGSIG_GRAIN values */
#define LOGSIG_GRAIN 32768

typedef struct LogSigPair {
    void (*loop)(float *, float *, const float *, int64_t);
    float *y, *b;
    const float *x;
} LogSigPair;

static int
log_sigmoid_pair_range(void *ctx, int64_t begin, int64_t end)
{
    const LogSigPair *j = ctx;
    j->loop(j->y + begin, j->b + begin, j->x + begin, end - begin);
    return 0;
}

/* 1 with the two new results in *y and *b when self is a contiguous float32 CPU tensor (a meta
 * one has no data) on a CPU with the vector loops, 0 when it is not, -1 with the error set */
static int
log_sigmoid_pair(PtlTensorImpl *self, PtlTensorImpl **y, PtlTensorImpl **b)
{
    PtlCpuCapability cap = ptl_cpu_capability();
    if (LOGSIG_PAIR_LOOPS == NULL || cap < PTL_CPU_AVX2 || self->dtype != PTL_DTYPE_FLOAT32 ||
        self->device.type != PTL_DEVICE_CPU || self->numel == 0 ||
        !ptl_tensor_is_contiguous(self)) {
        return 0;
    }
    LogSigPair j = {LOGSIG_PAIR_LOOPS[cap >= PTL_CPU_AVX512], NULL, NULL,
                    (const float *)ptl_tensor_data(self)};
    *y = ptl_empty(self->dim, self->sizes, self->dtype, self->device);
    *b = *y != NULL ? ptl_empty(self->dim, self->sizes, self->dtype, self->device) : NULL;
    if (*b == NULL) {
        ptl_xdecref(*y);
        return -1;
    }
    j.y = (float *)ptl_tensor_data(*y);
    j.b = (float *)ptl_tensor_data(*b);
    if (ptl_parallel_for(0, self->numel, LOGSIG_GRAIN, log_sigmoid_pair_range, &j) < 0) {
        ptl_decref(*y);
        ptl_decref(*b);
        return -1;
    }
    return 1;
}

/* log_sigmoid_forward(self) -> (output, buffer) and .output(self, *, output, buffer):
 * [*] -> [*], [*] (Note [Log-sigmoid buffer]) */
static int
log_sigmoid_forward_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    int out = op->id == PTL_OP_log_sigmoid_forward_output, r;
    PtlTensorImpl *self = s[0].u.t, *y, *b;
    (void)ks;
    if (!out && (r = log_sigmoid_pair(self, &y, &b)) != 0) {
        if (r < 0) {
            return -1;
        }
        s[0] = ptl_iv_tensor(y);
        s[1] = ptl_iv_tensor(b);
        return 0;
    }
    if ((y = log_sigmoid_part(self, out ? s[1].u.t : NULL, log_sigmoid_loops)) == NULL) {
        return -1;
    }
    if ((b = log_sigmoid_part(self, out ? s[2].u.t : NULL, log_sigmoid_buffer_loops)) == NULL) {
        ptl_decref(y);
        return -1;
    }
    s[0] = ptl_iv_tensor(y);
    s[1] = ptl_iv_tensor(b);
    return 0;
}

/* log_sigmoid(self) = log_sigmoid_forward(self)[0] */
static int
log_sigmoid_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlIValue a[2] = {s[0]};   /* one argument, two results (the buffer is released) */
    (void)op;
    (void)ks;
    return ptl_kernel_return(s, ptl_call_tensor(PTL_OP_log_sigmoid_forward, a));
}

/* PyTorch's TensorIterator check of log_sigmoid_backward's operands (s: grad_output, self,
 * buffer): buffer and grad_output in self's dtype ("Found dtype Float but expected Double");
 * 0, or -1 with the error set */
static int
log_sigmoid_backward_check(const PtlIValue *s)
{
    PtlDtype want = s[1].u.t->dtype;
    const PtlTensorImpl *other[2] = {s[2].u.t, s[0].u.t};
    for (int k = 0; k < 2; k++) {
        if (other[k]->dtype != want) {
            return ptl_error_set(PTL_ERR_RUNTIME, "Found dtype %s but expected %s",
                                 ptl_dtype_legacy_name(other[k]->dtype),
                                 ptl_dtype_legacy_name(want));
        }
    }
    return 0;
}

/* log_sigmoid_backward(grad_output, self, buffer): [*], [*], [*] -> [*] (broadcast), in
 * PyTorch's order of operations, t = b / (1 + b) and (x < 0 ? 1 - t : t) g (float32 in
 * float, as its kernel: Note [Log-sigmoid buffer]); contiguous operands as plain arrays, so
 * that gcc vectorizes the select (Note [Select formulas]) */
#define LOGSIG_GRAD(G, X, B, ONE)                                                         \
    (((X) < 0 ? (ONE) - (B) / ((ONE) + (B)) : (B) / ((ONE) + (B))) * (G))
#define DEFINE_LOGSIG_GRAD_LOOP(NAME, T, DT, LOAD, STORE, C, F)                            \
    PTL_LOOP_CLONES static void                                                           \
    NAME##_loop_##DT(char **d, const int64_t *s, int64_t n, const void *extra)            \
    {                                                                                     \
        const C one = 1;                                                                  \
        (void)extra;                                                                      \
        if (s[0] == sizeof(T) && s[1] == sizeof(T) && s[2] == sizeof(T) &&                \
            s[3] == sizeof(T)) {                                                          \
            T *o = (T *)d[0];                                                             \
            const T *gs = (const T *)d[1], *xs = (const T *)d[2], *bs = (const T *)d[3];  \
            for (int64_t i = 0; i < n; i++) {                                             \
                C b = (C)LOAD(bs[i]);                                                     \
                o[i] = STORE(LOGSIG_GRAD((C)LOAD(gs[i]), (C)LOAD(xs[i]), b, one));        \
            }                                                                             \
            return;                                                                       \
        }                                                                                 \
        for (int64_t i = 0; i < n; i++) {                                                 \
            C g = (C)LOAD(*(const T *)(d[1] + i * s[1]));                                 \
            C x = (C)LOAD(*(const T *)(d[2] + i * s[2]));                                 \
            C b = (C)LOAD(*(const T *)(d[3] + i * s[3]));                                 \
            *(T *)(d[0] + i * s[0]) = STORE(LOGSIG_GRAD(g, x, b, one));                   \
        }                                                                                 \
    }
DEFINE_FLOAT_LOOPS_AS(DEFINE_LOGSIG_GRAD_LOOP, log_sigmoid_grad, 0, float)
DEFINE_FLOAT_TABLE(log_sigmoid_grad)
#undef DEFINE_LOGSIG_GRAD_LOOP
#undef LOGSIG_GRAD

static int
log_sigmoid_backward_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    static const int inputs[3] = {0, 1, 2};
    static const double p[ACT_NPARAMS] = {0, 0, 0, 0};
    (void)ks;
    if (log_sigmoid_backward_check(s) < 0) {
        return -1;
    }
    return ptl_pointwise(op, s, 3, inputs, ptl_iter_config(), log_sigmoid_grad_loops, p);
}

static const PtlKernelReg activation_cpu[] = {
    {PTL_OP__gelu, PTL_KEY_CPU, act_cpu},
    {PTL_OP_gelu, PTL_KEY_COMPOSITE_IMPLICIT, gelu_composite},
    {PTL_OP_gelu_backward, PTL_KEY_CPU, gelu_backward_cpu},
    {PTL_OP_silu, PTL_KEY_CPU, act_cpu},
    {PTL_OP_silu_, PTL_KEY_CPU, act_cpu},
    {PTL_OP_silu_backward, PTL_KEY_CPU, act_cpu},
    {PTL_OP_mish, PTL_KEY_CPU, act_cpu},
    {PTL_OP_mish_, PTL_KEY_CPU, act_cpu},
    {PTL_OP_mish_backward, PTL_KEY_CPU, mish_backward_cpu},
    {PTL_OP_elu, PTL_KEY_CPU, checked_act_cpu},
    {PTL_OP_elu_, PTL_KEY_CPU, checked_act_cpu},
    {PTL_OP_elu_backward, PTL_KEY_CPU, elu_backward_cpu},
    {PTL_OP_celu, PTL_KEY_CPU, celu_cpu},
    {PTL_OP_celu_, PTL_KEY_CPU, celu_cpu},
    {PTL_OP_leaky_relu, PTL_KEY_CPU, act_cpu},
    {PTL_OP_leaky_relu_, PTL_KEY_CPU, act_cpu},
    {PTL_OP_leaky_relu_backward, PTL_KEY_CPU, checked_act_cpu},
    {PTL_OP_hardtanh, PTL_KEY_CPU, checked_act_cpu},
    {PTL_OP_hardtanh_, PTL_KEY_CPU, checked_act_cpu},
    {PTL_OP_hardtanh_backward, PTL_KEY_CPU, act_cpu},
    {PTL_OP_softplus, PTL_KEY_CPU, checked_act_cpu},
    {PTL_OP_softplus_backward, PTL_KEY_CPU, checked_act_cpu},
    {PTL_OP_hardswish, PTL_KEY_CPU, act_cpu},
    {PTL_OP_hardswish_, PTL_KEY_CPU, act_cpu},
    {PTL_OP_hardswish_backward, PTL_KEY_CPU, act_cpu},
    {PTL_OP_hardsigmoid, PTL_KEY_CPU, act_cpu},
    {PTL_OP_hardsigmoid_, PTL_KEY_CPU, act_cpu},
    {PTL_OP_hardsigmoid_backward, PTL_KEY_CPU, act_cpu},
    {PTL_OP_log_sigmoid, PTL_KEY_COMPOSITE_IMPLICIT, log_sigmoid_composite},
    {PTL_OP_log_sigmoid_forward, PTL_KEY_CPU, log_sigmoid_forward_cpu},
    {PTL_OP_log_sigmoid_forward_output, PTL_KEY_CPU, log_sigmoid_forward_cpu},
    {PTL_OP_log_sigmoid_backward, PTL_KEY_CPU, log_sigmoid_backward_cpu},
    {PTL_OP_softshrink, PTL_KEY_CPU, checked_act_cpu},
    {PTL_OP_softshrink_backward, PTL_KEY_CPU, act_cpu},
    {PTL_OP_hardshrink, PTL_KEY_CPU, act_cpu},
    {PTL_OP_hardshrink_backward, PTL_KEY_CPU, act_cpu},
    {PTL_OP_threshold, PTL_KEY_CPU, checked_act_cpu},
    {PTL_OP_threshold_, PTL_KEY_CPU, checked_act_cpu},
    {PTL_OP_threshold_backward, PTL_KEY_CPU, checked_act_cpu},
};
PTL_DEFINE_REGISTER(activation_cpu)
