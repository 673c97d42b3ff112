"""PyTorch training-step timings measured the way RN's are, for the same models.

The models mirror python-frontend/rn/models (mlp, resnet18c, vgg11c, and
torchvision's resnet50); the step is the one RN compiles: fp16 autocast with
channels_last, cross entropy, SGD with Nesterov momentum 0.9 and weight
decay 5e-4, dynamic loss scaling, and a pinned host-to-device copy of the
batch every step. Modes:

- "eager": one Python-issued step.
- "graph": the whole step captured once as a CUDA graph with a static loss
  scale (the usual recipe, since GradScaler's host-side checks cannot be
  captured) and replayed.
- "compile": the model wrapped in torch.compile (default mode); the rest of
  the step (loss, GradScaler, SGD) is the eager one around it, so only the
  forward and its backward are Inductor's.

Timing: `--warmup` steps (the first one included), then three repetitions of
`--steps` steps between CUDA events; the median repetition is reported, as
ms per step and images per second, one JSON line per run (a line with
"error" where a run fails, e.g. a compile that raises, and the next run
goes on).

Each line also carries:

- "first_step_s": wall time from the model's construction to the end of the
  first training step (torch.cuda.synchronize()d), so cuDNN autotuning,
  graph capture and torch.compile's compilation are in it; CUDA's context is
  created before the clock starts. "first_step_process_s" is the same end
  point measured from the process's start (imports and context included),
  the way rn-run measures its own.
- "peak_memory_bytes": the largest (total - free) of torch.cuda.mem_get_info()
  sampled after the first step and after every timed window. It sees the
  whole device (the CUDA context, cuDNN workspaces, the caching allocator's
  reserve, other processes), not only live tensors; "allocator_peak_bytes"
  is torch.cuda.max_memory_allocated(), the live-tensor peak. Sampling only
  at those points can miss a transient peak inside a step; the external,
  uniform measurement is bench/peak_memory.py, which is why the driver
  (bench/run-peers.sh) runs one model, batch and mode per process:

    python3 bench/torch_step.py --models resnet18c:256 --modes compile

Several at once still work (`--models mlp:128,resnet18c:256 --modes
eager,graph,compile`); their memory numbers then include what earlier runs
left in the process.
"""

from __future__ import annotations

import time

PROCESS_START = time.perf_counter()  # before the heavy imports, like rn-run's process start

import argparse  # noqa: E402 - after the clock on purpose
import json  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

MODES = ("eager", "graph", "compile")


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                          nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + self.shortcut(x))


def resnet18c(classes: int = 10) -> nn.Module:
    layers: list[nn.Module] = [nn.Conv2d(3, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU()]
    cin = 64
    for cout, stride in [(64, 1), (64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2),
                         (512, 1)]:
        layers.append(BasicBlock(cin, cout, stride))
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, classes)]
    return nn.Sequential(*layers)


def vgg11c(classes: int = 10) -> nn.Module:
    layers: list[nn.Module] = []
    cin = 3
    for width in [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"]:
        if width == "M":
            layers.append(nn.MaxPool2d(2))
        else:
            layers += [nn.Conv2d(cin, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU()]
            cin = width
    layers += [nn.Flatten(), nn.Linear(512, classes)]
    return nn.Sequential(*layers)


def mlp(classes: int = 10) -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024),
                         nn.ReLU(), nn.Linear(1024, classes))


def resnet50(classes: int = 1000) -> nn.Module:
    import torchvision

    return torchvision.models.resnet50(num_classes=classes)


def torchvision_model(name: str, **kwargs: Any) -> Callable[[int], nn.Module]:
    """A torchvision model by name (the imported models RN benchmarks: docs/python.md), built
    with `kwargs` as RN's artifact of it is (scripts/bundle-gpu.sh)."""

    def build(classes: int = 1000) -> nn.Module:
        import torchvision

        return getattr(torchvision.models, name)(num_classes=classes, **kwargs)

    return build


MODELS = {
    "mlp": (mlp, (1, 28, 28), 10),
    "resnet18c": (resnet18c, (3, 32, 32), 10),
    "vgg11c": (vgg11c, (3, 32, 32), 10),
    "resnet50": (resnet50, (3, 224, 224), 1000),
    "mobilenet_v2": (torchvision_model("mobilenet_v2"), (3, 224, 224), 1000),
    "efficientnet_b0": (torchvision_model("efficientnet_b0"), (3, 224, 224), 1000),
    "densenet121": (torchvision_model("densenet121"), (3, 224, 224), 1000),
    # Without the auxiliary classifier, whose logits a training step would also need.
    "inception_v3": (torchvision_model("inception_v3", aux_logits=False, init_weights=True),
                     (3, 224, 224), 1000),
    "shufflenet_v2_x1_0": (torchvision_model("shufflenet_v2_x1_0"), (3, 224, 224), 1000),
    "convnext_tiny": (torchvision_model("convnext_tiny"), (3, 224, 224), 1000),
}


def device_memory_in_use() -> int:
    """Bytes in use on the current device as the driver sees them (total - free)."""
    free, total = torch.cuda.mem_get_info()
    return total - free


def eager_step(forward: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor,
               y: torch.Tensor, x_host: torch.Tensor, y_host: torch.Tensor,
               optimizer: torch.optim.Optimizer,
               scaler: torch.amp.GradScaler) -> Callable[[], torch.Tensor]:
    """The eager training step (also bench/torch_ddp.py's, with a DDP forward): the batch
    copied from pinned memory, fp16 autocast, cross entropy, GradScaler, the optimizer."""

    def step() -> torch.Tensor:
        x.copy_(x_host, non_blocking=True)
        y.copy_(y_host, non_blocking=True)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = F.cross_entropy(forward(x), y)
        optimizer.zero_grad(set_to_none=False)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        return loss.detach()

    return step


def timed_windows(step: Callable[[], torch.Tensor], steps: int, peak: int,
                  before_window: Callable[[], None] | None = None) -> tuple[float, torch.Tensor, int]:
    """Three windows of `steps` steps between CUDA events: the median window's ms per step,
    the last loss and the device memory peak (`peak` or more, read after each window).
    `before_window` runs before each window starts (DDP: a barrier)."""
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    loss = None
    for _ in range(3):
        if before_window:
            before_window()
        begin.record()
        for _ in range(steps):
            loss = step()
        end.record()
        torch.cuda.synchronize()
        times.append(begin.elapsed_time(end) / steps)
        peak = max(peak, device_memory_in_use())
    return sorted(times)[1], loss, peak


def measure(name: str, batch: int, mode: str, steps: int, warmup: int) -> dict[str, Any]:
    build, shape, classes = MODELS[name]
    torch.manual_seed(0)
    torch.cuda.synchronize()
    start = time.perf_counter()
    model = build().cuda().to(memory_format=torch.channels_last)
    x_host = torch.randn(batch, *shape).pin_memory()
    y_host = torch.randint(0, classes, (batch,)).pin_memory()
    x = torch.empty(batch, *shape, device="cuda").to(memory_format=torch.channels_last)
    y = torch.empty(batch, dtype=torch.long, device="cuda")

    def sgd() -> torch.optim.Optimizer:
        return torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, nesterov=True,
                               weight_decay=5e-4)

    step: Callable[[], torch.Tensor]
    if mode in ("eager", "compile"):
        forward = torch.compile(model) if mode == "compile" else model
        step = eager_step(forward, x, y, x_host, y_host, sgd(), torch.amp.GradScaler("cuda"))
    elif mode == "graph":
        optimizer = sgd()
        scale = 1024.0
        x.copy_(x_host)
        y.copy_(y_host)

        def body() -> torch.Tensor:
            with torch.autocast("cuda", dtype=torch.float16):
                loss = F.cross_entropy(model(x), y)
            (loss * scale).backward()
            for p in model.parameters():
                p.grad.div_(scale)
            optimizer.step()
            return loss

        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                optimizer.zero_grad(set_to_none=False)
                body()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        optimizer.zero_grad(set_to_none=False)
        with torch.cuda.graph(graph):
            captured_loss = body()

        def step() -> torch.Tensor:
            x.copy_(x_host, non_blocking=True)
            y.copy_(y_host, non_blocking=True)
            graph.replay()
            return captured_loss
    else:
        raise ValueError(f"unknown mode {mode!r}; valid: {', '.join(MODES)}")

    loss = step()
    torch.cuda.synchronize()
    first_end = time.perf_counter()
    peak = device_memory_in_use()
    for _ in range(warmup - 1):
        step()
    torch.cuda.synchronize()
    warm_s = time.perf_counter() - first_end
    ms, loss, peak = timed_windows(step, steps, peak)
    return {"framework": "torch", "model": name, "batch": batch, "mode": mode,
            "ms_per_step": round(ms, 3), "images_per_s": round(batch * 1000 / ms),
            "first_step_s": round(first_end - start, 3),
            "first_step_process_s": round(first_end - PROCESS_START, 3),
            "warmup_s": round(warm_s, 2),
            "peak_memory_bytes": peak,
            "memory_method": "cudaMemGetInfo total-free after the first step and each timed window",
            "allocator_peak_bytes": torch.cuda.max_memory_allocated(),
            "params": sum(p.numel() for p in model.parameters() if p.requires_grad),
            "loss": float(loss)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="mlp:128,resnet18c:256,vgg11c:256",
                        help="comma-separated model:batch pairs (one for one run per process)")
    parser.add_argument("--modes", default="eager,graph",
                        help=f"comma-separated modes out of {', '.join(MODES)}")
    parser.add_argument("--steps", type=int, default=40, help="steps per timed window")
    parser.add_argument("--warmup", type=int, default=15,
                        help="untimed steps before the windows, the first one included")
    args = parser.parse_args()
    if args.warmup < 1:
        parser.error("--warmup must be at least 1 (the first step)")
    torch.backends.cudnn.benchmark = True
    torch.cuda.synchronize()  # creates the context, which is not part of first_step_s
    print(json.dumps({"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
                      "gpu": torch.cuda.get_device_name()}), flush=True)
    for spec in args.models.split(","):
        name, batch = spec.split(":")
        for mode in args.modes.split(","):
            torch.cuda.reset_peak_memory_stats()
            try:
                result = measure(name, int(batch), mode, args.steps, args.warmup)
            except Exception as error:  # report and go on with the next run
                result = {"framework": "torch", "model": name, "batch": int(batch), "mode": mode,
                          "error": f"{type(error).__name__}: {error}"[:300]}
            print(json.dumps(result), flush=True)
            if mode == "compile":
                torch.compiler.reset()  # no recompilation limits carried into the next model
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
