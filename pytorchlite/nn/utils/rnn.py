"""PackedSequence, pack_padded_sequence, pad_packed_sequence, pad_sequence, pack_sequence,
unpad_sequence, unpack_sequence (torch/nn/utils/rnn.py).

A PackedSequence holds the time steps of a batch of sequences sorted by decreasing length:
data [sum(lengths), *] is step 0 of every sequence, then step 1 of those still running, ...;
batch_sizes[t] counts the sequences running at step t.  Packing and unpacking are
index_selects, so gradients flow through them."""
from collections import namedtuple

import pytorchlite as torch

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence",
           "pad_packed_sequence", "pad_sequence", "unpad_sequence", "pack_sequence",
           "unpack_sequence"]

_PackedSequenceBase = namedtuple("PackedSequence_",
                                 ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])


def invert_permutation(permutation):
    if permutation is None:
        return None
    perm = permutation.tolist()
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return torch.tensor(inv, dtype=torch.int64)


class PackedSequence(_PackedSequenceBase):
    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            raise RuntimeError("PackedSequence needs batch_sizes: build one with "
                               "pack_padded_sequence or pack_sequence")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def double(self):
        return self.to(dtype=torch.float64)

    def float(self):
        return self.to(dtype=torch.float32)

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def is_pinned(self):
        return False


def _packed_rows(batch_sizes):
    """Row of the time-major [T*B] flattening (B = batch_sizes[0]) that each packed row comes
    from."""
    batch = batch_sizes[0]
    return [t * batch + b for t, n in enumerate(batch_sizes) for b in range(n)]


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """input [T, B, *] (batch_first: [B, T, *]) and B lengths -> a PackedSequence."""
    if isinstance(lengths, torch.Tensor):
        lengths = lengths.tolist()
    lengths = [int(n) for n in lengths]
    if enforce_sorted:
        if any(a < b for a, b in zip(lengths, lengths[1:])):
            raise RuntimeError(
                "`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
                "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
                "pack_sequence to sidestep this requirement if you do not need ONNX "
                "exportability.")
        sorted_indices = None
        order = list(range(len(lengths)))
    else:
        order = sorted(range(len(lengths)), key=lambda i: -lengths[i])  # stable, as torch
        sorted_indices = torch.tensor(order, dtype=torch.int64)
    if lengths and min(lengths) <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    if batch_first:
        input = input.transpose(0, 1)
    if len(lengths) != input.size(1):
        raise RuntimeError("Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{len(lengths)} (batch_size={input.size(1)})")
    if sorted_indices is not None:
        input = input.index_select(1, sorted_indices)
    sorted_lengths = [lengths[i] for i in order]
    batch_sizes = [sum(1 for n in sorted_lengths if n > t) for t in range(sorted_lengths[0])]
    flat = input.reshape((input.size(0) * input.size(1),) + tuple(input.shape[2:]))
    rows = torch.tensor(_packed_rows(batch_sizes), dtype=torch.int64)
    data = flat.index_select(0, rows)
    return PackedSequence(data, torch.tensor(batch_sizes, dtype=torch.int64), sorted_indices,
                          None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """The inverse of pack_padded_sequence: (padded [T, B, *], lengths in the input's order)."""
    data, batch_sizes = sequence.data, sequence.batch_sizes.tolist()
    max_len, batch = len(batch_sizes), batch_sizes[0]
    if total_length is not None:
        if total_length < max_len:
            raise ValueError("Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {max_len}")
    else:
        total_length = max_len
    feature = tuple(data.shape[1:])
    # row k of the padded [T*B] flattening: a packed row, or the padding row at the end
    pad_row = data.size(0)
    src = [pad_row] * (total_length * batch)
    for k, r in enumerate(_packed_rows(batch_sizes)):
        src[r] = k
    fill = torch.full((1,) + feature, padding_value, dtype=data.dtype, device=data.device)
    padded = torch.cat([data, fill], 0).index_select(0, torch.tensor(src, dtype=torch.int64))
    padded = padded.reshape((total_length, batch) + feature)
    lengths = [sum(1 for n in batch_sizes if n > b) for b in range(batch)]
    lengths = torch.tensor(lengths, dtype=torch.int64)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(1, sequence.unsorted_indices)
        lengths = lengths.index_select(0, sequence.unsorted_indices)
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, lengths


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """B tensors [L_i, *] -> [max L, B, *] (batch_first: [B, max L, *]), padded on the right
    (or the left) with padding_value."""
    if padding_side not in ("left", "right"):
        raise RuntimeError("Expected padding_side to be one of left or right, but got "
                           f"{padding_side}.")
    if isinstance(sequences, torch.Tensor):
        sequences = sequences.unbind(0)
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    max_len = max(s.size(0) for s in sequences)
    rows = []
    for s in sequences:
        missing = max_len - s.size(0)
        if missing:
            fill = torch.full((missing,) + tuple(s.shape[1:]), padding_value, dtype=s.dtype,
                              device=s.device)
            s = torch.cat([s, fill] if padding_side == "right" else [fill, s], 0)
        rows.append(s)
    return torch.stack(rows, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    if isinstance(lengths, torch.Tensor):
        lengths = lengths.tolist()
    return [seq[:int(n)] for seq, n in zip(padded_sequences.unbind(0), lengths)]


def pack_sequence(sequences, enforce_sorted=True):
    lengths = [s.size(0) for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths,
                                enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
