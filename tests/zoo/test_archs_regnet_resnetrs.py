"""Architecture tests for the Keras 3 RegNet and ResNet-RS re-implementations.

Parameter counts of all 31 variants are checked cheaply with closed-form counts computed
here, independently of the builders; only small models are built in the fast tests.
Building every variant is marked ``heavy``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from types import ModuleType

import keras
import numpy as np
import pytest

from xlabench.zoo import REGISTRY
from xlabench.zoo.archs import regnet, resnet_rs

PARAM_TOLERANCE = 0.005  # 0.5%, relative to the published count

# Per-stage (depths, widths, group width per stage), as listed in Keras 2's regnet.py
# MODEL_CONFIGS and the RegNet paper's model tables. RegNetX-8.0GF's first stage is
# narrower (80) than its group width (120); pycls then uses one group of 80 channels.
EXPECTED_REGNET_STAGES = {
    "regnetx_002": ((1, 1, 4, 7), (24, 56, 152, 368), (8, 8, 8, 8)),
    "regnetx_004": ((1, 2, 7, 12), (32, 64, 160, 384), (16, 16, 16, 16)),
    "regnetx_006": ((1, 3, 5, 7), (48, 96, 240, 528), (24, 24, 24, 24)),
    "regnetx_008": ((1, 3, 7, 5), (64, 128, 288, 672), (16, 16, 16, 16)),
    "regnetx_016": ((2, 4, 10, 2), (72, 168, 408, 912), (24, 24, 24, 24)),
    "regnetx_032": ((2, 6, 15, 2), (96, 192, 432, 1008), (48, 48, 48, 48)),
    "regnetx_040": ((2, 5, 14, 2), (80, 240, 560, 1360), (40, 40, 40, 40)),
    "regnetx_064": ((2, 4, 10, 1), (168, 392, 784, 1624), (56, 56, 56, 56)),
    "regnetx_080": ((2, 5, 15, 1), (80, 240, 720, 1920), (80, 120, 120, 120)),
    "regnetx_120": ((2, 5, 11, 1), (224, 448, 896, 2240), (112, 112, 112, 112)),
    "regnetx_160": ((2, 6, 13, 1), (256, 512, 896, 2048), (128, 128, 128, 128)),
    "regnetx_320": ((2, 7, 13, 1), (336, 672, 1344, 2520), (168, 168, 168, 168)),
    "regnety_002": ((1, 1, 4, 7), (24, 56, 152, 368), (8, 8, 8, 8)),
    "regnety_004": ((1, 3, 6, 6), (48, 104, 208, 440), (8, 8, 8, 8)),
    "regnety_006": ((1, 3, 7, 4), (48, 112, 256, 608), (16, 16, 16, 16)),
    "regnety_008": ((1, 3, 8, 2), (64, 128, 320, 768), (16, 16, 16, 16)),
    "regnety_016": ((2, 6, 17, 2), (48, 120, 336, 888), (24, 24, 24, 24)),
    "regnety_032": ((2, 5, 13, 1), (72, 216, 576, 1512), (24, 24, 24, 24)),
    "regnety_040": ((2, 6, 12, 2), (128, 192, 512, 1088), (64, 64, 64, 64)),
    "regnety_064": ((2, 7, 14, 2), (144, 288, 576, 1296), (72, 72, 72, 72)),
    "regnety_080": ((2, 4, 10, 1), (168, 448, 896, 2016), (56, 56, 56, 56)),
    "regnety_120": ((2, 5, 11, 1), (224, 448, 896, 2240), (112, 112, 112, 112)),
    "regnety_160": ((2, 4, 11, 1), (224, 448, 1232, 3024), (112, 112, 112, 112)),
    "regnety_320": ((2, 5, 12, 1), (232, 696, 1392, 3712), (232, 232, 232, 232)),
}

# A ResNet-RS small enough to build in a fast test on every backend, yet with every kind
# of block: stride-1 and stride-2 projections and identity shortcuts.
TINY_RESNET_RS = resnet_rs.ResNetRSConfig(
    depth=20, blocks_per_stage=(2, 1, 1, 1), dropout_rate=0.25
)


def _regnet_param_counts(variant: str, num_classes: int = 1000) -> tuple[int, int]:
    """Closed-form (trainable, BatchNorm moving-statistics) parameter counts of a RegNet."""
    config = regnet.VARIANTS[variant]
    depths, widths, group_widths = EXPECTED_REGNET_STAGES[variant]
    trainable = 3 * 3 * 3 * 32
    bn_channels = 32
    in_width = 32
    for depth, width, group_width in zip(depths, widths, group_widths, strict=True):
        for block_index in range(depth):
            if block_index == 0:  # strided, width-changing: projected shortcut
                trainable += in_width * width
                bn_channels += width
            trainable += in_width * width + 9 * width * group_width + width * width
            bn_channels += 3 * width
            if config.block_type == "Y":
                squeeze = in_width // 4
                trainable += 2 * width * squeeze + squeeze + width
            in_width = width
    trainable += 2 * bn_channels  # BatchNorm gamma and beta
    trainable += in_width * num_classes + num_classes
    return trainable, 2 * bn_channels


def _resnet_rs_param_counts(
    blocks_per_stage: tuple[int, ...], num_classes: int = 1000
) -> tuple[int, int]:
    """Closed-form (trainable, BatchNorm moving-statistics) parameter counts of a ResNet-RS."""
    trainable = 9 * (3 * 32 + 32 * 32 + 32 * 64 + 64 * 64)
    bn_channels = 32 + 32 + 64 + 64
    in_channels = 64
    for filters, num_blocks in zip((64, 128, 256, 512), blocks_per_stage, strict=True):
        out_channels = 4 * filters
        for block_index in range(num_blocks):
            if block_index == 0:
                trainable += in_channels * out_channels
                bn_channels += out_channels
            trainable += in_channels * filters + 9 * filters * filters + filters * out_channels
            bn_channels += 2 * filters + out_channels
            trainable += 2 * out_channels * filters + filters + out_channels  # SE
            in_channels = out_channels
    trainable += 2 * bn_channels
    trainable += in_channels * num_classes + num_classes
    return trainable, 2 * bn_channels


def _count_to_compare(variant: str, trainable: int, bn_statistics: int) -> tuple[int, int]:
    """Our count of the same kind as the published one, and the published count."""
    entry = REGISTRY.get(variant)
    ours = trainable if entry.params_count == "trainable" else trainable + bn_statistics
    return ours, entry.params


def _closed_form_counts(variant: str) -> tuple[int, int]:
    if variant.startswith("regnet"):
        return _regnet_param_counts(variant)
    return _resnet_rs_param_counts(resnet_rs.VARIANTS[variant].blocks_per_stage)


def _forward(model: keras.Model, resolution: int, batch: int = 2) -> np.ndarray:
    """Runs the model in inference mode on random [0, 255] images; returns float32 logits.

    ``predict`` compiles the whole graph once; an eager call would compile op by op on jax,
    which is several times slower for a single call.
    """
    images = np.random.default_rng(0).uniform(0, 255, (batch, resolution, resolution, 3))
    logits = model.predict(images.astype("float32"), batch_size=batch, verbose=0)
    return np.asarray(logits, dtype="float32")


@pytest.fixture
def tiny_resnet_rs(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setitem(resnet_rs.VARIANTS, "resnetrs_tiny", TINY_RESNET_RS)
    return "resnetrs_tiny"


@pytest.fixture
def mixed_bfloat16() -> Iterator[None]:
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)


def test_variant_sets_are_complete() -> None:
    sizes = ["002", "004", "006", "008", "016", "032", "040", "064", "080", "120", "160", "320"]
    assert set(regnet.VARIANTS) == {f"regnet{b}_{s}" for b in "xy" for s in sizes}
    assert set(resnet_rs.VARIANTS) == {f"resnetrs_{d}" for d in (50, 101, 152, 200, 270, 350, 420)}
    for variant in (*regnet.VARIANTS, *resnet_rs.VARIANTS):
        assert REGISTRY.get(variant).variant == variant


@pytest.mark.parametrize("variant", sorted(regnet.VARIANTS))
def test_regnet_name_matches_paper_model(variant: str) -> None:
    """Guards against the 2023 study's swap (e.g. regnetx_006 built as RegNetX-800MF)."""
    hundred_mflops = int(variant.split("_")[1])
    if hundred_mflops < 10:
        flops = f"{hundred_mflops * 100}MF"
    elif hundred_mflops < 100:  # the paper writes 1.6GF, 4.0GF, 8.0GF ...
        flops = f"{hundred_mflops / 10:.1f}GF"
    else:  # ... but 12GF, 16GF, 32GF
        flops = f"{hundred_mflops // 10}GF"
    assert regnet.VARIANTS[variant].paper_name == f"RegNet{variant[6].upper()}-{flops}"


@pytest.mark.parametrize("variant", sorted(regnet.VARIANTS))
def test_regnet_stages_match_reference_tables(variant: str) -> None:
    stages = regnet.VARIANTS[variant].stages()
    derived = tuple(
        tuple(getattr(s, field) for s in stages) for field in ("depth", "width", "group_width")
    )
    assert derived == EXPECTED_REGNET_STAGES[variant]
    assert all(s.width % s.group_width == 0 for s in stages)


@pytest.mark.parametrize("variant", sorted(regnet.VARIANTS) + sorted(resnet_rs.VARIANTS))
def test_closed_form_params_match_published(variant: str) -> None:
    ours, published = _count_to_compare(variant, *_closed_form_counts(variant))
    assert abs(ours - published) <= PARAM_TOLERANCE * published


@pytest.mark.parametrize("family", ["regnetx", "regnety"])
def test_neighbouring_regnet_variants_differ_in_params(family: str) -> None:
    variants = sorted(v for v in regnet.VARIANTS if v.startswith(family))
    counts = [_regnet_param_counts(v)[0] for v in variants]
    assert all(smaller < larger for smaller, larger in itertools.pairwise(counts))


def test_neighbouring_resnet_rs_variants_differ_in_params() -> None:
    by_depth = sorted(resnet_rs.VARIANTS.values(), key=lambda config: config.depth)
    counts = [_resnet_rs_param_counts(config.blocks_per_stage)[0] for config in by_depth]
    assert all(smaller < larger for smaller, larger in itertools.pairwise(counts))


@pytest.mark.parametrize("module", [regnet, resnet_rs], ids=["regnet", "resnet_rs"])
def test_check_resolution(module: ModuleType) -> None:
    variant = next(iter(module.VARIANTS))
    assert module.check_resolution(variant, 32) is None
    assert module.check_resolution(variant, 224) is None
    reason = module.check_resolution(variant, 31)
    assert isinstance(reason, str) and "\n" not in reason and "32" in reason
    with pytest.raises(ValueError, match="32"):
        module.build(variant, 16)
    with pytest.raises(KeyError):
        module.check_resolution("no_such_variant", 224)


def test_regnetx_002_builds_with_expected_shape_and_params() -> None:
    model = regnet.build("regnetx_002", 32, num_classes=10)
    assert model.name == "regnetx_002"
    assert tuple(model.input_shape) == (None, 32, 32, 3)
    assert tuple(model.output_shape) == (None, 10)
    trainable, bn_statistics = _regnet_param_counts("regnetx_002", num_classes=10)
    assert model.count_params() == trainable + bn_statistics
    logits = _forward(model, 32)
    assert logits.shape == (2, 10) and np.isfinite(logits).all()


def test_resnet_rs_builds_with_expected_shape_and_params(tiny_resnet_rs: str) -> None:
    model = resnet_rs.build(tiny_resnet_rs, 33, num_classes=7)  # odd size: padding paths
    assert model.name == tiny_resnet_rs
    assert tuple(model.output_shape) == (None, 7)
    trainable, bn_statistics = _resnet_rs_param_counts(TINY_RESNET_RS.blocks_per_stage, 7)
    assert model.count_params() == trainable + bn_statistics
    logits = _forward(model, 33)
    assert logits.shape == (2, 7) and np.isfinite(logits).all()


def test_builds_under_mixed_bfloat16(mixed_bfloat16: None, tiny_resnet_rs: str) -> None:
    model = resnet_rs.build(tiny_resnet_rs, 32, num_classes=5)
    assert model.get_layer("head_logits").compute_dtype == "bfloat16"
    logits = _forward(model, 32, batch=1)
    assert logits.shape == (1, 5) and np.isfinite(logits).all()
