"""Reading and rewriting safetensors files (artifacts and checkpoints) with numpy.

The format is an 8-byte little-endian header length, a JSON header naming
each tensor's dtype, shape and byte range, and the data. Artifacts and
checkpoints are safetensors files (docs/artifact.md, docs/rn-run.md); the
runtime reads and writes them in C++ (``runtime/core/safetensors.h``), and
the torch import and export read and rewrite them here, in plain Python, so
that neither needs the native extension. The format is small enough that a
dependency (PyPI ``safetensors``) would buy nothing.
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The element types RN writes; numpy has no bfloat16 (kept as raw bytes below).
_NUMPY_DTYPES = {"F32": "<f4", "F16": "<f2", "I32": "<i4", "I64": "<i8", "U8": "u1", "BOOL": "u1"}
_HEADER_LIMIT = 100 * 1024 * 1024


@dataclass
class SafetensorsFile:
    """Tensors by name (numpy arrays, or raw ``bytes`` for BF16) and string metadata."""

    tensors: dict[str, Any] = field(default_factory=dict)
    dtypes: dict[str, str] = field(default_factory=dict)
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    metadata: dict[str, str] = field(default_factory=dict)


def _np() -> Any:
    import numpy

    return numpy


def read(path: str | os.PathLike[str]) -> SafetensorsFile:
    """Read every tensor and the metadata of ``path``; ``ValueError`` names what is wrong."""
    np = _np()
    data = Path(path).read_bytes()
    if len(data) < 8:
        raise ValueError(f"{path}: not a safetensors file (shorter than its header length)")
    (length,) = struct.unpack("<Q", data[:8])
    if length > min(_HEADER_LIMIT, len(data) - 8):
        raise ValueError(f"{path}: not a safetensors file (header length {length})")
    try:
        header = json.loads(data[8 : 8 + length])
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: the safetensors header is not JSON: {e}") from None
    body = memoryview(data)[8 + length :]
    out = SafetensorsFile(metadata=dict(header.pop("__metadata__", {}) or {}))
    for name, info in header.items():
        dtype, shape = info["dtype"], tuple(info["shape"])
        begin, end = info["data_offsets"]
        if not 0 <= begin <= end <= len(body):
            raise ValueError(f"{path}: tensor {name!r} lies outside the file")
        raw = body[begin:end]
        out.dtypes[name], out.shapes[name] = dtype, shape
        if dtype in _NUMPY_DTYPES:
            out.tensors[name] = np.frombuffer(raw, dtype=_NUMPY_DTYPES[dtype]).reshape(shape).copy()
        else:
            out.tensors[name] = bytes(raw)
    return out


def read_metadata(path: str | os.PathLike[str]) -> dict[str, str]:
    """The string metadata of ``path`` without reading its tensors."""
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise ValueError(f"{path}: not a safetensors file")
        (length,) = struct.unpack("<Q", head)
        if length > _HEADER_LIMIT:
            raise ValueError(f"{path}: not a safetensors file (header length {length})")
        header = json.loads(f.read(length))
    return dict(header.get("__metadata__", {}) or {})


def write(path: str | os.PathLike[str], file: SafetensorsFile) -> None:
    """Write ``file`` (tensors in its order) atomically: a temporary file renamed over ``path``.

    Each tensor is written as ``file.dtypes[name]``: a numpy array is
    converted to it, raw ``bytes`` (BF16) are written as they are with
    ``file.shapes[name]``.
    """
    np = _np()
    header: dict[str, Any] = {"__metadata__": dict(file.metadata)}
    chunks: list[bytes] = []
    offset = 0
    for name, value in file.tensors.items():
        dtype = file.dtypes[name]
        if isinstance(value, bytes):
            raw, shape = value, file.shapes[name]
        else:
            array = np.ascontiguousarray(value, dtype=_NUMPY_DTYPES[dtype])
            raw, shape = array.tobytes(), array.shape
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned, as the runtime writes it
    tmp = Path(f"{os.fspath(path)}.tmp")
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for raw in chunks:
            f.write(raw)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
