"""Finds the native extensions: ``rn._native`` (runtime/train: the trainer)
and ``rn._compiler`` (the compiler in-process), both bound with nanobind.

The rn package imports without them (emitting models needs neither);
:class:`rn.Trainer` needs ``_native`` and :func:`rn.compile` ``_compiler``.
They are looked for, in order: next to the package (the wheel puts them
there), in ``$RN_NATIVE_DIR``, and in ``<repo>/build/python/rn`` where the
CMake build of a source checkout puts them.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

__all__ = ["NativeUnavailable", "compiler_module", "native", "native_search_path"]


class NativeUnavailable(ImportError):
    """The native extension was not found or did not load."""


_cached: dict[str, ModuleType] = {}
_failures: dict[str, str] = {}


def native_search_path() -> list[Path]:
    """The folders searched for the extensions (``_native.<abi>.so``, ...), in order."""
    here = Path(__file__).resolve().parent
    folders = [here]
    env = os.environ.get("RN_NATIVE_DIR")
    if env:
        folders.append(Path(env))
    folders.append(here.parents[1] / "build" / "python" / "rn")
    return folders


def _find(name: str) -> Path | None:
    for folder in native_search_path():
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            candidate = folder / f"{name}{suffix}"
            if candidate.is_file():
                return candidate
    return None


def _load(name: str, what: str) -> ModuleType:
    if name in _cached:
        return _cached[name]
    if name in _failures:
        raise NativeUnavailable(_failures[name])
    path = _find(name)
    if path is None:
        searched = ", ".join(str(p) for p in native_search_path())
        _failures[name] = (
            f"{what} needs the native extension rn.{name}, which was not found for "
            f"Python {sys.version_info.major}.{sys.version_info.minor} (searched {searched}). "
            "Install RN's wheel (pip install rn-*.whl, docs/install.md), or in a source "
            "checkout build it with the project's CMake build (scripts/run-main.sh; it needs "
            "this interpreter's development headers and `pip install nanobind`), or set "
            f"RN_NATIVE_DIR to the folder that holds {name}.*.so"
        )
        raise NativeUnavailable(_failures[name])
    spec = importlib.util.spec_from_file_location(f"rn.{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ImportError as e:
        _failures[name] = f"rn.{name} at {path} did not load: {e}"
        raise NativeUnavailable(_failures[name]) from e
    sys.modules[f"rn.{name}"] = module
    _cached[name] = module
    return module


def native() -> ModuleType:
    """The trainer's extension, loaded once; :class:`NativeUnavailable` says why not."""
    return _load("_native", "rn.Trainer")


def compiler_module() -> ModuleType:
    """The compiler's extension, loaded once; :class:`NativeUnavailable` says why not."""
    return _load("_compiler", "rn.compile")
