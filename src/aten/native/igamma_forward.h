/* igamma_forward.h -- igamma's and igammac's forward over many elements at once on vector
 * lanes (igamma_forward.c): Temme's expansion and the loops' prefactor, which binary.c's
 * igamma and igammac loops call (Note [Incomplete gamma forward lanes]). */
#ifndef PTL_ATEN_NATIVE_IGAMMA_FORWARD_H
#define PTL_ATEN_NATIVE_IGAMMA_FORWARD_H

#include <stdint.h>

/* out[i] = P(a[i], x[i]) (upper 0) or Q(a[i], x[i]) (upper 1) for i < n, every element in
 * Temme's region (ptl_igamma_uses_temme); the smaller of P and Q may be taken as 0 where a phi
 * exceeds zero_from: PTL_IGAMMA_TEMME_ZERO_F8 (it is 0 in doubles there) or _F4 (it rounds to 0
 * in float) */
void ptl_igamma_temme_lanes(const double *a, const double *x, double *out, int64_t n,
                            int upper, double zero_from);

/* from a phi = 746 e^(-a phi) and erfc(sqrt(a phi)) are 0 in doubles, and from 110 the smaller
 * side, below e^(-a phi), is under 1e-46 (Note [Incomplete gamma forward lanes]) */
#define PTL_IGAMMA_TEMME_ZERO_F8 746.0
#define PTL_IGAMMA_TEMME_ZERO_F4 110.0

/* out[i] = x^a e^-x / Gamma(a) (ptl_igamma_prefactor) at a[i], x[i] for i < n, every
 * element with 0 < a, x < inf outside Temme's region */
void ptl_igamma_prefactor_lanes(const double *a, const double *x, double *out, int64_t n);

#endif
