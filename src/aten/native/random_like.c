/* random_like.c -- the generator= overloads of rand_like, randn_like and randint_like.
 * Mirrors ATen/native/TensorFactories.cpp, where the *_like random factories are empty_like
 * followed by the in-place sampler.  They are composites here too: the draws are those of
 * uniform_, normal_ and random_.from with the same generator, which are the draws rand,
 * randn and randint make (random.c's fills), and the dtype errors are the samplers'.
 * randint_like.Tensor(_generator), whose high is a 0-dim CPU tensor, reads it (item<int64_t>)
 * and calls the overload with an int high. */
#include <complex.h>

#include "../../c10/error.h"
#include "native.h"

/* rand_like.generator(self, *, generator, dtype, layout, device, pin_memory, memory_format),
 * randn_like.generator(...), randint_like.generator(self, high, *, generator, ...) and
 * randint_like.low_generator_dtype(self, low, high, *, generator, ...): a tensor shaped like
 * self (empty_like's options), filled from generator (None: the default one) */
static int
random_like_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    int g = op->schema.nargs - 6;   /* the generator, then empty_like's five options */
    PtlIValue like[6] = {s[0], s[g + 1], s[g + 2], s[g + 3], s[g + 4], s[g + 5]};
    PtlIValue fill[4];
    PtlOpId sampler = PTL_OP_random__from;
    PtlTensorImpl *t, *res;

    if ((t = ptl_call_tensor(PTL_OP_empty_like, like)) == NULL) {
        return -1;
    }
    fill[0] = ptl_iv_tensor(t);
    fill[3] = s[g];
    if (op->id == PTL_OP_rand_like_generator || op->id == PTL_OP_randn_like_generator) {
        sampler = op->id == PTL_OP_rand_like_generator ? PTL_OP_uniform_ : PTL_OP_normal_;
        fill[1] = ptl_iv_double(0.0);
        fill[2] = ptl_iv_double(1.0);
    }
    else {
        int low = op->id == PTL_OP_randint_like_low_generator_dtype;
        fill[1] = low ? s[1] : ptl_iv_int(0);
        fill[2] = s[low ? 2 : 1];
    }
    res = ptl_call_tensor(sampler, fill);
    ptl_decref(t);
    if (res == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(res);
    return 0;
}

/* randint_like.Tensor(self, Tensor high, *, dtype, layout, device, pin_memory,
 * memory_format), randint_like.Tensor_generator(self, Tensor high, *, generator, ...): high
 * read as an int64 as item<int64_t>() reads it (a float truncated, a bool 0 or 1; a value out
 * of range, NaN, or a nonzero imaginary part raises c10's overflow error), then the overload
 * with an int high on the same stack */
static int
randint_like_tensor_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *high = s[1].u.t, *res;
    PtlIValue v;

    if (high->dim != 0 || high->device.type != PTL_DEVICE_CPU) {
        return ptl_error_set(PTL_ERR_RUNTIME, "high must be a scalar tensor and on CPU");
    }
    if (ptl_dtype_is_complex(high->dtype)) {
        ptl_complex128 z;
        ptl_convert_scalar((char *)&z, PTL_DTYPE_COMPLEX128, ptl_tensor_data(high),
                           high->dtype);
        v = ptl_iv_complex(creal(z), cimag(z));
    }
    else {
        v = ptl_dtype_is_floating(high->dtype) ? ptl_iv_double(ptl_item_double(high))
                                               : ptl_iv_int(ptl_item_int(high));
    }
    if (ptl_scalar_check_range(&v, PTL_DTYPE_INT64) < 0) {
        return -1;
    }
    s[1] = ptl_iv_int(ptl_iv_to_int(&v));
    res = ptl_call_tensor(op->id == PTL_OP_randint_like_Tensor ? PTL_OP_randint_like
                                                               : PTL_OP_randint_like_generator,
                          s);
    if (res == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(res);
    return 0;
}

static const PtlKernelReg random_like_kernels[] = {
    {PTL_OP_rand_like_generator, PTL_KEY_COMPOSITE_IMPLICIT, random_like_composite},
    {PTL_OP_randn_like_generator, PTL_KEY_COMPOSITE_IMPLICIT, random_like_composite},
    {PTL_OP_randint_like_generator, PTL_KEY_COMPOSITE_IMPLICIT, random_like_composite},
    {PTL_OP_randint_like_low_generator_dtype, PTL_KEY_COMPOSITE_IMPLICIT,
     random_like_composite},
    {PTL_OP_randint_like_Tensor, PTL_KEY_COMPOSITE_IMPLICIT, randint_like_tensor_composite},
    {PTL_OP_randint_like_Tensor_generator, PTL_KEY_COMPOSITE_IMPLICIT,
     randint_like_tensor_composite},
};
PTL_DEFINE_REGISTER(random_like_kernels)
