/* block_load.h -- loading n elements of a dtype, st bytes apart, into a double or int64
 * buffer, and storing such a buffer back, one function per dtype chosen by indexing a
 * table with the dtype (ORDER DTYPE).  Booleans load as 0 / 1; integers store by C
 * conversion; float16 and bfloat16 round to nearest even.  The reductions and the scans
 * walk their runs a block at a time through these.  Complex dtypes have no entries (the
 * Complex dispatch key keeps them from these kernels, Note [Complex dtypes]). */
#ifndef PTL_ATEN_NATIVE_BLOCK_LOAD_H
#define PTL_ATEN_NATIVE_BLOCK_LOAD_H

#include "../../c10/dtype.h"

typedef void (*PtlBlockLoadD)(const char *p, int64_t st, int64_t n, double *buf);
typedef void (*PtlBlockLoadI)(const char *p, int64_t st, int64_t n, int64_t *buf);
typedef void (*PtlBlockStoreD)(char *p, int64_t st, int64_t n, const double *buf);
typedef void (*PtlBlockStoreI)(char *p, int64_t st, int64_t n, const int64_t *buf);

extern const PtlBlockLoadD ptl_block_load_d[PTL_DTYPE_COUNT];   /* every real dtype */
extern const PtlBlockLoadI ptl_block_load_i[PTL_DTYPE_COUNT];   /* bool and integers */
extern const PtlBlockStoreI ptl_block_store_i[PTL_DTYPE_COUNT]; /* bool and integers */
extern const PtlBlockStoreD ptl_block_store_d[PTL_DTYPE_COUNT]; /* floating dtypes */

#endif
