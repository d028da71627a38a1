"""The device's matmul peak: measured once per environment, in a process of its own
(`runner.peak_worker`), and kept in the store. Here each backend's GEMM (its `peak_gemm` in
core/backends.py) is wired into measure's framework-free timing (`measure.peak`)."""

from __future__ import annotations

import json
import os
import shlex
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from xlabench.backends import load
from xlabench.core import one_line
from xlabench.core.backends import GEMM_BACKENDS, info
from xlabench.core.child import run_child
from xlabench.core.gemm import Gemm, GemmMaker
from xlabench.measure.peak import OWN_GEMMS, MatmulPeak
from xlabench.runner.isolate import current_env_id
from xlabench.store import ResultStore

#: The peak (every installed GEMM library, fp32 and bf16) takes 20-30 s on 2 cores; two
#: minutes means something is wrong (a loaded machine).
PEAK_TIMEOUT_S = 120.0
#: Extra arguments of the peak process (`python -m xlabench.runner.peak_worker --help`) where none
#: are passed: the test suite makes it small (`tests/conftest.py`); a peak so measured is
#: stored like any other, so never set it where results count.
PEAK_ARGS_ENV = "XLABENCH_PEAK_ARGS"


def gemm_makers() -> dict[str, GemmMaker]:
    """Every GEMM the peak compares, by library, in `measure.peak.LIBRARIES` order: each
    backend's that provides one (imported when made: a framework that is missing skips its
    library only) and measure's own."""
    return {**{name: _backend_gemm(name) for name in GEMM_BACKENDS}, **OWN_GEMMS}


def _backend_gemm(backend: str) -> GemmMaker:
    def make(dtype: str) -> Gemm:
        maker: GemmMaker = getattr(load(backend), info(backend).peak_gemm or "")
        return maker(dtype)

    return make


def measure_peaks_isolated(
    timeout_s: float = PEAK_TIMEOUT_S, worker_args: tuple[str, ...] = ()
) -> tuple[dict[str, MatmulPeak], str]:
    """The device's matmul peaks, measured in a fresh process with the default threads.

    Returns:
        The peaks by dtype ({} if they could not be measured) and why not ("" if measured).
    """
    worker_args = worker_args or tuple(shlex.split(os.environ.get(PEAK_ARGS_ENV, "")))
    with tempfile.TemporaryDirectory(prefix="xlabench-peak-") as tmp:
        out = Path(tmp) / "peaks.json"
        command = [sys.executable, "-m", "xlabench.runner.peak_worker", str(out), *worker_args]
        try:
            done = run_child(command, timeout_s, keep_chars=4000)
        except OSError as exc:
            return {}, one_line(f"cannot start the peak measurement: {exc}")
        if done.timed_out:
            return {}, f"peak measurement timed out after {timeout_s:g} s"
        if not done.ok or not out.exists():
            return {}, done.last_line()[:200]
        peaks = [MatmulPeak.from_dict(p) for p in json.loads(out.read_text())]
    return {p.dtype: p for p in peaks}, ""


def ensure_peaks(
    store: ResultStore, env_id: str | None = None, timeout_s: float = PEAK_TIMEOUT_S,
    worker_args: tuple[str, ...] = (), note: Callable[[str], None] | None = None,
) -> dict[str, MatmulPeak]:
    """The stored peaks of this machine's environment, measured and stored first if absent.

    Once per environment: every record of it is read against the same peak, and a resumed or
    second sweep does not measure again. A failed measurement stores nothing (the next run
    tries again) and never stops a benchmark; `note` gets one line saying why.
    """
    env_id = env_id or current_env_id()
    stored = store.get_peaks(env_id)
    if stored:
        return {dtype: MatmulPeak.from_dict(p) for dtype, p in stored.items()}
    peaks, why = measure_peaks_isolated(timeout_s, worker_args)
    if peaks:
        store.put_peaks(env_id, [p.to_dict() for p in peaks.values()])
    elif note is not None:
        note(f"device peak not measured ({why}); CPU rows get no % of peak")
    return peaks
