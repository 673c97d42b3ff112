"""JAX/XLA training-step timings for RN's benchmark models, the JAX peer of torch_step.py.

The whole training step (forward, backward, SGD with Nesterov momentum 0.9
and weight decay 5e-4 through optax, as the JAX reference
script RN's benchmark started from does) is one jax.jit; parameters, batch statistics and optimizer state are
donated to it, so XLA updates them in place as a JAX training loop would.
The models are Flax linen, NHWC, f32 parameters:

- mlp: Flatten, Dense 1024, ReLU, Dense 1024, ReLU, Dense 10 (RN's mlp, 28x28x1).
- resnet18c, vgg11c: the CIFAR models of the reference (32x32x3, 10 classes).
- resnet50: torchvision's ResNet-50 v1.5 (stride on the bottleneck's 3x3,
  1x1 projection shortcuts), 224x224x3, 1000 classes.

Compute dtype: bf16 by default, as the reference; `--dtype f16` computes in
f16 without loss scaling (RN and PyTorch use f16 with loss scaling, which a
bf16 step does not need). Initializers are Flax's defaults; they change the
values, not the work.

Input: by default the batch is put on the device once and reused, as the
reference does; `--h2d` instead transfers a host numpy batch every step
(jax.device_put), the work RN and PyTorch do, which copy a pinned batch per
step. bench/run-peers.sh passes `--h2d`. Each transfer makes a new device
buffer that lives until its step has run, and JAX's asynchronous dispatch
lets the host run many steps ahead, so without a bound the queued batches
would count in the peak (ResNet-50: 154 MB each). `--max-inflight K`
(default 3) waits for the step K back before transferring the next batch:
the GPU still has queued work, and at most K batches are alive, as in a
prefetching input pipeline (0: no bound).

Timing, as the reference: `--warmup` steps (the first one included), then
three windows of `--steps` steps, each ended with block_until_ready; the
median window is reported as ms per step, one JSON line per run with
torch_step.py's fields ("framework": "jax", "mode": "jit"), a line with
"error" where a run fails. "first_step_s" runs from the model's construction
through init, compilation and the first step (the backend is started before
the clock); "compile_s" is the compilation alone.

Memory: XLA_PYTHON_CLIENT_PREALLOCATE=false is set before jax is imported;
otherwise JAX takes 75% of the GPU at start and any device-wide number
means nothing. "peak_memory_bytes" is the largest (total - free) that
cudaMemGetInfo gives after the first step and after every timed window,
through ctypes on the libcudart.so of the nvidia wheels (or
LD_LIBRARY_PATH); failing that, NVML's device "used"; "memory_method" says
which. "allocator_peak_bytes" is XLA's own peak_bytes_in_use. The uniform
external measurement is bench/peak_memory.py, with one run per process:

    python bench/jax_step.py --models resnet18c:256 --h2d
    python bench/jax_step.py --count-params     # trainable parameters of each model, no step

Profile: `--trace DIR` runs `--trace-steps` more steps after the timed windows
under jax.profiler with a Perfetto trace (DIR/plugins/profile/RUN/
perfetto_trace.json.gz: CUPTI's kernels, XLA's fusion names);
bench/xla_trace_summary.py turns it into GPU time per kernel and step, and
`XLA_FLAGS=--xla_dump_to=D --xla_dump_hlo_as_text` dumps the optimized HLO
that says what each fusion holds.
"""

from __future__ import annotations

import os
import time

PROCESS_START = time.perf_counter()  # before the heavy imports, like rn-run's process start
os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"  # must precede `import jax`

import argparse  # noqa: E402
import ctypes  # noqa: E402
import ctypes.util  # noqa: E402
import json  # noqa: E402
from collections import deque  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from functools import partial  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import flax.linen as nn  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402

DTYPES = {"bf16": jnp.bfloat16, "f16": jnp.float16}


def _norm(train: bool, dtype: Any) -> nn.BatchNorm:
    # Flax's momentum is the running average's decay: 0.9 is PyTorch's momentum 0.1.
    return nn.BatchNorm(use_running_average=not train, momentum=0.9, epsilon=1e-5, dtype=dtype)


class MLP(nn.Module):
    classes: int = 10
    dtype: Any = jnp.bfloat16

    @nn.compact
    def __call__(self, x: jax.Array, train: bool = True) -> jax.Array:
        x = x.reshape(x.shape[0], -1)
        x = nn.relu(nn.Dense(1024, dtype=self.dtype)(x))
        x = nn.relu(nn.Dense(1024, dtype=self.dtype)(x))
        return nn.Dense(self.classes, dtype=self.dtype)(x)


class BasicBlock(nn.Module):
    """Two 3x3 conv+BN with a residual; a 1x1 conv+BN shortcut where the shape changes."""

    features: int
    stride: int
    dtype: Any

    @nn.compact
    def __call__(self, x: jax.Array, train: bool) -> jax.Array:
        conv = partial(nn.Conv, use_bias=False, dtype=self.dtype)
        strides = (self.stride, self.stride)
        y = nn.relu(_norm(train, self.dtype)(conv(self.features, (3, 3), strides, padding=1)(x)))
        y = _norm(train, self.dtype)(conv(self.features, (3, 3), padding=1)(y))
        if self.stride != 1 or x.shape[-1] != self.features:
            x = _norm(train, self.dtype)(conv(self.features, (1, 1), strides, padding="VALID")(x))
        return nn.relu(y + x)


class ResNet18C(nn.Module):
    """CIFAR ResNet-18: a 3x3/1 stem without max pool, four stages of two basic blocks."""

    classes: int = 10
    dtype: Any = jnp.bfloat16

    @nn.compact
    def __call__(self, x: jax.Array, train: bool = True) -> jax.Array:
        x = nn.Conv(64, (3, 3), padding=1, use_bias=False, dtype=self.dtype)(x)
        x = nn.relu(_norm(train, self.dtype)(x))
        for features, stride in [(64, 1), (64, 1), (128, 2), (128, 1), (256, 2), (256, 1),
                                 (512, 2), (512, 1)]:
            x = BasicBlock(features, stride, self.dtype)(x, train)
        x = jnp.mean(x, axis=(1, 2))
        return nn.Dense(self.classes, dtype=self.dtype)(x)


class VGG11C(nn.Module):
    """CIFAR VGG-11-BN: conv3x3 (no bias) + BN + ReLU per width, 2x2 max pool per 'M'."""

    classes: int = 10
    dtype: Any = jnp.bfloat16

    @nn.compact
    def __call__(self, x: jax.Array, train: bool = True) -> jax.Array:
        cfg: list[int | str] = [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"]
        for width in cfg:
            if not isinstance(width, int):
                x = nn.max_pool(x, (2, 2), (2, 2))
            else:
                x = nn.Conv(width, (3, 3), padding=1, use_bias=False, dtype=self.dtype)(x)
                x = nn.relu(_norm(train, self.dtype)(x))
        return nn.Dense(self.classes, dtype=self.dtype)(x.reshape(x.shape[0], -1))


class Bottleneck(nn.Module):
    """1x1 reduce, 3x3 carrying the stride (v1.5), 1x1 expand x4, residual."""

    planes: int
    stride: int
    dtype: Any

    @nn.compact
    def __call__(self, x: jax.Array, train: bool) -> jax.Array:
        conv = partial(nn.Conv, use_bias=False, dtype=self.dtype)
        out = self.planes * 4
        strides = (self.stride, self.stride)
        y = nn.relu(_norm(train, self.dtype)(conv(self.planes, (1, 1), padding="VALID")(x)))
        y = nn.relu(_norm(train, self.dtype)(conv(self.planes, (3, 3), strides, padding=1)(y)))
        y = _norm(train, self.dtype)(conv(out, (1, 1), padding="VALID")(y))
        if self.stride != 1 or x.shape[-1] != out:
            x = _norm(train, self.dtype)(conv(out, (1, 1), strides, padding="VALID")(x))
        return nn.relu(y + x)


class ResNet50(nn.Module):
    """torchvision ResNet-50: 7x7/2 stem, 3x3/2 max pool, stages of 3, 4, 6, 3 bottlenecks."""

    classes: int = 1000
    dtype: Any = jnp.bfloat16

    @nn.compact
    def __call__(self, x: jax.Array, train: bool = True) -> jax.Array:
        x = nn.Conv(64, (7, 7), (2, 2), padding=3, use_bias=False, dtype=self.dtype)(x)
        x = nn.relu(_norm(train, self.dtype)(x))
        x = nn.max_pool(x, (3, 3), (2, 2), padding=((1, 1), (1, 1)))
        for stage, (planes, blocks) in enumerate([(64, 3), (128, 4), (256, 6), (512, 3)]):
            for i in range(blocks):
                stride = 2 if stage > 0 and i == 0 else 1
                x = Bottleneck(planes, stride, self.dtype)(x, train)
        x = jnp.mean(x, axis=(1, 2))
        return nn.Dense(self.classes, dtype=self.dtype)(x)


MODELS: dict[str, tuple[type[nn.Module], tuple[int, int, int], int]] = {
    "mlp": (MLP, (28, 28, 1), 10),
    "resnet18c": (ResNet18C, (32, 32, 3), 10),
    "vgg11c": (VGG11C, (32, 32, 3), 10),
    "resnet50": (ResNet50, (224, 224, 3), 1000),
}
"""name -> (module, NHWC input shape without the batch, classes)."""


def count_params(params: Any) -> int:
    """Trainable parameters (the 'params' collection; BN running statistics excluded)."""
    return sum(int(np.prod(leaf.shape)) for leaf in jax.tree_util.tree_leaves(params))


def _cudart_candidates() -> Iterator[Path | str]:
    """libcudart.so files: the nvidia wheels' (cu13 first), LD_LIBRARY_PATH's, the system's."""
    try:
        import nvidia  # namespace package of the CUDA wheels

        roots = [Path(p) for p in nvidia.__path__]
    except ImportError:
        roots = []
    for root in roots:
        found = sorted(root.glob("*/lib/libcudart.so*"))
        yield from sorted(found, key=lambda p: (p.parent.parent.name != "cu13", str(p)))
    for folder in os.environ.get("LD_LIBRARY_PATH", "").split(":"):
        if folder:
            yield from sorted(Path(folder).glob("libcudart.so*"))
    name = ctypes.util.find_library("cudart")
    if name:
        yield name


class DeviceMemory:
    """Bytes in use on the device as the driver sees them, by the first method that works.

    cudaMemGetInfo is the number torch_step.py and rn-run take; NVML's "used"
    is the fallback where no libcudart loads (it includes memory the driver
    reserves, so it reads somewhat higher).
    """

    def __init__(self) -> None:
        self.method = "none"
        self._read: Callable[[], int] | None = None
        for candidate in _cudart_candidates():
            try:
                lib = ctypes.CDLL(str(candidate))
                get_info = lib.cudaMemGetInfo
            except (OSError, AttributeError):
                continue
            get_info.argtypes = [ctypes.POINTER(ctypes.c_size_t)] * 2
            get_info.restype = ctypes.c_int

            def read(get_info: Any = get_info) -> int:
                free, total = ctypes.c_size_t(), ctypes.c_size_t()
                rc = get_info(ctypes.byref(free), ctypes.byref(total))
                if rc != 0:
                    raise RuntimeError(f"cudaMemGetInfo returned {rc}")
                return total.value - free.value

            try:
                read()
            except RuntimeError:
                continue
            self._read, self.method = read, f"cudaMemGetInfo total-free ({Path(candidate).name})"
            return
        try:
            import pynvml

            pynvml.nvmlInit()
            visible = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0]
            handle = pynvml.nvmlDeviceGetHandleByIndex(int(visible) if visible.isdigit() else 0)
            self._read = lambda: int(pynvml.nvmlDeviceGetMemoryInfo(handle).used)
            self.method = "nvml device used"
        except Exception:  # no GPU, no NVML: the run goes on without a memory number
            self._read = None

    def used(self) -> int | None:
        return None if self._read is None else self._read()


def _peak(previous: int | None, current: int | None) -> int | None:
    if current is None:
        return previous
    return current if previous is None else max(previous, current)


def measure(name: str, batch: int, dtype: str, h2d: bool, steps: int, warmup: int,
            memory: DeviceMemory, max_inflight: int = 3, trace_dir: str | None = None,
            trace_steps: int = 5) -> dict[str, Any]:
    module, shape, classes = MODELS[name]
    rng = np.random.default_rng(0)
    x_host = rng.standard_normal((batch, *shape), dtype=np.float32)
    y_host = rng.integers(0, classes, batch).astype(np.int32)
    device = jax.devices()[0]

    start = time.perf_counter()
    model = module(classes=classes, dtype=DTYPES[dtype])
    x_dev, y_dev = jax.device_put(x_host, device), jax.device_put(y_host, device)
    variables = jax.jit(model.init)(jax.random.PRNGKey(0), x_dev)
    params, stats = variables["params"], variables.get("batch_stats", {})
    tx = optax.chain(optax.add_decayed_weights(5e-4), optax.sgd(0.01, momentum=0.9, nesterov=True))
    opt_state = tx.init(params)

    def train_step(params: Any, stats: Any, opt_state: Any, x: jax.Array,
                   y: jax.Array) -> tuple[Any, Any, Any, jax.Array]:
        def loss_fn(p: Any) -> tuple[jax.Array, Any]:
            logits, updates = model.apply({"params": p, "batch_stats": stats}, x,
                                          mutable=["batch_stats"])
            loss = optax.softmax_cross_entropy_with_integer_labels(
                logits.astype(jnp.float32), y).mean()
            return loss, updates

        (loss, updates), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
        steps_, opt_state = tx.update(grads, opt_state, params)
        return (optax.apply_updates(params, steps_), updates.get("batch_stats", {}), opt_state,
                loss)

    compile_start = time.perf_counter()
    step = jax.jit(train_step, donate_argnums=(0, 1, 2)).lower(
        params, stats, opt_state, x_dev, y_dev).compile()
    compile_s = time.perf_counter() - compile_start

    loss: jax.Array | None = None

    def run(n: int) -> None:
        """n steps, then wait for all of their results (what a timed window ends with)."""
        nonlocal params, stats, opt_state, loss
        inflight: deque[jax.Array] = deque()
        for _ in range(n):
            if h2d:
                if max_inflight and len(inflight) >= max_inflight:
                    inflight.popleft().block_until_ready()
                x, y = jax.device_put(x_host, device), jax.device_put(y_host, device)
            else:
                x, y = x_dev, y_dev
            params, stats, opt_state, loss = step(params, stats, opt_state, x, y)
            if h2d and max_inflight:
                inflight.append(loss)
        jax.block_until_ready((params, stats, opt_state, loss))

    run(1)
    first_end = time.perf_counter()
    peak = memory.used()
    run(warmup - 1)
    warm_s = time.perf_counter() - first_end
    times = []
    for _ in range(3):
        t = time.perf_counter()
        run(steps)
        times.append((time.perf_counter() - t) * 1000 / steps)
        peak = _peak(peak, memory.used())
    ms = sorted(times)[1]
    if trace_dir:
        # After the timed windows, so that the profiler costs them nothing.
        with jax.profiler.trace(trace_dir, create_perfetto_trace=True):
            run(trace_steps)
    assert loss is not None
    stats_now = device.memory_stats() or {}
    return {"framework": "jax", "model": name, "batch": batch, "mode": "jit", "dtype": dtype,
            "input": "h2d" if h2d else "device",
            **({"max_inflight": max_inflight} if h2d else {}),
            "ms_per_step": round(ms, 3), "images_per_s": round(batch * 1000 / ms),
            "first_step_s": round(first_end - start, 3),
            "first_step_process_s": round(first_end - PROCESS_START, 3),
            "compile_s": round(compile_s, 3), "warmup_s": round(warm_s, 2),
            "peak_memory_bytes": peak, "memory_method": memory.method,
            "allocator_peak_bytes": stats_now.get("peak_bytes_in_use"),
            "params": count_params(params), "loss": float(loss),
            **({"trace_dir": trace_dir, "trace_steps": trace_steps} if trace_dir else {})}


def parameter_counts() -> dict[str, int]:
    """Trainable parameters of every model, from abstract shapes (nothing is computed)."""
    counts = {}
    for name, (module, shape, classes) in MODELS.items():
        x = jax.ShapeDtypeStruct((2, *shape), jnp.float32)
        variables = jax.eval_shape(module(classes=classes).init, jax.random.PRNGKey(0), x)
        counts[name] = count_params(variables["params"])
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="mlp:128,resnet18c:256,vgg11c:256",
                        help="comma-separated model:batch pairs (one for one run per process)")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="bf16",
                        help="compute dtype (default bf16, as the reference; f16 has no loss "
                             "scaling)")
    parser.add_argument("--h2d", action="store_true",
                        help="transfer a host batch every step (default: one device batch, "
                             "as the reference)")
    parser.add_argument("--max-inflight", type=int, default=3,
                        help="with --h2d: steps in flight before the next transfer waits "
                             "(default 3; 0: no bound)")
    parser.add_argument("--steps", type=int, default=40, help="steps per timed window")
    parser.add_argument("--warmup", type=int, default=15,
                        help="untimed steps before the windows, the first one included")
    parser.add_argument("--trace", metavar="DIR",
                        help="profile --trace-steps more steps into DIR (a Perfetto trace; "
                             "bench/xla_trace_summary.py reads it); one model per run")
    parser.add_argument("--trace-steps", type=int, default=5,
                        help="steps under the profiler with --trace (default 5)")
    parser.add_argument("--count-params", action="store_true",
                        help="print each model's trainable parameter count and exit")
    args = parser.parse_args()
    if args.count_params:
        for name, count in parameter_counts().items():
            print(json.dumps({"model": name, "params": count}))
        return
    if args.warmup < 1:
        parser.error("--warmup must be at least 1 (the first step)")
    devices = jax.devices()  # starts the backend before any clock
    memory = DeviceMemory()
    print(json.dumps({"jax": jax.__version__, "backend": jax.default_backend(),
                      "gpu": devices[0].device_kind, "memory_method": memory.method}), flush=True)
    for spec in args.models.split(","):
        name, batch = spec.split(":")
        try:
            result = measure(name, int(batch), args.dtype, args.h2d, args.steps, args.warmup,
                             memory, args.max_inflight, args.trace, args.trace_steps)
        except Exception as error:  # report and go on with the next run
            result = {"framework": "jax", "model": name, "batch": int(batch), "mode": "jit",
                      "dtype": args.dtype, "input": "h2d" if args.h2d else "device",
                      "error": f"{type(error).__name__}: {error}"[:300]}
        print(json.dumps(result), flush=True)
        jax.clear_caches()


if __name__ == "__main__":
    main()
