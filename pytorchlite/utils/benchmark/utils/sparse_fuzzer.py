"""FuzzedSparseTensor (torch/utils/benchmark/utils/sparse_fuzzer.py): a FuzzedTensor that
makes a sparse COO tensor, its number of stored values set by a density parameter."""
import math
from numbers import Number

from .... import cat, long, rand, randint, randn_like, sparse_coo_tensor, tensor
from .fuzzer import FuzzedTensor

__all__ = ["FuzzedSparseTensor"]


class FuzzedSparseTensor(FuzzedTensor):
    """size, min_elements, max_elements, dim_parameter, dtype and cuda as FuzzedTensor's;
    the Fuzzer's parameters named "density" (nnz = ceil(sum(size) * density)), "coalesced"
    and, when sparse_dim is given, "sparse_dim" shape each tensor.  The other keywords name
    nothing PyTorch reads either."""

    def __init__(self, name, size, min_elements=None, max_elements=None, dim_parameter=None,
                 sparse_dim=None, nnz=None, density=None, coalesced=None, dtype=None,
                 cuda=False):
        super().__init__(name=name, size=size, min_elements=min_elements,
                         max_elements=max_elements, dim_parameter=dim_parameter, dtype=dtype,
                         cuda=cuda)
        self._density = density
        self._coalesced = coalesced
        self._sparse_dim = sparse_dim

    @staticmethod
    def sparse_tensor_constructor(size, dtype, sparse_dim, nnz, is_coalesced):
        """A COO tensor of `size` with nnz random indices over its first sparse_dim
        dimensions; uncoalesced, every index is stored twice (values rand, then randn)."""
        if isinstance(size, Number):
            size = [size] * sparse_dim
        if all(size[d] <= 0 for d in range(sparse_dim)) and nnz != 0:
            raise AssertionError("invalid arguments")
        values_size = [nnz] + list(size[sparse_dim:])
        if dtype.is_floating_point:
            values = rand(size=values_size, dtype=dtype, device="cpu")
        else:
            values = randint(1, 127, size=values_size, dtype=dtype, device="cpu")
        indices = rand(sparse_dim, nnz, device="cpu")
        indices.mul_(tensor(size[:sparse_dim]).unsqueeze(1).to(indices))
        indices = indices.to(long)
        if not is_coalesced:
            values = cat([values, randn_like(values)], 0)
            indices = cat([indices, indices], 1)
        x = sparse_coo_tensor(indices, values, tuple(size))
        return x.coalesce() if is_coalesced else x

    def _make_tensor(self, params, state):
        size, _, _ = self._get_size_and_steps(params)
        density = params["density"]
        nnz = math.ceil(sum(size) * density)
        if nnz > sum(size):
            raise AssertionError("nnz cannot exceed total number of elements")
        is_coalesced = params["coalesced"]
        sparse_dim = min(params["sparse_dim"] if self._sparse_dim else len(size), len(size))
        x = self.sparse_tensor_constructor(size, self._dtype, sparse_dim, nnz, is_coalesced)
        if self._cuda:
            x = x.cuda()
        return x, {"numel": int(x.numel()), "shape": x.size(), "is_coalesced": x.is_coalesced(),
                   "density": density, "sparsity": 1.0 - density,
                   "sparse_dim": x.sparse_dim(), "dense_dim": x.dense_dim(),
                   "is_hybrid": len(size[x.sparse_dim():]) > 0, "dtype": str(self._dtype)}
