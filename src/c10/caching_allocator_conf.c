/* caching_allocator_conf.c -- PTL_CUDA_ALLOC_CONF, the caching allocator's settings in
 * PYTORCH_CUDA_ALLOC_CONF's syntax ("key:value,key:value").  Mirrors
 * c10/cuda/CUDAAllocatorConfig.cpp.  Every key and value is checked: an unknown key or a bad
 * value is an error naming it, never ignored. */
#include "caching_allocator.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

#define MB ((size_t)1 << 20)
/* max_split_size_mb must exceed the large pool's 20 MiB segments (Note [Caching allocator]) */
#define MIN_MAX_SPLIT_MB 20

/* The value of one key as a number, or -1 with an error naming it. */
static int
parse_number(const char *key, const char *value, size_t len, double *out)
{
    char buf[64], *end = NULL;
    if (len == 0 || len >= sizeof(buf)) {
        goto bad;
    }
    memcpy(buf, value, len);
    buf[len] = '\0';
    errno = 0;
    *out = strtod(buf, &end);
    if (*end != '\0' || errno != 0 || !isfinite(*out)) {
        goto bad;
    }
    return 0;
bad:
    return ptl_error_set(PTL_ERR_RUNTIME, "Invalid value '%.*s' for %s in PTL_CUDA_ALLOC_CONF",
                         (int)len, value, key);
}

static int
conf_set(PtlAllocatorConf *c, const char *key, size_t klen, const char *value, size_t vlen)
{
    double v = 0;
#define IS_KEY(NAME) (klen == strlen(NAME) && strncmp(key, NAME, klen) == 0)
    if (IS_KEY("max_split_size_mb")) {
        if (parse_number("max_split_size_mb", value, vlen, &v) < 0) {
            return -1;
        }
        if (v != floor(v) || v <= (double)MIN_MAX_SPLIT_MB) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "CachingAllocator option max_split_size_mb too small, must be "
                                 "> %d (got '%.*s')", MIN_MAX_SPLIT_MB, (int)vlen, value);
        }
        c->max_split_size = v >= (double)(SIZE_MAX / MB) ? SIZE_MAX : (size_t)v * MB;
        return 0;
    }
    if (IS_KEY("garbage_collection_threshold")) {
        if (parse_number("garbage_collection_threshold", value, vlen, &v) < 0) {
            return -1;
        }
        if (v <= 0.0 || v >= 1.0) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "garbage_collect_threshold too %s, set it 0.0~1.0 (got '%.*s')",
                                 v <= 0.0 ? "small" : "big", (int)vlen, value);
        }
        c->garbage_collection_threshold = v;
        return 0;
    }
    if (IS_KEY("roundup_power2_divisions")) {
        if (parse_number("roundup_power2_divisions", value, vlen, &v) < 0) {
            return -1;
        }
        size_t d = v >= 0 && v <= 65536 && v == floor(v) ? (size_t)v : 3;
        if (d == 0 || (d & (d - 1)) != 0) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "For roundups, the divisions has to be power of 2 (got '%.*s')",
                                 (int)vlen, value);
        }
        c->roundup_power2_divisions = d;
        return 0;
    }
    if (IS_KEY("expandable_segments")) {
        if (vlen == 5 && strncmp(value, "False", 5) == 0) {
            return 0;
        }
        if (vlen == 4 && strncmp(value, "True", 4) == 0) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "expandable_segments:True is not supported by pytorchlite's "
                                 "caching allocator (PTL_CUDA_ALLOC_CONF)");
        }
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Expected a single True/False argument for expandable_segments "
                             "in PTL_CUDA_ALLOC_CONF (got '%.*s')", (int)vlen, value);
    }
#undef IS_KEY
    return ptl_error_set(PTL_ERR_RUNTIME, "Unrecognized key '%.*s' in PTL_CUDA_ALLOC_CONF",
                         (int)klen, key);
}

int
ptl_allocator_conf_parse(const char *conf, PtlAllocatorConf *out)
{
    PtlAllocatorConf c = {SIZE_MAX, 0.0, 0};
    const char *p = conf != NULL ? conf : "";
    while (*p != '\0') {
        size_t len = strcspn(p, ",");
        const char *colon = memchr(p, ':', len);
        const char *key = p;
        size_t klen = colon != NULL ? (size_t)(colon - p) : len;
        while (klen > 0 && (*key == ' ')) {
            key++;
            klen--;
        }
        while (klen > 0 && key[klen - 1] == ' ') {
            klen--;
        }
        if (colon == NULL) {
            if (klen == 0) {   /* an empty item, as in "a:1,,b:2" or a trailing comma */
                p += len + (p[len] == ',');
                continue;
            }
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "Expected 'key:value' in PTL_CUDA_ALLOC_CONF, got '%.*s'",
                                 (int)len, p);
        }
        const char *value = colon + 1;
        size_t vlen = (size_t)(p + len - value);
        while (vlen > 0 && *value == ' ') {
            value++;
            vlen--;
        }
        while (vlen > 0 && value[vlen - 1] == ' ') {
            vlen--;
        }
        if (conf_set(&c, key, klen, value, vlen) < 0) {
            return -1;
        }
        p += len + (p[len] == ',');
    }
    *out = c;
    return 0;
}
