"""`python -m pytorchlite.jit MODEL.pt --input x.npy [--input y.npy] [--output out.npy]`:
loads a file written by jit.save (no Python code of the model is needed), runs it on the
NumPy arrays with the C executor (Note [Which graphs run in C]) and prints the output (and
writes it as .npy)."""
import argparse
import sys

import numpy as np

import pytorchlite
from pytorchlite import jit


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m pytorchlite.jit",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="a file written by pytorchlite.jit.save")
    parser.add_argument("--input", action="append", default=[], metavar="X.npy",
                        help="an input array (repeat for each input, in order)")
    parser.add_argument("--output", metavar="Y.npy", help="also write the output here")
    args = parser.parse_args(argv)
    m = jit.load(args.model)
    inputs = [pytorchlite.from_numpy(np.load(p, allow_pickle=False)) for p in args.input]
    with pytorchlite.no_grad():
        out = m(*inputs)
    outs = out if isinstance(out, tuple) else (out,)
    for o in outs:
        print(o)
    if args.output is not None:
        if len(outs) != 1:
            parser.error(f"--output takes a model with one output, this one has {len(outs)}")
        np.save(args.output, outs[0].numpy())
    return 0


if __name__ == "__main__":
    sys.exit(main())
