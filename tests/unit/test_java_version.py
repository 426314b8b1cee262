import pytest

from agent.embedded.java import parse_java_major


@pytest.mark.parametrize(
    ("output", "major", "why"),
    [
        ('openjdk version "17.0.15" 2025-04-15', 17, "modern scheme: the first number"),
        ('openjdk version "25" 2025-09-16', 25, "a GA release has no minor part"),
        ('java version "1.8.0_292"', 8, "legacy 1.x scheme: the second number"),
        ('openjdk version "21-ea" 2023-03-21', 21, "early-access suffix"),
        ('openjdk version "11.0.2+9"', 11, "build suffix"),
        ("Error: could not find libjava.so", None, "no version string at all"),
        ('openjdk version "banana"', None, "not a number"),
    ],
)
def test_java_major_version_is_read_from_java_version_output(
    output: str, major: int | None, why: str
) -> None:
    assert parse_java_major(output) == major, why
