"""Where the deploy files are, and small accessors for rendered objects."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"

Object = dict[str, Any]
Rendered = dict[str, list[Object]]
CrdSchemas = dict[tuple[str, str], dict[str, Any]]

SIDECAR_LABEL = "ksmon/sidecar"
SIDECAR_CONTAINER = "ksmon-sidecar"
IMAGE_USER = 10001  # deploy/image/Dockerfile: USER 10001:10001


def kustomizations() -> list[Path]:
    """Every directory under deploy/ that kustomize builds on its own (a Component is
    built through the kustomizations that include it)."""
    return [
        path.parent
        for path in sorted(DEPLOY.rglob("kustomization.yaml"))
        if "\nkind: Component" not in path.read_text()
    ]


def objects_of(objects: list[Object], kind: str) -> list[Object]:
    return [o for o in objects if o["kind"] == kind]


def one(objects: list[Object], kind: str, name: str) -> Object:
    matches = [o for o in objects_of(objects, kind) if o["metadata"]["name"] == name]
    assert len(matches) == 1, f"expected one {kind} {name}, found {len(matches)}"
    return matches[0]


def pod_specs(obj: Object) -> Iterator[Object]:
    """The pod specs of a workload (none for other kinds)."""
    if obj["kind"] in {"Deployment", "StatefulSet", "DaemonSet", "Job"}:
        yield obj["spec"]["template"]["spec"]


def by_name(items: list[Object] | None) -> dict[str, Object]:
    return {item["name"]: item for item in items or []}
