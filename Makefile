# make run   - install if needed, start embedded servers (unless configured), migrate, serve
# make test  - install if needed, run the test suite against fresh embedded servers
# make lint  - ruff
# make bench - install the bench extra, run `python -m bench` against fresh embedded servers

VENV    := .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.installed
PYTEST_ARGS ?=
BENCH_ARGS ?=

.PHONY: run test lint install bench

install: $(STAMP)

$(PY):
	python3.11 -m venv $(VENV) || python3 -m venv $(VENV)

# Reinstall only when pyproject.toml changed since the last successful install.
$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install -e '.[dev]'
	touch $@

run: $(STAMP)
	exec $(PY) -m orchestrator.launcher --data-dir .data -- $(PY) -m orchestrator.serve

test: $(STAMP)
	exec $(PY) -m orchestrator.launcher --temp -- $(PY) -m pytest $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .

$(VENV)/.bench-installed: pyproject.toml $(STAMP)
	$(PY) -m pip install -e '.[dev,bench]'
	touch $@

bench: $(VENV)/.bench-installed
	exec $(PY) -m orchestrator.launcher --temp -- $(PY) -m bench $(BENCH_ARGS)
