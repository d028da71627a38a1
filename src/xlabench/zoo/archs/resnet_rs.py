"""ResNet-RS image classifiers, written against plain Keras 3.

Keras 3 dropped ``keras.applications.ResNetRS*``; this module rebuilds the seven models of
"Revisiting ResNets: Improved Training and Scaling Strategies" (Bello et al., 2021,
https://arxiv.org/abs/2103.07579) as Keras 2's ``keras.applications.resnet_rs`` defined them:
a ResNet-D network (three-convolution stem whose max-pool is replaced by a strided
convolution, average-pool downsampling shortcuts) with squeeze-excitation in every
bottleneck block. Only Keras 3 layers are used, so the model runs on the tensorflow, jax
and torch backends alike.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import keras
from keras import layers

# Bottleneck inner widths of the four stages; every block outputs four times as many.
STAGE_FILTERS = (64, 128, 256, 512)
BOTTLENECK_EXPANSION = 4
# Squeeze-excitation squeezes a block's output to this fraction of it.
SE_RATIO = 0.25
# BatchNorm settings of Keras 2's ResNet-RS. Momentum 0 makes the moving statistics those
# of the last training batch; it has no effect on inference.
BN_EPSILON = 1e-5
BN_MOMENTUM = 0.0
# ImageNet channel statistics of Keras 2's built-in input normalisation.
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
# The stem halves the resolution twice and stages 2-4 once each: total stride 32. Keras 2
# rejected inputs below 32x32 for these models and so do we.
MIN_RESOLUTION = 32
# The input contract is channels-last whatever keras.config.image_data_format() says.
DATA_FORMAT = "channels_last"
# Keras 3 maps a functional graph by recursing once per layer along its longest path; a
# block is at most this many layers deep, and the rest of the call stack needs headroom.
LAYERS_PER_BLOCK_BOUND = 20
RECURSION_HEADROOM = 1000


@dataclass(frozen=True)
class ResNetRSConfig:
    """Depth configuration of one ResNet-RS model.

    Attributes:
        depth: The depth in the model's name (ResNet-RS-``depth``).
        blocks_per_stage: Bottleneck blocks in each of the four stages.
        dropout_rate: Dropout before the classifier, as Keras 2 set it per model; it is the
            identity at inference.
    """

    depth: int
    blocks_per_stage: tuple[int, int, int, int]
    dropout_rate: float


# Block counts and head dropout from Keras 2's resnet_rs.py (BLOCK_ARGS and the per-model
# constructors); the block counts agree with timm's resnetrs* definitions.
VARIANTS: dict[str, ResNetRSConfig] = {
    "resnetrs_50": ResNetRSConfig(50, (3, 4, 6, 3), 0.25),
    "resnetrs_101": ResNetRSConfig(101, (3, 4, 23, 3), 0.25),
    "resnetrs_152": ResNetRSConfig(152, (3, 8, 36, 3), 0.25),
    "resnetrs_200": ResNetRSConfig(200, (3, 24, 36, 3), 0.25),
    "resnetrs_270": ResNetRSConfig(270, (4, 29, 53, 4), 0.25),
    "resnetrs_350": ResNetRSConfig(350, (4, 36, 72, 4), 0.4),
    "resnetrs_420": ResNetRSConfig(420, (4, 44, 87, 4), 0.4),
}


def check_resolution(variant: str, resolution: int) -> str | None:
    """Says why ``variant`` cannot run at ``resolution`` x ``resolution``, if it cannot.

    Args:
        variant: A key of ``VARIANTS``.
        resolution: Input height and width in pixels.

    Returns:
        None if the resolution is supported, else a one-line reason.
    """
    _config_of(variant)
    if resolution < MIN_RESOLUTION:
        return (
            f"{variant} needs at least {MIN_RESOLUTION}x{MIN_RESOLUTION} input "
            f"(five stride-2 stages), got {resolution}"
        )
    return None


def build(variant: str, resolution: int, num_classes: int = 1000) -> keras.Model:
    """Builds a randomly initialised ResNet-RS classifier that outputs logits.

    The model takes float images in [0, 255] of shape ``(resolution, resolution, 3)``,
    channels last, and returns logits of shape ``(batch, num_classes)``.

    Args:
        variant: A key of ``VARIANTS``, e.g. ``"resnetrs_50"``.
        resolution: Input height and width in pixels.
        num_classes: Width of the classification layer.

    Returns:
        A functional ``keras.Model`` named ``variant``.

    Raises:
        KeyError: If ``variant`` is unknown.
        ValueError: If ``check_resolution`` rejects ``resolution``.
    """
    config = _config_of(variant)
    reason = check_resolution(variant, resolution)
    if reason is not None:
        raise ValueError(reason)
    _allow_graph_depth(sum(config.blocks_per_stage))

    images = keras.Input(shape=(resolution, resolution, 3), name="images")
    x = _preprocess(images)
    x = _stem(x)
    for stage_index, num_blocks in enumerate(config.blocks_per_stage):
        x = _stage(
            x,
            filters=STAGE_FILTERS[stage_index],
            num_blocks=num_blocks,
            # The stem already reduced by 4; stage 1 keeps the resolution (ResNet layout).
            strides=1 if stage_index == 0 else 2,
            name=f"stage{stage_index + 1}",
        )
    x = layers.GlobalAveragePooling2D(data_format=DATA_FORMAT, name="head_pool")(x)
    x = layers.Dropout(config.dropout_rate, name="head_dropout")(x)
    logits = layers.Dense(num_classes, name="head_logits")(x)
    return keras.Model(images, logits, name=variant)


def _config_of(variant: str) -> ResNetRSConfig:
    """Looks up a variant, naming the valid ones when it is unknown."""
    try:
        return VARIANTS[variant]
    except KeyError:
        raise KeyError(
            f"unknown ResNet-RS variant {variant!r}; known: {sorted(VARIANTS)}"
        ) from None


def _allow_graph_depth(num_blocks: int) -> None:
    """Raises Python's recursion limit enough for Keras 3 to map a graph this deep.

    ResNet-RS-270 and deeper exceed the default limit of 1000 when ``keras.Model`` walks
    the graph. Like Keras 2's ``allow_bigger_recursion`` the limit stays raised (it is
    only ever raised), because later walks of the same model (summary, saving, cloning)
    need it too.
    """
    needed = num_blocks * LAYERS_PER_BLOCK_BOUND + RECURSION_HEADROOM
    if sys.getrecursionlimit() < needed:
        sys.setrecursionlimit(needed)


def _conv_initializer() -> keras.initializers.Initializer:
    """Keras 2's and the TF reference's kernel initialiser: He by fan-out, truncated normal."""
    return keras.initializers.VarianceScaling(
        scale=2.0, mode="fan_out", distribution="truncated_normal"
    )


def _preprocess(images: keras.KerasTensor) -> keras.KerasTensor:
    """Keras 2's built-in preprocessing (its default include_preprocessing=True).

    Pixels in [0, 255] are scaled to [0, 1] and standardised with ImageNet channel
    statistics; kept in the model so its cost matches Keras 2's.
    """
    x = layers.Rescaling(1.0 / 255.0, name="preprocess_rescaling")(images)
    return layers.Normalization(
        mean=list(IMAGENET_MEAN),
        variance=[std**2 for std in IMAGENET_STD],
        name="preprocess_normalization",
    )(x)


def _conv(
    x: keras.KerasTensor, filters: int, kernel_size: int, strides: int, name: str
) -> keras.KerasTensor:
    """Bias-free convolution with input-size-independent padding for strided kernels.

    A strided ``same`` convolution pads asymmetrically on even inputs and differently per
    backend; like Keras 2 (and the TF reference) we pad ``kernel_size - 1`` pixels split
    evenly and convolve ``valid``.
    """
    if strides > 1:
        pad_total = kernel_size - 1
        pad_before = pad_total // 2
        padding = (pad_before, pad_total - pad_before)
        x = layers.ZeroPadding2D(
            padding=(padding, padding), data_format=DATA_FORMAT, name=f"{name}_pad"
        )(x)
    return layers.Conv2D(
        filters,
        kernel_size,
        strides=strides,
        padding="same" if strides == 1 else "valid",
        use_bias=False,
        kernel_initializer=_conv_initializer(),
        data_format=DATA_FORMAT,
        name=f"{name}_conv",
    )(x)


def _batch_norm(x: keras.KerasTensor, name: str) -> keras.KerasTensor:
    """BatchNorm with the ResNet-RS epsilon and momentum."""
    return layers.BatchNormalization(momentum=BN_MOMENTUM, epsilon=BN_EPSILON, name=name)(x)


def _conv_bn(
    x: keras.KerasTensor,
    filters: int,
    kernel_size: int,
    name: str,
    *,
    strides: int = 1,
    relu: bool = True,
) -> keras.KerasTensor:
    """Convolution, BatchNorm and optionally ReLU."""
    x = _conv(x, filters, kernel_size, strides, name)
    x = _batch_norm(x, f"{name}_bn")
    if relu:
        x = layers.ReLU(name=f"{name}_relu")(x)
    return x


def _stem(x: keras.KerasTensor) -> keras.KerasTensor:
    """ResNet-D stem with the max-pool replaced by a convolution.

    Three 3x3 convolutions (32, 32, 64 channels), the first strided, then a strided 3x3
    convolution where ResNet has its max-pool (a ResNet-RS change).
    """
    x = _conv_bn(x, 32, 3, "stem1", strides=2)
    x = _conv_bn(x, 32, 3, "stem2")
    x = _conv_bn(x, 64, 3, "stem3")
    return _conv_bn(x, 64, 3, "stem_downsample", strides=2)


def _stage(
    x: keras.KerasTensor, filters: int, num_blocks: int, strides: int, name: str
) -> keras.KerasTensor:
    """A stage: only its first block downsamples and projects the shortcut."""
    for block_index in range(num_blocks):
        x = _bottleneck_block(
            x,
            filters=filters,
            strides=strides if block_index == 0 else 1,
            project_shortcut=block_index == 0,
            name=f"{name}_block{block_index + 1}",
        )
    return x


def _bottleneck_block(
    inputs: keras.KerasTensor, filters: int, strides: int, project_shortcut: bool, name: str
) -> keras.KerasTensor:
    """1x1-3x3-1x1 bottleneck with squeeze-excitation before the residual addition.

    Keras 2 also had per-block stochastic depth here; it is the identity at inference and
    is left out.
    """
    out_filters = filters * BOTTLENECK_EXPANSION
    shortcut = _shortcut(inputs, out_filters, strides, name) if project_shortcut else inputs
    x = _conv_bn(inputs, filters, 1, f"{name}_a")
    x = _conv_bn(x, filters, 3, f"{name}_b", strides=strides)
    x = _conv_bn(x, out_filters, 1, f"{name}_c", relu=False)
    x = _squeeze_excite(x, max(1, int(out_filters * SE_RATIO)), f"{name}_se")
    x = layers.Add(name=f"{name}_add")([x, shortcut])
    return layers.ReLU(name=f"{name}_out")(x)


def _shortcut(
    inputs: keras.KerasTensor, out_filters: int, strides: int, name: str
) -> keras.KerasTensor:
    """ResNet-D projection: downsample by 2x2 average pooling, not by a strided 1x1 conv."""
    x = inputs
    if strides == 2:
        x = layers.AveragePooling2D(
            pool_size=2,
            strides=2,
            padding="same",
            data_format=DATA_FORMAT,
            name=f"{name}_shortcut_pool",
        )(x)
    return _conv_bn(x, out_filters, 1, f"{name}_shortcut", relu=False)


def _squeeze_excite(inputs: keras.KerasTensor, squeeze_width: int, name: str) -> keras.KerasTensor:
    """Channel gating: global pool, 1x1 ReLU squeeze, 1x1 sigmoid excite, rescale input."""
    channels = inputs.shape[-1]
    pool = layers.GlobalAveragePooling2D(
        data_format=DATA_FORMAT, keepdims=True, name=f"{name}_pool"
    )
    x = pool(inputs)
    x = layers.Conv2D(
        squeeze_width,
        1,
        activation="relu",
        kernel_initializer=_conv_initializer(),
        data_format=DATA_FORMAT,
        name=f"{name}_squeeze",
    )(x)
    x = layers.Conv2D(
        channels,
        1,
        activation="sigmoid",
        kernel_initializer=_conv_initializer(),
        data_format=DATA_FORMAT,
        name=f"{name}_excite",
    )(x)
    return layers.Multiply(name=f"{name}_scale")([inputs, x])
