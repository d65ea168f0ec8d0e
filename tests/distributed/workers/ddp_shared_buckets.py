"""DDP's buckets in MPI shared-memory windows (Note [DDP shared-memory buckets]): under mpirun on
one machine every rank's float32/float64 buckets are its slots of MPI_Win_allocate_shared
windows (16-bit buckets, DETAIL mode and gradient_as_bucket_view=True are not), every rank ends
with bit-identical sums equal to the mean of the ranks' gradients (NumPy, float64) for buckets of
0 and 1 elements and smaller than, equal to and larger than the number of ranks, a rank whose
window allocation fails makes every rank keep its buckets private, and destroy_process_group
frees the windows.  argv[1] == "off" (PTL_DDP_SHARED_MEMORY=0) or "detail"
(PTL_DISTRIBUTED_DEBUG=DETAIL): no bucket is shared.  Run with plain python it checks a world
of one, which has nothing to sum and keeps its buckets private (and untouched, unless a
communication hook or gradient_as_bucket_view needs them)."""
import os
import sys

import numpy as np

import pytorchlite as torch
import pytorchlite.distributed as dist
from pytorchlite import nn
from pytorchlite.distributed import _shared_buckets
from pytorchlite.nn.parallel import DistributedDataParallel as DDP


class Scale(nn.Module):
    def __init__(self, n, dtype):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(n, dtype=dtype))
        self.other = nn.Parameter(torch.zeros(n + 3, dtype=dtype))

    def forward(self, x, y):
        return (self.weight * x).sum() + (self.other * y).sum()


class Mixed(nn.Module):
    def __init__(self, rank):
        super().__init__()
        self.rank = rank
        self.a = nn.Parameter(torch.zeros(3, dtype=torch.float32))
        self.b = nn.Parameter(torch.zeros(3, dtype=torch.float64))

    def forward(self):
        return (self.a * (self.rank + 1)).sum() + (self.b * (self.rank + 1)).sum()


def gathered(t):
    out = [torch.empty_like(t) for _ in range(dist.get_world_size())]
    dist.all_gather(out, t)
    return [o.numpy() for o in out]


def check_means(shared_expected):
    rank, world = dist.get_rank(), dist.get_world_size()
    gen = np.random.default_rng(3)
    for dtype, cap in ((torch.float32, None), (torch.float64, None), (torch.float64, 1e-6)):
        for n in (0, 1, world - 1, world, world + 1, 1000):
            xs = gen.standard_normal((world, n))
            ys = gen.standard_normal((world, n + 3))
            model = DDP(Scale(n, dtype), bucket_cap_mb=cap)
            assert (model._shared is not None) == shared_expected, model._shared
            for b in model._buckets:
                assert (b.shared is not None) == shared_expected, b.shared
            for _ in range(2):                   # a bucket is reduced again in its slot
                model.zero_grad()
                model(torch.tensor(xs[rank], dtype=dtype),
                      torch.tensor(ys[rank], dtype=dtype)).backward()
                for p, inputs in ((model.module.weight, xs), (model.module.other, ys)):
                    np.testing.assert_allclose(p.grad.double().numpy(), inputs.mean(0),
                                               rtol=1e-6 if dtype == torch.float32 else 1e-12,
                                               atol=1e-7)
                    grads = gathered(p.grad)
                    assert all(np.array_equal(grads[0], g) for g in grads), (dtype, n)
            if shared_expected:
                for b in model._buckets:      # the flat tensor is this rank's slot
                    slot = model._shared.arrays[b.shared][rank]
                    assert np.shares_memory(b.flat.numpy(), slot) or slot.size == 0


def check_world_of_one():
    """A world of one has nothing to reduce (Note [DDP reducer]): no copy into the buckets,
    .grad bit-equal to the module's own backward; a communication hook still runs, and so does
    gradient_as_bucket_view."""
    x, y = torch.randn(6, dtype=torch.float64), torch.randn(9, dtype=torch.float64)
    plain = Scale(6, torch.float64)
    plain(x, y).backward()
    for kwargs in ({}, {"gradient_as_bucket_view": True}, {"hook": True}):
        module = Scale(6, torch.float64)
        hook = kwargs.pop("hook", False)
        model = DDP(module, **kwargs)
        calls = []
        if hook:
            from pytorchlite.distributed.algorithms.ddp_comm_hooks import default_hooks

            def counting(state, bucket):
                calls.append(bucket.index())
                return default_hooks.allreduce_hook(state, bucket)
            model.register_comm_hook(None, counting)
        model._buckets[0].flat.fill_(7.0)
        for _ in range(2):
            module.zero_grad()
            model(x, y).backward()
            for mine, theirs in ((module.weight, plain.weight), (module.other, plain.other)):
                np.testing.assert_array_equal(mine.grad.numpy(), theirs.grad.numpy())
        untouched = bool((model._buckets[0].flat == 7.0).all())
        assert untouched == (not hook and not kwargs), kwargs
        assert calls == ([0, 0] if hook else []), calls


def main(mode):
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    shared = mode == "on" and world > 1
    check_means(shared)
    if shared:
        # 16-bit buckets are summed as float32 by the fingerprinted all_reduce; .grad as a
        # view of the bucket would outlive the window
        for dtype in (torch.float16, torch.bfloat16):
            model = DDP(Scale(4, dtype))
            assert model._shared is None and model._buckets[0].shared is None
        model = DDP(Scale(4, torch.float32), gradient_as_bucket_view=True)
        assert model._shared is None and model._buckets[0].shared is None
        # one rank's window allocation fails (after MPI's collective part): no rank shares
        allocate = _shared_buckets._allocate
        if rank == world - 1:
            _shared_buckets._allocate = lambda *a: allocate(*a) and None
        check_means(False)
        # two windows (float32 and float64 buckets); the second fails on one rank: the
        # first is released on every rank, and the mixed model trains on MPI's path
        calls = []

        def fail_second(*args):
            calls.append(1)
            win = allocate(*args)
            return win if len(calls) == 1 else None
        if rank == world - 1:
            _shared_buckets._allocate = fail_second
        mixed = Mixed(rank)
        model = DDP(mixed, bucket_cap_mb=1e-6)
        assert len({b.flat.dtype for b in model._buckets}) == 2, model._buckets
        assert model._shared is None
        model().backward()
        for p in (mixed.a, mixed.b):
            np.testing.assert_allclose(p.grad.double().numpy(), (world + 1) / 2)
        _shared_buckets._allocate = allocate
        # PTL_DDP_SHARED_MEMORY=0 on one rank only: no rank shares (and none waits)
        if rank == world - 1:
            os.environ["PTL_DDP_SHARED_MEMORY"] = "0"
        check_means(False)
        os.environ.pop("PTL_DDP_SHARED_MEMORY", None)
        check_means(True)
    if world == 1:
        check_world_of_one()
    last = DDP(Scale(5, torch.float64))
    dist.destroy_process_group()
    if shared:
        assert last._shared.freed
        try:
            last(torch.ones(5, dtype=torch.float64), torch.ones(8, dtype=torch.float64))
        except RuntimeError as e:
            assert "process group was destroyed" in str(e), e
        else:
            raise AssertionError("a DDP module ran after destroy_process_group")
    print(f"rank {rank}: OK", flush=True)


main(sys.argv[1] if len(sys.argv) > 1 else "on")
