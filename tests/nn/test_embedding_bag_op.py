"""torch.embedding_bag, the ATen op under F.embedding_bag: its four outputs (output,
offset2bag, bag_size, max_indices; Note [embedding_bag's bookkeeping outputs]) against a
NumPy loop of PyTorch's CPU kernel and PyTorch itself (live, or its stored answers:
tests/golden.py) on random bags of every mode, with include_last_offset, per_sample_weights,
padding_idx, int32 / int64 indices and offsets and every float dtype; its gradients against
F.embedding_bag's; and PyTorch's error messages."""
import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn.functional as F
from pytorchlite.autograd import gradcheck
from helpers import torch
import golden


def _np_bags(w, idx, offs, mode, include_last, psw, pad, fast_sum, grad):
    """PyTorch's CPU kernel as a loop: the four outputs as float64 / int64 arrays."""
    n, d = len(idx), w.shape[1]
    nb = max(len(offs) - 1, 0) if include_last else len(offs)
    starts = list(offs[:nb])
    o2b = np.array([sum(1 for s in starts if s <= i) - 1 for i in range(n)], dtype=np.int64)
    ends = starts[1:] + [offs[nb] if include_last else n]
    out = np.zeros((nb, d))
    size = np.zeros(nb, dtype=np.int64)
    arg = np.zeros((nb, d), dtype=np.int64)
    for b in range(nb):
        rows = [i for i in range(starts[b], ends[b]) if idx[i] != pad]
        size[b] = len([i for i in range(starts[b], n if b == nb - 1 else ends[b])
                       if idx[i] != pad])
        for i in rows:
            out[b] += w[idx[i]] * (1.0 if psw is None else psw[i])
        if mode == 1 and rows:
            out[b] /= len(rows)
        if mode == 2 and rows:
            vals = np.array([w[idx[i]] for i in rows])
            out[b] = vals.max(0)
            arg[b] = [idx[rows[j]] for j in vals.argmax(0)]
    if mode == 0:
        size = np.zeros(nb if grad else len(offs), dtype=np.int64)
        return out, (np.zeros(0, np.int64) if fast_sum else o2b), size, size
    return out, o2b, size, (arg if mode == 2 else size)


def _random_case(rng):
    v, d, n = int(rng.integers(1, 8)), int(rng.integers(1, 4)), int(rng.integers(0, 12))
    offs = np.sort(rng.integers(0, n + 1, int(rng.integers(1, 6))))
    offs[0] = 0
    include_last = bool(rng.integers(0, 2))
    if include_last:
        offs = np.append(offs, n)
    mode = int(rng.integers(0, 3))
    return dict(w=rng.normal(size=(v, d)), idx=rng.integers(0, v, n), offs=offs, mode=mode,
                include_last=include_last,
                psw=rng.normal(size=n) if mode == 0 and rng.random() < 0.5 else None,
                pad=None if rng.random() < 0.5 else int(rng.integers(-v, v)),
                dtype=("float32", "float64", "float16", "bfloat16")[rng.integers(0, 4)],
                itype=("int64", "int32")[rng.integers(0, 2)],
                otype=("int64", "int32")[rng.integers(0, 2)],
                grad=bool(rng.integers(0, 2)), transposed=bool(rng.integers(0, 2)))


def _run(lib, c):
    dt = getattr(lib, c["dtype"])
    if c["transposed"]:
        w = lib.tensor(c["w"].T.copy(), dtype=dt).t()
    else:
        w = lib.tensor(c["w"], dtype=dt)
    w.requires_grad_(c["grad"])
    psw = None if c["psw"] is None else lib.tensor(c["psw"], dtype=dt)
    return lib.embedding_bag(w, lib.tensor(c["idx"], dtype=getattr(lib, c["itype"])),
                             lib.tensor(c["offs"], dtype=getattr(lib, c["otype"])), False,
                             c["mode"], False, psw, c["include_last"], c["pad"])


@pytest.mark.parametrize("seed", range(8))
def test_four_outputs_against_numpy_and_torch(seed):
    rng = np.random.default_rng(seed)
    cases = [_random_case(rng) for _ in range(25)]
    for k, c in enumerate(cases):
        got = _run(ptl, c)
        v = c["w"].shape[0]
        pad = None if c["pad"] is None else c["pad"] % v
        w = np.array(ptl.tensor(c["w"], dtype=getattr(ptl, c["dtype"])).double().tolist())
        psw = None if c["psw"] is None else \
            np.array(ptl.tensor(c["psw"], dtype=getattr(ptl, c["dtype"])).double().tolist())
        fast = c["dtype"] != "float64" and pad is None and (not c["transposed"] or v == 1)
        want = _np_bags(w, c["idx"], c["offs"], c["mode"], c["include_last"], psw, pad, fast,
                        c["grad"] or False)
        itype = ptl.int32 if c["itype"] == c["otype"] == "int32" else ptl.int64
        tol = 1e-12 if c["dtype"] == "float64" else 2e-2
        np.testing.assert_allclose(got[0].detach().double().numpy(), want[0], rtol=tol,
                                   atol=tol, err_msg=str(c))
        for g, x in zip(got[1:], want[1:]):
            assert g.dtype == itype and g.tolist() == x.tolist(), (c, g, x)

        def run(lib, c=c):
            return {f"out{i}": t.detach() for i, t in enumerate(_run(lib, c))}
        golden.assert_same_results(run, rtol=tol, atol=tol, prefix=f"{k}-")


def test_gradients_are_f_embedding_bags():
    rng = np.random.default_rng(1)
    w = ptl.tensor(rng.normal(size=(6, 3)), requires_grad=True)
    idx, offs = ptl.tensor([0, 2, 5, 1, 1, 4, 3]), ptl.tensor([0, 2, 2, 5])
    psw = ptl.tensor(rng.normal(size=7), requires_grad=True)
    for mode in range(3):
        assert gradcheck(lambda w: ptl.embedding_bag(w, idx, offs, False, mode)[0], [w])
    assert gradcheck(lambda w, p: ptl.embedding_bag(w, idx, offs, False, 0, False, p, False,
                                                    1)[0], [w, psw])
    ours = ptl.autograd.grad(ptl.embedding_bag(w, idx, offs, mode=1)[0].sum(), [w])[0]
    ref = ptl.autograd.grad(F.embedding_bag(idx, w, offs, mode="mean").sum(), [w])[0]
    assert ours.tolist() == ref.tolist()


def test_errors_against_torch():
    def raises(compare=None, **kw):
        def call(lib):
            args = dict(weight=lib.randn(10, 3), indices=lib.tensor([1, 2, 4, 5]),
                        offsets=lib.tensor([0, 2]), scale_grad_by_freq=False, mode=0,
                        sparse=False, per_sample_weights=None, include_last_offset=False,
                        padding_idx=None)
            args.update({k: v(lib) for k, v in kw.items()})
            return lib.embedding_bag(*args.values())
        golden.assert_raises(lambda: call(ptl), lambda: call(torch), sub=str(raises.n),
                             compare=compare)
        raises.n += 1
    raises.n = 0
    raises(mode=lambda lib: 3)
    raises(mode=lambda lib: 1, per_sample_weights=lambda lib: lib.ones(4))
    raises(per_sample_weights=lambda lib: lib.ones(4, dtype=lib.float64))
    raises(per_sample_weights=lambda lib: lib.ones(5))
    raises(weight=lambda lib: lib.ones(10, 3, dtype=lib.int32))
    raises(weight=lambda lib: lib.ones(10))
    raises(indices=lambda lib: lib.tensor([1.0, 2.0]))
    raises(offsets=lambda lib: lib.tensor([[0, 2]]))
    raises(padding_idx=lambda lib: 10)
    raises(padding_idx=lambda lib: -11)
    for mode in range(3):
        for bad in ([1, 20, -1], [1, -1, 20]):
            raises(indices=lambda lib: lib.tensor(bad), offsets=lambda lib: lib.tensor([0]),
                   mode=lambda lib: mode)
    # PyTorch's message ends with a printed empty tensor ("\n[ torch.LongTensor{} ]")
    raises(offsets=lambda lib: lib.tensor([1, 3]), mode=lambda lib: 1,
           compare=golden.first_line_prefix)
    raises(offsets=lambda lib: lib.tensor([0, 5]), mode=lambda lib: 1)
