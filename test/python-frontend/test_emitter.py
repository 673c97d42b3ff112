"""Tests the MLIR text that rn.emit_model produces: syntax, shape inference, dtypes, errors."""

from __future__ import annotations

import math
import re

import pytest

import rn
from rn import nn
from rn.emitter import format_float, symbol

EXAMPLE = """\
module attributes {rn.model = "tiny"} {
  rn.parameter @"0.weight" : tensor<8x3x3x3xf32> = #rn.init<uniform, 1.924500897e-01>
  rn.parameter @"1.weight" : tensor<8xf32> = #rn.init<ones>
  rn.parameter @"1.bias" : tensor<8xf32> = #rn.init<zeros>
  rn.parameter buffer @"1.running_mean" : tensor<8xf32> = #rn.init<zeros>
  rn.parameter buffer @"1.running_var" : tensor<8xf32> = #rn.init<ones>
  rn.parameter @fc.weight : tensor<10x8xf32> = #rn.init<normal, 1.000000000e-02>
  func.func @forward(%images: tensor<4x32x32x3xf32>, %labels: tensor<4xi32>) -> tensor<f32> {
    %0 = rn.param @"0.weight" : tensor<8x3x3x3xf32>
    %1 = rn.conv2d %images, %0 stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<4x32x32x3xf32>, tensor<8x3x3x3xf32>) -> tensor<4x32x32x8xf32>
    %2 = rn.param @"1.weight" : tensor<8xf32>
    %3 = rn.param @"1.bias" : tensor<8xf32>
    %4 = rn.param @"1.running_mean" : tensor<8xf32>
    %5 = rn.param @"1.running_var" : tensor<8xf32>
    %6 = rn.batch_norm %1, %2, %3, %4, %5 eps 1.000000000e-05 momentum 1.000000000e-01 : (tensor<4x32x32x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x32x32x8xf32>
    %7 = rn.relu %6 : tensor<4x32x32x8xf32>
    %8 = rn.max_pool2d %7 kernel [2, 2] stride [2, 2] pad [0, 0] : tensor<4x32x32x8xf32> -> tensor<4x16x16x8xf32>
    %9 = rn.global_avg_pool %8 : tensor<4x16x16x8xf32> -> tensor<4x1x1x8xf32>
    %10 = rn.flatten %9 : tensor<4x1x1x8xf32> -> tensor<4x8xf32>
    %11 = rn.dropout %10 p 5.000000000e-01 : tensor<4x8xf32>
    %12 = rn.param @fc.weight : tensor<10x8xf32>
    %13 = rn.linear %11, %12 : (tensor<4x8xf32>, tensor<10x8xf32>) -> tensor<4x10xf32>
    %14 = rn.softmax_cross_entropy %13, %labels label_smoothing 0.000000000e+00 : (tensor<4x10xf32>, tensor<4xi32>) -> tensor<f32>
    return %14 : tensor<f32>
  }
}
"""  # noqa: E501


class Tiny(nn.Module):
    """The model of the reference example (children named "0" and "1", then attributes)."""

    def __init__(self) -> None:
        super().__init__()
        self.add_module("0", nn.Conv2d(3, 8, 3, padding=1, bias=False))
        self.add_module("1", nn.BatchNorm2d(8))
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten()
        self.drop = nn.Dropout()
        self.fc = nn.Linear(8, 10, bias=False, weight_init=rn.Init.normal(0.01))

    def forward(self, x: rn.Value) -> rn.Value:
        x = self.relu(getattr(self, "1")(getattr(self, "0")(x)))
        x = self.flatten(self.gap(self.pool(x)))
        return self.fc(self.drop(x))


def emit(
    model: nn.Module, shape: tuple[int, int, int] = (3, 8, 8), classes: int = 10, **kw: object
) -> str:
    return rn.emit_model(model, batch=2, input_shape=shape, num_classes=classes, **kw)  # type: ignore[arg-type]


def body(text: str) -> list[str]:
    """The op lines of @forward, without the rn.param lines."""
    lines = text.split("func.func")[1].splitlines()[1:-3]
    return [ln.strip() for ln in lines if "rn.param " not in ln]


def test_reference_example_exact() -> None:
    assert (
        rn.emit_model(Tiny(), batch=4, input_shape=(3, 32, 32), num_classes=10, name="tiny")
        == EXAMPLE
    )


def test_format_float() -> None:
    assert format_float(1e-5) == "1.000000000e-05"
    assert format_float(0.0) == "0.000000000e+00"
    assert format_float(1) == "1.000000000e+00"
    assert "." in format_float(123456789.0)
    with pytest.raises(ValueError, match="non-finite"):
        format_float(math.inf)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("fc.weight", "@fc.weight"),
        ("layer1.0.conv1.weight", "@layer1.0.conv1.weight"),
        ("_a$b", "@_a$b"),
        ("0.weight", '@"0.weight"'),
        ("a-b", '@"a-b"'),
        ('q"x', '@"q\\22x"'),
    ],
)
def test_symbol_quoting(name: str, expected: str) -> None:
    assert symbol(name) == expected


def test_conv_and_linear_with_bias() -> None:
    model = nn.Sequential(nn.Conv2d(3, 4, 3, stride=2, padding=1), nn.Flatten(), nn.Linear(64, 10))
    text = emit(model)
    ops = body(text)
    assert ops[0] == (
        "%2 = rn.conv2d %images, %0, %1 stride [2, 2] pad [1, 1] dilation [1, 1] groups 1 : "
        "(tensor<2x8x8x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x4x4xf32>"
    )
    assert ops[1] == "%3 = rn.flatten %2 : tensor<2x4x4x4xf32> -> tensor<2x64xf32>"
    assert ops[2] == (
        "%6 = rn.linear %3, %4, %5 : (tensor<2x64xf32>, tensor<10x64xf32>, tensor<10xf32>) "
        "-> tensor<2x10xf32>"
    )
    assert 'rn.parameter @"0.bias" : tensor<4xf32> = #rn.init<uniform, 1.924500897e-01>' in text
    assert 'rn.parameter @"2.bias" : tensor<10xf32> = #rn.init<uniform, 1.250000000e-01>' in text


def test_params_emitted_right_before_each_use() -> None:
    text = emit(nn.Sequential(nn.Flatten(), nn.Linear(192, 10)))
    lines = [ln.strip() for ln in text.splitlines()]
    i = lines.index('%1 = rn.param @"1.weight" : tensor<10x192xf32>')
    assert lines[i + 1] == '%2 = rn.param @"1.bias" : tensor<10xf32>'
    assert lines[i + 2].startswith("%3 = rn.linear %0, %1, %2 :")


def test_unary_pools_and_add() -> None:
    class Res(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, 3, 3, padding=1, dilation=1, groups=3, bias=False)
            self.tanh = nn.Tanh()
            self.silu = nn.SiLU()
            self.avg = nn.AvgPool2d(3, stride=2, padding=1)
            self.head = nn.Sequential(nn.AdaptiveAvgPool2d(2), nn.Flatten(), nn.Linear(12, 5))

        def forward(self, x: rn.Value) -> rn.Value:
            y = self.silu(self.tanh(self.conv(x)))
            return self.head(self.avg(y + x))

    ops = body(emit(Res(), classes=5))
    assert ops[0].endswith(
        "groups 3 : (tensor<2x8x8x3xf32>, tensor<3x3x3x1xf32>) -> tensor<2x8x8x3xf32>"
    )
    assert ops[1] == "%2 = rn.tanh %1 : tensor<2x8x8x3xf32>"
    assert ops[2] == "%3 = rn.silu %2 : tensor<2x8x8x3xf32>"
    assert ops[3] == "%4 = rn.add %3, %images : tensor<2x8x8x3xf32>"
    assert ops[4] == (
        "%5 = rn.avg_pool2d %4 kernel [3, 3] stride [2, 2] pad [1, 1] : "
        "tensor<2x8x8x3xf32> -> tensor<2x4x4x3xf32>"
    )
    # AdaptiveAvgPool2d(2) on 4x4 is an average pool with kernel = stride = 2.
    assert ops[5] == (
        "%6 = rn.avg_pool2d %5 kernel [2, 2] stride [2, 2] pad [0, 0] : "
        "tensor<2x4x4x3xf32> -> tensor<2x2x2x3xf32>"
    )


def test_mobile_activations() -> None:
    class Mobile(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.relu6 = nn.ReLU6(inplace=True)
            self.hardtanh = nn.Hardtanh(-2, 2.5)
            self.hardswish = nn.Hardswish()
            self.hardsigmoid = nn.Hardsigmoid()
            self.sigmoid = nn.Sigmoid()
            self.head = nn.Sequential(nn.Flatten(), nn.Linear(192, 10))

        def forward(self, x: rn.Value) -> rn.Value:
            y = self.hardsigmoid(self.hardswish(self.hardtanh(self.relu6(x))))
            y = rn.relu6(rn.hardtanh(rn.hardswish(rn.hardsigmoid(rn.sigmoid(self.sigmoid(y))))))
            return self.head(y)

    ops = body(emit(Mobile()))
    t = "tensor<2x8x8x3xf32>"
    assert ops[:10] == [
        f"%0 = rn.hardtanh %images min 0.000000000e+00 max 6.000000000e+00 : {t}",
        f"%1 = rn.hardtanh %0 min -2.000000000e+00 max 2.500000000e+00 : {t}",
        f"%2 = rn.hardswish %1 : {t}",
        f"%3 = rn.hardsigmoid %2 : {t}",
        f"%4 = rn.sigmoid %3 : {t}",
        f"%5 = rn.sigmoid %4 : {t}",
        f"%6 = rn.hardsigmoid %5 : {t}",
        f"%7 = rn.hardswish %6 : {t}",
        f"%8 = rn.hardtanh %7 min -1.000000000e+00 max 1.000000000e+00 : {t}",
        f"%9 = rn.hardtanh %8 min 0.000000000e+00 max 6.000000000e+00 : {t}",
    ]
    assert repr(Mobile().hardtanh) == "Hardtanh(min_val=-2, max_val=2.5)"
    assert repr(nn.ReLU6()) == "ReLU6()"


@pytest.mark.parametrize(
    ("low", "high", "message"),
    [
        (1.0, 1.0, r"hardtanh min_val 1.0 must be below max_val 1.0"),
        (6, 0, r"hardtanh min_val 6 must be below max_val 0"),
        (float("-inf"), 0, r"hardtanh min_val must be a finite number, got -inf"),
        (0, "6", r"hardtanh max_val must be a finite number, got '6'"),
    ],
)
def test_hardtanh_bounds_checked(low: object, high: object, message: str) -> None:
    class Clamp(nn.Module):
        def forward(self, x: rn.Value) -> rn.Value:
            return rn.flatten(rn.global_avg_pool(rn.hardtanh(x, low, high)))  # type: ignore[arg-type]

    with pytest.raises(ValueError, match=message):
        emit(Clamp(), classes=3)


class SqueezeExcitation(nn.Module):
    """torchvision's SqueezeExcitation in NHWC: pool, two 1x1 convs, a gate, the scaling."""

    def __init__(self, channels: int, squeeze: int) -> None:
        super().__init__()
        self.fc1 = nn.Conv2d(channels, squeeze, 1)
        self.fc2 = nn.Conv2d(squeeze, channels, 1)
        self.relu = nn.ReLU()
        self.gate = nn.Hardsigmoid()

    def forward(self, x: rn.Value) -> rn.Value:
        s = self.gate(self.fc2(self.relu(self.fc1(rn.global_avg_pool(x)))))
        return rn.channel_mul(x, s)


def test_channel_mul_squeeze_excitation() -> None:
    model = nn.Sequential(SqueezeExcitation(3, 2), nn.Flatten(), nn.Linear(192, 10))
    ops = body(emit(model))
    assert ops[0] == "%0 = rn.global_avg_pool %images : tensor<2x8x8x3xf32> -> tensor<2x1x1x3xf32>"
    assert ops[-4] == (
        "%9 = rn.channel_mul %images, %8 : tensor<2x8x8x3xf32>, tensor<2x1x1x3xf32>"
    )


@pytest.mark.parametrize(
    ("scale", "message"),
    [
        ("flat", r"must be tensor<2x1x1x3xf32> for the input .*, got tensor<2x3xf32>"),
        ("spatial", r"must be tensor<2x1x1x3xf32> for the input .*, got tensor<2x8x8x3xf32>"),
        ("number", r"channel_mul expects two traced tensor values of the same trace"),
    ],
)
def test_channel_mul_checks_the_scale(scale: str, message: str) -> None:
    class Gate(nn.Module):
        def forward(self, x: rn.Value) -> rn.Value:
            if scale == "flat":
                s = rn.flatten(rn.global_avg_pool(x))
            elif scale == "spatial":
                s = x
            else:
                s = 2.0  # type: ignore[assignment]
            return rn.flatten(rn.global_avg_pool(rn.channel_mul(x, s)))

    with pytest.raises(ValueError, match=message):
        emit(Gate(), classes=3)


class StochasticResidual(nn.Module):
    """A residual block whose branch is dropped per sample (EfficientNet's MBConv)."""

    def __init__(self, p: float) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 3, padding=1, bias=False)
        self.drop = nn.StochasticDepth(p, "row")

    def forward(self, x: rn.Value) -> rn.Value:
        return rn.flatten(rn.global_avg_pool(x + self.drop(self.conv(x))))


def test_stochastic_depth_on_a_residual_branch() -> None:
    ops = body(emit(StochasticResidual(0.2), classes=3))
    assert ops[1] == "%2 = rn.stochastic_depth %1 p 2.000000000e-01 : tensor<2x8x8x3xf32>"
    assert ops[2] == "%3 = rn.add %images, %2 : tensor<2x8x8x3xf32>"
    # The functional form, in f16, and p = 1 (every sample dropped) is allowed.
    class Functional(nn.Module):
        def forward(self, x: rn.Value) -> rn.Value:
            return rn.flatten(rn.global_avg_pool(rn.stochastic_depth(x, 1.0)))

    ops = body(emit(Functional(), classes=3, dtype="f16"))
    assert ops[0] == "%0 = rn.stochastic_depth %images p 1.000000000e+00 : tensor<2x8x8x3xf16>"


def test_stochastic_depth_checks_p() -> None:
    class Bad(nn.Module):
        def forward(self, x: rn.Value) -> rn.Value:
            return rn.flatten(rn.global_avg_pool(rn.stochastic_depth(x, 1.5)))

    with pytest.raises(ValueError,
                       match=r"stochastic depth probability must be in \[0, 1\], got 1.5"):
        emit(Bad(), classes=3)


def test_functional_add_and_relu() -> None:
    class M(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(3, 3)

        def forward(self, x: rn.Value) -> rn.Value:
            x = rn.flatten(rn.global_avg_pool(x))
            return rn.relu(rn.add(self.fc(x), x))

    ops = body(emit(M(), classes=3))
    assert ops[-3] == "%5 = rn.add %4, %1 : tensor<2x3xf32>"
    assert ops[-2] == "%6 = rn.relu %5 : tensor<2x3xf32>"


def test_adaptive_avg_pool_identity_emits_nothing() -> None:
    model = nn.Sequential(nn.AdaptiveAvgPool2d((8, 8)), nn.Flatten(), nn.Linear(192, 10))
    ops = body(emit(model))
    assert ops[0].startswith("%0 = rn.flatten %images")


def test_adaptive_avg_pool_non_divisible_emits_the_adaptive_op() -> None:
    model = nn.Sequential(nn.AdaptiveAvgPool2d(3), nn.Flatten(), nn.Linear(27, 10))
    ops = body(emit(model))
    assert ops[0] == (
        "%0 = rn.adaptive_avg_pool2d %images : tensor<2x8x8x3xf32> -> tensor<2x3x3x3xf32>"
    )
    # One dimension divisible is not enough for a plain pool; larger outputs too.
    ops = body(emit(nn.Sequential(nn.AdaptiveAvgPool2d((4, 3)), nn.Flatten()), classes=36))
    assert ops[0].endswith(": tensor<2x8x8x3xf32> -> tensor<2x4x3x3xf32>")
    assert ops[0].startswith("%0 = rn.adaptive_avg_pool2d")
    larger = nn.Sequential(nn.AdaptiveAvgPool2d(12), nn.Flatten())
    ops = body(emit(larger, classes=432, dtype="bf16"))
    assert ops[0].endswith(": tensor<2x8x8x3xbf16> -> tensor<2x12x12x3xbf16>")
    # Divisible sizes keep their plain lowering.
    ops = body(emit(nn.Sequential(nn.AdaptiveAvgPool2d((4, 2)), nn.Flatten()), classes=24))
    assert ops[0].startswith("%0 = rn.avg_pool2d %images kernel [2, 4] stride [2, 4] pad [0, 0]")


def test_pool_ceil_mode_and_exclude_pad() -> None:
    class M(nn.Module):
        def forward(self, x: rn.Value) -> rn.Value:
            x = rn.max_pool2d(x, 3, 2, ceil_mode=True)  # 8 -> 4 (floor mode: 3)
            x = rn.avg_pool2d(x, 2, 2, 1, ceil_mode=True, count_include_pad=False)  # 4 -> 3
            return rn.flatten(x)

    ops = body(emit(M(), classes=27))
    assert ops[0] == (
        "%0 = rn.max_pool2d %images kernel [3, 3] stride [2, 2] pad [0, 0] ceil_mode : "
        "tensor<2x8x8x3xf32> -> tensor<2x4x4x3xf32>"
    )
    assert ops[1] == (
        "%1 = rn.avg_pool2d %0 kernel [2, 2] stride [2, 2] pad [1, 1] ceil_mode exclude_pad : "
        "tensor<2x4x4x3xf32> -> tensor<2x3x3x3xf32>"
    )


def test_adaptive_avg_pool_rejects_empty_output() -> None:
    model = nn.Sequential(nn.AdaptiveAvgPool2d((0, 3)), nn.Flatten(), nn.Linear(27, 10))
    with pytest.raises(ValueError, match=r"^0: adaptive_avg_pool2d output size must be positive"):
        emit(model)


def test_output_size_rule() -> None:
    # floor((H + 2p - d(k-1) - 1)/s) + 1 = floor((9 + 2 - 4 - 1)/2) + 1 = 4
    model = nn.Sequential(
        nn.Conv2d(3, 4, 3, stride=2, padding=1, dilation=2), nn.MaxPool2d(3, 1, 1)
    )
    model.append(nn.Flatten()).append(nn.Linear(64, 10))
    ops = body(emit(model, shape=(3, 9, 9)))
    assert ops[0].endswith("-> tensor<2x4x4x4xf32>")
    assert ops[1].endswith("tensor<2x4x4x4xf32> -> tensor<2x4x4x4xf32>")


def test_label_smoothing() -> None:
    text = emit(
        nn.Sequential(nn.Flatten(), nn.Linear(192, 10)),
        loss=nn.CrossEntropyLoss(label_smoothing=0.1),
    )
    assert (
        "label_smoothing 1.000000000e-01 : (tensor<2x10xf32>, tensor<2xi32>) -> tensor<f32>" in text
    )


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_low_precision_dtypes(dtype: str) -> None:
    model = nn.Sequential(
        nn.Conv2d(3, 4, 3, bias=False), nn.BatchNorm2d(4), nn.Flatten(), nn.Linear(144, 10)
    )
    text = emit(model, dtype=dtype)
    assert f"%images: tensor<2x8x8x3x{dtype}>, %labels: tensor<2xi32>) -> tensor<f32>" in text
    assert f'rn.parameter buffer @"1.running_var" : tensor<4x{dtype}> = #rn.init<ones>' in text
    assert f"-> tensor<2x10x{dtype}>" in text
    assert "return %" in text and text.count("tensor<f32>") == 3  # signature, loss op, return
    floats = set(re.findall(r"x(f32|f16|bf16)>", text))
    assert floats == {dtype}


@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_uint8_images_are_normalized_on_the_device(dtype: str) -> None:
    model = nn.Sequential(nn.Conv2d(3, 4, 3, bias=False), nn.Flatten(), nn.Linear(144, 10))
    text = emit(model, dtype=dtype, input_dtype="uint8", mean=(0.5, 0.25, 0.125), std=[0.2, 0.3, 0.4])
    lines = text.splitlines()
    # The two buffers come first, f32 whatever the model's dtype, with their values.
    assert lines[1] == (
        "  rn.parameter buffer @input.mean : tensor<3xf32> = "
        "#rn.init<values, [5.000000000e-01, 2.500000000e-01, 1.250000000e-01]>"
    )
    assert lines[2].startswith("  rn.parameter buffer @input.std : tensor<3xf32> = #rn.init<values, [")
    assert "@forward(%images: tensor<2x8x8x3xui8>, %labels: tensor<2xi32>)" in text
    assert "%0 = rn.param @input.mean : tensor<3xf32>" in text
    assert (
        "%2 = rn.normalize_images %images, %0, %1 : tensor<2x8x8x3xui8>, tensor<3xf32>, "
        f"tensor<3xf32> -> tensor<2x8x8x3x{dtype}>"
    ) in text
    assert "rn.conv2d %2, %3 stride" in text
    # Buffers do not count as parameters.
    trace = rn.trace_model(model, batch=2, input_shape=(3, 8, 8), num_classes=10,
                           input_dtype="uint8", mean=(0.5,) * 3, std=(0.2,) * 3)
    assert trace.num_parameters == 4 * 3 * 3 * 3 + 144 * 10 + 10


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"input_dtype": "uint8"}, "input_dtype='uint8' needs mean and std, one per channel"),
        ({"input_dtype": "uint8", "mean": (0.5,), "std": (0.2,) * 3}, "mean needs 3 values"),
        ({"input_dtype": "uint8", "mean": (0.5,) * 3, "std": (0.2, 0.0, 0.2)},
         "std must be finite and positive"),
        ({"input_dtype": "uint8", "mean": (math.nan,) * 3, "std": (0.2,) * 3}, "mean must be finite"),
        ({"mean": (0.5,) * 3, "std": (0.2,) * 3}, "mean and std apply to input_dtype='uint8'"),
        ({"input_dtype": "int8"}, "input_dtype must be one of float, uint8"),
    ],
)
def test_uint8_images_need_one_mean_and_std_per_channel(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        emit(nn.Sequential(nn.Flatten(), nn.Linear(192, 10)), **kwargs)


def test_values_initializer() -> None:
    from rn.emitter import Init

    assert str(Init.explicit([1, 0.5])) == "#rn.init<values, [1.000000000e+00, 5.000000000e-01]>"
    with pytest.raises(ValueError, match="needs its elements"):
        Init("values")
    with pytest.raises(ValueError, match="takes no elements"):
        Init("zeros", elements=(1.0,))


@pytest.mark.parametrize("dtype", ["f64", "fp16", "F32", ""])
def test_bad_dtype(dtype: str) -> None:
    with pytest.raises(ValueError, match=r"dtype must be one of f32, f16, bf16, got"):
        emit(nn.Sequential(nn.Flatten(), nn.Linear(192, 10)), dtype=dtype)


def test_channel_mismatch_names_module_path() -> None:
    class Inner(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(64, 64, 3, padding=1)

        def forward(self, x: rn.Value) -> rn.Value:
            return self.conv1(x)

    class Outer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Conv2d(3, 128, 1)
            self.layer2 = nn.Sequential(Inner())

        def forward(self, x: rn.Value) -> rn.Value:
            return self.layer2(self.stem(x))

    with pytest.raises(
        ValueError, match=r"^layer2\.0\.conv1: expected 64 input channels, got 128$"
    ):
        emit(Outer())


def test_batch_norm_mismatch() -> None:
    model = nn.Sequential(nn.Conv2d(3, 8, 1), nn.BatchNorm2d(16))
    with pytest.raises(ValueError, match=r"^1: expected 16 channels, got 8$"):
        emit(model)


def test_linear_mismatch() -> None:
    model = nn.Sequential(nn.Flatten(), nn.Linear(100, 10))
    with pytest.raises(ValueError, match=r"^1: expected 100 input features, got 192$"):
        emit(model)


def test_linear_needs_flatten() -> None:
    with pytest.raises(ValueError, match=r"^0: linear expects a 2-D input .*add a Flatten\(\)"):
        emit(nn.Sequential(nn.Linear(3, 10)))


def test_conv_on_flat_input() -> None:
    with pytest.raises(
        ValueError, match=r"^1: conv2d expects a 4-D NHWC input, got shape \[2, 192\]"
    ):
        emit(nn.Sequential(nn.Flatten(), nn.Conv2d(3, 3, 1)))


def test_negative_spatial_size() -> None:
    model = nn.Sequential(nn.Conv2d(3, 4, 5), nn.Conv2d(4, 4, 5))
    with pytest.raises(
        ValueError, match=r"^1: conv2d output spatial size would be 0x0 \(non-positive\)"
    ):
        emit(model)
    with pytest.raises(ValueError, match=r"^0: max_pool2d output spatial size would be 0x0"):
        emit(nn.Sequential(nn.MaxPool2d(10)))


def test_pool_padding_limit() -> None:
    with pytest.raises(
        ValueError, match=r"padding \[2, 2\] must be at most half the kernel \[2, 2\]"
    ):
        emit(nn.Sequential(nn.MaxPool2d(2, padding=2)))


def test_logits_shape_checked() -> None:
    with pytest.raises(
        ValueError, match=r"expected logits of shape \[2, 10\] \[N, num_classes\], got \[2, 7\]"
    ):
        emit(nn.Sequential(nn.Flatten(), nn.Linear(192, 7)))
    with pytest.raises(
        ValueError,
        match=r"expected logits of shape \[2, 10\] \[N, num_classes\], got \[2, 8, 8, 3\]",
    ):
        emit(nn.Sequential(nn.ReLU()))


def test_add_shape_mismatch_in_custom_forward() -> None:
    class Bad(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 1)

        def forward(self, x: rn.Value) -> rn.Value:
            return self.conv(x) + x

    with pytest.raises(
        ValueError, match=r"^Bad: add operands differ: tensor<2x8x8x4xf32> vs tensor<2x8x8x3xf32>$"
    ):
        emit(Bad())


def test_unregistered_parameter() -> None:
    class Sneaky(nn.Module):
        hidden: nn.Linear

        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(192, 10)
            self.__dict__["hidden"] = nn.Linear(192, 10)  # bypasses registration

        def forward(self, x: rn.Value) -> rn.Value:
            return self.hidden(rn.flatten(x))

    with pytest.raises(ValueError, match=r"linear weight is not registered in the model"):
        emit(Sneaky())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"batch": 0}, r"batch must be a positive integer, got 0"),
        ({"num_classes": -1}, r"num_classes must be a positive integer, got -1"),
        ({"input_shape": (3, 8)}, r"input_shape must be \(C, H, W\)"),
    ],
)
def test_bad_arguments(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"batch": 2, "input_shape": (3, 8, 8), "num_classes": 10, **kwargs}
    with pytest.raises(ValueError, match=message):
        rn.emit_model(nn.Sequential(nn.Flatten(), nn.Linear(192, 10)), **args)  # type: ignore[arg-type]


def test_module_outside_trace() -> None:
    with pytest.raises(TypeError, match="must be called on a traced tensor value"):
        nn.ReLU()(3)


def test_trace_summary() -> None:
    trace = rn.trace_model(Tiny(), batch=4, input_shape=(3, 32, 32), num_classes=10)
    assert [layer.name for layer in trace.layers] == [
        *("0", "1", "relu", "pool", "gap", "flatten", "drop", "fc"),
        "loss",
    ]
    assert trace.layers[0].output_shape == (4, 32, 32, 8)
    assert trace.layers[0].num_params == 216
    assert trace.num_parameters == 216 + 16 + 80
    assert trace.layers[-1].output_shape == ()
    assert "trainable parameters: 312" in trace.summary()
    assert re.search(r"^loss +CrossEntropyLoss +scalar +0$", trace.summary(), re.M)


class Dense(nn.Module):
    """A DenseNet-like unit in NHWC: a branch concatenated to its input, split again into an
    uneven pair (torch.split's rule), shuffled, and pooled."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1, bias=False)
        self.shuffle = nn.ChannelShuffle(7)

    def forward(self, x: rn.Value) -> rn.Value:
        y = rn.cat([x, self.conv(x)])  # 3 + 4 = 7 channels
        a, b = rn.split(y, 4)  # 4 and 3
        y = self.shuffle(rn.concat([b, a, a, b]))  # 14 channels, 7 groups
        return rn.flatten(rn.global_avg_pool(y))


def test_concat_split_and_channel_shuffle_text() -> None:
    """Tests the text of rn.concat (its operand list and signature), rn.split (one op of
    several results, ``%n:k``, used as ``%n#i``) and rn.channel_shuffle."""
    ops = body(emit(Dense(), classes=14))
    t = "tensor<2x8x8x{}xf32>".format
    assert ops[1] == f"%2 = rn.concat %images, %1 : ({t(3)}, {t(4)}) -> {t(7)}"
    assert ops[2] == f"%3:2 = rn.split %2 : {t(7)} -> {t(4)}, {t(3)}"
    assert ops[3] == (
        f"%4 = rn.concat %3#1, %3#0, %3#0, %3#1 : ({t(3)}, {t(4)}, {t(4)}, {t(3)}) -> {t(14)}"
    )
    assert ops[4] == f"%5 = rn.channel_shuffle %4 groups 7 : {t(14)}"
    assert ops[5] == f"%6 = rn.global_avg_pool %5 : {t(14)} -> tensor<2x1x1x14xf32>"
    assert repr(Dense().shuffle) == "ChannelShuffle(groups=7)"


def test_split_and_chunk_sizes_follow_pytorch() -> None:
    """Tests torch's slice sizes: split by a size (the last slice smaller), by a list, chunk
    into ceil(C / chunks) channels (fewer slices than asked when C is small), and on [N, C]
    values; one slice, one value, one group and C groups emit nothing."""

    def sizes(fn: object, shape: tuple[int, int, int] = (10, 2, 2)) -> list[list[int]]:
        found: list[list[int]] = []

        class M(nn.Module):
            def forward(self, x: rn.Value) -> rn.Value:
                parts = fn(x)  # type: ignore[operator]
                found.append([p.shape[-1] for p in parts])
                y = rn.concat(parts)
                return rn.flatten(rn.global_avg_pool(y)) if y.ndim == 4 else y

        emit(M(), shape=shape, classes=shape[0])
        return found

    assert sizes(lambda x: rn.split(x, 4)) == [[4, 4, 2]]
    assert sizes(lambda x: rn.split(x, [1, 6, 3], dim=3)) == [[1, 6, 3]]
    assert sizes(lambda x: rn.chunk(x, 3)) == [[4, 4, 2]]
    assert sizes(lambda x: rn.chunk(x, 4), (6, 2, 2)) == [[2, 2, 2]]  # as torch.chunk(6, 4)
    assert sizes(lambda x: rn.chunk(x, 1)) == [[10]]
    assert sizes(lambda x: rn.split(rn.flatten(rn.global_avg_pool(x)), [3, 7])) == [[3, 7]]

    class Identities(nn.Module):
        def forward(self, x: rn.Value) -> rn.Value:
            y = rn.concat([rn.split(x, 3)[0]])
            y = rn.channel_shuffle(rn.channel_shuffle(y, 1), 3)
            return rn.flatten(y)

    ops = body(emit(Identities(), classes=12, shape=(3, 2, 2)))
    assert ops[0].startswith("%0 = rn.flatten %images")


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (lambda x: rn.cat([x, x], dim=1),
         r"^M: cat along dim 1 of tensor<2x8x8x3xf32>: RN cats along the channels only, the "
         r"last dimension of its NHWC and \[N, C\] values \(dim=-1; PyTorch's dim 1 of NCHW\)$"),
        (lambda x: rn.concat([x, rn.max_pool2d(x, 2)]),
         r"^M: concat operands differ in more than their channels: tensor<2x8x8x3xf32> vs "
         r"tensor<2x4x4x3xf32>$"),
        (lambda x: rn.concat([x, 2.0]),
         r"^M: concat expects traced tensor values of the same trace$"),
        (lambda x: rn.concat([]), r"^concat: expected a non-empty list of traced tensor values"),
        (lambda x: rn.concat(x), r"^concat: expected a non-empty list of traced tensor values"),
        (lambda x: rn.split(x, [1, 1]),
         r"^M: split sizes \[1, 1\] must be positive and add up to the 3 channels of "
         r"tensor<2x8x8x3xf32>$"),
        (lambda x: rn.split(x, [0, 3]), r"^M: split sizes \[0, 3\] must be positive"),
        (lambda x: rn.split(x, 0), r"^M: split size must be positive, got 0$"),
        (lambda x: rn.split(x, 1.5), r"^M: split size must be an int or a list of ints, got 1.5$"),
        (lambda x: rn.split(x, 1, dim=0), r"^M: split along dim 0 of tensor<2x8x8x3xf32>"),
        (lambda x: rn.split(x, 1, dim=4), r"^M: split dim must be an int in \[-4, 3\], got 4$"),
        (lambda x: rn.chunk(x, 0), r"^M: chunk expects a positive number of chunks, got 0$"),
        (lambda x: rn.channel_shuffle(x, 2),
         r"^M: channel_shuffle groups must be a positive int that divides the 3 channels, got 2$"),
        (lambda x: rn.channel_shuffle(rn.flatten(x), 3),
         r"^M: channel_shuffle expects a 4-D NHWC input, got shape \[2, 192\]$"),
    ],
    ids=["cat_dim", "concat_shapes", "concat_number", "concat_empty", "concat_value",
         "split_sum", "split_zero", "split_size", "split_float", "split_dim", "split_dim_range",
         "chunk_zero", "shuffle_groups", "shuffle_rank"],
)
def test_concat_split_and_shuffle_checks(fn: object, message: str) -> None:
    """Tests each argument check of concat, cat, split, chunk and channel_shuffle: one
    ValueError naming the module, as the other ops' checks do."""

    class M(nn.Module):
        def forward(self, x: rn.Value) -> rn.Value:
            out = fn(x)  # type: ignore[operator]
            return rn.flatten(out if isinstance(out, rn.Value) else out[0])

    with pytest.raises(ValueError, match=message):
        emit(M(), classes=192)


def test_pool_modules_take_pytorchs_arguments() -> None:
    """Tests that nn.MaxPool2d and nn.AvgPool2d take torch.nn's arguments (ceil_mode,
    count_include_pad, in torch's positional order) and emit them, and refuse the ones RN does
    not implement (dilation, return_indices, divisor_override)."""
    model = nn.Sequential(
        nn.MaxPool2d(3, 2, 0, 1, False, True),  # 8 -> 4 (floor mode: 3)
        nn.AvgPool2d(2, 2, 1, True, False),  # 4 -> 3
        nn.Flatten(),
    )
    ops = body(emit(model, classes=27))
    assert ops[0] == (
        "%0 = rn.max_pool2d %images kernel [3, 3] stride [2, 2] pad [0, 0] ceil_mode : "
        "tensor<2x8x8x3xf32> -> tensor<2x4x4x3xf32>"
    )
    assert ops[1] == (
        "%1 = rn.avg_pool2d %0 kernel [2, 2] stride [2, 2] pad [1, 1] ceil_mode exclude_pad : "
        "tensor<2x4x4x3xf32> -> tensor<2x3x3x3xf32>"
    )
    assert repr(model[1]) == (
        "AvgPool2d(kernel_size=(2, 2), stride=(2, 2), padding=(1, 1), ceil_mode=True, "
        "count_include_pad=False)"
    )
    assert repr(nn.MaxPool2d(2)) == "MaxPool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))"
    with pytest.raises(ValueError, match=r"MaxPool2d dilation 2 is not supported \(only 1\)"):
        nn.MaxPool2d(3, dilation=2)
    with pytest.raises(ValueError, match=r"MaxPool2d return_indices=True is not supported"):
        nn.MaxPool2d(3, return_indices=True)
    with pytest.raises(ValueError, match=r"AvgPool2d divisor_override is not supported"):
        nn.AvgPool2d(3, divisor_override=2)
    with pytest.raises(ValueError, match=r"ChannelShuffle groups must be a positive int, got 0"):
        nn.ChannelShuffle(0)
