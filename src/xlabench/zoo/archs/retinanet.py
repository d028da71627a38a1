"""RetinaNet with a ResNet50 (v1) backbone (keras-cv `retinanet_resnet50_pascalvoc`).

keras-cv 0.9 cannot be imported beside Keras 3.15, so the detector is assembled
from keras-hub components built from constructor arguments (never presets):

* `keras_hub.models.ResNetBackbone`: ResNet50 v1 (bottleneck blocks 3-4-6-3,
  convs without bias, as keras-cv's `resnet50_imagenet`);
* `keras_hub.models.RetinaNetBackbone`: its FPN turns C3-C5 into P3-P7 with
  256 channels; `use_p5=True` makes P6 a stride-2 conv on the backbone's C5
  (2048 channels), P7 a stride-2 conv on relu(P6), as in keras-cv;
* keras-hub's `PredictionHead`: one classification and one box head, each
  shared by all five levels, 3 conv+relu layers of 256 before the output conv
  (keras-cv's `num_conv_layers=3`; keras-hub's detector defaults to 4).

As in keras-cv's `resnet50_imagenet` preset (`include_rescaling=True`), the
model starts with `Rescaling(1/255)`, so it takes raw 0-255 pixels.

The model stops at the raw head tensors: no anchor decoding, no non-max
suppression.
"""

from __future__ import annotations

import dataclasses

import keras
import keras_hub
from keras_hub.src.models.retinanet.prediction_head import PredictionHead


@dataclasses.dataclass(frozen=True)
class RetinaNetConfig:
    """Architecture of one RetinaNet variant.

    Attributes:
        resnet_blocks: Bottleneck blocks per ResNet stage (C2-C5).
        resnet_filters: Bottleneck widths per stage (outputs are 4x these).
        min_level: Finest pyramid level (P3, stride 8).
        max_level: Coarsest pyramid level (P7, stride 128).
        head_conv_layers: Conv+relu layers in each head before its output conv.
        head_filters: Width of those layers (the FPN width in keras-hub is 256).
        anchor_scales: Anchor scales per location.
        anchor_aspect_ratios: Anchor aspect ratios per location.
        prior_probability: Focal-loss prior used to initialise the class bias.
        include_rescaling: Prepend `Rescaling(1/255)` (keras-cv backbone flag).
    """

    resnet_blocks: tuple[int, int, int, int] = (3, 4, 6, 3)
    resnet_filters: tuple[int, int, int, int] = (64, 128, 256, 512)
    min_level: int = 3
    max_level: int = 7
    head_conv_layers: int = 3
    head_filters: int = 256
    anchor_scales: int = 3
    anchor_aspect_ratios: tuple[float, ...] = (0.5, 1.0, 2.0)
    prior_probability: float = 0.01
    include_rescaling: bool = True

    @property
    def anchors_per_location(self) -> int:
        """Anchors at each feature-map position (9 for 3 scales x 3 ratios)."""
        return self.anchor_scales * len(self.anchor_aspect_ratios)


VARIANTS: dict[str, RetinaNetConfig] = {
    "retinanet_resnet50_pascalvoc": RetinaNetConfig(),
}


# The ResNet's deepest output (C5) has stride 32; P6 and P7 come from stride-2
# "same" convs, which accept any size (they round up), so 32 is the constraint.
_BACKBONE_STRIDE = 32


def check_resolution(variant: str, resolution: int) -> str | None:
    """Says whether a square input resolution is valid for a variant.

    The FPN adds C5 upsampled by 2 to C4 (and C4 to C3) and the backbone's
    stride-2 layers round up, so the input must be a multiple of 32 (C5's
    stride). P6/P7 (strides 64, 128) need no more: their stride-2 convs use
    "same" padding, e.g. 320 gives P7 of 3x3, as ceil(320 / 128).

    Args:
        variant: Key of `VARIANTS`.
        resolution: Input height and width in pixels.

    Returns:
        None if valid, otherwise a one-line reason.

    Raises:
        KeyError: If the variant is unknown.
    """
    _config(variant)
    stride = _BACKBONE_STRIDE
    if resolution < stride or resolution % stride:
        return (
            f"RetinaNet-ResNet50 needs a resolution that is a multiple of {stride} "
            f"(>= {stride}), the stride of C5"
        )
    return None


def build(variant: str, resolution: int, num_classes: int = 20) -> keras.Model:
    """Builds the raw RetinaNet with random weights.

    Args:
        variant: Key of `VARIANTS`.
        resolution: Square input size; see `check_resolution`.
        num_classes: Number of object classes.

    Returns:
        A functional `keras.Model` from a `(resolution, resolution, 3)` image of
        0-255 pixels to a dict, with N = 9 x sum over levels 3-7 of
        ceil(resolution / 2**level) ** 2 anchors (ordered P3..P7, each
        row-major, then the 9 anchors of a position):

        * `"boxes"`: (batch, N, 4) box regression deltas of each anchor
          (centre offsets and log size ratios, before the box variance).
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
    pyramid = _pyramid(config, resolution)(x)
    outputs = _heads(pyramid, config, num_classes)
    return keras.Model(images, outputs, name=variant)


def _config(variant: str) -> RetinaNetConfig:
    if variant not in VARIANTS:
        raise KeyError(f"unknown RetinaNet variant {variant!r}; known: {sorted(VARIANTS)}")
    return VARIANTS[variant]


def _pyramid(config: RetinaNetConfig, resolution: int) -> keras.Model:
    """ResNet50 v1 + FPN as a keras-hub `RetinaNetBackbone` (outputs P3..P7)."""
    shape = (resolution, resolution, 3)
    resnet = keras_hub.models.ResNetBackbone(
        input_conv_filters=[64],
        input_conv_kernel_sizes=[7],
        stackwise_num_filters=list(config.resnet_filters),
        stackwise_num_blocks=list(config.resnet_blocks),
        stackwise_num_strides=[1, 2, 2, 2],
        block_type="bottleneck_block",
        use_pre_activation=False,  # v1: BN + relu after each conv
        image_shape=shape,
        name="resnet50",
    )
    return keras_hub.models.RetinaNetBackbone(
        image_encoder=resnet,
        min_level=config.min_level,
        max_level=config.max_level,
        use_p5=True,  # P6 from C5 itself, as keras-cv's FeaturePyramid
        use_fpn_batch_norm=False,
        image_shape=shape,
        name="retinanet_backbone",
    )


def _heads(
    pyramid: dict[str, keras.KerasTensor], config: RetinaNetConfig, num_classes: int
) -> dict[str, keras.KerasTensor]:
    """Applies the shared class and box heads to every level and flattens."""
    anchors = config.anchors_per_location
    class_head = PredictionHead(
        output_filters=anchors * num_classes,
        num_filters=config.head_filters,
        num_conv_layers=config.head_conv_layers,
        # The focal-loss prior belongs on the class logits (keras-cv, paper).
        use_prior_probability=True,
        prior_probability=config.prior_probability,
        name="classification_head",
    )
    box_head = PredictionHead(
        output_filters=anchors * 4,
        num_filters=config.head_filters,
        num_conv_layers=config.head_conv_layers,
        name="box_head",
    )
    boxes, classes = [], []
    for level in range(config.min_level, config.max_level + 1):
        feature = pyramid[f"P{level}"]
        box = keras.layers.Reshape((-1, 4), name=f"box_P{level}")(box_head(feature))
        cls = keras.layers.Reshape((-1, num_classes), name=f"class_P{level}")(class_head(feature))
        boxes.append(box)
        classes.append(cls)
    return {
        "boxes": keras.layers.Concatenate(axis=1, name="boxes")(boxes),
        "classes": keras.layers.Concatenate(axis=1, name="classes")(classes),
    }
