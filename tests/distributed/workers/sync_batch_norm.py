"""SyncBatchNorm on every rank's shard of a global batch gives what BatchNorm gives one process
on the whole batch (Note [Synchronized batch norm]): outputs, input gradients, the ranks'
weight and bias gradients summed, running statistics; shards of unequal sizes (one empty),
2-D, 3-D and 4-D inputs, momentum None, no affine parameters, eval mode (no collective), and
a DDP model made by convert_sync_batchnorm trained as one process on the global batch."""
import numpy as np

import pytorchlite as torch
import pytorchlite.distributed as dist
from pytorchlite import nn
from pytorchlite.nn.parallel import DistributedDataParallel as DDP


def close(a, b, what):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-10, atol=1e-12,
                               err_msg=what)


def shard_bounds(sizes, rank):
    start = sum(sizes[:rank])
    return start, start + sizes[rank]


def check_against_one_process(rank, world, shape, sizes, **options):
    gen = np.random.default_rng(len(shape) * 10 + sum(sizes))
    channels = shape[0]
    x = gen.standard_normal((sum(sizes),) + shape) * 3 + 1
    g = gen.standard_normal(x.shape)
    weight, bias = gen.standard_normal(channels), gen.standard_normal(channels)
    ref = nn.BatchNorm1d(channels, **options).double() if len(shape) < 3 else \
        nn.BatchNorm2d(channels, **options).double()
    ours = nn.SyncBatchNorm(channels, **options).double()
    if ref.affine:
        for m in (ref, ours):
            with torch.no_grad():
                m.weight.copy_(torch.tensor(weight))
                m.bias.copy_(torch.tensor(bias))
    lo, hi = shard_bounds(sizes, rank)
    for step in range(2):
        xs = torch.tensor(x + step, requires_grad=True)
        out_ref = ref(xs)
        (out_ref * torch.tensor(g)).sum().backward()
        mine = torch.tensor(x[lo:hi] + step, requires_grad=True)
        out = ours(mine)
        (out * torch.tensor(g[lo:hi])).sum().backward()
        what = f"{shape} {sizes} {options} step {step}"
        close(out.detach().numpy(), out_ref.detach().numpy()[lo:hi], "output " + what)
        close(mine.grad.numpy(), xs.grad.numpy()[lo:hi], "input grad " + what)
        if ref.affine:
            for name in ("weight", "bias"):
                summed = getattr(ours, name).grad.clone()
                dist.all_reduce(summed)
                close(summed.numpy(), getattr(ref, name).grad.numpy(), f"{name} grad " + what)
                getattr(ours, name).grad = None
                getattr(ref, name).grad = None
        if ref.track_running_stats:
            close(ours.running_mean.numpy(), ref.running_mean.numpy(), "running_mean " + what)
            close(ours.running_var.numpy(), ref.running_var.numpy(), "running_var " + what)
            assert int(ours.num_batches_tracked) == step + 1
    # eval: the running statistics, no collective (rank 0 alone calls it: no hang)
    ours.eval()
    ref.eval()
    if rank == 0 and ref.track_running_stats:
        close(ours(torch.tensor(x[:3])).detach().numpy(),
              ref(torch.tensor(x[:3])).detach().numpy(), "eval " + str(shape))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(2, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(4 * 5 * 5, 3), nn.BatchNorm1d(3))

    def forward(self, x):
        return self.head(torch.relu(self.bn(self.conv(x))))


def check_ddp_training(rank, world):
    gen = np.random.default_rng(7)
    batches = [(torch.tensor(gen.standard_normal((3 * world, 2, 5, 5))),
                torch.tensor(gen.standard_normal((3 * world, 3)))) for _ in range(3)]
    ref = Net().double()
    opt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    for x, y in batches:
        nn.functional.mse_loss(ref(x), y).backward()
        opt.step()
        opt.zero_grad()
    net = nn.SyncBatchNorm.convert_sync_batchnorm(Net().double())
    assert type(net.bn) is nn.SyncBatchNorm and type(net.head[2]) is nn.SyncBatchNorm
    model = DDP(net)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for x, y in batches:
        lo, hi = 3 * rank, 3 * rank + 3
        nn.functional.mse_loss(model(x[lo:hi]), y[lo:hi]).backward()
        opt.step()
        opt.zero_grad()
    for (name, p), q in zip(model.module.state_dict().items(), ref.state_dict().values()):
        close(p.numpy(), q.numpy(), "ddp " + name)


def main():
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    even = [4] * world
    uneven = [r + 1 for r in range(world)]
    uneven[-1] = 0                        # one rank holds no sample
    uneven[0] += 2
    for shape, sizes, options in [
            ((3,), even, {}), ((3, 7), uneven, {}), ((3, 4, 5), even, {}),
            ((3, 4, 5), uneven, dict(momentum=None)), ((2, 3, 3), even, dict(affine=False)),
            ((3, 2, 2), even, dict(track_running_stats=False))]:
        check_against_one_process(rank, world, shape, sizes, **options)
    check_ddp_training(rank, world)
    print(f"rank {rank}: OK", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
