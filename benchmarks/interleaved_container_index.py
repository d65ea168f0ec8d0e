"""What indexing an nn container costs: seq[1], seq[-1] on a Sequential (built from
arguments and from an OrderedDict), mlist[1] on a ModuleList, each with PyTorch's call, on
one thread; the two alternate block by block and the fastest of --rounds blocks of --calls
calls counts (thread CPU time):

    OMP_NUM_THREADS=1 taskset -c 1 python benchmarks/interleaved_container_index.py [--rounds 100]

Needs PyTorch (pip install torch==2.13.0)."""
import os
import sys
import time
from collections import OrderedDict

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._interleave import one_thread_args, print_alternating  # noqa: E402


def rows(torch, ptl):
    def models(lib):
        layers = [lib.nn.Identity() for _ in range(4)]
        named = OrderedDict((f"layer{i}", m) for i, m in enumerate(layers))
        return (lib.nn.Sequential(*layers), lib.nn.Sequential(named),
                lib.nn.ModuleList(layers))
    (s, n, m), (ts, tn, tm) = models(ptl), models(torch)
    return [
        ("seq[1]", lambda: s[1], lambda: ts[1]),
        ("seq[-1]", lambda: s[-1], lambda: ts[-1]),
        ("named seq[2]", lambda: n[2], lambda: tn[2]),
        ("mlist[1]", lambda: m[1], lambda: tm[1]),
    ]


def main():
    torch, args = one_thread_args(100, ("--calls", 2000))
    import pytorchlite as ptl
    print_alternating(rows(torch, ptl), args, 14, time.thread_time)


if __name__ == "__main__":
    main()
