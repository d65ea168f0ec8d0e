"""float32 ndtr in float lanes (Note [Float ndtr] in src/aten/gaussian_math.h: special.c's
AVX2 / AVX-512 blocks and the scalar twin ptl_ndtr_f of PTL_CPU_CAPABILITY=default, float16,
bfloat16 and the CUDA kernels), zeta in double lanes (Note [zeta in double lanes] in
special.c) and ndtri's central polynomial in double lanes: accuracy against SciPy in float64 on
random points, at every interval edge of the formulas and both float neighbours, and at the
special values; the vector blocks' lengths (1..33, across the block of 256, 1e6 + 1),
layouts and one or two threads give the same bits; the three capabilities agree (ndtr and
ndtri bit for bit, zeta within a few ulps of libm's pow)."""
import math
import os
import subprocess
import sys

import mpmath
import numpy as np
import pytest
from scipy import special as sp

import pytorchlite as ptl
from helpers import ROOT, num_threads, skip_native_capability

S = ptl.special
F32 = np.float32
# Q's intervals (by the bits of |x| + 2) and the clamp at 15
NDTR_EDGES = [0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0, 14.0, 15.0]


def _neighbours(edges):
    e = np.asarray(edges, dtype=F32)
    return np.concatenate([e, np.nextafter(e, F32(-np.inf)), np.nextafter(e, F32(np.inf))])


def _ndtr_points():
    rng = np.random.default_rng(11)
    e = _neighbours(NDTR_EDGES)
    return np.concatenate([
        e, -e, rng.uniform(-15.5, 6, 20000), rng.uniform(-1, 1, 5000),
        rng.standard_normal(5000) * 3, rng.uniform(-13.2, -12.8, 2000),
        np.array([0.0, -0.0, 1e-45, -1e-45, 1e-38, -1e-38, 1e-20, -1e-20, 5.4, 5.5, -14.1,
                  -14.2, 1e30, -1e30])]).astype(F32)


def _float32_ulps(got, ref):
    """|got - ref| in float32 ulps of ref (the smallest subnormal's below it)"""
    spacing = np.maximum(np.spacing(np.abs(ref).astype(F32)).astype(np.float64), 2.0 ** -149)
    return np.abs(got.astype(np.float64) - ref) / spacing


def test_ndtr_float32_within_two_ulps():
    x = _ndtr_points()
    got = S.ndtr(ptl.tensor(x)).numpy()
    err = _float32_ulps(got, sp.ndtr(x.astype(np.float64)))
    i = int(np.argmax(err))
    assert err[i] <= 2.0, (float(x[i]), float(got[i]), err[i])
    # the subnormal tail (x < -13) within an ulp of the smallest subnormal
    tail = x < -13.0
    assert np.all(err[tail] <= 1.0)


def test_ndtr_float32_special_values():
    x = np.array([0.0, -0.0, np.inf, -np.inf, 15.0, -15.0, 40.0, -40.0, 1e-45, -1e-45,
                  -14.2, -14.1], dtype=F32)
    got = S.ndtr(ptl.tensor(x)).numpy()
    want = np.array([0.5, 0.5, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.5, 0.5, 0.0, 1e-45], F32)
    np.testing.assert_array_equal(got, want)
    assert np.isnan(S.ndtr(ptl.tensor([math.nan], dtype=ptl.float32)).item())
    # NaN among finite lanes stays in its lane
    y = S.ndtr(ptl.tensor([1.0, math.nan, -1.0, math.nan] * 5, dtype=ptl.float32)).numpy()
    assert np.isnan(y[1::2]).all() and np.isfinite(y[0::2]).all()


LENGTHS = list(range(1, 34)) + [255, 256, 257, 511, 513]


@pytest.mark.parametrize("threads", [1, 2])
def test_ndtr_float32_lengths_and_layouts(threads):
    """the vector blocks' full vectors, tails and block edges: each length's bits are each
    element's computed alone (a one-lane tail), also strided in and out and on two threads"""
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(1200) * 8).astype(F32)
    with num_threads(1):
        alone = np.array([S.ndtr(ptl.tensor(x[i:i + 1])).numpy()[0] for i in range(600)])
    with num_threads(threads):
        for n in LENGTHS:
            np.testing.assert_array_equal(S.ndtr(ptl.tensor(x[:n])).numpy(), alone[:n])
        t = ptl.tensor(x)
        np.testing.assert_array_equal(S.ndtr(t[:1200:2]).numpy(), S.ndtr(
            ptl.tensor(x[::2].copy())).numpy())
        out = ptl.empty(1200, dtype=ptl.float32)
        S.ndtr(t[:600], out=out[::2])
        np.testing.assert_array_equal(out.numpy()[::2], alone)


@pytest.mark.parametrize("threads", [1, 2])
def test_ndtr_float32_million(threads):
    x = (np.random.default_rng(9).standard_normal(10 ** 6 + 1) * 6).astype(F32)
    with num_threads(threads):
        got = S.ndtr(ptl.tensor(x)).numpy()
    with num_threads(1):
        ref_bits = S.ndtr(ptl.tensor(x[-300:])).numpy()
    np.testing.assert_array_equal(got[-300:], ref_bits)
    assert np.max(_float32_ulps(got, sp.ndtr(x.astype(np.float64)))) <= 2.0


def _ndtri_points():
    rng = np.random.default_rng(4)
    lo = np.exp(-(1.5 + np.arange(39)) ** 2 / 2)   # the tail rows' edges in r
    e = np.concatenate([lo, 1 - lo[:8], [0.25, 0.75]])
    return np.concatenate([
        e, np.nextafter(e, 0), np.nextafter(e, 1), rng.uniform(0, 1, 6000),
        np.exp(rng.uniform(np.log(1e-300), np.log(0.5), 3000)),
        1 - np.exp(rng.uniform(np.log(1e-16), np.log(0.5), 1000)),
        [0.0, -0.0, 1.0, 0.5, -0.1, 1.1, np.inf, -np.inf, np.nan, 5e-324, 1e-310]])


def test_ndtri_lanes_accuracy():
    p = _ndtri_points()
    for dt in (np.float64, np.float32):
        x = p.astype(dt)
        got = S.ndtri(ptl.tensor(x)).numpy().astype(np.float64)
        ref = sp.ndtri(x.astype(np.float64))
        np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
        np.testing.assert_array_equal(got[np.isinf(ref)], ref[np.isinf(ref)])
        ok = np.isfinite(ref) & (ref != 0)
        tol = 3e-15 if dt == np.float64 else 1.2e-7
        assert np.max(np.abs(got[ok] / ref[ok] - 1)) <= tol


@pytest.mark.parametrize("threads", [1, 2])
def test_ndtri_lanes_lengths(threads):
    """lists of central and tail elements of every length in a block (1..33, 255-257)"""
    p = _ndtri_points()[-3000:]
    with num_threads(1):
        alone = np.array([S.ndtri(ptl.tensor(p[i:i + 1])).item() for i in range(600)])
    with num_threads(threads):
        for n in LENGTHS:
            np.testing.assert_array_equal(S.ndtri(ptl.tensor(p[:n])).numpy(), alone[:n])
        t = ptl.tensor(p)
        np.testing.assert_array_equal(S.ndtri(t[:600:2]).numpy(), alone[::2])


def _zeta_points():
    rng = np.random.default_rng(3)
    s = np.concatenate([rng.uniform(1.01, 30, 3000), 1 + 10 ** rng.uniform(-6, 0, 500),
                        rng.uniform(1.5, 10, 1000)])
    q = np.concatenate([10 ** rng.uniform(-3, 6, 3000), rng.uniform(0.001, 20, 500),
                        rng.uniform(0.5, 5, 1000)])
    es = _neighbours([30.0, 1.5, 2.0])
    eq = _neighbours([1e-3, 1e6, 0.5, 1.0])
    s = np.concatenate([s, np.repeat(es, eq.size), np.nextafter(F32(1), F32(2)) +
                        np.zeros(eq.size)])
    q = np.concatenate([q, np.tile(eq, es.size), eq])
    return s.astype(F32), q.astype(F32)


def test_zeta_float32_accuracy_on_and_off_the_lanes():
    s, q = _zeta_points()
    got = S.zeta(ptl.tensor(s), ptl.tensor(q)).numpy()
    ref = sp.zeta(s.astype(np.float64), q.astype(np.float64))
    keep = np.isfinite(ref) & (np.abs(ref) < 3e38)
    assert keep.sum() > 4000
    err = _float32_ulps(got[keep], ref[keep])
    i = int(np.argmax(err))
    assert err[i] <= 1.0, (float(s[keep][i]), float(q[keep][i]), float(got[keep][i]), err[i])


def test_zeta_float64_lanes_within_8_ulps():
    """the extended log keeps s log(q + k)'s error off the terms (a plain one: 26 ulps)"""
    rng = np.random.default_rng(8)
    s = np.concatenate([rng.uniform(1.001, 30, 120), [30.0, 1 + 2 ** -40, 2.0, 10.0]])
    q = np.concatenate([10 ** rng.uniform(-3, 6, 120), [1e-3, 1e6, 0.5, 13.5]])
    got = S.zeta(ptl.tensor(s), ptl.tensor(q)).numpy()
    with mpmath.workdps(250):   # (mpmath is unreliable below for large s)
        ref = np.array([float(mpmath.zeta(mpmath.mpf(a), mpmath.mpf(b))) for a, b in zip(s, q)])
    ok = (ref != 0) & np.isfinite(ref)
    err = np.abs(got[ok] - ref[ok]) / np.spacing(np.abs(ref[ok]))
    i = int(np.argmax(err))
    assert err[i] <= 8, (s[ok][i], q[ok][i], err[i])


def test_zeta_float32_special_values_mixed_into_the_lanes():
    s = np.array([2, 1, 0.5, 2, 2, 2, np.nan, 2, 3, 2.5, 40, 2, 4, 2], F32)
    q = np.array([1, 1, 1, 0, -1, np.inf, 1, np.nan, -2.5, -1.5, 1.5, 2e6, 1e-4, 1], F32)
    got = S.zeta(ptl.tensor(s), ptl.tensor(q)).numpy()
    want = np.array([S.zeta(ptl.tensor(s[i:i + 1].astype(np.float64)),
                            ptl.tensor(q[i:i + 1].astype(np.float64))).item()
                     for i in range(s.size)]).astype(F32)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[np.isinf(want)], want[np.isinf(want)])
    ok = np.isfinite(want)
    assert np.all(_float32_ulps(got[ok], want[ok].astype(np.float64)) <= 1.0)
    assert got[0] == F32(math.pi ** 2 / 6) and np.isinf(got[1]) and np.isnan(got[2])


@pytest.mark.parametrize("threads", [1, 2])
def test_zeta_float32_lengths_layouts_and_broadcast(threads):
    s, q = _zeta_points()
    s, q = s[:1100], q[:1100]
    with num_threads(1):
        alone = np.array([S.zeta(ptl.tensor(s[i:i + 1]), ptl.tensor(q[i:i + 1])).item()
                          for i in range(300)], dtype=F32)
    with num_threads(threads):
        for n in LENGTHS[:-2]:
            got = S.zeta(ptl.tensor(s[:n]), ptl.tensor(q[:n])).numpy()
            np.testing.assert_array_equal(got, alone[:n])
        ts, tq = ptl.tensor(s), ptl.tensor(q)
        np.testing.assert_array_equal(S.zeta(ts[::2], tq[::2]).numpy(),
                                      S.zeta(ptl.tensor(s[::2].copy()),
                                             ptl.tensor(q[::2].copy())).numpy())
        b = S.zeta(ts[:40].reshape(40, 1), tq[:30].reshape(1, 30)).numpy()
        for i in range(40):
            np.testing.assert_array_equal(
                b[i], S.zeta(ptl.tensor(np.full(30, s[i])), ptl.tensor(q[:30])).numpy())
    big_s = np.tile(s, 910)[:10 ** 6 + 1]
    big_q = np.tile(q, 910)[:10 ** 6 + 1]
    with num_threads(threads):
        got = S.zeta(ptl.tensor(big_s), ptl.tensor(big_q)).numpy()
    np.testing.assert_array_equal(got[:300], alone)


CHILD = """
import sys
import numpy as np
sys.path.insert(0, {tests!r}); sys.path.insert(0, {aten!r}); sys.path.insert(0, {root!r})
import pytorchlite as ptl
import test_special_float_lanes as t
x = t._ndtr_points()
s, q = t._zeta_points()
p = t._ndtri_points()
np.savez({path!r}, ndtr=ptl.special.ndtr(ptl.tensor(x)).numpy(),
         zeta=ptl.special.zeta(ptl.tensor(s), ptl.tensor(q)).numpy(),
         zeta64=ptl.special.zeta(ptl.tensor(s.astype(np.float64)),
                                 ptl.tensor(q.astype(np.float64))).numpy(),
         ndtri=ptl.special.ndtri(ptl.tensor(p)).numpy(),
         ndtri32=ptl.special.ndtri(ptl.tensor(p.astype(np.float32))).numpy())
"""


@pytest.mark.parametrize("cap", ["default", "avx2"])
def test_capabilities_agree(cap, tmp_path):
    """the portable loops (the scalar twin ptl_ndtr_f; libm's pow in zeta) and the AVX2 blocks
    against this process's: ndtr bit for bit, zeta within an ulp"""
    skip_native_capability(cap)
    path = str(tmp_path / "got.npz")
    code = CHILD.format(tests=os.path.join(ROOT, "tests"),
                        aten=os.path.join(ROOT, "tests", "aten"), root=ROOT, path=path)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                       env=dict(os.environ, PTL_CPU_CAPABILITY=cap))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    other = np.load(path)
    x = _ndtr_points()
    mine = S.ndtr(ptl.tensor(x)).numpy()
    same = (mine.view(np.uint32) == other["ndtr"].view(np.uint32)) | (
        np.isnan(mine) & np.isnan(other["ndtr"]))
    assert same.all(), x[~same][:8]
    p = _ndtri_points()
    for key, dt in (("ndtri", np.float64), ("ndtri32", np.float32)):
        mine = S.ndtri(ptl.tensor(p.astype(dt))).numpy()
        np.testing.assert_array_equal(mine, other[key])
    s, q = _zeta_points()
    z = S.zeta(ptl.tensor(s), ptl.tensor(q)).numpy()
    ok = np.isfinite(z)
    np.testing.assert_array_equal(ok, np.isfinite(other["zeta"]))
    assert np.all(_float32_ulps(other["zeta"][ok], z[ok].astype(np.float64)) <= 1.0)
    z = S.zeta(ptl.tensor(s.astype(np.float64)), ptl.tensor(q.astype(np.float64))).numpy()
    ok = np.isfinite(z) & (z != 0)
    np.testing.assert_array_equal(ok, np.isfinite(other["zeta64"]) & (other["zeta64"] != 0))
    assert np.max(np.abs(other["zeta64"][ok] / z[ok] - 1)) <= 1e-14


def test_sinc_float32_rounds_the_float64_value():
    """float32 sinc on the CPU computes in float64 (vector sin) and rounds once"""
    if ptl.backends.cpu.get_cpu_capability() == "DEFAULT":
        pytest.skip("without vector lanes float32 sinc computes in float (sinf)")
    rng = np.random.default_rng(2)
    x = np.concatenate([rng.standard_normal(3000) * 5, [0.0, -0.0, 1.0, -2.0, 1e-30, 1e30,
                                                        np.inf, -np.inf, np.nan]])
    x32 = x.astype(F32)
    got = S.sinc(ptl.tensor(x32)).numpy()
    assert got.dtype == F32
    want = np.sinc(x32.astype(np.float64)).astype(F32)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    assert np.all(_float32_ulps(got[ok], want[ok].astype(np.float64)) <= 1.0)
    assert got[3000] == 1.0 and got[3001] == 1.0
    out = ptl.empty(x.size, dtype=ptl.float32)
    assert S.sinc(ptl.tensor(x32), out=out) is out
    np.testing.assert_array_equal(out.numpy(), got)
    t = ptl.tensor(x32[:50], requires_grad=True)
    S.sinc(t).sum().backward()
    assert t.grad.dtype == ptl.float32 and np.isfinite(t.grad.numpy()).all()
