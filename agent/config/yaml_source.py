"""YAML text -> plain values that remember their lines and their duplicate keys.

PyYAML's safe loader keeps the last of two equal keys without a word; ours
keeps the last one too but records the clash, so the reader can report it with
the key's path. Mappings and lists carry line numbers for error messages.
Only the safe loader's tags are allowed: no Python objects.
"""

from collections.abc import Iterator

import yaml

from agent.config.location import ConfigFileError

_MERGE_TAG = "tag:yaml.org,2002:merge"


class YamlMap(dict[object, object]):
    """A YAML mapping with the line of each key and the keys written twice."""

    __slots__ = ("duplicates", "key_lines", "line")

    def __init__(self, line: int) -> None:
        super().__init__()
        self.line = line
        self.key_lines: dict[object, int] = {}
        # (key, line of the second occurrence, line of the first)
        self.duplicates: list[tuple[object, int, int]] = []


class YamlList(list[object]):
    """A YAML sequence with the line of each item."""

    __slots__ = ("item_lines", "line")

    def __init__(self, line: int) -> None:
        super().__init__()
        self.line = line
        self.item_lines: list[int] = []


def _line(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


class _Loader(yaml.SafeLoader):
    pass


def _construct_map(loader: yaml.SafeLoader, node: yaml.MappingNode) -> Iterator[YamlMap]:
    mapping = YamlMap(_line(node))
    yield mapping  # first, so that aliases to this mapping resolve (PyYAML's protocol)
    first_lines: dict[object, int] = {}
    # Before merge keys (<<) are flattened in: overriding a merged key is intended.
    for key_node, _ in node.value:
        if key_node.tag == _MERGE_TAG or not isinstance(key_node, yaml.ScalarNode):
            continue
        key = loader.construct_object(key_node)
        if key in first_lines:
            mapping.duplicates.append((key, _line(key_node), first_lines[key]))
        else:
            first_lines[key] = _line(key_node)
    mapping.update(loader.construct_mapping(node))
    for key_node, _ in node.value:  # now flattened: merged keys first, then this mapping's
        mapping.key_lines[loader.construct_object(key_node)] = _line(key_node)


def _construct_list(loader: yaml.SafeLoader, node: yaml.SequenceNode) -> Iterator[YamlList]:
    items = YamlList(_line(node))
    yield items
    items.extend(loader.construct_sequence(node))
    items.item_lines.extend(_line(item) for item in node.value)


_Loader.add_constructor("tag:yaml.org,2002:map", _construct_map)
_Loader.add_constructor("tag:yaml.org,2002:seq", _construct_list)


def load_yaml(text: str, source: str) -> object:
    """The single YAML document in ``text``; syntax errors name ``source`` and the line."""
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - _Loader is a SafeLoader
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        problem = e.problem or e.context or "not valid YAML"
        raise ConfigFileError(
            source,
            f"invalid YAML: {problem}",
            line=None if mark is None else mark.line + 1,
            column=None if mark is None else mark.column + 1,
        ) from None
    except yaml.reader.ReaderError as e:  # a character YAML does not allow, e.g. NUL
        line = text.count("\n", 0, e.position) + 1
        column = e.position - (text.rfind("\n", 0, e.position) + 1) + 1
        code = e.character if isinstance(e.character, int) else ord(e.character)
        problem = f"invalid YAML: character U+{code:04X} is not allowed"
        raise ConfigFileError(source, problem, line=line, column=column) from None
    except yaml.YAMLError as e:
        raise ConfigFileError(source, f"invalid YAML: {' '.join(str(e).split())}") from None
    except RecursionError:
        # PyYAML's composer recurses per nesting level: thousands of [ or { must
        # be an error, not a crash.
        raise ConfigFileError(source, "invalid YAML: nested too deeply") from None
