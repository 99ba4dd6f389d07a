"""Kafka's default partitioner: murmur2 of the serialized key, positive modulo the count.

DESIGN.md fixes this rule for partition_by and keyed writes, so the embedded system and Kafka
place a key on the same partition. Never Python's salted ``hash()``.
"""

from __future__ import annotations

__all__ = ["java_string_hash", "murmur2", "partition_for_key"]

_M = 0x5BD1E995
_MASK32 = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2`` (seed 0x9747b28c) as a signed 32-bit int.

    >>> murmur2(b"21")
    -973932308
    """
    length = len(data)
    h = (0x9747B28C ^ length) & _MASK32
    end = length - (length & 3)
    for i in range(0, end, 4):
        k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24)
        k = (k * _M) & _MASK32
        k ^= k >> 24
        k = (k * _M) & _MASK32
        h = (h * _M) & _MASK32
        h ^= k
    rest = length & 3
    if rest == 3:
        h ^= data[end + 2] << 16
    if rest >= 2:
        h ^= data[end + 1] << 8
    if rest >= 1:
        h ^= data[end]
        h = (h * _M) & _MASK32
    h ^= h >> 13
    h = (h * _M) & _MASK32
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key_bytes: bytes | None, partition_count: int) -> int:
    """Kafka's rule: ``toPositive(murmur2(key)) % count``; a null key goes to partition 0."""
    if key_bytes is None:
        return 0
    return (murmur2(key_bytes) & 0x7FFFFFFF) % partition_count


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (UTF-16 code units, 32-bit signed overflow).

    >>> java_string_hash("test-stream")
    -1666282213
    """
    h = 0
    encoded = text.encode("utf-16-be")
    for i in range(0, len(encoded), 2):
        h = (31 * h + ((encoded[i] << 8) | encoded[i + 1])) & _MASK32
    return h - (1 << 32) if h & 0x80000000 else h
