#!/usr/bin/env python3
"""Compares two state digests written by `rn-run --state-digest`.

Each state entry has an L2 norm and 16 sampled elements. An entry agrees
when its norms differ by at most `tol` relative to the reference norm and
every sample differs by at most `tol` times the larger of the sample's
magnitude and the tensor's RMS (so that elements near zero are judged on
the tensor's scale). Prints one line per disagreeing entry and a summary;
exits 1 when any entry disagrees or is missing.

    compare-digests.py cpu.json gpu.json --tol 1e-3
    compare-digests.py cpu.json gpu.json --tol 2e-3 --noise cpu.noise.1.json \
        --noise cpu.noise.2.json --noise-factor 4
    compare-digests.py --losses cpu.log gpu.log --tol 1e-2

With --noise (one or more digests of the same run on the same executor as
`want`, its parameters perturbed by `rn-run --perturb-state EPS SEED`), an
entry's bound is its conditioning instead of a fixed `tol`: the entry's
noise is the largest relative difference (the measure above) between `want`
and any noise digest, and the entry agrees when `got` differs from `want`
by at most max(tol, K x noise), K = --noise-factor. A step whose result
jumps under an ulp-scale perturbation (a ReLU mask or max-pool choice
flipped at a small batch) may differ that much on another executor too;
entries the perturbation does not move are still held to `tol`. An entry
whose noise is 1 or more (the perturbed runs change it by its own scale: it
has no significant digit, such as the gradient of a convolution bias
followed by batch normalization, zero in exact arithmetic) is only checked
to be finite and is counted as not significant. docs/gpu-tests.md explains
the criterion and the measurements behind it.

With --losses, the two files are rn-run --synthetic logs and the "step N
loss X" lines are compared instead: each loss within `tol` relative, or
with --noise LOG (logs of the perturbed runs) within max(tol, K x noise)
relative, the noise of a step being the largest relative difference of a
noise log's loss from want's at that step or any earlier one.
"""

from __future__ import annotations

import argparse
import json
import math
import sys


def as_float(value: float | str) -> float:
    return float(value)  # "nan" / "inf" strings come back as floats


def entry_error(w: dict, g: dict) -> float:
    """The relative difference of digest entry `g` from `w`: the largest of
    the norms' difference relative to w's norm and the samples' differences
    relative to max(|sample|, w's RMS); inf when g is not finite."""
    n = max(int(w["elements"]), 1)
    rms = w["norm"] / math.sqrt(n)
    if not math.isfinite(g["norm"]):
        return math.inf
    err = abs(g["norm"] - w["norm"]) / max(w["norm"], 1e-12)
    for ws, gs in zip(w["samples"], g["samples"]):
        ws, gs = as_float(ws), as_float(gs)
        if not math.isfinite(gs):
            return math.inf
        err = max(err, abs(gs - ws) / max(abs(ws), rms, 1e-12))
    return err


def compare(want: dict, got: dict, tol: float) -> list[str]:
    """Entries of `got` beyond `tol` of `want`'s; with tol 0 and both
    digests hashed (rn-run writes a hash of every entry's bits), entries must
    be bit-identical."""
    problems = []
    for name, w in want.items():
        g = got.get(name)
        if g is None:
            problems.append(f"{name}: missing")
            continue
        if tol == 0 and "hash" in w and "hash" in g:
            if g["hash"] != w["hash"]:
                problems.append(f"{name} ({w['role']}): bits differ (hash {g['hash']}, "
                                f"want {w['hash']}; norm {g['norm']:.9g}, want {w['norm']:.9g})")
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


def compare_with_noise(want: dict, got: dict, noises: list[dict], tol: float,
                       factor: float) -> tuple[list[str], int, int]:
    """The --noise criterion (module docstring). Returns the problems, the
    number of agreeing entries that needed more than `tol` and the number of
    entries without a significant digit."""
    problems, widened, insignificant = [], 0, 0
    for name, w in want.items():
        g = got.get(name)
        if g is None:
            problems.append(f"{name}: missing")
            continue
        missing = [i for i, nd in enumerate(noises) if name not in nd]
        if missing:
            problems.append(f"{name}: missing in noise digest {missing[0] + 1}")
            continue
        noise = max(entry_error(w, nd[name]) for nd in noises)
        err = entry_error(w, g)
        if noise >= 1:
            insignificant += 1
            if not math.isfinite(err):
                problems.append(f"{name} ({w['role']}): not finite")
            continue
        bound = max(tol, factor * noise)
        if err > bound:
            problems.append(f"{name} ({w['role']}): differs by {err:.3g} of its scale, "
                            f"bound {bound:.3g} = max(tol {tol:g}, {factor:g} x noise {noise:.3g})")
        elif err > tol:
            widened += 1
    return problems, widened, insignificant


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


def compare_losses_with_noise(want: dict[int, float], got: dict[int, float],
                              noises: list[dict[int, float]], tol: float,
                              factor: float) -> tuple[list[str], int]:
    """--losses --noise: the noise of step t is the largest relative
    difference |noise - want| / |want| of any noise log at any step up to t
    (once perturbed trajectories have separated they stay apart, even where
    one loss happens to agree again), and each loss must be within
    max(tol, K x noise) x |want|. Returns the problems and the number of
    agreeing steps that needed more than `tol`."""
    problems, widened, noise = [], 0, 0.0
    for step, w in sorted(want.items()):
        g = got.get(step)
        missing = [i for i, nl in enumerate(noises) if step not in nl]
        if missing:
            problems.append(f"step {step}: missing in noise log {missing[0] + 1}")
            continue
        scale = max(abs(w), 1e-12)
        noise = max([noise] + [abs(nl[step] - w) / scale for nl in noises])
        bound = max(tol, factor * noise)
        if g is None or not math.isfinite(g) or abs(g - w) > bound * scale:
            problems.append(f"step {step}: loss {g}, want {w} (relative bound {bound:.3g} = "
                            f"max(tol {tol:g}, {factor:g} x noise {noise:.3g}))")
        elif abs(g - w) > tol * scale:
            widened += 1
    return problems, widened


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("want")
    parser.add_argument("got")
    parser.add_argument("--tol", type=float, default=1e-3)
    parser.add_argument("--losses", action="store_true",
                        help="compare the step losses of two rn-run logs")
    parser.add_argument("--noise", action="append", default=[], metavar="DIGEST",
                        help="a digest (with --losses: a log) of want's run with "
                             "perturbed parameters (rn-run --perturb-state); may be repeated")
    parser.add_argument("--noise-factor", type=float, default=4.0, metavar="K",
                        help="with --noise: an entry may differ by K times its noise (default 4)")
    args = parser.parse_args()
    if args.losses:
        want, got = losses(args.want), losses(args.got)
        if args.noise:
            noises = [losses(path) for path in args.noise]
            problems, widened = compare_losses_with_noise(want, got, noises, args.tol,
                                                          args.noise_factor)
            for p in problems:
                print("  " + p)
            print(f"{len(want) - len(problems)}/{len(want)} step losses agree within "
                  f"max({args.tol:g}, {args.noise_factor:g} x noise) ({len(noises)} noise logs; "
                  f"{widened} beyond {args.tol:g} within their noise)")
            return 1 if problems or not want else 0
        problems = compare_losses(want, got, args.tol)
        for p in problems:
            print("  " + p)
        print(f"{len(want) - len(problems)}/{len(want)} step losses agree within {args.tol:g}")
        return 1 if problems or not want else 0
    with open(args.want) as f:
        want = json.load(f)
    with open(args.got) as f:
        got = json.load(f)
    if args.noise:
        noises = []
        for path in args.noise:
            with open(path) as f:
                noises.append(json.load(f))
        problems, widened, insignificant = compare_with_noise(
            want, got, noises, args.tol, args.noise_factor)
        for p in problems:
            print("  " + p)
        print(f"{len(want) - len(problems)}/{len(want)} state entries agree within "
              f"max({args.tol:g}, {args.noise_factor:g} x noise) ({len(noises)} noise "
              f"digests; {widened} beyond {args.tol:g} within their noise, "
              f"{insignificant} without a significant digit)")
        return 1 if problems else 0
    if "steps" in want or "steps" in got:
        return compare_steps(want.get("steps", []), got.get("steps", []), args.tol)
    problems = compare(want, got, args.tol)
    for p in problems:
        print("  " + p)
    print(f"{len(want) - len(problems)}/{len(want)} state entries agree within {args.tol:g}"
          + (" (bit for bit)" if args.tol == 0 and has_hashes(want) else ""))
    return 1 if problems else 0


def has_hashes(digest: dict) -> bool:
    return bool(digest) and all("hash" in e for e in digest.values())


def compare_steps(want: list[dict], got: list[dict], tol: float) -> int:
    """Digests after every K steps (rn-run --state-digest-every): every
    step's state compared; reports the first step that disagrees."""
    got_by_step = {s["step"]: s["state"] for s in got}
    entries = 0
    for w in want:
        g = got_by_step.get(w["step"])
        if g is None:
            print(f"  step {w['step']}: missing")
            print(f"steps compared: {want.index(w)}/{len(want)}; step {w['step']} missing")
            return 1
        problems = compare(w["state"], g, tol)
        if problems:
            for p in problems:
                print(f"  step {w['step']}: {p}")
            print(f"step {w['step']}: {len(problems)}/{len(w['state'])} state entries beyond "
                  f"{tol:g}; {want.index(w)} earlier steps agreed")
            return 1
        entries += len(w["state"])
    bitwise = tol == 0 and all(has_hashes(w["state"]) for w in want)
    print(f"{len(want)}/{len(want)} steps ({want[-1]['step'] if want else 0} the last), "
          f"{entries} state entries, agree within {tol:g}" + (" (bit for bit)" if bitwise else ""))
    return 0 if want else 1


if __name__ == "__main__":
    sys.exit(main())
