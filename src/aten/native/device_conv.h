/* device_conv.h -- how conv.c hands its three convolution primitives to the CUDA backend's
 * implicit-GEMM kernels without including it: the backend (src/cuda/conv_plan.c) sets the
 * hook.  The argument checks, casts and contiguous copies stay the CPU kernel's; what
 * arrives here is contiguous data in the work dtype.  See Note [CUDA convolution] in
 * src/cuda/conv_plan.h and Note [Convolution as GEMM] in conv.c. */
#ifndef PTL_ATEN_NATIVE_DEVICE_CONV_H
#define PTL_ATEN_NATIVE_DEVICE_CONV_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* conv.c's primitives (ORDER: conv_plan.h's switches on kind). */
enum { PTL_DEVICE_CONV_COL_FWD, PTL_DEVICE_CONV_IMG_FWD, PTL_DEVICE_CONV_WGRAD,
       PTL_DEVICE_CONV_IM2COL, PTL_DEVICE_CONV_COL2IM };

/* One primitive over a geometry of three spatial dims (1-D and 2-D put 1 in the leading
 * ones): an image side (img, c_img channels) and a column side (col, c_col channels), kernel
 * k, stride s, padding p, dilation d, groups; n samples; dtype float32 or float64.
 *   COL_FWD: a the weight (c_col, c_img / G, k), b the image (n, c_img, img), bias (c_col)
 *            or NULL -> out the columns (n, c_col, col): a convolution.
 *   IMG_FWD: a the weight (c_col, c_img / G, k), b the columns (n, c_col, col), bias
 *            (c_img) or NULL -> out the image (n, c_img, img): a transposed convolution,
 *            or a convolution's input gradient.
 *   WGRAD:   a the columns (n, c_col, col), b the image (n, c_img, img) -> out
 *            (c_col, c_img / G, k): a convolution's weight gradient.
 * and im2col and col2im themselves (unfold and fold; groups 1, c_col = c_img kvol, a unused):
 *   IM2COL:  b the image (n, c_img, img) of any dtype -> out the columns (n, c_col, col),
 *            raw elements, zero in the padding.
 *   COL2IM:  b the columns (n, c_col, col) -> out the image (n, c_img, img), float32 or
 *            float64: each element the sum of the column elements that land on it. */
typedef struct PtlDeviceConvArgs {
    int32_t kind, dtype;
    const char *a, *b, *bias;
    char *out;
    int64_t n, groups, c_img, c_col;
    int64_t img[3], col[3], k[3], s[3], p[3], d[3];
} PtlDeviceConvArgs;

/* Set by the CUDA backend (NULL until then); 0, or -1 with an error set.  It runs for CUDA
 * tensors and, while ptl_device_reduce_emulation is on, for CPU tensors too. */
extern int (*ptl_device_conv_hook)(const PtlDeviceConvArgs *a);

#ifdef __cplusplus
}
#endif
#endif
