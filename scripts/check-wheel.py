#!/usr/bin/env python3
"""Checks what RN's wheel needs from the machine it is installed on.

Reads every ELF file in the wheel (``readelf -d``) and fails when one needs a
library that is neither in the wheel nor on the allowed list: the system's
C/C++ runtime, zlib and zstd everywhere; NVIDIA's CUDA libraries (from the
``nvidia-*`` pip wheels that PyTorch installs) only in ``librn_cuda.so``,
which the runtime loads on the first request for a GPU. LLVM and MLIR are
named when they appear (they must be linked in). Every RUNPATH must be
relative to the file (``$ORIGIN``): a path of the build machine finds
nothing on the user's. Prints each part's size, and fails when the wheel is
larger than ``--max-mib``.

    python3 scripts/check-wheel.py dist/rn-0.2.0-cp312-abi3-linux_x86_64.whl --max-mib 40
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

SYSTEM = {
    "libc.so.6",
    "libm.so.6",
    "libstdc++.so.6",
    "libgcc_s.so.1",
    "ld-linux-x86-64.so.2",
    "libpthread.so.0",
    "libdl.so.2",
    "librt.so.1",
    "libz.so.1",
    "libzstd.so.1",
}
# NVIDIA's libraries, each with the pip wheel that brings it.
NVIDIA = {
    r"libcudart\.so\.\d+": "nvidia-cuda-runtime",
    r"libcublasLt\.so\.\d+": "nvidia-cublas",
    r"libcublas\.so\.\d+": "nvidia-cublas",
    r"libcudnn\.so\.\d+": "nvidia-cudnn-cu13",
    r"libnccl\.so\.\d+": "nvidia-nccl-cu13",
    r"libnvrtc\.so\.\d+": "nvidia-cuda-nvrtc",
    r"libcupti\.so\.\d+": "nvidia-cuda-cupti",
}
# The one file allowed to need them: loaded lazily (runtime/train/gpu_backend.h).
GPU_LIBRARY = "librn_cuda.so"
FORBIDDEN = re.compile(r"^lib(LLVM|MLIR|clang)")


@dataclass
class Elf:
    path: str
    soname: str | None
    needed: list[str] = field(default_factory=list)
    runpath: list[str] = field(default_factory=list)


def read_elf(path: Path, name: str) -> Elf:
    out = subprocess.run(
        ["readelf", "-d", str(path)], capture_output=True, text=True, check=True
    ).stdout
    soname = re.search(r"\(SONAME\)\s+Library soname: \[([^]]+)\]", out)
    elf = Elf(name, soname.group(1) if soname else None)
    elf.needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^]]+)\]", out)
    for kind in ("RUNPATH", "RPATH"):
        for paths in re.findall(rf"\({kind}\)\s+Library \w+: \[([^]]*)\]", out):
            elf.runpath += [p for p in paths.split(":") if p]
    return elf


def nvidia_wheel(library: str) -> str | None:
    for pattern, wheel in NVIDIA.items():
        if re.fullmatch(pattern, library):
            return wheel
    return None


def check(root: Path) -> tuple[list[Elf], list[str]]:
    """The wheel's ELF files and the problems found (empty: fine)."""
    elves = []
    for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
        with path.open("rb") as f:
            if f.read(4) != b"\x7fELF":
                continue
        elves.append(read_elf(path, str(path.relative_to(root))))
    inside = {e.soname for e in elves if e.soname} | {Path(e.path).name for e in elves}
    problems = []
    for elf in elves:
        for lib in elf.needed:
            if FORBIDDEN.match(lib):
                problems.append(f"{elf.path} needs {lib}: LLVM and MLIR must be linked in")
            elif lib in inside or lib in SYSTEM:
                continue
            elif nvidia_wheel(lib):
                if Path(elf.path).name != GPU_LIBRARY:
                    problems.append(
                        f"{elf.path} needs {lib} ({nvidia_wheel(lib)}): only {GPU_LIBRARY}, "
                        "loaded on the first request for a GPU, may need NVIDIA's libraries"
                    )
            else:
                problems.append(f"{elf.path} needs {lib}, which is neither in the wheel nor "
                                "on the allowed list")
        for entry in elf.runpath:
            if not entry.startswith("$ORIGIN"):
                problems.append(f"{elf.path} has the RUNPATH entry {entry!r}: only paths "
                                "relative to the file ($ORIGIN) find anything on a user's machine")
    return elves, problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheel", type=Path)
    parser.add_argument("--max-mib", type=float, default=None,
                        help="fail when the wheel file is larger (MiB)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rn-wheel-") as tmp, zipfile.ZipFile(args.wheel) as z:
        z.extractall(tmp)
        sizes = {i.filename: (i.file_size, i.compress_size) for i in z.infolist()}
        elves, problems = check(Path(tmp))
    total = args.wheel.stat().st_size
    print(f"{args.wheel.name}: {total / 2**20:.1f} MiB")
    print(f"  {'part':<40} {'MiB':>8} {'in wheel':>9}  needs")
    for elf in elves:
        size, packed = sizes.get(elf.path, (0, 0))
        needed = ", ".join(n for n in elf.needed if n not in SYSTEM) or "-"
        print(f"  {elf.path:<40} {size / 2**20:8.1f} {packed / 2**20:9.1f}  {needed}")
    rest = [(n, s) for n, s in sizes.items() if n not in {e.path for e in elves}]
    print(f"  {'other files (' + str(len(rest)) + ')':<40} "
          f"{sum(s for _, (s, _) in rest) / 2**20:8.1f} {sum(p for _, (_, p) in rest) / 2**20:9.1f}")
    if args.max_mib is not None and total > args.max_mib * 2**20:
        problems.append(f"the wheel is {total / 2**20:.1f} MiB, over --max-mib {args.max_mib}")
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    print(f"{len(elves)} ELF files checked: "
          + ("no dependency outside the wheel and the allowed list" if not problems
             else f"{len(problems)} problem(s)"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
