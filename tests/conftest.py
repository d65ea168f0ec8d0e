import os
import sys

import pytest

# Test the package of this checkout (built in place), whatever else is installed.
_here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(_here))
sys.path.insert(0, _here)

import golden  # noqa: E402
import helpers  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "torch_ref: the test compares with PyTorch; skipped when torch is missing")


def pytest_runtest_setup(item):
    if helpers.torch is None and item.get_closest_marker("torch_ref") is not None:
        pytest.skip(helpers.TORCH_MISSING)


def pytest_sessionfinish(session):
    if golden.RECORDING:
        golden.write_recorded()
