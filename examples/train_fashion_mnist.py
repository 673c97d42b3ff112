"""Train a small CNN on Fashion-MNIST from Python with RN.

After the README's main command (`bash scripts/run-main.sh`, which builds the
compiler, the runtime and the rn._native extension into build/):

    PYTHONPATH=python-frontend python3 examples/train_fashion_mnist.py
    PYTHONPATH=python-frontend python3 examples/train_fashion_mnist.py --model mlp --lr 0.1 --epochs 1

It is rn-run's recipe (the same data order, learning rates and evaluation),
written as a loop you can change: the model, the schedule, the logging.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import rn
from rn import data, models


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="fashion_cnn", choices=["fashion_cnn", "mlp", "lenet5"])
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--executor", default="auto")
    p.add_argument("--limit-train", type=int, default=None, help="first K training examples")
    p.add_argument("--limit-test", type=int, default=None, help="first K test examples")
    p.add_argument("--data", default=str(data.FASHION_MNIST))
    p.add_argument("--out", default="build/examples", help="folder for the artifact and checkpoint")
    args = p.parse_args()

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    artifact = rn.compile(models.build(args.model), out / f"{args.model}.rnx", batch=args.batch,
                          input_shape=(1, 28, 28), num_classes=10, name=args.model)
    trainer = rn.Trainer(artifact, executor=args.executor, seed=0)
    print(trainer)

    train_images, train_labels = data.fashion_mnist(args.data, "train", args.limit_train)
    test_images, test_labels = data.fashion_mnist(args.data, "test", args.limit_test)
    steps = len(train_labels) // trainer.batch_size  # the last short batch is dropped
    for epoch in range(args.epochs):
        start = time.perf_counter()
        order = data.epoch_order(len(train_labels), trainer.seed, epoch)
        for s in range(steps):
            rows = order[s * trainer.batch_size : (s + 1) * trainer.batch_size]
            lr = rn.cosine_lr(epoch * steps + s, peak=args.lr, total_steps=steps * args.epochs)
            trainer.step(train_images[rows], train_labels[rows], lr=lr)
        losses = trainer.losses()  # waits for the epoch's steps
        seconds = time.perf_counter() - start
        loss, accuracy = trainer.evaluate(test_images, test_labels)
        print(f"epoch {epoch + 1}/{args.epochs}: train loss {sum(losses) / len(losses):.6f}, "
              f"test loss {loss:.6f}, accuracy {100 * accuracy:.2f}% "
              f"({steps / seconds:.1f} steps/s)")
        trainer.save(out / f"{args.model}.checkpoint.safetensors", steps_per_epoch=steps,
                     lr=args.lr, epochs=args.epochs)


if __name__ == "__main__":
    main()
