"""PyTorch-style modules that describe a model and trace it into the `rn` dialect.

Modules hold parameter *specs* (shape + initializer), never data. ``forward``
receives and returns symbolic :class:`rn.emitter.Value` objects, so custom
modules are written as in PyTorch::

    class Block(nn.Module):
        def __init__(self, c: int) -> None:
            super().__init__()
            self.conv = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn = nn.BatchNorm2d(c)
            self.relu = nn.ReLU()

        def forward(self, x: Value) -> Value:
            return self.relu(self.bn(self.conv(x)) + x)
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar, TypeAlias, overload

from . import emitter as F
from .emitter import Init, IntPair, ParamSpec, Value

__all__ = [
    "AdaptiveAvgPool2d",
    "AvgPool2d",
    "BasicBlock",
    "BatchNorm2d",
    "Bottleneck",
    "Buffer",
    "ChannelShuffle",
    "Conv2d",
    "CrossEntropyLoss",
    "Dropout",
    "Flatten",
    "GELU",
    "Hardsigmoid",
    "Hardswish",
    "Hardtanh",
    "Identity",
    "Init",
    "InitArg",
    "Linear",
    "MaxPool2d",
    "Module",
    "Parameter",
    "ReLU",
    "ReLU6",
    "Sequential",
    "SiLU",
    "Sigmoid",
    "StateTensor",
    "StochasticDepth",
    "Tanh",
    "calculate_gain",
    "kaiming_normal",
    "kaiming_uniform",
]

# --------------------------------------------------------------------------- #
# Parameters, buffers and initializers
# --------------------------------------------------------------------------- #


def _shape_tuple(shape: tuple[int, ...]) -> tuple[int, ...]:
    dims = tuple(shape)
    if not dims or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in dims):
        raise ValueError(f"tensor shape must be a non-empty tuple of positive ints, got {shape!r}")
    return dims


@dataclass(eq=False)
class StateTensor:
    """A model tensor: shape (PyTorch order, but OHWI for conv filters) and initializer."""

    shape: tuple[int, ...]
    init: Init
    requires_grad: ClassVar[bool] = False

    def __post_init__(self) -> None:
        self.shape = _shape_tuple(self.shape)
        if not isinstance(self.init, Init):
            raise TypeError(f"init must be an rn.Init, got {type(self.init).__name__}")

    def numel(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)


class Parameter(StateTensor):
    """A trainable tensor."""

    requires_grad: ClassVar[bool] = True


class Buffer(StateTensor):
    """A non-trainable tensor saved with the model (e.g. BatchNorm running stats)."""


InitFn: TypeAlias = Callable[[int, int], Init]
"""Computes an initializer from ``(fan_in, fan_out)``."""

InitArg: TypeAlias = Init | InitFn | None
"""An initializer override: a fixed :class:`Init`, an :data:`InitFn`, or None for the default."""


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for ``nonlinearity``, as ``torch.nn.init.calculate_gain``."""
    if nonlinearity in ("linear", "conv2d", "sigmoid"):
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3.0
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        return math.sqrt(2.0 / (1.0 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4.0
    raise ValueError(f"unsupported nonlinearity {nonlinearity!r}")


def _fan(mode: str, fan_in: int, fan_out: int) -> int:
    if mode == "fan_in":
        return fan_in
    if mode == "fan_out":
        return fan_out
    raise ValueError(f"mode must be 'fan_in' or 'fan_out', got {mode!r}")


def kaiming_uniform(
    a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu"
) -> InitFn:
    """``torch.nn.init.kaiming_uniform_``: U(-b, b), b = gain * sqrt(3 / fan)."""
    _fan(mode, 1, 1)
    gain = calculate_gain(nonlinearity, a)
    return lambda fan_in, fan_out: Init.uniform(gain * math.sqrt(3.0 / _fan(mode, fan_in, fan_out)))


def kaiming_normal(
    a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu"
) -> InitFn:
    """``torch.nn.init.kaiming_normal_``: N(0, std^2), std = gain / sqrt(fan)."""
    _fan(mode, 1, 1)
    gain = calculate_gain(nonlinearity, a)
    return lambda fan_in, fan_out: Init.normal(gain / math.sqrt(_fan(mode, fan_in, fan_out)))


def _default_bias(fan_in: int, fan_out: int) -> Init:
    return Init.uniform(1.0 / math.sqrt(fan_in))


# PyTorch's default for Conv2d/Linear weights: kaiming_uniform(a=sqrt(5)) = U(+-1/sqrt(fan_in)).
_default_weight: InitFn = kaiming_uniform(a=math.sqrt(5.0))


def _resolve(arg: InitArg, default: InitFn, fan_in: int, fan_out: int) -> Init:
    if arg is None:
        return default(fan_in, fan_out)
    if isinstance(arg, Init):
        return arg
    return arg(fan_in, fan_out)


def _weight_and_bias(
    shape: tuple[int, ...],
    bias: bool,
    weight_init: InitArg,
    bias_init: InitArg,
    fan_in: int,
    fan_out: int,
) -> tuple[Parameter, Parameter | None]:
    """The weight of ``shape`` and the optional ``[shape[0]]`` bias of Conv2d and Linear,
    with PyTorch's default initializers unless overridden."""
    weight = Parameter(shape, _resolve(weight_init, _default_weight, fan_in, fan_out))
    if not bias:
        return weight, None
    return weight, Parameter((shape[0],), _resolve(bias_init, _default_bias, fan_in, fan_out))


# --------------------------------------------------------------------------- #
# Module
# --------------------------------------------------------------------------- #


class Module:
    """Base class of all modules; children, parameters and buffers register on assignment."""

    _parameters: dict[str, Parameter | None]
    _buffers: dict[str, Buffer | None]
    _modules: dict[str, Module | None]

    def __init__(self) -> None:
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_buffers", {})
        object.__setattr__(self, "_modules", {})

    # -- registration ------------------------------------------------------- #

    def _registries(self) -> tuple[dict[str, Any], ...]:
        try:
            return (self._parameters, self._buffers, self._modules)
        except AttributeError:
            raise AttributeError(
                f"cannot assign to {type(self).__name__} before Module.__init__() is called"
            ) from None

    def __setattr__(self, name: str, value: object) -> None:
        registries = self._registries()
        params, buffers, modules = registries
        target: dict[str, Any] | None = None
        if isinstance(value, Buffer):
            target = buffers
        elif isinstance(value, Parameter):
            target = params
        elif isinstance(value, Module):
            target = modules
        elif value is None:  # keeps a registered name registered, as absent
            target = next((d for d in registries if name in d), None)
        for d in registries:
            if d is not target:
                d.pop(name, None)
        if target is None:
            object.__setattr__(self, name, value)
        else:
            self.__dict__.pop(name, None)
            target[name] = value

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("_"):
            for d in (self._parameters, self._buffers, self._modules):
                if name in d:
                    return d[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __delattr__(self, name: str) -> None:
        for d in (self._parameters, self._buffers, self._modules):
            if name in d:
                del d[name]
                return
        object.__delattr__(self, name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Register ``param`` (or an absent parameter) under ``name``."""
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"{name!r}: expected a Parameter, got {type(param).__name__}")
        self._check_name(name)
        self._parameters[name] = param

    def register_buffer(self, name: str, buffer: Buffer | None) -> None:
        """Register ``buffer`` (or an absent buffer) under ``name``."""
        if buffer is not None and not isinstance(buffer, Buffer):
            raise TypeError(f"{name!r}: expected a Buffer, got {type(buffer).__name__}")
        self._check_name(name)
        self._buffers[name] = buffer

    def add_module(self, name: str, module: Module | None) -> None:
        """Register a child module under ``name``."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{name!r}: expected a Module, got {type(module).__name__}")
        self._check_name(name)
        self._modules[name] = module

    @staticmethod
    def _check_name(name: str) -> None:
        if not isinstance(name, str) or not name or "." in name:
            raise ValueError(f"invalid attribute name {name!r} (non-empty, no '.')")

    # -- traversal ---------------------------------------------------------- #

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """Direct children, in registration order."""
        for name, m in self._modules.items():
            if m is not None:
                yield name, m

    def children(self) -> Iterator[Module]:
        for _, m in self.named_children():
            yield m

    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, Module]]:
        """All modules (self first, pre-order), each once, with dotted names."""
        seen: set[int] = set()

        def walk(m: Module, path: str) -> Iterator[tuple[str, Module]]:
            if id(m) in seen:
                return
            seen.add(id(m))
            yield path, m
            for name, child in m.named_children():
                yield from walk(child, f"{path}.{name}" if path else name)

        yield from walk(self, prefix)

    def modules(self) -> Iterator[Module]:
        for _, m in self.named_modules():
            yield m

    def named_state(self) -> Iterator[tuple[ParamSpec, StateTensor]]:
        """Parameters and buffers in state-dict order (per module: parameters, then buffers)."""
        seen: set[int] = set()
        for path, m in self.named_modules():
            for local, t in [*m._parameters.items(), *m._buffers.items()]:
                if t is None or id(t) in seen:
                    continue
                seen.add(id(t))
                name = f"{path}.{local}" if path else local
                yield ParamSpec(name, t.shape, t.init, buffer=isinstance(t, Buffer)), t

    def state_specs(self) -> list[ParamSpec]:
        """Every parameter and buffer as a named :class:`ParamSpec` (state-dict order)."""
        return [spec for spec, _ in self.named_state()]

    def named_parameters(self) -> Iterator[tuple[str, Parameter]]:
        """``(dotted name, Parameter)`` for every trainable parameter, each once."""
        for spec, t in self.named_state():
            if isinstance(t, Parameter):
                yield spec.name, t

    def parameters(self) -> Iterator[Parameter]:
        for _, p in self.named_parameters():
            yield p

    def named_buffers(self) -> Iterator[tuple[str, Buffer]]:
        """``(dotted name, Buffer)`` for every buffer, each once."""
        for spec, t in self.named_state():
            if isinstance(t, Buffer):
                yield spec.name, t

    def buffers(self) -> Iterator[Buffer]:
        for _, b in self.named_buffers():
            yield b

    def num_parameters(self) -> int:
        """Trainable parameter count (like ``sum(p.numel() for p in m.parameters())``)."""
        return sum(p.numel() for p in self.parameters())

    # -- tracing ------------------------------------------------------------ #

    def forward(self, *args: Any, **kwargs: Any) -> Value:
        """Compute the output value from traced input values (override in subclasses)."""
        raise NotImplementedError(f"{type(self).__name__} must implement forward()")

    def __call__(self, *args: Any, **kwargs: Any) -> Value:
        em = next((a.emitter for a in (*args, *kwargs.values()) if isinstance(a, Value)), None)
        if em is None:
            raise TypeError(
                f"{type(self).__name__} must be called on a traced tensor value "
                "(trace the model with rn.emit_model)"
            )
        with em.scope(self) as path:
            out = self.forward(*args, **kwargs)
            if not isinstance(out, Value):
                raise em.error(f"forward() must return a tensor value, got {type(out).__name__}")
        if not any(True for _ in self.named_children()):
            own = sum(p.numel() for p in self._parameters.values() if p is not None)
            em.record_layer(path, type(self).__name__, out, own)
        return out

    # -- printing ----------------------------------------------------------- #

    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        children = [
            f"({name}): " + repr(m).replace("\n", "\n  ") for name, m in self.named_children()
        ]
        head = f"{type(self).__name__}({self.extra_repr()}"
        if not children:
            return head + ")"
        return head + "\n  " + "\n  ".join(children) + "\n)"


class Sequential(Module):
    """Chain of modules named ``"0"``, ``"1"``, ... (or by an ``OrderedDict``'s keys)."""

    @overload
    def __init__(self, *args: Module) -> None: ...

    @overload
    def __init__(self, arg: OrderedDict[str, Module], /) -> None: ...

    def __init__(self, *args: Any) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, m in args[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(args):
                self.add_module(str(i), m)

    def append(self, module: Module) -> Sequential:
        self.add_module(str(len(self._modules)), module)
        return self

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return self.children()

    def __getitem__(self, idx: int) -> Module:
        mods = list(self.children())
        return mods[idx]

    def forward(self, x: Value) -> Value:
        for m in self.children():
            x = m(x)
        return x


class Identity(Module):
    """Returns its input."""

    def forward(self, x: Value) -> Value:
        return x


# --------------------------------------------------------------------------- #
# Layers
# --------------------------------------------------------------------------- #


def _int(v: object, what: str, minimum: int = 1) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or v < minimum:
        raise ValueError(f"{what} must be an int >= {minimum}, got {v!r}")
    return v


class Conv2d(Module):
    """2-D convolution; the weight is OHWI ``[out, kh, kw, in/groups]``."""

    weight: Parameter
    bias: Parameter | None

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: IntPair,
        stride: IntPair = 1,
        padding: IntPair = 0,
        dilation: IntPair = 1,
        groups: int = 1,
        bias: bool = True,
        *,
        weight_init: InitArg = None,
        bias_init: InitArg = None,
    ) -> None:
        super().__init__()
        self.in_channels = _int(in_channels, "in_channels")
        self.out_channels = _int(out_channels, "out_channels")
        self.groups = _int(groups, "groups")
        if in_channels % groups or out_channels % groups:
            raise ValueError(
                f"in_channels ({in_channels}) and out_channels ({out_channels}) "
                f"must be divisible by groups ({groups})"
            )
        self.kernel_size = F._pair(kernel_size, "kernel_size")
        self.stride = F._pair(stride, "stride")
        self.padding = F._pair(padding, "padding")
        self.dilation = F._pair(dilation, "dilation")
        kh, kw = self.kernel_size
        self.weight, self.bias = _weight_and_bias(
            (out_channels, kh, kw, in_channels // groups),
            bias,
            weight_init,
            bias_init,
            fan_in=in_channels // groups * kh * kw,
            fan_out=out_channels * kh * kw,
        )

    def forward(self, x: Value) -> Value:
        return F.conv2d(
            x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups
        )

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}"
        s += f", stride={self.stride}"
        if self.padding != (0, 0):
            s += f", padding={self.padding}"
        if self.dilation != (1, 1):
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s


class BatchNorm2d(Module):
    """Batch normalization over channels, with affine weight/bias and running stats."""

    weight: Parameter
    bias: Parameter
    running_mean: Buffer
    running_var: Buffer

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1) -> None:
        super().__init__()
        self.num_features = _int(num_features, "num_features")
        if not eps > 0:
            raise ValueError(f"eps must be positive, got {eps!r}")
        if not 0.0 <= momentum <= 1.0:
            raise ValueError(f"momentum must be in [0, 1], got {momentum!r}")
        self.eps = float(eps)
        self.momentum = float(momentum)
        self.weight = Parameter((num_features,), Init.ones())
        self.bias = Parameter((num_features,), Init.zeros())
        self.running_mean = Buffer((num_features,), Init.zeros())
        self.running_var = Buffer((num_features,), Init.ones())

    def forward(self, x: Value) -> Value:
        return F.batch_norm(
            x, self.weight, self.bias, self.running_mean, self.running_var, self.eps, self.momentum
        )

    def extra_repr(self) -> str:
        return f"{self.num_features}, eps={self.eps}, momentum={self.momentum}"


class Linear(Module):
    """Fully connected layer; the weight is ``[out_features, in_features]``."""

    weight: Parameter
    bias: Parameter | None

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        *,
        weight_init: InitArg = None,
        bias_init: InitArg = None,
    ) -> None:
        super().__init__()
        self.in_features = _int(in_features, "in_features")
        self.out_features = _int(out_features, "out_features")
        self.weight, self.bias = _weight_and_bias(
            (out_features, in_features),
            bias,
            weight_init,
            bias_init,
            fan_in=in_features,
            fan_out=out_features,
        )

    def forward(self, x: Value) -> Value:
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


class ReLU(Module):
    """max(x, 0). ``inplace`` is accepted for PyTorch compatibility and ignored."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, x: Value) -> Value:
        return F.relu(x)


class Tanh(Module):
    """Hyperbolic tangent."""

    def forward(self, x: Value) -> Value:
        return F.tanh(x)


class SiLU(Module):
    """x * sigmoid(x). ``inplace`` is accepted and ignored."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, x: Value) -> Value:
        return F.silu(x)


class Sigmoid(Module):
    """1 / (1 + exp(-x))."""

    def forward(self, x: Value) -> Value:
        return F.sigmoid(x)


class GELU(Module):
    """x * Phi(x), exact (``approximate="none"``) or its tanh form (``"tanh"``), as
    ``torch.nn.GELU``."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        if approximate not in F.GELU_APPROXIMATIONS:
            raise ValueError(
                f"GELU approximate must be one of {F.GELU_APPROXIMATIONS}, got {approximate!r}"
            )
        self.approximate = approximate

    def forward(self, x: Value) -> Value:
        return F.gelu(x, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Hardtanh(Module):
    """clamp(x, min_val, max_val). ``inplace`` is accepted and ignored."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        if not min_val < max_val:
            raise ValueError(f"Hardtanh min_val {min_val!r} must be below max_val {max_val!r}")
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace

    def forward(self, x: Value) -> Value:
        return F.hardtanh(x, self.min_val, self.max_val)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}"


class ReLU6(Hardtanh):
    """min(max(x, 0), 6), as PyTorch a Hardtanh(0, 6). ``inplace`` is accepted and ignored."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return ""


class Hardswish(Module):
    """x * relu6(x + 3) / 6. ``inplace`` is accepted and ignored."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, x: Value) -> Value:
        return F.hardswish(x)


class Hardsigmoid(Module):
    """relu6(x + 3) / 6. ``inplace`` is accepted and ignored."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, x: Value) -> Value:
        return F.hardsigmoid(x)


class _Pool2d(Module):
    def __init__(
        self,
        kernel_size: IntPair,
        stride: IntPair | None = None,
        padding: IntPair = 0,
        ceil_mode: bool = False,
    ) -> None:
        super().__init__()
        self.kernel_size = F._pair(kernel_size, "kernel_size")
        self.stride = self.kernel_size if stride is None else F._pair(stride, "stride")
        self.padding = F._pair(padding, "padding")
        self.ceil_mode = bool(ceil_mode)

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"
            + (", ceil_mode=True" if self.ceil_mode else "")
        )


class MaxPool2d(_Pool2d):
    """Max pooling (``stride`` defaults to ``kernel_size``), ``torch.nn.MaxPool2d``'s arguments:
    ``ceil_mode=True`` keeps PyTorch's partial last windows; ``dilation`` must be 1 and
    ``return_indices`` False (RN implements neither)."""

    def __init__(
        self,
        kernel_size: IntPair,
        stride: IntPair | None = None,
        padding: IntPair = 0,
        dilation: IntPair = 1,
        return_indices: bool = False,
        ceil_mode: bool = False,
    ) -> None:
        super().__init__(kernel_size, stride, padding, ceil_mode)
        if F._pair(dilation, "dilation") != (1, 1):
            raise ValueError(f"MaxPool2d dilation {dilation!r} is not supported (only 1)")
        if return_indices:
            raise ValueError("MaxPool2d return_indices=True is not supported")

    def forward(self, x: Value) -> Value:
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode)


class AvgPool2d(_Pool2d):
    """Average pooling, ``torch.nn.AvgPool2d``'s arguments: padding counts in the divisor unless
    ``count_include_pad=False``; ``ceil_mode=True`` keeps PyTorch's partial last windows;
    ``divisor_override`` must be None (not implemented)."""

    def __init__(
        self,
        kernel_size: IntPair,
        stride: IntPair | None = None,
        padding: IntPair = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override: int | None = None,
    ) -> None:
        super().__init__(kernel_size, stride, padding, ceil_mode)
        if divisor_override is not None:
            raise ValueError("AvgPool2d divisor_override is not supported")
        self.count_include_pad = bool(count_include_pad)

    def forward(self, x: Value) -> Value:
        return F.avg_pool2d(
            x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad
        )

    def extra_repr(self) -> str:
        excluded = "" if self.count_include_pad else ", count_include_pad=False"
        return super().extra_repr() + excluded


class AdaptiveAvgPool2d(Module):
    """Adaptive average pooling to ``output_size``.

    1 becomes ``rn.global_avg_pool``; an output equal to the input is the identity;
    an input that is a multiple of the output becomes ``rn.avg_pool2d`` with
    kernel = stride = input/output; any other size becomes ``rn.adaptive_avg_pool2d``
    (PyTorch's windows, which may overlap and differ in size).
    """

    def __init__(self, output_size: IntPair) -> None:
        super().__init__()
        self.output_size = F._pair(output_size, "output_size")

    def forward(self, x: Value) -> Value:
        return F.adaptive_avg_pool2d(x, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class Flatten(Module):
    """Flattens all but the batch dimension (NHWC order in the IR)."""

    def forward(self, x: Value) -> Value:
        return F.flatten(x)


class ChannelShuffle(Module):
    """ShuffleNet's channel shuffle into ``groups`` groups, as ``torch.nn.ChannelShuffle``:
    ``rn.channel_shuffle`` of the NHWC input (output channel ``j * groups + i`` is input channel
    ``i * (C / groups) + j``)."""

    def __init__(self, groups: int) -> None:
        super().__init__()
        if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
            raise ValueError(f"ChannelShuffle groups must be a positive int, got {groups!r}")
        self.groups = groups

    def forward(self, x: Value) -> Value:
        return F.channel_shuffle(x, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"


class Dropout(Module):
    """Inverted dropout with drop probability ``p``."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = float(p)
        self.inplace = inplace

    def forward(self, x: Value) -> Value:
        return F.dropout(x, self.p)

    def extra_repr(self) -> str:
        return f"p={self.p}"


class StochasticDepth(Module):
    """Stochastic depth with drop probability ``p``: torchvision's ``StochasticDepth``.

    Drops each sample of the batch whole with probability ``p`` and scales
    the kept ones by ``1 / (1 - p)`` (``mode="row"``); the identity in the
    evaluation step. ``mode="batch"`` (one draw for the whole batch) is not
    implemented.
    """

    def __init__(self, p: float, mode: str = "row") -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"drop probability has to be between 0 and 1, but got {p}")
        if mode not in ("batch", "row"):
            raise ValueError(f"mode has to be either 'batch' or 'row', but got {mode}")
        if mode == "batch":
            raise ValueError(
                "StochasticDepth mode='batch' (one draw for the whole batch) is not implemented "
                "in RN; mode='row' drops each sample on its own"
            )
        self.p = float(p)
        self.mode = mode

    def forward(self, x: Value) -> Value:
        return F.stochastic_depth(x, self.p)

    def extra_repr(self) -> str:
        return f"p={self.p}, mode={self.mode}"


class CrossEntropyLoss(Module):
    """Mean softmax cross-entropy against integer class labels (an f32 scalar)."""

    def __init__(self, label_smoothing: float = 0.0) -> None:
        super().__init__()
        if not 0.0 <= label_smoothing <= 1.0:
            raise ValueError(f"label_smoothing must be in [0, 1], got {label_smoothing!r}")
        self.label_smoothing = float(label_smoothing)

    def forward(self, input: Value, target: Value) -> Value:
        return F.softmax_cross_entropy(input, target, self.label_smoothing)

    def extra_repr(self) -> str:
        return f"label_smoothing={self.label_smoothing}"


# --------------------------------------------------------------------------- #
# Residual blocks (torchvision semantics)
# --------------------------------------------------------------------------- #


def _downsample(
    inplanes: int, outplanes: int, stride: int, conv_init: InitArg
) -> Sequential | None:
    if stride == 1 and inplanes == outplanes:
        return None
    return Sequential(
        Conv2d(inplanes, outplanes, 1, stride=stride, bias=False, weight_init=conv_init),
        BatchNorm2d(outplanes),
    )


class BasicBlock(Module):
    """Two 3x3 conv+BN with a residual connection (ResNet-18/34)."""

    expansion: ClassVar[int] = 1
    downsample: Sequential | None

    def __init__(
        self, inplanes: int, planes: int, stride: int = 1, *, conv_init: InitArg = None
    ) -> None:
        super().__init__()
        self.conv1 = Conv2d(inplanes, planes, 3, stride, 1, bias=False, weight_init=conv_init)
        self.bn1 = BatchNorm2d(planes)
        self.relu = ReLU(inplace=True)
        self.conv2 = Conv2d(planes, planes, 3, 1, 1, bias=False, weight_init=conv_init)
        self.bn2 = BatchNorm2d(planes)
        self.downsample = _downsample(inplanes, planes * self.expansion, stride, conv_init)
        self.stride = stride

    def forward(self, x: Value) -> Value:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(out + identity)


class Bottleneck(Module):
    """1x1 reduce, 3x3 (strided, as torchvision v1.5), 1x1 expand (x4), with a residual."""

    expansion: ClassVar[int] = 4
    downsample: Sequential | None

    def __init__(
        self, inplanes: int, planes: int, stride: int = 1, *, conv_init: InitArg = None
    ) -> None:
        super().__init__()
        out = planes * self.expansion
        self.conv1 = Conv2d(inplanes, planes, 1, bias=False, weight_init=conv_init)
        self.bn1 = BatchNorm2d(planes)
        self.conv2 = Conv2d(planes, planes, 3, stride, 1, bias=False, weight_init=conv_init)
        self.bn2 = BatchNorm2d(planes)
        self.conv3 = Conv2d(planes, out, 1, bias=False, weight_init=conv_init)
        self.bn3 = BatchNorm2d(out)
        self.relu = ReLU(inplace=True)
        self.downsample = _downsample(inplanes, out, stride, conv_init)
        self.stride = stride

    def forward(self, x: Value) -> Value:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(out + identity)
