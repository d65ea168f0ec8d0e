"""One formula for the CPU's vector blocks, its scalar loops and the CUDA kernels (Note [One
special formula for the CPU and CUDA] in src/aten/gaussian_math.h): ndtr, log_ndtr, erfcx,
J0, J1, Y0, Y1 and spherical j0, whose float32 and float64 loops run unary_f8_erf.h's vector
erfc or vec_math.h's vector sincos in blocks with AVX2 / AVX-512 (float32 ndtr all in float
lanes), give bit for bit the scalar formula (its twins ptl_sp_erfc_d, ptl_sincos_twin and
ptl_ndtr_f) that PTL_CPU_CAPABILITY=default's loops and the device evaluate: on random
inputs, at every region and table interval edge of the formulas and of the twins (both
neighbours of each), and at the special values.  float16 and bfloat16 (the scalar loops)
round the float32 formula's result."""
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import pytorchlite as ptl
from helpers import ROOT, skip_native_capability
from test_special_fast import EDGES, _around

S = ptl.special
NAMES = ["ndtr", "log_ndtr", "erfcx", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1",
         "spherical_bessel_j0"]
SPECIAL = [0.0, -0.0, math.inf, -math.inf, math.nan, 5e-324, -5e-324, 2.2250738585072014e-308,
           1e308, -1e308]
# the erfc twin's edges in its argument a: the small/big split at 1/4 and 1/2, the
# intervals 2^k (1 + j/4) of erfcx below 8, the far fit from 8, the clamp at 27.5
ERFC_EDGES = [0.25, 0.5, 8.0, 27.5, 26.0, 27.3] + [
    2.0 ** k * (1 + j / 4) for k in range(-1, 3) for j in range(4)]
# float32 ndtr's interval edges in |x| and its clamp
NDTR_F_EDGES = [0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0, 14.0, 15.0]
# the sincos twin's: its fast range 2^20, sin x = x below 2^-27, multiples of pi/2 (and the
# Hankel branch's start at 25)
SINCOS_EDGES = [2.0 ** 20, 2.0 ** -27, 25.0] + [k * math.pi / 2 for k in
                                                (1, 2, 3, 16, 17, 1000, 1001, 65536, 400000)]


def _points(name):
    rng = np.random.default_rng(sum(map(ord, name)))
    edges = list(EDGES[name]) + SINCOS_EDGES
    if name in ("ndtr", "log_ndtr"):
        edges += [s * a * math.sqrt(2) for a in ERFC_EDGES for s in (1, -1)]
    if name == "ndtr":   # float32's intervals of |x| (Note [Float ndtr]), float neighbours
        f = np.array(NDTR_F_EDGES, dtype=np.float32)
        edges += [float(v) for v in np.concatenate(
            [f, np.nextafter(f, np.float32(0)), np.nextafter(f, np.float32(99))])]
    elif name == "erfcx":
        edges += [s * a for a in ERFC_EDGES for s in (1, -1)]
    mags = 10.0 ** rng.uniform(-30, 30, 1500)
    x = np.concatenate([
        _around(edges), _around([-e for e in edges]), SPECIAL,
        rng.uniform(-60, 60, 4000), 3 * rng.standard_normal(2000),
        mags * rng.choice([-1.0, 1.0], mags.size), rng.uniform(-1e6, 1e6, 500)])
    return np.unique(x[~np.isnan(x)]).tolist() + [math.nan]


def _compute(dtype_name):
    """name -> the results' bits (uint64 / uint32) of every point, this process's loops"""
    np_dtype = np.dtype(dtype_name)
    out = {}
    for name in NAMES:
        with np.errstate(over="ignore"):   # float32: the largest points become inf
            x = np.array(_points(name), dtype=np_dtype)
        got = getattr(S, name)(ptl.tensor(x)).numpy()
        out[name] = (x, got)
    return out


CHILD = """
import sys
import numpy as np
sys.path.insert(0, {tests!r}); sys.path.insert(0, {aten!r}); sys.path.insert(0, {root!r})
import test_special_shared as t
for dt in ("float64", "float32"):
    np.savez({path!r} + "." + dt + ".npz", **{{n: r for n, (x, r) in t._compute(dt).items()}})
"""


@pytest.fixture(scope="module", params=["default", "avx2"])
def other_loops(request, tmp_path_factory):
    """the results of a child process whose loops are capped at PTL_CPU_CAPABILITY=cap"""
    cap = request.param
    skip_native_capability(cap)
    path = str(tmp_path_factory.mktemp("special_shared") / "got")
    code = CHILD.format(tests=os.path.join(ROOT, "tests"),
                        aten=os.path.join(ROOT, "tests", "aten"), root=ROOT, path=path)
    env = dict(os.environ, PTL_CPU_CAPABILITY=cap)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       cwd=ROOT)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return {dt: dict(np.load(path + "." + dt + ".npz")) for dt in ("float64", "float32")}


def _assert_same_bits(x, got, want):
    nan = np.isnan(got) & np.isnan(want)
    same = (got.view(np.uint64 if got.dtype == np.float64 else np.uint32) ==
            want.view(np.uint64 if want.dtype == np.float64 else np.uint32)) | nan
    bad = np.flatnonzero(~same)
    assert bad.size == 0, [(float(x[i]), float(got[i]), float(want[i])) for i in bad[:8]]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_vector_blocks_give_the_scalar_formulas_bits(other_loops, dtype):
    mine = _compute(dtype)
    for name in NAMES:
        x, got = mine[name]
        _assert_same_bits(x, got, other_loops[dtype][name])


@pytest.mark.parametrize("name", NAMES)
def test_strided_float32_and_float64_agree_with_contiguous(name):
    # every layout takes the blocks; a transposed and a sliced view give the same bits
    for dt in (ptl.float64, ptl.float32):
        x = ptl.tensor(np.array(_points(name))[:1200].reshape(40, 30), dtype=dt)
        f = getattr(S, name)
        want = f(x)
        assert ptl.equal(f(x.t()).t().isnan(), want.isnan())
        _assert_same_bits(x.t().numpy(), f(x.t()).numpy(), want.t().numpy())
        _assert_same_bits(x[:, ::3].numpy(), f(x[:, ::3]).numpy(), want[:, ::3].numpy())


@pytest.mark.parametrize("half", [ptl.float16, ptl.bfloat16], ids=str)
@pytest.mark.parametrize("name", NAMES)
def test_halves_round_the_float32_formula(name, half):
    x = ptl.tensor(np.array(_points(name)), dtype=ptl.float32).to(half)
    want = getattr(S, name)(x.float()).to(half).float().numpy()
    got = getattr(S, name)(x).float().numpy()
    _assert_same_bits(x.float().numpy(), got, want)
