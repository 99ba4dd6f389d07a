"""One task's transactional producer: everything an epoch appends, committed or aborted together.

For ``task.processing.guarantee=exactly-once`` the runtime opens one :class:`KafkaTransaction`
per task (``transactional.id`` = job and task), and per epoch calls :meth:`begin`, appends the
epoch's outputs, intermediate records, changelog records and its checkpoint record, then
:meth:`commit`. Records carry the same headers as :meth:`KafkaSystem.append` writes, so readers
deduplicate a retried epoch's records even where the broker neither hides aborted records
from ``read_committed`` readers nor fences a stale producer cleanly (Tansu, librdkafka's mock
cluster).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from samza_nb.errors import StreamSystemError
from samza_nb.systems.base import Record
from samza_nb.systems.kafka.reader import record_headers

if TYPE_CHECKING:
    from samza_nb.systems.kafka.system import KafkaSystem

__all__ = ["KafkaTransaction"]


class KafkaTransaction:
    """A transactional producer of ``system`` with id ``transactional_id``.

    Opening it (``init_transactions``) fences any earlier producer with the same id on a broker
    that implements fencing. Not thread-safe: one task uses it.
    """

    def __init__(self, system: KafkaSystem, transactional_id: str):
        from confluent_kafka import Producer

        if not isinstance(transactional_id, str) or not transactional_id:
            msg = f"a transactional id must be a non-empty string, got {transactional_id!r}"
            raise StreamSystemError(msg)
        self.system = system
        self.transactional_id = transactional_id
        self._timeout = system.timeout * system.retries
        options = system.settings.producer_options(
            {"acks": "all", "enable.idempotence": True, "linger.ms": 5,
             "message.timeout.ms": int(self._timeout * 1000)}
        )
        options["transactional.id"] = transactional_id
        options["error_cb"] = self._client_error
        self._producer: Any = Producer(options)
        self._open = False
        self._errors: list[Any] = []
        self._fatal: Any = None
        #: (topic, partition) -> one past the highest offset acknowledged in this transaction.
        self._acked: dict[tuple[str, int], int] = {}
        #: The (topic, partition)s this transaction appended to.
        self._appended: set[tuple[str, int]] = set()
        # The brokers first: librdkafka (2.16) sends its first FindCoordinator through the
        # bootstrap connection, and when the metadata reply replaces that connection the query
        # fails and waits for its 500 ms timer (half of the openings here took 520 ms, the
        # rest 12 ms; with the metadata first every one took about 75 ms).
        self._run("learn the cluster's brokers", lambda: self._producer.list_topics(timeout=self._timeout))
        self._run("initialise the transactional producer", lambda: self._producer.init_transactions(self._timeout))

    def __repr__(self) -> str:
        return f"KafkaTransaction({self.transactional_id!r}, open={self._open})"

    def _client_error(self, error: Any) -> None:
        """librdkafka's error callback: remembers the fatal one (fenced) for :meth:`_run`."""
        if error.fatal():
            self._fatal = error

    def _run(self, operation: str, call: Any) -> None:
        from confluent_kafka import KafkaException

        try:
            call()
        except KafkaException as error:
            raise self._error(operation, error) from None
        except SystemError as error:
            # confluent-kafka 2.x: once the producer is fenced, flush() purges the queue and
            # calls the delivery callbacks with its own exception still set, so the call ends
            # in a SystemError instead of a KafkaException; that exception is usually the
            # SystemError's cause, but not always ("returned NULL without setting an
            # exception"), and the error callback may not have reported it yet. The producer
            # is unusable either way: ask librdkafka for its fatal error.
            pending = error.__cause__ or error.__context__
            known = pending if isinstance(pending, KafkaException) else None
            raise self._error(operation, self._fatal or known or self._fatal_error() or error) from None

    def _fatal_error(self) -> Any:
        """The fatal error (fenced) the producer is in, or None: any transactional call of a
        producer in that state fails with it; aborting is the one without side effects on a
        producer that is given up anyway."""
        from confluent_kafka import KafkaException

        try:
            self._producer.abort_transaction(self._timeout)
        except KafkaException as error:
            kafka_error = error.args[0] if error.args else None
            if kafka_error is not None and kafka_error.fatal():
                return kafka_error
        except SystemError:
            pass
        return None

    def _error(self, operation: str, error: Any) -> StreamSystemError:
        kafka_error = error.args[0] if isinstance(error, Exception) and error.args else error
        fenced = hasattr(kafka_error, "fatal") and kafka_error.fatal()
        detail = "this producer was fenced by a newer one with the same id; " if fenced else ""
        msg = self.system.scrub(
            f"{self.system.where}: transaction {self.transactional_id!r}: {operation} failed: "
            f"{detail}{error}"
        )
        return StreamSystemError(msg)

    def begin(self) -> None:
        """Start the epoch's transaction."""
        self._errors.clear()
        self._acked.clear()
        self._appended.clear()
        self._run("begin", self._producer.begin_transaction)
        self._open = True

    def append(
        self,
        stream_id: str,
        partition: int,
        records: Sequence[Record],
        *,
        producer: str | None = None,
        producer_seq: int | None = None,
    ) -> None:
        """Produce records inside the open transaction (sent, not yet committed)."""
        if not self._open:
            msg = f"transaction {self.transactional_id!r}: append({stream_id!r}) outside begin()/commit()"
            raise StreamSystemError(msg)
        from confluent_kafka import KafkaException

        self.system.require_partition(stream_id, partition)
        if records:
            self._appended.add((stream_id, partition))

        acked = self._acked

        def delivered(error: Any, message: Any) -> None:
            if error is not None:
                self._errors.append(error)
                return
            where = (message.topic(), message.partition())
            end = message.offset() + 1
            if end > acked.get(where, 0):
                acked[where] = end

        # Only the last record reports its delivery: the records of one producer reach a
        # partition in order, so its offset is the append's end, and a record that failed
        # before it fails the transaction's commit (librdkafka: an abortable error).
        produce = self._producer.produce
        last = len(records) - 1
        for ordinal, (kind, key, value, timestamp) in enumerate(records):
            headers = record_headers(kind, producer, producer_seq, ordinal)
            for _ in range(1000):
                try:
                    produce(
                        stream_id, value, key, partition=partition, timestamp=timestamp or 0,
                        headers=headers, on_delivery=delivered if ordinal == last else None,
                    )
                    break
                except BufferError:
                    self._run("poll", lambda: self._producer.poll(0.05))
                except KafkaException as error:  # fenced, or the transaction failed
                    operation = f"produce to {stream_id}[{partition}]"
                    raise self._error(operation, error) from None
            else:
                msg = f"transaction {self.transactional_id!r}: the producer queue stayed full"
                raise StreamSystemError(msg)

    def flush(self) -> None:
        """Wait until every record appended so far is acknowledged (still uncommitted)."""
        left: list[int] = []
        self._run("flush", lambda: left.append(self._producer.flush(self._timeout)))
        remaining = left[0]
        if remaining or self._errors:
            first = self._errors[0].str() if self._errors else f"{remaining} records unacknowledged"
            msg = f"transaction {self.transactional_id!r}: flush failed: {first}"
            raise StreamSystemError(msg)

    def appended_to(self, stream_id: str, partition: int) -> bool:
        """Whether this transaction appended records to the partition."""
        return (stream_id, partition) in self._appended

    def acknowledged_end(self, stream_id: str, partition: int) -> int | None:
        """One past the highest offset of the partition acknowledged in this transaction
        (after :meth:`flush`), None when it appended nothing there."""
        return self._acked.get((stream_id, partition))

    def commit(self) -> None:
        """Commit everything appended since :meth:`begin` (flushes first)."""
        self._run("commit", lambda: self._producer.commit_transaction(self._timeout))
        self._open = False
        if self._errors:
            msg = f"transaction {self.transactional_id!r}: {len(self._errors)} records failed: {self._errors[0].str()}"
            raise StreamSystemError(msg)

    def abort(self) -> None:
        """Abort the open transaction (its records stay in the log on brokers that do not hide
        them; readers drop them when the epoch is appended again)."""
        if self._open:
            self._run("abort", lambda: self._producer.abort_transaction(self._timeout))
            self._open = False

    def close(self) -> None:
        if self._open:
            self.abort()
        self._run("flush", lambda: self._producer.flush(self._timeout))
