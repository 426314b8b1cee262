"""A real single-node Apache Kafka (KRaft, broker and controller in one JVM) on 127.0.0.1.

The jars are the official artifacts from Maven Central, resolved by Maven into
ksmon's cache directory and pinned by version. Example::

    kafka = EmbeddedKafka(fetch_kafka(), Path("/tmp/k"))
    kafka.start()          # formats storage on first use, waits for the Admin API
    print(kafka.bootstrap_servers)
    kafka.stop()
"""

import base64
import dataclasses
import json
import logging
import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from agent.embedded.cache import cache_dir, ensure_built
from agent.embedded.java import JavaRuntime, find_java
from agent.embedded.maven import run_maven
from agent.embedded.ports import LOOPBACK, ensure_free, free_port, is_listening
from agent.embedded.process import JvmProcess, wait_until
from agent.errors import SetupError

log = logging.getLogger(__name__)

# The newest stable Kafka 4.x whose broker, tools and streams artifacts are all
# on Maven Central (4.4.0 publishes no kafka-streams or kafka-tools there).
KAFKA_VERSION = "4.3.1"
LOG4J_VERSION = "2.25.3"


def resource_text(name: str) -> str:
    return (resources.files("agent.embedded") / "resources" / name).read_text()


def resource_path(name: str) -> Path:
    """A packaged resource as a real file (copied into the cache when the package is zipped)."""
    source = resources.files("agent.embedded") / "resources" / name
    if isinstance(source, Path):
        return source
    target = cache_dir() / "resources" / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(source.read_text())
    return target


@dataclass(frozen=True)
class KafkaDistribution:
    """Kafka's jars in the cache, and the Java that runs them."""

    version: str
    libs: Path
    java: JavaRuntime

    @property
    def classpath(self) -> str:
        return f"{self.libs}/*"

    def java_argv(
        self, main_class: str, args: Sequence[str], *, jvm_options: Sequence[str] = ()
    ) -> list[str]:
        return [str(self.java.executable), *jvm_options, "-cp", self.classpath, main_class, *args]

    def run_tool(
        self, main_class: str, args: Sequence[str], *, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        """Run one of Kafka's CLI tools (``ConsumerGroupCommand``, say); stdout is its answer."""
        argv = self.java_argv(
            main_class,
            args,
            jvm_options=[
                "-Xmx256m",
                f"-Dlog4j2.configurationFile={resource_path('log4j2-tools.xml')}",
            ],
        )
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)


def fetch_kafka(version: str = KAFKA_VERSION) -> KafkaDistribution:
    """Kafka ``version``'s jars, fetched from Maven Central into the cache on first use."""
    java = find_java()

    def download(scratch: Path) -> None:
        pom = scratch / "pom.xml"
        pom.write_text(
            resource_text("kafka-runtime.pom.xml")
            .replace("@KAFKA_VERSION@", version)
            .replace("@LOG4J_VERSION@", LOG4J_VERSION)
        )
        run_maven(
            pom,
            ["dependency:copy-dependencies"],
            {"outputDirectory": str(scratch / "libs"), "includeScope": "runtime"},
            purpose=f"fetching Kafka {version}",
        )
        pom.unlink()

    home = ensure_built(cache_dir() / "kafka" / version, download)
    return KafkaDistribution(version=version, libs=home / "libs", java=java)


@dataclass(frozen=True)
class BrokerMeta:
    """What a formatted data directory must remember: its cluster id and its ports
    (the KRaft voter set records the controller's address at format time)."""

    cluster_id: str
    port: int
    controller_port: int
    kafka_version: str
    sasl_port: int | None = None
    sasl_ssl_port: int | None = None
    oauth_port: int | None = None

    @classmethod
    def load(cls, path: Path) -> "BrokerMeta | None":
        if not path.is_file():
            return None
        try:
            raw = json.loads(path.read_text())
            meta = cls(**raw)
        except (OSError, ValueError, TypeError) as e:
            raise SetupError(f"{path} is unreadable ({e}); remove {path.parent}") from e
        if not (isinstance(meta.port, int) and isinstance(meta.controller_port, int)):
            raise SetupError(f"{path} has non-numeric ports; remove {path.parent}")
        return meta


# SCRAM user names and passwords travel in kafka-storage's --add-scram argument,
# whose syntax gives ',', '[', ']', '=' and quotes a meaning.
_SCRAM_TEXT = re.compile(r"[A-Za-z0-9._-]+")


@dataclass(frozen=True)
class SaslSslListener:
    """An optional SASL_SSL listener with SCRAM-SHA-512 logins, for security tests.

    ``key_store`` is a PEM file holding the broker's private key (PKCS#8, not
    encrypted) and its certificate chain. ``scram_users`` (name -> password)
    are created when the storage is formatted, so they exist from the first
    start; a data directory formatted without them never gets them.
    """

    key_store: Path
    scram_users: Mapping[str, str]

    def __post_init__(self) -> None:
        for text in (*self.scram_users, *self.scram_users.values()):
            if not _SCRAM_TEXT.fullmatch(text):
                raise SetupError(
                    f"SCRAM user names and passwords of the embedded broker must be letters, "
                    f"digits, '.', '_' or '-'; got {len(text)} other characters"
                )


@dataclass(frozen=True)
class OAuthListener:
    """An optional SASL_PLAINTEXT listener named OAUTH with OAUTHBEARER logins, validated
    by Kafka's own OIDC validator against ``jwks_url`` (which must answer before the
    broker starts) and ``audience``; a token's ``sub`` is its principal."""

    jwks_url: str
    audience: str


ANONYMOUS = "User:ANONYMOUS"  # the principal of PLAINTEXT (and CONTROLLER) connections


def _new_cluster_id() -> str:
    # Kafka's Uuid string form: 16 random bytes, URL-safe base64 without padding;
    # Kafka never hands out ids that start with '-' (they read as CLI flags).
    while True:
        cluster_id = base64.urlsafe_b64encode(os.urandom(16)).rstrip(b"=").decode()
        if not cluster_id.startswith("-"):
            return cluster_id


class EmbeddedKafka:
    """One local KRaft broker whose data lives in ``data_dir``.

    Ports are chosen on first start and remembered in the data directory, so a
    stop and start (a broker restart in a fault test) keeps the same address.
    """

    META_FILE = "ksmon-broker.json"

    def __init__(
        self,
        distribution: KafkaDistribution,
        data_dir: Path,
        *,
        port: int | None = None,
        heap_mb: int = 512,
        overrides: Mapping[str, str] | None = None,
        sasl_plain_users: Mapping[str, str] | None = None,
        sasl_ssl: SaslSslListener | None = None,
        oauth: OAuthListener | None = None,
        super_users: Sequence[str] | None = None,
        die_with_parent: bool = True,
    ) -> None:
        self.distribution = distribution
        self.data_dir = data_dir
        self.heap_mb = heap_mb
        self.overrides = dict(overrides or {})
        meta = BrokerMeta.load(data_dir / self.META_FILE)
        if meta and port is not None and port != meta.port:
            raise SetupError(
                f"{data_dir} holds a broker formatted for port {meta.port}, not {port}; "
                "use that port or start fresh"
            )
        self.cluster_id = meta.cluster_id if meta else _new_cluster_id()
        self.port = meta.port if meta else (port or free_port())
        self.controller_port = meta.controller_port if meta else free_port()
        # An optional second listener, SASL_PLAINTEXT with PLAIN users, for auth tests.
        self.sasl_plain_users = dict(sasl_plain_users or {})
        self.sasl_port: int | None = None
        if self.sasl_plain_users:
            self.sasl_port = meta.sasl_port if meta and meta.sasl_port else free_port()
        # An optional SASL_SSL listener with SCRAM-SHA-512 users, for TLS tests.
        self.sasl_ssl = sasl_ssl
        self.sasl_ssl_port: int | None = None
        if sasl_ssl is not None:
            self.sasl_ssl_port = meta.sasl_ssl_port if meta and meta.sasl_ssl_port else free_port()
        # An optional OAUTHBEARER listener, for OAuth tests.
        self.oauth = oauth
        self.oauth_port: int | None = None
        if oauth is not None:
            self.oauth_port = meta.oauth_port if meta and meta.oauth_port else free_port()
        # With super users, the broker authorizes with ACLs (KRaft StandardAuthorizer):
        # PLAINTEXT (ANONYMOUS) stays unrestricted, the named principals too, and
        # every other principal gets exactly the ACLs granted to it.
        self.super_users = (ANONYMOUS, *super_users) if super_users is not None else None
        self.process = JvmProcess(
            f"kafka broker :{self.port}",
            self._broker_argv(),
            data_dir / "logs" / "broker.log",
            die_with_parent=die_with_parent,
        )

    @property
    def bootstrap_servers(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    @property
    def properties_path(self) -> Path:
        return self.data_dir / "server.properties"

    @property
    def log_path(self) -> Path:
        return self.process.log_path

    @property
    def sasl_bootstrap_servers(self) -> str | None:
        return f"{LOOPBACK}:{self.sasl_port}" if self.sasl_port else None

    @property
    def sasl_ssl_bootstrap_servers(self) -> str | None:
        return f"{LOOPBACK}:{self.sasl_ssl_port}" if self.sasl_ssl_port else None

    @property
    def oauth_bootstrap_servers(self) -> str | None:
        return f"{LOOPBACK}:{self.oauth_port}" if self.oauth_port else None

    def server_properties(self) -> dict[str, str]:
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.bootstrap.servers": f"{LOOPBACK}:{self.controller_port}",
            "listeners": (
                f"PLAINTEXT://{LOOPBACK}:{self.port},CONTROLLER://{LOOPBACK}:{self.controller_port}"
            ),
            "advertised.listeners": f"PLAINTEXT://{LOOPBACK}:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.data_dir / "log"),
            # A single node cannot hold three replicas of the internal topics.
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            # Groups form at once instead of after the default 3 s delay.
            "group.initial.rebalance.delay.ms": "0",
        }
        if self.sasl_port:
            props["listeners"] += f",SASL_PLAINTEXT://{LOOPBACK}:{self.sasl_port}"
            props["advertised.listeners"] += f",SASL_PLAINTEXT://{LOOPBACK}:{self.sasl_port}"
            props["listener.security.protocol.map"] += ",SASL_PLAINTEXT:SASL_PLAINTEXT"
            props["sasl.enabled.mechanisms"] = "PLAIN"
            users = " ".join(f'user_{u}="{p}"' for u, p in self.sasl_plain_users.items())
            props["listener.name.sasl_plaintext.plain.sasl.jaas.config"] = (
                f"org.apache.kafka.common.security.plain.PlainLoginModule required {users};"
            )
        if self.sasl_ssl is not None and self.sasl_ssl_port:
            props["listeners"] += f",SASL_SSL://{LOOPBACK}:{self.sasl_ssl_port}"
            props["advertised.listeners"] += f",SASL_SSL://{LOOPBACK}:{self.sasl_ssl_port}"
            props["listener.security.protocol.map"] += ",SASL_SSL:SASL_SSL"
            listener = "listener.name.sasl_ssl"
            props[f"{listener}.sasl.enabled.mechanisms"] = "SCRAM-SHA-512"
            props[f"{listener}.scram-sha-512.sasl.jaas.config"] = (
                "org.apache.kafka.common.security.scram.ScramLoginModule required;"
            )
            props[f"{listener}.ssl.keystore.type"] = "PEM"
            props[f"{listener}.ssl.keystore.location"] = str(self.sasl_ssl.key_store)
        if self.oauth is not None and self.oauth_port:
            props["listeners"] += f",OAUTH://{LOOPBACK}:{self.oauth_port}"
            props["advertised.listeners"] += f",OAUTH://{LOOPBACK}:{self.oauth_port}"
            props["listener.security.protocol.map"] += ",OAUTH:SASL_PLAINTEXT"
            mechanism = "listener.name.oauth.oauthbearer"
            props["listener.name.oauth.sasl.enabled.mechanisms"] = "OAUTHBEARER"
            props[f"{mechanism}.sasl.jaas.config"] = (
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"
            )
            props[f"{mechanism}.sasl.server.callback.handler.class"] = (
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
            )
            props[f"{mechanism}.sasl.oauthbearer.jwks.endpoint.url"] = self.oauth.jwks_url
            props[f"{mechanism}.sasl.oauthbearer.expected.audience"] = self.oauth.audience
        if self.super_users is not None:
            props["authorizer.class.name"] = (
                "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
            )
            props["super.users"] = ";".join(self.super_users)
        props.update(self.overrides)
        return props

    def start(self, timeout: float = 90.0) -> None:
        """Format storage on first use, start the JVM, and wait until the Admin API answers."""
        self.launch()
        self.wait_ready(timeout)

    def launch(self) -> None:
        """Start the JVM without waiting, so other JVMs can boot alongside it."""
        if self.process.alive:
            return
        ensure_free(self.port, "the embedded Kafka broker")
        ensure_free(self.controller_port, "the embedded Kafka controller")
        if self.sasl_port:
            ensure_free(self.sasl_port, "the embedded Kafka SASL listener")
        if self.sasl_ssl_port:
            ensure_free(self.sasl_ssl_port, "the embedded Kafka SASL_SSL listener")
        if self.oauth_port:
            ensure_free(self.oauth_port, "the embedded Kafka OAUTHBEARER listener")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.properties_path.write_text(
            "".join(f"{key}={value}\n" for key, value in self.server_properties().items())
        )
        if not (self.data_dir / self.META_FILE).is_file():
            self._format()
        self.process.start()

    def wait_ready(self, timeout: float = 90.0) -> None:
        """Wait until the launched broker answers; kill it and explain if it never does."""
        try:
            wait_until(
                self.answers,
                timeout=timeout,
                what=f"the Kafka broker on {self.bootstrap_servers} to answer",
                interval=0.25,
                abort=self._died,
            )
        except (TimeoutError, RuntimeError) as e:
            self.process.kill()
            raise SetupError(
                f"{e}; last lines of {self.log_path}:\n{self.process.log_tail()}"
            ) from e
        log.info("Kafka %s is up on %s", self.distribution.version, self.bootstrap_servers)

    def stop(self, timeout: float = 30.0) -> None:
        self.process.stop(timeout)

    def kill(self) -> None:
        self.process.kill()

    def answers(self) -> bool:
        """True when the broker's Admin API answers DescribeCluster with a live broker."""
        if not is_listening(self.port):
            return False
        return admin_answers(self.bootstrap_servers)

    def _died(self) -> str | None:
        if self.process.alive:
            return None
        tail = self.process.log_tail(40)
        if "Address already in use" in tail:
            return "a port it needs was taken while it started (Address already in use)"
        return f"the broker JVM exited with code {self.process.returncode}"

    def _broker_argv(self) -> list[str]:
        return self.distribution.java_argv(
            "kafka.Kafka",
            [str(self.properties_path)],
            jvm_options=[
                f"-Xms{min(256, self.heap_mb)}m",
                f"-Xmx{self.heap_mb}m",
                "-XX:+UseG1GC",
                "-Djava.awt.headless=true",
                f"-Dlog4j2.configurationFile={resource_path('log4j2-broker.xml')}",
                f"-Dkafka.logs.dir={self.data_dir / 'logs'}",
                # Kafka fetches JWKS only from URLs this property lists.
                *(
                    [f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={self.oauth.jwks_url}"]
                    if self.oauth is not None
                    else []
                ),
            ],
        )

    def _format(self) -> None:
        scram = [
            arg
            for user, password in (self.sasl_ssl.scram_users.items() if self.sasl_ssl else ())
            for arg in ("--add-scram", f"SCRAM-SHA-512=[name={user},password={password}]")
        ]
        argv = self.distribution.java_argv(
            "kafka.tools.StorageTool",
            [
                "format",
                "-t",
                self.cluster_id,
                "-c",
                str(self.properties_path),
                "--standalone",
                *scram,
            ],
            jvm_options=[
                "-Xmx256m",
                f"-Dlog4j2.configurationFile={resource_path('log4j2-tools.xml')}",
            ],
        )
        result = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
        if result.returncode != 0:
            raise SetupError(
                f"formatting Kafka storage in {self.data_dir} failed (exit {result.returncode}): "
                f"{(result.stderr or result.stdout).strip()[-500:]}"
            )
        meta = BrokerMeta(
            self.cluster_id,
            self.port,
            self.controller_port,
            self.distribution.version,
            self.sasl_port,
            self.sasl_ssl_port,
            self.oauth_port,
        )
        (self.data_dir / self.META_FILE).write_text(json.dumps(dataclasses.asdict(meta)))


def admin_answers(bootstrap_servers: str, timeout_ms: int = 3000) -> bool:
    """True if a Kafka Admin client can bootstrap and DescribeCluster returns a broker."""
    from kafka.admin import KafkaAdminClient  # noqa: PLC0415 - kafka-python is slow to import

    try:
        admin = KafkaAdminClient(
            bootstrap_servers=bootstrap_servers,
            client_id="ksmon-probe",
            bootstrap_timeout_ms=timeout_ms,
            request_timeout_ms=timeout_ms,
        )
    except Exception:  # noqa: BLE001 - any failure to bootstrap means "not answering yet"
        return False
    try:
        cluster = admin.describe_cluster()
        return bool(cluster.get("brokers"))
    except Exception:  # noqa: BLE001
        return False
    finally:
        admin.close()
