"""Models that are not in keras.applications: keras-hub builds and our own Keras 3 code.

The published parameter counts below are the test table: each variant's built model must match
its count within 0.5% (tests/zoo/test_zoo.py), and each cites where the number comes from.
"""

from __future__ import annotations

from xlabench.zoo.registry import ModelEntry, ResolutionRule

DETECTOR_RULE = ResolutionRule(32, multiple=32, why="the deepest feature map has stride 32")
KERAS_CV_PRESETS = "keras-cv 0.9.0 {file}, preset {name!r} metadata 'params' (count_params)"

DETECTORS: tuple[ModelEntry, ...] = (
    ModelEntry(
        name="yolo_v8_m_pascalvoc", family="YOLOV8", kind="detector", source="xlabench",
        builder="xlabench.zoo.archs.yolov8:build", variant="yolo_v8_m_pascalvoc",
        default_resolution=640, rule=DETECTOR_RULE, params=25_901_004, params_count="total",
        params_source=KERAS_CV_PRESETS.format(file="yolo_v8_detector_presets.py",
                                              name="yolo_v8_m_pascalvoc"),
        paper="https://arxiv.org/abs/2305.09972", aliases=("yolov8m", "yolov8_m", "yolo_v8_m"),
        num_classes=20, study_resolutions=(320, 640),
        notes="raw head outputs (DFL box logits, class logits); no box decoding, no NMS",
    ),
    ModelEntry(
        name="retinanet_resnet50_pascalvoc", family="RetinaNet", kind="detector",
        source="keras-hub", builder="xlabench.zoo.archs.retinanet:build",
        variant="retinanet_resnet50_pascalvoc", default_resolution=640, rule=DETECTOR_RULE,
        params=35_596_952, params_count="total",
        params_source=KERAS_CV_PRESETS.format(file="retinanet_presets.py",
                                              name="retinanet_resnet50_pascalvoc"),
        paper="https://arxiv.org/abs/1708.02002", aliases=("retinanet", "retinanet_resnet50"),
        num_classes=20, study_resolutions=(320, 640),
        notes="raw head outputs (box deltas, class logits); no anchor decoding, no NMS",
    ),
)

# --------------------------------------------------------------------------- CNNs (ours)
#: timm's ImageNet results table: trainable parameters to 10k (pycls's MODEL_ZOO.md gives only
#: 100k, too coarse for a 0.5% check on the small RegNets). Same pycls-trained models.
TIMM_RESULTS = (
    "huggingface/pytorch-image-models@aa4b5850 results/results-imagenet.csv, "
    "row {row}, column param_count ({millions}M)"
)
TF_KERAS_RS = (
    "tf-keras 2.21.0 tf_keras.applications.ResNetRS{depth}(weights=None, "
    "input_shape=(224, 224, 3)).count_params()"
)
CNN_RULE = ResolutionRule(32, why="five stride-2 stages")
REGNET_MILLIONS = {
    "x": {"002": 2.68, "004": 5.16, "006": 6.20, "008": 7.26, "016": 9.19, "032": 15.30,
          "040": 22.12, "064": 26.21, "080": 39.57, "120": 46.11, "160": 54.28, "320": 107.81},
    "y": {"002": 3.16, "004": 4.34, "006": 6.06, "008": 6.26, "016": 11.20, "032": 19.44,
          "040": 20.65, "064": 30.58, "080": 39.18, "120": 51.82, "160": 83.59, "320": 145.05},
}
RESNET_RS_PARAMS = {50: 35_745_288, 101: 63_724_296, 152: 86_773_256, 200: 93_386_248,
                    270: 130_104_520, 350: 164_268_360, 420: 192_262_216}


#: Measured with tf2onnx 1.17 / Keras 3.15 (bench/runtime_coverage.py): RegNets' grouped
#: convolutions (and ConvNeXt's depthwise ones, a Conv2D with groups = channels).
REGNET_ONNX = ("onnxruntime", "Keras-on-TensorFlow runs grouped convolutions as a nested "
               "tf.function(jit_compile=True), which tf2onnx leaves as an unconverted "
               "StatefulPartitionedCall: ONNX Runtime rejects the graph as invalid")


def _regnet(block: str, size: str, millions: float) -> ModelEntry:
    name = f"regnet{block}_{size}"
    return ModelEntry(
        name=name, family=f"RegNet_{block.upper()}", kind="cnn", source="xlabench",
        builder="xlabench.zoo.archs.regnet:build", variant=name, default_resolution=224,
        rule=CNN_RULE, params=round(millions * 1e6), params_count="trainable",
        params_source=TIMM_RESULTS.format(row=f"{name}.pycls_in1k", millions=millions),
        paper="https://arxiv.org/abs/2003.13678", aliases=(f"regnet{block}{size}",),
        study_resolutions=(224,), heavy=millions > 100, unsupported=(REGNET_ONNX,),
        notes="the 2023 study built regnet?_006/_008/_016 with the 008/016/002 constructors; "
        "xlabench builds what the name says",
    )


def _resnet_rs(depth: int, params: int) -> ModelEntry:
    name = f"resnetrs_{depth}"
    return ModelEntry(
        name=name, family="ResNetRS", kind="cnn", source="xlabench",
        builder="xlabench.zoo.archs.resnet_rs:build", variant=name, default_resolution=224,
        rule=CNN_RULE, params=params, params_count="total",
        params_source=TF_KERAS_RS.format(depth=depth), paper="https://arxiv.org/abs/2103.07579",
        aliases=(f"resnetrs{depth}", f"resnet_rs_{depth}"), study_resolutions=(224,),
        heavy=params > 100e6,
    )


CNNS: tuple[ModelEntry, ...] = (
    *(_regnet(b, size, m) for b, sizes in REGNET_MILLIONS.items() for size, m in sizes.items()),
    *(_resnet_rs(depth, params) for depth, params in RESNET_RS_PARAMS.items()),
)

# ------------------------------------------------------------- transformers and MLPs
TIMM_ROW = "huggingface/pytorch-image-models results/{table}, row {row}, column param_count"
RESULTS = "results-imagenet.csv"
PAPERS = {
    "ViT": "https://arxiv.org/abs/2010.11929",
    "DeiT": "https://arxiv.org/abs/2012.12877",
    "Swin": "https://arxiv.org/abs/2103.14030",
    "Swin-S3": "https://arxiv.org/abs/2111.14725",
    "MLP-Mixer": "https://arxiv.org/abs/2105.01601",
}


def _patch_rule(patch: int) -> ResolutionRule:
    return ResolutionRule(max(16, patch), multiple=patch, why=f"whole {patch}x{patch} patches")


FIXED_384 = ResolutionRule(384, fixed=384, why="a 384-pixel variant: use the 224 one otherwise")
SWIN_RULE = ResolutionRule(
    224, multiple=224, why="every stage's map must divide into 7x7 windows (window sizes differ "
    "per stage in Swin-S3)"
)

# (name, variant, family, kind, source, module, rule, params, timm row, aliases, heavy)
_NON_CNN_ROWS = (
    ("vit_s16", "vit_s16", "ViT", "transformer", "keras-hub", "vit", _patch_rule(16), 22_050_000,
     "vit_small_patch16_224.augreg_in21k_ft_in1k", ("vit_small_patch16_224",), False),
    ("vit_b8", "vit_b8", "ViT", "transformer", "keras-hub", "vit", _patch_rule(8), 86_580_000,
     "vit_base_patch8_224.augreg_in21k_ft_in1k", ("vit_base_patch8_224",), False),
    ("vit_b16", "vit_b16", "ViT", "transformer", "keras-hub", "vit", _patch_rule(16), 86_570_000,
     "vit_base_patch16_224.augreg_in21k_ft_in1k", ("vit_base_patch16_224",), False),
    ("vit_b32", "vit_b32", "ViT", "transformer", "keras-hub", "vit", _patch_rule(32), 88_220_000,
     "vit_base_patch32_224.augreg_in21k_ft_in1k", ("vit_base_patch32_224",), False),
    ("vit_l16", "vit_l16", "ViT", "transformer", "keras-hub", "vit", _patch_rule(16), 304_330_000,
     "vit_large_patch16_224.augreg_in21k_ft_in1k", ("vit_large_patch16_224",), True),
    ("vit_r26_s32", "vit_r26_s32", "ViT", "hybrid", "xlabench", "vit_hybrid", _patch_rule(32),
     36_430_000, "vit_small_r26_s32_224.augreg_in21k_ft_in1k", ("vit_small_r26_s32_224",), False),
    ("vit_r50_l32", "vit_r50_l32", "ViT", "hybrid", "xlabench", "vit_hybrid", _patch_rule(32),
     328_990_000, "vit_large_r50_s32_224.augreg_in21k_ft_in1k", ("vit_large_r50_s32_224",), True),
    ("deit_tiny_patch16_224", "deit_tiny_patch16_224", "DeiT", "transformer", "keras-hub", "vit",
     _patch_rule(16), 5_720_000, "deit_tiny_patch16_224.fb_in1k", ("deit_tiny",), False),
    ("deit_small_patch16_224", "deit_small_patch16_224", "DeiT", "transformer", "keras-hub", "vit",
     _patch_rule(16), 22_050_000, "deit_small_patch16_224.fb_in1k", ("deit_small",), False),
    ("deit_base_patch16_224", "deit_base_patch16_224", "DeiT", "transformer", "keras-hub", "vit",
     _patch_rule(16), 86_570_000, "deit_base_patch16_224.fb_in1k", ("deit_base",), False),
    ("deit_tiny_distilled_patch16_224", "deit_tiny_distilled_patch16_224", "DeiT", "transformer",
     "keras-hub", "vit", _patch_rule(16), 5_910_000, "deit_tiny_distilled_patch16_224.fb_in1k",
     ("deit_tiny_distilled",), False),
    ("deit_small_distilled_patch16_224", "deit_small_distilled_patch16_224", "DeiT",
     "transformer", "keras-hub", "vit", _patch_rule(16), 22_440_000,
     "deit_small_distilled_patch16_224.fb_in1k", ("deit_small_distilled",), False),
    ("deit_base_distilled_patch16_224", "deit_base_distilled_patch16_224", "DeiT", "transformer",
     "keras-hub", "vit", _patch_rule(16), 87_340_000, "deit_base_distilled_patch16_224.fb_in1k",
     ("deit_base_distilled",), False),
    ("deit_base_patch16_384", "deit_base_patch16_384", "DeiT", "transformer", "keras-hub", "vit",
     FIXED_384, 86_860_000, "deit_base_patch16_384.fb_in1k", ("deit_base_384",), True),
    ("deit_base_distilled_patch16_384", "deit_base_distilled_patch16_384", "DeiT", "transformer",
     "keras-hub", "vit", FIXED_384, 87_630_000, "deit_base_distilled_patch16_384.fb_in1k",
     ("deit_base_distilled_384",), True),
    ("swin_tiny_patch4_window7_224", "swin_tiny_224", "Swin", "transformer", "keras-hub", "swin",
     SWIN_RULE, 28_290_000, "swin_tiny_patch4_window7_224.ms_in1k", ("swin_tiny_224",), False),
    ("swin_small_patch4_window7_224", "swin_small_224", "Swin", "transformer", "keras-hub", "swin",
     SWIN_RULE, 49_610_000, "swin_small_patch4_window7_224.ms_in1k", ("swin_small_224",), False),
    ("swin_base_patch4_window7_224", "swin_base_224", "Swin", "transformer", "keras-hub", "swin",
     SWIN_RULE, 87_770_000, "swin_base_patch4_window7_224.ms_in1k", ("swin_base_224",), False),
    ("swin_base_patch4_window12_384", "swin_base_384", "Swin", "transformer", "keras-hub", "swin",
     FIXED_384, 87_900_000, "swin_base_patch4_window12_384.ms_in1k", ("swin_base_384",), True),
    ("swin_large_patch4_window7_224", "swin_large_224", "Swin", "transformer", "keras-hub",
     "swin", SWIN_RULE, 196_530_000, "swin_large_patch4_window7_224.ms_in22k_ft_in1k",
     ("swin_large_224",), True),
    # The study's name says window 7; at 384 the real model (and its TF Hub port) uses window 12.
    ("swin_large_patch4_window7_384", "swin_large_384", "Swin", "transformer", "keras-hub",
     "swin", FIXED_384, 196_740_000, "swin_large_patch4_window12_384.ms_in22k_ft_in1k",
     ("swin_large_384", "swin_large_patch4_window12_384"), True),
    ("swin_s3_tiny_224", "swin_s3_tiny_224", "Swin", "transformer", "xlabench", "swin_s3",
     SWIN_RULE, 28_330_000, "swin_s3_tiny_224.ms_in1k", ("swin_s3_tiny",), False),
    ("swin_s3_small_224", "swin_s3_small_224", "Swin", "transformer", "xlabench", "swin_s3",
     SWIN_RULE, 49_740_000, "swin_s3_small_224.ms_in1k", ("swin_s3_small",), False),
    ("swin_s3_base_224", "swin_s3_base_224", "Swin", "transformer", "xlabench", "swin_s3",
     SWIN_RULE, 71_130_000, "swin_s3_base_224.ms_in1k", ("swin_s3_base",), False),
    ("mixer_b16", "mixer_b16", "MLP-Mixer", "mlp", "xlabench", "mlp_mixer", _patch_rule(16),
     59_880_000, "mixer_b16_224.goog_in21k_ft_in1k", ("mixer_b16_224",), False),
    ("mixer_b32", "mixer_b32", "MLP-Mixer", "mlp", "xlabench", "mlp_mixer", _patch_rule(32),
     60_290_000, "mixer_b32_224", ("mixer_b32_224",), False),
    ("mixer_l16", "mixer_l16", "MLP-Mixer", "mlp", "xlabench", "mlp_mixer", _patch_rule(16),
     208_200_000, "mixer_l16_224.goog_in21k_ft_in1k", ("mixer_l16_224",), True),
)
#: Surveyed on seven of the nine Swins (docs/coverage.md); the two large ones build the same
#: window update, and a refused conversion costs as much as a good one.
SWIN_OPENVINO = ("openvino", "Keras' Swin window update lowers to an XlaDynamicUpdateSlice, "
                 "which OpenVINO's TensorFlow frontend has no conversion rule for")
NON_CNN_NOTES = {
    "swin_large_patch4_window7_384": "the study's name; built with window 12 as the real model",
    "deit_base_distilled_patch16_224": "output: mean of the class and distillation heads",
}


def _non_cnn(row: tuple) -> ModelEntry:
    name, variant, family, kind, source, module, rule, params, timm_row, aliases, heavy = row
    # mixer_b32 has no ImageNet weights in timm: its count is in the inference benchmark table.
    table = "benchmark-infer-amp-nchw-pt240-cu124-rtx3090.csv" if name == "mixer_b32" else RESULTS
    default = rule.fixed or 224
    paper = PAPERS["Swin-S3"] if name.startswith("swin_s3") else PAPERS[family]
    return ModelEntry(
        name=name, family=family, kind=kind, source=source,
        builder=f"xlabench.zoo.archs.{module}:build", variant=variant,
        default_resolution=default, rule=rule, params=params, params_count="trainable",
        params_source=TIMM_ROW.format(table=table, row=timm_row), paper=paper, aliases=aliases,
        study_resolutions=(default,), heavy=heavy, notes=NON_CNN_NOTES.get(name, ""),
        unsupported=(SWIN_OPENVINO,) if family == "Swin" else (),
    )


NON_CNNS: tuple[ModelEntry, ...] = tuple(_non_cnn(row) for row in _NON_CNN_ROWS)

ENTRIES: tuple[ModelEntry, ...] = (*CNNS, *DETECTORS, *NON_CNNS)
