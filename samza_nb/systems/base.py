"""The stream-system interface: what the planner and the runtime need of a system.

A system hosts partitioned, offset-addressed streams. Messages are :class:`Record` tuples of
(kind, key bytes, value bytes, timestamp); ``kind`` is Samza's MessageType ordinal (0 user
message, 1 watermark, 2 end-of-stream, 3 drain) and a control message's value is its JSON
payload as in SAMZA.md §5.2.

Offsets are the system's own: the embedded log numbers messages 0, 1, 2 … with no gaps; Kafka's
offsets have gaps (transaction markers, compaction). The runtime therefore never computes an
offset from a count: it reads with :meth:`StreamSystem.fetch`, which says where the next read
starts, and bounds an epoch by an offset (the newest offset seen) plus a message limit.

The stream descriptors a system hands out (``system.input("clicks")``) live here too, not in
``descriptors`` (their import path): a descriptor names its system and a system makes its
descriptors, so one module holds both and imports go one way.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from samza_nb.errors import ConfigError

__all__ = [
    "Fetched",
    "InputDescriptor",
    "MessageKind",
    "OutputDescriptor",
    "Record",
    "StreamDescriptor",
    "StreamSystem",
    "validate_stream_id",
]


class MessageKind:
    """Samza's MessageType ordinals, the type tags of stored messages."""

    USER = 0
    WATERMARK = 1
    END_OF_STREAM = 2
    DRAIN = 3


class Record(NamedTuple):
    """One stored message."""

    kind: int
    key: bytes | None
    value: bytes
    timestamp: int | None = None


class Fetched(NamedTuple):
    """What one :meth:`StreamSystem.fetch` returns.

    ``batches``: (offset of the first record, records) with contiguous offsets inside a batch;
    ``next_offset``: where the next read of the partition starts, past every returned record and
    past any gap (markers, compacted-away records) the system skipped on the way to ``bound``;
    ``deleted_below``: set when the requested offset was below the oldest stored one (retention
    deleted what lay there): that oldest offset, where the read started instead;
    ``held_back``: with ``producer_seq_below``, the offset of the first record the read left out
    for its producer sequence number (None when it left none out): a reader that must not pass
    records it did not apply (a store's catch-up) stops there.
    """

    batches: list[tuple[int, Sequence[Record]]]
    next_offset: int
    deleted_below: int | None = None
    held_back: int | None = None

    @property
    def messages(self) -> int:
        return sum(len(records) for _first, records in self.batches)


class StreamSystem(ABC):
    """A named stream system (embedded log, Kafka …)."""

    #: The longest stream name the system holds (None: no bound); the planner refuses an
    #: intermediate stream or changelog named longer.
    longest_stream_id: int | None = None

    def __init__(self, name: str):
        if not isinstance(name, str) or not name:
            msg = f"a system needs a non-empty name, got {name!r}"
            raise ConfigError(msg)
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    def input(
        self, stream_id: str, *, partitions: int | None = None, serde: Any = "json"
    ) -> InputDescriptor:
        """Describe an input stream of this system (no I/O)."""
        return InputDescriptor(self, stream_id, partitions, serde)

    def output(
        self, stream_id: str, *, partitions: int | None = None, serde: Any = "json"
    ) -> OutputDescriptor:
        """Describe an output stream of this system (no I/O)."""
        return OutputDescriptor(self, stream_id, partitions, serde)

    # -- admin -----------------------------------------------------------------------------
    @abstractmethod
    def partition_count(self, stream_id: str) -> int | None:
        """The stream's partition count, or None when it does not exist."""

    @abstractmethod
    def create_stream(self, stream_id: str, partitions: int, *, compacted: bool = False) -> bool:
        """Create the stream; True if created, False if it existed with that partition count
        (another count is a :class:`~samza_nb.errors.StreamSystemError` naming both).
        ``compacted``: a store changelog, where only the latest record per key must be kept."""

    @abstractmethod
    def newest_offsets(self, stream_id: str) -> dict[int, int]:
        """Per partition, the offset the next appended message will get (Kafka's high
        watermark). Lag is reported as this minus a checkpointed offset, as Kafka does."""

    def forget_cached_offsets(self, stream_id: str) -> None:
        """Drop what this process remembers of the stream's offsets (a run starts with what
        the system says now: another process may have recreated the stream meanwhile). A
        system that keeps nothing does nothing."""
        return None

    def incarnation(self, stream_id: str) -> str | None:
        """What tells this stream apart from one of the same name made after it was deleted
        (runtime/offsets.py: a task whose checkpoint is of the old stream reads the new one
        from the offset default); None when the system cannot tell (a Kafka topic: its id is
        not asked for) or the stream does not exist."""
        return None

    def control_messages(self, stream_id: str, partition: int, start: int, end: int) -> int:
        """How many control messages (watermarks, end-of-stream, drain) hold offsets in
        ``[start, end)``, so lag can count messages only. A system that does not know answers
        0: its lag is then a count of offsets, an upper bound as Kafka's consumer lag is."""
        return 0

    @abstractmethod
    def oldest_offsets(self, stream_id: str) -> dict[int, int]:
        """Per partition, the oldest offset still stored (retention may have deleted older)."""

    @abstractmethod
    def delete_stream(self, stream_id: str) -> None:
        """Remove the stream and its data."""

    @abstractmethod
    def list_streams(self) -> dict[str, int]:
        """Every stream of the system with its partition count."""

    # -- data ------------------------------------------------------------------------------
    @abstractmethod
    def append(
        self,
        stream_id: str,
        partition: int,
        records: Sequence[Record],
        *,
        producer: str | None = None,
        producer_seq: int | None = None,
    ) -> bool:
        """Append records to one partition. With (producer, producer_seq) the append is
        idempotent: a second append with the same pair is ignored (returns False)."""

    @abstractmethod
    def read_records(
        self, stream_id: str, partition: int, offset: int, max_messages: int
    ) -> list[tuple[int, Record]]:
        """Up to ``max_messages`` (offset, record) pairs from ``offset`` on."""

    @abstractmethod
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
        """Records with ``offset <= record offset < bound``, at most ``max_messages`` of them,
        in batches; the runtime's read path. Records appended with (producer, producer_seq)
        twice are returned once. ``producer_seq_below`` keeps only records appended with a
        producer sequence number below it (a changelog restore skips epochs that never
        committed). An offset below the oldest stored one starts at the oldest."""

    def read_frame(self, stream_id: str, *, serde: Any = None, key_serde: Any = None) -> Any:
        """Every user message of the stream as a pandas DataFrame (partition, offset, key,
        value, timestamp), decoded with the serdes given (JSON where possible otherwise)."""
        import pandas as pd

        decode_value = serde.from_bytes if serde is not None else _lenient_json
        decode_key = key_serde.from_bytes if key_serde is not None else _lenient_json
        rows = []
        for partition, newest in sorted(self.newest_offsets(stream_id).items()):
            offset = 0
            while offset < newest:
                fetched = self.fetch(stream_id, partition, offset, newest, 100_000)
                for first, records in fetched.batches:
                    for index, (kind, key, value, timestamp) in enumerate(records):
                        if kind == MessageKind.USER:
                            decoded_key = decode_key(key) if key is not None else None
                            # A record without a value is a tombstone (a compacted topic's
                            # delete): its value is None.
                            decoded = decode_value(value) if value is not None else None
                            rows.append((partition, first + index, decoded_key, decoded, timestamp))
                if fetched.next_offset <= offset:
                    break
                offset = fetched.next_offset
        return pd.DataFrame(rows, columns=["partition", "offset", "key", "value", "timestamp"])

    def tombstones_dropped_below(self, stream_id: str, partition: int) -> int:
        """Offset below which compaction dropped deletes (tombstones) of this partition: a
        reader that stopped below it must re-read from the start (0: none dropped)."""
        return 0

    @abstractmethod
    def delete_before(self, stream_id: str, partition: int, offset: int) -> int:
        """Delete messages before ``offset`` (retention); returns how many were deleted."""

    def delete_before_all(self, deletions: Sequence[tuple[str, int, int]]) -> int:
        """:meth:`delete_before` for each (stream, partition, offset); how many were deleted."""
        return sum(self.delete_before(stream_id, partition, offset) for stream_id, partition, offset in deletions)

    def close(self) -> None:  # noqa: B027 - an optional hook; most systems hold nothing
        """Release connections held by this process."""


# -- descriptors: what an application declares about its inputs and outputs ---------------
_STREAM_ID = re.compile(r"^[A-Za-z0-9_.-]+$")


def validate_stream_id(stream_id: str) -> str:
    if not isinstance(stream_id, str) or not _STREAM_ID.match(stream_id):
        msg = f"stream id {stream_id!r} must be non-empty and match [A-Za-z0-9_.-]+"
        raise ConfigError(msg)
    return stream_id


@dataclass(frozen=True, eq=False)
class StreamDescriptor:
    system: StreamSystem
    stream_id: str
    partitions: int | None = None
    serde: Any = "json"

    def __post_init__(self) -> None:
        validate_stream_id(self.stream_id)
        if self.partitions is not None and (
            not isinstance(self.partitions, int) or self.partitions <= 0
        ):
            msg = f"stream {self.stream_id!r}: partitions must be a positive int, got {self.partitions!r}"
            raise ConfigError(msg)

    @property
    def system_name(self) -> str:
        return self.system.name

    def __repr__(self) -> str:
        count = "?" if self.partitions is None else self.partitions
        return f"{type(self).__name__}({self.system.name}.{self.stream_id}, partitions={count})"


@dataclass(frozen=True, eq=False)
class InputDescriptor(StreamDescriptor):
    """An input stream of an application (``app.input(descriptor)``)."""


@dataclass(frozen=True, eq=False)
class OutputDescriptor(StreamDescriptor):
    """An output stream of an application (``app.output(descriptor)``)."""


def _lenient_json(data: bytes) -> Any:
    """The JSON value where the bytes are JSON, else the bytes."""
    import msgspec

    try:
        return msgspec.json.decode(data)
    except msgspec.DecodeError:
        return bytes(data)
