"""The bundled digits data set: shape, value range, and figures of scikit-learn's copy."""
import numpy as np

import pytorchlite as ptl
from pytorchlite.datasets import Digits, load_digits


def test_load_digits_matches_the_published_data():
    images, labels = load_digits()
    assert tuple(images.shape) == (1797, 1, 8, 8) and images.dtype == ptl.uint8
    assert tuple(labels.shape) == (1797,) and labels.dtype == ptl.int64
    x = images.numpy()
    assert x.min() == 0 and x.max() == 16
    # scikit-learn's digits: the first image's top row, and the class counts
    assert x[0, 0, 0].tolist() == [0, 0, 5, 13, 9, 1, 0, 0]
    counts = np.bincount(labels.numpy(), minlength=10).tolist()
    assert counts == [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]
    assert int(x.astype(np.int64).sum()) == 561718   # summed from the source CSV


def test_digits_dataset_split_and_items():
    train, test = Digits(train=True), Digits(train=False)
    assert len(train) + len(test) == 1797 and len(test) == 360
    images, labels = load_digits()
    img, label = train[3]          # sample 4: 1, 2, 3 and 4 are training samples
    assert tuple(img.shape) == (1, 8, 8) and img.dtype == ptl.float32
    assert label == int(labels[4])
    assert np.allclose(img.numpy(), images[4].numpy() / 16.0)
    assert test[1][1] == int(labels[5])
    flipped = Digits(train=False, transform=lambda t: t * 0)
    assert float(flipped[0][0].sum()) == 0.0
