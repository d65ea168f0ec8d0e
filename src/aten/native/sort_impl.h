/* sort_impl.h -- what sort.c shares with sort_device.c: the lane jobs (Note [Sort keys] in
 * sort.c) and the device's selections and scans (Note [Device selections and scans] in
 * sort_device.c).  Private to src/aten/native. */
#ifndef PTL_ATEN_NATIVE_SORT_IMPL_H
#define PTL_ATEN_NATIVE_SORT_IMPL_H

#include "native.h"

typedef enum LaneKind {
    L_SORT, L_KTH, L_MEDIAN, L_NANMEDIAN, L_MODE, L_CUMMAX, L_CUMMIN, L_LOGCUMSUMEXP,
} LaneKind;

/* One op over all lanes.  A lane starts at base + the offsets of its index over the other
 * dims (osize / ostride, bytes) and has len elements st bytes apart.  Outputs are
 * contiguous: lane l's j-th output element sits at ((l / inner) * nsel + j) * inner +
 * l % inner, which for a one-element output (nsel 1) is l. */
typedef struct LaneJob {
    LaneKind kind;
    PtlDtype dt;
    const char *base;
    int64_t len, st;
    int nd;
    int64_t osize[PTL_MAX_DIMS], ostride[PTL_MAX_DIMS];
    int64_t inner, nsel;
    int descending;
    int64_t pos;             /* kthvalue: the 0-based rank */
    char *vals;              /* NULL: indices only (argsort) */
    char *scratch;           /* one lane's sort buffers when there is one lane, else NULL */
    int64_t *idx;            /* NULL: values only (logcumsumexp) */
} LaneJob;

/* Fills the lane geometry of job for src along dim d (-1: src is one lane, contiguous). */
void lane_setup(LaneJob *job, const PtlTensorImpl *src, int64_t d);
/* Runs the sort job (geometry and outputs set) on the device; 0 or -1. */
int lanes_on_device(const LaneJob *job);

/* 1 when self takes the device's path (has_hook: the hook it needs is set) */
int selects_on_device(const PtlTensorImpl *self, int has_hook);
/* kind's element (kthvalue: pos) of each lane along dim d of x on the device: values and
 * indices into s[0], s[1] (new refs), d kept as size 1 when keepdim; 0 or -1. */
int select_on_device(LaneKind kind, PtlTensorImpl *x, int64_t d, int64_t pos, int keepdim,
                     PtlIValue *s);
/* cummax, cummin or logcumsumexp along dim d of self on the device: s[0] (and s[1]). */
int cum_on_device(LaneKind kind, PtlTensorImpl *self, int64_t d, PtlIValue *s);

#endif
