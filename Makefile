# OrientScope: `make serve` sets up and serves the dashboard; `make test` sets up and runs the tests.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8050

.PHONY: help setup serve test test-fast bench lint lint-imports format formats-table check docs loadtest clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | sed 's/:.*##/\t/'

$(STAMP): pyproject.toml setup.py
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

setup: $(STAMP)  ## create .venv and install everything

serve: setup  ## serve API + dashboard on http://$(HOST):$(PORT)/ (precomputes QM9 on first start)
	$(BIN)/orientscope serve --host $(HOST) --port $(PORT)

test: setup  ## run the whole test suite (browser tests need /usr/bin/chromium)
	$(BIN)/pytest -q

test-fast: setup  ## tests without the browser
	$(BIN)/pytest -q -m "not browser"

bench: setup  ## full-data benchmarks -> BENCHMARKS.md
	$(BIN)/python -m tests.bench.run_all

loadtest: setup  ## bounded load test on loopback -> BENCHMARKS.md
	$(BIN)/python -m tests.bench.loadtest

lint: lint-imports  ## ruff, the layer contract and the JavaScript's syntax (node --check)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	for f in frontend_assets/*.js; do node --check "$$f" || exit 1; done

lint-imports: setup  ## the layer contract of pyproject.toml (import-linter)
	$(BIN)/lint-imports

format: setup  ## ruff format + autofix
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

formats-table: setup  ## regenerate docs/formats.md's format table from the format registry
	$(BIN)/python -m tests.loaders.test_format_table

check: lint test  ## lint and test

docs: setup  ## regenerate the settings table of docs/operations.md from backend/core/settings.py
	$(BIN)/python -m orientscope.core.settings_table docs/operations.md

clean:  ## remove the virtual environment and caches (keeps ./data)
	rm -rf $(VENV) .pytest_cache .ruff_cache .import_linter_cache
