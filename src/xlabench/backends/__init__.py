"""One module per backend (listed in core/backends.py), each answering the same questions
(see `base.Backend`).

Nothing here imports a framework: the modules import theirs inside functions, and only the
worker process (after choosing KERAS_BACKEND) calls them.
"""

from __future__ import annotations

import importlib
import importlib.util

from xlabench.backends.base import Backend
from xlabench.core import backends as table
from xlabench.core.errors import UserError


def load(name: str) -> Backend:
    """The backend module for `name` (it satisfies the `Backend` protocol)."""
    if name not in table.BY_NAME:
        raise UserError(f"unknown backend {name!r}; choose from {', '.join(table.BY_NAME)}")
    return importlib.import_module(table.info(name).module)  # type: ignore[return-value]


def missing_framework(name: str) -> str | None:
    """None if the framework for backend `name` is importable, else how to install it."""
    described = table.info(name)
    if not (_installed(described.package) and _installed("keras")):
        return (f"backend {name} needs {described.package} and keras, which are not installed: "
                f"{described.install_hint}")
    return None


def _installed(package: str) -> bool:
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):  # a broken or hidden install counts as missing
        return False
