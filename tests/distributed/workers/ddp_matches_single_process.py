"""DDP on every rank's share of a global batch gives the parameters of one process trained on
the whole batch (float64, several buckets, gradient_as_bucket_view, a layer used twice,
retain_graph, buffers, no_sync, find_unused_parameters, backward that goes on after the
module's gradients)."""
import numpy as np

import pytorchlite as torch
import pytorchlite.distributed as dist
from pytorchlite import nn
from pytorchlite.nn.parallel import DistributedDataParallel as DDP


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 16)
        self.fc2 = nn.Linear(16, 3)
        self.spare = nn.Linear(3, 3)          # unused unless `extra`
        self.register_buffer("shift", torch.zeros(16))

    def forward(self, x, extra=False):
        h = self.fc2(torch.relu(self.fc1(x) + self.shift))
        return self.spare(h) if extra else h


class Scale(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(n))

    def forward(self, x):
        return self.weight * x


class Twice(nn.Module):
    """One layer applied twice."""

    def __init__(self, seed):
        super().__init__()
        torch.manual_seed(seed)
        self.fc = nn.Linear(6, 6).double()

    def forward(self, x):
        return torch.tanh(self.fc(torch.tanh(self.fc(x))))


def make(seed):
    torch.manual_seed(seed)
    net = Net().double()
    net.shift.fill_(0.1 * seed)
    return net


def train(model, batches, **kw):
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for x, y in batches:
        loss = nn.functional.mse_loss(model(x, **kw), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
    return model


def main():
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    gen = np.random.default_rng(0)
    global_batches = [(torch.tensor(gen.standard_normal((4 * world, 6))),
                       torch.tensor(gen.standard_normal((4 * world, 3)))) for _ in range(4)]
    local = [(x[4 * rank:4 * rank + 4], y[4 * rank:4 * rank + 4]) for x, y in global_batches]

    # the reference: one process, the global batch; parameters from seed 0 (rank 0's)
    ref = train(make(0), global_batches)

    # every rank starts from different parameters: the construction broadcast fixes that;
    # with gradient_as_bucket_view=True .grad is the bucket's view, reset by zero_grad to
    # None (copied in again) or to zeros (backward accumulates into the bucket)
    for as_view, set_to_none in ((False, True), (True, True), (True, False)):
        model = DDP(make(rank), bucket_cap_mb=0.0001, broadcast_buffers=False,
                    find_unused_parameters=True, gradient_as_bucket_view=as_view)
        assert len(model._buckets) > 2, len(model._buckets)
        assert list(model.state_dict()) == ["module." + k for k in ref.state_dict()]
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        for x, y in local:
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            in_bucket = [any(b.flat.data_ptr() <= p.grad.data_ptr() < b.flat.data_ptr() +
                             b.flat.numel() * b.flat.element_size() for b in model._buckets)
                         for p in model.module.fc1.parameters()]
            assert in_bucket == [as_view] * 2, (as_view, in_bucket)
            opt.step()
            opt.zero_grad(set_to_none=set_to_none)
        for (name, p), q in zip(model.module.named_parameters(), ref.parameters()):
            if name.startswith("spare"):
                assert p.grad is None
                continue
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-10,
                                       atol=1e-12, err_msg=f"{as_view} {set_to_none} {name}")

    # a layer used twice in forward: its parameters are ready once, with the summed gradient;
    # a second backward through the same graph (retain_graph) accumulates locally, unsynced,
    # as in PyTorch
    x, xl = global_batches[0][0], local[0][0]
    single = Twice(0)
    nn.functional.mse_loss(single(x), x).backward()
    local_only = Twice(0)
    nn.functional.mse_loss(local_only(xl), xl).backward()
    model = DDP(Twice(rank))
    loss = nn.functional.mse_loss(model(xl), xl)
    loss.backward(retain_graph=True)
    for p, q in zip(model.parameters(), single.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-10, atol=1e-12)
    loss.backward()
    for p, q, o in zip(model.parameters(), single.parameters(), local_only.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy() + o.grad.numpy(),
                                   rtol=1e-10, atol=1e-12)

    # no_sync: two half batches accumulated locally, then one synced backward
    ref = make(0)
    x, y = global_batches[0]
    nn.functional.mse_loss(ref(x), y).backward()
    model = DDP(make(rank), find_unused_parameters=True)
    xl, yl = local[0]
    with model.no_sync():
        nn.functional.mse_loss(model(xl[:2]), yl[:2]).backward()
    nn.functional.mse_loss(model(xl[2:]), yl[2:]).backward()
    for (name, p), q in zip(model.module.named_parameters(), ref.parameters()):
        if name.startswith("spare"):
            assert p.grad is None, name   # unused on every rank: left alone
            continue
        # two half-batch means summed = 2 x the full-batch mean gradient
        np.testing.assert_allclose(p.grad.numpy() / 2, q.grad.numpy(), rtol=1e-10,
                                   atol=1e-12, err_msg=name)

    # find_unused_parameters: `spare` used on rank 0 only gets rank 0's gradient / world
    model = DDP(make(0), find_unused_parameters=True)
    out = model(xl, extra=(rank == 0))
    out.sum().backward()
    single = make(0)
    single(xl, extra=True).sum().backward() if rank == 0 else None
    g = torch.zeros(3, 3, dtype=torch.float64) if rank else single.spare.weight.grad
    dist.broadcast(g, src=0)
    np.testing.assert_allclose(model.module.spare.weight.grad.numpy(), g.numpy() / world,
                               rtol=1e-10)

    # float32 and float16, one bucket (the default cap) and one per parameter, without
    # find_unused_parameters: the same steps as one process on the global batch
    for dtype, tol in ((torch.float32, 1e-5), (torch.float16, 2e-3)):
        for cap in (None, 0.000001):
            ref = train(make(0).to(dtype), [(x.to(dtype), y.to(dtype))
                                            for x, y in global_batches])
            net = make(rank).to(dtype)
            net.spare.requires_grad_(False)       # DDP leaves it out
            model = DDP(net, bucket_cap_mb=cap, broadcast_buffers=False)
            assert len(model._buckets) == (1 if cap is None else 4), len(model._buckets)
            train(model, [(x.to(dtype), y.to(dtype)) for x, y in local])
            for (name, p), q in zip(model.module.named_parameters(), ref.parameters()):
                if name.startswith("spare"):
                    continue
                np.testing.assert_allclose(p.detach().double().numpy(),
                                           q.detach().double().numpy(), rtol=tol, atol=tol,
                                           err_msg=f"{dtype} {cap} {name}")

    # a last bucket just below and at _BLOCKING_MIN_BYTES (1 MiB): in shared-memory windows,
    # or with PTL_DDP_SHARED_MEMORY=0 MPI_Iallreduce, then the Ibarrier and the blocking
    # MPI_Allreduce; the gradient is every rank's input, averaged
    for n in (262143, 262144):
        inputs = np.random.default_rng(n).standard_normal((world, n)).astype(np.float32)
        model = DDP(Scale(n))
        model(torch.tensor(inputs[rank])).sum().backward()
        np.testing.assert_allclose(model.module.weight.grad.numpy(),
                                   inputs.astype(np.float64).mean(0), rtol=1e-6, atol=1e-7)

    # backward goes on after the module's last gradient, into a layer in front of it: the
    # reduction ends in the engine's final callback, after that layer's gradients, and still
    # averages the module's
    torch.manual_seed(7)
    pre = nn.Linear(6, 6).double()
    ref = make(0)
    x, y = global_batches[0]
    nn.functional.mse_loss(ref(pre(x).detach()), y).backward()
    model = DDP(make(rank), find_unused_parameters=True)
    armed = []
    pre.weight.register_hook(lambda g: armed.append(model._reducer.armed))
    nn.functional.mse_loss(model(pre(xl)), yl).backward()
    assert armed == [True] and not model._reducer.armed, armed
    for (name, p), q in zip(model.module.named_parameters(), ref.parameters()):
        if name.startswith("spare"):
            continue
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-10, atol=1e-12,
                                   err_msg=name)

    # buffers follow rank 0 at each forward
    model = DDP(make(0), find_unused_parameters=True)
    model.module.shift.fill_(float(rank))
    model(xl)
    assert model.module.shift.tolist() == [0.0] * 16
    print(f"rank {rank}: OK", flush=True)
    dist.destroy_process_group()


main()
