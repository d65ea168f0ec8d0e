"""Run under mpirun: all_reduce of N float32 (argv[1], default 1e7) with pytorchlite and with
mpi4py's Allreduce on a NumPy array, best of several rounds; rank 0 prints one JSON line."""
import json
import sys
import time

import numpy as np
from mpi4py import MPI

import pytorchlite as torch
import pytorchlite.distributed as dist


def best(fn, rounds):
    times = []
    for _ in range(rounds):
        dist.barrier()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main():
    n = int(float(sys.argv[1])) if len(sys.argv) > 1 else 10_000_000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    dist.init_process_group("mpi")
    t = torch.ones(n)
    a = np.ones(n, dtype=np.float32)
    comm = MPI.COMM_WORLD
    ours = best(lambda: dist.all_reduce(t), rounds)
    ref = best(lambda: comm.Allreduce(MPI.IN_PLACE, a, op=MPI.SUM), rounds)
    if dist.get_rank() == 0:
        print(json.dumps({"n": n, "ranks": dist.get_world_size(), "pytorchlite_s": ours,
                          "mpi4py_s": ref, "ratio": ours / ref}), flush=True)
    dist.destroy_process_group()


main()
