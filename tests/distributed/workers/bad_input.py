"""One misuse per run, named by argv[1]; the test checks the error each rank prints and that
the job ends (non-zero) instead of hanging."""
import sys
import time

import pytorchlite as torch
import pytorchlite.distributed as dist
from pytorchlite import nn
from pytorchlite.nn.parallel import DistributedDataParallel as DDP


def main(case):
    dist.init_process_group("mpi")
    rank = dist.get_rank()
    if case == "shape_mismatch":
        dist.all_reduce(torch.ones(4 + rank))
    elif case == "op_mismatch":
        if rank == 0:
            dist.all_reduce(torch.ones(3))
        else:
            dist.barrier()
    elif case == "detail_shape":
        dist.all_reduce(torch.ones(2, 3) if rank == 0 else torch.ones(3, 2))
        print(f"rank {rank}: same numel passes", flush=True)
        dist.all_reduce(torch.ones(2, 3) if rank == 0 else torch.ones(3, 2))
    elif case == "one_rank_only":
        if rank == 0:
            dist.all_reduce(torch.ones(3))
        else:
            dist.recv(torch.ones(1), src=0)
    elif case == "one_rank_exits":
        if rank == 0:
            dist.all_reduce(torch.ones(3))
    elif case == "worker_raises":
        if rank == 1:
            time.sleep(0.5)
            raise ValueError("worker 1 failed on purpose")
        dist.all_reduce(torch.ones(3))
    elif case == "ddp_unused":
        torch.manual_seed(0)
        model = DDP(nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2)))
        for _ in range(2):
            model.module[0](torch.ones(2, 3)).sum().backward()
            try:
                model(torch.ones(2, 3))
            except RuntimeError as e:
                print(f"rank {rank}: forward raised {e}", flush=True)
                dist.barrier()     # both ranks have printed before either raises (and aborts)
                raise
    elif case == "ddp_hook_raises":
        # a Python post-accumulate-grad hook raises: backward stops before the parameter is
        # ready, so the reduction never finishes and the next forward says which parameters
        torch.manual_seed(0)
        model = DDP(nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2)))

        def hook(p):
            raise ValueError(f"hook failed on purpose on rank {rank}")
        model.module[0].weight.register_post_accumulate_grad_hook(hook)
        try:
            model(torch.ones(2, 3)).sum().backward()
        except ValueError as e:
            print(f"rank {rank}: backward raised {e}", flush=True)
        dist.barrier()     # both ranks have printed before either raises (and aborts the job)
        model(torch.ones(2, 3))
    elif case == "ddp_different_models":
        torch.manual_seed(0)
        DDP(nn.Linear(3, 4 + rank))
    elif case in ("ddp_one_rank_skips_backward", "ddp_backward_against_all_reduce"):
        # rank 0 reduces its bucket; rank 1 waits in a recv, or enters another collective
        torch.manual_seed(0)
        model = DDP(nn.Linear(3, 4))
        loss = model(torch.ones(2, 3)).sum()
        if rank == 0:
            loss.backward()
        elif case == "ddp_one_rank_skips_backward":
            dist.recv(torch.ones(1), src=0)
        else:
            dist.all_reduce(torch.ones(5))
    dist.destroy_process_group()


main(sys.argv[1])
