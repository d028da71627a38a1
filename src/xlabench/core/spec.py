"""What to run: a frozen, validated, hashable description of one benchmark configuration."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from xlabench.core.backends import (
    BACKENDS,
    COMPILED_MODES,
    NATIVE_RUNTIMES,
    PRECISIONS,
    RUNTIMES,
)
from xlabench.core.errors import UserError
from xlabench.core.scenario import (
    Scenario,
    ScenarioSettings,
    backend_concurrency,
    parse_scenario,
)

#: Modes per backend (core/backends.py describes each backend). The first mode of each
#: framework backend is its eager baseline.
BACKEND_MODES: dict[str, tuple[str, ...]] = {b.name: b.modes for b in BACKENDS}
#: Parity reference of the runtime backends: Keras eager on the exporting backend, same
#: weights and input (a mode of the reference only, never measured on its own).
REFERENCE_MODE = "keras_eager"
#: Backends whose parity reference is not their own first mode.
RUNTIME_BACKENDS: frozenset[str] = frozenset(RUNTIMES)
WEIGHTS: tuple[str, ...] = ("random", "imagenet")
#: Who runs the timed loop: the Python worker, or the C++ program xlabench-native on an
#: exported artifact (native/). Only a (backend, mode) that NATIVE_RUNTIMES names runs natively:
#: not every compiled mode has one (ONNX Runtime, LiteRT, IREE), and TF graph, not compiled, does.
RUNNERS: tuple[str, ...] = ("python", "native")
RESOLUTION_RANGE = (16, 2048)
#: Spec fields whose default is left out of the canonical JSON (see `Spec.canonical_json`).
LATER_FIELD_DEFAULTS: dict[str, Any] = {"runner": "python", "model_file": "", "model_factory": "",
                                      "model_sha256": "", "channels": 3, "unsafe_load": False,
                                      "scenario": ""}
BATCH_SIZE_RANGE = (1, 4096)


@dataclass(frozen=True)
class MeasureSettings:
    """How long and how precisely to measure. Part of the spec: change it and it is a new spec.

    Attributes:
        target_rel_ci: stop sampling once the 95% CI of the median throughput is within
            +-target_rel_ci of the median.
        min_sample_s: each sample runs enough steps to last at least this long (pyperf-style
            calibration), so timer resolution and per-sample overhead stay negligible.
        min_samples / max_samples: bounds on the number of throughput samples.
        warmup_min_steps / warmup_min_s / warmup_max_s: warm-up runs at least this many steps
            and this long, then until step times stop falling, at most warmup_max_s.
        budget_s: time budget for the sampling phase; when it runs out we stop and record
            that the precision target was not met.
        latency_steps: single, individually synced steps timed for latency percentiles.
    """

    target_rel_ci: float = 0.02
    min_sample_s: float = 0.1
    min_samples: int = 5
    max_samples: int = 200
    warmup_min_steps: int = 3
    warmup_min_s: float = 0.5
    warmup_max_s: float = 20.0
    budget_s: float = 20.0
    latency_steps: int = 30

    def __post_init__(self) -> None:
        if not 0 < self.target_rel_ci < 1:
            raise UserError(f"target CI must be between 0 and 1, got {self.target_rel_ci}")
        if self.min_sample_s <= 0 or self.budget_s <= 0 or self.warmup_max_s < 0:
            raise UserError("sample time, budget and warm-up time must be positive")
        if not 3 <= self.min_samples <= self.max_samples:
            raise UserError(
                f"need 3 <= min_samples <= max_samples, got {self.min_samples}, {self.max_samples}"
            )
        if self.warmup_min_steps < 1 or self.latency_steps < 0:
            raise UserError("warm-up needs at least one step; latency steps must be >= 0")

    @property
    def latency_budget_s(self) -> float:
        """Time budget of the latency phase, on both runners: a quarter of the sampling
        budget, at least a second (the latency steps stop early when it runs out)."""
        return max(1.0, self.budget_s / 4)


@dataclass(frozen=True)
class Spec:
    """One benchmark configuration. `spec_id()` identifies it across runs and machines.

    `model` is the registry's canonical name (resolve aliases before building a Spec), or the
    readable name of an own model (zoo.own): then `model_sha256` is its identity (the file's
    content, or the factory's import path and module source), `model_file` where it is read
    from (the factory's module source), `model_factory` its `package.module:function`,
    `channels` its input's channels, and `unsafe_load` the user's leave to run code stored in
    the file (Lambda layers). Where it lies, its name and the leave are no part of the id.
    `tf32` pins whether float32 matmuls/convolutions may use TF32 on GPUs that have it;
    frameworks disagree on the default, so we never leave it implicit.
    """

    model: str
    backend: str
    mode: str
    resolution: int
    batch_size: int = 4
    precision: str = "fp32"
    weights: str = "random"
    seed: int = 0
    tf32: bool = False
    repeat: int = 0
    measure: MeasureSettings = field(default_factory=MeasureSettings)
    runner: str = "python"
    model_file: str = ""
    model_factory: str = ""
    model_sha256: str = ""
    channels: int = 3
    unsafe_load: bool = False
    #: "" times the usual loop (measure.timing); a LoadGen scenario (core.scenario.Scenario)
    #: lets MLPerf's LoadGen issue the queries, with `scenario_settings` (its max batch is
    #: the spec's batch size; ignored, and no part of the id, without a scenario).
    scenario: str = ""
    scenario_settings: ScenarioSettings = field(default_factory=ScenarioSettings)

    def __post_init__(self) -> None:
        if not self.model:
            raise UserError("model name is empty")
        if bool(self.model_sha256) != bool(self.model_file) or (
                self.model_factory and not self.model_sha256):
            raise UserError("an own model needs its file and its hash together")
        _check_range("channels", self.channels, (1, 64))
        if self.backend not in BACKEND_MODES:
            raise UserError(
                f"unknown backend {self.backend!r}; choose from {', '.join(BACKEND_MODES)}"
            )
        if self.mode not in BACKEND_MODES[self.backend]:
            modes = ", ".join(BACKEND_MODES[self.backend])
            raise UserError(f"backend {self.backend} has no mode {self.mode!r}; it has {modes}")
        _check_range("resolution", self.resolution, RESOLUTION_RANGE)
        _check_range("batch size", self.batch_size, BATCH_SIZE_RANGE)
        if self.precision not in PRECISIONS:
            raise UserError(f"unknown precision {self.precision!r}; choose from {PRECISIONS}")
        if self.weights not in WEIGHTS:
            raise UserError(f"unknown weights {self.weights!r}; choose from {WEIGHTS}")
        if self.repeat < 0:
            raise UserError(f"repeat index must be >= 0, got {self.repeat}")
        self._check_runner()
        self._check_scenario()

    def _check_scenario(self) -> None:
        if not self.scenario:
            return
        scenario = parse_scenario(self.scenario)
        if scenario is Scenario.SINGLE_STREAM and self.batch_size != 1:
            raise UserError(f"single-stream issues one sample per query: batch size must be 1, "
                            f"got {self.batch_size}")
        if self.scenario_settings.max_batch != self.batch_size:
            raise UserError(f"a scenario's max batch is the batch size ({self.batch_size}), got "
                            f"{self.scenario_settings.max_batch}")
        if self.runner != "python":
            raise UserError("LoadGen scenarios run in the Python worker (LoadGen's bindings are "
                            "Python); xlabench-native has no LoadGen: use --runner python")
        most = backend_concurrency(self.backend)
        if self.scenario_settings.concurrency > most:
            raise UserError(f"{self.backend} runs at most {most} query batch(es) at once in a "
                            f"scenario, not {self.scenario_settings.concurrency}")

    def _check_runner(self) -> None:
        if self.runner not in RUNNERS:
            raise UserError(f"unknown runner {self.runner!r}; choose from {', '.join(RUNNERS)}")
        if self.runner == "native" and self.native_runtime is None:
            have = ", ".join(f"{b}/{m}" for b, m in NATIVE_RUNTIMES)
            raise UserError(
                f"{self.backend}/{self.mode} has no native runtime; the native runner runs {have}"
            )

    @property
    def native_runtime(self) -> str | None:
        """The xlabench-native runtime that runs this spec's artifact (None: not exportable)."""
        return NATIVE_RUNTIMES.get((self.backend, self.mode))

    @property
    def own_model(self) -> bool:
        """A user's model file or factory (zoo.own), not a registry model."""
        return bool(self.model_sha256)

    @property
    def compiled(self) -> bool:
        """True for whole-graph compiled modes (XLA, torch.compile)."""
        return self.mode in COMPILED_MODES

    @property
    def baseline_mode(self) -> str:
        """The parity reference: the eager mode of this spec's backend; for a deployment
        runtime, Keras eager on the backend that exported the model (REFERENCE_MODE)."""
        if self.backend in RUNTIME_BACKENDS:
            return REFERENCE_MODE
        return BACKEND_MODES[self.backend][0]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Spec:
        data = dict(data)
        measure = MeasureSettings(**data.pop("measure", {}))
        scenario_settings = ScenarioSettings(**data.pop("scenario_settings", {}))
        return cls(measure=measure, scenario_settings=scenario_settings, **data)

    def canonical_json(self) -> str:
        data = self.to_dict()
        # defaults leave the id of every spec from before these fields unchanged
        for key, default in LATER_FIELD_DEFAULTS.items():
            if data[key] == default:
                del data[key]
        if not self.scenario:
            del data["scenario_settings"]
        # an own model is its content: not where it lies, what it is called or the leave
        for key in ("model_file", "unsafe_load", *(("model", "model_factory")
                                                   if self.own_model else ())):
            data.pop(key, None)
        return json.dumps(data, sort_keys=True, separators=(",", ":"))

    def spec_id(self) -> str:
        """Stable hash of the canonical JSON: same spec, same id, on any machine."""
        return hashlib.sha256(self.canonical_json().encode()).hexdigest()[:16]

    def label(self) -> str:
        """Short human-readable name, e.g. ``resnet50_v1@224 b4 jax/xla fp32``."""
        rep = f" r{self.repeat}" if self.repeat else ""
        native = " native" if self.runner == "native" else ""
        scenario = f" {self.scenario}" if self.scenario else ""
        return (
            f"{self.model}@{self.resolution} b{self.batch_size} "
            f"{self.backend}/{self.mode}{native} {self.precision}{scenario}{rep}"
        )


def _check_range(what: str, value: int, bounds: tuple[int, int]) -> None:
    low, high = bounds
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise UserError(f"{what} must be an integer from {low} to {high}, got {value!r}")
