"""nn.Module semantics against PyTorch: registration, traversal, state_dict keys and order,
load_state_dict errors, repr strings, hooks (full backward hooks included), train/eval,
dtype moves.  Without torch the comparisons are with its stored answers (tests/golden.py)."""
import re
import warnings
from collections import OrderedDict

import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn as nn
import golden
from helpers import torch


def build(lib):
    N = lib.nn

    class Net(N.Module):
        def __init__(self):
            super().__init__()
            self.body = N.Sequential(N.Linear(4, 8), N.ReLU(), N.Linear(8, 3, bias=False))
            self.head = N.ModuleDict({"a": N.Linear(3, 2), "b": N.Identity()})
            self.scale = N.Parameter(lib.ones(3))
            self.register_buffer("count", lib.zeros(1))
            self.register_buffer("tmp", lib.zeros(2), persistent=False)
            self.blocks = N.ModuleList([N.Tanh(), N.Sigmoid()])

        def forward(self, x):
            y = self.body(x) * self.scale
            for b in self.blocks:
                y = b(y)
            return self.head["a"](y)
    return Net()


def test_registration_and_traversal_match_torch():
    def names(m):
        return [[n for n, _ in m.named_parameters()], [n for n, _ in m.named_buffers()],
                [n for n, _ in m.named_modules()], [n for n, _ in m.named_children()],
                list(m.state_dict().keys()),
                [n for n, _ in m.named_parameters(prefix="net", recurse=False)], repr(m)]
    m = build(ptl)
    assert names(m) == golden.answer(lambda: names(build(torch)))
    assert m.get_submodule("body.0") is m.body[0]
    assert m.get_parameter("body.0.weight") is m.body[0].weight
    with pytest.raises(AttributeError, match="has no attribute `nope`"):
        m.get_submodule("body.nope")


def test_shared_parameters_are_listed_once():
    lin = nn.Linear(2, 2)
    seq = nn.Sequential(lin, lin)
    assert len(list(seq.parameters())) == 2
    assert len(list(seq.named_parameters(remove_duplicate=False))) == 4


def test_setattr_rules_and_errors():
    m = nn.Module()
    m.w = nn.Parameter(ptl.ones(2))
    assert "w" in m._parameters
    with pytest.raises(TypeError, match=r"cannot assign 'Tensor' as parameter 'w' \(torch.nn.Parameter or None expected\)"):
        m.w = ptl.ones(2)
    m.w = None
    assert m.w is None
    with pytest.raises(KeyError, match="attribute 'training' already exists"):
        m.register_buffer("training", ptl.zeros(1))
    with pytest.raises(TypeError, match="cannot assign 'int' object to parameter 'p'"):
        m.register_parameter("p", 3)
    with pytest.raises(AttributeError, match="'Module' object has no attribute 'missing'"):
        m.missing
    m.b = nn.Buffer(ptl.zeros(3))
    assert "b" in m._buffers and "b" in m.state_dict()


def test_load_state_dict_strict_and_errors():
    m = build(ptl)
    sd = m.state_dict()
    res = m.load_state_dict(sd)
    assert res.missing_keys == [] and res.unexpected_keys == []
    assert repr(res) == "<All keys matched successfully>"
    bad = OrderedDict(sd)
    del bad["scale"]
    bad["extra"] = ptl.zeros(1)
    with pytest.raises(RuntimeError) as e:
        m.load_state_dict(bad)
    assert str(e.value).startswith("Error(s) in loading state_dict for Net:\n\t"
                                   'Missing key(s) in state_dict: "scale". \n\t'
                                   'Unexpected key(s) in state_dict: "extra". ')
    res = m.load_state_dict(bad, strict=False)
    assert res.missing_keys == ["scale"] and res.unexpected_keys == ["extra"]
    wrong = OrderedDict(sd)
    wrong["scale"] = ptl.zeros(4)
    with pytest.raises(RuntimeError, match=re.escape("size mismatch for scale: copying a param with "
                                                     "shape torch.Size([4]) from checkpoint, the shape "
                                                     "in current model is torch.Size([3]).")):
        m.load_state_dict(wrong)


def test_load_state_dict_prefix_hint():
    m = nn.Linear(2, 2)
    wrapped = {"module." + k: v for k, v in m.state_dict().items()}
    with pytest.raises(RuntimeError, match=r"Hint: the checkpoint's keys carry the prefix 'module\.'"):
        m.load_state_dict(wrapped)


def test_load_state_dict_copies_values():
    a, b = nn.Linear(3, 2), nn.Linear(3, 2)
    b.load_state_dict(a.state_dict())
    assert b.weight.tolist() == a.weight.tolist() and b.bias.tolist() == a.bias.tolist()
    assert b.weight is not a.weight


def test_forward_hooks_and_train_eval():
    m = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    calls = []
    h1 = m.register_forward_pre_hook(lambda mod, args: calls.append("pre"))
    h2 = m.register_forward_hook(lambda mod, args, out: calls.append("post") or out * 0)
    out = m(ptl.ones(1, 2))
    assert calls == ["pre", "post"] and out.tolist() == [[0.0, 0.0]]
    h1.remove()
    h2.remove()
    m(ptl.ones(1, 2))
    assert calls == ["pre", "post"]
    assert m.training and m[0].training
    m.eval()
    assert not m.training and not m[0].training
    m.train()
    assert m[1].training


def test_zero_grad_requires_grad_and_dtype_moves():
    m = nn.Linear(3, 2)
    m(ptl.ones(4, 3)).sum().backward()
    assert m.weight.grad is not None
    m.zero_grad()
    assert m.weight.grad is None
    m.requires_grad_(False)
    assert not m.weight.requires_grad
    m.double()
    assert m.weight.dtype == ptl.float64 and isinstance(m.weight, nn.Parameter)
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point"):
        m.to(ptl.int32)


def test_sequential_container_api():
    s = nn.Sequential(nn.ReLU(), nn.Tanh())
    s.append(nn.Sigmoid())
    s.insert(0, nn.Identity())
    assert [type(x).__name__ for x in s] == ["Identity", "ReLU", "Tanh", "Sigmoid"]
    assert type(s[1:3]).__name__ == "Sequential" and len(s[1:3]) == 2
    del s[0]
    assert [k for k in s._modules] == ["0", "1", "2"]
    with pytest.raises(IndexError, match="index 5 is out of range"):
        s[5]
    with pytest.raises(IndexError, match="index -4 is out of range"):
        s[-4]
    assert s[-1] is s[2] and s[-3] is s[0] and s[True] is s[1]
    with pytest.raises(TypeError, match="'str' object cannot be interpreted as an integer"):
        s["1"]
    # named entries: by position, whatever the keys
    a, b = nn.ReLU(), nn.Tanh()
    named = nn.Sequential(OrderedDict([("1", a), ("0", b)]))
    assert named[0] is a and named[1] is b and named[-1] is b
    ml = nn.ModuleList([nn.ReLU()])
    ml.extend([nn.Tanh()])
    assert len(ml) == 2
    pl = nn.ParameterList([nn.Parameter(ptl.ones(2)), ptl.zeros(3)])
    assert all(isinstance(p, nn.Parameter) for p in pl)
    pd = nn.ParameterDict({"a": ptl.ones(1)})
    assert "a" in pd and isinstance(pd["a"], nn.Parameter)


def test_parameter_repr_matches_torch():
    p = nn.Parameter(ptl.tensor([1.0, 2.0]))
    assert repr(p) == golden.answer(lambda: repr(torch.nn.Parameter(torch.tensor([1.0, 2.0]))))


def parameter_containers(lib):
    """ParameterList and ParameterDict with 0, 1 and 2 entries, float64 and int entries, a
    plain tensor entry (set past __setitem__, which would make it a Parameter) and other
    objects, and both inside a module."""
    nn_, P = lib.nn, lib.nn.Parameter
    out = {"list 0": nn_.ParameterList(), "list 1": nn_.ParameterList([P(lib.ones(2))]),
           "list 2": nn_.ParameterList([P(lib.ones(2, 3)),
                                        P(lib.ones((), dtype=lib.float64))]),
           "list int": nn_.ParameterList([P(lib.ones(4, dtype=lib.int64), requires_grad=False),
                                          lib.zeros(0, 2)])}
    out["list objects"] = nn_.ParameterList([P(lib.ones(1))]).extend([3, "x"])
    out["list tensor"] = nn_.ParameterList([P(lib.ones(1))])
    object.__setattr__(out["list tensor"], "0", lib.ones(2))
    out["dict 0"] = nn_.ParameterDict()
    out["dict 1"] = nn_.ParameterDict({"w": P(lib.ones(2))})
    out["dict 2"] = nn_.ParameterDict({"w": P(lib.ones(2, 3)),
                                       "b": lib.ones(3, dtype=lib.float64)})
    out["dict int"] = nn_.ParameterDict({"i": P(lib.ones(2, dtype=lib.int32),
                                                requires_grad=False)})
    out["dict objects"] = nn_.ParameterDict([("z", P(lib.ones(1))), ("a", 5)])
    out["dict tensor"] = nn_.ParameterDict({"t": P(lib.ones(1))})
    object.__setattr__(out["dict tensor"], "t", lib.ones(2, 2))
    m = nn_.Module()
    m.plist = nn_.ParameterList([P(lib.ones(2))])
    m.pdict = nn_.ParameterDict({"b": P(lib.ones(2)), "a": P(lib.ones(1))})
    out["in a module"] = m
    return out


def test_parameter_container_repr_matches_torch():
    """Module.__repr__ over the containers' extra_repr: one line for one entry, the dtype
    (ParameterList) or the tensor type (ParameterDict), "Tensor containing" for a plain tensor
    and "Object of type" for anything else; a plain dict's keys in sorted order."""
    ours = {k: repr(v) for k, v in parameter_containers(ptl).items()}
    golden.assert_same_results(lambda lib: ours if lib is ptl else
                               {k: repr(v) for k, v in parameter_containers(lib).items()})


def test_parameter_container_behaviour_matches_torch():
    raised = golden._raised     # [exception class name, message], or None

    def run(lib):
        pl = lib.nn.ParameterList([lib.ones(1), 2.5])
        pd = lib.nn.ParameterDict({"b": lib.ones(1), "a": 3})
        return {"list entries": [type(v).__name__ for v in pl] + [len(pl[0:1]), len(pl[::-1])],
                "list errors": [raised(lambda: pl[2]), raised(lambda: pl.extend(lib.ones(2))),
                                raised(lambda: pl(1))],
                "dict keys": [list(pd), list(reversed(pd)), list(pd.copy()),
                              list(pd | lib.nn.ParameterDict({"c": 1}))],
                "dict entries": [type(pd.get("a")).__name__, pd.get("z"),
                                 type(pd.setdefault("c", lib.ones(2))).__name__,
                                 pd.pop("c").shape[0], pd.popitem()[0], len(pd)],
                "dict errors": [raised(lambda: pd[1]), raised(lambda: pd.update(5)),
                                raised(lambda: pd.update([("a", 1, 2)])), raised(lambda: pd(1))]}
    golden.assert_same_results(run)


def test_linear_init_bounds_like_torch():
    import math
    m = nn.Linear(50, 20)
    bound = 1 / math.sqrt(50)
    w = np.array(m.weight.tolist())
    assert np.abs(w).max() <= bound + 1e-7 and np.abs(w).max() > 0.8 * bound
    assert np.abs(np.array(m.bias.tolist())).max() <= bound + 1e-7


# ---- nn.Module full backward hooks ----

def hooked_linear(lib, replace_input=False, x_requires_grad=True):
    m = lib.nn.Linear(3, 2).double()
    with lib.no_grad():
        m.weight.copy_(lib.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]], dtype=lib.float64))
        m.bias.copy_(lib.tensor([0.1, -0.2], dtype=lib.float64))
    log = []

    def pre(mod, go):
        log.append(("pre", mod is m, [g.tolist() for g in go]))
        return (go[0] * 2,)

    def full(mod, gi, go):
        log.append(("full", mod is m, [None if g is None else g.tolist() for g in gi],
                    [g.tolist() for g in go]))
        if replace_input and gi[0] is not None:
            return (gi[0] + 1,)
        return None
    handles = [m.register_full_backward_pre_hook(pre), m.register_full_backward_hook(full)]
    x = lib.tensor([[1.0, 2.0, 3.0], [0.0, -1.0, 1.0]], dtype=lib.float64,
                   requires_grad=x_requires_grad)
    y = m(x)
    (y * lib.tensor([[1.0, -1.0]], dtype=lib.float64)).sum().backward()
    return type(y.grad_fn).__name__, log, x.grad, m.weight.grad.tolist(), handles, m, x


@pytest.mark.parametrize("replace_input", [False, True])
@pytest.mark.parametrize("x_requires_grad", [True, False])
def test_module_full_backward_hooks_match_torch(replace_input, x_requires_grad):
    def run(lib):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            node, log, x_grad, w_grad = hooked_linear(lib, replace_input, x_requires_grad)[:4]
        warned = [str(w.message) for w in caught if "Full backward hook" in str(w.message)]
        return [node, log, x_grad, w_grad, warned]
    got = golden.as_json(run(ptl))
    want = golden.answer(lambda: run(torch))
    assert got[-1] == want[-1] and len(got[-1]) == (0 if x_requires_grad else 1)
    assert got[0] == want[0] == "BackwardHookFunctionBackward"
    assert got[1] == want[1]
    assert (got[2] is None) == (want[2] is None) == (not x_requires_grad)
    assert got[2] == want[2]
    assert got[3] == want[3]


def test_module_full_backward_hook_handles_remove():
    for lib in golden.LIBRARIES:
        _, log, _, _, handles, m, x = hooked_linear(lib)
        for h in handles:
            h.remove()
        log.clear()
        y = m(x)
        assert type(y.grad_fn).__name__ != "BackwardHookFunctionBackward"
        y.sum().backward()
        assert log == []


def test_module_full_backward_hook_wrong_count_raises():
    for lib in golden.LIBRARIES:
        m = lib.nn.Linear(2, 2).double()
        m.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
        x = lib.ones(1, 2, dtype=lib.float64, requires_grad=True)
        with pytest.raises(RuntimeError, match=re.escape(
                "Backward hook returned an invalid number of grad_input, got 2, but expected 1")):
            m(x).sum().backward()


# ---- attribute lookup (Note [Module attribute lookup]) ----

class _WithProperty(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("running", ptl.zeros(2))
        self.inner = nn.Linear(2, 2)

    @property
    def broken(self):
        return self.not_there   # AttributeError inside a property


class _OwnGetattr(nn.Module):
    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return f"fallback {name}"


class _Mixin:
    def __getattr__(self, name):
        return f"mixin {name}"


class _MixedIn(_Mixin, nn.Module):
    pass


class _OwnGetattribute(nn.Module):
    def __getattribute__(self, name):
        if name == "answer":
            return 42
        return super().__getattribute__(name)


def _lookup_table(cls):
    return nn.Module.__getattr__ is getattr(cls, "__getattr__") and \
        ptl._C._module_getattr_slot(cls, nn.Module.__getattr__)


def test_module_attribute_lookup_finds_tables_in_order():
    m = _WithProperty()
    lin = m.inner
    assert _lookup_table(_WithProperty) and _lookup_table(nn.Linear)
    assert isinstance(lin, nn.Linear) and m.running.tolist() == [0.0, 0.0]
    assert lin.weight is lin._parameters["weight"] and lin.bias is lin._parameters["bias"]
    m._parameters["running"] = nn.Parameter(ptl.ones(1))   # parameters come before buffers
    assert m.running.tolist() == [1.0]
    m.__dict__["inner"] = "plain"                           # the instance dict comes first
    assert m.inner == "plain"
    assert hasattr(lin, "weight") and not hasattr(lin, "weights")
    assert getattr(lin, "weights", None) is None


def test_module_attribute_lookup_messages_match_torch():
    for make, name in [(lambda lib: lib.nn.Linear(2, 2), "weights"), (lambda lib: lib.nn.Sequential(), "foo")]:
        golden.assert_raises(lambda: getattr(make(ptl), name), lambda: getattr(make(torch), name), sub=name)
    with pytest.raises(AttributeError, match="'_WithProperty' object has no attribute 'broken'"):
        _WithProperty().broken   # PyTorch's hook names the property, not what it missed


def test_module_attribute_lookup_keeps_overrides():
    assert not _lookup_table(_OwnGetattr) and not _lookup_table(_MixedIn)
    assert not _lookup_table(_OwnGetattribute)
    m = _OwnGetattr()
    m.lin = nn.Linear(2, 2)
    assert isinstance(m.lin, nn.Linear) and m.nothing == "fallback nothing"
    assert _MixedIn().thing == "mixin thing"
    assert _OwnGetattribute().answer == 42

    class Later(nn.Module):
        pass

    assert _lookup_table(Later)
    Later.__getattr__ = lambda self, name: "assigned"        # Python recomputes the slot
    assert Later().anything == "assigned"


def test_module_attribute_lookup_other_tables_and_state():
    import copy
    import pickle

    class Mapping(OrderedDict):
        def __contains__(self, key):
            return key == "w" or super().__contains__(key)

        def __getitem__(self, key):
            return "from mapping" if key == "w" else super().__getitem__(key)

    m = nn.Linear(2, 2)
    object.__setattr__(m, "_parameters", Mapping(m._parameters))
    assert m.w == "from mapping" and isinstance(m.weight, nn.Parameter)
    bare = nn.Linear.__new__(nn.Linear)       # no tables yet (unpickling)
    with pytest.raises(AttributeError, match="'Linear' object has no attribute 'weight'"):
        bare.weight
    lin = nn.Linear(3, 2)
    for twin in (copy.deepcopy(lin), pickle.loads(pickle.dumps(lin))):
        assert twin.weight is twin._parameters["weight"]
        np.testing.assert_array_equal(twin.weight.detach().numpy(), lin.weight.detach().numpy())


def test_global_forward_hooks_run_before_the_modules_own_and_can_be_removed():
    from pytorchlite.nn.modules.module import (register_module_forward_hook,
                                               register_module_forward_pre_hook)
    order = []
    lin = nn.Linear(2, 2)
    lin.register_forward_pre_hook(lambda m, a: order.append("own pre"))
    lin.register_forward_hook(lambda m, a, o: order.append("own post"))
    pre = register_module_forward_pre_hook(lambda m, a: order.append(("pre", type(m).__name__)))
    post = register_module_forward_hook(lambda m, a, o: order.append(("post", tuple(o.shape))))
    lin(ptl.ones(3, 2))
    pre.remove()
    post.remove()
    lin(ptl.ones(3, 2))
    assert order == [("pre", "Linear"), "own pre", ("post", (3, 2)), "own post",
                     "own pre", "own post"]
