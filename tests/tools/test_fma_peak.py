"""tools/fma_peak.c (the core's FMA peak that docs/performance.md judges SGEMM against) builds
warning-free as its header says and prints one positive rate per test the CPU supports."""
import os
import platform
import re
import shutil
import subprocess

import pytest

from helpers import ROOT

SOURCE = os.path.join(ROOT, "tools", "fma_peak.c")

pytestmark = pytest.mark.skipif(
    shutil.which("gcc") is None or platform.machine() not in ("x86_64", "AMD64"),
    reason="needs gcc on x86-64")


def test_fma_peak_builds_and_prints_rates(tmp_path):
    exe = tmp_path / "fma_peak"
    subprocess.run(["gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(exe), SOURCE],
                   check=True)
    out = subprocess.run([str(exe), "1000"], check=True, capture_output=True, text=True).stdout
    rows = re.findall(r"^(avx2|avx512) (reg|bcast) +([0-9.]+) GFLOP/s", out, re.M)
    assert len(rows) == len(out.splitlines()) and all(float(r) > 0 for _, _, r in rows)
    flags = open("/proc/cpuinfo").read().split() if os.path.exists("/proc/cpuinfo") else []
    if "avx2" in flags and "fma" in flags:
        assert [(isa, form) for isa, form, _ in rows][:2] == [("avx2", "reg"), ("avx2", "bcast")]


def test_fma_peak_refuses_a_bad_count(tmp_path):
    exe = tmp_path / "fma_peak"
    subprocess.run(["gcc", "-O2", "-o", str(exe), SOURCE], check=True)
    run = subprocess.run([str(exe), "0"], capture_output=True, text=True)
    assert run.returncode == 2 and "usage" in run.stderr
