"""ksmon: a monitoring agent for Kafka Streams applications."""

__version__ = "0.1.0"
