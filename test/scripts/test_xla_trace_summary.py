"""bench/xla_trace_summary.py on a hand-made Perfetto trace in the layout of
jax.profiler's (process-name metadata, complete events per stream)."""

from __future__ import annotations

import gzip
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "xla_trace_summary.py"
spec = importlib.util.spec_from_file_location("xla_trace_summary", SCRIPT)
xs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(xs)


def trace() -> dict:
    meta = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "/host:CPU"}},
            {"ph": "M", "name": "process_name", "pid": 2, "args": {"name": "/device:GPU:0"}}]
    gpu = [  # two steps; the two kernels of each overlap by 1 us on two streams
        {"ph": "X", "pid": 2, "tid": 1, "ts": 0, "dur": 4, "name": "loop_add_fusion"},
        {"ph": "X", "pid": 2, "tid": 2, "ts": 3, "dur": 3, "name": "sm90_xmma_fprop_implicit_gemm"},
        {"ph": "X", "pid": 2, "tid": 1, "ts": 10, "dur": 4, "name": "loop_add_fusion"},
        {"ph": "X", "pid": 2, "tid": 2, "ts": 13, "dur": 3, "name": "sm90_xmma_fprop_implicit_gemm"},
    ]
    host = [{"ph": "X", "pid": 1, "tid": 1, "ts": 0, "dur": 100, "name": "PjitFunction"}]
    return {"traceEvents": meta + gpu + host}


def test_gpu_kernels_per_step_and_family():
    s = xs.summarize(trace()["traceEvents"], steps=2)
    # Host events are left out; busy is the union (6 us per step), the
    # span runs from 0 to 16 us.
    assert s["busy_ms_per_step"] == pytest.approx(0.006)
    assert s["span_ms_per_step"] == pytest.approx(0.008)
    k = s["kernels"]
    assert k["loop_add_fusion"]["ms_per_step"] == pytest.approx(0.004)
    assert k["loop_add_fusion"]["launches_per_step"] == 1
    assert k["loop_add_fusion"]["family"] == "loop fusion"
    assert k["sm90_xmma_fprop_implicit_gemm"]["family"] == "convolution (cuDNN)"
    assert "PjitFunction" not in k


def test_command_line_finds_the_newest_trace(tmp_path: Path):
    run_dir = tmp_path / "plugins" / "profile" / "2026_01_01"
    run_dir.mkdir(parents=True)
    with gzip.open(run_dir / "perfetto_trace.json.gz", "wt") as f:
        json.dump(trace(), f)
    out = tmp_path / "s.json"
    r = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path), "--steps", "2", "--json",
                        str(out)], capture_output=True, text=True, check=True)
    assert "GPU busy 0.006 ms" in r.stdout
    assert json.loads(out.read_text())["steps"] == 2
