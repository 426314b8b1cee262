"""Every key of the configuration, given every kind of wrong value, fails in one line naming it.

The reference file (every option) is the starting point: each key in turn gets
a list, a mapping or nothing where it does not belong, and random YAML damage
is thrown at the whole file. Whatever happens, loading ends in a value or one
``ConfigError`` line that starts with the file (and line) and names the key.
"""

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.config import parse_config
from agent.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = yaml.safe_load((ROOT / "docs" / "reference-config.yaml").read_text())
ENV = {
    "KSMON_TLS_KEY_PASSWORD": "a-key-password",
    "KSMON_PROD_EU_PASSWORD": "a-password",
    "KSMON_OAUTH_CLIENT_SECRET": "a-client-secret",
}
ONE_LINE = re.compile(r"test\.yaml(:\d+(:\d+)?)?: [^\n]+")


def key_paths(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key (mapping entry) of the document, as a path of keys and list indexes."""
    found = []
    if isinstance(node, dict):
        for key, child in node.items():
            found.append((*path, key))
            found += key_paths(child, (*path, key))
    elif isinstance(node, list):
        for index, child in enumerate(node):
            found += key_paths(child, (*path, index))
    return found


def shown_path(path: tuple[Any, ...]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def with_value(path: tuple[Any, ...], value: object) -> dict[str, Any]:
    document: dict[str, Any] = copy.deepcopy(REFERENCE)
    node: Any = document
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return document


def load(document: object) -> None:
    parse_config(yaml.safe_dump(document), "test.yaml", ENV)


def error_of(text: str) -> str | None:
    """The one-line error loading ``text`` gives, or None if it loads."""
    try:
        parse_config(text, "test.yaml", ENV)
    except ConfigError as e:
        return str(e)
    return None


def names(message: str, path: tuple[Any, ...]) -> bool:
    """The message names the key, or for a secret's {env: VAR} / {file: PATH}, the secret."""
    secret_form = path[-1] in ("env", "file")
    return shown_path(path) in message or (secret_form and shown_path(path[:-1]) in message)


KEYS = key_paths(REFERENCE)


def is_section(path: tuple[Any, ...]) -> bool:
    node: Any = REFERENCE
    for part in path:
        node = node[part]
    return isinstance(node, dict)


def test_the_reference_itself_loads() -> None:
    load(REFERENCE)
    assert len(KEYS) > 50, "the walk reaches every key"


@pytest.mark.parametrize(
    ("wrong", "value"), [("a list", [1, 2]), ("a mapping", {"zz": 1}), ("nothing", None)]
)
@pytest.mark.parametrize("path", KEYS, ids=shown_path)
def test_a_wrong_kind_of_value_names_the_key_in_one_line(
    path: tuple[Any, ...], wrong: str, value: object
) -> None:
    if value is None and is_section(path):
        return  # an empty section means all its defaults: valid, and tested elsewhere

    with pytest.raises(ConfigError) as raised:
        load(with_value(path, value))

    message = str(raised.value)
    assert ONE_LINE.fullmatch(message), message
    assert names(message, path), f"{wrong}: {message}"


@pytest.mark.parametrize("path", KEYS, ids=shown_path)
def test_odd_text_anywhere_is_a_value_or_one_line_naming_the_key(path: tuple[Any, ...]) -> None:
    # Free-text keys (ids, user names, file paths) take it; every other key
    # (durations, choices, addresses, numbers, sections) must refuse it, by name.
    message = error_of(yaml.safe_dump(with_value(path, "¿?\t x")))

    if message is not None:
        assert ONE_LINE.fullmatch(message), message
        assert names(message, path), message


YAML_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=12)
    | st.sampled_from(
        ["", "0", "-1", "1e400", "10s", "5MiB", "PLAINTEXT", "k:9092", ".*", "(", "a{99999999999}"]
    )
)


@settings(
    max_examples=100, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(st.data())
def test_random_values_at_random_keys_give_a_config_or_one_line(data: st.DataObject) -> None:
    document = copy.deepcopy(REFERENCE)
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(KEYS))
        node: Any = document
        try:
            for part in path[:-1]:
                node = node[part]
            node[path[-1]] = data.draw(YAML_SCALARS | st.lists(YAML_SCALARS, max_size=2))
        except (KeyError, IndexError, TypeError):
            continue  # an earlier change replaced a parent
    message = error_of(yaml.safe_dump(document))

    assert message is None or ONE_LINE.fullmatch(message), message


@settings(
    max_examples=100, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(st.data())
def test_damaged_yaml_text_gives_a_config_or_one_line(data: st.DataObject) -> None:
    text = (ROOT / "docs" / "reference-config.yaml").read_text()
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(text)))
        op = data.draw(st.sampled_from(["cut", "insert", "drop", "nest"]))
        if op == "cut":
            text = text[:at]
        elif op == "insert":
            text = text[:at] + data.draw(st.text(max_size=6)) + text[at:]
        elif op == "drop":
            text = text[:at] + text[at + data.draw(st.integers(1, 20)) :]
        else:
            text = text[:at] + "[" * data.draw(st.sampled_from([3, 800])) + text[at:]
    message = error_of(text)

    assert message is None or ONE_LINE.fullmatch(message), message
