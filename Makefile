# Two commands do all set-up on a fresh machine: `make demo` (the main job) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
DEMO_DB := .cloudbrain/demo.sqlite
DEMO_WORLD := examples/downtown.json
DEMO_INSTRUCTION := Send a drone with the defibrillator from hospital_A to accident_site_3 within 10 minutes, keep away from the school and the temporary no-fly zone.

.PHONY: install demo lint test perf bench-smoke clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	# The CPU build of torch first: left to the resolver, sentence-transformers pulls a multi-GB CUDA build.
	$(BIN)/pip install --quiet torch==2.13.0
	# llama-cpp-python (the embedded model's runtime) is an sdist: pip compiles llama.cpp here, about 5 min on
	# 2 idle cores; the multimodal library it would also build is not needed.
	CMAKE_ARGS="-DLLAVA_BUILD=OFF" CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) $(BIN)/pip install --quiet -e '.[test,spot,ray]'
	touch $@

install: $(STAMP)

demo: $(STAMP)
	@thread=demo-$$(date +%Y%m%d-%H%M%S); \
	$(BIN)/cloudbrain run --world $(DEMO_WORLD) --instruction "$(DEMO_INSTRUCTION)" --db $(DEMO_DB) --thread $$thread; \
	status=$$?; \
	echo; echo "== repair trajectory (cloudbrain trace --db $(DEMO_DB) --thread $$thread) =="; \
	$(BIN)/cloudbrain trace --db $(DEMO_DB) --thread $$thread; \
	exit $$status

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

test: $(STAMP)
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
	$(BIN)/python benchmark/perf/planner_vs_networkx.py
	$(BIN)/python benchmark/perf/memory_latency.py

clean:
	rm -rf $(VENV) .cloudbrain .pytest_cache
