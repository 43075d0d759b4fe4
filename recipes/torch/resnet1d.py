"""A small 1-D ResNet for the worked example recipes/torch_resnet.toml, as a
user would write one (after Wang et al. 2017): `blocks` residual blocks of
two 'same' convolutions (kernel 7) with BatchNorm and ReLU, a 1x1
shortcut convolution where the width changes, global average pooling, a
dropout and a linear layer. forward returns the LOGITS (the recipe says
output = "logits"; uaxai applies the softmax).

The blocks are the submodules blocks.0 .. blocks.{blocks-1}; the last
convolutional block, the layer to name for Grad-CAM, is "blocks.2" with
the defaults: its output is (2 * width) x 640 for an input of 640 samples
(no stride, no pooling before the global average). `dropout` is the p of
the torch.nn.Dropout before the linear layer (the module "drop"); with
p > 0 it is what MC dropout switches on. scripts/train_torch_example.py
trains this module on uaxai's own data.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    """relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)), length kept."""

    def __init__(self, cin, cout, kernel=7):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv1d(cin, cout, kernel, padding=kernel // 2), nn.BatchNorm1d(cout)
        self.conv2, self.bn2 = nn.Conv1d(cout, cout, kernel, padding=kernel // 2), nn.BatchNorm1d(cout)
        if cin != cout:
            self.shortcut = nn.Sequential(nn.Conv1d(cin, cout, 1), nn.BatchNorm1d(cout))
        else:
            self.shortcut = nn.Identity()

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + self.shortcut(x))


class ResNet1D(nn.Module):
    """(B, in_channels, T) -> (B, classes) logits. Widths: width for the
    first block, 2 * width for the others."""

    def __init__(self, in_channels=1, classes=16, width=16, blocks=3, dropout=0.0):
        super().__init__()
        widths = [width] + [2 * width] * (blocks - 1)
        self.blocks = nn.Sequential(*[Block(cin, cout) for cin, cout in zip([in_channels] + widths, widths)])
        self.drop = nn.Dropout(dropout)
        self.fc = nn.Linear(widths[-1], classes)

    def forward(self, x):
        h = self.blocks(x).mean(dim=2)  # global average pool: (B, widths[-1])
        return self.fc(self.drop(h))


if __name__ == "__main__":
    m = ResNet1D()
    print(m(torch.zeros(2, 1, 640)).shape, sum(p.numel() for p in m.parameters()), "parameters")
