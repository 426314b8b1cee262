"""Kafka protocol messages kafka-python 3.0 does not define, described from the
published wire layouts in ``protocol_schemas/`` (our own schema files)."""

from kafka.protocol.api_message import ApiMessage

_SCHEMAS = "agent.collect.protocol_schemas"


class ConsumerGroupDescribeRequest(ApiMessage, load_json=_SCHEMAS):  # type: ignore[call-arg,misc]
    """KIP-848 ConsumerGroupDescribe (API key 69): group and assignment epochs, members."""


class ConsumerGroupDescribeResponse(ApiMessage, load_json=_SCHEMAS):  # type: ignore[call-arg,misc]
    pass


class StreamsGroupDescribeRequest(ApiMessage, load_json=_SCHEMAS):  # type: ignore[call-arg,misc]
    """KIP-1071 StreamsGroupDescribe (API key 89): epochs, topology, members and their tasks."""


class StreamsGroupDescribeResponse(ApiMessage, load_json=_SCHEMAS):  # type: ignore[call-arg,misc]
    pass
