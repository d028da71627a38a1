"""keras.applications models, named as the 2023 study named them (its `keras_legacy` source).

Published parameter counts are the exact `count_params()` of the independent Keras 2
implementation (tf-keras 2.21.0, `weights=None`, default input size), i.e. the "total" count
including BatchNorm moving statistics, which is also what keras.io's applications table rounds.
"""

from __future__ import annotations

from xlabench.zoo.registry import ModelEntry, ResolutionRule

BUILDER = "xlabench.zoo.applications:build"
TF_KERAS = "tf-keras 2.21.0 tf_keras.applications.{c}(weights=None).count_params(); keras.io/api/applications"
PAPERS = {
    "ResNet_V1": "https://arxiv.org/abs/1512.03385",
    "ResNet_V2": "https://arxiv.org/abs/1603.05027",
    "inception_v3": "https://arxiv.org/abs/1512.00567",
    "inception_resnetv2": "https://arxiv.org/abs/1602.07261",
    "ConvNeXt": "https://arxiv.org/abs/2201.03545",
    "EfficientNet_V1": "https://arxiv.org/abs/1905.11946",
    "EfficientNet_V2": "https://arxiv.org/abs/2104.00298",
    "Xception": "https://arxiv.org/abs/1610.02357",
    "MobileNet_V1": "https://arxiv.org/abs/1704.04861",
    "MobileNet_V2": "https://arxiv.org/abs/1801.04381",
    "MobileNet_V3": "https://arxiv.org/abs/1905.02244",
    "VGG": "https://arxiv.org/abs/1409.1556",
    "DenseNet": "https://arxiv.org/abs/1608.06993",
    "NASNet": "https://arxiv.org/abs/1707.07012",
}
#: Keras refuses inputs smaller than these (stride-2 stages / valid-padded stems).
MIN_32 = ResolutionRule(32, why="five stride-2 stages")
MIN_75 = ResolutionRule(75, why="the Inception stem needs at least 75 pixels")
MIN_71 = ResolutionRule(71, why="the Xception stem needs at least 71 pixels")
#: The study ran NASNetLarge at 331, the only size its reference configuration defines.
NASNET_LARGE = ResolutionRule(331, fixed=331, why="NASNetLarge is defined at 331x331")

# (name, family, keras constructor, default resolution, total params, aliases, rule, heavy)
_ROWS: tuple[tuple[str, str, str, int, int, tuple[str, ...], ResolutionRule, bool], ...] = (
    ("resnet50_v1", "ResNet_V1", "ResNet50", 224, 25_636_712, ("resnet50", "resnet50v1"), MIN_32, False),
    ("resnet101_v1", "ResNet_V1", "ResNet101", 224, 44_707_176, ("resnet101", "resnet101v1"), MIN_32, False),
    ("resnet152_v1", "ResNet_V1", "ResNet152", 224, 60_419_944, ("resnet152", "resnet152v1"), MIN_32, False),
    ("resnet50_v2", "ResNet_V2", "ResNet50V2", 224, 25_613_800, ("resnet50v2",), MIN_32, False),
    ("resnet101_v2", "ResNet_V2", "ResNet101V2", 224, 44_675_560, ("resnet101v2",), MIN_32, False),
    ("resnet152_v2", "ResNet_V2", "ResNet152V2", 224, 60_380_648, ("resnet152v2",), MIN_32, False),
    ("inception_v3", "Inception", "InceptionV3", 299, 23_851_784, ("inceptionv3",), MIN_75, False),
    ("inception_resnetv2", "Inception", "InceptionResNetV2", 299, 55_873_736,
     ("inception_resnet_v2", "inceptionresnetv2"), MIN_75, False),
    ("convnext_tiny", "ConvNeXt", "ConvNeXtTiny", 224, 28_589_128, ("convnexttiny",), MIN_32, False),
    ("convnext_small", "ConvNeXt", "ConvNeXtSmall", 224, 50_223_688, ("convnextsmall",), MIN_32, False),
    ("convnext_base", "ConvNeXt", "ConvNeXtBase", 224, 88_591_464, ("convnextbase",), MIN_32, False),
    ("convnext_large", "ConvNeXt", "ConvNeXtLarge", 224, 197_767_336, ("convnextlarge",), MIN_32, True),
    ("convnext_xlarge", "ConvNeXt", "ConvNeXtXLarge", 224, 350_196_968, ("convnextxlarge",), MIN_32, True),
    ("efficient_b0", "EfficientNet_V1", "EfficientNetB0", 224, 5_330_571, ("efficientnet_b0", "efficientnetb0"), MIN_32, False),
    ("efficient_b1", "EfficientNet_V1", "EfficientNetB1", 240, 7_856_239, ("efficientnet_b1", "efficientnetb1"), MIN_32, False),
    ("efficient_b2", "EfficientNet_V1", "EfficientNetB2", 260, 9_177_569, ("efficientnet_b2", "efficientnetb2"), MIN_32, False),
    ("efficient_b3", "EfficientNet_V1", "EfficientNetB3", 300, 12_320_535, ("efficientnet_b3", "efficientnetb3"), MIN_32, False),
    ("efficient_b4", "EfficientNet_V1", "EfficientNetB4", 380, 19_466_823, ("efficientnet_b4", "efficientnetb4"), MIN_32, False),
    ("efficient_b5", "EfficientNet_V1", "EfficientNetB5", 456, 30_562_527, ("efficientnet_b5", "efficientnetb5"), MIN_32, False),
    ("efficient_b6", "EfficientNet_V1", "EfficientNetB6", 528, 43_265_143, ("efficientnet_b6", "efficientnetb6"), MIN_32, False),
    ("efficient_b7", "EfficientNet_V1", "EfficientNetB7", 600, 66_658_687, ("efficientnet_b7", "efficientnetb7"), MIN_32, False),
    ("efficient_b0_v2", "EfficientNet_V2", "EfficientNetV2B0", 224, 7_200_312, ("efficientnetv2_b0", "efficientnet_v2_b0"), MIN_32, False),
    ("efficient_b1_v2", "EfficientNet_V2", "EfficientNetV2B1", 240, 8_212_124, ("efficientnetv2_b1", "efficientnet_v2_b1"), MIN_32, False),
    ("efficient_b2_v2", "EfficientNet_V2", "EfficientNetV2B2", 260, 10_178_374, ("efficientnetv2_b2", "efficientnet_v2_b2"), MIN_32, False),
    ("efficient_b3_v2", "EfficientNet_V2", "EfficientNetV2B3", 300, 14_467_622, ("efficientnetv2_b3", "efficientnet_v2_b3"), MIN_32, False),
    ("efficient_s_v2", "EfficientNet_V2", "EfficientNetV2S", 384, 21_612_360, ("efficientnetv2_s", "efficientnet_v2_s"), MIN_32, False),
    ("efficient_m_v2", "EfficientNet_V2", "EfficientNetV2M", 480, 54_431_388, ("efficientnetv2_m", "efficientnet_v2_m"), MIN_32, False),
    ("efficient_l_v2", "EfficientNet_V2", "EfficientNetV2L", 480, 119_027_848, ("efficientnetv2_l", "efficientnet_v2_l"), MIN_32, True),
    ("xception", "Xception", "Xception", 299, 22_910_480, (), MIN_71, False),
    ("mobilenet_v1", "MobileNet_V1", "MobileNet", 224, 4_253_864, ("mobilenet", "mobilenetv1"), MIN_32, False),
    ("mobilenet_v2", "MobileNet_V2", "MobileNetV2", 224, 3_538_984, ("mobilenetv2",), MIN_32, False),
    ("mobilenet_v3_small", "MobileNet_V3", "MobileNetV3Small", 224, 2_554_968, ("mobilenetv3_small", "mobilenetv3small"), MIN_32, False),
    ("mobilenet_v3_large", "MobileNet_V3", "MobileNetV3Large", 224, 5_507_432, ("mobilenetv3_large", "mobilenetv3large"), MIN_32, False),
    ("vgg16", "VGG", "VGG16", 224, 138_357_544, ("vgg_16",), MIN_32, True),
    ("vgg19", "VGG", "VGG19", 224, 143_667_240, ("vgg_19",), MIN_32, True),
    ("densenet_121", "DenseNet", "DenseNet121", 224, 8_062_504, ("densenet121",), MIN_32, False),
    ("densenet_169", "DenseNet", "DenseNet169", 224, 14_307_880, ("densenet169",), MIN_32, False),
    ("densenet_201", "DenseNet", "DenseNet201", 224, 20_242_984, ("densenet201",), MIN_32, False),
    ("nasnet_mobile", "NASNet", "NASNetMobile", 224, 5_326_716, ("nasnetmobile",), MIN_32, False),
    ("nasnet_large", "NASNet", "NASNetLarge", 331, 88_949_818, ("nasnetlarge",), NASNET_LARGE, True),
)

NOTES = {
    "mobilenet_v3_small": "includes Keras' input rescaling layer (the default)",
    "mobilenet_v3_large": "includes Keras' input rescaling layer (the default)",
}
#: Keras 3.15's NASNetMobile raises on the torch backend ("not available with the torch backend
#: at this time due to an outstanding bug"); NASNetLarge does not, and its torch output matches
#: TensorFlow's with the same weights (max |diff| 2e-6 of the logits' scale at 331).
#: tests/zoo/test_zoo.py checks the refusal is still real.
NASNET_MOBILE_TORCH = (
    ("torch", "Keras 3.15 refuses NASNetMobile on the torch backend (an open Keras bug)"),
)
#: ConvNeXt's depthwise convolutions are Conv2D(groups=channels): the grouped-convolution path
#: tf2onnx cannot take (measured on convnext_tiny with bench/runtime_coverage.py: ONNX Runtime
#: "INVALID_GRAPH" at the ..._depthwise_conv StatefulPartitionedCall; the variants share it).
CONVNEXT_ONNX = (
    ("onnxruntime", "Keras-on-TensorFlow runs ConvNeXt's depthwise convolutions (Conv2D with "
     "groups) as a nested tf.function(jit_compile=True), which tf2onnx leaves as an unconverted "
     "StatefulPartitionedCall: ONNX Runtime rejects the graph as invalid"),
)
UNSUPPORTED = {"nasnet_mobile": NASNET_MOBILE_TORCH,
               **{f"convnext_{size}": CONVNEXT_ONNX
                  for size in ("tiny", "small", "base", "large", "xlarge")}}


def _entry(row: tuple) -> ModelEntry:
    name, family, constructor, resolution, params, aliases, rule, heavy = row
    return ModelEntry(
        name=name,
        family=family,
        kind="cnn",
        source="keras.applications",
        builder=BUILDER,
        variant=constructor,
        default_resolution=resolution,
        rule=rule,
        params=params,
        params_count="total",
        params_source=TF_KERAS.format(c=constructor),
        paper=PAPERS.get(name, PAPERS.get(family, "")),
        aliases=aliases,
        study_resolutions=(resolution,),
        heavy=heavy,
        imagenet_weights=True,
        unsupported=UNSUPPORTED.get(name, ()),
        notes=NOTES.get(name, ""),
    )


ENTRIES: tuple[ModelEntry, ...] = tuple(_entry(row) for row in _ROWS)
