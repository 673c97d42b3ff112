"""What a state-dict load did not match: one type for the trainer and the importer.

``Trainer.load_state_dict``, ``copy_to`` and ``copy_from`` return it (as
PyTorch's ``load_state_dict`` does); it lives apart so that rn.trainer and
rn.torch_import, which both return it, need not import each other.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["IncompatibleKeys"]


class IncompatibleKeys(NamedTuple):
    """What ``load_state_dict(strict=False)`` did not match (as PyTorch's)."""

    missing_keys: list[str]
    unexpected_keys: list[str]
