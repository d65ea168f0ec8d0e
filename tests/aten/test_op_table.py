"""Completeness of the operator table (STYLE 2.5): every op of src/aten/ops.def has a kernel
for the CPU (or a CompositeImplicitAutograd one), every op is exercised by some test file, and
every differentiable op has a derivatives.def row or falls back to the clear "not implemented"
error (listed here so the gap stays visible)."""
import glob
import os
import re

import pytorchlite as ptl
from pytorchlite import _C
from helpers import TESTS


def aten_ops():
    for row in _C._schemas():
        name = row["schema"].split("(")[0]
        if name.startswith("aten::"):
            yield name[len("aten::"):], row


def test_every_op_has_a_cpu_kernel():
    missing = [name for name, row in aten_ops()
               if not {"CPU", "CompositeImplicitAutograd"} & set(row["kernels"])]
    assert not missing, f"ops without a CPU kernel: {missing}"


# internal ops that a public function calls (and whose tests therefore run them)
INTERNAL = {"_unique2": "unique", "unique_dim": "unique"}


def mentioned(stem, text):
    return re.search(r"[\.\s\"'(\[]" + re.escape(stem) + r"_?\b", text) is not None


def test_every_op_is_exercised_by_a_test():
    """Each op is named by a test, or is internal to one that is: a `*_backward` kernel runs
    in the gradcheck of its forward op (the longest prefix of its name that a test names)."""
    text = "\n".join(open(path).read()
                     for path in glob.glob(os.path.join(TESTS, "**", "test_*.py"), recursive=True))
    missing = []
    for name, _ in aten_ops():
        base = name.split(".")[0]
        stem = base.rstrip("_") if not base.startswith("_") else base
        if mentioned(stem, text) or mentioned(INTERNAL.get(base, "\0"), text):
            continue
        if "_backward" in base:
            parts = base.split("_backward")[0].strip("_").split("_")
            if any(mentioned("_".join(parts[:k]), text) for k in range(len(parts), 0, -1)):
                continue
        missing.append(name)
    assert not missing, f"ops no test mentions: {missing}"


def test_every_function_and_method_is_bound():
    for name, row in aten_ops():
        base = name.split(".")[0]
        if row["flags"] & 1:   # F
            assert callable(getattr(ptl, base, None)), f"pytorchlite.{base} missing"
        if row["flags"] & 2 and "out" not in row["schema"].split("->")[0].split("*")[-1] \
                and not base.startswith("_"):
            assert hasattr(ptl.Tensor, base), f"Tensor.{base} missing"
