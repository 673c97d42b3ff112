"""rn.Trainer on the GPU machine: cuda-graph against rn-run, torch tensors, asynchrony, errors.

Skipped where no CUDA device answers (CI). scripts/run-python-gpu.sh runs it
from the GPU bundle, which carries the artifacts (compiled on the
development machine: the GPU machine has no MLIR), rn-run, the data and the
extension built for the machine's Python. RN_BUNDLE names the bundle.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import rn

np = pytest.importorskip("numpy")

BUNDLE = Path(os.environ.get("RN_BUNDLE", Path(__file__).resolve().parents[2] / "gpu-bundle"))
MODELS = BUNDLE / "models"
DATA = Path(os.environ.get("RN_DATA", BUNDLE / "data"))
RN_RUN = Path(os.environ.get("RN_RUN", BUNDLE / "bin" / "rn-run"))
SEED = 7


def _gpu() -> str | None:
    try:
        native = rn.trainer._native_module()
    except rn.NativeUnavailable as e:
        return str(e)
    if not native.built_with_cuda():
        return "rn._native was built without CUDA"
    return native.gpu_available()


why_not = _gpu()
pytestmark = pytest.mark.skipif(why_not is not None, reason=f"no GPU: {why_not}")


def artifact(name: str) -> Path:
    path = MODELS / name
    if not path.is_file():
        pytest.skip(f"{path} is not in the bundle (scripts/bundle-gpu.sh)")
    return path


@pytest.fixture(scope="module")
def plan_cache(tmp_path_factory: pytest.TempPathFactory) -> str:
    # One plan cache for rn-run and every trainer: the same convolution plans.
    return str(tmp_path_factory.mktemp("plans") / "conv-plans.json")


@pytest.fixture(scope="module")
def fashion() -> dict[str, Any]:
    if not (DATA / "train-images-idx3-ubyte.gz").is_file():
        pytest.skip(f"Fashion-MNIST not in {DATA}")
    return {
        "train": rn.data.fashion_mnist(DATA, "train"),
        "test": rn.data.fashion_mnist(DATA, "test"),
    }


def graph_trainer(name: str, plan_cache: str, **kw: Any) -> rn.Trainer:
    return rn.Trainer(artifact(name), executor="cuda-graph", seed=SEED, deterministic=True,
                      plan_cache=plan_cache, **kw)


def loop(trainer: rn.Trainer, images: Any, labels: Any, epochs: int, lr: float, limit: int) -> list[str]:
    """rn-run's epoch loop (order, schedule, evaluation) over the first `limit` examples."""
    b = trainer.batch_size
    steps = limit // b
    lines = []
    for epoch in range(epochs):
        order = rn.data.epoch_order(limit, SEED, epoch)
        for s in range(steps):
            rows = order[s * b : (s + 1) * b]
            rate = rn.cosine_lr(epoch * steps + s, peak=lr, total_steps=steps * epochs)
            trainer.step(images[rows], labels[rows], lr=rate)
        losses = trainer.losses()
        lines.append(f"epoch {epoch + 1}/{epochs} train loss {sum(losses) / steps:.6f}")
    return lines


def rn_run(*args: Any, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(RN_RUN), *map(str, args)], capture_output=True, text=True,
                          timeout=900, env={**os.environ, **(env or {})})


def test_cuda_graph_loop_matches_rn_run(fashion: dict[str, Any], plan_cache: str, tmp_path: Path) -> None:
    limit, epochs, lr = 4096, 2, 0.01
    checkpoint = tmp_path / "rn-run.ckpt"
    proc = rn_run(artifact("fashion_cnn.train.rnx"), "--executor", "cuda-graph", "--deterministic",
                  "--plan-cache", plan_cache, "--data", DATA, "--limit-train", limit, "--epochs", epochs,
                  "--lr", lr, "--seed", SEED, "--no-progress", "--checkpoint", checkpoint)
    assert proc.returncode == 0, proc.stderr
    want = [m.group(1) for m in re.finditer(r"^(epoch \d+/\d+ train loss [0-9.]+)", proc.stdout, re.M)]
    trainer = graph_trainer("fashion_cnn.train.rnx", plan_cache)
    assert trainer.executor == "cuda-graph"
    images, labels = fashion["train"]
    assert loop(trainer, images, labels, epochs, lr, limit) == want
    other = rn.Trainer(artifact("fashion_cnn.train.rnx"), executor="cpu")
    other.load(checkpoint)
    saved = other.state_dict(roles="all")
    mine = trainer.state_dict(roles="all")
    for name, values in saved.items():
        assert mine[name].tobytes() == values.tobytes(), name


def test_torch_tensors_train_like_numpy(fashion: dict[str, Any], plan_cache: str) -> None:
    torch = pytest.importorskip("torch")
    images, labels = fashion["train"]
    batches = [(images[k * 64 : (k + 1) * 64], labels[k * 64 : (k + 1) * 64]) for k in range(6)]
    reference = graph_trainer("fashion_cnn.train.rnx", plan_cache)
    want = [reference.step(x, y, lr=0.01) for x, y in batches]
    want_losses = [h.loss() for h in want]
    for kind in ("cpu", "cuda", "cuda-channels-last", "cuda-labels-on-cpu"):
        trainer = graph_trainer("fashion_cnn.train.rnx", plan_cache)
        handles = []
        for x, y in batches:
            # NCHW, a copy of its own: with one channel the transposed view
            # is already contiguous, and filling a view would overwrite the
            # module's data set for every later test.
            t = torch.from_numpy(x.transpose(0, 3, 1, 2).copy())
            ty = torch.from_numpy(y)
            if kind.startswith("cuda"):
                t = t.cuda()
                ty = ty if kind == "cuda-labels-on-cpu" else ty.cuda()
                if kind == "cuda-channels-last":
                    t = t.to(memory_format=torch.channels_last)
            handles.append(trainer.step(t, ty, lr=0.01))
            t.fill_(1e9)  # reused at once: the step took its copy
        assert [h.loss() for h in handles] == want_losses, kind


def test_uint8_images_train_as_the_hosts_normalization(fashion: dict[str, Any], plan_cache: str) -> None:
    """fashion_cnn with uint8 images (normalized on the device) fed Fashion-MNIST's pixels as numpy
    and as CUDA tensors trains as fashion_cnn fed rn.data's normalized images, bit for bit
    (cuda-graph, deterministic plans): the device normalizes as the host does."""
    torch = pytest.importorskip("torch")
    images, labels = fashion["train"]
    pixels, _ = rn.data.fashion_mnist(DATA, "train", limit=6 * 64, pixels=True)
    reference = graph_trainer("fashion_cnn.train.rnx", plan_cache)
    want = [reference.step(images[k * 64 : (k + 1) * 64], labels[k * 64 : (k + 1) * 64], lr=0.01)
            for k in range(6)]
    want_losses = [h.loss() for h in want]
    for kind in ("numpy", "cuda"):
        trainer = graph_trainer("fashion_cnn_u8.train.rnx", plan_cache)
        assert trainer.image_dtype == "uint8"
        trainer.set_input_normalization([rn.data.FASHION_MNIST_MEAN], [rn.data.FASHION_MNIST_STD])
        handles = []
        for k in range(6):
            x, y = pixels[k * 64 : (k + 1) * 64], labels[k * 64 : (k + 1) * 64]
            if kind == "cuda":
                x = torch.from_numpy(x.transpose(0, 3, 1, 2).copy()).cuda()
            handles.append(trainer.step(x, y, lr=0.01))
        assert [h.loss() for h in handles] == want_losses, kind
        test_pixels, test_labels = rn.data.fashion_mnist(DATA, "test", limit=300, pixels=True)
        test_images, _ = rn.data.fashion_mnist(DATA, "test", limit=300)
        assert trainer.evaluate(test_pixels, test_labels) == reference.evaluate(test_images, test_labels)


def test_dataloader_feeds_cuda_tensors(fashion: dict[str, Any], plan_cache: str) -> None:
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader, TensorDataset

    images, labels = fashion["train"]
    nchw = torch.from_numpy(np.ascontiguousarray(images[:1000].transpose(0, 3, 1, 2)))
    loader = DataLoader(TensorDataset(nchw, torch.from_numpy(labels[:1000])), batch_size=64,
                        drop_last=True, pin_memory=True)
    trainer = graph_trainer("fashion_cnn.train.rnx", plan_cache)
    reference = graph_trainer("fashion_cnn.train.rnx", plan_cache)
    stream = torch.cuda.Stream()
    for k, (x, y) in enumerate(loader):
        with torch.cuda.stream(stream):  # a producer on another stream
            x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
            x = x * 1.0
            trainer.step(x, y, lr=0.01)
        reference.step(images[k * 64 : (k + 1) * 64], labels[k * 64 : (k + 1) * 64], lr=0.01)
    assert trainer.losses() == reference.losses()
    with pytest.raises(ValueError, match="batch is fixed at 64 .*drop_last=True"):
        trainer.step(nchw[:10].cuda(), torch.zeros(10, dtype=torch.int64, device="cuda"), lr=0.1)


def test_steps_are_in_flight_and_step_returns_early(plan_cache: str) -> None:
    trainer = rn.Trainer(artifact("resnet18c.bench256.rnx"), executor="cuda-graph", plan_cache=plan_cache)
    shape = (trainer.batch_size, *trainer.input_shape)
    x = np.random.default_rng(0).standard_normal(shape, dtype=np.float32)
    y = np.zeros(trainer.batch_size, np.int64)
    trainer.step(x, y, lr=0.01).loss()  # warm
    start = time.perf_counter()
    handles = [trainer.step(x, y, lr=0.01) for _ in range(16)]
    burst = time.perf_counter() - start
    in_flight, first_done = trainer.in_flight, handles[8].done()
    trainer.losses()
    per_step = (time.perf_counter() - start) / 16
    print(f"burst of 16 steps returned after {burst * 1e3:.2f} ms; in flight {in_flight}; "
          f"{per_step * 1e3:.3f} ms per step")
    assert in_flight > 1
    assert not first_done


def test_device_errors(plan_cache: str) -> None:
    torch = pytest.importorskip("torch")
    cpu = rn.Trainer(artifact("mlp.train.rnx"), executor="cpu")
    x = torch.zeros(64, 1, 28, 28, device="cuda")
    y = torch.zeros(64, dtype=torch.int64, device="cuda")
    with pytest.raises(ValueError, match="runs on the cpu executor; the tensors are on cuda:0"):
        cpu.step(x, y, lr=0.1)
    gpu = graph_trainer("mlp.train.rnx", plan_cache)
    with pytest.raises(ValueError, match="images must be float32"):
        gpu.step(x.half(), y, lr=0.1)
    with pytest.raises(ValueError, match="labels must be of an integer dtype"):
        gpu.step(x, y.float(), lr=0.1)
    with pytest.raises(ValueError, match="NCHW"):
        gpu.step(x.permute(0, 2, 3, 1), y, lr=0.1, layout="NHWC")
    if torch.cuda.device_count() > 1:
        with pytest.raises(ValueError, match="runs on cuda:0, the tensors are on cuda:1"):
            gpu.step(x.to("cuda:1"), y.to("cuda:1"), lr=0.1)
    assert gpu.step_count == 0


FAULT = """
import sys, numpy as np, rn
t = rn.Trainer(sys.argv[1], executor="cuda-eager")
x = np.zeros((t.batch_size, *t.input_shape), np.float32); y = np.zeros(t.batch_size, np.int64)
t.step(x, y, lr=0.01); t.losses()  # plans built: the fault falls in a step
rn.trainer._native_module().inject_cuda_failure_after(int(sys.argv[2]))
try:
    for _ in range(200):
        t.step(x, y, lr=0.01)
    t.losses()
    print("no failure")
except rn.TrainerError as e:
    print("failed:", e)
    try:
        t.step(x, y, lr=0.01)
    except rn.TrainerError as again:
        print("again:", again)
"""


@pytest.mark.parametrize("calls", [1, 57, 400])
def test_injected_cuda_failure_is_a_sticky_trainer_error(calls: int) -> None:
    proc = subprocess.run([sys.executable, "-c", FAULT, str(artifact("cnn.rnx")), str(calls)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "failed:" in proc.stdout, proc.stdout
    assert "again: the trainer failed earlier and takes no more work" in proc.stdout


def test_fashion_mnist_from_python_within_0_3_points_of_rn_run(fashion: dict[str, Any], plan_cache: str) -> None:
    proc = rn_run(artifact("fashion_cnn.train.rnx"), "--executor", "cuda-graph", "--plan-cache", plan_cache,
                  "--data", DATA, "--epochs", 2, "--lr", 0.01, "--seed", SEED, "--no-progress")
    assert proc.returncode == 0, proc.stderr
    theirs = float(re.findall(r"^epoch 2/2 test loss [0-9.]+ accuracy ([0-9.]+)%", proc.stdout, re.M)[-1])
    trainer = rn.Trainer(artifact("fashion_cnn.train.rnx"), executor="cuda-graph", seed=SEED,
                         plan_cache=plan_cache)
    images, labels = fashion["train"]
    loop(trainer, images, labels, 2, 0.01, len(labels))
    _, accuracy = trainer.evaluate(*fashion["test"])
    print(f"Fashion-MNIST fashion_cnn 2 epochs: Python {100 * accuracy:.2f}%, rn-run {theirs:.2f}%")
    assert abs(100 * accuracy - theirs) <= 0.3
