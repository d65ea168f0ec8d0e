"""Fuzzer, FuzzedParameter, ParameterAlias and FuzzedTensor (torch/utils/benchmark/utils/
fuzzer.py): seeded random parameter sets and tensors built from them, for benchmarking an op
over many shapes and layouts.

Note [Fuzzer draws]
-------------------
A Fuzzer's take(n) makes one numpy.random.RandomState(seed) and draws from it in PyTorch's
order: the global generator's seed first (randint(0, 2**63) passed to manual_seed), then per
step each parameter (uniform: randint for int bounds, else uniform; loguniform: 2 ** uniform
over the log2 bounds, truncated to int and clamped; a dict: choice over its keys), resampled
until every constraint and every tensor's min/max elements and max_allocation_bytes hold
(1000 tries), then per tensor one rand() against probability_contiguous and, below it, a
permutation of the dimensions other than the identity.  So a seed gives PyTorch's parameters,
orders and steps exactly, and tensors whose values come from this library's generator after
the same manual_seed.  NumPy is imported on first use (the runtime needs none).
What is not PyTorch's: a dict distribution whose probabilities sum to one is accepted
(PyTorch's check is inverted, so there it raises "Distribution is not normalized" for every
normalized dict and lets NumPy refuse the others when sampling), and max_allocation_bytes
counts a complex element at its itemsize (PyTorch's finfo bits count half of it)."""
import functools
import itertools

from .... import manual_seed, rand, randint

__all__ = ["Fuzzer", "FuzzedParameter", "ParameterAlias", "FuzzedTensor"]

_DISTRIBUTIONS = ("loguniform", "uniform")


class FuzzedParameter:
    """A named parameter drawn per step: between minval and maxval ("uniform", or
    "loguniform": uniform in log space, integer), or from a dict {value: probability} (minval
    and maxval None).  A strict parameter keeps its first draw while the Fuzzer resamples the
    others to meet the constraints."""

    def __init__(self, name, minval=None, maxval=None, distribution=None, strict=False):
        self._name = name
        self._minval = minval
        self._maxval = maxval
        self._distribution = self._check_distribution(distribution)
        self.strict = strict

    @property
    def name(self):
        return self._name

    def _check_distribution(self, distribution):
        if not isinstance(distribution, dict):
            if distribution not in _DISTRIBUTIONS:
                raise AssertionError(f"Unknown distribution: {distribution}")
            return distribution
        if any(p < 0 for p in distribution.values()):
            raise AssertionError("Probabilities cannot be negative")
        if abs(sum(distribution.values()) - 1) > 1e-5:
            raise AssertionError("Distribution is not normalized")
        if self._minval is not None:
            raise AssertionError("When passing a custom distribution, 'minval' must be None")
        if self._maxval is not None:
            raise AssertionError("When passing a custom distribution, 'maxval' must be None")
        return distribution

    def sample(self, state):
        """One draw from the numpy RandomState `state`."""
        import numpy as np
        if self._distribution == "loguniform":
            value = int(2 ** state.uniform(
                low=None if self._minval is None else np.log2(self._minval),
                high=None if self._maxval is None else np.log2(self._maxval)))
            if self._minval is not None and value < self._minval:
                return self._minval
            if self._maxval is not None and value > self._maxval:
                return self._maxval
            return value
        if self._distribution == "uniform":
            if isinstance(self._minval, int) and isinstance(self._maxval, int):
                return int(state.randint(low=self._minval, high=self._maxval + 1))
            return state.uniform(low=self._minval, high=self._maxval)
        # the index, not the keys: choice would turn the keys into NumPy scalars
        keys = list(self._distribution)
        index = state.choice(np.arange(len(keys)), p=tuple(self._distribution.values()))
        return keys[index]


class ParameterAlias:
    """A parameter's value that is another parameter's draw (chains allowed, no cycles)."""

    def __init__(self, alias_to):
        self.alias_to = alias_to

    def __repr__(self):
        return f"ParameterAlias[alias_to: {self.alias_to}]"


def _prod(values, base=1):
    """Python ints: NumPy's product of sizes could overflow into a negative count."""
    return functools.reduce(lambda x, y: int(x) * int(y), values, base)


class FuzzedTensor:
    """A tensor made per step: `size` and `steps` hold ints or parameter names; the tensor
    is allocated at size * steps and sliced with those steps, after its memory is reordered
    by a random permutation with probability 1 - probability_contiguous.  A parameter set is
    rejected when the tensor would hold fewer than min_elements or more than max_elements,
    or need more than max_allocation_bytes.  dim_parameter names the parameter that cuts or
    pads (with 1s) size and steps to its value."""

    def __init__(self, name, size, steps=None, probability_contiguous=0.5, min_elements=None,
                 max_elements=None, max_allocation_bytes=None, dim_parameter=None,
                 roll_parameter=None, dtype=None, cuda=False, tensor_constructor=None):
        from .... import float32
        self._name = name
        self._size = size
        self._steps = steps
        self._probability_contiguous = probability_contiguous
        self._min_elements = min_elements
        self._max_elements = max_elements
        self._max_allocation_bytes = max_allocation_bytes
        self._dim_parameter = dim_parameter
        self._dtype = float32 if dtype is None else dtype
        self._cuda = cuda
        self._tensor_constructor = tensor_constructor

    @property
    def name(self):
        return self._name

    @staticmethod
    def default_tensor_constructor(size, dtype, **kwargs):
        """rand for floating and complex dtypes, randint(1, 127) for the others."""
        if dtype.is_floating_point or dtype.is_complex:
            return rand(size=size, dtype=dtype, device="cpu")
        return randint(1, 127, size=size, dtype=dtype, device="cpu")

    def _get_size_and_steps(self, params):
        dim = len(self._size) if self._dim_parameter is None else params[self._dim_parameter]

        def resolve(values):
            values = tuple(params.get(v, v) for v in values)[:dim]
            return values + (1,) * (dim - len(values))

        size, steps = resolve(self._size), resolve(self._steps or ())
        return size, steps, tuple(s * step for s, step in zip(size, steps))

    def satisfies_constraints(self, params):
        size, _, allocation_size = self._get_size_and_steps(params)
        numel = _prod(size)
        if numel < 0:
            raise AssertionError("Computed number of elements is negative")
        nbytes = _prod(allocation_size, base=self._dtype.itemsize)
        return not ((self._max_elements is not None and numel > self._max_elements)
                    or (self._min_elements is not None and self._min_elements > numel)
                    or (self._max_allocation_bytes is not None
                        and nbytes > self._max_allocation_bytes))

    def _make_tensor(self, params, state):
        import numpy as np
        size, steps, allocation_size = self._get_size_and_steps(params)
        constructor = self._tensor_constructor or self.default_tensor_constructor
        raw = constructor(size=allocation_size, dtype=self._dtype, **params)
        if self._cuda:
            raw = raw.cuda()
        dim = len(size)
        order = np.arange(dim)
        if state.rand() > self._probability_contiguous:
            while dim > 1 and np.all(order == np.arange(dim)):
                order = state.permutation(raw.dim())
            raw = raw.permute(tuple(int(i) for i in order)).contiguous()
            raw = raw.permute(tuple(int(i) for i in np.argsort(order)))
        tensor = raw[tuple(slice(0, s * step, step) for s, step in zip(size, steps))]
        return tensor, {"numel": int(tensor.numel()), "order": order, "steps": steps,
                        "is_contiguous": tensor.is_contiguous(), "dtype": str(self._dtype)}


class Fuzzer:
    """Draws parameter sets and the tensors they describe: take(n) yields n triples
    (tensors, tensor_properties, params), the same ones for the same seed (see Note [Fuzzer
    draws]).  parameters and tensors may hold lists of them (one level); each constraint is
    called with the dict of parameters and rejects the set when it returns False."""

    def __init__(self, parameters, tensors, constraints=None, seed=None):
        import numpy as np
        if seed is None:
            seed = int(np.random.RandomState().randint(0, 2 ** 32 - 1, dtype=np.int64))
        self._seed = seed
        self._parameters = Fuzzer._unpack(parameters, FuzzedParameter)
        self._tensors = Fuzzer._unpack(tensors, FuzzedTensor)
        self._constraints = constraints or ()
        overlap = {p.name for p in self._parameters} & {t.name for t in self._tensors}
        if overlap:
            raise ValueError(f"Duplicate names in parameters and tensors: {overlap}")
        self._rejections = 0
        self._total_generated = 0

    @staticmethod
    def _unpack(values, cls):
        return tuple(itertools.chain.from_iterable(
            [v] if isinstance(v, cls) else v for v in values))

    def take(self, n):
        import numpy as np
        state = np.random.RandomState(self._seed)
        manual_seed(int(state.randint(low=0, high=2 ** 63, dtype=np.int64)))
        for _ in range(n):
            params = self._generate(state)
            tensors, properties = {}, {}
            for t in self._tensors:
                tensors[t.name], properties[t.name] = t._make_tensor(params, state)
            yield tensors, properties, params

    @property
    def rejection_rate(self):
        if not self._total_generated:
            return 0.
        return self._rejections / self._total_generated

    def _generate(self, state):
        strict = {}
        for _ in range(1000):
            params = {}
            for p in self._parameters:
                if not p.strict:
                    params[p.name] = p.sample(state)
                    continue
                if p.name not in strict:
                    strict[p.name] = p.sample(state)
                params[p.name] = strict[p.name]
            params = self._resolve_aliases(params)
            self._total_generated += 1
            if all(f(params) for f in self._constraints) and \
                    all(t.satisfies_constraints(params) for t in self._tensors):
                return params
            self._rejections += 1
        raise ValueError("Failed to generate a set of valid parameters.")

    @staticmethod
    def _resolve_aliases(params):
        params = dict(params)
        count = sum(isinstance(v, ParameterAlias) for v in params.values())
        while count:
            for k in list(params):
                if isinstance(params[k], ParameterAlias):
                    params[k] = params[params[k].alias_to]
            new_count = sum(isinstance(v, ParameterAlias) for v in params.values())
            if new_count == count:
                raise ValueError(f"ParameterAlias cycle detected\n{params}")
            count = new_count
        return params
