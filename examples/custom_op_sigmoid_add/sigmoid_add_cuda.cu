/* sigmoid_add_cuda.cu -- the CUDA kernel of myops::sigmoid_add (z = sigmoid(x) + y), loaded
 * after sigmoid_add.c, which defines the operator and its backward.  Built with nvcc; runs
 * on a GPU. */
#include <cuda_runtime.h>

#include <pytorchlite/ptl_api.h>

/* z[i] = sigmoid(x[i]) + y[i], one thread per element */
template <typename T>
__global__ void
sigmoid_add_kernel(const T *x, const T *y, T *z, int64_t n)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        z[i] = T(1) / (T(1) + exp(-x[i])) + y[i];
    }
}

static int
sigmoid_add_cuda(const PtlApiOperator *op, PtlApiStack *stack, void *data)
{
    (void)op;
    (void)data;
    PtlApiTensor *x = ptl_api_stack_tensor(stack, 0), *y = ptl_api_stack_tensor(stack, 1);
    if (x == NULL || y == NULL) {
        return -1;
    }
    if (!ptl_api_is_contiguous(x) || !ptl_api_is_contiguous(y) ||
        ptl_api_numel(x) != ptl_api_numel(y) || ptl_api_dtype(x) != ptl_api_dtype(y) ||
        (ptl_api_dtype(x) != PTL_API_FLOAT32 && ptl_api_dtype(x) != PTL_API_FLOAT64)) {
        return ptl_api_set_error(PTL_API_TYPE_ERROR, "sigmoid_add (CUDA): expected contiguous "
                                 "float32 or float64 tensors of the same size");
    }
    PtlApiTensor *z = ptl_api_empty_like(x);
    if (z == NULL) {
        return -1;
    }
    int64_t n = ptl_api_numel(z);
    unsigned blocks = (unsigned)((n + 255) / 256);
    if (n > 0 && ptl_api_dtype(x) == PTL_API_FLOAT64) {
        sigmoid_add_kernel<<<blocks, 256>>>((const double *)ptl_api_data_ptr(x),
                                            (const double *)ptl_api_data_ptr(y),
                                            (double *)ptl_api_data_ptr(z), n);
    }
    else if (n > 0) {
        sigmoid_add_kernel<<<blocks, 256>>>((const float *)ptl_api_data_ptr(x),
                                            (const float *)ptl_api_data_ptr(y),
                                            (float *)ptl_api_data_ptr(z), n);
    }
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) {
        ptl_api_release(z);
        return ptl_api_set_error(PTL_API_RUNTIME_ERROR, "sigmoid_add (CUDA): %s",
                                 cudaGetErrorString(err));
    }
    ptl_api_stack_clear(stack);
    int rc = ptl_api_push_tensor(stack, z);
    ptl_api_release(z);
    return rc;
}

PTL_LIBRARY_IMPL(myops, CUDA, m)
{
    ptl_api_impl(m, "sigmoid_add", sigmoid_add_cuda, NULL);
}
