"""PyTorch's time for ResNet-50's 7x7/2 stem at 3, 4 and 8 input channels.

The forward and the filter gradient alone (batch 256, f16, channels-last,
cudnn.benchmark), with the CUDA kernels each runs, so that RN's autotuned
cuDNN times (Conv.StemChannelPaddingTimes) can be read next to the engines
PyTorch reaches. Run on the GPU machine with its PyTorch venv:

    /opt/torch/.venv/bin/python bench/torch_stem.py [--channels 4]

With cuDNN's API log (CUDNN_LOGLEVEL_DBG=3 CUDNN_LOGDEST_DBG=FILE) the
engine configurations PyTorch finalizes, engine index and knobs, can be
read off the log.
"""

from __future__ import annotations

import argparse
from typing import Callable

import torch
from torch.profiler import ProfilerActivity, profile


def median_ms(fn: Callable[[], object], iters: int = 30, windows: int = 3) -> float:
    """Median over `windows` timed windows of `iters` calls, after warm-up."""
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(windows):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn()
        stop.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(stop) / iters)
    return sorted(times)[len(times) // 2]


def kernels(fn: Callable[[], object]) -> list[str]:
    """The CUDA kernels one call of `fn` launches."""
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return sorted({e.name[:120] for e in prof.events() if e.device_type.name == "CUDA"})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--channels", type=int, nargs="*", default=[3, 4, 8],
                        help="input channel counts to time (default 3 4 8)")
    args = parser.parse_args()
    torch.backends.cudnn.benchmark = True
    batch, stride, pad = 256, 2, 3
    for channels in args.channels:
        x = torch.randn(batch, channels, 224, 224, device="cuda", dtype=torch.half)
        x = x.to(memory_format=torch.channels_last)
        w = torch.randn(64, channels, 7, 7, device="cuda", dtype=torch.half)
        w = w.to(memory_format=torch.channels_last)
        dy = torch.randn_like(torch.nn.functional.conv2d(x, w, stride=stride, padding=pad))

        def forward() -> object:
            return torch.nn.functional.conv2d(x, w, stride=stride, padding=pad)

        def filter_grad() -> object:
            return torch.ops.aten.convolution_backward(
                dy, x, w, None, [stride] * 2, [pad] * 2, [1, 1], False, [0, 0], 1,
                [False, True, False])

        print(f"stem 7x7/2 x[{batch},224,224,{channels}] f16: forward {median_ms(forward):.3f} ms, "
              f"filter gradient {median_ms(filter_grad):.3f} ms")
        print("  forward kernels:", "; ".join(kernels(forward)))
        print("  filter gradient kernels:", "; ".join(kernels(filter_grad)), flush=True)


if __name__ == "__main__":
    main()
