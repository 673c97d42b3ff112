"""Train a torchvision ResNet-18 or MobileNetV2 on Fashion-MNIST with RN, then evaluate it in PyTorch.

The model is torchvision's (--model resnet18, the default, or mobilenet_v2),
adapted as a user would (one input channel, ten classes; nothing is
downloaded). RN imports it with its weights
(rn.compile of the torch module), trains it, and copies the trained weights
back into the same torch module (trainer.copy_to); PyTorch then evaluates
that module itself, and its accuracy must equal RN's evaluation:

    PYTHONPATH=python-frontend /usr/bin/python3 examples/finetune_torchvision.py --epochs 1
    PYTHONPATH=python-frontend /usr/bin/python3 examples/finetune_torchvision.py \
        --limit-train 512 --limit-test 256 --executor cpu

It needs a Python with torch and torchvision: Debian's /usr/bin/python3 with
python3-torch and python3-torchvision (apt), or your own Python where they
are installed. The artifact goes to --out, by default
$XDG_CACHE_HOME/rn/examples (~/.cache/rn/examples), outside the clone.

On a machine without the compiler (the GPU machine), compile the artifact
elsewhere with --compile-only, carry it, and pass --artifact: the weight-free
artifact then takes the module's weights with trainer.copy_from.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torchvision
from torch import nn

import rn
from rn import data


MODELS = ("resnet18", "mobilenet_v2")


def build_model(name: str) -> nn.Module:
    """torchvision's `name` for one-channel images and ten classes."""
    torch.manual_seed(0)
    if name == "resnet18":
        model = torchvision.models.resnet18(num_classes=10)
        model.conv1 = nn.Conv2d(1, 64, kernel_size=7, stride=2, padding=3, bias=False)
    elif name == "mobilenet_v2":
        model = torchvision.models.mobilenet_v2(num_classes=10)
        model.features[0][0] = nn.Conv2d(1, 32, kernel_size=3, stride=2, padding=1, bias=False)
    else:
        raise ValueError(f"--model must be one of {', '.join(MODELS)}, got {name!r}")
    return model


def default_out_dir() -> Path:
    """Where artifacts go without --out: $XDG_CACHE_HOME/rn/examples, else ~/.cache/rn/examples
    (beside the trainer's convolution plan cache), outside the clone."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "rn" / "examples"


def torch_accuracy(model: nn.Module, images: np.ndarray, labels: np.ndarray, batch: int) -> float:
    """PyTorch's own evaluation: eval mode, NCHW batches, top-1."""
    model.eval()
    correct = 0
    with torch.no_grad():
        for start in range(0, len(labels), batch):
            x = torch.from_numpy(np.ascontiguousarray(images[start : start + batch].transpose(0, 3, 1, 2)))
            correct += int((model(x).argmax(1).numpy() == labels[start : start + batch]).sum())
    return correct / len(labels)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="resnet18", choices=MODELS)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--executor", default="auto")
    p.add_argument("--precision", default="f32", choices=["f32", "f16"])
    p.add_argument("--limit-train", type=int, default=None)
    p.add_argument("--limit-test", type=int, default=None)
    p.add_argument("--data", default=str(data.FASHION_MNIST))
    p.add_argument("--out", default=None,
                   help=f"folder for the compiled artifact (default: {default_out_dir()})")
    p.add_argument("--artifact", default=None, help="a weight-free artifact compiled elsewhere")
    p.add_argument("--compile-only", action="store_true", help="write the weight-free artifact and stop")
    args = p.parse_args()

    model = build_model(args.model)
    pipeline = "optimizer=sgd momentum=0.9 nesterov=true weight-decay=5e-4"
    if args.precision == "f16":
        pipeline += " precision=f16 loss-scaling=dynamic"
    if args.artifact is None or args.compile_only:
        if args.artifact is not None:
            target = Path(args.artifact)
        else:
            out = Path(args.out) if args.out is not None else default_out_dir()
            out.mkdir(parents=True, exist_ok=True)
            target = out / f"{args.model}-fashion-{args.precision}.rnx"
        artifact = rn.compile(model, target, batch=args.batch, input_shape=(1, 28, 28),
                              num_classes=10, pipeline=pipeline, name=f"torchvision_{args.model}",
                              weights=not args.compile_only)
        if args.compile_only:
            print(f"wrote {artifact} (weight-free)")
            return 0
    else:
        artifact = Path(args.artifact)
    trainer = rn.Trainer(artifact, executor=args.executor, seed=0)
    if args.artifact is not None:
        trainer.copy_from(model)  # a weight-free artifact: the module's weights
    print(trainer)

    train_images, train_labels = data.fashion_mnist(args.data, "train", args.limit_train)
    test_images, test_labels = data.fashion_mnist(args.data, "test", args.limit_test)
    steps = len(train_labels) // trainer.batch_size
    for epoch in range(args.epochs):
        start = time.perf_counter()
        order = data.epoch_order(len(train_labels), trainer.seed, epoch)
        for s in range(steps):
            rows = order[s * trainer.batch_size : (s + 1) * trainer.batch_size]
            lr = rn.cosine_lr(epoch * steps + s, peak=args.lr, total_steps=steps * args.epochs,
                              warmup_steps=min(steps, 50))
            trainer.step(train_images[rows], train_labels[rows], lr=lr)
        losses = trainer.losses()
        seconds = time.perf_counter() - start
        print(f"epoch {epoch + 1}/{args.epochs}: train loss {sum(losses) / len(losses):.4f} "
              f"({steps * trainer.batch_size / seconds:.0f} images/s)")

    _, rn_accuracy = trainer.evaluate(test_images, test_labels)
    trainer.copy_to(model)
    torch_acc = torch_accuracy(model, test_images, test_labels, trainer.batch_size)
    gap = abs(rn_accuracy - torch_acc) * 100
    print(f"RN evaluation: accuracy {100 * rn_accuracy:.2f}%")
    print(f"PyTorch evaluation of the copied-back model: accuracy {100 * torch_acc:.2f}%")
    print(f"difference {gap:.2f} points ({'within' if gap <= 0.1 else 'OVER'} 0.1)")
    return 0 if gap <= 0.1 else 1


if __name__ == "__main__":
    sys.exit(main())
