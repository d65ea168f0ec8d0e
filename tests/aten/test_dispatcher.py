"""The dispatcher, seen from Python: schemas, kernel tables, trace, statistics, ops namespace."""
import re

import pytest

import pytorchlite as ptl
from pytorchlite import _C


@pytest.mark.parametrize("text", [
    "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
    "add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
    "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
    "view(Tensor(a) self, int[] size) -> Tensor(a)",
    "sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
    "conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=[1, 1], int[2] padding=[0, 0]) -> Tensor",
    "index.Tensor(Tensor self, Tensor?[] indices) -> Tensor",
    "cat(Tensor[] tensors, int dim=0) -> Tensor",
    "split.Tensor(Tensor(a -> *) self, int split_size, int dim=0) -> Tensor(a)[]",
    "isclose(Tensor self, Tensor other, float rtol=1e-05, float atol=1e-08, bool equal_nan=False) -> Tensor",
    "div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor",
    "mse_loss(Tensor self, Tensor target, int reduction=Mean) -> Tensor",
    "native_layer_norm_backward(Tensor grad_out, Tensor input, int[] normalized_shape, Tensor mean, Tensor rstd, Tensor? weight, Tensor? bias, bool[3] output_mask) -> (Tensor, Tensor, Tensor)",
    "myns::foo(Tensor x) -> ()",
    "myns::bump(Tensor(a0!) x, Tensor(b1!) y) -> ()",
])
def test_schema_round_trip(text):
    out = _C._parse_schema(text)
    ns_text = text if "::" in text else "aten::" + text
    # canonical form: same tokens modulo the alias annotation "(a -> *)" and defaults spelling
    norm = lambda s: re.sub(r"\(([a-z])\d*( -> \*)?(!?)\)", r"(\1\3)", s).replace("Mean", "1").replace("1e-05", "1e-05")
    assert norm(out) == norm(ns_text)
    assert _C._parse_schema(out) == out   # a fixed point


@pytest.mark.parametrize("text, where", [
    ("add.Tensor(Tensor self", "expected ')'"),
    ("add(Tensor self) Tensor", "expected '->'"),
    ("add(Blob self) -> Tensor", "unknown type 'Blob' at position 4 in"),
    ("add(Tensor) -> Tensor", "expected an argument name"),
    ("(Tensor self) -> Tensor", "expected an operator name"),
    ("a" * 30 + "::" + "b" * 40 + "(Tensor self) -> Tensor", "operator name too long"),
    ("add(Tensor self, int x=[1, ) -> Tensor", "bad list default"),
    ("add(Tensor self) -> Tensor out junk", "trailing characters"),
    ("add(Tensor(a self) -> Tensor", "expected ')' to close the alias annotation at position 13"),
    ("add(Tensor(!) self) -> Tensor", "expected an alias set name such as 'a' at position 11"),
    ("add(Tensor self, int n=abc) -> Tensor",
     "expected a number, True, False or None as the default at position 23"),
])
def test_schema_errors(text, where):
    with pytest.raises(RuntimeError, match="schema parse error: " + re.escape(where)):
        _C._parse_schema(text)


def test_bool_list_argument_takes_bools_and_ints():
    """bool[3] output_mask (PyTorch's schema) takes a list of bools, or of ints as PyTorch
    does (nonzero is True); anything else is torch.ops' RuntimeError naming the parameter."""
    x, w = ptl.randn(1, 2, 4, 4), ptl.randn(3, 2, 3, 3)
    gy = ptl.randn(1, 3, 2, 2)
    args = (gy, x, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
    for mask in ([True, False, True], [1, 0, 1], (2, 0, -1)):
        dx, dw, db = ptl.ops.aten.convolution_backward(*args, mask)
        assert dx is not None and dw is None and db is not None
        assert db.shape == (3,)
    assert "bool[3] output_mask" in _C._dispatch_schema("aten::convolution_backward")
    for bad in (["yes", True, True], [None, 0, 0], True):
        with pytest.raises(RuntimeError, match="for argument 'output_mask'"):
            ptl.ops.aten.convolution_backward(*args, bad)


def test_every_schema_parses_and_round_trips():
    rows = _C._schemas()
    assert len(rows) > 300
    for row in rows:
        assert _C._parse_schema(row["schema"]) == row["schema"]


def test_every_dispatch_key_has_a_kernel():
    # a key that nothing registers would only be printed, never dispatched to
    keys = _C._dispatch_keys()
    assert keys == ["CPU", "CUDA", "Meta", "SparseCPU", "Complex", "Python", "Conjugate",
                    "CompositeImplicitAutograd", "Autograd", "Tracer", "AutocastCPU", "Profiler"]
    # Python, Conjugate, AutocastCPU, Tracer and Profiler are served by one boxed fallback
    # each, every other key by per-op kernels
    fallbacks = {"Python", "Conjugate", "AutocastCPU", "Tracer", "Profiler"}
    assert {k for row in _C._schemas() for k in row["kernels"]} == set(keys) - fallbacks
    for key in fallbacks:
        assert re.search(rf"^{key}: fallback", _C._dispatch_dump("aten::mm"), re.M)
    # SparseCPU and Meta have kernels for some ops and a fallback that refuses every other op
    assert re.search(r"^SparseCPU: fallback", _C._dispatch_dump("aten::exp"), re.M)
    assert re.search(r"^Meta: kernel registered at meta\.c", _C._dispatch_dump("aten::exp"), re.M)
    assert re.search(r"^Meta: fallback", _C._dispatch_dump("aten::nonzero"), re.M)


def test_dispatch_dump_names_kernel_and_origin():
    text = _C._dispatch_dump("aten::add.Tensor")
    assert "schema: aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor" in text
    assert re.search(r"^CPU: kernel registered at binary\.c", text, re.M)
    with pytest.raises(RuntimeError, match="no operator named 'aten::nope'"):
        _C._dispatch_dump("aten::nope")


def test_dispatch_trace_context_manager(capfd):
    x = ptl.tensor([1.0, 2.0])
    capfd.readouterr()
    with ptl.dispatch_trace():
        x + x
        x.t()
    x + x   # after the block: silent
    err = capfd.readouterr().err
    lines = [ln for ln in err.splitlines() if "[dispatch]" in ln]
    # each op passes the Autograd key first, which redispatches below itself to the CPU kernel
    assert lines == [
        "[dispatch] aten::add.Tensor  keys={Autograd, CPU}  -> Autograd kernel",
        "  [dispatch] aten::add.Tensor  keys={CPU}  -> CPU kernel",
        "[dispatch] aten::t  keys={Autograd, CPU}  -> Autograd kernel",
        "  [dispatch] aten::t  keys={CPU}  -> CPU kernel",
    ], err


def test_dispatch_trace_shows_nested_calls(capfd):
    x = ptl.tensor([[1.0, 2.0], [3.0, 4.0]])
    capfd.readouterr()
    with ptl.dispatch_trace():
        x.view_as(x)     # view_as's kernel calls view through the dispatcher
    lines = [ln.split("  keys")[0] for ln in capfd.readouterr().err.splitlines() if "[dispatch]" in ln]
    assert lines == ["[dispatch] aten::view_as", "  [dispatch] aten::view_as",
                     "    [dispatch] aten::view", "      [dispatch] aten::view"]


def test_dispatch_trace_env_var(tmp_path):
    import subprocess
    import sys
    code = "import pytorchlite as t; x = t.tensor([1.0]); x * x"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**__import__("os").environ, "PTL_SHOW_DISPATCH_TRACE": "1"})
    assert r.returncode == 0, r.stderr
    assert "[dispatch] aten::mul.Tensor" in r.stderr


def test_dispatch_stats_count_calls_per_key():
    x = ptl.tensor([1.0])
    ptl.dispatch_stats(reset=True)
    for _ in range(3):
        x + x
    x * x
    stats = ptl.dispatch_stats()
    assert stats["aten::add.Tensor"] == {"CPU": 3, "Autograd": 3}
    assert stats["aten::mul.Tensor"] == {"CPU": 1, "Autograd": 1}


def test_ops_namespace_calls_any_overload():
    x = ptl.tensor([1.0, 2.0])
    assert ptl.ops.aten.add.Tensor(x, x, alpha=3).tolist() == [4.0, 8.0]
    assert ptl.ops.aten.add(x, x).tolist() == [2.0, 4.0]
    assert ptl.ops.aten.mul.Tensor(x, x).tolist() == [1.0, 4.0]
    assert "add.Tensor" in ptl.ops.aten.add.Tensor._schemas[0]
    with pytest.raises(AttributeError, match="no_such_op"):
        ptl.ops.aten.no_such_op
    with pytest.raises(AttributeError, match="no operator named 'aten::add.Nope'"):
        ptl.ops.aten.add.Nope


def test_functions_and_methods_come_from_schemas():
    x = ptl.tensor([1.0, 2.0])
    assert ptl.add(x, x, alpha=2).tolist() == [3.0, 6.0]
    assert x.add(x).tolist() == [2.0, 4.0]
    assert ptl.add(input=x, other=x).tolist() == [2.0, 4.0]
    out = ptl.tensor([0.0, 0.0])
    r = ptl.add(x, x, out=out)
    assert r is out and out.tolist() == [2.0, 4.0]
    assert x.add_(x) is x and x.tolist() == [2.0, 4.0]


def test_invalid_combination_names_the_signatures():
    # add has hidden (deprecated) signatures in PyTorch, so a call no signature's argument
    # count admits gets the general form, here with its one shown signature (Notes [Bad call
    # messages] and [Signature strings])
    x = ptl.tensor([1.0])
    with pytest.raises(TypeError) as e:
        ptl.add()
    assert str(e.value) == ("add() received an invalid combination of arguments - got (), but "
                            "expected (Tensor input, Tensor other, *, Number alpha = 1, "
                            "Tensor out = None)")
    with pytest.raises(TypeError, match=r"add\(\) received an invalid combination"):
        x.add()


def test_call_one_signature_admits_names_the_fault():
    x = ptl.tensor([1.0])
    with pytest.raises(TypeError, match=re.escape(
            "add(): argument 'other' (position 2) must be Tensor, not str")):
        ptl.add(x, "a")
    with pytest.raises(TypeError, match="add\\(\\) got an unexpected keyword argument 'beta'"):
        ptl.add(x, x, beta=1)
    with pytest.raises(TypeError, match='mul\\(\\) missing 1 required positional arguments: "other"'):
        x.mul()


def test_operator_returns_not_implemented_for_foreign_types():
    x = ptl.tensor([1.0])
    with pytest.raises(TypeError, match="unsupported operand"):
        x + "a"
    assert (x == None) is False  # noqa: E711  (identity fallback, as PyTorch)
    assert (x != "a") is True


def test_operator_without_kernel_fails_cleanly():
    _C._register_op("ptltest::nokernel(Tensor x) -> Tensor")
    with pytest.raises(NotImplementedError, match=re.escape(
            "Could not run 'ptltest::nokernel' with arguments from the 'CPU' backend. "
            "'ptltest::nokernel' is only available for these backends: [].")):
        ptl.ops.ptltest.nokernel(ptl.tensor([1.0]))
    with pytest.raises(RuntimeError, match="same name and overload name multiple times"):
        _C._register_op("ptltest::nokernel(Tensor x) -> Tensor")
    with pytest.raises(RuntimeError, match="schema parse error"):
        _C._register_op("ptltest::bad(Tensor x")


@pytest.mark.parametrize("text,what", [
    ("f(int[300] x) -> Tensor", "fixed list length above the maximum number of dimensions"),
    ("f(float[128] x) -> Tensor", "fixed list length above the maximum number of dimensions"),
    ("f(int[99999999999999999999] x) -> Tensor", "list length too large"),
    ("f(int x=99999999999999999999) -> Tensor", "integer default out of range"),
    ("f(int x=-99999999999999999999) -> Tensor", "integer default out of range"),
    ("f(int[] x=[1, 99999999999999999999]) -> Tensor", "bad list default"),
])
def test_schema_parser_rejects_lengths_and_numbers_that_do_not_fit(text, what):
    with pytest.raises(RuntimeError, match=r"^schema parse error: " + re.escape(what)):
        _C._parse_schema(text)


def test_schema_parser_keeps_long_tensor_list_lengths_and_extreme_defaults():
    assert _C._parse_schema("f(Tensor[300] x) -> Tensor") == "aten::f(Tensor[300] x) -> Tensor"
    assert _C._parse_schema("f(int x=-9223372036854775808) -> Tensor") == \
        "aten::f(int x=-9223372036854775808) -> Tensor"
    assert _C._parse_schema("f(int[3] x=7) -> Tensor") == "aten::f(int[3] x=[7, 7, 7]) -> Tensor"


def test_registered_ops_keep_their_own_defaults():
    # a registered op's default string and list point into its own argument: two ops with
    # defaults at the same positions each keep theirs
    for i, mode in enumerate(["near", "far"]):
        _C._register_op(f'_ptl_defaults_test::f{i}(Tensor self, int[2] size=[{i}, 4], '
                        f'str mode="{mode}") -> Tensor')
    rows = sorted(r["schema"] for r in _C._schemas()
                  if r["schema"].startswith("_ptl_defaults_test::"))
    assert rows == [
        '_ptl_defaults_test::f0(Tensor self, int[2] size=[0, 4], str mode="near") -> Tensor',
        '_ptl_defaults_test::f1(Tensor self, int[2] size=[1, 4], str mode="far") -> Tensor']
