/* constant_pad.c -- constant_pad_nd (F.pad's constant mode): on the CPU by rows (Note
 * [Constant pad rows]), else a fill and a copy.  Mirrors ATen/native/PadNd.cpp's
 * constant_pad_nd.  The other pads are resample.c's. */
#include <string.h>

#include "../../c10/error.h"
#include "../../c10/memory_format.h"
#include "../../c10/parallel.h"
#include "native.h"

/* Note [Constant pad rows]
 * ~~~~~~~~~~~~~~~~~~~~~~~
 * On the CPU, with no negative pad and the input's last dim unit-strided, constant_pad_nd
 * writes the output once, in order: a run of the value, an input row, a run of the value, ...
 * The run between two input rows (the right pad of one, any rows of pad, the left pad of the
 * next) is one fill.  The general path (the value everywhere, then copy_ into the box, chunk
 * by chunk) wrote every output byte twice and copied through the iterator.  Written per
 * output row instead (left pad, row, right pad: three calls a row) it was no faster on
 * 34-float rows; runs of a few words are stored inline here, the row's position is carried
 * from row to row (a division per dim per row cost more than the copy), and the rows of a
 * run along dim -2 go through a loop of their own, a fixed gap and step apart (rows of two
 * floats padded by (1, 1): 0.55x PyTorch's time with the carry a row, 1.08x).  If a row and
 * the gap before it take at most SMALL_ROW_BYTES, a block of SMALL_ROW_BLOCK of them is
 * filled whole with the value, then the rows are stored over it (a fixed-size copy for
 * rows of 2, 4, 8, 16, 32 bytes): row by row, the size tests of a few bytes' fill and copy
 * cost more than the bytes (two floats padded by (1, 1): 0.88x -> 3.3-4.7x PyTorch's speed).
 * Unit k of the parallel loop is the run before input row k and that row (unit `rows`: the
 * run after the last row), so the bytes are the same for any split. */
typedef struct PadRowsJob {
    int dim;
    const int64_t *ysz, *lo, *xsz, *xstr;   /* xstr in elements */
    const char *x, *pat;                    /* pat: one element of the value */
    char *y;
    size_t item;
    int bytewise;                           /* every byte of pat equal: memset */
} PadRowsJob;

/* n elements of item bytes from src; a few words without a call */
static inline void
copy_elems(char *dst, const char *src, int64_t n, size_t item)
{
    size_t total = (size_t)n * item;
    if (total <= 32 && total % 8 == 0) {
        for (size_t i = 0; i < total; i += 8) {
            uint64_t v;
            memcpy(&v, src + i, 8);
            memcpy(dst + i, &v, 8);
        }
    }
    else if (total <= 32 && total % 4 == 0) {
        for (size_t i = 0; i < total; i += 4) {
            uint32_t v;
            memcpy(&v, src + i, 4);
            memcpy(dst + i, &v, 4);
        }
    }
    else {
        memcpy(dst, src, total);
    }
}

/* n copies of the item bytes at pat */
static inline void
fill_elems(char *dst, const char *pat, size_t item, int bytewise, int64_t n)
{
    size_t total = (size_t)n * item, done = item;
    if (n <= 0) {
        return;
    }
    if (total <= 32 && (item == 4 || item == 8)) {
        for (size_t i = 0; i < total; i += item) {
            copy_elems(dst + i, pat, 1, item);
        }
        return;
    }
    if (bytewise) {
        memset(dst, (unsigned char)pat[0], total);
        return;
    }
    memcpy(dst, pat, item);
    while (done < total) {   /* doubling: a few calls for any n */
        size_t k = done < total - done ? done : total - done;
        memcpy(dst + done, dst, k);
        done += k;
    }
}

/* cnt rows of n elements from yp on, each after a gap of the value, read xs elements apart
 * from xp on; small ones by blocks (Note [Constant pad rows]) */
#define SMALL_ROW_BYTES 128
#define SMALL_ROW_BLOCK 128
#define STORE_ROWS(W)                                                                     \
    for (int64_t t = 0; t < m; t++, yq += unit, xp += xstep) {                            \
        memcpy(yq, xp, W);                                                                \
    }
static void
pad_row_run(char *yp, const char *xp, int64_t cnt, int64_t gap, int64_t n, int64_t xs,
            const char *pat, size_t item, int bytewise)
{
    const size_t unit = (size_t)(gap + n) * item, nb = (size_t)n * item;
    const int64_t xstep = xs * (int64_t)item;
    for (int64_t t = 0; t < cnt && unit > SMALL_ROW_BYTES; t++, yp += unit, xp += xstep) {
        fill_elems(yp, pat, item, bytewise, gap);
        copy_elems(yp + (size_t)gap * item, xp, n, item);
    }
    for (int64_t t0 = 0; t0 < cnt && unit <= SMALL_ROW_BYTES; t0 += SMALL_ROW_BLOCK) {
        int64_t m = cnt - t0 < SMALL_ROW_BLOCK ? cnt - t0 : SMALL_ROW_BLOCK;
        fill_elems(yp, pat, item, bytewise, m * (gap + n));
        char *yq = yp + (size_t)gap * item;
        switch (nb) {
        case 2: STORE_ROWS(2) break;
        case 4: STORE_ROWS(4) break;
        case 8: STORE_ROWS(8) break;
        case 16: STORE_ROWS(16) break;
        case 32: STORE_ROWS(32) break;
        default:
            for (int64_t t = 0; t < m; t++, yq += unit, xp += xstep) {
                copy_elems(yq, xp, n, item);
            }
        }
        yp += (size_t)m * unit;
    }
}
#undef STORE_ROWS

static int
pad_rows_job(void *ctx, int64_t b, int64_t e)
{
    const PadRowsJob *j = ctx;
    /* locals: the stores through y (char *) may alias *j, so its fields would be reloaded */
    const char *x = j->x, *pat = j->pat;
    char *y = j->y;
    size_t item = j->item;
    int bytewise = j->bytewise, last = j->dim - 1;
    int64_t rows = 1, ynumel = j->ysz[last], n = j->xsz[last], xoff = 0, yoff = j->lo[last];
    int64_t idx[PTL_MAX_DIMS], ystr[PTL_MAX_DIMS], xsz[PTL_MAX_DIMS], xstr[PTL_MAX_DIMS];
    for (int d = last - 1; d >= 0; d--) {
        ystr[d] = ynumel;
        xsz[d] = j->xsz[d];
        xstr[d] = j->xstr[d];
        rows *= xsz[d];
        ynumel *= j->ysz[d];
    }
    /* start at row b - 1, whose end starts unit b's run (or at row 0) */
    int64_t k = b > 0 ? b - 1 : 0, r = k, prev = 0;
    for (int d = last - 1; d >= 0 && rows > 0; d--) {
        idx[d] = r % xsz[d];
        r /= xsz[d];
        yoff += (idx[d] + j->lo[d]) * ystr[d];
        xoff += idx[d] * xstr[d];
    }
    for (; k < e; k++) {
        int64_t start = k < rows ? yoff : ynumel;
        if (k >= b) {
            fill_elems(y + (size_t)prev * item, pat, item, bytewise, start - prev);
            if (k < rows) {
                copy_elems(y + (size_t)start * item, x + (size_t)xoff * item, n, item);
            }
        }
        prev = start + n;
        /* the next rows of this run along dim last - 1, in this unit range: a fixed gap of
         * ystr - n elements before each, x a fixed step on (rows of a few elements: the
         * carry and the offsets a row cost as much as the row) */
        int64_t cnt = last > 0 && k >= b && k + 1 < rows ? xsz[last - 1] - 1 - idx[last - 1] : 0;
        cnt = cnt < e - 1 - k ? cnt : e - 1 - k;
        if (cnt > 0) {
            int64_t gap = ystr[last - 1] - n, xs = xstr[last - 1];
            char *yp = y + (size_t)prev * item;
            const char *xp = x + (size_t)(xoff + xs) * item;
            pad_row_run(yp, xp, cnt, gap, n, xs, pat, item, bytewise);
            idx[last - 1] += cnt;
            yoff += cnt * ystr[last - 1];
            xoff += cnt * xs;
            prev = yoff + n;
            k += cnt;
        }
        for (int d = last - 1; d >= 0 && k + 1 < rows; d--) {   /* to row k + 1 */
            yoff += ystr[d];
            xoff += xstr[d];
            if (++idx[d] < xsz[d]) {
                break;
            }
            yoff -= idx[d] * ystr[d];
            xoff -= idx[d] * xstr[d];
            idx[d] = 0;
        }
    }
    return 0;
}

/* y (new, contiguous) from x padded by lo before each dim, all pads >= 0, x's last dim
 * unit-strided (Note [Constant pad rows]). */
static int
pad_rows(PtlTensorImpl *y, PtlTensorImpl *x, const int64_t *lo, const PtlIValue *value)
{
    PtlTensorImpl *v = ptl_empty(0, NULL, x->dtype, x->device);
    if (v == NULL || ptl_fill_scalar(v, value) < 0) {
        ptl_xdecref(v);
        return -1;
    }
    PadRowsJob j = {x->dim, y->sizes, lo, x->sizes, x->strides, ptl_tensor_data(x),
                    ptl_tensor_data(v), ptl_tensor_data(y), ptl_tensor_itemsize(x), 1};
    for (size_t i = 1; i < j.item; i++) {
        j.bytewise &= j.pat[i] == j.pat[0];
    }
    int64_t rows = 1;
    for (int d = 0; d < x->dim - 1; d++) {
        rows *= x->sizes[d];
    }
    /* units: rows + 1 (the last one: the run after the last row); about ynumel / rows
     * output elements each */
    int64_t per = y->numel / (rows + 1) + 1;
    void *tok = ptl_nogil_begin();
    int rc = ptl_parallel_for(0, rows + 1, PTL_GRAIN_SIZE / per + 1, pad_rows_job, &j);
    ptl_nogil_end(tok);
    ptl_decref(v);
    return rc;
}

#define PAD_CHUNK_BYTES ((int64_t)128 << 10)
/* y (new, dense in C order; borrowed) from x padded: ysz its sizes, ssz the part of x that
 * negative pads keep (soff elements on), lo the pads >= 0 before each dim.  On the CPU with
 * no negative pad and a unit-strided last dim, by rows (Note [Constant pad rows]); else the
 * value, then that part copied into place.  Any dtype.  0, or -1 with the error set. */
static int
pad_into(PtlTensorImpl *y, PtlTensorImpl *x, const int64_t *ysz, const int64_t *ssz,
         const int64_t *lo, int64_t soff, const PtlIValue *value)
{
    PtlTensorImpl *src = NULL, *dst = NULL;
    int64_t ystr[PTL_MAX_DIMS], st = 1;
    for (int d = x->dim - 1; d >= 0; d--) {
        ystr[d] = st;
        st *= ysz[d] > 1 ? ysz[d] : 1;
    }
    int rows_ok = x->device.type == PTL_DEVICE_CPU && soff == 0 &&
                  (x->strides[x->dim - 1] == 1 || x->sizes[x->dim - 1] <= 1);
    for (int d = 0; d < x->dim && rows_ok; d++) {
        rows_ok = ssz[d] == x->sizes[d];   /* no negative pad */
    }
    if (rows_ok) {
        /* an unpadded last dim joins the one before where x allows: longer rows */
        int k = x->dim;
        int64_t xs[PTL_MAX_DIMS], ys[PTL_MAX_DIMS], ks[PTL_MAX_DIMS], yst[PTL_MAX_DIMS];
        int64_t los[PTL_MAX_DIMS];
        memcpy(xs, x->sizes, sizeof(int64_t) * (size_t)k);
        memcpy(ys, ysz, sizeof(int64_t) * (size_t)k);
        memcpy(los, lo, sizeof(int64_t) * (size_t)k);
        while (k >= 2 && ys[k - 1] == xs[k - 1] && x->strides[k - 2] == xs[k - 1]) {
            los[k - 2] *= xs[k - 1];
            xs[k - 2] *= xs[k - 1];
            ys[k - 2] *= ys[k - 1];
            k--;
        }
        if (k == x->dim) {
            return pad_rows(y, x, lo, value);
        }
        memcpy(ks, x->strides, sizeof(int64_t) * (size_t)k);
        memcpy(yst, ystr, sizeof(int64_t) * (size_t)k);
        ks[k - 1] = yst[k - 1] = 1;
        PtlTensorImpl *xv = ptl_tensor_impl_view(x, k, xs, ks, x->storage_offset);
        PtlTensorImpl *yv = xv == NULL ? NULL : ptl_tensor_impl_view(y, k, ys, yst,
                                                                    y->storage_offset);
        int rc = yv == NULL ? -1 : pad_rows(yv, xv, los, value);
        ptl_xdecref(xv);
        ptl_xdecref(yv);
        return rc;
    }
    /* Chunks of about PAD_CHUNK_BYTES along dim 0, each filled and then copied into while its
     * lines are in the cache: filled whole before the copy, a large output was written twice
     * through memory; filled only around the copied box, a padded last dim took a store miss
     * at each row's ends (no faster). */
    int64_t row_bytes = ystr[0] * (int64_t)ptl_dtype_itemsize(x->dtype);
    int64_t step = row_bytes > 0 && row_bytes < PAD_CHUNK_BYTES ? PAD_CHUNK_BYTES / row_bytes : 1;
    step = x->device.type == PTL_DEVICE_CUDA ? ysz[0] : step;   /* no cache: one fill, one copy */
    for (int64_t i0 = 0; i0 < ysz[0]; i0 += step) {
        int64_t csz[PTL_MAX_DIMS], cbox[PTL_MAX_DIMS];
        memcpy(csz, ysz, sizeof(int64_t) * (size_t)x->dim);
        memcpy(cbox, ssz, sizeof(int64_t) * (size_t)x->dim);
        csz[0] = ysz[0] - i0 < step ? ysz[0] - i0 : step;
        int64_t b0 = lo[0] > i0 ? lo[0] : i0;
        int64_t b1 = lo[0] + ssz[0] < i0 + csz[0] ? lo[0] + ssz[0] : i0 + csz[0];
        cbox[0] = b1 > b0 ? b1 - b0 : 0;
        PtlTensorImpl *win = ptl_tensor_impl_view(y, x->dim, csz, ystr,
                                                  y->storage_offset + i0 * ystr[0]);
        int rc = win == NULL ? -1 : ptl_fill_scalar(win, value);
        ptl_xdecref(win);
        if (rc < 0) {
            goto error;
        }
        if (cbox[0] == 0) {
            continue;
        }
        int64_t doff = y->storage_offset + (b0 - lo[0]) * ystr[0];
        for (int d = 0; d < x->dim; d++) {
            doff += lo[d] * ystr[d];
        }
        if ((src = ptl_tensor_impl_view(x, x->dim, cbox, x->strides,
                                        x->storage_offset + soff + (b0 - lo[0]) * x->strides[0])) ==
                NULL ||
            (dst = ptl_tensor_impl_view(y, x->dim, cbox, ystr, doff)) == NULL ||
            ptl_copy_into(dst, src) < 0) {
            goto error;
        }
        PTL_CLEAR(src);
        PTL_CLEAR(dst);
    }
    return 0;
error:
    ptl_xdecref(src);
    ptl_xdecref(dst);
    return -1;
}

/* Note [Constant pad keeps channels-last]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * PyTorch lays constant_pad_nd's result out in self's suggested memory format, a padded
 * channel dim included.  A channels-last result is C-order dense in (N, [D,] H, W, C), so
 * self, the result and the sizes are read in that order and padded as a contiguous pair
 * would be: the rows are then W * C elements long (C alone for a pad of the channels) and
 * the same row kernel writes them once. */
static const int CHANNELS_LAST_ORDER[2][5] = {{0, 2, 3, 1}, {0, 2, 3, 4, 1}};

/* constant_pad_nd(Tensor self, pad, Scalar value=0): the result in self's suggested memory
 * format (Note [Constant pad keeps channels-last]), filled by pad_into. */
static int
constant_pad_nd_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *x = s[0].u.t, *y = NULL, *xv = NULL, *yv = NULL;
    const int64_t *pv = s[1].u.il.data;
    int64_t np = s[1].u.il.n, ysz[PTL_MAX_DIMS], soff = 0;
    int64_t ssz[PTL_MAX_DIMS], lo[PTL_MAX_DIMS];

    PTL_CHECK(np % 2 == 0, PTL_ERR_RUNTIME, "Length of pad must be even but instead it equals %lld",
              (long long)np);
    PTL_CHECK(np / 2 <= x->dim, PTL_ERR_RUNTIME,   /* PyTorch's words and spacing */
              "Length of pad should be no more than twice the number of dimensions of the "
              "input. Pad length is %lldwhile the input has %ddimensions.",
              (long long)np, (int)x->dim);
    memcpy(ysz, x->sizes, sizeof(int64_t) * (size_t)x->dim);
    memcpy(ssz, x->sizes, sizeof(int64_t) * (size_t)x->dim);
    for (int d = 0; d < x->dim; d++) {
        lo[d] = 0;
    }
    for (int64_t i = 0; i < np / 2; i++) {
        int d = x->dim - 1 - (int)i;
        int64_t l = pv[2 * i], r = pv[2 * i + 1];
        ysz[d] = x->sizes[d] + l + r;
        /* PyTorch narrows self by the negative pads first */
        ssz[d] = x->sizes[d] + (l < 0 ? l : 0) + (r < 0 ? r : 0);
        PTL_CHECK(ssz[d] >= 0, PTL_ERR_RUNTIME, "narrow(): length must be non-negative.");
        PTL_CHECK(ysz[d] >= 0, PTL_ERR_RUNTIME,
                  "The input size %lld, plus negative padding %lld and %lld resulted in a negative "
                  "output size, which is invalid. Check dimension %d of your input.",
                  (long long)x->sizes[d], (long long)l, (long long)r, d);
        soff += l < 0 ? -l * x->strides[d] : 0;
        lo[d] = l > 0 ? l : 0;
    }
    PtlMemoryFormat fmt = ptl_tensor_impl_suggest_memory_format(x);
    if ((y = ptl_empty_format(x->dim, ysz, fmt, x->dtype, x->device)) == NULL) {
        return -1;
    }
    if (x->dim == 0) {
        if (ptl_copy_into(y, x) < 0) {
            goto error;
        }
        s[0] = ptl_iv_tensor(y);
        return 0;
    }
    if (fmt == PTL_MEMORY_FORMAT_CONTIGUOUS) {
        if (pad_into(y, x, ysz, ssz, lo, soff, &s[2]) < 0) {
            goto error;
        }
        s[0] = ptl_iv_tensor(y);
        return 0;
    }
    const int *order = CHANNELS_LAST_ORDER[fmt == PTL_MEMORY_FORMAT_CHANNELS_LAST_3D];
    int64_t xs[PTL_MAX_DIMS], xst[PTL_MAX_DIMS], ys[PTL_MAX_DIMS], yst[PTL_MAX_DIMS];
    int64_t ss[PTL_MAX_DIMS], los[PTL_MAX_DIMS];
    for (int d = 0; d < x->dim; d++) {
        xs[d] = x->sizes[order[d]];
        xst[d] = x->strides[order[d]];
        ys[d] = ysz[order[d]];
        yst[d] = y->strides[order[d]];
        ss[d] = ssz[order[d]];
        los[d] = lo[order[d]];
    }
    if ((xv = ptl_tensor_impl_view(x, x->dim, xs, xst, x->storage_offset)) == NULL ||
        (yv = ptl_tensor_impl_view(y, x->dim, ys, yst, y->storage_offset)) == NULL ||
        pad_into(yv, xv, ys, ss, los, soff, &s[2]) < 0) {
        goto error;
    }
    ptl_decref(xv);
    ptl_decref(yv);
    s[0] = ptl_iv_tensor(y);
    return 0;
error:
    ptl_xdecref(xv);
    ptl_xdecref(yv);
    ptl_xdecref(y);
    return -1;
}

static const PtlKernelReg constant_pad_kernels[] = {
    {PTL_OP_constant_pad_nd, PTL_KEY_CPU, constant_pad_nd_cpu},
    /* device-generic: fill and copy through ptl_fill_scalar and ptl_copy_into (copy_) */
    {PTL_OP_constant_pad_nd, PTL_KEY_CUDA, constant_pad_nd_cpu},
};
PTL_DEFINE_REGISTER(constant_pad_kernels)
