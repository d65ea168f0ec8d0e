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

    A fixed interleaved split, so that results are reproducible and both parts cover every
    writer: every `test_every`-th sample is in the test set (train=False), the rest in the
    training set."""

    def __init__(self, train=True, test_every=5, transform=None):
        images, labels = load_digits()
        keep = [i for i in range(N_SAMPLES) if (i % test_every == 0) != train]
        index = _C.tensor(keep)
        self.images = (images[index].to(_C.float32) / 16.0).contiguous()
        self.labels = labels[index].contiguous()
        self.transform = transform

    def __len__(self):
        return self.labels.shape[0]

    def __getitem__(self, i):
        x = self.images[i]
        if self.transform is not None:
            x = self.transform(x)
        return x, int(self.labels[i])
