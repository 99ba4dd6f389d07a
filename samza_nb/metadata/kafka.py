"""CoordinatorStreamMetadataStore: Samza's coordinator stream on Kafka (SAMZA.md §7.3).

The store is partition 0 of a one-partition compacted topic (``__samza_coordinator_<job>_<id>``
by default). Every entry is one message: key ``[1, <namespace>, <key>]`` as JSON (protocol
version 1), value the entry's bytes, a null value (tombstone) for a delete. ``init`` bootstraps
an in-memory view by reading the topic from its oldest offset; ``get`` and ``all`` first read
what was appended since, so every process sees the others' writes.

In memory, keys are Samza's namespaced keys (``{"key":k,"namespace":ns}``, see
:func:`~samza_nb.metadata.base.namespaced_key`), so :class:`NamespacedMetadataStore` views,
drain notifications, run ids, job models, assignments and locality work unchanged. A plain
(non-namespaced) key is kept under the namespace ``samza-nb-plain-key``.

Values: where Samza wraps a namespace's payload (``set-config``: ``{"values": {"value": …},
"source": …, "username": …, "timestamp": …, "host": …}``) the store writes that wrapper and
unwraps it on read, so callers get back the bytes they put. Callers that build the wrapper
themselves (the assignment managers) and namespaces Samza does not wrap (``samza-drain-v1``)
are stored as given.

Tansu never compacts: the start-up read grows with every write, so per-epoch records
(checkpoints) belong in a checkpoint topic, not here.
"""

from __future__ import annotations

import getpass
import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from samza_nb.config import Config
from samza_nb.errors import MetadataStoreError
from samza_nb.kafka_settings import KafkaClientConfig
from samza_nb.metadata.base import (
    Fence,
    MetadataStore,
    check_fence,
    check_key,
    check_value,
    namespaced_key,
    parse_namespaced_key,
)
from samza_nb.secrecy import redact

__all__ = ["CoordinatorStreamMetadataStore", "coordinator_stream_name"]

_Client = TypeVar("_Client")

_log = logging.getLogger(__name__)

PROTOCOL_VERSION = 1
PLAIN_KEY_NAMESPACE = "samza-nb-plain-key"
SOURCE = "SamzaContainer"
#: Namespaces whose payload Samza wraps in ``{"values": {<field>: …}}`` (CoordinatorStreamValueSerde).
WRAPPED_FIELDS = {"set-config": "value", "set-changelog": "Partition"}


def coordinator_stream_name(job_name: str, job_id: str) -> str:
    """Samza's coordinator stream name (CoordinatorStreamUtil): underscores become dashes.

    >>> coordinator_stream_name("page_views", "1")
    '__samza_coordinator_page-views_1'
    """
    return f"__samza_coordinator_{job_name.replace('_', '-')}_{job_id.replace('_', '-')}"


class CoordinatorStreamMetadataStore(MetadataStore):
    """Metadata in a one-partition compacted Kafka topic.

    ``settings``: the Kafka client settings (see :mod:`samza_nb.kafka_settings`);
    :meth:`from_config` builds them from ``job.coordinator.system``'s ``systems.<name>.*`` keys.
    """

    def __init__(
        self,
        settings: KafkaClientConfig,
        topic: str,
        *,
        replication_factor: int = -1,
        timeout: float = 10.0,
        source: str = SOURCE,
    ) -> None:
        if not isinstance(topic, str) or not topic:
            msg = f"CoordinatorStreamMetadataStore: the topic must be a non-empty string, got {topic!r}"
            raise MetadataStoreError(msg)
        self.settings = settings
        self.topic = topic
        self.replication_factor = int(replication_factor)
        self.timeout = float(timeout)
        self.source = source
        self._lock = threading.RLock()
        self._view: dict[str, bytes] = {}
        self._offset = 0
        self._initialized = False
        self._producer: Any = None

    @classmethod
    def from_config(cls, config: Config | Mapping[str, Any], **options: Any) -> CoordinatorStreamMetadataStore:
        """The store of a job: topic ``job.coordinator.stream`` (default
        ``__samza_coordinator_<app.name|job.name>_<app.id|job.id>``) on the cluster of system
        ``job.coordinator.system`` (default ``job.default.system``), whose clients are
        configured by ``systems.<system>.*`` keys (see :class:`KafkaClientConfig`)."""
        resolved = Config.of(config)
        system = resolved.get_str("job.coordinator.system") or resolved.get_str("job.default.system") or "kafka"
        topic = resolved.get_str("job.coordinator.stream")
        if not topic:
            name = resolved.get_str("app.name") or resolved.get_str("job.name")
            if not name:
                msg = "the kafka metadata store needs job.coordinator.stream or app.name/job.name"
                raise MetadataStoreError(msg)
            job_id = resolved.get_str("app.id") or resolved.get_str("job.id") or "1"
            topic = coordinator_stream_name(name, job_id)
        options.setdefault("replication_factor", resolved.get_int("job.coordinator.replication.factor"))
        return cls(KafkaClientConfig.from_config(system, resolved), topic, **options)

    def __repr__(self) -> str:
        return f"CoordinatorStreamMetadataStore({self.topic!r}, {self.settings.describe()})"

    @property
    def _where(self) -> str:
        return f"coordinator stream {self.topic!r} (bootstrap servers {self.settings.bootstrap_servers})"

    # -- lifecycle ----------------------------------------------------------------------------
    def init(self) -> None:
        """Create the topic when missing and read it from the oldest offset (idempotent)."""
        with self._lock:
            if self._initialized:
                return
            self._ensure_topic()
            self._offset = 0
            self._view = {}
            self._initialized = True
            self._catch_up()

    def _new_client(self, kind: str, make: Callable[[], _Client]) -> _Client:
        """A librdkafka client, or a MetadataStoreError naming the store when its options are
        refused (an option librdkafka does not know, a JAAS config it cannot read)."""
        from confluent_kafka import KafkaException

        try:
            return make()
        except (KafkaException, ValueError, TypeError) as error:
            msg = f"{self._where}: cannot create its Kafka {kind} client: {redact(str(error))}"
            raise MetadataStoreError(msg) from None

    def _ensure_topic(self) -> None:
        from confluent_kafka import KafkaError, KafkaException
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = self._new_client("admin", lambda: AdminClient(self.settings.admin_options()))
        try:
            # The full listing: asking for one topic's metadata auto-creates it on Tansu.
            topics = admin.list_topics(timeout=self.timeout).topics
            existing = topics.get(self.topic)
            if existing is None:
                topic = NewTopic(
                    self.topic, 1, self.replication_factor,
                    config={"cleanup.policy": "compact", "retention.ms": "-1"},
                )
                future = admin.create_topics([topic], request_timeout=self.timeout)[self.topic]
                try:
                    future.result(timeout=self.timeout)
                except KafkaException as error:
                    if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                        raise
            elif len(existing.partitions) != 1:
                msg = f"{self._where} has {len(existing.partitions)} partitions; a coordinator stream has 1"
                raise MetadataStoreError(msg)
        except KafkaException as error:
            msg = f"{self._where}: cannot create or find the topic: {redact(str(error))}"
            raise MetadataStoreError(msg) from None

    def close(self) -> None:
        with self._lock:
            if self._producer is not None:
                self._producer.flush(self.timeout)
                self._producer = None

    # -- reading ------------------------------------------------------------------------------
    def _catch_up(self) -> None:
        """Apply every message appended since the last read, up to the high watermark."""
        from confluent_kafka import Consumer, KafkaError, TopicPartition

        # A consumer per read: librdkafka crashes if a consumer outlives a deleted topic (see
        # samza_nb.systems.kafka.reader); the end of partition event carries the true high
        # watermark, which Tansu's ListOffsets under-reports.
        options = {
            **self.settings.consumer_options({}),
            "group.id": "samza-nb-coordinator-stream",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
            "allow.auto.create.topics": False,
            "fetch.wait.max.ms": 10,
        }
        consumer = self._new_client("consumer", lambda: Consumer(options))
        try:
            consumer.assign([TopicPartition(self.topic, 0, self._offset)])
            deadline = time.monotonic() + self.timeout
            while True:
                if time.monotonic() > deadline:
                    msg = f"{self._where}: no end of the stream within {self.timeout:g}s (is the broker reachable?)"
                    raise MetadataStoreError(msg)
                messages = consumer.consume(num_messages=10_000, timeout=0) or consumer.consume(
                    num_messages=1, timeout=0.1
                )
                at_end = False
                for message in messages:
                    error = message.error()
                    offset = int(message.offset() or 0)
                    if error is None:
                        self._apply(message.key(), message.value())
                        self._offset = offset + 1
                    elif error.code() == KafkaError._PARTITION_EOF:
                        self._offset = max(self._offset, offset)
                        at_end = True
                    elif not error.retriable():
                        msg = f"{self._where}: read failed at offset {self._offset}: {redact(error.str())}"
                        raise MetadataStoreError(msg)
                if at_end:
                    return
        finally:
            consumer.close()

    def _apply(self, key: bytes | None, value: bytes | None) -> None:
        if key is None:
            return
        try:
            parsed = json.loads(key)
            version, namespace, plain = parsed
        except (ValueError, TypeError):
            _log.warning("%s: skipping a message with key %r (not [version, namespace, key])", self._where, key[:80])
            return
        if version != PROTOCOL_VERSION or not isinstance(namespace, str) or not isinstance(plain, str):
            _log.warning("%s: skipping a message with key %r", self._where, key[:80])
            return
        memory_key = plain if namespace == PLAIN_KEY_NAMESPACE else namespaced_key(namespace, plain)
        if value is None:
            self._view.pop(memory_key, None)
        else:
            self._view[memory_key] = _unwrap(namespace, value)

    def get(self, key: str) -> bytes | None:
        key = check_key(key, "CoordinatorStreamMetadataStore")
        with self._lock:
            self.init()
            self._catch_up()
            return self._view.get(key)

    def all(self) -> dict[str, bytes]:
        with self._lock:
            self.init()
            self._catch_up()
            return dict(self._view)

    # -- writing ------------------------------------------------------------------------------
    def put(self, key: str, value: bytes) -> None:
        self.put_all({key: value})

    def put_all(self, entries: Mapping[str, bytes], *, fence: Fence | None = None) -> None:
        """Sequential puts in one produce (not atomic, as in Samza). With ``fence`` the stored
        generation is checked against the topic as read just before: a topic has no
        compare-and-set, so a fenced run is stopped here but a race of a few milliseconds is
        not (the ZooKeeper and Azure stores fence atomically)."""
        if fence is not None:
            with self._lock:
                self.init()
                self._catch_up()
                check_fence(fence, self._view.get(fence[0]), "CoordinatorStreamMetadataStore")
        messages: list[tuple[bytes, bytes | None]] = []
        for key, value in entries.items():
            key = check_key(key, "CoordinatorStreamMetadataStore")
            data = check_value(key, value, "CoordinatorStreamMetadataStore")
            namespace, plain = self._split(key)
            messages.append((self._message_key(namespace, plain), self._wrap(namespace, data)))
        self._send(messages)

    def delete(self, key: str) -> None:
        key = check_key(key, "CoordinatorStreamMetadataStore")
        namespace, plain = self._split(key)
        self._send([(self._message_key(namespace, plain), None)])

    @staticmethod
    def _split(key: str) -> tuple[str, str]:
        parsed = parse_namespaced_key(key)
        return parsed if parsed is not None else (PLAIN_KEY_NAMESPACE, key)

    @staticmethod
    def _message_key(namespace: str, key: str) -> bytes:
        return json.dumps([PROTOCOL_VERSION, namespace, key], separators=(",", ":"), ensure_ascii=False).encode()

    def _wrap(self, namespace: str, data: bytes) -> bytes:
        field = WRAPPED_FIELDS.get(namespace)
        if field is None:
            return data
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return data
        message = {
            "values": {field: text},
            "source": self.source,
            "username": _username(),
            "timestamp": int(time.time() * 1000),
            "host": _host(),
        }
        return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()

    def _send(self, messages: list[tuple[bytes, bytes | None]]) -> None:
        from confluent_kafka import Producer

        if not messages:
            return
        with self._lock:
            self.init()
            if self._producer is None:
                options = self.settings.producer_options(
                    {"acks": "all", "enable.idempotence": True, "linger.ms": 0,
                     "message.timeout.ms": int(self.timeout * 1000)}
                )
                self._producer = self._new_client("producer", lambda: Producer(options))
            errors: list[Any] = []

            def delivered(error: Any, _message: Any) -> None:
                if error is not None:
                    errors.append(error)

            for key, value in messages:
                self._producer.produce(self.topic, value, key, partition=0, on_delivery=delivered)
            remaining = self._producer.flush(self.timeout)
            if errors or remaining:
                reason = errors[0].str() if errors else f"{remaining} messages not acknowledged in {self.timeout:g}s"
                msg = f"{self._where}: write failed: {reason}"
                raise MetadataStoreError(msg)
            # Our own writes are visible at once; the next read applies them again in order.
            for key, value in messages:
                self._apply(key, value)

    def flush(self) -> None:
        """Writes wait for the brokers' acknowledgement: nothing is pending."""


def _unwrap(namespace: str, value: bytes) -> bytes:
    field = WRAPPED_FIELDS.get(namespace)
    if field is None or not value.startswith(b"{"):
        return value
    try:
        message = json.loads(value)
        payload = message["values"][field]
    except (ValueError, KeyError, TypeError):
        return value
    return payload.encode("utf-8") if isinstance(payload, str) else value


def _username() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def _host() -> str:
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"
