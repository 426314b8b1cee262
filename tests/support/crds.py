"""The published CRD schemas of the objects ksmon ships that Kubernetes itself does not
know (PodMonitor, PrometheusRule, SparkApplication), and strict validation against them.

The CRD YAMLs come from the operators' own Go modules at pinned versions (the
Go module proxy serves them with a pinned hash; see ``go_modules``), and stay
in the Go module cache under ksmon's cache directory. The API server validates
a custom object against the CRD's ``openAPIV3Schema`` but silently prunes
unknown fields; ``strict_schema`` makes unknown fields errors instead, like
``kubectl apply --validate=strict``, so a misspelt key fails here rather than
vanishing in the cluster.
"""

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import jsonschema
import yaml

from agent.errors import SetupError
from tests.support.go_modules import GoModule, module_source

PROMETHEUS_OPERATOR = GoModule(
    "github.com/prometheus-operator/prometheus-operator",
    "v0.85.0",
    # Recorded from proxy.golang.org when this version was pinned.
    "h1:M5xLCLEoaW2IJfnuCwFzzpL+jSVQu3KGT84Pye+fW8s=",
)
SPARK_OPERATOR = GoModule(
    "github.com/kubeflow/spark-operator/v2",
    "v2.3.0",
    "h1:cYN/331gwkdZ0S/ai72JQoUv7UK52O2OQOWFpl8XhPc=",
)


@dataclass(frozen=True)
class CrdFile:
    module: GoModule
    path: str  # inside the module


CRD_FILES = (
    CrdFile(
        PROMETHEUS_OPERATOR,
        "example/prometheus-operator-crd/monitoring.coreos.com_podmonitors.yaml",
    ),
    CrdFile(
        PROMETHEUS_OPERATOR,
        "example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml",
    ),
    CrdFile(
        SPARK_OPERATOR,
        "charts/spark-operator-chart/crds/sparkoperator.k8s.io_sparkapplications.yaml",
    ),
)


def fetch_crd_schemas() -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) -> the strict JSON schema of every served version of every CRD,
    read from the Go module cache (downloaded there first if needed)."""
    schemas = {}
    for crd_file in CRD_FILES:
        source = module_source(crd_file.module) / crd_file.path
        if not source.is_file():
            raise SetupError(f"{crd_file.module} has no {crd_file.path}: was the CRD moved?")
        # The C loader: these files are large (the SparkApplication CRD is ~12,000 lines).
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        crd = yaml.load(source.read_text(), Loader=loader)  # noqa: S506 - a safe loader
        for key, schema in crd_schemas(crd):
            schemas[key] = strict_schema(schema)
    return schemas


def crd_schemas(crd: Mapping[str, Any]) -> Iterator[tuple[tuple[str, str], dict[str, Any]]]:
    """((apiVersion, kind), openAPIV3Schema) for each served version of a CRD."""
    group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
    for version in crd["spec"]["versions"]:
        if version.get("served", True):
            yield (f"{group}/{version['name']}", kind), version["schema"]["openAPIV3Schema"]


def strict_schema(schema: Any) -> Any:
    """The schema with ``additionalProperties: false`` on every object that lists its
    properties and does not ask to keep unknown fields.

    >>> strict_schema({"type": "object", "properties": {"a": {"type": "string"}}})
    {'type': 'object', 'properties': {'a': {'type': 'string'}}, 'additionalProperties': False}
    """
    if isinstance(schema, list):
        return [strict_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    strict = {k: strict_schema(v) for k, v in schema.items()}
    if (
        "properties" in schema
        and "additionalProperties" not in schema
        and not schema.get("x-kubernetes-preserve-unknown-fields")
    ):
        strict["additionalProperties"] = False
    return strict


def validation_errors(obj: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    """Every place ``obj`` breaks ``schema``, as ``path: message`` lines."""
    validator = jsonschema.Draft7Validator(schema)
    return sorted(
        f"{'.'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}"
        for e in validator.iter_errors(obj)
    )
