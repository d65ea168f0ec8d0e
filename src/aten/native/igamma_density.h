/* igamma_density.h -- the CPU kernel of _ptl_igamma_density (igamma_density.c), which
 * binary.c registers with igamma's and igammac's. */
#ifndef PTL_ATEN_NATIVE_IGAMMA_DENSITY_H
#define PTL_ATEN_NATIVE_IGAMMA_DENSITY_H

#include "native.h"

/* x^(a-1) e^-x / Gamma(a) of s[0] = a, s[1] = x in their common floating dtype (Note
 * [Incomplete gamma density lanes]): 0, or -1 with the error set */
int ptl_igamma_density_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s);

#endif
