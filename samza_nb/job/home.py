"""Where a job keeps its things on disk, and which deployment (run id) a run belongs to.

The job home holds the embedded metadata store (checkpoints, job models, assignments,
locality, run id, drain notifications) and the state stores; by default it sits beside the
default system's log, so a fresh log never meets stale checkpoints.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from samza_nb.drain import CONFIG_NAMESPACE, RUN_DRAINED_KEY, RUN_ENDED_KEY, RUN_ID_KEY
from samza_nb.errors import ConfigError
from samza_nb.metadata import MetadataStore, NamespacedMetadataStore
from samza_nb.metadata.registry import EMBEDDED_FILE_NAME
from samza_nb.systems.embedded import EmbeddedSystem, default_data_dir

if TYPE_CHECKING:
    from samza_nb.plan.execution_plan import ExecutionPlan

__all__ = ["job_home", "make_job_home", "mark_run_ended", "metadata_store_path", "resolve_run_id"]


def job_home(plan: ExecutionPlan) -> Path:
    """``job.home``; else beside the embedded log when the default system is one (a fresh log
    never meets stale checkpoints); else ``{SAMZA_NB_HOME}/jobs/{app}-{job id}``."""
    configured = plan.config.get_str("job.home")
    if configured:
        return Path(configured).expanduser()
    folder = f"{plan.app_name}-{plan.job_id}"
    system = plan.default_system
    if isinstance(system, EmbeddedSystem):
        return system.path / "jobs" / folder
    return default_data_dir() / "jobs" / folder


def make_job_home(plan: ExecutionPlan) -> Path:
    """The job home, made (owner only) when missing; one ConfigError line when it cannot be.
    Processes of one job on one machine may make it at the same moment."""
    home = job_home(plan)
    try:
        home.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as error:
        key = "job.home" if plan.config.get_str("job.home") else "the job home (set job.home to move it)"
        msg = f"{key} {home} cannot be created: {error.strerror or error}"
        if error.filename and str(error.filename) != str(home):
            msg += f" ({error.filename})"
        raise ConfigError(msg) from error
    return home


def metadata_store_path(plan_or_home: ExecutionPlan | Path) -> Path:
    """The job's embedded metadata store, given its plan or its job home folder."""
    home = plan_or_home if isinstance(plan_or_home, Path) else job_home(plan_or_home)
    return home / EMBEDDED_FILE_NAME


def resolve_run_id(store: MetadataStore, configured: str | None) -> str:
    """The run id of this run, recorded in the store (namespace ``set-config``).

    ``app.run.id`` when configured; else the stored run id when that deployment has not ended
    (a restart after a crash or a plain stop is the same deployment, so tasks keep their
    locality); else a new one (after a drain or an end-of-stream finish). A configured run id
    that was drained is refused (ConfigError).
    """
    config = NamespacedMetadataStore(store, CONFIG_NAMESPACE)
    run_id = configured
    if run_id and config.get(RUN_DRAINED_KEY) == run_id.encode():
        msg = (
            f"app.run.id {run_id!r} was drained: a drained deployment does not run again (its "
            "tasks' control state says drained); set a new app.run.id, or leave it unset for a "
            "generated one"
        )
        raise ConfigError(msg)
    if not run_id:
        stored = config.get(RUN_ID_KEY)
        ended = config.get(RUN_ENDED_KEY)
        if stored is not None and stored != ended:
            run_id = stored.decode()
    run_id = run_id or uuid.uuid4().hex
    config.put(RUN_ID_KEY, run_id.encode())
    # This run has not ended, whatever ended before (a configured run id may repeat one).
    config.delete(RUN_ENDED_KEY)
    config.flush()
    return run_id


def mark_run_ended(store: MetadataStore, run_id: str, *, drained: bool = False) -> None:
    """Record that deployment ``run_id`` ended (drained or finished): the next run starts a new
    one, and a drained one never runs again under its id."""
    config = NamespacedMetadataStore(store, CONFIG_NAMESPACE)
    config.put(RUN_ENDED_KEY, run_id.encode())
    if drained:
        config.put(RUN_DRAINED_KEY, run_id.encode())
    config.flush()
