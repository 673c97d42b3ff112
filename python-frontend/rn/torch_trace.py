"""Tracing a PyTorch module for :func:`rn.from_torch`.

``torch.fx`` symbolic tracing first, with the stochastic-depth and timm
modules RN maps whole kept as leaves (:func:`_tracer`); where that fails, a
trace with the import's input shapes fixed (:func:`_shape_tracer`); where
both fail, the refusal names the module and the line of its ``forward``
(:func:`_trace_error`).
"""

from __future__ import annotations

import os
from typing import Any

from .torch_state import _torch

class UnsupportedModelError(ValueError):
    """The module uses something RN does not import; the message names the module path."""


def _is_stochastic_depth_module(m: Any) -> bool:
    """torchvision's ``ops.StochasticDepth`` or timm's ``DropPath`` (timm need not be installed:
    recognized by its class name and ``drop_prob``)."""
    cls = type(m)
    if cls.__name__ == "StochasticDepth" and cls.__module__.startswith("torchvision."):
        return True
    return cls.__name__ == "DropPath" and hasattr(m, "drop_prob")


def _is_timm_batch_norm_act(m: Any) -> bool:
    """timm's ``BatchNormAct2d`` (recognized by its class name and its ``act`` and ``drop``
    members: timm need not be installed): a ``BatchNorm2d`` whose forward then applies ``drop``
    and ``act``. Traced through, its forward reads ``x.ndim`` and the module's flags; RN maps
    it whole instead."""
    return type(m).__name__ == "BatchNormAct2d" and hasattr(m, "act") and hasattr(m, "drop")


def _is_timm_linear(m: Any) -> bool:
    """timm's ``layers.linear.Linear``: an ``nn.Linear`` whose forward only casts the weights to
    the input's dtype under TorchScript, imported as the Linear it is."""
    cls = type(m)
    return cls.__name__ == "Linear" and cls.__module__.startswith("timm.") and isinstance(
        m, _torch().nn.Linear)


def _tracer() -> Any:
    """A ``torch.fx.Tracer`` that keeps the stochastic-depth modules as calls of the module: RN
    reads their probability and emits its own op, whose training step drops and whose
    evaluation step does not, whatever mode the module was in (as ``nn.Dropout``, a leaf of
    every tracer). Traced through, torchvision's would bake in ``self.training`` and timm's
    would trace its random tensor ops."""
    torch = _torch()

    class Tracer(torch.fx.Tracer):  # type: ignore[misc]
        def is_leaf_module(self, m: Any, qualname: str) -> bool:
            return (_is_stochastic_depth_module(m) or _is_timm_batch_norm_act(m)
                    or _is_timm_linear(m) or super().is_leaf_module(m, qualname))

    return Tracer()


class _Batch(int):
    """The batch size of a shape-specialized trace (:func:`_shape_tracer`), as ``x.size(0)`` or
    ``x.shape[0]`` gives it there: an int that the graph keeps where forward passes it on (a
    ``view(batchsize, ...)``), so that the importer reads it as RN's batch, whatever the batch
    it emits for. Arithmetic on it gives plain ints (not the batch any more)."""

    def __repr__(self) -> str:
        return int.__repr__(self)


_TRACE_BATCH = 2
"""The batch of a shape-specialized trace: 2 rather than 1, so that nothing of the trace sees a
degenerate batch (a squeeze, a batch norm of one sample)."""


def _shape_tracer(input_shape: tuple[int, int, int]) -> Any:
    """A tracer like :func:`_tracer`'s whose proxies also carry the values forward computes for
    a batch of zeros of ``input_shape`` (batch :data:`_TRACE_BATCH`), so that ``x.size()``,
    ``x.shape``, ``x.dim()``, ``x.ndim`` and ``len(x)`` are numbers and a tuple a function
    returns (``x.chunk(2, 1)``) can be unpacked: what torchvision's ``channel_shuffle`` does
    (``batchsize, num_channels, height, width = x.size()``), which symbolic tracing refuses.

    The graph is then specialized to ``input_shape``, as RN's import is anyway (C, H and W are
    fixed; Python code that branches on them is traced for them); the batch is not fixed: the
    batch the trace sees is a :class:`_Batch`, which a view or reshape takes as RN's batch. Only
    shapes are read from the values: a branch on a value (``if x.mean() > 0``) still fails.
    Leaf modules run on the values in eval mode, parameters read directly are copies, and
    nothing runs with gradients: the module's state is left as it was."""
    torch = _torch()
    base = type(_tracer())

    class ShapeProxy(torch.fx.Proxy):  # type: ignore[misc]
        _value: Any = None
        _batched = False

        def _shape(self) -> tuple[int, ...] | None:
            v = self._value
            if not isinstance(v, torch.Tensor):
                return None
            dims = tuple(int(d) for d in v.shape)
            if self._batched and dims:
                return (_Batch(dims[0]), *dims[1:])
            return dims

        def size(self, dim: int | None = None) -> Any:
            shape = self._shape()
            if shape is None:
                args = (self,) if dim is None else (self, dim)
                return self.tracer.create_proxy("call_method", "size", args, {})
            return shape if dim is None else shape[dim]

        def dim(self) -> Any:
            shape = self._shape()
            if shape is None:
                return self.tracer.create_proxy("call_method", "dim", (self,), {})
            return len(shape)

        @property
        def shape(self) -> Any:
            shape = self._shape()
            if shape is None:
                return self.tracer.create_proxy("call_function", getattr, (self, "shape"), {})
            return shape

        @property
        def ndim(self) -> Any:
            shape = self._shape()
            if shape is None:
                return self.tracer.create_proxy("call_function", getattr, (self, "ndim"), {})
            return len(shape)

        def __len__(self) -> int:
            shape = self._shape()
            if shape:
                return shape[0]
            if isinstance(self._value, (tuple, list)):
                return len(self._value)
            return super().__len__()  # type: ignore[no-any-return]

        def __iter__(self) -> Any:
            if isinstance(self._value, (tuple, list)):
                return iter([self[i] for i in range(len(self._value))])
            return self.tracer.iter(self)  # fx's refusal (a tensor is not unpacked)

    class ShapeTracer(base):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            super().__init__()
            self._concrete = False  # a leaf module runs on values: its calls are not traced
            self._forward: Any = None

        def proxy(self, node: Any) -> Any:
            return ShapeProxy(node, self)

        def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: Any) -> Any:
            if self._concrete:
                return attr_val
            return super().getattr(attr, attr_val, parameter_proxy_cache)

        def call_module(self, m: Any, forward: Any, args: Any, kwargs: Any) -> Any:
            if self._concrete:
                return forward(*args, **kwargs)
            self._forward = forward
            return super().call_module(m, forward, args, kwargs)

        def create_proxy(self, kind: str, target: Any, args: Any, kwargs: Any, *rest: Any,
                         **kw: Any) -> Any:
            proxy = super().create_proxy(kind, target, args, kwargs, *rest, **kw)
            if isinstance(proxy, ShapeProxy):
                try:
                    proxy._value, proxy._batched = self._evaluate(kind, target, args, kwargs)
                except Exception:  # no value: shape queries on it are traced as usual
                    proxy._value, proxy._batched = None, False
            return proxy

        def _evaluate(self, kind: str, target: Any, args: Any, kwargs: Any) -> tuple[Any, bool]:
            if kind == "placeholder":
                c, h, w = input_shape
                return torch.zeros(_TRACE_BATCH, c, h, w), True
            batched = False
            missing = False

            def value(a: Any) -> Any:
                nonlocal batched, missing
                if isinstance(a, ShapeProxy):
                    batched = batched or a._batched
                    missing = missing or a._value is None
                    return a._value
                if isinstance(a, torch.fx.Proxy):
                    missing = True
                return a

            cargs = torch.fx.node.map_aggregate(args, value)
            ckwargs = torch.fx.node.map_aggregate(kwargs, value)
            if missing:
                return None, False
            self._concrete = True
            modes: list[tuple[Any, bool]] = []
            try:
                with torch.no_grad():
                    if kind == "get_attr":
                        out: Any = self.root
                        for part in target.split("."):
                            out = getattr(out, part)
                        out = out.detach().clone() if isinstance(out, torch.Tensor) else out
                    elif kind == "call_function":
                        out = target(*cargs, **ckwargs)
                    elif kind == "call_method":
                        out = getattr(cargs[0], target)(*cargs[1:], **ckwargs)
                    elif kind == "call_module":
                        module = self.root.get_submodule(target)
                        modes = [(m, m.training) for m in module.modules()]
                        module.eval()
                        out = self._forward(*cargs, **ckwargs)
                    else:
                        return None, False
            finally:
                self._concrete = False
                for m, mode in modes:
                    m.training = mode

            def keeps_batch(v: Any) -> bool:
                return isinstance(v, torch.Tensor) and v.dim() > 0 and v.shape[0] == _TRACE_BATCH

            if isinstance(out, (tuple, list)):
                return out, batched and all(keeps_batch(v) for v in out)
            return out, batched and keeps_batch(out)

    return ShapeTracer()


def _trace_error(module: Any, error: BaseException) -> UnsupportedModelError:
    """The refusal of a module torch.fx could not trace, naming the module whose ``forward`` was
    being traced (its path and type, as the other refusals name modules; the model's type for
    the model itself) and the line of the user's code where the error came: the innermost
    frame outside torch, rn and Python's standard library."""
    import sysconfig
    import traceback

    torch = _torch()
    paths = sysconfig.get_paths()

    def folder(path: str) -> str:
        return os.path.join(os.path.abspath(path), "")

    library = (folder(os.path.dirname(torch.__file__)), folder(os.path.dirname(__file__)),
               folder(paths["stdlib"]))
    installed = (folder(paths["purelib"]), folder(paths["platlib"]))

    def is_library(file: str) -> bool:
        file = os.path.abspath(file)
        return file.startswith(library[:2]) or (
            file.startswith(library[2]) and not file.startswith(installed))

    module_paths = {id(m): name for name, m in module.named_modules()}
    where, source, owner = "", "", None
    for frame, line in traceback.walk_tb(error.__traceback__):
        code = frame.f_code
        if is_library(code.co_filename):
            continue
        where = f'File "{code.co_filename}", line {line}, in {code.co_name}'
        source = traceback.FrameSummary(code.co_filename, line, code.co_name).line or ""
        this = frame.f_locals.get("self")
        if code.co_name == "forward" and id(this) in module_paths:
            owner = this
    if owner is None or not module_paths[id(owner)]:  # the model's own forward
        name = f"{type(module).__name__} ({where})" if where else type(module).__name__
    else:
        details = ", ".join(filter(None, (type(owner).__name__, where)))
        name = f"{module_paths[id(owner)]} ({details})"
    why = f"{type(error).__name__}: {error}"
    innermost = traceback.extract_tb(error.__traceback__)[-1:]
    if innermost and innermost[0].name == "__iter__" and innermost[0].filename.endswith(
            os.path.join("fx", "proxy.py")):
        why += "; fx cannot unpack or iterate a traced value"
    at = f" at `{source}`" if source else ""
    return UnsupportedModelError(
        f"{name}: torch.fx cannot trace it symbolically{at} ({why}); RN imports models whose "
        "forward torch.fx.symbolic_trace can trace, or can with the shapes of the import's input "
        "fixed"
    )
