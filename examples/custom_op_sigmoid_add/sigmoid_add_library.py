"""z = sigmoid(x) + y defined from Python with pytorchlite.library (PyTorch's torch.library
API): the schema, a CPU kernel, and the backward registered for autograd."""
import pytorchlite as torch
from pytorchlite.library import Library, register_autograd

lib = Library("myops_py", "DEF")
lib.define("sigmoid_add(Tensor x, Tensor y) -> Tensor")


def sigmoid_add_cpu(x, y):
    return torch.sigmoid(x) + y


lib.impl("sigmoid_add", sigmoid_add_cpu, "CPU")


def setup_context(ctx, inputs, output):
    x, _ = inputs
    ctx.save_for_backward(x)


def backward(ctx, grad):
    (x,) = ctx.saved_tensors
    s = torch.sigmoid(x)
    return grad * s * (1 - s), grad


register_autograd("myops_py::sigmoid_add", backward, setup_context=setup_context, lib=lib)

if __name__ == "__main__":
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = torch.tensor([3.0, 4.0], requires_grad=True)
    torch.ops.myops_py.sigmoid_add(x, y).sum().backward()
    print(x.grad, y.grad)
