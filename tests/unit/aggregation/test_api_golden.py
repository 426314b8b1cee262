"""The job's JSON API is a contract (docs/api.md): this golden file freezes its paths,
field names and shapes. Regenerate it deliberately with KSMON_UPDATE_GOLDEN=1 and update
docs/api.md in the same change."""

import json
import os
from pathlib import Path
from urllib.parse import parse_qs

from agent.aggregation.outputs.api import JobApi
from tests.unit.aggregation.api_state import api_state

GOLDEN = Path(__file__).parent / "golden" / "api_v1.json"

# Every path of the API, a filter of each, and each kind of error.
REQUESTS = (
    "v1",
    "v1/clusters",
    "v1/clusters/prod",
    "v1/clusters/prod/groups",
    "v1/clusters/prod/groups?status=stalled,unknown",
    "v1/clusters/prod/groups/billing",
    "v1/clusters/prod/groups/shipping",
    "v1/findings",
    "v1/findings?severity=info&cluster=prod",
    "v1/clusters/nowhere",
    "v1/clusters/prod/groups/nobody",
    "v1/findings?severity=urgent",
    "v1/findings?sevrity=critical",
    "v2/clusters",
)


def replies() -> dict[str, object]:
    api = JobApi(api_state())
    out: dict[str, object] = {}
    for request in REQUESTS:
        path, _, query = request.partition("?")
        status, body = api.get(path, parse_qs(query, keep_blank_values=True))
        out[f"GET /api/{request}"] = {"status": status, "body": body}
    return out


def test_the_api_matches_the_golden_file() -> None:
    text = json.dumps(replies(), indent=2, allow_nan=False) + "\n"
    if os.environ.get("KSMON_UPDATE_GOLDEN"):
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text(), f"the API changed; see {GOLDEN} (KSMON_UPDATE_GOLDEN=1)"


def test_docs_api_names_every_field_of_the_golden_replies() -> None:
    doc = (Path(__file__).parents[3] / "docs" / "api.md").read_text()
    names: set[str] = set()
    for reply in replies().values():
        names |= _field_names(reply["body"])  # type: ignore[index]
    missing = sorted(name for name in names if f"`{name}`" not in doc)
    assert not missing, f"docs/api.md does not describe: {missing}"


# Objects whose keys are data, not fields: a rule's evidence (its page lists it), and
# counts keyed by status or severity.
_NOT_FIELDS = {
    "evidence",
    "suggested_move",
    "partition_counts",
    "groups_by_status",
    "open_findings",
}


def _field_names(value: object) -> set[str]:
    names: set[str] = set()
    if isinstance(value, dict):
        for key, item in value.items():
            names.add(key)
            if key not in _NOT_FIELDS:
                names |= _field_names(item)
    elif isinstance(value, list):
        for item in value:
            names |= _field_names(item)
    return names
