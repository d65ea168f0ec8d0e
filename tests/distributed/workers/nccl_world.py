"""An nccl world of one process (no launcher): the group's backend is nccl, its CPU tensors
go through MPI (a subgroup's too), DDP trains a CPU module, and a tensor on another device is
refused with the backend's message."""
import pytorchlite as torch
import pytorchlite.distributed as dist

dist.init_process_group("nccl")
assert dist.get_backend() == "nccl" and dist.get_world_size() == 1
t = torch.arange(4.0)
dist.all_reduce(t, op=dist.ReduceOp.AVG)
assert t.tolist() == [0.0, 1.0, 2.0, 3.0]
sub = dist.new_group([0])
assert dist.get_backend(sub) == "nccl"
dist.broadcast(t, src=0, group=sub)
try:
    dist.all_reduce(torch.ones(2, device="meta"))
    raise AssertionError("a meta tensor was accepted")
except ValueError as e:
    assert "the nccl backend works on CUDA tensors" in str(e), e
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(3, 2))
model(torch.ones(4, 3)).sum().backward()
assert model.module.weight.grad.tolist() == [[4.0] * 3] * 2
dist.destroy_process_group()
print("nccl world ok")
