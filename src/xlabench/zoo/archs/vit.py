"""ViT and DeiT classifiers built on keras-hub backbones, with random weights.

Plain ViT and plain DeiT are the same network (class token, pre-norm encoder, final
LayerNorm, linear head on the class token); they differ only in size, so both use
``keras_hub.models.ViTBackbone``. Distilled DeiT adds a distillation token and a second head,
which ``keras_hub.models.DeiTBackbone`` provides (it always adds that token). At inference
the distilled model returns the mean of the two heads' logits, as timm does in eval mode.

Backbones are always built from constructor arguments, never from presets, because presets
download weights and the benchmark machines have no network.
"""

from __future__ import annotations

import dataclasses

import keras
import keras_hub

from xlabench.zoo.archs import transformer_blocks as tb


@dataclasses.dataclass(frozen=True)
class ViTConfig:
    """Architecture of one ViT / DeiT variant.

    Attributes:
        patch_size: Side of the square patches (also the patch-embedding stride).
        hidden_dim: Token width.
        num_layers: Number of encoder blocks.
        num_heads: Attention heads per block.
        mlp_dim: Hidden width of each block's MLP.
        distilled: Whether to add DeiT's distillation token and second head.
        default_resolution: Resolution at which the published parameter count holds.
        fixed_resolution: The only resolution the variant may be built at, if pinned.
    """

    patch_size: int
    hidden_dim: int
    num_layers: int
    num_heads: int
    mlp_dim: int
    distilled: bool = False
    default_resolution: int = 224
    fixed_resolution: int | None = None


_TINY = {"hidden_dim": 192, "num_layers": 12, "num_heads": 3, "mlp_dim": 768}
_SMALL = {"hidden_dim": 384, "num_layers": 12, "num_heads": 6, "mlp_dim": 1536}
_BASE = {"hidden_dim": 768, "num_layers": 12, "num_heads": 12, "mlp_dim": 3072}
_LARGE = {"hidden_dim": 1024, "num_layers": 24, "num_heads": 16, "mlp_dim": 4096}
_AT_384 = {"default_resolution": 384, "fixed_resolution": 384}

VARIANTS: dict[str, ViTConfig] = {
    "vit_s16": ViTConfig(patch_size=16, **_SMALL),
    "vit_b8": ViTConfig(patch_size=8, **_BASE),
    "vit_b16": ViTConfig(patch_size=16, **_BASE),
    "vit_b32": ViTConfig(patch_size=32, **_BASE),
    "vit_l16": ViTConfig(patch_size=16, **_LARGE),
    "deit_tiny_patch16_224": ViTConfig(patch_size=16, **_TINY),
    "deit_small_patch16_224": ViTConfig(patch_size=16, **_SMALL),
    "deit_base_patch16_224": ViTConfig(patch_size=16, **_BASE),
    "deit_tiny_distilled_patch16_224": ViTConfig(patch_size=16, distilled=True, **_TINY),
    "deit_small_distilled_patch16_224": ViTConfig(patch_size=16, distilled=True, **_SMALL),
    "deit_base_distilled_patch16_224": ViTConfig(patch_size=16, distilled=True, **_BASE),
    "deit_base_patch16_384": ViTConfig(patch_size=16, **_BASE, **_AT_384),
    "deit_base_distilled_patch16_384": ViTConfig(patch_size=16, distilled=True, **_BASE, **_AT_384),
}


def check_resolution(variant: str, resolution: int) -> str | None:
    """Says whether ``variant`` can be built at ``resolution``.

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
        tb.divisibility_reason(resolution, cfg.patch_size, "the patch size")
    )


def build(variant: str, resolution: int, num_classes: int = 1000) -> keras.Model:
    """Builds a randomly initialised ViT / DeiT classifier.

    Args:
        variant: Study name of the variant (a key of ``VARIANTS``).
        resolution: Square input side in pixels; must pass ``check_resolution``.
        num_classes: Number of output logits.

    Returns:
        Functional model mapping ``(batch, resolution, resolution, 3)`` images to logits.
    """
    return _build_from_config(variant, VARIANTS[variant], resolution, num_classes)


def _build_from_config(name: str, cfg: ViTConfig, resolution: int, num_classes: int) -> keras.Model:
    """Builds the classifier described by ``cfg`` (also used by tests with tiny configs)."""
    inputs = tb.image_input(resolution)
    tokens = _backbone(cfg, resolution)(inputs)
    if cfg.distilled:
        logits = _distilled_logits(tokens, num_classes)
    else:
        logits = tb.token_logits(tokens, 0, num_classes, name="head")
    return keras.Model(inputs, logits, name=name)


def _backbone(cfg: ViTConfig, resolution: int) -> keras.Model:
    """Returns the keras-hub encoder (final LayerNorm included) for ``cfg``."""
    common = {
        "image_shape": (resolution, resolution, 3),
        "patch_size": cfg.patch_size,
        "num_layers": cfg.num_layers,
        "num_heads": cfg.num_heads,
        "hidden_dim": cfg.hidden_dim,
        "layer_norm_epsilon": tb.VIT_LAYER_NORM_EPSILON,
        "data_format": "channels_last",
    }
    if cfg.distilled:
        return keras_hub.models.DeiTBackbone(
            intermediate_dim=cfg.mlp_dim, name="deit_backbone", **common
        )
    return keras_hub.models.ViTBackbone(mlp_dim=cfg.mlp_dim, name="vit_backbone", **common)


def _distilled_logits(tokens: keras.KerasTensor, num_classes: int) -> keras.KerasTensor:
    """Averages the class-token and distillation-token heads, as timm's eval mode does."""
    cls_logits = tb.token_logits(tokens, 0, num_classes, name="head")
    dist_logits = tb.token_logits(tokens, 1, num_classes, name="head_dist")
    return keras.layers.Average(name="logits")([cls_logits, dist_logits])


def num_tokens(cfg: ViTConfig, resolution: int) -> int:
    """Returns the encoder sequence length: patches plus class (and distillation) token."""
    extra = 2 if cfg.distilled else 1
    return (resolution // cfg.patch_size) ** 2 + extra
