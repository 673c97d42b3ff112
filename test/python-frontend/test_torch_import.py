"""PyTorch models into RN and their weights back (rn.from_torch, copy_from/copy_to).

From the same weights, RN's evaluation logits equal PyTorch's ``model.eval()``
forward, and one training step (SGD with momentum, same lr and batch) gives
PyTorch's loss, updated parameters and running statistics, on the CPU
executor. "Equal" is the zoo criterion: within a few times what perturbing
PyTorch's own parameters by a relative 1e-6 moves PyTorch's result, in f32.
Weights go torch -> RN -> torch bit for bit; every refusal names the module.

Needs torch (CI runs this file with Debian's python3-torch under
/usr/bin/python3, RN_REQUIRE_TORCH=1); skipped without it otherwise.
"""

from __future__ import annotations

import copy
import os
import re
from pathlib import Path
from typing import Any

import pytest

if os.environ.get("RN_REQUIRE_TORCH") == "1":
    import torch
else:
    torch = pytest.importorskip("torch")

import numpy as np  # noqa: E402 - torch brings numpy
import torch.nn as tnn  # noqa: E402
import torch.nn.functional as tf  # noqa: E402

import rn  # noqa: E402
from rn import _safetensors, models, torch_import  # noqa: E402
from rn.compiler import find_rn_compile  # noqa: E402

REQUIRE = os.environ.get("RN_REQUIRE_TOOLS") == "1" or os.environ.get("RN_REQUIRE_TORCH") == "1"


def _missing(what: str) -> None:
    if REQUIRE:
        pytest.fail(what + " (RN_REQUIRE_TOOLS/RN_REQUIRE_TORCH=1)")
    pytest.skip(what)


@pytest.fixture(scope="session")
def compiler() -> str:
    found = find_rn_compile()
    if found is None:
        _missing("rn-compile not found")
    try:
        rn.trainer._native_module()
    except rn.NativeUnavailable as e:
        _missing(f"rn._native unavailable: {e}")
    return str(found)


# --------------------------------------------------------------------------- #
# The zoo's models as torch modules, and torchvision's
# --------------------------------------------------------------------------- #


def mlp() -> tnn.Module:
    return tnn.Sequential(
        tnn.Flatten(), tnn.Linear(784, 1024), tnn.ReLU(), tnn.Linear(1024, 1024), tnn.ReLU(),
        tnn.Linear(1024, 10),
    )


def lenet5() -> tnn.Module:
    return tnn.Sequential(
        tnn.Conv2d(1, 6, 5, padding=2), tnn.Tanh(), tnn.AvgPool2d(2), tnn.Conv2d(6, 16, 5),
        tnn.Tanh(), tnn.AvgPool2d(2), tnn.Flatten(), tnn.Linear(16 * 5 * 5, 120), tnn.Tanh(),
        tnn.Linear(120, 84), tnn.Tanh(), tnn.Linear(84, 10),
    )


def _cbr(cin: int, cout: int) -> list[tnn.Module]:
    return [tnn.Conv2d(cin, cout, 3, padding=1, bias=False), tnn.BatchNorm2d(cout), tnn.ReLU()]


def fashion_cnn(dropout: float = 0.0) -> tnn.Module:
    return tnn.Sequential(
        *_cbr(1, 32), tnn.MaxPool2d(2), *_cbr(32, 64), tnn.MaxPool2d(2), tnn.Flatten(),
        tnn.Linear(64 * 7 * 7, 128), tnn.ReLU(), tnn.Dropout(dropout), tnn.Linear(128, 10),
    )


class BasicBlock(tnn.Module):
    """resnet18c's block, written as a CIFAR ResNet usually is (functional relu, x + shortcut)."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = tnn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = tnn.BatchNorm2d(cout)
        self.conv2 = tnn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = tnn.BatchNorm2d(cout)
        self.shortcut = tnn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = tnn.Sequential(
                tnn.Conv2d(cin, cout, 1, stride, bias=False), tnn.BatchNorm2d(cout)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = tf.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return tf.relu(y + self.shortcut(x))


def resnet18c(width: int = 16) -> tnn.Module:
    layers: list[tnn.Module] = _cbr(3, width)
    cin = width
    for cout, stride in [(width, 1), (width, 1), (2 * width, 2), (2 * width, 1), (4 * width, 2),
                         (4 * width, 1), (8 * width, 2), (8 * width, 1)]:
        layers.append(BasicBlock(cin, cout, stride))
        cin = cout
    return tnn.Sequential(*layers, tnn.AdaptiveAvgPool2d(1), tnn.Flatten(), tnn.Linear(cin, 10))


def vgg11c() -> tnn.Module:
    layers: list[tnn.Module] = []
    cin = 3
    for v in [16, "M", 32, "M", 64, 64, "M", 128, 128, "M", 128, 128, "M"]:
        if v == "M":
            layers.append(tnn.MaxPool2d(2))
        else:
            layers += _cbr(cin, int(v))
            cin = int(v)
    return tnn.Sequential(*layers, tnn.Flatten(), tnn.Linear(cin, 10))


class Activations(tnn.Module):
    """Every imported activation, as modules and as functions."""

    def __init__(self) -> None:
        super().__init__()
        self.convs = tnn.ModuleList(tnn.Conv2d(c, 8, 3, padding=1) for c in (1, 8, 8, 8, 8, 8, 8))
        self.acts = tnn.ModuleList([tnn.Hardswish(), tnn.Hardsigmoid(), tnn.Sigmoid(),
                                    tnn.Hardtanh(-0.5, 0.25), tnn.ReLU6(), tnn.GELU(),
                                    tnn.GELU(approximate="tanh")])
        self.fc = tnn.Linear(8 * 7 * 7, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for conv, act in zip(self.convs, self.acts):
            x = act(conv(x))
        x = tf.relu6(tf.hardswish(x)) + tf.hardtanh(torch.sigmoid(x), -0.2, 0.6)
        x = tf.hardsigmoid(tf.gelu(x, approximate="tanh") + tf.gelu(x)).sigmoid()
        return self.fc(tf.max_pool2d(x, 4).flatten(1))


class PartialPools(tnn.Module):
    """PyTorch's partial windows: ceil_mode=True max and average pooling (GoogLeNet's
    MaxPool2d(3, 2, ceil_mode=True): 16 -> 8, floor mode 7) and count_include_pad=False,
    as modules and as functions."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = tnn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = tnn.Conv2d(8, 8, 3, padding=1)
        self.excl = tnn.AvgPool2d(3, 1, 1, count_include_pad=False)  # 8 -> 8
        self.ceil_excl = tnn.AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False)  # 8 -> 5
        self.ceil_max = tnn.MaxPool2d(2, ceil_mode=True)  # 5 -> 3
        self.fc = tnn.Linear(8 * 2 * 2, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = tf.max_pool2d(tf.relu(self.conv1(x)), 3, 2, ceil_mode=True)  # 16 -> 8
        x = self.ceil_excl(tf.relu(self.conv2(self.excl(x))))
        x = tf.avg_pool2d(self.ceil_max(x), 2, ceil_mode=True)  # 3 -> 2, windows of 2 and 1
        return self.fc(x.flatten(1))


def torchvision_resnet18() -> tnn.Module:
    torchvision = pytest.importorskip("torchvision")
    return torchvision.models.resnet18(num_classes=10)


def _torchvision(name: str) -> tnn.Module:
    torchvision = pytest.importorskip("torchvision")
    m = getattr(torchvision.models, name)(num_classes=10)
    for mod in m.modules():  # dropout and stochastic depth off for the comparison
        if isinstance(mod, tnn.Dropout) or type(mod).__name__ == "StochasticDepth":
            mod.p = 0.0
    return m


def torchvision_mobilenet_v2() -> tnn.Module:
    return _torchvision("mobilenet_v2")


def torchvision_mobilenet_v3_small() -> tnn.Module:
    return _torchvision("mobilenet_v3_small")


def torchvision_efficientnet_b0() -> tnn.Module:
    return _torchvision("efficientnet_b0")


def torchvision_convnext_tiny() -> tnn.Module:
    m = _torchvision("convnext_tiny")
    g = torch.Generator().manual_seed(7)
    with torch.no_grad():  # a visible layer scale: its default 1e-6 hides the blocks
        for name, p in m.named_parameters():
            if name.endswith("layer_scale"):
                p.copy_(0.1 + 0.05 * torch.randn(p.shape, generator=g))
    return m


def _he_init(m: tnn.Module, seed: int = 7) -> tnn.Module:
    """He-normal convolution and linear weights (std sqrt(2 / fan_in)): with torchvision's own
    initialization GoogLeNet's activations vanish (its logits are its classifier's bias, to the
    last bit) and ShuffleNet's nearly do, so a comparison would not see their bodies."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, (tnn.Conv2d, tnn.Linear)):
                fan_in = mod.weight[0].numel()
                mod.weight.copy_(torch.randn(mod.weight.shape, generator=g)
                                 * float(np.sqrt(2.0 / fan_in)))
    return m


def torchvision_googlenet() -> tnn.Module:
    """GoogLeNet without its auxiliary classifiers (as the survey builds it): torch.cat of four
    branches, ceil-mode pools."""
    torchvision = pytest.importorskip("torchvision")
    m = torchvision.models.googlenet(num_classes=10, aux_logits=False, init_weights=True,
                                     dropout=0.0)
    return _he_init(m)


def torchvision_shufflenet_v2_x0_5() -> tnn.Module:
    """ShuffleNet v2: x.chunk(2, dim=1) unpacked, torch.cat, torchvision's channel_shuffle,
    traced with the input's shapes fixed (at batch 2; compared at batch 4)."""
    return _he_init(_torchvision("shufflenet_v2_x0_5"))


def convnext_blocks() -> tnn.Module:
    """torchvision's ConvNeXt with two small stages (widths 8 and 16, one block each): its
    CNBlock (depthwise 7x7, Permute to channels-last, LayerNorm, Linear, GELU, Linear, Permute
    back, the [C, 1, 1] layer scale, StochasticDepth at 0) and LayerNorm2d (a LayerNorm between
    permutes) in the stem, the downsampling and the head. Layer scale and LayerNorm parameters
    are random, so that each one's mapping matters."""
    convnext = pytest.importorskip("torchvision.models.convnext")
    m = convnext.ConvNeXt(
        [convnext.CNBlockConfig(8, 16, 1), convnext.CNBlockConfig(16, None, 1)],
        stochastic_depth_prob=0.0, layer_scale=0.5, num_classes=10,
    )
    g = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name.endswith("layer_scale"):
                p.copy_(0.5 + 0.3 * torch.randn(p.shape, generator=g))
        for mod in m.modules():
            if isinstance(mod, tnn.LayerNorm):
                mod.weight.copy_(1 + 0.2 * torch.randn(mod.weight.shape, generator=g))
                mod.bias.copy_(0.1 * torch.randn(mod.bias.shape, generator=g))
            if isinstance(mod, (tnn.Linear, tnn.Conv2d)):  # ConvNeXt's std 0.02 is too quiet
                mod.weight.copy_(torch.randn(mod.weight.shape, generator=g)
                                 / float(np.sqrt(mod.weight[0].numel())))
                if mod.bias is not None:
                    mod.bias.copy_(0.1 * torch.randn(mod.bias.shape, generator=g))
    return m


# timm's BatchNormAct2d (timm/layers/norm_act.py) and Linear (timm/layers/linear.py) as timm
# writes them, in a module named like timm's (timm is not installed here): a BatchNorm2d
# subclass whose forward reads x.ndim and then applies its drop and act members, and a Linear
# whose forward reads its weight directly; the importer maps both whole (tracing them fails).
_TIMM_NORM_ACT = """
import torch
import torch.nn.functional as F


class BatchNormAct2d(torch.nn.BatchNorm2d):
    def __init__(self, num_features, act_layer=torch.nn.ReLU, apply_act=True, drop_layer=None):
        super().__init__(num_features)
        self.drop = drop_layer() if drop_layer is not None else torch.nn.Identity()
        self.act = act_layer(inplace=True) if apply_act else torch.nn.Identity()

    def forward(self, x):
        assert x.ndim == 4, f"expected 4D input (got {x.ndim}D input)"
        if self.training and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
        x = F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                         self.training, self.momentum, self.eps)
        return self.act(self.drop(x))


class Linear(torch.nn.Linear):  # timm/layers/linear.py
    def forward(self, input):
        if torch.jit.is_scripting():
            bias = self.bias.to(dtype=input.dtype) if self.bias is not None else None
            return F.linear(input, self.weight.to(dtype=input.dtype), bias=bias)
        return F.linear(input, self.weight, self.bias)
"""


def timm_norm_act(drop_layer: Any = None) -> tnn.Module:
    norm_act = _module_from_source("timm.layers.norm_act", _TIMM_NORM_ACT)
    return tnn.Sequential(
        tnn.Conv2d(3, 8, 3, padding=1, bias=False), norm_act.BatchNormAct2d(8, tnn.SiLU),
        # timm's avg_down (ResNet-D): ceil mode where every window is whole (16 -> 8 -> 4)
        tnn.AvgPool2d(2, 2, ceil_mode=True, count_include_pad=False),
        tnn.MaxPool2d(2, ceil_mode=True),
        tnn.Conv2d(8, 8, 3, padding=1, bias=False),
        norm_act.BatchNormAct2d(8, tnn.ReLU, drop_layer=drop_layer),
        tnn.Conv2d(8, 8, 1, bias=False), norm_act.BatchNormAct2d(8, apply_act=False),
        tnn.AdaptiveAvgPool2d(1), tnn.Flatten(), norm_act.Linear(8, 10),
    )


def _bn_relu_conv(cin: int, cout: int, k: int) -> tnn.Sequential:
    return tnn.Sequential(tnn.BatchNorm2d(cin), tnn.ReLU(),
                          tnn.Conv2d(cin, cout, k, padding=k // 2, bias=False))


class DenseUnit(tnn.Module):
    """DenseNet's dense block and transition, written out: each layer reads the concatenation
    of every earlier feature map (torch.cat of a list, along dim 1; a list of one is the
    identity), then a transition halves the channels and the size."""

    def __init__(self, cin: int = 8, growth: int = 4, layers: int = 3) -> None:
        super().__init__()
        self.stem = tnn.Conv2d(3, cin, 3, padding=1, bias=False)
        self.layers = tnn.ModuleList(
            tnn.Sequential(_bn_relu_conv(cin + i * growth, 2 * growth, 1),
                           _bn_relu_conv(2 * growth, growth, 3))
            for i in range(layers)
        )
        width = cin + layers * growth
        self.transition = tnn.Sequential(_bn_relu_conv(width, width // 2, 1), tnn.AvgPool2d(2))
        self.fc = tnn.Linear(width // 2, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = [self.stem(x)]
        for layer in self.layers:
            features.append(layer(torch.cat(features, 1)))
        y = self.transition(torch.cat(features, dim=1))
        return self.fc(tf.adaptive_avg_pool2d(tf.relu(y), 1).flatten(1))


class Fire(tnn.Module):
    """SqueezeNet's Fire module: a 1x1 squeeze, then 1x1 and 3x3 expansions concatenated."""

    def __init__(self, cin: int, squeeze: int, expand: int) -> None:
        super().__init__()
        self.squeeze = tnn.Conv2d(cin, squeeze, 1)
        self.expand1x1 = tnn.Conv2d(squeeze, expand, 1)
        self.expand3x3 = tnn.Conv2d(squeeze, expand, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = tf.relu(self.squeeze(x))
        return torch.cat([tf.relu(self.expand1x1(x)), tf.relu(self.expand3x3(x))], 1)


def fire_net() -> tnn.Module:
    """A small SqueezeNet: ceil-mode pools, two Fire modules, a convolutional classifier."""
    return tnn.Sequential(
        tnn.Conv2d(3, 16, 3, stride=2), tnn.ReLU(), tnn.MaxPool2d(3, 2, ceil_mode=True),
        Fire(16, 4, 8), Fire(16, 6, 12), tnn.MaxPool2d(3, 2, ceil_mode=True),
        tnn.Conv2d(24, 10, 1), tnn.ReLU(), tnn.AdaptiveAvgPool2d((1, 1)), tnn.Flatten(),
    )


def _channel_shuffle(x: torch.Tensor, groups: int) -> torch.Tensor:
    """torchvision's channel_shuffle (shufflenetv2.py) as written there: fx cannot trace the
    unpacking of x.size() symbolically."""
    batchsize, num_channels, height, width = x.size()
    channels_per_group = num_channels // groups
    x = x.view(batchsize, groups, channels_per_group, height, width)
    x = torch.transpose(x, 1, 2).contiguous()
    return x.view(batchsize, -1, height, width)


class ShuffleUnit(tnn.Module):
    """ShuffleNet v2's units: a downsampling one (two branches concatenated), a basic one
    (x.chunk(2, dim=1) unpacked, one half through a branch, concatenated back), each then
    shuffled as torchvision does; then an uneven torch.split and a shuffle written with
    reshape, permute and flatten (3 groups)."""

    def __init__(self, cin: int = 6, width: int = 12) -> None:
        super().__init__()
        half = width // 2

        def branch(c_in: int, stride: int) -> tnn.Sequential:
            return tnn.Sequential(
                tnn.Conv2d(c_in, half, 1, bias=False), tnn.BatchNorm2d(half), tnn.ReLU(),
                tnn.Conv2d(half, half, 3, stride, 1, groups=half, bias=False),
                tnn.BatchNorm2d(half), tnn.Conv2d(half, half, 1, bias=False),
                tnn.BatchNorm2d(half), tnn.ReLU(),
            )

        self.stem = tnn.Conv2d(3, cin, 3, padding=1, bias=False)
        self.down1 = tnn.Sequential(tnn.Conv2d(cin, cin, 3, 2, 1, groups=cin, bias=False),
                                    tnn.BatchNorm2d(cin), tnn.Conv2d(cin, half, 1, bias=False),
                                    tnn.BatchNorm2d(half), tnn.ReLU())
        self.down2 = branch(cin, 2)
        self.basic = branch(half, 1)
        self.side = tnn.Conv2d(5, 5, 3, padding=1)
        self.fc = tnn.Linear(width, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        x = _channel_shuffle(torch.cat((self.down1(x), self.down2(x)), dim=1), 2)
        x1, x2 = x.chunk(2, dim=1)
        x = _channel_shuffle(torch.cat((x1, self.basic(x2)), dim=1), 2)
        a, b = torch.split(x, [7, 5], dim=1)
        x = torch.cat([a, self.side(b)], 1)
        n, c, h, w = x.shape
        x = x.reshape(n, 3, c // 3, h, w).permute(0, 2, 1, 3, 4).flatten(1, 2)
        return self.fc(x.mean((2, 3)))


MODELS: dict[str, tuple[Any, tuple[int, int, int]]] = {
    "mlp": (mlp, (1, 28, 28)),
    "lenet5": (lenet5, (1, 28, 28)),
    "fashion_cnn": (fashion_cnn, (1, 28, 28)),
    "activations": (Activations, (1, 28, 28)),
    "resnet18c": (resnet18c, (3, 32, 32)),
    "vgg11c": (vgg11c, (3, 32, 32)),
    "timm_norm_act": (timm_norm_act, (3, 16, 16)),
    "partial_pools": (PartialPools, (3, 16, 16)),
    "torchvision_resnet18": (torchvision_resnet18, (3, 64, 64)),
    "torchvision_mobilenet_v2": (torchvision_mobilenet_v2, (3, 64, 64)),
    "torchvision_mobilenet_v3_small": (torchvision_mobilenet_v3_small, (3, 64, 64)),
    "torchvision_efficientnet_b0": (torchvision_efficientnet_b0, (3, 64, 64)),
    "convnext_blocks": (convnext_blocks, (3, 32, 32)),
    "torchvision_convnext_tiny": (torchvision_convnext_tiny, (3, 64, 64)),
    "dense_unit": (DenseUnit, (3, 16, 16)),
    "fire_net": (fire_net, (3, 32, 32)),
    "shuffle_unit": (ShuffleUnit, (3, 16, 16)),
    "torchvision_googlenet": (torchvision_googlenet, (3, 64, 64)),
    "torchvision_shufflenet_v2_x0_5": (torchvision_shufflenet_v2_x0_5, (3, 64, 64)),
}
BATCH = 4


def _module(name: str, seed: int = 0) -> tnn.Module:
    torch.manual_seed(seed)
    m = MODELS[name][0]()
    # Non-trivial BN statistics and affine parameters, so the mapping of each matters.
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, tnn.BatchNorm2d):
                c = mod.num_features
                mod.weight.copy_(1 + 0.2 * torch.randn(c, generator=g))
                mod.bias.copy_(0.1 * torch.randn(c, generator=g))
                mod.running_mean.copy_(0.1 * torch.randn(c, generator=g))
                mod.running_var.copy_(1 + 0.3 * torch.rand(c, generator=g))
    return m


def _batch(name: str, seed: int = 3) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    shape = MODELS[name][1]
    return torch.randn(BATCH, *shape, generator=g), torch.randint(0, 10, (BATCH,), generator=g)


def _perturbed(m: tnn.Module, seed: int = 11) -> tnn.Module:
    """A copy of ``m`` whose parameters moved by a relative 1e-6 (random signs)."""
    p = copy.deepcopy(m)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for t in p.parameters():
            sign = torch.randint(0, 2, t.shape, generator=g).float() * 2 - 1
            t.mul_(1 + 1e-6 * sign)
    return p


def _bound(reference: np.ndarray, perturbed: np.ndarray) -> float:
    """The zoo criterion: 4x the perturbation's effect (with a floor of a few f32 ulps)."""
    moved = float(np.max(np.abs(reference - perturbed)))
    scale = float(np.max(np.abs(reference))) if reference.size else 0.0
    return 4 * moved + 4 * np.finfo(np.float32).eps * scale


def _compile(name: str, m: tnn.Module, tmp: Path, **kwargs: Any) -> Path:
    return rn.compile(
        m, tmp / f"{name}.rnx", batch=BATCH, input_shape=MODELS[name][1], name=name, **kwargs
    )


# --------------------------------------------------------------------------- #
# Layout conversions (no compiler needed)
# --------------------------------------------------------------------------- #


def test_layout_conversions_are_exact_permutations() -> None:
    """Tests that the filter and flatten-order conversions are inverse permutations, and that
    the linear one reorders columns from C, H, W to H, W, C."""
    rng = np.random.default_rng(0)
    conv = torch_import.StateMap("c.weight", "parameter", "oihw_to_ohwi", (8, 3, 5, 7))
    w = rng.standard_normal((8, 3, 5, 7)).astype(np.float32)
    assert conv.to_rn(w).shape == (8, 5, 7, 3)
    assert np.array_equal(conv.to_rn(w)[2, 4, 6, 1], w[2, 1, 4, 6])
    assert np.array_equal(conv.to_torch(conv.to_rn(w)), w)
    lin = torch_import.StateMap("fc.weight", "parameter", "linear_chw_to_hwc", (4, 24), (2, 3, 4))
    v = rng.standard_normal((4, 24)).astype(np.float32)
    r = lin.to_rn(v)
    # RN column (h, w, c) = h*4*2 + w*2 + c holds torch column c*12 + h*4 + w.
    assert r[1, 1 * 8 + 3 * 2 + 1] == v[1, 1 * 12 + 1 * 4 + 3]
    assert np.array_equal(lin.to_torch(r), v)
    mapping = torch_import.TorchMapping((conv, lin), ("bn.num_batches_tracked",), ("unused",))
    assert torch_import.TorchMapping.from_json(mapping.to_json()) == mapping
    with pytest.raises(ValueError, match="c.weight: shape"):
        conv.to_rn(v)


# --------------------------------------------------------------------------- #
# Refusals
# --------------------------------------------------------------------------- #


class _Twice(tnn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = tnn.Conv2d(3, 3, 3, padding=1)
        self.fc = tnn.Linear(3, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(self.conv(x))
        return self.fc(tf.adaptive_avg_pool2d(y, 1).flatten(1))


class _Erf(tnn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = tnn.Linear(3 * 8 * 8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.erf(x).flatten(1))


def _head(*layers: tnn.Module, channels: int = 3) -> tnn.Module:
    return tnn.Sequential(
        tnn.Sequential(*layers), tnn.AdaptiveAvgPool2d(1), tnn.Flatten(), tnn.Linear(channels, 10)
    )


REFUSALS = [
    (_head(tnn.AvgPool2d(2, divisor_override=3)), r"^0\.0 \(AvgPool2d\): divisor_override"),
    (_head(tnn.Conv2d(3, 3, 3, padding=1, padding_mode="reflect")), r"^0\.0 \(Conv2d\): padding_mode='reflect'"),
    (_head(tnn.BatchNorm2d(3, affine=False)), r"^0\.0 \(BatchNorm2d\): affine=False"),
    (_head(tnn.BatchNorm2d(3, track_running_stats=False)), r"^0\.0 \(BatchNorm2d\): track_running_stats=False"),
    (_head(tnn.BatchNorm2d(3, momentum=None)), r"^0\.0 \(BatchNorm2d\): momentum=None"),
    (_head(tnn.Conv2d(3, 3, 3), tnn.LeakyReLU()), r"^0\.1 \(LeakyReLU\): not supported; RN imports modules Conv2d"),
    (_head(tnn.MaxPool2d(3, padding=2)), r"^0\.0 \(MaxPool2d\): .*padding \[2, 2\] must be at most half"),
    (_Twice(), r"^conv \(Conv2d\): called more than once"),
    (_Erf(), r"^function torch\.erf \(graph node erf, File .*test_torch_import\.py"),
    (tnn.Sequential(tnn.Conv2d(3, 2, 3, padding=1), tnn.Flatten()), r"the output is a flattened C x H x W"),
]


@pytest.mark.parametrize("module,message", REFUSALS, ids=[m for _, m in REFUSALS])
def test_unsupported_modules_are_refused_by_path(module: tnn.Module, message: str) -> None:
    """Tests that each attribute value or layer RN does not implement is one
    UnsupportedModelError naming the module path (or function and source line)."""
    with pytest.raises(rn.UnsupportedModelError, match=message):
        rn.from_torch(module, (3, 8, 8))


def _module_from_source(name: str, source: str) -> Any:
    """A Python module named ``name`` made from ``source``: torch.fx.wrap, which keeps a
    function a call in the graph, patches the module that calls it, so a function that
    forward calls must be wrapped in forward's own module."""
    import types

    module = types.ModuleType(name)
    exec(compile(source, name.replace(".", "/") + ".py", "exec"), module.__dict__)
    return module


# A stem convolution, then a residual block whose branch goes through stochastic depth
# (EfficientNet's MBConv in small): torchvision's StochasticDepth module, or its function
# called in forward (wrapped for fx, as a user's module must).
_STOCHASTIC_RESIDUAL = """
import torch
import torch.fx
from torchvision.ops import StochasticDepth, stochastic_depth

torch.fx.wrap("stochastic_depth")


class Residual(torch.nn.Module):
    def __init__(self, p: float, mode: str = "row", functional: bool = False) -> None:
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 3, 3, padding=1)
        self.conv = torch.nn.Conv2d(3, 3, 3, padding=1)
        self.drop = StochasticDepth(p, mode)
        self.functional = functional
        self.fc = torch.nn.Linear(3, 10)

    def forward(self, x):
        h = self.stem(x)
        branch = self.conv(h)
        if self.functional:
            branch = stochastic_depth(branch, self.drop.p, self.drop.mode, self.training)
        else:
            branch = self.drop(branch)
        return self.fc((h + branch).mean((2, 3)))
"""


def _stochastic_residual(p: float, mode: str = "row", functional: bool = False) -> tnn.Module:
    pytest.importorskip("torchvision")
    return _module_from_source("stochastic_residual", _STOCHASTIC_RESIDUAL).Residual(
        p, mode, functional
    )


def _stochastic_depths(m: tnn.Module, shape: tuple[int, int, int] = (3, 8, 8)) -> list[str]:
    """The rn.stochastic_depth ops of ``m``'s import, without their result names."""
    text = rn.emit_model(rn.from_torch(m, shape), batch=BATCH, input_shape=shape,
                         num_classes=10)
    return [ln.split(" = ", 1)[1].strip() for ln in text.splitlines()
            if "rn.stochastic_depth " in ln]


def test_stochastic_depth_imports_as_the_rn_op() -> None:
    """Tests that torchvision's StochasticDepth module imports as rn.stochastic_depth of the
    branch whatever mode the module is in (RN's training step drops, its evaluation step does
    not, as for nn.Dropout), that its function follows its ``training`` argument, and that
    p=0 imports as the identity."""
    assert _stochastic_depths(_stochastic_residual(0.0)) == []
    expected = ["rn.stochastic_depth %5 p 2.000000000e-01 : tensor<4x8x8x3xf32>"]
    for training in (True, False):
        assert _stochastic_depths(_stochastic_residual(0.2).train(training)) == expected, training
    functional = _stochastic_residual(0.2, functional=True)
    assert _stochastic_depths(functional.train()) == expected
    assert _stochastic_depths(functional.eval()) == []
    # p=1 drops every branch (torchvision allows it).
    assert "p 1.000000000e+00" in _stochastic_depths(_stochastic_residual(1.0))[0]


def test_stochastic_depth_batch_mode_is_refused() -> None:
    """Tests that mode='batch' (one draw for the whole batch) is refused with the module's path
    or the function's line when it would drop, and is the identity where torchvision's is."""
    with pytest.raises(rn.UnsupportedModelError,
                       match=r"^drop \(StochasticDepth\): stochastic depth with mode='batch'"):
        rn.from_torch(_stochastic_residual(0.2, "batch"), (3, 8, 8))
    with pytest.raises(
        rn.UnsupportedModelError,
        match=r"^function .*stochastic_depth .*stochastic_residual.py.*mode='batch'",
    ):
        rn.from_torch(_stochastic_residual(0.2, "batch", functional=True).train(), (3, 8, 8))
    assert _stochastic_depths(_stochastic_residual(0.0, "batch")) == []
    assert _stochastic_depths(_stochastic_residual(0.2, "batch", functional=True).eval()) == []


# timm's DropPath and drop_path (timm/layers/drop.py) as timm writes them, in a module named
# like timm's (timm is not installed here): the importer recognizes the class by its name and
# drop_prob, the function by its name and module.
_TIMM_DROP_PATH = """
import torch
import torch.fx


def drop_path(x, drop_prob: float = 0.0, training: bool = False, scale_by_keep: bool = True):
    if drop_prob == 0.0 or not training:
        return x
    keep_prob = 1 - drop_prob
    shape = (x.shape[0],) + (1,) * (x.ndim - 1)
    random_tensor = x.new_empty(shape).bernoulli_(keep_prob)
    if keep_prob > 0.0 and scale_by_keep:
        random_tensor.div_(keep_prob)
    return x * random_tensor


torch.fx.wrap("drop_path")


class DropPath(torch.nn.Module):
    def __init__(self, drop_prob: float = 0.0, scale_by_keep: bool = True):
        super().__init__()
        self.drop_prob = drop_prob
        self.scale_by_keep = scale_by_keep

    def forward(self, x):
        return drop_path(x, self.drop_prob, self.training, self.scale_by_keep)


class Block(torch.nn.Module):
    def __init__(self, drop_prob: float, scale_by_keep: bool = True, functional: bool = False):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 3, 3, padding=1)
        self.conv = torch.nn.Conv2d(3, 3, 3, padding=1)
        self.drop_path = DropPath(drop_prob, scale_by_keep)
        self.functional = functional
        self.fc = torch.nn.Linear(3, 10)

    def forward(self, x):
        h = self.stem(x)
        branch = self.conv(h)
        if self.functional:
            branch = drop_path(branch, self.drop_path.drop_prob, self.training,
                               self.drop_path.scale_by_keep)
        else:
            branch = self.drop_path(branch)
        return self.fc((h + branch).mean((2, 3)))
"""


def test_timm_batch_norm_act_refuses_a_drop_layer() -> None:
    """Tests that a BatchNormAct2d with a drop layer (DropBlock in timm) is refused by path;
    without one it imports (the equality tests run it as model timm_norm_act)."""
    with pytest.raises(rn.UnsupportedModelError,
                       match=r"^5 \(BatchNormAct2d\): drop layer Dropout is not supported"):
        rn.from_torch(timm_norm_act(drop_layer=tnn.Dropout), (3, 16, 16))


def test_timm_drop_path_imports_as_stochastic_depth() -> None:
    """Tests that timm's DropPath module (a leaf of the tracer, whatever its mode) and its
    drop_path function import as rn.stochastic_depth with p=drop_prob, and that
    scale_by_keep=False (kept samples not rescaled) is refused."""
    timm = _module_from_source("timm.layers.drop", _TIMM_DROP_PATH)
    expected = ["rn.stochastic_depth %5 p 1.000000000e-01 : tensor<4x8x8x3xf32>"]
    assert _stochastic_depths(timm.Block(0.1).train()) == expected
    assert _stochastic_depths(timm.Block(0.1).eval()) == expected
    assert _stochastic_depths(timm.Block(0.1, functional=True).train()) == expected
    assert _stochastic_depths(timm.Block(0.1, functional=True).eval()) == []
    assert _stochastic_depths(timm.Block(0.0)) == []
    with pytest.raises(rn.UnsupportedModelError,
                       match=r"^drop_path \(DropPath\): drop path with scale_by_keep=False"):
        rn.from_torch(timm.Block(0.1, scale_by_keep=False), (3, 8, 8))
    with pytest.raises(rn.UnsupportedModelError,
                       match=r"^function timm\.layers\.drop\.drop_path .*scale_by_keep=False"):
        rn.from_torch(timm.Block(0.1, scale_by_keep=False, functional=True).train(), (3, 8, 8))


def test_efficientnet_b0_imports_with_its_stochastic_depth() -> None:
    """Tests that torchvision's efficientnet_b0 with its default stochastic depth (0.2, growing
    linearly over the blocks) imports in train mode: one rn.stochastic_depth per residual
    block whose probability is above 0, with that probability."""
    torchvision = pytest.importorskip("torchvision")
    m = torchvision.models.efficientnet_b0(num_classes=10).train()
    expected = [
        mod.stochastic_depth.p
        for mod in m.modules()
        if type(mod).__name__ == "MBConv" and mod.use_res_connect and mod.stochastic_depth.p > 0
    ]
    assert len(expected) == 9 and max(expected) < 0.2  # 9 of its 16 blocks are residual
    ops = _stochastic_depths(m, (3, 64, 64))
    assert [float(op.split(" p ")[1].split(" ")[0]) for op in ops] == pytest.approx(expected)


def test_mapping_records_layouts_and_counters() -> None:
    """Tests the mapping of state_dict names: conv filters OIHW->OHWI, the linear after a
    spatial flatten reordered (fashion_cnn's 64x7x7), batch counters listed apart."""
    m = rn.from_torch(fashion_cnn(), (1, 28, 28))
    by_name = {e.name: e for e in m.mapping.entries}
    assert by_name["0.weight"].layout == "oihw_to_ohwi"
    assert by_name["0.weight"].rn_shape == (32, 3, 3, 1)
    assert by_name["1.running_var"].role == "buffer"
    assert by_name["9.weight"].layout == "linear_chw_to_hwc" and by_name["9.weight"].chw == (64, 7, 7)
    assert by_name["12.weight"].layout == "same"
    assert m.mapping.batch_counters == ("1.num_batches_tracked", "5.num_batches_tracked")
    assert list(by_name) == [k for k in fashion_cnn().state_dict() if "num_batches" not in k]
    assert m.num_classes == 10
    # resnet18c pools to 1x1 before flattening: no reorder there.
    r = rn.from_torch(resnet18c(), (3, 32, 32))
    assert {e.layout for e in r.mapping.entries if e.name == "13.weight"} == {"same"}


# --------------------------------------------------------------------------- #
# Equal to PyTorch (CPU executor)
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("name", list(MODELS))
def test_evaluation_logits_equal_pytorch(name: str, compiler: str, tmp_path: Path) -> None:
    """Tests that RN's evaluation logits equal PyTorch's eval-mode forward from the same weights."""
    m = _module(name)
    artifact = _compile(name, m, tmp_path)
    trainer = rn.Trainer(artifact, executor="cpu")
    x, _ = _batch(name)
    ours = trainer.predict(x.numpy())
    m.eval()
    with torch.no_grad():
        ref = m(x).numpy()
        moved = _perturbed(m)(x).numpy()
    err = float(np.max(np.abs(ours - ref)))
    assert err <= _bound(ref, moved), f"{name}: max |RN - torch| = {err:.3g}"


# Logits only: ShuffleNet's train-mode step in f32 is outside the zoo bound for PyTorch itself
# (its batch statistics over 4 x 2 x 2 values at the last stage): its loss is 1.0e-5 from
# PyTorch's float64 one, RN's 4.5e-6, the bound 4.9e-6. shuffle_unit checks the step.
_LOGITS_ONLY = ("torchvision_shufflenet_v2_x0_5",)


@pytest.mark.parametrize("name", [n for n in MODELS if n not in _LOGITS_ONLY])
def test_one_training_step_equals_pytorch(name: str, compiler: str, tmp_path: Path) -> None:
    """Tests that one train-mode step (SGD, momentum 0.9) gives PyTorch's loss, updated parameters
    and running statistics; dropout is at p=0 for the comparison."""
    m = _module(name)
    artifact = _compile(name, m, tmp_path, pipeline="optimizer=sgd momentum=0.9")
    trainer = rn.Trainer(artifact, executor="cpu")
    x, y = _batch(name)
    lr = 0.05
    loss = trainer.step(x.numpy(), y.numpy(), lr=lr).loss()
    stepped = copy.deepcopy(m)
    trainer.copy_to(stepped)

    def torch_step(model: tnn.Module) -> tuple[float, dict[str, np.ndarray]]:
        model.train()
        opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
        out = tf.cross_entropy(model(x), y)
        opt.zero_grad()
        out.backward()
        opt.step()
        return float(out), {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}

    ref_loss, ref = torch_step(copy.deepcopy(m))
    moved_loss, moved = torch_step(_perturbed(m))
    assert abs(loss - ref_loss) <= _bound(np.array([ref_loss]), np.array([moved_loss]))
    ours = stepped.state_dict()
    for k, v in ref.items():
        if k.endswith("num_batches_tracked"):
            assert int(ours[k]) == 1, k
            continue
        err = float(np.max(np.abs(ours[k].numpy() - v)))
        assert err <= _bound(v, moved[k]), f"{name} {k}: max |RN - torch| = {err:.3g}"


def test_stochastic_depth_training_drops_whole_samples(compiler: str, tmp_path: Path) -> None:
    """Tests a residual block with StochasticDepth(p=0.5) on the CPU executor: each training
    step's loss is the mean of per-sample losses where every sample either kept its branch,
    scaled by 1 / (1 - p) = 2, or lost all of it (found among the 2^N such masks, computed
    in PyTorch), some steps keep some samples and drop others, the masks change between
    steps, and the evaluation logits are PyTorch's eval-mode ones (the identity)."""
    torch.manual_seed(0)
    m = _stochastic_residual(0.5)
    x = torch.randn(BATCH, 3, 8, 8, generator=torch.Generator().manual_seed(5))
    y = torch.randint(0, 10, (BATCH,), generator=torch.Generator().manual_seed(6))
    artifact = rn.compile(m, tmp_path / "sd.rnx", batch=BATCH, input_shape=(3, 8, 8),
                          name="stochastic_residual", pipeline="optimizer=sgd momentum=0.9")
    trainer = rn.Trainer(artifact, executor="cpu", seed=3)

    with torch.no_grad():
        h = m.stem(x)
        branch = m.conv(h)

        def per_sample(scale: float) -> np.ndarray:
            logits = m.fc((h + scale * branch).mean((2, 3)))
            return tf.cross_entropy(logits, y, reduction="none").double().numpy()

        kept, dropped = per_sample(2.0), per_sample(0.0)
        ref_logits = m.eval()(x).numpy()
    masks = [np.array([(bits >> n) & 1 for n in range(BATCH)], dtype=bool)
             for bits in range(2**BATCH)]
    candidates = np.array([np.where(mask, kept, dropped).mean() for mask in masks])
    gaps = np.abs(candidates[:, None] - candidates[None, :])[~np.eye(len(masks), dtype=bool)]
    tolerance = 1e-5 * float(np.max(np.abs(candidates)))
    assert float(gaps.min()) > 10 * tolerance, "the test's masks are not told apart by the loss"

    drawn = []
    for _ in range(8):  # lr 0: the weights stay, only the masks change
        loss = trainer.step(x.numpy(), y.numpy(), lr=0.0).loss()
        errors = np.abs(candidates - loss)
        best = int(np.argmin(errors))
        assert errors[best] <= tolerance, (
            f"loss {loss} is no mean of whole-sample kept (x2) or dropped losses"
        )
        drawn.append(masks[best])
    assert any(0 < mask.sum() < BATCH for mask in drawn), "no step kept some samples only"
    assert len({mask.tobytes() for mask in drawn}) > 1, "every step drew the same mask"
    ours = trainer.predict(x.numpy())
    assert float(np.max(np.abs(ours - ref_logits))) <= 1e-5 * float(np.max(np.abs(ref_logits)))


# --------------------------------------------------------------------------- #
# Weights in and out
# --------------------------------------------------------------------------- #


def _assert_same_state(a: tnn.Module, b: tnn.Module, counters: int | None = None) -> None:
    sa, sb = a.state_dict(), b.state_dict()
    assert list(sa) == list(sb)
    for k in sa:
        if k.endswith("num_batches_tracked") and counters is not None:
            assert int(sb[k]) == counters, k
        else:
            assert torch.equal(sa[k], sb[k]), k


def test_round_trip_is_bit_exact(compiler: str, tmp_path: Path) -> None:
    """Tests torch -> RN -> torch: the artifact's weights, copied back before any step, equal the
    module's bit for bit, and a weight-free artifact plus copy_from holds the same state."""
    name = "fashion_cnn"
    m = _module(name)
    trainer = rn.Trainer(_compile(name, m, tmp_path), executor="cpu")
    back = _module(name, seed=5)
    trainer.copy_to(back)
    _assert_same_state(m, back, counters=0)

    bare = rn.Trainer(_compile(name, m, tmp_path / "..", weights=False), executor="cpu")
    before = bare.state_dict()
    bare.copy_from(m)
    after = bare.state_dict()
    assert any(not np.array_equal(before[k], after[k]) for k in after), "copy_from changed nothing"
    expected = trainer.state_dict()
    assert all(np.array_equal(expected[k], after[k]) for k in expected)


def test_uint8_images_import_and_round_trip(compiler: str, tmp_path: Path) -> None:
    """Tests a torch module compiled with uint8 images: its weights are the artifact's, the
    normalization buffers come on top (copy_from keeps them, copy_to writes the module's only),
    and a pixel step equals the float model's step on the host-normalized pixels."""
    name = "fashion_cnn"
    m = _module(name)
    mean, std = (0.3,), (0.2,)
    pixels = rn.Trainer(_compile(name, m, tmp_path, input_dtype="uint8", mean=mean, std=std),
                        executor="cpu")
    floats = rn.Trainer(_compile(name, m, tmp_path / ".."), executor="cpu")
    assert pixels.image_dtype == "uint8"
    back = _module(name, seed=5)
    pixels.copy_to(back)
    _assert_same_state(m, back, counters=0)
    pixels.set_input_normalization([0.25], [0.5])
    pixels.copy_from(_module(name, seed=6))
    assert pixels.input_normalization == ([0.25], [0.5])
    pixels.copy_from(m)
    x = np.random.default_rng(1).integers(0, 256, (BATCH, *MODELS[name][1]), dtype=np.uint8)
    y = np.arange(BATCH) % 10
    normalized = (x.astype(np.float32) / np.float32(255) - np.float32(0.25)) * (np.float32(1) / np.float32(0.5))
    assert pixels.step(x, y, lr=0.1).loss() == floats.step(normalized, y, lr=0.1).loss()


def test_copy_from_refreshes_low_precision_copies(compiler: str, tmp_path: Path) -> None:
    """Tests that under f16, copy_from into a weight-free artifact also sets the f16 copies of the
    weights the step reads: every state entry, and the logits, equal those of the artifact that
    was compiled with the weights."""
    name = "fashion_cnn"
    m = _module(name)
    pipeline = "optimizer=sgd momentum=0.9 precision=f16"
    full = rn.Trainer(_compile(name, m, tmp_path, pipeline=pipeline), executor="cpu")
    bare = rn.Trainer(_compile(name, m, tmp_path / "..", pipeline=pipeline, weights=False),
                      executor="cpu")
    bare.copy_from(m)
    want, got = full.state_dict(roles="all", layout="rn"), bare.state_dict(roles="all", layout="rn")
    assert any("f16" in k for k in want), "the test needs low-precision copies"
    for k in want:
        assert np.array_equal(want[k], got[k]), k
    x, _ = _batch(name)
    assert np.array_equal(full.predict(x.numpy()), bare.predict(x.numpy()))


def test_copy_from_refuses_other_artifacts_and_wrong_weights(compiler: str, tmp_path: Path) -> None:
    """Tests that copy_from needs an artifact compiled from a torch module, and a module with the
    mapped names, shapes and float32 weights; nothing is written on a refusal."""
    native = rn.compile(models.build("mlp"), tmp_path / "native.rnx", batch=BATCH,
                        input_shape=(1, 28, 28), num_classes=10)
    with pytest.raises(ValueError, match="was not compiled from a torch module"):
        rn.Trainer(native, executor="cpu").copy_from(mlp())
    trainer = rn.Trainer(_compile("mlp", mlp(), tmp_path), executor="cpu")
    before = trainer.state_dict()
    with pytest.raises(ValueError, match=r"the module \(Sequential\) has no value for: 1\.weight"):
        trainer.copy_from(tnn.Sequential(tnn.Flatten()))
    with pytest.raises(ValueError, match="dtype torch.float64"):
        trainer.copy_from(mlp().double())
    after = trainer.state_dict()
    assert all(np.array_equal(before[k], after[k]) for k in before)


def test_copy_to_and_copy_from_refuse_another_architecture(compiler: str, tmp_path: Path) -> None:
    """Tests that a trainer compiled from torchvision's resnet18 neither writes into a resnet34
    (whose 96 entries of its extra blocks it has no value for) nor loads one, as
    load_state_dict(strict=True) refuses: one ValueError naming every such entry, and nothing
    written; strict=False writes the entries that match and returns the others' names."""
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    r18 = torchvision.models.resnet18(num_classes=10)
    r34 = torchvision.models.resnet34(num_classes=10)
    extra = [k for k in r34.state_dict() if k not in r18.state_dict()]
    assert len(extra) == 96
    trainer = rn.Trainer(rn.compile(r18, tmp_path / "r18.rnx", batch=2, input_shape=(3, 32, 32)),
                         executor="cpu")
    before_module = copy.deepcopy(r34.state_dict())
    before_trainer = trainer.state_dict()

    with pytest.raises(ValueError) as refused:
        trainer.copy_to(r34)
    message = str(refused.value)
    assert message.startswith("copy_to: the trainer does not match the module (ResNet)"), message
    assert "missing: 96 entries of the module (ResNet) that the trainer has no value for" in message
    assert all(k in message for k in extra)
    _assert_same_state_dict(r34.state_dict(), before_module)

    with pytest.raises(ValueError) as refused:
        trainer.copy_from(r34)
    message = str(refused.value)
    assert message.startswith("copy_from: the module (ResNet) does not match the trainer's model")
    assert ("unexpected: 96 entries of the module (ResNet) that the trainer's model does not have"
            in message)
    assert all(k in message for k in extra)
    after = trainer.state_dict()
    assert all(np.array_equal(before_trainer[k], after[k]) for k in before_trainer)

    assert trainer.copy_to(r34, strict=False) == rn.IncompatibleKeys(extra, [])
    written = r34.state_dict()
    for k, v in r18.state_dict().items():
        if not k.endswith("num_batches_tracked"):
            assert torch.equal(written[k], v), k
    assert trainer.copy_from(r34, strict=False) == rn.IncompatibleKeys([], extra)
    assert trainer.copy_to(r18) == rn.IncompatibleKeys([], [])
    assert trainer.copy_from(r18) == rn.IncompatibleKeys([], [])


def _assert_same_state_dict(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert list(a) == list(b)
    assert all(torch.equal(a[k], b[k]) for k in a)


def _small(width: int = 4, classes: int = 10) -> tnn.Module:
    """A 1x1 convolution (whose OIHW and OHWI filters numpy broadcasting confuses), a 3x3 one,
    batch norm and a linear layer after a spatial flatten (columns C, H, W in PyTorch, H, W, C
    in RN), at inputs of 3 x 4 x 4."""
    return tnn.Sequential(
        tnn.Conv2d(3, width, 1, bias=False), tnn.BatchNorm2d(width), tnn.ReLU(),
        tnn.Conv2d(width, 2, 3, padding=1), tnn.Flatten(), tnn.Linear(2 * 4 * 4, classes),
    )


def test_copy_errors_list_every_mismatch(compiler: str, tmp_path: Path) -> None:
    """Tests that copy_to and copy_from raise one ValueError listing every missing and unexpected
    name and every shape and dtype mismatch, that strict=False still refuses shape and dtype
    mismatches (as PyTorch's load_state_dict does), and that nothing is written on a refusal."""
    torch.manual_seed(0)
    m = _small()
    trainer = rn.Trainer(rn.compile(m, tmp_path / "small.rnx", batch=2, input_shape=(3, 4, 4)),
                         executor="cpu")
    before = trainer.state_dict()

    other = _small(classes=7)  # fc: [7, 32], [7]
    other.add_module("extra", tnn.Linear(2, 2))  # extra.weight, extra.bias: without a value
    other[1].running_var = None  # 1.running_var: the trainer's, not the module's (None: no state)
    other[1].running_mean = torch.zeros(4, dtype=torch.int32)  # cannot hold float values
    kept = copy.deepcopy(other.state_dict())
    with pytest.raises(ValueError) as refused:
        trainer.copy_to(other)
    message = str(refused.value)
    for part in ("unexpected: 1 entry of the trainer that the module (Sequential) does not have: "
                 "1.running_var",
                 "missing: 2 entries of the module (Sequential) that the trainer has no value for: "
                 "extra.weight, extra.bias",
                 "1.running_mean: the module's torch.int32 cannot hold float32 values",
                 "5.weight: shape [10, 32], the module has [7, 32]",
                 "5.bias: shape [10], the module has [7]"):
        assert part in message, message
    _assert_same_state_dict(other.state_dict(), kept)
    with pytest.raises(ValueError, match=r"mismatched: 3 entries") as refused:
        trainer.copy_to(other, strict=False)
    assert "missing:" not in str(refused.value) and "unexpected:" not in str(refused.value)
    _assert_same_state_dict(other.state_dict(), kept)

    source = _small(classes=7).double()
    source.add_module("extra", tnn.Linear(2, 2).double())
    with pytest.raises(ValueError) as refused:
        trainer.copy_from(source)
    message = str(refused.value)
    assert ("unexpected: 2 entries of the module (Sequential) that the trainer's model does not "
            "have: extra.weight, extra.bias") in message, message
    assert "0.weight: dtype torch.float64, expected float32" in message
    assert "RN imports float32 weights: convert the module with .float()" in message
    source = _small(classes=7)
    with pytest.raises(ValueError, match=r"5.weight: shape \[7, 32\], expected \[10, 32\]"):
        trainer.copy_from(source, strict=False)
    after = trainer.state_dict()
    assert all(np.array_equal(before[k], after[k]) for k in before)


def test_state_dict_of_an_imported_model_is_pytorchs(compiler: str, tmp_path: Path) -> None:
    """Tests that for a model imported from PyTorch, trainer.state_dict() is what the module's
    load_state_dict takes (its names, order, layouts and dtypes, as numpy; what copy_to writes,
    num_batches_tracked the steps taken), that load_state_dict takes it back (or the module's
    own state_dict), and that RN's layout comes with layout='rn' only."""
    torch.manual_seed(0)
    m = _small()
    artifact = rn.compile(m, tmp_path / "small.rnx", batch=2, input_shape=(3, 4, 4),
                          pipeline="optimizer=sgd momentum=0.9")
    trainer = rn.Trainer(artifact, executor="cpu")
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 4)).astype(np.float32)
    trainer.step(x, np.array([1, 2]), lr=0.1)
    trained = copy.deepcopy(m)
    trainer.copy_to(trained)

    state = trainer.state_dict()
    assert list(state) == list(m.state_dict())
    assert state["0.weight"].shape == (4, 3, 1, 1) and state["3.weight"].shape == (2, 4, 3, 3)
    for k, v in trained.state_dict().items():
        assert isinstance(state[k], np.ndarray), k
        assert torch.equal(torch.from_numpy(state[k]), v), k
    assert int(state["1.num_batches_tracked"]) == 1
    loaded = _small()
    keys = loaded.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
    assert keys.missing_keys == [] and keys.unexpected_keys == []
    _assert_same_state_dict(loaded.state_dict(), trained.state_dict())
    assert list(trainer.state_dict(roles="parameter")) == [k for k, _ in m.named_parameters()]

    rn_state = trainer.state_dict(layout="rn")
    assert rn_state["0.weight"].shape == (4, 1, 1, 3) and rn_state["3.weight"].shape == (2, 3, 3, 4)
    assert "1.num_batches_tracked" not in rn_state
    with pytest.raises(ValueError, match="pass layout='rn' for the rest of the state"):
        trainer.state_dict(roles="all")
    assert any(k.startswith("momentum.") for k in trainer.state_dict(roles="all", layout="rn"))

    other = rn.Trainer(artifact, executor="cpu")
    assert other.load_state_dict(state) == rn.IncompatibleKeys([], [])
    loaded_state = other.state_dict()  # num_batches_tracked: the steps this trainer took
    assert int(loaded_state.pop("1.num_batches_tracked")) == 0
    assert all(np.array_equal(loaded_state[k], state[k]) for k in loaded_state)
    other.load_state_dict(m.state_dict())  # the module's own tensors
    assert all(torch.equal(torch.from_numpy(other.state_dict()[k]), v)
               for k, v in m.state_dict().items() if not k.endswith("num_batches_tracked"))
    other.load_state_dict(rn_state, layout="rn")
    assert all(np.array_equal(other.state_dict(layout="rn")[k], v) for k, v in rn_state.items())
    with pytest.raises(ValueError, match=r"0\.weight: shape \[4, 1, 1, 3\], expected \[4, 3, 1, 1"):
        other.load_state_dict(rn_state)  # RN's layout read as PyTorch's
    keys = other.load_state_dict({"0.weight": state["0.weight"], "nope": state["0.weight"]},
                                 strict=False)
    assert keys.unexpected_keys == ["nope"] and "5.bias" in keys.missing_keys

    native = rn.compile(models.build("mlp"), tmp_path / "native.rnx", batch=BATCH,
                        input_shape=(1, 28, 28), num_classes=10)
    with pytest.raises(ValueError, match="layout='torch' needs a model imported from PyTorch"):
        rn.Trainer(native, executor="cpu").state_dict(layout="torch")


class _Lstm(tnn.Module):
    """An LSTM whose outputs forward unpacks: torch.fx 1.13 under Python 3.11 fails there."""

    def __init__(self) -> None:
        super().__init__()
        self.lstm = tnn.LSTM(8, 16, batch_first=True)
        self.fc = tnn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _out, (h, _c) = self.lstm(x.flatten(2).transpose(1, 2))
        return self.fc(h[-1])


class _Branches(tnn.Module):
    """A forward whose control flow depends on the data: no torch.fx version traces it."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = tnn.Linear(8 * 2 * 4, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.mean() > 0:
            x = -x
        return self.fc(x.flatten(1))


def _line_of(method: Any, text: str) -> str:
    """``File "...", line N, in forward`` of the line of ``method`` that contains ``text``."""
    import inspect

    lines, first = inspect.getsourcelines(method)
    line = first + next(i for i, source in enumerate(lines) if text in source)
    return rf'File "{re.escape(inspect.getsourcefile(method) or "")}", line {line}, in forward'


def test_untraceable_forward_is_refused_with_its_line() -> None:
    """Tests that an error of torch.fx's tracing is an UnsupportedModelError naming the module
    whose forward was traced (the model's type, or a submodule's path and type) and the file and
    line of that forward: data-dependent control flow (fx's TraceError, with the input's shapes
    fixed too). The issue's LSTM, whose outputs forward unpacks (fx's IndexError under torch
    1.13 and Python 3.11), traces with the input's shapes fixed and is refused at its first
    op RN lacks, naming its line."""
    where = _line_of(_Branches.forward, "if x.mean() > 0")
    cause = r"torch\.fx cannot trace it symbolically at `if x\.mean\(\) > 0:` \(TraceError: "
    with pytest.raises(rn.UnsupportedModelError, match=rf"^_Branches \({where}\): {cause}"):
        rn.from_torch(_Branches(), (8, 2, 4))
    nested = tnn.Sequential(tnn.Conv2d(8, 8, 1), _Branches())
    with pytest.raises(rn.UnsupportedModelError, match=rf"^1 \(_Branches, {where}\): {cause}"):
        rn.from_torch(nested, (8, 2, 4))

    where = _line_of(_Lstm.forward, "self.lstm(")
    nested = tnn.Sequential(tnn.Identity(), _Lstm())
    for model in (_Lstm(), nested):
        with pytest.raises(rn.UnsupportedModelError) as refused:
            rn.from_torch(model, (8, 2, 4))
        message = str(refused.value)
        assert re.match(rf"^method flatten \(graph node flatten, {where}\): flatten from dim 2 "
                        "to 3 of a 4-D tensor", message), message


def test_checkpoint_to_torch_state_dict(compiler: str, tmp_path: Path) -> None:
    """Tests rn.to_torch_state_dict from a saved checkpoint: it equals copy_to after the same steps
    (num_batches_tracked = steps), from the artifact, the ImportedModel or the module itself, and
    with ema=True gives the EMA weights."""
    name = "fashion_cnn"
    m = _module(name)
    artifact = _compile(name, m, tmp_path, pipeline="optimizer=sgd momentum=0.9 ema-decay=0.5")
    trainer = rn.Trainer(artifact, executor="cpu")
    x, y = _batch(name)
    for _ in range(2):
        trainer.step(x.numpy(), y.numpy(), lr=0.05)
    trainer.synchronize()
    ckpt = tmp_path / "run.ckpt"
    trainer.save(ckpt)
    expected = copy.deepcopy(m)
    trainer.copy_to(expected)
    for source in (artifact, rn.from_torch(m, (1, 28, 28))):
        sd = rn.to_torch_state_dict(ckpt, source)
        for k, v in expected.state_dict().items():
            assert torch.equal(sd[k], v.to(sd[k].dtype)), k
        assert int(sd["1.num_batches_tracked"]) == 2
    sd = rn.to_torch_state_dict(ckpt, m, input_shape=(1, 28, 28))
    assert torch.equal(sd["0.weight"], expected.state_dict()["0.weight"])

    ema = rn.to_torch_state_dict(ckpt, artifact, ema=True)
    averaged = copy.deepcopy(m)
    trainer.copy_to(averaged, ema=True)
    for k, v in averaged.state_dict().items():
        assert torch.equal(ema[k], v.to(ema[k].dtype)), k
    assert not torch.equal(ema["0.weight"], sd["0.weight"]), "EMA weights are not the weights"
    # BN statistics are not averaged: the same in both.
    assert torch.equal(ema["1.running_mean"], sd["1.running_mean"])


def test_compile_checks_num_classes(compiler: str, tmp_path: Path) -> None:
    """Tests that rn.compile checks num_classes against the module's output."""
    with pytest.raises(ValueError, match="num_classes=7, but the module's output has 10 classes"):
        rn.compile(mlp(), tmp_path / "m.rnx", batch=BATCH, input_shape=(1, 28, 28), num_classes=7)


def test_finetune_example_writes_outside_the_clone(compiler: str, tmp_path: Path) -> None:
    """Tests that examples/finetune_torchvision.py without --out writes its artifact to the user's
    cache ($XDG_CACHE_HOME/rn/examples), not into the folder it runs in (the clone)."""
    import subprocess
    import sys

    example = Path(__file__).resolve().parents[2] / "examples" / "finetune_torchvision.py"
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path),
           "XDG_CACHE_HOME": str(tmp_path / "cache")}
    run = subprocess.run([sys.executable, str(example), "--batch", "8", "--compile-only"],
                         capture_output=True, text=True, env=env, cwd=work, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    artifact = tmp_path / "cache" / "rn" / "examples" / "resnet18-fashion-f32.rnx"
    assert f"wrote {artifact} (weight-free)" in run.stdout, run.stdout
    assert artifact.is_file() and list(work.iterdir()) == []


def test_finetune_example_runs(compiler: str, tmp_path: Path) -> None:
    """Tests examples/finetune_torchvision.py end to end on a few examples, the GPU machine's way:
    a weight-free artifact compiled first, then trained from the module's weights (copy_from);
    PyTorch's accuracy of the copied-back model equals RN's evaluation."""
    import subprocess
    import sys

    data = Path(os.environ.get("RN_DATA", "/usr/share/datasets/fashion-mnist"))
    if not (data / "t10k-labels-idx1-ubyte.gz").is_file():
        _missing(f"no Fashion-MNIST at {data}")
    example = Path(__file__).resolve().parents[2] / "examples" / "finetune_torchvision.py"
    artifact = tmp_path / "resnet18.rnx"
    common = ["--batch", "32", "--data", str(data), "--out", str(tmp_path), "--artifact", str(artifact)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    first = subprocess.run([sys.executable, str(example), *common, "--compile-only"],
                           capture_output=True, text=True, env=env, timeout=600)
    assert first.returncode == 0, first.stderr
    assert artifact.is_file() and not _safetensors.read(artifact).tensors, "not weight-free"
    run = subprocess.run([sys.executable, str(example), *common, "--executor", "cpu",
                          "--limit-train", "128", "--limit-test", "64"],
                         capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "(within 0.1)" in run.stdout, run.stdout


# --------------------------------------------------------------------------- #
# scripts/torchvision-import.py: every torchvision classification model either
# matches PyTorch or is refused naming the module (a fast subset here; the
# whole list in docs/python.md's table)
# --------------------------------------------------------------------------- #

_SURVEY_SUBSET = {
    "resnet18": "equal",
    "mobilenet_v3_small": "equal",
    "regnet_x_400mf": "equal",
    "squeezenet1_1": "equal",
    "googlenet": "equal",
    "vit_b_32": "refused",
}


@pytest.mark.parametrize(("name", "outcome"), sorted(_SURVEY_SUBSET.items()))
def test_torchvision_survey_subset(compiler: str, tmp_path: Path, name: str, outcome: str) -> None:
    """Tests a few torchvision models as scripts/torchvision-import.py judges them: evaluation
    logits and the first training step's loss equal PyTorch's, or a refusal that names where."""
    import importlib.util

    pytest.importorskip("torchvision")
    script = Path(__file__).resolve().parents[2] / "scripts" / "torchvision-import.py"
    spec = importlib.util.spec_from_file_location("torchvision_import", script)
    assert spec is not None and spec.loader is not None
    survey = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(survey)
    row = survey.check_one(name, tmp_path, "cpu")
    assert row["outcome"] == outcome, row
    if outcome == "equal":
        assert row["train"] == "equal", row
    if outcome == "refused":
        # The refusal names the module or function and where it is.
        assert re.search(r"\(\w+\)|torch\.\w+|line \d+", str(row["why"])), row


# --------------------------------------------------------------------------- #
# ConvNeXt: permutes to channels-last and back, LayerNorm, the layer scale
# --------------------------------------------------------------------------- #


def test_convnext_layouts_are_reshapes() -> None:
    """Tests that a Linear on channels-last data (RN's 1x1 filter) and a [C, 1, 1] layer scale
    (RN's [C]) convert by reshapes, exactly both ways."""
    rng = np.random.default_rng(1)
    lin = torch_import.StateMap("b.3.weight", "parameter", "linear_as_1x1", (12, 4))
    w = rng.standard_normal((12, 4)).astype(np.float32)
    assert lin.rn_shape == (12, 1, 1, 4) and lin.to_rn(w).shape == (12, 1, 1, 4)
    assert np.array_equal(lin.to_rn(w)[5, 0, 0, 3], w[5, 3])
    assert np.array_equal(lin.to_torch(lin.to_rn(w)), w)
    scale = torch_import.StateMap("layer_scale", "parameter", "channel_scale", (4, 1, 1))
    s = rng.standard_normal((4, 1, 1)).astype(np.float32)
    assert np.array_equal(scale.to_rn(s), s.reshape(4))
    assert np.array_equal(scale.to_torch(scale.to_rn(s)), s)
    mapping = torch_import.TorchMapping((lin, scale), (), ())
    assert torch_import.TorchMapping.from_json(mapping.to_json()) == mapping


def test_convnext_block_imports_permutes_as_no_ops() -> None:
    """Tests that ConvNeXt's permutes move no data (no op in the IR), its LayerNorm is
    rn.layer_norm, its Linears 1x1 convolutions and its layer scale rn.channel_scale."""
    m = rn.from_torch(convnext_blocks(), (3, 32, 32))
    text = rn.emit_model(m, batch=2, input_shape=(3, 32, 32), num_classes=10)
    assert text.count("rn.layer_norm ") == 5  # stem, a block each stage, downsampling, head
    assert text.count("rn.channel_scale ") == 2
    assert "rn.linear " in text and "transpose" not in text and "permute" not in text
    kinds = {e.name: e.layout for e in m.mapping.entries}
    assert kinds["features.1.0.block.3.weight"] == "linear_as_1x1"
    assert kinds["features.1.0.layer_scale"] == "channel_scale"
    assert kinds["classifier.2.weight"] == "same"


class _NormOverWidth(tnn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = tnn.LayerNorm(8)
        self.fc = tnn.Linear(3, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(tf.adaptive_avg_pool2d(self.norm(x), 1).flatten(1))


class _ConvOfChannelsLast(tnn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = tnn.Conv2d(8, 3, 1)
        self.fc = tnn.Linear(3, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x.permute(0, 2, 3, 1))
        return self.fc(tf.adaptive_avg_pool2d(y, 1).flatten(1))


@pytest.mark.parametrize(("module", "message"), [
    (_NormOverWidth(), r"^norm \(LayerNorm\): layer norm over \[8\] of an NCHW tensor"),
    (_ConvOfChannelsLast(), r"^conv \(Conv2d\): reads a channels-last tensor"),
], ids=["norm_over_width", "conv_of_channels_last"])
def test_channels_last_misuse_is_refused(module: tnn.Module, message: str) -> None:
    with pytest.raises(rn.UnsupportedModelError, match=message):
        rn.from_torch(module, (3, 8, 8) if isinstance(module, _NormOverWidth) else (8, 8, 8))


# --------------------------------------------------------------------------- #
# Concatenation, splits and channel shuffles (DenseNet, GoogLeNet, Inception, SqueezeNet,
# ShuffleNet v2)
# --------------------------------------------------------------------------- #


def _ops(m: tnn.Module, shape: tuple[int, int, int], batch: int = BATCH) -> list[str]:
    """The ops of ``m``'s import (without rn.param), without their result names."""
    text = rn.emit_model(rn.from_torch(m, shape), batch=batch, input_shape=shape, num_classes=10)
    return [ln.split(" = ", 1)[1].strip() for ln in text.splitlines()
            if " = rn." in ln and " = rn.param " not in ln]


def test_shuffle_unit_imports_with_the_input_shape_fixed() -> None:
    """Tests that ShuffleNet v2's units, whose forward unpacks x.size() and a chunk (what
    symbolic tracing under torch 1.13 refuses), import with the input's shape fixed: cat,
    chunk and split as rn.concat and rn.split, each channel shuffle (view, transpose,
    contiguous, view; reshape, permute, flatten) as one rn.channel_shuffle; that the batch of
    view(batchsize, ...) is RN's at any batch; and that the trace leaves the module's state and
    mode as they were."""
    m = ShuffleUnit().train()
    before = {k: v.clone() for k, v in m.state_dict().items()}
    for batch in (1, 3):
        ops = _ops(m, (3, 16, 16), batch)
        t = f"tensor<{batch}x8x8x{{}}xf32>".format
        kinds = [op.split()[0] for op in ops]
        assert (kinds.count("rn.concat"), kinds.count("rn.split")) == (3, 2), kinds
        shuffles = [op.split(" ", 2)[2] for op in ops if op.startswith("rn.channel_shuffle ")]
        assert shuffles == [f"groups 2 : {t(12)}", f"groups 2 : {t(12)}", f"groups 3 : {t(12)}"]
        assert any(re.fullmatch(rf"rn\.split %\d+ : {t(12)} -> {t(6)}, {t(6)}", op) for op in ops)
        assert any(re.fullmatch(rf"rn\.split %\d+ : {t(12)} -> {t(7)}, {t(5)}", op) for op in ops)
        assert any(re.fullmatch(rf"rn\.concat %\d+#0, %\d+ : \({t(6)}, {t(6)}\) -> {t(12)}", op)
                   for op in ops)
    assert m.training and all(mod.training for mod in m.modules())
    for k, v in m.state_dict().items():
        assert torch.equal(v, before[k]), k


class _Fn(tnn.Module):
    """``fn(conv(x))`` (an 8x8 input of 3 channels), then pooling and a Linear of ``width``."""

    def __init__(self, fn: Any, width: int = 4) -> None:
        super().__init__()
        self.conv = tnn.Conv2d(3, 4, 3, padding=1)
        self.fn = fn
        self.fc = tnn.Linear(width, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.fn(self.conv(x)).mean((2, 3)))


def _shuffle_5d(x: torch.Tensor) -> torch.Tensor:
    n, c, h, w = x.size()
    return x.view(n, c, h, 2, w // 2).flatten(3)


def _grouped_sum(x: torch.Tensor) -> torch.Tensor:
    n, c, h, w = x.size()
    return x.view(n, 2, c // 2, h, w).sum(1)


@pytest.mark.parametrize(("fn", "message"), [
    (lambda x: torch.cat([x, x], 2),
     r"^function torch\.cat \(graph node cat, File .*test_torch_import\.py.*\): concatenate "
     r"along dim 2 of \[1, 4, 8, 8\]; RN concatenates along the channels only \(dim 1 of NCHW "
     r"and \[N, C\] tensors, dim 3 of channels-last ones\)$"),
    (lambda x: torch.cat([x.flatten(1), x.flatten(1)], 1).view(x.size(0), 8, 8, 8),
     r"^function torch\.cat .*: concatenate of a flattened C x H x W tensor"),
    (lambda x: x.chunk(2)[0],
     r"^method chunk \(graph node chunk, .*\): chunk along dim 0 of \[1, 4, 8, 8\]; RN chunks "
     r"along the channels only"),
    (lambda x: torch.split(x, [1, 2], 1)[0],
     r"^function torch\.functional\.split .*: split sizes \[1, 2\] do not add up to the 4 "
     r"channels of \[1, 4, 8, 8\]$"),
    (lambda x: torch.cat([x.chunk(4, 1)[0], x.chunk(4, 1)[2]], 1),
     r"^method chunk \(graph node chunk, .*\): slices \[1, 2, 3\] of the 4 chunk slices are "
     r"not used; RN's rn\.split needs every slice to reach the loss$"),
    (_shuffle_5d,
     r"^method view .*: reshape of \[1, 4, 8, 8\] to \[1, 4, 8, 2, 4\]; RN imports a 5-D view "
     r"only as ShuffleNet's channel shuffle: view\(N, g, C // g, H, W\), transpose\(1, 2\), "
     r"contiguous\(\), view\(N, C, H, W\) \(or flatten\(1, 2\)\)$"),
    (_grouped_sum,
     r"^method sum .*: takes a 5-D view \[1, 2, 2, 8, 8\]; RN imports a 5-D view only as "
     r"ShuffleNet's channel shuffle"),
], ids=["cat_dim", "cat_flattened", "chunk_dim", "split_sizes", "unused_slices", "view_5d",
        "grouped_sum"])
def test_concat_split_and_shuffle_misuse_is_refused(fn: Any, message: str) -> None:
    """Tests that a concatenation or split along another dim than the channels, of a
    flattened C x H x W tensor, with sizes that do not add up or with a slice left unused
    (rn.split's gradient needs them all), and a 5-D view other than a channel shuffle's, are
    refused naming the function or method and the line."""
    with pytest.raises(rn.UnsupportedModelError, match=message):
        rn.from_torch(_Fn(fn), (3, 8, 8))


def _torchvision_model(name: str) -> tnn.Module:
    """torchvision's ``name`` as scripts/torchvision-import.py builds it (ten classes, no
    weights; GoogLeNet and Inception v3 without their auxiliary classifiers)."""
    torchvision = pytest.importorskip("torchvision")
    kwargs: dict[str, Any] = {"num_classes": 10}
    if name in ("googlenet", "inception_v3"):
        kwargs.update(aux_logits=False, init_weights=True)
    return getattr(torchvision.models, name)(**kwargs)


@pytest.mark.parametrize(("name", "size", "counts"), [
    ("squeezenet1_0", 96, (8, 0, 0)),
    ("googlenet", 96, (9, 0, 0)),
    ("inception_v3", 299, (15, 0, 0)),
    ("densenet121", 96, (58, 0, 0)),  # 58 layers (4 read one map: no op) and 4 blocks
    ("shufflenet_v2_x1_0", 96, (16, 13, 16)),  # 16 units, 13 of them basic (a chunk)
], ids=lambda v: v if isinstance(v, str) else "")
def test_torchvision_concatenating_models_import(name: str, size: int,
                                                 counts: tuple[int, int, int]) -> None:
    """Tests that torchvision's models built on concatenation and channel shuffles import
    (no compiler needed): their rn.concat, rn.split and rn.channel_shuffle ops counted."""
    ops = _ops(_torchvision_model(name).eval(), (3, size, size), batch=2)
    kinds = [op.split()[0] for op in ops]
    found = (kinds.count("rn.concat"), kinds.count("rn.split"), kinds.count("rn.channel_shuffle"))
    assert found == counts
