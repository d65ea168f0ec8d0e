/* sort_device.c -- kthvalue, median, nanmedian and mode of CUDA tensors as compositions of
 * device kernels, and cummax, cummin and logcumsumexp on the device's scan kernel: the
 * device path of sort.c's kernels, after their checks.  Mirrors ATen/native/cuda/Sorting.cu
 * and ScanKernels.cu in behaviour, not in method. */
#include <string.h>

#include "../../c10/error.h"
#include "device_compose.h"
#include "device_index.h"
#include "device_reduce.h"
#include "native.h"
#include "sort_impl.h"

/* Note [Device selections and scans]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * kthvalue, median, nanmedian and mode of a CUDA tensor (and of a CPU one while the tests
 * emulate the CUDA kernels) keep sort.c's checks and compose device kernels: the lanes
 * are sorted by the device sort (Note [CUDA sort] in src/cuda/sort_plan.h: stable, NaN
 * last, the order of the CPU's radix sort), a position per lane is computed by pointwise
 * ops, and gather takes the values and indices there.  The position is select_pos's and
 * mode_pos's: kthvalue k - 1; median (n - 1) / 2, or the first NaN's n - nnan when the lane
 * has NaNs (nnan = the lane's count of NaN); nanmedian (n - nnan - 1) / 2, 0 when the lane
 * is all NaN; mode the last element of the first longest run of equal values (each NaN a
 * run of its own: Note [Mode with NaN] in sort.c; i minus the start of i's run, the run
 * starts being a cummax of the positions where the value changes, and argmax taking the
 * first maximum).  So the results, indices included, are
 * the CPU's.  Nothing is read back to the host.  cummax, cummin and logcumsumexp take the
 * scan kernel of cumsum (device_reduce.h's hook, Note [CUDA scans] in
 * src/cuda/reduce_plan.h). */

/* 1 when self takes the device's path of this Note */
int
selects_on_device(const PtlTensorImpl *self, int has_hook)
{
    return has_hook && ptl_on_device_path(self) && !ptl_tensor_is_meta(self);
}

/* op id on tensors a (and b, when not NULL) with the schema's defaults for the rest */
static PtlTensorImpl *
call_tt(PtlOpId id, PtlTensorImpl *a, PtlTensorImpl *b)
{
    PtlIValue v[2] = {ptl_iv_tensor(a), ptl_iv_tensor(b)};
    return ptl_call_k(id, b != NULL ? 2 : 1, v);
}

/* op id on tensor a and the host scalar v (a 0-dim CPU int64 tensor) */
static PtlTensorImpl *
call_ts(PtlOpId id, PtlTensorImpl *a, int64_t v)
{
    PtlTensorImpl *c = ptl_scalar_tensor((double)v, PTL_DTYPE_INT64, ptl_device_cpu());
    PtlTensorImpl *r = c != NULL ? call_tt(id, a, c) : NULL;
    ptl_xdecref(c);
    return r;
}

/* op id on the first k of (a, i, j), the schema's defaults for the rest */
static PtlTensorImpl *
call_tii(PtlOpId id, PtlTensorImpl *a, int64_t i, int64_t j, int k)
{
    PtlIValue v[3] = {ptl_iv_tensor(a), ptl_iv_int(i), ptl_iv_int(j)};
    return ptl_call_k(id, k, v);
}

/* The lane count of NaN along d of the sorted sv, keepdim: int64. */
static PtlTensorImpl *
nan_counts(PtlTensorImpl *sv, int64_t d)
{
    PtlTensorImpl *nan = call_tt(PTL_OP_isnan, sv, NULL), *r;
    PtlIValue v[4] = {ptl_iv_tensor(nan), ptl_iv_intlist(&d, 1), ptl_iv_bool(1),
                      ptl_iv_dtype(PTL_DTYPE_INT64)};
    r = nan != NULL ? ptl_call_k(PTL_OP_sum_dim_IntList, 4, v) : NULL;
    ptl_xdecref(nan);
    return r;
}

/* mode's position along d of the sorted sv (n > 1): argmax over i of i - the start of i's
 * run, keepdim */
static PtlTensorImpl *
mode_positions(PtlTensorImpl *sv, int64_t d)
{
    PtlTensorImpl *t[8] = {NULL}, *r = NULL;
    int64_t one = 1;
    PtlIValue roll[3] = {ptl_iv_tensor(sv), ptl_iv_intlist(&one, 1), ptl_iv_intlist(&d, 1)};
    PtlIValue ones = ptl_iv_int(1);
    /* t0 the previous element, t1 equal to it (a NaN never: Note [Mode with NaN] in
     * sort.c), t2 the positions i */
    if ((t[0] = ptl_call_k(PTL_OP_roll, 3, roll)) == NULL ||
        (t[1] = call_tt(PTL_OP_eq_Tensor, sv, t[0])) == NULL) {
        goto done;
    }
    if ((t[2] = ptl_empty(sv->dim, sv->sizes, PTL_DTYPE_INT64, sv->device)) == NULL ||
        ptl_fill_scalar(t[2], &ones) < 0 ||
        (t[3] = call_tii(PTL_OP_cumsum, t[2], d, 0, 2)) == NULL ||
        (t[4] = call_ts(PTL_OP_sub_Tensor, t[3], 1)) == NULL) {
        goto done;
    }
    /* t5 i where a run starts, else 0; t6 the start of i's run; t7 i minus it */
    if ((t[5] = call_tt(PTL_OP_logical_not, t[1], NULL)) == NULL ||
        (t[6] = call_tt(PTL_OP_mul_Tensor, t[5], t[4])) == NULL) {
        goto done;
    }
    PTL_CLEAR(t[5]);
    if ((t[5] = call_tii(PTL_OP_cummax, t[6], d, 0, 2)) == NULL ||
        (t[7] = call_tt(PTL_OP_sub_Tensor, t[4], t[5])) == NULL) {
        goto done;
    }
    PtlIValue am[3] = {ptl_iv_tensor(t[7]), ptl_iv_int(d), ptl_iv_bool(1)};
    r = ptl_call_k(PTL_OP_argmax, 3, am);
done:
    for (int i = 0; i < 8; i++) {
        ptl_xdecref(t[i]);
    }
    return r;
}

/* The position along d (keepdim, int64) that kind reports in each lane of the sorted sv
 * of n elements (Note [Device selections and scans]); pos: kthvalue's k - 1. */
static PtlTensorImpl *
select_positions(LaneKind kind, PtlTensorImpl *sv, int64_t d, int64_t pos)
{
    int64_t sizes[PTL_MAX_DIMS], n = sv->sizes[d];
    PtlTensorImpl *nnan = NULL, *a = NULL, *b = NULL, *r = NULL;
    if (kind == L_MODE && n > 1) {
        return mode_positions(sv, d);
    }
    memcpy(sizes, sv->sizes, sizeof(int64_t) * (size_t)sv->dim);
    sizes[d] = 1;
    pos = kind == L_MODE ? 0 : kind == L_KTH ? pos : (n - 1) / 2;
    if (kind == L_KTH || kind == L_MODE || !ptl_dtype_is_floating(sv->dtype)) {
        return ptl_device_full(sv->dim, sizes, PTL_DTYPE_INT64, sv->device, pos);
    }
    if ((nnan = nan_counts(sv, d)) == NULL) {
        return NULL;
    }
    if (kind == L_MEDIAN) {
        /* (n - 1) / 2 + min(nnan, 1) (n - nnan - (n - 1) / 2) */
        PtlIValue v[2] = {ptl_iv_tensor(nnan), ptl_iv_int(1)};
        if ((a = ptl_call_k(PTL_OP_clamp_max, 2, v)) != NULL &&
            (b = call_ts(PTL_OP_rsub_Tensor, nnan, n - pos)) != NULL) {
            PtlTensorImpl *m = call_tt(PTL_OP_mul_Tensor, a, b);
            r = m != NULL ? call_ts(PTL_OP_add_Tensor, m, pos) : NULL;
            ptl_xdecref(m);
        }
    }
    else {
        /* max(n - 1 - nnan, 0) >> 1 */
        PtlIValue v[2] = {ptl_iv_tensor(NULL), ptl_iv_int(0)};
        if ((a = call_ts(PTL_OP_rsub_Tensor, nnan, n - 1)) != NULL) {
            v[0] = ptl_iv_tensor(a);
            if ((b = ptl_call_k(PTL_OP_clamp_min, 2, v)) != NULL) {
                r = call_ts(PTL_OP_bitwise_right_shift_Tensor, b, 1);
            }
        }
    }
    ptl_xdecref(nnan);
    ptl_xdecref(a);
    ptl_xdecref(b);
    return r;
}

/* kind's element of each lane along dim d of x (lanes not empty) on the device: (values,
 * indices) into s[0], s[1], d kept as size 1 when keepdim.  A 0-dim x is one lane of one
 * element, and its results are 0-dim. */
int
select_on_device(LaneKind kind, PtlTensorImpl *x, int64_t d, int64_t pos, int keepdim,
                 PtlIValue *s)
{
    if (x->dim == 0) {
        int64_t one = 1;
        PtlTensorImpl *v = ptl_tensor_impl_view(x, 1, &one, &one, x->storage_offset);
        int rc = v != NULL ? select_on_device(kind, v, 0, pos, 0, s) : -1;
        ptl_xdecref(v);
        return rc;
    }
    LaneJob job = {0};
    PtlTensorImpl *t[5] = {NULL};   /* sorted values, indices, positions, results */
    int rc = -1;
    if ((t[0] = ptl_empty(x->dim, x->sizes, x->dtype, x->device)) == NULL ||
        (t[1] = ptl_empty(x->dim, x->sizes, PTL_DTYPE_INT64, x->device)) == NULL) {
        goto done;
    }
    job.kind = L_SORT;
    lane_setup(&job, x, d);
    job.nsel = job.len;
    job.vals = ptl_tensor_data(t[0]);
    job.idx = (int64_t *)ptl_tensor_data(t[1]);
    if ((x->numel > 0 && lanes_on_device(&job) < 0) ||
        (t[2] = select_positions(kind, t[0], d, pos)) == NULL) {
        goto done;
    }
    for (int i = 0; i < 2; i++) {
        PtlIValue g[3] = {ptl_iv_tensor(t[i]), ptl_iv_int(d), ptl_iv_tensor(t[2])};
        if ((t[3 + i] = ptl_call_k(PTL_OP_gather, 3, g)) == NULL) {
            goto done;
        }
        if (!keepdim) {
            PtlTensorImpl *sq = call_tii(PTL_OP_squeeze_dim, t[3 + i], d, 0, 2);
            ptl_decref(t[3 + i]);
            if ((t[3 + i] = sq) == NULL) {
                goto done;
            }
        }
    }
    s[0] = ptl_iv_tensor(t[3]);
    s[1] = ptl_iv_tensor(t[4]);
    t[3] = t[4] = NULL;
    rc = 0;
done:
    for (int i = 0; i < 5; i++) {
        ptl_xdecref(t[i]);
    }
    return rc;
}

/* cummax, cummin or logcumsumexp along dim d of self on the device's scan kernel: new
 * values (and indices) of self's shape into s[0] (and s[1]). */
int
cum_on_device(LaneKind kind, PtlTensorImpl *self, int64_t d, PtlIValue *s)
{
    PtlDeviceScanArgs a;
    PtlTensorImpl *vals, *idx = NULL;
    if ((vals = ptl_empty(self->dim, self->sizes, self->dtype, self->device)) == NULL) {
        return -1;
    }
    if (kind != L_LOGCUMSUMEXP &&
        (idx = ptl_empty(self->dim, self->sizes, PTL_DTYPE_INT64, self->device)) == NULL) {
        ptl_decref(vals);
        return -1;
    }
    memset(&a, 0, sizeof(a));
    a.dtype = self->dtype;
    a.use_int = !ptl_dtype_is_floating(self->dtype);
    a.kind = kind == L_CUMMAX ? PTL_DEVICE_SCAN_MAX
             : kind == L_CUMMIN ? PTL_DEVICE_SCAN_MIN : PTL_DEVICE_SCAN_LOGSUMEXP;
    a.ndim = self->dim;
    a.dim = self->dim > 0 ? (int32_t)d : 0;
    a.src = ptl_tensor_data(self);
    a.out = ptl_tensor_data(vals);
    a.idx = idx != NULL ? (int64_t *)ptl_tensor_data(idx) : NULL;
    for (int i = 0; i < self->dim; i++) {
        a.sizes[i] = self->sizes[i];
        a.sst[i] = self->strides[i];
        a.ost[i] = vals->strides[i];
    }
    a.len = self->dim > 0 ? self->sizes[d] : 1;
    a.nlines = a.len > 0 ? self->numel / a.len : 0;
    a.itemsize = (int64_t)ptl_tensor_itemsize(self);
    if (ptl_device_scan_hook(&a) < 0) {
        ptl_decref(vals);
        ptl_xdecref(idx);
        return -1;
    }
    s[0] = ptl_iv_tensor(vals);
    if (idx != NULL) {
        s[1] = ptl_iv_tensor(idx);
    }
    return 0;
}

