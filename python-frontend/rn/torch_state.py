"""The state of a PyTorch model imported into RN, and its weights both ways.

:class:`TorchMapping` records, for each ``state_dict`` entry of the module
:func:`rn.from_torch` imported, its role and how its layout changes between
PyTorch and RN (:class:`StateMap`); ``rn.compile`` stores it in the
artifact (metadata key :data:`TORCH_METADATA_KEY`). :func:`load_into_module`
writes values back into a module with ``load_state_dict`` semantics. torch
is imported only when one of these is called.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import _safetensors
from ._state_dict import IncompatibleKeys

TORCH_METADATA_KEY = "rn.torch"
"""The artifact metadata key that holds the :class:`TorchMapping` as JSON."""


def _torch() -> Any:
    try:
        import torch
        import torch.fx  # noqa: F401 - the submodule is used below
    except ImportError as e:  # pragma: no cover - exercised where torch is absent
        raise ImportError("importing a PyTorch model needs torch (pip or python3-torch)") from e
    return torch


# --------------------------------------------------------------------------- #
# The state mapping
# --------------------------------------------------------------------------- #

LAYOUTS = ("same", "oihw_to_ohwi", "linear_chw_to_hwc", "linear_as_1x1", "channel_scale")


@dataclass(frozen=True)
class StateMap:
    """One state entry: its name (the same in PyTorch and RN), role and layout change.

    ``layout`` is ``same``, ``oihw_to_ohwi`` (a convolution filter) or
    ``linear_chw_to_hwc`` (a linear weight whose input is a flattened
    ``chw`` = (C, H, W) tensor: PyTorch's columns run over C, H, W, RN's
    over H, W, C), ``linear_as_1x1`` (a linear weight [O, I] applied to
    channels-last data: RN's 1x1 convolution filter [O, 1, 1, I]) or
    ``channel_scale`` (a [C, 1, 1] layer scale: RN's [C]). Conversions are
    permutations and reshapes, so a round trip is exact.
    """

    name: str
    role: str
    layout: str
    torch_shape: tuple[int, ...]
    chw: tuple[int, int, int] | None = None

    @property
    def rn_shape(self) -> tuple[int, ...]:
        if self.layout == "oihw_to_ohwi":
            o, i, kh, kw = self.torch_shape
            return (o, kh, kw, i)
        if self.layout == "linear_as_1x1":
            o, i = self.torch_shape
            return (o, 1, 1, i)
        if self.layout == "channel_scale":
            return (self.torch_shape[0],)
        return self.torch_shape

    def to_rn(self, array: Any) -> Any:
        """PyTorch's layout to RN's (numpy in, contiguous float32 numpy out)."""
        import numpy as np

        a = np.asarray(array, dtype=np.float32)
        if tuple(a.shape) != self.torch_shape:
            raise ValueError(f"{self.name}: shape {list(a.shape)}, expected {list(self.torch_shape)}")
        if self.layout == "oihw_to_ohwi":
            a = a.transpose(0, 2, 3, 1)
        elif self.layout == "linear_chw_to_hwc":
            assert self.chw is not None
            c, h, w = self.chw
            a = a.reshape(a.shape[0], c, h, w).transpose(0, 2, 3, 1).reshape(a.shape[0], -1)
        elif self.layout in ("linear_as_1x1", "channel_scale"):
            a = a.reshape(self.rn_shape)
        return np.ascontiguousarray(a)

    def to_torch(self, array: Any) -> Any:
        """RN's layout to PyTorch's (the inverse of :meth:`to_rn`)."""
        import numpy as np

        a = np.asarray(array, dtype=np.float32)
        if tuple(a.shape) != self.rn_shape:
            raise ValueError(f"{self.name}: shape {list(a.shape)}, expected {list(self.rn_shape)}")
        if self.layout == "oihw_to_ohwi":
            a = a.transpose(0, 3, 1, 2)
        elif self.layout == "linear_chw_to_hwc":
            assert self.chw is not None
            c, h, w = self.chw
            a = a.reshape(a.shape[0], h, w, c).transpose(0, 3, 1, 2).reshape(a.shape[0], -1)
        elif self.layout in ("linear_as_1x1", "channel_scale"):
            a = a.reshape(self.torch_shape)
        return np.ascontiguousarray(a)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "role": self.role,
            "layout": self.layout,
            "torch_shape": list(self.torch_shape),
        }
        if self.chw is not None:
            out["chw"] = list(self.chw)
        return out

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> StateMap:
        layout = d["layout"]
        if layout not in LAYOUTS:
            raise ValueError(f"unknown layout {layout!r} in the torch mapping")
        chw = tuple(d["chw"]) if "chw" in d else None
        return StateMap(d["name"], d["role"], layout, tuple(d["torch_shape"]), chw)  # type: ignore[arg-type]


@dataclass(frozen=True)
class TorchMapping:
    """How a torch module's ``state_dict`` and an RN artifact's state correspond.

    ``entries`` are the state RN trains, in the module's ``state_dict`` order;
    ``batch_counters`` are BatchNorm's ``num_batches_tracked`` buffers (RN has no
    such state: :meth:`to_torch` sets them to the steps taken); ``untouched``
    are the module's other state entries that its forward pass does not read
    (left as they are by ``copy_to``).
    """

    entries: tuple[StateMap, ...]
    batch_counters: tuple[str, ...] = ()
    untouched: tuple[str, ...] = ()

    def to_json(self) -> str:
        return json.dumps(
            {
                "version": 1,
                "entries": [e.to_json() for e in self.entries],
                "batch_counters": list(self.batch_counters),
                "untouched": list(self.untouched),
            },
            separators=(",", ":"),
        )

    @staticmethod
    def from_json(text: str) -> TorchMapping:
        d = json.loads(text)
        if d.get("version") != 1:
            raise ValueError(f"torch mapping version {d.get('version')!r}; this rn reads version 1")
        return TorchMapping(
            tuple(StateMap.from_json(e) for e in d["entries"]),
            tuple(d.get("batch_counters", ())),
            tuple(d.get("untouched", ())),
        )

    @staticmethod
    def from_artifact(path: str | os.PathLike[str]) -> TorchMapping:
        """The mapping stored in an artifact compiled from a torch module."""
        meta = _safetensors.read_metadata(path)
        if TORCH_METADATA_KEY not in meta:
            raise ValueError(
                f"{os.fspath(path)} was not compiled from a torch module (its metadata has no "
                f"{TORCH_METADATA_KEY!r}): compile it with rn.compile(torch_module, ...)"
            )
        return TorchMapping.from_json(meta[TORCH_METADATA_KEY])

    def from_torch(
        self,
        state_dict: Mapping[str, Any],
        *,
        strict: bool = True,
        action: str = "loading a torch state_dict",
        source: str = "the state_dict",
    ) -> tuple[dict[str, Any], IncompatibleKeys]:
        """RN's state (numpy float32, RN layouts) from a torch ``state_dict``; unmatched names.

        ``load_state_dict`` semantics: ``missing_keys`` are the mapped entries
        the dict lacks, ``unexpected_keys`` its names the module the mapping
        was made from does not have (its batch counters and untouched entries
        are expected, and ignored). Every entry present must be float32 (a
        torch tensor or numpy array) of its PyTorch shape. One ``ValueError``
        lists every shape and dtype mismatch and, with ``strict``, the missing
        and unexpected names; ``action`` and ``source`` word it. Otherwise
        returns the converted entries present and the unmatched names.
        """
        known = {e.name for e in self.entries} | set(self.batch_counters) | set(self.untouched)
        missing = [e.name for e in self.entries if e.name not in state_dict]
        unexpected = [k for k in state_dict if k not in known]
        mismatched: list[str] = []
        for e in self.entries:
            if e.name not in state_dict:
                continue
            value = state_dict[e.name]
            dtype = str(getattr(value, "dtype", "")) or type(value).__name__
            shape = tuple(getattr(value, "shape", ()))
            if dtype not in ("torch.float32", "float32"):
                mismatched.append(f"{e.name}: dtype {dtype}, expected float32")
            elif shape != e.torch_shape:
                mismatched.append(f"{e.name}: shape {list(shape)}, expected {list(e.torch_shape)}")
        floats = (
            "RN imports float32 weights: convert the module with .float(). "
            if any(": dtype " in m for m in mismatched) else ""
        )
        error = _state_mismatch_error(
            action, source, "the trainer's model", missing, unexpected, mismatched, strict=strict,
            hint=floats + "Use the module the artifact was compiled from (or one of its "
            "architecture), or pass strict=False to load the entries that match and get the "
            "missing and unexpected names back (shape and dtype mismatches are errors either way).",
        )
        if error is not None:
            raise error
        out: dict[str, Any] = {}
        for e in self.entries:
            if e.name in state_dict:
                value = state_dict[e.name]
                if hasattr(value, "detach"):
                    value = value.detach().cpu().numpy()
                out[e.name] = e.to_rn(value)
        return out, IncompatibleKeys(missing, unexpected)

    def to_torch(self, state: Mapping[str, Any], steps: int) -> dict[str, Any]:
        """A torch ``state_dict`` (numpy, PyTorch layouts) from RN's parameters and buffers.

        In the module's ``state_dict`` order; ``num_batches_tracked`` entries
        are ``steps`` (0-d int64); untouched entries are not included.
        """
        import numpy as np

        out: dict[str, Any] = {}
        counters = {name.rpartition(".")[0]: name for name in self.batch_counters}
        last = {e.name.rpartition(".")[0]: e.name for e in self.entries}
        for e in self.entries:
            if e.name not in state:
                raise ValueError(f"RN's state lacks {e.name}")
            out[e.name] = e.to_torch(state[e.name])
            owner = e.name.rpartition(".")[0]
            if last[owner] == e.name and owner in counters:  # BatchNorm: after running_var
                out[counters.pop(owner)] = np.array(steps, dtype=np.int64)
        for name in counters.values():
            out[name] = np.array(steps, dtype=np.int64)
        return out


def _state_mismatch_error(
    action: str,
    source: str,
    target: str,
    missing: Sequence[str],
    unexpected: Sequence[str],
    mismatched: Sequence[str],
    *,
    strict: bool,
    hint: str,
) -> ValueError | None:
    """One ``ValueError`` that lists everything stopping a state load, or None when nothing does.

    As PyTorch's ``load_state_dict``: ``missing`` (entries of ``target`` that
    ``source`` has no value for) and ``unexpected`` (entries of ``source`` that
    ``target`` lacks) count with ``strict`` only, ``mismatched`` (one
    description per entry of the wrong shape or dtype) always.
    """

    def count(items: Sequence[str]) -> str:
        return f"{len(items)} entr{'y' if len(items) == 1 else 'ies'}"

    lines = []
    if strict and missing:
        lines.append(f"missing: {count(missing)} of {target} that {source} has no value for: "
                     + ", ".join(missing))
    if strict and unexpected:
        lines.append(f"unexpected: {count(unexpected)} of {source} that {target} does not have: "
                     + ", ".join(unexpected))
    if mismatched:
        lines.append(f"mismatched: {count(mismatched)}: " + "; ".join(mismatched))
    if not lines:
        return None
    return ValueError(
        f"{action}: {source} does not match {target}; nothing was written.\n  "
        + "\n  ".join(lines) + "\n" + hint
    )


def ema_names(state: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """``{parameter: its EMA entry}`` from program or checkpoint state records (role ``ema``)."""
    return {e["of"]: e["name"] for e in state if e.get("role") == "ema" and e.get("of")}


def load_into_module(
    module: Any,
    values: Mapping[str, Any],
    *,
    untouched: Iterable[str] = (),
    strict: bool = True,
    action: str = "copy_to",
    source: str = "the trainer",
) -> IncompatibleKeys:
    """Write ``values`` (numpy, PyTorch layouts: :meth:`TorchMapping.to_torch`) into ``module``.

    ``torch.nn.Module.load_state_dict`` semantics: ``missing_keys`` are the
    module's entries without a value (its ``untouched`` ones, which its
    forward pass does not read, excepted: they keep their values),
    ``unexpected_keys`` the values' names the module lacks. Each value must
    have the module entry's shape, and a float value a floating-point entry
    (converted to its dtype, as PyTorch does). One ``ValueError`` lists every
    shape and dtype mismatch and, with ``strict``, the missing and unexpected
    names; nothing is written then. Otherwise the matching entries are
    written and the unmatched names returned.
    """
    torch = _torch()
    current = module.state_dict()
    skipped = set(untouched)
    missing = [k for k in current if k not in values and k not in skipped]
    unexpected = [k for k in values if k not in current]
    mismatched: list[str] = []
    for name, value in values.items():
        if name not in current:
            continue
        old = current[name]
        if tuple(value.shape) != tuple(old.shape):
            mismatched.append(
                f"{name}: shape {list(value.shape)}, the module has {list(old.shape)}")
        elif value.dtype.kind == "f" and not old.is_floating_point():
            mismatched.append(f"{name}: the module's {old.dtype} cannot hold {value.dtype} values")
        elif value.dtype.kind in "iu" and (old.is_floating_point() or old.is_complex()
                                           or old.dtype == torch.bool):
            mismatched.append(f"{name}: the module's {old.dtype} for an integer count")
    target = f"the module ({type(module).__name__})"
    error = _state_mismatch_error(
        action, source, target, missing, unexpected, mismatched, strict=strict,
        hint="Copy into a module of the architecture the artifact was compiled from, or pass "
        "strict=False to write the entries that match and get the missing and unexpected names "
        "back (shape and dtype mismatches are errors either way).",
    )
    if error is not None:
        raise error
    merged = {
        name: torch.from_numpy(values[name]).to(dtype=old.dtype) if name in values else old
        for name, old in current.items()
    }
    module.load_state_dict(merged, strict=True)
    return IncompatibleKeys(missing, unexpected)


def artifact_program_state(artifact: str | os.PathLike[str] | Path) -> list[dict[str, Any]]:
    """The artifact's state records (name, role, of, ...), for EMA lookups."""
    meta = _safetensors.read_metadata(artifact)
    return list(json.loads(meta["rn.program"])["state"])
