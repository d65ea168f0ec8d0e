"""pytorchlite.onnx (torch.onnx): export a traced model to an ONNX file (Note [ONNX export]).
Needs the optional `onnx` package (and `onnxruntime` for verify=True): the `onnx` extra."""
from ._export import export

__all__ = ["export"]
