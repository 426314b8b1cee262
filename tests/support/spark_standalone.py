"""A Spark standalone cluster on this machine, started with pyspark's own launcher
(``bin/spark-class``): one master and its workers on 127.0.0.1, and what a test reads
back from it (the master's JSON page, a driver's event log).

pyspark's pip package is a whole Spark: the classes ``sbin/start-master.sh`` and
``start-worker.sh`` run, without those scripts. Its ``sbin/spark-daemon.sh`` would
detach them (nohup, a pid file); ``spark-class`` runs them in the foreground, so each
daemon is a ``JvmProcess`` of this process (its own process group, killed if the test
runner dies) and a test stops exactly what it started.
"""

import json
import os
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

from agent.embedded.ports import free_port
from agent.embedded.process import JvmProcess, wait_until

SPARK_HOME = Path(pyspark.__file__).parent
LOOPBACK = "127.0.0.1"
# A daemon needs little heap: the master tracks two workers, a worker forks executors.
DAEMON_MEMORY = "256m"


@dataclass
class Worker:
    process: JvmProcess
    web_port: int
    work_dir: Path  # where it starts executors: <work_dir>/<app id>/<executor id>/

    def executors_of(self, app_id: str) -> set[str]:
        """The ids of the executors this worker started for ``app_id``."""
        app = self.work_dir / app_id
        return {p.name for p in app.iterdir() if p.is_dir()} if app.is_dir() else set()


@dataclass
class StandaloneCluster:
    """A master and ``workers`` workers of ``cores`` cores and ``memory`` each."""

    directory: Path
    workers: int = 2
    cores: int = 1
    memory: str = "512m"
    master: JvmProcess | None = None
    master_port: int = 0
    master_web_port: int = 0
    started: list[Worker] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"spark://{LOOPBACK}:{self.master_port}"

    def start(self, timeout: float = 120.0) -> None:
        """Start the master and every worker at once (a worker retries until the master
        listens); return once the master counts them all alive."""
        conf = self.directory / "daemon-conf"
        conf.mkdir(parents=True, exist_ok=True)
        # The master's REST submission server would take the fixed port 6066: off.
        (conf / "spark-defaults.conf").write_text("spark.master.rest.enabled false\n")
        self.master_port, self.master_web_port = free_port(), free_port()
        self.master = self._daemon(
            "spark-master",
            "org.apache.spark.deploy.master.Master",
            ["--host", LOOPBACK, "--port", str(self.master_port)],
            ["--webui-port", str(self.master_web_port)],
        )
        for i in range(1, self.workers + 1):
            web_port, work_dir = free_port(), self.directory / f"worker-{i}"
            process = self._daemon(
                f"spark-worker-{i}",
                "org.apache.spark.deploy.worker.Worker",
                ["--host", LOOPBACK, "--cores", str(self.cores), "--memory", self.memory],
                ["--webui-port", str(web_port), "--work-dir", str(work_dir), self.url],
            )
            self.started.append(Worker(process, web_port, work_dir))
        for process in self.processes():
            process.start()
        wait_until(
            lambda: self.alive_workers() == self.workers,
            timeout=timeout,
            interval=0.5,
            what=f"{self.workers} workers registered with the Spark master at {self.url}",
            abort=self.exited,
        )

    def stop(self) -> None:
        for process in reversed(self.processes()):
            process.stop(timeout=20)

    def processes(self) -> list[JvmProcess]:
        return [*([self.master] if self.master else []), *(w.process for w in self.started)]

    def state(self) -> Mapping[str, object]:
        """The master's JSON page (its web UI's ``/json/``): workers, applications."""
        url = f"http://{LOOPBACK}:{self.master_web_port}/json/"
        with urllib.request.urlopen(url, timeout=5) as response:
            return dict(json.load(response))

    def alive_workers(self) -> int:
        try:
            alive = self.state().get("aliveworkers", 0)
        except (OSError, ValueError):
            return 0  # not listening (or answering) yet
        return alive if isinstance(alive, int) else 0

    def exited(self) -> str | None:
        for process in self.processes():
            if process.returncode is not None:
                return (
                    f"{process.name} exited with {process.returncode}; its log "
                    f"{process.log_path} ends:\n{process.log_tail()}"
                )
        return None

    def driver_env(self, executor_memory: str = "512m") -> dict[str, str]:
        """The environment of a driver process (``ksmon aggregate --master``) for this
        cluster: Spark's launcher reads ``spark-defaults.conf`` from ``SPARK_CONF_DIR``,
        so the job's own session settings stay as they are. The driver listens on
        127.0.0.1, waits for every worker's executor before its first job, and writes
        an event log (``event_logs``) that tells where each task ran."""
        conf = self.directory / "driver-conf"
        conf.mkdir(parents=True, exist_ok=True)
        self.event_logs.mkdir(parents=True, exist_ok=True)
        settings = {
            "spark.driver.host": LOOPBACK,
            "spark.driver.bindAddress": LOOPBACK,
            "spark.executor.memory": executor_memory,
            "spark.scheduler.minRegisteredResourcesRatio": "1.0",
            "spark.eventLog.enabled": "true",
            "spark.eventLog.dir": self.event_logs.as_uri(),
            "spark.eventLog.compress": "false",
            "spark.eventLog.rolling.enabled": "false",
        }
        (conf / "spark-defaults.conf").write_text(
            "".join(f"{key} {value}\n" for key, value in settings.items())
        )
        return {**os.environ, "SPARK_CONF_DIR": str(conf), "SPARK_LOCAL_IP": LOOPBACK}

    @property
    def event_logs(self) -> Path:
        return self.directory / "event-logs"

    def describe(self) -> str:
        """Each daemon's log tail, for a failure message."""
        return "\n".join(f"--- {p.name}:\n{p.log_tail(10)}" for p in self.processes())

    def _daemon(self, name: str, main_class: str, args: list[str], more: list[str]) -> JvmProcess:
        env = {
            **os.environ,
            "SPARK_HOME": str(SPARK_HOME),
            "SPARK_CONF_DIR": str(self.directory / "daemon-conf"),
            "SPARK_DAEMON_MEMORY": DAEMON_MEMORY,
            "SPARK_LOCAL_IP": LOOPBACK,
            # Executors (and their RocksDB working copies) scratch here, not in /tmp.
            "SPARK_LOCAL_DIRS": str(self.directory / "local"),
        }
        return JvmProcess(
            name,
            [str(SPARK_HOME / "bin" / "spark-class"), main_class, *args, *more],
            self.directory / "logs" / f"{name}.log",
            env=env,
            cwd=self.directory,
        )


@dataclass(frozen=True)
class StatefulTask:
    """A task of the stateful operator that finished, from a driver's event log."""

    app: str  # the application id (one per driver run)
    stage: int
    partition: int  # the shuffle partition: which part of the state it kept
    executor: str
    updated_state_rows: int


def stateful_tasks(event_logs: Path) -> list[StatefulTask]:
    """The finished tasks of every stage that ran the stateful operator
    (``transformWithStateInPandas``), in every finished application's event log."""
    found = []
    for path in sorted(event_logs.iterdir()):
        if path.name.startswith(".") or path.suffix == ".inprogress":
            continue  # a checksum, or a driver still running (its log is not complete)
        app, stages = "", set()
        with path.open(encoding="utf-8") as lines:
            for line in lines:
                event = json.loads(line)
                kind = event["Event"]
                if kind == "SparkListenerApplicationStart":
                    app = event["App ID"]
                elif kind == "SparkListenerStageSubmitted" and _runs_stateful_operator(event):
                    stages.add(event["Stage Info"]["Stage ID"])
                elif (
                    kind == "SparkListenerTaskEnd"
                    and event["Stage ID"] in stages
                    and event["Task End Reason"]["Reason"] == "Success"
                ):
                    info = event["Task Info"]
                    metrics = {a.get("Name"): a.get("Update") for a in info["Accumulables"]}
                    found.append(
                        StatefulTask(
                            app=app,
                            stage=event["Stage ID"],
                            partition=info["Partition ID"],
                            executor=info["Executor ID"],
                            updated_state_rows=int(metrics.get("number of updated state rows", 0)),
                        )
                    )
    return found


def _runs_stateful_operator(event: Mapping[str, object]) -> bool:
    """Whether a submitted stage holds the operator's RDD: each RDD names the plan node
    that made it in its scope (``TransformWithStateInPySpark`` in Spark 4.2)."""
    stage = event["Stage Info"]
    assert isinstance(stage, dict)
    scopes = [json.loads(rdd["Scope"]) for rdd in stage["RDD Info"] if rdd.get("Scope")]
    return any(str(scope.get("name", "")).startswith("TransformWithState") for scope in scopes)
