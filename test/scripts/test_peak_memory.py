"""bench/peak_memory.py: sampling around a real child process with a fake memory
reader, exit codes passed through, and merging the peak into the child's records
(no GPU or NVML needed)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "peak_memory.py"
spec = importlib.util.spec_from_file_location("peak_memory", SCRIPT)
pm = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pm)


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


class Reader:
    """The baseline at the first read, `busy` at every later one."""

    def __init__(self, baseline: int, busy: int) -> None:
        self.values = [baseline]
        self.busy = busy
        self.reads = 0

    def __call__(self) -> int:
        self.reads += 1
        return self.values.pop() if self.values else self.busy


def test_peak_is_the_largest_reading_above_the_baseline():
    reader = Reader(1000, 5000)
    code, record = pm.measure(python("import time; time.sleep(0.2)"), reader, 0.01, "fake")
    assert code == 0
    assert record["peak_memory_bytes"] == 4000 and record["baseline_bytes"] == 1000
    assert record["method"] == "nvml device used, sampled every 10 ms"
    assert record["samples"] >= 2 and record["exit_code"] == 0 and record["device"] == "fake"


def test_the_default_method_names_20_ms():
    _, record = pm.measure(python("pass"), Reader(0, 0), 0.02)
    assert record["method"] == "nvml device used, sampled every 20 ms"


def test_exit_codes_pass_through():
    code, record = pm.measure(python("raise SystemExit(3)"), Reader(0, 0), 0.01)
    assert code == 3 and record["exit_code"] == 3
    code, _ = pm.measure(python("import os, signal; os.kill(os.getpid(), signal.SIGKILL)"),
                         Reader(0, 0), 0.01)
    assert code == 137


def test_without_a_reader_the_command_still_runs():
    code, record = pm.measure(python("raise SystemExit(2)"), None, 0.02,
                              reader_error="nvml: no GPU")
    assert code == 2 and record["peak_memory_bytes"] is None and record["error"] == "nvml: no GPU"


def test_a_failing_reader_does_not_stop_the_command():
    def reader() -> int:
        raise RuntimeError("gone")

    code, record = pm.measure(python("pass"), reader, 0.01)
    assert code == 0 and record["peak_memory_bytes"] is None and "gone" in record["error"]


def test_command_line_passes_output_and_exit_code(tmp_path):
    out = tmp_path / "mem.json"
    done = subprocess.run([sys.executable, str(SCRIPT), "--out", str(out), "--",
                           *python("import sys; print('hello'); sys.exit(5)")],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 5 and "hello" in done.stdout
    record = json.loads(out.read_text())
    assert record["exit_code"] == 5 and "peak_memory_bytes" in record


def test_split_keeps_the_commands_own_double_dash():
    assert pm._split(["--out", "f", "--", "cmd", "--", "x"]) == (["--out", "f"],
                                                               ["cmd", "--", "x"])


MEMORY = {"peak_memory_bytes": 4000, "method": "nvml device used, sampled every 20 ms",
          "exit_code": 0}


def test_merge_moves_the_in_process_peak_aside():
    log = ('{"torch": "2.11", "gpu": "H200"}\nwarning: something\n'
           '{"framework": "torch", "model": "mlp", "batch": 128, "mode": "eager", '
           '"ms_per_step": 2.3, "peak_memory_bytes": 1234}\n')
    [record] = pm.merge(MEMORY, log, {})
    assert record["peak_memory_bytes"] == 4000 and record["peak_memory_inproc_bytes"] == 1234
    assert record["peak_memory_method"] == MEMORY["method"] and "exit_code" not in record


def test_merge_keeps_rn_runs_own_in_process_field():
    log = '{"framework": "rn", "model": "mlp", "batch": 128, "peak_memory_inproc_bytes": 77}\n'
    [record] = pm.merge(MEMORY, log, {})
    assert record["peak_memory_inproc_bytes"] == 77 and record["peak_memory_bytes"] == 4000


def test_merge_without_a_record_reports_the_config_with_the_reason():
    config = {"framework": "torch", "model": "vgg11c", "batch": 256, "mode": "compile"}
    [record] = pm.merge(dict(MEMORY, exit_code=124, wall_s=240.2), "compiling\nstill compiling\n",
                        config)
    assert record["error"] == "timed out after 240 s: still compiling"
    assert record["mode"] == "compile"
    [record] = pm.merge(dict(MEMORY, exit_code=1), "", config)
    assert record["error"] == "exit 1: (no output)"
    [record] = pm.merge(None, "Traceback\nKeyError\n", config)
    assert record["error"] == "no peak-memory record: KeyError"
    assert record["peak_memory_bytes"] is None and "peak_memory_method" not in record


def test_merge_says_why_there_is_no_external_peak():
    memory = {"peak_memory_bytes": None, "exit_code": 0, "error": "nvml: no GPU"}
    [record] = pm.merge(memory, '{"framework": "jax", "model": "mlp", "batch": 1}\n', {})
    assert record["peak_memory_error"] == "nvml: no GPU" and "peak_memory_method" not in record


def test_merge_command_line(tmp_path):
    mem, log = tmp_path / "mem.json", tmp_path / "run.log"
    mem.write_text(json.dumps(MEMORY))
    log.write_text('{"framework": "jax", "model": "mlp", "batch": 128, "mode": "jit"}\n')
    done = subprocess.run([sys.executable, str(SCRIPT), "--merge", str(mem), "--log", str(log)],
                          capture_output=True, text=True, check=True)
    assert json.loads(done.stdout)["peak_memory_bytes"] == 4000
