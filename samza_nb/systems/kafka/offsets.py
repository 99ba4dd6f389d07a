"""Offsets of a Kafka topic's partitions: listed start and end offsets (with the Tansu
broker's end offsets corrected by a fetch), consumer lag, and DeleteRecords."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping

from samza_nb.errors import StreamSystemError
from samza_nb.systems.kafka.connection import KafkaConnection
from samza_nb.systems.kafka.topics import KafkaTopics

__all__ = ["KafkaOffsets"]

#: The Kafka system's logger: what a user configures for KafkaSystem covers its offsets too.
_log = logging.getLogger("samza_nb.systems.kafka")


class KafkaOffsets:
    """The offset queries of a Kafka system's topics."""

    def __init__(self, connection: KafkaConnection, topics: KafkaTopics) -> None:
        self._connection = connection
        self._topics = topics

    def _list_offsets(self, stream_id: str, count: int, latest: bool) -> dict[int, int]:
        from confluent_kafka import IsolationLevel, KafkaError, KafkaException, TopicPartition
        from confluent_kafka.admin import OffsetSpec

        spec = OffsetSpec.latest() if latest else OffsetSpec.earliest()
        request = {TopicPartition(stream_id, p): spec for p in range(count)}

        def list_offsets(timeout: float) -> dict[int, int]:
            futures = self._connection.clients().admin().list_offsets(
                request, isolation_level=IsolationLevel.READ_UNCOMMITTED, request_timeout=timeout
            )
            offsets = {tp.partition: int(f.result(timeout=timeout).offset) for tp, f in futures.items()}
            unknown = sorted(p for p, offset in offsets.items() if offset < 0)
            if unknown:  # a broker coming back from an outage answers before it knows its logs
                reason = f"no offset for partitions {unknown} yet (the broker answered {offsets[unknown[0]]})"
                raise KafkaException(KafkaError(KafkaError.LEADER_NOT_AVAILABLE, reason))
            return offsets

        which = "end" if latest else "start"
        return self._connection.call(f"list {which} offsets of topic {stream_id!r}", list_offsets)

    def newest_offsets(self, stream_id: str) -> dict[int, int]:
        count = self._topics.require(stream_id)
        listed = self._list_offsets(stream_id, count, latest=True)
        if self._connection.is_tansu():
            probed = self._probe_high_watermarks(stream_id, listed)
            listed = {p: max(offset, probed.get(p, offset)) for p, offset in listed.items()}
        seen = self._connection.clients().seen_high
        return {p: max(offset, seen.get((stream_id, p), offset)) for p, offset in listed.items()}

    def _probe_high_watermarks(self, stream_id: str, listed: Mapping[int, int]) -> dict[int, int]:
        """Tansu reports the base offset of the last batch + 1 as a partition's end offset; a
        fetch of that batch ends at the true high watermark, where the consumer reports the
        partition's end.

        The fetch reads uncommitted, as the listing does: a ``read_committed`` consumer stops
        at the last stable offset while a transaction is open and never reaches the listed
        end. Each attempt waits ``timeout`` seconds for the partitions still unknown; after
        ``retries`` attempts (or, once the brokers were reached, ``outage_wait`` seconds) a
        partition whose end no attempt saw fails the call: the listed end is short of the true
        one, and a reader bounded by it would stop before the last batch."""
        connection = self._connection
        clients = connection.clients()
        highs: dict[int, int] = {}
        wanted: dict[int, int] = {}
        for p, offset in listed.items():
            known = clients.probed.get((stream_id, p))
            if known is not None and known[0] == offset:
                # Every append moves the last batch, so an unchanged listed offset means an
                # unchanged high watermark.
                highs[p] = known[1]
            elif offset > 0:
                wanted[p] = offset - 1
        outage = clients.outage
        waits = outage.reached and connection.outage_wait > 0
        started = time.monotonic()
        attempts = 0
        missing = dict(wanted)
        while missing:
            for p, high in self._fetch_ends(stream_id, missing).items():
                highs[p] = high
                clients.probed[(stream_id, p)] = (listed[p], high)
            missing = {p: offset for p, offset in wanted.items() if p not in highs}
            attempts += 1
            if not missing:
                outage.answered(connection.where)
                break
            elapsed = time.monotonic() - started
            if attempts >= connection.retries and (not waits or elapsed >= connection.outage_wait):
                msg = (
                    f"{connection.where}: no high watermark for partitions {sorted(missing)} of topic "
                    f"{stream_id!r} after {attempts} attempts in {elapsed:.1f}s (a fetch of the "
                    f"last batch never reached the partition's end); is the broker reachable?"
                )
                raise StreamSystemError(connection.scrub(msg))
            if waits:
                operation = f"probe the end of topic {stream_id!r}"
                reason = f"partitions {sorted(missing)} not seen to end within {connection.timeout:g}s"
                outage.waiting(connection.where, operation, reason, connection.outage_wait)
        return highs

    def _fetch_ends(self, stream_id: str, starts: Mapping[int, int]) -> dict[int, int]:
        """One attempt: the high watermarks a consumer's fetches report within ``timeout`` when
        it reads each partition from ``starts`` (its last batch).

        The watermark is read from the consumer's fetch state, not from the end-of-partition
        event after the batch's messages: the batch (an append's records, thousands of them)
        is never handed to Python, and a probe costs about half the CPU it did."""
        from confluent_kafka import TopicPartition

        consumer = self._connection.clients().consumer(
            forced={"isolation.level": "read_uncommitted"},
            **{"queued.max.messages.kbytes": 4096},
        )
        ends: dict[int, int] = {}
        try:
            consumer.assign([TopicPartition(stream_id, p, offset) for p, offset in starts.items()])
            deadline = time.monotonic() + self._connection.timeout
            pause = 0.001
            while time.monotonic() < deadline:
                for p in starts.keys() - ends.keys():
                    _low, high = consumer.get_watermark_offsets(TopicPartition(stream_id, p), cached=True)
                    if high is not None and high > starts[p]:
                        ends[p] = high
                if starts.keys() <= ends.keys():
                    break
                time.sleep(pause)
                pause = min(pause * 2, 0.02)
        finally:
            consumer.close()
        return ends

    def oldest_offsets(self, stream_id: str) -> dict[int, int]:
        return self._list_offsets(stream_id, self._topics.require(stream_id), latest=False)

    def consumer_lag(self, stream_id: str, offsets: Mapping[int, int]) -> dict[int, int]:
        """Per partition, the newest offset minus ``offsets`` (Kafka's consumer lag: a count of
        offsets, which exceeds the count of messages when markers or compaction left gaps)."""
        newest = self.newest_offsets(stream_id)
        return {p: max(0, high - int(offsets.get(p, 0))) for p, high in newest.items()}

    def delete_before(self, stream_id: str, partition: int, offset: int) -> int:
        """DeleteRecords; returns how many *offsets* were deleted. A logged no-op on Tansu
        (which crashes a broker thread on it) and on brokers that refuse it."""
        from confluent_kafka import KafkaError, KafkaException, TopicPartition

        connection = self._connection
        self._topics.require_partition(stream_id, partition)
        clients = connection.clients()
        if connection.is_tansu() or stream_id in clients.delete_records_skipped:
            if stream_id not in clients.delete_records_skipped:
                clients.delete_records_skipped.add(stream_id)
                _log.info(
                    "%s: not deleting old records of topic %r: the broker does not support "
                    "DeleteRecords safely (Tansu); the topic keeps them until its retention",
                    connection.where, stream_id,
                )
            return 0
        before = self._list_offsets(stream_id, self._topics.require(stream_id), latest=False)[partition]
        if offset <= before:
            return 0

        def delete(timeout: float) -> int:
            futures = clients.admin().delete_records(
                [TopicPartition(stream_id, partition, offset)], request_timeout=timeout
            )
            (future,) = futures.values()
            return int(future.result(timeout=timeout).low_watermark)

        try:
            low = connection.call(f"delete records of {stream_id}[{partition}] before {offset}", delete)
        except StreamSystemError as error:
            cause = error.__cause__
            unsupported = isinstance(cause, KafkaException) and cause.args[0].code() in (
                KafkaError.UNSUPPORTED_VERSION, KafkaError.INVALID_REQUEST, KafkaError._UNSUPPORTED_FEATURE,
            )
            if not unsupported and "unsupported" not in str(error).lower():
                raise
            clients.delete_records_skipped.add(stream_id)
            _log.info("%s: DeleteRecords is not supported; keeping old records of %r", connection.where, stream_id)
            return 0
        return max(0, low - before)
