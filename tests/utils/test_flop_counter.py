"""FlopCounterMode (pytorchlite.utils.flop_counter): the formulas against hand counts, the
module hierarchy, the printed table, and PyTorch's counts for the same models (torch_ref)."""
import importlib

import pytest

import pytorchlite as ptl
from pytorchlite.utils.flop_counter import FlopCounterMode, register_flop_formula
from helpers import torch, torch_ref

aten = ptl.ops.aten


def count(fn, lib=ptl):
    counter = importlib.import_module(lib.__name__ + ".utils.flop_counter")
    with counter.FlopCounterMode(display=False) as fc:
        fn()
    return fc


def by_name(counts):
    """{module: {"aten.mm": n}}: op packets keyed by their str, so both libraries compare."""
    return {mod: {str(op): n for op, n in ops.items()} for mod, ops in counts.items()}


@pytest.mark.parametrize("m,k,n", [(3, 4, 5), (1, 1, 1), (0, 4, 5), (7, 0, 2)])
def test_mm_and_addmm(m, k, n):
    a, b, bias = ptl.randn(m, k), ptl.randn(k, n), ptl.randn(n)
    assert count(lambda: ptl.mm(a, b)).get_total_flops() == 2 * m * k * n
    assert count(lambda: ptl.addmm(bias, a, b)).get_total_flops() == 2 * m * k * n


def test_bmm_baddbmm_and_matmul():
    a, b = ptl.randn(3, 4, 5), ptl.randn(3, 5, 6)
    assert count(lambda: ptl.bmm(a, b)).get_total_flops() == 2 * 3 * 4 * 5 * 6
    assert count(lambda: ptl.baddbmm(ptl.randn(3, 4, 6), a, b)).get_total_flops() == 720
    # matmul decomposes before the mode sees it: a batched product is bmm; a matrix-vector
    # one is mv, which has no formula (as in PyTorch)
    fc = count(lambda: ptl.matmul(a.unsqueeze(0), b))
    assert by_name(fc.get_flop_counts())["Global"] == {"aten.bmm": 720}
    m, v = ptl.randn(4, 5), ptl.randn(5)
    assert count(lambda: m @ v).get_flop_counts() == {}


@pytest.mark.parametrize("transposed", [False, True])
def test_convolution_and_its_backward(transposed):
    x = ptl.randn(2, 3, 7, 6, requires_grad=True)
    if transposed:
        conv = ptl.nn.ConvTranspose2d(3, 4, (3, 2), stride=2)
    else:
        conv = ptl.nn.Conv2d(3, 4, (3, 2), stride=2, padding=1)
    fc = count(lambda: conv(x).sum().backward())
    counts = by_name(fc.get_flop_counts())["Global"]
    out = conv(x).shape
    grid = x.shape[2:] if transposed else out[2:]
    forward = 2 * 2 * grid[0] * grid[1] * 3 * 2 * 3 * 4
    assert counts["aten.convolution"] == forward
    # input and weight gradients, each as many multiply-adds as the forward
    assert counts["aten.convolution_backward"] == 2 * forward


def test_fused_sdpa_forward_and_backward():
    # equal head dims: the fused CPU kernel and its backward take the call
    q = ptl.randn(2, 3, 5, 4, requires_grad=True)
    k = ptl.randn(2, 3, 6, 4, requires_grad=True)
    v = ptl.randn(2, 3, 6, 4, requires_grad=True)
    fc = count(lambda: ptl.nn.functional.scaled_dot_product_attention(q, k, v).sum().backward())
    counts = by_name(fc.get_flop_counts())["Global"]
    bh, s_q, s_k, d = 2 * 3, 5, 6, 4
    product = 2 * bh * s_q * s_k * d     # each of q k^T, p v, and the backward's five
    assert counts == {"aten._scaled_dot_product_flash_attention_for_cpu": 2 * product,
                      "aten._scaled_dot_product_flash_attention_for_cpu_backward": 5 * product}


@torch_ref
def test_composite_sdpa_matches_torch():
    # a value head dim unlike the query's: both libraries take the math path (bmm)
    def run(lib):
        lib.manual_seed(0)
        q = lib.randn(2, 3, 5, 4, requires_grad=True)
        k = lib.randn(2, 3, 6, 4, requires_grad=True)
        v = lib.randn(2, 3, 6, 7, requires_grad=True)
        fc = count(lambda: lib.nn.functional.scaled_dot_product_attention(q, k, v).sum()
                   .backward(), lib)
        return by_name(fc.get_flop_counts())

    ours = run(ptl)
    assert ours == run(torch)
    assert ours["Global"] == {"aten.bmm": 3 * (2 * 6 * 5 * 4 * 6 + 2 * 6 * 5 * 6 * 7)}


def test_convolution_backward_without_the_input_gradient():
    # the first layer's input needs no gradient: convolution_backward returns an undefined
    # grad_input (None to the mode), and only the weight gradient counts
    conv = ptl.nn.Conv2d(2, 3, 3)
    x = ptl.randn(1, 2, 5, 5)
    counts = by_name(count(lambda: conv(x).sum().backward()).get_flop_counts())["Global"]
    assert counts["aten.convolution_backward"] == counts["aten.convolution"] == \
        2 * 1 * 3 * 3 * 3 * 3 * 3 * 2
    assert conv.weight.grad is not None and x.grad is None


def test_module_hierarchy_and_table(capsys):
    ptl.manual_seed(0)
    net = ptl.nn.Sequential(ptl.nn.Linear(4, 8), ptl.nn.ReLU(), ptl.nn.Linear(8, 2))
    x = ptl.randn(5, 4)
    with FlopCounterMode() as fc:
        net(x).sum().backward()
    counts = by_name(fc.get_flop_counts())
    assert counts["Sequential.0"] == {"aten.addmm": 2 * 5 * 4 * 8, "aten.mm": 2 * 5 * 4 * 8}
    assert counts["Sequential.2"]["aten.addmm"] == 2 * 5 * 8 * 2
    assert counts["Global"] == counts["Sequential"]
    assert fc.get_total_flops() == sum(counts["Global"].values())
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["Module", "FLOP", "%", "Total"]
    assert table[2].startswith("Sequential ") and table[2].endswith("100.00%")
    assert any(line.startswith(" Sequential.0") for line in table)


def test_custom_mapping_and_register_errors():
    fc = FlopCounterMode(display=False, custom_mapping={aten.neg: lambda *a, **k: 7})
    with fc:
        ptl.ones(3).neg()
    assert fc.get_total_flops() == 7
    with pytest.raises(RuntimeError, match="duplicate registrations for aten.mm"):
        register_flop_formula(aten.mm)(lambda *a, **k: 0)
    with pytest.raises(ValueError, match="expected each target to be OpOverloadPacket"):
        register_flop_formula(aten.mm.default)(lambda *a, **k: 0)


def conv_mlp(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Conv2d(3, 4, 3, padding=1), lib.nn.ReLU(),
                             lib.nn.Conv2d(4, 2, 3, stride=2), lib.nn.Flatten(),
                             lib.nn.Linear(2 * 2 * 2, 6), lib.nn.Tanh(), lib.nn.Linear(6, 3))


@torch_ref
@pytest.mark.parametrize("input_grad", [True, False])
def test_counts_match_torch_for_a_conv_net_forward_and_backward(input_grad):
    def run(lib):
        net = conv_mlp(lib)
        x = lib.randn(2, 3, 6, 6, requires_grad=input_grad)
        fc = count(lambda: net(x).pow(2).sum().backward(), lib)
        return by_name(fc.get_flop_counts()), fc.get_total_flops()

    assert run(ptl) == run(torch)


@torch_ref
def test_counts_match_torch_for_batched_matmul_and_transposed_conv():
    def run(lib):
        lib.manual_seed(0)
        conv = lib.nn.ConvTranspose1d(3, 5, 4, stride=3, groups=1)
        a = lib.randn(4, 2, 3, 5, requires_grad=True)
        b = lib.randn(4, 2, 5, 6, requires_grad=True)
        x = lib.randn(2, 3, 9, requires_grad=True)

        def body():
            (a @ b).sum().backward()
            lib.baddbmm(lib.randn(2, 3, 6), a[0], b[0]).sum().backward()
            conv(x).sum().backward()
        return by_name(count(body, lib).get_flop_counts())

    assert run(ptl) == run(torch)
