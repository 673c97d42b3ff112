"""RN: describe neural networks in Python, compile them with RN, and train them from Python.

>>> import rn
>>> from rn import nn
>>> model = nn.Sequential(nn.Flatten(), nn.Linear(784, 10))
>>> text = rn.emit_model(model, batch=2, input_shape=(1, 28, 28), num_classes=10)

``rn.compile`` writes a training artifact and ``rn.Trainer`` trains one
(docs/python.md). The package imports without the native extension (the
Trainer's engine); only ``rn.Trainer`` needs it, and says how to build it.
"""

from . import data, nn
from ._version import __version__
from .compiler import CompileError, compile, find_rn_compile
from .emitter import (
    DTYPES,
    Init,
    LayerInfo,
    ParamSpec,
    TensorType,
    Value,
    adaptive_avg_pool2d,
    add,
    avg_pool2d,
    batch_norm,
    cat,
    channel_mul,
    channel_scale,
    channel_shuffle,
    chunk,
    concat,
    conv2d,
    dropout,
    flatten,
    gelu,
    global_avg_pool,
    hardsigmoid,
    hardswish,
    hardtanh,
    layer_norm,
    linear,
    max_pool2d,
    relu,
    relu6,
    sigmoid,
    silu,
    softmax_cross_entropy,
    split,
    stochastic_depth,
    tanh,
)
from .torch_import import (
    ImportedModel,
    TorchMapping,
    UnsupportedModelError,
    from_torch,
    to_torch_state_dict,
)
from .tracer import Trace, emit_model, trace_model
from .trainer import (
    IncompatibleKeys,
    InputBuffer,
    NativeUnavailable,
    StepHandle,
    Trainer,
    TrainerError,
    cosine_lr,
)
from .training import build_training, find_rn_opt

# Made from the compiler's option list when first used (rn.training), so
# that importing rn needs no compiler.
_FROM_THE_COMPILER = ("LOSS_SCALINGS", "OPTIMIZERS", "PRECISIONS", "TrainingOptions")


def __getattr__(name: str) -> object:
    if name in _FROM_THE_COMPILER:
        from . import training

        value = getattr(training, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CompileError",
    "DTYPES",
    "ImportedModel",
    "IncompatibleKeys",
    "InputBuffer",
    "NativeUnavailable",
    "StepHandle",
    "Trainer",
    "TrainerError",
    "LOSS_SCALINGS",
    "OPTIMIZERS",
    "PRECISIONS",
    "Init",
    "LayerInfo",
    "ParamSpec",
    "TensorType",
    "Trace",
    "TorchMapping",
    "TrainingOptions",
    "UnsupportedModelError",
    "Value",
    "__version__",
    "adaptive_avg_pool2d",
    "add",
    "avg_pool2d",
    "batch_norm",
    "build_training",
    "cat",
    "channel_mul",
    "channel_scale",
    "channel_shuffle",
    "chunk",
    "compile",
    "concat",
    "conv2d",
    "cosine_lr",
    "data",
    "dropout",
    "emit_model",
    "find_rn_compile",
    "find_rn_opt",
    "flatten",
    "from_torch",
    "global_avg_pool",
    "hardsigmoid",
    "hardswish",
    "hardtanh",
    "layer_norm",
    "linear",
    "max_pool2d",
    "nn",
    "relu",
    "relu6",
    "sigmoid",
    "silu",
    "softmax_cross_entropy",
    "split",
    "stochastic_depth",
    "tanh",
    "to_torch_state_dict",
    "trace_model",
]
