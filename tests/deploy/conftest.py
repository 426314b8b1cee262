"""Real tools for the deploy tests: kustomize (built from the Go module proxy), the
operators' published CRD schemas, promtool (Debian package prometheus), and every
kustomization under deploy/ rendered once per session."""

import shutil
from pathlib import Path

import pytest

from agent.errors import KsmonError
from tests.deploy.manifests import DEPLOY, CrdSchemas, Rendered, kustomizations
from tests.support.crds import fetch_crd_schemas
from tests.support.environment import unavailable
from tests.support.kustomize import kustomize_binary, render


@pytest.fixture(scope="session")
def kustomize() -> Path:
    try:
        return kustomize_binary()
    except KsmonError as e:
        unavailable("kustomize (built from the Go module proxy)", e)


@pytest.fixture(scope="session")
def crd_schemas() -> CrdSchemas:
    try:
        return fetch_crd_schemas()
    except KsmonError as e:
        unavailable("the operators' CRD schemas (from the Go module proxy)", e)


@pytest.fixture(scope="session")
def promtool() -> Path:
    found = shutil.which("promtool")
    if not found:
        unavailable("promtool", "not on PATH (Debian package prometheus; `make prometheus-tools`)")
    return Path(found)


@pytest.fixture(scope="session")
def rendered(kustomize: Path) -> Rendered:
    """deploy-relative directory -> the objects ``kustomize build`` gives for it."""
    return {d.relative_to(DEPLOY).as_posix(): render(kustomize, d) for d in kustomizations()}
