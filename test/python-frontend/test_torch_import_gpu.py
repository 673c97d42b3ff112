"""Imported torchvision models on the GPU machine: RN's GPU executors against PyTorch on CUDA.

The artifacts are compiled on the development machine, weight-free, from
torchvision's modules at their 224x224 input (``python3
test/python-frontend/test_torch_import_gpu.py --compile DIR``, which
scripts/bundle-gpu.sh runs with Debian's PyTorch); here, with PyTorch 2.11 and
its torchvision, the same architectures are built from a seed, their weights
copied in with ``Trainer.copy_from``, and

* the evaluation logits (cuda-graph) equal PyTorch's ``model.eval()`` forward
  on the GPU in f32 (TF32 off) within 4x what perturbing PyTorch's parameters
  by a relative 1e-6 moves them; in f16 within 4x the difference between
  PyTorch's autocast-f16 forward and its f32 forward (f16's own noise; for
  the step, the larger of two such draws, the second from perturbed
  parameters);
* one SGD step with momentum gives PyTorch's loss, parameters and running
  statistics, with the same bounds.

Skipped without a GPU (CI) or without the artifacts.
"""

from __future__ import annotations

import copy
import os
import sys
from pathlib import Path
from typing import Any

import pytest

BATCH = 8
SHAPE = (3, 224, 224)
LR = 0.01
MODELS = ["resnet18", "resnet50", "vgg11_bn"]
# Need ops not every build has (squeeze-and-excitation, stochastic depth, and
# DenseNet's concatenations and ShuffleNet's splits and shuffles).
OPTIONAL_MODELS = ["mobilenet_v2", "efficientnet_b0", "densenet121", "shufflenet_v2_x1_0"]
PIPELINES = {
    "f32": "optimizer=sgd momentum=0.9",
    "f16": "optimizer=sgd momentum=0.9 precision=f16",
}


def artifact_name(model: str, precision: str) -> str:
    return f"torch_{model}.{precision}.rnx"


def build(model: str) -> Any:
    """The torchvision model from seed 0, with non-trivial BN statistics (as the CPU test)."""
    import torch
    import torchvision

    torch.manual_seed(0)
    m = getattr(torchvision.models, model)()
    for mod in m.modules():  # dropout and stochastic depth off for the comparison
        if isinstance(mod, torch.nn.Dropout) or type(mod).__name__ == "StochasticDepth":
            mod.p = 0.0
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, torch.nn.BatchNorm2d):
                c = mod.num_features
                mod.running_mean.copy_(0.1 * torch.randn(c, generator=g))
                mod.running_var.copy_(1 + 0.3 * torch.rand(c, generator=g))
    return m


def compile_artifacts(folder: Path) -> None:
    """Write the weight-free artifacts the GPU tests load (development machine)."""
    import rn

    folder.mkdir(parents=True, exist_ok=True)
    for model in MODELS + OPTIONAL_MODELS:
        for precision, pipeline in PIPELINES.items():
            try:
                module = build(model)
                out = rn.compile(module, folder / artifact_name(model, precision), batch=BATCH,
                                 input_shape=SHAPE, pipeline=pipeline, weights=False,
                                 name=f"torch_{model}")
            except rn.UnsupportedModelError as e:
                print(f"{model}: not imported: {e}", file=sys.stderr)
                break
            print(f"wrote {out}")


# --------------------------------------------------------------------------- #
# The tests (GPU machine)
# --------------------------------------------------------------------------- #

if __name__ != "__main__":
    import rn

    np = pytest.importorskip("numpy")
    torch = pytest.importorskip("torch")
    pytest.importorskip("torchvision")

    BUNDLE = Path(os.environ.get("RN_BUNDLE", Path(__file__).resolve().parents[2] / "gpu-bundle"))

    def _gpu() -> str | None:
        try:
            native = rn.trainer._native_module()
        except rn.NativeUnavailable as e:
            return str(e)
        if not native.built_with_cuda():
            return "rn._native was built without CUDA"
        if not torch.cuda.is_available():
            return "torch sees no CUDA device"
        return native.gpu_available()

    why_not = _gpu()
    pytestmark = pytest.mark.skipif(why_not is not None, reason=f"no GPU: {why_not}")


def _artifact(model: str, precision: str) -> Path:
    path = BUNDLE / "models" / artifact_name(model, precision)
    if not path.is_file():
        pytest.skip(f"{path} is not in the bundle (scripts/bundle-gpu.sh)")
    return path


def _batch() -> tuple[Any, Any]:
    g = torch.Generator().manual_seed(3)
    return torch.randn(BATCH, *SHAPE, generator=g), torch.randint(0, 1000, (BATCH,), generator=g)


def _perturbed(m: Any, seed: int = 11) -> Any:
    p = copy.deepcopy(m)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for t in p.parameters():
            sign = torch.randint(0, 2, t.shape, generator=g).to(t.device).float() * 2 - 1
            t.mul_(1 + 1e-6 * sign)
    return p


def _f32() -> None:
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def _torch_forward(m: Any, x: Any, autocast: bool) -> Any:
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.float16, enabled=autocast):
        return m(x.cuda()).float().cpu().numpy()


def _torch_step(m: Any, x: Any, y: Any, autocast: bool) -> tuple[float, dict[str, Any]]:
    m.train()
    opt = torch.optim.SGD(m.parameters(), lr=LR, momentum=0.9)
    with torch.autocast("cuda", dtype=torch.float16, enabled=autocast):
        loss = torch.nn.functional.cross_entropy(m(x.cuda()), y.cuda())
    opt.zero_grad()
    loss.backward()
    opt.step()
    return float(loss), {k: v.detach().float().cpu().numpy() for k, v in m.state_dict().items()}


def _noise(ref: Any, other: Any) -> float:
    return 4 * float(np.max(np.abs(ref - other))) + 4 * float(np.finfo(np.float32).eps) * float(
        np.max(np.abs(ref))
    )


def _trainer(model: str, precision: str) -> tuple[Any, Any]:
    module = build(model)
    trainer = rn.Trainer(_artifact(model, precision), executor="cuda-graph", deterministic=True)
    trainer.copy_from(module)
    return trainer, module


@pytest.mark.parametrize("precision", list(PIPELINES))
@pytest.mark.parametrize("model", MODELS + OPTIONAL_MODELS)
def test_logits_equal_pytorch_on_the_gpu(model: str, precision: str) -> None:
    """Tests RN's evaluation logits against PyTorch's eval forward on the same GPU."""
    _f32()
    trainer, module = _trainer(model, precision)
    x, _ = _batch()
    ours = trainer.predict(x.numpy())
    m = module.cuda().eval()
    ref = _torch_forward(m, x, autocast=False)
    if precision == "f32":
        bound = _noise(ref, _torch_forward(_perturbed(m), x, autocast=False))
    else:
        bound = _noise(ref, _torch_forward(m, x, autocast=True))
    err = float(np.max(np.abs(ours - ref)))
    print(f"{model} {precision} logits: max |RN - torch| {err:.3g}, bound {bound:.3g}")
    assert err <= bound


@pytest.mark.parametrize("precision", list(PIPELINES))
@pytest.mark.parametrize("model", MODELS + OPTIONAL_MODELS)
def test_one_training_step_equals_pytorch_on_the_gpu(model: str, precision: str) -> None:
    """Tests one SGD step: loss, parameters and running statistics against PyTorch's on the GPU."""
    _f32()
    trainer, module = _trainer(model, precision)
    x, y = _batch()
    loss = trainer.step(x.numpy(), y.numpy(), lr=LR).loss()
    stepped = copy.deepcopy(module)
    trainer.copy_to(stepped)
    ref_loss, ref = _torch_step(copy.deepcopy(module).cuda(), x, y, autocast=False)
    if precision == "f32":
        others = [_torch_step(_perturbed(module.cuda()), x, y, autocast=False)]
    else:
        # f16's noise, four draws: PyTorch's autocast step, and the same from
        # parameters a rounding apart (three sign patterns). Fewer draws were
        # too tight: a conv bias before BN has a zero gradient, so its step
        # is rounding only, and RN's f16 kernels round differently from
        # PyTorch's (issue 43: vgg11_bn features.0.bias, mobilenet_v2
        # features.0.1.weight and efficientnet_b0's loss were 1.3-2.6x one
        # draw at 12e2c97; mobilenet_v2's stem BN weight 1.13x two draws at
        # 7cc5b34; scripts/f16-step-noise.py shows RN's f16 step within 4x
        # PyTorch's own f16 spread).
        others = [_torch_step(copy.deepcopy(module).cuda(), x, y, autocast=True)] + [
            _torch_step(_perturbed(module.cuda(), seed), x, y, autocast=True)
            for seed in (11, 12, 13)
        ]
    worst = ("", 0.0)
    loss_bound = max(_noise(np.array([ref_loss]), np.array([o[0]])) for o in others)
    assert abs(loss - ref_loss) <= loss_bound, (loss, ref_loss, loss_bound)
    ours = stepped.state_dict()
    for k, v in ref.items():
        if k.endswith("num_batches_tracked"):
            continue
        err = float(np.max(np.abs(ours[k].float().numpy() - v)))
        bound = max(_noise(v, o[1][k]) for o in others)
        if err / max(bound, 1e-30) > worst[1]:
            worst = (k, err / max(bound, 1e-30))
        assert err <= bound, f"{model} {precision} {k}: max |RN - torch| {err:.3g}, bound {bound:.3g}"
    print(f"{model} {precision} step: loss {loss:.6f} vs {ref_loss:.6f}; worst {worst[0]} at "
          f"{worst[1]:.2f} of its bound")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "--compile":
        sys.exit(f"usage: {sys.argv[0]} --compile DIR")
    compile_artifacts(Path(sys.argv[2]))
