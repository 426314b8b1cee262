"""Reading one YAML mapping as one settings dataclass, with exact key paths in every error.

The dataclass is the schema: its field names are the allowed keys and its
defaults are the defaults. A ``Section`` checks the keys when it opens (so a
misspelt key is reported before the default it left behind causes anything
else), then hands out typed values key by key.
"""

import dataclasses
import difflib
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TypeVar

from agent.config.location import ConfigFileError, Place
from agent.config.values import (
    HostPort,
    Secret,
    format_size,
    kind_of,
    parse_duration,
    parse_size,
    shown,
)
from agent.config.yaml_source import YamlList, YamlMap

T = TypeVar("T")
C = TypeVar("C", bound=str)

_ABSENT = object()
INT32_MAX = 2**31 - 1


@dataclasses.dataclass(frozen=True, slots=True)
class SecretReference:
    """The mapping forms of a secret: ``{env: VAR}`` or ``{file: PATH}``."""

    env: str | None = None
    file: str | None = None


class Section:
    """One mapping of the document, read against the settings dataclass ``schema``."""

    def __init__(self, place: Place, raw: object, schema: type, env: Mapping[str, str]) -> None:
        self.env = env
        self.schema = schema
        self.fields = {f.name: f for f in dataclasses.fields(schema)}
        if raw is None:  # `section:` with everything under it commented out
            raw = YamlMap(place.line or 1)
        if not isinstance(raw, YamlMap):
            raise place.error(
                f"expected a mapping with keys {', '.join(sorted(self.fields))}, got {shown(raw)}"
            )
        self.raw = raw
        self.place = place
        self._check_keys()

    def _check_keys(self) -> None:
        for key, line, first in self.raw.duplicates:
            raise self.place.key(str(key), line).error(f"duplicate key (first on line {first})")
        for key in self.raw:
            if not isinstance(key, str):
                raise Place(self.place.source, self.place.path, self.raw.key_lines.get(key)).error(
                    f"keys must be text, got {shown(key)}"
                )
            retired = getattr(self.schema, "RETIRED_KEYS", {}).get(key)
            if retired is not None and key not in self.fields:
                raise self.at(key).error(f"no longer a setting: {retired}; remove it")
            if key not in self.fields:
                allowed = sorted(self.fields)
                close = difflib.get_close_matches(key, allowed, n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise self.at(key).error(f"unknown key; {hint}(allowed: {', '.join(allowed)})")

    # -- where ---------------------------------------------------------------------

    def at(self, key: str) -> Place:
        """The place of ``key``: its own line when written, the section's otherwise."""
        return self.place.key(key, self.raw.key_lines.get(key))

    def fail(self, key: str, problem: str) -> ConfigFileError:
        return self.at(key).error(problem)

    def has(self, key: str) -> bool:
        return key in self.raw

    def _get(self, key: str) -> object:
        if key not in self.fields:  # a typo in the reading code, not in the file
            raise KeyError(f"{self.schema.__name__} has no field {key!r}")
        return self.raw.get(key, _ABSENT)

    def _default(self, key: str, kind: type[T], expected: str) -> T:
        field = self.fields[key]
        if field.default is not dataclasses.MISSING:
            value: object = field.default
        elif field.default_factory is not dataclasses.MISSING:
            value = field.default_factory()
        else:
            raise self.fail(key, f"required key missing; expected {expected}")
        if not isinstance(value, kind):
            raise TypeError(f"{self.schema.__name__}.{key} defaults to {value!r}, not a {kind}")
        return value

    def _present(self, key: str, expected: str) -> object:
        """The value written for ``key``, or _ABSENT; an empty value is an error."""
        value = self._get(key)
        if value is None:
            field = self.fields[key]
            has_default = (
                field.default is not dataclasses.MISSING
                or field.default_factory is not dataclasses.MISSING
            )
            hint = " (leave the key out for the default)" if has_default else ""
            raise self.fail(key, f"expected {expected}, got nothing{hint}")
        return value

    # -- typed values -----------------------------------------------------------------

    def section(self, key: str, schema: type) -> "Section":
        value = self._get(key)
        return Section(self.at(key), None if value is _ABSENT else value, schema, self.env)

    def sections(self, key: str, schema: type, *, what: str) -> Iterator["Section"]:
        """The mappings of a list, each one a ``Section``; the list must not be empty."""
        value = self._get(key)
        if value is _ABSENT or value is None:
            raise self.fail(key, f"required key missing; list at least one {what}")
        if not isinstance(value, YamlList):
            raise self.fail(key, f"expected a list of {what}s, got {shown(value)}")
        if not value:
            raise self.fail(key, f"must list at least one {what}")
        for index, (item, line) in enumerate(zip(value, value.item_lines, strict=True)):
            yield Section(self.at(key).item(index, line), item, schema, self.env)

    def text(self, key: str, *, default: str | None = None, expected: str = "text") -> str:
        value = self._present(key, expected)
        if value is _ABSENT:
            return self._default(key, str, expected) if default is None else default
        if not isinstance(value, str):
            hint = " (quote it to make it text)" if isinstance(value, bool | int | float) else ""
            raise self.fail(key, f"expected text, got {shown(value)}{hint}")
        if not value.strip():
            raise self.fail(key, "must not be empty")
        return value

    def choice(self, key: str, allowed: tuple[C, ...]) -> C:
        expected = f"one of {', '.join(allowed)}"
        value = self._present(key, expected)
        if value is _ABSENT:
            value = self._default(key, str, expected)
        for option in allowed:
            if value == option:
                return option
        raise self.fail(key, f"must be one of {', '.join(allowed)}, got {shown(value)}")

    def boolean(self, key: str) -> bool:
        value = self._present(key, "true or false")
        if value is _ABSENT:
            return self._default(key, bool, "true or false")
        if not isinstance(value, bool):
            raise self.fail(key, f"expected true or false, got {shown(value)}")
        return value

    def integer(self, key: str, *, minimum: int, maximum: int = INT32_MAX, rule: str = "") -> int:
        """A whole number in [minimum, maximum]; Kafka's own counts are int32 unless said."""
        value = self._present(key, "a whole number")
        if value is _ABSENT:
            return self._default(key, int, "a whole number")
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(key, f"expected a whole number, got {shown(value)}")
        if value < minimum:
            raise self.fail(key, f"{rule or f'must be at least {minimum}'}, got {value}")
        if value > maximum:
            raise self.fail(key, f"must be at most {maximum}, got {shown(value)}")
        return value

    def number(self, key: str, *, minimum: float, maximum: float | None = None) -> float:
        """A number (whole or not) in ``[minimum, maximum]``."""
        value = self._present(key, "a number")
        if value is _ABSENT:
            return self._default(key, float, "a number")
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(key, f"expected a number, got {shown(value)}")
        if value < minimum or (maximum is not None and value > maximum):
            bounds = f"at least {minimum:g}"
            if maximum is not None:
                bounds = f"from {minimum:g} to {maximum:g}"
            raise self.fail(key, f"must be {bounds}, got {value}")
        return float(value)

    def optional_integer(self, key: str, *, minimum: int) -> int | None:
        """A whole number, or None when the key is not written (its default is None)."""
        if self._present(key, "a whole number") is _ABSENT:
            return None
        return self.integer(key, minimum=minimum)

    def duration(self, key: str) -> float:
        return self._parsed(key, "a duration", parse_duration, float)

    def size(self, key: str, *, maximum: int | None = None) -> int:
        size = self._parsed(key, "a size", parse_size, int)
        if maximum is not None and size > maximum:
            raise self.fail(key, f"must be at most {maximum} bytes, got {format_size(size)}")
        return size

    def host_port(self, key: str) -> HostPort:
        value = self._present(key, "host:port text")
        if value is _ABSENT:
            return self._default(key, HostPort, "host:port text")
        if not isinstance(value, str):
            raise self.fail(key, f"expected host:port text, got {shown(value)}")
        try:
            return HostPort.parse(value)
        except ValueError as e:
            raise self.fail(key, str(e)) from None

    def host_ports(self, key: str) -> tuple[HostPort, ...]:
        """A list of host:port, or one text of comma-separated host:port."""
        value = self._present(key, "a list of host:port")
        if value is _ABSENT:
            raise self.fail(key, "required key missing; list the brokers as host:port")
        if isinstance(value, str):
            items: list[tuple[Place, object]] = [
                (self.at(key), part.strip()) for part in value.split(",")
            ]
        elif isinstance(value, YamlList):
            items = [
                (self.at(key).item(i, line), part)
                for i, (part, line) in enumerate(zip(value, value.item_lines, strict=True))
            ]
        else:
            raise self.fail(key, f"expected a list of host:port, got {shown(value)}")
        if not items:
            raise self.fail(key, "must list at least one broker as host:port")
        servers = []
        for place, part in items:
            if not isinstance(part, str):
                raise place.error(f"expected host:port text, got {shown(part)}")
            if not part.strip():
                raise place.error(f"expected host:port, got an empty entry in {shown(value)}")
            try:
                servers.append(HostPort.parse(part))
            except ValueError as e:
                raise place.error(str(e)) from None
        return tuple(servers)

    def optional_path(self, key: str) -> Path | None:
        value = self._present(key, "a file path")
        if value is _ABSENT:
            return None
        if not isinstance(value, str) or not value.strip():
            raise self.fail(key, f"expected a file path, got {shown(value)}")
        return Path(value)

    def patterns(self, key: str) -> tuple[re.Pattern[str], ...]:
        value = self._present(key, "a list of regular expressions")
        if value is _ABSENT:
            return tuple(self._default(key, tuple, "a list of regular expressions"))
        if not isinstance(value, YamlList):
            raise self.fail(key, f"expected a list of regular expressions, got {shown(value)}")
        compiled = []
        for index, (item, line) in enumerate(zip(value, value.item_lines, strict=True)):
            place = self.at(key).item(index, line)
            if not isinstance(item, str):
                raise place.error(f"expected a regular expression as text, got {shown(item)}")
            try:
                compiled.append(re.compile(item))
            # re raises OverflowError for a repetition count like a{9999999999},
            # and RecursionError for thousands of nested groups.
            except (re.error, OverflowError, RecursionError) as e:
                reason = str(e) if not isinstance(e, RecursionError) else "nested too deeply"
                raise place.error(f"invalid regular expression {shown(item)}: {reason}") from None
        return tuple(compiled)

    def secret(self, key: str) -> Secret | None:
        """A secret written as text, ``{env: VAR}`` or ``{file: PATH}``; None when absent.

        No message ever quotes what was written here: it may be the secret.
        """
        forms = "text, {env: VAR} or {file: PATH}"
        value = self._present(key, forms)
        if value is _ABSENT:
            return None
        if isinstance(value, str):
            if not value:
                raise self.fail(key, "must not be empty")
            return Secret(value)
        if not isinstance(value, YamlMap):
            raise self.fail(key, f"expected {forms}, got {kind_of(value)}")
        reference = self.section(key, SecretReference)
        if reference.has("env") and not reference.has("file"):
            return self._secret_from_env(key, reference.text("env"))
        if reference.has("file") and not reference.has("env"):
            return self._secret_from_file(key, Path(reference.text("file")))
        raise self.fail(key, "expected exactly one of {env: VAR} or {file: PATH}")

    def _secret_from_env(self, key: str, variable: str) -> Secret:
        if variable not in self.env:
            raise self.fail(key, f"environment variable {variable} is not set")
        if not self.env[variable]:
            raise self.fail(key, f"environment variable {variable} is empty")
        return Secret(self.env[variable], f"environment variable {variable}")

    def _secret_from_file(self, key: str, path: Path) -> Secret:
        try:
            content = path.read_text(encoding="utf-8")
        except OSError as e:
            raise self.fail(key, f"cannot read secret file {path}: {e.strerror}") from None
        except UnicodeDecodeError:
            raise self.fail(key, f"secret file {path} is not UTF-8 text") from None
        value = content.rstrip("\r\n")
        if not value:
            raise self.fail(key, f"secret file {path} is empty")
        return Secret(value, f"file {path}")

    def _parsed(self, key: str, what: str, parse: Callable[[object], T], kind: type[T]) -> T:
        value = self._present(key, what)
        if value is _ABSENT:
            return self._default(key, kind, what)
        try:
            return parse(value)
        except ValueError as e:
            raise self.fail(key, str(e)) from None
