"""Every kustomization under deploy/ renders offline, and everything it renders is valid:
Kubernetes objects against Kubernetes' own schemas in strict mode (unknown fields
fail), for the oldest version ksmon supports (1.29, the first with native sidecars
on by default) and the newest kubernetes-validate bundles; PodMonitor,
PrometheusRule and SparkApplication against their operators' published CRD schemas,
strict as well. Names the objects refer to (ConfigMaps, PVCs, ServiceAccounts)
exist in the same render, under the names kustomize gave them."""

import copy
from collections.abc import Iterator
from typing import Any

import kubernetes_validate
import pytest

from tests.deploy.manifests import (
    CrdSchemas,
    Object,
    Rendered,
    objects_of,
    one,
    pod_specs,
)
from tests.support.crds import validation_errors

OLDEST_SUPPORTED = "1.29"
K8S_VERSIONS = [OLDEST_SUPPORTED, kubernetes_validate.latest_version()]
EXPECTED = {"agent", "job", "monitoring", "examples/one-namespace"}


def _kubernetes_errors(obj: Object, version: str) -> list[str]:
    try:
        kubernetes_validate.validate(obj, version, strict=True)
    except kubernetes_validate.ValidationError as e:
        return [f"{'.'.join(str(p) for p in e.path) or '(root)'}: {e.message}"]
    except kubernetes_validate.SchemaNotFoundError as e:
        return [f"no schema: {e.message}"]
    return []


def _name(obj: Object) -> str:
    return f"{obj['kind']} {obj['metadata']['name']}"


def test_every_kustomization_is_rendered(rendered: Rendered) -> None:
    assert set(rendered) == EXPECTED
    for directory, objects in rendered.items():
        if directory != "monitoring":  # empty until dashboards/ has files
            assert objects, f"{directory} rendered nothing"


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_kubernetes_objects_are_valid_in_strict_mode(
    rendered: Rendered, crd_schemas: CrdSchemas, version: str
) -> None:
    errors = [
        f"{directory}: {_name(obj)}: {error}"
        for directory, objects in rendered.items()
        for obj in objects
        if (obj["apiVersion"], obj["kind"]) not in crd_schemas
        for error in _kubernetes_errors(obj, version)
    ]
    assert errors == []


def test_custom_objects_match_their_crds_in_strict_mode(
    rendered: Rendered, crd_schemas: CrdSchemas
) -> None:
    checked = set()
    errors = []
    for directory, objects in rendered.items():
        for obj in objects:
            schema = crd_schemas.get((obj["apiVersion"], obj["kind"]))
            if schema is not None:
                checked.add(obj["kind"])
                errors += [
                    f"{directory}: {_name(obj)}: {e}" for e in validation_errors(obj, schema)
                ]
    assert errors == []
    # PrometheusRules appear once dashboards/alerts/ has rule files (test_monitoring
    # checks generated ones against the CRD meanwhile).
    assert {"PodMonitor", "SparkApplication"} <= checked


def test_the_strict_checks_do_reject_what_the_cluster_would_not_see(
    rendered: Rendered, crd_schemas: CrdSchemas
) -> None:
    """The validators are not vacuous: a misspelt CRD field (which the API server
    would silently prune) and a native sidecar on a Kubernetes without them fail."""
    example = rendered["examples/one-namespace"]
    monitor = copy.deepcopy(one(example, "PodMonitor", "ksmon-agent"))
    monitor["spec"]["podMetricsEndpoint"] = monitor["spec"].pop("podMetricsEndpoints")
    schema = crd_schemas[("monitoring.coreos.com/v1", "PodMonitor")]
    assert any("podMetricsEndpoint" in e for e in validation_errors(monitor, schema))

    streams_app = one(example, "StatefulSet", "orders-enricher")
    assert _kubernetes_errors(streams_app, OLDEST_SUPPORTED) == []
    assert any("restartPolicy" in e for e in _kubernetes_errors(streams_app, "1.27"))


def _references(obj: Object) -> Iterator[tuple[str, str]]:
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


@pytest.mark.parametrize("directory", sorted(EXPECTED))
def test_referenced_objects_are_rendered_under_the_names_used(
    rendered: Rendered, directory: str
) -> None:
    objects = rendered[directory]
    present = {(o["kind"], o["metadata"]["name"]) for o in objects}
    missing = [
        f"{_name(obj)} needs {kind} {name}"
        for obj in objects
        for kind, name in _references(obj)
        if (kind, name) not in present
    ]
    assert missing == []


@pytest.mark.parametrize("directory", sorted(EXPECTED))
def test_role_binding_subjects_name_their_namespace(rendered: Rendered, directory: str) -> None:
    """The API server rejects a ServiceAccount subject without a namespace; kustomize
    fills it in only when the kustomization sets one."""
    for binding in objects_of(rendered[directory], "RoleBinding"):
        for subject in binding["subjects"]:
            assert subject.get("namespace") == binding["metadata"]["namespace"]


def test_the_example_puts_everything_in_one_namespace(rendered: Rendered) -> None:
    example = rendered["examples/one-namespace"]
    assert {o["metadata"].get("namespace") for o in example} == {"streams-demo"}
    kinds = {o["kind"] for o in example}
    assert {"Deployment", "StatefulSet", "SparkApplication", "PodMonitor"} <= kinds
