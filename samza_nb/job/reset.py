"""Starting a job over: delete what it keeps between runs (``samza-nb reset``).

A job keeps its job home (metadata store, stores, lease and incarnation files), its
intermediate streams, its store changelogs, under exactly-once its checkpoint topic and, when it
is coordinated through ZooKeeper or Azure, its records in that service's metadata store
(checkpoints, run id, task assignments). Reset deletes them all; the job's inputs and outputs
stay. A running job is never reset under its feet: on the embedded coordinator reset takes the
job home's lease, on ZooKeeper or Azure it refuses while any processor of the job is live.
"""

from __future__ import annotations

import shutil

from samza_nb.coordination.embedded_lease import EmbeddedJobLease
from samza_nb.coordination.liveness import live_processors
from samza_nb.errors import JobLeaseError
from samza_nb.job.home import job_home
from samza_nb.job.preparation import metadata_store_name, open_metadata_store
from samza_nb.metadata import EmbeddedMetadataStore
from samza_nb.plan.execution_plan import ExecutionPlan
from samza_nb.runtime.checkpoint_topic import legacy_checkpoint_topic
from samza_nb.runtime.plan_systems import default_system_of, system_of
from samza_nb.runtime.task.exactly_once import checkpoint_system, checkpoint_topic, exactly_once

__all__ = ["reset_job"]


def reset_job(plan: ExecutionPlan, *, dry_run: bool = False) -> list[str]:
    """Delete the job's home, intermediate streams, changelogs and (ZooKeeper, Azure) its
    records in the coordinator's metadata store; returns what was (or, with ``dry_run``, would
    be) deleted. Raises JobLeaseError while the job runs."""
    home = job_home(plan)
    doomed = []
    streams = [(system_of(plan, sid), sid) for sid, info in plan.streams.items() if info.kind == "intermediate"]
    system = default_system_of(plan)
    if system is not None:
        streams += [(system, plan.changelog_stream_id(store)) for store in plan.store_names]
    if exactly_once(plan):  # the checkpoints live in the checkpoint topic
        # (and under samza_nb's old name of that topic, which a restart would carry over)
        streams += [(checkpoint_system(plan), checkpoint_topic(plan)), (checkpoint_system(plan), legacy_checkpoint_topic(plan))]
    existing = [(owner, sid) for owner, sid in streams if owner.partition_count(sid) is not None]
    doomed += [f"stream {sid!r} of system {owner.name!r}" for owner, sid in existing]
    store = open_metadata_store(plan.config, home) if metadata_store_name(plan.config) != "embedded" or home.exists() else None
    try:
        remote = [] if store is None or isinstance(store, EmbeddedMetadataStore) else sorted(store.all())
        if remote:
            doomed.append(f"{len(remote)} records of the job in {store!r}")
        if home.exists():
            doomed.append(f"job home {str(home)!r}")
        if dry_run or not doomed:
            return doomed
        if store is None:
            store = open_metadata_store(plan.config, home)
        # The embedded coordinator's processors hold the job home's lease; a distributed job's
        # are registered with its coordinator instead.
        embedded = (plan.config.get_str("job.coordinator.factory") or "embedded") == "embedded"
        lease = (
            EmbeddedJobLease(
                home,
                store,
                label="samza-nb reset",
                when_busy="stop or drain that run first (samza-nb drain MODULE:APP --wait), then reset",
            )
            if embedded
            else None
        )
        if lease is None:
            _refuse_if_live(plan)
        else:
            lease.acquire()
        try:
            for owner, sid in existing:
                owner.delete_stream(sid)
            for key in remote:
                store.delete(key)
            store.flush()
        finally:
            if lease is not None:
                lease.release()
    finally:
        if store is not None:
            store.close()
    shutil.rmtree(home, ignore_errors=True)
    return doomed


def _refuse_if_live(plan: ExecutionPlan) -> None:
    """A job coordinated through ZooKeeper or Azure takes no job-home lease: it runs while any
    of its processors is registered live with the coordinator."""
    live = live_processors(plan.config)
    if live is not None and live.ids:
        msg = (
            f"job {plan.app_name!r} (id {plan.job_id!r}) is running: processors {live.ids} are "
            f"live in {live.where}; drain or stop it before resetting it"
        )
        raise JobLeaseError(msg, holder=", ".join(live.ids))
