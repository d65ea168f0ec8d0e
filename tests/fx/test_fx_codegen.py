"""torch.fx.graph.CodeGen and Graph.set_codegen: a custom CodeGen writes the `def` line and the
return statement of the generated forward and adds globals; the Interpreter takes inputs and
gives outputs through its process_inputs / process_outputs; copies and Transformer keep it.
The expected code is PyTorch 2.13's."""
import copy
import typing

import pytest

import pytorchlite as ptl
from pytorchlite import fx
from pytorchlite.fx.graph import CodeGen, PythonCode
from helpers import torch, torch_ref

LIST_CODE = ("\n\n\n\ndef forward(self, args_list: List[torch.Tensor]):\n"
             "    a, b = args_list\n    add = a + b;  a = b = None\n"
             "    return {'out': add}\n    ")


def list_codegen(base):
    """The CodeGen of PyTorch's documentation example: the inputs come as one list and the
    output goes out in a dict."""
    class ListCodeGen(base):
        def gen_fn_def(self, free_vars, maybe_return_annotation):
            return (f"\ndef forward(self, args_list: List[torch.Tensor])"
                    f"{maybe_return_annotation}:\n    {', '.join(free_vars)} = args_list")

        def generate_output(self, output_args):
            return f"return {{'out': {output_args!r}}}"

        def additional_globals(self):
            return [("List", typing.List)]

        def process_inputs(self, *inputs):
            assert len(inputs) == 1
            return inputs[0]

        def process_outputs(self, outputs):
            return {"out": outputs}
    return ListCodeGen()


def add(a, b):
    return a + b


def traced_with_list_codegen(t, base):
    gm = t.fx.symbolic_trace(add)
    gm.graph.set_codegen(list_codegen(base))
    gm.recompile()
    return gm


def test_custom_codegen():
    gm = traced_with_list_codegen(ptl, CodeGen)
    assert gm.code == LIST_CODE
    vals = [ptl.ones(2), ptl.full((2,), 2.0)]
    expected = ptl.full((2,), 3.0)
    assert ptl.equal(gm(vals)["out"], expected)
    assert ptl.equal(fx.Interpreter(gm).run(vals)["out"], expected)
    assert ptl.equal(fx.Interpreter(gm).run(*vals, enable_io_processing=False), expected)
    assert gm.graph.process_inputs(vals) == vals
    assert ptl.equal(copy.deepcopy(gm)(vals)["out"], expected)
    assert fx.Transformer(gm).transform().code == LIST_CODE
    # the graph itself is unchanged; the default CodeGen writes the usual forward again
    assert str(gm.graph).endswith("return add")
    gm.graph.set_codegen(CodeGen())
    gm.recompile()
    assert gm.code == "\n\n\ndef forward(self, a, b):\n    add = a + b;  a = b = None\n" \
                      "    return add\n    "


def test_default_codegen_parts():
    cg = CodeGen()
    assert fx.CodeGen is CodeGen
    assert cg.gen_fn_def(["a", "b"], "") == "def forward(self, a, b):"
    assert cg.gen_fn_def(["self", "x"], " -> int") == "def forward(self, x) -> int:"
    assert cg.generate_output(("a", 1)) == "return ('a', 1)"
    assert cg.process_inputs(1, 2) == (1, 2) and cg.process_outputs(3) == 3
    assert cg.additional_globals() == []
    code = fx.symbolic_trace(add).graph.python_code("self")
    assert isinstance(code, PythonCode) and "def forward(self, a, b):" in code.src


def test_a_codegen_that_fails_reports_at_recompile():
    class Broken(CodeGen):
        def gen_fn_def(self, free_vars, maybe_return_annotation):
            return "def forward(self"

    gm = fx.symbolic_trace(add)
    gm.graph.set_codegen(Broken())
    with pytest.raises(SyntaxError):
        gm.recompile()


@torch_ref
def test_custom_codegen_as_torch():
    from torch.fx.graph import CodeGen as TorchCodeGen
    gm = traced_with_list_codegen(torch, TorchCodeGen)
    assert gm.code == LIST_CODE
    assert gm([torch.ones(2), torch.ones(2)])["out"].tolist() == [2.0, 2.0]
