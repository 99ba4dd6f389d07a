"""Starting a job over: delete what it keeps between runs (``samza-nb reset``).

A job keeps its job home (metadata store, stores, lease and incarnation files), its
intermediate streams, its store changelogs and, under exactly-once, its checkpoint topic. Reset deletes them all, under the job's lease,
so a running job is never reset under its feet; the job's inputs and outputs stay.
"""

from __future__ import annotations

import shutil

from samza_nb.coordination.embedded_lease import EmbeddedJobLease
from samza_nb.plan.execution_plan import ExecutionPlan
from samza_nb.runtime.context import default_system_of, system_of
from samza_nb.runtime.exactly_once import checkpoint_system, checkpoint_topic, exactly_once
from samza_nb.runtime.home import job_home
from samza_nb.runtime.job_setup import open_metadata_store

__all__ = ["reset_job"]


def reset_job(plan: ExecutionPlan, *, dry_run: bool = False) -> list[str]:
    """Delete the job's home, intermediate streams and changelogs; returns what was (or, with
    ``dry_run``, would be) deleted. Raises JobLeaseError while the job runs."""
    home = job_home(plan)
    doomed = []
    streams = [(system_of(plan, sid), sid) for sid, info in plan.streams.items() if info.kind == "intermediate"]
    system = default_system_of(plan)
    if system is not None:
        streams += [(system, plan.changelog_stream_id(store)) for store in plan.store_names]
    if exactly_once(plan):  # the checkpoints live in the checkpoint topic
        streams.append((checkpoint_system(plan), checkpoint_topic(plan)))
    existing = [(owner, sid) for owner, sid in streams if owner.partition_count(sid) is not None]
    doomed += [f"stream {sid!r} of system {owner.name!r}" for owner, sid in existing]
    if home.exists():
        doomed.append(f"job home {str(home)!r}")
    if dry_run or not doomed:
        return doomed
    store = open_metadata_store(plan.config, home)
    lease = EmbeddedJobLease(home, store, label="samza-nb reset")
    lease.acquire()
    try:
        for owner, sid in existing:
            owner.delete_stream(sid)
    finally:
        lease.release()
        store.close()
    shutil.rmtree(home, ignore_errors=True)
    return doomed
