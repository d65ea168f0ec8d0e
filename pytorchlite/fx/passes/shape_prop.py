"""torch.fx.passes.shape_prop: ShapeProp runs a GraphModule on example inputs and stores,
for each node whose value holds tensors, a TensorMetadata (shape, dtype, requires_grad,
stride, memory_format, is_quantized, qparams) in node.meta['tensor_meta'], and the value's
type in node.meta['type']."""
from typing import NamedTuple

from ..interpreter import Interpreter
from ..node import map_aggregate

__all__ = ["ShapeProp", "TensorMetadata"]


class TensorMetadata(NamedTuple):
    shape: object
    dtype: object
    requires_grad: bool
    stride: tuple
    memory_format: object
    is_quantized: bool
    qparams: dict


def _extract_tensor_metadata(result):
    import pytorchlite
    memory_format = None
    for fmt in (pytorchlite.contiguous_format, pytorchlite.channels_last,
                pytorchlite.channels_last_3d):
        if result.is_contiguous(memory_format=fmt):
            memory_format = fmt
            break
    return TensorMetadata(result.shape, result.dtype, result.requires_grad, result.stride(),
                          memory_format, False, {})


class ShapeProp(Interpreter):
    """gm's nodes annotated with the metadata of their values: ShapeProp(gm).propagate(*args)."""

    def __init__(self, gm, fake_mode=None):
        super().__init__(gm)
        self.fake_mode = fake_mode

    def run_node(self, n):
        import pytorchlite
        result = super().run_node(n)
        found_tensor = False

        def extract(obj):
            nonlocal found_tensor
            if isinstance(obj, pytorchlite.Tensor):
                found_tensor = True
                return _extract_tensor_metadata(obj)
            return obj
        meta = map_aggregate(result, extract)
        if found_tensor:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args):
        """Runs the module on args, annotating every node; returns its output."""
        return super().run(*args)
