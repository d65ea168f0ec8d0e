/* local_scalar.c -- _local_scalar_dense, the one element of a tensor as a Scalar: what
 * item(), bool(), int() and float() read, and what a tensor subclass's __torch_dispatch__ sees
 * of them.  Mirrors ATen/native/Scalar.cpp (_local_scalar_dense_cpu) and, for CUDA, the
 * device-to-host copy of ATen/native/cuda/CUDAScalar.cu. */
#include "../../c10/error.h"
#include "native.h"

/* _local_scalar_dense(Tensor self) -> Scalar: self's first element as the Scalar of its kind
 * (bool, int, float or complex).  The caller checks that there is one element, as PyTorch's
 * item() does; a tensor with none is refused here, as there.  A CUDA tensor's element comes
 * through a host copy, which waits for the device. */
static int
local_scalar_dense_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *t = s[0].u.t, *host = t;
    if (t->numel == 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "_local_scalar_dense: Empty tensor not supported");
    }
    if (t->device.type != PTL_DEVICE_CPU) {
        PtlDevice cpu = {PTL_DEVICE_CPU, -1};
        if ((host = ptl_to_copy(t, PTL_DTYPE_UNDEFINED, &cpu)) == NULL) {
            return -1;
        }
    }
    const char *p = ptl_tensor_data(host);
    if (host->dtype == PTL_DTYPE_BOOL) {
        s[0] = ptl_iv_bool(*(const uint8_t *)p != 0);
    }
    else if (host->dtype == PTL_DTYPE_COMPLEX64) {
        s[0] = ptl_iv_complex(((const float *)p)[0], ((const float *)p)[1]);
    }
    else if (host->dtype == PTL_DTYPE_COMPLEX128) {
        s[0] = ptl_iv_complex(((const double *)p)[0], ((const double *)p)[1]);
    }
    else if (ptl_dtype_is_floating(host->dtype)) {
        s[0] = ptl_iv_double(ptl_item_double(host));
    }
    else {
        s[0] = ptl_iv_int(ptl_item_int(host));
    }
    if (host != t) {
        ptl_decref(host);
    }
    return 0;
}

static const PtlKernelReg local_scalar_kernels[] = {
    {PTL_OP__local_scalar_dense, PTL_KEY_CPU, local_scalar_dense_cpu},
    {PTL_OP__local_scalar_dense, PTL_KEY_CUDA, local_scalar_dense_cpu},
};
PTL_DEFINE_REGISTER(local_scalar_kernels)
