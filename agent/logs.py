"""Logging for ksmon's processes: JSON lines for daemons, plain text for people.

Every record passes ``RedactSecrets``, which blanks every secret the process
holds (``agent.redaction``) from the message, the traceback and the stack
dump, because libraries log more than they should: kafka-python prints its
whole client configuration at DEBUG level, passwords included. Exceptions
that kill a thread are logged the same way instead of printed raw.
"""

import json
import logging
import os
import sys
import threading
import time
import traceback

from agent import redaction


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            entry["exception"] = record.exc_text
        if record.stack_info:
            entry["stack"] = record.stack_info
        return json.dumps(entry, ensure_ascii=False)


class RedactSecrets(logging.Filter):
    """Blanks secrets in the message and, rendered to text first, the traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):  # a library's bad format string; keep it as written
            message = str(record.msg)
        redacted = redaction.redact(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        if record.exc_info and record.exc_info[1] is not None:
            # Rendered here, so the text a handler prints is the redacted one
            # (chained causes included: their messages may hold a secret too).
            record.exc_text = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
            record.exc_info = None
        if record.exc_text:
            record.exc_text = redaction.redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redaction.redact(record.stack_info)
        return True


class QuietPy4J(logging.Filter):
    """py4j logs every command its connection to Spark's JVM could not send through the
    root logger (``logging.info``, not its own), with a traceback: at a stop, once per
    call still under way. The job says what matters itself; a debug log keeps them."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.name == "root" and f"{os.sep}py4j{os.sep}" in record.pathname)


def configure(*, level: str = "info", json_format: bool) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if json_format else logging.Formatter("%(message)s"))
    handler.addFilter(RedactSecrets())
    if level != "debug":
        handler.addFilter(QuietPy4J())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    # kafka-python reports every refused connection and retry; ksmon reports what matters.
    # During a broker outage it logs a lost connection every few milliseconds,
    # with tracebacks; the poller's one warning per failed poll says it better.
    logging.getLogger("kafka").setLevel(logging.DEBUG if level == "debug" else logging.CRITICAL)
    # APScheduler warns at every run skipped behind a slow poll; the scheduler says it once.
    logging.getLogger("apscheduler").setLevel(logging.ERROR)
    # The one-shot CLI quiets the collectors; a daemon wants their warnings.
    logging.getLogger("agent.collect").setLevel(logging.NOTSET)
    threading.excepthook = log_thread_exception


def log_thread_exception(args: threading.ExceptHookArgs) -> None:
    """A thread died: say so through logging (redacted, JSON), not as a raw traceback."""
    if args.exc_type is SystemExit or args.exc_value is None:
        return
    name = args.thread.name if args.thread is not None else "?"
    logging.getLogger("ksmon").error(
        "thread %s died", name, exc_info=(args.exc_type, args.exc_value, args.exc_traceback)
    )
