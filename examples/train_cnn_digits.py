"""Train a small CNN (conv 1->16, relu, maxpool, conv 16->32, relu, maxpool, linear 128->10)
on the bundled 8x8 handwritten digits with Adam.

    python examples/train_cnn_digits.py                 # 15 epochs, ~98% test accuracy
    python examples/train_cnn_digits.py --epochs 2 --steps 10

Ordinary PyTorch code: only the import line and the bundled data set are pytorchlite's
(the data, the loop and the command line are in digits_common.py).
"""
from digits_common import nn, torch, train_digits


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)     # [B, 16, 8, 8]
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)    # [B, 32, 4, 4]
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(32 * 2 * 2, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.conv1(x)))
        x = self.pool(torch.relu(self.conv2(x)))
        return self.fc(torch.flatten(x, 1))


def main(argv=None):
    return train_digits(__doc__, argv, Net,
                        lambda params, lr: torch.optim.Adam(params, lr=lr),
                        epochs=15, lr=3e-3)


if __name__ == "__main__":
    main()
