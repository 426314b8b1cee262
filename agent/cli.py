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
from typing import TYPE_CHECKING

from agent import __version__, redaction
from agent.errors import KsmonError
from agent.logs import RedactSecrets

if TYPE_CHECKING:
    from agent.config import Config

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

    kafka = commands.add_parser("kafka", help="a local single-node Kafka for trying ksmon out")
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
            help="where the broker keeps its data (default: ~/.local/state/ksmon/kafka)",
        )
        sub.set_defaults(run=run)
        if name == "start":
            sub.add_argument("--port", type=_port, help="listen on this port (default: a free one)")
            sub.add_argument("--fresh", action="store_true", help="wipe existing data first")
            sub.add_argument(
                "--foreground", action="store_true", help="run in this terminal until Ctrl-C"
            )
    return parser


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


def _aggregate(args: argparse.Namespace) -> int:
    from agent.aggregation import commands  # noqa: PLC0415 - Spark only when asked for
    from agent.aggregation.render import events_text  # noqa: PLC0415
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
    from agent.aggregation.render import findings_json, findings_text  # noqa: PLC0415
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

    return args.data_dir if args.data_dir is not None else daemon.default_data_dir()


def _kafka_start(args: argparse.Namespace) -> int:
    from agent.embedded import daemon  # noqa: PLC0415

    data_dir = _data_dir(args)
    if args.foreground:
        return _run_broker_in_foreground(data_dir, args.port, fresh=args.fresh)
    print(daemon.start(data_dir, args.port, fresh=args.fresh).describe())
    return 0


def _kafka_stop(args: argparse.Namespace) -> int:
    from agent.embedded import daemon  # noqa: PLC0415

    stopped = daemon.stop(_data_dir(args))
    print("Kafka stopped" if stopped else "Kafka was not running")
    return 0


def _kafka_status(args: argparse.Namespace) -> int:
    from agent.embedded import daemon  # noqa: PLC0415

    current = daemon.status(_data_dir(args))
    print(current.describe())
    return 0 if current.running and current.answering else 1


def _run_broker_in_foreground(data_dir: Path, port: int | None, *, fresh: bool) -> int:
    import shutil  # noqa: PLC0415

    from agent.embedded.kafka import EmbeddedKafka, fetch_kafka  # noqa: PLC0415

    if fresh:
        shutil.rmtree(data_dir, ignore_errors=True)
    kafka = EmbeddedKafka(fetch_kafka(), data_dir, port=port)
    kafka.start()
    try:
        version, address = kafka.distribution.version, kafka.bootstrap_servers
        print(f"Kafka {version} is up at {address}; Ctrl-C stops it")
        while kafka.process.alive:
            time.sleep(1)
        print(f"ksmon: error: the broker exited; see {kafka.log_path}", file=sys.stderr)
        return 1
    finally:
        kafka.stop()


def _demo(_args: argparse.Namespace) -> int:
    from agent.demo.run import run_demo  # noqa: PLC0415

    try:
        run_demo()
    except KeyboardInterrupt:
        print("ksmon demo: stopped; nothing left running", file=sys.stderr)
    return 0
