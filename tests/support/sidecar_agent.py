"""``ksmon agent`` in sidecar mode as a real process next to one fixture app instance, and
its /metrics read back by family."""

import signal
import subprocess
import sys
import textwrap
import urllib.request
from collections.abc import Callable
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.ports import free_port
from agent.embedded.process import wait_until
from agent.embedded.streams_app import StreamsAppInstance
from agent.model import Snapshot
from agent.transport.spool import read_spool

ROOT = Path(__file__).resolve().parents[2]

Samples = dict[str, list[tuple[dict[str, str], float]]]


class SidecarAgent:
    """``ksmon agent`` in sidecar mode, as a real process next to one app instance."""

    def __init__(
        self,
        kafka: EmbeddedKafka,
        app: str,
        instance: StreamsAppInstance,
        work: Path,
        *,
        expected_stream_threads: int = 2,
    ) -> None:
        self.port = free_port()
        self.spool = work / "spool"
        self.log = work / "agent.log"
        config = work / "sidecar.yaml"
        config.write_text(
            textwrap.dedent(
                f"""\
                agent: {{id: sidecar-test, mode: sidecar}}
                http: {{listen: "127.0.0.1:{self.port}"}}
                clusters:
                  - name: local
                    bootstrap_servers: ["{kafka.bootstrap_servers}"]
                    poll: {{offsets_interval: 1s, metadata_interval: 5s, request_timeout: 5s}}
                sink:
                  type: spool
                  spool: {{directory: {self.spool}, rotate_interval: 1s}}
                sidecar:
                  application_id: {app}
                  app_metrics_url: "{instance.metrics_url}"
                  state_dir: {instance.state_dir}
                  expected_stream_threads: {expected_stream_threads}
                """
            )
        )
        with self.log.open("w") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "agent", "agent", "--config", str(config)],
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=ROOT,
            )

    def metrics(self) -> Samples:
        """The agent's /metrics by name; empty while it does not answer yet."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as r:
                text = r.read().decode()
        except OSError:
            return {}
        values: Samples = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                values.setdefault(sample.name, []).append((sample.labels, sample.value))
        return values

    def wait_for(self, what: str, condition: Callable[[Samples], bool]) -> Samples:
        seen: list[Samples] = []

        def holds() -> bool:
            seen.append(self.metrics())
            return condition(seen[-1])

        wait_until(holds, timeout=60, what=what, abort=self._exited)
        return seen[-1]

    def snapshots(self) -> list[Snapshot]:
        return [Snapshot.from_json(line) for line in read_spool(self.spool)]

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=30)

    def _exited(self) -> str | None:
        code = self.process.poll()
        return None if code is None else f"the agent exited ({code}): {self.log.read_text()}"


def value(metrics: Samples, name: str) -> float | None:
    samples = metrics.get(name, [])
    return samples[0][1] if len(samples) == 1 else None
