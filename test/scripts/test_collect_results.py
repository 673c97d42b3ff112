"""bench/collect_results.py: records of RN, PyTorch and JAX into results.json and the
Markdown ratios, on hand-made JSON lines (no GPU, torch or jax needed)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "collect_results.py"
spec = importlib.util.spec_from_file_location("collect_results", SCRIPT)
cr = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cr)

RN_GRAPH = {"framework": "rn", "model": "resnet18c", "executor": "cuda-graph", "batch": 256,
            "ms_per_step": 4.0, "images_per_s": 64000, "host_ms_per_step": 0.7,
            "first_step_s": 70.2, "load_s": 69.9, "peak_memory_bytes": 3 * 2**30,
            "mode": "multi-stream"}
RN_SINGLE = dict(RN_GRAPH, mode="single-stream", ms_per_step=5.0)
RN_EAGER = dict(RN_GRAPH, executor="cuda-eager", mode="eager", ms_per_step=8.0)
TORCH_EAGER = {"framework": "torch", "model": "resnet18c", "batch": 256, "mode": "eager",
               "ms_per_step": 10.0, "images_per_s": 25600, "first_step_s": 2.5,
               "peak_memory_bytes": 2**30, "peak_memory_inproc_bytes": 900 * 2**20}
TORCH_GRAPH = dict(TORCH_EAGER, mode="graph", ms_per_step=4.4)
TORCH_COMPILE = {"framework": "torch", "model": "resnet18c", "batch": 256, "mode": "compile",
                 "error": "timed out: (no output)"}
JAX = {"framework": "jax", "model": "resnet18c", "batch": 256, "mode": "jit", "dtype": "bf16",
       "input": "h2d", "ms_per_step": 4.0, "images_per_s": 64000, "first_step_s": 30.0,
       "peak_memory_bytes": 2 * 2**30, "compile_s": 20.0}


def test_modes_and_systems():
    results = cr.collect([JAX, TORCH_GRAPH, RN_EAGER, TORCH_EAGER, RN_SINGLE, RN_GRAPH,
                          TORCH_COMPILE], gpu="NVIDIA H200")
    assert [(r["system"], r["mode"]) for r in results] == [
        ("rn", "cuda-graph multi-stream"), ("rn", "cuda-graph single-stream"),
        ("rn", "cuda-eager"), ("pytorch", "eager"), ("pytorch", "graph"),
        ("pytorch", "compile"), ("jax", "jit")]
    first = results[0]
    assert {k: first[k] for k in ("model", "batch", "ms_per_step", "images_per_s",
                                  "peak_memory_bytes", "first_step_s", "gpu", "gpus")} == {
        "model": "resnet18c", "batch": 256, "ms_per_step": 4.0, "images_per_s": 64000,
        "peak_memory_bytes": 3 * 2**30, "first_step_s": 70.2, "gpu": "NVIDIA H200", "gpus": 1}
    assert first["host_ms_per_step"] == 0.7 and first["load_s"] == 69.9
    assert "executor" not in first and "framework" not in first
    assert results[5]["error"] == "timed out: (no output)" and results[5]["ms_per_step"] is None
    assert results[6]["compile_s"] == 20.0


def test_jax_modes_name_what_differs_from_the_default():
    assert cr.jax_mode(JAX) == "jit"
    assert cr.jax_mode(dict(JAX, dtype="f16", input="device")) == "jit f16 device batch"


def test_rn_mode_without_a_stream_mode_is_plain_cuda_graph():
    assert cr.rn_mode({"executor": "cuda-graph"}) == "cuda-graph"
    assert cr.rn_mode({"mode": "single-stream"}) == "cuda-graph single-stream"
    assert cr.rn_mode({"executor": "cuda-eager", "mode": "eager"}) == "cuda-eager"


def test_run_rn_sh_records_with_full_mode_names_and_the_warm_start():
    """bench/run-rn.sh writes the whole mode name and a "... warm" run for the warm first step."""
    cold = dict(RN_GRAPH, mode="cuda-graph multi-stream", gpu="NVIDIA H200")
    single = dict(RN_SINGLE, mode="cuda-graph single-stream")
    eager = dict(RN_EAGER, mode="cuda-eager")
    warm = dict(RN_GRAPH, mode="cuda-graph multi-stream warm", first_step_s=1.4, ms_per_step=4.1)
    results = cr.collect([cold, single, eager, warm], gpu=None)
    assert [r["mode"] for r in results] == ["cuda-graph multi-stream", "cuda-graph single-stream",
                                            "cuda-eager"]
    assert results[0]["first_step_warm_s"] == 1.4 and results[0]["first_step_s"] == 70.2
    assert results[0]["gpu"] == "NVIDIA H200"
    assert "| 70.2 s | 1.4 s |" in cr.markdown(results)


def test_headers_and_unknown_lines_are_not_runs():
    assert cr.collect([{"torch": "2.11", "gpu": "H200"}, {"framework": "rn"}], gpu=None) == []


def test_the_last_record_of_a_configuration_wins():
    results = cr.collect([TORCH_EAGER, dict(TORCH_EAGER, ms_per_step=9.0)], gpu=None)
    assert len(results) == 1 and results[0]["ms_per_step"] == 9.0


@pytest.mark.parametrize(("peer", "rn", "text"), [
    (5.25, 4.0, "1.31x faster"), (4.334, 5.044, "0.86x"), (1.829, 1.822, "1.00x"),
    (47.84, 53.65, "0.89x"), (2.357, 0.157, "15.01x faster")])
def test_ratio_text(peer, rn, text):
    assert cr.ratio_text(peer, rn) == text


def test_markdown_has_a_row_per_run_and_rn_ratios_per_peer():
    results = cr.collect([RN_GRAPH, RN_EAGER, TORCH_EAGER, TORCH_GRAPH, TORCH_COMPILE, JAX],
                         gpu="NVIDIA H200")
    text = cr.markdown(results)
    assert "### ResNet-18 (CIFAR), batch 256 (NVIDIA H200)" in text
    assert "| RN cuda-graph multi-stream | **4.000** | 64000 | 3,072 MiB | 70.2 s | - |" in text
    assert "| PyTorch compile | error: timed out: (no output) | | | | |" in text
    assert ("| RN vs | PyTorch eager | PyTorch graph | JAX jit |") in text
    assert "| RN cuda-graph multi-stream | 2.50x faster | 1.10x faster | 1.00x |" in text
    assert "| RN cuda-eager | 1.25x faster | 0.55x | 0.50x |" in text


def test_markdown_falls_back_to_the_in_process_peak():
    record = dict(TORCH_EAGER, peak_memory_bytes=None)
    assert "900 MiB (in-process)" in cr.markdown(cr.collect([record], gpu=None))


@pytest.mark.parametrize(("text", "name"), [
    ("GPU 0: NVIDIA H200 (UUID: GPU-0123)\nGPU 1: NVIDIA H200 (UUID: GPU-4567)\n", "NVIDIA H200"),
    ("NVIDIA H200, 143771 MiB, 580.65.06\n", "NVIDIA H200"),
    ("name, memory.total [MiB]\nNVIDIA H200, 143771 MiB\n", "NVIDIA H200"),
    ("+----+\n| NVIDIA-SMI 580.65.06 |\n"
     "|   0  NVIDIA H200                    On  |   00000000:19:00.0 Off |\n", "NVIDIA H200"),
    ("", None)])
def test_gpu_name(text, name):
    assert cr.gpu_name(text) == name


def test_command_line_reads_files_in_order_and_gpu_txt(tmp_path, capsys):
    (tmp_path / "gpu.txt").write_text("NVIDIA H200, 143771 MiB, 580.65.06\n")
    rn = tmp_path / "bench.jsonl"
    rn.write_text(json.dumps(RN_GRAPH) + "\n" + json.dumps(TORCH_EAGER) + "\nnot json\n\n")
    peers = tmp_path / "peers.jsonl"
    peers.write_text(json.dumps({"torch": "2.11"}) + "\n"
                     + json.dumps(dict(TORCH_EAGER, ms_per_step=8.0)) + "\n")
    out = tmp_path / "results.json"
    assert cr.main([str(rn), str(peers), "--out", str(out)]) == 0
    results = json.loads(out.read_text())
    assert [(r["system"], r["mode"], r["ms_per_step"], r["gpu"]) for r in results] == [
        ("rn", "cuda-graph multi-stream", 4.0, "NVIDIA H200"),
        ("pytorch", "eager", 8.0, "NVIDIA H200")]
    captured = capsys.readouterr()
    assert "| RN cuda-graph multi-stream | 2.00x faster |" in captured.out
    assert "not JSON" in captured.err


def test_runs_on_two_gpus_are_rows_of_their_own():
    two = dict(RN_GRAPH, gpus=2, images_per_s=120000)
    ddp = dict(TORCH_EAGER, mode="ddp", gpus=2)
    results = cr.collect([RN_GRAPH, two, TORCH_EAGER, ddp], gpu="NVIDIA H200")
    assert sorted((r["system"], r["gpus"]) for r in results) == [
        ("pytorch", 1), ("pytorch", 2), ("rn", 1), ("rn", 2)]
    assert {r["images_per_s"] for r in results if r["system"] == "rn"} == {64000, 120000}


def test_scaling_efficiency_pairs_a_multi_gpu_run_with_its_one_gpu_run():
    two = dict(RN_GRAPH, gpus=2, images_per_s=121600)
    ddp1 = dict(TORCH_EAGER, mode="ddp")
    ddp2 = dict(TORCH_EAGER, mode="ddp", gpus=2, images_per_s=46080)
    results = cr.collect([RN_GRAPH, two, ddp1, ddp2], gpu="NVIDIA H200")
    pairs = {(r["system"], r["gpus"]): round(e, 3) for r, e in cr.scaling(results)}
    assert pairs == {("rn", 2): 0.95, ("pytorch", 2): 0.9}
    text = cr.markdown(results)
    assert "| RN cuda-graph multi-stream on 2 GPUs | 121600 | 0.950 |" in text
    assert "| PyTorch ddp on 2 GPUs | 46080 | 0.900 |" in text


def test_summary_takes_the_unfolded_floor_and_the_fastest_peer():
    unfolded = dict(RN_GRAPH, mode="cuda-graph multi-stream unfolded", ms_per_step=4.2,
                    conv_floor_ms=2.0)
    default = dict(RN_GRAPH, conv_floor_ms=2.1)
    results = cr.collect([default, unfolded, RN_SINGLE, TORCH_EAGER, TORCH_GRAPH, JAX,
                          TORCH_COMPILE], gpu="NVIDIA H200")
    [row] = cr.summary_rows(results)
    assert row["floor_ms"] == 2.0  # the unfolded build's, not the default's 2.1
    assert (row["peer"], row["peer_ms"]) == ("JAX jit", 4.0)  # the timed peer that is fastest
    assert row["rn_over_floor"] == pytest.approx(2.0) and row["peer_over_floor"] == 2.0
    text = cr.markdown(results)
    assert "| ResNet-18 (CIFAR) | 256 | 4.000 | 2.000 | 2.00x | JAX jit 4.000 | 2.00x | 1.00x |" \
        in text


def test_summary_without_a_floor_or_a_peer():
    results = cr.collect([RN_GRAPH, TORCH_GRAPH], gpu=None)
    [row] = cr.summary_rows(results)
    assert row["floor_ms"] is None and row["rn_over_floor"] is None
    assert "| ResNet-18 (CIFAR) | 256 | 4.000 | - | - | PyTorch graph 4.400 | - | 1.10x faster |" \
        in cr.markdown(results)
    assert cr.summary_rows(cr.collect([RN_GRAPH], gpu=None)) == []
    assert "Per configuration" not in cr.markdown(cr.collect([RN_GRAPH], gpu=None))
