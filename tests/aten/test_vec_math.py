"""The vectorized kernels of vec_math.h and their users: exp (float32, float64) and
float32 erf and erfinv ulp error against float64/libm references on 1e6 points and the
edges, softmax / log_softmax rows, NaN-propagating amax/amin, float32 gelu and its
backward.  Every check also runs with the portable (non-vector) loops and with AVX2 only, in
subprocesses with PTL_CPU_CAPABILITY=default and avx2."""
import math
import os

import numpy as np
import pytest

import pytorchlite as ptl
from golden import golden
from helpers import ROOT, assert_close, num_threads, rerun_with_capability, torch

F = ptl.nn.functional
FALLBACK = os.environ.get("PTL_CPU_CAPABILITY") == "default"


def ulps(got, ref, dtype):
    """|got - ref| in units of the last place of ref rounded to dtype (ref in float64)."""
    got = np.asarray(got, np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        rounded = ref.astype(dtype).astype(np.float64)
        big = np.minimum(np.abs(ref), np.finfo(dtype).max).astype(dtype)
        err = np.abs(got - ref) / np.spacing(big).astype(np.float64)
    both_special = (got == rounded) | (np.isnan(got) & np.isnan(ref))
    return np.where(both_special, 0.0, err)


def _exp_points(dtype):
    rng = np.random.default_rng(1)
    if dtype == np.float32:
        lo, hi = -104.0, 89.0
    else:
        lo, hi = -746.0, 710.0
    x = np.concatenate([rng.uniform(lo, hi, 10**6 - 200000), rng.uniform(-2, 2, 100000),
                        rng.uniform(lo, lo + 20, 100000)]).astype(dtype)
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_exp_max_ulp(dtype):
    x = _exp_points(dtype)
    got = ptl.exp(ptl.tensor(x)).numpy()
    with np.errstate(over="ignore"):
        ref = np.exp(x.astype(np.float64))
    assert ulps(got, ref, dtype).max() <= (1.5 if dtype == np.float32 else 2.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_exp_edges(dtype):
    fi = np.finfo(dtype)
    hi = 88.72283935546875 if dtype == np.float32 else 709.782712893384
    edge = [0.0, -0.0, np.inf, -np.inf, np.nan, hi, np.nextafter(dtype(hi), dtype(np.inf)),
            1000.0, -1000.0, math.log(fi.tiny), math.log(fi.tiny) - 5, fi.tiny, -fi.tiny, 1e-30]
    x = np.array(edge, dtype)
    got = ptl.exp(ptl.tensor(x)).numpy()
    with np.errstate(over="ignore"):
        ref = np.exp(x.astype(np.float64)).astype(dtype)
    assert ulps(got, ref.astype(np.float64), dtype).max() <= 1.5
    assert np.isinf(got[2]) and got[3] == 0 and np.isnan(got[4]) and np.isinf(got[6])
    assert got[8] == 0


@pytest.mark.parametrize("dtype,lanes", [(np.float32, 16), (np.float64, 8)])
def test_exp_normal_range_path_equals_the_general_path(dtype, lanes):
    """A vector whose lanes all lie in [NORMAL_LO, NORMAL_HI] scales by one power of two; one
    lane outside (here 1000, the last of each AVX2 and each AVX-512 vector) sends the vector
    through the two-step scaling and the special-value blends.  Both must give the same bits,
    across the range and at its ends."""
    lo, hi = (-86.0, 88.0) if dtype == np.float32 else (-707.0, 709.0)
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.uniform(lo, hi, 20000), rng.uniform(-1, 1, 2000),
                        [lo, hi, np.nextafter(dtype(lo), dtype(0)),
                         np.nextafter(dtype(hi), dtype(0)), 0.0, -0.0]]).astype(dtype)
    fast = np.repeat(x, lanes)
    general = fast.reshape(-1, lanes).copy()
    general[:, -1] = 1000.0
    general[:, lanes // 2 - 1] = 1000.0
    got_fast = ptl.exp(ptl.tensor(fast)).numpy().reshape(-1, lanes)[:, 0]
    got_general = ptl.exp(ptl.tensor(general.ravel())).numpy().reshape(-1, lanes)[:, 0]
    np.testing.assert_array_equal(np.ascontiguousarray(got_fast).view(np.uint8),
                                  np.ascontiguousarray(got_general).view(np.uint8))
    assert np.isinf(ptl.exp(ptl.tensor(general.ravel())).numpy()[lanes - 1])


def test_sigmoid_is_exactly_one_from_20():
    """sigmoid clamps -x at -20: from x = 20 on, e^-x is below half an ulp of 1, so the
    unclamped 1 / (1 + e^-x) rounds to exactly 1 too (checked here in float32 arithmetic)."""
    x = np.concatenate([np.linspace(20, 120, 50001), [20.0, 87.0, 88.8, 104.0, 1e30, np.inf]]
                       ).astype(np.float32)
    with np.errstate(under="ignore"):
        unclamped = np.float32(1) / (np.float32(1) + np.exp(-x))
    assert (unclamped == 1).all()
    assert (ptl.sigmoid(ptl.tensor(x)).numpy() == 1).all()
    near = np.linspace(10, 20, 10001).astype(np.float32)
    ref = 1 / (1 + np.exp(-near.astype(np.float64)))
    assert ulps(ptl.sigmoid(ptl.tensor(near)).numpy(), ref, np.float32).max() <= 1.5
    assert np.isnan(ptl.sigmoid(ptl.tensor([np.nan], dtype=ptl.float32)).item())


def test_exp_strided_and_tail():
    x = np.linspace(-5, 5, 2 * 37, dtype=np.float64)
    for n in range(1, 20):
        t = ptl.tensor(x[:n])
        assert_close(ptl.exp(t), np.exp(x[:n]), rtol=1e-15, atol=0)
    t = ptl.tensor(x)[::2]
    assert_close(ptl.exp(t), np.exp(x[::2]), rtol=1e-15, atol=0)


def test_erf_float32_accuracy():
    rng = np.random.default_rng(2)
    x = np.concatenate([rng.uniform(-5, 5, 800000), rng.standard_normal(100000),
                        np.geomspace(1e-30, 4, 100000)]).astype(np.float32)
    got = ptl.erf(ptl.tensor(x)).numpy()
    ref = np.vectorize(math.erf)(x.astype(np.float64))
    rel = np.abs(got - ref) / np.maximum(np.abs(ref), 1e-300)
    assert rel.max() < 1e-6
    assert ulps(got, ref, np.float32).max() <= 4


def test_erf_edges():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 3.92, 3.94, -3.94, 1.0, -1.0, 1e-40],
                 np.float32)
    got = ptl.erf(ptl.tensor(x)).numpy()
    ref = np.array([math.erf(v) if not np.isnan(v) else np.nan for v in x.astype(np.float64)])
    np.testing.assert_allclose(got[:-1], ref[:-1], rtol=1e-6, atol=0)
    assert ulps(got[-1:], ref[-1:], np.float32).max() <= 1     # a subnormal result
    assert np.signbit(got[1]) and got[2] == 1 and got[3] == -1 and np.isnan(got[4])
    assert_close(ptl.erf(ptl.tensor(x.astype(np.float64))), ref, rtol=1e-15, atol=0)


def _softmax_ref(x, log):
    m = x.max(-1, keepdims=True)
    m = np.where(np.isneginf(m), 0, m)
    with np.errstate(invalid="ignore"):
        d = x - m
        s = np.exp(d).sum(-1, keepdims=True)
        return d - np.log(s) if log else np.exp(d) / s


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
@pytest.mark.parametrize("n", [1, 3, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 65, 1000])
def test_softmax_rows(log, dtype, n):
    npdt = np.float32 if dtype == ptl.float32 else np.float64
    x = np.random.default_rng(n).standard_normal((5, n)).astype(npdt) * 10
    fn = ptl.log_softmax if log else ptl.softmax
    assert_close(fn(ptl.tensor(x), -1), _softmax_ref(x.astype(np.float64), log), dtype=dtype)
    # a transposed input (made contiguous inside) gives the same rows
    t = ptl.tensor(np.ascontiguousarray(x.T)).t()
    assert_close(fn(t, -1), _softmax_ref(x.astype(np.float64), log), dtype=dtype)


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_specials_match_torch(log, dtype):
    x = np.random.default_rng(3).standard_normal((6, 11)).astype(dtype)
    x[0, 9] = np.nan                      # nan in the tail
    x[1, 2] = np.nan                      # nan in a full 8-lane block
    x[2, :] = -np.inf                     # all -inf
    x[3, 4] = np.inf
    x[4, 1] = -np.inf
    x[5, :] = 1e30 if dtype == np.float32 else 1e300
    name = "log_softmax" if log else "softmax"
    got = getattr(ptl, name)(ptl.tensor(x), -1).numpy()
    ref = golden(lambda: getattr(torch, name)(torch.tensor(x), -1)).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-7, equal_nan=True)


def test_cross_entropy_matches_torch():
    x = np.random.default_rng(4).standard_normal((64, 100)).astype(np.float32) * 3
    y = np.random.default_rng(5).integers(0, 100, 64)
    got = F.cross_entropy(ptl.tensor(x), ptl.tensor(y))
    x64 = x.astype(np.float64)
    top = x64.max(1)
    lse = top + np.log(np.exp(x64 - top[:, None]).sum(1))
    ref = np.mean(lse - x64[np.arange(64), y])
    assert abs(got.item() - ref) <= 1e-5 * abs(ref)
    if torch is not None:
        ref = torch.nn.functional.cross_entropy(torch.tensor(x), torch.tensor(y)).item()
        assert abs(got.item() - ref) <= 1e-5 * abs(ref)


@pytest.mark.parametrize("op", ["amax", "amin"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 5, 8, 13, 64, 1027])
def test_amax_amin_rows(op, dtype, n):
    x = np.random.default_rng(n).standard_normal((4, n)).astype(dtype)
    ref = getattr(np, op)(x.astype(np.float64), axis=-1)
    assert_close(getattr(ptl.tensor(x), op)(-1), ref, rtol=0, atol=0)
    assert_close(getattr(ptl.tensor(x), op)(), getattr(np, op)(x.astype(np.float64)),
                 rtol=0, atol=0)


@pytest.mark.parametrize("op", ["amax", "amin", "max", "min"])
@pytest.mark.parametrize("pos", [0, 3, 8, 15, 16, 20])
def test_maxmin_nan_anywhere(op, pos):
    x = np.random.default_rng(pos).standard_normal((3, 21)).astype(np.float32)
    x[1, pos] = np.nan
    x[2, pos] = np.inf if op in ("amax", "max") else -np.inf
    fn = (lambda t: getattr(t, op)(-1)) if op.startswith("a") else \
        (lambda t: getattr(t, op)())
    got = fn(ptl.tensor(x)).numpy()
    ref = getattr(np, op)(x, axis=-1 if op.startswith("a") else None)   # NaN propagates
    np.testing.assert_array_equal(got, ref)
    if torch is not None:
        np.testing.assert_array_equal(got, fn(torch.tensor(x)).numpy())


def _gelu_ref(x):
    return 0.5 * x * np.vectorize(math.erfc)(-x / math.sqrt(2))


def _gelu_grad_ref(g, x):
    cdf = 0.5 * np.vectorize(math.erfc)(-x / math.sqrt(2))
    return g * (cdf + x * np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi))


def test_gelu_float32_accuracy():
    # below -7 the double formulas (used there, as before) lose 1 + erf to cancellation
    x = np.concatenate([np.linspace(-7, 16, 60001), np.random.default_rng(6).standard_normal(
        50001) * 3, [-5.5, -3, -1e-30, 1e-30, 12.999999, 13, 13.000001, 1e30]]).astype(np.float32)
    x64 = x.astype(np.float64)
    assert_close(F.gelu(ptl.tensor(x)), _gelu_ref(x64), dtype=ptl.float32, rtol=2e-6,
                 atol=1e-12)
    g = np.random.default_rng(7).standard_normal(x.size).astype(np.float32)
    got = ptl.ops.aten.gelu_backward(ptl.tensor(g), ptl.tensor(x))
    # cdf and x pdf cancel near x = -0.75: an absolute error of a few float ulps of |g| / 4
    assert_close(got, _gelu_grad_ref(g.astype(np.float64), x64), rtol=2e-6,
                 atol=1e-7 * np.abs(g).max())


def test_gelu_constants_are_the_fit_tools():
    """The CDF polynomial in activation.c is what tools/fit_gelu_cdf.py fits, and the fit is
    as accurate in float as the Note says."""
    import importlib.util
    import re
    spec = importlib.util.spec_from_file_location("fit", os.path.join(ROOT, "tools",
                                                                      "fit_gelu_cdf.py"))
    fit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fit)
    src = open(os.path.join(ROOT, "src", "aten", "native", "activation.c")).read()
    p = float(re.search(r"#define GELU_P ([-0-9.e+]+)f", src).group(1))
    body = re.search(r"gelu_cdf_coef\[\] = \{([^}]*)\}", src).group(1)
    coef = [float(c.strip().rstrip("f")) for c in body.split(",")]
    assert np.float32(p) == fit.P
    np.testing.assert_allclose(coef, fit.fit(), rtol=1e-4, atol=1e-6)
    x = np.linspace(0, fit.XMAX, 20001).astype(np.float32)
    got = fit.horner_float32(np.float32(coef), fit.u_of(x).astype(np.float64))
    assert np.abs(got / fit.half_erfcx(x.astype(np.float64)) - 1).max() < 4e-7


def test_gelu_exp_table_is_two_to_the_sixteenths():
    """Note [Vector gelu exp]: the table holds 2^(j/16) rounded to float."""
    import re
    src = open(os.path.join(ROOT, "src", "aten", "native", "activation.c")).read()
    body = re.search(r"gelu_exp2_16th\[16\] = \{([^}]*)\}", src).group(1)
    got = np.array([float.fromhex(c.strip().rstrip("f")) for c in body.split(",")])
    np.testing.assert_array_equal(got, np.float32(2.0 ** (np.arange(16) / 16)))


def test_gelu_clamp_gives_the_double_formulas_answer():
    # the vector CDF clamps |x| at 12 (Note [Vector activations]); from 13 on gelu is x and
    # its derivative 1, and at +inf the derivative is cdf + inf * 0 = nan, as in double
    x = np.array([12.5, 13, 13.5, 20, 1e4, 1e30, 3e38, np.inf] * 3, np.float32)
    y = F.gelu(ptl.tensor(x)).numpy()
    np.testing.assert_array_equal(y[x >= 13], x[x >= 13])
    dy = ptl.ops.aten.gelu_backward(ptl.ones(x.size), ptl.tensor(x)).numpy()
    with np.errstate(over="ignore", invalid="ignore"):
        ref = _gelu_grad_ref(1.0, x.astype(np.float64)).astype(np.float32)
    assert np.isnan(ref[x == np.inf]).all()
    np.testing.assert_array_equal(dy, ref)


def test_gelu_backward_broadcast_grad_and_strided():
    x = np.random.default_rng(8).standard_normal((4, 33)).astype(np.float32) * 3
    xt = ptl.tensor(x).requires_grad_(True)
    F.gelu(xt).sum().backward()
    if torch is not None:
        tt = torch.tensor(x).requires_grad_(True)
        torch.nn.functional.gelu(tt).sum().backward()
        np.testing.assert_allclose(xt.grad.numpy(), tt.grad.numpy(), rtol=1e-5, atol=1e-7)
    ref = _gelu_grad_ref(1.0, x.astype(np.float64))
    assert_close(xt.grad, ref, rtol=2e-6, atol=1e-7)
    s = ptl.tensor(np.ascontiguousarray(x.T)).t()
    assert_close(F.gelu(s), _gelu_ref(x.astype(np.float64)), rtol=2e-6, atol=1e-12)


def test_gelu_specials():
    # torch 2.13's answer depends on the CPU: its AVX2 loops give exactly these values, its
    # AVX-512 loops give nan for gelu(inf), so the reference is
    # written out (x * Phi(x); -inf * 0 is nan in both) rather than asked of torch
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0] + [1.0] * 8, np.float32)
    got = F.gelu(ptl.tensor(x)).numpy()
    ref = np.array([np.nan, np.inf, np.nan, 0.0, 0.0] + [0.5 * (1 + math.erf(2 ** -0.5))] * 8,
                   np.float32)
    np.testing.assert_allclose(got, ref, rtol=2e-7, atol=0, equal_nan=True)   # -0.0 == 0.0


@pytest.mark.skipif("PTL_CPU_CAPABILITY" in os.environ,
                    reason="already running with a capability chosen by a parent run")
@pytest.mark.parametrize("cap", ["default", "avx2"])
def test_portable_and_avx2_loops(cap):
    """Reruns this file with the vector loops switched off, and with AVX2 only."""
    rerun_with_capability(__file__, cap)


def test_silu_float32_accuracy_and_grad():
    x = np.concatenate([np.linspace(-90, 90, 20001), [np.nan, np.inf, -np.inf],
                        np.random.default_rng(9).standard_normal(30001) * 4]).astype(np.float32)
    x64 = x.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        ref = x64 / (1 + np.exp(-x64))
    assert_close(F.silu(ptl.tensor(x)), ref, dtype=ptl.float32, rtol=1e-6, atol=1e-30)
    g = np.random.default_rng(10).standard_normal(x.size).astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        sg = 1 / (1 + np.exp(-x64))
        gref = g * sg * (1 + x64 * (1 - sg))
    got = ptl.ops.aten.silu_backward(ptl.tensor(g), ptl.tensor(x))
    # 1 + x (1 - s) cancels near x = -1.28: an absolute error of a few ulps of |g|
    assert_close(got, gref, rtol=2e-6, atol=1e-7 * np.abs(g).max())
    xt = ptl.tensor(x[-40:]).requires_grad_(True)
    F.silu(xt).sum().backward()
    tail_sg, tail_x = sg[-40:], x64[-40:]
    np.testing.assert_allclose(xt.grad.numpy(), tail_sg * (1 + tail_x * (1 - tail_sg)),
                               rtol=1e-5, atol=1e-7)
    if torch is not None:
        tt = torch.tensor(x[-40:]).requires_grad_(True)
        torch.nn.functional.silu(tt).sum().backward()
        np.testing.assert_allclose(xt.grad.numpy(), tt.grad.numpy(), rtol=1e-5, atol=1e-7)


def _expm1_points():
    """float32 points for expm1: every 1009th positive finite bit pattern, 0.1% of the
    subnormals, 2001 consecutive floats around each edge of the reduction (x = (k + 1/2) ln2,
    where n changes) and of the clamps, all with both signs, plus the specials."""
    lattice = np.arange(0, 0x7f800000, 1009, dtype=np.uint32)
    subnormal = np.arange(1, 0x800000, 997, dtype=np.uint32)
    edges = np.concatenate([(np.arange(-127, 129) + 0.5) * math.log(2),
                            [88.0, 87.0, 17.33, 17.4, 88.72283935546875, 0.3, 1e-4]])
    edges = np.abs(edges).astype(np.float32).view(np.uint32)
    near = (edges[:, None].astype(np.int64) + np.arange(-1000, 1001)).ravel().astype(np.uint32)
    pos = np.concatenate([lattice, subnormal, near]).view(np.float32)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, np.finfo(np.float32).max,
                        -np.finfo(np.float32).max, 89.0, -89.0, 1000.0, -1000.0], np.float32)
    return np.concatenate([pos, -pos, special])


def test_expm1_float32_max_ulp():
    x = _expm1_points()
    got = ptl.expm1(ptl.tensor(x)).numpy()
    with np.errstate(over="ignore"):
        ref = np.expm1(x.astype(np.float64))
    err = ulps(got, ref, np.float32)
    worst = int(err.argmax())
    # measured 1.23 (at x = 16.6, where 2^n rh + 2^n - 1 rounds above 2^24); libm's expm1f
    # (the portable loops) is within 0.5
    assert err.max() <= 1.5, (x[worst], got[worst], ref[worst])
    # tiny x: expm1(x) rounds to x itself
    tiny = np.concatenate([x[np.abs(x) < 1e-8], [1e-45, -1e-45, 1.17e-38]]).astype(np.float32)
    np.testing.assert_array_equal(ptl.expm1(ptl.tensor(tiny)).numpy(), tiny)


def test_expm1_edges():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 88.0, 88.7, 88.72283935546875, 89.0,
                  -87.0, -87.5, -1000.0, -17.4, 1e-45, -1e-45, 3e38, -3e38] * 3, np.float32)
    got = ptl.expm1(ptl.tensor(x)).numpy()
    with np.errstate(over="ignore"):
        ref = np.expm1(x.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(got[np.isinf(ref) | (ref == -1) | (x == 0)],
                                  ref[np.isinf(ref) | (ref == -1) | (x == 0)])
    assert np.signbit(got[1]) and not np.signbit(got[0]) and np.isnan(got[4])
    assert ulps(got, ref.astype(np.float64), np.float32).max() <= 1.5
    # float64 stays on libm's expm1
    x8 = np.array([1e-300, -1e-17, 0.3, -0.7, 20.0, 700.0, -40.0])
    np.testing.assert_array_equal(ptl.expm1(ptl.tensor(x8)).numpy(), np.expm1(x8))


# (alpha, scale, input_scale): elu, selu, celu(0.7) and celu with a negative alpha
ELU_PARAMS = [(1.0, 1.0, 1.0), (0.3, 1.0, 1.0),
              (1.6732632423543772, 1.0507009873554805, 1.0), (0.7, 1.0, 1 / 0.7),
              (-0.5, 1.0, -2.0)]


def _elu_points(input_scale):
    rng = np.random.default_rng(12)
    lo = -40.0 if input_scale < 0 else -120.0   # beyond, e^(x input_scale) overflows float
    x = np.concatenate([rng.standard_normal(100000) * 4, rng.uniform(lo, 5, 50000),
                        -np.geomspace(1e-38, 40, 20000), np.geomspace(1e-38, 40, 1000),
                        [0.0, -0.0, 1e-45, -1e-45]])
    return x.astype(np.float32)


def _elu_refs(x, g, alpha, scale, input_scale):
    """elu, its slope times g from x, and from the result, in float64 with the parameters
    and the products alpha scale, input_scale alpha scale rounded to float as the kernel
    takes them"""
    a, s, i = (float(np.float32(v)) for v in (alpha, scale, input_scale))
    x = x.astype(np.float64)
    neg = x <= 0
    y = np.where(x < 0, float(np.float32(alpha * scale)) * np.expm1(x * i), s * x)
    dx = g * np.where(neg, float(np.float32(i * alpha * scale)) * np.exp(x * i), s)
    return y, dx


def _assert_ulps(got, ref, bound, what, coef=None):
    """ulp error against ref (float64); where ref = coef e^t with e^t subnormal in float (its
    absolute error a few steps of 2^-149), |got - ref| within (4 |coef| + 1) 2^-149"""
    err = ulps(got, ref, np.float32)
    if coef is not None:
        coef = np.abs(np.asarray(coef, np.float64))
        tiny = np.abs(ref) < coef * np.finfo(np.float32).tiny
        with np.errstate(divide="ignore", invalid="ignore"):
            err = np.where(tiny, np.abs(got - ref) / ((4 * coef + 1) * 2.0 ** -149) * bound,
                           err)
    worst = int(err.argmax())
    assert err.max() <= bound, (what, worst, got[worst], ref[worst])


@pytest.mark.parametrize("alpha,scale,input_scale", ELU_PARAMS)
def test_elu_float32_accuracy(alpha, scale, input_scale):
    """elu (and so selu and celu) and both backwards against float64: the forward within
    about 2 ulps, the backward within 3 (e^t, its coefficient, and the product with g)."""
    x = _elu_points(input_scale)
    g = np.random.default_rng(13).standard_normal(x.size).astype(np.float32)
    y_ref, dx_ref = _elu_refs(x, g.astype(np.float64), alpha, scale, input_scale)
    y = ptl.ops.aten.elu(ptl.tensor(x), alpha, scale, input_scale).numpy()
    _assert_ulps(y, y_ref, 2.5, "elu", np.float32(alpha * scale))
    dx = ptl.ops.aten.elu_backward(ptl.tensor(g), alpha, scale, input_scale, False,
                                   ptl.tensor(x)).numpy()
    coef = g * np.float32(input_scale * alpha * scale)
    _assert_ulps(dx, dx_ref, 3.5, "elu_backward", coef)
    if alpha >= 0:
        # from the result: input_scale (y + alpha scale) cancels as y nears -alpha scale, so
        # the reference takes the same float y, and the error of alpha scale (rounded to
        # float by the vector loops, exact in the double loops) is allowed for
        y64 = y.astype(np.float64)
        a_s = float(np.float32(alpha * scale))
        i, s = float(np.float32(input_scale)), float(np.float32(scale))
        ref = g * np.where(y64 <= 0, i * (y64 + a_s), s)
        got = ptl.ops.aten.elu_backward(ptl.tensor(g), alpha, scale, input_scale, True,
                                        ptl.tensor(y)).numpy()
        err = np.abs(got - ref) - np.abs(g * i * a_s) * 2.0 ** -24
        assert (err <= 3 * 2.0 ** -24 * np.abs(ref)).all()


def test_elu_specials():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, -1e30, 1e30, -100.0] * 3, np.float32)
    for alpha, scale, input_scale in ELU_PARAMS:
        got = ptl.ops.aten.elu(ptl.tensor(x), alpha, scale, input_scale).numpy()
        with np.errstate(over="ignore", invalid="ignore"):
            ref = ptl.ops.aten.elu(ptl.tensor(x.astype(np.float64)), alpha, scale,
                                   input_scale).numpy().astype(np.float32)
        finite = np.isfinite(ref) & (np.abs(x) < 1e30)
        np.testing.assert_allclose(got[finite], ref[finite], rtol=3e-7, atol=0)
        np.testing.assert_array_equal(np.signbit(got[3:5]), np.signbit(ref[3:5]))
        assert np.isnan(got[0]) and got[1] == np.inf
        ones = ptl.ones(x.size)
        dx = ptl.ops.aten.elu_backward(ones, alpha, scale, input_scale, False,
                                       ptl.tensor(x)).numpy()
        dref = ptl.ops.aten.elu_backward(ones.double(), alpha, scale, input_scale, False,
                                         ptl.tensor(x.astype(np.float64))).numpy()
        with np.errstate(over="ignore"):
            dref = dref.astype(np.float32)
        np.testing.assert_allclose(dx, dref, rtol=3e-7, atol=0, equal_nan=True)


@pytest.mark.parametrize("n", [1, 40])
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
def test_elu_zeros_take_the_positive_side_forward(n, dtype):
    """PyTorch's elu gives +-0 scale x (a zero keeps its sign, where alpha scale expm1(0)
    would flip it for a negative alpha), and its backward the negative side's slope: PyTorch's
    values, in the vector loops (n = 40) and the scalar ones"""
    x = ptl.tensor([0.0, -0.0] * n, dtype=dtype)
    y = ptl.ops.aten.elu(x, -1, 1, 1).numpy()
    assert (y == 0).all() and not np.signbit(y[0]) and np.signbit(y[1])
    dx = ptl.ops.aten.elu_backward(ptl.ones_like(x), 2, 1, 1, False, x).numpy()
    np.testing.assert_array_equal(dx, np.full(2 * n, 2.0))


@pytest.mark.parametrize("n", [1, 40])
def test_elu_alpha_scale_is_one_product(n):
    """The negative side's coefficient alpha scale is multiplied first, as PyTorch's kernels
    do: -inf * expm1 where alpha scale overflows, though expm1(x) alpha scale would not; at
    +-0 the positive side, so no 0 * inf.  Values from PyTorch 2.13."""
    x = ptl.tensor([-0.0, 0.0, -2.0, -5e-324] * n, dtype=ptl.float64)
    y = ptl.ops.aten.elu(x, 2, -1e308, 0.5).numpy()
    np.testing.assert_array_equal(y, np.array([0.0, -0.0, np.inf, np.nan] * n))
    assert not np.signbit(y[0]) and np.signbit(y[1])
    g = ptl.ones(2, dtype=ptl.float64)
    dx = ptl.ops.aten.elu_backward(g, 1e308, 1e308, 1e-308, False,
                                   ptl.tensor([-1.0, 0.0], dtype=ptl.float64))
    np.testing.assert_array_equal(dx.numpy(), [np.inf, np.inf])
    xf = ptl.full((8 * n,), -2.0)
    np.testing.assert_array_equal(ptl.ops.aten.elu(xf, 10, 1e38, 1).numpy(), -np.inf)
    np.testing.assert_array_equal(ptl.ops.aten.elu(xf[::2], 10, 1e38, 1).numpy(), -np.inf)


@pytest.mark.parametrize("n", [1, 7, 8, 9, 15, 16, 17, 31, 33, 100])
def test_elu_tails_strided_and_broadcast_grad(n):
    """Every element goes through the same formula whatever the length (masked tails); a
    strided input (the double loop) and a broadcast grad_output agree with it."""
    x = np.random.default_rng(n).standard_normal((3, n)).astype(np.float32) * 4
    full = F.selu(ptl.tensor(x)).numpy()
    for r in range(3):
        np.testing.assert_array_equal(F.selu(ptl.tensor(x[r])).numpy(), full[r])
    s = ptl.tensor(np.ascontiguousarray(x.T)).t()
    np.testing.assert_allclose(F.selu(s).numpy(), full, rtol=5e-7, atol=1e-37)
    g1 = ptl.tensor([0.5], dtype=ptl.float32).expand(3 * n)
    gb = ptl.ops.aten.elu_backward(g1, 1.0, 1, 1, False, ptl.tensor(x.ravel())).numpy()
    gf = ptl.ops.aten.elu_backward(ptl.full([3 * n], 0.5), 1.0, 1, 1, False,
                                   ptl.tensor(x.ravel())).numpy()
    np.testing.assert_array_equal(gb, gf)
    xt = ptl.tensor(x).requires_grad_(True)
    F.celu(xt, 0.7).sum().backward()
    x64 = x.astype(np.float64)
    a = float(np.float32(0.7))
    ref = np.where(x64 > 0, 1.0, np.exp(x64 * float(np.float32(1 / 0.7))))
    np.testing.assert_allclose(xt.grad.numpy(), ref, rtol=5e-7, atol=0)
    if torch is not None:
        tt = torch.tensor(x).requires_grad_(True)
        torch.nn.functional.celu(tt, 0.7).sum().backward()
        np.testing.assert_allclose(xt.grad.numpy(), tt.grad.numpy(), rtol=1e-6, atol=0)
        np.testing.assert_allclose(full, torch.nn.functional.selu(torch.tensor(x)).numpy(),
                                   rtol=1e-6, atol=0)
    assert a > 0


def test_log1p_float32_accuracy_and_edges():
    """Note [Vector expm1]'s log1p: log(1 + x) plus the rounding error of 1 + x, over every
    1009th float above -1 and around the edges; x itself where 1 + x rounds to 1."""
    pos = np.arange(0, 0x7f800000, 1009, dtype=np.uint32).view(np.float32)
    neg = -np.arange(0, 0x3f800000, 1009, dtype=np.uint32).view(np.float32)
    edges = np.float32([-1.0, -0.9999999, -0.5, 1e-8, -1e-8, 5.96e-8, -2.98e-8, 1.0, 3e38])
    x = np.concatenate([pos, neg, edges])
    got = ptl.log1p(ptl.tensor(x)).numpy()
    with np.errstate(divide="ignore"):
        err = ulps(got, np.log1p(x.astype(np.float64)), np.float32)
    assert err.max() <= 2.0, x[err.argmax()]     # measured 1.44
    s = np.float32([0.0, -0.0, np.inf, -1.0, -1.5, -np.inf, np.nan, 1e-45, -1e-45] * 3)
    got = ptl.log1p(ptl.tensor(s)).numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        ref = np.log1p(s)
    np.testing.assert_array_equal(got, ref)
    number = ~np.isnan(ref)
    np.testing.assert_array_equal(np.signbit(got[number]), np.signbit(ref[number]))


def _points_80():
    rng = np.random.default_rng(14)
    return np.concatenate([rng.standard_normal(200000) * 5, rng.uniform(-100, 100, 50000),
                           -np.geomspace(1e-30, 100, 20000), np.geomspace(1e-30, 100, 20000),
                           [0.0, -0.0, 20.0, 20.000002, 19.999998]]).astype(np.float32)


@pytest.mark.parametrize("beta,threshold", [(1.0, 20.0), (2.0, 30.0), (0.5, 5.0)])
def test_softplus_float32_accuracy_and_grad(beta, threshold):
    x = _points_80()
    x64, b = x.astype(np.float64), float(np.float32(beta))
    t = x64 * b
    with np.errstate(over="ignore"):
        ref = np.where(t > threshold, x64, (np.maximum(t, 0) + np.log1p(np.exp(-np.abs(t)))) / b)
    got = F.softplus(ptl.tensor(x), beta, threshold).numpy()
    _assert_ulps(got, ref, 2.5, "softplus")
    g = np.random.default_rng(15).standard_normal(x.size).astype(np.float32)
    with np.errstate(over="ignore"):
        sig = np.where(t < 0, np.exp(t) / (1 + np.exp(t)), 1 / (1 + np.exp(-t)))
    gref = g * np.where(t > threshold, 1.0, sig)
    got = ptl.ops.aten.softplus_backward(ptl.tensor(g), ptl.tensor(x), beta, threshold).numpy()
    _assert_ulps(got, gref, 4.0, "softplus_backward", g * sig)


def test_log_sigmoid_float32_accuracy_and_grad():
    x = _points_80()
    x64 = x.astype(np.float64)
    ref = np.minimum(x64, 0) - np.log1p(np.exp(-np.abs(x64)))
    _assert_ulps(F.logsigmoid(ptl.tensor(x)).numpy(), ref, 2.5, "log_sigmoid")
    g = np.random.default_rng(16).standard_normal(x.size).astype(np.float32)
    sig = np.where(x64 > 0, np.exp(-x64) / (1 + np.exp(-x64)), 1 / (1 + np.exp(x64)))
    buffer = ptl.ops.aten.log_sigmoid_forward(ptl.tensor(x))[1]
    got = ptl.ops.aten.log_sigmoid_backward(ptl.tensor(g), ptl.tensor(x), buffer).numpy()
    _assert_ulps(got, g * sig, 4.0, "log_sigmoid_backward", g * sig)


def test_mish_float32_accuracy_and_grad():
    x = _points_80()
    x64 = x.astype(np.float64)
    with np.errstate(over="ignore"):
        t = np.tanh(np.where(x64 > 20, x64, np.log1p(np.exp(x64))))
    assert_close(F.mish(ptl.tensor(x)), x64 * t, dtype=ptl.float32, rtol=6e-7, atol=1e-37)
    g = np.random.default_rng(17).standard_normal(x.size).astype(np.float32)
    e = np.exp(np.minimum(x64, 40))
    n = e * (e + 2)
    gref = g * (t + x64 / (1 + np.exp(-x64)) * 4 * (n + 1) / (n + 2) ** 2)
    got = ptl.ops.aten.mish_backward(ptl.tensor(g), ptl.tensor(x))
    # t and x sigmoid(x) (1 - t^2) cancel near x = -1.19 (mish's minimum): an absolute error
    # of a few ulps of |g| / 4 there
    assert_close(got, gref, rtol=2e-6, atol=1e-7 * np.abs(g).max())
    if torch is not None:
        tt = torch.tensor(x).requires_grad_(True)
        torch.nn.functional.mish(tt).backward(torch.tensor(g))
        np.testing.assert_allclose(got.numpy(), tt.grad.numpy(), rtol=1e-5,
                                   atol=1e-6 * np.abs(g).max())


@pytest.mark.parametrize("layout", ["contiguous", "strided"])
def test_mish_grad_float32_is_one_past_the_threshold(layout):
    """mish's slope t + x sigmoid(x) (1 - t^2) is 1 in float past softplus's threshold 20
    (t is 1, 1 - t^2 is 0), for x up to the largest float, in the vector loop and the
    scalar one (fuzzer --torch seed 46, call 509: the vector loop's 1 - t^2, clamped at
    4 e^-40, times x made 1.2 at 1e16, inf at 3e38 and at inf); +inf is nan, as PyTorch's
    formula (inf times 0), -inf and nan too"""
    big = np.float32([20.0, 20.5, 21.0, 1e4, 1e7, 1e10, 1e16, 1e30, 3.4e38])
    x = np.concatenate([np.tile(big, 5), np.float32([np.inf, -np.inf, np.nan])])
    g = np.random.default_rng(18).uniform(0.5, 2.0, x.size).astype(np.float32)
    xt, gt = ptl.tensor(x), ptl.tensor(g)
    if layout == "strided":
        xt = ptl.stack([xt, xt], 1)[:, 0]
        gt = ptl.stack([gt, gt], 1)[:, 0]
    got = ptl.ops.aten.mish_backward(gt, xt).numpy()
    np.testing.assert_array_equal(got[:-3], g[:-3])
    assert np.isnan(got[-3:]).all()
    if torch is not None:
        want = torch.ops.aten.mish_backward(torch.tensor(g), torch.tensor(x)).numpy()
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name,bound", [("sinh", 2.5), ("cosh", 2.5)])
def test_sinh_cosh_float32_accuracy_and_edges(name, bound):
    """sinh from expm1 (no cancellation near 0) and cosh from exp, both through (w / 2) w
    above 88 where e^|x| overflows first: every 1009th float of both signs, the floats
    around 88 and the overflow edge, within 2.5 ulp (measured 2.1 and 1.4 below 88, 2.3
    above)."""
    lattice = np.arange(0, 0x7f800000, 1009, dtype=np.uint32).view(np.float32)
    edges = np.float32([88.0, 89.41599, 1e-4, 0.5]).view(np.uint32)
    near = (edges[:, None].astype(np.int64) + np.arange(-2000, 2001)).ravel()
    pos = np.concatenate([lattice, near.astype(np.uint32).view(np.float32)])
    x = np.concatenate([pos, -pos])
    got = getattr(ptl, name)(ptl.tensor(x)).numpy()
    with np.errstate(over="ignore"):
        ref = getattr(np, name)(x.astype(np.float64))
    err = ulps(got, ref, np.float32)
    assert err.max() <= bound, x[err.argmax()]
    s = np.float32([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1e-30, 100.0, -100.0])
    got = getattr(ptl, name)(ptl.tensor(s)).numpy()
    with np.errstate(over="ignore"):
        ref = getattr(np, name)(s)
    np.testing.assert_array_equal(got, ref)
    number = ~np.isnan(ref)
    np.testing.assert_array_equal(np.signbit(got[number]), np.signbit(ref[number]))


@pytest.mark.parametrize("threads", [1, 2])
def test_erfinv_float32_accuracy_and_edges(threads):
    """Giles' single-precision erfinv (Note [Vector atan2 and erfinv]) within 3.6 ulp of the
    float64 erfinv (measured 3.51 near -0.276), including the 5000 floats below 1 where
    1 - |y| is a few ulps, every 997th float in [0, 1) and both signs; exact specials; each
    length from 0 to 40 (vector tails) and strided input give the contiguous results."""
    gen = np.random.default_rng(5)
    pos = np.concatenate([gen.uniform(0, 1, 200000), np.linspace(0, 1, 20001)]).astype(np.float32)
    pos = np.concatenate([pos, np.float32(1) - np.arange(1, 5000, dtype=np.float32) * 2**-24,
                          np.arange(0, 0x3f800000, 997, dtype=np.uint32).view(np.float32)])
    x = np.concatenate([pos, -pos])
    old = ptl.get_num_threads()
    ptl.set_num_threads(threads)
    try:
        got = ptl.erfinv(ptl.tensor(x)).numpy()
        for n in range(41):
            np.testing.assert_array_equal(ptl.erfinv(ptl.tensor(x[:n])).numpy(), got[:n])
        np.testing.assert_array_equal(ptl.erfinv(ptl.tensor(x)[::3]).numpy(), got[::3])
    finally:
        ptl.set_num_threads(old)
    ref = ptl.erfinv(ptl.tensor(x.astype(np.float64))).numpy()
    assert ulps(got, ref, np.float32).max() <= 3.6
    s = np.float32([0.0, -0.0, 1.0, -1.0, 1.0000001, -2.0, np.nan, np.inf, -np.inf,
                    1e-45, -1e-45, 1e-30, -1e-38])
    ref = np.float32([0.0, -0.0, np.inf, -np.inf, np.nan, np.nan, np.nan, np.nan, np.nan,
                      1e-45, -1e-45])
    got = ptl.erfinv(ptl.tensor(s)).numpy()
    np.testing.assert_array_equal(got[:11], ref)
    np.testing.assert_array_equal(np.signbit(got[:4]), np.signbit(ref[:4]))
    tiny = ptl.erfinv(ptl.tensor(s[11:].astype(np.float64))).numpy()
    assert ulps(got[11:], tiny, np.float32).max() <= 3.6


def _ulps64(got, ref):
    """|got - ref| in units of the last place of the float64 nearest ref (ref long double)."""
    r64 = ref.astype(np.float64)
    with np.errstate(invalid="ignore"):
        err = np.abs(got.astype(np.longdouble) - ref) / np.spacing(np.abs(r64)).astype(
            np.longdouble)
    same = (got == r64) | (np.isnan(got) & np.isnan(r64))
    return np.where(same, 0.0, err.astype(np.float64))


def _ld_sigmoid(v):
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-v))


F64_REFS = {"sin": np.sin, "cos": np.cos, "tanh": np.tanh, "sigmoid": _ld_sigmoid}


def _f64_bound(name):
    """1 ulp; the portable run's libm tanh is off by up to 2.1 ulp, its sigmoid's
    1 / (1 + exp(-x)) by about 2"""
    return 2.5 if FALLBACK and name in ("tanh", "sigmoid") else 1.0


def _f64_points(name):
    """1e6 points: |x| up to 1, 10 and 40, tiny magnitudes down to 1e-300; sin and cos also
    up to 1e6 (the fast path's end, 2^20, and past it), near multiples of pi/2 and huge
    arguments; sigmoid also where e^-x overflows (x < -708) and its results are subnormal."""
    rng = np.random.default_rng(21)
    sign = rng.choice([-1.0, 1.0], 100000)
    parts = [rng.uniform(-1, 1, 300000), rng.uniform(-10, 10, 200000),
             rng.uniform(-40, 40, 100000), sign * np.exp(rng.uniform(-690, 0, 100000))]
    if name in ("sin", "cos"):
        k = np.arange(1, 100001, dtype=np.float64)
        parts += [rng.uniform(-2e6, 2e6, 100000), k * (np.pi / 2),
                  np.nextafter(k * (np.pi / 2), np.inf), sign * 10 ** rng.uniform(6, 300, 100000)]
    if name == "sigmoid":
        parts += [rng.uniform(-746, -700, 100000), rng.uniform(30, 40, 100000)]
    return np.concatenate(parts)


@pytest.mark.parametrize("name", ["sin", "cos", "tanh", "sigmoid"])
def test_float64_trig_max_ulp(name):
    """Note [Vector float64 sin, cos, tanh, sigmoid]: within 1 ulp of a long double reference
    (measured 0.77 sin, 0.75 cos, 0.91 tanh, 0.63 sigmoid); the portable run's libm loops
    within _f64_bound (and sigmoid's 1 / (1 + exp(-x)) gives 0 for the subnormal
    results)."""
    x = _f64_points(name)
    got = getattr(ptl, name)(ptl.tensor(x)).numpy()
    ref = F64_REFS[name](x.astype(np.longdouble))
    if name in ("sin", "cos"):
        # past 2^20 the slow lanes are libm's, bit for bit (long double's reduction of some
        # huge arguments is the less accurate reference there)
        slow = np.abs(x) > 2.0**20
        np.testing.assert_array_equal(got[slow], F64_REFS[name](x[slow]))
        x, got, ref = x[~slow], got[~slow], ref[~slow]
    err = _ulps64(got, ref)
    if FALLBACK and name == "sigmoid":
        keep = x > -700
        err = err[keep]
        x = x[keep]
    assert err.max() < _f64_bound(name), (name, x[np.argmax(err)], err.max())


@pytest.mark.parametrize("name", ["sin", "cos", "tanh", "sigmoid"])
def test_float64_trig_specials(name):
    """nan, +-inf, +-0 (sin(-0) = -0), subnormals, the ends of the fast paths, and sin / cos
    of huge arguments (libm's exact reduction: sin(1e22) = -0.8522...)."""
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 1e-300, 2.0**-27,
                  -(2.0**-27), 1e22, -1e22, 1e300, 2.0**20, np.nextafter(2.0**20, np.inf),
                  6381956970095103 * 2.0**797, np.pi / 2, np.pi, 19.0, 19.5, 20.0, -37.5,
                  38.0, 40.0, 41.0, -708.0, -709.9, -745.0, -746.0, 710.0, -1e300, 1e300])
    got = getattr(ptl, name)(ptl.tensor(x)).numpy()
    with np.errstate(invalid="ignore"):
        ref = F64_REFS[name](x.astype(np.longdouble))
    if name in ("sin", "cos"):
        # past 2^20 (and for inf, nan) the slow lanes are libm's, bit for bit
        slow = ~(np.abs(x) <= 2.0**20)
        with np.errstate(invalid="ignore"):
            np.testing.assert_array_equal(got[slow], F64_REFS[name](x[slow]))
        got, ref = got[~slow], ref[~slow]
    if not (FALLBACK and name == "sigmoid"):
        assert _ulps64(got, ref).max() < _f64_bound(name)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref.astype(np.float64)))
    got = getattr(ptl, name)(ptl.tensor(x)).numpy()   # again whole, for the signs below
    if name in ("sin", "tanh"):
        assert np.signbit(got[1]) and not np.signbit(got[0])
    if name == "sin":
        assert got[10] == np.sin(1e22) and abs(got[10] + 0.8522008497671888) < 1e-15


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", ["sin", "cos", "tanh", "sigmoid"])
def test_float64_trig_tails_strided_threads(name, threads):
    """Every length from 0 to 40 (the masked tails of 4 and 8 lanes) and lengths across the
    thread split give the contiguous result's elements; with 2 threads too.  A strided view
    takes libm's portable loop (tanh within 2.1 ulp, sigmoid about 2)."""
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.standard_normal(70000) * 8, [np.nan, -0.0, 1e22, -710.0]])
    old = ptl.get_num_threads()
    ptl.set_num_threads(threads)
    try:
        f = getattr(ptl, name)
        full = f(ptl.tensor(x)).numpy()
        for n in list(range(41)) + [32767, 32768, 32769, 65537]:
            np.testing.assert_array_equal(f(ptl.tensor(x[:n])).numpy().view(np.uint64),
                                          full[:n].view(np.uint64), err_msg=f"n={n}")
        strided = f(ptl.tensor(x)[::3]).numpy()
    finally:
        ptl.set_num_threads(old)
    ref = F64_REFS[name](x.astype(np.longdouble))
    ref_strided = ref[::3].copy()
    if name == "sigmoid":
        # libm's 1 / (1 + exp(-x)) is 0 for x = -710 (the portable run, the strided view)
        if FALLBACK:
            ref[x < -700] = full[x < -700]
        ref_strided[x[::3] < -700] = strided[x[::3] < -700]
    assert _ulps64(full, ref).max() < _f64_bound(name)
    assert _ulps64(strided, ref_strided).max() < (2.5 if name in ("tanh", "sigmoid") else 1.0)


def _gelu_tanh_ref(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


@pytest.mark.parametrize("threads", [1, 2])
def test_gelu_float32_tails_strided_threads(threads):
    """Note [Vector gelu exp]: every length from 0 to 40 (the masked tails of 8 and 16
    lanes) and lengths across the thread split give the contiguous result's elements, with
    1 and 2 threads, forward and backward, both forms; the values near the table's and the
    clamp's edges (|x| = 12, multiples of sqrt(ln2 / 8)), a strided view and a 0-dim tensor
    stay within the accuracy of test_gelu_float32_accuracy."""
    rng = np.random.default_rng(9)
    edges = np.concatenate([np.sqrt(np.arange(1, 200) * math.log(2) / 8),
                            [11.99, 12.0, 12.01, 5.5, 5.6, 2.0 ** -126, 1e-40, 0.0]])
    x = np.concatenate([rng.standard_normal(70000) * 4, edges, -edges]).astype(np.float32)
    rng.shuffle(x)
    g = rng.standard_normal(x.size).astype(np.float32)
    x64, g64 = x.astype(np.float64), g.astype(np.float64)
    with num_threads(threads):
        for form in ("none", "tanh"):
            fwd = lambda t: F.gelu(t, approximate=form)
            bwd = lambda gt, t: ptl.ops.aten.gelu_backward(gt, t, approximate=form)
            full = fwd(ptl.tensor(x)).numpy()
            full_bwd = bwd(ptl.tensor(g), ptl.tensor(x)).numpy()
            for n in list(range(41)) + [32767, 32768, 32769, 65537]:
                np.testing.assert_array_equal(fwd(ptl.tensor(x[:n])).numpy(), full[:n],
                                              err_msg=f"{form} n={n}")
                np.testing.assert_array_equal(bwd(ptl.tensor(g[:n]), ptl.tensor(x[:n])).numpy(),
                                              full_bwd[:n], err_msg=f"{form} backward n={n}")
            strided = fwd(ptl.tensor(x)[::3]).numpy()
            strided_bwd = bwd(ptl.tensor(g)[::3], ptl.tensor(x)[::3]).numpy()
            zero_dim = fwd(ptl.tensor(x[7])).numpy()
            assert zero_dim.shape == () and zero_dim == full[7]
            if form == "none":
                ref, ref_bwd = _gelu_ref(x64), _gelu_grad_ref(g64, x64)
                atol = 1e-7 * np.abs(g).max()
                pairs = [(full, ref, 1e-12), (strided, ref[::3], 1e-12),
                         (full_bwd, ref_bwd, atol), (strided_bwd, ref_bwd[::3], atol)]
            else:
                ref = _gelu_tanh_ref(x64)
                pairs = [(full, ref, 1e-12), (strided, ref[::3], 1e-12)]
            for got, want, atol in pairs:
                assert_close(ptl.tensor(got), want, rtol=2e-6, atol=atol)


@pytest.mark.parametrize("form", ["none", "tanh"])
def test_gelu_and_sigmoid_float64_gradcheck(form):
    x = ptl.tensor(np.random.default_rng(10).standard_normal(40) * 4).requires_grad_(True)
    assert ptl.autograd.gradcheck(lambda t: F.gelu(t, approximate=form), (x,))
    assert ptl.autograd.gradgradcheck(lambda t: F.gelu(t, approximate=form), (x,))
    assert ptl.autograd.gradcheck(ptl.sigmoid, (x,))
    assert ptl.autograd.gradgradcheck(ptl.sigmoid, (x,))
