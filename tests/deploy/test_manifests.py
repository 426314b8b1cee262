"""Every kustomization under deploy/ renders offline, and everything it renders is valid:
Kubernetes objects against Kubernetes' own schemas in strict mode (unknown fields
fail), for the oldest version ksmon supports (1.29, the first with native sidecars
on by default) and the newest kubernetes-validate bundles; PodMonitor,
PrometheusRule and SparkApplication against their operators' published CRD schemas,
strict as well. Names the objects refer to (ConfigMaps, PVCs, ServiceAccounts)
exist in the same render, under the names kustomize gave them."""

import copy

import pytest

from tests.deploy.manifests import (
    K8S_VERSIONS,
    OLDEST_SUPPORTED,
    CrdSchemas,
    Rendered,
    kubernetes_errors,
    missing_references,
    object_name,
    objects_of,
    one,
)
from tests.support.crds import validation_errors

EXPECTED = {"agent", "job", "monitoring", "examples/one-namespace"}


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
        f"{directory}: {object_name(obj)}: {error}"
        for directory, objects in rendered.items()
        for obj in objects
        if (obj["apiVersion"], obj["kind"]) not in crd_schemas
        for error in kubernetes_errors(obj, version)
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
                    f"{directory}: {object_name(obj)}: {e}" for e in validation_errors(obj, schema)
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
    assert kubernetes_errors(streams_app, OLDEST_SUPPORTED) == []
    assert any("restartPolicy" in e for e in kubernetes_errors(streams_app, "1.27"))


@pytest.mark.parametrize("directory", sorted(EXPECTED))
def test_referenced_objects_are_rendered_under_the_names_used(
    rendered: Rendered, directory: str
) -> None:
    objects = rendered[directory]
    present = {(o["kind"], o["metadata"]["name"]) for o in objects}
    assert missing_references(objects, present) == []


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
