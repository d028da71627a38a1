"""Factories (`tests.own.factories:NAME`) and a custom layer, for the own-model tests.

Importing this module imports Keras: only factories' callers (a worker, the inspection child)
import it, never the test process itself.
"""

from __future__ import annotations

from typing import Any

import keras

RESOLUTION = 32
CLASSES = 10


@keras.saving.register_keras_serializable(package="xlabench_tests")
class Scale(keras.layers.Layer):
    """A custom layer: one learned scale per channel."""

    def build(self, input_shape: Any) -> None:
        self.scale = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="scale")

    def call(self, inputs: Any) -> Any:
        return inputs * self.scale


def small_cnn(size: int | None = RESOLUTION, channels: int = 3, lam: bool = False,
              custom: bool = False) -> keras.Model:
    """Built-in layers only (plus an optional Lambda or custom layer): a conv stem, a
    depthwise block with batch norm, a global pool and a classifier."""
    inputs = keras.Input(shape=(size, size, channels))
    x = keras.layers.Rescaling(1.0 / 255.0)(inputs)
    x = keras.layers.Conv2D(8, 3, strides=2, padding="same", activation="relu")(x)
    x = keras.layers.DepthwiseConv2D(3, padding="same")(x)
    x = keras.layers.BatchNormalization()(x)
    if lam:
        x = keras.layers.Lambda(lambda t: t * 0.5, name="halve")(x)
    if custom:
        x = Scale()(x)
    x = keras.layers.Conv2D(16, 1, activation="relu")(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    outputs = keras.layers.Dense(CLASSES)(x)
    return keras.Model(inputs, outputs, name="small_cnn")


def build_custom() -> keras.Model:
    """A model with a custom layer: only a factory can build it."""
    return small_cnn(custom=True)


def build_any_size() -> keras.Model:
    return small_cnn(size=None)


def build_not_a_model() -> dict[str, int]:
    return {"layers": 3}


def build_broken() -> keras.Model:
    raise ValueError("this factory is broken on purpose")


def build_tensorflow_only() -> keras.Model:
    """Builds on TensorFlow only (as a model with a TensorFlow op would): its other backends
    fail as records, it is no bad input."""
    if keras.backend.backend() != "tensorflow":
        raise RuntimeError(f"this model does not build on {keras.backend.backend()}")
    return small_cnn()
