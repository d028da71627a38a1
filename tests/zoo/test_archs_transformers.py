"""Tests for the transformer and MLP model families (ViT, DeiT, hybrids, Swin, Swin-S3, Mixer).

Fast tests use tiny configurations of each family on whatever backend ``KERAS_BACKEND``
selects; tests that build the real variants are marked ``heavy``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from types import ModuleType

import keras
import numpy as np
import pytest
from keras_hub.src.models.swin_transformer.swin_transformer_layers import (
    window_partition,
    window_reverse,
)

from xlabench.zoo import REGISTRY
from xlabench.zoo.archs import mlp_mixer, swin, swin_s3, vit, vit_hybrid
from xlabench.zoo.archs import transformer_blocks as tb

MODULES = (vit, vit_hybrid, swin, swin_s3, mlp_mixer)
ALL_VARIANTS = [(m, name) for m in MODULES for name in m.VARIANTS]
VARIANT_IDS = [name for _, name in ALL_VARIANTS]

# Smallest resolution each variant accepts (every valid one is a multiple of it, except
# the variants pinned to 384).
SMALLEST_RESOLUTION = {
    "vit_s16": 16,
    "vit_b8": 8,
    "vit_b16": 16,
    "vit_b32": 32,
    "vit_l16": 16,
    "vit_r26_s32": 32,
    "vit_r50_l32": 32,
    "deit_tiny_patch16_224": 16,
    "deit_small_patch16_224": 16,
    "deit_base_patch16_224": 16,
    "deit_tiny_distilled_patch16_224": 16,
    "deit_small_distilled_patch16_224": 16,
    "deit_base_distilled_patch16_224": 16,
    "deit_base_patch16_384": 384,
    "deit_base_distilled_patch16_384": 384,
    "swin_tiny_224": 224,
    "swin_small_224": 224,
    "swin_base_224": 224,
    "swin_base_384": 384,
    "swin_large_224": 224,
    "swin_large_384": 384,
    "swin_s3_tiny_224": 224,
    "swin_s3_small_224": 224,
    "swin_s3_base_224": 224,
    "mixer_b16": 16,
    "mixer_b32": 32,
    "mixer_l16": 16,
}

TINY_VIT = vit.ViTConfig(patch_size=8, hidden_dim=32, num_layers=2, num_heads=2, mlp_dim=64)
TINY_DEIT = vit.ViTConfig(
    patch_size=8, hidden_dim=32, num_layers=2, num_heads=2, mlp_dim=64, distilled=True
)
# Equal, narrow ResNet widths (GroupNorm(32) needs >= 32 bottleneck channels): few distinct
# weight shapes keep jax's per-shape initializer compilation short.
TINY_HYBRID = vit_hybrid.HybridConfig(
    resnet_depths=(1, 1, 1, 1),
    hidden_dim=32,
    num_layers=1,
    num_heads=2,
    mlp_dim=64,
    stem_width=128,
    stage_widths=(128, 128, 128, 128),
)
# 32 px: stage maps 8 and 4; window 2 tiles both, so every second block shifts.
TINY_SWIN = swin.SwinConfig(embed_dim=8, depths=(2, 2), num_heads=(1, 2), window_size=2)
# Per-stage windows; the last stage's 4x4 map equals its window, so it does not shift, as
# happens to Swin-S3's window-14 stage at 224.
TINY_S3 = swin_s3.SwinS3Config(embed_dim=8, depths=(2, 2), num_heads=(1, 2), window_sizes=(2, 4))
TINY_MIXER = mlp_mixer.MixerConfig(patch_size=8, num_blocks=2, hidden_dim=32)

TINY_CASES = {
    "vit": (vit, TINY_VIT, 32),
    "deit_distilled": (vit, TINY_DEIT, 32),
    "hybrid": (vit_hybrid, TINY_HYBRID, 64),
    "swin": (swin, TINY_SWIN, 32),
    "swin_s3": (swin_s3, TINY_S3, 32),
    "mixer": (mlp_mixer, TINY_MIXER, 32),
}


@pytest.fixture(autouse=True)
def _reset_dtype_policy() -> Iterator[None]:
    """Keeps a test's global dtype policy from leaking into the next test."""
    yield
    keras.config.set_dtype_policy("float32")


@functools.cache
def _tiny_model(case: str) -> keras.Model:
    """Builds (once per session) the float32 tiny model of ``case`` with 7 classes."""
    module, cfg, resolution = TINY_CASES[case]
    return module._build_from_config(f"tiny_{case}", cfg, resolution, 7)


def _images(resolution: int, seed: int = 0) -> np.ndarray:
    """Returns one random channels-last image."""
    return np.random.default_rng(seed).random((1, resolution, resolution, 3), dtype=np.float32)


def _forward(model: keras.Model, resolution: int) -> np.ndarray:
    """Runs one random image through ``model`` and returns float32 numpy logits."""
    # predict() compiles the whole graph on jax / tensorflow, which is much faster than the
    # first eager call there (jax compiles every eager op separately).
    out = model.predict(_images(resolution), verbose=0)
    return np.asarray(out, dtype=np.float32)


# ------------------------------------------------------------------- interface and tables


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_every_variant_is_in_the_registry(module: ModuleType) -> None:
    """The registry holds each variant's published count (and cites it)."""
    built_by_module = {
        e.variant for e in REGISTRY if e.builder.split(":")[0] == module.__name__
    }
    assert built_by_module == set(module.VARIANTS)


def test_smallest_resolution_table_covers_every_variant() -> None:
    assert set(SMALLEST_RESOLUTION) == {name for _, name in ALL_VARIANTS}


@pytest.mark.parametrize(("module", "variant"), ALL_VARIANTS, ids=VARIANT_IDS)
def test_smallest_valid_resolution(module: ModuleType, variant: str) -> None:
    smallest = SMALLEST_RESOLUTION[variant]
    assert module.check_resolution(variant, smallest) is None
    assert module.check_resolution(variant, module.VARIANTS[variant].default_resolution) is None
    for resolution in range(-1, smallest):
        reason = module.check_resolution(variant, resolution)
        assert isinstance(reason, str) and "\n" not in reason


@pytest.mark.parametrize(
    ("module", "variant"),
    [
        (vit, "deit_base_patch16_384"),
        (vit, "deit_base_distilled_patch16_384"),
        (swin, "swin_base_384"),
        (swin, "swin_large_384"),
    ],
)
def test_384_variants_are_pinned(module: ModuleType, variant: str) -> None:
    assert module.check_resolution(variant, 384) is None
    assert "384" in module.check_resolution(variant, 768)
    assert module.check_resolution(variant, 224) is not None


@pytest.mark.parametrize(
    ("module", "variant", "resolution", "valid"),
    [
        (vit, "vit_b16", 240, True),
        (vit, "vit_b16", 232, False),
        (vit, "vit_b32", 240, False),
        (vit_hybrid, "vit_r26_s32", 256, True),
        (vit_hybrid, "vit_r26_s32", 240, False),
        (swin, "swin_tiny_224", 448, True),
        (swin, "swin_tiny_224", 256, False),
        (swin_s3, "swin_s3_small_224", 448, True),
        (swin_s3, "swin_s3_small_224", 336, False),
        (mlp_mixer, "mixer_b32", 256, True),
        (mlp_mixer, "mixer_b32", 240, False),
    ],
)
def test_resolution_rules(module: ModuleType, variant: str, resolution: int, valid: bool) -> None:
    assert (module.check_resolution(variant, resolution) is None) is valid


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_unknown_variant_gives_reason(module: ModuleType) -> None:
    assert "unknown variant" in module.check_resolution("no_such_model", 224)


def test_swin_min_resolution() -> None:
    assert tb.swin_min_resolution(4, (7, 7, 7, 7)) == 224
    assert tb.swin_min_resolution(4, (12, 12, 12, 12)) == 384
    assert tb.swin_min_resolution(4, (7, 7, 14, 7)) == 224
    assert tb.swin_min_resolution(4, (14, 14, 14, 7)) == 224
    assert tb.swin_stage_sizes(224, 4, 4) == [56, 28, 14, 7]


# ------------------------------------------------------------------ windows and tokens


@pytest.mark.parametrize(("side", "window"), [(14, 7), (12, 4), (8, 8)])
def test_window_partition_round_trip(side: int, window: int) -> None:
    x = np.random.default_rng(1).random((2, side, side, 3), dtype=np.float32)
    windows, (height, width) = window_partition(keras.ops.convert_to_tensor(x), window)
    per_image = (side // window) ** 2
    assert tuple(windows.shape) == (2 * per_image, window, window, 3)
    # Windows are row-major within each image: the second one is the top row's next tile.
    if per_image > 1:
        np.testing.assert_array_equal(
            keras.ops.convert_to_numpy(windows[1]), x[0, :window, window : 2 * window]
        )
    back = window_reverse(windows, window, height, width, 3)
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(back), x)


@pytest.mark.parametrize(
    ("case", "layer"), [("vit", "vit_backbone"), ("deit_distilled", "deit_backbone")]
)
def test_vit_token_count(case: str, layer: str) -> None:
    _, cfg, resolution = TINY_CASES[case]
    expected = (resolution // cfg.patch_size) ** 2 + (2 if cfg.distilled else 1)
    assert vit.num_tokens(cfg, resolution) == expected
    tokens = _tiny_model(case).get_layer(layer).output
    assert tuple(tokens.shape) == (None, expected, cfg.hidden_dim)


def test_real_vit_token_counts() -> None:
    assert vit.num_tokens(vit.VARIANTS["vit_b16"], 224) == 197
    assert vit.num_tokens(vit.VARIANTS["vit_b8"], 224) == 785
    assert vit.num_tokens(vit.VARIANTS["deit_base_distilled_patch16_384"], 384) == 578
    assert vit_hybrid.num_tokens(224) == 50
    assert mlp_mixer.num_tokens(mlp_mixer.VARIANTS["mixer_b32"], 224) == 49


def test_hybrid_token_count() -> None:
    tokens = _tiny_model("hybrid").get_layer("vit_backbone").output
    assert tuple(tokens.shape) == (None, vit_hybrid.num_tokens(64), TINY_HYBRID.hidden_dim)


def test_mixer_token_count() -> None:
    tokens = _tiny_model("mixer").get_layer("stem_flatten").output
    assert tuple(tokens.shape) == (None, mlp_mixer.num_tokens(TINY_MIXER, 32), 32)


# --------------------------------------------------------------------- forward passes


@pytest.mark.parametrize("case", sorted(TINY_CASES))
def test_tiny_forward_shape(case: str) -> None:
    resolution = TINY_CASES[case][2]
    model = _tiny_model(case)
    assert model.name == f"tiny_{case}"
    assert tuple(model.input.shape) == (None, resolution, resolution, 3)
    logits = _forward(model, resolution)
    assert logits.shape == (1, 7)
    assert np.isfinite(logits).all()


def test_distilled_logits_average_both_heads() -> None:
    model = _tiny_model("deit_distilled")
    outputs = [model.get_layer(name).output for name in ("head", "head_dist", "logits")]
    cls_logits, dist_logits, logits = keras.Model(model.input, outputs).predict(
        _images(32, seed=2), verbose=0
    )
    np.testing.assert_allclose(logits, (cls_logits + dist_logits) / 2, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", ["hybrid", "swin_s3"])
def test_tiny_forward_mixed_bfloat16(case: str) -> None:
    keras.config.set_dtype_policy("mixed_bfloat16")
    module, cfg, resolution = TINY_CASES[case]
    logits = _forward(module._build_from_config(f"tiny_{case}", cfg, resolution, 3), resolution)
    assert logits.shape == (1, 3) and np.isfinite(logits).all()


def test_std_conv_standardises_kernel() -> None:
    layer = vit_hybrid.StdConv2D(4, 3, use_bias=False)
    layer.build((None, 8, 8, 2))
    kernel = np.random.default_rng(3).normal(2.0, 3.0, size=(3, 3, 2, 4)).astype("float32")
    layer.kernel.assign(kernel)
    # A constant image makes each interior output the sum of the standardised kernel.
    out = keras.ops.convert_to_numpy(layer(np.ones((1, 8, 8, 2), dtype="float32")))
    np.testing.assert_allclose(out[0, 1:-1, 1:-1], 0.0, atol=1e-4)
