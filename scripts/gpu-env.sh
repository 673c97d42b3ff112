# Sourced by the scripts that run on the GPU machine from a bundle
# (scripts/bundle-gpu.sh), with `bundle` set to the bundle's folder: sets
# `out` ($OUT, else bundle/gpu-results) and `python`, unpacks the binaries,
# artifacts and zoo references the bundle carries packed, and puts the libraries of the machine's PyTorch
# venv (cuDNN, NCCL, the CUDA 13 runtime) and the toolkit's CUPTI (rn-run
# --trace, the timeline tests) on LD_LIBRARY_PATH.
out=${OUT:-$bundle/gpu-results}
mkdir -p "$out"
if [ ! -x "$bundle/bin/rn-run" ] && [ -f "$bundle/bin.tar.xz" ]; then
  mkdir -p "$bundle/bin" && tar xJf "$bundle/bin.tar.xz" -C "$bundle/bin"
fi
for packed in models zoo; do
  if [ ! -d "$bundle/$packed" ] && [ -f "$bundle/$packed.tar.xz" ]; then
    mkdir -p "$bundle/$packed" && tar xJf "$bundle/$packed.tar.xz" -C "$bundle/$packed"
  fi
done
rn_venv_nvidia=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$rn_venv_nvidia/cudnn/lib:$rn_venv_nvidia/nccl/lib:$rn_venv_nvidia/cu13/lib:/usr/local/cuda-13.0/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
python=${RN_PYTHON:-/opt/torch/.venv/bin/python}
