"""Small data sets shipped inside the package (no download is ever needed)."""
from .digits import Digits, load_digits  # noqa: F401
