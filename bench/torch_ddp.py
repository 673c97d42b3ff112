"""PyTorch DistributedDataParallel training-step timings, the data-parallel peer of rn-run --gpus.

Started by torchrun, one process per GPU:

    torchrun --standalone --nproc_per_node 2 bench/torch_ddp.py --models resnet18c:256

The model, batch per GPU and step are bench/torch_step.py's eager step
(fp16 autocast, channels_last, cross entropy, SGD with Nesterov momentum 0.9
and weight decay 5e-4, GradScaler, a pinned host-to-device copy of the batch
every step), with the model wrapped in DDP over NCCL (its default 25 MiB
gradient buckets, gradients as bucket views), so the all-reduce overlaps the
backward the way RN's buckets do. Timing as torch_step.py's: `--warmup`
steps, then three windows of `--steps` steps between CUDA events on every
rank, each window starting after a barrier; rank 0 prints one JSON line per
model with the median window's ms per step, the images per second of all
GPUs together ("batch" is one GPU's) and "gpus". Scaling efficiency is this
run's images/s over the GPU count times a 1-GPU run's
(bench/collect_results.py pairs them by model, batch and GPUs).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_step import MODELS, device_memory_in_use, eager_step, timed_windows  # noqa: E402


def measure(name: str, batch: int, steps: int, warmup: int, rank: int, world: int) -> dict:
    build, shape, classes = MODELS[name]
    torch.manual_seed(0)
    torch.cuda.synchronize()
    start = time.perf_counter()
    model = build().cuda().to(memory_format=torch.channels_last)
    ddp = DistributedDataParallel(model, device_ids=[torch.cuda.current_device()],
                                  gradient_as_bucket_view=True)
    generator = torch.Generator().manual_seed(rank)  # each rank its own shard
    x_host = torch.randn(batch, *shape, generator=generator).pin_memory()
    y_host = torch.randint(0, classes, (batch,), generator=generator).pin_memory()
    x = torch.empty(batch, *shape, device="cuda").to(memory_format=torch.channels_last)
    y = torch.empty(batch, dtype=torch.long, device="cuda")
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9, nesterov=True,
                                weight_decay=5e-4)
    step = eager_step(ddp, x, y, x_host, y_host, optimizer, torch.amp.GradScaler("cuda"))

    loss = step()
    torch.cuda.synchronize()
    first_end = time.perf_counter()
    peak = device_memory_in_use()
    for _ in range(warmup - 1):
        step()
    torch.cuda.synchronize()
    ms, loss, peak = timed_windows(step, steps, peak, before_window=dist.barrier)
    return {"framework": "torch", "model": name, "batch": batch, "mode": "ddp", "gpus": world,
            "ms_per_step": round(ms, 3), "images_per_s": round(batch * world * 1000 / ms),
            "first_step_s": round(first_end - start, 3), "peak_memory_bytes": peak,
            "memory_method": "cudaMemGetInfo total-free of rank 0's GPU after the first step "
                             "and each timed window",
            "loss": float(loss)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnet18c:256,resnet50:256",
                        help="comma-separated model:batch-per-GPU pairs")
    parser.add_argument("--steps", type=int, default=40, help="steps per timed window")
    parser.add_argument("--warmup", type=int, default=15,
                        help="untimed steps before the windows, the first one included")
    args = parser.parse_args()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.backends.cudnn.benchmark = True
    if rank == 0:
        print(json.dumps({"torch": torch.__version__, "nccl": list(torch.cuda.nccl.version()),
                          "gpu": torch.cuda.get_device_name(), "gpus": world}), flush=True)
    for spec in args.models.split(","):
        name, batch = spec.split(":")
        try:
            result = measure(name, int(batch), args.steps, args.warmup, rank, world)
        except Exception as error:  # report and go on with the next model
            result = {"framework": "torch", "model": name, "batch": int(batch), "mode": "ddp",
                      "gpus": world, "error": f"{type(error).__name__}: {error}"[:300]}
        if rank == 0:
            print(json.dumps(result), flush=True)
        torch.cuda.empty_cache()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
