"""A device-to-device copy's rate, the bandwidth a memory-bound kernel is measured against.

    python bench/device_copy.py [--gib 1] [--repeats 20]

Copies a GiB (by default) from one device buffer to another `repeats` times
between CUDA events (after two untimed copies) and prints one JSON line:
{"gpu", "bytes", "ms_per_copy", "copy_gbps"}, copy_gbps counting the bytes
read and written (2 x bytes per copy). Run it in the same session as the
trace (scripts/trace-summary.py --copy-gbps takes the value): a card's
rate moves with its clocks and its neighbours.
"""

from __future__ import annotations

import argparse
import json

import torch


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gib", type=float, default=1.0)
    p.add_argument("--repeats", type=int, default=20)
    args = p.parse_args()
    n = int(args.gib * (1 << 30))
    src = torch.empty(n, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    for _ in range(2):
        dst.copy_(src)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(args.repeats):
        dst.copy_(src)
    end.record()
    end.synchronize()
    ms = start.elapsed_time(end) / args.repeats
    print(json.dumps({"gpu": torch.cuda.get_device_name(), "bytes": n, "ms_per_copy": round(ms, 4),
                      "copy_gbps": round(2 * n / (ms * 1e-3) / 1e9, 1)}))


if __name__ == "__main__":
    main()
