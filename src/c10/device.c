/* device.c -- device names.  Mirrors c10/core/Device.cpp. */
#include "device.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"

const char *
ptl_device_type_name(int type)
{
    return type == PTL_DEVICE_CUDA ? "cuda" : type == PTL_DEVICE_META ? "meta" : "cpu";
}

int
ptl_device_parse(const char *s, PtlDevice *out)
{
    const char *colon = strchr(s, ':');
    size_t n = colon ? (size_t)(colon - s) : strlen(s);
    long index = -1;

    if (n == 3 && strncmp(s, "cpu", 3) == 0) {
        out->type = PTL_DEVICE_CPU;
    }
    else if (n == 4 && strncmp(s, "cuda", 4) == 0) {
        out->type = PTL_DEVICE_CUDA;
    }
    else if (n == 4 && strncmp(s, "meta", 4) == 0) {
        out->type = PTL_DEVICE_META;
    }
    else {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Expected one of cpu, cuda, meta device type at start of device string: %s",
                             s);
    }
    if (colon != NULL) {
        char *end = NULL;
        index = strtol(colon + 1, &end, 10);
        if (colon[1] == '\0' || *end != '\0' || index < 0 || index > 127 ||
            (colon[1] == '0' && colon[2] != '\0')) {
            return ptl_error_set(PTL_ERR_RUNTIME, "Invalid device string: '%s'", s);
        }
    }
    out->index = (int8_t)index;
    return 0;
}
