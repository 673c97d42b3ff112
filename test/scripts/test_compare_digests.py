"""scripts/compare-digests.py: the fixed-tolerance and the --noise criteria
on hand-made digests (the rn-run side is test/tools/rn-run/perturb-state.mlir)."""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "compare-digests.py"
spec = importlib.util.spec_from_file_location("compare_digests", SCRIPT)
cd = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cd)


def entry(samples: list[float], role: str = "gradient", elements: int | None = None,
          norm: float | None = None) -> dict:
    """A digest entry whose norm is that of its samples unless given."""
    if norm is None:
        norm = math.sqrt(sum(x * x for x in samples))
    return {"role": role, "dtype": "f32", "elements": elements or len(samples),
            "norm": norm, "samples": samples}


def scaled(e: dict, index: int, factor: float) -> dict:
    """`e` with sample `index` multiplied by `factor` (the norm kept)."""
    samples = list(e["samples"])
    samples[index] *= factor
    return dict(e, samples=samples)


def test_entry_error_is_relative_to_sample_or_rms():
    w = entry([1.0, -1.0, 0.0, 2.0])  # RMS sqrt(6/4)
    assert cd.entry_error(w, w) == 0
    assert cd.entry_error(w, scaled(w, 3, 1.01)) == pytest.approx(0.01)
    # A sample near zero is judged on the tensor's RMS.
    g = dict(w, samples=[1.0, -1.0, 1e-3, 2.0])
    assert cd.entry_error(w, g) == pytest.approx(1e-3 / math.sqrt(6 / 4))
    assert cd.entry_error(w, dict(w, norm=math.inf)) == math.inf
    assert cd.entry_error(w, dict(w, samples=[1.0, "nan", 0.0, 2.0])) == math.inf


def test_noise_widens_only_the_entries_it_moves():
    # Samples of one magnitude, so that each one's scale is its own size.
    want = {"steady": entry([2.0, -2.0, 2.0]), "jumpy": entry([2.0, -2.0, 2.0])}
    # The perturbed CPU run moves "jumpy" by 1% and "steady" by 1e-6.
    noise = {"steady": scaled(want["steady"], 0, 1 + 1e-6), "jumpy": scaled(want["jumpy"], 1, 1.01)}
    # 3% in the jumpy entry is within 4 x 1%; the same in the steady one is not.
    got = {"steady": want["steady"], "jumpy": scaled(want["jumpy"], 2, 1.03)}
    problems, widened, insignificant = cd.compare_with_noise(want, got, [noise], 2e-3, 4)
    assert problems == [] and widened == 1 and insignificant == 0
    got = {"steady": scaled(want["steady"], 2, 1.03), "jumpy": want["jumpy"]}
    problems, _, _ = cd.compare_with_noise(want, got, [noise], 2e-3, 4)
    assert len(problems) == 1 and problems[0].startswith("steady (gradient): differs by 0.03")
    # 5% in the jumpy entry is beyond 4 x 1%.
    got = {"steady": want["steady"], "jumpy": scaled(want["jumpy"], 2, 1.05)}
    problems, _, _ = cd.compare_with_noise(want, got, [noise], 2e-3, 4)
    assert len(problems) == 1 and "bound 0.04 = max(tol 0.002, 4 x noise 0.01)" in problems[0]
    # Without --noise, the fixed tolerance rejects both differences.
    assert len(cd.compare(want, {"steady": want["steady"], "jumpy": scaled(want["jumpy"], 2, 1.03)},
                          2e-3)) == 1


def test_noise_of_several_digests_is_their_largest():
    want = {"a": entry([1.0, 1.0])}
    small = {"a": scaled(want["a"], 0, 1.001)}
    large = {"a": scaled(want["a"], 1, 1.01)}
    got = {"a": scaled(want["a"], 0, 1.03)}
    assert cd.compare_with_noise(want, got, [small], 2e-3, 4)[0]
    assert cd.compare_with_noise(want, got, [small, large], 2e-3, 4)[0] == []


def test_entries_without_a_significant_digit_are_only_checked_for_finiteness():
    # The gradient of a convolution bias before batch norm: zero up to
    # rounding, so the perturbed run changes it by more than its own scale.
    want = {"bias": entry([1e-9, -2e-9]), "weight": entry([0.5, 0.25])}
    noise = {"bias": entry([-3e-9, 1e-9]), "weight": want["weight"]}
    got = {"bias": entry([4e-7, 5e-7]), "weight": want["weight"]}
    problems, widened, insignificant = cd.compare_with_noise(want, got, [noise], 2e-3, 4)
    assert problems == [] and insignificant == 1 and widened == 0
    got["bias"] = entry([math.inf, 0.0])
    problems, _, _ = cd.compare_with_noise(want, got, [noise], 2e-3, 4)
    assert problems == ["bias (gradient): not finite"]


def test_missing_entries_are_problems():
    want = {"a": entry([1.0]), "b": entry([2.0])}
    problems, _, _ = cd.compare_with_noise(want, {"a": want["a"]}, [want], 2e-3, 4)
    assert problems == ["b: missing"]
    problems, _, _ = cd.compare_with_noise(want, want, [{"a": want["a"]}], 2e-3, 4)
    assert problems == ["b: missing in noise digest 1"]


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=tmp_path,
                          capture_output=True, text=True)


def test_command_line(tmp_path: Path):
    want = {"w": entry([2.0, 2.0]), "b": entry([0.5, 0.5], role="parameter")}
    noise = {"w": scaled(want["w"], 0, 1.01), "b": want["b"]}
    got = {"w": scaled(want["w"], 1, 1.02), "b": want["b"]}
    for name, digest in (("want", want), ("noise", noise), ("got", got)):
        (tmp_path / f"{name}.json").write_text(json.dumps(digest))
    plain = run(tmp_path, "want.json", "got.json", "--tol", "2e-3")
    assert plain.returncode == 1
    assert plain.stdout.splitlines() == ["  w (gradient): sample 1 2.04, want 2",
                                         "1/2 state entries agree within 0.002"]
    noisy = run(tmp_path, "want.json", "got.json", "--tol", "2e-3", "--noise", "noise.json")
    assert noisy.returncode == 0, noisy.stdout
    assert noisy.stdout == ("2/2 state entries agree within max(0.002, 4 x noise) (1 noise "
                            "digests; 1 beyond 0.002 within their noise, 0 without a "
                            "significant digit)\n")
    strict = run(tmp_path, "want.json", "got.json", "--noise", "noise.json", "--noise-factor", "1")
    assert strict.returncode == 1
    assert "w (gradient): differs by 0.02 of its scale, bound 0.01" in strict.stdout


def test_losses_with_noise_keep_the_largest_noise_so_far():
    want = {1: 2.0, 2: 2.0, 3: 2.0, 4: 2.0}
    # The perturbed run separates at step 2 (5%), then happens to agree.
    noise = {1: 2.0, 2: 2.1, 3: 2.0, 4: 2.0}
    got = {1: 2.0, 2: 2.2, 3: 1.7, 4: 2.0}  # 10%, then 15%: within 4 x 5%
    problems, widened = cd.compare_losses_with_noise(want, got, [noise], 1e-3, 4)
    assert problems == [] and widened == 2
    # Step 1's noise is 0: the fixed tolerance holds there.
    problems, _ = cd.compare_losses_with_noise(want, {**got, 1: 2.01}, [noise], 1e-3, 4)
    assert problems == ["step 1: loss 2.01, want 2.0 (relative bound 0.001 = max(tol 0.001, "
                        "4 x noise 0))"]
    problems, _ = cd.compare_losses_with_noise(want, {**got, 4: 1.5}, [noise], 1e-3, 4)
    assert len(problems) == 1 and problems[0].startswith("step 4: loss 1.5")
    problems, _ = cd.compare_losses_with_noise(want, got, [{1: 2.0}], 1e-3, 4)
    assert problems[0] == "step 2: missing in noise log 1"


def test_losses_command_line(tmp_path: Path):
    def log(name: str, values: list[float]) -> None:
        lines = ["rn-run: executor cpu"] + [f"step {i + 1} loss {v:.6f}" for i, v in enumerate(values)]
        (tmp_path / name).write_text("\n".join(lines + ["loss first 0 last 0"]) + "\n")
    log("cpu.log", [2.0, 2.0, 2.0])
    log("noise.log", [2.0, 2.1, 2.0])
    log("gpu.log", [2.0, 2.2, 1.9])
    plain = run(tmp_path, "--losses", "cpu.log", "gpu.log", "--tol", "1e-3")
    assert plain.returncode == 1 and plain.stdout.endswith("1/3 step losses agree within 0.001\n")
    noisy = run(tmp_path, "--losses", "cpu.log", "gpu.log", "--tol", "1e-3", "--noise", "noise.log")
    assert noisy.returncode == 0, noisy.stdout
    assert noisy.stdout == ("3/3 step losses agree within max(0.001, 4 x noise) (1 noise logs; "
                            "2 beyond 0.001 within their noise)\n")
