/* derivatives/fft.c -- derivative formulas of the ops of aten/native/fft.c (_fft_c2c,
 * _fft_r2c, _fft_c2r).  Mirrors their rows of tools/autograd/derivatives.yaml.
 *
 * Note [FFT derivatives]
 * ~~~~~~~~~~~~~~~~~~~~~~
 * Each op is s * A for a linear map A and the scale s that `normalization` picks, so by
 * Note [Complex autograd] (derivatives/complex.c) the gradient of an input is s * A^H g:
 *   - c2c: A = F (the DFT matrix, over the dims) is symmetric, so A^H = conj(F), the
 *     transform in the other direction: c2c(g, dim, normalization, !forward).
 *   - r2c: A = P F with F applied to the real input and P the projection on the first
 *     n/2 + 1 bins of the last dim when onesided.  A^H g = F^H P^T g: g padded with zeros
 *     to n bins, transformed backward; the real input keeps the real part (finish()).
 *   - c2r: y[t] = s * sum_k c_k Re(x_k e^{+2 pi i k t / n}) over the half spectrum x of
 *     m = n/2 + 1 bins, with c_k = 2 for the bins whose mirror n - k lies outside the half
 *     (k = 1 .. n - m) and 1 for k = 0 and k = n/2 (the imaginary parts of those two are
 *     ignored).  dL/dRe x_k + i dL/dIm x_k = s c_k sum_t g_t e^{-2 pi i k t / n}: the
 *     onesided r2c of g with the bins 1 .. n - m doubled; the imaginary parts of the
 *     ignored bins come out 0 by themselves.  Bins of the input past m get 0.
 * Everything is written with dispatcher ops, so create_graph=True works. */
#include "../formula.h"

/* the last transformed dim of input 0, wrapped */
static int64_t
last_dim(PtlNode *n)
{
    const PtlIValue *dims = &n->args[1];
    int64_t d = dims->u.il.data[dims->u.il.n - 1];
    return d < 0 ? d + n->input_meta[0].dim : d;
}

/* a padded with zeros along d to `size` (a borrowed; a itself when it is long enough) */
static PtlTensorImpl *
pad_to(Scope *sc, PtlTensorImpl *a, int64_t d, int64_t size)
{
    if (a == NULL || a->sizes[d] >= size) {
        return a;
    }
    int64_t sizes[PTL_MAX_DIMS];
    memcpy(sizes, a->sizes, sizeof(int64_t) * (size_t)a->dim);
    sizes[d] = size - a->sizes[d];
    PtlTensorImpl *parts[2] = {a, zeros_sized(sc, sizes, a->dim, a->dtype)};
    PtlIValue v[2] = {ptl_iv_tensorlist(parts, 2), ptl_iv_int(d)};
    return parts[1] ? own(sc, callv(PTL_OP_cat, 2, v)) : NULL;
}

static PtlTensorImpl *
narrow(Scope *sc, PtlTensorImpl *a, int64_t d, int64_t start, int64_t len)
{
    PtlIValue v[4] = {ptl_iv_tensor(a), ptl_iv_int(d), ptl_iv_int(start), ptl_iv_int(len)};
    return fv(sc, PTL_OP_narrow, 4, v);
}

/* _fft_c2c(self, dim, normalization, forward): the transform in the other direction */
int
fft_c2c_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    if (!NEEDS(0)) {
        return 0;
    }
    PtlIValue a[4] = {ptl_iv_tensor(gi[0]), n->args[1], n->args[2], ptl_iv_bool(!n->args[3].u.b)};
    return put(n, go, 0, callv(PTL_OP__fft_c2c, 4, a));
}

/* _fft_r2c(self, dim, normalization, onesided): the grad padded back to n bins, then the
 * backward c2c; finish() keeps its real part */
int
fft_r2c_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    if (!NEEDS(0)) {
        return 0;
    }
    int64_t d = last_dim(n);
    PtlTensorImpl *g = pad_to(sc, gi[0], d, n->input_meta[0].sizes[d]);
    PtlIValue a[4] = {ptl_iv_tensor(g), n->args[1], n->args[2], ptl_iv_bool(0)};
    return scope_end(sc, give(n, go, 0, g ? own(sc, callv(PTL_OP__fft_c2c, 4, a)) : NULL));
}

/* _fft_c2r(self, dim, normalization, last_dim_size): the onesided r2c of the grad, the bins
 * 1 .. n - m doubled, padded to the input's bins */
int
fft_c2r_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    if (!NEEDS(0)) {
        return 0;
    }
    int64_t d = last_dim(n), len = n->args[3].u.i, m = len / 2 + 1, twice = len - m;
    PtlIValue a[4] = {ptl_iv_tensor(gi[0]), n->args[1], n->args[2], ptl_iv_bool(1)};
    PtlTensorImpl *g = own(sc, callv(PTL_OP__fft_r2c, 4, a));
    if (g != NULL && twice > 0) {
        PtlTensorImpl *parts[3] = {narrow(sc, g, d, 0, 1), MULN(narrow(sc, g, d, 1, twice), 2.0),
                                   narrow(sc, g, d, 1 + twice, m - 1 - twice)};
        PtlIValue v[2] = {ptl_iv_tensorlist(parts, 3), ptl_iv_int(d)};
        g = parts[0] && parts[1] && parts[2] ? own(sc, callv(PTL_OP_cat, 2, v)) : NULL;
    }
    return scope_end(sc, give(n, go, 0, pad_to(sc, g, d, n->input_meta[0].sizes[d])));
}
