"""Options of the ``rn-build-training`` pass, and running it through ``rn-opt``.

>>> opts = TrainingOptions(optimizer="adamw", precision="f16", loss_scaling="dynamic")
>>> opts.pass_argument()
'--rn-build-training=optimizer=adamw precision=f16 loss-scaling=dynamic'

The pass argument is one argv element (no shell quoting when given to
``subprocess``); the pass itself checks combinations of options (e.g. loss
scaling with bf16) and :func:`build_training` reports its errors.

``TrainingOptions`` is made from the compiler's list of the pass's options
(``passes/Passes.td``: name, type, default, help and choices, as
``rn._compiler.pipeline_options_json()`` or ``rn-compile
--list-pipeline-options`` give them) the first time it, ``CHOICES`` or one of
the choice tuples is used: ``import rn`` does not need the compiler.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import subprocess
from dataclasses import field, fields
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

__all__ = [
    "CHOICES",
    "LOSS_SCALINGS",
    "OPTIMIZERS",
    "PASS_NAME",
    "PRECISIONS",
    "TrainingOptions",
    "build_training",
    "find_rn_opt",
    "format_option",
    "pass_option_list",
]

PASS_NAME = "rn-build-training"
# The pass's options that are no TrainingOptions field: the name of the
# function it derives the steps from (always @forward here).
_NOT_FIELDS = ("forward",)


def pass_option_list() -> list[dict[str, Any]]:
    """The options of ``rn-build-training`` as the compiler declares them, in
    declaration order: dicts with ``name``, ``type`` (``bool``, ``int``,
    ``float`` or ``string``), ``default`` (as MLIR prints it), ``help`` and
    ``choices``. From the in-process compiler ``rn._compiler``, else from the
    ``rn-compile`` executable (:func:`rn.find_rn_compile`); raises
    :class:`rn.NativeUnavailable` when there is neither."""
    return [dict(o) for o in _pipeline_options() if o["pass"] == PASS_NAME]


@cache
def _pipeline_options() -> tuple[dict[str, Any], ...]:
    from ._native_loader import NativeUnavailable, compiler_module

    try:
        text = compiler_module().pipeline_options_json()
    except NativeUnavailable as e:
        tool = find_tool("rn-compile", "RN_COMPILE")
        if tool is None:
            raise NativeUnavailable(
                f"rn.TrainingOptions is made from the compiler's option list, and there is no "
                f"compiler: {e}; nor an rn-compile executable (env RN_COMPILE, build/bin or "
                "PATH)"
            ) from e
        proc = subprocess.run(
            [tool, "--list-pipeline-options"], capture_output=True, text=True, check=False
        )
        if proc.returncode != 0:
            raise NativeUnavailable(
                f"{tool} --list-pipeline-options failed: {proc.stderr.strip()}"
            ) from e
        text = proc.stdout
    return tuple(json.loads(text))


_TYPES: dict[str, type] = {"bool": bool, "int": int, "float": float, "string": str}


def _parse_default(text: str, kind: str) -> object:
    """A default as the compiler prints it ("9.000000e-01", "true", "2000"), as a value."""
    if kind == "bool":
        return text in ("true", "1")
    return _TYPES[kind](float(text) if kind == "float" else text)


class _TrainingOptionsBase:
    """The methods of :class:`TrainingOptions`, whose fields come from the compiler."""

    if TYPE_CHECKING:

        def __init__(self, **options: Any) -> None: ...

        def __getattr__(self, name: str) -> Any: ...

    def __post_init__(self) -> None:
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            kind = type(f.default)
            choices = f.metadata["choices"]
            if choices:
                if value not in choices:
                    raise ValueError(
                        f"{f.name} must be one of {', '.join(choices)}, got {value!r}"
                    )
            elif kind is str:
                if not isinstance(value, str):
                    raise ValueError(f"{f.name} must be a str, got {value!r}")
            elif kind is bool:
                if not isinstance(value, bool):
                    raise ValueError(f"{f.name} must be a bool, got {value!r}")
            elif kind is int:
                if not isinstance(value, int) or isinstance(value, bool):
                    raise ValueError(f"{f.name} must be an int, got {value!r}")
            else:
                if (
                    not isinstance(value, (int, float))
                    or isinstance(value, bool)
                    or not math.isfinite(value)
                ):
                    raise ValueError(f"{f.name} must be a finite float, got {value!r}")
                object.__setattr__(self, f.name, float(value))
        if not 0.0 <= self.momentum < 1.0:
            raise ValueError(f"momentum must be in [0, 1), got {self.momentum!r}")
        if self.weight_decay < 0.0:
            raise ValueError(f"weight_decay must be non-negative, got {self.weight_decay!r}")
        if not 0.0 <= self.ema_decay < 1.0:
            raise ValueError(f"ema_decay must be in [0, 1), got {self.ema_decay!r}")
        if self.loss_scale <= 0.0:
            raise ValueError(f"loss_scale must be positive, got {self.loss_scale!r}")

    def pass_options(self) -> str:
        """The pass's option string: non-default values only, in field order."""
        parts: list[str] = []
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if value != f.default:
                parts.append(f"{f.metadata['pass_option']}={format_option(value)}")
        return " ".join(parts)

    def pass_argument(self) -> str:
        """The ``rn-opt`` argument (one argv element), e.g. ``--rn-build-training=optimizer=lars``."""
        options = self.pass_options()
        return f"--{PASS_NAME}={options}" if options else f"--{PASS_NAME}"


_TRAINING_OPTIONS_DOC = """Options of ``--rn-build-training``; the fields, types, defaults,
    help and choices are the pass's.

    Field ``foo_bar`` is pass option ``foo-bar``; each field's metadata holds
    its ``help``, ``choices`` and ``pass_option``. Ints given for float fields
    are stored as floats. The class is made from the compiler's declaration of
    the pass (``passes/Passes.td``, :func:`pass_option_list`) when first used;
    ``python -m rn.models``'s flags are made from its fields.
    """


def _make_training_options() -> type[_TrainingOptionsBase]:
    specs = []
    for option in pass_option_list():
        if option["pass_option"] in _NOT_FIELDS:
            continue
        kind = option["type"]
        choices = tuple(option["choices"])
        annotation: Any = Literal.__getitem__(choices) if choices else _TYPES[kind]
        metadata = {"help": option["help"], "choices": choices, "pass_option": option["name"]}
        default = _parse_default(option["default"], kind)
        name = option["pass_option"].replace("-", "_")
        specs.append((name, annotation, field(default=default, metadata=metadata)))
    cls = dataclasses.make_dataclass(
        "TrainingOptions", specs, bases=(_TrainingOptionsBase,), frozen=True
    )
    cls.__module__ = __name__  # pickle finds it here (make_dataclass's module= is 3.12's)
    cls.__doc__ = _TRAINING_OPTIONS_DOC
    return cls


@cache
def _derived() -> dict[str, Any]:
    cls = _make_training_options()
    choices = {f.name: f.metadata["choices"] for f in fields(cls) if f.metadata["choices"]}
    return {
        "TrainingOptions": cls,
        "CHOICES": choices,
        "OPTIMIZERS": choices["optimizer"],
        "PRECISIONS": choices["precision"],
        "LOSS_SCALINGS": choices["loss_scaling"],
    }


def __getattr__(name: str) -> Any:
    """``TrainingOptions``, ``CHOICES``, ``OPTIMIZERS``, ``PRECISIONS`` and
    ``LOSS_SCALINGS``, made from the compiler's option list on first use."""
    if name in ("TrainingOptions", "CHOICES", "OPTIMIZERS", "PRECISIONS", "LOSS_SCALINGS"):
        value = _derived()[name]
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if TYPE_CHECKING:
    TrainingOptions = _TrainingOptionsBase
    CHOICES: dict[str, tuple[str, ...]]
    OPTIMIZERS: tuple[str, ...]
    PRECISIONS: tuple[str, ...]
    LOSS_SCALINGS: tuple[str, ...]


def format_option(value: object) -> str:
    """A value as the pass's option parser reads it (``true``, ``0.9``, ``sgd``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def find_tool(name: str, env_var: str) -> str | None:
    """Locate an RN tool: env ``env_var``, else the wheel's ``rn/bin/<name>``, else
    ``<repo>/build/bin/<name>`` (a source checkout), else ``PATH``."""
    env = os.environ.get(env_var)
    if env:
        return shutil.which(env)
    package = Path(__file__).resolve().parent
    installed = package / "bin" / name
    if installed.is_file() and os.access(installed, os.X_OK):
        return str(installed)
    built = package.parents[1] / "build" / "bin" / name
    if built.is_file() and os.access(built, os.X_OK):
        return str(built)
    return shutil.which(name)


def find_rn_opt() -> str | None:
    """Locate rn-opt: env ``RN_OPT``, else ``<repo>/build/bin/rn-opt``, else ``PATH``."""
    return find_tool("rn-opt", "RN_OPT")


def build_training(model_mlir: str, options: TrainingOptions, rn_opt: str | None = None) -> str:
    """Run ``rn-opt --rn-build-training`` on model-level MLIR text; return the training module.

    Raises ``FileNotFoundError`` when rn-opt cannot be found and ``RuntimeError``
    (with rn-opt's diagnostics) when the pass fails.
    """
    tool = rn_opt if rn_opt is not None else find_rn_opt()
    if tool is None:
        raise FileNotFoundError(
            "rn-opt not found: set RN_OPT, build it into build/bin/rn-opt, or put it on PATH"
        )
    argv = [tool, "--mlir-print-op-on-diagnostic=false", options.pass_argument()]
    try:
        proc = subprocess.run(argv, input=model_mlir, capture_output=True, text=True, check=False)
    except FileNotFoundError as e:
        raise FileNotFoundError(f"rn-opt not found at {tool!r}") from e
    if proc.returncode != 0:
        raise RuntimeError(
            f"{options.pass_argument()} failed (rn-opt exited {proc.returncode}):\n"
            f"{proc.stderr.strip()}"
        )
    return proc.stdout
