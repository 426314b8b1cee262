"""The sidecar component, asserted on rendered YAML: what it adds to a Kafka Streams
workload is a native sidecar (an init container with restartPolicy Always), mounts
the Streams state directory read-only, knows its pod from the Downward API, probes
the right paths on its own port, is small, and is scraped by its PodMonitor; and
it touches only the workloads that opt in."""

import os
from pathlib import Path

import pytest
import yaml

from tests.deploy.manifests import (
    DEPLOY,
    SIDECAR_CONTAINER,
    SIDECAR_LABEL,
    Object,
    Rendered,
    by_name,
    objects_of,
    one,
)
from tests.support.kustomize import render

DOWNWARD_API = {
    "POD_NAME": "metadata.name",
    "POD_NAMESPACE": "metadata.namespace",
    "POD_IP": "status.podIP",
    "NODE_NAME": "spec.nodeName",
}
STATE_VOLUME = "streams-state"
SIDECAR_PORT = 8479
MIB = 1024 * 1024


def _memory_bytes(quantity: str) -> int:
    units = {"Ki": 1024, "Mi": MIB, "Gi": 1024 * MIB, "M": 1000**2, "G": 1000**3}
    for suffix, factor in units.items():
        if quantity.endswith(suffix):
            return int(quantity.removesuffix(suffix)) * factor
    return int(quantity)


def _sidecar(workload: Object) -> Object:
    spec = workload["spec"]["template"]["spec"]
    assert SIDECAR_CONTAINER not in by_name(spec.get("containers")), "must not be a container"
    sidecar = by_name(spec.get("initContainers")).get(SIDECAR_CONTAINER)
    assert sidecar is not None, f"{workload['metadata']['name']} has no {SIDECAR_CONTAINER}"
    return sidecar


@pytest.fixture(scope="module")
def streams_app(rendered: Rendered) -> Object:
    return one(rendered["examples/one-namespace"], "StatefulSet", "orders-enricher")


def test_it_is_a_native_sidecar(streams_app: Object) -> None:
    assert _sidecar(streams_app)["restartPolicy"] == "Always"


def test_it_mounts_the_streams_state_directory_read_only(streams_app: Object) -> None:
    pod = streams_app["spec"]["template"]["spec"]
    state_mounts = [m for m in _sidecar(streams_app)["volumeMounts"] if m["name"] == STATE_VOLUME]
    assert state_mounts
    assert all(m.get("readOnly") is True for m in state_mounts)
    # ... the very volume the app keeps its state.dir on.
    app_mounts = {m["name"] for c in pod["containers"] for m in c.get("volumeMounts", [])}
    assert STATE_VOLUME in app_mounts
    claims = {t["metadata"]["name"] for t in streams_app["spec"].get("volumeClaimTemplates", [])}
    assert STATE_VOLUME in claims | set(by_name(pod.get("volumes")))
    # Nothing else the sidecar mounts is writable except its own scratch space.
    writable = {m["name"] for m in _sidecar(streams_app)["volumeMounts"] if not m.get("readOnly")}
    assert writable == {"ksmon-sidecar-tmp"}
    assert "emptyDir" in by_name(pod["volumes"])["ksmon-sidecar-tmp"]


def test_it_knows_its_pod_from_the_downward_api(streams_app: Object) -> None:
    env = by_name(_sidecar(streams_app)["env"])
    assert {
        name: env[name]["valueFrom"]["fieldRef"]["fieldPath"] for name in DOWNWARD_API
    } == DOWNWARD_API


def test_probes_hit_healthz_and_a_lenient_readyz_on_the_sidecar_port(streams_app: Object) -> None:
    sidecar = _sidecar(streams_app)
    ports = {p["name"]: p["containerPort"] for p in sidecar["ports"]}
    readiness, liveness = sidecar["readinessProbe"], sidecar["livenessProbe"]
    assert readiness["httpGet"]["path"] == "/readyz"
    assert liveness["httpGet"]["path"] == "/healthz"
    for probe in (readiness, liveness):
        assert ports[probe["httpGet"]["port"]] == SIDECAR_PORT
    # Lenient: readiness gates the whole pod, so a minute of failures before it flips.
    assert readiness["periodSeconds"] * readiness["failureThreshold"] >= 60
    # No startupProbe: the app's containers never wait for the sidecar to be ready.
    assert "startupProbe" not in sidecar


def test_it_requests_little_and_has_a_memory_limit(streams_app: Object) -> None:
    resources = _sidecar(streams_app)["resources"]
    limit = _memory_bytes(resources["limits"]["memory"])
    assert resources["requests"]["cpu"] == "10m"
    assert _memory_bytes(resources["requests"]["memory"]) <= limit
    # Room for the sidecar's RSS target (80 MB), and not much more.
    assert 80 * 1000**2 <= limit <= 128 * MIB


def test_its_pod_monitor_scrapes_the_sidecar_port(rendered: Rendered, streams_app: Object) -> None:
    monitor = one(rendered["examples/one-namespace"], "PodMonitor", "ksmon-sidecar")
    pod_labels = streams_app["spec"]["template"]["metadata"]["labels"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    port_names = {p["name"] for p in _sidecar(streams_app)["ports"]}
    assert [e["port"] for e in monitor["spec"]["podMetricsEndpoints"]] == ["ksmon-metrics"]
    assert "ksmon-metrics" in port_names


def test_it_patches_opted_in_deployments_and_statefulsets_only(
    kustomize: Path, tmp_path: Path
) -> None:
    """Deployments work as well as StatefulSets; the app's own init containers, containers
    and volumes stay; a workload without the label is left alone."""
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    component = os.path.relpath(DEPLOY / "sidecar", overlay)
    (overlay / "kustomization.yaml").write_text(
        "resources: [apps.yaml]\n"
        f"components: [{component}]\n"
        "configMapGenerator:\n"
        "  - name: ksmon-sidecar-config\n"
        "    literals: ['config.yaml=agent: {mode: sidecar}']\n"
    )
    opted_in_app = _deployment(
        "opted-in",
        {SIDECAR_LABEL: "true"},
        {
            "initContainers": [{"name": "wait-for-kafka", "image": "busybox"}],
            "containers": [{"name": "app", "image": "app"}],
            "volumes": [{"name": STATE_VOLUME, "emptyDir": {}}],
        },
    )
    other_app = _deployment("left-alone", {}, {"containers": [{"name": "app", "image": "app"}]})
    (overlay / "apps.yaml").write_text(yaml.safe_dump_all([opted_in_app, other_app]))
    objects = render(kustomize, overlay)
    opted_in = one(objects, "Deployment", "opted-in")
    pod = opted_in["spec"]["template"]["spec"]
    assert _sidecar(opted_in)["restartPolicy"] == "Always"
    assert set(by_name(pod["initContainers"])) == {SIDECAR_CONTAINER, "wait-for-kafka"}
    assert set(by_name(pod["containers"])) == {"app"}
    assert set(by_name(pod["volumes"])) == {
        STATE_VOLUME,
        "ksmon-sidecar-config",
        "ksmon-sidecar-tmp",
    }
    config_map = objects_of(objects, "ConfigMap")[0]["metadata"]["name"]
    assert by_name(pod["volumes"])["ksmon-sidecar-config"]["configMap"]["name"] == config_map

    assert one(objects, "Deployment", "left-alone") == other_app


def _deployment(name: str, labels: dict[str, str], pod: Object) -> Object:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, **({"labels": labels} if labels else {})},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": pod},
        },
    }
