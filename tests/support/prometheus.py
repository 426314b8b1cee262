"""Prometheus from the Debian package (``make prometheus-tools`` installs it): promtool,
amtool and a real Prometheus server on a free local port, for tests."""

import json
import shutil
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from agent.embedded.ports import LOOPBACK, free_port
from agent.embedded.process import JvmProcess, wait_until
from tests.support.environment import unavailable

ROOT = Path(__file__).resolve().parents[2]
RULES_DIR = ROOT / "dashboards" / "alerts"
RULE_FILES = tuple(sorted(RULES_DIR.glob("*.rules.yml")))
RULE_TESTS = tuple(sorted((RULES_DIR / "tests").glob("*.test.yml")))


def tool(name: str) -> str:
    """The path of ``name`` (promtool, prometheus, amtool), or skip/fail as a missing component."""
    path = shutil.which(name)
    if path is None:
        unavailable(name, "not on PATH; `make prometheus-tools` installs it (Debian packages)")
    return path


def run_tool(name: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [tool(name), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def alert_rules() -> list[dict[str, Any]]:
    """Every alerting rule of every rule file, in order."""
    rules = []
    for path in RULE_FILES:
        for group in yaml.safe_load(path.read_text())["groups"]:
            rules += [rule for rule in group["rules"] if "alert" in rule]
    return rules


def duration_seconds(text: str) -> float:
    """A Prometheus duration with one unit (``90s``, ``5m``, ``1h``) in seconds."""
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
    for unit in sorted(units, key=len, reverse=True):
        if text.endswith(unit) and text[: -len(unit)].isdigit():
            return int(text[: -len(unit)]) * units[unit]
    raise ValueError(f"not a single-unit Prometheus duration: {text!r}")


def rules_with_shorter_for(path: Path, divisor: int) -> str:
    """The rule file with every ``for:`` divided by ``divisor`` (5m -> 5s for 60), and
    nothing else changed: a test sees the real expressions fire within seconds."""
    document = yaml.safe_load(path.read_text())
    for group in document["groups"]:
        for rule in group["rules"]:
            if "for" in rule:
                rule["for"] = f"{max(1, int(duration_seconds(rule['for']) / divisor))}s"
    return str(yaml.safe_dump(document, sort_keys=False))


class PrometheusServer:
    """A real Prometheus scraping ``targets`` (job name -> host:port) every second and
    evaluating ``rule_files`` every second, on a free port of 127.0.0.1."""

    def __init__(
        self,
        work_dir: Path,
        targets: Mapping[str, Sequence[str]],
        rule_files: Sequence[Path],
    ) -> None:
        self.work_dir = work_dir
        self.port = free_port()
        config = {
            "global": {
                "scrape_interval": "1s",
                "scrape_timeout": "1s",
                "evaluation_interval": "1s",
            },
            "rule_files": [str(p) for p in rule_files],
            "scrape_configs": [
                {"job_name": job, "static_configs": [{"targets": list(addresses)}]}
                for job, addresses in targets.items()
            ],
        }
        work_dir.mkdir(parents=True, exist_ok=True)
        self.config_path = work_dir / "prometheus.yml"
        self.config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        self.process = JvmProcess(
            "prometheus",
            [
                tool("prometheus"),
                f"--config.file={self.config_path}",
                f"--storage.tsdb.path={work_dir / 'data'}",
                f"--web.listen-address={LOOPBACK}:{self.port}",
                "--log.level=warn",
            ],
            work_dir / "prometheus.log",
        )

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def start(self) -> None:
        check = run_tool("promtool", "check", "config", str(self.config_path))
        if check.returncode != 0:
            raise AssertionError(
                f"promtool rejects the generated config: {check.stdout}{check.stderr}"
            )
        self.process.start()
        wait_until(
            self._ready,
            timeout=60,
            what="Prometheus to be ready",
            abort=lambda: (
                None if self.process.alive else f"prometheus exited: {self.process.log_tail()}"
            ),
        )

    def stop(self) -> None:
        self.process.stop(timeout=20)

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as response:  # noqa: S310
                return bool(response.status == 200)
        except OSError:
            return False

    def api(self, path: str, **params: str) -> Any:
        """GET /api/v1/<path>; the ``data`` of a successful answer, else AssertionError."""
        query = urllib.parse.urlencode(params)
        url = f"{self.url}/api/v1/{path}" + (f"?{query}" if query else "")
        try:
            with urllib.request.urlopen(url, timeout=30) as response:  # noqa: S310
                answer = json.loads(response.read())
        except urllib.error.HTTPError as e:
            raise AssertionError(
                f"{url}: HTTP {e.code}: {e.read().decode(errors='replace')}"
            ) from e
        if answer.get("status") != "success":
            raise AssertionError(f"{url}: {answer}")
        return answer["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        return list(self.api("query", query=expr)["result"])

    def query_range(
        self, expr: str, start: float, end: float, step: str = "1s"
    ) -> list[dict[str, Any]]:
        return list(
            self.api("query_range", query=expr, start=f"{start:.3f}", end=f"{end:.3f}", step=step)[
                "result"
            ]
        )

    def series(self, match: str, start: float, end: float) -> list[dict[str, str]]:
        return list(
            self.api("series", **{"match[]": match, "start": f"{start:.3f}", "end": f"{end:.3f}"})
        )

    def alerts(self) -> list[dict[str, Any]]:
        return list(self.api("alerts")["alerts"])

    def rules(self) -> list[dict[str, Any]]:
        return [rule for group in self.api("rules")["groups"] for rule in group["rules"]]
