# The README's two commands are `make demo` and `make test`; .ci/run calls `make test`.
# Everything ksmon needs is installed from here: a virtualenv from PyPI,
# Prometheus, promtool and amtool from Debian packages (the rule tests, metric
# lint and end-to-end tests run them), MIT Kerberos from Debian packages (the
# Kerberos tests run a KDC; the virtualenv's gssapi builds against its headers),
# and (on first use, into ~/.cache/ksmon) Kafka and the fixture app from Maven Central.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.ksmon-installed

.PHONY: demo test lint typecheck pytest prometheus-tools kerberos-tools dashboards deploy-generate clean

# Order-only: `.[dev]` builds gssapi against libkrb5-dev, but a reinstalled KDC
# package is no reason to rebuild the virtualenv.
$(INSTALLED): pyproject.toml | kerberos-tools
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

# Skipped when prometheus, promtool and amtool are already on PATH.
prometheus-tools:
	@.ci/install-prometheus

# Skipped when the KDC, its admin tools, kinit and krb5-config are already there.
kerberos-tools:
	@.ci/install-kerberos

# Rewrites dashboards/grafana/*.json (and their ConfigMaps) from dashboards/*.py, and
# dashboards/alerts/*.rules.yml from their templates and the default alerting values.
dashboards: $(INSTALLED)
	$(BIN)/python -m dashboards.generate
	$(BIN)/python -m dashboards.alert_rules

# deploy/monitoring/ packages dashboards/ for Kubernetes: run after changing a rule
# file or a dashboard (a test fails while the generated files are stale).
deploy-generate: $(INSTALLED)
	$(BIN)/python -m deploy.generate

# pytest exits 5 when it collected nothing: that is a broken suite, not a pass.
pytest: $(INSTALLED) prometheus-tools kerberos-tools
	@$(BIN)/python -m pytest; status=$$?; \
	if [ $$status -eq 5 ]; then echo "make test: pytest collected no tests" >&2; exit 1; fi; \
	exit $$status

test: lint typecheck prometheus-tools kerberos-tools pytest

# The container images (deploy/image/Dockerfile) built with podman on Debian bases
# made from Debian packages, then run against the test broker: a CI stage of its
# own, after `make test` (tests/image is outside pytest's default paths). As root.
.PHONY: test-images
test-images: $(INSTALLED)
	@.ci/install-podman
	@$(BIN)/python -m pytest tests/image; status=$$?; \
	if [ $$status -eq 5 ]; then echo "make test-images: pytest collected no tests" >&2; exit 1; fi; \
	exit $$status

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache *.egg-info
