"""The GPU test modules' common switch (tests/cuda/test_cuda_*.py): without a CUDA device
their tests skip with the reason, and with PTL_REQUIRE_GPU=1 (tools/gpu_check.sh on a GPU
machine) not seeing the device fails each test instead.  A module takes both with
    from device_required import NO_DEVICE, pytestmark, require_device  # noqa: F401
(pytest reads the module's pytestmark and runs the imported autouse fixture).

After each test on a device the fixture synchronises: a kernel that faulted leaves the CUDA
context broken for the rest of the process, so the process ends there, naming the test, rather
than failing every later test for it (under pytest-xdist, as tools/gpu_check.sh runs it, the
worker is replaced and the run goes on)."""
import os
import sys

import pytest

import pytorchlite as ptl
from pytorchlite import _C

NO_DEVICE = None if ptl.cuda.is_available() else _C._config()["cuda_unavailable_reason"]
REQUIRE_GPU = os.environ.get("PTL_REQUIRE_GPU") == "1"
pytestmark = pytest.mark.skipif(NO_DEVICE is not None and not REQUIRE_GPU,
                                reason=f"no CUDA device: {NO_DEVICE}")


@pytest.fixture(autouse=True)
def require_device(request):
    if NO_DEVICE is not None:
        pytest.fail(f"PTL_REQUIRE_GPU=1 but no CUDA device: {NO_DEVICE}")
    yield
    try:
        ptl.cuda.synchronize()
    except RuntimeError as e:
        sys.stderr.write(f"\n{request.node.nodeid} left the CUDA context broken: {e}\n")
        sys.stderr.flush()
        os._exit(70)


def bits(t):
    """t's bytes, read on the host in row-major order."""
    t = t.cpu()
    dense = ptl.empty(t.numel(), dtype=t.dtype).copy_(t.reshape(-1))
    return dense.view(ptl.uint8).numpy().tobytes()


def same(cuda_result, cpu_result):
    """A CUDA kernel's result has the CPU kernel's shape, dtype and bits."""
    assert cuda_result.device.type == "cuda"
    assert cuda_result.shape == cpu_result.shape and cuda_result.dtype == cpu_result.dtype
    assert bits(cuda_result) == bits(cpu_result)
