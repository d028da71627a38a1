"""Why XLA loses on CPU, measured (issue 38, item 5).

XLA:CPU runs a convolution through its own Eigen kernel unless a flag routes it to a library
(oneDNN, YNNPACK), and its code generator prefers 256-bit vectors. Three parts, each on
TensorFlow's XLA (the study's "with XLA"):

  --check  each candidate flag alone, in a fresh interpreter: a jit-compiled convolution with
           the flag in XLA_FLAGS, its result checked against TensorFlow's own. XLA aborts the
           process on a flag its build does not know, so a flag is measured only once it passes.
  --hlo    per model, one TF XLA process per variant with the optimised HLO dumped: how many
           convolutions XLA keeps for its own kernel and how many a library fusion or custom
           call took. ResNet50 has no depthwise convolution and still lost 4.3x to TF graph at
           64 px: this says where its convolutions ran.
  --ab     per model, `xlabench ab` of TF XLA at XLA's defaults (side a, label `xla`) against
           each known flag (side b, labelled by the flag, its XLA_FLAGS recorded with the
           environment) and against TF graph (the gap to close): interleaved rounds until a
           verdict, every pair stored in --db. A flag closes the gap where its b/a reaches
           graph's.

The models default to the first tier of `--preset study-cpu` at their default resolution,
batch 4. Run --ab on a quiet machine (a model's XLA process takes 20-180 s here). The budget
must hold four rounds, the first at which an ab's interval can be finite: on the 2-vCPU Zen 3
VM a MobileNetV2 round took about 60 s, so 180 s gave three rounds and no interval (use 300 s
or more there):

    .venv/bin/python bench/xla_cpu_flags.py --check
    .venv/bin/python bench/xla_cpu_flags.py --hlo --models resnet50_v1 --resolution 64
    .venv/bin/python bench/xla_cpu_flags.py --ab --models resnet50_v1,mobilenet_v2 \\
        --db results/cpu/amd-epyc-zen-4-x2/xla-flags.db --out flags.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from xlabench.analysis.xla_flags import DEFAULTS_LABEL as DEFAULT_LABEL
from xlabench.analysis.xla_flags import GAP_VERDICTS, GRAPH_LABEL, gap_verdict
from xlabench.measure import stats
from xlabench_cli import XlabenchError, xlabench_json

#: label -> XLA_FLAGS: the flags that route XLA:CPU's convolutions and matmuls elsewhere, or
#: widen its vectors. The label is the variant's `--label` in the database.
VARIANTS: dict[str, str] = {
    "xla-onednn": "--xla_cpu_use_onednn=true",
    "xla-onednn-custom-call": "--xla_cpu_experimental_onednn_custom_call=true",
    "xla-ynn-convolution": "--xla_cpu_experimental_ynn_fusion_type=+individual_convolution",
    "xla-xnn-graph": "--xla_cpu_experimental_xnn_graph_fusion_mode=XNN_GRAPH_FUSION_MODE_GREEDY",
    "xla-vector-512": "--xla_cpu_prefer_vector_width=512",
}
BATCH_SIZE = 4

#: A jit-compiled convolution checked against TensorFlow's own; prints the largest difference.
CHECK_SNIPPET = """
import numpy as np, tensorflow as tf
rng = np.random.default_rng(0)
x = tf.constant(rng.standard_normal((2, 16, 16, 8)), tf.float32)
w = tf.constant(rng.standard_normal((3, 3, 8, 16)), tf.float32)
d = tf.constant(rng.standard_normal((3, 3, 16, 1)), tf.float32)
def net(x):
    y = tf.nn.relu(tf.nn.conv2d(x, w, 1, "SAME"))
    return tf.nn.depthwise_conv2d(y, d, [1, 1, 1, 1], "SAME")
print(float(tf.reduce_max(tf.abs(tf.function(net, jit_compile=True)(x) - net(x)))))
"""
CHECK_TOLERANCE = 1e-3


def check_flag(flags: str, timeout_s: float = 300.0) -> dict[str, Any]:
    """Whether this build's XLA accepts `flags` and still computes a convolution right."""
    env = {**os.environ, "XLA_FLAGS": flags, "TF_CPP_MIN_LOG_LEVEL": "2"}
    try:
        done = subprocess.run([sys.executable, "-c", CHECK_SNIPPET], capture_output=True,
                              text=True, timeout=timeout_s, check=False, env=env)
    except subprocess.TimeoutExpired:
        return {"known": False, "reason": f"no answer in {timeout_s:g} s"}
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = [line for line in done.stderr.strip().splitlines() if line.strip()][-1:]
        return {"known": False, "reason": f"exit {done.returncode}: " + " ".join(tail)[:300]}
    error = float(lines[-1])
    if error > CHECK_TOLERANCE:
        return {"known": True, "correct": False, "max_abs_error": error,
                "reason": f"wrong result (max |error| {error:.3g})"}
    return {"known": True, "correct": True, "max_abs_error": error}


# ------------------------------------------------------------------------------ HLO
_COMPUTATION = re.compile(r"^(?:ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$")
_FUSION_CALL = re.compile(r"\bfusion\(.*calls=%?([\w.\-]+)")
_FUSION_KIND = re.compile(r'"kind"\s*:\s*"(__\w+)"')
_CUSTOM_TARGET = re.compile(r'custom_call_target="([^"]+)"')
_CONVOLUTION = re.compile(r"=\s*\S+\s+convolution\(")
#: The fusion kinds that hand a computation to a library (`__onednn_fusion`, `__ynn_fusion`,
#: `__xnn_fusion`, ...), not XLA's own loop or output fusions.
_LIBRARY = re.compile(r"onednn|xnn|ynn|acl", re.IGNORECASE)


def computations(hlo: str) -> dict[str, list[str]]:
    """HLO text's computations: name -> its instruction lines."""
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in hlo.splitlines():
        stripped = line.strip()
        if current is None:
            match = _COMPUTATION.match(stripped)
            if match and not stripped.startswith("HloModule"):
                current = found.setdefault(match.group(1), [])
        elif stripped == "}":
            current = None
        else:
            current.append(stripped)
    return found


def hlo_summary(hlo: str) -> dict[str, Any]:
    """Where an optimised module's convolutions run: XLA's own kernel, or a library.

    A convolution inside a computation that a library fusion calls (backend_config kind
    `__onednn_fusion`, `__ynn_fusion`, `__xnn_fusion`, ...) runs in that library; a custom
    call names its own target; every other convolution is XLA's (Eigen on CPU).
    """
    comps = computations(hlo)
    library: dict[str, str] = {}  # called computation -> library fusion kind
    for lines in comps.values():
        for line in lines:
            call, kind = _FUSION_CALL.search(line), _FUSION_KIND.search(line)
            if call and kind and _LIBRARY.search(kind.group(1)):
                library[call.group(1)] = kind.group(1)
    convolutions: Counter[str] = Counter()
    targets: Counter[str] = Counter()
    for name, lines in comps.items():
        for line in lines:
            if _CONVOLUTION.search(line):
                convolutions[library.get(name, "xla")] += 1
            target = _CUSTOM_TARGET.search(line)
            if target:
                targets[target.group(1)] += 1
    return {"convolutions": dict(convolutions), "custom_calls": dict(targets),
            "library_fusions": dict(Counter(library.values()))}


def dumped_model_hlo(dump_dir: Path) -> str:
    """The largest optimised module in an XLA dump folder: the model's (a worker compiles
    smaller functions too)."""
    modules = sorted(dump_dir.glob("*after_optimizations.txt"), key=lambda p: p.stat().st_size)
    if not modules:
        raise SystemExit(f"no *after_optimizations.txt in {dump_dir}: did XLA compile anything?")
    return modules[-1].read_text(encoding="utf-8")


def hlo_part(models: list[str], variants: dict[str, str], opts: argparse.Namespace
             ) -> list[dict[str, Any]]:
    rows = []
    for model in models:
        for label, flags in {DEFAULT_LABEL: "", **variants}.items():
            with tempfile.TemporaryDirectory(prefix="xla-dump-") as tmp:
                dump = Path(tmp) / "dump"
                dump_flags = f"{flags} --xla_dump_to={dump} --xla_dump_hlo_as_text".strip()
                try:
                    run = xlabench_json(
                        ["run", model, "--backend", "tensorflow", "--mode", "xla",
                         "--batch-size", str(BATCH_SIZE), "--processes", "1",
                         "--max-processes", "1", "--budget", "2", "--db",
                         str(Path(tmp) / "hlo.db"), "--json",
                         *(["--resolution", str(opts.resolution)] if opts.resolution else [])],
                        {"XLA_FLAGS": dump_flags})
                except XlabenchError as failed:
                    rows.append({"model": model, "variant": label, "error": [failed.last_line]})
                    continue
                # A process re-run for interference adds records: the median of them all.
                records = run["processes"]
                sps = stats.median([r["throughput"]["median_sps"] for r in records])
                rows.append({"model": model, "variant": label, "flags": flags, "sps": sps,
                             **hlo_summary(dumped_model_hlo(dump))})
            print(_hlo_line(rows[-1]), flush=True)
    return rows


def _hlo_line(row: dict[str, Any]) -> str:
    if "error" in row:
        return f"{row['model']} {row['variant']}: failed: {row['error']}"
    convs = ", ".join(f"{k} {v}" for k, v in sorted(row["convolutions"].items())) or "none"
    calls = ", ".join(f"{k} {v}" for k, v in sorted(row["custom_calls"].items())) or "none"
    return (f"{row['model']} {row['variant']}: {row['sps']:.1f} samples/s (one process); "
            f"convolutions: {convs}; custom calls: {calls}")


# ------------------------------------------------------------------------------ ab
def ab_part(models: list[str], variants: dict[str, str], opts: argparse.Namespace
            ) -> list[dict[str, Any]]:
    sides = {GRAPH_LABEL: ["--b", "mode=graph"],
             **{label: ["--b", f"env:XLA_FLAGS={flags}"] for label, flags in variants.items()}}
    rows = []
    for model in models:
        for label, side_b in sides.items():
            try:
                ab = xlabench_json(
                    ["ab", "--models", model, "--backends", "tensorflow", "--modes", "xla",
                     "--batch-sizes", str(BATCH_SIZE), "--label-a", DEFAULT_LABEL,
                     "--label-b", label, *side_b, "--db", str(opts.db), "--budget",
                     f"{opts.budget:g}", "--format", "json",
                     *(["--resolutions", str(opts.resolution)] if opts.resolution else [])])
            except XlabenchError as failed:
                rows.append({"model": model, "variant": label, "error": [failed.last_line]})
            else:
                (c,) = ab["configurations"]
                rows.append({"model": model, "variant": label, **{k: c.get(k) for k in (
                    "verdict", "ratio", "ratio_low", "ratio_high", "rounds")}})
            print(_ab_line(rows[-1]), flush=True)
    return rows


def _ab_line(row: dict[str, Any]) -> str:
    if "error" in row:
        return f"{row['model']} {row['variant']}/xla: failed: {row['error']}"
    if row.get("ratio_low") is None:
        return f"{row['model']} {row['variant']}/xla: {row['verdict']} (no interval)"
    return (f"{row['model']} {row['variant']}/xla: {row['verdict']} {row['ratio']:.3f} "
            f"[{row['ratio_low']:.3f}, {row['ratio_high']:.3f}] in {row['rounds']} rounds")


def closes_gap(rows: list[dict[str, Any]]) -> list[str]:
    """Per model, what each flag did against TF graph's lead (all b/a against the same side a,
    XLA's defaults), by the report's rule (`analysis.xla_flags.gap_verdict`) on the ab's own
    intervals: it reaches graph, is faster than XLA's defaults, is too wide to tell, or does
    not close the gap."""
    lines = []
    for model in dict.fromkeys(r["model"] for r in rows):
        mine = {r["variant"]: r for r in rows if r["model"] == model and "error" not in r
                and r.get("ratio_low") is not None}
        graph = mine.pop(GRAPH_LABEL, None)
        if graph is None:
            continue
        verdicts = {label: gap_verdict(r["ratio_low"], r["ratio_high"], graph["ratio_low"])
                    for label, r in mine.items()}
        named = [f"{verdict}: {_names([k for k, v in verdicts.items() if v == verdict])}"
                 for verdict in GAP_VERDICTS[:3]]
        lines.append(f"{model}: graph/xla {graph['ratio']:.2f} [{graph['ratio_low']:.2f}, "
                     f"{graph['ratio_high']:.2f}]; {'; '.join(named)}")
    return lines


def _names(labels: list[str]) -> str:
    return ", ".join(labels) or "none"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="which flags this XLA knows")
    parser.add_argument("--hlo", action="store_true", help="where each model's convolutions run")
    parser.add_argument("--ab", action="store_true", help="each known flag against XLA's defaults")
    parser.add_argument("--models", default=None,
                        help="comma-separated (default: study-cpu's first tier)")
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        help="comma-separated labels of VARIANTS (default all)")
    parser.add_argument("--resolution", type=int, default=None,
                        help="default: each model's own")
    parser.add_argument("--budget", type=float, default=600.0, help="seconds per ab (600)")
    parser.add_argument("--db", type=Path, default=Path("xla-flags.db"))
    parser.add_argument("--out", type=Path, default=None, help="write every row as JSON")
    opts = parser.parse_args()
    if not (opts.check or opts.hlo or opts.ab):
        parser.error("give --check, --hlo and/or --ab")
    unknown = set(opts.variants.split(",")) - set(VARIANTS)
    if unknown:
        parser.error(f"unknown variants {sorted(unknown)}; known: {', '.join(VARIANTS)}")
    variants = {label: VARIANTS[label] for label in opts.variants.split(",")}
    if opts.models:
        models = opts.models.split(",")
    else:
        from xlabench.sweep.presets import STUDY_CPU_TIERS
        models = list(STUDY_CPU_TIERS[1])
    out: dict[str, Any] = {"models": models, "variants": variants}
    # Always first: a flag the build does not know would abort every process of the run.
    out["check"] = {label: {"flags": flags, **check_flag(flags)}
                    for label, flags in variants.items()}
    for label, result in out["check"].items():
        print(f"{label} ({result['flags']}): "
              + ("accepted" if result.get("correct") else result["reason"]), flush=True)
    variants = {k: v for k, v in variants.items() if out["check"][k].get("correct")}
    if opts.hlo:
        out["hlo"] = hlo_part(models, variants, opts)
    if opts.ab:
        out["ab"] = ab_part(models, variants, opts)
        for line in closes_gap(out["ab"]):
            print(line)
    if opts.out:
        opts.out.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
