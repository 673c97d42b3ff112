"""Options of the ``rn-build-training`` pass, and running it through ``rn-opt``.

>>> opts = TrainingOptions(optimizer="adamw", precision="f16", loss_scaling="dynamic")
>>> opts.pass_argument()
'--rn-build-training=optimizer=adamw precision=f16 loss-scaling=dynamic'

The pass argument is one argv element (no shell quoting when given to
``subprocess``); the pass itself checks combinations of options (e.g. loss
scaling with bf16) and :func:`build_training` reports its errors.
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, TypeAlias, get_args

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
]

Optimizer: TypeAlias = Literal["sgd", "adamw", "lars"]
Precision: TypeAlias = Literal["f32", "f16", "bf16"]
LossScaling: TypeAlias = Literal["none", "static", "dynamic"]

OPTIMIZERS: tuple[str, ...] = get_args(Optimizer)
PRECISIONS: tuple[str, ...] = get_args(Precision)
LOSS_SCALINGS: tuple[str, ...] = get_args(LossScaling)
PASS_NAME = "rn-build-training"

CHOICES: dict[str, tuple[str, ...]] = {
    "optimizer": OPTIMIZERS,
    "precision": PRECISIONS,
    "loss_scaling": LOSS_SCALINGS,
}


def _option(default: object, help: str) -> Any:
    return field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class TrainingOptions:
    """Options of ``--rn-build-training``; the defaults are the pass's.

    Field ``foo_bar`` is pass option ``foo-bar``. Ints given for float fields
    are stored as floats. The pass declares them in ``passes/Passes.td``;
    ``test_training_options_match_the_pass`` fails when a field is missing,
    extra or has another default. ``python -m rn.models``'s flags are made
    from these fields.
    """

    optimizer: Optimizer = _option("sgd", "optimizer: " + ", ".join(OPTIMIZERS))
    momentum: float = _option(0.9, "SGD/LARS momentum")
    nesterov: bool = _option(False, "Nesterov momentum (SGD)")
    weight_decay: float = _option(0.0, "weight decay")
    no_decay_bn_bias: bool = _option(
        False, "exclude BatchNorm parameters and biases from weight decay"
    )
    beta1: float = _option(0.9, "AdamW beta1")
    beta2: float = _option(0.999, "AdamW beta2")
    adam_eps: float = _option(1e-8, "AdamW epsilon")
    lars_trust: float = _option(0.001, "LARS trust coefficient")
    lars_eps: float = _option(1e-9, "LARS epsilon")
    precision: Precision = _option(
        "f32",
        "compute precision; f16/bf16 are mixed precision with f32 master weights",
    )
    loss_scaling: LossScaling = _option("none", "loss scaling: " + ", ".join(LOSS_SCALINGS))
    loss_scale: float = _option(65536.0, "static or initial dynamic loss scale")
    growth_interval: int = _option(
        2000, "dynamic scaling: clean steps before the scale grows"
    )
    growth_factor: float = _option(2.0, "dynamic scaling: growth factor")
    backoff_factor: float = _option(0.5, "dynamic scaling: factor on overflow")
    ema_decay: float = _option(0.0, "weight EMA decay (0: off)")
    data_parallel: bool = _option(False, "average gradients over data-parallel replicas")

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            kind = type(f.default)
            if kind is str:
                if value not in CHOICES[f.name]:
                    raise ValueError(
                        f"{f.name} must be one of {', '.join(CHOICES[f.name])}, got {value!r}"
                    )
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
        for f in fields(self):
            value = getattr(self, f.name)
            if value != f.default:
                parts.append(f"{f.name.replace('_', '-')}={format_option(value)}")
        return " ".join(parts)

    def pass_argument(self) -> str:
        """The ``rn-opt`` argument (one argv element), e.g. ``--rn-build-training=optimizer=lars``."""
        options = self.pass_options()
        return f"--{PASS_NAME}={options}" if options else f"--{PASS_NAME}"


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
