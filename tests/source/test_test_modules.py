"""The test tree has no packages (no __init__.py), so pytest imports each test module under
its file name alone: two test files of one name in different folders stop the collection of
the whole suite ("import file mismatch").  Each name is used once."""
import collections
import os

from helpers import ROOT


def test_test_module_names_are_unique():
    seen = collections.defaultdict(list)
    for top in ("tests", "benchmarks"):
        for dirpath, dirs, files in os.walk(os.path.join(ROOT, top)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for f in files:
                if f.startswith("test_") and f.endswith(".py"):
                    seen[f].append(os.path.relpath(os.path.join(dirpath, f), ROOT))
    assert {f: paths for f, paths in seen.items() if len(paths) > 1} == {}
