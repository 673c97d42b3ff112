"""Benchmark records of RN, PyTorch and JAX in one list, and RN's ratio to each peer.

    python bench/collect_results.py gpu-results/bench.jsonl gpu-results/peers.jsonl \\
        [--gpu "NVIDIA H200" | --gpu-file gpu.txt] [--out bench/results.json]

Reads JSON-lines files: rn-run's lines ("framework": "rn", "executor":
"cuda-graph" or "cuda-eager", "mode": "multi-stream", "single-stream" or
"eager"), torch_step.py's ("framework": "torch", modes eager, graph,
compile) and jax_step.py's ("framework": "jax", mode jit). Other lines
(headers, blank or broken ones) are skipped. Where one configuration
(model, batch, system, mode) appears more than once, the last record read
wins, so a later file overrides an earlier one.

Writes a list of records, sorted by model, batch, system and mode:

    {"model", "batch", "system": "rn" | "pytorch" | "jax", "mode",
     "ms_per_step", "images_per_s", "peak_memory_bytes", "first_step_s", "gpu", "gpus"}

plus the extras a source record has (EXTRA_KEYS: host time, load time,
in-process memory, "error", ...). RN's modes are "cuda-graph multi-stream",
"cuda-graph single-stream" and "cuda-eager"; JAX's is "jit", with the dtype
appended where it is not bf16 and "device batch" where the batch was not
transferred every step. It prints a Markdown table per model and batch and
RN's ratio to each peer, peer ms / RN ms, written "1.31x faster" above 1 as
docs/benchmarks.md does, then one row per configuration: RN's default
(cuda-graph multi-stream) time, its conv floor (the unfolded build's
conv_floor_ms where that build ran), the fastest peer, and RN's and the
peer's time over the floor.

The GPU's name comes from --gpu, else from --gpu-file, else from a gpu.txt
beside the first input file (nvidia-smi's output: `-L`, a
`--query-gpu=name,... --format=csv,noheader` line or its usual table).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

SYSTEMS = {"rn": "rn", "torch": "pytorch", "pytorch": "pytorch", "jax": "jax"}
"""A record's "framework" -> its system in results.json."""

SYSTEM_NAMES = {"rn": "RN", "pytorch": "PyTorch", "jax": "JAX"}

MODEL_TITLES = {
    "mlp": "MLP 784-1024-1024-10",
    "resnet18c": "ResNet-18 (CIFAR)",
    "vgg11c": "VGG-11-BN (CIFAR)",
    "resnet50": "ResNet-50 (224)",
}

MODE_ORDER = {
    "rn": ["cuda-graph multi-stream", "cuda-graph single-stream", "cuda-graph", "cuda-eager"],
    "pytorch": ["eager", "graph", "compile"],
    "jax": ["jit"],
}

EXTRA_KEYS = (
    "host_ms_per_step", "load_s", "first_step_warm_s", "first_step_process_s", "conv_floor_ms",
    "compile_s", "warmup_s", "peak_memory_inproc_bytes", "peak_memory_method",
    "peak_memory_error", "memory_method", "allocator_peak_bytes", "arena_bytes", "dtype",
    "input", "max_inflight", "params", "loss", "exit_code", "error",
)
"""Keys carried over from a source record where it has them."""

RN_STREAM_MODES = ("multi-stream", "single-stream")
WARM_SUFFIX = " warm"


def rn_mode(record: dict[str, Any]) -> str:
    """RN's mode name from rn-run's executor and stream mode, or the driver's full name."""
    executor, mode = record.get("executor"), record.get("mode")
    if isinstance(mode, str) and mode.startswith("cuda-"):
        return mode  # bench/run-rn.sh writes "cuda-graph multi-stream" and so on
    if executor == "cuda-eager" or (executor is None and mode == "eager"):
        return "cuda-eager"
    if executor == "cuda-graph" or (executor is None and mode in RN_STREAM_MODES):
        return f"cuda-graph {mode}" if mode in RN_STREAM_MODES else "cuda-graph"
    return str(executor or mode or "unknown")


def jax_mode(record: dict[str, Any]) -> str:
    """"jit", qualified where the run differs from the driver's default (bf16, batch per step)."""
    parts = [str(record.get("mode") or "jit")]
    if record.get("dtype") not in (None, "bf16"):
        parts.append(str(record["dtype"]))
    if record.get("input") == "device":
        parts.append("device batch")
    return " ".join(parts)


def normalize(record: dict[str, Any], gpu: str | None, gpus: int) -> dict[str, Any] | None:
    """The results.json record of one source record (None for lines that are not runs)."""
    system = SYSTEMS.get(str(record.get("framework", "")).lower())
    if system is None or "model" not in record or "batch" not in record:
        return None
    if system == "rn":
        mode = rn_mode(record)
    elif system == "jax":
        mode = jax_mode(record)
    else:
        mode = str(record.get("mode") or "unknown")
    out: dict[str, Any] = {
        "model": str(record["model"]),
        "batch": int(record["batch"]),
        "system": system,
        "mode": mode,
        "ms_per_step": record.get("ms_per_step"),
        "images_per_s": record.get("images_per_s"),
        "peak_memory_bytes": record.get("peak_memory_bytes"),
        # From the process's start for every system (rn-run measures it so);
        # the peers' time from the model's construction stays as
        # first_step_from_model_s.
        "first_step_s": record.get("first_step_process_s", record.get("first_step_s")),
        "gpu": record.get("gpu", gpu),
        "gpus": int(record.get("gpus", gpus)),
    }
    for key in EXTRA_KEYS:
        if key in record:
            out[key] = record[key]
    if "first_step_process_s" in record and "first_step_s" in record:
        out["first_step_from_model_s"] = record["first_step_s"]
    return out


def read_jsonl(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """Every JSON object of the files, in order; other lines are skipped with a note."""
    records = []
    for path in paths:
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            line = line.strip()
            if not line:
                continue
            try:
                value = json.loads(line)
            except ValueError:
                print(f"{path}:{number}: not JSON, skipped", file=sys.stderr)
                continue
            if isinstance(value, dict):
                records.append(value)
    return records


def _order(record: dict[str, Any]) -> tuple[Any, ...]:
    models = list(MODEL_TITLES)
    systems = list(SYSTEM_NAMES)
    modes = MODE_ORDER.get(record["system"], [])
    return (
        models.index(record["model"]) if record["model"] in models else len(models),
        record["model"],
        record["batch"],
        systems.index(record["system"]),
        modes.index(record["mode"]) if record["mode"] in modes else len(modes),
        record["mode"],
    )


def collect(records: Iterable[dict[str, Any]], gpu: str | None, gpus: int = 1
            ) -> list[dict[str, Any]]:
    """The runs among `records`, one per configuration (the last one read), sorted.

    An RN run whose mode ends in " warm" (bench/run-rn.sh's second start
    with the plan cache filled) is not a row of its own: its first_step_s
    becomes the "first_step_warm_s" of the run it repeats.
    """
    # Keyed by GPU count too: a 2-GPU run of a model is not a 1-GPU one.
    latest: dict[tuple[str, int, str, str, int], dict[str, Any]] = {}
    warm: dict[tuple[str, int, str, str, int], Any] = {}
    for record in records:
        out = normalize(record, gpu, gpus)
        if out is None:
            continue
        key = (out["model"], out["batch"], out["system"], out["mode"], out["gpus"])
        if out["system"] == "rn" and out["mode"].endswith(WARM_SUFFIX):
            if out.get("first_step_s") is not None:
                warm[(*key[:3], out["mode"].removesuffix(WARM_SUFFIX), key[4])] = out["first_step_s"]
            continue
        latest[key] = out
    for key, seconds in warm.items():
        if key in latest:
            latest[key]["first_step_warm_s"] = seconds
    return sorted(latest.values(), key=_order)


def gpu_name(text: str) -> str | None:
    """The first GPU's name in nvidia-smi output (`-L`, CSV query or the usual table)."""
    for line in text.splitlines():
        if match := re.match(r"\s*GPU \d+: (.+?)(?: \(UUID:.*)?$", line):
            return match.group(1).strip()
        if match := re.match(r"\|\s+\d+\s+(.+?)\s+(?:On|Off)\s+\|", line):
            return match.group(1).strip()
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("+", "|", "name")) and "NVIDIA-SMI" not in line:
            return line.split(",")[0].strip()
    return None


def ratio_text(peer_ms: float, rn_ms: float) -> str:
    """Peer time over RN time, "1.31x faster" where RN is faster, as docs/benchmarks.md."""
    ratio = peer_ms / rn_ms
    text = f"{ratio:.2f}x"
    return f"{text} faster" if round(ratio, 2) > 1.0 else text


def _ms(value: float) -> str:
    return f"{value:.3f}" if value < 10 else f"{value:.2f}" if value < 100 else f"{value:.1f}"


def _mib(value: int | None) -> str:
    return "-" if value is None else f"{value / 2**20:,.0f} MiB"


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} s" if value >= 1 else f"{value:.2f} s"


def _label(record: dict[str, Any]) -> str:
    gpus = int(record.get("gpus", 1))
    return f"{SYSTEM_NAMES[record['system']]} {record['mode']}" + (
        f" on {gpus} GPUs" if gpus > 1 else "")


def scaling(rows: Sequence[dict[str, Any]]) -> list[tuple[dict[str, Any], float]]:
    """Each multi-GPU run with its scaling efficiency: its images/s over the GPU count
    times the images/s of the same system and mode on one GPU (same model and batch per
    GPU), where both were timed."""
    single = {(r["system"], r["mode"]): r for r in rows
              if int(r.get("gpus", 1)) == 1 and r.get("images_per_s")}
    out = []
    for r in rows:
        gpus = int(r.get("gpus", 1))
        one = single.get((r["system"], r["mode"]))
        if gpus > 1 and r.get("images_per_s") and one:
            out.append((r, r["images_per_s"] / (gpus * one["images_per_s"])))
    return out


RN_DEFAULT_MODE = "cuda-graph multi-stream"
FLOOR_MODE = "cuda-graph multi-stream unfolded"
"""The build whose conv_floor_ms is the convolutions alone (no fused epilogues)."""


def summary_rows(results: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per model and batch (one GPU): RN's default time, its conv floor (the unfolded
    build's where it ran, else the default build's), the fastest peer, and each over
    the floor, as the issue's targets ask."""
    groups: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for r in results:
        if int(r.get("gpus", 1)) == 1 and r.get("ms_per_step") is not None:
            groups.setdefault((r["model"], r["batch"]), []).append(r)
    rows = []
    for (model, batch), group in groups.items():
        by_mode = {r["mode"]: r for r in group if r["system"] == "rn"}
        rn = by_mode.get(RN_DEFAULT_MODE)
        peers = [r for r in group if r["system"] != "rn"]
        if rn is None or not peers:
            continue
        best = min(peers, key=lambda r: r["ms_per_step"])
        floor = next((r["conv_floor_ms"] for r in (by_mode.get(FLOOR_MODE), rn)
                      if r is not None and r.get("conv_floor_ms")), None)
        rows.append({
            "model": model, "batch": batch, "rn_ms": rn["ms_per_step"], "floor_ms": floor,
            "peer": _label(best), "peer_ms": best["ms_per_step"],
            "rn_over_floor": rn["ms_per_step"] / floor if floor else None,
            "peer_over_floor": best["ms_per_step"] / floor if floor else None,
        })
    return rows


def summary_markdown(results: Sequence[dict[str, Any]]) -> str:
    """summary_rows as one table ("" when no configuration has RN and a peer)."""
    rows = summary_rows(results)
    if not rows:
        return ""
    lines = ["### Per configuration: RN, its conv floor and the best peer",
             "",
             "| model | batch | RN | conv floor | RN / floor | best peer | peer / floor | "
             "RN vs best peer |",
             "|---|---:|---:|---:|---:|---|---:|---:|"]
    for row in rows:
        floor = row["floor_ms"]
        floor_text = _ms(floor) if floor else "-"
        rn_over = f"{row['rn_over_floor']:.2f}x" if floor else "-"
        peer_over = f"{row['peer_over_floor']:.2f}x" if floor else "-"
        lines.append(
            f"| {MODEL_TITLES.get(row['model'], row['model'])} | {row['batch']} | "
            f"{_ms(row['rn_ms'])} | {floor_text} | {rn_over} | "
            f"{row['peer']} {_ms(row['peer_ms'])} | {peer_over} | "
            f"{ratio_text(row['peer_ms'], row['rn_ms'])} |")
    return "\n".join(lines)


def markdown(results: Sequence[dict[str, Any]]) -> str:
    """A table per model and batch, then RN's ratio to each peer where RN has a time,
    then the per-configuration summary."""
    groups: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for record in results:
        groups.setdefault((record["model"], record["batch"]), []).append(record)
    parts = []
    for (model, batch), rows in groups.items():
        gpus = sorted({str(r["gpu"]) for r in rows if r.get("gpu")})
        title = f"### {MODEL_TITLES.get(model, model)}, batch {batch}"
        parts.append(title + (f" ({', '.join(gpus)})" if gpus else ""))
        timed = [r for r in rows if r.get("ms_per_step") is not None]
        best = min((r["ms_per_step"] for r in timed), default=None)
        lines = ["| system | ms/step | images/s | peak memory | first step | warm first step |",
                 "|---|---:|---:|---:|---:|---:|"]
        for r in rows:
            if r.get("ms_per_step") is None:
                lines.append(f"| {_label(r)} | error: {r.get('error', 'no time')} | | | | |")
                continue
            ms = _ms(r["ms_per_step"])
            if r["ms_per_step"] == best:
                ms = f"**{ms}**"
            peak = r.get("peak_memory_bytes")
            memory = _mib(peak)
            if peak is None and r.get("peak_memory_inproc_bytes") is not None:
                memory = _mib(r["peak_memory_inproc_bytes"]) + " (in-process)"
            lines.append(f"| {_label(r)} | {ms} | {r.get('images_per_s', '-')} | {memory} | "
                         f"{_seconds(r.get('first_step_s'))} | "
                         f"{_seconds(r.get('first_step_warm_s'))} |")
        parts.append("\n".join(lines))
        rn_rows = [r for r in timed if r["system"] == "rn"]
        peers = [r for r in timed if r["system"] != "rn"]
        if rn_rows and peers:
            header = "| RN vs | " + " | ".join(_label(p) for p in peers) + " |"
            rule = "|---|" + "---:|" * len(peers)
            lines = [header, rule]
            for r in rn_rows:
                # Times compare on the same number of GPUs only.
                cells = [ratio_text(p["ms_per_step"], r["ms_per_step"])
                         if int(p.get("gpus", 1)) == int(r.get("gpus", 1)) else "-"
                         for p in peers]
                lines.append(f"| {_label(r)} | " + " | ".join(cells) + " |")
            parts.append("\n".join(lines))
        scaled = scaling(timed)
        if scaled:
            lines = ["| system | images/s | scaling efficiency |", "|---|---:|---:|"]
            lines += [f"| {_label(r)} | {r['images_per_s']} | {efficiency:.3f} |"
                      for r, efficiency in scaled]
            parts.append("\n".join(lines))
    if summary := summary_markdown(results):
        parts.append(summary)
    return "\n\n".join(parts) + "\n" if parts else "no runs\n"


def _find_gpu(args: argparse.Namespace) -> str | None:
    if args.gpu:
        return str(args.gpu)
    candidates = [args.gpu_file] if args.gpu_file else [p.parent / "gpu.txt" for p in args.files]
    for path in candidates:
        if path is not None and path.is_file():
            return gpu_name(path.read_text(errors="replace"))
    return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path, help="JSON-lines files, in order")
    parser.add_argument("--out", type=Path,
                        default=Path(__file__).resolve().parent / "results.json",
                        help="the records' list (default bench/results.json)")
    parser.add_argument("--gpu", help="the GPU's name (default: from --gpu-file or gpu.txt)")
    parser.add_argument("--gpu-file", type=Path, help="nvidia-smi output naming the GPU")
    parser.add_argument("--gpus", type=int, default=1, help="GPUs per run (default 1)")
    parser.add_argument("--markdown", type=Path, help="also write the tables here")
    args = parser.parse_args(argv)
    missing = [str(p) for p in args.files if not p.is_file()]
    if missing:
        parser.error(f"no such file: {', '.join(missing)}")
    results = collect(read_jsonl(args.files), _find_gpu(args), args.gpus)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    text = markdown(results)
    if args.markdown:
        args.markdown.write_text(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
