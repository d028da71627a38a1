"""Builders for the keras.applications models (Keras 3 ships these for every backend)."""

from __future__ import annotations

import os
from typing import Any

from xlabench.core.errors import UserError, one_line

#: Set by tests (and by users who want a guarantee) to refuse any download.
OFFLINE_ENV = "XLABENCH_OFFLINE"


def build(variant: str, resolution: int, num_classes: int = 1000, weights: str = "random") -> Any:
    """Build keras.applications.<variant> at `resolution` with random or ImageNet weights.

    Defaults are kept (MobileNetV3's rescaling layer, EfficientNet's and ConvNeXt's
    normalisation layers are part of the model), so every backend times the same graph.
    """
    import keras

    constructor = getattr(keras.applications, variant)
    if weights == "imagenet":
        return _build_imagenet(constructor, variant, resolution)
    return constructor(
        weights=None,
        include_top=True,
        input_shape=(resolution, resolution, 3),
        classes=num_classes,
        classifier_activation=None,  # logits: parity is checked before the softmax
    )


def _build_imagenet(constructor: Any, variant: str, resolution: int) -> Any:
    if os.environ.get(OFFLINE_ENV):
        raise UserError(
            f"cannot load ImageNet weights for {variant}: downloads are disabled "
            f"({OFFLINE_ENV} is set); use --weights random"
        )
    try:
        return constructor(
            weights="imagenet",
            include_top=True,
            input_shape=(resolution, resolution, 3),
            classifier_activation=None,
        )
    except ValueError as exc:  # e.g. a resolution the pretrained top cannot take
        raise UserError(
            f"cannot load ImageNet weights for {variant} at {resolution}: {exc}"
        ) from exc
    except Exception as exc:
        raise UserError(
            f"cannot download ImageNet weights for {variant} (no network?): "
            f"{one_line(exc)}; "
            "use --weights random"
        ) from exc
