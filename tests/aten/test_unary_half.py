"""float16 exp, expm1, tanh, sigmoid, log, log1p, erf, sinh and cosh in registers (unary_half.c,
Note [Float16 unary formulas in registers]): the bits of the float32 formula rounded to
nearest even (the float32 blocks they replace), on every float16 value, NaN, infinities and
subnormals included, on 1 and 2 threads, every tail length, strided and 0-dim inputs, in
place and out=; against float64 NumPy within the float32 formula's error rounded once; the
file reruns with AVX2 only and with the portable loops (PTL_CPU_CAPABILITY=avx2, default)."""
import os

import numpy as np
import pytest
import scipy.special

import pytorchlite as ptl
from helpers import num_threads, rerun_with_capability

OPS = ["exp", "expm1", "tanh", "sigmoid", "log", "log1p", "erf", "sinh", "cosh"]
REF = {"exp": np.exp, "expm1": np.expm1, "tanh": np.tanh,
       "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "log": np.log, "log1p": np.log1p,
       "erf": scipy.special.erf, "sinh": np.sinh, "cosh": np.cosh}

# every float16 value: all 2^16 bit patterns
ALL = np.arange(1 << 16, dtype=np.uint16).view(np.float16)


def via_float32(name, x16):
    """The float32 op on the float16 values, rounded to float16 (the blocks' bits)."""
    f = getattr(ptl, name)(ptl.tensor(x16.astype(np.float32)))
    return f.to(ptl.float16).numpy()


def same_bits(got, want):
    """Equal bits, every NaN counting as equal (the quiet NaN of its sign on both paths is
    checked separately)."""
    nan = np.isnan(got) & np.isnan(want)
    assert ((got.view(np.uint16) == want.view(np.uint16)) | nan).all()


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", OPS)
def test_every_float16_value_has_the_float32_bits(name, threads):
    # 65536 values: two grains of the pointwise split on 2 threads
    with num_threads(threads):
        got = getattr(ptl, name)(ptl.tensor(np.concatenate([ALL, ALL[::-1]]))).numpy()[:1 << 16]
    same_bits(got, via_float32(name, ALL))
    nan = np.isnan(got)
    # a NaN result is the quiet NaN of its sign, as ptl_f_to_half gives
    assert set(np.unique(got[nan].view(np.uint16))) <= {0x7e00, 0xfe00}


@pytest.mark.parametrize("name", OPS)
def test_against_float64_within_a_rounding(name):
    x = ALL[np.isfinite(ALL)]
    got = getattr(ptl, name)(ptl.tensor(x)).numpy().astype(np.float64)
    with np.errstate(all="ignore"):
        ref = REF[name](x.astype(np.float64))
    ok = np.isfinite(ref) & (np.abs(ref) < 65504)
    # half an ulp of float16 plus the float32 formula's few ulps (2^-21 relative)
    tol = 0.5 * np.spacing(np.abs(ref[ok]).astype(np.float16)).astype(np.float64)
    assert (np.abs(got[ok] - ref[ok]) <= tol * 1.01 + np.abs(ref[ok]) * 2.0 ** -21).all()


@pytest.mark.parametrize("name", OPS)
def test_tails_strided_0dim_inplace_out(name):
    f = getattr(ptl, name)
    rng = np.random.default_rng(4)
    x = (rng.standard_normal(300) * 3).astype(np.float16)
    x[[5, 40, 77]] = [np.nan, np.inf, -np.inf]
    whole = f(ptl.tensor(x)).numpy()
    same_bits(whole, via_float32(name, x))
    for n in range(0, 40):   # every tail length below two AVX-512 vectors
        same_bits(f(ptl.tensor(x[:n])).numpy(), whole[:n])
    same_bits(f(ptl.tensor(x)[1::3]).numpy(), whole[1::3])
    m = ptl.tensor(x[:120].reshape(12, 10)).t()
    same_bits(f(m).numpy(), whole[:120].reshape(12, 10).T)
    z = f(ptl.tensor(x[7]))
    assert z.shape == () and z.dtype == ptl.float16
    same_bits(z.numpy().reshape(1), whole[7:8])
    assert f(ptl.tensor(np.zeros((0, 3), np.float16))).shape == (0, 3)
    y = ptl.tensor(x.copy())
    getattr(y, name + "_")()
    same_bits(y.numpy(), whole)
    out = ptl.empty(300, dtype=ptl.float16)
    f(ptl.tensor(x), out=out)
    same_bits(out.numpy(), whole)
    out32 = ptl.empty(300, dtype=ptl.float32)   # float16 in, float32 out: computed in half
    f(ptl.tensor(x), out=out32)
    same_bits(out32.numpy().astype(np.float16), whole)


def test_bfloat16_keeps_the_float32_blocks():
    x = np.linspace(-5, 5, 1001).astype(np.float32)
    b = ptl.tensor(x).to(ptl.bfloat16)
    got = ptl.exp(b).to(ptl.float32).numpy()
    want = ptl.exp(ptl.tensor(x).to(ptl.bfloat16).to(ptl.float32)).to(ptl.bfloat16)
    assert np.array_equal(got, want.to(ptl.float32).numpy())


@pytest.mark.skipif("PTL_CPU_CAPABILITY" in os.environ,
                    reason="already running with a capability chosen by a parent run")
@pytest.mark.parametrize("cap", ["default", "avx2"])
def test_portable_and_avx2_loops(cap):
    """Reruns this file with the vector loops switched off, and with AVX2 only."""
    rerun_with_capability(__file__, cap)
