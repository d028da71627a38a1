"""Every backend, described once: what it is called, its modes and precisions, what it needs
installed, who exports its model, and which xlabench-native runtime runs its artifacts.

Every other list of backends (`core.spec.BACKEND_MODES`, the sweep grid's backend order and
precisions, the runtimes a coverage survey tries, the backend modules `backends.load` imports,
the packages that identify a backend's software in `core.result`) is derived from `BACKENDS`.
Adding a backend is one entry here plus its module `xlabench.backends.<name>` (docs/extending.md).

Standard library only: core is imported by every layer, including those that never import a
framework.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

#: fp32: float32 everywhere; bf16: bfloat16 weights and compute;
#: mixed: float32 weights, bfloat16 compute.
PRECISIONS: tuple[str, ...] = ("fp32", "bf16", "mixed")
#: A Keras backend the study compares (it runs the model itself), or a deployment runtime (it
#: runs a model that a Keras backend exported, and is compared with Keras eager there).
Kind = Literal["framework", "runtime"]


@dataclass(frozen=True)
class NativeRuntime:
    """A runtime compiled into xlabench-native (native/src/runtimes/<name>.cc) that times an
    artifact the backend module's `export_native` wrote."""

    name: str
    #: How its timed loop waits for the outputs (stored with every record it makes).
    sync: str
    #: What to install when xlabench-native was built without it.
    install_hint: str


@dataclass(frozen=True)
class BackendInfo:
    """One backend: a Keras backend (framework) or a deployment runtime.

    Attributes:
        name: the spec's `backend`; its module is `xlabench.backends.<name>`.
        display_name: how people write it ("ONNX Runtime").
        kind: "framework" or "runtime" (see `Kind`).
        modes: its modes; a framework's first mode is its eager baseline.
        mode_names: each mode in words, for people (what the mode runs).
        precisions: the precisions a sweep may ask of it.
        package: the module that must be importable to run it ...
        install_hint: ... and how to get it.
        identifying_packages: the distributions (beside Keras and NumPy) whose versions can
            change its speed: two environments that agree on these run the same software.
        export_backend: the Keras backend that builds and exports the model (runtimes only).
        native_runtimes: mode -> the xlabench-native runtime that times that mode's artifact.
    """

    name: str
    display_name: str
    kind: Kind
    modes: tuple[str, ...]
    mode_names: MappingProxyType[str, str]
    precisions: tuple[str, ...]
    package: str
    install_hint: str
    identifying_packages: tuple[str, ...]
    export_backend: str | None = None
    native_runtimes: MappingProxyType[str, NativeRuntime] = field(
        default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        if (self.kind == "runtime") != (self.export_backend is not None):
            raise ValueError(f"{self.name}: a runtime (and only a runtime) has an export backend")
        unknown = (set(self.mode_names) | set(self.native_runtimes)) - set(self.modes)
        if unknown or set(self.mode_names) != set(self.modes):
            raise ValueError(f"{self.name}: mode names and native runtimes must name its modes")
        if not set(self.precisions) <= set(PRECISIONS):
            raise ValueError(f"{self.name}: unknown precisions {self.precisions}")

    @property
    def module(self) -> str:
        """The module that implements it (the `backends.base.Backend` protocol)."""
        return f"xlabench.backends.{self.name}"


def _names(**modes: str) -> MappingProxyType[str, str]:
    return MappingProxyType(dict(modes))


_TF_C = NativeRuntime(
    "tf_c", "TF_SessionRun returns when its outputs are computed (CPU): each step is synced",
    "pip install tensorflow-cpu (its wheel ships the C API), then `make setup`")

#: In sweep order: JAX first, because a JAX worker counts the model's MACs/FLOPs in-process;
#: the other backends then reuse the cached costs instead of paying for a separate worker.
BACKENDS: tuple[BackendInfo, ...] = (
    BackendInfo(
        "jax", "JAX", "framework", ("eager", "xla"),
        _names(eager="eager (op by op)", xla="jax.jit (XLA)"), PRECISIONS,
        "jax", "pip install 'xlabench[jax]'  (or: pip install jax)", ("jax", "jaxlib"),
        native_runtimes=MappingProxyType({"xla": NativeRuntime(
            "pjrt", "PJRT_Event_Await on the last execution's completion event",
            "pip install xla-cpu-pjrt (the PJRT CPU plugin), then `make setup`")})),
    BackendInfo(
        "tensorflow", "TensorFlow", "framework", ("eager", "graph", "xla"),
        _names(eager="eager", graph="tf.function (graph, no XLA)",
               xla="tf.function(jit_compile=True) (XLA)"), PRECISIONS,
        "tensorflow", "pip install 'xlabench[tensorflow]' (or: pip install tensorflow)",
        ("tensorflow",), native_runtimes=MappingProxyType({"graph": _TF_C, "xla": _TF_C})),
    BackendInfo(
        "torch", "PyTorch", "framework", ("eager", "compiled"),
        _names(eager="eager (torch.no_grad)", compiled="torch.compile (Inductor)"), PRECISIONS,
        "torch", "pip install 'xlabench[torch]'  (or: pip install torch)", ("torch",),
        native_runtimes=MappingProxyType({"compiled": NativeRuntime(
            "aoti", "AOTIModelPackageLoader::run returns when its outputs are computed (CPU)",
            "pip install torch (libtorch ships in its wheel), then `make setup`")})),
    # Deployment runtimes: fp32 only. Keras' ONNX export needs the float32 policy, OpenVINO's
    # TensorFlow frontend refuses bfloat16 graphs ("Const of unknown type"); LiteRT and IREE
    # run fp32 until a bf16 artifact is checked. OpenVINO and IREE have no mode of their own
    # without their compilers.
    BackendInfo(
        "openvino", "OpenVINO", "runtime", ("compiled",),
        _names(compiled="OpenVINO CPU plugin (compile_model)"), ("fp32",),
        "openvino", "pip install 'xlabench[openvino]'  (or: pip install openvino tensorflow)",
        ("openvino", "tensorflow"), export_backend="tensorflow",
        native_runtimes=MappingProxyType({"compiled": NativeRuntime(
            "openvino", "ov::InferRequest::infer is synchronous: it returns when its outputs "
            "are computed (CPU)",
            "pip install openvino (its wheel ships the C++ runtime and OpenVINOConfig.cmake), "
            "then `make setup`")})),
    BackendInfo(
        "onnxruntime", "ONNX Runtime", "runtime", ("basic", "compiled"),
        _names(basic="no graph optimisation (ORT_DISABLE_ALL)",
               compiled="all graph optimisations (ORT_ENABLE_ALL)"), ("fp32",),
        "onnxruntime", "pip install 'xlabench[onnxruntime]'  (or: pip install onnxruntime onnx "
        "tf2onnx tensorflow)", ("onnxruntime", "onnx", "tf2onnx", "tensorflow"),
        export_backend="tensorflow"),
    BackendInfo(
        "litert", "LiteRT", "runtime", ("basic", "compiled"),
        _names(basic="builtin kernels, XNNPACK delegate disabled",
               compiled="XNNPACK delegate"), ("fp32",),
        "ai_edge_litert", "pip install 'xlabench[litert]'  (or: pip install ai-edge-litert "
        "tensorflow)", ("ai-edge-litert", "tensorflow"), export_backend="tensorflow"),
    BackendInfo(
        "iree", "IREE", "runtime", ("compiled",),
        _names(compiled="iree-compile for llvm-cpu, local-task driver"), ("fp32",),
        "iree.runtime", "pip install 'xlabench[iree]'  (or: pip install iree-base-compiler "
        "iree-base-runtime jax)", ("iree-base-compiler", "iree-base-runtime", "jax", "jaxlib"),
        export_backend="jax"),
    BackendInfo(
        "executorch", "ExecuTorch", "runtime", ("basic", "compiled"),
        _names(basic="no delegate (its CPU kernels)", compiled="XNNPACK delegate"), ("fp32",),
        "executorch.runtime", "pip install 'xlabench[executorch]'  (or: pip install "
        "executorch torch)", ("executorch", "torch"), export_backend="torch"),
)

BY_NAME: MappingProxyType[str, BackendInfo] = MappingProxyType({b.name: b for b in BACKENDS})
FRAMEWORKS: tuple[str, ...] = tuple(b.name for b in BACKENDS if b.kind == "framework")
RUNTIMES: tuple[str, ...] = tuple(b.name for b in BACKENDS if b.kind == "runtime")
#: The backend the 2023 study measured (TensorFlow eager against XLA): its imported rows, the
#: report's study comparisons and its default `--backend`.
STUDY_BACKEND = "tensorflow"
#: The backend whose compiled cost analysis counts a model's MACs and FLOPs (runner/costs.py).
COST_BACKEND = "jax"
#: Each runtime's exporting Keras backend.
EXPORT_BACKENDS: MappingProxyType[str, str] = MappingProxyType(
    {b.name: b.export_backend for b in BACKENDS if b.export_backend is not None})
#: (backend, mode) -> the xlabench-native runtime that times its artifact.
NATIVE_RUNTIMES: MappingProxyType[tuple[str, str], str] = MappingProxyType(
    {(b.name, mode): rt.name for b in BACKENDS for mode, rt in b.native_runtimes.items()})
#: xlabench-native runtime name -> its description.
NATIVE_BY_NAME: MappingProxyType[str, NativeRuntime] = MappingProxyType(
    {rt.name: rt for b in BACKENDS for rt in b.native_runtimes.values()})


def info(name: str) -> BackendInfo:
    """The description of backend `name` (KeyError for an unknown one: check first)."""
    return BY_NAME[name]
