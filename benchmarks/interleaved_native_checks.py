"""What PyTorch's argument check costs a good call of a Python function with a native twin
(Note [Native signatures] in src/python/arg_parse.c, pytorchlite/_native_signature.py):
torch.linalg.vector_norm, torch.fft.rfft, torch.special.logit and torch.logit on a small
tensor, called as pytorchlite has them (routed, then checked by @native) and as the same
function routed without the check (what torch.linalg's, torch.fft's and torch.special's were
before), with PyTorch's call for scale; the three alternate block by block in one process and
the fastest block of each counts:

    taskset -c 1 python benchmarks/interleaved_native_checks.py [--rounds 200]

Needs PyTorch (pip install torch==2.13.0)."""
import inspect
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._interleave import best_block, one_thread_args  # noqa: E402


def rows(torch, ptl):
    x, tx = ptl.rand(4, 8) * 0.5 + 0.25, torch.rand(4, 8) * 0.5 + 0.25

    def unchecked(f):
        return ptl._C._RoutedFunction(inspect.unwrap(f))
    norm, rfft = unchecked(ptl.linalg.vector_norm), unchecked(ptl.fft.rfft)
    logit = unchecked(ptl.special.logit)
    return [
        ("linalg.vector_norm(x)", lambda: ptl.linalg.vector_norm(x), lambda: norm(x),
         lambda: torch.linalg.vector_norm(tx)),
        ("fft.rfft(x)", lambda: ptl.fft.rfft(x), lambda: rfft(x), lambda: torch.fft.rfft(tx)),
        ("special.logit(x)", lambda: ptl.special.logit(x), lambda: logit(x),
         lambda: torch.special.logit(tx)),
        ("logit(x, 0.1)", lambda: ptl.logit(x, 0.1), lambda: logit(x, 0.1),
         lambda: torch.logit(tx, 0.1)),
    ]


def main():
    torch, args = one_thread_args(200, ("--calls", "500"))
    import pytorchlite as ptl
    for name, *fns in rows(torch, ptl):
        if args.only and not name.startswith(args.only):
            continue
        best = [float("inf")] * 3
        for _ in range(args.rounds):   # the three alternate, block by block
            best = [min(b, best_block(f, int(args.calls))) for b, f in zip(best, fns)]
        c, b, t = (s * 1e9 for s in best)
        print(f"{name:22s} checked {c:7.0f} ns  unchecked {b:7.0f} ns  check {c - b:+5.0f} ns "
              f"({(c - b) / b:+.1%})  torch {t:7.0f} ns  torch/checked {t / c:4.2f}", flush=True)


if __name__ == "__main__":
    main()
