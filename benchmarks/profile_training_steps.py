"""Where the time of each training step goes: runs the training steps of
test_bench_training.py (MLP, CNN, GPT, ResNet) under pytorchlite.profiler and prints, per
step, the operators and backward nodes that take the most self CPU time, with their share of
the step.

    python benchmarks/profile_training_steps.py            # MLP, CNN, GPT, 2 threads
    OMP_NUM_THREADS=1 python benchmarks/profile_training_steps.py mlp
    CUDA_LAUNCH_BLOCKING=1 python benchmarks/profile_training_steps.py --device cuda gpt

On the GPU, CUDA_LAUNCH_BLOCKING=1 makes every kernel launch wait for its kernel, so an
operator's CPU time holds its kernels' time (tools/gpu_check.sh runs it that way).

docs/performance.md quotes its output."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pytorchlite  # noqa: E402
from pytorchlite.profiler import ProfilerActivity, profile  # noqa: E402
from test_bench_training import GROUPS, setup  # noqa: E402


def top_ops(which, steps=5, rows=8, device="cpu"):
    """(total self time per step in us, [(name, self us per step, share)]) for one model."""
    step = setup("pytorchlite", which, device=device)
    for _ in range(2):
        step()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            step()
    averages = [e for e in prof.key_averages() if not e.key.startswith("ProfilerStep")]
    total = sum(e.self_cpu_time_total for e in averages)
    ranked = sorted(averages, key=lambda e: e.self_cpu_time_total, reverse=True)[:rows]
    return total / steps, [(e.key, e.self_cpu_time_total / steps,
                            e.self_cpu_time_total / total) for e in ranked]


def main(args):
    device = "cpu"
    if "--device" in args:
        at = args.index("--device")
        device = args[at + 1]
        args = args[:at] + args[at + 2:]
    unknown = [which for which in args if which not in GROUPS]
    if unknown:
        sys.exit(f"unknown training step {unknown[0]!r}: choose from {', '.join(GROUPS)}"
                 " [--device DEVICE]")
    print(f"threads: {pytorchlite.get_num_threads()}, device: {device}")
    for which in args or ["mlp", "cnn", "gpt"]:
        total, ranked = top_ops(which, rows=12 if device != "cpu" else 8, device=device)
        print(f"\n{GROUPS[which]}: {total / 1000:.2f} ms of operator time per step")
        for name, us, share in ranked:
            print(f"  {share * 100:5.1f}%  {us / 1000:7.3f} ms  {name}")


if __name__ == "__main__":
    main(sys.argv[1:])
