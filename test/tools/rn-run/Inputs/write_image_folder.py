"""Writes an image folder of RGB PNGs of several sizes, for the resizing tests.

    write_image_folder.py OUT TRAIN_PER_CLASS TEST_PER_CLASS [CLASSES]

OUT/train/<class>/<index>.png and OUT/val/<class>/<index>.png: 8-bit RGB
PNGs written by hand (zlib and struct, no imaging package), each of a size
drawn from 24..96 x 24..96, a smooth gradient with a disc of the class's
color at a random place, so that a small network can learn the classes
after a random-resized crop. Plus OUT/../gray: the same folder with one
training image stored as grayscale (it is read as RGB). Drawn from a fixed
seed.
"""

import struct
import sys
import zlib
from pathlib import Path

import numpy as np

COLORS = [(230, 40, 40), (40, 200, 60), (50, 70, 230), (230, 210, 40), (200, 60, 220)]


def chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png(pixels: np.ndarray) -> bytes:
    """An 8-bit PNG of `pixels` [H, W, 3] (RGB) or [H, W] (grayscale), filter 0 rows."""
    height, width = pixels.shape[:2]
    color = 2 if pixels.ndim == 3 else 0
    raw = b"".join(b"\x00" + pixels[y].tobytes() for y in range(height))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, color, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, 6)) +
            chunk(b"IEND", b""))


def image(rng: np.random.Generator, label: int) -> np.ndarray:
    h, w = int(rng.integers(24, 97)), int(rng.integers(24, 97))
    y, x = np.mgrid[0:h, 0:w]
    base = (60 + 80 * y / h + 40 * x / w).astype(np.float64)
    out = np.stack([base, base[::-1], base[:, ::-1]], axis=-1)
    r = 0.3 * min(h, w)
    cy, cx = rng.uniform(r, h - r), rng.uniform(r, w - r)
    disc = (y - cy) ** 2 + (x - cx) ** 2 < r * r
    out[disc] = COLORS[label % len(COLORS)]
    out += rng.normal(0, 6, out.shape)
    return np.clip(out, 0, 255).astype(np.uint8)


def main() -> None:
    out, train, test = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    classes = int(sys.argv[4]) if len(sys.argv) > 4 else len(COLORS)
    rng = np.random.default_rng(7)
    for split, count in (("train", train), ("val", test)):
        for label in range(classes):
            folder = out / split / f"class{label}"
            folder.mkdir(parents=True, exist_ok=True)
            for i in range(count):
                (folder / f"{i:04d}.png").write_bytes(png(image(rng, label)))
    gray = out.parent / (out.name + "-gray")
    for path in out.rglob("*.png"):
        target = gray / path.relative_to(out)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
    first = sorted((gray / "train" / "class0").glob("*.png"))[0]
    first.write_bytes(png(image(rng, 0).mean(axis=-1).astype(np.uint8)))


if __name__ == "__main__":
    main()
