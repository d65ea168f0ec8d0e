"""Work.get_future() and DDP communication hooks: the default all_reduce hook trains exactly as
DDP's own reduction, the float16 / bfloat16 compression hooks to their precision, a custom hook
sees PyTorch's GradBucket, and a hook's mistakes raise."""
import numpy as np

import pytorchlite as torch
import pytorchlite.distributed as dist
from pytorchlite import nn
from pytorchlite.distributed.algorithms.ddp_comm_hooks import default_hooks
from pytorchlite.futures import Future
from pytorchlite.nn.parallel import DistributedDataParallel as DDP


def make():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3)).double()


def train(hook=None, state=None, steps=3):
    rank = dist.get_rank()
    gen = np.random.default_rng(rank)
    model = DDP(make(), bucket_cap_mb=0.0005)
    if hook is not None:
        model.register_comm_hook(state, hook)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        x = torch.tensor(gen.standard_normal((4, 6)))
        y = torch.tensor(gen.standard_normal((4, 3)))
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        opt.zero_grad()
    return [p.detach().numpy().copy() for p in model.parameters()]


def check_futures(rank, world):
    t = torch.full((5,), float(rank + 1), dtype=torch.float64)
    work = dist.all_reduce(t, async_op=True)
    fut = work.get_future()
    doubled = fut.then(lambda f: f.value()[0] * 2)
    assert doubled.wait().tolist() == [world * (world + 1)] * 5
    assert fut.done() and fut.value()[0] is t and work.result() == [t]
    out = torch.zeros(world, 2)
    work = dist.all_gather_into_tensor(out, torch.full((2,), float(rank)), async_op=True)
    assert work.get_future().wait()[0] is out
    assert out[:, 0].tolist() == [float(r) for r in range(world)]
    b = torch.full((3,), float(rank))
    assert dist.broadcast(b, src=0, async_op=True).get_future().wait()[0].tolist() == [0.0] * 3


def main():
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    check_futures(rank, world)

    reference = train()
    for got, want in zip(train(default_hooks.allreduce_hook), reference):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    for hook, tol in ((default_hooks.fp16_compress_hook, 2e-3),
                      (default_hooks.bf16_compress_hook, 2e-2)):
        for got, want in zip(train(hook), reference):
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol)

    def replacing_hook(state, bucket):
        bucket.set_buffer(bucket.buffer() * 1.0)      # a new tensor from now on
        assert bucket.gradients()[0].data_ptr() == bucket.buffer().data_ptr()
        return default_hooks.allreduce_hook(state, bucket)

    for got, want in zip(train(replacing_hook), reference):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)

    seen = []

    def recording_hook(state, bucket: dist.GradBucket) -> Future:
        grads = bucket.gradients()
        assert [g.shape for g in grads] == [p.shape for p in bucket.parameters()]
        assert grads[0].data_ptr() == bucket.buffer().data_ptr()
        seen.append((state, bucket.index(), bucket.is_last()))
        return default_hooks.allreduce_hook(None, bucket)

    train(recording_hook, state="st", steps=1)
    nb = len(DDP(make(), bucket_cap_mb=0.0005)._buckets)
    assert seen == [("st", i, i == nb - 1) for i in range(nb)], seen

    model = DDP(make())
    model.register_comm_hook(None, default_hooks.allreduce_hook)
    try:
        model.register_comm_hook(None, default_hooks.allreduce_hook)
        raise AssertionError("a second hook was accepted")
    except RuntimeError as e:
        assert "can only be called once" in str(e)
    for bad, kind in ((42, TypeError), (lambda state, bucket: bucket.buffer(), RuntimeError)):
        model = DDP(make())
        try:
            model.register_comm_hook(None, bad)
            model(torch.zeros(2, 6, dtype=torch.float64)).sum().backward()
            raise AssertionError(f"{bad!r} was accepted")
        except kind:
            pass
    print(f"rank {rank}: OK", flush=True)
    dist.destroy_process_group()


main()
