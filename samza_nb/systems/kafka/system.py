"""The Kafka system: topics on a Kafka-protocol cluster through confluent-kafka.

Streams are topics; a record's kind (control messages, SAMZA.md §5.2) and, for idempotent
appends, its (producer task, seq, ordinal) travel in headers, and duplicates of an append are
dropped on read (see :mod:`samza_nb.systems.kafka.reader`). Offsets are Kafka's: they have gaps
(transaction markers, compaction), so :meth:`KafkaSystem.fetch` says where the next read
starts.

Clients are opened lazily, once per process and settings (:mod:`~samza_nb.systems.kafka.clients`),
and are never pickled: a :class:`KafkaSystem` shipped to a Spark executor carries only its
settings. A KafkaSystem is composed of its connection (:mod:`~samza_nb.systems.kafka.connection`:
clients, retries, messages), its topics (:mod:`~samza_nb.systems.kafka.topics`) and its offsets
(:mod:`~samza_nb.systems.kafka.offsets`); it reads and appends itself. Broker quirks of Tansu
(the test broker): it under-reports end offsets after multi-record batches (the high watermark
of a fetch is used instead, offsets.py), auto-creates a topic whenever its metadata is asked for
(existence is checked against the full topic list, topics.py), and crashes on DeleteRecords
(never sent to it).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import msgspec

from samza_nb.config import Config
from samza_nb.errors import ConfigError
from samza_nb.kafka_settings import KafkaClientConfig
from samza_nb.systems.base import Fetched, MessageKind, Record, StreamSystem
from samza_nb.systems.kafka.clients import ProcessClients
from samza_nb.systems.kafka.columns import plain_batches
from samza_nb.systems.kafka.connection import KafkaConnection
from samza_nb.systems.kafka.dedup import (
    DedupTracker,
    rebuilt_tracker,
    resume_tracker,
    tracker_state,
)
from samza_nb.systems.kafka.offsets import KafkaOffsets
from samza_nb.systems.kafka.produce import produce_acknowledged
from samza_nb.systems.kafka.reader import (
    consume_range,
    decode_message,
    record_headers,
)
from samza_nb.systems.kafka.topics import LONGEST_TOPIC, KafkaTopics
from samza_nb.systems.writes import placed_records

__all__ = ["KafkaSystem"]

_json_encode = msgspec.json.Encoder().encode


class KafkaSystem(StreamSystem):
    """Streams as topics of a Kafka cluster.

    ``KafkaSystem("kafka", bootstrap_servers="host:9092", **{"security.protocol": "SASL_SSL"})``:
    keyword options are librdkafka options for every client (``sasl_mechanism=...`` works as
    ``sasl.mechanism``); ``consumer_config``/``producer_config`` apply to one kind of client.
    Keep secrets out of notebooks: name a properties file of librdkafka options with
    ``config_file=`` or ``$SAMZA_NB_KAFKA_CONFIG_FILE``, or build the system from Samza-style
    keys with :meth:`from_config`. Secret options never appear in a repr or an error.

    ``timeout`` (seconds) bounds each broker call and ``retries`` how often a call that failed
    for a transient reason (broker unreachable, timed out, no leader) is tried before one
    :class:`~samza_nb.errors.StreamSystemError` names the brokers and the operation; once the
    brokers were reached, such a call is tried for ``outage_wait`` seconds (an outage waited
    out, with one warning; ``systems.<name>.outage.wait.ms``).
    ``tansu``: None detects the Tansu broker's quirks from ApiVersions; True/False forces.
    ``dedup_lookback``: how many offsets before a cold read are scanned for duplicate appends
    when the reader's checkpoint carries no dedup state (:meth:`resume_dedup`).
    """

    #: Kafka's longest topic name (its ``Topic.validate``).
    longest_stream_id = LONGEST_TOPIC

    def __init__(
        self,
        name: str = "kafka",
        bootstrap_servers: str | None = None,
        *,
        consumer_config: Mapping[str, Any] | None = None,
        producer_config: Mapping[str, Any] | None = None,
        config_file: str | os.PathLike[str] | None = None,
        topic_config: Mapping[str, Any] | None = None,
        replication_factor: int = -1,
        timeout: float = 10.0,
        retries: int = 3,
        outage_wait: float = 60.0,
        tansu: bool | None = None,
        dedup_lookback: int = 1_000_000,
        **confluent_config: Any,
    ):
        super().__init__(name)
        settings = KafkaClientConfig.build(
            bootstrap_servers,
            confluent_config,
            consumer=consumer_config,
            producer=producer_config,
            config_file=config_file,
        )
        self._connection = KafkaConnection(
            name, settings, timeout=timeout, retries=retries, outage_wait=outage_wait, tansu=tansu
        )
        self._topics = KafkaTopics(
            self._connection,
            topic_config={str(k): str(v) for k, v in (topic_config or {}).items()},
            replication_factor=int(replication_factor),
        )
        self._offsets = KafkaOffsets(self._connection, self._topics)
        self._dedup_lookback = int(dedup_lookback)
        self._round_robin: dict[str, itertools.count[int]] = {}

    @classmethod
    def from_config(cls, name: str, config: Config | Mapping[str, Any], **options: Any) -> KafkaSystem:
        """A Kafka system from Samza-style keys (see :meth:`KafkaClientConfig.from_config`):
        ``systems.<name>.bootstrap.servers``, ``systems.<name>.consumer.*``,
        ``systems.<name>.producer.*``, ``systems.<name>.config.file``,
        ``systems.<name>.outage.wait.ms``."""
        settings = KafkaClientConfig.from_config(name, config)
        key = f"systems.{name}.outage.wait.ms"
        entries = Config.of(config)
        if "outage_wait" not in options and entries.get_str(key) is not None:
            wait_ms = entries.get_int(key)
            if wait_ms < 0:
                msg = f"config key {key!r} must be 0 or more milliseconds, got {wait_ms}"
                raise ConfigError(msg)
            options["outage_wait"] = wait_ms / 1000
        system = cls(name, settings.bootstrap_servers, **options)
        system._connection.settings = settings
        return system

    def __getstate__(self) -> dict[str, Any]:
        # Shipped to Spark executors: settings only; clients are opened in each process.
        state = dict(self.__dict__)
        state["_round_robin"] = {}
        # Whether the brokers were reached goes along: an executor's first call in an outage
        # waits it out as the driver's would.
        state["_reached"] = self._clients().outage.reached
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        reached = bool(state.pop("_reached", False))
        self.__dict__.update(state)
        if reached:
            self._clients().outage.reached = True

    def __repr__(self) -> str:
        return f"KafkaSystem({self.name!r}, {self.settings.describe()})"

    # -- the connection ------------------------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        return self._connection.bootstrap_servers

    @property
    def settings(self) -> KafkaClientConfig:
        """The client settings (secrets included: never print ``producer_options()``)."""
        return self._connection.settings

    @property
    def timeout(self) -> float:
        return self._connection.timeout

    @property
    def retries(self) -> int:
        return self._connection.retries

    @property
    def outage_wait(self) -> float:
        """Seconds a broker outage is waited out (once the brokers were reached)."""
        return self._connection.outage_wait

    @property
    def send_timeout(self) -> float:
        """Seconds an append waits for its acknowledgements."""
        return self._connection.send_timeout

    @property
    def where(self) -> str:
        """The system and its bootstrap servers, for messages."""
        return self._connection.where

    def scrub(self, text: str) -> str:
        """``text`` with the value of every secret option, and every secret-looking part,
        masked."""
        return self._connection.scrub(text)

    def _clients(self) -> ProcessClients:
        return self._connection.clients()

    def _is_tansu(self) -> bool:
        return self._connection.is_tansu()

    def forget_cached_offsets(self, stream_id: str) -> None:
        self._clients().forget_offsets(stream_id)

    def deletions(self, stream_id: str) -> int:
        """How often this process deleted the topic (a reader that kept a position in it
        starts over when this changed)."""
        return self._clients().deletions.get(stream_id, 0)

    def fetched_records(self, stream_id: str, partition: int) -> int:
        """Records this process fetched from the partition so far (reads and dedup scans)."""
        return self._clients().fetched_records.get((stream_id, partition), 0)

    def close(self) -> None:
        self._connection.close()

    # -- topics (KafkaTopics) and offsets (KafkaOffsets) -----------------------------------------
    def require_partition(self, stream_id: str, partition: int) -> int:
        return self._topics.require_partition(stream_id, partition)

    def max_record_bytes(self, stream_id: str) -> int:
        """The largest record (key, value and headers) an append to ``stream_id`` can carry."""
        return self._topics.max_record_bytes(stream_id)

    def partition_count(self, stream_id: str) -> int | None:
        return self._topics.all().get(stream_id)

    def create_stream(self, stream_id: str, partitions: int, *, compacted: bool = False) -> bool:
        return self._topics.create(stream_id, partitions, compacted=compacted)

    def delete_stream(self, stream_id: str) -> None:
        self._topics.delete(stream_id)

    def list_streams(self) -> dict[str, int]:
        return dict(sorted(self._topics.all().items()))

    def newest_offsets(self, stream_id: str) -> dict[int, int]:
        return self._offsets.newest_offsets(stream_id)

    def oldest_offsets(self, stream_id: str) -> dict[int, int]:
        return self._offsets.oldest_offsets(stream_id)

    def consumer_lag(self, stream_id: str, offsets: Mapping[int, int]) -> dict[int, int]:
        """Per partition, the newest offset minus ``offsets`` (Kafka's consumer lag)."""
        return self._offsets.consumer_lag(stream_id, offsets)

    def delete_before(self, stream_id: str, partition: int, offset: int) -> int:
        """DeleteRecords; returns how many *offsets* were deleted (a logged no-op on Tansu)."""
        return self._offsets.delete_before(stream_id, partition, offset)

    # -- what a notebook writes and reads directly ---------------------------------------------
    def write(
        self,
        stream_id: str,
        values: Iterable[Any],
        *,
        key_fn: Callable[[Any], Any] | None = None,
        partition: int | None = None,
        timestamps: Iterable[int] | None = None,
        serde: Any = None,
        key_serde: Any = None,
    ) -> int:
        """Write values to a topic; returns how many were written.

        Placement as on the embedded system: ``partition`` if given, else Kafka's murmur2 of
        the serialized key when ``key_fn`` is given or the value is a ``KV`` (a keyed message:
        its key and its value; computed here and produced to that partition explicitly), else
        round robin. Values and keys are JSON unless
        ``serde``/``key_serde`` (objects with ``to_bytes``) say otherwise.
        """
        count = self._topics.require(stream_id)
        placed = placed_records(
            stream_id, values, partitions=count,
            rotation=self._round_robin.setdefault(stream_id, itertools.count()),
            key_fn=key_fn, partition=partition, timestamps=timestamps, serde=serde, key_serde=key_serde,
        )
        produce_acknowledged(self._connection, stream_id, [(target, record, None) for target, record in placed])
        return len(placed)

    def write_watermark(self, stream_id: str, partition: int, timestamp: int) -> None:
        """Append a source watermark (null task name) to one partition."""
        payload = _json_encode({"timestamp": int(timestamp), "taskName": None, "version": 1})
        self.append(stream_id, partition, [Record(MessageKind.WATERMARK, None, payload, None)])

    def read(self, stream_id: str, *, serde: Any = None, key_serde: Any = None) -> Any:
        """Every user message of the topic as a pandas DataFrame (partition, offset, key,
        value, timestamp), decoded by ``serde``/``key_serde`` when given, else as JSON where
        the bytes are JSON."""
        self._topics.require(stream_id)
        return self.read_frame(stream_id, serde=serde, key_serde=key_serde)

    # -- data ---------------------------------------------------------------------------------
    def append(
        self,
        stream_id: str,
        partition: int,
        records: Sequence[Record],
        *,
        producer: str | None = None,
        producer_seq: int | None = None,
    ) -> bool:
        """Produce the records to one partition and wait until the brokers acknowledged them.
        A repeated (producer, producer_seq) is written again but dropped by every read, so
        this always returns True."""
        if not records:
            return True
        self.require_partition(stream_id, partition)
        produce_acknowledged(
            self._connection,
            stream_id,
            [
                (partition, record, record_headers(record.kind, producer, producer_seq, ordinal))
                for ordinal, record in enumerate(records)
            ],
        )
        return True

    def fetch(
        self,
        stream_id: str,
        partition: int,
        offset: int,
        bound: int,
        max_messages: int,
        *,
        producer_seq_below: int | None = None,
    ) -> Fetched:
        if offset >= bound or max_messages <= 0:
            return Fetched([], offset)
        self.require_partition(stream_id, partition)
        self._connection.is_tansu()  # the consumer's isolation level depends on it
        clients = self._clients()
        key = (stream_id, partition)
        messages, next_offset, high = consume_range(
            clients.consumer(),
            stream_id, partition, offset, bound, max_messages,
            stall_timeout=min(self.timeout, 2.0), describe=self.where,
        )
        clients.count_fetched(stream_id, partition, len(messages))
        if high is not None and high > clients.seen_high.get(key, -1):
            clients.seen_high[key] = high
        deleted_below = None
        if messages and messages[0].offset() > offset:
            oldest = self.oldest_offsets(stream_id)[partition]
            if offset < oldest:  # retention deleted it: the read started at the oldest
                deleted_below = oldest
        # An input topic's messages (no headers) go by columns; any other read record by record.
        plain = plain_batches(messages)
        batches: list[tuple[int, Sequence[Record]]] = [] if plain is None else plain  # type: ignore[assignment]
        tracker: DedupTracker | None = None
        held_back: int | None = None
        with clients.lock:
            existing = clients.trackers.get(key)
            if existing is not None and existing.position == offset:
                tracker = existing
            expected = -1
            current: list[Record] = []
            make = tuple.__new__
            for message in messages if plain is None else ():
                headers = message.headers()
                if headers is None:
                    # A plain user message (an input topic): the fast path.
                    stamp_type, stamp = message.timestamp()
                    record = make(Record, (0, message.key(), message.value(), stamp if stamp_type else None))
                else:
                    record, producer, seq, ordinal = decode_message(message, headers)
                    if producer is not None:
                        if tracker is None:
                            tracker = rebuilt_tracker(
                                clients, stream_id, partition, offset,
                                oldest=lambda: self.oldest_offsets(stream_id)[partition],
                                lookback=self._dedup_lookback,
                                stall_timeout=min(self.timeout, 2.0), describe=self.where,
                            )
                        if not tracker.admit(producer, seq, ordinal):
                            continue
                        if producer_seq_below is not None and seq >= producer_seq_below:
                            if held_back is None:
                                held_back = message.offset()
                            continue
                at = message.offset()
                if at != expected:
                    current = []
                    batches.append((at, current))
                current.append(record)
                expected = at + 1
            if tracker is not None:
                tracker.position = next_offset
                clients.trackers[key] = tracker
        return Fetched(batches, next_offset, deleted_below, held_back)

    def dedup_state(self, stream_id: str, partition: int) -> dict[str, Any] | None:
        """What this process's reads of the partition know of duplicates still to come, as of
        where they stopped (None when no read met a record an idempotent append wrote).
        Persisted with the reader's checkpoint, it bounds the next cold read: see
        :meth:`resume_dedup`."""
        return tracker_state(self._clients(), stream_id, partition)

    def resume_dedup(self, stream_id: str, partition: int, state: Mapping[str, Any] | None) -> bool:
        """Take ``state`` (a :meth:`dedup_state`) as what was delivered below its position,
        unless this process already reads the partition from there: a cold read at that
        position then fetches only new records, instead of scanning back ``dedup_lookback``
        offsets. Returns whether the state was taken."""
        return resume_tracker(self._clients(), stream_id, partition, state)

    def read_records(
        self, stream_id: str, partition: int, offset: int, max_messages: int
    ) -> list[tuple[int, Record]]:
        bound = self.newest_offsets(stream_id).get(partition, 0)
        result: list[tuple[int, Record]] = []
        while offset < bound and len(result) < max_messages:
            fetched = self.fetch(stream_id, partition, offset, bound, max_messages - len(result))
            for first, records in fetched.batches:
                result.extend((first + index, Record._make(record)) for index, record in enumerate(records))
            if fetched.next_offset <= offset:
                break
            offset = fetched.next_offset
        return result
