"""Run with plain `python` (no mpirun): the mpi backend is a world of one, as PyTorch's is;
init_method='env://' needs torchrun's variables; ranks given must match MPI's."""
import os
from datetime import timedelta

import pytorchlite as torch
import pytorchlite.distributed as dist


def raises(exc, match, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except exc as e:
        assert match in str(e), (match, str(e))
        return
    raise AssertionError(f"{fn.__name__} did not raise {exc.__name__}")


for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
    os.environ.pop(name, None)
raises(ValueError, "Error initializing torch.distributed using env:// rendezvous: environment "
       "variable RANK expected, but not set", dist.init_process_group, "mpi",
       init_method="env://")
os.environ.update(RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1")
raises(ValueError, "environment variable MASTER_PORT expected, but not set",
       dist.init_process_group, "mpi", init_method="env://")
raises(ValueError, "do not match MPI's rank 0 and size 1", dist.init_process_group, "mpi",
       world_size=2, rank=1)
assert not dist.is_initialized()
dist.init_process_group("mpi")
assert (dist.get_rank(), dist.get_world_size()) == (0, 1)
raises(ValueError, "trying to initialize the default process group twice!",
       dist.init_process_group, "mpi")
t = torch.arange(4.0)
dist.all_reduce(t, op=dist.ReduceOp.AVG)
assert t.tolist() == [0.0, 1.0, 2.0, 3.0]
raises(ValueError, "ReduceOp.AVG is only supported for floating point tensors",
       dist.all_reduce, torch.ones(2, dtype=torch.int64), op=dist.ReduceOp.AVG)
raises(ValueError, "output tensor size must be equal to world_size times input tensor size",
       dist.all_gather_into_tensor, torch.empty(3), torch.empty(2))
raises(ValueError, "tensor_list must have one tensor per rank of the group",
       dist.all_gather, [torch.empty(1)] * 2, torch.empty(1))
raises(TypeError, "Expected parameter `tensor` of type torch.Tensor", dist.all_reduce, [1.0])
raises(ValueError, "Invalid destination rank: should not be the same as the rank of the "
       "current process.", dist.send, torch.ones(1), dst=0)
dist.destroy_process_group()
os.environ["MASTER_PORT"] = "29500"
dist.init_process_group("mpi", init_method="env://", timeout=timedelta(seconds=5))
assert dist.get_world_size() == 1
dist.destroy_process_group()
print("rank 0: OK", flush=True)
