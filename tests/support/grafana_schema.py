"""Type-check dashboard JSON against Grafana's published schema types with ``tsc --noEmit``.

The TypeScript project in dashboards/typecheck/ pins ``@grafana/schema`` and
``typescript``; npm installs its lock file once into ksmon's cache
(``npm/<hash of the lock file>``, so a changed pin is a new directory) and every
check reuses it. Each JSON text is written as a module
``const dashboard: KsmonDashboard = <the JSON>;`` into a scratch directory,
never into the repository, and the compiler's errors come back with the JSON's
own line numbers.
"""

import hashlib
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from agent.embedded.cache import cache_dir, ensure_built
from agent.errors import SetupError, UnreachableError

ROOT = Path(__file__).resolve().parents[2]
TYPECHECK_DIR = ROOT / "dashboards" / "typecheck"
# What npm installs from, and what the compiler reads besides the dashboards.
_INSTALL_FILES = ("package.json", "package-lock.json")
_PROJECT_FILES = ("tsconfig.json", "schema.ts")
# A module per JSON text: its first line is the import, its second starts with
# the declaration and then the JSON's first line, so line n + 1 holds JSON line n.
_MODULE_HEAD = 'import type { KsmonDashboard } from "../schema";\n'
_LITERAL_PREFIX = "const dashboard: KsmonDashboard = "
_MODULE_TAIL = ";\nexport default dashboard;\n"

_DIAGNOSTIC = re.compile(
    r"^(?P<path>.+?)\((?P<line>\d+),(?P<column>\d+)\): error (?P<code>TS\d+): (?P<message>.*)$"
)
_GLOBAL_DIAGNOSTIC = re.compile(r"^error (?P<code>TS\d+): (?P<message>.*)$")
_UNREACHABLE = re.compile(
    r"ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH"
    r"|socket hang up|network request .* failed"
)
_NPM_DETAIL = re.compile(r"(code|errno|syscall) |at |A complete log ")
_NPM_TIMEOUT_SECONDS = 600
_TSC_TIMEOUT_SECONDS = 300


@dataclass(frozen=True)
class SchemaError:
    """One compiler error, located in the checked JSON text (or in the project's own files)."""

    source: str
    line: int
    column: int
    code: str
    message: str
    text: str = ""

    def __str__(self) -> str:
        where = f"{self.source}:{self.line}:{self.column}" if self.line else self.source
        shown = f"  <- {self.text}" if self.text else ""
        return f"{where}: {self.code} {self.message}{shown}"


def toolchain() -> Path:
    """The directory whose ``node_modules`` holds the pinned packages, installed by
    ``npm ci`` the first time this lock file is seen."""
    digest = hashlib.sha256((TYPECHECK_DIR / "package-lock.json").read_bytes()).hexdigest()
    return ensure_built(cache_dir() / "npm" / digest[:16], _npm_ci)


def type_check(documents: Mapping[str, str], work_dir: Path) -> list[SchemaError]:
    """Every error ``tsc --noEmit`` finds in ``documents`` (file name -> JSON text), each
    checked as a ``KsmonDashboard``; the project is assembled in the empty ``work_dir``."""
    node_modules = toolchain() / "node_modules"
    for name in _PROJECT_FILES:
        shutil.copyfile(TYPECHECK_DIR / name, work_dir / name)
    (work_dir / "node_modules").symlink_to(node_modules, target_is_directory=True)
    generated = work_dir / "generated"
    generated.mkdir()
    modules: dict[str, str] = {}
    for name, text in documents.items():
        module = f"{Path(name).stem}.ts"
        if f"generated/{module}" in modules:
            raise ValueError(f"two documents named {Path(name).stem}: give each its own name")
        (generated / module).write_text(
            _MODULE_HEAD + _LITERAL_PREFIX + text.rstrip() + _MODULE_TAIL
        )
        modules[f"generated/{module}"] = name
    tsc = node_modules / "typescript" / "bin" / "tsc"
    project = work_dir / "tsconfig.json"
    result = _run(
        [_program("node"), str(tsc), "--project", str(project), "--pretty", "false"],
        cwd=work_dir,
        purpose="running tsc",
        timeout=_TSC_TIMEOUT_SECONDS,
    )
    errors = _diagnostics(result.stdout, modules, documents)
    if result.returncode != 0 and not errors:
        raise RuntimeError(
            f"tsc exited with {result.returncode} and no diagnostic: {_tail(result)}"
        )
    return errors


def _npm_ci(scratch: Path) -> None:
    for name in _INSTALL_FILES:
        shutil.copyfile(TYPECHECK_DIR / name, scratch / name)
    env = {
        **os.environ,
        # npm's download cache goes with ksmon's other downloads, not in ~/.npm.
        "npm_config_cache": str(cache_dir() / "npm" / "cache"),
        "npm_config_update_notifier": "false",
    }
    # No install scripts: neither package needs one, so nothing downloaded runs here.
    options = ["--ignore-scripts", "--no-audit", "--no-fund", "--fetch-retries=1"]
    result = _run(
        [_program("npm"), "ci", *options, "--fetch-timeout=60000"],
        cwd=scratch,
        purpose="installing dashboards/typecheck/package-lock.json with npm ci",
        timeout=_NPM_TIMEOUT_SECONDS,
        env=env,
    )
    if result.returncode == 0:
        return
    output = result.stdout + result.stderr
    if _UNREACHABLE.search(output):
        raise UnreachableError(
            f"cannot reach the npm registry while installing @grafana/schema and typescript: "
            f"{_npm_error(output)}. Check the network, or set npm_config_registry to a mirror"
        )
    raise SetupError(f"npm ci of dashboards/typecheck/ failed: {_npm_error(output)}")


def _program(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise SetupError(
            f"{name} is not on PATH; the dashboard type check needs Node.js and npm "
            f"(Debian/Ubuntu: apt-get install nodejs npm)"
        )
    return found


def _run(
    command: list[str],
    *,
    cwd: Path,
    purpose: str,
    timeout: float,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            command,
            cwd=cwd,
            env=None if env is None else dict(env),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as e:
        raise SetupError(f"{purpose} took longer than {timeout:.0f} s") from e


def _diagnostics(
    output: str, modules: Mapping[str, str], documents: Mapping[str, str]
) -> list[SchemaError]:
    errors: list[SchemaError] = []
    for raw in output.splitlines():
        located = _DIAGNOSTIC.match(raw)
        if located:
            errors.append(_located(located, modules, documents))
            continue
        unlocated = _GLOBAL_DIAGNOSTIC.match(raw)
        if unlocated:
            errors.append(SchemaError("tsconfig", 0, 0, unlocated["code"], unlocated["message"]))
        # Other lines elaborate the error above them; its first line names the problem.
    return errors


def _located(
    match: re.Match[str], modules: Mapping[str, str], documents: Mapping[str, str]
) -> SchemaError:
    path = match["path"].replace(os.sep, "/")
    line, column = int(match["line"]), int(match["column"])
    if path not in modules:
        return SchemaError(path, line, column, match["code"], match["message"])
    name = modules[path]
    json_line = line - _MODULE_HEAD.count("\n")
    if json_line == 1:
        column -= len(_LITERAL_PREFIX)
    lines = documents[name].splitlines()
    text = lines[json_line - 1].strip() if 0 < json_line <= len(lines) else ""
    return SchemaError(name, json_line, column, match["code"], match["message"], text)


def _npm_error(output: str) -> str:
    """npm's one-line reason, without its code/errno/syscall lines, stack and log pointer."""
    reasons = [
        line.removeprefix("npm error").strip()
        for line in output.splitlines()
        if line.startswith("npm error")
    ]
    reasons = [reason for reason in reasons if reason and not _NPM_DETAIL.match(reason)]
    return reasons[0] if reasons else (output.strip().splitlines() or ["no output"])[-1]


def _tail(result: subprocess.CompletedProcess[str]) -> str:
    lines = [line.strip() for line in (result.stderr or result.stdout).splitlines() if line.strip()]
    return lines[-1] if lines else "no output"
