"""torch.sparse: products and reductions of sparse COO tensors.  Mirrors torch/sparse/__init__.py.

The kernels live in src/aten/native/sparse.c (Note [Sparse tensors] in
src/c10/tensor_impl.h); these functions are the namespace PyTorch users call them through."""
from .. import _C

__all__ = ["addmm", "mm", "sum"]


def mm(mat1, mat2, reduce=None):
    """mat1 @ mat2 with a sparse COO side: a dense result for sparse @ dense.  The gradient of
    a sparse mat1 is sparse, with mat1's pattern."""
    if reduce is not None:
        raise NotImplementedError("torch.sparse.mm: the reduce argument is not supported in "
                                  "pytorchlite")
    return _C._op("aten::mm")(mat1, mat2)


def addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0):
    """beta * mat + alpha * (mat1 @ mat2) for a sparse COO mat1 and dense mat, mat2."""
    return _C._op("aten::addmm")(mat, mat1, mat2, beta=beta, alpha=alpha)


def sum(input, dim=None, dtype=None):
    """The sum of a sparse tensor's elements: a 0-dim dense tensor without dim; over dim, a
    sparse tensor of the remaining sparse dimensions, or a dense one when none remain."""
    if dim is None:
        return _C._op("aten::sum")(input, dtype=dtype)
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    ndim = input.dim()
    dims = sorted({d + ndim if d < 0 else d for d in dims})
    left = input.sparse_dim() - len([d for d in dims if d < input.sparse_dim()])
    out = input.to_dense().sum(dims, dtype=dtype)
    return out.to_sparse(left) if left > 0 else out
