"""The model registry: one entry per variant, looked up by the study's name or an alias.

Entries are plain data (no Keras import), so listing models, validating a sweep and building a
report never pay for importing a framework. `build_model` imports the builder lazily.
"""

from __future__ import annotations

import difflib
import fnmatch
import importlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from xlabench.core.errors import UserError

KINDS = ("cnn", "transformer", "mlp", "hybrid", "detector")
SOURCES = ("keras.applications", "keras-hub", "xlabench")
#: Family, kind and source of a user's own model (zoo.own): a file or a factory, not the study's.
OWN = "own"


@dataclass(frozen=True)
class ResolutionRule:
    """Which input sizes a variant accepts: fixed, or >= `minimum` and a multiple of `multiple`."""

    minimum: int
    multiple: int = 1
    fixed: int | None = None
    why: str = ""  # said to the user when a resolution is refused

    def check(self, resolution: int) -> str | None:
        if self.fixed is not None and resolution != self.fixed:
            return f"is fixed at {self.fixed}x{self.fixed}" + (f" ({self.why})" if self.why else "")
        if resolution < self.minimum:
            return f"needs a resolution of at least {self.minimum}" + (
                f" ({self.why})" if self.why else ""
            )
        if resolution % self.multiple:
            return f"needs a resolution that is a multiple of {self.multiple}" + (
                f" ({self.why})" if self.why else ""
            )
        return None

    def smallest(self) -> int:
        if self.fixed is not None:
            return self.fixed
        return -(-self.minimum // self.multiple) * self.multiple


@dataclass(frozen=True)
class ModelEntry:
    """One model variant.

    Attributes:
        name: canonical name, the study's variant name (e.g. ``regnetx_016``).
        family: the study's family name (e.g. ``RegNet_X``).
        kind: cnn, transformer, mlp, hybrid or detector.
        source: library the architecture comes from; ``xlabench`` = implemented in zoo/archs.
        builder: ``module:function`` taking (variant, resolution, num_classes, weights).
        variant: the name the builder knows the variant by.
        default_resolution: the resolution the study ran it at (its canonical input size).
        rule: the resolutions it accepts.
        params: published parameter count; `params_count` says which count it is: ``total``
            (Keras count_params, which includes BatchNorm moving statistics) or ``trainable``
            (what pycls/timm/papers count). `params_source` cites it.
        macs: multiply-accumulates per image at the default resolution, measured by xlabench's
            cost counter (conv and dot ops of the JAX program); None until pinned.
        study_resolutions: the resolutions the 2023 study benchmarked.
        heavy: slow to build/run on a CPU; tests mark it.
        imagenet_weights: whether `--weights imagenet` can load real weights for it.
        unsupported: backends the model is known not to run on, with the reason; a run there
            is stored as `unsupported` without starting the framework.
        notes: anything a user should know (deviations, what is timed).
    """

    name: str
    family: str
    kind: str
    source: str
    builder: str
    variant: str
    default_resolution: int
    rule: ResolutionRule
    params: int
    params_count: str
    params_source: str
    paper: str
    aliases: tuple[str, ...] = ()
    macs: float | None = None
    num_classes: int = 1000
    study_resolutions: tuple[int, ...] = ()
    heavy: bool = False
    imagenet_weights: bool = False
    unsupported: tuple[tuple[str, str], ...] = ()  # (backend, why): known not to run there
    notes: str = ""

    def __post_init__(self) -> None:
        own = self.source == self.kind == OWN
        if self.kind not in KINDS and not own:
            raise ValueError(f"{self.name}: unknown kind {self.kind!r}")
        if self.source not in SOURCES and not own:
            raise ValueError(f"{self.name}: unknown source {self.source!r}")
        if self.params_count not in ("total", "trainable"):
            raise ValueError(f"{self.name}: params_count must be total or trainable")

    def unsupported_reason(self, backend: str) -> str | None:
        """Why this model cannot run on `backend`, if it is known not to."""
        return dict(self.unsupported).get(backend)

    def check_resolution(self, resolution: int) -> str | None:
        """None if the variant can run at `resolution`, else the full one-line reason."""
        problem = self.rule.check(resolution)
        return None if problem is None else f"{self.name} {problem}; got {resolution}"

    def to_row(self) -> dict[str, Any]:
        """Flat description for `xlabench models` and the report."""
        return {
            "name": self.name,
            "family": self.family,
            "kind": self.kind,
            "source": self.source,
            "default_resolution": self.default_resolution,
            "min_resolution": self.rule.smallest(),
            "fixed_resolution": self.rule.fixed,
            "resolution_multiple": self.rule.multiple,
            "params": self.params,
            "params_count": self.params_count,
            "params_source": self.params_source,
            "macs_g": None if self.macs is None else round(self.macs / 1e9, 4),
            "num_classes": self.num_classes,
            "aliases": ",".join(self.aliases),
            "heavy": self.heavy,
            "imagenet_weights": self.imagenet_weights,
            "unsupported_backends": ",".join(backend for backend, _ in self.unsupported),
            "paper": self.paper,
            "notes": self.notes,
        }


class Registry:
    """Name and alias lookup over a fixed list of entries."""

    def __init__(self, entries: Iterable[ModelEntry]) -> None:
        self._entries: dict[str, ModelEntry] = {}
        self._names: dict[str, str] = {}
        for entry in entries:
            if entry.name in self._entries:
                raise ValueError(f"duplicate model {entry.name}")
            self._entries[entry.name] = entry
            for key in (entry.name, *entry.aliases):
                folded = _fold(key)
                if self._names.setdefault(folded, entry.name) != entry.name:
                    raise ValueError(f"name {key!r} used by two models")

    def __iter__(self):
        return iter(self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def names(self) -> list[str]:
        return list(self._entries)

    def families(self) -> list[str]:
        return sorted({e.family for e in self})

    def get(self, name: str) -> ModelEntry:
        """The entry for a name or alias (case, '-' and '_' insensitive), or a UserError."""
        canonical = self._names.get(_fold(name))
        if canonical is None:
            raise UserError(f"unknown model {name!r}{self._suggest(name)} (your own model: a "
                            ".keras file or a package.module:function factory)")
        return self._entries[canonical]

    def select(
        self,
        patterns: Iterable[str] = (),
        families: Iterable[str] = (),
        kinds: Iterable[str] = (),
    ) -> list[ModelEntry]:
        """Entries matching any name/alias/glob in `patterns`, then filtered by family and kind.

        No patterns means every model. An unknown name, family or kind is a UserError.
        """
        chosen = self._by_patterns(list(patterns)) if patterns else list(self)
        family_set = {self._family(f) for f in families}
        kind_set = set(kinds)
        for kind in kind_set - set(KINDS):
            raise UserError(f"unknown kind {kind!r}; choose from {', '.join(KINDS)}")
        return [
            e for e in chosen
            if (not family_set or e.family in family_set) and (not kind_set or e.kind in kind_set)
        ]

    def _by_patterns(self, patterns: list[str]) -> list[ModelEntry]:
        chosen: dict[str, ModelEntry] = {}
        for pattern in patterns:
            if any(ch in pattern for ch in "*?["):
                hits = [e for e in self if fnmatch.fnmatch(e.name, pattern.lower())]
                if not hits:
                    raise UserError(f"no model matches {pattern!r}")
            else:
                hits = [self.get(pattern)]
            chosen.update((e.name, e) for e in hits)
        return [e for e in self if e.name in chosen]

    def _family(self, name: str) -> str:
        by_fold = {_fold(f): f for f in self.families()}
        if _fold(name) in by_fold:
            return by_fold[_fold(name)]
        close = difflib.get_close_matches(name, self.families(), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise UserError(f"unknown family {name!r}{hint}")

    def _suggest(self, name: str) -> str:
        folded = {_fold(k): k for e in self for k in (e.name, *e.aliases)}
        close = difflib.get_close_matches(_fold(name), list(folded), n=3, cutoff=0.5)
        canon = list(dict.fromkeys(self._names[c] for c in close))
        return f"; did you mean {', '.join(canon)}?" if canon else "; see `xlabench models`"


def build_model(entry: ModelEntry, resolution: int, weights: str = "random") -> Any:
    """Build the Keras model for `entry`. Keras and the backend must already be configured.

    Builders take (variant, resolution, num_classes) and build seeded random weights; those that
    can load real weights also take ``weights="imagenet"``.
    """
    if weights != "random" and not entry.imagenet_weights:
        raise UserError(
            f"no {weights} weights for {entry.name}: only keras.applications models can load them"
        )
    module_name, function_name = entry.builder.split(":")
    build = getattr(importlib.import_module(module_name), function_name)
    extra = {"weights": weights} if weights != "random" else {}
    return build(entry.variant, resolution, entry.num_classes, **extra)


def _fold(name: str) -> str:
    return name.strip().lower().replace("-", "_")
