"""Model kinds as the study groups them: CNN against non-CNN, detectors apart."""

from __future__ import annotations

NON_CNN_KINDS = ("transformer", "mlp", "hybrid")
KIND_GROUPS = {"cnn": "CNN", **dict.fromkeys(NON_CNN_KINDS, "non-CNN"), "detector": "detector"}


def kind_group(kind: object) -> str:
    """CNN, non-CNN (transformer, mlp, hybrid), detector, or unknown."""
    return KIND_GROUPS.get(str(kind), "unknown")
