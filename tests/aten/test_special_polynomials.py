"""torch.special's orthogonal polynomials: Chebyshev T, U, V, W and their shifted forms,
Hermite H and He, Laguerre L and Legendre P (src/aten/native/special.c over
src/aten/polynomial_math.h; Note [Orthogonal polynomials]).

Accuracy is measured against mpmath (40 digits) at random x inside and outside the interval
where each polynomial oscillates and random degrees k up to 60 (and up to 400 for some), in
ulps of max(|p_k(x)|, E(x, k)), E the polynomial's size where it oscillates (1 for T and
P, k+1 for U, 2k+1 for V and W on [-1, 1]; e^(x/2) for L at x >= 0; e^(x^2/2) sqrt(2^k k!)
for H and e^(x^2/4) sqrt(k!) for He; 0 elsewhere, i.e. plain relative error): float64
within 8 + 2k ulps (the recurrences and the phase k acos x lose about one ulp per degree at
worst), float32 within 1 ulp (the double result rounded once).  The degree rules (n
truncated, n < 0 or NaN gives 0), the special values, shapes, dtype promotion, Python
numbers, out= and the lack of a derivative are checked, and test_matches_torch compares
with PyTorch."""
import math

import mpmath
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import assert_raises_like_torch, torch, torch_ref

S = ptl.special
INF, NAN = math.inf, math.nan


def _u(k, x):
    return mpmath.chebyu(k, x) if k >= 0 else mpmath.mpf(0)


# name -> (mpmath reference p(k, x), the interval where it oscillates or None, E(x, k))
def _cheb_env(size):
    return lambda x, k: size(k) if abs(x) <= 1 else 0.0


FAMILIES = {
    "chebyshev_polynomial_t": (lambda k, x: mpmath.chebyt(k, x), _cheb_env(lambda k: 1.0)),
    "chebyshev_polynomial_u": (_u, _cheb_env(lambda k: k + 1.0)),
    "chebyshev_polynomial_v": (lambda k, x: _u(k, x) - _u(k - 1, x),
                               _cheb_env(lambda k: 2 * k + 1.0)),
    "chebyshev_polynomial_w": (lambda k, x: _u(k, x) + _u(k - 1, x),
                               _cheb_env(lambda k: 2 * k + 1.0)),
    "hermite_polynomial_h": (lambda k, x: mpmath.hermite(k, x),
                             lambda x, k: math.exp(x * x / 2 + (k * math.log(2) +
                                                                math.lgamma(k + 1)) / 2)),
    "hermite_polynomial_he": (lambda k, x: mpmath.hermite(k, x / mpmath.sqrt(2)) *
                              mpmath.mpf(2) ** (-mpmath.mpf(k) / 2),
                              lambda x, k: math.exp(x * x / 4 + math.lgamma(k + 1) / 2)),
    "laguerre_polynomial_l": (lambda k, x: mpmath.laguerre(k, 0, x),
                              lambda x, k: math.exp(x / 2) if x >= 0 else 0.0),
    "legendre_polynomial_p": (lambda k, x: mpmath.legendre(k, x), _cheb_env(lambda k: 1.0)),
}
for _kind in "tuvw":
    _ref, _env = FAMILIES["chebyshev_polynomial_" + _kind]
    FAMILIES["shifted_chebyshev_polynomial_" + _kind] = (
        (lambda r: lambda k, x: r(k, 2 * x - 1))(_ref),
        (lambda e: lambda x, k: e(2 * x - 1, k))(_env))
NAMES = sorted(FAMILIES)

# x ranges: the oscillation interval and beyond
RANGES = {"laguerre_polynomial_l": [(0, 60), (-3, 0)],
          "hermite_polynomial_h": [(-6, 6)], "hermite_polynomial_he": [(-8, 8)]}


def _samples(name, seed):
    rng = np.random.default_rng(seed)
    shifted = name.startswith("shifted")
    ranges = RANGES.get(name, [(0, 1), (-1, 2)] if shifted else [(-1, 1), (-3, 3)])
    xs, ks = [], []
    for lo, hi in ranges:
        xs.append(rng.uniform(lo, hi, 70))
        ks.append(rng.integers(0, 61, 70))
    if name not in ("hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l"):
        lo, hi = ranges[0]
        xs.append(rng.uniform(lo, hi, 20))
        ks.append(rng.integers(61, 400, 20))
    return np.concatenate(xs), np.concatenate(ks).astype(np.float64)


def _errors(name, x, k, got, dtype):
    ref_fn, env = FAMILIES[name]
    spacing = np.spacing if dtype == np.float64 else (lambda v: np.spacing(np.float32(v)))
    out = []
    with mpmath.workdps(40):
        for xi, ki, g in zip(x, k, got):
            r = float(ref_fn(int(ki), mpmath.mpf(float(xi))))
            if not np.isfinite(r) or r == 0 or (dtype == np.float32 and abs(r) > 3e38):
                continue
            scale = max(abs(r), env(float(xi), int(ki)))
            if dtype == np.float32 and scale > 3e38:
                continue
            out.append((abs(float(g) - r) / float(spacing(scale)), xi, ki, g, r))
    return out


@pytest.mark.parametrize("name", NAMES)
def test_float64_accuracy(name):
    x, k = _samples(name, len(name))
    got = getattr(S, name)(ptl.tensor(x), ptl.tensor(k)).numpy()
    errs = _errors(name, x, k, got, np.float64)
    assert len(errs) > 60
    bad = [e for e in errs if e[0] > 8 + 2 * e[2]]
    assert not bad, bad[:3]


@pytest.mark.parametrize("name", NAMES)
def test_float32_accuracy(name):
    x, k = _samples(name, len(name) + 1)
    x = x.astype(np.float32).astype(np.float64)
    got = getattr(S, name)(ptl.tensor(x, dtype=ptl.float32),
                           ptl.tensor(k, dtype=ptl.float32)).numpy()
    errs = _errors(name, x, k, got, np.float32)
    assert len(errs) > 40   # H_k(x) passes float32's range for large k and |x|
    bad = [e for e in errs if e[0] > 1]
    assert not bad, bad[:3]


@pytest.mark.parametrize("name", NAMES)
def test_degree_rules(name):
    fn = getattr(S, name)
    x = ptl.tensor([0.3, 0.3, 0.3, 0.3, 0.3, NAN, NAN, 0.3, 0.3], dtype=ptl.float64)
    n = ptl.tensor([2.7, -1.0, -0.5, NAN, 0.0, 0.0, 3.0, INF, 2.0**63], dtype=ptl.float64)
    got = fn(x, n).tolist()
    assert got[0] == fn(ptl.tensor([0.3], dtype=ptl.float64), 2.0).item()   # truncated
    # n < 0, NaN n and n >= 2^63: 0 (PyTorch's value, from its cast to int64)
    assert got[1] == 0.0 and got[3] == 0.0 and got[7] == 0.0 and got[8] == 0.0
    assert got[2] == 1.0 and got[4] == 1.0 and got[5] == 1.0   # degree 0, NaN x included
    assert math.isnan(got[6])


# (x, k, expected) at the ends of [-1, 1] and at the infinities
ENDS = {
    "chebyshev_polynomial_t": [(1.0, 5, 1.0), (-1.0, 5, -1.0), (-1.0, 4, 1.0), (INF, 3, INF),
                               (-INF, 3, -INF), (-INF, 2, INF)],
    "chebyshev_polynomial_u": [(1.0, 5, 6.0), (-1.0, 5, -6.0), (-1.0, 40, 41.0),
                               (-INF, 3, -INF)],
    "chebyshev_polynomial_v": [(1.0, 5, 1.0), (-1.0, 5, -11.0), (-1.0, 40, 81.0)],
    "chebyshev_polynomial_w": [(1.0, 5, 11.0), (-1.0, 5, -1.0), (1.0, 40, 81.0)],
    "shifted_chebyshev_polynomial_t": [(1.0, 7, 1.0), (0.0, 7, -1.0), (INF, 2, INF)],
    "shifted_chebyshev_polynomial_u": [(1.0, 7, 8.0), (0.0, 7, -8.0)],
    "shifted_chebyshev_polynomial_v": [(1.0, 7, 1.0), (0.0, 7, -15.0)],
    "shifted_chebyshev_polynomial_w": [(1.0, 7, 15.0), (0.0, 7, -1.0)],
    "hermite_polynomial_h": [(INF, 3, INF), (-INF, 3, -INF), (-INF, 2, INF), (0.0, 3, 0.0)],
    "hermite_polynomial_he": [(INF, 3, INF), (-INF, 3, -INF), (0.0, 4, 3.0)],
    "laguerre_polynomial_l": [(INF, 3, -INF), (INF, 2, INF), (-INF, 3, INF), (0.0, 9, 1.0)],
    "legendre_polynomial_p": [(1.0, 9, 1.0), (-1.0, 9, -1.0), (-1.0, 8, 1.0), (-INF, 3, -INF)],
}


@pytest.mark.parametrize("name", NAMES)
def test_ends_and_infinities(name):
    x, k, want = zip(*ENDS[name])
    got = getattr(S, name)(ptl.tensor(list(x), dtype=ptl.float64),
                           ptl.tensor(list(k), dtype=ptl.float64)).tolist()
    assert got == list(want), (got, want)


@pytest.mark.parametrize("name", NAMES)
def test_shapes_dtypes_numbers_and_out(name):
    fn = getattr(S, name)
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (3, 1))
    n = np.array([0.0, 1.0, 4.0, 9.0])
    want = fn(ptl.tensor(x), ptl.tensor(n)).numpy()
    assert want.shape == (3, 4)
    # non-contiguous operands, 0-dim and size-0 ones
    xt = ptl.tensor(np.repeat(x, 4, axis=1).T.copy()).t()
    np.testing.assert_array_equal(fn(xt, ptl.tensor(n)).numpy(), want)
    assert fn(ptl.tensor(0.5), ptl.tensor(3.0)).shape == ()
    assert fn(ptl.zeros(0, 1), ptl.ones(4)).shape == (0, 4)
    # Python numbers for either operand; integers promote to the default float
    np.testing.assert_array_equal(fn(ptl.tensor(x), 4).numpy()[:, 0], want[:, 2])
    np.testing.assert_array_equal(fn(float(x[1, 0]), ptl.tensor(n)).numpy(), want[1])
    assert fn(ptl.tensor(x, dtype=ptl.float32), 4).dtype == ptl.float32
    assert fn(ptl.tensor([1, 2]), ptl.tensor([2, 3])).dtype == ptl.float32
    assert fn(ptl.tensor([0.5], dtype=ptl.float32), ptl.tensor([2.0], dtype=ptl.float64)
              ).dtype == ptl.float64
    # out=
    out = ptl.empty(3, 4, dtype=ptl.float64)
    assert fn(ptl.tensor(x), ptl.tensor(n), out=out) is out
    np.testing.assert_array_equal(out.numpy(), want)
    # not differentiable, as in PyTorch
    r = fn(ptl.tensor(x, requires_grad=True), ptl.tensor(n))
    assert not r.requires_grad


def test_keyword_names_are_pytorchs():
    t = ptl.tensor([0.5, -0.25], dtype=ptl.float64)
    np.testing.assert_array_equal(S.chebyshev_polynomial_t(x=t, n=3).numpy(),
                                  S.chebyshev_polynomial_t(t, 3).numpy())
    np.testing.assert_array_equal(S.airy_ai(x=t).numpy(), S.airy_ai(t).numpy())
    np.testing.assert_array_equal(S.entr(input=t.abs()).numpy(), S.entr(t.abs()).numpy())
    with pytest.raises(TypeError):
        S.chebyshev_polynomial_t(input=t, n=2)


def test_two_numbers_are_a_type_error():
    assert_raises_like_torch(lambda lib: lib.special.chebyshev_polynomial_t(0.5, 2),
                             TypeError, "special_chebyshev_polynomial_t() received an invalid "
                             "combination of arguments - got (float, int)")


@pytest.mark.parametrize("name", ["legendre_polynomial_p", "chebyshev_polynomial_t"])
def test_one_and_two_threads_agree(name):
    """The iterator splits a large pointwise op among threads: the split changes nothing."""
    rng = np.random.default_rng(12)
    x = ptl.tensor(rng.uniform(-1.5, 1.5, 262147))
    n = ptl.tensor(np.arange(262147) % 40.0)
    before = ptl.get_num_threads()
    try:
        ptl.set_num_threads(1)
        one = getattr(S, name)(x, n).numpy()
        ptl.set_num_threads(2)
        two = getattr(S, name)(x, n).numpy()
    finally:
        ptl.set_num_threads(before)
    np.testing.assert_array_equal(one, two)


@torch_ref
@pytest.mark.parametrize("name", NAMES)
def test_matches_torch(name):
    """PyTorch's values at finite x and degrees 0 to 30 (relative tolerance 1e-11 with 1e-11
    of E: the two sides take recurrences and closed forms at different degrees), float64
    and float32."""
    rng = np.random.default_rng(4)
    x, k = _samples(name, 9)
    keep = k <= 30
    x, k = x[keep], k[keep]
    want = getattr(torch.special, name)(torch.tensor(x), torch.tensor(k)).numpy()
    got = getattr(S, name)(ptl.tensor(x), ptl.tensor(k)).numpy()
    env = np.array([FAMILIES[name][1](a, int(b)) for a, b in zip(x, k)])
    assert np.all(np.abs(got - want) <= 1e-11 * (np.abs(want) + env)), name
    x32 = rng.uniform(-1, 1, 20).astype(np.float32)
    k32 = np.arange(20, dtype=np.float32)
    want32 = getattr(torch.special, name)(torch.tensor(x32), torch.tensor(k32)).numpy()
    got32 = getattr(S, name)(ptl.tensor(x32), ptl.tensor(k32)).numpy()
    env32 = np.array([FAMILIES[name][1](float(a), int(b)) for a, b in zip(x32, k32)])
    assert np.all(np.abs(got32 - want32) <= 1e-5 * (np.abs(want32) + env32)), name
