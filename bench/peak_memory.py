"""Peak GPU memory of one command, measured the same way for every system.

    python bench/peak_memory.py --out FILE.json -- CMD ARGS...

NVML's device memory "used" is read once before CMD starts (the baseline:
what the driver and any other process already hold) and then every 20 ms
while CMD runs; CMD's stdout and stderr go straight through and this
script exits with CMD's exit code (128 + N where a signal N ended it).
FILE.json gets

    {"peak_memory_bytes": max(used) - baseline, "baseline_bytes": ...,
     "method": "nvml device used, sampled every 20 ms", ...}

Every system (rn-run, torch_step.py, jax_step.py) is run under it, one
model, batch and mode per process, so that the numbers compare: each
system's in-process figure sees something else (rn-run its arena, PyTorch
its caching allocator, JAX its BFC allocator), while the device's "used"
is what the whole process costs, CUDA context and library workspaces
included. A transient peak shorter than the interval can be missed, and
memory another process takes meanwhile is counted.

SIGTERM and SIGINT are passed on to CMD, so that a `timeout` around this
script still ends the measured process; the file is written either way.

    python bench/peak_memory.py --merge FILE.json --log LOG [--config JSON]

prints the JSON records (lines with a "framework" key) that the measured
command wrote into LOG, each with "peak_memory_bytes" replaced by the
external peak and its own figure kept as "peak_memory_inproc_bytes"; where
LOG has no record, the `--config` record with an "error" from the exit code
and LOG's last line. bench/run-peers.sh uses both forms.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

TIMEOUT_EXIT = 124  # what coreutils `timeout` exits with when it ends the command


class Sampler:
    """Reads `used` every `interval_s` seconds on a thread and keeps the largest value."""

    def __init__(self, used: Callable[[], int], interval_s: float) -> None:
        self.used = used
        self.interval_s = interval_s
        self.peak = 0
        self.samples = 0
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sample(self) -> None:
        try:
            value = self.used()
        except Exception as error:  # a failed read must not end the measured command
            if len(self.errors) < 3:
                self.errors.append(str(error))
            return
        self.peak = max(self.peak, value)
        self.samples += 1

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.sample()  # one last reading, after the command has gone


def nvml_reader(index: int) -> tuple[Callable[[], int], str]:
    """NVML's used bytes of device `index`, and the device's name."""
    import pynvml

    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(index)
    name = pynvml.nvmlDeviceGetName(handle)
    if isinstance(name, bytes):
        name = name.decode()
    return (lambda: int(pynvml.nvmlDeviceGetMemoryInfo(handle).used)), name


def default_device() -> int:
    """The NVML index of the device CMD will use: CUDA_VISIBLE_DEVICES's first, else 0."""
    first = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip()
    return int(first) if first.isdigit() else 0


def exit_code(returncode: int) -> int:
    """A shell-style exit status: Popen's -N for signal N becomes 128 + N."""
    return 128 - returncode if returncode < 0 else returncode


def measure(command: Sequence[str], reader: Callable[[], int] | None, interval_s: float,
            device: str | None = None, reader_error: str | None = None
            ) -> tuple[int, dict[str, Any]]:
    """Run `command` while sampling `reader`; its exit status and the record for --out."""
    baseline = None
    sampler = None
    if reader is not None:
        try:
            baseline = reader()
        except Exception as error:
            reader_error = f"baseline: {error}"
        else:
            sampler = Sampler(reader, interval_s)
    start = time.perf_counter()
    process = subprocess.Popen(list(command))
    previous = {sig: signal.signal(sig, lambda s, _frame: process.send_signal(s))
                for sig in (signal.SIGTERM, signal.SIGINT)}
    if sampler is not None:
        sampler.start()
    try:
        returncode = process.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if sampler is not None:
            sampler.stop()
    record: dict[str, Any] = {
        "peak_memory_bytes": None,
        "baseline_bytes": baseline,
        "method": f"nvml device used, sampled every {interval_s * 1000:g} ms",
        "exit_code": exit_code(returncode),
        "wall_s": round(time.perf_counter() - start, 3),
        "device": device,
        "command": list(command),
    }
    if sampler is not None and baseline is not None:
        record["peak_memory_bytes"] = max(sampler.peak - baseline, 0) if sampler.samples else None
        record["peak_used_bytes"] = sampler.peak if sampler.samples else None
        record["samples"] = sampler.samples
        if sampler.errors:
            reader_error = "; ".join(sampler.errors)
    if reader_error:
        record["error"] = reader_error
    return exit_code(returncode), record


def _records(log: str) -> list[dict[str, Any]]:
    """The JSON objects with a "framework" key, one per line of `log`."""
    found = []
    for line in log.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and "framework" in value:
            found.append(value)
    return found


def merge(memory: dict[str, Any] | None, log: str, config: dict[str, Any]) -> list[dict[str, Any]]:
    """The records of `log` with the external peak as "peak_memory_bytes".

    The record's own figure moves to "peak_memory_inproc_bytes" (unless it
    already has one, as rn-run's lines do). With no record in `log`, the
    `config` record with an "error" that says how the command ended.
    """
    memory = memory or {}
    code = memory.get("exit_code")
    records = _records(log)
    if not records:
        if code == TIMEOUT_EXIT:
            wall = memory.get("wall_s")
            reason = "timed out" + (f" after {wall:.0f} s" if wall is not None else "")
        elif code is None:
            reason = "no peak-memory record"
        else:
            reason = f"exit {code}"
        lines = [line.strip() for line in log.splitlines() if line.strip()]
        last = lines[-1][:300] if lines else "(no output)"
        records = [dict(config, error=f"{reason}: {last}")]
    merged = []
    for record in records:
        out = dict(record)
        own = out.pop("peak_memory_bytes", None)
        if "peak_memory_inproc_bytes" not in out:
            out["peak_memory_inproc_bytes"] = own
        out["peak_memory_bytes"] = memory.get("peak_memory_bytes")
        if out["peak_memory_bytes"] is not None:
            out["peak_memory_method"] = memory.get("method")
        elif memory.get("error"):
            out["peak_memory_error"] = memory["error"]
        if code not in (None, 0) and "error" not in out:
            out["exit_code"] = code
        merged.append(out)
    return merged


def _split(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """Own options before the first "--", the command after it."""
    argv = list(argv)
    if "--" in argv:
        cut = argv.index("--")
        return argv[:cut], argv[cut + 1:]
    return argv, []


def main(argv: Sequence[str] | None = None) -> int:
    own, command = _split(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        usage="%(prog)s --out FILE.json [--interval-ms MS] [--device N] -- CMD ARGS...\n"
              "       %(prog)s --merge FILE.json --log LOG [--config JSON]")
    parser.add_argument("--out", type=Path, help="where the peak-memory record goes")
    parser.add_argument("--interval-ms", type=float, default=20.0, help="sampling period")
    parser.add_argument("--device", type=int, default=None,
                        help="NVML device index (default: CUDA_VISIBLE_DEVICES's first, else 0)")
    parser.add_argument("--merge", type=Path, metavar="FILE.json",
                        help="merge this peak-memory record into LOG's JSON records")
    parser.add_argument("--log", type=Path, help="the measured command's output (with --merge)")
    parser.add_argument("--config", default="{}",
                        help="the record to report, with an error, when LOG has none")
    args = parser.parse_args(own)

    if args.merge is not None:
        if args.log is None:
            parser.error("--merge needs --log")
        try:
            memory = json.loads(args.merge.read_text())
        except (OSError, ValueError):
            memory = None
        try:
            log = args.log.read_text(errors="replace")
        except OSError:
            log = ""
        for record in merge(memory, log, json.loads(args.config)):
            print(json.dumps(record))
        return 0

    if args.out is None or not command:
        parser.error("give --out FILE.json and the command after --")
    reader, device, reader_error = None, None, None
    try:
        reader, device = nvml_reader(default_device() if args.device is None else args.device)
    except Exception as error:  # still run the command: its own numbers are worth having
        reader_error = f"nvml: {error}"
        print(f"peak_memory.py: no NVML ({error}); running without sampling", file=sys.stderr)
    try:
        code, record = measure(command, reader, args.interval_ms / 1000, device, reader_error)
    except OSError as error:  # the command could not start
        code, record = 127, {"peak_memory_bytes": None, "exit_code": 127, "error": str(error),
                             "command": command}
        print(f"peak_memory.py: {error}", file=sys.stderr)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
