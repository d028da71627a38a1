"""Swin Transformer (v1) classifiers on keras-hub's ``SwinTransformerBackbone``.

keras-hub's backbone builds the same network as timm's ``swin_*_patch4_window*`` models
(patch-4 embedding + LayerNorm, shifted-window stages with relative position bias, patch
merging, final LayerNorm); our trainable parameter counts equal timm's exactly. The head is
a mean over tokens followed by a linear layer, as in timm.
"""

from __future__ import annotations

import dataclasses

import keras
import keras_hub

from xlabench.zoo.archs import transformer_blocks as tb

PATCH_SIZE = 4
MLP_RATIO = 4.0


@dataclasses.dataclass(frozen=True)
class SwinConfig:
    """Architecture of one Swin variant.

    Attributes:
        embed_dim: Token width of the first stage (doubles at every later stage).
        depths: Blocks per stage.
        num_heads: Attention heads per stage.
        window_size: Attention window side, the same in every stage.
        default_resolution: Resolution at which the published parameter count holds.
        fixed_resolution: The only resolution the variant may be built at, if pinned.
    """

    embed_dim: int
    depths: tuple[int, ...]
    num_heads: tuple[int, ...]
    window_size: int
    default_resolution: int = 224
    fixed_resolution: int | None = None

    @property
    def window_sizes(self) -> tuple[int, ...]:
        """Window side of each stage."""
        return (self.window_size,) * len(self.depths)


_TINY = {"embed_dim": 96, "depths": (2, 2, 6, 2), "num_heads": (3, 6, 12, 24)}
_SMALL = {"embed_dim": 96, "depths": (2, 2, 18, 2), "num_heads": (3, 6, 12, 24)}
_BASE = {"embed_dim": 128, "depths": (2, 2, 18, 2), "num_heads": (4, 8, 16, 32)}
_LARGE = {"embed_dim": 192, "depths": (2, 2, 18, 2), "num_heads": (6, 12, 24, 48)}
_AT_384 = {"window_size": 12, "default_resolution": 384, "fixed_resolution": 384}

VARIANTS: dict[str, SwinConfig] = {
    "swin_tiny_224": SwinConfig(window_size=7, **_TINY),
    "swin_small_224": SwinConfig(window_size=7, **_SMALL),
    "swin_base_224": SwinConfig(window_size=7, **_BASE),
    "swin_base_384": SwinConfig(**_BASE, **_AT_384),
    "swin_large_224": SwinConfig(window_size=7, **_LARGE),
    "swin_large_384": SwinConfig(**_LARGE, **_AT_384),
}


def check_resolution(variant: str, resolution: int) -> str | None:
    """Says whether ``variant`` can be built at ``resolution``.

    Every stage's feature map must be a whole number of windows (no window clipping, see
    ``transformer_blocks.swin_resolution_reason``), so window-7 variants need a multiple
    of 224.

    Args:
        variant: Study name of the variant.
        resolution: Square input side in pixels.

    Returns:
        None if valid, else a one-line reason.
    """
    cfg = VARIANTS.get(variant)
    if cfg is None:
        return f"unknown variant {variant!r}"
    return tb.fixed_resolution_reason(resolution, cfg.fixed_resolution) or (
        tb.swin_resolution_reason(resolution, PATCH_SIZE, cfg.window_sizes)
    )


def build(variant: str, resolution: int, num_classes: int = 1000) -> keras.Model:
    """Builds a randomly initialised Swin classifier.

    Args:
        variant: Study name of the variant (a key of ``VARIANTS``).
        resolution: Square input side in pixels; must pass ``check_resolution``.
        num_classes: Number of output logits.

    Returns:
        Functional model mapping ``(batch, resolution, resolution, 3)`` images to logits.
    """
    return _build_from_config(variant, VARIANTS[variant], resolution, num_classes)


def _build_from_config(
    name: str, cfg: SwinConfig, resolution: int, num_classes: int
) -> keras.Model:
    """Builds the classifier described by ``cfg`` (also used by tests with tiny configs)."""
    backbone = keras_hub.models.SwinTransformerBackbone(
        image_shape=(resolution, resolution, 3),
        embed_dim=cfg.embed_dim,
        depths=cfg.depths,
        num_heads=cfg.num_heads,
        window_size=cfg.window_size,
        patch_size=PATCH_SIZE,
        mlp_ratio=MLP_RATIO,
        # Inference only: no stochastic depth, so no DropPath layers or RNG state.
        drop_path=0.0,
        data_format="channels_last",
        name="swin_backbone",
    )
    inputs = tb.image_input(resolution)
    logits = tb.mean_pool_logits(backbone(inputs), num_classes)
    return keras.Model(inputs, logits, name=name)
