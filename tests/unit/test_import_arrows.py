"""The parts of ksmon and the arrows between them that must never be drawn, checked from
every source file's imports (at the top or inside a function).

Data flows one way: the agent polls, snapshots and ships; the job reads the snapshots
at its Spark edge, judges them in a pure core and serves what it found. The agent never
reaches into the job (only the CLI starts it), the job never reaches into the agent's
poller or the demo's embedded broker, and inside the job the judging core knows neither
Spark nor what its results are served by.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
JOB = "agent.aggregation"
SPARK_AND_FRIENDS = ("pyspark", "pandas", "pyarrow", "py4j")
# What runs the job and wires its parts together.
RUNNERS = (f"{JOB}.job", f"{JOB}.replay", f"{JOB}.commands")


def imported_modules(path: Path) -> set[str]:
    """Every module a source file imports, at the top or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def sources(part: str, *, but: tuple[str, ...] = ()) -> list[Path]:
    """The Python files of a package (dotted) or module, leaving out those under ``but``."""
    path = ROOT / part.replace(".", "/")
    files = sorted(path.rglob("*.py")) if path.is_dir() else [path.with_suffix(".py")]
    left_out = [ROOT / b.replace(".", "/") for b in but]
    return [
        f for f in files if not any(f == b.with_suffix(".py") or b in f.parents for b in left_out)
    ]


def is_under(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(f"{p}.") for p in packages)


# (part, the packages it never imports, why)
NEVERS = [
    (
        f"{JOB}.judging",
        (f"{JOB}.spark", f"{JOB}.outputs", *RUNNERS, *SPARK_AND_FRIENDS),
        "the rules and their state are plain Python, judged the same in Spark and in replay",
    ),
    (
        f"{JOB}.outputs",
        (f"{JOB}.spark", *RUNNERS, "pyspark", "py4j"),
        "what the job serves is made from the judging core's results, without Spark",
    ),
    (
        f"{JOB}.spark",
        (f"{JOB}.outputs", *RUNNERS),
        "the Spark edge feeds the core; the job wires it to the outputs",
    ),
    (
        JOB,
        ("agent.collect", "agent.embedded", "agent.demo", "agent.runner", "agent.explain"),
        "the job reads snapshots, never the agent's poller or the demo's broker",
    ),
    (
        "agent",
        (JOB,),
        "the agent never reaches into the job (only the CLI's commands start it)",
    ),
    (
        "agent.model",
        tuple(
            f"agent.{p.name.removesuffix('.py')}"
            for p in (ROOT / "agent").iterdir()
            if p.name not in ("model", "errors.py", "__init__.py", "__pycache__")
            and (p.is_dir() or p.suffix == ".py")
        ),
        "the records every arrow carries depend on nothing they carry data between",
    ),
    (
        "agent.exposition.http",
        ("agent.aggregation", "agent.collect", "agent.runner", "agent.transport", "agent.config"),
        "one HTTP server for the agent and the job, knowing neither",
    ),
]
# The CLI's entry points start the job and read the findings topic, on request.
NOT_THE_AGENT = (f"{JOB}", "agent.cli", "agent.commands")


@pytest.mark.parametrize(("part", "nevers", "why"), NEVERS, ids=[n[0] for n in NEVERS])
def test_no_part_imports_what_it_must_never(part: str, nevers: tuple[str, ...], why: str) -> None:
    files = sources(part, but=NOT_THE_AGENT if part == "agent" else ())
    assert files, f"the walk reaches {part}"
    offending = sorted(
        f"{path.relative_to(ROOT)} imports {module}"
        for path in files
        for module in imported_modules(path)
        if is_under(module, nevers)
    )
    assert offending == [], why


def test_the_import_walk_finds_an_import_inside_a_function(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from agent.embedded.cache import cache_dir\n")
    assert "agent.embedded.cache" in imported_modules(source)


def test_a_part_without_its_exceptions_is_still_walked() -> None:
    walked = sources("agent", but=NOT_THE_AGENT)
    assert ROOT / "agent" / "collect" / "poller.py" in walked
    assert ROOT / "agent" / "cli.py" not in walked
    assert not any(JOB.replace(".", "/") in str(p.relative_to(ROOT)) for p in walked)
