"""Memory formats (Note [Memory formats] in src/c10/memory_format.h): the torch.memory_format
objects, the channels-last strides and predicates, the ops that take memory_format=, and the
layout that conv, batch_norm, the pools, upsample and cat give channels-last inputs (Note
[Channels-last at the kernel boundary] in src/aten/native/native.h), against NumPy in float64
and, where PyTorch is installed, against its strides."""
import io
import itertools
import pickle

import numpy as np
import pytest

import pytorchlite as ptl
from helpers import (assert_close, assert_no_leak, assert_raises_like_torch, to_numpy, torch,
                     torch_ref)

F = ptl.nn.functional
CL = ptl.channels_last
CL3 = ptl.channels_last_3d
FORMATS = (ptl.contiguous_format, ptl.preserve_format, ptl.channels_last,
           ptl.channels_last_3d)
# the dims from the innermost out, for the channels-last formats
ORDER = {4: (1, 3, 2, 0), 5: (1, 4, 3, 2, 0)}


# ---- a reference of PyTorch's rules, written from its documentation and c10/core ----

def ref_strides(shape, fmt):
    """Contiguous strides (a size-0 dim counts as 1) or channels-last ones (sizes as they
    are)."""
    if fmt in (CL, CL3):
        st, step = [0] * len(shape), 1
        for d in ORDER[len(shape)]:
            st[d] = step
            step *= shape[d]
        return tuple(st)
    st, step = [], 1
    for s in reversed(shape):
        st.append(step)
        step *= max(s, 1)
    return tuple(reversed(st))


def ref_is_contiguous(shape, strides, fmt):
    if fmt in (CL, CL3):
        if len(shape) != (4 if fmt is CL else 5):
            return False
        expected = 1
        for d in ORDER[len(shape)]:
            if shape[d] != 1:
                if strides[d] != expected:
                    return False
                expected *= shape[d]
        return True
    if np.prod(shape, dtype=np.int64) == 0:
        return True
    expected = 1
    for s, st in zip(reversed(shape), reversed(strides)):
        if s != 1:
            if st != expected:
                return False
            expected *= s
    return True


def ref_suggest(shape, strides):
    """channels_last(_3d) when the strides grow along its order (size-1 dims do not grow the
    bound; a zero C stride, an empty dim and equal N and C strides stay contiguous)."""
    if len(shape) not in ORDER or strides[1] == 0:
        return ptl.contiguous_format
    low = 0
    for d in ORDER[len(shape)]:
        if shape[d] == 0 or strides[d] < low or (d == 0 and low == strides[1]):
            return ptl.contiguous_format
        low = strides[d] * (shape[d] if shape[d] > 1 else 1)
    return CL if len(shape) == 4 else CL3


def channels_last_of(a, fmt=CL):
    """A pytorchlite tensor laid out in fmt holding the values of ndarray a."""
    return ptl.tensor(a).contiguous(memory_format=fmt)


SHAPES_4D = [(2, 3, 4, 5), (2, 1, 4, 5), (2, 3, 1, 1), (1, 3, 1, 1), (2, 3, 1, 5), (0, 3, 4, 5),
             (2, 0, 4, 5), (1, 1, 1, 1), (2, 3, 4, 1), (2, 1, 1, 5), (1, 1, 4, 5)]
SHAPES_5D = [(2, 3, 4, 5, 6), (2, 1, 4, 5, 6), (2, 3, 1, 1, 1), (0, 3, 2, 2, 2)]


# ---- the objects ----

def test_the_four_objects_print_pickle_and_hash_like_torch():
    names = ["contiguous_format", "preserve_format", "channels_last", "channels_last_3d"]
    for f, name in zip(FORMATS, names):
        assert isinstance(f, ptl.memory_format)
        assert repr(f) == str(f) == "torch." + name
        assert pickle.loads(pickle.dumps(f)) is f
        assert getattr(ptl, name) is f
    assert len({f: i for i, f in enumerate(FORMATS)}) == 4
    assert CL == CL and CL != CL3
    with pytest.raises(TypeError, match="cannot create"):
        ptl.memory_format()


@pytest.mark.parametrize("call, msg", [
    (lambda L, x: x.contiguous(memory_format=3),
     "contiguous(): argument 'memory_format' must be torch.memory_format, not int"),
    (lambda L, x: x.contiguous(memory_format="channels_last"),
     "contiguous(): argument 'memory_format' must be torch.memory_format, not str"),
    (lambda L, x: x.clone(memory_format=3),
     "clone(): argument 'memory_format' must be torch.memory_format, not int"),
    (lambda L, x: L.empty(2, 3, memory_format=3),
     "empty(): argument 'memory_format' must be torch.memory_format, not int"),
    (lambda L, x: L.empty_like(x, memory_format=L.float32),
     "empty_like(): argument 'memory_format' must be torch.memory_format, not "),
    (lambda L, x: x.is_contiguous(memory_format=3),
     "is_contiguous(): argument 'memory_format' must be torch.memory_format, not int"),
    (lambda L, x: x.to(memory_format=1),
     "to() received an invalid combination of arguments - got (memory_format=int, )"),
])
def test_anything_else_is_a_type_error_naming_the_argument(call, msg):
    assert_raises_like_torch(lambda L: call(L, L.zeros(2, 3, 4, 5)), TypeError, msg)


# ---- strides and predicates ----

@pytest.mark.parametrize("shape", SHAPES_4D + SHAPES_5D)
def test_contiguous_gives_the_format_strides_and_keeps_the_values(shape):
    fmt = CL if len(shape) == 4 else CL3
    a = np.random.default_rng(0).standard_normal(shape)
    x = ptl.tensor(a)
    y = x.contiguous(memory_format=fmt)
    want = ref_strides(shape, fmt)
    if ref_is_contiguous(shape, x.stride(), fmt):
        assert y is x   # already contiguous in that format: self, as PyTorch
    else:
        assert y.stride() == want
    assert y.is_contiguous(memory_format=fmt)
    assert y.is_contiguous() == ref_is_contiguous(shape, y.stride(), ptl.contiguous_format)
    assert_close(y, a)
    # clone and empty always lay out the format's strides
    assert x.clone(memory_format=fmt).stride() == want
    assert ptl.empty(shape, memory_format=fmt).stride() == want
    assert ptl.empty_like(x, memory_format=fmt).stride() == want
    # and back
    z = y.contiguous()
    assert z.stride() == ref_strides(shape, ptl.contiguous_format) or z is y
    assert_close(z, a)


def layouts_4d():
    """(shape, strides) of every permutation of small 4-d shapes with a size-1 dim or not,
    plus slices and expansions"""
    base = np.zeros((2, 3, 4, 5))
    out = []
    for shape in [(2, 3, 4, 5), (2, 1, 4, 5), (2, 3, 1, 1), (1, 3, 1, 1), (2, 1, 1, 5),
                  (3, 1, 1, 1), (0, 3, 2, 2)]:
        for perm in itertools.permutations(range(4)):
            t = ptl.zeros([shape[p] for p in perm]).permute(*np.argsort(perm))
            out.append(t)
    t = ptl.tensor(base)
    out += [t[:, :, ::2], t[:, ::2], t[..., :1], t[:, :1].expand(2, 3, 4, 5),
            t.permute(0, 2, 3, 1)[:, ::2].permute(0, 3, 1, 2), t.as_strided((2, 3, 1, 1),
                                                                              (3, 1, 1, 1))]
    return out


def test_predicates_follow_pytorchs_rules_on_every_permutation():
    for t in layouts_4d():
        shape, st = tuple(t.shape), t.stride()
        for fmt in (ptl.contiguous_format, CL, CL3):
            assert t.is_contiguous(memory_format=fmt) == ref_is_contiguous(shape, st, fmt), \
                (shape, st, fmt)
        assert t.is_contiguous(memory_format=ptl.preserve_format) == t.is_contiguous()
        assert ptl._C._suggest_memory_format(t) is ref_suggest(shape, st), (shape, st)


def test_ambiguous_shapes_are_contiguous_in_both_formats():
    # C == 1 or H == W == 1: one buffer is both layouts
    for shape in [(2, 1, 4, 5), (2, 3, 1, 1), (1, 1, 1, 1)]:
        x = ptl.zeros(shape)
        assert x.is_contiguous() and x.is_contiguous(memory_format=CL)
    x = ptl.zeros(2, 3, 4, 5)
    assert not x.is_contiguous(memory_format=CL)
    assert not x.contiguous(memory_format=CL).is_contiguous()
    assert not ptl.zeros(3, 4, 5).is_contiguous(memory_format=CL)
    assert not ptl.zeros(2, 3, 4, 5, 6).is_contiguous(memory_format=CL)


@pytest.mark.parametrize("layout", ["transposed", "sliced", "expanded"])
def test_non_contiguous_inputs_copy_into_the_format(layout):
    gen = np.random.default_rng(1)
    a = gen.standard_normal((2, 3, 4, 5))
    x = {"transposed": lambda: ptl.tensor(a.transpose(3, 2, 1, 0).copy()).permute(3, 2, 1, 0),
         "sliced": lambda: ptl.tensor(np.repeat(a, 2, axis=2))[:, :, ::2],
         "expanded": lambda: ptl.tensor(a[:1]).expand(2, 3, 4, 5)}[layout]()
    want = to_numpy(x)
    for op in (lambda t: t.contiguous(memory_format=CL), lambda t: t.clone(memory_format=CL),
               lambda t: t.to(memory_format=CL), lambda t: t.to(ptl.float32,
                                                                memory_format=CL)):
        y = op(x)
        assert y.stride() == (60, 1, 15, 3)
        assert_close(y, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("call, msg", [
    (lambda L: L.zeros(2, 3).contiguous(memory_format=L.channels_last),
     "required rank 4 tensor to use channels_last format"),
    (lambda L: L.zeros(()).contiguous(memory_format=L.channels_last),
     "required rank 4 tensor to use channels_last format"),
    (lambda L: L.zeros(5).clone(memory_format=L.channels_last),
     "required rank 4 tensor to use channels_last format"),
    (lambda L: L.zeros(2, 3, 4, 5).contiguous(memory_format=L.channels_last_3d),
     "required rank 5 tensor to use channels_last_3d format"),
    (lambda L: L.empty(2, 3, 4, 5, 6, memory_format=L.channels_last),
     "required rank 4 tensor to use channels_last format"),
    (lambda L: L.empty(2, 3, memory_format=L.channels_last_3d),
     "required rank 5 tensor to use channels_last_3d format"),
    (lambda L: L.empty(2, 3, memory_format=L.preserve_format),
     "unsupported memory format Preserve"),
    (lambda L: L.empty_like(L.zeros(2, 3), memory_format=L.channels_last),
     "required rank 4 tensor to use channels_last format"),
    (lambda L: L.zeros(2, 3, 4).to(memory_format=L.channels_last),
     "required rank 4 tensor to use channels_last format"),
    (lambda L: L.zeros(4, 5).t().contiguous(memory_format=L.preserve_format),
     "preserve memory format is unsupported by the contiguous operator"),
    (lambda L: L.zeros(2, 3).resize_(2, 3, memory_format=L.channels_last),
     "required rank 4 tensor to use channels_last format"),
    (lambda L: L.zeros(2, 3).resize_(2, 3, 4, 5, memory_format=L.preserve_format),
     "Unsupported memory formatPreserve"),
])
def test_a_format_of_another_rank_is_a_runtime_error(call, msg):
    assert_raises_like_torch(call, RuntimeError, msg)


def test_preserve_format_on_a_contiguous_tensor_is_itself():
    x = ptl.zeros(2, 3)
    assert x.contiguous(memory_format=ptl.preserve_format) is x


# ---- clone, *_like, to, resize_ ----

def test_preserve_keeps_dense_strides_exactly_and_orders_others_by_stride():
    gen = np.random.default_rng(2)
    a = gen.standard_normal((2, 3, 4, 5))
    x = ptl.tensor(a)
    cases = [
        (x.permute(0, 2, 3, 1), None),                        # dense: strides kept
        (ptl.tensor(a[:, :1]).permute(0, 2, 3, 1), None),     # dense, size-1 dim kept too
        (x[:, :, ::2], (30, 10, 5, 1)),                       # not dense: dims' order kept
        (x.permute(0, 2, 3, 1)[:, ::2], (30, 5, 1, 10)),
        (x[:1].expand(2, 3, 4, 5), (60, 20, 5, 1)),           # broadcast dims stay put
        (ptl.zeros(0, 3, 4, 5).contiguous(memory_format=CL), None),   # empty is dense
    ]
    for t, want in cases:
        want = t.stride() if want is None else want
        for make in (lambda t: t.clone(), ptl.empty_like, ptl.zeros_like, ptl.ones_like,
                     ptl.rand_like, ptl.randn_like, lambda t: ptl.full_like(t, 7.0),
                     lambda t: ptl.randint_like(t, 5), lambda t: t.to(ptl.float32),
                     lambda t: ptl.randint_like(t, 1, 5)):
            assert make(t).stride() == want, (t.shape, t.stride(), make)
    assert_close(x.permute(0, 2, 3, 1)[:, ::2].clone(), a.transpose(0, 2, 3, 1)[:, ::2])
    assert_close(ptl.full_like(x, 7.0, memory_format=CL), np.full(a.shape, 7.0))


def test_like_factories_take_an_explicit_format():
    x = ptl.zeros(2, 3, 4, 5).contiguous(memory_format=CL)
    for make in (ptl.empty_like, ptl.zeros_like, ptl.ones_like, ptl.rand_like, ptl.randn_like,
                 lambda t, **k: ptl.full_like(t, 2, **k), lambda t, **k: ptl.randint_like(t, 9, **k)):
        assert make(x, memory_format=ptl.contiguous_format).stride() == (60, 20, 5, 1)
        assert make(x).stride() == (60, 1, 15, 3)
        assert make(ptl.zeros(2, 3, 4, 5), memory_format=CL).stride() == (60, 1, 15, 3)
    assert x.new_zeros((2, 3, 4, 5)).stride() == (60, 20, 5, 1)


def test_to_aliases_only_when_nothing_changes():
    x = ptl.zeros(2, 3, 4, 5)
    y = x.to(memory_format=CL)
    assert y is not x and y.stride() == (60, 1, 15, 3)
    assert y.to(memory_format=CL) is y
    assert y.to(memory_format=ptl.preserve_format) is y
    assert x.to(memory_format=ptl.contiguous_format) is x
    assert y.to(ptl.float64).stride() == (60, 1, 15, 3)            # preserve by default
    assert y.to(ptl.float64, memory_format=ptl.contiguous_format).stride() == (60, 20, 5, 1)
    assert y.to(memory_format=ptl.contiguous_format).stride() == (60, 20, 5, 1)


def test_resize_takes_the_format_strides():
    x = ptl.zeros(2, 3, 4, 5)
    assert x.resize_(2, 3, 4, 5, memory_format=CL).stride() == (60, 1, 15, 3)
    assert x.resize_(4, 3, 2, 2, memory_format=CL).stride() == (12, 1, 6, 3)
    assert x.resize_(4, 3, 2, 2).stride() == (12, 1, 6, 3)   # same sizes: left as it is
    assert x.resize_(2, 2, 2, 2, 2, memory_format=CL3).stride() == (16, 1, 8, 4, 2)
    t = ptl.zeros(1)
    assert ptl.resize_as_(t, x, memory_format=CL3).stride() == (16, 1, 8, 4, 2)
    assert t.resize_as_(ptl.zeros(3, 2), memory_format=ptl.contiguous_format).stride() == (2, 1)


def test_pickle_and_save_keep_channels_last():
    a = np.random.default_rng(3).standard_normal((2, 3, 4, 5))
    for fmt, shape in ((CL, (2, 3, 4, 5)), (CL3, (2, 3, 4, 5, 1))):
        x = channels_last_of(a.reshape(shape), fmt)
        for back in (lambda t: pickle.loads(pickle.dumps(t)), save_load):
            y = back(x)
            assert y.stride() == x.stride()
            assert_close(y, a.reshape(shape))
    x = ptl.tensor(a)
    assert pickle.loads(pickle.dumps(x)).stride() == x.stride()
    assert "tensor(" in repr(channels_last_of(a)) and repr(channels_last_of(a)) == repr(x)


def save_load(t):
    buf = io.BytesIO()
    ptl.save(t, buf)
    buf.seek(0)
    return ptl.load(buf)


# ---- layout propagation through the NN ops ----

def nn_cases():
    w = ptl.tensor(np.random.default_rng(4).standard_normal((4, 3, 3, 3)))
    return {
        "conv2d": lambda x: F.conv2d(x, w, padding=1),
        "conv2d_stride_bias": lambda x: F.conv2d(x, w, ptl.ones(4, dtype=ptl.float64), stride=2),
        "batch_norm": lambda x: F.batch_norm(x, None, None, ptl.ones(3, dtype=ptl.float64),
                                             ptl.zeros(3, dtype=ptl.float64), training=True),
        "relu": F.relu,
        "max_pool2d": lambda x: F.max_pool2d(x, 2),
        "avg_pool2d": lambda x: F.avg_pool2d(x, 2, stride=1),
        "adaptive_avg_pool2d": lambda x: F.adaptive_avg_pool2d(x, (2, 3)),
        "adaptive_avg_pool2d_1": lambda x: F.adaptive_avg_pool2d(x, 1),
        "nearest": lambda x: F.interpolate(x, scale_factor=2, mode="nearest"),
        "bilinear": lambda x: F.interpolate(x, scale_factor=2, mode="bilinear",
                                            align_corners=False),
        "cat_channels": lambda x: ptl.cat([x, 2 * x], 1),
        "add": lambda x: x + 1,
    }


@pytest.mark.parametrize("name", list(nn_cases()))
def test_channels_last_in_channels_last_out_with_the_nchw_values_and_grads(name):
    f = nn_cases()[name]
    a = np.random.default_rng(5).standard_normal((2, 3, 6, 7))
    xn = ptl.tensor(a, requires_grad=True)
    xc = channels_last_of(a).requires_grad_()
    yn, yc = f(xn), f(xc)
    assert yc.is_contiguous(memory_format=CL), yc.stride()
    assert yc.stride() == ref_strides(tuple(yc.shape), CL)
    assert yn.is_contiguous()
    assert_close(yc.detach(), to_numpy(yn.detach()), rtol=1e-12, atol=1e-12)
    g = np.random.default_rng(6).standard_normal(tuple(yn.shape))
    yn.backward(ptl.tensor(g))
    yc.backward(ptl.tensor(g))
    assert xc.grad.stride() == xc.stride()   # AccumulateGrad: the leaf's layout
    assert_close(xc.grad, to_numpy(xn.grad), rtol=1e-12, atol=1e-12)


def test_backward_kernels_lay_out_their_input_gradient_like_the_input():
    A = ptl.ops.aten
    a = np.random.default_rng(7).standard_normal((2, 3, 6, 7))
    xc, xn = channels_last_of(a), ptl.tensor(a)
    w = ptl.randn(4, 3, 3, 3, dtype=ptl.float64)
    go = ptl.randn(2, 4, 6, 7, dtype=ptl.float64)
    for x, want_cl in ((xc, True), (xn, False)):
        gx, gw, _ = A.convolution_backward(go, x, w, [4], [1, 1], [1, 1], [1, 1], False,
                                           [0, 0], 1, [1, 1, 1])
        assert gx.is_contiguous(memory_format=CL) == want_cl
        assert gw.is_contiguous(memory_format=CL) == want_cl
        g = ptl.randn(2, 3, 3, 3, dtype=ptl.float64)
        gi = A.avg_pool2d_backward(g.contiguous(memory_format=CL), x, [2, 2], [2, 2], [0, 0],
                                   False, True, None)
        assert gi.is_contiguous(memory_format=CL) == want_cl
        gi = A._adaptive_avg_pool2d_backward(ptl.randn(2, 3, 2, 3, dtype=ptl.float64), x)
        assert gi.is_contiguous(memory_format=CL) == want_cl
    gi = A.upsample_nearest2d_backward(
        ptl.randn(2, 3, 12, 14, dtype=ptl.float64).contiguous(memory_format=CL), [12, 14],
        [2, 3, 6, 7])
    assert gi.is_contiguous(memory_format=CL) and gi.stride() == (126, 1, 21, 3)


def test_the_boundary_copies_leak_nothing():
    x = ptl.randn(2, 3, 6, 7).contiguous(memory_format=CL).requires_grad_()
    w = ptl.randn(4, 3, 3, 3, requires_grad=True)

    def step():
        y = F.max_pool2d(F.conv2d(x, w, padding=1), 2)
        ptl.cat([y, y], 1).sum().backward()
        x.grad = w.grad = None
    assert_no_leak(step)


def test_conv_follows_a_channels_last_weight_and_3d_formats():
    x = ptl.randn(2, 3, 6, 7)
    w = ptl.randn(4, 3, 3, 3).contiguous(memory_format=CL)
    assert F.conv2d(x, w).stride() == (80, 1, 20, 4)
    x3 = ptl.randn(2, 3, 4, 5, 6, dtype=ptl.float64)
    w3 = ptl.randn(4, 3, 3, 3, 3, dtype=ptl.float64)
    y = F.conv3d(x3.contiguous(memory_format=CL3), w3)
    assert y.is_contiguous(memory_format=CL3)
    assert_close(y, to_numpy(F.conv3d(x3, w3)), rtol=1e-12, atol=1e-12)
    p = F.max_pool3d(x3.contiguous(memory_format=CL3), 2)
    assert p.stride() == ref_strides(tuple(p.shape), CL3)
    assert F.conv1d(ptl.randn(2, 3, 8), ptl.randn(4, 3, 3)).is_contiguous()


@pytest.mark.parametrize("shape", SHAPES_4D)
def test_pointwise_ops_of_dense_operands_keep_their_format(shape):
    """The iterator's one-run set-up (every operand dense in one format, a 0-dim one
    broadcast; Note [TensorIterator]): the values against NumPy in float64, and the result's
    strides those of the inputs' format where the format is unambiguous (no dim of size 0 or
    1; the ambiguous shapes are compared with PyTorch in test_strides_match_torch)."""
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal(shape), rng.standard_normal(shape)
    for fmt in (ptl.contiguous_format, CL):
        x = ptl.tensor(a).contiguous(memory_format=fmt)
        y = ptl.tensor(b).contiguous(memory_format=fmt)
        cases = [(x * 2, a * 2), (2 + x, 2 + a), (x * ptl.tensor(3.0), a * 3.0),
                 (x + y, a + b), (x.float() * y, a.astype(np.float32) * b),
                 (x.clone().add_(y, alpha=-0.5), a - 0.5 * b),
                 (ptl.mul(x, y, out=ptl.empty_like(x)), a * b)]
        for got, want in cases:
            assert_close(got, want, rtol=1e-6, atol=1e-6)
            if min(shape) > 1:
                assert got.stride() == ref_strides(shape, fmt), (shape, fmt, got.stride())


def test_an_unpermuted_empty_result_has_contiguous_strides():
    """As in PyTorch: an output laid out in the dims' own order takes the contiguous strides,
    where a size-0 dim counts as 1; a permuted order the running products of the sizes."""
    x = ptl.zeros(2, 0, 4, 5)
    assert (2 + x).stride() == (20, 20, 5, 1)
    assert (x * ptl.tensor(3.0)).stride() == (20, 20, 5, 1)
    assert (2 + x.transpose(-1, -2)).stride() == (0, 20, 1, 5)
    assert (ptl.zeros(2, 3, 0, 5) + 1).stride() == (15, 5, 5, 1)
    assert (ptl.zeros(3, 0) + 1).stride() == (1, 1)


def test_cat_of_mixed_formats_is_contiguous():
    x = ptl.randn(2, 3, 6, 7)
    c = x.contiguous(memory_format=CL)
    assert ptl.cat([c, x], 1).is_contiguous()
    assert ptl.cat([x, c], 1).is_contiguous()
    assert ptl.cat([c, ptl.randn(2, 1, 6, 7)], 1).is_contiguous()   # C == 1 suggests NCHW
    assert ptl.cat([c, c], 0).stride() == (126, 1, 21, 3)


class SmallCNN(ptl.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = ptl.nn.Conv2d(3, 4, 3, padding=1)
        self.bn = ptl.nn.BatchNorm2d(4)
        self.fc = ptl.nn.Linear(4 * 3 * 3, 5)

    def forward(self, x):
        y = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        return self.fc(y.flatten(1))


def test_a_channels_last_network_has_the_nchw_networks_gradients():
    ptl.manual_seed(0)
    ref = SmallCNN().double()
    net = SmallCNN().double()
    net.load_state_dict(ref.state_dict())
    net.to(memory_format=CL)
    assert net.conv.weight.is_contiguous(memory_format=CL)
    assert not net.conv.weight.is_contiguous()
    assert net.fc.weight.is_contiguous() and net.bn.weight.stride() == (1,)
    a = np.random.default_rng(8).standard_normal((4, 3, 6, 6))
    out_ref = ref(ptl.tensor(a))
    out = net(channels_last_of(a))
    assert_close(out.detach(), to_numpy(out_ref.detach()), rtol=1e-12, atol=1e-12)
    out_ref.square().sum().backward()
    out.square().sum().backward()
    for (name, p), q in zip(net.named_parameters(), ref.parameters()):
        assert p.grad.stride() == p.stride(), name   # the parameter's layout (AccumulateGrad)
        assert_close(p.grad, to_numpy(q.grad), rtol=1e-10, atol=1e-12)


def test_module_to_rejects_a_format_of_another_rank_for_5d_parameters():
    m = ptl.nn.Conv3d(2, 3, 2)
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        m.to(memory_format=CL)
    m.to(memory_format=CL3)
    assert m.weight.is_contiguous(memory_format=CL3)


def test_gradcheck_through_channels_last_conv_and_batch_norm():
    gen = np.random.default_rng(9)
    x = channels_last_of(gen.standard_normal((2, 2, 4, 4))).requires_grad_()
    w = channels_last_of(gen.standard_normal((3, 2, 3, 3))).requires_grad_()
    gamma = ptl.tensor(gen.standard_normal(3), requires_grad=True)

    def f(x, w, gamma):
        y = F.conv2d(x, w, padding=1)
        assert y.is_contiguous(memory_format=CL)
        return F.batch_norm(y, None, None, gamma, None, training=True)
    assert ptl.autograd.gradcheck(f, (x, w, gamma))


def test_jit_constant_round_trip(tmp_path):
    def f(x):
        return x.contiguous(memory_format=ptl.channels_last) * 2
    x = ptl.randn(2, 3, 4, 5)
    traced = ptl.jit.trace(f, (x,))
    path = str(tmp_path / "f.pt")
    ptl.jit.save(traced, path)
    loaded = ptl.jit.load(path)
    y = loaded(x)
    assert y.stride() == (60, 1, 15, 3)
    assert_close(y, to_numpy(x) * 2)


# ---- PyTorch's strides for a table of (op, shape, format) cases ----

STRIDE_CASES = [
    ("contiguous", lambda L, x, f: x.contiguous(memory_format=f)),
    ("clone", lambda L, x, f: x.clone(memory_format=f)),
    ("to", lambda L, x, f: x.to(L.float64, memory_format=f)),
    ("empty_like", lambda L, x, f: L.empty_like(x, memory_format=f)),
    ("clone_of_cl", lambda L, x, f: x.contiguous(memory_format=L.channels_last).clone()),
    ("relu_of_cl", lambda L, x, f: L.nn.functional.relu(x.contiguous(
        memory_format=L.channels_last))),
    ("maxpool_of_cl", lambda L, x, f: L.nn.functional.max_pool2d(
        x.contiguous(memory_format=L.channels_last), 1)),
    ("avgpool_of_cl", lambda L, x, f: L.nn.functional.avg_pool2d(
        x.contiguous(memory_format=L.channels_last), 1)),
    ("adaptive_of_cl", lambda L, x, f: L.nn.functional.adaptive_avg_pool2d(
        x.contiguous(memory_format=L.channels_last), 1)),
    ("conv_of_cl", lambda L, x, f: L.nn.functional.conv2d(
        x.contiguous(memory_format=L.channels_last), L.ones(2, x.shape[1], 1, 1))),
    ("permuted_clone", lambda L, x, f: x.permute(0, 2, 3, 1).clone()),
    # the iterator's one-run set-up (0-dim operands passed over where no dim is 0 or 1)
    ("scalar_times_cl", lambda L, x, f: x.contiguous(memory_format=L.channels_last) * 2),
    ("scalar_plus", lambda L, x, f: 2 + x.contiguous(memory_format=f)),
    ("tensor_0dim_times", lambda L, x, f: x.contiguous(memory_format=f) * L.tensor(3.0)),
    ("scalar_times_permuted", lambda L, x, f: x.permute(0, 2, 3, 1) * 2),
    ("cl_plus_contiguous", lambda L, x, f: x.contiguous(memory_format=L.channels_last) + x),
    ("cast_times_cl", lambda L, x, f: x.contiguous(memory_format=L.channels_last).double() *
     x.contiguous(memory_format=L.channels_last)),
    ("inplace_add_cl", lambda L, x, f: x.contiguous(memory_format=L.channels_last).add_(1)),
]


@torch_ref
@pytest.mark.parametrize("name", [c[0] for c in STRIDE_CASES])
def test_strides_match_torch(name):
    fn = dict(STRIDE_CASES)[name]
    for shape in SHAPES_4D:
        for fmt in ("contiguous_format", "channels_last", "preserve_format"):
            if name == "conv_of_cl" and shape[1] == 0:
                continue   # torch's convolution of zero channels lays out (20, 20, 5, 1)
            try:
                want = fn(torch, torch.zeros(shape), getattr(torch, fmt)).stride()
            except RuntimeError:
                continue   # the op refuses this shape in torch (an empty input to a pool)
            got = fn(ptl, ptl.zeros(shape), getattr(ptl, fmt)).stride()
            assert got == want, (name, shape, fmt, got, want)


@torch_ref
def test_predicates_match_torch():
    for t in layouts_4d():
        tt = torch.zeros(0).as_strided(tuple(t.shape), t.stride()) if t.numel() == 0 else \
            torch.zeros(t.untyped_storage().nbytes() // 4).as_strided(tuple(t.shape),
                                                                       t.stride())
        for fmt in ("contiguous_format", "channels_last", "channels_last_3d"):
            assert t.is_contiguous(memory_format=getattr(ptl, fmt)) == \
                tt.is_contiguous(memory_format=getattr(torch, fmt)), (t.shape, t.stride(), fmt)
        assert ptl.empty_like(t).stride() == torch.empty_like(tt).stride(), \
            (t.shape, t.stride())
