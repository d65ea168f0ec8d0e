/* error.h -- the thread-local error slot.  Mirrors c10/util/Exception.h.
 *
 * Note [Error slot]
 * ~~~~~~~~~~~~~~~~~
 * Fallible C functions return NULL or -1 after ptl_error_set().  The first error set on a
 * thread wins until ptl_error_clear(); later calls on the way up keep the original message.
 * Only src/python/errors.c turns the kind into a Python exception.  Nothing here aborts on
 * user input. */
#ifndef PTL_C10_ERROR_H
#define PTL_C10_ERROR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum PtlErrorKind {
    PTL_ERR_NONE = 0,
    PTL_ERR_RUNTIME,
    PTL_ERR_INDEX,
    PTL_ERR_TYPE,
    PTL_ERR_VALUE,
    PTL_ERR_NOT_IMPLEMENTED,
    PTL_ERR_MEMORY,
    PTL_ERR_LINALG,   /* a singular or non-positive-definite matrix: torch.linalg.LinAlgError */
    PTL_ERR_OUT_OF_MEMORY,   /* a device allocator is out of memory: torch.OutOfMemoryError */
    PTL_ERR_PYTHON,   /* last; a Python exception is already set (src/python callbacks) */
} PtlErrorKind;

#if defined(__GNUC__)
#define PTL_PRINTF(F, A) __attribute__((format(printf, F, A)))
#else
#define PTL_PRINTF(F, A)
#endif

int ptl_error_set(PtlErrorKind kind, const char *fmt, ...) PTL_PRINTF(2, 3); /* returns -1 */
PtlErrorKind ptl_error_kind(void);
const char *ptl_error_message(void);
void ptl_error_clear(void);
/* A non-fatal warning; src/python flushes the buffer with PyErr_WarnEx on the way out.  The
 * buffer keeps the first 4 warnings of a call, in order (later ones are dropped). */
void ptl_warn(const char *fmt, ...) PTL_PRINTF(1, 2);
/* The oldest warning not yet taken, or NULL when every one has been taken, which also clears
 * the buffer: call it until it returns NULL.  A text stays valid until the next ptl_warn. */
const char *ptl_warning_take(void);
/* Writes sizes[0..dim) as PyTorch prints an IntArrayRef, "[2, 3]" ("[]" when dim is 0),
 * into buf[0..n), cut short when it does not fit.  Returns buf, so that a call can stand as
 * an argument of the message it goes into.  The one shape formatter of every message. */
const char *ptl_format_sizes(char *buf, size_t n, int64_t dim, const int64_t *sizes);
/* The same list with other brackets and separator: "(1x2x2)" is
 * ptl_format_ints(buf, n, 3, v, "(", "x", ")"). */
const char *ptl_format_ints(char *buf, size_t n, int64_t len, const int64_t *v,
                            const char *open, const char *sep, const char *close);

#define PTL_CHECK(COND, KIND, ...)                  \
    do {                                            \
        if (!(COND)) {                              \
            ptl_error_set((KIND), __VA_ARGS__);     \
            goto error;                             \
        }                                           \
    } while (0)

#ifdef PTL_DEBUG
#include <stdio.h>
#include <stdlib.h>
#define PTL_INTERNAL_ASSERT(COND)                                                   \
    do {                                                                            \
        if (!(COND)) {                                                              \
            fprintf(stderr, "%s:%d: internal assert failed: %s\n", __FILE__,         \
                    __LINE__, #COND);                                               \
            abort();                                                                \
        }                                                                           \
    } while (0)
#else
#define PTL_INTERNAL_ASSERT(COND) ((void)0)
#endif

#ifdef __cplusplus
}
#endif
#endif
