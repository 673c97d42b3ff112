"""Writes the first TRAIN and TEST examples of Fashion-MNIST's IDX files as a PNG folder.

    fashion_to_png.py IDX_DIR OUT TRAIN TEST

OUT/png/train/<label>/<index>.png and OUT/png/val/<label>/<index>.png:
8-bit grayscale 28x28 PNGs written by hand (zlib and struct, no imaging
package), the class folders 0..9 (byte-wise sorted order is the numeric
one), file names the example's zero-padded index, so that the folder's
order (class by class, names sorted) is a stable sort of the examples by
label. OUT.npz: numpy.savez of the same examples in that order, under
Keras' keys. Plus the broken folders the error tests read: OUT/corrupt (one
training PNG whose pixel data does not inflate), OUT/size (one 27x28
image), OUT/mismatch (val lacks class 9 and has a class 10), OUT/empty (a
class folder without images), OUT/noclasses, OUT/noval.
"""

import gzip
import shutil
import struct
import sys
import zlib
from pathlib import Path

import numpy as np


def idx(path: Path, offset: int) -> np.ndarray:
    return np.frombuffer(gzip.open(path).read()[offset:], dtype=np.uint8)


def chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png(pixels: np.ndarray) -> bytes:
    """An 8-bit grayscale PNG of `pixels` [H, W] uint8: every row with filter 0 (none)."""
    height, width = pixels.shape
    raw = b"".join(b"\x00" + pixels[y].tobytes() for y in range(height))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8 bits, grayscale
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, 9)) +
            chunk(b"IEND", b""))


def write_split(root: Path, images: np.ndarray, labels: np.ndarray) -> None:
    for i, (image, label) in enumerate(zip(images, labels)):
        folder = root / str(label)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{i:05d}.png").write_bytes(png(image))


def class_order(labels: np.ndarray) -> np.ndarray:
    return np.argsort(labels, kind="stable")


def tiny(root: Path, train: list, val: list, image: np.ndarray) -> None:
    """A folder with one image per listed class of each split."""
    for split, classes in (("train", train), ("val", val)):
        for c in classes:
            (root / split / c).mkdir(parents=True, exist_ok=True)
            (root / split / c / "00000.png").write_bytes(png(image))


def main() -> None:
    src, out, train, test = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    x_train = idx(src / "train-images-idx3-ubyte.gz", 16).reshape(-1, 28, 28)[:train]
    y_train = idx(src / "train-labels-idx1-ubyte.gz", 8)[:train]
    x_test = idx(src / "t10k-images-idx3-ubyte.gz", 16).reshape(-1, 28, 28)[:test]
    y_test = idx(src / "t10k-labels-idx1-ubyte.gz", 8)[:test]
    shutil.rmtree(out, ignore_errors=True)
    write_split(out / "png" / "train", x_train, y_train)
    write_split(out / "png" / "val", x_test, y_test)
    tr, te = class_order(y_train), class_order(y_test)
    np.savez(f"{out}.npz", x_train=x_train[tr], y_train=y_train[tr].astype(np.int64),
             x_test=x_test[te], y_test=y_test[te].astype(np.int64))

    # The first training example in the folder's order, its IDAT data
    # damaged after the zlib header: its header reads, its pixels do not.
    shutil.copytree(out / "png", out / "corrupt")
    first = sorted((out / "corrupt" / "train" / str(min(y_train))).iterdir())[0]
    data = bytearray(first.read_bytes())
    at = data.index(b"IDAT") + 6
    data[at:at + 8] = bytes(b ^ 0xFF for b in data[at:at + 8])
    first.write_bytes(bytes(data))

    shutil.copytree(out / "png", out / "size")
    last = sorted((out / "size" / "val" / str(max(y_test))).iterdir())[-1]
    last.write_bytes(png(x_test[0][:27]))

    classes = [str(c) for c in range(10)]
    tiny(out / "mismatch", classes, classes[:9] + ["10"], x_train[0])
    tiny(out / "empty", classes, classes, x_train[0])
    (out / "empty" / "train" / "3" / "00000.png").unlink()
    (out / "empty" / "train" / "3" / "notes.txt").write_text("not an image\n")
    tiny(out / "noclasses", [], classes, x_train[0])
    (out / "noclasses" / "train").mkdir(parents=True)
    tiny(out / "noval", classes, [], x_train[0])
    shutil.rmtree(out / "noval" / "val", ignore_errors=True)


if __name__ == "__main__":
    main()
