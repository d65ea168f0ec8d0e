"""torch.layout: how a tensor's elements are laid out in memory.  Every pytorchlite tensor is
dense and strided, so `torch.strided` is the one layout; it prints as PyTorch's does, like
the dtypes (docs/decisions.md, "Printed names say `torch.`")."""


class layout:
    """A memory layout (torch.layout); its instances are fixed: torch.strided."""

    __slots__ = ("_name",)

    def __new__(cls, *args, **kwargs):
        raise TypeError("cannot create 'torch.layout' instances")

    @classmethod
    def _make(cls, name):
        self = object.__new__(cls)
        object.__setattr__(self, "_name", name)
        return self

    def __setattr__(self, name, value):
        raise AttributeError(f"'torch.layout' object attribute '{name}' is read-only")

    def __repr__(self):
        return "torch." + self._name

    def __reduce__(self):
        return self._name


strided = layout._make("strided")
