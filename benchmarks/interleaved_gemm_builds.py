"""The float32 products of the one-thread training steps (interleaved_gemm_shapes.py's SHAPES)
on two builds of pytorchlite in one process: this tree's and another built tree's, imported
under the package name ptl_base from a renamed copy.  GFLOP/s of each and the speed-up (base
time / this tree's, > 1: this tree is faster).

    taskset -c 1 python benchmarks/interleaved_gemm_builds.py /path/to/other/worktree
    ... --only wgrad --rounds 40

The builds alternate call block by call block and each one's fastest block of thread CPU
time counts, so a GEMM change of a few percent can be told from a loaded machine's noise
(separate processes, one build each, differed by +-5% run to run at load 10-18 on this
2-core host).  The copy renames the package in its Python files only: the C extension's own
strings still say pytorchlite, which products do not look at.  Needs no PyTorch."""
import argparse
import importlib
import os
import re
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _interleave import best_block  # noqa: E402
from interleaved_gemm_shapes import SHAPES, describe, operands  # noqa: E402

import pytorchlite  # noqa: E402

BASE_NAME = "ptl_base"


def import_base(tree, into):
    """The package pytorchlite of the built tree `tree`, copied into directory `into` as
    BASE_NAME (every whole word pytorchlite in its .py files renamed) and imported."""
    dst = os.path.join(into, BASE_NAME)
    shutil.copytree(os.path.join(tree, "pytorchlite"), dst,
                    ignore=shutil.ignore_patterns("__pycache__"))
    word = re.compile(r"\bpytorchlite\b")
    for dirpath, _, files in os.walk(dst):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                with open(path, encoding="utf-8") as fh:
                    text = fh.read()
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(word.sub(BASE_NAME, text))
    sys.path.insert(0, into)
    return importlib.import_module(BASE_NAME)


def measure(base, shape, rounds):
    """(base's, this tree's) fastest seconds per call of the product `shape`."""
    group, m, k, n, at, lda, bt, bias = shape
    fns = [operands(lib, m, k, n, at, lda, bt, bias, 0) for lib in (base, pytorchlite)]
    calls = max(1, int(2e7 / (m * n * k)))
    best = [float("inf"), float("inf")]
    for fn in fns:
        best_block(fn, calls)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            best[i] = min(best[i], best_block(fn, calls, time.thread_time))
    return best


def builds_parser(doc, rounds):
    """The arguments of a two-build script (doc: its docstring): the other built tree, and
    how many rounds."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("base", help="a built tree (its pytorchlite/ holds the _C extension)")
    ap.add_argument("--rounds", type=int, default=rounds)
    return ap


def run_with_base(doc, rounds, option, table, argv=None):
    """A two-build script's run: its command line (builds_parser's and option, a (flag,
    default, help) triple) parsed from argv, then table(args, base) with the other tree
    imported as BASE_NAME for the call."""
    ap = builds_parser(doc, rounds)
    flag, default, text = option
    ap.add_argument(flag, default=default, help=text)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        table(args, import_base(os.path.abspath(args.base), tmp))


def main(argv=None):
    ap = builds_parser(__doc__, 30)
    ap.add_argument("--only", default="", help="the rows whose group contains this")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        base = import_base(os.path.abspath(args.base), tmp)
        base.set_num_threads(1)
        pytorchlite.set_num_threads(1)
        print(f"one thread, rounds {args.rounds}; GFLOP/s base, this tree; speed-up")
        for shape in SHAPES:
            if args.only not in shape[0]:
                continue
            t_base, t_new = measure(base, shape, args.rounds)
            flops = 2.0 * shape[1] * shape[2] * shape[3]
            print(f"{describe(shape)}  {flops / t_base / 1e9:6.1f} {flops / t_new / 1e9:6.1f}  "
                  f"{t_base / t_new:5.3f}", flush=True)


if __name__ == "__main__":
    main()
