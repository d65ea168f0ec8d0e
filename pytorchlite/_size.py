"""pytorchlite.Size: the shape of a tensor, a tuple subclass (torch.Size)."""


class Size(tuple):
    __slots__ = ()

    def __repr__(self):
        return "torch.Size([" + ", ".join(str(s) for s in self) + "])"

    __str__ = __repr__

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, index):
        r = tuple.__getitem__(self, index)
        return Size(r) if isinstance(index, slice) else r

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))

    def __reduce__(self):
        return (Size, (tuple(self),))
