# One venv in the repo; every target that runs code depends on it.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install browser postgres spreadsheet test-models demo test faults sandbox dev bench bench-chain \
	bench-housekeeping bench-nights lint clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@echo "Installing pos-etl and its dependencies into $(VENV) (a minute or two, once)..."
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install -qq --disable-pip-version-check --upgrade pip
	@$(BIN)/python -m pip install -qq --disable-pip-version-check -e '.[dev]'
	@touch $(STAMP)

demo: install
	$(BIN)/pos-etl demo

# The report's test looks at the page in a real headless Chromium (Debian's package).
browser:
	@command -v chromium-headless-shell >/dev/null || command -v chromium >/dev/null || { \
	  echo "Installing Chromium (headless) from the system's packages..."; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    chromium-headless-shell >/dev/null; }

# Dagster's production storage is tested on a real PostgreSQL server (Debian's package;
# the test starts its own on a free port in a temporary folder).
postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { \
	  echo "Installing PostgreSQL from the system's packages..."; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    postgresql >/dev/null; }

# A German CSV export is opened by LibreOffice Calc, headless (Debian's package), as a
# German-speaking accountant's spreadsheet would open it.
spreadsheet:
	@command -v soffice >/dev/null || { \
	  echo "Installing LibreOffice Calc (headless) from the system's packages..."; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    --no-install-recommends libreoffice-calc-nogui >/dev/null; }

# Test files run on two workers (pytest-xdist; a file's tests share its worker and its
# module fixtures): 15 to 24 minutes on two cores, which it keeps busy, as fast as the
# machine is that hour (640 tests in four folders: 1,319 s and 1,334 s on 2026-11-29, 1,300 s on the
# evening of 2026-11-28, 901-1,191 s earlier that day; docs/testing.md). `make
# test-models` alone: seconds.
test: install browser postgres spreadsheet
	$(BIN)/python -m pytest -q -n 2 --dist loadfile

# The models' unit tests alone (unit_tests: in each model's YAML, dbt_like_sql/*/*.yml): DuckDB only,
# no sandbox, lake or Dagster, in seconds. `make test` runs them too.
test-models: install
	$(BIN)/python -m pytest -q tests/unit/test_model_units.py

# The fault-injection suite's long mode: 30 loads killed at random points.
faults: install
	POS_ETL_FAULT_SEEDS=30 $(BIN)/python -m pytest -q -s tests/integration/test_fault_injection.py

sandbox: install
	$(BIN)/pos-etl sandbox --port 8765

# The UI and `pos-etl load` share one instance: $DAGSTER_HOME, else <data_dir>/dagster_home.
# PORT=3001 make dev serves it on another port.
PORT ?= 3000
dev: install
	@echo "Dagster UI on http://127.0.0.1:$(PORT) (Ctrl-C stops it)"
	@DAGSTER_HOME=$$($(BIN)/python -m pipeline.orchestration.instance) $(BIN)/dagster dev \
	  -w workspace.yaml -h 127.0.0.1 -p $(PORT)

# The benchmarks also need the `bench` extra (dlt, for the side-by-side load).
$(VENV)/.bench-installed: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	touch $@

bench: install $(VENV)/.bench-installed
	$(BIN)/python benchmarks/run.py

# The first full build of a 200-location chain's year (its lake is made once, ~30 min on
# two cores, and kept in benchmarks/.chain/).
bench-chain: install
	$(BIN)/python benchmarks/run.py --only chain

# Nights on top of 90 days and of 3 years of a chain's history, side by side (the lakes are
# made once and kept in benchmarks/.chain/; 200 locations take hours: CHAIN=20 minutes).
CHAIN ?= 200
bench-nights: install
	$(BIN)/python benchmarks/run.py --only nights --chain $(CHAIN)

# Three years of a 200-location chain's revenue in the lake: a night's commits on top of
# 30 days and of 3 years, and what housekeeping keeps.
bench-housekeeping: install
	$(BIN)/python benchmarks/run.py --only housekeeping

lint: install
	$(BIN)/ruff check pipeline pos_sandbox tests benchmarks
	$(BIN)/sqlfluff lint dbt_like_sql

clean:
	rm -rf data/sandbox data/lake data/warehouse*.duckdb* data/warehouse.state data/warehouse_parts data/dagster_home data/docs
