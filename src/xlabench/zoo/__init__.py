"""The model zoo: registry entries (plain data) and lazy builders."""

from xlabench.zoo.catalog import REGISTRY
from xlabench.zoo.registry import KINDS, ModelEntry, Registry, ResolutionRule, build_model

__all__ = ["KINDS", "REGISTRY", "ModelEntry", "Registry", "ResolutionRule", "build_model"]
