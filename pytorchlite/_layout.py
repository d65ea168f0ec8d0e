"""torch.layout: how a tensor's elements are laid out in memory: `torch.strided` (dense) or
`torch.sparse_coo` (indices and values, Note [Sparse tensors] in src/c10/tensor_impl.h); they
print as PyTorch's do, like the dtypes (docs/decisions.md, "Printed names say `torch.`")."""


class layout:
    """A memory layout (torch.layout); its instances are fixed: torch.strided and
    torch.sparse_coo."""

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
sparse_coo = layout._make("sparse_coo")
