"""Tests rn.nn: registration, state-dict names and order, parameter counts and initializers."""

from __future__ import annotations

import math
from collections import OrderedDict

import pytest

import rn
from rn import nn
from rn.emitter import Init


def test_sequential_names_and_order() -> None:
    m = nn.Sequential(
        nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.Flatten(), nn.Linear(8, 2)
    )
    assert [s.name for s in m.state_specs()] == [
        "0.weight",
        "0.bias",
        "1.weight",
        "1.bias",
        "1.running_mean",
        "1.running_var",
        "4.weight",
        "4.bias",
    ]
    assert [n for n, _ in m.named_parameters()] == [
        "0.weight",
        "0.bias",
        "1.weight",
        "1.bias",
        "4.weight",
        "4.bias",
    ]
    assert [n for n, _ in m.named_buffers()] == ["1.running_mean", "1.running_var"]
    assert [s.buffer for s in m.state_specs()].count(True) == 2
    assert len(m) == 5 and isinstance(m[1], nn.BatchNorm2d) and isinstance(m[-1], nn.Linear)


def test_sequential_ordered_dict() -> None:
    m = nn.Sequential(OrderedDict([("conv", nn.Conv2d(1, 2, 1)), ("act", nn.ReLU())]))
    assert [n for n, _ in m.named_parameters()] == ["conv.weight", "conv.bias"]
    assert [n for n, _ in m.named_modules()] == ["", "conv", "act"]


def test_attribute_registration() -> None:
    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.features = nn.Sequential(nn.Conv2d(3, 4, 3, bias=False))
            self.scale = nn.Parameter((4,), Init.ones())
            self.register_buffer("steps", nn.Buffer((1,), Init.zeros()))
            self.head = nn.Linear(4, 2)
            self.note = "plain attribute"

    net = Net()
    assert [n for n, _ in net.named_parameters()] == [
        "scale",
        "features.0.weight",
        "head.weight",
        "head.bias",
    ]
    assert [n for n, _ in net.named_buffers()] == ["steps"]
    assert [n for n, _ in net.named_children()] == ["features", "head"]
    assert net.note == "plain attribute"
    assert isinstance(net.head, nn.Linear)
    net.head = None  # type: ignore[assignment]
    assert [n for n, _ in net.named_children()] == ["features"]
    del net.scale
    assert [n for n, _ in net.named_parameters()] == ["features.0.weight"]
    with pytest.raises(AttributeError, match="has no attribute 'missing'"):
        _ = net.missing


def test_assignment_before_init() -> None:
    class Broken(nn.Module):
        def __init__(self) -> None:
            self.fc = nn.Linear(1, 1)

    with pytest.raises(AttributeError, match=r"before Module.__init__\(\) is called"):
        Broken()


def test_shared_parameters_counted_once() -> None:
    fc = nn.Linear(4, 4)
    m = nn.Sequential(fc, nn.ReLU(), fc)
    assert [n for n, _ in m.named_parameters()] == ["0.weight", "0.bias"]
    assert m.num_parameters() == 20


def test_num_parameters_excludes_running_stats() -> None:
    # conv 3*3*3*16 + BN affine 2*16; running stats (2*16) are buffers.
    m = nn.Sequential(nn.Conv2d(3, 16, 3, bias=False), nn.BatchNorm2d(16))
    assert m.num_parameters() == 432 + 32
    assert sum(p.numel() for p in m.parameters()) == 464
    assert sum(b.numel() for b in m.buffers()) == 32


def test_conv_weight_is_ohwi() -> None:
    conv = nn.Conv2d(8, 16, (3, 5), groups=2)
    assert conv.weight.shape == (16, 3, 5, 4)
    assert conv.bias is not None and conv.bias.shape == (16,)


def test_default_initializers_match_pytorch() -> None:
    conv = nn.Conv2d(8, 16, 3, groups=2)
    fan_in = 4 * 9
    assert conv.weight.init.kind == "uniform"
    assert conv.weight.init.value == pytest.approx(1 / math.sqrt(fan_in))
    assert conv.bias is not None and conv.bias.init.value == pytest.approx(1 / math.sqrt(fan_in))
    fc = nn.Linear(100, 10)
    assert fc.weight.init.kind == "uniform"
    assert fc.weight.init.value == pytest.approx(0.1)
    assert fc.bias is not None and fc.bias.init.value == pytest.approx(0.1)
    bn = nn.BatchNorm2d(4)
    assert (bn.weight.init, bn.bias.init) == (Init.ones(), Init.zeros())
    assert (bn.running_mean.init, bn.running_var.init) == (Init.zeros(), Init.ones())


def test_initializer_overrides() -> None:
    conv = nn.Conv2d(
        16,
        32,
        3,
        weight_init=nn.kaiming_normal(mode="fan_out", nonlinearity="relu"),
        bias_init=Init.zeros(),
    )
    assert conv.weight.init.kind == "normal"
    assert conv.weight.init.value == pytest.approx(math.sqrt(2.0 / (32 * 9)))  # fan_out = 32*3*3
    assert conv.bias is not None and conv.bias.init == Init.zeros()
    fc = nn.Linear(64, 8, weight_init=nn.kaiming_uniform(nonlinearity="relu"))
    assert fc.weight.init.kind == "uniform"
    assert fc.weight.init.value == pytest.approx(math.sqrt(6.0 / 64))
    assert nn.calculate_gain("tanh") == pytest.approx(5 / 3)
    with pytest.raises(ValueError, match="mode must be 'fan_in' or 'fan_out'"):
        nn.kaiming_normal(mode="fan_avg")


def test_init_printing_and_validation() -> None:
    assert str(Init.ones()) == "#rn.init<ones>"
    assert str(Init.uniform(0.5)) == "#rn.init<uniform, 5.000000000e-01>"
    assert str(Init.normal(1e-2)) == "#rn.init<normal, 1.000000000e-02>"
    with pytest.raises(ValueError, match="needs a finite non-negative value"):
        Init.normal(-1.0)
    with pytest.raises(ValueError, match="takes no value"):
        Init("zeros", 1.0)


def test_constructor_validation() -> None:
    with pytest.raises(ValueError, match=r"must be divisible by groups \(3\)"):
        nn.Conv2d(4, 6, 3, groups=3)
    with pytest.raises(ValueError, match="out_features must be an int >= 1, got 0"):
        nn.Linear(3, 0)
    with pytest.raises(ValueError, match="kernel_size must be an int or a pair of ints"):
        nn.MaxPool2d((2, 2, 2))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        nn.Dropout(1.5)
    with pytest.raises(ValueError, match="drop probability has to be between 0 and 1"):
        nn.StochasticDepth(-0.1)
    with pytest.raises(ValueError, match="mode has to be either 'batch' or 'row', but got rows"):
        nn.StochasticDepth(0.2, "rows")
    with pytest.raises(ValueError, match=r"mode='batch' \(one draw for the whole batch\) is not"):
        nn.StochasticDepth(0.2, "batch")
    with pytest.raises(ValueError, match="tensor shape must be a non-empty tuple of positive ints"):
        nn.Parameter((3, 0), Init.zeros())
    with pytest.raises(ValueError, match=r"Hardtanh min_val 1 must be below max_val -1"):
        nn.Hardtanh(1, -1)


def test_stochastic_depth_module_mirrors_torchvision() -> None:
    # torchvision's StochasticDepth(p, mode): no state, p and mode kept, row mode by default.
    drop = nn.StochasticDepth(0.25)
    assert (drop.p, drop.mode) == (0.25, "row")
    assert drop.num_parameters() == 0 and not list(drop.named_buffers())
    assert "p=0.25, mode=row" in repr(drop)
    assert nn.StochasticDepth(1.0, mode="row").p == 1.0


def test_activation_modules_match_pytorch_defaults() -> None:
    # PyTorch's defaults: Hardtanh(-1, 1), ReLU6 = Hardtanh(0, 6); inplace accepted.
    assert (nn.Hardtanh().min_val, nn.Hardtanh().max_val) == (-1.0, 1.0)
    relu6 = nn.ReLU6(inplace=True)
    assert isinstance(relu6, nn.Hardtanh) and (relu6.min_val, relu6.max_val) == (0.0, 6.0)
    assert nn.Hardswish(inplace=True).inplace and nn.Hardsigmoid(inplace=True).inplace
    for module in (nn.ReLU6(), nn.Hardtanh(), nn.Hardswish(), nn.Hardsigmoid(), nn.Sigmoid()):
        assert module.num_parameters() == 0 and not list(module.named_buffers())


def test_gelu_module_mirrors_pytorch() -> None:
    # torch.nn.GELU's default is the exact form; "tanh" selects the approximation.
    assert nn.GELU().approximate == "none" and nn.GELU("tanh").approximate == "tanh"
    assert "approximate='tanh'" in repr(nn.GELU("tanh"))
    with pytest.raises(ValueError, match="approximate must be one of"):
        nn.GELU("erf")


def test_basic_block_downsample_rule() -> None:
    assert nn.BasicBlock(64, 64).downsample is None
    down = nn.BasicBlock(64, 128, stride=2).downsample
    assert down is not None
    conv = down[0]
    assert (
        isinstance(conv, nn.Conv2d)
        and conv.stride == (2, 2)
        and conv.kernel_size == (1, 1)
        and conv.bias is None
    )
    assert nn.BasicBlock(64, 128, stride=1).downsample is not None
    assert nn.BasicBlock(64, 64, stride=2).downsample is not None


def test_bottleneck_structure() -> None:
    b = nn.Bottleneck(256, 128, stride=2)
    # torchvision v1.5: the stride sits on the 3x3 conv.
    assert (b.conv1.stride, b.conv2.stride, b.conv3.stride) == ((1, 1), (2, 2), (1, 1))
    assert b.conv3.out_channels == 512
    assert nn.Bottleneck(256, 64).downsample is None
    assert nn.Bottleneck(64, 64).downsample is not None  # 64 -> 256 channels
    # 1x1: 256*128, 3x3: 128*128*9, 1x1: 128*512, downsample 256*512, BN: 2*(128+128+512+512)
    assert b.num_parameters() == 32768 + 147456 + 65536 + 131072 + 2560


def test_residual_block_traces() -> None:
    block = nn.BasicBlock(3, 8, stride=2)
    model = nn.Sequential(block, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10))
    text = rn.emit_model(model, batch=2, input_shape=(3, 8, 8), num_classes=10)
    assert "rn.add" in text
    assert '@"0.downsample.0.weight" : tensor<8x1x1x3xf32>' in text


def test_repr() -> None:
    m = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.ReLU())
    assert repr(m) == (
        "Sequential(\n"
        "  (0): Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), bias=False)\n"
        "  (1): ReLU()\n)"
    )
