"""Swin-S3 (AutoFormerV2, "S3": searching the search space) classifiers.

Swin-S3 is a Swin Transformer whose attention window is chosen per stage (timm
``swin_s3_*_224``; Microsoft Cream's AutoFormerV2). keras-hub's ``SwinTransformerBackbone``
takes a single window for all stages, so we assemble the same network from keras-hub's
Swin layers (patch embedding, ``SwinTransformerStage``, ``PatchMerging``) with one window
per stage. Using the very layers that ``swin.py`` runs keeps Swin and Swin-S3 on one
implementation, so benchmark differences between them come from the architectures alone.

Those layers are not exported by keras-hub's public API; they are imported from the module
that defines them in keras-hub 0.32 (``keras_hub.src.models.swin_transformer``).
"""

from __future__ import annotations

import dataclasses

import keras
from keras_hub.src.models.swin_transformer.swin_transformer_layers import (
    PatchEmbedding,
    PatchMerging,
    SwinTransformerStage,
)

from xlabench.zoo.archs import transformer_blocks as tb

PATCH_SIZE = 4
MLP_RATIO = 4.0
# Swin (and timm's port) uses torch's default LayerNorm epsilon.
_LAYER_NORM_EPSILON = 1e-5


@dataclasses.dataclass(frozen=True)
class SwinS3Config:
    """Architecture of one Swin-S3 variant.

    Attributes:
        embed_dim: Token width of the first stage (doubles at every later stage).
        depths: Blocks per stage.
        num_heads: Attention heads per stage.
        window_sizes: Attention window side per stage.
        default_resolution: Resolution at which the published parameter count holds.
    """

    embed_dim: int
    depths: tuple[int, ...]
    num_heads: tuple[int, ...]
    window_sizes: tuple[int, ...]
    default_resolution: int = 224


_HEADS = (3, 6, 12, 24)
VARIANTS: dict[str, SwinS3Config] = {
    "swin_s3_tiny_224": SwinS3Config(96, (2, 2, 6, 2), _HEADS, (7, 7, 14, 7)),
    "swin_s3_small_224": SwinS3Config(96, (2, 2, 18, 2), _HEADS, (14, 14, 14, 7)),
    "swin_s3_base_224": SwinS3Config(96, (2, 2, 30, 2), _HEADS, (7, 7, 14, 7)),
}


def check_resolution(variant: str, resolution: int) -> str | None:
    """Says whether ``variant`` can be built at ``resolution``.

    Every stage's feature map must be a whole number of that stage's windows (no window
    clipping), which for all three variants means a multiple of 224.

    Args:
        variant: Study name of the variant.
        resolution: Square input side in pixels.

    Returns:
        None if valid, else a one-line reason.
    """
    cfg = VARIANTS.get(variant)
    if cfg is None:
        return f"unknown variant {variant!r}"
    return tb.swin_resolution_reason(resolution, PATCH_SIZE, cfg.window_sizes)


def build(variant: str, resolution: int, num_classes: int = 1000) -> keras.Model:
    """Builds a randomly initialised Swin-S3 classifier.

    Args:
        variant: Study name of the variant (a key of ``VARIANTS``).
        resolution: Square input side in pixels; must pass ``check_resolution``.
        num_classes: Number of output logits.

    Returns:
        Functional model mapping ``(batch, resolution, resolution, 3)`` images to logits.
    """
    return _build_from_config(variant, VARIANTS[variant], resolution, num_classes)


def _build_from_config(
    name: str, cfg: SwinS3Config, resolution: int, num_classes: int
) -> keras.Model:
    """Builds the classifier described by ``cfg`` (also used by tests with tiny configs)."""
    inputs = tb.image_input(resolution)
    x = PatchEmbedding(
        patch_size=PATCH_SIZE,
        embed_dim=cfg.embed_dim,
        norm_layer=keras.layers.LayerNormalization,
        data_format="channels_last",
        name="patch_embedding",
    )(inputs)
    sizes = tb.swin_stage_sizes(resolution, PATCH_SIZE, len(cfg.depths))
    last = len(cfg.depths) - 1
    for i, (depth, heads, window, size) in enumerate(
        zip(cfg.depths, cfg.num_heads, cfg.window_sizes, sizes, strict=True)
    ):
        # keras-hub puts patch merging at the end of a stage (as the Swin paper's code);
        # timm puts it at the start of the next one. Same weights, same computation.
        x = SwinTransformerStage(
            dim=cfg.embed_dim * 2**i,
            depth=depth,
            num_heads=heads,
            window_size=window,
            mlp_ratio=MLP_RATIO,
            qkv_bias=True,
            drop_path=0.0,
            downsample=PatchMerging if i < last else None,
            input_resolution=(size, size),
            name=f"stage_{i}",
        )(x)
    x = keras.layers.LayerNormalization(epsilon=_LAYER_NORM_EPSILON, name="norm")(x)
    logits = tb.mean_pool_logits(x, num_classes)
    return keras.Model(inputs, logits, name=name)
