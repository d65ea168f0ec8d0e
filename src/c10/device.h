/* device.h -- where a tensor lives.  Mirrors c10/core/Device.h. */
#ifndef PTL_C10_DEVICE_H
#define PTL_C10_DEVICE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum PtlDeviceType {
    PTL_DEVICE_CPU = 0,
    PTL_DEVICE_CUDA = 1,
    PTL_DEVICE_META = 2,   /* sizes, strides and dtype without data: Note [Meta tensors] */
    PTL_DEVICE_TYPE_COUNT
} PtlDeviceType;

typedef struct PtlDevice {
    int8_t type;    /* PtlDeviceType */
    int8_t index;   /* -1: the current device of that type (only before resolution) */
} PtlDevice;

static inline PtlDevice
ptl_device_cpu(void)
{
    PtlDevice d = {PTL_DEVICE_CPU, -1};
    return d;
}

static inline int
ptl_device_equal(PtlDevice a, PtlDevice b)
{
    return a.type == b.type && (a.type != PTL_DEVICE_CUDA || a.index == b.index);
}

/* Note [Meta tensors]
 * ~~~~~~~~~~~~~~~~~~~
 * A tensor on the meta device has sizes, strides, a dtype, a storage offset and a storage
 * whose nbytes is set but whose data is NULL: nothing is allocated, so a meta tensor of
 * 1e12 elements costs a header.  Its dispatch key is Meta (a backend key like CPU); the Meta
 * kernels compute the outputs' sizes, strides and dtypes as the CPU kernels would and run no
 * loop (native/meta.c).  Everything that reads data refuses a meta tensor with PyTorch's
 * error: copying out ("Cannot copy out of meta tensor; no data!"), item(), tolist(),
 * numpy(), DLPack, the buffer protocol. */
const char *ptl_device_type_name(int type);   /* "cpu", "cuda", "meta" */
/* Parses "cpu", "cuda", "cuda:1", "meta"; 0, or -1 with a RuntimeError set. */
int ptl_device_parse(const char *s, PtlDevice *out);

#ifdef __cplusplus
}
#endif
#endif
