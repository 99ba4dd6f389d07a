"""A Kafka system's topics: listed (and cached a few seconds), required, created, deleted, and
the largest record each one takes."""

from __future__ import annotations

import logging
import time

from samza_nb.errors import StreamNotFoundError, StreamSystemError
from samza_nb.systems.base import validate_stream_id
from samza_nb.systems.kafka.connection import KafkaConnection

__all__ = ["LONGEST_TOPIC", "KafkaTopics"]

_log = logging.getLogger("samza_nb.systems.kafka")

#: Kafka's longest topic name (its ``Topic.validate``).
LONGEST_TOPIC = 249
_TOPIC_CACHE_SECONDS = 5.0
_INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
#: Kafka's defaults: a topic's max.message.bytes and a librdkafka producer's message.max.bytes.
_TOPIC_MAX_BYTES = 1_048_588
_PRODUCER_MAX_BYTES = 1_000_000


class KafkaTopics:
    """The topics of one connection's brokers; new topics get ``topic_config`` and
    ``replication_factor`` (-1: the broker's default)."""

    def __init__(
        self, connection: KafkaConnection, *, topic_config: dict[str, str], replication_factor: int
    ) -> None:
        self._connection = connection
        self._topic_config = topic_config
        self._replication_factor = replication_factor
        #: Per topic, the largest record an append can carry (asked once per process).
        self._record_limits: dict[str, int] = {}

    def __getstate__(self) -> dict[str, object]:
        return {**self.__dict__, "_record_limits": {}}

    def all(self, *, refresh: bool = True) -> dict[str, int]:
        """Topic → partition count, the internal topics left out; with ``refresh`` false, as
        listed within the last few seconds."""
        connection = self._connection
        clients = connection.clients()
        if refresh or time.monotonic() - clients.topics_read > _TOPIC_CACHE_SECONDS:
            metadata = connection.call("list topics", lambda t: clients.admin().list_topics(timeout=t))
            clients.topics = {
                name: len(topic.partitions)
                for name, topic in metadata.topics.items()
                if name not in _INTERNAL_TOPICS and topic.error is None
            }
            clients.topics_read = time.monotonic()
        return clients.topics

    def require(self, stream_id: str) -> int:
        """The topic's partition count (cached a few seconds), else StreamNotFoundError."""
        count = self.all(refresh=False).get(stream_id)
        if count is None:
            count = self.all().get(stream_id)
        if count is None:
            name = self._connection.name
            msg = (
                f"topic {stream_id!r} does not exist on {self._connection.where}; create it with "
                f"{name}.create_stream({stream_id!r}, partitions=N)"
            )
            raise StreamNotFoundError(msg)
        return count

    def require_partition(self, stream_id: str, partition: int) -> int:
        count = self.require(stream_id)
        if not 0 <= partition < count:
            msg = f"topic {stream_id!r} on {self._connection.where} has partitions 0..{count - 1}, not {partition}"
            raise StreamSystemError(msg)
        return count

    def max_record_bytes(self, stream_id: str) -> int:
        """The largest record (key, value and headers) an append to ``stream_id`` can carry:
        the topic's ``max.message.bytes`` (read once per process) or, when the broker does not
        say, Kafka's default, and never more than the producer's ``message.max.bytes``."""
        limit = self._record_limits.get(stream_id)
        if limit is None:
            options = self._connection.settings.producer_options({})
            producer = int(options.get("message.max.bytes", _PRODUCER_MAX_BYTES))
            limit = self._record_limits[stream_id] = min(producer, self._topic_max_bytes(stream_id))
        return int(limit)

    def _topic_max_bytes(self, stream_id: str) -> int:
        from confluent_kafka.admin import ConfigResource

        connection = self._connection
        resource = ConfigResource(ConfigResource.Type.TOPIC, stream_id)
        try:
            futures = connection.clients().admin().describe_configs([resource], request_timeout=connection.timeout)
            entry = futures[resource].result(connection.timeout).get("max.message.bytes")
            return int(entry.value) if entry is not None and entry.value else _TOPIC_MAX_BYTES
        except Exception as error:  # noqa: BLE001 - a broker that does not describe configs
            _log.debug("%s: topic %r: max.message.bytes not described (%s)", connection.where, stream_id, error)
            return _TOPIC_MAX_BYTES

    def create(self, stream_id: str, partitions: int, *, compacted: bool = False) -> bool:
        """Create the topic (True), or find it with ``partitions`` partitions (False)."""
        from confluent_kafka import KafkaError, KafkaException
        from confluent_kafka.admin import NewTopic

        validate_stream_id(stream_id)  # the ids an application's input() and output() accept
        if len(stream_id) > LONGEST_TOPIC or stream_id in (".", ".."):
            msg = (
                f"create_stream({stream_id[:60]!r}…): Kafka topic names are at most "
                f"{LONGEST_TOPIC} characters and neither '.' nor '..' ({len(stream_id)} given)"
            )
            raise StreamSystemError(msg)
        if not isinstance(partitions, int) or isinstance(partitions, bool) or partitions <= 0:
            msg = f"create_stream({stream_id!r}): partitions must be a positive int, got {partitions!r}"
            raise StreamSystemError(msg)
        connection = self._connection
        existing = self.all().get(stream_id)
        if existing is None:
            topic_config = {"cleanup.policy": "compact" if compacted else "delete", **self._topic_config}
            topic = NewTopic(stream_id, partitions, self._replication_factor, config=topic_config)

            def create(timeout: float) -> bool:
                admin = connection.clients().admin()
                future = admin.create_topics([topic], request_timeout=timeout)[stream_id]
                try:
                    future.result(timeout=timeout)
                except KafkaException as error:
                    if error.args and error.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS:
                        return False
                    raise
                return True

            if connection.call(f"create topic {stream_id!r}", create):
                self._await(stream_id)
                return True
            existing = self.all().get(stream_id)
        if existing is not None and existing != partitions:
            msg = (
                f"topic {stream_id!r} already exists on {connection.where} with {existing} partitions, "
                f"not {partitions}; delete it or use {existing} partitions"
            )
            raise StreamSystemError(msg)
        return False

    def _await(self, stream_id: str) -> None:
        deadline = time.monotonic() + self._connection.timeout
        while stream_id not in self.all() and time.monotonic() < deadline:
            time.sleep(0.05)

    def delete(self, stream_id: str) -> None:
        from confluent_kafka import KafkaError, KafkaException

        clients = self._connection.clients()
        if stream_id not in self.all():
            return

        def delete(timeout: float) -> None:
            future = clients.admin().delete_topics([stream_id], operation_timeout=timeout)[stream_id]
            try:
                future.result(timeout=timeout)
            except KafkaException as error:
                if error.args and error.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                    return
                raise

        self._connection.call(f"delete topic {stream_id!r}", delete)
        clients.forget_topic(stream_id)
