"""What every CUDA program touches before any kernel: size-0 tensors (no device block, as
cudaMalloc of 0 bytes), reading values on the host (item, tolist, int, float, bool, index:
a copy and a wait, as in PyTorch, while .numpy() stays an error), equal, the views that
touch no data (diagonal, unfold), a move's gradient going back to the input's device, and
resize_, out= arguments and set_ on device storage (a growing storage copies its bytes on
the device).
The first GPU run (tools/gpu_check.sh) found each of these broken; they skip without a
device."""
import numpy as np
import pytest

import pytorchlite as ptl
from device_required import pytestmark, require_device  # noqa: F401


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64, ptl.int64, ptl.bool,
                                   ptl.float16])
def test_size_0_tensors_move_and_compute_on_the_device(dtype):
    x = ptl.zeros(0, 5, dtype=dtype)
    d = x.cuda()
    assert d.device.type == "cuda" and d.shape == (0, 5) and d.data_ptr() == 0
    back = d.cpu()
    assert back.shape == (0, 5) and back.dtype == dtype
    e = ptl.empty(0, device="cuda", dtype=dtype)
    assert e.numel() == 0 and e.cpu().tolist() == []
    assert ptl.cat([e, ptl.ones(3, device="cuda", dtype=dtype)]).cpu().tolist() == \
        ptl.ones(3, dtype=dtype).tolist()
    assert d.clone().shape == (0, 5) and d.t().contiguous().shape == (5, 0)


def test_values_are_read_on_the_host_with_a_copy():
    x = ptl.tensor([[1.5, -2.0], [3.25, 0.0]], device="cuda")
    assert x.tolist() == [[1.5, -2.0], [3.25, 0.0]]
    assert x.t().tolist() == [[1.5, 3.25], [-2.0, 0.0]]
    assert x[1, 0].item() == 3.25 and float(x[0, 1]) == -2.0 and int(x[1, 0]) == 3
    assert bool(x[0, 0]) and not bool(x[1, 1])
    n = ptl.tensor([4, 7], device="cuda")
    assert [10, 20, 30, 40, 50, 60, 70, 80][n[1]] == 80 and n.tolist() == [4, 7]
    assert ptl.tensor(True, device="cuda").item() is True
    loss = (ptl.ones(3, device="cuda", requires_grad=True) * 2).sum()
    assert loss.item() == 6.0 and loss.requires_grad
    with pytest.raises(TypeError, match=r"^can't convert cuda:0 device type tensor to numpy\. "
                                        r"Use Tensor\.cpu\(\) to copy the tensor to host memory "
                                        r"first\.$"):
        x.numpy()
    with pytest.raises(RuntimeError, match="a Tensor with 4 elements cannot be converted to "
                                           "Scalar"):
        x.item()
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value is "
                                           "ambiguous"):
        bool(x)


def test_equal_on_the_device():
    a = ptl.arange(12.0).reshape(3, 4)
    assert ptl.equal(a.cuda(), a.clone().cuda())
    assert ptl.equal(a.t().cuda(), a.t().contiguous().cuda())
    b = a.clone()
    b[2, 3] = -1.0
    assert not ptl.equal(a.cuda(), b.cuda())
    assert not ptl.equal(a.cuda(), a[:2].cuda())           # sizes differ: no broadcasting
    nan = ptl.tensor([float("nan")])
    assert not ptl.equal(nan.cuda(), nan.cuda())
    assert ptl.equal(ptl.zeros(0, device="cuda"), ptl.zeros(0, device="cuda"))


def test_diagonal_and_unfold_are_views_on_the_device():
    rng = np.random.default_rng(3)
    x = ptl.tensor(rng.standard_normal((5, 6, 7)))
    d = x.cuda()
    for args in ((0, 0, 1), (2, 1, 2), (-1, 0, 2)):
        got = ptl.diagonal(d, *args)
        assert got.device.type == "cuda" and got.data_ptr() >= d.data_ptr()
        np.testing.assert_array_equal(got.cpu().numpy(), ptl.diagonal(x, *args).numpy())
    got = d.unfold(2, 3, 2)
    np.testing.assert_array_equal(got.cpu().numpy(), x.unfold(2, 3, 2).numpy())
    g = d.clone().requires_grad_(True)
    ptl.diagonal(g, 1, 1, 2).sum().backward()
    want = ptl.zeros(5, 6, 7)
    ptl.diagonal(want, 1, 1, 2).fill_(1.0)
    np.testing.assert_array_equal(g.grad.cpu().numpy(), want.numpy())


def test_a_moves_gradient_goes_back_to_the_inputs_device():
    x = ptl.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (x.cuda() * ptl.tensor([2.0, 3.0, 4.0], device="cuda")).sum().backward()
    assert x.grad.device.type == "cpu"
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 3.0, 4.0])
    y = ptl.tensor([1.0, 2.0], device="cuda", requires_grad=True)
    (y.cpu().double() ** 2).sum().backward()
    assert y.grad.device.type == "cuda" and y.grad.dtype == ptl.float32
    assert y.grad.tolist() == [2.0, 4.0]


def test_resize_and_out_arguments_grow_device_storage_keeping_its_bytes():
    x = ptl.arange(6.0, device="cuda")
    x.resize_(2, 5)                               # grows: the first 6 values stay
    assert x.shape == (2, 5) and x.reshape(-1)[:6].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    x.resize_(3)
    assert x.tolist() == [0.0, 1.0, 2.0]
    y = ptl.empty(0, device="cuda").resize_as_(ptl.ones(4, 2))
    assert y.shape == (4, 2) and y.device.type == "cuda"
    out = ptl.ones(3, device="cuda")
    a = ptl.arange(5.0, device="cuda")
    ptl.add(a, a, out=out)                        # resized from 3 to 5 elements
    assert out.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0]


def test_set_shares_device_storage_and_refuses_another_device():
    src = ptl.arange(4.0, device="cuda")
    x = ptl.empty(0, device="cuda")
    assert x.set_(src) is x and x.tolist() == [0.0, 1.0, 2.0, 3.0]
    x[0] = 9.0
    assert src[0].item() == 9.0
    with pytest.raises(RuntimeError, match=r'^Attempted to set the storage of a tensor on device '
                                           r'"cpu" to a storage on different device "cuda:0"\.  '
                                           r'This is no longer allowed; the devices must match\.$'):
        ptl.empty(0).set_(src)


class Logged(ptl.Tensor):
    calls = []

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        cls.calls.append(getattr(func, "__name__", str(func)))
        return super().__torch_function__(func, types, args, kwargs or {})


def test_a_subclass_of_a_device_tensor_keeps_its_type_and_device():
    base = ptl.arange(6, dtype=ptl.float32).reshape(2, 3)
    x = base.cuda().as_subclass(Logged)
    Logged.calls.clear()
    results = [x + 1, 2 * x, x @ x.t(), x[1], x.sum(1), ptl.relu(x - 2)]
    assert Logged.calls[:2] == ["add", "mul"]
    for r, want in zip(results, [base + 1, 2 * base, base @ base.t(), base[1], base.sum(1),
                                 ptl.relu(base - 2)]):
        assert type(r) is Logged and r.device.type == "cuda"
        assert r.cpu().as_subclass(ptl.Tensor).tolist() == want.tolist()
    y = x.clone()
    y += 1
    assert type(y) is Logged and y.device.type == "cuda" and y.cpu().tolist() == (base + 1).tolist()
