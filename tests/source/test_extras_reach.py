"""CI's second pass keeps the tests that may reach PyTorch or an optional tool (extras_reach.py)
and only those: each way a test can reach one, and tests that cannot."""
import types

import numpy as np
import pytest

import extras_reach

# Stand-ins for an optional package's modules, present whether or not the package is.
fake_onnx = types.ModuleType("onnx")
fake_torch_nn = types.ModuleType("torch.nn")
NUMBERS = [1, 2, 3]


class _Item:
    """What uses_extras reads of a pytest item."""

    def __init__(self, tmp_path, function, marks=(), cls=None, params=None, source="x = 1\n"):
        path = tmp_path / "test_case.py"
        path.write_text(source)
        self.fspath = str(path)
        self.function = function
        self.cls = cls
        self._marks = list(marks)
        if params is not None:
            self.callspec = types.SimpleNamespace(params=params)

    def get_closest_marker(self, name):
        return next((m for m in self._marks if m.name == name), None)

    def iter_markers(self, name):
        return (m for m in self._marks if m.name == name)


def _plain():
    return np.sum(NUMBERS)


def _exports():
    return fake_onnx.__name__


def _calls_one_that_exports():
    return [_exports() for _ in NUMBERS]


def _nested_lambda():
    return sorted(NUMBERS, key=lambda v: fake_torch_nn.__name__ + str(v))


def _child_script():
    return "import torch\nprint(torch.ones(2))"


def _skips_without_tqdm():
    return pytest.importorskip("tqdm")


class _Case:
    def _helper(self):
        return fake_onnx

    def test_method(self):
        return self._helper()

    def test_plain_method(self):
        return len(NUMBERS)


@pytest.mark.parametrize("function,kept", [
    (_plain, False),
    (_exports, True),
    (_calls_one_that_exports, True),
    (_nested_lambda, True),
    (_child_script, True),
    (_skips_without_tqdm, True),
])
def test_functions(tmp_path, function, kept):
    assert extras_reach.uses_extras(_Item(tmp_path, function)) is kept


def test_methods_follow_the_class(tmp_path):
    assert extras_reach.uses_extras(_Item(tmp_path, _Case.test_method, cls=_Case))
    assert not extras_reach.uses_extras(_Item(tmp_path, _Case.test_plain_method, cls=_Case))


def test_parameters(tmp_path):
    assert extras_reach.uses_extras(_Item(tmp_path, _plain, params={"fn": _exports}))
    assert not extras_reach.uses_extras(_Item(tmp_path, _plain, params={"n": 3, "fn": _plain}))


def test_marks(tmp_path):
    keep = [pytest.mark.torch_ref.mark,
            pytest.mark.skipif(False, reason="PyTorch is not installed").mark,
            pytest.mark.skipif(True, reason="no device").mark]
    for mark in keep:
        assert extras_reach.uses_extras(_Item(tmp_path, _plain, marks=[mark]))
    other = pytest.mark.skipif(False, reason="only on big-endian machines").mark
    assert not extras_reach.uses_extras(_Item(tmp_path, _plain, marks=[other]))


@pytest.mark.parametrize("source,kept", [
    ("import onnx\n", True),
    ("torch = pytest.importorskip('torch')\n", True),
    ("def f():\n    scipy = pytest.importorskip('scipy')\n", False),
    ("import numpy\n", False),
    ("def test_job():\n    mpi_job(2)\n", True),
    ('"""Runs under mpirun."""\n', True),
    ('"""Checks the compiled kernels."""\n', False),
    ("import pytorchlite.distributed as dist\n", True),
    ("def f():\n    from pytorchlite import distributed\n", True),
    ('extra = "pytorchlite[distributed]"\n', True),
    ('"""Normally distributed; is_distributed() is False."""\n', False),
    ("x = 1   # tests/distributed/test_ddp.py\n", False),
])
def test_whole_files(tmp_path, source, kept):
    assert extras_reach.uses_extras(_Item(tmp_path, _plain, source=source)) is kept
