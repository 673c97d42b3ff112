"""Compares two rn-run checkpoints tensor by tensor.

    compare_checkpoints.py A B

Prints one line per tensor that only one of them holds (with its role and
values) and one line for the tensors both hold: how many, and how many of
them differ in any bit. Exits 0 either way; FileCheck reads the lines.
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "python-frontend"))

from rn import _safetensors  # noqa: E402


def main() -> None:
    a, b = (_safetensors.read(path) for path in sys.argv[1:3])
    roles = {e["name"]: e["role"] for e in json.loads(b.metadata["rn.state"])}
    for name in b.tensors:
        if name not in a.tensors:
            values = ",".join(f"{v:.4f}" for v in b.tensors[name].reshape(-1))
            print(f"only in {sys.argv[2]}: {name} ({roles[name]}) = {values}")
    for name in a.tensors:
        if name not in b.tensors:
            print(f"only in {sys.argv[1]}: {name}")
    shared = [n for n in a.tensors if n in b.tensors]
    differ = [n for n in shared if a.tensors[n].tobytes() != b.tensors[n].tobytes()]
    print(f"{len(shared)} tensors in both, {len(differ)} differ{': ' + ', '.join(differ) if differ else ''}")


if __name__ == "__main__":
    main()
