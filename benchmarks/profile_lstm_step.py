"""Where the LSTM language model's training step goes (test_bench_rnn.py's lm_step: embedding
65 -> 64, nn.LSTM(64, 128, layers), Linear(128, 65), cross-entropy over T 64 x batch 16, Adam),
pytorchlite next to PyTorch in the same process, one thread:

1. the real step's phases, each timed where it runs inside the step: zero_grad, embedding,
   LSTM forward, head, cross-entropy, backward, Adam;
2. each layer's pieces, timed on the step's shapes and values: the input projection
   x W_ih^T, the recurrent loop forward and backward (aten::_ptl_rnn_layer and its backward:
   ours only, PyTorch has no such op), and the products of the backward that run outside
   the loop or inside it (dx = dG W_ih, dW_ih = dG^T x, dW_hh = dG^T h), each in the layout
   the step computes it in; the products' GFLOP/s are ours.

    taskset -c 1 python benchmarks/profile_lstm_step.py [--layers 2] [--rounds 40]

Each line: our time, PyTorch's, and PyTorch's / ours (> 1: we are faster), the minimum over
the rounds of each piece's thread CPU time, the two libraries alternating round by round.
docs/performance.md (LSTM backward fetch) quotes it.  Needs PyTorch."""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pytorchlite  # noqa: E402
from _interleave import phase_minima  # noqa: E402
import test_bench_rnn as rnn  # noqa: E402


def model_and_data(lib, layers):
    """The language model of rnn.lm_step, with the same weights and tokens."""
    nn = lib.nn
    embed = nn.Embedding(rnn.VOCAB, rnn.EMBED)
    lstm = nn.LSTM(rnn.EMBED, rnn.LM_HIDDEN, layers)
    head = nn.Linear(rnn.LM_HIDDEN, rnn.VOCAB)
    params = list(embed.parameters()) + list(lstm.parameters()) + list(head.parameters())
    rng = np.random.default_rng(0)
    with lib.no_grad():
        for p in params:
            p.copy_(lib.tensor(rng.uniform(-0.1, 0.1, tuple(p.shape)).astype(np.float32)))
    g = np.random.default_rng(1)
    x = lib.tensor(g.integers(0, rnn.VOCAB, (rnn.LM_SEQ, rnn.LM_BATCH)))
    y = lib.tensor(g.integers(0, rnn.VOCAB, (rnn.LM_SEQ * rnn.LM_BATCH,)))
    return embed, lstm, head, params, x, y


def phases(lib, layers):
    F = lib.nn.functional
    embed, lstm, head, params, x, y = model_and_data(lib, layers)
    opt = lib.optim.Adam(params, lr=1e-3)

    def run(T):
        t0 = time.thread_time()
        T("zero_grad", opt.zero_grad)
        e = T("embedding", lambda: embed(x))
        h = T("LSTM forward", lambda: lstm(e)[0])
        logits = T("head (Linear 128 -> 65)", lambda: head(h))
        loss = T("cross_entropy", lambda: F.cross_entropy(logits.reshape(-1, rnn.VOCAB), y))
        T("backward", loss.backward)
        T("Adam step", opt.step)
        return time.thread_time() - t0
    return run


def layer_inputs(layers):
    """The step's embedding output and each layer's output h (float32 NumPy arrays), from
    pytorchlite's model: layer k + 1's input and the h of layer k's dW_hh carry the step's
    values.  (Random normal values there, about ten times the step's, sent the cells' tanh
    down both of its paths: layer 1's loop read 10% slower than layer 0's.)"""
    embed, lstm, head, params, x, y = model_and_data(pytorchlite, layers)
    with pytorchlite.no_grad():
        xs = [embed(x)]
        for k in range(layers):
            w_ih, w_hh, b_ih, b_hh = [getattr(lstm, f"{n}_l{k}") for n in
                                      ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
            h0 = pytorchlite.zeros(rnn.LM_BATCH, rnn.LM_HIDDEN)
            gates = pytorchlite.nn.functional.linear(xs[-1], w_ih)
            xs.append(pytorchlite.ops.aten._ptl_rnn_layer(gates, h0, h0, w_hh, b_ih, b_hh, None,
                                                          2, False, None)[0])
    return [v.numpy() for v in xs]


def pieces(lib, layers):
    """Each layer's pieces on the step's shapes (float32, the step's weights)."""
    F = lib.nn.functional
    ours = lib is pytorchlite
    embed, lstm, head, params, x, y = model_and_data(lib, layers)
    g = np.random.default_rng(2)
    T_, B, H = rnn.LM_SEQ, rnn.LM_BATCH, rnn.LM_HIDDEN
    xs = [lib.tensor(v) for v in layer_inputs(layers)]   # layer k's input; xs[layers]: h
    # the gate gradients as the layer's backward leaves them: rows padded by a cache line
    dg = lib.tensor(g.standard_normal((T_ * B, 4 * H + 16)).astype(np.float32))[:, :4 * H]
    gout = lib.tensor(g.standard_normal((T_, B, H)).astype(np.float32))
    h0 = lib.zeros(B, H)
    w = {k: [getattr(lstm, f"{n}_l{k}").detach() for n in ("weight_ih", "weight_hh",
                                                           "bias_ih", "bias_hh")]
         for k in range(layers)}

    def run(T):
        with lib.no_grad():
            for k in range(layers):
                w_ih, w_hh, b_ih, b_hh = w[k]
                xk = xs[k].reshape(T_ * B, -1)
                i = xk.shape[1]
                gates = T(f"L{k} x W_ih^T {T_ * B}x{i}x{4 * H}", lambda: F.linear(xs[k], w_ih))
                T(f"L{k} dx = dG W_ih {T_ * B}x{4 * H}x{i}", lambda: lib.mm(dg, w_ih))
                T(f"L{k} dW_ih = dG^T x {4 * H}x{T_ * B}x{i}", lambda: lib.mm(dg.t(), xk))
                T(f"L{k} dW_hh = dG^T h {4 * H}x{T_ * B}x{H}",
                  lambda: lib.mm(dg.t(), xs[k + 1].reshape(T_ * B, H)))
                if not ours:
                    continue
                aten = lib.ops.aten
                w_hh_g = w_hh.clone().requires_grad_()   # the op keeps every step's state
                with lib.enable_grad():
                    out, ws, _, _ = T(f"L{k} loop forward (ours only)",
                                      lambda: aten._ptl_rnn_layer(gates, h0, h0, w_hh_g, b_ih,
                                                                  b_hh, None, 2, False, None))
                T(f"L{k} loop backward (ours only)", lambda: aten._ptl_rnn_layer_backward(
                    gout, None, None, h0, h0, w_hh, None, out.detach(), ws.detach(), 2, False,
                    None, True))
        return 0.0
    return run


def table(title, make, layers, rounds):
    libs = {"pytorchlite": pytorchlite}
    import torch
    libs["torch"] = torch
    runs = {name: make(lib, layers) for name, lib in libs.items()}
    best, total = phase_minima(runs, rounds)
    print(f"\n{title}")
    ours, ref = best["pytorchlite"], best["torch"]
    for piece in ours:
        dims = piece.split()[-1].split("x")
        rate = ""
        if len(dims) == 3 and all(d.isdigit() for d in dims):
            m, k, n = map(int, dims)
            rate = f"  {2 * m * k * n / ours[piece] / 1e9:6.1f} GFLOP/s"
        if piece in ref:
            print(f"  {piece:38s} ours {ours[piece] * 1e3:7.3f} ms  torch "
                  f"{ref[piece] * 1e3:7.3f} ms  {ref[piece] / ours[piece]:5.2f}{rate}")
        else:
            print(f"  {piece:38s} ours {ours[piece] * 1e3:7.3f} ms{rate}")
    if total["pytorchlite"] > 0:
        a, b = total["pytorchlite"], total["torch"]
        print(f"  {'whole step (min of the rounds)':38s} ours {a * 1e3:7.3f} ms  torch "
              f"{b * 1e3:7.3f} ms  {b / a:5.2f}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=40)
    args = ap.parse_args(argv)
    import torch
    torch.set_num_threads(1)
    pytorchlite.set_num_threads(1)
    table(f"The {args.layers}-layer step's phases, in place", phases, args.layers, args.rounds)
    table("Each layer's pieces (the loop: 64 steps of 16 x 128 @ 128 x 512 and back)", pieces,
          args.layers, args.rounds)


if __name__ == "__main__":
    main()
