"""``azure://ACCOUNT``: attach to a job coordinated through Azure Storage.

The URL names the storage account (``azure://devstoreaccount1?app=pages``); the connection
string with its key comes from ``azure.storage.connect`` (a ``--config`` properties file) or
``$SAMZA_NB_AZURE_CONNECTION_STRING``, never from the notebook text, and must be for that
account. The observer reads the job's processor table and page blob (AzureJobObserver: it adds
no row, takes no lease); drains go to the job's Azure metadata store, where the processors'
DrainMonitors look. Barrier states are shown as the other coordinators show them: ``START`` →
``NEW``, ``END`` → ``DONE``, ``TIMEOUT`` → ``TIMED_OUT``.
"""

from __future__ import annotations

from samza_nb.config import Config
from samza_nb.coordination.azure import AzureJobObserver, AzureObservation
from samza_nb.coordination.observation import (
    JobObservation,
    ObservedProcessor,
    ObservedVersion,
    moved_tasks,
)
from samza_nb.errors import ConfigError
from samza_nb.metadata.azure import AzureBlobMetadataStore
from samza_nb.metadata.azure_storage import AzureAccount
from samza_nb.model import JobModel
from samza_nb.notebook.magics.attach_handle import AttachedJob
from samza_nb.notebook.magics.attach_schemes import AttachTarget

__all__ = ["AzureAttachObserver", "open_azure"]

_BARRIER = {"START": "NEW", "END": "DONE", "TIMEOUT": "TIMED_OUT"}


class AzureAttachObserver:
    """A :class:`~samza_nb.coordination.observation.JobObserver` over an AzureJobObserver.

    The page blob holds the current and the previous model; the versions seen while attached
    are kept, so the view lists them all.
    """

    def __init__(self, config: Config) -> None:
        self.observer = AzureJobObserver(config)
        self._models: dict[str, JobModel] = {}
        self._barriers: dict[str, str] = {}

    def __repr__(self) -> str:
        return f"AzureAttachObserver({self.observer.where!r})"

    def observe(self) -> JobObservation:
        seen = self.observer.observe()
        for version, model in (
            (seen.previous_version, seen.previous_model),
            (seen.version, seen.model),
        ):
            if version is not None and model is not None:
                self._models[version] = model
        if seen.barrier_version is not None and seen.barrier is not None:
            self._barriers[seen.barrier_version] = _BARRIER.get(seen.barrier, seen.barrier)
        versions: list[ObservedVersion] = []
        previous: JobModel | None = None
        for version in sorted(self._models, key=int):
            model = self._models[version]
            latest = version == seen.version
            versions.append(
                ObservedVersion(
                    version,
                    self._barriers.get(version),
                    seen.published if latest else (),
                    seen.joined if latest else (),
                    moved_tasks(previous, model),
                    model,
                )
            )
            previous = model
        return JobObservation(
            seen.where,
            tuple(
                ObservedProcessor(pid, location, leader=pid == seen.leader)
                for pid, location in sorted(seen.processors.items())
            ),
            seen.version,
            _active(seen),
            tuple(versions),
            seen.assignment,
            seen.task_locality,
            seen.run_ids,
        )

    def close(self) -> None:
        self.observer.close()


def _active(seen: AzureObservation) -> str | None:
    """The newest version that reached consensus."""
    if seen.barrier == "END" and seen.barrier_version == seen.version:
        return seen.version
    return seen.previous_version


def open_azure(target: AttachTarget, config: Config) -> AttachedJob:
    """The :class:`AttachedJob` of ``config``'s job in the account ``target.address``."""
    account_name = target.address.strip("/").split("/", 1)[0]
    account = AzureAccount.from_config(config)
    configured = account.fields.get("AccountName", "")
    if account_name and account_name != configured:
        msg = (
            f"attach {target.display}: the configured connection string is for account "
            f"{configured!r}, not {account_name!r} (set azure.storage.connect or "
            "$SAMZA_NB_AZURE_CONNECTION_STRING for that account)"
        )
        raise ConfigError(msg)
    observer = AzureAttachObserver(config)
    try:
        metadata = AzureBlobMetadataStore.for_job(config, create=False)
    except BaseException:
        observer.close()
        raise
    name, job_id = config.get_str("app.name") or "", config.get_str("job.id") or "1"
    handle = AttachedJob(target.display, name, job_id, observer, metadata)
    try:
        handle.observe()  # an account that cannot be reached fails here, in one line
    except BaseException:
        handle.close()
        raise
    return handle
