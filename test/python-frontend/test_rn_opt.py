"""Tests that rn-opt verifies everything the frontend emits and re-parses its own output."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

import pytest

import rn
from rn import models, nn

RunOpt = Callable[..., str]


def op_counts(text: str) -> Counter[str]:
    return Counter(re.findall(r"= (rn\.[a-z_0-9]+) ", text))


def check(run_rn_opt: RunOpt, text: str) -> str:
    out = run_rn_opt(text)
    assert op_counts(out) == op_counts(text)
    assert out.count("rn.parameter ") == text.count("rn.parameter ")
    again = run_rn_opt(out)
    assert again == out, "rn-opt output does not round-trip"
    return out


@pytest.mark.parametrize("name", list(models.MODELS))
def test_zoo_model_verifies(run_rn_opt: RunOpt, name: str) -> None:
    check(run_rn_opt, models.emit(name, batch=2))


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("name", ["resnet18c", "vgg11", "lenet5"])
def test_low_precision_verifies(run_rn_opt: RunOpt, name: str, dtype: str) -> None:
    out = check(run_rn_opt, models.emit(name, batch=2, dtype=dtype))
    assert f"x{dtype}>" in out and "-> tensor<f32>" in out


def test_every_op_form_verifies(run_rn_opt: RunOpt) -> None:
    class AllOps(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(4, 8, 3, stride=2, padding=2, dilation=2, groups=2)
            self.bn = nn.BatchNorm2d(8, eps=1e-3, momentum=0.01)
            self.tanh = nn.Tanh()
            self.silu = nn.SiLU()
            self.mobile = nn.Sequential(
                nn.ReLU6(), nn.Hardtanh(-0.5, 4), nn.Hardswish(), nn.Hardsigmoid(), nn.Sigmoid(),
                nn.GELU(), nn.GELU("tanh"),
            )
            self.avg = nn.AvgPool2d(3, 1, 1)
            self.max = nn.MaxPool2d((2, 3), (2, 1), (0, 1))
            self.adapt = nn.AdaptiveAvgPool2d((1, 5))  # 2x5 -> 1x5: kernel [2, 1]
            self.flat = nn.Flatten()
            self.drop = nn.Dropout(0.25)
            self.depth = nn.StochasticDepth(0.2)
            self.fc = nn.Linear(8 * 1 * 5, 7)

        def forward(self, x: rn.Value) -> rn.Value:
            y = self.mobile(self.silu(self.tanh(self.bn(self.conv(x)))))
            y = rn.channel_mul(y, rn.sigmoid(rn.global_avg_pool(y)))
            y = self.max(self.depth(self.avg(y)) + y)
            return self.fc(self.drop(self.flat(self.adapt(rn.relu(y)))))

    text = rn.emit_model(
        AllOps(),
        batch=3,
        input_shape=(4, 9, 9),
        num_classes=7,
        loss=nn.CrossEntropyLoss(label_smoothing=0.1),
        name='odd "name"',
    )
    check(run_rn_opt, text)


def test_adaptive_pool_verifies(run_rn_opt: RunOpt) -> None:
    # 10x10 -> 7x7 (overlapping windows), then 7x7 -> 3x3, both rn.adaptive_avg_pool2d.
    model = nn.Sequential(
        nn.Conv2d(3, 4, 1), nn.AdaptiveAvgPool2d(7), nn.AdaptiveAvgPool2d(3), nn.Flatten()
    )
    text = rn.emit_model(model, batch=2, input_shape=(3, 10, 10), num_classes=36)
    out = check(run_rn_opt, text)
    assert op_counts(out)["rn.adaptive_avg_pool2d"] == 2


def test_reference_example_verifies(run_rn_opt: RunOpt) -> None:
    from test_emitter import EXAMPLE

    out = check(run_rn_opt, EXAMPLE)
    assert "rn.parameter @fc.weight : tensor<10x8xf32>" in out


def test_concat_split_and_channel_shuffle_verify(run_rn_opt: RunOpt) -> None:
    """Tests that rn-opt verifies and round-trips rn.concat, rn.split (several results, used
    as %n#i) and rn.channel_shuffle as the frontend emits them, on NHWC and [N, C] values."""

    class Shuffled(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, 9, 1)
            self.shuffle = nn.ChannelShuffle(3)
            self.fc = nn.Linear(12, 10)

        def forward(self, x: rn.Value) -> rn.Value:
            a, b = rn.split(self.shuffle(self.conv(x)), [4, 5])
            y = rn.cat([b, x, a])  # 12 channels
            p, q, r = rn.chunk(rn.flatten(rn.global_avg_pool(y)), 3)
            return self.fc(rn.concat([r, q, p]))

    out = check(run_rn_opt, rn.emit_model(Shuffled(), batch=2, input_shape=(3, 4, 4),
                                          num_classes=10))
    counts = op_counts(out)
    assert (counts["rn.concat"], counts["rn.split"], counts["rn.channel_shuffle"]) == (2, 2, 1)
