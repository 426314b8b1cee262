"""Where the deploy files are, and small accessors for rendered objects."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate

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


# The Kubernetes versions every rendering is validated against: the oldest supported and
# the newest kubernetes-validate knows.
OLDEST_SUPPORTED = "1.29"
K8S_VERSIONS = [OLDEST_SUPPORTED, kubernetes_validate.latest_version()]


def kubernetes_errors(obj: Object, version: str) -> list[str]:
    try:
        kubernetes_validate.validate(obj, version, strict=True)
    except kubernetes_validate.ValidationError as e:
        return [f"{'.'.join(str(p) for p in e.path) or '(root)'}: {e.message}"]
    except kubernetes_validate.SchemaNotFoundError as e:
        return [f"no schema: {e.message}"]
    return []


def object_name(obj: Object) -> str:
    return f"{obj['kind']} {obj['metadata']['name']}"


def references(obj: Object) -> Iterator[tuple[str, str]]:
    """(kind, name) of the ConfigMaps, PVCs and ServiceAccounts an object needs."""
    volume_lists: list[list[Any]] = [spec.get("volumes", []) for spec in pod_specs(obj)]
    if obj["kind"] == "SparkApplication":
        volume_lists.append(obj["spec"].get("volumes", []))
        for role in ("driver", "executor"):
            account = obj["spec"][role].get("serviceAccount")
            if account:
                yield "ServiceAccount", account
    for spec in pod_specs(obj):
        if spec.get("serviceAccountName"):
            yield "ServiceAccount", spec["serviceAccountName"]
    for volumes in volume_lists:
        for volume in volumes:
            if "configMap" in volume and not volume["configMap"].get("optional"):
                yield "ConfigMap", volume["configMap"]["name"]
            if "persistentVolumeClaim" in volume:
                yield "PersistentVolumeClaim", volume["persistentVolumeClaim"]["claimName"]
    if obj["kind"] == "RoleBinding":
        yield obj["roleRef"]["kind"], obj["roleRef"]["name"]
        for subject in obj["subjects"]:
            yield subject["kind"], subject["name"]


def missing_references(objects: list[Object], present: set[tuple[str, str]]) -> list[str]:
    """What the objects need (``references``) that is not among ``present`` (kind, name)."""
    return [
        f"{object_name(obj)} needs {kind} {name}"
        for obj in objects
        for kind, name in references(obj)
        if (kind, name) not in present
    ]
