"""The bundled text and CharDataset."""
import gzip
import hashlib
import os
import re

import pytest

import pytorchlite as ptl
from pytorchlite.datasets import CharDataset, load_text
from pytorchlite.datasets import text as text_module
from pytorchlite.utils.data import DataLoader


def test_bundled_text_is_the_documented_file():
    # data/README.md states the source file's sha256; the bundled gzip must decompress to it
    path = os.path.join(os.path.dirname(text_module.__file__), "data", "hamlet.txt.gz")
    with gzip.open(path, "rb") as f:
        raw = f.read()
    readme = open(os.path.join(os.path.dirname(path), "README.md")).read()
    assert hashlib.sha256(raw).hexdigest() in readme
    assert 100_000 <= len(raw) <= 1_000_000
    s = load_text()
    assert s == raw.decode("utf-8") == load_text("hamlet")
    assert s.startswith("# Hamlet\n") and "To be, or not to be" in s
    assert "gutenberg" not in s.lower()


def test_unknown_text():
    msg = "unknown text 'x'; the bundled texts are: hamlet"
    with pytest.raises(ValueError, match=re.escape(msg)):
        load_text("x")


def test_char_dataset_items():
    s = "hello world, hello!"
    ds = CharDataset(s, 4)
    chars = sorted(set(s))
    assert ds.vocab_size == len(chars)
    assert ds.stoi == {c: i for i, c in enumerate(chars)}
    assert ds.itos == {i: c for i, c in enumerate(chars)}
    assert len(ds) == len(s) - 4
    for i in [0, 3, len(ds) - 1, -1]:
        x, y = ds[i]
        j = i % len(ds)
        assert x.dtype == ptl.int64 and y.dtype == ptl.int64
        assert tuple(x.shape) == (4,) and tuple(y.shape) == (4,)
        assert x.tolist() == [chars.index(c) for c in s[j:j + 4]]
        assert y.tolist() == [chars.index(c) for c in s[j + 1:j + 5]]
        assert ds.decode(x) == s[j:j + 4] and ds.decode(y.tolist()) == s[j + 1:j + 5]
    assert ds.encode("oh") == [chars.index("o"), chars.index("h")]
    with pytest.raises(IndexError, match=re.escape(
            "index 15 is out of range for a CharDataset of length 15")):
        ds[15]
    with pytest.raises(IndexError, match=re.escape(
            "index -16 is out of range for a CharDataset of length 15")):
        ds[-16]


def test_char_dataset_on_bundled_text_with_loader():
    s = load_text()
    ds = CharDataset(s, 64)
    assert ds.vocab_size == len(set(s)) == 68
    assert len(ds) == len(s) - 64
    x, y = next(iter(DataLoader(ds, batch_size=8)))
    assert tuple(x.shape) == (8, 64) and tuple(y.shape) == (8, 64)
    assert ds.decode(x[3]) == s[3:67] and ds.decode(y[7]) == s[8:72]


def test_char_dataset_errors():
    msg = "CharDataset expects the text as a str, got bytes"
    with pytest.raises(TypeError, match=re.escape(msg)):
        CharDataset(b"abc", 1)
    for bad in [0, -1, 2.0, True]:
        msg = f"block_size must be a positive int, got {bad!r}"
        with pytest.raises(ValueError, match=re.escape(msg)):
            CharDataset("abcdef", bad)
    with pytest.raises(ValueError, match=re.escape(
            "the text has 3 characters; block_size=3 needs at least 4")):
        CharDataset("abc", 3)
