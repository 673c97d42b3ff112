"""Finds the native extension ``rn._native`` (runtime/train bound with nanobind).

The rn package is pure Python and imports without it (emitting and
compiling models need none); :class:`rn.Trainer` needs it. It is looked for,
in order: next to the package (an install), in ``$RN_NATIVE_DIR``, and in
``<repo>/build/python/rn`` where the CMake build puts it.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

__all__ = ["NativeUnavailable", "native", "native_search_path"]

_MODULE = "rn._native"


class NativeUnavailable(ImportError):
    """The native extension was not found or did not load."""


_cached: ModuleType | None = None
_failure: str | None = None


def native_search_path() -> list[Path]:
    """The folders searched for ``_native.<abi>.so``, in order."""
    here = Path(__file__).resolve().parent
    folders = [here]
    env = os.environ.get("RN_NATIVE_DIR")
    if env:
        folders.append(Path(env))
    folders.append(here.parents[1] / "build" / "python" / "rn")
    return folders


def _find() -> Path | None:
    for folder in native_search_path():
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            candidate = folder / f"_native{suffix}"
            if candidate.is_file():
                return candidate
    return None


def native() -> ModuleType:
    """The extension module, loaded once; :class:`NativeUnavailable` says why not."""
    global _cached, _failure
    if _cached is not None:
        return _cached
    if _failure is not None:
        raise NativeUnavailable(_failure)
    path = _find()
    if path is None:
        searched = ", ".join(str(p) for p in native_search_path())
        _failure = (
            "rn.Trainer needs the native extension rn._native, which was not found for "
            f"Python {sys.version_info.major}.{sys.version_info.minor} (searched {searched}). "
            "Build it with the project's CMake build (scripts/run-main.sh or "
            "`cmake --build build --target rn_native`; it needs this interpreter's "
            "development headers and `pip install nanobind`), or set RN_NATIVE_DIR to the "
            "folder that holds _native.*.so (docs/python.md)"
        )
        raise NativeUnavailable(_failure)
    spec = importlib.util.spec_from_file_location(_MODULE, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ImportError as e:
        _failure = f"rn._native at {path} did not load: {e}"
        raise NativeUnavailable(_failure) from e
    sys.modules[_MODULE] = module
    _cached = module
    return module
