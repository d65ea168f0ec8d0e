import os
import sys

import pytest

# Test the package of this checkout (built in place), whatever else is installed.
_here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(_here))
sys.path.insert(0, _here)

import golden  # noqa: E402
import helpers  # noqa: E402


@pytest.fixture(params=[1, 2], ids=["1-thread", "2-threads"])
def threads(request):
    """Runs the test on one and on two threads (for kernels that split work by size)."""
    import pytorchlite as ptl
    old = ptl.get_num_threads()
    ptl.set_num_threads(request.param)
    yield request.param
    ptl.set_num_threads(old)


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "torch_ref: the test compares with PyTorch; skipped when torch is missing")


def pytest_runtest_setup(item):
    if helpers.torch is None and item.get_closest_marker("torch_ref") is not None:
        pytest.skip(helpers.TORCH_MISSING)


def pytest_sessionfinish(session):
    if golden.RECORDING:
        golden.write_recorded()
