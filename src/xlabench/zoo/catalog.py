"""Every model of the study, in one registry."""

from __future__ import annotations

import dataclasses

from xlabench.zoo import catalog_applications, catalog_archs
from xlabench.zoo.pinned_costs import PINNED_COSTS
from xlabench.zoo.registry import ModelEntry, Registry


def _with_pinned_macs(entry: ModelEntry) -> ModelEntry:
    pinned = PINNED_COSTS.get(entry.name)
    return dataclasses.replace(entry, macs=pinned[0]) if pinned else entry


ENTRIES: tuple[ModelEntry, ...] = tuple(
    _with_pinned_macs(e) for e in (*catalog_applications.ENTRIES, *catalog_archs.ENTRIES)
)

REGISTRY = Registry(ENTRIES)
