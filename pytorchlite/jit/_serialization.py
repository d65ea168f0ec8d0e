"""jit.save / jit.load (torch/jit/_serialization.py): a traced module or function as a file
that runs without the Python code that made it.

Note [Graph file format]
A file written by jit.save is an uncompressed zip archive whose records sit under one folder:

    version        "1\\n": the version of this format; load refuses any other
    meta.json      {"kind": "module" | "function", "parameters": [names], "buffers": [names],
                    "requires_grad": {name: bool}, "training": bool}; a scripted module or
                   function adds "script": true, "inputs": [[name, type] or [name, type,
                   default]] and "attributes": {"path.name": int, float, bool or str}, the
                   values its graph reads with prim::GetAttr besides tensors and submodules
    graph.txt      the graph in TorchScript's text (prim::FusionGroup nodes expanded back into
                   the nodes they hold) with nothing left out: every aten node names
                   its overload (`aten::add.Tensor`), floats are written exactly (repr), dtypes
                   by name (`[value="float32"]`), and tensor constants by their key
                   (`[tensor="c0"]`).  A scripted graph holds prim::If and prim::Loop
                   nodes with their blocks (Note [Blocks] in _ir.py) and no prim::CallMethod:
                   submodules' graphs are written inlined
    tensors.pt     {"parameters": {...}, "buffers": {...}, "constants": {...}} written by
                   pytorchlite.save and read back by pytorchlite.load(weights_only=True)
                   (Note [Checkpoint format], Note [Weights-only loading])

Nothing in the file is executed as Python: graph.txt is parsed, not evaluated.  load checks
what it parses before anything runs: every operator exists with that overload, every value is
defined before it is used, every type is one the IR knows, the inputs of each node have the
types its schema declares and its outputs have the count and kind the schema returns, every
prim::GetAttr names a parameter, buffer, submodule or attribute the file holds, every tensor
constant is in tensors.pt, and every block has the inputs and outputs its node needs, with their
types (a value defined in a block is not read outside it).  Any failure raises a RuntimeError
that names the record, the line and what is wrong.
"""
import inspect
import io
import json
import os
import re
import zipfile

from .. import _C, serialization
from .. import nn
from .._tensor import Tensor
from . import _ir, passes
from ._trace import ScriptFunction, TracedModule, _GuardedCache, _Traced, _flatten

FORMAT_VERSION = 1
_PRIM_KINDS = ("prim::Constant", "prim::GetAttr", "prim::ListConstruct",
               "prim::ListUnpack", "prim::TupleConstruct", "prim::TupleUnpack",
               "prim::TupleIndex", "prim::unchecked_cast", "prim::If", "prim::Loop",
               "prim::Uninitialized", "prim::DictConstruct")
_BLOCK_COUNT = {"prim::If": 2, "prim::Loop": 1}
_LAYOUTS = ("strided",)
_MEMORY_FORMATS = ("contiguous_format", "preserve_format", "channels_last", "channels_last_3d")
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.]*$")
_ATTR = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")   # a submodule of a ModuleList is "0"


def _fail(what):
    raise RuntimeError("pytorchlite.jit.load: " + what)


def _dtype_names():
    import pytorchlite
    return {name: getattr(pytorchlite, name) for name in _ir._DTYPE_NAMES
            if hasattr(pytorchlite, name)}


def save(m, f, _extra_files=None):
    """Writes the traced module or function m to f (a path or a writable binary file) in the
    format of Note [Graph file format]."""
    from ._script import RecursiveScriptModule
    if not isinstance(m, (TracedModule, ScriptFunction, RecursiveScriptModule)):
        raise RuntimeError(f"pytorchlite.jit.save expects a traced or scripted module or "
                           f"function (from jit.trace, jit.script or jit.load), got "
                           f"{type(m).__name__}")
    graph = passes.eliminate_dead_code(passes.unfuse(passes.copy_graph(m.inlined_graph)))
    if isinstance(m, (TracedModule, RecursiveScriptModule)):
        params = dict(m.named_parameters())
        buffers = dict(m.named_buffers())
        meta = {"kind": "module", "type": graph.inputs[0].type,
                "parameters": list(params), "buffers": list(buffers),
                "requires_grad": {k: bool(p.requires_grad) for k, p in params.items()},
                "training": bool(m.training)}
    else:
        params, buffers = {}, {}
        meta = {"kind": "function", "name": m.__name__, "parameters": [], "buffers": [],
                "requires_grad": {}, "training": False}
    if hasattr(m, "_inputs"):
        meta["script"] = True
        meta["inputs"] = [[name, ty] + ([d] if _json_default(d) else [])
                          for name, ty, d in m._inputs]
        meta["attributes"] = _attribute_values(graph, m)
    tensors = io.BytesIO()
    serialization.save({"parameters": {k: p.detach() for k, p in params.items()},
                        "buffers": {k: b.detach() for k, b in buffers.items()},
                        "constants": {k: c.detach() for k, c in graph.constants.items()}},
                       tensors)
    records = {
        "version": f"{FORMAT_VERSION}\n".encode(),
        "meta.json": json.dumps(meta, indent=1).encode(),
        "graph.txt": _ir.print_graph(graph, full=True).encode(),
        "tensors.pt": tensors.getvalue(),
    }
    for name, data in (_extra_files or {}).items():
        records["extra/" + name] = data.encode() if isinstance(data, str) else data
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:
            _write(fh, records)
    else:
        _write(f, records)


def _json_default(d):
    return d is None or type(d) in (int, float, bool, str)


def _attribute_values(graph, module):
    """{"path.name": value} of every prim::GetAttr of graph that reads an int, float, bool or
    str attribute of module or of a submodule."""
    where = {graph.inputs[0]: ("", module)}
    out = {}
    for n in _ir.all_nodes(graph.nodes):
        if n.kind != "prim::GetAttr" or n.inputs[0] not in where:
            continue
        path, owner = where[n.inputs[0]]
        name = n.attrs["name"]
        full = path + name
        if name in owner._modules:
            where[n.outputs[0]] = (full + ".", owner._modules[name])
        elif n.outputs[0].type in ("int", "float", "bool", "str"):
            out[full] = getattr(owner, name)
    return out


def _write(fh, records):
    with zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED) as zf:
        for name, data in records.items():
            info = zipfile.ZipInfo("archive/" + name, date_time=(1980, 1, 1, 0, 0, 0))
            zf.writestr(info, data)


def _read(f):
    try:
        zf = zipfile.ZipFile(f)
        names = zf.namelist()
        root = names[0].split("/")[0] if names else ""
        records = {n[len(root) + 1:]: zf.read(n) for n in names if n.startswith(root + "/")}
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, zipfile.LargeZipFile) as e:
        _fail(f"the file is not a readable zip archive (truncated or corrupted?): {e}")
    for need in ("version", "meta.json", "graph.txt", "tensors.pt"):
        if need not in records:
            _fail(f"the archive has no '{need}' record; it was not written by jit.save")
    return records


def load(f, map_location=None, _extra_files=None):
    """Reads a file written by jit.save (a path or a readable binary file) and returns a module
    (or function) that runs its graph; nothing in the file is run as Python."""
    if isinstance(f, (str, os.PathLike)):
        if not os.path.exists(f):
            raise ValueError(f"The provided filename {os.fspath(f)} does not exist")
        with open(f, "rb") as fh:
            records = _read(io.BytesIO(fh.read()))
    else:
        records = _read(f)
    version = records["version"].decode("utf-8", "replace").strip()
    if version != str(FORMAT_VERSION):
        _fail(f"unknown format version '{version}' (this pytorchlite reads version "
              f"{FORMAT_VERSION})")
    try:
        meta = json.loads(records["meta.json"])
        if not isinstance(meta, dict) or meta.get("kind") not in ("module", "function"):
            raise ValueError("kind must be 'module' or 'function'")
    except ValueError as e:
        _fail(f"meta.json is not valid: {e}")
    try:
        tensors = serialization.load(io.BytesIO(records["tensors.pt"]), weights_only=True,
                                     map_location=map_location)
    except Exception as e:   # noqa: BLE001  (any failure names the record)
        _fail(f"tensors.pt could not be read: {e}")
    if not isinstance(tensors, dict) or set(tensors) != {"parameters", "buffers",
                                                         "constants"}:
        _fail("tensors.pt does not hold the parameters, buffers and constants")
    try:
        text = records["graph.txt"].decode("utf-8")
    except UnicodeDecodeError as e:
        _fail(f"graph.txt is not UTF-8 text: {e}")
    graph = parse_graph(text, tensors["constants"])
    if _extra_files is not None:
        for name in _extra_files:
            _extra_files[name] = records.get("extra/" + name, b"")
    if meta.get("script"):
        return _load_scripted(meta, tensors, graph)
    if meta["kind"] == "module":
        module = _build_module(meta, tensors)
        _check_attributes(graph, module)
        cache = _loose_cache()
        structure = ("tuple", tuple(("T", i) for i in range(len(graph.inputs) - 1)))
        traced = _Traced(graph, (structure, _input_kinds(graph.inputs[1:])))
        m = TracedModule(None, traced, cache)
        for name, child in module._modules.items():
            m._modules[name] = child
        m._parameters.update(module._parameters)
        m._buffers.update(module._buffers)
        m.training = bool(meta.get("training", False))
        return m
    cache = _loose_cache()
    structure = ("tuple", tuple(("T", i) for i in range(len(graph.inputs))))
    traced = _Traced(graph, (structure, _input_kinds(graph.inputs)))
    fn = ScriptFunction.__new__(ScriptFunction)
    fn._fn = None
    fn._cache = cache
    fn._self_name = None
    fn._code_name = str(meta.get("name", "forward"))
    fn.__name__ = fn._code_name
    cache.add(traced)
    return fn


def _load_scripted(meta, tensors, graph):
    from ._script import RecursiveScriptModule, ScriptedFunction
    inputs = meta.get("inputs")
    first = 1 if meta["kind"] == "module" else 0
    if not isinstance(inputs, list) or len(inputs) != len(graph.inputs) - first or \
            any(not isinstance(i, list) or len(i) not in (2, 3) or i[1] != v.type
                for i, v in zip(inputs, graph.inputs[first:])):
        _fail("meta.json's inputs do not match the graph's")
    inputs = [(i[0], i[1], i[2] if len(i) == 3 else inspect.Parameter.empty) for i in inputs]
    if meta["kind"] == "function":
        fn = ScriptedFunction(None, graph, inputs)
        fn.__name__ = fn._code_name = str(meta.get("name", "forward"))
        return fn
    module = _build_module(meta, tensors)
    attributes = meta.get("attributes", {})
    if not isinstance(attributes, dict):
        _fail("meta.json's attributes are not a dict")
    m = RecursiveScriptModule(graph.inputs[0].type, bool(meta.get("training", False)))
    m._modules.update(module._modules)
    m._parameters.update(module._parameters)
    m._buffers.update(module._buffers)
    for path, value in attributes.items():
        *parents, leaf = str(path).split(".")
        owner = m
        for p in parents:
            owner = owner._modules.setdefault(p, nn.Module())
        if not _ATTR.fullmatch(leaf) or type(value) not in (int, float, bool, str):
            _fail(f"meta.json names an invalid attribute '{path}'")
        object.__setattr__(owner, leaf, value)
    _check_attributes(graph, m)
    m._set_graph(graph, inputs, "forward")
    return m


def _loose_cache():
    cache = _GuardedCache(1, "raise")
    cache.key_of = _loose_key
    cache.fields = ("dim",)
    return cache


def _input_kinds(values):
    kinds = []
    for v in values:
        fields = _ir.tensor_type_fields(v.type)
        if fields is None:
            kinds.append((None,))
        else:
            kinds.append((len(fields[1]),))
    return tuple(kinds)


def _loose_key(inputs):
    """A loaded graph runs at any sizes and dtypes (module.double() converts its parameters):
    its guard is the inputs' structure and each tensor's dim (Note [Trace guards])."""
    leaves = []
    structure = _flatten(tuple(inputs), leaves)
    return (structure, tuple((t.dim(),) for t in leaves)), leaves


def _build_module(meta, tensors):
    root = nn.Module()
    for kind in ("parameters", "buffers"):
        names = meta.get(kind, [])
        if not isinstance(names, list) or set(names) != set(tensors[kind]):
            _fail(f"meta.json's {kind} do not match those in tensors.pt")
        for name in names:
            if not isinstance(name, str) or \
                    not all(_ATTR.fullmatch(p) for p in name.split(".")):
                _fail(f"meta.json names an invalid attribute '{name}'")
            parent = root
            *path, leaf = name.split(".")
            for p in path:
                if p not in parent._modules:
                    parent._modules[p] = nn.Module()
                parent = parent._modules[p]
            t = tensors[kind][name]
            if not isinstance(t, Tensor):
                _fail(f"tensors.pt holds a {type(t).__name__} for '{name}'")
            if kind == "parameters":
                parent._parameters[leaf] = nn.Parameter(
                    t, requires_grad=bool(meta.get("requires_grad", {}).get(name, True)))
            else:
                parent._buffers[leaf] = t
    return root


def _check_attributes(graph, module):
    where = {graph.inputs[0]: module}
    for n in _ir.all_nodes(graph.nodes):
        if n.kind != "prim::GetAttr":
            continue
        owner = where.get(n.inputs[0])
        name = n.attrs["name"]
        if owner is None:
            _fail(f"graph.txt: prim::GetAttr[name=\"{name}\"] reads from a value that is not "
                  "a module")
        found = (owner._modules.get(name) if name in owner._modules else
                 owner._parameters.get(name) if name in owner._parameters else
                 owner._buffers.get(name) if name in owner._buffers else None)
        ty = n.outputs[0].type
        if found is None and ty in ("int", "float", "bool", "str") and \
                name in owner.__dict__ or (name == "training" and ty == "bool"):
            if type(getattr(owner, name)).__name__ != ty:
                _fail(f"graph.txt: prim::GetAttr[name=\"{name}\"] returns a {ty}, the file "
                      f"holds a {type(getattr(owner, name)).__name__}")
            continue
        if found is None:
            _fail(f"graph.txt: prim::GetAttr[name=\"{name}\"] names no parameter, buffer or "
                  "submodule in the file")
        if isinstance(found, nn.Module):
            where[n.outputs[0]] = found
        elif not _ir.is_tensor_type(n.outputs[0].type):
            _fail(f"graph.txt: prim::GetAttr[name=\"{name}\"] returns a tensor, not "
                  f"{n.outputs[0].type}")


# ---- parsing graph.txt -------------------------------------------------------------------

_NODE = re.compile(r"^(.*?) = ([A-Za-z_]+::[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)?)(.*)$")


def _split_decl(text, line_no):
    m = re.match(r"^%([A-Za-z0-9_.]+) : (.+)$", text.strip())
    if m is None:
        _fail(f"graph.txt line {line_no}: cannot parse the value declaration '{text}'")
    ty = m.group(2).strip()
    if not _ir.is_type(ty):
        _fail(f"graph.txt line {line_no}: unknown type '{ty}'")
    return m.group(1), ty


def _constant_value(attr, ty, constants, line_no):
    if attr is None:
        if ty != "NoneType":
            _fail(f"graph.txt line {line_no}: a constant of type {ty} has no value")
        return None, {}
    key, _, raw = attr.partition("=")
    if key == "tensor":
        name = json.loads(raw)
        if name not in constants:
            _fail(f"graph.txt line {line_no}: tensor constant '{name}' is not in tensors.pt")
        t = constants[name]
        if not _ir.is_tensor_type(ty):
            _fail(f"graph.txt line {line_no}: tensor constant '{name}' declared as {ty}")
        return t, {"tensor": name}
    if key != "value":
        _fail(f"graph.txt line {line_no}: unknown constant attribute '{key}'")
    try:
        if ty == "int":
            return int(raw), {}
        if ty == "float":
            return float(raw), {}
        if ty == "complex":
            return complex(raw), {}
        if ty == "bool":
            if raw not in ("0", "1"):
                raise ValueError(raw)
            return raw == "1", {}
        value = json.loads(raw)
        if not isinstance(value, str):
            raise ValueError(raw)
    except ValueError:
        _fail(f"graph.txt line {line_no}: '{raw}' is not a constant of type {ty}")
    if ty == "str":
        return value, {}
    if ty == "ScalarType":
        dtypes = _dtype_names()
        if value not in dtypes:
            _fail(f"graph.txt line {line_no}: unknown dtype '{value}'")
        return dtypes[value], {}
    if ty == "Device":
        if not re.fullmatch(r"(cpu|cuda|meta)(:\d+)?", value):
            _fail(f"graph.txt line {line_no}: unknown device '{value}'")
        return value, {}
    if ty in ("Layout", "MemoryFormat"):
        allowed = _LAYOUTS if ty == "Layout" else _MEMORY_FORMATS
        if value not in allowed:
            _fail(f"graph.txt line {line_no}: unknown {ty.lower()} '{value}'")
        return (value if ty == "Layout" else getattr(_C, value)), {}
    _fail(f"graph.txt line {line_no}: a constant cannot have type {ty}")


def _split_call(rest, line_no):
    """'[attr](%a, %b)' -> (attr or None, ['a', 'b'])."""
    attr = None
    if rest.startswith("["):
        depth, quote, end = 0, False, None
        for i, ch in enumerate(rest):
            if ch == '"' and (i == 0 or rest[i - 1] != "\\"):
                quote = not quote
            elif not quote and ch == "[":
                depth += 1
            elif not quote and ch == "]":
                depth -= 1
                if depth == 0:
                    end = i
                    break
        if end is None:
            _fail(f"graph.txt line {line_no}: unterminated attribute")
        attr, rest = rest[1:end], rest[end + 1:]
    if not (rest.startswith("(") and rest.endswith(")")):
        _fail(f"graph.txt line {line_no}: cannot parse the arguments '{rest}'")
    inner = rest[1:-1].strip()
    args = [a.strip() for a in inner.split(",")] if inner else []
    for a in args:
        if not re.fullmatch(r"%[A-Za-z0-9_.]+", a):
            _fail(f"graph.txt line {line_no}: '{a}' is not a value")
    return attr, [a[1:] for a in args]


def _check_op(node, line_no):
    s = _ir.schema(node.kind, node.overload)
    if s is None:
        _fail(f"graph.txt line {line_no}: unknown operator '{node.qualified_kind}'")
    if len(node.inputs) != len(s.args):
        _fail(f"graph.txt line {line_no}: {node.qualified_kind} takes {len(s.args)} "
              f"arguments, the graph passes {len(node.inputs)}")
    for (name, ty, _), v in zip(s.args, node.inputs):
        if not _ir.arg_accepts(ty, v.type):
            _fail(f"graph.txt line {line_no}: argument '{name}' of {node.qualified_kind} "
                  f"expects {ty}, got a value of type {v.type}")
    if len(node.outputs) != len(s.returns):
        _fail(f"graph.txt line {line_no}: {node.qualified_kind} returns {len(s.returns)} "
              f"values, the graph declares {len(node.outputs)}")
    for r, o in zip(s.returns, node.outputs):
        if r == "Tensor" and not _ir.is_tensor_type(o.type):
            _fail(f"graph.txt line {line_no}: {node.qualified_kind} returns a Tensor, the "
                  f"graph declares {o.type}")


def _check_prim(node, line_no):
    if node.kind == "prim::GetAttr":
        if not _ATTR.fullmatch(node.attrs.get("name", "")) or len(node.inputs) != 1:
            _fail(f"graph.txt line {line_no}: prim::GetAttr needs a name and one input")
    elif node.kind == "prim::ListConstruct":
        ty = node.outputs[0].type
        elem = {"int[]": ("int", "bool"), "float[]": ("float", "int"),
                "bool[]": ("bool",)}.get(ty, (ty[:-2],) if ty.endswith("[]") and
                                         ty not in ("Tensor[]", "Tensor?[]") else None)
        for v in node.inputs:
            ok = (v.type in elem) if elem is not None else (
                _ir.is_tensor_type(v.type) or (ty == "Tensor?[]" and v.type == "NoneType"))
            if not ok:
                _fail(f"graph.txt line {line_no}: a {ty} cannot hold a {v.type}")
    elif node.kind == "prim::ListUnpack":
        if len(node.inputs) != 1 or node.inputs[0].type != "Tensor[]" or \
                not all(_ir.is_tensor_type(o.type) for o in node.outputs):
            _fail(f"graph.txt line {line_no}: prim::ListUnpack takes a Tensor[] and returns "
                  "tensors")
    elif node.kind == "prim::TupleUnpack":
        ty = node.inputs[0].type if len(node.inputs) == 1 else ""
        if not _ir.is_tuple_type(ty) or _ir.split_top(ty[1:-1]) != [o.type for o in node.outputs]:
            _fail(f"graph.txt line {line_no}: prim::TupleUnpack must return the items of its "
                  "tuple")
    elif node.kind == "prim::TupleIndex":
        ok = len(node.inputs) == 2 and _ir.is_tuple_type(node.inputs[0].type) and \
            node.inputs[1].type == "int" and len(node.outputs) == 1
        if not ok:
            _fail(f"graph.txt line {line_no}: prim::TupleIndex takes a tuple and an int")
    elif node.kind == "prim::unchecked_cast":
        if len(node.inputs) != 1 or len(node.outputs) != 1 or \
                not _fits(node.inputs[0].type, node.outputs[0].type):
            _fail(f"graph.txt line {line_no}: prim::unchecked_cast refines an Optional value")
    elif node.kind in ("prim::If", "prim::Loop"):
        pass
    elif node.kind == "prim::DictConstruct":
        ty = node.outputs[0].type if len(node.outputs) == 1 else ""
        key, value = _ir.dict_types(ty) if _ir.is_dict_type(ty) else ("", "")
        ok = key in ("str", "int") and len(node.inputs) % 2 == 0 and \
            all(k.type == key for k in node.inputs[::2]) and \
            all(_fits(value, v.type) for v in node.inputs[1::2])
        if not ok:
            _fail(f"graph.txt line {line_no}: prim::DictConstruct takes keys and values of "
                  f"its dict type, got {ty or 'no dict'}")
    elif node.kind == "prim::Uninitialized":
        if node.inputs or len(node.outputs) != 1:
            _fail(f"graph.txt line {line_no}: prim::Uninitialized takes no inputs and returns "
                  "one value")
    elif node.kind == "prim::TupleConstruct":
        want = "(" + ", ".join(v.type for v in node.inputs) + ")"
        if node.outputs[0].type != want:
            _fail(f"graph.txt line {line_no}: the tuple's type {node.outputs[0].type} does not "
                  f"match its items {want}")


def parse_graph(text, constants):
    """The Graph of graph.txt, checked as Note [Graph file format] says."""
    lines = text.split("\n")
    header = []
    i = 0
    while i < len(lines):
        header.append(lines[i])
        i += 1
        if lines[i - 1].endswith("):"):
            break
    head = " ".join(h.strip() for h in header)
    if not head.startswith("graph(") or not head.endswith("):"):
        _fail("graph.txt line 1: expected 'graph(...):'")
    graph = _ir.Graph()
    graph.constants = dict(constants)
    values = {}
    for decl in _ir.split_top(head[len("graph("):-2]):
        name, ty = _split_decl(decl, 1)
        values[name] = graph.add_input(ty, name)
    body = [(n, lines[n - 1].strip()) for n in range(i + 1, len(lines) + 1)
            if lines[n - 1].strip()]
    reader = _Reader(body, constants, set(values))
    graph.nodes = reader.nodes(values)
    line_no, line = reader.peek()
    if line is None or not line.startswith("return ("):
        _fail("graph.txt: the graph must end with 'return (%value)'")
    names = _split_call(line[len("return "):], line_no)[1]
    graph.outputs = [_lookup(values, n, line_no) for n in names]
    reader.pos += 1
    if reader.peek()[1] is not None:
        _fail(f"graph.txt line {reader.peek()[0]}: text after the return")
    if len(graph.outputs) != 1:
        _fail("graph.txt: the graph must end with 'return (%value)'")
    return graph


class _Reader:
    """Reads the node lines of graph.txt; a prim::If or prim::Loop line is followed by its
    blocks, each `blockK(%inputs):`, its nodes and `-> (%outputs)`."""

    def __init__(self, lines, constants, defined):
        self.lines = lines
        self.pos = 0
        self.constants = constants
        self.defined = defined    # every name defined so far, in any block

    def peek(self):
        return self.lines[self.pos] if self.pos < len(self.lines) else (None, None)

    def nodes(self, values):
        """Nodes up to a `return` or `->` line (not read); values gains their outputs."""
        out = []
        while True:
            line_no, line = self.peek()
            if line is None or line.startswith("return (") or line.startswith("-> ("):
                return out
            self.pos += 1
            node = self.node(line_no, line, values)
            for b in range(_BLOCK_COUNT.get(node.kind, 0)):
                node.blocks.append(self.block(b, values))
            if node.blocks:
                _check_blocks(node, line_no)
            for o in node.outputs:
                values[o.name] = o
            out.append(node)

    def block(self, k, values):
        line_no, line = self.peek()
        m = re.match(rf"^block{k}\((.*)\):$", line or "")
        if m is None:
            _fail(f"graph.txt line {line_no}: expected 'block{k}(...):'")
        self.pos += 1
        inner = dict(values)
        params = []
        for decl in _ir.split_top(m.group(1)):
            name, ty = _split_decl(decl, line_no)
            self.define(name, line_no)
            params.append(_ir.Value(ty, name))
            inner[name] = params[-1]
        body = self.nodes(inner)
        line_no, line = self.peek()
        if line is None or not line.startswith("-> ("):
            _fail(f"graph.txt line {line_no}: expected '-> (...)' to end block{k}")
        self.pos += 1
        outs = [_lookup(inner, n, line_no) for n in _split_call(line[3:], line_no)[1]]
        return _ir.Block(params, body, outs)

    def define(self, name, line_no):
        if name in self.defined:
            _fail(f"graph.txt line {line_no}: value %{name} is defined twice")
        self.defined.add(name)

    def node(self, line_no, line, values):
        m = _NODE.match(" " + line if line.startswith("= ") else line)
        if m is None:
            _fail(f"graph.txt line {line_no}: cannot parse '{line}'")
        outs = [_split_decl(d, line_no) for d in _ir.split_top(m.group(1))]
        qualified = m.group(2)
        attr, args = _split_call(m.group(3), line_no)
        kind, _, overload = qualified.partition(".")
        inputs = [_lookup(values, a, line_no) for a in args]
        attrs = {}
        if kind == "prim::Constant":
            if inputs or len(outs) != 1:
                _fail(f"graph.txt line {line_no}: a constant has no inputs and one output")
            value, extra = _constant_value(attr, outs[0][1], self.constants, line_no)
            attrs = {"value": value, **extra}
        elif kind == "prim::GetAttr":
            if attr is None or not attr.startswith("name="):
                _fail(f"graph.txt line {line_no}: prim::GetAttr needs [name=...]")
            attrs = {"name": json.loads(attr[len("name="):])}
        elif attr is not None:
            _fail(f"graph.txt line {line_no}: {kind} takes no attributes")
        elif kind.startswith("prim::") and kind not in _PRIM_KINDS and \
                _ir.schema(kind, overload) is None:
            _fail(f"graph.txt line {line_no}: unknown operator '{qualified}'")
        node = _ir.Node(kind, inputs, [_ir.Value(ty, name) for name, ty in outs], overload,
                        attrs)
        if kind in _PRIM_KINDS:
            _check_prim(node, line_no)
        else:
            _check_op(node, line_no)
        for name, _ in outs:
            self.define(name, line_no)
        return node


def _check_blocks(node, line_no):
    """The inputs, outputs and types of a prim::If or prim::Loop and of its blocks agree
    (Note [Blocks])."""
    types = [o.type for o in node.outputs]
    if node.kind == "prim::If":
        if [v.type for v in node.inputs] != ["bool"]:
            _fail(f"graph.txt line {line_no}: prim::If takes one bool")
        for k, b in enumerate(node.blocks):
            if b.inputs or len(b.outputs) != len(types) or \
                    any(not _fits(t, v.type) for t, v in zip(types, b.outputs)):
                _fail(f"graph.txt line {line_no}: block{k} of prim::If must take no inputs "
                      f"and return ({', '.join(types)})")
        return
    carried = [v.type for v in node.inputs[2:]]
    b = node.blocks[0]
    if [v.type for v in node.inputs[:2]] != ["int", "bool"] or types != carried:
        _fail(f"graph.txt line {line_no}: prim::Loop takes an int trip count, a bool and the "
              "carried values, and returns the carried values")
    if [v.type for v in b.inputs] != ["int"] + carried or len(b.outputs) != len(types) + 1 \
            or b.outputs[0].type != "bool" or \
            any(not _fits(t, v.type) for t, v in zip(types, b.outputs[1:])):
        _fail(f"graph.txt line {line_no}: block0 of prim::Loop must take (int, "
              f"{', '.join(carried)}) and return (bool, {', '.join(carried)})")


def _fits(declared, ty):
    """Whether a value of type ty may flow where declared is (None and T into T?)."""
    if declared == ty:
        return True
    return declared.endswith("?") and ty in (declared[:-1], "NoneType")


def _lookup(values, name, line_no):
    v = values.get(name)
    if v is None:
        _fail(f"graph.txt line {line_no}: value %{name} is used before it is defined")
    return v
