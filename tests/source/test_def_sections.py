"""ops.def and derivatives.def group their rows by the native/ file that registers the op's
CPU kernel (or its composite), each group headed `/* ---- <file> ---- */`, and the formulas
of a derivatives.def group live in src/autograd/derivatives/<file>.  This checks every row
against the dispatcher's own record of where each kernel was registered, so that when a
kernel moves to another file its rows and formulas have to move with it."""
import collections
import os
import re

from helpers import ROOT
from pytorchlite import _C

OPS_DEF = os.path.join(ROOT, "src", "aten", "ops.def")
DERIVATIVES_DEF = os.path.join(ROOT, "src", "autograd", "derivatives.def")
FORMULA_DIR = os.path.join(ROOT, "src", "autograd", "derivatives")
SECTION = re.compile(r"/\* ---- (\w+\.c) ---- \*/")
# ops.def: PTL_OP(ID, "SCHEMA", FLAGS); derivatives.def: PTL_GRAD(OP, NAME, SAVES, FN) and
# PTL_NONDIFF(OP, ARGS, NAME_FN), a row possibly wrapped over several lines
ROW = re.compile(r'(PTL_OP|PTL_GRAD|PTL_NONDIFF)\(\s*(\w+),\s*("(?:[^"\\]|\\.)*"|\w+)'
                 r'(?:,\s*"[^"]*",\s*(\w+)\))?')


def rows(path):
    """(line, section, macro, op id, second field, backward fn or None) for every row"""
    text = open(path).read()
    marks = [(m.start(), m.group(1)) for m in SECTION.finditer(text)]
    code = re.sub(r"/\*.*?\*/", lambda c: re.sub(r"[^\n]", " ", c.group(0)), text, flags=re.S)
    out = []
    for m in ROW.finditer(code):
        heads = [name for pos, name in marks if pos < m.start()]
        out.append((text.count("\n", 0, m.start()) + 1, heads[-1] if heads else None,
                    m.group(1), m.group(2), m.group(3), m.group(4)))
    return out


def schema_names():
    """op id -> "aten::name.overload" (or the schema's own namespace)"""
    names = {}
    for _, _, _, op, schema, _ in rows(OPS_DEF):
        name = schema.strip('"').split("(")[0]
        names[op] = name if "::" in name else "aten::" + name
    return names


def kernel_file(name):
    """the native/ file that registered name's CPU kernel, else its composite, else its
    SparseCPU kernel (ops only sparse tensors have); None if none"""
    dump = _C._dispatch_dump(name)
    for key in ("CPU", "CompositeImplicitAutograd", "SparseCPU"):
        m = re.search(r"^%s: kernel registered at (\S+)" % key, dump, re.M)
        if m:
            return m.group(1)
    return None


def test_every_row_sits_in_its_kernel_files_section():
    names = schema_names()
    wrong = []
    for path in (OPS_DEF, DERIVATIVES_DEF):
        found = rows(path)
        starts = re.findall(r"^PTL_(?:OP|GRAD|NONDIFF)\(", open(path).read(), re.M)
        assert len(found) == len(starts), path
        for line, section, _, op, _, _ in found:
            home = kernel_file(names[op])
            if home != section:
                wrong.append("%s:%d %s sits under %s, its kernel is registered in %s"
                             % (os.path.basename(path), line, op, section, home))
    assert not wrong, "\n".join(wrong)


def test_every_section_names_a_native_file():
    native = set(os.listdir(os.path.join(ROOT, "src", "aten", "native")))
    for path in (OPS_DEF, DERIVATIVES_DEF):
        for m in SECTION.finditer(open(path).read()):
            assert m.group(1) in native, (os.path.basename(path), m.group(1))


def formula_files():
    """backward fn -> the derivatives/ file defining it (as `int\\nfn(` or MACRO(fn, ...))"""
    where = {}
    for f in sorted(os.listdir(FORMULA_DIR)):
        text = open(os.path.join(FORMULA_DIR, f)).read()
        for m in re.finditer(r"^int\n(\w+)\(|^[A-Z_]+\((\w+),", text, re.M):
            where[m.group(1) or m.group(2)] = f
    return where


def test_formulas_live_in_their_sections_file():
    where = formula_files()
    sections = collections.defaultdict(set)
    for _, section, macro, _, _, fn in rows(DERIVATIVES_DEF):
        if macro == "PTL_GRAD":
            sections[fn].add(section)
    assert len(sections) > 100
    wrong = ["%s is defined in derivatives/%s, its rows sit under %s"
             % (fn, where.get(fn), ", ".join(sorted(secs)))
             for fn, secs in sorted(sections.items()) if where.get(fn) not in secs]
    assert not wrong, "\n".join(wrong)
