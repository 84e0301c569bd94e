# make run   - install if needed, start embedded servers (unless configured), migrate, serve
# make test  - install if needed, run the quick suite (every test not marked slow) against
#              fresh embedded servers, on one process (TEST_WORKERS=N: N pytest-xdist processes)
# make test-slow - the tests marked slow (real agent CLIs, the browser, the compose stack,
#              real server processes and crash timing), the same way; make test-all: both at once
# make lint  - ruff, the import contracts (lint-imports), makemigrations --check and mypy
# make fuzz  - schemathesis over /api/schema/ against a real server on fresh embedded servers
#              (at most FUZZ_SECONDS of generation, default 300; FUZZ_ARGS for more options)
# make bench - install the bench extra, run `python -m bench` against fresh embedded servers
# make promtool - Prometheus's rule checker into .venv/bin (the tests check deploy/ with it)
# make browser - install Debian's chromium for the browser tests (run by make test)
# make conformance - the official MCP conformance suite (every server scenario) against a real /mcp
# make lock  - resolve requirements/{prod,dev,bench}.lock from pyproject.toml (uv, hashes,
#              Python 3.11-3.13), then check every locked package has a wheel for 3.12 and 3.13
# make dist  - the server's wheel (and the agent client's, when client/ exists) into dist/
# make docs  - the documentation site (mkdocs.yml) into site/, --strict: a broken link fails it

VENV    := .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.installed
PROMTOOL := $(VENV)/bin/promtool
PYTEST_ARGS ?=
# Measured on a shared 2-core machine: 2 workers ran a database-heavy quarter of the suite
# in 102 s against 123 s serial; 4 workers were slower there (147 s against 128 s) and only
# paid on files that wait for beat, workers and servers (63 s against 80 s). Each worker
# gets its own test database, Redis database and graph database (tests/parallel.py). --dist loadfile keeps a file's tests on one worker (shared fixtures
# such as a file's live server start once).
# One process by default: a 2-worker run of the whole suite once saw connections to a
# worker's test database terminated under another's browser tests (cause not yet found),
# and on two cores it gains only ~15 % (14.6 vs ~17 minutes).
TEST_WORKERS ?= 0
BENCH_ARGS ?=
FUZZ_SECONDS ?= 300
FUZZ_ARGS ?=

.PHONY: run test test-slow test-all lint install bench promtool browser conformance fuzz lock \
	dist docs

# The locks (requirements/*.lock): every package pinned with its hashes. `make install`, CI
# (through make test) and the Dockerfile install exactly these. prod: the server's own
# dependencies (the image); dev: + the dev tools, the docs site's and the development servers
# ([servers]); bench: + the bench extra. prod and bench are resolved with dev's versions as
# constraints, so a package has one version in all three.
LOCKS   := requirements/prod.lock requirements/dev.lock requirements/bench.lock
# The agent client (client/, once it is its own distribution) is installed from the tree,
# never from an index: kept out of the locks and installed with --no-deps beside the server.
# (uv reads it as the requirement ./client from stdin, which provides the name the server
# depends on).
CLIENT  := $(wildcard client/pyproject.toml)
LOCAL   := $(if $(CLIENT),-e ./client) -e .
UVPC    := $(if $(CLIENT),printf './client\n' |) $(VENV)/bin/uv pip compile pyproject.toml \
	$(if $(CLIENT),- --no-emit-package session-orchestrator-agent)
COMPILE := $(UVPC) --universal --generate-hashes --python-version 3.11 --no-header --quiet

install: $(STAMP)

$(PY):
	python3.11 -m venv $(VENV) || python3 -m venv $(VENV)

# Reinstall only when the lock changed since the last successful install: the locked
# versions, checked against their hashes, then this checkout (and client/) without
# resolving anything again.
$(STAMP): requirements/dev.lock pyproject.toml $(CLIENT) | $(PY)
	$(PY) -m pip install --require-hashes -r requirements/dev.lock
	$(PY) -m pip install --no-deps $(LOCAL)
	touch $@

# After a change to the dependencies in pyproject.toml (a one-liner for whoever merges).
lock: $(STAMP)
	$(COMPILE) --extra dev --extra docs --extra servers -o requirements/dev.lock
	$(COMPILE) -c requirements/dev.lock -o requirements/prod.lock
	$(COMPILE) --extra dev --extra docs --extra servers --extra bench -c requirements/dev.lock \
		-o requirements/bench.lock
	for v in 3.12 3.13; do $(UVPC) --extra dev --extra docs --extra servers \
		--python-version $$v --python-platform x86_64-manylinux_2_34 --only-binary :all: \
		-c requirements/dev.lock --quiet -o /dev/null || exit 1; done

# The wheels, with every app's templates and static files (pyproject.toml's package-data).
dist: $(STAMP)
	rm -rf dist build
	$(PY) -m pip wheel --no-deps -w dist . $(if $(CLIENT),./client)
	rm -rf build

run: $(STAMP)
	exec $(PY) -m orchestrator.ops.launcher --data-dir .data -- $(PY) -m orchestrator.ops.serve

# promtool comes out of Debian's prometheus package, unpacked: nothing is installed system-wide
# and no server is started. apt-get update only when the package lists do not know it yet.
promtool: $(PROMTOOL)

$(PROMTOOL): | $(PY)
	rm -rf $(VENV)/promtool-deb && mkdir -p $(VENV)/promtool-deb
	cd $(VENV)/promtool-deb && (apt-get download prometheus || \
		(apt-get update -qq && apt-get download prometheus))
	dpkg-deb -x $(VENV)/promtool-deb/prometheus_*.deb $(VENV)/promtool-deb/root
	cp $(VENV)/promtool-deb/root/usr/bin/promtool $@
	rm -rf $(VENV)/promtool-deb

# The browser tests drive Debian's chromium: install it when missing (apt, as root).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium) >&2; \
	  else \
	    echo "chromium is missing: run 'sudo apt-get install -y chromium' (needed by tests/browser)" >&2; \
	    exit 1; \
	  fi; }

# The suite in two parts by the marker slow (pyproject.toml; tests/conftest.py adds it to
# every test of a real agent CLI): make test runs the rest, in at most 10 minutes on a
# two-core machine; make test-slow the marked ones (browser tests need chromium: make
# browser). PYTEST_ARGS comes last, so its own -m wins (PYTEST_ARGS='-m claude_code'); a
# folder of slow tests alone: make test-all PYTEST_ARGS=tests/browser.
pytest = exec $(PY) -m orchestrator.ops.launcher --temp -- $(PY) -m pytest -m '$(1)' \
	$(if $(filter-out 0,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadfile) $(PYTEST_ARGS)

test: $(STAMP) $(PROMTOOL)
	$(call pytest,not slow)

test-slow: $(STAMP) $(PROMTOOL) browser
	$(call pytest,slow)

test-all: $(STAMP) $(PROMTOOL) browser
	$(call pytest,)

# makemigrations --check: the models and the migration files agree, read without a server
# (orchestrator/settings_offline.py). mypy: the scope and its exceptions are in pyproject.
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports --no-logo
	DJANGO_SETTINGS_MODULE=orchestrator.settings_offline $(PY) \
		-W "ignore:Got an error checking a consistent migration history:RuntimeWarning" \
		manage.py makemigrations --check --dry-run
	$(VENV)/bin/mypy

$(VENV)/.bench-installed: requirements/bench.lock $(STAMP)
	$(PY) -m pip install --require-hashes -r requirements/bench.lock
	$(PY) -m pip install --no-deps $(LOCAL)
	touch $@

bench: $(VENV)/.bench-installed
	exec $(PY) -m orchestrator.ops.launcher --temp -- $(PY) -m bench $(BENCH_ARGS)

# Reports and the server's log in schemathesis-report/ (orchestrator/ops/fuzz.py says what runs).
fuzz: $(STAMP)
	exec $(PY) -m orchestrator.ops.launcher --temp -- $(PY) -m orchestrator.ops.fuzz \
		--max-time $(FUZZ_SECONDS) $(FUZZ_ARGS)

# Every server scenario of @modelcontextprotocol/conformance (pinned with Node 22 in
# tests/clients/mcp-conformance/, npm ci on first use) against a real server's /mcp on fresh
# embedded servers; fails on a scenario outside expected-failures.yml (docs/agents/mcp.md).
conformance: $(STAMP)
	exec $(PY) -m orchestrator.ops.launcher --temp -- $(PY) -m pytest -s -p no:cacheprovider \
		tests/clients/test_conformance_suite.py

# The site's Reference pages are generated from the tool registry and the settings model by
# docs/_gen/reference.py (a MkDocs hook) at every build; no server is needed.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict
