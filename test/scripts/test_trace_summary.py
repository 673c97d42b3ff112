"""scripts/trace-summary.py on a hand-made timeline in the format of
runtime/cuda/cupti_trace.cpp (GPU records on pid 1, labelled by node)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "trace-summary.py"
spec = importlib.util.spec_from_file_location("trace_summary", SCRIPT)
ts = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ts)


def event(name: str, start: float, dur: float, kernel: str = "k", pid: int = 1) -> dict:
    return {"name": name, "ph": "X", "pid": pid, "tid": 0, "ts": start, "dur": dur,
            "args": {"cupti name": kernel}}


def trace() -> dict:
    # Two steps: a convolution on one stream overlapping a zero on another,
    # a gap, then a BN part; host spans (pid 2) are ignored.
    return {"traceEvents": [
        {"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": "GPU"}},
        event("3 cbr_forward (DEEP_FWD_BWD)", 0, 100, "conv_kernel"),
        event("7 multi_zero (ZERO_GRAD)", 50, 100, "zero_kernel"),
        event("9 cbr_backward.bn_grad (DEEP_FWD_BWD)", 300, 50, "bn_kernel"),
        event("3 cbr_forward (DEEP_FWD_BWD)", 1000, 100, "conv_kernel"),
        event("7 multi_zero (ZERO_GRAD)", 1000, 20, "zero_kernel"),
        event("9 cbr_backward.bn_grad (DEEP_FWD_BWD)", 1300, 50, "bn_kernel"),
        event("memcpy", 1400, 10, "memcpy HtoD"),
        event("submit", 0, 5000, pid=2),
    ]}


def test_busy_is_the_union_and_ops_are_summed_per_step():
    s = ts.summarize(ts.gpu_events(trace()), steps=2)
    # Busy: [0,150] + [300,350] + [1000,1100] + [1300,1350] + [1400,1410].
    assert s["busy_ms_per_step"] == pytest.approx((150 + 50 + 100 + 50 + 10) / 2000)
    assert s["window_ms_per_step"] == pytest.approx(1410 / 2000)
    assert s["kernel_sum_ms_per_step"] == pytest.approx(430 / 2000)
    assert s["ops"]["cbr_forward"] == {"ms_per_step": pytest.approx(0.1), "launches_per_step": 1}
    assert s["ops"]["cbr_backward.bn_grad"]["ms_per_step"] == pytest.approx(0.05)
    assert s["ops"]["multi_zero"]["ms_per_step"] == pytest.approx(0.06)
    assert s["ops"]["(unlabelled) memcpy"]["launches_per_step"] == 0.5
    assert s["kernels"]["conv_kernel"]["ms_per_step"] == pytest.approx(0.1)
    assert s["subgraphs"]["DEEP_FWD_BWD"] == pytest.approx(0.15)
    assert list(s["ops"])[0] == "cbr_forward"  # largest first
    # Gaps of 150, 650, 200 and 50 us, all between 10 us and 1 ms.
    gaps = s["idle_gaps"]["10 us - 1 ms"]
    assert gaps["gaps_per_step"] == 2
    assert gaps["ms_per_step"] == pytest.approx((150 + 650 + 200 + 50) / 2000)
    assert s["idle_gaps"]["under 10 us"]["gaps_per_step"] == 0


def test_kernels_carry_their_first_launch_configuration(tmp_path: Path):
    t = trace()
    bn = [e for e in t["traceEvents"] if e.get("args", {}).get("cupti name") == "bn_kernel"]
    bn[0]["args"].update({"grid": [4, 1024, 1], "block": [16, 16, 1], "registers per thread": 66,
                          "shared bytes": 8192, "local bytes per thread": 0})
    bn[1]["args"].update({"grid": [4, 1024, 1], "block": [16, 16, 1], "registers per thread": 99})
    s = ts.summarize(ts.gpu_events(t), steps=2)
    assert s["kernels"]["bn_kernel"]["launch"] == {"threads": 256, "registers": 66,
                                                   "shared_bytes": 8192, "local_bytes": 0,
                                                   "blocks_per_sm_sm90": 3}
    # Records without one (memcpy, older traces) have no launch entry.
    assert "launch" not in s["kernels"]["conv_kernel"]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(t))
    run = subprocess.run([sys.executable, str(SCRIPT), str(path), "--steps", "2", "--kernels"],
                         capture_output=True, text=True, check=True)
    line = next(x for x in run.stdout.splitlines() if x.startswith("bn_kernel"))
    assert line.split()[-5:] == ["256", "66", "8192", "0", "3"]


def test_blocks_per_sm_follow_the_sm90_limits():
    # 56 registers a thread give 4 blocks of 256 threads, 66 give 3.
    assert ts.blocks_per_sm(256, 56, 0) == 4
    assert ts.blocks_per_sm(256, 66, 0) == 3
    assert ts.blocks_per_sm(256, 48, 8192) == 5
    assert ts.blocks_per_sm(256, 32, 9216) == 8  # threads bound
    assert ts.blocks_per_sm(64, 16, 0) == 32  # block-count bound
    assert ts.blocks_per_sm(128, 32, 100 * 1024) == 2  # shared-memory bound
    assert ts.blocks_per_sm(0, 32, 0) == 0


def test_kernel_names_are_demangled_where_cxxfilt_is_installed():
    names = ["_ZN2rn4cuda12_GLOBAL__N_111applyKernelEv", "memcpy HtoD"]
    out = ts.readable(names)
    assert out[1] == "memcpy HtoD"
    if shutil.which("c++filt"):
        assert out[0] == "applyKernel()"
    else:
        assert out[0] == names[0]


def test_command_line_prints_and_writes_json(tmp_path: Path):
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(trace()))
    out = tmp_path / "summary.json"
    run = subprocess.run([sys.executable, str(SCRIPT), str(path), "--steps", "2", "--kernels",
                          "--json", str(out)], capture_output=True, text=True, check=True)
    assert "GPU busy 0.180 ms" in run.stdout
    assert "bn_kernel" in run.stdout
    assert json.loads(out.read_text())["steps"] == 2


def program() -> dict:
    # train_step's DEEP_FWD_BWD: an event, a CBR forward (its conv output
    # f16 [2, 4, 4, 8]: 512 bytes), a junction (bn_add_relu, input f32
    # [2, 4, 4, 8]: 1024 bytes, with a shortcut) and its backward.
    tensors = [{"id": 0, "shape": [2, 4, 4, 3], "dtype": "f16"},
               {"id": 1, "shape": [2, 4, 4, 8], "dtype": "f16"},
               {"id": 2, "shape": [2, 4, 4, 8], "dtype": "f32"},
               {"id": 3, "shape": [2, 4, 4, 8], "dtype": "f32"}]
    nodes = [{"kind": "event_wait", "event": 0},
             {"kind": "op", "op": "cbr_forward", "operands": {"input": 0}, "results": {"conv_output": 1}},
             {"kind": "op", "op": "bn_add_relu", "operands": {"input": 2, "shortcut": 3},
              "results": {"result": 2}},
             {"kind": "op", "op": "bn_add_relu_backward",
              "operands": {"output_grad": 2, "relu_output": 2, "input": 3},
              "results": {"shortcut_grad": 3, "input_grad": 2}}]
    return {"functions": [{"name": "train_step", "tensors": tensors,
                           "subgraphs": [{"name": "DEEP_FWD_BWD", "nodes": nodes}]}]}


def mangled(name: str) -> str:
    return f"_ZN2rn4cuda12_GLOBAL__N_1{len(name)}{name}I6__halfLi8ELi4EEEvPKT_"


def bn_trace() -> dict:
    return {"traceEvents": [
        event("1 cbr_forward (DEEP_FWD_BWD)", 0, 2, mangled("statsPartialKernel")),
        event("1 cbr_forward (DEEP_FWD_BWD)", 2, 2, mangled("applyKernel")),
        event("2 bn_add_relu (DEEP_FWD_BWD)", 4, 4, mangled("applyKernel")),
        event("3 bn_add_relu_backward (DEEP_FWD_BWD)", 8, 4, mangled("backwardPartialKernel")),
        event("3 bn_add_relu_backward (DEEP_FWD_BWD)", 12, 4, mangled("backwardApplyKernel")),
        event("1 cbr_forward (DEEP_FWD_BWD)", 16, 5, "conv_kernel"),
    ]}


def test_batch_norm_kernels_carry_the_bytes_they_must_move(tmp_path: Path):
    nodes = ts.node_table(program())
    assert nodes[("DEEP_FWD_BWD", 1)] == {"op": "cbr_forward", "activation_bytes": 512,
                                          "shortcut": False, "relu_output": False,
                                          "shortcut_grad": False}
    assert nodes[("DEEP_FWD_BWD", 2)]["shortcut"] is True
    assert ("DEEP_FWD_BWD", 0) not in nodes  # events are not ops
    s = ts.summarize(ts.gpu_events(bn_trace()), steps=1, nodes=nodes)
    k = s["kernels"]
    # statistics: x once (512); apply: x and y of the CBR (1024) plus x, y
    # and the shortcut of the junction (3072); the junction's backward
    # sums read dy, the ReLU result and x and write the masked dy (4096),
    # its dx pass reads the masked dy and x and writes dx (3072), of
    # 1024-byte tensors.
    assert k[mangled("statsPartialKernel")]["floor_bytes_per_step"] == 512
    assert k[mangled("applyKernel")]["floor_bytes_per_step"] == 1024 + 3072
    assert k[mangled("backwardPartialKernel")]["floor_bytes_per_step"] == 4096
    assert k[mangled("backwardApplyKernel")]["floor_bytes_per_step"] == 3072
    # 512 bytes in 2 us: 0.256 GB/s; the convolution has no floor here.
    assert k[mangled("statsPartialKernel")]["gbps"] == pytest.approx(0.256)
    assert "gbps" not in k["conv_kernel"]
    # Without the artifact nothing is claimed.
    assert "gbps" not in ts.summarize(ts.gpu_events(bn_trace()), steps=1)["kernels"]["conv_kernel"]

    # The command line reads the program from an artifact (safetensors
    # header metadata) and sets the copy's rate beside each kernel's.
    header = json.dumps({"__metadata__": {"rn.program": json.dumps(program())}}).encode()
    artifact = tmp_path / "m.rnx"
    artifact.write_bytes(len(header).to_bytes(8, "little") + header)
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(bn_trace()))
    out = tmp_path / "summary.json"
    run = subprocess.run([sys.executable, str(SCRIPT), str(path), "--steps", "1", "--kernels",
                          "--artifact", str(artifact), "--copy-gbps", "0.128", "--json", str(out)],
                         capture_output=True, text=True, check=True)
    assert "batch-norm kernel" in run.stdout and "x copy time" in run.stdout
    summary = json.loads(out.read_text())
    assert summary["copy_gbps"] == 0.128
    assert summary["kernels"][mangled("statsPartialKernel")]["copy_ratio"] == pytest.approx(0.5)


def test_stored_relu_masks_count_in_both_backward_passes():
    # A CBR backward that reads the stored ReLU result (recompute-relu-mask
    # off) reads it in both passes and writes no masked gradient; one that
    # recomputes the mask reads dy and x only.
    stored = {"op": "cbr_backward", "activation_bytes": 100, "shortcut": False,
              "relu_output": True, "shortcut_grad": False}
    recomputed = {**stored, "relu_output": False}
    assert ts.bn_bytes("backwardPartialKernel<__half>", stored) == 300
    assert ts.bn_bytes("backwardApplyKernel<__half>", stored) == 400
    assert ts.bn_bytes("backwardPartialKernel<__half>", recomputed) == 200
    assert ts.bn_bytes("backwardApplyKernel<__half>", recomputed) == 300
    assert ts.bn_bytes("conv_kernel", stored) is None
