"""Write the own-model test files into a folder: `python -m tests.own.make_files DIR`.

Run in a child process (KERAS_BACKEND=jax: the fastest Keras to import) so the test process
never imports a framework; `tests/own/conftest.py` runs it once per session.
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path
from typing import Any

import keras

from tests.own.factories import small_cnn


class Halve(keras.layers.Layer):
    """A custom layer of the script itself, not registered: Keras saves it without a module."""

    def call(self, inputs: Any) -> Any:
        return inputs * 0.5


def main(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    keras.utils.set_random_seed(0)
    small_cnn().save(folder / "cnn.keras")
    small_cnn(size=None).save(folder / "any_size.keras")
    small_cnn(channels=1).save(folder / "gray.keras")
    small_cnn(lam=True).save(folder / "lambda.keras")
    small_cnn(custom=True).save(folder / "custom.keras")
    stem = keras.Input(shape=(32, 32, 3))
    keras.Model(stem, keras.layers.Conv2D(4, 3)(Halve()(stem))).save(folder / "unregistered.keras")
    small_cnn().save(folder / "legacy.h5")
    small_cnn().save_weights(folder / "cnn.weights.h5")
    flat = keras.Input(shape=(16, 8))
    keras.Model(flat, keras.layers.Dense(2)(flat)).save(folder / "rank3.keras")
    a, b = keras.Input(shape=(32, 32, 3)), keras.Input(shape=(32, 32, 3))
    keras.Model([a, b], keras.layers.Add()([a, b])).save(folder / "two_inputs.keras")
    wide = keras.Input(shape=(32, 48, 3))
    keras.Model(wide, keras.layers.Conv2D(4, 3)(wide)).save(folder / "wide.keras")
    first = keras.Input(shape=(3, 32, 32))
    keras.Model(first, keras.layers.Conv2D(4, 3, data_format="channels_first")(first)).save(
        folder / "channels_first.keras")
    (folder / "random.keras").write_bytes(bytes(range(256)) * 8)
    with zipfile.ZipFile(folder / "other.keras", "w") as archive:
        archive.writestr("notes.txt", "not a model")
    # the first bytes of an ONNX ModelProto (ir_version 8, producer "pytorch")
    (folder / "model.onnx").write_bytes(b"\x08\x08\x12\x07pytorch\x1a\x052.1.0" + bytes(64))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
