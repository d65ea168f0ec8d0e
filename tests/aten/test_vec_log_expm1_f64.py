"""float64 log, log1p, expm1, log10, sinh, cosh and atanh in vector lanes (Note [Vector
float64 log, log1p, expm1] in unary.c): the ulp error against NumPy's long double (x86's
64-bit mantissa, so the reference itself is exact to about 2^-11 of a float64 ulp) on random
points over every range the formulas split, the special values as NumPy's float64 results (which are PyTorch's), every
tail length, 0-dim, size-0 and strided inputs (the portable loop).  The file reruns with the
portable loops and with AVX2 only (PTL_CPU_CAPABILITY=default, avx2)."""
import os

import numpy as np
import pytest

import pytorchlite as ptl
from helpers import assert_inplace_and_out_match, rerun_with_capability, same_each

# the bound on the ulp error of each op (the portable loops are libm's, under 1 ulp)
BOUNDS = {"log": 1.0, "log1p": 1.5, "expm1": 1.5, "log10": 2.0, "sinh": 2.0, "cosh": 2.0,
          "atanh": 2.0}
REF = {"log": np.log, "log1p": np.log1p, "expm1": np.expm1, "log10": np.log10,
       "sinh": np.sinh, "cosh": np.cosh, "atanh": np.arctanh}
RANGES = {
    "log": [(0, 1e300), (0.5, 2), (1 - 1e-6, 1 + 1e-6), (1e-320, 1e-300), (0.7, 0.72)],
    # below and above x = 1 (where the rounding error's formula switches), near -1, tiny
    "log1p": [(-1, 1), (0.99, 1.01), (1, 1e300), (-1, -0.999999), (-1e-10, 1e-10),
              (-0.3, 0.42), (1e10, 1e17)],
    # n = 0 (|x| <= ln2 / 2), n = +-1, large n, near the overflow and the -1 floor
    "expm1": [(-40, 40), (-0.35, 0.35), (-1.1, 1.1), (-1e-10, 1e-10), (700, 709.78),
              (-745, -30), (36, 40)],
    "log10": [(0, 1e300), (0.5, 2), (9, 11), (1e-320, 1e-300), (1 - 1e-6, 1 + 1e-6)],
    # the four formulas' ranges: below ln2 / 2 (cosh), below 1 (sinh), below 22, above 709
    "sinh": [(-30, 30), (-1.2, 1.2), (-1e-9, 1e-9), (21, 23), (-710.4, -705), (705, 710.4)],
    "cosh": [(-30, 30), (-0.4, 0.4), (-1e-9, 1e-9), (21, 23), (-710.4, -705), (705, 710.4)],
    # below and above 1 / 2, near +-1, tiny
    "atanh": [(-1, 1), (-0.6, 0.6), (0.999999, 1), (-1, -0.999999), (-1e-9, 1e-9)],
}
SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 2.2250738585072014e-308,
            -2.2250738585072014e-308, 1.7976931348623157e308, -1.7976931348623157e308, 1.0,
            -1.0, 2.0, -2.0, 0.5, -0.5, 1e-300, -1e-300, 2.0 ** -53, -(2.0 ** -53), 2.0 ** -54,
            1 - 2.0 ** -53, -1 + 2.0 ** -53, 709.782712893384, 709.7827128933841, 709.78,
            -40.0, -40.000001, -37.5, 2.0 ** 53, 2.0 ** 53 + 2, 1e300, 0.34657359027997264,
            -0.34657359027997264, 1e-16, -1e-16]


def _ulps(got, x, name):
    """|got - ref| in float64 ulps of ref, ref computed in long double."""
    with np.errstate(all="ignore"):
        ref = REF[name](x.astype(np.longdouble))
        rounded = ref.astype(np.float64)
        scale = np.spacing(np.minimum(np.abs(rounded), np.finfo(np.float64).max))
        err = np.abs(got.astype(np.longdouble) - ref) / scale.astype(np.longdouble)
    both = (got == rounded) | (np.isnan(got) & np.isnan(rounded))
    return np.where(both, 0.0, err.astype(np.float64))


def _points(name):
    rng = np.random.default_rng(11)
    return np.concatenate([rng.uniform(a, b, 200000) for a, b in RANGES[name]])


@pytest.mark.parametrize("name", list(REF))
def test_max_ulp(name):
    x = _points(name)
    got = getattr(ptl, name)(ptl.tensor(x)).numpy()
    err = _ulps(got, x, name)
    assert err.max() <= BOUNDS[name], (err.max(), x[np.argmax(err)])


@pytest.mark.parametrize("name", list(REF))
def test_special_values(name):
    x = np.array(SPECIALS)
    got = getattr(ptl, name)(ptl.tensor(x)).numpy()
    with np.errstate(all="ignore"):
        ref = REF[name](x)
    exact = np.isinf(ref) | np.isnan(ref) | (ref == 0) | (np.abs(ref) == 1)
    assert same_each(got[exact], ref[exact]).all(), (x[exact], got[exact], ref[exact])
    assert _ulps(got, x, name).max() <= BOUNDS[name]


@pytest.mark.parametrize("name", list(REF))
def test_every_tail_length_and_shapes(name):
    x = _points(name)[::997][:70]
    whole = getattr(ptl, name)(ptl.tensor(x)).numpy()
    for n in range(len(x) + 1):
        part = getattr(ptl, name)(ptl.tensor(x[:n])).numpy()
        assert np.array_equal(part, whole[:n]), n
    assert getattr(ptl, name)(ptl.tensor(np.float64(0.25))).shape == ()
    assert getattr(ptl, name)(ptl.tensor(np.zeros(0))).shape == (0,)
    # strided data takes the portable (libm) loop: within the bound of each other
    t = ptl.tensor(np.repeat(x, 2))[::2]
    assert _ulps(getattr(ptl, name)(t).numpy(), x, name).max() <= BOUNDS[name]
    # in place and out= reach the same loops
    assert_inplace_and_out_match(name, x, whole)


@pytest.mark.skipif("PTL_CPU_CAPABILITY" in os.environ,
                    reason="already running with a capability chosen by a parent run")
@pytest.mark.parametrize("cap", ["default", "avx2"])
def test_portable_and_avx2_loops(cap):
    """Reruns this file with the vector loops switched off, and with AVX2 only."""
    rerun_with_capability(__file__, cap)
