"""The ```python examples of docs/python.md run, in order, as one script (CPU executor)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "python.md"
DATA = Path(os.environ.get("RN_DATA", "/usr/share/datasets/fashion-mnist"))


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def _skip_or_fail(why: str) -> None:
    if os.environ.get("RN_REQUIRE_TOOLS") == "1":
        pytest.fail(why + " (RN_REQUIRE_TOOLS=1)")
    pytest.skip(why)


def test_docs_have_examples() -> None:
    assert len(python_blocks(DOC.read_text())) >= 5


def test_torch_commands_name_a_python_with_torch() -> None:
    """Tests that the commands of docs/python.md (and the example's docstring) that run the
    torch example name Debian's /usr/bin/python3, which has python3-torch, and not the first
    python3 on PATH, which has no torch on a fresh machine."""
    example = REPO / "examples" / "finetune_torchvision.py"
    blocks = re.findall(r"^```sh\n(.*?)^```", DOC.read_text(), flags=re.S | re.M)
    lines = [line.strip() for text in [*blocks, example.read_text()] for line in text.splitlines()]
    commands = [line for line in lines if "finetune_torchvision.py " in line and "python" in line]
    assert len(commands) >= 3, commands
    for command in commands:
        assert "/usr/bin/python3 examples/finetune_torchvision.py" in command, command


def test_python_docs_examples_run(tmp_path: Path) -> None:
    sys.path.insert(0, str(REPO / "python-frontend"))
    import rn

    try:
        rn.trainer._native_module()
    except (rn.NativeUnavailable, ImportError) as e:
        _skip_or_fail(str(e))
    if rn.find_rn_compile() is None:
        _skip_or_fail("rn-compile not found")
    if not (DATA / "train-images-idx3-ubyte.gz").is_file():
        _skip_or_fail(f"Fashion-MNIST not in {DATA}")
    script = tmp_path / "docs_examples.py"
    script.write_text("\n".join(python_blocks(DOC.read_text())))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "python-frontend"), env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert "drop_last=True" in proc.stdout


def test_example_script_runs(tmp_path: Path) -> None:
    sys.path.insert(0, str(REPO / "python-frontend"))
    import rn

    try:
        rn.trainer._native_module()
    except (rn.NativeUnavailable, ImportError) as e:
        _skip_or_fail(str(e))
    if not (DATA / "train-images-idx3-ubyte.gz").is_file():
        _skip_or_fail(f"Fashion-MNIST not in {DATA}")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "python-frontend"), env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, str(REPO / "examples" / "train_fashion_mnist.py"), "--model", "mlp",
         "--lr", "0.1", "--epochs", "2", "--limit-train", "640", "--limit-test", "200",
         "--executor", "cpu", "--out", str(tmp_path)],
        env=env, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    lines = [l for l in proc.stdout.splitlines() if l.startswith("epoch ")]
    assert len(lines) == 2 and "accuracy" in lines[1]
    assert (tmp_path / "mlp.checkpoint.safetensors").is_file()
