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
    return a.type == b.type && (a.type == PTL_DEVICE_CPU || a.index == b.index);
}

const char *ptl_device_type_name(int type);   /* "cpu", "cuda" */
/* Parses "cpu", "cuda", "cuda:1"; 0, or -1 with a RuntimeError set. */
int ptl_device_parse(const char *s, PtlDevice *out);

#ifdef __cplusplus
}
#endif
#endif
