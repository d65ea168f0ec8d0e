"""Every collective of the nccl backend on CUDA tensors in a world of one process (run by
test_cuda_nccl.py in its own process, since init_process_group starts MPI): the results
against the CPU, non-contiguous tensors, every NCCL dtype, async Works, errors, and DDP of a
CUDA module against the plain module's gradients."""
import numpy as np

import pytorchlite as torch
import pytorchlite.distributed as dist


def check(got, want):
    np.testing.assert_array_equal(got.cpu().double().numpy(), np.asarray(want, np.float64))


dist.init_process_group("nccl")
dev = torch.device("cuda", 0)
rng = np.random.default_rng(0)
for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32,
              torch.int64, torch.int8, torch.uint8, torch.bool):
    a = torch.tensor(rng.integers(0, 3, (5, 7))).to(dtype)
    for op in (dist.ReduceOp.SUM, dist.ReduceOp.MAX, dist.ReduceOp.MIN, dist.ReduceOp.PRODUCT):
        t = a.to(dev)
        dist.all_reduce(t, op=op)
        check(t, a.double().numpy())
x = torch.tensor(rng.standard_normal((6, 8)).astype(np.float32))
t = x.to(dev).t()                                   # non-contiguous: staged and copied back
dist.all_reduce(t, op=dist.ReduceOp.AVG)
check(t, x.numpy().T)
work = dist.all_reduce(x.to(dev), async_op=True)
work.wait()
torch.cuda.synchronize()
assert work.is_completed() and work.get_future().wait()[0].shape == (6, 8)
t = x.to(dev)
dist.broadcast(t, src=0)
dist.reduce(t, dst=0)
check(t, x.numpy())
out = [torch.empty(6, 8, device=dev)]
dist.all_gather(out, x.to(dev))
check(out[0], x.numpy())
flat = torch.empty(6, 8, device=dev)
dist.all_gather_into_tensor(flat, x.to(dev))
dist.reduce_scatter_tensor(flat, x.to(dev))
check(flat, x.numpy())
dist.reduce_scatter(flat, [x.to(dev)])
dist.all_to_all_single(flat, x.to(dev))
lists = [torch.empty(6, 8, device=dev)]
dist.all_to_all(lists, [x.to(dev)])
dist.gather(x.to(dev), lists, dst=0)
dist.scatter(flat, [x.to(dev)], src=0)
check(flat, x.numpy())
check(lists[0], x.numpy())
try:
    dist.all_reduce(torch.ones(2, dtype=torch.int16, device=dev))
    raise AssertionError("int16 was accepted")
except TypeError as e:
    assert "not supported for NCCL process group" in str(e)
try:
    dist.all_gather([torch.ones(2, device=dev)], torch.ones(2))
    raise AssertionError("a CPU and a CUDA tensor were accepted together")
except ValueError as e:
    assert "must all be CUDA tensors (nccl) or all CPU tensors (MPI)" in str(e), e
torch.manual_seed(0)
plain = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
shared = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                             torch.nn.Linear(16, 3)).to(dev)
shared.load_state_dict({k: v.to(dev) for k, v in plain.state_dict().items()})
ddp = torch.nn.parallel.DistributedDataParallel(shared, device_ids=[0])
data = torch.tensor(rng.standard_normal((32, 8)).astype(np.float32))
plain(data).square().sum().backward()
ddp(data.to(dev)).square().sum().backward()
for p, q in zip(plain.parameters(), shared.parameters()):
    np.testing.assert_allclose(q.grad.cpu().numpy(), p.grad.numpy(), rtol=1e-5, atol=1e-5)
dist.destroy_process_group()
print("nccl device ok")
