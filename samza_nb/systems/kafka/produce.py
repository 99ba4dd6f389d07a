"""An acknowledged produce: records sent to a topic's partitions and waited for until the brokers
acknowledged every one, or one error naming the system, the topic and what failed. Appends and a
notebook's writes of a :class:`~samza_nb.systems.kafka.system.KafkaSystem` both go through it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from samza_nb.errors import StreamNotFoundError, StreamSystemError
from samza_nb.systems.base import Record
from samza_nb.systems.kafka.connection import KafkaConnection

__all__ = ["produce_acknowledged"]


def produce_acknowledged(
    connection: KafkaConnection,
    stream_id: str,
    items: Iterable[tuple[int, Record, list[tuple[str, bytes]] | None]],
) -> None:
    """Produce each ``(partition, record, headers)`` to ``stream_id`` and wait until the brokers
    acknowledged all of them: one :class:`~samza_nb.errors.StreamSystemError` names the record
    that could not be sent (and how many before it were), the records that failed, or those
    not acknowledged within the connection's send timeout; a topic that does not exist is a
    :class:`~samza_nb.errors.StreamNotFoundError`. A producer that knew fewer partitions
    asks for the topic's metadata once."""
    from confluent_kafka import KafkaError, KafkaException

    client = connection.clients().producer(connection.send_timeout)
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
                    client.list_topics(stream_id, timeout=connection.timeout)
                    continue
                client.flush(connection.send_timeout)  # now, not with a later append
                where = f"{connection.where}: append to topic {stream_id!r} partition {partition}"
                msg = f"{where}: record {index} failed ({error.args[0].str()}); the {index} before it were sent"
                raise StreamSystemError(connection.scrub(msg)) from error
        else:
            msg = f"{connection.where}: append to topic {stream_id!r}: the producer queue stayed full"
            raise StreamSystemError(msg)
    remaining = client.flush(connection.send_timeout)
    if errors:
        first = errors[0]
        if first.code() in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC):
            connection.clients().topics.pop(stream_id, None)
            msg = f"topic {stream_id!r} does not exist on {connection.where} (append failed)"
            raise StreamNotFoundError(msg)
        msg = connection.scrub(f"{connection.where}: append to topic {stream_id!r}: {len(errors)} records failed: {first.str()}")
        raise StreamSystemError(msg)
    if remaining:
        msg = (
            f"{connection.where}: append to topic {stream_id!r}: {remaining} records not "
            f"acknowledged within {connection.send_timeout:g}s (is the broker reachable?)"
        )
        raise StreamSystemError(msg)
