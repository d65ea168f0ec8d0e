"""The module paths real PyTorch programs import from: each resolves here to the same objects
as pytorchlite's own names (and, through utils.as_torch(), under the name torch)."""
import os
import subprocess
import sys

import pytest

import pytorchlite
from helpers import ROOT, torch_ref

PATHS = [
    ("backends.cudnn", ["benchmark", "deterministic", "enabled", "is_available"]),
    ("backends.mps", ["is_available", "is_built"]),
    ("backends.mkldnn", ["is_available", "enabled"]),
    ("backends.cuda", ["matmul", "flash_sdp_enabled"]),
    ("backends.cpu", ["get_cpu_capability"]),
    ("backends.opt_einsum", ["is_available", "enabled"]),
    ("cuda.amp", ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]),
    ("cpu.amp", ["autocast", "GradScaler"]),
    ("utils.data.distributed", ["DistributedSampler"]),
    ("nn.modules.utils", ["_single", "_pair", "_triple", "_quadruple", "_ntuple",
                          "_reverse_repeat_tuple", "_list_with_default",
                          "consume_prefix_in_state_dict_if_present"]),
    ("nn.common_types", ["_size_1_t", "_size_2_t", "_size_3_t", "_size_any_t", "_ratio_2_t"]),
    ("types", ["Number", "Device", "_int", "_float", "_bool", "_dtype", "_size"]),
]


@pytest.mark.parametrize("path, names", PATHS, ids=[p for p, _ in PATHS])
def test_path_imports_and_holds_the_names(path, names):
    import importlib
    module = importlib.import_module("pytorchlite." + path)
    for name in names:
        assert hasattr(module, name), name
    parent, _, leaf = path.rpartition(".")
    owner = importlib.import_module("pytorchlite" + ("." + parent if parent else ""))
    assert getattr(owner, leaf) is module


@torch_ref
@pytest.mark.parametrize("path, names", PATHS, ids=[p for p, _ in PATHS])
def test_torch_has_the_same_names_there(path, names):
    import importlib
    module = importlib.import_module("torch." + path)
    assert [n for n in names if not hasattr(module, n)] == []


def test_backend_switches_are_kept():
    import pytorchlite.backends.cudnn as cudnn
    before = cudnn.benchmark
    try:
        cudnn.benchmark = True
        assert pytorchlite.backends.cudnn.benchmark is True
    finally:
        cudnn.benchmark = before
    assert pytorchlite.backends.mkldnn.is_available() is False


def test_the_deprecated_amp_spellings_warn_and_work():
    from pytorchlite.cpu.amp import autocast
    with pytest.warns(FutureWarning, match=r"`torch.cpu.amp.autocast\(args...\)` is "
                                           r"deprecated. Please use "
                                           r"`torch.amp.autocast\('cpu', args...\)` instead."):
        ctx = autocast()
    with ctx:
        y = pytorchlite.mm(pytorchlite.ones(2, 2), pytorchlite.ones(2, 2))
    assert y.dtype == pytorchlite.bfloat16


def test_nn_modules_utils_helpers():
    from collections import OrderedDict
    from pytorchlite.nn.modules.utils import (_pair, _reverse_repeat_tuple, _triple,
                                              consume_prefix_in_state_dict_if_present)
    assert _pair(3) == (3, 3) and _pair([1, 2]) == (1, 2) and _triple(1) == (1, 1, 1)
    assert _reverse_repeat_tuple((1, 2), 2) == (2, 2, 1, 1)
    sd = OrderedDict([("module.0.weight", 1), ("module.0.bias", 2), ("other", 3)])
    sd._metadata = OrderedDict([("", {}), ("module", {"v": 1}), ("module.0", {"v": 1})])
    consume_prefix_in_state_dict_if_present(sd, "module.")
    assert list(sd) == ["other", "0.weight", "0.bias"] and list(sd._metadata) == ["", "0"]


def test_a_program_importing_torch_paths_runs_under_as_torch():
    """`import torch.backends.cudnn as cudnn` and friends in a script, after as_torch()."""
    script = (
        "import pytorchlite.utils\n"
        "pytorchlite.utils.as_torch()\n"
        "import torch.backends.cudnn as cudnn\n"
        "from torch.utils.data.distributed import DistributedSampler\n"
        "from torch.cuda.amp import GradScaler\n"
        "from torch.nn.modules.utils import _pair\n"
        "from torch.nn.common_types import _size_2_t\n"
        "import torch\n"
        "cudnn.benchmark = True\n"
        "print(torch.backends.cudnn.benchmark, _pair(2), DistributedSampler.__name__)\n")
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "(2,", "2)", "DistributedSampler"]
