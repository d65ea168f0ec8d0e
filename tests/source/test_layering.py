"""Layering is law (ARCHITECTURE.md): a lower layer never includes a higher one, only
src/python includes Python.h, and there is no C++ outside .cu files."""
import os
import re

import helpers

ROOT = os.path.join(helpers.ROOT, "src")
ORDER = ["c10", "aten", "autograd", "jit", "cuda", "python"]
# what each layer may include (besides itself)
ALLOWED = {
    "c10": set(),
    "aten": {"c10"},
    "autograd": {"c10", "aten"},
    "jit": {"c10", "aten", "autograd"},
    "cuda": {"c10", "aten"},
    "python": {"c10", "aten", "autograd", "jit", "cuda"},
}


def sources():
    for dirpath, _, files in os.walk(ROOT):
        for f in files:
            if f.endswith((".c", ".h", ".cu", ".def")):
                path = os.path.join(dirpath, f)
                layer = os.path.relpath(path, ROOT).split(os.sep)[0]
                yield layer, path


def test_layers_only_include_lower_layers():
    bad = []
    for layer, path in sources():
        text = open(path, encoding="utf-8").read()
        for inc in re.findall(r'#include\s+"([^"]+)"', text):
            target = os.path.normpath(os.path.join(os.path.dirname(path), inc))
            rel = os.path.relpath(target, ROOT).split(os.sep)[0]
            if rel != layer and rel not in ALLOWED[layer]:
                bad.append(f"{os.path.relpath(path, ROOT)} includes {inc} ({layer} -> {rel})")
    assert not bad, "\n".join(bad)


def test_only_python_layer_touches_python():
    bad = [os.path.relpath(p, ROOT) for layer, p in sources()
           if layer != "python" and re.search(r"#include\s*[<\"]Python\.h", open(p).read())]
    assert not bad, bad


def test_no_cpp_outside_cu_files():
    bad = []
    for layer, path in sources():
        if path.endswith(".cu"):
            continue
        text = open(path).read()
        code = re.sub(r"#ifdef __cplusplus.*?#endif", "", text, flags=re.S)
        code = re.sub(r"/\*.*?\*/|//[^\n]*|\"(\\.|[^\"\\])*\"", "", code, flags=re.S)
        if re.search(r"\b(template\s*<|namespace\s+\w+|std::|class\s+\w+\s*[:{])", code):
            bad.append(os.path.relpath(path, ROOT))
    assert not bad, bad


def test_no_march_native_in_build():
    build = open(os.path.join(os.path.dirname(ROOT), "tools", "build_backend.py")).read()
    assert "-march=native" not in build
