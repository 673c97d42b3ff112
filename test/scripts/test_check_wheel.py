"""scripts/check-wheel.py: wheels of stub shared libraries built here, each
with one dependency the real wheel must not have (libLLVM, an NVIDIA library
outside librn_cuda.so, an absolute RUNPATH, a library nobody ships), and
the clean one it must pass."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "check-wheel.py"

pytestmark = pytest.mark.skipif(
    shutil.which("cc") is None or shutil.which("readelf") is None, reason="needs cc and readelf"
)


def stub(folder: Path, name: str, needs: list[str] = (), soname: str | None = None,
         rpath: str | None = None) -> Path:
    """A shared library `name` (its soname `soname`) that needs the stubs `needs`."""
    source = folder / f"{name}.c"
    source.write_text(f"int {name.replace('.', '_').replace('-', '_')}_symbol(void) {{ return 0; }}\n")
    out = folder / name
    cmd = ["cc", "-shared", "-fPIC", "-o", str(out), str(source),
           f"-Wl,-soname,{soname or name}", "-Wl,--no-as-needed", f"-L{folder}"]
    for lib in needs:
        cmd.append(f"-l:{lib}")
    if rpath:
        cmd.append(f"-Wl,-rpath,{rpath}")
    subprocess.run(cmd, check=True)
    return out


def wheel(tmp_path: Path, files: dict[str, Path]) -> Path:
    path = tmp_path / "rn-0.0.0-cp312-abi3-linux_x86_64.whl"
    with zipfile.ZipFile(path, "w") as z:
        for name, file in files.items():
            z.write(file, name)
        z.writestr("rn/__init__.py", "")
    return path


def check(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), str(path), *args],
                          capture_output=True, text=True, check=False)


@pytest.fixture
def libs(tmp_path: Path) -> Path:
    folder = tmp_path / "libs"
    folder.mkdir()
    stub(folder, "libLLVM.so.22.1")
    stub(folder, "libcudnn.so.9")
    stub(folder, "libfoo.so.1")
    stub(folder, "libjpeg.so.62")
    return folder


def test_clean_wheel_passes(tmp_path: Path, libs: Path) -> None:
    runtime = stub(libs, "librn_runtime.so", ["libjpeg.so.62"], rpath="$ORIGIN")
    cuda = stub(libs, "librn_cuda.so", ["librn_runtime.so", "libcudnn.so.9"],
                rpath="$ORIGIN:$ORIGIN/../../nvidia/cudnn/lib")
    proc = check(wheel(tmp_path, {"rn/lib/librn_runtime.so": runtime,
                                  "rn/lib/librn_cuda.so": cuda,
                                  "rn/lib/libjpeg.so.62": libs / "libjpeg.so.62"}))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "3 ELF files checked: no dependency outside the wheel" in proc.stdout
    assert "rn/lib/librn_cuda.so" in proc.stdout and "libcudnn.so.9" in proc.stdout


def test_llvm_dylib_fails(tmp_path: Path, libs: Path) -> None:
    compiler = stub(libs, "librn_compiler.so", ["libLLVM.so.22.1"])
    proc = check(wheel(tmp_path, {"rn/lib/librn_compiler.so": compiler}))
    assert proc.returncode == 1
    assert "needs libLLVM.so.22.1: LLVM and MLIR must be linked in" in proc.stderr


def test_nvidia_library_outside_the_gpu_library_fails(tmp_path: Path, libs: Path) -> None:
    runtime = stub(libs, "librn_runtime.so", ["libcudnn.so.9"])
    proc = check(wheel(tmp_path, {"rn/lib/librn_runtime.so": runtime}))
    assert proc.returncode == 1
    assert "needs libcudnn.so.9 (nvidia-cudnn-cu13): only librn_cuda.so" in proc.stderr


def test_unknown_library_and_absolute_runpath_fail(tmp_path: Path, libs: Path) -> None:
    tool = stub(libs, "librn_x.so", ["libfoo.so.1"], rpath="/work/build/lib")
    proc = check(wheel(tmp_path, {"rn/lib/librn_x.so": tool}))
    assert proc.returncode == 1
    assert "needs libfoo.so.1, which is neither in the wheel nor on the allowed list" in proc.stderr
    assert "RUNPATH entry '/work/build/lib'" in proc.stderr


def test_size_limit(tmp_path: Path, libs: Path) -> None:
    path = wheel(tmp_path, {"rn/lib/libjpeg.so.62": libs / "libjpeg.so.62"})
    assert check(path, "--max-mib", "10").returncode == 0
    proc = check(path, "--max-mib", "0.00001")
    assert proc.returncode == 1 and "over --max-mib" in proc.stderr
