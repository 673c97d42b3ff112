"""Every classification model of the installed torchvision, imported by RN (docs/python.md's table).

For each model torchvision lists (``torchvision.models.list_models``; 80 in
0.14, more in 0.26), built from seed 0 with ten classes and no weights
downloaded: ``rn.from_torch`` at 3x96x96 (299x299 for inception_v3, which
needs it), compiled in-process, and RN's evaluation logits (CPU executor,
or ``--executor cuda-graph``) compared with PyTorch's eval forward on the
same random batch. A model either matches (its logits within 4x what
perturbing PyTorch's parameters by a relative 1e-6 moves them, as
scripts/timm-import.py judges) or is refused with a message that names the
module; anything else (a crash, a wrong answer) is a finding.

Each model that matches is then compiled again for training (SGD with
momentum, its dropout and stochastic depth at p = 0: their masks are
random) and the loss of RN's first training step on a random labelled
batch is compared with PyTorch's train-mode forward loss (batch
statistics), judged the same way: ``train`` is equal or wrong, with its
error and bound (``--no-train`` leaves it out).

    /usr/bin/python3 scripts/torchvision-import.py OUT.jsonl [--models a,b] [--markdown TABLE.md]

One JSON line per model (model, outcome: equal | refused | wrong | failed |
not run, error and bound or why, train, train_error and train_bound,
seconds), then a summary line on stderr.
Each model is checked in a child process: one that runs out of memory (a
2.6 GB regnet_y_128gf on a small machine) is "not run", and the rest go on.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path

BATCH = 2
SIZE = 96
# Models whose own layers need a larger input than SIZE.
SIZES = {"inception_v3": 299}


def build(name: str):  # type: ignore[no-untyped-def]
    import torch
    import torchvision

    torch.manual_seed(0)
    kwargs = {"num_classes": 10, "weights": None}
    if name in ("inception_v3", "googlenet"):
        kwargs.update(aux_logits=False, init_weights=True)
    return torchvision.models.get_model(name, **kwargs).eval()


def without_randomness(model):  # type: ignore[no-untyped-def]
    """``model`` with every dropout and stochastic depth at p = 0 (in place)."""
    import torch
    from torchvision.ops import StochasticDepth

    for m in model.modules():
        if isinstance(m, (torch.nn.Dropout, StochasticDepth)):
            m.p = 0.0
    return model


def train_step(name: str, model, workdir: Path, executor: str,  # type: ignore[no-untyped-def]
               size: int) -> dict[str, object]:
    """The loss of RN's first training step against PyTorch's train-mode forward loss."""
    import numpy as np
    import torch
    import torch.nn.functional as F

    import rn

    model = without_randomness(copy.deepcopy(model))
    artifact = rn.compile(model, workdir / f"{name}.train.rnx", batch=BATCH,
                          input_shape=(3, size, size), name=f"torchvision_{name}",
                          pipeline="optimizer=sgd momentum=0.9")
    trainer = rn.Trainer(artifact, executor=executor)
    g = torch.Generator().manual_seed(5)
    x = torch.randn(BATCH, 3, size, size, generator=g)
    y = torch.randint(0, 10, (BATCH,), generator=g)
    ours = trainer.step(x.numpy(), y.numpy(), lr=0.0).loss()
    artifact.unlink()
    perturbed = copy.deepcopy(model)
    sign = torch.Generator().manual_seed(11)
    with torch.no_grad():
        for t in perturbed.parameters():
            t.mul_(1 + 1e-6 * (torch.randint(0, 2, t.shape, generator=sign).float() * 2 - 1))
        ref = float(F.cross_entropy(copy.deepcopy(model).train()(x), y))
        moved = float(F.cross_entropy(perturbed.train()(x), y))
    err = abs(ours - ref)
    bound = 4 * abs(ref - moved) + 4 * 1.2e-7 * abs(ref)
    return {"train": "equal" if err <= bound else "wrong", "train_error": err,
            "train_bound": bound}


def check_one(name: str, workdir: Path, executor: str, train: bool = True) -> dict[str, object]:
    import numpy as np
    import torch

    import rn

    size = SIZES.get(name, SIZE)
    row: dict[str, object] = {"model": name, "input": [3, size, size], "executor": executor}
    start = time.perf_counter()
    try:
        model = build(name)
        artifact = rn.compile(model, workdir / f"{name}.rnx", batch=BATCH, input_shape=(3, size, size),
                              name=f"torchvision_{name}")
        trainer = rn.Trainer(artifact, executor=executor)
        g = torch.Generator().manual_seed(3)
        x = torch.randn(BATCH, 3, size, size, generator=g)
        ours = trainer.predict(x.numpy())
        perturbed = copy.deepcopy(model)
        sign = torch.Generator().manual_seed(11)
        with torch.no_grad():
            for t in perturbed.parameters():
                t.mul_(1 + 1e-6 * (torch.randint(0, 2, t.shape, generator=sign).float() * 2 - 1))
            ref = model(x).numpy()
            moved = perturbed(x).numpy()
        err = float(np.max(np.abs(ours - ref)))
        bound = 4 * float(np.max(np.abs(ref - moved))) + 4 * 1.2e-7 * float(np.max(np.abs(ref)))
        row.update(outcome="equal" if err <= bound else "wrong", error=err, bound=bound)
        artifact.unlink()
        if train and row["outcome"] == "equal":
            row.update(train_step(name, model, workdir, executor, size))
    except rn.UnsupportedModelError as e:
        row.update(outcome="refused", why=str(e).splitlines()[0][:400])
    except Exception as e:  # a finding: the importer or the compiler broke
        row.update(outcome="failed", why=f"{type(e).__name__}: {str(e)[:400]}")
    row["seconds"] = round(time.perf_counter() - start, 1)
    return row


def _in_child(name: str, workdir: Path, executor: str, train: bool) -> dict[str, object]:
    import subprocess

    proc = subprocess.run([sys.executable, __file__, "--one", name, "--executor", executor,
                           *([] if train else ["--no-train"]), str(workdir / "one.jsonl")],
                          capture_output=True, text=True)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode == 0 and lines:
        return json.loads(lines[-1])
    why = (f"killed by signal {-proc.returncode} (out of memory?)" if proc.returncode < 0
           else f"exit {proc.returncode}: {proc.stderr.strip()[-300:]}")
    return {"model": name, "executor": executor, "outcome": "not run", "why": why}


def markdown(rows: list[dict[str, object]]) -> str:
    lines = ["| model | outcome | max error / bound, or why |", "|---|---|---|"]
    for r in rows:
        if r["outcome"] in ("equal", "wrong"):
            detail = f"{r['error']:.2e} / {r['bound']:.2e}"
        else:
            detail = str(r.get("why", "")).replace("|", "\\|")
        lines.append(f"| {r['model']} | {r['outcome']} | {detail} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    import torchvision

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path, help="the JSON lines")
    p.add_argument("--models", default="", help="comma-separated names (default: every one)")
    p.add_argument("--executor", default="cpu", choices=("cpu", "cuda-graph", "cuda-eager"))
    p.add_argument("--markdown", type=Path, default=None, help="also write the table here")
    p.add_argument("--no-train", action="store_true", help="evaluation logits only")
    p.add_argument("--one", default=None, help=argparse.SUPPRESS)  # a child: one model
    args = p.parse_args()
    if args.one:
        print(json.dumps(check_one(args.one, args.out.parent, args.executor, not args.no_train)))
        return 0
    names = args.models.split(",") if args.models else torchvision.models.list_models(
        module=torchvision.models)
    workdir = args.out.parent / (args.out.stem + "-artifacts")
    workdir.mkdir(parents=True, exist_ok=True)
    rows = []
    with args.out.open("w") as log:
        for name in names:
            row = _in_child(name, workdir, args.executor, not args.no_train)
            print(json.dumps(row), flush=True)
            log.write(json.dumps(row) + "\n")
            log.flush()
            rows.append(row)
    counts = {k: sum(r["outcome"] == k for r in rows)
              for k in ("equal", "refused", "wrong", "failed", "not run")}
    trained = {k: sum(r.get("train") == k for r in rows) for k in ("equal", "wrong")}
    print(f"torchvision {torchvision.__version__}: {len(rows)} models: " +
          ", ".join(f"{v} {k}" for k, v in counts.items()) +
          f"; training step loss: {trained['equal']} equal, {trained['wrong']} wrong",
          file=sys.stderr)
    if args.markdown:
        args.markdown.write_text(markdown(rows))
    return 0 if counts["wrong"] == 0 and counts["failed"] == 0 and trained["wrong"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
