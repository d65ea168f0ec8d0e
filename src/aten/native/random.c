/* random.c -- random numbers: rand, randn, randint, randperm, the *_like family, normal,
 * bernoulli, poisson, binomial (its sampler: random_binomial.c), _standard_gamma,
 * _sample_dirichlet (their reparameterised gradients: random_grad.c), the in-place samplers
 * uniform_, normal_, random_, exponential_, geometric_, log_normal_, cauchy_, bernoulli_, and
 * native_dropout (+ its backward), whose mask is bernoulli_'s draw.  Mirrors
 * ATen/native/Distributions.cpp, ATen/native/DistributionTemplates.h, ATen/native/Dropout.cpp,
 * ATen/native/cpu/DistributionKernels.cpp and the random factories of
 * ATen/native/TensorFactories.cpp.
 *
 * Every sampler fills a contiguous buffer whose element i is a function of the generator's
 * (seed, offset) and i alone (Note [Philox streams] in generator.h), so the threads of
 * ptl_parallel_for may split the work any way (the per-element and vector loops:
 * random_fill.c).  A non-contiguous `self` is filled through a contiguous temporary, so the
 * values follow the row-major element order. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../c10/cpu_features.h"
#include "../../c10/error.h"
#include "../../c10/parallel.h"
#include "../../c10/tls.h"
#include "../distributions.h"
#include "../generator.h"
#include "../loops.h"
#include "../philox.h"
#include "device_random.h"
#include "device_reduce.h"
#include "device_compose.h"
#include "native.h"
#include "random_binomial.h"
#include "vec_math.h"

#define RANDOM_GRAIN (PTL_GRAIN_SIZE / 8)

int (*ptl_device_random_hook)(const PtlDistJob *j);

/* 1 when t is filled through the device hook: a CUDA tensor, or any tensor while the tests
 * emulate the CUDA kernels (device_reduce.h) */
static int
on_device(const PtlTensorImpl *t)
{
    return (t->device.type == PTL_DEVICE_CUDA || ptl_device_reduce_emulation) &&
           ptl_device_random_hook != NULL;
}

/* ---- arguments ---- */

static int
arg_index(const PtlOperator *op, const char *name)
{
    for (int i = 0; i < op->schema.nargs; i++) {
        if (strcmp(op->schema.args[i].name, name) == 0) {
            return i;
        }
    }
    return -1;
}

/* The generator argument of op, or NULL when none is given (generator_for then picks the
 * default generator of the output's device). */
PtlGenerator *
ptl_random_generator_arg(const PtlOperator *op, const PtlIValue *s)
{
    int i = arg_index(op, "generator");
    if (i >= 0 && s[i].tag == PTL_IV_GENERATOR) {
        return (PtlGenerator *)s[i].u.p;
    }
    return NULL;
}

/* The generator that the kernels of dev draw from: gen, or dev's default one when gen is
 * NULL (Note [CUDA generators] in generator.h); NULL with PyTorch's check_generator error
 * when gen belongs to another device type.  While the tests emulate the CUDA kernels a CPU
 * tensor stands for a CUDA one, so it takes a CUDA generator too. */
PtlGenerator *
ptl_random_generator_for(PtlGenerator *gen, PtlDevice dev)
{
    if (gen == NULL) {
        return ptl_generator_default_for(dev);
    }
    if (gen->device.type != dev.type &&
        !(ptl_device_reduce_emulation && gen->device.type == PTL_DEVICE_CUDA)) {
        ptl_error_set(PTL_ERR_RUNTIME,
                      "Expected a '%s' device type for generator but found '%s'",
                      ptl_device_type_name(dev.type), ptl_device_type_name(gen->device.type));
        return NULL;
    }
    return gen;
}

static PtlDtype
dtype_arg(const PtlOperator *op, const PtlIValue *s, PtlDtype dflt)
{
    int i = arg_index(op, "dtype");
    return (i >= 0 && s[i].tag == PTL_IV_DTYPE) ? s[i].u.dtype : dflt;
}

/* A new tensor shaped like self in dtype, laid out as empty_like lays it out for the
 * memory format mf (an IValue: None is preserve_format). */
static PtlTensorImpl *
new_like_as(PtlTensorImpl *self, PtlDtype dt, PtlIValue mf)
{
    PtlIValue a[6];
    a[0] = ptl_iv_tensor(self);
    a[1] = ptl_iv_dtype(dt);
    for (int i = 2; i < 5; i++) {
        a[i] = ptl_iv_none();
    }
    a[5] = mf;
    return ptl_call_tensor(PTL_OP_empty_like, a);
}

static PtlTensorImpl *
new_like(PtlTensorImpl *self, PtlDtype dt)
{
    return new_like_as(self, dt, ptl_iv_none());
}

/* The new tensor of a *_like factory op: its memory_format argument honoured */
static PtlTensorImpl *
new_like_arg(const PtlOperator *op, const PtlIValue *s, PtlDtype dt)
{
    return new_like_as(s[0].u.t, dt, s[arg_index(op, "memory_format")]);
}

/* The device named by op's `device` argument (the CPU when none): the CUDA key runs the
 * factories below for device="cuda". */
static PtlDevice
device_arg(const PtlOperator *op, const PtlIValue *s)
{
    if (op->device_arg >= 0 && s[op->device_arg].tag == PTL_IV_DEVICE) {
        return s[op->device_arg].u.device;
    }
    return ptl_device_cpu();
}

/* A new tensor of the int[] argument size's shape in dtype, on op's `device` (NULL on
 * error). */
static PtlTensorImpl *
new_sized(const PtlOperator *op, const PtlIValue *s, const PtlIValue *size, PtlDtype dt)
{
    PtlDevice dev = device_arg(op, s);
    if (size->u.il.n > PTL_MAX_DIMS) {
        ptl_error_set(PTL_ERR_RUNTIME, "pytorchlite supports at most %d dimensions", PTL_MAX_DIMS);
        return NULL;
    }
    return ptl_empty((int)size->u.il.n, size->u.il.data, dt, dev);
}

/* The end of a factory: the new tensor t on the stack once its fill returned rc = 0, else
 * t released. */
static int
return_new(PtlIValue *s, PtlTensorImpl *t, int rc)
{
    if (rc < 0) {
        ptl_decref(t);
        return -1;
    }
    s[0] = ptl_iv_tensor(t);
    return 0;
}

/* A new contiguous float64 copy of t expanded to sizes[0..dim) (expand's errors). */
static PtlTensorImpl *
expanded_f64(PtlTensorImpl *t, int dim, const int64_t *sizes)
{
    PtlIValue a[3];
    a[0] = ptl_iv_tensor(t);
    a[1] = ptl_iv_intlist(sizes, dim);
    a[2] = ptl_iv_bool(0);
    PtlTensorImpl *e = ptl_call_tensor(PTL_OP_expand, a);
    if (e == NULL) {
        return NULL;
    }
    PtlTensorImpl *c = ptl_cast(e, PTL_DTYPE_FLOAT64);
    ptl_decref(e);
    return c;
}

/* Random mantissa bits of a floating dtype, or of a complex dtype's parts (uniform_ and
 * random_ ranges). */
static int
mantissa_digits(PtlDtype dt)
{
    switch (ptl_dtype_is_complex(dt) ? ptl_dtype_to_real(dt) : dt) {
    case PTL_DTYPE_FLOAT16:
        return 11;
    case PTL_DTYPE_BFLOAT16:
        return 8;
    case PTL_DTYPE_FLOAT32:
        return 24;
    default:
        return 53;
    }
}


/* Fills self (borrowed) with job's distribution, drawing one counter an element from gen
 * (NULL: the default generator of self's device), and bumps self's version.  job->out,
 * job->n and job->dt are set here.  A CUDA self (and every self while the tests emulate the
 * CUDA kernels) is filled by the device hook, from the same stream: element i of the
 * row-major order gets the value the CPU gives it.  A complex self is filled as its real
 * view (real and imaginary parts interleaved, each drawn as a real number), as PyTorch
 * fills complex tensors through view_as_real.  0 or -1. */
static int
fill(PtlTensorImpl *self, PtlDistJob *job, PtlGenerator *gen)
{
    PtlTensorImpl *tmp = NULL;
    int complex = ptl_dtype_is_complex(self->dtype);
    int64_t n = complex ? 2 * self->numel : self->numel;
    int rc;
    if (self->device.type == PTL_DEVICE_META) {   /* nothing to draw into */
        ptl_tensor_bump_version(self);
        return 0;
    }
    if ((gen = ptl_random_generator_for(gen, self->device)) == NULL) {
        return -1;
    }
    if (self->numel == 0) {
        return 0;
    }
    if (!ptl_tensor_is_contiguous(self)) {
        tmp = ptl_empty(self->dim, self->sizes, self->dtype, self->device);
        if (tmp == NULL) {
            return -1;
        }
    }
    job->dt = complex ? ptl_dtype_to_real(self->dtype) : self->dtype;
    job->n = n;
    job->block_shift = ptl_dist_block_shift(job);
    job->out = ptl_tensor_data(tmp ? tmp : self);
    ptl_generator_reserve_launch(gen, (uint64_t)n, &job->seed, &job->offset, &job->seed_ptr,
                                 &job->offset_ptr);
    if (on_device(self)) {
        rc = ptl_device_random_hook(job);
    }
    else {
        void *token = ptl_nogil_begin();
        rc = ptl_parallel_for(0, n, RANDOM_GRAIN, ptl_random_fill_range, job);
        ptl_nogil_end(token);
    }
    if (rc == 0 && tmp != NULL) {
        rc = ptl_copy_into(self, tmp);
    }
    ptl_xdecref(tmp);
    if (rc == 0) {
        ptl_tensor_bump_version(self);
    }
    return rc;
}

static PtlDistJob
job_new(PtlDistKind kind, double a, double b)
{
    PtlDistJob j;
    memset(&j, 0, sizeof(j));
    j.kind = kind;
    j.a = a;
    j.b = b;
    return j;
}

/* Returns self (incref'd) on the stack after an in-place fill. */
static int
return_self(PtlIValue *s)
{
    ptl_incref(s[0].u.t);
    s[0] = ptl_iv_tensor(s[0].u.t);
    return 0;
}

/* ---- parameter checks (PyTorch's wording) ---- */

/* PyTorch's dtype error of a dispatch kernel: `kernel` names the CPU's, and the CUDA
 * kernel's name has "cuda" for its "cpu" (normal_kernel_cuda, bernoulli_tensor_cuda_p_)
 * when `on` (the tensor that picks the kernel; NULL: the CPU) is a CUDA tensor. */
static int
not_implemented(const char *kernel, PtlDtype dt, const PtlTensorImpl *on)
{
    const char *cpu = on != NULL && on->device.type == PTL_DEVICE_CUDA ? strstr(kernel, "cpu")
                                                                       : NULL;
    if (cpu != NULL) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"%.*scuda%s\" not implemented for '%s'",
                             (int)(cpu - kernel), kernel, cpu + 3, ptl_dtype_legacy_name(dt));
    }
    return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"%s\" not implemented for '%s'", kernel,
                         ptl_dtype_legacy_name(dt));
}

static int
check_floating(const char *kernel, PtlDtype dt, const PtlTensorImpl *on)
{
    return ptl_dtype_is_floating(dt) ? 0 : not_implemented(kernel, dt, on);
}

/* uniform and normal also fill complex tensors, part by part */
static int
check_floating_or_complex(const char *kernel, PtlDtype dt, const PtlTensorImpl *on)
{
    return ptl_dtype_is_complex(dt) ? 0 : check_floating(kernel, dt, on);
}

/* A complex normal(mean, std) has E|z - mean|^2 = std^2: each part gets std / sqrt(2). */
static double
part_std(PtlDtype dt, double std)
{
    return ptl_dtype_is_complex(dt) ? std * 0.70710678118654752440 : std;
}

static int
check_std(double std)
{
    if (!(std >= 0.0)) {
        return ptl_error_set(PTL_ERR_RUNTIME, "normal expects std >= 0.0, but found std %g",
                             std);
    }
    return 0;
}

/* Whether every p[i] (i < n) lies in [lo, hi] (a nan does not): a block of 4096 at a time
 * without a branch, so that the compare loop is a vector one */
static PTL_LOOP_CLONES int
doubles_in_range(const double *p, int64_t n, double lo, double hi)
{
    for (int64_t b = 0; b < n; b += 4096) {
        int64_t e = n - b < 4096 ? n : b + 4096;
        int bad = 0;
        for (int64_t i = b; i < e; i++) {
            bad |= !(p[i] >= lo) | !(p[i] <= hi);
        }
        if (bad) {
            return 0;
        }
    }
    return 1;
}

/* Every element of the contiguous float64 tensor t satisfies lo <= x <= hi; a tensor
 * off the CPU is read back first (a synchronisation).  1, 0, or -1 with an error set (the
 * callers' "> 0" then fails their PTL_CHECK, whose message loses to the first error). */
static int
all_in_range(PtlTensorImpl *t, double lo, double hi)
{
    PtlTensorImpl *host = NULL;
    if (t->device.type != PTL_DEVICE_CPU) {
        host = ptl_empty(t->dim, t->sizes, t->dtype, ptl_device_cpu());
        if (host == NULL || ptl_copy_into(host, t) < 0) {
            ptl_xdecref(host);
            return -1;
        }
    }
    int ok = doubles_in_range((const double *)ptl_tensor_data(host ? host : t), t->numel,
                              lo, hi);
    ptl_xdecref(host);
    return ok;
}

/* ---- random_ and randint: integer ranges ---- */

/* The inclusive range of an integer dtype. */
static void
int_bounds(PtlDtype dt, int64_t *lo, int64_t *hi)
{
    switch (dt) {
    case PTL_DTYPE_BOOL: *lo = 0; *hi = 1; break;
    case PTL_DTYPE_UINT8: *lo = 0; *hi = UINT8_MAX; break;
    case PTL_DTYPE_INT8: *lo = INT8_MIN; *hi = INT8_MAX; break;
    case PTL_DTYPE_INT16: *lo = INT16_MIN; *hi = INT16_MAX; break;
    case PTL_DTYPE_INT32: *lo = INT32_MIN; *hi = INT32_MAX; break;
    default: *lo = INT64_MIN; *hi = INT64_MAX; break;
    }
}

/* PyTorch's check_from_to_in_range: integer dtypes must hold from and to_inc; floating
 * dtypes only warn beyond +-2^digits, where not every integer is representable. */
static int
check_from_to_in_range(int64_t from, int64_t to_inc, PtlDtype dt)
{
    if (ptl_dtype_is_floating(dt)) {
        int d = mantissa_digits(dt);
        int64_t lim = (int64_t)1 << d;
        const char *what[2] = {"from", "to - 1"};
        int64_t v[2] = {from, to_inc};
        for (int k = 0; k < 2; k++) {
            if (v[k] < -lim || v[k] > lim) {
                ptl_warn("%s is out of bounds [-(2^%d), 2^%d]. Due to precision limitations %s "
                         "can support discrete uniform distribution only within this range. "
                         "This warning will become an error in version 1.7 release, please "
                         "fix the code in advance",
                         what[k], d, d, ptl_dtype_cpp_name(dt));
            }
        }
        return 0;
    }
    int64_t lo, hi;
    int_bounds(dt, &lo, &hi);
    if (from < lo || from > hi) {
        return ptl_error_set(PTL_ERR_RUNTIME, "from is out of bounds for %s",
                             ptl_dtype_cpp_name(dt));
    }
    if (to_inc < lo || to_inc > hi) {
        return ptl_error_set(PTL_ERR_RUNTIME, "to - 1 is out of bounds for %s",
                             ptl_dtype_cpp_name(dt));
    }
    return 0;
}

/* Fills self with integers uniform in [from, to) (random_.from with a `to`). */
static int
random_from_to(PtlTensorImpl *self, int64_t from, int64_t to, PtlGenerator *gen)
{
    if (from >= to) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "random_ expects 'from' to be less than 'to', but got from=%lld "
                             ">= to=%lld",
                             (long long)from, (long long)to);
    }
    if (check_from_to_in_range(from, to - 1, self->dtype) < 0) {
        return -1;
    }
    PtlDistJob j = job_new(PTL_DIST_RANDOM, 0, 0);
    j.from = from;
    j.range = (uint64_t)to - (uint64_t)from;
    return fill(self, &j, gen);
}

/* Fills self with integers uniform in [from, to_inc] (random_.from with to=None, random_). */
static int
random_from_inclusive(PtlTensorImpl *self, int64_t from, int64_t to_inc, PtlGenerator *gen)
{
    if (check_from_to_in_range(from, to_inc, self->dtype) < 0) {
        return -1;
    }
    if (from > to_inc) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "random_ expects 'from' casted to dtype to be less than or equal "
                             "to 'to_inc' casted to dtype, but got from=%lld > to_inc=%lld",
                             (long long)from, (long long)to_inc);
    }
    PtlDistJob j = job_new(PTL_DIST_RANDOM, 0, 0);
    j.from = from;
    j.range = (uint64_t)to_inc - (uint64_t)from + 1;   /* wraps to 0 for all 2^64 values */
    return fill(self, &j, gen);
}

/* The largest value random_ draws for dt: 2^digits for floating types, else the maximum. */
static int64_t
random_max(PtlDtype dt)
{
    int64_t lo, hi;
    if (ptl_dtype_is_floating(dt)) {
        return (int64_t)1 << mantissa_digits(dt);
    }
    int_bounds(dt, &lo, &hi);
    return hi;
}

/* random_.from(Tensor(a!) self, int from, int? to), random_.to(self, int to), random_(self):
 * integers uniform in [from, to), [0, to) or [0, max] */
static int
random__cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    PtlGenerator *gen = ptl_random_generator_arg(op, s);
    int rc;
    if (op->id == PTL_OP_random__from && s[2].tag != PTL_IV_NONE) {
        rc = random_from_to(self, s[1].u.i, s[2].u.i, gen);
    }
    else if (op->id == PTL_OP_random__from) {
        rc = random_from_inclusive(self, s[1].u.i, random_max(self->dtype), gen);
    }
    else if (op->id == PTL_OP_random__to) {
        rc = random_from_to(self, 0, s[1].u.i, gen);
    }
    else {
        rc = random_from_inclusive(self, 0, random_max(self->dtype), gen);
    }
    return rc < 0 ? -1 : return_self(s);
}

/* randint(high, size), randint.low(low, high, size) (+ .generator overloads): integers in
 * [low, high), int64 unless dtype says otherwise */
static int
randint_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    int low = op->id == PTL_OP_randint_low || op->id == PTL_OP_randint_low_generator;
    const PtlIValue *size = &s[low ? 2 : 1];
    PtlDtype dt = dtype_arg(op, s, PTL_DTYPE_INT64);
    PtlTensorImpl *t = new_sized(op, s, size, dt);
    if (t == NULL) {
        return -1;
    }
    return return_new(s, t, random_from_to(t, low ? s[0].u.i : 0, s[low ? 1 : 0].u.i,
                                           ptl_random_generator_arg(op, s)));
}

/* randint_like(self, high), randint_like.low_dtype(self, low, high): like randint, shaped
 * and typed like self */
static int
randint_like_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    int low = op->id == PTL_OP_randint_like_low_dtype;
    PtlTensorImpl *self = s[0].u.t;
    PtlTensorImpl *t = new_like_arg(op, s, dtype_arg(op, s, self->dtype));
    if (t == NULL) {
        return -1;
    }
    return return_new(s, t, random_from_to(t, low ? s[1].u.i : 0, s[low ? 2 : 1].u.i,
                                           ptl_random_generator_arg(op, s)));
}

/* ---- continuous factories ---- */

/* rand(size), randn(size) (+ .generator), normal.float_float(mean, std, size):
 * uniform [0, 1) / normal(mean, std) values of the default dtype unless dtype is given */
static int
rand_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    int uniform = op->id == PTL_OP_rand || op->id == PTL_OP_rand_generator;
    int normal = op->id == PTL_OP_normal_float_float;
    const PtlIValue *size = &s[normal ? 2 : 0];
    PtlDtype dt = dtype_arg(op, s, ptl_default_dtype());
    PtlDistJob j = uniform ? job_new(PTL_DIST_UNIFORM, 0.0, 1.0)
                           : job_new(PTL_DIST_NORMAL, normal ? s[0].u.d : 0.0,
                                     normal ? s[1].u.d : 1.0);
    if (normal && check_std(j.b) < 0) {
        return -1;
    }
    if (check_floating_or_complex(uniform ? "check_uniform_bounds" : "normal_kernel_cpu", dt,
                                  NULL) < 0) {
        return -1;
    }
    j.b = uniform ? j.b : part_std(dt, j.b);
    PtlTensorImpl *t = new_sized(op, s, size, dt);
    if (t == NULL) {
        return -1;
    }
    j.bits = mantissa_digits(dt);
    return return_new(s, t, fill(t, &j, ptl_random_generator_arg(op, s)));
}

/* rand_like(self), randn_like(self): shaped like self, self's dtype unless given */
static int
rand_like_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    int uniform = op->id == PTL_OP_rand_like;
    PtlDtype dt = dtype_arg(op, s, s[0].u.t->dtype);
    PtlDistJob j = job_new(uniform ? PTL_DIST_UNIFORM : PTL_DIST_NORMAL, 0.0, 1.0);
    if (check_floating_or_complex(uniform ? "check_uniform_bounds" : "normal_kernel_cpu", dt,
                                  s[0].u.t) < 0) {
        return -1;
    }
    j.b = uniform ? j.b : part_std(dt, j.b);
    PtlTensorImpl *t = new_like_arg(op, s, dt);
    if (t == NULL) {
        return -1;
    }
    j.bits = mantissa_digits(dt);
    return return_new(s, t, fill(t, &j, ptl_random_generator_arg(op, s)));
}

/* ---- in-place samplers with scalar parameters ---- */

/* uniform_(from, to), normal_(mean, std), exponential_(lambd), geometric_(p),
 * log_normal_(mean, std), cauchy_(median, sigma), bernoulli_.float(p) on self: checks
 * the parameters, then the dtype, in PyTorch's order */
static int
sampler__cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t;
    PtlDtype dt = self->dtype;
    double a = s[1].u.d, b = op->schema.nargs > 3 ? s[2].u.d : 0.0;
    const char *cpp = ptl_dtype_cpp_name(dt), *legacy = ptl_dtype_legacy_name(dt);
    int floating = ptl_dtype_is_floating(dt);
    PtlDistJob j;
    switch (op->id) {
    case PTL_OP_uniform_:
        if (check_floating_or_complex("check_uniform_bounds", dt, self) < 0) {
            return -1;
        }
        if (a > b) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "uniform_ expects to return a [from, to) range, but found "
                                 "from=%g > to=%g",
                                 a, b);
        }
        j = job_new(PTL_DIST_UNIFORM, a, b);
        j.bits = mantissa_digits(dt);
        break;
    case PTL_OP_normal_:
        if (check_std(b) < 0 || check_floating_or_complex("normal_kernel_cpu", dt, self) < 0) {
            return -1;
        }
        j = job_new(PTL_DIST_NORMAL, a, part_std(dt, b));
        break;
    case PTL_OP_exponential_:
        if (!(a > 0.0)) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "exponential_ expects lambda > 0.0, but found lambda=%g", a);
        }
        if (!floating) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "Exponential distribution is a continuous probability "
                                 "distribution. dtype must be a floating point but you "
                                 "specified %s",
                                 legacy);
        }
        j = job_new(PTL_DIST_EXPONENTIAL, a, 0.0);
        break;
    case PTL_OP_geometric_:
        if (!(a > 0.0 && a < 1.0)) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "geometric_ expects p to be in (0, 1), but got p=%g", a);
        }
        if (dt == PTL_DTYPE_BOOL) {
            return not_implemented("geometric_cpu", dt, self);
        }
        j = job_new(PTL_DIST_GEOMETRIC, a, 0.0);
        break;
    case PTL_OP_log_normal_:
        if (!(b > 0.0)) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "log_normal_ expects std > 0.0, but found std=%g", b);
        }
        if (check_floating("log_normal_cpu", dt, self) < 0) {
            return -1;
        }
        j = job_new(PTL_DIST_LOG_NORMAL, a, b);
        break;
    case PTL_OP_cauchy_:
        if (!(b > 0.0)) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "cauchy_ expects sigma > 0.0, but found sigma=%g", b);
        }
        if (!floating) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "Cauchy distribution is a continuous probability "
                                 "distribution. dtype must be a floating point but you "
                                 "specified %s",
                                 cpp);
        }
        j = job_new(PTL_DIST_CAUCHY, a, b);
        break;
    default:   /* bernoulli_.float */
        if (!(a >= 0.0 && a <= 1.0)) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "bernoulli_ expects p to be in [0, 1], but got p=%g", a);
        }
        j = job_new(PTL_DIST_BERNOULLI, a, 0.0);
        break;
    }
    if (fill(self, &j, ptl_random_generator_arg(op, s)) < 0) {
        return -1;
    }
    return return_self(s);
}

/* ---- samplers with tensor parameters ---- */

static const char p_range_msg[] =
    "Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error message be "
    "improved?  If so, please report an enhancement request to PyTorch.)";

/* bernoulli_.Tensor(Tensor(a!) self, Tensor p): self[i] = 1 with probability p[i] (p is
 * expanded to self's shape) */
static int
bernoulli_tensor(PtlTensorImpl *self, PtlTensorImpl *p, PtlGenerator *gen)
{
    PtlTensorImpl *pf = NULL;
    if (check_floating("bernoulli_tensor_cpu_p_", p->dtype, self) < 0) {
        return -1;
    }
    if ((pf = expanded_f64(p, self->dim, self->sizes)) == NULL) {
        return -1;
    }
    PTL_CHECK(all_in_range(pf, 0.0, 1.0) > 0, PTL_ERR_RUNTIME, "%s", p_range_msg);
    PtlDistJob j = job_new(PTL_DIST_BERNOULLI, 0.0, 0.0);
    j.pa = (const double *)ptl_tensor_data(pf);
    if (fill(self, &j, gen) < 0) {
        goto error;
    }
    ptl_decref(pf);
    return 0;
error:
    ptl_xdecref(pf);
    return -1;
}

static int
bernoulli__tensor_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    if (bernoulli_tensor(s[0].u.t, s[1].u.t, ptl_random_generator_arg(op, s)) < 0) {
        return -1;
    }
    return return_self(s);
}

/* bernoulli(Tensor self): out[i] = 1 with probability self[i]; bernoulli.p(self, float p):
 * shaped and typed like self, 1 with probability p */
static int
bernoulli_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *t = NULL;
    PtlGenerator *gen = ptl_random_generator_arg(op, s);
    if (op->id == PTL_OP_bernoulli &&
        check_floating("bernoulli_tensor_cpu_p_", self->dtype, self) < 0) {
        return -1;
    }
    if (op->id == PTL_OP_bernoulli_p && !(s[1].u.d >= 0.0 && s[1].u.d <= 1.0)) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "bernoulli_ expects p to be in [0, 1], but got p=%g", s[1].u.d);
    }
    if ((t = new_like(self, self->dtype)) == NULL) {
        return -1;
    }
    if (op->id == PTL_OP_bernoulli) {
        if (bernoulli_tensor(t, self, gen) < 0) {
            goto error;
        }
    }
    else {
        PtlDistJob j = job_new(PTL_DIST_BERNOULLI, s[1].u.d, 0.0);
        if (fill(t, &j, gen) < 0) {
            goto error;
        }
    }
    s[0] = ptl_iv_tensor(t);
    return 0;
error:
    ptl_decref(t);
    return -1;
}

/* normal.Tensor_Tensor(mean, std), normal.Tensor_float(mean, float std),
 * normal.float_Tensor(float mean, std): element-wise normal(mean[i], std[i]) of the
 * broadcast shape, in mean's dtype (std's for float_Tensor) */
static int
normal_tensor_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    int tmean = op->id != PTL_OP_normal_float_Tensor;
    int tstd = op->id != PTL_OP_normal_Tensor_float;
    PtlTensorImpl *mean = tmean ? s[0].u.t : NULL, *std = tstd ? s[1].u.t : NULL;
    PtlTensorImpl *pm = NULL, *ps = NULL, *t = NULL;
    PtlDtype dt = tmean ? mean->dtype : std->dtype;
    int64_t sizes[PTL_MAX_DIMS];
    int dim;
    PtlDistJob j = job_new(PTL_DIST_NORMAL, tmean ? 0.0 : s[0].u.d, tstd ? 0.0 : s[1].u.d);
    if (!tstd && check_std(j.b) < 0) {
        return -1;
    }
    if (check_floating("normal_kernel_cpu", dt, tmean ? mean : std) < 0) {
        return -1;
    }
    if (tmean && tstd && !ptl_device_equal(mean->device, std->device)) {
        PtlTensorImpl *dev = mean->device.type == PTL_DEVICE_CPU ? std : mean;
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Expected all tensors to be on the same device, but found at least "
                             "two devices, %s:%d and cpu!",
                             ptl_device_type_name(dev->device.type), dev->device.index);
    }
    if (tmean && tstd) {
        if (ptl_broadcast_shapes(mean->dim, mean->sizes, std->dim, std->sizes, &dim, sizes) < 0) {
            return -1;
        }
    }
    else {
        PtlTensorImpl *only = tmean ? mean : std;
        dim = only->dim;
        memcpy(sizes, only->sizes, sizeof(int64_t) * (size_t)dim);
    }
    if (tmean && (pm = expanded_f64(mean, dim, sizes)) == NULL) {
        goto error;
    }
    if (tstd) {
        if ((ps = expanded_f64(std, dim, sizes)) == NULL) {
            goto error;
        }
        PTL_CHECK(all_in_range(ps, 0.0, INFINITY) > 0, PTL_ERR_RUNTIME,
                  "normal expects all elements of std >= 0.0");
    }
    if ((t = ptl_empty(dim, sizes, dt, (tmean ? mean : std)->device)) == NULL) {
        goto error;
    }
    j.pa = pm ? (const double *)ptl_tensor_data(pm) : NULL;
    j.pb = ps ? (const double *)ptl_tensor_data(ps) : NULL;
    if (fill(t, &j, ptl_random_generator_arg(op, s)) < 0) {
        goto error;
    }
    ptl_xdecref(pm);
    ptl_xdecref(ps);
    s[0] = ptl_iv_tensor(t);
    return 0;
error:
    ptl_xdecref(pm);
    ptl_xdecref(ps);
    ptl_xdecref(t);
    return -1;
}

/* The same three with a complex argument (the Complex key), as PyTorch's normal_out_impl: a
 * complex mean takes a standard complex draw (normal_'s complex fill, each part of variance
 * 1/2) times std plus mean, in mean's dtype and the broadcast shape; a complex std refuses. */
static int
normal_tensor_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    int tstd = op->id != PTL_OP_normal_Tensor_float;
    PtlTensorImpl *mean = s[0].tag == PTL_IV_TENSOR ? s[0].u.t : NULL;
    PtlTensorImpl *std = tstd ? s[1].u.t : NULL, *ps = NULL, *t = NULL, *r = NULL;
    int64_t sizes[PTL_MAX_DIMS];
    int dim = 0;
    if ((std != NULL && ptl_dtype_is_complex(std->dtype)) || mean == NULL) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "normal expects standard deviation to be non-complex");
    }
    if (!tstd && check_std(s[1].u.d) < 0) {
        return -1;
    }
    if (std != NULL) {
        if (ptl_broadcast_shapes(mean->dim, mean->sizes, std->dim, std->sizes, &dim, sizes) < 0 ||
            (ps = expanded_f64(std, dim, sizes)) == NULL) {
            return -1;
        }
        int ok = all_in_range(ps, 0.0, INFINITY) > 0;
        ptl_decref(ps);
        if (!ok) {
            return ptl_error_set(PTL_ERR_RUNTIME, "normal expects all elements of std >= 0.0");
        }
    }
    else {
        dim = mean->dim;
        memcpy(sizes, mean->sizes, sizeof(int64_t) * (size_t)dim);
    }
    PtlLocalState *tls = ptl_tls();
    const PtlDispatchKeySet excluded = tls->excluded;
    tls->excluded |= PTL_KEYSET(PTL_KEY_AUTOGRAD);
    if ((t = ptl_empty(dim, sizes, mean->dtype, mean->device)) != NULL) {
        PtlIValue a[4] = {ptl_iv_tensor(t), ptl_iv_double(0.0),
                          ptl_iv_double(tstd ? 1.0 : s[1].u.d), s[2]};
        r = ptl_call_tensor(PTL_OP_normal_, a);
    }
    ptl_xdecref(r);
    if (r != NULL && std != NULL) {
        PtlIValue m[2] = {ptl_iv_tensor(t), ptl_iv_tensor(std)};
        r = ptl_call_tensor(PTL_OP_mul__Tensor, m);
        ptl_xdecref(r);
    }
    if (r != NULL) {
        PtlIValue a[3] = {ptl_iv_tensor(t), ptl_iv_tensor(mean), ptl_iv_int(1)};
        r = ptl_call_tensor(PTL_OP_add__Tensor, a);
        ptl_xdecref(r);
    }
    tls->excluded = excluded;
    if (r == NULL) {
        ptl_xdecref(t);
        return -1;
    }
    s[0] = ptl_iv_tensor(t);
    return 0;
}

/* ---- dropout ---- */

/* a * b through the dispatcher (b a tensor, or the wrapped number bd when b is NULL), into
 * a when inplace: the device's mul kernel for a CUDA a.  Not recorded by autograd: the
 * calling op's node covers it.  New ref (a itself when inplace) or NULL. */
static PtlTensorImpl *
dispatch_mul(PtlTensorImpl *a, PtlTensorImpl *b, double bd, int inplace)
{
    PtlTensorImpl *w = b != NULL ? NULL : ptl_wrapped_double(bd), *r;
    if (b == NULL && w == NULL) {
        return NULL;
    }
    PtlLocalState *tls = ptl_tls();
    const PtlDispatchKeySet excluded = tls->excluded;
    PtlIValue m[2] = {ptl_iv_tensor(a), ptl_iv_tensor(b != NULL ? b : w)};
    tls->excluded |= PTL_KEYSET(PTL_KEY_AUTOGRAD);
    r = ptl_call_tensor(inplace ? PTL_OP_mul__Tensor : PTL_OP_mul_Tensor, m);
    tls->excluded = excluded;
    ptl_xdecref(w);
    return r;
}

/* native_dropout(Tensor input, float p, bool? train) -> (Tensor, Tensor): in training (train
 * true or None) a bool mask drawn as bernoulli_(1 - p) draws it (so CPU and CUDA dropout
 * agree for one seed) and input * mask * scale, scale = 1 / (1 - p) (0 when p is 1), as
 * ATen/native/Dropout.cpp computes it; otherwise a copy of input and a mask of ones.  An
 * empty input comes back itself with an empty mask of its dtype, as in PyTorch.  Past the
 * mask's fill everything is dispatcher ops, so the CUDA key runs this kernel too. */
static int
native_dropout_kernel(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *input = s[0].u.t, *mask = NULL, *kept = NULL, *out = NULL;
    double p1m = 1.0 - s[1].u.d;
    int train = s[2].tag == PTL_IV_NONE || s[2].u.b;
    (void)ks;
    if (input->numel == 0) {
        ptl_incref(input);
        out = input;
        mask = new_like(input, input->dtype);
    }
    else if (!train) {
        PtlIValue a[6] = {ptl_iv_tensor(input), ptl_iv_dtype(PTL_DTYPE_BOOL), ptl_iv_none(),
                          ptl_iv_none(), ptl_iv_none(), ptl_iv_none()};
        if ((mask = ptl_call_tensor(PTL_OP_ones_like, a)) == NULL) {
            goto error;
        }
        if ((out = new_like(input, input->dtype)) != NULL && ptl_copy_into(out, input) < 0) {
            goto error;
        }
    }
    else {
        PTL_CHECK(p1m >= 0.0 && p1m <= 1.0, PTL_ERR_RUNTIME,
                  "bernoulli_ expects p to be in [0, 1], but got p=%g", p1m);
        PtlDistJob j = job_new(PTL_DIST_BERNOULLI, p1m, 0.0);
        if ((mask = new_like(input, PTL_DTYPE_BOOL)) == NULL ||
            fill(mask, &j, ptl_random_generator_arg(op, s)) < 0 ||
            (kept = dispatch_mul(input, mask, 0.0, 0)) == NULL) {
            goto error;
        }
        /* in place, as PyTorch: an integer input cannot take the float scale */
        out = dispatch_mul(kept, NULL, p1m == 0.0 ? 0.0 : 1.0 / p1m, 1);
        ptl_decref(kept);
    }
    if (out == NULL || mask == NULL) {
        goto error;
    }
    s[0] = ptl_iv_tensor(out);
    s[1] = ptl_iv_tensor(mask);
    return 0;
error:
    ptl_xdecref(mask);
    ptl_xdecref(out);
    return -1;
}

/* native_dropout_backward(Tensor grad_output, Tensor mask, float scale): grad_output * mask
 * * scale (a bool or a float mask), in dispatcher ops. */
static int
native_dropout_backward_kernel(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *kept, *out;
    (void)op;
    (void)ks;
    if ((kept = dispatch_mul(s[0].u.t, s[1].u.t, 0.0, 0)) == NULL) {
        return -1;
    }
    out = dispatch_mul(kept, NULL, s[2].u.d, 0);
    ptl_decref(kept);
    if (out == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(out);
    return 0;
}

/* poisson(Tensor self): out[i] ~ Poisson(self[i]), self's dtype */
static int
poisson_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *rate = NULL, *t = NULL;
    if (check_floating("poisson_cpu", self->dtype, self) < 0) {
        return -1;
    }
    if ((rate = ptl_cast(self, PTL_DTYPE_FLOAT64)) == NULL) {
        return -1;
    }
    PTL_CHECK(all_in_range(rate, 0.0, INFINITY) > 0, PTL_ERR_RUNTIME,
              "invalid Poisson rate, expected rate to be non-negative");
    if ((t = ptl_empty(self->dim, self->sizes, self->dtype, self->device)) == NULL) {
        goto error;
    }
    PtlDistJob j = job_new(PTL_DIST_POISSON, 0.0, 0.0);
    j.pa = (const double *)ptl_tensor_data(rate);
    if (fill(t, &j, ptl_random_generator_arg(op, s)) < 0) {
        goto error;
    }
    ptl_decref(rate);
    s[0] = ptl_iv_tensor(t);
    return 0;
error:
    ptl_xdecref(rate);
    ptl_xdecref(t);
    return -1;
}

/* ---- binomial (its sampler: random_binomial.c) ---- */

/* binomial(Tensor count, Tensor prob, Generator? generator=None): count and prob
 * broadcast, float32 or float64 alike; out[i] ~ Binomial(count[i], prob[i]) (Note [Binomial
 * sampling] in random_binomial.c) */
static int
binomial_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *count = s[0].u.t, *prob = s[1].u.t, *in[2] = {NULL, NULL}, *out = NULL;
    int64_t shape[PTL_MAX_DIMS];
    int dim;
    PtlGenerator *gen;
    const char *names[2] = {"count", "prob"};
    for (int k = 0; k < 2; k++) {
        PtlDtype dt = (k == 0 ? count : prob)->dtype;
        if (!ptl_dtype_is_floating(dt)) {
            return ptl_error_set(PTL_ERR_VALUE,
                                 "binomial only supports floating-point dtypes for %s, got: %s",
                                 names[k], ptl_dtype_legacy_name(dt));
        }
    }
    if (prob->dtype != count->dtype) {
        return ptl_error_set(PTL_ERR_RUNTIME, "Found dtype %s but expected %s",
                             ptl_dtype_legacy_name(prob->dtype),
                             ptl_dtype_legacy_name(count->dtype));
    }
    if (count->dtype != PTL_DTYPE_FLOAT32 && count->dtype != PTL_DTYPE_FLOAT64) {
        return not_implemented("binomial_cpu", count->dtype, count);
    }
    if (ptl_broadcast_shapes(count->dim, count->sizes, prob->dim, prob->sizes, &dim, shape) < 0 ||
        (gen = ptl_random_generator_for(ptl_random_generator_arg(op, s), count->device)) == NULL) {
        return -1;
    }
    for (int k = 0; k < 2; k++) {
        PtlIValue a[3] = {ptl_iv_tensor(k == 0 ? count : prob), ptl_iv_intlist(shape, dim),
                          ptl_iv_bool(0)};
        PtlTensorImpl *e = ptl_call_tensor(PTL_OP_expand, a), *c = e ? ptl_contiguous(e) : NULL;
        in[k] = c != NULL ? ptl_cast(c, PTL_DTYPE_FLOAT64) : NULL;
        ptl_xdecref(e);
        ptl_xdecref(c);
        if (in[k] == NULL) {
            goto error;
        }
    }
    if ((out = ptl_empty(dim, shape, count->dtype, count->device)) == NULL) {
        goto error;
    }
    if (out->numel > 0) {
        PtlBinomialJob j = {(const double *)ptl_tensor_data(in[0]),
                         (const double *)ptl_tensor_data(in[1]), ptl_tensor_data(out),
                         count->dtype, 0, 0};
        if (ptl_generator_reserve(gen, (uint64_t)out->numel, &j.seed, &j.offset) < 0) {
            goto error;
        }
        void *token = ptl_nogil_begin();
        int rc = ptl_parallel_for(0, out->numel, RANDOM_GRAIN, ptl_binomial_range, &j);
        ptl_nogil_end(token);
        if (rc < 0) {
            goto error;
        }
    }
    ptl_decref(in[0]);
    ptl_decref(in[1]);
    s[0] = ptl_iv_tensor(out);
    return 0;
error:
    ptl_xdecref(in[0]);
    ptl_xdecref(in[1]);
    ptl_xdecref(out);
    return -1;
}

/* Gamma(self[i], 1) draws in self's dtype, floored at the dtype's smallest normal number
 * as in PyTorch (so that log of a sample stays finite), from the op's generator argument.
 * New ref or NULL. */
static PtlTensorImpl *
gamma_draws(const PtlOperator *op, PtlIValue *s)
{
    PtlTensorImpl *self = s[0].u.t, *alpha = NULL, *t = NULL;
    double tiny;
    switch (self->dtype) {
    case PTL_DTYPE_FLOAT16: tiny = 6.103515625e-05; break;
    case PTL_DTYPE_BFLOAT16:
    case PTL_DTYPE_FLOAT32: tiny = FLT_MIN; break;
    default: tiny = DBL_MIN; break;
    }
    if ((alpha = ptl_cast(self, PTL_DTYPE_FLOAT64)) == NULL) {
        return NULL;
    }
    if ((t = ptl_empty(self->dim, self->sizes, self->dtype, self->device)) == NULL) {
        goto error;
    }
    PtlDistJob j = job_new(PTL_DIST_GAMMA, 0.0, tiny);
    j.pa = (const double *)ptl_tensor_data(alpha);
    if (fill(t, &j, ptl_random_generator_arg(op, s)) < 0) {
        goto error;
    }
    ptl_decref(alpha);
    return t;
error:
    ptl_xdecref(alpha);
    ptl_xdecref(t);
    return NULL;
}

/* _standard_gamma(Tensor self, Generator? generator=None): out[i] ~ Gamma(self[i], 1) */
static int
standard_gamma_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *t;
    if (check_floating("gamma_cpu", s[0].u.t->dtype, s[0].u.t) < 0 ||
        (t = gamma_draws(op, s)) == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(t);
    return 0;
}

/* _sample_dirichlet(Tensor self, Generator? generator=None): gamma draws (as
 * _standard_gamma's) divided by their sum over the last dim, so that each row of the
 * output [..., k] lies on the simplex (a 0-dim self is one row of one).  float32 and
 * float64, as in PyTorch; the sums are taken in double. */
static int
sample_dirichlet_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *t;
    int f8 = self->dtype == PTL_DTYPE_FLOAT64;
    if (!f8 && self->dtype != PTL_DTYPE_FLOAT32) {
        return not_implemented("dirichlet", self->dtype, NULL);
    }
    if ((t = gamma_draws(op, s)) == NULL) {
        return -1;
    }
    if (ptl_on_device_path(self)) {
        /* on the device: the draws divided by their float64 sum over the last dim (the
         * sum kernel's order, not the loop's), rounded to self's dtype */
        int64_t last = -1;
        PtlIValue sa[4] = {ptl_iv_tensor(t), ptl_iv_intlist(&last, self->dim > 0),
                           ptl_iv_bool(1), ptl_iv_dtype(PTL_DTYPE_FLOAT64)};
        PtlTensorImpl *sum = ptl_call_tensor(PTL_OP_sum_dim_IntList, sa), *q = NULL, *r = NULL;
        if (sum != NULL) {
            PtlIValue da[2] = {ptl_iv_tensor(t), ptl_iv_tensor(sum)};
            if ((q = ptl_call_tensor(PTL_OP_div_Tensor, da)) != NULL) {
                r = ptl_cast(q, self->dtype);
            }
        }
        ptl_xdecref(sum);
        ptl_xdecref(q);
        ptl_decref(t);
        if (r == NULL) {
            return -1;
        }
        s[0] = ptl_iv_tensor(r);
        return 0;
    }
    int64_t k = self->dim ? self->sizes[self->dim - 1] : 1, rows = k ? t->numel / k : 0;
    double *d8 = (double *)ptl_tensor_data(t);
    float *d4 = (float *)ptl_tensor_data(t);
    for (int64_t r = 0; r < rows; r++) {
        double sum = 0.0;
        for (int64_t i = r * k; i < (r + 1) * k; i++) {
            sum += f8 ? d8[i] : (double)d4[i];
        }
        for (int64_t i = r * k; i < (r + 1) * k; i++) {
            if (f8) {
                d8[i] /= sum;
            }
            else {
                d4[i] = (float)((double)d4[i] / sum);
            }
        }
    }
    s[0] = ptl_iv_tensor(t);
    return 0;
}

/* ---- randperm ---- */

#define RANDPERM_CHUNK 256

#ifdef PTL_HAVE_AVX2_KERNELS
/* Note [Remainders without division]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * randperm's swap positions x mod (i + 1) took one 64-bit division each (1e5 of them: 217 us
 * of a 640 us randperm, 0.64x PyTorch's time).  For moduli 2 <= m <= 2^32, mod_u32 reduces
 * each 32-bit half through the double reciprocal inv of m: the product is within 2^-19 of
 * the true quotient, which is below 2^32 (signed conversions: the unsigned ones branch), so
 * the truncated quotient is off by at most one and the remainder, computed exactly in
 * wrapping uint64, lies in [-m, 2m) before one correction: x % m's value.  AVX-512 DQ has the
 * int64 <-> double conversions and the 64-bit multiply, so gcc runs it 8 lanes a vector
 * (103 us for the 1e5); with AVX2 only it stays scalar and loses to the division. */
static inline uint64_t
mod_u32(uint64_t x, uint64_t m, double inv)
{
    int64_t hi = (int64_t)(x >> 32), lo = (int64_t)(x & 0xffffffffu);
    uint64_t r = (uint64_t)hi - (uint64_t)(int64_t)((double)hi * inv) * m;
    r = (int64_t)r < 0 ? r + m : r >= m ? r - m : r;
    uint64_t v = r << 32 | (uint64_t)lo;
    r = v - (uint64_t)(int64_t)(((double)(int64_t)r * 4294967296.0 + (double)lo) * inv) * m;
    return (int64_t)r < 0 ? r + m : r >= m ? r - m : r;
}

/* x[k] = x[k] mod (first + k + 1) for k < n, every modulus at most 2^32 */
PTL_AVX512 static void
mod_run_avx512(uint64_t *x, int64_t first, int64_t n)
{
    for (int64_t k = 0; k < n; k++) {
        uint64_t m = (uint64_t)(first + k) + 1;
        x[k] = mod_u32(x[k], m, 1.0 / (double)(int64_t)m);
    }
}
#endif

/* randperm(n) (+ .generator): a random permutation of 0..n-1 by Fisher-Yates, where swap i
 * (from n-1 down to 1) takes counter i; int64 unless dtype says otherwise.  device="cuda"
 * draws from the device's generator and shuffles on the host (Note [CUDA randperm and
 * multinomial]). */
static int
randperm_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    static const char *const c_names[PTL_DTYPE_COUNT] = {   /* ORDER DTYPE */
        [PTL_DTYPE_UINT8] = "uint8_t", [PTL_DTYPE_INT8] = "int8_t",
        [PTL_DTYPE_INT16] = "int16_t", [PTL_DTYPE_INT32] = "int",
    };
    int64_t n = s[0].u.i, lo, hi;
    PtlDtype dt = dtype_arg(op, s, PTL_DTYPE_INT64);
    PtlDevice dev = device_arg(op, s);
    PtlTensorImpl *t = NULL, *dst = NULL;
    PtlGenerator *gen;
    uint64_t seed, offset;
    if ((t = ptl_empty(1, &n, PTL_DTYPE_INT64, ptl_device_cpu())) == NULL) {
        return -1;
    }
    if (dt == PTL_DTYPE_BOOL) {
        not_implemented("randperm", dt, NULL);
        goto error;
    }
    int_bounds(dt, &lo, &hi);
    PTL_CHECK(c_names[dt] == NULL || n - 1 <= hi, PTL_ERR_RUNTIME,
              "value cannot be converted to type %s without overflow", c_names[dt]);
    PTL_CHECK(dt != PTL_DTYPE_FLOAT16 || n <= 2049, PTL_ERR_RUNTIME,
              "n cannot be greater than 2049 for Half type.");
    if (dev.type == PTL_DEVICE_CUDA && (dst = ptl_empty(1, &n, dt, dev)) == NULL) {
        goto error;
    }
    if ((gen = ptl_random_generator_for(ptl_random_generator_arg(op, s), dst ? dst->device : t->device)) == NULL) {
        goto error;
    }
    int64_t *p = (int64_t *)ptl_tensor_data(t);
    /* the count in a local: n's address went to ptl_empty, so a loop bound by n reloaded it
     * after every store to p (which might alias it) and stayed scalar: 37% of randperm_cpu's
     * own samples at n = 100000 (the draws and remainders apart), 15% as a vector loop */
    const int64_t count = n;
    for (int64_t i = 0; i < count; i++) {
        p[i] = i;
    }
    if (ptl_generator_reserve(gen, (uint64_t)n, &seed, &offset) < 0) {
        goto error;
    }
    /* the swaps in chunks: the chunk's draws in one vector pass, its swap positions in a
     * second (divisions that do not wait on the swaps), then the swaps */
    for (int64_t top = n - 1; top > 0; top -= RANDPERM_CHUNK) {
        int64_t lo = top - RANDPERM_CHUNK + 1 > 1 ? top - RANDPERM_CHUNK + 1 : 1;
        uint64_t x[RANDPERM_CHUNK];
        ptl_philox_words64(seed, offset, lo, top - lo + 1, x);
        int vec = 0;
#ifdef PTL_HAVE_AVX2_KERNELS
        if ((vec = ptl_cpu_capability() >= PTL_CPU_AVX512 && top < (int64_t)1 << 32)) {
            mod_run_avx512(x, lo, top - lo + 1);
        }
#endif
        for (int64_t i = lo; i <= top && !vec; i++) {
            x[i - lo] %= (uint64_t)(i + 1);
        }
        for (int64_t i = top; i >= lo; i--) {
            int64_t k = (int64_t)x[i - lo], tmp = p[i];
            p[i] = p[k];
            p[k] = tmp;
        }
    }
    if (dst != NULL) {
        if (ptl_copy_into(dst, t) < 0) {
            goto error;
        }
        ptl_decref(t);
        t = dst;
    }
    else if (dt != PTL_DTYPE_INT64) {
        PtlTensorImpl *c = ptl_cast(t, dt);
        ptl_decref(t);
        if (c == NULL) {
            return -1;
        }
        t = c;
    }
    s[0] = ptl_iv_tensor(t);
    return 0;
error:
    ptl_decref(t);
    ptl_xdecref(dst);
    return -1;
}

static const PtlKernelReg random_cpu[] = {
    {PTL_OP_rand_generator, PTL_KEY_CPU, rand_cpu},
    {PTL_OP_rand, PTL_KEY_CPU, rand_cpu},
    {PTL_OP_randn_generator, PTL_KEY_CPU, rand_cpu},
    {PTL_OP_randn, PTL_KEY_CPU, rand_cpu},
    {PTL_OP_normal_float_float, PTL_KEY_CPU, rand_cpu},
    {PTL_OP_randint_low_generator, PTL_KEY_CPU, randint_cpu},
    {PTL_OP_randint_low, PTL_KEY_CPU, randint_cpu},
    {PTL_OP_randint_generator, PTL_KEY_CPU, randint_cpu},
    {PTL_OP_randint, PTL_KEY_CPU, randint_cpu},
    {PTL_OP_randperm_generator, PTL_KEY_CPU, randperm_cpu},
    {PTL_OP_randperm, PTL_KEY_CPU, randperm_cpu},
    {PTL_OP_rand_like, PTL_KEY_CPU, rand_like_cpu},
    {PTL_OP_randn_like, PTL_KEY_CPU, rand_like_cpu},
    {PTL_OP_randint_like_low_dtype, PTL_KEY_CPU, randint_like_cpu},
    {PTL_OP_randint_like, PTL_KEY_CPU, randint_like_cpu},
    {PTL_OP_normal_Tensor_Tensor, PTL_KEY_CPU, normal_tensor_cpu},
    {PTL_OP_normal_Tensor_float, PTL_KEY_CPU, normal_tensor_cpu},
    {PTL_OP_normal_float_Tensor, PTL_KEY_CPU, normal_tensor_cpu},
    {PTL_OP_normal_Tensor_Tensor, PTL_KEY_COMPLEX, normal_tensor_complex},
    {PTL_OP_normal_Tensor_float, PTL_KEY_COMPLEX, normal_tensor_complex},
    {PTL_OP_normal_float_Tensor, PTL_KEY_COMPLEX, normal_tensor_complex},
    {PTL_OP_bernoulli, PTL_KEY_CPU, bernoulli_cpu},
    {PTL_OP_bernoulli_p, PTL_KEY_CPU, bernoulli_cpu},
    {PTL_OP_poisson, PTL_KEY_CPU, poisson_cpu},
    {PTL_OP_binomial, PTL_KEY_CPU, binomial_cpu},
    {PTL_OP__standard_gamma, PTL_KEY_CPU, standard_gamma_cpu},
    {PTL_OP__sample_dirichlet, PTL_KEY_CPU, sample_dirichlet_cpu},
    {PTL_OP_uniform_, PTL_KEY_CPU, sampler__cpu},
    {PTL_OP_normal_, PTL_KEY_CPU, sampler__cpu},
    {PTL_OP_random__from, PTL_KEY_CPU, random__cpu},
    {PTL_OP_random__to, PTL_KEY_CPU, random__cpu},
    {PTL_OP_random_, PTL_KEY_CPU, random__cpu},
    {PTL_OP_exponential_, PTL_KEY_CPU, sampler__cpu},
    {PTL_OP_geometric_, PTL_KEY_CPU, sampler__cpu},
    {PTL_OP_log_normal_, PTL_KEY_CPU, sampler__cpu},
    {PTL_OP_cauchy_, PTL_KEY_CPU, sampler__cpu},
    {PTL_OP_bernoulli__Tensor, PTL_KEY_CPU, bernoulli__tensor_cpu},
    {PTL_OP_bernoulli__float, PTL_KEY_CPU, sampler__cpu},
    {PTL_OP_native_dropout, PTL_KEY_CPU, native_dropout_kernel},
    {PTL_OP_native_dropout_backward, PTL_KEY_CPU, native_dropout_backward_kernel},
};
PTL_DEFINE_REGISTER(random_cpu)
