"""Kernel benchmarks: vectorized exp/expm1/log1p/erf/sigmoid/tanh and activations (gelu, elu,
softplus, mish, relu, leaky_relu, hardtanh, hardswish), float32 sin and cos at 1e3, 1e5 and
1e6, pointwise ops on strided operands,
gelu and elu forward+backward, softmax and log_softmax rows, amax over the last dim,
max/argmax/norm over either dim, layer and batch norm, addcmul/addcdiv broadcast, softmax /
log_softmax over the outer dim (forward, and forward+backward) and logsumexp over either
dim, float32 atan2, fmod, remainder, floor_divide, erfinv, pow (a number and a tensor
exponent), exp2, log2, tan, atan, erfc, asin, i0 (the inputs scaled, a multiply included), lgamma,
digamma, polygamma(1, .), special.i0e, i1, i1e in float32 and float64,
round(decimals), where, and the regression losses (mse_loss, smooth_l1_loss, huber_loss:
forward, forward+backward, kernel vs composite), and the sums, means and extremes of
float16, bfloat16, the integers and bool (whole, and over either dim of a matrix). Each
group runs pytorchlite, NumPy (where it has the function) and PyTorch on the same float32
data, one thread each.

    pytest benchmarks/test_bench_kernels.py --benchmark-enable -q
"""
import numpy as np
import pytest

import pytorchlite as ptl
from _impls import IMPLS, TORCH, both_on_one_thread, lib, make, randn, torch


@pytest.fixture(autouse=True)
def one_thread():
    with both_on_one_thread():
        yield


def _np_softmax(x, dim=-1):
    e = np.exp(x - x.max(dim, keepdims=True))
    return e / e.sum(dim, keepdims=True)


def _np_log_softmax(x, dim=-1):
    m = x - x.max(dim, keepdims=True)
    return m - np.log(np.exp(m).sum(dim, keepdims=True))


def _np_logsumexp(x, dim):
    m = x.max(dim, keepdims=True)
    return (np.log(np.exp(x - m).sum(dim, keepdims=True)) + m).squeeze(dim)


UNARY = {
    "exp": np.exp,
    "expm1": np.expm1,
    "log1p": np.log1p,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": np.tanh,
    "relu": lambda x: np.maximum(x, 0),
    # the piecewise activations (Note [Select formulas]): NumPy composes them
    "leaky_relu": lambda x: np.where(x > 0, x, x * np.float32(0.01)),
    "hardtanh": lambda x: np.clip(x, -1, 1),
    "hardswish": lambda x: x * np.clip(x + 3, 0, 6) / 6,
}


# NumPy has no vectorized erf (nor gelu, which needs it, nor the other activations): those
# groups have no numpy row (rather than a skipped one)
ACTIVATIONS = ["gelu", "elu", "softplus", "mish", "leaky_relu", "hardtanh", "hardswish"]
CASES = [(impl, op) for op in sorted(UNARY) + ["erf"] + ACTIVATIONS
         for impl in ["pytorchlite"] + (["numpy"] if op in UNARY else []) + TORCH]


@pytest.mark.parametrize("impl, op", CASES)
def test_unary_1e6(benchmark, impl, op):
    benchmark.group = f"{op} 1e6 float32"
    x = make(impl, randn(10**6))
    if impl == "numpy":
        fn = UNARY[op]
    elif op in ACTIVATIONS:
        fn = getattr(lib(impl).nn.functional, op)
    else:
        fn = getattr(lib(impl), op)
    benchmark(fn, x)


UNARY_F64 = {"sin": np.sin, "cos": np.cos, "tanh": np.tanh, "sigmoid": UNARY["sigmoid"],
             "log": np.log, "log1p": np.log1p, "expm1": np.expm1, "log10": np.log10,
             "sinh": np.sinh, "cosh": np.cosh, "atanh": np.arctanh,
             # NumPy has no erf, erfc nor erfinv: those groups have no numpy row
             "erf": None, "erfc": None, "erfinv": None, "erfinv (uniform)": None}
# the inverse trigonometric and hyperbolic functions (Note [Vector float64 asin, acos, atan,
# asinh, acosh]) and logit (PyTorch's log(p / (1 - p)), three passes), with and without eps
TRIG_F64 = {"asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "asinh": np.arcsinh,
            "acosh": np.arccosh, "logit": lambda p: np.log(p / (1 - p)),
            "logit(eps=1e-6)": lambda p: UNARY_F64["logit"](np.clip(p, 1e-6, 1 - 1e-6))}
UNARY_F64.update(TRIG_F64)


F64_CASES = [(impl, op) for op in UNARY_F64
             for impl in ["pytorchlite"] + (["numpy"] if UNARY_F64[op] else []) + TORCH]


@pytest.mark.parametrize("impl, op", F64_CASES)
def test_unary_float64_1e6(benchmark, impl, op):
    """float64 sin, cos, tanh, sigmoid, log, log1p, expm1, log10, sinh, cosh, atanh, erf, erfc,
    erfinv, asin, acos, atan, asinh, acosh in vectors (Note [Vector float64 sin, cos, tanh,
    sigmoid], Note [Vector float64 log, log1p, expm1], Note [Vector float64 erf, erfc, erfinv],
    Note [Vector float64 asin, acos, atan, asinh, acosh]) and logit on 3 * randn (its absolute
    value for the logs, its tanh for atanh, erfinv, asin and acos, 1 + its absolute value for
    acosh, its sigmoid for logit; erfinv (uniform) on uniform(-1, 1), as trunc_normal_ draws
    them)"""
    benchmark.group = f"{op} 1e6 float64"
    x = randn(10**6).astype(np.float64) * 3
    if op in ("log", "log1p", "log10"):
        x = np.abs(x)
    if op in ("atanh", "erfinv", "asin", "acos"):
        x = np.tanh(x)
    if op == "erfinv (uniform)":
        x = np.random.default_rng(0).uniform(-1, 1, 10**6)
    if op == "acosh":
        x = 1 + np.abs(x)
    if op.startswith("logit"):
        x = 1 / (1 + np.exp(-x))
    if impl == "numpy":
        benchmark(UNARY_F64[op], x)
        return
    L = lib(impl)
    fn = (lambda t: L.logit(t, 1e-6)) if op == "logit(eps=1e-6)" else getattr(L, op.split()[0])
    benchmark(fn, make(impl, x))


@pytest.mark.parametrize("impl", ["pytorchlite", "numpy"] + TORCH)
@pytest.mark.parametrize("n", [10**3, 10**5, 10**6])
@pytest.mark.parametrize("op", ["sin", "cos"])
def test_sin_cos_float32(benchmark, impl, op, n):
    """float32 sin and cos in float lanes (Note [Vector float32 sin, cos]) on 3 * randn"""
    benchmark.group = f"{op} {n:.0e} float32"
    x = make(impl, randn(n) * 3)
    benchmark(getattr(np, op) if impl == "numpy" else getattr(lib(impl), op), x)


STRIDED = {
    "stepped * 2": lambda x, y: x[:, ::2] * 2,
    "stepped exp": lambda x, y: x[:, ::2].exp() if hasattr(x, "exp") else np.exp(x[:, ::2]),
    "x + y.T": lambda x, y: x + y.T,
}


@pytest.mark.parametrize("impl", ["pytorchlite", "numpy"] + TORCH)
@pytest.mark.parametrize("op", list(STRIDED))
def test_strided_operands(benchmark, impl, op):
    """Operands that are neither contiguous nor broadcast (a stepped view of [512, 1024],
    a transposed [1000, 1000]: issue 16's 1e6): Note [Staged strided runs]."""
    benchmark.group = f"strided {op} float32"
    x = make(impl, randn((512, 1024) if op != "x + y.T" else (1000, 1000)))
    y = make(impl, randn((1000, 1000), seed=1))
    benchmark(STRIDED[op], x, y)


# float32 elementwise math with vector formulas in vec_math.h (Note [Vector float32
# division], Note [Vector atan2 and erfinv], Note [Vector float32 pow]), round with decimals,
# and where; NumPy has no erfinv nor erfc
MATH = {
    "atan2": (lambda L, a, b: L.atan2(a, b), np.arctan2),
    "fmod": (lambda L, a, b: L.fmod(a, b), np.fmod),
    "remainder": (lambda L, a, b: L.remainder(a, b), np.remainder),
    "floor_divide": (lambda L, a, b: L.floor_divide(a, b), np.floor_divide),
    "x % 1.5": (lambda L, a, b: a % 1.5, lambda a, b: a % np.float32(1.5)),
    "erfinv": (lambda L, a, b: (a * 0.3).erfinv(), None),
    "pow(|a|, 3.5)": (lambda L, a, b: b.pow(3.5), lambda a, b: np.power(b, np.float32(3.5))),
    "round(decimals=2)": (lambda L, a, b: L.round(a, decimals=2), lambda a, b: np.round(a, 2)),
    "pow(|b|, a)": (lambda L, a, b: L.pow(b, a), lambda a, b: np.power(b, a)),
    "exp2": (lambda L, a, b: L.exp2(a * 10), lambda a, b: np.exp2(a * np.float32(10))),
    "log2(|b|)": (lambda L, a, b: L.log2(b), lambda a, b: np.log2(b)),
    "tan": (lambda L, a, b: L.tan(a * 3), lambda a, b: np.tan(a * np.float32(3))),
    "atan": (lambda L, a, b: L.atan(a * 3), lambda a, b: np.arctan(a * np.float32(3))),
    "erfc": (lambda L, a, b: L.erfc(a * 2), None),
    "asin": (lambda L, a, b: L.asin(a * 0.3), lambda a, b: np.arcsin(a * np.float32(0.3))),
    "i0": (lambda L, a, b: L.i0(a * 5), lambda a, b: np.i0(a * np.float32(5))),
    # in double lanes (Note [Vector float64 asin, acos, atan, asinh, acosh]); b is |b| + 1
    # for acosh, sigmoid(b) for logit
    "acos": (lambda L, a, b: L.acos(a * 0.3), lambda a, b: np.arccos(a * np.float32(0.3))),
    "asinh": (lambda L, a, b: L.asinh(a * 3), lambda a, b: np.arcsinh(a * np.float32(3))),
    "acosh(b)": (lambda L, a, b: L.acosh(b), lambda a, b: np.arccosh(b)),
    "logit(b)": (lambda L, a, b: L.logit(b), lambda a, b: np.log(b / (1 - b))),
    "logit(b, eps=1e-6)": (lambda L, a, b: L.logit(b, 1e-6),
                           lambda a, b: np.log((c := np.clip(b, 1e-6, 1 - 1e-6)) / (1 - c))),
    "where": (lambda L, a, b: L.where(a > 0, a, b), lambda a, b: np.where(a > 0, a, b)),
    "where(c, a, 0.5)": (lambda L, a, b: L.where(b > 0, a, 0.5),
                         lambda a, b: np.where(b > 0, a, np.float32(0.5))),
    "where(c, 0.5, a)": (lambda L, a, b: L.where(b > 0, 0.5, a),
                         lambda a, b: np.where(b > 0, np.float32(0.5), a)),
}
MATH_CASES = [(impl, op) for op in MATH
              for impl in ["pytorchlite"] + (["numpy"] if MATH[op][1] else []) + TORCH]


HALF_OPS = {"abs": lambda L, a, b: a.abs(), "exp": lambda L, a, b: a.exp(),
            "tanh": lambda L, a, b: a.tanh(), "add": lambda L, a, b: a + b,
            "mul": lambda L, a, b: a * b}


@pytest.mark.parametrize("impl", ["pytorchlite"] + TORCH)
@pytest.mark.parametrize("op", list(HALF_OPS))
def test_float16_pointwise_1e6(benchmark, impl, op):
    """float16 pointwise ops run their float32 loops on converted blocks (Note
    [Half-precision pointwise through float32])"""
    benchmark.group = f"{op} 1e6 float16"
    L = lib(impl)
    a = make(impl, randn(10**6)).to(L.float16)
    b = make(impl, randn(10**6, seed=1)).to(L.float16)
    benchmark(HALF_OPS[op], L, a, b)


# reductions of float16 / bfloat16 (Note [Half-precision sums]) and of the integers and bool
# (reduce_kernels.c's typed runs), 1e6 values as a vector or a 1000 x 1000 matrix: tensor
# form, NumPy form (NumPy has no bfloat16; its float16 sums run in float16)
LOWP_REDUCTIONS = {
    "sum": (lambda x: x.sum(), lambda a: a.sum()),
    "mean": (lambda x: x.mean(), lambda a: a.mean()),
    "amax": (lambda x: x.amax(), lambda a: a.max()),
    "sum(0)": (lambda x: x.view(1000, 1000).sum(0), lambda a: a.reshape(1000, 1000).sum(0)),
    "sum(1)": (lambda x: x.view(1000, 1000).sum(1), lambda a: a.reshape(1000, 1000).sum(1)),
}
INT_REDUCTIONS = {
    "sum": (lambda x: x.sum(), lambda a: a.sum(dtype=np.int64)),
    "amax": (lambda x: x.amax(), lambda a: a.max()),
    "amin": (lambda x: x.amin(), lambda a: a.min()),
    "sum(0)": (lambda x: x.view(1000, 1000).sum(0),
               lambda a: a.reshape(1000, 1000).sum(0, dtype=np.int64)),
    "sum(1)": (lambda x: x.view(1000, 1000).sum(1),
               lambda a: a.reshape(1000, 1000).sum(1, dtype=np.int64)),
    "sum(1) of rows of 16": (lambda x: x.view(62500, 16).sum(1),
                             lambda a: a.reshape(62500, 16).sum(1, dtype=np.int64)),
    "amax(0)": (lambda x: x.view(1000, 1000).amax(0), lambda a: a.reshape(1000, 1000).max(0)),
    "amax(1)": (lambda x: x.view(1000, 1000).amax(1), lambda a: a.reshape(1000, 1000).max(1)),
}


# products of float16 / bfloat16 (Note [Half-precision products]) on values near 1, whole and
# over either dim of 1000 x 1000; NumPy's float16 products run in float16
LOWP_PRODUCTS = {
    "prod": (lambda x: x.prod(), lambda a: a.prod()),
    "prod(0)": (lambda x: x.view(1000, 1000).prod(0), lambda a: a.reshape(1000, 1000).prod(0)),
    "prod(1)": (lambda x: x.view(1000, 1000).prod(1), lambda a: a.reshape(1000, 1000).prod(1)),
}


# (dtype, impl) pairs of the half-precision groups: NumPy has no bfloat16, so its groups
# compare with PyTorch only
LOWP_CASES = [(dtype, impl) for dtype in ("float16", "bfloat16")
              for impl in ["pytorchlite", "numpy"] + TORCH
              if not (impl == "numpy" and dtype == "bfloat16")]


@pytest.mark.parametrize("dtype,impl", LOWP_CASES)
@pytest.mark.parametrize("op", list(LOWP_PRODUCTS))
def test_half_precision_products_1e6(benchmark, impl, dtype, op):
    benchmark.group = f"{op} 1e6 {dtype} near 1"
    a = 1 + randn(10**6) / 1000
    if impl == "numpy":
        benchmark(LOWP_PRODUCTS[op][1], a.astype(np.float16))
        return
    benchmark(LOWP_PRODUCTS[op][0], make(impl, a).to(getattr(lib(impl), dtype)))


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("op", list(LOWP_PRODUCTS))
def test_float32_products_1e6(benchmark, impl, op):
    """float32 products in float32 lanes (Note [Float32 products]), whole and over either dim
    of 1000 x 1000, values near 1."""
    benchmark.group = f"{op} 1e6 float32 near 1"
    a = 1 + randn(10**6) / 1000
    benchmark(LOWP_PRODUCTS[op][1 if impl == "numpy" else 0], make(impl, a))


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("rows,cols", [(2, 100000), (4, 100000), (8, 65536), (16, 65536),
                                       (32, 4096), (32, 4000), (48, 4096), (64, 1000)])
def test_float32_products_few_rows(benchmark, impl, rows, cols):
    """prod(0) of few rows (Note [Float32 products]: up to 64 rows folded in registers, or from
    16 rows whose addresses share L1 sets, rows of 4096 floats, through a stage), values near
    1."""
    benchmark.group = f"prod(0) {rows}x{cols} float32 near 1"
    a = (1 + randn((rows, cols)) / 1000).astype(np.float32)
    if impl == "numpy":
        benchmark(np.prod, a, 0)
        return
    benchmark(lambda x: x.prod(0), make(impl, a))



@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("rows,cols", [(2, 40000), (5, 40000), (8, 40000), (64, 4000),
                                       (64, 100000)])
def test_float32_column_extremes_few_rows(benchmark, impl, rows, cols):
    """amax(0) of few rows: up to 64 rows in registers, each output stored once as float32
    (reduce_columns.c, Note [Column extremes in registers]); 64 x 100000 (from L3) in
    groups of 16 rows."""
    benchmark.group = f"amax(0) {rows}x{cols} float32"
    a = randn((rows, cols))
    if impl == "numpy":
        benchmark(np.max, a, 0)
        return
    benchmark(lambda x: x.amax(0), make(impl, a))


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "float64", "float16"])
@pytest.mark.parametrize("rows", [2, 8])
def test_column_extremes_few_rows_dtypes(benchmark, impl, dtype, rows):
    """amax(0) of rows x 40000 of the other dtypes, stored straight into the output
    (reduce_columns.c: integer and float64 typed loops two rows a pass, float16 through
    ptl_red_put_columns)."""
    benchmark.group = f"amax(0) {rows}x40000 {dtype}"
    a = (randn((rows, 40000)) * 100).astype(dtype)
    if impl == "numpy":
        benchmark(np.max, a, 0)
        return
    benchmark(lambda x: x.amax(0), make(impl, a))

@pytest.mark.parametrize("dtype,impl", LOWP_CASES)
@pytest.mark.parametrize("op", list(LOWP_REDUCTIONS))
def test_half_precision_reductions_1e6(benchmark, impl, dtype, op):
    benchmark.group = f"{op} 1e6 {dtype}"
    a = randn(10**6)
    if impl == "numpy":
        benchmark(LOWP_REDUCTIONS[op][1], a.astype(np.float16))
        return
    L = lib(impl)
    benchmark(LOWP_REDUCTIONS[op][0], make(impl, a).to(getattr(L, dtype)))


@pytest.mark.parametrize("impl", ["pytorchlite", "numpy"] + TORCH)
@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "int8", "uint8", "bool"])
@pytest.mark.parametrize("op", list(INT_REDUCTIONS))
def test_integer_reductions_1e6(benchmark, impl, dtype, op):
    benchmark.group = f"{op} 1e6 {dtype}"
    rng = np.random.default_rng(0)
    a = (rng.integers(0, 2, 10**6) if dtype == "bool" else rng.integers(-100, 100, 10**6))
    a = a.astype(dtype if dtype != "uint8" else np.int16).astype(dtype)
    if impl == "numpy":
        benchmark(INT_REDUCTIONS[op][1], a)
        return
    benchmark(INT_REDUCTIONS[op][0], make(impl, a))


DIVISION_F64 = ["fmod", "remainder", "floor_divide", "atan2"]


@pytest.mark.parametrize("impl", ["pytorchlite", "numpy"] + TORCH)
@pytest.mark.parametrize("op", DIVISION_F64)
def test_float64_division_1e6(benchmark, impl, op):
    """float64 fmod, remainder and floor division in vectors (Note [Vector float64
    division]); lanes whose quotient reaches 2^52 take the scalar formula.  atan2 too (Note
    [Vector float64 asin, acos, atan, asinh, acosh])"""
    benchmark.group = f"{op} 1e6 float64"
    a, b = randn(10**6).astype(np.float64), randn(10**6, seed=1).astype(np.float64)
    if impl == "numpy":
        benchmark(MATH[op][1], a, b)
        return
    benchmark(MATH[op][0], lib(impl), make(impl, a), make(impl, b))


@pytest.mark.parametrize("impl, op", MATH_CASES)
def test_elementwise_math_1e6(benchmark, impl, op):
    """b is |b| for pow and log2, |b| + 1 for acosh, sigmoid(b) for logit; erfinv's, asin's
    and acos's argument 0.3 a is outside (-1, 1) for a few elements (|a| > 3.33), which give
    nan in every library."""
    benchmark.group = f"{op} 1e6 float32"
    a, b = randn(10**6), randn(10**6, seed=1)
    b = np.abs(b) if op.startswith(("pow", "log2")) else b
    b = np.abs(b) + np.float32(1) if op.startswith("acosh") else b
    b = np.float32(1) / (1 + np.exp(-b)) if op.startswith("logit") else b
    if impl == "numpy":
        benchmark(MATH[op][1], a, b)
        return
    benchmark(MATH[op][0], lib(impl), make(impl, a), make(impl, b))


# the gamma and Bessel family in vector lanes (Note [Vector lgamma and digamma], unary.c's
# i0e / i1 / i1e in float32, Note [Float64 lgamma and Bessel lanes] in float64): 3 randn
# (about a third negative past -1, the reflection's lanes) and, for the Bessel functions,
# 5 randn; NumPy has none of them but i0 (PyTorch is the reference)
SPECIAL = {
    "lgamma": lambda L, x: L.lgamma(x),
    "digamma": lambda L, x: L.digamma(x),
    "polygamma(1, x)": lambda L, x: L.polygamma(1, x),
    "i0": lambda L, x: L.i0(x),
    "special.i0e": lambda L, x: L.special.i0e(x),
    "special.i1": lambda L, x: L.special.i1(x),
    "special.i1e": lambda L, x: L.special.i1e(x),
}


@pytest.mark.parametrize("impl", ["pytorchlite"] + TORCH)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", list(SPECIAL))
def test_special_1e6(benchmark, impl, op, dtype):
    benchmark.group = f"{op} 1e6 {dtype}"
    x = randn(10**6).astype(dtype) * (5 if op.startswith(("special.", "i0")) else 3)
    benchmark(SPECIAL[op], lib(impl), make(impl, x))


def _np_smooth_l1(a, b):
    z = np.abs(a - b)
    return np.where(z < 1, 0.5 * z * z, z - 0.5).mean()


# the regression losses (Note [Regression losses] in src/aten/native/nn.c), 'mean' over 1e6
# float32: NumPy's formula, PyTorch's kernels, and (composite) the same loss written with
# pytorchlite's elementwise ops and mean, as F.* computed it before the fused kernels
# (huber with delta 1 is smooth_l1 with beta 1)
REG_LOSSES = {
    "mse_loss": (lambda a, b: np.mean(np.square(a - b)),
                 lambda L, a, b: ((a - b) * (a - b)).mean()),
    "smooth_l1_loss": (_np_smooth_l1, lambda L, a, b: L.where(
        (a - b).abs() < 1, (a - b).abs() * (a - b).abs() * 0.5, (a - b).abs() - 0.5).mean()),
    "huber_loss": (_np_smooth_l1, lambda L, a, b: L.where(
        (a - b).abs() < 1, (a - b).abs() * (a - b).abs() * 0.5, (a - b).abs() - 0.5).mean()),
}


@pytest.mark.parametrize("impl", ["pytorchlite", "numpy", "composite"] + TORCH)
@pytest.mark.parametrize("op", list(REG_LOSSES))
def test_regression_loss_1e6(benchmark, impl, op):
    benchmark.group = f"{op} mean 1e6 float32"
    a, b = randn(10**6), randn(10**6, seed=1)
    if impl == "numpy":
        benchmark(REG_LOSSES[op][0], a, b)
    elif impl == "composite":
        benchmark(REG_LOSSES[op][1], ptl, ptl.tensor(a), ptl.tensor(b))
    else:
        L = lib(impl)
        benchmark(getattr(L.nn.functional, op), make(impl, a), make(impl, b))


@pytest.mark.parametrize("impl", ["pytorchlite"] + TORCH)
@pytest.mark.parametrize("op", list(REG_LOSSES))
def test_regression_loss_forward_backward(benchmark, impl, op):
    benchmark.group = f"{op} fwd+bwd 1e6 float32"
    x = make(impl, randn(10**6), requires_grad=True)
    t = make(impl, randn(10**6, seed=1))
    fn = getattr(lib(impl).nn.functional, op)

    def step():
        x.grad = None
        fn(x, t).backward()
    benchmark(step)


@pytest.mark.parametrize("impl", ["pytorchlite"] + TORCH)
def test_gelu_forward_backward(benchmark, impl):
    benchmark.group = "gelu fwd+bwd [16,64,512] float32"
    x = make(impl, randn((16, 64, 512)), requires_grad=True)
    F = lib(impl).nn.functional

    def step():
        x.grad = None
        F.gelu(x).sum().backward()
    benchmark(step)


@pytest.mark.parametrize("impl", ["pytorchlite"] + TORCH)
def test_elu_forward_backward(benchmark, impl):
    benchmark.group = "elu fwd+bwd 1e6 float32"
    x = make(impl, randn(10**6), requires_grad=True)
    F = lib(impl).nn.functional

    def step():
        x.grad = None
        F.elu(x).sum().backward()
    benchmark(step)


@pytest.mark.parametrize("impl", ["pytorchlite", "numpy"] + TORCH)
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_rows(benchmark, impl, op):
    benchmark.group = f"{op} 4096x1024 float32 dim -1"
    x = make(impl, randn((4096, 1024)))
    if impl == "numpy":
        fn = _np_softmax if op == "softmax" else _np_log_softmax
        benchmark(fn, x)
    else:
        benchmark(getattr(lib(impl), op), x, -1)


@pytest.mark.parametrize("impl", ["pytorchlite", "numpy"] + TORCH)
@pytest.mark.parametrize("op, dim", [("softmax", 0), ("log_softmax", 0), ("logsumexp", 0),
                                     ("logsumexp", -1)])
def test_softmax_dims(benchmark, impl, op, dim):
    """softmax and log_softmax over the outer dim (Note [Softmax columns]), logsumexp over
    either dim"""
    benchmark.group = f"{op}({dim}) 1024x1024 float32"
    x = make(impl, randn((1024, 1024)))
    if impl == "numpy":
        fn = {"softmax": _np_softmax, "log_softmax": _np_log_softmax, "logsumexp": _np_logsumexp}
        benchmark(fn[op], x, dim)
    elif op == "logsumexp":
        benchmark(lambda t: t.logsumexp(dim), x)
    else:
        benchmark(getattr(lib(impl), op), x, dim)


@pytest.mark.parametrize("impl", ["pytorchlite"] + TORCH)
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape, dim", [((1024, 1024), 0), ((32, 21, 64, 64), 1)],
                         ids=["1024x1024 dim 0", "[32,21,64,64] dim 1"])
def test_softmax_dims_forward_backward(benchmark, impl, op, shape, dim):
    """softmax and log_softmax forward+backward over a dim that is not the last (the
    backward walks columns too, Note [Softmax columns]): attention over heads, segmentation"""
    benchmark.group = f"{op} fwd+bwd {list(shape)} float32 dim {dim}"
    x = make(impl, randn(shape), requires_grad=True)
    g = make(impl, randn(shape, seed=1))
    fn = getattr(lib(impl).nn.functional, op)

    def step():
        x.grad = None
        fn(x, dim).backward(g)
    benchmark(step)


@pytest.mark.parametrize("impl", ["pytorchlite", "numpy"] + TORCH)
def test_amax_last(benchmark, impl):
    benchmark.group = "amax(-1) 4096x1024 float32"
    x = make(impl, randn((4096, 1024)))
    benchmark(lambda t: t.max(-1) if impl == "numpy" else t.amax(-1), x)


@pytest.mark.parametrize("impl", ["pytorchlite", "numpy"] + TORCH)
def test_amax_short_int_rows(benchmark, impl):
    """rows of 64 int32, a block of rows a call (Note [Integer extremes of runs])"""
    benchmark.group = "amax(-1) 15625x64 int32"
    x = make(impl, np.random.default_rng(0).integers(-100, 100, (15625, 64)).astype(np.int32))
    benchmark(lambda t: t.max(-1) if impl == "numpy" else t.amax(-1), x)


# reductions that keep a value per output: over the outer dim (by columns) and over rows;
# the float32 sum of all (Note [Float sums in blocks])
REDUCTIONS = {
    "sum()": (lambda t: t.sum(), lambda a: a.sum()),
    "amax(0)": (lambda t: t.amax(0), lambda a: a.max(0)),
    "argmax(0)": (lambda t: t.argmax(0), lambda a: a.argmax(0)),
    "max(-1) values and indices": (lambda t: t.max(-1), lambda a: (a.max(-1), a.argmax(-1))),
    "argmax(-1)": (lambda t: t.argmax(-1), lambda a: a.argmax(-1)),
    "norm(dim=-1)": (lambda t: t.norm(dim=-1), lambda a: np.sqrt(np.einsum("ij,ij->i", a, a))),
    "norm(dim=0)": (lambda t: t.norm(dim=0), lambda a: np.sqrt(np.einsum("ij,ij->j", a, a))),
}


@pytest.mark.parametrize("op", list(REDUCTIONS))
@pytest.mark.parametrize("impl", ["pytorchlite", "numpy"] + TORCH)
def test_value_reductions(benchmark, impl, op):
    benchmark.group = f"{op} 4096x1024 float32"
    x = make(impl, randn((4096, 1024)))
    tensor_fn, numpy_fn = REDUCTIONS[op]
    benchmark(numpy_fn if impl == "numpy" else tensor_fn, x)


# ---- the GPT training step's per-op paths ----

@pytest.mark.parametrize("impl", ["pytorchlite"] + TORCH)
def test_layer_norm_forward_backward(benchmark, impl):
    benchmark.group = "layer_norm fwd+bwd [16,64,128] float32"
    L = lib(impl)
    x = make(impl, randn((16, 64, 128))).requires_grad_(True)
    w, b = L.ones(128, requires_grad=True), L.zeros(128, requires_grad=True)
    benchmark(lambda: L.nn.functional.layer_norm(x, (128,), w, b).sum().backward())


@pytest.mark.parametrize("impl", ["pytorchlite", "composite"])
def test_layer_norm_fused_vs_composite(benchmark, impl):
    """The layer norm kernel (pytorchlite) against the same normalization written as a
    composite of ops (mean, centred square mean, division: composite)."""
    benchmark.group = "layer_norm fwd+bwd [16,64,128] float32: kernel vs composite"
    F = ptl.nn.functional
    x = ptl.tensor(randn((16, 64, 128))).requires_grad_(True)
    w, b = ptl.ones(128, requires_grad=True), ptl.zeros(128, requires_grad=True)

    def composite():
        c = x - x.mean(2, keepdim=True)
        out = c / ((c * c).mean(2, keepdim=True) + 1e-5).sqrt()
        (out * w + b).sum().backward()

    if impl == "pytorchlite":
        benchmark(lambda: F.layer_norm(x, (128,), w, b).sum().backward())
    else:
        benchmark(composite)


GN_SHAPES = [(32, 64, 32, 32), (8, 32, 16, 16)]


@pytest.mark.parametrize("impl", ["pytorchlite"] + TORCH)
@pytest.mark.parametrize("shape", GN_SHAPES)
@pytest.mark.parametrize("affine", [True, False])
def test_group_norm_forward(benchmark, impl, shape, affine):
    """GroupNorm(8, C): the statistics per (n, group), then y = x a[c] + b[c]."""
    benchmark.group = f"group_norm(8) fwd {list(shape)} float32 affine={affine}"
    L = lib(impl)
    x = make(impl, randn(shape))
    c = shape[1]
    w, b = (make(impl, randn((c,), 2)), make(impl, randn((c,), 3))) if affine else (None, None)
    with L.no_grad():
        benchmark(lambda: L.nn.functional.group_norm(x, 8, w, b))


@pytest.mark.parametrize("impl", ["pytorchlite"] + TORCH)
@pytest.mark.parametrize("shape", GN_SHAPES)
@pytest.mark.parametrize("affine", [True, False])
def test_group_norm_forward_backward(benchmark, impl, shape, affine):
    """GroupNorm(8, C) forward, then the input (and weight and bias) gradients."""
    benchmark.group = f"group_norm(8) fwd+bwd {list(shape)} float32 affine={affine}"
    L = lib(impl)
    x = make(impl, randn(shape)).requires_grad_(True)
    c = shape[1]
    w, b = ((make(impl, randn((c,), 2), True), make(impl, randn((c,), 3), True)) if affine
            else (None, None))
    g = make(impl, randn(shape, 1))
    benchmark(lambda: L.nn.functional.group_norm(x, 8, w, b).backward(g))


@pytest.mark.parametrize("impl", ["pytorchlite"] + TORCH)
@pytest.mark.parametrize("shape", [(32, 64, 16, 16), (32, 16, 32, 32)])
def test_batch_norm_forward_backward(benchmark, impl, shape):
    """Training BatchNorm: the batch statistics, the running ones, the output, then the
    input, weight and bias gradients."""
    benchmark.group = f"batch_norm train fwd+bwd {list(shape)} float32"
    L = lib(impl)
    x = make(impl, randn(shape)).requires_grad_(True)
    c = shape[1]
    w, b = L.ones(c, requires_grad=True), L.zeros(c, requires_grad=True)
    rm, rv, g = L.zeros(c), L.ones(c), make(impl, randn(shape, 1))
    benchmark(lambda: L.nn.functional.batch_norm(x, rm, rv, w, b, True).backward(g))


@pytest.mark.parametrize("impl", ["pytorchlite"] + TORCH)
def test_batch_norm_eval(benchmark, impl):
    benchmark.group = "batch_norm eval [32,64,16,16] float32"
    L = lib(impl)
    x = make(impl, randn((32, 64, 16, 16)))
    rm, rv, w, b = L.zeros(64), L.ones(64), L.ones(64), L.zeros(64)
    benchmark(lambda: L.nn.functional.batch_norm(x, rm, rv, w, b, False))


@pytest.mark.parametrize("impl", ["pytorchlite"] + TORCH)
@pytest.mark.parametrize("op", ["addcmul", "addcdiv"])
def test_addcmul_channel_broadcast(benchmark, impl, op):
    """x + t1 * t2 (or t1 / t2) with per-channel [1,16,1,1] operands: the ternary broadcast
    loop."""
    benchmark.group = f"{op} [32,16,32,32] with [1,16,1,1] operands float32"
    L = lib(impl)
    x = make(impl, randn((32, 16, 32, 32)))
    t1 = make(impl, randn((1, 16, 1, 1), 1))
    t2 = make(impl, np.abs(randn((1, 16, 1, 1), 2)) + 0.5)
    benchmark(getattr(L, op), x, t1, t2, value=0.5)


@pytest.mark.parametrize("impl", ["pytorchlite"] + TORCH)
def test_cross_entropy_forward_backward(benchmark, impl):
    benchmark.group = "cross_entropy fwd+bwd 1024x65 float32"
    L = lib(impl)
    x = make(impl, randn((1024, 65))).requires_grad_(True)
    y = L.tensor(np.random.default_rng(0).integers(0, 65, 1024))
    benchmark(lambda: L.nn.functional.cross_entropy(x, y).backward())


@pytest.mark.parametrize("impl", ["pytorchlite"] + TORCH)
def test_gelu_tanh_forward_backward(benchmark, impl):
    benchmark.group = "gelu tanh fwd+bwd [16,64,512] float32"
    x = make(impl, randn((16, 64, 512))).requires_grad_(True)
    benchmark(lambda: lib(impl).nn.functional.gelu(x, approximate="tanh").sum().backward())


@pytest.mark.parametrize("impl", ["pytorchlite"] + TORCH)
def test_sdpa_causal(benchmark, impl):
    benchmark.group = "scaled_dot_product_attention causal [16,4,64,32] float32"
    q = make(impl, randn((16, 4, 64, 32)))
    benchmark(lambda: lib(impl).nn.functional.scaled_dot_product_attention(q, q, q,
                                                                           is_causal=True))


@pytest.mark.parametrize("impl", ["pytorchlite"] + TORCH)
def test_sdpa_causal_forward_backward(benchmark, impl):
    benchmark.group = "scaled_dot_product_attention causal fwd+bwd [16,4,64,32] float32"
    q, k, v = (make(impl, randn((16, 4, 64, 32), seed=i)).requires_grad_(True) for i in range(3))
    g = make(impl, randn((16, 4, 64, 32), seed=3))
    benchmark(lambda: lib(impl).nn.functional.scaled_dot_product_attention(
        q, k, v, is_causal=True).backward(g))


@pytest.mark.parametrize("impl", ["pytorchlite"] + TORCH)
def test_sdpa_gpt_block_forward_backward(benchmark, impl):
    """A GPT block's attention (d128, 4 heads of 32, T64, batch 16, causal): q, k and v are
    views of the qkv projection [16, 64, 384] (split, view, transpose), so each head's rows
    are 128 bytes, 1536 bytes apart; the backward ends in the split's cat."""
    benchmark.group = "sdpa GPT block d128 T64 b16 causal fwd+bwd (heads from qkv split)"
    L = lib(impl)
    x = make(impl, randn((16, 64, 384))).requires_grad_(True)
    g = make(impl, randn((16, 4, 64, 32), seed=1))

    def step():
        q, k, v = (t.view(16, 64, 4, 32).transpose(1, 2) for t in x.split(128, dim=2))
        L.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True).backward(g)

    benchmark(step)


@pytest.mark.parametrize("impl", ["pytorchlite", "composite"])
def test_sdpa_fused_vs_composite(benchmark, impl, monkeypatch):
    """The fused attention kernel (pytorchlite) against the composite of ops that
    F.scaled_dot_product_attention runs where the kernel does not apply (composite)."""
    benchmark.group = "sdpa causal fwd+bwd [16,4,64,32] float32: kernel vs composite"
    F = ptl.nn.functional
    if impl == "composite":
        monkeypatch.setattr(F, "_sdpa_fusable", lambda *args: False)
    q, k, v = (ptl.tensor(randn((16, 4, 64, 32), seed=i)).requires_grad_(True) for i in range(3))
    g = ptl.tensor(randn((16, 4, 64, 32), seed=3))
    benchmark(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True).backward(g))


@pytest.mark.parametrize("impl", ["pytorchlite"] + TORCH)
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag(benchmark, impl, mode):
    """64 bags of 16 rows of a 1024 x 1024 float32 table (embedding.c, Note [Embedding bags]; max:
    _embedding_bag_max in nn/functional.py)."""
    benchmark.group = f"embedding_bag {mode}, 64 bags of 16 rows of width 1024, float32"
    L = lib(impl)
    w = L.tensor(randn((1024, 1024)))
    idx = L.tensor(np.random.default_rng(0).integers(0, 1024, (64, 16)))
    benchmark(lambda: L.nn.functional.embedding_bag(idx, w, mode=mode))


@pytest.mark.parametrize("impl", ["pytorchlite"] + TORCH)
@pytest.mark.parametrize("shape", [(1024, 8, 1000, 32), (512, 20, 10000, 64)], ids=str)
@pytest.mark.parametrize("mode", ["sum", "max"])
def test_embedding_bag_narrow_rows(benchmark, impl, shape, mode):
    """bags of narrow rows (bags x rows, table rows x width): sum adds a bag's rows whole in
    registers, the 10000 x 64 table's rows fetched ahead (Note [Embedding bags])"""
    bags, rows, n, width = shape
    benchmark.group = f"embedding_bag {mode}, {bags} bags of {rows} rows of width {width}"
    L = lib(impl)
    w = L.tensor(randn((n, width)))
    idx = L.tensor(np.random.default_rng(0).integers(0, n, (bags, rows)))
    benchmark(lambda: L.nn.functional.embedding_bag(idx, w, mode=mode))


@pytest.mark.parametrize("impl", ["pytorchlite"] + TORCH)
@pytest.mark.parametrize("shape", [(1024, 8, 1000, 8), (1024, 8, 1000, 16), (1024, 8, 1000, 32)],
                         ids=str)
@pytest.mark.parametrize("form", ["2-D input", "1-D input and offsets"])
def test_embedding_bag_sum_narrow_rows(benchmark, impl, shape, form):
    """sum of bags of rows of width 8-32 (bags x rows, table rows x width): each row added
    whole in registers (embedding.c bag_run_sum_f4), the kernel reading the offsets (a 2-D
    input's from an arange), not a bag per index"""
    bags, rows, n, width = shape
    benchmark.group = f"embedding_bag sum, {bags} bags of {rows} rows of width {width}, {form}"
    L = lib(impl)
    w = L.tensor(randn((n, width)))
    idx = L.tensor(np.random.default_rng(0).integers(0, n, (bags, rows)))
    if form == "2-D input":
        benchmark(lambda: L.nn.functional.embedding_bag(idx, w, mode="sum"))
        return
    flat, offsets = idx.reshape(-1), L.arange(0, bags * rows, rows)
    benchmark(lambda: L.nn.functional.embedding_bag(flat, w, offsets, mode="sum"))


@pytest.mark.parametrize("impl", ["pytorchlite"] + TORCH)
@pytest.mark.parametrize("shape", [(64, 16, 1024, 1024), (512, 20, 10000, 64)], ids=str)
def test_embedding_bag_sum_forward_backward(benchmark, impl, shape):
    """sum of bags, then the weight's gradient: the output gradient's rows added into zeros
    (derivatives/embedding.c)"""
    bags, rows, n, width = shape
    benchmark.group = f"embedding_bag sum fwd+bwd, {bags} bags of {rows} rows of width {width}"
    L = lib(impl)
    w = L.tensor(randn((n, width))).requires_grad_()
    idx = L.tensor(np.random.default_rng(0).integers(0, n, (bags, rows)))
    g = L.tensor(randn((bags, width), 1))
    benchmark(lambda: L.autograd.grad(L.nn.functional.embedding_bag(idx, w, mode="sum"), w, g))


@pytest.mark.parametrize("impl", ["pytorchlite"] + TORCH)
def test_embedding_forward_backward(benchmark, impl):
    benchmark.group = "embedding fwd+bwd 65x128, [16,64] indices float32"
    L = lib(impl)
    w = L.zeros(65, 128, requires_grad=True)
    idx = L.tensor(np.random.default_rng(0).integers(0, 65, (16, 64)))
    benchmark(lambda: L.nn.functional.embedding(idx, w).sum().backward())
