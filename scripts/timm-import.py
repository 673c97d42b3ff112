"""Which timm models RN imports, and which of those give PyTorch's logits (docs/python.md's table).

Three steps, all where RN's wheel and timm are installed (the GPU machine):

    # import every resnet*, mobilenet*, efficientnet* model with rn.from_torch
    # at 224x224; write the outcome and, for each model that imports, its MLIR
    # (batch 4) and its state mapping
    python scripts/timm-import.py survey OUT/timm
    # compile those (rn.compile, in-process) into weight-free artifacts carrying the mapping
    python scripts/timm-import.py compile OUT/timm OUT/timm-rnx
    # build each model from seed 0, copy its weights in, and compare RN's
    # evaluation logits (cuda-graph, f32) with PyTorch's eval forward (TF32 off),
    # smallest artifacts first, starting no model after --budget-s seconds
    python scripts/timm-import.py check OUT/timm-rnx OUT/timm-check.jsonl [--budget-s S]

`check --executor cpu` runs the same comparison with RN's CPU executor and
PyTorch on the CPU (where timm is installed beside the compiler).

A model is listed as working only if its logits are within 4x what
perturbing PyTorch's parameters by a relative 1e-6 moves them.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path

FAMILIES = ("resnet*", "mobilenet*", "efficientnet*")
BATCH = 4
SHAPE = (3, 224, 224)


def _build(name: str):  # type: ignore[no-untyped-def]
    import timm
    import torch

    torch.manual_seed(0)
    model = timm.create_model(name, pretrained=False)
    for mod in model.modules():  # dropout and drop-path off: the comparison is deterministic
        if hasattr(mod, "drop_prob"):
            mod.drop_prob = 0.0
        if isinstance(mod, torch.nn.Dropout):
            mod.p = 0.0
    return model.eval()


def _survey_one(name: str, out: Path) -> dict[str, object]:
    import rn

    start = time.perf_counter()
    row: dict[str, object] = {"model": name}
    try:
        imported = rn.from_torch(_build(name), SHAPE)
        text = rn.emit_model(imported, batch=BATCH, input_shape=SHAPE,
                             num_classes=imported.num_classes, name=name)
        (out / f"{name}.mlir").write_text(text)
        (out / f"{name}.mapping.json").write_text(imported.mapping.to_json())
        row["imports"] = True
    except rn.UnsupportedModelError as e:
        row["imports"], row["why"] = False, str(e)[:300]
    except Exception as e:  # a model timm cannot build here, or a bug to see
        row["imports"], row["why"] = False, f"{type(e).__name__}: {str(e)[:300]}"
    row["seconds"] = round(time.perf_counter() - start, 2)
    return row


def _compile_one(mlir: Path, out: Path) -> str:
    import rn
    from rn import _safetensors
    from rn.torch_import import TORCH_METADATA_KEY

    artifact = out / f"{mlir.stem}.rnx"
    try:
        rn.compile(mlir, artifact, weights=False)
    except rn.CompileError as e:
        return f"{mlir.stem}: compile failed: {str(e)[:300]}"
    file = _safetensors.read(artifact)
    file.metadata[TORCH_METADATA_KEY] = (mlir.parent / f"{mlir.stem}.mapping.json").read_text()
    _safetensors.write(artifact, file)
    return f"wrote {artifact}"


def _map(function, items, jobs: int):  # type: ignore[no-untyped-def]
    """function over items, in `jobs` processes (results as they finish)."""
    if jobs <= 1:
        for item in items:
            yield function(*item)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        for future in as_completed([pool.submit(function, *item) for item in items]):
            yield future.result()


def survey(out: Path, jobs: int) -> None:
    import timm

    out.mkdir(parents=True, exist_ok=True)
    names = sorted({n for f in FAMILIES for n in timm.list_models(f)})
    results = []
    for row in _map(_survey_one, [(name, out) for name in names], jobs):
        print(json.dumps(row), flush=True)
        results.append(row)
    results.sort(key=lambda r: str(r["model"]))
    (out / "survey.json").write_text(json.dumps(results, indent=1))


def compile_all(source: Path, out: Path, jobs: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for line in _map(_compile_one, [(m, out) for m in sorted(source.glob("*.mlir"))], jobs):
        print(line, flush=True, file=sys.stderr if "failed" in line else sys.stdout)


def check(folder: Path, out: Path, executor: str, budget_s: float,
          skip: tuple[Path, ...] = ()) -> None:
    import numpy as np
    import torch

    import rn

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = "cpu" if executor == "cpu" else "cuda"
    g = torch.Generator().manual_seed(3)
    x = torch.randn(BATCH, *SHAPE, generator=g)
    start = time.perf_counter()
    with open(out, "w") as log:
        done = {json.loads(line)["model"] for path in skip for line in path.read_text().splitlines()
                if line.strip() and json.loads(line).get("equal") is True}
        for artifact in sorted(folder.glob("*.rnx"), key=lambda p: (p.stat().st_size, p.name)):
            name = artifact.stem
            if name in done:
                continue
            row: dict[str, object] = {"model": name, "executor": executor}
            if time.perf_counter() - start > budget_s:
                row.update(equal=None, why=f"not checked: the {budget_s:.0f} s budget was spent")
                print(json.dumps(row), flush=True)
                log.write(json.dumps(row) + "\n")
                continue
            try:
                model = _build(name)
                trainer = rn.Trainer(artifact, executor=executor)
                trainer.copy_from(model)
                ours = trainer.predict(x.numpy())
                m = model.to(device)
                perturbed = copy.deepcopy(m)
                sign = torch.Generator().manual_seed(11)
                with torch.no_grad():
                    for t in perturbed.parameters():
                        s = torch.randint(0, 2, t.shape, generator=sign).to(t.device).float() * 2 - 1
                        t.mul_(1 + 1e-6 * s)
                    ref = m(x.to(device)).cpu().numpy()
                    moved = perturbed(x.to(device)).cpu().numpy()
                err = float(np.max(np.abs(ours - ref)))
                bound = 4 * float(np.max(np.abs(ref - moved))) + 4 * 1.2e-7 * float(np.max(np.abs(ref)))
                row.update(error=err, bound=bound, equal=err <= bound,
                           seconds=round(time.perf_counter() - start, 1))
                del trainer
            except Exception as e:
                row.update(equal=False, why=f"{type(e).__name__}: {str(e)[:300]}")
            print(json.dumps(row), flush=True)
            log.write(json.dumps(row) + "\n")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    v = sub.add_parser("survey")
    v.add_argument("out", type=Path)
    v.add_argument("--jobs", type=int, default=1, help="models imported at once (processes)")
    c = sub.add_parser("compile")
    c.add_argument("source", type=Path)
    c.add_argument("out", type=Path)
    c.add_argument("--jobs", type=int, default=1, help="models compiled at once (processes)")
    k = sub.add_parser("check")
    k.add_argument("folder", type=Path)
    k.add_argument("out", type=Path)
    k.add_argument("--executor", default="cuda-graph", choices=("cuda-graph", "cuda-eager", "cpu"))
    k.add_argument("--budget-s", type=float, default=float("inf"),
                   help="start no model after this many seconds (the rest: not checked)")
    k.add_argument("--skip", type=Path, action="append", default=[],
                   help="an earlier check's JSON lines: its equal models are not checked again "
                        "(the budget goes to the unverified ones)")
    args = p.parse_args()
    if args.command == "survey":
        survey(args.out, args.jobs)
    elif args.command == "compile":
        compile_all(args.source, args.out, args.jobs)
    else:
        check(args.folder, args.out, args.executor, args.budget_s, tuple(args.skip))


if __name__ == "__main__":
    main()
