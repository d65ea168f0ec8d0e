"""pytorchlite.datasets.MNIST / FashionMNIST / read_idx on small IDX files written here with
NumPy (big-endian data, plain and gzip, torchvision's ROOT/MNIST/raw/ layout and a flat ROOT)."""
import gzip
import os
import re
import struct

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.datasets import MNIST, FashionMNIST, read_idx
from pytorchlite.utils.data import DataLoader

NP_OF = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
PTL_OF = {0x08: ptl.uint8, 0x09: ptl.int8, 0x0B: ptl.int16, 0x0C: ptl.int32, 0x0D: ptl.float32,
          0x0E: ptl.float64}


def idx_bytes(arr, code):
    arr = np.asarray(arr)
    header = bytes([0, 0, code, arr.ndim]) + b"".join(struct.pack(">I", d) for d in arr.shape)
    return header + arr.astype(NP_OF[code]).tobytes()


def write(path, data, gz=False):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if gz:
        with gzip.open(path + ".gz", "wb") as f:
            f.write(data)
        return path + ".gz"
    with open(path, "wb") as f:
        f.write(data)
    return path


def make_split(folder, prefix, n, seed, gz):
    g = np.random.default_rng(seed)
    images = g.integers(0, 256, (n, 28, 28), dtype=np.uint8)
    labels = g.integers(0, 10, n, dtype=np.uint8)
    write(os.path.join(folder, f"{prefix}-images-idx3-ubyte"), idx_bytes(images, 0x08), gz)
    write(os.path.join(folder, f"{prefix}-labels-idx1-ubyte"), idx_bytes(labels, 0x08), gz)
    return images, labels


@pytest.mark.parametrize("code", sorted(NP_OF))
@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 5), (7,), (0, 4)])
@pytest.mark.parametrize("gz", [False, True])
def test_read_idx_round_trip(tmp_path, code, shape, gz):
    g = np.random.default_rng(code)
    a = g.integers(-100, 100, shape) if code not in (0x08,) else g.integers(0, 256, shape)
    if code in (0x0D, 0x0E):
        a = g.standard_normal(shape)
    a = a.astype(NP_OF[code])
    path = write(str(tmp_path / "x.idx"), idx_bytes(a, code), gz)
    t = read_idx(path)
    assert t.dtype == PTL_OF[code]
    assert tuple(t.shape) == shape
    np.testing.assert_array_equal(t.numpy(), a.astype(a.dtype.newbyteorder("=")))


@pytest.mark.parametrize("layout", ["raw", "flat"])
@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("cls", [MNIST, FashionMNIST])
def test_dataset_round_trip(tmp_path, layout, gz, cls):
    folder = str(tmp_path / cls.__name__ / "raw") if layout == "raw" else str(tmp_path)
    tr_images, tr_labels = make_split(folder, "train", 6, 0, gz)
    te_images, te_labels = make_split(folder, "t10k", 4, 1, gz)
    for train, images, labels in [(True, tr_images, tr_labels), (False, te_images, te_labels)]:
        ds = cls(str(tmp_path), train=train)
        assert len(ds) == len(labels)
        assert ds.data.dtype == ptl.uint8 and tuple(ds.data.shape) == (len(labels), 28, 28)
        assert ds.targets.dtype == ptl.int64
        np.testing.assert_array_equal(ds.data.numpy(), images)
        np.testing.assert_array_equal(ds.targets.numpy(), labels.astype(np.int64))
        img, label = ds[2]
        assert isinstance(label, int) and label == labels[2]
        assert img.dtype == ptl.float32 and tuple(img.shape) == (1, 28, 28)
        np.testing.assert_allclose(img.numpy()[0], images[2] / 255.0, rtol=1e-6)
        assert float(img.min()) >= 0.0 and float(img.max()) <= 1.0


def test_classes_match_torchvision():
    # torchvision's lists (torchvision/datasets/mnist.py)
    assert MNIST.classes == ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four",
                             "5 - five", "6 - six", "7 - seven", "8 - eight", "9 - nine"]
    assert FashionMNIST.classes == ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                    "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]


def test_class_to_idx(tmp_path):
    make_split(str(tmp_path), "t10k", 1, 0, False)
    assert FashionMNIST(tmp_path, train=False).class_to_idx["Bag"] == 8
    assert MNIST(tmp_path, train=False).class_to_idx["3 - three"] == 3


def test_transforms_and_loader(tmp_path):
    images, labels = make_split(str(tmp_path / "MNIST" / "raw"), "train", 5, 3, False)
    seen = []

    def transform(img):
        seen.append((img.dtype, tuple(img.shape)))
        return img.to(ptl.float32).sum()

    ds = MNIST(tmp_path, transform=transform, target_transform=lambda y: y + 100)
    x, y = ds[1]
    assert seen == [(ptl.uint8, (28, 28))]
    assert float(x) == float(images[1].astype(np.float64).sum())
    assert y == labels[1] + 100
    ds = MNIST(tmp_path, download=True)   # files present: download=True just uses them
    batches = list(DataLoader(ds, batch_size=2))
    assert [tuple(b[0].shape) for b in batches] == [(2, 1, 28, 28), (2, 1, 28, 28), (1, 1, 28, 28)]
    np.testing.assert_array_equal(batches[0][1].numpy(), labels[:2].astype(np.int64))
    assert repr(ds).splitlines()[:2] == ["Dataset MNIST", "    Number of datapoints: 5"]


@pytest.mark.parametrize("download", [False, True])
def test_missing_files(tmp_path, download):
    raw = os.path.join(str(tmp_path), "MNIST", "raw")
    write(os.path.join(raw, "train-images-idx3-ubyte"), idx_bytes(np.zeros((1, 28, 28)), 8))
    why = "download=True cannot fetch them: pytorchlite never downloads. " if download else ""
    msg = (f"MNIST not found: missing train-labels-idx1-ubyte. {why}Put the files "
           f"train-images-idx3-ubyte, train-labels-idx1-ubyte (plain or .gz) in {raw}{os.sep} "
           f"(or directly in {tmp_path}{os.sep}).")
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        MNIST(str(tmp_path), download=download)
    with pytest.raises(RuntimeError, match=re.escape("missing t10k-images-idx3-ubyte, "
                                                     "t10k-labels-idx1-ubyte.")):
        MNIST(str(tmp_path), train=False)
    with pytest.raises(RuntimeError, match=re.escape("FashionMNIST not found")):
        FashionMNIST(str(tmp_path))


def test_bad_magic(tmp_path):
    folder = str(tmp_path)
    make_split(folder, "train", 2, 0, False)
    # labels stored where images belong: a valid IDX file with the wrong magic
    labels = idx_bytes(np.zeros(2), 0x08)
    write(os.path.join(folder, "train-images-idx3-ubyte"), labels)
    path = os.path.join(folder, "train-images-idx3-ubyte")
    with pytest.raises(RuntimeError, match=re.escape(
            f"{path} is not an IDX image file: magic number 0x00000801, expected 0x00000803")):
        MNIST(folder)
    make_split(folder, "train", 2, 0, False)
    lpath = write(os.path.join(folder, "train-labels-idx1-ubyte"), idx_bytes(np.zeros(2), 0x0C))
    with pytest.raises(RuntimeError, match=re.escape(
            f"{lpath} is not an IDX label file: magic number 0x00000C01, expected 0x00000801")):
        MNIST(folder)
    junk = write(str(tmp_path / "junk"), b"\x12\x34\x08\x01" + b"\0" * 8)
    with pytest.raises(RuntimeError, match=re.escape(
            f"{junk} is not an IDX file: bad magic number 0x12340801")):
        read_idx(junk)
    bad_type = write(str(tmp_path / "bad_type"), b"\x00\x00\x07\x01\x00\x00\x00\x00")
    with pytest.raises(RuntimeError, match=re.escape("bad magic number 0x00000701")):
        read_idx(bad_type)


def test_count_mismatch(tmp_path):
    folder = str(tmp_path)
    make_split(folder, "train", 3, 0, False)
    write(os.path.join(folder, "train-labels-idx1-ubyte"), idx_bytes(np.zeros(2), 0x08))
    with pytest.raises(RuntimeError, match="holds 3 images but .* holds 2 labels"):
        MNIST(folder)


def test_truncated(tmp_path):
    full = idx_bytes(np.zeros((3, 28, 28), np.uint8), 0x08)
    p = write(str(tmp_path / "a"), full[:-5])
    with pytest.raises(RuntimeError, match=re.escape(
            f"{p} is truncated: the header declares shape [3, 28, 28], 2352 bytes of data, "
            "but the file holds 2347")):
        read_idx(p)
    p = write(str(tmp_path / "b"), full[:10])
    with pytest.raises(RuntimeError, match=re.escape(
            f"{p} is truncated: the header declares 3 dimensions but the file ends after "
            "10 bytes")):
        read_idx(p)
    p = write(str(tmp_path / "c"), full[:3])
    with pytest.raises(RuntimeError, match=re.escape(
            f"{p} is not an IDX file: it is only 3 bytes long")):
        read_idx(p)
    p = write(str(tmp_path / "d"), full + b"x")
    with pytest.raises(RuntimeError, match=re.escape(
            f"{p} is damaged: the header declares shape [3, 28, 28], 2352 bytes of data, "
            "but the file holds 2353")):
        read_idx(p)
    # a gzip stream cut short
    gz = gzip.compress(full)
    p = write(str(tmp_path / "e.gz"), gz[:len(gz) // 2])
    with pytest.raises(RuntimeError, match=re.escape(f"{p}: cannot read the file")):
        read_idx(p)
    # the MNIST class reports the same for its files
    folder = str(tmp_path / "m")
    make_split(folder, "train", 2, 0, True)
    ipath = os.path.join(folder, "train-images-idx3-ubyte.gz")
    data = gzip.decompress(open(ipath, "rb").read())
    write(os.path.join(folder, "train-images-idx3-ubyte"), data[:-1], gz=True)
    with pytest.raises(RuntimeError, match=re.escape(f"{ipath} is truncated")):
        MNIST(folder)


def test_read_idx_missing(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_idx(tmp_path / "nope")
