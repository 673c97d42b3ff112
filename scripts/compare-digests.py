#!/usr/bin/env python3
"""Compares two state digests written by `rn-run --state-digest`.

Each state entry has an L2 norm and 16 sampled elements. An entry agrees
when its norms differ by at most `tol` relative to the reference norm and
every sample differs by at most `tol` times the larger of the sample's
magnitude and the tensor's RMS (so that elements near zero are judged on
the tensor's scale). Prints one line per disagreeing entry and a summary;
exits 1 when any entry disagrees or is missing.

    compare-digests.py cpu.json gpu.json --tol 1e-3
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("want")
    parser.add_argument("got")
    parser.add_argument("--tol", type=float, default=1e-3)
    args = parser.parse_args()
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
