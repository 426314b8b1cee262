"""helm v3, built from the Go module proxy into ksmon's cache, to lint and render the chart.

Built once per version (about four minutes on a two-core machine) and reused after,
the same way as kustomize (``tests.support.kustomize``); helm's module has no
``replace`` directives, so ``go install`` builds it straight from the proxy. Built
without the release's linker flags, its default Kubernetes version is an old one:
``template`` always names the version to render for.
"""

import os
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from agent.errors import SetupError
from agent.paths import cache_dir, ensure_built
from tests.support.go_modules import GoModule, install

HELM = GoModule(
    "helm.sh/helm/v3",
    "v3.22.0",
    # Recorded from proxy.golang.org when this version was pinned.
    "h1:n1if5iQgHYsujPAcO5oonH/KiSNUmqmUF0iGVjSF3AU=",
)


def helm_binary() -> Path:
    """The cached helm binary, built first if this version was never built."""

    def build(scratch: Path) -> None:
        install(HELM, f"{HELM.path}/cmd/helm", "helm", scratch / "bin")

    home = ensure_built(cache_dir() / "helm" / HELM.version, build)
    return home / "bin" / "helm"


def _run(helm: Path, args: Sequence[str], home: Path) -> str:
    # helm keeps its config, cache and data under the user's home: give it its own.
    env = {
        "HELM_CACHE_HOME": str(home / "cache"),
        "HELM_CONFIG_HOME": str(home / "config"),
        "HELM_DATA_HOME": str(home / "data"),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    }
    result = subprocess.run(
        [str(helm), *args], capture_output=True, text=True, check=False, env=env
    )
    if result.returncode != 0:
        output = (result.stderr or result.stdout).strip()
        raise SetupError(f"helm {args[0]} {args[-1]} failed: {output}")
    return result.stdout


def _values_file(home: Path, values: Mapping[str, Any]) -> Path:
    with tempfile.NamedTemporaryFile(
        "w", dir=home, prefix="values-", suffix=".yaml", delete=False
    ) as file:
        yaml.safe_dump(dict(values), file, sort_keys=False)
    return Path(file.name)


def lint(helm: Path, chart: Path, home: Path, values: Mapping[str, Any] | None = None) -> str:
    """``helm lint --strict`` of ``chart`` (with ``values`` as a values file); its output."""
    args = ["lint", "--strict"]
    if values:
        args += ["--values", str(_values_file(home, values))]
    return _run(helm, [*args, str(chart)], home)


def template(
    helm: Path,
    chart: Path,
    home: Path,
    *,
    kube_version: str,
    values: Mapping[str, Any] | None = None,
    release: str = "ksmon",
    namespace: str = "monitoring",
) -> list[dict[str, Any]]:
    """``helm template`` of ``chart`` for a Kubernetes version, as a list of objects."""
    args = ["template", release, "--namespace", namespace, "--kube-version", kube_version]
    if values:
        args += ["--values", str(_values_file(home, values))]
    return [d for d in yaml.safe_load_all(_run(helm, [*args, str(chart)], home)) if d]
