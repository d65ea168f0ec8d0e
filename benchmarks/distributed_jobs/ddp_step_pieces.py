"""Where a DDP step of the digits MLP (64-128-64-10, SGD, batch 64 per rank, one thread) spends
its time inside a rank, timed around each piece (perf_counter_ns, or with "cpu" the thread's CPU
time, thread_time_ns, which leaves out the time the rank is descheduled on a shared machine but
counts its spinning waits): zero_grad, forward,
backward (the bucket reduction included: it ends in backward's final callback), the reduction
alone (DDP's _finish: the waits on MPI and the copy into .grad) and the
optimizer step.  Run under mpirun (or plain python: a world of one, where DDP reduces nothing
and _finish never runs, so "reduction" is null); rank 0 prints one JSON line: per rank, the
10th percentile and the median of each piece in microseconds.

    ddp_step_pieces.py [steps] [wall|cpu]"""
import json
import sys
import time

import pytorchlite as torch
import pytorchlite.distributed as dist
from pytorchlite import nn
from pytorchlite.nn.parallel import DistributedDataParallel as DDP


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    clock = time.thread_time_ns if sys.argv[2:] == ["cpu"] else time.perf_counter_ns
    torch.set_num_threads(1)
    dist.init_process_group("mpi")
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
                              nn.Linear(64, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(64, 64), torch.randint(0, 10, (64,))
    loss_fn = nn.CrossEntropyLoss()
    times = {k: [] for k in ("zero_grad", "forward", "backward", "reduction", "step", "total")}
    finish = model._finish

    def timed_finish():
        t0 = clock()
        finish()
        times["reduction"].append(clock() - t0)
    model._finish = timed_finish
    dist.barrier()
    for _ in range(steps):
        t0 = clock()
        opt.zero_grad()
        t1 = clock()
        loss = loss_fn(model(x), y)
        t2 = clock()
        loss.backward()
        t3 = clock()
        opt.step()
        t4 = clock()
        for k, v in zip(("zero_grad", "forward", "backward", "step", "total"),
                        (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t4 - t0)):
            times[k].append(v)
    mine = {}
    for k, v in times.items():
        v = sorted(v[len(v) // 10:])           # the first tenth warms up
        mine[k] = [round(v[len(v) // 10] / 1e3, 1), round(v[len(v) // 2] / 1e3, 1)] if v else None
    ranks = [None] * dist.get_world_size()
    dist.all_gather_object(ranks, mine)
    if dist.get_rank() == 0:
        print(json.dumps({"ranks": ranks}), flush=True)
    dist.destroy_process_group()


main()
