"""Samples per second of an MLP 64-H-H/2-10 (SGD; H=128, the default, is the digits MLP) on one
thread per process: run with plain python for one process without DDP, under mpirun for DDP
(each rank the same per-rank batch).  The best of `windows` timed windows of `steps` steps
counts: a window of the digits MLP lasts a few tens of milliseconds, and on a shared machine
one descheduled rank stalls the other for a whole window.  Rank 0 prints one JSON line.

    ddp_mlp_throughput.py [steps] [batch] [H] [windows]"""
import json
import sys
import time

import pytorchlite as torch
import pytorchlite.distributed as dist
from pytorchlite import nn
from pytorchlite.nn.parallel import DistributedDataParallel as DDP


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    batch = int(sys.argv[2]) if len(sys.argv) > 2 else 64
    hidden = int(sys.argv[3]) if len(sys.argv) > 3 else 128
    windows = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    torch.set_num_threads(1)
    dist.init_process_group("mpi")
    world = dist.get_world_size()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, hidden // 2),
                          nn.ReLU(), nn.Linear(hidden // 2, 10))
    if world > 1:
        model = DDP(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(batch, 64), torch.randint(0, 10, (batch,))
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()

    for _ in range(10):
        step()
    best = float("inf")
    for _ in range(windows):
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        dist.barrier()
        best = min(best, time.perf_counter() - t0)
    if dist.get_rank() == 0:
        print(json.dumps({"ranks": world, "samples_per_s": steps * batch * world / best}),
              flush=True)
    dist.destroy_process_group()


main()
