"""Which topics are a Kafka Streams application's internal topics, and of what kind.

The rule is the one Kafka's ``StreamsResetter`` uses (``streams-internals.md``
section 6): the name starts with ``<application.id>-`` and ends with
``-changelog``, ``-repartition``, ``-subscription-registration-topic`` or
``-subscription-response-topic``, or is a generated foreign-key-join topic
``...-KTABLE-FK-JOIN-SUBSCRIPTION-(REGISTRATION|RESPONSE)-<n>-topic``.

>>> classify_internal_topic("app-counts-changelog", "app")
<InternalTopicKind.CHANGELOG: 'changelog'>
>>> changelog_store_name("app-counts-changelog", "app")
'counts'
"""

import re
from enum import StrEnum
from typing import Final


class InternalTopicKind(StrEnum):
    REPARTITION = "repartition"
    CHANGELOG = "changelog"
    FK_SUBSCRIPTION_REGISTRATION = "fk_subscription_registration"
    FK_SUBSCRIPTION_RESPONSE = "fk_subscription_response"


_CHANGELOG_SUFFIX: Final = "-changelog"
_SUFFIXES: Final = (
    (_CHANGELOG_SUFFIX, InternalTopicKind.CHANGELOG),
    ("-repartition", InternalTopicKind.REPARTITION),
    ("-subscription-registration-topic", InternalTopicKind.FK_SUBSCRIPTION_REGISTRATION),
    ("-subscription-response-topic", InternalTopicKind.FK_SUBSCRIPTION_RESPONSE),
)
# Java's String.matches is a full match and its \d is ASCII-only.
_GENERATED_FK_TOPIC: Final = re.compile(
    r".+-KTABLE-FK-JOIN-SUBSCRIPTION-(?P<kind>REGISTRATION|RESPONSE)-[0-9]+-topic", re.DOTALL
)
_FK_KINDS: Final = {
    "REGISTRATION": InternalTopicKind.FK_SUBSCRIPTION_REGISTRATION,
    "RESPONSE": InternalTopicKind.FK_SUBSCRIPTION_RESPONSE,
}


def classify_internal_topic(topic: str, application_id: str) -> InternalTopicKind | None:
    """The kind of ``application_id``'s internal topic ``topic`` is, or None if it is not one."""
    if not topic.startswith(application_id + "-"):
        return None
    for suffix, kind in _SUFFIXES:
        if topic.endswith(suffix):
            return kind
    match = _GENERATED_FK_TOPIC.fullmatch(topic)
    return _FK_KINDS[match["kind"]] if match else None


def changelog_store_name(topic: str, application_id: str) -> str | None:
    """The store behind changelog ``<application_id>-<store>-changelog``, else None.

    For a named topology the result is ``<topology>-<store>``: the name alone
    cannot tell where the topology name ends.
    """
    prefix = application_id + "-"
    if not (topic.startswith(prefix) and topic.endswith(_CHANGELOG_SUFFIX)):
        return None
    # Kafka's rule also accepts "<app>-changelog", where prefix and suffix share
    # the dash; such a topic has no store name.
    store = topic[len(prefix) : len(topic) - len(_CHANGELOG_SUFFIX)]
    return store or None
