# Two commands for a fresh machine:  `make demo` (set up, run a small real benchmark, report)
# and `make test` (set up, run every check). Both create .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
DEMO_DB ?= demo.db
JOBS ?= 2
export JAX_PLATFORMS ?= cpu
export TF_CPP_MIN_LOG_LEVEL ?= 2
export PYTHONUNBUFFERED := 1

# $(call timed,NAME,COMMAND): runs COMMAND, then prints `stage NAME: <seconds> s` (also when it
# fails, so a slow failing stage still says how long it took) and exits with COMMAND's status.
# POSIX sh; COMMAND holds no comma outside a nested $(call ...).
timed = ( t0=$$(date +%s); $(2); rc=$$?; echo "stage $(1): $$(( $$(date +%s) - t0 )) s"; exit $$rc )

NATIVE_BUILD := build/native
CMAKE_GENERATOR ?= $(if $(shell command -v ninja 2>/dev/null),Ninja,Unix Makefiles)

.PHONY: setup demo test lint unit zoo zoo-runtimes clean browser native native-build native-tools \
	study study-run study-report

setup: $(STAMP) native-build

$(STAMP): pyproject.toml requirements/dev.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements/dev.txt
	$(BIN)/python -m pip install -q --no-deps -e .
	touch $(STAMP)

# xlabench-native (native/): configured against the SDKs in .venv's wheels; a runtime whose
# SDK is missing is left out (`xlabench-native --list`). Needs Debian's cmake, g++ and
# nlohmann-json3-dev (the JSON library; header-only).
NATIVE_PACKAGES := cmake g++ nlohmann-json3-dev
native-tools:
	@command -v cmake >/dev/null 2>&1 && command -v g++ >/dev/null 2>&1 \
	  && [ -f /usr/include/nlohmann/json.hpp ] || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq $(NATIVE_PACKAGES) >/dev/null; \
	  else echo "install Debian's $(NATIVE_PACKAGES) (sudo apt-get install $(NATIVE_PACKAGES)) for xlabench-native"; exit 1; fi; }

native-build: $(STAMP) native-tools
	cmake -S native -B $(NATIVE_BUILD) -G "$(CMAKE_GENERATOR)" -DCMAKE_BUILD_TYPE=Release \
	  -DXLABENCH_SITE_PACKAGES="$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" >/dev/null
	cmake --build $(NATIVE_BUILD) -j $(JOBS)

# The C++ tests (CTest): statistics vs the shared vectors, fake-clock timing, argument errors.
native: native-build
	$(call timed,native,ctest --test-dir $(NATIVE_BUILD) --output-on-failure)

# Debian's Chromium, for the report's browser test (Playwright drives it; no browser download).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium >/dev/null; \
	  else echo "install Debian's chromium (sudo apt-get install chromium) for the browser test"; fi; }

demo: setup
	$(BIN)/xlabench sweep --preset demo --db $(DEMO_DB)
	$(BIN)/xlabench results --db $(DEMO_DB)
	$(BIN)/xlabench report --db $(DEMO_DB) --out demo-report
	@echo "report: demo-report/index.html (findings: demo-report/findings.md)"

# The study on this machine's CPU (issue 38), published in the repository: `--preset study-cpu`
# into results/cpu/<device>/study.db, the device named as results name it, with the environment
# and commit of each sitting in ENVIRONMENT.json beside it. Resumable: run it again to go on.
# `make study` runs every tier; `make study-run TIER=1` (or TIER=1,2) some: each tier is about
# 90 minutes (`xlabench sweep --preset study-cpu --dry-run` gives each one's ETA). Run it on a quiet
# machine (no build or test beside it). A configuration another CPU kind has run is estimated
# from its time there (--history-from every kind's study.db; the sweep leaves out its own).
# `make study-report`: one report from every
# results/cpu/*/study.db and the study's published numbers, into results/report/; no benchmark.
STUDY_ROOT ?= results/cpu
STUDY_PUBLISHED ?= tests/data/study_best_per_resolution_and_gpu.csv
# The longest study process measured is EfficientNet-B7 at 600 px on TF XLA: 184 s on Zen 5,
# 381-485 s on Zen 3. 25 minutes is three times Zen 3's, for a slower kind (Zen 2 has not run
# it). A hung worker (once in tier 1's 178 processes: a NumPy GEMM deadlocked in OpenBLAS,
# docs/measurements.md) then costs 25 minutes, not the default 30.
STUDY_TIMEOUT_S ?= 1500
study: study-run

study-run: $(STAMP)
	db=$$($(BIN)/xlabench study-env --root $(STUDY_ROOT)) && \
	  $(BIN)/xlabench sweep --preset study-cpu $(if $(TIER),--tier $(TIER)) --db "$$db" \
	  --timeout $(STUDY_TIMEOUT_S) \
	  $(foreach other,$(wildcard $(STUDY_ROOT)/*/study.db),--history-from $(other))

study-report: $(STAMP)
	$(BIN)/xlabench study-report --root $(STUDY_ROOT) --out results/report \
	  --published $(STUDY_PUBLISHED)

lint: setup
	$(call timed,lint,$(BIN)/ruff check src tests bench && $(BIN)/lint-imports)

unit: setup
	$(call timed,unit,$(BIN)/python -m pytest -n $(JOBS) --timeout 1800 --durations 25 -m "not zoo" --ignore=tests/zoo tests)

# Every model builds and runs on TensorFlow (heavy ones and parameter counts included: its
# builds and eager forward are the fastest); on JAX and torch, one model per family (the
# family's smallest: its variants share the builder; tests/zoo/test_zoo.py marks the rest
# `variant`). The TF run
# also converts the smallest model of each family (up to 20M parameters) for OpenVINO, ONNX
# Runtime and LiteRT, the JAX run for IREE (conversion time grows with the weights: every other model is
# `zoo-runtimes`, by hand).
zoo: setup
	$(call timed,zoo,\
	  $(call timed,zoo-tensorflow,KERAS_BACKEND=tensorflow $(BIN)/python -m pytest -n $(JOBS) --timeout 1800 --durations 15 -m "zoo and not runtimes_heavy" tests/zoo) && \
	  $(call timed,zoo-jax,KERAS_BACKEND=jax $(BIN)/python -m pytest -n $(JOBS) --timeout 1800 -m "zoo and not heavy and not params and not variant and not runtimes_heavy" tests/zoo) && \
	  $(call timed,zoo-torch,KERAS_BACKEND=torch $(BIN)/python -m pytest -n $(JOBS) --timeout 1800 -m "zoo and not heavy and not params and not variant" tests/zoo))

zoo-runtimes: setup
	KERAS_BACKEND=tensorflow $(BIN)/python -m pytest -n $(JOBS) --timeout 3600 -m runtimes_heavy tests/zoo/test_runtimes_zoo.py
	KERAS_BACKEND=jax $(BIN)/python -m pytest -n $(JOBS) --timeout 3600 -m runtimes_heavy tests/zoo/test_runtimes_zoo.py

test: setup browser lint native unit zoo

clean:
	rm -rf $(VENV) build .pytest_cache .ruff_cache artifacts demo-report $(DEMO_DB)*
