"""LinearCrossEntropyOptions (torch/nn/modules/linear_cross_entropy_options.py, written
afresh): how F.linear_cross_entropy's chunked path splits the batch.  The fields, their
checks and messages, and the call-time resolution of "auto" (_adjust) are PyTorch 2.13's, so
that one options object picks the same chunk size here as there."""
import dataclasses
from typing import Literal, NamedTuple

import pytorchlite as torch

__all__ = ["LinearCrossEntropyOptions"]


class _AutoDefault(NamedTuple):
    acc_policy: str
    chunking_method: str


# what "auto" means per (device type, input dtype); other pairs take _AUTO_FALLBACK
_AUTO_DEFAULTS = {
    ("cuda", torch.bfloat16): _AutoDefault("compact", "aspect_ratio:2"),
    ("cuda", torch.float16): _AutoDefault("compact", "aspect_ratio:2"),
    ("cpu", torch.bfloat16): _AutoDefault("accurate", "aspect_ratio"),
    ("cpu", torch.float16): _AutoDefault("accurate", "aspect_ratio"),
}
_AUTO_FALLBACK = _AutoDefault("compact", "aspect_ratio:2")
_ACC_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def _ceil_div(a, b):
    return -(-a // b)


@dataclasses.dataclass(slots=True, frozen=True)
class LinearCrossEntropyOptions:
    """Options of the chunked F.linear_cross_entropy: it reduces batch_chunk_size rows at a
    time, so the [N, C] logits are never held whole (peak [batch_chunk_size, C]).

    allow_retain_graph: the mean/sum reductions compute their gradients in forward; without
        it a second backward through the same graph raises.
    batch_chunk_size: rows per chunk (None: one chunk, unless chunking_method picks).
    chunking_method: "auto", "aspect_ratio" or "aspect_ratio:N" (chunks whose logits are
        about the input's size, divided by N), or None to use batch_chunk_size.
    acc_policy: "auto", "accurate", "balanced" or "compact"; here every policy computes the
        logits, softmax and gradients in acc_dtype (PyTorch's policies differ only in which
        scratch buffers they keep).
    acc_dtype: the dtype of that computation (None: float32 for float16/bfloat16 input under
        "auto", else the input's dtype)."""

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: Literal["accurate", "balanced", "compact", "auto"] = "auto"
    acc_dtype: torch.dtype | None = None

    def __post_init__(self):
        if self.acc_policy not in {"auto", "accurate", "balanced", "compact"}:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
        if self.chunking_method is not None and self.chunking_method != "auto":
            name, sep, factor = self.chunking_method.partition(":")
            if not sep:
                factor = "1"
            if not (name == "aspect_ratio" and factor.isdigit() and int(factor) > 0):
                raise ValueError(f"invalid chunking_method: {self.chunking_method!r}")
        if not (self.batch_chunk_size is None
                or (isinstance(self.batch_chunk_size, int) and self.batch_chunk_size > 0)):
            raise ValueError(f"batch_chunk_size must be positive int or None, got "
                             f"{self.batch_chunk_size!r}")
        if self.acc_dtype is not None and self.acc_dtype not in _ACC_DTYPES:
            raise ValueError(
                f"acc_dtype must be one of {{None, torch.float16, torch.bfloat16, "
                f"torch.float32, torch.float64}}, got {self.acc_dtype!r}. Pass "
                "acc_dtype=None to let the op pick automatically.")

    @staticmethod
    def _aspect_ratio_chunk(method, num_batches, in_features, num_classes):
        """next_pow2(ceil(N / ceil(C / F))) // factor rows, at most N."""
        factor = int(method.split(":", 1)[1]) if ":" in method else 1
        target = _ceil_div(num_batches, _ceil_div(num_classes, in_features))
        return min((1 << (target - 1).bit_length()) // factor, num_batches)

    def _adjust(self, num_batches, in_features, num_classes, dtype, device=None):
        """A copy with "auto" and None resolved for one call (PyTorch's _adjust)."""
        acc_policy, method = self.acc_policy, self.chunking_method
        if method == "auto" and self.batch_chunk_size is not None:
            method = None
        if acc_policy == "auto" or method == "auto":
            picks = _AUTO_FALLBACK if device is None else \
                _AUTO_DEFAULTS.get((device.type, dtype), _AUTO_FALLBACK)
            acc_policy = picks.acc_policy if acc_policy == "auto" else acc_policy
            method = picks.chunking_method if method == "auto" else method
        chunk = num_batches if self.batch_chunk_size is None else \
            min(self.batch_chunk_size, num_batches)
        if method is not None:
            chunk = self._aspect_ratio_chunk(method, num_batches, in_features, num_classes)
            if self.batch_chunk_size is not None and self.batch_chunk_size != chunk:
                raise ValueError(
                    f"batch_chunk_size (={self.batch_chunk_size}) and chunking_method "
                    f"('{method}') give different chunk sizes ({self.batch_chunk_size} vs "
                    f"{chunk}); pass only one.")
        acc_dtype = self.acc_dtype
        if acc_dtype is None:
            lower = dtype in (torch.float16, torch.bfloat16) and device is not None \
                and device.type in ("cpu", "cuda")
            acc_dtype = torch.float32 if self.acc_policy == "auto" and lower else dtype
        return dataclasses.replace(self, acc_policy=acc_policy, chunking_method=method,
                                   batch_chunk_size=max(1, chunk), acc_dtype=acc_dtype)
