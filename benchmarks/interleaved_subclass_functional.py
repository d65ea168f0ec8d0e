"""What a torch.nn.functional call costs on a Tensor subclass, whose calls go to
__torch_function__ in PyTorch's form (Note [The call __torch_function__ sees]): F.relu and
F.softmax (Python in PyTorch: the call is put in its form, defaults filled in) and F.linear
(C in PyTorch: passed as made), pytorchlite's and PyTorch's alternating block by block in one
process, the fastest block of each by thread CPU time:

    taskset -c 1 python benchmarks/interleaved_subclass_functional.py [--rounds 100] [--only F.relu]

Needs PyTorch (pip install torch==2.13.0)."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._interleave import best_block, one_thread_args  # noqa: E402


def rows(torch, ptl):
    class Sub(ptl.Tensor):
        pass

    class TorchSub(torch.Tensor):
        pass
    x, tx = ptl.ones(4).as_subclass(Sub), torch.ones(4).as_subclass(TorchSub)
    w, tw = x.view(1, 4), tx.view(1, 4)
    F, TF = ptl.nn.functional, torch.nn.functional
    return [
        ("F.relu(sub)", lambda: F.relu(x), lambda: TF.relu(tx)),
        ("F.softmax(sub, 0)", lambda: F.softmax(x, 0), lambda: TF.softmax(tx, 0)),
        ("F.linear(sub, w)", lambda: F.linear(x, w), lambda: TF.linear(tx, tw)),
    ]


def main():
    import pytorchlite as ptl
    torch, args = one_thread_args(100, ("--calls", 500))
    for name, ours, theirs in rows(torch, ptl):
        if args.only and not name.startswith(args.only):
            continue
        best = [float("inf")] * 2
        for _ in range(args.rounds):
            for i, f in enumerate((ours, theirs)):
                best[i] = min(best[i], best_block(f, int(args.calls), clock=time.thread_time))
        o, t = (s * 1e6 for s in best)
        print(f"{name:18s} ours {o:6.2f} us  torch {t:6.2f} us  torch/ours {t / o:4.2f}",
              flush=True)


if __name__ == "__main__":
    main()
