"""The Kafka-encoded test vectors of ``tests/data/streams-userdata-vectors.txt``, and builders
for hand-made bytes that follow the layouts of ``streams-internals.md``."""

import struct
from dataclasses import dataclass
from pathlib import Path

VECTORS_FILE = Path(__file__).resolve().parents[2] / "data" / "streams-userdata-vectors.txt"


@dataclass(frozen=True)
class Vector:
    kind: str  # SUB, ASG, CONSUMER_SUB, ...
    version: int
    data: bytes
    decoded: str  # Kafka's toString after "decoded=", or ""

    @property
    def name(self) -> str:
        return f"{self.kind} v{self.version}"


def load_vectors() -> list[Vector]:
    vectors = []
    for line in VECTORS_FILE.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        kind, version, hex_bytes, *rest = line.split(maxsplit=3)
        decoded = rest[0].strip().removeprefix("decoded=") if rest else ""
        vectors.append(
            Vector(kind, int(version.removeprefix("v")), bytes.fromhex(hex_bytes), decoded)
        )
    return vectors


VECTORS = load_vectors()


def vector(kind: str, version: int) -> Vector:
    return next(v for v in VECTORS if v.kind == kind and v.version == version)


# --- hand-built bytes, written from the layout tables ------------------------------------------


def i8(n: int) -> bytes:
    return struct.pack(">b", n)


def i16(n: int) -> bytes:
    return struct.pack(">h", n)


def i32(n: int) -> bytes:
    return struct.pack(">i", n)


def i64(n: int) -> bytes:
    return struct.pack(">q", n)


def string16(text: str | None) -> bytes:
    """Generated-message string: int16 length + UTF-8, -1 for null."""
    if text is None:
        return i16(-1)
    raw = text.encode()
    return i16(len(raw)) + raw


def bytes32(raw: bytes | None) -> bytes:
    return i32(-1) if raw is None else i32(len(raw)) + raw


def write_utf(text: str) -> bytes:
    """DataOutputStream.writeUTF for text without NUL or supplementary characters."""
    raw = text.encode()
    return struct.pack(">H", len(raw)) + raw


def write_chars(text: str) -> bytes:
    return text.encode("utf-16-be")


PROCESS_ID_HEX = "00112233445566778899aabbccddeeff"
PROCESS_ID = "00112233-4455-6677-8899-aabbccddeeff"
