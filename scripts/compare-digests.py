#!/usr/bin/env python3
"""Compares two state digests written by `rn-run --state-digest`.

Each state entry has an L2 norm and 16 sampled elements. An entry agrees
when its norms differ by at most `tol` relative to the reference norm and
every sample differs by at most `tol` times the larger of the sample's
magnitude and the tensor's RMS (so that elements near zero are judged on
the tensor's scale). Prints one line per disagreeing entry and a summary;
exits 1 when any entry disagrees or is missing.

    compare-digests.py cpu.json gpu.json --tol 1e-3
    compare-digests.py --losses cpu.log gpu.log --tol 1e-2

With --losses, the two files are rn-run --synthetic logs and the "step N
loss X" lines are compared instead: each loss within `tol` relative.
"""

from __future__ import annotations

import argparse
import json
import math
import sys


def as_float(value: float | str) -> float:
    return float(value)  # "nan" / "inf" strings come back as floats


def compare(want: dict, got: dict, tol: float) -> list[str]:
    problems = []
    for name, w in want.items():
        g = got.get(name)
        if g is None:
            problems.append(f"{name}: missing")
            continue
        n = max(int(w["elements"]), 1)
        rms = w["norm"] / math.sqrt(n)
        if not math.isfinite(g["norm"]) or abs(g["norm"] - w["norm"]) > tol * max(w["norm"], 1e-12):
            problems.append(f"{name} ({w['role']}): norm {g['norm']:.6g}, want {w['norm']:.6g}")
            continue
        for k, (ws, gs) in enumerate(zip(w["samples"], g["samples"])):
            ws, gs = as_float(ws), as_float(gs)
            if not math.isfinite(gs) or abs(gs - ws) > tol * max(abs(ws), rms, 1e-12):
                problems.append(f"{name} ({w['role']}): sample {k} {gs:.6g}, want {ws:.6g}")
                break
    return problems


def losses(path: str) -> dict[int, float]:
    out = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 4 and parts[0] == "step" and parts[2] == "loss":
                out[int(parts[1])] = float(parts[3])
    return out


def compare_losses(want: dict[int, float], got: dict[int, float], tol: float) -> list[str]:
    problems = []
    for step, w in sorted(want.items()):
        g = got.get(step)
        if g is None or not math.isfinite(g) or abs(g - w) > tol * max(abs(w), 1e-12):
            problems.append(f"step {step}: loss {g}, want {w}")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("want")
    parser.add_argument("got")
    parser.add_argument("--tol", type=float, default=1e-3)
    parser.add_argument("--losses", action="store_true",
                        help="compare the step losses of two rn-run logs")
    args = parser.parse_args()
    if args.losses:
        want, got = losses(args.want), losses(args.got)
        problems = compare_losses(want, got, args.tol)
        for p in problems:
            print("  " + p)
        print(f"{len(want) - len(problems)}/{len(want)} step losses agree within {args.tol:g}")
        return 1 if problems or not want else 0
    with open(args.want) as f:
        want = json.load(f)
    with open(args.got) as f:
        got = json.load(f)
    problems = compare(want, got, args.tol)
    for p in problems:
        print("  " + p)
    print(f"{len(want) - len(problems)}/{len(want)} state entries agree within {args.tol:g}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
