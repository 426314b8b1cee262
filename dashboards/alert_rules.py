"""Render ksmon's Prometheus alert rule files from their templates and the alerting values.

The templates (``dashboards/alerts/templates/*.rules.yml``) are rule files with
``${dotted.name}`` placeholders; the values (defaults in
``dashboards/alerts/config/values.yaml``) set the runbook and Grafana URLs, the
selectors of ksmon's own scrape targets, each alert's thresholds, ``for:`` and
severity, and which alerts are left out (``disabledAlerts``). ``${dashboard.<name>}``
is not a setting: it is the path of the ksmon dashboard an alert links to
(``dashboards.links.ALERT_DASHBOARDS``).

The rendered defaults are committed as ``dashboards/alerts/*.rules.yml`` (which
``deploy/generate.py`` packages as PrometheusRules); a test fails when they are stale.

    python -m dashboards.alert_rules                      # rewrite dashboards/alerts/*.rules.yml
    python -m dashboards.alert_rules --check              # exit 1 and name the stale files
    python -m dashboards.alert_rules --values my.yaml --out my-rules/

A values file sets only what it changes, with the defaults' keys and nesting.
"""

import argparse
import difflib
import math
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from agent.errors import ConfigError
from dashboards.links import ALERT_DASHBOARDS

ROOT = Path(__file__).resolve().parents[1]
ALERTS_DIR = ROOT / "dashboards" / "alerts"
TEMPLATES_DIR = ALERTS_DIR / "templates"
DEFAULTS_FILE = ALERTS_DIR / "config" / "values.yaml"
BUILT_IN_PREFIX = "dashboard."
DISABLED = "disabledAlerts"  # the alerts a rendering leaves out: a list, no placeholder

_NAME = r"[A-Za-z][A-Za-z0-9]*"
_PLACEHOLDER = re.compile(rf"\$\{{({_NAME}(?:\.{_NAME})*)\}}")
_DURATION = re.compile(r"(\d+y)?(\d+w)?(\d+d)?(\d+h)?(\d+m)?(\d+s)?(\d+ms)?")
_SEVERITY = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
_MATCHER = r'\s*[A-Za-z_][A-Za-z0-9_]*\s*(?:=~|!~|!=|=)\s*"(?:[^"\\\n]|\\.)*"\s*'
_SELECTOR = re.compile(rf"{_MATCHER}(?:,{_MATCHER})*,?\s*")
_URL = re.compile(r"https?://[^\s\"\\{}`]+")
_ALERT_LINE = re.compile(r"( *)- alert: ([A-Za-z0-9]+)\n?")


def _read_yaml(path: Path) -> object:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ConfigError(f"alerting values {path}: cannot read it ({e.strerror})") from None
    except yaml.YAMLError as e:
        problem = " ".join(str(e).split())
        raise ConfigError(f"alerting values {path}: not valid YAML: {problem}") from None


def _flatten(values: Mapping[str, object], prefix: str = "") -> Iterator[tuple[str, object]]:
    for key, value in values.items():
        if isinstance(value, Mapping):
            yield from _flatten(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def _defaults() -> dict[str, object]:
    content = _read_yaml(DEFAULTS_FILE)
    if not isinstance(content, dict):
        raise ConfigError(f"{DEFAULTS_FILE}: the alerting values are a YAML mapping")
    return content


# Every setting's dotted name, in the defaults file's order (``disabledAlerts`` is not
# one: it fills no placeholder, it leaves rules out).
PLACEHOLDERS: tuple[str, ...] = tuple(name for name, _ in _flatten(_defaults()) if name != DISABLED)


def load_values(path: Path | None = None) -> dict[str, object]:
    """The alerting values: the defaults, with the settings of the file at ``path`` (if
    any) in their place, each checked; nested as in the file."""
    values = _defaults()
    if path is not None:
        content = _read_yaml(path)
        if content is not None:
            if not isinstance(content, Mapping):
                raise ConfigError(
                    f"alerting values {path}: a YAML mapping of settings (like the defaults "
                    f"in {DEFAULTS_FILE.name}), not a {_type_name(content)}"
                )
            _merge(values, content, path, "")
    for name, value in _flatten(values):
        if name == DISABLED:
            _check_disabled(path or DEFAULTS_FILE, value)
            continue
        checked = _checked(path or DEFAULTS_FILE, name, value)
        if checked is not value:
            _set(values, name, checked)
    return values


def render_rule_files(values: Mapping[str, object]) -> dict[str, str]:
    """Each rule file's name and text, its template's placeholders filled from ``values``.

    ``values`` is nested as ``load_values`` returns it, or flat by dotted name (a key
    ``rules.KsmonJobStale.for``). Each value is written as its text, unchecked: pass what
    ``load_values`` checked, or expressions of another templating language (such as
    ``{{ .Values.alerting.<name> }}`` for each name in ``PLACEHOLDERS``)."""
    disabled = values.get(DISABLED, ())
    assert isinstance(disabled, list | tuple)  # noqa: S101 - load_values checked it
    return {
        template.name: _header(template.name)
        + without_alerts(_fill(template, values), frozenset(disabled))
        for template in sorted(TEMPLATES_DIR.glob("*.rules.yml"))
    }


def alert_spans(text: str) -> list[tuple[str, int, int]]:
    """Each alerting rule of a rule file's text: its alert's name and the lines it spans,
    ``[start, end)``, from the comment lines just before its ``- alert:`` line to the
    line before the next rule, group or comment at its indentation or less."""
    lines = text.splitlines(keepends=True)
    spans = []
    for index, line in enumerate(lines):
        match = _ALERT_LINE.fullmatch(line)
        if match is None:
            continue
        indent = len(match.group(1))
        start = index
        while start > 0 and lines[start - 1].startswith(" " * indent + "#"):
            start -= 1
        end = index + 1
        while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) > indent):
            end += 1
        spans.append((match.group(2), start, end))
    return spans


def without_alerts(text: str, disabled: frozenset[str]) -> str:
    """``text`` without the rules of the ``disabled`` alerts (every rule of each); a group
    left with none gets ``rules: []``, which Prometheus accepts."""
    if not disabled:
        return text
    lines = text.splitlines(keepends=True)
    dropped: set[int] = set()
    for name, start, end in alert_spans(text):
        if name in disabled:
            dropped.update(range(start, end))
    kept = [line for index, line in enumerate(lines) if index not in dropped]
    for index, line in enumerate(kept):
        following = next((later for later in kept[index + 1 :] if later.strip()), None)
        if line.strip() == "rules:" and (following is None or _indent(following) <= _indent(line)):
            kept[index] = line.replace("rules:", "rules: []")
    return "".join(kept)


def alert_names() -> list[str]:
    """Every alert the templates define, in the order they define them."""
    names: list[str] = []
    for template in sorted(TEMPLATES_DIR.glob("*.rules.yml")):
        for name, _, _ in alert_spans(template.read_text(encoding="utf-8")):
            if name not in names:
                names.append(name)
    return names


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def stale_files(directory: Path = ALERTS_DIR) -> list[str]:
    """The rule files in ``directory`` (the committed ones by default) that differ from the
    defaults' rendering, or are missing."""
    stale = []
    for name, text in render_rule_files(load_values()).items():
        target = directory / name
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            stale.append(
                str(target.relative_to(ROOT)) if target.is_relative_to(ROOT) else str(target)
            )
    return stale


def values_schema() -> dict[str, object]:
    """A JSON Schema of the alerting values (every key optional, no other key), checking
    each setting as ``load_values`` does: for a Helm chart's ``values.schema.json``."""
    return {"$schema": "http://json-schema.org/draft-07/schema#", **_schema(_defaults(), "")}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m dashboards.alert_rules",
        description="Render ksmon's alert rule files from their templates and alerting values.",
    )
    parser.add_argument("--check", action="store_true", help="only report stale rule files")
    parser.add_argument(
        "--values", type=Path, help="a values file with the settings to change from the defaults"
    )
    parser.add_argument(
        "--out", type=Path, help="write the rule files here (default: dashboards/alerts/)"
    )
    args = parser.parse_args(argv)
    if args.values is not None and args.out is None:
        parser.error("--values needs --out DIR: the shipped rule files keep the defaults")
    try:
        if args.check:
            stale = stale_files()
            for path in stale:
                print(f"{path} is stale: run python -m dashboards.alert_rules", file=sys.stderr)  # noqa: T201
            return 1 if stale else 0
        out = args.out or ALERTS_DIR
        rendered = render_rule_files(load_values(args.values))
        for name, text in rendered.items():
            _refuse_broken_yaml(name, text)
        _write(out, rendered)
    except ConfigError as e:
        print(f"dashboards.alert_rules: error: {e}", file=sys.stderr)  # noqa: T201
        return 1
    return 0


def _write(out: Path, rendered: Mapping[str, str]) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
        for name, text in rendered.items():
            (out / name).write_text(text, encoding="utf-8")
            print(out / name)  # noqa: T201
    except OSError as e:
        raise ConfigError(f"--out {out}: cannot write the rule files ({e.strerror})") from None


def _merge(
    into: dict[str, object], overrides: Mapping[object, object], path: Path, prefix: str
) -> None:
    for key, value in overrides.items():
        name = f"{prefix}{key}"
        if not isinstance(key, str) or key not in into:
            raise ConfigError(f"alerting values {path}: unknown setting {name}{_hint(name)}")
        current = into[key]
        if isinstance(current, dict):
            if not isinstance(value, Mapping):
                raise ConfigError(
                    f"alerting values {path}: {name} is a mapping of "
                    f"{', '.join(current)}, not a {_type_name(value)}"
                )
            _merge(current, value, path, f"{name}.")
        elif isinstance(value, Mapping):
            raise ConfigError(
                f"alerting values {path}: {name} is a single value ({_kind(name).expected}), "
                "not a mapping"
            )
        else:
            into[key] = value


@dataclass(frozen=True)
class _Kind:
    """What a setting accepts, how an error says so, and the same as JSON Schema."""

    expected: str
    accepts: Callable[[object], bool]
    schema: Mapping[str, object]


def _is_selector(value: object) -> bool:
    # ": " and " #" would end the plain YAML scalar some expressions are written as.
    return (
        isinstance(value, str)
        and _SELECTOR.fullmatch(value) is not None
        and ": " not in value
        and " #" not in value
    )


def _is_duration(value: object) -> bool:
    return isinstance(value, str) and value != "" and _DURATION.fullmatch(value) is not None


def _is_severity(value: object) -> bool:
    return (
        isinstance(value, str)
        and _SEVERITY.fullmatch(value) is not None
        and value not in _YAML_WORDS
    )


def _is_threshold(value: object) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )


def _is_url(value: object) -> bool:
    return isinstance(value, str) and _URL.fullmatch(value) is not None


def _is_command(value: object) -> bool:
    return isinstance(value, str) and value.strip() != "" and not set(value) & _NOT_IN_COMMAND


_NOT_IN_COMMAND = set('\n`{}"')
# Words a YAML 1.1 reader takes for a boolean or null: unquoted in a rule file, such a
# severity would not stay a label value.
_YAML_WORDS = (
    "~",
    *(
        form
        for word in ("y", "yes", "n", "no", "true", "false", "on", "off", "null")
        for form in (word, word.capitalize(), word.upper())
    ),
)
_SELECTOR_KIND = _Kind(
    'PromQL label matchers like job=~".*ksmon.*" (comma-separated, values in double quotes)',
    _is_selector,
    {
        "type": "string",
        "pattern": f"^{_SELECTOR.pattern}$",
        "not": {"pattern": ": | #"},
    },
)
_DURATION_KIND = _Kind(
    "a Prometheus duration like 30s, 5m or 1h30m",
    _is_duration,
    {"type": "string", "minLength": 1, "pattern": f"^{_DURATION.pattern}$"},
)
_SEVERITY_KIND = _Kind(
    "a severity label value like critical, warning or info",
    _is_severity,
    {"type": "string", "pattern": f"^{_SEVERITY.pattern}$", "not": {"enum": list(_YAML_WORDS)}},
)
_THRESHOLD_KIND = _Kind("a number, 0 or more", _is_threshold, {"type": "number", "minimum": 0})
_URL_KIND = _Kind(
    "an http:// or https:// URL without spaces, quotes or braces",
    _is_url,
    {"type": "string", "pattern": f"^{_URL.pattern}$"},
)
_COMMAND_KIND = _Kind(
    "a one-line command without quotes, braces or backticks",
    _is_command,
    {"type": "string", "pattern": '^[^\\n`{}"]*[^\\s`{}"][^\\n`{}"]*$'},
)


def _kind(name: str) -> _Kind:
    """A setting's kind, by its name: ``selectors.*``, ``*.for`` and ``*.window``,
    ``*.severity``, ``*.threshold*`` and ``*.horizonSeconds`` (numbers), ``*Url``; anything
    else is a command shown in texts."""
    last = name.rsplit(".", 1)[-1]
    if name.startswith("selectors."):
        return _SELECTOR_KIND
    if last in ("for", "window"):
        return _DURATION_KIND
    if last == "severity":
        return _SEVERITY_KIND
    if last.startswith("threshold") or last == "horizonSeconds":
        return _THRESHOLD_KIND
    if last.endswith("Url"):
        return _URL_KIND
    return _COMMAND_KIND


def _check_disabled(source: Path, value: object) -> None:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(
            f"alerting values {source}: {DISABLED}: a list of alert names, not {value!r}"
        )
    known = alert_names()
    for name in value:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = (
                f" (did you mean {close[0]}?)"
                if close
                else " (the alerts are those of dashboards/alerts/)"
            )
            raise ConfigError(f"alerting values {source}: {DISABLED}: no alert {name}{hint}")


def _checked(source: Path, name: str, value: object) -> object:
    """``value`` if it is right for setting ``name`` (a URL without a trailing '/')."""
    kind = _kind(name)
    if not kind.accepts(value):
        raise ConfigError(f"alerting values {source}: {name}: {kind.expected}, not {value!r}")
    return value.rstrip("/") if isinstance(value, str) and kind is _URL_KIND else value


def _schema(node: Mapping[str, object], prefix: str) -> dict[str, object]:
    properties = {
        key: _schema(value, f"{prefix}{key}.")
        if isinstance(value, Mapping)
        else _disabled_schema()
        if f"{prefix}{key}" == DISABLED
        else dict(_kind(f"{prefix}{key}").schema)
        for key, value in node.items()
    }
    return {"type": "object", "additionalProperties": False, "properties": properties}


def _disabled_schema() -> dict[str, object]:
    return {"type": "array", "uniqueItems": True, "items": {"enum": alert_names()}}


def _hint(name: str) -> str:
    close = difflib.get_close_matches(name, (*PLACEHOLDERS, DISABLED), n=1)
    if close:
        return f" (did you mean {close[0]}?)"
    return " (the settings are those of dashboards/alerts/config/values.yaml)"


def _set(values: dict[str, object], name: str, value: object) -> None:
    *parents, last = name.split(".")
    node = values
    for part in parents:
        child = node[part]
        assert isinstance(child, dict)  # noqa: S101 - the name came from _flatten(values)
        node = child
    node[last] = value


def _lookup(values: Mapping[str, object], name: str) -> object:
    if name in values:
        return values[name]
    node: object = values
    for part in name.split("."):
        if not isinstance(node, Mapping) or part not in node:
            raise KeyError(name)
        node = node[part]
    return node


def _fill(template: Path, values: Mapping[str, object]) -> str:
    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name.startswith(BUILT_IN_PREFIX):
            dashboard = name.removeprefix(BUILT_IN_PREFIX)
            if dashboard not in ALERT_DASHBOARDS:
                raise ConfigError(
                    f"{template.name}: no dashboard {dashboard!r} "
                    f"(known: {', '.join(ALERT_DASHBOARDS)})"
                )
            return ALERT_DASHBOARDS[dashboard]
        try:
            setting = _lookup(values, name)
        except KeyError:
            raise ConfigError(f"alerting values: no setting {name} ({template.name})") from None
        if isinstance(setting, Mapping):
            raise ConfigError(f"alerting values: {name} is a mapping, not a value")
        return str(setting)

    return _PLACEHOLDER.sub(value, template.read_text(encoding="utf-8"))


def _header(name: str) -> str:
    return (
        f"# Rendered from dashboards/alerts/templates/{name} and the alerting values by\n"
        "# `python -m dashboards.alert_rules`. Do not edit: set the values (defaults in\n"
        "# dashboards/alerts/config/values.yaml) and render again.\n"
    )


def _refuse_broken_yaml(name: str, text: str) -> None:
    try:
        content = yaml.safe_load(text)
    except yaml.YAMLError as e:
        problem = " ".join(str(e).split())
        raise ConfigError(
            f"{name}: the values made the rule file invalid YAML: {problem}"
        ) from None
    if not isinstance(content, dict) or "groups" not in content:
        raise ConfigError(f"{name}: the values made the rule file lose its 'groups:'")


def _type_name(value: object) -> str:
    if isinstance(value, Mapping):
        return "mapping"
    if isinstance(value, list):
        return "list"
    return "number" if isinstance(value, int | float) else type(value).__name__


if __name__ == "__main__":
    sys.exit(main())
