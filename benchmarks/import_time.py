"""The CPU time of `import pytorchlite` in fresh processes, for one or more checkouts
alternating run by run (median, min, max), and of a following `import pytorchlite.fx` where
the package leaves fx out (docs/performance.md, "import pytorchlite leaves torch.fx out"):

    taskset -c 1 python benchmarks/import_time.py [--runs 10] CHECKOUT [CHECKOUT ...]

Process CPU time, not wall-clock: the machine is shared, and the load stretches wall time."""
import argparse
import statistics
import subprocess
import sys

CODE = ("import sys, time; t = time.process_time(); import pytorchlite\n"
        "a = time.process_time() - t; lazy = 'pytorchlite.fx' not in sys.modules\n"
        "t = time.process_time(); import pytorchlite.fx; b = time.process_time() - t\n"
        "print(a, b if lazy else 'nan')")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("checkouts", nargs="+")
    args = parser.parse_args()
    times = {c: ([], []) for c in args.checkouts}
    for _ in range(args.runs):
        for c in args.checkouts:
            out = subprocess.run([sys.executable, "-c", CODE], cwd=c, capture_output=True,
                                 text=True, check=True).stdout.split()
            times[c][0].append(float(out[0]) * 1e3)
            times[c][1].append(float(out[1]) * 1e3)
    for c, (package, fx) in times.items():
        line = (f"{c}: import pytorchlite {statistics.median(package):.0f} ms CPU "
                f"(min {min(package):.0f}, max {max(package):.0f})")
        if fx[0] == fx[0]:
            line += f"; then import pytorchlite.fx {statistics.median(fx):.0f} ms"
        print(line)


if __name__ == "__main__":
    main()
