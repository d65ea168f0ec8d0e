"""Every collective against NumPy in float64 (exact for integers): each rank builds every rank's
input from the seed, so it knows the expected result.  Shapes include 0-dim, size-0 and
non-contiguous tensors; every dtype; every ReduceOp."""
import numpy as np

import pytorchlite as torch
import pytorchlite.distributed as dist

INTS = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)
FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
SHAPES = ((), (0,), (5,), (2, 3))


def data(rank, shape, dtype, salt=0):
    """Rank `rank`'s input: small values, exact in every dtype."""
    gen = np.random.default_rng([rank, salt, len(shape)] + list(shape))
    if dtype == torch.bool:
        return torch.tensor(gen.integers(0, 2, shape).astype(bool))
    low = 0 if dtype == torch.uint8 else -3
    return torch.tensor(gen.integers(low, 4, shape).astype(np.float64)).to(dtype)


def as64(t):
    return np.asarray(t.to(torch.float64).tolist(), dtype=np.float64).reshape(tuple(t.shape))


def close(got, want, dtype, what):
    """`want` (float64) rounded to dtype, as the collective rounds its result once."""
    want_t = torch.tensor(np.asarray(want, dtype=np.float64)).to(dtype)
    assert tuple(got.shape) == tuple(want_t.shape), (what, got.shape, want_t.shape)
    assert got.dtype == dtype, (what, got.dtype, dtype)
    np.testing.assert_array_equal(as64(got), as64(want_t), err_msg=what)


def noncontiguous(t):
    """A non-contiguous tensor with t's values (t of shape (2, 3))."""
    base = torch.empty(3, 2, dtype=t.dtype).t()
    base.copy_(t)
    assert not base.is_contiguous()
    return base


REDUCE = {dist.ReduceOp.SUM: np.sum, dist.ReduceOp.PRODUCT: np.prod,
          dist.ReduceOp.MIN: np.min, dist.ReduceOp.MAX: np.max,
          dist.ReduceOp.AVG: np.mean}


def ops_for(dtype):
    if dtype == torch.bool:
        return (dist.ReduceOp.SUM, dist.ReduceOp.MAX, dist.ReduceOp.MIN, dist.ReduceOp.PRODUCT)
    ops = [dist.ReduceOp.SUM, dist.ReduceOp.PRODUCT, dist.ReduceOp.MIN, dist.ReduceOp.MAX]
    return ops + [dist.ReduceOp.AVG] if dtype in FLOATS else ops


def expected_reduction(op, inputs, dtype):
    stacked = np.stack([as64(x) for x in inputs])
    if dtype == torch.bool:
        any_ = op in (dist.ReduceOp.SUM, dist.ReduceOp.MAX)
        return (stacked.any(0) if any_ else stacked.all(0)).astype(np.float64)
    return REDUCE[op](stacked, axis=0)


def check_all_reduce(rank, world):
    for dtype in (torch.bool,) + INTS + FLOATS:
        for shape in SHAPES:
            for op in ops_for(dtype):
                inputs = [data(r, shape, dtype) for r in range(world)]
                t = data(rank, shape, dtype)
                if shape == (2, 3):
                    t = noncontiguous(t)
                dist.all_reduce(t, op=op)
                close(t, expected_reduction(op, inputs, dtype), dtype,
                      f"all_reduce {op.name} {dtype} {shape}")


def check_reduce_broadcast(rank, world):
    dst = world - 1
    for dtype in (torch.bool,) + INTS + FLOATS:
        for shape in SHAPES:
            inputs = [data(r, shape, dtype) for r in range(world)]
            t = data(rank, shape, dtype)
            dist.reduce(t, dst=dst, op=dist.ReduceOp.MAX)
            want = expected_reduction(dist.ReduceOp.MAX, inputs, dtype) if rank == dst \
                else as64(inputs[rank])
            close(t, want, dtype, f"reduce {dtype} {shape}")
            t = data(rank, shape, dtype, salt=1)
            if shape == (2, 3):
                t = noncontiguous(t)
            dist.broadcast(t, src=dst)
            close(t, as64(data(dst, shape, dtype, salt=1)), dtype,
                  f"broadcast {dtype} {shape}")


def check_gathers(rank, world):
    for dtype in (torch.bool, torch.int64, torch.bfloat16, torch.float32):
        for shape in SHAPES:
            inputs = [data(r, shape, dtype) for r in range(world)]
            out = [torch.empty(shape, dtype=dtype) for _ in range(world)]
            dist.all_gather(out, data(rank, shape, dtype))
            for r in range(world):
                close(out[r], as64(inputs[r]), dtype, f"all_gather {dtype} {shape}")
            flat = torch.empty((world,) + shape, dtype=dtype)
            dist.all_gather_into_tensor(flat, data(rank, shape, dtype))
            close(flat, np.stack([as64(x) for x in inputs]), dtype, "all_gather_into_tensor")
            got = [torch.empty(shape, dtype=dtype) for _ in range(world)] if rank == 0 \
                else None
            dist.gather(data(rank, shape, dtype), got, dst=0)
            if rank == 0:
                for r in range(world):
                    close(got[r], as64(inputs[r]), dtype, f"gather {dtype} {shape}")
            pieces = [data(r, shape, dtype, salt=2) for r in range(world)]
            mine = torch.empty(shape, dtype=dtype)
            dist.scatter(mine, pieces if rank == 1 else None, src=1)
            close(mine, as64(pieces[rank]), dtype, f"scatter {dtype} {shape}")


def raises(exc, text, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except exc as e:
        assert text in str(e), f"{fn.__name__}: {e}"
    else:
        raise AssertionError(f"{fn.__name__} did not raise {exc.__name__}: {text}")


def check_rooted_list_errors(rank, world):
    """gather/scatter check their lists on each rank before any message: only the root passes
    one, with a tensor per rank of the input's dtype and size."""
    x = torch.zeros(3)
    for op, role in ((dist.gather, "destination"), (dist.scatter, "source")):
        name = f"{op.__name__}_list"
        if rank == 0:
            raises(ValueError, f"{name} must have one tensor per rank of the group: got "
                   f"{world + 1}", op, x, [torch.zeros(3)] * (world + 1))
            raises(TypeError, f"{op.__name__}: expected torch.float32, got torch.int64", op,
                   x, [torch.zeros(3, dtype=torch.int64)] * world)
            raises(ValueError, f"{op.__name__}: every tensor must have 3 elements", op, x,
                   [torch.zeros(2)] * world)
            raises(TypeError, f"Expected parameter `{name}` of type List[torch.Tensor]", op,
                   x, torch.zeros(3))
        else:
            raises(ValueError, f"Argument ``{name}`` must NOT be specified on non-{role} "
                   "ranks.", op, x, [torch.zeros(3)] * world)


def check_reduce_scatter(rank, world):
    for dtype in (torch.int32, torch.float16, torch.float64):
        for op in (dist.ReduceOp.SUM, dist.ReduceOp.MAX):
            lists = [[data(r, (2, 3), dtype, salt=q) for q in range(world)]
                     for r in range(world)]
            out = torch.empty(2, 3, dtype=dtype)
            dist.reduce_scatter(out, lists[rank], op=op)
            close(out, expected_reduction(op, [lists[r][rank] for r in range(world)], dtype),
                  dtype, f"reduce_scatter {dtype}")
            big = [data(r, (world * 2, 3), dtype) for r in range(world)]
            out = torch.empty(2, 3, dtype=dtype)
            dist.reduce_scatter_tensor(out, big[rank], op=op)
            want = expected_reduction(op, [b[2 * rank:2 * rank + 2] for b in big], dtype)
            close(out, want, dtype, f"reduce_scatter_tensor {dtype}")


def check_all_to_all(rank, world):
    sent = [[data(r, (r + q + 1,), torch.float32, salt=q) for q in range(world)]
            for r in range(world)]
    out = [torch.empty(q + rank + 1) for q in range(world)]
    dist.all_to_all(out, sent[rank])
    for q in range(world):
        close(out[q], as64(sent[q][rank]), torch.float32, "all_to_all")
    x = [data(r, (world * 2, 3), torch.int64) for r in range(world)]
    out = torch.empty(world * 2, 3, dtype=torch.int64)
    dist.all_to_all_single(out, x[rank])
    close(out, np.concatenate([as64(x[q])[2 * rank:2 * rank + 2] for q in range(world)]),
          torch.int64, "all_to_all_single")
    # uneven: rank r sends q + 1 rows to rank q
    splits = [[q + 1 for q in range(world)] for r in range(world)]
    x = [data(r, (sum(splits[r]), 2), torch.float64) for r in range(world)]
    out = torch.empty(world * (rank + 1), 2, dtype=torch.float64)
    dist.all_to_all_single(out, x[rank], output_split_sizes=[rank + 1] * world,
                           input_split_sizes=splits[rank])

    def rows(r):
        start = sum(splits[r][:rank])
        return as64(x[r])[start:start + rank + 1]

    close(out, np.concatenate([rows(r) for r in range(world)]), torch.float64,
          "all_to_all_single uneven")


def check_point_to_point(rank, world):
    right, left = (rank + 1) % world, (rank - 1) % world
    work = dist.isend(data(rank, (2, 3), torch.float32), dst=right)
    t = torch.empty(2, 3)
    assert dist.recv(t, src=left) == left
    work.wait()
    close(t, as64(data(left, (2, 3), torch.float32)), torch.float32, "send/recv")
    t = noncontiguous(torch.zeros(2, 3))
    work = dist.irecv(t)
    dist.send(data(rank, (2, 3), torch.float32, salt=3), dst=right)
    work.wait()
    close(t, as64(data(left, (2, 3), torch.float32, salt=3)), torch.float32, "irecv any")


def check_objects_and_groups(rank, world):
    objs = [None] * world
    dist.all_gather_object(objs, {"rank": rank, "data": list(range(rank))})
    assert objs == [{"rank": r, "data": list(range(r))} for r in range(world)], objs
    lst = ["a", rank] if rank == 0 else [None, None]
    dist.broadcast_object_list(lst, src=0)
    assert lst == ["a", 0], lst
    got = [None] * world if rank == 0 else None
    dist.gather_object(("x", rank), got, dst=0)
    assert rank != 0 or got == [("x", r) for r in range(world)], got
    out = [None]
    dist.scatter_object_list(out, [r * 10 for r in range(world)] if rank == 0 else None, src=0)
    assert out == [rank * 10], out
    w = dist.all_reduce(torch.ones(3), async_op=True)
    assert w.wait() is True and w.is_completed()
    dist.barrier()
    sub = dist.new_group([0, world - 1])
    if rank in (0, world - 1):
        assert dist.get_world_size(sub) == 2
        assert dist.get_rank(sub) == (0 if rank == 0 else 1)
        t = torch.tensor([float(rank)])
        dist.all_reduce(t, group=sub)
        assert t.tolist() == [float(world - 1)]
        dist.broadcast(t, src=world - 1, group=sub)
    else:
        assert sub is dist.GroupMember.NON_GROUP_MEMBER and dist.get_rank(sub) == -1
        assert dist.all_reduce(torch.ones(1), group=sub) is None


def main():
    dist.init_process_group("mpi")
    assert dist.is_initialized() and dist.get_backend() == "mpi"
    rank, world = dist.get_rank(), dist.get_world_size()
    for check in (check_all_reduce, check_reduce_broadcast, check_gathers,
                  check_rooted_list_errors,
                  check_reduce_scatter, check_all_to_all, check_point_to_point,
                  check_objects_and_groups):
        check(rank, world)
    dist.destroy_process_group()
    assert not dist.is_initialized()
    print(f"rank {rank}: OK", flush=True)


main()
