#!/usr/bin/env bash
# Runs a command against an AddressSanitizer + UBSan build of pytorchlite:
#
#     tools/fuzz/run_sanitized.sh DIR COMMAND...
#
# copies this source tree into DIR (sources only: no .git, build/ or built extension; a later
# run updates the copy and reuses DIR/build), builds it CPU-only with
# PTL_SANITIZE=address,undefined, and runs COMMAND in DIR with libasan preloaded (Python itself
# is not instrumented; libstdc++ beside it, below), leak detection off (Python leaks at exit by
# design), a huge allocation a MemoryError as in a release build (allocator_may_return_null)
# and UBSan halting on the first report.  Under pytest pass --capture=sys, so that a report is
# not lost with the captured file descriptors when the process aborts.  The sanitized build
# bypasses the allocator's caches (Note [Allocator cache bypass] in src/c10/allocator.c), so
# every tensor's bytes are their own ASan region.
set -euo pipefail
if [ $# -lt 2 ]; then
    echo "usage: $0 DIR COMMAND..." >&2
    exit 2
fi
src="$(cd "$(dirname "$0")/../.." && pwd)"
dir="$1"
shift
mkdir -p "$dir"
tar -C "$src" --exclude=./.git --exclude=./build --exclude='*.so' --exclude=__pycache__ \
    -cf - . | tar -C "$dir" -xf -
cd "$dir"
PTL_CUDA=0 PTL_SANITIZE=address,undefined python setup.py build_ext --inplace >build.log 2>&1 ||
    { tail -50 build.log >&2; exit 1; }

# libstdc++ is preloaded beside libasan: Python does not link it, so when libasan starts it finds
# no __cxa_throw to intercept, and the first C++ exception thrown in the process (scipy.special's
# boost policies throw and catch one for erfinv(2.0)) stops it on "CHECK failed:
# real___cxa_throw != 0", with no pytorchlite code on the stack
export LD_PRELOAD
LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libstdc++.so)"
export ASAN_OPTIONS="detect_leaks=0:allocator_may_return_null=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export PYTHONPATH="$dir${PYTHONPATH:+:$PYTHONPATH}"
python -c "import pytorchlite; assert pytorchlite._C._config()['sanitize'], pytorchlite.__file__"
"$@"
