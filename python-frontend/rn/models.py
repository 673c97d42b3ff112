"""Model zoo and command line.

Usage::

    python -m rn.models resnet18c --batch 256 -o resnet18c.mlir
    python -m rn.models resnet18c --train --optimizer sgd --nesterov -o resnet18c-train.mlir
    python -m rn.models resnet18c --input-dtype uint8 --mean 0.4914,0.4822,0.4465 \\
        --std 0.2470,0.2435,0.2616 -o resnet18c-u8.mlir
    python -m rn.models --list

``--input-dtype uint8`` makes the images input raw uint8 pixels that the device
normalizes with ``--mean`` and ``--std`` (the defaults of the buffers ``input.mean``
and ``input.std``; rn-run sets them from the data). ``--train`` runs ``rn-opt --rn-build-training`` (see :mod:`rn.training`) on the model
and writes the training module; ``--print-pass-options`` prints that pass argument only.

Models and their defaults (input C x H x W, classes):

- ``mlp``: Flatten, Linear(784, 1024), ReLU, Linear(1024, 1024), ReLU, Linear(1024, 10); 1x28x28.
- ``lenet5``: LeNet-5 with Tanh and AvgPool2d: conv5x5(6, pad 2), pool, conv5x5(16), pool,
  Linear(400, 120), Linear(120, 84), Linear(84, 10); 1x28x28.
- ``fashion_cnn``: for Fashion-MNIST: two blocks of conv3x3-BN-ReLU + MaxPool2d(2)
  (32 then 64 channels, convs without bias), Flatten, Linear(64*7*7, 128), ReLU,
  Dropout(0.5), Linear(128, 10); 1x28x28. The main job trains it on Fashion-MNIST
  (its accuracy: docs/benchmarks.md).
- ``vgg11c``, ``vgg16c``: CIFAR VGG-BN (``bench/torch_reference.py``): conv3x3(bias=False)+BN+ReLU
  per cfg entry, MaxPool2d(2) per 'M', Flatten, Linear(512, classes); 3x32x32.
- ``vgg11``, ``vgg16``: torchvision ``vgg11_bn``/``vgg16_bn`` with their initialization; 3x224x224.
- ``resnet18c``, ``resnet34c``, ``resnet50c``: CIFAR ResNets: conv3x3 stride 1 stem, no max pool,
  torchvision stages; PyTorch default initialization like the reference; 3x32x32.
- ``resnet18``, ``resnet34``, ``resnet50``: torchvision ResNets (v1.5) with torchvision's
  kaiming_normal(fan_out) conv initialization; 3x224x224.

All Flatten layers flatten NHWC activations, so a Linear after a spatial Flatten
sees features in (H, W, C) order; this only matters when importing torch weights.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TypeAlias

from . import emitter as F
from . import training
from ._native_loader import NativeUnavailable
from .emitter import DTYPES, Init, Value, format_table
from .nn import (
    AdaptiveAvgPool2d,
    AvgPool2d,
    BasicBlock,
    BatchNorm2d,
    Bottleneck,
    Conv2d,
    CrossEntropyLoss,
    Dropout,
    Flatten,
    InitArg,
    Linear,
    MaxPool2d,
    Module,
    ReLU,
    Sequential,
    Tanh,
    kaiming_normal,
)
from .tracer import INPUT_DTYPES, Trace, trace_model
from .training import build_training, format_option

__all__ = [
    "MODELS",
    "VGG",
    "ModelInfo",
    "ResNet",
    "build",
    "emit",
    "main",
    "trace",
]

Shape3: TypeAlias = tuple[int, int, int]
Builder: TypeAlias = Callable[[int, Shape3], Module]
"""Builds a model from ``(num_classes, (C, H, W))``."""


@dataclass(frozen=True)
class ModelInfo:
    """A zoo entry: builder plus default input shape (C, H, W) and class count."""

    name: str
    builder: Builder
    input_shape: Shape3
    num_classes: int
    description: str

    def build(self, num_classes: int | None = None, input_shape: Shape3 | None = None) -> Module:
        return self.builder(
            self.num_classes if num_classes is None else num_classes,
            self.input_shape if input_shape is None else input_shape,
        )


MODELS: dict[str, ModelInfo] = {}


def _register(
    name: str, input_shape: Shape3, num_classes: int, description: str
) -> Callable[[Builder], Builder]:
    def deco(fn: Builder) -> Builder:
        MODELS[name] = ModelInfo(name, fn, input_shape, num_classes, description)
        return fn

    return deco


def _info(name: str) -> ModelInfo:
    try:
        return MODELS[name]
    except KeyError:
        raise ValueError(f"unknown model {name!r}; valid names: {', '.join(MODELS)}") from None


def build(
    name: str, *, num_classes: int | None = None, input_shape: Shape3 | None = None
) -> Module:
    """Build zoo model ``name`` (defaults from the registry)."""
    return _info(name).build(num_classes, input_shape)


def trace(
    name: str,
    *,
    batch: int = 256,
    num_classes: int | None = None,
    input_shape: Shape3 | None = None,
    dtype: str = "f32",
    label_smoothing: float = 0.0,
    input_dtype: str = "float",
    mean: Sequence[float] | None = None,
    std: Sequence[float] | None = None,
) -> Trace:
    """Build and trace zoo model ``name`` (loss: ``CrossEntropyLoss(label_smoothing)``).

    ``input_dtype="uint8"`` with ``mean`` and ``std``: uint8 images normalized on
    the device (:func:`rn.emit_model`).
    """
    info = _info(name)
    classes = info.num_classes if num_classes is None else num_classes
    shape = info.input_shape if input_shape is None else input_shape
    return trace_model(
        info.build(classes, shape),
        batch=batch,
        input_shape=shape,
        num_classes=classes,
        loss=CrossEntropyLoss(label_smoothing),
        dtype=dtype,
        name=name,
        input_dtype=input_dtype,
        mean=mean,
        std=std,
    )


def emit(
    name: str,
    *,
    batch: int = 256,
    num_classes: int | None = None,
    input_shape: Shape3 | None = None,
    dtype: str = "f32",
    label_smoothing: float = 0.0,
    input_dtype: str = "float",
    mean: Sequence[float] | None = None,
    std: Sequence[float] | None = None,
) -> str:
    """MLIR text of zoo model ``name``."""
    return trace(
        name,
        batch=batch,
        num_classes=num_classes,
        input_shape=input_shape,
        dtype=dtype,
        label_smoothing=label_smoothing,
        input_dtype=input_dtype,
        mean=mean,
        std=std,
    ).text


def _spatial(what: str, size: int) -> int:
    if size < 1:
        raise ValueError(f"{what}: input image too small (feature map would be {size}x{size})")
    return size


# --------------------------------------------------------------------------- #
# Small models
# --------------------------------------------------------------------------- #


@_register("mlp", (1, 28, 28), 10, "MLP 784-1024-1024-10")
def mlp(num_classes: int, input_shape: Shape3) -> Module:
    c, h, w = input_shape
    return Sequential(
        Flatten(),
        Linear(c * h * w, 1024),
        ReLU(),
        Linear(1024, 1024),
        ReLU(),
        Linear(1024, num_classes),
    )


@_register("lenet5", (1, 28, 28), 10, "LeNet-5 (Tanh, AvgPool2d)")
def lenet5(num_classes: int, input_shape: Shape3) -> Module:
    c, h, w = input_shape
    fh = _spatial("lenet5", (h // 2 - 4) // 2)
    fw = _spatial("lenet5", (w // 2 - 4) // 2)
    return Sequential(
        Conv2d(c, 6, 5, padding=2),
        Tanh(),
        AvgPool2d(2),
        Conv2d(6, 16, 5),
        Tanh(),
        AvgPool2d(2),
        Flatten(),
        Linear(16 * fh * fw, 120),
        Tanh(),
        Linear(120, 84),
        Tanh(),
        Linear(84, num_classes),
    )


def _conv_bn_relu(cin: int, cout: int) -> list[Module]:
    return [Conv2d(cin, cout, 3, padding=1, bias=False), BatchNorm2d(cout), ReLU()]


@_register("fashion_cnn", (1, 28, 28), 10, "small CNN for Fashion-MNIST")
def fashion_cnn(num_classes: int, input_shape: Shape3) -> Module:
    c, h, w = input_shape
    fh, fw = _spatial("fashion_cnn", h // 4), _spatial("fashion_cnn", w // 4)
    return Sequential(
        *_conv_bn_relu(c, 32),
        MaxPool2d(2),
        *_conv_bn_relu(32, 64),
        MaxPool2d(2),
        Flatten(),
        Linear(64 * fh * fw, 128),
        ReLU(),
        Dropout(0.5),
        Linear(128, num_classes),
    )


# --------------------------------------------------------------------------- #
# VGG
# --------------------------------------------------------------------------- #

VGG_CFGS: dict[str, list[int | str]] = {
    "vgg11": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "vgg16": [
        64,
        64,
        "M",
        128,
        128,
        "M",
        256,
        256,
        256,
        "M",
        512,
        512,
        512,
        "M",
        512,
        512,
        512,
        "M",
    ],
}

_TV_CONV_INIT = kaiming_normal(mode="fan_out", nonlinearity="relu")


def _vgg_features(
    cfg: Sequence[int | str], in_channels: int, bias: bool, conv_init: InitArg
) -> list[Module]:
    layers: list[Module] = []
    c = in_channels
    for v in cfg:
        if v == "M":
            layers.append(MaxPool2d(2, 2))
        else:
            assert isinstance(v, int)
            bias_init = Init.zeros() if conv_init is not None else None
            layers += [
                Conv2d(c, v, 3, padding=1, bias=bias, weight_init=conv_init, bias_init=bias_init),
                BatchNorm2d(v),
                ReLU(inplace=True),
            ]
            c = v
    return layers


def _vgg_cifar(cfg: Sequence[int | str], num_classes: int, input_shape: Shape3) -> Module:
    c, h, w = input_shape
    fh, fw = _spatial("vgg", h // 32), _spatial("vgg", w // 32)
    return Sequential(
        *_vgg_features(cfg, c, bias=False, conv_init=None),
        Flatten(),
        Linear(512 * fh * fw, num_classes),
    )


@_register("vgg11c", (3, 32, 32), 10, "VGG-11-BN for CIFAR")
def vgg11c(num_classes: int, input_shape: Shape3) -> Module:
    return _vgg_cifar(VGG_CFGS["vgg11"], num_classes, input_shape)


@_register("vgg16c", (3, 32, 32), 10, "VGG-16-BN for CIFAR")
def vgg16c(num_classes: int, input_shape: Shape3) -> Module:
    return _vgg_cifar(VGG_CFGS["vgg16"], num_classes, input_shape)


class VGG(Module):
    """torchvision VGG with batch norm (``vgg*_bn``), including its initialization."""

    def __init__(
        self,
        cfg: Sequence[int | str],
        num_classes: int = 1000,
        *,
        in_channels: int = 3,
        dropout: float = 0.5,
    ) -> None:
        super().__init__()
        self.features = Sequential(
            *_vgg_features(cfg, in_channels, bias=True, conv_init=_TV_CONV_INIT)
        )
        self.avgpool = AdaptiveAvgPool2d((7, 7))

        def fc(i: int, o: int) -> Linear:
            return Linear(i, o, weight_init=Init.normal(0.01), bias_init=Init.zeros())

        self.classifier = Sequential(
            fc(512 * 7 * 7, 4096),
            ReLU(True),
            Dropout(dropout),
            fc(4096, 4096),
            ReLU(True),
            Dropout(dropout),
            fc(4096, num_classes),
        )

    def forward(self, x: Value) -> Value:
        x = self.features(x)
        x = self.avgpool(x)
        x = F.flatten(x)
        return self.classifier(x)


@_register("vgg11", (3, 224, 224), 1000, "torchvision vgg11_bn")
def vgg11(num_classes: int, input_shape: Shape3) -> Module:
    return VGG(VGG_CFGS["vgg11"], num_classes, in_channels=input_shape[0])


@_register("vgg16", (3, 224, 224), 1000, "torchvision vgg16_bn")
def vgg16(num_classes: int, input_shape: Shape3) -> Module:
    return VGG(VGG_CFGS["vgg16"], num_classes, in_channels=input_shape[0])


# --------------------------------------------------------------------------- #
# ResNet
# --------------------------------------------------------------------------- #


class ResNet(Module):
    """torchvision ResNet (v1.5).

    ``cifar_stem`` replaces the 7x7/2 stem conv and the max pool with one 3x3/1 conv.
    """

    maxpool: MaxPool2d | None

    def __init__(
        self,
        block: type[BasicBlock] | type[Bottleneck],
        layers: Sequence[int],
        num_classes: int = 1000,
        *,
        in_channels: int = 3,
        cifar_stem: bool = False,
        conv_init: InitArg = None,
    ) -> None:
        super().__init__()
        self.inplanes = 64
        self.conv_init = conv_init
        if cifar_stem:
            self.conv1 = Conv2d(in_channels, 64, 3, 1, 1, bias=False, weight_init=conv_init)
        else:
            self.conv1 = Conv2d(in_channels, 64, 7, 2, 3, bias=False, weight_init=conv_init)
        self.bn1 = BatchNorm2d(64)
        self.relu = ReLU(inplace=True)
        self.maxpool = None if cifar_stem else MaxPool2d(3, 2, 1)
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], stride=2)
        self.layer3 = self._make_layer(block, 256, layers[2], stride=2)
        self.layer4 = self._make_layer(block, 512, layers[3], stride=2)
        self.avgpool = AdaptiveAvgPool2d(1)
        self.fc = Linear(512 * block.expansion, num_classes)

    def _make_layer(
        self, block: type[BasicBlock] | type[Bottleneck], planes: int, blocks: int, stride: int = 1
    ) -> Sequential:
        layers: list[Module] = []
        for i in range(blocks):
            layers.append(
                block(self.inplanes, planes, stride if i == 0 else 1, conv_init=self.conv_init)
            )
            self.inplanes = planes * block.expansion
        return Sequential(*layers)

    def forward(self, x: Value) -> Value:
        x = self.relu(self.bn1(self.conv1(x)))
        if self.maxpool is not None:
            x = self.maxpool(x)
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)
        x = self.layer4(x)
        x = self.avgpool(x)
        x = F.flatten(x)
        return self.fc(x)


_RESNETS: dict[str, tuple[type[BasicBlock] | type[Bottleneck], tuple[int, int, int, int]]] = {
    "resnet18": (BasicBlock, (2, 2, 2, 2)),
    "resnet34": (BasicBlock, (3, 4, 6, 3)),
    "resnet50": (Bottleneck, (3, 4, 6, 3)),
}


def _resnet_builder(arch: str, cifar: bool) -> Builder:
    block, layers = _RESNETS[arch]

    def builder(num_classes: int, input_shape: Shape3) -> Module:
        return ResNet(
            block,
            layers,
            num_classes,
            in_channels=input_shape[0],
            cifar_stem=cifar,
            conv_init=None if cifar else _TV_CONV_INIT,
        )

    builder.__name__ = arch + ("c" if cifar else "")
    builder.__doc__ = f"{'CIFAR ' if cifar else 'torchvision '}{arch}"
    return builder


for _arch in _RESNETS:
    _register(_arch + "c", (3, 32, 32), 10, f"ResNet-{_arch[6:]} for CIFAR")(
        _resnet_builder(_arch, cifar=True)
    )
for _arch in _RESNETS:
    _register(_arch, (3, 224, 224), 1000, f"torchvision {_arch}")(
        _resnet_builder(_arch, cifar=False)
    )


# --------------------------------------------------------------------------- #
# Command line
# --------------------------------------------------------------------------- #


def _list_models() -> str:
    rows = [("name", "input", "classes", "params", "description")]
    for info in MODELS.values():
        c, h, w = info.input_shape
        rows.append(
            (
                info.name,
                f"{c}x{h}x{w}",
                str(info.num_classes),
                f"{info.build().num_parameters():,}",
                info.description,
            )
        )
    return "\n".join(format_table(rows, "<<>>"))


def _floats(text: str) -> list[float]:
    """``0.49,0.48,0.45`` as floats (argparse type of --mean and --std)."""
    try:
        return [float(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated numbers (one per channel), got {text!r}"
        ) from None


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m rn.models",
        description="Emit a zoo model (forward + loss) as rn-dialect MLIR.",
    )
    p.add_argument("name", nargs="?", metavar="NAME", help=f"model: {', '.join(MODELS)}")
    p.add_argument(
        "--list", action="store_true", help="list the models with defaults and parameter counts"
    )
    p.add_argument("--batch", type=int, default=256, help="batch size (default 256)")
    p.add_argument("--image", type=int, help="image height and width (default: the model's)")
    p.add_argument("--channels", type=int, help="input channels (default: the model's)")
    p.add_argument("--classes", type=int, help="number of classes (default: the model's)")
    p.add_argument(
        "--dtype", default="f32", choices=DTYPES, help="float element type (default f32)"
    )
    p.add_argument(
        "--input-dtype",
        default="float",
        choices=INPUT_DTYPES,
        help="the images input: float (normalized on the host, the default) or uint8 (raw "
        "pixels, normalized on the device with --mean and --std)",
    )
    p.add_argument(
        "--mean",
        type=_floats,
        metavar="M,...",
        help="per-channel mean of the pixels in [0, 1] (with --input-dtype uint8)",
    )
    p.add_argument(
        "--std",
        type=_floats,
        metavar="S,...",
        help="per-channel standard deviation of the pixels in [0, 1] (with --input-dtype uint8)",
    )
    p.add_argument("-o", "--output", default="-", help="output file ('-' for stdout, the default)")
    p.add_argument("--summary", action="store_true", help="print a per-layer table to stderr")
    p.add_argument(
        "--label-smoothing",
        type=float,
        default=0.0,
        help="label smoothing of the cross-entropy loss (default 0)",
    )

    t = p.add_argument_group(
        "training",
        "Run rn-opt --rn-build-training (rn-opt: env RN_OPT, build/bin/rn-opt or PATH). "
        "The options below need --train or --print-pass-options; defaults are the pass's.",
    )
    t.add_argument(
        "--train", action="store_true", help="write the training module instead of the model"
    )
    t.add_argument(
        "--print-pass-options",
        action="store_true",
        help="print the rn-opt pass argument and exit",
    )
    # One flag per TrainingOptions field (the compiler's option list), with
    # its help and default. None means "not given": main() rejects given
    # options without --train/--print-pass-options. Without a compiler to
    # list them, models are still emitted and --train says why it cannot be.
    try:
        option_fields = fields(training.TrainingOptions)
    except NativeUnavailable as e:
        option_fields = ()
        p.set_defaults(no_training_options=str(e))
    for f in option_fields:
        flag = "--" + f.name.replace("_", "-")
        help_text = f"{f.metadata['help']} (default {format_option(f.default)})"
        if isinstance(f.default, bool):
            t.add_argument(flag, action="store_const", const=True, help=help_text)
        elif f.metadata["choices"]:
            t.add_argument(flag, choices=f.metadata["choices"], help=help_text)
        else:
            t.add_argument(flag, type=type(f.default), help=help_text)
    return p


def _training_options(
    parser: argparse.ArgumentParser, args: argparse.Namespace
) -> training.TrainingOptions | None:
    """The TrainingOptions given on the command line (None without --train/--print-pass-options)."""
    if hasattr(args, "no_training_options"):  # no compiler to list them
        if args.train or args.print_pass_options:
            parser.error(args.no_training_options)
        return None
    given = {
        f.name: getattr(args, f.name)
        for f in fields(training.TrainingOptions)
        if getattr(args, f.name) is not None
    }
    if not (args.train or args.print_pass_options):
        if given:
            flag = "--" + next(iter(given)).replace("_", "-")
            parser.error(f"{flag} needs --train or --print-pass-options")
        return None
    try:
        return training.TrainingOptions(**given)
    except ValueError as e:
        parser.error(str(e))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m rn.models``."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.list:
        print(_list_models())
        return 0
    options = _training_options(parser, args)
    if args.print_pass_options:
        assert options is not None
        print(options.pass_argument())
        return 0
    if args.name is None:
        parser.error(f"a model name is required (one of: {', '.join(MODELS)})")
    if args.name not in MODELS:
        parser.error(f"unknown model {args.name!r} (choose from: {', '.join(MODELS)})")
    info = MODELS[args.name]
    c, h, w = info.input_shape
    if args.channels is not None:
        c = args.channels
    if args.image is not None:
        h = w = args.image
    try:
        result = trace(
            args.name,
            batch=args.batch,
            num_classes=args.classes,
            input_shape=(c, h, w),
            dtype=args.dtype,
            label_smoothing=args.label_smoothing,
            input_dtype=args.input_dtype,
            mean=args.mean,
            std=args.std,
        )
    except ValueError as e:
        print(f"{parser.prog}: error: {e}", file=sys.stderr)
        return 1
    if args.summary:
        print(result.summary(), file=sys.stderr)
    text = result.text
    if options is not None:
        try:
            text = build_training(text, options)
        except (OSError, RuntimeError) as e:
            print(f"{parser.prog}: error: {e}", file=sys.stderr)
            return 1
    if args.output == "-":
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except BrokenPipeError:  # e.g. piped into `head`
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the flush at exit
            return 1
    else:
        Path(args.output).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
