"""RNNBase, RNN, LSTM, GRU and their cells (torch/nn/modules/rnn.py).

Per layer and direction, the input projection x W_ih^T of every time step is one matmul.  In
float32 and float64 the time loop is then one op, aten::_ptl_rnn_layer (Note [Recurrent
layer] in native/rnn.c: per step one GEMM h W_hh^T and the fused cell, in C, forward and
backward).  When no gradient is wanted, an LSTM's and an RNN's loop on the CPU takes x
itself and [W_ih, W_hh]: each step is then one GEMM [x_t, h_{t-1}] [W_ih, W_hh]^T, with no
[T, B, G] projection between them (the op's input form).  Other dtypes run the loop here in
Python, which stays the reference: per step h W_hh^T (one matmul) and the cell, the fused
kernel (aten::_thnn_fused_lstm_cell / _thnn_fused_gru_cell, which also add the biases) in
float32 / float64, else the composite of ops that defines it.  RNNCell / LSTMCell / GRUCell
take that step.  Gate order is torch's (LSTM i, f, g, o; GRU r, z, n with n = tanh(W_in x +
b_in + r * (W_hn h + b_hn))), so state_dicts load from torch.  A PackedSequence runs padded
(time-major, sorted by length), and a sequence's state stops changing after its last step
(forward) or starts changing at it (reverse)."""
import math
import numbers
import warnings

import pytorchlite as torch
from pytorchlite import _ops_namespace

from .. import functional as F
from .. import init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence, _packed_rows, pad_packed_sequence
from .module import Module, _non_default_options

aten = _ops_namespace.aten_bindings

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


# ---- one time step of each cell ----
# The gate projections input_gates = x W_ih^T and hidden_gates = h W_hh^T come without the
# biases; the cell adds them.  _lstm_cell_ops / _gru_cell_ops are the composites of ops that
# define the cells; float32 / float64 run the fused kernels that compute the same in one pass
# (Note [Fused cells] in native/rnn_cells.c; tests/nn/test_rnn.py holds them to the composites).

def _lstm_cell_ops(input_gates, hidden_gates, cx, input_bias=None, hidden_bias=None):
    """(hy, cy) of aten::_thnn_fused_lstm_cell, composed of ops: gates i, f, g, o."""
    gates = input_gates + hidden_gates
    if input_bias is not None:
        gates = gates + input_bias + hidden_bias
    i, f, g, o = gates.chunk(4, 1)
    cy = torch.sigmoid(f) * cx + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(cy), cy


def _gru_cell_ops(input_gates, hidden_gates, hx, input_bias=None, hidden_bias=None):
    """hy of aten::_thnn_fused_gru_cell, composed of ops: gates r, z, n with
    n = tanh(W_in x + b_in + r * (W_hn h + b_hn))."""
    if input_bias is not None:
        input_gates, hidden_gates = input_gates + input_bias, hidden_gates + hidden_bias
    xr, xz, xn = input_gates.chunk(3, 1)
    hr, hz, hn = hidden_gates.chunk(3, 1)
    r = torch.sigmoid(xr + hr)
    z = torch.sigmoid(xz + hz)
    n = torch.tanh(xn + r * hn)
    return (hx - n) * z + n


def _fused_lstm_cell(input_gates, hidden_gates, cx, input_bias=None, hidden_bias=None):
    return aten._thnn_fused_lstm_cell(input_gates, hidden_gates, cx, input_bias, hidden_bias)[:2]


def _fused_gru_cell(input_gates, hidden_gates, hx, input_bias=None, hidden_bias=None):
    return aten._thnn_fused_gru_cell(input_gates, hidden_gates, hx, input_bias, hidden_bias)[0]


def _cell(mode, dtype):
    """The cell function of an LSTM or GRU: the fused kernel where it takes the dtype."""
    fused = dtype in (torch.float32, torch.float64)
    if mode == "LSTM":
        return _fused_lstm_cell if fused else _lstm_cell_ops
    return _fused_gru_cell if fused else _gru_cell_ops


_ACTIVATIONS = {"RNN_TANH": torch.tanh, "RNN_RELU": torch.relu}


def _cell_function(mode, input, hx, w_ih, w_hh, b_ih, b_hh):
    """torch.lstm_cell / gru_cell / rnn_tanh_cell / rnn_relu_cell: one step with explicit
    weights, ATen's checks (input and hidden sizes, then the weights' gate rows).  The gate
    projections carry their own biases (GRU's n gate needs b_hh inside r * (...)); an LSTM's
    hx is the pair (h, c)."""
    states = tuple(hx) if mode == "LSTM" else (hx,)
    if mode == "LSTM" and len(states) != 2:
        raise RuntimeError("lstm_cell expects two hidden states")
    if input.size(1) != w_ih.size(1):
        raise RuntimeError(f"input has inconsistent input_size: got {input.size(1)} expected "
                           f"{w_ih.size(1)}")
    hidden_size = w_hh.size(1)
    for i, h in enumerate(states):
        if input.size(0) != h.size(0):
            raise RuntimeError(f"Input batch size {input.size(0)} doesn't match hidden{i} "
                               f"batch size {h.size(0)}")
        if h.size(1) != hidden_size:
            raise RuntimeError(f"hidden{i} has inconsistent hidden_size: got {h.size(1)}, "
                               f"expected {hidden_size}")
    rows = _GATES[mode] * hidden_size
    for what, w in (("weight_ih", w_ih), ("weight_hh", w_hh)):
        if w.size(0) != rows:
            raise RuntimeError(f"{what} first dim must be {_GATES[mode]} * hidden_size = "
                               f"{rows}, but got {w.size(0)}")
    input_gates = F.linear(input, w_ih, b_ih)
    hidden_gates = F.linear(states[0], w_hh, b_hh)
    if mode == "LSTM":
        return _cell(mode, input.dtype)(input_gates, hidden_gates, states[1])
    if mode == "GRU":
        return _cell(mode, input.dtype)(input_gates, hidden_gates, states[0])
    return _ACTIVATIONS[mode](input_gates + hidden_gates)


def _input_gates(mode, x, w_ih, b_ih, b_hh):
    """x W_ih^T for LSTM / GRU (their cell adds the biases), x W_ih^T + b_ih + b_hh for RNN."""
    if mode in ("LSTM", "GRU"):
        return F.linear(x, w_ih)
    gates = F.linear(x, w_ih, b_ih)
    return gates if b_hh is None else gates + b_hh


def _steps(mode, dtype, w_hh, b_ih, b_hh, w_hr):
    """One time step (gates, state) -> state for _run_direction, gates = x_t W_ih^T without
    the biases for LSTM / GRU (their cell adds both), with both for RNN: one GEMM for the
    hidden projection, then the cell (LSTM, GRU) or the nonlinearity (RNN)."""
    w_hh_t = w_hh.t()
    if mode == "LSTM":
        cell = _cell(mode, dtype)
        w_hr_t = w_hr.t() if w_hr is not None else None

        def lstm(gates, hc):
            h, c = cell(gates, hc[0].mm(w_hh_t), hc[1], b_ih, b_hh)
            return (h if w_hr_t is None else h.mm(w_hr_t)), c
        return lstm
    if mode == "GRU":
        cell = _cell(mode, dtype)
        return lambda gates, h: cell(gates, h.mm(w_hh_t), h, b_ih, b_hh)
    act = _ACTIVATIONS[mode]
    return lambda gates, h: act(torch.addmm(gates, h, w_hh_t))


def _stack(parts):
    """torch.stack(parts, 0) in groups of at most 64 (autograd's limit on an op's inputs)."""
    if len(parts) <= 64:
        return torch.stack(parts, 0)
    return torch.cat([torch.stack(parts[i:i + 64], 0) for i in range(0, len(parts), 64)], 0)


# the dtypes whose time loop is one op (aten::_ptl_rnn_layer); its mode numbers are cuDNN's,
# as aten::_cudnn_rnn's
_LAYER_DTYPES = (torch.float32, torch.float64)
_LAYER_MODES = {"RNN_RELU": 0, "RNN_TANH": 1, "LSTM": 2, "GRU": 3}
# added to the mode: the op's input form (x and [W_ih, W_hh] for input_gates and w_hh)
_INPUT_FORM = 8
# added to an LSTM's mode: x and W_ih (in w_hr's place), projected step by step in the loop
_STEP_PROJECTIONS = 16


def _input_form(mode, x, state, weights):
    """Whether _run_direction may run the layer's input form: an LSTM or RNN on the CPU whose
    output needs no gradient (GRU's n gate needs x W_ih^T apart)."""
    if mode == "GRU" or x.device.type != "cpu":
        return False
    if not torch.is_grad_enabled():
        return True
    states = state if isinstance(state, tuple) else (state,)
    return not any(t is not None and t.requires_grad for t in (x,) + states + tuple(weights))


def _step_projections(mode, x, weights):
    """Whether _run_direction may hand the layer x and W_ih (Note [LSTM step projections] in
    aten/native/rnn.c): a CPU LSTM without proj_size whose x and W_ih both want gradients (the
    op's backward always gives both)."""
    return (mode == "LSTM" and x.device.type == "cpu" and weights[4] is None and
            torch.is_grad_enabled() and x.requires_grad and weights[0].requires_grad)


def _keep_masks(batch_sizes, batch):
    """keep[t] for _run_direction_ops: None when all `batch` rows run at step t, else [B, 1]
    bool, True for the batch_sizes[t] leading rows (the sequences still running)."""
    rows = torch.arange(batch).unsqueeze(1)
    return [None if n == batch else rows < n for n in batch_sizes.tolist()]


def _run_direction(mode, x, state, weights, reverse, batch_sizes=None):
    """x [T, B, I] contiguous, state h [B, H] (LSTM: (h, c)) -> (outputs [T, B, H], final
    state).  batch_sizes (packed input only): int64 [T], how many leading rows (sequences
    sorted by length) run at step t; the others keep their state."""
    if x.dtype not in _LAYER_DTYPES:
        keep = None if batch_sizes is None else _keep_masks(batch_sizes, x.size(1))
        return _run_direction_ops(mode, x, state, weights, reverse, keep)
    w_ih, w_hh, b_ih, b_hh, w_hr = weights
    lstm = mode == "LSTM"
    h, c = state if lstm else (state, None)
    if _input_form(mode, x, state, weights):
        # no input requires grad, so no_grad changes nothing but the op's own check, which
        # takes any view or once-trained tensor (one with autograd meta) in grad mode as one
        # that may want a gradient (a frozen nn.LSTM, hx[k] a view)
        with torch.no_grad():
            out, _, hy, cy = aten._ptl_rnn_layer(x, h, c, torch.cat([w_ih, w_hh], 1), b_ih,
                                                 b_hh, w_hr, _LAYER_MODES[mode] + _INPUT_FORM,
                                                 reverse, batch_sizes)
        return out, ((hy, cy) if lstm else hy)
    if _step_projections(mode, x, weights):
        out, _, hy, cy = aten._ptl_rnn_layer(x, h, c, w_hh, b_ih, b_hh, w_ih,
                                             _LAYER_MODES[mode] + _STEP_PROJECTIONS, reverse,
                                             batch_sizes)
        return out, (hy, cy)
    out, _, hy, cy = aten._ptl_rnn_layer(F.linear(x, w_ih), h, c, w_hh, b_ih, b_hh, w_hr,
                                         _LAYER_MODES[mode], reverse, batch_sizes)
    return out, ((hy, cy) if lstm else hy)


def _run_direction_ops(mode, x, state, weights, reverse, keep=None):
    """_run_direction as a Python loop over ops (the reference of aten::_ptl_rnn_layer).
    keep[t] (packed input only): [B, 1] bool, True for the sequences still running at step t.

    The input projection of all steps is one GEMM, each step one GEMM and one cell."""
    w_ih, w_hh, b_ih, b_hh, w_hr = weights
    lstm = mode == "LSTM"
    x_gates = _input_gates(mode, x, w_ih, b_ih, b_hh).unbind(0)
    step = _steps(mode, x.dtype, w_hh, b_ih, b_hh, w_hr)
    steps = range(x.size(0) - 1, -1, -1) if reverse else range(x.size(0))
    outs = [None] * x.size(0)
    for t in steps:
        new = step(x_gates[t], state)
        if keep is not None and keep[t] is not None:
            if lstm:
                new = (torch.where(keep[t], new[0], state[0]),
                       torch.where(keep[t], new[1], state[1]))
            else:
                new = torch.where(keep[t], new, state)
        state = new
        outs[t] = state[0] if lstm else state
    if outs:
        out = _stack(outs)
    else:
        h = state[0] if lstm else state
        out = h.new_zeros((0,) + tuple(h.shape))
    return out, state


def _run_stack(mode, input, hx, weights, num_directions, dropout, batch_sizes=None):
    """The layers of nn.RNN / LSTM / GRU and of torch.rnn_tanh / lstm / gru: input [T, B, I]
    (time-major); hx [L*D, B, H] (LSTM: a pair); weights[layer * D + d] the (w_ih, w_hh, b_ih,
    b_hh, w_hr) of a layer and direction; dropout applied to every layer's output but the
    last's (0: none) -> (output [T, B, D*H], h_n) (LSTM: (h_n, c_n))."""
    lstm = mode == "LSTM"
    num_layers = len(weights) // num_directions
    finals = []
    x = input
    for layer in range(num_layers):
        outs = []
        x = x.contiguous()
        for d in range(num_directions):
            k = layer * num_directions + d
            state = (hx[0][k], hx[1][k]) if lstm else hx[k]
            out, state = _run_direction(mode, x, state, weights[k], d == 1, batch_sizes)
            outs.append(out)
            finals.append(state)
        x = outs[0] if num_directions == 1 else torch.cat(outs, 2)
        if dropout > 0 and layer < num_layers - 1:
            x = F.dropout(x, dropout, True)
    if lstm:
        return x, (torch.stack([s[0] for s in finals], 0),
                   torch.stack([s[1] for s in finals], 0))
    return x, torch.stack(finals, 0)


def _run_packed(mode, data, batch_sizes, hx, weights, num_directions, dropout):
    """_run_stack on a packed sequence's data [N, I] and batch_sizes (int64 [T], sorted by
    length) -> (output data [N, D*H], h_n)."""
    padded, _ = pad_packed_sequence(PackedSequence(data, batch_sizes))
    output, h_n = _run_stack(mode, padded, hx, weights, num_directions, dropout, batch_sizes)
    rows = torch.tensor(_packed_rows(batch_sizes.tolist()), dtype=torch.int64)
    return output.reshape(output.size(0) * output.size(1), -1).index_select(0, rows), h_n


class RNNBase(Module):
    """Holds weight_ih_l{k}[_reverse], weight_hh_l{k}, bias_ih_l{k}, bias_hh_l{k} (and LSTM's
    weight_hr_l{k}), all ~ U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, proj_size=0,
                 device=None, dtype=None):
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        if (not isinstance(dropout, numbers.Number) or isinstance(dropout, bool)
                or not 0 <= dropout <= 1):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                          "non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}")
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError("batch_first should be of type bool, got: "
                            f"{type(batch_first).__name__}")
        if not isinstance(input_size, int):
            raise TypeError(f"input_size should be of type int, got: {type(input_size).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        gate_size = _GATES[mode] * hidden_size
        real_hidden_size = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            layer_input_size = input_size if layer == 0 else real_hidden_size * num_directions
            for direction in range(num_directions):
                shapes = [("weight_ih_l{}{}", (gate_size, layer_input_size)),
                          ("weight_hh_l{}{}", (gate_size, real_hidden_size))]
                if bias:
                    shapes += [("bias_ih_l{}{}", (gate_size,)), ("bias_hh_l{}{}", (gate_size,))]
                if proj_size > 0:
                    shapes.append(("weight_hr_l{}{}", (proj_size, hidden_size)))
                suffix = "_reverse" if direction == 1 else ""
                names = []
                for fmt, shape in shapes:
                    name = fmt.format(layer, suffix)
                    setattr(self, name, Parameter(torch.empty(shape, device=device, dtype=dtype)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self):
        return [getattr(self, name) for name in self._flat_weights_names]

    @property
    def all_weights(self):
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self):
        pass

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _weights(self, layer, direction):
        """(w_ih, w_hh, b_ih, b_hh, w_hr) of one layer and direction; absent ones are None."""
        suffix = "_reverse" if direction == 1 else ""

        def get(kind):
            return getattr(self, f"{kind}_l{layer}{suffix}", None)
        return (get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh"),
                get("weight_hr"))

    def check_input(self, input, batch_sizes=None):
        w = self._flat_weights[0]
        if input.dtype != w.dtype:
            raise ValueError(
                f"RNN input dtype ({input.dtype}) does not match weight dtype ({w.dtype}). "
                f"Convert input: input.to({w.dtype}), or convert model: model.to({input.dtype})")
        expected_input_dim = 2 if batch_sizes is not None else 3
        if input.dim() != expected_input_dim:
            raise RuntimeError(f"input must have {expected_input_dim} dimensions, got "
                               f"{input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError("input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.size(-1)}")

    def _state_size(self, input, batch_sizes, size):
        """(num_layers * num_directions, mini-batch, size): the shape of h_0 or LSTM's c_0."""
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        return (self.num_layers * num_directions, mini_batch, size)

    def get_expected_hidden_size(self, input, batch_sizes=None):
        size = self.proj_size if self.proj_size > 0 else self.hidden_size
        return self._state_size(input, batch_sizes, size)

    def check_hidden_size(self, hx, expected_hidden_size, msg="Expected hidden size {}, got {}"):
        if tuple(hx.shape) != expected_hidden_size:
            raise RuntimeError(msg.format(expected_hidden_size, list(hx.shape)))

    def check_forward_args(self, input, hidden, batch_sizes=None):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def _stack_args(self):
        """(weights, num_directions, dropout) of _run_stack and _run_packed."""
        num_directions = 2 if self.bidirectional else 1
        weights = [self._weights(layer, d) for layer in range(self.num_layers)
                   for d in range(num_directions)]
        return weights, num_directions, self.dropout if self.training else 0.0

    def _run(self, input, hx):
        """input [T, B, I] (time-major); hx [L*D, B, H] (LSTM: a pair) -> (output, h_n)."""
        return _run_stack(self.mode, input, hx, *self._stack_args())

    def _forward_packed(self, input, hx):
        """A PackedSequence in, a PackedSequence out; hx and h_n in the caller's batch order."""
        data, batch_sizes, sorted_indices, unsorted_indices = input
        lstm = self.mode == "LSTM"
        if hx is None:
            hx = data.new_zeros(self.get_expected_hidden_size(data, batch_sizes))
            if lstm:
                hx = (hx, data.new_zeros(self.get_expected_cell_size(data, batch_sizes)))
        elif sorted_indices is not None:
            if lstm:
                hx = (hx[0].index_select(1, sorted_indices), hx[1].index_select(1, sorted_indices))
            else:
                hx = hx.index_select(1, sorted_indices)
        self.check_forward_args(data, hx, batch_sizes)
        output, h_n = _run_packed(self.mode, data, batch_sizes, hx, *self._stack_args())
        if unsorted_indices is not None:
            if lstm:
                h_n = (h_n[0].index_select(1, unsorted_indices),
                       h_n[1].index_select(1, unsorted_indices))
            else:
                h_n = h_n.index_select(1, unsorted_indices)
        return PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices), h_n

    def _forward(self, input, hx, name):
        """Shared by RNN and GRU: unbatched input, default hx, checks, batch_first."""
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        if input.dim() not in (2, 3):
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D"
                             + (" tensor instead" if name == "RNN" else " instead"))
        batched = input.dim() == 3
        if not batched:
            input = input.unsqueeze(0 if self.batch_first else 1)
            if hx is not None:
                if hx.dim() != 2:
                    raise RuntimeError("For unbatched 2-D input, hx should also be 2-D but got "
                                       f"{hx.dim()}-D tensor")
                hx = hx.unsqueeze(1)
        elif hx is not None and hx.dim() != 3:
            raise RuntimeError("For batched 3-D input, hx should also be 3-D but got "
                               f"{hx.dim()}-D tensor")
        if hx is None:
            hx = input.new_zeros(self.get_expected_hidden_size(input))
        self.check_forward_args(input, hx)
        x = input.transpose(0, 1) if self.batch_first else input
        output, h_n = self._run(x, hx)
        if self.batch_first:
            output = output.transpose(0, 1)
        if not batched:
            output = output.squeeze(0 if self.batch_first else 1)
            h_n = h_n.squeeze(1)
        return output, h_n

    def extra_repr(self):
        return f"{self.input_size}, {self.hidden_size}" + _non_default_options(self, [
            ("proj_size", 0), ("num_layers", 1), ("bias", True), ("batch_first", False),
            ("dropout", 0), ("bidirectional", False)])


class RNN(RNNBase):
    """h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (nonlinearity='relu': relu)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' "
                             "or 'relu'.")
        super().__init__(mode, *args, **kwargs)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        return self._forward(input, hx, "RNN")


class GRU(RNNBase):
    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):
        return self._forward(input, hx, "GRU")


class LSTM(RNNBase):
    """Returns (output, (h_n, c_n)); with proj_size > 0, h is projected by weight_hr."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input, batch_sizes=None):
        return self._state_size(input, batch_sizes, self.hidden_size)

    def check_forward_args(self, input, hidden, batch_sizes=None):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def forward(self, input, hx=None):
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        if input.dim() not in (2, 3):
            raise ValueError(f"LSTM: Expected input to be 2D or 3D, got {input.dim()}D instead")
        batched = input.dim() == 3
        if not batched:
            input = input.unsqueeze(0 if self.batch_first else 1)
        if hx is None:
            hx = (input.new_zeros(self.get_expected_hidden_size(input)),
                  input.new_zeros(self.get_expected_cell_size(input)))
        else:
            want = 3 if batched else 2
            if hx[0].dim() != want or hx[1].dim() != want:
                kind = "batched 3-D" if batched else "unbatched 2-D"
                raise RuntimeError(f"For {kind} input, hx and cx should also be {want}-D but got "
                                   f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
            if not batched:
                hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
        self.check_forward_args(input, hx)
        x = input.transpose(0, 1) if self.batch_first else input
        output, (h_n, c_n) = self._run(x, hx)
        if self.batch_first:
            output = output.transpose(0, 1)
        if not batched:
            output = output.squeeze(0 if self.batch_first else 1)
            h_n, c_n = h_n.squeeze(1), c_n.squeeze(1)
        return output, (h_n, c_n)


class RNNCellBase(Module):
    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(torch.empty((num_chunks * hidden_size, input_size),
                                               device=device, dtype=dtype))
        self.weight_hh = Parameter(torch.empty((num_chunks * hidden_size, hidden_size),
                                               device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(torch.empty(num_chunks * hidden_size, device=device,
                                                 dtype=dtype))
            self.bias_hh = Parameter(torch.empty(num_chunks * hidden_size, device=device,
                                                 dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _check_sizes(self, input, hxs):
        """torch's C++ check_rnn_cell_forward_{input,hidden} messages."""
        if input.size(1) != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.size(1)} "
                               f"expected {self.input_size}")
        for i, h in enumerate(hxs):
            if input.size(0) != h.size(0):
                raise RuntimeError(f"Input batch size {input.size(0)} doesn't match hidden{i} "
                                   f"batch size {h.size(0)}")
            if h.size(1) != self.hidden_size:
                raise RuntimeError(f"hidden{i} has inconsistent hidden_size: got {h.size(1)}, "
                                   f"expected {self.hidden_size}")

    def _forward(self, name, mode, input, hx):
        """The cells' forward: torch's checks, an unbatched input (1-D) and a zero default
        state (LSTM: a pair), then the step that nn.RNN / LSTM / GRU take.  mode None: an
        RNNCell nonlinearity that is neither tanh nor relu."""
        lstm = mode == "LSTM"
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        states = () if hx is None else tuple(hx) if lstm else (hx,)
        for k, h in enumerate(states):
            if h.dim() not in (1, 2):
                what = f"hx[{k}]" if lstm else "hidden"
                raise ValueError(f"{name}: Expected {what} to be 1D or 2D, got {h.dim()}D instead")
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
            states = tuple(h.unsqueeze(0) for h in states)
        if not states:
            zeros = input.new_zeros((input.size(0), self.hidden_size))
            states = (zeros, zeros) if lstm else (zeros,)
        self._check_sizes(input, states)
        if mode is None:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        gates = _input_gates(mode, input, self.weight_ih, self.bias_ih, self.bias_hh)
        out = _steps(mode, input.dtype, self.weight_hh, self.bias_ih, self.bias_hh,
                     None)(gates, states if lstm else states[0])
        if batched:
            return out
        return tuple(o.squeeze(0) for o in out) if lstm else out.squeeze(0)


class RNNCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        mode = {"tanh": "RNN_TANH", "relu": "RNN_RELU"}.get(self.nonlinearity)
        return self._forward("RNNCell", mode, input, hx)


class LSTMCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        return self._forward("LSTMCell", "LSTM", input, hx)


class GRUCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        return self._forward("GRUCell", "GRU", input, hx)
