"""Tests of the YOLOV8-M and RetinaNet-ResNet50 detector architectures.

They run on whichever backend KERAS_BACKEND selects. The fast ones build each
model once at the smallest valid resolution (32); `heavy` ones build again at
the study's 320, with another class count, or under mixed_bfloat16.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from types import ModuleType
from typing import NamedTuple

import keras
import numpy as np
import pytest

from xlabench.zoo import REGISTRY
from xlabench.zoo.archs import retinanet, yolov8

SMALLEST = 32


class Arch(NamedTuple):
    """One detector under test and what its outputs must look like."""

    module: ModuleType
    variant: str
    box_channels: int

    def num_anchors(self, resolution: int) -> int:
        """Anchors (YOLOV8: anchor points) the head predicts at a resolution."""
        if self.module is yolov8:
            return sum((resolution // stride) ** 2 for stride in (8, 16, 32))
        # RetinaNet: 9 anchors at each position of P3..P7 ("same" convs round up).
        return 9 * sum(math.ceil(resolution / 2**level) ** 2 for level in range(3, 8))


ARCHS = {
    "yolov8": Arch(yolov8, "yolo_v8_m_pascalvoc", 64),
    "retinanet": Arch(retinanet, "retinanet_resnet50_pascalvoc", 4),
}


@pytest.fixture(scope="module", params=sorted(ARCHS))
def arch(request: pytest.FixtureRequest) -> Arch:
    """Each detector in turn."""
    return ARCHS[request.param]


@pytest.fixture(scope="module")
def small_model(arch: Arch) -> Iterator[keras.Model]:
    """The detector built once at the smallest valid resolution."""
    yield arch.module.build(arch.variant, SMALLEST)
    keras.backend.clear_session()


def _images(resolution: int, batch: int = 1) -> np.ndarray:
    """Random 0-255 pixels, as the models rescale by 1/255 themselves."""
    rng = np.random.default_rng(0)
    return rng.uniform(0.0, 255.0, (batch, resolution, resolution, 3)).astype("float32")


def _check_outputs(outputs: dict, arch: Arch, resolution: int, batch: int, classes: int) -> None:
    """Asserts the output dict's keys, shapes and finiteness."""
    assert set(outputs) == {"boxes", "classes"}
    anchors = arch.num_anchors(resolution)
    assert tuple(outputs["boxes"].shape) == (batch, anchors, arch.box_channels)
    assert tuple(outputs["classes"].shape) == (batch, anchors, classes)
    for value in outputs.values():
        array = keras.ops.convert_to_numpy(keras.ops.cast(value, "float32"))
        assert np.isfinite(array).all()


def test_interface_tables_agree(arch: Arch) -> None:
    """Every variant has a frozen config and a registry entry (which holds its published count)."""
    module = arch.module
    assert arch.variant in module.VARIANTS
    for variant, config in module.VARIANTS.items():
        assert dataclasses.is_dataclass(config)
        assert config.__dataclass_params__.frozen
        assert REGISTRY.get(variant).params_count == "total"


@pytest.mark.parametrize("resolution", [32, 64, 320, 640])
def test_check_resolution_accepts_multiples_of_32(arch: Arch, resolution: int) -> None:
    """The study's 320 and 640 and every multiple of 32 are valid."""
    assert arch.module.check_resolution(arch.variant, resolution) is None


@pytest.mark.parametrize("resolution", [0, 16, 48, 100, 330])
def test_check_resolution_rejects_others(arch: Arch, resolution: int) -> None:
    """Anything else gets a one-line reason, and build refuses it."""
    reason = arch.module.check_resolution(arch.variant, resolution)
    assert isinstance(reason, str)
    assert reason
    assert "\n" not in reason
    with pytest.raises(ValueError, match="multiple of 32"):
        arch.module.build(arch.variant, resolution)


def test_unknown_variant_raises(arch: Arch) -> None:
    """An unknown variant is a KeyError, not a silent default."""
    with pytest.raises(KeyError):
        arch.module.check_resolution("no_such_variant", 320)


def test_model_is_functional_with_image_input(small_model: keras.Model) -> None:
    """A functional model over one channels-last image input."""
    assert isinstance(small_model, keras.Model)
    assert len(small_model.inputs) == 1
    assert tuple(small_model.inputs[0].shape) == (None, SMALLEST, SMALLEST, 3)


def test_forward_smallest_resolution(arch: Arch, small_model: keras.Model) -> None:
    """Raw head outputs at the smallest valid resolution: shapes, finite."""
    outputs = small_model(_images(SMALLEST), training=False)
    _check_outputs(outputs, arch, SMALLEST, batch=1, classes=20)


@pytest.mark.heavy
def test_forward_study_resolution(arch: Arch) -> None:
    """At the study's 320 (not a multiple of 128: RetinaNet's P7 is 3x3)."""
    model = arch.module.build(arch.variant, 320)
    outputs = model(_images(320), training=False)
    _check_outputs(outputs, arch, 320, batch=1, classes=20)


@pytest.mark.heavy
def test_num_classes_changes_class_output(arch: Arch) -> None:
    """num_classes sets the class axis; the box output is unchanged."""
    model = arch.module.build(arch.variant, 64, num_classes=3)
    outputs = model(_images(64, batch=2), training=False)
    _check_outputs(outputs, arch, 64, batch=2, classes=3)


@pytest.fixture
def mixed_bfloat16() -> Iterator[None]:
    """Sets the global mixed_bfloat16 policy for one test, then restores it."""
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_bfloat16")
    yield
    keras.config.set_dtype_policy(previous)


@pytest.mark.heavy
@pytest.mark.usefixtures("mixed_bfloat16")
def test_mixed_bfloat16_policy(arch: Arch) -> None:
    """A global mixed policy reaches every layer: bf16 compute, float32 weights."""
    model = arch.module.build(arch.variant, SMALLEST)
    policies = {layer.dtype_policy.name for layer in _all_layers(model)}
    assert policies == {"mixed_bfloat16"}
    assert all(w.dtype == "float32" for w in model.weights)
    outputs = model(_images(SMALLEST), training=False)
    assert all(keras.backend.standardize_dtype(v.dtype) == "bfloat16" for v in outputs.values())
    _check_outputs(outputs, arch, SMALLEST, batch=1, classes=20)


def _all_layers(model: keras.Model) -> Iterator[keras.layers.Layer]:
    """All layers, descending into nested models (keras-hub nests backbones)."""
    for layer in model.layers:
        if isinstance(layer, keras.Model):
            yield from _all_layers(layer)
        elif not isinstance(layer, keras.layers.InputLayer):
            yield layer
