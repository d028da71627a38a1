"""Zoo tests build real models in this process, on the backend KERAS_BACKEND names.

`make zoo` runs this folder once per backend; every test here is marked `zoo`.
"""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("KERAS_BACKEND", "jax")  # before anything imports keras
os.environ.setdefault("JAX_PLATFORMS", "cpu")
#: The deployment runtimes convert the Keras-on-TensorFlow graph (OpenVINO, ONNX Runtime) or the
#: Keras-on-JAX export (IREE): collected on those two runs only.
collect_ignore = ([] if os.environ["KERAS_BACKEND"] in ("tensorflow", "jax")
                  else ["test_runtimes_zoo.py"])


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.zoo)


@pytest.fixture(autouse=True)
def _fast_jax_initialisers():
    """On JAX, draw initial weights with NumPy (see xlabench.backends.jax.build_context):
    without it every new weight shape is an XLA compile and the zoo takes ~8x longer to build."""
    if os.environ["KERAS_BACKEND"] != "jax":
        yield
        return
    from xlabench.backends import jax as jax_backend

    with jax_backend.build_context(0):
        yield
