# Sourced by the scripts that run on the GPU machine from a bundle
# (scripts/bundle-gpu.sh), with `bundle` set to the bundle's folder: sets
# `out` ($OUT, else bundle/gpu-results) and `python` (the machine's, which
# has PyTorch), installs the bundle's RN wheel into it (pip --no-index
# --no-deps; docs/install.md) unless that version is there, unpacks the test
# binary, artifacts and zoo references the bundle carries packed, and makes
# bin/ hold the test binary beside links to the wheel's tools. RN itself
# needs no library path; the test binary links the wheel's libraries, which
# LD_LIBRARY_PATH names for it (with NVIDIA's, from the same site-packages).
out=${OUT:-$bundle/gpu-results}
mkdir -p "$out"
python=${RN_PYTHON:-/opt/torch/.venv/bin/python}
rn_wheel=$(ls "$bundle"/wheel/rn-*.whl 2>/dev/null | head -1)
if [ -n "$rn_wheel" ]; then
  rn_wheel_version=$(basename "$rn_wheel" | cut -d- -f2)
  if [ "$("$python" -c 'import rn; print(rn.__version__)' 2>/dev/null)" != "$rn_wheel_version" ] ||
     [ "${RN_REINSTALL:-0}" = 1 ]; then
    "$python" -m pip install -q --no-index --no-deps --force-reinstall "$rn_wheel" >&2
  fi
  rn_site=$("$python" -c 'import os, rn; print(os.path.dirname(os.path.dirname(rn.__file__)))')
  mkdir -p "$bundle/bin"
  for tool in rn-run rn-data rn-compile rn-opt; do
    ln -sf "$rn_site/rn/bin/$tool" "$bundle/bin/$tool"
  done
else
  # No wheel in this folder (the scripts run from a checkout): the
  # machine's PyTorch venv for NVIDIA's libraries.
  rn_site=/opt/torch/.venv/lib/python3.12/site-packages
fi
if [ ! -x "$bundle/bin/rn-cuda-tests" ] && [ -f "$bundle/bin.tar.xz" ]; then
  mkdir -p "$bundle/bin" && tar xJf "$bundle/bin.tar.xz" -C "$bundle/bin"
fi
for packed in models zoo; do
  if [ ! -d "$bundle/$packed" ] && [ -f "$bundle/$packed.tar.xz" ]; then
    mkdir -p "$bundle/$packed" && tar xJf "$bundle/$packed.tar.xz" -C "$bundle/$packed"
  fi
done
rn_nvidia=$rn_site/nvidia
export LD_LIBRARY_PATH=$rn_site/rn/lib:$rn_nvidia/cudnn/lib:$rn_nvidia/nccl/lib:$rn_nvidia/cu13/lib:${LD_LIBRARY_PATH:-}
[ -d "$bundle/models" ] && export RN_TEST_INPUTS_DIR=$bundle/models
