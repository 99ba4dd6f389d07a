"""SystemStream and SystemStreamPartition: where messages come from (SAMZA.md §0, §3.2).

Both are tuples underneath, so they are immutable, hash and compare in C and cost little as
dict keys in the runtime's hot paths. Ordering is Samza's: system, then stream, then partition,
then key bucket (strings compare by code point, which matches Java for every name that stays in
the Basic Multilingual Plane).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from samza_nb.errors import ModelError

__all__ = ["SystemStream", "SystemStreamPartition"]


class _SystemStreamFields(NamedTuple):
    system: str
    stream: str


class SystemStream(_SystemStreamFields):
    """A stream of a system, e.g. ``SystemStream("kafka", "PageViewEvent")``.

    >>> SystemStream("kafka", "PVE")
    SystemStream(system='kafka', stream='PVE')
    >>> str(SystemStream("kafka", "PVE"))
    'SystemStream [system=kafka, stream=PVE]'
    >>> SystemStream.parse("kafka.PVE")
    SystemStream(system='kafka', stream='PVE')
    """

    __slots__ = ()

    def __new__(cls, system: str, stream: str) -> SystemStream:
        if not isinstance(system, str) or not system:
            msg = f"SystemStream: system must be a non-empty string, got {system!r}"
            raise ModelError(msg)
        if not isinstance(stream, str) or not stream:
            msg = f"SystemStream: stream must be a non-empty string, got {stream!r}"
            raise ModelError(msg)
        return super().__new__(cls, system, stream)

    @classmethod
    def parse(cls, text: str) -> SystemStream:
        """Parse ``"system.stream"`` (split at the first dot, as Samza's StreamUtil does)."""
        system, dot, stream = text.strip().partition(".")
        if not dot:
            msg = f"expected 'system.stream', got {text!r}"
            raise ModelError(msg)
        return cls(system, stream)

    def partition(self, partition: int, key_bucket: int = -1) -> SystemStreamPartition:
        """The SystemStreamPartition ``partition`` of this stream."""
        return SystemStreamPartition(self.system, self.stream, partition, key_bucket)

    def __str__(self) -> str:
        return f"SystemStream [system={self.system}, stream={self.stream}]"


class _SystemStreamPartitionFields(NamedTuple):
    system: str
    stream: str
    partition: int
    key_bucket: int = -1


class SystemStreamPartition(_SystemStreamPartitionFields):
    """One partition of a stream; ``key_bucket`` is -1 unless elasticity splits the partition.

    >>> ssp = SystemStreamPartition("kafka", "PVE", 3)
    >>> str(ssp)
    'SystemStreamPartition [kafka, PVE, 3]'
    >>> str(ssp.with_key_bucket(1))
    'SystemStreamPartition [kafka, PVE, 3, 1]'
    >>> ssp.to_json()
    {'system': 'kafka', 'partition': 3, 'stream': 'PVE', 'keyBucket': -1}
    >>> SystemStreamPartition("kafka", "PVE", 10) > SystemStreamPartition("kafka", "PVE", 9)
    True
    """

    __slots__ = ()

    def __new__(
        cls, system: str, stream: str, partition: int, key_bucket: int = -1
    ) -> SystemStreamPartition:
        if not isinstance(system, str) or not system:
            msg = f"SystemStreamPartition: system must be a non-empty string, got {system!r}"
            raise ModelError(msg)
        if not isinstance(stream, str) or not stream:
            msg = f"SystemStreamPartition: stream must be a non-empty string, got {stream!r}"
            raise ModelError(msg)
        if type(partition) is not int or partition < 0:
            msg = (
                f"SystemStreamPartition [{system}, {stream}]: partition must be an integer >= 0, "
                f"got {partition!r}"
            )
            raise ModelError(msg)
        if type(key_bucket) is not int or key_bucket < -1:
            msg = (
                f"SystemStreamPartition [{system}, {stream}, {partition}]: key_bucket must be an "
                f"integer >= -1 (-1 = whole partition), got {key_bucket!r}"
            )
            raise ModelError(msg)
        return super().__new__(cls, system, stream, partition, key_bucket)

    @property
    def system_stream(self) -> SystemStream:
        return SystemStream(self.system, self.stream)

    def with_key_bucket(self, key_bucket: int) -> SystemStreamPartition:
        """The same partition with another key bucket (-1 for the whole partition)."""
        return SystemStreamPartition(self.system, self.stream, self.partition, key_bucket)

    def __str__(self) -> str:
        if self.key_bucket == -1:
            return f"SystemStreamPartition [{self.system}, {self.stream}, {self.partition}]"
        return (
            f"SystemStreamPartition [{self.system}, {self.stream}, {self.partition}, "
            f"{self.key_bucket}]"
        )

    def to_json(self) -> dict[str, Any]:
        """Samza's JSON object for an SSP value (field order as Samza's mapper emits it)."""
        return {
            "system": self.system,
            "partition": self.partition,
            "stream": self.stream,
            "keyBucket": self.key_bucket,
        }

    @classmethod
    def from_json(cls, value: Any) -> SystemStreamPartition:
        """Read Samza's JSON object; ``keyBucket`` is optional (pre-elasticity models)."""
        if not isinstance(value, dict):
            msg = f"SystemStreamPartition JSON must be an object, got {value!r}"
            raise ModelError(msg)
        try:
            system, stream, partition = value["system"], value["stream"], value["partition"]
        except KeyError as error:
            msg = f"SystemStreamPartition JSON {value!r} is missing {error.args[0]!r}"
            raise ModelError(msg) from error
        key_bucket = value.get("keyBucket", -1)
        return cls(system, stream, _as_int(partition, value), _as_int(key_bucket, value))

    def to_map_key(self) -> str:
        """Samza's form of an SSP used as a JSON map key: ``system.stream.partition``.

        The key bucket is dropped, as in Samza.
        """
        return f"{self.system}.{self.stream}.{self.partition}"

    @classmethod
    def from_map_key(cls, text: str) -> SystemStreamPartition:
        """Parse ``system.stream.partition``.

        The system ends at the first dot and the partition starts after the last one, so stream
        names containing dots round-trip (Samza's current parser keeps only the first three
        dot-separated parts and loses them).
        """
        first, last = text.find("."), text.rfind(".")
        if first < 0 or last <= first:
            msg = f"expected 'system.stream.partition', got {text!r}"
            raise ModelError(msg)
        try:
            partition = int(text[last + 1 :])
        except ValueError as error:
            msg = f"expected 'system.stream.partition' with an integer partition, got {text!r}"
            raise ModelError(msg) from error
        return cls(text[:first], text[first + 1 : last], partition)


def _as_int(value: Any, where: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, str) and value.lstrip("-").isdigit():
            return int(value)
        msg = f"expected an integer in SystemStreamPartition JSON {where!r}, got {value!r}"
        raise ModelError(msg)
    return value
