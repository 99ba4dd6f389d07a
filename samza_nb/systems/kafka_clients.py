"""The clients of one Kafka cluster in one process, shared by every KafkaSystem with the same
settings (copies unpickled in a reused Spark worker included), and which client errors are
worth another try."""

from __future__ import annotations

import os
import threading
from typing import Any

from samza_nb.kafka_settings import KafkaClientConfig
from samza_nb.systems.kafka_reader import DedupTracker

__all__ = ["ProcessClients", "close_process_clients", "is_transient", "process_clients"]


class ProcessClients:
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

    def forget_topic(self, topic: str) -> None:
        """Drop what is known of a deleted topic (a topic of that name made later is new)."""
        with self.lock:
            self.topics.pop(topic, None)
            for known in (self.trackers, self.seen_high, self.probed):
                for key in [key for key in known if key[0] == topic]:
                    del known[key]

    def forget_offsets(self, topic: str) -> None:
        """Drop the high watermarks seen and probed for ``topic``: they outlive a topic that
        another process deleted and made again (Tansu's listed end offsets are short, so the
        largest offset ever seen is trusted within a run)."""
        with self.lock:
            for known in (self.seen_high, self.probed):
                for key in [key for key in known if key[0] == topic]:
                    del known[key]

    def close(self) -> None:
        with self.lock:
            if self._producer is not None:
                self._producer.flush(10)
                self._producer = None


_CLIENTS: dict[tuple[int, str], ProcessClients] = {}
_CLIENTS_LOCK = threading.Lock()


def process_clients(settings: KafkaClientConfig) -> ProcessClients:
    """This process's clients of the cluster ``settings`` name (made on first use)."""
    key = (os.getpid(), settings.fingerprint())
    clients = _CLIENTS.get(key)
    if clients is None:
        with _CLIENTS_LOCK:
            clients = _CLIENTS.get(key)
            if clients is None:
                clients = _CLIENTS[key] = ProcessClients(settings)
    return clients


def close_process_clients(settings: KafkaClientConfig) -> None:
    """Flush and forget this process's clients of the cluster ``settings`` name."""
    clients = _CLIENTS.pop((os.getpid(), settings.fingerprint()), None)
    if clients is not None:
        clients.close()


def is_transient(error: Any) -> bool:
    """Whether a KafkaException is worth another try (broker unreachable, timed out, no leader)."""
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
