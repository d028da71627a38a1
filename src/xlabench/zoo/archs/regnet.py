"""RegNetX and RegNetY image classifiers, written against plain Keras 3.

Keras 3 dropped ``keras.applications.RegNet*``, so this module rebuilds the 24 ImageNet
baselines of "Designing Network Design Spaces" (Radosavovic et al., CVPR 2020,
https://arxiv.org/abs/2003.13678) from their design-space parameters (depth, w0, wa, wm,
group width) as published in pycls's ``configs/dds_baselines`` and repeated in timm's
``timm/models/regnet.py``. Per-stage widths and depths are derived with the paper's quantised
linear rule, so every variant name builds the model its name says (``regnetx_006`` is
RegNetX-600MF), unlike the 2023 study we replicate, which swapped three RegNetX sizes.

Layer choices follow Keras 2's ``keras.applications.regnet`` where it made one (input
rescaling, ``same`` padding, BatchNorm epsilon/momentum, He-normal convolutions); only Keras 3
layers are used, so the model runs on the tensorflow, jax and torch backends alike.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import keras
from keras import layers

BlockType = Literal["X", "Y"]

# Stem: one 3x3 stride-2 convolution to 32 channels, as in pycls and Keras 2.
STEM_WIDTH = 32
# Stage widths are rounded to multiples of 8 before the group-width adjustment (pycls q=8).
WIDTH_QUANTUM = 8
# RegNetY squeeze-excitation width is 1/4 of the block's *input* width (pycls SE_R).
SE_RATIO = 0.25
# BatchNorm settings of the reference implementations (PyTorch momentum 0.1 == Keras 0.9).
BN_EPSILON = 1e-5
BN_MOMENTUM = 0.9
# The stem and the first block of each of the four stages halve the resolution: total stride
# 32. Keras 2 rejected inputs below 32x32 for these models and so do we.
MIN_RESOLUTION = 32
# The input contract is channels-last whatever keras.config.image_data_format() says.
DATA_FORMAT = "channels_last"
CONV_INITIALIZER = "he_normal"


@dataclass(frozen=True)
class StageSpec:
    """One stage of a RegNet: ``depth`` identical-width blocks, the first one strided.

    Attributes:
        depth: Number of blocks in the stage.
        width: Output channels of every block in the stage.
        group_width: Channels per group of the 3x3 grouped convolution.
    """

    depth: int
    width: int
    group_width: int


@dataclass(frozen=True)
class RegNetConfig:
    """Design-space parameters of one RegNet baseline (pycls ``REGNET`` config keys).

    Attributes:
        paper_name: The model's name in the paper and pycls, e.g. ``"RegNetX-600MF"``.
        block_type: ``"X"`` (residual bottleneck, grouped 3x3) or ``"Y"`` (X plus SE).
        depth: Total number of blocks, ``DEPTH``.
        initial_width: Width of the first block, ``W0``.
        width_slope: Slope of the linear width rule, ``WA``.
        width_multiplier: Ratio between quantised widths of consecutive stages, ``WM``.
        group_width: Channels per group of the 3x3 convolution, ``GROUP_W``.

    Every RegNetX/Y baseline has bottleneck ratio ``BOT_MUL`` = 1 (inner width = stage
    width), so it is not a field.
    """

    paper_name: str
    block_type: BlockType
    depth: int
    initial_width: int
    width_slope: float
    width_multiplier: float
    group_width: int

    @property
    def has_squeeze_excite(self) -> bool:
        """Whether the blocks carry a squeeze-excitation unit (RegNetY)."""
        return self.block_type == "Y"

    def stages(self) -> tuple[StageSpec, ...]:
        """Per-stage depth, width and group width derived from the design parameters.

        Returns:
            The stages in input-to-output order (four for every baseline here).
        """
        block_widths = _quantized_block_widths(
            self.initial_width, self.width_slope, self.width_multiplier, self.depth
        )
        stage_widths = sorted(set(block_widths))
        stages = []
        for width in stage_widths:
            stage_width, group_width = _compatible_width_and_group(width, self.group_width)
            stages.append(StageSpec(block_widths.count(width), stage_width, group_width))
        return tuple(stages)


def _quantized_block_widths(
    initial_width: int, slope: float, multiplier: float, depth: int
) -> list[int]:
    """Per-block widths of the paper's quantised linear rule (pycls ``generate_regnet``).

    Block ``j`` gets the continuous width ``w0 + wa * j``, which is snapped to the nearest
    ``w0 * wm**k`` (integer ``k``) in log space and then rounded to a multiple of 8.
    Python's ``round`` rounds half to even, like ``np.round`` in the reference.

    Args:
        initial_width: ``W0``.
        slope: ``WA``.
        multiplier: ``WM``.
        depth: ``DEPTH``.

    Returns:
        One width per block, non-decreasing.
    """
    widths = []
    for block_index in range(depth):
        continuous_width = initial_width + slope * block_index
        exponent = round(math.log(continuous_width / initial_width) / math.log(multiplier))
        snapped_width = initial_width * multiplier**exponent
        widths.append(round(snapped_width / WIDTH_QUANTUM) * WIDTH_QUANTUM)
    return widths


def _compatible_width_and_group(width: int, group_width: int) -> tuple[int, int]:
    """Makes a stage's width a multiple of its group width (pycls, bottleneck ratio 1).

    Args:
        width: Quantised stage width.
        group_width: Requested channels per group.

    Returns:
        The stage width rounded to the nearest multiple of the group width, and the group
        width, capped at the stage width so a group never exceeds the channels.
    """
    group_width = min(group_width, width)
    return max(group_width, round(width / group_width) * group_width), group_width


def _regnet(paper_name: str, depth: int, w0: int, wa: float, wm: float, gw: int) -> RegNetConfig:
    """Shorthand for one baseline row; the block type comes from the paper name."""
    block_type: BlockType = "X" if paper_name.startswith("RegNetX") else "Y"
    return RegNetConfig(paper_name, block_type, depth, w0, wa, wm, gw)


# (DEPTH, W0, WA, WM, GROUP_W) from pycls configs/dds_baselines/regnet{x,y}/*.yaml; the same
# numbers appear in timm/models/regnet.py ``model_cfgs``. The variant suffix is the
# paper's FLOPs in units of 100 MF: 006 = 600MF, 016 = 1.6GF, 320 = 32GF.
VARIANTS: dict[str, RegNetConfig] = {
    "regnetx_002": _regnet("RegNetX-200MF", 13, 24, 36.44, 2.49, 8),
    "regnetx_004": _regnet("RegNetX-400MF", 22, 24, 24.48, 2.54, 16),
    "regnetx_006": _regnet("RegNetX-600MF", 16, 48, 36.97, 2.24, 24),
    "regnetx_008": _regnet("RegNetX-800MF", 16, 56, 35.73, 2.28, 16),
    "regnetx_016": _regnet("RegNetX-1.6GF", 18, 80, 34.01, 2.25, 24),
    "regnetx_032": _regnet("RegNetX-3.2GF", 25, 88, 26.31, 2.25, 48),
    "regnetx_040": _regnet("RegNetX-4.0GF", 23, 96, 38.65, 2.43, 40),
    "regnetx_064": _regnet("RegNetX-6.4GF", 17, 184, 60.83, 2.07, 56),
    "regnetx_080": _regnet("RegNetX-8.0GF", 23, 80, 49.56, 2.88, 120),
    "regnetx_120": _regnet("RegNetX-12GF", 19, 168, 73.36, 2.37, 112),
    "regnetx_160": _regnet("RegNetX-16GF", 22, 216, 55.59, 2.1, 128),
    "regnetx_320": _regnet("RegNetX-32GF", 23, 320, 69.86, 2.0, 168),
    "regnety_002": _regnet("RegNetY-200MF", 13, 24, 36.44, 2.49, 8),
    "regnety_004": _regnet("RegNetY-400MF", 16, 48, 27.89, 2.09, 8),
    "regnety_006": _regnet("RegNetY-600MF", 15, 48, 32.54, 2.32, 16),
    "regnety_008": _regnet("RegNetY-800MF", 14, 56, 38.84, 2.4, 16),
    "regnety_016": _regnet("RegNetY-1.6GF", 27, 48, 20.71, 2.65, 24),
    "regnety_032": _regnet("RegNetY-3.2GF", 21, 80, 42.63, 2.66, 24),
    "regnety_040": _regnet("RegNetY-4.0GF", 22, 96, 31.41, 2.24, 64),
    "regnety_064": _regnet("RegNetY-6.4GF", 25, 112, 33.22, 2.27, 72),
    "regnety_080": _regnet("RegNetY-8.0GF", 17, 192, 76.82, 2.19, 56),
    "regnety_120": _regnet("RegNetY-12GF", 19, 168, 73.36, 2.37, 112),
    "regnety_160": _regnet("RegNetY-16GF", 18, 200, 106.23, 2.48, 112),
    "regnety_320": _regnet("RegNetY-32GF", 20, 232, 115.89, 2.53, 232),
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
    """Builds a randomly initialised RegNet classifier that outputs logits.

    The model takes float images in [0, 255] of shape ``(resolution, resolution, 3)``,
    channels last, and returns logits of shape ``(batch, num_classes)``.

    Args:
        variant: A key of ``VARIANTS``, e.g. ``"regnety_032"``.
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

    images = keras.Input(shape=(resolution, resolution, 3), name="images")
    # Keras 2's RegNet applications included preprocessing in the model: a Rescaling layer
    # taking [0, 255] pixels to [0, 1] (its "PreStem"); kept so costs match Keras 2.
    x = layers.Rescaling(1.0 / 255.0, name="prestem_rescaling")(images)
    x = _stem(x)
    in_width = STEM_WIDTH
    for stage_index, stage in enumerate(config.stages(), start=1):
        x = _stage(x, in_width, stage, config.has_squeeze_excite, f"stage{stage_index}")
        in_width = stage.width
    x = layers.GlobalAveragePooling2D(data_format=DATA_FORMAT, name="head_pool")(x)
    logits = layers.Dense(num_classes, name="head_logits")(x)
    return keras.Model(images, logits, name=variant)


def _config_of(variant: str) -> RegNetConfig:
    """Looks up a variant, naming the valid ones when it is unknown."""
    try:
        return VARIANTS[variant]
    except KeyError:
        raise KeyError(f"unknown RegNet variant {variant!r}; known: {sorted(VARIANTS)}") from None


def _conv_bn(
    x: keras.KerasTensor,
    filters: int,
    kernel_size: int,
    name: str,
    *,
    strides: int = 1,
    groups: int = 1,
    relu: bool = True,
) -> keras.KerasTensor:
    """Bias-free convolution, BatchNorm and optionally ReLU: the unit every block repeats."""
    x = layers.Conv2D(
        filters,
        kernel_size,
        strides=strides,
        padding="same",
        groups=groups,
        use_bias=False,
        kernel_initializer=CONV_INITIALIZER,
        data_format=DATA_FORMAT,
        name=f"{name}_conv",
    )(x)
    x = layers.BatchNormalization(momentum=BN_MOMENTUM, epsilon=BN_EPSILON, name=f"{name}_bn")(x)
    if relu:
        x = layers.ReLU(name=f"{name}_relu")(x)
    return x


def _stem(x: keras.KerasTensor) -> keras.KerasTensor:
    """The "simple" ImageNet stem: 3x3 stride-2 convolution to 32 channels."""
    return _conv_bn(x, STEM_WIDTH, 3, "stem", strides=2)


def _stage(
    x: keras.KerasTensor, in_width: int, stage: StageSpec, squeeze_excite: bool, name: str
) -> keras.KerasTensor:
    """A stage: its first block halves the resolution and changes the width."""
    for block_index in range(stage.depth):
        x = _block(
            x,
            in_width=in_width if block_index == 0 else stage.width,
            stage=stage,
            strides=2 if block_index == 0 else 1,
            squeeze_excite=squeeze_excite,
            name=f"{name}_block{block_index + 1}",
        )
    return x


def _block(
    inputs: keras.KerasTensor,
    in_width: int,
    stage: StageSpec,
    strides: int,
    squeeze_excite: bool,
    name: str,
) -> keras.KerasTensor:
    """Residual bottleneck block with a grouped 3x3 (X block), plus SE for Y blocks.

    The bottleneck ratio of every RegNetX/Y baseline is 1, so the inner width equals the
    stage width.
    """
    if strides != 1 or in_width != stage.width:
        shortcut = _conv_bn(inputs, stage.width, 1, f"{name}_shortcut", strides=strides, relu=False)
    else:
        shortcut = inputs
    x = _conv_bn(inputs, stage.width, 1, f"{name}_a")
    groups = stage.width // stage.group_width
    x = _conv_bn(x, stage.width, 3, f"{name}_b", strides=strides, groups=groups)
    if squeeze_excite:
        # pycls sizes the squeeze from the block's input width, not its inner width.
        x = _squeeze_excite(x, round(in_width * SE_RATIO), f"{name}_se")
    x = _conv_bn(x, stage.width, 1, f"{name}_c", relu=False)
    x = layers.Add(name=f"{name}_add")([x, shortcut])
    return layers.ReLU(name=f"{name}_out")(x)


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
        kernel_initializer=CONV_INITIALIZER,
        data_format=DATA_FORMAT,
        name=f"{name}_squeeze",
    )(x)
    x = layers.Conv2D(
        channels,
        1,
        activation="sigmoid",
        kernel_initializer=CONV_INITIALIZER,
        data_format=DATA_FORMAT,
        name=f"{name}_excite",
    )(x)
    return layers.Multiply(name=f"{name}_scale")([inputs, x])
