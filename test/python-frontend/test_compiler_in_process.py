"""rn.compile runs the compiler in-process (rn._compiler over librn_compiler.so),
the tools report one version, and the GPU half is loaded only when a GPU is
asked for (runtime/train/gpu_backend.h): the CPU executor trains with no GPU
library loadable, and a GPU request names what is missing."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

import rn
from rn import nn
from rn._native_loader import NativeUnavailable, compiler_module
from rn.training import find_tool

INPUTS = Path(__file__).resolve().parents[2] / "test" / "runtime" / "Inputs"


def _require(thing: object, why: str) -> None:
    if thing is None:
        if os.environ.get("RN_REQUIRE_TOOLS") == "1":
            pytest.fail(why + " (RN_REQUIRE_TOOLS=1)")
        pytest.skip(why)


@pytest.fixture(scope="module")
def compiler() -> object:
    try:
        return compiler_module()
    except NativeUnavailable as e:
        _require(None, str(e))


def tiny() -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(12, 3))


def test_compile_runs_in_process(compiler: object, tmp_path: Path,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    def no_subprocess(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"rn.compile started a process: {args}")

    monkeypatch.setattr(subprocess, "run", no_subprocess)
    out = rn.compile(tiny(), tmp_path / "tiny.rnx", batch=2, input_shape=(1, 3, 4), num_classes=3)
    assert out.read_bytes()[8:9] == b"{" and b"rn-program" in out.read_bytes()[:4096]


def test_compile_diagnostics_name_the_file_and_line(compiler: object, tmp_path: Path) -> None:
    source = tmp_path / "broken.mlir"
    source.write_text('module attributes {rn.model = "x"} {\n  func.func @forward(\n}\n')
    with pytest.raises(rn.CompileError, match=r"broken\.mlir:2:22: error: expected non-function type"):
        rn.compile(source, tmp_path / "broken.rnx")
    assert not (tmp_path / "broken.rnx").exists()


def test_compile_refuses_an_artifact_as_the_model(compiler: object, tmp_path: Path) -> None:
    with pytest.raises(rn.CompileError, match="is an RN artifact .already compiled., not a model"):
        rn.compile(INPUTS / "mlp.rnx", tmp_path / "again.rnx")


def test_an_explicit_rn_compile_runs_that_executable(tmp_path: Path) -> None:
    tool = rn.find_rn_compile()
    _require(tool, "rn-compile not found")
    out = rn.compile(tiny(), tmp_path / "tiny.rnx", batch=2, input_shape=(1, 3, 4), num_classes=3,
                     rn_compile=tool)
    assert out.is_file()
    with pytest.raises(rn.CompileError, match="rn-compile failed"):
        rn.compile(tiny(), tmp_path / "bad.rnx", batch=2, input_shape=(1, 3, 4), num_classes=3,
                   pipeline="optimizer=nope", rn_compile=tool)


def test_one_version_everywhere(compiler: object) -> None:
    assert compiler.version() == rn.__version__  # type: ignore[attr-defined]
    for name, env in (("rn-compile", "RN_COMPILE"), ("rn-run", "RN_RUN"), ("rn-opt", "RN_OPT"),
                      ("rn-data", "RN_DATA_TOOL")):
        tool = find_tool(name, env)
        _require(tool, f"{name} not found")
        line = subprocess.run([tool, "--version"], capture_output=True, text=True, check=True).stdout
        assert line.startswith(f"{name} {rn.__version__} "), line


def test_wheel_tools_say_when_they_are_missing(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from rn import _tools

    monkeypatch.setattr(_tools, "__file__", str(tmp_path / "rn" / "_tools.py"))
    with pytest.raises(FileNotFoundError, match="rn-run is not in this installation of rn"):
        _tools.tool_path("rn-run")


def _stub_library(folder: Path, name: str, needs: str | None = None) -> Path:
    """A shared library `name`; with `needs`, one that needs a library of that
    soname which is nowhere the loader looks."""
    cc = shutil.which("cc")
    _require(cc, "no C compiler for the stub libraries")
    source = folder / "stub.c"
    source.write_text("int rn_stub(void) { return 0; }\n")
    cmd = [cc, "-shared", "-fPIC", "-o", str(folder / name), str(source)]
    if needs:
        elsewhere = folder / "elsewhere"
        elsewhere.mkdir(exist_ok=True)
        subprocess.run([cc, "-shared", "-fPIC", "-o", str(elsewhere / needs), str(source),
                        f"-Wl,-soname,{needs}"], check=True)
        cmd += ["-Wl,--no-as-needed", str(elsewhere / needs)]
    subprocess.run(cmd, check=True)
    if needs:
        shutil.rmtree(folder / "elsewhere")
    return folder / name


def _rn_run(artifact: Path, executor: str, gpu_library: Path) -> subprocess.CompletedProcess[str]:
    tool = find_tool("rn-run", "RN_RUN")
    _require(tool, "rn-run not found")
    env = dict(os.environ, RN_CUDA_LIBRARY=str(gpu_library))
    return subprocess.run([tool, str(artifact), "--synthetic", "--steps", "2", "--executor", executor],
                          capture_output=True, text=True, env=env, timeout=120)


def test_gpu_request_names_the_missing_nvidia_wheel(tmp_path: Path) -> None:
    gpu = _stub_library(tmp_path, "librn_cuda.so", needs="libcudnn.so.999")
    proc = _rn_run(INPUTS / "mlp.rnx", "cuda-graph", gpu)
    assert proc.returncode == 1
    assert ("the GPU executors need libcudnn.so.999, which comes with the pip wheel "
            "nvidia-cudnn-cu13") in proc.stderr, proc.stderr


def test_auto_trains_on_the_cpu_when_the_gpu_half_does_not_load(tmp_path: Path) -> None:
    gpu = _stub_library(tmp_path, "librn_cuda.so", needs="libcudart.so.999")
    proc = _rn_run(INPUTS / "mlp.rnx", "auto", gpu)
    assert proc.returncode == 0, proc.stderr
    assert "cpu" in proc.stdout.splitlines()[0], proc.stdout


def test_a_library_that_is_not_rns_gpu_half_is_refused(tmp_path: Path) -> None:
    gpu = _stub_library(tmp_path, "librn_cuda.so")
    proc = _rn_run(INPUTS / "mlp.rnx", "cuda-eager", gpu)
    assert proc.returncode == 1
    assert "has no rn_gpu_backend entry: not RN's GPU library" in proc.stderr
