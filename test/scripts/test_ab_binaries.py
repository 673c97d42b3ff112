"""bench/ab-binaries.sh: two rn-run stand-ins that print rn-run's benchmark
line, run in turn, each side's median and B / A in ab.txt, and a failing
side reported (no GPU needed)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "ab-binaries.sh"


def fake_rn_run(path: Path, ms: float, calls: Path, rc: int = 0) -> Path:
    """A stand-in that logs its arguments and prints a benchmark line."""
    path.write_text(
        "#!/bin/sh\n"
        f'echo "$@" >> "{calls}"\n'
        f'echo \'{{"model": "m", "ms_per_step": {ms}, "conv_floor_ms": 1.0, "loss": 0.5}}\'\n'
        f"exit {rc}\n"
    )
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def run(tmp_path: Path, a: Path, b: Path, *specs: str,
        **extra_env: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, OUT=str(tmp_path / "out"), RN_PYTHON=sys.executable,
               RN_AB_PLANS=str(tmp_path), **extra_env)
    return subprocess.run(["bash", str(SCRIPT), str(a), str(b), *specs], env=env,
                          capture_output=True, text=True, check=False)


def test_runs_in_turn_and_reports_the_ratio(tmp_path: Path) -> None:
    calls = tmp_path / "calls.txt"
    a = fake_rn_run(tmp_path / "a", 2.0, calls)
    b = fake_rn_run(tmp_path / "b", 1.5, calls)
    done = run(tmp_path, a, b, "resnet18c:256:stride1fold")
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in (tmp_path / "out" / "ab.jsonl").read_text().splitlines()]
    assert [(r["side"], r["round"]) for r in records] == [("a", 1), ("b", 1), ("a", 2), ("b", 2)]
    summary = (tmp_path / "out" / "ab.txt").read_text()
    assert "A 2.000 ms" in summary and "B 1.500 ms" in summary and "B / A 0.750" in summary
    # Every run has the variant's artifact and the shared plan cache.
    lines = calls.read_text().splitlines()
    assert len(lines) == 4
    assert all("resnet18c.bench256.stride1fold.rnx" in line for line in lines)
    assert all(f"--plan-cache {tmp_path}/plans-resnet18c-256.json" in line for line in lines)


def test_side_environment_reaches_only_that_side(tmp_path: Path) -> None:
    calls = tmp_path / "calls.txt"
    script = tmp_path / "rn-run"
    script.write_text(
        "#!/bin/sh\n"
        f'echo "switch=${{RN_SWITCH:-unset}}" >> "{calls}"\n'
        'ms=2.0; [ "${RN_SWITCH:-}" = 1 ] && ms=1.0\n'
        'echo "{\\"model\\": \\"m\\", \\"ms_per_step\\": $ms}"\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    done = run(tmp_path, script, script, "vgg11c:256", RN_AB_ENV_B="RN_SWITCH=1")
    assert done.returncode == 0, done.stderr
    assert calls.read_text().splitlines() == ["switch=unset", "switch=1"] * 2
    assert "B / A 0.500" in (tmp_path / "out" / "ab.txt").read_text()


def test_a_failing_side_is_reported(tmp_path: Path) -> None:
    calls = tmp_path / "calls.txt"
    a = fake_rn_run(tmp_path / "a", 2.0, calls)
    b = fake_rn_run(tmp_path / "b", 1.5, calls, rc=3)
    done = run(tmp_path, a, b, "vgg11c:256")
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in (tmp_path / "out" / "ab.jsonl").read_text().splitlines()]
    assert [r.get("error") for r in records if r["side"] == "b"] == ["exit 3", "exit 3"]
    assert "vgg11c:256: a run failed" in (tmp_path / "out" / "ab.txt").read_text()


def test_usage_without_specs(tmp_path: Path) -> None:
    done = run(tmp_path, tmp_path / "a", tmp_path / "b")
    assert done.returncode == 2 and "usage" in done.stderr
