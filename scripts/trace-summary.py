#!/usr/bin/env python3
"""GPU time per op and per kernel from an `rn-run --trace` timeline.

Reads the Chrome trace that `rn-run --trace FILE.json` writes (GPU records
labelled "NODE OP[.PART] (SUBGRAPH)", with the CUPTI kernel name in
args["cupti name"]) and prints, per training step:

  - the GPU's busy time (the union of its kernels, copies and memsets) and
    the window they span, so idle = window - busy;
  - the idle gaps between busy intervals by length (under 10 us: launch
    latency between dependent graph nodes; 10 us to 1 ms: waits between
    streams or graphs; 1 to 20 ms: the host; longer gaps, between the
    benchmark's timed windows, are left out);
  - the GPU time of each op (summed over its kernels; kernels on
    concurrent streams overlap, so the sum can exceed the busy time);
  - with --kernels, the same per CUPTI kernel name (demangled by c++filt
    where it is installed), with its launch as CUPTI reports it (threads
    per block, registers per thread, shared bytes per block, local bytes
    per thread: spills) and the resident blocks per SM that follow on
    sm_90 (H100/H200 limits); the first launch's where a kernel has several;
  - with --artifact (the traced MODEL.rnx), for the batch-norm kernels the
    bytes each must move at least (BN_PASSES: which activation-sized tensors
    it reads and writes, the activation being the node's conv_output or
    input), their effective bandwidth, and with --copy-gbps (a device copy's
    read + write rate measured in the same run, bench/device_copy.py) the
    ratio of the two.

Usage: trace-summary.py TRACE.json --steps N [--kernels] [--artifact MODEL.rnx
       [--copy-gbps G]] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from typing import Any

GPU_PID = 1  # runtime/cuda/cupti_trace.h: kGpuPid
LABEL = re.compile(r"^(\d+) (\S+?)(?:\.(\S+))? \((.+)\)$")


def gpu_events(trace: dict[str, Any]) -> list[dict[str, Any]]:
    events = trace.get("traceEvents", trace if isinstance(trace, list) else [])
    return [e for e in events if e.get("ph") == "X" and e.get("pid") == GPU_PID]


def merged(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The union of the spans as disjoint sorted intervals."""
    out: list[list[float]] = []
    for s, e in sorted(spans):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def union_us(spans: list[tuple[float, float]]) -> float:
    return sum(e - s for s, e in merged(spans))


# Idle gaps by length (us): upper bounds and names.
GAP_BUCKETS = [(10.0, "under 10 us"), (1000.0, "10 us - 1 ms"), (20000.0, "1 - 20 ms")]


def gap_buckets(spans: list[tuple[float, float]]) -> dict[str, list[float]]:
    """Per bucket: [total us, count] of the idle gaps between busy intervals."""
    out = {name: [0.0, 0] for _, name in GAP_BUCKETS}
    intervals = merged(spans)
    for (_, prev_end), (start, _) in zip(intervals, intervals[1:]):
        gap = start - prev_end
        for bound, name in GAP_BUCKETS:
            if gap < bound:
                out[name][0] += gap
                out[name][1] += 1
                break
    return out


# The batch-norm kernels (runtime/cuda/norm_kernels.cu) by name, and how
# many activation-sized tensors each must move at least: statistics read x;
# apply reads x and writes y (and reads the shortcut of a junction);
# backward partial sums read dy and x; backward apply reads dy and x and
# writes dx. Longest names first: "applyKernel" must not take the others.
# The activation-sized tensors each batch-norm kernel must move for a node
# that reads no ReLU result and writes no masked gradient: the statistics
# read x; the apply reads x and writes y; the backward's sums read dy and x;
# its dx pass reads dy and x and writes dx. bn_bytes adds what a node's
# operands add (a shortcut, a stored ReLU result, a masked gradient out).
BN_PASSES = [("backwardApplyKernel", 3), ("backwardPartialKernel", 2),
             ("statsPartialKernel", 1), ("applyKernel", 2)]
DTYPE_BYTES = {"f32": 4, "f16": 2, "bf16": 2, "i32": 4, "i1": 1, "ui8": 1, "u8": 1}


def read_program(artifact: str) -> dict[str, Any]:
    """The program JSON of an artifact (a safetensors file: 8-byte header
    length, the header, whose __metadata__["rn.program"] holds it)."""
    with open(artifact, "rb") as f:
        size = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(size))
    return json.loads(header["__metadata__"]["rn.program"])


def node_table(program: dict[str, Any]) -> dict[tuple[str, int], dict[str, Any]]:
    """Per (subgraph name, node index) of the trace's labels: the op, the
    bytes of its batch-norm activation (conv_output, else the input), and
    whether it reads a shortcut."""
    table = {}
    for fn in program["functions"]:
        tensors = {t["id"]: t for t in fn["tensors"]}
        for sg in fn["subgraphs"]:
            for i, node in enumerate(sg["nodes"]):
                if node.get("kind") != "op":
                    continue
                named = {**node.get("operands", {}), **node.get("results", {})}
                tid = named.get("conv_output", node.get("operands", {}).get("input"))
                activation = None
                if isinstance(tid, int) and tid in tensors:
                    t = tensors[tid]
                    count = 1
                    for d in t["shape"]:
                        count *= d
                    activation = count * DTYPE_BYTES.get(t["dtype"], 4)
                operands = node.get("operands", {})
                results = node.get("results", {})
                table[(sg["name"], i)] = {"op": node["op"], "activation_bytes": activation,
                                          "shortcut": "shortcut" in operands,
                                          "relu_output": "relu_output" in operands,
                                          "shortcut_grad": "shortcut_grad" in results}
    return table


def bn_bytes(kernel: str, node: dict[str, Any] | None) -> int | None:
    """The bytes `kernel` must move for `node`, or None when it is not a
    batch-norm kernel or the node's activation is unknown."""
    if not node or node["activation_bytes"] is None:
        return None
    for name, passes in BN_PASSES:
        if name in kernel:
            if name == "applyKernel" and node.get("shortcut"):
                passes += 1  # bn_add_relu reads the shortcut
            if name == "backwardPartialKernel":
                # A stored ReLU result is read for the mask; bn_add_relu's
                # masked gradient (its shortcut_grad) is written here.
                passes += int(node.get("relu_output", False)) + int(node.get("shortcut_grad", False))
            if name == "backwardApplyKernel" and node.get("relu_output") and \
                    not node.get("shortcut_grad"):
                passes += 1  # the mask again (bn_add_relu's dx pass reads its masked dy)
            return passes * node["activation_bytes"]
    return None


def summarize(events: list[dict[str, Any]], steps: int,
              nodes: dict[tuple[str, int], dict[str, Any]] | None = None) -> dict[str, Any]:
    by_op: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    by_kernel: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    kernel_bytes: dict[str, int] = defaultdict(int)
    by_subgraph: dict[str, float] = defaultdict(float)
    launches: dict[str, dict[str, int]] = {}
    spans = []
    for e in events:
        dur = float(e.get("dur", 0.0))
        start = float(e["ts"])
        spans.append((start, start + dur))
        m = LABEL.match(e.get("name", ""))
        node = None
        if m:
            op = m.group(2) + ("." + m.group(3) if m.group(3) else "")
            by_subgraph[m.group(4)] += dur
            if nodes is not None:
                node = nodes.get((m.group(4), int(m.group(1))))
        else:
            op = "(unlabelled) " + e.get("name", "?")
        by_op[op][0] += dur
        by_op[op][1] += 1
        args = e.get("args", {})
        kernel = args.get("cupti name", e.get("name", "?"))
        by_kernel[kernel][0] += dur
        by_kernel[kernel][1] += 1
        moved = bn_bytes(kernel, node)
        if moved is not None:
            kernel_bytes[kernel] += moved
        if kernel not in launches and "registers per thread" in args:
            block = args.get("block", [0, 0, 0])
            threads = block[0] * block[1] * block[2]
            registers = args["registers per thread"]
            shared = args.get("shared bytes", 0)
            launches[kernel] = {"threads": threads, "registers": registers,
                                "shared_bytes": shared,
                                "local_bytes": args.get("local bytes per thread", 0),
                                "blocks_per_sm_sm90": blocks_per_sm(threads, registers, shared)}
    window = (max(e for _, e in spans) - min(s for s, _ in spans)) if spans else 0.0
    per = 1000.0 * steps  # us -> ms per step
    return {
        "steps": steps,
        "window_ms_per_step": window / per,
        "busy_ms_per_step": union_us(spans) / per,
        "kernel_sum_ms_per_step": sum(v[0] for v in by_op.values()) / per,
        "idle_gaps": {k: {"ms_per_step": v[0] / per, "gaps_per_step": v[1] / steps}
                      for k, v in gap_buckets(spans).items()},
        "ops": {k: {"ms_per_step": v[0] / per, "launches_per_step": v[1] / steps}
                for k, v in sorted(by_op.items(), key=lambda kv: -kv[1][0])},
        "kernels": {k: {"ms_per_step": v[0] / per, "launches_per_step": v[1] / steps,
                        **({"launch": launches[k]} if k in launches else {}),
                        **({"floor_bytes_per_step": kernel_bytes[k] / steps,
                            "gbps": kernel_bytes[k] / (v[0] * 1e3) if v[0] else 0.0}
                           if k in kernel_bytes else {})}
                    for k, v in sorted(by_kernel.items(), key=lambda kv: -kv[1][0])},
        "subgraphs": {k: v / per for k, v in sorted(by_subgraph.items(), key=lambda kv: -kv[1])},
    }


# sm_90 (H100/H200) per-SM limits, for blocks_per_sm.
SM90_REGISTERS, SM90_WARPS, SM90_BLOCKS = 65536, 64, 32
SM90_SHARED_BYTES, SM90_SHARED_RESERVED_PER_BLOCK = 233472, 1024


def blocks_per_sm(threads: int, registers: int, shared_bytes: int) -> int:
    """Resident blocks per SM of a launch on sm_90, as the occupancy
    calculator counts them: registers are allocated per warp in units of
    256, shared memory per block with 1 KiB reserved."""
    if threads <= 0:
        return 0
    warps = -(-threads // 32)
    by_threads = SM90_WARPS // warps
    per_warp = -(-max(registers, 1) * 32 // 256) * 256
    by_registers = (SM90_REGISTERS // per_warp) // warps
    by_shared = SM90_SHARED_BYTES // (shared_bytes + SM90_SHARED_RESERVED_PER_BLOCK)
    return max(0, min(by_threads, by_registers, by_shared, SM90_BLOCKS))


def readable(names: list[str]) -> list[str]:
    """Kernel names demangled by c++filt where it is installed, without
    RN's anonymous-namespace prefix; the names as they are otherwise."""
    if not names or not shutil.which("c++filt"):
        return names
    run = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True)
    out = run.stdout.split("\n")[: len(names)]
    if run.returncode != 0 or len(out) != len(names):
        return names
    return [n.replace("rn::cuda::(anonymous namespace)::", "") for n in out]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("--steps", type=int, required=True, help="training steps the trace covers")
    ap.add_argument("--kernels", action="store_true", help="also list CUPTI kernel names")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--json", help="write the summary as JSON here")
    ap.add_argument("--artifact", help="the traced MODEL.rnx: the batch-norm kernels' bytes")
    ap.add_argument("--copy-gbps", type=float,
                    help="a device copy's read + write GB/s in the same run (bench/device_copy.py)")
    args = ap.parse_args()
    nodes = node_table(read_program(args.artifact)) if args.artifact else None
    with open(args.trace) as f:
        s = summarize(gpu_events(json.load(f)), args.steps, nodes)
    if args.copy_gbps:
        s["copy_gbps"] = args.copy_gbps
        for v in s["kernels"].values():
            if "gbps" in v:
                v["copy_ratio"] = args.copy_gbps / v["gbps"] if v["gbps"] else None
    idle = s["window_ms_per_step"] - s["busy_ms_per_step"]
    print(f"per step: window {s['window_ms_per_step']:.3f} ms, GPU busy {s['busy_ms_per_step']:.3f} ms, "
          f"idle {idle:.3f} ms, kernel time summed over streams {s['kernel_sum_ms_per_step']:.3f} ms")
    print("idle gaps per step: " + ", ".join(
        f"{k}: {v['gaps_per_step']:.0f} gaps, {v['ms_per_step']:.3f} ms" for k, v in s["idle_gaps"].items()))
    print("\nsubgraph            ms/step")
    for k, v in s["subgraphs"].items():
        print(f"{k:<18} {v:8.3f}")
    print("\nop                                   ms/step  launches/step")
    for k, v in list(s["ops"].items())[: args.top]:
        print(f"{k:<36} {v['ms_per_step']:8.3f} {v['launches_per_step']:8.1f}")
    if args.kernels:
        print("\nkernel                                                       ms/step  launches/step"
              "  threads  regs  smem B  local B  blocks/SM")
        top = list(s["kernels"].items())[: args.top]
        for name, (_, v) in zip(readable([k for k, _ in top]), top):
            launch = v.get("launch")
            config = (f" {launch['threads']:8d} {launch['registers']:5d} {launch['shared_bytes']:7d}"
                      f" {launch['local_bytes']:8d} {launch['blocks_per_sm_sm90']:10d}") if launch else ""
            print(f"{name[:60]:<60} {v['ms_per_step']:8.3f} {v['launches_per_step']:8.1f}{config}")
        moving = [(n, v) for n, (_, v) in zip(readable([k for k, _ in top]), top) if "gbps" in v]
        if moving:
            print("\nbatch-norm kernel                                            GB/step    GB/s"
                  + ("  x copy time" if args.copy_gbps else ""))
            for name, v in moving:
                ratio = f" {v['copy_ratio']:12.2f}" if v.get("copy_ratio") else ""
                print(f"{name[:60]:<60} {v['floor_bytes_per_step'] / 1e9:8.3f} {v['gbps']:7.0f}{ratio}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(s, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
