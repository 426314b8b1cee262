"""The text format's pieces write what prometheus_client writes."""

import gzip
import math

from hypothesis import given
from hypothesis import strategies as st
from prometheus_client.utils import floatToGoString

from agent.exposition.text_format import (
    _PACK_FROM_BYTES,
    TextFamilies,
    label_template,
    label_value,
    number_text,
)


@given(
    st.one_of(
        st.integers(-(10**20), 10**20),
        st.integers(999_990, 2**53 + 10),  # offsets of a real cluster
        st.floats(allow_nan=False),
        st.sampled_from([999_999, 1_000_000, -999_999, -1_000_000, 1e6, 999_999.5, -0.0]),
        st.sampled_from([1_200_000, 10**10, 10**15, 10**16 - 1, 2**53, 2**53 + 1, 2**60]),
        # One significant digit (no point), and the most digits below 2**53.
        st.sampled_from([3_000_000, 9 * 10**15, 1_000_001, 2**53 - 1]),
    )
)
def test_a_number_is_written_as_go_writes_it(value: float) -> None:
    assert number_text(value) == floatToGoString(value)  # type: ignore[no-untyped-call]


def test_not_a_number_too() -> None:
    assert number_text(math.nan) == "NaN"


def test_labels_are_placed_in_name_order_whatever_order_they_come_in() -> None:
    template = label_template(["kafka_cluster", "group", "topic", "partition"])

    assert (
        template.format("prod", "app", "in", 3)
        == '{group="app",kafka_cluster="prod",partition="3",topic="in"}'
    )


def test_a_label_value_escapes_backslash_newline_and_quote_only() -> None:
    assert label_value('a\\b\n"c" {d}=é') == 'a\\\\b\\n\\"c\\" {d}=é'
    assert label_value("plain") == "plain"


def test_lines_added_in_bulk_follow_the_header_and_the_lines_added_one_by_one() -> None:
    family = TextFamilies().counter("ksmon_polls", "Polls.\nBy result.", ["result"])
    family.add_metric(["ok"], 3)
    family.add_lines([f'{family.sample}{{result="failed"}} 1.0\n', ""])

    assert family.text.decode() == (
        "# HELP ksmon_polls_total Polls.\\nBy result.\n"
        "# TYPE ksmon_polls_total counter\n"
        'ksmon_polls_total{result="ok"} 3.0\n'
        'ksmon_polls_total{result="failed"} 1.0\n'
    )


def test_a_packed_family_holds_little_text_and_its_member_reads_as_all_of_it() -> None:
    family = TextFamilies().packed_gauge("ksmon_partition_lag", "Lag.", ["partition"])
    header = family.text.decode()
    lines = [f'{family.sample}{{partition="{n}"}} {n}.0\n' for n in range(60_000)]
    most_held = 0
    for start in range(0, len(lines), 20):  # a group's lines at a time, as written
        family.add_lines(lines[start : start + 20])
        most_held = max(most_held, len(family.text))

    text = header + "".join(lines)
    assert len(text) > 4 * _PACK_FROM_BYTES, "enough text to be compressed several times"
    assert most_held < _PACK_FROM_BYTES + 1024, "compressed as written, not held to the end"
    assert gzip.decompress(family.member()).decode() == text
    assert family.length == len(text.encode())
