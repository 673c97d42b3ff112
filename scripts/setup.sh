#!/usr/bin/env bash
# Installs what RN needs on a Debian machine (idempotent: installs only what
# is missing) and configures + builds the tree. Sourced by the README's
# commands; RN_BUILD_DIR (default: build) picks the build folder.
set -euo pipefail

RN_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RN_BUILD_DIR=${RN_BUILD_DIR:-$RN_ROOT/build}
LLVM_ROOT=/usr/lib/llvm-22

rn_log() { printf '[rn] %s\n' "$*" >&2; }

rn_install_packages() {
  local wanted=(cmake ninja-build g++ libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
                nlohmann-json3-dev zlib1g-dev libzstd-dev libopenblas-dev pkgconf libgtest-dev
                libpng-dev libjpeg62-turbo-dev
                dataset-fashion-mnist)
  # The torch import tests (RN_WITH_TORCH=1, set by the test command) run
  # under Debian's /usr/bin/python3 with its PyTorch 1.13 and torchvision
  # 0.14: about 250 MB to download, under a minute to install here.
  if [ "${RN_WITH_TORCH:-0}" = 1 ]; then
    wanted+=(python3-torch python3-torchvision python3-pytest)
  fi
  local missing=()
  for package in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
      || missing+=("$package")
  done
  if ((${#missing[@]})); then
    rn_log "installing Debian packages: ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
  if ! python3 -c 'import pytest' 2>/dev/null; then
    rn_log "installing pytest"
    python3 -m pip install -q pytest
  fi
  # rn.Trainer (python-frontend/native): numpy for its arrays, nanobind to
  # build the extension (docs/python.md).
  if ! python3 -c 'import numpy, nanobind' 2>/dev/null; then
    rn_log "installing numpy and nanobind (pip)"
    python3 -m pip install -q numpy nanobind
  fi
  # The CUDA runtime half builds where nvcc is (CUDA 13 with cuDNN and
  # cuBLASLt in /usr/local/cuda); its convolutions use the cuDNN frontend,
  # a header-only library that comes from PyPI.
  if { command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; } &&
     ! python3 -m pip show -q nvidia-cudnn-frontend >/dev/null 2>&1; then
    rn_log "installing the cuDNN frontend headers (pip: nvidia-cudnn-frontend)"
    python3 -m pip install -q nvidia-cudnn-frontend
  fi
  # CUTLASS's headers for the Hopper kernels of runtime/cuda/cutlass: its
  # PyPI wheel carries them; --no-deps, since its Python half (and what that
  # pulls in) is not used.
  if { command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; } &&
     ! python3 -m pip show -q nvidia-cutlass >/dev/null 2>&1; then
    rn_log "installing the CUTLASS headers (pip: nvidia-cutlass, without its dependencies)"
    python3 -m pip install -q --no-deps nvidia-cutlass==4.2.0.0
  fi
}

rn_build() {
  if [ ! -f "$RN_BUILD_DIR/build.ninja" ]; then
    rn_log "configuring $RN_BUILD_DIR"
    cmake -G Ninja -S "$RN_ROOT" -B "$RN_BUILD_DIR" \
      -DCMAKE_BUILD_TYPE=Release \
      -DMLIR_DIR="$LLVM_ROOT/lib/cmake/mlir" \
      -DLLVM_EXTERNAL_LIT="$LLVM_ROOT/bin/lit" \
      -DPython3_EXECUTABLE="$(command -v python3)" >/dev/null
  fi
  rn_log "building"
  ninja -C "$RN_BUILD_DIR"
}

# RN_NO_BUILD=1: neither install nor build; use the tools already on PATH
# (or in RN_BUILD_DIR), e.g. while another build of the tree is running.
if [ "${RN_NO_BUILD:-0}" != 1 ]; then
  rn_install_packages
  rn_build
fi
export PATH="$RN_BUILD_DIR/bin:$PATH"
export PYTHONPATH="$RN_ROOT/python-frontend${PYTHONPATH:+:$PYTHONPATH}"
