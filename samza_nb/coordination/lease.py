"""JobLease: one running incarnation of a job at a time, with a fencing generation.

A job's processors may commit only while their incarnation holds the lease. Acquiring it bumps
a generation number kept in the job's metadata store; every commit is checked against it inside
the store's own transaction, so an older incarnation (a process that was frozen, or a run that
lost its lease) can never commit after a newer one started. Backends: an OS file lock on the job
home (embedded), an ephemeral node (ZooKeeper), a blob lease (Azure). The same contract tests run
against each.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

__all__ = ["JobLease"]


class JobLease(ABC):
    """The right of one incarnation of a job to run and commit."""

    @abstractmethod
    def acquire(self, *, wait: bool = False, timeout: float | None = None) -> int:
        """Take the lease and return the new generation (greater than every earlier one).

        Held by another incarnation: raise :class:`~samza_nb.errors.JobLeaseError` naming the
        holder at once, or with ``wait`` retry until it is free (``timeout`` seconds at most).
        """

    @abstractmethod
    def release(self) -> None:
        """Give the lease up (idempotent); the generation stays, so it is never reused."""

    @abstractmethod
    def holder(self) -> str | None:
        """Who holds the lease (process id, host, processor), or None when it is free."""

    @property
    @abstractmethod
    def generation(self) -> int:
        """The generation this incarnation acquired (0 before ``acquire``)."""

    @abstractmethod
    def check(self) -> None:
        """Raise :class:`~samza_nb.errors.JobLeaseError` if this incarnation no longer holds
        the lease (a newer generation exists or the lease was lost)."""
