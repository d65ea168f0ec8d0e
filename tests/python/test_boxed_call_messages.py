"""Calls of pytorchlite.ops.aten.<op>.<overload> (and of the overload packets) that the
schema refuses raise torch.ops' RuntimeError, word for word.

The calls are generated from our schemas, one overload at a time: no arguments, one too
many, an unknown keyword, a positional argument given again by keyword, a keyword-only
parameter given positionally, and a wrong value (a str, None, a float for an int, a list of
str for an int list) at each parameter.  Each runs on pytorchlite.ops and torch.ops; where
torch refuses it with a RuntimeError, ours must raise the same text (the module name aside).
See Note [Boxed call messages] in src/python/schema_errors.c."""
import re

import pytest

import pytorchlite as ptl
from pytorchlite._ops_namespace import FunctionSchema
from helpers import torch, torch_ref

# Overloads whose messages we cannot match: "name.overload" -> reason
_NONE_LIST = ("the bindings' parser takes None for an int list with a default (its "
              "default); torch.ops refuses it")
EXPECTED = {
    **dict.fromkeys(("amax.default", "amin.default", "avg_pool2d.default",
                     "avg_pool3d.default", "max_pool2d_with_indices.default",
                     "max_pool3d_with_indices.default", "roll.default"), _NONE_LIST),
    **dict.fromkeys(("sparse_coo_tensor.indices", "sparse_coo_tensor.indices_size"),
                    "our schema has a check_invariants parameter that PyTorch's lacks"),
}


def _value(lib, typ):
    """A value of type typ that parses, or None where there is no plain one"""
    base = re.sub(r"\[\d*\]", "[]", typ.rstrip("?")).replace("SymInt", "int")
    values = {"Tensor": lambda: lib.ones(2, 2), "Tensor[]": lambda: [lib.ones(2, 2)],
              "int": lambda: 1, "int[]": lambda: [1], "float": lambda: 1.0,
              "float[]": lambda: [1.0], "bool": lambda: False, "Scalar": lambda: 1,
              "ScalarType": lambda: lib.float32, "str": lambda: "mean"}
    return values[base]() if base in values else None


def _bad_values(typ):
    """(tag, value) pairs of the wrong type for a parameter of type typ"""
    base = typ.rstrip("?")
    bad = [("str", "a")] if not base.startswith("str") else [("int", 3)]
    if not typ.endswith("?") and base != "Tensor":
        bad.append(("None", None))
    if base in ("int", "SymInt"):
        bad.append(("float", 1.5))
    if base.startswith(("int[", "SymInt[")):
        bad.append(("strlist", ["a"]))
    return bad


def _aten_schemas():
    """(schema, name, overload) of each of our aten operators"""
    for entry in ptl._C._schemas():
        schema = entry["schema"]
        qual = schema[:schema.index("(")]
        if qual.startswith("aten::"):
            name, _, overload = qual[6:].partition(".")
            yield schema, name, overload


def _overloads():
    found = []
    for schema, name, overload in _aten_schemas():
        params = [(a.name, re.sub(r"\([a-z0-9!]+( -> \*)?\)", "", a.type), a.kwarg_only,
                   a.default_value is not None) for a in FunctionSchema(schema).arguments]
        if all(_value(ptl, t) is not None or d for _, t, _, d in params):
            found.append((name, overload or "default", params))
    return found


OVERLOADS = _overloads()


def _cases(params):
    """(tag, build) pairs; build(lib) -> (args, kwargs)"""
    req = [p for p in params if not p[3]]
    pos = [p for p in req if not p[2]]
    kw = [p for p in req if p[2]]

    def good(lib):
        return [_value(lib, t) for _, t, _, _ in pos], {n: _value(lib, t) for n, t, _, _ in kw}

    cases = [("none", lambda lib: ((), {})),
             ("toomany", lambda lib: (good(lib)[0] + [1] * (len(params) + 1), {})),
             ("unknown_kw", lambda lib: (good(lib)[0], dict(good(lib)[1], foo=1)))]
    if pos:
        cases.append(("dup_kw", lambda lib: (good(lib)[0], dict(good(lib)[1], **{
            pos[0][0]: _value(lib, pos[0][1])}))))
    if kw:
        cases.append(("kwonly_positional", lambda lib: (
            good(lib)[0] + [_value(lib, t) for _, t, _, _ in kw], {})))
    for name, typ, kwonly, _ in params:
        if _value(ptl, typ) is None:
            continue
        for tag, bad in _bad_values(typ):
            def build(lib, name=name, kwonly=kwonly, bad=bad):
                args, kwargs = good(lib)
                names = [n for n, _, _, _ in pos]
                if not kwonly and name in names:
                    args[names.index(name)] = bad
                else:
                    kwargs[name] = bad
                return args, kwargs
            cases.append((f"{name}={tag}", build))
    return cases


def _outcome(lib, name, overload, build):
    """(exception type, message) of the call; its operator's schema, as each library prints
    it, is shown as <schema>"""
    op = getattr(getattr(lib.ops.aten, name), overload)
    args, kwargs = build(lib)
    try:
        op(*args, **kwargs)
    except Exception as e:   # noqa: BLE001  (every outcome is compared)
        return type(e).__name__, str(e).replace(str(op._schema), "<schema>").replace(
            "pytorchlite", "torch")
    return "ok", None


@torch_ref
@pytest.mark.parametrize("name,overload,params", OVERLOADS,
                         ids=[f"{n}.{o}" for n, o, _ in OVERLOADS])
def test_boxed_call_messages_match_torch(name, overload, params):
    try:
        getattr(getattr(torch.ops.aten, name), overload)
    except (AttributeError, RuntimeError):
        pytest.skip("torch has no such overload")
    compared, differ = 0, []
    for tag, build in _cases(params):
        want = _outcome(torch, name, overload, build)
        if want[0] != "RuntimeError" or not re.match(
                r"aten::\w+\(\) |Unknown keyword|Argument '|Expected a proper Tensor", want[1]):
            continue
        compared += 1
        got = _outcome(ptl, name, overload, build)
        if got != want:
            differ.append(f"{tag}:\n  ours: {got}\n torch: {want}")
    reason = EXPECTED.get(f"{name}.{overload}")
    if reason is not None:
        assert differ, f"{name}.{overload} now matches torch: drop it from EXPECTED"
        pytest.xfail(reason)
    assert not differ, "\n".join(differ)
    assert compared or not _cases(params)


@torch_ref
def test_schemas_spell_symint_as_torch():
    """Our aten schemas spell SymInt where PyTorch's do (it names the C++ type and the cast
    of a bad list item in the messages): none differs from torch's only in int/SymInt."""
    differ = []
    for ours, name, overload in _aten_schemas():
        try:
            theirs = str(getattr(getattr(torch.ops.aten, name), overload or "default")._schema)
        except (AttributeError, RuntimeError):
            continue
        if ours != theirs and ours.replace("SymInt", "int") == theirs.replace("SymInt", "int"):
            differ.append(f"{ours}\n  torch: {theirs}")
    assert not differ, "\n".join(differ)


def test_missing_and_extra_arguments():
    x = ptl.ones(2)
    decl = "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"
    calls = [
        (lambda: ptl.ops.aten.add.Tensor(x),
         f"aten::add() is missing value for argument 'other'. Declaration: {decl}"),
        (lambda: ptl.ops.aten.add.Tensor(x, x, x, x),
         "aten::add() expected at most 3 argument(s) but received 4 argument(s). "
         f"Declaration: {decl}"),
        (lambda: ptl.ops.aten.add.Tensor(x, x, foo=1),
         f"Unknown keyword argument 'foo' for operator 'aten::add'. Schema: {decl}"),
        (lambda: ptl.ops.aten.add.Tensor(x, other=x, self=x),
         f"Argument 'self' specified both as positional and keyword argument. Schema: {decl}"),
        (lambda: ptl.ops.aten.add.Tensor(x, x, 2),
         f"aten::add() takes 2 positional argument(s) but 3 was/were given.  Declaration: {decl}"),
        (lambda: ptl.ops.aten.add.Tensor(x, x, alpha="a"),
         "aten::add() Expected a value of type 'number' for argument 'alpha' but instead found "
         f"type 'str'.\nPosition: 2\nValue: 'a'\nDeclaration: {decl}\n"
         "Cast error details: Cannot cast a to number"),
        (lambda: ptl.ops.aten.add.Tensor(None, x),
         "Expected a proper Tensor but got None (or an undefined Tensor in C++) for argument "
         "#0 'self'"),
        (lambda: ptl.ops.aten.relu(x, x),
         "Overloaded torch operator invoked from Python failed to match any schema:\n"
         "aten::relu() expected at most 1 argument(s) but received 2 argument(s). "
         "Declaration: aten::relu(Tensor self) -> Tensor\n\n"
         "aten::relu() takes 1 positional argument(s) but 2 was/were given.  "
         "Declaration: aten::relu.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)\n\n"),
    ]
    for call, msg in calls:
        with pytest.raises(RuntimeError) as info:
            call()
        assert str(info.value) == msg


def test_wrong_types_name_the_parameter():
    x = ptl.ones(2, 3)
    pybind = ("to C++ type '?' (#define PYBIND11_DETAILED_ERROR_MESSAGES or compile in debug "
              "mode for details)")
    calls = [
        (lambda: ptl.ops.aten.narrow.default(x, 0, 1.5, 1), "int", "start", "float", 2, "1.5",
         f"Unable to cast Python instance of type <class 'float'> {pybind}"),
        (lambda: ptl.ops.aten.view.default(x, ["a"]), "List[int]", "size", "list", 1, "['a']",
         f"Unable to cast Python instance of type <class 'str'> {pybind}"),
        (lambda: ptl.ops.aten.sum.dim_IntList(x, "a"), "Optional[List[int]]", "dim", "str", 1,
         "'a'", f"Unable to cast Python instance of type <class 'str'> {pybind}"),
        (lambda: ptl.ops.aten.clamp.default(x, "a"), "Optional[number]", "min", "str", 1, "'a'",
         "Cannot cast a to number"),
        (lambda: ptl.ops.aten.index.Tensor(x, ["a"]), "List[Optional[Tensor]]", "indices",
         "list", 1, "['a']", "Unable to cast a to Tensor"),
        (lambda: ptl.ops.aten.cat.default(["a"]), "List[Tensor]", "tensors", "list", 0, "['a']",
         f"Unable to cast Python instance of type <class 'list'> {pybind}"),
    ]
    for call, want, param, found, position, value, details in calls:
        with pytest.raises(RuntimeError) as info:
            call()
        lines = str(info.value).split("\n")
        assert lines[0].endswith(f"() Expected a value of type '{want}' for argument '{param}' "
                                 f"but instead found type '{found}'."), lines[0]
        assert lines[1:3] == [f"Position: {position}", f"Value: {value}"]
        assert lines[-1] == f"Cast error details: {details}"


def test_accepted_calls_are_unchanged():
    """The boxed callables accept what the bindings accept (a number for a Tensor too)"""
    x = ptl.tensor([1.0, 2.0])
    assert ptl.ops.aten.add.Tensor(x, x, alpha=2).tolist() == [3.0, 6.0]
    assert ptl.ops.aten.add(x, 1).tolist() == [2.0, 3.0]
    assert ptl.ops.aten.add.Tensor(x, 1).tolist() == [2.0, 3.0]
