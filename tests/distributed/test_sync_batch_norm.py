"""nn.SyncBatchNorm: on 2, 3 and 4 ranks it equals BatchNorm on the global batch
(workers/sync_batch_norm.py: outputs, gradients, running statistics, uneven and empty shards,
a DDP model made by convert_sync_batchnorm); in one process it is BatchNorm; its errors,
and convert_sync_batchnorm's module tree."""
import numpy as np
import pytest

import mpi_job
import pytorchlite as ptl
from helpers import torch, torch_ref
from pytorchlite import nn


@pytest.mark.parametrize("nproc", [2, 3, 4])
def test_equals_batch_norm_on_the_global_batch(nproc):
    rc, out = mpi_job.mpirun(nproc, "sync_batch_norm.py", timeout=180)
    assert rc == 0, out
    assert mpi_job.ranks_ok(out) == list(range(nproc)), out


@pytest.mark.parametrize("shape", [(5, 3), (5, 3, 4), (4, 3, 2, 3), (2, 3, 2, 2, 2)])
def test_without_a_process_group_it_is_batch_norm(shape):
    x = ptl.randn(*shape, dtype=ptl.float64)
    sync, plain = nn.SyncBatchNorm(3).double(), nn.BatchNorm1d(3).double()
    for training in (True, False):
        sync.train(training)
        plain.train(training)
        a, b = sync(x), ptl.nn.functional.batch_norm(
            x, plain.running_mean, plain.running_var, plain.weight, plain.bias, training, 0.1,
            1e-5)
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    np.testing.assert_array_equal(sync.running_mean.numpy(), plain.running_mean.numpy())
    assert int(sync.num_batches_tracked) == 1


def test_errors():
    with pytest.raises(ValueError, match=r"expected at least 2D input \(got 1D input\)"):
        nn.SyncBatchNorm(3)(ptl.zeros(3))
    with pytest.raises(ValueError, match="SyncBatchNorm number of input channels should be "
                       "non-zero"):
        nn.SyncBatchNorm(0)(ptl.zeros(2, 0))


def _tree(lib):
    return lib.nn.Sequential(
        lib.nn.Sequential(lib.nn.Conv2d(1, 4, 3), lib.nn.BatchNorm2d(4), lib.nn.ReLU()),
        lib.nn.BatchNorm1d(4, affine=False, momentum=None), lib.nn.LayerNorm(4))


def test_convert_sync_batchnorm_shares_parameters_and_statistics():
    tree = _tree(ptl)
    tree[0][1].running_mean.fill_(2.0)
    tree.eval()
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(tree)
    bn = converted[0][1]
    assert type(bn) is nn.SyncBatchNorm and type(converted[1]) is nn.SyncBatchNorm
    assert type(converted[2]) is nn.LayerNorm
    assert bn.weight is tree[0][1].weight and bn.running_mean is tree[0][1].running_mean
    assert not bn.training and converted[1].momentum is None and not converted[1].affine
    assert list(converted.state_dict()) == list(_tree(ptl).state_dict())
    single = nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm3d(2, bias=False))
    assert type(single) is nn.SyncBatchNorm and single.bias is None


@torch_ref
def test_repr_and_tree_match_torch():
    ours = nn.SyncBatchNorm.convert_sync_batchnorm(_tree(ptl))
    theirs = torch.nn.SyncBatchNorm.convert_sync_batchnorm(_tree(torch))
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
