"""PyTorch models into RN, and their weights both ways.

:func:`from_torch` captures a ``torch.nn.Module`` with ``torch.fx`` symbolic
tracing and maps its graph onto the ``rn`` ops (:mod:`rn.emitter`), keeping
the module's ``state_dict`` keys as the parameter names. The result is an
:class:`ImportedModel`, an :class:`rn.nn.Module` that :func:`rn.compile`
takes like any other, together with its :class:`TorchMapping`: for each
state entry its role and how its layout changes (convolution filters OIHW
to OHWI; the first linear layer after a spatial flatten has its columns in
C, H, W order in PyTorch and H, W, C in RN's NHWC). ``rn.compile`` stores
the mapping in the artifact (metadata key ``rn.torch``), so the weights can
be moved in and out of any artifact compiled from the module, weight-free
ones included, without guessing a direction:
``Trainer.copy_from(module)``, ``Trainer.copy_to(module)`` and
:func:`to_torch_state_dict`.

Every supported module and function checks the attributes it depends on
and refuses what RN does not implement, naming the module's path; nothing
is half-imported. torch is imported only when one of these is called.
"""

from __future__ import annotations

import json
import math
import operator
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from . import _safetensors
from . import emitter as F
from .emitter import Value
from .nn import Buffer, Init, Module, Parameter
from .torch_state import TORCH_METADATA_KEY, StateMap, TorchMapping, _torch, ema_names
from .torch_trace import (
    UnsupportedModelError,
    _Batch,
    _is_stochastic_depth_module,
    _is_timm_batch_norm_act,
    _shape_tracer,
    _trace_error,
    _tracer,
)

__all__ = [
    "ImportedModel",
    "StateMap",
    "TorchMapping",
    "UnsupportedModelError",
    "from_torch",
    "is_torch_module",
    "to_torch_state_dict",
]

SUPPORTED = (
    "modules Conv2d, BatchNorm2d, LayerNorm (over channels-last data), Linear, ReLU, ReLU6, Hardtanh, Tanh, SiLU, Sigmoid, GELU, Hardswish, "
    "Hardsigmoid, MaxPool2d, AvgPool2d, AdaptiveAvgPool2d, Flatten, Dropout, Identity, "
    "torchvision's StochasticDepth, timm's DropPath, BatchNormAct2d and Linear; functions "
    "and methods +, torch.add, x * scale (squeeze-and-excitation), relu, relu6, hardtanh, tanh, silu, sigmoid, gelu, hardswish, "
    "hardsigmoid, torch.flatten / flatten, view / reshape to [N, -1], mean over H and W, "
    "adaptive_avg_pool2d, avg_pool2d, max_pool2d, dropout, torchvision's stochastic_depth, "
    "timm's drop_path, size() / shape, contiguous(), permute to channels-last and back "
    "(torch.permute, Permute), layer_norm, a [C, 1, 1] parameter * x (ConvNeXt's layer scale), "
    "torch.cat / torch.concat, torch.chunk / chunk and torch.split / split along the channels, "
    "ShuffleNet's channel shuffle (view(N, g, C // g, H, W), transpose(1, 2), view(N, C, H, W))"
)


def is_torch_module(obj: object) -> bool:
    """Whether ``obj`` is a ``torch.nn.Module`` (without importing torch when it is not loaded)."""
    import sys

    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.nn.Module)


# --------------------------------------------------------------------------- #
# The imported model
# --------------------------------------------------------------------------- #


@dataclass
class _Tensor:
    """A traced tensor; ``chw`` is set on a flattened [N, C*H*W] value with H*W > 1 and C > 1,
    whose features RN holds in H, W, C order. A 4-D value is NHWC in RN; PyTorch sees it as
    NCHW, or as NHWC when ``channels_last`` (after ``permute(0, 2, 3, 1)``, which moves no
    data in RN)."""

    value: Value
    chw: tuple[int, int, int] | None = None
    channels_last: bool = False

    def torch_shape(self) -> tuple[int, ...]:
        s = self.value.shape
        return (s[0], s[3], s[1], s[2]) if len(s) == 4 and not self.channels_last else s

    def like(self, value: Value) -> _Tensor:
        """``value``, an elementwise result of this tensor, with its layout."""
        return _Tensor(value, self.chw, self.channels_last)


@dataclass(frozen=True)
class _Attr:
    """A parameter the graph reads directly (``get_attr``): a LayerNorm2d's weight and bias in
    ``F.layer_norm``, ConvNeXt's layer scale in ``gamma * x``."""

    name: str


@dataclass(frozen=True)
class _Grouped:
    """An NCHW tensor viewed as [N, a, b, H, W] (a * b = C), on its way to a channel shuffle:
    ``view(N, g, C // g, H, W)``, ``transpose(1, 2)`` (then ``swapped``: [N, b, a, H, W]),
    ``contiguous()`` and a view back to 4-D is ``rn.channel_shuffle`` with ``a`` groups
    (torchvision's ``channel_shuffle``); a view back without the transpose is the tensor itself.
    Nothing else takes it."""

    source: _Tensor
    a: int
    b: int
    swapped: bool = False

    def torch_shape(self) -> tuple[int, ...]:
        n, _, h, w = self.source.torch_shape()
        return (n, self.b, self.a, h, w) if self.swapped else (n, self.a, self.b, h, w)


_SHUFFLE = ("RN imports a 5-D view only as ShuffleNet's channel shuffle: view(N, g, C // g, H, "
            "W), transpose(1, 2), contiguous(), view(N, C, H, W) (or flatten(1, 2))")

_ARITHMETIC = frozenset({operator.add, operator.sub, operator.mul, operator.floordiv,
                         operator.truediv, operator.mod, operator.neg})
"""Operators that the graph may apply to numbers (sizes, under symbolic tracing:
``x.size(1) // groups``); computed as they are when no tensor is among their arguments."""


_CHANNELS_LAST = (0, 2, 3, 1)
_CHANNELS_FIRST = (0, 3, 1, 2)


def _permute_dims(node: Any) -> tuple[int, ...] | None:
    """The dims of an fx ``torch.permute`` / ``x.permute`` node, else None."""
    torch = _torch()
    if node.op == "call_function" and node.target is torch.permute:
        dims = node.args[1] if len(node.args) > 1 else node.kwargs.get("dims")
    elif node.op == "call_method" and node.target == "permute":
        rest = node.args[1:]
        dims = rest[0] if len(rest) == 1 and isinstance(rest[0], (tuple, list)) else rest
    else:
        return None
    if not isinstance(dims, (tuple, list)) or not all(isinstance(d, int) for d in dims):
        return None
    return tuple(d % 4 if len(dims) == 4 else d for d in dims)


def _qualname(fn: object) -> str:
    if isinstance(fn, str):
        return fn
    module = getattr(fn, "__module__", None) or ""
    name = getattr(fn, "__name__", None) or repr(fn)
    if module in ("_operator", "operator"):
        return f"operator.{name}"
    if module.startswith("torch.nn.functional") or module.startswith("torch._C._nn"):
        return f"torch.nn.functional.{name}"
    if module == "torch" or module.startswith("torch._C"):  # builtins such as torch.sigmoid
        return f"torch.{name}"
    return f"{module}.{name}" if module else name


class ImportedModel(Module):
    """A ``torch.nn.Module`` as an :class:`rn.nn.Module`: its fx graph, emitted onto ``rn`` ops.

    Made by :func:`from_torch`. ``mapping`` describes the state;
    ``input_shape`` (C, H, W) and ``num_classes`` are what the module was
    imported for.
    """

    def __init__(self, module: Any, input_shape: tuple[int, int, int]) -> None:
        super().__init__()
        torch = _torch()
        object.__setattr__(self, "_torch_type", type(module).__name__)
        object.__setattr__(self, "_input_shape", tuple(input_shape))
        # Symbolic tracing first: its graph holds for any input shape and computes nothing.
        # Where it fails (forward unpacks x.size(), as torchvision's channel_shuffle does, or a
        # tuple, which fx cannot under Python 3.11 and torch 1.13), a trace with the shapes of
        # this import's input (_shape_tracer) often gets through; its error, if it fails too,
        # is the refusal (it gets at least as far as the symbolic one).
        tracer = _tracer()
        tracer.record_stack_traces = True
        try:
            graph = tracer.trace(module)
        except Exception:  # fx raises several types for untraceable code
            tracer = _shape_tracer(self._input_shape)
            tracer.record_stack_traces = True
            try:
                graph = tracer.trace(module)
            except Exception as e:
                raise _trace_error(module, e) from e
        gm = torch.fx.GraphModule(module, graph)
        object.__setattr__(self, "_graph", gm)
        object.__setattr__(self, "_torch_state", module.state_dict())
        object.__setattr__(self, "_tensors", {})  # state name -> Parameter/Buffer
        object.__setattr__(self, "_layouts", {})  # linear weight name -> (C, H, W)
        object.__setattr__(self, "_linear_1x1", set())  # linear weights applied channels-last
        self._register_state(module)
        # One trace at batch 1 checks every node and fixes the output shape and the layouts.
        emitter = F.Emitter("f32", list(self.named_state()), {id(self): ""}, self._torch_type)
        c, h, w = self._input_shape
        logits = self(emitter.argument("images", (1, h, w, c)))
        if logits.ndim != 2:
            raise UnsupportedModelError(
                f"{self._torch_type}: the output has shape {list(logits.shape)}; RN trains "
                "classifiers whose output is [N, classes]"
            )
        object.__setattr__(self, "num_classes", logits.shape[1])
        object.__setattr__(self, "mapping", self._build_mapping())

    # -- state ---------------------------------------------------------------

    def _register_state(self, module: Any) -> None:
        """Register an RN Parameter or Buffer for each state entry a supported layer reads,
        in ``state_dict`` order, under the same dotted name. Their initializers are
        PyTorch's defaults (what a weight-free artifact starts from without copy_from)."""
        torch = _torch()
        inits: dict[str, tuple[str, Init]] = {}  # state name -> (role, initializer)
        calls: dict[str, int] = {}
        # Which values PyTorch sees channels-last: after permute(0, 2, 3, 1), until
        # permute(0, 3, 1, 2). A Linear of such a value is RN's 1x1 convolution, whose filter
        # is [O, 1, 1, I].
        channels_last: set[Any] = set()
        for node in self._graph.graph.nodes:
            dims = _permute_dims(node)
            if dims == _CHANNELS_LAST:
                channels_last.add(node)
            elif dims is None and any(a in channels_last for a in node.all_input_nodes):
                channels_last.add(node)
        direct = self._direct_parameters()
        for node in self._graph.graph.nodes:
            if node.op == "get_attr" and node.target in direct:
                if node.target in inits:
                    raise UnsupportedModelError(
                        f"{node.target}: read more than once; RN imports one use of each parameter"
                    )
                inits[node.target] = ("parameter", direct[node.target])
                continue
            if node.op != "call_module":
                continue
            sub = self._graph.get_submodule(node.target)
            own = dict(sub.named_parameters(recurse=False))
            if isinstance(sub, torch.nn.Linear) and node.args and node.args[0] in channels_last:
                self._linear_1x1.add(f"{node.target}.weight")
            if isinstance(sub, torch.nn.LayerNorm):
                defaults = {"weight": Init.ones(), "bias": Init.zeros()}
            elif isinstance(sub, torch.nn.modules.batchnorm._BatchNorm):
                defaults = {"weight": Init.ones(), "bias": Init.zeros(),
                            "running_mean": Init.zeros(), "running_var": Init.ones()}
                own.update({k: getattr(sub, k) for k in ("running_mean", "running_var")})
            else:  # Conv2d and Linear: kaiming_uniform(a=sqrt(5)) = U(+-1/sqrt(fan_in))
                weight = own.get("weight")
                fan_in = math.prod(weight.shape[1:]) if weight is not None else 1
                bound = Init.uniform(1.0 / math.sqrt(max(fan_in, 1)))
                defaults = {"weight": bound, "bias": bound}
            own = {k: v for k, v in own.items() if v is not None}
            if not own:
                continue
            calls[node.target] = calls.get(node.target, 0) + 1
            if calls[node.target] > 1:
                raise UnsupportedModelError(
                    f"{node.target} ({type(sub).__name__}): called more than once; RN imports "
                    "one use of each layer with parameters"
                )
            for local in own:
                role = "buffer" if local.startswith("running_") else "parameter"
                inits[f"{node.target}.{local}"] = (role, defaults.get(local, Init.zeros()))
        for name, value in self._torch_state.items():
            if name not in inits:
                continue
            role, init = inits[name]
            shape = tuple(value.shape)
            if len(shape) == 4:  # OIHW -> OHWI
                shape = (shape[0], shape[2], shape[3], shape[1])
            elif name in self._linear_1x1:  # [O, I] -> a 1x1 filter [O, 1, 1, I]
                shape = (shape[0], 1, 1, shape[1])
            elif len(shape) == 3 and shape[1:] == (1, 1):  # a layer scale [C, 1, 1] -> [C]
                shape = (shape[0],)
            tensor: Parameter | Buffer = (Buffer if role == "buffer" else Parameter)(shape, init)
            self._tensors[name] = tensor
            self._place(name, tensor)

    def _direct_parameters(self) -> dict[str, Init]:
        """The parameters the graph reads directly that RN imports, with their initializers:
        those only ``F.layer_norm`` reads (its weight: ones, bias: zeros) and [C, 1, 1] ones
        only a multiplication reads (a layer scale: its values)."""
        torch = _torch()
        muls = (operator.mul, torch.mul)
        found: dict[str, Init] = {}
        for node in self._graph.graph.nodes:
            if node.op != "get_attr" or node.target not in self._torch_state:
                continue
            users = list(node.users)
            value = self._torch_state[node.target]
            if users and all(u.op == "call_function" and u.target is torch.nn.functional.layer_norm
                             for u in users):
                weight = any(len(u.args) > 2 and u.args[2] is node or u.kwargs.get("weight") is node
                             for u in users)
                found[node.target] = Init.ones() if weight else Init.zeros()
            elif (len(users) == 1 and value.ndim == 3 and tuple(value.shape[1:]) == (1, 1)
                  and ((users[0].op == "call_function" and users[0].target in muls)
                       or (users[0].op == "call_method" and users[0].target == "mul"))):
                found[node.target] = Init.explicit(value.detach().flatten().tolist())
        return found

    def _place(self, name: str, tensor: Parameter | Buffer) -> None:
        """Register ``tensor`` under the dotted ``name``, creating holder modules on the way."""
        *path, local = name.split(".")
        holder: Module = self
        for part in path:
            child = holder._modules.get(part)
            if child is None:
                child = Module()
                holder.add_module(part, child)
            holder = child
        if isinstance(tensor, Buffer):
            holder.register_buffer(local, tensor)
        else:
            holder.register_parameter(local, tensor)

    def _build_mapping(self) -> TorchMapping:
        entries = []
        for name, tensor in self._tensors.items():
            torch_shape = tuple(self._torch_state[name].shape)
            role = "buffer" if isinstance(tensor, Buffer) else "parameter"
            if len(torch_shape) == 4:
                entries.append(StateMap(name, role, "oihw_to_ohwi", torch_shape))
            elif name in self._linear_1x1:
                entries.append(StateMap(name, role, "linear_as_1x1", torch_shape))
            elif len(torch_shape) == 3:
                entries.append(StateMap(name, role, "channel_scale", torch_shape))
            elif name in self._layouts:
                entries.append(StateMap(name, role, "linear_chw_to_hwc", torch_shape, self._layouts[name]))
            else:
                entries.append(StateMap(name, role, "same", torch_shape))
        counters = tuple(
            n for n in self._torch_state if n.endswith("num_batches_tracked") and n not in self._tensors
        )
        untouched = tuple(n for n in self._torch_state if n not in self._tensors and n not in counters)
        return TorchMapping(tuple(entries), counters, untouched)

    @property
    def input_shape(self) -> tuple[int, int, int]:
        return self._input_shape  # type: ignore[no-any-return]

    def extra_repr(self) -> str:
        return f"from torch {self._torch_type}, input {self._input_shape}"

    @property
    def torch_state(self) -> Mapping[str, Any]:
        """The module's ``state_dict`` when it was imported (its tensors, not copies)."""
        return self._torch_state  # type: ignore[no-any-return]

    # -- tracing -------------------------------------------------------------

    def forward(self, x: Value) -> Value:
        env: dict[Any, Any] = {}
        result: Any = None
        placeholders = [n for n in self._graph.graph.nodes if n.op == "placeholder"]
        if len(placeholders) != 1:
            raise UnsupportedModelError(
                f"{self._torch_type}: forward takes {len(placeholders)} inputs; RN imports models "
                "with one image input"
            )
        for node in self._graph.graph.nodes:
            if node.op == "placeholder":
                env[node] = _Tensor(x)
            elif node.op == "output":
                result = self._arg(env, node.args[0])
            else:
                env[node] = self._node(node, env)
        if not isinstance(result, _Tensor):
            raise UnsupportedModelError(
                f"{self._torch_type}: forward returns {type(result).__name__}; RN imports models "
                "that return one logits tensor [N, classes]"
            )
        if result.channels_last and result.value.ndim == 4:
            raise UnsupportedModelError(
                f"{self._torch_type}: the output is a channels-last 4-D tensor; RN imports models "
                "that return logits [N, classes]"
            )
        if result.chw is not None:
            raise UnsupportedModelError(
                f"{self._torch_type}: the output is a flattened C x H x W tensor (RN orders its "
                "features H, W, C); end the model with a Linear layer or pooling"
            )
        return result.value

    @staticmethod
    def _arg(env: Mapping[Any, Any], a: Any) -> Any:
        import torch.fx

        return torch.fx.node.map_arg(a, lambda n: env[n])

    def _where(self, node: Any) -> str:
        """Where a node comes from, for errors: the module path, or the function and source line."""
        if node.op == "call_module":
            sub = self._graph.get_submodule(node.target)
            return f"{node.target} ({type(sub).__name__})"
        what = _qualname(node.target)
        line = ""
        trace = getattr(node, "stack_trace", None)
        if trace:
            # Innermost first; fx's and the shape tracer's own frames (_shape_tracer) skipped.
            ours = tuple(f'File "{os.path.join(os.path.dirname(os.path.abspath(f)), "")}'
                         for f in (__file__, _torch().__file__))
            frames = [t.strip() for t in trace.strip().splitlines()
                      if t.strip().startswith("File") and not t.strip().startswith(ours)]
            if frames:  # innermost first: the line of the user's forward
                line = f", {frames[0]}"
        kind = "method" if node.op == "call_method" else "function"
        return f"{kind} {what} (graph node {node.name}{line})"

    def _fail(self, node: Any, message: str) -> UnsupportedModelError:
        return UnsupportedModelError(f"{self._where(node)}: {message}")

    def _node(self, node: Any, env: Mapping[Any, Any]) -> Any:
        args = self._arg(env, node.args)
        kwargs = self._arg(env, node.kwargs)
        try:
            self._check_layout(node, args, kwargs)
            self._check_grouped(node, args, kwargs)
            if node.op == "call_module":
                return self._call_module(node, self._graph.get_submodule(node.target), args, kwargs)
            if node.op == "call_function":
                return self._call_function(node, node.target, args, kwargs)
            if node.op == "call_method":
                return self._call_method(node, node.target, args, kwargs)
            if node.op == "get_attr" and node.target in self._tensors:
                return _Attr(node.target)
            if node.op == "get_attr":
                raise self._fail(
                    node,
                    f"reads the tensor {node.target} directly; RN imports parameters used through "
                    "the supported layers only",
                )
        except UnsupportedModelError:
            raise
        except ValueError as e:  # an emitter check: same message, with the module path
            raise self._fail(node, str(e)) from e
        raise self._fail(node, f"graph node kind {node.op!r} is not supported")

    def _check_layout(self, node: Any, args: tuple, kwargs: dict) -> None:
        """Refuse a channels-last tensor where an op reads the layout (convolution, pooling,
        batch norm, flatten, mean, reshape): only permutes, LayerNorm, Linear and the
        elementwise ops take it."""
        import torch.fx

        flat: list[Any] = []
        torch.fx.node.map_aggregate((args, kwargs), lambda a: flat.append(a))
        if not any(isinstance(a, _Tensor) and a.channels_last and a.value.ndim == 4 for a in flat):
            return
        nn = _torch().nn
        tf = nn.functional
        if node.op == "call_module":
            m = self._graph.get_submodule(node.target)
            ok = (isinstance(m, (nn.LayerNorm, nn.Linear, nn.Dropout, nn.Identity))
                  or _is_stochastic_depth_module(m) or type(m) in _activation_types())
        elif node.op == "call_function":
            ok = node.target not in (_torch().flatten, tf.adaptive_avg_pool2d, tf.avg_pool2d,
                                     tf.max_pool2d, _torch().mean)
        else:
            ok = node.target not in ("flatten", "view", "reshape", "mean")
        if not ok:
            raise self._fail(node, "reads a channels-last tensor (after permute(0, 2, 3, 1)); "
                                   "permute it back to NCHW first")

    _GROUPED_METHODS = ("view", "reshape", "transpose", "swapaxes", "swapdims", "permute",
                        "contiguous", "flatten")

    def _grouped_functions(self) -> dict[Any, str]:
        """The functions that take a channel shuffle's 5-D view, as the methods they are."""
        torch = _torch()
        names = ("transpose", "swapaxes", "swapdims", "permute", "flatten", "reshape")
        return {getattr(torch, n): n for n in names if hasattr(torch, n)}

    def _check_grouped(self, node: Any, args: tuple, kwargs: dict) -> None:
        """Refuse a channel shuffle's 5-D view (:class:`_Grouped`) anywhere but as the first
        argument of the view, transpose and flatten that make the shuffle."""
        import torch.fx

        flat: list[Any] = []
        torch.fx.node.map_aggregate((args, kwargs), lambda a: flat.append(a))
        grouped = [a for a in flat if isinstance(a, _Grouped)]
        if not grouped:
            return
        takes = (node.op == "call_method" and node.target in self._GROUPED_METHODS) or (
            node.op == "call_function" and node.target in self._grouped_functions())
        if not takes or not args or args[0] is not grouped[0] or len(grouped) > 1:
            raise self._fail(node, f"takes a 5-D view {list(grouped[0].torch_shape())}; "
                                   f"{_SHUFFLE}")

    # -- modules --------------------------------------------------------------

    def _param(self, name: str) -> Parameter | Buffer:
        return self._tensors[name]  # type: ignore[no-any-return]

    def _call_module(self, node: Any, m: Any, args: tuple, kwargs: dict) -> Any:
        nn = _torch().nn
        if kwargs or len(args) != 1 or not isinstance(args[0], _Tensor):
            raise self._fail(node, "takes one tensor argument in RN")
        x: _Tensor = args[0]
        path = node.target
        if isinstance(m, nn.Conv2d):
            return self._conv(node, m, path, x)
        if _is_timm_batch_norm_act(m):  # before BatchNorm2d: it is one, plus drop and act
            y = self._batch_norm(node, m, path, x)
            if not isinstance(m.drop, nn.Identity):
                raise self._fail(node, f"drop layer {type(m.drop).__name__} is not supported "
                                       "(only Identity)")
            activated = self._activation(m.act, y)
            if activated is None:
                raise self._fail(node, f"activation {type(m.act).__name__} is not supported; "
                                       f"RN imports {SUPPORTED}")
            return activated
        if isinstance(m, nn.BatchNorm2d):
            return self._batch_norm(node, m, path, x)
        if isinstance(m, nn.Linear):
            return self._linear(node, m, path, x)
        if isinstance(m, nn.LayerNorm):
            weight = _Attr(f"{path}.weight") if m.weight is not None else None
            bias = _Attr(f"{path}.bias") if m.bias is not None else None
            return self._layer_norm(node, x, m.normalized_shape, weight, bias, m.eps)
        activated = self._activation(m, x)
        if activated is not None:
            return activated
        if isinstance(m, nn.MaxPool2d):
            if m.return_indices:
                raise self._fail(node, "return_indices=True is not supported")
            if _pair_of(m.dilation) != (1, 1):
                raise self._fail(node, f"dilation {m.dilation} is not supported (only 1)")
            return _Tensor(
                F.max_pool2d(x.value, m.kernel_size, m.stride, m.padding, bool(m.ceil_mode))
            )
        if isinstance(m, nn.AvgPool2d):
            return self._avg_pool(
                node, x, m.kernel_size, m.stride, m.padding, m.ceil_mode, m.count_include_pad,
                m.divisor_override,
            )
        if isinstance(m, nn.AdaptiveAvgPool2d):
            return self._adaptive_avg_pool(node, x, m.output_size)
        if isinstance(m, nn.Flatten):
            return self._flatten(node, x, m.start_dim, m.end_dim)
        if type(m) is nn.Dropout:
            return self._dropout(x, m.p, True)
        if _is_stochastic_depth_module(m):
            if type(m).__name__ == "DropPath":  # timm
                scale_by_keep = getattr(m, "scale_by_keep", True)
                return self._drop_path(node, x, m.drop_prob, True, scale_by_keep)
            return self._stochastic_depth(node, x, m.p, m.mode, True)
        if isinstance(m, nn.Identity):
            return x
        raise self._fail(node, f"not supported; RN imports {SUPPORTED}")

    @staticmethod
    def _activation(m: Any, x: _Tensor) -> _Tensor | None:
        """``m`` applied to ``x`` when it is an activation module RN maps (Identity included),
        else None."""
        nn = _torch().nn
        unary = {nn.ReLU: F.relu, nn.ReLU6: F.relu6, nn.Tanh: F.tanh, nn.SiLU: F.silu,
                 nn.Sigmoid: F.sigmoid, nn.Hardswish: F.hardswish, nn.Hardsigmoid: F.hardsigmoid}
        if type(m) in unary:
            return x.like(unary[type(m)](x.value))
        if type(m) is nn.Hardtanh:
            return x.like(F.hardtanh(x.value, float(m.min_val), float(m.max_val)))
        if type(m) is nn.GELU:
            return x.like(F.gelu(x.value, m.approximate))
        if type(m) is nn.Identity:
            return x
        return None

    def _conv(self, node: Any, m: Any, path: str, x: _Tensor) -> _Tensor:
        if m.padding_mode != "zeros":
            raise self._fail(node, f"padding_mode={m.padding_mode!r} is not supported (only 'zeros')")
        padding = m.padding
        if isinstance(padding, str):
            if padding == "valid":
                padding = (0, 0)
            else:  # 'same': torch pads (d * (k - 1)) / 2 per side when that is even
                total = [m.dilation[i] * (m.kernel_size[i] - 1) for i in (0, 1)]
                if any(t % 2 for t in total):
                    raise self._fail(node, "padding='same' with an even kernel pads unevenly; not supported")
                padding = (total[0] // 2, total[1] // 2)
        bias = self._param(f"{path}.bias") if m.bias is not None else None
        return _Tensor(
            F.conv2d(
                x.value,
                self._param(f"{path}.weight"),
                bias,
                stride=m.stride,
                padding=padding,
                dilation=m.dilation,
                groups=m.groups,
            )
        )

    def _batch_norm(self, node: Any, m: Any, path: str, x: _Tensor) -> _Tensor:
        if not m.affine:
            raise self._fail(node, "affine=False is not supported (RN's batch norm has a weight and bias)")
        if not m.track_running_stats:
            raise self._fail(node, "track_running_stats=False is not supported")
        if m.momentum is None:
            raise self._fail(node, "momentum=None (a cumulative average) is not supported")
        return _Tensor(
            F.batch_norm(
                x.value,
                self._param(f"{path}.weight"),
                self._param(f"{path}.bias"),
                self._param(f"{path}.running_mean"),
                self._param(f"{path}.running_var"),
                eps=float(m.eps),
                momentum=float(m.momentum),
            )
        )

    def _linear(self, node: Any, m: Any, path: str, x: _Tensor) -> _Tensor:
        bias = self._param(f"{path}.bias") if m.bias is not None else None
        if x.channels_last and x.value.ndim == 4:
            # On channels-last data a Linear is a 1x1 convolution of RN's NHWC tensor.
            weight = self._param(f"{path}.weight")
            if len(weight.shape) != 4:
                raise self._fail(node, "applied to a channels-last tensor that the import's "
                                       "layout scan did not see")
            return _Tensor(F.conv2d(x.value, weight, bias), channels_last=True)
        if x.value.ndim != 2:
            raise self._fail(
                node, f"input of shape {list(x.torch_shape())}; RN's linear takes [N, features]"
            )
        if x.chw is not None:
            self._layouts[f"{path}.weight"] = x.chw
        return _Tensor(F.linear(x.value, self._param(f"{path}.weight"), bias))

    def _layer_norm(self, node: Any, x: _Tensor, shape: Any, weight: Any, bias: Any,
                    eps: float) -> _Tensor:
        """LayerNorm over the channels: of channels-last 4-D data (ConvNeXt's blocks, its
        LayerNorm2d between permutes) or of [N, C]."""
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        torch_shape = x.torch_shape()
        if x.value.ndim == 4 and not x.channels_last:
            raise self._fail(node, f"layer norm over {list(shape)} of an NCHW tensor "
                                   f"{list(torch_shape)}; RN normalizes over the channels of "
                                   "channels-last data (permute(0, 2, 3, 1) first) or of [N, C]")
        if shape != (torch_shape[-1],):
            raise self._fail(node, f"layer norm over {list(shape)} of {list(torch_shape)}; RN "
                                   "normalizes over the last dimension (the channels) only")
        if not isinstance(weight, _Attr) or not isinstance(bias, _Attr):
            raise self._fail(node, "layer norm without weight and bias (elementwise_affine=False) "
                                   "is not supported")
        return x.like(F.layer_norm(x.value, self._param(weight.name), self._param(bias.name),
                                   float(eps)))

    def _permute(self, node: Any, x: _Tensor, dims: Any) -> _Tensor:
        """permute(0, 2, 3, 1) and back: RN's tensor is NHWC already, so these move no data."""
        dims = tuple(d % 4 for d in dims) if len(dims) == 4 else tuple(dims)
        if x.value.ndim == 4 and dims == _CHANNELS_LAST and not x.channels_last:
            return _Tensor(x.value, channels_last=True)
        if x.value.ndim == 4 and dims == _CHANNELS_FIRST and x.channels_last:
            return _Tensor(x.value)
        if dims == tuple(range(len(dims))):
            return x
        raise self._fail(node, f"permute {list(dims)} of {list(x.torch_shape())}; RN imports "
                               "permute(0, 2, 3, 1) of NCHW and permute(0, 3, 1, 2) back only")

    def _avg_pool(
        self,
        node: Any,
        x: _Tensor,
        kernel: Any,
        stride: Any,
        padding: Any,
        ceil_mode: bool,
        count_include_pad: bool,
        divisor_override: Any,
    ) -> _Tensor:
        if divisor_override is not None:
            raise self._fail(node, "divisor_override is not supported")
        return _Tensor(
            F.avg_pool2d(x.value, kernel, stride if stride else None, padding, bool(ceil_mode),
                         bool(count_include_pad))
        )

    def _adaptive_avg_pool(self, node: Any, x: _Tensor, output_size: Any) -> _Tensor:
        if x.value.ndim != 4:
            raise self._fail(node, f"input of shape {list(x.torch_shape())}; expected [N, C, H, W]")
        h, w = x.value.shape[1], x.value.shape[2]
        size = output_size if isinstance(output_size, (tuple, list)) else (output_size, output_size)
        size = (h if size[0] is None else size[0], w if size[1] is None else size[1])
        return _Tensor(F.adaptive_avg_pool2d(x.value, size))

    def _flatten(self, node: Any, x: _Tensor, start: int, end: int) -> _Tensor:
        nd = x.value.ndim
        if start < 0:
            start += nd
        if end < 0:
            end += nd
        if start != 1 or end != nd - 1:
            raise self._fail(
                node, f"flatten from dim {start} to {end} of a {nd}-D tensor; RN flattens dims 1.. only"
            )
        return self._flat(x)

    @staticmethod
    def _flat(x: _Tensor) -> _Tensor:
        if x.value.ndim == 2:
            return x
        _, c, h, w = x.torch_shape()
        spatial = h * w > 1 and c > 1
        return _Tensor(F.flatten(x.value), (c, h, w) if spatial else None)

    @staticmethod
    def _dropout(x: _Tensor, p: float, training: bool) -> _Tensor:
        if not training or p == 0.0:
            return x  # the identity, exactly
        return x.like(F.dropout(x.value, float(p)))

    def _add(self, node: Any, a: Any, b: Any, alpha: Any = 1) -> _Tensor:
        if not isinstance(a, _Tensor) or not isinstance(b, _Tensor):
            raise self._fail(node, "adding a number to a tensor is not supported (tensor + tensor only)")
        if alpha != 1:
            raise self._fail(node, f"alpha={alpha} is not supported")
        if a.value.shape != b.value.shape:
            raise self._fail(
                node,
                f"shapes {list(a.torch_shape())} and {list(b.torch_shape())}: RN adds tensors of "
                "one shape (no broadcasting)",
            )
        if a.chw != b.chw:
            raise self._fail(node, "adds a flattened spatial tensor to another tensor")
        if a.channels_last != b.channels_last:
            raise self._fail(node, "adds a channels-last tensor to an NCHW one")
        return a.like(F.add(a.value, b.value))

    def _mul(self, node: Any, a: Any, b: Any) -> _Tensor:
        """Squeeze-and-excitation's ``x * scale``: [N, C, H, W] times [N, C, 1, 1], either order;
        or a layer scale: a [C, 1, 1] parameter times [N, C, H, W] (ConvNeXt)."""
        if isinstance(a, _Attr) or isinstance(b, _Attr):
            attr, x = (a, b) if isinstance(a, _Attr) else (b, a)
            scale = self._param(attr.name)
            if (not isinstance(x, _Tensor) or x.value.ndim != 4 or x.channels_last
                    or tuple(scale.shape) != (x.torch_shape()[1],)):
                shape = list(x.torch_shape()) if isinstance(x, _Tensor) else type(x).__name__
                raise self._fail(node, f"a parameter times {shape}: RN multiplies an NCHW tensor "
                                       "by a [C, 1, 1] layer scale only")
            return x.like(F.channel_scale(x.value, scale))
        if not isinstance(a, _Tensor) or not isinstance(b, _Tensor):
            raise self._fail(node, "multiplying by a number is not supported (tensor * tensor only)")
        sa, sb = a.torch_shape(), b.torch_shape()
        if len(sa) == 4 and len(sb) == 4 and sb[2:] == (1, 1) and sa[:2] == sb[:2]:
            x, scale = a, b
        elif len(sa) == 4 and len(sb) == 4 and sa[2:] == (1, 1) and sa[:2] == sb[:2]:
            x, scale = b, a
        else:
            raise self._fail(
                node,
                f"shapes {list(sa)} and {list(sb)}: RN multiplies [N, C, H, W] by a per-channel "
                "[N, C, 1, 1] scale (squeeze-and-excitation) only",
            )
        return _Tensor(F.channel_mul(x.value, scale.value))

    def _mean(self, node: Any, x: _Tensor, dims: Any, keepdim: bool) -> _Tensor:
        nd = x.value.ndim
        dims = (dims,) if isinstance(dims, int) else tuple(dims)
        if nd != 4 or sorted(d % nd for d in dims) != [2, 3]:
            raise self._fail(node, f"mean over dims {list(dims)}; RN averages over H and W (2, 3) only")
        pooled = _Tensor(F.global_avg_pool(x.value))
        return pooled if keepdim else self._flat(pooled)

    @staticmethod
    def _shape_arg(shape: Any, batch: int) -> tuple[Any, ...]:
        """A view's or reshape's sizes, given as ints or one sequence; a :class:`_Batch` (the
        batch of a shape-specialized trace) first among them is ``batch``, RN's."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        shape = tuple(shape)
        if shape and isinstance(shape[0], _Batch):
            shape = (batch, *shape[1:])
        return shape

    def _reshape(self, node: Any, x: _Tensor, shape: Any) -> _Tensor | _Grouped:
        """A reshape to [N, -1] (a flatten), to the same shape, or, of an NCHW tensor, to
        [N, a, b, H, W] with a * b = C (a channel shuffle's first view: :class:`_Grouped`). The
        first size is RN's batch when it is the input's (under symbolic tracing,
        ``x.size(0)`` is the batch RN emits for), -1, or the batch that a shape-specialized
        trace saw (:class:`_Batch`)."""
        current = x.torch_shape()
        shape = self._shape_arg(shape, current[0])
        total = math.prod(current)
        if len(shape) == 5:
            return self._group(node, x, shape)
        if len(shape) == 2 and shape[0] in (current[0], -1) and shape[1] in (total // current[0], -1):
            return self._flat(x)
        if tuple(shape) == current:
            return x
        raise self._fail(
            node, f"reshape of {list(current)} to {list(shape)}; RN reshapes to [N, -1] only "
            "(and to [N, g, C // g, H, W] for a channel shuffle)"
        )

    def _group(self, node: Any, x: _Tensor, shape: tuple[Any, ...]) -> _Grouped:
        """``view(N, a, b, H, W)`` of an NCHW tensor with a * b = C (one of a, b may be -1)."""
        current = x.torch_shape()
        if x.value.ndim == 4 and not x.channels_last and all(isinstance(d, int) for d in shape):
            n, c, h, w = current
            sizes = [n if shape[0] == -1 else shape[0], *shape[1:]]
            if sizes[1:3].count(-1) == 1 and all(d > 0 for d in sizes[1:3] if d != -1):
                known = sizes[2] if sizes[1] == -1 else sizes[1]
                if c % known == 0:
                    sizes[sizes.index(-1, 1, 3)] = c // known
            if (sizes[0] == n and tuple(sizes[3:]) == (h, w) and min(sizes[1:3]) > 0
                    and sizes[1] * sizes[2] == c):
                return _Grouped(x, sizes[1], sizes[2])
        raise self._fail(node, f"reshape of {list(current)} to {list(shape)}; {_SHUFFLE}")

    def _grouped(self, node: Any, name: str, g: _Grouped, rest: tuple, kwargs: dict) -> Any:
        """A method (or the function of that name) of a channel shuffle's 5-D view."""
        n, c, h, w = g.source.torch_shape()
        if name == "contiguous":
            return g
        if name in ("transpose", "swapaxes", "swapdims"):
            dims = [*rest, *(kwargs[k] for k in ("dim0", "dim1", "axis0", "axis1") if k in kwargs)]
            if (len(dims) == 2 and all(isinstance(d, int) for d in dims)
                    and sorted(d % 5 for d in dims) == [1, 2]):
                return _Grouped(g.source, g.a, g.b, not g.swapped)
        elif name == "permute":
            dims = rest[0] if len(rest) == 1 and isinstance(rest[0], (tuple, list)) else rest
            dims = tuple(kwargs.get("dims", dims))
            if all(isinstance(d, int) for d in dims) and len(dims) == 5:
                dims = tuple(d % 5 for d in dims)
                if dims == (0, 1, 2, 3, 4):
                    return g
                if dims == (0, 2, 1, 3, 4):
                    return _Grouped(g.source, g.a, g.b, not g.swapped)
        elif name in ("view", "reshape"):
            shape = self._shape_arg(rest if rest else kwargs.get("shape", ()), n)
            if (len(shape) == 4 and shape[0] in (n, -1) and shape[1] in (c, -1)
                    and tuple(shape[2:]) == (h, w) and shape[:2] != (-1, -1)):
                return self._shuffled(g)
        elif name == "flatten":
            start = rest[0] if rest else kwargs.get("start_dim", 0)
            end = rest[1] if len(rest) > 1 else kwargs.get("end_dim", -1)
            if isinstance(start, int) and isinstance(end, int) and (start % 5, end % 5) == (1, 2):
                return self._shuffled(g)
        raise self._fail(node, f"{name} of a 5-D view {list(g.torch_shape())}; {_SHUFFLE}")

    @staticmethod
    def _shuffled(g: _Grouped) -> _Tensor:
        """The 4-D tensor a channel shuffle's 5-D view is viewed back as: ``rn.channel_shuffle``
        with ``a`` groups if its dims 1 and 2 were swapped (PyTorch's ``view(N, a, b, H, W)``,
        ``transpose(1, 2)``, ``view(N, C, H, W)``: output channel j * a + i is input channel
        i * b + j), else the tensor itself."""
        if not g.swapped:
            return g.source
        return _Tensor(F.channel_shuffle(g.source.value, g.a))

    def _channels(self, node: Any, t: _Tensor, dim: Any, what: str) -> None:
        """Check that ``dim`` is the channel dimension of ``t`` as PyTorch sees it: 1 of NCHW
        and [N, C] tensors, 3 (or -1) of channels-last ones."""
        nd = t.value.ndim
        if t.chw is not None:
            raise self._fail(node, f"{what} of a flattened C x H x W tensor (RN orders its "
                                   "features H, W, C); pool or flatten after it")
        if isinstance(dim, bool) or not isinstance(dim, int) or not -nd <= dim < nd:
            raise self._fail(node, f"{what} along dim {dim!r} of {list(t.torch_shape())}")
        channel = 3 if nd == 4 and t.channels_last else 1
        if nd not in (2, 4) or dim % nd != channel:
            raise self._fail(
                node, f"{what} along dim {dim} of {list(t.torch_shape())}; RN {what}s along the "
                "channels only (dim 1 of NCHW and [N, C] tensors, dim 3 of channels-last ones)")

    def _cat(self, node: Any, tensors: Any, dim: Any = 0) -> _Tensor:
        """``torch.cat`` along the channels: ``rn.concat`` (one tensor: itself)."""
        if not isinstance(tensors, (tuple, list)) or not tensors:
            raise self._fail(node, f"expects a non-empty list of tensors, got {tensors!r}")
        ts = [self._tensor(node, t) for t in tensors]
        for t in ts:
            self._channels(node, t, dim, "concatenate")
        if len({t.channels_last for t in ts if t.value.ndim == 4}) > 1:
            raise self._fail(node, "concatenates a channels-last tensor and an NCHW one")
        if len(ts) == 1:
            return ts[0]
        return _Tensor(F.concat([t.value for t in ts]), channels_last=ts[0].channels_last)

    def _split(self, node: Any, x: Any, size: Any, dim: Any = 0, *, chunks: bool = False
               ) -> tuple[_Tensor, ...]:
        """``torch.split`` / ``torch.chunk`` along the channels, PyTorch's sizes (an uneven last
        slice): ``rn.split``, whose slices must all be used (one slice: the tensor itself)."""
        t = self._tensor(node, x)
        what = "chunk" if chunks else "split"
        self._channels(node, t, dim, what)
        c = t.value.shape[-1]
        if chunks:
            if isinstance(size, bool) or not isinstance(size, int) or size < 1:
                raise self._fail(node, f"chunk expects a positive number of chunks, got {size!r}")
            size = -(-c // size)
        if isinstance(size, int) and not isinstance(size, bool):
            if size < 1:
                raise self._fail(node, f"split size must be positive, got {size}")
            sizes = [size] * (c // size) + ([c % size] if c % size else [])
        elif isinstance(size, (tuple, list)) and all(
                isinstance(k, int) and not isinstance(k, bool) for k in size):
            sizes = list(size)
            if sum(sizes) != c or min(sizes, default=0) < 0:
                raise self._fail(node, f"split sizes {sizes} do not add up to the {c} channels "
                                       f"of {list(t.torch_shape())}")
            if 0 in sizes:
                raise self._fail(node, f"split sizes {sizes}: RN has no empty tensors")
        else:
            raise self._fail(node, f"split size must be an int or a list of ints, got {size!r}")
        if len(sizes) == 1:
            return (t,)
        unused = self._unused_slices(node, len(sizes))
        if unused:
            many = len(unused) > 1
            raise self._fail(node, f"slice{'s' if many else ''} {unused} of the {len(sizes)} "
                                   f"{what} slices {'are' if many else 'is'} not used; RN's "
                                   "rn.split needs every slice to reach the loss")
        return tuple(_Tensor(v, channels_last=t.channels_last)
                     for v in F.split(t.value, sizes))

    @staticmethod
    def _unused_slices(node: Any, count: int) -> list[int]:
        """The slices of a split node that no node reads (by ``operator.getitem``); none when
        the tuple is used whole."""
        used: set[int] = set()
        for user in node.users:
            if user.op != "call_function" or user.target is not operator.getitem:
                return []
            index = user.args[1]
            if isinstance(index, slice):
                used.update(range(count)[index])
            elif isinstance(index, int) and user.users:
                used.add(index % count)
            elif not isinstance(index, int):
                return []
        return [i for i in range(count) if i not in used]

    # -- functions and methods -------------------------------------------------

    def _function_table(self) -> dict[Any, Callable[..., Any]]:
        torch = _torch()
        tf = torch.nn.functional

        def unary(fn: Callable[[Value], Value]) -> Callable[..., Any]:
            def apply(node: Any, x: Any, *rest: Any, **kw: Any) -> _Tensor:
                return self._tensor(node, x).like(fn(x.value))

            return apply

        def gelu(node: Any, x: Any, approximate: str = "none") -> _Tensor:
            t = self._tensor(node, x)
            if approximate not in F.GELU_APPROXIMATIONS:
                raise self._fail(node, f"gelu approximate={approximate!r} is not supported")
            return t.like(F.gelu(t.value, approximate))

        def hardtanh(node: Any, x: Any, min_val: float = -1.0, max_val: float = 1.0,
                     inplace: bool = False) -> _Tensor:
            t = self._tensor(node, x)
            return t.like(F.hardtanh(t.value, float(min_val), float(max_val)))

        def layer_norm(node: Any, x: Any, normalized_shape: Any, weight: Any = None,
                       bias: Any = None, eps: float = 1e-5) -> _Tensor:
            return self._layer_norm(node, self._tensor(node, x), normalized_shape, weight, bias,
                                    eps)

        def permute(node: Any, x: Any, dims: Any) -> _Tensor:
            return self._permute(node, self._tensor(node, x), dims)

        def flatten(node: Any, x: Any, start_dim: int = 0, end_dim: int = -1) -> _Tensor:
            return self._flatten(node, self._tensor(node, x), start_dim, end_dim)

        def adaptive(node: Any, x: Any, output_size: Any) -> _Tensor:
            return self._adaptive_avg_pool(node, self._tensor(node, x), output_size)

        def avg(node: Any, x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
                ceil_mode: bool = False, count_include_pad: bool = True,
                divisor_override: Any = None) -> _Tensor:
            return self._avg_pool(node, self._tensor(node, x), kernel_size, stride, padding,
                                  ceil_mode, count_include_pad, divisor_override)

        def max_pool(node: Any, x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
                     dilation: Any = 1, ceil_mode: bool = False,
                     return_indices: bool = False) -> _Tensor:
            tensor = self._tensor(node, x)
            if return_indices or _pair_of(dilation) != (1, 1):
                raise self._fail(node, "return_indices and dilation other than 1 are not supported")
            return _Tensor(F.max_pool2d(tensor.value, kernel_size, stride if stride else None,
                                        padding, bool(ceil_mode)))

        def dropout(node: Any, x: Any, p: float = 0.5, training: bool = True,
                    inplace: bool = False) -> _Tensor:
            return self._dropout(self._tensor(node, x), p, training)

        def add(node: Any, a: Any, b: Any, *, alpha: Any = 1) -> _Tensor:
            return self._add(node, a, b, alpha)

        def mean(node: Any, x: Any, dim: Any = None, keepdim: bool = False, **kw: Any) -> _Tensor:
            if dim is None:
                raise self._fail(node, "mean over every dim is not supported")
            return self._mean(node, self._tensor(node, x), dim, keepdim)

        def mul(node: Any, a: Any, b: Any) -> _Tensor:
            return self._mul(node, a, b)

        def getattr_(node: Any, x: Any, name: str) -> Any:
            if isinstance(x, _Tensor) and name == "shape":
                return x.torch_shape()
            if isinstance(x, _Tensor) and name == "ndim":
                return len(x.torch_shape())
            raise self._fail(node, f"reads attribute {name!r}; RN supports .shape and .ndim only")

        def cat(node: Any, tensors: Any, dim: Any = 0, **kw: Any) -> _Tensor:
            if kw.get("out") is not None:
                raise self._fail(node, "out= is not supported")
            return self._cat(node, tensors, dim)

        def chunk(node: Any, x: Any, chunks: Any, dim: Any = 0) -> tuple[_Tensor, ...]:
            return self._split(node, x, chunks, dim, chunks=True)

        def split(node: Any, x: Any, split_size_or_sections: Any, dim: Any = 0
                  ) -> tuple[_Tensor, ...]:
            return self._split(node, x, split_size_or_sections, dim)

        def reshape(node: Any, x: Any, shape: Any) -> Any:
            return self._reshape(node, self._tensor(node, x), shape)

        def getitem(node: Any, x: Any, index: Any) -> Any:
            if isinstance(x, (tuple, list)):
                return x[index]
            raise self._fail(node, "indexing a tensor is not supported")

        table: dict[Any, Callable[..., Any]] = {
            operator.add: add,
            operator.iadd: add,
            operator.mul: mul,
            torch.mul: mul,
            torch.add: add,
            torch.relu: unary(F.relu),
            tf.relu: unary(F.relu),
            torch.tanh: unary(F.tanh),
            tf.silu: unary(F.silu),
            torch.sigmoid: unary(F.sigmoid),
            tf.sigmoid: unary(F.sigmoid),
            tf.relu6: unary(F.relu6),
            tf.hardswish: unary(F.hardswish),
            tf.hardsigmoid: unary(F.hardsigmoid),
            tf.hardtanh: hardtanh,
            tf.gelu: gelu,
            tf.layer_norm: layer_norm,
            torch.permute: permute,
            torch.flatten: flatten,
            tf.adaptive_avg_pool2d: adaptive,
            tf.avg_pool2d: avg,
            tf.max_pool2d: max_pool,
            tf.dropout: dropout,
            torch.mean: mean,
            getattr: getattr_,
            operator.getitem: getitem,
            torch.cat: cat,
            torch.chunk: chunk,
            torch.split: split,
            torch.reshape: reshape,
        }
        for alias in ("concat", "concatenate"):  # torch.concat: 1.10; concatenate: 2.x
            if hasattr(torch, alias):
                table[getattr(torch, alias)] = cat
        relu_ = getattr(torch, "relu_", None)
        if relu_ is not None:
            table[relu_] = unary(F.relu)
        return table

    def _tensor(self, node: Any, x: Any) -> _Tensor:
        if not isinstance(x, _Tensor):
            raise self._fail(node, f"expected a tensor, got {type(x).__name__}")
        return x

    def _call_function(self, node: Any, fn: Any, args: tuple, kwargs: dict) -> Any:
        if fn in _ARITHMETIC and not any(isinstance(a, (_Tensor, _Attr, _Grouped))
                                         for a in (*args, *kwargs.values())):
            return fn(*args, **kwargs)  # sizes: x.size(1) // groups
        if args and isinstance(args[0], _Grouped):  # _check_grouped let only these through
            return self._grouped(node, self._grouped_functions()[fn], args[0], args[1:], kwargs)
        table = getattr(self, "_functions", None)
        if table is None:
            table = self._function_table()
            object.__setattr__(self, "_functions", table)
        handler = table.get(fn)
        if handler is None:
            name = getattr(fn, "__name__", "")
            module = getattr(fn, "__module__", "") or ""
            try:
                if name == "stochastic_depth" and module.startswith("torchvision."):
                    return self._stochastic_depth(node, *args, **kwargs)
                if name == "drop_path" and module.startswith("timm."):
                    return self._drop_path(node, *args, **kwargs)
            except TypeError as e:
                raise self._fail(node, f"arguments not understood ({e})") from e
            raise self._fail(node, f"not supported; RN imports {SUPPORTED}")
        try:
            return handler(node, *args, **kwargs)
        except TypeError as e:
            raise self._fail(node, f"arguments not understood ({e})") from e

    def _stochastic_depth(
        self, node: Any, x: Any, p: float, mode: str, training: bool = True
    ) -> _Tensor:
        """torchvision's ``stochastic_depth``: ``mode="row"`` is ``rn.stochastic_depth``."""
        t = self._tensor(node, x)
        if not 0.0 <= p <= 1.0:
            raise self._fail(node, f"drop probability has to be between 0 and 1, but got {p}")
        if mode not in ("row", "batch"):
            raise self._fail(node, f"mode has to be either 'batch' or 'row', but got {mode!r}")
        if not training or p == 0.0:
            return t  # the identity, exactly
        if mode == "batch":
            raise self._fail(
                node,
                f"stochastic depth with mode='batch' (one draw for the whole batch) and p={p} is "
                "not supported; RN implements mode='row' (a draw per sample)",
            )
        return t.like(F.stochastic_depth(t.value, float(p)))

    def _drop_path(
        self, node: Any, x: Any, drop_prob: float = 0.0, training: bool = False,
        scale_by_keep: bool = True,
    ) -> _Tensor:
        """timm's ``drop_path``: torchvision's stochastic depth in row mode when it scales the
        kept samples by 1 / (1 - drop_prob)."""
        if training and drop_prob > 0.0 and not scale_by_keep:
            raise self._fail(
                node,
                "drop path with scale_by_keep=False is not supported (RN scales the kept samples "
                "by 1 / (1 - drop_prob))",
            )
        return self._stochastic_depth(node, x, drop_prob, "row", training)

    def _call_method(self, node: Any, name: str, args: tuple, kwargs: dict) -> Any:
        if args and isinstance(args[0], _Grouped):
            return self._grouped(node, name, args[0], args[1:], kwargs)
        if not args or not isinstance(args[0], _Tensor):
            raise self._fail(node, "called on something other than a tensor")
        x: _Tensor = args[0]
        rest = args[1:]
        if name == "size":
            shape = x.torch_shape()
            dim = rest[0] if rest else kwargs.get("dim")
            return shape if dim is None else shape[dim]
        if name == "dim":
            return len(x.torch_shape())
        if name in ("contiguous", "float"):
            return x
        if name in ("relu", "relu_"):
            return x.like(F.relu(x.value))
        if name in ("tanh", "tanh_"):
            return x.like(F.tanh(x.value))
        if name in ("sigmoid", "sigmoid_"):
            return x.like(F.sigmoid(x.value))
        if name == "permute":
            dims = rest[0] if len(rest) == 1 and isinstance(rest[0], (tuple, list)) else rest
            return self._permute(node, x, kwargs.get("dims", dims))
        if name in ("mul", "mul_"):
            return self._mul(node, x, rest[0] if rest else kwargs.get("other"))
        if name in ("add", "add_"):
            return self._add(node, x, rest[0] if rest else kwargs.get("other"), kwargs.get("alpha", 1))
        if name == "flatten":
            start = rest[0] if rest else kwargs.get("start_dim", 0)
            end = rest[1] if len(rest) > 1 else kwargs.get("end_dim", -1)
            return self._flatten(node, x, start, end)
        if name in ("view", "reshape"):
            return self._reshape(node, x, rest if rest else kwargs.get("shape", ()))
        if name == "chunk":
            return self._split(node, x, rest[0] if rest else kwargs.get("chunks"),
                               rest[1] if len(rest) > 1 else kwargs.get("dim", 0), chunks=True)
        if name == "split":
            size = rest[0] if rest else kwargs.get("split_size",
                                                    kwargs.get("split_size_or_sections"))
            return self._split(node, x, size, rest[1] if len(rest) > 1 else kwargs.get("dim", 0))
        if name == "mean":
            dim = rest[0] if rest else kwargs.get("dim")
            keepdim = rest[1] if len(rest) > 1 else kwargs.get("keepdim", False)
            if dim is None:
                raise self._fail(node, "mean over every dim is not supported")
            return self._mean(node, x, dim, keepdim)
        raise self._fail(node, f"not supported; RN imports {SUPPORTED}")


def _activation_types() -> tuple[type, ...]:
    nn = _torch().nn
    return (nn.ReLU, nn.ReLU6, nn.Tanh, nn.SiLU, nn.Sigmoid, nn.Hardswish, nn.Hardsigmoid,
            nn.Hardtanh, nn.GELU)


def _pair_of(v: Any) -> tuple[int, int]:
    return (v, v) if isinstance(v, int) else (int(v[0]), int(v[1]))


def from_torch(module: Any, input_shape: tuple[int, int, int]) -> ImportedModel:
    """Import ``module`` (a ``torch.nn.Module``) for inputs of ``input_shape`` = (C, H, W).

    Raises :class:`UnsupportedModelError` naming the first module path (or
    function and source line) that RN cannot import, and what it supports.
    """
    if not is_torch_module(module):
        raise TypeError(f"from_torch expects a torch.nn.Module, got {type(module).__name__}")
    if not isinstance(input_shape, (tuple, list)) or len(input_shape) != 3:
        raise ValueError(f"input_shape must be (C, H, W), got {input_shape!r}")
    return ImportedModel(module, tuple(int(d) for d in input_shape))  # type: ignore[arg-type]


# --------------------------------------------------------------------------- #
# Artifacts and checkpoints
# --------------------------------------------------------------------------- #


def _to_bf16_bytes(values: Any) -> bytes:
    """float32 to bfloat16 bytes, rounding to nearest even (as the runtime does)."""
    import numpy as np

    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounded = (bits + (((bits >> 16) & 1) + 0x7FFF)) >> 16
    return rounded.astype(np.uint16).tobytes()


def attach_to_artifact(
    path: str | os.PathLike[str], model: ImportedModel, state_dict: Mapping[str, Any] | None
) -> None:
    """Record ``model``'s mapping in the artifact and, with ``state_dict``, make its values the
    artifact's initial parameters and buffers (a weight-free artifact stays weight-free)."""
    file = _safetensors.read(path)
    file.metadata[TORCH_METADATA_KEY] = model.mapping.to_json()
    if state_dict is not None and file.tensors:
        values, _ = model.mapping.from_torch(state_dict, action="rn.compile")
        for name, array in values.items():
            if name not in file.tensors:
                raise ValueError(f"{os.fspath(path)}: the artifact has no tensor {name!r}")
            dtype = file.dtypes[name]
            if tuple(array.shape) != tuple(file.shapes[name]):
                raise ValueError(
                    f"{name}: the artifact holds shape {list(file.shapes[name])}, the module "
                    f"{list(array.shape)}"
                )
            file.tensors[name] = _to_bf16_bytes(array) if dtype == "BF16" else array
    _safetensors.write(path, file)


def to_torch_state_dict(
    checkpoint: str | os.PathLike[str],
    source: str | os.PathLike[str] | ImportedModel | Any,
    *,
    input_shape: tuple[int, int, int] | None = None,
    ema: bool = False,
) -> dict[str, Any]:
    """A torch ``state_dict`` (torch tensors) from an rn-run or ``Trainer.save`` checkpoint.

    ``source`` gives the mapping: the artifact compiled from the torch module,
    an :class:`ImportedModel`, or the torch module itself with ``input_shape``.
    ``ema=True`` takes the EMA weights in place of the parameters (the
    artifact must be compiled with ``ema-decay``). Roles come from the
    checkpoint's ``rn.state`` record; ``num_batches_tracked`` is its step.
    Entries the model does not read (``TorchMapping.untouched``) are not in
    the result: load it with ``strict=False`` or merge it into the module's
    own ``state_dict``.
    """
    torch = _torch()
    if isinstance(source, ImportedModel):
        mapping = source.mapping
    elif is_torch_module(source):
        if input_shape is None:
            raise ValueError("a torch module as the source needs input_shape=(C, H, W)")
        mapping = from_torch(source, input_shape).mapping
    else:
        mapping = TorchMapping.from_artifact(source)
    file = _safetensors.read(checkpoint)
    if file.metadata.get("rn.checkpoint") != "1":
        raise ValueError(f"{os.fspath(checkpoint)}: not an rn checkpoint (no rn.checkpoint metadata)")
    if "rn.state" not in file.metadata:
        raise ValueError(
            f"{os.fspath(checkpoint)}: the checkpoint records no roles (rn.state); it was written "
            "by an older runtime: load it into a Trainer and use copy_to"
        )
    records = json.loads(file.metadata["rn.state"])
    roles = {r["name"]: r["role"] for r in records}
    state: dict[str, Any] = {}
    for e in mapping.entries:
        if roles.get(e.name) != e.role:
            raise ValueError(
                f"{os.fspath(checkpoint)}: {e.name} is {roles.get(e.name, 'absent')!r} in the "
                f"checkpoint, expected a {e.role}: the checkpoint is of another model"
            )
        state[e.name] = file.tensors[e.name]
    if ema:
        swaps = ema_names(records)
        if not swaps:
            raise ValueError(f"{os.fspath(checkpoint)}: the checkpoint has no EMA weights")
        for param, name in swaps.items():
            state[param] = file.tensors[name]
    steps = int(file.metadata.get("step", "0") or 0)
    return {k: torch.from_numpy(v) for k, v in mapping.to_torch(state, steps).items()}

