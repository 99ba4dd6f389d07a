"""The one exception tree of samza_nb.

Every error the SDK raises on purpose derives from :class:`SamzaNbError`. Leaves also derive
from the matching built-in (``ValueError``, ``KeyError``, ``TimeoutError`` …) so callers that
catch the built-in keep working. Runtime errors carry structured fields so tools and notebooks
can show *where* something went wrong (operator, task, stream partition, offset).
"""

from __future__ import annotations

import errno

__all__ = [
    "CheckpointError",
    "CommitConflictError",
    "ConfigError",
    "CoordinationError",
    "DiskFullError",
    "DrainError",
    "GroupingError",
    "JobError",
    "JobInterruptedError",
    "JobLeaseError",
    "JobTimeoutError",
    "MetadataStoreError",
    "ModelError",
    "PlanError",
    "SamzaNbError",
    "SerdeError",
    "ServiceError",
    "StreamNotFoundError",
    "StreamSystemError",
    "TaskError",
    "UnknownOperatorError",
    "WorkerLostError",
    "error_text",
    "is_disk_full",
]


class SamzaNbError(Exception):
    """Root of every error samza_nb raises on purpose."""


class ConfigError(SamzaNbError, ValueError):
    """A configuration key or value is wrong (unknown key, bad type, missing required key)."""


class PlanError(SamzaNbError, ValueError):
    """The application graph is invalid: op ids, joins, partition counts, serdes."""


class UnknownOperatorError(PlanError, KeyError):
    """An operator id that is not in the plan was asked for."""

    def __str__(self) -> str:  # KeyError would quote the message; keep it readable.
        return str(self.args[0]) if self.args else ""


class ModelError(SamzaNbError, ValueError):
    """A job model, container model or task model is malformed (for example bad JSON)."""


class GroupingError(SamzaNbError, ValueError):
    """A grouper cannot assign the given tasks or partitions (no processors, too few tasks …)."""


class SerdeError(SamzaNbError, ValueError):
    """A value cannot be serialized or deserialized by the serde given for it."""


class MetadataStoreError(SamzaNbError):
    """The metadata store cannot be read or written."""


class CoordinationError(SamzaNbError):
    """Leader election, barriers or membership failed (service gone, timeout, lost lease)."""


class StreamSystemError(SamzaNbError):
    """A stream system (embedded log, Kafka) failed or was used wrongly."""


class StreamNotFoundError(StreamSystemError, KeyError):
    """A stream that does not exist was read or written."""

    def __str__(self) -> str:  # KeyError would quote the message; keep it readable.
        return str(self.args[0]) if self.args else ""


class CheckpointError(SamzaNbError):
    """A checkpoint could not be read or committed."""


class ServiceError(SamzaNbError):
    """An engine-room service (ZooKeeper, Azurite, Kafka broker, Spark) failed to start or stop."""

    def __init__(self, message: str, *, service: str | None = None, log_file: str | None = None):
        super().__init__(message)
        self.service = service
        self.log_file = log_file


class DrainError(SamzaNbError, ValueError):
    """A drain request or drain notification is invalid."""


class JobError(SamzaNbError):
    """A running job failed or was used in a state that does not allow the call."""

    #: The Job the error ended, when it is known (``run()`` raised before returning it).
    job: object | None = None


class DiskFullError(JobError):
    """A task's store ran out of disk space; the message names the store and its path. What
    the epoch wrote is not committed: freed space, the job's next run repeats it."""


def error_text(error: BaseException) -> str:
    """``str(error)``, or its type and py4j's short message when that fails: a Java error asks
    the JVM for its text, and a JVM stopped under the job (a signal to the process group)
    cannot answer."""
    try:
        return str(error)
    except Exception:  # noqa: BLE001 - any failure of __str__ gets the fallback
        short = str(getattr(error, "errmsg", "") or "").strip()
        return f"{type(error).__name__}: {short or 'its text is unavailable (the JVM stopped)'}"


def is_disk_full(error: BaseException) -> bool:
    """Whether ``error`` says its device has no space left: an ``OSError`` with ``ENOSPC``, or
    RocksDB's and SQLite's texts for it (they raise bare exceptions)."""
    if isinstance(error, OSError) and error.errno == errno.ENOSPC:
        return True
    text = str(error)
    return "No space left on device" in text or "database or disk is full" in text


class JobInterruptedError(JobError, KeyboardInterrupt):
    """A foreground run was interrupted (Ctrl-C, Kernel → Interrupt): the job stopped after the
    epoch in flight, its checkpoints committed. Still a KeyboardInterrupt for callers."""


class JobTimeoutError(JobError, TimeoutError):
    """A job did not end within the time a caller waited for it (it is still running)."""


class WorkerLostError(JobError):
    """A Spark Python worker running an epoch's task epochs went away (killed, crashed, its
    Spark task cancelled) before it returned. Nothing of the epoch was committed; the executor
    runs the epoch again on new workers up to ``job.spark.epoch.retries`` times before this
    reaches the caller."""


class JobLeaseError(CoordinationError):
    """Another incarnation of the job holds its lease, or this one lost it (fenced)."""

    def __init__(self, message: str, *, holder: str | None = None):
        super().__init__(message)
        self.holder = holder


class CommitConflictError(JobLeaseError):
    """A fenced write found a key written by someone else since this process read or wrote
    it: a task's checkpoint or epoch plan, written by a processor that was frozen past its
    liveness timeout (its write had passed the fence check before it froze) or by the task's
    new owner. Nothing more of the write was made; ``key`` names the key that changed."""

    def __init__(self, message: str, *, key: str = ""):
        super().__init__(message)
        self.key = key


class TaskError(JobError):
    """A message could not be processed: a user function raised or a message did not decode.

    The fields name exactly where: the operator id, the task, the system stream partition and
    the offset of the message. Nothing past that offset was committed.
    """

    def __init__(
        self,
        message: str,
        *,
        op_id: str | None = None,
        task: str | None = None,
        ssp: str | None = None,
        offset: int | None = None,
    ):
        super().__init__(message)
        self.op_id = op_id
        self.task = task
        self.ssp = ssp
        self.offset = offset
        #: The traceback as the task saw it (in the Spark worker for the Spark executor).
        self.worker_traceback: str | None = None
        #: Where the user's code raised: (file name, line number, source line).
        self.raised_at: tuple[str, int, str] | None = None
        #: ``file:line`` where the failing operator was declared.
        self.operator_location: str | None = None
