"""A store's changelog dedup state, kept in the store's metadata beside the changelog offset it
reflects (``changelogDedup``).

A store's catch-up from its Kafka changelog (a stale store of a restarted processor, a hot
standby in a new process) is a cold read: without what was delivered below its offset the
reader scans back ``dedup_lookback`` offsets (up to a million) first. The store keeps that
state instead — after a catch-up (:func:`changelog_state_after_catch_up`) and after the task's
own append (:func:`changelog_state_after_append`) — and its next catch-up starts from it
(:func:`resume_changelog`): it fetches only the tail.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from samza_nb.systems.kafka import KafkaSystem
from samza_nb.systems.kafka.dedup import DedupTracker

__all__ = [
    "CHANGELOG_DEDUP",
    "changelog_dedup_kept",
    "changelog_state_after_append",
    "changelog_state_after_catch_up",
    "resume_changelog",
]

#: The key of the changelog's dedup state in a store's metadata.
CHANGELOG_DEDUP = "changelogDedup"


def changelog_dedup_kept(system: Any) -> bool:
    """Whether a store keeps its changelog's dedup state (a Kafka changelog)."""
    return isinstance(system, KafkaSystem)


def resume_changelog(system: Any, stream_id: str, partition: int, meta: Mapping[str, Any], offset: int) -> None:
    """Before a store catches up from its changelog at ``offset``: take the dedup state its
    metadata keeps for that offset (a Kafka changelog; nothing where it is of another offset)."""
    state = meta.get(CHANGELOG_DEDUP)
    if isinstance(system, KafkaSystem) and state and int(state.get("position", -1)) == offset:
        system.resume_dedup(stream_id, partition, state)


def changelog_state_after_catch_up(system: Any, stream_id: str, partition: int, offset: int) -> dict[str, Any]:
    """``{CHANGELOG_DEDUP: state}`` for a store's metadata after a catch-up that read the
    changelog up to ``offset`` ({} when the reads' state is not of that offset)."""
    if not isinstance(system, KafkaSystem):
        return {}
    state = system.dedup_state(stream_id, partition)
    return {CHANGELOG_DEDUP: state} if state is not None and state["position"] == offset else {}


def changelog_state_after_append(
    system: Any, meta: Mapping[str, Any], own_offset: int | None, producer: str, seq: int, count: int, offset: int
) -> dict[str, Any]:
    """``{CHANGELOG_DEDUP: state}`` for a store's metadata after the task appended ``count``
    records as (``producer``, ``seq``) and the store now reflects the changelog up to
    ``offset``. A changelog partition has one writer, the task: what may still be appended
    again after ``offset`` is of the task's own plans, which the state kept for ``own_offset``
    (the store's offset before the append) and this append tell. Without a state for
    ``own_offset`` it starts from this append alone: the task's earlier plans committed and
    never append again."""
    if not isinstance(system, KafkaSystem) or count <= 0:
        return {}
    before = meta.get(CHANGELOG_DEDUP)
    if before and own_offset is not None and int(before.get("position", -1)) == own_offset:
        tracker = DedupTracker.from_snapshot(before)
    else:
        tracker = DedupTracker(offset)
    tracker.admit(producer, seq, count - 1)
    tracker.position = offset
    tracker.forget_superseded()
    return {CHANGELOG_DEDUP: tracker.snapshot()}
