"""ChannelShuffle (torch/nn/modules/channelshuffle.py)."""
from .. import functional as F
from .module import Module


class ChannelShuffle(Module):
    """(N, C, *) -> (N, C, *) with the channels of the `groups` groups interleaved."""
    __constants__ = ["groups"]

    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"
