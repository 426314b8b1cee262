"""``ksmon kafka tool``: Kafka's script names to main classes, the command line it runs,
and when it names the local broker. No JVM: the exec is replaced. That every main class
is in the cached jars, and real runs, are in tests/integration/test_kafka_cli.py."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from agent import cli
from agent.embedded import daemon, kafka
from agent.embedded.java import JavaRuntime
from agent.embedded.kafka import KafkaDistribution
from agent.embedded.kafka_tools import (
    KAFKA_TOOLS,
    find_tool,
    lacks_bootstrap,
    tool_argv,
    with_bootstrap,
)
from agent.errors import ConfigError

DISTRIBUTION = KafkaDistribution(
    version="4.3.1", libs=Path("/cache/kafka/4.3.1/libs"), java=JavaRuntime(Path("/jdk/java"), 21)
)


@pytest.mark.parametrize(
    "name", ["consumer-groups", "kafka-consumer-groups", "kafka-consumer-groups.sh"]
)
def test_a_tool_is_named_as_ksmon_or_as_kafkas_script(name: str) -> None:
    tool = find_tool(name)

    assert tool.main_class == "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
    assert tool.script == "kafka-consumer-groups.sh"


def test_the_tools_users_asked_for_map_to_kafka_4_classes() -> None:
    assert find_tool("topics").main_class == "org.apache.kafka.tools.TopicCommand"
    assert find_tool("configs").main_class == "kafka.admin.ConfigCommand"
    assert find_tool("console-consumer").main_class == (
        "org.apache.kafka.tools.consumer.ConsoleConsumer"
    )


def test_tool_names_are_unique_lowercase_script_names() -> None:
    names = [tool.name for tool in KAFKA_TOOLS]
    assert len(names) == len(set(names))
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name) for name in names)


def test_an_unknown_tool_is_one_line_with_a_guess_and_every_known_name() -> None:
    with pytest.raises(ConfigError) as raised:
        find_tool("consumer-group")

    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("unknown Kafka tool 'consumer-group'; did you mean consumer-groups?")
    assert all(tool.name in message for tool in KAFKA_TOOLS)


def test_the_local_broker_is_named_in_front_when_no_bootstrap_is_given() -> None:
    topics = find_tool("topics")

    assert lacks_bootstrap(topics, ["--list"])
    assert with_bootstrap(topics, ["--list"], "127.0.0.1:9") == [
        "--bootstrap-server",
        "127.0.0.1:9",
        "--list",
    ]


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["--bootstrap-server", "k:9092", "--list"], id="given"),
        pytest.param(["--list", "--bootstrap-server=k:9092"], id="with-equals"),
        pytest.param(["--bootstrap", "k:9092", "--list"], id="abbreviated"),
        pytest.param(["--bootstrap-controller", "k:9093", "--describe"], id="controller"),
        pytest.param(["--help"], id="help"),
        pytest.param(["--version"], id="version"),
    ],
)
def test_arguments_that_name_brokers_or_ask_for_help_stay_as_they_are(args: list[str]) -> None:
    assert not lacks_bootstrap(find_tool("configs"), args)


def test_tools_without_brokers_never_get_one() -> None:
    dump_log = find_tool("dump-log")

    assert not lacks_bootstrap(dump_log, ["--files", "x.log"])
    assert with_bootstrap(dump_log, ["--files", "x.log"], "k:1") == ["--files", "x.log"]


def test_a_subcommands_own_bootstrap_option_goes_after_the_subcommand() -> None:
    assert with_bootstrap(find_tool("cluster"), ["cluster-id"], "k:1") == [
        "cluster-id",
        "--bootstrap-server",
        "k:1",
    ]
    assert with_bootstrap(find_tool("metadata-quorum"), ["describe", "--status"], "k:1") == [
        "--bootstrap-server",
        "k:1",
        "describe",
        "--status",
    ]


def test_the_java_command_line_passes_the_arguments_unchanged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("KAFKA_HEAP_OPTS", raising=False)
    monkeypatch.setenv("KAFKA_OPTS", "-Djava.security.auth.login.config=/etc/jaas.conf")
    args = ["--describe", "--group", "g one", "--members"]

    argv = tool_argv(DISTRIBUTION, find_tool("consumer-groups"), args)

    assert argv[0] == "/jdk/java"
    assert argv[argv.index("-cp") + 1] == "/cache/kafka/4.3.1/libs/*"
    main = argv.index("org.apache.kafka.tools.consumer.group.ConsumerGroupCommand")
    assert argv[main + 1 :] == args
    assert "-Xmx256M" in argv[:main]
    assert "-Djava.security.auth.login.config=/etc/jaas.conf" in argv[:main]
    assert any(option.startswith("-Dlog4j2.configurationFile=") for option in argv[:main])


def test_kafka_heap_opts_replaces_the_default_heap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_HEAP_OPTS", "-Xms64m -Xmx1g")

    argv = tool_argv(DISTRIBUTION, find_tool("topics"), ["--list"])

    assert "-Xmx1g" in argv
    assert "-Xms64m" in argv
    assert "-Xmx256M" not in argv


@pytest.fixture
def exec_spy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """What `ksmon kafka tool` would exec, instead of exec'ing it; no broker registered."""
    monkeypatch.setenv("KSMON_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setattr(kafka, "fetch_kafka", lambda: DISTRIBUTION)
    became: list[list[str]] = []

    def become(argv: list[str]) -> int:
        became.append(argv)
        return 0

    monkeypatch.setattr(cli, "_become", become)
    return became


def test_cli_runs_the_tool_with_its_arguments_after_the_main_class(
    exec_spy: list[list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli.main(["kafka", "tool", "topics", "--bootstrap-server", "k:9092", "--list"])

    assert code == 0
    [argv] = exec_spy
    main = argv.index("org.apache.kafka.tools.TopicCommand")
    assert argv[main + 1 :] == ["--bootstrap-server", "k:9092", "--list"]
    assert capsys.readouterr().err == ""


def test_cli_names_the_one_local_broker_and_says_so(
    exec_spy: list[list[str]],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    record = daemon.RunRecord(1, "127.0.0.1:19092", "4.3.1", "log", "server.properties")
    broker = daemon.LocalBroker(tmp_path / "b", record)
    monkeypatch.setattr(daemon, "running_brokers", lambda: [broker])

    cli.main(["kafka", "tool", "consumer-groups", "--list"])

    [argv] = exec_spy
    assert argv[-3:] == ["--bootstrap-server", "127.0.0.1:19092", "--list"]
    assert capsys.readouterr().err == (
        "ksmon: no --bootstrap-server given: using the local broker at 127.0.0.1:19092\n"
    )


def test_cli_without_a_local_broker_says_where_it_looked_and_runs_the_tool_as_given(
    exec_spy: list[list[str]], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    cli.main(["kafka", "tool", "consumer-groups", "--list"])

    [argv] = exec_spy
    assert argv[-1] == "--list"
    assert "--bootstrap-server" not in argv
    err = capsys.readouterr().err
    assert err.startswith("ksmon: no --bootstrap-server given, and no local broker runs (looked")
    assert str(tmp_path / "state" / "brokers") in err


def test_cli_lists_the_tools(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["kafka", "tool", "--list"]) == 0

    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(KAFKA_TOOLS)
    assert any(line.startswith("consumer-groups ") for line in lines)


def test_cli_help_names_every_tool(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["kafka", "tool", "--help"])

    help_text = " ".join(capsys.readouterr().out.split())
    assert all(tool.name in help_text.replace("- ", "-") for tool in KAFKA_TOOLS)


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        pytest.param(["kafka", "tool", "nope"], "unknown Kafka tool 'nope'", id="unknown"),
        pytest.param(["kafka", "tool"], "name a Kafka tool", id="missing"),
    ],
)
def test_cli_tool_errors_are_one_line(
    exec_spy: list[list[str]], capsys: pytest.CaptureFixture[str], argv: list[str], fragment: str
) -> None:
    assert cli.main(argv) == 1

    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert err.startswith(f"ksmon: error: {fragment}")
    assert "consumer-groups" in err
    assert exec_spy == []


def test_building_the_parser_leaves_the_jvm_helpers_unimported() -> None:
    """`ksmon --help` builds the tool parser: the table must not pull in the JVM helpers."""
    probe = (
        "import sys; from agent import cli; cli.build_parser(); "
        "print('agent.embedded.kafka' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )

    assert result.stdout.strip() == "False"
