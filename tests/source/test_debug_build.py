"""The debug build (PTL_DEBUG=1: -O0) compiles the sources whose vector intrinsics need an
8-bit immediate: at -O0 gcc's headers make those intrinsics macros, so a selector computed from
a loop variable, which the release build's unrolled loop folds to a literal, is an error there
(random_fill.c's 53-bit uniforms did so until the sanitized build with -fno-wrapv, which keeps
that loop too, stopped on it).  Each file compiles alone with the debug flags, a few seconds."""
import os
import subprocess
import sys

import pytest

from helpers import ROOT

sys.path.insert(0, os.path.join(ROOT, "tools"))
import build_backend  # noqa: E402

IMMEDIATE_SOURCES = ["src/aten/native/random_fill.c"]


@pytest.mark.parametrize("source", IMMEDIATE_SOURCES)
def test_source_compiles_at_debug_build_flags(source, tmp_path, monkeypatch):
    monkeypatch.setenv("PTL_DEBUG", "1")
    monkeypatch.delenv("PTL_SANITIZE", raising=False)
    cfg = build_backend.Config()
    assert "-O0" in cfg.cflags
    cmd = cfg.compile_cmd + ["-c", source, "-o", str(tmp_path / "debug.o")] + cfg.cflags
    run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    assert " warning:" not in run.stderr, run.stderr[-2000:]
