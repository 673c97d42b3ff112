"""Tests the model zoo (architecture, parameter counts, names, initializers) and its CLI."""

from __future__ import annotations

import math
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from rn import models, nn
from rn.emitter import Init, ParamSpec

# Trainable parameters (BN affine included, running stats excluded), as PyTorch counts them.
EXPECTED_PARAMS = {
    "mlp": 1_863_690,
    "resnet18c": 11_173_962,
    "vgg11c": 9_228_362,
    "resnet18": 11_689_512,
    "resnet34": 21_797_672,
    "resnet50": 25_557_032,
    "vgg11": 132_868_840,  # torchvision vgg11_bn
    "vgg16": 138_365_992,  # torchvision vgg16_bn
    # lenet5: conv1 6*5*5*1+6 = 156; conv2 16*5*5*6+16 = 2,416; fc1 400*120+120 = 48,120;
    # fc2 120*84+84 = 10,164; fc3 84*10+10 = 850 -> 61,706.
    "lenet5": 61_706,
    # fashion_cnn (convs without bias): conv 32*9*1 = 288, 64*9*32 = 18,432 (sum 18,720);
    # BN affine 2*(32+64) = 192; fc1 3136*128+128 = 401,536; fc2 128*10+10 = 1,290
    # -> 18,720+192+401,536+1,290 = 421,738.
    "fashion_cnn": 421_738,
    # vgg16c (convs without bias): 3*64*9 = 1,728; 64*64*9 = 36,864; 64*128*9 = 73,728;
    # 128*128*9 = 147,456; 128*256*9 = 294,912; 2 x 256*256*9 = 1,179,648; 256*512*9 = 1,179,648;
    # 5 x 512*512*9 = 11,796,480 (convs 14,710,464); BN 2*(2*64+2*128+3*256+6*512) = 8,448;
    # fc 512*10+10 = 5,130 -> 14,724,042.
    "vgg16c": 14_724_042,
    # resnet34c = resnet34 - 7x7 stem (64*49*3 = 9,408) + 3x3 stem (64*9*3 = 1,728)
    #           - fc(1000) (512*1000+1000 = 513,000) + fc(10) (512*10+10 = 5,130)
    #           = 21,797,672 - 9,408 + 1,728 - 513,000 + 5,130 = 21,282,122.
    "resnet34c": 21_282_122,
    # resnet50c = 25,557,032 - 9,408 + 1,728 - (2048*1000+1000 = 2,049,000) + (2048*10+10 = 20,490)
    #           = 23,520,842.
    "resnet50c": 23_520_842,
}

Cli = Callable[..., subprocess.CompletedProcess[str]]


def test_registry_is_complete() -> None:
    assert set(models.MODELS) == set(EXPECTED_PARAMS)


@pytest.mark.parametrize("name", sorted(EXPECTED_PARAMS))
def test_parameter_count(name: str) -> None:
    model = models.build(name)
    assert model.num_parameters() == EXPECTED_PARAMS[name]
    assert sum(p.numel() for p in model.parameters()) == EXPECTED_PARAMS[name]


@pytest.mark.parametrize("name", sorted(EXPECTED_PARAMS))
def test_traces_to_logits(name: str) -> None:
    info = models.MODELS[name]
    trace = models.trace(name, batch=2)
    assert trace.logits_shape == (2, info.num_classes)
    assert trace.num_parameters == EXPECTED_PARAMS[name]
    c, h, w = info.input_shape
    assert (
        f"func.func @forward(%images: tensor<2x{h}x{w}x{c}xf32>, %labels: tensor<2xi32>) "
        "-> tensor<f32>" in trace.text
    )
    assert f'module attributes {{rn.model = "{name}"}}' in trace.text


def _shapes(name: str, **kw: object) -> dict[str, tuple[int, ...]]:
    return {layer.name: layer.output_shape for layer in models.trace(name, batch=2, **kw).layers}  # type: ignore[arg-type]


def test_resnet_output_shapes() -> None:
    s = _shapes("resnet18")
    assert s["conv1"] == (2, 112, 112, 64)
    assert s["maxpool"] == (2, 56, 56, 64)
    assert s["layer2.0.conv1"] == (2, 28, 28, 128)
    assert s["layer4.1.bn2"] == (2, 7, 7, 512)
    assert s["avgpool"] == (2, 1, 1, 512)
    assert s["fc"] == (2, 1000)
    c = _shapes("resnet18c")
    assert "maxpool" not in c
    assert c["conv1"] == (2, 32, 32, 64)
    assert c["layer4.0.downsample.1"] == (2, 4, 4, 512)
    r50 = _shapes("resnet50c")
    assert r50["layer1.0.conv3"] == (2, 32, 32, 256)
    assert r50["layer2.0.conv2"] == (2, 16, 16, 128)  # stride on the 3x3 conv
    assert r50["layer2.0.conv1"] == (2, 32, 32, 128)
    assert r50["fc"] == (2, 10)


def test_vgg_output_shapes() -> None:
    s = _shapes("vgg16")
    assert s["features.43"] == (2, 7, 7, 512)  # last max pool
    assert s["avgpool"] == (2, 7, 7, 512)  # identity at 224x224
    assert s["classifier.0"] == (2, 4096)
    c = _shapes("vgg11c")
    assert c["28"] == (2, 1, 1, 512)  # 8 x (conv, BN, ReLU) + 5 max pools = 29 layers
    assert c["29"] == (2, 512)  # Flatten
    assert c["30"] == (2, 10)


def test_small_model_shapes() -> None:
    le = _shapes("lenet5")
    assert (le["0"], le["2"], le["3"], le["5"], le["6"]) == (
        (2, 28, 28, 6),
        (2, 14, 14, 6),
        (2, 10, 10, 16),
        (2, 5, 5, 16),
        (2, 400),
    )
    f = _shapes("fashion_cnn")
    assert f["3"] == (2, 14, 14, 32)
    assert f["7"] == (2, 7, 7, 64)
    assert f["9"] == (2, 128)


def test_torchvision_state_dict_names() -> None:
    names = [s.name for s in models.build("resnet18").state_specs()]
    assert names[:5] == [
        "conv1.weight",
        "bn1.weight",
        "bn1.bias",
        "bn1.running_mean",
        "bn1.running_var",
    ]
    assert names[5] == "layer1.0.conv1.weight"
    for n in (
        "layer2.0.downsample.0.weight",
        "layer2.0.downsample.1.running_var",
        "layer4.1.bn2.bias",
    ):
        assert n in names
    assert "layer1.0.downsample.0.weight" not in names
    assert names[-2:] == ["fc.weight", "fc.bias"]
    # torchvision resnet18 has 122 state-dict entries, 20 of which are num_batches_tracked.
    assert len(names) == 102
    r50 = [s.name for s in models.build("resnet50").state_specs()]
    assert "layer1.0.downsample.0.weight" in r50 and "layer3.5.conv3.weight" in r50
    vgg = [s.name for s in models.build("vgg11").state_specs()]
    assert vgg[:6] == [
        "features.0.weight",
        "features.0.bias",
        "features.1.weight",
        "features.1.bias",
        "features.1.running_mean",
        "features.1.running_var",
    ]
    assert vgg[-6:] == [
        "classifier.0.weight",
        "classifier.0.bias",
        "classifier.3.weight",
        "classifier.3.bias",
        "classifier.6.weight",
        "classifier.6.bias",
    ]


def _specs(name: str) -> dict[str, ParamSpec]:
    return {s.name: s for s in models.build(name).state_specs()}


def test_zoo_initializers() -> None:
    r18 = _specs("resnet18")
    conv1 = r18["conv1.weight"]
    assert conv1.shape == (64, 7, 7, 3)
    assert conv1.init.kind == "normal"
    assert conv1.init.value == pytest.approx(math.sqrt(2 / (64 * 7 * 7)))
    down = r18["layer2.0.downsample.0.weight"]
    assert down.init.value == pytest.approx(math.sqrt(2 / 128))
    assert r18["fc.weight"].init.value == pytest.approx(1 / math.sqrt(512))
    assert r18["bn1.running_var"].init == Init.ones()
    # CIFAR variants keep PyTorch defaults, like bench/torch_reference.py.
    r18c = _specs("resnet18c")
    assert r18c["conv1.weight"].init.kind == "uniform"
    assert r18c["conv1.weight"].init.value == pytest.approx(1 / math.sqrt(27))
    vgg = _specs("vgg11")
    assert vgg["features.0.bias"].init == Init.zeros()
    assert vgg["features.4.weight"].init.value == pytest.approx(math.sqrt(2 / (128 * 9)))
    assert vgg["classifier.6.weight"].init == Init.normal(0.01)
    assert vgg["classifier.6.bias"].init == Init.zeros()


def test_custom_classes_and_shape() -> None:
    trace = models.trace("resnet18c", batch=2, num_classes=100, input_shape=(1, 64, 64))
    assert trace.logits_shape == (2, 100)
    assert "%images: tensor<2x64x64x1xf32>" in trace.text
    assert (
        models.build("mlp", input_shape=(3, 32, 32)).num_parameters()
        == 3072 * 1024 + 1024 + 1049600 + 10250
    )
    assert models.trace("vgg11c", batch=2, input_shape=(3, 64, 64)).logits_shape == (2, 10)


def test_unknown_model() -> None:
    with pytest.raises(ValueError, match="unknown model 'resnet9'; valid names: mlp, lenet5"):
        models.build("resnet9")


def test_vgg_imagenet_rejects_small_images() -> None:
    with pytest.raises(
        ValueError, match=r"^features\.28: max_pool2d output spatial size would be 0x0"
    ):
        models.trace("vgg11", batch=2, input_shape=(3, 16, 16))


def test_vgg_imagenet_on_cifar_images_pools_1x1_to_7x7() -> None:
    # As torchvision's: AdaptiveAvgPool2d(7) repeats a 1x1 feature map.
    text = models.emit("vgg11", batch=2, input_shape=(3, 32, 32))
    assert "rn.adaptive_avg_pool2d %" in text
    assert ": tensor<2x1x1x512xf32> -> tensor<2x7x7x512xf32>" in text
    assert models.trace("vgg11", batch=2, input_shape=(3, 32, 32)).logits_shape == (2, 1000)


def test_resnet_is_custom_module() -> None:
    assert isinstance(models.build("resnet50"), models.ResNet)
    assert isinstance(models.build("resnet50").layer1[0], nn.Bottleneck)


# --------------------------------------------------------------------------- #
# Command line
# --------------------------------------------------------------------------- #


def test_cli_stdout(cli: Cli) -> None:
    proc = cli("mlp", "--batch", "2")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == models.emit("mlp", batch=2)
    assert proc.stderr == ""


def test_cli_options(cli: Cli, tmp_path: Path) -> None:
    out = tmp_path / "m.mlir"
    proc = cli(
        "resnet18c", "--batch", "4", "--image", "64", "--channels", "1", "--classes", "100",
        "--dtype", "bf16", "-o", str(out),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    text = out.read_text()
    assert "%images: tensor<4x64x64x1xbf16>" in text
    assert "rn.parameter @fc.weight : tensor<100x512xbf16>" in text
    assert cli("mlp", "-o", "-", "--batch", "2").stdout.startswith(
        'module attributes {rn.model = "mlp"}'
    )


def test_cli_uint8_images(cli: Cli) -> None:
    proc = cli(
        "resnet18c", "--batch", "2", "--input-dtype", "uint8", "--mean", "0.49,0.48,0.45",
        "--std", "0.25,0.24,0.26",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == models.emit(
        "resnet18c", batch=2, input_dtype="uint8", mean=(0.49, 0.48, 0.45), std=(0.25, 0.24, 0.26)
    )
    assert "%images: tensor<2x32x32x3xui8>" in proc.stdout
    assert "rn.normalize_images %images" in proc.stdout
    missing = cli("resnet18c", "--input-dtype", "uint8")
    assert missing.returncode == 1
    assert "input_dtype='uint8' needs mean and std" in missing.stderr
    assert cli("resnet18c", "--mean", "0.5,x").returncode == 2


def test_cli_list(cli: Cli) -> None:
    proc = cli("--list")
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    assert len(lines) == 1 + len(EXPECTED_PARAMS)
    row = next(ln for ln in lines if ln.startswith("resnet50 "))
    assert "3x224x224" in row and "1000" in row and "25,557,032" in row


def test_cli_summary(cli: Cli) -> None:
    proc = cli("lenet5", "--batch", "2", "--summary")
    assert proc.returncode == 0
    assert proc.stdout.startswith("module attributes")
    assert "trainable parameters: 61,706" in proc.stderr
    assert any(
        ln.split()[:4] == ["0", "Conv2d", "2x28x28x6", "156"] for ln in proc.stderr.splitlines()
    )


def test_cli_unknown_model(cli: Cli) -> None:
    proc = cli("resnet9")
    assert proc.returncode == 2
    assert "unknown model 'resnet9'" in proc.stderr
    assert "mlp, lenet5, fashion_cnn, vgg11c" in proc.stderr
    assert cli().returncode == 2
    assert cli("mlp", "--dtype", "f64").returncode == 2


def test_cli_shape_error(cli: Cli) -> None:
    proc = cli("vgg11", "--image", "16")
    assert proc.returncode == 1
    assert "error: features.28: max_pool2d output spatial size would be 0x0" in proc.stderr
    assert proc.stdout == ""
