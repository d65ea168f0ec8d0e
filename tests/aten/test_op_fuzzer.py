"""tools/fuzz/op_fuzzer.py: its calls are reproducible, reach most ops, give every argument
type of ops.def real values, and --show prints the call that --repro runs."""
import os
import subprocess
import sys

from helpers import TESTS
from tools.fuzz import op_fuzzer


def test_calls_are_reproducible_and_cover_every_op():
    rows = op_fuzzer.schema_rows()
    a, b = op_fuzzer.CallMaker(rows), op_fuzzer.CallMaker(list(rows))
    calls = [a.call(3, i) for i in range(2000)]
    assert calls == [b.call(3, i) for i in range(2000)]
    assert len({c.split("(")[0] for c in calls}) > len(rows) // 2
    assert calls != [a.call(4, i) for i in range(2000)]


def test_every_argument_type_has_values():
    maker = op_fuzzer.CallMaker(op_fuzzer.schema_rows())
    maker.call(0, 0)
    for _, _, args in maker.rows:
        for typ, name, _, _ in args:
            values = {maker.value(typ, name) for _ in range(40)}
            assert values - {"None"} - set(op_fuzzer.WRONG), (typ, name)


def test_show_prints_the_literal_call():
    root = os.path.dirname(TESTS)
    out = subprocess.run([sys.executable, "-m", "tools.fuzz.op_fuzzer", "--show", "5:17"],
                         cwd=root, capture_output=True, text=True, timeout=120)
    maker = op_fuzzer.CallMaker(op_fuzzer.schema_rows())
    assert out.stdout.strip() == maker.call(5, 17)


def test_ops_filter_and_grad_mode():
    """--ops draws only the matching operators; --grad makes float and complex tensors
    leaves that require grad, and backward_through reaches them (complex ones included)."""
    import pytorchlite as ptl
    rows = op_fuzzer.schema_rows("^(mul|polar)$")
    assert {r[0] for r in rows} == {"mul", "polar"}
    maker = op_fuzzer.CallMaker(rows)
    assert all(maker.call(0, i).startswith(("aten.mul.", "aten.polar.")) for i in range(50))
    leaves = []
    ns = op_fuzzer.namespace(leaves)
    z = ns["T"]((2, 3), "complex128", "t", 7)
    x = ns["T"]((3,), "float64", "s", 8)
    i = ns["T"]((3,), "int64", "c", 9)
    assert [t.dtype for t in leaves] == [ptl.complex128, ptl.float64]
    assert all(t.is_leaf and t.requires_grad for t in leaves) and not i.requires_grad
    for second_order in (False, True):
        op_fuzzer.backward_through((i, z * x), leaves, second_order)
    out = subprocess.run([sys.executable, "-m", "tools.fuzz.op_fuzzer", "--show", "5:17",
                          "--ops", "^exp$", "--grad"], cwd=os.path.dirname(TESTS),
                         capture_output=True, text=True, timeout=120)
    assert out.stdout.startswith("aten.exp.")
