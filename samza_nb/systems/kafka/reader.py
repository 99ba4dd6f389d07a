"""Reading a Kafka partition range: consumers per thread, record headers, dedup on read.

Records the runtime appends carry headers: ``samza.kind`` (Samza's MessageType ordinal, absent
for user messages) and, for idempotent appends, ``samza.id``: ``b"<seq> <ordinal> <producer>"``
(the producer task's sequence number of the append, the record's ordinal inside it, and the
producer's name, which may hold spaces: it comes last). One header costs a read about half
what three did (docs/performance.md); records written with the three headers
``samza.producer`` / ``samza.seq`` / ``samza.ord`` of earlier versions still read.
Kafka cannot refuse a second append of the same (producer, seq) — a task restarted after a
crash appends its epoch again — so the reader drops it: a
:class:`~samza_nb.systems.kafka.dedup.DedupTracker` per partition remembers, per producer and
sequence number, the highest ordinal already delivered, and a record at or below it is a
duplicate. The first copy wins, as on the embedded log; a first copy
cut short by a crash is completed by the second (its missing ordinals are new).
"""

from __future__ import annotations

import time
from bisect import bisect_left
from functools import partial
from operator import is_not
from typing import Any

from samza_nb.errors import StreamNotFoundError, StreamSystemError
from samza_nb.secrecy import redact
from samza_nb.systems.base import MessageKind, Record

__all__ = ["consume_range", "decode_message", "record_headers"]

KIND = "samza.kind"
IDENTITY = "samza.id"
# The headers of earlier versions' idempotent appends (read, no longer written).
PRODUCER = "samza.producer"
SEQ = "samza.seq"
ORDINAL = "samza.ord"


def record_headers(kind: int, producer: str | None, seq: int | None, ordinal: int) -> list[tuple[str, bytes]] | None:
    """The headers of one appended record (None when it needs none)."""
    headers: list[tuple[str, bytes]] = []
    if kind != MessageKind.USER:
        headers.append((KIND, b"%d" % kind))
    if producer is not None:
        headers.append((IDENTITY, b"%d %d %s" % (seq or 0, ordinal, producer.encode())))
    return headers or None


def decode_message(message: Any, headers: Any = None) -> tuple[Record, str | None, int, int]:
    """(record, producer, seq, ordinal) of a consumed confluent-kafka message (``headers``:
    its ``headers()`` when the caller already has them)."""
    if headers is None:
        headers = message.headers()
    kind = MessageKind.USER
    producer: str | None = None
    seq = ordinal = 0
    if headers:
        for name, value in headers:
            if name == IDENTITY:
                seq_text, ordinal_text, name_bytes = value.split(b" ", 2)
                seq, ordinal, producer = int(seq_text), int(ordinal_text), name_bytes.decode()
            elif name == KIND:
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


# Whether a message's error() is set (an identity test: a KafkaError does not compare to None).
_is_set = partial(is_not, None)


def consume_range(
    consumer: Any,
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

    The next read starts past every consumed message and, once the consumer's position or the
    end-of-partition event shows it (transaction markers move them without delivering
    anything), past the gaps up to ``bound``. A read that gets nothing for ``stall_timeout``
    seconds returns what it has.

    ``consumer`` is a fresh consumer, closed here: librdkafka crashes the process (a metadata
    update with a null topic name, on Tansu) when a consumer that once read a topic lives on
    after the topic is deleted, so no consumer outlives one read.
    """
    from confluent_kafka import TopicPartition

    try:
        consumer.assign([TopicPartition(topic, partition, offset)])
        return _consume(consumer, topic, partition, offset, bound, max_messages, stall_timeout, describe)
    finally:
        consumer.close()


def _consume(
    consumer: Any,
    topic: str,
    partition: int,
    offset: int,
    bound: int,
    max_messages: int,
    stall_timeout: float,
    describe: str,
) -> tuple[list[Any], int, int | None]:
    from confluent_kafka import KafkaError, TopicPartition

    where = [TopicPartition(topic, partition)]
    taken: list[Any] = []
    next_offset = offset
    last_progress = time.monotonic()
    done = False
    while not done and len(taken) < max_messages:
        # Everything below the consumer's position was delivered (or was a gap).
        position = consumer.position(where)[0].offset
        if position >= bound and position >= next_offset:
            next_offset = bound
            break
        # consume() waits until the batch is full or the timeout passes: take what is queued
        # at once, and wait only for the first message when nothing is.
        wanted = min(max_messages - len(taken), 10_000)
        batch = consumer.consume(num_messages=wanted, timeout=0) or consumer.consume(num_messages=1, timeout=0.1)
        if not batch:
            if time.monotonic() - last_progress > stall_timeout:
                break
            continue
        last_progress = time.monotonic()
        kind: Any = type(batch[0])  # confluent_kafka.Message: its methods, unbound
        if not any(map(_is_set, map(kind.error, batch))):
            # Messages only (the usual batch): the range's cut found by bisection.
            offsets = list(map(kind.offset, batch))
            low, high_cut = bisect_left(offsets, offset), bisect_left(offsets, bound)
            if high_cut > low:
                taken += batch[low:high_cut]
                next_offset = offsets[high_cut - 1] + 1
            if high_cut < len(batch):
                next_offset = bound
                done = True
            continue
        for message in batch:
            error = message.error()
            if error is not None:
                code = error.code()
                if code == KafkaError._PARTITION_EOF:
                    # At the high watermark: nothing more to read now.
                    next_offset = max(next_offset, min(message.offset(), bound))
                    done = True
                    continue
                if code in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC):
                    msg = f"{describe}: topic {topic!r} does not exist"
                    raise StreamNotFoundError(msg)
                if error.retriable() or code in (KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN):
                    continue
                msg = f"{describe}: reading {topic}[{partition}] at offset {next_offset}: {redact(error.str())}"
                raise StreamSystemError(msg)
            at = message.offset()
            if at >= bound:
                next_offset = bound
                done = True
                break
            if at >= offset:
                taken.append(message)
                next_offset = at + 1
    _low, high = consumer.get_watermark_offsets(where[0], cached=True)
    return taken, next_offset, (high if high is not None and high >= 0 else None)
