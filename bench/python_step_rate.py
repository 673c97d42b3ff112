"""Steps per second of a Python loop over rn.Trainer against ``rn-run --benchmark``.

On the GPU machine, from the bundle (scripts/run-python-gpu.sh runs it):

    python bench/python_step_rate.py --models gpu-bundle/models --rn-run gpu-bundle/bin/rn-run

Per configuration (MLP bs128, resnet18c bs256: the bundle's
``MODEL.benchBATCH.rnx``, the benchmark recipe) it runs ``rn-run --benchmark``
and then a Python loop on the same artifact, in one process per feed:

* ``numpy``: one numpy batch passed to ``step()`` every step (copied into a
  page-locked block each step);
* ``input_buffer``: a block from ``trainer.input_buffer()`` per step, written by
  no one (rn-run's benchmark copies one prepared pinned batch per step too);
* ``torch_cuda``: one torch CUDA tensor pair passed every step (reordered to
  NHWC on the device, copied device to device into one of the trainer's device
  blocks on its copy stream).

Each: ``--warmup`` steps, then three timed runs of ``--steps`` steps, each
ended by ``trainer.losses()``; the median ms per step. ``host_ms`` is the main
thread's CPU time per step (``time.thread_time``): the Python and binding
cost, including any spinning in CUDA waits; rn-run's ``host_ms_per_step`` is
its wall time with the blocked time taken out. Prints a table and writes one
JSON line per measurement with ``--json``. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

CONFIGS = [("mlp", 128), ("resnet18c", 256)]
FEEDS = ["numpy", "input_buffer", "torch_cuda"]


def rn_run_benchmark(rn_run: str, artifact: Path, warmup: int, steps: int) -> dict[str, Any]:
    proc = subprocess.run(
        [rn_run, str(artifact), "--benchmark", "--warmup", str(warmup), "--steps", str(steps)],
        capture_output=True, text=True, timeout=900,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"rn-run --benchmark failed: {proc.stderr[-2000:]}")
    line = next(l for l in reversed(proc.stdout.splitlines()) if l.startswith("{"))
    return json.loads(line)


def python_loop(artifact: Path, feed: str, warmup: int, steps: int) -> dict[str, Any]:
    """Runs in a child process (one trainer, one feed)."""
    import numpy as np

    import rn

    trainer = rn.Trainer(artifact, executor="cuda-graph")
    shape = (trainer.batch_size, *trainer.input_shape)
    rng = np.random.default_rng(0)
    images = rng.standard_normal(shape, dtype=np.float32)
    labels = rng.integers(0, trainer.num_classes, trainer.batch_size)
    if feed == "torch_cuda":
        import torch

        x, y = torch.from_numpy(images).cuda(), torch.from_numpy(labels).cuda()

        def one() -> None:
            trainer.step(x, y, lr=0.01)
    elif feed == "input_buffer":
        nhwc = np.ascontiguousarray(images.transpose(0, 2, 3, 1))
        filled = []
        for _ in range(trainer._native.window * 4):  # blocks the pool will hand out again
            buf = trainer.input_buffer()
            buf.images[...] = nhwc
            filled.append(buf)
        del filled

        def one() -> None:
            trainer.step(trainer.input_buffer(), labels, lr=0.01)
    else:

        def one() -> None:
            trainer.step(images, labels, lr=0.01)

    for _ in range(warmup):
        one()
    trainer.losses()
    walls, hosts = [], []
    for _ in range(3):
        start, cpu = time.perf_counter(), time.thread_time()
        for _ in range(steps):
            one()
        trainer.losses()
        walls.append((time.perf_counter() - start) / steps * 1e3)
        hosts.append((time.thread_time() - cpu) / steps * 1e3)
    return {"ms_per_step": statistics.median(walls), "host_ms": statistics.median(hosts)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="gpu-bundle/models")
    p.add_argument("--rn-run", default="gpu-bundle/bin/rn-run")
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--json", default=None, help="append one JSON line per measurement")
    p.add_argument("--child", nargs=2, metavar=("ARTIFACT", "FEED"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        print(json.dumps(python_loop(Path(args.child[0]), args.child[1], args.warmup, args.steps)))
        return 0
    rows = []
    for model, batch in CONFIGS:
        artifact = Path(args.models) / f"{model}.bench{batch}.rnx"
        if not artifact.is_file():
            print(f"skipping {model} bs{batch}: {artifact} missing", file=sys.stderr)
            continue
        ref = rn_run_benchmark(args.rn_run, artifact, args.warmup, args.steps)
        rows.append({"model": model, "batch": batch, "feed": "rn-run --benchmark",
                     "ms_per_step": ref["ms_per_step"], "host_ms": ref.get("host_ms_per_step")})
        for feed in FEEDS:
            proc = subprocess.run(
                [sys.executable, __file__, "--child", str(artifact), feed, "--warmup", str(args.warmup),
                 "--steps", str(args.steps)], capture_output=True, text=True, timeout=900,
            )
            if proc.returncode != 0:
                print(f"{model} bs{batch} {feed}: failed\n{proc.stderr[-2000:]}", file=sys.stderr)
                rows.append({"model": model, "batch": batch, "feed": feed, "error": proc.stderr[-500:]})
                continue
            result = json.loads(proc.stdout.splitlines()[-1])
            rows.append({"model": model, "batch": batch, "feed": f"python {feed}", **result,
                         "vs_rn_run": result["ms_per_step"] / ref["ms_per_step"]})
    print("| model | batch | feed | ms/step | host ms/step | vs rn-run |")
    print("|---|---:|---|---:|---:|---:|")
    for r in rows:
        if "error" in r:
            print(f"| {r['model']} | {r['batch']} | {r['feed']} | failed | | |")
            continue
        host = f"{r['host_ms']:.3f}" if r.get("host_ms") is not None else ""
        ratio = f"{r['vs_rn_run']:.3f}x" if "vs_rn_run" in r else ""
        print(f"| {r['model']} | {r['batch']} | {r['feed']} | {r['ms_per_step']:.3f} | {host} | {ratio} |")
    if args.json:
        with open(args.json, "a") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
