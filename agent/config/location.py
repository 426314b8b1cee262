"""Where in a config file something is wrong, and the one-line error that says so."""

from dataclasses import dataclass

from agent.errors import ConfigError


class ConfigFileError(ConfigError):
    """One thing wrong at one place of a config file.

    The message reads ``SOURCE[:LINE[:COLUMN]]: [KEY.PATH: ]PROBLEM``, so an
    editor can jump to it; the parts stay available as attributes for callers
    and tests.
    """

    def __init__(
        self,
        source: str,
        problem: str,
        *,
        key: str = "",
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        self.source = source
        self.problem = problem
        self.key = key
        self.line = line
        self.column = column
        where = source
        if line is not None:
            where += f":{line}"
            if column is not None:
                where += f":{column}"
        super().__init__(f"{where}: {key}: {problem}" if key else f"{where}: {problem}")


@dataclass(frozen=True, slots=True)
class Place:
    """A key's path in the document (``clusters[0].poll.offsets_interval``) and its line."""

    source: str
    path: str = ""
    line: int | None = None

    def key(self, name: str, line: int | None) -> "Place":
        return Place(self.source, f"{self.path}.{name}" if self.path else name, line or self.line)

    def item(self, index: int, line: int | None) -> "Place":
        return Place(self.source, f"{self.path}[{index}]", line or self.line)

    def error(self, problem: str) -> ConfigFileError:
        return ConfigFileError(self.source, problem, key=self.path, line=self.line)
