"""One module per framework, each answering the same questions (see `base.Backend`).

Nothing here imports a framework: the modules import theirs inside functions, and only the
worker process (after choosing KERAS_BACKEND) calls them.
"""

from __future__ import annotations

import importlib
import importlib.util

from xlabench.backends.base import Backend
from xlabench.core.errors import UserError
from xlabench.core.spec import BACKEND_MODES, BACKEND_PACKAGES

_MODULES = {
    "tensorflow": "xlabench.backends.tensorflow",
    "jax": "xlabench.backends.jax",
    "torch": "xlabench.backends.torch",
    "openvino": "xlabench.backends.openvino",
    "onnxruntime": "xlabench.backends.onnxruntime",
    "litert": "xlabench.backends.litert",
    "iree": "xlabench.backends.iree",
}


def load(name: str) -> Backend:
    """The backend module for `name` (it satisfies the `Backend` protocol)."""
    if name not in _MODULES:
        raise UserError(f"unknown backend {name!r}; choose from {', '.join(BACKEND_MODES)}")
    return importlib.import_module(_MODULES[name])  # type: ignore[return-value]


def missing_framework(name: str) -> str | None:
    """None if the framework for backend `name` is importable, else how to install it."""
    package, how = BACKEND_PACKAGES[name]
    if not (_installed(package) and _installed("keras")):
        return f"backend {name} needs {package} and keras, which are not installed: {how}"
    return None


def _installed(package: str) -> bool:
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):  # a broken or hidden install counts as missing
        return False
