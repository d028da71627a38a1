"""The models: the study's registry, and a user's own files and factories (zoo.own)."""

from typing import Any

from xlabench.core.spec import Spec
from xlabench.zoo.catalog import REGISTRY
from xlabench.zoo.registry import KINDS, OWN, ModelEntry, Registry, ResolutionRule, build_model

__all__ = [
    "KINDS",
    "OWN",
    "REGISTRY",
    "ModelEntry",
    "Registry",
    "ResolutionRule",
    "build_for",
    "build_model",
    "entry_for",
]


def entry_for(spec: Spec) -> ModelEntry:
    """The registry entry of a spec's model, or its own model's description."""
    if spec.own_model:
        from xlabench.zoo import own

        return own.entry_for(spec)
    return REGISTRY.get(spec.model)


def build_for(spec: Spec, entry: ModelEntry) -> Any:
    """The spec's Keras model (Keras and the backend already configured): the registry's
    builder at the spec's resolution, or the own model's file or factory."""
    if spec.own_model:
        from xlabench.zoo import own

        return own.load(spec)
    return build_model(entry, spec.resolution, spec.weights)
