"""tools/cuda_op_audit.py's --table: the operators with a CPU kernel and none on the CUDA key,
read from the dispatcher, with the CPU-only ones named (no device needed)."""
import os
import subprocess
import sys

import pytest

from pytorchlite import _C

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import cuda_op_audit  # noqa: E402


@pytest.mark.skipif(not _C._config()["cuda_built"],
                    reason="the CPU-only build registers no CUDA kernels")
def test_the_table_lists_operators_with_a_cpu_kernel_and_no_cuda_kernel():
    missing = cuda_op_audit.table_without_cuda()
    assert "view_as_complex" in missing              # no complex dtypes on CUDA yet
    assert "add.Tensor" not in missing and "mm" not in missing
    for name in missing:
        assert _C._dispatch_has_kernel_for_dispatch_key("aten::" + name, "CPU")
        assert not _C._dispatch_has_kernel_for_dispatch_key("aten::" + name, "CUDA")


def test_the_table_option_prints_the_count():
    done = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "cuda_op_audit.py"),
                           "--table"], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": ROOT}, timeout=120)
    assert done.returncode == 0, done.stderr
    count = len(cuda_op_audit.table_without_cuda())
    assert done.stdout.splitlines()[-1] == (f"{count} operators of the table have a CPU "
                                           "kernel and no CUDA kernel")
