"""pytorchlite.__version__: a TorchVersion claiming the PyTorch API level with pytorchlite's
own version as the local label (docs/decisions.md), comparing with strings, tuples and
packaging Versions as torch.torch_version.TorchVersion does."""
import os
import re

import pytest

import pytorchlite as ptl
from helpers import TESTS, torch, torch_ref
from pytorchlite.torch_version import TorchVersion, internal_version

# (version, other, expected result of version < other, ==, >)
CASES = [
    ("2.13.0+ptl0.1.0", "2.0", False, False, True),
    ("2.13.0+ptl0.1.0", "10.0", True, False, False),
    ("2.13.0+ptl0.1.0", (2, 13), False, False, True),
    ("2.13.0+ptl0.1.0", (2, 14), True, False, False),
    ("2.13.0+ptl0.1.0", [1, 8, 1], False, False, True),
    ("2.13.0+ptl0.1.0", "2.13.0+ptl0.1.0", False, True, False),
    ("2.13.0", "2.13", False, True, False),
    ("2.13.0", "2.13.0+cpu", True, False, False),
    ("2.0.0a0", "2.0.0", True, False, False),
    ("2.0.0.dev20230101", "2.0.0a0", True, False, False),
    ("2.0.0rc1", "2.0.0b5", False, False, True),
    ("2.0.0.post1", "2.0.0", False, False, True),
    ("1.10.0a", "1.2.1", False, False, True),
    ("1.10.0a", (1, 2, 1), False, False, True),
    ("2.1.0+cu121", "2.1.0+cu118", False, False, True),
    ("parrot", "2.0", False, False, True),     # not a version: str comparison
    ("2.0", "parrot", True, False, False),
]


@pytest.mark.parametrize("version,other,lt,eq,gt", CASES)
def test_torch_version_compares_as_a_version(version, other, lt, eq, gt):
    v = TorchVersion(version)
    assert (v < other, v == other, v > other) == (lt, eq, gt)
    assert (v <= other, v >= other, v != other) == (lt or eq, gt or eq, not eq)
    assert isinstance(v, str) and str(v) == version and hash(v) == hash(version)


@torch_ref
@pytest.mark.parametrize("version,other,lt,eq,gt", CASES)
def test_torch_version_matches_torch(version, other, lt, eq, gt):
    ref = torch.torch_version.TorchVersion(version)
    for op in ("__lt__", "__le__", "__eq__", "__ge__", "__gt__"):
        assert getattr(TorchVersion(version), op)(other) == getattr(ref, op)(other), op


def test_version_claims_the_api_level_and_names_pytorchlite():
    v = ptl.__version__
    assert isinstance(v, TorchVersion) and v == "2.13.0+ptl" + internal_version
    assert v >= "1.9" and v >= (2, 0) and v < (3,) and v.startswith("2.13.0")
    with open(os.path.join(os.path.dirname(TESTS), "pyproject.toml")) as f:
        assert re.search(r'^version = "([^"]+)"', f.read(), re.M).group(1) == internal_version
    assert ptl.__config__.show().startswith(f"pytorchlite {internal_version} (PyTorch API 2.13.0)")


def test_version_compares_with_packaging_versions():
    version = pytest.importorskip("packaging.version", reason="packaging is not installed")
    v = ptl.__version__
    assert v > version.Version("1.9") and v < version.Version("2.14") and not (
        v == version.Version("2.13.0"))


def test_version_module():
    """torch.version: __version__, the CUDA version compiled against (None without nvcc),
    debug, git_version and the never-built HIP/ROCm/XPU."""
    import pytorchlite.version as v
    assert ptl.version is v
    assert v.__version__ == ptl.__version__
    config = ptl._C._config()
    assert v.debug is config["debug"]
    assert v.hip is None and v.rocm is None and v.xpu is None
    assert v.git_version == "Unknown"
    if config["cuda_built"]:
        major, minor = divmod(config["cuda_runtime_version"], 1000)
        assert v.cuda == f"{major}.{minor // 10}"
    else:
        assert v.cuda is None
    assert sorted(v.__all__) == ["__version__", "cuda", "debug", "git_version", "hip", "rocm",
                                 "xpu"]


@pytest.mark.parametrize("built, runtime, expected", [
    (True, 13000, "13.0"), (True, 12040, "12.4"), (True, 11080, "11.8"), (True, 0, None),
    (False, 0, None), (False, 12040, None)])
def test_version_cuda_string(built, runtime, expected):
    import pytorchlite.version as v
    assert v._cuda_version({"cuda_built": built, "cuda_runtime_version": runtime}) == expected


@torch_ref
def test_version_module_has_torchs_names():
    names = {n for n in dir(torch.version) if not n.startswith("_") and n != "Optional"}
    assert names <= set(dir(ptl.version))
