"""Writes the first TRAIN and TEST examples of Fashion-MNIST's IDX files as .npz archives.

    fashion_to_npz.py IDX_DIR OUT_PREFIX TRAIN TEST

OUT_PREFIX.npz: numpy.savez (stored), uint8 images [N, 28, 28] (NHW), int64
labels, as Keras' mnist.npz. OUT_PREFIX.nhwc.npz: numpy.savez_compressed
(deflated), uint8 images [N, 28, 28, 1], uint8 labels. Plus the broken
variants the error tests read: .bad-key.npz (no y_test), .nchw.npz (images
[N, 1, 28, 28]), .f64.npz (float64 images), .truncated.npz (cut short).
"""

import gzip
import sys
from pathlib import Path

import numpy as np


def idx(path: Path, offset: int) -> np.ndarray:
    return np.frombuffer(gzip.open(path).read()[offset:], dtype=np.uint8)


def main() -> None:
    src, prefix, train, test = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    x_train = idx(src / "train-images-idx3-ubyte.gz", 16).reshape(-1, 28, 28)[:train]
    y_train = idx(src / "train-labels-idx1-ubyte.gz", 8)[:train]
    x_test = idx(src / "t10k-images-idx3-ubyte.gz", 16).reshape(-1, 28, 28)[:test]
    y_test = idx(src / "t10k-labels-idx1-ubyte.gz", 8)[:test]
    np.savez(f"{prefix}.npz", x_train=x_train, y_train=y_train.astype(np.int64),
             x_test=x_test, y_test=y_test.astype(np.int64))
    np.savez_compressed(f"{prefix}.nhwc.npz", x_train=x_train[..., None], y_train=y_train,
                        x_test=x_test[..., None], y_test=y_test)
    np.savez(f"{prefix}.bad-key.npz", x_train=x_train, y_train=y_train, x_test=x_test)
    np.savez(f"{prefix}.nchw.npz", x_train=x_train[:, None], y_train=y_train,
             x_test=x_test[:, None], y_test=y_test)
    np.savez(f"{prefix}.f64.npz", x_train=x_train.astype(np.float64), y_train=y_train,
             x_test=x_test.astype(np.float64), y_test=y_test)
    whole = Path(f"{prefix}.npz").read_bytes()
    Path(f"{prefix}.truncated.npz").write_bytes(whole[: len(whole) // 2])


if __name__ == "__main__":
    main()
