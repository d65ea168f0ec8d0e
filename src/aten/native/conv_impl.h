/* conv_impl.h -- what conv.c shares with its float32 kernels in conv_packed.c and
 * conv_packed_wgrad.c and its argument checks in conv_args.c: the geometry of a convolution,
 * the packed kernels' entry points (Note [Packed float32 convolution]) and the checked
 * arguments. */
#ifndef PTL_ATEN_NATIVE_CONV_IMPL_H
#define PTL_ATEN_NATIVE_CONV_IMPL_H

#include <stdint.h>
#include <string.h>

#include "nn_common.h"

/* The geometry of one convolution: an "image" side (the larger, padded tensor) and a
 * "column" side (one entry per kernel placement), three spatial dims each (Note
 * [Convolution as GEMM]). */
typedef struct ConvGeom {
    int64_t groups;
    int64_t img[NN_SPATIAL], col[NN_SPATIAL];
    int64_t k[NN_SPATIAL], s[NN_SPATIAL], p[NN_SPATIAL], d[NN_SPATIAL];
    int64_t img_numel, col_numel, kvol;
} ConvGeom;

/* How conv_packed_fwd reads its weight w. */
typedef enum ConvPackedWeight {
    CONV_PACKED_W_PLAIN,     /* w (co, ci/G, k): y = conv(x, w) */
    CONV_PACKED_W_FLIPPED,   /* w (ci, co/G, k) as the (co, ci/G) weight of groups G, each
                              * group's block transposed and the kernel reversed: the input
                              * gradient of a stride-1 convolution (or one output phase of a
                              * strided one) as a convolution */
} ConvPackedWeight;

/* Where conv_packed_fwd_phases stores a phase's output pixel (z, y, x) of channel o of
 * sample i: y[(i * co + o) * plane + off + z * st[0] + y * st[1] + x * st[2]]. */
typedef struct ConvPackedOut {
    int64_t plane, off, st[NN_SPATIAL];
} ConvPackedOut;

/* One output phase of an input gradient (Note [Input gradient by output phases]): a
 * convolution over the same image as the others, its kernel a box of k taps at `at` in
 * the geometry's kernel, its output col[0] x col[1] x col[2] pixels (the geometry's output
 * at most) stored as out says; w is its weight in CONV_PACKED_W_FLIPPED's layout. */
typedef struct ConvPackedPhase {
    const float *w;
    int64_t k[NN_SPATIAL], at[NN_SPATIAL], col[NN_SPATIAL];
    const ConvPackedOut *out;
} ConvPackedPhase;

/* Whether any of v[0, n) is Inf or NaN (all exponent bits set): the scan of the packed
 * weight gradient's result (conv.c, Note [Packed weight gradient and non-finite inputs]) and
 * of the Winograd path's inputs (conv_winograd.c).  Branch-free, so that it vectorizes for
 * each caller's target (conv_winograd.c wraps it in loop clones). */
static inline int
conv_any_nonfinite(const float *v, int64_t n)
{
    uint32_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, v + i, sizeof u);
        bad |= (u & 0x7f800000u) == 0x7f800000u;
    }
    return bad != 0;
}

/* nbytes (rounded up to 64) at a 64-byte boundary, for the kernels' packed buffers (freed
 * with free); NULL with PyTorch's MemoryError set (conv_args.c). */
void *conv_alloc(size_t nbytes);

/* Whether the packed forward and input-gradient kernels run on this CPU (AVX2 or AVX-512). */
int conv_packed_available(void);
/* Whether conv_packed_wgrad runs on this CPU (AVX2 or AVX-512). */
int conv_packed_wgrad_available(void);

/* y (n, co, cols) = conv(x (n, ci, image), w) + bias (co, or NULL), all contiguous float32;
 * co and ci are the output and input channels of the convolution that g describes.  g's
 * padding is the padding before each dim; the image may end before the last column's taps
 * (they read zeros).  Returns 0, or -1 with the error set (out of memory). */
int conv_packed_fwd(const float *x, const float *w, ConvPackedWeight wkind, const float *bias,
                    float *y, const ConvGeom *g, int64_t n, int64_t ci, int64_t co);

/* The phases ph[0, nph) of an input gradient, each a convolution of x over g (stride 1)
 * with its own sub-kernel, stored into y as each phase's out says; the image's windows are
 * filled once for all phases.  Returns 0, or -1 with the error set. */
int conv_packed_fwd_phases(const float *x, float *y, const ConvPackedPhase *ph, int64_t nph,
                           const ConvGeom *g, int64_t n, int64_t ci, int64_t co);

/* gw (co, ci/G * kvol) = sum over samples and columns of gy (n, co, cols) times the columns
 * of x (n, ci, image): a convolution's weight gradient, all contiguous float32.  The sum is
 * cut into chunks that depend on the shape only, so the result does not depend on the
 * thread count.  Returns 0, or -1 with the error set. */
int conv_packed_wgrad(const float *gy, const float *x, float *gw, const ConvGeom *g, int64_t n,
                      int64_t ci, int64_t co);

/* convolution (s: its stack) and convolution_backward on a channels-last float32 input,
 * computed in that layout (conv_nhwc.c, Note [Channels-last convolution]): 1 with the
 * results on s, 0 when that file does not take the problem (s untouched), -1 with the error
 * set. */
int conv_nhwc_forward(PtlIValue *s);
int conv_nhwc_backward(PtlIValue *s);

/* The Winograd path (conv_winograd.c, Note [Winograd convolution]): a float32 3x3 stride-1
 * convolution of one group, same arguments and result as conv_packed_fwd (up to rounding).
 * conv_winograd_fits says whether it runs a problem: its shape fits and, in the automatic
 * mode, its channel counts pass the measured crossover.  conv_winograd_fwd returns 0, -1
 * with the error set, or 1 without writing y where x or w holds an Inf or a NaN (the caller
 * then runs the direct path). */
enum { CONV_WINOGRAD_AUTO, CONV_WINOGRAD_ALWAYS, CONV_WINOGRAD_NEVER };
/* conv_winograd_fits's pass: the forward or input gradient, or the weight gradient (their
 * crossovers differ) */
enum { CONV_WINOGRAD_DATA, CONV_WINOGRAD_WGRAD };
int conv_winograd_fits(const ConvGeom *g, int64_t ci, int64_t co, int pass);
int conv_winograd_fwd(const float *x, const float *w, ConvPackedWeight wkind, const float *bias,
                      float *y, const ConvGeom *g, int64_t n, int64_t ci, int64_t co);
/* gw (co, ci, 3, 3) = the weight gradient of that convolution from gy (n, co, cols) and x (n,
 * ci, image), as conv_packed_wgrad's (up to rounding; Note [Winograd weight gradient]): 0, -1
 * with the error set, or 1 without writing gw where x or gy holds an Inf or a NaN. */
int conv_winograd_wgrad(const float *gy, const float *x, float *gw, const ConvGeom *g, int64_t n,
                        int64_t ci, int64_t co);
/* The geometry t of the input gradient of a stride-1 convolution g as a convolution of the
 * output gradient (padding k - 1 - p); 0 where g has another stride, a dilation or a padding
 * past k - 1. */
int conv_winograd_grad_geom(const ConvGeom *g, ConvGeom *t);
/* Sets the mode (one of the enum; tests force ALWAYS or NEVER) and returns the old one. */
int conv_winograd_set_mode(int mode);

/* A convolution's int-list arguments, right-aligned to three spatial dims (conv_args.c). */
typedef struct ConvArgs {
    int nd, transposed;
    int64_t stride[3], pad[3], dil[3], opad[3], groups;
} ConvArgs;

/* PyTorch's check_shape_forward, in its order, for convolution(input, weight, bias, stride,
 * padding, dilation, transposed, output_padding, groups) in s; fills a.  -1 with the error
 * set. */
int ptl_conv_check(PtlTensorImpl *x, PtlTensorImpl *w, PtlTensorImpl *bias, const PtlIValue *s,
                   ConvArgs *a);

#endif
