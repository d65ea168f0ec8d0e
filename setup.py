"""`python setup.py build_ext --inplace [-j N] [--force]`: builds pytorchlite._C in this
checkout with tools/build_backend.py, the same build `pip install -e .` runs (see that file
for the switches: PTL_CUDA, PTL_DEBUG, PTL_SANITIZE, CC).  There is no setuptools here: pip
installs through the backend that pyproject.toml names."""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tools"))
import build_backend  # noqa: E402

parser = argparse.ArgumentParser(prog="setup.py", description=__doc__.split("\n\n")[0])
parser.add_argument("command", choices=["build_ext"])
parser.add_argument("--inplace", "-i", action="store_true",
                    help="accepted for setuptools' spelling; the build is always in place")
parser.add_argument("-j", "--parallel", type=int, default=None,
                    help="compile jobs at once (default: every core)")
parser.add_argument("--force", "-f", action="store_true", help="rebuild every object")
args = parser.parse_args()
build_backend.build(jobs=args.parallel, force=args.force)
