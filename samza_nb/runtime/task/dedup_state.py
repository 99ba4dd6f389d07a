"""Readers' dedup state, carried in the task's checkpoint (``control["dedup"]``).

A Kafka reader drops the second copy of an idempotent append (systems/kafka/reader.py); to do
so it must know what was delivered before where it starts. A process that read the partition
knows; a cold one (a restart, a task moved) used to scan back ``dedup_lookback`` offsets (up to
a million) before its first read. The task now commits, with its offsets, each Kafka input's
dedup state as of that offset (:func:`dedup_states`), and a cold read starts from it
(:func:`resume_dedup`): it fetches only new records, and it is exact, where the scan was right
only inside its window.

A store's catch-up from its changelog is a cold read too: runtime/task/changelog_dedup.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from samza_nb.runtime.epoch import ssp_key
from samza_nb.systems.kafka import KafkaSystem

if TYPE_CHECKING:
    from samza_nb.runtime.epoch import EpochAssignment
    from samza_nb.systems.base import StreamSystem

__all__ = ["DEDUP", "dedup_states", "resume_dedup"]

#: The key of the dedup states in a checkpoint's control state.
DEDUP = "dedup"


def resume_dedup(system: StreamSystem, assignment: EpochAssignment, stream_id: str, partition: int) -> None:
    """Before a task reads a partition of ``system``: a Kafka partition takes the dedup state
    the task's checkpoint carries (nothing changes where this process already reads the
    partition from there)."""
    if isinstance(system, KafkaSystem):
        carried = assignment.control.get(DEDUP, {}).get(ssp_key(stream_id, partition))
        system.resume_dedup(stream_id, partition, carried)


def dedup_states(
    systems: Mapping[str, StreamSystem], assignment: EpochAssignment, offsets: Mapping[str, int]
) -> dict[str, Any]:
    """Per Kafka partition the task reads, the dedup state as of its new offset: its reads'
    state when they stopped there, else (not read this epoch) the one it started from."""
    before = assignment.control.get(DEDUP, {})
    states: dict[str, Any] = {}
    for stream_id, partition in assignment.ssps:
        system = systems[stream_id]
        if not isinstance(system, KafkaSystem):
            continue
        key = ssp_key(stream_id, partition)
        offset = offsets.get(key)
        state = system.dedup_state(stream_id, partition)
        if state is None or state["position"] != offset:
            state = before.get(key)
        if state is not None and state.get("position") == offset:
            states[key] = state
    return states
