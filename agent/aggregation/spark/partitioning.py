"""Which shuffle partition Spark puts a bucket in, and keys that spread buckets evenly.

Spark sends each key of the stateful operator to the partition
``pmod(murmur3_32(key, seed 42), partitions)`` (its ``HashPartitioning``, the
same as SQL's ``hash``). Bucket numbers used as keys fall where that hash
sends them: 32 buckets over 4 partitions landed 5, 10, 7 and 10 to a
partition, so two cores judged 370 and 630 of 1,000 groups and the batch
waited on the busier one (docs/benchmarks.md). ``spread_keys`` instead gives
bucket ``b`` a key that Spark sends to partition ``b % partitions``: every
partition gets its share of buckets, and of groups (``bucket_of`` spreads
groups over buckets evenly).

The hash is written here from its definition (32-bit MurmurHash3 of the key's
four bytes, little-endian); a test checks it against Spark's own.
"""

SPARK_HASH_SEED = 42
_MASK = 0xFFFFFFFF


def _rotate_left(x: int, bits: int) -> int:
    return ((x << bits) | (x >> (32 - bits))) & _MASK


def spark_hash_int(value: int, seed: int = SPARK_HASH_SEED) -> int:
    """Spark's ``hash(value)`` of an INT column: MurmurHash3 x86 32-bit, as a signed int."""
    k = (value & _MASK) * 0xCC9E2D51 & _MASK
    k = _rotate_left(k, 15) * 0x1B873593 & _MASK
    h = _rotate_left(seed ^ k, 13)
    h = (h * 5 + 0xE6546B64) & _MASK
    h ^= 4  # the key's length in bytes
    h ^= h >> 16
    h = h * 0x85EBCA6B & _MASK
    h ^= h >> 13
    h = h * 0xC2B2AE35 & _MASK
    h ^= h >> 16
    return h - (1 << 32) if h >= 1 << 31 else h


def partition_of(key: int, partitions: int) -> int:
    """The shuffle partition Spark puts an INT ``key`` in (``pmod``: never negative)."""
    return spark_hash_int(key) % partitions


def spread_keys(buckets: int, partitions: int) -> tuple[int, ...]:
    """One key per bucket, the smallest unused non-negative ints such that bucket ``b``'s
    key falls in partition ``b % partitions``. Deterministic: the same arguments give the
    same keys in every process and version, as the state keyed by them requires."""
    keys: list[int] = []
    unused: dict[int, list[int]] = {p: [] for p in range(partitions)}
    candidate = 0
    for bucket in range(buckets):
        wanted = bucket % partitions
        while not unused[wanted]:
            unused[partition_of(candidate, partitions)].append(candidate)
            candidate += 1
        keys.append(unused[wanted].pop(0))
    return tuple(keys)
