# Two commands do all set-up on a fresh machine: `make demo` (the main job) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
DEMO_DB := .cloudbrain/demo.sqlite
DEMO_WORLD := examples/downtown.json
DEMO_INSTRUCTION := Send a drone with the defibrillator (1 kg) from hospital_A to accident_site_3 within 10 minutes, keep away from the school and the temporary no-fly zone.

.PHONY: install rebuild-model-runtime demo lint test perf bench-smoke clean

# llama.cpp, the embedded model's runtime, is compiled here from llama-cpp-python's sdist. It is built for a fixed
# instruction-set baseline, never for this host's own (GGML_NATIVE, -march=native): a build that used this CPU's
# AVX-512 or AMX kernels dies with SIGSEGV / SIGILL on a machine of the same kind whose CPU or hypervisor refuses them.
# x86-64: x86-64-v3 (AVX, AVX2, FMA, F16C, BMI2), which every machine of this project's kind has; elsewhere the
# compiler's generic baseline. No multimodal library (not needed). The stamp's name is a digest of version and flags,
# so a change of either (or a venv built before this rule) rebuilds the runtime; --no-cache-dir keeps pip from
# handing back a wheel it built earlier with other flags.
LLAMA_CPP := $(shell grep -o 'llama-cpp-python==[0-9.]*' pyproject.toml)
ifeq ($(shell uname -m),x86_64)
LLAMA_CPU_FLAGS := -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_AVX_VNNI=OFF \
	-DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF \
	-DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF
endif
LLAMA_CMAKE_ARGS := -DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF $(LLAMA_CPU_FLAGS)
RUNTIME_STAMP := $(VENV)/.model-runtime-$(shell echo '$(LLAMA_CPP) $(LLAMA_CMAKE_ARGS)' | md5sum | cut -c1-12)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# About 5 min on 2 idle cores. The second pip line adds the build's own requirements (diskcache, numpy, ...) and
# keeps the build: without them the next install's resolver prints "ERROR: ... llama-cpp-python requires diskcache".
$(RUNTIME_STAMP): | $(BIN)/python
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) \
		$(BIN)/pip install --quiet --no-cache-dir --force-reinstall --no-deps "$(LLAMA_CPP)"
	$(BIN)/pip install --quiet "$(LLAMA_CPP)"
	rm -f $(VENV)/.model-runtime-*
	touch $@

# The CPU build of torch first: left to the resolver, sentence-transformers pulls a multi-GB CUDA build. The
# self-test last: it loads the model in a child process and decodes a few tokens, so a runtime that cannot run here
# is one line naming what failed and how to rebuild, not a crash in the first run.
$(STAMP): pyproject.toml $(RUNTIME_STAMP)
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[test,spot,ray]'
	$(BIN)/python -m memory.onnx_export
	$(BIN)/cloudbrain selftest
	touch $@

install: $(STAMP)

# Rebuild llama.cpp for the baseline above (e.g. after the self-test said the runtime cannot run on this machine).
rebuild-model-runtime:
	rm -f $(VENV)/.model-runtime-* $(STAMP)
	$(MAKE) install

# Exits 0 whenever the agent reached a decision (run's exit 0 execute, 4 safe_refusal / human_confirm): declining
# to fly is a result; a crash, bad input or a dead model backend is not.
demo: $(STAMP)
	@thread=demo-$$(date +%Y%m%d-%H%M%S); \
	$(BIN)/cloudbrain run --world $(DEMO_WORLD) --instruction "$(DEMO_INSTRUCTION)" --db $(DEMO_DB) --thread $$thread; \
	status=$$?; \
	case $$status in 0|4) ;; *) exit $$status;; esac; \
	echo; echo "== repair trajectory (cloudbrain trace --db $(DEMO_DB) --thread $$thread; --verbose for the IR patches) =="; \
	$(BIN)/cloudbrain trace --db $(DEMO_DB) --thread $$thread || exit $$?; \
	if [ $$status = 0 ]; then \
		echo; echo "== the certificate, re-checked (cloudbrain certify --db $(DEMO_DB) --thread $$thread) =="; \
		$(BIN)/cloudbrain certify --db $(DEMO_DB) --thread $$thread --world $(DEMO_WORLD) || exit $$?; \
		echo; echo "== as an ASTM F3548-21 operational intent flown from now (cloudbrain export --format f3548 --start NOW; also qgc-plan, mavlink, geojson, kml) =="; \
		$(BIN)/cloudbrain export --db $(DEMO_DB) --thread $$thread --world $(DEMO_WORLD) --format f3548 \
			--start $$(date -u +%Y-%m-%dT%H:%M:%SZ) --out .cloudbrain/exports/$$thread.f3548.json || exit $$?; \
	fi

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

# The inspector's browser tests drive Debian's Chromium through its ChromeDriver (apt: no browser download at install
# time; root, or sudo where there is one).
CHROMEDRIVER := /usr/bin/chromedriver
$(CHROMEDRIVER):
	$$( [ "$$(id -u)" = 0 ] || echo sudo ) apt-get update -qq
	$$( [ "$$(id -u)" = 0 ] || echo sudo ) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver

# EGM96's geoid grid (Debian's proj-data), which tests/unit/test_geoid.py reads to check the undulations the worlds
# store; running and exporting read only the stored values, never the grid.
GEOID_GRID := /usr/share/proj/egm96_15.gtx
$(GEOID_GRID):
	$$( [ "$$(id -u)" = 0 ] || echo sudo ) apt-get update -qq
	$$( [ "$$(id -u)" = 0 ] || echo sudo ) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq proj-data

test: $(STAMP) $(CHROMEDRIVER) $(GEOID_GRID)
	$(BIN)/pytest

# Every method on 20 dev_mini samples with oracle (the methods that write an IR), rules and the embedded model,
# judged independently, then report.md with its figures (evaluation/report.py). Starts afresh each time.
SMOKE_OUT := .cloudbrain/bench-smoke
# A smoke-sized budget, the same for every method: each of the 2 workers' embedded model reads ~130 prompt tokens/s
# on one core, so the world-in-prompt baselines at the full 7k-token view would take ~1 h alone, react at 8 calls
# ~6 min and tree_planner at the paper's N = 25 plans ~12 min (75 s a run). At 2,048 prompt and 512 new tokens, 4
# calls and 5 plans the local runs alone took ~38 min (react 34 s a run, tree_planner 31 s, json_only 26 s); 3 calls
# hold K = 2 repair rounds.
SMOKE_BUDGET := --max-prompt-tokens 1536 --max-new-tokens 384 --max-llm-calls 3 --plan-samples 3
bench-smoke: $(STAMP)
	rm -rf $(SMOKE_OUT)
	$(BIN)/cloudbrain bench run --split dev_mini --limit 20 --method all --model oracle,rules,local --workers 2 $(SMOKE_BUDGET) --out $(SMOKE_OUT)
	$(BIN)/cloudbrain bench report $(SMOKE_OUT)

perf: $(STAMP)
	$(BIN)/python -m evaluation.perf.planner_vs_networkx
	$(BIN)/python -m evaluation.perf.memory_latency

clean:
	rm -rf $(VENV) .cloudbrain .pytest_cache
