"""_C._Reducer's shared buckets (Note [DDP shared-memory buckets]) in one process: W reducers
stand for W ranks whose slots and flag words are ordinary tensors they all see.  A fill
publishes the slot, arrived() waits for every rank's, write_grads sums the slots in rank order
straight into .grad (bit-identical on every rank; through a copy for a strided or missing
.grad), and a fill before the other ranks have read the previous reduction waits, then
raises; bad arguments raise."""
import numpy as np
import pytest

import pytorchlite as torch
from pytorchlite import _C

FLAG_WORDS = 16
BUCKETS = [[3, 2], [1, 0]]


def params_of(rank, dtype):
    gen = np.random.default_rng(rank)
    shapes = [(5, 4), (5,), (3, 5), (3,)]
    out = []
    for s in shapes:
        a = gen.standard_normal(s)
        if dtype.is_complex:
            a = a + 1j * gen.standard_normal(s)
        out.append(torch.tensor(a, dtype=dtype).requires_grad_())
    return out


def loss_of(params, x):
    w1, b1, w2, b2 = params          # no tanh: complex parameters too
    out = (x @ w1.t() + b1) @ w2.t() + b2
    loss = (out * out.conj()).sum() if out.is_complex() else (out * out).sum()
    return loss.real if loss.is_complex() else loss


class Ranks:
    """W reducers over their own parameters, sharing every bucket's slots and flag words."""

    def __init__(self, world, dtype, stall_s=10.0):
        self.world, self.dtype = world, dtype
        self.params = [params_of(r, dtype) for r in range(world)]
        numels = [sum(self.params[0][i].numel() for i in ix) for ix in BUCKETS]
        self.slots = [[torch.zeros(n, dtype=dtype) for _ in range(world)] for n in numels]
        self.flags = [[torch.zeros(FLAG_WORDS, dtype=torch.int64) for _ in range(world)]
                      for _ in BUCKETS]
        self.launched = [[] for _ in range(world)]
        self.reducers = []
        for r in range(world):
            views = [None] * 4
            for b, ix in enumerate(BUCKETS):
                o = 0
                for i in ix:
                    p = self.params[r][i]
                    views[i] = self.slots[b][r][o:o + p.numel()].view(p.shape)
                    o += p.numel()
            red = _C._Reducer(self.params[r], BUCKETS, views, self.launched[r].append, False)
            for b in range(len(BUCKETS)):
                red.share(b, r, self.slots[b], self.flags[b], stall_s)
                red.set_scale(b, 1.0 / world)
            self.reducers.append(red)
        self.x = [torch.tensor(np.random.default_rng(10 + r).standard_normal((6, 4)),
                               dtype=dtype) for r in range(world)]

    def backward(self, r):
        self.reducers[r].prepare()
        loss_of(self.params[r], self.x[r]).backward()

    def finish(self, r, used=None):
        for b in range(len(BUCKETS)):
            assert self.reducers[r].arrived(b)
            self.reducers[r].write_grads(b, None, used)
        self.reducers[r].armed = False


def own_grads(ranks):
    """Each rank's gradients from its own backward, without any reducer."""
    out = []
    for r in range(ranks.world):
        ps = [p.detach().clone().requires_grad_() for p in ranks.params[r]]
        loss_of(ps, ranks.x[r]).backward()
        out.append([p.grad.numpy() for p in ps])
    return out


@pytest.mark.parametrize("world", [2, 3])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex128])
def test_slots_are_summed_into_grad_in_rank_order(world, dtype):
    ranks = Ranks(world, dtype)
    grads = own_grads(ranks)
    for step in range(2):               # the second reduction reuses the slots
        for r in range(world):
            for p in ranks.params[r]:
                p.grad = None
            ranks.backward(r)
            # a rank's slot is filled and published at its bucket's launch; the others' not yet
            assert [b for b in ranks.launched[r][step * 2:]] == [0, 1]
            for b in range(len(BUCKETS)):
                assert ranks.reducers[0].arrived(b) == (r == world - 1)
        for r in range(world):
            ranks.finish(r)
        for i in range(4):
            b = 0 if i in BUCKETS[0] else 1
            # the scaled slots, summed in rank order, in the dtype: the same bits
            parts = [(grads[r][i] * (1.0 / world)).astype(ranks.slots[0][0].numpy().dtype)
                     for r in range(world)]
            want = parts[0]
            for part in parts[1:]:
                want = want + part
            mean = np.mean([grads[r][i] for r in range(world)], axis=0)
            tol = 1e-5 if dtype == torch.float32 else 1e-12
            for r in range(world):
                got = ranks.params[r][i].grad
                assert got.dtype == dtype and got.shape == ranks.params[r][i].shape
                np.testing.assert_allclose(got.numpy(), mean, rtol=tol, atol=tol)
                np.testing.assert_array_equal(got.numpy(), want.reshape(got.shape))
                assert not any(np.shares_memory(got.numpy(), s.numpy())
                               for s in ranks.slots[b])


def test_strided_and_missing_grads_take_a_copy_and_unused_ones_are_kept():
    ranks = Ranks(2, torch.float64)
    grads = own_grads(ranks)
    for r in range(2):
        p = ranks.params[r][0]           # backward accumulates into a transposed tensor
        p.grad = torch.zeros(4, 5, dtype=torch.float64).t()
        ranks.backward(r)
    strided = ranks.params[0][0].grad
    ranks.params[0][2].grad = None       # as after a hook that dropped it
    kept = ranks.params[0][3].grad.clone()
    ranks.finish(0, used=[1, 1, 1, 0])
    mean = [(grads[0][i] + grads[1][i]) / 2 for i in range(4)]
    assert ranks.params[0][0].grad is strided and not strided.is_contiguous()
    np.testing.assert_allclose(strided.numpy(), mean[0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ranks.params[0][2].grad.numpy(), mean[2], rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(ranks.params[0][3].grad.numpy(), kept.numpy())
    np.testing.assert_allclose(ranks.params[0][1].grad.numpy(), mean[1], rtol=1e-12, atol=1e-12)


def test_a_fill_waits_for_the_previous_reads_then_raises():
    ranks = Ranks(2, torch.float64, stall_s=0.05)
    for r in range(2):
        ranks.backward(r)
    ranks.finish(0)                      # rank 1 never reads this reduction
    with pytest.raises(RuntimeError, match="DDP bucket 0: timed out after 0.1 s waiting for "
                                           "the other ranks to read its previous reduction"):
        ranks.backward(0)
    ranks.finish(1)                      # now it has: the next fill goes through
    ranks.backward(0)
    assert ranks.launched[0][-2:] == [0, 1]


def test_shared_off_copies_the_own_slot():
    # with a communication hook DDP turns `shared` off: write_grads copies this rank's slot
    ranks = Ranks(2, torch.float64)
    for red in ranks.reducers:
        red.shared = False
    ranks.backward(0)
    with pytest.raises(IndexError, match="bucket 0 is not a shared bucket"):
        ranks.reducers[0].arrived(0)
    ranks.reducers[0].write_grads(0)
    np.testing.assert_array_equal(ranks.params[0][3].grad.numpy(),
                                  ranks.slots[0][0][:3].numpy())
    assert int(ranks.flags[0][0][0]) == 0          # nothing published


def test_bad_arguments_raise():
    p = torch.zeros(3, requires_grad=True)
    r = _C._Reducer([p], [[0]], [torch.zeros(3)], lambda b: None, False)
    slots = [torch.zeros(3), torch.zeros(3)]
    flags = [torch.zeros(FLAG_WORDS, dtype=torch.int64) for _ in range(2)]
    with pytest.raises(IndexError, match="bucket 0 is not a shared bucket"):
        r.arrived(0)
    with pytest.raises(IndexError, match="bucket 1 out of range"):
        r.arrived(1)
    with pytest.raises(IndexError, match="bucket -1 out of range"):
        r.arrived(-1)
    with pytest.raises(TypeError):
        r.arrived("0")
    for args in ((1, 0, slots, flags, 1.0), (0, 2, slots, flags, 1.0),
                 (0, -1, slots, flags, 1.0), (0, 0, slots[:1], flags[:1], 1.0),
                 (0, 0, slots, flags[:1], 1.0)):
        with pytest.raises(ValueError, match=r"share\(.*expected a bucket index"):
            r.share(*args)
    with pytest.raises(TypeError):
        r.share(0, 0, tuple(slots), flags, 1.0)
    with pytest.raises(TypeError, match="slots must be tensors"):
        r.share(0, 0, [slots[0], 1], flags, 1.0)
    with pytest.raises(TypeError, match="flags must be tensors"):
        r.share(0, 0, slots, [flags[0], None], 1.0)
    for bad_slots, bad_flags in (([torch.zeros(4), slots[1]], flags),
                                 ([slots[0], torch.zeros(3, dtype=torch.float64)], flags),
                                 ([slots[0], torch.zeros(6)[::2]], flags),
                                 (slots, [flags[0], torch.zeros(FLAG_WORDS)]),
                                 (slots, [flags[0], torch.zeros(8, dtype=torch.int64)])):
        with pytest.raises(ValueError, match=r"share\(0\): slot \d must be a contiguous CPU "
                                             "tensor of the bucket's 3 elements"):
            r.share(0, 0, bad_slots, bad_flags, 1.0)
    with pytest.raises(AttributeError, match="can't delete shared"):
        del r.shared
    r.share(0, 1, slots, flags, 1.0)
    assert r.shared and r.arrived(0)         # before any reduction nothing to wait for
    three = slots + [torch.zeros(3)]
    with pytest.raises(ValueError, match="for every bucket the same ranks"):
        r.share(0, 0, three, flags + [flags[0]], 1.0)
