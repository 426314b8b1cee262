"""docs/metrics.md must describe exactly the metrics the golden exposition files freeze:
every family with its type and label names, and a sample line with those labels."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "metrics.md"
GOLDEN_FILES = sorted(ROOT.glob("tests/**/golden/*.txt"))

_SAMPLE = re.compile(r"^(ksmon_[a-zA-Z0-9_]+)(?:\{(.*)\})? \S+$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"')
_TABLE_ROW = re.compile(r"^\| `(ksmon_[a-zA-Z0-9_]+)` \| (\w+) \| ([^|]*) \|", re.MULTILINE)


def _families_in_golden_files() -> dict[str, tuple[str, frozenset[str]]]:
    """name -> (type, label names), over every golden exposition file."""
    families: dict[str, tuple[str, frozenset[str]]] = {}
    types: dict[str, str] = {}
    for path in GOLDEN_FILES:
        for line in path.read_text().splitlines():
            if line.startswith("# TYPE "):
                name, kind = line[len("# TYPE ") :].split(" ", 1)
                types[name] = kind
                continue
            match = _SAMPLE.match(line)
            if match is None:
                continue
            sample, labels = match[1], frozenset(_LABEL.findall(match[2] or ""))
            # The text format types a counter under its sample name (with _total).
            families.setdefault(sample, (types.get(sample, "untyped"), labels))
    return families


def _documented() -> tuple[dict[str, tuple[str, frozenset[str]]], dict[str, frozenset[str]]]:
    text = DOC.read_text()
    table = {
        name: (kind, frozenset(re.findall(r"`([a-z_]+)`", labels)))
        for name, kind, labels in _TABLE_ROW.findall(text)
    }
    samples: dict[str, frozenset[str]] = {}
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match is not None:
            samples.setdefault(match[1], frozenset(_LABEL.findall(match[2] or "")))
    return table, samples


def test_there_are_golden_files_to_check_against() -> None:
    assert GOLDEN_FILES, "no golden exposition files found"
    assert len(_families_in_golden_files()) > 20


@pytest.mark.parametrize("name", sorted(_families_in_golden_files()))
def test_every_exposed_metric_is_documented_with_its_type_labels_and_a_sample(name: str) -> None:
    kind, labels = _families_in_golden_files()[name]
    table, samples = _documented()

    assert name in table, f"{name} has no row in docs/metrics.md"
    assert table[name] == (kind, labels), f"{name}: the row's type or labels differ"
    assert name in samples, f"{name} has no sample line in docs/metrics.md"
    assert samples[name] == labels, f"{name}: the sample line's labels differ"


def test_the_page_documents_no_metric_that_is_not_exposed() -> None:
    table, samples = _documented()
    exposed = set(_families_in_golden_files())

    assert set(table) - exposed == set()
    assert set(samples) - exposed == set()
