"""The decompositions and solvers on CUDA tensors (Note [Linear algebra on the host] in
src/cuda/register_cuda.c): their results, info codes and errors are the CPU kernel's, bit for
bit, and they land on the input's device; tensors on two devices are refused; float64
gradchecks through them on the device.  Each test skips, with the reason the device is
missing, on a machine without a GPU; tools/gpu_check.sh runs them on one."""
import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck
from device_required import pytestmark, require_device, same  # noqa: F401


def spd(rng, *shape):
    a = rng.standard_normal(shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


CALLS = {
    "inv": lambda a: (ptl.linalg.inv(a),),
    "inv_ex": lambda a: ptl.linalg.inv_ex(a),
    "det": lambda a: (ptl.linalg.det(a),),
    "slogdet": lambda a: ptl.linalg.slogdet(a),
    "solve": lambda a: (ptl.linalg.solve(a, a[..., :2]),),
    "solve_triangular": lambda a: (ptl.linalg.solve_triangular(a.triu(), a, upper=True),),
    "cholesky": lambda a: (ptl.linalg.cholesky(a @ a.mT + 3 * ptl.eye(a.shape[-1],
                                                                        device=a.device,
                                                                        dtype=a.dtype)),),
    "lu_factor": lambda a: ptl.linalg.lu_factor(a),
    "qr": lambda a: ptl.linalg.qr(a),
    "eigh": lambda a: ptl.linalg.eigh(a + a.mT),
    "eig": lambda a: ptl.view_as_real(ptl.linalg.eig(a)[0]).unbind(-1),
    "svd": lambda a: ptl.linalg.svd(a),
}


@pytest.mark.parametrize("name", sorted(CALLS))
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64], ids=str)
def test_results_are_the_cpu_kernels(name, dtype):
    rng = np.random.default_rng(0)
    for shape in ((4, 4), (2, 3, 3), (1, 1)):
        a = ptl.tensor(rng.standard_normal(shape) + 2 * np.eye(shape[-1])).to(dtype)
        if name == "eig" and dtype == ptl.float32:
            continue   # eig's complex results: float64's checked
        got, want = CALLS[name](a.cuda()), CALLS[name](a)
        for g, w in zip(got, want):
            same(g, w)


def test_singular_and_not_positive_definite_errors_are_the_cpu_kernels():
    singular = ptl.zeros(3, 3, device="cuda")
    with pytest.raises(RuntimeError, match="linalg.inv: The diagonal element 1 is zero"):
        ptl.linalg.inv(singular)
    _, info = ptl.linalg.inv_ex(singular)
    assert info.device.type == "cuda" and info.item() == 1
    with pytest.raises(RuntimeError, match="linalg.cholesky: The factorization could not be "
                                           "completed because the input is not positive-definite"):
        ptl.linalg.cholesky(-ptl.eye(3, device="cuda"))


def test_two_devices_are_refused():
    a = ptl.eye(3, device="cuda")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device, but "
                                           "found at least two devices, cuda:0 and cpu!"):
        ptl.linalg.solve(a, ptl.ones(3, 1))


def test_gradients_through_the_host_kernels():
    rng = np.random.default_rng(1)
    a = ptl.tensor(rng.standard_normal((3, 3)) + 3 * np.eye(3), device="cuda",
                   requires_grad=True)
    b = ptl.tensor(rng.standard_normal((3, 2)), device="cuda", requires_grad=True)
    s = ptl.tensor(spd(rng, 3, 3), device="cuda", requires_grad=True)
    assert gradcheck(lambda x: ptl.linalg.inv(x), (a,))
    assert gradcheck(lambda x: ptl.linalg.det(x), (a,))
    assert gradcheck(lambda x, y: ptl.linalg.solve(x, y), (a, b))
    assert gradcheck(lambda x: ptl.linalg.cholesky(x), (s,))
    assert gradcheck(lambda x: ptl.linalg.eigh(x)[0], (s,))
    assert gradcheck(lambda x: ptl.linalg.qr(x)[1], (a,))
    assert gradcheck(lambda x: ptl.linalg.svdvals(x), (a,))
