"""Started by pytorchlite.distributed.run: prints torchrun's environment and the process
group's view of it; with `raise` as argv[1], rank 1 raises while the others wait in a
collective."""
import os
import sys

import pytorchlite as torch
import pytorchlite.distributed as dist

dist.init_process_group("mpi", init_method="env://")
rank = dist.get_rank()
env = {k: os.environ[k] for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE",
                                  "MASTER_ADDR", "MASTER_PORT")}
assert int(env["RANK"]) == rank and int(env["WORLD_SIZE"]) == dist.get_world_size()
if sys.argv[1:] == ["raise"] and rank == 1:
    raise ValueError("rank 1 gave up")
t = torch.tensor([float(rank)])
dist.all_reduce(t)
print(f"rank {rank}: OK {sorted(env.items())} sum={t.item()} args={sys.argv[1:]}", flush=True)
dist.destroy_process_group()
