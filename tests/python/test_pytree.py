"""torch.utils._pytree: flatten / unflatten round trips, PyTorch's printed TreeSpec, tree_map
over several trees, the *_only forms, registered classes and the errors.  The printed specs
are torch 2.13's (stored; compared live when torch is installed)."""
import collections

import pytest

import pytorchlite.utils._pytree as pytree
from helpers import torch_ref

P = collections.namedtuple("P", "x y")

TREES = [
    ((1, [2, None], {"b": 4, "a": 5}, collections.OrderedDict(x=1)),
     "TreeSpec(tuple, None, [*,\n  TreeSpec(list, None, [*,\n    *]),\n  TreeSpec(dict, "
     "['b', 'a'], [*,\n    *]),\n  TreeSpec(OrderedDict, ['x'], [*])])", 6, 10),
    (None, "*", 1, 1),
    ([], "TreeSpec(list, None, [])", 0, 1),
    ({}, "TreeSpec(dict, [], [])", 0, 1),
    ([1, (2,)], "TreeSpec(list, None, [*,\n  TreeSpec(tuple, None, [*])])", 2, 4),
    (P(1, [2, 3]), "TreeSpec(namedtuple, <class 'test_pytree.P'>, [*,\n  TreeSpec(list, None, "
                   "[*,\n    *])])", 3, 5),
    (collections.deque([1, 2], maxlen=3), "TreeSpec(deque, 3, [*,\n  *])", 2, 3),
    ({"a": {"b": (1,)}}, "TreeSpec(dict, ['a'], [TreeSpec(dict, ['b'], [TreeSpec(tuple, "
                         "None, [*])])])", 1, 4),
]


@pytest.mark.parametrize("tree, text, leaves, nodes", TREES)
def test_flatten_prints_pytorchs_spec_and_round_trips(tree, text, leaves, nodes):
    flat, spec = pytree.tree_flatten(tree)
    assert repr(spec) == text and spec.num_leaves == leaves == len(flat)
    assert spec.num_nodes == nodes
    back = pytree.tree_unflatten(flat, spec)
    assert back == tree and type(back) is type(tree)


@torch_ref
@pytest.mark.parametrize("tree, text, leaves, nodes", TREES)
def test_the_stored_specs_are_torchs(tree, text, leaves, nodes):
    import torch.utils._pytree as theirs
    assert repr(theirs.tree_structure(tree)) == text


def test_tree_map_and_friends():
    assert pytree.tree_map(lambda x, y: x + y, (1, [2]), (10, [20])) == (11, [22])
    assert pytree.tree_map(lambda x, y: (x, y), (1, 2), ([5], {"a": 1})) == \
        ((1, [5]), (2, {"a": 1}))
    assert pytree.tree_map_only(int, lambda x: -x, [1, "a", 2.0]) == [-1, "a", 2.0]
    assert pytree.tree_all(lambda x: x > 0, [1, 2]) and pytree.tree_any_only(str, len, [1, "a"])
    assert pytree.tree_leaves([1, (2, 3)], is_leaf=lambda x: isinstance(x, tuple)) == [1, (2, 3)]
    seen = []
    assert pytree.tree_map_(seen.append, {"a": [1, 2]}) == {"a": [1, 2]} and seen == [1, 2]
    d = collections.defaultdict(list, {"k": [1]})
    back = pytree.tree_unflatten(*pytree.tree_flatten(d))
    assert back == d and back.default_factory is list
    assert pytree.tree_structure((1, 2)) == pytree.tree_structure((3, 4))
    assert pytree.tree_structure((1, 2)) != pytree.tree_structure([3, 4])


def test_registered_classes_flatten():
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

    pytree.register_pytree_node(Pair, lambda p: ([p.a, p.b], "pair"),
                                lambda c, ctx: Pair(*c))
    try:
        flat, spec = pytree.tree_flatten([Pair(1, (2, 3))])
        assert flat == [1, 2, 3]
        back = pytree.tree_unflatten([4, 5, 6], spec)
        assert back[0].a == 4 and back[0].b == (5, 6)
        with pytest.raises(ValueError, match="already registered as pytree node"):
            pytree.register_pytree_node(Pair, lambda p: ([], None), lambda c, ctx: Pair)
    finally:
        pytree.SUPPORTED_NODES.pop(Pair)


def test_errors():
    with pytest.raises(ValueError, match=r"`leaves` has length 1 but the spec refers to a "
                                         r"pytree that holds 2 items"):
        pytree.tree_unflatten([1], pytree.tree_structure((1, 2)))
    with pytest.raises(ValueError, match="Node type mismatch"):
        pytree.tree_map(lambda a, b: a, (1, 2), [1, 2])
    with pytest.raises(TypeError, match="Expected `treespec` to be an instance of PyTreeSpec "
                                        "but got item of type <class 'int'>."):
        pytree.tree_unflatten([1], 5)
