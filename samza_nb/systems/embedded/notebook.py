"""What a notebook does with the embedded log directly: write values (placed like a producer
would), watermarks and end-of-stream, and read a stream back as a pandas DataFrame."""

from __future__ import annotations

import itertools
import sqlite3
import time
from collections.abc import Callable, Iterable
from typing import Any

import msgspec

from samza_nb.errors import StreamSystemError
from samza_nb.systems.base import MessageKind, Record, StreamSystem
from samza_nb.systems.embedded.sqlite import transaction
from samza_nb.systems.writes import placed_records

__all__ = ["EmbeddedNotebookIO"]

_json_encode = msgspec.json.Encoder().encode
_json_decode = msgspec.json.Decoder().decode

#: Messages per stored row when a notebook writes a large list (``write``).
_WRITE_BATCH = 10_000


class EmbeddedNotebookIO:
    """What a notebook writes to and reads from ``system`` directly; ``db()`` opens its log and
    ``require_partitions(stream)`` gives a stream's partition count or fails naming it."""

    def __init__(
        self, system: StreamSystem, db: Callable[[], sqlite3.Connection], require_partitions: Callable[[str], int]
    ) -> None:
        self._system = system
        self._db = db
        self._require_partitions = require_partitions
        self._round_robin: dict[str, itertools.count[int]] = {}

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
        """Write values to a stream; returns how many were written.

        Placement: ``partition`` if given, else murmur2 of the serialized key when ``key_fn`` is
        given or the value is a ``KV`` (a keyed message: its key and its value; a None key goes to
        partition 0), else round robin. Values and keys are JSON unless
        ``serde``/``key_serde`` (objects with ``to_bytes``) say otherwise.
        """
        count = self.require_open(stream_id)
        placed = placed_records(
            stream_id, values, partitions=count,
            rotation=self._round_robin.setdefault(stream_id, itertools.count()),
            key_fn=key_fn, partition=partition, timestamps=timestamps, serde=serde, key_serde=key_serde,
        )
        per_partition: dict[int, list[Record]] = {}
        for target, record in placed:
            per_partition.setdefault(target, []).append(record)
        for target, records in sorted(per_partition.items()):
            # Rows of at most _WRITE_BATCH messages: a reader decodes whole rows.
            for start in range(0, len(records), _WRITE_BATCH):
                self._system.append(stream_id, target, records[start : start + _WRITE_BATCH])
        return len(placed)

    def write_watermark(self, stream_id: str, partition: int, timestamp: int) -> None:
        """Append a source watermark (null task name) to one partition."""
        self.require_open(stream_id)
        payload = _json_encode({"timestamp": int(timestamp), "taskName": None, "version": 1})
        self._system.append(stream_id, partition, [Record(MessageKind.WATERMARK, None, payload, None)])

    def end_stream(self, stream_id: str) -> None:
        """Mark a bounded stream as ended: an end-of-stream message on every partition. Ending
        an ended stream does nothing; writing to it is an error."""
        count = self._require_partitions(stream_id)
        if self.is_ended(stream_id):
            return
        payload = _json_encode({"taskName": None, "version": 1})
        for partition in range(count):
            self._system.append(stream_id, partition, [Record(MessageKind.END_OF_STREAM, None, payload, None)])
        db = self._db()
        with transaction(db):
            db.execute("INSERT OR IGNORE INTO ended_streams VALUES (?, ?)", (stream_id, time.time()))

    def is_ended(self, stream_id: str) -> bool:
        """Whether :meth:`end_stream` ended this stream."""
        row = self._db().execute("SELECT 1 FROM ended_streams WHERE stream = ?", (stream_id,)).fetchone()
        return row is not None

    def require_open(self, stream_id: str) -> int:
        """The stream's partition count, or an error when it does not exist or has ended."""
        count = self._require_partitions(stream_id)
        if self.is_ended(stream_id):
            name = self._system.name
            msg = (
                f"stream {stream_id!r} of system {name!r} has ended (end_stream); its readers "
                f"stop at the end, so nothing more may be written to it. To write it again from "
                f"the start, delete it first ({name}.delete_stream({stream_id!r}); reset the "
                f"jobs that read it), or give the system a folder of its own (path=...)"
            )
            raise StreamSystemError(msg)
        return count

    def read_frame(
        self, stream_id: str, *, serde: Any = None, key_serde: Any = None
    ) -> Any:
        import pandas as pd

        count = self._require_partitions(stream_id)
        decode_value = serde.from_bytes if serde is not None else _lenient_json
        decode_key = key_serde.from_bytes if key_serde is not None else _lenient_json
        rows = []
        for partition in range(count):
            for offset, record in self._system.read_records(stream_id, partition, 0, 2**62):
                if record.kind != MessageKind.USER:
                    continue
                key = decode_key(record.key) if record.key is not None else None
                rows.append((partition, offset, key, decode_value(record.value), record.timestamp))
        return pd.DataFrame(rows, columns=["partition", "offset", "key", "value", "timestamp"])


def _lenient_json(data: bytes) -> Any:
    try:
        return _json_decode(data)
    except msgspec.DecodeError:
        return bytes(data)
