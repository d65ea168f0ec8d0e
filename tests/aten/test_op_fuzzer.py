"""tools/fuzz/op_fuzzer.py: its calls are reproducible, reach most ops, give every argument
type of ops.def real values, and --show prints the call that --repro runs; its --torch mode
(tools/fuzz/differential.py) reports a planted difference and not a matching call."""
import os
import subprocess
import sys

import pytest

from helpers import TESTS, torch, torch_ref
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


# ---- --torch: the differential mode (tools/fuzz/differential.py) ----

def planted(fn):
    """A pytorchlite namespace whose `aten` runs `fn(name, overload, op, args, kwargs)` in
    place of each operator (the rest of the namespace as op_fuzzer builds it)."""
    ns = op_fuzzer.namespace()
    real = ns["aten"]

    class Packet:
        def __init__(self, name):
            self.name = name

        def __getattr__(self, overload):
            op = getattr(getattr(real, self.name), overload)
            return lambda *a, **k: fn(self.name, overload, op, a, k)

    class Aten:
        def __getattr__(self, name):
            return Packet(name)
    ns["aten"] = Aten()
    return ns


def torch_verdict(src, ours_ns=None):
    from tools.fuzz import differential
    ours = differential.outcome(src, ours_ns or op_fuzzer.namespace())
    theirs = differential.outcome(src, op_fuzzer.namespace(lib=torch))
    return differential.verdict(src, ours, theirs)


MATCHING = [
    "aten.add.Tensor(T((2, 3), 'float32', 't', 1), T((3,), 'float64', 's', 2), alpha=2)",
    "aten.mul_.Tensor(T((3, 2), 'int64', 'o', 3), T((2,), 'int64', 'e', 4))",
    "aten.max.dim(T((4, 5), 'float32', 'c', 5), 1, True)",
    "aten.exp.out(T((2, 2), 'float16', 'c', 6), out=T((0,), 'float32', 'c', 7))",
    "aten.sin.default(T((3,), 'complex64', 'c', 8))",
    "aten.linalg_cholesky_ex.default(T((4, 4), 'float32', 'c', 32211), upper=True)",
    "aten.sort.default(T((6,), 'int64', 'c', 9))",
    "aten.sum.default(T((0, 3), 'bfloat16', 'c', 10))",
    "aten.div.Tensor(T((3,), 'int64', 'c', 11), T((3,), 'int64', 'c', 12))",
    "aten.nonzero.default(T((2, 3), 'bool', 'e', 13))",
    "aten.log2.out(T((2, 5), 'int32', 's', 56889), out=T((2, 5), 'complex64', 't', 60658))",
    # -inf + 0i among the values: torch's dot gives -inf + inf i, its BLAS mm nan + nan i
    "aten.dot.default(T((3,), 'complex128', 'c', 21), T((3,), 'complex128', 'c', 5))",
    "aten.mm.default(T((1, 3), 'complex64', 'c', 21), T((3, 1), 'complex64', 't', 5))",
    "aten.linalg_vector_norm.default(T((1, 1), 'float32', 'o', 39164), 4294967296)",
    # differences by design, each with its reason in differential.py: the polynomials at
    # +-inf (an out= included), a pole of polygamma, the domains of the gamma and Dirichlet
    # gradients, Welford's mean of an inf, torch's imprecise bessel_j0
    "aten.special_chebyshev_polynomial_t.default(T((1,), 'float64', 'e', 40696), "
    "T((1, 5), 'int8', 's', 32473))",
    "aten.special_chebyshev_polynomial_u.out(T((3,), 'float32', 'c', 32226), "
    "T((3,), 'uint8', 't', 41626), out=T((4,), 'float32', 'c', 49577))",
    "aten.polygamma.default(1, T((3,), 'int64', 'c', 23840))",
    "aten.polygamma_.default(T((4, 1, 3), 'float64', 'o', 58578), 2147483647)",
    "aten._standard_gamma_grad.default(T((3, 1, 1, 3, 1), 'float32', 's', 65036), "
    "T((3, 1, 1, 3, 1), 'float32', 'c', 25912))",
    "aten._dirichlet_grad.default(T((1, 1, 3, 1), 'float32', 'c', 33073), "
    "T((1, 2), 'float32', 'c', 61316), T((1, 1, 3, 1), 'float32', 'o', 65179))",
    "aten.std_mean.default(T((3,), 'float64', 't', 45534), False)",
    "aten.special_bessel_j0.default(T((3, 4, 3, 1, 5), 'float64', 't', 54047))",
    # torch's LU of a row-major A is A^T's (seed 26, call 1259); sign and logabsdet agree
    "aten._linalg_slogdet.default(A=T((3, 3), 'float32', 'c', 60345))",
    "aten._linalg_det.default(A=T((3, 3), 'float64', 'c', 60345))",
]


@torch_ref
@pytest.mark.parametrize("src", MATCHING)
def test_torch_mode_finds_no_difference_in_matching_calls(src):
    assert torch_verdict(src) is None


@torch_ref
def test_torch_mode_reports_a_planted_value_difference():
    src = "aten.add.Tensor(T((2, 3), 'float32', 't', 1), T((3,), 'float32', 'c', 2))"

    def off_by_a_little(name, overload, op, a, k):
        out = op(*a, **k)
        out[1, 2] += 0.01   # -13.3 vs -13.31: past float32's rtol of 1e-4
        return out
    kind, detail = torch_verdict(src, planted(off_by_a_little))
    assert kind == "value" and "result float32: 1 of 6 differ; at [1, 2]" in detail

    def nan_moved(name, overload, op, a, k):
        return op(*a, **k) * float("nan") if overload == "Tensor" else op(*a, **k)
    assert torch_verdict(src, planted(nan_moved))[0] == "value"

    def wrong_dtype(name, overload, op, a, k):
        return op(*a, **k).double()
    kind, detail = torch_verdict(src, planted(wrong_dtype))
    assert kind == "value" and "ours float64 [2, 3], torch float32 [2, 3]" in detail


@torch_ref
def test_torch_mode_compares_the_arguments_an_op_writes():
    """An in-place op or an out= tensor is compared through the tensors the call made; an
    integer result compares exactly."""
    src = "aten.add.out(T((3,), 'int64', 'c', 1), T((3,), 'int64', 'c', 2), out=T((3,), " \
          "'int64', 'c', 3))"

    def writes_one_more(name, overload, op, a, k):
        result = op(*a, **k).clone()   # the result itself right
        k["out"][0] += 1
        return result
    kind, detail = torch_verdict(src, planted(writes_one_more))
    assert kind == "value" and detail.startswith("tensor argument 2 int64: 1 of 3 differ")


@torch_ref
def test_torch_mode_classes_of_raising():
    src = "aten.add.Tensor(T((2, 3), 'float32', 'c', 1), T((3,), 'float32', 'c', 2))"

    def refuse(name, overload, op, a, k):
        raise RuntimeError("planted")
    assert torch_verdict(src, planted(refuse))[0] == "refuses"
    bad = "aten.add.Tensor(T((2, 3), 'float32', 'c', 1), T((4,), 'float32', 'c', 2))"
    assert torch_verdict(bad) is None   # both raise RuntimeError
    assert torch_verdict(bad, planted(lambda n, o, op, a, k: a[0]))[0] == "accepts"

    def index_error(name, overload, op, a, k):
        raise IndexError("planted")
    kind, detail = torch_verdict(bad, planted(index_error))
    assert kind == "type" and "ours IndexError" in detail and "torch RuntimeError" in detail
    # torch.ops takes 2 for a bool (its truth value), and so does pytorchlite.ops now: no
    # difference; a parser difference is one side's schema refusal, as planted here
    two = "aten.sum.dim_IntList(T((2, 3), 'float32', 'c', 1), [1], 2)"
    assert torch_verdict(two) is None

    def parser_refuses(name, overload, op, a, k):
        raise RuntimeError("aten::sum() Expected a value of type 'bool' for argument "
                           "'keepdim' but instead found type 'int'.")
    kind, detail = torch_verdict(two, planted(parser_refuses))
    assert kind == "parser" and "Expected a value of type 'bool'" in detail
    # a number for out=: torch.ops writes a tensor made of it and returns a number, torch's
    # Python functions and ours the tensor (fuzzer --torch seed 6 after clamp_min.Tensor)
    num_out = "aten.sub.out(T((2, 3), 'float16', 'c', 1), T((2, 3), 'float16', 't', 2), " \
              "alpha=-3.082, out=5e-324)"
    kind, detail = torch_verdict(num_out)
    assert kind == "parser" and "for a number out=" in detail
    assert torch_verdict(num_out.replace("out=5e-324", "out=T((0,), 'float32', 'c', 3)")) \
        is None
    # ... and a non-finite one, written as the fuzzer prints it (seed 24)
    inf_out = "aten.add.out(T((1, 5), 'float32', 'e', 13071), 1e308, out=float('inf'))"
    kind, detail = torch_verdict(inf_out)
    assert kind == "parser" and "for a number out=" in detail
    # ... and a number (a complex one here) for an in-place op's self (seed 62, call 427)
    num_self = "aten.div_.Tensor(1j, T((), 'uint8', 'e', 21628))"
    kind, detail = torch_verdict(num_self)
    assert kind == "parser" and "in-place self" in detail
    from tools.fuzz import differential
    assert differential.NUMBER_SELF.search(num_self)
    assert not differential.NUMBER_SELF.search("aten.div_.Tensor(T((), 'uint8', 'e', 2), 1j)")
    assert not differential.NUMBER_SELF.search("aten.div.Tensor(1j, T((), 'uint8', 'e', 2))")


def test_torch_mode_skips_random_and_uninitialised_ops():
    from tools.fuzz import differential
    rows = {r[0] for r in op_fuzzer.schema_rows()}
    for name in ("rand", "randn", "normal", "bernoulli", "multinomial", "native_dropout",
                 "empty", "empty_like"):
        assert name in differential.SKIP and name in rows
    assert differential.BAD_DTYPE.search("aten.sum.default(T((2,), 'int8', 'c', 5), dtype=99)")
    assert not differential.BAD_DTYPE.search("aten.sum.default(T((2,), 'int8', 'c', 99))")

    # torch's side is not run where it writes out of bounds (seed 24's crashes); ours raises
    assert "embedding_dense_backward" in differential.SKIP
    with pytest.raises(IndexError, match="index out of range in self"):
        eval("aten.embedding_dense_backward.default(T((1, 1), 'uint8', 'c', 12322), "
             "T((), 'int64', 'c', 14213), 3, 2, True)", op_fuzzer.namespace())


@torch_ref
def test_torch_mode_runs_and_repros_from_the_command_line():
    """--torch runs calls in children and prints its tally; --repro with --torch prints both
    outcomes and the verdict."""
    root = os.path.dirname(TESTS)
    out = subprocess.run([sys.executable, "-m", "tools.fuzz.op_fuzzer", "--torch", "--ops",
                          "^(abs|neg)$", "--calls", "20", "--jobs", "1"], cwd=root,
                         capture_output=True, text=True, timeout=300)
    assert "20 calls (seed 0" in out.stdout and "against torch: " in out.stdout, out.stderr
    out = subprocess.run([sys.executable, "-m", "tools.fuzz.op_fuzzer", "--torch", "--repro",
                          "0:3", "--ops", "^neg$"], cwd=root, capture_output=True, text=True,
                         timeout=300)
    assert out.stdout.startswith("aten.neg.") and "\ntorch: (" in out.stdout


def test_fail_on_names_classes_of_difference():
    """--fail-on (CI's smoke: value) chooses the classes that fail a --torch run; a name
    that is no class is refused."""
    root = os.path.dirname(TESTS)
    out = subprocess.run([sys.executable, "-m", "tools.fuzz.op_fuzzer", "--torch",
                          "--fail-on", "value,wrong", "--calls", "1"], cwd=root,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 2 and "--fail-on takes classes of value, accepts" in out.stderr
    findings = [(1, "accepts", ""), (2, "type", "")]
    assert op_fuzzer.failed(findings, ("value",)) is False
    assert op_fuzzer.failed(findings, ("value", "accepts")) is True
    assert op_fuzzer.failed(findings + [(3, "crash", "")], ()) is True
