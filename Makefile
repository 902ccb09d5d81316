# The few targets people type. Everything installs itself on first use.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-fast check setup judge-setup judge-up judge-down review-ui bench clean stack-up stack-down stack-status

$(STAMP): pyproject.toml
	@command -v $(PY) >/dev/null || { echo "need $(PY)"; exit 1; }
	@echo "[setup] installing judgewatch and its dependencies into $(VENV) (the first time takes a few minutes)"
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip 2>&1 | grep -v 'is ignored' || true
	PYTHONWARNINGS='ignore:Editable installation' $(BIN)/pip install -q -e '.[dev]' 2>&1 | grep -v 'is ignored' || true
	$(BIN)/python -c "import judgewatch, prefect, gradio, sqlmodel, openai, datasets, scipy" && touch $(STAMP)

setup: $(STAMP)  ## the application venv (.venv)

judge-setup:  ## the vLLM CPU venv and the SmolLM2 judge model folder (.judge/)
	bash scripts/judge_setup.sh

judge-up: judge-setup  ## start the local vLLM judge on 127.0.0.1:8011
	bash scripts/judge_serve.sh start

judge-down:
	bash scripts/judge_serve.sh stop

demo: export JUDGEWATCH_MAKE_STARTED := $(shell date +%s)
demo: setup judge-setup  ## the main job on the embedded defaults: the gate's three outcomes, then the vLLM judge measured
	bash scripts/ui_fonts.sh
	bash scripts/judge_serve.sh spawn
	serving=.judge/server-$${JUDGEWATCH_JUDGE_PORT:-8011}.serving.json; \
	  if [ -z "$${JUDGEWATCH_JUDGE_SERVING:-}" ] && [ -f "$$serving" ]; then export JUDGEWATCH_JUDGE_SERVING="$$(cat "$$serving")"; fi; \
	  $(BIN)/judgewatch demo --judge-wait 300

test: setup judge-setup  ## every test, with the real vLLM judge, PostgreSQL and a real browser
	bash scripts/run_tests.sh

# Everything but the tests that need a Prefect server, the vLLM judge, a browser, Prometheus or a child pytest, and
# those marked slow (seconds each: the full tier runs them)
# (tests/conftest.py marks them by the fixtures they use). PostgreSQL tests run: scripts/test_postgres.sh uses
# the server at JUDGEWATCH_TEST_POSTGRES_URL or installs one. Ephemeral Prefect is off, so a test that runs a flow
# without the prefect_server fixture fails here instead of quietly starting a server.
# pytest-xdist runs it in TEST_WORKERS processes (default: one per CPU); worksteal hands each worker a contiguous
# run of tests, so a module's shared fixture is mostly set up once, and an idle worker takes over the tail of a
# busy one's. Every worker has its own PostgreSQL schemas, tmp_path base, path guard and endpoint guard.
# TEST_WORKERS=0 runs it in one process.
FAST_TIER := not (prefect_server or vllm or browser or prometheus or child_pytest or slow)
TEST_WORKERS ?= auto
test-fast: setup  ## the fast tier: every test that needs nothing but PostgreSQL (a few minutes)
	bash scripts/test_postgres.sh
	PREFECT_SERVER_ALLOW_EPHEMERAL_MODE=false PREFECT_SERVER_ANALYTICS_ENABLED=false \
	  $(BIN)/python -m pytest -q -m "$(FAST_TIER)" -n $(TEST_WORKERS) --dist worksteal $(PYTEST_ARGS)

check: setup  ## lint, types, rubric and dataset checks
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/judgewatch rubric check
	for f in datasets/*/data.jsonl; do $(BIN)/judgewatch dataset check $$(basename $$(dirname $$f)) || exit 1; done

stack-up: setup  ## the service on 127.0.0.1: Prefect server on PostgreSQL, work pool + 2 workers, deployments, judge, review UI
	bash scripts/ui_fonts.sh
	bash scripts/stack.sh up

stack-down:  ## stop what stack-up started (by PID), nothing else
	bash scripts/stack.sh down

stack-status:  ## each part of the stack, its URL or PID, healthy or not
	bash scripts/stack.sh status

review-ui: setup
	bash scripts/ui_fonts.sh
	$(BIN)/judgewatch review-ui

bench: setup  ## every benchmark, each printing its figure against its limit; fails at the end if any failed
	@failed=""; for b in bench/*.py; do echo "== $$b"; $(BIN)/python $$b || failed="$$failed $$b"; done; \
	if [ -n "$$failed" ]; then echo "benchmarks that failed:$$failed"; exit 1; fi

clean:
	rm -rf .judgewatch reports bench/out
