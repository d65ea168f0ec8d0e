/* random_like.c -- the generator= overloads of rand_like, randn_like and randint_like.
 * Mirrors ATen/native/TensorFactories.cpp, where the *_like random factories are empty_like
 * followed by the in-place sampler.  They are composites here too: the draws are those of
 * uniform_, normal_ and random_.from with the same generator, which are the draws rand,
 * randn and randint make (random.c's fills), and the dtype errors are the samplers'. */
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

static const PtlKernelReg random_like_kernels[] = {
    {PTL_OP_rand_like_generator, PTL_KEY_COMPOSITE_IMPLICIT, random_like_composite},
    {PTL_OP_randn_like_generator, PTL_KEY_COMPOSITE_IMPLICIT, random_like_composite},
    {PTL_OP_randint_like_generator, PTL_KEY_COMPOSITE_IMPLICIT, random_like_composite},
    {PTL_OP_randint_like_low_generator_dtype, PTL_KEY_COMPOSITE_IMPLICIT,
     random_like_composite},
};
PTL_DEFINE_REGISTER(random_like_kernels)
