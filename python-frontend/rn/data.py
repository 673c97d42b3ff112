"""Fashion-MNIST as numpy arrays, and rn-run's epoch order, for Python training loops.

>>> from rn import data
>>> images, labels = data.fashion_mnist("/usr/share/datasets/fashion-mnist", "train")  # doctest: +SKIP
>>> images.shape, images.dtype, labels.dtype                                          # doctest: +SKIP
((60000, 28, 28, 1), dtype('float32'), dtype('int64'))

The images are normalized exactly as ``rn-run --data`` normalizes them
(``runtime/data/idx_dataset.h``: pixels scaled to [0, 1], then
``(x - 0.2860) / 0.3530`` in float32), NHWC; :func:`epoch_order` is
rn-run's shuffled order of an epoch, so a Python loop can feed the batches
rn-run feeds.
"""

from __future__ import annotations

import gzip
import os
import struct
from pathlib import Path
from typing import Any

from ._native_loader import native

__all__ = ["FASHION_MNIST", "FASHION_MNIST_MEAN", "FASHION_MNIST_STD", "epoch_order", "fashion_mnist"]

FASHION_MNIST = Path("/usr/share/datasets/fashion-mnist")
"""Where Debian's ``dataset-fashion-mnist`` package puts the IDX files."""
FASHION_MNIST_MEAN = 0.2860
FASHION_MNIST_STD = 0.3530

_FILES = {
    "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
    "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
}


def _read_idx(path: Path, magic: int, dims: int) -> tuple[tuple[int, ...], bytes]:
    with gzip.open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 4 + 4 * dims:
        raise ValueError(f"{path}: too short for an IDX header")
    (found,) = struct.unpack(">I", raw[:4])
    if found != magic:
        raise ValueError(f"{path}: magic {found:#x}, expected {magic:#x}")
    shape = struct.unpack(f">{dims}I", raw[4 : 4 + 4 * dims])
    body = raw[4 + 4 * dims :]
    expected = 1
    for d in shape:
        expected *= d
    if len(body) != expected:
        raise ValueError(f"{path}: {len(body)} bytes of data, the header promises {expected}")
    return shape, body


def fashion_mnist(
    directory: str | os.PathLike[str] = FASHION_MNIST,
    split: str = "train",
    limit: int | None = None,
    *,
    pixels: bool = False,
) -> tuple[Any, Any]:
    """``(images, labels)`` of a split (``"train"`` or ``"test"``): float32 NHWC ``[N, 28, 28, 1]``
    normalized as rn-run does, and int64 labels; the first ``limit`` examples when given.

    ``pixels=True``: the images as stored, uint8, for a model that normalizes on the device
    (compiled with ``input_dtype="uint8"``)."""
    import numpy as np

    if split not in _FILES:
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    folder = Path(directory)
    image_file, label_file = (folder / name for name in _FILES[split])
    for f in (image_file, label_file):
        if not f.is_file():
            raise FileNotFoundError(
                f"{f} not found (Debian: apt-get install dataset-fashion-mnist)"
            )
    (count, rows, cols), image_bytes = _read_idx(image_file, 0x803, 3)
    (label_count,), label_bytes = _read_idx(label_file, 0x801, 1)
    if count != label_count:
        raise ValueError(f"{folder}: {count} images but {label_count} labels")
    n = count if limit is None else min(limit, count)
    raw = np.frombuffer(image_bytes, np.uint8, n * rows * cols).reshape(n, rows, cols, 1)
    labels = np.frombuffer(label_bytes, np.uint8, n).astype(np.int64)
    if pixels:
        return raw.copy(), labels
    inv = np.float32(1.0) / np.float32(FASHION_MNIST_STD)
    images = (raw.astype(np.float32) / np.float32(255.0) - np.float32(FASHION_MNIST_MEAN)) * inv
    return images, labels


def epoch_order(count: int, seed: int, epoch: int) -> Any:
    """rn-run's order of the examples in (0-based) ``epoch`` for ``--seed seed`` (int64 numpy).

    Step ``s`` of the epoch trains examples ``order[s * batch:(s + 1) * batch]``;
    the incomplete last batch is dropped. Needs the native extension.
    """
    return native().shuffled_order(count, seed, epoch)
