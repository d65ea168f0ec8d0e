"""pytorchlite.Size: the shape of a tensor, a tuple subclass written in C (torch.Size; Note
[Size in C] in src/python/size_object.c).  Pickles made when Size lived here name this module,
so it keeps the name."""
from ._C import Size

__all__ = ["Size"]
