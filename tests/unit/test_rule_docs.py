"""docs/rules/ must describe every rule the aggregation job runs, and stay reachable.

Every finding kind has a page, the index and docs/aggregation.md link each one, every
runbook whose alert reads a finding kind links that kind's page, and each page names
every ``aggregation.detectors`` option and every evidence field its rule's module uses
(read from the module's source with ``ast``: the code is the truth, the page follows).
Links between the pages resolve, anchors included."""

import ast
import re
from dataclasses import fields
from pathlib import Path

import pytest

from agent.config.schema import DetectorsConfig
from agent.model.findings import KINDS
from tests.support.prometheus import alert_rules

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
RULES_DOCS = DOCS / "rules"
INDEX = RULES_DOCS / "README.md"
RULES_CODE = ROOT / "agent" / "aggregation" / "judging" / "rules"
RUNBOOK_BASE = "https://github.com/ksmon/ksmon/blob/main/docs/runbooks/"
OPTIONS = frozenset(f.name for f in fields(DetectorsConfig))
# String keys in a rule module's dict literals that are not evidence field names.
NOT_EVIDENCE = {
    # BY_TOPOLOGY: where a changelog mapping came from (its values are on the page).
    "restore_stalled": frozenset({"broker", "configured"}),
}

_KIND_IN_EXPR = re.compile(r'kind="([a-z_]+)"')
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_CODE_SPANS = re.compile(r"`[^`]*`")


def _page(kind: str) -> Path:
    return RULES_DOCS / f"{kind}.md"


def _module(kind: str) -> ast.Module:
    return ast.parse((RULES_CODE / f"{kind}.py").read_text(encoding="utf-8"))


def _options_read(kind: str) -> set[str]:
    """The DetectorsConfig fields the rule's module reads (``p.x``, ``ev.params.x``, ...)."""
    return {
        node.attr
        for node in ast.walk(_module(kind))
        if isinstance(node, ast.Attribute) and node.attr in OPTIONS
    }


def _evidence_names(kind: str) -> set[str]:
    """String keys of the module's dict literals, and of ``d["key"] = ...`` assignments:
    the evidence fields it writes (and a few other keys, NOT_EVIDENCE)."""
    names: set[str] = set()
    for node in ast.walk(_module(kind)):
        if isinstance(node, ast.Dict):
            names |= {
                k.value
                for k in node.keys
                if isinstance(k, ast.Constant) and isinstance(k.value, str)
            }
        elif isinstance(node, ast.Assign):
            names |= {
                t.slice.value
                for t in node.targets
                if isinstance(t, ast.Subscript)
                and isinstance(t.slice, ast.Constant)
                and isinstance(t.slice.value, str)
            }
    return names - NOT_EVIDENCE.get(kind, frozenset())


def _runbook_kinds() -> dict[str, set[str]]:
    """Runbook file name -> the finding kinds its alert's expressions read."""
    kinds: dict[str, set[str]] = {}
    for rule in alert_rules():
        url = rule["annotations"]["runbook_url"]
        assert url.startswith(RUNBOOK_BASE), url
        found = set(_KIND_IN_EXPR.findall(rule["expr"]))
        if found:
            kinds.setdefault(url.removeprefix(RUNBOOK_BASE), set()).update(found)
    return kinds


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but '-' and '_' dropped,
    spaces to '-'."""
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    in_code = False
    anchors = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and line.startswith("#"):
            anchors.add(_anchor(line.lstrip("#")))
    return anchors


def test_every_kind_has_a_page_and_no_page_is_for_an_unknown_kind() -> None:
    pages = {p.stem for p in RULES_DOCS.glob("*.md")} - {"README"}
    assert pages == set(KINDS)


@pytest.mark.parametrize("kind", KINDS)
def test_the_index_and_the_job_page_link_every_rule(kind: str) -> None:
    assert f"]({kind}.md)" in INDEX.read_text(encoding="utf-8"), f"{kind} not in the index"
    job_page = (DOCS / "aggregation.md").read_text(encoding="utf-8")
    assert f"](rules/{kind}.md)" in job_page, f"docs/aggregation.md does not link {kind}"


@pytest.mark.parametrize("kind", KINDS)
def test_a_page_starts_with_its_rule_and_names_its_module(kind: str) -> None:
    text = _page(kind).read_text(encoding="utf-8")
    assert text.startswith(f"# `{kind}`\n")
    assert f"`agent/aggregation/judging/rules/{kind}.py`" in text


@pytest.mark.parametrize("kind", KINDS)
def test_a_page_names_every_option_its_rule_reads(kind: str) -> None:
    text = _page(kind).read_text(encoding="utf-8")
    missing = sorted(o for o in _options_read(kind) if f"`{o}`" not in text)
    assert not missing, f"docs/rules/{kind}.md does not name the options {missing}"


def test_every_detectors_option_is_on_some_rule_page() -> None:
    text = "".join(_page(kind).read_text(encoding="utf-8") for kind in KINDS)
    assert sorted(o for o in OPTIONS if f"`{o}`" not in text) == []


@pytest.mark.parametrize("kind", KINDS)
def test_a_page_names_every_evidence_field_its_rule_writes(kind: str) -> None:
    text = _page(kind).read_text(encoding="utf-8")
    missing = sorted(n for n in _evidence_names(kind) if f"`{n}`" not in text)
    assert not missing, f"docs/rules/{kind}.md does not name the evidence fields {missing}"


def test_alerts_on_findings_are_found_for_every_alerting_kind() -> None:
    # Guards the parsing below: most kinds have an alert (partition_skew has none).
    alerting = set().union(*_runbook_kinds().values())
    assert alerting <= set(KINDS)
    assert len(alerting) >= len(KINDS) - 1


@pytest.mark.parametrize("runbook", sorted(_runbook_kinds()))
def test_a_runbook_links_the_page_of_every_rule_behind_its_alert(runbook: str) -> None:
    text = (DOCS / "runbooks" / runbook).read_text(encoding="utf-8")
    missing = sorted(k for k in _runbook_kinds()[runbook] if f"](../rules/{k}.md)" not in text)
    assert not missing, f"docs/runbooks/{runbook} does not link the rule pages of {missing}"


@pytest.mark.parametrize("kind", KINDS)
def test_a_page_links_the_runbook_of_its_alert(kind: str) -> None:
    text = _page(kind).read_text(encoding="utf-8")
    for runbook, kinds in _runbook_kinds().items():
        if kind in kinds:
            assert f"](../runbooks/{runbook})" in text, f"{kind}: no link to {runbook}"


@pytest.mark.parametrize(
    "page",
    [*sorted(RULES_DOCS.glob("*.md")), DOCS / "sidecar.md", DOCS / "aggregation.md"],
    ids=lambda p: p.name,
)
def test_links_from_the_rule_pages_resolve(page: Path) -> None:
    text = _CODE_SPANS.sub("", page.read_text(encoding="utf-8"))
    for target in _LINK.findall(text):
        if target.startswith(("http://", "https://")):
            continue
        path_part, _, anchor = target.partition("#")
        linked = (page.parent / path_part).resolve() if path_part else page
        assert linked.exists(), f"{page.name}: {target} does not exist"
        if anchor and linked.suffix == ".md":
            assert anchor in _anchors(linked), f"{page.name}: {target}: no such heading"
