"""Shared fixtures: put the frontend on sys.path and locate rn-opt."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeAlias

import pytest

REPO = Path(__file__).resolve().parents[2]
FRONTEND = REPO / "python-frontend"
sys.path.insert(0, str(FRONTEND))

from rn.training import find_rn_opt  # noqa: E402 - needs FRONTEND on sys.path


@pytest.fixture(scope="session")
def rn_opt() -> Path:
    """Path of rn-opt as rn.find_rn_opt finds it; skips unless RN_REQUIRE_TOOLS=1."""
    found = find_rn_opt()
    if found is None:
        msg = (
            "rn-opt not found (set RN_OPT, build it into build/bin/rn-opt or put it on PATH; "
            f"RN_OPT={os.environ.get('RN_OPT')!r})"
        )
        if os.environ.get("RN_REQUIRE_TOOLS") == "1":
            pytest.fail(msg + " and RN_REQUIRE_TOOLS=1")
        pytest.skip(msg)
    return Path(found)


@pytest.fixture(scope="session")
def run_rn_opt(rn_opt: Path) -> Callable[[str], str]:
    """Run rn-opt on MLIR text; fail the test with its stderr unless it exits 0."""

    def run(text: str, *args: str) -> str:
        proc = subprocess.run(
            [str(rn_opt), *args], input=text, capture_output=True, text=True, timeout=300
        )
        if proc.returncode != 0:
            pytest.fail(f"rn-opt exited {proc.returncode}:\n{proc.stderr[-4000:]}")
        return proc.stdout

    return run


Cli: TypeAlias = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def cli() -> Cli:
    """Run ``python -m rn.models ARGS`` in the repository root with the frontend on
    PYTHONPATH; ``env`` adds variables (e.g. ``RN_OPT``) to the environment."""
    base = dict(os.environ)
    base["PYTHONPATH"] = os.pathsep.join(filter(None, [str(FRONTEND), base.get("PYTHONPATH")]))

    def run(*args: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "rn.models", *args],
            capture_output=True,
            text=True,
            env={**base, **(env or {})},
            cwd=REPO,
            timeout=300,
        )

    return run
