"""Stream descriptors: what an application declares about its inputs and outputs.

Building a descriptor does no I/O. The planner reads ``system``, ``stream_id``, ``partitions``
and ``serde`` (a shorthand string or a serde object, resolved by the planner).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from samza_nb.errors import ConfigError

if TYPE_CHECKING:
    from samza_nb.systems.base import StreamSystem

__all__ = ["InputDescriptor", "OutputDescriptor", "StreamDescriptor", "validate_stream_id"]

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
