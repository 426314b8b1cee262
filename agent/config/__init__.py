"""ksmon's configuration: one YAML file -> typed, validated, immutable settings.

Everything is checked at load: unknown keys (with a suggestion), types,
choices, regexes, durations, sizes, and the rules that span keys. The first
problem is one ``ConfigError`` line naming the file, the line and the key::

    ksmon.yaml:9: clusters[0].security.sasl.mechanism: must be one of PLAIN,
    SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER, AWS_MSK_IAM, GSSAPI, got 'SCRAM'

Secrets come from ``{env: VAR}``, ``{file: PATH}`` or plain text, and live in
``Secret`` objects that never show their value; only ``kafka_client_settings``
reveals them. Every option and its default: ``docs/reference-config.yaml``.

>>> config = parse_config("clusters: [{name: dev, bootstrap_servers: 'k:9092'}]", "x", {})
>>> kafka_client_settings(config.clusters[0])["bootstrap_servers"]
['k:9092']
"""

from agent.config.kafka_client import kafka_client_settings
from agent.config.load import load_config, parse_config
from agent.config.location import ConfigFileError
from agent.config.schema import (
    AgentConfig,
    AgentMode,
    AggregationConfig,
    AwsIamConfig,
    ClusterConfig,
    Compression,
    Config,
    DetectorsConfig,
    ExpositionConfig,
    FindingsConfig,
    GroupsConfig,
    HttpConfig,
    InputConfig,
    KafkaInputConfig,
    KafkaSinkConfig,
    KerberosConfig,
    LagGranularity,
    LogFormat,
    LoggingConfig,
    LogLevel,
    OAuthConfig,
    OffsetsTopicConfig,
    PollConfig,
    SaslConfig,
    SaslMechanism,
    SecurityConfig,
    SecurityProtocol,
    SidecarConfig,
    SinkConfig,
    SinkType,
    SparkConfig,
    SpoolInputConfig,
    SpoolSinkConfig,
    TaskLoadsConfig,
    TlsConfig,
)
from agent.config.values import (
    HostPort,
    Secret,
    format_duration,
    format_size,
    parse_duration,
    parse_size,
)

__all__ = [
    "AgentConfig",
    "AgentMode",
    "AggregationConfig",
    "AwsIamConfig",
    "ClusterConfig",
    "Compression",
    "Config",
    "ConfigFileError",
    "DetectorsConfig",
    "ExpositionConfig",
    "FindingsConfig",
    "GroupsConfig",
    "HostPort",
    "HttpConfig",
    "InputConfig",
    "KafkaInputConfig",
    "KafkaSinkConfig",
    "KerberosConfig",
    "LagGranularity",
    "LogFormat",
    "LogLevel",
    "LoggingConfig",
    "OAuthConfig",
    "OffsetsTopicConfig",
    "PollConfig",
    "SaslConfig",
    "SaslMechanism",
    "Secret",
    "SecurityConfig",
    "SecurityProtocol",
    "SidecarConfig",
    "SinkConfig",
    "SinkType",
    "SparkConfig",
    "SpoolInputConfig",
    "SpoolSinkConfig",
    "TaskLoadsConfig",
    "TlsConfig",
    "format_duration",
    "format_size",
    "kafka_client_settings",
    "load_config",
    "parse_config",
    "parse_duration",
    "parse_size",
]
