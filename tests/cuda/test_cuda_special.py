"""The CUDA kernels of torch.special's ndtr, log_ndtr, ndtri, erfcx, J0, J1, Y0, Y1, K0, K1
(and e^x K0, e^x K1), spherical j0 and Ai (register_cuda_math.c's special_unary_cuda,
elementwise.cu's special1_of) against the CPU kernels.  Both call the same definitions (Note
[One special formula for the CPU and CUDA] in src/aten/gaussian_math.h), so they agree bit
for bit where a formula calls no libm function (ndtr; J0, J1 from |x| = 1 on; ndtri's central
region; Ai on [-12, 2)), and within the two libms' last bits elsewhere (exp, log, log1p, sin
and cos); every float dtype, integer inputs in the default float dtype, out=, strided views.
Tests skip without a device (tools/gpu_check.sh runs them on one)."""
import numpy as np
import pytest

import pytorchlite as ptl
from device_required import pytestmark, require_device  # noqa: F401

S = ptl.special
NAMES = ["ndtr", "log_ndtr", "ndtri", "erfcx", "bessel_j0", "bessel_j1", "bessel_y0",
         "bessel_y1", "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
         "scaled_modified_bessel_k1", "spherical_bessel_j0", "airy_ai"]
FLOATS = [ptl.float64, ptl.float32, ptl.float16, ptl.bfloat16]
# relative to max(|cpu|, 1e-300) and absolute (the oscillating functions near their zeros)
TOL = {ptl.float64: 1e-13, ptl.float32: 2e-7, ptl.float16: 1e-3, ptl.bfloat16: 8e-3}


def _inputs(name, rng):
    if name == "ndtri":
        x = np.concatenate([rng.random(3000), 10.0 ** rng.uniform(-300, 0, 500),
                            1 - 10.0 ** rng.uniform(-16, 0, 500), [0, 1, -0.5, 2, np.nan]])
    else:
        x = np.concatenate([rng.uniform(-40, 40, 3000), 3 * rng.standard_normal(1000),
                            10.0 ** rng.uniform(-5, 5, 500) * rng.choice([-1, 1], 500),
                            [0.0, -0.0, np.inf, -np.inf, np.nan, 25.0, 1.0, -12.0, 2.0]])
    return x


def _bits(t):
    a = t.cpu().numpy()
    return a.view({8: np.uint64, 4: np.uint32, 2: np.uint16}[a.itemsize])


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", NAMES)
def test_matches_the_cpu(name, dtype):
    rng = np.random.default_rng(sum(map(ord, name)))
    x = ptl.tensor(_inputs(name, rng)).to(dtype)
    f = getattr(S, name)
    want = f(x).to(ptl.float64).numpy()
    got = f(x.cuda()).cpu().to(ptl.float64).numpy()
    tol = TOL[dtype]
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True)
    # a transposed and a sliced view, and out=
    x2 = x[: x.numel() // 40 * 40].reshape(40, -1)
    np.testing.assert_array_equal(_bits(f(x2.cuda().t())), _bits(f(x2.cuda()).t()))
    np.testing.assert_array_equal(_bits(f(x2.cuda()[:, ::3])), _bits(f(x2.cuda())[:, ::3]))
    out = ptl.empty(x.shape, dtype=dtype).cuda()
    assert f(x.cuda(), out=out) is out
    np.testing.assert_array_equal(_bits(out), _bits(f(x.cuda())))


# name -> inputs where the formula calls no libm function: the device gives the CPU's bits
NO_LIBM = {
    "ndtr": lambda r: r.uniform(-40, 10, 4000),
    "bessel_j0": lambda r: r.uniform(1, 200, 4000) * r.choice([-1, 1], 4000),
    "bessel_j1": lambda r: r.uniform(1, 200, 4000) * r.choice([-1, 1], 4000),
    "ndtri": lambda r: r.uniform(0.25, 0.75, 4000),
    "airy_ai": lambda r: r.uniform(-12, 2, 4000),
    "spherical_bessel_j0": lambda r: r.uniform(-0.49, 0.49, 4000),
}


@pytest.mark.parametrize("dtype", [ptl.float64, ptl.float32], ids=str)
@pytest.mark.parametrize("name", sorted(NO_LIBM))
def test_the_same_bits_where_no_libm_is_called(name, dtype):
    x = ptl.tensor(NO_LIBM[name](np.random.default_rng(7))).to(dtype)
    f = getattr(S, name)
    np.testing.assert_array_equal(_bits(f(x.cuda())), _bits(f(x)))


@pytest.mark.parametrize("name", NAMES)
def test_integer_inputs_compute_in_the_default_float(name):
    x = ptl.arange(-5, 6) if name != "ndtri" else ptl.tensor([0, 1, 2])
    got = getattr(S, name)(x.cuda())
    assert got.dtype == ptl.float32 and got.device.type == "cuda"
    # values (NaN equal to NaN: the device's may carry other payload bits)
    np.testing.assert_array_equal(got.cpu().numpy(), getattr(S, name)(x).numpy())
