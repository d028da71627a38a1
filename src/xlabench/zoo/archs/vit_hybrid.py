"""ResNet + ViT hybrids (timm ``vit_small_r26_s32_224``, ``vit_large_r50_s32_224``).

The CNN is the BiT-style ResNet used by the AugReg hybrids: weight-standardised convolutions
with TF "SAME" padding, GroupNorm(32) + ReLU, non-pre-activation bottlenecks (stride on the
3x3 conv) and a projection shortcut at the start of every stage. Its stride-32 map is the
"image" of a ViT with patch size 1, so the 1x1 patch-embedding conv of keras-hub's
``ViTBackbone`` is exactly the hybrid's linear projection of CNN features to tokens.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import keras
import keras_hub
from keras import ops

from xlabench.zoo.archs import transformer_blocks as tb

_GROUPS = 32
_GROUP_NORM_EPSILON = 1e-5
# timm builds the hybrid's convolutions with StdConv2dSame(eps=1e-8).
_STD_CONV_EPSILON = 1e-8
_TOTAL_STRIDE = 32


@dataclasses.dataclass(frozen=True)
class HybridConfig:
    """Architecture of one ResNet + ViT hybrid.

    Attributes:
        resnet_depths: Bottleneck blocks per ResNet stage.
        hidden_dim: Token width of the ViT.
        num_layers: Number of encoder blocks.
        num_heads: Attention heads per block.
        mlp_dim: Hidden width of each block's MLP.
        stem_width: Output channels of the ResNet stem (BiT / timm ResNetV2: 64).
        stage_widths: Output channels of each ResNet stage; bottlenecks are a quarter wide.
        default_resolution: Resolution at which the published parameter count holds.
    """

    resnet_depths: tuple[int, ...]
    hidden_dim: int
    num_layers: int
    num_heads: int
    mlp_dim: int
    stem_width: int = 64
    stage_widths: tuple[int, ...] = (256, 512, 1024, 2048)
    default_resolution: int = 224


VARIANTS: dict[str, HybridConfig] = {
    "vit_r26_s32": HybridConfig(
        resnet_depths=(2, 2, 2, 2), hidden_dim=384, num_layers=12, num_heads=6, mlp_dim=1536
    ),
    "vit_r50_l32": HybridConfig(
        resnet_depths=(3, 4, 6, 3), hidden_dim=1024, num_layers=24, num_heads=16, mlp_dim=4096
    ),
}


@keras.saving.register_keras_serializable(package="xlabench")
class StdConv2D(keras.layers.Conv2D):
    """Conv2D whose kernel is standardised per output filter before every use.

    Weight standardisation (BiT) replaces BatchNorm's role alongside GroupNorm: each
    filter's kernel is shifted to zero mean and scaled to unit (biased) variance.
    """

    def __init__(self, *args: Any, epsilon: float = _STD_CONV_EPSILON, **kwargs: Any) -> None:
        """Creates the layer; ``epsilon`` guards the variance, other args as Conv2D."""
        super().__init__(*args, **kwargs)
        self.epsilon = epsilon

    def convolution_op(self, inputs: Any, kernel: Any) -> Any:
        """Standardises ``kernel`` over (height, width, in-channels), then convolves."""
        # Statistics in the variable dtype: a 1e-8 epsilon is meaningless in bfloat16.
        k = ops.cast(kernel, self.variable_dtype)
        mean = ops.mean(k, axis=(0, 1, 2), keepdims=True)
        var = ops.var(k, axis=(0, 1, 2), keepdims=True)
        k = (k - mean) * ops.rsqrt(var + self.epsilon)
        return super().convolution_op(inputs, ops.cast(k, self.compute_dtype))

    def get_config(self) -> dict:
        """Returns the layer config, including ``epsilon``."""
        return {**super().get_config(), "epsilon": self.epsilon}


def check_resolution(variant: str, resolution: int) -> str | None:
    """Says whether ``variant`` can be built at ``resolution``.

    Args:
        variant: Study name of the variant.
        resolution: Square input side in pixels.

    Returns:
        None if valid, else a one-line reason.
    """
    if variant not in VARIANTS:
        return f"unknown variant {variant!r}"
    return tb.divisibility_reason(resolution, _TOTAL_STRIDE, "the ResNet's output stride")


def build(variant: str, resolution: int, num_classes: int = 1000) -> keras.Model:
    """Builds a randomly initialised ResNet + ViT hybrid classifier.

    Args:
        variant: Study name of the variant (a key of ``VARIANTS``).
        resolution: Square input side in pixels; must pass ``check_resolution``.
        num_classes: Number of output logits.

    Returns:
        Functional model mapping ``(batch, resolution, resolution, 3)`` images to logits.
    """
    return _build_from_config(variant, VARIANTS[variant], resolution, num_classes)


def _build_from_config(
    name: str, cfg: HybridConfig, resolution: int, num_classes: int
) -> keras.Model:
    """Builds the classifier described by ``cfg`` (also used by tests with tiny configs)."""
    inputs = tb.image_input(resolution)
    features = resnet_features(inputs, cfg)
    grid = resolution // _TOTAL_STRIDE
    encoder = keras_hub.models.ViTBackbone(
        image_shape=(grid, grid, features.shape[-1]),
        patch_size=1,  # one token per CNN feature-map position
        num_layers=cfg.num_layers,
        num_heads=cfg.num_heads,
        hidden_dim=cfg.hidden_dim,
        mlp_dim=cfg.mlp_dim,
        layer_norm_epsilon=tb.VIT_LAYER_NORM_EPSILON,
        data_format="channels_last",
        name="vit_backbone",
    )
    logits = tb.token_logits(encoder(features), 0, num_classes, name="head")
    return keras.Model(inputs, logits, name=name)


def resnet_features(images: keras.KerasTensor, cfg: HybridConfig) -> keras.KerasTensor:
    """Runs the BiT-style ResNet stem and stages; returns the stride-32 feature map.

    Args:
        images: ``(batch, H, W, 3)`` input.
        cfg: Supplies the stem width and each stage's depth and width (four stages).

    Returns:
        ``(batch, H / 32, W / 32, cfg.stage_widths[-1])`` features.
    """
    x = _std_conv(images, cfg.stem_width, 7, 2, name="stem_conv")
    x = _group_norm(x, relu=True, name="stem_norm")
    x = keras.layers.MaxPooling2D(3, strides=2, padding="same", name="stem_pool")(x)
    depths, widths = cfg.resnet_depths, cfg.stage_widths
    for stage, (depth, width) in enumerate(zip(depths, widths, strict=True)):
        for block in range(depth):
            stride = 2 if stage > 0 and block == 0 else 1
            x = _bottleneck(x, width, stride, project=block == 0, name=f"s{stage}_b{block}")
    return x


def _bottleneck(
    x: keras.KerasTensor, width: int, stride: int, project: bool, name: str
) -> keras.KerasTensor:
    """Non-pre-activation bottleneck: 1x1 -> 3x3 (strided) -> 1x1, GroupNorm after each."""
    shortcut = x
    if project:
        shortcut = _std_conv(x, width, 1, stride, name=f"{name}_proj")
        shortcut = _group_norm(shortcut, relu=False, name=f"{name}_proj_norm")
    mid = width // 4
    y = _group_norm(_std_conv(x, mid, 1, 1, f"{name}_conv1"), True, f"{name}_norm1")
    y = _group_norm(_std_conv(y, mid, 3, stride, f"{name}_conv2"), True, f"{name}_norm2")
    y = _group_norm(_std_conv(y, width, 1, 1, f"{name}_conv3"), False, f"{name}_norm3")
    y = keras.layers.Add(name=f"{name}_add")([shortcut, y])
    return keras.layers.ReLU(name=f"{name}_out")(y)


def _std_conv(
    x: keras.KerasTensor, filters: int, kernel: int, stride: int, name: str
) -> keras.KerasTensor:
    """Bias-free weight-standardised conv with TF-style SAME padding (as timm's hybrids)."""
    return StdConv2D(filters, kernel, strides=stride, padding="same", use_bias=False, name=name)(x)


def _group_norm(x: keras.KerasTensor, relu: bool, name: str) -> keras.KerasTensor:
    """GroupNorm(32 groups), optionally followed by ReLU."""
    x = keras.layers.GroupNormalization(_GROUPS, epsilon=_GROUP_NORM_EPSILON, name=name)(x)
    return keras.layers.ReLU(name=f"{name}_relu")(x) if relu else x


def num_tokens(resolution: int) -> int:
    """Returns the encoder sequence length: one token per stride-32 position plus class."""
    return (resolution // _TOTAL_STRIDE) ** 2 + 1
