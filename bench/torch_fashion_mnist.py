"""PyTorch reference for rn-run's Fashion-MNIST training: the same models,
data order rules, optimizer and learning-rate schedule, to tell whether an
accuracy reached with the CPU executor is what the model and recipe give.

What matches rn-run (docs/rn-run.md): pixels / 255 normalized with
mean 0.2860 and std 0.3530; batch 64 with the incomplete last training batch
dropped; torch.optim.SGD (momentum 0.9, dampening 0, no weight decay, the
defaults of rn-build-training); the learning rate of 0-based step g is
linear warmup then lr * (1 + cos(pi * (g - warmup) / (total - warmup))) / 2,
set before each step; evaluation on the whole test set with the running
BatchNorm statistics. What does not: the shuffling permutation, the dropout
masks and the initial parameters (PyTorch's own RNG; the same default
initialization rules).

    python3 bench/torch_fashion_mnist.py --model fashion_cnn --epochs 2 --lr 0.05 \\
        --data /usr/share/datasets/fashion-mnist

Prints one line per epoch, like rn-run's summary lines.
"""

from __future__ import annotations

import argparse
import gzip
import math
import struct
import time
from pathlib import Path

import torch
import torch.nn as nn

MEAN, STD = 0.2860, 0.3530


def read_idx(path: Path) -> torch.Tensor:
    data = gzip.decompress(path.read_bytes())
    magic, = struct.unpack(">I", data[:4])
    dims = magic & 0xFF
    shape = struct.unpack(">" + "I" * dims, data[4 : 4 + 4 * dims])
    return torch.frombuffer(bytearray(data[4 + 4 * dims :]), dtype=torch.uint8).reshape(shape)


def load(data_dir: Path, split: str) -> tuple[torch.Tensor, torch.Tensor]:
    images = read_idx(data_dir / f"{split}-images-idx3-ubyte.gz").float().div(255)
    labels = read_idx(data_dir / f"{split}-labels-idx1-ubyte.gz").long()
    return ((images - MEAN) / STD).unsqueeze(1), labels


def conv_bn_relu(cin: int, cout: int) -> list[nn.Module]:
    return [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU()]


def fashion_cnn() -> nn.Module:
    """python-frontend/rn/models.py's fashion_cnn."""
    return nn.Sequential(
        *conv_bn_relu(1, 32), nn.MaxPool2d(2),
        *conv_bn_relu(32, 64), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Dropout(0.5), nn.Linear(128, 10),
    )


def mlp() -> nn.Module:
    """python-frontend/rn/models.py's mlp."""
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 1024), nn.ReLU(),
                         nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))


MODELS = {"fashion_cnn": fashion_cnn, "mlp": mlp}


def scheduled_lr(peak: float, step: int, warmup: int, total: int) -> float:
    if step < warmup:
        return peak * (step + 1) / warmup
    if total <= warmup:
        return peak
    return peak * 0.5 * (1 + math.cos(math.pi * (step - warmup) / (total - warmup)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(MODELS), default="fashion_cnn")
    parser.add_argument("--data", type=Path, default=Path("/usr/share/datasets/fashion-mnist"))
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--warmup-epochs", type=float, default=0.0)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    train_x, train_y = (t.to(device) for t in load(args.data, "train"))
    test_x, test_y = (t.to(device) for t in load(args.data, "t10k"))
    model = MODELS[args.model]().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    steps_per_epoch = len(train_x) // args.batch
    total = steps_per_epoch * args.epochs
    warmup = min(total, round(args.warmup_epochs * steps_per_epoch))
    print(f"torch {args.model}: batch {args.batch}, {steps_per_epoch} steps/epoch, "
          f"{args.epochs} epochs, lr {args.lr}, warmup {args.warmup_epochs} epochs, "
          f"cosine decay, device {device}")
    for epoch in range(args.epochs):
        start = time.perf_counter()
        model.train()
        order = torch.randperm(len(train_x), device=device)
        loss_sum = torch.zeros((), device=device)
        for s in range(steps_per_epoch):
            g = epoch * steps_per_epoch + s
            for group in opt.param_groups:
                group["lr"] = scheduled_lr(args.lr, g, warmup, total)
            idx = order[s * args.batch : (s + 1) * args.batch]
            loss = nn.functional.cross_entropy(model(train_x[idx]), train_y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss_sum += loss.detach()
        model.eval()
        with torch.no_grad():
            logits = torch.cat([model(test_x[i : i + 1000]) for i in range(0, len(test_x), 1000)])
            test_loss = nn.functional.cross_entropy(logits, test_y).item()
            accuracy = (logits.argmax(1) == test_y).float().mean().item()
        print(f"epoch {epoch + 1}/{args.epochs} train loss {loss_sum.item() / steps_per_epoch:.6f} "
              f"test loss {test_loss:.6f} accuracy {100 * accuracy:.2f}% "
              f"({time.perf_counter() - start:.1f} s)", flush=True)


if __name__ == "__main__":
    main()
