"""Pure decoders for the bytes a Kafka Streams application leaves in its consumer group.

Nothing here does I/O or imports a Kafka client: every function takes bytes or
text and returns a value, or a ``DecodeError`` instead of raising. The byte
layouts are written down in ``streams-internals.md`` (shared docs), sections 1-8.

Data flow for one classic-group member (``member.decode_streams_member``)::

    member metadata   -> consumer_protocol -> subscription_info (userData)
    member assignment -> consumer_protocol -> assignment_info   (userData)
                                           -> active task -> partitions zip

``offsets_topic`` reads the same blobs out of ``__consumer_offsets`` records.
"""

from agent.streams.codec import DecodeError
from agent.streams.member import DecodedStreamsMember, decode_streams_member

__all__ = ["DecodeError", "DecodedStreamsMember", "decode_streams_member"]
