"""The schema-driven functions: one per operator name of src/aten/ops.def (flag F).

They are C objects (see src/python/arg_parse.c, Note [Binding from schemas]); this module
only exposes them under their PyTorch names."""
from . import _C

__all__ = sorted(_C._functions)
globals().update(_C._functions)
