"""``rn.compile``: a model to a training artifact, with the compiler in-process.

>>> import rn
>>> from rn import nn
>>> model = nn.Sequential(nn.Flatten(), nn.Linear(784, 10))
>>> artifact = rn.compile(model, "m.rnx", batch=64, input_shape=(1, 28, 28),
...                       num_classes=10, pipeline="optimizer=sgd nesterov=true")
... # doctest: +SKIP

The pipeline string is rn-compile's ``--pipeline`` (``rn-compile
--pipeline-help`` lists every option); the artifact is what ``rn-run`` and
:class:`rn.Trainer` load. The compiler is the extension ``rn._compiler``
(librn_compiler.so, with LLVM and MLIR linked in): it runs in this process,
wherever RN's wheel is installed, with nothing else to set up.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from ._native_loader import compiler_module
from .nn import Module
from .tracer import emit_model
from .training import find_tool

__all__ = ["CompileError", "compile", "find_rn_compile"]


class CompileError(RuntimeError):
    """The compiler rejected the model or the pipeline; the message holds its diagnostics
    (``file:line:col: error: ...`` with the source line)."""


def find_rn_compile() -> str | None:
    """Locate the rn-compile executable: env ``RN_COMPILE``, else the wheel's
    ``rn/bin/rn-compile``, else ``<repo>/build/bin/rn-compile``, else ``PATH``."""
    return find_tool("rn-compile", "RN_COMPILE")


def _looks_like_mlir(text: str) -> bool:
    head = text.lstrip()
    return head.startswith(("module", "func.func", "rn.", '"builtin.module"', "//"))


def compile(  # noqa: A001 - the API's name, as torch.compile
    model: Module | str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    batch: int | None = None,
    input_shape: tuple[int, int, int] | None = None,
    num_classes: int | None = None,
    pipeline: str = "",
    weights: bool = True,
    seed: int | None = None,
    name: str = "model",
    rn_compile: str | None = None,
    input_dtype: str = "float",
    mean: Sequence[float] | None = None,
    std: Sequence[float] | None = None,
) -> Path:
    """Compile ``model`` into the training artifact ``output`` and return its path.

    ``model`` is an :class:`rn.nn.Module` (then ``batch``, ``input_shape`` as
    (C, H, W) and ``num_classes`` are required, as for :func:`rn.emit_model`),
    a ``torch.nn.Module`` (imported by :func:`rn.from_torch`: ``batch`` and
    ``input_shape`` are required, ``num_classes`` is checked against its
    output; its current weights are the artifact's initial state, and the
    name-and-layout mapping is stored for ``Trainer.copy_from``/``copy_to``),
    MLIR text of a model, or the path of a ``.mlir`` file (then those three
    must be left out: the model fixes them). ``pipeline`` is rn-compile's
    ``--pipeline`` string, e.g. ``"precision=f16 loss-scaling=dynamic
    optimizer=sgd nesterov=true"``. ``weights=False`` writes the program alone
    (``--no-weights``): the runtime samples the parameters from their
    initializers at load, to the same bits. ``seed`` seeds that initialization.
    ``input_dtype="uint8"`` (a module only) makes the images input raw uint8
    pixels, normalized on the device with ``mean`` and ``std`` (one per
    channel; the defaults of the buffers ``input.mean`` and ``input.std``,
    which rn-run sets from its data and ``Trainer.set_input_normalization``
    from the caller's): a quarter of the bytes of float32 images per step.

    The compiler runs in this process (``rn._compiler``); ``rn_compile``
    names an rn-compile executable to run instead (another build, say).

    Raises ``ValueError`` for arguments that do not fit the model's kind,
    ``FileNotFoundError`` when the ``.mlir`` file (or the ``rn_compile``
    executable) is missing, :class:`rn.NativeUnavailable` when the compiler
    extension is not there, and :class:`CompileError` with the compiler's
    diagnostics when it fails.
    """
    from .torch_import import ImportedModel, attach_to_artifact, from_torch, is_torch_module

    shape_args = {"batch": batch, "input_shape": input_shape, "num_classes": num_classes}
    imported: ImportedModel | None = None
    if is_torch_module(model):
        if input_shape is None or batch is None:
            raise ValueError("compiling a torch.nn.Module needs batch and input_shape=(C, H, W)")
        imported = from_torch(model, input_shape)
        if num_classes is not None and num_classes != imported.num_classes:
            raise ValueError(
                f"num_classes={num_classes}, but the module's output has {imported.num_classes} "
                "classes"
            )
        model = imported
        shape_args["num_classes"] = num_classes = imported.num_classes
    elif isinstance(model, ImportedModel):
        imported = model
    if isinstance(model, Module):
        missing = [k for k, v in shape_args.items() if v is None]
        if missing:
            raise ValueError(
                f"compiling an rn.nn.Module needs {', '.join(missing)} "
                "(batch, input_shape=(C, H, W), num_classes)"
            )
        assert batch is not None and input_shape is not None and num_classes is not None
        text = emit_model(
            model,
            batch=batch,
            input_shape=input_shape,
            num_classes=num_classes,
            name=name,
            input_dtype=input_dtype,
            mean=mean,
            std=std,
        )
        path = None
    elif isinstance(model, str) and _looks_like_mlir(model):
        text = model
        path = None
    elif isinstance(model, (str, os.PathLike)):
        path = Path(model)
        if not path.is_file():
            raise FileNotFoundError(
                f"no model file {str(path)!r} (give a .mlir path, MLIR text or an rn.nn.Module)"
            )
        text = None
    else:
        raise ValueError(
            "model must be an rn.nn.Module, a torch.nn.Module, MLIR text or a .mlir path, got "
            f"{type(model).__name__}"
        )
    if not isinstance(model, Module):
        given = [k for k, v in shape_args.items() if v is not None]
        if input_dtype != "float" or mean is not None or std is not None:
            given += ["input_dtype, mean, std"]
        if given:
            raise ValueError(
                f"{', '.join(given)} apply to an rn.nn.Module only; MLIR text fixes them"
            )
    out = Path(output)
    if rn_compile is not None:
        _compile_with_tool(rn_compile, text, path, out, name, pipeline, weights, seed)
    else:
        compiler = compiler_module()
        args = (str(out), pipeline, seed or 0, weights, "")
        if path is not None:
            # A file given is compiled where it is, so diagnostics name it.
            ok, diagnostics, error = compiler.compile_file(str(path), *args)
        else:
            assert text is not None
            ok, diagnostics, error = compiler.compile_source(text, f"{name}.mlir", *args)
        if not ok:
            lines = [diagnostics.strip(), f"error: {error}" if error else ""]
            raise CompileError(f"compiling to {out} failed:\n" + "\n".join(filter(None, lines)))
    if imported is not None:
        # The module's weights become the artifact's initial state; the mapping
        # lets copy_from/copy_to move them later, weight-free artifacts included.
        attach_to_artifact(out, imported, imported.torch_state if weights else None)
    return out


def _compile_with_tool(
    tool: str,
    text: str | None,
    path: Path | None,
    out: Path,
    name: str,
    pipeline: str,
    weights: bool,
    seed: int | None,
) -> None:
    """Runs the rn-compile executable ``tool`` (MLIR text is piped through a file)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="rn-compile-") as tmp:
        source = path if path is not None else Path(tmp) / f"{name}.mlir"
        if text is not None:
            source.write_text(text)
        argv = [tool, str(source), "-o", str(out), "--quiet"]
        if pipeline:
            argv += ["--pipeline", pipeline]
        if not weights:
            argv.append("--no-weights")
        if seed is not None:
            argv += ["--seed", str(seed)]
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, check=False)
        except FileNotFoundError as e:
            raise FileNotFoundError(f"rn-compile not found at {tool!r}") from e
    if proc.returncode != 0:
        raise CompileError(
            f"rn-compile failed (exit {proc.returncode}) compiling to {out}:\n"
            f"{(proc.stderr or proc.stdout).strip()}"
        )
