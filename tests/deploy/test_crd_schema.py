"""strict_schema: the CRD schemas made strict the way `kubectl apply --validate=strict`
is, without forbidding what a CRD explicitly leaves open. Table-driven, pure."""

from typing import Any

import pytest

from tests.support.crds import crd_schemas, strict_schema, validation_errors

OBJECT = {"type": "object", "properties": {"name": {"type": "string"}}}

# Each case: a schema, an instance, whether strict validation must accept it, and why.
CASES = [
    pytest.param(OBJECT, {"name": "a"}, True, id="listed property"),
    pytest.param(OBJECT, {"nme": "a"}, False, id="misspelt property: pruned by the API server"),
    pytest.param(
        {**OBJECT, "x-kubernetes-preserve-unknown-fields": True},
        {"anything": 1},
        True,
        id="preserve-unknown-fields keeps the object open",
    ),
    pytest.param(
        {"type": "object", "additionalProperties": {"type": "string"}},
        {"any-key": "v"},
        True,
        id="a map (labels, annotations) stays a map",
    ),
    pytest.param(
        {"type": "object", "additionalProperties": {"type": "string"}},
        {"any-key": 1},
        False,
        id="a map's values keep their type",
    ),
    pytest.param({"type": "object"}, {"free": "form"}, True, id="no properties listed: open"),
    pytest.param(
        {"type": "array", "items": OBJECT}, [{"name": "a"}, {"nam": "b"}], False, id="in arrays"
    ),
    pytest.param(
        {"type": "object", "properties": {"spec": OBJECT}},
        {"spec": {"extra": True}},
        False,
        id="nested objects too",
    ),
]


@pytest.mark.parametrize(("schema", "instance", "valid"), CASES)
def test_strict_schema(schema: dict[str, Any], instance: Any, valid: bool) -> None:
    assert (validation_errors(instance, strict_schema(schema)) == []) is valid


def test_only_served_versions_are_used() -> None:
    crd = {
        "spec": {
            "group": "example.io",
            "names": {"kind": "Thing"},
            "versions": [
                {"name": "v1", "served": True, "schema": {"openAPIV3Schema": OBJECT}},
                {"name": "v0", "served": False, "schema": {"openAPIV3Schema": {}}},
            ],
        }
    }
    assert dict(crd_schemas(crd)) == {("example.io/v1", "Thing"): OBJECT}
