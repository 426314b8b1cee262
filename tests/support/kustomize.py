"""kustomize v5, built from the Go module proxy into ksmon's cache, to render deploy/.

Built once per version (about a minute on the CI machine) and reused after; a
half-built copy never looks complete (``ensure_built``). ``kubectl kustomize``
would do as well, but kubectl is not a project dependency and this is.
"""

import subprocess
from pathlib import Path
from typing import Any

import yaml

from agent.embedded.cache import cache_dir, ensure_built
from agent.errors import SetupError
from tests.support.go_modules import GoModule, install

KUSTOMIZE = GoModule(
    "sigs.k8s.io/kustomize/kustomize/v5",
    "v5.8.1",
    # Recorded from proxy.golang.org when this version was pinned.
    "h1:Pgsg5psubpVEy7Nf6S89PARg5VmmWUC1l9dC6Dl4PG0=",
)


def kustomize_binary() -> Path:
    """The cached kustomize binary, built first if this version was never built."""

    def build(scratch: Path) -> None:
        install(KUSTOMIZE, KUSTOMIZE.path, "kustomize", scratch / "bin")

    home = ensure_built(cache_dir() / "kustomize" / KUSTOMIZE.version, build)
    return home / "bin" / "kustomize"


def render(kustomize: Path, directory: Path) -> list[dict[str, Any]]:
    """``kustomize build directory``, as a list of objects (default load restrictions)."""
    result = subprocess.run(
        [str(kustomize), "build", str(directory)], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise SetupError(f"kustomize build {directory} failed: {result.stderr.strip()}")
    return [d for d in yaml.safe_load_all(result.stdout) if d]
