"""The debug build (PTL_DEBUG=1: -O0) compiles the sources whose vector intrinsics need an
8-bit immediate: at -O0 gcc's headers make those intrinsics macros, so a selector computed from
a loop variable, which the release build's unrolled loop folds to a literal, is an error there
(random_fill.c's 53-bit uniforms did so until the sanitized build with -fno-wrapv, which keeps
that loop too, stopped on it).  The sanitized build (PTL_SANITIZE=address,undefined: -O1)
compiles without warnings the sources where gcc's lighter flow analysis at -O1 saw a variable
it could not prove set (igamma_density.c's Gamma constants vector, set by one of two branches
of which one always runs, warned -Wmaybe-uninitialized there).  Each file compiles alone with
its build's flags, a few seconds to ten."""
import os
import subprocess
import sys

import pytest

from helpers import ROOT

sys.path.insert(0, os.path.join(ROOT, "tools"))
import build_backend  # noqa: E402

IMMEDIATE_SOURCES = ["src/aten/native/random_fill.c"]
FLOW_SOURCES = ["src/aten/native/igamma_density.c"]
# (the build's switch, its value, the optimisation it brings, the other switch, a source)
CASES = ([("PTL_DEBUG", "1", "-O0", "PTL_SANITIZE", s) for s in IMMEDIATE_SOURCES] +
         [("PTL_SANITIZE", "address,undefined", "-O1", "PTL_DEBUG", s) for s in FLOW_SOURCES])


@pytest.mark.parametrize("switch,value,opt,other,source", CASES)
def test_source_compiles_without_warnings_at_its_build_flags(switch, value, opt, other, source,
                                                             tmp_path, monkeypatch):
    monkeypatch.setenv(switch, value)
    monkeypatch.delenv(other, raising=False)
    cfg = build_backend.Config()
    assert opt in cfg.cflags
    cmd = cfg.compile_cmd + ["-c", source, "-o", str(tmp_path / "flavour.o")] + cfg.cflags
    run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    assert " warning:" not in run.stderr, run.stderr[-2000:]
