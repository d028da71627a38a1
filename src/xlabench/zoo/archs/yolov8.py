"""YOLOV8 object detector (keras-cv `yolo_v8_m_pascalvoc`) in plain Keras 3.

keras-cv 0.9 cannot be imported beside Keras 3.15, so the detector is rebuilt
here from its configuration (keras-cv `YOLOV8Backbone` + `YOLOV8Detector`,
which follow ultralytics' `yolov8.yaml`):

* backbone: CSPDarknet with C2f blocks and a final SPPF block;
* neck: the path-aggregation FPN over P3, P4, P5 (top-down, then bottom-up);
* head: decoupled per level, box branch (DFL distribution, 16 bins per side,
  4 sides = 64 channels) and class branch (one logit per class).

As in keras-cv's backbone presets (`include_rescaling=True`), the model starts
with `Rescaling(1/255)`, so it takes raw 0-255 pixels.

The model stops at the raw head tensors: no DFL decoding, no anchor-point
decoding, no non-max suppression. Unlike keras-cv, whose model ends with a
sigmoid on the classes and a float32 cast, the outputs here are class logits
in the compute dtype (the benchmark wants raw logits and no fixed dtypes).
"""

from __future__ import annotations

import dataclasses

import keras

# keras-cv / ultralytics BatchNorm settings (torch momentum 0.03 == keras 0.97).
BN_MOMENTUM = 0.97
BN_EPSILON = 1e-3
DFL_BINS = 16  # bins per box side in the DFL distribution (ultralytics reg_max)
BOX_CHANNELS = 4 * DFL_BINS
STRIDES = (8, 16, 32)  # output strides of P3, P4, P5

Tensor = keras.KerasTensor  # symbolic tensors: the model is built functionally


@dataclasses.dataclass(frozen=True)
class YOLOV8Config:
    """Architecture of one YOLOV8 scale.

    Attributes:
        stackwise_channels: Output channels of the four backbone stages (P2-P5).
        stackwise_depth: Number of bottlenecks in each stage's C2f block.
        fpn_depth: Number of bottlenecks in the two top-down C2f blocks of the
            neck (keras-cv `fpn_depth`). The two bottom-up blocks always use 2,
            as keras-cv does.
        include_rescaling: Prepend `Rescaling(1/255)` (keras-cv backbone flag).
        activation: Activation used after every BatchNorm.
    """

    stackwise_channels: tuple[int, int, int, int]
    stackwise_depth: tuple[int, int, int, int]
    fpn_depth: int
    include_rescaling: bool = True
    activation: str = "swish"


# Scale "m": ultralytics width 0.75 / depth 0.67 / max_channels 768, i.e. the
# keras-cv `yolo_v8_m_backbone` with `fpn_depth=2`. Another scale is one entry.
VARIANTS: dict[str, YOLOV8Config] = {
    "yolo_v8_m_pascalvoc": YOLOV8Config(
        stackwise_channels=(96, 192, 384, 576),
        stackwise_depth=(2, 4, 4, 2),
        fpn_depth=2,
    ),
}


def check_resolution(variant: str, resolution: int) -> str | None:
    """Says whether a square input resolution is valid for a variant.

    The neck concatenates P5 upsampled by 2 with P4 (and P4 with P3), and the
    stride-2 convs round up, so the input must be a multiple of 32.

    Args:
        variant: Key of `VARIANTS`.
        resolution: Input height and width in pixels.

    Returns:
        None if valid, otherwise a one-line reason.

    Raises:
        KeyError: If the variant is unknown.
    """
    _config(variant)
    stride = STRIDES[-1]
    if resolution < stride or resolution % stride:
        return f"YOLOV8 needs a resolution that is a multiple of {stride} (>= {stride})"
    return None


def build(variant: str, resolution: int, num_classes: int = 20) -> keras.Model:
    """Builds the raw YOLOV8 detector with random weights.

    Args:
        variant: Key of `VARIANTS`.
        resolution: Square input size; see `check_resolution`.
        num_classes: Number of object classes.

    Returns:
        A functional `keras.Model` from a `(resolution, resolution, 3)` image of
        0-255 pixels to a dict, with N = sum over strides 8, 16, 32 of
        (resolution / stride) ** 2 anchor points (ordered P3, P4, P5, each
        row-major):

        * `"boxes"`: (batch, N, 64) raw DFL logits, 4 sides (left, top, right,
          bottom) x 16 bins; softmax over the bins gives each side's distance
          from the anchor point in units of its stride.
        * `"classes"`: (batch, N, num_classes) class logits, before sigmoid.

    Raises:
        KeyError: If the variant is unknown.
        ValueError: If the resolution is invalid.
    """
    config = _config(variant)
    reason = check_resolution(variant, resolution)
    if reason:
        raise ValueError(f"{variant} at {resolution}: {reason}")
    images = keras.Input((resolution, resolution, 3), name="images")
    x = images
    if config.include_rescaling:
        x = keras.layers.Rescaling(1.0 / 255.0, name="rescaling")(x)
    features = _backbone(x, config)
    features = _pa_fpn(features, config)
    outputs = _head(features, num_classes, config.activation)
    return keras.Model(images, outputs, name=variant)


def _config(variant: str) -> YOLOV8Config:
    if variant not in VARIANTS:
        raise KeyError(f"unknown YOLOV8 variant {variant!r}; known: {sorted(VARIANTS)}")
    return VARIANTS[variant]


def _conv_bn(
    x: Tensor, filters: int, kernel: int, stride: int, activation: str, name: str
) -> Tensor:
    """Conv (no bias) + BatchNorm + activation, keras-cv's `apply_conv_bn`.

    Explicit symmetric zero padding + "valid" reproduces torch padding=k//2
    (Keras "same" pads stride-2 convs asymmetrically) and keras-cv's graph.
    """
    if kernel > 1:
        x = keras.layers.ZeroPadding2D(kernel // 2, name=f"{name}_pad")(x)
    x = keras.layers.Conv2D(
        filters, kernel, strides=stride, padding="valid", use_bias=False, name=f"{name}_conv"
    )(x)
    x = keras.layers.BatchNormalization(
        momentum=BN_MOMENTUM, epsilon=BN_EPSILON, name=f"{name}_bn"
    )(x)
    return keras.layers.Activation(activation, name=name)(x)


def _c2f(x: Tensor, filters: int, depth: int, shortcut: bool, activation: str, name: str) -> Tensor:
    """C2f block: 1x1 conv, split in two, chain of bottlenecks, concat all, 1x1 conv."""
    hidden = filters // 2
    x = _conv_bn(x, 2 * hidden, 1, 1, activation, f"{name}_pre")
    parts = list(keras.ops.split(x, 2, axis=-1))
    for i in range(depth):
        y = _conv_bn(parts[-1], hidden, 3, 1, activation, f"{name}_b{i}_1")
        y = _conv_bn(y, hidden, 3, 1, activation, f"{name}_b{i}_2")
        if shortcut:
            y = keras.layers.Add(name=f"{name}_b{i}_add")([parts[-1], y])
        parts.append(y)
    x = keras.layers.Concatenate(name=f"{name}_concat")(parts)
    return _conv_bn(x, filters, 1, 1, activation, f"{name}_out")


def _sppf(x: Tensor, activation: str, name: str, pool_size: int = 5) -> Tensor:
    """SPPF: three chained 5x5 max-pools (= pools of 5, 9, 13), concat, 1x1 conv."""
    channels = x.shape[-1]
    x = _conv_bn(x, channels // 2, 1, 1, activation, f"{name}_pre")
    pooled = [x]
    for i in range(3):
        pool = keras.layers.MaxPooling2D(pool_size, 1, padding="same", name=f"{name}_pool{i}")
        pooled.append(pool(pooled[-1]))
    x = keras.layers.Concatenate(name=f"{name}_concat")(pooled)
    return _conv_bn(x, channels, 1, 1, activation, f"{name}_out")


def _backbone(x: Tensor, config: YOLOV8Config) -> list[Tensor]:
    """CSPDarknet backbone; returns the P3, P4, P5 feature maps."""
    act = config.activation
    stem = config.stackwise_channels[0]
    x = _conv_bn(x, stem // 2, 3, 2, act, "stem_1")
    x = _conv_bn(x, stem, 3, 2, act, "stem_2")
    stages = list(zip(config.stackwise_channels, config.stackwise_depth, strict=True))
    features = []
    for i, (channels, depth) in enumerate(stages):
        name = f"stack{i + 1}"
        if i > 0:
            x = _conv_bn(x, channels, 3, 2, act, f"{name}_downsample")
        x = _c2f(x, channels, depth, True, act, f"{name}_c2f")
        if i == len(stages) - 1:
            x = _sppf(x, act, f"{name}_sppf")
        features.append(x)
    return features[1:]  # P3, P4, P5 (stage 1 is P2)


def _pa_fpn(features: list[Tensor], config: YOLOV8Config) -> list[Tensor]:
    """Path-aggregation neck: top-down to P3, then bottom-up back to P5."""
    act = config.activation
    p3, p4, p5 = features
    up = keras.layers.UpSampling2D(2, interpolation="nearest", name="fpn_p5_up")(p5)
    x = keras.layers.Concatenate(name="fpn_join_p4")([up, p4])
    p4p5 = _c2f(x, p4.shape[-1], config.fpn_depth, False, act, "fpn_p4p5")
    up = keras.layers.UpSampling2D(2, interpolation="nearest", name="fpn_p4_up")(p4p5)
    x = keras.layers.Concatenate(name="fpn_join_p3")([up, p3])
    out3 = _c2f(x, p3.shape[-1], config.fpn_depth, False, act, "fpn_p3p4p5")
    x = _conv_bn(out3, out3.shape[-1], 3, 2, act, "fpn_down1")
    x = keras.layers.Concatenate(name="fpn_join_down1")([x, p4p5])
    out4 = _c2f(x, p4p5.shape[-1], 2, False, act, "fpn_down1_c2f")
    x = _conv_bn(out4, out4.shape[-1], 3, 2, act, "fpn_down2")
    x = keras.layers.Concatenate(name="fpn_join_down2")([x, p5])
    out5 = _c2f(x, p5.shape[-1], 2, False, act, "fpn_down2_c2f")
    return [out3, out4, out5]


def _branch(x: Tensor, hidden: int, out: int, activation: str, name: str) -> Tensor:
    """Two 3x3 conv-BN-act then a 1x1 conv with bias, flattened to (batch, HW, out)."""
    x = _conv_bn(x, hidden, 3, 1, activation, f"{name}_1")
    x = _conv_bn(x, hidden, 3, 1, activation, f"{name}_2")
    x = keras.layers.Conv2D(out, 1, name=f"{name}_3_conv")(x)
    return keras.layers.Reshape((-1, out), name=f"{name}_flat")(x)


def _head(features: list[Tensor], num_classes: int, activation: str) -> dict[str, Tensor]:
    """Decoupled head shared in design (not weights) across P3, P4, P5."""
    # Intermediate widths as in keras-cv / ultralytics Detect: from P3's width.
    box_hidden = max(BOX_CHANNELS, features[0].shape[-1] // 4)
    class_hidden = max(num_classes, features[0].shape[-1])
    boxes, classes = [], []
    for i, feature in enumerate(features):
        name = f"head_{i + 1}"
        boxes.append(_branch(feature, box_hidden, BOX_CHANNELS, activation, f"{name}_box"))
        classes.append(_branch(feature, class_hidden, num_classes, activation, f"{name}_class"))
    return {
        "boxes": keras.layers.Concatenate(axis=1, name="boxes")(boxes),
        "classes": keras.layers.Concatenate(axis=1, name="classes")(classes),
    }
