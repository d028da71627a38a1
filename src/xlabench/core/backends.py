"""Every backend, described once: what it is called, its modes and precisions, what it needs
installed, which of its modes compile, who exports its model, which xlabench-native runtime
runs its artifacts, and whether it provides a GEMM for the device's measured peak.

Every other list of backends and modes (`core.spec.BACKEND_MODES` and `COMPILED_MODES`, the
sweep grid's backend order and precisions, the runtimes a coverage survey tries, each runtime
module's export backend, the backend modules `backends.load` imports, the GEMM libraries the
device peak compares, the packages that identify a backend's software in `core.result`) is
derived from `BACKENDS`.
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
        compiled_modes: its modes that run a whole-graph compiler (the study's "xla=True"
            column); a mode name means the same in every backend (checked below).
        export_backend: the Keras backend that builds and exports the model (runtimes only).
        native_runtimes: mode -> the xlabench-native runtime that times that mode's artifact.
        model_precision: the precision its Keras model is built and exported in, whatever the
            spec asks (runtimes: "fp32", the model a deployer converts; the spec's precision
            is then the arithmetic the runtime executes, e.g. OpenVINO's bf16 precision hint).
            None: the spec's own (a framework computes in the dtype policy it builds under).
        precision_note: why it runs only its `precisions`, one line (when it lacks some).
        scenario_concurrency: how many LoadGen query batches it runs at once in the offline
            and server scenarios (threads calling its compiled step; more than 1 needs the
            module's `make_runners`, one runner per thread).
        scenario_sut: how it takes LoadGen's queries (batching, concurrency, threads), in
            words, stored with every scenario record.
        peak_gemm: the function of its module that returns its dense matrix multiply
            (`core.gemm.GemmMaker`) for the device's measured peak (runner/peaks.py), or None
            when it provides none.
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
    model_precision: str | None = None
    precision_note: str = ""
    scenario_concurrency: int = 1
    scenario_sut: str = "one query batch at a time; its own threads use the worker's CPUs"
    peak_gemm: str | None = None
    #: No default: every backend says which of its modes compile (possibly none).
    compiled_modes: tuple[str, ...] = field(kw_only=True)

    def __post_init__(self) -> None:
        if self.scenario_concurrency < 1 or not self.scenario_sut:
            raise ValueError(f"{self.name}: needs a scenario concurrency >= 1, described")
        if (self.kind == "runtime") != (self.export_backend is not None):
            raise ValueError(f"{self.name}: a runtime (and only a runtime) has an export backend")
        unknown = (set(self.mode_names) | set(self.native_runtimes)
                   | set(self.compiled_modes)) - set(self.modes)
        if unknown or set(self.mode_names) != set(self.modes):
            raise ValueError(f"{self.name}: mode names, native runtimes and compiled modes must "
                             "name its modes")
        if not set(self.precisions) <= set(PRECISIONS) or self.model_precision not in (
                None, *PRECISIONS):
            raise ValueError(f"{self.name}: unknown precisions {self.precisions}")
        if (set(self.precisions) != set(PRECISIONS)) != bool(self.precision_note):
            raise ValueError(f"{self.name}: say why it lacks a precision (and only then)")

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
        compiled_modes=("xla",),
        native_runtimes=MappingProxyType({"xla": NativeRuntime(
            "pjrt", "PJRT_Event_Await on the last execution's completion event",
            "pip install xla-cpu-pjrt (the PJRT CPU plugin), then `make setup`")})),
    BackendInfo(
        "tensorflow", "TensorFlow", "framework", ("eager", "graph", "xla"),
        _names(eager="eager", graph="tf.function (graph, no XLA)",
               xla="tf.function(jit_compile=True) (XLA)"), PRECISIONS,
        "tensorflow", "pip install 'xlabench[tensorflow]' (or: pip install tensorflow)",
        ("tensorflow",), compiled_modes=("xla",),  # graph: no whole-graph compiler
        native_runtimes=MappingProxyType({"graph": _TF_C, "xla": _TF_C})),
    BackendInfo(
        "torch", "PyTorch", "framework", ("eager", "compiled"),
        _names(eager="eager (torch.no_grad)", compiled="torch.compile (Inductor)"), PRECISIONS,
        "torch", "pip install 'xlabench[torch]'  (or: pip install torch)", ("torch",),
        compiled_modes=("compiled",), peak_gemm="peak_gemm",
        native_runtimes=MappingProxyType({"compiled": NativeRuntime(
            "aoti", "AOTIModelPackageLoader::run returns when its outputs are computed (CPU)",
            "pip install torch (libtorch ships in its wheel), then `make setup`")})),
    # Deployment runtimes convert the fp32 Keras model (model_precision); a precision is what
    # the runtime executes. Only OpenVINO executes bf16 on a CPU (its precision hint); why
    # each other cannot is its precision_note (checked on the Zen 4 VM, AVX512_BF16:
    # docs/method.md).
    # OpenVINO and IREE have no mode of their own without their compilers.
    BackendInfo(
        "openvino", "OpenVINO", "runtime", ("compiled",),
        _names(compiled="OpenVINO CPU plugin (compile_model)"), ("fp32", "bf16"),
        "openvino", "pip install 'xlabench[openvino]'  (or: pip install openvino tensorflow)",
        ("openvino", "tensorflow"), export_backend="tensorflow", model_precision="fp32",
        compiled_modes=("compiled",), peak_gemm="peak_gemm",
        precision_note="its bf16 (the precision hint on the fp32 model) is already fp32 weights "
        "with bf16 compute; mixed is a Keras dtype policy, for the frameworks",
        native_runtimes=MappingProxyType({"compiled": NativeRuntime(
            "openvino", "ov::InferRequest::infer is synchronous: it returns when its outputs "
            "are computed (CPU)",
            "pip install openvino (its wheel ships the C++ runtime and OpenVINOConfig.cmake), "
            "then `make setup`")}),
        # A fixed 2, not the worker's CPU count: the concurrency is part of the spec, made
        # before any worker runs (2 = this machine's cores; a worker with fewer CPUs than
        # streams is refused, backends/openvino.py).
        scenario_concurrency=2,
        scenario_sut="THROUGHPUT hint, 2 streams, one infer request per LoadGen thread; "
        "INFERENCE_NUM_THREADS = the worker's CPUs, shared by the streams"),
    BackendInfo(
        "onnxruntime", "ONNX Runtime", "runtime", ("basic", "compiled"),
        _names(basic="no graph optimisation (ORT_DISABLE_ALL)",
               compiled="all graph optimisations (ORT_ENABLE_ALL)"), ("fp32",),
        "onnxruntime", "pip install 'xlabench[onnxruntime]'  (or: pip install onnxruntime onnx "
        "tf2onnx tensorflow)", ("onnxruntime", "onnx", "tf2onnx", "tensorflow"),
        export_backend="tensorflow", model_precision="fp32", compiled_modes=("compiled",),
        precision_note="its CPU execution provider has no bfloat16 Conv or MatMul kernels "
        "(NOT_IMPLEMENTED), and Keras' ONNX export needs the float32 dtype policy",
        scenario_sut="one session run at a time: intra-op threads = the worker's CPUs, "
        "inter-op 1, sequential execution"),
    BackendInfo(
        "litert", "LiteRT", "runtime", ("basic", "compiled"),
        _names(basic="builtin kernels, XNNPACK delegate disabled",
               compiled="XNNPACK delegate"), ("fp32",),
        "ai_edge_litert", "pip install 'xlabench[litert]'  (or: pip install ai-edge-litert "
        "tensorflow)", ("ai-edge-litert", "tensorflow"), export_backend="tensorflow",
        model_precision="fp32", compiled_modes=("compiled",),
        precision_note="the converter makes no bf16 model: supported_types=[tf.bfloat16] "
        "stays float32 and a bfloat16 graph is refused (its fp16 weights compute in f32)"),
    BackendInfo(
        "iree", "IREE", "runtime", ("compiled",),
        _names(compiled="iree-compile for llvm-cpu, local-task driver"), ("fp32",),
        "iree.runtime", "pip install 'xlabench[iree]'  (or: pip install iree-base-compiler "
        "iree-base-runtime jax)", ("iree-base-compiler", "iree-base-runtime", "jax", "jaxlib"),
        export_backend="jax", model_precision="fp32", compiled_modes=("compiled",),
        precision_note="iree-compile's bf16 demotion takes named matmuls only, not Keras' "
        "convolutions (iree-org/iree#17484), and a bf16 StableHLO export misses bf16 parity "
        "(ResNet50: 0.08 > 0.06)"),
    BackendInfo(
        "executorch", "ExecuTorch", "runtime", ("basic", "compiled"),
        _names(basic="no delegate (its CPU kernels)", compiled="XNNPACK delegate"), ("fp32",),
        "executorch.runtime", "pip install 'xlabench[executorch]'  (or: pip install "
        "executorch torch)", ("executorch", "torch"), export_backend="torch",
        model_precision="fp32", compiled_modes=("compiled",),
        precision_note="its XNNPACK delegate takes no bf16 convolution (bf16 is opt-in, "
        "fully connected only); a bf16 program runs on the portable reference kernels",
        # One C++ runtime for both modes: the program itself says whether it delegates.
        native_runtimes=MappingProxyType(dict.fromkeys(("basic", "compiled"), NativeRuntime(
            "executorch", "Method::execute is synchronous on the CPU: it returns when its "
            "outputs are computed (XNNPACK and the CPU kernels run on its threadpool inside the "
            "call)",
            "pip install executorch (its wheel ships the C++ runtime, XNNPACK and the CPU "
            "kernels as shared libraries, with a CMake package), then `make setup`")))),
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
#: Backends that provide a GEMM for the device's measured peak, in table order.
GEMM_BACKENDS: tuple[str, ...] = tuple(b.name for b in BACKENDS if b.peak_gemm)
#: (backend, mode) -> the xlabench-native runtime that times its artifact.
NATIVE_RUNTIMES: MappingProxyType[tuple[str, str], str] = MappingProxyType(
    {(b.name, mode): rt.name for b in BACKENDS for mode, rt in b.native_runtimes.items()})
#: xlabench-native runtime name -> its description.
NATIVE_BY_NAME: MappingProxyType[str, NativeRuntime] = MappingProxyType(
    {rt.name: rt for b in BACKENDS for rt in b.native_runtimes.values()})


def compiled_mode_names(backends: tuple[BackendInfo, ...]) -> frozenset[str]:
    """The mode names `backends` flag compiled. A spec, a record and a report read "compiled"
    from the mode's name alone, so a name must be compiled in every backend that has it or in
    none (ValueError otherwise)."""
    compiled = {m for b in backends for m in b.compiled_modes}
    mixed = sorted(compiled & {m for b in backends for m in b.modes if m not in b.compiled_modes})
    if mixed:
        raise ValueError(f"modes {mixed} are compiled in one backend and not in another")
    return frozenset(compiled)


#: Modes that run a whole-graph compiler (the study's "xla=True" column), from every
#: backend's `compiled_modes`.
COMPILED_MODES: frozenset[str] = compiled_mode_names(BACKENDS)


def model_precision(backend: str, precision: str) -> str:
    """The precision `backend` builds a spec's Keras model in (the dtype policy's): the
    spec's own, or the fp32 model a runtime converts and then executes at `precision`."""
    return BY_NAME[backend].model_precision or precision


def precision_problem(backend: str, precision: str) -> str | None:
    """Why `backend` cannot run `precision` (one line), or None when it can."""
    entry = BY_NAME[backend]
    if precision in entry.precisions:
        return None
    return (f"{backend} runs {'/'.join(entry.precisions)} only, not {precision!r}: "
            f"{entry.precision_note}")


def info(name: str) -> BackendInfo:
    """The description of backend `name` (KeyError for an unknown one: check first)."""
    return BY_NAME[name]
