"""The command-line tools of RN's wheel: ``rn-compile``, ``rn-run``, ``rn-opt``, ``rn-data``.

The wheel holds them as executables in ``rn/bin/`` (thin mains over
``rn/lib/librn_compiler.so`` and ``librn_runtime.so``, which they find
through RPATHs relative to themselves); pip's console scripts of the same
names replace this process with them, so that they run from the wheel alone,
with their own exit codes, signals and output.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["rn_compile", "rn_data", "rn_opt", "rn_run", "tool_path"]


def tool_path(name: str) -> Path:
    """The wheel's executable ``name``; ``FileNotFoundError`` when it is not installed."""
    path = Path(__file__).resolve().parent / "bin" / name
    if not path.is_file():
        raise FileNotFoundError(
            f"{name} is not in this installation of rn ({path.parent}): the wheel was built "
            "without it (rn-compile and rn-opt need the compiler half, docs/install.md)"
        )
    return path


def _exec(name: str) -> None:
    try:
        path = tool_path(name)
    except FileNotFoundError as e:
        print(f"{name}: error: {e}", file=sys.stderr)
        sys.exit(2)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(path, [name, *sys.argv[1:]])


def rn_compile() -> None:
    _exec("rn-compile")


def rn_run() -> None:
    _exec("rn-run")


def rn_opt() -> None:
    _exec("rn-opt")


def rn_data() -> None:
    _exec("rn-data")
