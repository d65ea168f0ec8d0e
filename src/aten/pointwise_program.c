/* pointwise_program.c -- the block interpreter of Note [Pointwise programs]. */
#include "pointwise_program.h"

#include <math.h>
#include <string.h>

#include "../c10/cpu_features.h"
#include "../c10/error.h"
#include "../c10/parallel.h"
#include "native/vec_math.h"

typedef struct ProgramRun {
    const PtlProgramInstr *prog;
    int ninstr, ntensors, nscalars;
    int cap;    /* ptl_cpu_capability() */
    char *in[PTL_PROGRAM_MAX_REGS];
    const double *scalars;
    char *out;
} ProgramRun;

/* Each register is a pointer to a block of values: input registers point into the inputs,
 * scalar registers at a block filled with the scalar, the last instruction's register into
 * the output, and the others at stack blocks. */
#define RUN_BLOCKS(T, NAME, VEC, EXP, LOG, SQRT, SIN, COS, TANH, SIGMOID, FABS)             \
    static void NAME(const ProgramRun *r, int64_t begin, int64_t end)                       \
    {                                                                                       \
        T regs[PTL_PROGRAM_MAX_REGS][PTL_PROGRAM_BLOCK];                                    \
        T *p[PTL_PROGRAM_MAX_REGS];                                                         \
        const int nin = r->ntensors + r->nscalars;                                          \
        for (int s = 0; s < r->nscalars; s++) {                                             \
            p[r->ntensors + s] = regs[r->ntensors + s];                                     \
            for (int k = 0; k < PTL_PROGRAM_BLOCK; k++) {                                   \
                regs[r->ntensors + s][k] = (T)r->scalars[s];                                \
            }                                                                               \
        }                                                                                   \
        for (int i = 0; i < r->ninstr; i++) {                                               \
            p[nin + i] = regs[nin + i];                                                     \
        }                                                                                   \
        for (int64_t b0 = begin; b0 < end; b0 += PTL_PROGRAM_BLOCK) {                       \
            const int n = (int)(end - b0 < PTL_PROGRAM_BLOCK ? end - b0 : PTL_PROGRAM_BLOCK); \
            for (int t = 0; t < r->ntensors; t++) {                                         \
                p[t] = (T *)r->in[t] + b0;                                                  \
            }                                                                               \
            p[nin + r->ninstr - 1] = (T *)r->out + b0;                                      \
            for (int i = 0; i < r->ninstr; i++) {                                           \
                const T *restrict a = p[r->prog[i].a];                                      \
                const T *restrict b = p[r->prog[i].b];                                      \
                T *restrict o = p[nin + i];                                                 \
                const int k0 = VEC(r->cap, r->prog[i].op, a, b, o, n);                     \
                switch ((PtlProgramOp)r->prog[i].op) {                                      \
                case PTL_PROGRAM_ADD: for (int k = k0; k < n; k++) o[k] = a[k] + b[k]; break; \
                case PTL_PROGRAM_SUB: for (int k = k0; k < n; k++) o[k] = a[k] - b[k]; break; \
                case PTL_PROGRAM_MUL: for (int k = k0; k < n; k++) o[k] = a[k] * b[k]; break; \
                case PTL_PROGRAM_DIV: for (int k = k0; k < n; k++) o[k] = a[k] / b[k]; break; \
                case PTL_PROGRAM_MAXIMUM:                                                   \
                    for (int k = k0; k < n; k++)                                             \
                        o[k] = (a[k] != a[k] || a[k] > b[k]) ? a[k] : b[k];                 \
                    break;                                                                  \
                case PTL_PROGRAM_MINIMUM:                                                   \
                    for (int k = k0; k < n; k++)                                             \
                        o[k] = (a[k] != a[k] || a[k] < b[k]) ? a[k] : b[k];                 \
                    break;                                                                  \
                case PTL_PROGRAM_NEG: for (int k = k0; k < n; k++) o[k] = -a[k]; break;      \
                case PTL_PROGRAM_ABS: for (int k = k0; k < n; k++) o[k] = FABS(a[k]); break; \
                case PTL_PROGRAM_EXP: for (int k = k0; k < n; k++) o[k] = EXP(a[k]); break;  \
                case PTL_PROGRAM_LOG: for (int k = k0; k < n; k++) o[k] = LOG(a[k]); break;  \
                case PTL_PROGRAM_SQRT: for (int k = k0; k < n; k++) o[k] = SQRT(a[k]); break; \
                case PTL_PROGRAM_RSQRT:                                                     \
                    for (int k = k0; k < n; k++) o[k] = (T)1 / SQRT(a[k]);                   \
                    break;                                                                  \
                case PTL_PROGRAM_SIN: for (int k = k0; k < n; k++) o[k] = SIN(a[k]); break;  \
                case PTL_PROGRAM_COS: for (int k = k0; k < n; k++) o[k] = COS(a[k]); break;  \
                case PTL_PROGRAM_TANH: for (int k = k0; k < n; k++) o[k] = TANH(a[k]); break; \
                case PTL_PROGRAM_SIGMOID:                                                   \
                    for (int k = k0; k < n; k++) o[k] = SIGMOID(a[k]);                       \
                    break;                                                                  \
                case PTL_PROGRAM_RELU:                                                      \
                    for (int k = k0; k < n; k++) o[k] = a[k] > 0 || a[k] != a[k] ? a[k] : 0; \
                    break;                                                                  \
                case PTL_PROGRAM_RECIPROCAL:                                                \
                    for (int k = k0; k < n; k++) o[k] = (T)1 / a[k];                         \
                    break;                                                                  \
                case PTL_PROGRAM_SQUARE: for (int k = k0; k < n; k++) o[k] = a[k] * a[k]; break; \
                default: break;                                                             \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
    }

#ifdef PTL_HAVE_AVX2_KERNELS
/* The arithmetic instructions over the whole vectors of kind S in a block; the number of
 * elements done.  Each lane computes what the scalar loop computes (IEEE operations, the
 * same NaN rules), so the result does not depend on the path.  One loop per instruction:
 * a switch inside the loop would cost more than the arithmetic. */
#define ARITH_LOOP(S, EXPR)                                         \
    for (; k + PTL_VLANES(S) <= n; k += PTL_VLANES(S)) {            \
        const PTL_VT(S) x = PTL_V(S, loadu)(a + k);                 \
        const PTL_VT(S) y = PTL_V(S, loadu)(b + k);                 \
        (void)y;                                                    \
        PTL_V(S, storeu)(o + k, (EXPR));                            \
    }                                                               \
    break
/* x where x is NaN or CMP(x, y) holds, else y */
#define NAN_OR(S, CMP) \
    PTL_VSEL(S, PTL_VMOR(S, PTL_VCMP(S, x, x, _CMP_UNORD_Q), PTL_VCMP(S, x, y, CMP)), y, x)

#define DEFINE_ARITH_BLOCK(S)                                                             \
    PTL_VATTR(S) static int                                                               \
        arith_block_##S(int op, const float *a, const float *b, float *o, int n)          \
    {                                                                                     \
        const PTL_VT(S) zero = PTL_V(S, setzero)(), sign = PTL_V(S, set1)(-0.0f);        \
        int k = 0;                                                                        \
        switch ((PtlProgramOp)op) {                                                       \
        case PTL_PROGRAM_ADD: ARITH_LOOP(S, PTL_V(S, add)(x, y));                         \
        case PTL_PROGRAM_SUB: ARITH_LOOP(S, PTL_V(S, sub)(x, y));                         \
        case PTL_PROGRAM_MUL: ARITH_LOOP(S, PTL_V(S, mul)(x, y));                         \
        case PTL_PROGRAM_DIV: ARITH_LOOP(S, PTL_V(S, div)(x, y));                         \
        case PTL_PROGRAM_MAXIMUM: ARITH_LOOP(S, NAN_OR(S, _CMP_GT_OQ));                   \
        case PTL_PROGRAM_MINIMUM: ARITH_LOOP(S, NAN_OR(S, _CMP_LT_OQ));                   \
        case PTL_PROGRAM_NEG: ARITH_LOOP(S, PTL_V(S, xor)(x, sign));                      \
        case PTL_PROGRAM_ABS: ARITH_LOOP(S, PTL_V(S, andnot)(sign, x));                   \
        case PTL_PROGRAM_RELU:                                                            \
            ARITH_LOOP(S, PTL_VSEL(S, PTL_VMOR(S, PTL_VCMP(S, x, x, _CMP_UNORD_Q),        \
                                               PTL_VCMP(S, x, zero, _CMP_GT_OQ)),         \
                                   zero, x));                                             \
        case PTL_PROGRAM_SQUARE: ARITH_LOOP(S, PTL_V(S, mul)(x, x));                      \
        case PTL_PROGRAM_EXP: ptl_vm_map_exp_##S(o, a, n); return n;                      \
        case PTL_PROGRAM_SIGMOID: ptl_vm_map_sigmoid_##S(o, a, n); return n;              \
        case PTL_PROGRAM_TANH: ptl_vm_map_tanh_##S(o, a, n); return n;                    \
        default: break;                                                                   \
        }                                                                                 \
        return k;                                                                         \
    }

DEFINE_ARITH_BLOCK(ps)
DEFINE_ARITH_BLOCK(ps512)
#undef ARITH_LOOP
#undef NAN_OR
#undef DEFINE_ARITH_BLOCK

/* float64: exp, sigmoid, tanh, sin and cos with eager mode's vector maps; the arithmetic is
 * left to the scalar loop (the same IEEE operations, so the same bits) */
#define DEFINE_MAP_BLOCK(S)                                                               \
    PTL_VATTR(S) static int                                                               \
        map_block_##S(int op, const double *a, double *o, int n)                          \
    {                                                                                     \
        switch ((PtlProgramOp)op) {                                                       \
        case PTL_PROGRAM_EXP: ptl_vm_map_exp_##S(o, a, n); return n;                      \
        case PTL_PROGRAM_SIGMOID: ptl_vm_map_sigmoid_##S(o, a, n); return n;              \
        case PTL_PROGRAM_TANH: ptl_vm_map_tanh_##S(o, a, n); return n;                    \
        case PTL_PROGRAM_SIN: ptl_vm_map_sin_##S(o, a, n); return n;                      \
        case PTL_PROGRAM_COS: ptl_vm_map_cos_##S(o, a, n); return n;                      \
        default: return 0;                                                                \
        }                                                                                 \
    }

DEFINE_MAP_BLOCK(pd)
DEFINE_MAP_BLOCK(pd512)
#undef DEFINE_MAP_BLOCK
#endif

/* Runs a float (double) instruction over the block in vectors where it can (cap: the CPU's
 * capability): exp, sigmoid and tanh (double: and sin, cos) with the formulas eager mode
 * uses (native/vec_math.h), float's arithmetic lane by lane as the scalar loop does it;
 * returns how many leading elements are done (0 when the op or the CPU has no vector form),
 * the scalar loop does the rest. */
static int
vector_float(int cap, int op, const float *a, const float *b, float *o, int n)
{
#ifdef PTL_HAVE_AVX2_KERNELS
    if (cap >= PTL_CPU_AVX512) {
        return arith_block_ps512(op, a, b, o, n);
    }
    if (cap >= PTL_CPU_AVX2) {
        return arith_block_ps(op, a, b, o, n);
    }
#endif
    (void)cap, (void)op, (void)a, (void)b, (void)o, (void)n;
    return 0;
}

static int
vector_double(int cap, int op, const double *a, const double *b, double *o, int n)
{
#ifdef PTL_HAVE_AVX2_KERNELS
    if (cap >= PTL_CPU_AVX512) {
        return map_block_pd512(op, a, o, n);
    }
    if (cap >= PTL_CPU_AVX2) {
        return map_block_pd(op, a, o, n);
    }
#endif
    (void)cap, (void)op, (void)a, (void)b, (void)o, (void)n;
    return 0;
}

RUN_BLOCKS(float, run_float, vector_float, ptl_vm_expf, logf, sqrtf, sinf, cosf, tanhf,
           ptl_sigmoid_f, fabsf)
RUN_BLOCKS(double, run_double, vector_double, ptl_vm_exp, log, sqrt, sin, cos, tanh,
           ptl_sigmoid_d, fabs)

static int
run_float_chunk(void *ctx, int64_t begin, int64_t end)
{
    run_float(ctx, begin, end);
    return 0;
}

static int
run_double_chunk(void *ctx, int64_t begin, int64_t end)
{
    run_double(ctx, begin, end);
    return 0;
}

int
ptl_pointwise_program_accepts(PtlTensorImpl *const *ts, int n)
{
    for (int i = 0; i < n; i++) {
        const PtlTensorImpl *t = ts[i];
        if (t->device.type != PTL_DEVICE_CPU || !ptl_tensor_is_contiguous(t) ||
            (t->dtype != PTL_DTYPE_FLOAT32 && t->dtype != PTL_DTYPE_FLOAT64) ||
            t->dtype != ts[0]->dtype || t->numel != ts[0]->numel || t->dim != ts[0]->dim ||
            memcmp(t->sizes, ts[0]->sizes, sizeof(int64_t) * (size_t)t->dim) != 0) {
            return 0;
        }
    }
    return 1;
}

PtlTensorImpl *
ptl_pointwise_program_run(const PtlProgramInstr *prog, int ninstr,
                          PtlTensorImpl *const *inputs, int ntensors, const double *scalars,
                          int nscalars)
{
    const int nregs = ntensors + nscalars + ninstr;
    if (ntensors < 1 || ninstr < 1 || nregs > PTL_PROGRAM_MAX_REGS) {
        ptl_error_set(PTL_ERR_VALUE, "a pointwise program needs 1 to %d registers and an "
                      "input tensor, got %d", PTL_PROGRAM_MAX_REGS, nregs);
        return NULL;
    }
    for (int i = 0; i < ninstr; i++) {
        const PtlProgramInstr *in = &prog[i];
        const int limit = ntensors + nscalars + i;
        if (in->op < 0 || in->op >= PTL_PROGRAM_OP_COUNT || in->a < 0 || in->a >= limit ||
            in->b < 0 || in->b >= limit) {
            ptl_error_set(PTL_ERR_VALUE, "instruction %d of a pointwise program is invalid", i);
            return NULL;
        }
    }
    const PtlTensorImpl *t0 = inputs[0];
    PtlTensorImpl *out = ptl_empty(t0->dim, t0->sizes, t0->dtype, t0->device);
    if (out == NULL) {
        return NULL;
    }
    ProgramRun r = {.prog = prog, .ninstr = ninstr, .ntensors = ntensors,
                    .nscalars = nscalars, .scalars = scalars, .out = ptl_tensor_data(out),
                    .cap = (int)ptl_cpu_capability()};
    for (int t = 0; t < ntensors; t++) {
        r.in[t] = ptl_tensor_data(inputs[t]);
    }
    int rc = ptl_parallel_for(0, t0->numel, PTL_GRAIN_SIZE,
                              t0->dtype == PTL_DTYPE_FLOAT32 ? run_float_chunk
                                                             : run_double_chunk, &r);
    if (rc < 0) {
        ptl_decref(out);
        return NULL;
    }
    return out;
}
