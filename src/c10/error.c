/* error.c -- the thread-local error slot and warning buffer.  See Note [Error slot]. */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>

#define PTL_ERR_MSG_MAX 1024

static _Thread_local PtlErrorKind err_kind = PTL_ERR_NONE;
static _Thread_local char err_msg[PTL_ERR_MSG_MAX];
/* the warnings of one call, in order (PyTorch's handler emits each: frexp's two resized
 * outputs warn twice); past PTL_WARN_MAX the first ones are kept.  ptl_warning_take hands
 * them out one per call, oldest first, and clears the buffer when it returns NULL */
#define PTL_WARN_MAX 4
static _Thread_local char warn_msg[PTL_WARN_MAX][PTL_ERR_MSG_MAX];
static _Thread_local int warn_count = 0, warn_next = 0;

int
ptl_error_set(PtlErrorKind kind, const char *fmt, ...)
{
    if (err_kind != PTL_ERR_NONE) {
        return -1;   /* first wins */
    }
    err_kind = kind;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err_msg, sizeof(err_msg), fmt, ap);
    va_end(ap);
    return -1;
}

PtlErrorKind
ptl_error_kind(void)
{
    return err_kind;
}

const char *
ptl_error_message(void)
{
    return err_kind == PTL_ERR_NONE ? "unknown error (no message was set)" : err_msg;
}

void
ptl_error_clear(void)
{
    err_kind = PTL_ERR_NONE;
    err_msg[0] = '\0';
}

void
ptl_warn(const char *fmt, ...)
{
    if (warn_count == PTL_WARN_MAX) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(warn_msg[warn_count++], sizeof(warn_msg[0]), fmt, ap);
    va_end(ap);
}

const char *
ptl_warning_take(void)
{
    if (warn_next == warn_count) {
        warn_count = warn_next = 0;
        return NULL;
    }
    return warn_msg[warn_next++];
}

const char *
ptl_format_ints(char *buf, size_t n, int64_t len, const int64_t *v, const char *open,
                const char *sep, const char *close)
{
    size_t off = (size_t)snprintf(buf, n, "%s", open);
    for (int64_t i = 0; i < len && off < n; i++) {
        off += (size_t)snprintf(buf + off, n - off, "%s%lld", i ? sep : "", (long long)v[i]);
    }
    if (off < n) {
        snprintf(buf + off, n - off, "%s", close);
    }
    return buf;
}

const char *
ptl_format_sizes(char *buf, size_t n, int64_t dim, const int64_t *sizes)
{
    return ptl_format_ints(buf, n, dim, sizes, "[", ", ", "]");
}
