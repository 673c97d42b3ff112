"""MLIR text emission and shape inference for the `rn` dialect (model level).

A model is traced (:mod:`rn.tracer`) by calling it on a symbolic :class:`Value`;
every functional op below checks and infers shapes, then appends one line of
MLIR. Activations are NHWC; filters are OHWI; the loss is always
``tensor<f32>``. This module knows nothing of :mod:`rn.nn`: modules call the
ops here, and the tracer drives both.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal, Protocol, TypeAlias, get_args

__all__ = [
    "DTYPES",
    "Init",
    "LayerInfo",
    "ParamSpec",
    "TensorType",
    "Value",
    "adaptive_avg_pool2d",
    "add",
    "avg_pool2d",
    "batch_norm",
    "cat",
    "channel_mul",
    "channel_scale",
    "channel_shuffle",
    "chunk",
    "concat",
    "conv2d",
    "dropout",
    "flatten",
    "format_float",
    "format_table",
    "gelu",
    "global_avg_pool",
    "hardsigmoid",
    "hardswish",
    "hardtanh",
    "layer_norm",
    "linear",
    "max_pool2d",
    "relu",
    "relu6",
    "sigmoid",
    "silu",
    "softmax_cross_entropy",
    "split",
    "stochastic_depth",
    "symbol",
    "tanh",
]

DType: TypeAlias = Literal["f32", "f16", "bf16"]
DTYPES: tuple[str, ...] = get_args(DType)
IntPair: TypeAlias = int | tuple[int, int]

_BARE_SYMBOL = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*")


def format_float(x: float) -> str:
    """Print a float as an MLIR literal with a '.' and an exponent: ``1.000000000e-05``."""
    if not math.isfinite(x):
        raise ValueError(f"cannot emit non-finite float {x!r}")
    return format(float(x), ".9e")


def format_table(rows: Sequence[Sequence[str]], align: str) -> list[str]:
    """Lines of a text table with columns two spaces apart.

    Column ``i`` is padded to its widest cell, left- or right-aligned as ``align[i]``
    (``"<"`` or ``">"``); columns past ``len(align)`` are printed as they are.
    """
    widths = [max(len(row[i]) for row in rows) for i in range(len(align))]
    lines = []
    for row in rows:
        padded = [f"{c:{a}{w}}" for c, a, w in zip(row, align, widths, strict=False)]
        lines.append("  ".join([*padded, *row[len(align) :]]))
    return lines


def _escape(s: str) -> str:
    """Escape a string for an MLIR string literal."""
    out: list[str] = []
    for ch in s:
        if ch in '"\\' or not ch.isprintable() or not ch.isascii():
            out.extend(f"\\{b:02X}" for b in ch.encode())
        else:
            out.append(ch)
    return "".join(out)


def symbol(name: str) -> str:
    """Return ``@name``, quoted when ``name`` is not a bare MLIR identifier."""
    if _BARE_SYMBOL.fullmatch(name):
        return f"@{name}"
    return f'@"{_escape(name)}"'


def _pair(v: IntPair, what: str) -> tuple[int, int]:
    if isinstance(v, int) and not isinstance(v, bool):
        return (v, v)
    if (
        isinstance(v, tuple)
        and len(v) == 2
        and all(isinstance(e, int) and not isinstance(e, bool) for e in v)
    ):
        return (v[0], v[1])
    raise ValueError(f"{what} must be an int or a pair of ints, got {v!r}")


def _list(p: tuple[int, int]) -> str:
    return f"[{p[0]}, {p[1]}]"


# --------------------------------------------------------------------------- #
# Initializers and parameter specs
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class Init:
    """A parameter initializer, printed as ``#rn.init<...>``.

    ``uniform`` draws from U(-value, value); ``normal`` from N(0, value^2);
    ``values`` gives every element (``elements``, in order).
    """

    kind: Literal["zeros", "ones", "uniform", "normal", "values"]
    value: float | None = None
    elements: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if (self.kind == "values") != (self.elements is not None):
            raise ValueError(
                "#rn.init<values> needs its elements"
                if self.kind == "values"
                else f"#rn.init<{self.kind}> takes no elements"
            )
        if self.kind == "values":
            assert self.elements is not None
            if self.value is not None or not self.elements:
                raise ValueError("#rn.init<values> takes a non-empty list of elements, no value")
            if not all(isinstance(v, float) and math.isfinite(v) for v in self.elements):
                raise ValueError(f"#rn.init<values> needs finite floats, got {self.elements!r}")
        elif self.kind in ("zeros", "ones"):
            if self.value is not None:
                raise ValueError(f"#rn.init<{self.kind}> takes no value")
        elif self.kind in ("uniform", "normal"):
            if self.value is None or not math.isfinite(self.value) or self.value < 0:
                raise ValueError(
                    f"#rn.init<{self.kind}> needs a finite non-negative value, got {self.value!r}"
                )
        else:
            raise ValueError(f"unknown initializer kind {self.kind!r}")

    @staticmethod
    def zeros() -> Init:
        return Init("zeros")

    @staticmethod
    def ones() -> Init:
        return Init("ones")

    @staticmethod
    def uniform(bound: float) -> Init:
        return Init("uniform", float(bound))

    @staticmethod
    def normal(std: float) -> Init:
        return Init("normal", float(std))

    @staticmethod
    def explicit(elements: Iterable[float]) -> Init:
        """Every element given, in order (``#rn.init<values, [...]>``)."""
        return Init("values", elements=tuple(float(v) for v in elements))

    def __str__(self) -> str:
        if self.elements is not None:
            listed = ", ".join(format_float(v) for v in self.elements)
            return f"#rn.init<{self.kind}, [{listed}]>"
        if self.value is None:
            return f"#rn.init<{self.kind}>"
        return f"#rn.init<{self.kind}, {format_float(self.value)}>"


class TensorLike(Protocol):
    """What a module registers as a parameter or buffer (see ``rn.nn.Parameter``)."""

    @property
    def shape(self) -> tuple[int, ...]: ...

    @property
    def init(self) -> Init: ...


@dataclass(frozen=True)
class ParamSpec:
    """A named model tensor as declared in the IR (a parameter or a buffer)."""

    name: str
    shape: tuple[int, ...]
    init: Init
    buffer: bool = False
    dtype: str | None = None
    """A fixed element type (the input normalization's f32), else the model's."""

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    def declaration(self, dtype: str) -> str:
        kw = "buffer " if self.buffer else ""
        ty = TensorType(self.shape, self.dtype or dtype)
        return f"rn.parameter {kw}{symbol(self.name)} : {ty} = {self.init}"


# --------------------------------------------------------------------------- #
# Types and values
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class TensorType:
    """A ranked tensor type such as ``tensor<4x32x32x3xf32>``."""

    shape: tuple[int, ...]
    dtype: str

    def __str__(self) -> str:
        return "tensor<" + "".join(f"{d}x" for d in self.shape) + self.dtype + ">"


@dataclass(frozen=True, eq=False)
class Value:
    """A symbolic SSA value produced while tracing a model."""

    emitter: Emitter
    name: str
    type: TensorType

    @property
    def shape(self) -> tuple[int, ...]:
        return self.type.shape

    @property
    def dtype(self) -> str:
        return self.type.dtype

    @property
    def ndim(self) -> int:
        return len(self.type.shape)

    def __add__(self, other: Value) -> Value:
        if not isinstance(other, Value):
            return NotImplemented
        return add(self, other)

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"Value({self.name}: {self.type})"


@dataclass(frozen=True)
class LayerInfo:
    """One row of a model summary: a leaf module call."""

    name: str
    kind: str
    output_shape: tuple[int, ...]
    num_params: int


# --------------------------------------------------------------------------- #
# The emitter
# --------------------------------------------------------------------------- #


class Emitter:
    """Accumulates the body of ``@forward`` while a model is traced (``dtype`` checked by
    :func:`rn.tracer.trace_model`)."""

    def __init__(
        self,
        dtype: str,
        params: Sequence[tuple[ParamSpec, object]] = (),
        module_paths: dict[int, str] | None = None,
        root_label: str = "model",
    ) -> None:
        self.dtype = dtype
        self.lines: list[str] = []
        self._counter = 0
        self._specs: dict[int, ParamSpec] = {id(t): spec for spec, t in params}
        self._keepalive = [t for _, t in params]
        self._paths = module_paths or {}
        self._root_label = root_label
        self._stack: list[str] = []
        self.layers: list[LayerInfo] = []

    # -- naming and errors -------------------------------------------------- #

    def fresh(self) -> str:
        name = f"%{self._counter}"
        self._counter += 1
        return name

    @property
    def location(self) -> str:
        """Dotted path of the module being traced (for error messages)."""
        return self._stack[-1] if self._stack else self._root_label

    def error(self, message: str) -> ValueError:
        return ValueError(f"{self.location}: {message}")

    def path_of(self, module: object) -> str:
        """The state-dict path of ``module``; unregistered modules get a synthetic one."""
        path = self._paths.get(id(module))
        if path is None:
            parent = self._stack[-1] if self._stack else ""
            path = f"{parent}.<{type(module).__name__}>" if parent else f"<{type(module).__name__}>"
        return path if path else self._root_label

    def name_module(self, module: object, path: str) -> None:
        """Give ``module`` a path for error messages unless it already has one."""
        self._paths.setdefault(id(module), path)
        self._keepalive.append(module)

    @contextmanager
    def scope(self, module: object) -> Iterator[str]:
        """Enter ``module`` while its ``forward`` runs."""
        path = self.path_of(module)
        self._stack.append(path)
        try:
            yield path
        finally:
            self._stack.pop()

    def record_layer(self, name: str, kind: str, out: object, num_params: int) -> None:
        if isinstance(out, Value):
            self.layers.append(LayerInfo(name, kind, out.shape, num_params))

    # -- values ------------------------------------------------------------- #

    def type(self, shape: Iterable[int], dtype: str | None = None) -> TensorType:
        return TensorType(tuple(shape), dtype or self.dtype)

    def argument(self, name: str, shape: Iterable[int], dtype: str | None = None) -> Value:
        return Value(self, f"%{name}", self.type(shape, dtype))

    def op(self, rhs: str, ty: TensorType) -> Value:
        """Append ``%n = rhs`` and return the new value of type ``ty``."""
        v = Value(self, self.fresh(), ty)
        self.lines.append(f"{v.name} = {rhs}")
        return v

    def ops(self, rhs: str, types: Sequence[TensorType]) -> list[Value]:
        """Append ``%n:k = rhs`` (an op of ``k`` results) and return its results ``%n#0`` ..
        ``%n#(k-1)``, of ``types``; one type is :meth:`op`."""
        if len(types) == 1:
            return [self.op(rhs, types[0])]
        name = self.fresh()
        self.lines.append(f"{name}:{len(types)} = {rhs}")
        return [Value(self, f"{name}#{i}", ty) for i, ty in enumerate(types)]

    def param(self, tensor: TensorLike, what: str) -> Value:
        """Emit ``rn.param`` for a registered parameter or buffer."""
        spec = self._specs.get(id(tensor))
        if spec is None:
            raise self.error(
                f"{what} is not registered in the model (assign it to a module attribute)"
            )
        ty = self.type(spec.shape, spec.dtype)
        return self.op(f"rn.param {symbol(spec.name)} : {ty}", ty)


def _shape(shape: Sequence[int]) -> str:
    return "[" + ", ".join(map(str, shape)) + "]"


def _emitter_of(x: object, op: str) -> Emitter:
    if not isinstance(x, Value):
        raise ValueError(f"{op}: expected a traced tensor value, got {type(x).__name__}")
    return x.emitter


def _nhwc_emitter_of(x: Value, op: str) -> Emitter:
    """The emitter of ``x``, checked to be a 4-D (NHWC) value."""
    e = _emitter_of(x, op)
    if x.ndim != 4:
        raise e.error(f"{op} expects a 4-D NHWC input, got shape {_shape(x.shape)}")
    return e


def _window_out(
    e: Emitter,
    what: str,
    size: tuple[int, int],
    kernel: tuple[int, int],
    stride: tuple[int, int],
    pad: tuple[int, int],
    dilation: tuple[int, int] = (1, 1),
) -> tuple[int, int]:
    """floor((H + 2*pad - dilation*(k-1) - 1)/stride) + 1, with checks."""
    for label, vals, lo in (
        ("kernel", kernel, 1),
        ("stride", stride, 1),
        ("dilation", dilation, 1),
        ("padding", pad, 0),
    ):
        if min(vals) < lo:
            raise e.error(f"{what} {label} must be >= {lo}, got {_list(vals)}")
    out = tuple(
        (size[i] + 2 * pad[i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1 for i in (0, 1)
    )
    if min(out) < 1:
        raise e.error(
            f"{what} output spatial size would be {out[0]}x{out[1]} (non-positive): input "
            f"{size[0]}x{size[1]}, kernel {_list(kernel)}, stride {_list(stride)}, "
            f"pad {_list(pad)}, dilation {_list(dilation)}"
        )
    return (out[0], out[1])


# --------------------------------------------------------------------------- #
# Functional ops (each appends one op; parameters are emitted before use)
# --------------------------------------------------------------------------- #


def _weight_and_bias(
    e: Emitter, op: str, weight: TensorLike, bias: TensorLike | None, out: int
) -> list[Value]:
    """Emit ``rn.param`` for ``weight`` and, if given, ``bias`` (checked to be ``[out]``)."""
    vals = [e.param(weight, f"{op} weight")]
    if bias is not None:
        if tuple(bias.shape) != (out,):
            raise e.error(f"{op} bias must have shape [{out}], got {_shape(bias.shape)}")
        vals.append(e.param(bias, f"{op} bias"))
    return vals


def _operands(vals: Sequence[Value]) -> tuple[str, str]:
    """``%a, %b`` and ``(type_a, type_b)`` for an op's operand list and signature."""
    return ", ".join(v.name for v in vals), "(" + ", ".join(str(v.type) for v in vals) + ")"


def conv2d(
    x: Value,
    weight: TensorLike,
    bias: TensorLike | None = None,
    stride: IntPair = 1,
    padding: IntPair = 0,
    dilation: IntPair = 1,
    groups: int = 1,
) -> Value:
    """2-D convolution; ``x`` is NHWC, ``weight`` is OHWI ``[out, kh, kw, in/groups]``."""
    e = _nhwc_emitter_of(x, "conv2d")
    st, pd, dl = _pair(stride, "stride"), _pair(padding, "padding"), _pair(dilation, "dilation")
    if len(weight.shape) != 4:
        raise e.error(f"conv2d weight must be 4-D OHWI, got shape {_shape(weight.shape)}")
    out_c, kh, kw, in_per_group = weight.shape
    if groups < 1 or out_c % groups:
        raise e.error(f"conv2d groups {groups} must be >= 1 and divide {out_c} output channels")
    n, h, w, c = x.shape
    if c != in_per_group * groups:
        raise e.error(f"expected {in_per_group * groups} input channels, got {c}")
    oh, ow = _window_out(e, "conv2d", (h, w), (kh, kw), st, pd, dl)
    names, types = _operands([x, *_weight_and_bias(e, "conv2d", weight, bias, out_c)])
    ty = e.type((n, oh, ow, out_c))
    return e.op(
        f"rn.conv2d {names} stride {_list(st)} pad {_list(pd)} "
        f"dilation {_list(dl)} groups {groups} : {types} -> {ty}",
        ty,
    )


def batch_norm(
    x: Value,
    weight: TensorLike,
    bias: TensorLike,
    running_mean: TensorLike,
    running_var: TensorLike,
    eps: float = 1e-5,
    momentum: float = 0.1,
) -> Value:
    """Batch normalization over the channel (last) dimension of an NHWC tensor."""
    e = _nhwc_emitter_of(x, "batch_norm")
    c = x.shape[-1]
    features = weight.shape[0] if len(weight.shape) == 1 else -1
    if c != features:
        raise e.error(f"expected {features} channels, got {c}")
    if not eps > 0:
        raise e.error(f"batch_norm eps must be positive, got {eps!r}")
    if not 0.0 <= momentum <= 1.0:
        raise e.error(f"batch_norm momentum must be in [0, 1], got {momentum!r}")
    for t, what in ((bias, "bias"), (running_mean, "running_mean"), (running_var, "running_var")):
        if tuple(t.shape) != (c,):
            raise e.error(f"batch_norm {what} must have shape [{c}], got {_shape(t.shape)}")
    names, types = _operands(
        [
            x,
            e.param(weight, "batch_norm weight"),
            e.param(bias, "batch_norm bias"),
            e.param(running_mean, "batch_norm running_mean"),
            e.param(running_var, "batch_norm running_var"),
        ]
    )
    return e.op(
        f"rn.batch_norm {names} eps {format_float(eps)} "
        f"momentum {format_float(momentum)} : {types} -> {x.type}",
        x.type,
    )


def layer_norm(x: Value, weight: TensorLike, bias: TensorLike, eps: float = 1e-5) -> Value:
    """Layer normalization over the channel (last) dimension of an NHWC or [N, C] tensor:
    PyTorch's ``LayerNorm(C)`` of channels-last data (ConvNeXt's)."""
    e = _emitter_of(x, "layer_norm")
    if x.ndim not in (2, 4):
        raise e.error(f"layer_norm expects an NHWC or [N, C] input, got shape {_shape(x.shape)}")
    c = x.shape[-1]
    for t, what in ((weight, "weight"), (bias, "bias")):
        if tuple(t.shape) != (c,):
            raise e.error(f"layer_norm {what} must have shape [{c}], got {_shape(t.shape)}")
    if not eps > 0:
        raise e.error(f"layer_norm eps must be positive, got {eps!r}")
    names, types = _operands(
        [x, e.param(weight, "layer_norm weight"), e.param(bias, "layer_norm bias")]
    )
    return e.op(f"rn.layer_norm {names} eps {format_float(eps)} : {types} -> {x.type}", x.type)


def channel_scale(x: Value, scale: TensorLike) -> Value:
    """``x * scale`` with ``x`` NHWC (or [N, C]) and ``scale`` a trainable ``[C]`` parameter:
    ConvNeXt's layer scale (PyTorch's ``gamma * x`` with gamma ``[C, 1, 1]``)."""
    e = _emitter_of(x, "channel_scale")
    if x.ndim not in (2, 4):
        raise e.error(f"channel_scale expects an NHWC or [N, C] input, got shape {_shape(x.shape)}")
    c = x.shape[-1]
    if tuple(scale.shape) != (c,):
        raise e.error(f"channel_scale scale must have shape [{c}], got {_shape(scale.shape)}")
    s = e.param(scale, "channel_scale scale")
    return e.op(f"rn.channel_scale {x.name}, {s.name} : {x.type}, {s.type}", x.type)


def _unary(op: str, x: Value) -> Value:
    e = _emitter_of(x, op)
    return e.op(f"rn.{op} {x.name} : {x.type}", x.type)


def relu(x: Value) -> Value:
    """Elementwise max(x, 0)."""
    return _unary("relu", x)


def tanh(x: Value) -> Value:
    """Elementwise tanh."""
    return _unary("tanh", x)


def silu(x: Value) -> Value:
    """Elementwise x * sigmoid(x)."""
    return _unary("silu", x)


def sigmoid(x: Value) -> Value:
    """Elementwise 1 / (1 + exp(-x))."""
    return _unary("sigmoid", x)


GELU_APPROXIMATIONS: tuple[str, ...] = ("none", "tanh")


def gelu(x: Value, approximate: str = "none") -> Value:
    """Elementwise x * Phi(x), Phi the standard normal CDF (PyTorch's ``gelu``):
    exact with ``approximate="none"``, the tanh form with ``"tanh"``."""
    e = _emitter_of(x, "gelu")
    if approximate not in GELU_APPROXIMATIONS:
        raise e.error(f"gelu approximate must be one of {GELU_APPROXIMATIONS}, got {approximate!r}")
    return e.op(f"rn.gelu {x.name} approximate {approximate} : {x.type}", x.type)


def hardtanh(x: Value, min_val: float = -1.0, max_val: float = 1.0) -> Value:
    """Elementwise clamp(x, min_val, max_val) (PyTorch's Hardtanh; ReLU6 is 0..6)."""
    e = _emitter_of(x, "hardtanh")
    for what, v in (("min_val", min_val), ("max_val", max_val)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise e.error(f"hardtanh {what} must be a finite number, got {v!r}")
    if not min_val < max_val:
        raise e.error(f"hardtanh min_val {min_val!r} must be below max_val {max_val!r}")
    return e.op(
        f"rn.hardtanh {x.name} min {format_float(min_val)} max {format_float(max_val)} : {x.type}",
        x.type,
    )


def relu6(x: Value) -> Value:
    """Elementwise min(max(x, 0), 6): ``hardtanh(x, 0, 6)``."""
    return hardtanh(x, 0.0, 6.0)


def hardswish(x: Value) -> Value:
    """Elementwise x * relu6(x + 3) / 6."""
    return _unary("hardswish", x)


def hardsigmoid(x: Value) -> Value:
    """Elementwise relu6(x + 3) / 6."""
    return _unary("hardsigmoid", x)


def add(a: Value, b: Value) -> Value:
    """Elementwise sum of two tensors of identical type (no broadcasting)."""
    e = _emitter_of(a, "add")
    if not isinstance(b, Value) or b.emitter is not e:
        raise e.error("add expects two traced tensor values of the same trace")
    if a.type != b.type:
        raise e.error(f"add operands differ: {a.type} vs {b.type}")
    return e.op(f"rn.add {a.name}, {b.name} : {a.type}", a.type)


def channel_mul(x: Value, scale: Value) -> Value:
    """``x * scale`` with ``x`` NHWC ``[N, H, W, C]`` and ``scale`` ``[N, 1, 1, C]``.

    The squeeze-and-excitation gate: PyTorch's ``x * scale`` of an NCHW ``x``
    and an ``[N, C, 1, 1]`` scale (the pooled, gated input).
    """
    e = _nhwc_emitter_of(x, "channel_mul")
    if not isinstance(scale, Value) or scale.emitter is not e:
        raise e.error("channel_mul expects two traced tensor values of the same trace")
    n, _, _, c = x.shape
    if scale.shape != (n, 1, 1, c) or scale.dtype != x.dtype:
        raise e.error(
            f"channel_mul scale must be {TensorType((n, 1, 1, c), x.dtype)} for the input {x.type}, "
            f"got {scale.type}"
        )
    return e.op(f"rn.channel_mul {x.name}, {scale.name} : {x.type}, {scale.type}", x.type)


def _channel_dim(e: Emitter, op: str, x: Value, dim: object) -> None:
    """Check that ``x`` is NHWC or [N, C] and ``dim`` names its channels (the last dimension)."""
    if x.ndim not in (2, 4):
        raise e.error(f"{op} expects NHWC or [N, C] values, got shape {_shape(x.shape)}")
    if isinstance(dim, bool) or not isinstance(dim, int) or not -x.ndim <= dim < x.ndim:
        raise e.error(f"{op} dim must be an int in [{-x.ndim}, {x.ndim - 1}], got {dim!r}")
    if dim % x.ndim != x.ndim - 1:
        raise e.error(
            f"{op} along dim {dim} of {x.type}: RN {op}s along the channels only, the last "
            "dimension of its NHWC and [N, C] values (dim=-1; PyTorch's dim 1 of NCHW)"
        )


def concat(values: Sequence[Value]) -> Value:
    """Concatenation along the channel (last) dimension of NHWC or [N, C] values of one element
    type and the same other dimensions: ``torch.cat(tensors, dim=1)`` of NCHW tensors. One
    value is returned as it is (nothing emitted)."""
    if isinstance(values, Value) or not isinstance(values, Sequence) or not values:
        raise ValueError(
            f"concat: expected a non-empty list of traced tensor values, got {values!r}"
        )
    e = _emitter_of(values[0], "concat")
    x = values[0]
    if x.ndim not in (2, 4):
        raise e.error(f"concat expects NHWC or [N, C] values, got shape {_shape(x.shape)}")
    for v in values[1:]:
        if not isinstance(v, Value) or v.emitter is not e:
            raise e.error("concat expects traced tensor values of the same trace")
        if v.ndim != x.ndim or v.shape[:-1] != x.shape[:-1] or v.dtype != x.dtype:
            raise e.error(
                f"concat operands differ in more than their channels: {x.type} vs {v.type}"
            )
    if len(values) == 1:
        return x
    ty = e.type((*x.shape[:-1], sum(v.shape[-1] for v in values)), x.dtype)
    names, types = _operands(values)
    return e.op(f"rn.concat {names} : {types} -> {ty}", ty)


def cat(tensors: Sequence[Value], dim: int = -1) -> Value:
    """``torch.cat`` along RN's channels: :func:`concat`, with ``dim`` checked to be the channel
    (last) dimension of the NHWC or [N, C] values."""
    if isinstance(tensors, Sequence) and tensors and isinstance(tensors[0], Value):
        _channel_dim(tensors[0].emitter, "cat", tensors[0], dim)
    return concat(tensors)


def _split(e: Emitter, x: Value, sizes: Sequence[int]) -> list[Value]:
    if len(sizes) == 1:
        return [x]
    types = [e.type((*x.shape[:-1], k), x.dtype) for k in sizes]
    return e.ops(f"rn.split {x.name} : {x.type} -> " + ", ".join(map(str, types)), types)


def split(x: Value, split_size_or_sections: int | Sequence[int], dim: int = -1) -> list[Value]:
    """Slices of the channel (last) dimension of an NHWC or [N, C] value, as ``torch.split``:
    an int is every slice's size but a smaller last one, a list each slice's size (positive,
    adding up to the channels). ``rn.split``; one slice is the value itself (nothing emitted).

    Every slice must reach the loss: the compiler refuses a split whose slice the loss does
    not depend on (the gradient of ``rn.split`` is the concatenation of its slices')."""
    e = _emitter_of(x, "split")
    _channel_dim(e, "split", x, dim)
    c = x.shape[-1]
    s = split_size_or_sections
    if isinstance(s, int) and not isinstance(s, bool):
        if s < 1:
            raise e.error(f"split size must be positive, got {s}")
        sizes = [s] * (c // s) + ([c % s] if c % s else [])
    elif (
        isinstance(s, Sequence)
        and not isinstance(s, str)
        and all(isinstance(k, int) and not isinstance(k, bool) for k in s)
    ):
        sizes = list(s)
        if not sizes or min(sizes) < 1 or sum(sizes) != c:
            raise e.error(
                f"split sizes {sizes} must be positive and add up to the {c} channels of {x.type}"
            )
    else:
        raise e.error(f"split size must be an int or a list of ints, got {s!r}")
    return _split(e, x, sizes)


def chunk(x: Value, chunks: int, dim: int = -1) -> list[Value]:
    """``torch.chunk`` along the channel (last) dimension: slices of ceil(C / chunks) channels,
    the last one smaller (fewer than ``chunks`` slices when C is not divisible enough, as in
    PyTorch); :func:`split`."""
    e = _emitter_of(x, "chunk")
    _channel_dim(e, "chunk", x, dim)
    if isinstance(chunks, bool) or not isinstance(chunks, int) or chunks < 1:
        raise e.error(f"chunk expects a positive number of chunks, got {chunks!r}")
    c = x.shape[-1]
    return split(x, -(-c // chunks), dim)


def channel_shuffle(x: Value, groups: int) -> Value:
    """ShuffleNet's channel shuffle of an NHWC value: output channel ``j * groups + i`` is input
    channel ``i * (C / groups) + j`` (torchvision's ``channel_shuffle``,
    ``torch.nn.ChannelShuffle``). One group, or C groups, is the identity (nothing emitted)."""
    e = _nhwc_emitter_of(x, "channel_shuffle")
    c = x.shape[-1]
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1 or c % groups:
        raise e.error(
            f"channel_shuffle groups must be a positive int that divides the {c} channels, "
            f"got {groups!r}"
        )
    if groups in (1, c):
        return x
    return e.op(f"rn.channel_shuffle {x.name} groups {groups} : {x.type}", x.type)


def _ceil_pool_out(size: int, k: int, s: int, p: int) -> int:
    """PyTorch's ceil_mode output size: rounded up, less a last window that would start
    past the input and its left padding."""
    out = -(-(size + 2 * p - k) // s) + 1
    return out - 1 if (out - 1) * s >= size + p else out


def _pool(
    op: str,
    x: Value,
    kernel: IntPair,
    stride: IntPair | None,
    padding: IntPair,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Value:
    e = _nhwc_emitter_of(x, op)
    k = _pair(kernel, "kernel_size")
    s = k if stride is None else _pair(stride, "stride")
    p = _pair(padding, "padding")
    if p[0] > k[0] // 2 or p[1] > k[1] // 2:
        raise e.error(f"{op} padding {_list(p)} must be at most half the kernel {_list(k)}")
    n, h, w, c = x.shape
    oh, ow = _window_out(e, op, (h, w), k, s, p)
    if ceil_mode:
        oh, ow = _ceil_pool_out(h, k[0], s[0], p[0]), _ceil_pool_out(w, k[1], s[1], p[1])
    flags = (" ceil_mode" if ceil_mode else "") + ("" if count_include_pad else " exclude_pad")
    ty = e.type((n, oh, ow, c))
    return e.op(
        f"rn.{op} {x.name} kernel {_list(k)} stride {_list(s)} pad {_list(p)}{flags} : "
        f"{x.type} -> {ty}",
        ty,
    )


def max_pool2d(
    x: Value,
    kernel_size: IntPair,
    stride: IntPair | None = None,
    padding: IntPair = 0,
    ceil_mode: bool = False,
) -> Value:
    """Max pooling (floor mode, or PyTorch's ceil_mode: partial last windows)."""
    return _pool("max_pool2d", x, kernel_size, stride, padding, ceil_mode)


def avg_pool2d(
    x: Value,
    kernel_size: IntPair,
    stride: IntPair | None = None,
    padding: IntPair = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Value:
    """Average pooling with PyTorch's divisor: the window clipped to the padded input
    (count_include_pad=True, the default) or to the input; floor mode or ceil_mode."""
    return _pool("avg_pool2d", x, kernel_size, stride, padding, ceil_mode, count_include_pad)


def global_avg_pool(x: Value) -> Value:
    """Mean over H and W: ``[N, H, W, C] -> [N, 1, 1, C]``."""
    e = _nhwc_emitter_of(x, "global_avg_pool")
    n, _, _, c = x.shape
    ty = e.type((n, 1, 1, c))
    return e.op(f"rn.global_avg_pool {x.name} : {x.type} -> {ty}", ty)


def adaptive_avg_pool2d(x: Value, output_size: IntPair) -> Value:
    """PyTorch's adaptive average pooling of an NHWC value to ``output_size``.

    1x1 emits ``rn.global_avg_pool``, the input's own size nothing, an input
    that is a multiple of the output ``rn.avg_pool2d`` (kernel = stride =
    input / output); any other size ``rn.adaptive_avg_pool2d``, whose output
    (i, j) averages rows floor(i*H/OH) to ceil((i+1)*H/OH), columns likewise.
    """
    e = _nhwc_emitter_of(x, "adaptive_avg_pool2d")
    out = _pair(output_size, "output_size")
    if min(out) < 1:
        raise e.error(f"adaptive_avg_pool2d output size must be positive, got {_list(out)}")
    h, w = x.shape[1], x.shape[2]
    if out == (1, 1):
        return global_avg_pool(x)
    if out == (h, w):
        return x
    if h % out[0] == 0 and w % out[1] == 0:
        k = (h // out[0], w // out[1])
        return avg_pool2d(x, k, k, 0)
    ty = TensorType((x.shape[0], out[0], out[1], x.shape[3]), x.dtype)
    return e.op(f"rn.adaptive_avg_pool2d {x.name} : {x.type} -> {ty}", ty)


def flatten(x: Value) -> Value:
    """Flatten all but the batch dimension (NHWC order); a no-op on 2-D input."""
    e = _emitter_of(x, "flatten")
    if x.ndim < 2:
        raise e.error(f"flatten expects at least a 2-D input, got shape {_shape(x.shape)}")
    if x.ndim == 2:
        return x
    ty = e.type((x.shape[0], math.prod(x.shape[1:])))
    return e.op(f"rn.flatten {x.name} : {x.type} -> {ty}", ty)


def dropout(x: Value, p: float = 0.5) -> Value:
    """Inverted dropout with drop probability ``p`` (training mode)."""
    e = _emitter_of(x, "dropout")
    if not 0.0 <= p <= 1.0:
        raise e.error(f"dropout probability must be in [0, 1], got {p!r}")
    return e.op(f"rn.dropout {x.name} p {format_float(p)} : {x.type}", x.type)


def stochastic_depth(x: Value, p: float) -> Value:
    """Stochastic depth with drop probability ``p`` (training mode): torchvision's
    ``stochastic_depth(x, p, mode="row")``.

    Each sample of the batch (dimension 0) is dropped whole with probability
    ``p``, else scaled by ``1 / (1 - p)``; ``p = 1`` drops every sample. The
    evaluation step is the identity.
    """
    e = _emitter_of(x, "stochastic_depth")
    if not 0.0 <= p <= 1.0:
        raise e.error(f"stochastic depth probability must be in [0, 1], got {p!r}")
    if x.ndim < 1:
        raise e.error("stochastic depth needs a batch dimension, got a scalar")
    return e.op(f"rn.stochastic_depth {x.name} p {format_float(p)} : {x.type}", x.type)


def linear(x: Value, weight: TensorLike, bias: TensorLike | None = None) -> Value:
    """``x @ weight.T + bias`` with ``weight`` of shape ``[out, in]``."""
    e = _emitter_of(x, "linear")
    if x.ndim != 2:
        raise e.error(
            f"linear expects a 2-D input [N, features], got shape {_shape(x.shape)} "
            "(add a Flatten() before it)"
        )
    if len(weight.shape) != 2:
        raise e.error(f"linear weight must be 2-D [out, in], got {_shape(weight.shape)}")
    out_f, in_f = weight.shape
    if x.shape[1] != in_f:
        raise e.error(f"expected {in_f} input features, got {x.shape[1]}")
    names, types = _operands([x, *_weight_and_bias(e, "linear", weight, bias, out_f)])
    ty = e.type((x.shape[0], out_f))
    return e.op(f"rn.linear {names} : {types} -> {ty}", ty)


def softmax_cross_entropy(logits: Value, labels: Value, label_smoothing: float = 0.0) -> Value:
    """Mean softmax cross-entropy of ``[N, K]`` logits against ``[N]`` i32 labels."""
    e = _emitter_of(logits, "softmax_cross_entropy")
    if logits.ndim != 2:
        raise e.error(f"cross-entropy expects 2-D logits [N, classes], got {_shape(logits.shape)}")
    if not isinstance(labels, Value) or labels.shape != logits.shape[:1] or labels.dtype != "i32":
        got = labels.type if isinstance(labels, Value) else type(labels).__name__
        raise e.error(
            f"cross-entropy expects labels of type tensor<{logits.shape[0]}xi32>, got {got}"
        )
    if not 0.0 <= label_smoothing <= 1.0:
        raise e.error(f"label_smoothing must be in [0, 1], got {label_smoothing!r}")
    ty = TensorType((), "f32")
    return e.op(
        f"rn.softmax_cross_entropy {logits.name}, {labels.name} label_smoothing "
        f"{format_float(label_smoothing)} : ({logits.type}, {labels.type}) -> {ty}",
        ty,
    )
