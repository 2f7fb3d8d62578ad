"""Models with learned weights, trained in seconds on scikit-learn's bundled ``load_digits`` (8x8
grey digits, 1797 images, nothing downloaded), for tests that judge reduced-precision accuracy.

``digits_cnn()`` trains a small CNN (about 97% test top-1 in fp32 after 6 epochs); ``sensitive_digits_cnn()`` is
the same network made sensitive to INT8 on purpose: one channel of ``conv1``'s output scaled up
1000x and ``conv2``'s weights for that channel scaled down by the same factor, identical in fp32
but ruined by per-tensor activation quantization of ``conv1``'s output. The planted layers are
``SENSITIVE_LAYERS``.
"""

from __future__ import annotations

import functools
import hashlib
import tempfile
from pathlib import Path

import torch
from torch import nn

from trtbench.core.fsutil import atomic_write

SENSITIVE_LAYERS = ("conv1", "conv2")  # the layers whose quantization the planted channel breaks
_SCALE = 1000.0


class DigitsCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(32 * 2 * 2, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.conv1(x)))
        x = self.pool(torch.relu(self.conv2(x)))
        return self.fc(torch.flatten(x, 1))


@functools.lru_cache(maxsize=1)
def digits_data() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(train_x, train_y, test_x, test_y): images as float32 N x 1 x 8 x 8 in [0, 1], a fixed split."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
    y = torch.tensor(digits.target, dtype=torch.int64)
    order = torch.randperm(len(y), generator=torch.Generator().manual_seed(0))
    x, y = x[order], y[order]
    split = 1400
    return x[:split], y[:split], x[split:], y[split:]


@functools.lru_cache(maxsize=1)
def _trained_state() -> dict:
    """The trained weights, trained once per machine: kept in the temp folder under a key of this file's source and
    torch's version, so that another process that builds the model (a timing worker rebuilding it, the other test
    process) loads them instead of training again (seconds each). Written whole or not at all."""
    key = hashlib.sha256(Path(__file__).read_bytes() + torch.__version__.encode()).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"trtbench-tests-digits-cnn-{key}.pt"
    try:
        return torch.load(path, weights_only=True)
    except Exception:  # not written yet (or unreadable): train, and keep it for the next process
        state = _train()
    atomic_write(path, lambda tmp: torch.save(state, tmp))
    return state


def _train() -> dict:
    torch.manual_seed(0)
    model = DigitsCNN()
    train_x, train_y, _, _ = digits_data()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    model.train()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # steps this small spend more time syncing threads than computing: 1 thread is 5x faster
    try:
        with torch.enable_grad():  # also when first called under no_grad
            for _epoch in range(6):
                for start in range(0, len(train_y), 64):
                    optimizer.zero_grad()
                    loss = nn.functional.cross_entropy(model(train_x[start:start + 64]), train_y[start:start + 64])
                    loss.backward()
                    optimizer.step()
    finally:
        torch.set_num_threads(threads)
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def digits_cnn() -> nn.Module:
    """The trained CNN, in eval mode (a fresh copy each call)."""
    model = DigitsCNN()
    model.load_state_dict(_trained_state())
    return model.eval()


def sensitive_digits_cnn(channel: int | None = None) -> nn.Module:
    """:func:`digits_cnn` with one planted outlier channel; equal to it in fp32 (up to rounding).

    By default the channel is ``conv1``'s most active one on the training images: a channel the ReLU
    always zeroes (training leaves some dead) would carry no outlier and plant nothing."""
    model = digits_cnn()
    with torch.no_grad():
        if channel is None:
            channel = int(torch.relu(model.conv1(digits_data()[0])).mean(dim=(0, 2, 3)).argmax())
        model.conv1.weight[channel] *= _SCALE
        model.conv1.bias[channel] *= _SCALE
        model.conv2.weight[:, channel] /= _SCALE
    return model


def top1(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    with torch.inference_mode():
        return (model(x).argmax(1) == y).float().mean().item()
