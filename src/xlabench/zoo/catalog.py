"""Every model of the study, in one registry."""

from __future__ import annotations

from xlabench.zoo import catalog_applications
from xlabench.zoo.registry import ModelEntry, Registry

ENTRIES: tuple[ModelEntry, ...] = (*catalog_applications.ENTRIES,)

REGISTRY = Registry(ENTRIES)
