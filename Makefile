# make run   - install if needed, start embedded servers (unless configured), migrate, serve
# make test  - install if needed, run the test suite against fresh embedded servers
# make lint  - ruff
# make browser - install Debian's chromium for the browser tests (run by make test)

VENV    := .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: run test lint install browser

install: $(STAMP)

$(PY):
	python3.11 -m venv $(VENV) || python3 -m venv $(VENV)

# Reinstall only when pyproject.toml changed since the last successful install.
$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install -e '.[dev]'
	touch $@

run: $(STAMP)
	exec $(PY) -m orchestrator.launcher --data-dir .data -- $(PY) -m orchestrator.serve

# The browser tests drive Debian's chromium: install it when missing (apt, as root).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium) >&2; \
	  else \
	    echo "chromium is missing: run 'sudo apt-get install -y chromium' (needed by tests/browser)" >&2; \
	    exit 1; \
	  fi; }

test: $(STAMP) browser
	exec $(PY) -m orchestrator.launcher --temp -- $(PY) -m pytest $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
