"""The clients of one Kafka cluster in one process, shared by every KafkaSystem with the same
settings (copies unpickled in a reused Spark worker included)."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import Any

from samza_nb.kafka_settings import KafkaClientConfig
from samza_nb.systems.kafka.dedup import DedupTracker
from samza_nb.systems.kafka.outage import OutageWatch

__all__ = ["ProcessClients", "close_process_clients", "process_clients"]


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
        #: Whether this process reached the brokers, and the outage it waits out now.
        self.outage = OutageWatch()
        #: Topic -> how often this process deleted it (a topic of that name made later is new).
        self.deletions: dict[str, int] = {}
        #: Records this process fetched from the brokers, by (topic, partition): what a read
        #: costs (reads that stay O(new records) are tested by it).
        self.fetched_records: dict[tuple[str, int], int] = {}

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
                    # Appends look only at failed records (systems/kafka/produce.py): no Python
                    # callback for each acknowledged one.
                    "delivery.report.only.error": True,
                }
                self._producer = Producer(self.settings.producer_options(defaults))
            return self._producer

    def consumer(self, *, forced: Mapping[str, Any] | None = None, **extra: Any) -> Any:
        """A new consumer (the caller closes it; see kafka_reader.consume_range): ``extra``
        options replace the defaults, the user's consumer options replace those, and ``forced``
        ones (what a read needs to be correct) replace everything.

        It reads committed records only, except on a Tansu-like broker (``tansu``, known once
        the connection asked): Tansu's last stable offset can stay behind a transaction that a
        fenced producer left (an exactly-once job's output once stopped at its first epoch for
        every ``read_committed`` reader, offset 6 of 17), and samza_nb's reads on Tansu rest on
        the checkpoint record coming last and on deduplication anyway (runtime/task/exactly_once.py)."""
        from confluent_kafka import Consumer

        defaults: dict[str, Any] = {
            "group.id": "samza-nb-reader",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest",
            "enable.partition.eof": True,
            "allow.auto.create.topics": False,
            # A read or probe that reaches a partition's end waits this long for more: the
            # broker holds such a fetch for all of it (Tansu does), and every read and end
            # probe of samza_nb ends there. At 100 ms a Kafka job ran about twice as long
            # (docs/performance.md, "A read's end").
            "fetch.wait.max.ms": 10,
            "isolation.level": "read_uncommitted" if self.tansu else "read_committed",
        }
        defaults.update(extra)
        return Consumer({**self.settings.consumer_options(defaults), **(forced or {})})

    def forget_topic(self, topic: str) -> None:
        """Drop what is known of a deleted topic (a topic of that name made later is new)."""
        with self.lock:
            self.topics.pop(topic, None)
            self.deletions[topic] = self.deletions.get(topic, 0) + 1
            for known in (self.trackers, self.seen_high, self.probed):
                for key in [key for key in known if key[0] == topic]:
                    del known[key]

    def count_fetched(self, topic: str, partition: int, count: int) -> None:
        key = (topic, partition)
        self.fetched_records[key] = self.fetched_records.get(key, 0) + count

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
