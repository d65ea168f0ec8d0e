"""log_sigmoid as PyTorch's (Note [Log-sigmoid buffer] in src/aten/native/activation.c):
log_sigmoid_forward returns (output, buffer = e^-|x|), both contiguous; log_sigmoid and
F.logsigmoid are its first result, recorded as LogSigmoidBackward0; log_sigmoid_backward(g,
x, buffer) computes g (x < 0 ? 1 : b) / (1 + b) from the buffer it is given, broadcast, all
three of one dtype, and refuses complex and integer tensors with PyTorch's messages."""
import os
import subprocess
import sys

import numpy as np
import pytest

import pytorchlite as ptl
from helpers import ROOT, assert_close, assert_raises_like_torch, make, torch, torch_ref

aten = ptl.ops.aten
F = ptl.nn.functional

SHAPES = [(), (0,), (7,), (3, 4), (2, 0, 3), (2, 3, 4)]
LAYOUTS = ["contiguous", "transposed", "sliced", "expanded"]


def np_log_sigmoid(a):
    return np.minimum(a, 0) - np.log1p(np.exp(-np.abs(a)))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [ptl.float64, ptl.float32])
def test_forward_output_and_buffer(shape, layout, dtype):
    x, a = make(shape, dtype, layout, seed=len(shape), low=-30, high=30)
    a = a.astype(np.float64)
    out, buffer = aten.log_sigmoid_forward(x)
    assert_close(out, np_log_sigmoid(a), dtype=dtype)
    assert_close(buffer, np.exp(-np.abs(a)), dtype=dtype)
    # PyTorch's CPU kernel allocates both contiguous, whatever the input's layout
    assert out.is_contiguous() and buffer.is_contiguous()
    for r in (aten.log_sigmoid(x), F.logsigmoid(x)):
        assert_close(r, np_log_sigmoid(a), dtype=dtype)


@pytest.mark.parametrize("n", [1, 7, 8, 15, 16, 17, 31, 33, 1000, 32767, 32768, 32769, 65537,
                               100003])
@pytest.mark.parametrize("threads", [1, 2])
def test_contiguous_float32_pair_loop_matches_the_two_loops(n, threads):
    """A contiguous float32 input's two results come from one pass that computes e^-|x| once
    (log_sigmoid_pair: whole vectors, the tail and the vectors holding a NaN by the two loops,
    grains of 32768 across threads): the same bits as a strided input's two loops, at and
    across the lane widths and the grain, with NaN, inf and -0 among the values."""
    rng = np.random.RandomState(n)
    a = rng.uniform(-40, 40, size=n).astype(np.float32)
    specials = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 88.0, -104.0], np.float32)
    a[rng.randint(0, n, size=min(n, 7))] = specials[:min(n, 7)]
    x = ptl.tensor(a)
    strided = ptl.tensor(np.repeat(a, 2))[::2]
    saved = ptl.get_num_threads()
    ptl.set_num_threads(threads)
    try:
        out, buffer = aten.log_sigmoid_forward(x)
        ref_out, ref_buffer = aten.log_sigmoid_forward(strided)
    finally:
        ptl.set_num_threads(saved)
    np.testing.assert_array_equal(out.numpy().view(np.uint32), ref_out.numpy().view(np.uint32))
    np.testing.assert_array_equal(buffer.numpy().view(np.uint32),
                                  ref_buffer.numpy().view(np.uint32))
    finite = np.isfinite(a)
    np.testing.assert_allclose(out.numpy()[finite], np_log_sigmoid(a[finite].astype(np.float64)),
                               rtol=2e-6, atol=1e-7)


PAIR_SCRIPT = """
import numpy as np, pytorchlite as ptl
for n in (1, 7, 8, 9, 15, 16, 17, 33, 4099):
    a = np.random.RandomState(n).uniform(-40, 40, size=n).astype(np.float32)
    a[n // 2] = np.nan
    o, b = ptl.ops.aten.log_sigmoid_forward(ptl.tensor(a))
    ro, rb = ptl.ops.aten.log_sigmoid_forward(ptl.tensor(np.repeat(a, 2))[::2])
    assert o.numpy().tobytes() == ro.numpy().tobytes(), n
    assert b.numpy().tobytes() == rb.numpy().tobytes(), n
print(ptl.backends.cpu.get_cpu_capability())
"""


@pytest.mark.parametrize("cap", ["avx2", "default"])
def test_pair_loop_on_each_capability(cap):
    """The AVX2 pair loop (8 lanes) and the portable path (no pair loop) give the two loops'
    bits too; the AVX-512 one runs in-process on a machine that has it."""
    env = dict(os.environ, PTL_CPU_CAPABILITY=cap,
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", PAIR_SCRIPT], env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() in (cap.upper(), "DEFAULT")


@pytest.mark.parametrize("dtype", [ptl.float16, ptl.bfloat16])
def test_forward_half_dtypes(dtype):
    x, a = make((5, 3), dtype, seed=1)
    out, buffer = aten.log_sigmoid_forward(x)
    a = a.astype(np.float64)
    assert_close(out, np_log_sigmoid(a), dtype=dtype)
    assert_close(buffer, np.exp(-np.abs(a)), dtype=dtype)


def test_forward_specials():
    x = ptl.tensor([-1000.0, -50.0, 0.0, -0.0, 50.0, np.inf, -np.inf, np.nan],
                   dtype=ptl.float64)
    out, buffer = aten.log_sigmoid_forward(x)
    np.testing.assert_array_equal(out.numpy()[:2], [-1000.0, -50.0])
    np.testing.assert_array_equal(buffer.numpy(), [0.0, np.exp(-50.0), 1.0, 1.0,
                                                   np.exp(-50.0), 0.0, 0.0, np.nan])
    # float32's vector loops and its portable loops (a stepped view) agree with float64
    xf = ptl.tensor(np.linspace(-120, 120, 2001), dtype=ptl.float32)
    for t in (xf, xf[::3]):
        want = np.exp(-np.abs(t.double().numpy()))
        assert_close(aten.log_sigmoid_forward(t)[1], want, rtol=3e-7, atol=1e-44)


def test_output_overload_writes_the_given_tensors():
    x, a = make((3, 4), ptl.float64, "transposed", seed=3)
    out, buffer = ptl.empty(0, dtype=ptl.float64), ptl.empty(3, 4, dtype=ptl.float64)
    r = aten.log_sigmoid_forward.output(x, output=out, buffer=buffer)
    assert r[0] is out and r[1] is buffer
    assert_close(out, np_log_sigmoid(a))
    assert_close(buffer, np.exp(-np.abs(a)))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_backward_reads_the_buffer(layout):
    g, go = make((3, 4), ptl.float64, layout, seed=4)
    x, a = make((3, 4), ptl.float64, "contiguous", seed=5)
    b = np.random.default_rng(6).uniform(0, 2, (3, 4))
    for buf, bv in ((ptl.tensor(b), b), (ptl.tensor([0.5], dtype=ptl.float64), 0.5),
                    (ptl.ones(4, dtype=ptl.float64), 1.0)):
        want = go * np.where(a < 0, 1.0, bv) / (1.0 + bv)
        assert_close(aten.log_sigmoid_backward(g, x, buf), want, dtype=ptl.float64)
    # with the forward's buffer: g sigmoid(-x)
    buffer = aten.log_sigmoid_forward(x)[1]
    assert_close(aten.log_sigmoid_backward(g, x, buffer), go / (1 + np.exp(a)))


def test_backward_size_and_dtype_errors():
    g, x = ptl.ones(3), ptl.tensor([-2.0, 0.0, 3.0])
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size of "
                                           r"tensor b \(0\) at non-singleton dimension 0"):
        aten.log_sigmoid_backward(g, x, ptl.empty(0))
    assert_raises_like_torch(lambda m: m.ops.aten.log_sigmoid_backward(
        m.ones(3), m.ones(3, dtype=m.float64), m.ones(3)), RuntimeError,
        "Found dtype Float but expected Double")
    assert_raises_like_torch(lambda m: m.ops.aten.log_sigmoid_backward(
        m.ones(3, dtype=m.float64), m.ones(3), m.ones(3)), RuntimeError,
        "Found dtype Double but expected Float")
    assert_raises_like_torch(lambda m: m.ops.aten.log_sigmoid_backward(
        m.ones(3), m.ones(3, dtype=m.int32), m.ones(3)), RuntimeError,
        "Found dtype Float but expected Int")


def test_complex_and_integer_refused():
    z = ptl.tensor([1 + 2j, -1j])
    assert_raises_like_torch(lambda m: m.nn.functional.logsigmoid(m.tensor([1 + 2j, -1j])),
                             NotImplementedError,
                             "\"log_sigmoid_cpu\" not implemented for 'ComplexFloat'")
    assert_raises_like_torch(lambda m: m.ops.aten.log_sigmoid_forward(m.tensor([1, 2])),
                             NotImplementedError,
                             "\"log_sigmoid_cpu\" not implemented for 'Long'")
    assert_raises_like_torch(lambda m: m.ops.aten.log_sigmoid_backward(
        m.ones(2, dtype=m.complex64), m.tensor([1 + 2j, -1j]), m.ones(2, dtype=m.complex64)),
        NotImplementedError, "\"log_sigmoid_backward_cpu\" not implemented for 'ComplexFloat'")
    with pytest.raises(NotImplementedError):
        aten.log_sigmoid(z)


def test_autograd_records_log_sigmoid_forward():
    x = ptl.tensor([-2.0, 0.5, 3.0], dtype=ptl.float64, requires_grad=True)
    for f in (F.logsigmoid, aten.log_sigmoid, lambda t: aten.log_sigmoid_forward(t)[0]):
        y = f(x)
        assert type(y.grad_fn).__name__ == "LogSigmoidBackward0"
        (gx,) = ptl.autograd.grad(y.sum(), x, create_graph=True)
        assert type(gx.grad_fn).__name__ == "LogSigmoidBackwardBackward0"
        assert_close(gx.detach(), 1 / (1 + np.exp(x.detach().numpy())))


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
def test_gradcheck_float64(layout):
    x, _ = make((3, 4), ptl.float64, layout, seed=7)
    x.requires_grad_()
    assert ptl.autograd.gradcheck(F.logsigmoid, (x,))
    assert ptl.autograd.gradgradcheck(F.logsigmoid, (x,))
    # the backward op is linear in grad_output; its self gradient (log_sigmoid'', as
    # PyTorch's) holds for the forward's own buffer only, which gradgradcheck above covers
    g, _ = make((3, 4), ptl.float64, seed=8)
    g.requires_grad_()
    xd = x.detach()
    buffer = aten.log_sigmoid_forward(xd)[1]
    assert ptl.autograd.gradcheck(lambda gg: aten.log_sigmoid_backward(gg, xd, buffer), (g,))
    assert ptl.autograd.gradgradcheck(lambda gg: aten.log_sigmoid_backward(gg, xd, buffer),
                                      (g,))


def test_buffer_is_not_differentiated():
    x = ptl.ones(3, dtype=ptl.float64, requires_grad=True)
    assert_raises_like_torch(lambda m: m.ops.aten.log_sigmoid_backward(
        m.ones(3), m.ones(3, requires_grad=True), m.ones(3, requires_grad=True)), RuntimeError,
        "The function 'log_sigmoid_backward' is not differentiable with respect to argument "
        "'buffer'. This input cannot have requires_grad True.")
    # the forward's buffer is no differentiable output: it has no history
    out, buffer = aten.log_sigmoid_forward(x)
    assert out.requires_grad and not buffer.requires_grad and buffer.grad_fn is None


@torch_ref
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matches_torch(layout, dtype):
    x, a = make((4, 5), getattr(ptl, dtype), layout, seed=9, low=-20, high=20)
    tx = torch.tensor(a)
    out, buffer = aten.log_sigmoid_forward(x)
    tout, tbuffer = torch.ops.aten.log_sigmoid_forward(tx)
    assert_close(out, tout.double().numpy())
    assert_close(buffer, tbuffer.double().numpy())
    assert out.stride() == tuple(tout.stride()) and buffer.stride() == tuple(tbuffer.stride())
    g = np.random.default_rng(10).standard_normal((4, 5)).astype(a.dtype)
    for buf in (buffer, ptl.ones(5, dtype=x.dtype)):
        tbuf = torch.tensor(buf.numpy())
        got = aten.log_sigmoid_backward(ptl.tensor(g), x, buf)
        want = torch.ops.aten.log_sigmoid_backward(torch.tensor(g), tx, tbuf)
        assert_close(got, want.double().numpy())
