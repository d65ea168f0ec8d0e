"""torch.special benchmarks: every function of torch.special that test_bench_kernels.py's
test_special_1e6 and unary rows do not already time (those cover i0, i0e, i1, i1e, digamma,
polygamma, gammaln, erf, erfc, erfinv, expm1, log1p, exp2, expit, logit, softmax), on 1e6
float32 and float64 elements, one thread, with PyTorch as the same-process reference
(NumPy has none of them).  Each function runs on its usual domain ("usual") and, where the
branch structure matters (series, asymptotic and tail regions, Newton steps), on a wide
range that reaches every branch ("wide").  The orthogonal polynomials run at a small and a
large degree n (their recurrence's length).

    pytest benchmarks/test_bench_special.py --benchmark-enable -q
"""
import numpy as np
import pytest

import pytorchlite as ptl
from _impls import TORCH, both_on_one_thread, lib, make, torch

N = 10**6


@pytest.fixture(autouse=True)
def one_thread():
    with both_on_one_thread():
        yield


def _rng():
    return np.random.default_rng(0)


def _uniform(lo, hi):
    return _rng().uniform(lo, hi, N)


def _log_uniform(lo, hi, signed=False):
    r = _rng()
    x = np.exp(r.uniform(np.log(lo), np.log(hi), N))
    return x * np.where(r.random(N) < 0.5, -1.0, 1.0) if signed else x


def _normal(scale):
    return _rng().standard_normal(N) * scale


def _ndtri_wide():
    """half deep in the lower tail (to 1e-300), half in the upper one (to 1 - 1e-16)"""
    lower = _log_uniform(1e-300, 0.5)
    return np.where(np.arange(N) % 2 == 0, lower, 1 - _log_uniform(1e-16, 0.5))


# name -> {case: inputs as float64}: the usual domain and, where branches matter, a wide one
UNARY_INPUTS = {
    "airy_ai": {"usual": lambda: _uniform(-10, 5), "wide": lambda: _normal(30)},
    "bessel_j0": {"usual": lambda: _normal(10), "wide": lambda: _log_uniform(1e-3, 1e4, 1)},
    "bessel_j1": {"usual": lambda: _normal(10), "wide": lambda: _log_uniform(1e-3, 1e4, 1)},
    "bessel_y0": {"usual": lambda: _uniform(0, 25), "wide": lambda: _log_uniform(1e-3, 1e4)},
    "bessel_y1": {"usual": lambda: _uniform(0, 25), "wide": lambda: _log_uniform(1e-3, 1e4)},
    "modified_bessel_i0": {"usual": lambda: _normal(5), "wide": lambda: _normal(100)},
    "modified_bessel_i1": {"usual": lambda: _normal(5), "wide": lambda: _normal(100)},
    "modified_bessel_k0": {"usual": lambda: _uniform(0, 10),
                           "wide": lambda: _log_uniform(1e-4, 700)},
    "modified_bessel_k1": {"usual": lambda: _uniform(0, 10),
                           "wide": lambda: _log_uniform(1e-4, 700)},
    "scaled_modified_bessel_k0": {"usual": lambda: _uniform(0, 10),
                                  "wide": lambda: _log_uniform(1e-4, 1e4)},
    "scaled_modified_bessel_k1": {"usual": lambda: _uniform(0, 10),
                                  "wide": lambda: _log_uniform(1e-4, 1e4)},
    "spherical_bessel_j0": {"usual": lambda: _normal(10),
                            "wide": lambda: _log_uniform(1e-3, 1e4, 1)},
    "ndtr": {"usual": lambda: _normal(3), "wide": lambda: _normal(15)},
    "log_ndtr": {"usual": lambda: _normal(3), "wide": lambda: _normal(15)},
    "ndtri": {"usual": lambda: _uniform(0, 1), "wide": lambda: _ndtri_wide()},
    "erfcx": {"usual": lambda: _normal(3), "wide": lambda: _normal(30)},
    "entr": {"usual": lambda: _uniform(0, 5), "wide": lambda: _log_uniform(1e-30, 1e30)},
    "sinc": {"usual": lambda: _normal(5)},
}


def _unary_cases():
    for name, cases in UNARY_INPUTS.items():
        for case in cases:
            yield name, case


@pytest.mark.parametrize("impl", ["pytorchlite"] + TORCH)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name, case", list(_unary_cases()))
def test_special_unary_1e6(benchmark, impl, name, case, dtype):
    benchmark.group = f"special.{name} {case} 1e6 {dtype}"
    x = make(impl, UNARY_INPUTS[name][case]().astype(dtype))
    benchmark(getattr(lib(impl).special, name), x)


# two-input functions: name -> (a, b) as float64
BINARY_INPUTS = {
    "zeta": lambda: (_uniform(1.5, 10), _uniform(0.5, 5)),
    "xlogy": lambda: (_normal(2), _uniform(0, 5)),
    "xlog1py": lambda: (_normal(2), _uniform(-0.5, 5)),
    "gammainc": lambda: (_uniform(0.1, 20), _uniform(0, 20)),
    "gammaincc": lambda: (_uniform(0.1, 20), _uniform(0, 20)),
}


@pytest.mark.parametrize("impl", ["pytorchlite"] + TORCH)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(BINARY_INPUTS))
def test_special_binary_1e6(benchmark, impl, name, dtype):
    benchmark.group = f"special.{name} 1e6 {dtype}"
    a, b = BINARY_INPUTS[name]()
    L = lib(impl)
    benchmark(getattr(L.special, name), make(impl, a.astype(dtype)),
              make(impl, b.astype(dtype)))


def _gammainc_large_a():
    """a log-uniform in [1e2, 1e12], x = a (1 + t / sqrt(a)), t normal with deviation 3:
    Temme's expansion in ours (Note [Incomplete gamma for large a])"""
    a = _log_uniform(1e2, 1e12)
    return a, a * (1 + _normal(3) / np.sqrt(a))


@pytest.mark.parametrize("impl", ["pytorchlite"] + TORCH)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_special_gammainc_large_a_1e6(benchmark, impl, dtype):
    benchmark.group = f"special.gammainc large a 1e6 {dtype}"
    a, x = _gammainc_large_a()
    benchmark(lib(impl).special.gammainc, make(impl, a.astype(dtype)),
              make(impl, x.astype(dtype)))


POLYNOMIALS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
               "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
               "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
               "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
               "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p"]


@pytest.mark.parametrize("impl", ["pytorchlite"] + TORCH)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("degree", [4, 40])
@pytest.mark.parametrize("name", POLYNOMIALS)
def test_special_polynomial_1e6(benchmark, impl, name, degree, dtype):
    """x in [-1, 1] ([0, 1] for the shifted ones), n = degree (a tensor, as PyTorch
    requires for the broadcast form), the recurrence's length"""
    benchmark.group = f"special.{name} n={degree} 1e6 {dtype}"
    x = _uniform(0, 1) if name.startswith("shifted") else _uniform(-1, 1)
    n = np.full(N, degree, dtype=dtype)
    benchmark(getattr(lib(impl).special, name), make(impl, x.astype(dtype)), make(impl, n))


@pytest.mark.parametrize("impl", ["pytorchlite"] + TORCH)
def test_multigammaln_1e6(benchmark, impl):
    """multigammaln(x, 4) on x in [2, 20]"""
    benchmark.group = "special.multigammaln p=4 1e6 float64"
    benchmark(lib(impl).special.multigammaln, make(impl, _uniform(2, 20)), 4)
