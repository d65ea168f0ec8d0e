"""Issue 16's sweep of every benchmark file against PyTorch, one command a step:

    python tools/bench_sweep.py sweep --out /work/sweep_s39
    python tools/bench_sweep.py rerun --out /work/sweep_s39 [--below 0.97] [--passes 3]

`sweep` runs every benchmarks/test_bench_*.py but test_bench_cuda and test_bench_distributed
(or the --files given), their NumPy rows deselected (no ratio here reads them), under
`taskset -c 1` with OMP_NUM_THREADS=1, this file as a pytest plugin setting PyTorch's and
pytorchlite's threads to 1, and pytest-benchmark's min over --max-time seconds a test (at
least 5 rounds): OUT_raw.txt is pytest's output, OUT_raw.json pytest-benchmark's, OUT.txt
every group's PyTorch time / ours, slowest first.

`rerun` takes the groups of OUT_raw.json under --below and runs their tests again alone,
--passes processes one after the other.  In each the plugin replaces pytest-benchmark's
fixture: a test's call is kept, and once every test has run, each group's two calls
alternate, a block of calls of each library a round, for --rounds rounds, the fastest block
of each in thread CPU time (benchmarks/_interleave.py's way).  OUT_rerun.txt lists each
group's ratio in every pass; a group counts as slower than PyTorch only when every pass is
under 1.  Two-thread groups replay on the one thread and are not meaningful here.

Needs PyTorch 2.13 and pytest-benchmark (/work/venv-torch/bin/python on the project's host)."""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SKIP = ("test_bench_cuda.py", "test_bench_distributed.py")
CAPTURE_ENV = "BENCH_SWEEP_CAPTURE"


def bench_files():
    d = os.path.join(ROOT, "benchmarks")
    return sorted(os.path.join("benchmarks", f) for f in os.listdir(d)
                  if f.startswith("test_bench_") and f.endswith(".py") and f not in SKIP)


def runner_cmd(python, args):
    env = dict(os.environ, OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "tools"), ROOT]))
    cmd = ["taskset", "-c", "1", python, "-m", "pytest", "-p", "bench_sweep",
           "-o", "addopts=", "-q", "-p", "no:cacheprovider"] + args
    return cmd, env


def group_times(json_path):
    """{group: {impl: (min seconds, node id)}} of a pytest-benchmark JSON file."""
    with open(json_path) as f:
        data = json.load(f)
    groups = {}
    for b in data["benchmarks"]:
        impl = (b.get("params") or {}).get("impl")
        if impl is not None:
            groups.setdefault(b["group"], {})[impl] = (b["stats"]["min"], b["fullname"])
    return groups


def ratios(groups):
    """[(PyTorch's time / ours, group, our seconds)] of the groups with both rows, slowest
    first."""
    rows = [(g["torch"][0] / g["pytorchlite"][0], name, g["pytorchlite"][0])
            for name, g in groups.items() if "torch" in g and "pytorchlite" in g]
    return sorted(rows)


def sweep(args):
    raw_json = args.out + "_raw.json"
    cmd, env = runner_cmd(args.python, (args.files or bench_files()) + [
        "--benchmark-enable", "--benchmark-json", raw_json, "-k", "not numpy",
        f"--benchmark-max-time={args.max_time}"])
    t0 = time.time()
    with open(args.out + "_raw.txt", "w") as log:
        log.write(f"# {' '.join(cmd)}\n# start {time.strftime('%H:%M:%S')}, load "
                  f"{os.getloadavg()}\n")
        log.flush()
        rc = subprocess.call(cmd, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        log.write(f"# end {time.strftime('%H:%M:%S')}, load {os.getloadavg()}, rc {rc}\n")
    rows = ratios(group_times(raw_json))
    with open(args.out + ".txt", "w") as f:
        f.write(f"# {len(rows)} groups with a PyTorch row, {time.time() - t0:.0f} s; "
                "PyTorch's time / ours, pytest-benchmark's min, one thread pinned\n")
        for r, name, ours in rows:
            f.write(f"{r:6.3f}  {ours * 1e6:12.2f} us  {name}\n")
    print(f"{len(rows)} groups, {sum(r < 1 for r, _, _ in rows)} under 1: {args.out}.txt")


def rerun(args):
    groups = group_times(args.out + "_raw.json")
    slow = [name for r, name, _ in ratios(groups) if r < args.below]
    nodes = [groups[name][impl][1] for name in slow for impl in ("pytorchlite", "torch")]
    passes = []
    for p in range(args.passes):
        result = args.out + f"_rerun{p}.json"
        cmd, env = runner_cmd(args.python, ["-p", "no:benchmark"] + nodes)
        env[CAPTURE_ENV] = f"{result}:{args.rounds}"
        subprocess.call(cmd, env=env, cwd=ROOT)
        with open(result) as f:
            passes.append(json.load(f))
    with open(args.out + "_rerun.txt", "w") as f:
        f.write(f"# {len(slow)} groups under {args.below}, {args.passes} passes alone, "
                f"{args.rounds} rounds interleaved, fastest block in thread CPU time; "
                "PyTorch's time / ours (sweep, then each pass)\n")
        for name in slow:
            swept = groups[name]["torch"][0] / groups[name]["pytorchlite"][0]
            got = [ps.get(name) for ps in passes]
            mark = "SLOW" if all(r is not None and r < 1 for r in got) else "    "
            shown = "  ".join("  -  " if r is None else f"{r:5.2f}" for r in got)
            f.write(f"{mark} {swept:5.2f} | {shown}  {name}\n")
    print(open(args.out + "_rerun.txt").read())


# ---- the pytest plugin (loaded by -p bench_sweep) ----

def pytest_configure(config):
    import pytorchlite
    pytorchlite.set_num_threads(1)
    try:
        import torch
        torch.set_num_threads(1)
    except ImportError:
        pass
    if os.environ.get(CAPTURE_ENV):
        config.pluginmanager.register(_Replay(os.environ[CAPTURE_ENV]), "bench_sweep_replay")


class _Capture:
    """Stands in for pytest-benchmark's fixture: keeps the call and makes it once."""

    def __init__(self, impl):
        self.impl = impl
        self.group = None
        self.call = None

    def __call__(self, fn, *args, **kwargs):
        self.call = lambda: fn(*args, **kwargs)
        return self.call()

    def pedantic(self, fn, args=(), kwargs=None, rounds=1, iterations=1, warmup_rounds=0):
        return self(fn, *args, **(kwargs or {}))


class _Replay:
    def __init__(self, spec):
        self.path, rounds = spec.rsplit(":", 1)
        self.rounds = int(rounds)
        self.kept = {}

    @staticmethod
    def _impl(request):
        callspec = getattr(request.node, "callspec", None)
        return callspec.params.get("impl") if callspec else None

    def pytest_sessionfinish(self, session):
        from benchmarks._interleave import best_block
        out = {}
        for group, calls in self.kept.items():
            if "torch" not in calls or "pytorchlite" not in calls:
                continue
            pair = (calls["torch"], calls["pytorchlite"])
            one = max(best_block(fn, 1, time.thread_time) for fn in pair)
            n = max(1, int(0.005 / max(one, 1e-7)))
            best = [float("inf")] * 2
            for _ in range(self.rounds):
                for i, fn in enumerate(pair):
                    best[i] = min(best[i], best_block(fn, n, time.thread_time))
            out[group] = best[0] / best[1]
        with open(self.path, "w") as f:
            json.dump(out, f)


def _capture_fixture():
    import pytest

    @pytest.fixture
    def benchmark(request):
        cap = _Capture(_Replay._impl(request))
        yield cap
        replay = request.config.pluginmanager.get_plugin("bench_sweep_replay")
        if cap.call is not None and cap.group is not None and cap.impl is not None:
            replay.kept.setdefault(cap.group, {})[cap.impl] = cap.call
    return benchmark


if os.environ.get(CAPTURE_ENV):
    benchmark = _capture_fixture()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("step", choices=["sweep", "rerun"])
    p.add_argument("--out", required=True, help="path prefix of the files written")
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--files", nargs="+", help="sweep these benchmark files (paths from the "
                   "repository's root) instead of every one")
    p.add_argument("--below", type=float, default=0.97)
    p.add_argument("--passes", type=int, default=3)
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--max-time", type=float, default=0.3,
                   help="pytest-benchmark's --benchmark-max-time a test (its default 1 s makes "
                   "the 1772 tests take about an hour)")
    args = p.parse_args()
    (sweep if args.step == "sweep" else rerun)(args)


if __name__ == "__main__":
    main()
