"""parameters_to_vector / vector_to_parameters (torch/nn/utils/convert_parameters.py)."""
from ... import _C
from ...autograd.grad_mode import no_grad


def parameters_to_vector(parameters):
    return _C._functions["cat"]([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec, parameters):
    if not isinstance(vec, _C.TensorBase):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    pointer = 0
    with no_grad():
        for p in parameters:
            n = p.numel()
            p.copy_(vec[pointer:pointer + n].view_as(p))
            pointer += n
