"""Small data sets shipped inside the package (no download is ever needed), and readers for
standard files (MNIST's IDX) that the user provides."""
from .digits import Digits, load_digits  # noqa: F401
from .mnist import MNIST, FashionMNIST, read_idx  # noqa: F401
from .text import CharDataset, load_text  # noqa: F401
