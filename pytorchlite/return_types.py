"""Named tuples returned by operators with named returns, e.g. max(dim) -> (values, indices).
Printed as PyTorch prints them: torch.return_types.max(values=..., indices=...)."""
from . import _C


def _make(name, fields):
    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(fields, self))
        return f"torch.return_types.{name}(\n{body})"

    def __new__(cls, *args):
        # PyTorch's structseq takes one sequence of the fields (torch.return_types.max((v, i)),
        # or a generator of them); the values one by one are accepted too
        if len(args) == 1 and len(fields) > 1:
            args = tuple(args[0])
            if len(args) != len(fields):
                raise TypeError(f"torch.return_types.{name}() takes a {len(fields)}-sequence "
                                f"({len(args)}-sequence given)")
        return tuple.__new__(cls, args)

    ns = {"__slots__": (), "__new__": __new__, "__repr__": __repr__, "_fields": fields,
          "__module__": __name__}
    for i, f in enumerate(fields):
        ns[f] = property(lambda self, i=i: tuple.__getitem__(self, i))
    return type(name, (tuple,), ns)


for _name, _fields in _C._named_returns:
    if _name not in globals():
        globals()[_name] = _make(_name, _fields)
        _C._return_types[_name] = globals()[_name]

# returned by composites of pytorchlite/linalg.py rather than operators
linalg_lstsq = _make("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))
linalg_eig = _make("linalg_eig", ("eigenvalues", "eigenvectors"))
qr = _make("qr", ("Q", "R"))
geqrf = _make("geqrf", ("a", "tau"))
triangular_solve = _make("triangular_solve", ("solution", "cloned_coefficient"))
lu_unpack = _make("lu_unpack", ("P", "L", "U"))
linalg_lu = _make("linalg_lu", ("P", "L", "U"))
histogram = _make("histogram", ("hist", "bin_edges"))
histogramdd = _make("histogramdd", ("hist", "bin_edges"))
