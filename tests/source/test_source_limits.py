"""Sizes a reader can hold: no C source file under src/ over 1,500 lines and no C function
body over 150 lines.  A file that grows past the limit splits by concept into well-named
files; a function splits along the steps its own Note lists."""
import os
import re

import pytest

from helpers import ROOT

SRC = os.path.join(ROOT, "src")
MAX_FILE_LINES = 1500
MAX_FUNCTION_LINES = 150
def sources():
    for dirpath, dirs, files in os.walk(SRC):
        dirs.sort()
        for f in sorted(files):
            if f.endswith((".c", ".h", ".cu")):
                yield os.path.join(dirpath, f)


def code_only(text):
    """text with comments, string and character literals and preprocessor lines blanked
    out; newlines are kept, so offsets map to the same line numbers."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and text[i:].lstrip(" \t").startswith("#"):
            # a directive, with its backslash continuations (macro bodies are not functions)
            while i < n:
                j = text.find("\n", i)
                j = n if j < 0 else j
                continued = text[i:j].rstrip().endswith("\\")
                out.append(" " * (j - i))
                if j < n:
                    out.append("\n")
                i = j + 1
                if not continued:
                    break
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            line_start = False
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (min(j, n - 1) + 1 - i))
            i = j + 1
            line_start = False
            continue
        out.append(c)
        line_start = c == "\n" or (line_start and c in " \t")
        i += 1
    return "".join(out)


def definition_name(header):
    """The name a function definition header declares, and its offset in header, or None:
    the identifier before the last parenthesised group, which must end the header."""
    h = header.rstrip()
    if h.endswith("const"):
        h = h[:-5].rstrip()
    if not h.endswith(")"):
        return None
    depth, i = 0, len(h) - 1
    while i >= 0:
        depth += {")": 1, "(": -1}.get(h[i], 0)
        if depth == 0:
            break
        i -= 1
    m = re.search(r"(\w+)\s*$", h[:i])
    if m is None or "=" in h[i:] or m.group(1) in ("if", "while", "for", "switch"):
        return None
    return m.group(1), m.start(1)


def functions(text):
    """(name, line, body lines) of every function definition at file scope: a `{` at brace
    depth 0 after a parenthesised parameter list, matched to its closing brace.  `extern "C"`
    blocks are transparent."""
    code = code_only(text)
    depth, header_start = 0, 0
    i, n = 0, len(code)
    while i < n:
        c = code[i]
        if c == "{" and depth == 0:
            header = re.sub(r"__attribute__\s*\(\(.*?\)\)", lambda a: " " * len(a.group()),
                            code[header_start:i], flags=re.S)
            found = definition_name(header)
            if found:
                start = i
                depth = 1
                i += 1
                while i < n and depth:
                    depth += {"{": 1, "}": -1}.get(code[i], 0)
                    i += 1
                first = code.count("\n", 0, start) + 1
                last = code.count("\n", 0, i - 1) + 1
                yield found[0], code.count("\n", 0, header_start + found[1]) + 1, \
                    last - first + 1
                header_start = i
                continue
            if re.search(r"extern\s*$", header):
                header_start = i + 1
                i += 1
                continue
            depth = 1
        elif c == "{":
            depth += 1
        elif c == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                header_start = i + 1
        elif c in ";}" and depth == 0:
            header_start = i + 1
        i += 1


def test_function_scanner_finds_definitions():
    text = ("/* f(x) { */\n#define M(x) { x }\nstatic int\nf(int a)\n{\n"
            "    if (a) {\n        return '}';\n    }\n    return 0;\n}\n"
            "static const int t[] = {1, 2};\nint g(void);\nDEFINE_X(a, b)\n"
            "__attribute__((target(\"avx2\"))) static void\nh(void)\n{\n}\n")
    assert list(functions(text)) == [("f", 4, 6), ("h", 15, 2)]


@pytest.mark.parametrize("path", list(sources()), ids=lambda p: os.path.relpath(p, SRC))
def test_source_file_and_function_sizes(path):
    text = open(path, encoding="utf-8").read()
    rel = os.path.relpath(path, SRC)
    bad = []
    nlines = text.count("\n")
    if nlines > MAX_FILE_LINES:
        bad.append(f"src/{rel} has {nlines} lines (limit {MAX_FILE_LINES})")
    for name, line, body in functions(text):
        if body > MAX_FUNCTION_LINES:
            bad.append(f"src/{rel}:{line}: {name} has a {body}-line body "
                       f"(limit {MAX_FUNCTION_LINES})")
    assert not bad, "\n".join(bad)
