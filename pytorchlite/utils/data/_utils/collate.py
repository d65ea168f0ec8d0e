"""default_collate and default_convert (torch/utils/data/_utils/collate.py).

collate(batch, collate_fn_map=...) dispatches on the type of the first sample: the map's
entry for that type (or its nearest registered base) collates the batch, containers recurse.
In a DataLoader worker, tensors are stacked into shared memory, so that the batch crosses
to the main process as a segment handle, not as bytes."""
import collections.abc
import re

from .... import _C
from ...._tensor import Tensor

np_str_obj_array_pattern = re.compile(r"[SaUO]")

default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, "
    "dicts or lists; found {}")


def _numpy():
    import sys
    return sys.modules.get("numpy")   # NumPy samples exist only where NumPy is imported


def default_convert(data):
    """Turns NumPy arrays and scalars into tensors, recursing into containers (the identity
    for anything else); the collate_fn when automatic batching is off."""
    np = _numpy()
    if isinstance(data, Tensor):
        return data
    if np is not None and isinstance(data, np.ndarray):
        if np_str_obj_array_pattern.search(data.dtype.str) is not None:
            return data
        return _C.as_tensor(data)
    if np is not None and isinstance(data, (np.number, np.bool_)):
        return _C.as_tensor(np.asarray(data))
    if isinstance(data, collections.abc.Mapping):
        items = {key: default_convert(data[key]) for key in data}
        try:
            return type(data)(items)
        except TypeError:
            return items
    if isinstance(data, tuple) and hasattr(data, "_fields"):   # namedtuple
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        converted = [default_convert(d) for d in data]
        try:
            return type(data)(converted)
        except TypeError:
            return converted
    return data


def collate(batch, *, collate_fn_map=None):
    """Collates a list of samples into a batch (see the module docstring)."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for base in collate_fn_map:
            if isinstance(elem, base):
                return collate_fn_map[base](batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        items = {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                 for key in elem}
        try:
            return elem_type(items)
        except TypeError:
            return items
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):   # namedtuple
        return elem_type(*(collate(s, collate_fn_map=collate_fn_map)
                           for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        n = len(elem)
        if any(len(d) != n for d in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        columns = [collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch)]
        if isinstance(elem, tuple):
            return columns   # PyTorch returns a list for tuples (backward compatibility)
        try:
            return elem_type(columns)
        except TypeError:
            return columns
    raise TypeError(default_collate_err_msg_format.format(elem_type))


def collate_tensor_fn(batch, *, collate_fn_map=None):
    from .... import stack
    from .worker import get_worker_info
    if batch[0].is_sparse:
        raise RuntimeError("Batches of sparse tensors are not currently supported by the default "
                           "collate_fn; please provide a custom collate_fn to handle them "
                           "appropriately.")
    out = stack(batch, 0)
    if get_worker_info() is not None:
        _C._share_memory_(out)
    return out


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    elem = batch[0]
    if np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    return collate([_C.as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    return _C.as_tensor(_numpy().asarray(batch))


def collate_float_fn(batch, *, collate_fn_map=None):
    return _C.tensor(batch, dtype=_C.float64)


def collate_int_fn(batch, *, collate_fn_map=None):
    return _C.tensor(batch)


def collate_str_fn(batch, *, collate_fn_map=None):
    return batch


default_collate_fn_map = {Tensor: collate_tensor_fn, float: collate_float_fn,
                          int: collate_int_fn, str: collate_str_fn, bytes: collate_str_fn}


def _numpy_entries():
    np = _numpy()
    if np is None:
        return {}
    return {np.ndarray: collate_numpy_array_fn, np.number: collate_numpy_scalar_fn,
            np.bool_: collate_numpy_scalar_fn}


def default_collate(batch):
    """Stacks tensors, NumPy arrays and numbers of the samples into tensors with a new first
    dimension; keeps str and bytes as lists; recurses into dicts, namedtuples, tuples and
    lists (a tuple becomes a list).  E.g. [(t0, 0), (t1, 1)] -> [stack([t0, t1]),
    tensor([0, 1])]."""
    fn_map = {Tensor: collate_tensor_fn, **_numpy_entries(), **default_collate_fn_map}
    return collate(batch, collate_fn_map=fn_map)
