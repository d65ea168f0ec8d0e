"""AdaptiveLogSoftmaxWithLoss (torch/nn/modules/adaptive.py): the adaptive softmax of Grave et
al. (2017) for large vocabularies.  Classes are split by `cutoffs` into a shortlist, which the
head scores directly, and tail clusters: the head gives each cluster one logit, and a cluster's
own small network (in_features -> in_features / div_value^(i+1) -> cluster size) scores the
classes inside it, so log p(c) = log p_head(cluster of c) + log p_cluster(c).  A batch pays
for the tail clusters its targets fall in, not for the whole vocabulary."""
import collections

from ... import _C
from .. import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

_ASMoutput = collections.namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    def __init__(self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False,
                 device=None, dtype=None):
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        well_formed = (cutoffs == sorted(cutoffs) and len(set(cutoffs)) == len(cutoffs)
                       and min(cutoffs) > 0 and max(cutoffs) <= n_classes - 1
                       and all(int(c) == c for c in cutoffs))
        if not well_formed:
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted "
                             "in an increasing order, where each value is between 1 and "
                             "n_classes-1")
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        kw = dict(device=device, dtype=dtype)
        self.head = Linear(in_features, self.head_size, bias=head_bias, **kw)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hidden, bias=False, **kw),
                                        Linear(hidden, size, bias=False, **kw)))

    def reset_parameters(self):
        self.head.reset_parameters()
        for projection in self.tail:
            for layer in projection:
                layer.reset_parameters()

    def _check(self, input, target):
        if target.dim() == 1:
            if input.size(0) != target.size(0):
                raise RuntimeError("Input and target should have the same size in the batch "
                                   "dimension.")
            if input.dim() != 2:
                raise RuntimeError("1D target tensor expects 2D input tensors, but found "
                                   f"inputs with size {input.size()}")
        elif target.dim() == 0:
            if input.dim() != 1:
                raise RuntimeError("0D target tensor expects 1D input tensors, but found "
                                   f"inputs with size {input.size()}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")

    def forward(self, input, target):
        """(output, loss): output[i] = log p(target[i] | input[i]), loss = -mean(output)."""
        self._check(input, target)
        batched = target.dim() == 1
        if not batched:
            input, target = input.unsqueeze(0), target.unsqueeze(0)
        n = target.size(0)
        output = input.new_zeros(n)
        # the head's column each row reads: its own class in the shortlist, else its cluster's
        head_column = target.new_empty(n)
        covered = 0
        bounds = [0] + self.cutoffs
        for i in range(len(bounds) - 1):
            inside = (target >= bounds[i]) & (target < bounds[i + 1])
            rows = inside.nonzero().squeeze()
            if rows.numel() == 0:
                continue
            covered += rows.numel()
            if i == 0:
                head_column.index_copy_(0, rows, target[inside])
                continue
            head_column.index_fill_(0, rows, self.shortlist_size + i - 1)
            scores = F.log_softmax(self.tail[i - 1](input.index_select(0, rows)), dim=1)
            within = (target[inside] - bounds[i]).unsqueeze(1)
            output.index_copy_(0, rows, scores.gather(1, within).squeeze(1))
        if covered != n:
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but "
                               f"values in range [{target.min().item()}, "
                               f"{target.max().item()}] were found. ")
        head = F.log_softmax(self.head(input), dim=1)
        output = output + head.gather(1, head_column.unsqueeze(1)).squeeze()
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _full_log_prob(self, input, head_output):
        head = F.log_softmax(head_output, dim=1)
        parts = [head[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster = F.log_softmax(self.tail[i](input), dim=1)
            parts.append(cluster + head[:, self.shortlist_size + i].unsqueeze(1))
        return _C._functions["cat"](parts, 1)

    def log_prob(self, input):
        """log p(c | input) for every class c: [batch, n_classes]."""
        return self._full_log_prob(input, self.head(input))

    def predict(self, input):
        """The most likely class of each row; the tails are computed only for rows whose
        head's best column is a cluster."""
        head_output = self.head(input)
        best = head_output.argmax(dim=1)
        in_tail = best >= self.shortlist_size
        if not bool(in_tail.any()):
            return best
        if bool(in_tail.all()):
            return self._full_log_prob(input, head_output).argmax(dim=1)
        best[in_tail] = self._full_log_prob(input[in_tail], head_output[in_tail]).argmax(dim=1)
        return best
