"""Go modules from the Go module proxy, fetched by the ``go`` command into ksmon's cache.

The deploy tests need two things only Go modules publish: kustomize (built from
source with ``go install``) and the CRD schemas of the Prometheus and Spark
operators (files inside the operators' module zips). The ``go`` command is the
client, so a ``GOPROXY`` mirror works as for any Go build. Every root module's
``h1:`` hash is pinned where it is used (``kustomize``, ``crds``) the way a
go.sum line pins it, and a module whose download hashes differently is
refused: the checksum database (sum.golang.org) is not consulted for those
modules, which also lets this work where only the proxy is reachable.
Dependencies of an installed tool are checked by the tool's own go.sum, as
``go install pkg@version`` always does.
"""

import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from agent.embedded.cache import cache_dir
from agent.errors import SetupError, UnreachableError

_UNREACHABLE = re.compile(
    r"dial tcp|no such host|connection refused|i/o timeout|TLS handshake timeout"
    r"|network is unreachable|Temporary failure in name resolution|proxyconnect"
)


@dataclass(frozen=True)
class GoModule:
    """A module version and the ``h1:`` hash of its zip (as in a go.sum line)."""

    path: str
    version: str
    h1: str

    def __str__(self) -> str:
        return f"{self.path}@{self.version}"


def module_source(module: GoModule) -> Path:
    """The module's extracted files in the module cache, downloaded first if needed."""
    info = _download_info(module)
    if info.get("Sum") != module.h1:
        raise SetupError(
            f"{module} downloaded with hash {info.get('Sum')}, but {module.h1} is pinned: "
            f"refusing a module that changed (check GOPROXY, or re-pin deliberately)"
        )
    return Path(info["Dir"])


def install(module: GoModule, package: str, binary: str, bin_dir: Path) -> Path:
    """Build ``package`` (in ``module``) with ``go install`` into ``bin_dir``; the path
    of the ``binary`` it makes."""
    module_source(module)  # verifies the pinned hash before anything is built
    with tempfile.TemporaryDirectory(prefix="ksmon-gobuild-") as build_cache:
        # The build cache only speeds up rebuilds, and the binary is cached: drop it.
        _run_go(
            ["install", f"{package}@{module.version}"],
            purpose=f"building {package}@{module.version}",
            extra_env={"GOBIN": str(bin_dir), "GOCACHE": build_cache},
            modules=[module],
        )
    path = bin_dir / binary
    if not path.is_file():
        raise SetupError(f"go install {package} made no {binary} in {bin_dir}")
    return path


def _download_info(module: GoModule) -> dict[str, str]:
    output = _run_go(
        ["mod", "download", "-json", str(module)],
        purpose=f"downloading {module}",
        modules=[module],
        json_errors=True,
    )
    info: dict[str, str] = json.loads(output)
    if info.get("Error"):
        raise explain_failure(f"downloading {module}", info["Error"])
    return info


def _run_go(
    args: Sequence[str],
    *,
    purpose: str,
    modules: Sequence[GoModule],
    extra_env: Mapping[str, str] | None = None,
    json_errors: bool = False,
) -> str:
    go = shutil.which("go")
    if not go:
        raise SetupError(
            f"the Go toolchain (go) is not on PATH; the deploy tests need it for {purpose} "
            f"from the Go module proxy (Debian/Ubuntu: apt-get install golang-go, or go.dev/dl)"
        )
    env = {
        **os.environ,
        "GOMODCACHE": str(cache_dir() / "go" / "mod"),
        # Writable module cache, so deleting ksmon's cache directory just works.
        "GOFLAGS": "-modcacherw",
        # The pinned h1: hashes above stand in for the checksum database.
        "GONOSUMDB": ",".join(m.path for m in modules),
        **(extra_env or {}),
    }
    result = subprocess.run([go, *args], env=env, capture_output=True, text=True, check=False)
    # `go mod download -json` reports a failed module inside its JSON, exit status 1.
    if result.returncode != 0 and not (json_errors and result.stdout.strip()):
        raise explain_failure(purpose, result.stderr or result.stdout)
    return result.stdout


def explain_failure(purpose: str, output: str) -> SetupError:
    """One line from go's output: unreachable (retriable) or another failure."""
    lines = [line.strip() for line in output.strip().splitlines() if line.strip()]
    detail = lines[-1] if lines else "no output"
    if _UNREACHABLE.search(output):
        return UnreachableError(
            f"cannot reach the Go module proxy while {purpose}: {detail}. "
            f"Check the network, or set GOPROXY to a reachable proxy"
        )
    return SetupError(f"go failed while {purpose}: {detail}")
