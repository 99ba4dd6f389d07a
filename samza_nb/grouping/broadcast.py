"""Broadcast inputs: partitions every task reads (``task.broadcast.inputs``, SAMZA.md §2.1)."""

from __future__ import annotations

import re

from samza_nb.errors import ConfigError, ModelError
from samza_nb.model import SystemStream, SystemStreamPartition

__all__ = ["parse_broadcast_inputs"]

_SINGLE = re.compile(r"^(\d+)$")
_RANGE = re.compile(r"^\[(\d+)-(\d+)\]$")


def parse_broadcast_inputs(value: str | None) -> frozenset[SystemStreamPartition]:
    """Parse ``system.stream#N`` and ``system.stream#[N-M]`` entries, comma separated.

    A range is inclusive; a range whose start is after its end yields nothing (as in Samza).

    >>> sorted(parse_broadcast_inputs("kafka.a#0, kafka.b#[1-2]"))  # doctest: +NORMALIZE_WHITESPACE
    [SystemStreamPartition(system='kafka', stream='a', partition=0, key_bucket=-1),
     SystemStreamPartition(system='kafka', stream='b', partition=1, key_bucket=-1),
     SystemStreamPartition(system='kafka', stream='b', partition=2, key_bucket=-1)]
    """
    result: set[SystemStreamPartition] = set()
    for raw in (value or "").split(","):
        entry = raw.strip()
        if not entry:
            continue
        stream_text, hash_sign, partitions = entry.partition("#")
        hint = "expected 'system.stream#N' or 'system.stream#[N-M]'"
        if not hash_sign:
            msg = f"task.broadcast.inputs: {entry!r} has no partition; {hint}"
            raise ConfigError(msg)
        try:
            stream = SystemStream.parse(stream_text)
        except ModelError as error:
            msg = f"task.broadcast.inputs: {entry!r}: {error}; {hint}"
            raise ConfigError(msg) from error
        partitions = partitions.strip()
        single = _SINGLE.match(partitions)
        if single:
            result.add(stream.partition(int(single.group(1))))
            continue
        span = _RANGE.match(partitions)
        if span is None:
            msg = f"task.broadcast.inputs: {entry!r} has a bad partition part; {hint}"
            raise ConfigError(msg)
        for partition in range(int(span.group(1)), int(span.group(2)) + 1):
            result.add(stream.partition(partition))
    return frozenset(result)
