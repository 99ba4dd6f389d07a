"""Which processors of a distributed job are live, as its coordinator sees them.

A job on the embedded coordinator runs while a process holds its job home's lease; a job on
ZooKeeper or Azure runs while any of its processors is registered live there (an ephemeral
node, a fresh heartbeat row). Reset refuses a running job and ``samza-nb drain --wait`` waits
for the last processor to leave, both by asking here.
"""

from __future__ import annotations

from typing import Any

from samza_nb.config import Config

__all__ = ["LiveProcessors", "live_processors"]


class LiveProcessors:
    """The live processor ids of a job, and the run ids they carry (``where``: the
    coordination state read, no secret)."""

    def __init__(self, ids: list[str], where: str, run_ids: frozenset[str] = frozenset()) -> None:
        self.ids = ids
        self.where = where
        self.run_ids = run_ids


def live_processors(config: Config) -> LiveProcessors | None:
    """The job's live processors per its ``job.coordinator.factory``; None for the embedded
    coordinator (its job-home lease says whether it runs)."""
    coordinator = config.get_str("job.coordinator.factory") or "embedded"
    observer: Any
    if coordinator == "zookeeper":
        from samza_nb.coordination.zk.observer import ZkJobObserver

        observer = ZkJobObserver(config.get_str("job.coordinator.zk.connect") or "", config)
    elif coordinator == "azure":
        from samza_nb.coordination.azure.observer import AzureJobObserver

        observer = AzureJobObserver(config)
    else:
        return None
    try:
        observed = observer.observe()
    finally:
        observer.close()
    # ZooKeeper observes ObservedProcessor nodes; Azure live rows as processor id -> location.
    ids = (
        sorted(observed.processors)
        if isinstance(observed.processors, dict)
        else [processor.processor_id for processor in observed.processors]
    )
    return LiveProcessors(ids, observed.where, observed.run_ids)
