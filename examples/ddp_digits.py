"""Train the digits MLP with DistributedDataParallel: each process takes its share of every
epoch (DistributedSampler) and DDP averages the gradients, so N processes train the model one
process would train with an N times larger batch.

    python -m pytorchlite.distributed.run --nproc-per-node 2 examples/ddp_digits.py
    mpirun -np 2 python examples/ddp_digits.py --epochs 3 --steps 10
    python examples/ddp_digits.py                  # a world of one process

Ordinary PyTorch code: only the import lines and the bundled data set are pytorchlite's.
"""
import argparse
import time

from digits_common import evaluate, nn, torch
from pytorchlite import distributed as dist
from pytorchlite.datasets import Digits
from pytorchlite.nn.parallel import DistributedDataParallel as DDP
from pytorchlite.utils.data import DataLoader, DistributedSampler


def make_model():
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64),
                         nn.ReLU(), nn.Linear(64, 10))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--steps", type=int, default=0, help="at most this many steps per epoch")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--batch-size", type=int, default=32, help="per process")
    args = p.parse_args(argv)

    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed)
    train_set = Digits(train=True)
    sampler = DistributedSampler(train_set, seed=args.seed)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, sampler=sampler)
    test_loader = DataLoader(Digits(train=False), batch_size=256)
    model = DDP(make_model())
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    t0 = time.perf_counter()
    acc = 0.0
    for epoch in range(1, args.epochs + 1):
        sampler.set_epoch(epoch)
        stats = torch.zeros(2, dtype=torch.float64)        # loss sum, sample count
        for step, (x, y) in enumerate(train_loader):
            if args.steps and step >= args.steps:
                break
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            stats += torch.tensor([loss.item() * y.numel(), y.numel()], dtype=torch.float64)
        dist.all_reduce(stats)
        acc = evaluate(model.module, test_loader)
        if rank == 0:
            print(f"epoch {epoch}: train loss {stats[0].item() / stats[1].item():.4f}  "
                  f"test accuracy {acc * 100:.2f}%  ({world} processes)", flush=True)
    if rank == 0:
        print(f"final test accuracy {acc * 100:.2f}% ({time.perf_counter() - t0:.1f}s)",
              flush=True)
    dist.destroy_process_group()
    return acc


if __name__ == "__main__":
    main()
