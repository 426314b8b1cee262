"""Kafka's StreamsResetter rule for a Streams application's internal topics."""

import pytest

from agent.streams.internal_topics import (
    InternalTopicKind,
    changelog_store_name,
    classify_internal_topic,
)

K = InternalTopicKind


@pytest.mark.parametrize(
    ("topic", "app", "kind"),
    [
        pytest.param(
            "app-KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition",
            "app",
            K.REPARTITION,
            id="generated groupBy repartition topic",
        ),
        pytest.param("app-counts-changelog", "app", K.CHANGELOG, id="named store changelog"),
        pytest.param(
            "app-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic",
            "app",
            K.FK_SUBSCRIPTION_REGISTRATION,
            id="generated FK-join registration topic",
        ),
        pytest.param(
            "app-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000010-topic",
            "app",
            K.FK_SUBSCRIPTION_RESPONSE,
            id="generated FK-join response topic",
        ),
        pytest.param(
            "app-orders-join-subscription-registration-topic",
            "app",
            K.FK_SUBSCRIPTION_REGISTRATION,
            id="named FK-join registration topic",
        ),
        pytest.param(
            "app-orders-join-subscription-response-topic",
            "app",
            K.FK_SUBSCRIPTION_RESPONSE,
            id="named FK-join response topic",
        ),
        pytest.param(
            "app2-counts-changelog", "app", None, id="another app whose id starts with ours"
        ),
        pytest.param("counts-changelog", "app", None, id="user topic ending in -changelog"),
        pytest.param("app-orders", "app", None, id="user topic with the app prefix"),
        pytest.param(
            "app-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-x-topic",
            "app",
            None,
            id="FK-join topic without a number",
        ),
        pytest.param(
            "app-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-\u0661-topic",
            "app",
            None,
            id="Java's \\d is ASCII only",
        ),
        pytest.param(
            "app-ktable-fk-join-subscription-response-1-topic",
            "app",
            None,
            id="the FK pattern is case sensitive",
        ),
        pytest.param(
            "app-changelog", "app", K.CHANGELOG, id="prefix and suffix share the dash, as in Kafka"
        ),
        pytest.param("app.v2-x-changelog", "app.v2", K.CHANGELOG, id="dots in the id are literal"),
        pytest.param("appXv2-x-changelog", "app.v2", None, id="a dot is no wildcard"),
        pytest.param("app-x-changelog-repartition", "app", K.REPARTITION, id="only the end counts"),
    ],
)
def test_classify_internal_topic(topic: str, app: str, kind: InternalTopicKind | None) -> None:
    assert classify_internal_topic(topic, app) is kind


@pytest.mark.parametrize(
    ("topic", "store"),
    [
        pytest.param("app-counts-changelog", "counts", id="store"),
        pytest.param(
            "app-KSTREAM-AGGREGATE-STATE-STORE-0000000002-changelog",
            "KSTREAM-AGGREGATE-STATE-STORE-0000000002",
            id="generated store name",
        ),
        pytest.param("app-topo-counts-changelog", "topo-counts", id="named topology stays in"),
        pytest.param("app-changelog", None, id="no room for a store name"),
        pytest.param("app-x-repartition", None, id="not a changelog"),
        pytest.param("app2-counts-changelog", None, id="another app"),
    ],
)
def test_changelog_store_name(topic: str, store: str | None) -> None:
    assert changelog_store_name(topic, "app") == store


def test_kinds_print_as_their_values() -> None:
    assert [str(k) for k in K] == [
        "repartition",
        "changelog",
        "fk_subscription_registration",
        "fk_subscription_response",
    ]
