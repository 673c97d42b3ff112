"""GPU time per kernel and step of a JAX profile (bench/jax_step.py --trace DIR).

    python bench/xla_trace_summary.py DIR --steps N [--top 40] [--json OUT]

Reads the Perfetto trace the profiler wrote under DIR
(plugins/profile/RUN/perfetto_trace.json.gz, the newest run), keeps the
complete events of the GPU's streams (the processes whose name says GPU
or device, CUPTI's kernels and copies), and prints the busy time per step
(the union of the kernels' intervals over the traced span) and the GPU time
per kernel name, largest first, with launches per step and a family: XLA's
fusions by the name's kind (loop, input, reduction, ...), cuDNN and cuBLAS
kernels by their library's name patterns, copies and sets. The sum over
kernels can exceed the busy time where streams overlap.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

FAMILIES = [
    ("convolution (cuDNN)", re.compile(r"cudnn|xmma|sm\d+_.*(conv|fprop|dgrad|wgrad)|implicit_gemm|cutlass.*conv", re.I)),
    ("matmul (cuBLAS)", re.compile(r"gemm|cublas|sm\d+_xmma_gemm|nvjet", re.I)),
    ("copy / set", re.compile(r"memcpy|memset|copy", re.I)),
    ("reduction fusion", re.compile(r"reduce|reduction", re.I)),
    ("loop fusion", re.compile(r"fusion|loop_", re.I)),
]


def family(name: str) -> str:
    for label, pattern in FAMILIES:
        if pattern.search(name):
            return label
    return "other"


def find_trace(directory: Path) -> Path:
    traces = sorted(directory.rglob("perfetto_trace.json.gz"), key=lambda p: p.stat().st_mtime)
    if not traces:
        traces = sorted(directory.rglob("*.trace.json.gz"), key=lambda p: p.stat().st_mtime)
    if not traces:
        raise SystemExit(f"no perfetto_trace.json.gz or *.trace.json.gz under {directory}")
    return traces[-1]


def load(path: Path) -> list[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        data = json.load(f)
    return data.get("traceEvents", data) if isinstance(data, dict) else data


def gpu_kernels(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Complete events of the processes whose name mentions a GPU or device."""
    names = {e.get("pid"): str(e.get("args", {}).get("name", ""))
             for e in events if e.get("ph") == "M" and e.get("name") == "process_name"}
    gpu_pids = {pid for pid, name in names.items()
                if re.search(r"gpu|/device:|stream", name, re.I) and not re.search(r"host|cpu", name, re.I)}
    return [e for e in events if e.get("ph") == "X" and e.get("pid") in gpu_pids]


def busy_us(events: list[dict[str, Any]]) -> tuple[float, float]:
    """The union of the events' intervals and the span from first start to last end (us)."""
    spans = sorted((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0))) for e in events)
    if not spans:
        return 0.0, 0.0
    total, (start, end) = 0.0, spans[0]
    for s, e in spans[1:]:
        if s > end:
            total += end - start
            start, end = s, e
        else:
            end = max(end, e)
    total += end - start
    return total, spans[-1][1] - spans[0][0]


def summarize(events: list[dict[str, Any]], steps: int) -> dict[str, Any]:
    kernels = gpu_kernels(events)
    by_name: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    by_family: dict[str, float] = defaultdict(float)
    for e in kernels:
        dur = float(e.get("dur", 0))
        by_name[e.get("name", "?")][0] += dur
        by_name[e.get("name", "?")][1] += 1
        by_family[family(e.get("name", ""))] += dur
    busy, span = busy_us(kernels)
    per_step = 1000.0 * steps
    return {
        "steps": steps,
        "busy_ms_per_step": busy / per_step,
        "span_ms_per_step": span / per_step,
        "families": {k: v / per_step for k, v in sorted(by_family.items(), key=lambda kv: -kv[1])},
        "kernels": {name: {"ms_per_step": t / per_step, "launches_per_step": n / steps,
                           "family": family(name)}
                    for name, (t, n) in sorted(by_name.items(), key=lambda kv: -kv[1][0])},
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trace", type=Path, help="the --trace DIR of bench/jax_step.py, or a trace file")
    p.add_argument("--steps", type=int, required=True, help="steps the trace holds (--trace-steps)")
    p.add_argument("--top", type=int, default=40)
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    path = args.trace if args.trace.is_file() else find_trace(args.trace)
    s = summarize(load(path), args.steps)
    if not s["kernels"]:
        print(f"{path}: no GPU kernel events", file=sys.stderr)
        sys.exit(1)
    print(f"{path}: GPU busy {s['busy_ms_per_step']:.3f} ms of a {s['span_ms_per_step']:.3f} ms "
          f"span per step")
    for name, ms in s["families"].items():
        print(f"  {ms:8.3f} ms  {name}")
    print(f"{'ms/step':>9} {'launches':>8}  kernel")
    for name, k in list(s["kernels"].items())[:args.top]:
        print(f"{k['ms_per_step']:9.3f} {k['launches_per_step']:8.1f}  {name[:140]}")
    if args.json:
        args.json.write_text(json.dumps(s, indent=1))


if __name__ == "__main__":
    main()
