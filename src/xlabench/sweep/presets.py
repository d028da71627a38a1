"""The sweep presets: named grids (`--preset`), the base layer of a sweep's configuration.

Each preset is a table of configuration values: `parts` (grid parts, `config.GridPart` fields)
and run settings, as `config.build_config` reads them.
"""

from __future__ import annotations

from typing import Any

from xlabench.core import BACKEND_MODES, MeasureSettings
from xlabench.core.backends import FRAMEWORKS, RUNTIMES
from xlabench.store.importer import STUDY_BUILT_AS
from xlabench.zoo import KINDS, REGISTRY

#: A resolution that stands for each model's own default input size.
DEFAULT_RESOLUTION = "default"
CLASSIFIER_KINDS = tuple(k for k in KINDS if k != "detector")

#: Short measurement for `--preset demo` (and fine for smoke runs): precision is secondary.
DEMO_MEASURE = MeasureSettings(
    target_rel_ci=0.05, min_sample_s=0.05, min_samples=5, max_samples=50, warmup_min_steps=3,
    warmup_min_s=0.2, warmup_max_s=3.0, budget_s=3.0, latency_steps=10,
)

#: The study's Keras backends (FRAMEWORKS) and the deployment runtimes (RUNTIMES, fp32 only),
#: which presets add when they ask for them: both come from core/backends.py.
_STUDY_COMMON: dict[str, Any] = {
    "batch_sizes": (4,), "precisions": ("fp32",), "repeats": 1,
    "backends": (*FRAMEWORKS, *RUNTIMES), "modes": (),
}
#: The variants in the study's published per-GPU tables (`shared/reference/`).
STUDY_PUBLISHED_MODELS = (
    "efficient_b1", "efficient_b2", "efficient_b3", "efficient_b4", "efficient_b5",
    "efficient_b6", "efficient_b7", "efficient_b1_v2", "efficient_b2_v2", "efficient_b3_v2",
    "efficient_s_v2", "efficient_m_v2", "inception_v3", "mobilenet_v1", "nasnet_large",
    "regnetx_016", "xception",
)


def _gpu_models() -> tuple[str, ...]:
    """The published models, the architectures the study really ran under their names, and the
    first (smallest) registry variant of every family not among them."""
    published = [*STUDY_PUBLISHED_MODELS,
                 *(STUDY_BUILT_AS[m] for m in STUDY_PUBLISHED_MODELS if m in STUDY_BUILT_AS)]
    covered = {REGISTRY.get(name).family for name in published}
    first_of_family: dict[str, str] = {}
    for entry in REGISTRY:
        if entry.family not in covered:
            first_of_family.setdefault(entry.family, entry.name)
    return (*published, *first_of_family.values())


GPU_MODELS = _gpu_models()


#: What each study-cpu model runs on: the study's TF without/with XLA and the honest graph
#: baseline, and the two runtimes a CPU deployer picks (compiled: their optimised setting).
_STUDY_CPU_ENGINES: tuple[dict[str, Any], ...] = (
    {"backends": ("tensorflow",), "modes": ("eager", "graph", "xla")},
    {"backends": ("openvino", "onnxruntime"), "modes": ("compiled",)},
)
#: About one quiet sitting: a tier of `study-cpu` is sized to this much estimated time.
STUDY_CPU_TIER_S = 90 * 60.0


#: `--preset study-cpu`'s tiers (`--tier N`): tier -> models, each run in full before the next.
#: GPU_MODELS in the order a 2-core machine should measure them: first the smallest of each
#: family (fewest MACs at its default resolution), then the rest of the published-table
#: models, then everything else; each group cut, in its order, into the fewest runs of about
#: equal estimated time that each fit STUDY_CPU_TIER_S. Cut on 2026-12-06 by the cost line of
#: then (14 s + 2.8 s a GMAC) and frozen: the study's committed sittings are these tiers
#: (`results/cpu/`), and a refitted line must not move a model between them.
STUDY_CPU_TIERS: dict[int, tuple[str, ...]] = {
    1: ("efficient_b1", "efficient_b1_v2", "inception_v3", "mobilenet_v1", "nasnet_large",
        "xception", "regnetx_002", "resnet50_v1", "resnet50_v2", "convnext_tiny",
        "mobilenet_v2"),
    2: ("mobilenet_v3_small", "vgg16", "densenet_121", "regnety_002", "resnetrs_50",
        "yolo_v8_m_pascalvoc"),
    3: ("retinanet_resnet50_pascalvoc", "vit_s16", "deit_tiny_patch16_224",
        "swin_tiny_patch4_window7_224", "mixer_b16"),
    4: ("efficient_b2", "efficient_b3", "efficient_b4", "efficient_b5", "efficient_b6",
        "efficient_b7"),
    5: ("efficient_b2_v2", "efficient_b3_v2", "efficient_s_v2", "efficient_m_v2",
        "regnetx_016"),
}
#: One process of EfficientNet-B7@600 in TF XLA took 184 s on a 2-vCPU Zen 5 (NASNetLarge@331
#: on OpenVINO 52 s): three times the slowest seen lets a slower CPU finish, and ends a hang.
STUDY_CPU_TIMEOUT_S = 600.0
_DEMO_COMMON: dict[str, Any] = {
    "resolutions": (64,), "batch_sizes": (4,), "precisions": ("fp32",), "measure": DEMO_MEASURE,
}
#: The issue's side-by-side models; sampling shortened from the defaults (8 s, not 20 s, a
#: process), since each configuration has three to four processes.
COMPARE_MODELS = ("mobilenet_v3_small", "resnet50_v1", "efficient_b0")
_COMPARE_COMMON: dict[str, Any] = {
    "models": COMPARE_MODELS, "resolutions": (224,), "batch_sizes": (4,), "precisions": ("fp32",),
    "measure": MeasureSettings(target_rel_ci=0.02, warmup_max_s=10.0, budget_s=8.0),
}
PRESETS: dict[str, dict[str, Any]] = {
    # The study's grid: each classifier at its own input size, detectors at 320 and 640; every
    # mode of every framework and of every deployment runtime in core/backends.py.
    "study": {
        "parts": (
            {**_STUDY_COMMON, "kinds": CLASSIFIER_KINDS, "resolutions": (DEFAULT_RESOLUTION,)},
            {**_STUDY_COMMON, "kinds": ("detector",), "resolutions": (320, 640)},
        ),
    },
    # A GPU machine without TensorFlow (issue 6's H200 image): the models of the study's
    # published tables plus one variant of every other family, Keras-on-JAX and on PyTorch.
    "gpu": {
        "parts": ({
            "models": GPU_MODELS, "resolutions": (DEFAULT_RESOLUTION,), "batch_sizes": (4,),
            "precisions": ("fp32",), "backends": ("jax", "torch"), "modes": (),
        },),
        "timeout_s": 600.0,
    },
    # `make demo`: MobileNetV3Small on every backend/mode but torch.compile (its compile alone
    # costs 85 s a process here, three processes a result), OpenVINO, ONNX Runtime and the C++
    # runner; ResNet50 in TF graph and XLA, the study's comparison. Three processes each.
    "demo": {
        "parts": (
            {**_DEMO_COMMON, "models": ("mobilenet_v3_small",), "backends": ("tensorflow", "jax")},
            {**_DEMO_COMMON, "models": ("mobilenet_v3_small",), "backends": ("torch",),
             "modes": ("eager",)},
            {**_DEMO_COMMON, "models": ("mobilenet_v3_small",),
             "backends": ("openvino", "onnxruntime"), "modes": ("compiled",)},
            {**_DEMO_COMMON, "models": ("mobilenet_v3_small",), "backends": ("tensorflow",),
             "modes": ("xla",), "runner": "native"},
            {**_DEMO_COMMON, "models": ("resnet50_v1",), "backends": ("tensorflow",),
             "modes": ("graph", "xla")},
        ),
        "timeout_s": 600.0,
        "db": "demo.db",
        # three processes per configuration and no more: the demo shows the method, in minutes
        "policy": {"min_processes": 3, "max_processes": 3, "rerun_flagged": 1},
    },
    # Side by side, in one sweep: three models of different shape (depthwise/SE, plain
    # residual, compound-scaled) at 224, batch 4, fp32, on every backend/mode and on the C++
    # runner wherever a native runtime exists, so one report holds "which runtime" and
    # "Python's share" with intervals from the same hours of the same machine.
    "compare": {
        "parts": (
            {**_COMPARE_COMMON, "backends": (*BACKEND_MODES,), "modes": ()},
            {**_COMPARE_COMMON, "backends": (*BACKEND_MODES,), "modes": (), "runner": "native"},
        ),
        "db": "compare.db",
        "policy": {"min_processes": 3, "max_processes": 3, "rerun_flagged": 1},
    },
    # The deployment runtimes against the TensorFlow graph they are exported from: every model
    # at its own resolution, batch 1 (latency-bound serving) and 4, fp32 (all they take), on
    # every mode of every runtime in core/backends.py, and TF eager/graph/XLA for reference.
    # Models a converter refuses are stored as `unsupported` with the reason: that is coverage
    # data.
    "runtimes": {
        "parts": ({
            "resolutions": (DEFAULT_RESOLUTION,), "batch_sizes": (1, 4),
            "precisions": ("fp32",), "backends": ("tensorflow", *RUNTIMES), "modes": (),
        },),
    },
    # A 2-core CPU's study (issue 38): GPU_MODELS at their own resolution, batch 4, fp32, on TF
    # eager/graph/XLA, OpenVINO and ONNX Runtime; every part tagged with its tier (`--tier`).
    # The method's default processes per result (no policy here).
    "study-cpu": {
        "parts": tuple(
            {"models": models, "resolutions": (DEFAULT_RESOLUTION,), "batch_sizes": (4,),
             "precisions": ("fp32",), "tier": tier, **engines}
            for tier, models in STUDY_CPU_TIERS.items() for engines in _STUDY_CPU_ENGINES),
        "timeout_s": STUDY_CPU_TIMEOUT_S,
    },
}
