"""Session-wide real components: one Kafka broker, one fixture-app build, one Spark session."""

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from agent.collect.kafka_edge import KafkaEdge
from agent.embedded.kafka import (
    EmbeddedKafka,
    KafkaDistribution,
    OAuthListener,
    SaslSslListener,
    fetch_kafka,
)
from agent.embedded.streams_app import (
    KAFKA_STREAMS_3X_VERSION,
    StreamsAppBuild,
    build_streams_app,
)
from agent.errors import KsmonError
from tests.support.environment import unavailable
from tests.support.oidc import AUDIENCE, OAUTH_CLIENTS, OidcProvider
from tests.support.secure import SCRAM_USERS, SUPER_USER, SecureListener
from tests.support.streams import StreamsApps
from tests.support.tls import BrokerTlsFiles, make_broker_tls

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# A PLAIN user on the session broker's SASL_PLAINTEXT listener (kafka.sasl_bootstrap_servers).
SASL_USER = "ksmon"
SASL_PASSWORD = "ksmon-test-secret"  # noqa: S105 - a throwaway credential of the test broker


@pytest.fixture(scope="session")
def kafka_distribution() -> KafkaDistribution:
    try:
        return fetch_kafka()
    except KsmonError as e:
        unavailable("Kafka (from Maven Central)", e)


@pytest.fixture(scope="session")
def broker_tls(tmp_path_factory: pytest.TempPathFactory) -> BrokerTlsFiles:
    """The session's test CA, the broker's certificate (127.0.0.1 only), an unrelated CA."""
    return make_broker_tls(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="session")
def oidc() -> Iterator[OidcProvider]:
    """The session's OpenID Connect provider on 127.0.0.1 (tokens, JWKS) for the broker's
    OAUTHBEARER listener: up before the broker, which fetches its JWKS at start."""
    provider = OidcProvider(OAUTH_CLIENTS).start()
    yield provider
    provider.stop()


@pytest.fixture(scope="session")
def kafka(
    kafka_distribution: KafkaDistribution,
    broker_tls: BrokerTlsFiles,
    oidc: OidcProvider,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[EmbeddedKafka]:
    """The session's single real broker (KRaft, 127.0.0.1, a free port).

    Listeners: PLAINTEXT (what most tests use, unrestricted), SASL_PLAINTEXT
    with PLAIN users, SASL_SSL with SCRAM-SHA-512 users (``secure_listener``), and
    OAUTH (SASL_PLAINTEXT, OAUTHBEARER tokens of ``oidc``).
    An ACL authorizer runs, but the PLAINTEXT principal and ``ksmon`` are super
    users: only the SCRAM principals of ``tests.support.secure`` are restricted.
    """
    broker = EmbeddedKafka(
        kafka_distribution,
        tmp_path_factory.mktemp("kafka"),
        sasl_plain_users={SASL_USER: SASL_PASSWORD},
        sasl_ssl=SaslSslListener(broker_tls.key_store, SCRAM_USERS),
        oauth=OAuthListener(oidc.jwks_url, AUDIENCE),
        super_users=[f"User:{SUPER_USER}"],
    )
    try:
        broker.start()
    except KsmonError as e:
        unavailable("the embedded Kafka broker", e)
    yield broker
    broker.stop()


@pytest.fixture
def edge(kafka: EmbeddedKafka) -> Iterator[KafkaEdge]:
    """The agent's Admin connection to the session broker."""
    edge = KafkaEdge({"bootstrap_servers": kafka.bootstrap_servers, "client_id": "ksmon-test"})
    yield edge
    edge.close()


@pytest.fixture(scope="session")
def secure_listener(kafka: EmbeddedKafka, broker_tls: BrokerTlsFiles) -> SecureListener:
    """The session broker's SASL_SSL/SCRAM-SHA-512 listener."""
    assert kafka.sasl_ssl_bootstrap_servers is not None
    return SecureListener(
        kafka.sasl_ssl_bootstrap_servers, broker_tls.ca_file, broker_tls.other_ca_file
    )


@pytest.fixture(scope="session")
def streams_app_build(kafka_distribution: KafkaDistribution) -> StreamsAppBuild:
    try:
        return build_streams_app(kafka_version=kafka_distribution.version)
    except KsmonError as e:
        unavailable("the Kafka Streams fixture app build", e)


@pytest.fixture(scope="session")
def streams_app_build_3x(streams_app_build: StreamsAppBuild) -> StreamsAppBuild:
    """The fixture app built against Kafka Streams 3.x (it talks to the 4.x broker)."""
    try:
        return build_streams_app(kafka_version=KAFKA_STREAMS_3X_VERSION)
    except KsmonError as e:
        unavailable(f"the Kafka Streams fixture app build for Kafka {KAFKA_STREAMS_3X_VERSION}", e)


@pytest.fixture
def streams_apps(
    kafka: EmbeddedKafka, streams_app_build: StreamsAppBuild, tmp_path: Path
) -> Iterator[StreamsApps]:
    apps = StreamsApps(kafka, streams_app_build, tmp_path)
    yield apps
    apps.stop_all()


@pytest.fixture(scope="session")
def spark() -> "Iterator[SparkSession]":
    """The session's one real Spark (``local[2]``, small-data settings, UI off), with the
    Kafka source (fetched by Spark into ksmon's cache once, as the job does)."""
    try:
        from agent.aggregation.spark.kafka_package import kafka_source_conf  # noqa: PLC0415
        from agent.aggregation.spark.session import spark_session  # noqa: PLC0415 - starts a JVM
        from agent.config.schema import SparkConfig  # noqa: PLC0415

        session = spark_session(
            "ksmon-tests",
            master="local[2]",
            shuffle_partitions=2,
            extra=kafka_source_conf(SparkConfig()),
        )
    except Exception as e:  # noqa: BLE001 - any failure to start Spark is "unavailable"
        unavailable("Spark (pyspark local[2] with the Kafka source)", e)
    yield session
    session.stop()
