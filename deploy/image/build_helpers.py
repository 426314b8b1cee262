"""A step of the image build (``deploy/image/Dockerfile``), written in Python so the
tests run the very code the build runs. Standard library only: it runs in a bare
base image, before ksmon is installed.

    python3 build_helpers.py requirements pyproject.toml [EXTRA[,EXTRA] ...] > requirements.txt

prints ksmon's dependencies with those of the named extras (an empty argument names
none: the Dockerfile's EXTRAS when not set), so the image installs them in a layer of
their own that a change to ksmon's code leaves cached.
"""

import re
import sys
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

_REQUIREMENT = re.compile(r"\s*(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[(?P<extras>[^]]*)\])?")


class UnknownExtraError(ValueError):
    """An extra the project does not declare."""


def requirements(pyproject_text: str, extras: Sequence[str] = ()) -> list[str]:
    """The project's dependencies and those of ``extras``, as written in pyproject.toml.
    An extra that names the project itself (``ksmon[aggregate]``) brings that extra's."""
    project = tomllib.loads(pyproject_text)["project"]
    name = _normalized(project["name"])
    declared: Mapping[str, list[str]] = project.get("optional-dependencies", {})
    found: list[str] = []
    seen_extras: set[str] = set()

    def add(dependencies: Sequence[str]) -> None:
        for dependency in dependencies:
            match = _REQUIREMENT.match(dependency)
            if match and _normalized(match["name"]) == name:
                add_extras(e.strip() for e in (match["extras"] or "").split(",") if e.strip())
            elif dependency not in found:
                found.append(dependency)

    def add_extras(names: Iterable[str]) -> None:
        for extra in names:
            if extra in seen_extras:
                continue
            if extra not in declared:
                known = ", ".join(sorted(declared)) or "none"
                raise UnknownExtraError(f"pyproject.toml has no extra {extra!r} (extras: {known})")
            seen_extras.add(extra)
            add(declared[extra])

    add(project["dependencies"])
    add_extras(extras)
    return found


def main(argv: Sequence[str]) -> int:
    match list(argv):
        case ["requirements", pyproject, *arguments]:
            text = Path(pyproject).read_text(encoding="utf-8")
            extras = [e.strip() for a in arguments for e in a.split(",") if e.strip()]
            try:
                listed = requirements(text, extras)
            except UnknownExtraError as e:
                sys.stderr.write(f"build_helpers.py: {e}\n")
                return 1
            sys.stdout.write("".join(f"{r}\n" for r in listed))
        case _:
            sys.stderr.write(__doc__ or "")
            return 2
    return 0


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
