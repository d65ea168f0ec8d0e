#!/usr/bin/env bash
# gpu_check.sh -- the GPU check in one command (issue 15 part 7): on a machine with a CUDA
# GPU and nvcc, builds the CUDA flavour, runs tests/cuda, the CUDA build checks, the GPU
# benchmarks and the CPU suite's tests that mention CUDA, and prints one table (step,
# result, seconds).  Exits non-zero when a step fails.  Budget: about 8 minutes on an H200
# (each step has its own timeout).
#
#   tools/gpu_check.sh              # from the repository root
#   PYTHON=/path/to/python tools/gpu_check.sh
#   PYTHON=python3 GPU_CHECK_LOGS=$OUT tools/gpu_check.sh   # the lent H200 (its Python 3.12
#                                   # holds torch, pytest-xdist and pytest-timeout)
#
# The CUDA tests run under pytest-xdist when it is installed (one worker per two cores, at
# most 8), each test under pytest-timeout's thread method when that is installed, so a test
# that faults or hangs loses its worker, not the run.  GPU_CHECK_LOGS=DIR keeps the steps'
# logs there as gpu_check_logs.tar.gz, renewed after every step.
#
# Without a GPU the device step fails and the CUDA steps report "skipped" with pytest's
# reason, so the script runs (and says why it failed) on any machine; with one,
# PTL_REQUIRE_GPU=1 turns those skips into failures.
set -u
cd "$(dirname "$0")/.." || exit 2
PY=${PYTHON:-python}
LOG=$(mktemp -d "${TMPDIR:-/tmp}/gpu_check.XXXXXX")
rows=()
status=0

# step NAME TIMEOUT_S COMMAND...: runs the command, logs its output, adds a table row
step() {
    local name=$1 limit=$2
    shift 2
    local start end rc summary
    start=$(date +%s)
    timeout "$limit" "$@" >"$LOG/$name.log" 2>&1
    rc=$?
    end=$(date +%s)
    summary=$(grep -E "[0-9]+ (passed|failed|skipped|error)" "$LOG/$name.log" | tail -1 |
              sed -e 's/=//g' -e 's/^ *//' -e 's/ *$//')
    if [ "$rc" -eq 124 ]; then
        summary="TIMEOUT after ${limit}s"
    elif [ "$rc" -eq 127 ]; then
        summary="FAILED: $1 not found"
    elif [ -z "$summary" ]; then
        summary=$([ "$rc" -eq 0 ] && echo ok || echo "FAILED (exit $rc)")
    fi
    [ "$rc" -ne 0 ] && status=1
    rows+=("$(printf '%-22s | %-58s | %5ss' "$name" "${summary:0:58}" "$((end - start))")")
    save_logs
}

# the logs so far into $GPU_CHECK_LOGS, after every step: a run cut short keeps its logs
save_logs() {
    if [ -n "${GPU_CHECK_LOGS:-}" ]; then
        mkdir -p "$GPU_CHECK_LOGS" && tar -czf "$GPU_CHECK_LOGS/gpu_check_logs.tar.gz" -C "$LOG" .
    fi
}

step device 20 nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
# with a GPU present, a CUDA test that skips (no device seen) is a failure
if [ "$status" -eq 0 ]; then
    export PTL_REQUIRE_GPU=1
    gpu=$(head -1 "$LOG/device.log" | cut -c1-58)
    rows[0]="$(printf '%-22s | %-58s | %5ss' device "$gpu" 0)"
fi
PYTEST=("$PY" -m pytest -q -rfEs -p no:cacheprovider -o addopts="")
CUDA_TESTS=("${PYTEST[@]}")
if "$PY" -c "import xdist" 2>/dev/null; then
    workers=$(( $(nproc) / 2 ))
    CUDA_TESTS+=(-n "$(( workers > 8 ? 8 : (workers < 1 ? 1 : workers) ))")
fi
if "$PY" -c "import pytest_timeout" 2>/dev/null; then
    CUDA_TESTS+=(--timeout 90 --timeout-method thread)
fi
step build 420 env PTL_CUDA=1 "$PY" setup.py build_ext --inplace
step cuda-build-checks 120 "${PYTEST[@]}" tests/source/test_cuda_build.py
step tests-cuda 300 "${CUDA_TESTS[@]}" tests/cuda
step allocator-fake 120 "${PYTEST[@]}" tests/c10/test_caching_allocator.py \
    tests/c10/test_host_allocator.py
step benchmarks-cuda 240 "${PYTEST[@]}" benchmarks/test_bench_cuda.py --benchmark-enable \
    --benchmark-min-time=0.05 --benchmark-max-time=0.25

step profile-steps 90 env CUDA_LAUNCH_BLOCKING=1 "$PY" benchmarks/profile_training_steps.py \
    --device cuda gpt resnet
# the CPU suite's files that mention CUDA, now with a device present (is_available() is True
# there: what those tests assume without one must hold with one too)
mapfile -t aware < <(grep -rl cuda tests --include='test_*.py' | grep -v '^tests/cuda/' | sort)
step tests-cuda-aware 180 "${CUDA_TESTS[@]}" "${aware[@]}"

printf '%s\n' "$(printf '%.0s-' {1..92})"
printf '%-22s | %-58s | %6s\n' step result time
printf '%s\n' "$(printf '%.0s-' {1..92})"
printf '%s\n' "${rows[@]}"
printf '%s\n' "$(printf '%.0s-' {1..92})"
grep -E " pytorchlite +[0-9.]+ us" "$LOG/benchmarks-cuda.log" || true
cat "$LOG/profile-steps.log"
echo "logs: $LOG"
exit $status
