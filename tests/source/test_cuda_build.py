"""The CUDA build: with nvcc present, src/cuda/*.cu compile for sm_80 and sm_90 plus
compute_90 PTX with warnings as errors, and a CUDA build of the extension holds those objects.
Skips, saying so, where nvcc is missing or the extension is the CPU-only build (CI builds with
PTL_CUDA=1 where nvcc exists, so that the CUDA build cannot be skipped silently)."""
import os
import subprocess
import sys

import pytest

from helpers import ROOT
from pytorchlite import _C

sys.path.insert(0, os.path.join(ROOT, "tools"))
import build_backend  # noqa: E402

NVCC = build_backend._find_nvcc()
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc not found (or PTL_CUDA=0): the "
                                                     "extension is the CPU-only build")
CUDA_SOURCES = sorted(f for f in os.listdir(os.path.join(ROOT, "src", "cuda"))
                      if f.endswith(".cu"))


@needs_nvcc
def test_nvcc_flags_target_sm80_sm90_and_ptx_with_warnings_as_errors():
    cmd = build_backend.Config().nvcc_cmd("a.cu", "a.o")
    pairs = [cmd[i + 1] for i, w in enumerate(cmd) if w == "-gencode"]
    assert pairs == ["arch=compute_80,code=sm_80", "arch=compute_90,code=sm_90",
                     "arch=compute_90,code=compute_90"]
    assert cmd[cmd.index("-Werror") + 1] == "all-warnings"
    host = cmd[cmd.index("-Xcompiler") + 1].split(",")
    assert {"-Wall", "-Wextra", "-Werror", "-fno-exceptions", "-fno-threadsafe-statics"} <= \
        set(host)


@pytest.mark.skipif(not _C._config()["cuda_built"],
                    reason="the extension is the CPU-only build (no nvcc, or PTL_CUDA=0)")
def test_built_extension_holds_the_cuda_objects():
    cfg = build_backend.Config()
    so = os.path.join(ROOT, "pytorchlite", "_C" + build_backend.EXT_SUFFIX)
    symbols = subprocess.run(["nm", so], capture_output=True, text=True, check=True).stdout
    for name in ("cudaMalloc", "cudaEventQuery", "ptl_cuda_device_memory_ops",
                 "ptl_cuda_get_device_properties", "ptl_cuda_pointwise", "ptl_cuda_copy",
                 "ptl_cuda_fill", "ptl_register_cuda_kernels"):
        assert f" {name}" in symbols, name
    # the extension links no C++ runtime: nothing from libstdc++ or its unwinder is needed
    undefined = subprocess.run(["nm", "-u", so], capture_output=True, text=True,
                               check=True).stdout
    for name in ("__gxx_personality_v0", "__cxa_guard_acquire", "_Unwind_Resume"):
        assert name not in undefined, name
    # a checkout that built here has every .cu's object, linked into the extension
    if os.path.isdir(cfg.build_dir):
        for cu in CUDA_SOURCES:
            obj = os.path.join(cfg.build_dir, "src", "cuda", cu + ".o")
            assert os.path.exists(obj), f"{cu} was not compiled"
            assert os.path.getmtime(obj) <= os.path.getmtime(so)


@needs_nvcc
def test_a_warning_in_cuda_code_fails_the_build(tmp_path):
    cu = tmp_path / "warn.cu"
    cu.write_text("int unused_result(int x)\n{\n    int y = x;\n    return x;\n}\n")
    cmd = build_backend.Config().nvcc_cmd(str(cu), str(tmp_path / "warn.o"))
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode != 0
    assert 'variable "y" was declared but never referenced' in done.stdout + done.stderr
