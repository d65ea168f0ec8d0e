"""DDP's gradient buckets: distributed._compute_bucket_assignment_by_size against PyTorch's, and
the layout DDP takes from it (Note [DDP reducer]).  Pure functions: no MPI needed."""
import pytest

import pytorchlite as ptl
import pytorchlite.distributed as dist
from helpers import torch, torch_ref
from pytorchlite.nn.parallel.distributed import _buckets

F32, F64, F16 = ptl.float32, ptl.float64, ptl.float16
CASES = [
    # (numels, dtypes, limits, sparse)
    ([100, 100, 1000], [F32] * 3, [500], ()),
    ([100, 100, 1000, 1000, 10], [F32, F64, F32, F64, F32], [500, 5000], ()),
    ([125, 1, 125, 250], [F32] * 4, [500, 1000], ()),                # exactly at a limit
    ([10, 10, 10], [F16] * 3, [20, 40], ()),
    ([3], [F32], [1 << 62], ()),
    ([100, 100, 1000], [F32] * 3, [500], (False, True, False)),
    ([5, 0, 7], [F32] * 3, [0], ()),                                 # a zero limit, a size-0
]


@pytest.mark.parametrize("numels, dtypes, limits, sparse", CASES)
def test_assignment(numels, dtypes, limits, sparse):
    tensors = [ptl.zeros(n, dtype=d) for n, d in zip(numels, dtypes)]
    buckets, caps = dist._compute_bucket_assignment_by_size(tensors, limits, sparse)
    # every tensor exactly once, one dtype per bucket, ordered by smallest index
    assert sorted(i for b in buckets for i in b) == list(range(len(tensors)))
    assert all(len({tensors[i].dtype for i in b}) == 1 for b in buckets)
    assert [min(b) for b in buckets] == sorted(min(b) for b in buckets)
    assert len(caps) == len(buckets)


@torch_ref
@pytest.mark.parametrize("numels, dtypes, limits, sparse", CASES)
def test_assignment_matches_torch(numels, dtypes, limits, sparse):
    ours = [ptl.zeros(n, dtype=d) for n, d in zip(numels, dtypes)]
    theirs = [torch.zeros(n, dtype=getattr(torch, str(d).split(".")[1]))
              for n, d in zip(numels, dtypes)]
    expected = torch.distributed._compute_bucket_assignment_by_size(theirs, limits,
                                                                      list(sparse))
    got = dist._compute_bucket_assignment_by_size(ours, limits, sparse)
    assert (got[0], got[1]) == (list(expected[0]), list(expected[1]))


@torch_ref
def test_first_bucket_bytes_match_torch():
    assert dist._DEFAULT_FIRST_BUCKET_BYTES == torch.distributed._DEFAULT_FIRST_BUCKET_BYTES


def test_bad_arguments():
    t = [ptl.zeros(3)]
    with pytest.raises(ValueError, match="at least one tensor"):
        dist._compute_bucket_assignment_by_size([], [10])
    with pytest.raises(ValueError, match="non-empty and non-negative"):
        dist._compute_bucket_assignment_by_size(t, [])
    with pytest.raises(ValueError, match="non-empty and non-negative"):
        dist._compute_bucket_assignment_by_size(t, [-1])
    with pytest.raises(ValueError, match="2 entries for 1 tensors"):
        dist._compute_bucket_assignment_by_size(t, [10], [True, False])


def test_ddp_layout_starts_with_a_small_bucket():
    # an MLP 784-512-256-10 (2.1 MB of float32 gradients) with the default cap: the last two
    # layers (538 KB) and the first layer's bias reach 1 MiB with the first weight, which is
    # then the first bucket's last tensor; with one limit everything is one bucket
    params = [ptl.zeros(512, 784), ptl.zeros(512), ptl.zeros(256, 512), ptl.zeros(256),
              ptl.zeros(10, 256), ptl.zeros(10)]
    small_first = _buckets(params, [dist._DEFAULT_FIRST_BUCKET_BYTES, 25 << 20])
    assert [b.indices for b in small_first] == [[5, 4, 3, 2, 1, 0]]
    wide = params + [ptl.zeros(512, 512), ptl.zeros(512)]           # a fourth layer after it
    layout = _buckets(wide, [dist._DEFAULT_FIRST_BUCKET_BYTES, 25 << 20])
    assert [b.indices for b in layout] == [[7, 6], [5, 4, 3, 2, 1, 0]]
    assert [b.flat.numel() for b in layout] == [512 * 512 + 512,
                                                sum(p.numel() for p in params)]
    assert [b.indices for b in _buckets(wide, [25 << 20])] == [[7, 6, 5, 4, 3, 2, 1, 0]]
