"""One process, world size 1: the digits MLP's training step (64-128-64-10, SGD, batch 64, one
thread) with and without DDP, interleaved in rounds in the same process; prints one JSON line
with the best per-step times and their ratio (what DDP adds to a step in a world of one, which
reduces nothing: the forward wrapper and the hooks' count of the buckets, Note [DDP reducer])."""
import json
import sys
import time

import pytorchlite as torch
import pytorchlite.distributed as dist
from pytorchlite import nn
from pytorchlite.nn.parallel import DistributedDataParallel as DDP


def make():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
                         nn.Linear(64, 10))


def stepper(model, x, y):
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    return step


def per_step(step, steps):
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - t0) / steps


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    torch.set_num_threads(1)
    dist.init_process_group("mpi")
    x, y = torch.randn(64, 64), torch.randint(0, 10, (64,))
    plain, ddp = stepper(make(), x, y), stepper(DDP(make()), x, y)
    best = {"plain_s": float("inf"), "ddp_s": float("inf")}
    for _ in range(rounds):
        best["plain_s"] = min(best["plain_s"], per_step(plain, steps))
        best["ddp_s"] = min(best["ddp_s"], per_step(ddp, steps))
    best["ratio"] = best["ddp_s"] / best["plain_s"]
    print(json.dumps(best), flush=True)
    dist.destroy_process_group()


main()
