"""torch.utils.tensorboard: SummaryWriter, writing TensorBoard event files with the tensorboard
package's own event writer and protocol buffers (an optional dependency: the `tools`
extra)."""
try:
    import tensorboard  # noqa: F401
except ImportError as e:
    raise ImportError("TensorBoard logging requires TensorBoard to be installed: "
                      "pip install tensorboard (or pytorchlite's `tools` extra)") from e

from .writer import SummaryWriter  # noqa: E402,F401

__all__ = ["SummaryWriter"]
