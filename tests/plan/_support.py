"""Test systems and the streams of Samza's TestExecutionPlanner (SAMZA.md §11.5)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from samza_nb.systems import EmbeddedSystem


@dataclass
class FakeSystem:
    """A minimal StreamSystemLike: a name and known partition counts (no I/O)."""

    name: str = "fake"
    counts: dict[str, int] = field(default_factory=dict)
    asked: list[str] = field(default_factory=list)

    def partition_count(self, stream_id: str) -> int | None:
        self.asked.append(stream_id)
        return self.counts.get(stream_id)


@dataclass(frozen=True)
class FakeDescriptor:
    system: Any
    stream_id: str
    partitions: int | None = None
    serde: Any = "json"


class Streams:
    """input1=64, input2=16, input3=32, input4=512; output1=8, output2=16 (SAMZA.md §11.5)."""

    COUNTS = {"input1": 64, "input2": 16, "input3": 32, "input4": 512, "output1": 8, "output2": 16}

    def __init__(self, tmp_path: Any):
        self.system = EmbeddedSystem("system1", path=tmp_path / "log")

    def input(self, stream_id: str) -> Any:
        return self.system.input(stream_id, partitions=self.COUNTS[stream_id])

    def output(self, stream_id: str) -> Any:
        return self.system.output(stream_id, partitions=self.COUNTS[stream_id])
