"""The Kafka system: topics on a Kafka-protocol cluster through confluent-kafka.

Streams are topics; a record's kind (control messages, SAMZA.md §5.2) and, for idempotent
appends, its (producer task, seq, ordinal) travel in headers, and duplicates of an append are
dropped on read (see :mod:`samza_nb.systems.kafka.reader`). Offsets are Kafka's: they have gaps
(transaction markers, compaction), so :meth:`KafkaSystem.fetch` says where the next read
starts.

Clients are opened lazily, once per process and settings (:mod:`~samza_nb.systems.kafka.clients`),
and are never pickled: a :class:`KafkaSystem` shipped to a Spark executor carries only its
settings. Broker quirks of Tansu (the test broker) are handled here and in
:mod:`~samza_nb.systems.kafka.offsets`: it under-reports end offsets after multi-record batches
(the high watermark of a fetch is used instead), auto-creates a topic whenever its metadata is
asked for (existence is checked against the full topic list), and crashes on DeleteRecords
(never sent to it). The notebook helpers live in :mod:`~samza_nb.systems.kafka.notebook`.
"""

from __future__ import annotations

import itertools
import logging
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from samza_nb.config import Config
from samza_nb.errors import ConfigError, StreamNotFoundError, StreamSystemError
from samza_nb.kafka_settings import (
    KafkaClientConfig,
    is_secret_option,
    transport_diagnosis,
)
from samza_nb.secrecy import redact
from samza_nb.systems.base import Fetched, Record, StreamSystem, validate_stream_id
from samza_nb.systems.kafka.clients import (
    ProcessClients,
    close_process_clients,
    process_clients,
)
from samza_nb.systems.kafka.dedup import (
    DedupTracker,
    rebuilt_tracker,
    resume_tracker,
    tracker_state,
)
from samza_nb.systems.kafka.notebook import KafkaNotebookIO
from samza_nb.systems.kafka.offsets import KafkaOffsets
from samza_nb.systems.kafka.outage import RetryPolicy, call_with_retries
from samza_nb.systems.kafka.reader import (
    consume_range,
    decode_message,
    record_headers,
)

__all__ = ["KafkaSystem"]

_log = logging.getLogger("samza_nb.systems.kafka")  # the package's logger, which users configure
_T = TypeVar("_T")

_TOPIC_CACHE_SECONDS = 5.0
_INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
#: Kafka's defaults: a topic's max.message.bytes and a librdkafka producer's message.max.bytes.
_TOPIC_MAX_BYTES = 1_048_588
_PRODUCER_MAX_BYTES = 1_000_000


class KafkaSystem(KafkaNotebookIO, KafkaOffsets, StreamSystem):
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
    longest_stream_id = 249

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
        self._settings = KafkaClientConfig.build(
            bootstrap_servers,
            confluent_config,
            consumer=consumer_config,
            producer=producer_config,
            config_file=config_file,
        )
        self._topic_config = {str(k): str(v) for k, v in (topic_config or {}).items()}
        self._replication_factor = int(replication_factor)
        self._timeout = float(timeout)
        self._retries = max(1, int(retries))
        self._outage_wait = max(0.0, float(outage_wait))
        self._tansu = tansu
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
        system._settings = settings
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
        return f"KafkaSystem({self.name!r}, {self._settings.describe()})"

    @property
    def bootstrap_servers(self) -> str:
        return self._settings.bootstrap_servers

    @property
    def settings(self) -> KafkaClientConfig:
        """The client settings (secrets included: never print ``producer_options()``)."""
        return self._settings

    @property
    def timeout(self) -> float:
        return self._timeout

    @property
    def retries(self) -> int:
        return self._retries

    @property
    def outage_wait(self) -> float:
        """Seconds a broker outage is waited out (once the brokers were reached)."""
        return self._outage_wait

    @property
    def send_timeout(self) -> float:
        """Seconds an append waits for its acknowledgements: the tries of a call, or the
        outage bound when that is longer."""
        return max(self._timeout * self._retries, self._outage_wait)

    # -- clients and errors --------------------------------------------------------------------
    def _clients(self) -> ProcessClients:
        return process_clients(self._settings)

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
        close_process_clients(self._settings)

    @property
    def where(self) -> str:
        """The system and its bootstrap servers, for messages."""
        return f"Kafka system {self.name!r} (bootstrap servers {redact(self.bootstrap_servers)})"

    def scrub(self, text: str) -> str:
        """``text`` with the value of every secret option, and every secret-looking part,
        masked."""
        options = {**self._settings.common, **self._settings.consumer, **self._settings.producer}
        for key, value in options.items():
            if is_secret_option(key) and len(value) >= 3:
                text = text.replace(value, "********")
        return redact(text)

    def _fail(self, operation: str, error: BaseException) -> StreamSystemError:
        msg = self.scrub(f"{self.where}: {operation} failed: {error}")
        return StreamSystemError(msg)

    def _call(self, operation: str, call: Callable[[float], _T]) -> _T:
        """``call(timeout)``, retried on transient errors and through outages
        (:mod:`~samza_nb.systems.kafka.outage`); one error when it gives up."""
        return call_with_retries(
            call,
            operation=operation,
            where=self.where,
            policy=RetryPolicy(self._timeout, self._retries, self._outage_wait),
            watch=self._clients().outage,
            scrub=self.scrub,
            diagnose=self._transport_diagnosis,
        )

    def _transport_diagnosis(self) -> str:
        """What a plain connection to the bootstrap servers says (kafka_settings)."""
        try:
            text = transport_diagnosis(
                self.bootstrap_servers, self._settings.security_protocol, min(self._timeout, 5.0)
            )
        except Exception as error:  # noqa: BLE001 - the diagnosis only adds to the error
            _log.debug("%s: diagnosing the transport failed: %s", self.where, error)
            return ""
        return self.scrub(text)

    # -- topics -------------------------------------------------------------------------------
    def _topics(self, *, refresh: bool = True) -> dict[str, int]:
        clients = self._clients()
        if refresh or time.monotonic() - clients.topics_read > _TOPIC_CACHE_SECONDS:
            metadata = self._call("list topics", lambda t: clients.admin().list_topics(timeout=t))
            clients.topics = {
                name: len(topic.partitions)
                for name, topic in metadata.topics.items()
                if name not in _INTERNAL_TOPICS and topic.error is None
            }
            clients.topics_read = time.monotonic()
        return clients.topics

    def _require(self, stream_id: str) -> int:
        """The topic's partition count (cached a few seconds), else StreamNotFoundError."""
        count = self._topics(refresh=False).get(stream_id)
        if count is None:
            count = self._topics().get(stream_id)
        if count is None:
            msg = (
                f"topic {stream_id!r} does not exist on {self.where}; create it with "
                f"{self.name}.create_stream({stream_id!r}, partitions=N)"
            )
            raise StreamNotFoundError(msg)
        return count

    def require_partition(self, stream_id: str, partition: int) -> int:
        count = self._require(stream_id)
        if not 0 <= partition < count:
            msg = f"topic {stream_id!r} on {self.where} has partitions 0..{count - 1}, not {partition}"
            raise StreamSystemError(msg)
        return count

    # -- admin --------------------------------------------------------------------------------
    def max_record_bytes(self, stream_id: str) -> int:
        """The largest record (key, value and headers) an append to ``stream_id`` can carry:
        the topic's ``max.message.bytes`` (read once per process) or, when the broker does not
        say, Kafka's default, and never more than the producer's ``message.max.bytes``."""
        limits = self.__dict__.setdefault("_record_limits", {})
        limit = limits.get(stream_id)
        if limit is None:
            producer = int(self._settings.producer_options({}).get("message.max.bytes", _PRODUCER_MAX_BYTES))
            limit = limits[stream_id] = min(producer, self._topic_max_bytes(stream_id))
        return int(limit)

    def _topic_max_bytes(self, stream_id: str) -> int:
        from confluent_kafka.admin import ConfigResource

        resource = ConfigResource(ConfigResource.Type.TOPIC, stream_id)
        try:
            futures = self._clients().admin().describe_configs([resource], request_timeout=self._timeout)
            entry = futures[resource].result(self._timeout).get("max.message.bytes")
            return int(entry.value) if entry is not None and entry.value else _TOPIC_MAX_BYTES
        except Exception as error:  # noqa: BLE001 - a broker that does not describe configs
            _log.debug("%s: topic %r: max.message.bytes not described (%s)", self.where, stream_id, error)
            return _TOPIC_MAX_BYTES

    def partition_count(self, stream_id: str) -> int | None:
        return self._topics().get(stream_id)

    def create_stream(self, stream_id: str, partitions: int, *, compacted: bool = False) -> bool:
        from confluent_kafka import KafkaError, KafkaException
        from confluent_kafka.admin import NewTopic

        validate_stream_id(stream_id)  # the ids an application's input() and output() accept
        if len(stream_id) > self.longest_stream_id or stream_id in (".", ".."):
            msg = (
                f"create_stream({stream_id[:60]!r}…): Kafka topic names are at most "
                f"{self.longest_stream_id} characters and neither '.' nor '..' ({len(stream_id)} given)"
            )
            raise StreamSystemError(msg)
        if not isinstance(partitions, int) or isinstance(partitions, bool) or partitions <= 0:
            msg = f"create_stream({stream_id!r}): partitions must be a positive int, got {partitions!r}"
            raise StreamSystemError(msg)
        existing = self._topics().get(stream_id)
        if existing is None:
            topic_config = {"cleanup.policy": "compact" if compacted else "delete", **self._topic_config}
            topic = NewTopic(stream_id, partitions, self._replication_factor, config=topic_config)

            def create(timeout: float) -> bool:
                admin = self._clients().admin()
                future = admin.create_topics([topic], request_timeout=timeout)[stream_id]
                try:
                    future.result(timeout=timeout)
                except KafkaException as error:
                    if error.args and error.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS:
                        return False
                    raise
                return True

            if self._call(f"create topic {stream_id!r}", create):
                self._await_topic(stream_id)
                return True
            existing = self._topics().get(stream_id)
        if existing is not None and existing != partitions:
            msg = (
                f"topic {stream_id!r} already exists on {self.where} with {existing} partitions, "
                f"not {partitions}; delete it or use {existing} partitions"
            )
            raise StreamSystemError(msg)
        return False

    def _await_topic(self, stream_id: str) -> None:
        deadline = time.monotonic() + self._timeout
        while stream_id not in self._topics() and time.monotonic() < deadline:
            time.sleep(0.05)

    def delete_stream(self, stream_id: str) -> None:
        from confluent_kafka import KafkaError, KafkaException

        clients = self._clients()
        if stream_id not in self._topics():
            return

        def delete(timeout: float) -> None:
            future = clients.admin().delete_topics([stream_id], operation_timeout=timeout)[stream_id]
            try:
                future.result(timeout=timeout)
            except KafkaException as error:
                if error.args and error.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                    return
                raise

        self._call(f"delete topic {stream_id!r}", delete)
        clients.forget_topic(stream_id)

    def list_streams(self) -> dict[str, int]:
        return dict(sorted(self._topics().items()))

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
        self._produce_all(
            stream_id,
            [
                (partition, record, record_headers(record.kind, producer, producer_seq, ordinal))
                for ordinal, record in enumerate(records)
            ],
        )
        return True

    def _produce_all(
        self, stream_id: str, items: Iterable[tuple[int, Record, list[tuple[str, bytes]] | None]]
    ) -> None:
        from confluent_kafka import KafkaError, KafkaException

        client = self._clients().producer(self.send_timeout)
        errors: list[Any] = []

        def delivered(error: Any, _message: Any) -> None:
            if error is not None:
                errors.append(error)

        for index, (partition, (_kind, key, value, timestamp), headers) in enumerate(items):
            refreshed = False
            for _ in range(1000):
                try:
                    client.produce(
                        stream_id, value, key, partition=partition, timestamp=timestamp or 0,
                        headers=headers, on_delivery=delivered,
                    )
                    break
                except BufferError:
                    client.poll(0.05)
                except KafkaException as error:  # the producer knew fewer partitions: ask once
                    if error.args[0].code() == KafkaError._UNKNOWN_PARTITION and not refreshed:
                        refreshed = True
                        client.list_topics(stream_id, timeout=self._timeout)
                        continue
                    client.flush(self.send_timeout)  # now, not with a later append
                    where = f"{self.where}: append to topic {stream_id!r} partition {partition}"
                    msg = f"{where}: record {index} failed ({error.args[0].str()}); the {index} before it were sent"
                    raise StreamSystemError(self.scrub(msg)) from error
            else:
                msg = f"{self.where}: append to topic {stream_id!r}: the producer queue stayed full"
                raise StreamSystemError(msg)
        remaining = client.flush(self.send_timeout)
        if errors:
            first = errors[0]
            if first.code() in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC):
                self._clients().topics.pop(stream_id, None)
                msg = f"topic {stream_id!r} does not exist on {self.where} (append failed)"
                raise StreamNotFoundError(msg)
            msg = self.scrub(f"{self.where}: append to topic {stream_id!r}: {len(errors)} records failed: {first.str()}")
            raise StreamSystemError(msg)
        if remaining:
            msg = (
                f"{self.where}: append to topic {stream_id!r}: {remaining} records not "
                f"acknowledged within {self.send_timeout:g}s (is the broker reachable?)"
            )
            raise StreamSystemError(msg)

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
        clients = self._clients()
        key = (stream_id, partition)
        messages, next_offset, high = consume_range(
            clients.consumer(),
            stream_id, partition, offset, bound, max_messages,
            stall_timeout=min(self._timeout, 2.0), describe=self.where,
        )
        clients.count_fetched(stream_id, partition, len(messages))
        if high is not None and high > clients.seen_high.get(key, -1):
            clients.seen_high[key] = high
        deleted_below = None
        if messages and messages[0].offset() > offset:
            oldest = self.oldest_offsets(stream_id)[partition]
            if offset < oldest:  # retention deleted it: the read started at the oldest
                deleted_below = oldest
        batches: list[tuple[int, Sequence[Record]]] = []
        tracker: DedupTracker | None = None
        with clients.lock:
            existing = clients.trackers.get(key)
            if existing is not None and existing.position == offset:
                tracker = existing
            expected = -1
            current: list[Record] = []
            make = tuple.__new__
            for message in messages:
                if message.headers() is None:
                    # A plain user message (an input topic): the fast path.
                    stamp_type, stamp = message.timestamp()
                    record = make(Record, (0, message.key(), message.value(), stamp if stamp_type else None))
                else:
                    record, producer, seq, ordinal = decode_message(message)
                    if producer is not None:
                        if tracker is None:
                            tracker = rebuilt_tracker(
                                clients, stream_id, partition, offset,
                                oldest=lambda: self.oldest_offsets(stream_id)[partition],
                                lookback=self._dedup_lookback,
                                stall_timeout=min(self._timeout, 2.0), describe=self.where,
                            )
                        if not tracker.admit(producer, seq, ordinal):
                            continue
                        if producer_seq_below is not None and seq >= producer_seq_below:
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
        return Fetched(batches, next_offset, deleted_below)

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
                result.extend((first + index, record) for index, record in enumerate(records))
            if fetched.next_offset <= offset:
                break
            offset = fetched.next_offset
        return result
