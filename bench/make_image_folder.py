"""Writes an ImageNet-like folder of JPEGs for the loader benchmark (bench/loader-bench.sh).

    make_image_folder.py OUT IMAGES [--classes 16] [--quality 90] [--jobs N]

OUT/train/<class>/<i>.jpg and OUT/val/<class>/<i>.jpg (an eighth as many):
RGB JPEGs of ImageNet's typical sizes (a side of 333-500 pixels, the other
of 375-500; about ImageNet's mean of 400x350), each smooth colored shapes on
a gradient with mild noise, so that a file weighs about what a photo of that
size does at the quality (ImageNet's average is about 110 kB). Needs Pillow
and NumPy (the GPU machine's Python has both); nothing is downloaded.
"""

from __future__ import annotations

import argparse
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np


def _write(job: tuple[str, int, int]) -> int:
    from PIL import Image

    path, seed, quality = job
    rng = np.random.default_rng(seed)
    h, w = int(rng.integers(333, 501)), int(rng.integers(375, 501))
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    image = np.stack([80 + 90 * y / h, 60 + 120 * x / w, 140 - 60 * (x + y) / (h + w)], -1)
    for _ in range(int(rng.integers(4, 12))):
        cy, cx, r = rng.uniform(0, h), rng.uniform(0, w), rng.uniform(20, 140)
        image[(y - cy) ** 2 + (x - cx) ** 2 < r * r] = rng.uniform(0, 255, 3)
    image += rng.normal(0, 14, image.shape)  # sensor-like noise: photo-like entropy
    Image.fromarray(np.clip(image, 0, 255).astype(np.uint8)).save(path, quality=quality)
    return os.path.getsize(path)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path)
    p.add_argument("images", type=int)
    p.add_argument("--classes", type=int, default=16)
    p.add_argument("--quality", type=int, default=90)
    p.add_argument("--jobs", type=int, default=os.cpu_count())
    args = p.parse_args()
    jobs = []
    for split, count in (("train", args.images), ("val", max(args.classes, args.images // 8))):
        for i in range(count):
            folder = args.out / split / f"c{i % args.classes:03d}"
            folder.mkdir(parents=True, exist_ok=True)
            jobs.append((str(folder / f"{i:06d}.jpg"), 2 * i + (split == "val"), args.quality))
    with ProcessPoolExecutor(args.jobs) as pool:
        sizes = list(pool.map(_write, jobs, chunksize=16))
    print(f"wrote {len(sizes)} JPEGs to {args.out}, {sum(sizes) / len(sizes) / 1024:.0f} kB each on average")


if __name__ == "__main__":
    main()
