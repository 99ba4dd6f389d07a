"""The Kafka system: topics on a Kafka-protocol cluster through confluent-kafka.

Streams are topics; a record's kind (control messages, SAMZA.md §5.2) and, for idempotent
appends, its (producer task, seq, ordinal) travel in headers, and duplicates of an append are
dropped on read (see :mod:`samza_nb.systems.kafka_reader`). Offsets are Kafka's: they have gaps
(transaction markers, compaction), so :meth:`KafkaSystem.fetch` says where the next read
starts.

Clients are opened lazily, once per process and settings, and are never pickled: a
:class:`KafkaSystem` shipped to a Spark executor carries only its settings. Broker quirks of
Tansu (the test broker) are handled here: it under-reports end offsets after multi-record
batches (the high watermark of a fetch is used instead), auto-creates a topic whenever its
metadata is asked for (existence is checked against the full topic list), and crashes on
DeleteRecords (never sent to it).
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

import msgspec

from samza_nb.config import Config
from samza_nb.errors import StreamNotFoundError, StreamSystemError
from samza_nb.kafka_settings import (
    KafkaClientConfig,
    broker_api_versions,
    is_secret_option,
    transport_diagnosis,
)
from samza_nb.secrecy import redact
from samza_nb.systems.base import Fetched, MessageKind, Record, StreamSystem, validate_stream_id
from samza_nb.systems.kafka_reader import (
    DedupTracker,
    consume_range,
    decode_message,
    record_headers,
)
from samza_nb.systems.writes import placed_records

__all__ = ["KafkaSystem"]

_log = logging.getLogger(__name__)
_T = TypeVar("_T")
_json_encode = msgspec.json.Encoder().encode

# ApiVersions keys: a broker without CreatePartitions is Tansu-like (see the module doc).
_CREATE_PARTITIONS = 37
_TOPIC_CACHE_SECONDS = 5.0
_INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


class _ProcessClients:
    """The clients of one cluster in one process (shared by every KafkaSystem instance with
    the same settings, including copies unpickled in a reused Spark worker)."""

    def __init__(self, settings: KafkaClientConfig):
        self.settings = settings
        self.lock = threading.RLock()
        self._admin: Any = None
        self._producer: Any = None
        self.topics: dict[str, int] = {}
        self.topics_read = 0.0
        self.tansu: bool | None = None
        self.trackers: dict[tuple[str, int], DedupTracker] = {}
        self.seen_high: dict[tuple[str, int], int] = {}
        # (topic, partition) -> (listed end offset, high watermark a fetch reported for it)
        self.probed: dict[tuple[str, int], tuple[int, int]] = {}
        self.delete_records_skipped: set[str] = set()

    def admin(self) -> Any:
        with self.lock:
            if self._admin is None:
                from confluent_kafka.admin import AdminClient

                self._admin = AdminClient(self.settings.admin_options())
            return self._admin

    def producer(self, timeout: float) -> Any:
        with self.lock:
            if self._producer is None:
                from confluent_kafka import Producer

                defaults = {
                    "acks": "all",
                    "enable.idempotence": True,
                    "linger.ms": 5,
                    "message.timeout.ms": int(timeout * 1000),
                }
                self._producer = Producer(self.settings.producer_options(defaults))
            return self._producer

    def consumer(self, **extra: Any) -> Any:
        """A new consumer (the caller closes it; see kafka_reader.consume_range)."""
        from confluent_kafka import Consumer

        defaults: dict[str, Any] = {
            "group.id": "samza-nb-reader",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest",
            "enable.partition.eof": True,
            "allow.auto.create.topics": False,
            "fetch.wait.max.ms": 100,
            "isolation.level": "read_committed",
        }
        defaults.update(extra)
        return Consumer(self.settings.consumer_options(defaults))

    def close(self) -> None:
        with self.lock:
            if self._producer is not None:
                self._producer.flush(10)
                self._producer = None


_CLIENTS: dict[tuple[int, str], _ProcessClients] = {}
_CLIENTS_LOCK = threading.Lock()


class KafkaSystem(StreamSystem):
    """Streams as topics of a Kafka cluster.

    ``KafkaSystem("kafka", bootstrap_servers="host:9092", **{"security.protocol": "SASL_SSL"})``:
    keyword options are librdkafka options for every client (``sasl_mechanism=...`` works as
    ``sasl.mechanism``); ``consumer_config``/``producer_config`` apply to one kind of client.
    Keep secrets out of notebooks: name a properties file of librdkafka options with
    ``config_file=`` or ``$SAMZA_NB_KAFKA_CONFIG_FILE``, or build the system from Samza-style
    keys with :meth:`from_config`. Secret options never appear in a repr or an error.

    ``timeout`` (seconds) bounds each broker call and ``retries`` how often a call that failed
    for a transient reason (broker unreachable, timed out) is tried before one
    :class:`~samza_nb.errors.StreamSystemError` names the brokers and the operation.
    ``tansu``: None detects the Tansu broker's quirks from ApiVersions; True/False forces.
    ``dedup_lookback``: how many offsets before a cold read are scanned for duplicate appends.
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
        self._tansu = tansu
        self._dedup_lookback = int(dedup_lookback)
        self._round_robin: dict[str, itertools.count[int]] = {}

    @classmethod
    def from_config(cls, name: str, config: Config | Mapping[str, Any], **options: Any) -> KafkaSystem:
        """A Kafka system from Samza-style keys (see :meth:`KafkaClientConfig.from_config`):
        ``systems.<name>.bootstrap.servers``, ``systems.<name>.consumer.*``,
        ``systems.<name>.producer.*``, ``systems.<name>.config.file``."""
        settings = KafkaClientConfig.from_config(name, config)
        system = cls(name, settings.bootstrap_servers, **options)
        system._settings = settings
        return system

    def __getstate__(self) -> dict[str, Any]:
        # Shipped to Spark executors: settings only; clients are opened in each process.
        state = dict(self.__dict__)
        state["_round_robin"] = {}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

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

    # -- clients and errors --------------------------------------------------------------------
    def _clients(self) -> _ProcessClients:
        key = (os.getpid(), self._settings.fingerprint())
        clients = _CLIENTS.get(key)
        if clients is None:
            with _CLIENTS_LOCK:
                clients = _CLIENTS.get(key)
                if clients is None:
                    clients = _CLIENTS[key] = _ProcessClients(self._settings)
        return clients

    def close(self) -> None:
        clients = _CLIENTS.pop((os.getpid(), self._settings.fingerprint()), None)
        if clients is not None:
            clients.close()

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
        """``call(timeout)``, retried on transient errors; one error after the last try."""
        from confluent_kafka import KafkaException

        last: BaseException | None = None
        for attempt in range(self._retries):
            try:
                return call(self._timeout)
            except KafkaException as error:
                if not _transient(error):
                    raise self._fail(operation, error) from None
                last = error
            except FutureTimeout as error:
                last = error
            if attempt + 1 < self._retries:
                time.sleep(min(0.2 * 2**attempt, 2.0))
        reason = self.scrub(str(last) or type(last).__name__)
        diagnosis = self._transport_diagnosis()
        msg = (
            f"{self.where}: {operation} failed after {self._retries} attempts of "
            f"{self._timeout:g}s each: {reason}; {diagnosis or 'is the broker reachable?'}"
        )
        raise StreamSystemError(msg) from None

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

    def _is_tansu(self) -> bool:
        if self._tansu is not None:
            return self._tansu
        clients = self._clients()
        if clients.tansu is None:
            tansu = False
            if self._settings.security_protocol == "plaintext":
                apis = broker_api_versions(self.bootstrap_servers, self._timeout)
                tansu = apis is not None and _CREATE_PARTITIONS not in apis
            clients.tansu = tansu
            _log.debug("%s: Tansu-like broker: %s", self.where, tansu)
        return clients.tansu

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
        with clients.lock:
            clients.topics.pop(stream_id, None)
            for key in [key for key in clients.trackers if key[0] == stream_id]:
                del clients.trackers[key]
            for key in [key for key in clients.seen_high if key[0] == stream_id]:
                del clients.seen_high[key]
            for key in [key for key in clients.probed if key[0] == stream_id]:
                del clients.probed[key]

    def list_streams(self) -> dict[str, int]:
        return dict(sorted(self._topics().items()))

    def _list_offsets(self, stream_id: str, count: int, latest: bool) -> dict[int, int]:
        from confluent_kafka import IsolationLevel, TopicPartition
        from confluent_kafka.admin import OffsetSpec

        spec = OffsetSpec.latest() if latest else OffsetSpec.earliest()
        request = {TopicPartition(stream_id, p): spec for p in range(count)}

        def list_offsets(timeout: float) -> dict[int, int]:
            futures = self._clients().admin().list_offsets(
                request, isolation_level=IsolationLevel.READ_UNCOMMITTED, request_timeout=timeout
            )
            return {tp.partition: int(f.result(timeout=timeout).offset) for tp, f in futures.items()}

        which = "end" if latest else "start"
        return self._call(f"list {which} offsets of topic {stream_id!r}", list_offsets)

    def newest_offsets(self, stream_id: str) -> dict[int, int]:
        count = self._require(stream_id)
        listed = self._list_offsets(stream_id, count, latest=True)
        if self._is_tansu():
            probed = self._probe_high_watermarks(stream_id, listed)
            listed = {p: max(offset, probed.get(p, offset)) for p, offset in listed.items()}
        seen = self._clients().seen_high
        return {p: max(offset, seen.get((stream_id, p), offset)) for p, offset in listed.items()}

    def _probe_high_watermarks(self, stream_id: str, listed: Mapping[int, int]) -> dict[int, int]:
        """Tansu reports the base offset of the last batch + 1 as a partition's end offset; a
        fetch of that batch returns the true high watermark."""
        from confluent_kafka import KafkaError, TopicPartition

        clients = self._clients()
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
        if not wanted:
            return highs
        consumer = self._clients().consumer(**{"queued.max.messages.kbytes": 4096})
        consumer.assign([TopicPartition(stream_id, p, offset) for p, offset in wanted.items()])
        deadline = time.monotonic() + self._timeout
        try:
            while not wanted.keys() <= highs.keys() and time.monotonic() < deadline:
                batch = consumer.consume(num_messages=10_000, timeout=0)
                for message in batch or consumer.consume(num_messages=1, timeout=0.1):
                    error = message.error()
                    if error is not None and error.code() == KafkaError._PARTITION_EOF:
                        highs[message.partition()] = message.offset()
                        clients.probed[(stream_id, message.partition())] = (
                            listed[message.partition()], message.offset()
                        )
        finally:
            consumer.close()
        missing = sorted(set(wanted) - set(highs))
        if missing:
            _log.warning(
                "%s: no high watermark for partitions %s of topic %r within %gs; using the "
                "listed end offsets",
                self.where, missing, stream_id, self._timeout,
            )
        return highs

    def oldest_offsets(self, stream_id: str) -> dict[int, int]:
        return self._list_offsets(stream_id, self._require(stream_id), latest=False)

    def consumer_lag(self, stream_id: str, offsets: Mapping[int, int]) -> dict[int, int]:
        """Per partition, the newest offset minus ``offsets`` (Kafka's consumer lag: a count of
        offsets, which exceeds the count of messages when markers or compaction left gaps)."""
        newest = self.newest_offsets(stream_id)
        return {p: max(0, high - int(offsets.get(p, 0))) for p, high in newest.items()}

    def delete_before(self, stream_id: str, partition: int, offset: int) -> int:
        """DeleteRecords; returns how many *offsets* were deleted. A logged no-op on Tansu
        (which crashes a broker thread on it) and on brokers that refuse it."""
        from confluent_kafka import KafkaError, KafkaException, TopicPartition

        self.require_partition(stream_id, partition)
        clients = self._clients()
        if self._is_tansu() or stream_id in clients.delete_records_skipped:
            if stream_id not in clients.delete_records_skipped:
                clients.delete_records_skipped.add(stream_id)
                _log.info(
                    "%s: not deleting old records of topic %r: the broker does not support "
                    "DeleteRecords safely (Tansu); the topic keeps them until its retention",
                    self.where, stream_id,
                )
            return 0
        before = self._list_offsets(stream_id, self._require(stream_id), latest=False)[partition]
        if offset <= before:
            return 0

        def delete(timeout: float) -> int:
            futures = clients.admin().delete_records(
                [TopicPartition(stream_id, partition, offset)], request_timeout=timeout
            )
            (future,) = futures.values()
            return int(future.result(timeout=timeout).low_watermark)

        try:
            low = self._call(f"delete records of {stream_id}[{partition}] before {offset}", delete)
        except StreamSystemError as error:
            cause = error.__cause__
            unsupported = isinstance(cause, KafkaException) and cause.args[0].code() in (
                KafkaError.UNSUPPORTED_VERSION, KafkaError.INVALID_REQUEST, KafkaError._UNSUPPORTED_FEATURE,
            )
            if not unsupported and "unsupported" not in str(error).lower():
                raise
            clients.delete_records_skipped.add(stream_id)
            _log.info("%s: DeleteRecords is not supported; keeping old records of %r", self.where, stream_id)
            return 0
        return max(0, low - before)

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
        from confluent_kafka import KafkaError

        client = self._clients().producer(self._timeout * self._retries)
        errors: list[Any] = []

        def delivered(error: Any, _message: Any) -> None:
            if error is not None:
                errors.append(error)

        for partition, (_kind, key, value, timestamp), headers in items:
            for _ in range(1000):
                try:
                    client.produce(
                        stream_id, value, key, partition=partition, timestamp=timestamp or 0,
                        headers=headers, on_delivery=delivered,
                    )
                    break
                except BufferError:
                    client.poll(0.05)
            else:
                msg = f"{self.where}: append to topic {stream_id!r}: the producer queue stayed full"
                raise StreamSystemError(msg)
        remaining = client.flush(self._timeout * self._retries)
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
                f"acknowledged within {self._timeout * self._retries:g}s (is the broker reachable?)"
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
        if high is not None and high > clients.seen_high.get(key, -1):
            clients.seen_high[key] = high
        if messages and messages[0].offset() > offset:
            oldest = self.oldest_offsets(stream_id)[partition]
            if offset < oldest:
                _log.info(
                    "%s: offset %d of %s[%d] is below the oldest stored offset %d (deleted by "
                    "retention); reading from %d",
                    self.where, offset, stream_id, partition, oldest, oldest,
                )
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
                            tracker = self._rebuilt_tracker(stream_id, partition, offset)
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
        return Fetched(batches, next_offset)

    def _rebuilt_tracker(self, stream_id: str, partition: int, offset: int) -> DedupTracker:
        """A tracker of what was appended below ``offset``: extend the partition's tracker if it
        stopped short of ``offset``, else scan back ``dedup_lookback`` offsets."""
        clients = self._clients()
        existing = clients.trackers.get((stream_id, partition))
        if existing is not None and existing.position < offset <= existing.position + self._dedup_lookback:
            tracker, start = existing, existing.position
        else:
            oldest = self.oldest_offsets(stream_id)[partition]
            start = max(oldest, offset - self._dedup_lookback)
            tracker = DedupTracker(start)
        position = start
        while position < offset:
            messages, next_offset, _ = consume_range(
                clients.consumer(), stream_id, partition, position, offset, 50_000,
                stall_timeout=min(self._timeout, 2.0), describe=self.where,
            )
            for message in messages:
                _record, producer, seq, ordinal = decode_message(message)
                if producer is not None:
                    tracker.admit(producer, seq, ordinal)
            if next_offset <= position:
                break
            position = next_offset
        tracker.position = offset
        return tracker

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

    # -- notebook helpers ---------------------------------------------------------------------
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
        the serialized key when ``key_fn`` is given (computed here and produced to that
        partition explicitly), else round robin. Values and keys are JSON unless
        ``serde``/``key_serde`` (objects with ``to_bytes``) say otherwise.
        """
        count = self._require(stream_id)
        placed = placed_records(
            stream_id, values, partitions=count,
            rotation=self._round_robin.setdefault(stream_id, itertools.count()),
            key_fn=key_fn, partition=partition, timestamps=timestamps, serde=serde, key_serde=key_serde,
        )
        items = [(target, record, None) for target, record in placed]
        self._produce_all(stream_id, items)
        return len(items)

    def write_watermark(self, stream_id: str, partition: int, timestamp: int) -> None:
        """Append a source watermark (null task name) to one partition."""
        payload = _json_encode({"timestamp": int(timestamp), "taskName": None, "version": 1})
        self.append(stream_id, partition, [Record(MessageKind.WATERMARK, None, payload, None)])

    def read(self, stream_id: str, *, serde: Any = None, key_serde: Any = None) -> Any:
        """Every user message of the topic as a pandas DataFrame (partition, offset, key,
        value, timestamp), decoded by ``serde``/``key_serde`` when given, else as JSON where
        the bytes are JSON."""
        self._require(stream_id)
        return self.read_frame(stream_id, serde=serde, key_serde=key_serde)


def _transient(error: Any) -> bool:
    from confluent_kafka import KafkaError

    kafka_error = error.args[0] if getattr(error, "args", None) else None
    if not isinstance(kafka_error, KafkaError):
        return True
    return kafka_error.retriable() or kafka_error.code() in (
        KafkaError._TRANSPORT,
        KafkaError._TIMED_OUT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError._RESOLVE,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.NOT_CONTROLLER,
    )
