import os
import shutil
import sys
import tempfile

import pytest

# NumPy computes the references on one thread: OpenBLAS's spinning worker threads would compete
# with pytorchlite's own pool for the same cores (beside other work, a 3x133x133 reference
# solve took 0.4-1.3 s on OpenBLAS's threads and 0.03 s on one).  Set before NumPy loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# Test the package of this checkout (built in place), whatever else is installed.
_here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(_here))
sys.path.insert(0, _here)

import golden  # noqa: E402
import helpers  # noqa: E402
import process_split  # noqa: E402


@pytest.fixture(params=[1, 2], ids=["1-thread", "2-threads"])
def threads(request):
    """Runs the test on one and on two threads (for kernels that split work by size)."""
    import pytorchlite as ptl
    old = ptl.get_num_threads()
    ptl.set_num_threads(request.param)
    yield request.param
    ptl.set_num_threads(old)


@pytest.fixture
def restore_threads():
    """For tests that set several thread counts themselves: the count before comes back."""
    import pytorchlite as ptl
    old = ptl.get_num_threads()
    yield
    ptl.set_num_threads(old)


def pytest_addoption(parser):
    parser.addoption(
        "--only-with-extras", action="store_true",
        help="run only the tests that may reach PyTorch or an optional extra (CI's second pass, "
             "after a first without them: extras_reach.py says how they are found)")


def pytest_collection_modifyitems(config, items):
    if not config.getoption("--only-with-extras"):
        return
    import extras_reach
    kept = [item for item in items if extras_reach.uses_extras(item)]
    kept_ids = {id(item) for item in kept}
    config.hook.pytest_deselected(items=[item for item in items if id(item) not in kept_ids])
    items[:] = kept


def pytest_configure(config):
    process_split.register(config, _here, name="only-with-extras"
                           if config.getoption("--only-with-extras") else "all")
    config.addinivalue_line(
        "markers", "torch_ref: the test compares with PyTorch; skipped when torch is missing")
    if helpers.REFERENCES_ENV not in os.environ:   # a rerun's child session shares its parent's
        config._ptl_references = tempfile.mkdtemp(prefix="ptl-references-")
        os.environ[helpers.REFERENCES_ENV] = config._ptl_references


def pytest_unconfigure(config):
    folder = getattr(config, "_ptl_references", None)
    if folder is not None:
        os.environ.pop(helpers.REFERENCES_ENV, None)
        shutil.rmtree(folder, ignore_errors=True)


def pytest_runtest_setup(item):
    if helpers.torch is None and item.get_closest_marker("torch_ref") is not None:
        pytest.skip(helpers.TORCH_MISSING)


def pytest_sessionfinish(session):
    if golden.RECORDING:
        golden.write_recorded()
