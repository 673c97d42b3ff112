"""``rn.Trainer``: train a compiled artifact from a Python loop.

>>> import numpy as np, rn
>>> trainer = rn.Trainer("mlp.rnx", executor="cpu", seed=0)  # doctest: +SKIP
>>> images = np.zeros((trainer.batch_size, 1, 28, 28), np.float32)  # NCHW, or NHWC
>>> labels = np.zeros(trainer.batch_size, np.int64)
>>> h = trainer.step(images, labels, lr=0.1)   # queued; returns at once
>>> h.loss()                                    # waits for this step
>>> trainer.losses()                            # waits for every step

A model compiled with uint8 images (``rn.compile(..., input_dtype="uint8",
mean=..., std=...)``) takes uint8 arrays instead, which cross to the device
as bytes and are normalized there (``trainer.image_dtype == "uint8"``;
:meth:`Trainer.set_input_normalization` sets the mean and std).

The trainer is runtime/train's ``Trainer`` (the engine of ``rn-run``) over
one executor: ``cpu`` (the reference), ``cuda-eager`` or ``cuda-graph``
(``auto``: cuda-graph where a GPU answers). Steps stream: ``step()`` copies
the batch into one of the trainer's (page-locked) input blocks, queues it
and returns; every ``window`` queued steps are submitted together while the
device runs the previous ones. The newest submitted step is held until its
successor arrives (its schedule prefetches the next batch), so waiting for
the newest step's loss drains the pipeline.

Every argument is checked before anything is submitted: a wrong dtype,
shape, batch size, device or layout raises ``ValueError`` naming what was
expected and what came. A failure of the runtime (CUDA, cuDNN, a dead
data-parallel rank) raises :class:`TrainerError` with the runtime's message;
the trainer then refuses further work with that message.
"""

from __future__ import annotations

import math
import os
import weakref
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import _safetensors
from ._native_loader import NativeUnavailable, native
from ._state_dict import IncompatibleKeys

if TYPE_CHECKING:
    from .torch_state import TorchMapping

__all__ = [
    "IncompatibleKeys",
    "InputBuffer",
    "NativeUnavailable",
    "StepHandle",
    "Trainer",
    "TrainerError",
    "cosine_lr",
]

DEFAULT_ROLES: tuple[str, ...] = ("parameter", "buffer")
"""The roles ``state_dict()`` returns by default: what a model is (as PyTorch's state_dict)."""


class TrainerError(RuntimeError):
    """A failure of the runtime (the class rn._native raises is this one's subclass)."""


def _np() -> Any:
    try:
        import numpy
    except ImportError as e:  # pragma: no cover - the set-up installs numpy
        raise NativeUnavailable("rn.Trainer needs numpy (pip install numpy)") from e
    return numpy


def _native_module() -> Any:
    module = native()
    module.set_error_type(TrainerError)
    return module


def cosine_lr(step: int, *, peak: float, total_steps: int, warmup_steps: int = 0) -> float:
    """rn-run's learning rate for 0-based step ``step``: linear warmup, then cosine to 0.

    The runtime's schedule itself (``runtime/train/lr_schedule.h``,
    ``WarmupCosineLr``, through the native extension), so a Python loop gets
    rn-run's rates to the bit: warmup steps ``peak * (step + 1) / warmup_steps``,
    then ``peak * 0.5 * (1 + cos(pi * (step - warmup_steps) / (total_steps - warmup_steps)))``.
    rn-run's ``--warmup-epochs W`` is ``warmup_steps=round(W * steps_per_epoch)``.

    >>> cosine_lr(0, peak=0.1, total_steps=100)
    0.1
    >>> round(cosine_lr(50, peak=0.1, total_steps=100), 6)
    0.05
    """
    return float(_native_module().warmup_cosine_lr(peak, warmup_steps, total_steps, step))


class StepHandle:
    """A queued training step: its number and, once it finished, its loss."""

    __slots__ = ("__weakref__", "_loss", "_trainer", "step")

    def __init__(self, trainer: Trainer, step: int) -> None:
        self._trainer = trainer
        self.step = step
        """The step number (the program's ``step`` input, 1-based over the run)."""
        self._loss: float | None = None

    def done(self) -> bool:
        """Whether the loss is collected (submits queued steps and polls; never blocks)."""
        if self._loss is None:
            self._trainer._poll()
        return self._loss is not None

    def loss(self) -> float:
        """This step's loss, waiting for it (draining when it is the newest step)."""
        if self._loss is None:
            self._trainer._wait_for(self)
        assert self._loss is not None
        return self._loss

    def __repr__(self) -> str:
        state = f"loss={self._loss:.6g}" if self._loss is not None else "pending"
        return f"StepHandle(step={self.step}, {state})"


class InputBuffer:
    """One of the trainer's page-locked input blocks, to fill with a batch and pass to ``step()``.

    ``images`` is a writable numpy view of shape ``[N, H, W, C]`` (NHWC, the
    artifact's layout), float32, or uint8 for a model that normalizes on
    the device. Filling it and passing the buffer to
    ``step()`` saves the host copy of the batch. A buffer goes to one step:
    ``step()`` makes ``images`` read-only, and the block returns to the trainer
    once the step finished and the buffer and its views are gone.
    """

    __slots__ = ("_block", "images")

    def __init__(self, block: Any) -> None:
        self._block = block
        self.images = block.array

    @property
    def consumed(self) -> bool:
        """Whether the buffer was given to a step."""
        return bool(self._block.consumed)


def _describe(x: object) -> str:
    kind = type(x)
    name = f"{kind.__module__}.{kind.__qualname__}" if kind.__module__ != "builtins" else kind.__name__
    shape = getattr(x, "shape", None)
    dtype = getattr(x, "dtype", None)
    extra = ""
    if shape is not None:
        extra += f" of shape {tuple(shape)}"
    if dtype is not None:
        extra += f" and dtype {dtype}"
    return name + extra


def _is_torch_tensor(x: object) -> bool:
    kind = type(x)
    return kind.__module__.startswith("torch") and hasattr(x, "is_cuda")


def _torch_mapping_of(artifact: Path) -> TorchMapping | None:
    """The torch mapping ``rn.compile`` stored in an artifact compiled from torch, or None."""
    from .torch_state import TORCH_METADATA_KEY, TorchMapping

    text = _safetensors.read_metadata(artifact).get(TORCH_METADATA_KEY)
    return TorchMapping.from_json(text) if text is not None else None


class Trainer:
    """Trains a compiled artifact (``rn.compile``'s output, or ``rn-compile``'s) step by step.

    ``executor``: ``"auto"`` (cuda-graph where a GPU answers, else cpu),
    ``"cpu"``, ``"cuda-eager"`` or ``"cuda-graph"``. ``seed``: the run's seed
    (dropout and stochastic-depth masks; recorded in checkpoints as rn-run's
    shuffling seed).
    ``deterministic``: deterministic convolution plans and GEMMs (GPU).
    ``allow_tf32``: TF32 for f32 convolutions and products (GPU).
    ``plan_cache``: where convolution autotuning results are kept (a file;
    ``"none"``: nowhere; default: rn-run's ``~/.cache/rn/conv-plans.json``).
    ``window``: steps queued before they are submitted together.
    ``interleave``: the cpu executor's randomized stream interleaving with
    hazard checks (slow; a diagnostic).

    Under torchrun's variables (``WORLD_SIZE`` set) the trainer is one rank of a
    data-parallel run, as ``rn-run`` is: the artifact must be compiled with
    ``data-parallel=true``, ``batch_size`` is this rank's batch, and each rank
    feeds its own shard.
    """

    def __init__(
        self,
        artifact: str | os.PathLike[str],
        executor: str = "auto",
        seed: int = 0,
        *,
        deterministic: bool = False,
        allow_tf32: bool = False,
        plan_cache: str | None = None,
        window: int = 8,
        interleave: bool = False,
    ) -> None:
        _np()
        mod = _native_module()
        path = Path(artifact)
        if not path.is_file():
            raise FileNotFoundError(f"no artifact {str(path)!r} (rn.compile writes one)")
        if executor not in ("auto", "cpu", "cuda-eager", "cuda-graph"):
            raise ValueError(
                f"executor must be 'auto', 'cpu', 'cuda-eager' or 'cuda-graph', got {executor!r}"
            )
        if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**64:
            raise ValueError(f"seed must be an int in [0, 2**64), got {seed!r}")
        if not isinstance(window, int) or window < 1:
            raise ValueError(f"window must be a positive int, got {window!r}")
        self._native = mod.NativeTrainer(
            str(path),
            executor,
            seed,
            deterministic,
            allow_tf32,
            plan_cache or "",
            window,
            interleave,
        )
        self.artifact = path
        shape = tuple(self._native.image_shape)  # NHWC
        self._nhwc: tuple[int, ...] = shape
        self._pixels = str(self._native.image_dtype) == "uint8"
        self._handles: weakref.WeakValueDictionary[int, StepHandle] = weakref.WeakValueDictionary()
        self._unreported: list[float] = []
        self._state = {name: (role, dtype, tuple(s)) for name, role, dtype, s in self._native.state_info("")}
        self._mapping = _torch_mapping_of(path)

    # ------------------------------------------------------------------
    # What the artifact is
    # ------------------------------------------------------------------

    @property
    def executor(self) -> str:
        """The executor that runs the steps (``auto`` resolved)."""
        return str(self._native.executor)

    @property
    def model(self) -> str:
        """The artifact's model name."""
        return str(self._native.model)

    @property
    def batch_size(self) -> int:
        """Examples per step (this rank's); fixed by the artifact."""
        return int(self._native.batch)

    @property
    def input_shape(self) -> tuple[int, int, int]:
        """One example's image as (C, H, W), as PyTorch describes it (the artifact is NHWC)."""
        _, h, w, c = self._nhwc
        return (c, h, w)

    @property
    def image_dtype(self) -> str:
        """``"float32"``, or ``"uint8"`` for a model that normalizes its images on the device."""
        return "uint8" if self._pixels else "float32"

    @property
    def num_classes(self) -> int:
        return int(self._native.classes)

    @property
    def seed(self) -> int:
        return int(self._native.seed)

    @property
    def rank(self) -> int:
        """This data-parallel rank (0 of 1 unless launched with WORLD_SIZE)."""
        return int(self._native.rank)

    @property
    def world_size(self) -> int:
        return int(self._native.world_size)

    @property
    def step_count(self) -> int:
        """Steps queued so far over the run (the last step's number)."""
        return int(self._native.next_step) - 1

    @property
    def in_flight(self) -> int:
        """Steps queued or running whose losses are not collected yet."""
        return int(self._native.pending)

    def __repr__(self) -> str:
        return (
            f"rn.Trainer({str(self.artifact)!r}, executor={self.executor!r}, "
            f"model={self.model!r}, batch_size={self.batch_size}, "
            f"input_shape={self.input_shape}, num_classes={self.num_classes})"
        )

    # ------------------------------------------------------------------
    # Input checks (nothing is submitted when one fails)
    # ------------------------------------------------------------------

    def _batch_error(self, count: int, what: str) -> ValueError:
        return ValueError(
            f"{what}: the artifact's batch is fixed at {self.batch_size} examples per step, got "
            f"{count} (a short last batch? PyTorch's DataLoader(..., drop_last=True) drops it; "
            "evaluate() and predict() take any count)"
        )

    def _layout_of(self, shape: tuple[int, ...], layout: str | None, torch: bool) -> bool:
        """Whether 4-d images of ``shape`` are channels-first (NCHW); raises on a mismatch."""
        n, h, w, c = self._nhwc
        nchw, nhwc = (n, c, h, w), (n, h, w, c)
        if layout is not None and layout not in ("NCHW", "NHWC"):
            raise ValueError(f"layout must be 'NCHW' or 'NHWC', got {layout!r}")
        if len(shape) != 4:
            raise ValueError(
                f"images must be 4-d, [N, C, H, W] = {list(nchw)} (or NHWC {list(nhwc)}), got "
                f"shape {list(shape)}"
            )
        if torch:
            if layout == "NHWC":
                raise ValueError(
                    "a torch tensor's images are NCHW (channels_last is a memory format, "
                    "not a layout): leave layout out"
                )
            layout = "NCHW"
        if shape[0] != n and shape[1:] in (nchw[1:], nhwc[1:]):
            raise self._batch_error(shape[0], "images")
        fits_nchw, fits_nhwc = shape == nchw, shape == nhwc
        if layout == "NCHW":
            if not fits_nchw:
                raise ValueError(f"images as NCHW must have shape {list(nchw)}, got {list(shape)}")
            return True
        if layout == "NHWC":
            if not fits_nhwc:
                raise ValueError(f"images as NHWC must have shape {list(nhwc)}, got {list(shape)}")
            return False
        if fits_nchw and fits_nhwc:
            raise ValueError(
                f"images of shape {list(shape)} read as NCHW and as NHWC (C == H == W): "
                "pass layout='NCHW' or layout='NHWC'"
            )
        if not (fits_nchw or fits_nhwc):
            raise ValueError(
                f"images must have shape {list(nchw)} (NCHW) or {list(nhwc)} (NHWC), got "
                f"{list(shape)}"
            )
        return fits_nchw

    def _check_image_dtype(self, dtype: object, what: str) -> None:
        """Images of the model's kind: uint8 pixels or float32 normalized images."""
        if self._pixels:
            if str(dtype) not in ("uint8", "torch.uint8"):
                raise ValueError(
                    f"{what} must be uint8, got {dtype}: this model normalizes its images on the "
                    "device (compiled with input_dtype='uint8'); pass the raw pixels"
                )
        elif str(dtype) not in ("float32", "torch.float32"):
            hint = (
                " (this model takes normalized float32 images; compile with input_dtype='uint8' "
                "to pass uint8 pixels)"
                if str(dtype) in ("uint8", "torch.uint8")
                else " (convert with .astype(np.float32) or .float())"
            )
            raise ValueError(f"{what} must be float32, got {dtype}{hint}")

    def _check_labels(self, labels: object, count: int) -> Any:
        """Labels as a numpy array or a torch tensor, checked for kind, dtype and shape."""
        np = _np()
        if _is_torch_tensor(labels):
            t: Any = labels
            if t.is_floating_point() or t.is_complex() or str(t.dtype) == "torch.bool":
                raise ValueError(f"labels must be of an integer dtype, got {t.dtype}")
            shape = tuple(t.shape)
        elif isinstance(labels, np.ndarray):
            if labels.dtype.kind not in "iu":
                raise ValueError(f"labels must be of an integer dtype, got {labels.dtype}")
            shape = labels.shape
        else:
            raise ValueError(
                f"labels must be a numpy array or a torch tensor of integers, got {_describe(labels)}"
            )
        if shape != (count,):
            if len(shape) == 1:
                raise self._batch_error(shape[0], "labels")
            raise ValueError(f"labels must have shape [{count}], got {list(shape)}")
        return labels

    def _check_lr(self, lr: object) -> float:
        if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not math.isfinite(lr):
            raise ValueError(f"lr must be a finite number, got {lr!r}")
        return float(lr)

    def _cuda_device_error(self, device: object) -> ValueError:
        if self._native.device < 0:
            return ValueError(
                f"the trainer runs on the {self.executor} executor; the tensors are on {device} "
                "(move them with .cpu(), or use a GPU executor)"
            )
        return ValueError(
            f"the trainer runs on cuda:{self._native.device}, the tensors are on {device}"
        )

    # ------------------------------------------------------------------
    # Training steps
    # ------------------------------------------------------------------

    def step(
        self,
        images: Any,
        labels: Any,
        lr: float,
        *,
        layout: str | None = None,
    ) -> StepHandle:
        """Queue one training step and return its handle; the batch is copied before this returns.

        ``images``: float32 (uint8 for a model that normalizes on the device,
        :attr:`image_dtype`), a numpy array NCHW ``[N, C, H, W]`` or NHWC
        ``[N, H, W, C]`` (``layout=`` is required only when C == H == W), a
        torch tensor (always NCHW; ``channels_last`` memory is read without
        reordering) on the CPU or on the trainer's CUDA device, or an
        :class:`InputBuffer` from :meth:`input_buffer`. ``labels``: integer
        class indices of shape ``[N]``, numpy or torch (on the CPU or the
        images' device). ``lr``: this step's learning rate (any schedule;
        :func:`cosine_lr` is rn-run's).
        """
        rate = self._check_lr(lr)
        n = self.batch_size
        if isinstance(images, InputBuffer):
            if layout not in (None, "NHWC"):
                raise ValueError("an InputBuffer holds NHWC images: leave layout out")
            if images.consumed:
                raise ValueError(
                    "this input buffer was already given to a step; take a new one with "
                    "trainer.input_buffer()"
                )
            self._check_labels(labels, n)
            host_labels = self._host_labels(labels)
            number = self._native.step_block(images._block, host_labels, rate)
            images.images.flags.writeable = False
            return self._handle(number)
        if _is_torch_tensor(images):
            return self._step_torch(images, labels, rate, layout)
        np = _np()
        if not isinstance(images, np.ndarray):
            if hasattr(images, "__dlpack__") and hasattr(images, "__dlpack_device__"):
                device_type, _ = images.__dlpack_device__()
                if int(device_type) != 1:  # kDLCPU
                    raise ValueError(
                        f"images on a device other than the CPU must be torch tensors, got "
                        f"{_describe(images)}"
                    )
                images = np.from_dlpack(images)
            else:
                raise ValueError(
                    "images must be a numpy array, a torch tensor or an rn.InputBuffer, got "
                    f"{_describe(images)}"
                )
        self._check_image_dtype(images.dtype, "images")
        channels_first = self._layout_of(images.shape, layout, torch=False)
        self._check_labels(labels, n)
        host_labels = self._host_labels(labels)
        step_host = self._native.step_host_pixels if self._pixels else self._native.step_host
        number = step_host(images, channels_first, host_labels, rate)
        return self._handle(number)

    def _host_labels(self, labels: Any) -> Any:
        """Labels on the host, as numpy (a torch CPU tensor shares its memory)."""
        if _is_torch_tensor(labels):
            if labels.is_cuda:
                raise self._cuda_device_error(labels.device)
            return labels.detach().numpy()
        return labels

    def _step_torch(self, images: Any, labels: Any, rate: float, layout: str | None) -> StepHandle:
        import torch

        if images.dtype != (torch.uint8 if self._pixels else torch.float32):
            self._check_image_dtype(images.dtype, "images")
        self._layout_of(tuple(images.shape), layout, torch=True)
        n = self.batch_size
        self._check_labels(labels, n)
        if not images.is_cuda:
            if getattr(labels, "is_cuda", False):
                raise ValueError(
                    f"images are on the CPU and labels on {labels.device}: put both on one device"
                )
            step_host = self._native.step_host_pixels if self._pixels else self._native.step_host
            number = step_host(images.detach().numpy(), True, self._host_labels(labels), rate)
            return self._handle(number)
        if self._native.device < 0:
            raise self._cuda_device_error(images.device)
        if images.device.index != self._native.device:
            raise self._cuda_device_error(images.device)
        if not _is_torch_tensor(labels) or not labels.is_cuda:
            labels = torch.as_tensor(labels).to(images.device)
        elif labels.device != images.device:
            raise ValueError(
                f"images are on {images.device} and labels on {labels.device}: put both on one device"
            )
        # NHWC, dense, on the producer's device: free for channels_last memory.
        nhwc = images.detach().permute(0, 2, 3, 1).contiguous()
        flat_labels = labels.detach().contiguous()
        stream = self._native.copy_stream()
        # DLPack's stream protocol: the producer makes our copy stream wait
        # for the work on its current stream that made these tensors.
        number = self._native.step_cuda(
            nhwc.__dlpack__(stream=stream), flat_labels.__dlpack__(stream=stream), rate
        )
        return self._handle(number)

    def _handle(self, number: int) -> StepHandle:
        handle = StepHandle(self, int(number))
        self._handles[handle.step] = handle
        return handle

    def input_buffer(self) -> InputBuffer:
        """A page-locked block for one batch (NHWC, :attr:`image_dtype`) to fill and pass to ``step()``.

        >>> buf = trainer.input_buffer()                 # doctest: +SKIP
        >>> buf.images[...] = batch_nhwc                 # or write rows in place
        >>> trainer.step(buf, labels, lr=0.1)
        """
        return InputBuffer(self._native.input_block())

    def _collect(self) -> None:
        for number, loss in self._native.take_losses():
            value = float(loss)
            handle = self._handles.pop(number, None)
            if handle is not None:
                handle._loss = value
            self._unreported.append(value)

    def _poll(self) -> None:
        self._native.flush()
        self._collect()

    def _wait_for(self, handle: StepHandle) -> None:
        self._native.wait_for(handle.step)
        self._collect()

    def flush(self) -> None:
        """Submit the queued steps now (without waiting for them)."""
        self._poll()

    def synchronize(self) -> None:
        """Wait for every queued and running step (their losses are then collected)."""
        self._native.drain()
        self._collect()

    def losses(self) -> list[float]:
        """Wait for every step and return, oldest first, the losses no earlier call returned.

        Each step's loss comes once (``h.loss()`` does not count as returning
        it), so calling this once an epoch gives that epoch's losses; a second
        call with no step in between returns ``[]``.
        """
        self.synchronize()
        out, self._unreported = self._unreported, []
        return out

    # ------------------------------------------------------------------
    # Evaluation and prediction
    # ------------------------------------------------------------------

    def _host_images(self, images: Any, layout: str | None, what: str) -> Any:
        """Any number of images as a C-contiguous NHWC numpy array of :attr:`image_dtype`."""
        np = _np()
        torch = _is_torch_tensor(images)
        if torch:
            if images.is_cuda and self._native.device >= 0 and images.device.index != self._native.device:
                raise self._cuda_device_error(images.device)
            self._check_image_dtype(images.dtype, what)
            images = images.detach().cpu().numpy()
        elif not isinstance(images, np.ndarray):
            raise ValueError(f"{what} must be a numpy array or a torch tensor, got {_describe(images)}")
        self._check_image_dtype(images.dtype, what)
        if images.ndim != 4:
            raise ValueError(f"{what} must be 4-d [N, C, H, W] or [N, H, W, C], got shape {list(images.shape)}")
        count = images.shape[0]
        n, h, w, c = self._nhwc
        shape = (n,) + tuple(images.shape[1:])
        channels_first = self._layout_of(shape, layout, torch=torch)
        if channels_first:
            images = images.transpose(0, 2, 3, 1)
        out = np.ascontiguousarray(images, dtype=np.uint8 if self._pixels else np.float32)
        assert out.shape == (count, h, w, c)
        return out

    def evaluate(self, images: Any, labels: Any, *, layout: str | None = None) -> tuple[float, float]:
        """Mean loss and top-1 accuracy (a fraction) over any number of examples.

        The examples go in batches of ``batch_size``, in order; a short last
        batch is padded and scored from its real rows (as rn-run evaluates).
        BatchNorm uses its running statistics. Waits for queued steps first.
        """
        np = _np()
        host = self._host_images(images, layout, "images")
        count = host.shape[0]
        if count == 0:
            raise ValueError("evaluate needs at least one example")
        if _is_torch_tensor(labels):
            labels = labels.detach().cpu().numpy()
        if not isinstance(labels, np.ndarray) or labels.dtype.kind not in "iu":
            raise ValueError(f"labels must be integer class indices, got {_describe(labels)}")
        if labels.shape != (count,):
            raise ValueError(f"labels must have shape [{count}] (one per image), got {list(labels.shape)}")
        if count and (labels.min() < 0 or labels.max() >= self.num_classes):
            raise ValueError(f"labels must be in [0, {self.num_classes}), got values in [{labels.min()}, {labels.max()}]")
        evaluate = self._native.evaluate_pixels if self._pixels else self._native.evaluate
        loss, correct, evaluated = evaluate(host, np.ascontiguousarray(labels, dtype=np.int32))
        self._collect()
        return float(loss), (float(correct) / float(evaluated)) if evaluated else 0.0

    def predict(self, images: Any, *, layout: str | None = None) -> Any:
        """The logits ``[N, num_classes]`` (numpy float32) of any number of images."""
        host = self._host_images(images, layout, "images")
        if host.shape[0] == 0:
            return _np().zeros((0, self.num_classes), _np().float32)
        logits = (self._native.predict_pixels if self._pixels else self._native.predict)(host)
        self._collect()
        return logits

    # ------------------------------------------------------------------
    # Input normalization (models with uint8 images)
    # ------------------------------------------------------------------

    def set_input_normalization(self, mean: Iterable[float], std: Iterable[float]) -> None:
        """Set the per-channel mean and std a uint8 model normalizes its images with on the device.

        The device computes ``(x / 255 - mean) * (1 / std)`` per channel, in
        float32, as rn-run's data sources do on the host. The values are two
        buffers of the state (``input.mean`` and ``input.std``), so
        ``save()`` keeps them; the compiled ones are the defaults. Raises
        ``ValueError`` for a float model, for another count than the images'
        channels, or for a std that is not positive. Waits for queued steps
        first.
        """
        means, stds = [float(v) for v in mean], [float(v) for v in std]
        if not self._pixels:
            raise ValueError(
                "this model takes normalized float32 images and normalizes none on the device "
                "(compile it with input_dtype='uint8' to do so)"
            )
        channels = self._nhwc[3]
        if len(means) != channels or len(stds) != channels:
            raise ValueError(
                f"the images have {channels} channels: give {channels} means and stds, got "
                f"{len(means)} and {len(stds)}"
            )
        self._native.set_input_normalization(means, stds)
        self._collect()

    @property
    def input_normalization(self) -> tuple[list[float], list[float]]:
        """The (mean, std) a uint8 model normalizes with now (``ValueError`` for a float model)."""
        if not self._pixels:
            raise ValueError("this model takes normalized float32 images: it has no input normalization")
        mean, std = self._native.input_normalization()
        self._collect()
        return [float(v) for v in mean], [float(v) for v in std]

    # ------------------------------------------------------------------
    # State and checkpoints
    # ------------------------------------------------------------------

    def _roles(self, roles: str | Iterable[str] | None) -> list[str] | None:
        """The roles asked for; None for every role. Roles named explicitly must exist."""
        if roles == "all":
            return None
        if roles is None:
            return list(DEFAULT_ROLES)
        wanted = [roles] if isinstance(roles, str) else list(roles)
        known = {role for role, _, _ in self._state.values()}
        for role in wanted:
            if role not in known:
                raise ValueError(
                    f"the artifact has no state of role {role!r}; its roles: "
                    f"{', '.join(sorted(known))} (or 'all')"
                )
        return wanted

    @staticmethod
    def _numpy_dtype(dtype: str) -> str:
        # numpy has no bfloat16: those entries come as float32 (exact).
        return {"float16": "float16", "int32": "int32"}.get(dtype, "float32")

    def _require_torch_mapping(self, what: str) -> TorchMapping:
        """The artifact's torch mapping; ``ValueError`` for an artifact not compiled from torch."""
        if self._mapping is None:
            raise ValueError(
                f"{what}: {self.artifact} was not compiled from a torch module (its metadata "
                "has no torch mapping): compile it with rn.compile(torch_module, ...)"
            )
        return self._mapping

    def _layout(self, layout: str | None, what: str) -> str:
        """``"torch"`` or ``"rn"``: ``layout`` checked, or the default (torch if imported)."""
        if layout is None:
            return "torch" if self._mapping is not None else "rn"
        if layout not in ("torch", "rn"):
            raise ValueError(f"{what}: layout must be 'torch' or 'rn', got {layout!r}")
        if layout == "torch" and self._mapping is None:
            raise ValueError(
                f"{what}: layout='torch' needs a model imported from PyTorch, and {self.artifact} "
                "was not compiled from a torch module: its state has RN's layout only (layout='rn')"
            )
        return layout

    def state_dict(
        self, roles: str | Iterable[str] | None = None, *, layout: str | None = None
    ) -> dict[str, Any]:
        """``{name: numpy array}`` of the state, in program order.

        By default (``roles=None``) parameters and buffers (BatchNorm running
        statistics), what a model is; ``roles="all"`` everything the step keeps (gradients,
        momenta, Adam moments, low-precision copies, EMA, the loss scale, ...),
        or name roles. Waits for queued steps first.

        ``layout``: ``"torch"`` (the default for a model imported from PyTorch,
        ``rn.compile(torch_module, ...)``) gives what the module's
        ``load_state_dict`` takes, as numpy arrays (``torch.from_numpy`` each):
        the module's names and order, PyTorch's layouts (convolution filters
        OIHW), float32 parameters and buffers, and each BatchNorm's
        ``num_batches_tracked`` as the steps taken (0-d int64); the module's
        entries its forward pass does not read are not in it. It holds roles
        ``parameter`` and ``buffer`` only. ``"rn"`` (the default, and the only
        layout, for other models) gives the state as the artifact holds it:
        RN's names and layouts (filters OHWI, NHWC), f32 entries as float32,
        f16 as float16, i32 as int32, bf16 as float32 (numpy has no bfloat16;
        the values are exact).
        """
        if self._layout(layout, "state_dict") == "torch":
            return self._torch_state_dict(roles)
        wanted = self._roles(roles)
        out: dict[str, Any] = {}
        for name, values in self._native.state_dict(""):
            role, dtype, _ = self._state[name]
            if wanted is None or role in wanted:
                out[name] = values.astype(self._numpy_dtype(dtype), copy=False)
        self._collect()
        return out

    def _torch_state_dict(self, roles: str | Iterable[str] | None) -> dict[str, Any]:
        mapping = self._require_torch_mapping("state_dict")
        if roles is None:
            wanted = list(DEFAULT_ROLES)
        else:
            wanted = [roles] if isinstance(roles, str) else list(roles)
        if any(role not in DEFAULT_ROLES for role in wanted):
            raise ValueError(
                f"state_dict(roles={roles!r}): PyTorch's layout holds the module's parameters and "
                "buffers only (roles 'parameter' and 'buffer'); pass layout='rn' for the rest of "
                "the state"
            )
        state = self.state_dict(layout="rn")
        torch_state = mapping.to_torch(state, self.step_count)
        roles_of = {e.name: e.role for e in mapping.entries}
        return {k: v for k, v in torch_state.items() if roles_of.get(k, "buffer") in wanted}

    def load_state_dict(
        self, state_dict: Mapping[str, Any], strict: bool = True, *, layout: str | None = None
    ) -> IncompatibleKeys:
        """Write the entries of ``state_dict`` (numpy arrays or torch tensors) into the state.

        ``layout`` is the dict's, as for :meth:`state_dict`: ``"torch"`` (the
        default for a model imported from PyTorch) takes what that module's
        ``state_dict()`` or ``state_dict(layout="torch")`` gives, converted by
        the artifact's mapping (``num_batches_tracked`` and the module's
        entries its forward does not read are accepted and ignored; float32
        values of PyTorch's shapes); ``"rn"`` takes RN's names and layouts,
        each name a state entry with its shape and the dtype ``state_dict()``
        gives it. A dict in RN's layout must be loaded with ``layout="rn"``.

        As PyTorch's ``load_state_dict``: with ``strict`` (the default) every
        parameter and buffer must be present and every name known; without it
        the missing and unexpected names are returned, and the rest is
        written. Everything is checked before anything is written: one
        ``ValueError`` lists every shape and dtype mismatch, and with
        ``strict`` every missing and unexpected name. State derived from a
        parameter (its low-precision copy, its EMA) follows the parameter's
        new values unless the dict gives it too. Returns the missing and
        unexpected names (empty with ``strict``).
        """
        if self._layout(layout, "load_state_dict") == "torch":
            mapping = self._require_torch_mapping("load_state_dict")
            values, keys = mapping.from_torch(state_dict, strict=strict, action="load_state_dict")
            self._load_rn(values, strict=False)
            return keys
        return self._load_rn(state_dict, strict)

    def _load_rn(self, state_dict: Mapping[str, Any], strict: bool) -> IncompatibleKeys:
        """:meth:`load_state_dict` of a dict in RN's layout."""
        np = _np()
        unexpected = [k for k in state_dict if k not in self._state]
        missing = [
            k for k, (role, _, _) in self._state.items() if role in DEFAULT_ROLES and k not in state_dict
        ]
        problems = []
        if strict and unexpected:
            problems.append(f"unknown names: {', '.join(unexpected)}")
        if strict and missing:
            problems.append(f"missing parameters or buffers: {', '.join(missing)}")
        entries = []
        for name, value in state_dict.items():
            if name not in self._state:
                continue
            _, dtype, shape = self._state[name]
            if _is_torch_tensor(value):
                value = value.detach().cpu().numpy()
            if not isinstance(value, np.ndarray):
                problems.append(f"state {name}: expected a numpy array or a torch tensor, "
                                f"got {_describe(value)}")
                continue
            want = self._numpy_dtype(dtype)
            if value.dtype != np.dtype(want):
                problems.append(f"state {name}: dtype {value.dtype}, expected {want}")
            elif tuple(value.shape) != shape:
                problems.append(f"state {name}: shape {list(value.shape)}, expected {list(shape)}")
            else:
                entries.append((name, np.ascontiguousarray(value, dtype=np.float32)))
        if problems:
            hint = (
                " (nothing was written; strict=False loads the entries that match and returns "
                "the missing and unexpected names)"
                if strict and (unexpected or missing)
                else " (nothing was written)"
            )
            raise ValueError("load_state_dict: " + "; ".join(problems) + hint)
        self._native.load_state_dict(entries)
        self._collect()
        return IncompatibleKeys(missing, unexpected)

    def copy_from(self, module: Any, *, strict: bool = True) -> IncompatibleKeys:
        """Load a ``torch.nn.Module``'s parameters and BatchNorm statistics into the state.

        The artifact must have been compiled from that module or one of the same
        architecture (``rn.compile(module, ...)``, weight-free or not): its stored
        mapping converts names and layouts. ``module.load_state_dict``
        semantics, as :meth:`load_state_dict` of ``module.state_dict()``: with
        ``strict`` (the default) every mapped entry must be in the module and
        every entry of the module known (its ``num_batches_tracked`` are
        ignored); every entry must be float32 of its shape. One ``ValueError``
        lists everything that does not match, and nothing is written. With
        ``strict=False`` the matching entries are loaded and the missing and
        unexpected names returned (``rn.IncompatibleKeys``).
        """
        mapping = self._require_torch_mapping("copy_from")
        values, keys = mapping.from_torch(
            module.state_dict(), strict=strict, action="copy_from",
            source=f"the module ({type(module).__name__})",
        )
        # A uint8 model's input normalization is not the module's (the host's
        # data pipeline did it): the trainer's stays as it is.
        self._load_rn(values, strict=False)
        return keys

    def copy_to(self, module: Any, *, ema: bool = False, strict: bool = True) -> IncompatibleKeys:
        """Write the trained parameters and BatchNorm statistics into a ``torch.nn.Module``.

        ``module.load_state_dict`` semantics: with ``strict`` (the default) the
        module must have every entry the trainer writes, and every entry of
        the module gets a value (its ``num_batches_tracked`` the steps taken;
        entries its forward pass does not read keep theirs), of the module's
        shape and a floating-point dtype (converted to the module's, as
        PyTorch does). One ``ValueError`` lists everything that does not
        match, and nothing is written. With ``strict=False`` the matching
        entries are written and the missing and unexpected names returned
        (``rn.IncompatibleKeys``). ``ema=True`` writes the EMA weights in
        place of the parameters (compiled with ``ema-decay``). Waits for
        queued steps first.
        """
        from .torch_state import artifact_program_state, ema_names, load_into_module

        mapping = self._require_torch_mapping("copy_to")
        state = self.state_dict(layout="rn")
        if ema:
            swaps = ema_names(artifact_program_state(self.artifact))
            if not swaps:
                raise ValueError(
                    f"{self.artifact}: no EMA weights (compile with the pipeline option ema-decay)"
                )
            averaged = self.state_dict(roles="ema", layout="rn")
            for param, name in swaps.items():
                state[param] = averaged[name]
        return load_into_module(
            module, mapping.to_torch(state, self.step_count), untouched=mapping.untouched,
            strict=strict,
        )

    def save(
        self,
        path: str | os.PathLike[str],
        *,
        steps_per_epoch: int | None = None,
        lr: float | None = None,
        epochs: int | None = None,
    ) -> None:
        """Write every state entry to ``path`` atomically, in rn-run's checkpoint format.

        The metadata holds the model, the steps done (``step``), the batch and
        the seed. With ``steps_per_epoch`` it also holds the epochs completed,
        so that a checkpoint saved at the end of an epoch is one ``rn-run
        --resume`` continues from (with the same data, ``--limit-train`` and
        seed); one saved mid-epoch carries its step and rn-run refuses it
        (``load()`` continues from it). ``lr`` and ``epochs`` are recorded as
        rn-run records them (informational).
        """
        step = self.step_count
        meta = {
            "rn.checkpoint": "1",
            "model": self.model,
            "step": str(step),
            "batch": str(self.batch_size),
            "seed": str(self.seed),
        }
        if steps_per_epoch is not None:
            if not isinstance(steps_per_epoch, int) or steps_per_epoch < 1:
                raise ValueError(f"steps_per_epoch must be a positive int, got {steps_per_epoch!r}")
            meta["steps_per_epoch"] = str(steps_per_epoch)
            meta["epoch"] = str(step // steps_per_epoch)
        if lr is not None:
            meta["lr"] = f"{float(lr):f}"
        if epochs is not None:
            meta["epochs"] = str(int(epochs))
        self._native.save(os.fspath(path), meta)
        self._collect()

    def load(self, path: str | os.PathLike[str]) -> dict[str, str]:
        """Restore every state entry from a checkpoint (``save()``'s or ``rn-run --checkpoint``'s).

        The next step continues the saved run's numbering (``step`` + 1), so
        dropout and stochastic-depth masks and step-keyed optimizers continue
        as an uninterrupted run. Returns the checkpoint's metadata (``epoch``,
        ``step``, ``steps_per_epoch``, ``batch``, ``seed``, ... as strings).
        """
        p = os.fspath(path)
        if not Path(p).is_file():
            raise FileNotFoundError(f"no checkpoint {p!r}")
        meta = dict(self._native.load(p))
        self._collect()
        step = meta.get("step", "")
        if step.isdigit():
            self._native.set_next_step(int(step) + 1)
        return meta
