"""What a process's reads of a Kafka partition delivered: the dedup trackers.

A :class:`DedupTracker` per (topic, partition) remembers, per producer and sequence number, the
highest ordinal a read delivered (systems/kafka/reader.py explains the headers). A read that
starts where the process's tracker stopped uses it; a cold read starts from the state the
reader's checkpoint carries (:func:`resume_tracker`), else rebuilds it by scanning back
``dedup_lookback`` offsets (:func:`rebuilt_tracker`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any, Protocol

from samza_nb.systems.kafka.reader import consume_range, decode_message

__all__ = ["DedupTracker", "TrackerHome", "rebuilt_tracker", "resume_tracker", "tracker_state"]

# Keep the highest ordinals of this many recent sequence numbers per producer.
_SEQS_KEPT = 4096
# ... and in a persisted snapshot, of this many (a producer repeats only its newest append).
_SEQS_SNAPSHOT = 4
# Per producing task, the producers (epoch plans) of this many latest plans are remembered.
_PLANS_KEPT = 2


class DedupTracker:
    """What one reader of a partition has delivered, up to ``position``."""

    __slots__ = ("position", "producers")

    def __init__(self, position: int):
        self.position = position
        self.producers: dict[str, dict[int, int]] = {}

    def snapshot(self) -> dict[str, Any]:
        """What a reader starting at ``position`` must know to drop the duplicates still to
        come, as JSON-ready data (persisted with the reader's checkpoint).

        The runtime's producers are ``<job>/<task>@<epoch plan id>``: a task appends again
        only an epoch it has not committed, with that epoch's plan, and makes a new plan only
        after the commit. So once a record of a task's newer plan is in the partition, its
        older plans never append again: the snapshot keeps, per producing task, its last plan
        (first seen last) — and the one before, for the late append of a processor that was
        frozen while its task moved and a new plan was made — and of every producer its newest
        sequence numbers."""
        kept = {}
        for producer in sorted(self._current()):
            seen = self.producers[producer]
            kept[producer] = {str(seq): seen[seq] for seq in sorted(seen)[-_SEQS_SNAPSHOT:]}
        return {"position": self.position, "producers": kept}

    def _current(self) -> list[str]:
        """Per producing task, its last ``_PLANS_KEPT`` producers (see :meth:`snapshot`)."""
        last: dict[str, list[str]] = {}
        for producer in self.producers:
            plans = last.setdefault(producer.rpartition("@")[0] or producer, [])
            plans.append(producer)
            if len(plans) > _PLANS_KEPT:
                del plans[0]
        return [producer for plans in last.values() for producer in plans]

    def forget_superseded(self) -> None:
        """Drop the producers a newer plan of their task superseded (they never append
        again): a long-running reader's memory stays bounded by the producing tasks."""
        current = set(self._current())
        if len(current) < len(self.producers):
            self.producers = {p: seen for p, seen in self.producers.items() if p in current}

    @classmethod
    def from_snapshot(cls, state: Mapping[str, Any]) -> DedupTracker:
        """The tracker a :meth:`snapshot` describes."""
        tracker = cls(int(state["position"]))
        for producer, seen in dict(state.get("producers", {})).items():
            tracker.producers[str(producer)] = {int(seq): int(ordinal) for seq, ordinal in dict(seen).items()}
        return tracker

    def admit(self, producer: str, seq: int, ordinal: int) -> bool:
        """Whether the record is new (and remember it)."""
        seen = self.producers.get(producer)
        if seen is None:
            seen = self.producers[producer] = {}
        highest = seen.get(seq)
        if highest is not None and ordinal <= highest:
            return False
        seen[seq] = ordinal
        if len(seen) > _SEQS_KEPT:
            for old in sorted(seen)[: len(seen) - _SEQS_KEPT]:
                del seen[old]
        return True



class TrackerHome(Protocol):
    """Where a process keeps its trackers and reads with (systems/kafka/clients.py's
    ProcessClients): the functions below ask no more of it."""

    @property
    def lock(self) -> AbstractContextManager[Any]: ...

    @property
    def trackers(self) -> dict[tuple[str, int], DedupTracker]: ...

    def consumer(self) -> Any: ...

    def count_fetched(self, topic: str, partition: int, count: int) -> None: ...


def tracker_state(clients: TrackerHome, stream_id: str, partition: int) -> dict[str, Any] | None:
    """The snapshot of the partition's tracker (None: no read met an idempotent append)."""
    with clients.lock:
        tracker = clients.trackers.get((stream_id, partition))
        if tracker is None:
            return None
        tracker.forget_superseded()
        return tracker.snapshot()


def resume_tracker(clients: TrackerHome, stream_id: str, partition: int, state: Mapping[str, Any] | None) -> bool:
    """Install the tracker ``state`` describes, unless the process's own tracker of the
    partition stands at the same position; returns whether it was installed."""
    if not state:
        return False
    key = (stream_id, partition)
    with clients.lock:
        existing = clients.trackers.get(key)
        if existing is not None and existing.position == int(state["position"]):
            return False
        clients.trackers[key] = DedupTracker.from_snapshot(state)
        return True


def rebuilt_tracker(
    clients: TrackerHome,
    stream_id: str,
    partition: int,
    offset: int,
    *,
    oldest: Callable[[], int],
    lookback: int,
    stall_timeout: float,
    describe: str,
) -> DedupTracker:
    """A tracker of what was appended below ``offset``: extend the partition's tracker if it
    stopped short of ``offset``, else scan back ``lookback`` offsets (not below ``oldest()``)."""
    existing = clients.trackers.get((stream_id, partition))
    if existing is not None and existing.position < offset <= existing.position + lookback:
        tracker, start = existing, existing.position
    else:
        start = max(oldest(), offset - lookback)
        tracker = DedupTracker(start)
    position = start
    while position < offset:
        messages, next_offset, _ = consume_range(
            clients.consumer(), stream_id, partition, position, offset, 50_000,
            stall_timeout=stall_timeout, describe=describe,
        )
        clients.count_fetched(stream_id, partition, len(messages))
        for message in messages:
            _record, producer, seq, ordinal = decode_message(message)
            if producer is not None:
                tracker.admit(producer, seq, ordinal)
        if next_offset <= position:
            break
        position = next_offset
    tracker.position = offset
    return tracker
