/* resample_plan.c -- the host side of the pad and upsampling kernels, in every build: the
 * maps packed for the device with the backward's inverse (Note [CUDA resampling] in
 * resample_plan.h), the entry point resample.c calls for CUDA tensors through device_nn.h's
 * hook, and the kernels' emulation on the host (the same per-element functions and grid
 * loop as resample.cu). */
#include "resample_plan.h"

#include <stdlib.h>
#include <string.h>

#include "../aten/native/native.h"
#include "../c10/error.h"
#include "../c10/storage.h"
#include "cuda_api.h"
#include "stream_api.h"

/* int64 slots of dim d's part of the packed maps: idx and wt (MAX_TAPS an output
 * position), then for a backward off (in + 1) and ent (ntaps an output position) */
static int64_t
pack_slots(const PtlDeviceResampleArgs *a, int d)
{
    int64_t n = 2 * a->out[d] * PTL_DEVICE_MAX_TAPS;
    return a->backward ? n + a->in[d] + 1 + a->out[d] * a->ntaps[d] : n;
}

/* Packs the maps (and the inverse) into buf and points j's maps into base, where buf's
 * copy will be read (buf itself on the host, the device copy on the device). */
static void
pack_maps(PtlCudaResampleJob *j, int64_t *buf, const int64_t *base)
{
    const PtlDeviceResampleArgs *a = &j->a;
    const int T = PTL_DEVICE_MAX_TAPS;
    int64_t at = 0;
    for (int d = 0; d < 3; d++) {
        const int64_t nslot = a->out[d] * T;
        memcpy(buf + at, a->idx[d], sizeof(int64_t) * (size_t)nslot);
        memcpy(buf + at + nslot, a->wt[d], sizeof(double) * (size_t)nslot);
        j->idx[d] = base + at;
        j->wt[d] = (const double *)(base + at + nslot);
        at += 2 * nslot;
        if (!a->backward) {
            continue;
        }
        /* the inverse by counting: off[i + 1] counts input position i's readers, then
         * the prefix sums, then the readers in (output, tap) order */
        int64_t *off = buf + at, *ent = off + a->in[d] + 1;
        memset(off, 0, sizeof(int64_t) * (size_t)(a->in[d] + 1));
        for (int64_t o = 0; o < a->out[d]; o++) {
            for (int k = 0; k < a->ntaps[d]; k++) {
                off[a->idx[d][o * T + k] + 1]++;
            }
        }
        for (int64_t i = 0; i < a->in[d]; i++) {
            off[i + 1] += off[i];
        }
        for (int64_t o = 0; o < a->out[d]; o++) {
            for (int k = 0; k < a->ntaps[d]; k++) {
                ent[off[a->idx[d][o * T + k]]++] = o * T + k;
            }
        }
        for (int64_t i = a->in[d]; i > 0; i--) {   /* off[i] ran to off[i + 1]: shift back */
            off[i] = off[i - 1];
        }
        off[0] = 0;
        j->off[d] = base + at;
        j->ent[d] = base + at + a->in[d] + 1;
        at += a->in[d] + 1 + a->out[d] * a->ntaps[d];
    }
}

static void
rs_forward(const void *ctx, int64_t e, int64_t *status)
{
    (void)status;
    ptl_rs_forward_at(ctx, e);
}

static void
rs_backward(const void *ctx, int64_t e, int64_t *status)
{
    (void)status;
    ptl_rs_backward_at(ctx, e);
}

int
ptl_cuda_resample(const PtlDeviceResampleArgs *a)
{
    PtlCudaReduceTuning tuning = ptl_cuda_reduce_tuning();
    const int64_t *sz = a->backward ? a->in : a->out;
    const int64_t n = a->planes * sz[0] * sz[1] * sz[2];
    PtlCudaNnPlan elems = ptl_cuda_elems_plan(n, &tuning);
    PtlCudaResampleJob j;
    int64_t slots = 0;
    if (n == 0) {
        return 0;
    }
    j.a = *a;
    for (int d = 0; d < 3; d++) {
        slots += pack_slots(a, d);
    }
    const size_t nbytes = sizeof(int64_t) * (size_t)slots;
    if (ptl_device_reduce_emulation) {
        int64_t *buf = malloc(nbytes);
        if (buf == NULL) {
            return ptl_error_set(PTL_ERR_MEMORY, "out of memory");
        }
        pack_maps(&j, buf, buf);
        ptl_cuda_kernel_emulation_ran(PTL_CUDA_EMU_RESAMPLE);
        ptl_cuda_emulate_elems(&elems, n, a->backward ? rs_backward : rs_forward, &j, NULL);
        free(buf);
        return 0;
    }
    PtlDevice dev = {PTL_DEVICE_CUDA, 0};
    PtlTensorImpl *maps = NULL;
    PtlStorage *host = NULL;
    int device = 0, rc = -1;
    PtlStreamId stream = ptl_cuda_current_stream_here();
    if (ptl_cuda_current_device(&device) < 0) {
        return -1;
    }
    dev.index = (int8_t)device;
    if ((host = ptl_pinned_storage_new(nbytes)) == NULL ||
        (maps = ptl_empty(1, &slots, PTL_DTYPE_INT64, dev)) == NULL) {
        goto done;
    }
    pack_maps(&j, (int64_t *)host->data, (const int64_t *)ptl_tensor_data(maps));
    /* the copy is queued before the kernels on the stream; the pinned block is not handed
     * out again before it is done, nor the device block before the kernels are */
    if (ptl_cuda_memcpy_async(ptl_tensor_data(maps), 1, host->data, 0, nbytes, stream) < 0 ||
        ptl_pinned_storage_record_stream(host, stream) < 0) {
        goto done;
    }
    rc = ptl_cuda_resample_launch(&j, &elems);
done:
    if (host != NULL) {
        ptl_storage_decref(host);
    }
    ptl_xdecref(maps);
    return rc;
}
