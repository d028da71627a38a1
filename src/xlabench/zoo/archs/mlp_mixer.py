"""MLP-Mixer classifiers (timm ``mixer_b16_224``, ``mixer_b32_224``, ``mixer_l16_224``).

Not in keras-hub, so written in plain Keras 3: a patch-embedding conv, then blocks that mix
across tokens (an MLP applied to each channel's token vector) and across channels (an MLP
applied to each token), each pre-normed with LayerNorm and wrapped in a residual; final
LayerNorm, mean over tokens, linear head. The token-mixing MLP's width depends on the
number of patches, so the parameter count depends on the resolution.
"""

from __future__ import annotations

import dataclasses

import keras

from xlabench.zoo.archs import transformer_blocks as tb


@dataclasses.dataclass(frozen=True)
class MixerConfig:
    """Architecture of one MLP-Mixer variant.

    Attributes:
        patch_size: Side of the square patches (also the patch-embedding stride).
        num_blocks: Number of mixer blocks.
        hidden_dim: Channel width of every token.
        tokens_mlp_ratio: Token-mixing MLP hidden width as a fraction of ``hidden_dim``.
        channels_mlp_ratio: Channel-mixing MLP hidden width as a multiple of ``hidden_dim``.
        default_resolution: Resolution at which the published parameter count holds.
    """

    patch_size: int
    num_blocks: int
    hidden_dim: int
    tokens_mlp_ratio: float = 0.5
    channels_mlp_ratio: float = 4.0
    default_resolution: int = 224


VARIANTS: dict[str, MixerConfig] = {
    "mixer_b16": MixerConfig(patch_size=16, num_blocks=12, hidden_dim=768),
    "mixer_b32": MixerConfig(patch_size=32, num_blocks=12, hidden_dim=768),
    "mixer_l16": MixerConfig(patch_size=16, num_blocks=24, hidden_dim=1024),
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
    return tb.divisibility_reason(resolution, cfg.patch_size, "the patch size")


def build(variant: str, resolution: int, num_classes: int = 1000) -> keras.Model:
    """Builds a randomly initialised MLP-Mixer classifier.

    Args:
        variant: Study name of the variant (a key of ``VARIANTS``).
        resolution: Square input side in pixels; must pass ``check_resolution``.
        num_classes: Number of output logits.

    Returns:
        Functional model mapping ``(batch, resolution, resolution, 3)`` images to logits.
    """
    return _build_from_config(variant, VARIANTS[variant], resolution, num_classes)


def _build_from_config(
    name: str, cfg: MixerConfig, resolution: int, num_classes: int
) -> keras.Model:
    """Builds the classifier described by ``cfg`` (also used by tests with tiny configs)."""
    inputs = tb.image_input(resolution)
    x = keras.layers.Conv2D(cfg.hidden_dim, cfg.patch_size, strides=cfg.patch_size, name="stem")(
        inputs
    )
    tokens = num_tokens(cfg, resolution)
    x = keras.layers.Reshape((tokens, cfg.hidden_dim), name="stem_flatten")(x)
    for i in range(cfg.num_blocks):
        x = _mixer_block(x, cfg, tokens, name=f"block{i}")
    x = tb.layer_norm(x, name="norm")
    logits = tb.mean_pool_logits(x, num_classes)
    return keras.Model(inputs, logits, name=name)


def _mixer_block(
    x: keras.KerasTensor, cfg: MixerConfig, tokens: int, name: str
) -> keras.KerasTensor:
    """One Mixer block: residual token mixing, then residual channel mixing."""
    # Token mixing: swap axes so the Dense layers act along the token axis.
    y = tb.layer_norm(x, name=f"{name}_norm1")
    y = keras.layers.Permute((2, 1), name=f"{name}_to_channels_first")(y)
    y = tb.mlp(y, int(cfg.tokens_mlp_ratio * cfg.hidden_dim), tokens, name=f"{name}_tokens")
    y = keras.layers.Permute((2, 1), name=f"{name}_to_tokens_first")(y)
    x = keras.layers.Add(name=f"{name}_add1")([x, y])
    # Channel mixing: an ordinary per-token MLP.
    y = tb.layer_norm(x, name=f"{name}_norm2")
    y = tb.mlp(y, int(cfg.channels_mlp_ratio * cfg.hidden_dim), cfg.hidden_dim, f"{name}_channels")
    return keras.layers.Add(name=f"{name}_add2")([x, y])


def num_tokens(cfg: MixerConfig, resolution: int) -> int:
    """Returns the number of patches (tokens) at ``resolution``."""
    return (resolution // cfg.patch_size) ** 2
