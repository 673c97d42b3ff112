"""Tests TrainingOptions (pass option strings, validation), build_training and the --train CLI."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import rn
from rn import models, training
from rn.training import build_training, find_rn_opt, format_option

try:  # made from the compiler's option list
    TrainingOptions = training.TrainingOptions
except rn.NativeUnavailable as e:
    if os.environ.get("RN_REQUIRE_TOOLS") == "1":
        raise
    pytest.skip(f"no compiler to list the options: {e}", allow_module_level=True)

REPO = Path(__file__).resolve().parents[2]
RunOpt = Callable[..., str]
Cli = Callable[..., subprocess.CompletedProcess[str]]


# --------------------------------------------------------------------------- #
# Option strings
# --------------------------------------------------------------------------- #


def test_defaults_give_no_options() -> None:
    opts = TrainingOptions()
    assert opts.pass_options() == ""
    assert opts.pass_argument() == "--rn-build-training"
    # Giving the defaults explicitly changes nothing.
    assert TrainingOptions(optimizer="sgd", momentum=0.9, loss_scale=65536).pass_options() == ""


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"optimizer": "adamw"}, "optimizer=adamw"),
        ({"optimizer": "lars"}, "optimizer=lars"),
        ({"momentum": 0.0}, "momentum=0.0"),
        ({"momentum": 0.875}, "momentum=0.875"),
        ({"nesterov": True}, "nesterov=true"),
        ({"weight_decay": 5e-4}, "weight-decay=0.0005"),
        ({"no_decay_bn_bias": True}, "no-decay-bn-bias=true"),
        ({"beta1": 0.8}, "beta1=0.8"),
        ({"beta2": 0.95}, "beta2=0.95"),
        ({"adam_eps": 1e-6}, "adam-eps=1e-06"),
        ({"lars_trust": 0.02}, "lars-trust=0.02"),
        ({"lars_eps": 1e-8}, "lars-eps=1e-08"),
        ({"precision": "f16"}, "precision=f16"),
        ({"precision": "bf16"}, "precision=bf16"),
        ({"loss_scaling": "static"}, "loss-scaling=static"),
        ({"loss_scaling": "dynamic"}, "loss-scaling=dynamic"),
        ({"loss_scale": 1024.0}, "loss-scale=1024.0"),
        ({"growth_interval": 100}, "growth-interval=100"),
        ({"growth_factor": 4.0}, "growth-factor=4.0"),
        ({"backoff_factor": 0.25}, "backoff-factor=0.25"),
        ({"ema_decay": 0.9999}, "ema-decay=0.9999"),
    ],
)
def test_each_option(kwargs: dict[str, object], expected: str) -> None:
    opts = TrainingOptions(**kwargs)  # type: ignore[arg-type]
    assert opts.pass_options() == expected
    assert opts.pass_argument() == f"--rn-build-training={expected}"


def _non_default(f: dataclasses.Field[Any]) -> object:
    """A value of field ``f`` other than its default that the pass takes."""
    if f.metadata["choices"]:
        return f.metadata["choices"][-1]
    if isinstance(f.default, bool):
        return not f.default
    if isinstance(f.default, int):
        return f.default + 7
    return 0.375 if f.default != 0.375 else 0.25


def test_training_options_are_the_compilers(rn_opt: Path) -> None:
    """The fields are rn-build-training's options in declaration order, with
    its types, defaults, help and choices; the in-process compiler's list is
    rn-compile's (``--list-pipeline-options``, next to rn-opt)."""
    listed = json.loads(
        subprocess.run(
            [str(rn_opt.with_name("rn-compile")), "--list-pipeline-options"],
            capture_output=True, text=True, check=True,
        ).stdout
    )  # fmt: skip
    declared = [o for o in listed if o["pass"] == "rn-build-training"]
    assert declared == training.pass_option_list()
    declared = [o for o in declared if o["name"] != "forward"]
    fields = dataclasses.fields(TrainingOptions)
    assert [f.name.replace("_", "-") for f in fields] == [o["name"] for o in declared]
    types = {"bool": bool, "int": int, "float": float, "string": str}
    for f, o in zip(fields, declared, strict=True):
        assert type(f.default) is types[o["type"]], f.name
        assert format_option(f.default) == format_option(
            training._parse_default(o["default"], o["type"])
        )
        assert (f.metadata["help"], f.metadata["choices"]) == (o["help"], tuple(o["choices"]))
    assert TrainingOptions().momentum == 0.9 and TrainingOptions().growth_interval == 2000
    assert training.CHOICES == {
        "optimizer": ("sgd", "adamw", "lars"),
        "precision": ("f32", "f16", "bf16"),
        "loss_scaling": ("none", "static", "dynamic"),
    }


def _printed_pass_options(rn_opt: Path, argument: str) -> dict[str, str]:
    """rn-build-training's options as rn-opt set them from ``argument``
    (``--dump-pass-pipeline``, before the pass runs on an empty module)."""
    proc = subprocess.run(
        [str(rn_opt), "--dump-pass-pipeline", argument, "-o", os.devnull],
        input="module {}\n", capture_output=True, text=True, check=False,
    )  # fmt: skip
    found = re.search(r"rn-build-training\{(.*)\}", proc.stderr)
    assert found, proc.stderr
    return dict(token.split("=", 1) for token in found.group(1).split())


def test_each_option_round_trips_through_rn_opt(rn_opt: Path) -> None:
    """Each field, set to another value than its default, reaches the pass
    under its name and reads back as that value."""
    kinds = {o["name"]: o["type"] for o in training.pass_option_list()}
    defaults = _printed_pass_options(rn_opt, TrainingOptions().pass_argument())
    for f in dataclasses.fields(TrainingOptions):
        name = f.name.replace("_", "-")
        value = _non_default(f)
        opts = TrainingOptions(**{f.name: value})
        printed = _printed_pass_options(rn_opt, opts.pass_argument())
        assert training._parse_default(printed[name], kinds[name]) == value, name
        assert {k: v for k, v in printed.items() if k != name} == {
            k: v for k, v in defaults.items() if k != name
        }


def test_without_a_compiler(tmp_path: Path) -> None:
    """Without rn._compiler or rn-compile, rn imports and emits models; the
    options say what is missing."""
    env = dict(os.environ, RN_COMPILE=str(tmp_path / "missing"), PYTHONPATH=str(REPO / "python-frontend"))
    script = (
        "import rn, rn._native_loader as l\n"
        "l._failures['_compiler'] = 'no compiler here'\n"
        "from rn import models\n"
        "assert models.main(['mlp', '--batch', '2', '-o', '/dev/null']) == 0\n"
        "try:\n"
        "    rn.TrainingOptions\n"
        "except rn.NativeUnavailable as e:\n"
        "    print(e)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert "made from the compiler's option list" in proc.stdout
    assert "no compiler here" in proc.stdout


def test_option_order_is_field_order() -> None:
    opts = TrainingOptions(
        ema_decay=0.99, precision="f16", weight_decay=5e-5, optimizer="adamw",
        loss_scaling="dynamic", nesterov=False, beta2=0.98,
    )  # fmt: skip
    assert opts.pass_options() == (
        "optimizer=adamw weight-decay=5e-05 beta2=0.98 precision=f16 "
        "loss-scaling=dynamic ema-decay=0.99"
    )
    assert opts.pass_argument() == "--rn-build-training=" + opts.pass_options()


@pytest.mark.parametrize("value", [0.1 + 0.2, 1 / 3, 1e-300, 123456.789e10])
def test_floats_round_trip(value: float) -> None:
    text = TrainingOptions(weight_decay=value).pass_options()
    assert float(text.removeprefix("weight-decay=")) == value


def test_ints_are_stored_as_floats() -> None:
    opts = TrainingOptions(momentum=0, weight_decay=1)
    assert isinstance(opts.momentum, float) and isinstance(opts.weight_decay, float)
    assert opts.pass_options() == "momentum=0.0 weight-decay=1.0"


def test_frozen_and_replace() -> None:
    opts = TrainingOptions()
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.optimizer = "lars"  # type: ignore[misc]
    assert dataclasses.replace(opts, optimizer="lars").pass_options() == "optimizer=lars"


def test_exported_from_package() -> None:
    assert rn.TrainingOptions is TrainingOptions
    assert rn.build_training is build_training and rn.find_rn_opt is find_rn_opt
    assert rn.OPTIMIZERS == ("sgd", "adamw", "lars")
    assert rn.PRECISIONS == ("f32", "f16", "bf16")
    assert rn.LOSS_SCALINGS == ("none", "static", "dynamic")


# --------------------------------------------------------------------------- #
# Validation
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"optimizer": "adam"}, "optimizer must be one of sgd, adamw, lars, got 'adam'"),
        ({"precision": "fp16"}, "precision must be one of f32, f16, bf16, got 'fp16'"),
        (
            {"loss_scaling": "auto"},
            "loss_scaling must be one of none, static, dynamic, got 'auto'",
        ),
        ({"weight_decay": -1e-4}, "weight_decay must be non-negative, got -0.0001"),
        ({"momentum": 1.0}, r"momentum must be in \[0, 1\), got 1.0"),
        ({"momentum": -0.1}, r"momentum must be in \[0, 1\), got -0.1"),
        ({"ema_decay": 1}, r"ema_decay must be in \[0, 1\), got 1.0"),
        ({"loss_scale": 0.0}, "loss_scale must be positive, got 0.0"),
        ({"momentum": float("nan")}, "momentum must be a finite float, got nan"),
        ({"beta1": float("inf")}, "beta1 must be a finite float, got inf"),
        ({"momentum": "0.9"}, "momentum must be a finite float, got '0.9'"),
        ({"momentum": True}, "momentum must be a finite float, got True"),
        ({"nesterov": 1}, "nesterov must be a bool, got 1"),
        ({"no_decay_bn_bias": "false"}, "no_decay_bn_bias must be a bool, got 'false'"),
        ({"growth_interval": 2.5}, "growth_interval must be an int, got 2.5"),
    ],
)
def test_validation(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=f"^{message}$"):
        TrainingOptions(**kwargs)  # type: ignore[arg-type]


def test_combinations_are_left_to_the_pass() -> None:
    opts = TrainingOptions(precision="bf16", loss_scaling="dynamic")
    assert opts.pass_options() == "precision=bf16 loss-scaling=dynamic"


# --------------------------------------------------------------------------- #
# Locating and running rn-opt (no real tool needed)
# --------------------------------------------------------------------------- #


def _fake_rn_opt(tmp_path: Path) -> Path:
    """An executable that prints its arguments one per line, then echoes stdin."""
    tool = tmp_path / "fake-rn-opt"
    tool.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        "print(*sys.argv[1:], sep='\\n')\n"
        "sys.stdout.write(sys.stdin.read())\n"
    )
    tool.chmod(0o755)
    return tool


def test_find_rn_opt_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tool = _fake_rn_opt(tmp_path)
    monkeypatch.setenv("RN_OPT", str(tool))
    assert find_rn_opt() == str(tool)
    monkeypatch.setenv("RN_OPT", str(tmp_path / "missing"))
    assert find_rn_opt() is None


def test_find_rn_opt_fallbacks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RN_OPT", raising=False)
    built = REPO / "build" / "bin" / "rn-opt"
    found = find_rn_opt()
    if built.is_file() and os.access(built, os.X_OK):
        assert found == str(built)
    else:
        assert found is None or Path(found).name == "rn-opt"


def test_build_training_passes_one_argument(tmp_path: Path) -> None:
    tool = _fake_rn_opt(tmp_path)
    opts = TrainingOptions(optimizer="adamw", precision="f16")
    out = build_training("module {}\n", opts, rn_opt=str(tool))
    lines = out.splitlines()
    assert "--rn-build-training=optimizer=adamw precision=f16" in lines
    assert lines[-1] == "module {}"


def test_build_training_without_rn_opt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RN_OPT", str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match="rn-opt not found: set RN_OPT"):
        build_training("module {}\n", TrainingOptions())
    with pytest.raises(FileNotFoundError, match="rn-opt not found at"):
        build_training("module {}\n", TrainingOptions(), rn_opt=str(tmp_path / "missing"))


def test_build_training_failure(tmp_path: Path) -> None:
    tool = tmp_path / "failing-rn-opt"
    tool.write_text(f"#!{sys.executable}\nimport sys\nsys.exit('error: no good')\n")
    tool.chmod(0o755)
    with pytest.raises(RuntimeError, match=r"rn-opt exited 1\):\nerror: no good$"):
        build_training("module {}\n", TrainingOptions(), rn_opt=str(tool))


# --------------------------------------------------------------------------- #
# Command line (no real tool needed)
# --------------------------------------------------------------------------- #


def test_cli_print_pass_options(cli: Cli) -> None:
    proc = cli(
        "--print-pass-options", "--optimizer", "lars", "--momentum", "0.95", "--weight-decay",
        "5e-5", "--no-decay-bn-bias", "--precision", "bf16", "--ema-decay", "0.999",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    expected = TrainingOptions(
        optimizer="lars", momentum=0.95, weight_decay=5e-5, no_decay_bn_bias=True,
        precision="bf16", ema_decay=0.999,
    ).pass_argument()  # fmt: skip
    assert proc.stdout == expected + "\n"
    assert expected == (
        "--rn-build-training=optimizer=lars momentum=0.95 weight-decay=5e-05 "
        "no-decay-bn-bias=true precision=bf16 ema-decay=0.999"
    )
    # A model name is allowed and nothing but the argument is printed.
    proc = cli("resnet18c", "--print-pass-options", "--nesterov")
    assert (proc.returncode, proc.stdout) == (0, "--rn-build-training=nesterov=true\n")
    assert cli("--print-pass-options").stdout == "--rn-build-training\n"


@pytest.mark.parametrize(
    "args",
    [
        ["--optimizer", "adamw"],
        ["--momentum", "0.5"],
        ["--nesterov"],
        ["--weight-decay", "1e-4"],
        ["--no-decay-bn-bias"],
        ["--precision", "f16"],
        ["--loss-scaling", "static"],
        ["--loss-scale", "128"],
        ["--ema-decay", "0.9"],
        ["--growth-interval", "10"],
    ],
)
def test_cli_training_flag_needs_train(cli: Cli, args: list[str]) -> None:
    proc = cli("mlp", *args)
    assert proc.returncode == 2
    assert f"error: {args[0]} needs --train or --print-pass-options" in proc.stderr
    assert proc.stdout == ""


def test_cli_bad_training_values(cli: Cli) -> None:
    proc = cli("--print-pass-options", "--momentum", "1.5")
    assert proc.returncode == 2
    assert "error: momentum must be in [0, 1), got 1.5" in proc.stderr
    proc = cli("mlp", "--train", "--optimizer", "adam")
    assert proc.returncode == 2 and "invalid choice: 'adam'" in proc.stderr


def test_cli_label_smoothing(cli: Cli) -> None:
    proc = cli("mlp", "--batch", "2", "--label-smoothing", "0.1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == models.emit("mlp", batch=2, label_smoothing=0.1)
    assert "label_smoothing 1.000000000e-01" in proc.stdout
    proc = cli("mlp", "--label-smoothing", "2")
    assert proc.returncode == 1 and "label_smoothing must be in [0, 1], got 2.0" in proc.stderr


def test_cli_train_without_rn_opt(cli: Cli, tmp_path: Path) -> None:
    env = {"RN_OPT": str(tmp_path / "missing")}
    proc = cli("mlp", "--batch", "2", "--train", env=env)
    assert proc.returncode == 1
    assert "error: rn-opt not found" in proc.stderr
    assert proc.stdout == ""


# --------------------------------------------------------------------------- #
# With the real rn-opt
# --------------------------------------------------------------------------- #

CONFIGS = {
    "sgd-f32": TrainingOptions(),
    "adamw-f16-dynamic-ema": TrainingOptions(
        optimizer="adamw", weight_decay=0.05, precision="f16", loss_scaling="dynamic",
        ema_decay=0.999,
    ),  # fmt: skip
    "lars-bf16": TrainingOptions(optimizer="lars", precision="bf16", no_decay_bn_bias=True),
}


@pytest.mark.parametrize("config", list(CONFIGS))
@pytest.mark.parametrize("name", ["mlp", "resnet18c"])
def test_build_training(rn_opt: Path, run_rn_opt: RunOpt, name: str, config: str) -> None:
    opts = CONFIGS[config]
    out = build_training(models.emit(name, batch=2), opts, rn_opt=str(rn_opt))
    assert "func.func @train_step(" in out
    assert "func.func @eval_step(" in out
    assert ("rn.cast" in out) == (opts.precision != "f32")
    if opts.precision != "f32":
        assert f"x{opts.precision}>" in out
    assert run_rn_opt(out) == out  # the training module verifies and round-trips


def test_build_training_rejects_bf16_loss_scaling(rn_opt: Path) -> None:
    opts = TrainingOptions(precision="bf16", loss_scaling="dynamic")
    with pytest.raises(RuntimeError, match="loss scaling is not needed with bf16") as info:
        build_training(models.emit("mlp", batch=2), opts, rn_opt=str(rn_opt))
    assert "--rn-build-training=precision=bf16 loss-scaling=dynamic failed" in str(info.value)


def test_build_training_finds_rn_opt(rn_opt: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RN_OPT", str(rn_opt))
    out = build_training(models.emit("mlp", batch=2), TrainingOptions(nesterov=True))
    assert "func.func @train_step(" in out


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("mlp", []),
        ("mlp", ["--optimizer", "adamw", "--precision", "f16", "--loss-scaling", "dynamic",
                 "--ema-decay", "0.999"]),
        ("resnet18c", ["--optimizer", "lars", "--precision", "bf16", "--label-smoothing", "0.1"]),
    ],
)  # fmt: skip
def test_cli_train(rn_opt: Path, cli: Cli, tmp_path: Path, name: str, args: list[str]) -> None:
    env = {"RN_OPT": str(rn_opt)}
    out = tmp_path / "train.mlir"
    proc = cli(name, "--batch", "2", "--train", *args, "-o", str(out), env=env)
    assert proc.returncode == 0, proc.stderr
    assert (proc.stdout, proc.stderr) == ("", "")
    text = out.read_text()
    assert "func.func @train_step(" in text and "func.func @eval_step(" in text
    assert ("rn.cast" in text) == ("--precision" in args)


def test_cli_train_pass_error(rn_opt: Path, cli: Cli) -> None:
    env = {"RN_OPT": str(rn_opt)}
    proc = cli(
        "mlp", "--batch", "2", "--train", "--precision", "bf16", "--loss-scaling", "static",
        env=env,
    )  # fmt: skip
    assert proc.returncode == 1
    assert "loss scaling is not needed with bf16" in proc.stderr
    assert proc.stdout == ""
