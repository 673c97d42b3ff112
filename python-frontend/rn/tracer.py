"""Tracing a whole model: the ``@forward`` function of an :class:`rn.nn.Module`.

:func:`trace_model` calls the model on a symbolic images :class:`Value`, which
runs every module's ``forward`` and with it the functional ops of
:mod:`rn.emitter`, then the loss, and wraps the emitted lines in the model's
module (parameter declarations, ``@forward``). It imports both :mod:`rn.nn`
and :mod:`rn.emitter`; :mod:`rn.nn` imports only :mod:`rn.emitter`, which
imports neither, so the three form no import cycle.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeAlias

from .emitter import (
    DTYPES,
    Emitter,
    Init,
    LayerInfo,
    ParamSpec,
    TensorType,
    Value,
    _escape,
    _shape,
    format_table,
)
from .nn import CrossEntropyLoss, Module

__all__ = [
    "INPUT_DTYPES",
    "LossFn",
    "Trace",
    "emit_model",
    "trace_model",
]


@dataclass(frozen=True)
class Trace:
    """The result of tracing a model: MLIR text plus a per-layer summary."""

    text: str
    params: tuple[ParamSpec, ...]
    layers: tuple[LayerInfo, ...]
    logits_shape: tuple[int, ...]

    @property
    def num_parameters(self) -> int:
        """Trainable parameter count (buffers excluded)."""
        return sum(p.numel for p in self.params if not p.buffer)

    def summary(self) -> str:
        """Render the per-layer table (name, type, output shape, params)."""
        rows = [("name", "type", "output shape", "params")]
        rows += [
            (
                layer.name,
                layer.kind,
                "x".join(map(str, layer.output_shape)) or "scalar",
                f"{layer.num_params:,}",
            )
            for layer in self.layers
        ]
        lines = format_table(rows, "<<<>")
        lines.insert(1, "-" * len(lines[0]))
        lines.append("-" * len(lines[0]))
        lines.append(f"trainable parameters: {self.num_parameters:,}")
        return "\n".join(lines)


LossFn: TypeAlias = Callable[[Value, Value], Value]

INPUT_DTYPES: tuple[str, ...] = ("float", "uint8")
"""What the images input is: ``float`` (normalized on the host, of the model's
dtype) or ``uint8`` (raw pixels, normalized on the device)."""


@dataclass(frozen=True, eq=False)
class _NormalizationBuffer:
    """The tensor-like of ``input.mean`` or ``input.std`` (what a module registers)."""

    shape: tuple[int, ...]
    init: Init


def _input_normalization(
    input_dtype: str,
    mean: Sequence[float] | None,
    std: Sequence[float] | None,
    channels: int,
) -> list[tuple[ParamSpec, _NormalizationBuffer]]:
    """The buffers ``input.mean`` and ``input.std`` of a uint8 images input (none for float)."""
    if input_dtype not in INPUT_DTYPES:
        raise ValueError(f"input_dtype must be one of {', '.join(INPUT_DTYPES)}, got {input_dtype!r}")
    if input_dtype == "float":
        if mean is not None or std is not None:
            raise ValueError(
                "mean and std apply to input_dtype='uint8' (float images are normalized on the host)"
            )
        return []
    if mean is None or std is None:
        raise ValueError(
            "input_dtype='uint8' needs mean and std, one per channel: the device computes "
            "(x / 255 - mean) / std"
        )
    entries = []
    for name, values in (("mean", mean), ("std", std)):
        floats = tuple(float(v) for v in values)
        if len(floats) != channels:
            raise ValueError(
                f"{name} needs {channels} values (one per input channel), got {len(floats)}"
            )
        if not all(math.isfinite(v) for v in floats) or (
            name == "std" and not all(v > 0 for v in floats)
        ):
            raise ValueError(
                f"{name} must be finite{' and positive' if name == 'std' else ''}, got {floats}"
            )
        init = Init.explicit(floats)
        spec = ParamSpec(f"input.{name}", (channels,), init, buffer=True, dtype="f32")
        entries.append((spec, _NormalizationBuffer((channels,), init)))
    return entries


def _positive(value: object, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{what} must be a positive integer, got {value!r}")
    return value


def trace_model(
    model: Module,
    *,
    batch: int,
    input_shape: tuple[int, int, int],
    num_classes: int,
    loss: LossFn | None = None,
    dtype: str = "f32",
    name: str = "model",
    input_dtype: str = "float",
    mean: Sequence[float] | None = None,
    std: Sequence[float] | None = None,
) -> Trace:
    """Trace ``model`` on an ``[N, C, H, W]`` batch (emitted NHWC); see :func:`emit_model`."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    batch = _positive(batch, "batch")
    num_classes = _positive(num_classes, "num_classes")
    if not isinstance(input_shape, (tuple, list)) or len(input_shape) != 3:
        raise ValueError(f"input_shape must be (C, H, W), got {input_shape!r}")
    c, h, w = (_positive(d, "input_shape entries") for d in input_shape)
    loss_fn: LossFn = CrossEntropyLoss() if loss is None else loss

    normalization = _input_normalization(input_dtype, mean, std, c)
    entries: list[tuple[ParamSpec, object]] = [*normalization, *model.named_state()]
    seen: dict[str, ParamSpec] = {}
    for spec, _ in entries:
        if spec.name in seen:
            raise ValueError(f"duplicate parameter name {spec.name!r}")
        seen[spec.name] = spec
    paths = {id(m): path for path, m in model.named_modules()}
    e = Emitter(dtype, entries, paths, root_label=type(model).__name__)

    images = e.argument("images", (batch, h, w, c), "ui8" if normalization else None)
    labels = e.argument("labels", (batch,), "i32")
    x = images
    if normalization:
        # uint8 pixels cross to the device as bytes; the model reads them
        # normalized, in its dtype.
        m, s = (e.param(buffer, spec.name) for spec, buffer in normalization)
        ty = e.type(images.shape)
        x = e.op(
            f"rn.normalize_images {images.name}, {m.name}, {s.name} : "
            f"{images.type}, {m.type}, {s.type} -> {ty}",
            ty,
        )
    logits = model(x)
    if not isinstance(logits, Value):
        raise ValueError(
            f"{type(model).__name__}.forward must return a tensor value, "
            f"got {type(logits).__name__}"
        )
    if logits.shape != (batch, num_classes):
        raise ValueError(
            f"model output: expected logits of shape {_shape((batch, num_classes))} "
            f"[N, num_classes], got {_shape(logits.shape)}"
        )
    e.name_module(loss_fn, "loss")
    loss_v = loss_fn(logits, labels)
    if not isinstance(loss_v, Value) or loss_v.type != TensorType((), "f32"):
        got = loss_v.type if isinstance(loss_v, Value) else type(loss_v).__name__
        raise ValueError(f"loss must return a tensor<f32> scalar, got {got}")

    specs = tuple(spec for spec, _ in entries)
    out = [f'module attributes {{rn.model = "{_escape(name)}"}} {{']
    out += [f"  {spec.declaration(dtype)}" for spec in specs]
    out.append(
        f"  func.func @forward({images.name}: {images.type}, {labels.name}: {labels.type}) "
        f"-> {loss_v.type} {{"
    )
    out += [f"    {line}" for line in e.lines]
    out.append(f"    return {loss_v.name} : {loss_v.type}")
    out.append("  }")
    out.append("}")
    return Trace("\n".join(out) + "\n", specs, tuple(e.layers), logits.shape)


def emit_model(
    model: Module,
    *,
    batch: int,
    input_shape: tuple[int, int, int],
    num_classes: int,
    loss: LossFn | None = None,
    dtype: str = "f32",
    name: str = "model",
    input_dtype: str = "float",
    mean: Sequence[float] | None = None,
    std: Sequence[float] | None = None,
) -> str:
    """Return the MLIR text of ``model`` (forward + loss) for one training batch.

    ``input_shape`` is (C, H, W) as in PyTorch; the IR is NHWC. ``loss`` defaults
    to ``rn.nn.CrossEntropyLoss()``. ``dtype`` is the element type of every float
    tensor (f32, f16 or bf16); the loss is always f32 and labels i32.

    ``input_dtype="uint8"`` makes the images input raw uint8 pixels, normalized
    on the device per channel as ``(x / 255 - mean) * (1 / std)`` by
    ``rn.normalize_images`` before the model reads them: ``mean`` and ``std``
    (one per channel) are the defaults of the buffers ``input.mean`` and
    ``input.std``, which the runtime sets from the data.
    """
    return trace_model(
        model,
        batch=batch,
        input_shape=input_shape,
        num_classes=num_classes,
        loss=loss,
        dtype=dtype,
        name=name,
        input_dtype=input_dtype,
        mean=mean,
        std=std,
    ).text
