/* native.c -- helpers shared by the CPU kernels.  See native.h. */
#include "native.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../c10/error.h"

void
ptl_kernel_name(const PtlOperator *op, char *buf, size_t n)
{
    const char *name = strstr(op->schema.name, "::");
    name = name ? name + 2 : op->schema.name;
    if (strncmp(name, "special_", 8) == 0) {   /* PyTorch's "i0e_cpu", "bessel_j0_cpu" */
        name += 8;
    }
    size_t len = strlen(name);
    if (op->schema.inplace && len > 1 && name[len - 1] == '_') {
        len--;
    }
    snprintf(buf, n, "%.*s_cpu", (int)len, name);
}

int
ptl_dtype_not_implemented(const PtlOperator *op, PtlDtype dt)
{
    char kname[80];
    ptl_kernel_name(op, kname, sizeof(kname));
    return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"%s\" not implemented for '%s'", kname,
                         ptl_dtype_legacy_name(dt));
}


/* Note [Half-precision pointwise through float32]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * The float16 pointwise loops load and store every value through dtype.h's bit twiddling,
 * one at a time (abs, add, exp of 1e6 float16 values: 0.01-0.1x PyTorch's time).  When every
 * operand of a pointwise op is float16 and the op has a float32 loop computing the same
 * formula (the kernels that call ptl_pointwise_halves_in_float: the unary ops, add, sub, mul,
 * true division; not nextafter, which steps in the half type, nor pow, whose float32 loops
 * classify the exponent), that loop runs on blocks of HALF_BLOCK values converted to float32
 * by the casts' F16C loops (Note [Half-precision conversions]), and the results are
 * converted back, as PyTorch computes half types in float vectors.  The conversions give the
 * bits of the half loops' LOAD and STORE (exact one way, to nearest even the other, NaN
 * handled alike); the float32 loop computes the half loop's formula, or a vector version of
 * it (exp, tanh, ...) whose float result may differ in its last bit, which changes a half
 * result only at a rounding boundary of the half type.  bfloat16 takes the blocks only where
 * the float32 loop is a vector formula (exp, tanh, sigmoid, ...: 0.07-0.13x -> 1.1-2.6x):
 * gcc vectorizes its loads and stores (shifts), and the blocks made add and abs slower
 * (0.74x -> 0.62x, 0.35x -> 0.22x).  abs of both half types takes neither: it clears the sign
 * bit (unary.c U_HALF_BITS).  Where the CPU has F16C, float16 add, sub, mul and true division
 * take neither either: they convert in registers (Note [Float16 arithmetic in registers] in
 * binary.c), as do float16 exp, tanh and the other formulas of vec_math.h (Note [Float16
 * unary formulas in registers] in unary_half.c).  A block is 1024 values (12 KiB of float32 for a binary op, in L1): with 256,
 * the three loop calls per block cost exp of 1e6 float16 values 15% (0.98x -> 1.13x
 * PyTorch's speed, tanh 2.5x -> 2.8x). */
#define HALF_BLOCK 1024

typedef struct HalfViaFloat {
    PtlLoop f4, to_f4, from_f4;   /* the op's float32 loop; the two casts */
    const void *extra;            /* the op's */
    int nt;                       /* operands: output + inputs */
} HalfViaFloat;

static void
half_via_float(char **d, const int64_t *s, int64_t n, const void *extra)
{
    const HalfViaFloat *h = extra;
    float buf[PTL_ITER_MAX][HALF_BLOCK];
    char *p[PTL_ITER_MAX];
    int64_t fs[PTL_ITER_MAX];
    for (int64_t i = 0; i < n; i += HALF_BLOCK) {
        int64_t m = n - i < HALF_BLOCK ? n - i : HALF_BLOCK;
        for (int t = 0; t < h->nt; t++) {
            p[t] = (char *)buf[t];
            fs[t] = t > 0 && s[t] == 0 ? 0 : 4;   /* a broadcast input: one value */
        }
        for (int t = 1; t < h->nt; t++) {
            char *io[2] = {p[t], d[t] + i * s[t]};
            int64_t cs[2] = {4, s[t]};
            h->to_f4(io, cs, s[t] == 0 ? 1 : m, NULL);
        }
        h->f4(p, fs, m, h->extra);
        char *io[2] = {d[0] + i * s[0], p[0]};
        int64_t cs[2] = {s[0], 4};
        h->from_f4(io, cs, m, NULL);
    }
}

/* Whether every operand of it is in its compute dtype, float16 (or bfloat16 with bf16) */
static int
all_half(const PtlTensorIter *it, int bf16)
{
    PtlDtype dt = it->compute_dtype;
    int ok = (dt == PTL_DTYPE_FLOAT16 || (bf16 && dt == PTL_DTYPE_BFLOAT16)) &&
             it->out_dtype == dt;
    for (int t = 0; t < it->ntensors && ok; t++) {
        ok = (it->scalar_cast >> t & 1) || it->ops[t]->dtype == dt;
    }
    return ok;
}

/* ptl_pointwise_named; halves: 1 when float16 operands may run loops[float32], 2 when
 * bfloat16 ones may too */
static int
pointwise(const PtlOperator *op, PtlIValue *s, int ninputs, const int *idx, PtlIterConfig cfg,
          const PtlLoop *loops, const void *extra, const char *kname, int halves)
{
    PtlTensorIter it;
    HalfViaFloat h;
    if (ptl_pointwise_iter(op, s, ninputs, idx, &cfg, &it) < 0) {
        return -1;
    }
    PtlLoop loop = loops[it.compute_dtype];
    if (loop == NULL) {
        ptl_iter_release(&it);
        if (kname != NULL) {
            return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"%s\" not implemented for '%s'",
                                 kname, ptl_dtype_legacy_name(it.compute_dtype));
        }
        return ptl_dtype_not_implemented(op, it.compute_dtype);
    }
    if (halves && loops[PTL_DTYPE_FLOAT32] != NULL && all_half(&it, halves == 2)) {
        h = (HalfViaFloat){loops[PTL_DTYPE_FLOAT32],
                           ptl_cast_loop(PTL_DTYPE_FLOAT32, it.compute_dtype),
                           ptl_cast_loop(it.compute_dtype, PTL_DTYPE_FLOAT32), extra,
                           it.ntensors};
        loop = half_via_float;
        extra = &h;
    }
    if (ptl_iter_run(&it, loop, extra) < 0) {
        ptl_iter_release(&it);
        return -1;
    }
    return ptl_pointwise_return(&it, &cfg, s);
}

int
ptl_pointwise(const PtlOperator *op, PtlIValue *s, int ninputs, const int *idx,
              PtlIterConfig cfg, const PtlLoop *loops, const void *extra)
{
    return pointwise(op, s, ninputs, idx, cfg, loops, extra, NULL, 0);
}

int
ptl_pointwise_named(const PtlOperator *op, PtlIValue *s, int ninputs, const int *idx,
                    PtlIterConfig cfg, const PtlLoop *loops, const void *extra,
                    const char *kname)
{
    return pointwise(op, s, ninputs, idx, cfg, loops, extra, kname, 0);
}

int
ptl_pointwise_halves_in_float(const PtlOperator *op, PtlIValue *s, int ninputs, const int *idx,
                              PtlIterConfig cfg, const PtlLoop *loops, const void *extra,
                              int bf16)
{
    return pointwise(op, s, ninputs, idx, cfg, loops, extra, NULL, bf16 ? 2 : 1);
}

int
ptl_pointwise_iter(const PtlOperator *op, PtlIValue *s, int ninputs, const int *idx,
                   PtlIterConfig *cfg, PtlTensorIter *it)
{
    cfg->ninputs = ninputs;
    for (int i = 0; i < ninputs; i++) {
        cfg->inputs[i] = s[idx[i]].u.t;
    }
    cfg->out = ptl_kernel_out(op, s);
    cfg->is_inplace = op->schema.inplace;
    return ptl_iter_build(it, cfg);
}

int
ptl_pointwise_return(PtlTensorIter *it, const PtlIterConfig *cfg, PtlIValue *s)
{
    PtlTensorImpl *out = ptl_iter_finish(it);
    if (out == NULL) {
        return -1;
    }
    if (cfg->out != NULL) {
        ptl_tensor_bump_version(out);
    }
    s[0] = ptl_iv_tensor(out);
    return 0;
}

PtlTensorImpl **
ptl_tensorlist_new(int64_t n)
{
    PtlTensorImpl **ts = calloc((size_t)(n > 0 ? n : 1), sizeof(PtlTensorImpl *));
    if (ts == NULL) {
        ptl_error_set(PTL_ERR_MEMORY, "out of memory allocating a tensor list");
    }
    return ts;
}

int
ptl_set_tensorlist(PtlIValue *s, PtlTensorImpl **ts, int64_t n, int failed)
{
    if (failed) {
        for (int64_t i = 0; i < n; i++) {
            ptl_xdecref(ts[i]);
        }
        free(ts);
        return -1;
    }
    s[0] = ptl_iv_tensorlist(ts, n);
    s[0].owned = 1;
    return 0;
}

int
ptl_kernel_run_as(PtlKernel k, const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s,
                  PtlMemoryFormat f)
{
    int rank = f == PTL_MEMORY_FORMAT_CHANNELS_LAST ? 4 : 5;
    if (k(op, ks, s) < 0) {
        return -1;
    }
    if (f != PTL_MEMORY_FORMAT_CHANNELS_LAST && f != PTL_MEMORY_FORMAT_CHANNELS_LAST_3D) {
        return 0;
    }
    for (int i = 0; i < op->schema.nrets; i++) {
        PtlTensorImpl *r = s[i].tag == PTL_IV_TENSOR ? s[i].u.t : NULL, *c;
        int64_t st[PTL_MAX_DIMS];
        if (r == NULL || r->dim != rank) {
            continue;
        }
        ptl_memory_format_strides(f, rank, r->sizes, st);
        if (memcmp(st, r->strides, sizeof(int64_t) * (size_t)rank) == 0) {
            continue;
        }
        if (ptl_tensor_impl_is_contiguous_as(r, f) && r->base == NULL &&
            atomic_load_explicit(&r->refcnt, memory_order_acquire) == 1) {
            /* only the strides of size-1 dims differ: a header nobody else holds takes the
             * format's strides without a copy, as PyTorch allocates them */
            ptl_tensor_impl_set_sizes(r, rank, r->sizes, st);
            continue;
        }
        if ((c = ptl_copy_as(r, f)) == NULL) {
            for (int j = 0; j < op->schema.nrets; j++) {
                ptl_ivalue_release(&s[j]);
            }
            return -1;
        }
        ptl_decref(r);
        s[i].u.t = c;
    }
    return 0;
}

int
ptl_kernel_run_as_input(PtlKernel k, const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    int in = 0;
    for (int i = 0; i < op->schema.nargs; i++) {
        if (strcmp(op->schema.args[i].name, "self") == 0 ||
            strcmp(op->schema.args[i].name, "input") == 0) {
            in = i;
            break;
        }
    }
    return ptl_kernel_run_as(k, op, ks, s, ptl_tensor_impl_suggest_memory_format(s[in].u.t));
}
