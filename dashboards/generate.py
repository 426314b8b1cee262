"""Write the Grafana dashboards from code.

    python -m dashboards.generate           # rewrite dashboards/grafana/*.json
    python -m dashboards.generate --check   # exit 1 if a committed file differs from the code

``make dashboards`` runs the first; a test runs the second, so the committed
JSON is always what the code says.
"""

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from dashboards import application, fleet, health
from dashboards.model import Dashboard

HERE = Path(__file__).resolve().parent
GRAFANA_DIR = HERE / "grafana"

DASHBOARDS: Sequence[Callable[[], Dashboard]] = (
    fleet.dashboard,
    application.dashboard,
    health.dashboard,
)


def dashboard_json(dashboard: Dashboard) -> str:
    return json.dumps(dashboard.to_json(), indent=2, ensure_ascii=False) + "\n"


def expected_files() -> dict[Path, str]:
    """Every generated file and the content the code gives it."""
    files: dict[Path, str] = {}
    for make in DASHBOARDS:
        dashboard = make()
        files[GRAFANA_DIR / f"{dashboard.uid}.json"] = dashboard_json(dashboard)
    return files


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dashboards.generate", description=__doc__)
    parser.add_argument(
        "--check", action="store_true", help="only compare the committed files with the code"
    )
    args = parser.parse_args(argv)
    files = expected_files()
    stale = sorted(
        path for path, text in files.items() if not path.is_file() or path.read_text() != text
    )
    # Files the code no longer makes (a renamed dashboard) must not linger.
    orphans = sorted(path for path in GRAFANA_DIR.glob("*.json") if path not in files)
    if args.check:
        for path in stale:
            print(f"{path.relative_to(HERE.parent)} differs from the code", file=sys.stderr)  # noqa: T201
        for path in orphans:
            print(f"{path.relative_to(HERE.parent)} is made by no code", file=sys.stderr)  # noqa: T201
        if stale or orphans:
            print("run `make dashboards` and commit the result", file=sys.stderr)  # noqa: T201
            return 1
        return 0
    for path in stale:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(files[path])
    for path in orphans:
        path.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
