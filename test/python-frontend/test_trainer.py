"""rn.compile and rn.Trainer on the CPU executor, against rn-run.

A Python loop fed the batches rn-run feeds (rn.data's Fashion-MNIST, rn-run's
shuffled order, rn.cosine_lr) must give rn-run's epoch losses and its final
state bit for bit; checkpoints go both ways; evaluate/predict agree with
rn-run's evaluation; every bad input raises ValueError with nothing
submitted. The tools and the extension are found as rn finds them; without
them the tests skip, unless RN_REQUIRE_TOOLS=1 (CI), where they fail.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import json
import math
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rn
from rn import models

REPO = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("RN_DATA", "/usr/share/datasets/fashion-mnist"))
BATCH = 64
LIMIT_TRAIN = 4 * BATCH  # 4 steps per epoch
LIMIT_TEST = 100  # one full batch and a partial one
SEED = 7


def _missing(what: str) -> None:
    if os.environ.get("RN_REQUIRE_TOOLS") == "1":
        pytest.fail(what + " (RN_REQUIRE_TOOLS=1)")
    pytest.skip(what)


try:
    import numpy as np
except ImportError:
    if os.environ.get("RN_REQUIRE_TOOLS") == "1":
        raise
    pytest.skip("numpy is not installed", allow_module_level=True)


def find_rn_run() -> str | None:
    env = os.environ.get("RN_RUN")
    if env:
        return shutil.which(env)
    built = REPO / "build" / "bin" / "rn-run"
    return str(built) if built.is_file() else shutil.which("rn-run")


@pytest.fixture(scope="session")
def tools() -> dict[str, str]:
    try:
        rn.trainer._native_module()
    except rn.NativeUnavailable as e:
        _missing(str(e))
    compiler, runner = rn.find_rn_compile(), find_rn_run()
    if compiler is None:
        _missing("rn-compile not found (RN_COMPILE, build/bin/rn-compile or PATH)")
    if runner is None:
        _missing("rn-run not found (RN_RUN, build/bin/rn-run or PATH)")
    if not (DATA / "train-images-idx3-ubyte.gz").is_file():
        _missing(f"Fashion-MNIST not in {DATA} (apt-get install dataset-fashion-mnist)")
    return {"rn-compile": str(compiler), "rn-run": str(runner)}


@pytest.fixture(scope="session")
def artifacts(tools: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """mlp and fashion_cnn at batch 64, compiled as scripts/run-main.sh compiles them."""
    folder = tmp_path_factory.mktemp("artifacts")
    out = {}
    for name in ("mlp", "fashion_cnn"):
        text = models.emit(name, batch=BATCH)
        out[name] = rn.compile(text, folder / f"{name}.rnx")
    return out


@pytest.fixture(scope="session")
def fashion() -> dict[str, Any]:
    train = rn.data.fashion_mnist(DATA, "train", limit=LIMIT_TRAIN)
    test = rn.data.fashion_mnist(DATA, "test", limit=LIMIT_TEST)
    return {"train": train, "test": test}


def rn_run(tools: dict[str, str], *args: str | os.PathLike[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [tools["rn-run"], *map(str, args)], capture_output=True, text=True, timeout=600
    )


def rn_run_fit(
    tools: dict[str, str], artifact: Path, *extra: str | os.PathLike[str], epochs: int = 2, lr: float = 0.05
) -> str:
    proc = rn_run(
        tools, artifact, "--executor", "cpu", "--data", DATA, "--limit-train", LIMIT_TRAIN,
        "--limit-test", LIMIT_TEST, "--epochs", epochs, "--lr", lr, "--warmup-epochs", "0.5",
        "--seed", SEED, "--no-progress", *extra,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def python_epochs(
    trainer: rn.Trainer, fashion: dict[str, Any], epochs: range, total_epochs: int = 2, lr: float = 0.05
) -> list[str]:
    """rn-run's loop in Python; returns its 'train loss' and 'test loss' lines."""
    images, labels = fashion["train"]
    steps = len(labels) // BATCH
    warmup = round(0.5 * steps)
    lines = []
    for epoch in epochs:
        order = rn.data.epoch_order(len(labels), SEED, epoch)
        for s in range(steps):
            rows = order[s * BATCH : (s + 1) * BATCH]
            g = epoch * steps + s
            rate = rn.cosine_lr(g, peak=lr, total_steps=steps * total_epochs, warmup_steps=warmup)
            trainer.step(images[rows], labels[rows], lr=rate)
        losses = trainer.losses()
        assert len(losses) == steps
        mean = sum(losses) / steps  # rn-run sums in double too
        last = np.float32(rate)
        lines.append(
            f"epoch {epoch + 1}/{total_epochs} train loss {mean:.6f} ({steps} steps, lr {float(last):.6g} at the last step)"
        )
        loss, accuracy = trainer.evaluate(*fashion["test"])
        lines.append(
            f"epoch {epoch + 1}/{total_epochs} test loss {loss:.6f} accuracy {100 * accuracy:.2f}% ({LIMIT_TEST} examples)"
        )
    return lines


def report_lines(stdout: str) -> list[str]:
    return [l for l in stdout.splitlines() if re.match(r"epoch \d+/\d+ (train|test) loss", l)]


def read_checkpoint(path: Path) -> tuple[dict[str, Any], dict[str, str]]:
    """A safetensors checkpoint's F32 tensors and metadata, read with numpy alone."""
    raw = path.read_bytes()
    (size,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + size])
    meta = header.pop("__metadata__", {})
    body = raw[8 + size :]
    tensors = {}
    for name, entry in header.items():
        assert entry["dtype"] == "F32"
        start, end = entry["data_offsets"]
        tensors[name] = np.frombuffer(body[start:end], np.float32).reshape(entry["shape"])
    return tensors, meta


def assert_same_state(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert list(a) == list(b) or sorted(a) == sorted(b)
    for name in a:
        x = np.asarray(a[name], np.float32)
        y = np.asarray(b[name], np.float32)
        assert x.shape == y.shape, name
        assert x.tobytes() == y.tobytes(), f"{name} differs in {int((x != y).sum())} elements"


# ----------------------------------------------------------------------------
# Against rn-run
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["mlp", "fashion_cnn"])
def test_python_loop_matches_rn_run_bit_for_bit(
    name: str, tools: dict[str, str], artifacts: dict[str, Path], fashion: dict[str, Any], tmp_path: Path
) -> None:
    checkpoint = tmp_path / "rn-run.ckpt"
    stdout = rn_run_fit(tools, artifacts[name], "--checkpoint", checkpoint)
    trainer = rn.Trainer(artifacts[name], executor="cpu", seed=SEED)
    lines = python_epochs(trainer, fashion, range(2))
    assert lines == report_lines(stdout)
    saved, meta = read_checkpoint(checkpoint)
    assert_same_state(trainer.state_dict(roles="all"), saved)
    assert meta["step"] == str(trainer.step_count) == str(2 * LIMIT_TRAIN // BATCH)


def test_rn_run_checkpoint_continues_in_python(
    tools: dict[str, str], artifacts: dict[str, Path], fashion: dict[str, Any], tmp_path: Path
) -> None:
    full, half = tmp_path / "full.ckpt", tmp_path / "half.ckpt"
    stdout = rn_run_fit(tools, artifacts["fashion_cnn"], "--checkpoint", full)
    rn_run_fit(tools, artifacts["fashion_cnn"], "--checkpoint", half, "--stop-after-epoch", "1")
    trainer = rn.Trainer(artifacts["fashion_cnn"], executor="cpu", seed=SEED)
    meta = trainer.load(half)
    assert meta["epoch"] == "1" and trainer.step_count == LIMIT_TRAIN // BATCH
    lines = python_epochs(trainer, fashion, range(1, 2))
    assert lines == report_lines(stdout)[2:]
    assert_same_state(trainer.state_dict(roles="all"), read_checkpoint(full)[0])


def test_python_checkpoint_resumes_in_rn_run(
    tools: dict[str, str], artifacts: dict[str, Path], fashion: dict[str, Any], tmp_path: Path
) -> None:
    full, mine, resumed = tmp_path / "full.ckpt", tmp_path / "py.ckpt", tmp_path / "resumed.ckpt"
    stdout = rn_run_fit(tools, artifacts["mlp"], "--checkpoint", full)
    trainer = rn.Trainer(artifacts["mlp"], executor="cpu", seed=SEED)
    python_epochs(trainer, fashion, range(1))
    trainer.save(mine, steps_per_epoch=LIMIT_TRAIN // BATCH, lr=0.05, epochs=2)
    shutil.copy(mine, resumed)
    out = rn_run_fit(tools, artifacts["mlp"], "--resume", resumed, "--checkpoint", resumed)
    assert f"resumed from {resumed} after epoch 1" in out
    assert report_lines(out) == report_lines(stdout)[2:]
    assert_same_state(read_checkpoint(resumed)[0], read_checkpoint(full)[0])


def test_mid_epoch_checkpoint_is_refused_by_rn_run_and_continues_in_python(
    tools: dict[str, str], artifacts: dict[str, Path], fashion: dict[str, Any], tmp_path: Path
) -> None:
    images, labels = fashion["train"]
    path, bare = tmp_path / "mid.ckpt", tmp_path / "bare.ckpt"
    a = rn.Trainer(artifacts["mlp"], executor="cpu", seed=SEED)
    for s in range(3):
        a.step(images[s * BATCH : (s + 1) * BATCH], labels[s * BATCH : (s + 1) * BATCH], lr=0.05)
    a.save(path, steps_per_epoch=4)
    a.save(bare)
    _, meta = read_checkpoint(path)
    assert (meta["step"], meta["epoch"], meta["steps_per_epoch"]) == ("3", "0", "4")
    proc = rn_run(tools, artifacts["mlp"], "--executor", "cpu", "--data", DATA, "--limit-train",
                  LIMIT_TRAIN, "--epochs", "2", "--resume", path)
    assert proc.returncode == 1
    assert "saved mid-epoch, at step 3" in proc.stderr and "rn.Trainer.load" in proc.stderr
    proc = rn_run(tools, artifacts["mlp"], "--executor", "cpu", "--data", DATA, "--limit-train",
                  LIMIT_TRAIN, "--epochs", "2", "--resume", bare)
    assert proc.returncode == 1 and "without an epoch" in proc.stderr
    # Python continues from it exactly as the uninterrupted trainer does.
    b = rn.Trainer(artifacts["mlp"], executor="cpu", seed=SEED)
    b.load(path)
    assert b.step_count == 3
    last = slice(3 * BATCH, 4 * BATCH)
    ha, hb = a.step(images[last], labels[last], lr=0.05), b.step(images[last], labels[last], lr=0.05)
    assert (ha.step, hb.step) == (4, 4)
    assert ha.loss() == hb.loss()
    assert_same_state(a.state_dict(roles="all"), b.state_dict(roles="all"))


def test_evaluate_and_predict_agree_with_rn_run(
    tools: dict[str, str], artifacts: dict[str, Path], fashion: dict[str, Any], tmp_path: Path
) -> None:
    checkpoint = tmp_path / "cnn.ckpt"
    stdout = rn_run_fit(tools, artifacts["fashion_cnn"], "--checkpoint", checkpoint, epochs=1)
    trainer = rn.Trainer(artifacts["fashion_cnn"], executor="cpu")
    trainer.load(checkpoint)
    images, labels = fashion["test"]
    loss, accuracy = trainer.evaluate(images, labels)
    assert f"epoch 1/1 test loss {loss:.6f} accuracy {100 * accuracy:.2f}% ({LIMIT_TEST} examples)" in stdout
    logits = trainer.predict(images)
    assert logits.shape == (LIMIT_TEST, 10) and logits.dtype == np.float32
    assert float((logits.argmax(1) == labels).mean()) == accuracy
    # Rows do not affect each other (running statistics): any count, any split.
    assert trainer.predict(images[:5]).tobytes() == logits[:5].tobytes()
    assert trainer.predict(images[64:67]).tobytes() == logits[64:67].tobytes()
    # NCHW gives the same as NHWC.
    assert trainer.predict(np.ascontiguousarray(images.transpose(0, 3, 1, 2))).tobytes() == logits.tobytes()


def test_cosine_lr_is_rn_runs_schedule(tools: dict[str, str]) -> None:
    """rn.cosine_lr is the runtime's WarmupCosineLr, which rn-run's
    --warmup-epochs uses, and follows the formula its docstring gives."""
    native = rn.trainer._native_module()
    for peak, warmup, total in [(0.1, 0, 100), (0.05, 7, 40), (1.0, 10, 10), (0.3, 3, 937 * 2)]:
        for step in range(total):
            rate = rn.cosine_lr(step, peak=peak, total_steps=total, warmup_steps=warmup)
            assert rate == native.warmup_cosine_lr(peak, warmup, total, step)
            if step < warmup:
                formula = peak * (step + 1) / warmup
            else:
                formula = peak * 0.5 * (1 + math.cos(math.pi * (step - warmup) / (total - warmup)))
            assert rate == pytest.approx(formula, rel=1e-12, abs=1e-15)


def test_fashion_mnist_loader_is_rn_runs(fashion: dict[str, Any], tools: dict[str, str]) -> None:
    # Bit equality of the normalization is what the loss equality above
    # rests on; here the raw invariants.
    images, labels = fashion["train"]
    assert images.shape == (LIMIT_TRAIN, 28, 28, 1) and images.dtype == np.float32
    assert labels.dtype == np.int64 and labels.min() >= 0 and labels.max() < 10
    order = rn.data.epoch_order(10, 0, 0)
    assert sorted(order.tolist()) == list(range(10))


# ----------------------------------------------------------------------------
# Steps, buffers, state
# ----------------------------------------------------------------------------


@pytest.fixture
def mlp(artifacts: dict[str, Path]) -> rn.Trainer:
    return rn.Trainer(artifacts["mlp"], executor="cpu", seed=SEED)


def batch_of(fashion: dict[str, Any], k: int = 0) -> tuple[Any, Any]:
    images, labels = fashion["train"]
    return images[k * BATCH : (k + 1) * BATCH], labels[k * BATCH : (k + 1) * BATCH]


def test_trainer_describes_the_artifact(mlp: rn.Trainer) -> None:
    assert mlp.executor == "cpu" and mlp.model == "mlp"
    assert (mlp.batch_size, mlp.input_shape, mlp.num_classes) == (BATCH, (1, 28, 28), 10)
    assert "batch_size=64" in repr(mlp)


def test_step_copies_the_batch_before_it_returns(artifacts: dict[str, Path], fashion: dict[str, Any]) -> None:
    images, labels = batch_of(fashion)
    a = rn.Trainer(artifacts["mlp"], executor="cpu", window=8)
    b = rn.Trainer(artifacts["mlp"], executor="cpu", window=8)
    mine_images, mine_labels = images.copy(), labels.copy()
    h = a.step(mine_images, mine_labels, lr=0.1)
    assert a.in_flight == 1  # queued: the window of 8 holds it
    mine_images[...] = 123.0  # the caller reuses its buffers at once
    mine_labels[...] = 3
    assert h.loss() == b.step(images, labels, lr=0.1).loss()


def test_labels_of_every_integer_dtype_and_layouts(mlp: rn.Trainer, artifacts: dict[str, Path], fashion: dict[str, Any]) -> None:
    images, labels = batch_of(fashion)
    reference = rn.Trainer(artifacts["mlp"], executor="cpu", seed=SEED)
    want = [reference.step(images, labels, lr=0.1).loss() for _ in range(3)]
    got = [
        mlp.step(images, labels.astype(np.uint8), lr=0.1).loss(),
        mlp.step(np.ascontiguousarray(images.transpose(0, 3, 1, 2)), labels.astype(np.int32), lr=0.1).loss(),
        # A strided NCHW view (no copy on the caller's side).
        mlp.step(images.transpose(0, 3, 1, 2), labels.astype(np.int16), lr=0.1).loss(),
    ]
    assert got == want


def test_three_channel_nchw_batches_train_like_nhwc(tools: dict[str, str], tmp_path: Path) -> None:
    # Three channels take the NCHW gather (one channel is a plain copy).
    artifact = rn.compile(models.emit("mlp", batch=BATCH, input_shape=(3, 5, 7)), tmp_path / "mlp3.rnx")
    rng = np.random.default_rng(3)
    nhwc = rng.standard_normal((BATCH, 5, 7, 3), dtype=np.float32)
    labels = rng.integers(0, 10, BATCH)
    nchw = np.ascontiguousarray(nhwc.transpose(0, 3, 1, 2))
    wide = np.zeros((BATCH, 3, 5, 14), np.float32)
    wide[..., ::2] = nchw  # an NCHW view with every other column
    runs = []
    for feed in (nhwc, nchw, nhwc.transpose(0, 3, 1, 2), wide[..., ::2]):
        trainer = rn.Trainer(artifact, executor="cpu", seed=SEED)
        runs.append([trainer.step(feed, labels, lr=0.1).loss() for _ in range(2)])
    assert runs[1:] == [runs[0]] * 3


def test_input_buffer_trains_like_an_array(mlp: rn.Trainer, artifacts: dict[str, Path], fashion: dict[str, Any]) -> None:
    images, labels = batch_of(fashion)
    reference = rn.Trainer(artifacts["mlp"], executor="cpu", seed=SEED)
    buf = mlp.input_buffer()
    assert buf.images.shape == (BATCH, 28, 28, 1) and buf.images.dtype == np.float32
    buf.images[...] = images
    h = mlp.step(buf, labels, lr=0.1)
    assert not buf.images.flags.writeable and buf.consumed
    with pytest.raises(ValueError, match="already given to a step"):
        mlp.step(buf, labels, lr=0.1)
    assert h.loss() == reference.step(images, labels, lr=0.1).loss()


def test_handles_losses_and_window(mlp: rn.Trainer, fashion: dict[str, Any]) -> None:
    handles = [mlp.step(*batch_of(fashion, k % 4), lr=0.05) for k in range(10)]
    assert [h.step for h in handles] == list(range(1, 11))
    assert mlp.step_count == 10
    losses = mlp.losses()
    assert losses == [h.loss() for h in handles]
    assert mlp.losses() == [] and mlp.in_flight == 0
    # An older handle's loss while later steps run: no drain needed.
    more = [mlp.step(*batch_of(fashion, k), lr=0.05) for k in range(4)]
    first = more[0].loss()
    assert mlp.in_flight >= 1  # the newest step is still held: nothing drained
    assert more[0].done() and not more[-1].done()
    assert mlp.losses()[0] == first and more[-1].done()


def test_state_dict_roundtrip_and_errors(mlp: rn.Trainer, artifacts: dict[str, Path], fashion: dict[str, Any]) -> None:
    for k in range(3):
        mlp.step(*batch_of(fashion, k), lr=0.05)
    params = mlp.state_dict()
    assert list(params) == ["1.weight", "1.bias", "3.weight", "3.bias", "5.weight", "5.bias"]
    everything = mlp.state_dict(roles="all")
    assert any(k.startswith("momentum.") for k in everything)
    assert list(mlp.state_dict(roles="momentum")) == [k for k in everything if k.startswith("momentum.")]
    with pytest.raises(ValueError, match="no state of role 'adam_m'"):
        mlp.state_dict(roles="adam_m")
    other = rn.Trainer(artifacts["mlp"], executor="cpu", seed=SEED)
    assert other.load_state_dict(everything) == rn.IncompatibleKeys([], [])
    assert_same_state(other.state_dict(roles="all"), everything)
    with pytest.raises(ValueError, match="unknown names: nope"):
        other.load_state_dict({**params, "nope": np.zeros(1, np.float32)})
    with pytest.raises(ValueError, match="missing parameters or buffers: 5.bias"):
        other.load_state_dict({k: v for k, v in params.items() if k != "5.bias"})
    with pytest.raises(ValueError, match=r"state 5.bias: shape \[11\], expected \[10\]"):
        other.load_state_dict({**params, "5.bias": np.zeros(11, np.float32)})
    with pytest.raises(ValueError, match="state 5.bias: dtype float64, expected float32"):
        other.load_state_dict({**params, "5.bias": np.zeros(10)})
    missing = other.load_state_dict({"5.bias": params["5.bias"]}, strict=False)
    assert "1.weight" in missing.missing_keys and missing.unexpected_keys == []


def test_load_state_dict_lists_every_problem_and_returns_unmatched_names(
    mlp: rn.Trainer, artifacts: dict[str, Path]
) -> None:
    """Tests that load_state_dict raises one ValueError naming every unknown and missing name and
    every shape and dtype mismatch, writing nothing; that strict=False returns the unknown and
    missing names (as PyTorch's load_state_dict) and writes the rest, still refusing a wrong
    shape; and that layout='torch' is refused for a model not imported from PyTorch."""
    params = mlp.state_dict()
    other = rn.Trainer(artifacts["mlp"], executor="cpu", seed=SEED + 1)
    before = other.state_dict()
    bad = {k: v for k, v in params.items() if k != "1.bias"}
    bad.update({"nope": np.zeros(1, np.float32), "3.bias": np.zeros(3, np.float32),
                "5.bias": np.zeros(10)})
    with pytest.raises(ValueError) as refused:
        other.load_state_dict(bad)
    message = str(refused.value)
    for part in ("unknown names: nope", "missing parameters or buffers: 1.bias",
                 "state 3.bias: shape [3], expected [1024]",
                 "state 5.bias: dtype float64, expected float32", "nothing was written"):
        assert part in message, message
    assert_same_state(other.state_dict(), before)

    with pytest.raises(ValueError, match=r"state 3.bias: shape \[3\]") as refused:
        other.load_state_dict(bad, strict=False)
    assert "unknown names" not in str(refused.value)
    keys = other.load_state_dict({"5.bias": params["5.bias"], "nope": params["5.bias"]},
                                 strict=False)
    assert keys.unexpected_keys == ["nope"]
    assert keys.missing_keys == [k for k in params if k != "5.bias"]
    assert np.array_equal(other.state_dict()["5.bias"], params["5.bias"])
    assert np.array_equal(other.state_dict()["1.bias"], before["1.bias"])
    with pytest.raises(ValueError, match="layout='torch' needs a model imported from PyTorch"):
        other.load_state_dict(params, layout="torch")


def test_save_is_atomic_and_load_checks_the_model(
    mlp: rn.Trainer, artifacts: dict[str, Path], fashion: dict[str, Any], tmp_path: Path
) -> None:
    mlp.step(*batch_of(fashion), lr=0.05)
    path = tmp_path / "a.ckpt"
    mlp.save(path)
    assert [p.name for p in tmp_path.iterdir()] == ["a.ckpt"]  # no temporary left
    cnn = rn.Trainer(artifacts["fashion_cnn"], executor="cpu")
    with pytest.raises(ValueError, match="a checkpoint of model 'mlp', the artifact is 'fashion_cnn'"):
        cnn.load(path)
    with pytest.raises(ValueError, match="is a directory"):
        mlp.save(tmp_path)
    with pytest.raises(FileNotFoundError):
        mlp.load(tmp_path / "missing.ckpt")


# ----------------------------------------------------------------------------
# Bad inputs: ValueError naming what was expected, nothing submitted
# ----------------------------------------------------------------------------


class NotAnArray:
    shape = (64, 1, 28, 28)


def bad_inputs(images: Any, labels: Any) -> Iterator[tuple[str, Any, Any, dict[str, Any], str]]:
    yield "dtype", images.astype(np.float64), labels, {}, "images must be float32, got float64"
    yield "uint8 images", (images * 0).astype(np.uint8), labels, {}, "images must be float32, got uint8"
    yield "batch", images[:50], labels[:50], {}, r"batch is fixed at 64 examples per step, got 50 .*drop_last=True"
    yield "shape", images[:, :27], labels, {}, r"must have shape \[64, 1, 28, 28\] \(NCHW\) or \[64, 28, 28, 1\] \(NHWC\), got \[64, 27, 28, 1\]"
    yield "ndim", images[:, :, :, 0], labels, {}, r"images must be 4-d"
    yield "layout", images, labels, {"layout": "NCHW"}, r"images as NCHW must have shape \[64, 1, 28, 28\]"
    yield "layout name", images, labels, {"layout": "CHWN"}, "layout must be 'NCHW' or 'NHWC'"
    yield "kind", images.tolist(), labels, {}, "images must be a numpy array, a torch tensor or an rn.InputBuffer, got list"
    yield "object", NotAnArray(), labels, {}, "got .*NotAnArray of shape"
    yield "label dtype", images, labels.astype(np.float32), {}, "labels must be of an integer dtype, got float32"
    yield "label shape", images, labels.reshape(8, 8), {}, r"labels must have shape \[64\], got \[8, 8\]"
    yield "label count", images, labels[:63], {}, "labels: the artifact's batch is fixed at 64"
    yield "label range", images, np.where(np.arange(64) == 5, 10, labels), {}, r"label 10 at index 5 is outside \[0, 10\)"
    yield "negative label", images, np.where(np.arange(64) == 2, -1, labels), {}, r"label -1 at index 2"
    yield "label kind", images, list(labels), {}, "labels must be a numpy array or a torch tensor"


@pytest.mark.parametrize("case", [c[0] for c in bad_inputs(np.zeros((64, 28, 28, 1), np.float32), np.zeros(64, np.int64))])
def test_bad_input_raises_value_error_and_submits_nothing(mlp: rn.Trainer, fashion: dict[str, Any], case: str) -> None:
    images, labels = batch_of(fashion)
    _, bad_images, bad_labels, kwargs, message = next(c for c in bad_inputs(images, labels) if c[0] == case)
    with pytest.raises(ValueError, match=message):
        mlp.step(bad_images, bad_labels, lr=0.1, **kwargs)
    assert mlp.step_count == 0 and mlp.in_flight == 0
    # The trainer still works, and its first step is step 1.
    assert mlp.step(images, labels, lr=0.1).step == 1


@pytest.mark.parametrize("lr", [float("nan"), float("inf"), "0.1", None, True])
def test_bad_lr(mlp: rn.Trainer, fashion: dict[str, Any], lr: Any) -> None:
    with pytest.raises(ValueError, match="lr must be a finite number"):
        mlp.step(*batch_of(fashion), lr=lr)
    assert mlp.step_count == 0


def test_ambiguous_layout_needs_layout(tools: dict[str, str], tmp_path: Path) -> None:
    # C == H == W: 4 channels of 4x4 images.
    model = rn.nn.Sequential(rn.nn.Flatten(), rn.nn.Linear(64, 3))
    artifact = rn.compile(model, tmp_path / "square.rnx", batch=2, input_shape=(4, 4, 4), num_classes=3)
    trainer = rn.Trainer(artifact, executor="cpu")
    images = np.arange(2 * 64, dtype=np.float32).reshape(2, 4, 4, 4) / 128
    labels = np.array([0, 2])
    with pytest.raises(ValueError, match=r"read as NCHW and as NHWC \(C == H == W\): pass layout="):
        trainer.step(images, labels, lr=0.1)
    assert trainer.step_count == 0
    a = trainer.step(images, labels, lr=0.1, layout="NHWC").loss()
    other = rn.Trainer(artifact, executor="cpu")
    b = other.step(np.ascontiguousarray(images.transpose(0, 3, 1, 2)), labels, lr=0.1, layout="NCHW").loss()
    assert a == b


def test_evaluate_and_predict_bad_inputs(mlp: rn.Trainer, fashion: dict[str, Any]) -> None:
    images, labels = fashion["test"]
    with pytest.raises(ValueError, match=r"labels must have shape \[100\]"):
        mlp.evaluate(images, labels[:99])
    with pytest.raises(ValueError, match=r"labels must be in \[0, 10\)"):
        mlp.evaluate(images, labels + 10)
    with pytest.raises(ValueError, match="images must be float32"):
        mlp.predict(images.astype(np.float16))
    with pytest.raises(ValueError, match="images must have shape"):
        mlp.predict(images[:, :20])
    assert mlp.predict(images[:0]).shape == (0, 10)


def test_constructor_errors(artifacts: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="executor must be"):
        rn.Trainer(artifacts["mlp"], executor="tpu")
    with pytest.raises(FileNotFoundError, match="no artifact"):
        rn.Trainer(tmp_path / "missing.rnx")
    model = tmp_path / "model.mlir"
    model.write_text(models.emit("mlp", batch=2))
    with pytest.raises(rn.TrainerError, match="compile it with rn-compile first"):
        rn.Trainer(model, executor="cpu")
    if not rn.trainer._native_module().built_with_cuda() or rn.trainer._native_module().gpu_available():
        with pytest.raises(rn.TrainerError):
            rn.Trainer(artifacts["mlp"], executor="cuda-graph")


def rewrite_metadata(path: Path, **changes: str) -> None:
    """Changes metadata values of a safetensors file in place."""
    raw = path.read_bytes()
    (size,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + size])
    header["__metadata__"].update(changes)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + raw[8 + size :])


def test_runtime_failure_raises_and_is_sticky(
    artifacts: dict[str, Path], fashion: dict[str, Any], tmp_path: Path
) -> None:
    # The program's step input is 32 bits: a run that reaches step 2^31 - 1
    # gets one more step, then the runtime refuses the next.
    trainer = rn.Trainer(artifacts["mlp"], executor="cpu")
    path = tmp_path / "late.ckpt"
    trainer.save(path)
    rewrite_metadata(path, step=str(2**31 - 2))
    trainer.load(path)
    assert trainer.step(*batch_of(fashion), lr=0.1).step == 2**31 - 1
    with pytest.raises(rn.TrainerError, match="exceeds the program's 32-bit step input"):
        trainer.step(*batch_of(fashion), lr=0.1)
    for call in (
        lambda: trainer.step(*batch_of(fashion), lr=0.1),
        lambda: trainer.losses(),
        lambda: trainer.state_dict(),
        lambda: trainer.evaluate(*fashion["test"]),
        lambda: trainer.save(tmp_path / "after.ckpt"),
    ):
        with pytest.raises(rn.TrainerError, match="failed earlier and takes no more work: .*32-bit step"):
            call()
    assert isinstance(rn.TrainerError("x"), RuntimeError)


# ----------------------------------------------------------------------------
# rn.compile
# ----------------------------------------------------------------------------


def test_compile_takes_modules_text_and_paths(tools: dict[str, str], tmp_path: Path) -> None:
    model = rn.nn.Sequential(rn.nn.Flatten(), rn.nn.Linear(784, 10))
    a = rn.compile(model, tmp_path / "a.rnx", batch=8, input_shape=(1, 28, 28), num_classes=10,
                   pipeline="optimizer=sgd nesterov=true", name="tiny")
    text = rn.emit_model(model, batch=8, input_shape=(1, 28, 28), num_classes=10, name="tiny")
    source = tmp_path / "tiny.mlir"
    source.write_text(text)
    b = rn.compile(source, tmp_path / "b.rnx", pipeline="optimizer=sgd nesterov=true")
    c = rn.compile(text, tmp_path / "c.rnx", pipeline="optimizer=sgd nesterov=true", weights=False)
    assert a.read_bytes() == b.read_bytes()
    assert c.stat().st_size < a.stat().st_size
    # Without weights the runtime samples the same parameters.
    assert_same_state(rn.Trainer(a, executor="cpu").state_dict(), rn.Trainer(c, executor="cpu").state_dict())
    with pytest.raises(ValueError, match="needs batch, input_shape, num_classes"):
        rn.compile(model, tmp_path / "d.rnx")
    with pytest.raises(ValueError, match="apply to an rn.nn.Module only"):
        rn.compile(text, tmp_path / "d.rnx", batch=8)
    # The compiler's diagnostics, with the source's file:line:col.
    with pytest.raises(rn.CompileError, match=r"model\.mlir:1:1: error: unknown optimizer 'nope'"):
        rn.compile(text, tmp_path / "d.rnx", pipeline="optimizer=nope")
    with pytest.raises(rn.CompileError, match="error: bad --pipeline options: no-such-option=1"):
        rn.compile(text, tmp_path / "d.rnx", pipeline="no-such-option=1")
    with pytest.raises(FileNotFoundError, match="no model file"):
        rn.compile(tmp_path / "none.mlir", tmp_path / "d.rnx")


# ----------------------------------------------------------------------------
# uint8 images normalized on the device
# ----------------------------------------------------------------------------

U8_MEAN, U8_STD = (0.49, 0.48, 0.45), (0.25, 0.24, 0.26)


@pytest.fixture(scope="module")
def uint8_twins(tools: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """fashion_cnn at 3x16x16, batch 8: float images, and uint8 images (f32 and f16 steps)."""
    folder = tmp_path_factory.mktemp("uint8")
    model = models.build("fashion_cnn", num_classes=10, input_shape=(3, 16, 16))
    shape = {"batch": 8, "input_shape": (3, 16, 16), "num_classes": 10, "name": "fashion_cnn"}
    u8 = {"input_dtype": "uint8", "mean": U8_MEAN, "std": U8_STD}
    return {
        "float": rn.compile(model, folder / "float.rnx", **shape),
        "uint8": rn.compile(model, folder / "uint8.rnx", **shape, **u8),
        "float-f16": rn.compile(model, folder / "float-f16.rnx", **shape, pipeline="precision=f16"),
        "uint8-f16": rn.compile(model, folder / "uint8-f16.rnx", **shape, **u8, pipeline="precision=f16"),
    }


def host_normalized(pixels: Any, mean: Any, std: Any) -> Any:
    """The data sources' formula in float32: (x / 255 - mean) * (1 / std)."""
    m, s = np.float32(mean), np.float32(std)
    return (pixels.astype(np.float32) / np.float32(255) - m) * (np.float32(1) / s)


@pytest.mark.parametrize("precision", ["", "-f16"])
def test_uint8_images_train_as_the_hosts_normalization(uint8_twins: dict[str, Path], precision: str) -> None:
    rng = np.random.default_rng(5)
    pixels = rng.integers(0, 256, (4, 8, 16, 16, 3), dtype=np.uint8)
    labels = rng.integers(0, 10, (4, 8))
    mean, std = np.array([0.3, 0.4, 0.5], np.float32), np.array([0.2, 0.3, 0.4], np.float32)
    floats = rn.Trainer(uint8_twins["float" + precision], executor="cpu", seed=SEED)
    uint8 = rn.Trainer(uint8_twins["uint8" + precision], executor="cpu", seed=SEED)
    assert (floats.image_dtype, uint8.image_dtype) == ("float32", "uint8")
    assert uint8.input_normalization == (list(np.float32(U8_MEAN)), list(np.float32(U8_STD)))
    uint8.set_input_normalization(mean, std)
    assert uint8.input_normalization == (list(mean), list(std))
    want = [floats.step(host_normalized(p, mean, std), y, lr=0.1).loss() for p, y in zip(pixels, labels)]
    # NHWC, NCHW and an input buffer of bytes.
    got = [
        uint8.step(pixels[0], labels[0], lr=0.1).loss(),
        uint8.step(np.ascontiguousarray(pixels[1].transpose(0, 3, 1, 2)), labels[1], lr=0.1).loss(),
    ]
    for p, y in zip(pixels[2:], labels[2:]):
        buf = uint8.input_buffer()
        assert buf.images.dtype == np.uint8 and buf.images.shape == (8, 16, 16, 3)
        buf.images[...] = p
        got.append(uint8.step(buf, y, lr=0.1).loss())
    assert got == want
    a, b = floats.state_dict(), uint8.state_dict()
    assert list(b.pop("input.mean")) == list(mean) and list(b.pop("input.std")) == list(std)
    assert_same_state(a, b)
    # Evaluation and prediction of pixels (a padded last batch too).
    test = pixels.reshape(32, 16, 16, 3)[:13]
    assert uint8.evaluate(test, labels.reshape(32)[:13]) == floats.evaluate(
        host_normalized(test, mean, std), labels.reshape(32)[:13])
    assert uint8.predict(test).tobytes() == floats.predict(host_normalized(test, mean, std)).tobytes()


def test_uint8_images_checkpoint_their_normalization(uint8_twins: dict[str, Path], tmp_path: Path) -> None:
    trainer = rn.Trainer(uint8_twins["uint8"], executor="cpu")
    trainer.set_input_normalization([0.5, 0.5, 0.5], [0.2, 0.2, 0.2])
    trainer.save(tmp_path / "u8.ck")
    other = rn.Trainer(uint8_twins["uint8"], executor="cpu")
    other.load(tmp_path / "u8.ck")
    assert other.input_normalization == ([np.float32(0.5)] * 3, [np.float32(0.2)] * 3)
    assert "input.mean" in other.state_dict(roles="buffer")


def test_uint8_and_float_images_are_not_mixed_up(uint8_twins: dict[str, Path]) -> None:
    floats = rn.Trainer(uint8_twins["float"], executor="cpu")
    uint8 = rn.Trainer(uint8_twins["uint8"], executor="cpu")
    pixels = np.zeros((8, 16, 16, 3), np.uint8)
    labels = np.zeros(8, np.int64)
    with pytest.raises(ValueError, match="images must be uint8, got float32: this model normalizes"):
        uint8.step(pixels.astype(np.float32), labels, lr=0.1)
    with pytest.raises(ValueError, match="images must be float32, got uint8 \\(this model takes normalized"):
        floats.step(pixels, labels, lr=0.1)
    with pytest.raises(ValueError, match="images must be uint8"):
        uint8.predict(pixels.astype(np.float32))
    with pytest.raises(ValueError, match="normalizes none on the device"):
        floats.set_input_normalization([0.5] * 3, [0.2] * 3)
    with pytest.raises(ValueError, match="give 3 means and stds, got 1 and 3"):
        uint8.set_input_normalization([0.5], [0.2] * 3)
    with pytest.raises(ValueError, match="std positive"):
        uint8.set_input_normalization([0.5] * 3, [0.2, 0.0, 0.2])
    assert uint8.in_flight == 0 and floats.in_flight == 0


def test_fashion_mnist_pixels_are_the_images_before_normalization(tools: dict[str, str]) -> None:
    images, labels = rn.data.fashion_mnist(DATA, "test", limit=50)
    pixels, same_labels = rn.data.fashion_mnist(DATA, "test", limit=50, pixels=True)
    assert pixels.dtype == np.uint8 and pixels.shape == (50, 28, 28, 1)
    assert (labels == same_labels).all()
    mean, std = rn.data.FASHION_MNIST_MEAN, rn.data.FASHION_MNIST_STD
    assert host_normalized(pixels, mean, std).tobytes() == images.tobytes()
