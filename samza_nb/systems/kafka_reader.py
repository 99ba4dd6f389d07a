"""Reading a Kafka partition range: consumers per thread, record headers, dedup on read.

Records the runtime appends carry headers: ``samza.kind`` (Samza's MessageType ordinal, absent
for user messages) and, for idempotent appends, ``samza.producer`` / ``samza.seq`` /
``samza.ord`` (producer task, its sequence number, the record's ordinal inside that append).
Kafka cannot refuse a second append of the same (producer, seq) — a task restarted after a
crash appends its epoch again — so the reader drops it: a :class:`DedupTracker` per partition
remembers, per producer and sequence number, the highest ordinal already delivered, and a
record at or below it is a duplicate. The first copy wins, as on the embedded log; a first copy
cut short by a crash is completed by the second (its missing ordinals are new).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Any

from samza_nb.errors import StreamNotFoundError, StreamSystemError
from samza_nb.systems.base import MessageKind, Record

__all__ = ["DedupTracker", "Readers", "consume_range", "decode_message", "record_headers"]

KIND = "samza.kind"
PRODUCER = "samza.producer"
SEQ = "samza.seq"
ORDINAL = "samza.ord"

# Keep the highest ordinals of this many recent sequence numbers per producer.
_SEQS_KEPT = 4096
# Consumers kept per thread (each holds a prefetch buffer for one partition).
_READERS_PER_THREAD = 8


def record_headers(kind: int, producer: str | None, seq: int | None, ordinal: int) -> list[tuple[str, bytes]] | None:
    """The headers of one appended record (None when it needs none)."""
    headers: list[tuple[str, bytes]] = []
    if kind != MessageKind.USER:
        headers.append((KIND, b"%d" % kind))
    if producer is not None:
        headers.append((PRODUCER, producer.encode()))
        headers.append((SEQ, b"%d" % (seq or 0)))
        headers.append((ORDINAL, b"%d" % ordinal))
    return headers or None


def decode_message(message: Any) -> tuple[Record, str | None, int, int]:
    """(record, producer, seq, ordinal) of a consumed confluent-kafka message."""
    headers = message.headers()
    kind = MessageKind.USER
    producer: str | None = None
    seq = ordinal = 0
    if headers:
        for name, value in headers:
            if name == KIND:
                kind = int(value)
            elif name == PRODUCER:
                producer = value.decode()
            elif name == SEQ:
                seq = int(value)
            elif name == ORDINAL:
                ordinal = int(value)
    stamp_type, stamp = message.timestamp()
    record = Record(kind, message.key(), message.value(), stamp if stamp_type else None)
    return record, producer, seq, ordinal


class DedupTracker:
    """What one reader of a partition has delivered, up to ``position``."""

    __slots__ = ("position", "producers")

    def __init__(self, position: int):
        self.position = position
        self.producers: dict[str, dict[int, int]] = {}

    def admit(self, producer: str, seq: int, ordinal: int) -> bool:
        """Whether the record is new (and remember it)."""
        seen = self.producers.get(producer)
        if seen is None:
            seen = self.producers[producer] = {}
        highest = seen.get(seq)
        if highest is not None and ordinal <= highest:
            return False
        seen[seq] = ordinal
        if len(seen) > _SEQS_KEPT:
            for old in sorted(seen)[: len(seen) - _SEQS_KEPT]:
                del seen[old]
        return True


class _Reader:
    """One consumer reading one partition sequentially, with what it read past a bound."""

    def __init__(self, consumer: Any):
        self.consumer = consumer
        self.assigned: tuple[str, int] | None = None
        self.position = -1
        self.pending: deque[Any] = deque()

    def seek(self, topic: str, partition: int, offset: int) -> None:
        from confluent_kafka import TopicPartition

        self.consumer.assign([TopicPartition(topic, partition, offset)])
        self.assigned = (topic, partition)
        self.position = offset
        self.pending.clear()


class Readers:
    """Consumers of one cluster for the calling thread (a consumer is not thread-safe)."""

    def __init__(self, make_consumer: Callable[[], Any]):
        self._make = make_consumer
        self._local = threading.local()

    def _mine(self) -> OrderedDict[tuple[str, int], _Reader]:
        readers: OrderedDict[tuple[str, int], _Reader] | None = getattr(self._local, "readers", None)
        if readers is None:
            readers = self._local.readers = OrderedDict()
        return readers

    def reader(self, topic: str, partition: int) -> _Reader:
        readers = self._mine()
        reader = readers.get((topic, partition))
        if reader is None:
            if len(readers) >= _READERS_PER_THREAD:
                # Reuse the least recently used consumer for this partition.
                _, reader = readers.popitem(last=False)
                reader.assigned = None
            else:
                reader = _Reader(self._make())
            readers[(topic, partition)] = reader
        readers.move_to_end((topic, partition))
        return reader

    def forget(self, topic: str) -> None:
        for key, reader in list(self._mine().items()):
            if key[0] == topic:
                reader.assigned = None

    def close(self) -> None:
        readers = self._mine()
        while readers:
            _, reader = readers.popitem()
            reader.consumer.close()


def consume_range(
    reader: _Reader,
    topic: str,
    partition: int,
    offset: int,
    bound: int,
    max_messages: int,
    *,
    stall_timeout: float,
    describe: str,
) -> tuple[list[Any], int, int | None]:
    """Messages with ``offset <= message offset < bound`` (at most ``max_messages``), where the
    next read starts, and the partition's high watermark the fetches reported (or None).

    The next read starts past every consumed message and, once the consumer's position shows it
    (transaction markers move it without delivering anything), past the gaps up to ``bound``.
    """
    from confluent_kafka import KafkaError, TopicPartition

    if reader.assigned != (topic, partition) or reader.position != offset:
        reader.seek(topic, partition, offset)
    consumer = reader.consumer
    taken: list[Any] = []
    next_offset = offset
    last_progress = time.monotonic()
    done = False
    while not done and len(taken) < max_messages:
        if reader.pending:
            batch = list(reader.pending)
            reader.pending.clear()
        else:
            # Everything below the consumer's position was delivered (or was a gap).
            position = consumer.position([TopicPartition(topic, partition)])[0].offset
            if position >= bound and position >= next_offset:
                next_offset = bound
                break
            batch = consumer.consume(num_messages=min(max_messages - len(taken), 10_000), timeout=0.1)
        if not batch:
            if time.monotonic() - last_progress > stall_timeout:
                break
            continue
        last_progress = time.monotonic()
        for index, message in enumerate(batch):
            error = message.error()
            if error is not None:
                code = error.code()
                if code == KafkaError._PARTITION_EOF:
                    next_offset = max(next_offset, min(message.offset(), bound))
                    if message.offset() >= next_offset and not reader.pending:
                        done = True
                    continue
                if code in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC):
                    msg = f"{describe}: topic {topic!r} does not exist"
                    raise StreamNotFoundError(msg)
                if error.retriable() or code in (KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN):
                    continue
                msg = f"{describe}: reading {topic}[{partition}] at offset {next_offset}: {error.str()}"
                raise StreamSystemError(msg)
            at = message.offset()
            if at < offset:
                continue
            if at >= bound or len(taken) >= max_messages:
                reader.pending.extend(batch[index:])
                if at >= bound:
                    next_offset = bound
                done = True
                break
            taken.append(message)
            next_offset = at + 1
    reader.position = next_offset
    _low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), cached=True)
    return taken, next_offset, (high if high is not None and high >= 0 else None)
