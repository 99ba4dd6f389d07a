"""The stream-system interface: what the planner and the runtime need of a system.

A system hosts partitioned, offset-addressed streams. Messages are :class:`Record` tuples of
(kind, key bytes, value bytes, timestamp); ``kind`` is Samza's MessageType ordinal (0 user
message, 1 watermark, 2 end-of-stream, 3 drain) and a control message's value is its JSON
payload as in SAMZA.md §5.2. Offsets count messages, starting at 0.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, NamedTuple

from samza_nb.systems.descriptors import InputDescriptor, OutputDescriptor

__all__ = ["MessageKind", "Record", "StreamSystem"]


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


class StreamSystem(ABC):
    """A named stream system (embedded log, Kafka …)."""

    def __init__(self, name: str):
        if not isinstance(name, str) or not name:
            msg = f"a system needs a non-empty name, got {name!r}"
            raise ValueError(msg)
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
    def create_stream(self, stream_id: str, partitions: int) -> bool:
        """Create the stream; True if created, False if it existed with that partition count."""

    @abstractmethod
    def newest_offsets(self, stream_id: str) -> dict[int, int]:
        """Per partition, the offset the next appended message will get (= messages so far)."""

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
    def delete_before(self, stream_id: str, partition: int, offset: int) -> int:
        """Delete messages before ``offset`` (retention); returns how many were deleted."""

    def close(self) -> None:  # noqa: B027 - an optional hook; most systems hold nothing
        """Release connections held by this process."""
