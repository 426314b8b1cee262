"""Where the job's Kafka source comes from: Spark's package fetch (a mirror too), or a
directory of jars; and the two settings that choose, each wrong value one clear line."""

from pathlib import Path

import pytest

from agent.aggregation.spark.kafka_package import (
    artifact_of,
    jar_file_name,
    kafka_source_conf,
    main,
    not_shipped,
)
from agent.config import parse_config
from agent.config.schema import SparkConfig
from agent.errors import ConfigError

SOURCE = "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0"
MINIMAL = "clusters:\n  - name: local\n    bootstrap_servers: ['127.0.0.1:9092']\n"


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KSMON_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_by_default_spark_fetches_the_source_at_pysparks_version_into_ksmons_cache(
    cache: Path,
) -> None:
    assert kafka_source_conf(SparkConfig(), version="4.2.0", env={}) == {
        "spark.jars.packages": SOURCE,
        "spark.jars.ivy": str(cache / "spark-ivy"),
    }


def test_a_mirror_from_the_config_or_else_from_the_environment() -> None:
    env = {"KSMON_MAVEN_MIRROR": "https://mirror.example/maven2"}
    from_env = kafka_source_conf(SparkConfig(), version="4.2.0", env=env)
    configured = SparkConfig(packages_repository="http://nexus.example/repository/central")
    from_config = kafka_source_conf(configured, version="4.2.0", env=env)

    assert from_env["spark.jars.repositories"] == "https://mirror.example/maven2"
    assert from_config["spark.jars.repositories"] == "http://nexus.example/repository/central"
    assert from_config["spark.jars.packages"] == SOURCE


def test_a_mirror_in_the_environment_that_is_no_url_is_one_line_naming_the_variable() -> None:
    with pytest.raises(ConfigError, match=r"^KSMON_MAVEN_MIRROR: expected the http:// or https://"):
        kafka_source_conf(SparkConfig(), version="4.2.0", env={"KSMON_MAVEN_MIRROR": "mirror"})


def test_a_jars_dir_puts_its_jars_on_the_classpath_and_fetches_nothing(tmp_path: Path) -> None:
    jars = tmp_path / "jars"
    jars.mkdir()
    for name in ("kafka-clients-3.9.2.jar", "spark-sql-kafka-0-10_2.13-4.2.0.jar", "README"):
        (jars / name).write_text("")

    conf = kafka_source_conf(SparkConfig(jars_dir=jars), version="4.2.0", env={})

    assert conf == {
        "spark.jars": f"{jars / 'kafka-clients-3.9.2.jar'},"
        f"{jars / 'spark-sql-kafka-0-10_2.13-4.2.0.jar'}"
    }


def test_a_jars_dir_missing_or_without_jars_is_one_line_naming_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^aggregation.spark.jars_dir .*: no such directory"):
        kafka_source_conf(SparkConfig(jars_dir=tmp_path / "nowhere"), version="4.2.0", env={})
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match=r"^aggregation.spark.jars_dir .*: holds no .jar files"):
        kafka_source_conf(SparkConfig(jars_dir=tmp_path / "empty"), version="4.2.0", env={})


def test_a_source_cluster_on_msk_iam_brings_amazons_login_library(tmp_path: Path) -> None:
    conf = kafka_source_conf(SparkConfig(), msk_iam=True, version="4.2.0", env={})
    assert conf["spark.jars.packages"] == f"{SOURCE},software.amazon.msk:aws-msk-iam-auth:2.4.0"

    jars = tmp_path / "jars"
    jars.mkdir()
    (jars / "spark-sql-kafka-0-10_2.13-4.2.0.jar").write_text("")
    with pytest.raises(ConfigError) as raised:
        kafka_source_conf(SparkConfig(jars_dir=jars), msk_iam=True, version="4.2.0", env={})
    assert str(raised.value) == (
        f"aggregation.spark.jars_dir {jars}: has no aws-msk-iam-auth jar, which the source "
        "cluster's AWS_MSK_IAM login needs; fill it with `python -m "
        f"agent.aggregation.spark.kafka_package --into {jars} --with-msk-iam`"
    )
    (jars / "aws-msk-iam-auth-2.4.0.jar").write_text("")
    assert (
        "aws-msk-iam-auth-2.4.0.jar"
        in kafka_source_conf(SparkConfig(jars_dir=jars), msk_iam=True, version="4.2.0", env={})[
            "spark.jars"
        ]
    )


def test_ivy_names_are_read_as_the_artifacts_they_hold() -> None:
    assert jar_file_name("org.apache.kafka_kafka-clients-3.9.2.jar") == "kafka-clients-3.9.2.jar"
    assert jar_file_name("org.scala-lang.modules_scala-parallel-collections_2.13-1.2.0.jar") == (
        "scala-parallel-collections_2.13-1.2.0.jar"
    )
    assert artifact_of("kafka-clients-3.9.2.jar") == "kafka-clients"
    assert artifact_of("spark-sql-kafka-0-10_2.13-4.2.0.jar") == "spark-sql-kafka-0-10_2.13"
    assert artifact_of("scala-parallel-collections_2.13-1.2.0.jar") == (
        "scala-parallel-collections_2.13"
    )
    assert artifact_of("snappy-java-1.1.10.8.jar") == "snappy-java"
    assert artifact_of("zstd-jni-1.5.6-4.jar") == "zstd-jni"


def test_only_jars_pyspark_does_not_ship_are_kept() -> None:
    resolved = [
        Path("/ivy/jars/org.xerial.snappy_snappy-java-1.1.10.8.jar"),
        Path("/ivy/jars/org.apache.kafka_kafka-clients-3.9.2.jar"),
        Path("/ivy/jars/org.apache.commons_commons-pool2-2.13.1.jar"),
    ]
    shipped = [Path("/pyspark/jars/snappy-java-1.1.10.7.jar")]

    assert [jar.name for jar in not_shipped(resolved, shipped)] == [
        "org.apache.commons_commons-pool2-2.13.1.jar",
        "org.apache.kafka_kafka-clients-3.9.2.jar",
    ]


def test_the_command_refuses_a_repository_that_is_no_url(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--into", str(tmp_path / "jars"), "--repository", "repo.example"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        "kafka_package: error: --repository: expected the http:// or https:// URL of a Maven "
        "repository, got 'repo.example'\n"
    )
    assert not (tmp_path / "jars").exists()


def spark_section(text: str) -> SparkConfig:
    return parse_config(
        MINIMAL + "aggregation:\n  spark:\n" + text, "test.yaml", {}
    ).aggregation.spark


def test_the_settings_load() -> None:
    spark = spark_section(
        "    packages_repository: https://repo.example/maven2\n    jars_dir: /opt/jars\n"
    )
    assert spark.packages_repository == "https://repo.example/maven2"
    assert spark.jars_dir == Path("/opt/jars")
    assert spark_section("    master: local[2]\n").packages_repository is None


@pytest.mark.parametrize(
    "url", ["ftp://repo.example/maven2", "repo.example", "https://", "http:// x"]
)
def test_a_repository_that_is_no_http_url_is_one_line_naming_the_key(url: str) -> None:
    with pytest.raises(ConfigError) as raised:
        spark_section(f"    packages_repository: '{url}'\n")
    message = str(raised.value)
    assert message.startswith("test.yaml:")
    assert "aggregation.spark.packages_repository" in message
    assert "expected the http:// or https:// URL of a Maven repository" in message
    assert "\n" not in message
