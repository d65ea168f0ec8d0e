"""vdot, linalg.cross, unfold's backward, cdist (both its ops), embedding_renorm_ and frexp on CUDA
tensors against the CPU kernels: unfold_backward and frexp bit for bit (Note [Device cross and
unfold_backward] in src/aten/native/shape_device.c adds in the CPU loop's order), integer
cross products exactly, the rest to rounding; float64 gradchecks on the device.  The
compositions themselves are also checked without a device, under the kernel emulation
(test_composed_device_ops_plan.py).  Each test skips, with the reason the device is missing,
on a machine without a GPU; tools/gpu_check.sh runs them on one."""
import math

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck
from device_required import pytestmark, require_device, same  # noqa: F401

aten = ptl.ops.aten


def close(cuda_result, cpu_result, tol):
    assert cuda_result.device.type == "cuda"
    assert cuda_result.shape == cpu_result.shape and cuda_result.dtype == cpu_result.dtype
    np.testing.assert_allclose(cuda_result.cpu().double().numpy(),
                               cpu_result.double().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64, ptl.int64], ids=str)
def test_vdot(dtype):
    rng = np.random.default_rng(0)
    for n in (0, 1, 7, 1000):
        a, b = (ptl.tensor(rng.integers(-5, 6, 2 * n)).to(dtype)[::2] for _ in range(2))
        got, want = ptl.vdot(a.cuda(), b.cuda()), ptl.vdot(a, b)
        if dtype.is_floating_point:
            close(got, want, 1e-5 if dtype == ptl.float32 else 1e-12)
        else:
            same(got, want)


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64, ptl.int32, ptl.int64], ids=str)
def test_cross(dtype):
    rng = np.random.default_rng(1)
    for sa, sb, dim in (((4, 3), (1, 3), -1), ((3, 5), (3, 5), 0), ((2, 1, 3), (1, 4, 3), 2),
                        ((0, 3), (0, 3), 1)):
        a, b = (ptl.tensor(rng.integers(-9, 10, s)).to(dtype) for s in (sa, sb))
        got, want = ptl.linalg.cross(a.cuda(), b.cuda(), dim=dim), ptl.linalg.cross(a, b, dim=dim)
        if dtype.is_floating_point:
            close(got, want, 1e-6)
        else:
            same(got, want)
    x = ptl.randn(5, 3, dtype=ptl.float64, device="cuda", requires_grad=True)
    assert gradcheck(lambda t: ptl.linalg.cross(t, t.flip(0)), (x,))
    with pytest.raises(RuntimeError, match="linalg.cross: inputs dimension -1 must have "
                                           "length 3. Got 2 and 2"):
        ptl.linalg.cross(ptl.ones(2, 2, device="cuda"), ptl.ones(2, 2, device="cuda"))


@pytest.mark.parametrize("dtype", [ptl.float16, ptl.float32, ptl.float64, ptl.int64], ids=str)
def test_unfold_backward(dtype):
    rng = np.random.default_rng(2)
    for sizes, dim, size, step in (((7,), 0, 3, 1), ((2, 9, 3), 1, 4, 2), ((5, 6), 0, 2, 3),
                                   ((), 0, 1, 1), ((3, 4), 1, 0, 1)):
        gshape = ptl.zeros(sizes).unfold(dim, size, step).shape
        g = ptl.tensor(rng.standard_normal(gshape) * 100).to(dtype)
        same(aten.unfold_backward(g.cuda(), list(sizes), dim, size, step),
             aten.unfold_backward(g, list(sizes), dim, size, step))
    x = ptl.randn(3, 8, dtype=ptl.float64, device="cuda", requires_grad=True)
    assert gradcheck(lambda t: t.unfold(1, 3, 1), (x,))


@pytest.mark.parametrize("p", [0, 0.5, 1, 1.5, 2, 3, math.inf])
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64], ids=str)
def test_cdist(p, dtype):
    rng = np.random.default_rng(3)
    va, vb = rng.standard_normal((2, 5, 4)), rng.standard_normal((2, 6, 4))
    vb[0, 2] = va[0, 1]
    a, b = ptl.tensor(va).to(dtype), ptl.tensor(vb).to(dtype)
    tol = 1e-5 if dtype == ptl.float32 else 1e-12
    mode = "donot_use_mm_for_euclid_dist"
    dist = ptl.cdist(a, b, p, compute_mode=mode)
    close(ptl.cdist(a.cuda(), b.cuda(), p, compute_mode=mode), dist, tol)
    g = ptl.tensor(rng.standard_normal((2, 5, 6))).to(dtype)
    close(aten._cdist_backward(g.cuda(), a.cuda(), b.cuda(), p, dist.cuda()),
          aten._cdist_backward(g, a, b, p, dist), tol)
    if dtype == ptl.float64 and p >= 1:
        x, y = (ptl.tensor(rng.standard_normal(s), device="cuda", requires_grad=True)
                for s in ((3, 2), (4, 2)))
        assert gradcheck(lambda s, t: ptl.cdist(s, t, p, compute_mode=mode), (x, y))


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64], ids=str)
def test_embedding_renorm(dtype):
    rng = np.random.default_rng(4)
    w = ptl.tensor(rng.standard_normal((50, 6)) * 2).to(dtype)
    idx = ptl.tensor(rng.integers(0, 50, (4, 9)))
    want, got = w.clone(), w.cuda()
    with ptl.no_grad():
        ptl.embedding_renorm_(want, idx, 1.0, 2.0)
        ptl.embedding_renorm_(got, idx.cuda(), 1.0, 2.0)
    close(got, want, 1e-6)
    with pytest.raises(IndexError, match="index out of range in self"), ptl.no_grad():
        ptl.embedding_renorm_(got, ptl.tensor([50], device="cuda"), 1.0, 2.0)


@pytest.mark.parametrize("dtype", [ptl.float16, ptl.bfloat16, ptl.float32, ptl.float64],
                         ids=str)
def test_frexp(dtype):
    rng = np.random.default_rng(5)
    v = np.concatenate([[0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, 5e-324, 1e-310],
                        rng.standard_normal(500) * 10.0 ** rng.integers(-300, 300, 500)])
    x = ptl.tensor(v).to(dtype)
    for t in (x, x[::3], x[:20].reshape(4, 5).t()):
        m, e = ptl.frexp(t.cuda())
        want_m, want_e = ptl.frexp(t)
        same(m, want_m)
        same(e, want_e)


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64], ids=str)
def test_gamma_and_dirichlet_gradients_and_dirichlet_draws(dtype):
    rng = np.random.default_rng(6)
    a = ptl.tensor(rng.uniform(0.3, 4.0, (200,))).to(dtype)
    x = ptl.tensor(rng.uniform(0.1, 5.0, (200,))).to(dtype)
    tol = 1e-5 if dtype == ptl.float32 else 1e-10
    close(ptl.ops.aten._standard_gamma_grad(a.cuda(), x.cuda()),
          ptl.ops.aten._standard_gamma_grad(a, x), tol)
    p = ptl.tensor(rng.uniform(0.05, 0.9, (200,))).to(dtype)
    total = a + ptl.tensor(rng.uniform(0.5, 3.0, (200,))).to(dtype)
    close(ptl.ops.aten._dirichlet_grad(p.cuda(), a.cuda(), total.cuda()),
          ptl.ops.aten._dirichlet_grad(p, a, total), tol)
    with pytest.raises(RuntimeError, match="Found dtype Double but expected Float"):
        ptl.ops.aten._dirichlet_grad(p.float().cuda(), a.double().cuda(), total.float().cuda())
    with pytest.raises(NotImplementedError, match="not implemented for 'Half'"):
        ptl.ops.aten._standard_gamma_grad(a.half().cuda(), x.half().cuda())
    alpha = ptl.tensor(rng.uniform(0.2, 3.0, (6, 5))).to(dtype).cuda()
    d = ptl._sample_dirichlet(alpha)
    assert d.device.type == "cuda" and d.dtype == dtype
    np.testing.assert_allclose(d.cpu().double().numpy().sum(-1), 1.0, rtol=1e-5)
