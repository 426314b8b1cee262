# The README's two commands are `make demo` and `make test`; .ci/run calls `make test`.
# Everything ksmon needs is installed from here: a virtualenv from PyPI, and
# (on first use, into ~/.cache/ksmon) Kafka and the fixture app from Maven Central.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.ksmon-installed

.PHONY: demo test lint typecheck pytest clean promtool deploy-generate

$(INSTALLED): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "ksmon needs Python 3.11+: run make PYTHON=python3.11 ...")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --progress-bar off -e '.[dev]'
	touch $@

demo: $(INSTALLED)
	$(BIN)/ksmon demo

lint: $(INSTALLED)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(INSTALLED)
	$(BIN)/mypy

# promtool (Debian package prometheus) checks the alert rules the tests render.
# Nothing to do when it is on PATH; otherwise installed with apt when that is
# possible (root). Where it is not, the tests that need promtool skip locally and
# fail under CI=true, so this target never fails the build by itself.
promtool:
	@command -v promtool >/dev/null 2>&1 || { \
	  [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  { apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=300 prometheus \
	    || { apt-get update -qq -o DPkg::Lock::Timeout=300 && \
	         apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=300 prometheus; }; } \
	  >/dev/null; } || echo "make: promtool not installed (apt-get install prometheus)" >&2

# deploy/monitoring/ packages dashboards/ for Kubernetes: run after changing a rule
# file or a dashboard (a test fails while the generated files are stale).
deploy-generate: $(INSTALLED)
	$(BIN)/python -m deploy.generate

# pytest exits 5 when it collected nothing: that is a broken suite, not a pass.
pytest: $(INSTALLED) promtool
	@$(BIN)/python -m pytest; status=$$?; \
	if [ $$status -eq 5 ]; then echo "make test: pytest collected no tests" >&2; exit 1; fi; \
	exit $$status

test: lint typecheck pytest

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache *.egg-info
