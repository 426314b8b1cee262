"""The Helm chart (deploy/helm/ksmon), linted and rendered by a real helm built from the Go
module proxy: `helm lint --strict`, and `helm template` with the default values and with
non-default ones, each rendering checked like the Kustomize bases (Kubernetes' schemas
for 1.29 and the newest, the operators' CRD schemas, strict). With default values the
chart ships what Kustomize ships: the same PrometheusRules and dashboards, the same
agent, job and sidecar; with other values, the values land where they should."""

import copy
import re
import shutil
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from agent.errors import KsmonError
from dashboards import alert_rules
from deploy.generate import SOURCE_ANNOTATION, AlertSettings, SourceFile, helm_rules_template
from tests.deploy.manifests import (
    DEPLOY,
    IMAGE_USER,
    K8S_VERSIONS,
    REPO,
    SIDECAR_CONTAINER,
    SIDECAR_LABEL,
    CrdSchemas,
    Object,
    Rendered,
    by_name,
    kubernetes_errors,
    missing_references,
    object_name,
    objects_of,
    one,
    references,
)
from tests.support import crds
from tests.support.crds import PROMETHEUS_OPERATOR, strict_schema, validation_errors
from tests.support.environment import unavailable
from tests.support.go_modules import module_source
from tests.support.helm import helm_binary, lint, template
from tests.support.kustomize import render

CHART = DEPLOY / "helm" / "ksmon"
SERVICE_MONITOR_CRD = "example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml"

SIDECAR_CONFIG = {
    "agent": {"mode": "sidecar"},
    "http": {"listen": "0.0.0.0:8479"},
    "clusters": [{"name": "main", "bootstrap_servers": "kafka:9092"}],
    "sink": {"type": "kafka", "kafka": {"topic": "ksmon.snapshots", "create_topic": False}},
    "sidecar": {"application_id": "orders-enricher", "state_dir": "/var/lib/kafka-streams"},
}
# Everything a user commonly changes, at once.
NON_DEFAULT: dict[str, Any] = {
    "image": {"repository": "registry.example.com/ksmon", "tag": "9.9.9", "pullPolicy": "Always"},
    "imagePullSecrets": [{"name": "registry-pull"}],
    "commonLabels": {"team": "streams"},
    "podMonitor": {"enabled": False},
    "serviceMonitor": {
        "enabled": True,
        "labels": {"release": "kube-prometheus-stack"},
        "interval": "30s",
    },
    "prometheusRule": {"enabled": False},
    "agent": {
        "existingConfigMap": "my-agent-config",
        "secrets": {
            "env": [{"name": "kafka-sasl"}],
            "files": [{"name": "kafka-tls", "mountPath": "/etc/ksmon/tls"}],
        },
        "resources": {
            "requests": {"cpu": "250m", "memory": "192Mi"},
            "limits": {"cpu": "1", "memory": "384Mi"},
        },
        "nodeSelector": {"kubernetes.io/os": "linux"},
    },
    "job": {
        "image": {"repository": "registry.example.com/ksmon-job", "tag": "9.9.9"},
        "existingConfigMap": "my-job-config",
        "secrets": {
            "env": [{"name": "job-sasl", "optional": False}],
            "files": [{"name": "kafka-tls", "mountPath": "/etc/ksmon/tls"}],
        },
        "checkpoint": {"existingClaim": "my-checkpoint"},
        "executor": {"instances": 3, "cores": 2, "memory": "2g"},
        "executorOnDriverNode": False,
        "serviceAccount": {"create": False, "name": "spark"},
        "rbac": {"create": False},
    },
    "sidecar": {"config": SIDECAR_CONFIG, "podMonitor": {"enabled": False}},
    "dashboards": {"namespace": "grafana"},
}
# The alert settings, changed (the renderer of dashboards/alerts gets the same file).
ALERTING: dict[str, Any] = {
    "runbookBaseUrl": "https://wiki.example.com/ksmon",
    "selectors": {"targets": 'job=~"streams/.*"', "job": 'job="streams/ksmon-job"'},
    "rules": {
        "KsmonTargetDown": {"for": "7m", "severity": "critical"},
        "KafkaStreamsTimeLagHigh": {"thresholdSeconds": 900},
    },
    # One alert of two rules, one of one: both left out by the chart as by the renderer.
    "disabledAlerts": ["KafkaStreamsThreadsDead", "KsmonJobAbsent"],
}
# What each values case names but does not create.
EXISTING: dict[str, set[tuple[str, str]]] = {
    "default": set(),
    "non-default": {
        ("ConfigMap", "my-agent-config"),
        ("ConfigMap", "my-job-config"),
        ("PersistentVolumeClaim", "my-checkpoint"),
        ("ServiceAccount", "spark"),
    },
    "alerting": set(),
}
CASES = {"default": {}, "non-default": NON_DEFAULT, "alerting": {"alerting": ALERTING}}


@pytest.fixture(scope="session")
def helm() -> Path:
    try:
        return helm_binary()
    except KsmonError as e:
        unavailable("helm (built from the Go module proxy)", e)


@pytest.fixture(scope="session")
def helm_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("helm")


@pytest.fixture(scope="session")
def schemas(crd_schemas: CrdSchemas) -> CrdSchemas:
    """The CRD schemas of the deploy tests, plus the ServiceMonitor's."""
    try:
        source = module_source(PROMETHEUS_OPERATOR) / SERVICE_MONITOR_CRD
    except KsmonError as e:
        unavailable("the ServiceMonitor CRD (from the Go module proxy)", e)
    crd = yaml.safe_load(source.read_text())
    return crd_schemas | {key: strict_schema(schema) for key, schema in crds.crd_schemas(crd)}


@pytest.fixture(scope="session")
def renderings(helm: Path, helm_home: Path) -> dict[tuple[str, str], list[Object]]:
    """(values case, Kubernetes version) -> the objects `helm template` renders."""
    return {
        (case, version): template(helm, CHART, helm_home, kube_version=version, values=values)
        for case, values in CASES.items()
        for version in K8S_VERSIONS
    }


def _default(renderings: dict[tuple[str, str], list[Object]]) -> list[Object]:
    return renderings[("default", K8S_VERSIONS[0])]


def _non_default(renderings: dict[tuple[str, str], list[Object]]) -> list[Object]:
    return renderings[("non-default", K8S_VERSIONS[0])]


def _errors(objects: list[Object], schemas: CrdSchemas, version: str) -> list[str]:
    """Every object checked strictly: custom ones against their CRD, the others against
    Kubernetes' own schemas of ``version``."""
    errors = []
    for obj in objects:
        schema = schemas.get((obj["apiVersion"], obj["kind"]))
        found = (
            validation_errors(obj, schema)
            if schema is not None
            else kubernetes_errors(obj, version)
        )
        errors += [f"{object_name(obj)}: {e}" for e in found]
    return errors


@pytest.mark.parametrize("case", sorted(CASES))
def test_helm_lint_passes_strict(helm: Path, helm_home: Path, case: str) -> None:
    output = lint(helm, CHART, helm_home, CASES[case])
    assert "1 chart(s) linted, 0 chart(s) failed" in output


@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_every_rendered_object_is_valid_in_strict_mode(
    renderings: dict[tuple[str, str], list[Object]], schemas: CrdSchemas, case: str, version: str
) -> None:
    objects = renderings[(case, version)]
    assert objects
    assert _errors(objects, schemas, version) == []


def test_the_strict_checks_do_reject_a_misspelt_field(
    renderings: dict[tuple[str, str], list[Object]], schemas: CrdSchemas
) -> None:
    """The validation is not vacuous: a ServiceMonitor field the CRD does not have, and
    a Deployment field Kubernetes does not have, fail."""
    monitor = copy.deepcopy(one(_non_default(renderings), "ServiceMonitor", "ksmon-agent"))
    monitor["spec"]["endpoint"] = monitor["spec"].pop("endpoints")
    schema = schemas[("monitoring.coreos.com/v1", "ServiceMonitor")]
    assert any("endpoint" in e for e in validation_errors(monitor, schema))
    deployment = copy.deepcopy(one(_default(renderings), "Deployment", "ksmon-agent"))
    deployment["spec"]["template"]["spec"]["securityContxt"] = {}
    assert kubernetes_errors(deployment, K8S_VERSIONS[0]) != []


@pytest.mark.parametrize("case", sorted(CASES))
def test_referenced_objects_are_rendered_or_named_in_the_values(
    renderings: dict[tuple[str, str], list[Object]], case: str
) -> None:
    objects = renderings[(case, K8S_VERSIONS[0])]
    present = {(o["kind"], o["metadata"]["name"]) for o in objects} | EXISTING[case]
    assert missing_references(objects, present) == []
    assert {o["metadata"]["namespace"] for o in objects} <= {"monitoring", "grafana"}


def test_another_release_name_prefixes_every_object(helm: Path, helm_home: Path) -> None:
    objects = template(helm, CHART, helm_home, kube_version=K8S_VERSIONS[0], release="prod")
    assert all(o["metadata"]["name"].startswith("prod-ksmon-") for o in objects)
    present = {(o["kind"], o["metadata"]["name"]) for o in objects}
    assert [r for o in objects for r in references(o) if r not in present] == []
    spark = one(objects, "SparkApplication", "prod-ksmon-job")["spec"]
    affinity = spark["executor"]["affinity"]["podAffinity"]
    (term,) = affinity["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["labelSelector"]["matchLabels"]["sparkoperator.k8s.io/app-name"] == "prod-ksmon-job"


# --- With default values, the chart ships what Kustomize ships. ---


def _by_source(objects: list[Object], kind: str) -> dict[str, Object]:
    """The generated objects of a kind by the source file they were generated from."""
    return {
        o["metadata"]["annotations"][SOURCE_ANNOTATION]: o
        for o in objects_of(objects, kind)
        if SOURCE_ANNOTATION in o["metadata"].get("annotations", {})
    }


def test_default_rules_and_dashboards_equal_the_kustomize_ones(
    renderings: dict[tuple[str, str], list[Object]], kustomize: Path
) -> None:
    shipped = render(kustomize, DEPLOY / "monitoring")
    chart = _default(renderings)
    chart_rules, kustomize_rules = (_by_source(o, "PrometheusRule") for o in (chart, shipped))
    assert chart_rules
    assert {p: r["spec"] for p, r in chart_rules.items()} == {
        p: r["spec"] for p, r in kustomize_rules.items()
    }
    chart_dashboards = {
        p: c for p, c in _by_source(chart, "ConfigMap").items() if p.startswith("dashboards/")
    }
    kustomize_dashboards = _by_source(shipped, "ConfigMap")
    assert chart_dashboards
    assert {p: c["data"] for p, c in chart_dashboards.items()} == {
        p: c["data"] for p, c in kustomize_dashboards.items()
    }
    for path, config_map in chart_dashboards.items():
        shipped_metadata = kustomize_dashboards[path]["metadata"]
        assert config_map["metadata"]["name"] == shipped_metadata["name"]
        assert shipped_metadata["labels"].items() <= config_map["metadata"]["labels"].items()
        assert config_map["metadata"]["annotations"] == shipped_metadata["annotations"]


def _without(obj: Object, *paths: str) -> Object:
    """A copy of ``obj`` without the dotted ``paths`` (list items by their ``name``)."""
    trimmed = copy.deepcopy(obj)
    for path in paths:
        *parents, last = path.split(".")
        node: Any = trimmed
        for part in parents:
            node = by_name(node)[part] if isinstance(node, list) else node[part]
        if isinstance(node, list):
            node.remove(by_name(node)[last])
        else:
            node.pop(last, None)
    return trimmed


def test_the_default_agent_is_the_kustomize_agent(
    renderings: dict[tuple[str, str], list[Object]], rendered: Rendered
) -> None:
    chart = one(_default(renderings), "Deployment", "ksmon-agent")["spec"]
    shipped = one(rendered["agent"], "Deployment", "ksmon-agent")["spec"]
    names = ("template.metadata", "selector", "template.spec.volumes.config")
    chart_pod = _without(chart, *names, "template.spec.containers.agent.imagePullPolicy")
    assert chart_pod == _without(shipped, *names)
    config = one(_default(renderings), "ConfigMap", "ksmon-agent-config")
    expected = yaml.safe_load((DEPLOY / "agent" / "config.yaml").read_text())
    assert yaml.safe_load(config["data"]["config.yaml"]) == expected


def test_the_default_job_is_the_kustomize_job(
    renderings: dict[tuple[str, str], list[Object]], rendered: Rendered
) -> None:
    chart = one(_default(renderings), "SparkApplication", "ksmon-job")["spec"]
    shipped = one(rendered["job"], "SparkApplication", "ksmon-job")["spec"]
    names = (
        "volumes",
        "driver.labels",
        "executor.labels",
        "driver.serviceAccount",
        "executor.serviceAccount",
    )
    assert _without(chart, *names) == _without(shipped, *names)
    assert [v["name"] for v in chart["volumes"]] == [v["name"] for v in shipped["volumes"]]
    config = one(_default(renderings), "ConfigMap", "ksmon-job-config")
    expected = yaml.safe_load((DEPLOY / "job" / "job.yaml").read_text())
    assert yaml.safe_load(config["data"]["job.yaml"]) == expected
    pvc = one(_default(renderings), "PersistentVolumeClaim", "ksmon-job-checkpoint")
    assert (
        pvc["spec"] == one(rendered["job"], "PersistentVolumeClaim", "ksmon-job-checkpoint")["spec"]
    )


def _security_contexts(objects: list[Object]) -> dict[str, Object]:
    """Where -> the pod's and container's security settings merged, for every ksmon
    container (the agent, the driver and executors, the sidecar's patch)."""
    found = {}
    for deployment in objects_of(objects, "Deployment"):
        pod = deployment["spec"]["template"]["spec"]
        for container in pod["containers"]:
            found[f"{deployment['metadata']['name']}/{container['name']}"] = (
                pod["securityContext"] | container["securityContext"]
            )
    for application in objects_of(objects, "SparkApplication"):
        for role in ("driver", "executor"):
            spec = application["spec"][role]
            found[role] = spec["podSecurityContext"] | spec["securityContext"]
    for patch in _sidecar_patches(objects):
        (sidecar,) = patch["spec"]["template"]["spec"]["initContainers"]
        found[SIDECAR_CONTAINER] = sidecar["securityContext"]
    return found


def _sidecar_patches(objects: list[Object]) -> list[Object]:
    return [
        yaml.safe_load(c["data"]["patch.yaml"])
        for c in objects_of(objects, "ConfigMap")
        if c["metadata"]["name"].endswith("-sidecar-patch")
    ]


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_ksmon_container_runs_as_the_image_user_without_privileges(
    renderings: dict[tuple[str, str], list[Object]], case: str
) -> None:
    contexts = _security_contexts(renderings[(case, K8S_VERSIONS[0])])
    assert set(contexts) == {"ksmon-agent/agent", "driver", "executor", SIDECAR_CONTAINER}
    for where, context in contexts.items():
        assert context["runAsNonRoot"] is True, where
        assert (context["runAsUser"], context["runAsGroup"]) == (IMAGE_USER, IMAGE_USER), where
        assert context["allowPrivilegeEscalation"] is False, where
        assert context["capabilities"] == {"drop": ["ALL"]}, where
        assert context["seccompProfile"] == {"type": "RuntimeDefault"}, where
    # A read-only root filesystem for the agent and the sidecar (Spark writes scratch files).
    assert contexts["ksmon-agent/agent"]["readOnlyRootFilesystem"] is True
    assert contexts[SIDECAR_CONTAINER]["readOnlyRootFilesystem"] is True


def test_the_sidecar_patch_gives_the_kustomize_sidecar(
    helm: Path, helm_home: Path, kustomize: Path, rendered: Rendered, tmp_path: Path
) -> None:
    """Merged into the example's StatefulSet by kustomize (a strategic merge patch, as
    `kubectl patch` applies it), the chart's patch adds the very sidecar the Kustomize
    component adds, and the result is valid."""
    objects = template(
        helm,
        CHART,
        helm_home,
        kube_version=K8S_VERSIONS[0],
        values={"image": {"repository": "registry.example.com/ksmon"}},
        namespace="streams-demo",
    )
    (patch,) = _sidecar_patches(objects)
    example = DEPLOY / "examples" / "one-namespace"
    (tmp_path / "streams-app.yaml").write_text((example / "streams-app.yaml").read_text())
    header = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "x"}}
    (tmp_path / "patch.yaml").write_text(yaml.safe_dump(header | patch))
    (tmp_path / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "resources": ["streams-app.yaml"],
                "patches": [{"path": "patch.yaml", "target": {"kind": "StatefulSet"}}],
            }
        )
    )
    patched = one(render(kustomize, tmp_path), "StatefulSet", "orders-enricher")
    for version in K8S_VERSIONS:
        assert kubernetes_errors(patched, version) == []
    shipped = one(rendered["examples/one-namespace"], "StatefulSet", "orders-enricher")
    pod, shipped_pod = (s["spec"]["template"]["spec"] for s in (patched, shipped))
    sidecar = by_name(pod["initContainers"])[SIDECAR_CONTAINER]
    assert (
        _without(sidecar, "imagePullPolicy")
        == by_name(shipped_pod["initContainers"])[SIDECAR_CONTAINER]
    )
    volumes = ("ksmon-sidecar-config.configMap",)
    assert _without(by_name(pod["volumes"]), *volumes) == _without(
        by_name(shipped_pod["volumes"]), *volumes
    )
    assert patched["spec"]["template"]["metadata"]["labels"][SIDECAR_LABEL] == "true"
    assert pod["containers"] == shipped_pod["containers"]  # the app's own stay


# --- With other values, they land where they should. ---


def test_service_monitors_replace_pod_monitors_and_scrape_the_metrics_services(
    renderings: dict[tuple[str, str], list[Object]],
) -> None:
    objects = _non_default(renderings)
    assert objects_of(objects, "PodMonitor") == []
    monitors = {m["metadata"]["name"]: m for m in objects_of(objects, "ServiceMonitor")}
    assert set(monitors) == {"ksmon-agent", "ksmon-job"}
    services = objects_of(objects, "Service")
    pod_labels = {
        "ksmon-agent": one(objects, "Deployment", "ksmon-agent")["spec"]["template"]["metadata"][
            "labels"
        ],
        "ksmon-job": one(objects, "SparkApplication", "ksmon-job")["spec"]["driver"]["labels"]
        | {"spark-role": "driver"},
    }
    for name, monitor in monitors.items():
        assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
        assert monitor["spec"]["endpoints"] == [
            {"port": "metrics", "path": "/metrics", "interval": "30s"}
        ]
        selector = monitor["spec"]["selector"]["matchLabels"]
        (service,) = [s for s in services if selector.items() <= s["metadata"]["labels"].items()]
        assert [p["name"] for p in service["spec"]["ports"]] == ["metrics"]
        assert service["spec"]["selector"].items() <= pod_labels[name].items()


def test_default_pod_monitors_scrape_agent_job_and_sidecars(
    renderings: dict[tuple[str, str], list[Object]], rendered: Rendered
) -> None:
    chart = {m["metadata"]["name"]: m for m in objects_of(_default(renderings), "PodMonitor")}
    shipped = rendered["examples/one-namespace"]
    assert set(chart) == {"ksmon-agent", "ksmon-job", "ksmon-sidecar"}
    for name, monitor in chart.items():
        kustomize_monitor = one(shipped, "PodMonitor", name)
        assert (
            monitor["spec"]["podMetricsEndpoints"]
            == kustomize_monitor["spec"]["podMetricsEndpoints"]
        )
    assert chart["ksmon-sidecar"]["spec"]["selector"] == {"matchLabels": {SIDECAR_LABEL: "true"}}
    assert objects_of(_default(renderings), "ServiceMonitor") == []


def test_both_monitor_kinds_at_once_are_refused(helm: Path, helm_home: Path) -> None:
    with pytest.raises(KsmonError, match="enable one of them"):
        template(
            helm,
            CHART,
            helm_home,
            kube_version=K8S_VERSIONS[0],
            values={"serviceMonitor": {"enabled": True}},
        )


def test_rules_off_renders_no_prometheus_rule(
    renderings: dict[tuple[str, str], list[Object]],
) -> None:
    assert objects_of(_non_default(renderings), "PrometheusRule") == []
    assert len(objects_of(_default(renderings), "PrometheusRule")) >= 2


def test_existing_secrets_become_env_and_read_only_files(
    renderings: dict[tuple[str, str], list[Object]],
) -> None:
    objects = _non_default(renderings)
    pod = one(objects, "Deployment", "ksmon-agent")["spec"]["template"]["spec"]
    (agent,) = pod["containers"]
    assert agent["envFrom"] == [{"secretRef": {"name": "kafka-sasl", "optional": False}}]
    tls = {"name": "secret-kafka-tls", "mountPath": "/etc/ksmon/tls", "readOnly": True}
    assert tls in agent["volumeMounts"]
    assert by_name(pod["volumes"])["secret-kafka-tls"]["secret"] == {"secretName": "kafka-tls"}
    spark = one(objects, "SparkApplication", "ksmon-job")["spec"]
    assert spark["driver"]["envFrom"] == [{"secretRef": {"name": "job-sasl", "optional": False}}]
    # The executors' Kafka consumers open the TLS files too.
    for role in ("driver", "executor"):
        assert tls in spark[role]["volumeMounts"]
    assert by_name(spark["volumes"])["secret-kafka-tls"]["secret"] == {"secretName": "kafka-tls"}
    # No Secret is ever rendered: secrets are referenced, never held in values.
    assert all(o["kind"] != "Secret" for r in renderings.values() for o in r)


def test_images_resources_and_names_from_the_values(
    renderings: dict[tuple[str, str], list[Object]],
) -> None:
    objects = _non_default(renderings)
    pod = one(objects, "Deployment", "ksmon-agent")["spec"]["template"]
    (agent,) = pod["spec"]["containers"]
    assert agent["image"] == "registry.example.com/ksmon:9.9.9"
    assert agent["imagePullPolicy"] == "Always"
    assert agent["resources"] == NON_DEFAULT["agent"]["resources"]
    assert pod["spec"]["imagePullSecrets"] == [{"name": "registry-pull"}]
    assert pod["spec"]["nodeSelector"] == {"kubernetes.io/os": "linux"}
    assert by_name(pod["spec"]["volumes"])["config"]["configMap"]["name"] == "my-agent-config"
    assert "checksum/config" not in pod["metadata"].get("annotations", {})
    spark = one(objects, "SparkApplication", "ksmon-job")["spec"]
    assert spark["image"] == "registry.example.com/ksmon-job:9.9.9"
    assert spark["imagePullSecrets"] == ["registry-pull"]
    assert spark["executor"]["instances"] == 3
    assert spark["executor"]["cores"] == 2
    assert "affinity" not in spark["executor"]
    assert {v["name"]: v for v in spark["volumes"]}["checkpoint"]["persistentVolumeClaim"] == {
        "claimName": "my-checkpoint"
    }
    assert spark["driver"]["serviceAccount"] == "spark"
    kinds = {o["kind"] for o in objects}
    assert not kinds & {"ServiceAccount", "Role", "RoleBinding", "PersistentVolumeClaim"}
    patch = _sidecar_patches(objects)[0]["spec"]["template"]["spec"]
    assert patch["initContainers"][0]["image"] == "registry.example.com/ksmon:9.9.9"
    sidecar_config = one(objects, "ConfigMap", "ksmon-sidecar-config")
    assert yaml.safe_load(sidecar_config["data"]["config.yaml"]) == SIDECAR_CONFIG
    assert by_name(patch["volumes"])["ksmon-sidecar-config"]["configMap"] == {
        "name": "ksmon-sidecar-config"
    }
    for dashboard in objects_of(objects, "ConfigMap"):
        if dashboard["metadata"]["labels"].get("grafana_dashboard") == "1":
            assert dashboard["metadata"]["namespace"] == "grafana"
    assert all(o["metadata"]["labels"]["team"] == "streams" for o in objects)


def test_alerting_values_render_the_rules_the_alert_renderer_renders(
    renderings: dict[tuple[str, str], list[Object]], promtool: Path, tmp_path: Path
) -> None:
    """The chart's alerting: values and the alert rules' own values file are one set of
    settings: the same overrides give the same rules either way."""
    values_file = tmp_path / "alerting.yaml"
    values_file.write_text(yaml.safe_dump(ALERTING))
    expected = {
        f"dashboards/alerts/{name}": yaml.safe_load(text)["groups"]
        for name, text in alert_rules.render_rule_files(
            alert_rules.load_values(values_file)
        ).items()
    }
    rules = _by_source(renderings[("alerting", K8S_VERSIONS[0])], "PrometheusRule")
    assert {path: rule["spec"]["groups"] for path, rule in rules.items()} == expected
    texts = yaml.safe_dump([rule["spec"] for rule in rules.values()], width=1000)
    assert "runbook_url: https://wiki.example.com/ksmon/KsmonTargetDown.md" in texts
    assert 'up{job=~"streams/.*"} == 0' in texts
    assert "KsmonJobAbsent" not in texts
    assert "alert: KafkaStreamsThreadsDead" not in texts
    for path, rule in rules.items():
        rule_file = tmp_path / Path(path).name
        rule_file.write_text(yaml.safe_dump(rule["spec"]))
        result = subprocess.run(
            [str(promtool), "check", "rules", str(rule_file)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode == 0, result.stdout + result.stderr


def test_values_yaml_holds_the_alert_rules_defaults() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert values["alerting"] == alert_rules.load_values()


# Each case: a rule file with settings as markers, the values for them, and the rule
# file Prometheus must get (the markers replaced by those values).
TRICKY_RULES = textwrap.dedent(
    """\
    groups:
      - name: tricky
        rules:
          - alert: Selector
            expr: up{ksmonsetting0x} == 0 and on() vector(ksmonsetting1x) > 1
            for: ksmonsetting2x
            labels:
              severity: warning
            annotations:
              summary: "{{ $labels.instance }} {{ if gt $value 1.0 }}high{{ end }}"
              description: >-
                Run `ksmon explain {{ $labels.group }}`, ksmonsetting1x s: {{ printf `%s` "x" }}
              runbook_url: "ksmonsetting3x/Selector.md"
    """
)
TRICKY_VALUES = {
    "selector": 'job=~".*ksmon.*"',
    "threshold": 1000000,
    "rules": {"Selector": {"for": "5m"}},
    "url": "https://example.com/runbooks",
}
TRICKY_MARKERS = {
    "ksmonsetting0x": "selector",
    "ksmonsetting1x": "threshold",
    "ksmonsetting2x": "rules.Selector.for",
    "ksmonsetting3x": "url",
}


def test_prometheus_templates_and_settings_survive_helm(
    helm: Path, helm_home: Path, tmp_path: Path
) -> None:
    """Prometheus' templates (with backticks, or a setting inside), a selector's braces
    around a setting, big numbers and durations: helm prints the rule file Prometheus must
    get."""
    settings = AlertSettings(
        [SourceFile("dashboards/alerts/tricky.rules.yml", TRICKY_RULES)],
        TRICKY_MARKERS,
        TRICKY_VALUES,
    )
    chart = tmp_path / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: ksmon\nversion: 0.1.0\n")
    values = {"alerting": TRICKY_VALUES, "prometheusRule": {"enabled": True, "labels": {}}}
    (chart / "values.yaml").write_text(yaml.safe_dump(values))
    shutil.copy(CHART / "templates" / "_helpers.tpl", chart / "templates")
    (chart / "templates" / "rules.yaml").write_text(helm_rules_template(settings))
    (rule,) = template(helm, chart, helm_home, kube_version=K8S_VERSIONS[0])
    expected = TRICKY_RULES
    for marker, value in [
        ("ksmonsetting0x", TRICKY_VALUES["selector"]),
        ("ksmonsetting1x", "1000000"),  # not 1e+06, as Go prints a float
        ("ksmonsetting2x", "5m"),
        ("ksmonsetting3x", TRICKY_VALUES["url"]),
    ]:
        expected = expected.replace(marker, str(value))
    assert rule["metadata"]["name"] == "ksmon-alerts-tricky"
    assert rule["spec"] == yaml.safe_load(expected)


# Each case: values with a mistake, and the words helm's refusal must contain.
MISTAKES = [
    pytest.param({"serviceMonitor": {"enable": True}}, "'enable' not allowed", id="misspelt key"),
    pytest.param(
        {"alerting": {"rules": {"KsmonTargetDown": {"fro": "5m"}}}},
        "'fro' not allowed",
        id="misspelt alert setting",
    ),
    pytest.param(
        {"alerting": {"rules": {"KafkaStreamsTimeLagHigh": {"thresholdSeconds": "300s"}}}},
        "thresholdSeconds",
        id="a threshold that is not a number",
    ),
    pytest.param(
        {"agent": {"secrets": {"files": [{"name": "tls"}]}}}, "mountPath", id="no mountPath"
    ),
]


@pytest.mark.parametrize(("values", "words"), MISTAKES)
def test_values_the_chart_does_not_know_are_refused(
    helm: Path, helm_home: Path, values: dict[str, Any], words: str
) -> None:
    with pytest.raises(KsmonError, match="schema") as caught:
        template(helm, CHART, helm_home, kube_version=K8S_VERSIONS[0], values=values)
    assert words in str(caught.value)


def test_the_values_docs_deploy_md_shows_render_valid_objects(
    helm: Path, helm_home: Path, schemas: CrdSchemas
) -> None:
    text = (REPO / "docs" / "deploy.md").read_text()
    (block,) = re.findall(r"```yaml\n(# my-values\.yaml\n.*?)```", text, re.DOTALL)
    values = yaml.safe_load(block)
    objects = template(helm, CHART, helm_home, kube_version=K8S_VERSIONS[0], values=values)
    assert _errors(objects, schemas, K8S_VERSIONS[0]) == []
    # Helm merges a values mapping into the default one: keys left out keep theirs.
    agent = yaml.safe_load(one(objects, "ConfigMap", "ksmon-agent-config")["data"]["config.yaml"])
    defaults = yaml.safe_load((CHART / "values.yaml").read_text())["agent"]["config"]
    assert agent == defaults | values["agent"]["config"]


APP_CHART_TEMPLATE = textwrap.dedent(
    """\
    {{- $ksmon := dict "Values" .Values.ksmon "Release" .Release "Chart" (dict "Name" "ksmon") }}
    apiVersion: apps/v1
    kind: StatefulSet
    metadata:
      name: orders-enricher
    spec:
      serviceName: orders-enricher
      selector:
        matchLabels: {app: orders-enricher}
      template:
        metadata:
          labels:
            app: orders-enricher
            ksmon/sidecar: "true"
        spec:
          initContainers:
            {{- include "ksmon.sidecar.initContainer" $ksmon | nindent 8 }}
          containers:
            - name: app
              image: registry.example.com/orders-enricher:1.4.2
          volumes:
            - name: streams-state
              emptyDir: {}
            {{- include "ksmon.sidecar.volumes" $ksmon | nindent 8 }}
    """
)


def test_an_app_chart_depending_on_this_one_includes_the_sidecar(
    helm: Path, helm_home: Path, tmp_path: Path
) -> None:
    """The named templates serve a chart that has this one as a dependency: with its
    ksmon: values they render the sidecar the patch holds."""
    app = tmp_path / "orders-enricher"
    (app / "templates").mkdir(parents=True)
    shutil.copytree(CHART, app / "charts" / "ksmon")
    (app / "Chart.yaml").write_text("apiVersion: v2\nname: orders-enricher\nversion: 1.0.0\n")
    ksmon_values = {
        "image": {"repository": "registry.example.com/ksmon", "tag": "0.1.0"},
        "sidecar": {"appContainerName": "app", "resources": {"limits": {"memory": "80Mi"}}},
    }
    (app / "values.yaml").write_text(yaml.safe_dump({"ksmon": ksmon_values}))
    (app / "templates" / "statefulset.yaml").write_text(APP_CHART_TEMPLATE)
    objects = template(helm, app, helm_home, kube_version=K8S_VERSIONS[0], namespace="apps")
    statefulset = one(objects, "StatefulSet", "orders-enricher")
    for version in K8S_VERSIONS:
        assert kubernetes_errors(statefulset, version) == []
    pod = statefulset["spec"]["template"]["spec"]
    (sidecar,) = pod["initContainers"]
    (patch,) = _sidecar_patches(objects)
    assert [sidecar] == patch["spec"]["template"]["spec"]["initContainers"]
    assert sidecar["image"] == "registry.example.com/ksmon:0.1.0"
    assert sidecar["resources"]["limits"] == {"memory": "80Mi"}
    assert set(by_name(pod["volumes"])) == {
        "streams-state",
        "ksmon-sidecar-config",
        "ksmon-sidecar-tmp",
    }
