"""Every direct operator call in src/ passes a stack with room for all of the operator's
schema arguments.  ptl_call_tensor / ptl_call_* read args[0 .. nargs) and fill no defaults,
so a short array is read past its end: quantile's gather calls once passed 3 of gather's 4
arguments and read `sparse_grad` from whatever lay next on the stack (a segfault in
autograd_record when that happened to look like a string)."""
import glob
import os
import re

from helpers import ROOT
from opinfo import _args_of
from pytorchlite import _C


def schema_arg_counts():
    """op id (PTL_OP_<id>) -> number of schema arguments (keyword-only ones included)."""
    counts = {}
    for row in _C._schemas():
        name = row["schema"].split("(")[0]
        if name.startswith("aten::"):
            counts[name[len("aten::"):].replace(".", "_")] = len(_args_of(row["schema"]))
    return counts


def short_calls():
    counts = schema_arg_counts()
    found, checked = [], 0
    for path in glob.glob(os.path.join(ROOT, "src", "**", "*.c"), recursive=True):
        src = open(path).read()
        arrays = {}
        for m in re.finditer(r"PtlIValue\s+(\w+)\[(\d+)\]", src):
            arrays.setdefault(m.group(1), []).append((m.start(), int(m.group(2))))
        for m in re.finditer(r"ptl_call_\w+\(\s*PTL_OP_(\w+)\s*,\s*(\w+)\s*[,)]", src):
            op, name = m.groups()
            sizes = [n for pos, n in arrays.get(name, []) if pos < m.start()]
            if op not in counts or not sizes:
                continue
            checked += 1
            if sizes[-1] < counts[op]:
                line = src.count("\n", 0, m.start()) + 1
                found.append(f"{os.path.relpath(path, ROOT)}:{line}: {op} takes {counts[op]} "
                             f"arguments, {name} holds {sizes[-1]}")
    return found, checked


def test_schema_counts_parse():
    counts = schema_arg_counts()
    assert counts["gather"] == 4 and counts["add_Tensor"] == 3 and counts["movedim_int"] == 3


def test_every_direct_op_call_passes_all_arguments():
    found, checked = short_calls()
    assert checked > 50, "the scan found too few calls to be looking in the right place"
    assert not found, "\n".join(found)
