"""gammainc / gammaincc for large a (torch.special's accuracy gaps): the regularized incomplete
gamma functions against SciPy in float64.

KNOWN, not fixed (found by the non-finite audit): src/aten/special_math.h's series for
x < a + 1 stops after 100000 terms, which for a near x needs about 8 sqrt(a) terms: from
a ~ 1e8 the sum is truncated (gammainc(1e9, 1e9) = 0.4992 for 0.500004, gammainc(1e12, 1e12)
= 0.04 for 0.5) and from a ~ 1e17 it is nan (PyTorch and SciPy give 0.5).  The fix is the
uniform asymptotic expansion (Temme) for large a, a change to a header (every object
rebuilds); these tests are strict xfails until then."""
import numpy as np
import pytest
from scipy import special

import pytorchlite as ptl

WORKS = [(1e3, 1e3), (1e5, 1e5), (1e5, 0.99e5), (30.0, 1e300), (1e300, 1.0)]
TRUNCATED = [(1e9, 1e9), (1e12, 1e12), (1e17, 1e17), (1e300, 1e300), (1e150, 1e150)]


def _both(a, x):
    ta = ptl.tensor([a], dtype=ptl.float64)
    tx = ptl.tensor([x], dtype=ptl.float64)
    return ptl.special.gammainc(ta, tx).item(), ptl.special.gammaincc(ta, tx).item()


@pytest.mark.parametrize("a, x", WORKS)
def test_gammainc_large_arguments(a, x):
    p, q = _both(a, x)
    np.testing.assert_allclose([p, q], [special.gammainc(a, x), special.gammaincc(a, x)],
                               rtol=1e-8, atol=1e-300)


@pytest.mark.xfail(strict=True, reason="KNOWN: the series is truncated at 100000 terms for "
                                       "a above ~1e8 (module docstring)")
@pytest.mark.parametrize("a, x", TRUNCATED)
def test_gammainc_truncated_series(a, x):
    p, q = _both(a, x)
    np.testing.assert_allclose([p, q], [special.gammainc(a, x), special.gammaincc(a, x)],
                               rtol=1e-8)
