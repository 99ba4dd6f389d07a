"""What a notebook does with a Kafka topic directly: write values (placed as a producer would
place them), write a source watermark, and read a topic back as a pandas DataFrame."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import msgspec

from samza_nb.systems.base import MessageKind, Record, StreamSystem
from samza_nb.systems.writes import placed_records

__all__ = ["KafkaNotebookIO"]

_json_encode = msgspec.json.Encoder().encode


class KafkaNotebookIO(StreamSystem):
    """The notebook helpers of :class:`~samza_nb.systems.kafka.KafkaSystem`."""

    _round_robin: dict[str, itertools.count[int]]

    if TYPE_CHECKING:
        # Defined by KafkaSystem.
        def _require(self, stream_id: str) -> int:
            ...

        def _produce_all(
            self, stream_id: str, items: Iterable[tuple[int, Record, list[tuple[str, bytes]] | None]]
        ) -> None:
            ...

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
