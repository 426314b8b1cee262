"""Logging for ksmon's processes: JSON lines for daemons, plain text for people.

Every record passes a filter that blanks out the configured secrets, because
libraries log more than they should (kafka-python prints its whole client
configuration at DEBUG level, passwords included).
"""

import json
import logging
import sys
import time
from collections.abc import Iterable


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


class RedactSecrets(logging.Filter):
    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        self.secrets = sorted({s for s in secrets if len(s) >= 3}, key=len, reverse=True)  # noqa: PLR2004

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.secrets:
            return True
        message = record.getMessage()
        redacted = message
        for secret in self.secrets:
            redacted = redacted.replace(secret, "***")
        if redacted != message:
            record.msg, record.args = redacted, None
        if record.exc_info and record.exc_info[1] is not None:
            text = str(record.exc_info[1])
            if any(s in text for s in self.secrets):
                record.exc_info = None
                record.msg = f"{record.msg} (exception details withheld: they contained a secret)"
        return True


def configure(*, level: str = "info", json_format: bool, secrets: Iterable[str] = ()) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if json_format else logging.Formatter("%(message)s"))
    handler.addFilter(RedactSecrets(secrets))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    # kafka-python reports every refused connection and retry; ksmon reports what matters.
    # During a broker outage it logs a lost connection every few milliseconds,
    # with tracebacks; the poller's one warning per failed poll says it better.
    logging.getLogger("kafka").setLevel(logging.DEBUG if level == "debug" else logging.CRITICAL)
    logging.getLogger("apscheduler").setLevel(logging.WARNING)
    # The one-shot CLI quiets the collectors; a daemon wants their warnings.
    logging.getLogger("agent.collect").setLevel(logging.NOTSET)
