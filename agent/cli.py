"""``ksmon``: the command line. Each command returns an exit code; errors are one line."""

import argparse
import logging
import signal
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, NoReturn

from agent import __version__, redaction
from agent.errors import ConfigError, KsmonError, SetupError
from agent.logs import RedactSecrets

if TYPE_CHECKING:
    from agent.config import Config
    from agent.embedded.daemon import LocalBroker
    from agent.embedded.kafka_tools import KafkaTool

log = logging.getLogger("ksmon")


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 1 <= port <= 65535:  # noqa: PLR2004 - the TCP port range
        raise argparse.ArgumentTypeError(f"port must be 1..65535, got {port}")
    return port


def _seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < seconds <= 3600:  # noqa: PLR2004 - an hour is already far more than useful
        raise argparse.ArgumentTypeError(f"must be more than 0 and at most 3600, got {text}")
    return seconds


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ksmon",
        description="Monitor Kafka Streams applications from outside: assignments, hot tasks, "
        "restores, stream threads and rebalances.",
    )
    parser.add_argument("--version", action="version", version=f"ksmon {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug details")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    agent = commands.add_parser(
        "agent", help="run the agent daemon (polls, ships snapshots, serves /metrics)"
    )
    agent.add_argument("--config", type=Path, required=True, help="the YAML configuration file")
    agent.set_defaults(run=_agent)

    check = commands.add_parser(
        "check-config", help="validate a configuration file and summarise it"
    )
    check.add_argument("file", type=Path)
    check.set_defaults(run=_check_config)

    snapshot = commands.add_parser(
        "snapshot", help="poll one group once and print what the agent sees"
    )
    snapshot.add_argument(
        "--group", required=True, help="the consumer group (Streams application.id)"
    )
    where = snapshot.add_mutually_exclusive_group(required=True)
    where.add_argument("--config", type=Path, help="take the cluster from this configuration")
    where.add_argument("--bootstrap", help="or connect to these host:port servers (PLAINTEXT)")
    snapshot.add_argument("--cluster", help="which configured cluster (default: the first)")
    snapshot.add_argument("--json", action="store_true", help="print the snapshot as JSON")
    snapshot.set_defaults(run=_snapshot)

    aggregate = commands.add_parser(
        "aggregate",
        help="run the aggregation job (Spark): detectors over the agents' snapshots",
    )
    aggregate.add_argument("--config", type=Path, required=True, help="the YAML configuration file")
    aggregate.add_argument(
        "--replay",
        type=Path,
        nargs="+",
        metavar="PATH",
        help="instead of streaming, replay recorded snapshot files or spool directories",
    )
    aggregate.add_argument(
        "--master", help="Spark master (default: aggregation.spark.master, e.g. local[*])"
    )
    aggregate.add_argument(
        "--json", action="store_true", help="with --replay: print the events as JSON lines"
    )
    aggregate.set_defaults(run=_aggregate)

    findings = commands.add_parser(
        "findings", help="print the open findings (from the findings topic)"
    )
    findings.add_argument("--config", type=Path, required=True, help="the YAML configuration file")
    findings.add_argument("--json", action="store_true", help="print them as JSON")
    findings.set_defaults(run=_findings)

    explain = commands.add_parser(
        "explain", help="explain one group for a person on call: who holds what, rates, lag"
    )
    explain.add_argument("group", help="the consumer group (Streams application.id)")
    where = explain.add_mutually_exclusive_group(required=True)
    where.add_argument("--config", type=Path, help="take the cluster from this configuration")
    where.add_argument("--bootstrap", help="or connect to these host:port servers (PLAINTEXT)")
    explain.add_argument("--cluster", help="which configured cluster (default: the first)")
    explain.add_argument(
        "--sample",
        type=_seconds,
        default=5.0,
        metavar="SECONDS",
        help="seconds between the two polls that rates are measured over (default: 5)",
    )
    explain.add_argument("--json", action="store_true", help="print the report as JSON")
    explain.set_defaults(run=_explain)

    demo = commands.add_parser(
        "demo", help="run everything locally on an embedded Kafka until Ctrl-C"
    )
    demo.set_defaults(run=_demo)

    kafka = commands.add_parser(
        "kafka", help="a local single-node Kafka for trying ksmon out, and Kafka's own tools"
    )
    kafka_commands = kafka.add_subparsers(dest="kafka_command", required=True, metavar="ACTION")
    for name, run, text in (
        ("start", _kafka_start, "start a local broker in the background (or --foreground)"),
        ("stop", _kafka_stop, "stop the local broker"),
        ("status", _kafka_status, "say whether the local broker runs and answers"),
    ):
        sub = kafka_commands.add_parser(name, help=text)
        sub.add_argument(
            "--data-dir",
            type=Path,
            default=None,
            help="where the broker keeps its data (default: ~/.local/state/ksmon/kafka)"
            if name == "start"
            else "the broker of this data dir (default: the broker `ksmon kafka start` "
            "started, whatever its data dir)",
        )
        sub.set_defaults(run=run)
        if name == "start":
            sub.add_argument("--port", type=_port, help="listen on this port (default: a free one)")
            sub.add_argument("--fresh", action="store_true", help="wipe existing data first")
            sub.add_argument(
                "--foreground", action="store_true", help="run in this terminal until Ctrl-C"
            )
    _add_kafka_tool_parser(kafka_commands)
    return parser


def _add_kafka_tool_parser(kafka_commands: "argparse._SubParsersAction[Any]") -> None:
    from agent.embedded.kafka_tools import KAFKA_TOOLS  # noqa: PLC0415 - a table, no JVM

    tool = kafka_commands.add_parser(
        "tool",
        help="run one of Kafka's own CLI tools (consumer-groups, topics, configs, ...)",
        description="Run one of Kafka's own command-line tools from the Kafka ksmon cached "
        "(its jars; no Kafka installation needed): `ksmon kafka tool consumer-groups ARGS` is "
        "`kafka-consumer-groups.sh ARGS`. The arguments go to the tool unchanged, and ksmon "
        "exits with the tool's exit code. When the tool talks to brokers, the arguments name "
        "none (no --bootstrap-server) and one local broker of `ksmon kafka start` runs, ksmon "
        "adds `--bootstrap-server <that broker>` and says so on stderr. KAFKA_HEAP_OPTS and "
        "KAFKA_OPTS work as with Kafka's scripts.",
        epilog="tools: " + ", ".join(t.name for t in KAFKA_TOOLS) + " (`--list` says what each "
        "does; `ksmon kafka tool TOOL --help` prints the tool's own help)",
    )
    tool.add_argument("--list", action="store_true", help="list the tools and what each does")
    tool.add_argument(
        "name", nargs="?", metavar="TOOL", help="a tool's name: consumer-groups, topics, ..."
    )
    tool.add_argument(
        "args", nargs=argparse.REMAINDER, metavar="ARGS", help="the tool's own arguments"
    )
    tool.set_defaults(run=_kafka_tool)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _configure_logging(verbose=args.verbose)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    # A shell starts `ksmon demo &` (or anything from a non-interactive script) with SIGINT
    # ignored, and Python then never raises KeyboardInterrupt: Ctrl-C or kill -INT would
    # leave every child running.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return int(args.run(args))
    except KsmonError as e:
        print(f"ksmon: error: {redaction.redact(str(e))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # noqa: BLE001 - a bug: still one line, and never a secret
        if args.verbose:
            trace = "".join(traceback.format_exception(e))
            print(redaction.redact(trace), file=sys.stderr, end="")
        what = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
        print(
            f"ksmon: error: unexpected {redaction.redact(what)}"
            + ("" if args.verbose else " (run with -v for the traceback)"),
            file=sys.stderr,
        )
        return 2


def _configure_logging(*, verbose: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO, format="%(message)s", stream=sys.stderr
    )
    # -v shows kafka-python's debug lines, which print the client config, password included.
    for handler in logging.getLogger().handlers:
        handler.addFilter(RedactSecrets())
    # kafka-python logs every refused connection while a broker starts; only
    # its errors matter to a person at a terminal.
    logging.getLogger("kafka").setLevel(logging.DEBUG if verbose else logging.CRITICAL)
    # The collectors warn for the daemon's log; a one-shot command reports the
    # same failure itself, as its one error line.
    logging.getLogger("agent.collect").setLevel(logging.DEBUG if verbose else logging.ERROR)


def _exit_on_sigterm(_signum: int, _frame: FrameType | None) -> None:
    # Turn SIGTERM into the same orderly unwinding as Ctrl-C, so children stop.
    raise KeyboardInterrupt


def _agent(args: argparse.Namespace) -> int:
    from agent.commands import load_usable_config, run_agent  # noqa: PLC0415

    config = load_usable_config(args.config)
    _configure_daemon_logging(config, verbose=args.verbose)
    run_agent(config)
    return 0


def _configure_daemon_logging(config: "Config", *, verbose: bool) -> None:
    """Structured logs for a daemon (secrets are redacted by the log handler)."""
    from agent import logs  # noqa: PLC0415

    level = "debug" if verbose else config.logging.level
    logs.configure(level=level, json_format=config.logging.format == "json")


# What `pip install 'ksmon[aggregate]'` adds for the job (the agent's commands import none).
_JOB_MODULES = ("pyspark", "numpy", "pandas", "pyarrow", "google.protobuf")


def _missing_job_modules() -> list[str]:
    import importlib.util  # noqa: PLC0415

    missing = []
    for name in _JOB_MODULES:
        try:
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:  # a dotted name whose parent package is missing
            found = False
        if not found:
            missing.append(name.split(".")[-1])
    return missing


def _aggregate(args: argparse.Namespace) -> int:
    missing = _missing_job_modules()
    if missing:
        raise SetupError(
            f"ksmon aggregate needs the job's dependencies ({', '.join(missing)} not "
            "installed): pip install 'ksmon[aggregate]'"
        )
    from agent.aggregation import commands  # noqa: PLC0415 - Spark only when asked for
    from agent.aggregation.outputs.render import events_text  # noqa: PLC0415
    from agent.commands import load_usable_config  # noqa: PLC0415

    config = load_usable_config(args.config)
    if args.replay:
        result = commands.replay_recordings(config, args.replay)
        if args.json:
            for event in result.events:
                print(event.to_json().decode())
        else:
            print(events_text(result.events))
            print(
                f"\n{result.snapshots} snapshots replayed, {len(result.events)} events, "
                f"{len(result.open_findings)} findings open at the end"
            )
        if result.quarantined:
            where = f"; samples in {result.quarantine_file}" if result.quarantine_file else ""
            print(f"ksmon: quarantined {result.quarantined}{where}", file=sys.stderr)
        return 0
    _configure_daemon_logging(config, verbose=args.verbose)
    commands.run_aggregate(config, master=args.master)
    return 0


def _findings(args: argparse.Namespace) -> int:
    from agent.aggregation.commands import open_findings  # noqa: PLC0415
    from agent.aggregation.outputs.render import findings_json, findings_text  # noqa: PLC0415
    from agent.config import load_config  # noqa: PLC0415

    findings = open_findings(load_config(args.config))
    print(findings_json(findings) if args.json else findings_text(findings, time.time()))
    return 0


def _check_config(args: argparse.Namespace) -> int:
    from agent.commands import check_config  # noqa: PLC0415

    print(check_config(args.file))
    return 0


def _snapshot(args: argparse.Namespace) -> int:
    from agent.commands import snapshot_table, snapshot_target, take_snapshot  # noqa: PLC0415

    snapshot = take_snapshot(snapshot_target(args.config, args.bootstrap, args.cluster), args.group)
    print(snapshot.to_json().decode() if args.json else snapshot_table(snapshot))
    return 0


def _explain(args: argparse.Namespace) -> int:
    from agent.commands import explain_group, snapshot_target  # noqa: PLC0415
    from agent.explain.render import render_report  # noqa: PLC0415
    from agent.model.records import to_json_bytes  # noqa: PLC0415

    target = snapshot_target(args.config, args.bootstrap, args.cluster)
    report = explain_group(target, args.group, sample_seconds=args.sample)
    print(to_json_bytes(report).decode() if args.json else render_report(report), end="")
    if args.json:
        print()
    return 0


def _data_dir(args: argparse.Namespace) -> Path:
    from agent.embedded import daemon  # noqa: PLC0415 - keep `ksmon --help` fast

    # Absolute, so the broker's files and the registry name it whatever the cwd.
    given: Path | None = args.data_dir
    return given.expanduser().resolve() if given is not None else daemon.default_data_dir()


def _kafka_start(args: argparse.Namespace) -> int:
    from agent.embedded import daemon  # noqa: PLC0415

    data_dir = _data_dir(args)
    if args.foreground:
        return _run_broker_in_foreground(data_dir, args.port, fresh=args.fresh)
    print(daemon.start(data_dir, args.port, fresh=args.fresh).describe())
    return 0


def _kafka_stop(args: argparse.Namespace) -> int:
    from agent.embedded import daemon  # noqa: PLC0415

    if args.data_dir is not None:
        data_dir = _data_dir(args)
    else:
        running = daemon.running_brokers()
        if not running:
            print(f"Kafka was not running ({daemon.where_looked()})")
            return 0
        if len(running) > 1:
            raise ConfigError(
                f"{len(running)} local brokers run ({_brokers_listing(running)}); "
                "say which to stop with --data-dir"
            )
        data_dir = running[0].data_dir
    stopped = daemon.stop(data_dir)
    if stopped is None:
        print(f"Kafka was not running (looked in {data_dir})")
    else:
        print(f"Kafka stopped (it ran at {stopped.bootstrap_servers}, data dir {data_dir})")
    return 0


def _kafka_status(args: argparse.Namespace) -> int:
    from agent.embedded import daemon  # noqa: PLC0415

    if args.data_dir is not None:
        statuses = [daemon.status(_data_dir(args))]
    else:
        statuses = [daemon.status_of(broker) for broker in daemon.running_brokers()]
        if not statuses:
            print(f"Kafka is not running ({daemon.where_looked()})")
            return 1
    for current in statuses:
        print(current.describe())
    return 0 if all(s.running and s.answering for s in statuses) else 1


def _brokers_listing(brokers: "Sequence[LocalBroker]") -> str:
    return ", ".join(f"{b.record.bootstrap_servers} from {b.data_dir}" for b in brokers)


def _kafka_tool(args: argparse.Namespace) -> int:
    from agent.embedded import kafka_tools  # noqa: PLC0415
    from agent.embedded.kafka import fetch_kafka  # noqa: PLC0415

    if args.list:
        print(kafka_tools.tools_listing())
        return 0
    if args.name is None:
        names = ", ".join(tool.name for tool in kafka_tools.KAFKA_TOOLS)
        raise ConfigError(
            f"name a Kafka tool: ksmon kafka tool TOOL [ARGS...]; known tools: {names}"
        )
    tool = kafka_tools.find_tool(args.name)
    tool_args: list[str] = list(args.args)
    if kafka_tools.lacks_bootstrap(tool, tool_args):
        tool_args = _name_the_local_broker(tool, tool_args)
    return _become(kafka_tools.tool_argv(fetch_kafka(), tool, tool_args))


def _become(argv: list[str]) -> NoReturn:
    """Replace ksmon with ``argv``, as Kafka's scripts `exec` java: the exit code, Ctrl-C
    (the console consumer's way to stop) and stdin are the tool's own, nothing between."""
    import os  # noqa: PLC0415

    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(argv[0], argv)  # noqa: S606 - java with an argument list, never a shell


def _name_the_local_broker(tool: "KafkaTool", tool_args: list[str]) -> list[str]:
    """``tool_args`` naming the local broker when exactly one runs; otherwise unchanged,
    with a line on stderr saying why (the tool then reports the missing option itself)."""
    from agent.embedded import daemon  # noqa: PLC0415
    from agent.embedded.kafka_tools import with_bootstrap  # noqa: PLC0415

    option = tool.bootstrap_option
    running = daemon.running_brokers()
    if len(running) == 1:
        bootstrap = running[0].record.bootstrap_servers
        print(f"ksmon: no {option} given: using the local broker at {bootstrap}", file=sys.stderr)
        return with_bootstrap(tool, tool_args, bootstrap)
    if running:
        why = f"{len(running)} local brokers run ({_brokers_listing(running)}); pass {option}"
    else:
        why = f"no local broker runs ({daemon.where_looked()})"
    print(f"ksmon: no {option} given, and {why}", file=sys.stderr)
    return tool_args


def _run_broker_in_foreground(data_dir: Path, port: int | None, *, fresh: bool) -> int:
    import shutil  # noqa: PLC0415

    from agent.embedded import daemon  # noqa: PLC0415
    from agent.embedded.kafka import EmbeddedKafka, fetch_kafka  # noqa: PLC0415

    if fresh:
        shutil.rmtree(data_dir, ignore_errors=True)
    kafka = EmbeddedKafka(fetch_kafka(), data_dir, port=port)
    kafka.start()
    try:
        # Findable like a detached one: `ksmon kafka status` and `tool` in another terminal.
        daemon.remember(kafka)
        version, address = kafka.distribution.version, kafka.bootstrap_servers
        print(f"Kafka {version} is up at {address}; Ctrl-C stops it")
        while kafka.process.alive:
            time.sleep(1)
        if kafka.process.returncode == 128 + signal.SIGTERM:  # the JVM's exit on SIGTERM
            print("Kafka stopped (by `ksmon kafka stop` or another SIGTERM)")
            return 0
        print(f"ksmon: error: the broker exited; see {kafka.log_path}", file=sys.stderr)
        return 1
    finally:
        kafka.stop()
        daemon.forget(data_dir)


def _demo(_args: argparse.Namespace) -> int:
    from agent.demo.run import run_demo  # noqa: PLC0415

    try:
        run_demo()
    except KeyboardInterrupt:
        print("ksmon demo: stopped; nothing left running", file=sys.stderr)
    return 0
