"""Writes a small CIFAR-10 binary folder of learnable synthetic images.

    write_cifar.py OUT TRAIN_PER_FILE TEST

OUT/data_batch_1.bin ... data_batch_5.bin (TRAIN_PER_FILE records each) and
OUT/test_batch.bin (TEST records): each record one label byte and 3,072
bytes of a 32x32 image in CHW order, as CIFAR-10's files. Class k's images
are noise around a bright square at a place and color of its own, so that
a small network learns them within an epoch; everything is drawn from a
fixed seed.
"""

import sys
from pathlib import Path

import numpy as np


def records(rng: np.random.Generator, count: int) -> bytes:
    labels = rng.integers(0, 10, size=count, dtype=np.uint8)
    images = rng.integers(0, 96, size=(count, 3, 32, 32), dtype=np.uint8)
    for i, label in enumerate(labels):
        top, left = 4 + 2 * (label // 5) * 6, 4 + 4 * (label % 5)
        images[i, label % 3, top:top + 10, left:left + 10] = 255
    out = np.concatenate([labels[:, None], images.reshape(count, -1)], axis=1)
    return out.astype(np.uint8).tobytes()


def main() -> None:
    out, per_file, test = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(31)
    for k in range(1, 6):
        (out / f"data_batch_{k}.bin").write_bytes(records(rng, per_file))
    (out / "test_batch.bin").write_bytes(records(rng, test))


if __name__ == "__main__":
    main()
