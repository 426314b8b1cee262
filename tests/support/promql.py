"""Just enough PromQL reading to check queries against the metric contract.

Not a parser: promtool and Prometheus judge whether an expression is valid.
This finds which metrics an expression reads, with which label matchers,
and which labels it groups or matches on, so tests can tell a typo in a
metric or label name from a real one.
"""

import re
from dataclasses import dataclass

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_SELECTOR = re.compile(r"(?<![\w:$])([a-zA-Z_:][\w:]*)\s*\{([^}]*)\}")
_MATCHER = re.compile(r"([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=)\s*\"")
_GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")
_RANGE = re.compile(r"\[[^\]]*\]")
_IDENTIFIER = re.compile(r"(?<![\w:$.])([a-zA-Z_:][\w:]*)(\s*\()?")
_KEYWORDS = frozenset(
    {"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "inf", "nan"}
    | {"group_left", "group_right"}
)


@dataclass(frozen=True)
class Selector:
    metric: str
    matched_labels: frozenset[str]


@dataclass(frozen=True)
class Reading:
    selectors: tuple[Selector, ...]
    # Labels named in by/without/on/ignoring/group_left/group_right clauses.
    grouping_labels: frozenset[str]

    @property
    def metrics(self) -> frozenset[str]:
        return frozenset(s.metric for s in self.selectors)


def read(expr: str) -> Reading:
    selectors = [
        Selector(name, frozenset(_MATCHER.findall(body))) for name, body in _SELECTOR.findall(expr)
    ]
    grouping = frozenset(
        label.strip()
        for _, labels in _GROUPING.findall(expr)
        for label in labels.split(",")
        if label.strip()
    )
    # Bare metric names: what remains once strings, matchers, grouping clauses,
    # ranges and function calls are set aside.
    rest = _STRING.sub('""', expr)
    rest = re.sub(r"\{[^}]*\}", " ", rest)
    rest = _GROUPING.sub(" ", rest)
    rest = _RANGE.sub(" ", rest)
    braced = {s.metric for s in selectors}
    for name, call in _IDENTIFIER.findall(rest):
        if call or name in _KEYWORDS or name in braced:
            continue
        selectors.append(Selector(name, frozenset()))
    return Reading(tuple(selectors), grouping)
