"""Train a small MLP (64-128-64-10) on the bundled 8x8 handwritten digits with SGD + momentum.

    python examples/train_mlp_digits.py                 # 20 epochs, ~97% test accuracy
    python examples/train_mlp_digits.py --epochs 2 --steps 10

Ordinary PyTorch code: only the import line and the bundled data set are pytorchlite's
(the data, the loop and the command line are in digits_common.py).
"""
from digits_common import nn, torch, train_digits


def make_model():
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64),
                         nn.ReLU(), nn.Linear(64, 10))


def main(argv=None):
    return train_digits(__doc__, argv, make_model,
                        lambda params, lr: torch.optim.SGD(params, lr=lr, momentum=0.9),
                        epochs=20, lr=0.05)


if __name__ == "__main__":
    main()
