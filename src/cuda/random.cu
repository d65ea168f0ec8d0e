// random.cu -- the random fill kernel: uniform_, normal_ (and normal with tensor mean or
// std), log_normal_, exponential_, cauchy_, geometric_, bernoulli_ (float and tensor p),
// random_ (plain, to, from/to), poisson, _standard_gamma and the ops built on them
// (rand_like, randn_like, randint_like, bernoulli, native_dropout's mask) on CUDA tensors.
// Mirrors ATen/native/cuda/DistributionTemplates.h.
//
// Note [CUDA random fills]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// The CUDA key runs the CPU kernel of each op (random.c): its checks and PyTorch's
// messages, its generator reservation and its contiguous temporary for a strided self are
// the CPU's.  Its last step hands the PtlDistJob to this kernel (device_random.h's hook)
// instead of the CPU threads.  Element i comes from (seed, offset, i) alone (Note [Philox
// streams] in generator.h), so a seed gives the same draws on both devices: thread t of the
// grid-stride loop owns Philox block t, computes its four words once and writes that block's
// k = 4, 2 or 1 elements (the last block may be partial) through ptl_dist_fill_block, the
// PTL_HD code the CPU kernel runs element by element.  The products that feed an add are
// rounded apart (Note [Products rounded apart]), so the float arithmetic is the CPU's bit
// for bit.  The normals of every float dtype (normal_, randn_like...) need no libm either:
// their log, sin and cos are scalar_math.h's float and double formulas (Note [Scalar twins
// of vector formulas]), the ones the CPU's vector loops run, so they are bit for bit too.
// What the host emulation (random_plan.c) cannot prove is the device's libm: the other
// transforms that call log, exp, sin, cos or tan (log_normal_'s exp, exponential_, cauchy_,
// geometric_) use CUDA's functions, within an ulp or two of glibc's, so those values can
// differ from the CPU's in the last bit (tests/cuda/test_cuda_kernels.py measures it on a
// GPU).  uniform_, bernoulli_ and random_ need no libm: bit for bit.
#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda_api.h"
#include "launch_check.h"

// one thread per Philox block of the job; a launch captured in a CUDA graph reads its seed
// and offset now (Note [Graph-safe Philox] in philox.h)
__global__ void
random_fill(PtlDistJob j, int64_t nblocks)
{
    const PtlDistJob u = ptl_dist_job_unpack(&j);
    PTL_GRID_LOOP(blk, nblocks)
    {
        ptl_dist_fill_block(&u, blk);
    }
}

extern "C" int
ptl_cuda_random_launch(const PtlDistJob *j, const PtlCudaNnPlan *plan)
{
    const int64_t k = (int64_t)1 << j->block_shift;
    const cudaStream_t stream = ptl_cuda_launch_stream();
    random_fill<<<(unsigned)plan->grid, (unsigned)plan->block, 0, stream>>>(*j,
                                                                         (j->n + k - 1) / k);
    PTL_CUDA_CHECK_LAUNCH();
    return 0;
}
