"""The data of one task epoch: what a processor hands a task and what the task returns.

Both are plain data: they are shipped to Spark executors and back, so they hold no plan, no
system and no open resource.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["EpochAssignment", "EpochResult", "ssp_key"]


def ssp_key(stream_id: str, partition: int) -> str:
    """The key of a stream partition in offsets, bounds and checkpoints: ``stream#partition``."""
    return f"{stream_id}#{partition}"


@dataclass
class EpochAssignment:
    """What a processor tells a task about one epoch.

    ``bounds`` are offsets (exclusive) the task reads up to and ``max_messages`` caps how many
    messages it reads per partition: together with ``start_offsets`` they fix exactly which
    messages the epoch reads, so a retried epoch reads the same ones.
    """

    task_name: str
    producer: str
    seq: int
    now_ms: int
    run_id: str
    location_id: str
    store_root: str
    changelog_partition: int
    ssps: list[tuple[str, int]]
    start_offsets: dict[str, int]
    bounds: dict[str, int]
    control: dict[str, Any]
    producer_counts: dict[str, int]
    max_messages: int = 50_000
    drain: bool = False
    skip_errors: bool = False
    #: ``task.watermark.idle.timeout.ms`` and ``task.watermark.quorum.size.percentage``.
    watermark_idle_timeout_ms: int = -1
    watermark_quorum: float = 0.5
    #: Operators whose latest received messages the task keeps (op id → how many).
    samples: dict[str, int] = field(default_factory=dict)
    #: Whether an input starts below its checkpoint (``samza.reset.offset``, an out-of-range
    #: rule): the run reads older messages again, so its operators' watermarks start over.
    rewound: bool = False
    #: The incarnations of the task's inputs its offsets are of (runtime/offsets.py), written
    #: with its checkpoint.
    inputs: dict[str, str] = field(default_factory=dict)
    #: Changelog SSP keys of the task found made again behind its checkpoint (shorter than
    #: it says: broker data lost), until the task commits: its stores look (runtime/task/stores.py).
    changelogs_made_again: list[str] = field(default_factory=list)
    #: How many times the epoch ran before in this run of the job (its workers were lost):
    #: any attempt may have committed it (exactly-once reads the checkpoint topic then).
    retry: int = 0

    def backlog(self) -> int:
        """How many messages the task epoch may read: up to its bounds, at most
        ``max_messages`` per partition (an estimate of its work: control messages count too)."""
        start = self.start_offsets
        return sum(
            min(max(0, bound - start.get(key, 0)), self.max_messages) for key, bound in self.bounds.items()
        )


@dataclass
class EpochResult:
    """What a task returns after one epoch.

    ``error`` describes a failure (operator or store, task, SSP, offset, the original
    exception pickled when it can be); the processor turns it into a TaskError.
    """

    task_name: str
    seq: int
    offsets: dict[str, int]
    control: dict[str, Any]
    end_of_stream: bool = False
    drained: bool = False
    messages_in: dict[str, int] = field(default_factory=dict)
    messages_out: dict[str, int] = field(default_factory=dict)
    operator_counts: dict[str, int] = field(default_factory=dict)
    #: Per operator (only those with any): messages skipped after an error, dropped (None).
    operator_skipped: dict[str, int] = field(default_factory=dict)
    operator_dropped: dict[str, int] = field(default_factory=dict)
    skipped: int = 0
    restored_records: int = 0
    restore_seconds: float = 0.0
    restores: int = 0
    #: Of ``restores``, those that replayed a changelog from its start.
    full_restores: int = 0
    restored_bytes: int = 0
    seconds: float = 0.0
    replayed: bool = False
    #: Stores rebuilt from their changelog although their files were there, and why.
    rebuilt: list[str] = field(default_factory=list)
    #: Offsets retention deleted before the epoch read them, one note per read that met them.
    deleted_unread: list[str] = field(default_factory=list)
    #: The latest messages each sampled operator received, as text, oldest first.
    samples: dict[str, list[str]] = field(default_factory=dict)
    error: dict[str, Any] | None = None
    #: Where the task's stores are, when not at its processor's location: an epoch on a
    #: cluster's executors keeps them on the executor's host (runtime/executors/spark_jobs.py).
    location_id: str = ""
