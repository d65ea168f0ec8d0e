"""MNIST and Fashion-MNIST read from the standard IDX files (torchvision/datasets/mnist.py),
and read_idx, a reader for any IDX file.

pytorchlite never downloads: put the four files of the split you want (plain or gzipped) in
ROOT/MNIST/raw/ (torchvision's layout; ROOT/FashionMNIST/raw/ for Fashion-MNIST) or directly
in ROOT/:

    train-images-idx3-ubyte   train-labels-idx1-ubyte   (train=True)
    t10k-images-idx3-ubyte    t10k-labels-idx1-ubyte    (train=False)

Difference from torchvision: without a transform, item i is (image, label) with image a
float32 tensor [1, 28, 28] scaled to [0, 1] (what torchvision gives after
transforms.ToTensor()), not a PIL image. With a transform, the transform receives the uint8
tensor [28, 28] (the pixels of torchvision's PIL image) and its result is returned as is.
"""
import array
import gzip
import os
import struct
import sys

from .. import _C
from ..utils.data import Dataset

# IDX type byte -> (pytorchlite dtype, array typecode for byte swapping, item size)
_IDX_TYPES = {
    0x08: (_C.uint8, None, 1),
    0x09: (_C.int8, None, 1),
    0x0B: (_C.int16, "h", 2),
    0x0C: (_C.int32, "i", 4),
    0x0D: (_C.float32, "f", 4),
    0x0E: (_C.float64, "d", 8),
}
IMAGES_MAGIC = 0x00000803
LABELS_MAGIC = 0x00000801


def _open(path):
    with open(path, "rb") as f:
        head = f.read(2)
    if head == b"\x1f\x8b":
        return gzip.open(path, "rb")
    return open(path, "rb")


def _read_bytes(path):
    try:
        with _open(path) as f:
            return f.read()
    except (OSError, EOFError) as e:
        if isinstance(e, FileNotFoundError):
            raise
        raise RuntimeError(f"{path}: cannot read the file ({e})") from None


def _parse_idx(raw, path):
    if len(raw) < 4:
        raise RuntimeError(f"{path} is not an IDX file: it is only {len(raw)} bytes long "
                           "(an IDX header has at least 4)")
    magic = struct.unpack(">I", raw[:4])[0]
    zero, code, ndim = raw[0] << 8 | raw[1], raw[2], raw[3]
    if zero != 0 or code not in _IDX_TYPES:
        raise RuntimeError(f"{path} is not an IDX file: bad magic number 0x{magic:08X} "
                           "(expected 0x0000TTNN with type TT in 08, 09, 0B, 0C, 0D, 0E)")
    if len(raw) < 4 + 4 * ndim:
        raise RuntimeError(f"{path} is truncated: the header declares {ndim} dimensions but the "
                           f"file ends after {len(raw)} bytes")
    shape = struct.unpack(f">{ndim}I", raw[4:4 + 4 * ndim])
    dtype, typecode, itemsize = _IDX_TYPES[code]
    numel = 1
    for d in shape:
        numel *= d
    start, expected = 4 + 4 * ndim, numel * itemsize
    got = len(raw) - start
    if got < expected:
        raise RuntimeError(f"{path} is truncated: the header declares shape {list(shape)}, "
                           f"{expected} bytes of data, but the file holds {got}")
    if got > expected:
        raise RuntimeError(f"{path} is damaged: the header declares shape {list(shape)}, "
                           f"{expected} bytes of data, but the file holds {got}")
    body = raw[start:]
    if typecode is not None and sys.byteorder == "little":
        a = array.array(typecode)
        a.frombytes(body)
        a.byteswap()
        body = a.tobytes()
    return magic, _C._tensor_from_bytes(body, dtype, tuple(shape))


def read_idx(path):
    """The contents of the IDX file at `path` (plain or gzipped) as a tensor of the file's
    shape and type (uint8, int8, int16, int32, float32 or float64; values are big-endian in
    the file). RuntimeError for a file that is not IDX, truncated, or longer than declared."""
    return _parse_idx(_read_bytes(os.fspath(path)), path)[1]


class MNIST(Dataset):
    """MNIST(root, train=True, transform=None, target_transform=None, download=False).

    .data: uint8 [N, 28, 28]; .targets: int64 [N]; .classes as torchvision's. download=True
    only uses files already in place (pytorchlite has no network access): missing files raise
    a RuntimeError that names them and where to put them."""

    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five", "6 - six",
               "7 - seven", "8 - eight", "9 - nine"]
    training_file_names = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte")
    test_file_names = ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")

    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        if isinstance(root, (str, bytes)) or hasattr(root, "__fspath__"):
            root = os.path.expanduser(os.fspath(root))
        self.root = root
        self.train = train
        self.transform = transform
        self.target_transform = target_transform
        names = self.training_file_names if train else self.test_file_names
        images_path, labels_path = (self._find(name) for name in names)
        if images_path is None or labels_path is None:
            raise RuntimeError(self._missing_message(names, download))
        magic, self.data = _parse_idx(_read_bytes(images_path), images_path)
        if magic != IMAGES_MAGIC or self.data.dim() != 3:
            raise RuntimeError(f"{images_path} is not an IDX image file: magic number "
                               f"0x{magic:08X}, expected 0x{IMAGES_MAGIC:08X} (uint8, 3 dims)")
        magic, targets = _parse_idx(_read_bytes(labels_path), labels_path)
        if magic != LABELS_MAGIC or targets.dim() != 1:
            raise RuntimeError(f"{labels_path} is not an IDX label file: magic number "
                               f"0x{magic:08X}, expected 0x{LABELS_MAGIC:08X} (uint8, 1 dim)")
        if targets.shape[0] != self.data.shape[0]:
            raise RuntimeError(f"{images_path} holds {self.data.shape[0]} images but "
                               f"{labels_path} holds {targets.shape[0]} labels")
        self.targets = targets.to(_C.int64)

    @property
    def raw_folder(self):
        return os.path.join(self.root, type(self).__name__, "raw")

    @property
    def class_to_idx(self):
        return {c: i for i, c in enumerate(self.classes)}

    def _find(self, name):
        for folder in (self.raw_folder, self.root):
            for candidate in (name, name + ".gz"):
                path = os.path.join(folder, candidate)
                if os.path.isfile(path):
                    return path
        return None

    def _missing_message(self, names, download):
        missing = [n for n in names if self._find(n) is None]
        why = ("download=True cannot fetch them: pytorchlite never downloads. "
               if download else "")
        return (f"{type(self).__name__} not found: missing {', '.join(missing)}. {why}"
                f"Put the files {', '.join(names)} (plain or .gz) in {self.raw_folder}"
                f"{os.sep} (or directly in {self.root}{os.sep}).")

    def __len__(self):
        return self.data.shape[0]

    def __getitem__(self, index):
        img, target = self.data[index], int(self.targets[index])
        if self.transform is not None:
            img = self.transform(img)
        else:
            img = (img.to(_C.float32) / 255.0).unsqueeze(0)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __repr__(self):
        lines = [f"Dataset {type(self).__name__}",
                 f"    Number of datapoints: {len(self)}",
                 f"    Root location: {self.root}",
                 f"    Split: {'Train' if self.train else 'Test'}"]
        if self.transform is not None:
            lines.append(f"    Transform: {self.transform!r}")
        if self.target_transform is not None:
            lines.append(f"    Target transform: {self.target_transform!r}")
        return "\n".join(lines)


class FashionMNIST(MNIST):
    """Fashion-MNIST (Zalando): same files and format as MNIST, in ROOT/FashionMNIST/raw/."""

    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
               "Sneaker", "Bag", "Ankle boot"]
