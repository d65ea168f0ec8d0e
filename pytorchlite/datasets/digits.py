"""The UCI optical-recognition handwritten digits (1,797 images of 8x8, values 0..16), bundled
as data/digits.u8.gz; source and licence in data/DIGITS_README.txt."""
import gzip
import os

from .. import _C

_PATH = os.path.join(os.path.dirname(__file__), "data", "digits.u8.gz")
N_SAMPLES = 1797


def load_digits():
    """(images, labels): a uint8 tensor [1797, 1, 8, 8] with values 0..16 and an int64 [1797]."""
    with gzip.open(_PATH, "rb") as f:
        raw = f.read()
    if len(raw) != N_SAMPLES * 65:
        raise RuntimeError(f"{_PATH} is damaged: expected {N_SAMPLES * 65} bytes, got {len(raw)}")
    table = _C._tensor_from_bytes(raw, _C.uint8, (N_SAMPLES, 65))
    images = table[:, :64].reshape(N_SAMPLES, 1, 8, 8).contiguous()
    labels = table[:, 64].to(_C.int64)
    return images, labels


class Digits:
    """A map-style dataset: item i is (float32 image [1, 8, 8] scaled to [0, 1], int label).

    train=True gives the first `split` samples, train=False the rest (a fixed split, so that
    results are reproducible)."""

    def __init__(self, train=True, split=1440, transform=None):
        images, labels = load_digits()
        sl = slice(0, split) if train else slice(split, N_SAMPLES)
        self.images = (images[sl].to(_C.float32) / 16.0).contiguous()
        self.labels = labels[sl].contiguous()
        self.transform = transform

    def __len__(self):
        return self.labels.shape[0]

    def __getitem__(self, i):
        x = self.images[i]
        if self.transform is not None:
            x = self.transform(x)
        return x, int(self.labels[i])
