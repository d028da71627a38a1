"""The device's matmul peak: a real (small) measurement, stored once per environment."""

from __future__ import annotations

import importlib
import importlib.util
import io
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.sweep.conftest import ScriptedExecutor
from xlabench.backends import load
from xlabench.core import BACKENDS, BackendInfo, cpu
from xlabench.measure import peak as peaklib
from xlabench.runner.isolate import Placement
from xlabench.store import ResultStore
from xlabench.sweep import build_config, run_sweep
from xlabench.sweep import run as sweep_run
from xlabench.sweep.executors import LocalExecutor

torch = pytest.importorskip("torch")
#: The module (the package exports a function of the same name as the module).
peaks_module = importlib.import_module("xlabench.runner.peaks")
#: Small and few: real matmuls, not a benchmark (a few seconds on 2 cores).
SMALL = ("--sizes", "64,128", "--calls", "2", "--allow-busy")


#: The GEMM libraries of this environment: each must appear among the candidates.
INSTALLED = tuple(lib for lib in peaklib.LIBRARIES if importlib.util.find_spec(lib) is not None)
#: (dtype, library) that may be skipped, with what the reason must say: NumPy has no bf16 GEMM;
#: OpenVINO on a CPU without bf16 instructions (Zen 2) executes a bf16 MatMul in f32.
MAY_SKIP = {("bf16", "numpy"): "bfloat16", ("bf16", "openvino"): "executes the MatMul in f32"}


def test_peak_is_the_best_installed_gemm_with_every_candidate() -> None:
    peaks = peaklib.measure_peaks(peaks_module.gemm_makers(), sizes=(64, 128), calls=2)
    assert set(peaks) == {"fp32", "bf16"}
    for dtype, peak in peaks.items():
        assert peak.dtype == dtype and peak.source == f"measured matmul {dtype}"
        assert [c["library"] for c in peak.candidates] == list(peaklib.LIBRARIES)
        measured = [c for c in peak.candidates if "skipped" not in c]
        skipped = {c["library"]: c["skipped"] for c in peak.candidates if "skipped" in c}
        for library in set(INSTALLED) & set(skipped):  # measured, or skipped for a known why
            assert (dtype, library) in MAY_SKIP, skipped[library]
            assert MAY_SKIP[dtype, library] in skipped[library], skipped[library]
        best = max(measured, key=lambda c: c["gflops_s"])
        assert (peak.library, peak.gflops_s, peak.size) == (
            best["library"], best["gflops_s"], best["size"])
        assert peak.library_version == best["library_version"]
        for candidate in measured:  # each figure: FLOPs of its size over its median call
            assert math.isfinite(candidate["gflops_s"]) and candidate["gflops_s"] > 0
            assert candidate["size"] in (64, 128) and candidate["sizes_tried"][0] == 64
            assert candidate["gflops_s"] == pytest.approx(
                2 * candidate["size"] ** 3 / candidate["median_s"] / 1e9)
            assert candidate["threads"] >= 1 and candidate["library_version"]
        assert peak.gflops_s == pytest.approx(2 * peak.size**3 / peak.median_s / 1e9)
        assert peak.calls == 2 and "best median of 2 calls" in peak.method
        assert peaklib.MatmulPeak.from_dict(peak.to_dict()) == peak
        assert peaklib.MatmulPeak.from_dict(json.loads(json.dumps(peak.to_dict()))) == peak
    torch_fp32 = next(c for c in peaks["fp32"].candidates if c["library"] == "torch")
    assert torch_fp32["library_version"] == torch.__version__
    assert torch_fp32["threads"] == torch.get_num_threads()
    if "numpy" in INSTALLED:  # fp32 measured; bf16 skipped: numpy has no bfloat16
        assert any(c["library"] == "numpy" and "gflops_s" in c for c in peaks["fp32"].candidates)
        (numpy_bf16,) = [c for c in peaks["bf16"].candidates if c["library"] == "numpy"]
        assert "bfloat16" in numpy_bf16["skipped"] and "numpy" in peaks["bf16"].method
    if "openvino" in INSTALLED:  # the precision its runtime graph executed is the one asked
        executed = {d: next(c for c in p.candidates if c["library"] == "openvino")
                    for d, p in peaks.items()}
        assert executed["fp32"]["executed"] == "f32" and executed["fp32"]["kernel"]
        assert executed["bf16"].get("executed", "bf16") == "bf16"  # or skipped, saying why
    facts = cpu.read_cpu_facts()
    assert peaks["fp32"].theoretical_gflops_s == cpu.theoretical_peak_gflops_s(
        facts, facts["cores"], "fp32")[0]
    assert peaks["fp32"].theoretical_how


def test_a_missing_or_failing_library_is_skipped_with_why() -> None:
    def broken(dtype: str) -> peaklib.Gemm:
        raise RuntimeError("no kernel today")

    def missing(dtype: str) -> peaklib.Gemm:
        raise ImportError("No module named 'absent'")

    makers = {**peaks_module.gemm_makers(), "broken": broken, "absent": missing}
    peak = peaklib.measure_dtype("fp32", makers, (64,), 2, ("broken", "absent", "nosuch", "torch"))
    skipped = {c["library"]: c["skipped"] for c in peak.candidates if "skipped" in c}
    assert skipped["broken"] == "RuntimeError: no kernel today"
    assert skipped["absent"].startswith("not installed")
    assert skipped["nosuch"].startswith("unknown library")
    assert peak.library == "torch" and "skipped: broken" in peak.method
    with pytest.raises(RuntimeError, match="no fp32 peak: broken"):
        peaklib.measure_dtype("fp32", makers, (64,), 2, ("broken",))


@pytest.mark.parametrize("described", BACKENDS, ids=lambda b: b.name)
def test_every_backend_with_a_gemm_is_compared_by_the_peak(described: BackendInfo) -> None:
    """A backend module's GEMM that its table entry does not name would never be timed; one
    the entry names must be among the peak's libraries and made through runner/peaks.py."""
    module = load(described.name)
    assert hasattr(module, "peak_gemm") == (described.peak_gemm is not None)
    makers = peaks_module.gemm_makers()
    assert list(makers) == list(peaklib.LIBRARIES)
    assert (described.name in peaklib.LIBRARIES) == (described.peak_gemm is not None)
    if described.peak_gemm and importlib.util.find_spec(described.package) is not None:
        gemm = makers[described.name]("fp32")  # its module's function, not yet timed
        assert (gemm.library, gemm.threads >= 1, bool(gemm.version)) == (
            described.name, True, True)


def test_a_peak_stored_before_libraries_were_compared_still_loads(tmp_path: Path) -> None:
    old = {"dtype": "fp32", "gflops_s": 155.0, "size": 2048, "sizes_tried": [1024, 2048],
           "calls": 5, "median_s": 0.11, "threads": 2, "library": "torch",
           "library_version": "2.5.1", "device": "cpu"}
    peak = peaklib.MatmulPeak.from_dict(old)
    assert (peak.library, peak.gflops_s, peak.sizes_tried) == ("torch", 155.0, (1024, 2048))
    assert peak.candidates == () and peak.theoretical_gflops_s is None
    minimal = peaklib.MatmulPeak.from_dict({"dtype": "bf16", "gflops_s": 80.0, "extra": 1})
    assert (minimal.library, minimal.size) == ("torch", 0)
    with ResultStore(tmp_path / "r.db") as store:
        store.put_peaks("envA", [old])
        assert peaks_module.ensure_peaks(store, "envA") == {"fp32": peak}


def test_peak_is_measured_once_per_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ResultStore(tmp_path / "r.db") as store:
        first = peaks_module.ensure_peaks(store, "envA", worker_args=SMALL)  # a real worker process
        assert set(first) == {"fp32", "bf16"}
        stored = store.get_peaks("envA")
        assert {d: p["gflops_s"] for d, p in stored.items()} == {
            d: p.gflops_s for d, p in first.items()}
        assert stored["bf16"]["size"] in (64, 128)
        assert stored["fp32"]["library"] in INSTALLED
        assert {c["library"] for c in stored["fp32"]["candidates"]} == set(peaklib.LIBRARIES)
        assert "theoretical_how" in stored["fp32"]

        def measure_again(*args: object, **kwargs: object) -> None:
            raise AssertionError("measured again although the store has the peaks")

        monkeypatch.setattr(peaks_module, "measure_peaks_isolated", measure_again)
        assert peaks_module.ensure_peaks(store, "envA") == first
        assert store.get_peaks("envA") == stored
        with pytest.raises(AssertionError, match="measured again"):
            peaks_module.ensure_peaks(store, "envB")  # another environment is measured


def test_a_failed_peak_stores_nothing_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(peaks_module, "measure_peaks_isolated", lambda *a, **k: ({}, "no torch"))
    notes: list[str] = []
    with ResultStore(tmp_path / "r.db") as store:
        assert peaks_module.ensure_peaks(store, "envA", note=notes.append) == {}
        assert store.all_peaks() == {}
    assert notes and "no torch" in notes[0]


def test_sweeps_measure_the_local_environment_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, record_factory
) -> None:
    calls: list[str] = []
    monkeypatch.setattr(sweep_run, "ensure_peaks",
                        lambda store, env_id, note: calls.append(env_id) or {})
    with ResultStore(tmp_path / "r.db") as store:
        sweep_run.measure_local_peaks(store, LocalExecutor(1.0, [Placement()]), print)
    assert calls == [sweep_run.current_env_id()]
    config = build_config(overrides={"models": "resnet50_v1", "backends": "jax",
                                     "modes": "eager", "resolutions": "32", "processes": 1,
                                     "db": str(tmp_path / "s.db")})
    run_sweep(config, io.StringIO(), executor=ScriptedExecutor(record_factory), tty=False)
    assert calls == [sweep_run.current_env_id()]  # a test executor runs nothing: no peak


# ------------------------------------------------------------- the CPU's theoretical peak
ZEN_FLAGS = ["avx", "avx2", "avx512_bf16", "avx512f", "fma", "sse2"]


@pytest.mark.parametrize(("vendor", "family", "model", "flags", "name", "fp32", "bf16"), [
    ("AuthenticAMD", 0x19, 0x01, ["avx", "avx2", "fma"], "Zen 3", 32, 32),  # Milan
    ("AuthenticAMD", 0x19, 0x21, ["avx", "avx2", "fma"], "Zen 3", 32, 32),  # Vermeer
    ("AuthenticAMD", 0x19, 0x11, ZEN_FLAGS, "Zen 4", 32, 64),  # Genoa: 2 x 256-bit halves
    ("AuthenticAMD", 0x19, 0x61, ZEN_FLAGS, "Zen 4", 32, 64),  # Raphael
    ("AuthenticAMD", 0x19, 0xA0, ZEN_FLAGS, "Zen 4", 32, 64),  # Bergamo
    ("AuthenticAMD", 0x1A, 0x02, ZEN_FLAGS, "Zen 5", 64, 128),  # Turin: full 512-bit
    ("AuthenticAMD", 0x1A, 0x44, ZEN_FLAGS, "Zen 5", 64, 128),  # Granite Ridge
    ("AuthenticAMD", 0x1A, 0x24, ZEN_FLAGS, "Zen 5", 32, 64),  # Strix Point: 256-bit
    ("AuthenticAMD", 0x17, 0x31, ["avx", "avx2", "fma"], "Zen 2", 32, 32),  # Rome
    ("GenuineIntel", 6, 0x8F, ["avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile", "fma"],
     "Sapphire Rapids", 64, 1024),
    ("GenuineIntel", 6, 0x55, ["avx2", "avx512f", "avx512_vnni", "fma"], "Cascade Lake",
     64, 64),
    ("GenuineIntel", 6, 0x55, ["avx2", "avx512f", "avx512_bf16", "fma"], "Cooper Lake",
     64, 128),
    ("GenuineIntel", 6, 0x3F, ["avx", "avx2", "fma"], "Haswell", 32, 32),
])
def test_cpu_table(vendor: str, family: int, model: int, flags: list[str], name: str,
                   fp32: int, bf16: int) -> None:
    assert cpu.cpu_microarchitecture(vendor, family, model, flags) == name
    facts = {"vendor": vendor, "family": family, "model": model, "flags": flags,
             "model_name": "Intel(R) Xeon(R) Platinum 8480+" if vendor == "GenuineIntel"
             else "AMD EPYC"}
    assert cpu.flop_per_cycle_per_core(facts, "fp32")[0] == fp32
    assert cpu.flop_per_cycle_per_core(facts, "bf16")[0] == bf16


def test_intel_without_xeon_has_one_avx512_fma_unit() -> None:
    facts = {"vendor": "GenuineIntel", "family": 6, "model": 0x8C, "flags": ["avx2", "avx512f",
             "fma"], "model_name": "11th Gen Intel(R) Core(TM) i7-1165G7 @ 2.80GHz"}
    assert cpu.cpu_microarchitecture("GenuineIntel", 6, 0x8C) == "Tiger Lake"
    value, how = cpu.flop_per_cycle_per_core(facts, "fp32")
    assert value == 32 and "1 FMA units" in how


def test_unknown_cpus_get_no_peak_and_say_why() -> None:
    assert cpu.cpu_microarchitecture("AuthenticAMD", 0x1A, 0xF0) is None
    assert cpu.cpu_microarchitecture("ARM", None, None) is None
    value, how = cpu.theoretical_peak_gflops_s(
        {"vendor": "AuthenticAMD", "family": 0x1A, "model": 0xF0, "max_mhz": 3000.0}, 4, "fp32")
    assert value is None and "not in the table" in how
    value, how = cpu.theoretical_peak_gflops_s({"vendor": "", "max_mhz": 3000.0}, 4, "fp32")
    assert value is None and "not in the table" in how


def test_theoretical_peak_is_flop_per_cycle_times_cores_times_clock() -> None:
    zen4 = {"vendor": "AuthenticAMD", "family": 0x19, "model": 0x11, "flags": ZEN_FLAGS,
            "max_mhz": 2000.0, "mhz_source": "test clock"}
    value, how = cpu.theoretical_peak_gflops_s(zen4, 4, "fp32")
    assert value == pytest.approx(32 * 4 * 2.0)  # 2 FMA x 8 lanes x 2, 4 cores, 2 GHz
    assert "Zen 4" in how and "4 cores" in how and "2000 MHz (test clock)" in how
    assert cpu.theoretical_peak_gflops_s(zen4, 4, "bf16")[0] == pytest.approx(512.0)
    no_bf16 = {**zen4, "flags": ["avx2", "avx512f", "fma"]}
    value, how = cpu.theoretical_peak_gflops_s(no_bf16, 4, "bf16")
    assert value == pytest.approx(256.0) and "fp32 rate" in how
    assert cpu.theoretical_peak_gflops_s({**zen4, "max_mhz": None}, 4, "fp32")[0] is None
    assert cpu.theoretical_peak_gflops_s(zen4, None, "fp32")[0] is None


def test_read_cpu_facts_from_proc_and_sys(tmp_path: Path) -> None:
    allowed = sorted(os.sched_getaffinity(0))
    block = ("processor\t: {n}\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\n"
             "model name\t: AMD EPYC 9654 96-Core Processor\ncpu MHz\t\t: {mhz}\n"
             "flags\t\t: fpu sse2 avx fma avx2 avx512f avx512_bf16 ht\n")
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("\n".join(block.format(n=n, mhz=2400.5 + n) for n in allowed))
    sys_cpu = tmp_path / "sys"
    for n in allowed:  # every allowed CPU an SMT thread of one core
        topology = sys_cpu / f"cpu{n}" / "topology"
        topology.mkdir(parents=True)
        (topology / "core_id").write_text("0\n")
        (topology / "physical_package_id").write_text("0\n")
    facts = cpu.read_cpu_facts(cpuinfo, sys_cpu)
    assert (facts["vendor"], facts["family"], facts["model"]) == ("AuthenticAMD", 25, 17)
    assert facts["microarchitecture"] == "Zen 4" and "ht" not in facts["flags"]
    assert facts["flags"] == ["avx", "avx2", "avx512_bf16", "avx512f", "fma", "sse2"]
    assert facts["max_mhz"] == pytest.approx(2400.5 + allowed[-1])
    assert facts["mhz_source"].startswith("/proc/cpuinfo cpu MHz")
    assert (facts["cpus"], facts["cores"]) == (len(allowed), 1)
    (sys_cpu / f"cpu{allowed[0]}" / "cpufreq").mkdir()
    (sys_cpu / f"cpu{allowed[0]}" / "cpufreq" / "cpuinfo_max_freq").write_text("3700000\n")
    facts = cpu.read_cpu_facts(cpuinfo, sys_cpu)
    assert (facts["max_mhz"], facts["mhz_source"]) == (3700.0, "cpufreq cpuinfo_max_freq")
    assert cpu.read_cpu_facts(tmp_path / "none", tmp_path / "none")["vendor"] == ""


def test_a_peak_measured_on_a_busy_machine_is_not_written(tmp_path: Path) -> None:
    """A peak is stored once per environment: one taken while other processes held the CPUs
    would stay too low for every later result, so the peak process refuses to write it."""
    hog = "import time\nend = time.time() + 60\nwhile time.time() < end: pass"
    hogs = [subprocess.Popen([sys.executable, "-c", hog]) for _ in range(os.cpu_count() or 1)]
    try:
        out = tmp_path / "peaks.json"
        done = subprocess.run(
            # n = 2048: a window of about a second; at 512 it was near the 0.2 s below which
            # interference.between cannot judge (None), so the peak was sometimes written
            [sys.executable, "-m", "xlabench.runner.peak_worker", str(out), "--sizes", "2048",
             "--calls", "3", "--libraries", "numpy"],
            capture_output=True, text=True, timeout=120)
    finally:
        for process in hogs:
            process.kill()
            process.wait()
    assert done.returncode == 3, done.stderr
    assert "not stored: measured under interference" in done.stderr
    assert not out.exists()
